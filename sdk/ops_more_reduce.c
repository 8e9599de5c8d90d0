// The PyTorch-style reductions and scans of tessera/ops_more.h: cumsum, var,
// std, logsumexp and norm, composed of REDUCE, elementwise ops and PAD. The
// 2-norm and the general p-norm record one node with their own rule, which
// gives a zero gradient where the norm is zero, as PyTorch does; the others
// are recorded piece by piece.
#include <math.h>
#include <string.h>

#include "autograd_internal.h"
#include "tessera/core_layer.h"
#include "ops_more_internal.h"
#include "sdk_errors.h"
#include "tessera/tessera.h"

// Checks |x| (a live float tensor) and |dims| for a reduction named |what|.
static tsr_status reduce_args(const char *what, tsr_tensor *x, int32_t num_dims,
                              const int32_t *dims, uint32_t *out_mask, int64_t *out_count) {
  TSR_RETURN_IF_ERROR(tsr_more_check(what, "x", x));
  TSR_RETURN_IF_ERROR(tsr_more_check_float(what, "x", x));
  return tsr_more_dims(what, x, num_dims, dims, out_mask, out_count);
}

// |t| ^ |exponent| for a scalar exponent.
static tsr_tensor *pow_scalar(tsr_tensor *t, double exponent) {
  tsr_tensor *e = tsr_more_scalar(t, exponent);
  tsr_tensor *out = e ? tsr_binary(t, e, TSR_BINARY_POW, 1.0) : NULL;
  tsr_tensor_release(e);
  return out;
}

// --- cumsum -----------------------------------------------------------------------------

tsr_tensor *tsr_cumsum(tsr_tensor *x, int32_t dim) {
  const char *what = "cumsum";
  if (tsr_more_check(what, "x", x) != TSR_OK)
    return NULL;
  int32_t d = 0;
  if (tsr_more_dim(what, x, dim, tsr_tensor_rank(x) ? tsr_tensor_rank(x) : 1, &d) != TSR_OK)
    return NULL;
  if (tsr_tensor_dtype(x) == TSR_BFLOAT16 || tsr_tensor_dtype(x) == TSR_FLOAT16 ||
      tsr_dtype_size(tsr_tensor_dtype(x)) == 0) {
    // PAD and ADD in half precision would round every partial sum.
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "cumsum: x is %s; cumsum takes float32, float64, int64, int32 or bool",
                        tsr_dtype_name(tsr_tensor_dtype(x)));
  }
  // Integers and bools sum into int64, as in PyTorch.
  // |y| is the running result: |x| itself until the first new tensor, which
  // is owned here (the caller's handle is never released: inside a scope
  // that would take it out of the scope).
  int widen = tsr_tensor_dtype(x) == TSR_INT32 || tsr_tensor_dtype(x) == TSR_BOOL;
  tsr_tensor *y = widen ? tsr_cast(x, TSR_INT64) : x;
  int64_t n = tsr_tensor_rank(x) ? tsr_tensor_sizes(x)[d] : 1;
  // Hillis-Steele scan: after the step with |shift|, y[i] holds the sum of
  // the 2 * shift elements ending at i. log2(n) passes of PAD and ADD.
  int owned = widen;
  for (int64_t shift = 1; shift < n && y != NULL; shift *= 2) {
    tsr_pad_attrs pad;
    memset(&pad, 0, sizeof(pad));
    pad.struct_size = sizeof(pad);
    pad.mode = TSR_PAD_CONSTANT;
    pad.pad_before[d] = shift;
    tsr_tensor *head = tsr_slice(y, d, 0, n - shift, 1);
    tsr_tensor *moved = head ? tsr_pad(head, &pad) : NULL;
    tsr_tensor *sum = moved ? tsr_add(y, moved) : NULL;
    tsr_tensor_release(head);
    tsr_tensor_release(moved);
    if (owned)
      tsr_tensor_release(y);
    y = sum;
    owned = 1;
  }
  if (y != NULL && !owned)
    y = tsr_clone(x);  // one element along |dim|: still a new tensor
  return tsr_more_finish(what, y);
}

// --- var, std -------------------------------------------------------------------------------

