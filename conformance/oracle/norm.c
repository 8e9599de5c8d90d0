// Oracle of LAYER_NORM, BATCH_NORM and their backward ops (docs/abi.md 10.17,
// 10.18).
//
// Error bounds cover both the two-pass variance and the one-pass
// E[x^2] - mean^2 a fast plugin may use (on the suite's data, whose mean is
// small against its spread), and the fused y = x * scale + shift form.
#include <math.h>
#include <stdlib.h>

#include "oracle_internal.h"

// Statistics of one group of |m| elements.
typedef struct group_stats {
  double mean, var, rstd;
  double bound_mean, bound_var, bound_rstd;
} group_stats;

// |x| at index base + k * step for k < m, or a strided walk given by |at|.
static group_stats stats_of(const double *values, int64_t m, double eps) {
  group_stats g;
  tsr_oracle_sum sum = {0, 0, 0};
  double abs_sum = 0;
  for (int64_t k = 0; k < m; ++k) {
    tsr_oracle_sum_add(&sum, values[k]);
    abs_sum += fabs(values[k]);
  }
  double dm = (double)m;
  g.mean = tsr_oracle_sum_get(&sum) / dm;
  tsr_oracle_sum sq = {0, 0, 0};
  double sq_abs = 0;
  for (int64_t k = 0; k < m; ++k) {
    double d = values[k] - g.mean;
    tsr_oracle_sum_add_product(&sq, d, d);
    sq_abs += values[k] * values[k];
  }
  g.var = tsr_oracle_sum_get(&sq) / dm;
  g.rstd = 1.0 / sqrt(g.var + eps);
  g.bound_mean = (dm + 1) * abs_sum / dm;
  double q = sq_abs / dm + g.mean * g.mean;
  g.bound_var = 2 * (dm + 3) * q + 2 * fabs(g.mean) * g.bound_mean;
  g.bound_rstd = g.rstd * (0.5 * g.bound_var / (g.var + eps) + 3 + TSR_ORACLE_FN_SLACK);
  return g;
}

// Error of x_hat = (x - mean) * rstd for one element, in units of u.
static double xhat_bound(double x, const group_stats *g) {
  double xm = x - g->mean;
  return g->rstd * (g->bound_mean + 2 * (fabs(x) + fabs(g->mean))) + fabs(xm) * g->bound_rstd +
         fabs(xm * g->rstd);
}

// --- layer norm ---------------------------------------------------------------

