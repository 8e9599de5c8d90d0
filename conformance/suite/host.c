// The host table tsr-conformance gives the plugin under test. It plays the
// core, but only the parts the ABI promises (docs/abi.md section 6), so the
// plugin is judged against the contract rather than against libtessera.
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "suite.h"
#include "thread_pool.h"

static _Atomic int64_t live_blocks;
static int verbose;

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static tsr_thread_pool *pool;

// Two threads: enough to exercise a plugin's parallel paths and their
// per-thread scratch, few enough for the 2-core machines CI runs on.
static void pool_create(void) {
  if (tsr_thread_pool_create(2, &pool) != TSR_OK) pool = NULL;
}

static void host_log(void *ctx, tsr_log_level_t level, const char *message) {
  (void)ctx;
  if (verbose && message != NULL) fprintf(stderr, "[plugin log %d] %s\n", (int)level, message);
}

static tsr_status host_error_set(void *ctx, tsr_status code, const char *format, ...) {
  (void)ctx;
  va_list args;
  va_start(args, format);
  // Keep the message even for a code of TSR_OK (tsr_error_vset would drop it).
  tsr_error_vset(code == TSR_OK ? TSR_INTERNAL : code, format, args);
  va_end(args);
  return code;
}

// Blocks carry a header in front so mem_free can check them.
#define HOST_BLOCK_MAGIC 0x7473724Du

static void *host_mem_alloc(void *ctx, size_t bytes, size_t alignment) {
  (void)ctx;
  if (alignment < 16 || (alignment & (alignment - 1)) != 0 || alignment > 4096) return NULL;
  if (bytes > ((size_t)1 << 46)) return NULL;
  size_t header = alignment;
  size_t total = header + (bytes + alignment - 1) / alignment * alignment;
  unsigned char *base = aligned_alloc(alignment, total == header ? header + alignment : total);
  if (base == NULL) return NULL;
  uint32_t magic = HOST_BLOCK_MAGIC;
  memcpy(base + header - 8, &magic, sizeof(magic));
  uint32_t h = (uint32_t)header;
  memcpy(base + header - 4, &h, sizeof(h));
  atomic_fetch_add(&live_blocks, 1);
  return base + header;
}

static void host_mem_free(void *ctx, void *ptr) {
  (void)ctx;
  if (ptr == NULL) return;
  unsigned char *p = ptr;
  uint32_t magic, header;
  memcpy(&magic, p - 8, sizeof(magic));
  memcpy(&header, p - 4, sizeof(header));
  if (magic != HOST_BLOCK_MAGIC) {
    // Not ours: the plugin freed something it did not get from mem_alloc.
    // Keep going (the leak count will show it) rather than corrupt the heap.
    fprintf(stderr, "tsr-conformance: mem_free of %p, which mem_alloc never returned\n", ptr);
    return;
  }
  memset(p - 8, 0, 8);
  atomic_fetch_sub(&live_blocks, 1);
  free(p - header);
}

static tsr_status host_parallel_for(void *ctx, int64_t count, int64_t grain, tsr_parallel_fn fn,
                                    void *arg) {
  (void)ctx;
  if (fn == NULL || count < 0 || grain < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "parallel_for: fn %s, count %lld, grain %lld",
                         fn ? "set" : "NULL", (long long)count, (long long)grain);
  }
  pthread_once(&pool_once, pool_create);
  if (pool == NULL) {
    if (count > 0) fn(arg, 0, count, 0);
    return TSR_OK;
  }
  return tsr_thread_pool_parallel_for(pool, count, grain, fn, arg);
}

static int32_t host_thread_count(void *ctx) {
  (void)ctx;
  pthread_once(&pool_once, pool_create);
  return pool != NULL ? tsr_thread_pool_thread_count(pool) : 1;
}

static const tsr_host_api host = {
    .struct_size = sizeof(tsr_host_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .ctx = NULL,
    .log = host_log,
    .error_set = host_error_set,
    .mem_alloc = host_mem_alloc,
    .mem_free = host_mem_free,
    .parallel_for = host_parallel_for,
    .thread_count = host_thread_count,
};

// What a core of a later minor might pass: today's table, then entries this
// plugin cannot know. They fail loudly if a plugin calls them blindly.
typedef struct larger_host {
  tsr_host_api base;
  tsr_status (*future_entry)(void *ctx, int32_t what);
  uint64_t future_flags;
} larger_host;

static tsr_status host_future_entry(void *ctx, int32_t what) {
  (void)ctx;
  (void)what;
  return tsr_error_set(TSR_INTERNAL, "the plugin called a host entry beyond its own ABI minor");
}

static larger_host host_larger = {
    .base =
        {
            .struct_size = sizeof(larger_host),
            .abi_major = TSR_ABI_VERSION_MAJOR,
            .abi_minor = TSR_ABI_VERSION_MINOR + 1,
            .ctx = NULL,
            .log = host_log,
            .error_set = host_error_set,
            .mem_alloc = host_mem_alloc,
            .mem_free = host_mem_free,
            .parallel_for = host_parallel_for,
            .thread_count = host_thread_count,
        },
    .future_entry = host_future_entry,
    .future_flags = 0x5a5a5a5a5a5a5a5aull,
};

const tsr_host_api *tsr_conf_host_get(void) { return &host; }

const tsr_host_api *tsr_conf_host_larger_get(size_t *out_extra) {
  *out_extra = sizeof(larger_host) - sizeof(tsr_host_api);
  return &host_larger.base;
}

const char *tsr_conf_host_message(void) { return tsr_error_message(); }

void tsr_conf_host_message_clear(void) { tsr_error_clear(); }

int64_t tsr_conf_host_live_blocks(void) { return atomic_load(&live_blocks); }

void tsr_conf_host_verbose_set(int v) { verbose = v; }
