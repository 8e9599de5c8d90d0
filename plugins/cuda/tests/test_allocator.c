// The caching allocator's bookkeeping over a fake device: size classes,
// stream-ordered reuse, statistics, trim, the cap, and the out-of-memory
// retry with its message.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <string.h>

#include "allocator.h"
#include "test_host.h"

typedef struct fake_marker {
  int done;
  struct fake_marker *next_live;
} fake_marker;

typedef struct fake_device {
  uint64_t capacity;  // bytes the fake device holds
  uint64_t used;
  uintptr_t next_address;
  int reserves;
  int releases;
  int syncs;
  int markers_live;
  fake_marker markers[64];
  int marker_count;
} fake_device;

static tsr_status fake_reserve(void *ctx, uint64_t bytes, void **out_ptr) {
  fake_device *d = ctx;
  if (d->used + bytes > d->capacity)
    return TSR_OUT_OF_MEMORY;
  d->used += bytes;
  d->reserves += 1;
  d->next_address += 1u << 20;
  *out_ptr = (void *)d->next_address;
  return TSR_OK;
}

static void fake_release(void *ctx, void *ptr, uint64_t bytes) {
  fake_device *d = ctx;
  (void)ptr;
  d->used -= bytes;
  d->releases += 1;
}

static void *fake_marker_record(void *ctx, void *stream) {
  fake_device *d = ctx;
  (void)stream;
  fake_marker *m = &d->markers[d->marker_count++];
  m->done = 0;
  d->markers_live += 1;
  return m;
}

static int fake_marker_done(void *ctx, void *marker) {
  (void)ctx;
  return ((fake_marker *)marker)->done;
}

static void fake_marker_release(void *ctx, void *marker) {
  fake_device *d = ctx;
  (void)marker;
  d->markers_live -= 1;
}

static tsr_status fake_sync(void *ctx) {
  fake_device *d = ctx;
  d->syncs += 1;
  for (int i = 0; i < d->marker_count; ++i) d->markers[i].done = 1;
  return TSR_OK;
}

static void complete_all(fake_device *d) {
  for (int i = 0; i < d->marker_count; ++i) d->markers[i].done = 1;
}

static void setup(tsr_cuda_allocator *a, fake_device *d, uint64_t capacity, uint64_t cap) {
  memset(d, 0, sizeof(*d));
  d->capacity = capacity;
  d->next_address = 0x10000000u;
  tsr_cuda_alloc_backend backend = {d,
                                    fake_reserve,
                                    fake_release,
                                    fake_marker_record,
                                    fake_marker_done,
                                    fake_marker_release,
                                    fake_sync};
  tsr_cuda_allocator_init(a, 0, &backend, cap);
  tsr_cuda_test_message_clear();
}

static void *const S = (void *)0x1;
static void *const T = (void *)0x2;
// The ids of S and T as created; a stream made again at S's address gets
// another.
#define ID(stream) ((stream) == S ? 1u : (stream) == T ? 2u : 0u)

static void test_size_classes_waste_at_most_a_quarter(void **state) {
  (void)state;
  uint64_t size = 0;
  int32_t index = -1, last = -1;
  assert_int_equal(tsr_cuda_alloc_class_get(0, &size, &index), TSR_OK);
  assert_int_equal(size, 512);
  assert_int_equal(index, 0);
  assert_int_equal(tsr_cuda_alloc_class_get(513, &size, &index), TSR_OK);
  assert_int_equal(size, 640);
  assert_int_equal(tsr_cuda_alloc_class_get(1024, &size, &index), TSR_OK);
  assert_int_equal(size, 1024);
  assert_int_equal(tsr_cuda_alloc_class_get(1025, &size, &index), TSR_OK);
  assert_int_equal(size, 1280);
  for (uint64_t bytes = 1; bytes < (1ull << 40); bytes = bytes * 3 + 7) {
    assert_int_equal(tsr_cuda_alloc_class_get(bytes, &size, &index), TSR_OK);
    assert_true(size >= bytes);
    assert_true(bytes <= 512 || (double)size <= 1.25 * (double)bytes + 1);
    assert_true(index >= last);
    assert_true(index < TSR_CUDA_ALLOC_CLASS_COUNT);
    last = index;
  }
  assert_int_equal(tsr_cuda_alloc_class_get((1ull << 63) + 1, &size, &index), TSR_OUT_OF_MEMORY);
}

static void test_same_stream_reuses_a_freed_block_at_once(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 30, 0);
  tsr_cuda_block *b1 = NULL, *b2 = NULL;
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 1000, S, ID(S), &b1), TSR_OK);
  assert_int_equal(tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, S, ID(S)), TSR_OK);
  // The marker has not completed, but S orders its own work.
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 900, S, ID(S), &b2), TSR_OK);
  assert_ptr_equal(b1, b2);
  assert_int_equal(d.reserves, 1);
  assert_int_equal(d.markers_live, 0);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, S, ID(S));
  tsr_cuda_allocator_destroy(&a);
  assert_int_equal(d.used, 0);
}

