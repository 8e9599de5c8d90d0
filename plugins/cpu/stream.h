// Streams, events and copies. The library runs all work synchronously in the
// calling thread, so a stream only names an order that is already kept, and
// an event is a timestamp taken when it is recorded.
#ifndef TESSERA_PLUGINS_CPU_STREAM_H_
#define TESSERA_PLUGINS_CPU_STREAM_H_

#include "tessera/abi.h"

// Creates a stream on |device|; owned by the caller until
// tsr_cpu_stream_destroy. Thread-safe.
tsr_status tsr_cpu_stream_create(int32_t device, uint32_t flags, tsr_plugin_stream **out_stream);
// Destroys an idle |stream|. Not thread-safe with other uses of it.
tsr_status tsr_cpu_stream_destroy(tsr_plugin_stream *stream);
// Work on a library stream has finished when its call returned: always TSR_OK
// for a valid stream. Thread-safe.
tsr_status tsr_cpu_stream_synchronize(tsr_plugin_stream *stream);
tsr_status tsr_cpu_stream_query(tsr_plugin_stream *stream);
tsr_status tsr_cpu_stream_wait_event(tsr_plugin_stream *stream, tsr_plugin_event *event);

// Creates an event (TSR_EVENT_TIMING allowed); owned by the caller until
// tsr_cpu_event_destroy. Thread-safe.
tsr_status tsr_cpu_event_create(int32_t device, uint32_t flags, tsr_plugin_event **out_event);
// Destroys an idle |event|. Not thread-safe with other uses of it.
tsr_status tsr_cpu_event_destroy(tsr_plugin_event *event);
// Takes the CLOCK_MONOTONIC time: all earlier work on |stream| has finished.
// Thread-safe.
tsr_status tsr_cpu_event_record(tsr_plugin_event *event, tsr_plugin_stream *stream);
tsr_status tsr_cpu_event_query(tsr_plugin_event *event);
tsr_status tsr_cpu_event_synchronize(tsr_plugin_event *event);
// Milliseconds from |start|'s record to |end|'s; both timing events,
// recorded. Thread-safe.
tsr_status tsr_cpu_event_elapsed_get(tsr_plugin_event *start, tsr_plugin_event *end,
                                     float *out_milliseconds);

// memcpy/memmove between host memory and library buffers, bounds-checked against
// the buffers' sizes. Finished when they return. Thread-safe.
tsr_status tsr_cpu_copy_host_to_device(tsr_plugin_stream *stream, const void *src,
                                       tsr_plugin_buffer *dst, uint64_t dst_offset,
                                       uint64_t bytes);
tsr_status tsr_cpu_copy_device_to_host(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                       uint64_t src_offset, void *dst, uint64_t bytes);
tsr_status tsr_cpu_copy_device_to_device(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                         uint64_t src_offset, tsr_plugin_buffer *dst,
                                         uint64_t dst_offset, uint64_t bytes);

// TSR_OK when |stream| is NULL (the library's work is ordered by its callers anyway)
// or a live library stream; otherwise an error naming |what|. Thread-safe.
tsr_status tsr_cpu_stream_check(const char *what, const tsr_plugin_stream *stream);

#endif  // TESSERA_PLUGINS_CPU_STREAM_H_
