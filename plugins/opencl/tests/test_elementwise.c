// The OpenCL plugin's elementwise family: FILL COPY CAST UNARY UNARY_BACKWARD
// BINARY COMPARE WHERE CLAMP SGD_UPDATE ADAM_UPDATE RNG_FILL on opencl:0,
// checked against float64 loops written here and the conformance oracle's
// functions (and, for RNG_FILL and the optimizers, against the ref plugin
// run on the same inputs: RNG_FILL must give ref's bits).
//
// Fallback is denied and every run first asks which engine the plan uses,
// so a case cannot pass by running on ref. Shapes are odd (not multiples of
// a work-group block), strided (transposed, sliced), broadcast (stride 0,
// the MLP's bias rows and the CNN's per-channel bias) and empty.
//
// Compile definitions: TSR_TEST_OPENCL_PATH, TSR_TEST_REF_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/oracle.h"
#include "test_support.h"

static tsr_context *g_context;
static tsr_device *g_device;  // opencl:0
static tsr_device *g_ref;     // ref:0, for the bit-exact comparisons

static int group_setup(void **state) {
  (void)state;
  if (ts_device_open(TSR_TEST_OPENCL_PATH ":" TSR_TEST_REF_PATH, "opencl:0", &g_context,
                     &g_device) != 0) {
    return -1;
  }
  g_ref = tsr_context_device_find(g_context, "ref:0");
  if (g_ref == NULL) {
    fprintf(stderr, "the context lacks ref:0: %s\n", tsr_last_error());
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  return 0;
}

// --- helpers -------------------------------------------------------------------

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

static tsr_tensor *tensor_on(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                             const int64_t *sizes, const double *values) {
  tsr_tensor *t = ts_tensor(device, dtype, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

static tsr_tensor *tensor_of(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                             const double *values) {
  return tensor_on(g_device, dtype, rank, sizes, values);
}

static tsr_tensor *empty_of(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  tsr_tensor *t = tsr_tensor_empty(g_device, dtype, rank, sizes);
  TS_ASSERT_TENSOR(t);
  return t;
}

static double *read_all(const tsr_tensor *t) {
  int64_t n = tsr_tensor_numel(t);
  double *v = dalloc(n);
  assert_int_equal(ts_read(t, v, n), n);
  return v;
}

// The engine's kind ("contig", "rows", "flat", or NULL for any) must appear
// after "opencl:<op>-"; on |device| other than opencl:0 nothing is checked.
static void run_on(tsr_device *device, tsr_op_id_t op, int32_t ni, tsr_tensor *const *in,
                   int32_t no, tsr_tensor *const *out, const void *attrs, const char *kind,
                   const char *what) {
  if (device == g_device) {
    const char *engine = NULL;
    tsr_status status = tsr_op_engine_get(op, ni, in, no, out, attrs, &engine);
    if (status != TSR_OK) {
      fail_msg("%s %s: plan: %s: %s", what, tsr_op_name(op), tsr_status_name(status),
               tsr_last_error());
    }
    if (strncmp(engine, "opencl:", 7) != 0) {
      fail_msg("%s %s ran on %s, not an OpenCL kernel", what, tsr_op_name(op), engine);
    }
    if (kind != NULL) {
      const char *dash = strrchr(engine, '-');
      if (dash == NULL || strcmp(dash + 1, kind) != 0) {
        fail_msg("%s %s: engine %s, expected the %s kernel", what, tsr_op_name(op), engine, kind);
      }
    }
  }
  tsr_status status = tsr_op_run(op, ni, in, no, out, attrs);
  if (status != TSR_OK) {
    fail_msg("%s %s: %s: %s", what, tsr_op_name(op), tsr_status_name(status), tsr_last_error());
  }
}

static void run(tsr_op_id_t op, int32_t ni, tsr_tensor *const *in, int32_t no,
                tsr_tensor *const *out, const void *attrs, const char *kind, const char *what) {
  run_on(g_device, op, ni, in, no, out, attrs, kind, what);
}

static double tol_rel(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 1e-5 : 1e-12;
}
static double tol_abs(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 2e-6 : 1e-13;
}

static const tsr_dtype_t k_floats[2] = {TSR_FLOAT32, TSR_FLOAT64};

// --- UNARY and UNARY_BACKWARD ----------------------------------------------------

static int unary_positive_domain(tsr_unary_fn_t fn) {
  return fn == TSR_UNARY_LOG || fn == TSR_UNARY_SQRT || fn == TSR_UNARY_RSQRT;
}

// Every float fn, float32 and float64, over 1031 elements (not a multiple
// of a block): forward, in place, and backward.
static void test_unary_every_float_fn(void **state) {
  (void)state;
  const int64_t n = 1031;
  const int64_t sizes[1] = {n};
  double *x = dalloc(n), *dy = dalloc(n), *want = dalloc(n);
  for (int di = 0; di < 2; ++di) {
    const tsr_dtype_t dt = k_floats[di];
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (fn == TSR_UNARY_LOGICAL_NOT)
        continue;
      ts_rng rng = {1000u + (uint64_t)fn};
      const double lo = unary_positive_domain(fn) ? 0.05 : fn == TSR_UNARY_LOG1P ? -0.9 : -4.0;
      ts_rng_fill(&rng, dt, lo, 4.0, x, n);
      ts_rng_fill(&rng, dt, -1.0, 1.0, dy, n);
      if (fn == TSR_UNARY_ROUND) {  // halves: to even
        x[0] = 2.5, x[1] = -2.5, x[2] = 0.5, x[3] = 1.5, x[4] = -0.5;
      }
      const double alpha = fn == TSR_UNARY_ELU ? 1.25 : 0.03;
      tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
      char what[96];
      snprintf(what, sizeof(what), "unary fn %d %s", (int)fn, ts_dtype_name(dt));

      tsr_tensor *tx = tensor_of(dt, 1, sizes, x);
      tsr_tensor *out = empty_of(dt, 1, sizes);
      run(TSR_OP_UNARY, 1, &tx, 1, &out, &attrs, "contig", what);
      double *got = read_all(out);
      for (int64_t i = 0; i < n; ++i) {
        want[i] = tsr_oracle_unary_value(fn, x[i], (double)(float)alpha);
      }
      if (dt == TSR_FLOAT64) {
        for (int64_t i = 0; i < n; ++i) want[i] = tsr_oracle_unary_value(fn, x[i], alpha);
      }
      ts_expect_values(what, dt, got, want, NULL, n, tol_rel(dt), tol_abs(dt));
      free(got);

      // In place: out aliases x exactly.
      run(TSR_OP_UNARY, 1, &tx, 1, &tx, &attrs, "contig", what);
      got = read_all(tx);
      ts_expect_values(what, dt, got, want, NULL, n, tol_rel(dt), tol_abs(dt));
      free(got);
      tsr_tensor_release(tx);
      tsr_tensor_release(out);

      if (!tsr_oracle_unary_has_backward(fn))
        continue;
      snprintf(what, sizeof(what), "unary_backward fn %d %s", (int)fn, ts_dtype_name(dt));
      tx = tensor_of(dt, 1, sizes, x);
      tsr_tensor *tdy = tensor_of(dt, 1, sizes, dy);
      tsr_tensor *dx = empty_of(dt, 1, sizes);
      tsr_tensor *in[2] = {tdy, tx};
      run(TSR_OP_UNARY_BACKWARD, 2, in, 1, &dx, &attrs, "contig", what);
      got = read_all(dx);
      const double a = dt == TSR_FLOAT32 ? (double)(float)alpha : alpha;
      for (int64_t i = 0; i < n; ++i) want[i] = dy[i] * tsr_oracle_unary_derivative(fn, x[i], a);
      ts_expect_values(what, dt, got, want, NULL, n, tol_rel(dt), 4 * tol_abs(dt));
      free(got);
      tsr_tensor_release(tx);
      tsr_tensor_release(tdy);
      tsr_tensor_release(dx);
    }
  }
  free(x), free(dy), free(want);
}

// NaN rules: relu and sign keep NaN, and so do their gradients.
static void test_unary_nan_rules(void **state) {
  (void)state;
  const int64_t sizes[1] = {4};
  const double x[4] = {NAN, -0.0, -2.0, 3.0};
  const double dy[4] = {1.0, 1.0, 1.0, 1.0};
  const tsr_unary_fn_t fns[4] = {TSR_UNARY_RELU, TSR_UNARY_SIGN, TSR_UNARY_ABS, TSR_UNARY_NEG};
  const double fwd[4][4] = {
      {NAN, -0.0, 0.0, 3.0}, {NAN, 0.0, -1.0, 1.0}, {NAN, 0.0, 2.0, 3.0}, {NAN, 0.0, 2.0, -3.0}};
  const double bwd[4][4] = {
      {NAN, 0.0, 0.0, 1.0}, {0}, {NAN, 0.0, -1.0, 1.0}, {NAN, -1.0, -1.0, -1.0}};
  for (int di = 0; di < 2; ++di) {
    const tsr_dtype_t dt = k_floats[di];
    for (int f = 0; f < 4; ++f) {
      tsr_unary_attrs attrs = {sizeof(attrs), fns[f], 0, 0.0};
      tsr_tensor *tx = tensor_of(dt, 1, sizes, x), *out = empty_of(dt, 1, sizes);
      run(TSR_OP_UNARY, 1, &tx, 1, &out, &attrs, NULL, "unary NaN");
      double *got = read_all(out);
      ts_expect_values("unary NaN", dt, got, fwd[f], NULL, 4, 0, 0);
      free(got);
      if (fns[f] != TSR_UNARY_SIGN) {
        tsr_tensor *tdy = tensor_of(dt, 1, sizes, dy);
        tsr_tensor *in[2] = {tdy, tx};
        run(TSR_OP_UNARY_BACKWARD, 2, in, 1, &out, &attrs, NULL, "unary_backward NaN");
        got = read_all(out);
        ts_expect_values("unary_backward NaN", dt, got, bwd[f], NULL, 4, 0, 0);
        free(got);
        tsr_tensor_release(tdy);
      }
      tsr_tensor_release(tx);
      tsr_tensor_release(out);
    }
  }
}

// The int fns wrap like two's complement; logical_not on bool.
static void test_unary_int_and_bool(void **state) {
  (void)state;
  const int64_t sizes[1] = {7};
  const tsr_unary_fn_t fns[5] = {TSR_UNARY_NEG, TSR_UNARY_ABS, TSR_UNARY_SQUARE, TSR_UNARY_RELU,
                                 TSR_UNARY_SIGN};
  {
    const int32_t x[7] = {0, 5, -7, INT32_MIN, INT32_MAX, 46340, -3};
    for (int f = 0; f < 5; ++f) {
      tsr_tensor *tx = tsr_tensor_from_host(g_device, TSR_INT32, 1, sizes, x);
      TS_ASSERT_TENSOR(tx);
      tsr_tensor *out = empty_of(TSR_INT32, 1, sizes);
      tsr_unary_attrs attrs = {sizeof(attrs), fns[f], 0, 0.0};
      run(TSR_OP_UNARY, 1, &tx, 1, &out, &attrs, "contig", "unary int32");
      int32_t got[7];
      TS_ASSERT_OK(tsr_tensor_to_host(out, got, sizeof(got)));
      for (int i = 0; i < 7; ++i) {
        const uint32_t u = (uint32_t)x[i];
        int32_t w;
        switch (fns[f]) {
          case TSR_UNARY_NEG:
            w = (int32_t)(0u - u);
            break;
          case TSR_UNARY_ABS:
            w = x[i] < 0 ? (int32_t)(0u - u) : x[i];
            break;
          case TSR_UNARY_SQUARE:
            w = (int32_t)(u * u);
            break;
          case TSR_UNARY_RELU:
            w = x[i] < 0 ? 0 : x[i];
            break;
          default:
            w = (x[i] > 0) - (x[i] < 0);
            break;
        }
        if (got[i] != w)
          fail_msg("unary fn %d int32 [%d]: %d, expected %d", fns[f], i, got[i], w);
      }
      tsr_tensor_release(tx);
      tsr_tensor_release(out);
    }
  }
  {
    const int64_t x[7] = {0, 5, -7, INT64_MIN, INT64_MAX, 3037000499LL, -(1LL << 40)};
    for (int f = 0; f < 5; ++f) {
      tsr_tensor *tx = tsr_tensor_from_host(g_device, TSR_INT64, 1, sizes, x);
      TS_ASSERT_TENSOR(tx);
      tsr_tensor *out = empty_of(TSR_INT64, 1, sizes);
      tsr_unary_attrs attrs = {sizeof(attrs), fns[f], 0, 0.0};
      run(TSR_OP_UNARY, 1, &tx, 1, &out, &attrs, "contig", "unary int64");
      int64_t got[7];
      TS_ASSERT_OK(tsr_tensor_to_host(out, got, sizeof(got)));
      for (int i = 0; i < 7; ++i) {
        const uint64_t u = (uint64_t)x[i];
        int64_t w;
        switch (fns[f]) {
          case TSR_UNARY_NEG:
            w = (int64_t)(0u - u);
            break;
          case TSR_UNARY_ABS:
            w = x[i] < 0 ? (int64_t)(0u - u) : x[i];
            break;
          case TSR_UNARY_SQUARE:
            w = (int64_t)(u * u);
            break;
          case TSR_UNARY_RELU:
            w = x[i] < 0 ? 0 : x[i];
            break;
          default:
            w = (x[i] > 0) - (x[i] < 0);
            break;
        }
        if (got[i] != w) {
          fail_msg("unary fn %d int64 [%d]: %lld, expected %lld", fns[f], i, (long long)got[i],
                   (long long)w);
        }
      }
      tsr_tensor_release(tx);
      tsr_tensor_release(out);
    }
  }
  const double b[7] = {0, 1, 1, 0, 0, 1, 0}, not_b[7] = {1, 0, 0, 1, 1, 0, 1};
  tsr_tensor *tb = tensor_of(TSR_BOOL, 1, sizes, b), *out = empty_of(TSR_BOOL, 1, sizes);
  tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_LOGICAL_NOT, 0, 0.0};
  run(TSR_OP_UNARY, 1, &tb, 1, &out, &attrs, "contig", "logical_not");
  double *got = read_all(out);
  ts_expect_values("logical_not", TSR_BOOL, got, not_b, NULL, 7, 0, 0);
  free(got);
  tsr_tensor_release(tb);
  tsr_tensor_release(out);
}

// A transposed input and a sliced (step 2) output: the strided kernels, on
// short rows (flat) and long rows (rows).
static void test_unary_strided_views(void **state) {
  (void)state;
  const int64_t shapes[2][2] = {{37, 53}, {5, 1100}};
  for (int s = 0; s < 2; ++s) {
    const int64_t r = shapes[s][0], c = shapes[s][1], n = r * c;
    double *x = dalloc(n), *want = dalloc(n);
    ts_rng rng = {77u + (uint64_t)s};
    ts_rng_fill(&rng, TSR_FLOAT32, -3.0, 3.0, x, n);
    // x holds [c, r]; its transpose is an [r, c] view with strides (1, r).
    tsr_tensor *base = tensor_of(TSR_FLOAT32, 2, (int64_t[]){c, r}, x);
    tsr_tensor *xt = tsr_transpose(base, 0, 1);
    TS_ASSERT_TENSOR(xt);
    tsr_tensor *wide = empty_of(TSR_FLOAT32, 2, (int64_t[]){r, 2 * c});
    tsr_tensor *out = tsr_slice(wide, 1, 0, 2 * c, 2);  // strides (2c, 2)
    TS_ASSERT_TENSOR(out);
    tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_TANH, 0, 0.0};
    run(TSR_OP_UNARY, 1, &xt, 1, &out, &attrs, s == 0 ? "flat" : "rows", "unary transposed");
    double *got = read_all(out);
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t j = 0; j < c; ++j) want[i * c + j] = tanh(x[j * r + i]);
    }
    ts_expect_values("unary transposed", TSR_FLOAT32, got, want, NULL, n, 1e-5, 2e-6);
    free(got), free(x), free(want);
    tsr_tensor_release(base), tsr_tensor_release(xt), tsr_tensor_release(wide);
    tsr_tensor_release(out);
  }
}

