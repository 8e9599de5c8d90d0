// Device memory: a caching allocator over cl_mem, pinned host memory, and the
// copies.
//
// Size classes are 2^k, 1.25, 1.5 and 1.75 * 2^k bytes (from 256 B), so a
// block wastes at most a fifth of itself. A freed block goes back to its
// class with a marker event recorded on the freeing stream: work queued later
// on that same stream may reuse it at once (the queue is in order); another
// stream takes it only once the marker has completed. A failed allocation
// waits for the pending frees, releases every cached block and tries once
// more before reporting out-of-memory with the allocator's figures.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_table.h"
#include "tessera/plugin_kit.h"

#define TSR_OCL_MIN_CLASS_BYTES 256u
#define TSR_OCL_CLASS_COUNT (4 * 64)
#define TSR_OCL_MAX_PINNED 64

struct tsr_ocl_allocator {
  tsr_ocl_device *device;
  pthread_mutex_t lock;  // the free lists and the figures; never held across an OpenCL wait
  tsr_ocl_buffer *free_lists[TSR_OCL_CLASS_COUNT];
  uint64_t bytes_in_use;
  uint64_t bytes_reserved;
  uint64_t peak_bytes_in_use;
  uint64_t alloc_count;
  uint64_t free_count;
  uint64_t system_alloc_count;
  uint64_t cached_blocks;
  // Pinned host allocations: the host pointer and the cl_mem that backs it.
  struct {
    void *host;
    uint64_t bytes;
    cl_mem mem;
  } pinned[TSR_OCL_MAX_PINNED];
};

// The smallest class holding |bytes| and its capacity.
static uint32_t size_class_of(uint64_t bytes, uint64_t *out_capacity) {
  if (bytes <= TSR_OCL_MIN_CLASS_BYTES) {
    *out_capacity = TSR_OCL_MIN_CLASS_BYTES;
    return 0;
  }
  uint32_t k = 63u - (uint32_t)__builtin_clzll(bytes);  // 2^k <= bytes < 2^(k+1)
  uint64_t base = 1ull << k;
  for (uint32_t j = 0; j < 4; ++j) {
    uint64_t capacity = base + j * (base >> 2);
    if (capacity >= bytes) {
      *out_capacity = capacity;
      return 4 * k + j;
    }
  }
  *out_capacity = base << 1;
  return 4 * (k + 1);
}

tsr_status tsr_ocl_allocator_create(tsr_ocl_device *device, tsr_ocl_allocator **out_allocator) {
  tsr_ocl_allocator *a = calloc(1, sizeof(*a));
  if (a == NULL) return tsr_ocl_error(TSR_OUT_OF_MEMORY, "opencl: allocator: out of host memory");
  a->device = device;
  pthread_mutex_init(&a->lock, NULL);
  *out_allocator = a;
  return TSR_OK;
}

static void block_release(tsr_ocl_buffer *block) {
  if (block->ready != NULL) clReleaseEvent(block->ready);
  if (block->mem != NULL) clReleaseMemObject(block->mem);
  block->magic = 0;
  free(block);
}

// Unlinks every cached block (all of them, or only those whose marker has
// completed) into a list the caller releases outside the lock.
static tsr_ocl_buffer *cache_take(tsr_ocl_allocator *a, int only_ready) {
  tsr_ocl_buffer *taken = NULL;
  for (uint32_t c = 0; c < TSR_OCL_CLASS_COUNT; ++c) {
    tsr_ocl_buffer **link = &a->free_lists[c];
    while (*link != NULL) {
      tsr_ocl_buffer *block = *link;
      cl_int state = CL_COMPLETE;
      if (only_ready && block->ready != NULL) {
        clGetEventInfo(block->ready, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state,
                       NULL);
      }
      if (state > CL_COMPLETE) {  // queued, submitted or running
        link = &block->next_free;
        continue;
      }
      *link = block->next_free;
      block->next_free = taken;
      taken = block;
      a->bytes_reserved -= block->capacity;
      --a->cached_blocks;
    }
  }
  return taken;
}

static void release_list(tsr_ocl_buffer *list, int wait) {
  while (list != NULL) {
    tsr_ocl_buffer *next = list->next_free;
    if (wait && list->ready != NULL) clWaitForEvents(1, &list->ready);
    block_release(list);
    list = next;
  }
}

