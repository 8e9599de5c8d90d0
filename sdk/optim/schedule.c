// Learning-rate schedules: the closed forms of PyTorch's StepLR,
// CosineAnnealingLR, ExponentialLR, LinearLR and OneCycleLR, and
// ReduceLROnPlateau's rule. A closed form's lr depends only on the epoch and
// each group's base lr; the epoch, the bases and the plateau's counters live
// in the optimizer (optim_schedule_state), so a checkpoint saves and
// restores them whether the schedule was created before or after loading.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/core_layer.h"
#include "optim_internal.h"
#include "tessera/tessera.h"

enum {
  SCHEDULE_STEP = 0,
  SCHEDULE_COSINE = 1,
  SCHEDULE_EXPONENTIAL = 2,
  SCHEDULE_LINEAR = 3,
  SCHEDULE_ONE_CYCLE = 4,
  SCHEDULE_PLATEAU = 5,
  SCHEDULE_KINDS = 6,
};

static const char *const kKindNames[SCHEDULE_KINDS] = {"step",   "cosine",    "exponential",
                                                       "linear", "one-cycle", "plateau"};

struct tsr_lr_schedule {
  tsr_optimizer *optimizer;  // borrowed; outlives the schedule
  int32_t kind;
  int64_t step_size;  // step
  double gamma;       // step, exponential
  int64_t t_max;      // cosine
  double eta_min;
  double start_factor, end_factor;  // linear
  int64_t total_iters;
  tsr_one_cycle_options one_cycle;
  tsr_plateau_options plateau;
};

void tsr_one_cycle_options_init(tsr_one_cycle_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->pct_start = 0.3;
  options->div_factor = 25.0;
  options->final_div_factor = 1e4;
  options->cycle_momentum = 1;
  options->base_momentum = 0.85;
  options->max_momentum = 0.95;
}

void tsr_plateau_options_init(tsr_plateau_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->factor = 0.1;
  options->patience = 10;
  options->threshold = 1e-4;
  options->eps = 1e-8;
}

// OneCycleLR._anneal_func for "cos".
static double cos_anneal(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1.0);
}

// OneCycleLR.get_lr: the lr and, to |out_momentum| when it is not NULL, the
// momentum of |step| (max -> base while the lr rises, base -> max after).
static double one_cycle_lr(const tsr_one_cycle_options *o, int64_t step, double *out_momentum) {
  double initial = o->max_lr / o->div_factor;
  double min_lr = initial / o->final_div_factor;
  double ends[2] = {o->pct_start * (double)o->total_steps - 1.0, (double)o->total_steps - 1.0};
  double starts_lr[2] = {initial, o->max_lr}, ends_lr[2] = {o->max_lr, min_lr};
  double starts_m[2] = {o->max_momentum, o->base_momentum};
  double ends_m[2] = {o->base_momentum, o->max_momentum};
  double start_step = 0;
  int i = 0;
  for (; i < 1 && (double)step > ends[i]; ++i) start_step = ends[i];
  double pct = ((double)step - start_step) / (ends[i] - start_step);
  if (out_momentum != NULL)
    *out_momentum = cos_anneal(starts_m[i], ends_m[i], pct);
  return cos_anneal(starts_lr[i], ends_lr[i], pct);
}

// The optimizer's momentum a one-cycle schedule cycles, or NULL when it has
// none: SGD and RMSprop created with momentum > 0, Adam's beta1.
static double *momentum_field(tsr_optimizer *o) {
  switch (o->kind) {
    case OPTIM_SGD:
      return o->sgd.momentum > 0 ? &o->sgd.momentum : NULL;
    case OPTIM_RMSPROP:
      return o->rmsprop.momentum > 0 ? &o->rmsprop.momentum : NULL;
    case OPTIM_ADAM:
      return &o->adam.beta1;
    default:
      return NULL;
  }
}

