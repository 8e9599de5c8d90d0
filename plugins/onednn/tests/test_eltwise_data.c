// The elementwise-like families on the oneDNN plugin at realistic sizes
// (mostly 1024 x 1024 = 1M elements): UNARY, UNARY_BACKWARD, BINARY, REDUCE,
// SOFTMAX, COPY, CAST and CONCAT, checked against the conformance oracle's
// float64 functions and loops (the data movers against loops written here).
//
// Every op's engine is checked before it runs (tsr_op_engine_get), so a
// case meant for a oneDNN primitive cannot pass by silently running the own
// kernel. Where the choice is oneDNN's special-value behaviour (the plugin
// checks it at plan time: EXP, RELU, LOG, SILU, ...) or depends on the ISA
// (the softmax backward has vector code only with AVX-512), the engine may
// be either, and the values decide. Special values ride along in the data:
// NaN rows through softmax, NaN through NEG/ABS/TANH/MAXIMUM/RELU, signed
// zeros and halves through ROUND, int32 values beyond 2^24 through COPY and
// CAST, raw float16 bit patterns (NaNs, -0) through COPY.
//
// Compile definition: TSR_TEST_ONEDNN_PATH (the plugin .so).
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
#include <unistd.h>

#include "onednn_test_util.h"
#include "oracle/oracle.h"
#include "tessera/tessera.h"
#include "test_support.h"

enum { R = 1024, C = 1024 };
#define NUMEL ((int64_t)R * C)

// Runs |op| after checking the engine its plan uses.
#define run_expect(op, ni, in, no, out, attrs, want) \
  onednn_run_expect(op, ni, in, no, out, attrs, want, NULL)

static double *random_values(uint64_t seed, tsr_dtype_t dtype, int64_t n, double lo, double hi) {
  ts_rng rng = {seed};
  double *v = dalloc(n);
  ts_rng_fill(&rng, dtype, lo, hi, v, n);
  return v;
}

static tsr_tensor *make(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                        const double *values) {
  tsr_tensor *t = ts_tensor(g_device, dtype, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

static tsr_tensor *empty(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  tsr_tensor *t = tsr_tensor_empty(g_device, dtype, rank, sizes);
  TS_ASSERT_TENSOR(t);
  return t;
}

// A [R, C] view with transposed strides: its storage is [C, R] row-major
// holding |values| (given in the view's row-major order) transposed.
static tsr_tensor *make_transposed(tsr_dtype_t dtype, const double *values) {
  double *packed = dalloc(NUMEL);
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < C; ++j) packed[j * R + i] = values[i * C + j];
  }
  const int64_t sizes[2] = {C, R};
  tsr_tensor *base = make(dtype, 2, sizes, packed);
  free(packed);
  tsr_tensor *view = tsr_transpose(base, 0, 1);
  tsr_tensor_release(base);
  TS_ASSERT_TENSOR(view);
  return view;
}

static tsr_tensor *empty_transposed(tsr_dtype_t dtype) {
  const int64_t sizes[2] = {C, R};
  tsr_tensor *base = empty(dtype, 2, sizes);
  tsr_tensor *view = tsr_transpose(base, 0, 1);
  tsr_tensor_release(base);
  TS_ASSERT_TENSOR(view);
  return view;
}

static double *read_back(const tsr_tensor *t) {
  const int64_t n = tsr_tensor_numel(t);
  double *v = dalloc(n);
  assert_int_equal(ts_read(t, v, n), n);
  return v;
}

// |t| against |want|: exact when |rtol| and |atol| are 0 (the sign of zero
// included), NaN for NaN, infinities equal.
static void check(const char *what, const tsr_tensor *t, const double *want, int64_t n, double rtol,
                  double atol) {
  double *got = read_back(t);
  ts_expect_values(what, tsr_tensor_dtype(t), got, want, NULL, n, rtol, atol);
  if (rtol == 0 && atol == 0 && tsr_tensor_dtype(t) == TSR_FLOAT32) {
    for (int64_t i = 0; i < n; ++i) {
      if (got[i] == 0 && signbit(got[i]) != signbit(want[i])) {
        fail_msg("%s: element %lld is %g, expected %g", what, (long long)i, got[i], want[i]);
      }
    }
  }
  free(got);
}

// --- UNARY and UNARY_BACKWARD ------------------------------------------------------

