# Runs tsr-conformance on one plugin and checks its verdict, for ctest.
#
#   cmake -DTOOL=... -DPLUGIN=... -DEXPECT=certified|refused|skipped|not-loaded
#         [-DEXPECT_OP=op -DEXPECT_CHECK=check] [-DBASELINE=plugin.so]
#         [-DEXPECT_MESSAGE=text] [-DREPORT_DIR=dir] [-DFILTER=patterns]
#         [-DMIN_RATIO=r] -P check_verdict.cmake
#
# refused: the report must name EXPECT_OP and EXPECT_CHECK on a refusal line
# whose error/tolerance is at least MIN_RATIO (default 10; a wrong bool, the
# smallest possible error, scores 2), and every other refusal must name
# EXPECT_OP too, or also be a refusal of BASELINE (the same plugin without
# the planted bug), so the fixture is refused for the planted reason and no
# other. not-loaded: exit status 3 and no refusal: a plugin that fails to
# load does not count as refused.
cmake_minimum_required(VERSION 3.20)

foreach(var TOOL PLUGIN EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_verdict.cmake: ${var} is not set")
  endif()
endforeach()

get_filename_component(name ${PLUGIN} NAME_WE)
set(args)
if(DEFINED FILTER)
  list(APPEND args --filter ${FILTER})
endif()
if(DEFINED REPORT_DIR)
  file(MAKE_DIRECTORY ${REPORT_DIR})
  list(APPEND args --report ${REPORT_DIR}/${name}.md --junit ${REPORT_DIR}/${name}.xml)
endif()

function(run_tool plugin out_rc out_text)
  execute_process(COMMAND ${TOOL} --plugin ${plugin} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_text} "${text}${err}" PARENT_SCOPE)
endfunction()

# "refusal: op=X check=Y dtype=Z ratio=R" lines -> list of "X|Y|Z|R".
function(refusals text out)
  string(REGEX MATCHALL "refusal: op=[^\n]*" lines "${text}")
  set(result)
  foreach(line ${lines})
    string(REGEX REPLACE "^refusal: op=(.*) check=(.*) dtype=(.*) ratio=(.*)$" "\\1|\\2|\\3|\\4" item "${line}")
    list(APPEND result "${item}")
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

run_tool(${PLUGIN} rc text ${args})

set(codes_certified 0)
set(codes_refused 1)
set(codes_skipped 2)
set(codes_not-loaded 3)
if(NOT DEFINED codes_${EXPECT})
  message(FATAL_ERROR "check_verdict.cmake: unknown EXPECT '${EXPECT}'")
endif()
if(NOT rc EQUAL ${codes_${EXPECT}})
  message(FATAL_ERROR "${name}: expected '${EXPECT}' (exit ${codes_${EXPECT}}), tsr-conformance exited ${rc}:\n${text}")
endif()

if(DEFINED EXPECT_MESSAGE)
  string(FIND "${text}" "${EXPECT_MESSAGE}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: the report does not say '${EXPECT_MESSAGE}':\n${text}")
  endif()
endif()

if(EXPECT STREQUAL "not-loaded" OR EXPECT STREQUAL "skipped")
  string(FIND "${text}" "REFUSED" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${name}: a plugin that does not run must not be reported as refused:\n${text}")
  endif()
endif()

if(NOT DEFINED MIN_RATIO)
  set(MIN_RATIO 10)
endif()
if(EXPECT STREQUAL "refused")
  refusals("${text}" found)
  set(planted FALSE)
  foreach(item ${found})
    string(REPLACE "|" ";" parts "${item}")
    list(GET parts 0 op)
    list(GET parts 1 check)
    list(GET parts 3 ratio)
    if(op STREQUAL EXPECT_OP AND check STREQUAL EXPECT_CHECK)
      if(ratio STREQUAL "inf" OR ratio GREATER_EQUAL ${MIN_RATIO})
        set(planted TRUE)
      endif()
    endif()
  endforeach()
  if(NOT planted)
    message(FATAL_ERROR "${name}: no refusal names op '${EXPECT_OP}' and check '${EXPECT_CHECK}' with "
                        "error/tolerance >= ${MIN_RATIO}:\n${text}")
  endif()
  if(DEFINED BASELINE)
    set(base_args)
    if(DEFINED FILTER)
      list(APPEND base_args --filter ${FILTER})
    endif()
    run_tool(${BASELINE} base_rc base_text ${base_args})
    refusals("${base_text}" baseline)
    set(baseline_keys)
    foreach(item ${baseline})
      string(REGEX REPLACE "\\|[^|]*$" "" key "${item}")
      list(APPEND baseline_keys "${key}")
    endforeach()
    foreach(item ${found})
      string(REPLACE "|" ";" parts "${item}")
      list(GET parts 0 op)
      string(REGEX REPLACE "\\|[^|]*$" "" key "${item}")
      list(FIND baseline_keys "${key}" known)
      if(NOT op STREQUAL EXPECT_OP AND known EQUAL -1)
        message(FATAL_ERROR "${name}: refused for a reason other than the planted bug (${item}), which "
                            "the baseline ${BASELINE} does not share:\n${text}")
      endif()
    endforeach()
  endif()
endif()
message(STATUS "${name}: ${EXPECT} as expected")
