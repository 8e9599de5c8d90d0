// Batch loaders: a seeded permutation per epoch, batches cut from it in
// order, and a producer thread that fills host buffers ahead of the caller.
//
// The order is a pure function of (seed, epoch): resuming with
// tsr_loader_seek draws exactly what an uninterrupted run would have drawn.
// The producer fills host memory only; the caller's thread turns a ready
// batch into tensors, so an open scope of the caller adopts them and no
// tensor is ever created off the calling thread.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"
#include "error.h"

enum { SLOT_FREE = 0, SLOT_FILLING = 1, SLOT_READY = 2, SLOT_TAKEN = 3 };
enum { LOADER_SLOTS = 2 };  // double buffering

typedef struct loader_slot {
  float *features;  // [capacity rows, numel]
  int64_t *labels;  // [capacity rows]
  int64_t epoch, position, rows;
  int state;
  tsr_status status;  // of the fill
  char message[768];
} loader_slot;

struct tsr_loader {
  tsr_dataset *dataset;
  tsr_device *device;
  int64_t batch_size, count, batch_count, numel, capacity_rows;
  uint64_t seed;
  int shuffle, drop_last, prefetch;
  int32_t batch_rank;
  int64_t batch_sizes[TSR_MAX_RANK];
  // The caller's cursor: the next batch tsr_loader_next returns.
  int64_t epoch, position;
  // The permutation of perm_epoch, touched only by whoever fills (the
  // producer thread, or the caller without prefetch).
  int64_t *perm;
  int64_t perm_epoch;
  loader_slot slots[LOADER_SLOTS];
  // Shared with the producer, under |mutex|.
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  pthread_t thread;
  int thread_started;
  int stop;
  int error_pending;                  // a failed fill waits for the caller; produce nothing more
  int paused;                         // after a failure: produce again when the caller asks
  uint64_t generation;                // bumped by every reset; a fill of an older one is dropped
  uint64_t fill_seq, take_seq;        // batches filled / taken since the last reset
  int64_t fill_epoch, fill_position;  // the producer's cursor
};

// --- the order --------------------------------------------------------------------

static uint64_t mix64(uint64_t z) {
  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t stream_next(uint64_t *state) {
  *state += 0x9E3779B97F4A7C15ull;
  return mix64(*state);
}

// Uniform in [0, range) by rejection, so every index is equally likely.
static uint64_t stream_below(uint64_t *state, uint64_t range) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x;
  do {
    x = stream_next(state);
  } while (x >= limit);
  return x % range;
}