typedef struct unary_case {
  tsr_unary_fn_t fn;
  const char *name;
  double alpha;
  double lo, hi;  // the data's range
  int specials;   // NaN, +-inf, -0 and halves at the front
  int exact;      // bit-exact result (docs/abi.md 10.1)
  engine_kind engine;
} unary_case;

static void unary_run(const unary_case *u) {
  double *x = random_values(11 + (uint64_t)u->fn, TSR_FLOAT32, NUMEL, u->lo, u->hi);
  if (u->specials) {
    static const double s[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.5, 2.5, -2.5};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); ++i) x[i * 4099] = s[i];
  }
  const int64_t sizes[2] = {R, C};
  tsr_tensor *xt = make(TSR_FLOAT32, 2, sizes, x);
  tsr_tensor *yt = empty(TSR_FLOAT32, 2, sizes);
  const tsr_unary_attrs attrs = {sizeof(attrs), u->fn, 0, u->alpha};
  run_expect(TSR_OP_UNARY, 1, &xt, 1, &yt, &attrs, u->engine);
  double *want = dalloc(NUMEL);
  for (int64_t i = 0; i < NUMEL; ++i) {
    want[i] = tsr_oracle_unary_value(u->fn, x[i], (double)(float)u->alpha);
  }
  check(u->name, yt, want, NUMEL, u->exact ? 0 : 1e-5, u->exact ? 0 : 1e-6);
  tsr_tensor_release(yt);
  tsr_tensor_release(xt);
  free(want);
  free(x);
}

static void test_unary_forward(void **state) {
  (void)state;
  static const unary_case cases[] = {
      {TSR_UNARY_NEG, "neg", 0, -4, 4, 1, 1, ENGINE_ONEDNN},
      {TSR_UNARY_ABS, "abs", 0, -4, 4, 1, 1, ENGINE_ONEDNN},
      {TSR_UNARY_SQRT, "sqrt", 0, 0, 100, 1, 1, ENGINE_ONEDNN},
      {TSR_UNARY_SQUARE, "square", 0, -4, 4, 1, 1, ENGINE_ONEDNN},
      {TSR_UNARY_ROUND, "round", 0, -8, 8, 1, 1, ENGINE_ONEDNN},
      {TSR_UNARY_RECIPROCAL, "reciprocal", 0, -4, 4, 1, 0, ENGINE_ONEDNN},
      {TSR_UNARY_TANH, "tanh", 0, -6, 6, 1, 0, ENGINE_ONEDNN},
      {TSR_UNARY_GELU_TANH, "gelu_tanh", 0, -6, 6, 0, 0, ENGINE_ONEDNN},
      {TSR_UNARY_LEAKY_RELU, "leaky_relu", 0.01, -4, 4, 1, 0, ENGINE_ONEDNN},
      {TSR_UNARY_ELU, "elu", 1.0, -4, 4, 1, 0, ENGINE_ONEDNN},
      // Decided by the plan-time accuracy check on this CPU and oneDNN
      // (eltwise_check.c: exp(NaN), relu(NaN), log's accuracy, sigmoid and
      // silu near -87, GELU on AVX-512 with oneDNN 3.x): either engine,
      // right values.
      {TSR_UNARY_SIGMOID, "sigmoid", 0, -12, 12, 1, 0, ENGINE_ANY},
      {TSR_UNARY_GELU, "gelu", 0, -6, 6, 0, 0, ENGINE_ANY},
      {TSR_UNARY_EXP, "exp", 0, -20, 20, 1, 0, ENGINE_ANY},
      // relu(-0) is -0 on the own kernel, +0 by the catalogue's x > 0 ? x : 0:
      // compared by value.
      {TSR_UNARY_RELU, "relu", 0, -4, 4, 1, 0, ENGINE_ANY},
      {TSR_UNARY_LOG, "log", 0, 0, 10, 1, 0, ENGINE_ANY},
      {TSR_UNARY_SILU, "silu", 0, -6, 6, 0, 0, ENGINE_ANY},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) unary_run(&cases[i]);
}

// UNARY in place (out is x) on a transposed view: one dense block for oneDNN.
static void test_unary_in_place_transposed(void **state) {
  (void)state;
  double *x = random_values(21, TSR_FLOAT32, NUMEL, -3, 3);
  x[5] = NAN;
  tsr_tensor *xt = make_transposed(TSR_FLOAT32, x);
  const tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_TANH, 0, 0};
  run_expect(TSR_OP_UNARY, 1, &xt, 1, &xt, &attrs, ENGINE_ONEDNN);
  double *want = dalloc(NUMEL);
  for (int64_t i = 0; i < NUMEL; ++i) want[i] = tanh(x[i]);
  check("tanh in place", xt, want, NUMEL, 1e-5, 1e-6);
  tsr_tensor_release(xt);
  free(want);
  free(x);
}

