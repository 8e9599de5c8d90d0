// Storage: a device buffer, reference-counted, freed after the work of
// every stream that used it.
#ifndef TESSERA_CORE_STORAGE_H_
#define TESSERA_CORE_STORAGE_H_

#include <stdatomic.h>

#include "common.h"

#define TSR_STORAGE_MAX_STREAMS 4

typedef struct tsr_storage {
  atomic_int refs;
  tsr_device *device;
  tsr_plugin_buffer *buffer;
  uint64_t bytes;
  atomic_uint_fast64_t version;
  // Streams that used the storage, so that its free waits for all of them.
  // A storage used by more streams than fit sets |many_streams|; its free
  // then waits for the whole device.
  _Atomic(tsr_stream *) streams[TSR_STORAGE_MAX_STREAMS];
  atomic_int many_streams;
  struct tsr_storage *next_free;
} tsr_storage;


// --- storage.c -----------------------------------------------------------

// Allocates storage of |bytes| on |device|, stream-ordered on |stream|.
tsr_status tsr_storage_create(tsr_device *device, uint64_t bytes, tsr_stream *stream,
                              tsr_storage **out_storage);
void tsr_storage_retain(tsr_storage *storage);
// Frees the storage after the work of every stream that used it.
void tsr_storage_release(tsr_storage *storage);
// Records that |stream| uses |storage|. Lock-free.
void tsr_storage_mark_used(tsr_storage *storage, tsr_stream *stream);

#endif  // TESSERA_CORE_STORAGE_H_
