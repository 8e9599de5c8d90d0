// ref's caching allocator: size classes, one free list and lock per class.
//
// The class lock is a spin lock: it guards a few loads and stores, never a
// call, and an out-of-place eager op takes it twice (alloc and free). A spin
// lock is one exchange and one store; a pthread mutex cost far more per lock
// and unlock pair there (docs/performance.md, "Measurements behind the
// code's decisions").
//
// Classes are 64 bytes and then four per power of two (2^k * 5/4, 6/4, 7/4,
// 8/4), so rounding wastes at most a quarter and a freed block fits the next
// request of similar size. Blocks come from the host's mem_alloc: host memory
// the plugin holds then goes through the one allocator the core accounts for
// and a test host can count, and it is reached only on a cache miss, never on
// the hot path. Cached blocks go back to the system only through trim.
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "buffer.h"
#include "host.h"
#include "tessera/plugin_kit.h"

// 2^46 bytes (64 TiB) is beyond any machine ref runs on; refusing larger
// requests up front keeps the class arithmetic free of overflow.
#define TSR_CPU_MAX_BUFFER_LOG2 46
#define TSR_CPU_MIN_CLASS_LOG2 6
#define TSR_CPU_CLASS_COUNT (1 + 4 * (TSR_CPU_MAX_BUFFER_LOG2 - TSR_CPU_MIN_CLASS_LOG2))

typedef struct tsr_cpu_size_class {
  atomic_int lock;  // 0 free, 1 held
  tsr_plugin_buffer *free_list;
  uint64_t cached_count;
  uint64_t reserved_bytes;
  uint64_t alloc_count;
  uint64_t free_count;
  uint64_t system_alloc_count;
} __attribute__((aligned(64))) tsr_cpu_size_class;

static tsr_cpu_size_class g_classes[TSR_CPU_CLASS_COUNT];
static _Atomic uint64_t g_bytes_in_use;
static _Atomic uint64_t g_peak_bytes_in_use;

static inline void tsr_cpu_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void tsr_cpu_class_lock(tsr_cpu_size_class *c) {
  for (int spins = 0; atomic_exchange_explicit(&c->lock, 1, memory_order_acquire) != 0;) {
    // Wait reading, not exchanging, so the holder's line is not stolen;
    // yield after a while in case the holder was preempted.
    while (atomic_load_explicit(&c->lock, memory_order_relaxed) != 0) {
      if (++spins < 64) {
        tsr_cpu_cpu_relax();
      } else {
        sched_yield();
      }
    }
  }
}

static void tsr_cpu_class_unlock(tsr_cpu_size_class *c) {
  atomic_store_explicit(&c->lock, 0, memory_order_release);
}

static int tsr_cpu_log2_floor(uint64_t v) { return 63 - __builtin_clzll(v); }

// Class index for |bytes| (<= 2^TSR_CPU_MAX_BUFFER_LOG2).
static uint32_t tsr_cpu_size_class_index(uint64_t bytes) {
  if (bytes <= (1u << TSR_CPU_MIN_CLASS_LOG2)) return 0;
  int k = tsr_cpu_log2_floor(bytes - 1);  // 2^k < bytes <= 2^(k+1)
  // Quarters of 2^k, rounded up: a shift, not a division, on every alloc.
  uint64_t q = (bytes - (1ull << k) + (1ull << (k - 2)) - 1) >> (k - 2);  // 1..4
  return (uint32_t)(1 + 4 * (k - TSR_CPU_MIN_CLASS_LOG2) + (q - 1));
}

static uint64_t tsr_cpu_size_class_bytes(uint32_t index) {
  if (index == 0) return 1u << TSR_CPU_MIN_CLASS_LOG2;
  uint32_t k = (index - 1) / 4 + TSR_CPU_MIN_CLASS_LOG2;
  uint64_t q = (index - 1) % 4 + 1;
  return (1ull << k) + q * (1ull << (k - 2));
}

static tsr_status tsr_cpu_device_check(const char *what, int32_t device) {
  if (device != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: device %d does not exist (ref has device 0)",
                             what, (int)device);
  }
  return TSR_OK;
}

static void tsr_cpu_in_use_add(uint64_t bytes) {
  uint64_t now = atomic_fetch_add_explicit(&g_bytes_in_use, bytes, memory_order_relaxed) + bytes;
  uint64_t peak = atomic_load_explicit(&g_peak_bytes_in_use, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak_explicit(&g_peak_bytes_in_use, &peak, now,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed)) {
  }
}

// Frees every cached block of one class; returns how many bytes went back.
static uint64_t tsr_cpu_size_class_trim(tsr_cpu_size_class *c) {
  const tsr_host_api *host = tsr_cpu_host_get();
  tsr_cpu_class_lock(c);
  tsr_plugin_buffer *list = c->free_list;
  uint64_t freed = 0;
  for (tsr_plugin_buffer *b = list; b != NULL; b = b->next_free) freed += b->capacity;
  c->free_list = NULL;
  c->cached_count = 0;
  c->reserved_bytes -= freed;
  tsr_cpu_class_unlock(c);
  while (list != NULL) {
    tsr_plugin_buffer *next = list->next_free;
    host->mem_free(host->ctx, list);
    list = next;
  }
  return freed;
}

static tsr_status tsr_cpu_trim_all(void) {
  for (int i = 0; i < TSR_CPU_CLASS_COUNT; ++i) tsr_cpu_size_class_trim(&g_classes[i]);
  return TSR_OK;
}