static void test_unary_backward(void **state) {
  (void)state;
  static const struct {
    tsr_unary_fn_t fn;
    const char *name;
    double lo, hi;
    engine_kind engine;
  } cases[] = {
      {TSR_UNARY_TANH, "tanh'", -5, 5, ENGINE_ONEDNN},
      // sigmoid' and silu' are 0 near x = -87 on every oneDNN: the own
      // kernel's unless a oneDNN fixes that.
      {TSR_UNARY_SIGMOID, "sigmoid'", -10, 10, ENGINE_ANY},
      {TSR_UNARY_GELU, "gelu'", -5, 5, ENGINE_ONEDNN},
      {TSR_UNARY_GELU_TANH, "gelu_tanh'", -5, 5, ENGINE_ONEDNN},
      {TSR_UNARY_SILU, "silu'", -5, 5, ENGINE_ANY},
      {TSR_UNARY_SQUARE, "square'", -5, 5, ENGINE_ONEDNN},
      {TSR_UNARY_SQRT, "sqrt'", 0.01, 10, ENGINE_ONEDNN},
      {TSR_UNARY_LOG, "log'", 0.01, 10, ENGINE_ONEDNN},
      {TSR_UNARY_RECIPROCAL, "reciprocal'", 0.1, 10, ENGINE_ONEDNN},
      // oneDNN's relu backward ignores a NaN x: the own kernel's.
      {TSR_UNARY_RELU, "relu'", -5, 5, ENGINE_ANY},
  };
  const int64_t sizes[2] = {R, C};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
    double *x = random_values(31 + c, TSR_FLOAT32, NUMEL, cases[c].lo, cases[c].hi);
    double *dy = random_values(41 + c, TSR_FLOAT32, NUMEL, -2, 2);
    x[7] = NAN;
    tsr_tensor *inputs[2] = {make(TSR_FLOAT32, 2, sizes, dy), make(TSR_FLOAT32, 2, sizes, x)};
    tsr_tensor *dx = empty(TSR_FLOAT32, 2, sizes);
    const tsr_unary_attrs attrs = {sizeof(attrs), cases[c].fn, 0, 0};
    run_expect(TSR_OP_UNARY_BACKWARD, 2, inputs, 1, &dx, &attrs, cases[c].engine);
    double *want = dalloc(NUMEL);
    for (int64_t i = 0; i < NUMEL; ++i) {
      want[i] = dy[i] * tsr_oracle_unary_derivative(cases[c].fn, x[i], 0);
    }
    check(cases[c].name, dx, want, NUMEL, 1e-5, 1e-5);
    tsr_tensor_release(dx);
    tsr_tensor_release(inputs[0]);
    tsr_tensor_release(inputs[1]);
    free(want);
    free(dy);
    free(x);
  }
}

// --- BINARY ------------------------------------------------------------------------

// |a_rows| x |a_cols| and |b_rows| x |b_cols| operands, each [R, C] or a
// row/column broadcast to it; |in_place| 1: out is a, 2: out is b.
typedef struct binary_case {
  const char *name;
  tsr_binary_fn_t fn;
  double alpha;
  int64_t a_rows, a_cols, b_rows, b_cols;
  int in_place;
  engine_kind engine;
} binary_case;

static tsr_tensor *binary_operand(const double *v, int64_t rows, int64_t cols) {
  const int64_t sizes[2] = {rows, cols};
  tsr_tensor *t = make(TSR_FLOAT32, 2, sizes, v);
  if (rows == R && cols == C)
    return t;
  const int64_t full[2] = {R, C};
  tsr_tensor *e = tsr_expand(t, 2, full);
  tsr_tensor_release(t);
  TS_ASSERT_TENSOR(e);
  return e;
}

