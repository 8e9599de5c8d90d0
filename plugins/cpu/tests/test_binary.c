// BINARY against float64 loops: layouts, broadcasting, dtypes, NaN and
// integer rules, aliasing, and the signatures it must refuse.
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

static const tsr_dtype_t k_numbers[] = {TSR_FLOAT32,  TSR_FLOAT64, TSR_INT32,
                                        TSR_INT64,    TSR_BFLOAT16, TSR_FLOAT16};
static const tsr_dtype_t k_floats[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16};

// The catalogue's BINARY as the conformance oracle reads it: float64, or
// exact ints wrapped as the dtype does.
static double binary_want(tsr_binary_fn_t fn, tsr_dtype_t dtype, double a, double b, double alpha) {
  if (dtype == TSR_INT32 || dtype == TSR_INT64) {
    return (double)tsr_oracle_binary_int(fn, (int64_t)a, (int64_t)b, (int64_t)alpha, dtype);
  }
  return tsr_oracle_binary_value(fn, a, b, alpha);
}

// Runs BINARY fn on (a, b) -> out and checks every element of out.
static void binary_check(tsr_binary_fn_t fn, double alpha, tt_tensor *a, tt_tensor *b,
                         tt_tensor *out) {
  tsr_binary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
  tt_tensor *in[] = {a, b};
  tt_tensor *outs[] = {out};
  assert_int_equal(tt_run(TSR_OP_BINARY, &attrs, in, 2, outs, 1, NULL), TSR_OK);
  if (tt_numel(out) == 0) return;
  int64_t idx[TSR_MAX_RANK] = {0};
  const tsr_dtype_t dtype = out->desc.dtype;
  do {
    double want = binary_want(fn, dtype, tt_get_broadcast(a, idx), tt_get_broadcast(b, idx), alpha);
    double got = tt_get(out, idx);
    // The half types compute in float32 and round once: half an ulp.
    double rtol = tt_is_half(dtype) ? tt_rtol(dtype) : 4 * tt_rtol(dtype);
    if (!tt_close(got, want, rtol, 1e-30)) {
      fail_msg("binary fn %d dtype %d: got %.17g, want %.17g", (int)fn, (int)dtype, got, want);
    }
  } while (tt_index_next(idx, out->desc.rank, out->desc.sizes));
}

static void test_binary_arithmetic_matches_double_loops_for_every_dtype(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 7, 5};
  for (size_t d = 0; d < sizeof(k_numbers) / sizeof(k_numbers[0]); ++d) {
    for (tsr_binary_fn_t fn = TSR_BINARY_ADD; fn <= TSR_BINARY_MINIMUM; ++fn) {
      tt_tensor a, b, out;
      tt_tensor_make(&a, k_numbers[d], 3, sizes, NULL, 0);
      tt_tensor_make(&b, k_numbers[d], 3, sizes, NULL, 0);
      tt_tensor_make(&out, k_numbers[d], 3, sizes, NULL, 0);
      tt_fill(&a, 1 + fn, -50, 50);
      tt_fill(&b, 2 + fn, -9, 9);
      binary_check(fn, 1.0, &a, &b, &out);
      tt_tensor_free(&a);
      tt_tensor_free(&b);
      tt_tensor_free(&out);
    }
  }
}

static void test_binary_add_broadcasts_stride_zero_inputs(void **state) {
  (void)state;
  const int64_t out_sizes[] = {4, 6, 5};
  const int64_t a_sizes[] = {4, 1, 5};
  const int64_t b_sizes[] = {1, 6, 1};
  // b also as an expanded view: full sizes, stride 0 where it repeats.
  const int64_t b_view_strides[] = {0, 1, 0};
  for (int d = 0; d < 4; ++d) {
    tt_tensor a, b, b_expanded, out;
    tt_tensor_make(&a, k_floats[d], 3, a_sizes, NULL, 0);
    tt_tensor_make(&b, k_floats[d], 3, b_sizes, NULL, 0);
    tt_tensor_make(&b_expanded, k_floats[d], 3, out_sizes, b_view_strides, 0);
    tt_tensor_make(&out, k_floats[d], 3, out_sizes, NULL, 0);
    tt_fill(&a, 3, -1, 1);
    tt_fill(&b, 4, -1, 1);
    tt_fill(&b_expanded, 4, -1, 1);
    binary_check(TSR_BINARY_ADD, 1.0, &a, &b, &out);
    binary_check(TSR_BINARY_MUL, 1.0, &a, &b_expanded, &out);
    binary_check(TSR_BINARY_SUB, 1.0, &b_expanded, &a, &out);
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&b_expanded);
    tt_tensor_free(&out);
  }
}

