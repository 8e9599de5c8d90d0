// Op tracing to stderr lines or a Chrome trace file. Tracing is off the hot
// path: when it is off an op pays one relaxed load, when it is on a mutex
// around the file is cheap next to formatting the event.
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum { TSR_TRACE_OFF = 0, TSR_TRACE_TEXT = 1, TSR_TRACE_JSON = 2 };

// Longest device, plugin, op or engine name a text line carries in full.
#define TSR_TRACE_NAME_CHARS 128

static atomic_int g_mode = TSR_TRACE_OFF;
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
// Guards the file and its event count.
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_file;
static char g_file_path[512];  // for messages only
static uint64_t g_file_events;

static _Thread_local long tls_tid;

static long tsr_trace_tid(void) {
  if (tls_tid == 0)
    tls_tid = (long)syscall(SYS_gettid);
  return tls_tid;
}

static const char *tsr_trace_name(const char *name) {
  return name != NULL ? name : "?";
}

uint64_t tsr_trace_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tsr_trace_enabled(void) {
  return atomic_load_explicit(&g_mode, memory_order_relaxed) != TSR_TRACE_OFF;
}

// Writes |length| bytes of |line| to stderr in as few write(2)s as the
// descriptor takes, normally one, so lines of two threads do not interleave.
static void tsr_trace_stderr_write(const char *line, size_t length) {
  while (length > 0) {
    ssize_t written = write(STDERR_FILENO, line, length);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    line += written;
    length -= (size_t)written;
  }
}

static void tsr_trace_text_line(const char *format, ...) TSR_ABI_PRINTF(1, 2);
static void tsr_trace_text_line(const char *format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  int length = vsnprintf(line, sizeof(line) - 1, format, args);
  va_end(args);
  if (length < 0)
    return;
  if ((size_t)length > sizeof(line) - 2)
    length = (int)sizeof(line) - 2;
  line[length++] = '\n';
  tsr_trace_stderr_write(line, (size_t)length);
}

// Writes |text| as the inside of a JSON string.
static void tsr_trace_json_string_write(FILE *file, const char *text) {
  for (const unsigned char *c = (const unsigned char *)tsr_trace_name(text); *c != '\0'; ++c) {
    if (*c == '"' || *c == '\\') {
      fputc('\\', file);
      fputc(*c, file);
    } else if (*c < 0x20) {
      fprintf(file, "\\u%04x", (unsigned)*c);
    } else {
      fputc(*c, file);
    }
  }
}

// Microseconds with nanosecond digits, from integers so no precision is lost.
static void tsr_trace_json_us_write(FILE *file, uint64_t ns) {
  fprintf(file, "%" PRIu64 ".%03" PRIu64, ns / 1000u, ns % 1000u);
}

// Starts an event object; the caller holds g_lock and g_file is open.
static void tsr_trace_json_event_begin(void) {
  fputs(g_file_events == 0 ? "\n" : ",\n", g_file);
  ++g_file_events;
}

// Closes the array and the file. The caller holds g_lock.
static void tsr_trace_file_finish(void) {
  if (g_file == NULL)
    return;
  fputs("\n]\n", g_file);
  int failed = ferror(g_file);
  if (fclose(g_file) != 0)
    failed = 1;
  if (failed) {
    char reason[128];
    tsr_log(TSR_LOG_WARNING, "trace: writing trace file \"%s\" failed: %s; it is incomplete",
            g_file_path, strerror_r(errno, reason, sizeof(reason)));
  }
  g_file = NULL;
  g_file_events = 0;
}

void tsr_trace_configure(const char *spec) {
  pthread_mutex_lock(&g_lock);
  atomic_store_explicit(&g_mode, TSR_TRACE_OFF, memory_order_relaxed);
  tsr_trace_file_finish();
  if (spec == NULL || spec[0] == '\0' || strcmp(spec, "0") == 0) {
    // off
  } else if (strcmp(spec, "1") == 0) {
    atomic_store_explicit(&g_mode, TSR_TRACE_TEXT, memory_order_relaxed);
  } else {
    // Non-blocking, and only a regular file: a FIFO without a reader fails
    // at once (ENXIO) instead of blocking context creation, one with a
    // reader is refused too.
    char reason[128];
    const char *why = NULL;
    int fd = open(spec, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    struct stat st;
    if (fd < 0) {
      why = errno == ENXIO ? "a FIFO with no reader" : strerror_r(errno, reason, sizeof(reason));
    } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      why = "not a regular file";
    } else if ((g_file = fdopen(fd, "w")) == NULL) {
      why = strerror_r(errno, reason, sizeof(reason));
    }
    if (why != NULL && fd >= 0 && g_file == NULL) close(fd);
    if (g_file == NULL) {
      tsr_log(TSR_LOG_WARNING, "trace: cannot open TSR_TRACE file \"%s\": %s; tracing is off", spec,
              why);
    } else {
      snprintf(g_file_path, sizeof(g_file_path), "%s", spec);
      fputc('[', g_file);
      atomic_store_explicit(&g_mode, TSR_TRACE_JSON, memory_order_relaxed);
    }
  }
  pthread_mutex_unlock(&g_lock);
}

static void tsr_trace_env_read(void) {
  tsr_trace_configure(getenv("TSR_TRACE"));
}

void tsr_trace_init(void) {
  pthread_once(&g_init_once, tsr_trace_env_read);
}

