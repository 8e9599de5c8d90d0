// UNARY, UNARY_BACKWARD and CLAMP on oneDNN's eltwise primitive, and the
// helpers the elementwise-like families share (onednn_ew.h).
//
// A function goes to oneDNN in two steps. A table maps it to the eltwise
// algorithm with the catalogue's formula (NEG is x * -1 on the binary
// primitive instead: eltwise_linear computes -1 * x + 0, which turns -0 into
// +0). Then, because oneDNN's vector code does not follow the catalogue's
// special values and accuracy everywhere, the build runs that algorithm once
// on a row of special and ordinary values and compares it with the formula
// evaluated in float64, within the conformance suite's tolerance; a function
// that disagrees stays on the own kernel. With oneDNN 2.6 and 3.2 on this
// machine (AVX2; SSE4.1 gives the same verdicts) the row refuses:
//   exp             exp(NaN) = +inf
//   log             24 ulps off (2.6: log(1) = -1.4e-6; 3.2: at 0.5)
//   rsqrt           pow(x, -0.5) gives 0 for -inf and +inf for -0
//   relu            relu(NaN) = 0 (also leaky relu with slope 0)
//   silu            x * sigmoid(x) is 0 below x = -87, where the result is
//                   a normal float (oneDNN's exp flushes its subnormals)
//   clamp           clip(NaN) = the lower bound
//   backward of abs, exp, relu, leaky relu, elu: a NaN x does not make dx NaN
// and accepts abs, sqrt, square, round (half to even), reciprocal, tanh,
// sigmoid, gelu, gelu_tanh, leaky relu, elu, and the backward of sqrt, log,
// square, reciprocal, tanh, sigmoid, gelu, gelu_tanh and silu. The check runs
// per build, so a oneDNN that fixes one of them is used without a code
// change and one that breaks one is not.
//
// Only float32: on this AVX2 machine oneDNN has no bfloat16/float16 eltwise
// code besides its reference loops, so their semantics could not be checked
// here; int dtypes would be computed in float32, which is not the catalogue's
// wrap-around arithmetic. x and out must share one dense layout (a
// transposed or permuted one is fine: elementwise work sees it as one block);
// broadcast inputs and gapped layouts stay on the own kernel.
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "math_fns.h"
#include "onednn_ew.h"
#include "onednn_plugin.h"

// --- shared helpers (onednn_ew.h) ---------------------------------------------

static tsr_status tsr_onednn_ew_op_execute(const tsr_onednn_op *base,
                                           const tsr_onednn_exec_ctx *ctx) {
  return tsr_onednn_ew_op_run((const tsr_onednn_ew_op *)base, ctx);
}

void tsr_onednn_ew_op_destroy(tsr_onednn_op *base) {
  tsr_onednn_ew_op *op = (tsr_onednn_ew_op *)base;
  if (op == NULL)
    return;
  tsr_onednn_prim_fini(&op->prim);
  free(op);
}

tsr_status tsr_onednn_ew_op_create(size_t bytes, const char *what, tsr_onednn_ew_op **out_op) {
  *out_op = NULL;
  if (bytes < sizeof(tsr_onednn_ew_op))
    bytes = sizeof(tsr_onednn_ew_op);
  tsr_onednn_ew_op *op = calloc(1, bytes);
  if (op == NULL) {
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: %zu bytes for an op", what, bytes);
  }
  op->base.execute = tsr_onednn_ew_op_execute;
  op->base.destroy = tsr_onednn_ew_op_destroy;
  *out_op = op;
  return TSR_OK;
}