// Sets the cycled momentum of |epoch| (a one-cycle schedule with
// cycle_momentum on an optimizer that has one; otherwise nothing).
static void momentum_apply(const tsr_lr_schedule *s, int64_t epoch) {
  double *field = momentum_field(s->optimizer);
  if (s->kind != SCHEDULE_ONE_CYCLE || !s->one_cycle.cycle_momentum || field == NULL)
    return;
  int64_t e = epoch < s->one_cycle.total_steps ? epoch : s->one_cycle.total_steps;
  one_cycle_lr(&s->one_cycle, e, field);
}

void tsr_optim_schedule_sync(tsr_optimizer *optimizer) {
  const optim_schedule_state *st = &optimizer->schedule;
  if (st->attached && st->schedule != NULL)
    momentum_apply(st->schedule, st->epoch);
}

double tsr_optimizer_momentum(const tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_momentum: optimizer is NULL");
    return NAN;
  }
  switch (optimizer->kind) {
    case OPTIM_SGD:
      return optimizer->sgd.momentum;
    case OPTIM_RMSPROP:
      return optimizer->rmsprop.momentum;
    case OPTIM_ADAM:
      return optimizer->adam.beta1;
    default:
      tsr_error_set(TSR_INVALID_ARGUMENT, "optimizer_momentum: Adagrad has no momentum");
      return NAN;
  }
}

static double schedule_lr(const tsr_lr_schedule *s, double base, int64_t epoch) {
  switch (s->kind) {
    case SCHEDULE_STEP:
      return base * pow(s->gamma, (double)(epoch / s->step_size));
    case SCHEDULE_EXPONENTIAL:
      return base * pow(s->gamma, (double)epoch);
    case SCHEDULE_LINEAR: {
      int64_t e = epoch < s->total_iters ? epoch : s->total_iters;
      return base * (s->start_factor + (s->end_factor - s->start_factor) * (double)e /
                                           (double)s->total_iters);
    }
    case SCHEDULE_ONE_CYCLE:
      return one_cycle_lr(&s->one_cycle, epoch, NULL);
    default: {
      int64_t e = epoch < s->t_max ? epoch : s->t_max;
      return s->eta_min +
             (base - s->eta_min) * (1.0 + cos(M_PI * (double)e / (double)s->t_max)) / 2.0;
    }
  }
}

// Sets every group's lr for |epoch|; a failure changes nothing.
static tsr_status schedule_apply(tsr_lr_schedule *s, const char *what, int64_t epoch) {
  tsr_optimizer *o = s->optimizer;
  if (s->kind == SCHEDULE_ONE_CYCLE && epoch > s->one_cycle.total_steps) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: epoch %lld is past the one-cycle schedule's total_steps %lld", what,
                         (long long)epoch, (long long)s->one_cycle.total_steps);
  }
  if (s->kind != SCHEDULE_PLATEAU) {
    for (int32_t g = 0; g < o->num_groups; ++g) {
      double lr = schedule_lr(s, o->groups[g].base_lr, epoch);
      // gamma > 1 can overflow; the optimizer refuses an infinite lr.
      if (!(lr >= 0 && isfinite(lr))) {
        return tsr_error_set(TSR_INVALID_ARGUMENT,
                             "%s: the lr of group %d at epoch %lld is %g; it must be finite and "
                             ">= 0",
                             what, g, (long long)epoch, lr);
      }
    }
    for (int32_t g = 0; g < o->num_groups; ++g)
      o->groups[g].lr = schedule_lr(s, o->groups[g].base_lr, epoch);
  }
  momentum_apply(s, epoch);
  o->schedule.epoch = epoch;
  return TSR_OK;
}

// Attaches a schedule of |kind| to |optimizer|: it continues the state a
// checkpoint loaded for a schedule of its kind, or starts at epoch 0 from
// the groups' current lrs.
static tsr_lr_schedule *schedule_create(const char *what, tsr_optimizer *optimizer, int32_t kind) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: optimizer is NULL", what);
    return NULL;
  }
  optim_schedule_state *st = &optimizer->schedule;
  if (st->attached) {
    tsr_error_set(TSR_INVALID_ARGUMENT,
                  "%s: the optimizer already has a %s schedule; destroy it first", what,
                  kKindNames[st->kind]);
    return NULL;
  }
  if (st->loaded && st->kind != kind) {
    tsr_error_set(TSR_INVALID_ARGUMENT,
                  "%s: the optimizer's checkpoint holds a %s schedule, not a %s schedule", what,
                  kKindNames[st->kind], kKindNames[kind]);
    return NULL;
  }
  tsr_lr_schedule *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory for the schedule", what);
    return NULL;
  }
  s->optimizer = optimizer;
  s->kind = kind;
  return s;
}

