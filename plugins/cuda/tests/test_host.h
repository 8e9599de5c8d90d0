// A host table for the CUDA plugin's logic tests: error_set keeps the last
// message so a test can read it.
#ifndef TESSERA_PLUGINS_CUDA_TESTS_TEST_HOST_H_
#define TESSERA_PLUGINS_CUDA_TESTS_TEST_HOST_H_

#include "tessera/abi.h"

// The host table; static storage. Not thread-safe.
const tsr_host_api *tsr_cuda_test_host(void);
// The last message error_set received ("" after a clear). Not thread-safe.
const char *tsr_cuda_test_message(void);
void tsr_cuda_test_message_clear(void);

#endif  // TESSERA_PLUGINS_CUDA_TESTS_TEST_HOST_H_