static tsr_tensor *variance(const char *what, tsr_tensor *x, int32_t num_dims, const int32_t *dims,
                            double correction, int keepdim, int root) {
  uint32_t mask = 0;
  int64_t count = 0;
  if (reduce_args(what, x, num_dims, dims, &mask, &count) != TSR_OK)
    return NULL;
  if (isnan(correction)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s: correction is NaN", what);
  }
  // The mean is a constant for the gradient: sum(x - mean) is 0, so d var /
  // dx = 2 (x - mean) / (N - correction) either way, and this records less.
  int grad_mode = tsr_grad_mode_set(0);
  tsr_tensor *mean = tsr_more_reduce(x, TSR_REDUCE_MEAN, mask, 1);
  tsr_grad_mode_set(grad_mode);
  tsr_tensor *centred = mean ? tsr_sub(x, mean) : NULL;
  tsr_tensor *squares = centred ? tsr_square(centred) : NULL;
  tsr_tensor *sum = squares ? tsr_more_reduce(squares, TSR_REDUCE_SUM, mask, keepdim) : NULL;
  // PyTorch divides by max(0, N - correction): 0 gives inf or NaN.
  double divisor = fmax(0.0, (double)count - correction);
  tsr_tensor *den = tsr_more_scalar(x, divisor);
  tsr_tensor *out = sum && den ? tsr_div(sum, den) : NULL;
  if (out != NULL && root) {
    tsr_tensor *var = out;
    out = tsr_unary(var, TSR_UNARY_SQRT, 0.0);
    tsr_tensor_release(var);
  }
  tsr_tensor *tmp[] = {mean, centred, squares, sum, den};
  tsr_more_release(5, tmp);
  return tsr_more_finish(what, out);
}

tsr_tensor *tsr_var(tsr_tensor *x, int32_t num_dims, const int32_t *dims, double correction,
                    int keepdim) {
  return variance("var", x, num_dims, dims, correction, keepdim, 0);
}

tsr_tensor *tsr_std(tsr_tensor *x, int32_t num_dims, const int32_t *dims, double correction,
                    int keepdim) {
  return variance("std", x, num_dims, dims, correction, keepdim, 1);
}

// --- logsumexp ------------------------------------------------------------------------------

// A tensor of the reduction's result shape filled with |value|.
static tsr_tensor *reduced_full(tsr_tensor *x, uint32_t mask, int keepdim, double value) {
  int64_t sizes[TSR_MAX_RANK];
  int32_t rank = 0;
  for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
    if (!(mask & (1u << d))) {
      sizes[rank++] = tsr_tensor_sizes(x)[d];
    } else if (keepdim) {
      sizes[rank++] = 1;
    }
  }
  return tsr_tensor_full(tsr_tensor_device(x), tsr_tensor_dtype(x), rank, sizes, value);
}

tsr_tensor *tsr_logsumexp(tsr_tensor *x, int32_t num_dims, const int32_t *dims, int keepdim) {
  const char *what = "logsumexp";
  uint32_t mask = 0;
  int64_t count = 0;
  if (reduce_args(what, x, num_dims, dims, &mask, &count) != TSR_OK)
    return NULL;
  if (count == 0)
    return tsr_more_finish(what, reduced_full(x, mask, keepdim, -INFINITY));  // log 0
  // m = max over the dims, taken as 0 where it is infinite so that a slice
  // of -inf gives -inf and one holding +inf gives +inf. m is a constant for
  // the gradient (it cancels), so it is computed outside the tape.
  int grad_mode = tsr_grad_mode_set(0);
  tsr_tensor *max = tsr_more_reduce(x, TSR_REDUCE_MAX, mask, 1);
  tsr_tensor *size = max ? tsr_unary(max, TSR_UNARY_ABS, 0.0) : NULL;
  tsr_tensor *inf = tsr_more_scalar(x, INFINITY);
  tsr_tensor *zero = tsr_more_scalar(x, 0.0);
  tsr_tensor *infinite = size && inf ? tsr_compare(size, inf, TSR_COMPARE_EQ) : NULL;
  tsr_tensor *m = infinite && zero ? tsr_where(infinite, zero, max) : NULL;
  tsr_grad_mode_set(grad_mode);
  tsr_tensor *shifted = m ? tsr_sub(x, m) : NULL;
  tsr_tensor *e = shifted ? tsr_exp(shifted) : NULL;
  tsr_tensor *sum = e ? tsr_more_reduce(e, TSR_REDUCE_SUM, mask, 1) : NULL;
  tsr_tensor *log = sum ? tsr_logarithm(sum) : NULL;
  tsr_tensor *out = log ? tsr_add(log, m) : NULL;
  if (out != NULL && !keepdim)
    out = tsr_more_squeeze_mask(out, mask);
  tsr_tensor *tmp[] = {max, size, inf, zero, infinite, m, shifted, e, sum, log};
  tsr_more_release(10, tmp);
  return tsr_more_finish(what, out);
}

// --- norm -------------------------------------------------------------------------------------

