# Runs the command after -P ... and checks it the way ctest's own regular expressions cannot:
# the exit code must be EXPECT_CODE (default 0), the output (stdout and stderr together) must
# contain EXPECT_TEXT and match EXPECT_REGEX where given, and it must contain no validation
# message, sanitizer report or uncaught-exception abort whatever the exit code. REPEAT=N runs the
# command N times, each checked (a crash at exit that happens once in 50 runs must show).
# Usage: cmake [-DEXPECT_CODE=N] [-DEXPECT_TEXT=...] [-DEXPECT_REGEX=...] [-DREPEAT=N]
#        -P expect_exit.cmake CMD...
set(command "")
set(collect OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(index RANGE ${last})
  if(collect)
    list(APPEND command "${CMAKE_ARGV${index}}")
  elseif(CMAKE_ARGV${index} MATCHES "expect_exit\\.cmake$")
    set(collect ON)
  endif()
endforeach()
if(NOT DEFINED EXPECT_CODE)
  set(EXPECT_CODE 0)
endif()
if(NOT DEFINED REPEAT)
  set(REPEAT 1)
endif()
foreach(run RANGE 1 ${REPEAT})
  # One variable for both pipes: their output merged in the order the command wrote it.
  execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE output
                  ERROR_VARIABLE output)
  message("run ${run} of ${REPEAT}: exit code ${code}\n${output}")
  if(NOT code STREQUAL "${EXPECT_CODE}")
    message(FATAL_ERROR "run ${run}: expected exit code ${EXPECT_CODE}, got ${code}")
  endif()
  if(DEFINED EXPECT_TEXT)
    string(FIND "${output}" "${EXPECT_TEXT}" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "run ${run}: expected the output to contain: ${EXPECT_TEXT}")
    endif()
  endif()
  if(DEFINED EXPECT_REGEX AND NOT output MATCHES "${EXPECT_REGEX}")
    message(FATAL_ERROR "run ${run}: expected the output to match: ${EXPECT_REGEX}")
  endif()
  foreach(forbidden "\\[vulkan validation" "AddressSanitizer" "UndefinedBehaviorSanitizer"
                    "LeakSanitizer" "terminate called" "Segmentation fault" "core dumped")
    if(output MATCHES "${forbidden}")
      message(FATAL_ERROR "run ${run}: the output has a forbidden message: ${forbidden}")
    endif()
  endforeach()
endforeach()
