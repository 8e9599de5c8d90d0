// The oracle against values known from outside it: IEEE bit patterns of
// bfloat16 and float16, the CAST rules, Random123's Philox known-answer
// vectors, and small results worked out by hand.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "oracle_util.h"

static uint16_t bits16(double v, tsr_dtype_t dt) {
  uint16_t b;
  tsr_oracle_element_store(&b, dt, v, 0);
  return b;
}

static double from16(uint16_t b, tsr_dtype_t dt) {
  double v;
  int64_t iv;
  tsr_oracle_element_load(&b, dt, &v, &iv);
  return v;
}

static void test_float16_bits_match_ieee_binary16(void **state) {
  (void)state;
  assert_int_equal(bits16(1.0, TSR_FLOAT16), 0x3C00);
  assert_int_equal(bits16(-2.0, TSR_FLOAT16), 0xC000);
  assert_int_equal(bits16(65504.0, TSR_FLOAT16), 0x7BFF);
  assert_int_equal(bits16(65520.0, TSR_FLOAT16), 0x7C00);  // rounds up to inf
  assert_int_equal(bits16(ldexp(1.0, -24), TSR_FLOAT16), 0x0001);
  assert_int_equal(bits16(ldexp(1.0, -14), TSR_FLOAT16), 0x0400);
  assert_int_equal(bits16(-0.0, TSR_FLOAT16), 0x8000);
  assert_int_equal(bits16(2049.0, TSR_FLOAT16), 0x6800);  // tie to even: 2048
  assert_int_equal(bits16(2051.0, TSR_FLOAT16), 0x6802);  // tie to even: 2052
  assert_true(isnan(from16(0x7E00, TSR_FLOAT16)));
  assert_true(from16(0x3555, TSR_FLOAT16) == 0.333251953125);
}

static void test_bfloat16_bits_match_the_top_of_float32(void **state) {
  (void)state;
  assert_int_equal(bits16(1.0, TSR_BFLOAT16), 0x3F80);
  assert_int_equal(bits16(-1.5, TSR_BFLOAT16), 0xBFC0);
  assert_int_equal(bits16(1.0 + ldexp(1.0, -8), TSR_BFLOAT16), 0x3F80);   // tie to even
  assert_int_equal(bits16(1.0 + 3 * ldexp(1.0, -8), TSR_BFLOAT16), 0x3F82);  // tie to even
  assert_int_equal(bits16(INFINITY, TSR_BFLOAT16), 0x7F80);
  assert_true(from16(0x4049, TSR_BFLOAT16) == 3.140625);
  // Rounding from float64 directly, not through float32 (no double rounding).
  double just_above_tie = 1.0 + ldexp(1.0, -8) + ldexp(1.0, -40);
  assert_int_equal(bits16(just_above_tie, TSR_BFLOAT16), 0x3F81);
}

static void test_cast_follows_docs_abi_10_4(void **state) {
  (void)state;
  double v;
  int64_t iv;
  tsr_oracle_cast_double(NAN, TSR_INT32, &v, &iv);
  assert_int_equal(iv, 0);
  tsr_oracle_cast_double(3e9, TSR_INT32, &v, &iv);
  assert_int_equal(iv, INT32_MAX);
  tsr_oracle_cast_double(-INFINITY, TSR_INT64, &v, &iv);
  assert_true(iv == INT64_MIN);
  tsr_oracle_cast_double(-2.7, TSR_INT32, &v, &iv);
  assert_int_equal(iv, -2);
  tsr_oracle_cast_double(NAN, TSR_BOOL, &v, &iv);
  assert_int_equal(iv, 1);
  tsr_oracle_cast_double(-0.0, TSR_BOOL, &v, &iv);
  assert_int_equal(iv, 0);
  tsr_oracle_cast_int(((int64_t)1 << 53) + 1, TSR_FLOAT64, &v, &iv);
  assert_true(v == ldexp(1.0, 53));  // ties to even
  tsr_oracle_cast_int(16777217, TSR_FLOAT32, &v, &iv);
  assert_true(v == 16777216.0);
  tsr_oracle_cast_int(INT64_MAX, TSR_FLOAT16, &v, &iv);
  assert_true(isinf(v) && v > 0);
  tsr_oracle_cast_int(((int64_t)1 << 33) + 5, TSR_INT32, &v, &iv);
  assert_int_equal(iv, 5);  // low 32 bits
}

static void test_philox_matches_random123_known_answers(void **state) {
  (void)state;
  static const uint32_t cases[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
       0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
       0x5001e420, 0x24126ea1},
  };
  for (int k = 0; k < 3; ++k) {
    uint32_t out[4];
    tsr_oracle_philox4x32(cases[k], cases[k] + 4, out);
    for (int i = 0; i < 4; ++i) assert_int_equal(out[i], cases[k][6 + i]);
  }
}