tsr_status tsr_onednn_ew_op_prim_init(tsr_onednn_ew_op *op, tsr_dnnl_pd *pd,
                                      const tsr_onednn_build_ctx *ctx, int32_t num_args,
                                      const int32_t *arg_ids, const int32_t *operands,
                                      int allow_ref, const char *what) {
  // oneDNN lists its reference implementation last, so one that comes first
  // is the only one.
  if (!allow_ref && strncmp(tsr_dnnl_pd_impl_name(pd), "ref", 3) == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "%s: oneDNN has only its reference implementation (%s) here", what,
                                tsr_dnnl_pd_impl_name(pd));
  }
  tsr_status status = tsr_onednn_prim_init(&op->prim, pd, ctx, num_args, arg_ids);
  if (status != TSR_OK)
    return status;
  if (!allow_ref && strncmp(op->prim.impl, "ref", 3) == 0) {
    // Autotuning lands here only when nothing faster could run.
    tsr_onednn_prim_fini(&op->prim);
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: only oneDNN's reference code ran", what);
  }
  op->num_handles = num_args;
  for (int32_t i = 0; i < num_args; ++i) op->handle_operands[i] = operands[i];
  snprintf(op->base.engine, sizeof(op->base.engine), "onednn:%s", op->prim.impl);
  op->base.workspace_bytes =
      op->prim.scratchpad_bytes > 0 ? tsr_onednn_round64(op->prim.scratchpad_bytes) + 64 : 0;
  // Elementwise work splits by a fixed rule and every element is computed
  // alone; the families whose sums could depend on more say so themselves.
  op->base.info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

tsr_status tsr_onednn_ew_op_run(const tsr_onednn_ew_op *op, const tsr_onednn_exec_ctx *ctx) {
  void *handles[TSR_ONEDNN_MAX_ARGS];
  for (int32_t i = 0; i < op->num_handles; ++i) {
    const int32_t k = op->handle_operands[i];
    // oneDNN only reads an input argument, so the const constant is safe.
    handles[i] = k == TSR_ONEDNN_EW_CONSTANT ? (void *)&op->constant : (void *)ctx->ptrs[k];
  }
  return tsr_onednn_prim_execute(&op->prim, ctx->stream, handles, ctx->workspace);
}

tsr_status tsr_onednn_ew_size_check(const tsr_onednn_build_ctx *ctx, int64_t numel,
                                    const char *what) {
  if (numel == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: empty, nothing for oneDNN to do", what);
  }
  if (numel < ctx->min_elements) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "%s: %lld elements are cheaper on the own kernel (below %lld)",
                                what, (long long)numel, (long long)ctx->min_elements);
  }
  return TSR_OK;
}

void tsr_onednn_ew_layout_get(int32_t count, const tsr_tensor_desc *const *descs,
                              tsr_onednn_ew_layout *out_layout) {
  const tsr_tensor_desc *ref = descs[0];
  tsr_onednn_ew_layout *l = out_layout;
  memset(l, 0, sizeof(*l));
  l->count = count;
  // Size-1 dimensions address nothing; the rest in the first operand's
  // physical order, outermost first (insertion sort keeps ties in order).
  int32_t order[TSR_MAX_RANK];
  int32_t n = 0;
  for (int32_t d = 0; d < ref->rank; ++d) {
    if (ref->sizes[d] != 1)
      order[n++] = d;
  }
  for (int32_t i = 1; i < n; ++i) {
    for (int32_t j = i; j > 0 && ref->strides[order[j - 1]] < ref->strides[order[j]]; --j) {
      const int32_t t = order[j - 1];
      order[j - 1] = order[j];
      order[j] = t;
    }
  }
  for (int32_t k = 0; k < n; ++k) {
    const int32_t d = order[k];
    const int64_t size = ref->sizes[d];
    int merge = l->rank > 0;
    for (int32_t i = 0; i < count && merge; ++i) {
      merge = l->strides[i][l->rank - 1] == descs[i]->strides[d] * size;
    }
    if (merge) {
      l->dims[l->rank - 1] *= size;
      for (int32_t i = 0; i < count; ++i) l->strides[i][l->rank - 1] = descs[i]->strides[d];
    } else {
      l->dims[l->rank] = size;
      for (int32_t i = 0; i < count; ++i) l->strides[i][l->rank] = descs[i]->strides[d];
      ++l->rank;
    }
  }
  if (l->rank == 0) {
    // A single element.
    l->rank = 1;
    l->dims[0] = 1;
    for (int32_t i = 0; i < count; ++i) l->strides[i][0] = 1;
  }
}

int tsr_onednn_ew_layout_broadcasts(const tsr_onednn_ew_layout *layout, int32_t i) {
  for (int32_t d = 0; d < layout->rank; ++d) {
    if (layout->dims[d] > 1 && layout->strides[i][d] == 0)
      return 1;
  }
  return 0;
}

