// Float64 references for the SDK op tests.
//
// Every expected value in sdk/tests is computed on the host, from the same
// data the device sees, in double (int64 for exact integer results). The
// functions and loops themselves are the conformance oracle's
// (conformance/oracle, target tsr_oracle): this header adds what the SDK's
// tests need around them, the strided views, broadcasting and NumPy-style
// shapes. Nothing here knows about Tessera's internals: views are described
// by their own (sizes, strides, offset) over a host array, so a view bug in
// the SDK cannot hide behind the same bug in the oracle.
#ifndef TESSERA_SDK_TESTS_ORACLE_H_
#define TESSERA_SDK_TESTS_ORACLE_H_

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/oracle.h"  // conformance/oracle/oracle.h, not this file
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

// The scalar functions are the oracle's; these names stay for the tests.
static inline double orc_unary(tsr_unary_fn_t fn, double x, double alpha) {
  return tsr_oracle_unary_value(fn, x, alpha);
}

// f'(x), analytic; NAN for functions without a backward.
static inline double orc_unary_derivative(tsr_unary_fn_t fn, double x, double alpha) {
  return tsr_oracle_unary_derivative(fn, x, alpha);
}

static inline int orc_unary_has_backward(tsr_unary_fn_t fn) {
  return tsr_oracle_unary_has_backward(fn);
}

// Which dtypes ops.h allows for |fn|.
static inline int orc_unary_allows(tsr_unary_fn_t fn, tsr_dtype_t dtype) {
  return tsr_oracle_unary_accepts(fn, dtype);
}

// Exact integer unary functions (inputs small enough not to overflow).
static inline int64_t orc_unary_int(tsr_unary_fn_t fn, int64_t x) {
  return tsr_oracle_unary_int(fn, x, TSR_INT64);
}

static inline double orc_binary(tsr_binary_fn_t fn, double a, double b, double alpha) {
  return tsr_oracle_binary_value(fn, a, b, alpha);
}

// Integer binary ops, exact; DIV truncates toward zero and x / 0 is 0.
static inline int64_t orc_binary_int(tsr_binary_fn_t fn, int64_t a, int64_t b, int64_t alpha) {
  return tsr_oracle_binary_int(fn, a, b, alpha, TSR_INT64);
}

static inline int orc_binary_allows(tsr_binary_fn_t fn, tsr_dtype_t dtype) {
  return tsr_oracle_binary_accepts(fn, dtype);
}

static inline int orc_compare(tsr_compare_fn_t fn, double a, double b) {
  return fn >= 0 && fn < TSR_COMPARE_FN_COUNT ? tsr_oracle_compare_value(fn, a, b) : -1;
}

static inline double orc_activation(tsr_activation_t act, double x) {
  return tsr_oracle_activation_value(act, x);
}

// ---------------------------------------------------------------------------
// CAST of one element, on raw typed storage, exactly as ops.h states.

static inline void orc_cast_element(tsr_dtype_t from, const void *src, tsr_dtype_t to, void *dst) {
  double v, cast_v;
  int64_t iv, cast_iv;
  tsr_oracle_element_load(src, from, &v, &iv);
  if (tsr_oracle_dtype_is_float(from)) {
    tsr_oracle_cast_double(v, to, &cast_v, &cast_iv);
  } else {
    tsr_oracle_cast_int(iv, to, &cast_v, &cast_iv);
  }
  tsr_oracle_element_store(dst, to, cast_v, cast_iv);
}

// ---------------------------------------------------------------------------
// Reductions over a contiguous row-major x, into the keepdim-shaped out: the
// oracle's REDUCE and ARG_REDUCE. Where the oracle refuses (MAX or MIN over
// an empty axis) every output is NaN, which no tensor matches.