// Fisher-Yates over 0..n-1 with a stream keyed by (seed, epoch) only.
static void permutation_fill(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, int shuffle) {
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  if (!shuffle)
    return;
  uint64_t state =
      mix64(seed + 0x9E3779B97F4A7C15ull) ^ mix64((uint64_t)epoch * 0xD1B54A32D192ED03ull + 1);
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = (int64_t)stream_below(&state, (uint64_t)i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

// Fills |slot| with batch |position| of |epoch|. Runs on the producer thread
// (or the caller's without prefetch); writes the error into the slot.
static tsr_status batch_fill(tsr_loader *loader, loader_slot *slot, int64_t epoch,
                             int64_t position) {
  if (loader->perm_epoch != epoch) {
    permutation_fill(loader->perm, loader->count, loader->seed, epoch, loader->shuffle);
    loader->perm_epoch = epoch;
  }
  int64_t first = position * loader->batch_size;
  int64_t rows = loader->count - first;
  if (rows > loader->batch_size)
    rows = loader->batch_size;
  slot->epoch = epoch;
  slot->position = position;
  slot->rows = rows;
  slot->status = TSR_OK;
  slot->message[0] = '\0';
  for (int64_t r = 0; r < rows; ++r) {
    tsr_status status = tsr_dataset_get(loader->dataset, loader->perm[first + r],
                                        slot->features + r * loader->numel, slot->labels + r);
    if (status != TSR_OK) {
      slot->status = status;
      snprintf(slot->message, sizeof(slot->message), "batch %lld of epoch %lld: %s",
               (long long)position, (long long)epoch, tsr_error_message());
      return status;
    }
  }
  return TSR_OK;
}

static void cursor_advance(const tsr_loader *loader, int64_t *epoch, int64_t *position) {
  if (++*position == loader->batch_count) {
    ++*epoch;
    *position = 0;
  }
}

// --- the producer -----------------------------------------------------------------

static void *producer_main(void *arg) {
  tsr_loader *loader = arg;
  pthread_mutex_lock(&loader->mutex);
  while (!loader->stop) {
    loader_slot *slot = &loader->slots[loader->fill_seq % LOADER_SLOTS];
    if (slot->state != SLOT_FREE || loader->error_pending || loader->paused) {
      pthread_cond_wait(&loader->cond, &loader->mutex);
      continue;
    }
    int64_t epoch = loader->fill_epoch, position = loader->fill_position;
    uint64_t generation = loader->generation;
    slot->state = SLOT_FILLING;
    pthread_mutex_unlock(&loader->mutex);
    tsr_status status = batch_fill(loader, slot, epoch, position);
    pthread_mutex_lock(&loader->mutex);
    if (generation != loader->generation) {
      slot->state = SLOT_FREE;  // a seek made this batch stale
      continue;
    }
    slot->state = SLOT_READY;
    ++loader->fill_seq;
    cursor_advance(loader, &loader->fill_epoch, &loader->fill_position);
    if (status != TSR_OK)
      loader->error_pending = 1;
    pthread_cond_broadcast(&loader->cond);
  }
  pthread_mutex_unlock(&loader->mutex);
  return NULL;
}

// Drops every prepared batch and restarts production at the caller's cursor;
// when |pause|, only once the caller asks again (a failing callback is not
// retried behind the caller's back).
static void producer_reset(tsr_loader *loader, int pause) {
  pthread_mutex_lock(&loader->mutex);
  ++loader->generation;
  for (int s = 0; s < LOADER_SLOTS; ++s) {
    // A slot being filled is freed by the producer when it sees the new generation.
    if (loader->slots[s].state == SLOT_READY || loader->slots[s].state == SLOT_TAKEN) {
      loader->slots[s].state = SLOT_FREE;
    }
  }
  loader->fill_seq = 0;
  loader->take_seq = 0;
  loader->error_pending = 0;
  loader->paused = pause;
  loader->fill_epoch = loader->epoch;
  loader->fill_position = loader->position;
  if (loader->fill_position == loader->batch_count) {
    // The caller's epoch is exhausted: production resumes at the next one.
    ++loader->fill_epoch;
    loader->fill_position = 0;
  }
  pthread_cond_broadcast(&loader->cond);
  pthread_mutex_unlock(&loader->mutex);
}

// --- the loader -------------------------------------------------------------------

void tsr_loader_options_init(tsr_loader_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->batch_size = 64;
  options->shuffle = 1;
  options->prefetch = 1;
}

tsr_status tsr_loader_create(tsr_dataset *dataset, tsr_device *device,
                             const tsr_loader_options *options, tsr_loader **out_loader) {
  const char *what = "loader_create";
  if (out_loader == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_loader is NULL", what);
  *out_loader = NULL;
  if (dataset == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: dataset is NULL", what);
  if (device == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: device is NULL", what);
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  if (options != NULL) {
    if (options->struct_size < sizeof(size_t)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: options->struct_size is %zu; set it with tsr_loader_options_init",
                           what, options->struct_size);
    }
    memcpy(&o, options, options->struct_size < sizeof(o) ? options->struct_size : sizeof(o));
    o.struct_size = sizeof(o);
  }
  if (o.batch_size < 1) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: options->batch_size is %lld; it must be >= 1",
                         what, (long long)o.batch_size);
  }
  if (dataset->count == 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: the dataset is empty", what);
  }
  if (dataset->rank > TSR_MAX_RANK - 1) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: examples of rank %d leave no room for the batch dimension", what,
                         dataset->rank);
  }
  int64_t batch_count = o.drop_last
                            ? dataset->count / o.batch_size
                            : dataset->count / o.batch_size + (dataset->count % o.batch_size != 0);
  if (batch_count == 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: drop_last with batch_size %lld over %lld examples leaves no batch",
                         what, (long long)o.batch_size, (long long)dataset->count);
  }
  int64_t capacity_rows = o.batch_size < dataset->count ? o.batch_size : dataset->count;
  if (dataset->numel > 0 &&
      capacity_rows > (int64_t)(SIZE_MAX / sizeof(float) / 2) / dataset->numel) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: batch_size %lld of %lld-element examples is "
                         "too large",
                         what, (long long)o.batch_size, (long long)dataset->numel);
  }
  tsr_loader *loader = calloc(1, sizeof(*loader));
  if (loader == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate", what);
  loader->dataset = dataset;
  loader->device = device;
  loader->batch_size = o.batch_size;
  loader->count = dataset->count;
  loader->batch_count = batch_count;
  loader->numel = dataset->numel;
  loader->capacity_rows = capacity_rows;
  loader->seed = o.seed;
  loader->shuffle = o.shuffle != 0;
  loader->drop_last = o.drop_last != 0;
  loader->prefetch = o.prefetch != 0;
  loader->batch_rank = dataset->rank + 1;
  for (int32_t d = 0; d < dataset->rank; ++d) loader->batch_sizes[d + 1] = dataset->sizes[d];
  loader->perm_epoch = -1;
  // Every buffer is allocated here: drawing a batch allocates no host memory.
  loader->perm = malloc((size_t)loader->count * sizeof(int64_t));
  int ok = loader->perm != NULL;
  int slots = loader->prefetch ? LOADER_SLOTS : 1;
  for (int s = 0; s < slots && ok; ++s) {
    size_t floats = (size_t)capacity_rows * (size_t)loader->numel;
    loader->slots[s].features = malloc((floats > 0 ? floats : 1) * sizeof(float));
    loader->slots[s].labels = malloc((size_t)capacity_rows * sizeof(int64_t));
    ok = loader->slots[s].features != NULL && loader->slots[s].labels != NULL;
  }
  if (!ok) {
    tsr_loader_destroy(loader);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate the batch buffers", what);
  }
  if (pthread_mutex_init(&loader->mutex, NULL) != 0) {
    tsr_loader_destroy(loader);
    return tsr_error_set(TSR_INTERNAL, "%s: pthread_mutex_init failed", what);
  }
  if (pthread_cond_init(&loader->cond, NULL) != 0) {
    pthread_mutex_destroy(&loader->mutex);
    tsr_loader_destroy(loader);
    return tsr_error_set(TSR_INTERNAL, "%s: pthread_cond_init failed", what);
  }
  loader->thread_started = -1;  // mutex and cond exist
  if (loader->prefetch) {
    int rc = pthread_create(&loader->thread, NULL, producer_main, loader);
    if (rc != 0) {
      tsr_loader_destroy(loader);
      return tsr_error_set(TSR_UNAVAILABLE, "%s: cannot start the prefetch thread (error %d)", what,
                           rc);
    }
    loader->thread_started = 1;
  }
  *out_loader = loader;
  return TSR_OK;
}