// --- BINARY, COMPARE, WHERE, CLAMP --------------------------------------------------

// a [rows, cols] op b for b of shape [rows, cols], [1, cols] (the MLP's bias
// row) and [] (a scalar), every float fn, with alpha 1 and 2.5 for ADD/SUB.
static void test_binary_float_fns_and_broadcasts(void **state) {
  (void)state;
  const int64_t rows = 19, cols = 131, n = rows * cols;
  double *a = dalloc(n), *b = dalloc(n), *want = dalloc(n);
  for (int di = 0; di < 2; ++di) {
    const tsr_dtype_t dt = k_floats[di];
    for (tsr_binary_fn_t fn = 0; fn <= TSR_BINARY_POW; ++fn) {
      for (int bshape = 0; bshape < 3; ++bshape) {
        for (int with_alpha = 0; with_alpha < 2; ++with_alpha) {
          if (with_alpha && fn > TSR_BINARY_SUB)
            continue;
          ts_rng rng = {(uint64_t)(fn * 10 + bshape)};
          const double lo = fn == TSR_BINARY_POW ? 0.1 : -3.0;
          ts_rng_fill(&rng, dt, lo, 3.0, a, n);
          ts_rng_fill(&rng, dt, lo, 3.0, b, n);
          if (fn == TSR_BINARY_DIV) {
            for (int64_t i = 0; i < n; ++i) b[i] = b[i] == 0 ? 1.0 : b[i];
          }
          if (fn == TSR_BINARY_MAXIMUM || fn == TSR_BINARY_MINIMUM)
            a[3] = NAN, b[5] = NAN;
          const int64_t bsizes[3][2] = {{rows, cols}, {1, cols}, {1, 1}};
          tsr_tensor *ta = tensor_of(dt, 2, (int64_t[]){rows, cols}, a);
          tsr_tensor *tb0 = tensor_of(dt, bshape == 2 ? 0 : 2, bsizes[bshape], b);
          tsr_tensor *tb = tsr_expand(tb0, 2, (int64_t[]){rows, cols});
          TS_ASSERT_TENSOR(tb);
          tsr_tensor *out = empty_of(dt, 2, (int64_t[]){rows, cols});
          const double alpha = with_alpha ? 2.5 : 1.0;
          tsr_binary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
          char what[96];
          snprintf(what, sizeof(what), "binary fn %d %s b-shape %d alpha %g", (int)fn,
                   ts_dtype_name(dt), bshape, alpha);
          tsr_tensor *in[2] = {ta, tb};
          run(TSR_OP_BINARY, 2, in, 1, &out, &attrs, bshape == 1 ? "flat" : "contig", what);
          double *got = read_all(out);
          for (int64_t i = 0; i < rows; ++i) {
            for (int64_t j = 0; j < cols; ++j) {
              const double bv = bshape == 0 ? b[i * cols + j] : bshape == 1 ? b[j] : b[0];
              want[i * cols + j] = tsr_oracle_binary_value(fn, a[i * cols + j], bv, alpha);
            }
          }
          ts_expect_values(what, dt, got, want, NULL, n, tol_rel(dt), tol_abs(dt));
          free(got);
          // In place on a: out aliases a exactly.
          if (bshape == 0) {
            run(TSR_OP_BINARY, 2, in, 1, &ta, &attrs, "contig", what);
            got = read_all(ta);
            ts_expect_values(what, dt, got, want, NULL, n, tol_rel(dt), tol_abs(dt));
            free(got);
          }
          tsr_tensor_release(ta), tsr_tensor_release(tb0), tsr_tensor_release(tb);
          tsr_tensor_release(out);
        }
      }
    }
  }
  free(a), free(b), free(want);
}

