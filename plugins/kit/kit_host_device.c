// The kit's host-memory device: one device whose buffers are host memory,
// a caching allocator, and synchronous streams and events.
//
// The allocator keeps freed blocks in power-of-two size classes, one lock per
// class, so that a training loop's steady state makes no system allocation
// and threads allocating different sizes never wait on each other. Work runs
// when it is issued, so a freed block is reusable at once (docs/abi.md 7.3).
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kit_internal.h"

#define KIT_MIN_CLASS 6    // 64 bytes
#define KIT_CLASSES 48     // up to 2^53 bytes
#define KIT_ALIGNMENT 64

struct tsr_plugin_buffer {
  void *data;
  int32_t size_class;
  uint64_t bytes;  // as asked for
  struct tsr_plugin_buffer *next_free;
};

struct tsr_plugin_stream {
  int32_t device;
};

struct tsr_plugin_event {
  uint32_t flags;
  int recorded;
  double milliseconds;  // CLOCK_MONOTONIC when recorded
};

typedef struct size_class {
  pthread_mutex_t lock;
  tsr_plugin_buffer *free;
} size_class;

static tsr_kit_device_desc g_desc;
static size_class g_classes[KIT_CLASSES];
static atomic_uint_fast64_t g_in_use, g_reserved, g_peak, g_allocs, g_frees, g_system_allocs;

void *tsr_kit_buffer_data(tsr_plugin_buffer *buffer) { return buffer != NULL ? buffer->data : NULL; }

uint64_t tsr_kit_buffer_bytes(const tsr_plugin_buffer *buffer) {
  return buffer != NULL ? buffer->bytes : 0;
}

static tsr_status device_check(const char *what, int32_t device) {
  if (device != 0)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: device %d does not exist", what, device);
  return TSR_OK;
}

static tsr_status kit_probe(void) { return TSR_OK; }

static tsr_status kit_device_count_get(int32_t *out_count) {
  if (out_count == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "device_count_get: out_count is NULL");
  *out_count = 1;
  return TSR_OK;
}

static tsr_status kit_device_props_get(int32_t device, tsr_device_props *out_props) {
  tsr_status status = device_check("device_props_get", device);
  if (status != TSR_OK)
    return status;
  if (out_props == NULL || out_props->struct_size < sizeof(size_t))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "device_props_get: out_props is NULL or too small");
  const tsr_host_api *host = tsr_kit_host();
  long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
  uint32_t units = g_desc.compute_units;
  if (units == 0 && TSR_ABI_HAS(host, tsr_host_api, thread_count))
    units = (uint32_t)host->thread_count(host->ctx);
  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  props.name = g_desc.name != NULL ? g_desc.name : tsr_kit_name();
  props.memory_bytes = pages > 0 && page_bytes > 0 ? (uint64_t)pages * (uint64_t)page_bytes : 0;
  props.compute_units = units > 0 ? units : 1;
  props.flags = TSR_DEVICE_HOST_ACCESSIBLE | TSR_DEVICE_EVENTS | TSR_DEVICE_TIMING_EVENTS;
  props.dtype_mask = g_desc.dtype_mask != 0 ? g_desc.dtype_mask : (1u << TSR_DTYPE_COUNT) - 1u;
  props.base_alignment = KIT_ALIGNMENT;
  props.priority = g_desc.priority;
  TSR_KIT_OUT_COPY(out_props, props);
  return TSR_OK;
}

// --- memory --------------------------------------------------------------------------

static int32_t class_of(uint64_t bytes) {
  int32_t c = KIT_MIN_CLASS;
  while (c < KIT_CLASSES && (1ull << c) < bytes) ++c;
  return c;
}

static void peak_raise(uint64_t in_use) {
  uint_fast64_t peak = atomic_load(&g_peak);
  while (in_use > peak && !atomic_compare_exchange_weak(&g_peak, &peak, in_use)) {
  }
}

