// The reduce family of the OpenCL plugin: REDUCE, ARG_REDUCE, SOFTMAX(_BACKWARD),
// CROSS_ENTROPY(_BACKWARD), LAYER_NORM(_BACKWARD), BATCH_NORM(_BACKWARD),
// CONCAT, PAD, GATHER and SCATTER_ADD, checked against the conformance
// oracle's float64 loops (the data movers against loops written here) on
// contiguous, transposed and broadcast operands, sizes that
// are not multiples of any work-group size, empty tensors, and the shapes
// tools/tsr-train's MLP and CNN use.
//
// Fallback is denied and every op's engine is checked to be an OpenCL
// kernel, so nothing passes by running on ref. Exit 77 (skipped) when no
// OpenCL device can be opened.
//
// Compile definitions: TSR_TEST_OPENCL_PATH, TSR_TEST_REF_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"  // sdk/tests: it includes the conformance oracle
#include "tessera/tessera.h"
#include "test_support.h"

static tsr_context *g_context;
static tsr_device *g_device;

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int group_setup(void **state) {
  (void)state;
  if (ts_device_open(TSR_TEST_OPENCL_PATH, "opencl:0", &g_context, &g_device) != 0)
    return -1;
  TS_ASSERT_OK(tsr_context_fallback_policy_set(g_context, TSR_FALLBACK_DENY));
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  return 0;
}

static int test_setup(void **state) {
  (void)state;
  tsr_context_error_clear(g_context);
  tsr_last_error_clear();
  return 0;
}

// --- helpers -----------------------------------------------------------------------

static double *dalloc(int64_t n) {
  double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  assert_non_null(p);
  return p;
}

static int64_t numel_of(int32_t rank, const int64_t *sizes) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  return n;
}

static tsr_tensor *make(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes, const double *v) {
  tsr_tensor *t = ts_tensor(g_device, dtype, rank, sizes, v);
  TS_ASSERT_TENSOR(t);
  return t;
}

static tsr_tensor *empty(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  tsr_tensor *t = tsr_tensor_empty(g_device, dtype, rank, sizes);
  TS_ASSERT_TENSOR(t);
  return t;
}

static void read_all(const tsr_tensor *t, double *out, int64_t n) {
  assert_int_equal(ts_read(t, out, n), n);
}

// Runs |op| after checking that its plan is an OpenCL kernel, then waits.
static void run(tsr_op_id_t op, int32_t ni, tsr_tensor *const *in, int32_t no,
                tsr_tensor *const *out, const void *attrs, const char *what) {
  const char *engine = NULL;
  tsr_status status = tsr_op_engine_get(op, ni, in, no, out, attrs, &engine);
  if (status != TSR_OK) {
    fail_msg("%s: engine_get: %s: %s", what, tsr_status_name(status), tsr_last_error());
  }
  if (strncmp(engine, "opencl:", 7) != 0)
    fail_msg("%s: engine %s is not OpenCL", what, engine);
  status = tsr_op_run(op, ni, in, no, out, attrs);
  if (status != TSR_OK)
    fail_msg("%s: %s: %s", what, tsr_status_name(status), tsr_last_error());
  TS_ASSERT_OK(tsr_device_synchronize(g_device));
}

// |got| against |want| within atol + rtol * |want| (+ mag[i] * mtol when
// |mag| is given: the sum of magnitudes a float32 sum's error grows with).
static void expect_near(const char *what, const double *got, const double *want, const double *mag,
                        int64_t n, double rtol, double atol, double mtol) {
  for (int64_t i = 0; i < n; ++i) {
    double w = want[i], g = got[i];
    int ok;
    if (isnan(w) || isnan(g)) {
      ok = isnan(w) && isnan(g);
    } else if (isinf(w) || isinf(g)) {
      ok = g == w;
    } else {
      ok = fabs(g - w) <= atol + rtol * fabs(w) + (mag ? mag[i] * mtol : 0.0);
    }
    if (!ok) {
      fail_msg("%s: element %lld is %.17g, expected %.17g (|diff| %.3g)", what, (long long)i, g, w,
               fabs(g - w));
    }
  }
}

// Row-major multi-index of |i|.
static void unravel(int64_t i, int32_t rank, const int64_t *sizes, int64_t *idx) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    idx[d] = sizes[d] > 0 ? i % sizes[d] : 0;
    i = sizes[d] > 0 ? i / sizes[d] : 0;
  }
}

static int64_t ravel(int32_t rank, const int64_t *sizes, const int64_t *idx) {
  int64_t i = 0;
  for (int32_t d = 0; d < rank; ++d) i = i * sizes[d] + idx[d];
  return i;
}

// Layouts of an input: its logical values |v| become a contiguous tensor, a
// transposed view of a [.., b, a] tensor (rank 2: the last two axes swap), or
// an expand of row 0 (stride 0 on axis 0; |v| must then repeat row 0).
enum { LAYOUT_CONTIGUOUS, LAYOUT_TRANSPOSED, LAYOUT_BROADCAST };

static tsr_tensor *make_layout(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                               const double *v, int layout, tsr_tensor **out_base) {
  *out_base = NULL;
  if (layout == LAYOUT_CONTIGUOUS)
    return make(dtype, rank, sizes, v);
  if (layout == LAYOUT_BROADCAST) {
    int64_t one[TSR_MAX_RANK];
    memcpy(one, sizes, sizeof(int64_t) * (size_t)rank);
    one[0] = 1;
    *out_base = make(dtype, rank, one, v);
    tsr_tensor *t = tsr_expand(*out_base, rank, sizes);
    TS_ASSERT_TENSOR(t);
    assert_int_equal(tsr_tensor_stride(t, 0), 0);
    return t;
  }
  // Transposed: the base holds the values with the last two axes swapped.
  int64_t swapped[TSR_MAX_RANK];
  memcpy(swapped, sizes, sizeof(int64_t) * (size_t)rank);
  swapped[rank - 1] = sizes[rank - 2];
  swapped[rank - 2] = sizes[rank - 1];
  int64_t n = numel_of(rank, sizes);
  double *b = dalloc(n);
  int64_t idx[TSR_MAX_RANK];
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, rank, sizes, idx);
    int64_t t = idx[rank - 1];
    idx[rank - 1] = idx[rank - 2];
    idx[rank - 2] = t;
    b[ravel(rank, swapped, idx)] = v[i];
  }
  *out_base = make(dtype, rank, swapped, b);
  free(b);
  tsr_tensor *t = tsr_transpose(*out_base, rank - 2, rank - 1);
  TS_ASSERT_TENSOR(t);
  return t;
}

static void release(tsr_tensor *t) {
  if (t != NULL)
    tsr_tensor_release(t);
}

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64;
}

// --- REDUCE --------------------------------------------------------------------------

typedef struct reduce_case {
  const char *what;
  int32_t rank;
  int64_t sizes[4];
  uint32_t mask;
  int layout;
} reduce_case;

