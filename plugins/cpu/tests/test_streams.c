// Streams, events and copies of ref's synchronous device.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "test_host.h"
#include "test_util.h"

static void test_streams_are_always_idle_and_query_and_synchronize_succeed(void **state) {
  (void)state;
  tsr_plugin_stream *s = NULL;
  assert_int_equal(tt_api->stream_create(0, 0, &s), TSR_OK);
  assert_int_equal(tt_api->stream_query(s), TSR_OK);
  assert_int_equal(tt_api->stream_synchronize(s), TSR_OK);
  assert_int_equal(tt_api->stream_destroy(s), TSR_OK);
  assert_int_equal(tt_api->stream_create(3, 0, &s), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "device 3"));
  assert_int_equal(tt_api->stream_create(0, 0x10, &s), TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->stream_create(0, 0, NULL), TSR_INVALID_ARGUMENT);
}

static void test_events_time_the_work_between_two_records(void **state) {
  (void)state;
  tsr_plugin_stream *s = NULL;
  tsr_plugin_event *start = NULL, *end = NULL, *plain = NULL;
  assert_int_equal(tt_api->stream_create(0, 0, &s), TSR_OK);
  assert_int_equal(tt_api->event_create(0, TSR_EVENT_TIMING, &start), TSR_OK);
  assert_int_equal(tt_api->event_create(0, TSR_EVENT_TIMING, &end), TSR_OK);
  assert_int_equal(tt_api->event_create(0, 0, &plain), TSR_OK);
  float ms = -1;
  // Not recorded yet: no elapsed time.
  assert_int_equal(tt_api->event_elapsed_get(start, end, &ms), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "not been recorded"));
  assert_int_equal(tt_api->event_record(start, s), TSR_OK);
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  assert_int_equal(tt_api->event_record(end, s), TSR_OK);
  assert_int_equal(tt_api->event_query(end), TSR_OK);
  assert_int_equal(tt_api->event_synchronize(end), TSR_OK);
  assert_int_equal(tt_api->stream_wait_event(s, end), TSR_OK);
  assert_int_equal(tt_api->event_elapsed_get(start, end, &ms), TSR_OK);
  assert_true(ms >= 19.0f && ms < 2000.0f);
  assert_int_equal(tt_api->event_record(plain, s), TSR_OK);
  assert_int_equal(tt_api->event_elapsed_get(start, plain, &ms), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "TSR_EVENT_TIMING"));
  assert_int_equal(tt_api->event_destroy(plain), TSR_OK);
  assert_int_equal(tt_api->event_create(0, 0x8, &plain), TSR_INVALID_ARGUMENT);
  assert_null(plain);
  assert_int_equal(tt_api->event_destroy(start), TSR_OK);
  assert_int_equal(tt_api->event_destroy(end), TSR_OK);
  assert_int_equal(tt_api->event_destroy(NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->stream_destroy(s), TSR_OK);
}

static void test_copies_move_bytes_between_host_and_buffers(void **state) {
  (void)state;
  tsr_plugin_buffer *a = NULL, *b = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 64, NULL, &a), TSR_OK);
  assert_int_equal(tt_api->buffer_alloc(0, 64, NULL, &b), TSR_OK);
  char src[64], dst[64];
  for (int i = 0; i < 64; ++i) src[i] = (char)i;
  memset(dst, 0, sizeof(dst));
  assert_int_equal(tt_api->copy_host_to_device(NULL, src, a, 0, 64), TSR_OK);
  assert_int_equal(tt_api->copy_device_to_device(NULL, a, 8, b, 16, 40), TSR_OK);
  assert_int_equal(tt_api->copy_device_to_host(NULL, b, 16, dst, 40), TSR_OK);
  assert_memory_equal(dst, src + 8, 40);
  // Overlapping ranges inside one buffer are refused (docs/abi.md 7.4) and
  // leave the buffer alone; disjoint ranges of one buffer copy.
  assert_int_equal(tt_api->copy_device_to_device(NULL, a, 0, a, 1, 63), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "overlap"));
  assert_int_equal(tt_api->copy_device_to_host(NULL, a, 0, dst, 64), TSR_OK);
  assert_memory_equal(dst, src, 64);
  assert_int_equal(tt_api->copy_device_to_device(NULL, a, 0, a, 32, 32), TSR_OK);
  assert_int_equal(tt_api->copy_device_to_host(NULL, a, 0, dst, 64), TSR_OK);
  assert_memory_equal(dst + 32, src, 32);
  // Zero bytes at the very end is fine.
  assert_int_equal(tt_api->copy_host_to_device(NULL, src, a, 64, 0), TSR_OK);
  assert_int_equal(tt_api->buffer_free(a, NULL), TSR_OK);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
}

static void test_copies_refuse_ranges_past_the_buffer_and_overflowing_offsets(void **state) {
  (void)state;
  tsr_plugin_buffer *a = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 100, NULL, &a), TSR_OK);
  char host[128] = {0};
  assert_int_equal(tt_api->copy_host_to_device(NULL, host, a, 90, 11), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "offset 90 + 11 bytes"));
  assert_int_equal(tt_api->copy_device_to_host(NULL, a, 101, host, 0), TSR_INVALID_ARGUMENT);
  // offset + bytes wraps around 2^64.
  assert_int_equal(tt_api->copy_device_to_host(NULL, a, 50, host, UINT64_MAX - 10),
                   TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->copy_device_to_device(NULL, a, 0, a, UINT64_MAX, 2), TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->copy_host_to_device(NULL, NULL, a, 0, 10), TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->copy_host_to_device(NULL, host, NULL, 0, 10), TSR_INVALID_ARGUMENT);
  tsr_plugin_stream *s = NULL;
  assert_int_equal(tt_api->stream_create(0, 0, &s), TSR_OK);
  assert_int_equal(tt_api->stream_destroy(s), TSR_OK);
  assert_int_equal(tt_api->buffer_free(a, NULL), TSR_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_streams_are_always_idle_and_query_and_synchronize_succeed),
      cmocka_unit_test(test_events_time_the_work_between_two_records),
      cmocka_unit_test(test_copies_move_bytes_between_host_and_buffers),
      cmocka_unit_test(test_copies_refuse_ranges_past_the_buffer_and_overflowing_offsets),
  };
  return cmocka_run_group_tests_name("streams", tests, tt_setup_serial, tt_teardown);
}
