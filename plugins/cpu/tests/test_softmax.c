// SOFTMAX and SOFTMAX_BACKWARD against the conformance oracle's float64
// loops: every float dtype and axis, strided views, size-0 and size-1 axes,
// the NaN and infinity rules, finite differences of the forward,
// thread-count independence, refusals.
#include <stdlib.h>

#include "oracle/oracle.h"
#include "test_host.h"
#include "test_norm_util.h"

// The conformance oracle's softmax or log-softmax of x along |axis| (|dy|
// NULL), or its backward of dy and y = |x| (the forward's output), in float64
// from the stored values, written to |want| (row-major over x's shape).
static void softmax_oracle(const tt_tensor *x, const tt_tensor *dy, int32_t axis, int lg,
                           double *want) {
  const tsr_softmax_attrs attrs = {sizeof(attrs), axis, (uint32_t)lg};
  const tsr_dtype_t dtype = x->desc.dtype;
  double *xv = tt_values(x, x->desc.sizes), *dyv = dy ? tt_values(dy, dy->desc.sizes) : NULL;
  tsr_oracle_tensor in[2] = {tsr_oracle_tensor_over(dtype, x->desc.rank, x->desc.sizes, dyv),
                             tsr_oracle_tensor_over(dtype, x->desc.rank, x->desc.sizes, xv)};
  tsr_oracle_tensor out = tsr_oracle_tensor_over(dtype, x->desc.rank, x->desc.sizes, want);
  assert_int_equal(tsr_oracle_compute_values(dy ? TSR_OP_SOFTMAX_BACKWARD : TSR_OP_SOFTMAX, &attrs,
                                             dy ? 2 : 1, dy ? in : in + 1, 1, &out),
                   TSR_OK);
  free(xv);
  free(dyv);
}

static void softmax_want(const tt_tensor *x, int32_t axis, int lg, double *want) {
  softmax_oracle(x, NULL, axis, lg, want);
}

static void softmax_run(tt_tensor *x, tt_tensor *y, int32_t axis, int lg) {
  tsr_softmax_attrs attrs = {sizeof(attrs), axis, (uint32_t)lg};
  tt_tensor *in[] = {x};
  tt_tensor *out[] = {y};
  assert_int_equal(tt_run(TSR_OP_SOFTMAX, &attrs, in, 1, out, 1, NULL), TSR_OK);
}

static void softmax_check(tt_tensor *x, tt_tensor *y, int32_t axis, int lg, double tol) {
  const int64_t total = tt_numel(x);
  double *want = test_malloc((size_t)(total + 1) * sizeof(double));
  softmax_want(x, axis, lg, want);
  softmax_run(x, y, axis, lg);
  for (int64_t i = 0; i < total; ++i)
    nt_expect(lg ? "log_softmax" : "softmax", i, nt_get_flat(y, i), want[i], tol);
  test_free(want);
}

static void test_softmax_matches_double_loops_for_every_dtype_axis_and_layout(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 5, 7};
  for (int di = 0; di < 4; ++di) {
    const tsr_dtype_t dtype = nt_float_dtypes[di];
    for (int32_t axis = 0; axis < 3; ++axis) {
      for (int lg = 0; lg < 2; ++lg) {
        tt_tensor x, y, xs, ys;
        tt_tensor_make(&x, dtype, 3, sizes, NULL, 0);
        tt_tensor_make(&y, dtype, 3, sizes, NULL, 0);
        nt_tensor_make_strided(&xs, dtype, 3, sizes);
        nt_tensor_make_strided(&ys, dtype, 3, sizes);
        nt_fill(&x, 10 + (uint64_t)axis, -6, 6);
        nt_fill(&xs, 20 + (uint64_t)axis, -6, 6);
        softmax_check(&x, &y, axis, lg, nt_tol(dtype));
        softmax_check(&xs, &ys, axis, lg, nt_tol(dtype));
        softmax_check(&x, &ys, axis, lg, nt_tol(dtype));
        tt_tensor_free(&x);
        tt_tensor_free(&y);
        tt_tensor_free(&xs);
        tt_tensor_free(&ys);
      }
    }
  }
}

