// The caching allocator (allocator.h). One mutex per device: the critical
// sections are a list walk and a few counters, far shorter than the
// cudaMalloc they save, and devices never contend with each other.
#include "allocator.h"
#include "tessera/plugin_kit.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TSR_CUDA_ALLOC_MIN 512ull

// 64 bits: a process creating a stream every nanosecond needs centuries to wrap.
static _Atomic uint64_t g_next_stream_id = 1;

uint64_t tsr_cuda_stream_id_next(void) {
  return atomic_fetch_add_explicit(&g_next_stream_id, 1, memory_order_relaxed);
}

tsr_status tsr_cuda_alloc_class_get(uint64_t bytes, uint64_t *out_size, int32_t *out_index) {
  if (bytes <= TSR_CUDA_ALLOC_MIN) {
    *out_size = TSR_CUDA_ALLOC_MIN;
    *out_index = 0;
    return TSR_OK;
  }
  if (bytes > (1ull << 63))
    return TSR_OUT_OF_MEMORY;
  // 2^p < bytes <= 2^(p+1); four classes split that range evenly.
  int p = 63 - __builtin_clzll(bytes - 1);
  uint64_t base = 1ull << p;
  uint64_t step = base >> 2;
  uint64_t k = (bytes - base + step - 1) / step;
  *out_size = base + k * step;
  *out_index = (int32_t)((p - 9) * 4 + (int)k);
  return TSR_OK;
}

void tsr_cuda_allocator_init(tsr_cuda_allocator *allocator, int32_t device,
                             const tsr_cuda_alloc_backend *backend, uint64_t cap_bytes) {
  memset(allocator, 0, sizeof(*allocator));
  allocator->device = device;
  allocator->backend = *backend;
  allocator->cap_bytes = cap_bytes;
  allocator->stats.struct_size = sizeof(allocator->stats);
  pthread_mutex_init(&allocator->lock, NULL);
}

static void tsr_cuda_block_release(tsr_cuda_allocator *allocator, tsr_cuda_block *block) {
  if (block->marker != NULL)
    allocator->backend.marker_release(allocator->backend.ctx, block->marker);
  allocator->backend.release(allocator->backend.ctx, block->ptr, block->size);
  allocator->stats.bytes_reserved -= block->size;
  allocator->cached_bytes -= block->size;
  allocator->cached_blocks -= 1;
  free(block);
}

// A cached block is idle for anyone when it was freed after a device-wide
// sync or its marker has completed.
static int tsr_cuda_block_idle(tsr_cuda_allocator *allocator, const tsr_cuda_block *block) {
  if (block->marker != NULL)
    return allocator->backend.marker_done(allocator->backend.ctx, block->marker);
  return block->free_stream_id == 0;
}

// Caller holds the lock. With |wait| every cached block goes (after a device
// sync), otherwise only the idle ones.
static tsr_status tsr_cuda_allocator_trim_locked(tsr_cuda_allocator *allocator, int wait) {
  tsr_status status = TSR_OK;
  if (wait && allocator->cached_blocks > 0) {
    status = allocator->backend.device_synchronize(allocator->backend.ctx);
    if (status != TSR_OK)
      return status;
  }
  for (int c = 0; c < TSR_CUDA_ALLOC_CLASS_COUNT; ++c) {
    tsr_cuda_block **link = &allocator->free_lists[c];
    while (*link != NULL) {
      tsr_cuda_block *block = *link;
      if (wait || tsr_cuda_block_idle(allocator, block)) {
        *link = block->next;
        tsr_cuda_block_release(allocator, block);
      } else {
        link = &block->next;
      }
    }
  }
  return status;
}

void tsr_cuda_allocator_destroy(tsr_cuda_allocator *allocator) {
  pthread_mutex_lock(&allocator->lock);
  (void)tsr_cuda_allocator_trim_locked(allocator, 1);
  pthread_mutex_unlock(&allocator->lock);
  pthread_mutex_destroy(&allocator->lock);
}

