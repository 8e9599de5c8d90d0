// Tests of fallback: an op the device lacks runs on ref, copying operands
// there and back, under the context's policy (allow / warn once per op /
// deny), set by options, TSR_FALLBACK or tsr_context_fallback_policy_set.
// The device lacking ops is the partial fixture (fill, copy and cast only).
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tessera/tessera.h"

#ifdef TSR_TEST_PARTIAL_PLUGIN
#define PARTIAL TSR_TEST_PARTIAL_PLUGIN
#else
#define PARTIAL NULL
#endif

#include "test_check.h"


// ---------------------------------------------------------------------------
// Helpers.

static const char *both_plugins(void) {
  static char path[8192];
  snprintf(path, sizeof(path), "%s:%s", REF, PARTIAL);
  return path;
}

static tsr_context *context_new(const char *plugin_path, tsr_fallback_policy_t policy) {
  return test_context_on(plugin_path, "partial:0", policy);
}

static void values_equal(const tsr_tensor *t, int64_t n, const float *expected) {
  float got[64];
  assert_true(n <= 64);
  assert_int_equal(tsr_tensor_numel(t), n);
  CHECK_OK(tsr_tensor_to_host(t, got, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != expected[i]) {
      fail_msg("element %lld is %g, expected %g", (long long)i, (double)got[i],
               (double)expected[i]);
    }
  }
}

static void message_mentions(const char *message, const char *needle) {
  if (strstr(message, needle) == NULL) {
    fail_msg("the message '%s' does not mention '%s'", message, needle);
  }
}

// Runs a + b on |device| and checks the result.
static void add_falls_back(tsr_device *device) {
  tsr_tensor *a = test_floats(device, 1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
  tsr_tensor *b = test_floats(device, 1, (int64_t[]){4}, (float[]){10, 20, 30, 40});
  tsr_tensor *c = tsr_add(a, b);
  CHECK_TENSOR(c);
  assert_ptr_equal(tsr_tensor_device(c), device);
  values_equal(c, 4, (float[]){11, 22, 33, 44});
  tsr_tensor_release(c);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
}

// Expects a + b on |device| to be refused by the deny policy.
static void add_is_denied(tsr_device *device) {
  tsr_tensor *a = test_floats(device, 1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
  tsr_tensor *b = test_floats(device, 1, (int64_t[]){4}, (float[]){10, 20, 30, 40});
  tsr_last_error_clear();
  tsr_tensor *c = tsr_add(a, b);
  tsr_status status = tsr_last_status();
  char message[1024];
  snprintf(message, sizeof(message), "%s", tsr_last_error());
  tsr_tensor_release(c);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  if (c != NULL) fail_msg("add on %s ran although the policy denies fallback", tsr_device_name(device));
  assert_int_equal(status, TSR_UNSUPPORTED);
  message_mentions(message, "binary");
  message_mentions(message, "partial:0");
  message_mentions(message, "denied");
}

// Captures what is written to file descriptor 2 between begin and end.
typedef struct stderr_capture {
  int saved;
  FILE *file;
} stderr_capture;

// The capture in progress (one at a time), so that teardown restores stderr
// after a failed check inside one, and shows what was captured.
static stderr_capture g_capture;
static int g_capturing;

static void capture_begin(void) {
  stderr_capture *c = &g_capture;
  fflush(stderr);
  g_capturing = 1;
  c->file = tmpfile();
  assert_non_null(c->file);
  c->saved = dup(2);
  assert_true(c->saved >= 0);
  assert_true(dup2(fileno(c->file), 2) >= 0);
}

// Returns the captured text (malloc'd).
static char *capture_end(void) {
  stderr_capture *c = &g_capture;
  g_capturing = 0;
  fflush(stderr);
  dup2(c->saved, 2);
  close(c->saved);
  long size = ftell(c->file);
  if (size < 0) size = lseek(fileno(c->file), 0, SEEK_CUR);
  char *text = calloc(1, (size_t)(size > 0 ? size : 0) + 1);
  assert_non_null(text);
  rewind(c->file);
  lseek(fileno(c->file), 0, SEEK_SET);
  size_t n = fread(text, 1, (size_t)(size > 0 ? size : 0), c->file);
  text[n] = '\0';
  fclose(c->file);
  return text;
}

// Lines of |text| that contain both |a| and |b|.
static int lines_with(const char *text, const char *a, const char *b) {
  int count = 0;
  const char *line = text;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buffer[2048];
    size_t n = len < sizeof(buffer) - 1 ? len : sizeof(buffer) - 1;
    memcpy(buffer, line, n);
    buffer[n] = '\0';
    if (strstr(buffer, a) && strstr(buffer, b)) ++count;
    line += len;
    if (*line == '\n') ++line;
  }
  return count;
}

static int setup(void **state) {
  (void)state;
  unsetenv("TSR_FALLBACK");
  unsetenv("TSR_DEVICE");
  unsetenv("TSR_PLUGIN_PATH");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (g_capturing) {
    char *text = capture_end();
    fprintf(stderr, "stderr during the failed test:\n%s", text);
    free(text);
  }
  unsetenv("TSR_FALLBACK");
  return 0;
}

// ---------------------------------------------------------------------------
// Tests.

static void test_ops_partial_offers_run_on_partial_without_fallback(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_DENY);
  tsr_device *partial = tsr_context_default_device(context);
  tsr_tensor *t = tsr_tensor_full(partial, TSR_FLOAT32, 1, (int64_t[]){3}, 2.5);
  CHECK_TENSOR(t);
  tsr_tensor *d = tsr_cast(t, TSR_FLOAT64);
  CHECK_TENSOR(d);
  double got[3];
  CHECK_OK(tsr_tensor_to_host(d, got, sizeof(got)));
  assert_true(got[0] == 2.5 && got[2] == 2.5);
  tsr_fallback_stats stats = test_fallback_stats(context);
  assert_int_equal(stats.ops, 0);
  assert_int_equal(stats.copies, 0);
  assert_int_equal(stats.refusals, 0);
  // And it says which ops it lacks.
  assert_int_equal(tsr_device_op_supported(partial, TSR_OP_BINARY, TSR_FLOAT32), TSR_UNSUPPORTED);
  message_mentions(tsr_last_error(), "binary");
  assert_int_equal(tsr_device_op_supported(partial, TSR_OP_FILL, TSR_FLOAT32), TSR_OK);
  tsr_tensor_release(d);
  tsr_tensor_release(t);
  tsr_context_destroy(context);
}

