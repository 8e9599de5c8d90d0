// Oracle of the elementwise ops: FILL, COPY, CAST, UNARY, UNARY_BACKWARD,
// BINARY, COMPARE, WHERE, CLAMP (docs/abi.md 10.2-10.9).
//
// Inputs arrive with the output's sizes (the suite expands broadcast inputs
// when it reads them back), so every loop runs over the output's elements.
#include <math.h>
#include <string.h>

#include "oracle_internal.h"

#define SQRT1_2 0.70710678118654752440
#define SQRT_2_OVER_PI 0.79788456080286535588
#define INV_SQRT_2PI 0.39894228040143267794
#define TWO_OVER_SQRT_PI 1.12837916709551257390
#define GELU_K 0.044715

static double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

static double normal_cdf(double x) { return 0.5 * erfc(-x * SQRT1_2); }

static double gelu_tanh_u(double x) { return SQRT_2_OVER_PI * (x + GELU_K * x * x * x); }

double tsr_oracle_unary_value(tsr_unary_fn_t fn, double x, double alpha) {
  switch (fn) {
    case TSR_UNARY_NEG: return -x;
    case TSR_UNARY_ABS: return fabs(x);
    case TSR_UNARY_EXP: return exp(x);
    case TSR_UNARY_LOG: return log(x);
    case TSR_UNARY_SQRT: return sqrt(x);
    case TSR_UNARY_RSQRT: return 1.0 / sqrt(x);
    case TSR_UNARY_RECIPROCAL: return 1.0 / x;
    case TSR_UNARY_SQUARE: return x * x;
    case TSR_UNARY_SIN: return sin(x);
    case TSR_UNARY_COS: return cos(x);
    case TSR_UNARY_TANH: return tanh(x);
    case TSR_UNARY_SIGMOID: return isnan(x) ? x : sigmoid(x);
    case TSR_UNARY_RELU: return isnan(x) ? x : (x > 0 ? x : 0.0);
    case TSR_UNARY_GELU: return isnan(x) ? x : x * normal_cdf(x);
    // 1 + tanh(u) = 2 sigmoid(2u): the same function without the
    // cancellation, so the oracle stays accurate where a plugin may not.
    case TSR_UNARY_GELU_TANH: return isnan(x) ? x : x * sigmoid(2.0 * gelu_tanh_u(x));
    case TSR_UNARY_SILU: return isnan(x) ? x : x * sigmoid(x);
    case TSR_UNARY_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case TSR_UNARY_ELU: return x > 0 ? x : (isnan(x) ? x : alpha * expm1(x));
    case TSR_UNARY_SIGN: return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);
    case TSR_UNARY_FLOOR: return floor(x);
    case TSR_UNARY_CEIL: return ceil(x);
    case TSR_UNARY_ROUND: return nearbyint(x);  // ties to even in the default mode
    case TSR_UNARY_LOGICAL_NOT: return x == 0 ? 1.0 : 0.0;
    case TSR_UNARY_LOG1P: return log1p(x);
    case TSR_UNARY_EXPM1: return expm1(x);
    case TSR_UNARY_ERF: return erf(x);
    default: return NAN;
  }
}