static void binary_run(const binary_case *c) {
  const int64_t na = c->a_rows * c->a_cols, nb = c->b_rows * c->b_cols;
  double *a = random_values(51, TSR_FLOAT32, na, -2, 2);
  double *b = random_values(52, TSR_FLOAT32, nb, 0.25, 2);  // no 0 divisor
  a[3] = NAN;
  b[nb - 1] = NAN;
  tsr_tensor *at = binary_operand(a, c->a_rows, c->a_cols);
  tsr_tensor *bt = binary_operand(b, c->b_rows, c->b_cols);
  const int64_t sizes[2] = {R, C};
  tsr_tensor *out = c->in_place == 1   ? tsr_tensor_retain(at)
                    : c->in_place == 2 ? tsr_tensor_retain(bt)
                                       : empty(TSR_FLOAT32, 2, sizes);
  double *want = dalloc(NUMEL), *tol = dalloc(NUMEL);
  const double alpha = (double)(float)c->alpha;
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < C; ++j) {
      const double av = a[(c->a_rows == 1 ? 0 : i) * c->a_cols + (c->a_cols == 1 ? 0 : j)];
      const double bv = b[(c->b_rows == 1 ? 0 : i) * c->b_cols + (c->b_cols == 1 ? 0 : j)];
      want[i * C + j] = tsr_oracle_binary_value(c->fn, av, bv, alpha);
      // alpha != 1: alpha * b is rounded once or fused into the add, so
      // 2 u (|a| + |alpha b|) + u |out| (docs/conformance.md 5); else exact.
      tol[i * C + j] = alpha == 1.0
                           ? 0.0
                           : 0x1p-24 * (2 * (fabs(av) + fabs(alpha * bv)) + fabs(want[i * C + j]));
    }
  }
  tsr_tensor *inputs[2] = {at, bt};
  const tsr_binary_attrs attrs = {sizeof(attrs), c->fn, 0, c->alpha};
  run_expect(TSR_OP_BINARY, 2, inputs, 1, &out, &attrs, c->engine);
  double *got = read_back(out);
  ts_expect_values(c->name, TSR_FLOAT32, got, want, tol, NUMEL, 0, 0);
  free(got);
  free(tol);
  tsr_tensor_release(out);
  tsr_tensor_release(at);
  tsr_tensor_release(bt);
  free(want);
  free(a);
  free(b);
}

static void test_binary(void **state) {
  (void)state;
  static const binary_case cases[] = {
      {"add", TSR_BINARY_ADD, 1, R, C, R, C, 0, ENGINE_ONEDNN},
      {"sub", TSR_BINARY_SUB, 1, R, C, R, C, 0, ENGINE_ONEDNN},
      {"mul", TSR_BINARY_MUL, 1, R, C, R, C, 0, ENGINE_ONEDNN},
      {"div", TSR_BINARY_DIV, 1, R, C, R, C, 0, ENGINE_ONEDNN},
      // Broadcast b: a row (bias) and a column; broadcast a: swapped (ADD, MUL).
      {"add row bias", TSR_BINARY_ADD, 1, R, C, 1, C, 0, ENGINE_ONEDNN},
      {"div by column", TSR_BINARY_DIV, 1, R, C, R, 1, 0, ENGINE_ONEDNN},
      {"column + b", TSR_BINARY_ADD, 1, R, 1, R, C, 0, ENGINE_ONEDNN},
      {"row * b", TSR_BINARY_MUL, 1, 1, C, R, C, 0, ENGINE_ONEDNN},
      {"column - b", TSR_BINARY_SUB, 1, R, 1, R, C, 0, ENGINE_OWN},
      // In place: out is a (oneDNN's dst = src0); out is b (swapped for MUL).
      {"add in place", TSR_BINARY_ADD, 1, R, C, R, C, 1, ENGINE_ONEDNN},
      {"add bias in place", TSR_BINARY_ADD, 1, R, C, 1, C, 1, ENGINE_ONEDNN},
      {"mul into b", TSR_BINARY_MUL, 1, R, C, R, C, 2, ENGINE_ONEDNN},
      {"sub into b", TSR_BINARY_SUB, 1, R, C, R, C, 2, ENGINE_OWN},
      // alpha != 1: the sum primitive, in place too.
      {"add alpha", TSR_BINARY_ADD, 0.5, R, C, R, C, 0, ENGINE_ONEDNN},
      {"sub alpha in place", TSR_BINARY_SUB, -3.25, R, C, R, C, 1, ENGINE_ONEDNN},
      {"sub alpha into b", TSR_BINARY_SUB, 0.1, R, C, R, C, 2, ENGINE_ONEDNN},
      // oneDNN's max drops NaN: the own kernel, NaN propagated.
      {"maximum", TSR_BINARY_MAXIMUM, 1, R, C, R, C, 0, ENGINE_OWN},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) binary_run(&cases[i]);
}

