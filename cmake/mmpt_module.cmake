# mmpt_module(NAME [DEPS target...])
#
# Build src/mmpt/NAME/*.cc (less *_test.cc, *_fuzz.cc, *_bench.cc) into the library mmpt_NAME,
# its *_test.cc files into the test binary mmpt_NAME_tests, and its *_bench.cc files into
# mmpt_NAME_bench, and (with MMPT_FUZZ) each *_fuzz.cc into a libFuzzer binary that the target
# mmpt_fuzzers builds. Each GoogleTest suite is one ctest test, labelled by tier from its name
# (cmake/gtest_suites.cmake): suites ending in "Slow" are `slow`, in "Dist" are `dist`, in "Gpu"
# are `gpu`; the rest are `unit`. Only the tests see MMPT_SOURCE_DIR (for their inputs under
# tests/): the library finds its data at run time (core/data_dir.h), so an installed mmpt works
# without the source tree.
function(mmpt_module NAME)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  file(GLOB benches CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_bench.cc)
  file(GLOB fuzzers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_fuzz.cc)
  list(REMOVE_ITEM sources ${tests} ${benches} ${fuzzers} "")
  if(MMPT_FUZZ)  # only what the fuzz targets link (MMPT_FUZZ_SOURCES, CMakeLists.txt)
    set(linked)
    foreach(source ${sources})
      file(RELATIVE_PATH name ${PROJECT_SOURCE_DIR}/src/mmpt ${source})
      string(REGEX REPLACE "\\.cc$" "" name ${name})
      if(name IN_LIST MMPT_FUZZ_SOURCES)
        list(APPEND linked ${source})
      endif()
    endforeach()
    set(sources ${linked})
    if(NOT sources)
      set(sources ${PROJECT_BINARY_DIR}/mmpt_fuzz_empty.cc)
    endif()
  endif()

  add_library(mmpt_${NAME} STATIC ${sources})
  # The release tree compiles a module's sources (and its tests) eight to a unity file: each
  # header is parsed once per eight files, which halves a fresh clone's build (the other presets,
  # used to debug, keep one file per object). Helpers in a module's anonymous namespaces must
  # therefore not share a name.
  if(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
    set_target_properties(mmpt_${NAME} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
  target_include_directories(mmpt_${NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(mmpt_${NAME} PUBLIC ${ARG_DEPS})

  if(tests)
    add_executable(mmpt_${NAME}_tests ${tests})
    target_link_libraries(mmpt_${NAME}_tests PRIVATE mmpt_${NAME} GTest::gtest GTest::gtest_main)
    target_compile_definitions(mmpt_${NAME}_tests PRIVATE MMPT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    # A test's own code is thin (the library it calls keeps the preset's flags): in the release
    # tree it compiles without optimization or line tables, with GoogleTest's header precompiled.
    if(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
      target_compile_options(mmpt_${NAME}_tests PRIVATE -O0 -g0)
      target_precompile_headers(mmpt_${NAME}_tests PRIVATE <gtest/gtest.h>)
      set_target_properties(mmpt_${NAME}_tests PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    endif()
    # One ctest test per suite, labelled by tier (gtest_suites.cmake), registered once built.
    set(suites ${CMAKE_CURRENT_BINARY_DIR}/mmpt_${NAME}_suites.cmake)
    add_custom_command(TARGET mmpt_${NAME}_tests POST_BUILD
      COMMAND ${CMAKE_COMMAND} -D TEST_EXECUTABLE=$<TARGET_FILE:mmpt_${NAME}_tests>
              -D CTEST_FILE=${suites} -D WORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}
              -P ${PROJECT_SOURCE_DIR}/cmake/gtest_suites.cmake
      VERBATIM)
    set(include_file ${CMAKE_CURRENT_BINARY_DIR}/mmpt_${NAME}_suites_include.cmake)
    file(WRITE ${include_file}
      "if(EXISTS [=[${suites}]=])\n  include([=[${suites}]=])\nelse()\n"
      "  add_test(mmpt_${NAME}_tests_NOT_BUILT mmpt_${NAME}_tests_NOT_BUILT)\nendif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
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
