// COMPARE, WHERE and CLAMP against the conformance oracle's rules: every fn
// and dtype, NaN rules, broadcasting and refusals.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "oracle/oracle.h"
#include "test_host.h"
#include "test_util.h"

// Floats first (4), then int32, int64 (numbers: 6), then bool.
static const tsr_dtype_t k_dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16,
                                       TSR_INT32,   TSR_INT64,   TSR_BOOL};

static void test_compare_every_fn_and_dtype_broadcasts_and_writes_bool(void **state) {
  (void)state;
  const int64_t out_sizes[] = {5, 8};
  const int64_t a_sizes[] = {5, 1};
  for (size_t d = 0; d < 7; ++d) {
    for (tsr_compare_fn_t fn = 0; fn < TSR_COMPARE_FN_COUNT; ++fn) {
      tt_tensor a, b, out;
      tt_tensor_make(&a, k_dtypes[d], 2, a_sizes, NULL, 0);
      tt_tensor_make(&b, k_dtypes[d], 2, out_sizes, NULL, 0);
      tt_tensor_make(&out, TSR_BOOL, 2, out_sizes, NULL, 0);
      tt_fill(&a, 1 + d, -3, 3);
      tt_fill(&b, 2 + d, -3, 3);
      tsr_compare_attrs attrs = {sizeof(attrs), fn, 0};
      tt_tensor *in[] = {&a, &b};
      tt_tensor *outs[] = {&out};
      assert_int_equal(tt_run(TSR_OP_COMPARE, &attrs, in, 2, outs, 1, NULL), TSR_OK);
      int64_t idx[2] = {0, 0};
      do {
        double want =
            tsr_oracle_compare_value(fn, tt_get_broadcast(&a, idx), tt_get_broadcast(&b, idx));
        assert_true(tt_get(&out, idx) == want);
      } while (tt_index_next(idx, 2, out_sizes));
      tt_tensor_free(&a);
      tt_tensor_free(&b);
      tt_tensor_free(&out);
    }
  }
}

static void test_compare_with_nan_is_false_except_not_equal(void **state) {
  (void)state;
  const int64_t sizes[] = {3};
  const double as[] = {NAN, 1, NAN};
  const double bs[] = {1, NAN, NAN};
  tt_tensor a, b, out;
  for (size_t d = 1; d < 4; ++d) {
    tt_tensor_make(&a, k_dtypes[d], 1, sizes, NULL, 0);
    tt_tensor_make(&b, k_dtypes[d], 1, sizes, NULL, 0);
    tt_tensor_make(&out, TSR_BOOL, 1, sizes, NULL, 0);
    for (int64_t i = 0; i < 3; ++i) {
      tt_set(&a, &i, as[i]);
      tt_set(&b, &i, bs[i]);
    }
    for (tsr_compare_fn_t fn = 0; fn < TSR_COMPARE_FN_COUNT; ++fn) {
      tsr_compare_attrs attrs = {sizeof(attrs), fn, 0};
      tt_tensor *in[] = {&a, &b};
      tt_tensor *outs[] = {&out};
      assert_int_equal(tt_run(TSR_OP_COMPARE, &attrs, in, 2, outs, 1, NULL), TSR_OK);
      for (int64_t i = 0; i < 3; ++i) assert_true(tt_get(&out, &i) == (fn == TSR_COMPARE_NE));
    }
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
  }
  tt_tensor_make(&a, TSR_FLOAT32, 1, sizes, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_BOOL, 1, sizes, NULL, 0);
  for (int64_t i = 0; i < 3; ++i) {
    tt_set(&a, &i, as[i]);
    tt_set(&b, &i, bs[i]);
  }
  for (tsr_compare_fn_t fn = 0; fn < TSR_COMPARE_FN_COUNT; ++fn) {
    tsr_compare_attrs attrs = {sizeof(attrs), fn, 0};
    tt_tensor *in[] = {&a, &b};
    tt_tensor *outs[] = {&out};
    assert_int_equal(tt_run(TSR_OP_COMPARE, &attrs, in, 2, outs, 1, NULL), TSR_OK);
    for (int64_t i = 0; i < 3; ++i) assert_true(tt_get(&out, &i) == (fn == TSR_COMPARE_NE));
  }
  // The output must be bool.
  tt_tensor wrong;
  tt_tensor_make(&wrong, TSR_FLOAT32, 1, sizes, NULL, 0);
  tsr_compare_attrs attrs = {sizeof(attrs), TSR_COMPARE_EQ, 0};
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&wrong};
  assert_int_equal(tt_supports(TSR_OP_COMPARE, &attrs, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "compare writes bool"));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
  tt_tensor_free(&wrong);
}