double tsr_oracle_unary_derivative(tsr_unary_fn_t fn, double x, double alpha) {
  if (isnan(x)) return x;  // f'(NaN) = NaN for every f
  switch (fn) {
    case TSR_UNARY_NEG: return -1.0;
    case TSR_UNARY_ABS: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case TSR_UNARY_EXP: return exp(x);
    case TSR_UNARY_LOG: return 1.0 / x;
    case TSR_UNARY_SQRT: return 0.5 / sqrt(x);
    case TSR_UNARY_RSQRT: return -0.5 / (x * sqrt(x));
    case TSR_UNARY_RECIPROCAL: return -1.0 / (x * x);
    case TSR_UNARY_SQUARE: return 2.0 * x;
    case TSR_UNARY_SIN: return cos(x);
    case TSR_UNARY_COS: return -sin(x);
    case TSR_UNARY_TANH: {
      double t = tanh(x);
      return 1.0 - t * t;
    }
    case TSR_UNARY_SIGMOID: {
      double s = sigmoid(x);
      return s * sigmoid(-x);
    }
    case TSR_UNARY_RELU: return x > 0 ? 1.0 : 0.0;
    case TSR_UNARY_GELU: return normal_cdf(x) + x * INV_SQRT_2PI * exp(-0.5 * x * x);
    case TSR_UNARY_GELU_TANH: {
      // 1 + t and 1 - t^2 written without cancellation (t = tanh u).
      double u = gelu_tanh_u(x);
      double one_plus_t = 2.0 * sigmoid(2.0 * u);
      double one_minus_t2 = 4.0 * sigmoid(2.0 * u) * sigmoid(-2.0 * u);
      return 0.5 * one_plus_t +
             0.5 * x * one_minus_t2 * SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_K * x * x);
    }
    case TSR_UNARY_SILU: {
      double s = sigmoid(x);
      return s * (1.0 + x * sigmoid(-x));
    }
    case TSR_UNARY_LEAKY_RELU: return x > 0 ? 1.0 : alpha;
    case TSR_UNARY_ELU: return x > 0 ? 1.0 : alpha * exp(x);
    case TSR_UNARY_LOG1P: return 1.0 / (1.0 + x);
    case TSR_UNARY_EXPM1: return exp(x);
    case TSR_UNARY_ERF: return TWO_OVER_SQRT_PI * exp(-x * x);
    default: return NAN;
  }
}

int tsr_oracle_unary_has_backward(tsr_unary_fn_t fn) {
  switch (fn) {
    case TSR_UNARY_SIGN:
    case TSR_UNARY_FLOOR:
    case TSR_UNARY_CEIL:
    case TSR_UNARY_ROUND:
    case TSR_UNARY_LOGICAL_NOT:
      return 0;
    default:
      return fn >= 0 && fn < TSR_UNARY_FN_COUNT;
  }
}

int tsr_oracle_unary_accepts(tsr_unary_fn_t fn, tsr_dtype_t dtype) {
  if (fn < 0 || fn >= TSR_UNARY_FN_COUNT) return 0;
  if (fn == TSR_UNARY_LOGICAL_NOT) return dtype == TSR_BOOL;
  if (tsr_oracle_dtype_is_float(dtype)) return 1;
  if (tsr_oracle_dtype_is_int(dtype)) {
    return fn == TSR_UNARY_NEG || fn == TSR_UNARY_ABS || fn == TSR_UNARY_SQUARE ||
           fn == TSR_UNARY_RELU || fn == TSR_UNARY_SIGN;
  }
  return 0;
}

// Functions whose result docs/abi.md 10.1 declares exact.
static int unary_is_exact(tsr_unary_fn_t fn) {
  switch (fn) {
    case TSR_UNARY_NEG:
    case TSR_UNARY_ABS:
    case TSR_UNARY_SQUARE:
    case TSR_UNARY_RELU:
    case TSR_UNARY_SIGN:
    case TSR_UNARY_FLOOR:
    case TSR_UNARY_CEIL:
    case TSR_UNARY_ROUND:
    case TSR_UNARY_SQRT:
    case TSR_UNARY_LOGICAL_NOT:
      return 1;
    default:
      return 0;
  }
}

// Magnitude of the intermediate values whose rounding reaches f(x) with a
// factor near 1, beyond |f(x)| itself: the cancellations of the usual
// formulas (1 + erf, 1 + tanh, alpha * (e^x - 1)) that a correct plugin may
// use.
static double unary_forward_magnitude(tsr_unary_fn_t fn, double x, double alpha) {
  double f = fabs(tsr_oracle_unary_value(fn, x, alpha));
  switch (fn) {
    case TSR_UNARY_LOG: return f + 1.0;
    case TSR_UNARY_SIN:
    case TSR_UNARY_COS: return f + 1.0;
    case TSR_UNARY_GELU: return f + 0.5 * fabs(x) * fabs(erf(x * SQRT1_2));
    case TSR_UNARY_GELU_TANH: {
      double u = gelu_tanh_u(x);
      double t = tanh(u);
      return f + 0.5 * fabs(x) * fabs(t) + 1.5 * fabs(x) * (1.0 - t * t) * fabs(u);
    }
    case TSR_UNARY_ELU: return x > 0 ? f : f + fabs(alpha) * exp(x);
    default: return f;
  }
}

