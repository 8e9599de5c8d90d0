// Choices by measurement (select.h, route.h).
//
// The first tests drive select.c alone, compiled into this test, with a
// host whose engine cache is a table in memory and candidates that count
// their runs. The injected delays (TSR_ONEDNN_SELECT_TEST_DELAY_US) are added
// to the measured times, so no test depends on how fast anything runs.
//
// The others run the plugin through the SDK in child processes, each a
// "restart" with its own temporary cache folder (ctest runs tests in
// parallel): a MATMUL whose cold default is the own blocked GEMM (a Linear
// input-gradient shape) must show in its engine name where the choice came
// from, keep it across processes, ignore a corrupt cache file, and never be
// timed under determinism or with the cache off.
//
// Compile definition: TSR_TEST_ONEDNN_PATH (the plugin .so).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "select.h"
#include "tessera/engine_cache.h"
#include "tessera/tessera.h"
#include "test_support.h"

// --- select.c alone --------------------------------------------------------------

typedef struct fake_entry {
  char key[TSR_ENGINE_CACHE_CLASS_KEY_MAX + 1];
  char value[TSR_ENGINE_CACHE_VALUE_MAX];
  size_t bytes;
} fake_entry;

static fake_entry g_entries[16];
static int g_entry_count;
static int g_puts;
static int64_t g_runs[2];

static tsr_status fake_get(void *ctx, const char *plugin_key, const char *class_key,
                           void *out_value, size_t *inout_bytes) {
  (void)ctx;
  (void)plugin_key;
  for (int i = 0; i < g_entry_count; ++i) {
    if (strcmp(g_entries[i].key, class_key) == 0) {
      if (out_value != NULL && *inout_bytes < g_entries[i].bytes)
        return TSR_INVALID_ARGUMENT;
      if (out_value != NULL)
        memcpy(out_value, g_entries[i].value, g_entries[i].bytes);
      *inout_bytes = g_entries[i].bytes;
      return TSR_OK;
    }
  }
  return TSR_NOT_FOUND;
}

static tsr_status fake_put(void *ctx, const char *plugin_key, const char *class_key,
                           const void *value, size_t bytes) {
  (void)ctx;
  (void)plugin_key;
  ++g_puts;
  int i = 0;
  while (i < g_entry_count && strcmp(g_entries[i].key, class_key) != 0) ++i;
  assert_true(i < 16);
  if (i == g_entry_count)
    ++g_entry_count;
  snprintf(g_entries[i].key, sizeof(g_entries[i].key), "%s", class_key);
  memcpy(g_entries[i].value, value, bytes);
  g_entries[i].bytes = bytes;
  return TSR_OK;
}

static void fake_log(void *ctx, tsr_log_level_t level, const char *message) {
  (void)ctx;
  (void)level;
  (void)message;
}

static tsr_host_api g_host;

static int unit_setup(void **state) {
  (void)state;
  memset(&g_host, 0, sizeof(g_host));
  g_host.struct_size = sizeof(g_host);
  g_host.abi_major = TSR_ABI_VERSION_MAJOR;
  g_host.abi_minor = TSR_ABI_VERSION_MINOR;
  g_host.log = fake_log;
  g_host.engine_cache_get = fake_get;
  g_host.engine_cache_put = fake_put;
  g_entry_count = 0;
  g_puts = 0;
  g_runs[0] = g_runs[1] = 0;
  tsr_onednn_select_forget_all();
  return 0;
}

static tsr_status count_run(void *arg, int32_t index) {
  (void)arg;
  ++g_runs[index];
  return TSR_OK;
}

static const char *const k_names[2] = {"own", "onednn"};

static tsr_onednn_select_class class_of(const char *key, int32_t default_index) {
  tsr_onednn_select_class cls = {.host = &g_host,
                                 .plugin_key = "select test",
                                 .class_key = key,
                                 .count = 2,
                                 .names = k_names,
                                 .default_index = default_index};
  return cls;
}

static void delays_set(const char *value) {
  setenv("TSR_ONEDNN_SELECT_TEST_DELAY_US", value, 1);
  tsr_onednn_select_settings_init(NULL);
}

