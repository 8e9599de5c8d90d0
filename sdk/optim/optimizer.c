// Optimizers: SGD (momentum, Nesterov, weight decay), Adam and AdamW, the
// creation of RMSprop and Adagrad (their updates are in composite.c), and
// parameter groups with their own lr and weight decay.
//
// Each parameter's update is one fused op (SGD_UPDATE, ADAM_UPDATE) on the
// parameter's device, run with grad mode off since parameters require grad.
// State follows PyTorch: it appears at the first step that sees a gradient
// for a parameter, and is named "<param>.momentum_buffer", "<param>.exp_avg"
// and "<param>.exp_avg_sq" so checkpoints line up with torch.optim's.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/core_layer.h"
#include "optim_internal.h"
#include "tessera/tessera.h"

// --- options --------------------------------------------------------------------

void tsr_sgd_options_init(tsr_sgd_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->lr = 0.01;
}

void tsr_adam_options_init(tsr_adam_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->lr = 1e-3;
  options->beta1 = 0.9;
  options->beta2 = 0.999;
  options->eps = 1e-8;
  options->weight_decay = 0.0;
}

void tsr_adamw_options_init(tsr_adam_options *options) {
  if (options == NULL)
    return;
  tsr_adam_options_init(options);
  options->weight_decay = 0.01;
  options->decoupled_weight_decay = 1;
}

void tsr_rmsprop_options_init(tsr_rmsprop_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->lr = 1e-2;
  options->alpha = 0.99;
  options->eps = 1e-8;
}

void tsr_adagrad_options_init(tsr_adagrad_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->lr = 1e-2;
  options->eps = 1e-10;
}

// Copies the caller's options over the defaults: fields past its
// struct_size keep their defaults, as for every versioned struct.
static tsr_status options_merge(const char *what, const void *given, void *merged,
                                size_t merged_size) {
  if (given == NULL)
    return TSR_OK;
  size_t size = *(const size_t *)given;
  if (size < sizeof(size_t)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: options->struct_size is %zu; set it with the options' _init function",
                         what, size);
  }
  memcpy(merged, given, size < merged_size ? size : merged_size);
  *(size_t *)merged = merged_size;
  return TSR_OK;
}

static int lr_valid(double lr) {
  return lr >= 0 && isfinite(lr);
}

static tsr_status sgd_options_check(const tsr_sgd_options *o) {
  const char *bad = NULL;
  double value = 0;
  // Written so that NaN fails every range.
  if (!lr_valid(o->lr))
    bad = "lr", value = o->lr;
  else if (!(o->momentum >= 0 && isfinite(o->momentum)))
    bad = "momentum", value = o->momentum;
  else if (!isfinite(o->dampening))
    bad = "dampening", value = o->dampening;
  else if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
    bad = "weight_decay", value = o->weight_decay;
  if (bad != NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optim_sgd: options->%s is %g, outside its range",
                         bad, value);
  }
  if (o->nesterov && !(o->momentum > 0 && o->dampening == 0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "optim_sgd: nesterov needs momentum > 0 and dampening 0; got momentum "
                         "%g, dampening %g",
                         o->momentum, o->dampening);
  }
  if (o->reserved != 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optim_sgd: options->reserved is %u, not 0",
                         (unsigned)o->reserved);
  }
  return TSR_OK;
}

static tsr_status adam_options_check(const tsr_adam_options *o) {
  const char *bad = NULL;
  double value = 0;
  if (!lr_valid(o->lr))
    bad = "lr", value = o->lr;
  else if (!(o->beta1 >= 0 && o->beta1 < 1))
    bad = "beta1", value = o->beta1;
  else if (!(o->beta2 >= 0 && o->beta2 < 1))
    bad = "beta2", value = o->beta2;
  else if (!(o->eps > 0 && isfinite(o->eps)))
    bad = "eps", value = o->eps;
  else if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
    bad = "weight_decay", value = o->weight_decay;
  if (bad != NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optim_adam: options->%s is %g, outside its range",
                         bad, value);
  }
  if (o->reserved != 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optim_adam: options->reserved is %u, not 0",
                         (unsigned)o->reserved);
  }
  return TSR_OK;
}