// Claims the optimizer's schedule state once the schedule is configured;
// the new closed forms set the lr of their first epoch, as PyTorch's do.
static tsr_lr_schedule *schedule_attach(const char *what, tsr_lr_schedule *s) {
  tsr_optimizer *o = s->optimizer;
  optim_schedule_state *st = &o->schedule;
  if (!st->loaded) {
    for (int32_t g = 0; g < o->num_groups; ++g) o->groups[g].base_lr = o->groups[g].lr;
    st->epoch = 0;
    st->best = s->plateau.mode ? -INFINITY : INFINITY;
    st->num_bad_epochs = 0;
    st->cooldown_counter = 0;
  }
  if (s->kind >= SCHEDULE_EXPONENTIAL && s->kind != SCHEDULE_PLATEAU && !st->loaded &&
      schedule_apply(s, what, st->epoch) != TSR_OK) {
    free(s);
    return NULL;
  }
  if (st->loaded)
    momentum_apply(s, st->epoch);  // the lr came with the checkpoint; the momentum is the epoch's
  st->loaded = 0;
  st->attached = 1;
  st->kind = s->kind;
  st->schedule = s;
  return s;
}

tsr_lr_schedule *tsr_lr_step(tsr_optimizer *optimizer, int64_t step_size, double gamma) {
  if (step_size < 1) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "lr_step: step_size is %lld; it must be >= 1",
                  (long long)step_size);
    return NULL;
  }
  if (!(gamma >= 0 && isfinite(gamma))) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "lr_step: gamma is %g; it must be finite and >= 0", gamma);
    return NULL;
  }
  tsr_lr_schedule *s = schedule_create("lr_step", optimizer, SCHEDULE_STEP);
  if (s == NULL)
    return NULL;
  s->step_size = step_size;
  s->gamma = gamma;
  return schedule_attach("lr_step", s);
}

tsr_lr_schedule *tsr_lr_cosine(tsr_optimizer *optimizer, int64_t t_max, double eta_min) {
  if (t_max < 1) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "lr_cosine: t_max is %lld; it must be >= 1",
                  (long long)t_max);
    return NULL;
  }
  if (!(eta_min >= 0 && isfinite(eta_min))) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "lr_cosine: eta_min is %g; it must be finite and >= 0",
                  eta_min);
    return NULL;
  }
  tsr_lr_schedule *s = schedule_create("lr_cosine", optimizer, SCHEDULE_COSINE);
  if (s == NULL)
    return NULL;
  s->t_max = t_max;
  s->eta_min = eta_min;
  return schedule_attach("lr_cosine", s);
}

tsr_lr_schedule *tsr_lr_exponential(tsr_optimizer *optimizer, double gamma) {
  if (!(gamma >= 0 && isfinite(gamma))) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "lr_exponential: gamma is %g; it must be finite and >= 0",
                  gamma);
    return NULL;
  }
  tsr_lr_schedule *s = schedule_create("lr_exponential", optimizer, SCHEDULE_EXPONENTIAL);
  if (s == NULL)
    return NULL;
  s->gamma = gamma;
  return schedule_attach("lr_exponential", s);
}

tsr_lr_schedule *tsr_lr_linear(tsr_optimizer *optimizer, double start_factor, double end_factor,
                               int64_t total_iters) {
  const char *what = "lr_linear";
  if (!(start_factor > 0 && start_factor <= 1)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: start_factor is %g; it must be in (0, 1]", what,
                  start_factor);
    return NULL;
  }
  if (!(end_factor >= 0 && end_factor <= 1)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: end_factor is %g; it must be in [0, 1]", what,
                  end_factor);
    return NULL;
  }
  if (total_iters < 1) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: total_iters is %lld; it must be >= 1", what,
                  (long long)total_iters);
    return NULL;
  }
  tsr_lr_schedule *s = schedule_create(what, optimizer, SCHEDULE_LINEAR);
  if (s == NULL)
    return NULL;
  s->start_factor = start_factor;
  s->end_factor = end_factor;
  s->total_iters = total_iters;
  return schedule_attach(what, s);
}

