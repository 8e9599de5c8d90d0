// Plan cache. Measured cost of a hit for a 3-operand rank-1 signature is a
// key of ~12 words, one hash and one memcmp: tens of nanoseconds.
#include "plan_cache.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

// One multiply per word while the key is written, one full mix at the end:
// the key is built on every eager op, so this is the dispatcher's largest
// fixed cost after the kernel itself.
#define KEY_PUT(value)                          \
  do {                                          \
    uint64_t v_ = (value);                      \
    w[n++] = v_;                                \
    h = (h ^ v_) * 0x9e3779b97f4a7c15ull;       \
    h ^= h >> 32;                               \
  } while (0)

tsr_status tsr_plan_key_build(const tsr_op_signature *signature, tsr_plan_key *out_key) {
  uint64_t *w = out_key->words;
  uint32_t n = 0;
  uint64_t h = 0x243f6a8885a308d3ull;
  if (signature->num_inputs < 0 || signature->num_outputs < 0 ||
      signature->num_inputs + signature->num_outputs > TSR_MAX_OPERANDS) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "plan: %d inputs and %d outputs",
                         signature->num_inputs, signature->num_outputs);
  }
  KEY_PUT((uint64_t)(uint32_t)signature->op | ((uint64_t)(uint32_t)signature->device << 32));
  KEY_PUT((uint64_t)(uint16_t)signature->math_mode | ((uint64_t)(uint16_t)signature->flags << 16) |
          ((uint64_t)(uint16_t)signature->num_inputs << 32) |
          ((uint64_t)(uint16_t)signature->num_outputs << 48));
  for (int32_t side = 0; side < 2; ++side) {
    const tsr_tensor_desc *descs = side == 0 ? signature->inputs : signature->outputs;
    int32_t count = side == 0 ? signature->num_inputs : signature->num_outputs;
    for (int32_t i = 0; i < count; ++i) {
      const tsr_tensor_desc *d = &descs[i];
      if (d->rank < 0 || d->rank > TSR_MAX_RANK) {
        return tsr_error_set(TSR_INVALID_ARGUMENT, "plan: operand rank %d", d->rank);
      }
      KEY_PUT((uint64_t)(uint8_t)d->dtype | ((uint64_t)(uint8_t)d->rank << 8) |
              ((uint64_t)d->alignment << 16) | ((uint64_t)(uint32_t)(d->alias_group + 1) << 32));
      for (int32_t r = 0; r < d->rank; ++r) {
        KEY_PUT((uint64_t)d->sizes[r]);
        KEY_PUT((uint64_t)d->strides[r]);
      }
    }
  }
  size_t attr_bytes = 0;
  if (signature->attrs != NULL) {
    attr_bytes = *(const size_t *)signature->attrs;
    if (attr_bytes > 512 || attr_bytes < sizeof(size_t)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: attribute struct_size %zu is out of range",
                           "plan", attr_bytes);
    }
  }
  KEY_PUT(attr_bytes);
  const unsigned char *bytes = signature->attrs;
  size_t whole = attr_bytes / 8;
  for (size_t i = 1; i < whole; ++i) {  // word 0 is struct_size, already in
    uint64_t v;
    memcpy(&v, bytes + 8 * i, 8);
    KEY_PUT(v);
  }
  if (attr_bytes % 8) {
    uint64_t v = 0;
    memcpy(&v, bytes + 8 * whole, attr_bytes % 8);
    KEY_PUT(v);
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  out_key->length = n;
  out_key->hash = h;
  return TSR_OK;
}

void tsr_plan_cache_init(tsr_plan_cache *cache) {
  for (size_t i = 0; i < TSR_PLAN_CACHE_SLOTS; ++i) atomic_init(&cache->slots[i], NULL);
  atomic_init(&cache->hits, 0);
  atomic_init(&cache->misses, 0);
  atomic_init(&cache->entries, 0);
  pthread_mutex_init(&cache->insert_lock, NULL);
}

