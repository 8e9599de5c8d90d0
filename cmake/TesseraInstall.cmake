# Install rules: public headers, libtessera with its exported CMake targets,
# the CMake package (find_package(Tessera)) and the pkg-config file
# (pkg-config tessera). Plugins install themselves through tsr_add_plugin into
# TSR_PLUGIN_INSTALL_DIR; tools install from tools/CMakeLists.txt.
# Included at the end of the top-level CMakeLists, after every target exists.

include(CMakePackageConfigHelpers)

set(TSR_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

# The version a consumer sees in TesseraConfigVersion.cmake and tessera.pc
# comes from project(); the one its code sees comes from tessera/core.h. Refuse to
# configure when they disagree rather than ship a package that lies.
file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/tessera/core.h _tsr_version_lines
     REGEX "^#define TSR_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
set(_tsr_header_version "")
foreach(_part MAJOR MINOR PATCH)
  foreach(_line IN LISTS _tsr_version_lines)
    if(_line MATCHES "^#define TSR_VERSION_${_part} ([0-9]+)$")
      list(APPEND _tsr_header_version ${CMAKE_MATCH_1})
    endif()
  endforeach()
endforeach()
list(JOIN _tsr_header_version "." _tsr_header_version)
if(NOT _tsr_header_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "TesseraInstall: tessera/core.h says version '${_tsr_header_version}' but "
                      "project() says '${PROJECT_VERSION}'; change both together")
endif()

install(FILES
  ${PROJECT_SOURCE_DIR}/abi/include/tessera/abi.h
  ${PROJECT_SOURCE_DIR}/abi/include/tessera/ops.h
  ${PROJECT_SOURCE_DIR}/core/include/tessera/core.h
  ${PROJECT_SOURCE_DIR}/core/include/tessera/engine_cache.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/tessera.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/autograd.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/nn.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/optim.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/data.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/io.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/ops_more.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/print.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/shapes.h
  ${PROJECT_SOURCE_DIR}/sdk/include/tessera/dlpack.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera)

# tessera_abi travels in the export set because tessera links it publicly
# (tessera.h includes abi.h), and because a plugin written outside this tree
# needs exactly that target: Tessera::tessera_abi.
install(TARGETS tessera_abi EXPORT TesseraTargets)

if(TARGET tessera)
  install(TARGETS tessera EXPORT TesseraTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
else()
  message(WARNING "TesseraInstall: no 'tessera' target; libtessera will not be installed")
endif()

install(EXPORT TesseraTargets
  NAMESPACE Tessera::
  FILE TesseraTargets.cmake
  DESTINATION ${TSR_CMAKE_INSTALL_DIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/TesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/TesseraConfig.cmake
  INSTALL_DESTINATION ${TSR_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR TSR_PLUGIN_INSTALL_DIR)
# Before 1.0 a minor release may break the API (semantic versioning's rule
# for 0.x), so only the same major.minor satisfies a request.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/TesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/TesseraConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/TesseraConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/TesseraPlugin.cmake
  DESTINATION ${TSR_CMAKE_INSTALL_DIR})

# tessera.pc is written at install time, not configure time, so that its
# prefix is the one the files really go to, also with `cmake --install
# --prefix DIR`. The template is configured once now for everything but the
# prefix.
# An absolute CMAKE_INSTALL_*DIR (-DCMAKE_INSTALL_LIBDIR=/usr/lib64) is kept
# as given; a relative one hangs off ${prefix}.
foreach(_kind LIBDIR INCLUDEDIR PLUGINDIR)
  if(_kind STREQUAL "PLUGINDIR")
    set(_dir ${TSR_PLUGIN_INSTALL_DIR})
  else()
    set(_dir ${CMAKE_INSTALL_${_kind}})
  endif()
  if(IS_ABSOLUTE "${_dir}")
    set(TSR_PC_${_kind} "${_dir}")
  else()
    set(TSR_PC_${_kind} "\${prefix}/${_dir}")
  endif()
endforeach()
# Left for the install-time pass to fill in.
set(TSR_PC_PREFIX "@TSR_PC_PREFIX@")
configure_file(${CMAKE_CURRENT_LIST_DIR}/tessera.pc.in
               ${PROJECT_BINARY_DIR}/cmake/tessera.pc.in @ONLY)
install(CODE "
  set(TSR_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/cmake/tessera.pc.in\"
                 \"${PROJECT_BINARY_DIR}/cmake/install/tessera.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/cmake/install/tessera.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

if(TSR_BUILD_TESTS AND BUILD_TESTING AND TARGET tessera)
  add_subdirectory(${PROJECT_SOURCE_DIR}/tests/install ${PROJECT_BINARY_DIR}/tests/install)
endif()
