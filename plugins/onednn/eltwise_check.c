// The check of oneDNN's elementwise vector code against the catalogue
// (eltwise_check.h).
//
// oneDNN's vector code does not follow the catalogue's special values and
// accuracy everywhere, and how far it strays depends on the version and on
// the ISA its code is generated for: oneDNN 3.x computes GELU (erf form)
// with a different polynomial on AVX-512 than on AVX2, off by up to 1.2
// times the conformance tolerance in the negative tail (x near -3), where
// 1 + erf cancels. So the plugin decides per process, on the CPU at hand,
// by running the algorithm once on a row of inputs and comparing with the
// catalogue's formula in float64, within the conformance suite's tolerance
// (docs/conformance.md 5, the same bounds as conformance/oracle):
//   - special values: NaN, infinities, signed zeros, halves, tiny floats;
//   - every value of [-16, 16] on a grid of 2^-11;
//   - 512 values per binade from 2^-30 to 2^17, both signs;
//   - exp's overflow and flush bands, [80, 90] and [-104, -80], on 2^-8.
// A sample cannot see every input, so a result counts as wrong from 3/4 of
// the tolerance on: a kernel whose error reaches the tolerance somewhere
// reaches 3/4 of it at many more points (GELU on AVX-512: 340 of 700,000
// inputs against 26 past the tolerance). The verdicts measured with
// oneDNN 2.6 and 3.2 (docs/onednn.md has the table) refuse, on every ISA:
//   exp             exp(NaN) = +inf; overflows to inf from x = 88.03
//   log             up to 3.5 times the tolerance (near 1)
//   rsqrt           pow(x, -0.5) gives 0 for -inf and +inf for -0
//   relu            relu(NaN) = 0 (also leaky relu with slope 0)
//   sigmoid, silu   0 for x in [-87.4, -87], where the result is a normal
//                   float (oneDNN's exp flushes its subnormals); the same
//                   for their backward and ELU's
//   clamp           clip(NaN) = the lower bound
//   backward of abs, exp, relu, leaky relu, elu: a NaN x does not make dx NaN
// and only with AVX-512 (oneDNN 3.x): gelu (erf form). A oneDNN that fixes
// one of them is used without a code change, and one that breaks one is not.
#include "eltwise_check.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_cpu/cpu_kernels.h"
#include "onednn_plugin.h"

int tsr_onednn_eltwise_alg(tsr_onednn_eltwise_spec *s) {
  s->dnnl_alpha = 0.0f;
  s->dnnl_beta = 0.0f;
  switch (s->fn) {
    case TSR_UNARY_ABS:
      s->alg = dnnl_eltwise_abs;
      return 1;
    case TSR_UNARY_EXP:
      s->alg = dnnl_eltwise_exp;
      return 1;
    case TSR_UNARY_LOG:
      s->alg = dnnl_eltwise_log;
      return 1;
    case TSR_UNARY_SQRT:
      s->alg = dnnl_eltwise_sqrt;
      return 1;
    case TSR_UNARY_SQUARE:
      s->alg = dnnl_eltwise_square;
      return 1;
    case TSR_UNARY_TANH:
      s->alg = dnnl_eltwise_tanh;
      return 1;
    case TSR_UNARY_SIGMOID:
      s->alg = dnnl_eltwise_logistic;
      return 1;
    case TSR_UNARY_GELU:
      s->alg = dnnl_eltwise_gelu_erf;
      return 1;
    case TSR_UNARY_GELU_TANH:
      s->alg = dnnl_eltwise_gelu_tanh;
      return 1;
    case TSR_UNARY_ROUND:
      s->alg = dnnl_eltwise_round;
      return 1;
    case TSR_UNARY_RELU:
      s->alg = dnnl_eltwise_relu;
      return 1;
    // pow(x) = alpha * x^beta.
    case TSR_UNARY_RSQRT:
      s->alg = dnnl_eltwise_pow;
      s->dnnl_alpha = 1.0f;
      s->dnnl_beta = -0.5f;
      return 1;
    case TSR_UNARY_RECIPROCAL:
      s->alg = dnnl_eltwise_pow;
      s->dnnl_alpha = 1.0f;
      s->dnnl_beta = -1.0f;
      return 1;
    // swish(x) = x * sigmoid(alpha * x).
    case TSR_UNARY_SILU:
      s->alg = dnnl_eltwise_swish;
      s->dnnl_alpha = 1.0f;
      return 1;
    case TSR_UNARY_LEAKY_RELU:
      s->alg = dnnl_eltwise_relu;
      s->dnnl_alpha = s->alpha;
      return 1;
    case TSR_UNARY_ELU:
      s->alg = dnnl_eltwise_elu;
      s->dnnl_alpha = s->alpha;
      return 1;
    default:
      // NEG goes to the binary primitive; SIN, COS, SIGN, FLOOR, CEIL,
      // LOG1P, EXPM1, ERF and LOGICAL_NOT have no eltwise algorithm.
      return 0;
  }
}

