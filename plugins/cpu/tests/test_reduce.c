// REDUCE and ARG_REDUCE against the conformance oracle: axis sets, layouts,
// empty axes, NaN rules, integer wrap-around, ties, thread independence.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/oracle.h"
#include "test_host.h"
#include "test_util.h"

static const tsr_dtype_t k_numbers[] = {TSR_FLOAT32, TSR_FLOAT64,  TSR_INT32,
                                        TSR_INT64,   TSR_BFLOAT16, TSR_FLOAT16};

// The conformance oracle's reduction of x over |mask|: a new row-major
// array over the keepdim output shape (ints wrap as the dtype does).
static double *reduce_want(const tt_tensor *x, uint32_t mask, tsr_reduce_fn_t fn) {
  const tsr_reduce_attrs attrs = {sizeof(attrs), fn, mask};
  int64_t out_sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < x->desc.rank; ++d) out_sizes[d] = (mask >> d) & 1 ? 1 : x->desc.sizes[d];
  tsr_oracle_tensor in = tt_oracle_tensor(x), out;
  assert_int_equal(tsr_oracle_tensor_create(x->desc.dtype, x->desc.rank, out_sizes, &out), 0);
  tsr_oracle_call call = {TSR_OP_REDUCE, &attrs, 1, 1, &in, &out, {0}};
  assert_int_equal(tsr_oracle_compute(&call), TSR_OK);
  double *want = out.v;
  out.v = NULL;
  tsr_oracle_tensor_destroy(&in);
  tsr_oracle_tensor_destroy(&out);
  return want;
}

// SUM or MEAN of x over |mask| for the output element at |out_idx| in the
// plugin's order, for bit-exact checks: the elements added in order into a
// partial sum that is folded into the result every |segment| elements and
// at the end (the plugin's fixed segments).
static double reduce_want_segmented(const tt_tensor *x, uint32_t mask, tsr_reduce_fn_t fn,
                                    const int64_t *out_idx, int64_t segment) {
  const int32_t r = x->desc.rank;
  int64_t sizes[TSR_MAX_RANK], idx[TSR_MAX_RANK];
  int64_t count = 1;
  for (int32_t d = 0; d < r; ++d) {
    sizes[d] = (mask >> d) & 1 ? x->desc.sizes[d] : 1;
    count *= sizes[d];
    idx[d] = 0;
  }
  assert_true(fn == TSR_REDUCE_SUM || fn == TSR_REDUCE_MEAN);
  if (count == 0) return fn == TSR_REDUCE_MEAN ? NAN : 0.0;
  double acc = 0.0, part = 0.0;
  int64_t k = 0;
  do {
    int64_t xi[TSR_MAX_RANK];
    for (int32_t d = 0; d < r; ++d) xi[d] = (mask >> d) & 1 ? idx[d] : out_idx[d];
    part += tt_get(x, xi);
    if (++k % segment == 0 || k == count) {
      acc += part;
      part = 0.0;
    }
  } while (tt_index_next(idx, r, sizes));
  return fn == TSR_REDUCE_MEAN ? acc / (double)count : acc;
}

static tsr_status reduce_run(tsr_reduce_fn_t fn, uint32_t mask, tt_tensor *x, tt_tensor *out) {
  tsr_reduce_attrs attrs = {sizeof(attrs), fn, mask};
  tt_tensor *in[] = {x};
  tt_tensor *outs[] = {out};
  return tt_run(TSR_OP_REDUCE, &attrs, in, 1, outs, 1, NULL);
}

// Reduces x (any view) over |mask| and checks each output element.
static void reduce_check(tsr_reduce_fn_t fn, uint32_t mask, tt_tensor *x) {
  const int32_t r = x->desc.rank;
  int64_t out_sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < r; ++d) out_sizes[d] = (mask >> d) & 1 ? 1 : x->desc.sizes[d];
  tt_tensor out;
  tt_tensor_make(&out, x->desc.dtype, r, out_sizes, NULL, 0);
  assert_int_equal(reduce_run(fn, mask, x, &out), TSR_OK);
  int64_t idx[TSR_MAX_RANK] = {0}, i = 0;
  if (tt_numel(&out) > 0) {
    double *all = reduce_want(x, mask, fn);
    do {
      double want = all[i++];
      if (x->desc.dtype == TSR_INT32) want = (double)(int32_t)(int64_t)want;
      if (x->desc.dtype == TSR_FLOAT32) want = (float)want;
      double rtol = x->desc.dtype == TSR_FLOAT32 ? 1e-6 : x->desc.dtype == TSR_FLOAT64 ? 1e-12 : 0;
      if (tt_is_half(x->desc.dtype)) {
        // Accumulated wide and rounded once: within an ulp of the rounded
        // exact result (which also overflows where the dtype does).
        want = tt_round(want, x->desc.dtype);
        rtol = 2 * tt_rtol(x->desc.dtype);
      }
      double got = tt_get(&out, idx);
      if (!tt_close(got, want, rtol, 1e-9)) {
        fail_msg("reduce fn %d mask 0x%x dtype %d: got %.17g, want %.17g", (int)fn, mask,
                 (int)x->desc.dtype, got, want);
      }
    } while (tt_index_next(idx, r, out_sizes));
    free(all);
  }
  tt_tensor_free(&out);
}