static void test_other_stream_waits_for_the_free_marker(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 30, 0);
  tsr_cuda_block *b1 = NULL, *b2 = NULL, *b3 = NULL;
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4096, S, ID(S), &b1), TSR_OK);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, S, ID(S));
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4096, T, ID(T), &b2), TSR_OK);
  assert_ptr_not_equal(b1, b2);
  assert_int_equal(d.reserves, 2);
  // A NULL-stream request must not take it either while S's work may run.
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4096, NULL, ID(NULL), &b3),
                   TSR_OK);
  assert_ptr_not_equal(b1, b3);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b3, T, ID(T));
  complete_all(&d);
  tsr_cuda_block *b4 = NULL;
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4096, T, ID(T), &b4), TSR_OK);
  assert_true(b4 == b1 || b4 == b3);
  assert_int_equal(d.reserves, 3);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, T, ID(T));
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b4, T, ID(T));
  tsr_cuda_allocator_destroy(&a);
  assert_int_equal(d.used, 0);
}

static void test_a_new_stream_at_a_freed_streams_address_waits_for_its_marker(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 30, 0);
  tsr_cuda_block *b1 = NULL, *b2 = NULL, *b3 = NULL;
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4096, S, 1, &b1), TSR_OK);
  assert_int_equal(tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, S, 1), TSR_OK);
  // Stream 1 is destroyed; stream 7 is created at the same address. Its work
  // is not ordered after stream 1's, so the block is not its yet.
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4096, S, 7, &b2), TSR_OK);
  assert_ptr_not_equal(b1, b2);
  assert_int_equal(d.reserves, 2);
  // Once stream 1's marker has completed, anyone may take it.
  complete_all(&d);
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4096, S, 7, &b3), TSR_OK);
  assert_ptr_equal(b1, b3);
  assert_int_equal(d.reserves, 2);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, S, 7);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b3, S, 7);
  tsr_cuda_allocator_destroy(&a);
  assert_int_equal(d.used, 0);
}

static void test_stream_ids_are_unique_and_never_zero(void **state) {
  (void)state;
  uint64_t previous = tsr_cuda_stream_id_next();
  assert_true(previous != 0);
  for (int i = 0; i < 1000; ++i) {
    uint64_t id = tsr_cuda_stream_id_next();
    assert_true(id > previous);
    previous = id;
  }
}

static void test_free_without_stream_synchronizes_and_serves_any_stream(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 30, 0);
  tsr_cuda_block *b1 = NULL, *b2 = NULL;
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 100, S, ID(S), &b1);
  assert_int_equal(tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, NULL, ID(NULL)), TSR_OK);
  assert_int_equal(d.syncs, 1);
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 100, T, ID(T), &b2), TSR_OK);
  assert_ptr_equal(b1, b2);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, NULL, ID(NULL));
  tsr_cuda_allocator_destroy(&a);
}

static void test_stats_count_use_reservation_and_peak(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 30, 0);
  tsr_cuda_block *b1 = NULL, *b2 = NULL, *b3 = NULL;
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 1024, S, ID(S), &b1);
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 2048, S, ID(S), &b2);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, S, ID(S));
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 1000, S, ID(S), &b3);
  tsr_allocator_stats s;
  memset(&s, 0xff, sizeof(s));
  s.struct_size = sizeof(s);
  tsr_cuda_allocator_stats_get(&a, &s);
  assert_int_equal(s.struct_size, sizeof(s));
  assert_int_equal(s.bytes_in_use, 1024 + 2048);
  assert_int_equal(s.bytes_reserved, 1024 + 2048);
  assert_int_equal(s.peak_bytes_in_use, 1024 + 2048);
  assert_int_equal(s.alloc_count, 3);
  assert_int_equal(s.free_count, 1);
  assert_int_equal(s.system_alloc_count, 2);
  // An older caller's smaller struct gets only its fields.
  tsr_allocator_stats small;
  memset(&small, 0xab, sizeof(small));
  small.struct_size = offsetof(tsr_allocator_stats, bytes_reserved);
  tsr_cuda_allocator_stats_get(&a, &small);
  assert_int_equal(small.bytes_in_use, 1024 + 2048);
  assert_int_equal(small.bytes_reserved, 0xababababababababull);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, S, ID(S));
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b3, S, ID(S));
  tsr_cuda_allocator_destroy(&a);
}

static void test_trim_releases_idle_blocks_and_waits_only_when_asked(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 30, 0);
  tsr_cuda_block *b1 = NULL, *b2 = NULL;
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 1024, S, ID(S), &b1);
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 8192, S, ID(S), &b2);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, S, ID(S));
  d.markers[0].done = 1;
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, S, ID(S));
  uint64_t bytes = 0, blocks = 0;
  tsr_cuda_allocator_cache_get(&a, &bytes, &blocks);
  assert_int_equal(bytes, 1024 + 8192);
  assert_int_equal(blocks, 2);
  assert_int_equal(tsr_cuda_allocator_trim(&a, 0), TSR_OK);
  assert_int_equal(d.releases, 1);
  assert_int_equal(d.syncs, 0);
  tsr_cuda_allocator_cache_get(&a, &bytes, &blocks);
  assert_int_equal(bytes, 8192);
  assert_int_equal(tsr_cuda_allocator_trim(&a, 1), TSR_OK);
  assert_int_equal(d.releases, 2);
  assert_int_equal(d.syncs, 1);
  assert_int_equal(d.used, 0);
  assert_int_equal(d.markers_live, 0);
  tsr_allocator_stats s = {.struct_size = sizeof(s)};
  tsr_cuda_allocator_stats_get(&a, &s);
  assert_int_equal(s.bytes_reserved, 0);
  tsr_cuda_allocator_destroy(&a);
}