// The CNN's per-channel bias: [N, C, H, W] + [1, C, 1, 1], tsr-train's
// first layer (64 x 32 x 26 x 26, rows of 676) and an odd small one.
static void test_binary_cnn_channel_bias(void **state) {
  (void)state;
  const int64_t shapes[2][4] = {{64, 32, 26, 26}, {3, 5, 7, 9}};
  for (int s = 0; s < 2; ++s) {
    const int64_t *sz = shapes[s];
    const int64_t n = numel_of(4, sz), c = sz[1], hw = sz[2] * sz[3];
    double *x = dalloc(n), *bias = dalloc(c), *want = dalloc(n);
    ts_rng rng = {5u + (uint64_t)s};
    ts_rng_fill(&rng, TSR_FLOAT32, -2.0, 2.0, x, n);
    ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, bias, c);
    tsr_tensor *tx = tensor_of(TSR_FLOAT32, 4, sz, x);
    tsr_tensor *tb0 = tensor_of(TSR_FLOAT32, 4, (int64_t[]){1, c, 1, 1}, bias);
    tsr_tensor *tb = tsr_expand(tb0, 4, sz);
    TS_ASSERT_TENSOR(tb);
    tsr_tensor *out = empty_of(TSR_FLOAT32, 4, sz);
    tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_ADD, 0, 1.0};
    tsr_tensor *in[2] = {tx, tb};
    run(TSR_OP_BINARY, 2, in, 1, &out, &attrs, hw >= 512 ? "rows" : "flat", "cnn bias");
    double *got = read_all(out);
    for (int64_t i = 0; i < n; ++i) want[i] = x[i] + bias[(i / hw) % c];
    ts_expect_values("cnn bias", TSR_FLOAT32, got, want, NULL, n, 1e-6, 1e-6);
    free(got), free(x), free(bias), free(want);
    tsr_tensor_release(tx), tsr_tensor_release(tb0), tsr_tensor_release(tb);
    tsr_tensor_release(out);
  }
}

