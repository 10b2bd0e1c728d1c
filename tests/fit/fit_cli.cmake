# cmake -DFIT=<path of vkblr-fit> -DWORK=<scratch dir> -P tests/fit/fit_cli.cmake
#
# vkblr-fit's command line refuses what no run can use, with its exit code
# and a message naming the flag, before any work:
#   exit 2 (bad usage): a count of 0 (--steps 0 would silently mean the
#     default), NaN anywhere, a negative learning rate, a --gscale that is
#     not a power of two in [1, 2^24], a single-layer flag with --manifest,
#     --on-bad-layer without it, ...;
#   exit 1 (a bad input): an --out without a file name, an output that is
#     an input (the weight untouched), an output directory that does not
#     exist; a symbolic-link loop as --weight is named, not reported as an
#     "unexpected error".
foreach(v FIT WORK)
  if(NOT ${v})
    message(FATAL_ERROR "fit_cli.cmake needs -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

set(failures "")
# check(<exit code> <stderr regex> ARGS...): runs vkblr-fit ARGS in WORK
function(check want_rc want_err)
  execute_process(COMMAND ${FIT} ${ARGN} WORKING_DIRECTORY ${WORK} TIMEOUT 120
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  report("${ARGN}" "${want_rc}" "${want_err}" "${rc}" "${err}")
  set(failures "${failures}" PARENT_SCOPE)
endfunction()
function(report args want_rc want_err rc err)
  if(NOT rc STREQUAL want_rc OR NOT err MATCHES "${want_err}" OR err MATCHES "unexpected error")
    set(failures "${failures}\n  vkblr-fit ${args}: exit ${rc} (want ${want_rc}), stderr:\n${err}\n  (want: ${want_err})"
        PARENT_SCOPE)
  else()
    message(STATUS "vkblr-fit ${args}: exit ${rc}: ${err}")
  endif()
endfunction()

# usage errors: no device is needed, nothing runs
check(2 "--steps: 0 is not a count here" --steps 0)
check(2 "--batch: 0 is not a count here" --batch 0)
check(2 "--rank: 0 is not a count here" --rank 0)
check(2 "--scale-lr -1: must be at least 0" --scale-lr -1)
check(2 "--scale-lr nan: must be a finite number" --scale-lr nan)
check(2 "--sign-lr inf: must be a finite number" --sign-lr inf)
check(2 "--gscale 1073741824: must be in \\[1, 16777216\\]" --gscale 1073741824)
check(2 "--gscale 1000: must be a power of two" --gscale 1000)
check(2 "--scale-rel-floor nan: must be a finite number" --scale-rel-floor nan)
check(2 "--activation-decay nan: must be a finite number" --activation-decay nan)
check(2 "--bpw nan: must be a finite number" --bpw nan)
check(2 "--flip-budget 2: must be in \\[0, 1\\]" --flip-budget 2)
check(2 "--sign-beta2 1: must be in \\[0, 1\\)" --sign-beta2 1)
# --manifest: its flags alone; the manifest gives each layer's settings
check(2 "--steps: not with --manifest: set \"steps\" in the manifest's \"defaults\"" --manifest job.json --steps 5)
check(2 "--weight: not with --manifest" --manifest job.json --weight w.safetensors)
check(2 "--resume x.ckpt: with --manifest, --resume takes no value" --manifest job.json --resume x.ckpt)
check(2 "--on-bad-layer goes with --manifest" --on-bad-layer skip)
check(2 "--on-bad-layer: maybe not in" --manifest job.json --on-bad-layer maybe)
check(2 "--resume: name the checkpoint to continue from" --resume)

check(1 "cannot open missing.json: No such file or directory" --manifest missing.json)

# input errors, found before any input is read
execute_process(COMMAND ${FIT} --out "" WORKING_DIRECTORY ${WORK} TIMEOUT 120 RESULT_VARIABLE rc ERROR_VARIABLE err)
report("--out ''" 1 "--out '': the prefix needs a file name" "${rc}" "${err}")
check(1 "the prefix needs a file name" --out sub/)
check(1 "--out: cannot write missing/run.safetensors: directory missing does not exist" --out missing/run)
file(WRITE ${WORK}/w.safetensors "the user's weight")
check(1 "the output w.safetensors is the input --weight w.safetensors" --weight w.safetensors --out w)
file(READ ${WORK}/w.safetensors kept)
if(NOT kept STREQUAL "the user's weight")
  string(APPEND failures "\n  --weight w.safetensors --out w changed the weight")
endif()
file(CREATE_LINK loop.safetensors ${WORK}/loop.safetensors SYMBOLIC)
check(1 "loop.safetensors: Too many levels of symbolic links" --weight loop.safetensors)

if(failures)
  message(FATAL_ERROR "vkblr-fit's command line:${failures}")
endif()
message(STATUS "vkblr-fit refuses bad flags (exit 2) and bad outputs (exit 1) with messages naming them")