static tsr_status layer_norm_forward(tsr_oracle_call *call, const tsr_layer_norm_attrs *a) {
  const tsr_oracle_tensor *x = &call->inputs[0];
  const tsr_oracle_tensor *gamma = a->has_affine ? &call->inputs[1] : NULL;
  const tsr_oracle_tensor *beta = a->has_affine ? &call->inputs[2] : NULL;
  if (call->num_inputs != (a->has_affine ? 3 : 1) || call->num_outputs != 3) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "layer_norm: operand counts");
  }
  tsr_oracle_tensor *y = &call->outputs[0], *mean = &call->outputs[1], *rstd = &call->outputs[2];
  int64_t m = 1;
  for (int32_t d = a->axis; d < x->rank; ++d) m *= x->sizes[d];
  if (m < 1) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "layer_norm: M is 0");
  int64_t groups = x->numel / m;
  double eps = tsr_oracle_attr(a->eps, x->dtype);
  tsr_oracle_mark(y, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(mean, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(rstd, TSR_ORACLE_TOLERANCE);
  for (int64_t gi = 0; gi < groups; ++gi) {
    const double *xs = x->v + gi * m;
    group_stats g = stats_of(xs, m, eps);
    mean->v[gi] = g.mean;
    mean->bound[gi] = g.bound_mean;
    rstd->v[gi] = g.rstd;
    rstd->bound[gi] = g.bound_rstd;
    for (int64_t k = 0; k < m; ++k) {
      double xhat = (xs[k] - g.mean) * g.rstd;
      double ga = gamma ? gamma->v[k] : 1.0, be = beta ? beta->v[k] : 0.0;
      double v = xhat * ga + be;
      y->v[gi * m + k] = v;
      y->bound[gi * m + k] = fabs(ga) * (xhat_bound(xs[k], &g) + fabs(xhat)) + fabs(be) + fabs(v);
    }
  }
  return TSR_OK;
}

static tsr_status layer_norm_backward(tsr_oracle_call *call, const tsr_layer_norm_attrs *a) {
  const tsr_oracle_tensor *dy = &call->inputs[0], *x = &call->inputs[1];
  const tsr_oracle_tensor *mean = &call->inputs[2], *rstd = &call->inputs[3];
  const tsr_oracle_tensor *gamma = a->has_affine ? &call->inputs[4] : NULL;
  if (call->num_inputs != (a->has_affine ? 5 : 4) || call->num_outputs != (a->has_affine ? 3 : 1)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "layer_norm_backward: operand counts");
  }
  tsr_oracle_tensor *dx = &call->outputs[0];
  tsr_oracle_tensor *dgamma = a->has_affine ? &call->outputs[1] : NULL;
  tsr_oracle_tensor *dbeta = a->has_affine ? &call->outputs[2] : NULL;
  int64_t m = 1;
  for (int32_t d = a->axis; d < x->rank; ++d) m *= x->sizes[d];
  if (m < 1) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "layer_norm_backward: M is 0");
  int64_t groups = x->numel / m;
  double dm = (double)m;
  tsr_oracle_mark(dx, TSR_ORACLE_TOLERANCE);
  for (int64_t gi = 0; gi < groups; ++gi) {
    group_stats g = {mean->v[gi], 0, rstd->v[gi], 0, 0, 0};
    tsr_oracle_sum sa = {0, 0, 0}, sb = {0, 0, 0};
    double mag_a = 0, mag_b = 0, mag_eb = 0;
    for (int64_t k = 0; k < m; ++k) {
      int64_t i = gi * m + k;
      double gk = dy->v[i] * (gamma ? gamma->v[k] : 1.0);
      double xhat = (x->v[i] - g.mean) * g.rstd;
      tsr_oracle_sum_add(&sa, gk);
      tsr_oracle_sum_add_product(&sb, gk, xhat);
      mag_a += fabs(gk);
      mag_b += fabs(gk * xhat);
      mag_eb += fabs(gk) * xhat_bound(x->v[i], &g);
    }
    double ma = tsr_oracle_sum_get(&sa) / dm, mb = tsr_oracle_sum_get(&sb) / dm;
    double bound_a = (dm + 2) * mag_a / dm;
    double bound_b = (dm + 3) * mag_b / dm + mag_eb / dm;
    for (int64_t k = 0; k < m; ++k) {
      int64_t i = gi * m + k;
      double gk = dy->v[i] * (gamma ? gamma->v[k] : 1.0);
      double xhat = (x->v[i] - g.mean) * g.rstd;
      double v = g.rstd * (gk - ma - xhat * mb);
      dx->v[i] = v;
      dx->bound[i] = g.rstd * (3 * (fabs(gk) + fabs(ma) + fabs(xhat * mb)) + bound_a +
                               fabs(xhat) * bound_b + fabs(mb) * xhat_bound(x->v[i], &g)) +
                     2 * fabs(v);
    }
  }
  if (dgamma != NULL) {
    tsr_oracle_mark(dgamma, TSR_ORACLE_TOLERANCE);
    tsr_oracle_mark(dbeta, TSR_ORACLE_TOLERANCE);
    double lead = (double)groups;
    for (int64_t k = 0; k < m; ++k) {
      tsr_oracle_sum sg = {0, 0, 0}, sbeta = {0, 0, 0};
      double mag_g = 0, mag_beta = 0, mag_e = 0;
      for (int64_t gi = 0; gi < groups; ++gi) {
        int64_t i = gi * m + k;
        group_stats g = {mean->v[gi], 0, rstd->v[gi], 0, 0, 0};
        double xhat = (x->v[i] - g.mean) * g.rstd;
        tsr_oracle_sum_add_product(&sg, dy->v[i], xhat);
        tsr_oracle_sum_add(&sbeta, dy->v[i]);
        mag_g += fabs(dy->v[i] * xhat);
        mag_beta += fabs(dy->v[i]);
        mag_e += fabs(dy->v[i]) * xhat_bound(x->v[i], &g);
      }
      dgamma->v[k] = tsr_oracle_sum_get(&sg);
      dgamma->bound[k] = (lead + 2) * mag_g + mag_e;
      dbeta->v[k] = tsr_oracle_sum_get(&sbeta);
      dbeta->bound[k] = (lead + 1) * mag_beta;
    }
  }
  return TSR_OK;
}

