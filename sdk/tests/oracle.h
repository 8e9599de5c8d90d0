// Float64 reference loops for the SDK op tests.
//
// Every expected value in sdk/tests is computed here, on the host, from the
// same data the device sees, with plain loops in double (int64 for exact
// integer results). Nothing here knows about Tessera's internals: views are
// described by their own (sizes, strides, offset) over a host array, so a view
// bug in the SDK cannot hide behind the same bug in the oracle.
#ifndef TESSERA_SDK_TESTS_ORACLE_H_
#define TESSERA_SDK_TESTS_ORACLE_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tessera/ops.h"

#define ORC_MAX_RANK TSR_MAX_RANK

static inline int64_t orc_numel(int32_t rank, const int64_t *sizes) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  return n;
}

// ---------------------------------------------------------------------------
// Strided views over a host array.

typedef struct orc_view {
  int32_t rank;
  int64_t sizes[ORC_MAX_RANK];
  int64_t strides[ORC_MAX_RANK];
  int64_t offset;
} orc_view;

static inline orc_view orc_view_contiguous(int32_t rank, const int64_t *sizes) {
  orc_view v;
  memset(&v, 0, sizeof(v));
  v.rank = rank;
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    v.sizes[d] = sizes[d];
    v.strides[d] = s;
    s *= sizes[d] > 0 ? sizes[d] : 1;
  }
  return v;
}

static inline orc_view orc_view_transpose(orc_view v, int32_t a, int32_t b) {
  int64_t t = v.sizes[a];
  v.sizes[a] = v.sizes[b];
  v.sizes[b] = t;
  t = v.strides[a];
  v.strides[a] = v.strides[b];
  v.strides[b] = t;
  return v;
}

static inline orc_view orc_view_permute(orc_view v, const int32_t *dims) {
  orc_view p = v;
  for (int32_t d = 0; d < v.rank; ++d) {
    p.sizes[d] = v.sizes[dims[d]];
    p.strides[d] = v.strides[dims[d]];
  }
  return p;
}

// start, end >= 0 and already clamped; step >= 1.
static inline orc_view orc_view_slice(orc_view v, int32_t dim, int64_t start, int64_t end,
                                      int64_t step) {
  int64_t n = end > start ? (end - start + step - 1) / step : 0;
  if (n > 0) v.offset += start * v.strides[dim];
  v.sizes[dim] = n;
  v.strides[dim] *= step;
  return v;
}

// Right-aligned broadcast to |rank|/|sizes| (stride 0 where it stretches).
static inline orc_view orc_view_expand(orc_view v, int32_t rank, const int64_t *sizes) {
  orc_view e;
  memset(&e, 0, sizeof(e));
  e.rank = rank;
  e.offset = v.offset;
  int32_t shift = rank - v.rank;
  for (int32_t d = 0; d < rank; ++d) {
    int32_t src = d - shift;
    e.sizes[d] = sizes[d];
    e.strides[d] = (src >= 0 && v.sizes[src] == sizes[d]) ? v.strides[src] : 0;
  }
  return e;
}

// Copies the view's elements in row-major order of its logical shape.
static inline void orc_view_gather(const orc_view *v, const double *base, double *out) {
  int64_t n = orc_numel(v->rank, v->sizes);
  int64_t idx[ORC_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = v->offset;
    for (int32_t d = 0; d < v->rank; ++d) off += idx[d] * v->strides[d];
    out[i] = base[off];
    for (int32_t d = v->rank - 1; d >= 0; --d) {
      if (++idx[d] < v->sizes[d]) break;
      idx[d] = 0;
    }
  }
}