static void test_add_on_partial_falls_back_to_ref_silently_under_allow(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_ALLOW);
  tsr_device *partial = tsr_context_default_device(context);
  capture_begin();
  add_falls_back(partial);
  char *log = capture_end();
  tsr_fallback_stats stats = test_fallback_stats(context);
  int warnings = lines_with(log, "partial:0", "binary");
  char copy[512];
  snprintf(copy, sizeof(copy), "%s", log);
  free(log);
  assert_int_equal(stats.ops, 1);
  // a and b to ref, the result back (and perhaps the output's old contents to ref).
  if (stats.copies < 3 || stats.copies > 4) {
    fail_msg("%llu copies counted for one fallback add", (unsigned long long)stats.copies);
  }
  assert_int_equal(stats.refusals, 0);
  if (warnings != 0) fail_msg("allow logged a fallback warning: %s", copy);
  uint64_t copies = stats.copies;
  add_falls_back(partial);
  stats = test_fallback_stats(context);
  assert_int_equal(stats.ops, 2);
  assert_int_equal(stats.copies, 2 * copies);
  tsr_context_destroy(context);
}

static void test_fallback_under_warn_runs_and_warns_once_per_op(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_WARN);
  tsr_device *partial = tsr_context_default_device(context);
  capture_begin();
  add_falls_back(partial);
  add_falls_back(partial);
  tsr_tensor *x = tsr_tensor_from_host(partial, TSR_FLOAT32, 1, (int64_t[]){2}, (float[]){1, -2});
  tsr_tensor *n1 = x ? tsr_neg(x) : NULL;
  tsr_tensor *n2 = x ? tsr_neg(x) : NULL;
  char *log = capture_end();
  int binary_warnings = lines_with(log, "partial:0", "binary");
  int unary_warnings = lines_with(log, "partial:0", "unary");
  char copy[1024];
  snprintf(copy, sizeof(copy), "%s", log);
  free(log);
  CHECK_TENSOR(x);
  CHECK_TENSOR(n1);
  CHECK_TENSOR(n2);
  values_equal(n2, 2, (float[]){-1, 2});
  tsr_fallback_stats stats = test_fallback_stats(context);
  tsr_tensor_release(n2);
  tsr_tensor_release(n1);
  tsr_tensor_release(x);
  tsr_context_destroy(context);
  assert_int_equal(stats.ops, 4);
  if (binary_warnings != 1 || unary_warnings != 1) {
    fail_msg("expected one warning for binary and one for unary, got %d and %d in:\n%s",
             binary_warnings, unary_warnings, copy);
  }
}