static void test_rng_fill_uses_the_documented_counter_and_key(void **state) {
  (void)state;
  // Element i of out uses counter (offset + i, 0) and key seed.
  tsr_rng_fill_attrs a = {sizeof(a), TSR_RNG_BERNOULLI, 0, 0xffffffffffffffffull, 0xfffffffffffffffeull, 0.5, 0};
  int64_t n = 3;
  tsr_oracle_tensor out = tsr_test_tensor(TSR_INT32, 1, &n, NULL);
  assert_int_equal(tsr_test_run(TSR_OP_RNG_FILL, &a, NULL, 0, &out, 1), TSR_OK);
  // Element 1 has counter 2^64 - 1: (ffffffff, ffffffff, 0, 0).
  uint32_t counter[4] = {0xffffffff, 0xffffffff, 0, 0}, key[2] = {0xffffffff, 0xffffffff}, x[4];
  tsr_oracle_philox4x32(counter, key, x);
  assert_int_equal(out.iv[1], (double)(x[0] >> 8) * ldexp(1.0, -24) < 0.5);
  // Element 2 wraps to counter 0.
  uint32_t zero[4] = {0, 0, 0, 0};
  tsr_oracle_philox4x32(zero, key, x);
  assert_int_equal(out.iv[2], (double)(x[0] >> 8) * ldexp(1.0, -24) < 0.5);
  tsr_oracle_tensor_destroy(&out);
}

static void test_unary_values_known_by_hand(void **state) {
  (void)state;
  assert_true(fabs(tsr_oracle_unary_value(TSR_UNARY_GELU, 1.0, 0) - 0.8413447460685429) < 1e-15);
  assert_true(fabs(tsr_oracle_unary_value(TSR_UNARY_GELU_TANH, 1.0, 0) - 0.8411919906082768) < 1e-15);
  assert_true(tsr_oracle_unary_value(TSR_UNARY_SIGMOID, 0.0, 0) == 0.5);
  assert_true(tsr_oracle_unary_value(TSR_UNARY_ROUND, 2.5, 0) == 2.0);
  assert_true(signbit(tsr_oracle_unary_value(TSR_UNARY_ROUND, -0.5, 0)));
  assert_true(isnan(tsr_oracle_unary_value(TSR_UNARY_RELU, NAN, 0)));
  assert_true(isnan(tsr_oracle_unary_value(TSR_UNARY_SIGN, NAN, 0)));
  assert_true(tsr_oracle_unary_value(TSR_UNARY_ELU, -INFINITY, 1.0) == -1.0);
  assert_true(isnan(tsr_oracle_unary_derivative(TSR_UNARY_RELU, NAN, 0)));
  assert_true(tsr_oracle_unary_derivative(TSR_UNARY_ABS, 0.0, 0) == 0.0);
  assert_true(tsr_oracle_unary_derivative(TSR_UNARY_LEAKY_RELU, 0.0, 0.1) == 0.1);
}

static void test_reduce_and_arg_reduce_known_by_hand(void **state) {
  (void)state;
  int64_t xs[2] = {2, 3}, os[2] = {2, 1};
  double x[6] = {1, NAN, 3, 4, 5, 4};
  tsr_oracle_tensor in = tsr_test_tensor(TSR_FLOAT64, 2, xs, x);
  tsr_oracle_tensor out = tsr_test_tensor(TSR_FLOAT64, 2, os, NULL);
  tsr_reduce_attrs r = {sizeof(r), TSR_REDUCE_MAX, 0x2};
  assert_int_equal(tsr_test_run(TSR_OP_REDUCE, &r, &in, 1, &out, 1), TSR_OK);
  assert_true(isnan(out.v[0]));
  assert_true(out.v[1] == 5);
  tsr_oracle_tensor idx = tsr_test_tensor(TSR_INT64, 2, os, NULL);
  tsr_arg_reduce_attrs a = {sizeof(a), TSR_ARG_REDUCE_ARGMIN, 1};
  assert_int_equal(tsr_test_run(TSR_OP_ARG_REDUCE, &a, &in, 1, &idx, 1), TSR_OK);
  assert_int_equal(idx.iv[0], 1);  // the NaN wins
  assert_int_equal(idx.iv[1], 0);  // the first of two equal minima
  // An empty axis: SUM 0, PROD 1, MEAN NaN, MAX invalid.
  int64_t es[2] = {2, 0};
  tsr_oracle_tensor empty = tsr_test_tensor(TSR_FLOAT64, 2, es, NULL);
  r.fn = TSR_REDUCE_PROD;
  assert_int_equal(tsr_test_run(TSR_OP_REDUCE, &r, &empty, 1, &out, 1), TSR_OK);
  assert_true(out.v[0] == 1 && out.v[1] == 1);
  r.fn = TSR_REDUCE_MEAN;
  assert_int_equal(tsr_test_run(TSR_OP_REDUCE, &r, &empty, 1, &out, 1), TSR_OK);
  assert_true(isnan(out.v[0]));
  r.fn = TSR_REDUCE_MAX;
  assert_int_equal(tsr_test_run(TSR_OP_REDUCE, &r, &empty, 1, &out, 1), TSR_INVALID_ARGUMENT);
  tsr_oracle_tensor_destroy(&in), tsr_oracle_tensor_destroy(&out), tsr_oracle_tensor_destroy(&idx);
  tsr_oracle_tensor_destroy(&empty);
}