// Int arithmetic wraps; division truncates, x / 0 is 0, INT_MIN / -1 wraps;
// an integral alpha scales b.
static void test_binary_int_rules(void **state) {
  (void)state;
  enum { N = 10 };
  const int64_t sizes[1] = {N};
  const int64_t a64[N] = {7, -7, 7, -7, 5, INT64_MIN, INT64_MAX, 0, 123456789012LL, -1};
  const int64_t b64[N] = {2, 2, -2, -2, 0, -1, 1, 3, -1000, 0};
  for (int wide = 0; wide < 2; ++wide) {
    const tsr_dtype_t dt = wide ? TSR_INT64 : TSR_INT32;
    int32_t a32[N], b32[N];
    int64_t av[N], bv[N];
    for (int i = 0; i < N; ++i) {
      av[i] = wide ? a64[i] : (int32_t)(uint32_t)(uint64_t)a64[i];
      bv[i] = b64[i];
      a32[i] = (int32_t)av[i], b32[i] = (int32_t)bv[i];
    }
    if (!wide)
      av[5] = a32[5] = INT32_MIN, av[6] = a32[6] = INT32_MAX;
    for (tsr_binary_fn_t fn = 0; fn <= TSR_BINARY_MINIMUM; ++fn) {
      for (int with_alpha = 0; with_alpha < 2; ++with_alpha) {
        if (with_alpha && fn > TSR_BINARY_SUB)
          continue;
        const int64_t alpha = with_alpha ? -3 : 1;
        tsr_tensor *ta = tsr_tensor_from_host(g_device, dt, 1, sizes, wide ? (void *)av : a32);
        tsr_tensor *tb = tsr_tensor_from_host(g_device, dt, 1, sizes, wide ? (void *)bv : b32);
        TS_ASSERT_TENSOR(ta);
        TS_ASSERT_TENSOR(tb);
        tsr_tensor *out = empty_of(dt, 1, sizes);
        tsr_binary_attrs attrs = {sizeof(attrs), fn, 0, (double)alpha};
        tsr_tensor *in[2] = {ta, tb};
        run(TSR_OP_BINARY, 2, in, 1, &out, &attrs, "contig", "binary int");
        int64_t got[N];
        int32_t got32[N];
        TS_ASSERT_OK(tsr_tensor_to_host(out, wide ? (void *)got : got32,
                                        wide ? sizeof(got) : sizeof(got32)));
        for (int i = 0; i < N; ++i) {
          if (!wide)
            got[i] = got32[i];
          const int64_t want = tsr_oracle_binary_int(fn, av[i], bv[i], alpha, dt);
          if (got[i] != want) {
            fail_msg("binary fn %d %s alpha %lld [%d]: %lld op %lld = %lld, expected %lld", fn,
                     ts_dtype_name(dt), (long long)alpha, i, (long long)av[i], (long long)bv[i],
                     (long long)got[i], (long long)want);
          }
        }
        tsr_tensor_release(ta), tsr_tensor_release(tb), tsr_tensor_release(out);
      }
    }
  }
  // Logical fns on bool.
  const int64_t s4[1] = {4};
  const double p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
  const double want[3][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
  for (int f = 0; f < 3; ++f) {
    tsr_tensor *tp = tensor_of(TSR_BOOL, 1, s4, p), *tq = tensor_of(TSR_BOOL, 1, s4, q);
    tsr_tensor *out = empty_of(TSR_BOOL, 1, s4);
    tsr_binary_attrs attrs = {sizeof(attrs), TSR_BINARY_LOGICAL_AND + f, 0, 1.0};
    tsr_tensor *in[2] = {tp, tq};
    run(TSR_OP_BINARY, 2, in, 1, &out, &attrs, "contig", "binary logical");
    double *got = read_all(out);
    ts_expect_values("binary logical", TSR_BOOL, got, want[f], NULL, 4, 0, 0);
    free(got);
    tsr_tensor_release(tp), tsr_tensor_release(tq), tsr_tensor_release(out);
  }
}

static void test_compare_every_fn_and_dtype(void **state) {
  (void)state;
  enum { N = 9 };
  const int64_t sizes[2] = {3, 3};
  const double a[N] = {1, 2, 3, -1, 0, NAN, 5, 7, 1};
  const double b[3] = {2, 2, NAN};  // a row broadcast down the columns
  const tsr_dtype_t dtypes[5] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
  for (int di = 0; di < 5; ++di) {
    const tsr_dtype_t dt = dtypes[di];
    double av[N], bv[3];
    for (int i = 0; i < N; ++i) av[i] = orc_is_float(dt) ? a[i] : isnan(a[i]) ? 4 : a[i];
    for (int i = 0; i < 3; ++i) bv[i] = orc_is_float(dt) ? b[i] : isnan(b[i]) ? 3 : b[i];
    if (dt == TSR_BOOL) {
      for (int i = 0; i < N; ++i) av[i] = av[i] != 0;
      for (int i = 0; i < 3; ++i) bv[i] = bv[i] != 0;
    }
    for (tsr_compare_fn_t fn = 0; fn < TSR_COMPARE_FN_COUNT; ++fn) {
      tsr_tensor *ta = tensor_of(dt, 2, sizes, av);
      tsr_tensor *tb0 = tensor_of(dt, 2, (int64_t[]){1, 3}, bv);
      tsr_tensor *tb = tsr_expand(tb0, 2, sizes);
      TS_ASSERT_TENSOR(tb);
      tsr_tensor *out = empty_of(TSR_BOOL, 2, sizes);
      tsr_compare_attrs attrs = {sizeof(attrs), fn, 0};
      tsr_tensor *in[2] = {ta, tb};
      char what[64];
      snprintf(what, sizeof(what), "compare fn %d %s", (int)fn, ts_dtype_name(dt));
      run(TSR_OP_COMPARE, 2, in, 1, &out, &attrs, "flat", what);
      double *got = read_all(out), want[N];
      for (int i = 0; i < N; ++i) want[i] = tsr_oracle_compare_value(fn, av[i], bv[i % 3]);
      ts_expect_values(what, TSR_BOOL, got, want, NULL, N, 0, 0);
      free(got);
      tsr_tensor_release(ta), tsr_tensor_release(tb0), tsr_tensor_release(tb);
      tsr_tensor_release(out);
    }
  }
}

static void test_where_every_dtype_with_broadcast_cond(void **state) {
  (void)state;
  const int64_t rows = 7, cols = 601, n = rows * cols;
  const tsr_dtype_t dtypes[5] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
  double *a = dalloc(n), *b = dalloc(n), *c = dalloc(cols), *want = dalloc(n);
  for (int di = 0; di < 5; ++di) {
    const tsr_dtype_t dt = dtypes[di];
    ts_rng rng = {31u + (uint64_t)di};
    ts_rng_fill(&rng, dt, -100.0, 100.0, a, n);
    ts_rng_fill(&rng, dt, -100.0, 100.0, b, n);
    ts_rng_fill(&rng, TSR_BOOL, 0.0, 1.0, c, cols);
    tsr_tensor *ta = tensor_of(dt, 2, (int64_t[]){rows, cols}, a);
    tsr_tensor *tb = tensor_of(dt, 2, (int64_t[]){rows, cols}, b);
    tsr_tensor *tc0 = tensor_of(TSR_BOOL, 2, (int64_t[]){1, cols}, c);
    tsr_tensor *tc = tsr_expand(tc0, 2, (int64_t[]){rows, cols});
    TS_ASSERT_TENSOR(tc);
    tsr_tensor *out = empty_of(dt, 2, (int64_t[]){rows, cols});
    tsr_tensor *in[3] = {tc, ta, tb};
    run(TSR_OP_WHERE, 3, in, 1, &out, NULL, "rows", "where");
    double *got = read_all(out);
    for (int64_t i = 0; i < n; ++i) want[i] = c[i % cols] != 0 ? a[i] : b[i];
    ts_expect_values("where", dt, got, want, NULL, n, 0, 0);
    free(got);
    tsr_tensor_release(ta), tsr_tensor_release(tb), tsr_tensor_release(tc0);
    tsr_tensor_release(tc), tsr_tensor_release(out);
  }
  free(a), free(b), free(c), free(want);
}

static void test_clamp_bounds_and_nan(void **state) {
  (void)state;
  enum { N = 8 };
  const int64_t sizes[1] = {N};
  const double x[N] = {-5, -1.5, 0, 0.7, 1.2, 9, NAN, 2.9};
  const tsr_dtype_t dtypes[4] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64};
  for (int di = 0; di < 4; ++di) {
    const tsr_dtype_t dt = dtypes[di];
    double xv[N];
    for (int i = 0; i < N; ++i) xv[i] = orc_is_float(dt) ? x[i] : isnan(x[i]) ? 3 : trunc(x[i]);
    for (int mode = 0; mode < 3; ++mode) {
      const int has_min = mode != 2, has_max = mode != 1;
      tsr_clamp_attrs attrs = {sizeof(attrs), -1.25, 2.75, (uint32_t)has_min, (uint32_t)has_max};
      tsr_tensor *tx = tensor_of(dt, 1, sizes, xv), *out = empty_of(dt, 1, sizes);
      run(TSR_OP_CLAMP, 1, &tx, 1, &out, &attrs, "contig", "clamp");
      double *got = read_all(out), want[N];
      // Int dtypes take the bounds truncated, as CAST converts a float64.
      for (int i = 0; i < N; ++i) want[i] = tsr_oracle_clamp_value(xv[i], &attrs, dt);
      ts_expect_values("clamp", dt, got, want, NULL, N, 0, 0);
      free(got);
      tsr_tensor_release(tx), tsr_tensor_release(out);
    }
  }
}

