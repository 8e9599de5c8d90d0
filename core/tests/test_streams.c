// Tests of streams, events and stream-ordered frees on the async fixture,
// whose every kernel waits TSR_ASYNC_FIXTURE_DELAY_US on its stream's worker
// thread before it runs, so that work is observably still queued:
// - a tensor released while a kernel reading it is queued is freed after
//   that kernel (allocator stats, and a writer racing for the memory);
// - tsr_stream_wait_event orders two streams (without it they run apart);
// - tsr_event_query says TSR_NOT_READY while work is pending;
// - timing events measure at least the injected delay;
// - tsr_stream_current_set routes ops, per thread;
// - a storage used on two streams is freed only after both finish;
// - tsr_stream_import wraps a native queue (the fixture's is one of its own
//   stream handles, read here from core/runtime.h as an application would
//   hold its cudaStream_t) and leaves it alive without the ownership flag;
//   on ref, which has no stream_import, it is unsupported.
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime.h"  // struct tsr_stream: its plugin handle stands in for a native queue
#include "tessera/tessera.h"

// Every kernel sleeps this long before it runs.
#define DELAY_MS 100
#define N 256

#include "test_check.h"


typedef struct fixture {
  tsr_context *context;
  tsr_device *device;
} fixture;

// ---------------------------------------------------------------------------
// Helpers.

static int setup(void **state) {
#ifdef TSR_TEST_ASYNC_PLUGIN
  static fixture f;
  char delay[32];
  snprintf(delay, sizeof(delay), "%d", DELAY_MS * 1000);
  // Read by the fixture's init, which runs when this context loads it.
  setenv("TSR_ASYNC_FIXTURE_DELAY_US", delay, 1);
  unsetenv("TSR_DEVICE");
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_ASYNC_PLUGIN;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  tsr_status status = tsr_context_create(&options, &f.context);
  unsetenv("TSR_ASYNC_FIXTURE_DELAY_US");
  if (status != TSR_OK) {
    fprintf(stderr, "context_create: %s\n", tsr_last_error());
    return -1;
  }
  f.device = tsr_context_device_find(f.context, "async:0");
  if (f.device == NULL) return -1;
  *state = &f;
  return 0;
#else
  (void)state;
  return -1;
#endif
}

static int teardown(void **state) {
  fixture *f = *state;
  if (f == NULL || f->context == NULL) return 0;
  tsr_stream_current_set(f->device, NULL);
  tsr_device_synchronize(f->device);
  tsr_context_destroy(f->context);
  f->context = NULL;
  return 0;
}

static tsr_tensor *filled(tsr_device *device, float first, float step) {
  float data[N];
  for (int i = 0; i < N; ++i) data[i] = first + step * (float)i;
  tsr_tensor *t = tsr_tensor_from_host(device, TSR_FLOAT32, 1, (int64_t[]){N}, data);
  CHECK_TENSOR(t);
  return t;
}

// Checks every element of |t| is first + step * i.
static void values_are(const tsr_tensor *t, float first, float step, const char *what) {
  float got[N];
  CHECK_OK(tsr_tensor_to_host(t, got, sizeof(got)));
  for (int i = 0; i < N; ++i) {
    float want = first + step * (float)i;
    if (got[i] != want) fail_msg("%s: element %d is %g, expected %g", what, i, (double)got[i],
                                 (double)want);
  }
}

static tsr_stream *stream_new(tsr_device *device) {
  tsr_stream *stream = NULL;
  CHECK_OK(tsr_stream_create(device, 0, &stream));
  return stream;
}

static void use_stream(tsr_device *device, tsr_stream *stream) {
  CHECK_OK(tsr_stream_current_set(device, stream));
}

static tsr_allocator_stats stats_get(const tsr_device *device) {
  tsr_allocator_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  CHECK_OK(tsr_device_allocator_stats_get(device, &stats));
  return stats;
}

// Takes a block of N floats on |stream| (idle) and overwrites it at once, so
// that memory freed too early, before the kernels reading it ran, is
// clobbered before they read it. Returns the tensor, released by the caller.
static tsr_tensor *clobber_on(tsr_device *device, tsr_stream *stream) {
  use_stream(device, stream);
  tsr_tensor *g = filled(device, -1000.0f, 0.0f);
  CHECK_OK(tsr_stream_synchronize(stream));
  use_stream(device, NULL);
  return g;
}