// The float64 (float) or wrapping (int) reduction of |x| over |mask|: the
// conformance oracle's (sdk/tests/oracle.h); |mag| gets the sum of |x| per
// output (the mean of |x| for MEAN, |want| times the count for PROD).
static void reduce_expect(tsr_reduce_fn_t fn, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                          uint32_t mask, const double *x, double *want, double *mag,
                          int64_t out_n) {
  int64_t red = 1, n = numel_of(rank, sizes);
  for (int32_t d = 0; d < rank; ++d) {
    if ((mask >> d) & 1u)
      red *= sizes[d];
  }
  int64_t *count = calloc((size_t)(out_n > 0 ? out_n : 1), sizeof(int64_t));
  double *unused = dalloc(out_n);
  assert_non_null(count);
  orc_reduce(is_float(dtype) ? fn : TSR_REDUCE_SUM, rank, sizes, mask, x,
             is_float(dtype) ? want : unused, mag, count);
  if (!is_float(dtype)) {
    int64_t *xi = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    int64_t *wi = calloc((size_t)(out_n > 0 ? out_n : 1), sizeof(int64_t));
    assert_true(xi != NULL && wi != NULL);
    for (int64_t i = 0; i < n; ++i) xi[i] = (int64_t)x[i];
    orc_reduce_int(fn, dtype == TSR_INT32 ? 32 : 64, rank, sizes, mask, xi, wi);
    for (int64_t o = 0; o < out_n; ++o) want[o] = (double)wi[o];
    free(xi);
    free(wi);
  }
  for (int64_t o = 0; o < out_n; ++o) {
    if (fn == TSR_REDUCE_MEAN)
      mag[o] /= (double)(red > 0 ? red : 1);
    if (fn == TSR_REDUCE_PROD && is_float(dtype))
      mag[o] = fabs(want[o]) * (double)red;
  }
  free(count);
  free(unused);
}

static void reduce_check(const reduce_case *c, tsr_reduce_fn_t fn, tsr_dtype_t dtype,
                         uint64_t seed) {
  static const char *const fn_names[] = {"sum", "mean", "max", "min", "prod"};
  char what[160];
  snprintf(what, sizeof(what), "reduce %s %s %s", fn_names[fn], ts_dtype_name(dtype), c->what);
  int64_t n = numel_of(c->rank, c->sizes);
  double *x = dalloc(n);
  ts_rng rng = {seed};
  // Products stay near 1 (float) or small (int) so they neither overflow nor vanish.
  if (fn == TSR_REDUCE_PROD) {
    for (int64_t i = 0; i < n; ++i) {
      x[i] =
          is_float(dtype) ? ts_rng_value(&rng, dtype, 0.9, 1.1) : ts_rng_value(&rng, dtype, -3, 4);
    }
  } else {
    ts_rng_fill(&rng, dtype, -100, 100, x, n);
  }
  if (c->layout == LAYOUT_BROADCAST) {
    int64_t row = n / c->sizes[0];
    for (int64_t i = row; i < n; ++i) x[i] = x[i % row];
  }
  int64_t out_sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < c->rank; ++d) out_sizes[d] = (c->mask >> d) & 1u ? 1 : c->sizes[d];
  int64_t out_n = numel_of(c->rank, out_sizes);
  double *want = dalloc(out_n), *mag = dalloc(out_n), *got = dalloc(out_n);
  reduce_expect(fn, dtype, c->rank, c->sizes, c->mask, x, want, mag, out_n);
  tsr_tensor *base = NULL;
  tsr_tensor *tx = make_layout(dtype, c->rank, c->sizes, x, c->layout, &base);
  tsr_tensor *out = empty(dtype, c->rank, out_sizes);
  tsr_reduce_attrs attrs = {sizeof(attrs), fn, c->mask};
  run(TSR_OP_REDUCE, 1, &tx, 1, &out, &attrs, what);
  read_all(out, got, out_n);
  if (dtype == TSR_FLOAT32) {
    for (int64_t i = 0; i < out_n; ++i) want[i] = (double)(float)want[i];
    expect_near(what, got, want, mag, out_n, 1e-6, 1e-6, 2e-6);
  } else if (dtype == TSR_FLOAT64) {
    expect_near(what, got, want, mag, out_n, 1e-14, 1e-14, 1e-14);
  } else {
    expect_near(what, got, want, NULL, out_n, 0, 0, 0);
  }
  release(out);
  release(tx);
  release(base);
  free(x);
  free(want);
  free(mag);
  free(got);
}

static void test_reduce_matches_float64_loops_for_every_fn_and_dtype(void **state) {
  (void)state;
  static const reduce_case cases[] = {
      {"bias gradient [64,512] axis 0", 2, {64, 512}, 1u, LAYOUT_CONTIGUOUS},
      {"MLP logits bias gradient [64,10] axis 0", 2, {64, 10}, 1u, LAYOUT_CONTIGUOUS},
      {"CNN conv1 bias gradient [64,32,26,26] axes 0,2,3",
       4,
       {64, 32, 26, 26},
       0xDu,
       LAYOUT_CONTIGUOUS},
      {"CNN conv2 bias gradient [64,64,11,11] axes 0,2,3",
       4,
       {64, 64, 11, 11},
       0xDu,
       LAYOUT_CONTIGUOUS},
      {"full [100003]", 1, {100003}, 1u, LAYOUT_CONTIGUOUS},
      {"[7,13,5] axes 0,2", 3, {7, 13, 5}, 5u, LAYOUT_CONTIGUOUS},
      {"[3,70001] axis 1 (two passes)", 2, {3, 70001}, 2u, LAYOUT_CONTIGUOUS},
      {"[70001,3] axis 0 (column, two passes)", 2, {70001, 3}, 1u, LAYOUT_CONTIGUOUS},
      {"transposed [9,13] axis 1", 2, {9, 13}, 2u, LAYOUT_TRANSPOSED},
      {"transposed [300,37] axis 0", 2, {300, 37}, 1u, LAYOUT_TRANSPOSED},
      {"broadcast [6,17] axis 0", 2, {6, 17}, 1u, LAYOUT_BROADCAST},
      {"no axes [4,5]", 2, {4, 5}, 0u, LAYOUT_CONTIGUOUS},
      {"all axes [1,1]", 2, {1, 1}, 3u, LAYOUT_CONTIGUOUS},
  };
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64};
  uint64_t seed = 1;
  for (int d = 0; d < COUNT(dtypes); ++d) {
    for (int fn = 0; fn < TSR_REDUCE_FN_COUNT; ++fn) {
      if (fn == TSR_REDUCE_MEAN && !is_float(dtypes[d]))
        continue;
      for (int k = 0; k < COUNT(cases); ++k) {
        // Long products of ints wrap to 0 quickly; keep them to the small cases.
        if (fn == TSR_REDUCE_PROD && numel_of(cases[k].rank, cases[k].sizes) > 5000)
          continue;
        reduce_check(&cases[k], (tsr_reduce_fn_t)fn, dtypes[d], seed++);
      }
    }
  }
}

