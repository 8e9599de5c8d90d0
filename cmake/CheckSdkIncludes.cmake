# cmake -DROOT=<source dir> -P CheckSdkIncludes.cmake
# Fails when a file under sdk/ (its tests included) includes one of the
# core's private headers (core/*.h: runtime.h, tensor.h, error.h, ...). The
# SDK reaches the core only through core/include: tessera/core.h and
# tessera/core_layer.h (issue 26). sdk/CMakeLists.txt keeps core/ off the
# SDK's include path as well; this also covers headers no build compiles.
cmake_minimum_required(VERSION 3.16)  # if(IN_LIST)
if(NOT ROOT)
  message(FATAL_ERROR "CheckSdkIncludes.cmake: ROOT is not set")
endif()

file(GLOB private_headers RELATIVE ${ROOT}/core ${ROOT}/core/*.h)
if(NOT private_headers)
  message(FATAL_ERROR "CheckSdkIncludes.cmake: no headers found in ${ROOT}/core")
endif()
file(GLOB_RECURSE sdk_files ${ROOT}/sdk/*.c ${ROOT}/sdk/*.h)

set(violations "")
set(checked 0)
foreach(file IN LISTS sdk_files)
  math(EXPR checked "${checked} + 1")
  get_filename_component(dir ${file} DIRECTORY)
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">]+[\">]")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*$" "\\1" name "${line}")
    get_filename_component(base ${name} NAME)
    set(bad FALSE)
    # Any path that reaches into core/ other than core/include.
    if(name MATCHES "(^|/)core/" AND NOT name MATCHES "(^|/)core/include/")
      set(bad TRUE)
    # A bare name that only core/ holds (sdk files of the same name are fine).
    elseif(base IN_LIST private_headers AND NOT name MATCHES "^tessera/"
           AND NOT EXISTS ${dir}/${name})
      set(bad TRUE)
    endif()
    if(bad)
      file(RELATIVE_PATH rel ${ROOT} ${file})
      list(APPEND violations "${rel}: ${line}")
    endif()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "sdk/ includes core's private headers; use tessera/core.h or "
                      "tessera/core_layer.h instead:\n  ${text}")
endif()
message(STATUS "CheckSdkIncludes.cmake: ${checked} files under sdk/ include no private core header")