// ---------------------------------------------------------------------------
// Tests.

static void test_async_fixture_is_asynchronous_with_events_and_timing(void **state) {
  fixture *f = *state;
  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  CHECK_OK(tsr_device_props_get(f->device, &props));
  assert_true(props.flags & TSR_DEVICE_ASYNC);
  assert_true(props.flags & TSR_DEVICE_EVENTS);
  assert_true(props.flags & TSR_DEVICE_TIMING_EVENTS);
}

static void test_a_released_tensor_is_freed_after_the_queued_kernel_that_reads_it(void **state) {
  fixture *f = *state;
  tsr_stream *other = stream_new(f->device);
  tsr_stream *main_stream = tsr_device_default_stream(f->device);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  tsr_tensor *b = filled(f->device, 1.0f, 0.0f);
  CHECK_OK(tsr_stream_synchronize(main_stream));
  tsr_allocator_stats before = stats_get(f->device);

  tsr_tensor *c = tsr_add(a, b);  // queued; sleeps DELAY_MS before it reads a and b
  CHECK_TENSOR(c);
  tsr_last_error_clear();
  tsr_tensor_release(a);  // the last references, while the kernel is queued
  tsr_tensor_release(b);
  tsr_status release_status = tsr_last_status();
  tsr_allocator_stats during = stats_get(f->device);
  tsr_status pending = tsr_stream_query(main_stream);

  // If a or b went back to the allocator now, this takes its memory and
  // overwrites it before the kernel reads it.
  tsr_tensor *g1 = clobber_on(f->device, other);
  tsr_tensor *g2 = clobber_on(f->device, other);

  CHECK_OK(tsr_stream_synchronize(main_stream));
  tsr_allocator_stats after = stats_get(f->device);
  values_are(c, 1.0f, 1.0f, "a + b");

  tsr_tensor_release(g2);
  tsr_tensor_release(g1);
  tsr_tensor_release(c);
  tsr_stream_release(other);

  assert_int_equal(release_status, TSR_OK);
  // The stats were read while the kernel was still queued...
  assert_int_equal(pending, TSR_NOT_READY);
  // ...and showed nothing freed yet; after synchronize both frees are done.
  assert_int_equal(during.free_count, before.free_count);
  assert_true(during.bytes_in_use > before.bytes_in_use);
  assert_int_equal(after.free_count, before.free_count + 2);
}

// Two streams: |s1| runs |increments| in-place x += 1 (each waiting
// DELAY_MS) and records |done1|; |s2| first waits for |done1| if |wait|, then
// computes y = x + 1 (if |wait|; without the wait it would race with s1, so
// it computes w + w from its own tensor instead) and records |done2|.
// Returns whether s1's work was complete when s2's was, and y's value.
static int cross_stream_run(fixture *f, tsr_stream *s1, tsr_stream *s2, int increments,
                            int wait, float *out_y) {
  tsr_tensor *x = filled(f->device, 0.0f, 0.0f);
  tsr_tensor *one = filled(f->device, 1.0f, 0.0f);
  tsr_tensor *w = filled(f->device, 1.0f, 0.0f);
  CHECK_OK(tsr_device_synchronize(f->device));
  tsr_event *done1 = NULL, *done2 = NULL;
  CHECK_OK(tsr_event_create(f->device, 0, &done1));
  CHECK_OK(tsr_event_create(f->device, 0, &done2));

  use_stream(f->device, s1);
  for (int i = 0; i < increments; ++i) CHECK_OK(tsr_binary_out(x, x, one, TSR_BINARY_ADD, 1.0));
  CHECK_OK(tsr_event_record(done1, s1));
  if (wait) CHECK_OK(tsr_stream_wait_event(s2, done1));
  use_stream(f->device, s2);
  tsr_tensor *y = wait ? tsr_add(x, one) : tsr_add(w, w);
  CHECK_TENSOR(y);
  CHECK_OK(tsr_event_record(done2, s2));
  use_stream(f->device, NULL);

  CHECK_OK(tsr_event_synchronize(done2));
  int first_done = tsr_event_query(done1) == TSR_OK;
  float got[N];
  CHECK_OK(tsr_stream_synchronize(s1));
  CHECK_OK(tsr_stream_synchronize(s2));
  CHECK_OK(tsr_tensor_to_host(y, got, sizeof(got)));
  for (int i = 1; i < N; ++i) assert_true(got[i] == got[0]);
  *out_y = got[0];
  tsr_event_release(done2);
  tsr_event_release(done1);
  tsr_tensor_release(y);
  tsr_tensor_release(w);
  tsr_tensor_release(one);
  tsr_tensor_release(x);
  return first_done;
}

