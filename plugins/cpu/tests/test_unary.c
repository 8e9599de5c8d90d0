// UNARY and UNARY_BACKWARD against the conformance oracle's float64 f(x) and
// f'(x), every fn and dtype the catalogue allows, NaN rules, aliasing,
// strided views, and refusals.
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

// Inputs where the fn is defined and smooth enough for the difference.
static void domain_get(tsr_unary_fn_t fn, double *lo, double *hi) {
  *lo = -3;
  *hi = 3;
  if (fn == TSR_UNARY_LOG || fn == TSR_UNARY_SQRT || fn == TSR_UNARY_RSQRT) *lo = 0.2;
  if (fn == TSR_UNARY_LOG1P) *lo = -0.8;
  if (fn == TSR_UNARY_RECIPROCAL) *lo = 0.3;
}

static void unary_run_check(tsr_unary_fn_t fn, double alpha, tt_tensor *x, tt_tensor *out) {
  tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
  tt_tensor *in[] = {x};
  tt_tensor *outs[] = {out};
  assert_int_equal(tt_run(TSR_OP_UNARY, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  if (tt_numel(out) == 0) return;
  int64_t idx[TSR_MAX_RANK] = {0};
  const tsr_dtype_t dtype = out->desc.dtype;
  do {
    double xv = tt_get_broadcast(x, idx);
    double want = tsr_oracle_unary_value(fn, xv, alpha);
    if (dtype == TSR_FLOAT32) want = (float)want;
    double got = tt_get(out, idx);
    // The half types: the float32 result rounded once, so half an ulp of
    // the exact value (atol covers float16's subnormal quantum).
    double rtol = tt_is_half(dtype) ? tt_rtol(dtype) : dtype == TSR_FLOAT32 ? 4e-6 : 1e-14;
    if (!tt_close(got, want, rtol, 1e-7)) {
      fail_msg("unary fn %d dtype %d x %.9g: got %.17g, want %.17g", (int)fn, (int)dtype, xv, got,
               want);
    }
  } while (tt_index_next(idx, out->desc.rank, out->desc.sizes));
}

static const tsr_dtype_t k_floats[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16};

static void test_unary_every_fn_matches_double_loops_on_float(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 41};
  for (int d = 0; d < 4; ++d) {
    tsr_dtype_t dtype = k_floats[d];
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (fn == TSR_UNARY_LOGICAL_NOT) continue;
      double lo, hi;
      domain_get(fn, &lo, &hi);
      tt_tensor x, out;
      tt_tensor_make(&x, dtype, 2, sizes, NULL, 0);
      tt_tensor_make(&out, dtype, 2, sizes, NULL, 0);
      tt_fill(&x, 100 + (uint64_t)fn, lo, hi);
      unary_run_check(fn, 0.2, &x, &out);
      tt_tensor_free(&x);
      tt_tensor_free(&out);
    }
  }
}

static void test_unary_int_fns_wrap_and_float_only_fns_refuse_int(void **state) {
  (void)state;
  const int64_t sizes[] = {23};
  for (int d = 0; d < 2; ++d) {
    tsr_dtype_t dtype = d == 0 ? TSR_INT32 : TSR_INT64;
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      tt_tensor x, out;
      tt_tensor_make(&x, dtype, 1, sizes, NULL, 0);
      tt_tensor_make(&out, dtype, 1, sizes, NULL, 0);
      tt_fill(&x, 200 + (uint64_t)fn, -1000, 1000);
      if (!tsr_oracle_unary_accepts(fn, dtype)) {
        tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, 0.0};
        tt_tensor *in[] = {&x};
        tt_tensor *outs[] = {&out};
        assert_int_equal(tt_supports(TSR_OP_UNARY, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
        assert_non_null(strstr(tsr_test_host_error_get(), "takes"));
      } else {
        unary_run_check(fn, 0.0, &x, &out);
      }
      tt_tensor_free(&x);
      tt_tensor_free(&out);
    }
  }
  // -INT_MIN and |INT_MIN| wrap to INT_MIN.
  const int64_t one[] = {1};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_INT32, 1, one, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 1, one, NULL, 0);
  int64_t i = 0;
  tt_set(&x, &i, -2147483648.0);
  tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_NEG, 0, 0.0};
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_UNARY, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  assert_true(tt_get(&out, &i) == -2147483648.0);
  attrs.fn = TSR_UNARY_ABS;
  assert_int_equal(tt_run(TSR_OP_UNARY, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  assert_true(tt_get(&out, &i) == -2147483648.0);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

static void test_unary_logical_not_takes_bool_only(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 9};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_BOOL, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_BOOL, 2, sizes, NULL, 0);
  tt_fill(&x, 300, 0, 1);
  unary_run_check(TSR_UNARY_LOGICAL_NOT, 0.0, &x, &out);
  tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_NEG, 0, 0.0};
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_UNARY, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

