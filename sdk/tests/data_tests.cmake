# Issue 8, data: the IDX reader, callback datasets and the batch loader.
# (Included inside tsr_sdk_tests_define, at the top-level directory.)
# The test writes its own IDX files, gzip ones with zlib; find_package's
# imported target is local to sdk/, so it is looked up again here.
find_package(ZLIB REQUIRED)
tsr_sdk_device_test(test_data SOURCES test_data.c)
foreach(_tsr_data_test test_data_ref test_data_onednn)
  if(TARGET ${_tsr_data_test})
    target_link_libraries(${_tsr_data_test} PRIVATE ZLIB::ZLIB)
    set_tests_properties(${_tsr_data_test} PROPERTIES TIMEOUT 120)
  endif()
endforeach()

# Corrupt, truncated, oversized and hostile files are part of these tests.
foreach(_tsr_hostile test_data_ref test_data_onednn)
  if(TEST ${_tsr_hostile})
    set_property(TEST ${_tsr_hostile} APPEND PROPERTY LABELS hostile)
  endif()
endforeach()

# Datasets of several fields from tensors, and the loader's transforms.
tsr_sdk_device_test(test_datasets_more SOURCES test_datasets_more.c)

# The loader's worker threads: the same batches for any count, destroy
# mid-epoch, a failure reaching the caller at its batch.
tsr_sdk_device_test(test_loader_workers SOURCES test_loader_workers.c)
# Run by .ci/run's ThreadSanitizer stage too.
if(TEST test_loader_workers_ref)
  set_property(TEST test_loader_workers_ref APPEND PROPERTY LABELS concurrency)
endif()
