// Every public entry point of tessera.h, given bad input, returns a status
// or NULL with a non-empty tsr_last_error() that names the function, and
// nothing crashes. Also run under ASan + UBSan.
//
// Each test walks a list of bad calls and keeps going after a failed check,
// printing every offending call with the message it got, then fails once at
// the end: one run lists everything that needs fixing.
//
// The context loads ref and the async fixture together (plugin_path
// "ref.so:async.so"), so that ops on tensors of two devices can be tried.
// Compile definitions: TSR_TEST_REF_PATH, TSR_TEST_ASYNC_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "tessera/tessera.h"
#include "test_support.h"

#ifndef TSR_TEST_REF_PATH
#error "TSR_TEST_REF_PATH must name the ref plugin"
#endif
#ifndef TSR_TEST_ASYNC_PATH
#error "TSR_TEST_ASYNC_PATH must name the async fixture plugin"
#endif

// The 4 TiB requests below must come back as NULL under ASan and TSan too,
// not as a sanitizer report. Defaults only: an ASAN_OPTIONS / TSAN_OPTIONS
// from the environment still applies on top.
#define SANITIZER_DEFAULTS __attribute__((visibility("default"), used))
SANITIZER_DEFAULTS const char *__asan_default_options(void);
SANITIZER_DEFAULTS const char *__tsan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
const char *__tsan_default_options(void) { return "allocator_may_return_null=1"; }

static tsr_context *g_context;
static tsr_device *g_ref;
static tsr_device *g_async;
static int g_failures;

