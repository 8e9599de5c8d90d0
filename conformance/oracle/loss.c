// Oracle of CROSS_ENTROPY and CROSS_ENTROPY_BACKWARD (docs/abi.md 10.23).
#include <math.h>
#include <stdlib.h>

#include "oracle_internal.h"

typedef struct ce_shape {
  int64_t n, c;
} ce_shape;

static tsr_status ce_check(tsr_oracle_call *call, const tsr_cross_entropy_attrs *a,
                           const tsr_oracle_tensor *logits, const tsr_oracle_tensor *target,
                           ce_shape *s, int64_t *out_rows) {
  if (logits->rank != 2 || target->rank != 1 || target->dtype != TSR_INT64 ||
      !tsr_oracle_dtype_is_float(logits->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "cross_entropy: logits [N, C], target [N] int64");
  }
  if (a->reduction < 0 || a->reduction >= TSR_REDUCTION_COUNT || a->label_smoothing < 0 ||
      a->label_smoothing > 1) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "cross_entropy: reduction %d, smoothing %g",
                           (int)a->reduction, a->label_smoothing);
  }
  s->n = logits->sizes[0];
  s->c = logits->sizes[1];
  int64_t rows = 0;
  for (int64_t n = 0; n < s->n; ++n) {
    int64_t t = target->iv[n];
    if (t == a->ignore_index) continue;
    if (t < 0 || t >= s->c) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "cross_entropy: target[%lld] = %lld outside [0, %lld)",
                             (long long)n, (long long)t, (long long)s->c);
    }
    ++rows;
  }
  *out_rows = rows;
  return TSR_OK;
}

static tsr_status ce_forward(tsr_oracle_call *call, const tsr_cross_entropy_attrs *a) {
  const tsr_oracle_tensor *logits = &call->inputs[0], *target = &call->inputs[1];
  tsr_oracle_tensor *loss = &call->outputs[0], *lse = &call->outputs[1];
  ce_shape s;
  int64_t rows;
  tsr_status status = ce_check(call, a, logits, target, &s, &rows);
  if (status != TSR_OK) return status;
  double eps = tsr_oracle_attr(a->label_smoothing, logits->dtype);
  double dc = (double)s.c;
  tsr_oracle_mark(loss, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(lse, TSR_ORACLE_TOLERANCE);
  // lse is float32 whatever the logits' dtype; its error before that last
  // rounding counts in the logits' compute type.
  loss->compute = tsr_oracle_compute_dtype(logits->dtype);
  lse->compute = tsr_oracle_compute_dtype(logits->dtype);
  tsr_oracle_sum total = {0, 0, 0};
  double total_mag = 0, total_bound = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    const double *x = logits->v + n * s.c;
    double m = -INFINITY;
    for (int64_t c = 0; c < s.c; ++c) m = x[c] > m ? x[c] : m;
    tsr_oracle_sum se = {0, 0, 0}, sx = {0, 0, 0};
    double abs_x = 0;
    for (int64_t c = 0; c < s.c; ++c) {
      tsr_oracle_sum_add(&se, exp(x[c] - m));
      tsr_oracle_sum_add(&sx, x[c]);
      abs_x += fabs(x[c]);
    }
    double sum_e = tsr_oracle_sum_get(&se);
    double l = m + log(sum_e);
    double spread = 0;
    for (int64_t c = 0; c < s.c; ++c) spread += exp(x[c] - m) / sum_e * fabs(x[c] - m);
    double bound_lse = 2 * fabs(m) + 2 * fabs(l) +
                       TSR_ORACLE_FN_SLACK * (dc + 1 + fabs(log(sum_e)) + spread);
    lse->v[n] = l;
    lse->bound[n] = bound_lse;
    int64_t t = target->iv[n];
    double ln = 0, bound_n = 0;
    if (t != a->ignore_index) {
      ln = l - (1 - eps) * x[t] - eps / dc * tsr_oracle_sum_get(&sx);
      bound_n = bound_lse + 3 * (fabs(l) + fabs(x[t])) + eps / dc * (dc + 2) * abs_x + 2 * fabs(ln);
    }
    if (a->reduction == TSR_REDUCTION_NONE) {
      loss->v[n] = ln;
      loss->bound[n] = bound_n;
    }
    tsr_oracle_sum_add(&total, ln);
    total_mag += fabs(ln);
    total_bound += bound_n;
  }
  if (a->reduction != TSR_REDUCTION_NONE) {
    double sum = tsr_oracle_sum_get(&total);
    double bound = ((double)s.n + 1) * total_mag + total_bound;
    if (a->reduction == TSR_REDUCTION_MEAN) {
      loss->v[0] = rows == 0 ? NAN : sum / (double)rows;
      loss->bound[0] = rows == 0 ? 0 : (bound + fabs(sum)) / (double)rows;
    } else {
      loss->v[0] = sum;
      loss->bound[0] = bound;
    }
  }
  return TSR_OK;
}

static tsr_status ce_backward(tsr_oracle_call *call, const tsr_cross_entropy_attrs *a) {
  const tsr_oracle_tensor *dloss = &call->inputs[0], *logits = &call->inputs[1];
  const tsr_oracle_tensor *target = &call->inputs[2], *lse = &call->inputs[3];
  tsr_oracle_tensor *dlogits = &call->outputs[0];
  ce_shape s;
  int64_t rows;
  tsr_status status = ce_check(call, a, logits, target, &s, &rows);
  if (status != TSR_OK) return status;
  double eps = tsr_oracle_attr(a->label_smoothing, logits->dtype);
  double dc = (double)s.c;
  tsr_oracle_mark(dlogits, TSR_ORACLE_TOLERANCE);
  for (int64_t n = 0; n < s.n; ++n) {
    int64_t t = target->iv[n];
    double scale;
    if (a->reduction == TSR_REDUCTION_NONE) {
      scale = dloss->v[n];
    } else if (a->reduction == TSR_REDUCTION_SUM) {
      scale = dloss->v[0];
    } else {
      scale = rows == 0 ? NAN : dloss->v[0] / (double)rows;
    }
    for (int64_t c = 0; c < s.c; ++c) {
      int64_t i = n * s.c + c;
      if (t == a->ignore_index) {
        dlogits->v[i] = 0;
        continue;
      }
      double x = logits->v[i];
      double p = exp(x - lse->v[n]);
      double v = p - (1 - eps) * (c == t ? 1.0 : 0.0) - eps / dc;
      dlogits->v[i] = scale * v;
      dlogits->bound[i] = fabs(scale) * (TSR_ORACLE_FN_SLACK * p * (1 + fabs(x) + fabs(lse->v[n])) +
                                         3 * (p + 1 + eps / dc) + 2 * fabs(v));
    }
  }
  return TSR_OK;
}

tsr_status tsr_oracle_loss_compute(tsr_oracle_call *call) {
  const tsr_cross_entropy_attrs *a = call->attrs;
  if (call->op == TSR_OP_CROSS_ENTROPY) return ce_forward(call, a);
  return ce_backward(call, a);
}