const char *tsr_onednn_eltwise_fn_name(const tsr_onednn_eltwise_spec *s) {
  static const char *const names[TSR_UNARY_FN_COUNT] = {
      "neg",       "abs",         "exp",        "log",   "sqrt",    "rsqrt", "reciprocal",
      "square",    "sin",         "cos",        "tanh",  "sigmoid", "relu",  "gelu",
      "gelu_tanh", "silu",        "leaky_relu", "elu",   "sign",    "floor", "ceil",
      "round",     "logical_not", "log1p",      "expm1", "erf"};
  if (s->op == TSR_OP_CLAMP)
    return "clamp";
  return s->fn >= 0 && s->fn < TSR_UNARY_FN_COUNT ? names[s->fn] : "?";
}

// The catalogue's f(x) in float64 (docs/abi.md 10.5, 10.9).
static double tsr_onednn_eltwise_f(const tsr_onednn_eltwise_spec *s, double x) {
  if (s->op == TSR_OP_CLAMP) {
    if (x != x)
      return x;
    double r = x < s->lo ? (double)s->lo : x;
    return r > s->hi ? (double)s->hi : r;
  }
  const double a = s->alpha;
  switch (s->fn) {
    case TSR_UNARY_ABS:
      return fabs(x);
    case TSR_UNARY_EXP:
      return exp(x);
    case TSR_UNARY_LOG:
      return log(x);
    case TSR_UNARY_SQRT:
      return sqrt(x);
    case TSR_UNARY_RSQRT:
      return 1.0 / sqrt(x);
    case TSR_UNARY_RECIPROCAL:
      return 1.0 / x;
    case TSR_UNARY_SQUARE:
      return x * x;
    case TSR_UNARY_TANH:
      return tanh(x);
    case TSR_UNARY_SIGMOID:
      return tsr_cpu_sigmoid_f64(x);
    case TSR_UNARY_RELU:
      return x != x ? x : (x > 0 ? x : 0.0);
    case TSR_UNARY_GELU:
      return tsr_cpu_gelu_f64(x);
    case TSR_UNARY_GELU_TANH:
      return tsr_cpu_gelu_tanh_f64(x);
    case TSR_UNARY_SILU:
      return x * tsr_cpu_sigmoid_f64(x);
    case TSR_UNARY_LEAKY_RELU:
      return x > 0 ? x : a * x;
    case TSR_UNARY_ELU:
      return x > 0 ? x : a * expm1(x);
    case TSR_UNARY_ROUND:
      return nearbyint(x);
    default:
      return NAN;
  }
}

// The catalogue's f'(x) in float64; f'(NaN) is NaN for every function.
static double tsr_onednn_eltwise_df(const tsr_onednn_eltwise_spec *s, double x) {
  if (x != x)
    return x;
  if (s->op == TSR_OP_CLAMP)
    return (x < s->lo || x > s->hi) ? 0.0 : 1.0;
  const double a = s->alpha;
  switch (s->fn) {
    case TSR_UNARY_ABS:
      return tsr_cpu_abs_grad_f64(1.0, x);
    case TSR_UNARY_EXP:
      return exp(x);
    case TSR_UNARY_LOG:
      return 1.0 / x;
    case TSR_UNARY_SQRT:
      return 1.0 / (2.0 * sqrt(x));
    case TSR_UNARY_RSQRT:
      return -0.5 / (x * sqrt(x));
    case TSR_UNARY_RECIPROCAL:
      return -1.0 / (x * x);
    case TSR_UNARY_SQUARE:
      return 2.0 * x;
    case TSR_UNARY_TANH:
      return tsr_cpu_tanh_grad_f64(1.0, x);
    case TSR_UNARY_SIGMOID:
      return tsr_cpu_sigmoid_grad_f64(1.0, x);
    case TSR_UNARY_RELU:
      return x > 0 ? 1.0 : 0.0;
    case TSR_UNARY_GELU:
      return tsr_cpu_gelu_grad_f64(1.0, x);
    case TSR_UNARY_GELU_TANH:
      return tsr_cpu_gelu_tanh_grad_f64(1.0, x);
    case TSR_UNARY_SILU:
      return tsr_cpu_silu_grad_f64(1.0, x);
    case TSR_UNARY_LEAKY_RELU:
      return x > 0 ? 1.0 : a;
    case TSR_UNARY_ELU:
      return x > 0 ? 1.0 : a * exp(x);
    default:
      return 0.0;  // ROUND: no backward; its forward is exact
  }
}

