// Learning-rate schedules: the closed forms of PyTorch's StepLR and
// CosineAnnealingLR. The lr of an epoch depends only on the epoch and the
// base lr, so resuming from a checkpoint needs only the epoch.
#include <math.h>
#include <stdlib.h>

#include "error.h"
#include "runtime.h"
#include "tessera/tessera.h"

enum { SCHEDULE_STEP = 0, SCHEDULE_COSINE = 1 };

struct tsr_lr_schedule {
  tsr_optimizer *optimizer;  // borrowed; outlives the schedule
  int32_t kind;
  double base_lr;  // the optimizer's lr at creation
  int64_t epoch;
  int64_t step_size;  // step
  double gamma;
  int64_t t_max;  // cosine
  double eta_min;
};

static double schedule_lr(const tsr_lr_schedule *s, int64_t epoch) {
  if (s->kind == SCHEDULE_STEP)
    return s->base_lr * pow(s->gamma, (double)(epoch / s->step_size));
  int64_t e = epoch < s->t_max ? epoch : s->t_max;
  return s->eta_min +
         (s->base_lr - s->eta_min) * (1.0 + cos(M_PI * (double)e / (double)s->t_max)) / 2.0;
}

static tsr_status schedule_apply(tsr_lr_schedule *s, const char *what, int64_t epoch) {
  double lr = schedule_lr(s, epoch);
  // gamma > 1 can overflow; the optimizer refuses an infinite lr.
  tsr_status status = tsr_optimizer_lr_set(s->optimizer, lr);
  if (status != TSR_OK)
    return tsr_error_prefix(what);
  s->epoch = epoch;
  return TSR_OK;
}

static tsr_lr_schedule *schedule_create(const char *what, tsr_optimizer *optimizer, int32_t kind) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: optimizer is NULL", what);
    return NULL;
  }
  tsr_lr_schedule *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory for the schedule", what);
    return NULL;
  }
  s->optimizer = optimizer;
  s->kind = kind;
  s->base_lr = tsr_optimizer_lr(optimizer);
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
  return s;
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
  return s;
}

void tsr_lr_schedule_destroy(tsr_lr_schedule *schedule) {
  free(schedule);
}

tsr_status tsr_lr_schedule_step(tsr_lr_schedule *schedule) {
  if (schedule == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "lr_schedule_step: schedule is NULL");
  }
  if (schedule->epoch == INT64_MAX) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "lr_schedule_step: the epoch counter is at its end");
  }
  return schedule_apply(schedule, "lr_schedule_step", schedule->epoch + 1);
}

int64_t tsr_lr_schedule_epoch(const tsr_lr_schedule *schedule) {
  if (schedule == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "lr_schedule_epoch: schedule is NULL");
    return -1;
  }
  return schedule->epoch;
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
