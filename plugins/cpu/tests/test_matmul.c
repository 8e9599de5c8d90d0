// MATMUL against the conformance oracle's float64 loops: odd sizes, several
// depth panels, transposed operands, batch broadcasting, bias, activations,
// alpha and beta, thread independence, and the signatures it must refuse.
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

// The oracle's MATMUL of |av| [..., M, K] and |bv| [..., K, N] (batch
// dimensions already out's), |biasv| (out's shape; NULL: none) and |out_v|'s
// initial values (read where beta is not 0) into |out_v|, out's shape.
static void matmul_oracle(const tsr_matmul_attrs *attrs, const tt_tensor *out, const int64_t *as,
                          double *av, const int64_t *bs, double *bv, double *biasv,
                          double *out_v) {
  const tsr_dtype_t dtype = out->desc.dtype;
  const int32_t r = out->desc.rank;
  tsr_oracle_tensor in[3] = {tsr_oracle_tensor_over(dtype, r, as, av),
                             tsr_oracle_tensor_over(dtype, r, bs, bv),
                             tsr_oracle_tensor_over(dtype, r, out->desc.sizes, biasv)};
  tsr_oracle_tensor y = tsr_oracle_tensor_over(dtype, r, out->desc.sizes, out_v);
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_MATMUL, attrs, biasv ? 3 : 2, in, 1, &y),
                   TSR_OK);
}

// Runs MATMUL and checks out against the conformance oracle's float64
// evaluation. |before| holds a copy of out's values before the call (for
// beta).
static void matmul_check(const tsr_matmul_attrs *attrs, tt_tensor *a, tt_tensor *b,
                         tt_tensor *bias, tt_tensor *out, const tt_tensor *before,
                         const char *engine_want) {
  tt_tensor *in[] = {a, b, bias};
  tt_tensor *outs[] = {out};
  const char *engine = NULL;
  int has_bias = attrs != NULL && attrs->has_bias;
  assert_int_equal(tt_run(TSR_OP_MATMUL, attrs, in, has_bias ? 3 : 2, outs, 1, &engine), TSR_OK);
  if (engine_want != NULL) assert_string_equal(engine, engine_want);
  const int32_t r = out->desc.rank;
  const tsr_matmul_attrs plain = {sizeof(plain), 1.0, 0.0, TSR_ACTIVATION_NONE, 0};
  const tsr_matmul_attrs *full = attrs != NULL ? attrs : &plain;
  const double alpha = full->alpha;
  const tsr_dtype_t dtype = out->desc.dtype;
  const int half = tt_is_half(dtype);
  // float32 and the half types accumulate in float32: 2e-5 of the sum of
  // |products|; the half types then round once (rtol, half an ulp).
  const double tol = dtype == TSR_FLOAT64 ? 1e-12 : 2e-5;
  const double rtol = half ? tt_rtol(dtype) : tol;
  const int64_t n = tt_numel(out);
  if (n == 0) return;
  int64_t as[TSR_MAX_RANK], bs[TSR_MAX_RANK], an = 1, bn = 1;
  memcpy(as, out->desc.sizes, sizeof(as));
  memcpy(bs, out->desc.sizes, sizeof(bs));
  as[r - 1] = bs[r - 2] = a->desc.sizes[r - 1];
  for (int32_t d = 0; d < r; ++d) an *= as[d], bn *= bs[d];
  double *av = tt_values(a, as), *bv = tt_values(b, bs);
  double *biasv = has_bias ? tt_values(bias, out->desc.sizes) : NULL;
  // v: the value before the activation; magnitude: the sum of |products|.
  double *v = before != NULL ? tt_values(before, out->desc.sizes) : tt_values(out, out->desc.sizes);
  double *magnitude = tt_values(out, out->desc.sizes);
  tsr_matmul_attrs linear = *full;
  linear.activation = TSR_ACTIVATION_NONE;
  matmul_oracle(&linear, out, as, av, bs, bv, biasv, v);
  for (int64_t i = 0; i < an; ++i) av[i] = fabs(av[i]);
  for (int64_t i = 0; i < bn; ++i) bv[i] = fabs(bv[i]);
  matmul_oracle(&plain, out, as, av, bs, bv, NULL, magnitude);
  int64_t idx[TSR_MAX_RANK] = {0}, i = 0;
  do {
    double want = tsr_oracle_activation_value(full->activation, v[i]);
    double got = tt_get(out, idx);
    double atol = tol * (fabs(alpha) * magnitude[i] + fabs(v[i]) + 1);
    if (!tt_close(got, want, rtol, atol)) {
      fail_msg("matmul out[%lld, %lld]: got %.9g, want %.9g", (long long)idx[r - 2],
               (long long)idx[r - 1], got, want);
    }
    ++i;
  } while (tt_index_next(idx, r, out->desc.sizes));
  free(av);
  free(bv);
  free(biasv);
  free(v);
  free(magnitude);
}