// Fills out[] (keepdim shape, row-major), and abs_sum[] (the sum of |x|
// over the reduced elements, for tolerances) and count[] per element.
static inline void orc_reduce(tsr_reduce_fn_t fn, int32_t rank, const int64_t *sizes,
                              uint32_t mask, const double *x, double *out, double *abs_sum,
                              int64_t *count) {
  int64_t osz[ORC_MAX_RANK], reduced = 1;
  for (int32_t d = 0; d < rank; ++d) {
    osz[d] = (mask & (1u << d)) ? 1 : sizes[d];
    if (mask & (1u << d)) reduced *= sizes[d];
  }
  int64_t n = orc_numel(rank, sizes), on = orc_numel(rank, osz);
  double *ax = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  tsr_reduce_attrs attrs = {sizeof(attrs), fn, mask};
  tsr_oracle_tensor in = tsr_oracle_tensor_over(TSR_FLOAT64, rank, sizes, (double *)x);
  tsr_oracle_tensor y = tsr_oracle_tensor_over(TSR_FLOAT64, rank, osz, out);
  int ok = ax != NULL && tsr_oracle_compute_values(TSR_OP_REDUCE, &attrs, 1, &in, 1, &y) == TSR_OK;
  if (ok) {
    for (int64_t i = 0; i < n; ++i) ax[i] = fabs(x[i]);
    attrs.fn = TSR_REDUCE_SUM;
    in.v = ax;
    y.v = abs_sum;
    ok = tsr_oracle_compute_values(TSR_OP_REDUCE, &attrs, 1, &in, 1, &y) == TSR_OK;
  }
  for (int64_t o = 0; o < on; ++o) {
    if (!ok) out[o] = abs_sum[o] = NAN;
    count[o] = reduced;
  }
  free(ax);
}

// Integer SUM, PROD, MAX, MIN, exact, wrapping modulo 2^|bits| for SUM and
// PROD. Where the oracle refuses, every output is INT64_MIN.
static inline void orc_reduce_int(tsr_reduce_fn_t fn, int bits, int32_t rank, const int64_t *sizes,
                                  uint32_t mask, const int64_t *x, int64_t *out) {
  tsr_dtype_t dtype = bits == 32 ? TSR_INT32 : TSR_INT64;
  int64_t osz[ORC_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) osz[d] = (mask & (1u << d)) ? 1 : sizes[d];
  tsr_reduce_attrs attrs = {sizeof(attrs), fn, mask};
  tsr_oracle_tensor in, y;
  memset(&in, 0, sizeof(in));
  memset(&y, 0, sizeof(y));
  tsr_oracle_call call = {TSR_OP_REDUCE, &attrs, 1, 1, &in, &y, {0}};
  int ok = tsr_oracle_tensor_create(dtype, rank, sizes, &in) == 0 &&
           tsr_oracle_tensor_create(dtype, rank, osz, &y) == 0;
  for (int64_t i = 0; ok && i < in.numel; ++i) tsr_oracle_tensor_set(&in, i, 0, x[i]);
  ok = ok && tsr_oracle_compute(&call) == TSR_OK;
  for (int64_t o = 0; o < orc_numel(rank, osz); ++o) out[o] = ok ? y.iv[o] : INT64_MIN;
  tsr_oracle_tensor_destroy(&in);
  tsr_oracle_tensor_destroy(&y);
}

// ARG_REDUCE along |axis| of contiguous x: first max/min, first NaN wins.
// Where the oracle refuses (an empty axis), every output is -1.
static inline void orc_arg_reduce(tsr_arg_reduce_fn_t fn, int32_t rank, const int64_t *sizes,
                                  int32_t axis, const double *x, int64_t *out) {
  int64_t osz[ORC_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) osz[d] = d == axis ? 1 : sizes[d];
  tsr_arg_reduce_attrs attrs = {sizeof(attrs), fn, axis};
  tsr_oracle_tensor in = tsr_oracle_tensor_over(TSR_FLOAT64, rank, sizes, (double *)x), y;
  tsr_oracle_call call = {TSR_OP_ARG_REDUCE, &attrs, 1, 1, &in, &y, {0}};
  int ok = tsr_oracle_tensor_create(TSR_INT64, rank, osz, &y) == 0 &&
           tsr_oracle_compute(&call) == TSR_OK;
  for (int64_t o = 0; o < orc_numel(rank, osz); ++o) out[o] = ok ? y.iv[o] : -1;
  tsr_oracle_tensor_destroy(&y);
}

// ---------------------------------------------------------------------------
// MATMUL and the CONV2D ops: the oracle's, on contiguous arrays. Each also
// gives, for tolerances, the sum of the magnitudes of every output element's
// terms: the same op on the operands' absolute values, without the
// activation. Where the oracle refuses, every output is NaN.

// |x| of shape (xr, xs) broadcast to (rank, sizes), row-major, in a new
// array (NULL when memory runs out), absolute values when |absolute|.
static inline double *orc_expand(int32_t xr, const int64_t *xs, const double *x, int32_t rank,
                                 const int64_t *sizes, int absolute) {
  int64_t n = orc_numel(rank, sizes);
  double *e = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; e != NULL && i < n; ++i) {
    double v = x[orc_broadcast_index(xr, xs, rank, sizes, i)];
    e[i] = absolute ? fabs(v) : v;
  }
  return e;
}

