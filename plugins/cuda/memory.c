// Device memory, pinned host memory and copies.
//
// The allocator (allocator.c) runs over a backend of cudaMalloc/cudaFree
// with cudaEvents as the stream-order markers. docs/cuda.md says why own size
// classes rather than a cudaMemPool.
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_plugin.h"

#define TSR_CUDA_SPARE_EVENTS 256

typedef struct tsr_cuda_device_memory {
  int32_t device;
  tsr_cuda_allocator allocator;
  // Released markers, kept for the next stream-ordered free: a free then
  // costs a cudaEventRecord, not a cudaEventCreate.
  pthread_mutex_t spare_lock;
  int32_t spare_count;
  cudaEvent_t spare[TSR_CUDA_SPARE_EVENTS];
} tsr_cuda_device_memory;

static tsr_cuda_device_memory g_memory[TSR_CUDA_MAX_DEVICES];
static int32_t g_memory_count;

static tsr_status tsr_cuda_backend_reserve(void *ctx, uint64_t bytes, void **out_ptr) {
  tsr_cuda_device_memory *m = ctx;
  tsr_cuda_device_scope scope;
  tsr_status status = tsr_cuda_device_enter(m->device, "buffer_alloc", &scope);
  if (status != TSR_OK)
    return status;
  cudaError_t error = cudaMalloc(out_ptr, (size_t)bytes);
  tsr_cuda_device_leave(&scope);
  if (error == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return TSR_OUT_OF_MEMORY;
  }
  return tsr_cuda_check(error, "buffer_alloc", "cudaMalloc");
}

static void tsr_cuda_backend_release(void *ctx, void *ptr, uint64_t bytes) {
  tsr_cuda_device_memory *m = ctx;
  (void)bytes;
  // cudaFree waits for the device; an error here leaves nothing to undo.
  tsr_cuda_device_scope scope;
  if (tsr_cuda_device_enter(m->device, "buffer_free", &scope) == TSR_OK) {
    (void)cudaFree(ptr);
    tsr_cuda_device_leave(&scope);
  }
  (void)cudaGetLastError();
}

static void *tsr_cuda_backend_marker_record(void *ctx, void *stream) {
  tsr_cuda_device_memory *m = ctx;
  tsr_cuda_stream *s = stream;
  cudaEvent_t event = NULL;
  tsr_cuda_device_scope scope;
  if (s == NULL || tsr_cuda_device_enter(m->device, "buffer_free", &scope) != TSR_OK)
    return NULL;
  pthread_mutex_lock(&m->spare_lock);
  if (m->spare_count > 0)
    event = m->spare[--m->spare_count];
  pthread_mutex_unlock(&m->spare_lock);
  if (event == NULL && cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
    (void)cudaGetLastError();
    event = NULL;
  } else if (cudaEventRecord(event, s->stream) != cudaSuccess) {
    (void)cudaGetLastError();
    cudaEventDestroy(event);
    event = NULL;
  }
  tsr_cuda_device_leave(&scope);
  return event;
}

static int tsr_cuda_backend_marker_done(void *ctx, void *marker) {
  (void)ctx;
  cudaError_t error = cudaEventQuery((cudaEvent_t)marker);
  if (error == cudaSuccess)
    return 1;
  (void)cudaGetLastError();
  return 0;
}

static void tsr_cuda_backend_marker_release(void *ctx, void *marker) {
  tsr_cuda_device_memory *m = ctx;
  pthread_mutex_lock(&m->spare_lock);
  int kept = m->spare_count < TSR_CUDA_SPARE_EVENTS;
  if (kept)
    m->spare[m->spare_count++] = (cudaEvent_t)marker;
  pthread_mutex_unlock(&m->spare_lock);
  if (!kept)
    (void)cudaEventDestroy((cudaEvent_t)marker);
}

static tsr_status tsr_cuda_backend_device_synchronize(void *ctx) {
  tsr_cuda_device_memory *m = ctx;
  tsr_cuda_device_scope scope;
  tsr_status status = tsr_cuda_device_enter(m->device, "buffer_free", &scope);
  if (status != TSR_OK)
    return status;
  status = tsr_cuda_check(cudaDeviceSynchronize(), "buffer_free", "cudaDeviceSynchronize");
  tsr_cuda_device_leave(&scope);
  return status;
}

