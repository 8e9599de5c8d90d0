// The blocked-weight cache of the convolutions; conv_weight_cache.h says
// what it promises.
#include "conv_weight_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

struct tsr_onednn_weight_cache {
  pthread_mutex_t lock;  // guards everything below except |key_buffer|'s fast read
  void *data;            // the blocked copy, |bytes| long
  uint64_t bytes;
  // The key of |data|. |key_buffer| is also read without the lock by
  // buffer_forget's first test, hence atomic.
  _Atomic(uintptr_t) key_buffer;
  uint64_t key_offset;
  uint64_t key_version;
  int valid;        // |data| holds the key's weights
  int filling;      // one execution is writing |data|
  int forgotten;    // the key's buffer was freed while filling
  int32_t readers;  // executions reading |data|
  // The process-wide registry, for buffer_forget.
  struct tsr_onednn_weight_cache *prev;
  struct tsr_onednn_weight_cache *next;
};

// Set once the plugin's buffer_free forgets freed buffers (see the header).
static atomic_int g_enabled;
// buffer_free reads the registry on every free; plans change it. A reader
// lock lets frees on many threads proceed together, and g_registered lets a
// process without conv plans skip even that.
static pthread_rwlock_t g_registry_lock = PTHREAD_RWLOCK_INITIALIZER;
static tsr_onednn_weight_cache *g_registry;
static atomic_int g_registered;

tsr_status tsr_onednn_weight_cache_create(uint64_t bytes, tsr_onednn_weight_cache **out_cache) {
  *out_cache = NULL;
  tsr_onednn_weight_cache *cache = calloc(1, sizeof(*cache));
  const uint64_t rounded = (bytes + 63u) & ~(uint64_t)63u;
  void *data = cache != NULL && rounded > 0 ? aligned_alloc(64, rounded) : NULL;
  if (cache == NULL || data == NULL) {
    free(cache);
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "conv: %llu bytes for the blocked-weight cache",
                                (unsigned long long)rounded);
  }
  if (pthread_mutex_init(&cache->lock, NULL) != 0) {
    free(data);
    free(cache);
    return tsr_onednn_error_set(TSR_INTERNAL, "conv: pthread_mutex_init failed");
  }
  cache->data = data;
  cache->bytes = bytes;
  atomic_init(&cache->key_buffer, (uintptr_t)0);
  pthread_rwlock_wrlock(&g_registry_lock);
  cache->next = g_registry;
  if (g_registry != NULL)
    g_registry->prev = cache;
  g_registry = cache;
  atomic_fetch_add(&g_registered, 1);
  pthread_rwlock_unlock(&g_registry_lock);
  *out_cache = cache;
  return TSR_OK;
}

void tsr_onednn_weight_cache_destroy(tsr_onednn_weight_cache *cache) {
  if (cache == NULL)
    return;
  pthread_rwlock_wrlock(&g_registry_lock);
  if (cache->prev != NULL)
    cache->prev->next = cache->next;
  if (cache->next != NULL)
    cache->next->prev = cache->prev;
  if (g_registry == cache)
    g_registry = cache->next;
  atomic_fetch_sub(&g_registered, 1);
  pthread_rwlock_unlock(&g_registry_lock);
  pthread_mutex_destroy(&cache->lock);
  free(cache->data);
  free(cache);
}

void tsr_onednn_weight_cache_enable(void) {
  atomic_store_explicit(&g_enabled, 1, memory_order_release);
}

tsr_status tsr_onednn_weight_cache_acquire(tsr_onednn_weight_cache *cache,
                                           const tsr_plugin_buffer *buffer, uint64_t byte_offset,
                                           uint64_t version, tsr_onednn_weight_fill_fn fill,
                                           void *arg, void **out_data) {
  *out_data = NULL;
  if (!atomic_load_explicit(&g_enabled, memory_order_acquire))
    return TSR_OK;
  pthread_mutex_lock(&cache->lock);
  if (cache->valid &&
      atomic_load_explicit(&cache->key_buffer, memory_order_relaxed) == (uintptr_t)buffer &&
      cache->key_offset == byte_offset && cache->key_version == version) {
    ++cache->readers;
    pthread_mutex_unlock(&cache->lock);
    *out_data = cache->data;
    return TSR_OK;
  }
  if (cache->readers > 0 || cache->filling) {
    // Others read the old copy (or write a new one): do not wait for them.
    pthread_mutex_unlock(&cache->lock);
    return TSR_OK;
  }
  cache->valid = 0;
  cache->filling = 1;
  cache->forgotten = 0;
  atomic_store_explicit(&cache->key_buffer, (uintptr_t)buffer, memory_order_relaxed);
  cache->key_offset = byte_offset;
  cache->key_version = version;
  pthread_mutex_unlock(&cache->lock);

  // Outside the lock: a reorder takes a while, and hits on other plans'
  // caches must not wait for it.
  const tsr_status status = fill(arg, cache->data);

  pthread_mutex_lock(&cache->lock);
  cache->filling = 0;
  if (status == TSR_OK) {
    // Still usable by this execution (its buffer is alive while it runs),
    // but only kept for later ones if the buffer was not freed meanwhile.
    cache->valid = !cache->forgotten;
    ++cache->readers;
    *out_data = cache->data;
  }
  pthread_mutex_unlock(&cache->lock);
  return status;
}

void tsr_onednn_weight_cache_release(tsr_onednn_weight_cache *cache) {
  pthread_mutex_lock(&cache->lock);
  --cache->readers;
  pthread_mutex_unlock(&cache->lock);
}

void tsr_onednn_weight_cache_buffer_forget(const tsr_plugin_buffer *buffer) {
  if (buffer == NULL || atomic_load_explicit(&g_registered, memory_order_acquire) == 0)
    return;
  pthread_rwlock_rdlock(&g_registry_lock);
  for (tsr_onednn_weight_cache *c = g_registry; c != NULL; c = c->next) {
    if (atomic_load_explicit(&c->key_buffer, memory_order_relaxed) != (uintptr_t)buffer)
      continue;
    pthread_mutex_lock(&c->lock);
    if (atomic_load_explicit(&c->key_buffer, memory_order_relaxed) == (uintptr_t)buffer) {
      c->valid = 0;
      c->forgotten = 1;
      atomic_store_explicit(&c->key_buffer, (uintptr_t)0, memory_order_relaxed);
    }
    pthread_mutex_unlock(&c->lock);
  }
  pthread_rwlock_unlock(&g_registry_lock);
}