static int group_setup(void **state) {
  (void)state;
  g_context = ts_context_create(TSR_TEST_REF_PATH ":" TSR_TEST_ASYNC_PATH, NULL);
  if (g_context == NULL) return -1;
  g_ref = tsr_context_device_find(g_context, "ref:0");
  g_async = tsr_context_device_find(g_context, "async:0");
  if (g_ref == NULL || g_async == NULL) {
    fprintf(stderr, "the context lacks ref:0 or async:0: %s\n", tsr_last_error());
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  g_context = NULL;
  return 0;
}

// --- soft checks ----------------------------------------------------------------

static void report(const char *format, ...) TSR_ABI_PRINTF(1, 2);
static void report(const char *format, ...) {
  va_list args;
  va_start(args, format);
  char line[1536];
  vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  print_error("  BAD: %s\n", line);
  ++g_failures;
}

static void begin(void) { g_failures = 0; }

static void end(const char *what) {
  tsr_context_error_clear(g_context);
  if (g_failures != 0) fail_msg("%d %s check(s) failed (listed above)", g_failures, what);
}

// The last error must be set, non-empty and contain |name|.
static void check_message(const char *expr, const char *name) {
  const char *m = tsr_last_error();
  if (m == NULL || m[0] == '\0') {
    report("%s: tsr_last_error() is empty", expr);
  } else if (strstr(m, name) == NULL) {
    report("%s: message \"%s\" does not name '%s'", expr, m, name);
  }
  if (tsr_last_status() == TSR_OK) report("%s: tsr_last_status() is TSR_OK", expr);
}

static void check_status(const char *expr, tsr_status status, tsr_status expected,
                         const char *name) {
  if (status == TSR_OK) {
    report("%s returned TSR_OK", expr);
    return;
  }
  if (expected != TSR_OK && status != expected) {
    report("%s returned %s, expected %s (message \"%s\")", expr, tsr_status_name(status),
           tsr_status_name(expected), tsr_last_error());
  }
  if (tsr_last_status() != status) {
    report("%s returned %s but tsr_last_status() is %s", expr, tsr_status_name(status),
           tsr_status_name(tsr_last_status()));
  }
  check_message(expr, name);
}

static void check_null(const char *expr, const void *result, const char *name) {
  if (result != NULL) {
    report("%s returned non-NULL", expr);
    return;
  }
  check_message(expr, name);
}

// A call returning tsr_status that must fail; |expected| TSR_OK means any.
#define BAD_STATUS(name, expected, call)              \
  do {                                                \
    tsr_last_error_clear();                           \
    tsr_status bad_status_ = (call);                  \
    check_status(#call, bad_status_, expected, name); \
  } while (0)

// A call returning a tensor that must be NULL.
#define BAD_TENSOR(name, call)                \
  do {                                        \
    tsr_last_error_clear();                   \
    tsr_tensor *bad_tensor_ = (call);         \
    check_null(#call, bad_tensor_, name);     \
    tsr_tensor_release(bad_tensor_);          \
  } while (0)

// A call returning another pointer that must be NULL.
#define BAD_POINTER(name, call)               \
  do {                                        \
    tsr_last_error_clear();                   \
    const void *bad_pointer_ = (call);        \
    check_null(#call, bad_pointer_, name);    \
  } while (0)

// A value-returning call that must answer |expected| (no error required).
#define SENTINEL(call, expected)                                                      \
  do {                                                                                \
    long long got_ = (long long)(call);                                               \
    if (got_ != (long long)(expected)) {                                              \
      report("%s returned %lld, expected %lld", #call, got_, (long long)(expected)); \
    }                                                                                 \
  } while (0)

static tsr_tensor *make_f32(tsr_device *device, int32_t rank, const int64_t *sizes) {
  tsr_tensor *t = tsr_tensor_full(device, TSR_FLOAT32, rank, sizes, 1.0);
  TS_ASSERT_TENSOR(t);
  return t;
}

static tsr_tensor *make_dtype(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                              const int64_t *sizes) {
  tsr_tensor *t = tsr_tensor_full(device, dtype, rank, sizes, 1.0);
  TS_ASSERT_TENSOR(t);
  return t;
}

// ============================================================================

static void test_version_and_status_names_answer_for_any_value(void **state) {
  (void)state;
  begin();
  const char *v = tsr_version();
  if (v == NULL || strcmp(v, "0.1.0") != 0) report("tsr_version() is \"%s\"", v ? v : "NULL");
  const tsr_status odd[] = {-1, TSR_STATUS_COUNT, 99, INT32_MIN};
  for (int i = 0; i < 4; ++i) {
    const char *n = tsr_status_name(odd[i]);
    if (n == NULL || n[0] == '\0') report("tsr_status_name(%d) is empty", odd[i]);
  }
  for (tsr_status s = 0; s < TSR_STATUS_COUNT; ++s) {
    const char *n = tsr_status_name(s);
    if (n == NULL || n[0] == '\0') report("tsr_status_name(%d) is empty", s);
  }
  // An error, then a clear: both the message and the status go.
  tsr_last_error_clear();
  tsr_tensor_release(tsr_view(NULL, 0, NULL));
  if (tsr_last_error()[0] == '\0') report("tsr_view(NULL) left no error to clear");
  tsr_last_error_clear();
  if (tsr_last_error()[0] != '\0' || tsr_last_status() != TSR_OK) {
    report("tsr_last_error_clear() left \"%s\" (%s)", tsr_last_error(),
           tsr_status_name(tsr_last_status()));
  }
  end("version and status");
}

static void test_context_create_rejects_bad_options_and_missing_devices(void **state) {
  (void)state;
  begin();
  tsr_context_options_init(NULL);  // must not crash
  tsr_context_destroy(NULL);
  tsr_context_options options;
  tsr_context *context = (tsr_context *)&options;  // poisoned: must become NULL
  BAD_STATUS("context_create", TSR_INVALID_ARGUMENT, tsr_context_create(NULL, NULL));

  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_REF_PATH;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  options.struct_size = 0;
  BAD_STATUS("context_create", TSR_INVALID_ARGUMENT, tsr_context_create(&options, &context));
  if (context != NULL) report("context_create with struct_size 0 left *out_context set");
  options.struct_size = (size_t)1 << 40;
  BAD_STATUS("context_create", TSR_INVALID_ARGUMENT, tsr_context_create(&options, &context));
  options.struct_size = sizeof(options);
  options.fallback = 42;
  BAD_STATUS("context_create", TSR_INVALID_ARGUMENT, tsr_context_create(&options, &context));
  options.fallback = TSR_FALLBACK_DEFAULT;
  options.num_threads = -5;  // "0: every core"; a negative count is not a count
  tsr_last_error_clear();
  tsr_status status = tsr_context_create(&options, &context);
  if (status == TSR_OK) {
    // Accepting it as "default" is defensible; it must at least work.
    tsr_context_destroy(context);
  } else {
    check_message("tsr_context_create(num_threads -5)", "context_create");
  }
  options.num_threads = 0;

  options.device = "nope:3";
  context = (tsr_context *)&options;
  BAD_STATUS("context_create", TSR_NOT_FOUND, tsr_context_create(&options, &context));
  if (context != NULL) report("context_create with a missing device left *out_context set");
  if (strstr(tsr_last_error(), "nope:3") == NULL) {
    report("the missing-device message does not name the device: \"%s\"", tsr_last_error());
  }
  options.device = "ref:7";
  BAD_STATUS("context_create", TSR_NOT_FOUND, tsr_context_create(&options, &context));
  options.device = "";
  tsr_last_error_clear();
  status = tsr_context_create(&options, &context);  // "" means "the best available"
  if (status == TSR_OK) tsr_context_destroy(context);

  options.device = NULL;
  options.plugin_path = "/nonexistent/libtessera-nothing.so";
  BAD_STATUS("context_create", TSR_NOT_FOUND, tsr_context_create(&options, &context));
  options.plugin_path = "";
  BAD_STATUS("context_create", TSR_NOT_FOUND, tsr_context_create(&options, &context));
  end("context_create");
}

static void test_context_queries_refuse_null_and_out_of_range_arguments(void **state) {
  (void)state;
  begin();
  tsr_context *c = g_context;
  BAD_STATUS("context", TSR_INVALID_ARGUMENT, tsr_context_status(NULL));
  tsr_context_error_clear(NULL);
  if (tsr_context_error_message(NULL) == NULL) report("tsr_context_error_message(NULL) is NULL");
  if (tsr_context_thread_count(NULL) < 1) report("tsr_context_thread_count(NULL) < 1");
  SENTINEL(tsr_context_plugin_count(NULL), 0);
  SENTINEL(tsr_context_rejected_count(NULL), 0);
  SENTINEL(tsr_context_device_count(NULL), 0);

  tsr_plugin_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  BAD_STATUS("plugin_info_get", TSR_INVALID_ARGUMENT, tsr_context_plugin_info_get(NULL, 0, &info));
  BAD_STATUS("plugin_info_get", TSR_INVALID_ARGUMENT, tsr_context_plugin_info_get(c, 99, &info));
  BAD_STATUS("plugin_info_get", TSR_INVALID_ARGUMENT, tsr_context_plugin_info_get(c, -1, &info));
  BAD_STATUS("plugin_info_get", TSR_INVALID_ARGUMENT, tsr_context_plugin_info_get(c, 0, NULL));
  info.struct_size = 0;
  BAD_STATUS("plugin_info_get", TSR_INVALID_ARGUMENT, tsr_context_plugin_info_get(c, 0, &info));

  tsr_rejected_plugin rejected;
  memset(&rejected, 0, sizeof(rejected));
  rejected.struct_size = sizeof(rejected);
  BAD_STATUS("rejected_get", TSR_INVALID_ARGUMENT, tsr_context_rejected_get(NULL, 0, &rejected));
  BAD_STATUS("rejected_get", TSR_INVALID_ARGUMENT, tsr_context_rejected_get(c, 99, &rejected));
  BAD_STATUS("rejected_get", TSR_INVALID_ARGUMENT, tsr_context_rejected_get(c, -1, &rejected));
  BAD_STATUS("rejected_get", TSR_INVALID_ARGUMENT, tsr_context_rejected_get(c, 0, NULL));

  BAD_POINTER("device_get", tsr_context_device_get(NULL, 0));
  BAD_POINTER("device_get", tsr_context_device_get(c, 99));
  BAD_POINTER("device_get", tsr_context_device_get(c, -1));
  BAD_POINTER("device_find", tsr_context_device_find(NULL, "ref"));
  BAD_POINTER("device_find", tsr_context_device_find(c, NULL));
  BAD_POINTER("device_find", tsr_context_device_find(c, "nope:0"));
  BAD_POINTER("device_find", tsr_context_device_find(c, "ref:1"));
  BAD_POINTER("device_find", tsr_context_device_find(c, ""));
  if (tsr_context_default_device(NULL) != NULL) report("tsr_context_default_device(NULL) is set");
  BAD_STATUS("default_device_set", TSR_INVALID_ARGUMENT, tsr_context_default_device_set(NULL, g_ref));
  BAD_STATUS("default_device_set", TSR_INVALID_ARGUMENT, tsr_context_default_device_set(c, NULL));

  tsr_fallback_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  BAD_STATUS("fallback_stats_get", TSR_INVALID_ARGUMENT, tsr_context_fallback_stats_get(NULL, &stats));
  BAD_STATUS("fallback_stats_get", TSR_INVALID_ARGUMENT, tsr_context_fallback_stats_get(c, NULL));
  stats.struct_size = 1;
  BAD_STATUS("fallback_stats_get", TSR_INVALID_ARGUMENT, tsr_context_fallback_stats_get(c, &stats));
  BAD_STATUS("fallback_policy_set", TSR_INVALID_ARGUMENT, tsr_context_fallback_policy_set(c, 42));
  BAD_STATUS("fallback_policy_set", TSR_INVALID_ARGUMENT, tsr_context_fallback_policy_set(c, -7));
  BAD_STATUS("fallback_policy_set", TSR_INVALID_ARGUMENT,
             tsr_context_fallback_policy_set(NULL, TSR_FALLBACK_ALLOW));
  end("context query");
}

static void test_device_queries_refuse_null_and_bad_arguments(void **state) {
  (void)state;
  begin();
  if (tsr_device_context_get(NULL) != NULL) report("tsr_device_context_get(NULL) is set");
  if (tsr_device_name(NULL) != NULL) report("tsr_device_name(NULL) is set");
  if (tsr_device_plugin_name(NULL) != NULL) report("tsr_device_plugin_name(NULL) is set");
  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  BAD_STATUS("device_props_get", TSR_INVALID_ARGUMENT, tsr_device_props_get(NULL, &props));
  BAD_STATUS("device_props_get", TSR_INVALID_ARGUMENT, tsr_device_props_get(g_ref, NULL));
  props.struct_size = 0;
  BAD_STATUS("device_props_get", TSR_INVALID_ARGUMENT, tsr_device_props_get(g_ref, &props));
  tsr_allocator_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  BAD_STATUS("allocator_stats_get", TSR_INVALID_ARGUMENT, tsr_device_allocator_stats_get(NULL, &stats));
  BAD_STATUS("allocator_stats_get", TSR_INVALID_ARGUMENT, tsr_device_allocator_stats_get(g_ref, NULL));
  stats.struct_size = 0;
  BAD_STATUS("allocator_stats_get", TSR_INVALID_ARGUMENT, tsr_device_allocator_stats_get(g_ref, &stats));
  BAD_STATUS("allocator_trim", TSR_INVALID_ARGUMENT, tsr_device_allocator_trim(NULL));
  BAD_STATUS("device_synchronize", TSR_INVALID_ARGUMENT, tsr_device_synchronize(NULL));
  BAD_STATUS("op_supported", TSR_INVALID_ARGUMENT, tsr_device_op_supported(NULL, TSR_OP_FILL, TSR_FLOAT32));
  BAD_STATUS("op_supported", TSR_INVALID_ARGUMENT, tsr_device_op_supported(g_ref, 999, TSR_FLOAT32));
  BAD_STATUS("op_supported", TSR_INVALID_ARGUMENT, tsr_device_op_supported(g_ref, -1, TSR_FLOAT32));
  BAD_STATUS("op_supported", TSR_INVALID_ARGUMENT,
             tsr_device_op_supported(g_ref, TSR_OP_INVALID, TSR_FLOAT32));
  BAD_STATUS("op_supported", TSR_INVALID_ARGUMENT, tsr_device_op_supported(g_ref, TSR_OP_FILL, 99));
  BAD_STATUS("op_supported", TSR_INVALID_ARGUMENT, tsr_device_op_supported(g_ref, TSR_OP_FILL, -1));
  // Per selector value: bad arguments, then what ref implements.
  BAD_STATUS("op_selector_supported", TSR_INVALID_ARGUMENT,
             tsr_device_op_selector_supported(NULL, TSR_OP_UNARY, TSR_FLOAT32, 0));
  BAD_STATUS("op_selector_supported", TSR_INVALID_ARGUMENT,
             tsr_device_op_selector_supported(g_ref, 999, TSR_FLOAT32, 0));
  BAD_STATUS("op_selector_supported", TSR_INVALID_ARGUMENT,
             tsr_device_op_selector_supported(g_ref, TSR_OP_UNARY, 99, 0));
  BAD_STATUS("op_selector_supported", TSR_INVALID_ARGUMENT,
             tsr_device_op_selector_supported(g_ref, TSR_OP_UNARY, TSR_FLOAT32, -1));
  BAD_STATUS("op_selector_supported", TSR_INVALID_ARGUMENT,
             tsr_device_op_selector_supported(g_ref, TSR_OP_UNARY, TSR_FLOAT32, TSR_UNARY_FN_COUNT));
  BAD_STATUS("op_selector_supported", TSR_INVALID_ARGUMENT,
             tsr_device_op_selector_supported(g_ref, TSR_OP_FILL, TSR_FLOAT32, 0));
  assert_int_equal(tsr_op_selector_count(TSR_OP_FILL), 0);
  assert_int_equal(tsr_op_selector_count(TSR_OP_MATMUL), TSR_ACTIVATION_COUNT + 1);
  assert_string_equal(tsr_op_selector_name(TSR_OP_UNARY, TSR_UNARY_RELU), "relu");
  assert_string_equal(tsr_op_selector_name(TSR_OP_MATMUL, TSR_ACTIVATION_COUNT), "bias");
  assert_null(tsr_op_selector_name(TSR_OP_UNARY, TSR_UNARY_FN_COUNT));
  // Every variant signature the probe builds is one ref accepts where the
  // catalogue defines it: the bias, AVG pooling, per-row losses.
  const struct {
    tsr_op_id_t op;
    int32_t selector;
  } ref_does[] = {{TSR_OP_UNARY, TSR_UNARY_RELU},         {TSR_OP_UNARY_BACKWARD, TSR_UNARY_GELU},
                  {TSR_OP_MATMUL, TSR_ACTIVATION_COUNT},  {TSR_OP_MATMUL, TSR_ACTIVATION_TANH},
                  {TSR_OP_CONV2D, TSR_ACTIVATION_COUNT},  {TSR_OP_POOL2D, TSR_POOL_AVG},
                  {TSR_OP_POOL2D_BACKWARD, TSR_POOL_AVG}, {TSR_OP_PAD, TSR_PAD_REFLECT},
                  {TSR_OP_RNG_FILL, TSR_RNG_NORMAL},      {TSR_OP_CROSS_ENTROPY, TSR_REDUCTION_NONE},
                  {TSR_OP_CROSS_ENTROPY_BACKWARD, TSR_REDUCTION_NONE}};
  for (size_t i = 0; i < sizeof(ref_does) / sizeof(ref_does[0]); ++i) {
    tsr_status status =
        tsr_device_op_selector_supported(g_ref, ref_does[i].op, TSR_FLOAT32, ref_does[i].selector);
    if (status != TSR_OK) {
      fail_msg("ref: %s %s float32: %s: %s", tsr_op_name(ref_does[i].op),
               tsr_op_selector_name(ref_does[i].op, ref_does[i].selector), tsr_status_name(status),
               tsr_last_error());
    }
  }
  // A function the catalogue does not define for the dtype is not supported.
  assert_int_equal(tsr_device_op_selector_supported(g_ref, TSR_OP_UNARY, TSR_FLOAT32,
                                                    TSR_UNARY_LOGICAL_NOT),
                   TSR_UNSUPPORTED);
  tsr_plan_cache_stats pc;
  memset(&pc, 0, sizeof(pc));
  pc.struct_size = sizeof(pc);
  BAD_STATUS("plan_cache_stats_get", TSR_INVALID_ARGUMENT, tsr_device_plan_cache_stats_get(NULL, &pc));
  BAD_STATUS("plan_cache_stats_get", TSR_INVALID_ARGUMENT, tsr_device_plan_cache_stats_get(g_ref, NULL));
  end("device query");
}

static void test_streams_and_events_refuse_null_and_mismatched_arguments(void **state) {
  (void)state;
  begin();
  tsr_stream *s = NULL;
  BAD_STATUS("stream_create", TSR_INVALID_ARGUMENT, tsr_stream_create(NULL, 0, &s));
  BAD_STATUS("stream_create", TSR_INVALID_ARGUMENT, tsr_stream_create(g_ref, 0, NULL));
  tsr_stream_release(NULL);
  if (tsr_device_default_stream_get(NULL) != NULL)
    report("tsr_device_default_stream_get(NULL) is set");
  if (tsr_stream_current_get(NULL) != NULL) report("tsr_stream_current_get(NULL) is set");
  tsr_stream *async_stream = tsr_device_default_stream_get(g_async);
  BAD_STATUS("stream_current_set", TSR_INVALID_ARGUMENT, tsr_stream_current_set(NULL, async_stream));
  BAD_STATUS("stream_current_set", TSR_INVALID_ARGUMENT, tsr_stream_current_set(g_ref, async_stream));
  if (tsr_stream_current_get(g_ref) != tsr_device_default_stream_get(g_ref)) {
    report("a refused stream_current_set changed ref's current stream");
  }
  BAD_STATUS("stream_synchronize", TSR_INVALID_ARGUMENT, tsr_stream_synchronize(NULL));
  BAD_STATUS("stream_query", TSR_INVALID_ARGUMENT, tsr_stream_query(NULL));

  tsr_event *e = NULL;
  BAD_STATUS("event_create", TSR_INVALID_ARGUMENT, tsr_event_create(NULL, 0, &e));
  BAD_STATUS("event_create", TSR_INVALID_ARGUMENT, tsr_event_create(g_async, 0, NULL));
  tsr_event_release(NULL);
  BAD_STATUS("event_record", TSR_INVALID_ARGUMENT, tsr_event_record(NULL, async_stream));
  BAD_STATUS("event_query", TSR_INVALID_ARGUMENT, tsr_event_query(NULL));
  BAD_STATUS("event_synchronize", TSR_INVALID_ARGUMENT, tsr_event_synchronize(NULL));
  float ms = 0;
  BAD_STATUS("event_elapsed_get", TSR_INVALID_ARGUMENT, tsr_event_elapsed_get(NULL, NULL, &ms));
  BAD_STATUS("stream_wait_event", TSR_INVALID_ARGUMENT, tsr_stream_wait_event(NULL, NULL));
  BAD_STATUS("stream_wait_event", TSR_INVALID_ARGUMENT, tsr_stream_wait_event(async_stream, NULL));

  tsr_last_error_clear();
  if (tsr_event_create(g_async, 0, &e) == TSR_OK) {
    BAD_STATUS("event_record", TSR_INVALID_ARGUMENT, tsr_event_record(e, NULL));
    BAD_STATUS("event_record", TSR_INVALID_ARGUMENT,
               tsr_event_record(e, tsr_device_default_stream_get(g_ref)));
    BAD_STATUS("event_elapsed_get", TSR_INVALID_ARGUMENT, tsr_event_elapsed_get(e, e, NULL));
    BAD_STATUS("stream_wait_event", TSR_INVALID_ARGUMENT, tsr_stream_wait_event(NULL, e));
    TS_ASSERT_OK(tsr_event_record(e, async_stream));
    // A plain (non-timing) event has no elapsed time.
    BAD_STATUS("event_elapsed_get", TSR_OK, tsr_event_elapsed_get(e, e, &ms));
    tsr_event_release(e);
  } else {
    print_message("async events unavailable (%s); event checks skipped\n", tsr_last_error());
  }
  end("stream and event");
}

static void test_tensor_constructors_refuse_bad_ranks_sizes_dtypes_and_overflow(void **state) {
  (void)state;
  begin();
  const int64_t ok[2] = {2, 3}, negative[2] = {2, -3}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t elements_overflow[2] = {1LL << 40, 1LL << 40};
  const int64_t bytes_overflow[2] = {1LL << 31, 1LL << 31};  // 2^62 elements * 4 bytes
  const int64_t bytes_overflow_f64[1] = {1LL << 61};          // 2^61 * 8 = 2^64
  const int64_t three_overflow[3] = {1LL << 30, 1LL << 30, 1LL << 30};
  float data[16] = {0};
  struct {
    const char *label;
    tsr_device *device;
    tsr_dtype_t dtype;
    int32_t rank;
    const int64_t *sizes;
  } cases[] = {
      {"NULL device", NULL, TSR_FLOAT32, 2, ok},
      {"rank 9", g_ref, TSR_FLOAT32, 9, nine},
      {"rank -1", g_ref, TSR_FLOAT32, -1, ok},
      {"sizes NULL for rank 2", g_ref, TSR_FLOAT32, 2, NULL},
      {"a negative size", g_ref, TSR_FLOAT32, 2, negative},
      {"an element count past int64", g_ref, TSR_FLOAT32, 2, elements_overflow},
      {"a three-dim element count past int64", g_ref, TSR_INT64, 3, three_overflow},
      {"a byte count past int64 (float32)", g_ref, TSR_FLOAT32, 2, bytes_overflow},
      {"a byte count past uint64 (float64)", g_ref, TSR_FLOAT64, 1, bytes_overflow_f64},
      {"dtype 99", g_ref, 99, 2, ok},
      {"dtype -1", g_ref, -1, 2, ok},
      {"dtype count", g_ref, TSR_DTYPE_COUNT, 2, ok},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    char expr[160];
    tsr_last_error_clear();
    tsr_tensor *t = tsr_tensor_empty(cases[i].device, cases[i].dtype, cases[i].rank, cases[i].sizes);
    snprintf(expr, sizeof(expr), "tsr_tensor_empty(%s)", cases[i].label);
    check_null(expr, t, "tensor_empty");
    tsr_tensor_release(t);
    tsr_last_error_clear();
    t = tsr_tensor_full(cases[i].device, cases[i].dtype, cases[i].rank, cases[i].sizes, 1.0);
    snprintf(expr, sizeof(expr), "tsr_tensor_full(%s)", cases[i].label);
    check_null(expr, t, "tensor_full");
    tsr_tensor_release(t);
    tsr_last_error_clear();
    t = tsr_tensor_from_host(cases[i].device, cases[i].dtype, cases[i].rank, cases[i].sizes, data);
    snprintf(expr, sizeof(expr), "tsr_tensor_from_host(%s)", cases[i].label);
    check_null(expr, t, "tensor_from_host");
    tsr_tensor_release(t);
  }
  BAD_TENSOR("tensor_from_host", tsr_tensor_from_host(g_ref, TSR_FLOAT32, 2, ok, NULL));
  end("tensor constructor");
}

static void test_a_huge_allocation_fails_with_out_of_memory_and_no_crash(void **state) {
  (void)state;
  begin();
  const int64_t huge[1] = {1LL << 40};  // 4 TiB of float32
  float dummy[4] = {0};
  tsr_last_error_clear();
  tsr_tensor *t = tsr_tensor_empty(g_ref, TSR_FLOAT32, 1, huge);
  check_null("tsr_tensor_empty({1 << 40} float32)", t, "tensor_empty");
  if (tsr_last_status() != TSR_OUT_OF_MEMORY) {
    report("tsr_tensor_empty({1 << 40}): status %s, expected out of memory",
           tsr_status_name(tsr_last_status()));
  }
  tsr_tensor_release(t);
  tsr_last_error_clear();
  t = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, huge, 0.0);
  check_null("tsr_tensor_full({1 << 40} float32)", t, "tensor_full");
  if (tsr_last_status() != TSR_OUT_OF_MEMORY) report("tsr_tensor_full: not out of memory");
  tsr_tensor_release(t);
  tsr_last_error_clear();
  t = tsr_tensor_from_host(g_ref, TSR_FLOAT32, 1, huge, dummy);
  check_null("tsr_tensor_from_host({1 << 40} float32)", t, "tensor_from_host");
  tsr_tensor_release(t);
  // An op whose result would be huge: [1 << 20, 1] + [1, 1 << 20] float32.
  const int64_t col[2] = {1LL << 20, 1}, row[2] = {1, 1LL << 20};
  tsr_tensor *a = tsr_tensor_full(g_ref, TSR_FLOAT32, 2, col, 1.0);
  tsr_tensor *b = tsr_tensor_full(g_ref, TSR_FLOAT32, 2, row, 1.0);
  TS_ASSERT_TENSOR(a);
  TS_ASSERT_TENSOR(b);
  tsr_last_error_clear();
  t = tsr_add(a, b);
  check_null("tsr_add([1<<20, 1], [1, 1<<20]) (4 TiB result)", t, "binary");
  if (tsr_last_status() != TSR_OUT_OF_MEMORY) report("tsr_add of a 4 TiB result: not out of memory");
  tsr_tensor_release(t);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  // The device still works afterwards.
  const int64_t small[1] = {4};
  tsr_tensor *s = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, small, 3.0);
  TS_ASSERT_TENSOR(s);
  float back[4];
  TS_ASSERT_OK(tsr_tensor_to_host(s, back, sizeof(back)));
  assert_true(back[3] == 3.0f);
  tsr_tensor_release(s);
  end("huge allocation");
}

static void test_tensor_to_host_and_to_device_refuse_bad_buffers(void **state) {
  (void)state;
  begin();
  const int64_t sizes[2] = {2, 3};
  tsr_tensor *t = make_f32(g_ref, 2, sizes);
  float buf[16];
  BAD_STATUS("tensor_to_host", TSR_INVALID_ARGUMENT, tsr_tensor_to_host(NULL, buf, 24));
  BAD_STATUS("tensor_to_host", TSR_INVALID_ARGUMENT, tsr_tensor_to_host(t, NULL, 24));
  BAD_STATUS("tensor_to_host", TSR_INVALID_ARGUMENT, tsr_tensor_to_host(t, buf, 20));
  BAD_STATUS("tensor_to_host", TSR_INVALID_ARGUMENT, tsr_tensor_to_host(t, buf, 28));
  BAD_STATUS("tensor_to_host", TSR_INVALID_ARGUMENT, tsr_tensor_to_host(t, buf, 0));
  BAD_STATUS("tensor_to_host", TSR_INVALID_ARGUMENT, tsr_tensor_to_host(t, buf, (size_t)-1));
  BAD_TENSOR("tensor_to_device", tsr_tensor_to_device(NULL, g_ref));
  BAD_TENSOR("tensor_to_device", tsr_tensor_to_device(t, NULL));
  tsr_tensor_release(t);
  end("to_host / to_device");
}

static void test_tensor_accessors_return_sentinels_for_null_and_out_of_range(void **state) {
  (void)state;
  begin();
  const int64_t sizes[2] = {2, 3};
  tsr_tensor *t = make_f32(g_ref, 2, sizes);
  tsr_tensor_release(NULL);
  if (tsr_tensor_retain(NULL) != NULL) report("tsr_tensor_retain(NULL) is not NULL");
  SENTINEL(tsr_tensor_dtype(NULL), -1);
  SENTINEL(tsr_tensor_rank(NULL), -1);
  SENTINEL(tsr_tensor_size(NULL, 0), -1);
  SENTINEL(tsr_tensor_size(t, 2), -1);
  SENTINEL(tsr_tensor_size(t, -3), -1);
  SENTINEL(tsr_tensor_size(t, INT32_MIN), -1);
  SENTINEL(tsr_tensor_size(t, -1), 3);
  SENTINEL(tsr_tensor_stride(NULL, 0), -1);
  SENTINEL(tsr_tensor_stride(t, 2), -1);
  SENTINEL(tsr_tensor_stride(t, INT32_MIN), -1);
  if (tsr_tensor_sizes(NULL) != NULL) report("tsr_tensor_sizes(NULL) is set");
  if (tsr_tensor_strides(NULL) != NULL) report("tsr_tensor_strides(NULL) is set");
  SENTINEL(tsr_tensor_numel(NULL), -1);
  SENTINEL(tsr_tensor_offset(NULL), -1);
  SENTINEL(tsr_tensor_is_contiguous(NULL), 0);
  if (tsr_tensor_device(NULL) != NULL) report("tsr_tensor_device(NULL) is set");
  SENTINEL(tsr_tensor_storage_version(NULL), 0);
  SENTINEL(tsr_tensor_shares_storage(NULL, t), 0);
  SENTINEL(tsr_tensor_shares_storage(t, NULL), 0);
  SENTINEL(tsr_tensor_shares_storage(NULL, NULL), 0);
  tsr_tensor_release(t);
  end("accessor");
}

// A released handle is poisoned and its memory not reused before 256
// further releases on the thread (TSR_TENSOR_QUARANTINE): an op, a view, a
// copy to the host or a second release that names it is a clean error, and
// a double release never makes two new tensors share one handle.
static void test_released_handles_are_refused_not_reused(void **state) {
  (void)state;
  const int64_t sizes[1] = {6};
  tsr_tensor *a = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, sizes, 1.0);
  tsr_tensor *b = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, sizes, 2.0);
  assert_non_null(a);
  assert_non_null(b);
  tsr_tensor_release(a);  // a is now a stale handle
  tsr_last_error_clear();
  assert_null(tsr_add(a, b));
  assert_int_equal(tsr_last_status(), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "was released"));
  tsr_last_error_clear();
  assert_null(tsr_reshape(a, 1, sizes));
  assert_non_null(strstr(tsr_last_error(), "released"));
  float host[6];
  assert_int_equal(tsr_tensor_to_host(a, host, sizeof(host)), TSR_INVALID_ARGUMENT);
  tsr_last_error_clear();
  assert_null(tsr_tensor_retain(a));
  assert_non_null(strstr(tsr_last_error(), "already released"));
  // The double release: an error, and the handle is not handed out twice.
  tsr_last_error_clear();
  tsr_tensor_release(a);
  assert_int_equal(tsr_last_status(), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "already released"));
  tsr_tensor *c = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, sizes, 3.0);
  tsr_tensor *d = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, sizes, 4.0);
  assert_non_null(c);
  assert_non_null(d);
  assert_ptr_not_equal(c, d);
  assert_ptr_not_equal(c, a);
  assert_ptr_not_equal(d, a);
  // Within the window, no new handle is the stale one: 200 more tensors
  // made and released.
  for (int i = 0; i < 200; ++i) {
    tsr_tensor *t = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, sizes, (double)i);
    assert_non_null(t);
    assert_ptr_not_equal(t, a);
    tsr_tensor_release(t);
  }
  tsr_last_error_clear();
  assert_null(tsr_add(a, b));  // still refused
  assert_non_null(strstr(tsr_last_error(), "was released"));
  // A tensor used after its scope ended: refused, and the live one is
  // untouched.
  size_t mark = tsr_scope_begin();
  tsr_tensor *scoped = tsr_tensor_full(g_ref, TSR_FLOAT32, 1, sizes, 5.0);
  assert_non_null(scoped);
  tsr_scope_end(mark);
  tsr_last_error_clear();
  assert_int_equal(tsr_fill_(scoped, 9.0), TSR_INVALID_ARGUMENT);
  float got[6];
  assert_int_equal(tsr_tensor_to_host(c, got, sizeof(got)), TSR_OK);
  for (int i = 0; i < 6; ++i) assert_true(got[i] == 3.0f);
  tsr_tensor_release(d);
  tsr_tensor_release(c);
  tsr_tensor_release(b);
  tsr_last_error_clear();
  tsr_context_error_clear(g_context);
}

