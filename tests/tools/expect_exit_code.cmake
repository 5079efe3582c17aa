# Runs COMMAND with ARGS and fails unless it exits with EXPECTED_CODE (ctest's WILL_FAIL cannot
# tell exit code 1 from 2).
execute_process(COMMAND ${COMMAND} ${ARGS} RESULT_VARIABLE code OUTPUT_QUIET ERROR_QUIET)
if(NOT code EQUAL EXPECTED_CODE)
  message(FATAL_ERROR "exit code ${code}, expected ${EXPECTED_CODE}")
endif()