static void test_select_picks_the_faster_of_two_candidates(void **state) {
  (void)state;
  int32_t index = -1;
  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_NONE;
  // Default own, oneDNN faster: oneDNN.
  delays_set("own=20000,onednn=1000");
  tsr_onednn_select_class cls = class_of("matmul a", 0);
  assert_int_equal(tsr_onednn_select_measure(&cls, count_run, NULL, &index, &source), TSR_OK);
  assert_int_equal(index, 1);
  assert_int_equal(source, TSR_ONEDNN_SOURCE_MEASURED);
  assert_true(g_runs[0] >= 2 && g_runs[1] >= 2);  // a warm-up and at least one timed run
  assert_int_equal(g_puts, 1);
  assert_memory_equal(g_entries[0].value, "v1 onednn ", 10);
  // Default oneDNN, own faster: own.
  delays_set("own=1000,onednn=20000");
  cls = class_of("matmul b", 1);
  assert_int_equal(tsr_onednn_select_measure(&cls, count_run, NULL, &index, &source), TSR_OK);
  assert_int_equal(index, 0);
  assert_int_equal(source, TSR_ONEDNN_SOURCE_MEASURED);
  // Decided classes are not timed again.
  const int64_t runs = g_runs[0] + g_runs[1];
  cls = class_of("matmul a", 0);
  assert_int_equal(tsr_onednn_select_measure(&cls, count_run, NULL, &index, &source), TSR_OK);
  assert_int_equal(index, 1);
  assert_int_equal(source, TSR_ONEDNN_SOURCE_CACHE);
  assert_int_equal(g_runs[0] + g_runs[1], runs);
}

static void test_select_keeps_the_default_on_a_tie(void **state) {
  (void)state;
  int32_t index = -1;
  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_NONE;
  // oneDNN 1.5% faster than the default: a tie, the default stays.
  delays_set("own=20300,onednn=20000");
  tsr_onednn_select_class cls = class_of("unary tie", 0);
  assert_int_equal(tsr_onednn_select_measure(&cls, count_run, NULL, &index, &source), TSR_OK);
  assert_int_equal(index, 0);
  assert_int_equal(source, TSR_ONEDNN_SOURCE_MEASURED);
  assert_memory_equal(g_entries[0].value, "v1 own tie", 10);
  // 5% is not a tie.
  delays_set("own=21000,onednn=20000");
  cls = class_of("unary not a tie", 0);
  assert_int_equal(tsr_onednn_select_measure(&cls, count_run, NULL, &index, &source), TSR_OK);
  assert_int_equal(index, 1);
}

static void test_select_lookup_never_runs_a_candidate(void **state) {
  (void)state;
  int32_t index = -1;
  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_NONE;
  const int64_t before = tsr_onednn_select_runs_get();
  tsr_onednn_select_class cls = class_of("conv.fwd x", 0);
  assert_int_equal(tsr_onednn_select_lookup(&cls, &index, &source), TSR_NOT_FOUND);
  fake_put(NULL, "select test", "conv.fwd x", "v1 onednn measured", 18);
  assert_int_equal(tsr_onednn_select_lookup(&cls, &index, &source), TSR_OK);
  assert_int_equal(index, 1);
  assert_int_equal(source, TSR_ONEDNN_SOURCE_CACHE);
  assert_int_equal(tsr_onednn_select_runs_get(), before);
  assert_int_equal(g_runs[0] + g_runs[1], 0);
}

static void test_select_ignores_a_malformed_cache_value(void **state) {
  (void)state;
  int32_t index = -1;
  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_NONE;
  const char *bad[] = {"v1 gpu", "v2 own", "own", "v1 ", "v1 ownx", "\x01\xff\x00"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    char key[32];
    snprintf(key, sizeof(key), "binary %zu", i);
    fake_put(NULL, "select test", key, bad[i], strlen(bad[i]) + (i == 5));
    tsr_onednn_select_class cls = class_of(key, 0);
    assert_int_equal(tsr_onednn_select_lookup(&cls, &index, &source), TSR_NOT_FOUND);
    // Measured again, and the value replaced by a valid one.
    delays_set("own=20000,onednn=1000");
    assert_int_equal(tsr_onednn_select_measure(&cls, count_run, NULL, &index, &source), TSR_OK);
    assert_int_equal(source, TSR_ONEDNN_SOURCE_MEASURED);
    tsr_onednn_select_forget_all();
    assert_int_equal(tsr_onednn_select_lookup(&cls, &index, &source), TSR_OK);
    assert_int_equal(index, 1);
  }
}

