// The CUDA plugin's process-wide state and the objects behind its handles.
//
// The CPU-kernel library (plugins/cpu, the kernels ref presents) is
// compiled in only for argument validation and shape analysis: its
// op_supports and plan_create run first so that an invalid signature is
// refused with the same words as on every other backend, and its validated
// plan (operands with sizes, strides, extents) is kept inside ours. Its
// kernels never see CUDA memory. It defines the ABI's opaque struct names,
// so this plugin's objects have their own names and are cast at the table
// boundary.
#ifndef TESSERA_PLUGINS_CUDA_CUDA_PLUGIN_H_
#define TESSERA_PLUGINS_CUDA_CUDA_PLUGIN_H_

#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdint.h>

#include "allocator.h"
#include "cuda_kernels.h"
#include "tessera/abi.h"

#define TSR_CUDA_MAX_DEVICES 64

typedef struct tsr_cuda_stream {
  int32_t device;
  int owned;  // 0: imported; the application destroys the cudaStream_t
  cudaStream_t stream;
  uint64_t id;  // unique for the process's life: the allocator matches streams by it
  int *error_word;  // device memory, TSR_CUDA_KERNEL_ERROR_*
  // Set when a kernel that may write |error_word| is queued; synchronize and
  // query copy the word back only then, not on every call.
  _Atomic int error_word_armed;
  // cuBLASLt's workspace for matmuls queued on this stream (matmul.c): from
  // the plugin's allocator on first use, freed with the stream. One per
  // stream, since the stream orders the matmuls that share it.
  _Atomic(tsr_cuda_block *) lt_workspace;
} tsr_cuda_stream;

typedef struct tsr_cuda_event {
  int32_t device;
  uint32_t flags;  // TSR_EVENT_*
  int recorded;
  cudaEvent_t event;
} tsr_cuda_event;

// The core's host table (NULL before the entry). Thread-safe.
const tsr_host_api *tsr_cuda_host(void);
// ref's table, used for validation only. Thread-safe after the entry.
const tsr_plugin_api *tsr_cuda_ref(void);
// Devices cudart sees; 0 without a driver. Thread-safe.
int32_t tsr_cuda_device_count(void);
// The allocator of |device| (checked by the caller). Thread-safe.
tsr_cuda_allocator *tsr_cuda_allocator_of(int32_t device);

// Sets the message of a failed CUDA runtime call |call| inside |function| and
// returns the status it maps to: out of memory, unavailable (no driver or
// device), device lost (a sticky error: the context is unusable), else
// internal. Clears cudart's non-sticky last error. Thread-safe.
tsr_status tsr_cuda_check(cudaError_t error, const char *function, const char *call);
// The calling thread's current device as an entry found it, so that the
// entry can put it back: an application's own CUDA code on the same thread
// must not find another device current after a call into Tessera.
typedef struct tsr_cuda_device_scope {
  int previous;  // the device that was current
  int switched;  // 1 when tsr_cuda_device_enter changed it
} tsr_cuda_device_scope;

// Makes |device| current on the calling thread (only when it is not already)
// and records what was. Pair every TSR_OK with tsr_cuda_device_leave. On
// failure the message names |function|. Thread-safe.
tsr_status tsr_cuda_device_enter(int32_t device, const char *function,
                                 tsr_cuda_device_scope *out_scope);
// Makes the device |scope| recorded current again. It skips that only when
// the device's primary context is known to be inactive, because cudaSetDevice
// would create one (hundreds of MiB on a GPU nobody uses); that is what a
// thread that never chose a device (device 0 by default) looks like.
// Thread-safe.
void tsr_cuda_device_leave(const tsr_cuda_device_scope *scope);
// Checks |device| is in [0, count): TSR_INVALID_ARGUMENT naming |function|.
tsr_status tsr_cuda_device_check(int32_t device, const char *function);

