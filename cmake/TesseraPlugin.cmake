# tsr_add_plugin(NAME SOURCES ... [LIBRARIES ...] [OBJECTS ...] [OUTPUT_NAME n]
#                [FIXTURE] [NO_INSTALL])
# Builds libtessera-<NAME>.so as every plugin must be built: a MODULE with
# hidden visibility (its one export is tsr_plugin_entry, marked
# TSR_ABI_EXPORT), linked with --no-undefined so that a missing symbol fails
# the build rather than the load, named so that discovery finds it. The only
# project include directory it gets is the ABI's: a plugin cannot see core or
# SDK internals. Installed into the plugin folder unless NO_INSTALL; FIXTURE
# plugins (Tessera's own tests) go to the fixtures folder, where discovery
# never looks. The installed package (find_package(Tessera)) provides this
# function too, for plugins built out of tree.
function(tsr_add_plugin name)
  cmake_parse_arguments(P "FIXTURE;NO_INSTALL" "OUTPUT_NAME" "SOURCES;LIBRARIES;OBJECTS" ${ARGN})
  add_library(tessera-${name} MODULE ${P_SOURCES})
  if(P_OBJECTS)
    target_sources(tessera-${name} PRIVATE ${P_OBJECTS})
  endif()
  if(TARGET tessera_abi)
    # In the Tessera tree every plugin may use the kit: the CPU-kernel
    # library (plugins/cpu), which plugins and fixtures take in, does.
    target_link_libraries(tessera-${name} PRIVATE tessera_abi tessera_plugin_kit ${P_LIBRARIES})
  else()
    target_link_libraries(tessera-${name} PRIVATE Tessera::tessera_abi ${P_LIBRARIES})
  endif()
  set_target_properties(tessera-${name} PROPERTIES
    C_VISIBILITY_PRESET hidden
    PREFIX "lib")
  target_link_options(tessera-${name} PRIVATE -Wl,--no-undefined)
  if(P_OUTPUT_NAME)
    set_target_properties(tessera-${name} PROPERTIES OUTPUT_NAME ${P_OUTPUT_NAME})
  endif()
  if(P_FIXTURE)
    set_target_properties(tessera-${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TSR_FIXTURE_DIR})
  elseif(NOT P_NO_INSTALL)
    if(NOT TSR_PLUGIN_INSTALL_DIR)
      include(GNUInstallDirs)
      set(TSR_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/tessera)
    endif()
    install(TARGETS tessera-${name} LIBRARY DESTINATION ${TSR_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