// The same for f'(x) in UNARY_BACKWARD.
static double unary_backward_magnitude(tsr_unary_fn_t fn, double x, double alpha) {
  double d = fabs(tsr_oracle_unary_derivative(fn, x, alpha));
  double ax = fabs(x);
  switch (fn) {
    case TSR_UNARY_EXP:
    case TSR_UNARY_EXPM1: return exp(x);
    case TSR_UNARY_SQRT:
    case TSR_UNARY_RECIPROCAL: return 2 * d;
    case TSR_UNARY_RSQRT: return 3 * d;
    case TSR_UNARY_SIN: return fabs(cos(x)) + ldexp(1.0, -20) * ax;
    case TSR_UNARY_COS: return fabs(sin(x)) + ldexp(1.0, -20) * ax;
    case TSR_UNARY_TANH: {
      double t = tanh(x);
      return 1.0 + t * t;
    }
    case TSR_UNARY_SIGMOID: {
      double s = sigmoid(x);
      return s + s * s;
    }
    case TSR_UNARY_GELU:
      return normal_cdf(x) + ax * INV_SQRT_2PI * exp(-0.5 * x * x) + 0.5 * (1 + fabs(erf(x * SQRT1_2)));
    case TSR_UNARY_GELU_TANH: {
      double t = tanh(gelu_tanh_u(x));
      return 0.5 * (1 + fabs(t)) +
             ax * (1 + t * t) * SQRT_2_OVER_PI * (1 + 3 * GELU_K * x * x) * (1 + fabs(gelu_tanh_u(x)));
    }
    case TSR_UNARY_SILU: {
      double s = sigmoid(x);
      return s * (1 + ax * (1 + s)) + d;
    }
    case TSR_UNARY_LEAKY_RELU: return fabs(alpha) > 1 ? fabs(alpha) : 1.0;
    case TSR_UNARY_ELU: return x > 0 ? 1.0 : fabs(alpha) * exp(x);
    default: return d;
  }
}

// |x| * |f''(x)|, the error f'(x) picks up when x is perturbed relatively by
// one rounding; estimated by a central difference of the oracle's f'.
static double unary_derivative_conditioning(tsr_unary_fn_t fn, double x, double alpha) {
  double h = 1e-5 * (fabs(x) > 1 ? fabs(x) : 1.0);
  double up = tsr_oracle_unary_derivative(fn, x + h, alpha);
  double down = tsr_oracle_unary_derivative(fn, x - h, alpha);
  double c = fabs(x) * fabs(up - down) / (2 * h);
  return isfinite(c) ? c : 0.0;
}

int64_t tsr_oracle_unary_int(tsr_unary_fn_t fn, int64_t x, tsr_dtype_t dtype) {
  switch (fn) {
    case TSR_UNARY_NEG: return tsr_oracle_wrap((int64_t)(0 - (uint64_t)x), dtype);
    case TSR_UNARY_ABS: return x < 0 ? tsr_oracle_wrap((int64_t)(0 - (uint64_t)x), dtype) : x;
    case TSR_UNARY_SQUARE: return tsr_oracle_wrap((int64_t)((uint64_t)x * (uint64_t)x), dtype);
    case TSR_UNARY_RELU: return x > 0 ? x : 0;
    case TSR_UNARY_SIGN: return (x > 0) - (x < 0);
    case TSR_UNARY_LOGICAL_NOT: return x == 0;
    default: return 0;
  }
}

