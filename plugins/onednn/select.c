// Choices by measurement, kept in the engine cache (select.h).
#define _POSIX_C_SOURCE 200809L
#include "select.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

// This process's decisions: a small table, searched only at plan creation.
#define TABLE_SIZE 512
// "v1 <name> <how>": the cache value's version, the candidate, and how it
// was decided (for a person reading the file).
#define VALUE_VERSION "v1 "

typedef struct decision {
  char class_key[TSR_ENGINE_CACHE_CLASS_KEY_MAX + 1];
  char name[32];
  // CACHE for a decision; DEFAULT where none could be made (the default
  // too long to time, or failing): not timed again in this process.
  tsr_onednn_source_t source;
} decision;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static decision g_table[TABLE_SIZE];
static int32_t g_table_count;
static atomic_llong g_runs;

static tsr_onednn_select_mode_t g_mode = TSR_ONEDNN_SELECT_MEASURE;
static struct {
  char name[32];
  double seconds;
} g_delays[TSR_ONEDNN_SELECT_MAX_CANDIDATES];
static int32_t g_delay_count;

const char *tsr_onednn_source_suffix(tsr_onednn_source_t source) {
  switch (source) {
    case TSR_ONEDNN_SOURCE_DEFAULT:
      return " [default]";
    case TSR_ONEDNN_SOURCE_CACHE:
      return " [cache]";
    case TSR_ONEDNN_SOURCE_MEASURED:
      return " [measured]";
    default:
      return "";
  }
}

static void select_log(const tsr_host_api *host, tsr_log_level_t level, const char *message) {
  if (host != NULL && host->log != NULL)
    host->log(host->ctx, level, message);
}

// "name=microseconds[,name=microseconds...]"; 0 when malformed.
static int delays_parse(const char *text) {
  g_delay_count = 0;
  while (*text != '\0') {
    const char *eq = strchr(text, '=');
    if (eq == NULL || eq == text || (size_t)(eq - text) >= sizeof(g_delays[0].name) ||
        g_delay_count == TSR_ONEDNN_SELECT_MAX_CANDIDATES)
      return 0;
    char *end = NULL;
    errno = 0;
    const double us = strtod(eq + 1, &end);
    if (end == eq + 1 || errno != 0 || !(us >= 0.0) || (*end != '\0' && *end != ','))
      return 0;
    snprintf(g_delays[g_delay_count].name, sizeof(g_delays[0].name), "%.*s", (int)(eq - text),
             text);
    g_delays[g_delay_count].seconds = us * 1e-6;
    ++g_delay_count;
    text = *end == ',' ? end + 1 : end;
  }
  return 1;
}

void tsr_onednn_select_settings_init(const tsr_host_api *host) {
  char message[256];
  g_mode = TSR_ONEDNN_SELECT_MEASURE;
  const char *mode = getenv("TSR_ONEDNN_SELECT");
  if (mode != NULL && mode[0] != '\0') {
    if (strcmp(mode, "measure") == 0) {
      g_mode = TSR_ONEDNN_SELECT_MEASURE;
    } else if (strcmp(mode, "cache") == 0) {
      g_mode = TSR_ONEDNN_SELECT_CACHE_ONLY;
    } else if (strcmp(mode, "default") == 0) {
      g_mode = TSR_ONEDNN_SELECT_DEFAULT_ONLY;
    } else {
      snprintf(message, sizeof(message),
               "TSR_ONEDNN_SELECT=%s is not measure, cache or default; using measure", mode);
      select_log(host, TSR_LOG_WARNING, message);
    }
  }
  // The core's switch (core/engine_cache.h): with the cache off nothing is
  // kept, so nothing is timed either. Its spellings of "off".
  const char *cache = getenv("TSR_ENGINE_CACHE");
  if (cache != NULL && (strcmp(cache, "0") == 0 || strcasecmp(cache, "off") == 0 ||
                        strcasecmp(cache, "false") == 0 || strcasecmp(cache, "no") == 0) &&
      g_mode == TSR_ONEDNN_SELECT_MEASURE)
    g_mode = TSR_ONEDNN_SELECT_CACHE_ONLY;
  const char *delays = getenv("TSR_ONEDNN_SELECT_TEST_DELAY_US");
  if (delays != NULL && !delays_parse(delays)) {
    g_delay_count = 0;
    snprintf(message, sizeof(message),
             "TSR_ONEDNN_SELECT_TEST_DELAY_US=%.64s is not name=microseconds,...; ignored", delays);
    select_log(host, TSR_LOG_WARNING, message);
  }
}

