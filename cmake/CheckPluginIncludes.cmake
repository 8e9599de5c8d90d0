# cmake -DROOT=<source dir> -P CheckPluginIncludes.cmake
# Fails when a plugin source includes anything of the core or the SDK: a
# plugin sees abi/include and its own folder only (DESIGN.md section 1).
# Plugins that compile the CPU-kernel library in also see its header
# (plugins/cpu/include/tsr_cpu/cpu_kernels.h).
file(GLOB_RECURSE sources "${ROOT}/plugins/*.c" "${ROOT}/plugins/*.h"
     "${ROOT}/conformance/fixtures/*.c" "${ROOT}/conformance/fixtures/*.h")
# A plugin's tests/ folder is not the plugin: its tests may drive the plugin
# through the SDK like any application.
list(FILTER sources EXCLUDE REGEX "/plugins/[^/]+/tests/")
set(bad "")
foreach(source IN LISTS sources)
  file(STRINGS "${source}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
  foreach(line IN LISTS lines)
    if(line MATCHES "tessera/tessera\\.h" OR line MATCHES "\\.\\./\\.\\./(core|sdk)/" OR
       line MATCHES "[\"<](core|sdk)/" OR line MATCHES "runtime\\.h" OR line MATCHES "plan_cache\\.h")
      string(APPEND bad "${source}: ${line}\n")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "plugins include core or SDK headers:\n${bad}")
endif()
list(LENGTH sources n)
message(STATUS "checked ${n} plugin sources: only abi/ and their own headers")
