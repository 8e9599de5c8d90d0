# tsr_add_test(<target> SOURCES src... [TEST_NAME name] [LIBRARIES ...]
#              [INCLUDES ...] [DEFINITIONS ...] [DEPENDS target...] [LABELS ...]
#              [ENVIRONMENT ...] [ARGS ...] [TIMEOUT seconds])
# The one way a test is built and registered: a CMocka executable <target>
# linked with CMocka and pthreads, registered with ctest as TEST_NAME
# (default <target>) running it with ARGS. Exit status 77 counts as skipped:
# a test that cannot run here prints why and exits 77, and is never counted
# as passed. TIMEOUT defaults to 120 seconds.
function(tsr_add_test target)
  cmake_parse_arguments(T "" "TEST_NAME;TIMEOUT"
                        "SOURCES;LIBRARIES;INCLUDES;DEFINITIONS;DEPENDS;LABELS;ENVIRONMENT;ARGS"
                        ${ARGN})
  if(NOT T_SOURCES)
    message(FATAL_ERROR "tsr_add_test(${target}): no SOURCES")
  endif()
  add_executable(${target} ${T_SOURCES})
  target_link_libraries(${target} PRIVATE ${T_LIBRARIES} PkgConfig::CMOCKA Threads::Threads)
  if(T_INCLUDES)
    target_include_directories(${target} PRIVATE ${T_INCLUDES})
  endif()
  if(T_DEFINITIONS)
    target_compile_definitions(${target} PRIVATE ${T_DEFINITIONS})
  endif()
  if(T_DEPENDS)
    add_dependencies(${target} ${T_DEPENDS})
  endif()
  if(NOT T_TEST_NAME)
    set(T_TEST_NAME ${target})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${T_TEST_NAME} COMMAND ${target} ${T_ARGS})
  set_tests_properties(${T_TEST_NAME} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)
    set_tests_properties(${T_TEST_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
  if(T_ENVIRONMENT)
    set_tests_properties(${T_TEST_NAME} PROPERTIES ENVIRONMENT "${T_ENVIRONMENT}")
  endif()
endfunction()