static void test_reduce_of_empty_axis_gives_identity_and_mean_nan(void **state) {
  (void)state;
  int64_t sizes[2] = {0, 5}, out_sizes[2] = {1, 5};
  tsr_tensor *x = empty(TSR_FLOAT32, 2, sizes);
  static const struct {
    tsr_reduce_fn_t fn;
    double want;
  } cases[] = {{TSR_REDUCE_SUM, 0.0}, {TSR_REDUCE_PROD, 1.0}, {TSR_REDUCE_MEAN, NAN}};
  for (int k = 0; k < COUNT(cases); ++k) {
    tsr_tensor *out = empty(TSR_FLOAT32, 2, out_sizes);
    TS_ASSERT_OK(tsr_fill_(out, 42.0));
    tsr_reduce_attrs attrs = {sizeof(attrs), cases[k].fn, 1u};
    run(TSR_OP_REDUCE, 1, &x, 1, &out, &attrs, "reduce of an empty axis");
    double got[5], want[5];
    read_all(out, got, 5);
    for (int i = 0; i < 5; ++i) want[i] = cases[k].want;
    expect_near("reduce of an empty axis", got, want, NULL, 5, 0, 0, 0);
    release(out);
  }
  // An empty output: nothing to do, and nothing fails.
  int64_t e_sizes[2] = {0, 5}, e_out[2] = {0, 1};
  tsr_tensor *out = empty(TSR_FLOAT32, 2, e_out);
  tsr_reduce_attrs attrs = {sizeof(attrs), TSR_REDUCE_SUM, 2u};
  tsr_tensor *ex = empty(TSR_FLOAT32, 2, e_sizes);
  run(TSR_OP_REDUCE, 1, &ex, 1, &out, &attrs, "reduce to an empty output");
  release(out);
  release(ex);
  release(x);
}

static void test_reduce_max_and_min_propagate_nan(void **state) {
  (void)state;
  int64_t sizes[2] = {3, 1000}, out_sizes[2] = {3, 1};
  double *x = dalloc(3000);
  ts_rng rng = {99};
  ts_rng_fill(&rng, TSR_FLOAT32, -1, 1, x, 3000);
  x[1 * 1000 + 517] = NAN;
  x[2 * 1000 + 999] = NAN;
  tsr_tensor *tx = make(TSR_FLOAT32, 2, sizes, x);
  for (int fn = TSR_REDUCE_MAX; fn <= TSR_REDUCE_MIN; ++fn) {
    tsr_tensor *out = empty(TSR_FLOAT32, 2, out_sizes);
    tsr_reduce_attrs attrs = {sizeof(attrs), fn, 2u};
    run(TSR_OP_REDUCE, 1, &tx, 1, &out, &attrs, "reduce max/min with NaN");
    double got[3];
    read_all(out, got, 3);
    assert_false(isnan(got[0]));
    assert_true(isnan(got[1]));
    assert_true(isnan(got[2]));
    release(out);
  }
  release(tx);
  free(x);
}

// Two runs of one plan give the same bits (no atomics).
static void test_reduce_is_bit_reproducible(void **state) {
  (void)state;
  int64_t sizes[1] = {1 << 20}, out_sizes[1] = {1};
  double *x = dalloc(sizes[0]);
  ts_rng rng = {5};
  ts_rng_fill(&rng, TSR_FLOAT32, -1, 1, x, sizes[0]);
  tsr_tensor *tx = make(TSR_FLOAT32, 1, sizes, x);
  double first = 0;
  for (int r = 0; r < 3; ++r) {
    tsr_tensor *out = empty(TSR_FLOAT32, 1, out_sizes);
    tsr_reduce_attrs attrs = {sizeof(attrs), TSR_REDUCE_SUM, 1u};
    run(TSR_OP_REDUCE, 1, &tx, 1, &out, &attrs, "reduce sum of 2^20");
    double got;
    read_all(out, &got, 1);
    if (r == 0)
      first = got;
    assert_true(memcmp(&got, &first, sizeof(got)) == 0);
    release(out);
  }
  release(tx);
  free(x);
}

// --- ARG_REDUCE ------------------------------------------------------------------------

// The conformance oracle's ARG_REDUCE of |x| along |axis|.
static void arg_expect(int is_max, int32_t rank, const int64_t *sizes, int32_t axis,
                       const double *x, double *want) {
  int64_t out_sizes[TSR_MAX_RANK];
  memcpy(out_sizes, sizes, sizeof(int64_t) * (size_t)rank);
  out_sizes[axis] = 1;
  int64_t out_n = numel_of(rank, out_sizes);
  int64_t *best = calloc((size_t)(out_n > 0 ? out_n : 1), sizeof(int64_t));
  assert_non_null(best);
  orc_arg_reduce(is_max ? TSR_ARG_REDUCE_ARGMAX : TSR_ARG_REDUCE_ARGMIN, rank, sizes, axis, x,
                 best);
  for (int64_t o = 0; o < out_n; ++o) want[o] = (double)best[o];
  free(best);
}

static void test_arg_reduce_picks_the_first_extreme_and_nan(void **state) {
  (void)state;
  static const struct {
    int32_t rank;
    int64_t sizes[3];
    int32_t axis;
    int layout;
  } cases[] = {
      {2, {64, 10}, 1, LAYOUT_CONTIGUOUS},   // MLP predictions
      {2, {5, 3001}, 1, LAYOUT_CONTIGUOUS},  // work-group variant
      {2, {3001, 5}, 0, LAYOUT_CONTIGUOUS},  // work-item variant
      {3, {4, 7, 3}, 1, LAYOUT_CONTIGUOUS}, {2, {37, 300}, 1, LAYOUT_TRANSPOSED},
      {2, {6, 17}, 1, LAYOUT_BROADCAST},    {2, {9, 1}, 1, LAYOUT_CONTIGUOUS},
  };
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64};
  uint64_t seed = 300;
  for (int d = 0; d < COUNT(dtypes); ++d) {
    for (int k = 0; k < COUNT(cases); ++k) {
      for (int is_max = 0; is_max <= 1; ++is_max) {
        int64_t n = numel_of(cases[k].rank, cases[k].sizes);
        double *x = dalloc(n);
        ts_rng rng = {seed++};
        // Few distinct values, so ties are common; a few NaNs for floats.
        for (int64_t i = 0; i < n; ++i) x[i] = floor(ts_rng_value(&rng, TSR_FLOAT64, -4, 4));
        if (is_float(dtypes[d])) {
          for (int64_t i = 0; i < n; i += 97) x[i] = NAN;
        }
        if (cases[k].layout == LAYOUT_BROADCAST) {
          int64_t row = n / cases[k].sizes[0];
          for (int64_t i = row; i < n; ++i) x[i] = x[i % row];
        }
        int64_t out_sizes[3];
        memcpy(out_sizes, cases[k].sizes, sizeof(out_sizes));
        out_sizes[cases[k].axis] = 1;
        int64_t out_n = numel_of(cases[k].rank, out_sizes);
        double *want = dalloc(out_n), *got = dalloc(out_n);
        arg_expect(is_max, cases[k].rank, cases[k].sizes, cases[k].axis, x, want);
        tsr_tensor *base = NULL;
        tsr_tensor *tx =
            make_layout(dtypes[d], cases[k].rank, cases[k].sizes, x, cases[k].layout, &base);
        tsr_tensor *out = empty(TSR_INT64, cases[k].rank, out_sizes);
        tsr_arg_reduce_attrs attrs = {
            sizeof(attrs), is_max ? TSR_ARG_REDUCE_ARGMAX : TSR_ARG_REDUCE_ARGMIN, cases[k].axis};
        char what[96];
        snprintf(what, sizeof(what), "arg_reduce %s %s case %d", is_max ? "argmax" : "argmin",
                 ts_dtype_name(dtypes[d]), k);
        run(TSR_OP_ARG_REDUCE, 1, &tx, 1, &out, &attrs, what);
        read_all(out, got, out_n);
        expect_near(what, got, want, NULL, out_n, 0, 0, 0);
        release(out);
        release(tx);
        release(base);
        free(x);
        free(want);
        free(got);
      }
    }
  }
}

// --- SOFTMAX -----------------------------------------------------------------------------

