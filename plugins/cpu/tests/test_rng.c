// RNG_FILL: the Philox-4x32-10 generator against Random123's published
// known-answer vectors, each distribution and dtype against the conformance
// oracle's float64 reading of the catalogue's formulas, independence from
// strides, offsets and thread count, rough statistics, and refusals.
#include "test_data_util.h"

#include <stdlib.h>

#include "oracle/oracle.h"
#include "philox.h"

// Random123's kat_vectors for philox4x32 with 10 rounds (counter words,
// key words, output words):
//   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000
//                 6627e8d5 e169c58d bc57ac4c 9b00dbd8
//   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
//                 408f276d 41c83b0e a20bc7c6 6d5451fd
//   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0
//                 d16cfe09 94fdcceb 5001e420 24126ea1
static void test_philox_matches_the_random123_known_answers(void **state) {
  (void)state;
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x408f276du,
       0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u, 0xd16cfe09u,
       0x94fdccebu, 0x5001e420u, 0x24126ea1u},
  };
  for (int v = 0; v < 3; ++v) {
    uint32_t out[4];
    tsr_cpu_philox4x32_10(&kat[v][0], &kat[v][4], out);
    for (int w = 0; w < 4; ++w) {
      if (out[w] != kat[v][6 + w]) {
        fail_msg("vector %d word %d: got %08x, want %08x", v, w, out[w], kat[v][6 + w]);
      }
    }
  }
}

// The conformance oracle's RNG_FILL (abi.md 10.22) of |out|'s logical
// elements, in float64 before the rounding to the dtype, in a new array.
static double *rng_want(const tsr_rng_fill_attrs *attrs, const tt_tensor *out) {
  tsr_oracle_tensor t;
  assert_int_equal(tsr_oracle_tensor_create(out->desc.dtype, out->desc.rank, out->desc.sizes, &t),
                   0);
  tsr_oracle_call call = {TSR_OP_RNG_FILL, attrs, 0, 1, NULL, &t, {0}};
  assert_int_equal(tsr_oracle_compute(&call), TSR_OK);
  double *want = malloc(sizeof(double) * (size_t)(t.numel > 0 ? t.numel : 1));
  assert_non_null(want);
  memcpy(want, t.v, sizeof(double) * (size_t)t.numel);
  tsr_oracle_tensor_destroy(&t);
  return want;
}

// Checks every element of |out| (any strides) against the formula; exact
// for UNIFORM and BERNOULLI, within one rounding of the dtype for NORMAL.
static void rng_check(const tsr_rng_fill_attrs *attrs, const tt_tensor *out) {
  const tsr_dtype_t dtype = out->desc.dtype;
  if (tt_numel(out) == 0) return;
  double *all = rng_want(attrs, out);
  int64_t idx[TSR_MAX_RANK] = {0};
  uint64_t i = 0;
  do {
    double want = tt_round(all[i], dtype);
    double got = tt_get(out, idx);
    if (attrs->distribution == TSR_RNG_NORMAL) {
      double rtol = dtype == TSR_FLOAT64 ? 1e-14 : 2 * tt_rtol(dtype);
      du_expect_close("rng normal", dtype, (int64_t)i, got, want, rtol, 1e-12);
    } else {
      du_expect_exact(attrs->distribution == TSR_RNG_UNIFORM ? "rng uniform" : "rng bernoulli",
                      dtype, idx, out->desc.rank, got, want);
    }
    ++i;
  } while (tt_index_next(idx, out->desc.rank, out->desc.sizes));
  free(all);
}

static tsr_status rng_run(const tsr_rng_fill_attrs *attrs, tt_tensor *out) {
  tt_tensor *outs[] = {out};
  return tt_run(TSR_OP_RNG_FILL, attrs, NULL, 0, outs, 1, NULL);
}

static void test_rng_matches_the_formulas_for_every_distribution_and_dtype(void **state) {
  (void)state;
  const int64_t sizes[] = {7, 37};
  for (tsr_rng_distribution_t dist = 0; dist < TSR_RNG_DISTRIBUTION_COUNT; ++dist) {
    for (size_t di = 0; di < sizeof(du_all_dtypes) / sizeof(du_all_dtypes[0]); ++di) {
      const tsr_dtype_t dtype = du_all_dtypes[di];
      if (dist != TSR_RNG_BERNOULLI && !du_is_float(dtype)) continue;
      tt_tensor out;
      tt_tensor_make(&out, dtype, 2, sizes, NULL, 0);
      const double a = dist == TSR_RNG_BERNOULLI ? 0.3 : -1.5;
      const double b = dist == TSR_RNG_NORMAL ? 2.0 : 3.25;
      // The seed's two words differ, so swapping them would show.
      tsr_rng_fill_attrs attrs = {sizeof(attrs), dist, 0, 0x0123456789abcdefull, 77, a, b};
      assert_int_equal(rng_run(&attrs, &out), TSR_OK);
      rng_check(&attrs, &out);
      tt_tensor_free(&out);
    }
  }
}

