// FILL, COPY and CAST: every dtype pair, the CAST conversion rules
// (truncation, saturation, NaN, bool), strided and broadcast views.
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

static const tsr_dtype_t k_dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16,
                                       TSR_INT32,   TSR_INT64,   TSR_BOOL};
#define DTYPE_COUNT (sizeof(k_dtypes) / sizeof(k_dtypes[0]))

// CAST's rule for one value: the conformance oracle's, in float64 (exact for
// every test value).
static double cast_want(double v, tsr_dtype_t to) {
  double out;
  int64_t out_int;
  tsr_oracle_cast_double(v, to, &out, &out_int);
  return out;
}

static void test_fill_writes_the_value_converted_like_cast_into_every_dtype(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 5};
  const int64_t strides[] = {11, 2};  // a strided view: gaps keep their poison
  // 1 + 2^-8 + 2^-40 and 1 + 2^-11 + 2^-40: a double just past a half-way
  // point of bfloat16 (float16) that a float32 on the way would round onto it.
  const double values[] = {2.75, -2.75, 1e20, NAN, 0.0, 1.0 + 0x1p-8 + 0x1p-40,
                           1.0 + 0x1p-11 + 0x1p-40};
  for (size_t d = 0; d < DTYPE_COUNT; ++d) {
    for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); ++v) {
      tt_tensor out;
      tt_tensor_make(&out, k_dtypes[d], 2, sizes, strides, 1);
      tsr_fill_attrs attrs = {sizeof(attrs), values[v]};
      tt_tensor *outs[] = {&out};
      assert_int_equal(tt_run(TSR_OP_FILL, &attrs, NULL, 0, outs, 1, NULL), TSR_OK);
      double want = cast_want(values[v], k_dtypes[d]);
      int64_t idx[2] = {0, 0};
      do assert_true(tt_close(tt_get(&out, idx), want, 0, 0)); while (tt_index_next(idx, 2, sizes));
      // A gap element between views must be untouched (0x7f poison).
      assert_int_equal((unsigned char)out.base[out.desc.byte_offset + tsr_dtype_size(k_dtypes[d])],
                       0x7f);
      tt_tensor_free(&out);
    }
  }
  tt_tensor out;
  tt_tensor_make(&out, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor *outs[] = {&out};
  // attrs NULL means the default value, 0 (docs/abi.md 10.2).
  assert_int_equal(tt_supports(TSR_OP_FILL, NULL, NULL, 0, outs, 1), TSR_OK);
  tt_tensor_free(&out);
}

static void test_copy_moves_every_dtype_between_any_views(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 3, 6};
  const int32_t perm[] = {1, 2, 0};
  const int64_t broadcast_strides[] = {0, 6, 1};
  for (size_t d = 0; d < DTYPE_COUNT; ++d) {
    tt_tensor x, xb, out;
    tt_tensor_make_permuted(&x, k_dtypes[d], 3, sizes, perm);
    tt_tensor_make(&xb, k_dtypes[d], 3, sizes, broadcast_strides, 0);
    tt_tensor_make(&out, k_dtypes[d], 3, sizes, NULL, 3);
    tt_fill(&x, 10 + d, -100, 100);
    tt_fill(&xb, 20 + d, -100, 100);
    tt_tensor *in[] = {&x};
    tt_tensor *outs[] = {&out};
    assert_int_equal(tt_run(TSR_OP_COPY, NULL, in, 1, outs, 1, NULL), TSR_OK);
    int64_t idx[3] = {0, 0, 0};
    do assert_true(tt_get(&out, idx) == tt_get(&x, idx)); while (tt_index_next(idx, 3, sizes));
    in[0] = &xb;
    assert_int_equal(tt_run(TSR_OP_COPY, NULL, in, 1, outs, 1, NULL), TSR_OK);
    do assert_true(tt_get(&out, idx) == tt_get(&xb, idx)); while (tt_index_next(idx, 3, sizes));
    tt_tensor_free(&x);
    tt_tensor_free(&xb);
    tt_tensor_free(&out);
  }
}