static void test_fallback_under_deny_is_refused_with_the_op_and_policy_named(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_DENY);
  tsr_device *partial = tsr_context_default_device(context);
  add_is_denied(partial);
  tsr_fallback_stats stats = test_fallback_stats(context);
  assert_int_equal(stats.refusals, 1);
  assert_int_equal(stats.ops, 0);
  assert_int_equal(stats.copies, 0);
  // The refusal is the context's sticky error.
  assert_int_equal(tsr_context_status(context), TSR_UNSUPPORTED);
  message_mentions(tsr_context_error_message(context), "binary");
  tsr_context_error_clear(context);
  // tsr_binary_out is refused the same way, and counted.
  tsr_tensor *a = test_floats(partial, 1, (int64_t[]){2}, (float[]){1, 2});
  assert_int_equal(tsr_binary_out(a, a, a, TSR_BINARY_MUL, 1.0), TSR_UNSUPPORTED);
  values_equal(a, 2, (float[]){1, 2});
  tsr_tensor_release(a);
  assert_int_equal(test_fallback_stats(context).refusals, 2);
  tsr_context_destroy(context);
}

static void test_fallback_without_a_ref_plugin_fails_with_a_clear_message(void **state) {
  (void)state;
  tsr_context *context = context_new(PARTIAL, TSR_FALLBACK_ALLOW);
  tsr_device *partial = tsr_context_default_device(context);
  assert_null(tsr_context_device_find(context, "ref"));
  tsr_tensor *a = test_floats(partial, 1, (int64_t[]){2}, (float[]){1, 2});
  tsr_last_error_clear();
  tsr_tensor *c = tsr_add(a, a);
  tsr_status status = tsr_last_status();
  char message[1024];
  snprintf(message, sizeof(message), "%s", tsr_last_error());
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  tsr_fallback_stats stats = test_fallback_stats(context);
  tsr_context_destroy(context);
  assert_null(c);
  assert_int_equal(status, TSR_UNSUPPORTED);
  message_mentions(message, "binary");
  message_mentions(message, "partial:0");
  message_mentions(message, "no ref device");
  assert_int_equal(stats.ops, 0);
}

static void test_TSR_FALLBACK_sets_the_policy_when_the_options_do_not(void **state) {
  (void)state;
  setenv("TSR_FALLBACK", "deny", 1);
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_DEFAULT);
  add_is_denied(tsr_context_default_device(context));
  tsr_context_destroy(context);

  setenv("TSR_FALLBACK", "ALLOW", 1);
  context = context_new(both_plugins(), TSR_FALLBACK_DEFAULT);
  capture_begin();
  add_falls_back(tsr_context_default_device(context));
  char *log = capture_end();
  int warnings = lines_with(log, "partial:0", "binary");
  free(log);
  tsr_context_destroy(context);
  assert_int_equal(warnings, 0);

  // An explicit option wins over the environment.
  setenv("TSR_FALLBACK", "deny", 1);
  context = context_new(both_plugins(), TSR_FALLBACK_ALLOW);
  add_falls_back(tsr_context_default_device(context));
  tsr_context_destroy(context);
  unsetenv("TSR_FALLBACK");
}

static void test_fallback_policy_set_changes_a_live_context(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_ALLOW);
  tsr_device *partial = tsr_context_default_device(context);
  add_falls_back(partial);
  CHECK_OK(tsr_context_fallback_policy_set(context, TSR_FALLBACK_DENY));
  add_is_denied(partial);
  tsr_context_error_clear(context);
  CHECK_OK(tsr_context_fallback_policy_set(context, TSR_FALLBACK_ALLOW));
  add_falls_back(partial);
  tsr_fallback_stats stats = test_fallback_stats(context);
  assert_int_equal(stats.ops, 2);
  assert_int_equal(stats.refusals, 1);
  assert_int_equal(tsr_context_fallback_policy_set(context, 5), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_context_fallback_policy_set(NULL, TSR_FALLBACK_DENY), TSR_INVALID_ARGUMENT);
  add_falls_back(partial);  // the refused call changed nothing
  tsr_context_destroy(context);
}

static void test_in_place_fallback_writes_into_the_aliased_input(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_ALLOW);
  tsr_device *partial = tsr_context_default_device(context);
  tsr_tensor *a = test_floats(partial, 1, (int64_t[]){3}, (float[]){1, 2, 3});
  tsr_tensor *b = test_floats(partial, 1, (int64_t[]){3}, (float[]){10, 20, 30});
  uint64_t version = tsr_tensor_storage_version(a);
  CHECK_OK(tsr_binary_out(a, a, b, TSR_BINARY_ADD, 1.0));
  values_equal(a, 3, (float[]){11, 22, 33});
  values_equal(b, 3, (float[]){10, 20, 30});
  assert_true(tsr_tensor_storage_version(a) > version);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  tsr_context_destroy(context);
}