// --- FILL, COPY, CAST ----------------------------------------------------------------

static void test_fill_converts_like_cast(void **state) {
  (void)state;
  const int64_t sizes[2] = {13, 29};
  const int64_t n = 13 * 29;
  const double values[5] = {3.7, -1e10, NAN, -2.5, 0.0};
  const tsr_dtype_t dtypes[5] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
  double *want = dalloc(n);
  for (int di = 0; di < 5; ++di) {
    const tsr_dtype_t dt = dtypes[di];
    for (int vi = 0; vi < 5; ++vi) {
      const double v = values[vi];
      double w;
      switch (dt) {
        case TSR_INT32:
          w = isnan(v) ? 0 : v <= -2147483648.0 ? -2147483648.0 : trunc(v);
          break;
        case TSR_INT64:
          w = isnan(v) ? 0 : trunc(v);
          break;
        case TSR_BOOL:
          w = v != 0;
          break;
        default:
          w = v;
          break;
      }
      for (int64_t i = 0; i < n; ++i) want[i] = w;
      tsr_tensor *out = empty_of(dt, 2, sizes);
      tsr_fill_attrs attrs = {sizeof(attrs), v};
      run(TSR_OP_FILL, 0, NULL, 1, &out, &attrs, "contig", "fill");
      double *got = read_all(out);
      ts_expect_values("fill", dt, got, want, NULL, n, 0, 0);
      free(got);
      tsr_tensor_release(out);
    }
  }
  // A strided output (every other column) leaves the others alone.
  tsr_tensor *wide = tsr_tensor_full(g_device, TSR_FLOAT32, 2, (int64_t[]){13, 58}, -1.0);
  TS_ASSERT_TENSOR(wide);
  tsr_tensor *view = tsr_slice(wide, 1, 1, 58, 2);
  TS_ASSERT_TENSOR(view);
  tsr_fill_attrs attrs = {sizeof(attrs), 4.5};
  run(TSR_OP_FILL, 0, NULL, 1, &view, &attrs, "flat", "fill strided");
  double *got = read_all(wide);
  for (int64_t i = 0; i < 13 * 58; ++i) {
    const double w = (i % 58) % 2 == 1 ? 4.5 : -1.0;
    if (got[i] != w)
      fail_msg("fill strided [%lld]: %g, expected %g", (long long)i, got[i], w);
  }
  free(got), free(want);
  tsr_tensor_release(view), tsr_tensor_release(wide);
}

// COPY from a transposed view, a broadcast row and a scalar, every dtype.
static void test_copy_views_every_dtype(void **state) {
  (void)state;
  const int64_t r = 23, c = 41, n = r * c;
  const tsr_dtype_t dtypes[5] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
  double *x = dalloc(n), *want = dalloc(n);
  for (int di = 0; di < 5; ++di) {
    const tsr_dtype_t dt = dtypes[di];
    ts_rng rng = {900u + (uint64_t)di};
    ts_rng_fill(&rng, dt, -50.0, 50.0, x, n);
    tsr_tensor *base = tensor_of(dt, 2, (int64_t[]){c, r}, x);
    tsr_tensor *xt = tsr_transpose(base, 0, 1);
    TS_ASSERT_TENSOR(xt);
    tsr_tensor *out = empty_of(dt, 2, (int64_t[]){r, c});
    run(TSR_OP_COPY, 1, &xt, 1, &out, NULL, "flat", "copy transposed");
    double *got = read_all(out);
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t j = 0; j < c; ++j) want[i * c + j] = x[j * r + i];
    }
    ts_expect_values("copy transposed", dt, got, want, NULL, n, 0, 0);
    free(got);
    tsr_tensor *row0 = tensor_of(dt, 2, (int64_t[]){1, c}, x);
    tsr_tensor *row = tsr_expand(row0, 2, (int64_t[]){r, c});
    TS_ASSERT_TENSOR(row);
    run(TSR_OP_COPY, 1, &row, 1, &out, NULL, "flat", "copy broadcast row");
    got = read_all(out);
    for (int64_t i = 0; i < n; ++i) want[i] = x[i % c];
    ts_expect_values("copy broadcast row", dt, got, want, NULL, n, 0, 0);
    free(got);
    tsr_tensor *one0 = tensor_of(dt, 0, NULL, x + 7);
    tsr_tensor *one = tsr_expand(one0, 2, (int64_t[]){r, c});
    TS_ASSERT_TENSOR(one);
    run(TSR_OP_COPY, 1, &one, 1, &out, NULL, "contig", "copy scalar");
    got = read_all(out);
    for (int64_t i = 0; i < n; ++i) want[i] = x[7];
    ts_expect_values("copy scalar", dt, got, want, NULL, n, 0, 0);
    free(got);
    tsr_tensor_release(base), tsr_tensor_release(xt), tsr_tensor_release(out);
    tsr_tensor_release(row0), tsr_tensor_release(row), tsr_tensor_release(one0);
    tsr_tensor_release(one);
  }
  free(x), free(want);
}