static void test_copy_refuses_a_dtype_change_and_an_overlapping_output(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 4};
  const int64_t overlapping[] = {1, 1};
  tt_tensor x, y, out, bad_out;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&y, TSR_INT32, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&bad_out, TSR_FLOAT32, 2, sizes, overlapping, 0);
  tt_tensor *in[] = {&y};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_COPY, NULL, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "dtype"));
  in[0] = &x;
  outs[0] = &bad_out;
  assert_int_equal(tt_supports(TSR_OP_COPY, NULL, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "overlap"));
  // The tightest overlap: [2, 2] with strides [1, 1] puts (0, 1) and (1, 0)
  // on one element; [2, 3] with strides [3, 1] just fits.
  const int64_t two_by_two[] = {2, 2}, two_by_three[] = {2, 3};
  const int64_t unit_strides[] = {1, 1}, dense_strides[] = {3, 1};
  tt_tensor small_x, tight_bad, small_x3, tight_good;
  tt_tensor_make(&small_x, TSR_FLOAT32, 2, two_by_two, NULL, 0);
  tt_tensor_make(&tight_bad, TSR_FLOAT32, 2, two_by_two, unit_strides, 0);
  tt_tensor_make(&small_x3, TSR_FLOAT32, 2, two_by_three, NULL, 0);
  tt_tensor_make(&tight_good, TSR_FLOAT32, 2, two_by_three, dense_strides, 0);
  in[0] = &small_x;
  outs[0] = &tight_bad;
  assert_int_equal(tt_supports(TSR_OP_COPY, NULL, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  in[0] = &small_x3;
  outs[0] = &tight_good;
  assert_int_equal(tt_supports(TSR_OP_COPY, NULL, in, 1, outs, 1), TSR_OK);
  tt_tensor_free(&small_x);
  tt_tensor_free(&tight_bad);
  tt_tensor_free(&small_x3);
  tt_tensor_free(&tight_good);
  tsr_fill_attrs not_null = {sizeof(not_null), 0};
  outs[0] = &out;
  assert_int_equal(tt_supports(TSR_OP_COPY, &not_null, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "attrs must be NULL"));
  tt_tensor_free(&x);
  tt_tensor_free(&y);
  tt_tensor_free(&out);
  tt_tensor_free(&bad_out);
}

static void test_cast_converts_every_pair_of_dtypes_by_the_catalogue_rules(void **state) {
  (void)state;
  // Values that exercise truncation, saturation, NaN, -0 and bool.
  const double values[] = {0.0,  -0.0, 1.0,   -1.0,   2.5,   -2.5,   0.4,   255.9,
                           3e9,  -3e9, 1e19,  -1e19,  NAN,   INFINITY, -INFINITY, 16777217.0,
                           123456789.0,
                           // Past a half-way point of bfloat16 / float16 by
                           // less than float32 resolves (see the fill test);
                           // as int64, 2^40 + 2^32 + 1 is one past one.
                           1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-11 + 0x1p-40,
                           1099511627776.0 + 4294967296.0 + 1.0, 65519.0, 65520.0,
                           6e-8, 1e-40, 3.3895313892515355e38, 3.4e38};
  const int64_t n = sizeof(values) / sizeof(values[0]);
  const int64_t sizes[] = {n};
  const int64_t strided[] = {3};
  for (size_t from = 0; from < DTYPE_COUNT; ++from) {
    for (size_t to = 0; to < DTYPE_COUNT; ++to) {
      tt_tensor x, out;
      tt_tensor_make(&x, k_dtypes[from], 1, sizes, NULL, 0);
      tt_tensor_make(&out, k_dtypes[to], 1, sizes, strided, 2);
      double stored[64];
      for (int64_t i = 0; i < n; ++i) {
        // What the source dtype can hold of the value (itself a cast).
        stored[i] = cast_want(values[i], k_dtypes[from]);
        tt_set(&x, &i, stored[i]);
        stored[i] = tt_get(&x, &i);
      }
      tt_tensor *in[] = {&x};
      tt_tensor *outs[] = {&out};
      assert_int_equal(tt_run(TSR_OP_CAST, NULL, in, 1, outs, 1, NULL), TSR_OK);
      for (int64_t i = 0; i < n; ++i) {
        double want = cast_want(stored[i], k_dtypes[to]);
        if (k_dtypes[from] == TSR_INT64 && k_dtypes[to] == TSR_INT32) {
          int64_t raw;  // int64 -> int32 keeps the low 32 bits
          memcpy(&raw, x.base + x.desc.byte_offset + (uint64_t)i * 8, 8);
          want = (double)(int32_t)(uint32_t)(uint64_t)raw;
        }
        double got = tt_get(&out, &i);
        if (!tt_close(got, want, 0, 0)) {
          fail_msg("cast %d -> %d of %.17g: got %.17g, want %.17g", (int)k_dtypes[from],
                   (int)k_dtypes[to], stored[i], got, want);
        }
      }
      tt_tensor_free(&x);
      tt_tensor_free(&out);
    }
  }
}

static void test_cast_of_large_strided_input_runs_on_the_pool(void **state) {
  (void)state;
  const int64_t sizes[] = {517, 301};
  const int32_t perm[] = {1, 0};
  tt_tensor x, out;
  tt_tensor_make_permuted(&x, TSR_FLOAT64, 2, sizes, perm);
  tt_tensor_make(&out, TSR_INT32, 2, sizes, NULL, 0);
  tt_fill(&x, 30, -1e10, 1e10);
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_CAST, NULL, in, 1, outs, 1, NULL), TSR_OK);
  int64_t idx[2] = {0, 0};
  do {
    assert_true(tt_get(&out, idx) == cast_want(tt_get(&x, idx), TSR_INT32));
  } while (tt_index_next(idx, 2, sizes));
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill_writes_the_value_converted_like_cast_into_every_dtype),
      cmocka_unit_test(test_copy_moves_every_dtype_between_any_views),
      cmocka_unit_test(test_copy_refuses_a_dtype_change_and_an_overlapping_output),
      cmocka_unit_test(test_cast_converts_every_pair_of_dtypes_by_the_catalogue_rules),
      cmocka_unit_test(test_cast_of_large_strided_input_runs_on_the_pool),
  };
  int failed = cmocka_run_group_tests_name("fill/copy/cast, serial host", tests, tt_setup_serial,
                                           tt_teardown);
  failed += cmocka_run_group_tests_name("fill/copy/cast, two-thread host", tests,
                                        tt_setup_two_threads, tt_teardown);
  return failed;
}