void tsr_plan_cache_destroy(tsr_plan_cache *cache, tsr_status (*destroy)(tsr_plugin_plan *)) {
  for (size_t i = 0; i < TSR_PLAN_CACHE_SLOTS; ++i) {
    tsr_plan_entry *e = atomic_load_explicit(&cache->slots[i], memory_order_relaxed);
    if (e == NULL) continue;
    if (e->plan != NULL && destroy != NULL) destroy(e->plan);
    free(e->fallback_reason);
    free(e);
    atomic_store_explicit(&cache->slots[i], NULL, memory_order_relaxed);
  }
  atomic_store(&cache->entries, 0);
  pthread_mutex_destroy(&cache->insert_lock);
}

static inline int entry_matches(const tsr_plan_entry *e, const tsr_plan_key *key) {
  return e->hash == key->hash && e->key_length == key->length &&
         memcmp(e->key, key->words, key->length * sizeof(uint64_t)) == 0;
}

const tsr_plan_entry *tsr_plan_cache_lookup(tsr_plan_cache *cache, const tsr_plan_key *key) {
  size_t mask = TSR_PLAN_CACHE_SLOTS - 1;
  size_t slot = (size_t)key->hash & mask;
  for (size_t probe = 0; probe < TSR_PLAN_CACHE_SLOTS; ++probe) {
    const tsr_plan_entry *e =
        atomic_load_explicit(&cache->slots[(slot + probe) & mask], memory_order_acquire);
    if (e == NULL) break;
    if (entry_matches(e, key)) {
      atomic_fetch_add_explicit(&cache->hits, 1, memory_order_relaxed);
      return e;
    }
  }
  atomic_fetch_add_explicit(&cache->misses, 1, memory_order_relaxed);
  return NULL;
}

tsr_status tsr_plan_cache_insert(tsr_plan_cache *cache, const tsr_plan_key *key,
                                 tsr_plugin_plan *plan, const tsr_plan_info *info,
                                 const char *fallback_reason, const tsr_plan_entry **out_entry) {
  *out_entry = NULL;
  size_t mask = TSR_PLAN_CACHE_SLOTS - 1;
  pthread_mutex_lock(&cache->insert_lock);
  // Keep the table at most 3/4 full so that probes stay short.
  if (atomic_load(&cache->entries) >= TSR_PLAN_CACHE_SLOTS / 4 * 3) {
    pthread_mutex_unlock(&cache->insert_lock);
    return TSR_OK;
  }
  size_t slot = (size_t)key->hash & mask;
  for (;; slot = (slot + 1) & mask) {
    tsr_plan_entry *e = atomic_load_explicit(&cache->slots[slot], memory_order_relaxed);
    if (e == NULL) break;
    if (entry_matches(e, key)) {
      *out_entry = e;
      pthread_mutex_unlock(&cache->insert_lock);
      return TSR_OK;
    }
  }
  tsr_plan_entry *e = malloc(sizeof(*e) + key->length * sizeof(uint64_t));
  char *reason = fallback_reason ? strdup(fallback_reason) : NULL;
  if (e == NULL || (fallback_reason != NULL && reason == NULL)) {
    free(e);
    free(reason);
    pthread_mutex_unlock(&cache->insert_lock);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "plan cache: no memory for an entry");
  }
  e->hash = key->hash;
  e->plan = plan;
  if (info != NULL) {
    e->info = *info;
  } else {
    memset(&e->info, 0, sizeof(e->info));
    e->info.struct_size = sizeof(e->info);
  }
  e->fallback_reason = reason;
  e->key_length = key->length;
  memcpy(e->key, key->words, key->length * sizeof(uint64_t));
  atomic_store_explicit(&cache->slots[slot], e, memory_order_release);
  atomic_fetch_add(&cache->entries, 1);
  pthread_mutex_unlock(&cache->insert_lock);
  *out_entry = e;
  return TSR_OK;
}
