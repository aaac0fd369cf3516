# Helpers shared by the folders' CMakeLists.
include(doctest)

# locosim_use_pch(target): reuse the one precompiled LibTorch header.
function(locosim_use_pch target)
  target_precompile_headers(${target} REUSE_FROM locosim_pch)
endfunction()

# locosim_add_tests(name SOURCES a_test.cpp ... LIBS lib ...): one doctest binary, one ctest entry per case.
# Tests run from the repository root, so they can name scenarios/ and platforms/ files.
function(locosim_add_tests name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE doctest::doctest ${T_LIBS})
  locosim_use_pch(${name})
  # A ctest entry that selects no case would pass without testing anything (a ';' in a case's name
  # splits it into two entries, neither naming the case): such an entry fails instead.
  doctest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                         PROPERTIES ENVIRONMENT "LOCOSIM_BIN=${PROJECT_BINARY_DIR}"
                                    FAIL_REGULAR_EXPRESSION "test cases: 0 [|]")
endfunction()