static void test_binary_works_on_transposed_and_offset_views_up_to_rank_8(void **state) {
  (void)state;
  const int64_t sizes3[] = {5, 3, 4};
  const int32_t perm_a[] = {2, 0, 1};
  const int32_t perm_out[] = {1, 2, 0};
  tt_tensor a, b, out;
  tt_tensor_make_permuted(&a, TSR_FLOAT32, 3, sizes3, perm_a);
  const int64_t b_strides[] = {40, 9, 2};  // gaps between every element
  tt_tensor_make(&b, TSR_FLOAT32, 3, sizes3, b_strides, 3);
  tt_tensor_make_permuted(&out, TSR_FLOAT32, 3, sizes3, perm_out);
  tt_fill(&a, 5, -3, 3);
  tt_fill(&b, 6, -3, 3);
  binary_check(TSR_BINARY_DIV, 1.0, &a, &b, &out);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);

  // Inputs may overlap themselves: a sliding window, a[i][j] = base[i + j].
  const int64_t window_sizes[] = {6, 4};
  const int64_t window_strides[] = {1, 1};
  tt_tensor_make(&a, TSR_INT32, 2, window_sizes, window_strides, 0);
  tt_tensor_make(&b, TSR_INT32, 2, window_sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 2, window_sizes, NULL, 0);
  for (int64_t i = 0; i < 9; ++i) ((int32_t *)a.base)[i] = (int32_t)(i * i);
  tt_fill(&b, 9, -4, 4);
  binary_check(TSR_BINARY_MUL, 1.0, &a, &b, &out);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);

  const int64_t sizes8[] = {2, 3, 1, 2, 2, 3, 1, 2};
  const int32_t perm8[] = {7, 6, 5, 4, 3, 2, 1, 0};
  tt_tensor_make_permuted(&a, TSR_FLOAT64, 8, sizes8, perm8);
  tt_tensor_make(&b, TSR_FLOAT64, 8, sizes8, NULL, 1);
  tt_tensor_make(&out, TSR_FLOAT64, 8, sizes8, NULL, 0);
  tt_fill(&a, 7, -3, 3);
  tt_fill(&b, 8, -3, 3);
  binary_check(TSR_BINARY_MAXIMUM, 1.0, &a, &b, &out);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_binary_add_and_sub_scale_b_by_alpha(void **state) {
  (void)state;
  const int64_t sizes[] = {17};
  for (size_t d = 0; d < 6; ++d) {
    tt_tensor a, b, out;
    tt_tensor_make(&a, k_numbers[d], 1, sizes, NULL, 0);
    tt_tensor_make(&b, k_numbers[d], 1, sizes, NULL, 0);
    tt_tensor_make(&out, k_numbers[d], 1, sizes, NULL, 0);
    tt_fill(&a, 9, -20, 20);
    tt_fill(&b, 10, -20, 20);
    binary_check(TSR_BINARY_ADD, -3.0, &a, &b, &out);
    binary_check(TSR_BINARY_SUB, 2.0, &a, &b, &out);
    if (d < 2 || d >= 4) binary_check(TSR_BINARY_ADD, 0.25, &a, &b, &out);
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
  }
}