static tsr_status rmsprop_options_check(const tsr_rmsprop_options *o) {
  const char *bad = NULL;
  double value = 0;
  if (!lr_valid(o->lr))
    bad = "lr", value = o->lr;
  else if (!(o->alpha >= 0 && o->alpha <= 1))
    bad = "alpha", value = o->alpha;
  else if (!(o->eps >= 0 && isfinite(o->eps)))
    bad = "eps", value = o->eps;
  else if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
    bad = "weight_decay", value = o->weight_decay;
  else if (!(o->momentum >= 0 && isfinite(o->momentum)))
    bad = "momentum", value = o->momentum;
  if (bad != NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "optim_rmsprop: options->%s is %g, outside its range", bad, value);
  }
  if (o->centered > 1 || o->reserved != 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optim_rmsprop: options->%s is %u, not %s",
                         o->reserved ? "reserved" : "centered",
                         (unsigned)(o->reserved ? o->reserved : o->centered),
                         o->reserved ? "0" : "0 or 1");
  }
  return TSR_OK;
}

static tsr_status adagrad_options_check(const tsr_adagrad_options *o) {
  const char *bad = NULL;
  double value = 0;
  if (!lr_valid(o->lr))
    bad = "lr", value = o->lr;
  else if (!(o->lr_decay >= 0 && isfinite(o->lr_decay)))
    bad = "lr_decay", value = o->lr_decay;
  else if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
    bad = "weight_decay", value = o->weight_decay;
  else if (!(o->initial_accumulator_value >= 0 && isfinite(o->initial_accumulator_value)))
    bad = "initial_accumulator_value", value = o->initial_accumulator_value;
  else if (!(o->eps >= 0 && isfinite(o->eps)))
    bad = "eps", value = o->eps;
  if (bad != NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "optim_adagrad: options->%s is %g, outside its range", bad, value);
  }
  return TSR_OK;
}

// --- creation -------------------------------------------------------------------

static char *string_copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (copy != NULL)
    memcpy(copy, s, n);
  return copy;
}

static char *string_join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = malloc(na + 1 + nb + 1);
  if (s == NULL)
    return NULL;
  memcpy(s, a, na);
  s[na] = '.';
  memcpy(s + na + 1, b, nb + 1);
  return s;
}

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

static tsr_status params_check(const char *what, int32_t count, tsr_tensor *const *params,
                               const char *const *names) {
  if (count <= 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: count is %d; an optimizer needs a parameter",
                         what, count);
  }
  if (params == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: params is NULL", what);
  for (int32_t i = 0; i < count; ++i) {
    const tsr_tensor *p = params[i];
    if (p == NULL)
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: params[%d] is NULL", what, i);
    if (!is_float(tsr_tensor_dtype(p))) {
      return tsr_fail(tsr_tensor_device(p), TSR_INVALID_ARGUMENT,
                      "%s: params[%d] has dtype %d; parameters must be float", what, i,
                      (int)tsr_tensor_dtype(p));
    }
    for (int32_t j = 0; j < i; ++j) {
      // Two handles on one storage would be updated twice per step.
      if (params[j] == p || tsr_tensor_shares_storage(params[j], p)) {
        return tsr_fail(tsr_tensor_device(p), TSR_INVALID_ARGUMENT,
                        "%s: params[%d] and params[%d] are the same tensor or share storage", what,
                        j, i);
      }
    }
    if (names != NULL) {
      if (names[i] == NULL || names[i][0] == '\0') {
        return tsr_fail(tsr_tensor_device(p), TSR_INVALID_ARGUMENT, "%s: names[%d] is %s", what, i,
                        names[i] == NULL ? "NULL" : "empty");
      }
      for (int32_t j = 0; j < i; ++j) {
        if (strcmp(names[j], names[i]) == 0) {
          return tsr_fail(tsr_tensor_device(p), TSR_INVALID_ARGUMENT,
                          "%s: names[%d] and names[%d] are both \"%s\"", what, j, i, names[i]);
        }
      }
    }
  }
  return TSR_OK;
}

void tsr_optimizer_destroy(tsr_optimizer *optimizer) {
  if (optimizer == NULL)
    return;
  if (optimizer->slots != NULL) {
    for (int32_t i = 0; i < optimizer->count; ++i) {
      optim_slot *s = &optimizer->slots[i];
      tsr_tensor_unref(s->param);  // retained at creation, never a scope's
      free(s->name);
      for (int32_t k = 0; k < OPTIM_MAX_STATES; ++k) {
        free(s->state_names[k]);
        tsr_tensor_release(s->state[k]);
      }
    }
  }
  for (int32_t i = 0; i < optimizer->num_empties; ++i) {
    tsr_tensor_release(optimizer->empties[i].tensor);
  }
  free(optimizer->empties);
  free(optimizer->groups);
  free(optimizer->slots);
  free(optimizer);
}

