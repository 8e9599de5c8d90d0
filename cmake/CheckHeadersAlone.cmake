# Every public header compiles on its own, as C11 and as C++17, with the
# project's warnings as errors and -pedantic: a program may include any one
# of them first, from C or from C++. For ctest:
#
#   cmake -DROOT=source-dir -DWORK=scratch-dir -DCC=c-compiler [-DCXX=c++-compiler]
#         -P CheckHeadersAlone.cmake
#
# Without a C++ compiler the C half runs and the script exits 77 (ctest
# shows the test as skipped, with the reason) after it passes.
cmake_minimum_required(VERSION 3.20)

foreach(var ROOT WORK CC)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "CheckHeadersAlone.cmake: ${var} is not set")
  endif()
endforeach()

file(GLOB headers ${ROOT}/abi/include/tessera/*.h ${ROOT}/core/include/tessera/*.h
     ${ROOT}/sdk/include/tessera/*.h)
list(LENGTH headers count)
if(count LESS 9)
  message(FATAL_ERROR "found only ${count} public headers under ${ROOT}: the glob is wrong")
endif()
file(MAKE_DIRECTORY ${WORK})
set(includes -I${ROOT}/abi/include -I${ROOT}/core/include -I${ROOT}/sdk/include)
set(failures "")
foreach(header ${headers})
  get_filename_component(name ${header} NAME)
  string(REPLACE "." "_" stem ${name})
  file(WRITE ${WORK}/${stem}.c "#include <tessera/${name}>\n")
  file(WRITE ${WORK}/${stem}.cpp "#include <tessera/${name}>\n")
  execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only ${includes}
                          ${WORK}/${stem}.c
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(APPEND failures "C: tessera/${name}:\n${out}${err}\n")
  endif()
  if(CXX)
    execute_process(COMMAND ${CXX} -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only
                            ${includes} ${WORK}/${stem}.cpp
                    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
    if(NOT rc EQUAL 0)
      string(APPEND failures "C++: tessera/${name}:\n${out}${err}\n")
    endif()
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "public headers that do not compile alone:\n${failures}")
endif()
if(NOT CXX)
  message("${count} headers compile alone as C; no C++ compiler found, the C++ half is skipped")
  # cmake -P has no exit(); a message of SEND_ERROR would fail. ctest reads
  # the skip from the output instead (SKIP_REGULAR_EXPRESSION).
  message("SKIPPED: no C++ compiler")
  return()
endif()
message("${count} public headers compile alone as C11 and as C++17")