static void test_softmax_reads_a_broadcast_input(void **state) {
  (void)state;
  // x broadcasts along axis 0 (stride 0); each slice along axis 1 is a row.
  const int64_t sizes[] = {4, 6};
  const int64_t strides[] = {0, 1};
  tt_tensor x, y;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, strides, 1);
  tt_tensor_make(&y, TSR_FLOAT32, 2, sizes, NULL, 0);
  nt_fill(&x, 5, -3, 3);
  softmax_check(&x, &y, 1, 0, nt_tol(TSR_FLOAT32));
  softmax_check(&x, &y, 0, 1, nt_tol(TSR_FLOAT32));  // slices of four equal values
  tt_tensor_free(&x);
  tt_tensor_free(&y);
}

static void test_softmax_handles_empty_and_size_one_axes(void **state) {
  (void)state;
  const int64_t shapes[][2] = {{4, 0}, {0, 3}, {4, 1}, {1, 1}, {1, 9}};
  for (int s = 0; s < 5; ++s) {
    for (int32_t axis = 0; axis < 2; ++axis) {
      for (int lg = 0; lg < 2; ++lg) {
        tt_tensor x, y;
        tt_tensor_make(&x, TSR_FLOAT64, 2, shapes[s], NULL, 0);
        tt_tensor_make(&y, TSR_FLOAT64, 2, shapes[s], NULL, 0);
        nt_fill(&x, 30, -2, 2);
        softmax_check(&x, &y, axis, lg, 1e-14);
        tt_tensor_free(&x);
        tt_tensor_free(&y);
      }
    }
  }
  // Rank 1 of size 1: softmax 1, log-softmax 0.
  const int64_t one[] = {1};
  tt_tensor x, y;
  tt_tensor_make(&x, TSR_FLOAT32, 1, one, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 1, one, NULL, 0);
  int64_t i = 0;
  tt_set(&x, &i, 123.0);
  softmax_run(&x, &y, 0, 0);
  assert_true(tt_get(&y, &i) == 1.0);
  softmax_run(&x, &y, 0, 1);
  assert_true(tt_get(&y, &i) == 0.0);
  tt_tensor_free(&x);
  tt_tensor_free(&y);
}

static void test_softmax_nan_and_infinities_follow_the_formula(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 3};
  const double rows[4][3] = {
      {1, NAN, 2}, {1, INFINITY, 2}, {-INFINITY, -INFINITY, -INFINITY}, {-INFINITY, 0, 0}};
  for (int di = 0; di < 4; ++di) {
    tt_tensor x, y;
    tt_tensor_make(&x, nt_float_dtypes[di], 2, sizes, NULL, 0);
    tt_tensor_make(&y, nt_float_dtypes[di], 2, sizes, NULL, 0);
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < 3; ++c) nt_set_flat(&x, r * 3 + c, rows[r][c]);
    }
    for (int lg = 0; lg < 2; ++lg) {
      softmax_run(&x, &y, 1, lg);
      for (int64_t k = 0; k < 9; ++k) assert_true(isnan(nt_get_flat(&y, k)));
      assert_true(nt_get_flat(&y, 9) == (lg ? -INFINITY : 0.0));
      assert_true(tt_close(nt_get_flat(&y, 10), lg ? -log(2.0) : 0.5, 1e-2, 0));
    }
    tt_tensor_free(&x);
    tt_tensor_free(&y);
  }
}

// dx from the catalogue's formulas, in float64 from the stored dy and y.
static void softmax_backward_want(const tt_tensor *dy, const tt_tensor *y, int32_t axis, int lg,
                                  double *want) {
  softmax_oracle(y, dy, axis, lg, want);
}

