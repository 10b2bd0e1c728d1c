# cmake -DMPIEXEC=<mpiexec> -DNP=<-n> [-DPREFLAGS=...] -DFIT=<vkblr-fit>
#       -DSAME=<vkblr-fit-result-same> -DWORK=<dir> -P fit_ranks.cmake
#
# vkblr-fit under mpirun on a small synthetic layer (128×96, 2 paths of rank
# 32, batches of 64 tokens, 12 steps, validation on):
#   1. 2 ranks (rank 0 working in WORK/rank0, rank 1 in WORK/rank1, the
#      same arguments) with a checkpoint after step 6: rank 0 alone writes files
#      (WORK/rank1 stays empty) and prints (each line once);
#   2. 1 process (no mpirun) with 2 micro-batches gives the same layer, bit
#      for bit, and the same held-out curve: the same parts of every batch
#      summed in the same order (tools/vkblr-fit/fit_ranks.hpp). One process
#      with the whole batch at once sums in another f32 order: not compared;
#   3. the 2-rank checkpoint resumed by 1 process (2 micro-batches) ends
#      with the uninterrupted 2-rank run's layer, bit for bit;
#   4. the 1-process checkpoint resumed by 2 ranks ends with the
#      1-process run's layer, bit for bit.
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/require_definitions.cmake)
require_definitions(MPIEXEC NP FIT SAME WORK)
separate_arguments(PREFLAGS)
set(common --synthetic-m 128 --synthetic-n 96 --rank 32 --paths 2 --batch 64 --tokens 256 --held-out 64
           --steps 12 --eval-every 4 --flip-budget 0.01 --checkpoint-every 6 --validate)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/rank0 ${WORK}/rank1 ${WORK}/one ${WORK}/resumed ${WORK}/back)

# run(<name> <dir> COMMAND...): runs it in <dir>, fails the test on a
# nonzero exit; the output lands in <name>_out.
function(run name dir)
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${dir} TIMEOUT 240
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${start}")
  message("---- ${name} (${seconds} s): ${ARGN}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed: ${rc}")
  endif()
  set(${name}_out "${out}" PARENT_SCOPE)
endfunction()

function(expect_count text regex count what)
  string(REGEX MATCHALL "${regex}" hits "${text}")
  list(LENGTH hits n)
  if(NOT n EQUAL count)
    message(FATAL_ERROR "${what}: \"${regex}\" appears ${n} times, expected ${count}")
  endif()
endfunction()

function(json_get out file)
  file(READ ${file} text)
  string(JSON value GET "${text}" ${ARGN})
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# 1. two ranks, one working directory each: a shell enters WORK/rank<R>
# (Open MPI 5.0.7's mpiexec crashes on MPMD command lines, "-n 1 -wdir A
# prog : -n 1 -wdir B prog", which would say this directly)
run(two ${WORK} ${MPIEXEC} --oversubscribe ${PREFLAGS} ${NP} 2
    sh -c "cd \"rank\${OMPI_COMM_WORLD_RANK:-\$PMIX_RANK}\" && exec \"\$@\"" rank-dir
    ${FIT} ${common} --out fit)
file(GLOB rank1_files ${WORK}/rank1/*)
if(rank1_files)
  message(FATAL_ERROR "rank 1 wrote files: ${rank1_files}")
endif()
foreach(f fit.safetensors fit.json fit.svg fit.ckpt)
  if(NOT EXISTS ${WORK}/rank0/${f})
    message(FATAL_ERROR "rank 0 did not write ${f}")
  endif()
endforeach()
expect_count("${two_out}" "vkblr-fit: W 128x96" 1 "the first line (rank 0 only)")
expect_count("${two_out}" "trained: held-out output error" 1 "the last line (rank 0 only)")
expect_count("${two_out}" "2 rank\\(s\\) x 1 micro-batch\\(es\\) of 32 tokens" 1 "the parts line")
json_get(ranks ${WORK}/rank0/fit.json training parallel ranks)
json_get(exchange ${WORK}/rank0/fit.json training parallel step_timing exchange_ms)
json_get(how ${WORK}/rank0/fit.json training parallel step_timing exchange)
json_get(why ${WORK}/rank0/fit.json training parallel step_timing exchange_note)
# lavapipe imports host memory: the ranks' GPUs share the blocks
if(NOT ranks EQUAL 2 OR exchange STREQUAL "" OR NOT how STREQUAL "shared_memory")
  message(FATAL_ERROR "the report's training.parallel: ranks ${ranks}, exchange_ms ${exchange}, exchange ${how} ${why}")
endif()

# 2. one process, two micro-batches: the same layer and curve
run(one ${WORK}/one ${FIT} ${common} --micro-batches 2 --out fit)
run(same_one ${WORK} ${SAME} ${WORK}/rank0/fit.safetensors ${WORK}/one/fit.safetensors)
json_get(curve_two ${WORK}/rank0/fit.json curve)
json_get(curve_one ${WORK}/one/fit.json curve)
if(NOT curve_two STREQUAL curve_one)
  message(FATAL_ERROR "held-out curves differ:\n2 ranks ${curve_two}\n1 process ${curve_one}")
endif()

# 3. the 2-rank checkpoint resumed by one process
run(resumed ${WORK}/resumed ${FIT} ${common} --micro-batches 2 --resume ${WORK}/rank0/fit.ckpt --out fit)
expect_count("${resumed_out}" "resumed from .* at step 6" 1 "the resume line")
run(same_resumed ${WORK} ${SAME} ${WORK}/rank0/fit.safetensors ${WORK}/resumed/fit.safetensors)

# 4. the 1-process checkpoint resumed by two ranks
run(back ${WORK} ${MPIEXEC} --oversubscribe ${PREFLAGS} ${NP} 2
    ${FIT} ${common} --resume ${WORK}/one/fit.ckpt --out ${WORK}/back/fit)
run(same_back ${WORK} ${SAME} ${WORK}/one/fit.safetensors ${WORK}/back/fit.safetensors)
message("vkblr-fit: 2 ranks = 1 process with 2 micro-batches, bit for bit; checkpoints resume across rank counts")