static tsr_status kit_buffer_alloc(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                                   tsr_plugin_buffer **out_buffer) {
  (void)stream;  // synchronous: any stream may reuse any block
  tsr_status status = device_check("buffer_alloc", device);
  if (status != TSR_OK)
    return status;
  if (out_buffer == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "buffer_alloc: out_buffer is NULL");
  *out_buffer = NULL;
  int32_t c = class_of(bytes);
  if (c >= KIT_CLASSES)
    return tsr_kit_error(TSR_OUT_OF_MEMORY, "buffer_alloc: %llu bytes is more than any host holds",
                         (unsigned long long)bytes);
  size_class *sc = &g_classes[c];
  pthread_mutex_lock(&sc->lock);
  tsr_plugin_buffer *b = sc->free;
  if (b != NULL)
    sc->free = b->next_free;
  pthread_mutex_unlock(&sc->lock);
  if (b == NULL) {
    const tsr_host_api *host = tsr_kit_host();
    b = host->mem_alloc(host->ctx, sizeof(*b), 16);
    void *data = b != NULL ? host->mem_alloc(host->ctx, (size_t)1 << c, KIT_ALIGNMENT) : NULL;
    if (data == NULL) {
      if (b != NULL)
        host->mem_free(host->ctx, b);
      return tsr_kit_error(TSR_OUT_OF_MEMORY, "buffer_alloc: the host has no %llu bytes",
                           (unsigned long long)(1ull << c));
    }
    b->data = data;
    b->size_class = c;
    atomic_fetch_add(&g_reserved, 1ull << c);
    atomic_fetch_add(&g_system_allocs, 1);
  }
  b->bytes = bytes;
  b->next_free = NULL;
  peak_raise(atomic_fetch_add(&g_in_use, bytes) + bytes);
  atomic_fetch_add(&g_allocs, 1);
  *out_buffer = b;
  return TSR_OK;
}

static tsr_status kit_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream) {
  (void)stream;
  if (buffer == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "buffer_free: buffer is NULL");
  atomic_fetch_sub(&g_in_use, buffer->bytes);
  atomic_fetch_add(&g_frees, 1);
  size_class *sc = &g_classes[buffer->size_class];
  pthread_mutex_lock(&sc->lock);
  buffer->next_free = sc->free;
  sc->free = buffer;
  pthread_mutex_unlock(&sc->lock);
  return TSR_OK;
}

static tsr_status kit_buffer_host_ptr_get(tsr_plugin_buffer *buffer, void **out_ptr) {
  if (buffer == NULL || out_ptr == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "buffer_host_ptr_get: buffer or out_ptr is NULL");
  *out_ptr = buffer->data;
  return TSR_OK;
}

static tsr_status kit_allocator_stats_get(int32_t device, tsr_allocator_stats *out_stats) {
  tsr_status status = device_check("allocator_stats_get", device);
  if (status != TSR_OK)
    return status;
  if (out_stats == NULL || out_stats->struct_size < sizeof(size_t))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "allocator_stats_get: out_stats is NULL or too small");
  tsr_allocator_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  stats.bytes_in_use = atomic_load(&g_in_use);
  stats.bytes_reserved = atomic_load(&g_reserved);
  stats.peak_bytes_in_use = atomic_load(&g_peak);
  stats.alloc_count = atomic_load(&g_allocs);
  stats.free_count = atomic_load(&g_frees);
  stats.system_alloc_count = atomic_load(&g_system_allocs);
  TSR_KIT_OUT_COPY(out_stats, stats);
  return TSR_OK;
}

static tsr_status kit_allocator_trim(int32_t device) {
  tsr_status status = device_check("allocator_trim", device);
  if (status != TSR_OK)
    return status;
  const tsr_host_api *host = tsr_kit_host();
  for (int32_t c = 0; c < KIT_CLASSES; ++c) {
    pthread_mutex_lock(&g_classes[c].lock);
    tsr_plugin_buffer *b = g_classes[c].free;
    g_classes[c].free = NULL;
    pthread_mutex_unlock(&g_classes[c].lock);
    while (b != NULL) {
      tsr_plugin_buffer *next = b->next_free;
      atomic_fetch_sub(&g_reserved, 1ull << b->size_class);
      host->mem_free(host->ctx, b->data);
      host->mem_free(host->ctx, b);
      b = next;
    }
  }
  return TSR_OK;
}

