# cmake -DMPIEXEC=<mpiexec> -DNP=<-n> [-DPREFLAGS=...] -DFIT=<vkblr-fit>
#       -DMODEL=<vkblr-fit-manifest-model> -DWORK=<dir> -P fit_layers.cmake
#
# vkblr-fit --manifest with the layers spread over 2 MPI ranks, on the
# six-layer model of tests/support/manifest_files.hpp (three shapes, 2 paths
# of rank 32 or 64, 6 or 8 steps), the manifest given by an absolute path:
#   1. one process (no mpirun): the reference;
#   2. 2 ranks, --validate: PREFIX.safetensors is the one process's, byte for
#      byte; the report's rows are equal but for times and ranks; the
#      schedule (rank 0: layers 1, 2, 3; rank 1: 4, 5, 6: the costs of the
#      five larger layers differ only by their inputs' sizes, the q_proj of
#      layer 1 costs two thirds of them) is in the log and in the rows'
#      mpi_rank; totals.mpi_ranks is 2;
#   3. rank 1 killed (SIGKILL) once its first layer's record is written:
#      the job fails; the log says that --resume continues and which
#      layers rank 1 held (not that rank 1 finished one: the kill may come
#      between the record and that line); rank 0's last words on the
#      launcher's SIGTERM may not reach the log once the job is torn down
#      (tests/test_fit_term_notice.cpp checks them); one process with
#      --resume then ends with the file of step 1, byte for byte, taking
#      rank 1's finished layer from the work directory (its report row says
#      resumed);
#   4. ranks in directories of their own with a relative --out (work
#      directories they do not share): refused before any layer is fitted,
#      naming rank 1 and what it did not find;
#   5. rank 1 under another GEMM policy (VKBLR_GEMM_SPLITK): refused,
#      naming the field and both values (its layers would not be the bits
#      one process gives them);
#   6. --model-bpw 3.5 on budget.json (five layers sized by the budget):
#      2 ranks share out the rank curves (the report's curve_mpi_rank
#      follows the schedule) and write one process's file, byte for byte.
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/require_definitions.cmake)
require_definitions(MPIEXEC NP FIT MODEL WORK)
separate_arguments(PREFLAGS)
set(MPIRUN ${MPIEXEC} --oversubscribe ${PREFLAGS} ${NP} 2)
set(JOB ${WORK}/in/job.json)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/in ${WORK}/one ${WORK}/two ${WORK}/kill ${WORK}/split ${WORK}/policy ${WORK}/budget_one
     ${WORK}/budget_two)

# run(<name> <expect: 0 or "fail"> <dir> COMMAND...): runs it in <dir>; the
# test fails unless it exits 0 (or, with "fail", nonzero). The output
# lands in <name>_out.
function(run name expect dir)
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${dir} TIMEOUT 240
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${start}")
  message("---- ${name} (${seconds} s, exit ${rc}): ${ARGN}\n${out}")
  if(rc MATCHES "timeout")
    message(FATAL_ERROR "${name} was still running after 240 s")
  elseif(expect STREQUAL "fail" AND rc EQUAL 0)
    message(FATAL_ERROR "${name} succeeded; it should have failed")
  elseif(NOT expect STREQUAL "fail" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed: ${rc}")
  endif()
  set(${name}_out "${out}" PARENT_SCOPE)
endfunction()

function(expect_match name text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${name}: the output does not match \"${regex}\"")
  endif()
endfunction()

function(expect_same_file what a b)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${a} ${b} RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${what}: ${a} and ${b} differ")
  endif()
endfunction()

# row(<out> <report> <i>): row i of the report without what differs
# between runs of other rank counts (its times and its rank)
function(row out report i)
  file(READ ${report} text)
  string(JSON value GET "${text}" layers ${i})
  foreach(key wall_s stages mpi_rank)
    string(JSON value REMOVE "${value}" ${key})
  endforeach()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

run(model 0 ${WORK}/in ${MODEL} ${WORK}/in)

# 1. one process
run(one 0 ${WORK}/one ${FIT} --manifest ${JOB} --out model)

# 2. two ranks: the same file
run(two 0 ${WORK}/two ${MPIRUN} ${FIT} --manifest ${JOB} --out model --validate)
expect_same_file("2 ranks against 1 process" ${WORK}/one/model.safetensors ${WORK}/two/model.safetensors)
expect_match(two "${two_out}" "rank 0: layers 1, 2, 3: model.layers.0.mlp.down_proj.weight, model.layers.0.mlp.up_proj")
expect_match(two "${two_out}" "rank 1: layers 4, 5, 6: model.layers.1.attn.q_proj.weight, model.layers.1.mlp.down_proj")
expect_match(two "${two_out}" "rank 1: layer 5/6 'model.layers.1.mlp.down_proj.weight': done in")
expect_match(two "${two_out}" "rank 0: vkblr-fit: 6 layer\\(s\\) fitted \\(0 from an earlier run\\), .* on 2 ranks")
file(READ ${WORK}/two/model.json two_report)
string(JSON ranks GET "${two_report}" totals mpi_ranks)
if(NOT ranks EQUAL 2)
  message(FATAL_ERROR "totals.mpi_ranks is ${ranks}")
endif()
set(fitted_by 0 0 0 1 1 1)
foreach(i RANGE 5)
  row(a ${WORK}/one/model.json ${i})
  row(b ${WORK}/two/model.json ${i})
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "row ${i} differs:\n1 process: ${a}\n2 ranks:   ${b}")
  endif()
  string(JSON by GET "${two_report}" layers ${i} mpi_rank)
  list(GET fitted_by ${i} want)
  if(NOT by EQUAL want)
    message(FATAL_ERROR "row ${i} was fitted by rank ${by}, not ${want}")
  endif()