// --- REDUCE ------------------------------------------------------------------------

static void reduce_check(const char *what, tsr_tensor *xt, const double *x, tsr_reduce_fn_t fn,
                         uint32_t mask, engine_kind engine) {
  const int64_t out_sizes[2] = {(mask & 1u) ? 1 : R, (mask & 2u) ? 1 : C};
  tsr_tensor *out = empty(TSR_FLOAT32, 2, out_sizes);
  const tsr_reduce_attrs attrs = {sizeof(attrs), fn, mask};
  run_expect(TSR_OP_REDUCE, 1, &xt, 1, &out, &attrs, engine);
  const int64_t n = out_sizes[0] * out_sizes[1], per = NUMEL / n;
  const int64_t sizes[2] = {R, C};
  double *want = dalloc(n), *mag = dalloc(n);
  int64_t *count = calloc((size_t)n, sizeof(int64_t));
  assert_non_null(count);
  orc_reduce(fn, 2, sizes, mask, x, want, mag, count);  // mag: the sum of |x|
  free(count);
  double *got = read_back(out);
  for (int64_t o = 0; o < n; ++o) {
    if (fn == TSR_REDUCE_MEAN)
      mag[o] /= (double)per;
    // Any summation order: (n + 1) u sum |x| (docs/conformance.md 5).
    const double tol = fn == TSR_REDUCE_PROD  ? (double)(per + 1) * 0x1p-24 * fabs(want[o])
                       : fn == TSR_REDUCE_MAX ? 0.0
                                              : (double)(per + 1) * 0x1p-24 * mag[o];
    const double g = got[o], w = want[o];
    if ((w != w) != (g != g) || (w == w && fabs(g - w) > tol)) {
      fail_msg("%s: output %lld is %.9g, expected %.9g (tolerance %.3g)", what, (long long)o, g, w,
               tol);
    }
  }
  free(got);
  free(want);
  free(mag);
  tsr_tensor_release(out);
}

static void test_reduce(void **state) {
  (void)state;
  const int64_t sizes[2] = {R, C};
  double *x = random_values(61, TSR_FLOAT32, NUMEL, -1, 1);
  tsr_tensor *xt = make(TSR_FLOAT32, 2, sizes, x);
  reduce_check("sum rows", xt, x, TSR_REDUCE_SUM, 2u, ENGINE_ONEDNN);
  reduce_check("mean rows", xt, x, TSR_REDUCE_MEAN, 2u, ENGINE_ONEDNN);
  reduce_check("sum all", xt, x, TSR_REDUCE_SUM, 3u, ENGINE_ONEDNN);
  // Axis 0 of a row-major matrix is a strided reduction oneDNN runs only in
  // its reference loops (on AVX2): the own kernel.
  reduce_check("sum columns", xt, x, TSR_REDUCE_SUM, 1u, ENGINE_ANY);
  tsr_tensor_release(xt);
  // Axis 0 of a transposed view is the contiguous one: oneDNN.
  xt = make_transposed(TSR_FLOAT32, x);
  reduce_check("sum columns of a transposed view", xt, x, TSR_REDUCE_SUM, 1u, ENGINE_ONEDNN);
  tsr_tensor_release(xt);
  free(x);
  // PROD of values near 1, so the product stays finite.
  x = random_values(62, TSR_FLOAT32, NUMEL, 0.995, 1.005);
  xt = make(TSR_FLOAT32, 2, sizes, x);
  reduce_check("prod rows", xt, x, TSR_REDUCE_PROD, 2u, ENGINE_ONEDNN);
  // MAX propagates NaN: the own kernel.
  x[3 * C + 17] = NAN;
  tsr_tensor_release(xt);
  xt = make(TSR_FLOAT32, 2, sizes, x);
  reduce_check("max rows", xt, x, TSR_REDUCE_MAX, 2u, ENGINE_OWN);
  tsr_tensor_release(xt);
  free(x);
}

// --- SOFTMAX -----------------------------------------------------------------------

