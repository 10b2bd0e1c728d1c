# cmake -DLIMIT=<seconds> -DEXPECT=<regex> -P expect_job_failure.cmake -- COMMAND...
# Runs COMMAND (an mpirun job in which a rank dies or hangs) and passes only
# when it fails (nonzero exit) within LIMIT seconds with output matching
# EXPECT: the job ended with an error instead of hanging.
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/command_after_dashes.cmake)
if(NOT command OR NOT LIMIT OR NOT EXPECT)
  message(FATAL_ERROR "usage: cmake -DLIMIT=<s> -DEXPECT=<regex> -P expect_job_failure.cmake -- COMMAND...")
endif()
string(TIMESTAMP start "%s")
execute_process(COMMAND ${command} TIMEOUT ${LIMIT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
message("${out}")
message("exit: ${rc} after ${seconds} s")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "the job was still running after ${LIMIT} s: a dead or hung rank left the others waiting")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job succeeded: the rank did not die (test broken)")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "the job failed without the expected message (${EXPECT})")
endif()
message("the job ended with an error within ${seconds} s, as it should")