// out = act(alpha * a @ b + bias + beta * before) with NumPy batch
// broadcasting: a [..., M, K] @ b [..., K, N] (contiguous, ranks >= 2) ->
// out [..., M, N] of rank orank; bias (or NULL) contiguous with shape (br,
// bs), broadcast to out; |before| (out's shape, or NULL for zeros) is read
// where beta is not 0. |attrs| gives alpha, beta and the activation (its
// has_bias is bias != NULL), rounded to |dtype|'s compute type as a plugin
// rounds them. |pre| (or NULL) gets the value before the activation;
// |abs_out| (or NULL) |alpha| sum_k |a b| + |bias| + |beta before|.
static inline void orc_matmul_attrs(const tsr_matmul_attrs *attrs, tsr_dtype_t dtype, int32_t ra,
                                    const int64_t *sa, const double *a, int32_t rb,
                                    const int64_t *sb, const double *b, int32_t br,
                                    const int64_t *bs, const double *bias, const double *before,
                                    int32_t orank, const int64_t *os, double *out, double *pre,
                                    double *abs_out) {
  int64_t as[ORC_MAX_RANK], bsz[ORC_MAX_RANK], on = orc_numel(orank, os);
  memcpy(as, os, sizeof(int64_t) * (size_t)orank);
  memcpy(bsz, os, sizeof(int64_t) * (size_t)orank);
  as[orank - 1] = bsz[orank - 2] = sa[ra - 1];
  int ok = 1;
  for (int pass = 0; pass < (abs_out != NULL ? 2 : 1) && ok; ++pass) {
    double *y = pass ? abs_out : out;
    double *ea = orc_expand(ra, sa, a, orank, as, pass);
    double *eb = orc_expand(rb, sb, b, orank, bsz, pass);
    double *ebias = bias != NULL ? orc_expand(br, bs, bias, orank, os, pass) : NULL;
    for (int64_t i = 0; i < on; ++i) {
      y[i] = before == NULL ? 0.0 : pass ? fabs(before[i]) : before[i];
    }
    tsr_matmul_attrs linear = *attrs;
    linear.activation = TSR_ACTIVATION_NONE;
    linear.has_bias = bias != NULL;
    if (pass) linear.alpha = fabs(linear.alpha), linear.beta = fabs(linear.beta);
    tsr_oracle_tensor in[3] = {tsr_oracle_tensor_over(dtype, orank, as, ea),
                               tsr_oracle_tensor_over(dtype, orank, bsz, eb),
                               tsr_oracle_tensor_over(dtype, orank, os, ebias)};
    tsr_oracle_tensor t = tsr_oracle_tensor_over(dtype, orank, os, y);
    ok = ea != NULL && eb != NULL && (bias == NULL || ebias != NULL) &&
         tsr_oracle_compute_values(TSR_OP_MATMUL, &linear, bias != NULL ? 3 : 2, in, 1, &t) ==
             TSR_OK;
    free(ea);
    free(eb);
    free(ebias);
  }
  for (int64_t i = 0; i < on; ++i) {
    if (pre != NULL) pre[i] = ok ? out[i] : NAN;
    out[i] = ok ? tsr_oracle_activation_value(attrs->activation, out[i]) : NAN;
    if (abs_out != NULL && !ok) abs_out[i] = NAN;
  }
}

// orc_matmul_attrs with alpha 1, beta 0 and float64 attributes; abs_out
// gets sum_k |a b| + |bias|.
static inline void orc_matmul(int32_t ra, const int64_t *sa, const double *a, int32_t rb,
                              const int64_t *sb, const double *b, int32_t br, const int64_t *bs,
                              const double *bias, tsr_activation_t act, int32_t orank,
                              const int64_t *os, double *out, double *abs_out) {
  tsr_matmul_attrs attrs = {sizeof(attrs), 1.0, 0.0, act, bias != NULL};
  orc_matmul_attrs(&attrs, TSR_FLOAT64, ra, sa, a, rb, sb, b, br, bs, bias, NULL, orank, os, out,
                   NULL, abs_out);
}

