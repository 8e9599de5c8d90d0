# Every file the documentation quotes is quoted exactly, so the code a reader
# copies is the code that is built and tested. For ctest:
#
#   cmake -DROOT=source-dir -P CheckDocQuotes.cmake
#
# Scans README.md and docs/*.md for a marker line immediately before a fenced
# code block:
#
#   <!-- quote: examples/five_op_plugin/five_op_plugin.c -->
#   ```c
#   ...the file, byte for byte...
#   ```
#
# The path is relative to ROOT. Fails when a block differs from its file
# (naming the first line that differs), when a named file does not exist,
# when a marker is not followed by a fence or its block is not closed, and
# when no document has a marker at all.
cmake_minimum_required(VERSION 3.20)

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "CheckDocQuotes.cmake: ROOT is not set")
endif()

file(GLOB docs ${ROOT}/docs/*.md)
list(PREPEND docs ${ROOT}/README.md)

# The 1-based line of |doc| at which character |offset| lies.
function(line_of doc offset out_line)
  string(SUBSTRING "${doc}" 0 ${offset} before)
  string(REGEX REPLACE "[^\n]" "" newlines "${before}")
  string(LENGTH "${newlines}" count)
  math(EXPR line "${count} + 1")
  set(${out_line} ${line} PARENT_SCOPE)
endfunction()

# Sets |out_message| to where |quoted| and |source| first differ: a line of
# each, or which of the two ends first.
function(first_difference quoted source out_message)
  set(line 1)
  while(TRUE)
    if(quoted STREQUAL "")
      set(${out_message} "the quote ends before line ${line} of the file" PARENT_SCOPE)
      return()
    endif()
    if(source STREQUAL "")
      set(${out_message} "the file ends before line ${line} of the quote" PARENT_SCOPE)
      return()
    endif()
    string(FIND "${quoted}" "\n" end_quoted)
    string(FIND "${source}" "\n" end_source)
    set(line_quoted "${quoted}")
    set(line_source "${source}")
    if(NOT end_quoted EQUAL -1)
      string(SUBSTRING "${quoted}" 0 ${end_quoted} line_quoted)
    endif()
    if(NOT end_source EQUAL -1)
      string(SUBSTRING "${source}" 0 ${end_source} line_source)
    endif()
    if(line_quoted STREQUAL line_source AND NOT end_quoted EQUAL end_source
       AND (end_quoted EQUAL -1 OR end_source EQUAL -1))
      set(${out_message} "line ${line} of one of them ends without a newline" PARENT_SCOPE)
      return()
    endif()
    if(NOT line_quoted STREQUAL line_source)
      set(${out_message}
          "the first difference is on line ${line}:\n  quoted: ${line_quoted}\n  file:   ${line_source}"
          PARENT_SCOPE)
      return()
    endif()
    math(EXPR end_quoted "${end_quoted} + 1")
    math(EXPR end_source "${end_source} + 1")
    string(SUBSTRING "${quoted}" ${end_quoted} -1 quoted)
    string(SUBSTRING "${source}" ${end_source} -1 source)
    math(EXPR line "${line} + 1")
  endwhile()
endfunction()

set(marker_open "<!-- quote: ")
set(markers 0)
set(failures "")
foreach(doc_path ${docs})
  file(RELATIVE_PATH doc_name ${ROOT} ${doc_path})
  file(READ ${doc_path} doc)
  set(offset 0)  # of |rest| in |doc|
  set(rest "${doc}")
  while(TRUE)
    string(FIND "${rest}" "${marker_open}" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR marker_at "${offset} + ${at}")
    # Continue after this occurrence whatever happens to it.
    math(EXPR skip "${at} + 1")
    string(SUBSTRING "${rest}" ${skip} -1 rest)
    math(EXPR offset "${offset} + ${skip}")
    # A marker is a whole line: at the start of the document or of a line.
    if(marker_at GREATER 0)
      math(EXPR previous "${marker_at} - 1")
      string(SUBSTRING "${doc}" ${previous} 1 char)
      if(NOT char STREQUAL "\n")
        continue()
      endif()
    endif()
    line_of("${doc}" ${marker_at} line)
    string(SUBSTRING "${doc}" ${marker_at} -1 tail)
    if(NOT tail MATCHES "^<!-- quote: ([^ \n]+) -->\n")
      string(APPEND failures "${doc_name}:${line}: a quote marker must read "
                             "\"<!-- quote: PATH -->\" on a line of its own\n")
      continue()
    endif()
    set(path "${CMAKE_MATCH_1}")
    string(LENGTH "${CMAKE_MATCH_0}" marker_length)
    string(SUBSTRING "${tail}" ${marker_length} -1 tail)
    math(EXPR markers "${markers} + 1")
    # The fence: three or more backticks and an optional info string.
    if(NOT tail MATCHES "^(```+)[^`\n]*\n")
      string(APPEND failures "${doc_name}:${line}: the quote of ${path} is not followed by a "
                             "fenced code block on the next line\n")
      continue()
    endif()
    set(fence "${CMAKE_MATCH_1}")
    string(LENGTH "${CMAKE_MATCH_0}" open_length)
    string(SUBSTRING "${tail}" ${open_length} -1 tail)
    # The closing fence is a line of the same backticks; the block's text is
    # everything before it, its last newline included.
    if(tail MATCHES "^${fence}(\n|$)")
      set(quoted "")
    else()
      string(FIND "${tail}" "\n${fence}\n" close)
      if(close EQUAL -1)
        string(FIND "${tail}" "\n${fence}" close REVERSE)
        string(LENGTH "${tail}" tail_length)
        string(LENGTH "\n${fence}" fence_length)
        math(EXPR expected "${tail_length} - ${fence_length}")
        if(close EQUAL -1 OR NOT close EQUAL expected)
          string(APPEND failures "${doc_name}:${line}: the block quoting ${path} is not closed\n")
          continue()
        endif()
      endif()
      math(EXPR close "${close} + 1")
      string(SUBSTRING "${tail}" 0 ${close} quoted)
    endif()
    if(NOT EXISTS ${ROOT}/${path} OR IS_DIRECTORY ${ROOT}/${path})
      string(APPEND failures "${doc_name}:${line}: quotes ${path}, which does not exist\n")
      continue()
    endif()
    file(READ ${ROOT}/${path} source)
    if(NOT quoted STREQUAL source)
      first_difference("${quoted}" "${source}" difference)
      string(APPEND failures "${doc_name}:${line}: the block differs from ${path}, so paste "
                             "the file in again; ${difference}\n")
      continue()
    endif()
    message(STATUS "${doc_name}:${line}: quotes ${path} exactly")
  endwhile()
endforeach()

if(markers EQUAL 0)
  message(FATAL_ERROR "no \"${marker_open}PATH -->\" marker in README.md or docs/*.md: "
                      "the check checks nothing (is ROOT ${ROOT} right?)")
endif()
if(NOT failures STREQUAL "")
  message(FATAL_ERROR "${failures}")
endif()
message(STATUS "${markers} quoted file(s), each exact")