static void test_stream_wait_event_orders_a_second_stream_after_the_first(void **state) {
  fixture *f = *state;
  tsr_stream *s1 = stream_new(f->device);
  tsr_stream *s2 = stream_new(f->device);
  float y_raced = 0, y_waited = 0;
  // Without a wait, the second stream finishes while the first still works:
  // a read of x there would race with the first stream's writes.
  int ordered_without_wait = cross_stream_run(f, s1, s2, 4, 0, &y_raced);
  int ordered_with_wait = cross_stream_run(f, s1, s2, 4, 1, &y_waited);
  tsr_stream_release(s2);
  tsr_stream_release(s1);
  if (ordered_without_wait) {
    fail_msg("without a wait the second stream still finished after the first: this test can no "
             "longer tell a wait from none");
  }
  assert_true(y_raced == 2.0f);
  assert_true(ordered_with_wait);
  if (y_waited != 5.0f) fail_msg("y = x + 1 is %g after the wait, expected 5", (double)y_waited);
}

static void test_event_query_is_not_ready_while_delayed_work_is_pending(void **state) {
  fixture *f = *state;
  tsr_stream *stream = tsr_device_default_stream(f->device);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  CHECK_OK(tsr_stream_synchronize(stream));
  tsr_event *event = NULL;
  CHECK_OK(tsr_event_create(f->device, 0, &event));
  assert_int_equal(tsr_event_query(event), TSR_OK);  // never recorded: complete

  tsr_tensor *c = tsr_add(a, a);
  CHECK_TENSOR(c);
  CHECK_OK(tsr_event_record(event, stream));
  tsr_status event_pending = tsr_event_query(event);
  tsr_status stream_pending = tsr_stream_query(stream);
  CHECK_OK(tsr_event_synchronize(event));
  tsr_status event_done = tsr_event_query(event);
  CHECK_OK(tsr_stream_synchronize(stream));
  tsr_status stream_done = tsr_stream_query(stream);
  values_are(c, 0.0f, 2.0f, "a + a");
  tsr_event_release(event);
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  assert_int_equal(event_pending, TSR_NOT_READY);
  assert_int_equal(stream_pending, TSR_NOT_READY);
  assert_int_equal(event_done, TSR_OK);
  assert_int_equal(stream_done, TSR_OK);
  // Not ready is not an error: nothing stuck to the context.
  assert_int_equal(tsr_context_status(f->context), TSR_OK);
}

static void test_timing_events_measure_at_least_the_injected_delay(void **state) {
  fixture *f = *state;
  tsr_stream *stream = tsr_device_default_stream(f->device);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  CHECK_OK(tsr_stream_synchronize(stream));
  tsr_event *start = NULL, *end = NULL, *plain = NULL;
  CHECK_OK(tsr_event_create(f->device, TSR_EVENT_TIMING, &start));
  CHECK_OK(tsr_event_create(f->device, TSR_EVENT_TIMING, &end));
  CHECK_OK(tsr_event_create(f->device, 0, &plain));

  CHECK_OK(tsr_event_record(start, stream));
  CHECK_OK(tsr_event_record(plain, stream));
  tsr_tensor *c = tsr_add(a, a);
  CHECK_TENSOR(c);
  CHECK_OK(tsr_event_record(end, stream));
  float early = -1.0f;
  tsr_status while_pending = tsr_event_elapsed_get(start, end, &early);
  CHECK_OK(tsr_event_synchronize(end));
  float ms = -1.0f;
  tsr_status done = tsr_event_elapsed_get(start, end, &ms);
  tsr_status untimed = tsr_event_elapsed_get(plain, end, &early);
  tsr_event_release(plain);
  tsr_event_release(end);
  tsr_event_release(start);
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  assert_int_equal(while_pending, TSR_NOT_READY);
  assert_int_equal(done, TSR_OK);
  if (!(ms > (float)DELAY_MS)) fail_msg("elapsed %.3f ms, the kernel slept %d ms", (double)ms, DELAY_MS);
  if (ms > 60000.0f) fail_msg("elapsed %.3f ms is not in milliseconds", (double)ms);
  assert_int_not_equal(untimed, TSR_OK);
}