// Results the catalogue calls exact (docs/abi.md 10.1): bit for bit, sign of
// zero included.
static int tsr_onednn_eltwise_exact(const tsr_onednn_eltwise_spec *s) {
  if (s->op == TSR_OP_CLAMP)
    return 1;
  if (s->op != TSR_OP_UNARY)
    return 0;
  return s->fn == TSR_UNARY_ABS || s->fn == TSR_UNARY_SQUARE || s->fn == TSR_UNARY_RELU ||
         s->fn == TSR_UNARY_ROUND || s->fn == TSR_UNARY_SQRT;
}

// Whether |got| (a float32 result) is the catalogue's |want| as the
// conformance suite compares: NaN for NaN, the same infinity, bit-exact for
// exact functions, else within |tol|, an overflow to infinity counting as
// within |tol| of the largest float.
static int tsr_onednn_eltwise_agrees(double want, float got, double tol, int exact) {
  const float w = (float)want;
  if (w != w)
    return got != got;
  if (isinf(w))
    return got == w;
  if (got != got)
    return 0;
  if (isinf(got))
    return !exact && signbit(got) == signbit(w) && fabs(want) + tol >= FLT_MAX;
  if (exact)
    return got == w && signbit(got) == signbit(w);
  return fabs((double)got - want) <= tol;
}

// The magnitudes inside f'(x) for the backward's bound (docs/conformance.md
// 5, UNARY_BACKWARD's M'(x)).
static double tsr_onednn_eltwise_dmagnitude(const tsr_onednn_eltwise_spec *s, double x) {
  const double d = fabs(tsr_onednn_eltwise_df(s, x));
  const double ax = fabs(x);
  if (s->op == TSR_OP_CLAMP)
    return d;
  switch (s->fn) {
    case TSR_UNARY_EXP:
      return exp(x);
    case TSR_UNARY_SQRT:
    case TSR_UNARY_RECIPROCAL:
      return 2 * d;
    case TSR_UNARY_RSQRT:
      return 3 * d;
    case TSR_UNARY_TANH: {
      const double t = tanh(x);
      return 1.0 + t * t;
    }
    case TSR_UNARY_SIGMOID: {
      const double sg = tsr_cpu_sigmoid_f64(x);
      return sg + sg * sg;
    }
    case TSR_UNARY_GELU: {
      const double e = erf(x * TSR_CPU_SQRT1_2);
      return 0.5 * (1 + e) + ax * TSR_CPU_INV_SQRT_2PI * exp(-0.5 * x * x) + 0.5 * (1 + fabs(e));
    }
    case TSR_UNARY_GELU_TANH: {
      const double u = TSR_CPU_SQRT_2_OVER_PI * (x + TSR_CPU_GELU_TANH_C * x * x * x);
      const double t = tanh(u);
      return 0.5 * (1 + fabs(t)) + ax * (1 + t * t) * TSR_CPU_SQRT_2_OVER_PI *
                                       (1 + 3 * TSR_CPU_GELU_TANH_C * x * x) * (1 + fabs(u));
    }
    case TSR_UNARY_SILU: {
      const double sg = tsr_cpu_sigmoid_f64(x);
      return sg * (1 + ax * (1 + sg)) + d;
    }
    case TSR_UNARY_LEAKY_RELU:
      return fabs(s->alpha) > 1 ? fabs(s->alpha) : 1.0;
    case TSR_UNARY_ELU:
      return x > 0 ? 1.0 : fabs(s->alpha) * exp(x);
    default:
      return d;
  }
}

