// Streams, events and copies of a synchronous device.
#include "stream.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "buffer.h"
#include "host.h"
#include "tsr_cpu/cpu_kernels.h"

enum {
  TSR_CPU_STREAM_MAGIC = 0x5354524du,
  TSR_CPU_EVENT_MAGIC = 0x4556454eu,
  TSR_CPU_DEAD_MAGIC = 0xdeadu,
};

struct tsr_plugin_stream {
  uint32_t magic;
  int32_t device;
};

struct tsr_plugin_event {
  uint32_t magic;
  uint32_t flags;
  // -1 until recorded. Atomic: one thread may record while another queries.
  _Atomic int64_t recorded_ns;
};

static int64_t tsr_cpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

tsr_status tsr_cpu_stream_check(const char *what, const tsr_plugin_stream *stream) {
  if (stream != NULL && stream->magic != TSR_CPU_STREAM_MAGIC) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: stream %p is not a live ref stream", what,
                             (const void *)stream);
  }
  return TSR_OK;
}

static tsr_status tsr_cpu_event_check(const char *what, const char *name,
                                      const tsr_plugin_event *event) {
  if (event == NULL || event->magic != TSR_CPU_EVENT_MAGIC) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s %p is not a live ref event", what, name,
                             (const void *)event);
  }
  return TSR_OK;
}

tsr_status tsr_cpu_stream_create(int32_t device, uint32_t flags, tsr_plugin_stream **out_stream) {
  if (out_stream == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "stream_create: out_stream is NULL");
  }
  *out_stream = NULL;
  if (device != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "stream_create: device %d does not exist",
                             (int)device);
  }
  if (flags != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "stream_create: unknown flags 0x%x",
                             (unsigned)flags);
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  tsr_plugin_stream *stream = host->mem_alloc(host->ctx, sizeof(*stream), 16);
  if (stream == NULL) {
    return tsr_cpu_error_set(TSR_OUT_OF_MEMORY, "stream_create: no memory for a %zu-byte stream",
                             sizeof(*stream));
  }
  stream->magic = TSR_CPU_STREAM_MAGIC;
  stream->device = device;
  *out_stream = stream;
  return TSR_OK;
}

tsr_status tsr_cpu_stream_destroy(tsr_plugin_stream *stream) {
  if (stream == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "stream_destroy: stream is NULL");
  tsr_status status = tsr_cpu_stream_check("stream_destroy", stream);
  if (status != TSR_OK) return status;
  stream->magic = TSR_CPU_DEAD_MAGIC;
  const tsr_host_api *host = tsr_cpu_host_get();
  host->mem_free(host->ctx, stream);
  return TSR_OK;
}

tsr_status tsr_cpu_stream_synchronize(tsr_plugin_stream *stream) {
  return tsr_cpu_stream_check("stream_synchronize", stream);
}

tsr_status tsr_cpu_stream_query(tsr_plugin_stream *stream) {
  return tsr_cpu_stream_check("stream_query", stream);
}

tsr_status tsr_cpu_stream_wait_event(tsr_plugin_stream *stream, tsr_plugin_event *event) {
  tsr_status status = tsr_cpu_stream_check("stream_wait_event", stream);
  if (status != TSR_OK) return status;
  return tsr_cpu_event_check("stream_wait_event", "event", event);
}

tsr_status tsr_cpu_event_create(int32_t device, uint32_t flags, tsr_plugin_event **out_event) {
  if (out_event == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "event_create: out_event is NULL");
  }
  *out_event = NULL;
  if (device != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "event_create: device %d does not exist",
                             (int)device);
  }
  if ((flags & ~(uint32_t)TSR_EVENT_TIMING) != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "event_create: unknown flags 0x%x",
                             (unsigned)flags);
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  tsr_plugin_event *event = host->mem_alloc(host->ctx, sizeof(*event), 16);
  if (event == NULL) {
    return tsr_cpu_error_set(TSR_OUT_OF_MEMORY, "event_create: no memory for a %zu-byte event",
                             sizeof(*event));
  }
  event->magic = TSR_CPU_EVENT_MAGIC;
  event->flags = flags;
  atomic_init(&event->recorded_ns, -1);
  *out_event = event;
  return TSR_OK;
}

tsr_status tsr_cpu_event_destroy(tsr_plugin_event *event) {
  tsr_status status = tsr_cpu_event_check("event_destroy", "event", event);
  if (status != TSR_OK) return status;
  event->magic = TSR_CPU_DEAD_MAGIC;
  const tsr_host_api *host = tsr_cpu_host_get();
  host->mem_free(host->ctx, event);
  return TSR_OK;
}

tsr_status tsr_cpu_event_record(tsr_plugin_event *event, tsr_plugin_stream *stream) {
  tsr_status status = tsr_cpu_event_check("event_record", "event", event);
  if (status != TSR_OK) return status;
  status = tsr_cpu_stream_check("event_record", stream);
  if (status != TSR_OK) return status;
  atomic_store_explicit(&event->recorded_ns, tsr_cpu_now_ns(), memory_order_release);
  return TSR_OK;
}

tsr_status tsr_cpu_event_query(tsr_plugin_event *event) {
  return tsr_cpu_event_check("event_query", "event", event);
}

tsr_status tsr_cpu_event_synchronize(tsr_plugin_event *event) {
  return tsr_cpu_event_check("event_synchronize", "event", event);
}

