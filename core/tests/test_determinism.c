// Tests of the determinism switch (tsr_context_deterministic_set): while it
// is on, every plan is asked for with TSR_PLAN_REQUIRE_DETERMINISM, and a
// plan that cannot be bit-reproducible is refused; the fallback policy
// (allow / deny) then decides, as for an op the device lacks.
//
// The device is the nondet fixture (ref's kernels): its reduce refuses the
// flag with a reason, as the rule says; its matmul breaks the rule and
// returns a plan not marked deterministic, which the core must refuse.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tessera/tessera.h"

#ifdef TSR_TEST_NONDET_PLUGIN
#define NONDET TSR_TEST_NONDET_PLUGIN
#else
#define NONDET NULL
#endif

#include "test_check.h"

// ---------------------------------------------------------------------------
// Helpers.

static tsr_context *context_new(tsr_fallback_policy_t policy) {
  static char path[8192];
  snprintf(path, sizeof(path), "%s:%s", REF, NONDET);
  return test_context_on(path, "nondet:0", policy);
}

static uint64_t fallback_ops(const tsr_context *context) {
  return test_fallback_stats(context).ops;
}

static void message_mentions(const char *message, const char *needle) {
  if (strstr(message, needle) == NULL) {
    fail_msg("the message '%s' does not mention '%s'", message, needle);
  }
}

// The two ops under test on |device|: the sum of [1..6] and
// [[1,2],[3,4]] @ [[5,6],[7,8]]. Writes the results; returns NULL or the
// failing call's status and message.
typedef struct op_result {
  tsr_tensor *out;
  tsr_status status;
  char message[1024];
} op_result;

static op_result sum_run(tsr_device *device) {
  tsr_tensor *x = test_floats(device, 1, (int64_t[]){6}, (float[]){1, 2, 3, 4, 5, 6});
  op_result r;
  tsr_last_error_clear();
  r.out = tsr_reduce(x, TSR_REDUCE_SUM, 0, NULL, 0);
  r.status = tsr_last_status();
  snprintf(r.message, sizeof(r.message), "%s", tsr_last_error());
  tsr_tensor_release(x);
  return r;
}

static op_result matmul_run(tsr_device *device) {
  tsr_tensor *a = test_floats(device, 2, (int64_t[]){2, 2}, (float[]){1, 2, 3, 4});
  tsr_tensor *b = test_floats(device, 2, (int64_t[]){2, 2}, (float[]){5, 6, 7, 8});
  op_result r;
  tsr_last_error_clear();
  r.out = tsr_matmul(a, b);
  r.status = tsr_last_status();
  snprintf(r.message, sizeof(r.message), "%s", tsr_last_error());
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  return r;
}

static void values_are(const op_result *r, tsr_device *device, int64_t n, const float *want) {
  if (r->out == NULL) fail_msg("the op failed: %s: %s", tsr_status_name(r->status), r->message);
  assert_ptr_equal(tsr_tensor_device(r->out), device);
  float got[8];
  assert_int_equal(tsr_tensor_numel(r->out), n);
  CHECK_OK(tsr_tensor_to_host(r->out, got, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) fail_msg("element %lld is %g, expected %g", (long long)i, got[i], want[i]);
  }
}

// A refused op under the deny policy: no result, TSR_UNSUPPORTED, and a
// message naming the op and device, the reason, and the policy.
static void expect_denied(const op_result *r, const char *op_on_device, const char *reason) {
  if (r->out != NULL) fail_msg("%s ran although its plan must be refused", op_on_device);
  assert_int_equal(r->status, TSR_UNSUPPORTED);
  message_mentions(r->message, op_on_device);
  message_mentions(r->message, reason);
  message_mentions(r->message, "denied");
}

static const float k_sum[1] = {21};
static const float k_product[4] = {19, 22, 43, 50};

// Both ops run on the device itself, with the right values, no fallback.
static void both_run_on_the_device(tsr_context *context, tsr_device *device) {
  op_result sum = sum_run(device), product = matmul_run(device);
  values_are(&sum, device, 1, k_sum);
  values_are(&product, device, 4, k_product);
  assert_int_equal(fallback_ops(context), 0);
  tsr_tensor_release(product.out);
  tsr_tensor_release(sum.out);
}

// ---------------------------------------------------------------------------
// Tests.

// Off (the default): the fixture runs both ops itself, whatever its plans
// claim about reproducibility.
static void test_with_the_switch_off_the_device_runs_plans_not_marked_deterministic(
    void **state) {
  (void)state;
  tsr_context *context = context_new(TSR_FALLBACK_DENY);
  tsr_device *device = tsr_context_default_device(context);
  assert_int_equal(tsr_context_deterministic(context), 0);
  both_run_on_the_device(context, device);
  tsr_context_destroy(context);
}

// On, under deny: the fixture's refusal (reduce) and the core's (matmul)
// are errors that say why; ops whose plans are deterministic still run on
// the device; switching off again brings the fixture's plans back.
static void test_with_the_switch_on_and_fallback_denied_both_plans_are_refused_with_the_reason(
    void **state) {
  (void)state;
  tsr_context *context = context_new(TSR_FALLBACK_DENY);
  tsr_device *device = tsr_context_default_device(context);
  CHECK_OK(tsr_context_deterministic_set(context, 1));

  op_result sum = sum_run(device);
  expect_denied(&sum, "reduce on nondet:0", "refused under TSR_PLAN_REQUIRE_DETERMINISM");
  tsr_context_error_clear(context);
  op_result product = matmul_run(device);
  expect_denied(&product, "matmul on nondet:0", "not marked bit-reproducible");
  tsr_context_error_clear(context);

  // Addition's plans are ref's, marked deterministic: no refusal.
  tsr_tensor *a = test_floats(device, 1, (int64_t[]){2}, (float[]){1, 2});
  tsr_tensor *c = tsr_add(a, a);
  CHECK_TENSOR(c);
  tsr_tensor_release(c);
  tsr_tensor_release(a);

  CHECK_OK(tsr_context_deterministic_set(context, 0));
  both_run_on_the_device(context, device);
  tsr_context_destroy(context);
}

// On, under allow: both ops run on ref instead, with the right values, and
// the results come back to the device.
static void test_with_the_switch_on_and_fallback_allowed_refused_plans_run_on_ref(void **state) {
  (void)state;
  tsr_context *context = context_new(TSR_FALLBACK_ALLOW);
  tsr_device *device = tsr_context_default_device(context);
  CHECK_OK(tsr_context_deterministic_set(context, 1));
  op_result sum = sum_run(device);
  values_are(&sum, device, 1, k_sum);
  assert_int_equal(fallback_ops(context), 1);
  op_result product = matmul_run(device);
  values_are(&product, device, 4, k_product);
  assert_int_equal(fallback_ops(context), 2);
  // Refusals are cached like any plan: the same calls again fall back again
  // without asking the plugin, and count.
  tsr_tensor_release(sum_run(device).out);
  assert_int_equal(fallback_ops(context), 3);
  tsr_tensor_release(product.out);
  tsr_tensor_release(sum.out);
  tsr_context_destroy(context);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(
          test_with_the_switch_off_the_device_runs_plans_not_marked_deterministic),
      cmocka_unit_test(
          test_with_the_switch_on_and_fallback_denied_both_plans_are_refused_with_the_reason),
      cmocka_unit_test(test_with_the_switch_on_and_fallback_allowed_refused_plans_run_on_ref),
  };
  if (REF == NULL || NONDET == NULL) {
    printf("skipped: the ref plugin or the nondet fixture is not built\n");
    return SKIP_CODE;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
