# mmpt_module(NAME [DEPS target...])
#
# Build src/mmpt/NAME/*.cc (less *_test.cc, *_fuzz.cc, *_bench.cc) into the library mmpt_NAME,
# its *_test.cc files into the test binary mmpt_NAME_tests, and its *_bench.cc files into
# mmpt_NAME_bench, and (with MMPT_FUZZ) each *_fuzz.cc into a libFuzzer binary that the target
# mmpt_fuzzers builds. Tests are labelled by tier from the GoogleTest suite name: suites ending in
# "Slow" are `slow`, in "Dist" are `dist`, in "Gpu" are `gpu`; the rest are `unit`. Only the tests
# see MMPT_SOURCE_DIR (for their inputs under tests/): the library finds its data at run time
# (core/data_dir.h), so an installed mmpt works without the source tree.
function(mmpt_module NAME)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  file(GLOB benches CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_bench.cc)
  file(GLOB fuzzers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_fuzz.cc)
  list(REMOVE_ITEM sources ${tests} ${benches} ${fuzzers} "")

  add_library(mmpt_${NAME} STATIC ${sources})
  target_include_directories(mmpt_${NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(mmpt_${NAME} PUBLIC ${ARG_DEPS})

  if(tests)
    add_executable(mmpt_${NAME}_tests ${tests})
    target_link_libraries(mmpt_${NAME}_tests PRIVATE mmpt_${NAME} GTest::gtest GTest::gtest_main)
    target_compile_definitions(mmpt_${NAME}_tests PRIVATE MMPT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    foreach(tier slow dist gpu)
      string(SUBSTRING ${tier} 0 1 first)
      string(TOUPPER ${first} first)
      string(SUBSTRING ${tier} 1 -1 rest)
      gtest_discover_tests(mmpt_${NAME}_tests TEST_FILTER "*${first}${rest}.*"
        PROPERTIES LABELS ${tier} DISCOVERY_TIMEOUT 60)
    endforeach()
    gtest_discover_tests(mmpt_${NAME}_tests TEST_FILTER "-*Slow.*:*Dist.*:*Gpu.*"
      PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
  endif()

  if(benches AND MMPT_BENCH)
    add_executable(mmpt_${NAME}_bench ${benches})
    target_link_libraries(mmpt_${NAME}_bench PRIVATE mmpt_${NAME} benchmark::benchmark_main)
  endif()

  if(fuzzers AND MMPT_FUZZ)
    foreach(fuzzer ${fuzzers})
      get_filename_component(fuzz_name ${fuzzer} NAME_WE)
      add_executable(${fuzz_name} ${fuzzer})
      target_compile_options(${fuzz_name} PRIVATE -fsanitize=fuzzer,address,undefined)
      target_link_options(${fuzz_name} PRIVATE -fsanitize=fuzzer,address,undefined)
      target_link_libraries(${fuzz_name} PRIVATE mmpt_${NAME})
      add_dependencies(mmpt_fuzzers ${fuzz_name})
    endforeach()
  endif()
endfunction()