int tsr_onednn_ew_layout_same(const tsr_onednn_ew_layout *layout, int32_t i, int32_t j) {
  for (int32_t d = 0; d < layout->rank; ++d) {
    if (layout->dims[d] > 1 && layout->strides[i][d] != layout->strides[j][d])
      return 0;
  }
  return 1;
}

// Gives size-1 dimensions the stride a row-major layout would: oneDNN's
// fast paths recognise plain layouts by their strides.
static void tsr_onednn_ew_unit_strides_fill(int32_t rank, const int64_t *dims, int64_t *strides) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (dims[d] == 1)
      strides[d] = d == rank - 1 ? 1 : strides[d + 1] * dims[d + 1];
  }
}

tsr_status tsr_onednn_ew_layout_md(const tsr_onednn_ew_layout *layout, int32_t i,
                                   dnnl_data_type_t dtype, tsr_dnnl_md **out_md) {
  int64_t dims[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  for (int32_t d = 0; d < layout->rank; ++d) {
    strides[d] = layout->strides[i][d];
    dims[d] = strides[d] == 0 ? 1 : layout->dims[d];
  }
  tsr_onednn_ew_unit_strides_fill(layout->rank, dims, strides);
  return tsr_dnnl_md_create_strided(layout->rank, dims, strides, dtype, out_md);
}

tsr_status tsr_onednn_ew_scalar_md(int32_t rank, dnnl_data_type_t dtype, tsr_dnnl_md **out_md) {
  int64_t dims[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) dims[d] = strides[d] = 1;
  return tsr_dnnl_md_create_strided(rank, dims, strides, dtype, out_md);
}

// --- UNARY, UNARY_BACKWARD, CLAMP ---------------------------------------------

// What one build asks of oneDNN.
typedef struct tsr_onednn_eltwise_spec {
  int32_t op;           // TSR_OP_UNARY, TSR_OP_UNARY_BACKWARD or TSR_OP_CLAMP
  tsr_unary_fn_t fn;    // UNARY*: the function
  float alpha;          // UNARY*: the catalogue's alpha in float32 (LEAKY_RELU, ELU)
  float lo, hi;         // CLAMP: the bounds in float32, +-inf when absent
  dnnl_alg_kind_t alg;  // oneDNN's algorithm and its parameters
  float dnnl_alpha, dnnl_beta;
} tsr_onednn_eltwise_spec;

// The eltwise algorithm with the formula of |fn|, or 0 when there is none.
static int tsr_onednn_eltwise_alg(tsr_onednn_eltwise_spec *s) {
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

static const char *tsr_onednn_eltwise_fn_name(const tsr_onednn_eltwise_spec *s) {
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
      return tsr_ref_sigmoid_f64(x);
    case TSR_UNARY_RELU:
      return x != x ? x : (x > 0 ? x : 0.0);
    case TSR_UNARY_GELU:
      return tsr_ref_gelu_f64(x);
    case TSR_UNARY_GELU_TANH:
      return tsr_ref_gelu_tanh_f64(x);
    case TSR_UNARY_SILU:
      return x * tsr_ref_sigmoid_f64(x);
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
      return tsr_ref_abs_grad_f64(1.0, x);
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
      return tsr_ref_tanh_grad_f64(1.0, x);
    case TSR_UNARY_SIGMOID:
      return tsr_ref_sigmoid_grad_f64(1.0, x);
    case TSR_UNARY_RELU:
      return x > 0 ? 1.0 : 0.0;
    case TSR_UNARY_GELU:
      return tsr_ref_gelu_grad_f64(1.0, x);
    case TSR_UNARY_GELU_TANH:
      return tsr_ref_gelu_tanh_grad_f64(1.0, x);
    case TSR_UNARY_SILU:
      return tsr_ref_silu_grad_f64(1.0, x);
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

// Whether |got| (a float32 result) is the catalogue's |want|: NaN for NaN,
// the same infinity, bit-exact for exact functions, else within |tol|.
static int tsr_onednn_eltwise_agrees(double want, float got, double tol, int exact) {
  const float w = (float)want;
  if (w != w)
    return got != got;
  if (isinf(w))
    return got == w;
  if (!isfinite(got))
    return 0;
  if (exact)
    return got == w && signbit(got) == signbit(w);
  return fabs((double)got - want) <= tol;
}

// The conformance suite's tolerance for |want| at |x| (docs/conformance.md
// 5): C = 8 units of float32 roundoff per evaluation times the function's
// magnitude and condition, with the cancellations its usual formulas may
// have; for the backward, the magnitudes inside f' approximated by 1 + |f'|
// and the condition by a central difference of f'.
static double tsr_onednn_eltwise_tolerance(const tsr_onednn_eltwise_spec *s, double x, double dy,
                                           double want) {
  const double u = 0x1p-24, c = 8.0;
  const double d = tsr_onednn_eltwise_df(s, x);
  // At +-inf the limit is all there is to compare: no condition term.
  const int finite = isfinite(x);
  double m;
  if (s->op == TSR_OP_UNARY_BACKWARD) {
    // A relative step keeps x - h inside the domain of log and sqrt.
    const double h = x != 0 ? 1e-3 * fabs(x) : 1e-6;
    double d2 = (tsr_onednn_eltwise_df(s, x + h) - tsr_onednn_eltwise_df(s, x - h)) / (2 * h);
    if (d2 != d2)
      d2 = 0;
    m = fabs(dy) * (1.0 + fabs(d) + (finite ? fabs(x * d2) : 0.0));
  } else {
    m = fabs(want) + (finite ? fabs(x * d) : 0.0);
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_LOG)
      m += 1.0;
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_GELU) {
      m += 0.5 * fabs(x) * fabs(erf(x * TSR_REF_SQRT1_2));
    }
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_GELU_TANH) {
      const double v = TSR_REF_SQRT_2_OVER_PI * (x + TSR_REF_GELU_TANH_C * x * x * x);
      const double t = tanh(v);
      m += 0.5 * fabs(x) * fabs(t) + 1.5 * fabs(x) * (1.0 - t * t) * fabs(v);
    }
    if (s->op == TSR_OP_UNARY && s->fn == TSR_UNARY_ELU && x <= 0)
      m += fabs(s->alpha) * exp(x);
  }
  return c * u * m + u * fabs(want) + FLT_MIN;
}