static tsr_optimizer *optimizer_create(const char *what, int32_t kind, int32_t count,
                                       tsr_tensor *const *params, const char *const *names) {
  if (params_check(what, count, params, names) != TSR_OK)
    return NULL;
  tsr_optimizer *o = calloc(1, sizeof(*o));
  if (o == NULL || (o->slots = calloc((size_t)count, sizeof(optim_slot))) == NULL ||
      (o->groups = calloc(1, sizeof(optim_group))) == NULL) {
    if (o != NULL)
      free(o->slots);
    free(o);
    tsr_fail(tsr_tensor_device(params[0]), TSR_OUT_OF_MEMORY,
             "%s: no host memory for the optimizer", what);
    return NULL;
  }
  o->kind = kind;
  o->count = count;
  o->num_groups = 1;
  return o;
}

// Names the parameters and their states once kind and options are known.
static tsr_optimizer *optimizer_finish(const char *what, tsr_optimizer *o,
                                       tsr_tensor *const *params, const char *const *names) {
  for (int32_t i = 0; i < o->count; ++i) {
    optim_slot *s = &o->slots[i];
    char index_name[16];
    snprintf(index_name, sizeof(index_name), "%d", i);
    s->name = string_copy(names != NULL ? names[i] : index_name);
    int ok = s->name != NULL;
    for (int32_t k = 0; ok && k < o->num_state_kinds; ++k) {
      s->state_names[k] = string_join(s->name, o->state_kinds[k]);
      ok = s->state_names[k] != NULL;
    }
    if (!ok) {
      tsr_fail(tsr_tensor_device(params[0]), TSR_OUT_OF_MEMORY, "%s: no host memory for the names",
               what);
      tsr_optimizer_destroy(o);
      return NULL;
    }
    s->param = tsr_tensor_retain(params[i]);
  }
  return o;
}

tsr_optimizer *tsr_optim_sgd(int32_t count, tsr_tensor *const *params, const char *const *names,
                             const tsr_sgd_options *options) {
  tsr_sgd_options merged;
  tsr_sgd_options_init(&merged);
  if (options_merge("optim_sgd", options, &merged, sizeof(merged)) != TSR_OK ||
      sgd_options_check(&merged) != TSR_OK) {
    return NULL;
  }
  tsr_optimizer *o = optimizer_create("optim_sgd", OPTIM_SGD, count, params, names);
  if (o == NULL)
    return NULL;
  o->sgd = merged;
  o->groups[0] = (optim_group){merged.lr, merged.weight_decay, merged.lr};
  // Without momentum SGD keeps no state, as torch.optim.SGD.
  if (merged.momentum != 0) {
    o->num_state_kinds = 1;
    o->state_kinds[0] = "momentum_buffer";
  }
  return optimizer_finish("optim_sgd", o, params, names);
}

tsr_optimizer *tsr_optim_adam(int32_t count, tsr_tensor *const *params, const char *const *names,
                              const tsr_adam_options *options) {
  tsr_adam_options merged;
  tsr_adam_options_init(&merged);
  if (options_merge("optim_adam", options, &merged, sizeof(merged)) != TSR_OK ||
      adam_options_check(&merged) != TSR_OK) {
    return NULL;
  }
  tsr_optimizer *o = optimizer_create("optim_adam", OPTIM_ADAM, count, params, names);
  if (o == NULL)
    return NULL;
  o->adam = merged;
  o->groups[0] = (optim_group){merged.lr, merged.weight_decay, merged.lr};
  o->num_state_kinds = 2;
  o->state_kinds[0] = "exp_avg";
  o->state_kinds[1] = "exp_avg_sq";
  return optimizer_finish("optim_adam", o, params, names);
}

tsr_optimizer *tsr_optim_rmsprop(int32_t count, tsr_tensor *const *params,
                                 const char *const *names, const tsr_rmsprop_options *options) {
  tsr_rmsprop_options merged;
  tsr_rmsprop_options_init(&merged);
  if (options_merge("optim_rmsprop", options, &merged, sizeof(merged)) != TSR_OK ||
      rmsprop_options_check(&merged) != TSR_OK) {
    return NULL;
  }
  tsr_optimizer *o = optimizer_create("optim_rmsprop", OPTIM_RMSPROP, count, params, names);
  if (o == NULL)
    return NULL;
  o->rmsprop = merged;
  o->groups[0] = (optim_group){merged.lr, merged.weight_decay, merged.lr};
  // torch.optim.RMSprop's states, in its order; the update finds them by name.
  o->state_kinds[o->num_state_kinds++] = "square_avg";
  if (merged.momentum > 0)
    o->state_kinds[o->num_state_kinds++] = "momentum_buffer";
  if (merged.centered)
    o->state_kinds[o->num_state_kinds++] = "grad_avg";
  return optimizer_finish("optim_rmsprop", o, params, names);
}