// The conformance oracle's softmax (or log-softmax) y of |x| along |axis|,
// and its backward dx of |dy| and that y.
static void softmax_expect(int is_log, int32_t rank, const int64_t *sizes, int32_t axis,
                           const double *x, const double *dy, double *y, double *dx) {
  const tsr_softmax_attrs attrs = {sizeof(attrs), axis, (uint32_t)is_log};
  tsr_oracle_tensor in[2] = {tsr_oracle_tensor_over(TSR_FLOAT64, rank, sizes, (double *)dy),
                             tsr_oracle_tensor_over(TSR_FLOAT64, rank, sizes, (double *)x)};
  tsr_oracle_tensor out = tsr_oracle_tensor_over(TSR_FLOAT64, rank, sizes, y);
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_SOFTMAX, &attrs, 1, &in[1], 1, &out), TSR_OK);
  in[1].v = y;
  out.v = dx;
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_SOFTMAX_BACKWARD, &attrs, 2, in, 1, &out),
                   TSR_OK);
}

static void test_softmax_and_backward_match_float64_loops(void **state) {
  (void)state;
  static const struct {
    int32_t rank;
    int64_t sizes[4];
    int32_t axis;
    int layout;
  } cases[] = {
      {2, {64, 10}, 1, LAYOUT_CONTIGUOUS},   // MLP logits
      {2, {3, 1000}, 1, LAYOUT_CONTIGUOUS},  // a long row: work-group variant
      {4, {2, 5, 3, 4}, 1, LAYOUT_CONTIGUOUS},
      {3, {300, 37, 2}, 0, LAYOUT_CONTIGUOUS},  // axis 0: work-item variant
      {2, {40, 300}, 1, LAYOUT_TRANSPOSED},
      {2, {6, 17}, 1, LAYOUT_BROADCAST},
      {2, {7, 1}, 1, LAYOUT_CONTIGUOUS},
      {2, {0, 5}, 1, LAYOUT_CONTIGUOUS},
  };
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64};
  uint64_t seed = 700;
  for (int d = 0; d < COUNT(dtypes); ++d) {
    tsr_dtype_t dt = dtypes[d];
    for (int k = 0; k < COUNT(cases); ++k) {
      for (int is_log = 0; is_log <= 1; ++is_log) {
        int32_t rank = cases[k].rank;
        const int64_t *sizes = cases[k].sizes;
        int64_t n = numel_of(rank, sizes);
        double *x = dalloc(n), *dy = dalloc(n), *y = dalloc(n), *dx = dalloc(n);
        double *got = dalloc(n);
        ts_rng rng = {seed++};
        ts_rng_fill(&rng, dt, -5, 5, x, n);
        ts_rng_fill(&rng, dt, -1, 1, dy, n);
        if (cases[k].layout == LAYOUT_BROADCAST) {
          int64_t row = n / sizes[0];
          for (int64_t i = row; i < n; ++i) x[i] = x[i % row];
        }
        softmax_expect(is_log, rank, sizes, cases[k].axis, x, dy, y, dx);
        char what[96];
        snprintf(what, sizeof(what), "%ssoftmax %s case %d", is_log ? "log_" : "",
                 ts_dtype_name(dt), k);
        tsr_tensor *base = NULL;
        tsr_tensor *tx = make_layout(dt, rank, sizes, x, cases[k].layout, &base);
        tsr_tensor *ty = empty(dt, rank, sizes);
        tsr_softmax_attrs attrs = {sizeof(attrs), cases[k].axis, (uint32_t)is_log};
        run(TSR_OP_SOFTMAX, 1, &tx, 1, &ty, &attrs, what);
        read_all(ty, got, n);
        double tol = dt == TSR_FLOAT32 ? 2e-6 : 1e-13;
        expect_near(what, got, y, NULL, n, 8 * tol, tol, 0);
        // The backward from the device's y (as autograd would), against
        // the float64 formula on the same y.
        double *y_dev = got;
        for (int64_t i = 0; i < n; ++i) y[i] = y_dev[i];
        {
          int64_t out_sizes[TSR_MAX_RANK], idx[TSR_MAX_RANK];
          memcpy(out_sizes, sizes, sizeof(int64_t) * (size_t)rank);
          out_sizes[cases[k].axis] = 1;
          int64_t groups = numel_of(rank, out_sizes);
          for (int64_t g = 0; g < groups; ++g) {
            unravel(g, rank, out_sizes, idx);
            double dot = 0, dsum = 0;
            for (int64_t j = 0; j < sizes[cases[k].axis]; ++j) {
              idx[cases[k].axis] = j;
              int64_t i = ravel(rank, sizes, idx);
              dot += dy[i] * y[i];
              dsum += dy[i];
            }
            for (int64_t j = 0; j < sizes[cases[k].axis]; ++j) {
              idx[cases[k].axis] = j;
              int64_t i = ravel(rank, sizes, idx);
              dx[i] = is_log ? dy[i] - exp(y[i]) * dsum : y[i] * (dy[i] - dot);
            }
          }
        }
        tsr_tensor *tdy = make(dt, rank, sizes, dy);
        tsr_tensor *tdx = empty(dt, rank, sizes);
        tsr_tensor *in[2] = {tdy, ty};
        snprintf(what, sizeof(what), "%ssoftmax_backward %s case %d", is_log ? "log_" : "",
                 ts_dtype_name(dt), k);
        run(TSR_OP_SOFTMAX_BACKWARD, 2, in, 1, &tdx, &attrs, what);
        read_all(tdx, got, n);
        expect_near(what, got, dx, NULL, n, 16 * tol, 4 * tol * (double)sizes[cases[k].axis], 0);
        release(tdx);
        release(tdy);
        release(ty);
        release(tx);
        release(base);
        free(x);
        free(dy);
        free(y);
        free(dx);
        free(got);
      }
    }
  }
}

// --- CROSS_ENTROPY -------------------------------------------------------------------------

typedef struct ce_case {
  int64_t n, c;
  tsr_reduction_t reduction;
  int64_t ignore;
  double eps;
  int transposed;
} ce_case;

// The conformance oracle's loss and lse of |x| and |t|, and its dlogits of
// the loss's gradient (|dloss| for NONE, else |dloss_scalar|) and the lse
// as the plugin stores it (float32).
static void ce_expect(const ce_case *k, const double *x, const int64_t *t, double dloss_scalar,
                      const double *dloss, double *loss, double *lse, double *dlogits) {
  const tsr_cross_entropy_attrs attrs = {sizeof(attrs), k->reduction, 0, k->ignore, k->eps};
  const int64_t xs[2] = {k->n, k->c};
  const int32_t loss_rank = k->reduction == TSR_REDUCTION_NONE ? 1 : 0;
  tsr_oracle_tensor in[4];
  in[0] = tsr_oracle_tensor_over(TSR_FLOAT64, loss_rank, &k->n, (double *)dloss);
  if (loss_rank == 0)
    in[0].v = &dloss_scalar;
  in[1] = tsr_oracle_tensor_over(TSR_FLOAT64, 2, xs, (double *)x);
  assert_int_equal(tsr_oracle_tensor_create(TSR_INT64, 1, &k->n, &in[2]), 0);
  for (int64_t n = 0; n < k->n; ++n) tsr_oracle_tensor_set(&in[2], n, 0, t[n]);
  tsr_oracle_tensor out[2] = {tsr_oracle_tensor_over(TSR_FLOAT64, loss_rank, &k->n, loss),
                              tsr_oracle_tensor_over(TSR_FLOAT32, 1, &k->n, lse)};
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_CROSS_ENTROPY, &attrs, 2, in + 1, 2, out),
                   TSR_OK);
  double *stored = dalloc(k->n);
  for (int64_t n = 0; n < k->n; ++n) stored[n] = (double)(float)lse[n];
  in[3] = tsr_oracle_tensor_over(TSR_FLOAT32, 1, &k->n, stored);
  out[0] = tsr_oracle_tensor_over(TSR_FLOAT64, 2, xs, dlogits);
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_CROSS_ENTROPY_BACKWARD, &attrs, 4, in, 1, out),
                   TSR_OK);
  tsr_oracle_tensor_destroy(&in[2]);
  free(stored);
}

