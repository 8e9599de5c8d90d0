# The training loop of examples/mlp.c stays at most MAX_RATIO (2.5) times the
# lines of the same loop in PyTorch, examples/mlp_torch.py (issue 29,
# "Measured"). For ctest:
#
#   cmake -DROOT=source-dir [-DCLANG_FORMAT=clang-format] [-DMAX_RATIO=2.5]
#         -P CheckLoopRatio.cmake
#
# The loops are the lines between the marker lines `// loop-begin` and
# `// loop-end` (C) and `# loop-begin` and `# loop-end` (Python). The C file
# is counted after clang-format with the repository's .clang-format, the
# Python file as written; blank lines and lines holding only a comment (`//`
# in C, `#` in Python) are not counted. docs/sdk.md must show both loops as
# the files hold them (less the loop's own indentation: 2 spaces in C, 4 in
# Python) and state the counts as "N lines of C against M of Python".
# Without clang-format the documentation check still runs, then the script
# prints SKIPPED (ctest's SKIP_REGULAR_EXPRESSION) and passes.
cmake_minimum_required(VERSION 3.20)

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "CheckLoopRatio.cmake: ROOT is not set")
endif()
if(NOT DEFINED MAX_RATIO)
  set(MAX_RATIO 2.5)
endif()
set(c_file ${ROOT}/examples/mlp.c)
set(py_file ${ROOT}/examples/mlp_torch.py)
set(doc_file ${ROOT}/docs/sdk.md)

# The text between the line holding |begin| and the line holding |end|
# (whole lines, each ending in a newline).
function(loop_region text begin end what out_region)
  string(FIND "${text}" "${begin}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: no '${begin}' marker")
  endif()
  string(SUBSTRING "${text}" ${at} -1 rest)
  string(FIND "${rest}" "\n" eol)
  math(EXPR eol "${eol} + 1")
  string(SUBSTRING "${rest}" ${eol} -1 rest)
  string(FIND "${rest}" "${end}" stop)
  if(stop EQUAL -1)
    message(FATAL_ERROR "${what}: no '${end}' marker after '${begin}'")
  endif()
  string(SUBSTRING "${rest}" 0 ${stop} region)
  # Drop the end marker's own indentation: the region ends at a newline.
  string(FIND "${region}" "\n" last_eol REVERSE)
  math(EXPR keep "${last_eol} + 1")
  string(SUBSTRING "${region}" 0 ${keep} region)
  set(${out_region} "${region}" PARENT_SCOPE)
endfunction()

# The lines of |region| that are neither blank nor only a comment starting
# with |comment|.
function(count_code region comment out_count)
  # Characters that CMake's lists treat specially become placeholders.
  string(REPLACE "\\" "<bs>" region "${region}")
  string(REPLACE ";" "<semi>" region "${region}")
  string(REPLACE "[" "<lb>" region "${region}")
  string(REPLACE "]" "<rb>" region "${region}")
  string(REPLACE "\n" ";" lines "${region}")
  set(count 0)
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line STREQUAL "")
      continue()
    endif()
    string(FIND "${line}" "${comment}" where)
    if(where EQUAL 0)
      continue()
    endif()
    math(EXPR count "${count} + 1")
  endforeach()
  set(${out_count} ${count} PARENT_SCOPE)
endfunction()

# |region| with |indent| removed from the start of every line.
function(dedent region indent out_text)
  string(REPLACE "\n${indent}" "\n" text "\n${region}")
  string(SUBSTRING "${text}" 1 -1 text)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

file(READ ${c_file} c_source)
file(READ ${py_file} py_source)
file(READ ${doc_file} doc)
loop_region("${c_source}" "// loop-begin" "// loop-end" examples/mlp.c c_region)
loop_region("${py_source}" "# loop-begin" "# loop-end" examples/mlp_torch.py py_region)

# The documentation shows the loops as the files hold them.
dedent("${c_region}" "  " c_shown)
dedent("${py_region}" "    " py_shown)
string(FIND "${doc}" "```c\n${c_shown}```" c_at)
if(c_at EQUAL -1)
  message(FATAL_ERROR "docs/sdk.md does not show the loop of examples/mlp.c as the file has it "
                      "(a ```c block of the lines between the markers, less 2 spaces):\n${c_shown}")
endif()
string(FIND "${doc}" "```python\n${py_shown}```" py_at)
if(py_at EQUAL -1)
  message(FATAL_ERROR "docs/sdk.md does not show the loop of examples/mlp_torch.py as the file "
                      "has it (a ```python block, less 4 spaces):\n${py_shown}")
endif()

if(NOT CLANG_FORMAT)
  message("docs/sdk.md shows both loops; clang-format not found, the count is skipped")
  message("SKIPPED: clang-format not found (scripts/deps.sh installs it)")
  return()
endif()
execute_process(COMMAND ${CLANG_FORMAT} --style=file:${ROOT}/.clang-format ${c_file}
                RESULT_VARIABLE rc OUTPUT_VARIABLE c_formatted ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang-format failed on examples/mlp.c: ${err}")
endif()
loop_region("${c_formatted}" "// loop-begin" "// loop-end" "examples/mlp.c after clang-format"
            c_formatted_region)
count_code("${c_formatted_region}" "//" c_lines)
count_code("${py_region}" "#" py_lines)
if(py_lines EQUAL 0)
  message(FATAL_ERROR "examples/mlp_torch.py: the loop has no lines")
endif()

# ratio = c / py, compared as integers in hundredths.
math(EXPR ratio_x100 "${c_lines} * 100 / ${py_lines}")
math(EXPR ratio_int "${ratio_x100} / 100")
math(EXPR ratio_frac "${ratio_x100} % 100")
if(ratio_frac LESS 10)
  set(ratio_frac "0${ratio_frac}")
endif()
string(REPLACE "." ";" max_parts "${MAX_RATIO}")
list(GET max_parts 0 max_int)
list(LENGTH max_parts max_count)
set(max_frac 0)
if(max_count GREATER 1)
  list(GET max_parts 1 max_frac)
  string(SUBSTRING "${max_frac}00" 0 2 max_frac)
endif()
math(EXPR max_x100 "${max_int} * 100 + ${max_frac}")
message("training loop: ${c_lines} lines of C (after clang-format), ${py_lines} of Python: "
        "ratio ${ratio_int}.${ratio_frac}, at most ${MAX_RATIO}")
math(EXPR c_x100 "${c_lines} * 100")
math(EXPR limit_x100 "${py_lines} * ${max_x100}")
if(c_x100 GREATER limit_x100)
  message(FATAL_ERROR "examples/mlp.c's loop is ${c_lines} lines, above ${MAX_RATIO} x ${py_lines}")
endif()

string(FIND "${doc}" "${c_lines} lines of C against ${py_lines} of Python" stated)
if(stated EQUAL -1)
  message(FATAL_ERROR "docs/sdk.md does not state the counts as '${c_lines} lines of C against "
                      "${py_lines} of Python'")
endif()