// The conformance suite's tolerance for |want| at |x| (docs/conformance.md
// 5): C = 8 units of float32 roundoff per evaluation times the function's
// magnitude and condition, with the cancellations its usual formulas may
// have, plus the final rounding and the smallest normal float.
static double tsr_onednn_eltwise_tolerance(const tsr_onednn_eltwise_spec *s, double x, double dy,
                                           double want) {
  const double u = 0x1p-24, c = 8.0;
  const double d = tsr_onednn_eltwise_df(s, x);
  // At +-inf the limit is all there is to compare: no condition term.
  const int finite = isfinite(x);
  double m;
  if (s->op == TSR_OP_UNARY_BACKWARD) {
    // |x| |f''(x)| by a central difference of f'.
    const double h = 1e-5 * (fabs(x) > 1 ? fabs(x) : 1.0);
    double cond =
        fabs(x) * fabs(tsr_onednn_eltwise_df(s, x + h) - tsr_onednn_eltwise_df(s, x - h)) / (2 * h);
    if (!isfinite(cond))
      cond = 0;
    m = fabs(dy) * (tsr_onednn_eltwise_dmagnitude(s, x) + cond);
  } else {
    m = fabs(want) + (finite ? fabs(x * d) : 0.0);
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_LOG)
      m += 1.0;
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_GELU) {
      m += 0.5 * fabs(x) * fabs(erf(x * TSR_CPU_SQRT1_2));
    }
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_GELU_TANH) {
      const double v = TSR_CPU_SQRT_2_OVER_PI * (x + TSR_CPU_GELU_TANH_C * x * x * x);
      const double t = tanh(v);
      m += 0.5 * fabs(x) * fabs(t) + 1.5 * fabs(x) * (1.0 - t * t) * fabs(v);
    }
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_ELU && x <= 0)
      m += fabs(s->alpha) * exp(x);
  }
  if (!isfinite(m))
    m = 0;
  return c * u * m + u * fabs(want) + FLT_MIN;
}

// --- the row ------------------------------------------------------------------

// The fraction of the tolerance from which a result counts as wrong (see the
// top of the file).
#define TSR_ONEDNN_CHECK_MARGIN 0.75

// Besides the grids: the values the conformance suite draws its special
// operands from, and the smallest normal and subnormal floats.
static const float k_special_x[] = {
    NAN,  INFINITY, -INFINITY, 0.0f,   -0.0f, 1.0f,    -1.0f,    0.5f,   -0.5f,   2.5f, -2.5f,
    1.5f, -3.75f,   3.0f,      0.125f, -7.0f, FLT_MIN, -FLT_MIN, 1e-40f, -1e-40f, 1e4f, -1e4f};

// Writes the row into |x| (NULL: counts only) and returns its length.
static int64_t tsr_onednn_eltwise_row(float *x) {
  int64_t n = 0;
  const int64_t specials = (int64_t)(sizeof(k_special_x) / sizeof(k_special_x[0]));
  for (int64_t i = 0; i < specials; ++i, ++n) {
    if (x != NULL)
      x[n] = k_special_x[i];
  }
  // [-16, 16] on 2^-11: every value is exact in float32.
  for (int64_t i = -16 * 2048; i <= 16 * 2048; ++i, ++n) {
    if (x != NULL)
      x[n] = (float)ldexp((double)i, -11);
  }
  // 512 values per binade, 2^-30 to 2^17, by the bit pattern.
  for (uint32_t bits = 0x30800000u; bits < 0x48000000u; bits += 1u << 14) {
    if (x != NULL) {
      float v;
      memcpy(&v, &bits, sizeof(v));
      x[n] = v;
      x[n + 1] = -v;
    }
    n += 2;
  }
  // Where exp overflows or its results turn subnormal.
  for (int64_t i = 80 * 256; i <= 90 * 256; ++i, ++n) {
    if (x != NULL)
      x[n] = (float)ldexp((double)i, -8);
  }
  for (int64_t i = -104 * 256; i <= -80 * 256; ++i, ++n) {
    if (x != NULL)
      x[n] = (float)ldexp((double)i, -8);
  }
  return n;
}