// The oracle's SOFTMAX (|backward| 0) of the [R, C] values |x|, or its
// SOFTMAX_BACKWARD of |dy| and |x| (the forward's output), over |axis|.
static double *softmax_want(const double *x, const double *dy, int axis, int log_softmax,
                            int backward) {
  const int64_t sizes[2] = {R, C};
  const tsr_softmax_attrs attrs = {sizeof(attrs), axis, (uint32_t)log_softmax};
  double *out = dalloc(NUMEL);
  tsr_oracle_tensor in[2] = {tsr_oracle_tensor_over(TSR_FLOAT32, 2, sizes, (double *)dy),
                             tsr_oracle_tensor_over(TSR_FLOAT32, 2, sizes, (double *)x)};
  tsr_oracle_tensor y = tsr_oracle_tensor_over(TSR_FLOAT32, 2, sizes, out);
  assert_int_equal(tsr_oracle_compute_values(backward ? TSR_OP_SOFTMAX_BACKWARD : TSR_OP_SOFTMAX,
                                             &attrs, backward ? 2 : 1, backward ? in : in + 1, 1,
                                             &y),
                   TSR_OK);
  return out;
}

static void softmax_run(const char *what, int axis, int transposed, int log_softmax,
                        engine_kind engine) {
  double *x = random_values(71, TSR_FLOAT32, NUMEL, -8, 8);
  // Special slices along the axis: NaN in slice 3, +inf in 7, -inf
  // elements in 9 (they give 0), all -inf in 11 (NaN throughout).
  const int64_t step = axis == 1 ? 1 : C, slice = axis == 1 ? C : 1;
  const int64_t n = axis == 1 ? C : R;
  x[3 * slice + 100 * step] = NAN;
  x[7 * slice + 5 * step] = INFINITY;
  x[9 * slice + 0 * step] = -INFINITY;
  x[9 * slice + 1 * step] = -INFINITY;
  for (int64_t k = 0; k < n; ++k) x[11 * slice + k * step] = -INFINITY;
  const int64_t sizes[2] = {R, C};
  tsr_tensor *xt = transposed ? make_transposed(TSR_FLOAT32, x) : make(TSR_FLOAT32, 2, sizes, x);
  tsr_tensor *yt = transposed ? empty_transposed(TSR_FLOAT32) : empty(TSR_FLOAT32, 2, sizes);
  const tsr_softmax_attrs attrs = {sizeof(attrs), axis, (uint32_t)log_softmax};
  run_expect(TSR_OP_SOFTMAX, 1, &xt, 1, &yt, &attrs, engine);
  double *want = softmax_want(x, NULL, axis, log_softmax, 0);
  check(what, yt, want, NUMEL, 1e-5, log_softmax ? 1e-5 : 1e-9);
  // The backward on the forward's output: dx = y (dy - sum(dy y)), or
  // dy - exp(y) sum(dy) for log-softmax.
  double *dy = random_values(72, TSR_FLOAT32, NUMEL, -1, 1);
  double *y = read_back(yt);
  tsr_tensor *dyt = transposed ? make_transposed(TSR_FLOAT32, dy) : make(TSR_FLOAT32, 2, sizes, dy);
  tsr_tensor *dxt = transposed ? empty_transposed(TSR_FLOAT32) : empty(TSR_FLOAT32, 2, sizes);
  tsr_tensor *inputs[2] = {dyt, yt};
  // oneDNN's softmax backward has vector code with AVX-512 only.
  run_expect(TSR_OP_SOFTMAX_BACKWARD, 2, inputs, 1, &dxt, &attrs, ENGINE_ANY);
  double *dx = softmax_want(y, dy, axis, log_softmax, 1);
  check("softmax backward", dxt, dx, NUMEL, 1e-4, 1e-6);
  tsr_tensor_release(dxt);
  tsr_tensor_release(dyt);
  tsr_tensor_release(yt);
  tsr_tensor_release(xt);
  free(dx);
  free(y);
  free(dy);
  free(want);
  free(x);
}

static void test_softmax(void **state) {
  (void)state;
  // Rows of a row-major matrix: the contiguous axis, oneDNN's vector code.
  softmax_run("softmax axis 1", 1, 0, 0, ENGINE_ONEDNN);
  // Axis 0 of a row-major matrix: oneDNN's reference loops only, so the own kernel.
  softmax_run("softmax axis 0", 0, 0, 0, ENGINE_ANY);
  // Axis 0 of a transposed view is contiguous: oneDNN.
  softmax_run("softmax axis 0 transposed", 0, 1, 0, ENGINE_ONEDNN);
  // log-softmax: oneDNN's vector log must pass UNARY LOG's check first.
  softmax_run("log_softmax axis 1", 1, 0, 1, ENGINE_ANY);
}

