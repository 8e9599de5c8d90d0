// Datasets: the object both kinds share, callback datasets, and access to
// one example.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"
#include "error.h"

tsr_status tsr_dataset_callback_create(int64_t count, int32_t rank, const int64_t *example_sizes,
                                       tsr_dataset_get_fn get, void *user,
                                       tsr_dataset **out_dataset) {
  const char *what = "dataset_callback_create";
  if (out_dataset == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_dataset is NULL", what);
  }
  *out_dataset = NULL;
  if (get == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: get is NULL", what);
  if (count < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: count is %lld; it must be >= 0", what,
                         (long long)count);
  }
  // A batch adds a leading dimension, which must still fit in TSR_MAX_RANK.
  if (rank < 0 || rank > TSR_MAX_RANK - 1) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: rank is %d; it must be 0..%d (a batch adds a dimension)", what, rank,
                         TSR_MAX_RANK - 1);
  }
  if (rank > 0 && example_sizes == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: example_sizes is NULL with rank %d", what,
                         rank);
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < rank; ++d) {
    int64_t s = example_sizes[d];
    if (s < 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: example_sizes[%d] is %lld", what, d,
                           (long long)s);
    }
    if (s != 0 && numel > INT64_MAX / (int64_t)sizeof(float) / s) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: example_sizes overflow at dim %d (%lld)",
                           what, d, (long long)s);
    }
    numel *= s;
  }
  tsr_dataset *dataset = calloc(1, sizeof(*dataset));
  if (dataset == NULL) {
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate the dataset", what);
  }
  dataset->kind = TSR_DATASET_CALLBACK;
  dataset->count = count;
  dataset->rank = rank;
  for (int32_t d = 0; d < rank; ++d) dataset->sizes[d] = example_sizes[d];
  dataset->numel = numel;
  dataset->get = get;
  dataset->user = user;
  *out_dataset = dataset;
  return TSR_OK;
}

void tsr_dataset_destroy(tsr_dataset *dataset) {
  if (dataset == NULL)
    return;
  free(dataset->pixel_buffer);
  free(dataset->label_buffer);
  free(dataset);
}

int64_t tsr_dataset_size(const tsr_dataset *dataset) {
  if (dataset == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "dataset_size: dataset is NULL");
    return -1;
  }
  return dataset->count;
}

int32_t tsr_dataset_example_rank(const tsr_dataset *dataset) {
  if (dataset == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "dataset_example_rank: dataset is NULL");
    return -1;
  }
  return dataset->rank;
}

const int64_t *tsr_dataset_example_sizes(const tsr_dataset *dataset) {
  if (dataset == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "dataset_example_sizes: dataset is NULL");
    return NULL;
  }
  return dataset->sizes;
}

tsr_status tsr_dataset_get(const tsr_dataset *dataset, int64_t index, float *out_features,
                           int64_t *out_label) {
  const char *what = "dataset_get";
  if (dataset == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: dataset is NULL", what);
  if (out_features == NULL && dataset->numel > 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_features is NULL", what);
  }
  if (out_label == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_label is NULL", what);
  if (index < 0 || index >= dataset->count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: index %lld is outside 0..%lld", what,
                         (long long)index, (long long)dataset->count - 1);
  }
  if (dataset->kind == TSR_DATASET_IDX) {
    const uint8_t *p = dataset->pixels + (size_t)index * (size_t)dataset->numel;
    for (int64_t i = 0; i < dataset->numel; ++i) out_features[i] = dataset->table[p[i]];
    *out_label = dataset->labels[index];
    return TSR_OK;
  }
  tsr_error_clear();
  tsr_status status = dataset->get(dataset->user, index, out_features, out_label);
  if (status != TSR_OK) {
    // The callback may have set a message through the SDK; keep it.
    const char *message = tsr_error_message();
    if (message[0] != '\0') {
      return tsr_error_set(status, "%s: the callback failed on example %lld (%s): %s", what,
                           (long long)index, tsr_status_name(status), message);
    }
    return tsr_error_set(status, "%s: the callback failed on example %lld (%s)", what,
                         (long long)index, tsr_status_name(status));
  }
  return TSR_OK;
}