// The values the probe feeds: NaN, infinities, zeros, halves (rounding),
// ordinary values on both sides, exp's overflow and underflow, tiny ones
// (ELU's cancellation). 51 values: a vector body and a tail on any ISA.
static const float k_probe_x[] = {
    NAN,   INFINITY, -INFINITY, 0.0f,    -0.0f,  1.0f,  -1.0f,   0.5f,   -0.5f,  1.5f,   -1.5f,
    2.5f,  -2.5f,    3.0f,      -3.75f,  0.125f, -7.0f, 1e-6f,   -1e-6f, 0.1f,   -0.1f,  0.7f,
    -0.7f, 2.0f,     -2.0f,     5.0f,    -5.0f,  10.0f, -10.0f,  20.0f,  -20.0f, 40.0f,  -40.0f,
    88.0f, -88.0f,   100.0f,    -100.0f, 1e4f,   -1e4f, 3.3f,    -0.3f,  1.25f,  -1.25f, 4.5f,
    -4.5f, 0.01f,    -0.01f,    6.0f,    NAN,    -0.0f, INFINITY};
enum { TSR_ONEDNN_PROBE_N = (int)(sizeof(k_probe_x) / sizeof(k_probe_x[0])) };

// Runs |pd| (the probe's own descriptor, a 1-D row) once and compares with
// the catalogue. TSR_UNSUPPORTED, naming the first disagreement, when they
// differ or when the probe ran another implementation than |impl| (NULL:
// any).
static tsr_status tsr_onednn_eltwise_probe_run(const tsr_onednn_eltwise_spec *s, tsr_dnnl_pd *pd,
                                               const tsr_onednn_build_ctx *ctx, const char *impl) {
  const char *what = tsr_onednn_eltwise_fn_name(s);
  const char *probe_impl = tsr_dnnl_pd_impl_name(pd);
  if (impl == NULL)
    impl = probe_impl;
  if (strcmp(probe_impl, impl) != 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "%s: the special-value check ran on %s, not on %s: unverified",
                                what, probe_impl, impl);
  }
  float x[TSR_ONEDNN_PROBE_N], dy[TSR_ONEDNN_PROBE_N], out[TSR_ONEDNN_PROBE_N];
  for (int i = 0; i < TSR_ONEDNN_PROBE_N; ++i) {
    x[i] = k_probe_x[i];
    dy[i] = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? -0.75f : 2.0f);
    out[i] = 12345.0f;
  }
  const int backward = s->op == TSR_OP_UNARY_BACKWARD;
  int32_t ids[3];
  void *handles[3];
  int32_t n = 0;
  if (backward) {
    ids[n] = DNNL_ARG_DIFF_DST;
    handles[n++] = dy;
  }
  ids[n] = DNNL_ARG_SRC;
  handles[n++] = x;
  ids[n] = backward ? DNNL_ARG_DIFF_SRC : DNNL_ARG_DST;
  handles[n++] = out;
  tsr_onednn_build_ctx first = *ctx;
  first.select = TSR_ONEDNN_SELECT_FIRST;
  tsr_onednn_prim prim;
  tsr_status status = tsr_onednn_prim_init(&prim, pd, &first, n, ids);
  if (status != TSR_OK)
    return status;
  void *scratchpad = NULL;
  if (prim.scratchpad_bytes > 0) {
    scratchpad = malloc(prim.scratchpad_bytes);
    if (scratchpad == NULL)
      status = tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: probe", what);
  }
  dnnl_stream_t stream = NULL;
  if (status == TSR_OK)
    status = tsr_onednn_thread_stream_get(&stream);
  if (status == TSR_OK)
    status = tsr_onednn_prim_execute(&prim, stream, handles, scratchpad);
  free(scratchpad);
  tsr_onednn_prim_fini(&prim);
  if (status != TSR_OK)
    return status;

  const int exact = tsr_onednn_eltwise_exact(s);
  // GELU, GELU_TANH and SILU have no defined value at +-inf (docs/conformance.md 8).
  const int skip_inf =
      s->op != TSR_OP_CLAMP &&
      (s->fn == TSR_UNARY_GELU || s->fn == TSR_UNARY_GELU_TANH || s->fn == TSR_UNARY_SILU);
  for (int i = 0; i < TSR_ONEDNN_PROBE_N; ++i) {
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
    if (!tsr_onednn_eltwise_agrees(want, out[i], tol, exact)) {
      return tsr_onednn_error_set(
          TSR_UNSUPPORTED,
          "%s%s: oneDNN's %s gives %.9g for x = %.9g where the catalogue gives %.9g; stays on "
          "the own kernel",
          what, backward ? " backward" : "", impl, (double)out[i], xi, want);
    }
  }
  return TSR_OK;
}