static void test_cross_entropy_and_backward_match_float64_loops(void **state) {
  (void)state;
  static const ce_case cases[] = {
      {64, 10, TSR_REDUCTION_MEAN, -100, 0.0, 0},  // MLP / CNN training
      {64, 10, TSR_REDUCTION_NONE, 3, 0.1, 0},     {13, 7, TSR_REDUCTION_SUM, 2, 0.25, 0},
      {6, 1000, TSR_REDUCTION_MEAN, -100, 0.1, 0}, {37, 11, TSR_REDUCTION_MEAN, 4, 0.0, 1},
      {5, 3, TSR_REDUCTION_MEAN, 1, 1.0, 0},       {0, 4, TSR_REDUCTION_MEAN, -100, 0.0, 0},
      {0, 4, TSR_REDUCTION_SUM, -100, 0.0, 0},
  };
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64};
  uint64_t seed = 900;
  for (int d = 0; d < COUNT(dtypes); ++d) {
    tsr_dtype_t dt = dtypes[d];
    for (int k = 0; k < COUNT(cases); ++k) {
      const ce_case *cs = &cases[k];
      int64_t nc = cs->n * cs->c;
      double *x = dalloc(nc), *dlogits = dalloc(nc), *got = dalloc(nc), *lse = dalloc(cs->n);
      double *loss = dalloc(cs->n), *dloss = dalloc(cs->n), *tv = dalloc(cs->n);
      int64_t *t = calloc((size_t)(cs->n > 0 ? cs->n : 1), sizeof(int64_t));
      assert_non_null(t);
      ts_rng rng = {seed++};
      ts_rng_fill(&rng, dt, -4, 4, x, nc);
      ts_rng_fill(&rng, dt, -1, 1, dloss, cs->n);
      for (int64_t n = 0; n < cs->n; ++n) {
        t[n] = (int64_t)floor(ts_rng_value(&rng, TSR_FLOAT64, 0, (double)cs->c));
        if (n % 7 == 3)
          t[n] = cs->ignore;
        tv[n] = (double)t[n];
      }
      double dloss_scalar = 0.75;
      ce_expect(cs, x, t, dloss_scalar, dloss, loss, lse, dlogits);
      char what[128];
      snprintf(what, sizeof(what), "cross_entropy %s N %lld C %lld red %d eps %g%s",
               ts_dtype_name(dt), (long long)cs->n, (long long)cs->c, (int)cs->reduction, cs->eps,
               cs->transposed ? " transposed" : "");
      int64_t xs[2] = {cs->n, cs->c}, ns[1] = {cs->n};
      tsr_tensor *base = NULL;
      tsr_tensor *tx =
          make_layout(dt, 2, xs, x, cs->transposed ? LAYOUT_TRANSPOSED : LAYOUT_CONTIGUOUS, &base);
      tsr_tensor *tt = make(TSR_INT64, 1, ns, tv);
      int none = cs->reduction == TSR_REDUCTION_NONE;
      tsr_tensor *tloss = empty(dt, none ? 1 : 0, ns);
      tsr_tensor *tlse = empty(TSR_FLOAT32, 1, ns);
      tsr_cross_entropy_attrs attrs = {sizeof(attrs), cs->reduction, 0, cs->ignore, cs->eps};
      tsr_tensor *in[2] = {tx, tt}, *out[2] = {tloss, tlse};
      run(TSR_OP_CROSS_ENTROPY, 2, in, 2, out, &attrs, what);
      double tol = dt == TSR_FLOAT32 ? 1e-5 : 1e-12;
      int64_t loss_n = none ? cs->n : 1;
      read_all(tloss, got, loss_n);
      expect_near(what, got, loss, NULL, loss_n, tol, tol, 0);
      read_all(tlse, got, cs->n);
      expect_near(what, got, lse, NULL, cs->n, 1e-6, 1e-6, 0);
      // Backward, from the lse the device saved.
      double *lse_dev = dalloc(cs->n);
      memcpy(lse_dev, got, sizeof(double) * (size_t)cs->n);
      tsr_tensor *tdl = none ? make(dt, 1, ns, dloss) : make(dt, 0, ns, &dloss_scalar);
      tsr_tensor *tdx = empty(dt, 2, xs);
      tsr_tensor *bin[4] = {tdl, tx, tt, tlse};
      snprintf(what, sizeof(what), "cross_entropy_backward %s case %d", ts_dtype_name(dt), k);
      if (nc > 0) {
        run(TSR_OP_CROSS_ENTROPY_BACKWARD, 4, bin, 1, &tdx, &attrs, what);
        read_all(tdx, got, nc);
        expect_near(what, got, dlogits, NULL, nc, dt == TSR_FLOAT32 ? 1e-5 : 1e-7,
                    dt == TSR_FLOAT32 ? 1e-6 : 1e-7, 0);
      }
      free(lse_dev);
      release(tdx);
      release(tdl);
      release(tlse);
      release(tloss);
      release(tt);
      release(tx);
      release(base);
      free(x);
      free(dlogits);
      free(got);
      free(lse);
      free(loss);
      free(dloss);
      free(tv);
      free(t);
    }
  }
}

// A target outside [0, C) is reported (at the run or at the next
// synchronize) as TSR_INVALID_ARGUMENT; the next valid run is clean.
static void test_cross_entropy_reports_a_target_out_of_range(void **state) {
  (void)state;
  int64_t xs[2] = {6, 4}, ns[1] = {6};
  double x[24], tv[6] = {0, 1, 2, 7, 3, -100};
  for (int i = 0; i < 24; ++i) x[i] = 0.25 * i;
  tsr_tensor *tx = make(TSR_FLOAT32, 2, xs, x);
  tsr_tensor *tt = make(TSR_INT64, 1, ns, tv);
  tsr_tensor *tloss = empty(TSR_FLOAT32, 0, ns);
  tsr_tensor *tlse = empty(TSR_FLOAT32, 1, ns);
  tsr_cross_entropy_attrs attrs = {sizeof(attrs), TSR_REDUCTION_MEAN, 0, -100, 0.0};
  tsr_tensor *in[2] = {tx, tt}, *out[2] = {tloss, tlse};
  tsr_status status = tsr_op_run(TSR_OP_CROSS_ENTROPY, 2, in, 2, out, &attrs);
  if (status == TSR_OK)
    status = tsr_device_synchronize(g_device);
  assert_int_equal(status, TSR_INVALID_ARGUMENT);
  tsr_context_error_clear(g_context);
  tsr_last_error_clear();
  tv[3] = 3;
  tsr_tensor *good = make(TSR_INT64, 1, ns, tv);
  in[1] = good;
  run(TSR_OP_CROSS_ENTROPY, 2, in, 2, out, &attrs, "cross_entropy after a bad target");
  double loss;
  read_all(tloss, &loss, 1);
  assert_false(isnan(loss));
  release(good);
  release(tlse);
  release(tloss);
  release(tt);
  release(tx);
}