static void test_views_refuse_bad_shapes_dims_and_steps(void **state) {
  (void)state;
  begin();
  const int64_t sizes[2] = {3, 4};
  tsr_tensor *t = make_f32(g_ref, 2, sizes);
  tsr_tensor *tt = tsr_transpose(t, 0, 1);
  TS_ASSERT_TENSOR(tt);
  const int64_t five[1] = {5}, two_infer[2] = {-1, -1}, neg[2] = {-3, -4}, twelve[1] = {12};
  const int64_t nine[9] = {12, 1, 1, 1, 1, 1, 1, 1, 1}, overflow[3] = {1LL << 40, 1LL << 40, 0};
  BAD_TENSOR("view", tsr_view(NULL, 1, twelve));
  BAD_TENSOR("view", tsr_view(t, 1, five));
  BAD_TENSOR("view", tsr_view(t, 2, two_infer));
  BAD_TENSOR("view", tsr_view(t, 2, neg));
  BAD_TENSOR("view", tsr_view(t, 2, NULL));
  BAD_TENSOR("view", tsr_view(t, 9, nine));
  BAD_TENSOR("view", tsr_view(t, -1, twelve));
  BAD_TENSOR("view", tsr_view(t, 3, overflow));
  BAD_TENSOR("view", tsr_view(tt, 1, twelve));  // strides forbid it
  BAD_TENSOR("reshape", tsr_reshape(NULL, 1, twelve));
  BAD_TENSOR("reshape", tsr_reshape(t, 1, five));
  BAD_TENSOR("reshape", tsr_reshape(tt, 1, five));
  BAD_TENSOR("reshape", tsr_reshape(t, 9, nine));
  BAD_TENSOR("reshape", tsr_reshape(t, 2, two_infer));
  BAD_TENSOR("transpose", tsr_transpose(NULL, 0, 1));
  BAD_TENSOR("transpose", tsr_transpose(t, 0, 2));
  BAD_TENSOR("transpose", tsr_transpose(t, -3, 0));
  BAD_TENSOR("transpose", tsr_transpose(t, INT32_MIN, 0));
  const int32_t p_short[1] = {0}, p_repeat[2] = {0, 0}, p_range[2] = {0, 2},
                p_neg[2] = {0, -3}, p_nine[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  BAD_TENSOR("permute", tsr_permute(NULL, 2, p_repeat));
  BAD_TENSOR("permute", tsr_permute(t, 1, p_short));
  BAD_TENSOR("permute", tsr_permute(t, 2, p_repeat));
  BAD_TENSOR("permute", tsr_permute(t, 2, p_range));
  BAD_TENSOR("permute", tsr_permute(t, 2, p_neg));
  BAD_TENSOR("permute", tsr_permute(t, 2, NULL));
  BAD_TENSOR("permute", tsr_permute(t, 9, p_nine));
  BAD_TENSOR("slice", tsr_slice(NULL, 0, 0, 1, 1));
  BAD_TENSOR("slice", tsr_slice(t, 2, 0, 1, 1));
  BAD_TENSOR("slice", tsr_slice(t, -3, 0, 1, 1));
  BAD_TENSOR("slice", tsr_slice(t, 0, 0, 3, 0));
  BAD_TENSOR("slice", tsr_slice(t, 0, 0, 3, -1));
  BAD_TENSOR("slice", tsr_slice(t, 0, 0, 3, INT64_MIN));
  const int64_t e_bad[2] = {3, 5}, e_lead[3] = {-1, 3, 4}, e_neg[3] = {-5, 3, 4},
                e_nine[9] = {1, 1, 1, 1, 1, 1, 1, 3, 4}, e_small[1] = {4};
  BAD_TENSOR("expand", tsr_expand(NULL, 2, e_bad));
  BAD_TENSOR("expand", tsr_expand(t, 2, e_bad));
  BAD_TENSOR("expand", tsr_expand(t, 3, e_lead));
  BAD_TENSOR("expand", tsr_expand(t, 3, e_neg));
  BAD_TENSOR("expand", tsr_expand(t, 1, e_small));
  BAD_TENSOR("expand", tsr_expand(t, 9, e_nine));
  BAD_TENSOR("expand", tsr_expand(t, 2, NULL));
  // The product of the sizes overflows int64 (each size alone is fine).
  const int64_t e_huge[3] = {INT64_MAX / 8, 3, 4}, e_huge4[4] = {1LL << 40, 1LL << 40, 3, 4};
  BAD_TENSOR("expand", tsr_expand(t, 3, e_huge));
  BAD_TENSOR("expand", tsr_expand(t, 4, e_huge4));
  BAD_TENSOR("contiguous", tsr_contiguous(NULL));
  tsr_tensor_release(tt);
  tsr_tensor_release(t);
  end("view");
}

static void test_op_run_refuses_unknown_ops_bad_operand_counts_and_absurd_attrs(void **state) {
  (void)state;
  begin();
  const int64_t sizes[1] = {4};
  tsr_tensor *x = make_f32(g_ref, 1, sizes);
  tsr_tensor *out = make_f32(g_ref, 1, sizes);
  tsr_tensor *in2[2] = {x, x}, *in1[1] = {x}, *outs[1] = {out}, *null_in[1] = {NULL};
  tsr_tensor *many[TSR_MAX_OPERANDS + 1];
  for (int i = 0; i < TSR_MAX_OPERANDS + 1; ++i) many[i] = x;
  tsr_binary_attrs add = {sizeof(add), TSR_BINARY_ADD, 0, 1.0};
  BAD_STATUS("op_run", TSR_INVALID_ARGUMENT, tsr_op_run(99, 2, in2, 1, outs, &add));
  BAD_STATUS("op_run", TSR_INVALID_ARGUMENT, tsr_op_run(-1, 2, in2, 1, outs, &add));
  BAD_STATUS("op_run", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_INVALID, 2, in2, 1, outs, &add));
  BAD_STATUS("op_run", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_COUNT, 2, in2, 1, outs, &add));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_BINARY, 2, in2, 0, outs, &add));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_BINARY, -1, in2, 1, outs, &add));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT,
             tsr_op_run(TSR_OP_BINARY, TSR_MAX_OPERANDS, many, 1, outs, &add));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_BINARY, 2, NULL, 1, outs, &add));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_BINARY, 2, in2, 1, NULL, &add));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_BINARY, 1, null_in, 1, outs, &add));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_BINARY, 2, in2, 1, null_in, &add));
  // Wrong operand counts for the op: one input to a binary op, none to copy.
  BAD_STATUS("binary", TSR_OK, tsr_op_run(TSR_OP_BINARY, 1, in1, 1, outs, &add));
  BAD_STATUS("copy", TSR_OK, tsr_op_run(TSR_OP_COPY, 0, NULL, 1, outs, NULL));
  // Attributes with absurd sizes.
  tsr_binary_attrs absurd = add;
  const size_t bad_sizes[4] = {0, 3, (size_t)1 << 40, SIZE_MAX};
  for (int i = 0; i < 4; ++i) {
    absurd.struct_size = bad_sizes[i];
    char expr[96];
    snprintf(expr, sizeof(expr), "tsr_op_run(binary, attrs.struct_size %zu)", bad_sizes[i]);
    tsr_last_error_clear();
    tsr_status status = tsr_op_run(TSR_OP_BINARY, 2, in2, 1, outs, &absurd);
    check_status(expr, status, TSR_INVALID_ARGUMENT, "binary");
  }
  // Attributes too small for the op (a fill attrs struct given to binary).
  tsr_fill_attrs fill = {sizeof(size_t), 1.0};
  BAD_STATUS("binary", TSR_OK, tsr_op_run(TSR_OP_BINARY, 2, in2, 1, outs, &fill));
  // NULL attrs where the op needs them.
  BAD_STATUS("binary", TSR_OK, tsr_op_run(TSR_OP_BINARY, 2, in2, 1, outs, NULL));
  // Unknown function in the attrs.
  tsr_binary_attrs bad_fn = {sizeof(bad_fn), 77, 0, 1.0};
  BAD_STATUS("binary", TSR_OK, tsr_op_run(TSR_OP_BINARY, 2, in2, 1, outs, &bad_fn));
  // An op ref does not have (yet): conv2d. Unsupported, and said so.
  tsr_conv2d_attrs conv;
  memset(&conv, 0, sizeof(conv));
  conv.struct_size = sizeof(conv);
  BAD_STATUS("conv2d", TSR_OK, tsr_op_run(TSR_OP_CONV2D, 2, in2, 1, outs, &conv));
  tsr_tensor_release(out);
  tsr_tensor_release(x);
  end("op_run");
}