// Takes a cached block of class |index| usable on the stream |stream_id|
// (0: none), or NULL.
static tsr_cuda_block *tsr_cuda_cache_take(tsr_cuda_allocator *allocator, int32_t index,
                                           uint64_t stream_id) {
  tsr_cuda_block **link = &allocator->free_lists[index];
  tsr_cuda_block **idle = NULL;
  for (; *link != NULL; link = &(*link)->next) {
    tsr_cuda_block *block = *link;
    // Same stream: the stream itself orders the reuse after the old work.
    if (stream_id != 0 && block->free_stream_id == stream_id)
      break;
    if (idle == NULL && tsr_cuda_block_idle(allocator, block))
      idle = link;
  }
  if (*link == NULL)
    link = idle;
  if (link == NULL)
    return NULL;
  tsr_cuda_block *block = *link;
  *link = block->next;
  if (block->marker != NULL)
    allocator->backend.marker_release(allocator->backend.ctx, block->marker);
  block->marker = NULL;
  block->free_stream_id = 0;
  block->next = NULL;
  allocator->cached_bytes -= block->size;
  allocator->cached_blocks -= 1;
  return block;
}

static uint64_t tsr_cuda_cache_largest(const tsr_cuda_allocator *allocator) {
  for (int c = TSR_CUDA_ALLOC_CLASS_COUNT - 1; c >= 0; --c) {
    if (allocator->free_lists[c] != NULL)
      return allocator->free_lists[c]->size;
  }
  return 0;
}

// The message for a request that failed after the caches were freed.
// |cached|, |blocks| and |largest| are the caches as they were before.
static tsr_status tsr_cuda_oom_report(tsr_cuda_allocator *allocator, const tsr_host_api *host,
                                      uint64_t bytes, uint64_t size, uint64_t cached,
                                      uint64_t blocks, uint64_t largest, const char *why) {
  const tsr_allocator_stats *s = &allocator->stats;
  double unusable = cached > 0 ? 100.0 * (double)(cached - largest) / (double)cached : 0.0;
  if (host == NULL)
    return TSR_OUT_OF_MEMORY;
  return host->error_set(
      host->ctx, TSR_OUT_OF_MEMORY,
      "buffer_alloc: cuda:%d out of memory for %llu bytes (class %llu) %s, after freeing the "
      "caches and retrying once: in use %llu bytes, reserved %llu bytes, cap %llu bytes "
      "(0: none); before the retry %llu bytes were cached in %llu blocks, the largest %llu "
      "bytes (fragmentation: %.1f%% of cached bytes outside the largest block)",
      (int)allocator->device, (unsigned long long)bytes, (unsigned long long)size, why,
      (unsigned long long)s->bytes_in_use, (unsigned long long)s->bytes_reserved,
      (unsigned long long)allocator->cap_bytes, (unsigned long long)cached,
      (unsigned long long)blocks, (unsigned long long)largest, unusable);
}

// Reserves a new block of |size| within the cap. Caller holds the lock.
static tsr_status tsr_cuda_reserve(tsr_cuda_allocator *allocator, uint64_t size, void **out_ptr) {
  if (allocator->cap_bytes != 0 && allocator->stats.bytes_reserved + size > allocator->cap_bytes)
    return TSR_OUT_OF_MEMORY;
  return allocator->backend.reserve(allocator->backend.ctx, size, out_ptr);
}