static tsr_status kit_shutdown(void) { return kit_allocator_trim(0); }

// [offset, offset + bytes) lies inside |buffer|, without overflow.
static tsr_status range_check(const char *what, const tsr_plugin_buffer *buffer, uint64_t offset,
                              uint64_t bytes) {
  if (buffer == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: buffer is NULL", what);
  if (offset > buffer->bytes || bytes > buffer->bytes - offset) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT,
                         "%s: bytes [%llu, +%llu) run past the buffer's %llu", what,
                         (unsigned long long)offset, (unsigned long long)bytes,
                         (unsigned long long)buffer->bytes);
  }
  return TSR_OK;
}

static tsr_status kit_copy_h2d(tsr_plugin_stream *stream, const void *src, tsr_plugin_buffer *dst,
                               uint64_t dst_offset, uint64_t bytes) {
  (void)stream;
  if (src == NULL && bytes > 0)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "copy_host_to_device: src is NULL");
  tsr_status status = range_check("copy_host_to_device", dst, dst_offset, bytes);
  if (status != TSR_OK)
    return status;
  if (bytes > 0)
    memcpy((char *)dst->data + dst_offset, src, bytes);
  return TSR_OK;
}

static tsr_status kit_copy_d2h(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                               uint64_t src_offset, void *dst, uint64_t bytes) {
  (void)stream;
  if (dst == NULL && bytes > 0)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "copy_device_to_host: dst is NULL");
  tsr_status status = range_check("copy_device_to_host", src, src_offset, bytes);
  if (status != TSR_OK)
    return status;
  if (bytes > 0)
    memcpy(dst, (const char *)src->data + src_offset, bytes);
  return TSR_OK;
}

static tsr_status kit_copy_d2d(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                               uint64_t src_offset, tsr_plugin_buffer *dst, uint64_t dst_offset,
                               uint64_t bytes) {
  (void)stream;
  tsr_status status = range_check("copy_device_to_device (source)", src, src_offset, bytes);
  if (status == TSR_OK)
    status = range_check("copy_device_to_device (destination)", dst, dst_offset, bytes);
  if (status != TSR_OK)
    return status;
  if (src == dst && bytes > 0 && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "copy_device_to_device: the ranges overlap");
  if (bytes > 0)
    memcpy((char *)dst->data + dst_offset, (const char *)src->data + src_offset, bytes);
  return TSR_OK;
}

// --- streams and events ----------------------------------------------------------------

static tsr_status kit_stream_create(int32_t device, uint32_t flags, tsr_plugin_stream **out_stream) {
  tsr_status status = device_check("stream_create", device);
  if (status != TSR_OK)
    return status;
  if (out_stream == NULL || flags != 0) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT,
                         "stream_create: out_stream is NULL or flags 0x%x are not 0", flags);
  }
  const tsr_host_api *host = tsr_kit_host();
  tsr_plugin_stream *s = host->mem_alloc(host->ctx, sizeof(*s), 16);
  if (s == NULL)
    return tsr_kit_error(TSR_OUT_OF_MEMORY, "stream_create: no memory for a stream");
  s->device = device;
  *out_stream = s;
  return TSR_OK;
}

static tsr_status kit_stream_destroy(tsr_plugin_stream *stream) {
  if (stream == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "stream_destroy: stream is NULL");
  const tsr_host_api *host = tsr_kit_host();
  host->mem_free(host->ctx, stream);
  return TSR_OK;
}

static tsr_status kit_stream_done(tsr_plugin_stream *stream) {
  if (stream == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "stream is NULL");
  return TSR_OK;  // synchronous: nothing is ever pending
}