tsr_optimizer *tsr_optim_adagrad(int32_t count, tsr_tensor *const *params,
                                 const char *const *names, const tsr_adagrad_options *options) {
  tsr_adagrad_options merged;
  tsr_adagrad_options_init(&merged);
  if (options_merge("optim_adagrad", options, &merged, sizeof(merged)) != TSR_OK ||
      adagrad_options_check(&merged) != TSR_OK) {
    return NULL;
  }
  tsr_optimizer *o = optimizer_create("optim_adagrad", OPTIM_ADAGRAD, count, params, names);
  if (o == NULL)
    return NULL;
  o->adagrad = merged;
  o->groups[0] = (optim_group){merged.lr, merged.weight_decay, merged.lr};
  o->num_state_kinds = 1;
  o->state_kinds[0] = "sum";
  return optimizer_finish("optim_adagrad", o, params, names);
}

// Collects |module|'s parameters and names (borrowed from the module) into
// arrays the caller frees.
static tsr_status module_params_get(const char *what, tsr_module *module, int32_t *out_count,
                                    tsr_tensor ***out_params, const char ***out_names) {
  *out_params = NULL;
  *out_names = NULL;
  if (module == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: module is NULL", what);
  int32_t count = tsr_module_parameter_count(module);
  if (count <= 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: the module (%s) has no parameters", what,
                         tsr_module_kind(module));
  }
  tsr_tensor **params = calloc((size_t)count, sizeof(*params));
  const char **names = calloc((size_t)count, sizeof(*names));
  if (params == NULL || names == NULL) {
    free(params);
    free(names);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory for %d parameters", what, count);
  }
  for (int32_t i = 0; i < count; ++i) {
    tsr_status status = tsr_module_parameter_get(module, i, &names[i], &params[i]);
    if (status != TSR_OK) {
      free(params);
      free(names);
      return status;
    }
  }
  *out_count = count;
  *out_params = params;
  *out_names = names;
  return TSR_OK;
}

tsr_optimizer *tsr_optim_sgd_for_module(tsr_module *module, const tsr_sgd_options *options) {
  int32_t count = 0;
  tsr_tensor **params;
  const char **names;
  if (module_params_get("optim_sgd_for_module", module, &count, &params, &names) != TSR_OK) {
    return NULL;
  }
  tsr_optimizer *o = tsr_optim_sgd(count, params, names, options);
  free(params);
  free(names);
  return o;
}

tsr_optimizer *tsr_optim_adam_for_module(tsr_module *module, const tsr_adam_options *options) {
  int32_t count = 0;
  tsr_tensor **params;
  const char **names;
  if (module_params_get("optim_adam_for_module", module, &count, &params, &names) != TSR_OK) {
    return NULL;
  }
  tsr_optimizer *o = tsr_optim_adam(count, params, names, options);
  free(params);
  free(names);
  return o;
}

tsr_optimizer *tsr_optim_rmsprop_for_module(tsr_module *module,
                                            const tsr_rmsprop_options *options) {
  int32_t count = 0;
  tsr_tensor **params;
  const char **names;
  if (module_params_get("optim_rmsprop_for_module", module, &count, &params, &names) != TSR_OK)
    return NULL;
  tsr_optimizer *o = tsr_optim_rmsprop(count, params, names, options);
  free(params);
  free(names);
  return o;
}

tsr_optimizer *tsr_optim_adagrad_for_module(tsr_module *module,
                                            const tsr_adagrad_options *options) {
  int32_t count = 0;
  tsr_tensor **params;
  const char **names;
  if (module_params_get("optim_adagrad_for_module", module, &count, &params, &names) != TSR_OK)
    return NULL;
  tsr_optimizer *o = tsr_optim_adagrad(count, params, names, options);
  free(params);
  free(names);
  return o;
}

// --- parameter groups -------------------------------------------------------------

