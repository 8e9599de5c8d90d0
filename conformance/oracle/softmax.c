// Oracle of SOFTMAX and SOFTMAX_BACKWARD (docs/abi.md 10.16).
#include <math.h>

#include "oracle_internal.h"

// Slices along |axis|: element k of slice s is at outer * (len * inner) +
// k * inner + inner_index.
typedef struct slicing {
  int64_t outer, len, inner;
} slicing;

static slicing slicing_get(const tsr_oracle_tensor *t, int32_t axis) {
  slicing s = {1, t->sizes[axis], 1};
  for (int32_t d = 0; d < axis; ++d) s.outer *= t->sizes[d];
  for (int32_t d = axis + 1; d < t->rank; ++d) s.inner *= t->sizes[d];
  return s;
}

static tsr_status softmax_forward(tsr_oracle_call *call, const tsr_softmax_attrs *a) {
  const tsr_oracle_tensor *x = &call->inputs[0];
  tsr_oracle_tensor *y = &call->outputs[0];
  slicing s = slicing_get(x, a->axis);
  tsr_oracle_mark(y, TSR_ORACLE_TOLERANCE);
  double n = (double)s.len;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.len * s.inner + in;
      double m = -INFINITY;
      int poisoned = 0;
      for (int64_t k = 0; k < s.len; ++k) {
        double v = x->v[base + k * s.inner];
        if (isnan(v) || v == INFINITY) poisoned = 1;
        if (v > m) m = v;
      }
      if (m == -INFINITY) poisoned = 1;  // only -inf: NaN throughout
      if (poisoned) {
        for (int64_t k = 0; k < s.len; ++k) y->v[base + k * s.inner] = NAN;
        continue;
      }
      tsr_oracle_sum sum = {0, 0, 0};
      for (int64_t k = 0; k < s.len; ++k) tsr_oracle_sum_add(&sum, exp(x->v[base + k * s.inner] - m));
      double total = tsr_oracle_sum_get(&sum);
      double log_total = log(total);
      // The spread of the exponents weighted by probability: how much the
      // roundings of the x_j - m reach the sum.
      double spread = 0;
      for (int64_t k = 0; k < s.len; ++k) {
        double xk = x->v[base + k * s.inner];
        if (xk == -INFINITY) continue;
        spread += exp(xk - m) / total * fabs(xk - m);
      }
      for (int64_t k = 0; k < s.len; ++k) {
        int64_t i = base + k * s.inner;
        double xk = x->v[i];
        double shifted = xk - m;
        if (a->log) {
          y->v[i] = xk == -INFINITY ? -INFINITY : shifted - log_total;
          y->bound[i] = xk == -INFINITY ? 0
                        : 2 * (fabs(xk) + fabs(m)) + 2 * fabs(y->v[i]) +
                              TSR_ORACLE_FN_SLACK * (n + 1 + fabs(log_total) + spread);
        } else {
          double p = xk == -INFINITY ? 0.0 : exp(shifted) / total;
          y->v[i] = p;
          y->bound[i] = p * (TSR_ORACLE_FN_SLACK * (1 + fabs(shifted) + spread) + n + 2);
        }
      }
    }
  return TSR_OK;
}

static tsr_status softmax_backward(tsr_oracle_call *call, const tsr_softmax_attrs *a) {
  const tsr_oracle_tensor *dy = &call->inputs[0];
  const tsr_oracle_tensor *y = &call->inputs[1];
  tsr_oracle_tensor *dx = &call->outputs[0];
  slicing s = slicing_get(y, a->axis);
  tsr_oracle_mark(dx, TSR_ORACLE_TOLERANCE);
  double n = (double)s.len;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.len * s.inner + in;
      tsr_oracle_sum dot = {0, 0, 0};
      double mag = 0;
      for (int64_t k = 0; k < s.len; ++k) {
        int64_t i = base + k * s.inner;
        if (a->log) {
          tsr_oracle_sum_add(&dot, dy->v[i]);
          mag += fabs(dy->v[i]);
        } else {
          tsr_oracle_sum_add_product(&dot, dy->v[i], y->v[i]);
          mag += fabs(dy->v[i] * y->v[i]);
        }
      }
      double total = tsr_oracle_sum_get(&dot);
      for (int64_t k = 0; k < s.len; ++k) {
        int64_t i = base + k * s.inner;
        if (a->log) {
          double e = exp(y->v[i]);
          dx->v[i] = dy->v[i] - e * total;
          dx->bound[i] = 2 * fabs(dy->v[i]) +
                         e * (TSR_ORACLE_FN_SLACK * (1 + fabs(y->v[i])) + n + 2) * mag;
        } else {
          dx->v[i] = y->v[i] * (dy->v[i] - total);
          dx->bound[i] = 2 * fabs(y->v[i]) * (fabs(dy->v[i]) + (n + 2) * mag);
        }
      }
    }
  return TSR_OK;
}

tsr_status tsr_oracle_softmax_compute(tsr_oracle_call *call) {
  const tsr_softmax_attrs *a = call->attrs;
  const tsr_oracle_tensor *t = &call->inputs[call->op == TSR_OP_SOFTMAX ? 0 : 1];
  if (a->axis < 0 || a->axis >= t->rank || !tsr_oracle_dtype_is_float(t->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "softmax: axis %d of rank %d, dtype %s",
                           (int)a->axis, (int)t->rank, tsr_oracle_dtype_name(t->dtype));
  }
  if (call->op == TSR_OP_SOFTMAX) return softmax_forward(call, a);
  return softmax_backward(call, a);
}
