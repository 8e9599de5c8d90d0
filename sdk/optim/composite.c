// RMSprop and Adagrad: torch.optim's update rules as compositions of
// elementwise ops (BINARY, UNARY SQRT), a handful per parameter and step,
// with no fused catalogue op. Each op is one pass over the parameter, so a
// step is bandwidth-bound at roughly six (Adagrad) to ten (centered RMSprop
// with momentum) passes where SGD_UPDATE makes one.
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "tessera/core_layer.h"
#include "optim_internal.h"
#include "tessera/tessera.h"

enum { TEMPS_MAX = 16 };  // centered RMSprop with momentum makes 10

// The temporaries of one update, released together.
typedef struct temps {
  tsr_tensor *t[TEMPS_MAX];
  int32_t n;
} temps;

static tsr_tensor *keep(temps *tt, tsr_tensor *t) {
  assert(tt->n < TEMPS_MAX);
  if (t != NULL)
    tt->t[tt->n++] = t;
  return t;
}

static void temps_release(temps *tt) {
  for (int32_t i = 0; i < tt->n; ++i) tsr_tensor_release(tt->t[i]);
  tt->n = 0;
}

// A rank-0 tensor of |like|'s device and dtype holding |value|.
static tsr_tensor *scalar(temps *tt, const tsr_tensor *like, double value) {
  return keep(tt, tsr_tensor_full(tsr_tensor_device(like), tsr_tensor_dtype(like), 0, NULL, value));
}

// |out| = |out| * |factor| + |weight| * |x|, in place.
static tsr_status scale_add(temps *tt, tsr_tensor *out, double factor, tsr_tensor *x,
                            double weight) {
  tsr_tensor *f = scalar(tt, out, factor);
  if (f == NULL)
    return tsr_error_status();
  TSR_RETURN_IF_ERROR(tsr_binary_out(out, out, f, TSR_BINARY_MUL, 1.0));
  return tsr_binary_out(out, out, x, TSR_BINARY_ADD, weight);
}

// grad + weight_decay * param, or grad itself (borrowed) without decay.
static tsr_tensor *decayed(temps *tt, tsr_tensor *grad, tsr_tensor *param, double weight_decay) {
  if (weight_decay == 0)
    return grad;
  return keep(tt, tsr_binary(grad, param, TSR_BINARY_ADD, weight_decay));
}

// sqrt(|x|) + eps.
static tsr_tensor *sqrt_eps(temps *tt, tsr_tensor *x, double eps) {
  tsr_tensor *root = keep(tt, tsr_unary(x, TSR_UNARY_SQRT, 0.0));
  tsr_tensor *e = scalar(tt, x, eps);
  if (root == NULL || e == NULL)
    return NULL;
  if (tsr_binary_out(root, root, e, TSR_BINARY_ADD, 1.0) != TSR_OK)
    return NULL;
  return root;
}

static tsr_status rmsprop_update(tsr_optimizer *o, optim_slot *s, tsr_tensor *grad, temps *tt) {
  const tsr_rmsprop_options *r = &o->rmsprop;
  const int32_t k_momentum = r->momentum > 0 ? 1 : -1;
  const int32_t k_grad_avg = r->centered ? o->num_state_kinds - 1 : -1;
  for (int32_t k = 0; k < o->num_state_kinds; ++k) {
    if (s->state[k] == NULL)
      TSR_RETURN_IF_ERROR(tsr_optim_state_create(s, k, 0.0));
  }
  tsr_tensor *p = s->param;
  tsr_tensor *g = decayed(tt, grad, p, o->groups[s->group].weight_decay);
  tsr_tensor *g2 = g ? keep(tt, tsr_square(g)) : NULL;
  if (g2 == NULL)
    return tsr_error_status();
  // square_avg = alpha * square_avg + (1 - alpha) * g^2
  tsr_tensor *square_avg = s->state[0];
  TSR_RETURN_IF_ERROR(scale_add(tt, square_avg, r->alpha, g2, 1.0 - r->alpha));
  tsr_tensor *var = square_avg;
  if (k_grad_avg >= 0) {
    // grad_avg = alpha * grad_avg + (1 - alpha) * g; var = square_avg - grad_avg^2
    tsr_tensor *grad_avg = s->state[k_grad_avg];
    TSR_RETURN_IF_ERROR(scale_add(tt, grad_avg, r->alpha, g, 1.0 - r->alpha));
    tsr_tensor *ga2 = keep(tt, tsr_square(grad_avg));
    var = ga2 ? keep(tt, tsr_sub(square_avg, ga2)) : NULL;
    if (var == NULL)
      return tsr_error_status();
  }
  tsr_tensor *avg = sqrt_eps(tt, var, r->eps);
  tsr_tensor *q = avg ? keep(tt, tsr_div(g, avg)) : NULL;
  if (q == NULL)
    return tsr_error_status();
  if (k_momentum >= 0) {
    // buf = momentum * buf + g / avg; p -= lr * buf
    tsr_tensor *buf = s->state[k_momentum];
    TSR_RETURN_IF_ERROR(scale_add(tt, buf, r->momentum, q, 1.0));
    q = buf;
  }
  return tsr_binary_out(p, p, q, TSR_BINARY_SUB, o->groups[s->group].lr);
}

static tsr_status adagrad_update(tsr_optimizer *o, optim_slot *s, tsr_tensor *grad, int64_t step,
                                 temps *tt) {
  const tsr_adagrad_options *a = &o->adagrad;
  if (s->state[0] == NULL)
    TSR_RETURN_IF_ERROR(tsr_optim_state_create(s, 0, a->initial_accumulator_value));
  tsr_tensor *p = s->param;
  tsr_tensor *g = decayed(tt, grad, p, o->groups[s->group].weight_decay);
  tsr_tensor *g2 = g ? keep(tt, tsr_square(g)) : NULL;
  if (g2 == NULL)
    return tsr_error_status();
  // sum += g^2; p -= clr * g / (sqrt(sum) + eps)
  TSR_RETURN_IF_ERROR(tsr_binary_out(s->state[0], s->state[0], g2, TSR_BINARY_ADD, 1.0));
  tsr_tensor *std = sqrt_eps(tt, s->state[0], a->eps);
  tsr_tensor *q = std ? keep(tt, tsr_div(g, std)) : NULL;
  if (q == NULL)
    return tsr_error_status();
  double clr = o->groups[s->group].lr / (1.0 + (double)(step - 1) * a->lr_decay);
  return tsr_binary_out(p, p, q, TSR_BINARY_SUB, clr);
}

tsr_status tsr_optim_composite_update(tsr_optimizer *o, optim_slot *s, tsr_tensor *grad,
                                      int64_t step) {
  temps tt = {{NULL}, 0};
  // The temporaries are the update's own: no scope of the caller's adopts them.
  int previous = tsr_scope_suspend();
  tsr_status status = o->kind == OPTIM_RMSPROP ? rmsprop_update(o, s, grad, &tt)
                                               : adagrad_update(o, s, grad, step, &tt);
  temps_release(&tt);
  tsr_scope_resume(previous);
  return status;
}
