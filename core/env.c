// Strict parsing of environment settings (env.h).
#include "env.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "log.h"

int64_t tsr_env_int(const char *name, int64_t min, int64_t max, int64_t fallback) {
  const char *text = getenv(name);
  if (text == NULL || text[0] == '\0')
    return fallback;
  char *end = NULL;
  errno = 0;
  const long long value = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || value < min || value > max) {
    tsr_log(TSR_LOG_WARNING, "%s=%s is not an integer from %lld to %lld; using %lld", name, text,
            (long long)min, (long long)max, (long long)fallback);
    return fallback;
  }
  return value;
}

int tsr_env_flag(const char *name, int fallback) {
  const char *text = getenv(name);
  if (text == NULL || text[0] == '\0')
    return fallback;
  static const char *const on[] = {"1", "on", "true", "yes"};
  static const char *const off[] = {"0", "off", "false", "no"};
  for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); ++i) {
    if (strcasecmp(text, on[i]) == 0)
      return 1;
    if (strcasecmp(text, off[i]) == 0)
      return 0;
  }
  tsr_log(TSR_LOG_WARNING, "%s=%s is not 1 or 0 (on/off, true/false, yes/no); using %d", name,
          text, fallback);
  return fallback;
}
