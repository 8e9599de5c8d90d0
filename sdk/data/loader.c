// Batch loaders: a seeded permutation per epoch, batches cut from it in
// order, and producer threads (workers) that fill host buffers ahead of the
// caller, each a whole batch at a time, delivered in order.
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
#include <unistd.h>

#include "data_internal.h"
#include "tessera/core_layer.h"

enum { SLOT_FREE = 0, SLOT_FILLING = 1, SLOT_READY = 2, SLOT_TAKEN = 3 };
// The most workers a loader runs; more than the online CPUs are clamped too.
enum { LOADER_MAX_WORKERS = 64 };

typedef struct loader_slot {
  uint8_t *fields[TSR_DATASET_MAX_FIELDS];  // [capacity rows, field's example]
  int64_t epoch, position, rows;
  int state;
  tsr_status status;  // of the fill
  char message[768];
} loader_slot;

// What one filling thread owns: its copy of the epoch's permutation and the
// buffers it reads and transforms an example in.
typedef struct loader_worker {
  tsr_loader *loader;
  pthread_t thread;
  int started;
  int64_t *perm;
  int64_t perm_epoch;
  uint8_t *scratch[2][TSR_DATASET_MAX_FIELDS];
} loader_worker;

struct tsr_loader {
  tsr_dataset *dataset;
  tsr_device *device;
  int64_t batch_size, count, batch_count, numel, capacity_rows;
  uint64_t seed;
  int shuffle, drop_last, prefetch;
  // Filling threads (0 without prefetch: the caller fills with workers[0]'s
  // buffers) and the ring of batches, workers + 1 of them (2 at least).
  int32_t worker_count;
  loader_worker *workers;
  int32_t slot_count;
  loader_slot *slots;
  int serialize_reads;          // a callback dataset: one read at a time
  pthread_mutex_t read_mutex;
  // One example of each field as a batch holds it (after the transforms).
  int32_t field_count;
  tsr_dataset_field fields[TSR_DATASET_MAX_FIELDS];
  tsr_loader_transform *transforms;
  uint32_t transform_count;
  // The caller's cursor: the next batch tsr_loader_next returns.
  int64_t epoch, position;
  // Shared with the workers, under |mutex|.
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int thread_started;  // 0: no mutex yet; -1: mutex and cond; 1: workers too
  int stop;
  int error_pending;                  // a failed fill waits for the caller; produce nothing more
  int paused;                         // after a failure: produce again when the caller asks
  uint64_t generation;                // bumped by every reset; a fill of an older one is dropped
  uint64_t fill_seq, take_seq;        // batches claimed / taken since the last reset
  int64_t fill_epoch, fill_position;  // the next batch a worker claims
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

// Fills |slot| with batch |position| of |epoch| using |worker|'s buffers.
// Runs on a worker (or the caller's thread without prefetch); writes the
// error into the slot. The batch depends on (seed, epoch, position) only,
// never on which worker fills it.
static tsr_status batch_fill(tsr_loader *loader, loader_worker *worker, loader_slot *slot,
                             int64_t epoch, int64_t position) {
  if (worker->perm_epoch != epoch) {
    permutation_fill(worker->perm, loader->count, loader->seed, epoch, loader->shuffle);
    worker->perm_epoch = epoch;
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
    int64_t index = worker->perm[first + r];
    void *example[TSR_DATASET_MAX_FIELDS];
    float *current[TSR_DATASET_MAX_FIELDS], *spare[TSR_DATASET_MAX_FIELDS];
    for (int32_t f = 0; f < loader->field_count; ++f) {
      example[f] = loader->transform_count ? (void *)worker->scratch[0][f]
                                           : (void *)(slot->fields[f] +
                                                      (size_t)r * loader->fields[f].example_bytes);
      current[f] = (float *)(void *)worker->scratch[0][f];
      spare[f] = (float *)(void *)worker->scratch[1][f];
    }
    if (loader->serialize_reads)
      pthread_mutex_lock(&loader->read_mutex);
    tsr_status status = tsr_dataset_example_read(loader->dataset, index, example);
    if (loader->serialize_reads)
      pthread_mutex_unlock(&loader->read_mutex);
    if (status == TSR_OK && loader->transform_count) {
      tsr_transforms_apply(loader->transforms, loader->transform_count, loader->seed, epoch, index,
                           current, spare);
      for (int32_t f = 0; f < loader->field_count; ++f) {
        size_t bytes = loader->fields[f].example_bytes;
        memcpy(slot->fields[f] + (size_t)r * bytes, current[f], bytes);
      }
    }
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

// A worker: claims the next batch (the ring's next slot must be free: the
// queue is bounded by the slot count), fills it without the lock, marks it
// ready. Batches complete in any order; the caller takes them in order.
static void *producer_main(void *arg) {
  loader_worker *worker = arg;
  tsr_loader *loader = worker->loader;
  pthread_mutex_lock(&loader->mutex);
  while (!loader->stop) {
    loader_slot *slot = &loader->slots[loader->fill_seq % (uint64_t)loader->slot_count];
    if (slot->state != SLOT_FREE || loader->error_pending || loader->paused) {
      pthread_cond_wait(&loader->cond, &loader->mutex);
      continue;
    }
    int64_t epoch = loader->fill_epoch, position = loader->fill_position;
    uint64_t generation = loader->generation;
    slot->state = SLOT_FILLING;
    ++loader->fill_seq;
    cursor_advance(loader, &loader->fill_epoch, &loader->fill_position);
    pthread_mutex_unlock(&loader->mutex);
    tsr_status status = batch_fill(loader, worker, slot, epoch, position);
    pthread_mutex_lock(&loader->mutex);
    if (generation != loader->generation) {
      slot->state = SLOT_FREE;  // a seek or a failure made this batch stale
      pthread_cond_broadcast(&loader->cond);
      continue;
    }
    slot->state = SLOT_READY;
    if (status != TSR_OK)
      loader->error_pending = 1;  // claim nothing more until the caller has seen it
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
  for (int32_t s = 0; s < loader->slot_count; ++s) {
    // A slot being filled is freed by its worker when it sees the new generation.
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
  options->workers = 1;
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
  if (o.workers > 1 && !o.prefetch) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: options->workers is %u and prefetch is 0; workers fill batches in "
                         "the background, which needs prefetch",
                         what, o.workers);
  }
  int32_t worker_count = !o.prefetch ? 0 : o.workers > 1 ? (int32_t)o.workers : 1;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus >= 1 && worker_count > cpus)
    worker_count = (int32_t)cpus;
  if (worker_count > LOADER_MAX_WORKERS)
    worker_count = LOADER_MAX_WORKERS;
  int64_t capacity_rows = o.batch_size < dataset->count ? o.batch_size : dataset->count;
  tsr_loader *loader = calloc(1, sizeof(*loader));
  if (loader == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate", what);
  loader->field_count = tsr_dataset_field_count(dataset);
  for (int32_t f = 0; f < loader->field_count; ++f)
    tsr_dataset_field_describe(dataset, f, &loader->fields[f]);
  size_t scratch_bytes[TSR_DATASET_MAX_FIELDS];
  tsr_status prepared =
      tsr_transforms_prepare(o.transforms, o.transform_count, loader->field_count, loader->fields,
                             scratch_bytes, &loader->transforms);
  if (prepared != TSR_OK) {
    free(loader);
    return prepared;
  }
  loader->transform_count = loader->transforms ? o.transform_count : 0;
  for (int32_t f = 0; f < loader->field_count; ++f) {
    size_t bytes = loader->fields[f].example_bytes;
    if (bytes > 0 && (uint64_t)capacity_rows > (SIZE_MAX / 2) / bytes) {
      tsr_transforms_free(loader->transforms, loader->transform_count);
      free(loader);
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: batch_size %lld of %zu-byte examples (field %d) is too large",
                           what, (long long)o.batch_size, bytes, f);
    }
  }
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
  loader->worker_count = worker_count;
  loader->slot_count = loader->prefetch ? worker_count + 1 : 1;
  loader->serialize_reads = worker_count > 1 && dataset->kind == TSR_DATASET_CALLBACK;
  // Every buffer is allocated here: drawing a batch allocates no host memory.
  int32_t owners = worker_count > 0 ? worker_count : 1;  // the caller fills with workers[0]
  loader->workers = calloc((size_t)owners, sizeof(*loader->workers));
  loader->slots = calloc((size_t)loader->slot_count, sizeof(*loader->slots));
  int ok = loader->workers != NULL && loader->slots != NULL;
  for (int32_t w = 0; w < owners && ok; ++w) {
    loader_worker *worker = &loader->workers[w];
    worker->loader = loader;
    worker->perm_epoch = -1;
    worker->perm = malloc((size_t)loader->count * sizeof(int64_t));
    ok = worker->perm != NULL;
    for (int32_t f = 0; f < loader->field_count && ok && loader->transform_count; ++f) {
      for (int k = 0; k < 2 && ok; ++k) {
        worker->scratch[k][f] = malloc(scratch_bytes[f] > 0 ? scratch_bytes[f] : 1);
        ok = worker->scratch[k][f] != NULL;
      }
    }
  }
  for (int32_t s = 0; s < loader->slot_count && ok; ++s) {
    for (int32_t f = 0; f < loader->field_count && ok; ++f) {
      size_t bytes = (size_t)capacity_rows * loader->fields[f].example_bytes;
      loader->slots[s].fields[f] = malloc(bytes > 0 ? bytes : 1);
      ok = loader->slots[s].fields[f] != NULL;
    }
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
  if (pthread_mutex_init(&loader->read_mutex, NULL) != 0) {
    pthread_cond_destroy(&loader->cond);
    pthread_mutex_destroy(&loader->mutex);
    tsr_loader_destroy(loader);
    return tsr_error_set(TSR_INTERNAL, "%s: pthread_mutex_init failed", what);
  }
  loader->thread_started = -1;  // mutexes and cond exist
  for (int32_t w = 0; w < worker_count; ++w) {
    int rc = pthread_create(&loader->workers[w].thread, NULL, producer_main, &loader->workers[w]);
    if (rc != 0) {
      tsr_loader_destroy(loader);  // joins the workers already started
      return tsr_error_set(TSR_UNAVAILABLE, "%s: cannot start loader worker %d of %d (error %d)",
                           what, w, worker_count, rc);
    }
    loader->workers[w].started = 1;
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
      // Mid-epoch too: each worker finishes the batch it is filling, sees
      // |stop| and returns; nothing is handed to the caller any more.
      pthread_mutex_lock(&loader->mutex);
      loader->stop = 1;
      pthread_cond_broadcast(&loader->cond);
      pthread_mutex_unlock(&loader->mutex);
      for (int32_t w = 0; w < loader->worker_count; ++w) {
        if (loader->workers[w].started)
          pthread_join(loader->workers[w].thread, NULL);
      }
    }
    pthread_mutex_destroy(&loader->read_mutex);
    pthread_cond_destroy(&loader->cond);
    pthread_mutex_destroy(&loader->mutex);
  }
  for (int32_t s = 0; loader->slots != NULL && s < loader->slot_count; ++s) {
    for (int32_t f = 0; f < TSR_DATASET_MAX_FIELDS; ++f) free(loader->slots[s].fields[f]);
  }
  int32_t owners = loader->worker_count > 0 ? loader->worker_count : 1;
  for (int32_t w = 0; loader->workers != NULL && w < owners; ++w) {
    for (int32_t f = 0; f < TSR_DATASET_MAX_FIELDS; ++f) {
      free(loader->workers[w].scratch[0][f]);
      free(loader->workers[w].scratch[1][f]);
    }
    free(loader->workers[w].perm);
  }
  free(loader->slots);
  free(loader->workers);
  tsr_transforms_free(loader->transforms, loader->transform_count);
  free(loader);
}

// Turns the host batch in |slot| into |count| new tensors on the caller's
// thread; on failure none is returned.
static tsr_status batch_upload(tsr_loader *loader, const loader_slot *slot, int32_t count,
                               tsr_tensor **out) {
  for (int32_t f = 0; f < count; ++f) {
    const tsr_dataset_field *field = &loader->fields[f];
    int64_t sizes[TSR_MAX_RANK];
    sizes[0] = slot->rows;
    for (int32_t d = 0; d < field->rank; ++d) sizes[d + 1] = field->sizes[d];
    out[f] = tsr_tensor_from_host(loader->device, field->dtype, field->rank + 1, sizes,
                                  slot->fields[f]);
    if (out[f] == NULL) {
      tsr_status status = tsr_error_prefix(count == 2 && f == 0   ? "loader_next: features"
                                           : count == 2 && f == 1 ? "loader_next: labels"
                                                                  : "loader_next_fields: a field");
      char message[768];
      snprintf(message, sizeof(message), "%s", tsr_error_message());
      for (int32_t g = 0; g < f; ++g) {
        tsr_tensor_release(out[g]);
        out[g] = NULL;
      }
      tsr_error_set(status, "%s", message);
      return status;
    }
  }
  return TSR_OK;
}

static tsr_status loader_take(tsr_loader *loader, const char *what, int32_t count,
                              tsr_tensor **out);

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
  if (loader->field_count != 2) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: the dataset has %d fields; draw it with tsr_loader_next_fields", what,
                         loader->field_count);
  }
  tsr_tensor *out[2] = {NULL, NULL};
  TSR_RETURN_IF_ERROR(loader_take(loader, what, 2, out));
  *out_features = out[0];
  *out_labels = out[1];
  return TSR_OK;
}