// Builds the probe's descriptors for |s| and runs it.
static tsr_status tsr_onednn_eltwise_probe(const tsr_onednn_eltwise_spec *s,
                                           const tsr_onednn_build_ctx *ctx, const char *impl,
                                           const_dnnl_primitive_attr_t attr) {
  const int64_t n = TSR_ONEDNN_PROBE_N, one = 1;
  tsr_dnnl_md *md = NULL;
  tsr_dnnl_pd *fwd = NULL, *bwd = NULL;
  tsr_status status = tsr_dnnl_md_create_strided(1, &n, &one, dnnl_f32, &md);
  const int backward = s->op == TSR_OP_UNARY_BACKWARD;
  if (status == TSR_OK) {
    status = tsr_dnnl_pd_eltwise_fwd(ctx->engine,
                                     backward ? dnnl_forward_training : dnnl_forward_inference,
                                     s->alg, s->dnnl_alpha, s->dnnl_beta, md, md, attr, &fwd);
  }
  if (status == TSR_OK && backward) {
    status = tsr_dnnl_pd_eltwise_bwd(ctx->engine, s->alg, s->dnnl_alpha, s->dnnl_beta, md, md, md,
                                     fwd, attr, &bwd);
  }
  if (status == TSR_OK)
    status = tsr_onednn_eltwise_probe_run(s, backward ? bwd : fwd, ctx, impl);
  tsr_dnnl_pd_destroy(bwd);
  tsr_dnnl_pd_destroy(fwd);
  tsr_dnnl_md_destroy(md);
  return status;
}