static void test_binary_rejects_a_fractional_alpha_for_int(void **state) {
  (void)state;
  const int64_t sizes[] = {4};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_INT32, 1, sizes, NULL, 0);
  tt_tensor_make(&b, TSR_INT32, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 1, sizes, NULL, 0);
  tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_ADD, 0, 0.5};
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_BINARY, &attrs, in, 2, outs, 1, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "alpha"));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_binary_int_division_truncates_and_division_by_zero_gives_zero(void **state) {
  (void)state;
  const int64_t sizes[] = {6};
  const double as[] = {7, -7, 7, -7, 5, -2147483648.0};
  const double bs[] = {2, 2, -2, -2, 0, -1};
  const double want[] = {3, -3, -3, 3, 0, -2147483648.0};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_INT32, 1, sizes, NULL, 0);
  tt_tensor_make(&b, TSR_INT32, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 1, sizes, NULL, 0);
  for (int64_t i = 0; i < 6; ++i) {
    tt_set(&a, &i, as[i]);
    tt_set(&b, &i, bs[i]);
  }
  tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_DIV, 0, 1.0};
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_BINARY, &attrs, in, 2, outs, 1, NULL), TSR_OK);
  for (int64_t i = 0; i < 6; ++i) assert_true(tt_get(&out, &i) == want[i]);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_binary_maximum_and_minimum_propagate_nan_from_either_side(void **state) {
  (void)state;
  const int64_t sizes[] = {4};
  const double as[] = {NAN, 1, NAN, 2};
  const double bs[] = {1, NAN, NAN, -2};
  for (int d = 0; d < 4; ++d) {
    tt_tensor a, b, out;
    tt_tensor_make(&a, k_floats[d], 1, sizes, NULL, 0);
    tt_tensor_make(&b, k_floats[d], 1, sizes, NULL, 0);
    tt_tensor_make(&out, k_floats[d], 1, sizes, NULL, 0);
    for (int64_t i = 0; i < 4; ++i) {
      tt_set(&a, &i, as[i]);
      tt_set(&b, &i, bs[i]);
    }
    binary_check(TSR_BINARY_MAXIMUM, 1.0, &a, &b, &out);
    int64_t i = 0;
    assert_true(isnan(tt_get(&out, &i)));
    i = 1;
    assert_true(isnan(tt_get(&out, &i)));
    binary_check(TSR_BINARY_MINIMUM, 1.0, &a, &b, &out);
    i = 3;
    assert_true(tt_get(&out, &i) == -2);
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
  }
}

static void test_binary_pow_takes_float_only(void **state) {
  (void)state;
  const int64_t sizes[] = {9};
  tt_tensor a, b, out;
  for (int d = 0; d < 4; ++d) {
    tt_tensor_make(&a, k_floats[d], 1, sizes, NULL, 0);
    tt_tensor_make(&b, k_floats[d], 1, sizes, NULL, 0);
    tt_tensor_make(&out, k_floats[d], 1, sizes, NULL, 0);
    tt_fill(&a, 11, 0.1, 4);
    tt_fill(&b, 12, -2, 2);
    binary_check(TSR_BINARY_POW, 1.0, &a, &b, &out);
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
  }

  tt_tensor_make(&a, TSR_INT64, 1, sizes, NULL, 0);
  tt_tensor_make(&b, TSR_INT64, 1, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_INT64, 1, sizes, NULL, 0);
  tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_POW, 0, 1.0};
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_BINARY, &attrs, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "pow takes float"));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_binary_logical_fns_take_bool_and_arithmetic_on_bool_is_unsupported(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 2};
  const int64_t a_sizes[] = {2, 1};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_BOOL, 2, a_sizes, NULL, 0);
  tt_tensor_make(&b, TSR_BOOL, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_BOOL, 2, sizes, NULL, 0);
  int64_t i[2] = {0, 0};
  tt_set(&a, i, 1);
  i[0] = 1;
  tt_set(&a, i, 0);
  const double bv[] = {0, 1, 0, 1};
  i[0] = 0;
  for (int k = 0; k < 4; ++k) {
    i[0] = k / 2;
    i[1] = k % 2;
    tt_set(&b, i, bv[k]);
  }
  binary_check(TSR_BINARY_LOGICAL_AND, 1.0, &a, &b, &out);
  binary_check(TSR_BINARY_LOGICAL_OR, 1.0, &a, &b, &out);
  binary_check(TSR_BINARY_LOGICAL_XOR, 1.0, &a, &b, &out);
  tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_ADD, 0, 1.0};
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_BINARY, &attrs, in, 2, outs, 1), TSR_UNSUPPORTED);
  assert_non_null(strstr(tsr_test_host_error_get(), "bool"));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);

  tt_tensor_make(&a, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, sizes, NULL, 0);
  attrs.fn = TSR_BINARY_LOGICAL_OR;
  assert_int_equal(tt_supports(TSR_OP_BINARY, &attrs, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "logical_or takes bool"));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_binary_writes_in_place_over_an_aliased_input(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 33};
  tt_tensor a, b, before;
  tt_tensor_make(&a, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&before, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_fill(&a, 13, -5, 5);
  tt_fill(&before, 13, -5, 5);
  tt_fill(&b, 14, -5, 5);
  a.desc.alias_group = 0;
  tt_tensor out = a;  // the same view of the same buffer
  tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_MUL, 0, 1.0};
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_BINARY, &attrs, in, 2, outs, 1, NULL), TSR_OK);
  int64_t idx[2] = {0, 0};
  do {
    assert_true(tt_close(tt_get(&out, idx), tt_get(&before, idx) * tt_get(&b, idx), 1e-6, 0));
  } while (tt_index_next(idx, 2, sizes));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&before);
}