tsr_status tsr_optimizer_group_add(tsr_optimizer *optimizer, int32_t count,
                                   tsr_tensor *const *params, const char *const *names, double lr,
                                   double weight_decay, int32_t *out_group) {
  const char *what = "optimizer_group_add";
  if (out_group != NULL)
    *out_group = -1;
  if (optimizer == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: optimizer is NULL", what);
  if (!lr_valid(lr))
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: lr is %g, outside its range", what, lr);
  if (!(weight_decay >= 0 && isfinite(weight_decay))) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: weight_decay is %g, outside its range", what,
                         weight_decay);
  }
  TSR_RETURN_IF_ERROR(params_check(what, count, params, names));
  tsr_optimizer *o = optimizer;
  // No parameter in two groups, no name twice (PyTorch refuses the first).
  for (int32_t i = 0; i < count; ++i) {
    for (int32_t j = 0; j < o->count; ++j) {
      const optim_slot *s = &o->slots[j];
      if (s->param == params[i] || tsr_tensor_shares_storage(s->param, params[i])) {
        return tsr_fail(tsr_tensor_device(params[i]), TSR_INVALID_ARGUMENT,
                        "%s: params[%d] is already parameter \"%s\" of the optimizer", what, i,
                        s->name);
      }
      char index_name[16];
      snprintf(index_name, sizeof(index_name), "%d", o->count + i);
      const char *name = names != NULL ? names[i] : index_name;
      if (strcmp(s->name, name) == 0) {
        return tsr_fail(tsr_tensor_device(params[i]), TSR_INVALID_ARGUMENT,
                        "%s: the name \"%s\" of params[%d] is taken", what, name, i);
      }
    }
  }
  optim_group *groups = realloc(o->groups, sizeof(*groups) * (size_t)(o->num_groups + 1));
  if (groups != NULL)
    o->groups = groups;
  optim_slot *slots =
      groups ? realloc(o->slots, sizeof(*slots) * (size_t)(o->count + count)) : NULL;
  if (slots == NULL) {
    return tsr_fail(tsr_tensor_device(params[0]), TSR_OUT_OF_MEMORY,
                    "%s: no host memory for %d parameters", what, count);
  }
  o->slots = slots;
  memset(slots + o->count, 0, sizeof(*slots) * (size_t)count);
  int ok = 1;
  for (int32_t i = 0; i < count && ok; ++i) {
    optim_slot *s = &slots[o->count + i];
    char index_name[16];
    snprintf(index_name, sizeof(index_name), "%d", o->count + i);
    s->name = string_copy(names != NULL ? names[i] : index_name);
    ok = s->name != NULL;
    for (int32_t k = 0; ok && k < o->num_state_kinds; ++k) {
      s->state_names[k] = string_join(s->name, o->state_kinds[k]);
      ok = s->state_names[k] != NULL;
    }
  }
  if (!ok) {
    for (int32_t i = 0; i < count; ++i) {
      free(slots[o->count + i].name);
      for (int32_t k = 0; k < OPTIM_MAX_STATES; ++k) free(slots[o->count + i].state_names[k]);
    }
    return tsr_fail(tsr_tensor_device(params[0]), TSR_OUT_OF_MEMORY,
                    "%s: no host memory for the names", what);
  }
  for (int32_t i = 0; i < count; ++i) {
    slots[o->count + i].param = tsr_tensor_retain(params[i]);
    slots[o->count + i].group = o->num_groups;
  }
  o->count += count;
  // A schedule attached now scales the group from its lr as well.
  o->groups[o->num_groups] = (optim_group){lr, weight_decay, lr};
  if (out_group != NULL)
    *out_group = o->num_groups;
  ++o->num_groups;
  return TSR_OK;
}

int32_t tsr_optimizer_group_count(const tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_group_count: optimizer is NULL");
    return 0;
  }
  return optimizer->num_groups;
}

double tsr_optimizer_group_lr(const tsr_optimizer *optimizer, int32_t group) {
  if (optimizer == NULL || group < 0 || group >= optimizer->num_groups) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_group_lr: %s", optimizer == NULL ?
                  "optimizer is NULL" : "group is out of range");
    return NAN;
  }
  return optimizer->groups[group].lr;
}

tsr_status tsr_optimizer_group_lr_set(tsr_optimizer *optimizer, int32_t group, double lr) {
  if (optimizer == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_group_lr_set: optimizer is NULL");
  if (group < 0 || group >= optimizer->num_groups) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "optimizer_group_lr_set: group is %d, outside [0, %d)", group,
                         optimizer->num_groups);
  }
  if (!lr_valid(lr)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "optimizer_group_lr_set: lr is %g; it must be finite and >= 0", lr);
  }
  optimizer->groups[group].lr = lr;
  return TSR_OK;
}

int32_t tsr_optimizer_parameter_count(const tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_parameter_count: optimizer is NULL");
    return 0;
  }
  return optimizer->count;
}