static void test_elementwise_ops_refuse_null_mismatched_dtypes_and_shapes(void **state) {
  (void)state;
  begin();
  const int64_t s3[1] = {3}, s4[1] = {4}, s34[2] = {3, 4};
  tsr_tensor *f3 = make_f32(g_ref, 1, s3), *f4 = make_f32(g_ref, 1, s4);
  tsr_tensor *f34 = make_f32(g_ref, 2, s34);
  tsr_tensor *i3 = make_dtype(g_ref, TSR_INT32, 1, s3);
  tsr_tensor *d3 = make_dtype(g_ref, TSR_FLOAT64, 1, s3);
  tsr_tensor *b3 = make_dtype(g_ref, TSR_BOOL, 1, s3);

  BAD_STATUS("fill", TSR_INVALID_ARGUMENT, tsr_fill_(NULL, 1.0));
  BAD_STATUS("copy", TSR_INVALID_ARGUMENT, tsr_copy_(NULL, f3));
  BAD_STATUS("copy", TSR_INVALID_ARGUMENT, tsr_copy_(f3, NULL));
  BAD_STATUS("copy", TSR_INVALID_ARGUMENT, tsr_copy_(f3, f4));   // [4] into [3]
  BAD_STATUS("copy", TSR_INVALID_ARGUMENT, tsr_copy_(f3, f34));  // [3, 4] into [3]
  BAD_TENSOR("cast", tsr_cast(NULL, TSR_FLOAT32));
  BAD_TENSOR("cast", tsr_cast(f3, 99));
  BAD_TENSOR("cast", tsr_cast(f3, -1));
  BAD_TENSOR("cast", tsr_cast(f3, TSR_DTYPE_COUNT));

  BAD_TENSOR("unary", tsr_unary(NULL, TSR_UNARY_EXP, 0.0));
  BAD_TENSOR("unary", tsr_unary(f3, 99, 0.0));
  BAD_TENSOR("unary", tsr_unary(f3, -1, 0.0));
  BAD_TENSOR("unary", tsr_unary(i3, TSR_UNARY_EXP, 0.0));
  BAD_TENSOR("unary", tsr_unary(b3, TSR_UNARY_NEG, 0.0));
  BAD_TENSOR("unary", tsr_unary(f3, TSR_UNARY_LOGICAL_NOT, 0.0));
  BAD_STATUS("unary", TSR_INVALID_ARGUMENT, tsr_unary_out(NULL, f3, TSR_UNARY_EXP, 0.0));
  BAD_STATUS("unary", TSR_INVALID_ARGUMENT, tsr_unary_out(f3, NULL, TSR_UNARY_EXP, 0.0));
  BAD_STATUS("unary", TSR_INVALID_ARGUMENT, tsr_unary_out(f3, f4, TSR_UNARY_EXP, 0.0));
  BAD_STATUS("unary", TSR_OK, tsr_unary_out(d3, f3, TSR_UNARY_EXP, 0.0));  // dtypes differ
  BAD_TENSOR("unary_backward", tsr_unary_backward(NULL, f3, TSR_UNARY_EXP, 0.0));
  BAD_TENSOR("unary_backward", tsr_unary_backward(f3, NULL, TSR_UNARY_EXP, 0.0));
  BAD_TENSOR("unary_backward", tsr_unary_backward(d3, f3, TSR_UNARY_EXP, 0.0));
  BAD_TENSOR("unary_backward", tsr_unary_backward(f4, f3, TSR_UNARY_EXP, 0.0));
  BAD_TENSOR("unary_backward", tsr_unary_backward(f3, f3, TSR_UNARY_SIGN, 0.0));

  BAD_TENSOR("binary", tsr_add(NULL, f3));
  BAD_TENSOR("binary", tsr_add(f3, NULL));
  BAD_TENSOR("binary", tsr_add(f3, i3));   // float32 + int32
  BAD_TENSOR("binary", tsr_add(f3, d3));   // float32 + float64
  BAD_TENSOR("binary", tsr_add(f3, f4));   // [3] + [4]
  BAD_TENSOR("binary", tsr_add(f34, f3));  // [3, 4] + [3]
  BAD_TENSOR("binary", tsr_binary(f3, f3, 99, 1.0));
  BAD_TENSOR("binary", tsr_binary(f3, f3, TSR_BINARY_LOGICAL_AND, 1.0));
  BAD_TENSOR("binary", tsr_binary(i3, i3, TSR_BINARY_POW, 1.0));
  BAD_TENSOR("binary", tsr_binary(i3, i3, TSR_BINARY_ADD, 1.5));  // non-integral int alpha
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_binary_out(NULL, f3, f3, TSR_BINARY_ADD, 1.0));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_binary_out(f3, NULL, f3, TSR_BINARY_ADD, 1.0));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_binary_out(f4, f3, f3, TSR_BINARY_ADD, 1.0));
  BAD_STATUS("binary", TSR_INVALID_ARGUMENT, tsr_binary_out(f3, f34, f3, TSR_BINARY_ADD, 1.0));
  BAD_STATUS("binary", TSR_OK, tsr_binary_out(d3, f3, f3, TSR_BINARY_ADD, 1.0));

  BAD_TENSOR("compare", tsr_compare(NULL, f3, TSR_COMPARE_EQ));
  BAD_TENSOR("compare", tsr_compare(f3, NULL, TSR_COMPARE_EQ));
  BAD_TENSOR("compare", tsr_compare(f3, i3, TSR_COMPARE_EQ));
  BAD_TENSOR("compare", tsr_compare(f3, f4, TSR_COMPARE_EQ));
  BAD_TENSOR("compare", tsr_compare(f3, f3, 42));
  BAD_TENSOR("compare", tsr_compare(f3, f3, -1));

  BAD_TENSOR("where", tsr_where(NULL, f3, f3));
  BAD_TENSOR("where", tsr_where(b3, NULL, f3));
  BAD_TENSOR("where", tsr_where(b3, f3, NULL));
  BAD_TENSOR("where", tsr_where(f3, f3, f3));  // cond not bool
  BAD_TENSOR("where", tsr_where(b3, f3, i3));  // a and b differ
  BAD_TENSOR("where", tsr_where(b3, f4, f4));  // [3] cond with [4] values

  BAD_TENSOR("clamp", tsr_clamp(NULL, 1, 0.0, 1, 1.0));
  BAD_TENSOR("clamp", tsr_clamp(b3, 1, 0.0, 1, 1.0));  // float and int only

  tsr_tensor_release(b3);
  tsr_tensor_release(d3);
  tsr_tensor_release(i3);
  tsr_tensor_release(f34);
  tsr_tensor_release(f4);
  tsr_tensor_release(f3);
  end("elementwise");
}