typedef struct current_probe {
  tsr_device *device;
  tsr_stream *seen;
} current_probe;

static void *current_on_another_thread(void *arg) {
  current_probe *p = arg;
  p->seen = tsr_stream_current_get(p->device);
  return NULL;
}

static void test_stream_current_set_routes_ops_to_that_stream_on_this_thread(void **state) {
  fixture *f = *state;
  tsr_stream *default_stream = tsr_device_default_stream(f->device);
  tsr_stream *stream = stream_new(f->device);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  CHECK_OK(tsr_stream_synchronize(default_stream));
  assert_ptr_equal(tsr_stream_current_get(f->device), default_stream);

  use_stream(f->device, stream);
  assert_ptr_equal(tsr_stream_current_get(f->device), stream);
  tsr_tensor *c = tsr_add(a, a);  // on |stream|
  CHECK_TENSOR(c);
  tsr_status on_stream = tsr_stream_query(stream);
  tsr_status on_default = tsr_stream_query(default_stream);
  current_probe probe = {f->device, NULL};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, current_on_another_thread, &probe), 0);
  pthread_join(thread, NULL);
  use_stream(f->device, NULL);
  assert_ptr_equal(tsr_stream_current_get(f->device), default_stream);

  CHECK_OK(tsr_stream_synchronize(stream));
  values_are(c, 0.0f, 2.0f, "a + a");
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  tsr_stream_release(stream);
  assert_int_equal(on_stream, TSR_NOT_READY);
  assert_int_equal(on_default, TSR_OK);
  assert_ptr_equal(probe.seen, default_stream);  // the current stream is per thread
}

// |a| is made on |owner|, then read by |owner_kernels| delayed kernels on
// |owner| and |other_kernels| on |other| (r = a + 1, then r = r + a ...);
// its last reference goes while they are queued. Checks that the free waits
// for both streams: memory freed early is taken and overwritten by a third
// stream once an idle stream, then the stream that finishes first, is done.
static void release_after_two_streams(fixture *f, int owner_kernels, int other_kernels) {
  tsr_stream *owner = stream_new(f->device);
  tsr_stream *other = stream_new(f->device);
  tsr_stream *third = stream_new(f->device);
  tsr_stream *idle = tsr_device_default_stream(f->device);
  use_stream(f->device, owner);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  tsr_tensor *one_owner = filled(f->device, 1.0f, 0.0f);
  use_stream(f->device, other);
  tsr_tensor *one_other = filled(f->device, 1.0f, 0.0f);
  use_stream(f->device, NULL);
  CHECK_OK(tsr_stream_synchronize(owner));
  CHECK_OK(tsr_stream_synchronize(other));
  tsr_allocator_stats before = stats_get(f->device);

  // Each stream computes 1 + k * a with k kernels, each reading a.
  tsr_tensor *results[2] = {NULL, NULL};
  tsr_stream *streams[2] = {owner, other};
  tsr_tensor *ones[2] = {one_owner, one_other};
  int kernels[2] = {owner_kernels, other_kernels};
  for (int s = 0; s < 2; ++s) {
    use_stream(f->device, streams[s]);
    results[s] = tsr_add(a, ones[s]);
    CHECK_TENSOR(results[s]);
    for (int k = 1; k < kernels[s]; ++k) {
      CHECK_OK(tsr_binary_out(results[s], results[s], a, TSR_BINARY_ADD, 1.0));
    }
  }
  use_stream(f->device, NULL);

  tsr_last_error_clear();
  tsr_tensor_release(a);
  tsr_status release_status = tsr_last_status();
  char release_message[512];
  snprintf(release_message, sizeof(release_message), "%s", tsr_last_error());
  tsr_allocator_stats during = stats_get(f->device);
  int busy = tsr_stream_query(owner) == TSR_NOT_READY || tsr_stream_query(other) == TSR_NOT_READY;

  // A free ordered on a stream that never used a is complete once it is idle.
  CHECK_OK(tsr_stream_synchronize(idle));
  tsr_tensor *g1 = clobber_on(f->device, third);
  // A free ordered after only one of the two is complete once that one is.
  tsr_stream *first_done = owner_kernels <= other_kernels ? owner : other;
  CHECK_OK(tsr_stream_synchronize(first_done));
  tsr_tensor *g2 = clobber_on(f->device, third);
  CHECK_OK(tsr_stream_synchronize(owner));
  CHECK_OK(tsr_stream_synchronize(other));
  tsr_allocator_stats after = stats_get(f->device);
  values_are(results[0], 1.0f, (float)owner_kernels, "1 + k * a on the owner stream");
  values_are(results[1], 1.0f, (float)other_kernels, "1 + k * a on the other stream");

  tsr_tensor_release(g2);
  tsr_tensor_release(g1);
  tsr_tensor_release(results[1]);
  tsr_tensor_release(results[0]);
  tsr_tensor_release(one_other);
  tsr_tensor_release(one_owner);
  tsr_stream_release(third);
  tsr_stream_release(other);
  tsr_stream_release(owner);

  if (release_status != TSR_OK) {
    fail_msg("releasing the tensor raised %s: %s", tsr_status_name(release_status),
             release_message);
  }
  if (busy) assert_int_equal(during.free_count, before.free_count);
  assert_int_equal(after.free_count, before.free_count + 1);
}