void tsr_cuda_memory_init(int32_t device_count) {
  // TSR_CUDA_MEMORY_CAP_MB caps what each device's allocator holds.
  uint64_t cap = 0;
  const char *env = getenv("TSR_CUDA_MEMORY_CAP_MB");
  if (env != NULL && env[0] != '\0') {
    // Strictly: digits only (strtoull would read "-3" as a huge cap and
    // "2x" as 2), at most 2^40 MiB so that the shift cannot overflow.
    char *end = NULL;
    errno = 0;
    unsigned long long mb = strtoull(env, &end, 10);
    if (env[0] >= '0' && env[0] <= '9' && *end == '\0' && errno == 0 && mb <= (1ull << 40)) {
      cap = (uint64_t)mb << 20;
    } else {
      const tsr_host_api *host = tsr_cuda_host();
      char message[200];
      snprintf(message, sizeof(message),
               "TSR_CUDA_MEMORY_CAP_MB=%.64s is not a count of MiB; using no cap", env);
      if (host != NULL) host->log(host->ctx, TSR_LOG_WARNING, message);
    }
  }
  for (int32_t d = 0; d < device_count; ++d) {
    g_memory[d].device = d;
    g_memory[d].spare_count = 0;
    pthread_mutex_init(&g_memory[d].spare_lock, NULL);
    tsr_cuda_alloc_backend backend = {
        &g_memory[d],
        tsr_cuda_backend_reserve,
        tsr_cuda_backend_release,
        tsr_cuda_backend_marker_record,
        tsr_cuda_backend_marker_done,
        tsr_cuda_backend_marker_release,
        tsr_cuda_backend_device_synchronize,
    };
    tsr_cuda_allocator_init(&g_memory[d].allocator, d, &backend, cap);
  }
  g_memory_count = device_count;
}

void tsr_cuda_memory_shutdown(void) {
  for (int32_t d = 0; d < g_memory_count; ++d) {
    tsr_cuda_device_memory *m = &g_memory[d];
    // The allocator's trim hands its markers back to the spare list first.
    tsr_cuda_allocator_destroy(&m->allocator);
    tsr_cuda_device_scope scope;
    int entered = tsr_cuda_device_enter(d, "shutdown", &scope) == TSR_OK;
    pthread_mutex_lock(&m->spare_lock);
    for (int32_t i = 0; i < m->spare_count; ++i) (void)cudaEventDestroy(m->spare[i]);
    m->spare_count = 0;
    pthread_mutex_unlock(&m->spare_lock);
    (void)cudaGetLastError();
    if (entered)
      tsr_cuda_device_leave(&scope);
    pthread_mutex_destroy(&m->spare_lock);
  }
  g_memory_count = 0;
}

tsr_cuda_allocator *tsr_cuda_allocator_of(int32_t device) {
  return &g_memory[device].allocator;
}

static tsr_status tsr_cuda_stream_arg(const tsr_cuda_stream *s, int32_t device,
                                      const char *function) {
  if (s != NULL && s->device != device) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                      "%s: stream is on cuda:%d, the buffer on cuda:%d", function,
                                      (int)s->device, (int)device);
  }
  return TSR_OK;
}

tsr_status tsr_cuda_buffer_alloc(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                                 tsr_plugin_buffer **out_buffer) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_buffer == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "buffer_alloc: out_buffer is NULL");
  *out_buffer = NULL;
  tsr_status status = tsr_cuda_device_check(device, "buffer_alloc");
  if (status == TSR_OK)
    status = tsr_cuda_stream_arg((const tsr_cuda_stream *)stream, device, "buffer_alloc");
  if (status != TSR_OK)
    return status;
  const tsr_cuda_stream *s = (const tsr_cuda_stream *)stream;
  tsr_cuda_block *block = NULL;
  status = tsr_cuda_allocator_alloc(&g_memory[device].allocator, host, bytes, stream,
                                    s != NULL ? s->id : 0, &block);
  if (status != TSR_OK)
    return status;
  *out_buffer = (tsr_plugin_buffer *)block;
  return TSR_OK;
}

