// The context's random-number state (seed, offsets, checkpointing) and the
// determinism switch, which must reach every plan as
// TSR_PLAN_REQUIRE_DETERMINISM.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "test_support.h"

static tsr_context *g_ctx;
static tsr_device *g_dev;

static int group_setup(void **state) {
  (void)state;
  g_ctx = ts_context_create(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE);
  if (g_ctx == NULL)
    return -1;
  g_dev = tsr_context_device_find(g_ctx, TSR_TEST_DEVICE);
  return g_dev ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_ctx);
  return 0;
}

static void read_floats(tsr_tensor *t, float *out, size_t n) {
  assert_non_null(t);
  assert_int_equal(tsr_tensor_to_host(t, out, n * sizeof(float)), TSR_OK);
  tsr_tensor_release(t);
}

static void test_a_seed_and_an_offset_give_the_same_numbers_again(void **state) {
  (void)state;
  int64_t sizes[1] = {256};
  float a[256], b[256], c[256];
  assert_int_equal(tsr_context_seed_set(g_ctx, 7), TSR_OK);
  assert_int_equal(tsr_context_seed(g_ctx), 7);
  assert_int_equal(tsr_context_rng_offset(g_ctx), 0);
  read_floats(tsr_randn(g_dev, TSR_FLOAT32, 1, sizes, 0, 1), a, 256);
  // Each random tensor claims its numel of counters.
  assert_int_equal(tsr_context_rng_offset(g_ctx), 256);
  read_floats(tsr_randn(g_dev, TSR_FLOAT32, 1, sizes, 0, 1), b, 256);
  assert_memory_not_equal(a, b, sizeof(a));
  // Restoring the offset (a checkpoint) replays the second draw.
  assert_int_equal(tsr_context_rng_offset_set(g_ctx, 256), TSR_OK);
  read_floats(tsr_randn(g_dev, TSR_FLOAT32, 1, sizes, 0, 1), c, 256);
  assert_memory_equal(b, c, sizeof(b));
  // Re-seeding restarts the stream.
  assert_int_equal(tsr_context_seed_set(g_ctx, 7), TSR_OK);
  read_floats(tsr_randn(g_dev, TSR_FLOAT32, 1, sizes, 0, 1), c, 256);
  assert_memory_equal(a, c, sizeof(a));
  assert_int_equal(tsr_context_seed_set(g_ctx, 8), TSR_OK);
  read_floats(tsr_randn(g_dev, TSR_FLOAT32, 1, sizes, 0, 1), c, 256);
  assert_memory_not_equal(a, c, sizeof(a));
  // Claims are atomic and contiguous.
  uint64_t first = tsr_context_rng_claim(g_ctx, 10);
  assert_int_equal(tsr_context_rng_claim(g_ctx, 5), first + 10);
}

static void test_the_numbers_do_not_depend_on_the_device(void **state) {
  (void)state;
  tsr_device *ref = tsr_context_device_find(g_ctx, "ref");
  if (ref == NULL || ref == g_dev)
    skip();  // one device: nothing to compare
  int64_t sizes[2] = {16, 8};
  float a[128], b[128];
  assert_int_equal(tsr_context_seed_set(g_ctx, 99), TSR_OK);
  read_floats(tsr_rand(g_dev, TSR_FLOAT32, 2, sizes, -1, 1), a, 128);
  assert_int_equal(tsr_context_seed_set(g_ctx, 99), TSR_OK);
  read_floats(tsr_rand(ref, TSR_FLOAT32, 2, sizes, -1, 1), b, 128);
  assert_memory_equal(a, b, sizeof(a));
}

static void test_the_determinism_switch_reaches_the_plans(void **state) {
  (void)state;
  assert_false(tsr_context_deterministic(g_ctx));
  int64_t sizes[2] = {64, 64};
  tsr_tensor *a = tsr_tensor_full(g_dev, TSR_FLOAT32, 2, sizes, 0.5);
  tsr_tensor *b = tsr_tensor_full(g_dev, TSR_FLOAT32, 2, sizes, 0.25);
  tsr_plan_cache_stats before = {.struct_size = sizeof(before)};
  tsr_plan_cache_stats after = {.struct_size = sizeof(after)};
  tsr_tensor_release(tsr_matmul(a, b));
  assert_int_equal(tsr_device_plan_cache_stats_get(g_dev, &before), TSR_OK);
  tsr_tensor_release(tsr_matmul(a, b));  // same plan: a hit
  assert_int_equal(tsr_device_plan_cache_stats_get(g_dev, &after), TSR_OK);
  assert_int_equal(after.misses, before.misses);
  // The flag is part of the plan's signature: a new plan, made under the
  // requirement (or refused by the plugin, which the policy reports).
  assert_int_equal(tsr_context_deterministic_set(g_ctx, 1), TSR_OK);
  assert_true(tsr_context_deterministic(g_ctx));
  tsr_tensor *c1 = tsr_matmul(a, b);
  tsr_tensor *c2 = tsr_matmul(a, b);
  assert_int_equal(tsr_device_plan_cache_stats_get(g_dev, &after), TSR_OK);
  assert_int_equal(after.misses, before.misses + 1);
  float x[4096], y[4096];
  read_floats(c1, x, 4096);
  read_floats(c2, y, 4096);
  assert_memory_equal(x, y, sizeof(x));
  assert_true(x[0] == 8.0f);
  assert_int_equal(tsr_context_deterministic_set(g_ctx, 0), TSR_OK);
  assert_int_equal(tsr_context_deterministic_set(NULL, 1), TSR_INVALID_ARGUMENT);
  tsr_tensor_release(a);
  tsr_tensor_release(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_seed_and_an_offset_give_the_same_numbers_again),
      cmocka_unit_test(test_the_numbers_do_not_depend_on_the_device),
      cmocka_unit_test(test_the_determinism_switch_reaches_the_plans),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
