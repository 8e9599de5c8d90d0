// The CUDA plugin's caching allocator, as plain C over an injected backend.
//
// One allocator per device. Requests are rounded to size classes (512-byte
// minimum, then four classes per power of two, so at most 25% is wasted) and
// a freed block goes back to its class's free list, tagged with the id of the
// stream it was freed on and a completion marker recorded there. A later
// request on the same stream takes it at once (the stream orders the reuse
// after the old work); a request on another stream, or with no stream, takes
// it only when the marker has completed. Streams are matched by id, never by
// address: a stream destroyed and another created at the same address is
// another stream, whose work the old one's does not order. Nothing touches
// CUDA directly: memory.c supplies a backend over cudaMalloc/cudaEvent, the
// unit tests a fake one.
#ifndef TESSERA_PLUGINS_CUDA_ALLOCATOR_H_
#define TESSERA_PLUGINS_CUDA_ALLOCATOR_H_

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"

// What the allocator needs from the device. |ctx| is passed back unchanged.
typedef struct tsr_cuda_alloc_backend {
  void *ctx;
  // Reserves |bytes| of device memory. TSR_OK, TSR_OUT_OF_MEMORY when the
  // device is full, another status (with its message set) on other failures.
  tsr_status (*reserve)(void *ctx, uint64_t bytes, void **out_ptr);
  // Returns memory from reserve to the device; waits for work that uses it.
  void (*release)(void *ctx, void *ptr, uint64_t bytes);
  // Records a marker that completes when the work queued on |stream| so far
  // has completed, or NULL when |stream| is NULL or none could be made (the
  // allocator then treats the block as busy until a device-wide sync).
  void *(*marker_record)(void *ctx, void *stream);
  // 1 when |marker| has completed, 0 when not.
  int (*marker_done)(void *ctx, void *marker);
  void (*marker_release)(void *ctx, void *marker);
  // Waits for all work on the device (a free with no stream).
  tsr_status (*device_synchronize)(void *ctx);
} tsr_cuda_alloc_backend;

// One block of device memory: the plugin's buffer handle.
typedef struct tsr_cuda_block {
  void *ptr;           // device address of byte 0
  uint64_t size;       // the size class: usable bytes
  uint64_t requested;  // bytes asked for by the current owner: copies stay inside
  int32_t device;
  int32_t class_index;
  uint64_t free_stream_id;  // while cached: id of the stream it was freed on (0: any)
  void *marker;       // while cached: completes when that stream's work has
  struct tsr_cuda_block *next;
  int in_use;
} tsr_cuda_block;

#define TSR_CUDA_ALLOC_CLASS_COUNT 256

typedef struct tsr_cuda_allocator {
  int32_t device;
  tsr_cuda_alloc_backend backend;
  uint64_t cap_bytes;  // 0: no cap other than the device's memory
  pthread_mutex_t lock;
  tsr_cuda_block *free_lists[TSR_CUDA_ALLOC_CLASS_COUNT];
  tsr_allocator_stats stats;
  uint64_t cached_bytes;
  uint64_t cached_blocks;
  uint64_t oom_retries;
} tsr_cuda_allocator;

// A new stream id: unique for the life of the process, never 0 (0 means "no
// stream"). Each plugin stream takes one when it is created. Thread-safe.
uint64_t tsr_cuda_stream_id_next(void);

// Size class of a request of |bytes|: writes the class's usable size and its
// index. TSR_OUT_OF_MEMORY for a request beyond the largest class (2^63).
// Thread-safe.
tsr_status tsr_cuda_alloc_class_get(uint64_t bytes, uint64_t *out_size, int32_t *out_index);

// Initialises |allocator| for |device| over |backend| with at most
// |cap_bytes| reserved (0: no cap). Not thread-safe; pair with
// tsr_cuda_allocator_destroy.
void tsr_cuda_allocator_init(tsr_cuda_allocator *allocator, int32_t device,
                             const tsr_cuda_alloc_backend *backend, uint64_t cap_bytes);
// Releases every cached block to the backend. Blocks still in use are the
// caller's leak. Not thread-safe.
void tsr_cuda_allocator_destroy(tsr_cuda_allocator *allocator);

// A block of at least |bytes| usable by work queued on |stream| (NULL: any
// stream) after the call; |stream_id| is that stream's id
// (tsr_cuda_stream_id_next), 0 exactly when |stream| is NULL. On out of
// memory it frees the caches and retries once, then returns
// TSR_OUT_OF_MEMORY with the figures of fragmentation in the message set
// through |host|. The block is owned by the caller until
// tsr_cuda_allocator_free. Thread-safe.
tsr_status tsr_cuda_allocator_alloc(tsr_cuda_allocator *allocator, const tsr_host_api *host,
                                    uint64_t bytes, void *stream, uint64_t stream_id,
                                    tsr_cuda_block **out_block);
// Returns |block| to the cache, reusable by work queued on |stream| (id
// |stream_id|, as for alloc) after this call (NULL: after all work on the
// device, for which it synchronizes). Thread-safe.
tsr_status tsr_cuda_allocator_free(tsr_cuda_allocator *allocator, const tsr_host_api *host,
                                   tsr_cuda_block *block, void *stream, uint64_t stream_id);
// Releases every cached block whose marker has completed (all of them when
// |wait| is set, after synchronizing the device). Thread-safe.
tsr_status tsr_cuda_allocator_trim(tsr_cuda_allocator *allocator, int wait);
// Copies the statistics into the covered fields of |out_stats|. Thread-safe.
void tsr_cuda_allocator_stats_get(tsr_cuda_allocator *allocator, tsr_allocator_stats *out_stats);
// Bytes held in the caches and the number of cached blocks. Thread-safe.
void tsr_cuda_allocator_cache_get(tsr_cuda_allocator *allocator, uint64_t *out_bytes,
                                  uint64_t *out_blocks);

#endif  // TESSERA_PLUGINS_CUDA_ALLOCATOR_H_