static tsr_status failing_run(void *arg, int32_t index) {
  (void)arg;
  ++g_runs[index];
  return index == 1 ? TSR_INTERNAL : TSR_OK;
}

static void test_select_keeps_the_default_when_a_candidate_fails(void **state) {
  (void)state;
  int32_t index = -1;
  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_NONE;
  delays_set("own=20000,onednn=1000");
  tsr_onednn_select_class cls = class_of("matmul fails", 0);
  assert_int_equal(tsr_onednn_select_measure(&cls, failing_run, NULL, &index, &source), TSR_OK);
  assert_int_equal(index, 0);
  cls = class_of("matmul default fails", 1);
  assert_int_equal(tsr_onednn_select_measure(&cls, failing_run, NULL, &index, &source), TSR_OK);
  assert_int_equal(index, 1);
  assert_int_equal(source, TSR_ONEDNN_SOURCE_DEFAULT);
}

// --- the plugin, one process per "restart" ---------------------------------------------

#ifndef TSR_TEST_ONEDNN_PATH
#error "TSR_TEST_ONEDNN_PATH must name the oneDNN plugin"
#endif

// Runs in a child: creates a context on onednn:0 under the current
// environment, plans dx = dy @ w for dy [128, 256] and w [256, 256] (the own
// blocked GEMM's cold-default domain), checks that the engine starts with
// |want_prefix| and ends with |want_suffix|, and that the cache holds
// |want_decisions| decisions (-1: any). Exits 0 when all holds.
static int child_check(const char *want_prefix, const char *want_suffix, int64_t want_decisions) {
  tsr_context *context = ts_context_create(TSR_TEST_ONEDNN_PATH, "onednn:0");
  if (context == NULL)
    return 10;
  tsr_device *device = tsr_context_default_device(context);
  if (device == NULL || strcmp(tsr_device_name(device), "onednn:0") != 0)
    return 11;
  const int64_t a_sizes[2] = {128, 256}, b_sizes[2] = {256, 256}, o_sizes[2] = {128, 256};
  tsr_tensor *a = tsr_zeros(device, TSR_FLOAT32, 2, a_sizes);
  tsr_tensor *b = tsr_zeros(device, TSR_FLOAT32, 2, b_sizes);
  tsr_tensor *o = tsr_tensor_empty(device, TSR_FLOAT32, 2, o_sizes);
  if (a == NULL || b == NULL || o == NULL)
    return 12;
  tsr_tensor *inputs[2] = {a, b};
  const tsr_matmul_attrs attrs = {.struct_size = sizeof(attrs), .alpha = 1.0};
  const char *engine = NULL;
  if (tsr_op_engine_get(TSR_OP_MATMUL, 2, inputs, 1, &o, &attrs, &engine) != TSR_OK) {
    fprintf(stderr, "    plan: %s\n", tsr_last_error());
    return 13;
  }
  fprintf(stderr, "    engine: %s\n", engine);
  const size_t length = strlen(engine), suffix = strlen(want_suffix);
  if (strncmp(engine, want_prefix, strlen(want_prefix)) != 0 || length < suffix ||
      strcmp(engine + length - suffix, want_suffix) != 0)
    return 14;
  if (tsr_op_run(TSR_OP_MATMUL, 2, inputs, 1, &o, &attrs) != TSR_OK)
    return 15;
  tsr_engine_cache_info info = {.struct_size = sizeof(info)};
  if (tsr_engine_cache_info_get(context, "onednn", &info) != TSR_OK)
    return 16;
  fprintf(stderr, "    cache: %s, %lld decisions\n", info.folder ? info.folder : info.off_reason,
          (long long)info.decisions);
  if (want_decisions >= 0 && info.decisions != want_decisions)
    return 17;
  tsr_tensor_release(a);
  tsr_tensor_release(b);
  tsr_tensor_release(o);
  tsr_context_destroy(context);
  return 0;
}

// Runs child_check in a new process with |env| ("NAME=value" pairs, NULL
// terminated) added to this one's; fails the test with its exit code.
static void in_child(const char *const *env, const char *want_prefix, const char *want_suffix,
                     int64_t want_decisions) {
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    for (const char *const *e = env; *e != NULL; ++e) putenv((char *)*e);
    _exit(child_check(want_prefix, want_suffix, want_decisions));
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0) {
    fail_msg("child (%s...) wanted %s...%s: exit %d", env[0], want_prefix, want_suffix,
             WEXITSTATUS(status));
  }
}