tsr_status tsr_loader_next_fields(tsr_loader *loader, int32_t count, tsr_tensor **out_tensors) {
  const char *what = "loader_next_fields";
  if (loader == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: loader is NULL", what);
  if (out_tensors == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_tensors is NULL", what);
  if (count != loader->field_count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: count is %d; the dataset has %d fields", what,
                         count, loader->field_count);
  }
  for (int32_t f = 0; f < count; ++f) out_tensors[f] = NULL;
  return loader_take(loader, what, count, out_tensors);
}

// The next batch into |out| (|count| fields), or TSR_NOT_FOUND at the end
// of an epoch.
static tsr_status loader_take(tsr_loader *loader, const char *what, int32_t count,
                              tsr_tensor **out) {
  if (loader->position >= loader->batch_count) {
    // The producer has already moved on to the next epoch's first batch.
    ++loader->epoch;
    loader->position = 0;
    return tsr_error_set(TSR_NOT_FOUND, "%s: epoch %lld is exhausted after %lld batches", what,
                         (long long)loader->epoch - 1, (long long)loader->batch_count);
  }
  if (!loader->prefetch) {
    loader_slot *slot = &loader->slots[0];
    tsr_status status = batch_fill(loader, &loader->workers[0], slot, loader->epoch,
                                   loader->position);
    if (status != TSR_OK)
      return tsr_error_set(status, "%s: %s", what, slot->message);
    TSR_RETURN_IF_ERROR(batch_upload(loader, slot, count, out));
    ++loader->position;
    return TSR_OK;
  }
  pthread_mutex_lock(&loader->mutex);
  if (loader->paused) {
    loader->paused = 0;
    pthread_cond_broadcast(&loader->cond);
  }
  loader_slot *slot = &loader->slots[loader->take_seq % (uint64_t)loader->slot_count];
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
    status = batch_upload(loader, slot, count, out);
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