static void softmax_backward_run(tt_tensor *dy, tt_tensor *y, tt_tensor *dx, int32_t axis, int lg) {
  tsr_softmax_attrs attrs = {sizeof(attrs), axis, (uint32_t)lg};
  tt_tensor *in[] = {dy, y};
  tt_tensor *out[] = {dx};
  assert_int_equal(tt_run(TSR_OP_SOFTMAX_BACKWARD, &attrs, in, 2, out, 1, NULL), TSR_OK);
}

static void test_softmax_backward_matches_the_formula_for_every_dtype_and_layout(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 6, 5};
  for (int di = 0; di < 4; ++di) {
    const tsr_dtype_t dtype = nt_float_dtypes[di];
    for (int32_t axis = 0; axis < 3; ++axis) {
      for (int lg = 0; lg < 2; ++lg) {
        tt_tensor x, y, dy, dx;
        tt_tensor_make(&x, dtype, 3, sizes, NULL, 0);
        nt_tensor_make_strided(&y, dtype, 3, sizes);
        tt_tensor_make(&dy, dtype, 3, sizes, NULL, 0);
        nt_tensor_make_strided(&dx, dtype, 3, sizes);
        nt_fill(&x, 40 + (uint64_t)axis, -3, 3);
        nt_fill(&dy, 50 + (uint64_t)axis, -1, 1);
        softmax_run(&x, &y, axis, lg);
        const int64_t total = tt_numel(&y);
        double *want = test_malloc((size_t)total * sizeof(double));
        softmax_backward_want(&dy, &y, axis, lg, want);
        softmax_backward_run(&dy, &y, &dx, axis, lg);
        for (int64_t i = 0; i < total; ++i) {
          nt_expect("softmax_backward dx", i, nt_get_flat(&dx, i), want[i], 2 * nt_tol(dtype));
        }
        test_free(want);
        tt_tensor_free(&x);
        tt_tensor_free(&y);
        tt_tensor_free(&dy);
        tt_tensor_free(&dx);
      }
    }
  }
}

// L(x) = sum(dy * y(x)) with y the plugin's float64 forward.
static double softmax_objective(tt_tensor *x, tt_tensor *y, const tt_tensor *dy, int32_t axis,
                                int lg) {
  softmax_run(x, y, axis, lg);
  double sum = 0;
  for (int64_t i = 0; i < tt_numel(y); ++i) sum += nt_get_flat(dy, i) * nt_get_flat(y, i);
  return sum;
}

static void test_softmax_backward_matches_finite_differences_of_the_forward(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 4};
  for (int32_t axis = 0; axis < 2; ++axis) {
    for (int lg = 0; lg < 2; ++lg) {
      tt_tensor x, y, dy, dx;
      tt_tensor_make(&x, TSR_FLOAT64, 2, sizes, NULL, 0);
      tt_tensor_make(&y, TSR_FLOAT64, 2, sizes, NULL, 0);
      tt_tensor_make(&dy, TSR_FLOAT64, 2, sizes, NULL, 0);
      tt_tensor_make(&dx, TSR_FLOAT64, 2, sizes, NULL, 0);
      nt_fill(&x, 60, -2, 2);
      nt_fill(&dy, 61, -1, 1);
      softmax_run(&x, &y, axis, lg);
      softmax_backward_run(&dy, &y, &dx, axis, lg);
      const double h = 1e-6;
      for (int64_t i = 0; i < 12; ++i) {
        const double v = nt_get_flat(&x, i);
        nt_set_flat(&x, i, v + h);
        const double up = softmax_objective(&x, &y, &dy, axis, lg);
        nt_set_flat(&x, i, v - h);
        const double down = softmax_objective(&x, &y, &dy, axis, lg);
        nt_set_flat(&x, i, v);
        nt_expect("softmax finite difference", i, nt_get_flat(&dx, i), (up - down) / (2 * h), 1e-7);
      }
      tt_tensor_free(&x);
      tt_tensor_free(&y);
      tt_tensor_free(&dy);
      tt_tensor_free(&dx);
    }
  }
}

