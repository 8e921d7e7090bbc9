# ctest cxx20_guard: each public header (HEADERS, relative to the first of INCLUDES) compiled as
# C++17 must stop at its first error with tbatch's own "needs C++20" message, not with errors
# from deep inside a header.
set(include_args)
foreach(dir IN LISTS INCLUDES)
  list(APPEND include_args -I${dir})
endforeach()
set(failures)
foreach(header IN LISTS HEADERS)
  file(WRITE ${WORK_DIR}/cxx20_guard.cpp "#include <${header}>\n")
  execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -Wfatal-errors ${include_args}
                          ${WORK_DIR}/cxx20_guard.cpp
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(FIND "${out}" "tbatch needs C++20: compile with -std=c++20" at)
  if(result EQUAL 0 OR at EQUAL -1)
    list(APPEND failures "${header}:\n${out}")
  endif()
endforeach()
if(failures)
  list(JOIN failures "\n" report)
  message(FATAL_ERROR "headers that do not stop with the C++20 message as C++17:\n${report}")
endif()