// --- COPY, CAST, CONCAT --------------------------------------------------------------

// Copies [R, C] of |dtype| from a row-major tensor into a transposed view
// and from a strided view (every other column) into a row-major tensor,
// bit for bit, with |bits| random element bit patterns.
static void copy_bits_run(tsr_dtype_t dtype) {
  const size_t es = tsr_dtype_size(dtype);
  uint8_t *src = malloc((size_t)NUMEL * 2 * es), *got = malloc((size_t)NUMEL * es);
  assert_non_null(src);
  assert_non_null(got);
  ts_rng rng = {81 + (uint64_t)dtype};
  for (size_t i = 0; i < (size_t)NUMEL * 2 * es; ++i) src[i] = (uint8_t)ts_rng_next(&rng);
  if (dtype == TSR_BOOL) {
    for (size_t i = 0; i < (size_t)NUMEL * 2; ++i) src[i] &= 1u;
  }
  // Row-major source -> transposed destination.
  const int64_t sizes[2] = {R, C};
  tsr_tensor *x = tsr_tensor_from_host(g_device, dtype, 2, sizes, src);
  TS_ASSERT_TENSOR(x);
  tsr_tensor *y = empty_transposed(dtype);
  run_expect(TSR_OP_COPY, 1, &x, 1, &y, NULL, ENGINE_ONEDNN);
  TS_ASSERT_OK(tsr_tensor_to_host(y, got, (size_t)NUMEL * es));
  if (memcmp(got, src, (size_t)NUMEL * es) != 0)
    fail_msg("copy dtype %d: transposed copy differs", (int)dtype);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
  // Every other column of [R, 2C] -> row-major.
  const int64_t wide[2] = {R, 2 * C};
  tsr_tensor *w = tsr_tensor_from_host(g_device, dtype, 2, wide, src);
  TS_ASSERT_TENSOR(w);
  tsr_tensor *strided = tsr_slice(w, 1, 1, 2 * C, 2);
  TS_ASSERT_TENSOR(strided);
  y = empty(dtype, 2, sizes);
  run_expect(TSR_OP_COPY, 1, &strided, 1, &y, NULL, ENGINE_ONEDNN);
  TS_ASSERT_OK(tsr_tensor_to_host(y, got, (size_t)NUMEL * es));
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < C; ++j) {
      if (memcmp(got + (size_t)(i * C + j) * es, src + (size_t)(i * 2 * C + 2 * j + 1) * es, es)) {
        fail_msg("copy dtype %d: strided element [%lld, %lld] differs", (int)dtype, (long long)i,
                 (long long)j);
      }
    }
  }
  tsr_tensor_release(y);
  tsr_tensor_release(strided);
  tsr_tensor_release(w);
  free(got);
  free(src);
}

static void test_copy(void **state) {
  (void)state;
  // float32, int32 (random bits: values beyond 2^24, NaN patterns), float64,
  // int64, float16 (raw bits: -0, NaNs), bool.
  static const tsr_dtype_t dtypes[] = {TSR_FLOAT32, TSR_INT32,   TSR_FLOAT64,
                                       TSR_INT64,   TSR_FLOAT16, TSR_BOOL};
  for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); ++i) copy_bits_run(dtypes[i]);
  // A broadcast source stays on the own kernel.
  double *row = random_values(91, TSR_FLOAT32, C, -1, 1);
  const int64_t one_row[2] = {1, C}, sizes[2] = {R, C};
  tsr_tensor *r = make(TSR_FLOAT32, 2, one_row, row);
  tsr_tensor *e = tsr_expand(r, 2, sizes);
  TS_ASSERT_TENSOR(e);
  tsr_tensor *y = empty(TSR_FLOAT32, 2, sizes);
  run_expect(TSR_OP_COPY, 1, &e, 1, &y, NULL, ENGINE_OWN);
  double *want = dalloc(NUMEL);
  for (int64_t i = 0; i < NUMEL; ++i) want[i] = row[i % C];
  check("broadcast copy", y, want, NUMEL, 0, 0);
  tsr_tensor_release(y);
  tsr_tensor_release(e);
  tsr_tensor_release(r);
  free(want);
  free(row);
}