// --- LAYER_NORM ----------------------------------------------------------------------------

static void test_layer_norm_and_backward_match_float64_loops(void **state) {
  (void)state;
  static const struct {
    int32_t rank;
    int64_t sizes[3];
    int32_t axis;
    int affine;
    int layout;
  } cases[] = {
      {2, {64, 512}, 1, 1, LAYOUT_CONTIGUOUS},
      {3, {3, 5, 7}, 1, 1, LAYOUT_CONTIGUOUS},  // normalises over two axes
      {2, {40, 33}, 1, 1, LAYOUT_TRANSPOSED},
      {2, {5, 3001}, 1, 0, LAYOUT_CONTIGUOUS},
      {2, {0, 6}, 1, 1, LAYOUT_CONTIGUOUS},
  };
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64};
  const double eps = 1e-5;
  uint64_t seed = 1100;
  for (int d = 0; d < COUNT(dtypes); ++d) {
    tsr_dtype_t dt = dtypes[d];
    for (int k = 0; k < COUNT(cases); ++k) {
      int32_t rank = cases[k].rank, axis = cases[k].axis;
      const int64_t *sizes = cases[k].sizes;
      int64_t n = numel_of(rank, sizes), rows = numel_of(axis, sizes);
      int64_t m = numel_of(rank - axis, sizes + axis);
      double *x = dalloc(n), *dy = dalloc(n), *gamma = dalloc(m), *beta = dalloc(m);
      double *y = dalloc(n), *dx = dalloc(n), *mean = dalloc(rows), *rstd = dalloc(rows);
      double *dgamma = dalloc(m), *dbeta = dalloc(m), *got = dalloc(n > m ? n : m);
      ts_rng rng = {seed++};
      ts_rng_fill(&rng, dt, -3, 3, x, n);
      ts_rng_fill(&rng, dt, -1, 1, dy, n);
      ts_rng_fill(&rng, dt, 0.5, 1.5, gamma, m);
      ts_rng_fill(&rng, dt, -0.5, 0.5, beta, m);
      const int affine = cases[k].affine;
      orc_layer_norm(rank, sizes, axis, x, affine ? gamma : NULL, affine ? beta : NULL, eps, y,
                     mean, rstd);
      int64_t stat_sizes[3];
      for (int32_t a = 0; a < rank; ++a) stat_sizes[a] = a < axis ? sizes[a] : 1;
      tsr_tensor *base = NULL;
      tsr_tensor *tx = make_layout(dt, rank, sizes, x, cases[k].layout, &base);
      tsr_tensor *tg = make(dt, rank - axis, sizes + axis, gamma);
      tsr_tensor *tb = make(dt, rank - axis, sizes + axis, beta);
      tsr_tensor *ty = empty(dt, rank, sizes), *tm = empty(dt, rank, stat_sizes);
      tsr_tensor *tr = empty(dt, rank, stat_sizes);
      tsr_layer_norm_attrs attrs = {sizeof(attrs), axis, (uint32_t)affine, eps};
      tsr_tensor *in[3] = {tx, tg, tb}, *out[3] = {ty, tm, tr};
      char what[96];
      snprintf(what, sizeof(what), "layer_norm %s case %d", ts_dtype_name(dt), k);
      run(TSR_OP_LAYER_NORM, affine ? 3 : 1, in, 3, out, &attrs, what);
      double tol = dt == TSR_FLOAT32 ? 2e-5 : 1e-12;
      read_all(ty, got, n);
      expect_near(what, got, y, NULL, n, tol, tol, 0);
      read_all(tm, got, rows);
      expect_near(what, got, mean, NULL, rows, tol, tol, 0);
      read_all(tr, got, rows);
      expect_near(what, got, rstd, NULL, rows, tol, tol, 0);
      // Backward with the float64 statistics (float32 rounding of them is
      // within the tolerance).
      orc_layer_norm_backward(rank, sizes, axis, dy, x, mean, rstd, affine ? gamma : NULL, dx,
                              dgamma, dbeta);
      tsr_tensor *tdy = make(dt, rank, sizes, dy), *tdx = empty(dt, rank, sizes);
      tsr_tensor *tdg = empty(dt, rank - axis, sizes + axis);
      tsr_tensor *tdb = empty(dt, rank - axis, sizes + axis);
      tsr_tensor *bin[5] = {tdy, tx, tm, tr, tg}, *bout[3] = {tdx, tdg, tdb};
      snprintf(what, sizeof(what), "layer_norm_backward %s case %d", ts_dtype_name(dt), k);
      run(TSR_OP_LAYER_NORM_BACKWARD, affine ? 5 : 4, bin, affine ? 3 : 1, bout, &attrs, what);
      double btol = dt == TSR_FLOAT32 ? 1e-4 : 1e-10;
      read_all(tdx, got, n);
      expect_near(what, got, dx, NULL, n, btol, btol, 0);
      if (affine) {
        read_all(tdg, got, m);
        expect_near(what, got, dgamma, NULL, m, btol, btol * (double)rows, 0);
        read_all(tdb, got, m);
        expect_near(what, got, dbeta, NULL, m, btol, btol * (double)rows, 0);
      }
      release(tdb);
      release(tdg);
      release(tdx);
      release(tdy);
      release(tr);
      release(tm);
      release(ty);
      release(tb);
      release(tg);
      release(tx);
      release(base);
      free(x), free(dy), free(gamma), free(beta), free(y), free(dx), free(mean), free(rstd);
      free(dgamma), free(dbeta), free(got);
    }
  }
}

// --- BATCH_NORM ----------------------------------------------------------------------------

