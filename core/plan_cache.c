// Plan cache. A hit for a 3-operand rank-1 signature is a key of ~12 words,
// one hash and one memcmp (its measured cost: docs/performance-log.md,
// "Measurements behind the code's decisions").
#include "plan_cache.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

// The key is built on every eager op, so its cost is the dispatcher's
// largest fixed one after the kernel. Words are stored first and hashed
// afterwards in four independent lanes: a single running hash makes every
// word wait for the previous word's multiply (docs/performance-log.md,
// "Measurements behind the code's decisions").
static uint64_t key_hash(const uint64_t *w, uint32_t n) {
  uint64_t h0 = 0x243f6a8885a308d3ull, h1 = 0x13198a2e03707344ull;
  uint64_t h2 = 0xa4093822299f31d0ull, h3 = 0x082efa98ec4e6c89ull;
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    h0 = (h0 ^ w[i]) * 0x9e3779b97f4a7c15ull;
    h1 = (h1 ^ w[i + 1]) * 0xc2b2ae3d27d4eb4full;
    h2 = (h2 ^ w[i + 2]) * 0x165667b19e3779f9ull;
    h3 = (h3 ^ w[i + 3]) * 0xd6e8feb86659fd93ull;
  }
  for (; i < n; ++i) h0 = (h0 ^ w[i]) * 0x9e3779b97f4a7c15ull;
  uint64_t h = h0 ^ (h1 >> 29 | h1 << 35) ^ (h2 >> 17 | h2 << 47) ^ (h3 >> 41 | h3 << 23) ^ n;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

tsr_status tsr_plan_key_build(const tsr_op_signature *signature, tsr_plan_key *out_key) {
  uint64_t *w = out_key->words;
  const int32_t num_inputs = signature->num_inputs, num_outputs = signature->num_outputs;
  if (num_inputs < 0 || num_outputs < 0 || num_inputs + num_outputs > TSR_MAX_OPERANDS) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "plan: %d inputs and %d outputs", num_inputs,
                         num_outputs);
  }
  if (signature->attrs != NULL) {
    const size_t attr_bytes = *(const size_t *)signature->attrs;
    if (attr_bytes > 512 || attr_bytes < sizeof(size_t)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: attribute struct_size %zu is out of range",
                           "plan", attr_bytes);
    }
  }
  tsr_plan_key_head_put(signature, w);
  uint32_t n = TSR_PLAN_KEY_HEAD_WORDS;
  for (int32_t k = 0; k < num_inputs + num_outputs; ++k) {
    const tsr_tensor_desc *d =
        k < num_inputs ? &signature->inputs[k] : &signature->outputs[k - num_inputs];
    const int32_t rank = d->rank;
    if (rank < 0 || rank > TSR_MAX_RANK) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "plan: operand rank %d", rank);
    }
    w[n++] = tsr_plan_key_operand_word(d);
    for (int32_t r = 0; r < rank; ++r) {
      w[n + 2 * (uint32_t)r] = (uint64_t)d->sizes[r];
      w[n + 2 * (uint32_t)r + 1] = (uint64_t)d->strides[r];
    }
    n += 2 * (uint32_t)rank;
  }
  tsr_plan_key_finish(out_key, n, signature->attrs);
  return TSR_OK;
}

void tsr_plan_key_finish(tsr_plan_key *key, uint32_t n, const void *attrs) {
  uint64_t *w = key->words;
  const size_t attr_bytes = attrs != NULL ? *(const size_t *)attrs : 0;
  w[n++] = attr_bytes;
  // Word 0 of the attributes is struct_size, already in; the tail of a size
  // that is not a multiple of 8 is zero-padded. Word by word, not memcpy:
  // attribute structs are a few words, fewer than a library call costs.
  if (attr_bytes > 8) {
    const unsigned char *bytes = (const unsigned char *)attrs + 8;
    const size_t rest = attr_bytes - 8, whole = rest / 8;
    for (size_t i = 0; i < whole; ++i) memcpy(&w[n + i], bytes + 8 * i, 8);
    n += (uint32_t)whole;
    if (rest % 8 != 0) {
      w[n] = 0;
      memcpy(&w[n], bytes + 8 * whole, rest % 8);
      ++n;
    }
  }
  key->length = n;
  key->hash = key_hash(w, n);
}

tsr_status tsr_plan_cache_init(tsr_plan_cache *cache) {
  cache->slots = calloc(TSR_PLAN_CACHE_SLOTS, sizeof(*cache->slots));
  if (cache->slots == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "plan cache: no memory for %d slots",
                         TSR_PLAN_CACHE_SLOTS);
  for (size_t i = 0; i < TSR_PLAN_CACHE_SLOTS; ++i) atomic_init(&cache->slots[i], NULL);
  atomic_init(&cache->hits, 0);
  atomic_init(&cache->misses, 0);
  atomic_init(&cache->entries, 0);
  pthread_mutex_init(&cache->insert_lock, NULL);
  return TSR_OK;
}

void tsr_plan_cache_destroy(tsr_plan_cache *cache, tsr_status (*destroy)(tsr_plugin_plan *)) {
  if (cache->slots == NULL)
    return;  // never initialised, or destroyed already
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
  free(cache->slots);
  cache->slots = NULL;
}

// An inline loop, not memcmp: keys are 10-30 words, and a hash match is
// almost always the key itself, so the whole key is compared anyway.
static inline int entry_matches(const tsr_plan_entry *e, const tsr_plan_key *key) {
  if (e->hash != key->hash || e->key_length != key->length) return 0;
  uint64_t differ = 0;
  for (uint32_t i = 0; i < key->length; ++i) differ |= e->key[i] ^ key->words[i];
  return differ == 0;
}

const tsr_plan_entry *tsr_plan_cache_lookup(tsr_plan_cache *cache, const tsr_plan_key *key) {
  size_t mask = TSR_PLAN_CACHE_SLOTS - 1;
  size_t slot = (size_t)key->hash & mask;
  for (size_t probe = 0; probe < TSR_PLAN_CACHE_SLOTS; ++probe) {
    const tsr_plan_entry *e =
        atomic_load_explicit(&cache->slots[(slot + probe) & mask], memory_order_acquire);
    if (e == NULL) break;
    if (entry_matches(e, key)) {
      // A load and a store, not a locked add, on every eager op: hits
      // counted by two threads at once may lose one (statistics only).
      atomic_store_explicit(&cache->hits,
                            atomic_load_explicit(&cache->hits, memory_order_relaxed) + 1,
                            memory_order_relaxed);
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