void tsr_loader_destroy(tsr_loader *loader) {
  if (loader == NULL)
    return;
  if (loader->thread_started != 0) {
    if (loader->thread_started > 0) {
      pthread_mutex_lock(&loader->mutex);
      loader->stop = 1;
      pthread_cond_broadcast(&loader->cond);
      pthread_mutex_unlock(&loader->mutex);
      pthread_join(loader->thread, NULL);
    }
    pthread_cond_destroy(&loader->cond);
    pthread_mutex_destroy(&loader->mutex);
  }
  for (int s = 0; s < LOADER_SLOTS; ++s) {
    free(loader->slots[s].features);
    free(loader->slots[s].labels);
  }
  free(loader->perm);
  free(loader);
}

// Turns the host batch in |slot| into new tensors on the caller's thread.
static tsr_status batch_upload(tsr_loader *loader, const loader_slot *slot,
                               tsr_tensor **out_features, tsr_tensor **out_labels) {
  int64_t sizes[TSR_MAX_RANK];
  memcpy(sizes, loader->batch_sizes, sizeof(sizes));
  sizes[0] = slot->rows;
  tsr_tensor *features =
      tsr_tensor_from_host(loader->device, TSR_FLOAT32, loader->batch_rank, sizes, slot->features);
  if (features == NULL)
    return tsr_error_prefix("loader_next: features");
  tsr_tensor *labels = tsr_tensor_from_host(loader->device, TSR_INT64, 1, sizes, slot->labels);
  if (labels == NULL) {
    tsr_status status = tsr_error_prefix("loader_next: labels");
    tsr_tensor_release(features);
    tsr_error_set(status, "%s", tsr_error_message());
    return status;
  }
  *out_features = features;
  *out_labels = labels;
  return TSR_OK;
}

