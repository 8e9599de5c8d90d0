# tsr-conformance creates the folders of --report and --junit when they are
# missing, for ctest:
#
#   cmake -DTOOL=... -DPLUGIN=... -DDIR=scratch-folder -P check_report_folder.cmake
#
# DIR is removed first, so neither report's folder exists when the tool runs;
# the run is one API group, to stay short. Fails unless both files are there
# afterwards and the tool said nothing about not writing them.
cmake_minimum_required(VERSION 3.20)

foreach(var TOOL PLUGIN DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_report_folder.cmake: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE ${DIR})
set(report ${DIR}/markdown/nested/report.md)
set(junit ${DIR}/junit/report.xml)
execute_process(COMMAND ${TOOL} --plugin ${PLUGIN} --filter api:lifecycle --report ${report}
                        --junit ${junit}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tsr-conformance exited ${rc}:\n${out}${err}")
endif()
if(err MATCHES "cannot write")
  message(FATAL_ERROR "tsr-conformance could not write a report:\n${err}")
endif()
foreach(file ${report} ${junit})
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "${file} was not written:\n${out}${err}")
  endif()
  file(SIZE ${file} size)
  if(size EQUAL 0)
    message(FATAL_ERROR "${file} is empty")
  endif()
endforeach()
file(REMOVE_RECURSE ${DIR})
