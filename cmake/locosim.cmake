# Helpers shared by the folders' CMakeLists.
include(doctest)

# locosim_use_pch(target): reuse the one precompiled LibTorch header. Loading it costs about 6 s per
# translation unit, so a unit that includes no LibTorch header is listed in `except`, which then
# compiles without it (SKIP_PRECOMPILE_HEADERS).
function(locosim_use_pch target)
  cmake_parse_arguments(P "" "" "EXCEPT" ${ARGN})
  target_precompile_headers(${target} REUSE_FROM locosim_pch)
  if(P_EXCEPT)
    set_source_files_properties(${P_EXCEPT} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
endfunction()

# The doctest runner, compiled once (without LibTorch) for every test binary.
add_library(locosim_doctest_main OBJECT ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp)
target_link_libraries(locosim_doctest_main PUBLIC doctest::doctest)

# The command-line tests' helpers (tests/cli_util.hpp), compiled once; no LibTorch.
add_library(locosim_cli_util STATIC ${PROJECT_SOURCE_DIR}/tests/cli_util.cpp)
target_include_directories(locosim_cli_util PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(locosim_cli_util PUBLIC doctest::doctest)
target_compile_options(locosim_cli_util PRIVATE -O1)

# locosim_add_tests(name [NO_TORCH] [ONE_PROCESS] SOURCES a_test.cpp ... LIBS lib ...): one doctest
# binary, one ctest entry per case. Tests run from the repository root, so they can name scenarios/
# and platforms/ files. Test code is compiled at -O1 (the code under test keeps the build's
# optimization): a third less compile time, the same numbers (no fast-math at any level). NO_TORCH:
# the tests include <doctest/doctest.h> and no LibTorch header, and build without the precompiled
# header. ONE_PROCESS: one ctest entry runs every case in one process, for cases that need no process
# of their own (no SimGrid engine, no run folder of a fixed name): a binary linked with LibTorch takes
# about a second to start, and algorithms_test's 102 entries spent more on that than on their work.
# `<binary> --test-case=NAME` runs one case.
function(locosim_add_tests name)
  cmake_parse_arguments(T "NO_TORCH;ONE_PROCESS" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE locosim_doctest_main doctest::doctest ${T_LIBS})
  target_compile_options(${name} PRIVATE -O1)
  if(NOT T_NO_TORCH)
    locosim_use_pch(${name})
  endif()
  # A ctest entry that selects no case would pass without testing anything (a ';' in a case's name
  # splits it into two entries, neither naming the case): such an entry fails instead.
  if(T_ONE_PROCESS)
    add_test(NAME "${name}: every case, in one process" COMMAND ${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties("${name}: every case, in one process" PROPERTIES ENVIRONMENT "LOCOSIM_BIN=${PROJECT_BINARY_DIR}"
                         FAIL_REGULAR_EXPRESSION "test cases: 0 [|]" COST 100)
  else()
    doctest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                           PROPERTIES ENVIRONMENT "LOCOSIM_BIN=${PROJECT_BINARY_DIR}"
                                      FAIL_REGULAR_EXPRESSION "test cases: 0 [|]")
  endif()
endfunction()