tsr_status tsr_cpu_event_elapsed_get(tsr_plugin_event *start, tsr_plugin_event *end,
                                     float *out_milliseconds) {
  static const char what[] = "event_elapsed_get";
  if (out_milliseconds == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: out_milliseconds is NULL", what);
  }
  tsr_status status = tsr_cpu_event_check(what, "start", start);
  if (status != TSR_OK) return status;
  status = tsr_cpu_event_check(what, "end", end);
  if (status != TSR_OK) return status;
  if (!(start->flags & TSR_EVENT_TIMING) || !(end->flags & TSR_EVENT_TIMING)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s was created without TSR_EVENT_TIMING",
                             what, (start->flags & TSR_EVENT_TIMING) ? "end" : "start");
  }
  int64_t t0 = atomic_load_explicit(&start->recorded_ns, memory_order_acquire);
  int64_t t1 = atomic_load_explicit(&end->recorded_ns, memory_order_acquire);
  if (t0 < 0 || t1 < 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s has not been recorded", what,
                             t0 < 0 ? "start" : "end");
  }
  *out_milliseconds = (float)((double)(t1 - t0) * 1e-6);
  return TSR_OK;
}

// Checks that [offset, offset + bytes) lies inside |buffer|, without letting
// offset + bytes overflow.
static tsr_status tsr_cpu_range_check(const char *what, const char *name,
                                      const tsr_plugin_buffer *buffer, uint64_t offset,
                                      uint64_t bytes) {
  if (buffer == NULL || buffer->state != TSR_CPU_BUFFER_LIVE) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s %p is not a live ref buffer", what, name,
                             (const void *)buffer);
  }
  if (offset > buffer->bytes || bytes > buffer->bytes - offset) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: %s offset %llu + %llu bytes is past its end (%llu bytes)", what,
                             name, (unsigned long long)offset, (unsigned long long)bytes,
                             (unsigned long long)buffer->bytes);
  }
  return TSR_OK;
}

// Both ranges of a device-to-device copy, then that they do not overlap.
static inline tsr_status tsr_cpu_d2d_check(const tsr_plugin_buffer *src, uint64_t src_offset,
                                           const tsr_plugin_buffer *dst, uint64_t dst_offset,
                                           uint64_t bytes) {
  static const char what[] = "copy_device_to_device";
  tsr_status status = tsr_cpu_range_check(what, "src", src, src_offset, bytes);
  if (status != TSR_OK) return status;
  status = tsr_cpu_range_check(what, "dst", dst, dst_offset, bytes);
  if (status != TSR_OK) return status;
  // Overlapping ranges of one buffer are refused (docs/abi.md 7.4): an
  // asynchronous plugin could not give them a defined result either.
  if (bytes != 0 && src == dst && src_offset < dst_offset + bytes &&
      dst_offset < src_offset + bytes) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                         "%s: src [%llu, +%llu) and dst [%llu, +%llu) overlap in one buffer", what,
                         (unsigned long long)src_offset, (unsigned long long)bytes,
                         (unsigned long long)dst_offset, (unsigned long long)bytes);
  }
  return TSR_OK;
}

// The checks above, out of line for a fixture that queues ref's copies
// (tsr_cpu/cpu_kernels.h); ref's own copies keep them inline.
tsr_status tsr_cpu_buffer_range_check(const char *what, const char *name,
                                      tsr_plugin_buffer *buffer, uint64_t offset,
                                      uint64_t bytes) {
  return tsr_cpu_range_check(what, name, buffer, offset, bytes);
}

tsr_status tsr_cpu_copy_device_to_device_check(tsr_plugin_buffer *src, uint64_t src_offset,
                                               tsr_plugin_buffer *dst, uint64_t dst_offset,
                                               uint64_t bytes) {
  return tsr_cpu_d2d_check(src, src_offset, dst, dst_offset, bytes);
}

tsr_status tsr_cpu_copy_host_to_device(tsr_plugin_stream *stream, const void *src,
                                       tsr_plugin_buffer *dst, uint64_t dst_offset,
                                       uint64_t bytes) {
  static const char what[] = "copy_host_to_device";
  tsr_status status = tsr_cpu_stream_check(what, stream);
  if (status != TSR_OK) return status;
  status = tsr_cpu_range_check(what, "dst", dst, dst_offset, bytes);
  if (status != TSR_OK) return status;
  if (bytes == 0) return TSR_OK;
  if (src == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: src is NULL", what);
  memmove((char *)dst->data + dst_offset, src, (size_t)bytes);
  return TSR_OK;
}

tsr_status tsr_cpu_copy_device_to_host(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                       uint64_t src_offset, void *dst, uint64_t bytes) {
  static const char what[] = "copy_device_to_host";
  tsr_status status = tsr_cpu_stream_check(what, stream);
  if (status != TSR_OK) return status;
  status = tsr_cpu_range_check(what, "src", src, src_offset, bytes);
  if (status != TSR_OK) return status;
  if (bytes == 0) return TSR_OK;
  if (dst == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: dst is NULL", what);
  memmove(dst, (const char *)src->data + src_offset, (size_t)bytes);
  return TSR_OK;
}

tsr_status tsr_cpu_copy_device_to_device(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                         uint64_t src_offset, tsr_plugin_buffer *dst,
                                         uint64_t dst_offset, uint64_t bytes) {
  tsr_status status = tsr_cpu_stream_check("copy_device_to_device", stream);
  if (status != TSR_OK) return status;
  status = tsr_cpu_d2d_check(src, src_offset, dst, dst_offset, bytes);
  if (status != TSR_OK) return status;
  if (bytes != 0) {
    memcpy((char *)dst->data + dst_offset, (const char *)src->data + src_offset, (size_t)bytes);
  }
  return TSR_OK;
}
