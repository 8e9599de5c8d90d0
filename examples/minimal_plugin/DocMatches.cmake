# cmake -DDOC=docs/writing-a-plugin.md -DSOURCE=examples/minimal_plugin/minimal_plugin.c
#       [-DSECTION="### 1.3 The code"] -P DocMatches.cmake
# Fails unless the guide quotes SOURCE exactly (the first ```c block after the
# SECTION heading), so the code a reader copies is the code that is built and
# tested.
if(NOT DEFINED SECTION)
  set(SECTION "### 1.3 The code")
endif()
file(READ "${DOC}" doc)
file(READ "${SOURCE}" source)
string(FIND "${doc}" "${SECTION}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: no section \"${SECTION}\"")
endif()
string(SUBSTRING "${doc}" ${start} -1 doc)
string(FIND "${doc}" "```c\n" open)
if(open EQUAL -1)
  message(FATAL_ERROR "${DOC}: no ```c block in section \"${SECTION}\"")
endif()
math(EXPR open "${open} + 5")
string(SUBSTRING "${doc}" ${open} -1 doc)
string(FIND "${doc}" "\n```" close)
math(EXPR close "${close} + 1")
string(SUBSTRING "${doc}" 0 ${close} quoted)
if(NOT quoted STREQUAL source)
  message(FATAL_ERROR "${DOC} section \"${SECTION}\" differs from ${SOURCE}: paste the file into the guide again")
endif()
message(STATUS "the guide quotes ${SOURCE} exactly")