static void test_rng_does_not_depend_on_strides_and_the_offset_shifts_the_stream(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 5, 6};
  for (tsr_rng_distribution_t dist = 0; dist < TSR_RNG_DISTRIBUTION_COUNT; ++dist) {
    tsr_rng_fill_attrs attrs = {sizeof(attrs), dist, 0, 42, 0, 0.25, 1.0};
    tt_tensor dense, permuted, strided, flat;
    tt_tensor_make(&dense, TSR_FLOAT32, 3, sizes, NULL, 0);
    tt_tensor_make_permuted(&permuted, TSR_FLOAT32, 3, sizes, (const int32_t[]){2, 1, 0});
    tt_tensor_make(&strided, TSR_FLOAT32, 3, sizes, (const int64_t[]){99, 17, 2}, 3);
    assert_int_equal(rng_run(&attrs, &dense), TSR_OK);
    assert_int_equal(rng_run(&attrs, &permuted), TSR_OK);
    assert_int_equal(rng_run(&attrs, &strided), TSR_OK);
    int64_t idx[3] = {0, 0, 0};
    do {
      assert_true(tt_get(&dense, idx) == tt_get(&permuted, idx));
      assert_true(tt_get(&dense, idx) == tt_get(&strided, idx));
    } while (tt_index_next(idx, 3, sizes));
    rng_check(&attrs, &strided);
    // Element i of a fill at offset 30 is element 30 + i of a fill at 0.
    tt_tensor_make(&flat, TSR_FLOAT32, 1, (const int64_t[]){90}, NULL, 0);
    attrs.offset = 30;
    assert_int_equal(rng_run(&attrs, &flat), TSR_OK);
    for (int64_t i = 0; i < 90; ++i) {
      int64_t j[3] = {(30 + i) / 30, ((30 + i) / 6) % 5, (30 + i) % 6};
      assert_true(tt_get(&flat, &i) == tt_get(&dense, j));
    }
    tt_tensor_free(&dense);
    tt_tensor_free(&permuted);
    tt_tensor_free(&strided);
    tt_tensor_free(&flat);
  }
}

static void test_rng_counter_carries_into_its_high_word_and_wraps(void **state) {
  (void)state;
  // Offsets near 2^32 and 2^64: the counter is (offset + i) mod 2^64 split
  // into two words.
  const uint64_t offsets[] = {0xfffffffdull, 0xfffffffffffffffdull};
  for (int k = 0; k < 2; ++k) {
    tt_tensor out;
    tt_tensor_make(&out, TSR_FLOAT64, 1, (const int64_t[]){6}, NULL, 0);
    tsr_rng_fill_attrs attrs = {sizeof(attrs), TSR_RNG_UNIFORM, 0, 5, offsets[k], 0, 1};
    assert_int_equal(rng_run(&attrs, &out), TSR_OK);
    rng_check(&attrs, &out);
    tt_tensor_free(&out);
  }
}

static void test_rng_large_gives_the_same_bits_on_one_and_two_threads(void **state) {
  (void)state;
  const int64_t sizes[] = {200, 300};
  for (tsr_rng_distribution_t dist = 0; dist < TSR_RNG_DISTRIBUTION_COUNT; ++dist) {
    tt_tensor out;
    tt_tensor_make_permuted(&out, TSR_FLOAT32, 2, sizes, (const int32_t[]){1, 0});
    tsr_rng_fill_attrs attrs = {sizeof(attrs), dist, 0, 1234, 99, 0.5, 2.0};
    tt_tensor *outs[] = {&out};
    du_expect_same_bits_on_one_and_two_threads(TSR_OP_RNG_FILL, &attrs, NULL, 0, outs, 1);
    rng_check(&attrs, &out);
    tt_tensor_free(&out);
  }
}

static void test_rng_statistics_are_roughly_right(void **state) {
  (void)state;
  enum { N = 100000 };
  tt_tensor out;
  tt_tensor_make(&out, TSR_FLOAT64, 1, (const int64_t[]){N}, NULL, 0);
  const double *v = (const double *)(const void *)(out.base + out.desc.byte_offset);
  tsr_rng_fill_attrs attrs = {sizeof(attrs), TSR_RNG_UNIFORM, 0, 7, 0, 2, 4};
  assert_int_equal(rng_run(&attrs, &out), TSR_OK);
  double sum = 0, sq = 0;
  for (int i = 0; i < N; ++i) {
    assert_true(v[i] >= 2 && v[i] < 4);
    sum += v[i];
    sq += (v[i] - 3) * (v[i] - 3);
  }
  assert_true(fabs(sum / N - 3) < 0.01);
  assert_true(fabs(sq / N - 1.0 / 3) < 0.01);  // variance of U(2, 4)
  attrs.distribution = TSR_RNG_NORMAL;
  attrs.a = 1;
  attrs.b = 0.5;
  assert_int_equal(rng_run(&attrs, &out), TSR_OK);
  sum = sq = 0;
  for (int i = 0; i < N; ++i) sum += v[i];
  for (int i = 0; i < N; ++i) sq += (v[i] - sum / N) * (v[i] - sum / N);
  assert_true(fabs(sum / N - 1) < 0.01);
  assert_true(fabs(sqrt(sq / N) - 0.5) < 0.01);
  attrs.distribution = TSR_RNG_BERNOULLI;
  const double ps[] = {-1, 0, 0.2, 1, 2};
  for (int p = 0; p < 5; ++p) {
    attrs.a = ps[p];
    assert_int_equal(rng_run(&attrs, &out), TSR_OK);
    sum = 0;
    for (int i = 0; i < N; ++i) sum += v[i];
    double want = ps[p] < 0 ? 0 : (ps[p] > 1 ? 1 : ps[p]);
    if (ps[p] <= 0 || ps[p] >= 1) {
      assert_true(sum / N == want);  // a <= 0: all 0; a >= 1: all 1
    } else {
      assert_true(fabs(sum / N - want) < 0.01);
    }
  }
  tt_tensor_free(&out);
}

