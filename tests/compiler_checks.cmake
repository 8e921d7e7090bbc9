# The compiler checks (included by tests/CMakeLists.txt when TBATCH_BUILD_CHECKS is on): what
# the compiler accepts, warns about and costs. The test preset leaves them out; the checks preset
# runs them with g++.

# The common mistakes stop compilation with one message that names the fix: each file in
# compile_errors/ must fail to compile with the message of its "// expect:" line.
file(GLOB tbatch_compile_error_cases CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/compile_errors/*.cpp)
foreach(source IN LISTS tbatch_compile_error_cases)
  get_filename_component(name ${source} NAME_WE)
  add_test(NAME compile_errors.${name}
           COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DSOURCE=${source}
                   "-DINCLUDES=${PROJECT_SOURCE_DIR}/include;$<TARGET_PROPERTY:Eigen3::Eigen,INTERFACE_INCLUDE_DIRECTORIES>"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/compile_errors/check.cmake)
endforeach()

# Every public header compiles on its own, clean under -Wshadow too: one generated translation
# unit per header, compiled (there is nothing to run) with the suite. The MPI, io and DLPack
# headers are checked when their library is found.
file(GLOB_RECURSE tbatch_public_headers RELATIVE ${PROJECT_SOURCE_DIR}/include CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/include/tbatch/*.hpp)
set(tbatch_header_sources)
foreach(header IN LISTS tbatch_public_headers)
  # The optional parts' headers need their library; mpi/balance.hpp is plain arithmetic.
  if((header STREQUAL "tbatch/mpi.hpp" OR header MATCHES "^tbatch/mpi/")
     AND NOT header STREQUAL "tbatch/mpi/balance.hpp" AND NOT TARGET tbatch::tbatch_mpi)
    continue()
  endif()
  if(header MATCHES "^tbatch/io/" AND NOT TARGET tbatch::tbatch_io)
    continue()
  endif()
  if((header STREQUAL "tbatch/dlpack.hpp" OR header STREQUAL "tbatch/interop/dlpack.hpp")
     AND NOT TARGET tbatch::tbatch_dlpack)
    continue()
  endif()
  string(MAKE_C_IDENTIFIER ${header} stem)
  set(source ${CMAKE_CURRENT_BINARY_DIR}/headers/${stem}.cpp)
  file(CONFIGURE OUTPUT ${source} CONTENT "#include <${header}>\n")
  list(APPEND tbatch_header_sources ${source})
endforeach()
add_library(tbatch_header_check OBJECT ${tbatch_header_sources})
target_link_libraries(tbatch_header_check PRIVATE tbatch::tbatch)
tbatch_link_components(tbatch_header_check TBATCH_HEADER_CHECK mpi io dlpack)
# Nothing here runs or links: checked by the front end only, without debug info or sanitizers.
target_compile_options(tbatch_header_check PRIVATE
                       "$<$<CXX_COMPILER_ID:GNU,Clang>:-Wshadow;-g0;-fno-sanitize=all>")
tbatch_check_syntax_only(tbatch_header_check)

# The same headers compiled as C++17 must stop with the one message that names the fix.
set(tbatch_checked_headers)
foreach(source IN LISTS tbatch_header_sources)
  file(READ ${source} line)
  string(REGEX REPLACE "#include <(.*)>\n" "\\1" header "${line}")
  if(NOT header STREQUAL "tbatch/version.hpp")  # macros only, readable by any C++
    list(APPEND tbatch_checked_headers ${header})
  endif()
endforeach()
set(tbatch_guard_includes ${PROJECT_SOURCE_DIR}/include
    "$<TARGET_PROPERTY:Eigen3::Eigen,INTERFACE_INCLUDE_DIRECTORIES>")
if(TARGET tbatch::tbatch_mpi)
  list(APPEND tbatch_guard_includes "$<TARGET_PROPERTY:MPI::MPI_CXX,INTERFACE_INCLUDE_DIRECTORIES>")
endif()
add_test(NAME cxx20_guard
         COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} "-DINCLUDES=${tbatch_guard_includes}"
                 "-DHEADERS=${tbatch_checked_headers}" -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cxx20_guard.cmake)

# What a compiled-mode file reads: no Eigen, nlohmann-json or <immintrin.h>, and no <sstream>,
# <iostream> or POSIX header included by tbatch itself (the issue's rule for compiled mode).
set(tbatch_compiled_mode_headers tbatch/tbatch.hpp tbatch/interop/arrow.hpp)
set(tbatch_compiled_mode_includes ${tbatch_guard_includes})
if(TARGET tbatch::tbatch_io)
  list(APPEND tbatch_compiled_mode_headers tbatch/io/safetensors.hpp)
  list(APPEND tbatch_compiled_mode_includes
       "$<TARGET_PROPERTY:nlohmann_json::nlohmann_json,INTERFACE_INCLUDE_DIRECTORIES>")
endif()
if(TARGET tbatch::tbatch_dlpack)
  list(APPEND tbatch_compiled_mode_headers tbatch/dlpack.hpp)
  list(APPEND tbatch_compiled_mode_includes
       "$<TARGET_PROPERTY:dlpack::dlpack,INTERFACE_INCLUDE_DIRECTORIES>")
endif()
if(TARGET tbatch::tbatch_mpi)
  list(APPEND tbatch_compiled_mode_headers tbatch/mpi.hpp)
endif()
add_test(NAME compiled_mode_includes
         COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER}
                 "-DINCLUDES=${tbatch_compiled_mode_includes}"
                 "-DHEADERS=${tbatch_compiled_mode_headers}" -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/compiled_mode_includes.cmake)

# Every public header with its templates instantiated for every dtype, compiled (not run) as
# strictly as a project that adds tbatch with add_subdirectory / FetchContent may compile it:
# a warning in a header fails the build.
add_library(tbatch_strict_warnings OBJECT strict_warnings.cpp)
target_link_libraries(tbatch_strict_warnings PRIVATE tbatch::tbatch)
tbatch_link_components(tbatch_strict_warnings TBATCH_STRICT mpi io dlpack)
# These warnings come from the front end: checked by it alone, without optimisation, debug info
# or sanitizers (nothing runs). The
# middle end's few warnings (-Wreturn-type among them) are the suites', which compile the same
# headers with -Wall -Wextra -Werror.
set(tbatch_strict_options -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror
                          -O0 -g0 -fno-sanitize=all)
target_compile_options(tbatch_strict_warnings PRIVATE
                       "$<$<CXX_COMPILER_ID:GNU,Clang>:${tbatch_strict_options}>")
tbatch_check_syntax_only(tbatch_strict_warnings)

# The compile-time gate: tbatch.hpp + one call, in both modes, against a file that multiplies two
# Eigen matrices, compiled in the same run (CPU time, so the ratios hold under load). The limits
# are about 25% above the figures in docs/benchmarks.md, measured with g++: a change that makes
# the headers markedly slower to compile fails here.
set(TBATCH_COMPILE_TIME_GATE
    "tbatch:-O0:2.1,tbatch:-O2:2.7,tbatch:rss:1.7,tbatch_compiled:-O0:0.9,tbatch_compiled:-O2:0.95,tbatch_compiled:rss:0.95,tensor_dict_compiled:-O0:0.85,tensor_dict_compiled:-O2:0.85,safetensors_compiled:-O0:1.0,safetensors_compiled:-O2:1.0"
    CACHE STRING "compile_time.gate's limits: ROW:WHAT:MAX, ratios to the Eigen product file")
if(TBATCH_PYTHON3 AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_test(NAME compile_time.gate
           COMMAND ${TBATCH_PYTHON3} ${PROJECT_SOURCE_DIR}/benchmarks/compile_time/compile_time.py
                   --compiler ${CMAKE_CXX_COMPILER} --repeat 2
                   --only tbatch,tbatch_compiled,tensor_dict_compiled,safetensors_compiled
                   --gate ${TBATCH_COMPILE_TIME_GATE})
  # Alone: next to another test under ASan on a 2-core machine the compiled-mode row measured
  # 1.20-1.34x the Eigen file (0.89x alone), past its limit.
  set_tests_properties(compile_time.gate PROPERTIES RUN_SERIAL TRUE)
else()
  # The limits are g++'s figures: another compiler's ratios are not comparable to them.
  add_test(NAME compile_time.gate COMMAND ${CMAKE_COMMAND} -E echo
                                          "SKIP: the gate measures g++ 12 (python3 and g++ needed)")
  set_tests_properties(compile_time.gate PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
endif()