static void test_cast(void **state) {
  (void)state;
  const int64_t sizes[2] = {R, C};
  // int32 -> float32 rounds to nearest even: values across the whole range.
  int32_t *iv = malloc((size_t)NUMEL * sizeof(int32_t));
  assert_non_null(iv);
  ts_rng rng = {101};
  for (int64_t i = 0; i < NUMEL; ++i) iv[i] = (int32_t)(uint32_t)ts_rng_next(&rng);
  iv[0] = INT32_MIN;
  iv[1] = INT32_MAX;
  iv[2] = (1 << 24) + 1;
  tsr_tensor *x = tsr_tensor_from_host(g_device, TSR_INT32, 2, sizes, iv);
  TS_ASSERT_TENSOR(x);
  tsr_tensor *y = empty(TSR_FLOAT32, 2, sizes);
  run_expect(TSR_OP_CAST, 1, &x, 1, &y, NULL, ENGINE_ONEDNN);
  double *want = dalloc(NUMEL);
  for (int64_t i = 0; i < NUMEL; ++i) want[i] = (double)(float)iv[i];
  check("cast int32 -> float32", y, want, NUMEL, 0, 0);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
  free(iv);
  // bool -> float32 into a transposed view.
  double *b = random_values(102, TSR_BOOL, NUMEL, 0, 1);
  x = make(TSR_BOOL, 2, sizes, b);
  y = empty_transposed(TSR_FLOAT32);
  run_expect(TSR_OP_CAST, 1, &x, 1, &y, NULL, ENGINE_ONEDNN);
  check("cast bool -> float32", y, b, NUMEL, 0, 0);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
  free(b);
  // float32 -> int32 truncates, saturates and maps NaN to 0, which oneDNN's
  // conversion does not: the own kernel.
  double *f = random_values(103, TSR_FLOAT32, NUMEL, -3e9, 3e9);
  f[0] = NAN;
  f[1] = INFINITY;
  f[2] = -2.5;
  f[3] = 2.5;
  x = make(TSR_FLOAT32, 2, sizes, f);
  y = empty(TSR_INT32, 2, sizes);
  run_expect(TSR_OP_CAST, 1, &x, 1, &y, NULL, ENGINE_OWN);
  for (int64_t i = 0; i < NUMEL; ++i) {
    const double v = f[i];
    want[i] = v != v               ? 0
              : v >= 2147483647.0  ? 2147483647.0
              : v <= -2147483648.0 ? -2147483648.0
                                   : trunc(v);
  }
  check("cast float32 -> int32", y, want, NUMEL, 0, 0);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
  free(f);
  free(want);
}

// Three inputs (one of them empty) along |axis| of [R, C] pieces.
static void concat_run(tsr_dtype_t dtype, int32_t axis) {
  const int64_t parts[3] = {300, 0, (axis == 1 ? C : R) - 300};
  double *full = random_values(111, dtype, NUMEL, -1000, 1000);
  tsr_tensor *inputs[3];
  int64_t offset = 0;
  for (int p = 0; p < 3; ++p) {
    const int64_t rows = axis == 0 ? parts[p] : R, cols = axis == 1 ? parts[p] : C;
    double *v = dalloc(rows * cols);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        v[i * cols + j] = axis == 0 ? full[(offset + i) * C + j] : full[i * C + offset + j];
      }
    }
    const int64_t sizes[2] = {rows, cols};
    inputs[p] = make(dtype, 2, sizes, v);
    free(v);
    offset += parts[p];
  }
  const int64_t sizes[2] = {R, C};
  tsr_tensor *out = empty(dtype, 2, sizes);
  const tsr_concat_attrs attrs = {sizeof(attrs), axis, 0};
  run_expect(TSR_OP_CONCAT, 3, inputs, 1, &out, &attrs, ENGINE_ONEDNN);
  check("concat", out, full, NUMEL, 0, 0);
  tsr_tensor_release(out);
  for (int p = 0; p < 3; ++p) tsr_tensor_release(inputs[p]);
  free(full);
}

static void test_concat(void **state) {
  (void)state;
  concat_run(TSR_FLOAT32, 1);
  concat_run(TSR_FLOAT32, 0);
  concat_run(TSR_INT64, 1);
  concat_run(TSR_BOOL, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_forward),  cmocka_unit_test(test_unary_in_place_transposed),
      cmocka_unit_test(test_unary_backward), cmocka_unit_test(test_binary),
      cmocka_unit_test(test_reduce),         cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_copy),           cmocka_unit_test(test_cast),
      cmocka_unit_test(test_concat),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