// A contiguous [batch..., m, k] x [batch..., k, n] -> [batch..., m, n] case.
static void matmul_case(tsr_dtype_t dtype, int64_t m, int64_t n, int64_t k, const char *engine) {
  const int64_t as[] = {m, k}, bs[] = {k, n}, os[] = {m, n};
  tt_tensor a, b, out;
  tt_tensor_make(&a, dtype, 2, as, NULL, 0);
  tt_tensor_make(&b, dtype, 2, bs, NULL, 0);
  tt_tensor_make(&out, dtype, 2, os, NULL, 0);
  tt_fill(&a, (uint64_t)(m * 31 + k), -1, 1);
  tt_fill(&b, (uint64_t)(n * 17 + k), -1, 1);
  matmul_check(NULL, &a, &b, NULL, &out, NULL, engine);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_matmul_matches_double_loops_for_odd_and_edge_sizes(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {
      {1, 1, 1}, {1, 1, 300}, {2, 3, 4}, {7, 13, 5}, {6, 16, 64}, {13, 17, 19},
      {33, 1, 70}, {1, 45, 33}, {65, 31, 257}, {130, 47, 513}, {37, 260, 600},
  };
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i) {
    matmul_case(TSR_FLOAT32, shapes[i][0], shapes[i][1], shapes[i][2], NULL);
    matmul_case(TSR_FLOAT64, shapes[i][0], shapes[i][1], shapes[i][2], NULL);
    matmul_case(TSR_BFLOAT16, shapes[i][0], shapes[i][1], shapes[i][2], NULL);
    matmul_case(TSR_FLOAT16, shapes[i][0], shapes[i][1], shapes[i][2], NULL);
  }
  // Depth beyond float32's panel (kc 256) with a long K: the half types keep
  // one panel and shrink mc and nc instead.
  matmul_case(TSR_BFLOAT16, 40, 70, 3000, "ref:blocked-gemm");
  matmul_case(TSR_FLOAT16, 40, 70, 3000, "ref:blocked-gemm");
}

static void test_matmul_picks_the_naive_engine_for_tiny_and_the_blocked_one_otherwise(void **state) {
  (void)state;
  matmul_case(TSR_FLOAT32, 4, 4, 4, "ref:naive-gemm");
  matmul_case(TSR_FLOAT32, 64, 64, 64, "ref:blocked-gemm");
  matmul_case(TSR_BFLOAT16, 4, 4, 4, "ref:naive-gemm");
  matmul_case(TSR_FLOAT16, 64, 64, 64, "ref:blocked-gemm");
}

static const tsr_dtype_t k_floats[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16};