tsr_lr_schedule *tsr_lr_one_cycle(tsr_optimizer *optimizer, double max_lr, int64_t total_steps,
                                  const tsr_one_cycle_options *options) {
  const char *what = "lr_one_cycle";
  tsr_one_cycle_options o;
  tsr_one_cycle_options_init(&o);
  if (options != NULL) {
    if (options->struct_size < sizeof(size_t)) {
      tsr_error_set(TSR_INVALID_ARGUMENT,
                    "%s: options->struct_size is %zu; set it with tsr_one_cycle_options_init",
                    what, options->struct_size);
      return NULL;
    }
    memcpy(&o, options, options->struct_size < sizeof(o) ? options->struct_size : sizeof(o));
    o.struct_size = sizeof(o);
  }
  o.max_lr = max_lr;
  o.total_steps = total_steps;
  const char *bad = NULL;
  double value = 0;
  if (!(max_lr >= 0 && isfinite(max_lr)))
    bad = "max_lr", value = max_lr;
  else if (!(o.div_factor > 0 && isfinite(o.div_factor)))
    bad = "options->div_factor", value = o.div_factor;
  else if (!(o.final_div_factor > 0 && isfinite(o.final_div_factor)))
    bad = "options->final_div_factor", value = o.final_div_factor;
  else if (o.cycle_momentum && !(o.base_momentum >= 0 && o.base_momentum < 1))
    bad = "options->base_momentum", value = o.base_momentum;
  else if (o.cycle_momentum && !(o.max_momentum >= 0 && o.max_momentum < 1))
    bad = "options->max_momentum", value = o.max_momentum;
  // Both phases must last: PyTorch divides by their lengths.
  else if (!(o.pct_start > 0 && o.pct_start < 1 && o.pct_start * (double)total_steps > 1 &&
             o.pct_start * (double)total_steps < (double)total_steps))
    bad = "options->pct_start", value = o.pct_start;
  if (total_steps < 2) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: total_steps is %lld; it must be >= 2", what,
                  (long long)total_steps);
    return NULL;
  }
  if (bad != NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT,
                  "%s: %s is %g, outside its range (pct_start * total_steps must exceed 1)", what,
                  bad, value);
    return NULL;
  }
  tsr_lr_schedule *s = schedule_create(what, optimizer, SCHEDULE_ONE_CYCLE);
  if (s == NULL)
    return NULL;
  s->one_cycle = o;
  return schedule_attach(what, s);
}

tsr_lr_schedule *tsr_lr_plateau(tsr_optimizer *optimizer, const tsr_plateau_options *options) {
  const char *what = "lr_plateau";
  tsr_plateau_options o;
  tsr_plateau_options_init(&o);
  if (options != NULL) {
    if (options->struct_size < sizeof(size_t)) {
      tsr_error_set(TSR_INVALID_ARGUMENT,
                    "%s: options->struct_size is %zu; set it with tsr_plateau_options_init", what,
                    options->struct_size);
      return NULL;
    }
    memcpy(&o, options, options->struct_size < sizeof(o) ? options->struct_size : sizeof(o));
    o.struct_size = sizeof(o);
  }
  const char *bad = NULL;
  double value = 0;
  if (!(o.factor >= 0 && o.factor < 1))
    bad = "factor", value = o.factor;
  else if (o.patience < 0)
    bad = "patience", value = (double)o.patience;
  else if (!(o.threshold >= 0 && isfinite(o.threshold)))
    bad = "threshold", value = o.threshold;
  else if (o.cooldown < 0)
    bad = "cooldown", value = (double)o.cooldown;
  else if (!(o.min_lr >= 0 && isfinite(o.min_lr)))
    bad = "min_lr", value = o.min_lr;
  else if (!(o.eps >= 0 && isfinite(o.eps)))
    bad = "eps", value = o.eps;
  else if (o.mode > 1)
    bad = "mode", value = o.mode;
  else if (o.threshold_mode > 1)
    bad = "threshold_mode", value = o.threshold_mode;
  if (bad != NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: options->%s is %g, outside its range", what, bad,
                  value);
    return NULL;
  }
  tsr_lr_schedule *s = schedule_create(what, optimizer, SCHEDULE_PLATEAU);
  if (s == NULL)
    return NULL;
  s->plateau = o;
  return schedule_attach(what, s);
}