static tsr_status unary_compute(tsr_oracle_call *call) {
  const tsr_unary_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *x = &call->inputs[0];
  tsr_oracle_tensor *out = &call->outputs[0];
  if (!tsr_oracle_unary_accepts(attrs->fn, out->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "unary fn %d does not take %s",
                           (int)attrs->fn, tsr_oracle_dtype_name(out->dtype));
  }
  double alpha = tsr_oracle_attr(attrs->alpha, out->dtype);
  if (out->iv != NULL) {
    tsr_oracle_mark(out, TSR_ORACLE_EXACT);
    for (int64_t i = 0; i < out->numel; ++i) {
      tsr_oracle_tensor_set(out, i, 0, tsr_oracle_unary_int(attrs->fn, x->iv[i], out->dtype));
    }
    return TSR_OK;
  }
  int exact = unary_is_exact(attrs->fn);
  tsr_oracle_mark(out, exact ? TSR_ORACLE_EXACT : TSR_ORACLE_TOLERANCE);
  for (int64_t i = 0; i < out->numel; ++i) {
    double xi = x->v[i];
    out->v[i] = tsr_oracle_unary_value(attrs->fn, xi, alpha);
    if (!exact) {
      double cond = fabs(xi * tsr_oracle_unary_derivative(attrs->fn, xi, alpha));
      double b = TSR_ORACLE_FN_SLACK * (unary_forward_magnitude(attrs->fn, xi, alpha) +
                                        (isfinite(cond) ? cond : 0.0));
      out->bound[i] = isfinite(b) ? b : 0.0;
    }
  }
  return TSR_OK;
}

static tsr_status unary_backward_compute(tsr_oracle_call *call) {
  const tsr_unary_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *dy = &call->inputs[0];
  const tsr_oracle_tensor *x = &call->inputs[1];
  tsr_oracle_tensor *dx = &call->outputs[0];
  if (!tsr_oracle_dtype_is_float(dx->dtype) || !tsr_oracle_unary_has_backward(attrs->fn)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "unary_backward of fn %d on %s",
                           (int)attrs->fn, tsr_oracle_dtype_name(dx->dtype));
  }
  double alpha = tsr_oracle_attr(attrs->alpha, dx->dtype);
  tsr_oracle_mark(dx, TSR_ORACLE_TOLERANCE);
  for (int64_t i = 0; i < dx->numel; ++i) {
    double xi = x->v[i];
    double g = dy->v[i];
    dx->v[i] = g * tsr_oracle_unary_derivative(attrs->fn, xi, alpha);
    double b = TSR_ORACLE_FN_SLACK * fabs(g) *
               (unary_backward_magnitude(attrs->fn, xi, alpha) +
                unary_derivative_conditioning(attrs->fn, xi, alpha));
    dx->bound[i] = isfinite(b) ? b : 0.0;
  }
  return TSR_OK;
}

int tsr_oracle_binary_accepts(tsr_binary_fn_t fn, tsr_dtype_t dtype) {
  if (fn == TSR_BINARY_LOGICAL_AND || fn == TSR_BINARY_LOGICAL_OR || fn == TSR_BINARY_LOGICAL_XOR) {
    return dtype == TSR_BOOL;
  }
  if (fn == TSR_BINARY_POW) return tsr_oracle_dtype_is_float(dtype);
  if (fn < 0 || fn >= TSR_BINARY_FN_COUNT) return 0;
  return tsr_oracle_dtype_is_float(dtype) || tsr_oracle_dtype_is_int(dtype);
}

double tsr_oracle_binary_value(tsr_binary_fn_t fn, double a, double b, double alpha) {
  switch (fn) {
    case TSR_BINARY_ADD: return a + alpha * b;
    case TSR_BINARY_SUB: return a - alpha * b;
    case TSR_BINARY_MUL: return a * b;
    case TSR_BINARY_DIV: return a / b;
    case TSR_BINARY_MAXIMUM: return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
    case TSR_BINARY_MINIMUM: return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
    case TSR_BINARY_POW: return pow(a, b);
    case TSR_BINARY_LOGICAL_AND: return (a != 0) && (b != 0);
    case TSR_BINARY_LOGICAL_OR: return (a != 0) || (b != 0);
    case TSR_BINARY_LOGICAL_XOR: return (a != 0) != (b != 0);
    default: return NAN;
  }
}