static void test_fallback_keeps_the_offsets_and_strides_of_views(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_ALLOW);
  tsr_device *partial = tsr_context_default_device(context);
  tsr_tensor *a = test_floats(partial, 2, (int64_t[]){2, 3}, (float[]){0, 1, 2, 3, 4, 5});
  tsr_tensor *at = tsr_transpose(a, 0, 1);  // [3, 2]: 0 3 / 1 4 / 2 5
  CHECK_TENSOR(at);
  tsr_tensor *rows = tsr_slice(at, 0, 1, 3, 1);  // 1 4 / 2 5, offset 1
  CHECK_TENSOR(rows);
  tsr_tensor *b = test_floats(partial, 2, (int64_t[]){2, 2}, (float[]){100, 100, 100, 100});
  // The output is a view into a larger tensor whose other elements must survive.
  tsr_tensor *big = test_floats(partial, 2, (int64_t[]){3, 2}, (float[]){-1, -2, -3, -4, -5, -6});
  tsr_tensor *out = tsr_slice(big, 0, 1, 3, 1);
  CHECK_TENSOR(out);
  CHECK_OK(tsr_binary_out(out, rows, b, TSR_BINARY_ADD, 1.0));
  values_equal(big, 6, (float[]){-1, -2, 101, 104, 102, 105});
  values_equal(a, 6, (float[]){0, 1, 2, 3, 4, 5});
  tsr_tensor *release[] = {out, big, b, rows, at, a};
  for (size_t i = 0; i < sizeof(release) / sizeof(release[0]); ++i) tsr_tensor_release(release[i]);
  tsr_context_destroy(context);
}

static void test_each_context_applies_its_own_fallback_policy(void **state) {
  (void)state;
  tsr_context *allowing = context_new(both_plugins(), TSR_FALLBACK_ALLOW);
  tsr_context *denying = context_new(both_plugins(), TSR_FALLBACK_DENY);
  tsr_device *partial = tsr_context_default_device(denying);
  tsr_tensor *a = test_floats(partial, 1, (int64_t[]){2}, (float[]){1, 2});
  tsr_tensor *c = tsr_add(a, a);
  tsr_fallback_stats denied = test_fallback_stats(denying);
  tsr_fallback_stats allowed = test_fallback_stats(allowing);
  tsr_tensor_release(c);
  tsr_tensor_release(a);
  tsr_context_destroy(denying);
  tsr_context_destroy(allowing);
  if (c != NULL) {
    fail_msg("an add on the denying context's device fell back (the allowing context's policy "
             "was applied; its stats: %llu ops)",
             (unsigned long long)allowed.ops);
  }
  assert_int_equal(denied.refusals, 1);
  assert_int_equal(allowed.ops, 0);
}

static void test_fallback_stats_get_checks_its_arguments(void **state) {
  (void)state;
  tsr_context *context = context_new(both_plugins(), TSR_FALLBACK_ALLOW);
  tsr_fallback_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = 8;
  assert_int_equal(tsr_context_fallback_stats_get(context, &stats), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_context_fallback_stats_get(context, NULL), TSR_INVALID_ARGUMENT);
  tsr_context_destroy(context);
}

int main(void) {
  if (REF == NULL || PARTIAL == NULL) {
    fprintf(stderr, "test_fallback: skipped: %s is not built\n",
            REF == NULL ? "tessera-ref" : "the partial fixture (tessera-partial)");
    return SKIP_CODE;
  }
  unsetenv("TSR_LOG_LEVEL");  // warnings must reach stderr
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_ops_partial_offers_run_on_partial_without_fallback),
      T(test_add_on_partial_falls_back_to_ref_silently_under_allow),
      T(test_fallback_under_warn_runs_and_warns_once_per_op),
      T(test_fallback_under_deny_is_refused_with_the_op_and_policy_named),
      T(test_fallback_without_a_ref_plugin_fails_with_a_clear_message),
      T(test_TSR_FALLBACK_sets_the_policy_when_the_options_do_not),
      T(test_fallback_policy_set_changes_a_live_context),
      T(test_in_place_fallback_writes_into_the_aliased_input),
      T(test_fallback_keeps_the_offsets_and_strides_of_views),
      T(test_each_context_applies_its_own_fallback_policy),
      T(test_fallback_stats_get_checks_its_arguments),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
