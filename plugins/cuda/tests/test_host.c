// The logic tests' host table (test_host.h).
#include "test_host.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static char g_message[2048];

static void test_log(void *ctx, tsr_log_level_t level, const char *message) {
  (void)ctx;
  (void)level;
  (void)message;
}

static tsr_status test_error_set(void *ctx, tsr_status code, const char *format, ...) {
  (void)ctx;
  va_list args;
  va_start(args, format);
  vsnprintf(g_message, sizeof(g_message), format, args);
  va_end(args);
  return code;
}

static void *test_mem_alloc(void *ctx, size_t bytes, size_t alignment) {
  (void)ctx;
  return aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

static void test_mem_free(void *ctx, void *ptr) {
  (void)ctx;
  free(ptr);
}

static tsr_status test_parallel_for(void *ctx, int64_t count, int64_t grain, tsr_parallel_fn fn,
                                    void *arg) {
  (void)ctx;
  (void)grain;
  if (count > 0)
    fn(arg, 0, count, 0);
  return TSR_OK;
}

static int32_t test_thread_count(void *ctx) {
  (void)ctx;
  return 1;
}

// Designated, so that entries appended to the table later stay NULL here.
static const tsr_host_api g_host = {
    .struct_size = sizeof(tsr_host_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .ctx = NULL,
    .log = test_log,
    .error_set = test_error_set,
    .mem_alloc = test_mem_alloc,
    .mem_free = test_mem_free,
    .parallel_for = test_parallel_for,
    .thread_count = test_thread_count,
};

const tsr_host_api *tsr_cuda_test_host(void) {
  return &g_host;
}

const char *tsr_cuda_test_message(void) {
  return g_message;
}

void tsr_cuda_test_message_clear(void) {
  g_message[0] = '\0';
}