// One source value in its own dtype's bytes.
typedef union cast_value {
  float f32;
  double f64;
  int32_t i32;
  int64_t i64;
  uint8_t b8;
} cast_value;

// |v| (of dtype |from|) converted as ops.h's CAST defines it.
static cast_value cast_want(tsr_dtype_t from, cast_value v, tsr_dtype_t to) {
  cast_value out;
  memset(&out, 0, sizeof(out));
  int is_float = from == TSR_FLOAT32 || from == TSR_FLOAT64;
  double d = from == TSR_FLOAT32 ? v.f32 : from == TSR_FLOAT64 ? v.f64 : 0.0;
  int64_t i = from == TSR_INT32   ? v.i32
              : from == TSR_INT64 ? v.i64
              : from == TSR_BOOL  ? v.b8 != 0
                                  : 0;
  switch (to) {
    case TSR_FLOAT32:
      out.f32 = is_float ? (float)d : (float)i;
      break;
    case TSR_FLOAT64:
      out.f64 = is_float ? d : (double)i;
      break;
    case TSR_INT32:
      if (is_float) {
        out.i32 = isnan(d)             ? 0
                  : d >= 2147483647.0  ? INT32_MAX
                  : d <= -2147483648.0 ? INT32_MIN
                                       : (int32_t)d;
      } else {
        out.i32 = (int32_t)(uint32_t)(uint64_t)i;
      }
      break;
    case TSR_INT64:
      if (is_float) {
        out.i64 = isnan(d) ? 0 : d >= 0x1p63 ? INT64_MAX : d <= -0x1p63 ? INT64_MIN : (int64_t)d;
      } else {
        out.i64 = i;
      }
      break;
    default:
      out.b8 = is_float ? d != 0 : i != 0;
      break;
  }
  return out;
}

// Every pair of distinct dtypes over values at the edges: saturation, NaN,
// truncation toward zero, int64 -> float rounding to nearest even, wrap.
static void test_cast_every_pair_exactly(void **state) {
  (void)state;
  enum { N = 24 };
  const double fvals[N] = {
      0.0,          -0.0,         1.0,           -1.0,          2.5,        -2.5,
      3.7,          -3.7,         1e10,          -1e10,         3e9,        -3e9,
      2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0, 9.3e18,     -9.3e18,
      1e30,         INFINITY,     -INFINITY,     NAN,           16777217.0, 1.00000005960464477539};
  const int64_t ivals[N] = {0,
                            1,
                            -1,
                            7,
                            INT32_MAX,
                            INT32_MIN,
                            16777217,
                            -16777217,
                            INT64_MAX,
                            INT64_MIN,
                            (1LL << 53) + 1,
                            (1LL << 62) + 12345,
                            -(1LL << 40) - 3,
                            4294967297LL,
                            2147483648LL,
                            123456789,
                            -5,
                            33554435,
                            -33554435,
                            (1LL << 24) + 3,
                            9007199254740993LL,
                            -9007199254740993LL,
                            2,
                            100};
  const tsr_dtype_t dtypes[5] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
  const int64_t sizes[1] = {N};
  for (int fi = 0; fi < 5; ++fi) {
    const tsr_dtype_t from = dtypes[fi];
    cast_value src[N];
    unsigned char raw[N * 8];
    const size_t fsize = tsr_dtype_size(from);
    for (int i = 0; i < N; ++i) {
      switch (from) {
        case TSR_FLOAT32:
          src[i].f32 = (float)fvals[i];
          break;
        case TSR_FLOAT64:
          src[i].f64 = fvals[i];
          break;
        case TSR_INT32:
          src[i].i32 = (int32_t)(uint32_t)(uint64_t)ivals[i];
          break;
        case TSR_INT64:
          src[i].i64 = ivals[i];
          break;
        default:
          src[i].b8 = (uint8_t)(i % 3 == 0);
          break;
      }
      memcpy(raw + (size_t)i * fsize, &src[i], fsize);
    }
    tsr_tensor *tx = tsr_tensor_from_host(g_device, from, 1, sizes, raw);
    TS_ASSERT_TENSOR(tx);
    for (int ti = 0; ti < 5; ++ti) {
      const tsr_dtype_t to = dtypes[ti];
      if (to == from)
        continue;
      const size_t tsize = tsr_dtype_size(to);
      tsr_tensor *out = empty_of(to, 1, sizes);
      char what[64];
      snprintf(what, sizeof(what), "cast %s -> %s", ts_dtype_name(from), ts_dtype_name(to));
      run(TSR_OP_CAST, 1, &tx, 1, &out, NULL, "contig", what);
      unsigned char got[N * 8];
      TS_ASSERT_OK(tsr_tensor_to_host(out, got, (size_t)N * tsize));
      for (int i = 0; i < N; ++i) {
        cast_value w = cast_want(from, src[i], to), g;
        memset(&g, 0, sizeof(g));
        memcpy(&g, got + (size_t)i * tsize, tsize);
        int ok = memcmp(&g, &w, tsize) == 0;
        if (to == TSR_FLOAT32 && isnan(w.f32))
          ok = isnan(g.f32);
        if (to == TSR_FLOAT64 && isnan(w.f64))
          ok = isnan(g.f64);
        if (!ok) {
          fail_msg("%s [%d]: got bits %016llx, expected %016llx", what, i,
                   (unsigned long long)g.i64, (unsigned long long)w.i64);
        }
      }
      tsr_tensor_release(out);
    }
    tsr_tensor_release(tx);
  }
}

// --- SGD_UPDATE and ADAM_UPDATE ---------------------------------------------------

