// Tests of streams, events and stream-ordered frees on the async fixture,
// whose every kernel waits at a gate this test holds (a pipe named by
// TSR_ASYNC_FIXTURE_GATE_FD: one byte lets one kernel through, closing it
// lets all through). Work is pending for as long as the test says, never for
// as long as the machine happens to be slow, so no outcome depends on timing:
// - a tensor released while a kernel reading it is queued is freed after
//   that kernel (allocator stats, and a writer racing for the memory);
// - tsr_stream_wait_event orders two streams (without it they run apart);
// - tsr_event_query says TSR_NOT_READY while work is pending;
// - timing events measure at least the time the gate was held;
// - tsr_stream_current_set routes ops, per thread;
// - a storage used on two streams is freed only after both finish;
// - tsr_stream_import wraps a native queue (the fixture's is one of its own
//   stream handles, read here from core/runtime.h as an application would
//   hold its cudaStream_t) and leaves it alive without the ownership flag;
//   on ref, which has no stream_import, it is unsupported.
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime.h"  // struct tsr_stream: its plugin handle stands in for a native queue
#include "tessera/tessera.h"

// How long the timing test holds its kernel at the gate.
#define HOLD_MS 50
#define N 256

#include "test_check.h"


typedef struct fixture {
  tsr_context *context;
  tsr_device *device;
  int gate[2];  // the pipe: [0] read by the fixture's kernels, [1] written here; -1 once closed
} fixture;

// ---------------------------------------------------------------------------
// Helpers.