static void test_a_storage_used_on_two_streams_waits_for_the_other_stream(void **state) {
  release_after_two_streams(*state, 1, 3);
}

static void test_a_storage_used_on_two_streams_waits_for_its_own_stream(void **state) {
  release_after_two_streams(*state, 3, 1);
}

static void test_a_stream_released_with_queued_work_finishes_it_and_is_forgotten(void **state) {
  fixture *f = *state;
  tsr_stream *stream = stream_new(f->device);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  CHECK_OK(tsr_device_synchronize(f->device));
  use_stream(f->device, stream);
  tsr_tensor *c = tsr_add(a, a);
  CHECK_TENSOR(c);
  // The caller's reference goes while the add is queued and the stream is
  // current: the tensors that used it keep it alive, and the add completes.
  tsr_stream_release(stream);
  assert_ptr_equal(tsr_stream_current_get(f->device), stream);
  values_are(c, 0.0f, 2.0f, "a + a");
  // With the last tensor that used it, the stream goes; the thread's current
  // stream falls back to the default instead of dangling.
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  assert_ptr_equal(tsr_stream_current_get(f->device), tsr_device_default_stream(f->device));
  tsr_tensor *d = filled(f->device, 1.0f, 0.0f);
  values_are(d, 1.0f, 0.0f, "a tensor made after the stream went");
  tsr_tensor_release(d);
}

static void test_an_imported_stream_runs_ops_and_leaves_the_native_stream_alive(void **state) {
  fixture *f = *state;
  // The application's own queue: here a stream of the fixture, whose plugin
  // handle is what the fixture's stream_import takes.
  tsr_stream *owner = stream_new(f->device);
  void *native = owner->handle;
  tsr_stream *imported = NULL;
  CHECK_OK(tsr_stream_import(f->device, native, 0, &imported));
  assert_non_null(imported);
  assert_ptr_not_equal(imported, owner);

  use_stream(f->device, imported);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  tsr_tensor *c = tsr_add(a, a);  // queued on |imported|, behind the delay
  CHECK_TENSOR(c);
  tsr_status pending = tsr_stream_query(imported);
  tsr_event *event = NULL;
  CHECK_OK(tsr_event_create(f->device, 0, &event));
  CHECK_OK(tsr_event_record(event, imported));
  CHECK_OK(tsr_event_synchronize(event));
  CHECK_OK(tsr_stream_synchronize(imported));
  use_stream(f->device, NULL);
  values_are(c, 0.0f, 2.0f, "a + a on the imported stream");
  tsr_event_release(event);
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  tsr_stream_release(imported);  // its last reference: the wrapper goes
  assert_int_equal(pending, TSR_NOT_READY);

  // Without TSR_STREAM_IMPORT_TAKE_OWNERSHIP the native queue lives on.
  use_stream(f->device, owner);
  tsr_tensor *b = filled(f->device, 1.0f, 1.0f);
  tsr_tensor *d = tsr_add(b, b);
  CHECK_TENSOR(d);
  CHECK_OK(tsr_stream_synchronize(owner));
  use_stream(f->device, NULL);
  values_are(d, 2.0f, 2.0f, "b + b on the native stream after its import was released");
  CHECK_OK(tsr_stream_import(f->device, native, 0, &imported));
  tsr_stream_release(imported);
  tsr_tensor_release(d);
  tsr_tensor_release(b);
  tsr_stream_release(owner);
}