tsr_status tsr_cuda_allocator_alloc(tsr_cuda_allocator *allocator, const tsr_host_api *host,
                                    uint64_t bytes, void *stream, uint64_t stream_id,
                                    tsr_cuda_block **out_block) {
  uint64_t size = 0;
  int32_t index = 0;
  *out_block = NULL;
  if (tsr_cuda_alloc_class_get(bytes, &size, &index) != TSR_OK) {
    return host ? host->error_set(host->ctx, TSR_OUT_OF_MEMORY,
                                  "buffer_alloc: bytes is %llu, beyond any device",
                                  (unsigned long long)bytes)
                : TSR_OUT_OF_MEMORY;
  }
  // A stream without an id could only be matched by address.
  (void)stream;
  assert((stream == NULL) == (stream_id == 0));
  pthread_mutex_lock(&allocator->lock);
  tsr_cuda_block *block = tsr_cuda_cache_take(allocator, index, stream_id);
  tsr_status status = TSR_OK;
  if (block == NULL) {
    // A miss reaches the driver anyway; the record's malloc is noise beside it.
    block = calloc(1, sizeof(*block));
    if (block == NULL) {
      pthread_mutex_unlock(&allocator->lock);
      return host ? host->error_set(host->ctx, TSR_OUT_OF_MEMORY,
                                    "buffer_alloc: no host memory for a block record")
                  : TSR_OUT_OF_MEMORY;
    }
    void *ptr = NULL;
    status = tsr_cuda_reserve(allocator, size, &ptr);
    if (status == TSR_OUT_OF_MEMORY) {
      uint64_t cached_bytes = allocator->cached_bytes;
      uint64_t cached_blocks = allocator->cached_blocks;
      uint64_t largest = tsr_cuda_cache_largest(allocator);
      int over_cap = allocator->cap_bytes != 0 &&
                     allocator->stats.bytes_reserved + size > allocator->cap_bytes;
      allocator->oom_retries += 1;
      status = tsr_cuda_allocator_trim_locked(allocator, 1);
      if (status == TSR_OK)
        status = tsr_cuda_reserve(allocator, size, &ptr);
      if (status == TSR_OUT_OF_MEMORY) {
        over_cap = allocator->cap_bytes != 0 &&
                   allocator->stats.bytes_reserved + size > allocator->cap_bytes;
        status =
            tsr_cuda_oom_report(allocator, host, bytes, size, cached_bytes, cached_blocks, largest,
                                over_cap ? "(the allocator's cap)" : "(the device is full)");
      }
    }
    if (status != TSR_OK) {
      pthread_mutex_unlock(&allocator->lock);
      free(block);
      return status;
    }
    block->ptr = ptr;
    block->size = size;
    block->device = allocator->device;
    block->class_index = index;
    allocator->stats.bytes_reserved += size;
    allocator->stats.system_alloc_count += 1;
  }
  block->in_use = 1;
  block->requested = bytes;
  allocator->stats.bytes_in_use += size;
  if (allocator->stats.bytes_in_use > allocator->stats.peak_bytes_in_use)
    allocator->stats.peak_bytes_in_use = allocator->stats.bytes_in_use;
  allocator->stats.alloc_count += 1;
  pthread_mutex_unlock(&allocator->lock);
  *out_block = block;
  return TSR_OK;
}

tsr_status tsr_cuda_allocator_free(tsr_cuda_allocator *allocator, const tsr_host_api *host,
                                   tsr_cuda_block *block, void *stream, uint64_t stream_id) {
  if (!block->in_use) {
    return host ? host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                                  "buffer_free: buffer %p was already freed", (void *)block)
                : TSR_INVALID_ARGUMENT;
  }
  assert((stream == NULL) == (stream_id == 0));
  void *marker = NULL;
  if (stream == NULL) {
    tsr_status status = allocator->backend.device_synchronize(allocator->backend.ctx);
    if (status != TSR_OK)
      return status;
  } else {
    marker = allocator->backend.marker_record(allocator->backend.ctx, stream);
  }
  pthread_mutex_lock(&allocator->lock);
  block->in_use = 0;
  block->free_stream_id = stream_id;
  block->marker = marker;
  block->next = allocator->free_lists[block->class_index];
  allocator->free_lists[block->class_index] = block;
  allocator->cached_bytes += block->size;
  allocator->cached_blocks += 1;
  allocator->stats.bytes_in_use -= block->size;
  allocator->stats.free_count += 1;
  pthread_mutex_unlock(&allocator->lock);
  return TSR_OK;
}

tsr_status tsr_cuda_allocator_trim(tsr_cuda_allocator *allocator, int wait) {
  pthread_mutex_lock(&allocator->lock);
  tsr_status status = tsr_cuda_allocator_trim_locked(allocator, wait);
  pthread_mutex_unlock(&allocator->lock);
  return status;
}

void tsr_cuda_allocator_stats_get(tsr_cuda_allocator *allocator, tsr_allocator_stats *out_stats) {
  pthread_mutex_lock(&allocator->lock);
  tsr_allocator_stats s = allocator->stats;
  pthread_mutex_unlock(&allocator->lock);
  TSR_KIT_OUT_COPY(out_stats, s);
}

void tsr_cuda_allocator_cache_get(tsr_cuda_allocator *allocator, uint64_t *out_bytes,
                                  uint64_t *out_blocks) {
  pthread_mutex_lock(&allocator->lock);
  *out_bytes = allocator->cached_bytes;
  *out_blocks = allocator->cached_blocks;
  pthread_mutex_unlock(&allocator->lock);
}