static tsr_status kit_stream_wait_event(tsr_plugin_stream *stream, tsr_plugin_event *event) {
  if (stream == NULL || event == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "stream_wait_event: stream or event is NULL");
  return TSR_OK;
}

static tsr_status kit_event_create(int32_t device, uint32_t flags, tsr_plugin_event **out_event) {
  tsr_status status = device_check("event_create", device);
  if (status != TSR_OK)
    return status;
  if (out_event == NULL || (flags & ~(uint32_t)TSR_EVENT_TIMING) != 0) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT,
                         "event_create: out_event is NULL or flags 0x%x have unknown bits", flags);
  }
  const tsr_host_api *host = tsr_kit_host();
  tsr_plugin_event *e = host->mem_alloc(host->ctx, sizeof(*e), 16);
  if (e == NULL)
    return tsr_kit_error(TSR_OUT_OF_MEMORY, "event_create: no memory for an event");
  memset(e, 0, sizeof(*e));
  e->flags = flags;
  *out_event = e;
  return TSR_OK;
}

static tsr_status kit_event_destroy(tsr_plugin_event *event) {
  if (event == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "event_destroy: event is NULL");
  const tsr_host_api *host = tsr_kit_host();
  host->mem_free(host->ctx, event);
  return TSR_OK;
}

static tsr_status kit_event_record(tsr_plugin_event *event, tsr_plugin_stream *stream) {
  if (event == NULL || stream == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "event_record: event or stream is NULL");
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  event->milliseconds = (double)now.tv_sec * 1e3 + (double)now.tv_nsec * 1e-6;
  event->recorded = 1;
  return TSR_OK;
}

static tsr_status kit_event_done(tsr_plugin_event *event) {
  if (event == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "event is NULL");
  return TSR_OK;
}

static tsr_status kit_event_elapsed_get(tsr_plugin_event *start, tsr_plugin_event *end,
                                        float *out_milliseconds) {
  if (start == NULL || end == NULL || out_milliseconds == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "event_elapsed_get: an argument is NULL");
  if (!(start->flags & end->flags & TSR_EVENT_TIMING) || !start->recorded || !end->recorded) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT,
                         "event_elapsed_get: both events must be timing events, recorded");
  }
  *out_milliseconds = (float)(end->milliseconds - start->milliseconds);
  return TSR_OK;
}

void tsr_kit_host_device_set(tsr_plugin_api *api, const tsr_kit_device_desc *desc) {
  if (desc != NULL)
    g_desc = *desc;
  for (int32_t c = 0; c < KIT_CLASSES; ++c) {
    pthread_mutex_init(&g_classes[c].lock, NULL);
    g_classes[c].free = NULL;
  }
  api->shutdown = kit_shutdown;
  api->probe = kit_probe;
  api->device_count_get = kit_device_count_get;
  api->device_props_get = kit_device_props_get;
  api->buffer_alloc = kit_buffer_alloc;
  api->buffer_free = kit_buffer_free;
  api->buffer_host_ptr_get = kit_buffer_host_ptr_get;
  api->allocator_stats_get = kit_allocator_stats_get;
  api->allocator_trim = kit_allocator_trim;
  api->copy_host_to_device = kit_copy_h2d;
  api->copy_device_to_host = kit_copy_d2h;
  api->copy_device_to_device = kit_copy_d2d;
  api->stream_create = kit_stream_create;
  api->stream_destroy = kit_stream_destroy;
  api->stream_synchronize = kit_stream_done;
  api->stream_query = kit_stream_done;
  api->stream_wait_event = kit_stream_wait_event;
  api->event_create = kit_event_create;
  api->event_destroy = kit_event_destroy;
  api->event_record = kit_event_record;
  api->event_query = kit_event_done;
  api->event_synchronize = kit_event_done;
  api->event_elapsed_get = kit_event_elapsed_get;
}