void tsr_ocl_allocator_destroy(tsr_ocl_allocator *a) {
  if (a == NULL) return;
  pthread_mutex_lock(&a->lock);
  tsr_ocl_buffer *list = cache_take(a, 0);
  pthread_mutex_unlock(&a->lock);
  release_list(list, 1);
  for (int i = 0; i < TSR_OCL_MAX_PINNED; ++i) {
    if (a->pinned[i].mem != NULL) {
      clEnqueueUnmapMemObject(a->device->queue, a->pinned[i].mem, a->pinned[i].host, 0, NULL,
                              NULL);
      clFinish(a->device->queue);
      clReleaseMemObject(a->pinned[i].mem);
    }
  }
  pthread_mutex_destroy(&a->lock);
  free(a);
}

static tsr_ocl_allocator *allocator_of(int32_t device, const char *what) {
  tsr_ocl_device *d = tsr_ocl_device_get(device);
  if (d == NULL) {
    tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: device %d does not exist", what, (int)device);
    return NULL;
  }
  return d->allocator;
}

// A cached block of |size_class| usable by work on |queue|, or NULL.
static tsr_ocl_buffer *cache_pop(tsr_ocl_allocator *a, uint32_t size_class, cl_command_queue queue) {
  for (tsr_ocl_buffer **link = &a->free_lists[size_class]; *link != NULL;
       link = &(*link)->next_free) {
    tsr_ocl_buffer *block = *link;
    int usable = block->ready == NULL || (queue != NULL && block->free_queue == (void *)queue);
    if (!usable) {
      cl_int state = CL_QUEUED;
      clGetEventInfo(block->ready, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, NULL);
      usable = state <= CL_COMPLETE;
    }
    if (!usable) continue;
    *link = block->next_free;
    --a->cached_blocks;
    return block;
  }
  return NULL;
}

// Frees the host memory behind a CL_MEM_USE_HOST_PTR buffer once the
// OpenCL runtime has destroyed the buffer (after the work using it).
static void CL_CALLBACK host_memory_free(cl_mem mem, void *host) {
  (void)mem;
  free(host);
}

static tsr_status system_alloc(tsr_ocl_allocator *a, uint64_t capacity, cl_mem *out_mem) {
  cl_int err = CL_SUCCESS;
  if (a->device->host_memory) {
    // Host memory the plugin owns: a failed allocation is a status here,
    // not an assertion inside the runtime when the buffer is first used.
    const size_t align = 4096;
    if (capacity > SIZE_MAX - align) return TSR_OUT_OF_MEMORY;
    void *host = aligned_alloc(align, (size_t)((capacity + align - 1) / align * align));
    if (host == NULL) {
      *out_mem = NULL;
      return TSR_OUT_OF_MEMORY;
    }
    *out_mem = clCreateBuffer(a->device->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                              capacity, host, &err);
    if (err == CL_SUCCESS) err = clSetMemObjectDestructorCallback(*out_mem, host_memory_free, host);
    if (err == CL_SUCCESS) return TSR_OK;
    if (*out_mem != NULL) {
      clReleaseMemObject(*out_mem);
    }
    free(host);
  } else {
    *out_mem = clCreateBuffer(a->device->context, CL_MEM_READ_WRITE, capacity, NULL, &err);
    if (err == CL_SUCCESS) return TSR_OK;
  }
  *out_mem = NULL;
  return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                 err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE
             ? TSR_OUT_OF_MEMORY
             : tsr_ocl_cl_error(err, "buffer_alloc: clCreateBuffer");
}