static int setup(void **state) {
#ifdef TSR_TEST_ASYNC_PLUGIN
  static fixture f;
  if (pipe(f.gate) != 0) {
    fprintf(stderr, "pipe: %s\n", strerror(errno));
    return -1;
  }
  char gate[32];
  snprintf(gate, sizeof(gate), "%d", f.gate[0]);
  // Read by the fixture's init, which runs when this context loads it.
  setenv("TSR_ASYNC_FIXTURE_GATE_FD", gate, 1);
  unsetenv("TSR_ASYNC_FIXTURE_DELAY_US");
  unsetenv("TSR_DEVICE");
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_ASYNC_PLUGIN;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  tsr_status status = tsr_context_create(&options, &f.context);
  unsetenv("TSR_ASYNC_FIXTURE_GATE_FD");
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

// Lets every kernel through, now and later: a test that failed half way
// leaves none waiting for the teardown's synchronize.
static void gate_open(fixture *f) {
  if (f->gate[1] >= 0) close(f->gate[1]);
  f->gate[1] = -1;
}

// Lets |kernels| more kernels through, in the order their workers reach the gate.
static void gate_let(fixture *f, int kernels) {
  for (int i = 0; i < kernels; ++i) {
    ssize_t wrote;
    do {
      wrote = write(f->gate[1], "k", 1);
    } while (wrote < 0 && errno == EINTR);
    if (wrote != 1) fail_msg("writing to the gate: %s", strerror(errno));
  }
}

static int teardown(void **state) {
  fixture *f = *state;
  if (f == NULL || f->context == NULL) return 0;
  gate_open(f);
  int failed = tsr_stream_current_set(f->device, NULL) != TSR_OK;
  failed |= tsr_device_synchronize(f->device) != TSR_OK;
  tsr_context_destroy(f->context);
  f->context = NULL;
  close(f->gate[0]);
  f->gate[0] = -1;
  return failed ? -1 : 0;
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
  tsr_stream *main_stream = tsr_device_default_stream_get(f->device);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  tsr_tensor *b = filled(f->device, 1.0f, 0.0f);
  CHECK_OK(tsr_stream_synchronize(main_stream));
  tsr_allocator_stats before = stats_get(f->device);

  tsr_tensor *c = tsr_add(a, b);  // queued; held at the gate before it reads a and b
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

  gate_open(f);
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

// Two streams: |s1| runs |increments| in-place x += 1, held at the gate, and
// records |done1|; |s2| first waits for |done1| if |wait|, then computes
// y = x + 1 (without the wait it would race with s1, so it computes nothing)
// and records |done2|. Before the gate lets s1's kernels through, reports
// whether done2 was already complete; returns y's value (0 without the wait).
static float cross_stream_run(fixture *f, tsr_stream *s1, tsr_stream *s2, int increments,
                              int wait, int *out_second_ran_ahead) {
  tsr_tensor *x = filled(f->device, 0.0f, 0.0f);
  tsr_tensor *one = filled(f->device, 1.0f, 0.0f);
  CHECK_OK(tsr_device_synchronize(f->device));
  tsr_event *done1 = NULL, *done2 = NULL;
  CHECK_OK(tsr_event_create(f->device, 0, &done1));
  CHECK_OK(tsr_event_create(f->device, 0, &done2));

  use_stream(f->device, s1);
  for (int i = 0; i < increments; ++i) CHECK_OK(tsr_binary_out(x, x, one, TSR_BINARY_ADD, 1.0));
  CHECK_OK(tsr_event_record(done1, s1));
  if (wait) CHECK_OK(tsr_stream_wait_event(s2, done1));
  use_stream(f->device, s2);
  tsr_tensor *y = wait ? tsr_add(x, one) : NULL;
  if (wait) CHECK_TENSOR(y);
  CHECK_OK(tsr_event_record(done2, s2));
  use_stream(f->device, NULL);

  // s1 is held: without the wait s2 finishes regardless; with it s2 must not.
  if (!wait) CHECK_OK(tsr_event_synchronize(done2));
  *out_second_ran_ahead = tsr_event_query(done2) == TSR_OK;
  assert_int_equal(tsr_event_query(done1), TSR_NOT_READY);
  gate_let(f, increments + (wait ? 1 : 0));
  CHECK_OK(tsr_event_synchronize(done2));
  // With the wait, done2 completes only after done1 has.
  if (wait) assert_int_equal(tsr_event_query(done1), TSR_OK);
  CHECK_OK(tsr_stream_synchronize(s1));
  CHECK_OK(tsr_stream_synchronize(s2));
  float y0 = 0.0f;
  if (wait) {
    float got[N];
    CHECK_OK(tsr_tensor_to_host(y, got, sizeof(got)));
    for (int i = 1; i < N; ++i) assert_true(got[i] == got[0]);
    y0 = got[0];
  }
  tsr_event_release(done2);
  tsr_event_release(done1);
  tsr_tensor_release(y);
  tsr_tensor_release(one);
  tsr_tensor_release(x);
  return y0;
}

static void test_stream_wait_event_orders_a_second_stream_after_the_first(void **state) {
  fixture *f = *state;
  tsr_stream *s1 = stream_new(f->device);
  tsr_stream *s2 = stream_new(f->device);
  int ahead_without_wait = 0, ahead_with_wait = 1;
  // Without a wait the second stream finishes while the first is held: a read
  // of x there would race with the first stream's writes.
  cross_stream_run(f, s1, s2, 4, 0, &ahead_without_wait);
  float y_waited = cross_stream_run(f, s1, s2, 4, 1, &ahead_with_wait);
  tsr_stream_release(s2);
  tsr_stream_release(s1);
  if (!ahead_without_wait) {
    fail_msg("without a wait the second stream did not finish while the first was held: this "
             "test can no longer tell a wait from none");
  }
  if (ahead_with_wait) fail_msg("the second stream finished before the event it waits for");
  if (y_waited != 5.0f) fail_msg("y = x + 1 is %g after the wait, expected 5", (double)y_waited);
}

static void test_event_query_is_not_ready_while_held_work_is_pending(void **state) {
  fixture *f = *state;
  tsr_stream *stream = tsr_device_default_stream_get(f->device);
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
  gate_let(f, 1);
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

static void sleep_ms(int ms) {
  struct timespec left = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&left, &left) != 0) {
  }
}

static void test_timing_events_measure_at_least_the_time_held(void **state) {
  fixture *f = *state;
  tsr_stream *stream = tsr_device_default_stream_get(f->device);
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
  // start has its time once it completes; the kernel before end is held
  // HOLD_MS past that, so end - start is at least HOLD_MS.
  CHECK_OK(tsr_event_synchronize(start));
  sleep_ms(HOLD_MS);
  gate_let(f, 1);
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
  if (!(ms >= (float)HOLD_MS)) fail_msg("elapsed %.3f ms, the kernel was held %d ms", (double)ms, HOLD_MS);
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
  tsr_stream *default_stream = tsr_device_default_stream_get(f->device);
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

  gate_let(f, 1);
  CHECK_OK(tsr_stream_synchronize(stream));
  values_are(c, 0.0f, 2.0f, "a + a");
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  tsr_stream_release(stream);
  assert_int_equal(on_stream, TSR_NOT_READY);
  assert_int_equal(on_default, TSR_OK);
  assert_ptr_equal(probe.seen, default_stream);  // the current stream is per thread
}

// |a| is made on |owner|, then read by |owner_kernels| held kernels on
// |owner| and |other_kernels| on |other| (r = a + 1, then r = r + a ...);
// its last reference goes while the owner's are held. The release waits on
// the host for the other stream's work, so the gate lets those through first
// (the owner waits for them by an event, so the bytes reach no owner kernel);
// the free itself is queued on the owner behind its held kernels. Memory
// freed early would be taken and overwritten by a third stream.
static void release_after_two_streams(fixture *f, int owner_kernels, int other_kernels) {
  tsr_stream *owner = stream_new(f->device);
  tsr_stream *other = stream_new(f->device);
  tsr_stream *third = stream_new(f->device);
  tsr_stream *idle = tsr_device_default_stream_get(f->device);
  use_stream(f->device, owner);
  tsr_tensor *a = filled(f->device, 0.0f, 1.0f);
  tsr_tensor *one_owner = filled(f->device, 1.0f, 0.0f);
  use_stream(f->device, other);
  tsr_tensor *one_other = filled(f->device, 1.0f, 0.0f);
  use_stream(f->device, NULL);
  CHECK_OK(tsr_stream_synchronize(owner));
  CHECK_OK(tsr_stream_synchronize(other));
  tsr_allocator_stats before = stats_get(f->device);

  // Each stream computes 1 + k * a with k kernels, each reading a: first
  // the other stream's, then (after its event) the owner's.
  tsr_tensor *results[2] = {NULL, NULL};
  tsr_stream *streams[2] = {other, owner};
  tsr_tensor *ones[2] = {one_other, one_owner};
  int kernels[2] = {other_kernels, owner_kernels};
  tsr_event *other_done = NULL;
  CHECK_OK(tsr_event_create(f->device, 0, &other_done));
  for (int s = 0; s < 2; ++s) {
    if (s == 1) CHECK_OK(tsr_stream_wait_event(owner, other_done));
    use_stream(f->device, streams[s]);
    results[s] = tsr_add(a, ones[s]);
    CHECK_TENSOR(results[s]);
    for (int k = 1; k < kernels[s]; ++k) {
      CHECK_OK(tsr_binary_out(results[s], results[s], a, TSR_BINARY_ADD, 1.0));
    }
    if (s == 0) CHECK_OK(tsr_event_record(other_done, other));
  }
  use_stream(f->device, NULL);

  gate_let(f, other_kernels);
  tsr_last_error_clear();
  tsr_tensor_release(a);
  tsr_status release_status = tsr_last_status();
  char release_message[512];
  snprintf(release_message, sizeof(release_message), "%s", tsr_last_error());
  tsr_status other_after_release = tsr_event_query(other_done);
  tsr_status owner_pending = tsr_stream_query(owner);
  tsr_allocator_stats during = stats_get(f->device);

  // Neither an idle stream nor the other stream may take a's memory yet.
  CHECK_OK(tsr_stream_synchronize(idle));
  tsr_tensor *g1 = clobber_on(f->device, third);
  tsr_tensor *g2 = clobber_on(f->device, other);
  gate_let(f, owner_kernels);
  CHECK_OK(tsr_stream_synchronize(owner));
  CHECK_OK(tsr_stream_synchronize(other));
  tsr_allocator_stats after = stats_get(f->device);
  values_are(results[1], 1.0f, (float)owner_kernels, "1 + k * a on the owner stream");
  values_are(results[0], 1.0f, (float)other_kernels, "1 + k * a on the other stream");

  tsr_event_release(other_done);
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
  assert_int_equal(other_after_release, TSR_OK);
  assert_int_equal(owner_pending, TSR_NOT_READY);
  assert_int_equal(during.free_count, before.free_count);
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
  gate_open(f);
  values_are(c, 0.0f, 2.0f, "a + a");
  // With the last tensor that used it, the stream goes; the thread's current
  // stream falls back to the default instead of dangling.
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  assert_ptr_equal(tsr_stream_current_get(f->device),
                   tsr_device_default_stream_get(f->device));
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
  tsr_tensor *c = tsr_add(a, a);  // queued on |imported|, held at the gate
  CHECK_TENSOR(c);
  tsr_status pending = tsr_stream_query(imported);
  gate_open(f);
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
      T(test_event_query_is_not_ready_while_held_work_is_pending),
      T(test_timing_events_measure_at_least_the_time_held),
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
