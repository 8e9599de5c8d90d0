// Plan keys and the pin cache (plan_key.h).
#include "plan_key.h"

#include <string.h>

static int tsr_cuda_key_add(tsr_cuda_plan_key *key, uint64_t word) {
  if (key->count >= TSR_CUDA_PLAN_KEY_WORDS)
    return 0;
  key->words[key->count++] = word;
  // FNV-1a over the word's bytes.
  for (int b = 0; b < 8; ++b) {
    key->hash ^= (word >> (8 * b)) & 0xffu;
    key->hash *= 1099511628211ull;
  }
  return 1;
}

static int tsr_cuda_key_add_desc(tsr_cuda_plan_key *key, const tsr_tensor_desc *d) {
  int ok = tsr_cuda_key_add(key, ((uint64_t)(uint32_t)d->dtype << 32) | (uint32_t)d->rank);
  ok = ok && tsr_cuda_key_add(key, ((uint64_t)d->alignment << 32) | (uint32_t)d->alias_group);
  int32_t rank = d->rank < 0 ? 0 : (d->rank > TSR_MAX_RANK ? TSR_MAX_RANK : d->rank);
  for (int32_t i = 0; ok && i < rank; ++i) {
    ok = tsr_cuda_key_add(key, (uint64_t)d->sizes[i]) &&
         tsr_cuda_key_add(key, (uint64_t)d->strides[i]);
  }
  return ok;
}

tsr_status tsr_cuda_plan_key_build(const tsr_op_signature *signature, const tsr_host_api *host,
                                   tsr_cuda_plan_key *out_key) {
  out_key->hash = 1469598103934665603ull;
  out_key->count = 0;
  int ok = tsr_cuda_key_add(
      out_key, ((uint64_t)(uint32_t)signature->op << 32) | (uint32_t)signature->device);
  ok = ok && tsr_cuda_key_add(out_key,
                              ((uint64_t)(uint32_t)signature->math_mode << 32) | signature->flags);
  ok = ok && tsr_cuda_key_add(out_key, ((uint64_t)(uint32_t)signature->num_inputs << 32) |
                                           (uint32_t)signature->num_outputs);
  for (int32_t i = 0; ok && i < signature->num_inputs; ++i)
    ok = tsr_cuda_key_add_desc(out_key, &signature->inputs[i]);
  for (int32_t i = 0; ok && i < signature->num_outputs; ++i)
    ok = tsr_cuda_key_add_desc(out_key, &signature->outputs[i]);
  if (ok && signature->attrs != NULL) {
    // The attribute struct opens with its size; its bytes follow.
    size_t size = *(const size_t *)signature->attrs;
    const unsigned char *bytes = (const unsigned char *)signature->attrs;
    ok = tsr_cuda_key_add(out_key, (uint64_t)size);
    for (size_t at = sizeof(size_t); ok && at < size; at += 8) {
      uint64_t word = 0;
      memcpy(&word, bytes + at, size - at < 8 ? size - at : 8);
      ok = tsr_cuda_key_add(out_key, word);
    }
  }
  if (!ok) {
    return host ? host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                                  "%s: signature too large for a plan key (%d words)",
                                  "plan_create", TSR_CUDA_PLAN_KEY_WORDS)
                : TSR_INVALID_ARGUMENT;
  }
  return TSR_OK;
}

int tsr_cuda_plan_key_equal(const tsr_cuda_plan_key *a, const tsr_cuda_plan_key *b) {
  return a->hash == b->hash && a->count == b->count &&
         memcmp(a->words, b->words, (size_t)a->count * sizeof(a->words[0])) == 0;
}

void tsr_cuda_pin_cache_init(tsr_cuda_pin_cache *cache) {
  cache->used = 0;
  cache->next = 0;
  pthread_mutex_init(&cache->lock, NULL);
}

void tsr_cuda_pin_cache_destroy(tsr_cuda_pin_cache *cache) {
  pthread_mutex_destroy(&cache->lock);
}

static int32_t tsr_cuda_pin_find(const tsr_cuda_pin_cache *cache, const tsr_cuda_plan_key *key) {
  for (int32_t i = 0; i < cache->used; ++i) {
    if (tsr_cuda_plan_key_equal(&cache->keys[i], key))
      return i;
  }
  return -1;
}

int tsr_cuda_pin_cache_lookup(tsr_cuda_pin_cache *cache, const tsr_cuda_plan_key *key,
                              tsr_cuda_engine_pin *out_pin) {
  pthread_mutex_lock(&cache->lock);
  int32_t at = tsr_cuda_pin_find(cache, key);
  if (at >= 0)
    *out_pin = cache->pins[at];
  pthread_mutex_unlock(&cache->lock);
  return at >= 0;
}

void tsr_cuda_pin_cache_insert(tsr_cuda_pin_cache *cache, const tsr_cuda_plan_key *key,
                               const tsr_cuda_engine_pin *pin) {
  pthread_mutex_lock(&cache->lock);
  int32_t at = tsr_cuda_pin_find(cache, key);
  if (at < 0) {
    if (cache->used < TSR_CUDA_PIN_CACHE_SLOTS) {
      at = cache->used++;
    } else {
      at = cache->next;
      cache->next = (cache->next + 1) % TSR_CUDA_PIN_CACHE_SLOTS;
    }
    cache->keys[at] = *key;
  }
  cache->pins[at] = *pin;
  pthread_mutex_unlock(&cache->lock);
}