typedef struct folder {
  char path[64];
  char env[96];
} folder;

static void folder_make(folder *f) {
  snprintf(f->path, sizeof(f->path), "/tmp/tsr-select-XXXXXX");
  assert_non_null(mkdtemp(f->path));
  snprintf(f->env, sizeof(f->env), "TSR_ENGINE_CACHE_DIR=%s", f->path);
}

// Overwrites every file of |f| but the lock with garbage; returns how many.
static int folder_corrupt(const folder *f) {
  DIR *dir = opendir(f->path);
  assert_non_null(dir);
  int count = 0;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    if (strstr(e->d_name, ".engines") == NULL)
      continue;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", f->path, e->d_name);
    FILE *file = fopen(path, "wb");
    assert_non_null(file);
    fputs("not an engine cache\n\x01\x02", file);
    fclose(file);
    ++count;
  }
  closedir(dir);
  return count;
}

static void folder_remove(const folder *f) {
  DIR *dir = opendir(f->path);
  if (dir == NULL)
    return;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", f->path, e->d_name);
    unlink(path);
  }
  closedir(dir);
  rmdir(f->path);
}

static void test_select_decision_survives_a_restart_and_a_corrupt_file(void **state) {
  (void)state;
  folder f;
  folder_make(&f);
  // The own kernel made slow: oneDNN is measured faster and kept.
  const char *slow_own[] = {f.env, "TSR_ONEDNN_SELECT_TEST_DELAY_US=own=1000000", NULL};
  in_child(slow_own, "onednn:", " [measured]", 1);
  // A new process with oneDNN made slow would pick own: it reads the cache.
  const char *slow_onednn[] = {f.env, "TSR_ONEDNN_SELECT_TEST_DELAY_US=onednn=1000000", NULL};
  in_child(slow_onednn, "onednn:", " [cache]", 1);
  // A corrupt file is ignored: measured again, and written whole again.
  assert_true(folder_corrupt(&f) >= 1);
  in_child(slow_onednn, "own:", " [measured]", 1);
  in_child(slow_own, "own:", " [cache]", 1);
  folder_remove(&f);
}

static void test_select_never_times_under_determinism_or_without_cache(void **state) {
  (void)state;
  folder f;
  folder_make(&f);
  // Timing would pick oneDNN; determinism keeps the cold default (own) and
  // stores nothing.
  const char *deterministic[] = {f.env, "TSR_DETERMINISTIC=1",
                                 "TSR_ONEDNN_SELECT_TEST_DELAY_US=own=1000000", NULL};
  in_child(deterministic, "own:", " [default]", 0);
  const char *cache_off[] = {"TSR_ENGINE_CACHE=0", "TSR_ONEDNN_SELECT_TEST_DELAY_US=own=1000000",
                             NULL};
  in_child(cache_off, "own:", " [default]", -1);
  const char *cache_only[] = {f.env, "TSR_ONEDNN_SELECT=cache",
                              "TSR_ONEDNN_SELECT_TEST_DELAY_US=own=1000000", NULL};
  in_child(cache_only, "own:", " [default]", 0);
  // A decision in the cache is used under determinism too.
  const char *measure[] = {f.env, "TSR_ONEDNN_SELECT_TEST_DELAY_US=own=1000000", NULL};
  in_child(measure, "onednn:", " [measured]", 1);
  in_child(deterministic, "onednn:", " [cache]", 1);
  folder_remove(&f);
}