static void test_reductions_refuse_bad_axes_dtypes_and_empty_axes(void **state) {
  (void)state;
  begin();
  const int64_t s234[3] = {2, 3, 4}, s03[2] = {0, 3};
  tsr_tensor *x = make_f32(g_ref, 3, s234);
  tsr_tensor *xi = make_dtype(g_ref, TSR_INT32, 3, s234);
  tsr_tensor *xb = make_dtype(g_ref, TSR_BOOL, 3, s234);
  tsr_tensor *empty = tsr_tensor_empty(g_ref, TSR_FLOAT32, 2, s03);
  TS_ASSERT_TENSOR(empty);
  double one = 1.0;
  tsr_tensor *scalar = ts_tensor(g_ref, TSR_FLOAT32, 0, NULL, &one);
  TS_ASSERT_TENSOR(scalar);
  const int32_t a3[1] = {3}, am4[1] = {-4}, rep[2] = {0, 0}, rep_neg[2] = {2, -1},
                a0[1] = {0}, big[1] = {INT32_MAX}, small[1] = {INT32_MIN};
  BAD_TENSOR("reduce", tsr_reduce(NULL, TSR_REDUCE_SUM, 0, NULL, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 1, a3, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 1, am4, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 1, big, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 1, small, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 2, rep, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 2, rep_neg, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, -1, a0, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 2, NULL, 0));
  const int32_t nine_axes[9] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  BAD_TENSOR("reduce", tsr_reduce(x, TSR_REDUCE_SUM, 9, nine_axes, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, 99, 1, a0, 0));
  BAD_TENSOR("reduce", tsr_reduce(x, -1, 1, a0, 0));
  BAD_TENSOR("reduce", tsr_reduce(xi, TSR_REDUCE_MEAN, 1, a0, 0));  // MEAN is float only
  BAD_TENSOR("reduce", tsr_reduce(empty, TSR_REDUCE_MAX, 1, a0, 0));
  BAD_TENSOR("reduce", tsr_reduce(empty, TSR_REDUCE_MIN, 0, NULL, 1));
  BAD_TENSOR("reduce", tsr_reduce(scalar, TSR_REDUCE_SUM, 1, a0, 0));  // rank 0 has no axis 0

  BAD_TENSOR("arg_reduce", tsr_arg_reduce(NULL, TSR_ARG_REDUCE_ARGMAX, 0, 0));
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(x, TSR_ARG_REDUCE_ARGMAX, 3, 0));
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(x, TSR_ARG_REDUCE_ARGMAX, -4, 0));
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(x, TSR_ARG_REDUCE_ARGMAX, INT32_MIN, 0));
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(x, 5, 0, 0));
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(x, -1, 0, 0));
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(xb, TSR_ARG_REDUCE_ARGMAX, 0, 0));  // float and int
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(empty, TSR_ARG_REDUCE_ARGMIN, 0, 1));
  BAD_TENSOR("arg_reduce", tsr_arg_reduce(scalar, TSR_ARG_REDUCE_ARGMAX, 0, 0));
  tsr_tensor_release(scalar);
  tsr_tensor_release(empty);
  tsr_tensor_release(xb);
  tsr_tensor_release(xi);
  tsr_tensor_release(x);
  end("reduction");
}

