// Checkpoint metadata values (checkpoint_meta.h).
#include "checkpoint_meta.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int tsr_ckpt_meta_step_parse(const char *text, int64_t *out) {
  if (text == NULL || *text == '\0')
    return 0;
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0)
    return 0;
  *out = v;
  return 1;
}

int tsr_ckpt_meta_lr_parse(const char *text, double *out) {
  if (text == NULL || *text == '\0')
    return 0;
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0)
    return 0;
  *out = v;
  return 1;
}