void tsr_lr_schedule_destroy(tsr_lr_schedule *schedule) {
  if (schedule == NULL)
    return;
  schedule->optimizer->schedule.attached = 0;
  schedule->optimizer->schedule.schedule = NULL;
  free(schedule);
}

tsr_status tsr_lr_schedule_step(tsr_lr_schedule *schedule) {
  if (schedule == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "lr_schedule_step: schedule is NULL");
  }
  if (schedule->kind == SCHEDULE_PLATEAU) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "lr_schedule_step: a plateau schedule steps with "
                         "tsr_lr_schedule_step_metric");
  }
  int64_t epoch = schedule->optimizer->schedule.epoch;
  if (epoch == INT64_MAX) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "lr_schedule_step: the epoch counter is at its end");
  }
  return schedule_apply(schedule, "lr_schedule_step", epoch + 1);
}

// ReduceLROnPlateau.is_better.
static int plateau_better(const tsr_plateau_options *o, double a, double best) {
  if (o->mode == 0) {
    return o->threshold_mode == 0 ? a < best * (1.0 - o->threshold) : a < best - o->threshold;
  }
  return o->threshold_mode == 0 ? a > best * (1.0 + o->threshold) : a > best + o->threshold;
}

tsr_status tsr_lr_schedule_step_metric(tsr_lr_schedule *schedule, double metric) {
  const char *what = "lr_schedule_step_metric";
  if (schedule == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: schedule is NULL", what);
  if (schedule->kind != SCHEDULE_PLATEAU) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: a %s schedule takes no metric", what,
                         kKindNames[schedule->kind]);
  }
  if (isnan(metric))
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: metric is NaN", what);
  tsr_optimizer *opt = schedule->optimizer;
  optim_schedule_state *st = &opt->schedule;
  const tsr_plateau_options *o = &schedule->plateau;
  if (st->epoch == INT64_MAX)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: the epoch counter is at its end", what);
  st->epoch += 1;
  if (plateau_better(o, metric, st->best)) {
    st->best = metric;
    st->num_bad_epochs = 0;
  } else {
    st->num_bad_epochs += 1;
  }
  if (st->cooldown_counter > 0) {
    st->cooldown_counter -= 1;
    st->num_bad_epochs = 0;
  }
  if (st->num_bad_epochs > o->patience) {
    for (int32_t g = 0; g < opt->num_groups; ++g) {
      double old_lr = opt->groups[g].lr;
      double new_lr = fmax(old_lr * o->factor, o->min_lr);
      if (old_lr - new_lr > o->eps)
        opt->groups[g].lr = new_lr;
    }
    st->cooldown_counter = o->cooldown;
    st->num_bad_epochs = 0;
  }
  return TSR_OK;
}

int64_t tsr_lr_schedule_epoch(const tsr_lr_schedule *schedule) {
  if (schedule == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "lr_schedule_epoch: schedule is NULL");
    return -1;
  }
  return schedule->optimizer->schedule.epoch;
}

tsr_status tsr_lr_schedule_epoch_set(tsr_lr_schedule *schedule, int64_t epoch) {
  if (schedule == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "lr_schedule_epoch_set: schedule is NULL");
  }
  if (epoch < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "lr_schedule_epoch_set: epoch is %lld; it must be "
                         ">= 0",
                         (long long)epoch);
  }
  return schedule_apply(schedule, "lr_schedule_epoch_set", epoch);
}
