// Oracle of the fused optimizer updates SGD_UPDATE and ADAM_UPDATE
// (docs/abi.md 10.24, 10.25). param and the state buffers are outputs that
// arrive holding their values before the step.
#include <math.h>

#include "oracle_internal.h"

static tsr_status sgd_compute(tsr_oracle_call *call) {
  const tsr_sgd_attrs *a = call->attrs;
  const tsr_oracle_tensor *grad = &call->inputs[0];
  tsr_oracle_tensor *param = &call->outputs[0];
  tsr_oracle_tensor *buf = &call->outputs[1];
  if (a->nesterov && (a->momentum <= 0 || a->dampening != 0)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "sgd_update: nesterov needs momentum > 0 and dampening 0");
  }
  tsr_dtype_t dt = param->dtype;
  double lr = tsr_oracle_attr(a->lr, dt), mom = tsr_oracle_attr(a->momentum, dt);
  double wd = tsr_oracle_attr(a->weight_decay, dt);
  // 1 − dampening is formed in float64 and rounded once (docs/abi.md 10.24).
  double omd = tsr_oracle_attr(1 - a->dampening, dt);
  int use_momentum = a->momentum != 0;
  tsr_oracle_mark(param, TSR_ORACLE_TOLERANCE);
  // With momentum 0 the buffer is an empty descriptor the plugin ignores.
  tsr_oracle_mark(buf, use_momentum ? TSR_ORACLE_TOLERANCE : TSR_ORACLE_EXACT);
  for (int64_t i = 0; i < param->numel; ++i) {
    double p = param->v[i];
    double g = grad->v[i] + wd * p;
    double bound_g = 2 * (fabs(grad->v[i]) + fabs(wd * p));
    double d = g, bound_d = bound_g;
    if (use_momentum) {
      double b0 = buf->v[i];
      double b = a->first_step ? g : mom * b0 + omd * g;
      double bound_b = a->first_step ? bound_g
                                     : 3 * (fabs(mom * b0) + fabs(omd * g)) +
                                           fabs(omd) * (bound_g + 2 * fabs(g));
      buf->v[i] = b;
      buf->bound[i] = bound_b;
      if (a->nesterov) {
        d = g + mom * b;
        bound_d = bound_g + mom * bound_b + 3 * (fabs(g) + fabs(mom * b));
      } else {
        d = b;
        bound_d = bound_b;
      }
    }
    double updated = p - lr * d;
    param->v[i] = updated;
    param->bound[i] = 2 * (fabs(p) + 2 * fabs(lr * d)) + fabs(lr) * bound_d;
  }
  return TSR_OK;
}

static tsr_status adam_compute(tsr_oracle_call *call) {
  const tsr_adam_attrs *a = call->attrs;
  const tsr_oracle_tensor *grad = &call->inputs[0];
  tsr_oracle_tensor *param = &call->outputs[0], *m = &call->outputs[1], *v = &call->outputs[2];
  if (a->step < 1 || a->beta1 < 0 || a->beta1 >= 1 || a->beta2 < 0 || a->beta2 >= 1 || a->eps < 0 ||
      a->lr < 0 || a->weight_decay < 0) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "adam_update: attribute out of range");
  }
  tsr_dtype_t dt = param->dtype;
  double b1 = tsr_oracle_attr(a->beta1, dt);
  double b2 = tsr_oracle_attr(a->beta2, dt), eps = tsr_oracle_attr(a->eps, dt);
  double wd = tsr_oracle_attr(a->weight_decay, dt);
  // Bias corrections in float64, from the attributes as given; the
  // coefficients formed from them in float64 and rounded once to the
  // compute type (docs/abi.md 10.25), as PyTorch passes its Python floats.
  double bc1 = 1 - pow(a->beta1, (double)a->step);
  double bc2 = 1 - pow(a->beta2, (double)a->step);
  double omb1 = tsr_oracle_attr(1 - a->beta1, dt), omb2 = tsr_oracle_attr(1 - a->beta2, dt);
  double step_size = tsr_oracle_attr(a->lr / bc1, dt);
  double decay = tsr_oracle_attr(1 - a->lr * a->weight_decay, dt);
  tsr_oracle_mark(param, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(m, TSR_ORACLE_TOLERANCE);
  tsr_oracle_mark(v, TSR_ORACLE_TOLERANCE);
  for (int64_t i = 0; i < param->numel; ++i) {
    double p = param->v[i], g, bound_p = 0, bound_g;
    if (a->decoupled_weight_decay) {
      p = p * decay;
      bound_p = 3 * fabs(p);
      g = grad->v[i];
      bound_g = 0;
    } else {
      g = grad->v[i] + wd * p;
      bound_g = 2 * (fabs(grad->v[i]) + fabs(wd * p));
    }
    double m1 = b1 * m->v[i] + omb1 * g;
    double bound_m = 3 * (fabs(b1 * m->v[i]) + fabs(omb1 * g)) + omb1 * bound_g;
    double v1 = b2 * v->v[i] + omb2 * g * g;
    double bound_v = 3 * (fabs(b2 * v->v[i]) + fabs(omb2 * g * g)) + omb2 * 2 * fabs(g) * bound_g;
    double denom = sqrt(v1 / bc2) + eps;
    double step = step_size * m1 / denom;
    double rel = 6 + (fabs(m1) > 0 ? bound_m / fabs(m1) : 0) +
                 (v1 > 0 ? 0.5 * bound_v / v1 * sqrt(v1 / bc2) / denom : 0);
    m->v[i] = m1;
    m->bound[i] = bound_m;
    v->v[i] = v1;
    v->bound[i] = bound_v;
    param->v[i] = p - step;
    param->bound[i] = bound_p + 2 * (fabs(p) + fabs(step)) + fabs(step) * rel;
  }
  return TSR_OK;
}

tsr_status tsr_oracle_optim_compute(tsr_oracle_call *call) {
  if (call->num_inputs != 1) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "optimizer update: one input (grad)");
  }
  if (call->op == TSR_OP_SGD_UPDATE) {
    if (call->num_outputs != 2) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "sgd_update: 2 outputs");
    return sgd_compute(call);
  }
  if (call->num_outputs != 3) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "adam_update: 3 outputs");
  return adam_compute(call);
}