static void test_matmul_reads_transposed_and_strided_operands(void **state) {
  (void)state;
  const int64_t m = 29, n = 35, k = 300;
  const int64_t as[] = {m, k}, bs[] = {k, n}, os[] = {m, n};
  const int32_t transposed[] = {1, 0};
  for (int d = 0; d < 4; ++d) {
    tsr_dtype_t dtype = k_floats[d];
    tt_tensor a, b, out;
    tt_tensor_make_permuted(&a, dtype, 2, as, transposed);
    tt_tensor_make_permuted(&b, dtype, 2, bs, transposed);
    tt_tensor_make_permuted(&out, dtype, 2, os, transposed);
    tt_fill(&a, 21, -1, 1);
    tt_fill(&b, 22, -1, 1);
    matmul_check(NULL, &a, &b, NULL, &out, NULL, NULL);
    tt_tensor_free(&a);
    tt_tensor_free(&out);
    // Gapped rows and columns, and an offset.
    const int64_t a_strides[] = {2 * k + 3, 2};
    const int64_t out_strides[] = {3, 3 * m + 1};
    tt_tensor_make(&a, dtype, 2, as, a_strides, 5);
    tt_tensor_make(&out, dtype, 2, os, out_strides, 7);
    tt_fill(&a, 23, -1, 1);
    matmul_check(NULL, &a, &b, NULL, &out, NULL, NULL);
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
  }
}

static void test_matmul_broadcasts_batch_dimensions(void **state) {
  (void)state;
  const int64_t as[] = {2, 1, 9, 20}, bs[] = {1, 3, 20, 11}, os[] = {2, 3, 9, 11};
  // b's batch also as an expanded view: stride 0 over size 2.
  const int64_t bs_expanded[] = {2, 3, 20, 11};
  const int64_t b_expanded_strides[] = {0, 220, 11, 1};
  tt_tensor a, b, b_expanded, out;
  tt_tensor_make(&a, TSR_FLOAT32, 4, as, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 4, bs, NULL, 0);
  tt_tensor_make(&b_expanded, TSR_FLOAT32, 4, bs_expanded, b_expanded_strides, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 4, os, NULL, 0);
  tt_fill(&a, 31, -1, 1);
  tt_fill(&b, 32, -1, 1);
  tt_fill(&b_expanded, 33, -1, 1);
  matmul_check(NULL, &a, &b, NULL, &out, NULL, NULL);
  matmul_check(NULL, &a, &b_expanded, NULL, &out, NULL, NULL);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&b_expanded);
  tt_tensor_free(&out);
}

static void test_matmul_adds_bias_and_applies_every_activation(void **state) {
  (void)state;
  const int64_t m = 23, n = 37, k = 41;
  const int64_t as[] = {m, k}, bs[] = {k, n}, os[] = {m, n};
  const int64_t row_bias[] = {1, n}, column_bias[] = {m, 1};
  for (int d = 0; d < 4; ++d) {
    tsr_dtype_t dtype = k_floats[d];
    tt_tensor a, b, bias_row, bias_column, out;
    tt_tensor_make(&a, dtype, 2, as, NULL, 0);
    tt_tensor_make(&b, dtype, 2, bs, NULL, 0);
    tt_tensor_make(&bias_row, dtype, 2, row_bias, NULL, 0);
    tt_tensor_make(&bias_column, dtype, 2, column_bias, NULL, 0);
    tt_tensor_make(&out, dtype, 2, os, NULL, 0);
    tt_fill(&a, 41, -1, 1);
    tt_fill(&b, 42, -1, 1);
    tt_fill(&bias_row, 43, -2, 2);
    tt_fill(&bias_column, 44, -2, 2);
    for (tsr_activation_t act = TSR_ACTIVATION_NONE; act < TSR_ACTIVATION_COUNT; ++act) {
      tsr_matmul_attrs attrs = {sizeof(attrs), 0.5, 0.0, act, 1};
      matmul_check(&attrs, &a, &b, &bias_row, &out, NULL, NULL);
      matmul_check(&attrs, &a, &b, &bias_column, &out, NULL, NULL);
    }
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&bias_row);
    tt_tensor_free(&bias_column);
    tt_tensor_free(&out);
  }
}