static void test_batch_norm_and_backward_match_float64_loops(void **state) {
  (void)state;
  static const struct {
    int32_t rank;
    int64_t sizes[4];
    int training;
  } cases[] = {
      {4, {64, 32, 6, 6}, 1},
      {4, {4, 3, 5, 5}, 0},
      {2, {8, 5}, 1},
      {3, {16, 2, 257}, 1},
  };
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64};
  const double eps = 1e-5, momentum = 0.1;
  uint64_t seed = 1300;
  for (int d = 0; d < COUNT(dtypes); ++d) {
    tsr_dtype_t dt = dtypes[d];
    for (int k = 0; k < COUNT(cases); ++k) {
      int32_t rank = cases[k].rank;
      const int64_t *sizes = cases[k].sizes;
      const int training = cases[k].training;
      int64_t n = numel_of(rank, sizes), c_count = sizes[1];
      int64_t m = n / c_count;
      double *x = dalloc(n), *dy = dalloc(n), *y = dalloc(n), *dx = dalloc(n), *got = dalloc(n);
      double *gamma = dalloc(c_count), *beta = dalloc(c_count), *rm = dalloc(c_count);
      double *rv = dalloc(c_count), *mean = dalloc(c_count), *inv = dalloc(c_count);
      double *new_rm = dalloc(c_count), *new_rv = dalloc(c_count), *dg = dalloc(c_count);
      double *db = dalloc(c_count);
      ts_rng rng = {seed++};
      ts_rng_fill(&rng, dt, -2, 3, x, n);
      ts_rng_fill(&rng, dt, -1, 1, dy, n);
      ts_rng_fill(&rng, dt, 0.5, 1.5, gamma, c_count);
      ts_rng_fill(&rng, dt, -0.5, 0.5, beta, c_count);
      ts_rng_fill(&rng, dt, -0.5, 0.5, rm, c_count);
      ts_rng_fill(&rng, dt, 0.5, 2, rv, c_count);
      const tsr_batch_norm_attrs bn = {sizeof(bn), eps, momentum, (uint32_t)training, 0};
      orc_batch_norm(rank, sizes, &bn, x, gamma, beta, rm, rv, y, mean, inv, new_rm, new_rv);
      orc_batch_norm_backward(rank, sizes, &bn, dy, x, gamma, mean, inv, dx, dg, db);
      int64_t cs[1] = {c_count};
      tsr_tensor *tx = make(dt, rank, sizes, x), *tg = make(dt, 1, cs, gamma);
      tsr_tensor *tb = make(dt, 1, cs, beta), *trm = make(dt, 1, cs, rm),
                 *trv = make(dt, 1, cs, rv);
      tsr_tensor *ty = empty(dt, rank, sizes), *tsm = empty(dt, 1, cs), *tsi = empty(dt, 1, cs);
      // The running statistics are updated in place (outputs alias inputs).
      tsr_tensor *in[5] = {tx, tg, tb, trm, trv}, *out[5] = {ty, tsm, tsi, trm, trv};
      tsr_batch_norm_attrs attrs = {sizeof(attrs), eps, momentum, (uint32_t)training, 0};
      char what[96];
      snprintf(what, sizeof(what), "batch_norm %s case %d", ts_dtype_name(dt), k);
      run(TSR_OP_BATCH_NORM, 5, in, 5, out, &attrs, what);
      double tol = dt == TSR_FLOAT32 ? 3e-5 : 1e-11;
      read_all(ty, got, n);
      expect_near(what, got, y, NULL, n, tol, tol, 0);
      read_all(tsm, got, c_count);
      expect_near(what, got, mean, NULL, c_count, tol, tol, 0);
      read_all(tsi, got, c_count);
      expect_near(what, got, inv, NULL, c_count, tol, tol, 0);
      read_all(trm, got, c_count);
      expect_near(what, got, new_rm, NULL, c_count, tol, tol, 0);
      read_all(trv, got, c_count);
      expect_near(what, got, new_rv, NULL, c_count, tol, tol, 0);
      tsr_tensor *tdy = make(dt, rank, sizes, dy), *tdx = empty(dt, rank, sizes);
      tsr_tensor *tdg = empty(dt, 1, cs), *tdb = empty(dt, 1, cs);
      tsr_tensor *bin[5] = {tdy, tx, tg, tsm, tsi}, *bout[3] = {tdx, tdg, tdb};
      snprintf(what, sizeof(what), "batch_norm_backward %s case %d", ts_dtype_name(dt), k);
      run(TSR_OP_BATCH_NORM_BACKWARD, 5, bin, 3, bout, &attrs, what);
      double btol = dt == TSR_FLOAT32 ? 1e-4 : 1e-9;
      read_all(tdx, got, n);
      expect_near(what, got, dx, NULL, n, btol, btol, 0);
      read_all(tdg, got, c_count);
      expect_near(what, got, dg, NULL, c_count, btol, btol * (double)m, 0);
      read_all(tdb, got, c_count);
      expect_near(what, got, db, NULL, c_count, btol, btol * (double)m, 0);
      release(tdb), release(tdg), release(tdx), release(tdy);
      release(tsi), release(tsm), release(ty), release(trv), release(trm), release(tb);
      release(tg), release(tx);
      free(x), free(dy), free(y), free(dx), free(got), free(gamma), free(beta), free(rm);
      free(rv), free(mean), free(inv), free(new_rm), free(new_rv), free(dg), free(db);
    }
  }
}

// --- CONCAT, PAD, GATHER, SCATTER_ADD -----------------------------------------------------

static void test_concat_places_inputs_along_the_axis(void **state) {
  (void)state;
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
  for (int d = 0; d < COUNT(dtypes); ++d) {
    tsr_dtype_t dt = dtypes[d];
    for (int32_t axis = 0; axis < 3; ++axis) {
      // Three inputs, one empty and one transposed on its last two axes.
      int64_t sz[3][3] = {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}};
      sz[0][axis] = 3, sz[1][axis] = 0, sz[2][axis] = 5;
      int64_t out_sizes[3] = {2, 3, 4};
      out_sizes[axis] = 8;
      int64_t on = numel_of(3, out_sizes);
      double *want = dalloc(on), *got = dalloc(on);
      tsr_tensor *t[3], *base[3];
      int64_t along = 0, idx[3];
      ts_rng rng = {(uint64_t)(1500 + d * 3 + axis)};
      for (int i = 0; i < 3; ++i) {
        int64_t n = numel_of(3, sz[i]);
        double *v = dalloc(n);
        ts_rng_fill(&rng, dt, -50, 50, v, n);
        t[i] =
            make_layout(dt, 3, sz[i], v, i == 2 ? LAYOUT_TRANSPOSED : LAYOUT_CONTIGUOUS, &base[i]);
        for (int64_t e = 0; e < n; ++e) {
          unravel(e, 3, sz[i], idx);
          idx[axis] += along;
          want[ravel(3, out_sizes, idx)] = dt == TSR_BOOL ? (v[e] != 0) : v[e];
        }
        along += sz[i][axis];
        free(v);
      }
      tsr_tensor *out = empty(dt, 3, out_sizes);
      tsr_concat_attrs attrs = {sizeof(attrs), axis, 0};
      char what[64];
      snprintf(what, sizeof(what), "concat %s axis %d", ts_dtype_name(dt), (int)axis);
      run(TSR_OP_CONCAT, 3, t, 1, &out, &attrs, what);
      read_all(out, got, on);
      expect_near(what, got, want, NULL, on, 0, 0, 0);
      release(out);
      for (int i = 0; i < 3; ++i) release(t[i]), release(base[i]);
      free(want);
      free(got);
    }
  }
}