static void test_reduce_every_fn_over_every_axis_set_matches_double_loops(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 4, 5};
  for (size_t d = 0; d < 6; ++d) {
    tt_tensor x;
    tt_tensor_make(&x, k_numbers[d], 3, sizes, NULL, 0);
    tt_fill(&x, 1 + d, -3, 3);
    for (tsr_reduce_fn_t fn = 0; fn < TSR_REDUCE_FN_COUNT; ++fn) {
      if (fn == TSR_REDUCE_MEAN && (d == 2 || d == 3)) continue;
      for (uint32_t mask = 0; mask < 8; ++mask) reduce_check(fn, mask, &x);
    }
    tt_tensor_free(&x);
  }
}

static void test_reduce_half_types_accumulate_long_sums_wide(void **state) {
  (void)state;
  // 20000 values in [0, 1]: a bfloat16 running sum would stall near 256.
  const int64_t sizes[] = {3, 20000};
  const int32_t perm[] = {1, 0};
  for (size_t d = 4; d < 6; ++d) {
    tt_tensor x;
    tt_tensor_make_permuted(&x, k_numbers[d], 2, sizes, perm);
    tt_fill(&x, 90 + d, 0, 1);
    reduce_check(TSR_REDUCE_SUM, 2, &x);
    reduce_check(TSR_REDUCE_MEAN, 3, &x);
    reduce_check(TSR_REDUCE_MAX, 2, &x);
    tt_tensor_free(&x);
  }
}

static void test_reduce_reads_transposed_and_strided_views(void **state) {
  (void)state;
  const int64_t sizes[] = {6, 5, 7, 2};
  const int32_t perm[] = {2, 0, 3, 1};
  const int64_t strides[] = {200, 31, 3, 1};
  tt_tensor x, y;
  tt_tensor_make_permuted(&x, TSR_FLOAT32, 4, sizes, perm);
  tt_tensor_make(&y, TSR_FLOAT64, 4, sizes, strides, 9);
  tt_fill(&x, 11, -2, 2);
  tt_fill(&y, 12, -2, 2);
  for (uint32_t mask = 0; mask < 16; ++mask) {
    reduce_check(TSR_REDUCE_SUM, mask, &x);
    reduce_check(TSR_REDUCE_MAX, mask, &y);
  }
  tt_tensor_free(&x);
  tt_tensor_free(&y);
}

static void test_reduce_of_an_empty_axis_gives_identity_or_nan_and_max_is_refused(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 0};
  const int64_t out_sizes[] = {3, 1};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, out_sizes, NULL, 0);
  const double want[] = {0, NAN, 0, 0, 1};
  for (tsr_reduce_fn_t fn = 0; fn < TSR_REDUCE_FN_COUNT; ++fn) {
    tsr_status status = reduce_run(fn, 2u, &x, &out);
    if (fn == TSR_REDUCE_MAX || fn == TSR_REDUCE_MIN) {
      assert_int_equal(status, TSR_INVALID_ARGUMENT);
      assert_non_null(strstr(tsr_test_host_error_get(), "empty axis 1"));
      continue;
    }
    assert_int_equal(status, TSR_OK);
    for (int64_t i = 0; i < 3; ++i) {
      int64_t idx[2] = {i, 0};
      assert_true(tt_close(tt_get(&out, idx), want[fn], 0, 0));
    }
  }
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