int64_t tsr_oracle_binary_int(tsr_binary_fn_t fn, int64_t a, int64_t b, int64_t alpha,
                              tsr_dtype_t dtype) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b, ual = (uint64_t)alpha;
  int64_t min = dtype == TSR_INT32 ? INT32_MIN : INT64_MIN;
  switch (fn) {
    case TSR_BINARY_ADD: return tsr_oracle_wrap((int64_t)(ua + ual * ub), dtype);
    case TSR_BINARY_SUB: return tsr_oracle_wrap((int64_t)(ua - ual * ub), dtype);
    case TSR_BINARY_MUL: return tsr_oracle_wrap((int64_t)(ua * ub), dtype);
    case TSR_BINARY_DIV:
      if (b == 0) return 0;
      if (a == min && b == -1) return min;
      return a / b;  // C division truncates toward zero
    case TSR_BINARY_MAXIMUM: return a > b ? a : b;
    case TSR_BINARY_MINIMUM: return a < b ? a : b;
    case TSR_BINARY_LOGICAL_AND: return (a != 0) && (b != 0);
    case TSR_BINARY_LOGICAL_OR: return (a != 0) || (b != 0);
    case TSR_BINARY_LOGICAL_XOR: return (a != 0) != (b != 0);
    default: return 0;
  }
}

static tsr_status binary_compute(tsr_oracle_call *call) {
  const tsr_binary_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *a = &call->inputs[0];
  const tsr_oracle_tensor *b = &call->inputs[1];
  tsr_oracle_tensor *out = &call->outputs[0];
  tsr_binary_fn_t fn = attrs->fn;
  if (!tsr_oracle_binary_accepts(fn, out->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "binary fn %d does not take %s", (int)fn,
                           tsr_oracle_dtype_name(out->dtype));
  }
  if (out->iv != NULL) {
    if (tsr_oracle_dtype_is_int(out->dtype) && attrs->alpha != trunc(attrs->alpha)) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "binary: int alpha %g is not integral",
                             attrs->alpha);
    }
    double alpha_v;
    int64_t alpha_i = 0;
    tsr_oracle_cast_double(attrs->alpha, out->dtype, &alpha_v, &alpha_i);
    tsr_oracle_mark(out, TSR_ORACLE_EXACT);
    for (int64_t i = 0; i < out->numel; ++i) {
      tsr_oracle_tensor_set(out, i, 0,
                            tsr_oracle_binary_int(fn, a->iv[i], b->iv[i], alpha_i, out->dtype));
    }
    return TSR_OK;
  }
  double alpha = tsr_oracle_attr(attrs->alpha, out->dtype);
  int uses_alpha = fn == TSR_BINARY_ADD || fn == TSR_BINARY_SUB;
  int exact = fn != TSR_BINARY_POW && !(uses_alpha && alpha != 1.0);
  tsr_oracle_mark(out, exact ? TSR_ORACLE_EXACT : TSR_ORACLE_TOLERANCE);
  for (int64_t i = 0; i < out->numel; ++i) {
    double x = a->v[i], y = b->v[i];
    double r = tsr_oracle_binary_value(fn, x, y, alpha);
    out->v[i] = r;
    if (!exact) {
      double bnd;
      if (fn == TSR_BINARY_POW) {
        double lg = x != 0 && isfinite(x) ? fabs(log(fabs(x))) : 0.0;
        bnd = TSR_ORACLE_FN_SLACK * fabs(r) * (1.0 + fabs(y) * lg + fabs(y));
      } else {
        // alpha * b rounded, then the add rounded (or one fused rounding).
        bnd = 2.0 * (fabs(x) + fabs(alpha * y)) + fabs(r);
      }
      out->bound[i] = isfinite(bnd) ? bnd : 0.0;
    }
  }
  return TSR_OK;
}