endforeach()

# 3. rank 1 dies after its first layer; one process resumes
file(WRITE ${WORK}/kill_rank1.sh [=[
# kill_rank1.sh RECORD COMMAND...: every rank becomes COMMAND (exec); on rank
# 1 a watcher kills it (SIGKILL, as the kernel's out-of-memory killer would)
# once RECORD exists
record=$1
shift
if [ "${OMPI_COMM_WORLD_RANK:-$PMIX_RANK}" = 1 ]; then
  (
    while [ ! -e "$record" ]; do
      kill -0 $$ 2>/dev/null || exit 0
      sleep 0.1
    done
    echo "kill_rank1.sh: killing rank 1's vkblr-fit after its first layer" >&2
    kill -9 $$
  ) &
fi
exec "$@"
]=])
run(killed fail ${WORK}/kill ${MPIRUN} sh ${WORK}/kill_rank1.sh model.layers/model.layers.1.attn.q_proj.weight.done.json
    ${FIT} --manifest ${JOB} --out model)
expect_match(killed "${killed_out}" "rank 0: vkblr-fit: a rank that dies ends the job.* model.layers, and .*--resume")
expect_match(killed "${killed_out}" "rank 1: layers 4, 5, 6: ")
expect_match(killed "${killed_out}" "killing rank 1's vkblr-fit after its first layer")
if(EXISTS ${WORK}/kill/model.safetensors)
  message(FATAL_ERROR "the killed job wrote model.safetensors")
endif()
run(resumed 0 ${WORK}/kill ${FIT} --manifest ${JOB} --out model --resume)
expect_same_file("the resumed run against the uninterrupted one" ${WORK}/one/model.safetensors
                 ${WORK}/kill/model.safetensors)
file(READ ${WORK}/kill/model.json resumed_report)
string(JSON resumed GET "${resumed_report}" layers 3 resumed)
if(NOT resumed)
  message(FATAL_ERROR "layer 4, which rank 1 finished, was fitted again")
endif()

# 4. work directories the ranks do not share
run(split fail ${WORK}/split ${MPIRUN}
    sh -c "r=r\${OMPI_COMM_WORLD_RANK:-\$PMIX_RANK} && mkdir -p \$r && cd \$r && exec \"\$@\""
    rank-dir ${FIT} --manifest ${JOB} --out model)
expect_match(split "${split_out}" "--out model: the work directory model.layers must be one directory every rank sees")
expect_match(split "${split_out}" "rank 1 \\(host [^)]*\\) does not find the file model.layers/.ranks-[0-9a-f]+ that")
file(GLOB_RECURSE records ${WORK}/split/*.done.json)
if(records)
  message(FATAL_ERROR "layers were fitted: ${records}")
endif()

# 5. a rank under another GEMM policy
run(policy fail ${WORK}/policy ${MPIRUN}
    sh -c "[ \"\${OMPI_COMM_WORLD_RANK:-\$PMIX_RANK}\" != 1 ] || export VKBLR_GEMM_SPLITK=3 && exec \"\$@\""
    policy ${FIT} --manifest ${JOB} --out model)
expect_match(policy "${policy_out}" "ranks disagree: gemm policy k_splits = [0-9a-z]+ on rank 0 vs 3 on rank 1")

# 6. --model-bpw: the curves shared out, the same file
set(BUDGET --manifest ${WORK}/in/budget.json --out model --model-bpw 3.5)
run(budget_one 0 ${WORK}/budget_one ${FIT} ${BUDGET})
run(budget_two 0 ${WORK}/budget_two ${MPIRUN} ${FIT} ${BUDGET})
expect_same_file("--model-bpw: 2 ranks against 1 process" ${WORK}/budget_one/model.safetensors
                 ${WORK}/budget_two/model.safetensors)
expect_match(budget_two "${budget_two_out}" "vkblr-fit: --model-bpw 3.5: .*curves measured in [0-9]+ round\\(s\\) on 2 ranks")
file(READ ${WORK}/budget_two/model.json budget_report)
set(measured_by "")
foreach(i RANGE 5)
  string(JSON by GET "${budget_report}" layers ${i} allocation curve_mpi_rank)
  list(APPEND measured_by "${by}")
endforeach()
# largest first, ties to the lowest rank: the four 8192-weight layers
# alternate 0, 1, 0, 1, then layer 1's q_proj to rank 0; layer 0's q_proj
# (its own rank) has no curve (null reads as "")
if(NOT measured_by STREQUAL "0;1;;0;0;1")
  message(FATAL_ERROR "the curves were measured by ranks ${measured_by}, not 0;1;;0;0;1")
endif()
message("vkblr-fit --manifest: 2 ranks = 1 process, byte for byte; a killed rank's job resumes to the same file; "
        "unshared work directories and other GEMM policies refused; --model-bpw's curves shared out")