tsr_onednn_select_mode_t tsr_onednn_select_mode_get(void) {
  return g_mode;
}

static double delay_of(const char *name) {
  for (int32_t i = 0; i < g_delay_count; ++i) {
    if (strcmp(g_delays[i].name, name) == 0)
      return g_delays[i].seconds;
  }
  return 0.0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// --- the table and the cache -------------------------------------------------------

static int index_of(const tsr_onednn_select_class *cls, const char *name, size_t length) {
  for (int32_t i = 0; i < cls->count; ++i) {
    if (strlen(cls->names[i]) == length && strncmp(cls->names[i], name, length) == 0)
      return i;
  }
  return -1;
}

// Under g_lock.
static int table_find(const tsr_onednn_select_class *cls, tsr_onednn_source_t *out_source) {
  for (int32_t i = 0; i < g_table_count; ++i) {
    if (strcmp(g_table[i].class_key, cls->class_key) == 0) {
      *out_source = g_table[i].source;
      return index_of(cls, g_table[i].name, strlen(g_table[i].name));
    }
  }
  return -1;
}

// Under g_lock. A full table keeps what it has: the engine cache still holds
// the decision, and the next lookup finds it there.
static void table_put(const tsr_onednn_select_class *cls, int32_t index,
                      tsr_onednn_source_t source) {
  decision *d = NULL;
  for (int32_t i = 0; i < g_table_count && d == NULL; ++i) {
    if (strcmp(g_table[i].class_key, cls->class_key) == 0)
      d = &g_table[i];
  }
  if (d == NULL) {
    if (g_table_count == TABLE_SIZE)
      return;
    d = &g_table[g_table_count++];
    snprintf(d->class_key, sizeof(d->class_key), "%s", cls->class_key);
  }
  snprintf(d->name, sizeof(d->name), "%s", cls->names[index]);
  d->source = source;
}

static int cache_usable(const tsr_host_api *host) {
  return host != NULL && TSR_ABI_HAS(host, tsr_host_api, engine_cache_get) &&
         TSR_ABI_HAS(host, tsr_host_api, engine_cache_put);
}

// The candidate the engine cache names for |cls|, or -1. The value comes from
// a file: anything but "v1 <a candidate's name>[ ...]" is ignored.
static int cache_find(const tsr_onednn_select_class *cls) {
  if (!cache_usable(cls->host))
    return -1;
  char value[TSR_ENGINE_CACHE_VALUE_MAX];
  size_t bytes = sizeof(value);
  if (cls->host->engine_cache_get(cls->host->ctx, cls->plugin_key, cls->class_key, value,
                                  &bytes) != TSR_OK ||
      bytes > sizeof(value))
    return -1;
  const size_t prefix = strlen(VALUE_VERSION);
  if (bytes <= prefix || memcmp(value, VALUE_VERSION, prefix) != 0)
    return -1;
  size_t end = prefix;
  while (end < bytes && value[end] != ' ') ++end;
  return index_of(cls, value + prefix, end - prefix);
}

static void cache_put(const tsr_onednn_select_class *cls, int32_t index, const char *how) {
  if (!cache_usable(cls->host))
    return;
  char value[256];
  const int n = snprintf(value, sizeof(value), VALUE_VERSION "%s %s", cls->names[index], how);
  if (n > 0 && (size_t)n < sizeof(value)) {
    // A put the cache drops is logged by the core; the table keeps the
    // decision for this process either way.
    (void)cls->host->engine_cache_put(cls->host->ctx, cls->plugin_key, cls->class_key, value,
                                      (size_t)n);
  }
}

static int class_valid(const tsr_onednn_select_class *cls) {
  return cls != NULL && cls->class_key != NULL && cls->class_key[0] != '\0' &&
         strlen(cls->class_key) <= TSR_ENGINE_CACHE_CLASS_KEY_MAX && cls->plugin_key != NULL &&
         cls->count >= 2 && cls->count <= TSR_ONEDNN_SELECT_MAX_CANDIDATES &&
         cls->default_index >= 0 && cls->default_index < cls->count;
}

// Under g_lock.
static int lookup_locked(const tsr_onednn_select_class *cls, tsr_onednn_source_t *out_source) {
  int index = table_find(cls, out_source);
  if (index < 0) {
    index = cache_find(cls);
    *out_source = TSR_ONEDNN_SOURCE_CACHE;
    if (index >= 0)
      table_put(cls, index, TSR_ONEDNN_SOURCE_CACHE);
  }
  return index;
}

tsr_status tsr_onednn_select_lookup(const tsr_onednn_select_class *cls, int32_t *out_index,
                                    tsr_onednn_source_t *out_source) {
  if (!class_valid(cls))
    return TSR_INVALID_ARGUMENT;
  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_CACHE;
  pthread_mutex_lock(&g_lock);
  const int index = lookup_locked(cls, &source);
  pthread_mutex_unlock(&g_lock);
  if (index < 0)
    return TSR_NOT_FOUND;
  *out_index = index;
  *out_source = source;
  return TSR_OK;
}

// --- timing --------------------------------------------------------------------

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(const double *samples, int32_t n) {
  double sorted[TSR_ONEDNN_SELECT_MAX_ROUNDS];
  memcpy(sorted, samples, (size_t)n * sizeof(double));
  qsort(sorted, (size_t)n, sizeof(double), compare_doubles);
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

// The lower quartile of |samples| (n >= 1).
static double lower_quartile_of(const double *samples, int32_t n) {
  double sorted[TSR_ONEDNN_SELECT_MAX_ROUNDS];
  memcpy(sorted, samples, (size_t)n * sizeof(double));
  qsort(sorted, (size_t)n, sizeof(double), compare_doubles);
  return sorted[(n - 1) / 4];
}

// One run of candidate |i|: seconds, or a negative value when it failed.
static double timed_run(tsr_onednn_select_run_fn run, void *arg, int32_t i) {
  atomic_fetch_add(&g_runs, 1);
  const double start = now_s();
  if (run(arg, i) != TSR_OK)
    return -1.0;
  return now_s() - start;
}

tsr_status tsr_onednn_select_measure(const tsr_onednn_select_class *cls,
                                     tsr_onednn_select_run_fn run, void *arg, int32_t *out_index,
                                     tsr_onednn_source_t *out_source) {
  if (!class_valid(cls) || run == NULL)
    return TSR_INVALID_ARGUMENT;
  const int32_t n = cls->count, def = cls->default_index;
  tsr_onednn_source_t found = TSR_ONEDNN_SOURCE_CACHE;
  pthread_mutex_lock(&g_lock);
  const int index = lookup_locked(cls, &found);
  if (index >= 0) {
    pthread_mutex_unlock(&g_lock);
    *out_index = index;
    *out_source = found;
    return TSR_OK;
  }
  // Warm-up: caches, lazily made oneDNN kernels, the weight caches. A
  // candidate that fails drops out.
  int alive[TSR_ONEDNN_SELECT_MAX_CANDIDATES];
  double first[TSR_ONEDNN_SELECT_MAX_CANDIDATES];
  for (int32_t i = 0; i < n; ++i) {
    first[i] = timed_run(run, arg, i);
    alive[i] = first[i] >= 0.0;
  }
  // A first run pays one-time costs (the thread team, page faults): a long
  // one is judged by a second.
  // With the test hook set, sizes never decide: tests run on busy machines.
  const double long_s = g_delay_count > 0 ? 1e30 : TSR_ONEDNN_SELECT_LONG_S;
  if (alive[def] && first[def] > long_s)
    first[def] = timed_run(run, arg, def);
  *out_index = def;
  *out_source = TSR_ONEDNN_SOURCE_DEFAULT;
  if (!alive[def] || first[def] < 0.0 || first[def] > long_s) {
    table_put(cls, def, TSR_ONEDNN_SOURCE_DEFAULT);
    pthread_mutex_unlock(&g_lock);
    return TSR_OK;
  }
  // A candidate four times over that limit cannot win: it drops out rather
  // than stretch every round.
  for (int32_t i = 0; i < n; ++i) {
    if (i != def && alive[i] && first[i] > 4 * long_s) {
      const double again = timed_run(run, arg, i);
      alive[i] = again >= 0.0 && again <= 4 * long_s;
    }
  }
  double samples[TSR_ONEDNN_SELECT_MAX_CANDIDATES][TSR_ONEDNN_SELECT_MAX_ROUNDS];
  double medians[TSR_ONEDNN_SELECT_MAX_CANDIDATES] = {0};
  double spent = 0.0, round_cost = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    if (alive[i])
      round_cost += first[i];
  }
  const double budget = round_cost > TSR_ONEDNN_SELECT_BUDGET_S / 3
                            ? TSR_ONEDNN_SELECT_LONG_BUDGET_S
                            : TSR_ONEDNN_SELECT_BUDGET_S;
  const int settle = budget == TSR_ONEDNN_SELECT_LONG_BUDGET_S && round_cost < 4 * budget / 10;
  const int32_t min_rounds =
      settle ? TSR_ONEDNN_SELECT_LONG_MIN_ROUNDS : TSR_ONEDNN_SELECT_MIN_ROUNDS;
  for (int32_t w = 1; settle && w < TSR_ONEDNN_SELECT_LONG_WARMUPS; ++w) {
    for (int32_t i = 0; i < n; ++i) {
      if (alive[i] && timed_run(run, arg, i) < 0.0)
        alive[i] = 0;
    }
  }
  int32_t rounds = 0, best = def, separated = 0;
  while (rounds < TSR_ONEDNN_SELECT_MAX_ROUNDS) {
    // Alternate the order, so neither candidate always runs on caches the
    // other has just warmed or cooled.
    for (int32_t k = 0; k < n; ++k) {
      const int32_t i = rounds % 2 ? n - 1 - k : k;
      if (!alive[i])
        continue;
      // In a long class, each candidate runs once untimed first: switching
      // between oneDNN's primitive and dnnl_sgemm costs the first run after
      // the switch several percent, which a program running one of them
      // does not pay.
      if (settle && timed_run(run, arg, i) < 0.0) {
        alive[i] = 0;
        continue;
      }
      const double t = timed_run(run, arg, i);
      if (t < 0.0) {
        alive[i] = 0;
        continue;
      }
      // The budget counts real time; the test hook's delay only the samples.
      samples[i][rounds] = t + delay_of(cls->names[i]);
      spent += t;
    }
    ++rounds;
    if (!alive[def])
      break;
    best = def;
    for (int32_t i = 0; i < n; ++i) {
      if (!alive[i])
        continue;
      medians[i] = median_of(samples[i], rounds);
      if (medians[i] < medians[best])
        best = i;
    }
    // Separated: the fastest's median is more than a tie below every other
    // candidate's, and below three quarters of each one's runs.
    separated = rounds >= min_rounds;
    for (int32_t i = 0; i < n && separated; ++i) {
      if (alive[i] && i != best &&
          !(medians[best] < lower_quartile_of(samples[i], rounds) &&
            medians[best] < medians[i] * (1.0 - TSR_ONEDNN_SELECT_TIE)))
        separated = 0;
    }
    // The budget ends the rounds only after the first few: fewer say
    // nothing on a busy machine.
    if (separated ||
        (rounds >= min_rounds && spent >= budget))
      break;
  }
  if (!alive[def]) {
    table_put(cls, def, TSR_ONEDNN_SOURCE_DEFAULT);
    pthread_mutex_unlock(&g_lock);
    return TSR_OK;
  }
  const int tie = best != def && medians[def] - medians[best] < TSR_ONEDNN_SELECT_TIE * medians[def];
  const int32_t chosen = tie ? def : best;
  char how[160];
  snprintf(how, sizeof(how), "%s: %d rounds, median %.1f us against %.1f us for the default%s",
           tie ? "tie" : (chosen == def ? "default fastest" : "faster"), (int)rounds,
           medians[chosen] * 1e6, medians[def] * 1e6, separated ? "" : " (budget ended)");
  table_put(cls, chosen, TSR_ONEDNN_SOURCE_CACHE);
  cache_put(cls, chosen, how);
  pthread_mutex_unlock(&g_lock);
  char message[TSR_ENGINE_CACHE_CLASS_KEY_MAX + 256];
  snprintf(message, sizeof(message), "'%s' -> %s (%s)", cls->class_key,
           cls->names[chosen], how);
  select_log(cls->host, TSR_LOG_DEBUG, message);
  *out_index = chosen;
  *out_source = TSR_ONEDNN_SOURCE_MEASURED;
  return TSR_OK;
}

int64_t tsr_onednn_select_runs_get(void) {
  return (int64_t)atomic_load(&g_runs);
}

void tsr_onednn_select_forget_all(void) {
  pthread_mutex_lock(&g_lock);
  g_table_count = 0;
  pthread_mutex_unlock(&g_lock);
}