static void test_reduce_max_and_min_propagate_nan(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 40};
  tt_tensor x;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_fill(&x, 21, -1, 1);
  int64_t nan_at[2] = {1, 37};
  tt_set(&x, nan_at, NAN);
  reduce_check(TSR_REDUCE_MAX, 2u, &x);
  reduce_check(TSR_REDUCE_MIN, 3u, &x);
  reduce_check(TSR_REDUCE_MAX, 1u, &x);
  tt_tensor_free(&x);
}

static void test_reduce_int_sum_and_prod_wrap_modulo_2_to_the_bits(void **state) {
  (void)state;
  const int64_t sizes[] = {3};
  const int64_t one[] = {1};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_INT32, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 1, one, NULL, 0);
  for (int64_t i = 0; i < 3; ++i) tt_set(&x, &i, 2147483647.0);
  int64_t zero = 0;
  assert_int_equal(reduce_run(TSR_REDUCE_SUM, 1u, &x, &out), TSR_OK);
  assert_true(tt_get(&out, &zero) == 2147483645.0);  // 3 * (2^31 - 1) mod 2^32
  assert_int_equal(reduce_run(TSR_REDUCE_PROD, 1u, &x, &out), TSR_OK);
  assert_true(tt_get(&out, &zero) == 2147483647.0);  // (2^31 - 1)^3 mod 2^32
  tsr_reduce_attrs mean = {sizeof(mean), TSR_REDUCE_MEAN, 1u};
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_REDUCE, &mean, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "mean takes float"));
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

static void test_reduce_long_sums_are_bitwise_identical_on_one_and_two_threads(void **state) {
  (void)state;
  int32_t threads_before = tsr_test_host_get()->thread_count(NULL);
  const int64_t sizes[] = {3, 100003};
  const int64_t out_sizes[] = {3, 1};
  double results[2][3];
  for (int t = 0; t < 2; ++t) {
    assert_int_equal(tt_setup(t + 1), 0);
    tt_tensor x, out;
    tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
    tt_tensor_make(&out, TSR_FLOAT32, 2, out_sizes, NULL, 0);
    tt_fill(&x, 31, -1, 1);
    assert_int_equal(reduce_run(TSR_REDUCE_SUM, 2u, &x, &out), TSR_OK);
    double *want = reduce_want(&x, 2u, TSR_REDUCE_SUM);
    for (int64_t i = 0; i < 3; ++i) {
      int64_t idx[2] = {i, 0};
      results[t][i] = tt_get(&out, idx);
      assert_true(tt_close(results[t][i], (float)want[i], 1e-6, 1e-6));
    }
    free(want);
    tt_tensor_free(&x);
    tt_tensor_free(&out);
  }
  assert_memory_equal(results[0], results[1], sizeof(results[0]));
  assert_int_equal(tt_setup(threads_before), 0);
}

static void test_reduce_many_outputs_run_on_the_pool(void **state) {
  (void)state;
  const int64_t sizes[] = {1000, 130};
  tt_tensor x;
  tt_tensor_make(&x, TSR_FLOAT64, 2, sizes, NULL, 0);
  tt_fill(&x, 41, -1, 1);
  reduce_check(TSR_REDUCE_MEAN, 2u, &x);
  reduce_check(TSR_REDUCE_SUM, 1u, &x);
  tt_tensor_free(&x);
}

// Column sums (a bias gradient: [N, C] over N) take a vectorized path that
// adds rows into chunks of outputs. It must give the bits of a sequential
// float64 walk down each column in segments of 16384 elements, folded from
// 0.0 in order, on one and on two threads: N = 20000 makes two segments,
// C = 300 two chunks of outputs, and the 3-d case has outer kept rows.
static void test_reduce_column_sums_match_a_sequential_walk_bit_for_bit(void **state) {
  (void)state;
  int32_t threads_before = tsr_test_host_get()->thread_count(NULL);
  const int64_t big[] = {20000, 300}, three[] = {3, 40, 37};
  const struct {
    const int64_t *sizes;
    int32_t rank;
    uint32_t mask;
    tsr_dtype_t dtype;
    tsr_reduce_fn_t fn;
  } cases[] = {{big, 2, 1u, TSR_FLOAT32, TSR_REDUCE_SUM},
               {three, 3, 2u, TSR_FLOAT64, TSR_REDUCE_MEAN},
               {three, 3, 3u, TSR_FLOAT32, TSR_REDUCE_SUM}};
  for (int t = 1; t <= 2; ++t) {
    assert_int_equal(tt_setup(t), 0);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
      const int32_t r = cases[c].rank;
      int64_t out_sizes[TSR_MAX_RANK];
      for (int32_t d = 0; d < r; ++d) {
        out_sizes[d] = (cases[c].mask >> d) & 1 ? 1 : cases[c].sizes[d];
      }
      tt_tensor x, out;
      tt_tensor_make(&x, cases[c].dtype, r, cases[c].sizes, NULL, 0);
      tt_tensor_make(&out, cases[c].dtype, r, out_sizes, NULL, 0);
      tt_fill(&x, 61 + c, -1, 1);
      assert_int_equal(reduce_run(cases[c].fn, cases[c].mask, &x, &out), TSR_OK);
      int64_t idx[TSR_MAX_RANK] = {0};
      do {
        double want = reduce_want_segmented(&x, cases[c].mask, cases[c].fn, idx, 16384);
        if (cases[c].dtype == TSR_FLOAT32) want = (float)want;
        const double got = tt_get(&out, idx);
        if (memcmp(&got, &want, sizeof(got)) != 0) {
          fail_msg("case %zu, %d threads: got %.17g, want %.17g", c, t, got, want);
        }
      } while (tt_index_next(idx, r, out_sizes));
      tt_tensor_free(&x);
      tt_tensor_free(&out);
    }
  }
  assert_int_equal(tt_setup(threads_before), 0);
}