static void test_matmul_beta_accumulates_into_out_and_beta_zero_never_reads_it(void **state) {
  (void)state;
  const int64_t m = 19, n = 21, k = 600;  // three depth panels
  const int64_t as[] = {m, k}, bs[] = {k, n}, os[] = {m, n};
  for (int d = 0; d < 4; d += 2) {
    tt_tensor a, b, out, before;
    tt_tensor_make(&a, k_floats[d], 2, as, NULL, 0);
    tt_tensor_make(&b, k_floats[d], 2, bs, NULL, 0);
    tt_tensor_make(&out, k_floats[d], 2, os, NULL, 0);
    tt_tensor_make(&before, k_floats[d], 2, os, NULL, 0);
    tt_fill(&a, 51, -1, 1);
    tt_fill(&b, 52, -1, 1);
    tt_fill(&out, 53, -3, 3);
    tt_fill(&before, 53, -3, 3);
    tsr_matmul_attrs attrs = {sizeof(attrs), -1.5, 0.75, TSR_ACTIVATION_NONE, 0};
    matmul_check(&attrs, &a, &b, NULL, &out, &before, NULL);
    // NaN in out must not leak through beta = 0.
    int64_t idx[2] = {0, 0};
    do tt_set(&out, idx, NAN); while (tt_index_next(idx, 2, os));
    attrs.beta = 0.0;
    matmul_check(&attrs, &a, &b, NULL, &out, NULL, NULL);
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
    tt_tensor_free(&before);
  }
}

static void test_matmul_with_empty_k_gives_bias_plus_beta_out(void **state) {
  (void)state;
  const int64_t as[] = {70, 0}, bs[] = {0, 90}, os[] = {70, 90}, bias_sizes[] = {1, 90};
  tt_tensor a, b, bias, out, before;
  tt_tensor_make(&a, TSR_FLOAT32, 2, as, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, bs, NULL, 0);
  tt_tensor_make(&bias, TSR_FLOAT32, 2, bias_sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, os, NULL, 0);
  tt_tensor_make(&before, TSR_FLOAT32, 2, os, NULL, 0);
  tt_fill(&bias, 61, -1, 1);
  tt_fill(&out, 62, -1, 1);
  tt_fill(&before, 62, -1, 1);
  tsr_matmul_attrs attrs = {sizeof(attrs), 1.0, 2.0, TSR_ACTIVATION_RELU, 1};
  matmul_check(&attrs, &a, &b, &bias, &out, &before, NULL);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&bias);
  tt_tensor_free(&out);
  tt_tensor_free(&before);
}

static void test_matmul_large_and_batched_cases_match_on_the_pool(void **state) {
  (void)state;
  // One big item (threads split A blocks) and many items (threads take
  // items); a bias and an activation on the way.
  const int64_t as[] = {300, 520}, bs[] = {520, 200}, os[] = {300, 200}, bias_sizes[] = {1, 200};
  tt_tensor a, b, bias, out;
  tt_tensor_make(&a, TSR_FLOAT32, 2, as, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, bs, NULL, 0);
  tt_tensor_make(&bias, TSR_FLOAT32, 2, bias_sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, os, NULL, 0);
  tt_fill(&a, 71, -1, 1);
  tt_fill(&b, 72, -1, 1);
  tt_fill(&bias, 73, -1, 1);
  tsr_matmul_attrs attrs = {sizeof(attrs), 1.0, 0.0, TSR_ACTIVATION_GELU, 1};
  matmul_check(&attrs, &a, &b, &bias, &out, NULL, "ref:blocked-gemm");
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&bias);
  tt_tensor_free(&out);

  const int64_t bas[] = {6, 70, 90}, bbs[] = {6, 90, 80}, bos[] = {6, 70, 80};
  tt_tensor_make(&a, TSR_FLOAT64, 3, bas, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT64, 3, bbs, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT64, 3, bos, NULL, 0);
  tt_fill(&a, 74, -1, 1);
  tt_fill(&b, 75, -1, 1);
  matmul_check(NULL, &a, &b, NULL, &out, NULL, NULL);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