// Runs |pd| (the check's own descriptor, a 1-D row) once and compares with
// the catalogue. TSR_UNSUPPORTED when they differ, with the first
// disagreement in |why| (|why_size| bytes) and nothing reported through the
// host, so the caller can keep the verdict; any other status is reported.
static tsr_status tsr_onednn_eltwise_row_run(const tsr_onednn_eltwise_spec *s, tsr_dnnl_pd *pd,
                                             const tsr_onednn_build_ctx *ctx, int64_t n, char *why,
                                             size_t why_size) {
  const char *what = tsr_onednn_eltwise_fn_name(s);
  const char *impl = tsr_dnnl_pd_impl_name(pd);
  const int backward = s->op == TSR_OP_UNARY_BACKWARD;
  float *x = malloc((size_t)n * 3 * sizeof(float));
  if (x == NULL) {
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: %lld values for the accuracy check", what,
                                (long long)n);
  }
  float *dy = x + n, *out = x + 2 * n;
  tsr_onednn_eltwise_row(x);
  for (int64_t i = 0; i < n; ++i) {
    dy[i] = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? -0.75f : 2.0f);
    out[i] = 12345.0f;
  }
  int32_t ids[3];
  void *handles[3];
  int32_t count = 0;
  if (backward) {
    ids[count] = DNNL_ARG_DIFF_DST;
    handles[count++] = dy;
  }
  ids[count] = DNNL_ARG_SRC;
  handles[count++] = x;
  ids[count] = backward ? DNNL_ARG_DIFF_SRC : DNNL_ARG_DST;
  handles[count++] = out;
  tsr_onednn_build_ctx first = *ctx;
  first.select = TSR_ONEDNN_SELECT_FIRST;
  tsr_onednn_prim prim;
  tsr_status status = tsr_onednn_prim_init(&prim, pd, &first, count, ids);
  if (status != TSR_OK) {
    free(x);
    return status;
  }
  void *scratchpad = NULL;
  if (prim.scratchpad_bytes > 0) {
    scratchpad = malloc(prim.scratchpad_bytes);
    if (scratchpad == NULL)
      status = tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: accuracy check's scratchpad", what);
  }
  dnnl_stream_t stream = NULL;
  if (status == TSR_OK)
    status = tsr_onednn_thread_stream_get(&stream);
  if (status == TSR_OK)
    status = tsr_onednn_prim_execute(&prim, stream, handles, scratchpad);
  free(scratchpad);
  tsr_onednn_prim_fini(&prim);

  const int exact = tsr_onednn_eltwise_exact(s);
  // GELU, GELU_TANH and SILU have no defined value at +-inf (docs/conformance.md 8).
  const int skip_inf =
      s->op != TSR_OP_CLAMP &&
      (s->fn == TSR_UNARY_GELU || s->fn == TSR_UNARY_GELU_TANH || s->fn == TSR_UNARY_SILU);
  for (int64_t i = 0; i < n && status == TSR_OK; ++i) {
    const double xi = x[i];
    if (skip_inf && isinf(xi))
      continue;
    double want;
    if (backward) {
      want = xi != xi ? xi : (double)dy[i] * tsr_onednn_eltwise_df(s, xi);
    } else {
      want = tsr_onednn_eltwise_f(s, xi);
    }
    const double tol = tsr_onednn_eltwise_tolerance(s, xi, (double)dy[i], want);
    if (!tsr_onednn_eltwise_agrees(want, out[i], TSR_ONEDNN_CHECK_MARGIN * tol, exact)) {
      snprintf(why, why_size,
               "%s%s: oneDNN's %s gives %.9g for x = %.9g where the catalogue gives %.9g "
               "(tolerance %.3g); stays on the own kernel",
               what, backward ? " backward" : "", impl, (double)out[i], xi, want, tol);
      status = TSR_UNSUPPORTED;
    }
  }
  free(x);
  return status;
}