tsr_status tsr_cuda_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream) {
  const tsr_host_api *host = tsr_cuda_host();
  tsr_cuda_block *block = (tsr_cuda_block *)buffer;
  if (block == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "buffer_free: buffer is NULL");
  tsr_status status =
      tsr_cuda_stream_arg((const tsr_cuda_stream *)stream, block->device, "buffer_free");
  if (status != TSR_OK)
    return status;
  const tsr_cuda_stream *s = (const tsr_cuda_stream *)stream;
  return tsr_cuda_allocator_free(&g_memory[block->device].allocator, host, block, stream,
                                 s != NULL ? s->id : 0);
}

tsr_status tsr_cuda_host_pinned_alloc(int32_t device, uint64_t bytes, void **out_ptr) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_ptr == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "host_pinned_alloc: out_ptr is NULL");
  *out_ptr = NULL;
  tsr_cuda_device_scope scope;
  tsr_status status = tsr_cuda_device_check(device, "host_pinned_alloc");
  if (status == TSR_OK)
    status = tsr_cuda_device_enter(device, "host_pinned_alloc", &scope);
  if (status != TSR_OK)
    return status;
  // Portable: usable for asynchronous copies with any device of the process.
  status = tsr_cuda_check(
      cudaHostAlloc(out_ptr, bytes > 0 ? (size_t)bytes : 1, cudaHostAllocPortable),
      "host_pinned_alloc", "cudaHostAlloc");
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_host_pinned_free(int32_t device, void *ptr) {
  tsr_status status = tsr_cuda_device_check(device, "host_pinned_free");
  if (status != TSR_OK || ptr == NULL)
    return status;
  return tsr_cuda_check(cudaFreeHost(ptr), "host_pinned_free", "cudaFreeHost");
}

tsr_status tsr_cuda_allocator_stats(int32_t device, tsr_allocator_stats *out_stats) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_stats == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "allocator_stats_get: out_stats is NULL");
  }
  tsr_status status = tsr_cuda_device_check(device, "allocator_stats_get");
  if (status != TSR_OK)
    return status;
  tsr_cuda_allocator_stats_get(&g_memory[device].allocator, out_stats);
  return TSR_OK;
}

tsr_status tsr_cuda_allocator_trim_entry(int32_t device) {
  tsr_status status = tsr_cuda_device_check(device, "allocator_trim");
  if (status != TSR_OK)
    return status;
  // Only blocks whose frees have completed: trim never waits for the device.
  return tsr_cuda_allocator_trim(&g_memory[device].allocator, 0);
}

// Page-locked memory from cudaHostAlloc (or registered) lets the copy stay
// queued; anything else is copied before the call returns.
static int tsr_cuda_is_pinned(const void *ptr) {
  struct cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return attributes.type == cudaMemoryTypeHost;
}

static tsr_status tsr_cuda_range_check(const tsr_cuda_block *block, uint64_t offset, uint64_t bytes,
                                       const char *function, const char *name) {
  if (offset > block->requested || bytes > block->requested - offset) {
    return tsr_cuda_host()->error_set(
        tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
        "%s: %s range [%llu, %llu) lies outside the buffer's %llu bytes", function, name,
        (unsigned long long)offset, (unsigned long long)(offset + bytes),
        (unsigned long long)block->requested);
  }
  return TSR_OK;
}

static tsr_status tsr_cuda_copy_args(const tsr_cuda_stream *s, const tsr_cuda_block *block,
                                     const void *host_ptr, uint64_t offset, uint64_t bytes,
                                     const char *function) {
  const tsr_host_api *host = tsr_cuda_host();
  if (s == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "%s: stream is NULL", function);
  if (block == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "%s: buffer is NULL", function);
  if (host_ptr == NULL && bytes > 0)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "%s: host pointer is NULL", function);
  tsr_status status = tsr_cuda_stream_arg(s, block->device, function);
  if (status == TSR_OK)
    status = tsr_cuda_range_check(block, offset, bytes, function, "buffer");
  return status;
}