static void test_where_picks_a_or_b_for_every_dtype_with_broadcasting(void **state) {
  (void)state;
  const int64_t out_sizes[] = {3, 4, 5};
  const int64_t cond_sizes[] = {3, 4, 1};
  const int64_t a_sizes[] = {1, 4, 5};
  const int64_t b_strides[] = {0, 0, 1};  // b expanded from a row
  for (size_t d = 0; d < 7; ++d) {
    tt_tensor cond, a, b, out;
    tt_tensor_make(&cond, TSR_BOOL, 3, cond_sizes, NULL, 0);
    tt_tensor_make(&a, k_dtypes[d], 3, a_sizes, NULL, 0);
    tt_tensor_make(&b, k_dtypes[d], 3, out_sizes, b_strides, 0);
    tt_tensor_make(&out, k_dtypes[d], 3, out_sizes, NULL, 0);
    tt_fill(&cond, 40 + d, 0, 1);
    tt_fill(&a, 50 + d, -9, 9);
    tt_fill(&b, 60 + d, -9, 9);
    tt_tensor *in[] = {&cond, &a, &b};
    tt_tensor *outs[] = {&out};
    assert_int_equal(tt_run(TSR_OP_WHERE, NULL, in, 3, outs, 1, NULL), TSR_OK);
    int64_t idx[3] = {0, 0, 0};
    do {
      double want = tt_get_broadcast(&cond, idx) != 0 ? tt_get_broadcast(&a, idx)
                                                      : tt_get_broadcast(&b, idx);
      assert_true(tt_get(&out, idx) == want);
    } while (tt_index_next(idx, 3, out_sizes));
    tt_tensor_free(&cond);
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
  }
  // cond must be bool.
  tt_tensor cond, a, out;
  tt_tensor_make(&cond, TSR_INT32, 3, out_sizes, NULL, 0);
  tt_tensor_make(&a, TSR_INT32, 3, out_sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 3, out_sizes, NULL, 0);
  tt_tensor *in[] = {&cond, &a, &a};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_WHERE, NULL, in, 3, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "cond"));
  tt_tensor_free(&cond);
  tt_tensor_free(&a);
  tt_tensor_free(&out);
}

static void test_clamp_applies_the_bounds_present_and_keeps_nan(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 6};
  const tsr_clamp_attrs cases[] = {
      {sizeof(tsr_clamp_attrs), -1.5, 2.5, 1, 1}, {sizeof(tsr_clamp_attrs), -1.5, 0, 1, 0},
      {sizeof(tsr_clamp_attrs), 0, 2.5, 0, 1},    {sizeof(tsr_clamp_attrs), 3, -3, 1, 1},
      {sizeof(tsr_clamp_attrs), NAN, 1, 1, 1},   {sizeof(tsr_clamp_attrs), 0, NAN, 0, 1},
      // Bounds no half type holds: they are rounded to the dtype first.
      {sizeof(tsr_clamp_attrs), -1.01, 1.01, 1, 1},
  };
  for (size_t d = 0; d < 6; ++d) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
      if (k_dtypes[d] >= TSR_INT32 && (isnan(cases[c].min) || isnan(cases[c].max))) continue;
      tt_tensor x, out;
      tt_tensor_make(&x, k_dtypes[d], 2, sizes, NULL, 0);
      tt_tensor_make(&out, k_dtypes[d], 2, sizes, NULL, 0);
      tt_fill(&x, 70 + d, -5, 5);
      int64_t first[2] = {0, 0};
      if (d < 4) tt_set(&x, first, NAN);
      tt_tensor *in[] = {&x};
      tt_tensor *outs[] = {&out};
      assert_int_equal(tt_run(TSR_OP_CLAMP, &cases[c], in, 1, outs, 1, NULL), TSR_OK);
      int64_t idx[2] = {0, 0};
      do {
        double want = tsr_oracle_clamp_value(tt_get(&x, idx), &cases[c], k_dtypes[d]);
        if (!tt_close(tt_get(&out, idx), want, 0, 0)) {
          fail_msg("clamp case %zu dtype %d x %g: got %g want %g", c, (int)k_dtypes[d],
                   tt_get(&x, idx), tt_get(&out, idx), want);
        }
      } while (tt_index_next(idx, 2, sizes));
      tt_tensor_free(&x);
      tt_tensor_free(&out);
    }
  }
}

static void test_clamp_converts_bounds_to_int_and_refuses_bool(void **state) {
  (void)state;
  const int64_t sizes[] = {3};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_INT64, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT64, 1, sizes, NULL, 0);
  const double xs[] = {-10, 0, 10};
  for (int64_t i = 0; i < 3; ++i) tt_set(&x, &i, xs[i]);
  tsr_clamp_attrs attrs = {sizeof(attrs), -2.9, 1e30, 1, 1};  // -2 and INT64_MAX
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_CLAMP, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  const double want[] = {-2, 0, 10};
  for (int64_t i = 0; i < 3; ++i) assert_true(tt_get(&out, &i) == want[i]);
  // NULL attrs: no bounds, a copy.
  assert_int_equal(tt_run(TSR_OP_CLAMP, NULL, in, 1, outs, 1, NULL), TSR_OK);
  for (int64_t i = 0; i < 3; ++i) assert_true(tt_get(&out, &i) == xs[i]);
  tt_tensor b, bout;
  tt_tensor_make(&b, TSR_BOOL, 1, sizes, NULL, 0);
  tt_tensor_make(&bout, TSR_BOOL, 1, sizes, NULL, 0);
  in[0] = &b;
  outs[0] = &bout;
  assert_int_equal(tt_supports(TSR_OP_CLAMP, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "clamp takes float and int"));
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  tt_tensor_free(&b);
  tt_tensor_free(&bout);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compare_every_fn_and_dtype_broadcasts_and_writes_bool),
      cmocka_unit_test(test_compare_with_nan_is_false_except_not_equal),
      cmocka_unit_test(test_where_picks_a_or_b_for_every_dtype_with_broadcasting),
      cmocka_unit_test(test_clamp_applies_the_bounds_present_and_keeps_nan),
      cmocka_unit_test(test_clamp_converts_bounds_to_int_and_refuses_bool),
  };
  int failed = cmocka_run_group_tests_name("compare/where/clamp, serial host", tests,
                                           tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("compare/where/clamp, two-thread host", tests,
                                        tt_setup_two_threads, tt_teardown);
  return failed;
}
