// ref's caching allocator: alignment, reuse without system allocation,
// statistics, trim, zero-byte and huge requests, double frees.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "test_host.h"
#include "buffer.h"
#include "test_util.h"

static tsr_allocator_stats stats_get(void) {
  tsr_allocator_stats s = {.struct_size = sizeof(s)};
  assert_int_equal(tt_api->allocator_stats_get(0, &s), TSR_OK);
  return s;
}

static void test_allocator_hands_out_64_byte_aligned_writable_buffers(void **state) {
  (void)state;
  const uint64_t sizes[] = {1, 63, 64, 65, 1000, 4096, 100000, 3000000};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    tsr_plugin_buffer *b = NULL;
    assert_int_equal(tt_api->buffer_alloc(0, sizes[i], NULL, &b), TSR_OK);
    void *p = NULL;
    assert_int_equal(tt_api->buffer_host_ptr_get(b, &p), TSR_OK);
    assert_int_equal((uintptr_t)p % 64, 0);
    memset(p, 0xab, (size_t)sizes[i]);
    assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
  }
}

static void test_allocator_reuses_cached_blocks_without_reaching_the_system(void **state) {
  (void)state;
  const uint64_t sizes[] = {16, 1000, 1024, 70000, 1 << 20};
  tsr_plugin_buffer *warm[5];
  for (int i = 0; i < 5; ++i) assert_int_equal(tt_api->buffer_alloc(0, sizes[i], NULL, &warm[i]), TSR_OK);
  for (int i = 0; i < 5; ++i) assert_int_equal(tt_api->buffer_free(warm[i], NULL), TSR_OK);
  tsr_allocator_stats before = stats_get();
  uint64_t host_allocs = tsr_test_host_mem_alloc_count();
  for (int round = 0; round < 10000; ++round) {
    tsr_plugin_buffer *b = NULL;
    // Sizes within each warm block's class come back from its cache.
    assert_int_equal(tt_api->buffer_alloc(0, sizes[round % 5] - (uint64_t)(round % 3), NULL, &b),
                     TSR_OK);
    assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
  }
  tsr_allocator_stats after = stats_get();
  assert_int_equal(tsr_test_host_mem_alloc_count(), host_allocs);
  assert_int_equal(after.system_alloc_count, before.system_alloc_count);
  assert_int_equal(after.alloc_count - before.alloc_count, 10000);
  assert_int_equal(after.free_count - before.free_count, 10000);
}

static void test_allocator_stats_track_use_peak_and_reservation_and_trim_returns_the_cache(
    void **state) {
  (void)state;
  assert_int_equal(tt_api->allocator_trim(0), TSR_OK);
  tsr_allocator_stats s0 = stats_get();
  tsr_plugin_buffer *a = NULL, *b = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 5000, NULL, &a), TSR_OK);
  assert_int_equal(tt_api->buffer_alloc(0, 300000, NULL, &b), TSR_OK);
  tsr_allocator_stats s1 = stats_get();
  assert_true(s1.bytes_in_use - s0.bytes_in_use >= 305000);
  assert_true(s1.bytes_reserved >= s1.bytes_in_use);
  assert_true(s1.peak_bytes_in_use >= s1.bytes_in_use);
  assert_int_equal(s1.system_alloc_count - s0.system_alloc_count, 2);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
  tsr_allocator_stats s2 = stats_get();
  assert_true(s2.bytes_in_use < s1.bytes_in_use);
  assert_int_equal(s2.bytes_reserved, s1.bytes_reserved);  // b's block is cached
  assert_true(s2.peak_bytes_in_use >= s1.bytes_in_use);
  assert_int_equal(tt_api->allocator_trim(0), TSR_OK);
  tsr_allocator_stats s3 = stats_get();
  assert_true(s3.bytes_reserved < s2.bytes_reserved);
  assert_int_equal(s3.bytes_in_use, s2.bytes_in_use);
  // After trim the class is empty again: the next allocation reaches the system.
  assert_int_equal(tt_api->buffer_alloc(0, 300000, NULL, &b), TSR_OK);
  assert_int_equal(stats_get().system_alloc_count, s3.system_alloc_count + 1);
  assert_int_equal(tt_api->buffer_free(a, NULL), TSR_OK);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
  // An older caller's shorter struct gets only its fields.
  struct { size_t struct_size; uint64_t bytes_in_use; uint64_t canary; } old = {16, 0, 77};
  assert_int_equal(tt_api->allocator_stats_get(0, (tsr_allocator_stats *)&old), TSR_OK);
  assert_int_equal(old.canary, 77);
  assert_int_equal(old.struct_size, 16);
}