tsr_status tsr_cuda_copy_host_to_device(tsr_plugin_stream *stream, const void *src,
                                        tsr_plugin_buffer *dst, uint64_t dst_offset,
                                        uint64_t bytes) {
  const tsr_cuda_stream *s = (const tsr_cuda_stream *)stream;
  const tsr_cuda_block *block = (const tsr_cuda_block *)dst;
  tsr_status status = tsr_cuda_copy_args(s, block, src, dst_offset, bytes, "copy_host_to_device");
  if (status != TSR_OK || bytes == 0)
    return status;
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(s->device, "copy_host_to_device", &scope);
  if (status != TSR_OK)
    return status;
  status = tsr_cuda_check(cudaMemcpyAsync((char *)block->ptr + dst_offset, src, (size_t)bytes,
                                          cudaMemcpyHostToDevice, s->stream),
                          "copy_host_to_device", "cudaMemcpyAsync");
  // Ordinary memory may be reused as soon as we return.
  if (status == TSR_OK && !tsr_cuda_is_pinned(src)) {
    status = tsr_cuda_check(cudaStreamSynchronize(s->stream), "copy_host_to_device",
                            "cudaStreamSynchronize");
  }
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_copy_device_to_host(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                        uint64_t src_offset, void *dst, uint64_t bytes) {
  const tsr_cuda_stream *s = (const tsr_cuda_stream *)stream;
  const tsr_cuda_block *block = (const tsr_cuda_block *)src;
  tsr_status status = tsr_cuda_copy_args(s, block, dst, src_offset, bytes, "copy_device_to_host");
  if (status != TSR_OK || bytes == 0)
    return status;
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(s->device, "copy_device_to_host", &scope);
  if (status != TSR_OK)
    return status;
  status = tsr_cuda_check(cudaMemcpyAsync(dst, (const char *)block->ptr + src_offset, (size_t)bytes,
                                          cudaMemcpyDeviceToHost, s->stream),
                          "copy_device_to_host", "cudaMemcpyAsync");
  if (status == TSR_OK && !tsr_cuda_is_pinned(dst)) {
    status = tsr_cuda_check(cudaStreamSynchronize(s->stream), "copy_device_to_host",
                            "cudaStreamSynchronize");
  }
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_copy_device_to_device(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                          uint64_t src_offset, tsr_plugin_buffer *dst,
                                          uint64_t dst_offset, uint64_t bytes) {
  const tsr_host_api *host = tsr_cuda_host();
  const tsr_cuda_stream *s = (const tsr_cuda_stream *)stream;
  const tsr_cuda_block *from = (const tsr_cuda_block *)src;
  const tsr_cuda_block *to = (const tsr_cuda_block *)dst;
  tsr_status status = tsr_cuda_copy_args(s, to, "", dst_offset, bytes, "copy_device_to_device");
  if (status != TSR_OK)
    return status;
  if (from == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "copy_device_to_device: src is NULL");
  }
  status = tsr_cuda_range_check(from, src_offset, bytes, "copy_device_to_device", "src");
  if (status != TSR_OK)
    return status;
  if (from->device != to->device) {
    return host->error_set(host->ctx, TSR_UNSUPPORTED,
                           "copy_device_to_device: src on cuda:%d, dst on cuda:%d; the core "
                           "stages copies between devices",
                           (int)from->device, (int)to->device);
  }
  if (from == to && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes &&
      bytes > 0) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "copy_device_to_device: ranges [%llu, +%llu) and [%llu, +%llu) of "
                           "one buffer overlap",
                           (unsigned long long)src_offset, (unsigned long long)bytes,
                           (unsigned long long)dst_offset, (unsigned long long)bytes);
  }
  if (bytes == 0)
    return TSR_OK;
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(s->device, "copy_device_to_device", &scope);
  if (status != TSR_OK)
    return status;
  status = tsr_cuda_check(
      cudaMemcpyAsync((char *)to->ptr + dst_offset, (const char *)from->ptr + src_offset,
                      (size_t)bytes, cudaMemcpyDeviceToDevice, s->stream),
      "copy_device_to_device", "cudaMemcpyAsync");
  tsr_cuda_device_leave(&scope);
  return status;
}