tsr_status tsr_ocl_buffer_alloc(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                                tsr_plugin_buffer **out_buffer) {
  if (out_buffer == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "buffer_alloc: out_buffer is NULL");
  }
  *out_buffer = NULL;
  tsr_ocl_allocator *a = allocator_of(device, "buffer_alloc");
  if (a == NULL) return TSR_INVALID_ARGUMENT;
  tsr_ocl_stream *s = (tsr_ocl_stream *)stream;
  if (s != NULL && (s->magic != TSR_OCL_STREAM_MAGIC || s->device != device)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "buffer_alloc: stream is not a live stream of device %d", (int)device);
  }
  if (bytes > a->device->max_alloc_bytes && bytes > 0) {
    return tsr_ocl_error(TSR_OUT_OF_MEMORY,
                         "buffer_alloc: %llu bytes exceed the device's largest allocation "
                         "(CL_DEVICE_MAX_MEM_ALLOC_SIZE %llu) on %s",
                         (unsigned long long)bytes, (unsigned long long)a->device->max_alloc_bytes,
                         a->device->name);
  }
  uint64_t capacity = 0;
  uint32_t size_class = bytes == 0 ? 0 : size_class_of(bytes, &capacity);
  if (bytes == 0) capacity = 0;
  if (capacity > a->device->max_alloc_bytes) capacity = bytes;  // the last class may overshoot

  tsr_ocl_buffer *block = NULL;
  if (bytes > 0) {
    pthread_mutex_lock(&a->lock);
    block = cache_pop(a, size_class, s != NULL ? s->queue : NULL);
    if (block != NULL) {
      // Counted here, in the one lock round a warm allocation takes.
      a->bytes_in_use += block->capacity;
      if (a->bytes_in_use > a->peak_bytes_in_use) a->peak_bytes_in_use = a->bytes_in_use;
      ++a->alloc_count;
    }
    pthread_mutex_unlock(&a->lock);
  }
  int counted = block != NULL;
  if (block != NULL) {
    if (block->ready != NULL) {
      clReleaseEvent(block->ready);
      block->ready = NULL;
    }
    block->free_queue = NULL;
  } else {
    block = calloc(1, sizeof(*block));
    if (block == NULL) return tsr_ocl_error(TSR_OUT_OF_MEMORY, "buffer_alloc: out of host memory");
    if (capacity > 0) {
      tsr_status status = system_alloc(a, capacity, &block->mem);
      if (status == TSR_OUT_OF_MEMORY) {
        // Free the caches (after their pending work) and try once more.
        pthread_mutex_lock(&a->lock);
        tsr_ocl_buffer *cached = cache_take(a, 0);
        pthread_mutex_unlock(&a->lock);
        release_list(cached, 1);
        status = system_alloc(a, capacity, &block->mem);
      }
      if (status != TSR_OK) {
        free(block);
        if (status != TSR_OUT_OF_MEMORY) return status;
        pthread_mutex_lock(&a->lock);
        uint64_t in_use = a->bytes_in_use, reserved = a->bytes_reserved;
        pthread_mutex_unlock(&a->lock);
        return tsr_ocl_error(TSR_OUT_OF_MEMORY,
                             "buffer_alloc: %llu bytes (class of %llu) on %s: out of device "
                             "memory after freeing the cache; in use %llu bytes, reserved %llu, "
                             "device memory %llu",
                             (unsigned long long)bytes, (unsigned long long)capacity,
                             a->device->name, (unsigned long long)in_use,
                             (unsigned long long)reserved,
                             (unsigned long long)a->device->global_mem_bytes);
      }
    }
    block->capacity = capacity;
    block->size_class = size_class;
  }
  block->magic = TSR_OCL_BUFFER_MAGIC;
  block->device = device;
  block->bytes = bytes;
  block->next_free = NULL;
  if (!counted) {
    pthread_mutex_lock(&a->lock);
    a->bytes_reserved += block->capacity;
    if (block->capacity > 0) ++a->system_alloc_count;
    a->bytes_in_use += block->capacity;
    if (a->bytes_in_use > a->peak_bytes_in_use) a->peak_bytes_in_use = a->bytes_in_use;
    ++a->alloc_count;
    pthread_mutex_unlock(&a->lock);
  }
  *out_buffer = (tsr_plugin_buffer *)block;
  return TSR_OK;
}

// Waits for every queue of the device: the device's own and each live stream's.
static void device_drain(tsr_ocl_device *d) {
  clFinish(d->queue);
  tsr_ocl_streams_finish(d->index);
}

