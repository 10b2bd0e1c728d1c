# cmake -DINFO=<vkblr-info> -DBENCH=<vkblr-bench> -DWORK=<scratch dir> -P pipeline_cache_path.cmake
#
# The tools run on whatever lies at the pipeline cache's path: a directory,
# a FIFO, a link to /dev/zero (vkblr-info --check each, vkblr-bench the
# directory). Each run exits 0, with one warning naming the file and the
# reason; a run that hangs (on the FIFO) fails at the time limit. (The
# cache's file name holds the device's ids, so a first run makes it and
# its name is taken from there.)
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{VKBLR_PIPELINE_CACHE_DIR} "${WORK}")
unset(ENV{VKBLR_PIPELINE_CACHE})

set(info_run "${INFO}" --check --validate)
set(bench_run "${BENCH}" gemm --shape 32x32x32 --mode plane --reps 20 --warmup 0)

# Runs one tool; fails unless it exits 0 within 5 minutes (a loaded
# machine, sanitizers) and `expect` matches its output exactly once (or,
# empty, no warning at all).
function(run_tool expect)
  execute_process(COMMAND ${ARGN} TIMEOUT 300 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${ARGN}:\n${out}exit: ${rc}")
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "exit status ${rc} (or a hang), expected 0")
  endif()
  string(REGEX MATCHALL "vkblr: warning: " warnings "${out}")
  list(LENGTH warnings count)
  if(expect STREQUAL "")
    if(NOT count EQUAL 0)
      message(FATAL_ERROR "a warning about the pipeline cache where none was due")
    endif()
  elseif(NOT count EQUAL 1 OR NOT out MATCHES "${expect}")
    message(FATAL_ERROR "expected one warning matching ${expect}")
  endif()
endfunction()

run_tool("" ${info_run})
file(GLOB caches "${WORK}/pipelines-*.bin")
list(LENGTH caches count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "vkblr-info --check made no pipeline cache file in ${WORK}")
endif()
list(GET caches 0 cache)
string(REGEX REPLACE "([][\\^$.|?*+(){}])" "\\\\\\1" cache_rx "${cache}")
set(warning "vkblr: warning: pipeline cache ${cache_rx} is")

file(REMOVE "${cache}")
file(MAKE_DIRECTORY "${cache}")
run_tool("${warning} a directory" ${info_run})
run_tool("${warning} a directory" ${bench_run})

file(REMOVE_RECURSE "${cache}")
execute_process(COMMAND mkfifo "${cache}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mkfifo ${cache} failed")
endif()
run_tool("${warning} a FIFO" ${info_run})

file(REMOVE "${cache}")
file(CREATE_LINK /dev/zero "${cache}" SYMBOLIC)
run_tool("${warning} a character device" ${info_run})