// Writes row-major |values| through the view into |base|.
static inline void orc_view_scatter(const orc_view *v, double *base, const double *values) {
  int64_t n = orc_numel(v->rank, v->sizes);
  int64_t idx[ORC_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = v->offset;
    for (int32_t d = 0; d < v->rank; ++d) off += idx[d] * v->strides[d];
    base[off] = values[i];
    for (int32_t d = v->rank - 1; d >= 0; --d) {
      if (++idx[d] < v->sizes[d]) break;
      idx[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------
// Broadcasting.

// NumPy broadcast of two shapes; returns 0 when they do not broadcast.
static inline int orc_broadcast_shape(int32_t ra, const int64_t *sa, int32_t rb, const int64_t *sb,
                                      int32_t *out_rank, int64_t *out_sizes) {
  int32_t r = ra > rb ? ra : rb;
  for (int32_t d = 0; d < r; ++d) {
    int32_t da = d - (r - ra), db = d - (r - rb);
    int64_t x = da >= 0 ? sa[da] : 1, y = db >= 0 ? sb[db] : 1;
    if (x != y && x != 1 && y != 1) return 0;
    out_sizes[d] = x == 1 ? y : x;
  }
  *out_rank = r;
  return 1;
}

// Row-major index into an operand of shape (xr, xs) of the element that
// broadcasts to row-major element |lin| of the output shape (orank, os).
static inline int64_t orc_broadcast_index(int32_t xr, const int64_t *xs, int32_t orank,
                                          const int64_t *os, int64_t lin) {
  int64_t idx[ORC_MAX_RANK];
  for (int32_t d = orank - 1; d >= 0; --d) {
    idx[d] = os[d] ? lin % os[d] : 0;
    lin = os[d] ? lin / os[d] : 0;
  }
  int64_t off = 0, stride = 1;
  for (int32_t d = xr - 1; d >= 0; --d) {
    int32_t od = d + (orank - xr);
    int64_t i = xs[d] == 1 ? 0 : idx[od];
    off += i * stride;
    stride *= xs[d];
  }
  return off;
}

// ---------------------------------------------------------------------------
// Elementwise functions, float64.

static inline int orc_is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64;
}
static inline int orc_is_int(tsr_dtype_t dtype) {
  return dtype == TSR_INT32 || dtype == TSR_INT64;
}

static inline double orc_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline double orc_gelu_tanh_u(double x) {
  return sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
}
static inline double orc_phi(double x) { return exp(-0.5 * x * x) / sqrt(2.0 * M_PI); }
static inline double orc_Phi(double x) { return 0.5 * (1.0 + erf(x / sqrt(2.0))); }

static inline double orc_unary(tsr_unary_fn_t fn, double x, double alpha) {
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
    case TSR_UNARY_SIGMOID: return orc_sigmoid(x);
    case TSR_UNARY_RELU: return isnan(x) ? x : (x > 0 ? x : 0.0);
    case TSR_UNARY_GELU: return x * orc_Phi(x);
    case TSR_UNARY_GELU_TANH: return 0.5 * x * (1.0 + tanh(orc_gelu_tanh_u(x)));
    case TSR_UNARY_SILU: return x * orc_sigmoid(x);
    case TSR_UNARY_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case TSR_UNARY_ELU: return x > 0 ? x : alpha * (exp(x) - 1.0);
    case TSR_UNARY_SIGN: return isnan(x) ? x : (x > 0) - (x < 0);
    case TSR_UNARY_FLOOR: return floor(x);
    case TSR_UNARY_CEIL: return ceil(x);
    case TSR_UNARY_ROUND: return nearbyint(x);  // default rounding mode: half to even
    case TSR_UNARY_LOGICAL_NOT: return x == 0 ? 1.0 : 0.0;
    case TSR_UNARY_LOG1P: return log1p(x);
    case TSR_UNARY_EXPM1: return expm1(x);
    case TSR_UNARY_ERF: return erf(x);
    default: return NAN;
  }
}

// f'(x), analytic; NAN for functions without a backward.
static inline double orc_unary_derivative(tsr_unary_fn_t fn, double x, double alpha) {
  switch (fn) {
    case TSR_UNARY_NEG: return -1.0;
    case TSR_UNARY_ABS: return (x > 0) - (x < 0);
    case TSR_UNARY_EXP: return exp(x);
    case TSR_UNARY_LOG: return 1.0 / x;
    case TSR_UNARY_SQRT: return 0.5 / sqrt(x);
    case TSR_UNARY_RSQRT: return -0.5 / (x * sqrt(x));
    case TSR_UNARY_RECIPROCAL: return -1.0 / (x * x);
    case TSR_UNARY_SQUARE: return 2.0 * x;
    case TSR_UNARY_SIN: return cos(x);
    case TSR_UNARY_COS: return -sin(x);
    case TSR_UNARY_TANH: return 1.0 - tanh(x) * tanh(x);
    case TSR_UNARY_SIGMOID: return orc_sigmoid(x) * (1.0 - orc_sigmoid(x));
    case TSR_UNARY_RELU: return x > 0 ? 1.0 : 0.0;
    case TSR_UNARY_GELU: return orc_Phi(x) + x * orc_phi(x);
    case TSR_UNARY_GELU_TANH: {
      double t = tanh(orc_gelu_tanh_u(x));
      double du = sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
    }
    case TSR_UNARY_SILU: return orc_sigmoid(x) * (1.0 + x * (1.0 - orc_sigmoid(x)));
    case TSR_UNARY_LEAKY_RELU: return x > 0 ? 1.0 : alpha;
    case TSR_UNARY_ELU: return x > 0 ? 1.0 : alpha * exp(x);
    case TSR_UNARY_LOG1P: return 1.0 / (1.0 + x);
    case TSR_UNARY_EXPM1: return exp(x);
    case TSR_UNARY_ERF: return 2.0 / sqrt(M_PI) * exp(-x * x);
    default: return NAN;
  }
}

static inline int orc_unary_has_backward(tsr_unary_fn_t fn) {
  return !(fn == TSR_UNARY_SIGN || fn == TSR_UNARY_FLOOR || fn == TSR_UNARY_CEIL ||
           fn == TSR_UNARY_ROUND || fn == TSR_UNARY_LOGICAL_NOT);
}

// Which dtypes ops.h allows for |fn| (of f32 f64 i32 i64 bool).
static inline int orc_unary_allows(tsr_unary_fn_t fn, tsr_dtype_t dtype) {
  if (fn == TSR_UNARY_LOGICAL_NOT) return dtype == TSR_BOOL;
  if (orc_is_float(dtype)) return 1;
  if (orc_is_int(dtype)) {
    return fn == TSR_UNARY_NEG || fn == TSR_UNARY_ABS || fn == TSR_UNARY_SQUARE ||
           fn == TSR_UNARY_RELU || fn == TSR_UNARY_SIGN;
  }
  return 0;
}

// Exact integer unary functions (inputs small enough not to overflow).
static inline int64_t orc_unary_int(tsr_unary_fn_t fn, int64_t x) {
  switch (fn) {
    case TSR_UNARY_NEG: return -x;
    case TSR_UNARY_ABS: return x < 0 ? -x : x;
    case TSR_UNARY_SQUARE: return x * x;
    case TSR_UNARY_RELU: return x > 0 ? x : 0;
    case TSR_UNARY_SIGN: return (x > 0) - (x < 0);
    default: return 0;
  }
}

static inline double orc_binary(tsr_binary_fn_t fn, double a, double b, double alpha) {
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

// Integer binary ops, exact; DIV truncates toward zero and x / 0 is 0.
static inline int64_t orc_binary_int(tsr_binary_fn_t fn, int64_t a, int64_t b, int64_t alpha) {
  switch (fn) {
    case TSR_BINARY_ADD: return a + alpha * b;
    case TSR_BINARY_SUB: return a - alpha * b;
    case TSR_BINARY_MUL: return a * b;
    case TSR_BINARY_DIV: return b == 0 ? 0 : a / b;
    case TSR_BINARY_MAXIMUM: return a > b ? a : b;
    case TSR_BINARY_MINIMUM: return a < b ? a : b;
    default: return 0;
  }
}

static inline int orc_binary_allows(tsr_binary_fn_t fn, tsr_dtype_t dtype) {
  if (fn >= TSR_BINARY_LOGICAL_AND) return dtype == TSR_BOOL;
  if (fn == TSR_BINARY_POW) return orc_is_float(dtype);
  return orc_is_float(dtype) || orc_is_int(dtype);
}

static inline int orc_compare(tsr_compare_fn_t fn, double a, double b) {
  switch (fn) {
    case TSR_COMPARE_EQ: return a == b;
    case TSR_COMPARE_NE: return a != b;
    case TSR_COMPARE_LT: return a < b;
    case TSR_COMPARE_LE: return a <= b;
    case TSR_COMPARE_GT: return a > b;
    case TSR_COMPARE_GE: return a >= b;
    default: return -1;
  }
}

static inline double orc_activation(tsr_activation_t act, double x) {
  switch (act) {
    case TSR_ACTIVATION_NONE: return x;
    case TSR_ACTIVATION_RELU: return x > 0 ? x : 0.0;
    case TSR_ACTIVATION_GELU: return x * orc_Phi(x);
    case TSR_ACTIVATION_GELU_TANH: return 0.5 * x * (1.0 + tanh(orc_gelu_tanh_u(x)));
    case TSR_ACTIVATION_SIGMOID: return orc_sigmoid(x);
    case TSR_ACTIVATION_TANH: return tanh(x);
    default: return NAN;
  }
}

// ---------------------------------------------------------------------------
// CAST of one element, on raw typed storage, exactly as ops.h states.

static inline void orc_cast_element(tsr_dtype_t from, const void *src, tsr_dtype_t to, void *dst) {
  int from_float = orc_is_float(from);
  double f = 0;
  int64_t i = 0;
  switch (from) {
    case TSR_FLOAT32: f = *(const float *)src; break;
    case TSR_FLOAT64: f = *(const double *)src; break;
    case TSR_INT32: i = *(const int32_t *)src; break;
    case TSR_INT64: i = *(const int64_t *)src; break;
    case TSR_BOOL: i = *(const uint8_t *)src != 0; break;
    default: break;
  }
  switch (to) {
    case TSR_FLOAT32:
      *(float *)dst = from_float ? (float)f : (float)i;
      break;
    case TSR_FLOAT64:
      *(double *)dst = from_float ? f : (double)i;
      break;
    case TSR_BOOL:
      *(uint8_t *)dst = from_float ? (f != 0) : (i != 0);
      break;
    case TSR_INT32:
    case TSR_INT64: {
      int64_t lo = to == TSR_INT32 ? INT32_MIN : INT64_MIN;
      int64_t hi = to == TSR_INT32 ? INT32_MAX : INT64_MAX;
      int64_t v;
      if (from_float) {
        // Truncate toward zero, saturate at [lo, hi], NaN -> 0. hi + 1 is a
        // power of two, exact in double.
        double t = trunc(f);
        double limit = to == TSR_INT32 ? 2147483648.0 : 9223372036854775808.0;
        if (isnan(f)) v = 0;
        else if (t >= limit) v = hi;
        else if (t < -limit) v = lo;
        else v = (int64_t)t;
      } else {
        v = i;  // callers keep int -> int values in range
      }
      if (v > hi) v = hi;
      if (v < lo) v = lo;
      if (to == TSR_INT32) *(int32_t *)dst = (int32_t)v;
      else *(int64_t *)dst = v;
      break;
    }
    default:
      break;
  }
}

// ---------------------------------------------------------------------------
// Reductions over a contiguous row-major x, into the keepdim-shaped out.

typedef struct orc_reduce_result {
  double value;
  double abs_sum;  // sum of |x| over the reduced elements, for tolerances
  int64_t count;
} orc_reduce_result;

// Fills out[] (keepdim shape, row-major) and abs_sum[], count per element.
static inline void orc_reduce(tsr_reduce_fn_t fn, int32_t rank, const int64_t *sizes,
                              uint32_t mask, const double *x, double *out, double *abs_sum,
                              int64_t *count) {
  int64_t osz[ORC_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) osz[d] = (mask & (1u << d)) ? 1 : sizes[d];
  int64_t on = orc_numel(rank, osz);
  for (int64_t o = 0; o < on; ++o) {
    out[o] = fn == TSR_REDUCE_PROD ? 1.0
           : fn == TSR_REDUCE_MAX  ? -INFINITY
           : fn == TSR_REDUCE_MIN  ? INFINITY
                                   : 0.0;
    abs_sum[o] = 0;
    count[o] = 0;
  }
  int64_t n = orc_numel(rank, sizes);
  int64_t idx[ORC_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t o = 0;
    for (int32_t d = 0; d < rank; ++d) o = o * osz[d] + ((mask & (1u << d)) ? 0 : idx[d]);
    double v = x[i];
    switch (fn) {
      case TSR_REDUCE_SUM:
      case TSR_REDUCE_MEAN: out[o] += v; break;
      case TSR_REDUCE_PROD: out[o] *= v; break;
      case TSR_REDUCE_MAX: if (isnan(v) || v > out[o]) out[o] = isnan(out[o]) ? out[o] : v; break;
      case TSR_REDUCE_MIN: if (isnan(v) || v < out[o]) out[o] = isnan(out[o]) ? out[o] : v; break;
      default: break;
    }
    abs_sum[o] += fabs(v);
    count[o] += 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  if (fn == TSR_REDUCE_MEAN) {
    for (int64_t o = 0; o < on; ++o) out[o] = count[o] ? out[o] / (double)count[o] : NAN;
  }
}

// Integer SUM, PROD, MAX, MIN, exact, wrapping modulo 2^|bits| for SUM and
// PROD (computed in uint64, then narrowed).
static inline int64_t orc_wrap(uint64_t v, int bits) {
  if (bits == 64) return (int64_t)v;
  uint32_t low = (uint32_t)v;
  return low >= 0x80000000u ? (int64_t)low - 4294967296LL : (int64_t)low;
}

static inline void orc_reduce_int(tsr_reduce_fn_t fn, int bits, int32_t rank, const int64_t *sizes,
                                  uint32_t mask, const int64_t *x, int64_t *out) {
  int64_t osz[ORC_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) osz[d] = (mask & (1u << d)) ? 1 : sizes[d];
  int64_t on = orc_numel(rank, osz);
  uint64_t acc[4096];
  int seen[4096];
  for (int64_t o = 0; o < on && o < 4096; ++o) {
    acc[o] = fn == TSR_REDUCE_PROD ? 1u : 0u;
    seen[o] = 0;
  }
  int64_t n = orc_numel(rank, sizes);
  int64_t idx[ORC_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t o = 0;
    for (int32_t d = 0; d < rank; ++d) o = o * osz[d] + ((mask & (1u << d)) ? 0 : idx[d]);
    int64_t v = x[i];
    switch (fn) {
      case TSR_REDUCE_SUM: acc[o] += (uint64_t)v; break;
      case TSR_REDUCE_PROD: acc[o] *= (uint64_t)v; break;
      case TSR_REDUCE_MAX:
        if (!seen[o] || v > (int64_t)acc[o]) acc[o] = (uint64_t)v;
        break;
      case TSR_REDUCE_MIN:
        if (!seen[o] || v < (int64_t)acc[o]) acc[o] = (uint64_t)v;
        break;
      default: break;
    }
    seen[o] = 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  for (int64_t o = 0; o < on; ++o) out[o] = orc_wrap(acc[o], bits);
}

// ARG_REDUCE along |axis| of contiguous x: first max/min, first NaN wins.
static inline void orc_arg_reduce(tsr_arg_reduce_fn_t fn, int32_t rank, const int64_t *sizes,
                                  int32_t axis, const double *x, int64_t *out) {
  int64_t outer = 1, inner = 1, n = sizes[axis];
  for (int32_t d = 0; d < axis; ++d) outer *= sizes[d];
  for (int32_t d = axis + 1; d < rank; ++d) inner *= sizes[d];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      double bv = x[(o * n) * inner + i];
      for (int64_t k = 1; k < n && !isnan(bv); ++k) {
        double v = x[(o * n + k) * inner + i];
        if (isnan(v) || (fn == TSR_ARG_REDUCE_ARGMAX ? v > bv : v < bv)) {
          best = k;
          bv = v;
        }
      }
      out[o * inner + i] = best;
    }
  }
}

// ---------------------------------------------------------------------------
// Batched matmul with NumPy batch broadcasting: a [..., M, K] @ b [..., K, N]
// (both contiguous, ranks >= 2) -> out [..., M, N] of rank orank. bias (or
// NULL) is contiguous with shape (br, bs), broadcast to out. abs_out gets
// sum_k |a b| + |bias| per element, for tolerances.
static inline void orc_matmul(int32_t ra, const int64_t *sa, const double *a, int32_t rb,
                              const int64_t *sb, const double *b, int32_t br, const int64_t *bs,
                              const double *bias, tsr_activation_t act, int32_t orank,
                              const int64_t *os, double *out, double *abs_out) {
  int64_t m = sa[ra - 2], k = sa[ra - 1], n = sb[rb - 1];
  int64_t total = orc_numel(orank, os);
  int64_t idx[ORC_MAX_RANK];
  for (int64_t lin = 0; lin < total; ++lin) {
    int64_t rem = lin;
    for (int32_t d = orank - 1; d >= 0; --d) {
      idx[d] = rem % os[d];
      rem /= os[d];
    }
    // Batch offsets of a and b (their batch dims are right-aligned to out's).
    int64_t a_off = 0, b_off = 0, stride = m * k;
    for (int32_t d = ra - 3; d >= 0; --d) {
      int32_t od = d + (orank - ra);
      a_off += (sa[d] == 1 ? 0 : idx[od]) * stride;
      stride *= sa[d];
    }
    stride = k * n;
    for (int32_t d = rb - 3; d >= 0; --d) {
      int32_t od = d + (orank - rb);
      b_off += (sb[d] == 1 ? 0 : idx[od]) * stride;
      stride *= sb[d];
    }
    int64_t i = idx[orank - 2], j = idx[orank - 1];
    double acc = 0, mag = 0;
    for (int64_t p = 0; p < k; ++p) {
      double t = a[a_off + i * k + p] * b[b_off + p * n + j];
      acc += t;
      mag += fabs(t);
    }
    if (bias != NULL) {
      double bv = bias[orc_broadcast_index(br, bs, orank, os, lin)];
      acc += bv;
      mag += fabs(bv);
    }
    out[lin] = orc_activation(act, acc);
    abs_out[lin] = mag;
  }
}

#endif  // TESSERA_SDK_TESTS_ORACLE_H_
