# cmake -DRC=<exit status> [-DEXPECT=<regex>] [-DLIMIT=<seconds>] -P expect_exit.cmake -- COMMAND...
#
# Runs COMMAND (a tool given careless or hostile arguments) and passes only
# when it exits with status RC within LIMIT seconds (default 300), its
# output (stdout and stderr together) matches EXPECT, and nothing in it
# tells of an abort: no death by a signal, no uncaught exception
# ("terminate called"), no sanitizer report.
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/command_after_dashes.cmake)
if(NOT command OR NOT DEFINED RC)
  message(FATAL_ERROR "usage: cmake -DRC=<status> [-DEXPECT=<regex>] [-DLIMIT=<s>] -P expect_exit.cmake -- COMMAND...")
endif()
if(NOT LIMIT)
  set(LIMIT 300)
endif()
execute_process(COMMAND ${command} TIMEOUT ${LIMIT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
message("exit: ${rc}")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "still running after ${LIMIT} s")
endif()
if(out MATCHES "terminate called|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:")
  message(FATAL_ERROR "the output tells of an abort or a sanitizer report")
endif()
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "exit status ${rc}, expected ${RC}")
endif()
if(DEFINED EXPECT AND NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match ${EXPECT}")
endif()