static void test_matmul_refuses_bad_ranks_shapes_dtypes_and_activations(void **state) {
  (void)state;
  begin();
  const int64_t s34[2] = {3, 4}, s45[2] = {4, 5}, s55[2] = {5, 5}, s234[3] = {2, 3, 4},
                s345[3] = {3, 4, 5}, s7[1] = {7}, s5[1] = {5}, s3[1] = {3};
  tsr_tensor *a = make_f32(g_ref, 2, s34), *b = make_f32(g_ref, 2, s45);
  tsr_tensor *c = make_f32(g_ref, 2, s55);
  tsr_tensor *ba = make_f32(g_ref, 3, s234), *bb = make_f32(g_ref, 3, s345);
  tsr_tensor *bias7 = make_f32(g_ref, 1, s7), *bias5 = make_f32(g_ref, 1, s5);
  tsr_tensor *bias5d = make_dtype(g_ref, TSR_FLOAT64, 1, s5);
  tsr_tensor *ai = make_dtype(g_ref, TSR_INT32, 2, s34), *bi = make_dtype(g_ref, TSR_INT32, 2, s45);
  tsr_tensor *bd = make_dtype(g_ref, TSR_FLOAT64, 2, s45);
  tsr_tensor *v3 = make_f32(g_ref, 1, s3);
  double one = 1.0;
  tsr_tensor *scalar = ts_tensor(g_ref, TSR_FLOAT32, 0, NULL, &one);
  TS_ASSERT_TENSOR(scalar);
  BAD_TENSOR("matmul", tsr_matmul(NULL, b));
  BAD_TENSOR("matmul", tsr_matmul(a, NULL));
  BAD_TENSOR("matmul", tsr_matmul(scalar, b));
  BAD_TENSOR("matmul", tsr_matmul(a, scalar));
  BAD_TENSOR("matmul", tsr_matmul(a, c));     // [3,4] @ [5,5]
  BAD_TENSOR("matmul", tsr_matmul(a, v3));    // [3,4] @ [3]
  BAD_TENSOR("matmul", tsr_matmul(v3, b));    // [3] @ [4,5]
  BAD_TENSOR("matmul", tsr_matmul(ba, bb));   // batch 2 vs 3
  BAD_TENSOR("matmul", tsr_matmul(a, bd));    // float32 @ float64
  BAD_TENSOR("matmul", tsr_matmul(ai, bi));   // float only
  BAD_TENSOR("matmul", tsr_matmul_ex(a, b, bias7, TSR_ACTIVATION_NONE));  // [7] bias for N = 5
  BAD_TENSOR("matmul", tsr_matmul_ex(a, b, bias5d, TSR_ACTIVATION_NONE)); // bias dtype
  BAD_TENSOR("matmul", tsr_matmul_ex(a, b, bias5, 99));
  BAD_TENSOR("matmul", tsr_matmul_ex(a, b, bias5, -1));
  BAD_TENSOR("matmul", tsr_matmul_ex(a, b, NULL, TSR_ACTIVATION_COUNT));
  tsr_tensor_release(scalar);
  tsr_tensor_release(v3);
  tsr_tensor_release(bd);
  tsr_tensor_release(bi);
  tsr_tensor_release(ai);
  tsr_tensor_release(bias5d);
  tsr_tensor_release(bias5);
  tsr_tensor_release(bias7);
  tsr_tensor_release(bb);
  tsr_tensor_release(ba);
  tsr_tensor_release(c);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  end("matmul");
}