int tsr_oracle_compare_value(tsr_compare_fn_t fn, double a, double b) {
  // C's comparisons already give false with a NaN, and true for !=.
  switch (fn) {
    case TSR_COMPARE_EQ: return a == b;
    case TSR_COMPARE_NE: return a != b;
    case TSR_COMPARE_LT: return a < b;
    case TSR_COMPARE_LE: return a <= b;
    case TSR_COMPARE_GT: return a > b;
    default: return a >= b;
  }
}

double tsr_oracle_clamp_value(double x, const tsr_clamp_attrs *attrs, tsr_dtype_t dtype) {
  double lo, hi;
  int64_t unused;
  tsr_oracle_cast_double(attrs->min, dtype, &lo, &unused);
  tsr_oracle_cast_double(attrs->max, dtype, &hi, &unused);
  double r = x;
  if (!isnan(r)) {
    if (attrs->has_min) r = isnan(lo) ? lo : (r < lo ? lo : r);
    if (attrs->has_max && !isnan(r)) r = isnan(hi) ? hi : (r > hi ? hi : r);
  }
  return r;
}

static tsr_status compare_compute(tsr_oracle_call *call) {
  const tsr_compare_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *a = &call->inputs[0];
  const tsr_oracle_tensor *b = &call->inputs[1];
  tsr_oracle_tensor *out = &call->outputs[0];
  if (attrs->fn < 0 || attrs->fn >= TSR_COMPARE_FN_COUNT) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "compare fn %d", (int)attrs->fn);
  }
  tsr_oracle_mark(out, TSR_ORACLE_EXACT);
  for (int64_t i = 0; i < out->numel; ++i) {
    int r;
    if (a->iv != NULL) {
      int64_t x = a->iv[i], y = b->iv[i];
      switch (attrs->fn) {
        case TSR_COMPARE_EQ: r = x == y; break;
        case TSR_COMPARE_NE: r = x != y; break;
        case TSR_COMPARE_LT: r = x < y; break;
        case TSR_COMPARE_LE: r = x <= y; break;
        case TSR_COMPARE_GT: r = x > y; break;
        default: r = x >= y; break;
      }
    } else {
      r = tsr_oracle_compare_value(attrs->fn, a->v[i], b->v[i]);
    }
    tsr_oracle_tensor_set(out, i, 0, r);
  }
  return TSR_OK;
}

static tsr_status clamp_compute(tsr_oracle_call *call) {
  const tsr_clamp_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *x = &call->inputs[0];
  tsr_oracle_tensor *out = &call->outputs[0];
  if (!tsr_oracle_dtype_is_float(out->dtype) && !tsr_oracle_dtype_is_int(out->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "clamp does not take %s",
                           tsr_oracle_dtype_name(out->dtype));
  }
  double lo_v = 0, hi_v = 0;
  int64_t lo_i = 0, hi_i = 0;
  tsr_oracle_cast_double(attrs->min, out->dtype, &lo_v, &lo_i);
  tsr_oracle_cast_double(attrs->max, out->dtype, &hi_v, &hi_i);
  tsr_oracle_mark(out, TSR_ORACLE_EXACT);
  for (int64_t i = 0; i < out->numel; ++i) {
    if (out->iv != NULL) {
      int64_t r = x->iv[i];
      if (attrs->has_min && r < lo_i) r = lo_i;
      if (attrs->has_max && r > hi_i) r = hi_i;
      tsr_oracle_tensor_set(out, i, 0, r);
    } else {
      out->v[i] = tsr_oracle_clamp_value(x->v[i], attrs, out->dtype);
    }
  }
  return TSR_OK;
}

static void value_copy(const tsr_oracle_tensor *src, int64_t i, tsr_oracle_tensor *dst,
                       int64_t j) {
  if (dst->iv != NULL) {
    tsr_oracle_tensor_set(dst, j, 0, src->iv != NULL ? src->iv[i] : (int64_t)src->v[i]);
  } else {
    dst->v[j] = src->v[i];
  }
}

