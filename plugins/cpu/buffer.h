// Buffers and the library's caching allocator.
#ifndef TESSERA_PLUGINS_CPU_BUFFER_H_
#define TESSERA_PLUGINS_CPU_BUFFER_H_

#include <stdint.h>

#include "tessera/abi.h"

// Every buffer's data starts this aligned; also the alignment plans may assume
// of buffers handed out by the library.
#define TSR_CPU_BASE_ALIGNMENT 64u

// What a tsr_plugin_buffer handle points at. It sits in the first
// TSR_CPU_BASE_ALIGNMENT bytes of the block that holds the data, so one system
// allocation serves both and a cached block keeps its header.
struct tsr_plugin_buffer {
  void *data;                         // TSR_CPU_BASE_ALIGNMENT-aligned
  uint64_t bytes;                     // what was asked for; copies are checked against it
  uint64_t capacity;                  // what the size class holds
  struct tsr_plugin_buffer *next_free;  // free-list link while cached
  uint32_t size_class;
  uint32_t state;                     // TSR_CPU_BUFFER_LIVE or _CACHED
};

enum { TSR_CPU_BUFFER_LIVE = 0x4c495645u, TSR_CPU_BUFFER_CACHED = 0x46524545u };

// Allocates |bytes| (0 allowed) on |device|; reuses a cached block of the
// same size class when one is free, so after warm-up no call reaches the
// system. The buffer is owned by the caller until tsr_cpu_buffer_free.
// Thread-safe (one lock per size class).
tsr_status tsr_cpu_buffer_alloc(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                                tsr_plugin_buffer **out_buffer);

// Returns |buffer| to its size class's cache. The library runs work synchronously, so
// the block may be reused at once whatever |stream| is. Thread-safe.
tsr_status tsr_cpu_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream);

// The host address of |buffer|'s byte 0, valid until the buffer is freed.
// Thread-safe.
tsr_status tsr_cpu_buffer_host_ptr_get(tsr_plugin_buffer *buffer, void **out_ptr);

// Fills the fields of |out_stats| its struct_size covers. Thread-safe.
tsr_status tsr_cpu_allocator_stats_get(int32_t device, tsr_allocator_stats *out_stats);

// Returns every cached block to the system. Thread-safe.
tsr_status tsr_cpu_allocator_trim(int32_t device);

#endif  // TESSERA_PLUGINS_CPU_BUFFER_H_
