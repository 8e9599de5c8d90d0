# Issue 8: safetensors, checkpoints and DLPack (included by
# tsr_sdk_tests_define in sdk/tests/CMakeLists.txt).
tsr_sdk_device_test(test_io SOURCES test_io.c)

# Python interop: a file written by Tessera loads in Python's safetensors,
# one written by safetensors.torch loads in Tessera. Needs torch and
# safetensors: scripts/pyinterop.sh makes a venv with them; without it the
# test reports SKIPPED (exit 77).
add_executable(io_interop_driver ${TSR_SDK_TESTS_DIR}/io_interop_driver.c)
target_link_libraries(io_interop_driver PRIVATE tessera m)
target_compile_definitions(io_interop_driver PRIVATE
  TSR_TEST_REF_PATH="$<TARGET_FILE:tessera-ref>")
add_dependencies(io_interop_driver tessera-ref)
find_program(TSR_PYTHON3 python3)
if(TSR_PYTHON3)
  add_test(NAME io_python_interop
           COMMAND ${TSR_PYTHON3} ${TSR_SDK_TESTS_DIR}/io_interop.py
                   $<TARGET_FILE:io_interop_driver>)
  set_tests_properties(io_python_interop PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# Corrupt, truncated, oversized and hostile files are part of these tests.
foreach(_tsr_hostile test_io_ref test_io_onednn)
  if(TEST ${_tsr_hostile})
    set_property(TEST ${_tsr_hostile} APPEND PROPERTY LABELS hostile)
  endif()
endforeach()

# NumPy .npy and .npz (the test writes deflated archives with zlib).
find_package(ZLIB REQUIRED)
tsr_sdk_device_test(test_npy SOURCES test_npy.c)
foreach(_tsr_npy_test test_npy_ref test_npy_onednn)
  if(TARGET ${_tsr_npy_test})
    target_link_libraries(${_tsr_npy_test} PRIVATE ZLIB::ZLIB)
    set_property(TEST ${_tsr_npy_test} APPEND PROPERTY LABELS hostile)
  endif()
endforeach()
