# Hostile plugin candidates in a plugin folder: a copy of a real plugin cut
# to 20 KB (dlopen used to die with SIGBUS on it), a FIFO (dlopen used to
# block on it forever), a text file, a folder, and an ELF file that is not a
# shared object, a symlink loop. tsr-info must list each as rejected with its reason, load
# the real plugin beside them, and exit 0. For ctest (with a timeout):
#
#   cmake -DTOOL=tsr-info -DPLUGIN=libtessera-ref.so -DDIR=scratch -P tests_hostile_candidates.cmake
cmake_minimum_required(VERSION 3.20)
foreach(var TOOL PLUGIN DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "tests_hostile_candidates.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR} ${DIR}/libtessera-folder.so)
file(READ ${PLUGIN} head LIMIT 20480 HEX)
string(REGEX REPLACE "(..)" "\\\\x\\1" escaped "${head}")
execute_process(COMMAND printf "${escaped}" OUTPUT_FILE ${DIR}/libtessera-cut.so RESULT_VARIABLE rc)
file(SIZE ${DIR}/libtessera-cut.so cut_size)
if(NOT rc EQUAL 0 OR NOT cut_size EQUAL 20480)
  message(FATAL_ERROR "could not write the truncated copy (${cut_size} bytes)")
endif()
execute_process(COMMAND mkfifo ${DIR}/libtessera-fifo.so RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mkfifo failed")
endif()
string(REPEAT "just text, not a library\n" 8 text)
file(WRITE ${DIR}/libtessera-text.so "${text}")
file(CREATE_LINK libtessera-loop-b.so ${DIR}/libtessera-loop-a.so SYMBOLIC)
file(CREATE_LINK libtessera-loop-a.so ${DIR}/libtessera-loop-b.so SYMBOLIC)
file(COPY_FILE ${TOOL} ${DIR}/libtessera-program.so)  # an ELF executable (ET_EXEC or PIE)
file(COPY_FILE ${PLUGIN} ${DIR}/libtessera-zzz.so)
execute_process(COMMAND ${TOOL} --explicit-only --plugin ${DIR} TIMEOUT 60
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE ${DIR})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tsr-info exited '${rc}':\n${out}${err}")
endif()
foreach(expect "libtessera-cut.so\n[^\n]*a truncated shared object: segment"
               "libtessera-fifo.so\n[^\n]*not a shared library: a FIFO"
               "libtessera-text.so\n[^\n]*no ELF magic"
               "libtessera-folder.so\n[^\n]*not a shared library: a folder"
               "libtessera-loop-a.so\n[^\n]*a symlink loop"
               "\n  ref:0")
  if(NOT out MATCHES "${expect}")
    message(FATAL_ERROR "tsr-info's report lacks '${expect}':\n${out}")
  endif()
endforeach()
message(STATUS "every hostile candidate rejected with its reason; the real plugin loaded")