static void test_unary_nan_rules_hold_for_relu_sign_and_round_half_to_even(void **state) {
  (void)state;
  const int64_t sizes[] = {6};
  const double xs[] = {NAN, -0.5, 0.5, 1.5, 2.5, -2.5};
  for (int d = 0; d < 4; ++d) {
    tsr_dtype_t dtype = k_floats[d];
    tt_tensor x, out;
    tt_tensor_make(&x, dtype, 1, sizes, NULL, 0);
    tt_tensor_make(&out, dtype, 1, sizes, NULL, 0);
    for (int64_t i = 0; i < 6; ++i) tt_set(&x, &i, xs[i]);
    unary_run_check(TSR_UNARY_RELU, 0.0, &x, &out);
    int64_t i = 0;
    assert_true(isnan(tt_get(&out, &i)));
    unary_run_check(TSR_UNARY_SIGN, 0.0, &x, &out);
    assert_true(isnan(tt_get(&out, &i)));
    unary_run_check(TSR_UNARY_ROUND, 0.0, &x, &out);
    const double rounded[] = {NAN, -0.0, 0.0, 2.0, 2.0, -2.0};
    for (i = 1; i < 6; ++i) assert_true(tt_get(&out, &i) == rounded[i]);
    tt_tensor_free(&x);
    tt_tensor_free(&out);
  }
}

static void test_unary_reads_strided_and_broadcast_views_and_runs_in_place(void **state) {
  (void)state;
  const int64_t sizes[] = {7, 5, 3};
  const int32_t perm[] = {2, 0, 1};
  const int64_t broadcast_strides[] = {0, 1, 0};
  tt_tensor x, xb, out;
  tt_tensor_make_permuted(&x, TSR_FLOAT32, 3, sizes, perm);
  tt_tensor_make(&xb, TSR_FLOAT32, 3, sizes, broadcast_strides, 2);
  tt_tensor_make(&out, TSR_FLOAT32, 3, sizes, NULL, 0);
  tt_fill(&x, 400, -2, 2);
  tt_fill(&xb, 401, -2, 2);
  unary_run_check(TSR_UNARY_TANH, 0.0, &x, &out);
  unary_run_check(TSR_UNARY_EXP, 0.0, &xb, &out);
  // In place: out is x.
  tt_tensor copy;
  tt_tensor_make(&copy, TSR_FLOAT32, 3, sizes, NULL, 0);
  int64_t idx[3] = {0, 0, 0};
  do tt_set(&copy, idx, tt_get(&x, idx)); while (tt_index_next(idx, 3, sizes));
  x.desc.alias_group = 1;
  tt_tensor same = x;
  tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_SQUARE, 0, 0.0};
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&same};
  assert_int_equal(tt_run(TSR_OP_UNARY, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  do {
    double v = tt_get(&copy, idx);
    assert_true(tt_close(tt_get(&x, idx), (float)(v * v), 1e-6, 0));
  } while (tt_index_next(idx, 3, sizes));
  tt_tensor_free(&x);
  tt_tensor_free(&xb);
  tt_tensor_free(&out);
  tt_tensor_free(&copy);
}

static void test_unary_half_types_read_strided_broadcast_and_in_place_views(void **state) {
  (void)state;
  const int64_t sizes[] = {7, 5, 3};
  const int32_t perm[] = {2, 0, 1};
  const int64_t broadcast_strides[] = {0, 1, 0};
  for (int d = 2; d < 4; ++d) {
    tt_tensor x, xb, out;
    tt_tensor_make_permuted(&x, k_floats[d], 3, sizes, perm);
    tt_tensor_make(&xb, k_floats[d], 3, sizes, broadcast_strides, 2);
    tt_tensor_make(&out, k_floats[d], 3, sizes, NULL, 1);
    tt_fill(&x, 410, -2, 2);
    tt_fill(&xb, 411, -2, 2);
    unary_run_check(TSR_UNARY_SIGMOID, 0.0, &x, &out);
    unary_run_check(TSR_UNARY_ELU, 0.5, &xb, &out);
    tt_tensor same = out;
    out.desc.alias_group = 3;
    same.desc.alias_group = 3;
    tt_tensor before;
    tt_tensor_make(&before, k_floats[d], 3, sizes, NULL, 0);
    int64_t idx[3] = {0, 0, 0};
    do tt_set(&before, idx, tt_get(&out, idx)); while (tt_index_next(idx, 3, sizes));
    tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_EXP, 0, 0.0};
    tt_tensor *in[] = {&out};
    tt_tensor *outs[] = {&same};
    assert_int_equal(tt_run(TSR_OP_UNARY, &attrs, in, 1, outs, 1, NULL), TSR_OK);
    do {
      assert_true(tt_close(tt_get(&out, idx), exp(tt_get(&before, idx)), tt_rtol(k_floats[d]), 0));
    } while (tt_index_next(idx, 3, sizes));
    tt_tensor_free(&x);
    tt_tensor_free(&xb);
    tt_tensor_free(&out);
    tt_tensor_free(&before);
  }
}

