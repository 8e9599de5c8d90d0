// The optimizer's checkpoint metadata beyond its step count and lr: every
// group's lr and the attached schedule's state, as text ("%.17g" numbers
// read back as the same doubles).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/core_layer.h"
#include "optim_internal.h"
#include "tessera/tessera.h"

enum { SCHEDULE_KIND_COUNT = 6 };  // schedule.c's SCHEDULE_KINDS

// Appends |item| and a space to |*text| (grown with realloc); 0 without memory.
static int append(char **text, size_t *length, const char *item) {
  size_t n = strlen(item);
  char *grown = realloc(*text, *length + n + 2);
  if (grown == NULL)
    return 0;
  memcpy(grown + *length, item, n);
  *length += n;
  grown[(*length)++] = ' ';
  grown[*length] = '\0';
  *text = grown;
  return 1;
}

static int append_double(char **text, size_t *length, double value) {
  char item[40];
  snprintf(item, sizeof(item), "%.17g", value);
  return append(text, length, item);
}

static int append_int(char **text, size_t *length, int64_t value) {
  char item[24];
  snprintf(item, sizeof(item), "%lld", (long long)value);
  return append(text, length, item);
}

tsr_status tsr_optim_meta_format(const tsr_optimizer *o, char **out_group_lrs,
                                 char **out_schedule) {
  *out_group_lrs = NULL;
  *out_schedule = NULL;
  char *lrs = NULL, *sched = NULL;
  size_t nl = 0, ns = 0;
  int ok = 1;
  for (int32_t g = 0; o->num_groups > 1 && ok && g < o->num_groups; ++g)
    ok = append_double(&lrs, &nl, o->groups[g].lr);
  const optim_schedule_state *st = &o->schedule;
  if (ok && (st->attached || st->loaded)) {
    ok = append_int(&sched, &ns, st->kind) && append_int(&sched, &ns, st->epoch) &&
         append_double(&sched, &ns, st->best) && append_int(&sched, &ns, st->num_bad_epochs) &&
         append_int(&sched, &ns, st->cooldown_counter);
    for (int32_t g = 0; ok && g < o->num_groups; ++g)
      ok = append_double(&sched, &ns, o->groups[g].base_lr);
  }
  if (!ok) {
    free(lrs);
    free(sched);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "checkpoint_save: no host memory");
  }
  *out_group_lrs = lrs;
  *out_schedule = sched;
  return TSR_OK;
}

// Reads |n| numbers from |text| into |out|; 0 when there are more or fewer.
static int numbers_read(const char *text, double *out, int32_t n) {
  const char *at = text;
  for (int32_t i = 0; i < n; ++i) {
    char *end;
    errno = 0;
    out[i] = strtod(at, &end);
    if (end == at || errno == ERANGE)
      return 0;
    at = end;
  }
  while (*at == ' ') ++at;
  return *at == '\0';
}

void tsr_optim_meta_free(optim_meta *meta) {
  free(meta->group_lrs);
  free(meta->bases);
  memset(meta, 0, sizeof(*meta));
}

tsr_status tsr_optim_meta_parse(const tsr_optimizer *o, const char *group_lrs,
                                const char *schedule, optim_meta *out) {
  memset(out, 0, sizeof(*out));
  int32_t n = o->num_groups;
  if (group_lrs != NULL) {
    out->group_lrs = malloc(sizeof(double) * (size_t)n);
    if (out->group_lrs == NULL)
      return tsr_error_set(TSR_OUT_OF_MEMORY, "checkpoint_load: no host memory");
    int ok = numbers_read(group_lrs, out->group_lrs, n);
    for (int32_t g = 0; ok && g < n; ++g)
      ok = out->group_lrs[g] >= 0 && isfinite(out->group_lrs[g]);
    if (!ok) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "metadata '%s' is \"%s\", not %d learning rates (one per group)",
                           TSR_OPTIM_GROUP_LRS_KEY, group_lrs, n);
    }
  }
  if (schedule != NULL) {
    double *v = malloc(sizeof(double) * (size_t)(5 + n));
    out->bases = malloc(sizeof(double) * (size_t)n);
    if (v == NULL || out->bases == NULL) {
      free(v);
      return tsr_error_set(TSR_OUT_OF_MEMORY, "checkpoint_load: no host memory");
    }
    int ok = numbers_read(schedule, v, 5 + n) && v[0] >= 0 && v[0] < SCHEDULE_KIND_COUNT &&
             v[0] == floor(v[0]) && v[1] >= 0 && v[1] < 9e18 && !isnan(v[2]) && v[3] >= 0 &&
             v[3] < 9e18 && v[4] >= 0 && v[4] < 9e18;
    for (int32_t g = 0; ok && g < n; ++g) {
      out->bases[g] = v[5 + g];
      ok = v[5 + g] >= 0 && isfinite(v[5 + g]);
    }
    if (ok) {
      out->has_schedule = 1;
      out->schedule.kind = (int32_t)v[0];
      out->schedule.epoch = (int64_t)v[1];
      out->schedule.best = v[2];
      out->schedule.num_bad_epochs = (int64_t)v[3];
      out->schedule.cooldown_counter = (int64_t)v[4];
    }
    free(v);
    if (!ok) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "metadata '%s' is \"%s\", not a schedule's state for %d groups",
                           TSR_OPTIM_SCHEDULE_KEY, schedule, n);
    }
    if (o->schedule.attached && o->schedule.kind != out->schedule.kind) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "metadata '%s' holds another kind of schedule than the optimizer's",
                           TSR_OPTIM_SCHEDULE_KEY);
    }
  }
  return TSR_OK;
}

void tsr_optim_meta_apply(tsr_optimizer *o, const optim_meta *meta) {
  for (int32_t g = 0; meta->group_lrs != NULL && g < o->num_groups; ++g)
    o->groups[g].lr = meta->group_lrs[g];
  if (meta->has_schedule) {
    optim_schedule_state *st = &o->schedule;
    int32_t attached = st->attached;
    tsr_lr_schedule *schedule = st->schedule;
    *st = meta->schedule;
    st->attached = attached;
    st->schedule = schedule;
    st->loaded = !attached;  // claimed by the next schedule created
    for (int32_t g = 0; g < o->num_groups; ++g) o->groups[g].base_lr = meta->bases[g];
    tsr_optim_schedule_sync(o);
  }
}
