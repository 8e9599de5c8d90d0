# A plugin folder of 900 junk candidates and one real plugin named to sort
# last: every candidate is tried and every rejection kept (discovery once
# read 256 names per folder and kept 64 rejections, silently). For ctest:
#
#   cmake -DTOOL=tsr-info -DPLUGIN=libtessera-ref.so -DDIR=scratch -P tests_many_candidates.cmake
cmake_minimum_required(VERSION 3.20)
foreach(var TOOL PLUGIN DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "tests_many_candidates.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
foreach(i RANGE 1 900)
  string(LENGTH "${i}" n)
  math(EXPR pad "4 - ${n}")
  string(REPEAT "0" ${pad} zeros)
  file(WRITE ${DIR}/libtessera-junk${zeros}${i}.so "not an ELF file\n")
endforeach()
file(COPY_FILE ${PLUGIN} ${DIR}/libtessera-zzz.so)
execute_process(COMMAND ${TOOL} --explicit-only --plugin ${DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE ${DIR})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tsr-info exited ${rc}:\n${err}")
endif()
if(NOT out MATCHES "Rejected candidates: 900\n")
  string(REGEX MATCH "Rejected candidates: [0-9]+" found "${out}")
  message(FATAL_ERROR "expected 900 rejected candidates, tsr-info says '${found}'")
endif()
if(NOT out MATCHES "libtessera-junk0900.so" OR NOT out MATCHES "\n  ref:0")
  message(FATAL_ERROR "the last junk candidate or the plugin sorted after it is missing:\n${out}")
endif()
message(STATUS "900 candidates rejected and listed; the plugin after them loaded")