static void test_ops_refuse_tensors_from_two_devices(void **state) {
  (void)state;
  begin();
  const int64_t sizes[2] = {2, 2};
  tsr_tensor *r = make_f32(g_ref, 2, sizes), *a = make_f32(g_async, 2, sizes);
  tsr_tensor *rb = make_dtype(g_ref, TSR_BOOL, 2, sizes);
  tsr_tensor *ab = make_dtype(g_async, TSR_BOOL, 2, sizes);
  BAD_TENSOR("two devices", tsr_add(r, a));
  BAD_TENSOR("two devices", tsr_add(a, r));
  BAD_STATUS("two devices", TSR_INVALID_ARGUMENT, tsr_binary_out(r, r, a, TSR_BINARY_MUL, 1.0));
  BAD_STATUS("two devices", TSR_INVALID_ARGUMENT, tsr_binary_out(a, a, r, TSR_BINARY_MUL, 1.0));
  BAD_STATUS("two devices", TSR_INVALID_ARGUMENT, tsr_copy_(r, a));
  BAD_STATUS("two devices", TSR_INVALID_ARGUMENT, tsr_unary_out(a, r, TSR_UNARY_EXP, 0.0));
  BAD_TENSOR("two devices", tsr_compare(r, a, TSR_COMPARE_LT));
  BAD_TENSOR("two devices", tsr_where(rb, a, a));
  BAD_TENSOR("two devices", tsr_where(ab, r, a));
  BAD_TENSOR("two devices", tsr_matmul(r, a));
  BAD_TENSOR("two devices", tsr_matmul_ex(r, r, a, TSR_ACTIVATION_NONE));
  BAD_TENSOR("two devices", tsr_unary_backward(r, a, TSR_UNARY_EXP, 0.0));
  tsr_tensor *in[2] = {r, a}, *out[1] = {r};
  tsr_binary_attrs add = {sizeof(add), TSR_BINARY_ADD, 0, 1.0};
  BAD_STATUS("two devices", TSR_INVALID_ARGUMENT, tsr_op_run(TSR_OP_BINARY, 2, in, 1, out, &add));
  // The right way: move one first. The values must survive the trip.
  tsr_tensor *moved = tsr_tensor_to_device(a, g_ref);
  TS_ASSERT_TENSOR(moved);
  assert_true(tsr_tensor_device(moved) == g_ref);
  tsr_tensor *sum = tsr_add(r, moved);
  TS_ASSERT_TENSOR(sum);
  float got[4];
  TS_ASSERT_OK(tsr_tensor_to_host(sum, got, sizeof(got)));
  for (int i = 0; i < 4; ++i) assert_true(got[i] == 2.0f);
  tsr_tensor_release(sum);
  tsr_tensor_release(moved);
  tsr_tensor_release(ab);
  tsr_tensor_release(rb);
  tsr_tensor_release(a);
  tsr_tensor_release(r);
  end("two-device");
}

