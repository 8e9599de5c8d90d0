// Streams and events of a device, and each stream's workspace.
#ifndef TESSERA_CORE_STREAM_H_
#define TESSERA_CORE_STREAM_H_

#include <stdatomic.h>

#include "common.h"

struct tsr_stream {
  atomic_int refs;
  tsr_device *device;
  tsr_plugin_stream *handle;
  // Scratch for plans with a workspace. Streams are in-order, so one buffer
  // serves every op queued on the stream; a second thread using the stream
  // at the same moment takes a temporary one instead.
  atomic_int workspace_busy;
  tsr_plugin_buffer *workspace;
  uint64_t workspace_bytes;
};

struct tsr_event {
  tsr_device *device;
  tsr_plugin_event *handle;
};


// --- stream.c ------------------------------------------------------------

tsr_status tsr_stream_create_internal(tsr_device *device, uint32_t flags, tsr_stream **out_stream);
// The calling thread's current stream for |device|. Never NULL.
tsr_stream *tsr_stream_current(tsr_device *device);
// Takes the stream's workspace of at least |bytes| or a temporary one;
// give it back with tsr_stream_workspace_release. Thread-safe.
tsr_status tsr_stream_workspace_acquire(tsr_stream *stream, uint64_t bytes,
                                        tsr_plugin_buffer **out_buffer, int *out_temporary);
void tsr_stream_workspace_release(tsr_stream *stream, tsr_plugin_buffer *buffer, int temporary);

#endif  // TESSERA_CORE_STREAM_H_