static void test_binary_handles_empty_and_rank_0_tensors(void **state) {
  (void)state;
  const int64_t empty[] = {3, 0, 2};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_FLOAT32, 3, empty, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 3, empty, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 3, empty, NULL, 0);
  binary_check(TSR_BINARY_ADD, 1.0, &a, &b, &out);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);

  tt_tensor_make(&a, TSR_INT64, 0, NULL, NULL, 0);
  tt_tensor_make(&b, TSR_INT64, 0, NULL, NULL, 0);
  tt_tensor_make(&out, TSR_INT64, 0, NULL, NULL, 0);
  tt_set(&a, NULL, 40);
  tt_set(&b, NULL, 2);
  binary_check(TSR_BINARY_ADD, 1.0, &a, &b, &out);
  assert_true(tt_get(&out, NULL) == 42);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_binary_large_inputs_match_across_the_parallel_split(void **state) {
  (void)state;
  const int64_t sizes[] = {301, 1111};  // ~330k elements: several parallel chunks
  const int64_t row_sizes[] = {1, 1111};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, row_sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_fill(&a, 15, -5, 5);
  tt_fill(&b, 16, -5, 5);
  uint64_t parallel_before = tsr_test_host_parallel_count();
  binary_check(TSR_BINARY_SUB, 1.0, &a, &b, &out);
  if (tsr_test_host_get()->thread_count(NULL) > 1) {
    assert_true(tsr_test_host_parallel_count() > parallel_before);
  }
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_binary_rejects_shapes_that_do_not_broadcast(void **state) {
  (void)state;
  const int64_t out_sizes[] = {4, 5};
  const int64_t bad_sizes[] = {4, 3};
  const int64_t low_rank[] = {5};
  tt_tensor a, bad, low, out;
  tt_tensor_make(&a, TSR_FLOAT32, 2, out_sizes, NULL, 0);
  tt_tensor_make(&bad, TSR_FLOAT32, 2, bad_sizes, NULL, 0);
  tt_tensor_make(&low, TSR_FLOAT32, 1, low_rank, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, out_sizes, NULL, 0);
  tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_ADD, 0, 1.0};
  tt_tensor *in[] = {&a, &bad};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_BINARY, &attrs, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "binary: b sizes[1] is 3"));
  in[1] = &low;
  assert_int_equal(tt_supports(TSR_OP_BINARY, &attrs, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "rank"));
  // A mixed-dtype pair.
  tt_tensor d;
  tt_tensor_make(&d, TSR_FLOAT64, 2, out_sizes, NULL, 0);
  in[1] = &d;
  assert_int_equal(tt_supports(TSR_OP_BINARY, &attrs, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "dtype"));
  attrs.fn = TSR_BINARY_FN_COUNT;  // maybe from a newer catalogue: unsupported
  in[1] = &a;
  assert_int_equal(tt_supports(TSR_OP_BINARY, &attrs, in, 2, outs, 1), TSR_UNSUPPORTED);
  assert_non_null(strstr(tsr_test_host_error_get(), "fn 10"));
  tt_tensor_free(&a);
  tt_tensor_free(&bad);
  tt_tensor_free(&low);
  tt_tensor_free(&out);
  tt_tensor_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_binary_arithmetic_matches_double_loops_for_every_dtype),
      cmocka_unit_test(test_binary_add_broadcasts_stride_zero_inputs),
      cmocka_unit_test(test_binary_works_on_transposed_and_offset_views_up_to_rank_8),
      cmocka_unit_test(test_binary_add_and_sub_scale_b_by_alpha),
      cmocka_unit_test(test_binary_rejects_a_fractional_alpha_for_int),
      cmocka_unit_test(test_binary_int_division_truncates_and_division_by_zero_gives_zero),
      cmocka_unit_test(test_binary_maximum_and_minimum_propagate_nan_from_either_side),
      cmocka_unit_test(test_binary_pow_takes_float_only),
      cmocka_unit_test(test_binary_logical_fns_take_bool_and_arithmetic_on_bool_is_unsupported),
      cmocka_unit_test(test_binary_writes_in_place_over_an_aliased_input),
      cmocka_unit_test(test_binary_handles_empty_and_rank_0_tensors),
      cmocka_unit_test(test_binary_large_inputs_match_across_the_parallel_split),
      cmocka_unit_test(test_binary_rejects_shapes_that_do_not_broadcast),
  };
  int failed = cmocka_run_group_tests_name("binary, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("binary, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