static void test_unary_large_input_runs_on_the_pool(void **state) {
  (void)state;
  const int64_t sizes[] = {200003};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_FLOAT32, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 1, sizes, NULL, 0);
  tt_fill(&x, 500, -4, 4);
  unary_run_check(TSR_UNARY_GELU, 0.0, &x, &out);
  unary_run_check(TSR_UNARY_NEG, 0.0, &x, &out);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  tt_tensor_make(&x, TSR_BFLOAT16, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_BFLOAT16, 1, sizes, NULL, 0);
  tt_fill(&x, 501, -4, 4);
  unary_run_check(TSR_UNARY_SILU, 0.0, &x, &out);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

static void test_unary_backward_matches_the_oracles_derivatives(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 37};
  for (int d = 0; d < 4; ++d) {
    tsr_dtype_t dtype = k_floats[d];
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (!tsr_oracle_unary_has_backward(fn)) continue;
      double lo, hi;
      domain_get(fn, &lo, &hi);
      tt_tensor dy, x, dx;
      tt_tensor_make(&dy, dtype, 2, sizes, NULL, 0);
      tt_tensor_make(&x, dtype, 2, sizes, NULL, 0);
      tt_tensor_make(&dx, dtype, 2, sizes, NULL, 0);
      tt_fill(&dy, 600 + (uint64_t)fn, -2, 2);
      tt_fill(&x, 700 + (uint64_t)fn, lo, hi);
      int64_t zero[2] = {0, 0};
      tt_set(&x, zero, 0.0);  // the catalogue's f'(0) rules
      if (fn == TSR_UNARY_LOG || fn == TSR_UNARY_SQRT || fn == TSR_UNARY_RSQRT ||
          fn == TSR_UNARY_RECIPROCAL) {
        tt_set(&x, zero, 1.0);
      }
      tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, 0.3};
      tt_tensor *in[] = {&dy, &x};
      tt_tensor *outs[] = {&dx};
      assert_int_equal(tt_run(TSR_OP_UNARY_BACKWARD, &attrs, in, 2, outs, 1, NULL), TSR_OK);
      int64_t idx[2] = {0, 0};
      do {
        double xv = tt_get(&x, idx), dyv = tt_get(&dy, idx);
        double want = dyv * tsr_oracle_unary_derivative(fn, xv, 0.3);
        double got = tt_get(&dx, idx);
        // Kept from when want was a central difference (the oracle's f' is
        // analytic), and for the half types the rounding of a float32 result.
        double rtol = 1e-4 + (tt_is_half(dtype) ? tt_rtol(dtype) : 0);
        if (!tt_close(got, want, rtol, 1e-5)) {
          fail_msg("unary_backward fn %d dtype %d x %.9g: got %.9g, want %.9g", (int)fn,
                   (int)dtype, xv, got, want);
        }
      } while (tt_index_next(idx, 2, sizes));
      tt_tensor_free(&dy);
      tt_tensor_free(&x);
      tt_tensor_free(&dx);
    }
  }
}