// Runs an optimizer op on opencl:0 and on ref:0 over the same inputs and
// compares both to the conformance oracle's float64 step (want) and to each
// other.
static void optim_compare(tsr_op_id_t op, tsr_dtype_t dt, int32_t rank, const int64_t *sizes,
                          int num_state, const double *const *init, const void *attrs,
                          const char *what) {
  const int64_t n = numel_of(rank, sizes);
  tsr_device *devices[2] = {g_device, g_ref};
  double *results[2][4] = {{NULL}}, *want[4] = {NULL};
  tsr_oracle_tensor grad = tsr_oracle_tensor_over(dt, rank, sizes, (double *)init[0]);
  tsr_oracle_tensor updated[3];
  for (int k = 1; k < 2 + num_state; ++k) {
    want[k] = dalloc(n);
    memcpy(want[k], init[k], sizeof(double) * (size_t)n);  // param and state arrive as init
    updated[k - 1] = tsr_oracle_tensor_over(dt, rank, sizes, want[k]);
  }
  assert_int_equal(tsr_oracle_compute_values(op, attrs, 1, &grad, 1 + num_state, updated), TSR_OK);
  for (int dev = 0; dev < 2; ++dev) {
    tsr_tensor *t[4];
    for (int k = 0; k < 1 + 1 + num_state; ++k)
      t[k] = tensor_on(devices[dev], dt, rank, sizes, init[k]);
    run_on(devices[dev], op, 1, t, 1 + num_state, t + 1, attrs, NULL, what);
    for (int k = 1; k < 2 + num_state; ++k) results[dev][k] = read_all(t[k]);
    for (int k = 0; k < 2 + num_state; ++k) tsr_tensor_release(t[k]);
  }
  for (int k = 1; k < 2 + num_state; ++k) {
    ts_expect_values(what, dt, results[0][k], want[k], NULL, n, tol_rel(dt), tol_abs(dt));
    // Same maths in the same precision as ref: within an ulp or two.
    ts_expect_values(what, dt, results[0][k], results[1][k], NULL, n,
                     dt == TSR_FLOAT32 ? 3e-7 : 1e-15, dt == TSR_FLOAT32 ? 1e-9 : 1e-18);
    free(results[0][k]), free(results[1][k]), free(want[k]);
  }
}

static void test_sgd_update_variants(void **state) {
  (void)state;
  const int64_t sizes[2] = {512, 37};  // a layer's weight, odd width
  const int64_t n = 512 * 37;
  double *g = dalloc(n), *p = dalloc(n), *buf = dalloc(n);
  for (int di = 0; di < 2; ++di) {
    const tsr_dtype_t dt = k_floats[di];
    for (int variant = 0; variant < 4; ++variant) {
      ts_rng rng = {4242u + (uint64_t)variant};
      ts_rng_fill(&rng, dt, -1.0, 1.0, g, n);
      ts_rng_fill(&rng, dt, -1.0, 1.0, p, n);
      ts_rng_fill(&rng, dt, -0.5, 0.5, buf, n);
      tsr_sgd_attrs attrs = {sizeof(attrs), 0.05, 0.0, 0.0, 1e-2, 0, 0};
      if (variant >= 1)
        attrs.momentum = 0.9;
      if (variant == 2)
        attrs.first_step = 1;
      if (variant == 3)
        attrs.nesterov = 1;
      if (variant == 1)
        attrs.dampening = 0.1;
      char what[64];
      snprintf(what, sizeof(what), "sgd variant %d %s", variant, ts_dtype_name(dt));
      const double *init[3] = {g, p, buf};
      optim_compare(TSR_OP_SGD_UPDATE, dt, 2, sizes, 1, init, &attrs, what);
    }
  }
  free(g), free(p), free(buf);
}

static void test_adam_update_matches_formula_and_ref(void **state) {
  (void)state;
  // tsr-train's MLP: the [784, 512] weight and the [512] bias.
  const int64_t shapes[2][2] = {{784, 512}, {1, 513}};
  for (int si = 0; si < 2; ++si) {
    const int64_t n = shapes[si][0] * shapes[si][1];
    double *g = dalloc(n), *p = dalloc(n), *m = dalloc(n), *v = dalloc(n);
    for (int di = 0; di < 2; ++di) {
      const tsr_dtype_t dt = k_floats[di];
      for (int decoupled = 0; decoupled < 2; ++decoupled) {
        ts_rng rng = {77u + (uint64_t)(si * 4 + di * 2 + decoupled)};
        ts_rng_fill(&rng, dt, -1.0, 1.0, g, n);
        ts_rng_fill(&rng, dt, -1.0, 1.0, p, n);
        ts_rng_fill(&rng, dt, -0.1, 0.1, m, n);
        ts_rng_fill(&rng, dt, 0.0, 0.01, v, n);
        tsr_adam_attrs attrs = {sizeof(attrs),       1e-3, 0.9, 0.999, 1e-8, 0.01, 7,
                                (uint32_t)decoupled, 0};
        char what[64];
        snprintf(what, sizeof(what), "adam %lldx%lld %s decoupled %d", (long long)shapes[si][0],
                 (long long)shapes[si][1], ts_dtype_name(dt), decoupled);
        const double *init[4] = {g, p, m, v};
        optim_compare(TSR_OP_ADAM_UPDATE, dt, 2, shapes[si], 2, init, &attrs, what);
      }
    }
    free(g), free(p), free(m), free(v);
  }
}

// --- RNG_FILL ---------------------------------------------------------------------

// The oracle's RNG_FILL of |n| elements of |dt| into |want| (float64, before
// rounding to the dtype).
static void rng_want(const tsr_rng_fill_attrs *a, tsr_dtype_t dt, int64_t n, double *want) {
  tsr_oracle_tensor out;
  assert_int_equal(tsr_oracle_tensor_create(dt, 1, &n, &out), 0);
  tsr_oracle_call call = {TSR_OP_RNG_FILL, a, 0, 1, NULL, &out, {0}};
  assert_int_equal(tsr_oracle_compute(&call), TSR_OK);
  memcpy(want, out.v, sizeof(double) * (size_t)n);
  tsr_oracle_tensor_destroy(&out);
}