// Builds the check's descriptors for |s| and runs it; |out_impl| (64 bytes)
// receives the implementation that ran. Statuses as the row's.
static tsr_status tsr_onednn_eltwise_probe(const tsr_onednn_eltwise_spec *s,
                                           const tsr_onednn_build_ctx *ctx, char *out_impl,
                                           char *why, size_t why_size) {
  const int64_t n = tsr_onednn_eltwise_row(NULL), one = 1;
  tsr_dnnl_md *md = NULL;
  tsr_dnnl_pd *fwd = NULL, *bwd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  const int backward = s->op == TSR_OP_UNARY_BACKWARD;
  tsr_status status = tsr_dnnl_md_create_strided(1, &n, &one, dnnl_f32, &md);
  if (status == TSR_OK)
    status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK) {
    status = tsr_dnnl_pd_eltwise_fwd(ctx->engine,
                                     backward ? dnnl_forward_training : dnnl_forward_inference,
                                     s->alg, s->dnnl_alpha, s->dnnl_beta, md, md, attr, &fwd);
  }
  if (status == TSR_OK && backward) {
    status = tsr_dnnl_pd_eltwise_bwd(ctx->engine, s->alg, s->dnnl_alpha, s->dnnl_beta, md, md, md,
                                     fwd, attr, &bwd);
  }
  if (status == TSR_OK) {
    snprintf(out_impl, 64, "%s", tsr_dnnl_pd_impl_name(backward ? bwd : fwd));
    status = tsr_onednn_eltwise_row_run(s, backward ? bwd : fwd, ctx, n, why, why_size);
  }
  tsr_dnnl_pd_destroy(bwd);
  tsr_dnnl_pd_destroy(fwd);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  tsr_dnnl_md_destroy(md);
  return status;
}

// --- verdicts kept for the process ----------------------------------------------

// A verdict and what it was reached for. Plans are built rarely (the core
// caches them), so a lock here is off the hot path.
typedef struct tsr_onednn_eltwise_verdict {
  int32_t op, fn, alg, math_mode;
  float alpha, dnnl_alpha, dnnl_beta, lo, hi;
  char impl[64];  // the implementation the row ran on
  tsr_status status;
  char why[320];
} tsr_onednn_eltwise_verdict;

#define TSR_ONEDNN_VERDICTS 128
static pthread_mutex_t g_verdict_lock = PTHREAD_MUTEX_INITIALIZER;
static tsr_onednn_eltwise_verdict g_verdicts[TSR_ONEDNN_VERDICTS];
static int32_t g_verdict_count;

static int tsr_onednn_eltwise_verdict_matches(const tsr_onednn_eltwise_verdict *v,
                                              const tsr_onednn_eltwise_spec *s,
                                              const tsr_onednn_build_ctx *ctx) {
  // Bit patterns, so a NaN parameter matches itself.
  return v->op == s->op && v->fn == (int32_t)s->fn && v->alg == (int32_t)s->alg &&
         v->math_mode == (int32_t)ctx->math_mode &&
         memcmp(&v->alpha, &s->alpha, sizeof(float)) == 0 &&
         memcmp(&v->dnnl_alpha, &s->dnnl_alpha, sizeof(float)) == 0 &&
         memcmp(&v->dnnl_beta, &s->dnnl_beta, sizeof(float)) == 0 &&
         memcmp(&v->lo, &s->lo, sizeof(float)) == 0 && memcmp(&v->hi, &s->hi, sizeof(float)) == 0;
}

// The kept verdict for |s| into |out| (1), or 0 when there is none.
static int tsr_onednn_eltwise_verdict_find(const tsr_onednn_eltwise_spec *s,
                                           const tsr_onednn_build_ctx *ctx,
                                           tsr_onednn_eltwise_verdict *out) {
  int found = 0;
  pthread_mutex_lock(&g_verdict_lock);
  for (int32_t i = 0; i < g_verdict_count && !found; ++i) {
    if (tsr_onednn_eltwise_verdict_matches(&g_verdicts[i], s, ctx)) {
      *out = g_verdicts[i];
      found = 1;
    }
  }
  pthread_mutex_unlock(&g_verdict_lock);
  return found;
}

// Keeps |v| unless the table is full (the check then runs again next time)
// or another thread kept the same verdict first.
static void tsr_onednn_eltwise_verdict_keep(const tsr_onednn_eltwise_verdict *v,
                                            const tsr_onednn_eltwise_spec *s,
                                            const tsr_onednn_build_ctx *ctx) {
  pthread_mutex_lock(&g_verdict_lock);
  int present = 0;
  for (int32_t i = 0; i < g_verdict_count && !present; ++i) {
    present = tsr_onednn_eltwise_verdict_matches(&g_verdicts[i], s, ctx);
  }
  if (!present && g_verdict_count < TSR_ONEDNN_VERDICTS)
    g_verdicts[g_verdict_count++] = *v;
  pthread_mutex_unlock(&g_verdict_lock);
}

