// Keys of the plugin's own plan-level caches, as plain C.
//
// The core caches plans by signature; the plugin keeps one cache of its own:
// the engine an autotuned convolution chose, so that a plan built again for
// the same problem (another process-wide plan cache miss, a second context)
// skips the timing. The key holds everything that changes the choice: op,
// device, math mode, flags, each operand's dtype, rank, sizes, strides and
// alignment, and the attribute bytes.
#ifndef TESSERA_PLUGINS_CUDA_PLAN_KEY_H_
#define TESSERA_PLUGINS_CUDA_PLAN_KEY_H_

#include <pthread.h>
#include <stdint.h>

#include "tessera/abi.h"

#define TSR_CUDA_PLAN_KEY_WORDS 320

typedef struct tsr_cuda_plan_key {
  uint64_t hash;
  int32_t count;  // words used
  uint64_t words[TSR_CUDA_PLAN_KEY_WORDS];
} tsr_cuda_plan_key;

// Builds the key of |signature|. TSR_INVALID_ARGUMENT (message through
// |host|) when it has more operands or attribute bytes than a key holds.
// Thread-safe.
tsr_status tsr_cuda_plan_key_build(const tsr_op_signature *signature, const tsr_host_api *host,
                                   tsr_cuda_plan_key *out_key);
// 1 when |a| and |b| are the same key. Thread-safe.
int tsr_cuda_plan_key_equal(const tsr_cuda_plan_key *a, const tsr_cuda_plan_key *b);

// What an autotune chose for a key.
typedef struct tsr_cuda_engine_pin {
  int32_t mode;
  int32_t rank;
  int64_t engine_id;
} tsr_cuda_engine_pin;

#define TSR_CUDA_PIN_CACHE_SLOTS 64

// A fixed-size cache of pins, replacing the oldest entry when full.
typedef struct tsr_cuda_pin_cache {
  pthread_mutex_t lock;
  int32_t used;
  int32_t next;  // the slot to replace when full
  tsr_cuda_plan_key keys[TSR_CUDA_PIN_CACHE_SLOTS];
  tsr_cuda_engine_pin pins[TSR_CUDA_PIN_CACHE_SLOTS];
} tsr_cuda_pin_cache;

// Empties |cache|. Not thread-safe.
void tsr_cuda_pin_cache_init(tsr_cuda_pin_cache *cache);
// Releases the cache's lock. Not thread-safe.
void tsr_cuda_pin_cache_destroy(tsr_cuda_pin_cache *cache);
// 1 and the pin when |key| is cached, else 0. Thread-safe.
int tsr_cuda_pin_cache_lookup(tsr_cuda_pin_cache *cache, const tsr_cuda_plan_key *key,
                              tsr_cuda_engine_pin *out_pin);
// Stores (or replaces) the pin of |key|. Thread-safe.
void tsr_cuda_pin_cache_insert(tsr_cuda_pin_cache *cache, const tsr_cuda_plan_key *key,
                               const tsr_cuda_engine_pin *pin);

// Pins in the core's persistent engine cache, so that the next process skips
// the timing too. The class key names the problem by its word count and two
// independent 64-bit hashes of its words (a key's words do not fit the
// cache's class-key bound); two problems share one with odds near 2^-128,
// and a pin that does not build for its problem is passed over by the
// selection anyway. The value is "<mode> <rank> <engine id>" in decimal.
#define TSR_CUDA_PIN_CLASS_KEY_SIZE 64
#define TSR_CUDA_PIN_VALUE_SIZE 48

// Writes |key|'s class key (printable ASCII, NUL-terminated). Thread-safe.
void tsr_cuda_pin_class_key(const tsr_cuda_plan_key *key, char out[TSR_CUDA_PIN_CLASS_KEY_SIZE]);
// Writes |pin|'s value (not NUL-terminated) and returns its length. Thread-safe.
size_t tsr_cuda_pin_format(const tsr_cuda_engine_pin *pin, char out[TSR_CUDA_PIN_VALUE_SIZE]);
// Reads a value written by tsr_cuda_pin_format: 1 and the pin when |value|
// (|bytes| bytes, from a file: any bytes) is three decimal integers with one
// space between them, the mode a heuristics source, the rank below
// TSR_CUDA_ENGINE_MAX_CANDIDATES and the engine id below 2^31; else 0.
// Thread-safe.
int tsr_cuda_pin_parse(const void *value, size_t bytes, tsr_cuda_engine_pin *out_pin);

#endif  // TESSERA_PLUGINS_CUDA_PLAN_KEY_H_