static void test_reduce_refuses_bad_axes_and_shapes(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 4};
  const int64_t wrong[] = {3, 4};
  tt_tensor x, out, b;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, wrong, NULL, 0);
  tt_tensor_make(&b, TSR_BOOL, 2, sizes, NULL, 0);
  tsr_reduce_attrs attrs = {sizeof(attrs), TSR_REDUCE_SUM, 4u};
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_REDUCE, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "axes_mask 0x4"));
  attrs.axes_mask = 1u;
  assert_int_equal(tt_supports(TSR_OP_REDUCE, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "out sizes[0] is 3, expected 1"));
  in[0] = &b;
  assert_int_equal(tt_supports(TSR_OP_REDUCE, &attrs, in, 1, outs, 1), TSR_UNSUPPORTED);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  tt_tensor_free(&b);
}

// The conformance oracle's ARG_REDUCE (first extreme, NaN beyond every
// number) of x along |axis|: a new row-major array over the output shape.
static int64_t *arg_want(const tt_tensor *x, int32_t axis, int argmin, const int64_t *out_sizes) {
  const tsr_arg_reduce_attrs attrs = {sizeof(attrs), argmin, axis};
  tsr_oracle_tensor in = tt_oracle_tensor(x), out;
  assert_int_equal(tsr_oracle_tensor_create(TSR_INT64, x->desc.rank, out_sizes, &out), 0);
  tsr_oracle_call call = {TSR_OP_ARG_REDUCE, &attrs, 1, 1, &in, &out, {0}};
  assert_int_equal(tsr_oracle_compute(&call), TSR_OK);
  int64_t *want = out.iv;
  out.iv = NULL;
  tsr_oracle_tensor_destroy(&in);
  tsr_oracle_tensor_destroy(&out);
  return want;
}

static void test_arg_reduce_finds_the_first_extreme_on_every_axis_and_dtype(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 6, 5};
  const int32_t perm[] = {1, 2, 0};
  for (size_t d = 0; d < 6; ++d) {
    tt_tensor x;
    tt_tensor_make_permuted(&x, k_numbers[d], 3, sizes, perm);
    tt_fill(&x, 51 + d, -2, 2);  // few distinct values: many ties
    for (int fn = 0; fn < 2; ++fn) {
      for (int32_t axis = 0; axis < 3; ++axis) {
        int64_t out_sizes[3] = {4, 6, 5};
        out_sizes[axis] = 1;
        tt_tensor out;
        tt_tensor_make(&out, TSR_INT64, 3, out_sizes, NULL, 0);
        tsr_arg_reduce_attrs attrs = {sizeof(attrs), fn, axis};
        tt_tensor *in[] = {&x};
        tt_tensor *outs[] = {&out};
        assert_int_equal(tt_run(TSR_OP_ARG_REDUCE, &attrs, in, 1, outs, 1, NULL), TSR_OK);
        int64_t idx[3] = {0, 0, 0}, i = 0;
        int64_t *want = arg_want(&x, axis, fn, out_sizes);
        do {
          assert_int_equal((int64_t)tt_get(&out, idx), want[i++]);
        } while (tt_index_next(idx, 3, out_sizes));
        free(want);
        tt_tensor_free(&out);
      }
    }
    tt_tensor_free(&x);
  }
}