// dnnl_sgemm, the third candidate of a large plain float32 product: made to
// win by the delays on the other two, it must give the float64 product for a
// transposed a, for beta 0 over an output full of NaN (never read), and for
// alpha 0.5, beta -1.5 (read). Exits 0 when all holds.
static int child_sgemm_check(void) {
  enum { N = 512 };  // 512^3 multiply-adds: sgemm.c's floor
  tsr_context *context = ts_context_create(TSR_TEST_ONEDNN_PATH, "onednn:0");
  if (context == NULL)
    return 10;
  tsr_device *device = tsr_context_default_device(context);
  static float a[N * N], b[N * N], c0[N * N], got[N * N];
  for (int i = 0; i < N * N; ++i) {
    a[i] = (float)(((int64_t)i * 7919 % 1013) - 506) / 512.0f;
    b[i] = (float)(((int64_t)i * 104729 % 997) - 498) / 499.0f;
    c0[i] = (float)((i % 13) - 6);
  }
  const int64_t sizes[2] = {N, N};
  tsr_tensor *ta_stored = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, a);
  tsr_tensor *tb = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, b);
  // a as used: the transpose of what is stored (column-major).
  tsr_tensor *ta = ta_stored != NULL ? tsr_transpose(ta_stored, 0, 1) : NULL;
  if (ta == NULL || tb == NULL)
    return 11;
  for (int round = 0; round < 2; ++round) {
    const double alpha = round == 0 ? 1.0 : 0.5, beta = round == 0 ? 0.0 : -1.5;
    tsr_tensor *o = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, c0);
    if (o == NULL || (round == 0 && tsr_fill_(o, NAN) != TSR_OK))
      return 12;
    tsr_tensor *inputs[2] = {ta, tb};
    const tsr_matmul_attrs attrs = {.struct_size = sizeof(attrs), .alpha = alpha, .beta = beta};
    const char *engine = NULL;
    if (tsr_op_engine_get(TSR_OP_MATMUL, 2, inputs, 1, &o, &attrs, &engine) != TSR_OK)
      return 13;
    fprintf(stderr, "    engine: %s\n", engine);
    if (strncmp(engine, "onednn:sgemm", 12) != 0)
      return 14;
    if (tsr_op_run(TSR_OP_MATMUL, 2, inputs, 1, &o, &attrs) != TSR_OK ||
        tsr_tensor_to_host(o, got, sizeof(got)) != TSR_OK)
      return 15;
    double worst = 0.0;
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) {
        double want = 0.0, scale = 0.0;
        for (int k = 0; k < N; ++k) {
          const double p = (double)a[k * N + i] * (double)b[k * N + j];
          want += p;
          scale += p < 0 ? -p : p;
        }
        want = alpha * want + (beta != 0.0 ? beta * (double)c0[i * N + j] : 0.0);
        const double err = fabs((double)got[i * N + j] - want) / (scale + 1.0);
        if (!(err <= worst))
          worst = err;  // NaN included
      }
    }
    fprintf(stderr, "    alpha %g beta %g: worst error %.3g of the sum of |products|\n", alpha,
            beta, worst);
    if (!(worst < 1e-5))
      return 16;
    tsr_tensor_release(o);
  }
  tsr_tensor_release(ta);
  tsr_tensor_release(ta_stored);
  tsr_tensor_release(tb);
  tsr_context_destroy(context);
  return 0;
}

static void test_sgemm_candidate_matches_float64(void **state) {
  (void)state;
  folder f;
  folder_make(&f);
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    putenv(f.env);
    putenv((char *)"TSR_ONEDNN_SELECT_TEST_DELAY_US=own=1000000,onednn=1000000");
    _exit(child_sgemm_check());
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  folder_remove(&f);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0)
    fail_msg("sgemm child: exit %d", WEXITSTATUS(status));
}

int main(void) {
  // The children run the plugin with the test's own settings only.
  unsetenv("TSR_ONEDNN_MIN_ELEMENTS");
  unsetenv("TSR_ONEDNN_SELECT");
  unsetenv("TSR_ENGINE_CACHE");
  unsetenv("TSR_DETERMINISTIC");
  const struct CMUnitTest unit[] = {
      cmocka_unit_test_setup(test_select_picks_the_faster_of_two_candidates, unit_setup),
      cmocka_unit_test_setup(test_select_keeps_the_default_on_a_tie, unit_setup),
      cmocka_unit_test_setup(test_select_lookup_never_runs_a_candidate, unit_setup),
      cmocka_unit_test_setup(test_select_ignores_a_malformed_cache_value, unit_setup),
      cmocka_unit_test_setup(test_select_keeps_the_default_when_a_candidate_fails, unit_setup),
      cmocka_unit_test(test_select_decision_survives_a_restart_and_a_corrupt_file),
      cmocka_unit_test(test_select_never_times_under_determinism_or_without_cache),
      cmocka_unit_test(test_sgemm_candidate_matches_float64),
  };
  return cmocka_run_group_tests(unit, NULL, NULL);
}