static void test_int_arithmetic_wraps_and_divides_as_written(void **state) {
  (void)state;
  int64_t n = 4;
  double a[4] = {INT32_MIN, INT32_MAX, -7, 7}, b[4] = {-1, 1, 2, 0};
  tsr_oracle_tensor x = tsr_test_tensor(TSR_INT32, 1, &n, a), y = tsr_test_tensor(TSR_INT32, 1, &n, b);
  tsr_oracle_tensor in[2] = {x, y};
  tsr_oracle_tensor out = tsr_test_tensor(TSR_INT32, 1, &n, NULL);
  tsr_binary_attrs div = {sizeof(div), TSR_BINARY_DIV, 0, 1.0};
  assert_int_equal(tsr_test_run(TSR_OP_BINARY, &div, in, 2, &out, 1), TSR_OK);
  assert_int_equal(out.iv[0], INT32_MIN);  // INT_MIN / -1
  assert_int_equal(out.iv[2], -3);         // truncation toward zero
  assert_int_equal(out.iv[3], 0);          // x / 0
  tsr_binary_attrs add = {sizeof(add), TSR_BINARY_ADD, 0, 1.0};
  assert_int_equal(tsr_test_run(TSR_OP_BINARY, &add, in, 2, &out, 1), TSR_OK);
  assert_int_equal(out.iv[1], INT32_MIN);  // wraps
  tsr_oracle_tensor_destroy(&x), tsr_oracle_tensor_destroy(&y), tsr_oracle_tensor_destroy(&out);
}

static void test_pad_reflect_and_replicate_known_by_hand(void **state) {
  (void)state;
  int64_t xs = 3, os7 = 7, os8 = 8;
  double x[3] = {1, 2, 3};
  tsr_oracle_tensor in = tsr_test_tensor(TSR_FLOAT32, 1, &xs, x);
  tsr_oracle_tensor out7 = tsr_test_tensor(TSR_FLOAT32, 1, &os7, NULL);
  tsr_oracle_tensor out8 = tsr_test_tensor(TSR_FLOAT32, 1, &os8, NULL);
  tsr_pad_attrs a;
  memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.mode = TSR_PAD_REFLECT;
  a.pad_before[0] = 2;
  a.pad_after[0] = 2;
  assert_int_equal(tsr_test_run(TSR_OP_PAD, &a, &in, 1, &out7, 1), TSR_OK);
  const double reflect[7] = {3, 2, 1, 2, 3, 2, 1};
  for (int i = 0; i < 7; ++i) assert_true(out7.v[i] == reflect[i]);
  a.mode = TSR_PAD_REPLICATE;
  a.pad_after[0] = 3;
  assert_int_equal(tsr_test_run(TSR_OP_PAD, &a, &in, 1, &out8, 1), TSR_OK);
  const double replicate[8] = {1, 1, 1, 2, 3, 3, 3, 3};
  for (int i = 0; i < 8; ++i) assert_true(out8.v[i] == replicate[i]);
  a.mode = TSR_PAD_REFLECT;  // a pad equal to the size: invalid for REFLECT
  assert_int_equal(tsr_test_run(TSR_OP_PAD, &a, &in, 1, &out8, 1), TSR_INVALID_ARGUMENT);
  tsr_oracle_tensor_destroy(&in), tsr_oracle_tensor_destroy(&out7), tsr_oracle_tensor_destroy(&out8);
}