static void test_arg_reduce_lets_the_first_nan_win(void **state) {
  (void)state;
  const int64_t sizes[] = {6};
  const int64_t one[] = {1};
  const double xs[] = {1, 5, NAN, -7, NAN, 9};
  const tsr_dtype_t dtypes[] = {TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16};
  for (int d = 0; d < 3; ++d) {
    tt_tensor x, out;
    tt_tensor_make(&x, dtypes[d], 1, sizes, NULL, 0);
    tt_tensor_make(&out, TSR_INT64, 1, one, NULL, 0);
    for (int64_t i = 0; i < 6; ++i) tt_set(&x, &i, xs[i]);
    int64_t zero = 0;
    for (int fn = 0; fn < 2; ++fn) {
      tsr_arg_reduce_attrs attrs = {sizeof(attrs), fn, 0};
      tt_tensor *in[] = {&x};
      tt_tensor *outs[] = {&out};
      assert_int_equal(tt_run(TSR_OP_ARG_REDUCE, &attrs, in, 1, outs, 1, NULL), TSR_OK);
      assert_true(tt_get(&out, &zero) == 2);
    }
    tt_tensor_free(&x);
    tt_tensor_free(&out);
  }
}

static void test_arg_reduce_refuses_an_empty_axis_and_a_non_int64_output(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 0};
  const int64_t out_sizes[] = {3, 1};
  tt_tensor x, out, out32;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT64, 2, out_sizes, NULL, 0);
  tt_tensor_make(&out32, TSR_INT32, 2, out_sizes, NULL, 0);
  tsr_arg_reduce_attrs attrs = {sizeof(attrs), TSR_ARG_REDUCE_ARGMAX, 1};
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_ARG_REDUCE, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "axis 1 of x is empty"));
  attrs.axis = 2;
  assert_int_equal(tt_supports(TSR_OP_ARG_REDUCE, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "axis 2"));
  attrs.axis = 0;
  outs[0] = &out32;
  assert_int_equal(tt_supports(TSR_OP_ARG_REDUCE, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "int64"));
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  tt_tensor_free(&out32);
}

static void test_arg_reduce_of_many_rows_runs_on_the_pool(void **state) {
  (void)state;
  const int64_t sizes[] = {2000, 70};
  const int64_t out_sizes[] = {2000, 1};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT64, 2, out_sizes, NULL, 0);
  tt_fill(&x, 61, -1, 1);
  tsr_arg_reduce_attrs attrs = {sizeof(attrs), TSR_ARG_REDUCE_ARGMAX, 1};
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_ARG_REDUCE, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  int64_t idx[2] = {0, 0}, i = 0;
  int64_t *want = arg_want(&x, 1, TSR_ARG_REDUCE_ARGMAX, out_sizes);
  do assert_int_equal((int64_t)tt_get(&out, idx), want[i++]);
  while (tt_index_next(idx, 2, out_sizes));
  free(want);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduce_every_fn_over_every_axis_set_matches_double_loops),
      cmocka_unit_test(test_reduce_half_types_accumulate_long_sums_wide),
      cmocka_unit_test(test_reduce_reads_transposed_and_strided_views),
      cmocka_unit_test(test_reduce_of_an_empty_axis_gives_identity_or_nan_and_max_is_refused),
      cmocka_unit_test(test_reduce_max_and_min_propagate_nan),
      cmocka_unit_test(test_reduce_int_sum_and_prod_wrap_modulo_2_to_the_bits),
      cmocka_unit_test(test_reduce_long_sums_are_bitwise_identical_on_one_and_two_threads),
      cmocka_unit_test(test_reduce_many_outputs_run_on_the_pool),
      cmocka_unit_test(test_reduce_column_sums_match_a_sequential_walk_bit_for_bit),
      cmocka_unit_test(test_reduce_refuses_bad_axes_and_shapes),
      cmocka_unit_test(test_arg_reduce_finds_the_first_extreme_on_every_axis_and_dtype),
      cmocka_unit_test(test_arg_reduce_lets_the_first_nan_win),
      cmocka_unit_test(test_arg_reduce_refuses_an_empty_axis_and_a_non_int64_output),
      cmocka_unit_test(test_arg_reduce_of_many_rows_runs_on_the_pool),
  };
  int failed = cmocka_run_group_tests_name("reduce, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("reduce, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