static void test_rng_fills_empty_and_rank_zero_outputs(void **state) {
  (void)state;
  tt_tensor empty, scalar;
  tt_tensor_make(&empty, TSR_FLOAT32, 2, (const int64_t[]){0, 5}, NULL, 0);
  tt_tensor_make(&scalar, TSR_BOOL, 0, NULL, NULL, 0);
  tsr_rng_fill_attrs attrs = {sizeof(attrs), TSR_RNG_BERNOULLI, 0, 3, 0, 0.5, 0};
  assert_int_equal(rng_run(&attrs, &empty), TSR_OK);
  assert_int_equal(rng_run(&attrs, &scalar), TSR_OK);
  rng_check(&attrs, &scalar);
  tt_tensor_free(&empty);
  tt_tensor_free(&scalar);
}

static void test_rng_refuses_what_the_catalogue_forbids(void **state) {
  (void)state;
  tt_tensor out, iout;
  tt_tensor_make(&out, TSR_FLOAT32, 1, (const int64_t[]){4}, NULL, 0);
  tt_tensor_make(&iout, TSR_INT32, 1, (const int64_t[]){4}, NULL, 0);
  tt_tensor *outs[] = {&out};
  tt_tensor *iouts[] = {&iout};
  du_expect_invalid(tt_supports(TSR_OP_RNG_FILL, NULL, NULL, 0, outs, 1), "attrs is NULL");
  tsr_rng_fill_attrs attrs = {sizeof(attrs), TSR_RNG_UNIFORM, 0, 1, 0, 0, 1};
  du_expect_invalid(tt_supports(TSR_OP_RNG_FILL, &attrs, NULL, 0, iouts, 1), "int32");
  attrs.distribution = TSR_RNG_NORMAL;
  du_expect_invalid(tt_supports(TSR_OP_RNG_FILL, &attrs, NULL, 0, iouts, 1), "int32");
  attrs.distribution = TSR_RNG_BERNOULLI;
  assert_int_equal(tt_supports(TSR_OP_RNG_FILL, &attrs, NULL, 0, iouts, 1), TSR_OK);
  attrs.distribution = 3;
  assert_int_equal(tt_supports(TSR_OP_RNG_FILL, &attrs, NULL, 0, outs, 1), TSR_UNSUPPORTED);
  assert_non_null(strstr(tsr_test_host_error_get(), "distribution 3"));
  attrs.distribution = TSR_RNG_UNIFORM;
  attrs.struct_size = offsetof(tsr_rng_fill_attrs, b);
  du_expect_invalid(tt_supports(TSR_OP_RNG_FILL, &attrs, NULL, 0, outs, 1), "struct_size");
  // An output whose elements overlap.
  tt_tensor bad;
  tt_tensor_make(&bad, TSR_FLOAT32, 1, (const int64_t[]){4}, (const int64_t[]){0}, 0);
  tt_tensor *bads[] = {&bad};
  attrs.struct_size = sizeof(attrs);
  du_expect_invalid(tt_supports(TSR_OP_RNG_FILL, &attrs, NULL, 0, bads, 1), "overlap");
  tt_tensor_free(&out);
  tt_tensor_free(&iout);
  tt_tensor_free(&bad);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_philox_matches_the_random123_known_answers),
      cmocka_unit_test(test_rng_matches_the_formulas_for_every_distribution_and_dtype),
      cmocka_unit_test(test_rng_does_not_depend_on_strides_and_the_offset_shifts_the_stream),
      cmocka_unit_test(test_rng_counter_carries_into_its_high_word_and_wraps),
      cmocka_unit_test(test_rng_large_gives_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_rng_statistics_are_roughly_right),
      cmocka_unit_test(test_rng_fills_empty_and_rank_zero_outputs),
      cmocka_unit_test(test_rng_refuses_what_the_catalogue_forbids),
  };
  return cmocka_run_group_tests(tests, tt_setup_two_threads, tt_teardown);
}