tsr_status tsr_cpu_buffer_alloc(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                                tsr_plugin_buffer **out_buffer) {
  (void)stream;
  if (out_buffer == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "buffer_alloc: out_buffer is NULL");
  }
  *out_buffer = NULL;
  tsr_status status = tsr_cpu_device_check("buffer_alloc", device);
  if (status != TSR_OK) return status;
  if (bytes > (1ull << TSR_CPU_MAX_BUFFER_LOG2)) {
    return tsr_cpu_error_set(TSR_OUT_OF_MEMORY,
                             "buffer_alloc: %llu bytes is more than ref's largest buffer (2^%d bytes)",
                             (unsigned long long)bytes, TSR_CPU_MAX_BUFFER_LOG2);
  }
  uint32_t index = tsr_cpu_size_class_index(bytes);
  tsr_cpu_size_class *c = &g_classes[index];

  tsr_cpu_class_lock(c);
  tsr_plugin_buffer *buffer = c->free_list;
  if (buffer != NULL) {
    c->free_list = buffer->next_free;
    c->cached_count--;
    c->alloc_count++;
  }
  tsr_cpu_class_unlock(c);

  if (buffer == NULL) {
    const tsr_host_api *host = tsr_cpu_host_get();
    uint64_t capacity = tsr_cpu_size_class_bytes(index);
    size_t total = (size_t)(capacity + TSR_CPU_BASE_ALIGNMENT);
    void *block = host->mem_alloc(host->ctx, total, TSR_CPU_BASE_ALIGNMENT);
    if (block == NULL) {
      // Memory held in other classes' caches may be what the system lacks.
      tsr_cpu_trim_all();
      block = host->mem_alloc(host->ctx, total, TSR_CPU_BASE_ALIGNMENT);
    }
    if (block == NULL) {
      return tsr_cpu_error_set(TSR_OUT_OF_MEMORY,
                               "buffer_alloc: the system refused %llu bytes (size class of %llu bytes)",
                               (unsigned long long)total, (unsigned long long)bytes);
    }
    buffer = block;
    buffer->data = (char *)block + TSR_CPU_BASE_ALIGNMENT;
    buffer->capacity = capacity;
    buffer->size_class = index;
    tsr_cpu_class_lock(c);
    c->reserved_bytes += capacity;
    c->system_alloc_count++;
    c->alloc_count++;
    tsr_cpu_class_unlock(c);
  }
  buffer->bytes = bytes;
  buffer->next_free = NULL;
  buffer->state = TSR_CPU_BUFFER_LIVE;
  tsr_cpu_in_use_add(buffer->capacity);
  *out_buffer = buffer;
  return TSR_OK;
}

tsr_status tsr_cpu_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream) {
  (void)stream;
  if (buffer == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "buffer_free: buffer is NULL");
  if (buffer->state != TSR_CPU_BUFFER_LIVE || buffer->size_class >= TSR_CPU_CLASS_COUNT) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "buffer_free: buffer %p is not a live ref buffer (freed twice?)",
                             (void *)buffer);
  }
  buffer->state = TSR_CPU_BUFFER_CACHED;
  atomic_fetch_sub_explicit(&g_bytes_in_use, buffer->capacity, memory_order_relaxed);
  tsr_cpu_size_class *c = &g_classes[buffer->size_class];
  tsr_cpu_class_lock(c);
  buffer->next_free = c->free_list;
  c->free_list = buffer;
  c->cached_count++;
  c->free_count++;
  tsr_cpu_class_unlock(c);
  return TSR_OK;
}

tsr_status tsr_cpu_buffer_host_ptr_get(tsr_plugin_buffer *buffer, void **out_ptr) {
  if (out_ptr == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "buffer_host_ptr_get: out_ptr is NULL");
  }
  if (buffer == NULL || buffer->state != TSR_CPU_BUFFER_LIVE) {
    *out_ptr = NULL;
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "buffer_host_ptr_get: buffer %p is not a live ref buffer",
                             (void *)buffer);
  }
  *out_ptr = buffer->data;
  return TSR_OK;
}

tsr_status tsr_cpu_allocator_stats_get(int32_t device, tsr_allocator_stats *out_stats) {
  tsr_status status = tsr_cpu_device_check("allocator_stats_get", device);
  if (status != TSR_OK) return status;
  if (out_stats == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "allocator_stats_get: out_stats is NULL");
  }
  if (out_stats->struct_size < sizeof(size_t)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "allocator_stats_get: out_stats->struct_size %zu is too small",
                             out_stats->struct_size);
  }
  tsr_allocator_stats s = {0};
  for (int i = 0; i < TSR_CPU_CLASS_COUNT; ++i) {
    tsr_cpu_size_class *c = &g_classes[i];
    tsr_cpu_class_lock(c);
    s.bytes_reserved += c->reserved_bytes;
    s.alloc_count += c->alloc_count;
    s.free_count += c->free_count;
    s.system_alloc_count += c->system_alloc_count;
    tsr_cpu_class_unlock(c);
  }
  s.bytes_in_use = atomic_load_explicit(&g_bytes_in_use, memory_order_relaxed);
  s.peak_bytes_in_use = atomic_load_explicit(&g_peak_bytes_in_use, memory_order_relaxed);
  // Copy only what the caller's struct holds: an older caller's is shorter.
  s.struct_size = out_stats->struct_size;
  TSR_KIT_OUT_COPY(out_stats, s);
  return TSR_OK;
}

tsr_status tsr_cpu_allocator_trim(int32_t device) {
  tsr_status status = tsr_cpu_device_check("allocator_trim", device);
  if (status != TSR_OK) return status;
  return tsr_cpu_trim_all();
}