static void test_softmax_large_input_gives_the_same_bits_on_one_and_two_threads(void **state) {
  (void)state;
  const int64_t sizes[] = {300, 257};
  tt_tensor x, y, dy, dx;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&dy, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&dx, TSR_FLOAT32, 2, sizes, NULL, 0);
  nt_fill(&x, 70, -5, 5);
  nt_fill(&dy, 71, -1, 1);
  const uint64_t parallel_before = tsr_test_host_parallel_count();
  softmax_check(&x, &y, 1, 0, nt_tol(TSR_FLOAT32));
  assert_true(tsr_test_host_parallel_count() > parallel_before);
  softmax_check(&x, &y, 0, 1, nt_tol(TSR_FLOAT32));
  for (int32_t axis = 0; axis < 2; ++axis) {
    tsr_softmax_attrs attrs = {sizeof(attrs), axis, 0};
    tt_tensor *in[] = {&x};
    tt_tensor *out[] = {&y};
    nt_expect_same_bits_on_one_and_two_threads(TSR_OP_SOFTMAX, &attrs, in, 1, out, 1, 0);
    tt_tensor *bin[] = {&dy, &y};
    tt_tensor *bout[] = {&dx};
    nt_expect_same_bits_on_one_and_two_threads(TSR_OP_SOFTMAX_BACKWARD, &attrs, bin, 2, bout, 1, 0);
  }
  tt_tensor_free(&x);
  tt_tensor_free(&y);
  tt_tensor_free(&dy);
  tt_tensor_free(&dx);
}

static void test_softmax_refuses_what_the_catalogue_forbids(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 3};
  tt_tensor x, y, yi, y64;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&yi, TSR_INT32, 2, sizes, NULL, 0);
  tt_tensor_make(&y64, TSR_FLOAT64, 2, sizes, NULL, 0);
  tt_tensor *in[] = {&x};
  tt_tensor *out[] = {&y};
  tsr_softmax_attrs attrs = {sizeof(attrs), 2, 0};
  assert_int_equal(tt_supports(TSR_OP_SOFTMAX, &attrs, in, 1, out, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "axis 2"));
  attrs.axis = -1;
  assert_int_equal(tt_supports(TSR_OP_SOFTMAX, &attrs, in, 1, out, 1), TSR_INVALID_ARGUMENT);
  attrs.axis = 1;
  assert_int_equal(tt_supports(TSR_OP_SOFTMAX, NULL, in, 1, out, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "attrs is NULL"));
  tt_tensor *out64[] = {&y64};
  assert_int_equal(tt_supports(TSR_OP_SOFTMAX, &attrs, in, 1, out64, 1), TSR_INVALID_ARGUMENT);
  tt_tensor *ini[] = {&yi};
  tt_tensor *outi[] = {&yi};
  assert_int_equal(tt_supports(TSR_OP_SOFTMAX, &attrs, ini, 1, outi, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "int32"));
  // Not in place: y may not alias x.
  x.desc.alias_group = 0;
  tt_tensor same = x;
  tt_tensor *outs[] = {&same};
  assert_int_equal(tt_supports(TSR_OP_SOFTMAX, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  tt_tensor_free(&x);
  tt_tensor_free(&y);
  tt_tensor_free(&yi);
  tt_tensor_free(&y64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_softmax_matches_double_loops_for_every_dtype_axis_and_layout),
      cmocka_unit_test(test_softmax_reads_a_broadcast_input),
      cmocka_unit_test(test_softmax_handles_empty_and_size_one_axes),
      cmocka_unit_test(test_softmax_nan_and_infinities_follow_the_formula),
      cmocka_unit_test(test_softmax_backward_matches_the_formula_for_every_dtype_and_layout),
      cmocka_unit_test(test_softmax_backward_matches_finite_differences_of_the_forward),
      cmocka_unit_test(test_softmax_large_input_gives_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_softmax_refuses_what_the_catalogue_forbids),
  };
  return cmocka_run_group_tests(tests, tt_setup_two_threads, tt_teardown);
}