static void test_pad_fills_reflects_and_replicates(void **state) {
  (void)state;
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
  int64_t sizes[3] = {2, 4, 5};
  for (int d = 0; d < COUNT(dtypes); ++d) {
    tsr_dtype_t dt = dtypes[d];
    for (int mode = 0; mode < TSR_PAD_MODE_COUNT; ++mode) {
      if (dt == TSR_BOOL && mode != TSR_PAD_CONSTANT)
        continue;
      tsr_pad_attrs attrs;
      memset(&attrs, 0, sizeof(attrs));
      attrs.struct_size = sizeof(attrs);
      attrs.mode = mode;
      attrs.value = dt == TSR_BOOL ? 1.0 : is_float(dt) ? 2.5 : -7.0;
      int64_t before[3] = {1, 3, 0}, after[3] = {0, 2, 4};
      int64_t out_sizes[3];
      for (int a = 0; a < 3; ++a) {
        attrs.pad_before[a] = before[a];
        attrs.pad_after[a] = after[a];
        out_sizes[a] = before[a] + sizes[a] + after[a];
      }
      int64_t n = numel_of(3, sizes), on = numel_of(3, out_sizes), idx[3];
      double *x = dalloc(n), *want = dalloc(on), *got = dalloc(on);
      ts_rng rng = {(uint64_t)(1700 + d * 3 + mode)};
      ts_rng_fill(&rng, dt, -50, 50, x, n);
      if (dt == TSR_BOOL) {
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] != 0;
      }
      for (int64_t o = 0; o < on; ++o) {
        unravel(o, 3, out_sizes, idx);
        int inside = 1;
        for (int a = 0; a < 3; ++a) {
          int64_t i = idx[a] - before[a], s = sizes[a];
          if (i < 0 || i >= s) {
            if (mode == TSR_PAD_CONSTANT)
              inside = 0;
            else if (mode == TSR_PAD_REFLECT)
              i = i < 0 ? -i : 2 * (s - 1) - i;
            else
              i = i < 0 ? 0 : s - 1;
          }
          idx[a] = i;
        }
        want[o] = inside ? x[ravel(3, sizes, idx)] : attrs.value;
      }
      tsr_tensor *base = NULL;
      tsr_tensor *tx = make_layout(dt, 3, sizes, x, LAYOUT_TRANSPOSED, &base);
      tsr_tensor *out = empty(dt, 3, out_sizes);
      char what[64];
      snprintf(what, sizeof(what), "pad %s mode %d", ts_dtype_name(dt), mode);
      run(TSR_OP_PAD, 1, &tx, 1, &out, &attrs, what);
      read_all(out, got, on);
      expect_near(what, got, want, NULL, on, 0, 0, 0);
      release(out), release(tx), release(base);
      free(x), free(want), free(got);
    }
  }
}

static void test_gather_and_scatter_add_follow_the_index(void **state) {
  (void)state;
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64};
  uint64_t seed = 1900;
  for (int d = 0; d < COUNT(dtypes); ++d) {
    tsr_dtype_t dt = dtypes[d];
    for (int32_t axis = 0; axis < 2; ++axis) {
      for (int i64 = 0; i64 <= 1; ++i64) {
        int64_t sizes[2] = {10, 7}, kk = 9;  // K > size on axis 1: repeats
        int64_t other[2] = {10, 7};
        other[axis] = kk;
        int64_t n = numel_of(2, sizes), on = numel_of(2, other);
        double *x = dalloc(n), *index = dalloc(kk), *want = dalloc(n > on ? n : on);
        double *got = dalloc(n > on ? n : on), *src = dalloc(on), *acc = dalloc(n);
        ts_rng rng = {seed++};
        ts_rng_fill(&rng, dt, -50, 50, x, n);
        ts_rng_fill(&rng, dt, -50, 50, src, on);
        for (int64_t k = 0; k < kk; ++k) index[k] = (double)((k * 5 + 3) % sizes[axis]);
        tsr_dtype_t idt = i64 ? TSR_INT64 : TSR_INT32;
        int64_t ks[1] = {kk}, idx[2];
        tsr_tensor *tx = make(dt, 2, sizes, x), *ti = make(idt, 1, ks, index);
        // GATHER: out [.., K, ..] from x.
        for (int64_t o = 0; o < on; ++o) {
          unravel(o, 2, other, idx);
          idx[axis] = (int64_t)index[idx[axis]];
          want[o] = x[ravel(2, sizes, idx)];
        }
        tsr_tensor *out = empty(dt, 2, other);
        tsr_tensor *in[2] = {tx, ti};
        tsr_gather_attrs attrs = {sizeof(attrs), axis, 0};
        char what[64];
        snprintf(what, sizeof(what), "gather %s axis %d %s", ts_dtype_name(dt), (int)axis,
                 ts_dtype_name(idt));
        run(TSR_OP_GATHER, 2, in, 1, &out, &attrs, what);
        read_all(out, got, on);
        expect_near(what, got, want, NULL, on, 0, 0, 0);
        // SCATTER_ADD: x += src along the index, read-modify-write.
        for (int64_t i = 0; i < n; ++i) acc[i] = x[i];
        for (int64_t e = 0; e < on; ++e) {
          unravel(e, 2, other, idx);
          idx[axis] = (int64_t)index[idx[axis]];
          acc[ravel(2, sizes, idx)] += src[e];
        }
        tsr_tensor *ts = make(dt, 2, other, src);
        in[0] = ts;
        snprintf(what, sizeof(what), "scatter_add %s axis %d %s", ts_dtype_name(dt), (int)axis,
                 ts_dtype_name(idt));
        run(TSR_OP_SCATTER_ADD, 2, in, 1, &tx, &attrs, what);
        read_all(tx, got, n);
        expect_near(what, got, acc, NULL, n, dt == TSR_FLOAT32 ? 1e-6 : 0, 0, 0);
        release(ts), release(out), release(ti), release(tx);
        free(x), free(index), free(want), free(got), free(src), free(acc);
      }
    }
  }
}

static void test_gather_reports_an_index_out_of_range(void **state) {
  (void)state;
  int64_t sizes[2] = {4, 3}, ks[1] = {3}, out_sizes[2] = {3, 3};
  double x[12] = {0}, index[3] = {0, 6, 1};
  tsr_tensor *tx = make(TSR_FLOAT32, 2, sizes, x), *ti = make(TSR_INT64, 1, ks, index);
  tsr_tensor *out = empty(TSR_FLOAT32, 2, out_sizes);
  tsr_tensor *in[2] = {tx, ti};
  tsr_gather_attrs attrs = {sizeof(attrs), 0, 0};
  tsr_status status = tsr_op_run(TSR_OP_GATHER, 2, in, 1, &out, &attrs);
  if (status == TSR_OK)
    status = tsr_device_synchronize(g_device);
  assert_int_equal(status, TSR_INVALID_ARGUMENT);
  tsr_context_error_clear(g_context);
  tsr_last_error_clear();
  release(out), release(ti), release(tx);
}

int main(void) {
  // Skip (77) when the OpenCL device cannot be opened, saying why.
  tsr_context *probe = ts_context_create(TSR_TEST_OPENCL_PATH, "opencl:0");
  if (probe == NULL) {
    printf("skipped: no usable OpenCL device: %s\n", tsr_last_error());
    return 77;
  }
  tsr_context_destroy(probe);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_reduce_matches_float64_loops_for_every_fn_and_dtype, test_setup),
      cmocka_unit_test_setup(test_reduce_of_empty_axis_gives_identity_and_mean_nan, test_setup),
      cmocka_unit_test_setup(test_reduce_max_and_min_propagate_nan, test_setup),
      cmocka_unit_test_setup(test_reduce_is_bit_reproducible, test_setup),
      cmocka_unit_test_setup(test_arg_reduce_picks_the_first_extreme_and_nan, test_setup),
      cmocka_unit_test_setup(test_softmax_and_backward_match_float64_loops, test_setup),
      cmocka_unit_test_setup(test_cross_entropy_and_backward_match_float64_loops, test_setup),
      cmocka_unit_test_setup(test_cross_entropy_reports_a_target_out_of_range, test_setup),
      cmocka_unit_test_setup(test_layer_norm_and_backward_match_float64_loops, test_setup),
      cmocka_unit_test_setup(test_batch_norm_and_backward_match_float64_loops, test_setup),
      cmocka_unit_test_setup(test_concat_places_inputs_along_the_axis, test_setup),
      cmocka_unit_test_setup(test_pad_fills_reflects_and_replicates, test_setup),
      cmocka_unit_test_setup(test_gather_and_scatter_add_follow_the_index, test_setup),
      cmocka_unit_test_setup(test_gather_reports_an_index_out_of_range, test_setup),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