// The verdict for |s| into |v|, from the table or by running the row.
// TSR_OK with a verdict; another status, already reported, when the row
// could not run (out of memory, a oneDNN error): no verdict then.
// CLAMP's verdicts are not kept: every pair of bounds is another key, and
// a program clipping by changing bounds (gradient clipping) would fill the
// table and leave no room for the functions. Its row fails at its first
// value (NaN) anyway on the oneDNNs seen so far.
static tsr_status tsr_onednn_eltwise_verdict_get(const tsr_onednn_eltwise_spec *s,
                                                 const tsr_onednn_build_ctx *ctx,
                                                 tsr_onednn_eltwise_verdict *v) {
  const int keep = s->op != TSR_OP_CLAMP;
  if (keep && tsr_onednn_eltwise_verdict_find(s, ctx, v))
    return TSR_OK;
  memset(v, 0, sizeof(*v));
  v->op = s->op;
  v->fn = (int32_t)s->fn;
  v->alg = (int32_t)s->alg;
  v->math_mode = (int32_t)ctx->math_mode;
  v->alpha = s->alpha;
  v->dnnl_alpha = s->dnnl_alpha;
  v->dnnl_beta = s->dnnl_beta;
  v->lo = s->lo;
  v->hi = s->hi;
  v->status = tsr_onednn_eltwise_probe(s, ctx, v->impl, v->why, sizeof(v->why));
  if (v->status != TSR_OK && v->why[0] == '\0')
    return v->status;
  if (keep)
    tsr_onednn_eltwise_verdict_keep(v, s, ctx);
  return TSR_OK;
}

tsr_status tsr_onednn_eltwise_check(const tsr_onednn_eltwise_spec *s,
                                    const tsr_onednn_build_ctx *ctx, const char *impl) {
  tsr_onednn_eltwise_verdict v;
  const tsr_status status = tsr_onednn_eltwise_verdict_get(s, ctx, &v);
  if (status != TSR_OK)
    return status;
  if (impl != NULL && strcmp(v.impl, impl) != 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "%s: the accuracy check ran on %s, not on %s: unverified",
                                tsr_onednn_eltwise_fn_name(s), v.impl, impl);
  }
  if (v.status != TSR_OK)
    return tsr_onednn_error_set(v.status, "%s", v.why);
  return TSR_OK;
}

tsr_status tsr_onednn_eltwise_log_check(const tsr_onednn_build_ctx *ctx) {
  tsr_onednn_eltwise_spec s;
  memset(&s, 0, sizeof(s));
  s.op = TSR_OP_UNARY;
  s.fn = TSR_UNARY_LOG;
  tsr_onednn_eltwise_alg(&s);
  return tsr_onednn_eltwise_check(&s, ctx, NULL);
}

tsr_status tsr_onednn_eltwise_activation_check(const tsr_onednn_build_ctx *ctx,
                                               tsr_activation_t activation, const char *what) {
  tsr_onednn_eltwise_spec s;
  memset(&s, 0, sizeof(s));
  s.op = TSR_OP_UNARY;
  switch (activation) {
    case TSR_ACTIVATION_GELU:
      s.fn = TSR_UNARY_GELU;
      break;
    case TSR_ACTIVATION_GELU_TANH:
      s.fn = TSR_UNARY_GELU_TANH;
      break;
    case TSR_ACTIVATION_SIGMOID:
      s.fn = TSR_UNARY_SIGMOID;
      break;
    case TSR_ACTIVATION_TANH:
      s.fn = TSR_UNARY_TANH;
      break;
    default:
      return TSR_OK;  // NONE, and RELU's own pass
  }
  s.alpha = 1.0f;
  tsr_onednn_eltwise_alg(&s);
  tsr_onednn_eltwise_verdict v;
  const tsr_status status = tsr_onednn_eltwise_verdict_get(&s, ctx, &v);
  if (status != TSR_OK || v.status == TSR_OK)
    return status;
  return tsr_onednn_error_set(TSR_UNSUPPORTED,
                              "%s: the %s post-op fails the accuracy check, so the own kernel "
                              "runs the whole op (%s)",
                              what, tsr_onednn_eltwise_fn_name(&s), v.why);
}