// d ||x||_p / dx = sign(x) |x|^(p-1) / ||x||^(p-1) (x / ||x|| for p = 2),
// and 0 where the norm is 0, as PyTorch's norm_backward.
static tsr_status norm_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_tensor *x = n->inputs[0], *norm = n->saved[0];
  double p = n->reals[0];
  tsr_tensor *zero = tsr_more_scalar(x, 0.0);
  tsr_tensor *at_zero = zero ? tsr_compare(norm, zero, TSR_COMPARE_EQ) : NULL;
  // For p = 2 the power is the norm and the direction x: no new tensors
  // (the node's handles are not released here).
  tsr_tensor *power = p == 2.0 ? NULL : pow_scalar(norm, p - 1.0);
  tsr_tensor *ratio = p == 2.0 || power ? tsr_div(dy, power ? power : norm) : NULL;
  tsr_tensor *scale = ratio && at_zero ? tsr_where(at_zero, zero, ratio) : NULL;
  tsr_tensor *sign = NULL, *mag = NULL, *mag_p = NULL, *dir = NULL;
  if (p != 2.0) {
    sign = tsr_unary(x, TSR_UNARY_SIGN, 0.0);
    mag = tsr_unary(x, TSR_UNARY_ABS, 0.0);
    mag_p = mag ? pow_scalar(mag, p - 1.0) : NULL;
    dir = sign && mag_p ? tsr_mul(sign, mag_p) : NULL;
  }
  tsr_tensor *dx = (p == 2.0 || dir) && scale ? tsr_mul(dir ? dir : x, scale) : NULL;
  tsr_tensor *tmp[] = {zero, at_zero, power, ratio, scale, sign, mag, mag_p, dir};
  tsr_more_release(9, tmp);
  if (dx == NULL)
    return tsr_sdk_last_status();
  out_dx[0] = dx;  // x's sizes: dir has them and scale broadcasts
  return TSR_OK;
}

// The 2-norm or a general p-norm with the reduced dims kept, computed off the
// tape and recorded as one node.
static tsr_tensor *norm_recorded(tsr_tensor *x, double p, uint32_t mask) {
  int grad_mode = tsr_grad_mode_set(0);
  tsr_tensor *kept = NULL;
  if (p == 2.0) {
    tsr_tensor *squares = tsr_square(x);
    tsr_tensor *sum = squares ? tsr_more_reduce(squares, TSR_REDUCE_SUM, mask, 1) : NULL;
    kept = sum ? tsr_unary(sum, TSR_UNARY_SQRT, 0.0) : NULL;
    tsr_tensor_release(squares);
    tsr_tensor_release(sum);
  } else {
    tsr_tensor *mag = tsr_unary(x, TSR_UNARY_ABS, 0.0);
    tsr_tensor *powers = mag ? pow_scalar(mag, p) : NULL;
    tsr_tensor *sum = powers ? tsr_more_reduce(powers, TSR_REDUCE_SUM, mask, 1) : NULL;
    kept = sum ? pow_scalar(sum, 1.0 / p) : NULL;
    tsr_tensor *tmp[] = {mag, powers, sum};
    tsr_more_release(3, tmp);
  }
  tsr_grad_mode_set(grad_mode);
  if (kept == NULL || !tsr_ag_should_record(1, &x))
    return kept;
  tsr_ag_node *node = NULL;
  if (tsr_ag_record("norm", norm_backward, 1, &x, kept, &node) != TSR_OK ||
      tsr_ag_node_save(node, kept) != TSR_OK) {
    tsr_tensor_release(kept);
    return NULL;
  }
  node->reals[0] = p;
  return kept;
}

tsr_tensor *tsr_norm(tsr_tensor *x, double p, int32_t num_dims, const int32_t *dims, int keepdim) {
  const char *what = "norm";
  uint32_t mask = 0;
  int64_t count = 0;
  if (reduce_args(what, x, num_dims, dims, &mask, &count) != TSR_OK)
    return NULL;
  if (isnan(p))
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "norm: p is NaN");
  tsr_tensor *out = NULL;
  if (isinf(p)) {
    if (count == 0) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                          "norm: the %s norm of an empty slice has no value (a reduced dim is "
                          "empty)",
                          p > 0 ? "inf" : "-inf");
    }
    // max |x| (min |x|): the reduction's rule shares the gradient among ties.
    tsr_tensor *mag = tsr_unary(x, TSR_UNARY_ABS, 0.0);
    out = mag ? tsr_more_reduce(mag, p > 0 ? TSR_REDUCE_MAX : TSR_REDUCE_MIN, mask, keepdim) : NULL;
    tsr_tensor_release(mag);
  } else if (p == 1.0) {
    tsr_tensor *mag = tsr_unary(x, TSR_UNARY_ABS, 0.0);
    out = mag ? tsr_more_reduce(mag, TSR_REDUCE_SUM, mask, keepdim) : NULL;
    tsr_tensor_release(mag);
  } else if (p == 0.0) {
    // The number of non-zeros: piecewise constant, so no gradient.
    tsr_tensor *zero = tsr_more_scalar(x, 0.0);
    tsr_tensor *nonzero = zero ? tsr_compare(x, zero, TSR_COMPARE_NE) : NULL;
    tsr_tensor *ones = nonzero ? tsr_cast(nonzero, tsr_tensor_dtype(x)) : NULL;
    out = ones ? tsr_more_reduce(ones, TSR_REDUCE_SUM, mask, keepdim) : NULL;
    tsr_tensor *tmp[] = {zero, nonzero, ones};
    tsr_more_release(3, tmp);
  } else {
    tsr_tensor *kept = norm_recorded(x, p, mask);
    out = kept && !keepdim ? tsr_more_squeeze_mask(kept, mask) : kept;
  }
  return tsr_more_finish(what, out);
}