static void test_unary_backward_is_nan_where_x_is_nan_for_every_fn(void **state) {
  (void)state;
  const int64_t sizes[] = {3};
  for (int d = 0; d < 4; ++d) {
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (!tsr_oracle_unary_has_backward(fn)) continue;
      tt_tensor dy, x, dx;
      tt_tensor_make(&dy, k_floats[d], 1, sizes, NULL, 0);
      tt_tensor_make(&x, k_floats[d], 1, sizes, NULL, 0);
      tt_tensor_make(&dx, k_floats[d], 1, sizes, NULL, 0);
      for (int64_t i = 0; i < 3; ++i) {
        tt_set(&dy, &i, 1.5 - (double)i);
        tt_set(&x, &i, NAN);
      }
      tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, 0.1};
      tt_tensor *in[] = {&dy, &x};
      tt_tensor *outs[] = {&dx};
      assert_int_equal(tt_run(TSR_OP_UNARY_BACKWARD, &attrs, in, 2, outs, 1, NULL), TSR_OK);
      for (int64_t i = 0; i < 3; ++i) {
        if (!isnan(tt_get(&dx, &i))) {
          fail_msg("unary_backward fn %d dtype %d: dx %g for x NaN", (int)fn, (int)k_floats[d],
                   tt_get(&dx, &i));
        }
      }
      tt_tensor_free(&dy);
      tt_tensor_free(&x);
      tt_tensor_free(&dx);
    }
  }
}

static void test_unary_backward_refuses_fns_without_backward_and_int(void **state) {
  (void)state;
  const int64_t sizes[] = {4};
  tt_tensor dy, x, dx, idy, ix, idx;
  tt_tensor_make(&dy, TSR_FLOAT32, 1, sizes, NULL, 0);
  tt_tensor_make(&x, TSR_FLOAT32, 1, sizes, NULL, 0);
  tt_tensor_make(&dx, TSR_FLOAT32, 1, sizes, NULL, 0);
  tt_tensor_make(&idy, TSR_INT32, 1, sizes, NULL, 0);
  tt_tensor_make(&ix, TSR_INT32, 1, sizes, NULL, 0);
  tt_tensor_make(&idx, TSR_INT32, 1, sizes, NULL, 0);
  tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_FLOOR, 0, 0.0};
  tt_tensor *in[] = {&dy, &x};
  tt_tensor *outs[] = {&dx};
  assert_int_equal(tt_supports(TSR_OP_UNARY_BACKWARD, &attrs, in, 2, outs, 1),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "floor has no backward"));
  attrs.fn = TSR_UNARY_RELU;
  tt_tensor *iin[] = {&idy, &ix};
  tt_tensor *iouts[] = {&idx};
  assert_int_equal(tt_supports(TSR_OP_UNARY_BACKWARD, &attrs, iin, 2, iouts, 1),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "float"));
  // dx may not alias dy: the op is not in place.
  dy.desc.alias_group = 0;
  tt_tensor alias = dx;
  alias.desc.alias_group = 0;
  tt_tensor *aouts[] = {&alias};
  assert_int_equal(tt_supports(TSR_OP_UNARY_BACKWARD, &attrs, in, 2, aouts, 1),
                   TSR_INVALID_ARGUMENT);
  // Attrs are required and must be large enough.
  assert_int_equal(tt_supports(TSR_OP_UNARY, NULL, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "unary: attrs is NULL"));
  attrs.struct_size = 4;
  assert_int_equal(tt_supports(TSR_OP_UNARY, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "struct_size 4"));
  attrs.struct_size = sizeof(attrs);
  attrs.fn = -1;
  assert_int_equal(tt_supports(TSR_OP_UNARY, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "fn -1"));
  tt_tensor_free(&dy);
  tt_tensor_free(&x);
  tt_tensor_free(&dx);
  tt_tensor_free(&idy);
  tt_tensor_free(&ix);
  tt_tensor_free(&idx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_every_fn_matches_double_loops_on_float),
      cmocka_unit_test(test_unary_int_fns_wrap_and_float_only_fns_refuse_int),
      cmocka_unit_test(test_unary_logical_not_takes_bool_only),
      cmocka_unit_test(test_unary_nan_rules_hold_for_relu_sign_and_round_half_to_even),
      cmocka_unit_test(test_unary_reads_strided_and_broadcast_views_and_runs_in_place),
      cmocka_unit_test(test_unary_half_types_read_strided_broadcast_and_in_place_views),
      cmocka_unit_test(test_unary_large_input_runs_on_the_pool),
      cmocka_unit_test(test_unary_backward_matches_the_oracles_derivatives),
      cmocka_unit_test(test_unary_backward_is_nan_where_x_is_nan_for_every_fn),
      cmocka_unit_test(test_unary_backward_refuses_fns_without_backward_and_int),
  };
  int failed = cmocka_run_group_tests_name("unary, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("unary, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