static void test_cap_frees_the_cache_then_refuses_with_the_figures(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 30, 4096);
  tsr_cuda_block *b1 = NULL, *b2 = NULL, *b3 = NULL;
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 2048, S, ID(S), &b1), TSR_OK);
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 2048, S, ID(S), &b2), TSR_OK);
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 512, S, ID(S), &b3),
                   TSR_OUT_OF_MEMORY);
  assert_null(b3);
  assert_non_null(strstr(tsr_cuda_test_message(), "the allocator's cap"));
  assert_non_null(strstr(tsr_cuda_test_message(), "cap 4096 bytes"));
  // A cached 2048-byte block is given back so that a 1024-byte one fits.
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, S, ID(S));
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 1024, S, ID(S), &b3), TSR_OK);
  assert_int_equal(d.releases, 1);
  assert_int_equal(a.oom_retries, 2);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, S, ID(S));
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b3, S, ID(S));
  tsr_cuda_allocator_destroy(&a);
}

static void test_device_full_retries_once_after_freeing_the_caches(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 3000, 0);
  tsr_cuda_block *b1 = NULL, *b2 = NULL;
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 2048, S, ID(S), &b1);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b1, S, ID(S));
  // T cannot take S's pending block, and the device has no room for another.
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 2048, T, ID(T), &b2), TSR_OK);
  assert_int_equal(d.syncs, 1);
  assert_int_equal(d.releases, 1);
  assert_int_equal(d.reserves, 2);
  assert_int_equal(a.oom_retries, 1);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b2, T, ID(T));
  tsr_cuda_allocator_destroy(&a);
}

static void test_out_of_memory_message_has_the_fragmentation_figures(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 4096, 0);
  tsr_cuda_block *keep = NULL, *small = NULL, *mid = NULL, *big = NULL;
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 1024, S, ID(S), &keep);
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 512, S, ID(S), &small);
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 1536, S, ID(S), &mid);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), small, S, ID(S));
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), mid, S, ID(S));
  assert_int_equal(tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 4000, S, ID(S), &big),
                   TSR_OUT_OF_MEMORY);
  const char *m = tsr_cuda_test_message();
  assert_non_null(strstr(m, "out of memory for 4000 bytes (class 4096)"));
  assert_non_null(strstr(m, "the device is full"));
  assert_non_null(strstr(m, "in use 1024 bytes"));
  assert_non_null(strstr(m, "2048 bytes were cached in 2 blocks, the largest 1536 bytes"));
  assert_non_null(strstr(m, "25.0%"));
  // The caches went back to the device before the retry.
  assert_int_equal(d.used, 1024);
  tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), keep, S, ID(S));
  tsr_cuda_allocator_destroy(&a);
}

static void test_double_free_is_an_invalid_argument(void **state) {
  (void)state;
  tsr_cuda_allocator a;
  fake_device d;
  setup(&a, &d, 1 << 20, 0);
  tsr_cuda_block *b = NULL;
  tsr_cuda_allocator_alloc(&a, tsr_cuda_test_host(), 64, S, ID(S), &b);
  assert_int_equal(tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b, S, ID(S)), TSR_OK);
  assert_int_equal(tsr_cuda_allocator_free(&a, tsr_cuda_test_host(), b, S, ID(S)),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_cuda_test_message(), "already freed"));
  tsr_cuda_allocator_destroy(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_size_classes_waste_at_most_a_quarter),
      cmocka_unit_test(test_same_stream_reuses_a_freed_block_at_once),
      cmocka_unit_test(test_other_stream_waits_for_the_free_marker),
      cmocka_unit_test(test_a_new_stream_at_a_freed_streams_address_waits_for_its_marker),
      cmocka_unit_test(test_stream_ids_are_unique_and_never_zero),
      cmocka_unit_test(test_free_without_stream_synchronizes_and_serves_any_stream),
      cmocka_unit_test(test_stats_count_use_reservation_and_peak),
      cmocka_unit_test(test_trim_releases_idle_blocks_and_waits_only_when_asked),
      cmocka_unit_test(test_cap_frees_the_cache_then_refuses_with_the_figures),
      cmocka_unit_test(test_device_full_retries_once_after_freeing_the_caches),
      cmocka_unit_test(test_out_of_memory_message_has_the_fragmentation_figures),
      cmocka_unit_test(test_double_free_is_an_invalid_argument),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
