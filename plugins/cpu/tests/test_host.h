// A minimal host table for ref's tests and benchmark: messages kept per
// thread, host memory from posix_memalign (counted), and parallel_for either
// serial or on a small pool of persistent threads.
#ifndef TESSERA_PLUGINS_CPU_TESTS_TEST_HOST_H_
#define TESSERA_PLUGINS_CPU_TESTS_TEST_HOST_H_

#include <stdint.h>

#include "tessera/abi.h"

// Starts a host whose parallel_for runs on |threads| threads (1: serial, in
// the caller) and hands it to ref; returns ref's table. Replaces any earlier
// test host. Not thread-safe.
const tsr_plugin_api *tsr_test_host_start(int32_t threads);
// Stops the pool of the current host. Not thread-safe.
void tsr_test_host_stop(void);
// The host table now in use (static storage).
const tsr_host_api *tsr_test_host_get(void);

// The calling thread's last message from error_set ("" if none), and clears it.
const char *tsr_test_host_error_get(void);
void tsr_test_host_error_clear(void);

// mem_alloc calls so far, and parallel_for calls that ran on more than one
// thread. Thread-safe.
uint64_t tsr_test_host_mem_alloc_count(void);
uint64_t tsr_test_host_parallel_count(void);

// Makes the next |count| mem_alloc calls fail, as a system out of memory
// would. Thread-safe.
void tsr_test_host_mem_alloc_fail(int32_t count);

#endif  // TESSERA_PLUGINS_CPU_TESTS_TEST_HOST_H_
