// A convolution's private copy of its weights in oneDNN's blocked layout.
//
// Reordering the weights on every call costs a pass over them; a training
// step or an inference loop runs the same weights many times. docs/abi.md
// 8.3/8.6: such a copy is keyed by (buffer, byte_offset, storage_version),
// lives in memory the plugin owns, is never written back into a tensor, and
// is dropped when the buffer is freed (a freed handle may come back with its
// versions restarted at 0).
//
// One cache holds one copy. Executions of one plan on several threads share
// it: a hit only counts a reader; a miss refills the copy when nobody reads
// it, and otherwise the caller reorders into its own workspace instead, so
// no execution ever waits for another's reorder.
#ifndef TESSERA_PLUGINS_ONEDNN_CONV_WEIGHT_CACHE_H_
#define TESSERA_PLUGINS_ONEDNN_CONV_WEIGHT_CACHE_H_

#include <stdint.h>

#include "tessera/abi.h"

typedef struct tsr_onednn_weight_cache tsr_onednn_weight_cache;

// Writes the blocked weights into |dst|; |arg| is the caller's.
typedef tsr_status (*tsr_onednn_weight_fill_fn)(void *arg, void *dst);

// A cache for |bytes| of blocked weights (64-byte aligned), registered so
// that tsr_onednn_weight_cache_buffer_forget reaches it. Plan time only.
tsr_status tsr_onednn_weight_cache_create(uint64_t bytes, tsr_onednn_weight_cache **out_cache);
// Unregisters and frees; NULL is ignored. The cache must be idle.
void tsr_onednn_weight_cache_destroy(tsr_onednn_weight_cache *cache);

// The blocked weights of (buffer, byte_offset, version): on a hit the cached
// copy; on a miss with no reader, the copy refilled by |fill|. Either way
// *out_data is set and the caller must call tsr_onednn_weight_cache_release
// when done reading. When the copy is in use by other executions and does not
// match, *out_data is NULL: the caller fills its own scratch (no release).
// Returns |fill|'s error, with *out_data NULL and nothing held. Thread-safe;
// never allocates.
tsr_status tsr_onednn_weight_cache_acquire(tsr_onednn_weight_cache *cache,
                                           const tsr_plugin_buffer *buffer, uint64_t byte_offset,
                                           uint64_t version, tsr_onednn_weight_fill_fn fill,
                                           void *arg, void **out_data);
void tsr_onednn_weight_cache_release(tsr_onednn_weight_cache *cache);

// Turns the caches on, process-wide. The plugin calls it once, at init,
// when its buffer_free calls tsr_onednn_weight_cache_buffer_forget: without
// that a cached copy could outlive its buffer and be hit by a new buffer
// with the same handle, so until then every acquire reports "in use" and
// callers reorder into their own workspace (correct, a reorder per call).
void tsr_onednn_weight_cache_enable(void);

// Drops every cached copy made from |buffer|. The plugin's buffer_free calls
// it before the handle can be reused. Thread-safe; cheap when no cache holds
// |buffer| (one pointer comparison per live cache).
void tsr_onednn_weight_cache_buffer_forget(const tsr_plugin_buffer *buffer);

#endif  // TESSERA_PLUGINS_ONEDNN_CONV_WEIGHT_CACHE_H_