void tsr_trace_op(const char *device, const char *plugin, const char *op, const char *engine,
                  uint64_t start_ns, uint64_t end_ns) {
  int mode = atomic_load_explicit(&g_mode, memory_order_relaxed);
  if (mode == TSR_TRACE_OFF)
    return;
  uint64_t duration_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  if (mode == TSR_TRACE_TEXT) {
    tsr_trace_text_line("tessera trace: %.*s %.*s %.*s engine=%.*s %.1f us", TSR_TRACE_NAME_CHARS,
                        tsr_trace_name(device), TSR_TRACE_NAME_CHARS, tsr_trace_name(plugin),
                        TSR_TRACE_NAME_CHARS, tsr_trace_name(op), TSR_TRACE_NAME_CHARS,
                        tsr_trace_name(engine), (double)duration_ns / 1e3);
    return;
  }
  long tid = tsr_trace_tid();
  pthread_mutex_lock(&g_lock);
  if (g_file != NULL) {
    tsr_trace_json_event_begin();
    fputs("{\"name\":\"", g_file);
    tsr_trace_json_string_write(g_file, op);
    fputs("\",\"cat\":\"", g_file);
    tsr_trace_json_string_write(g_file, device);
    fputs("\",\"ph\":\"X\",\"ts\":", g_file);
    tsr_trace_json_us_write(g_file, start_ns);
    fputs(",\"dur\":", g_file);
    tsr_trace_json_us_write(g_file, duration_ns);
    fprintf(g_file, ",\"pid\":%ld,\"tid\":%ld,\"args\":{\"plugin\":\"", (long)getpid(), tid);
    tsr_trace_json_string_write(g_file, plugin);
    fputs("\",\"engine\":\"", g_file);
    tsr_trace_json_string_write(g_file, engine);
    fputs("\"}}", g_file);
  }
  pthread_mutex_unlock(&g_lock);
}

void tsr_trace_memory(const char *device, const tsr_allocator_stats *stats) {
  int mode = atomic_load_explicit(&g_mode, memory_order_relaxed);
  if (mode == TSR_TRACE_OFF || stats == NULL)
    return;
  // Fields a plugin built against an older ABI did not fill stay out.
  struct {
    const char *name;
    int present;
    uint64_t value;
  } fields[] = {
      {"bytes_in_use", TSR_ABI_COVERS(stats, tsr_allocator_stats, bytes_in_use), 0},
      {"bytes_reserved", TSR_ABI_COVERS(stats, tsr_allocator_stats, bytes_reserved), 0},
      {"peak_bytes_in_use", TSR_ABI_COVERS(stats, tsr_allocator_stats, peak_bytes_in_use), 0},
      {"alloc_count", TSR_ABI_COVERS(stats, tsr_allocator_stats, alloc_count), 0},
      {"free_count", TSR_ABI_COVERS(stats, tsr_allocator_stats, free_count), 0},
      {"system_alloc_count", TSR_ABI_COVERS(stats, tsr_allocator_stats, system_alloc_count), 0},
  };
  enum { NUM_FIELDS = sizeof(fields) / sizeof(fields[0]) };
  if (fields[0].present)
    fields[0].value = stats->bytes_in_use;
  if (fields[1].present)
    fields[1].value = stats->bytes_reserved;
  if (fields[2].present)
    fields[2].value = stats->peak_bytes_in_use;
  if (fields[3].present)
    fields[3].value = stats->alloc_count;
  if (fields[4].present)
    fields[4].value = stats->free_count;
  if (fields[5].present)
    fields[5].value = stats->system_alloc_count;

  if (mode == TSR_TRACE_TEXT) {
    char values[512];
    size_t used = 0;
    values[0] = '\0';
    for (int i = 0; i < NUM_FIELDS; ++i) {
      if (!fields[i].present)
        continue;
      int n = snprintf(values + used, sizeof(values) - used, " %s=%" PRIu64, fields[i].name,
                       fields[i].value);
      if (n < 0 || (size_t)n >= sizeof(values) - used)
        break;
      used += (size_t)n;
    }
    tsr_trace_text_line("tessera trace: %.*s memory%s", TSR_TRACE_NAME_CHARS,
                        tsr_trace_name(device), values);
    return;
  }
  uint64_t now = tsr_trace_now_ns();
  long tid = tsr_trace_tid();
  pthread_mutex_lock(&g_lock);
  if (g_file != NULL) {
    tsr_trace_json_event_begin();
    fputs("{\"name\":\"memory ", g_file);
    tsr_trace_json_string_write(g_file, device);
    fputs("\",\"cat\":\"", g_file);
    tsr_trace_json_string_write(g_file, device);
    fputs("\",\"ph\":\"C\",\"ts\":", g_file);
    tsr_trace_json_us_write(g_file, now);
    fprintf(g_file, ",\"pid\":%ld,\"tid\":%ld,\"args\":{", (long)getpid(), tid);
    int first = 1;
    for (int i = 0; i < NUM_FIELDS; ++i) {
      if (!fields[i].present)
        continue;
      fprintf(g_file, "%s\"%s\":%" PRIu64, first ? "" : ",", fields[i].name, fields[i].value);
      first = 0;
    }
    fputs("}}", g_file);
  }
  pthread_mutex_unlock(&g_lock);
}

void tsr_trace_shutdown(void) {
  pthread_mutex_lock(&g_lock);
  atomic_store_explicit(&g_mode, TSR_TRACE_OFF, memory_order_relaxed);
  tsr_trace_file_finish();
  pthread_mutex_unlock(&g_lock);
}
