# ctest compiled_mode_includes: what a file compiled in compiled mode (TBATCH_COMPILED) reads
# when it includes HEADERS. Nothing may bring in Eigen (whose Core brings <sstream>, <iostream>
# and the intrinsics), nlohmann-json or <immintrin.h>; no tbatch header may include <sstream>,
# <iostream> or a POSIX header itself (the standard library's own use of them, as <filesystem>
# includes <sstream>, is not tbatch's choice).
list(TRANSFORM INCLUDES PREPEND -I OUTPUT_VARIABLE include_args)
set(failures)
foreach(header IN LISTS HEADERS)
  file(WRITE ${WORK_DIR}/compiled_mode_includes.cpp
       "#define TBATCH_COMPILED\n#include <${header}>\n")
  execute_process(COMMAND ${CXX} -std=c++20 -E -H ${include_args}
                          ${WORK_DIR}/compiled_mode_includes.cpp
                  RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE tree)
  if(NOT result EQUAL 0)
    list(APPEND failures "${header}: the preprocessor failed:\n${tree}")
    continue()
  endif()
  # -H prints one line per include, dots for its depth: ". a.hpp", ".. b.hpp" (b included by a).
  string(REPLACE "\n" ";" lines "${tree}")
  set(parents "${header}")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^(\\.+) (.*)$")
      continue()
    endif()
    string(LENGTH "${CMAKE_MATCH_1}" depth)
    set(path "${CMAKE_MATCH_2}")
    math(EXPR parent_index "${depth} - 1")
    list(SUBLIST parents 0 ${depth} parents)
    list(GET parents ${parent_index} parent)
    list(APPEND parents "${path}")
    if(path MATCHES "/Eigen/|/nlohmann/|/immintrin\\.h$")
      list(APPEND failures "${header}: ${parent} includes ${path}")
    elseif(parent MATCHES "/tbatch/"
           AND path MATCHES "/(sstream|iostream)$|/(unistd|fcntl|pthread|dirent)\\.h$|/sys/")
      list(APPEND failures "${header}: ${parent} includes ${path}")
    endif()
  endforeach()
endforeach()
if(failures)
  list(REMOVE_DUPLICATES failures)
  list(JOIN failures "\n" report)
  message(FATAL_ERROR "compiled mode's headers read what they must not:\n${report}")
endif()