tsr_status tsr_ocl_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream) {
  tsr_ocl_buffer *block = (tsr_ocl_buffer *)buffer;
  if (block == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "buffer_free: buffer is NULL");
  if (block->magic != TSR_OCL_BUFFER_MAGIC) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "buffer_free: buffer is not a live OpenCL buffer (freed twice?)");
  }
  tsr_ocl_stream *s = (tsr_ocl_stream *)stream;
  if (s != NULL && (s->magic != TSR_OCL_STREAM_MAGIC || s->device != block->device)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "buffer_free: stream is not a live stream of the buffer's device %d",
                         (int)block->device);
  }
  tsr_ocl_device *d = tsr_ocl_device_get(block->device);
  tsr_ocl_allocator *a = d->allocator;
  block->magic = 0;
  if (block->capacity == 0) {
    pthread_mutex_lock(&a->lock);
    ++a->free_count;
    pthread_mutex_unlock(&a->lock);
    free(block);
    return TSR_OK;
  }
  // Stream-ordered: the block is free once the work queued so far is done.
  block->ready = NULL;
  block->free_queue = NULL;
  if (s != NULL) {
    cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &block->ready);
    if (err != CL_SUCCESS) {
      block->ready = NULL;
      clFinish(s->queue);
    }
    block->free_queue = (void *)s->queue;
  } else {
    device_drain(d);
  }
  pthread_mutex_lock(&a->lock);
  a->bytes_in_use -= block->capacity;
  ++a->free_count;
  block->next_free = a->free_lists[block->size_class];
  a->free_lists[block->size_class] = block;
  ++a->cached_blocks;
  pthread_mutex_unlock(&a->lock);
  return TSR_OK;
}

tsr_status tsr_ocl_allocator_stats_get(int32_t device, tsr_allocator_stats *out_stats) {
  tsr_ocl_allocator *a = allocator_of(device, "allocator_stats_get");
  if (a == NULL) return TSR_INVALID_ARGUMENT;
  if (out_stats == NULL || out_stats->struct_size < sizeof(size_t)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "allocator_stats_get: out_stats is NULL or its struct_size is too small");
  }
  pthread_mutex_lock(&a->lock);
  tsr_allocator_stats stats = {
      .struct_size = out_stats->struct_size,
      .bytes_in_use = a->bytes_in_use,
      .bytes_reserved = a->bytes_reserved,
      .peak_bytes_in_use = a->peak_bytes_in_use,
      .alloc_count = a->alloc_count,
      .free_count = a->free_count,
      .system_alloc_count = a->system_alloc_count,
  };
  pthread_mutex_unlock(&a->lock);
  TSR_KIT_OUT_COPY(out_stats, stats);
  return TSR_OK;
}

tsr_status tsr_ocl_allocator_trim(int32_t device) {
  tsr_ocl_allocator *a = allocator_of(device, "allocator_trim");
  if (a == NULL) return TSR_INVALID_ARGUMENT;
  pthread_mutex_lock(&a->lock);
  tsr_ocl_buffer *list = cache_take(a, 0);
  pthread_mutex_unlock(&a->lock);
  release_list(list, 1);
  return TSR_OK;
}

// --- pinned host memory --------------------------------------------------------

tsr_status tsr_ocl_host_pinned_alloc(int32_t device, uint64_t bytes, void **out_ptr) {
  if (out_ptr == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "host_pinned_alloc: out_ptr is NULL");
  }
  *out_ptr = NULL;
  tsr_ocl_allocator *a = allocator_of(device, "host_pinned_alloc");
  if (a == NULL) return TSR_INVALID_ARGUMENT;
  if (bytes == 0) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "host_pinned_alloc: bytes is 0");
  }
  if (bytes > a->device->max_alloc_bytes) {
    return tsr_ocl_error(TSR_OUT_OF_MEMORY,
                         "host_pinned_alloc: %llu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE %llu",
                         (unsigned long long)bytes, (unsigned long long)a->device->max_alloc_bytes);
  }
  pthread_mutex_lock(&a->lock);
  int slot = -1;
  for (int i = 0; i < TSR_OCL_MAX_PINNED && slot < 0; ++i) {
    if (a->pinned[i].mem == NULL && a->pinned[i].host == NULL) slot = i;
  }
  if (slot >= 0) a->pinned[slot].host = (void *)1;  // reserved while mapping
  pthread_mutex_unlock(&a->lock);
  if (slot < 0) {
    return tsr_ocl_error(TSR_OUT_OF_MEMORY,
                         "host_pinned_alloc: %d pinned allocations are live (the plugin's limit)",
                         TSR_OCL_MAX_PINNED);
  }
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(a->device->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                              bytes, NULL, &err);
  void *host = NULL;
  if (err == CL_SUCCESS) {
    host = clEnqueueMapBuffer(a->device->queue, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes,
                              0, NULL, NULL, &err);
    if (err != CL_SUCCESS) clReleaseMemObject(mem);
  }
  pthread_mutex_lock(&a->lock);
  if (err == CL_SUCCESS) {
    a->pinned[slot].host = host;
    a->pinned[slot].bytes = bytes;
    a->pinned[slot].mem = mem;
  } else {
    a->pinned[slot].host = NULL;
  }
  pthread_mutex_unlock(&a->lock);
  if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "host_pinned_alloc");
  *out_ptr = host;
  return TSR_OK;
}

