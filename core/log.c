// Diagnostic lines on stderr. A line goes out in one writev(2) so that two
// threads logging at once produce two whole lines; stdio's stderr is not used
// because its buffering would split or merge them.
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

// Most messages fit; longer ones take one heap buffer.
#define TSR_LOG_MESSAGE_BYTES 1024
#define TSR_LOG_THRESHOLD_UNSET (-1)

static atomic_int g_threshold = TSR_LOG_THRESHOLD_UNSET;
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static const char *const k_level_names[] = {"debug", "info", "warning", "error"};

static tsr_log_level_t tsr_log_level_clamp(tsr_log_level_t level) {
  if (level < TSR_LOG_DEBUG)
    return TSR_LOG_DEBUG;
  if (level > TSR_LOG_ERROR)
    return TSR_LOG_ERROR;
  return level;
}

static void tsr_log_env_read(void) {
  // A tsr_log_configure that ran first wins over the environment.
  if (atomic_load_explicit(&g_threshold, memory_order_acquire) == TSR_LOG_THRESHOLD_UNSET) {
    tsr_log_configure(getenv("TSR_LOG_LEVEL"));
  }
}

static int tsr_log_threshold(void) {
  int threshold = atomic_load_explicit(&g_threshold, memory_order_relaxed);
  if (threshold == TSR_LOG_THRESHOLD_UNSET) {
    pthread_once(&g_env_once, tsr_log_env_read);
    threshold = atomic_load_explicit(&g_threshold, memory_order_relaxed);
  }
  return threshold;
}

void tsr_log_configure(const char *spec) {
  static const struct {
    const char *name;
    int threshold;
  } k_specs[] = {
      {"debug", TSR_LOG_DEBUG},  {"info", TSR_LOG_INFO},   {"warning", TSR_LOG_WARNING},
      {"warn", TSR_LOG_WARNING}, {"error", TSR_LOG_ERROR}, {"off", TSR_LOG_OFF},
  };
  // Quiet by default: a library prints only warnings and errors unless asked.
  if (spec == NULL || spec[0] == '\0') {
    atomic_store_explicit(&g_threshold, TSR_LOG_WARNING, memory_order_release);
    return;
  }
  for (size_t i = 0; i < sizeof(k_specs) / sizeof(k_specs[0]); ++i) {
    if (strcasecmp(spec, k_specs[i].name) == 0) {
      atomic_store_explicit(&g_threshold, k_specs[i].threshold, memory_order_release);
      return;
    }
  }
  // Set before logging: tsr_log must not come back here through the once.
  atomic_store_explicit(&g_threshold, TSR_LOG_WARNING, memory_order_release);
  tsr_log(TSR_LOG_WARNING,
          "TSR_LOG_LEVEL is \"%.64s\", expected debug, info, warning, error or off; using warning",
          spec);
}

int tsr_log_enabled(tsr_log_level_t level) {
  return tsr_log_level_clamp(level) >= tsr_log_threshold();
}

// Writes the line in one writev; only a pipe or terminal that accepts part of
// it makes a second call for the rest.
static void tsr_log_line_write(tsr_log_level_t level, const char *message, size_t length) {
  char prefix[32];
  int prefix_length =
      snprintf(prefix, sizeof(prefix), "tessera: %s: ", k_level_names[tsr_log_level_clamp(level)]);
  struct iovec parts[3] = {
      {prefix, (size_t)prefix_length},
      {(void *)message, length},
      {"\n", 1},
  };
  struct iovec *part = parts;
  int left = 3;
  while (left > 0) {
    ssize_t written = writev(STDERR_FILENO, part, left);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return;  // stderr closed or broken: nowhere to report it
    }
    size_t done = (size_t)written;
    while (left > 0 && done >= part->iov_len) {
      done -= part->iov_len;
      ++part;
      --left;
    }
    if (left > 0) {
      part->iov_base = (char *)part->iov_base + done;
      part->iov_len -= done;
    }
  }
}

void tsr_log_message(tsr_log_level_t level, const char *message) {
  if (!tsr_log_enabled(level))
    return;
  if (message == NULL)
    message = "";
  tsr_log_line_write(level, message, strlen(message));
}

void tsr_log(tsr_log_level_t level, const char *format, ...) {
  if (!tsr_log_enabled(level) || format == NULL)
    return;
  char stack[TSR_LOG_MESSAGE_BYTES];
  char *heap = NULL;
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  int length = vsnprintf(stack, sizeof(stack), format, args);
  va_end(args);
  const char *message = stack;
  if (length < 0) {
    message = "(message could not be formatted)";
    length = (int)strlen(message);
  } else if ((size_t)length >= sizeof(stack)) {
    heap = malloc((size_t)length + 1);
    if (heap != NULL) {
      vsnprintf(heap, (size_t)length + 1, format, again);
      message = heap;
    } else {
      length = (int)sizeof(stack) - 1;  // out of memory: the truncated text
    }
  }
  va_end(again);
  tsr_log_line_write(level, message, (size_t)length);
  free(heap);
}
