// The plugin's thread runtime: OpenMP, the runtime oneDNN is built on.
//
// DESIGN.md 5.3 allows one pool per process. oneDNN brings OpenMP, so the
// plugin offers OpenMP to the core (tsr_plugin_api.parallel_for) and runs its
// own kernels on it too; the core's pool then sleeps. The split into chunks
// is the host contract's (docs/abi.md 6.1), so own kernels give the same bits
// here as under the core's pool with the same thread count.
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "compat.h"
#include "onednn_plugin.h"

static int32_t g_threads = 1;
// Set while a call owns the OpenMP team: a second caller runs inline rather
// than starting another team on the same cores.
static atomic_flag g_busy = ATOMIC_FLAG_INIT;

void tsr_onednn_threads_init(void) {
  int n = omp_get_max_threads();
  // TSR_NUM_THREADS sizes Tessera's pool; with OpenMP as the pool it sizes
  // the team (OMP_NUM_THREADS still bounds oneDNN's own regions).
  const char *env = getenv("TSR_NUM_THREADS");
  if (env != NULL && env[0] != '\0') {
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (end != NULL && *end == '\0' && v >= 1 && v <= 1024) {
      n = (int)v;
      omp_set_num_threads(n);
    }
  }
  g_threads = n < 1 ? 1 : n;
}

int32_t tsr_onednn_thread_count_get(void) {
  return g_threads;
}

static void tsr_onednn_chunk_bounds(int64_t count, int64_t n, int64_t c, int64_t *out_begin,
                                    int64_t *out_end) {
  const int64_t base = count / n, extra = count % n;
  *out_begin = c * base + (c < extra ? c : extra);
  *out_end = *out_begin + base + (c < extra ? 1 : 0);
}

static void tsr_onednn_chunks_inline(int64_t count, int64_t n, tsr_parallel_fn fn, void *arg) {
  for (int64_t c = 0; c < n; ++c) {
    int64_t begin, end;
    tsr_onednn_chunk_bounds(count, n, c, &begin, &end);
    fn(arg, begin, end, 0);
  }
}

tsr_status tsr_onednn_parallel_for(int64_t count, int64_t grain, tsr_parallel_fn fn, void *arg) {
  if (fn == NULL || count < 0 || grain < 0) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "parallel_for: fn %s, count %lld, grain %lld",
                                fn ? "set" : "NULL", (long long)count, (long long)grain);
  }
  if (count == 0)
    return TSR_OK;
  if (grain == 0)
    grain = 1;
  const int64_t threads = g_threads;
  if (threads == 1 || count <= grain) {
    fn(arg, 0, count, 0);
    return TSR_OK;
  }
  int64_t n = count / grain;
  if (n > 4 * threads)
    n = 4 * threads;
  if (omp_in_parallel() || atomic_flag_test_and_set_explicit(&g_busy, memory_order_acquire)) {
    tsr_onednn_chunks_inline(count, n, fn, arg);
    return TSR_OK;
  }
#pragma omp parallel num_threads((int)threads)
  {
    // OpenMP may give fewer threads than asked (OMP_DYNAMIC, limits): team
    // member t then serves every thread index j = t mod team, one after the
    // other, so no two chunks with one thread index ever run at once.
    const int64_t team = omp_get_num_threads();
    for (int64_t j = omp_get_thread_num(); j < threads; j += team) {
      for (int64_t c = j; c < n; c += threads) {
        int64_t begin, end;
        tsr_onednn_chunk_bounds(count, n, c, &begin, &end);
        fn(arg, begin, end, (int32_t)j);
      }
    }
  }
  atomic_flag_clear_explicit(&g_busy, memory_order_release);
  return TSR_OK;
}
