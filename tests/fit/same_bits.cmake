# cmake -DFIT=<vkblr-fit> -DPYTHON=<python3> -DWORK=<dir> -DMODE=threads -P same_bits.cmake
# cmake ... -DMODE=ranks -DMPIEXEC=<mpiexec> -DNP=<-n> [-DPREFLAGS=...] -P same_bits.cmake
#
# The same model file whatever the host's thread count or the job's rank
# count: a manifest of layers large enough to take every threaded path of
# the host's share (gate 2816×1024, and for `ranks` down 1024×2816 too; 2
# paths of rank 352, one refit sweep, 2 steps; W read from a file of 2.9M
# values, which the reader widens on every core): LAPACK's dpotrf, dtrtri
# and dsyevd of 352×352 and more (OpenBLAS splits their sums by its thread
# count from 128 rows on), dpotrs and dsysv. Every run's model file must
# be the first's, byte for byte.
#   threads: one process with all cores; under taskset -c 0 (and -c 0,1
#            where there are more than 2 cores); with OPENBLAS_NUM_THREADS=1;
#            with GOTO_NUM_THREADS=1 and OMP_NUM_THREADS=1; with
#            OPENBLAS_NUM_THREADS at twice the cores. On a machine of one
#            core the thread counts cannot differ: the test says so and is
#            skipped.
#   ranks:   one process with all cores; mpirun -np 2, each rank with one
#            OpenBLAS thread (OPENBLAS_NUM_THREADS=1, what mpirun's default
#            binding of a rank to one core gives), the layers spread over
#            the ranks.
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/require_definitions.cmake)
require_definitions(FIT PYTHON WORK MODE)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)

# W [m][n] with the spectrum of a real layer (singular values
# exp(-i/(r/6)) + 0.05, r = 352: the power iterations leave the init's small
# problems ill-conditioned, where LAPACK's rounding shows in the signs) and X
# [1280][n] Gaussian with 1/64 of the channels ×8 (1024 training + 256
# held-out tokens), both F16, from a fixed seed. Needs numpy.
file(WRITE ${WORK}/make_inputs.py [=[
import json, struct, sys
try:
    import numpy as np
except ImportError:
    sys.exit(77)
def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        b = a.astype("<f2").tobytes()
        header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
rng = np.random.default_rng(33)
def weight(m, n, r):
    k = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal((m, k)))
    v, _ = np.linalg.qr(rng.standard_normal((n, k)))
    w = (u * (np.exp(-np.arange(k) / (r / 6)) + 0.05)) @ v.T
    return w / np.sqrt(np.mean(w * w))
def activations(t, n):
    x = rng.standard_normal((t, n))
    x[:, rng.permutation(n)[:n // 64]] *= 8
    return x
write("w.safetensors", {"mlp.gate_proj.weight": weight(2816, 1024, 352),
                        "mlp.down_proj.weight": weight(1024, 2816, 352)})
write("x.safetensors", {"mlp.gate_proj": activations(1280, 1024), "mlp.down_proj": activations(1280, 2816)})
tensors = "mlp.gate_proj.weight" if sys.argv[1] == "threads" else "mlp.*.weight"
json.dump({"defaults": {"rank": 352, "paths": 2, "refit_sweeps": 1, "batch": 256, "tokens": 1024,
                        "held_out": 256, "steps": 2},
           "layers": [{"weight": "w.safetensors", "tensors": tensors, "activations": "x.safetensors",
                       "activations_tensor": "{module}"}]}, open("job.json", "w"))
]=])
execute_process(COMMAND ${PYTHON} make_inputs.py ${MODE} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(rc EQUAL 77)
  message("same_bits: no numpy to write the inputs with (skipped)")
  return()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_inputs.py failed: ${rc}")
endif()

# run(<name> COMMAND...): vkblr-fit's manifest run in WORK/<name>, writing
# WORK/<name>/model.safetensors; fails the test on a nonzero exit.
function(run name)
  file(MAKE_DIRECTORY ${WORK}/${name})
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${ARGN} --manifest ${WORK}/job.json --out model --quiet WORKING_DIRECTORY ${WORK}/${name}
                  TIMEOUT 600 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${start}")
  message("---- ${name} (${seconds} s, exit ${rc}): ${ARGN}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed: ${rc}")
  endif()
endfunction()

set(differ "")
function(expect_same name)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/first/model.safetensors
                          ${WORK}/${name}/model.safetensors RESULT_VARIABLE rc)
  if(rc)
    set(differ "${differ} ${name}" PARENT_SCOPE)
  else()
    message(STATUS "${name}: the same model file as the first run, byte for byte")
  endif()
endfunction()

if(MODE STREQUAL "threads")
  if(cores LESS 2)
    message("same_bits: one core: every run would use one thread; nothing to compare (skipped)")
    return()
  endif()
  run(first ${FIT})
  find_program(TASKSET taskset)
  if(TASKSET)
    run(taskset ${TASKSET} -c 0 ${FIT})
    expect_same(taskset)
  else()
    message(STATUS "no taskset: that run is left out")
  endif()
  if(TASKSET AND cores GREATER 2)
    run(taskset_2 ${TASKSET} -c 0,1 ${FIT})
    expect_same(taskset_2)
  endif()
  run(openblas_1 ${CMAKE_COMMAND} -E env OPENBLAS_NUM_THREADS=1 ${FIT})
  expect_same(openblas_1)
  run(goto_omp_1 ${CMAKE_COMMAND} -E env GOTO_NUM_THREADS=1 OMP_NUM_THREADS=1 ${FIT})
  expect_same(goto_omp_1)
  math(EXPR twice "2 * ${cores}")
  run(openblas_many ${CMAKE_COMMAND} -E env OPENBLAS_NUM_THREADS=${twice} ${FIT})
  expect_same(openblas_many)
elseif(MODE STREQUAL "ranks")
  require_definitions(MPIEXEC NP)
  separate_arguments(PREFLAGS)
  run(first ${FIT})
  run(two_ranks ${MPIEXEC} --oversubscribe ${PREFLAGS} ${NP} 2 -x OPENBLAS_NUM_THREADS=1 ${FIT})
  expect_same(two_ranks)
else()
  message(FATAL_ERROR "MODE=${MODE}: expected threads or ranks")
endif()
if(differ)
  message(FATAL_ERROR "model files that differ from the first run's (${cores} cores):${differ}")
endif()