// Table entries implemented in memory.c and streams.c (abi.h documents them).
tsr_status tsr_cuda_buffer_alloc(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                                 tsr_plugin_buffer **out_buffer);
tsr_status tsr_cuda_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream);
tsr_status tsr_cuda_host_pinned_alloc(int32_t device, uint64_t bytes, void **out_ptr);
tsr_status tsr_cuda_host_pinned_free(int32_t device, void *ptr);
tsr_status tsr_cuda_allocator_stats(int32_t device, tsr_allocator_stats *out_stats);
tsr_status tsr_cuda_allocator_trim_entry(int32_t device);
tsr_status tsr_cuda_copy_host_to_device(tsr_plugin_stream *stream, const void *src,
                                        tsr_plugin_buffer *dst, uint64_t dst_offset,
                                        uint64_t bytes);
tsr_status tsr_cuda_copy_device_to_host(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                        uint64_t src_offset, void *dst, uint64_t bytes);
tsr_status tsr_cuda_copy_device_to_device(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                          uint64_t src_offset, tsr_plugin_buffer *dst,
                                          uint64_t dst_offset, uint64_t bytes);
// Sets up one allocator per device (cap from TSR_CUDA_MEMORY_CAP_MB). Called
// once the device count is known. Not thread-safe.
void tsr_cuda_memory_init(int32_t device_count);
// Releases the cached memory of every device. Not thread-safe.
void tsr_cuda_memory_shutdown(void);

// |stream|'s error word, for a kernel that may report a data error in it;
// the next synchronize or query reads it back. Thread-safe.
int *tsr_cuda_stream_error_word(tsr_cuda_stream *stream);

tsr_status tsr_cuda_stream_create(int32_t device, uint32_t flags, tsr_plugin_stream **out_stream);
tsr_status tsr_cuda_stream_destroy(tsr_plugin_stream *stream);
tsr_status tsr_cuda_stream_synchronize(tsr_plugin_stream *stream);
tsr_status tsr_cuda_stream_query(tsr_plugin_stream *stream);
tsr_status tsr_cuda_stream_wait_event(tsr_plugin_stream *stream, tsr_plugin_event *event);
tsr_status tsr_cuda_event_create(int32_t device, uint32_t flags, tsr_plugin_event **out_event);
tsr_status tsr_cuda_event_destroy(tsr_plugin_event *event);
tsr_status tsr_cuda_event_record(tsr_plugin_event *event, tsr_plugin_stream *stream);
tsr_status tsr_cuda_event_query(tsr_plugin_event *event);
tsr_status tsr_cuda_event_synchronize(tsr_plugin_event *event);
tsr_status tsr_cuda_event_elapsed_get(tsr_plugin_event *start, tsr_plugin_event *end,
                                      float *out_milliseconds);

// Wraps an application's own |native| cudaStream_t on |device| as a plugin
// stream. With |take_ownership| the plugin destroys the cudaStream_t in
// stream_destroy; without it the application keeps ownership and must keep
// it alive until stream_destroy has returned. The returned stream is owned by
// the caller (stream_destroy). Thread-safe. Reached through the table's
// stream_import (tsr_cuda_stream_import_entry).
tsr_status tsr_cuda_stream_import(int32_t device, cudaStream_t native, int take_ownership,
                                  tsr_plugin_stream **out_stream);
// The table's stream_import (ABI 0.3): |native| is a cudaStream_t of
// |device|; TSR_STREAM_IMPORT_TAKE_OWNERSHIP maps to |take_ownership|.
// Refuses unknown flags, NULL (pass cudaStreamLegacy for the legacy default
// stream), cudaStreamPerThread, and taking ownership of cudaStreamLegacy.
// Ownership as tsr_cuda_stream_import. Thread-safe.
tsr_status tsr_cuda_stream_import_entry(int32_t device, void *native, uint32_t flags,
                                        tsr_plugin_stream **out_stream);

#endif  // TESSERA_PLUGINS_CUDA_CUDA_PLUGIN_H_