// --- batch norm -----------------------------------------------------------------

typedef struct bn_shape {
  int64_t n, c, inner, m;
} bn_shape;

static bn_shape bn_shape_get(const tsr_oracle_tensor *x) {
  bn_shape s = {x->sizes[0], x->sizes[1], 1, 0};
  for (int32_t d = 2; d < x->rank; ++d) s.inner *= x->sizes[d];
  s.m = s.n * s.inner;
  return s;
}

// Gathers channel |c| of |x| into |buf| (m values).
static void bn_channel(const tsr_oracle_tensor *x, const bn_shape *s, int64_t c, double *buf) {
  int64_t k = 0;
  for (int64_t n = 0; n < s->n; ++n)
    for (int64_t i = 0; i < s->inner; ++i) buf[k++] = x->v[(n * s->c + c) * s->inner + i];
}

static tsr_status batch_norm_forward(tsr_oracle_call *call, const tsr_batch_norm_attrs *a) {
  if (call->num_inputs != 5 || call->num_outputs != 5) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "batch_norm: 5 inputs and 5 outputs");
  }
  const tsr_oracle_tensor *x = &call->inputs[0], *gamma = &call->inputs[1], *beta = &call->inputs[2];
  const tsr_oracle_tensor *rm = &call->inputs[3], *rv = &call->inputs[4];
  tsr_oracle_tensor *y = &call->outputs[0], *save_mean = &call->outputs[1];
  tsr_oracle_tensor *save_invstd = &call->outputs[2], *rm_out = &call->outputs[3];
  tsr_oracle_tensor *rv_out = &call->outputs[4];
  if (x->rank < 2) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "batch_norm: rank < 2");
  bn_shape s = bn_shape_get(x);
  if (a->training && s.m < 2) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "batch_norm: training needs M >= 2");
  }
  double eps = tsr_oracle_attr(a->eps, x->dtype);
  double mom = tsr_oracle_attr(a->momentum, x->dtype);
  double *buf = malloc((size_t)(s.m > 0 ? s.m : 1) * sizeof(double));
  if (buf == NULL) return tsr_oracle_fail(call, TSR_UNSUPPORTED, "batch_norm: out of host memory");
  tsr_oracle_mark(y, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(save_mean, a->training ? TSR_ORACLE_TOLERANCE : TSR_ORACLE_BITWISE);
  tsr_oracle_mark(save_invstd, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(rm_out, a->training ? TSR_ORACLE_TOLERANCE : TSR_ORACLE_BITWISE);
  tsr_oracle_mark(rv_out, a->training ? TSR_ORACLE_TOLERANCE : TSR_ORACLE_BITWISE);
  double dm = (double)s.m;
  for (int64_t c = 0; c < s.c; ++c) {
    group_stats g;
    if (a->training) {
      bn_channel(x, &s, c, buf);
      g = stats_of(buf, s.m, eps);
      save_mean->v[c] = g.mean;
      save_mean->bound[c] = g.bound_mean;
      double unbiased = g.var * dm / (dm - 1);
      rm_out->v[c] = (1 - mom) * rm->v[c] + mom * g.mean;
      rm_out->bound[c] = 3 * (fabs((1 - mom) * rm->v[c]) + fabs(mom * g.mean)) + mom * g.bound_mean;
      rv_out->v[c] = (1 - mom) * rv->v[c] + mom * unbiased;
      rv_out->bound[c] = 3 * (fabs((1 - mom) * rv->v[c]) + fabs(mom * unbiased)) +
                         mom * (g.bound_var + 2 * fabs(g.var)) * dm / (dm - 1);
    } else {
      g.mean = rm->v[c];
      g.var = rv->v[c];
      g.rstd = 1.0 / sqrt(g.var + eps);
      g.bound_mean = 0;
      g.bound_var = 0;
      g.bound_rstd = g.rstd * (3 + TSR_ORACLE_FN_SLACK);
      save_mean->v[c] = g.mean;
      rm_out->v[c] = rm->v[c];
      rv_out->v[c] = rv->v[c];
    }
    save_invstd->v[c] = g.rstd;
    save_invstd->bound[c] = g.bound_rstd;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t e = (n * s.c + c) * s.inner + i;
        double xhat = (x->v[e] - g.mean) * g.rstd;
        double v = xhat * gamma->v[c] + beta->v[c];
        y->v[e] = v;
        y->bound[e] = fabs(gamma->v[c]) * (xhat_bound(x->v[e], &g) + fabs(xhat)) +
                      fabs(beta->v[c]) + fabs(v);
      }
  }
  free(buf);
  return TSR_OK;
}

