// Plan cache: a device's plans keyed by the full op signature.
//
// Lookups are lock-free (open addressing over atomic slots that are written
// once); inserts take a per-cache mutex, which only plan misses reach. Entries
// live until the cache is destroyed with its device.
#ifndef TESSERA_CORE_PLAN_CACHE_H_
#define TESSERA_CORE_PLAN_CACHE_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "tessera/abi.h"

#define TSR_PLAN_CACHE_SLOTS 8192
// Words of a serialised key: header, per operand (packed word + sizes +
// strides), attributes up to 512 bytes.
#define TSR_PLAN_KEY_MAX_WORDS (4 + TSR_MAX_OPERANDS * (1 + 2 * TSR_MAX_RANK) + 64)

typedef struct tsr_plan_key {
  uint32_t length;  // words used
  uint64_t hash;
  uint64_t words[TSR_PLAN_KEY_MAX_WORDS];
} tsr_plan_key;

typedef struct tsr_plan_entry {
  uint64_t hash;
  tsr_plugin_plan *plan;     // NULL when the op falls back to ref
  tsr_plan_info info;
  char *fallback_reason;     // why the device refused it (fallback entries)
  uint32_t key_length;
  uint64_t key[];            // key_length words
} tsr_plan_entry;

typedef struct tsr_plan_cache {
  // TSR_PLAN_CACHE_SLOTS entries (64 KiB), on the heap so that a retired
  // device (device.h) keeps only a small record once its cache is destroyed.
  _Atomic(tsr_plan_entry *) *slots;
  atomic_uint_fast64_t hits;
  atomic_uint_fast64_t misses;
  atomic_uint_fast64_t entries;
  pthread_mutex_t insert_lock;
} tsr_plan_cache;

// Serialises |signature| (op, device, math mode, flags, every operand's
// dtype, sizes, strides, alignment and alias group, and the attribute bytes)
// into |out_key|. Returns TSR_INVALID_ARGUMENT if the attributes are larger
// than a key holds. Thread-safe.
tsr_status tsr_plan_key_build(const tsr_op_signature *signature, tsr_plan_key *out_key);

// The key layout, shared by tsr_plan_key_build and the dispatcher, which
// writes an operand's words while it fills the operand's descriptor
// (dispatch.c): two header words, then per operand its packed word followed
// by its sizes and strides interleaved, then the attribute words
// (tsr_plan_key_finish).
static inline void tsr_plan_key_head_put(const tsr_op_signature *signature, uint64_t *w) {
  w[0] = (uint64_t)(uint32_t)signature->op | ((uint64_t)(uint32_t)signature->device << 32);
  w[1] = (uint64_t)(uint16_t)signature->math_mode | ((uint64_t)(uint16_t)signature->flags << 16) |
         ((uint64_t)(uint16_t)signature->num_inputs << 32) |
         ((uint64_t)(uint16_t)signature->num_outputs << 48);
}
// An operand's packed word: dtype, rank, alignment, alias group.
static inline uint64_t tsr_plan_key_operand_word(const tsr_tensor_desc *d) {
  return (uint64_t)(uint8_t)d->dtype | ((uint64_t)(uint8_t)d->rank << 8) |
         ((uint64_t)d->alignment << 16) | ((uint64_t)(uint32_t)(d->alias_group + 1) << 32);
}
#define TSR_PLAN_KEY_HEAD_WORDS 2u
// Appends the attribute words of |attrs| (NULL, or a struct_size the caller
// checked to lie in [8, 512]) after the first |n| words of |key|, then sets
// its length and hash. Thread-safe.
void tsr_plan_key_finish(tsr_plan_key *key, uint32_t n, const void *attrs);

// Allocates the slots and clears the counters; TSR_OUT_OF_MEMORY when the
// slots cannot be had. Not thread-safe.
tsr_status tsr_plan_cache_init(tsr_plan_cache *cache);
// Destroys every plan through |destroy| and frees the entries. Not thread-safe.
void tsr_plan_cache_destroy(tsr_plan_cache *cache, tsr_status (*destroy)(tsr_plugin_plan *));
// The entry for |key| or NULL. Lock-free; thread-safe.
const tsr_plan_entry *tsr_plan_cache_lookup(tsr_plan_cache *cache, const tsr_plan_key *key);
// Inserts a copy of |key| mapped to |plan|; if an equal key is present (a
// concurrent insert won), returns that entry and the caller destroys its
// plan. *out_entry is NULL when the cache is full (the caller then owns and
// destroys |plan| after use). Thread-safe.
tsr_status tsr_plan_cache_insert(tsr_plan_cache *cache, const tsr_plan_key *key,
                                 tsr_plugin_plan *plan, const tsr_plan_info *info,
                                 const char *fallback_reason, const tsr_plan_entry **out_entry);

#endif  // TESSERA_CORE_PLAN_CACHE_H_