// |op| of the CONV2D family with |attrs| on contiguous NCHW arrays x [N, C,
// H, W], w [O, C/groups, KH, KW], y [N, O, OH, OW] (sizes |xs|, |ws|, |ys|)
// and bias [O]. CONV2D reads x, w and (with has_bias) bias, and writes y;
// CONV2D_BACKWARD_DATA reads y (dy) and w and writes x (dx);
// CONV2D_BACKWARD_FILTER reads y (dy) and x and writes w (dw) and (with
// has_bias) bias (dbias). |pre| (CONV2D; or NULL) gets y before the
// activation; |mag| and |mag_bias| (or NULL) the magnitudes of the written
// arrays' terms.
static inline void orc_conv2d(int32_t op, const tsr_conv2d_attrs *attrs, const int64_t *xs,
                              double *x, const int64_t *ws, double *w, const int64_t *ys,
                              double *y, double *bias, double *pre, double *mag,
                              double *mag_bias) {
  const int64_t *sizes[4] = {xs, ws, ys, &ws[0]};
  double *arrays[4] = {x, w, y, bias};
  int in_idx[3], out_idx[2], ni = 0, no = 0;
  int has_bias = attrs->has_bias && op != TSR_OP_CONV2D_BACKWARD_DATA;
  if (op == TSR_OP_CONV2D) {
    in_idx[ni++] = 0, in_idx[ni++] = 1, out_idx[no++] = 2;
    if (has_bias) in_idx[ni++] = 3;
  } else if (op == TSR_OP_CONV2D_BACKWARD_DATA) {
    in_idx[ni++] = 2, in_idx[ni++] = 1, out_idx[no++] = 0;
  } else {
    in_idx[ni++] = 2, in_idx[ni++] = 0, out_idx[no++] = 1;
    if (has_bias) out_idx[no++] = 3;
  }
  double *mags[4] = {mag, mag, mag, mag_bias};
  tsr_conv2d_attrs linear = *attrs;
  linear.activation = TSR_ACTIVATION_NONE;
  linear.has_bias = (uint32_t)has_bias;
  int ok = 1, passes = mag != NULL || mag_bias != NULL ? 2 : 1;
  for (int pass = 0; pass < passes && ok; ++pass) {
    tsr_oracle_tensor in[3], out[2];
    double *scratch[5] = {NULL, NULL, NULL, NULL, NULL};
    for (int k = 0; k < ni + no; ++k) {
      int a = k < ni ? in_idx[k] : out_idx[k - ni];
      int32_t rank = a == 3 ? 1 : 4;
      int64_t n = orc_numel(rank, sizes[a]);
      double *v = arrays[a];
      if (pass && (k < ni || mags[a] == NULL)) {
        // An input's absolute values, or scratch for a magnitude not wanted.
        v = scratch[k] = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        for (int64_t i = 0; v != NULL && k < ni && i < n; ++i) v[i] = fabs(arrays[a][i]);
        ok = ok && v != NULL;
      } else if (pass) {
        v = mags[a];
      }
      if (k < ni) {
        in[k] = tsr_oracle_tensor_over(TSR_FLOAT64, rank, sizes[a], v);
      } else {
        out[k - ni] = tsr_oracle_tensor_over(TSR_FLOAT64, rank, sizes[a], v);
      }
    }
    ok = ok && tsr_oracle_compute_values(op, &linear, ni, in, no, out) == TSR_OK;
    for (int k = 0; k < ni + no; ++k) free(scratch[k]);
  }
  for (int k = 0; k < no; ++k) {
    int a = out_idx[k];
    int64_t n = orc_numel(a == 3 ? 1 : 4, sizes[a]);
    for (int64_t i = 0; i < n; ++i) {
      double v = ok ? arrays[a][i] : NAN;
      if (op == TSR_OP_CONV2D && pre != NULL) pre[i] = v;
      arrays[a][i] = op == TSR_OP_CONV2D ? tsr_oracle_activation_value(attrs->activation, v) : v;
      if (!ok && mags[a] != NULL) mags[a][i] = NAN;
    }
  }
}

// ---------------------------------------------------------------------------
// Normalisations: the oracle's, on contiguous float64 arrays. Where the
// oracle refuses, every output is NaN.

// Runs |op| with |attrs| on |ni| inputs and |no| outputs of the given ranks
// and sizes (float64 arrays; a NULL input is left out); NaN-fills the
// outputs where the oracle refuses.
static inline void orc_run_f64(int32_t op, const void *attrs, int32_t ni, const int32_t *in_ranks,
                               const int64_t *const *in_sizes, const double *const *in,
                               int32_t no, const int32_t *out_ranks,
                               const int64_t *const *out_sizes, double *const *out) {
  tsr_oracle_tensor ti[8], to[8];
  int32_t n = 0;
  for (int32_t k = 0; k < ni; ++k) {
    if (in[k] == NULL) continue;
    ti[n++] = tsr_oracle_tensor_over(TSR_FLOAT64, in_ranks[k], in_sizes[k], (double *)in[k]);
  }
  for (int32_t k = 0; k < no; ++k) {
    to[k] = tsr_oracle_tensor_over(TSR_FLOAT64, out_ranks[k], out_sizes[k], out[k]);
  }
  if (tsr_oracle_compute_values(op, attrs, n, ti, no, to) != TSR_OK) {
    for (int32_t k = 0; k < no; ++k) {
      for (int64_t i = 0; i < to[k].numel; ++i) out[k][i] = NAN;
    }
  }
}