// Runs a [m, k] x [k, n] float32 matmul on a host of |threads| threads and
// copies the result to |result|.
static void matmul_on_threads(int32_t threads, int64_t batch, int64_t m, int64_t n, int64_t k,
                              float *result) {
  assert_int_equal(tt_setup(threads), 0);
  const int64_t as[] = {batch, m, k}, bs[] = {batch, k, n}, os[] = {batch, m, n};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_FLOAT32, 3, as, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 3, bs, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 3, os, NULL, 0);
  tt_fill(&a, 81, -1, 1);
  tt_fill(&b, 82, -1, 1);
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_MATMUL, NULL, in, 2, outs, 1, NULL), TSR_OK);
  memcpy(result, out.base, sizeof(float) * (size_t)(batch * m * n));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_matmul_results_are_bitwise_identical_on_one_and_two_threads(void **state) {
  (void)state;
  int32_t threads_before = tsr_test_host_get()->thread_count(NULL);
  // One item split over threads, three items split likewise, four items
  // handed out whole, and 3000 tiny items on the naive path: each must
  // really reach the pool on two threads.
  static const int64_t shapes[][4] = {
      {1, 257, 129, 700}, {3, 64, 48, 300}, {4, 70, 40, 300}, {3000, 8, 8, 16}};
  static float serial[3000 * 8 * 8], parallel[3000 * 8 * 8];
  for (int i = 0; i < 4; ++i) {
    const int64_t *s = shapes[i];
    matmul_on_threads(1, s[0], s[1], s[2], s[3], serial);
    uint64_t pool_calls = tsr_test_host_parallel_count();
    matmul_on_threads(2, s[0], s[1], s[2], s[3], parallel);
    assert_true(tsr_test_host_parallel_count() > pool_calls);
    assert_memory_equal(serial, parallel, sizeof(float) * (size_t)(s[0] * s[1] * s[2]));
  }
  assert_int_equal(tt_setup(threads_before), 0);
}