static void test_pool_ceil_mode_drops_a_window_starting_in_the_padding(void **state) {
  (void)state;
  // H = 5, kernel 2, stride 2, pads 0/1, ceil: ceil((5+1-2)/2)+1 = 3 windows,
  // the third starting at 4 < H + pad_before, so it stays: windows at 0, 2, 4.
  int64_t xs[4] = {1, 1, 1, 5}, ys[4] = {1, 1, 1, 3};
  double x[5] = {1, 2, 3, 4, 5};
  tsr_oracle_tensor in = tsr_test_tensor(TSR_FLOAT64, 4, xs, x);
  tsr_oracle_tensor outs[2] = {tsr_test_tensor(TSR_FLOAT64, 4, ys, NULL), tsr_test_tensor(TSR_INT64, 4, ys, NULL)};
  tsr_pool2d_attrs a = {.struct_size = sizeof(a), .kind = TSR_POOL_MAX, .ceil_mode = 1, .kernel = {1, 2},
                        .stride = {1, 2}, .pad_after = {0, 1}, .dilation = {1, 1}};
  assert_int_equal(tsr_test_run(TSR_OP_POOL2D, &a, &in, 1, outs, 2), TSR_OK);
  assert_true(outs[0].v[0] == 2 && outs[0].v[1] == 4 && outs[0].v[2] == 5);
  assert_int_equal(outs[1].iv[2], 4);
  // AVG over the clipped last window: with count_include_pad the padded
  // position counts (2), without it only the real one (1).
  tsr_oracle_tensor avg = tsr_test_tensor(TSR_FLOAT64, 4, ys, NULL);
  a.kind = TSR_POOL_AVG;
  a.count_include_pad = 1;
  assert_int_equal(tsr_test_run(TSR_OP_POOL2D, &a, &in, 1, &avg, 1), TSR_OK);
  assert_true(avg.v[2] == 2.5);
  a.count_include_pad = 0;
  assert_int_equal(tsr_test_run(TSR_OP_POOL2D, &a, &in, 1, &avg, 1), TSR_OK);
  assert_true(avg.v[2] == 5);
  tsr_oracle_tensor_destroy(&in), tsr_oracle_tensor_destroy(&outs[0]), tsr_oracle_tensor_destroy(&outs[1]);
  tsr_oracle_tensor_destroy(&avg);
}

static void test_matmul_and_conv_known_by_hand(void **state) {
  (void)state;
  int64_t as[2] = {2, 2};
  double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  tsr_oracle_tensor in[3] = {tsr_test_tensor(TSR_FLOAT64, 2, as, a), tsr_test_tensor(TSR_FLOAT64, 2, as, b),
                             tsr_test_tensor(TSR_FLOAT64, 2, as, (double[]){1, 1, 1, 1})};
  tsr_oracle_tensor out = tsr_test_tensor(TSR_FLOAT64, 2, as, (double[]){10, 20, 30, 40});
  tsr_matmul_attrs m = {sizeof(m), 2.0, 0.5, TSR_ACTIVATION_NONE, 1};
  assert_int_equal(tsr_test_run(TSR_OP_MATMUL, &m, in, 3, &out, 1), TSR_OK);
  // 2 * [19 22; 43 50] + 1 + 0.5 * [10 20; 30 40]
  assert_true(out.v[0] == 44 && out.v[1] == 55 && out.v[2] == 102 && out.v[3] == 121);
  // A 1x1 convolution with groups is a per-group matrix product.
  int64_t xs[4] = {1, 2, 1, 1}, ws[4] = {2, 1, 1, 1};
  tsr_oracle_tensor cx[2] = {tsr_test_tensor(TSR_FLOAT64, 4, xs, (double[]){3, 5}),
                             tsr_test_tensor(TSR_FLOAT64, 4, ws, (double[]){2, 7})};
  tsr_oracle_tensor cy = tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL);
  tsr_conv2d_attrs c = {.struct_size = sizeof(c), .stride = {1, 1}, .dilation = {1, 1}, .groups = 2};
  assert_int_equal(tsr_test_run(TSR_OP_CONV2D, &c, cx, 2, &cy, 1), TSR_OK);
  assert_true(cy.v[0] == 6 && cy.v[1] == 35);
  for (int i = 0; i < 3; ++i) tsr_oracle_tensor_destroy(&in[i]);
  tsr_oracle_tensor_destroy(&out), tsr_oracle_tensor_destroy(&cx[0]), tsr_oracle_tensor_destroy(&cx[1]);
  tsr_oracle_tensor_destroy(&cy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_float16_bits_match_ieee_binary16),
      cmocka_unit_test(test_bfloat16_bits_match_the_top_of_float32),
      cmocka_unit_test(test_cast_follows_docs_abi_10_4),
      cmocka_unit_test(test_philox_matches_random123_known_answers),
      cmocka_unit_test(test_rng_fill_uses_the_documented_counter_and_key),
      cmocka_unit_test(test_unary_values_known_by_hand),
      cmocka_unit_test(test_reduce_and_arg_reduce_known_by_hand),
      cmocka_unit_test(test_int_arithmetic_wraps_and_divides_as_written),
      cmocka_unit_test(test_pad_reflect_and_replicate_known_by_hand),
      cmocka_unit_test(test_pool_ceil_mode_drops_a_window_starting_in_the_padding),
      cmocka_unit_test(test_matmul_and_conv_known_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
