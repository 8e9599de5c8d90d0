# ctest script: TSR_PLUGIN_<NAME>=ON fails configure, naming what is missing,
# when the plugin's dependency is absent; OFF leaves the plugin out; a value
# other than AUTO, ON or OFF is refused. Configures ROOT into scratch folders
# under WORK with tests, the CUDA and the OpenCL plugins off (fast).
# Arguments: -DROOT=<source> -DWORK=<scratch folder>.
set(common -DTSR_BUILD_TESTS=OFF -DTSR_PLUGIN_CUDA=OFF -DTSR_PLUGIN_OPENCL=OFF)

function(configure name expect_success)
  file(REMOVE_RECURSE ${WORK}/${name})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${ROOT} -B ${WORK}/${name} ${common} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_success AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: configure failed:\n${err}")
  elseif(NOT expect_success AND rc EQUAL 0)
    message(FATAL_ERROR "${name}: configure succeeded, expected a failure:\n${out}")
  endif()
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()

configure(on_missing FALSE -DTSR_PLUGIN_ONEDNN=ON -DTSR_ONEDNN_ROOT=/nonexistent/onednn)
if(NOT out MATCHES "TSR_PLUGIN_ONEDNN=ON but oneDNN headers")
  message(FATAL_ERROR "on_missing: the failure does not say what is missing:\n${out}")
endif()
configure(auto_missing TRUE -DTSR_PLUGIN_ONEDNN=AUTO -DTSR_ONEDNN_ROOT=/nonexistent/onednn)
if(NOT out MATCHES "ONEDNN plugin: not built \\(oneDNN headers")
  message(FATAL_ERROR "auto_missing: no line says why the plugin is not built:\n${out}")
endif()
configure(off TRUE -DTSR_PLUGIN_ONEDNN=OFF)
if(NOT out MATCHES "ONEDNN plugin: not built \\(TSR_PLUGIN_ONEDNN=OFF\\)")
  message(FATAL_ERROR "off: no line says the plugin is off:\n${out}")
endif()
configure(bad_value FALSE -DTSR_PLUGIN_ONEDNN=MAYBE)
if(NOT out MATCHES "TSR_PLUGIN_ONEDNN is .MAYBE.")
  message(FATAL_ERROR "bad_value: the refusal does not name the value:\n${out}")
endif()
file(REMOVE_RECURSE ${WORK})
message(STATUS "plugin options: ON fails loudly, AUTO explains, OFF leaves out, bad values refused")