static void test_stream_import_refuses_null_arguments_and_unknown_flags(void **state) {
  fixture *f = *state;
  tsr_stream *owner = stream_new(f->device);
  tsr_stream *imported = owner;  // overwritten with NULL on failure
  assert_int_equal(tsr_stream_import(NULL, owner->handle, 0, &imported), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "stream_import: device is NULL"));
  assert_null(imported);
  assert_int_equal(tsr_stream_import(f->device, NULL, 0, &imported), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "stream_import: native is NULL"));
  assert_int_equal(tsr_stream_import(f->device, owner->handle, 0, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "stream_import: out_stream is NULL"));
  assert_int_equal(tsr_stream_import(f->device, owner->handle, 0x6, &imported),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "unknown bits 0x6"));
  assert_null(imported);
  // A pointer the plugin does not know is refused by the plugin, named by device.
  int not_a_stream = 0;
  assert_int_equal(tsr_stream_import(f->device, &not_a_stream, 0, &imported),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "async:0"));
  assert_null(imported);
  tsr_stream_release(owner);
}

static void test_stream_import_on_a_plugin_without_the_entry_is_unsupported(void **state) {
  (void)state;
#ifdef TSR_TEST_REF_PLUGIN
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_REF_PLUGIN;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  tsr_context *context = NULL;
  CHECK_OK(tsr_context_create(&options, &context));
  tsr_device *device = tsr_context_device_find(context, "ref:0");
  assert_non_null(device);
  int native = 0;
  tsr_stream *imported = NULL;
  assert_int_equal(tsr_stream_import(device, &native, 0, &imported), TSR_UNSUPPORTED);
  assert_null(imported);
  const char *message = tsr_last_error();
  if (strstr(message, "plugin 'ref'") == NULL ||
      strstr(message, "no stream_import entry") == NULL) {
    fail_msg("the message does not name the plugin and the entry: %s", message);
  }
  // The arguments are checked first, whatever the plugin.
  assert_int_equal(tsr_stream_import(device, NULL, 0, &imported), TSR_INVALID_ARGUMENT);
  tsr_context_destroy(context);
#else
  skip();
#endif
}

int main(void) {
#ifndef TSR_TEST_ASYNC_PLUGIN
  fprintf(stderr, "test_streams: skipped: the async fixture (tessera-async) is not built\n");
  return SKIP_CODE;
#endif
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_async_fixture_is_asynchronous_with_events_and_timing),
      T(test_a_released_tensor_is_freed_after_the_queued_kernel_that_reads_it),
      T(test_stream_wait_event_orders_a_second_stream_after_the_first),
      T(test_event_query_is_not_ready_while_delayed_work_is_pending),
      T(test_timing_events_measure_at_least_the_injected_delay),
      T(test_stream_current_set_routes_ops_to_that_stream_on_this_thread),
      T(test_a_storage_used_on_two_streams_waits_for_the_other_stream),
      T(test_a_storage_used_on_two_streams_waits_for_its_own_stream),
      T(test_a_stream_released_with_queued_work_finishes_it_and_is_forgotten),
      T(test_an_imported_stream_runs_ops_and_leaves_the_native_stream_alive),
      T(test_stream_import_refuses_null_arguments_and_unknown_flags),
      cmocka_unit_test(test_stream_import_on_a_plugin_without_the_entry_is_unsupported),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