static void test_allocator_gives_zero_bytes_a_real_handle(void **state) {
  (void)state;
  tsr_plugin_buffer *a = NULL, *b = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 0, NULL, &a), TSR_OK);
  assert_int_equal(tt_api->buffer_alloc(0, 0, NULL, &b), TSR_OK);
  assert_non_null(a);
  assert_ptr_not_equal(a, b);
  void *p = NULL;
  assert_int_equal(tt_api->buffer_host_ptr_get(a, &p), TSR_OK);
  assert_non_null(p);
  assert_int_equal(tt_api->buffer_free(a, NULL), TSR_OK);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
}

static void test_allocator_refuses_a_huge_request_with_out_of_memory(void **state) {
  (void)state;
  tsr_plugin_buffer *b = (tsr_plugin_buffer *)1;
  assert_int_equal(tt_api->buffer_alloc(0, 1ull << 62, NULL, &b), TSR_OUT_OF_MEMORY);
  assert_null(b);
  assert_non_null(strstr(tsr_test_host_error_get(), "4611686018427387904 bytes"));
  assert_int_equal(tt_api->buffer_alloc(0, UINT64_MAX, NULL, &b), TSR_OUT_OF_MEMORY);
  // The system saying no, even after ref gave its cache back and retried.
  tsr_test_host_mem_alloc_fail(2);
  assert_int_equal(tt_api->buffer_alloc(0, 12345678, NULL, &b), TSR_OUT_OF_MEMORY);
  assert_non_null(strstr(tsr_test_host_error_get(), "buffer_alloc: the system refused"));
  assert_int_equal(tt_api->buffer_alloc(0, 12345678, NULL, &b), TSR_OK);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
}

static void test_allocator_refuses_a_double_free_and_a_bad_device(void **state) {
  (void)state;
  tsr_plugin_buffer *b = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 100, NULL, &b), TSR_OK);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "freed twice"));
  assert_int_equal(tt_api->buffer_free(NULL, NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->buffer_alloc(1, 100, NULL, &b), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "device 1"));
  assert_int_equal(tt_api->buffer_alloc(0, 100, NULL, NULL), TSR_INVALID_ARGUMENT);
  tsr_allocator_stats s = {.struct_size = sizeof(s)};
  assert_int_equal(tt_api->allocator_stats_get(2, &s), TSR_INVALID_ARGUMENT);
}

static void *alloc_free_loop(void *arg) {
  (void)arg;
  for (int i = 0; i < 20000; ++i) {
    tsr_plugin_buffer *b = NULL;
    if (tt_api->buffer_alloc(0, (uint64_t)(64 + (i % 7) * 1000), NULL, &b) != TSR_OK) return arg;
    ((volatile char *)b->data)[0] = 1;
    if (tt_api->buffer_free(b, NULL) != TSR_OK) return arg;
  }
  return NULL;
}

static void test_allocator_serves_several_threads_at_once(void **state) {
  (void)state;
  tsr_allocator_stats before = stats_get();
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, alloc_free_loop, NULL);
  for (int i = 0; i < 4; ++i) {
    void *result = (void *)1;
    pthread_join(threads[i], &result);
    assert_null(result);
  }
  tsr_allocator_stats after = stats_get();
  assert_int_equal(after.alloc_count - before.alloc_count, 80000);
  assert_int_equal(after.bytes_in_use, before.bytes_in_use);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_allocator_hands_out_64_byte_aligned_writable_buffers),
      cmocka_unit_test(test_allocator_reuses_cached_blocks_without_reaching_the_system),
      cmocka_unit_test(
          test_allocator_stats_track_use_peak_and_reservation_and_trim_returns_the_cache),
      cmocka_unit_test(test_allocator_gives_zero_bytes_a_real_handle),
      cmocka_unit_test(test_allocator_refuses_a_huge_request_with_out_of_memory),
      cmocka_unit_test(test_allocator_refuses_a_double_free_and_a_bad_device),
      cmocka_unit_test(test_allocator_serves_several_threads_at_once),
  };
  return cmocka_run_group_tests_name("allocator", tests, tt_setup_serial, tt_teardown);
}