tsr_status tsr_oracle_elementwise_compute(tsr_oracle_call *call) {
  tsr_oracle_tensor *out = &call->outputs[0];
  switch (call->op) {
    case TSR_OP_FILL: {
      const tsr_fill_attrs *attrs = call->attrs;
      double v;
      int64_t iv;
      tsr_oracle_cast_double(attrs->value, out->dtype, &v, &iv);
      tsr_oracle_mark(out, TSR_ORACLE_BITWISE);
      for (int64_t i = 0; i < out->numel; ++i) tsr_oracle_tensor_set(out, i, v, iv);
      return TSR_OK;
    }
    case TSR_OP_COPY:
      tsr_oracle_mark(out, TSR_ORACLE_BITWISE);
      for (int64_t i = 0; i < out->numel; ++i) value_copy(&call->inputs[0], i, out, i);
      return TSR_OK;
    case TSR_OP_CAST: {
      const tsr_oracle_tensor *x = &call->inputs[0];
      tsr_oracle_mark(out, TSR_ORACLE_BITWISE);
      for (int64_t i = 0; i < out->numel; ++i) {
        double v;
        int64_t iv;
        if (x->iv != NULL) {
          tsr_oracle_cast_int(x->iv[i], out->dtype, &v, &iv);
        } else {
          tsr_oracle_cast_double(x->v[i], out->dtype, &v, &iv);
        }
        tsr_oracle_tensor_set(out, i, v, iv);
      }
      return TSR_OK;
    }
    case TSR_OP_UNARY: return unary_compute(call);
    case TSR_OP_UNARY_BACKWARD: return unary_backward_compute(call);
    case TSR_OP_BINARY: return binary_compute(call);
    case TSR_OP_COMPARE: return compare_compute(call);
    case TSR_OP_WHERE: {
      const tsr_oracle_tensor *cond = &call->inputs[0];
      tsr_oracle_mark(out, TSR_ORACLE_BITWISE);
      for (int64_t i = 0; i < out->numel; ++i) {
        value_copy(cond->iv[i] != 0 ? &call->inputs[1] : &call->inputs[2], i, out, i);
      }
      return TSR_OK;
    }
    case TSR_OP_CLAMP: return clamp_compute(call);
    default:
      return tsr_oracle_fail(call, TSR_UNSUPPORTED, "not an elementwise op");
  }
}

// --- activations of fused epilogues (docs/abi.md 10.12) ---------------------

static tsr_unary_fn_t activation_fn(tsr_activation_t act) {
  switch (act) {
    case TSR_ACTIVATION_RELU: return TSR_UNARY_RELU;
    case TSR_ACTIVATION_GELU: return TSR_UNARY_GELU;
    case TSR_ACTIVATION_GELU_TANH: return TSR_UNARY_GELU_TANH;
    case TSR_ACTIVATION_SIGMOID: return TSR_UNARY_SIGMOID;
    case TSR_ACTIVATION_TANH: return TSR_UNARY_TANH;
    default: return -1;
  }
}

double tsr_oracle_activation_value(tsr_activation_t act, double v) {
  tsr_unary_fn_t fn = activation_fn(act);
  return fn < 0 ? v : tsr_oracle_unary_value(fn, v, 0);
}

double tsr_oracle_activation_bound(tsr_activation_t act, double v, double bound_v) {
  tsr_unary_fn_t fn = activation_fn(act);
  if (fn < 0) return bound_v;
  // The error v carries, through the activation's slope (RELU's slope is
  // taken as 1 near its kink, where v's error may cross it) ...
  double slope = fabs(tsr_oracle_unary_derivative(fn, v, 0));
  if (fn == TSR_UNARY_RELU) slope = 1.0;
  double b = slope * bound_v;
  // ... plus evaluating the activation itself, as UNARY.
  if (fn != TSR_UNARY_RELU) {
    b += TSR_ORACLE_FN_SLACK * (unary_forward_magnitude(fn, v, 0) + fabs(v) * slope);
  }
  return isfinite(b) ? b : 0.0;
}
