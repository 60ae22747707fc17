# cmake -D TEST_EXECUTABLE=... -D CTEST_FILE=... -D WORKING_DIRECTORY=... -P gtest_suites.cmake
#
# Run after a GoogleTest binary is built (mmpt_module): lists its suites and writes CTEST_FILE,
# which registers each suite as one ctest test. A suite runs in one process, so its
# SetUpTestSuite fixture (a prepared dataset, an exchange group) and the process's shared data
# (the 11 MB tokenizer, SharedMedia's files) are built once per suite, not once per test. The
# tier label comes from the suite name: "...Slow" is `slow`, "...Dist" `dist`, "...Gpu" `gpu`,
# the rest `unit`.
execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
                WORKING_DIRECTORY "${WORKING_DIRECTORY}" OUTPUT_VARIABLE listing
                RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${status}):\n${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  # A suite's line starts in column 0 and ends its name with '.'; its tests are indented.
  if(NOT line MATCHES "^([^ ]+)\\.( |$)")
    continue()
  endif()
  set(suite "${CMAKE_MATCH_1}")
  set(tier unit)
  if(suite MATCHES "(Slow|Dist|Gpu)$")
    string(TOLOWER "${CMAKE_MATCH_1}" tier)
  endif()
  string(APPEND script
    "add_test([=[${suite}]=] [=[${TEST_EXECUTABLE}]=] [=[--gtest_filter=${suite}.*]=])\n"
    "set_tests_properties([=[${suite}]=] PROPERTIES LABELS ${tier} "
    "WORKING_DIRECTORY [=[${WORKING_DIRECTORY}]=])\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