tsr_status tsr_optimizer_parameter_get(const tsr_optimizer *optimizer, int32_t index,
                                       const char **out_name, tsr_tensor **out_param) {
  if (out_name != NULL)
    *out_name = NULL;
  if (out_param != NULL)
    *out_param = NULL;
  if (optimizer == NULL || out_name == NULL || out_param == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_parameter_get: %s is NULL",
                         optimizer == NULL  ? "optimizer"
                         : out_name == NULL ? "out_name"
                                            : "out_param");
  }
  if (index < 0 || index >= optimizer->count) {
    return tsr_fail(tsr_tensor_device(optimizer->slots[0].param), TSR_INVALID_ARGUMENT,
                    "optimizer_parameter_get: index %d is outside [0, %d)", index,
                    optimizer->count);
  }
  *out_name = optimizer->slots[index].name;
  *out_param = optimizer->slots[index].param;
  return TSR_OK;
}

// --- state ----------------------------------------------------------------------

// Suspends scopes: the optimizer owns the state.
tsr_status tsr_optim_state_create(optim_slot *slot, int32_t k, double value) {
  const tsr_tensor *p = slot->param;
  int previous = tsr_scope_suspend();
  slot->state[k] = tsr_tensor_full(tsr_tensor_device(p), tsr_tensor_dtype(p), tsr_tensor_rank(p),
                                   tsr_tensor_sizes(p), value);
  tsr_scope_resume(previous);
  if (slot->state[k] == NULL) {
    return tsr_fail(tsr_tensor_device(p), tsr_error_status(), "optimizer_step: state %s: %s",
                    slot->state_names[k], tsr_error_message());
  }
  return TSR_OK;
}

// The empty momentum_buf for |param|'s device and dtype. SGD_UPDATE ignores
// momentum_buf when momentum is 0 (docs/abi.md), and the core has no NULL
// operand: a numel-0 tensor has an empty extent, so it is read, written
// and aliased by nothing, and costs no element of memory.
static tsr_tensor *empty_get(tsr_optimizer *o, const tsr_tensor *param) {
  for (int32_t i = 0; i < o->num_empties; ++i) {
    if (o->empties[i].device == tsr_tensor_device(param) &&
        o->empties[i].dtype == tsr_tensor_dtype(param)) {
      return o->empties[i].tensor;
    }
  }
  optim_empty *grown = realloc(o->empties, sizeof(*grown) * (size_t)(o->num_empties + 1));
  if (grown == NULL) {
    tsr_fail(tsr_tensor_device(param), TSR_OUT_OF_MEMORY, "optimizer_step: no host memory");
    return NULL;
  }
  o->empties = grown;
  const int64_t zero = 0;
  int previous = tsr_scope_suspend();
  tsr_tensor *t = tsr_tensor_empty(tsr_tensor_device(param), tsr_tensor_dtype(param), 1, &zero);
  tsr_scope_resume(previous);
  if (t == NULL)
    return NULL;
  o->empties[o->num_empties++] =
      (optim_empty){tsr_tensor_device(param), tsr_tensor_dtype(param), t};
  return t;
}

static tsr_status slot_update(tsr_optimizer *o, optim_slot *s, tsr_tensor *grad, int64_t step) {
  const optim_group *group = &o->groups[s->group];
  if (o->kind == OPTIM_SGD) {
    tsr_sgd_attrs attrs = {
        sizeof(attrs),   group->lr, o->sgd.momentum, o->sgd.dampening, group->weight_decay,
        o->sgd.nesterov, 0};
    tsr_tensor *outputs[2] = {s->param, NULL};
    if (o->num_state_kinds == 1) {
      // torch.optim.SGD starts the buffer as a copy of the first gradient:
      // first_step asks the kernel for exactly that. A buffer restored with
      // state_set is continued instead.
      if (s->state[0] == NULL) {
        TSR_RETURN_IF_ERROR(tsr_optim_state_create(s, 0, 0.0));
        attrs.first_step = 1;
      }
      outputs[1] = s->state[0];
    } else {
      outputs[1] = empty_get(o, s->param);
      if (outputs[1] == NULL)
        return tsr_error_status();
    }
    return tsr_op_run(TSR_OP_SGD_UPDATE, 1, &grad, 2, outputs, &attrs);
  }
  if (o->kind == OPTIM_RMSPROP || o->kind == OPTIM_ADAGRAD)
    return tsr_optim_composite_update(o, s, grad, step);
  for (int32_t k = 0; k < 2; ++k) {
    if (s->state[k] == NULL)
      TSR_RETURN_IF_ERROR(tsr_optim_state_create(s, k, 0.0));
  }
  tsr_adam_attrs attrs = {sizeof(attrs),
                          group->lr,
                          o->adam.beta1,
                          o->adam.beta2,
                          o->adam.eps,
                          group->weight_decay,
                          step,
                          o->adam.decoupled_weight_decay,
                          0};
  tsr_tensor *outputs[3] = {s->param, s->state[0], s->state[1]};
  return tsr_op_run(TSR_OP_ADAM_UPDATE, 1, &grad, 3, outputs, &attrs);
}