tsr_status tsr_loader_next(tsr_loader *loader, tsr_tensor **out_features, tsr_tensor **out_labels) {
  const char *what = "loader_next";
  if (out_features != NULL)
    *out_features = NULL;
  if (out_labels != NULL)
    *out_labels = NULL;
  if (loader == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: loader is NULL", what);
  if (out_features == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_features is NULL", what);
  }
  if (out_labels == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_labels is NULL", what);
  if (loader->position >= loader->batch_count) {
    // The producer has already moved on to the next epoch's first batch.
    ++loader->epoch;
    loader->position = 0;
    return tsr_error_set(TSR_NOT_FOUND, "%s: epoch %lld is exhausted after %lld batches", what,
                         (long long)loader->epoch - 1, (long long)loader->batch_count);
  }
  if (!loader->prefetch) {
    loader_slot *slot = &loader->slots[0];
    tsr_status status = batch_fill(loader, slot, loader->epoch, loader->position);
    if (status != TSR_OK)
      return tsr_error_set(status, "%s: %s", what, slot->message);
    TSR_RETURN_IF_ERROR(batch_upload(loader, slot, out_features, out_labels));
    ++loader->position;
    return TSR_OK;
  }
  pthread_mutex_lock(&loader->mutex);
  if (loader->paused) {
    loader->paused = 0;
    pthread_cond_broadcast(&loader->cond);
  }
  loader_slot *slot = &loader->slots[loader->take_seq % LOADER_SLOTS];
  while (slot->state != SLOT_READY) pthread_cond_wait(&loader->cond, &loader->mutex);
  slot->state = SLOT_TAKEN;
  pthread_mutex_unlock(&loader->mutex);
  tsr_status status;
  if (slot->epoch != loader->epoch || slot->position != loader->position) {
    status = tsr_error_set(TSR_INTERNAL,
                           "%s: the prefetched batch is %lld of epoch %lld, expected %lld of "
                           "epoch %lld",
                           what, (long long)slot->position, (long long)slot->epoch,
                           (long long)loader->position, (long long)loader->epoch);
  } else if (slot->status != TSR_OK) {
    status = tsr_error_set(slot->status, "%s: %s", what, slot->message);
  } else {
    status = batch_upload(loader, slot, out_features, out_labels);
  }
  if (status != TSR_OK) {
    // The batch is not consumed: the next call prepares it again.
    producer_reset(loader, 1);
    return status;
  }
  pthread_mutex_lock(&loader->mutex);
  slot->state = SLOT_FREE;
  ++loader->take_seq;
  pthread_cond_broadcast(&loader->cond);
  pthread_mutex_unlock(&loader->mutex);
  ++loader->position;
  return TSR_OK;
}

int64_t tsr_loader_batch_count(const tsr_loader *loader) {
  if (loader == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "loader_batch_count: loader is NULL");
    return -1;
  }
  return loader->batch_count;
}

int64_t tsr_loader_epoch(const tsr_loader *loader) {
  if (loader == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "loader_epoch: loader is NULL");
    return -1;
  }
  return loader->epoch;
}

int64_t tsr_loader_position(const tsr_loader *loader) {
  if (loader == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "loader_position: loader is NULL");
    return -1;
  }
  return loader->position;
}

tsr_status tsr_loader_seek(tsr_loader *loader, int64_t epoch, int64_t position) {
  const char *what = "loader_seek";
  if (loader == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: loader is NULL", what);
  if (epoch < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: epoch is %lld; it must be >= 0", what,
                         (long long)epoch);
  }
  if (position < 0 || position > loader->batch_count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: position is %lld, outside 0..%lld", what,
                         (long long)position, (long long)loader->batch_count);
  }
  loader->epoch = epoch;
  loader->position = position;
  if (loader->prefetch)
    producer_reset(loader, 0);
  return TSR_OK;
}
