# cmake -P driver of the install test; the variables come from
# tests/install/CMakeLists.txt. Fails (FATAL_ERROR) at the first step that
# does not do what an installed package must.

set(prefix ${TSR_WORK_DIR}/prefix)
file(REMOVE_RECURSE ${TSR_WORK_DIR})
file(MAKE_DIRECTORY ${TSR_WORK_DIR})

# Runs a command; stops the test with its output unless it exits 0.
# OUTPUT_VARIABLE <var> keeps stdout.
function(tsr_run step)
  cmake_parse_arguments(R "" "OUTPUT_VARIABLE" "COMMAND" ${ARGN})
  execute_process(COMMAND ${R_COMMAND}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    list(JOIN R_COMMAND " " line)
    message(FATAL_ERROR "${step} failed (${rc}): ${line}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  message(STATUS "${step}: ok")
  if(R_OUTPUT_VARIABLE)
    set(${R_OUTPUT_VARIABLE} "${out}" PARENT_SCOPE)
  endif()
endfunction()

# An explicit TSR_PLUGIN_PATH would let plugins from outside the prefix in.
unset(ENV{TSR_PLUGIN_PATH})

set(config_args "")
if(TSR_CONFIG)
  set(config_args --config ${TSR_CONFIG})
endif()
tsr_run("cmake --install"
  COMMAND ${CMAKE_COMMAND} --install ${TSR_BUILD_DIR} --prefix ${prefix} ${config_args})

# What an installation must hold.
foreach(file
    ${TSR_INCLUDEDIR}/tessera/abi.h
    ${TSR_INCLUDEDIR}/tessera/ops.h
    ${TSR_INCLUDEDIR}/tessera/tessera.h
    ${TSR_INCLUDEDIR}/tessera/core.h
    ${TSR_INCLUDEDIR}/tessera/plugin_kit.h
    ${TSR_LIBDIR}/libtessera-plugin-kit.a
    ${TSR_LIBDIR}/cmake/Tessera/TesseraPlugin.cmake
    ${TSR_BINDIR}/tsr-conformance
    ${TSR_LIBDIR}/libtessera.so
    ${TSR_LIBDIR}/cmake/Tessera/TesseraConfig.cmake
    ${TSR_LIBDIR}/cmake/Tessera/TesseraConfigVersion.cmake
    ${TSR_LIBDIR}/cmake/Tessera/TesseraTargets.cmake
    ${TSR_LIBDIR}/pkgconfig/tessera.pc
    ${TSR_PLUGIN_DIR}/libtessera-ref.so
    ${TSR_BINDIR}/tsr-info)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the installation lacks ${file}")
  endif()
endforeach()
# The deliberately broken fixture plugins must never reach an installation,
# where discovery would find them.
file(GLOB fixtures RELATIVE ${TSR_FIXTURE_DIR} ${TSR_FIXTURE_DIR}/*.so)
foreach(fixture IN LISTS fixtures)
  if(EXISTS ${prefix}/${TSR_PLUGIN_DIR}/${fixture})
    message(FATAL_ERROR "fixture plugin ${fixture} was installed into ${TSR_PLUGIN_DIR}")
  endif()
endforeach()

# The installed tool must find the installed library on its own.
tsr_run("installed tsr-info" COMMAND ${prefix}/${TSR_BINDIR}/tsr-info)

# 1. find_package(Tessera), found through CMAKE_PREFIX_PATH.
tsr_run("consumer configure (find_package)"
  COMMAND ${CMAKE_COMMAND} -S ${TSR_CONSUMER_DIR} -B ${TSR_WORK_DIR}/find-package
    -G ${TSR_GENERATOR}
    -DCMAKE_C_COMPILER=${TSR_C_COMPILER}
    -DCMAKE_C_FLAGS=${TSR_C_FLAGS}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DTSR_EXPECTED_VERSION=${TSR_VERSION}
    -DTSR_EXPECTED_PREFIX=${prefix})
tsr_run("consumer build (find_package)"
  COMMAND ${CMAKE_COMMAND} --build ${TSR_WORK_DIR}/find-package)
tsr_run("consumer run (find_package)"
  COMMAND ${TSR_WORK_DIR}/find-package/tsr-install-consumer ${prefix} OUTPUT_VARIABLE out)
message(STATUS "${out}")

# 2. pkg-config, with a plain compiler command as a Makefile would write it.
if(NOT TSR_PKG_CONFIG)
  message(FATAL_ERROR "pkg-config was not found when Tessera was configured")
endif()
set(ENV{PKG_CONFIG_PATH} ${prefix}/${TSR_LIBDIR}/pkgconfig)
tsr_run("pkg-config --modversion" COMMAND ${TSR_PKG_CONFIG} --modversion tessera
  OUTPUT_VARIABLE version)
if(NOT version STREQUAL TSR_VERSION)
  message(FATAL_ERROR "pkg-config says version '${version}', expected '${TSR_VERSION}'")
endif()
tsr_run("pkg-config --cflags" COMMAND ${TSR_PKG_CONFIG} --cflags tessera OUTPUT_VARIABLE cflags)
tsr_run("pkg-config --libs" COMMAND ${TSR_PKG_CONFIG} --libs tessera OUTPUT_VARIABLE libs)
tsr_run("pkg-config --variable=libdir" COMMAND ${TSR_PKG_CONFIG} --variable=libdir tessera
  OUTPUT_VARIABLE libdir)
get_filename_component(libdir_real "${libdir}" REALPATH)
get_filename_component(expected_libdir "${prefix}/${TSR_LIBDIR}" REALPATH)
if(NOT libdir_real STREQUAL expected_libdir)
  message(FATAL_ERROR "tessera.pc says libdir=${libdir}, the library is in ${expected_libdir}")
endif()
separate_arguments(cflags UNIX_COMMAND "${cflags}")
separate_arguments(libs UNIX_COMMAND "${libs}")
separate_arguments(extra_flags UNIX_COMMAND "${TSR_C_FLAGS}")
file(MAKE_DIRECTORY ${TSR_WORK_DIR}/pkg-config)
tsr_run("consumer build (pkg-config)"
  COMMAND ${TSR_C_COMPILER} -std=c11 -Wall -Wextra -Werror -pedantic ${extra_flags} ${cflags}
    ${TSR_CONSUMER_DIR}/main.c -o ${TSR_WORK_DIR}/pkg-config/tsr-install-consumer
    ${libs} -Wl,-rpath,${libdir})
tsr_run("consumer run (pkg-config)"
  COMMAND ${TSR_WORK_DIR}/pkg-config/tsr-install-consumer ${prefix} OUTPUT_VARIABLE out)
message(STATUS "${out}")

# 3. A plugin of one's own: the five-op example, out of tree, on the
# installed kit and tsr_add_plugin(), certified by the installed tool.
tsr_run("five-op plugin configure (find_package)"
  COMMAND ${CMAKE_COMMAND} -S ${TSR_FIVE_OP_DIR} -B ${TSR_WORK_DIR}/five-op
    -G ${TSR_GENERATOR}
    -DCMAKE_C_COMPILER=${TSR_C_COMPILER}
    -DCMAKE_C_FLAGS=${TSR_C_FLAGS}
    -DCMAKE_PREFIX_PATH=${prefix})
tsr_run("five-op plugin build" COMMAND ${CMAKE_COMMAND} --build ${TSR_WORK_DIR}/five-op)
tsr_run("five-op plugin certified by the installed tsr-conformance"
  COMMAND ${prefix}/${TSR_BINDIR}/tsr-conformance --plugin
    ${TSR_WORK_DIR}/five-op/libtessera-five.so OUTPUT_VARIABLE out)
string(REGEX MATCH "Verdict: [^\n]*" verdict "${out}")
message(STATUS "${verdict}")