tsr_status tsr_onednn_eltwise_log_check(const tsr_onednn_build_ctx *ctx) {
  tsr_onednn_eltwise_spec s;
  memset(&s, 0, sizeof(s));
  s.op = TSR_OP_UNARY;
  s.fn = TSR_UNARY_LOG;
  tsr_onednn_eltwise_alg(&s);
  dnnl_primitive_attr_t attr = NULL;
  tsr_status status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK)
    status = tsr_onednn_eltwise_probe(&s, ctx, NULL, attr);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  return status;
}

// Reads the op's attributes into |s| (defaults as the catalogue gives them).
static tsr_status tsr_onednn_eltwise_spec_read(const tsr_op_signature *signature,
                                               tsr_onednn_eltwise_spec *s) {
  memset(s, 0, sizeof(*s));
  s->op = signature->op;
  s->fn = -1;
  if (signature->op == TSR_OP_CLAMP) {
    const tsr_clamp_attrs *attrs = signature->attrs;
    // NULL attrs: no bounds, a copy (data.c's business, not eltwise's).
    if (attrs == NULL || (!attrs->has_min && !attrs->has_max)) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "clamp: no bounds, a copy");
    }
    if ((attrs->has_min && isnan(attrs->min)) || (attrs->has_max && isnan(attrs->max))) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "clamp: a NaN bound stays on the own kernel");
    }
    // Bounds are converted to the dtype first, as CAST converts a float64.
    s->lo = attrs->has_min ? (float)attrs->min : -INFINITY;
    s->hi = attrs->has_max ? (float)attrs->max : INFINITY;
    s->alg = dnnl_eltwise_clip;
    s->dnnl_alpha = s->lo;
    s->dnnl_beta = s->hi;
    return TSR_OK;
  }
  // The plan layer validated that fn is covered and valid.
  const tsr_unary_attrs *attrs = signature->attrs;
  s->fn = attrs->fn;
  double alpha = attrs->fn == TSR_UNARY_LEAKY_RELU ? 0.01 : 1.0;
  if (TSR_ABI_COVERS(attrs, tsr_unary_attrs, alpha))
    alpha = attrs->alpha;
  s->alpha = (float)alpha;
  return TSR_OK;
}

// Describes the operands as one plain layout; TSR_UNSUPPORTED when they do
// not share one (oneDNN's eltwise takes one layout for data and result) or
// an input broadcasts.
static tsr_status tsr_onednn_eltwise_layout(const tsr_op_signature *signature, const char *what,
                                            tsr_onednn_ew_layout *layout) {
  const tsr_tensor_desc *descs[TSR_ONEDNN_EW_MAX_OPERANDS];
  int32_t count = 0;
  descs[count++] = &signature->outputs[0];
  for (int32_t i = 0; i < signature->num_inputs; ++i) descs[count++] = &signature->inputs[i];
  tsr_onednn_ew_layout_get(count, descs, layout);
  for (int32_t i = 1; i < count; ++i) {
    if (tsr_onednn_ew_layout_broadcasts(layout, i)) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: a broadcast input stays on the own kernel",
                                  what);
    }
    if (!tsr_onednn_ew_layout_same(layout, 0, i)) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "%s: inputs and output in different layouts stay on the own "
                                  "kernel",
                                  what);
    }
  }
  return TSR_OK;
}

// NEG as x * -1 on the binary primitive: exact, -0 and NaN included.
static tsr_status tsr_onednn_eltwise_neg_build(const tsr_onednn_build_ctx *ctx,
                                               const tsr_dnnl_md *md, int32_t rank,
                                               const_dnnl_primitive_attr_t attr,
                                               tsr_onednn_ew_op *op) {
  tsr_dnnl_md *scalar = NULL;
  tsr_dnnl_pd *pd = NULL;
  tsr_status status = tsr_onednn_ew_scalar_md(rank, dnnl_f32, &scalar);
  if (status == TSR_OK) {
    status = tsr_dnnl_pd_binary(ctx->engine, dnnl_binary_mul, md, scalar, md, attr, &pd);
  }
  if (status == TSR_OK) {
    static const int32_t ids[] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    static const int32_t operands[] = {0, TSR_ONEDNN_EW_CONSTANT, 1};
    op->constant = -1.0f;
    status = tsr_onednn_ew_op_prim_init(op, pd, ctx, 3, ids, operands, 0, "neg");
  }
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_md_destroy(scalar);
  return status;
}