static void test_the_sticky_context_error_keeps_the_first_failure_until_cleared(void **state) {
  (void)state;
  tsr_context *c = g_context;
  tsr_context_error_clear(c);
  assert_int_equal(tsr_context_status(c), TSR_OK);
  assert_string_equal(tsr_context_error_message(c), "");
  const int64_t s3[1] = {3}, s4[1] = {4}, huge[1] = {1LL << 40};
  tsr_tensor *f3 = make_f32(g_ref, 1, s3), *f4 = make_f32(g_ref, 1, s4);
  // Successful work leaves it alone.
  tsr_tensor *ok = tsr_add(f3, f3);
  TS_ASSERT_TENSOR(ok);
  tsr_tensor_release(ok);
  assert_int_equal(tsr_context_status(c), TSR_OK);
  // The first failure sticks...
  assert_null(tsr_add(f3, f4));
  assert_int_equal(tsr_context_status(c), TSR_INVALID_ARGUMENT);
  char first[1024];
  snprintf(first, sizeof(first), "%s", tsr_context_error_message(c));
  assert_true(first[0] != '\0');
  assert_non_null(strstr(first, "binary"));
  // ...through later failures of another kind and later successes...
  assert_null(tsr_tensor_empty(g_ref, TSR_FLOAT32, 1, huge));
  assert_int_equal(tsr_last_status(), TSR_OUT_OF_MEMORY);
  ok = tsr_add(f3, f3);
  TS_ASSERT_TENSOR(ok);
  tsr_tensor_release(ok);
  assert_int_equal(tsr_context_status(c), TSR_INVALID_ARGUMENT);
  assert_string_equal(tsr_context_error_message(c), first);
  // ...across threads' last errors being cleared...
  tsr_last_error_clear();
  assert_int_equal(tsr_context_status(c), TSR_INVALID_ARGUMENT);
  // ...and errors on the context's other device.
  tsr_tensor *a3 = make_f32(g_async, 1, s3), *a4 = make_f32(g_async, 1, s4);
  assert_null(tsr_mul(a3, a4));
  assert_string_equal(tsr_context_error_message(c), first);
  // Until cleared; then the next failure is recorded.
  tsr_context_error_clear(c);
  assert_int_equal(tsr_context_status(c), TSR_OK);
  assert_string_equal(tsr_context_error_message(c), "");
  assert_null(tsr_tensor_empty(g_ref, TSR_FLOAT32, 1, huge));
  assert_int_equal(tsr_context_status(c), TSR_OUT_OF_MEMORY);
  assert_true(tsr_context_error_message(c)[0] != '\0');
  tsr_context_error_clear(c);
  // An error on the async device sticks too.
  assert_null(tsr_mul(a3, a4));
  assert_int_equal(tsr_context_status(c), TSR_INVALID_ARGUMENT);
  tsr_context_error_clear(c);
  tsr_tensor_release(a4);
  tsr_tensor_release(a3);
  tsr_tensor_release(f4);
  tsr_tensor_release(f3);
}

int main(void) {
  // TSR_TEST_FILTER / TSR_TEST_SKIP: cmocka glob patterns over test names.
  if (getenv("TSR_TEST_FILTER") != NULL) cmocka_set_test_filter(getenv("TSR_TEST_FILTER"));
  if (getenv("TSR_TEST_SKIP") != NULL) cmocka_set_skip_filter(getenv("TSR_TEST_SKIP"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_and_status_names_answer_for_any_value),
      cmocka_unit_test(test_context_create_rejects_bad_options_and_missing_devices),
      cmocka_unit_test(test_context_queries_refuse_null_and_out_of_range_arguments),
      cmocka_unit_test(test_device_queries_refuse_null_and_bad_arguments),
      cmocka_unit_test(test_streams_and_events_refuse_null_and_mismatched_arguments),
      cmocka_unit_test(test_tensor_constructors_refuse_bad_ranks_sizes_dtypes_and_overflow),
      cmocka_unit_test(test_a_huge_allocation_fails_with_out_of_memory_and_no_crash),
      cmocka_unit_test(test_tensor_to_host_and_to_device_refuse_bad_buffers),
      cmocka_unit_test(test_tensor_accessors_return_sentinels_for_null_and_out_of_range),
      cmocka_unit_test(test_views_refuse_bad_shapes_dims_and_steps),
      cmocka_unit_test(test_released_handles_are_refused_not_reused),
      cmocka_unit_test(test_op_run_refuses_unknown_ops_bad_operand_counts_and_absurd_attrs),
      cmocka_unit_test(test_elementwise_ops_refuse_null_mismatched_dtypes_and_shapes),
      cmocka_unit_test(test_reductions_refuse_bad_axes_dtypes_and_empty_axes),
      cmocka_unit_test(test_matmul_refuses_bad_ranks_shapes_dtypes_and_activations),
      cmocka_unit_test(test_ops_refuse_tensors_from_two_devices),
      cmocka_unit_test(test_the_sticky_context_error_keeps_the_first_failure_until_cleared),
  };
  return cmocka_run_group_tests_name("bad input", tests, group_setup, group_teardown);
}