tsr_status tsr_ocl_host_pinned_free(int32_t device, void *ptr) {
  tsr_ocl_allocator *a = allocator_of(device, "host_pinned_free");
  if (a == NULL) return TSR_INVALID_ARGUMENT;
  if (ptr == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "host_pinned_free: ptr is NULL");
  cl_mem mem = NULL;
  pthread_mutex_lock(&a->lock);
  for (int i = 0; i < TSR_OCL_MAX_PINNED; ++i) {
    if (a->pinned[i].mem != NULL && a->pinned[i].host == ptr) {
      mem = a->pinned[i].mem;
      a->pinned[i].mem = NULL;
      a->pinned[i].host = NULL;
      a->pinned[i].bytes = 0;
      break;
    }
  }
  pthread_mutex_unlock(&a->lock);
  if (mem == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "host_pinned_free: %p is not pinned memory of device %d", ptr,
                         (int)device);
  }
  // Copies from or to it may still be queued on any stream.
  device_drain(a->device);
  clEnqueueUnmapMemObject(a->device->queue, mem, ptr, 0, NULL, NULL);
  clFinish(a->device->queue);
  clReleaseMemObject(mem);
  return TSR_OK;
}

// True when [ptr, ptr + bytes) lies in one pinned allocation of |a|.
static int is_pinned(tsr_ocl_allocator *a, const void *ptr, uint64_t bytes) {
  int found = 0;
  const char *p = ptr;
  pthread_mutex_lock(&a->lock);
  for (int i = 0; i < TSR_OCL_MAX_PINNED && !found; ++i) {
    const char *base = a->pinned[i].host;
    if (a->pinned[i].mem == NULL || p < base) continue;
    found = (uint64_t)(p - base) <= a->pinned[i].bytes &&
            bytes <= a->pinned[i].bytes - (uint64_t)(p - base);
  }
  pthread_mutex_unlock(&a->lock);
  return found;
}

// --- copies --------------------------------------------------------------------

tsr_status tsr_ocl_buffer_range_check(const char *what, const char *name,
                                      const tsr_ocl_buffer *buffer, uint64_t offset,
                                      uint64_t bytes) {
  if (buffer == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, name);
  if (buffer->magic != TSR_OCL_BUFFER_MAGIC) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: %s is not a live OpenCL buffer", what, name);
  }
  if (offset > buffer->bytes || bytes > buffer->bytes - offset) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "%s: %s range [%llu, +%llu) is outside its %llu bytes", what, name,
                         (unsigned long long)offset, (unsigned long long)bytes,
                         (unsigned long long)buffer->bytes);
  }
  return TSR_OK;
}

static tsr_status stream_check(const char *what, tsr_ocl_stream *s, int32_t device) {
  if (s != NULL && (s->magic != TSR_OCL_STREAM_MAGIC || s->device != device)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: stream is not a live stream of device %d", what,
                         (int)device);
  }
  return TSR_OK;
}

tsr_status tsr_ocl_copy_host_to_device(tsr_plugin_stream *stream, const void *src,
                                       tsr_plugin_buffer *dst, uint64_t dst_offset,
                                       uint64_t bytes) {
  const char *what = "copy_host_to_device";
  tsr_ocl_buffer *b = (tsr_ocl_buffer *)dst;
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_buffer_range_check(what, "dst", b, dst_offset, bytes));
  if (src == NULL && bytes > 0) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: src is NULL", what);
  tsr_ocl_stream *s = (tsr_ocl_stream *)stream;
  TSR_OCL_RETURN_IF_ERROR(stream_check(what, s, b->device));
  if (bytes == 0) return TSR_OK;
  tsr_ocl_device *d = tsr_ocl_device_get(b->device);
  cl_bool blocking = is_pinned(d->allocator, src, bytes) ? CL_FALSE : CL_TRUE;
  cl_int err = clEnqueueWriteBuffer(tsr_ocl_queue_of(s, d), b->mem, blocking, dst_offset, bytes,
                                    src, 0, NULL, NULL);
  tsr_ocl_stream_note_work(s);
  return err == CL_SUCCESS ? TSR_OK : tsr_ocl_cl_error(err, "copy_host_to_device");
}