// Every distribution and dtype, dense and through a transposed view: the
// numbers follow the logical row-major position, bit for bit ref's
// (UNIFORM, BERNOULLI) and the float64 formula's.
static void test_rng_fill_matches_ref_bits(void **state) {
  (void)state;
  const int64_t r = 37, c = 211, n = r * c;
  struct {
    tsr_rng_distribution_t dist;
    tsr_dtype_t dtype;
    double a, b;
  } cases[] = {
      {TSR_RNG_UNIFORM, TSR_FLOAT32, -1.5, 2.25}, {TSR_RNG_UNIFORM, TSR_FLOAT64, -1.5, 2.25},
      {TSR_RNG_UNIFORM, TSR_FLOAT32, 0.0, 1.0},   {TSR_RNG_NORMAL, TSR_FLOAT32, 0.5, 2.0},
      {TSR_RNG_NORMAL, TSR_FLOAT64, 0.5, 2.0},    {TSR_RNG_BERNOULLI, TSR_FLOAT32, 0.3, 0.0},
      {TSR_RNG_BERNOULLI, TSR_INT32, 0.7, 0.0},   {TSR_RNG_BERNOULLI, TSR_INT64, 0.5, 0.0},
      {TSR_RNG_BERNOULLI, TSR_BOOL, 0.25, 0.0},   {TSR_RNG_BERNOULLI, TSR_FLOAT64, 1.0, 0.0},
  };
  for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ++ci) {
    const tsr_dtype_t dt = cases[ci].dtype;
    tsr_rng_fill_attrs attrs = {sizeof(attrs),
                                cases[ci].dist,
                                0,
                                0x123456789abcdefull + ci,
                                0xfffffffffffff000ull + 17 * ci,  // the counter wraps mid-tensor
                                cases[ci].a,
                                cases[ci].b};
    char what[64];
    snprintf(what, sizeof(what), "rng dist %d %s", (int)cases[ci].dist, ts_dtype_name(dt));
    const size_t esize = tsr_dtype_size(dt);
    unsigned char *bytes[2];
    tsr_device *devices[2] = {g_device, g_ref};
    for (int dev = 0; dev < 2; ++dev) {
      tsr_tensor *out = tsr_tensor_empty(devices[dev], dt, 2, (int64_t[]){r, c});
      TS_ASSERT_TENSOR(out);
      run_on(devices[dev], TSR_OP_RNG_FILL, 0, NULL, 1, &out, &attrs, NULL, what);
      bytes[dev] = malloc((size_t)n * esize);
      assert_non_null(bytes[dev]);
      TS_ASSERT_OK(tsr_tensor_to_host(out, bytes[dev], (size_t)n * esize));
      tsr_tensor_release(out);
    }
    double *got = dalloc(n), *want = dalloc(n), *ref = dalloc(n);
    ts_unpack(dt, bytes[0], n, got);
    ts_unpack(dt, bytes[1], n, ref);
    rng_want(&attrs, dt, n, want);
    if (cases[ci].dist == TSR_RNG_NORMAL) {
      ts_expect_values(what, dt, got, want, NULL, n, dt == TSR_FLOAT32 ? 3e-7 : 1e-14, 1e-14);
      ts_expect_values(what, dt, got, ref, NULL, n, dt == TSR_FLOAT32 ? 3e-7 : 1e-14, 1e-14);
    } else {
      ts_expect_values(what, dt, got, want, NULL, n, 0, 0);
      if (memcmp(bytes[0], bytes[1], (size_t)n * esize) != 0) {
        fail_msg("%s: the bits differ from ref's", what);
      }
    }
    // Through a transposed view: element (i, j) is row-major position i * c + j.
    tsr_tensor *base = empty_of(dt, 2, (int64_t[]){c, r});
    tsr_tensor *view = tsr_transpose(base, 0, 1);
    TS_ASSERT_TENSOR(view);
    run(TSR_OP_RNG_FILL, 0, NULL, 1, &view, &attrs, NULL, what);
    double *strided = read_all(view);
    ts_expect_values(what, dt, strided, got, NULL, n, 0, 0);
    free(strided), free(got), free(want), free(ref), free(bytes[0]), free(bytes[1]);
    tsr_tensor_release(view), tsr_tensor_release(base);
  }
}

// --- empty tensors and the MLP's activations ------------------------------------------

static void test_empty_tensors_do_nothing(void **state) {
  (void)state;
  const int64_t sizes[2] = {0, 5};
  tsr_tensor *x = empty_of(TSR_FLOAT32, 2, sizes), *y = empty_of(TSR_FLOAT32, 2, sizes);
  tsr_tensor *out = empty_of(TSR_FLOAT32, 2, sizes);
  tsr_unary_attrs ua = {sizeof(ua), TSR_UNARY_EXP, 0, 0.0};
  run(TSR_OP_UNARY, 1, &x, 1, &out, &ua, NULL, "unary empty");
  tsr_binary_attrs ba = {sizeof(ba), TSR_BINARY_MUL, 0, 1.0};
  tsr_tensor *in[2] = {x, y};
  run(TSR_OP_BINARY, 2, in, 1, &out, &ba, NULL, "binary empty");
  tsr_fill_attrs fa = {sizeof(fa), 1.0};
  run(TSR_OP_FILL, 0, NULL, 1, &out, &fa, NULL, "fill empty");
  tsr_rng_fill_attrs ra = {sizeof(ra), TSR_RNG_UNIFORM, 0, 1, 0, 0.0, 1.0};
  run(TSR_OP_RNG_FILL, 0, NULL, 1, &out, &ra, NULL, "rng empty");
  TS_ASSERT_OK(tsr_device_synchronize(g_device));
  tsr_tensor_release(x), tsr_tensor_release(y), tsr_tensor_release(out);
}

// tsr-train's MLP hidden layer: relu and its backward over [64, 512].
static void test_mlp_relu_forward_backward(void **state) {
  (void)state;
  const int64_t sizes[2] = {64, 512}, n = 64 * 512;
  double *x = dalloc(n), *dy = dalloc(n), *want = dalloc(n);
  ts_rng rng = {64512};
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, n);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, dy, n);
  tsr_tensor *tx = tensor_of(TSR_FLOAT32, 2, sizes, x), *tdy = tensor_of(TSR_FLOAT32, 2, sizes, dy);
  tsr_tensor *out = empty_of(TSR_FLOAT32, 2, sizes);
  tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_RELU, 0, 0.0};
  run(TSR_OP_UNARY, 1, &tx, 1, &out, &attrs, "contig", "mlp relu");
  double *got = read_all(out);
  for (int64_t i = 0; i < n; ++i) want[i] = x[i] < 0 ? 0.0 : x[i];
  ts_expect_values("mlp relu", TSR_FLOAT32, got, want, NULL, n, 0, 0);
  free(got);
  tsr_tensor *in[2] = {tdy, tx};
  run(TSR_OP_UNARY_BACKWARD, 2, in, 1, &out, &attrs, "contig", "mlp relu backward");
  got = read_all(out);
  for (int64_t i = 0; i < n; ++i) want[i] = x[i] > 0 ? dy[i] : 0.0;
  ts_expect_values("mlp relu backward", TSR_FLOAT32, got, want, NULL, n, 0, 0);
  free(got), free(x), free(dy), free(want);
  tsr_tensor_release(tx), tsr_tensor_release(tdy), tsr_tensor_release(out);
}

int main(void) {
  tsr_context *probe = ts_context_create(TSR_TEST_OPENCL_PATH, "opencl:0");
  if (probe == NULL) {
    printf("skipped: no OpenCL device (%s)\n", tsr_last_error());
    return 77;
  }
  tsr_context_destroy(probe);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_every_float_fn),
      cmocka_unit_test(test_unary_nan_rules),
      cmocka_unit_test(test_unary_int_and_bool),
      cmocka_unit_test(test_unary_strided_views),
      cmocka_unit_test(test_binary_float_fns_and_broadcasts),
      cmocka_unit_test(test_binary_cnn_channel_bias),
      cmocka_unit_test(test_binary_int_rules),
      cmocka_unit_test(test_compare_every_fn_and_dtype),
      cmocka_unit_test(test_where_every_dtype_with_broadcast_cond),
      cmocka_unit_test(test_clamp_bounds_and_nan),
      cmocka_unit_test(test_fill_converts_like_cast),
      cmocka_unit_test(test_copy_views_every_dtype),
      cmocka_unit_test(test_cast_every_pair_exactly),
      cmocka_unit_test(test_sgd_update_variants),
      cmocka_unit_test(test_adam_update_matches_formula_and_ref),
      cmocka_unit_test(test_rng_fill_matches_ref_bits),
      cmocka_unit_test(test_empty_tensors_do_nothing),
      cmocka_unit_test(test_mlp_relu_forward_backward),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