static tsr_status batch_norm_backward(tsr_oracle_call *call, const tsr_batch_norm_attrs *a) {
  if (call->num_inputs != 5 || call->num_outputs != 3) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "batch_norm_backward: 5 inputs and 3 outputs");
  }
  const tsr_oracle_tensor *dy = &call->inputs[0], *x = &call->inputs[1], *gamma = &call->inputs[2];
  const tsr_oracle_tensor *mean = &call->inputs[3], *invstd = &call->inputs[4];
  tsr_oracle_tensor *dx = &call->outputs[0], *dgamma = &call->outputs[1], *dbeta = &call->outputs[2];
  if (x->rank < 2) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "batch_norm_backward: rank < 2");
  bn_shape s = bn_shape_get(x);
  double dm = (double)s.m;
  tsr_oracle_mark(dx, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(dgamma, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(dbeta, TSR_ORACLE_TOLERANCE);
  for (int64_t c = 0; c < s.c; ++c) {
    group_stats g = {mean->v[c], 0, invstd->v[c], 0, 0, 0};
    tsr_oracle_sum sb = {0, 0, 0}, sg = {0, 0, 0};
    double mag_b = 0, mag_g = 0, mag_e = 0;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t e = (n * s.c + c) * s.inner + i;
        double xhat = (x->v[e] - g.mean) * g.rstd;
        tsr_oracle_sum_add(&sb, dy->v[e]);
        tsr_oracle_sum_add_product(&sg, dy->v[e], xhat);
        mag_b += fabs(dy->v[e]);
        mag_g += fabs(dy->v[e] * xhat);
        mag_e += fabs(dy->v[e]) * xhat_bound(x->v[e], &g);
      }
    double db = tsr_oracle_sum_get(&sb), dg = tsr_oracle_sum_get(&sg);
    double bound_db = (dm + 1) * mag_b, bound_dg = (dm + 2) * mag_g + mag_e;
    dbeta->v[c] = db;
    dbeta->bound[c] = bound_db;
    dgamma->v[c] = dg;
    dgamma->bound[c] = bound_dg;
    double scale = gamma->v[c] * g.rstd;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t e = (n * s.c + c) * s.inner + i;
        double xhat = (x->v[e] - g.mean) * g.rstd;
        double v, b;
        if (a->training) {
          v = scale * (dy->v[e] - db / dm - xhat * dg / dm);
          b = fabs(scale) * (3 * (fabs(dy->v[e]) + fabs(db / dm) + fabs(xhat * dg / dm)) +
                             (bound_db + fabs(xhat) * bound_dg + fabs(dg) * xhat_bound(x->v[e], &g)) / dm) +
              3 * fabs(v);
        } else {
          v = scale * dy->v[e];
          b = 3 * fabs(v);
        }
        dx->v[e] = v;
        dx->bound[e] = b;
      }
  }
  return TSR_OK;
}

tsr_status tsr_oracle_norm_compute(tsr_oracle_call *call) {
  switch (call->op) {
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD: {
      const tsr_layer_norm_attrs *a = call->attrs;
      const tsr_oracle_tensor *x = &call->inputs[call->op == TSR_OP_LAYER_NORM ? 0 : 1];
      if (a->axis < 0 || a->axis >= x->rank || !tsr_oracle_dtype_is_float(x->dtype)) {
        return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "layer_norm: axis %d of rank %d",
                               (int)a->axis, (int)x->rank);
      }
      return call->op == TSR_OP_LAYER_NORM ? layer_norm_forward(call, a) : layer_norm_backward(call, a);
    }
    case TSR_OP_BATCH_NORM: return batch_norm_forward(call, call->attrs);
    default: return batch_norm_backward(call, call->attrs);
  }
}