tsr_status tsr_optimizer_step(tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_step: optimizer is NULL");
  }
  // One step counter for the whole optimizer, where torch.optim.Adam keeps
  // one per parameter: they agree whenever every parameter gets a gradient
  // at every step. A parameter skipped for some steps gets the optimizer's
  // count for its bias correction here, and its own count in PyTorch. One
  // counter is what a checkpoint stores and restores in one number.
  int64_t step = optimizer->steps + 1;
  int grad_mode = tsr_grad_mode_set(0);
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < optimizer->count && status == TSR_OK; ++i) {
    optim_slot *s = &optimizer->slots[i];
    tsr_tensor *grad = tsr_tensor_grad(s->param);
    if (grad == NULL)
      continue;  // no gradient: parameter and state stay as they are
    status = slot_update(optimizer, s, grad, step);
    tsr_tensor_release(grad);
    if (status != TSR_OK) {
      status = tsr_fail(tsr_tensor_device(s->param), status, "optimizer_step: parameter \"%s\": %s",
                        s->name, tsr_error_message());
    }
  }
  tsr_grad_mode_set(grad_mode);
  // A failed step does not count: the parameters before the failing one are
  // updated, so the caller can only stop or restore a checkpoint anyway.
  if (status == TSR_OK)
    optimizer->steps = step;
  return status;
}

void tsr_optimizer_zero_grad(tsr_optimizer *optimizer) {
  if (optimizer == NULL)
    return;
  // Clearing cannot fail: the parameter is valid and NULL needs no checks.
  for (int32_t i = 0; i < optimizer->count; ++i) {
    tsr_status cleared = tsr_tensor_grad_set(optimizer->slots[i].param, NULL);
    (void)cleared;
  }
}

double tsr_optimizer_lr(const tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_lr: optimizer is NULL");
    return NAN;
  }
  return optimizer->groups[0].lr;
}

tsr_status tsr_optimizer_lr_set(tsr_optimizer *optimizer, double lr) {
  if (optimizer == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_lr_set: optimizer is NULL");
  }
  if (!lr_valid(lr)) {
    return tsr_fail(tsr_tensor_device(optimizer->slots[0].param), TSR_INVALID_ARGUMENT,
                    "optimizer_lr_set: lr is %g; it must be finite and >= 0", lr);
  }
  for (int32_t g = 0; g < optimizer->num_groups; ++g) optimizer->groups[g].lr = lr;
  return TSR_OK;
}

int64_t tsr_optimizer_step_count(const tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_step_count: optimizer is NULL");
    return -1;
  }
  return optimizer->steps;
}

tsr_status tsr_optimizer_step_count_set(tsr_optimizer *optimizer, int64_t steps) {
  if (optimizer == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_step_count_set: optimizer is NULL");
  }
  if (steps < 0 || steps == INT64_MAX) {
    return tsr_fail(tsr_tensor_device(optimizer->slots[0].param), TSR_INVALID_ARGUMENT,
                    "optimizer_step_count_set: steps is %lld; it must be >= 0", (long long)steps);
  }
  optimizer->steps = steps;
  return TSR_OK;
}

int32_t tsr_optimizer_state_count(const tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_state_count: optimizer is NULL");
    return 0;
  }
  int32_t n = 0;
  for (int32_t i = 0; i < optimizer->count; ++i) {
    for (int32_t k = 0; k < optimizer->num_state_kinds; ++k)
      n += optimizer->slots[i].state[k] != NULL;
  }
  return n;
}

tsr_status tsr_optimizer_state_get(const tsr_optimizer *optimizer, int32_t index,
                                   const char **out_name, tsr_tensor **out_tensor) {
  if (out_name != NULL)
    *out_name = NULL;
  if (out_tensor != NULL)
    *out_tensor = NULL;
  if (optimizer == NULL || out_name == NULL || out_tensor == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_state_get: %s is NULL",
                         optimizer == NULL  ? "optimizer"
                         : out_name == NULL ? "out_name"
                                            : "out_tensor");
  }
  int32_t n = 0;
  for (int32_t i = 0; i < optimizer->count; ++i) {
    const optim_slot *s = &optimizer->slots[i];
    for (int32_t k = 0; k < optimizer->num_state_kinds; ++k) {
      if (s->state[k] == NULL)
        continue;
      if (n++ == index) {
        *out_name = s->state_names[k];
        *out_tensor = s->state[k];
        return TSR_OK;
      }
    }
  }
  return tsr_fail(tsr_tensor_device(optimizer->slots[0].param), TSR_INVALID_ARGUMENT,
                  "optimizer_state_get: index %d is outside [0, %d)", index, n);
}

