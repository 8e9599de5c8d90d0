# tsr_add_plugin(NAME SOURCES ... [LIBRARIES ...] [FIXTURE])
# Builds libtessera-<NAME>.so. The only project include directory it gets is
# abi/include (and its own folder): a plugin cannot see core or SDK internals.
# FIXTURE plugins go to the fixtures folder, where discovery never looks.
function(tsr_add_plugin name)
  cmake_parse_arguments(P "FIXTURE;NO_INSTALL" "OUTPUT_NAME" "SOURCES;LIBRARIES;OBJECTS" ${ARGN})
  add_library(tessera-${name} MODULE ${P_SOURCES})
  if(P_OBJECTS)
    target_sources(tessera-${name} PRIVATE ${P_OBJECTS})
  endif()
  target_link_libraries(tessera-${name} PRIVATE tessera_abi ${P_LIBRARIES})
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
    install(TARGETS tessera-${name} LIBRARY DESTINATION ${TSR_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
