// Strict parsing of environment settings (env.h).
#include "env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

const char *tsr_env_path(const char *name, size_t max_bytes) {
  const char *text = getenv(name);
  if (text == NULL || text[0] == '\0')
    return NULL;
  const size_t length = strnlen(text, max_bytes);
  if (length >= max_bytes) {
    tsr_log(TSR_LOG_WARNING, "%s is a path of %zu bytes or more; ignoring it", name, max_bytes);
    return NULL;
  }
  for (size_t i = 0; i < length; ++i) {
    if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) {
      tsr_log(TSR_LOG_WARNING, "%s=%.*s holds a control character; ignoring it", name,
              (int)i, text);
      return NULL;
    }
  }
  return text;
}