tsr_status tsr_optimizer_state_set(tsr_optimizer *optimizer, const char *name, tsr_tensor *value) {
  if (optimizer == NULL || name == NULL || value == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_state_set: %s is NULL",
                         optimizer == NULL ? "optimizer"
                         : name == NULL    ? "name"
                                           : "value");
  }
  optim_slot *s = NULL;
  int32_t k = 0;
  for (int32_t i = 0; i < optimizer->count && s == NULL; ++i) {
    for (k = 0; k < optimizer->num_state_kinds; ++k) {
      if (strcmp(optimizer->slots[i].state_names[k], name) == 0) {
        s = &optimizer->slots[i];
        break;
      }
    }
  }
  tsr_device *device = tsr_tensor_device(optimizer->slots[0].param);
  if (s == NULL) {
    static const char *const hints[] = {
        "SGD's states are \"<param>.momentum_buffer\"",
        "Adam's states are \"<param>.exp_avg\" and \"<param>.exp_avg_sq\"",
        ("RMSprop's states are \"<param>.square_avg\", \"<param>.momentum_buffer\" "
         "(momentum) and \"<param>.grad_avg\" (centered)"),
        "Adagrad's state is \"<param>.sum\""};
    return tsr_fail(device, TSR_NOT_FOUND,
                    "optimizer_state_set: no state \"%s\" in this optimizer (%s)", name,
                    optimizer->num_state_kinds == 0 ? "SGD with momentum 0 keeps no state"
                                                    : hints[optimizer->kind]);
  }
  const tsr_tensor *p = s->param;
  device = tsr_tensor_device(p);
  if (tsr_tensor_dtype(value) != tsr_tensor_dtype(p)) {
    return tsr_fail(device, TSR_INVALID_ARGUMENT,
                    "optimizer_state_set: \"%s\" has dtype %d; the parameter's is %d", name,
                    (int)tsr_tensor_dtype(value), (int)tsr_tensor_dtype(p));
  }
  int same = tsr_tensor_rank(value) == tsr_tensor_rank(p);
  for (int32_t d = 0; same && d < tsr_tensor_rank(p); ++d)
    same = tsr_tensor_sizes(value)[d] == tsr_tensor_sizes(p)[d];
  if (!same) {
    char have[160] = "", want[160] = "";
    for (int32_t d = 0; d < tsr_tensor_rank(value); ++d) {
      size_t at = strlen(have);
      snprintf(have + at, sizeof(have) - at, "%s%lld", d ? "," : "",
               (long long)tsr_tensor_sizes(value)[d]);
    }
    for (int32_t d = 0; d < tsr_tensor_rank(p); ++d) {
      size_t at = strlen(want);
      snprintf(want + at, sizeof(want) - at, "%s%lld", d ? "," : "",
               (long long)tsr_tensor_sizes(p)[d]);
    }
    return tsr_fail(device, TSR_INVALID_ARGUMENT,
                    "optimizer_state_set: \"%s\" has sizes [%s]; the parameter's are [%s]", name,
                    have, want);
  }
  int grad_mode = tsr_grad_mode_set(0);
  int previous = tsr_scope_suspend();
  tsr_status status = TSR_OK;
  tsr_tensor *state = s->state[k];
  if (state == NULL) {
    state = tsr_tensor_empty(device, tsr_tensor_dtype(p), tsr_tensor_rank(p), tsr_tensor_sizes(p));
    if (state == NULL)
      status = tsr_error_status();
  }
  tsr_tensor *src = value;
  if (status == TSR_OK && tsr_tensor_device(value) != device) {
    src = tsr_tensor_to_device(value, device);
    if (src == NULL)
      status = tsr_error_status();
  }
  if (status == TSR_OK)
    status = tsr_copy_(state, src);
  if (src != value)
    tsr_tensor_release(src);
  tsr_scope_resume(previous);
  tsr_grad_mode_set(grad_mode);
  if (status != TSR_OK) {
    if (state != s->state[k])
      tsr_tensor_release(state);
    return tsr_fail(device, status, "optimizer_state_set: \"%s\": %s", name, tsr_error_message());
  }
  s->state[k] = state;
  return TSR_OK;
}