// a [1, k] @ b[:, :n] on |threads| threads into |result|, from the first n
// columns of |full| [k, ld] (float32): the engine must be the batch-1 path.
static void gemv_columns_run(int32_t threads, const float *full, int64_t k, int64_t ld, int64_t n,
                             const float *a_values, float *result) {
  assert_int_equal(tt_setup(threads), 0);
  const int64_t as[] = {1, k}, bs[] = {k, n}, os[] = {1, n};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_FLOAT32, 2, as, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, bs, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, os, NULL, 0);
  memcpy(a.base, a_values, sizeof(float) * (size_t)k);
  for (int64_t p = 0; p < k; ++p) {
    memcpy((float *)b.base + p * n, full + p * ld, sizeof(float) * (size_t)n);
  }
  tt_tensor *in[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  const char *engine = NULL;
  assert_int_equal(tt_run(TSR_OP_MATMUL, NULL, in, 2, outs, 1, &engine), TSR_OK);
  assert_string_equal(engine, "ref:gemv");
  memcpy(result, out.base, sizeof(float) * (size_t)n);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

// The batch-1 product has two paths: register blocks over the whole of k
// (B within the caches) and a loop reading B's rows end to end, four at a
// time (B of 4 MiB and more, here 1101 x 1030 float32, 4.3 MiB, k not a
// multiple of 4; and the columns past the last register block). Each checks
// against float64 loops, and since each output is one multiply-add chain
// over k in order on both paths, an output's bits are the same whichever
// path, chunk or thread count computed it.
static void test_matmul_batch_one_paths_match_loops_and_each_other_bit_for_bit(void **state) {
  (void)state;
  int32_t threads_before = tsr_test_host_get()->thread_count(NULL);
  assert_int_equal(tt_setup(1), 0);
  matmul_case(TSR_FLOAT32, 1, 1030, 1101, "ref:gemv");
  matmul_case(TSR_FLOAT64, 1, 1030, 1101, "ref:gemv");
  matmul_case(TSR_BFLOAT16, 1, 1030, 1101, "ref:gemv");
  matmul_case(TSR_FLOAT32, 1, 600, 300, "ref:gemv");
  matmul_case(TSR_FLOAT64, 1, 600, 300, "ref:gemv");
  const int64_t k = 1101, ld = 1030;
  float *full = malloc(sizeof(float) * (size_t)(k * ld));
  float *a = malloc(sizeof(float) * (size_t)k);
  float *wide = malloc(sizeof(float) * (size_t)ld), *wide2 = malloc(sizeof(float) * (size_t)ld);
  float *narrow = malloc(sizeof(float) * (size_t)ld);
  assert_non_null(full);
  assert_non_null(a);
  assert_non_null(wide);
  assert_non_null(wide2);
  assert_non_null(narrow);
  uint64_t state_bits = 12345;
  for (int64_t i = 0; i < k * ld; ++i) {
    state_bits = state_bits * 6364136223846793005ULL + 1442695040888963407ULL;
    full[i] = (float)((double)(state_bits >> 40) / (double)(1 << 24) - 0.5);
  }
  for (int64_t p = 0; p < k; ++p) a[p] = (float)(p % 13) * 0.125f - 0.75f;
  gemv_columns_run(1, full, k, ld, ld, a, wide);    // row streaming, one chunk
  gemv_columns_run(2, full, k, ld, ld, a, wide2);   // row streaming, two chunks
  assert_memory_equal(wide, wide2, sizeof(float) * (size_t)ld);
  gemv_columns_run(1, full, k, ld, 512, a, narrow);  // register blocks
  assert_memory_equal(wide, narrow, sizeof(float) * 512);
  gemv_columns_run(2, full, k, ld, 300, a, narrow);  // a block and 44 row-read columns
  assert_memory_equal(wide, narrow, sizeof(float) * 300);
  gemv_columns_run(1, full, k, ld, 40, a, narrow);  // row reads alone, B in cache
  assert_memory_equal(wide, narrow, sizeof(float) * 40);
  free(full);
  free(a);
  free(wide);
  free(wide2);
  free(narrow);
  assert_int_equal(tt_setup(threads_before), 0);
}

// Linear's three products at sizes that split C over two threads: the
// forward x @ w^T (B with contiguous columns: packed by transposes), the
// weight gradient g^T @ x (A with contiguous columns) and the input
// gradient g @ w. Each is checked against float64 loops on two threads and
// must give the same bits on one. M, N and K are off every tile, panel and
// transpose-block multiple (K = 301 packs as two panels of 151).
static void test_matmul_linear_layouts_split_over_threads_match_loops_and_one_thread(void **state) {
  (void)state;
  int32_t threads_before = tsr_test_host_get()->thread_count(NULL);
  enum { M = 131, N = 75, K = 301 };
  const int32_t transposed[] = {1, 0};
  const int64_t shapes[3][3] = {{M, K, N}, {K, M, N}, {M, N, K}};  // a: [rows, k]
  for (int c = 0; c < 3; ++c) {
    const int64_t m = shapes[c][0], k = shapes[c][1], n = shapes[c][2];
    const int64_t as[] = {m, k}, bs[] = {k, n}, os[] = {m, n};
    tt_tensor a, b, out;
    // c 0: b transposed; c 1: a transposed; c 2: both row-major.
    if (c == 1) {
      tt_tensor_make_permuted(&a, TSR_FLOAT32, 2, as, transposed);
    } else {
      tt_tensor_make(&a, TSR_FLOAT32, 2, as, NULL, 0);
    }
    if (c == 0) {
      tt_tensor_make_permuted(&b, TSR_FLOAT32, 2, bs, transposed);
    } else {
      tt_tensor_make(&b, TSR_FLOAT32, 2, bs, NULL, 0);
    }
    tt_tensor_make(&out, TSR_FLOAT32, 2, os, NULL, 0);
    tt_fill(&a, 91 + (uint64_t)c, -1, 1);
    tt_fill(&b, 94 + (uint64_t)c, -1, 1);
    static float two[M * K];
    assert_int_equal(tt_setup(2), 0);
    uint64_t pool_calls = tsr_test_host_parallel_count();
    matmul_check(NULL, &a, &b, NULL, &out, NULL, "ref:blocked-gemm");
    assert_true(tsr_test_host_parallel_count() > pool_calls);
    memcpy(two, out.base, sizeof(float) * (size_t)(m * n));
    assert_int_equal(tt_setup(1), 0);
    tt_tensor *in[] = {&a, &b};
    tt_tensor *outs[] = {&out};
    memset(out.base, 0, sizeof(float) * (size_t)(m * n));
    assert_int_equal(tt_run(TSR_OP_MATMUL, NULL, in, 2, outs, 1, NULL), TSR_OK);
    assert_memory_equal(two, out.base, sizeof(float) * (size_t)(m * n));
    tt_tensor_free(&a);
    tt_tensor_free(&b);
    tt_tensor_free(&out);
  }
  assert_int_equal(tt_setup(threads_before), 0);
}

static void test_matmul_rejects_bad_signatures_with_a_message(void **state) {
  (void)state;
  const int64_t as[] = {4, 5}, bs[] = {6, 3}, os[] = {4, 3}, good_bs[] = {5, 3};
  const int64_t vs[] = {5}, bad_bias[] = {2, 3};
  tt_tensor a, b, good_b, out, vector, bias, ints;
  tt_tensor_make(&a, TSR_FLOAT32, 2, as, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, bs, NULL, 0);
  tt_tensor_make(&good_b, TSR_FLOAT32, 2, good_bs, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, os, NULL, 0);
  tt_tensor_make(&vector, TSR_FLOAT32, 1, vs, NULL, 0);
  tt_tensor_make(&bias, TSR_FLOAT32, 2, bad_bias, NULL, 0);
  tt_tensor_make(&ints, TSR_INT32, 2, as, NULL, 0);
  tt_tensor *in[] = {&a, &b, &bias};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_MATMUL, NULL, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "matmul: b sizes[0] is 6"));
  in[1] = &good_b;
  assert_int_equal(tt_supports(TSR_OP_MATMUL, NULL, in, 2, outs, 1), TSR_OK);
  tsr_matmul_attrs attrs = {sizeof(attrs), 1.0, 0.0, TSR_ACTIVATION_NONE, 1};
  assert_int_equal(tt_supports(TSR_OP_MATMUL, &attrs, in, 3, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "bias sizes[0] is 2"));
  assert_int_equal(tt_supports(TSR_OP_MATMUL, &attrs, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "num_inputs is 2, expected 3"));
  attrs.has_bias = 0;
  attrs.activation = 99;  // maybe from a newer catalogue: unsupported
  assert_int_equal(tt_supports(TSR_OP_MATMUL, &attrs, in, 2, outs, 1), TSR_UNSUPPORTED);
  assert_non_null(strstr(tsr_test_host_error_get(), "activation 99"));
  in[0] = &ints;
  assert_int_equal(tt_supports(TSR_OP_MATMUL, NULL, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "matmul takes float"));
  in[0] = &vector;
  assert_int_equal(tt_supports(TSR_OP_MATMUL, NULL, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "rank"));
  // out may not alias an input.
  in[0] = &a;
  tt_tensor aliased = out;
  aliased.desc.alias_group = 3;
  a.desc.alias_group = 3;
  outs[0] = &aliased;
  assert_int_equal(tt_supports(TSR_OP_MATMUL, NULL, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "alias group 3"));
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&good_b);
  tt_tensor_free(&out);
  tt_tensor_free(&vector);
  tt_tensor_free(&bias);
  tt_tensor_free(&ints);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_matches_double_loops_for_odd_and_edge_sizes),
      cmocka_unit_test(test_matmul_picks_the_naive_engine_for_tiny_and_the_blocked_one_otherwise),
      cmocka_unit_test(test_matmul_reads_transposed_and_strided_operands),
      cmocka_unit_test(test_matmul_broadcasts_batch_dimensions),
      cmocka_unit_test(test_matmul_adds_bias_and_applies_every_activation),
      cmocka_unit_test(test_matmul_beta_accumulates_into_out_and_beta_zero_never_reads_it),
      cmocka_unit_test(test_matmul_with_empty_k_gives_bias_plus_beta_out),
      cmocka_unit_test(test_matmul_large_and_batched_cases_match_on_the_pool),
      cmocka_unit_test(test_matmul_results_are_bitwise_identical_on_one_and_two_threads),
      cmocka_unit_test(test_matmul_batch_one_paths_match_loops_and_each_other_bit_for_bit),
      cmocka_unit_test(test_matmul_linear_layouts_split_over_threads_match_loops_and_one_thread),
      cmocka_unit_test(test_matmul_rejects_bad_signatures_with_a_message),
  };
  int failed = cmocka_run_group_tests_name("matmul, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("matmul, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