// LAYER_NORM over axes [axis, rank) of x (|sizes|): y, and per row mean and
// rstd; gamma and beta (the normalised shape) both NULL or both given.
static inline void orc_layer_norm(int32_t rank, const int64_t *sizes, int32_t axis, const double *x,
                                  const double *gamma, const double *beta, double eps, double *y,
                                  double *mean, double *rstd) {
  int64_t ss[ORC_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) ss[d] = d < axis ? sizes[d] : 1;
  const tsr_layer_norm_attrs a = {sizeof(a), axis, gamma != NULL, eps};
  const int32_t ir[3] = {rank, rank - axis, rank - axis}, orr[3] = {rank, rank, rank};
  const int64_t *is[3] = {sizes, sizes + axis, sizes + axis}, *os[3] = {sizes, ss, ss};
  const double *in[3] = {x, gamma, beta};
  double *out[3] = {y, mean, rstd};
  orc_run_f64(TSR_OP_LAYER_NORM, &a, 3, ir, is, in, 3, orr, os, out);
}

// LAYER_NORM_BACKWARD: dx, and (with gamma) dgamma and dbeta, from dy, x
// and the forward's mean and rstd.
static inline void orc_layer_norm_backward(int32_t rank, const int64_t *sizes, int32_t axis,
                                           const double *dy, const double *x, const double *mean,
                                           const double *rstd, const double *gamma, double *dx,
                                           double *dgamma, double *dbeta) {
  int64_t ss[ORC_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) ss[d] = d < axis ? sizes[d] : 1;
  const tsr_layer_norm_attrs a = {sizeof(a), axis, gamma != NULL, 0.0};
  const int32_t ir[5] = {rank, rank, rank, rank, rank - axis};
  const int32_t orr[3] = {rank, rank - axis, rank - axis};
  const int64_t *is[5] = {sizes, sizes, ss, ss, sizes + axis};
  const int64_t *os[3] = {sizes, sizes + axis, sizes + axis};
  const double *in[5] = {dy, x, mean, rstd, gamma};
  double *out[3] = {dx, dgamma, dbeta};
  orc_run_f64(TSR_OP_LAYER_NORM_BACKWARD, &a, 5, ir, is, in, gamma != NULL ? 3 : 1, orr, os, out);
}

// BATCH_NORM of x [N, C, ...] (|sizes|) with |attrs|: y, the saved
// statistics and the running ones after the step ([C] each).
static inline void orc_batch_norm(int32_t rank, const int64_t *sizes,
                                  const tsr_batch_norm_attrs *attrs, const double *x,
                                  const double *gamma, const double *beta, const double *rmean,
                                  const double *rvar, double *y, double *save_mean,
                                  double *save_invstd, double *rmean_out, double *rvar_out) {
  const int64_t *c = &sizes[1];
  const int32_t r[5] = {rank, 1, 1, 1, 1};
  const int64_t *sz[5] = {sizes, c, c, c, c};
  const double *in[5] = {x, gamma, beta, rmean, rvar};
  double *out[5] = {y, save_mean, save_invstd, rmean_out, rvar_out};
  orc_run_f64(TSR_OP_BATCH_NORM, attrs, 5, r, sz, in, 5, r, sz, out);
}

// BATCH_NORM_BACKWARD: dx, dgamma and dbeta from dy, x, gamma and the saved
// statistics.
static inline void orc_batch_norm_backward(int32_t rank, const int64_t *sizes,
                                           const tsr_batch_norm_attrs *attrs, const double *dy,
                                           const double *x, const double *gamma,
                                           const double *save_mean, const double *save_invstd,
                                           double *dx, double *dgamma, double *dbeta) {
  const int64_t *c = &sizes[1];
  const int32_t r[5] = {rank, rank, 1, 1, 1};
  const int64_t *sz[5] = {sizes, sizes, c, c, c};
  const int32_t orr[3] = {rank, 1, 1};
  const int64_t *os[3] = {sizes, c, c};
  const double *in[5] = {dy, x, gamma, save_mean, save_invstd};
  double *out[3] = {dx, dgamma, dbeta};
  orc_run_f64(TSR_OP_BATCH_NORM_BACKWARD, attrs, 5, r, sz, in, 3, orr, os, out);
}

#endif  // TESSERA_SDK_TESTS_ORACLE_H_