tsr_status tsr_onednn_eltwise_build(const tsr_op_signature *signature,
                                    const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op) {
  *out_op = NULL;
  tsr_onednn_eltwise_spec s;
  tsr_status status = tsr_onednn_eltwise_spec_read(signature, &s);
  if (status != TSR_OK)
    return status;
  const char *what = tsr_onednn_eltwise_fn_name(&s);
  const tsr_tensor_desc *out = &signature->outputs[0];
  if (out->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: dtype %d stays on the own kernel", what,
                                (int)out->dtype);
  }
  const int neg = s.op == TSR_OP_UNARY && s.fn == TSR_UNARY_NEG;
  if (s.op != TSR_OP_CLAMP && !neg && !tsr_onednn_eltwise_alg(&s)) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: oneDNN has no eltwise algorithm for it",
                                what);
  }
  status = tsr_onednn_ew_size_check(ctx, tsr_onednn_numel(out), what);
  if (status != TSR_OK)
    return status;
  tsr_onednn_ew_layout layout;
  status = tsr_onednn_eltwise_layout(signature, what, &layout);
  if (status != TSR_OK)
    return status;

  tsr_dnnl_md *md = NULL;
  dnnl_primitive_attr_t attr = NULL;
  tsr_dnnl_pd *fwd = NULL, *bwd = NULL;
  tsr_onednn_ew_op *op = NULL;
  status = tsr_onednn_ew_layout_md(&layout, 0, dnnl_f32, &md);
  if (status == TSR_OK)
    status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK)
    status = tsr_onednn_ew_op_create(sizeof(*op), what, &op);
  if (status == TSR_OK && neg) {
    status = tsr_onednn_eltwise_neg_build(ctx, md, layout.rank, attr, op);
  } else if (status == TSR_OK && s.op == TSR_OP_UNARY_BACKWARD) {
    // (dy, x) -> dx, x being the data of the backward.
    status = tsr_dnnl_pd_eltwise_fwd(ctx->engine, dnnl_forward_training, s.alg, s.dnnl_alpha,
                                     s.dnnl_beta, md, md, attr, &fwd);
    if (status == TSR_OK) {
      status = tsr_dnnl_pd_eltwise_bwd(ctx->engine, s.alg, s.dnnl_alpha, s.dnnl_beta, md, md, md,
                                       fwd, attr, &bwd);
    }
    if (status == TSR_OK) {
      static const int32_t ids[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_DIFF_SRC};
      static const int32_t operands[] = {0, 1, 2};
      status = tsr_onednn_ew_op_prim_init(op, bwd, ctx, 3, ids, operands, 0, what);
    }
  } else if (status == TSR_OK) {
    status = tsr_dnnl_pd_eltwise_fwd(ctx->engine, dnnl_forward_inference, s.alg, s.dnnl_alpha,
                                     s.dnnl_beta, md, md, attr, &fwd);
    if (status == TSR_OK) {
      static const int32_t ids[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
      static const int32_t operands[] = {0, 1};
      status = tsr_onednn_ew_op_prim_init(op, fwd, ctx, 2, ids, operands, 0, what);
    }
  }
  if (status == TSR_OK && !neg)
    status = tsr_onednn_eltwise_probe(&s, ctx, op->prim.impl, attr);
  tsr_dnnl_pd_destroy(bwd);
  tsr_dnnl_pd_destroy(fwd);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  tsr_dnnl_md_destroy(md);
  if (status != TSR_OK) {
    tsr_onednn_ew_op_destroy(op ? &op->base : NULL);
    return status;
  }
  *out_op = &op->base;
  return TSR_OK;
}
