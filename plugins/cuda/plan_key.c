// Plan keys and the pin cache (plan_key.h).
#include "plan_key.h"

#include <stdio.h>
#include <string.h>

#include "engine_select.h"

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

void tsr_cuda_pin_class_key(const tsr_cuda_plan_key *key, char out[TSR_CUDA_PIN_CLASS_KEY_SIZE]) {
  // The second hash: FNV-1a from another basis over the words in reverse,
  // so that it does not follow the first.
  uint64_t second = 0x84222325cbf29ce4ull;
  for (int32_t i = key->count - 1; i >= 0; --i) {
    for (int b = 0; b < 8; ++b) {
      second ^= (key->words[i] >> (8 * b)) & 0xffu;
      second *= 1099511628211ull;
    }
  }
  snprintf(out, TSR_CUDA_PIN_CLASS_KEY_SIZE, "conv k%d %016llx%016llx", (int)key->count,
           (unsigned long long)key->hash, (unsigned long long)second);
}

size_t tsr_cuda_pin_format(const tsr_cuda_engine_pin *pin, char out[TSR_CUDA_PIN_VALUE_SIZE]) {
  int n = snprintf(out, TSR_CUDA_PIN_VALUE_SIZE, "%d %d %lld", (int)pin->mode, (int)pin->rank,
                   (long long)pin->engine_id);
  return n > 0 && n < TSR_CUDA_PIN_VALUE_SIZE ? (size_t)n : 0;
}

// Reads one decimal integer of at most 10 digits at *|at|, below |limit|.
static int tsr_cuda_pin_number(const char *text, size_t bytes, size_t *at, int64_t limit,
                               int64_t *out) {
  int64_t v = 0;
  size_t start = *at;
  while (*at < bytes && text[*at] >= '0' && text[*at] <= '9' && *at - start < 10) {
    v = v * 10 + (text[*at] - '0');
    ++*at;
  }
  if (*at == start || v >= limit)
    return 0;
  *out = v;
  return 1;
}

int tsr_cuda_pin_parse(const void *value, size_t bytes, tsr_cuda_engine_pin *out_pin) {
  const char *text = value;
  if (text == NULL || bytes == 0 || bytes >= TSR_CUDA_PIN_VALUE_SIZE)
    return 0;
  size_t at = 0;
  int64_t mode = 0, rank = 0, id = 0;
  if (!tsr_cuda_pin_number(text, bytes, &at, TSR_CUDA_HEUR_SOURCE_COUNT, &mode) || at >= bytes ||
      text[at++] != ' ' ||
      !tsr_cuda_pin_number(text, bytes, &at, TSR_CUDA_ENGINE_MAX_CANDIDATES, &rank) ||
      at >= bytes || text[at++] != ' ' ||
      !tsr_cuda_pin_number(text, bytes, &at, (int64_t)1 << 31, &id) || at != bytes) {
    return 0;
  }
  *out_pin = (tsr_cuda_engine_pin){(int32_t)mode, (int32_t)rank, id};
  return 1;
}
