// A minimal host table for ref's tests and benchmark.
#include "test_host.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "tsr_cpu/cpu_kernels.h"

#define TSR_TEST_MAX_THREADS 16

static _Thread_local char t_message[1024];
// Held while a call owns the pool; a call from another thread that finds it
// held runs in its own thread instead (host functions are thread-safe).
static pthread_mutex_t g_pool_busy = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int t_in_parallel;
static _Atomic uint64_t g_mem_alloc_count;
static _Atomic uint64_t g_parallel_count;
static _Atomic int32_t g_mem_alloc_failures;

// The pool: workers 1..threads-1 wait for a generation bump, run chunk
// |index| of the current job, and report done.
typedef struct tsr_test_pool {
  int32_t threads;
  pthread_t workers[TSR_TEST_MAX_THREADS];
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_cond_t done;
  uint64_t generation;
  int32_t pending;
  int stop;
  int64_t count, grain, chunks;
  tsr_parallel_fn fn;
  void *arg;
} tsr_test_pool;

static tsr_test_pool g_pool = {
    .threads = 1,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static void tsr_test_chunk_run(tsr_test_pool *pool, int64_t chunk) {
  int64_t begin = pool->count * chunk / pool->chunks;
  int64_t end = pool->count * (chunk + 1) / pool->chunks;
  if (begin < end) pool->fn(pool->arg, begin, end, (int32_t)chunk);
}

static void *tsr_test_worker_main(void *arg) {
  int32_t index = (int32_t)(intptr_t)arg;
  t_in_parallel = 1;
  uint64_t seen = 0;
  pthread_mutex_lock(&g_pool.lock);
  for (;;) {
    while (!g_pool.stop && g_pool.generation == seen) pthread_cond_wait(&g_pool.wake, &g_pool.lock);
    if (g_pool.stop) break;
    seen = g_pool.generation;
    pthread_mutex_unlock(&g_pool.lock);
    if (index < g_pool.chunks) tsr_test_chunk_run(&g_pool, index);
    pthread_mutex_lock(&g_pool.lock);
    if (--g_pool.pending == 0) pthread_cond_signal(&g_pool.done);
  }
  pthread_mutex_unlock(&g_pool.lock);
  return NULL;
}

static tsr_status tsr_test_parallel_for(void *ctx, int64_t count, int64_t grain,
                                        tsr_parallel_fn fn, void *arg) {
  (void)ctx;
  if (count <= 0) return TSR_OK;
  if (grain < 1) grain = 1;
  int64_t chunks = (count + grain - 1) / grain;
  if (chunks > g_pool.threads) chunks = g_pool.threads;
  if (chunks <= 1 || t_in_parallel || pthread_mutex_trylock(&g_pool_busy) != 0) {
    fn(arg, 0, count, 0);
    return TSR_OK;
  }
  atomic_fetch_add(&g_parallel_count, 1);
  pthread_mutex_lock(&g_pool.lock);
  g_pool.count = count;
  g_pool.grain = grain;
  g_pool.chunks = chunks;
  g_pool.fn = fn;
  g_pool.arg = arg;
  g_pool.pending = g_pool.threads - 1;
  g_pool.generation++;
  pthread_cond_broadcast(&g_pool.wake);
  pthread_mutex_unlock(&g_pool.lock);
  t_in_parallel = 1;
  tsr_test_chunk_run(&g_pool, 0);
  t_in_parallel = 0;
  pthread_mutex_lock(&g_pool.lock);
  while (g_pool.pending > 0) pthread_cond_wait(&g_pool.done, &g_pool.lock);
  pthread_mutex_unlock(&g_pool.lock);
  pthread_mutex_unlock(&g_pool_busy);
  return TSR_OK;
}

static int32_t tsr_test_thread_count(void *ctx) {
  (void)ctx;
  return g_pool.threads;
}

static void tsr_test_log(void *ctx, tsr_log_level_t level, const char *message) {
  (void)ctx;
  (void)level;
  (void)message;
}

static tsr_status tsr_test_error_set(void *ctx, tsr_status code, const char *format, ...) {
  (void)ctx;
  va_list args;
  va_start(args, format);
  vsnprintf(t_message, sizeof(t_message), format, args);
  va_end(args);
  return code;
}

static void *tsr_test_mem_alloc(void *ctx, size_t bytes, size_t alignment) {
  (void)ctx;
  void *ptr = NULL;
  atomic_fetch_add(&g_mem_alloc_count, 1);
  if (atomic_load(&g_mem_alloc_failures) > 0 && atomic_fetch_sub(&g_mem_alloc_failures, 1) > 0) {
    return NULL;
  }
  if (posix_memalign(&ptr, alignment, bytes == 0 ? 1 : bytes) != 0) return NULL;
  return ptr;
}

static void tsr_test_mem_free(void *ctx, void *ptr) {
  (void)ctx;
  free(ptr);
}

static const tsr_host_api k_host = {
    .struct_size = sizeof(tsr_host_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .ctx = NULL,
    .log = tsr_test_log,
    .error_set = tsr_test_error_set,
    .mem_alloc = tsr_test_mem_alloc,
    .mem_free = tsr_test_mem_free,
    .parallel_for = tsr_test_parallel_for,
    .thread_count = tsr_test_thread_count,
};

void tsr_test_host_stop(void) {
  if (g_pool.threads <= 1) return;
  pthread_mutex_lock(&g_pool.lock);
  g_pool.stop = 1;
  pthread_cond_broadcast(&g_pool.wake);
  pthread_mutex_unlock(&g_pool.lock);
  for (int32_t i = 1; i < g_pool.threads; ++i) pthread_join(g_pool.workers[i], NULL);
  g_pool.threads = 1;
  g_pool.stop = 0;
}

const tsr_plugin_api *tsr_test_host_start(int32_t threads) {
  tsr_test_host_stop();
  if (threads > TSR_TEST_MAX_THREADS) threads = TSR_TEST_MAX_THREADS;
  if (threads < 1) threads = 1;
  g_pool.generation = 0;
  for (int32_t i = 1; i < threads; ++i) {
    pthread_create(&g_pool.workers[i], NULL, tsr_test_worker_main, (void *)(intptr_t)i);
  }
  g_pool.threads = threads;
  const tsr_plugin_api *api = NULL;
  if (tsr_cpu_plugin_table_create(&k_host, &api) != TSR_OK) return NULL;
  return api;
}

const tsr_host_api *tsr_test_host_get(void) { return &k_host; }

const char *tsr_test_host_error_get(void) { return t_message; }

void tsr_test_host_error_clear(void) { t_message[0] = '\0'; }

uint64_t tsr_test_host_mem_alloc_count(void) { return atomic_load(&g_mem_alloc_count); }

uint64_t tsr_test_host_parallel_count(void) { return atomic_load(&g_parallel_count); }

void tsr_test_host_mem_alloc_fail(int32_t count) { atomic_store(&g_mem_alloc_failures, count); }