tsr_status tsr_ocl_copy_device_to_host(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                       uint64_t src_offset, void *dst, uint64_t bytes) {
  const char *what = "copy_device_to_host";
  tsr_ocl_buffer *b = (tsr_ocl_buffer *)src;
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_buffer_range_check(what, "src", b, src_offset, bytes));
  if (dst == NULL && bytes > 0) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: dst is NULL", what);
  tsr_ocl_stream *s = (tsr_ocl_stream *)stream;
  TSR_OCL_RETURN_IF_ERROR(stream_check(what, s, b->device));
  if (bytes == 0) return TSR_OK;
  tsr_ocl_device *d = tsr_ocl_device_get(b->device);
  cl_bool blocking = is_pinned(d->allocator, dst, bytes) ? CL_FALSE : CL_TRUE;
  cl_int err = clEnqueueReadBuffer(tsr_ocl_queue_of(s, d), b->mem, blocking, src_offset, bytes,
                                   dst, 0, NULL, NULL);
  tsr_ocl_stream_note_work(s);
  if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "copy_device_to_host");
  // A blocking read returns after the queue ran everything before it; an
  // error raised by that work surfaces here as the ABI asks.
  return blocking && s != NULL ? tsr_ocl_stream_error_take(s) : TSR_OK;
}

tsr_status tsr_ocl_copy_device_to_device(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                         uint64_t src_offset, tsr_plugin_buffer *dst,
                                         uint64_t dst_offset, uint64_t bytes) {
  const char *what = "copy_device_to_device";
  tsr_ocl_buffer *a = (tsr_ocl_buffer *)src;
  tsr_ocl_buffer *b = (tsr_ocl_buffer *)dst;
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_buffer_range_check(what, "src", a, src_offset, bytes));
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_buffer_range_check(what, "dst", b, dst_offset, bytes));
  if (a->device != b->device) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: src is on device %d and dst on device %d", what,
                         (int)a->device, (int)b->device);
  }
  if (a == b && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes && bytes > 0) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "%s: source [%llu, +%llu) and destination [%llu, +%llu) overlap", what,
                         (unsigned long long)src_offset, (unsigned long long)bytes,
                         (unsigned long long)dst_offset, (unsigned long long)bytes);
  }
  tsr_ocl_stream *s = (tsr_ocl_stream *)stream;
  TSR_OCL_RETURN_IF_ERROR(stream_check(what, s, a->device));
  if (bytes == 0) return TSR_OK;
  tsr_ocl_device *d = tsr_ocl_device_get(a->device);
  cl_int err = clEnqueueCopyBuffer(tsr_ocl_queue_of(s, d), a->mem, b->mem, src_offset, dst_offset,
                                   bytes, 0, NULL, NULL);
  tsr_ocl_stream_note_work(s);
  return err == CL_SUCCESS ? TSR_OK : tsr_ocl_cl_error(err, "copy_device_to_device");
}

// --- scratch and constants (tune.c and the op families) -------------------------

tsr_status tsr_ocl_scratch_alloc(tsr_ocl_device *device, uint64_t bytes, cl_mem *out_mem,
                                 tsr_ocl_buffer **out_buffer) {
  tsr_plugin_buffer *buffer = NULL;
  tsr_status status = tsr_ocl_buffer_alloc(device->index, bytes, NULL, &buffer);
  if (status != TSR_OK) return status;
  *out_buffer = (tsr_ocl_buffer *)buffer;
  *out_mem = ((tsr_ocl_buffer *)buffer)->mem;
  return TSR_OK;
}

void tsr_ocl_scratch_free(tsr_ocl_buffer *buffer) {
  if (buffer != NULL) tsr_ocl_buffer_free((tsr_plugin_buffer *)buffer, NULL);
}

tsr_status tsr_ocl_const_buffer_create(tsr_ocl_device *device, const void *data, size_t bytes,
                                       cl_mem *out_mem) {
  *out_mem = NULL;
  if (bytes == 0) return TSR_OK;
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(device->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                              (void *)data, &err);
  if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "opencl: constant buffer");
  *out_mem = mem;
  return TSR_OK;
}
