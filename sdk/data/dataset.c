// Datasets: the object both kinds share, callback datasets, and access to
// one example.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"
#include "tessera/core_layer.h"

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
  for (int32_t f = 0; f < dataset->field_count; ++f) free(dataset->fields[f].data);
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
  if (dataset->kind == TSR_DATASET_TENSORS) {
    if (dataset->field_count != 2 || dataset->fields[0].dtype != TSR_FLOAT32 ||
        dataset->fields[1].dtype != TSR_INT64 || dataset->fields[1].rank != 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: this dataset's %d fields are not (float32 features, scalar int64 "
                           "label); draw it with tsr_loader_next_fields",
                           what, dataset->field_count);
    }
    void *fields[2] = {out_features, out_label};
    return tsr_dataset_example_read(dataset, index, fields);
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

// --- datasets of several fields ------------------------------------------------------

tsr_status tsr_dataset_from_tensors(int32_t count, tsr_tensor *const *tensors,
                                    tsr_dataset **out_dataset) {
  const char *what = "dataset_from_tensors";
  if (out_dataset == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_dataset is NULL", what);
  *out_dataset = NULL;
  if (count < 1 || count > TSR_DATASET_MAX_FIELDS) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: count is %d; it must be 1..%d", what, count,
                         TSR_DATASET_MAX_FIELDS);
  }
  if (tensors == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: tensors is NULL", what);
  int64_t n = -1;
  for (int32_t f = 0; f < count; ++f) {
    const tsr_tensor *t = tensors[f];
    if (t == NULL)
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: tensors[%d] is NULL", what, f);
    int32_t rank = tsr_tensor_rank(t);
    if (rank < 1) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: tensors[%d] is a scalar; its first dimension must index examples",
                           what, f);
    }
    int64_t rows = tsr_tensor_sizes(t)[0];
    if (n >= 0 && rows != n) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: tensors[%d] has %lld examples, tensors[0] has %lld", what, f,
                           (long long)rows, (long long)n);
    }
    n = rows;
    if (tsr_dtype_size(tsr_tensor_dtype(t)) == 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: tensors[%d] has unknown dtype %d", what, f,
                           (int)tsr_tensor_dtype(t));
    }
  }
  if (n < 1)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: the tensors hold no example", what);
  tsr_dataset *dataset = calloc(1, sizeof(*dataset));
  if (dataset == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate the dataset", what);
  dataset->kind = TSR_DATASET_TENSORS;
  dataset->count = n;
  dataset->field_count = count;
  tsr_status status = TSR_OK;
  for (int32_t f = 0; f < count; ++f) {
    const tsr_tensor *t = tensors[f];
    tsr_dataset_field *field = &dataset->fields[f];
    field->dtype = tsr_tensor_dtype(t);
    field->rank = tsr_tensor_rank(t) - 1;
    size_t bytes = tsr_dtype_size(field->dtype);
    for (int32_t d = 0; d < field->rank; ++d) {
      field->sizes[d] = tsr_tensor_sizes(t)[d + 1];
      bytes *= (size_t)field->sizes[d];  // the tensor exists: no overflow
    }
    field->example_bytes = bytes;
    size_t total = bytes * (size_t)n;
    field->data = malloc(total ? total : 1);
    if (field->data == NULL) {
      status = tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory for %zu bytes of tensors[%d]",
                             what, total, f);
      break;
    }
    status = tsr_tensor_to_host(t, field->data, total);
    if (status != TSR_OK) {
      status = tsr_error_set(status, "%s: tensors[%d]: %s", what, f, tsr_error_message());
      break;
    }
  }
  if (status != TSR_OK) {
    tsr_dataset_destroy(dataset);
    return status;
  }
  // The (features, label) view of tsr_dataset_example_rank/sizes: field 0.
  dataset->rank = dataset->fields[0].rank;
  for (int32_t d = 0; d < dataset->rank; ++d) dataset->sizes[d] = dataset->fields[0].sizes[d];
  dataset->numel = (int64_t)(dataset->fields[0].example_bytes / tsr_dtype_size(dataset->fields[0].dtype));
  *out_dataset = dataset;
  return TSR_OK;
}

int32_t tsr_dataset_field_count(const tsr_dataset *dataset) {
  if (dataset == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "dataset_field_count: dataset is NULL");
    return -1;
  }
  return dataset->kind == TSR_DATASET_TENSORS ? dataset->field_count : 2;
}

void tsr_dataset_field_describe(const tsr_dataset *dataset, int32_t field, tsr_dataset_field *out) {
  if (dataset->kind == TSR_DATASET_TENSORS) {
    *out = dataset->fields[field];
    return;
  }
  memset(out, 0, sizeof(*out));
  if (field == 0) {
    out->dtype = TSR_FLOAT32;
    out->rank = dataset->rank;
    for (int32_t d = 0; d < dataset->rank; ++d) out->sizes[d] = dataset->sizes[d];
    out->example_bytes = (size_t)dataset->numel * sizeof(float);
  } else {
    out->dtype = TSR_INT64;
    out->example_bytes = sizeof(int64_t);
  }
}

tsr_status tsr_dataset_field_get(const tsr_dataset *dataset, int32_t field, tsr_dtype_t *out_dtype,
                                 int32_t *out_rank, const int64_t **out_sizes) {
  const char *what = "dataset_field_get";
  if (dataset == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: dataset is NULL", what);
  int32_t count = tsr_dataset_field_count(dataset);
  if (field < 0 || field >= count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: field %d is outside [0, %d)", what, field,
                         count);
  }
  static const int64_t no_sizes[TSR_MAX_RANK];
  const tsr_dataset_field *f = dataset->kind == TSR_DATASET_TENSORS ? &dataset->fields[field] : NULL;
  if (out_dtype != NULL)
    *out_dtype = f ? f->dtype : field == 0 ? TSR_FLOAT32 : TSR_INT64;
  if (out_rank != NULL)
    *out_rank = f ? f->rank : field == 0 ? dataset->rank : 0;
  if (out_sizes != NULL)
    *out_sizes = f ? f->sizes : field == 0 ? dataset->sizes : no_sizes;
  return TSR_OK;
}

tsr_status tsr_dataset_example_read(const tsr_dataset *dataset, int64_t index,
                                    void *const *out_fields) {
  if (dataset->kind != TSR_DATASET_TENSORS)
    return tsr_dataset_get(dataset, index, out_fields[0], out_fields[1]);
  if (index < 0 || index >= dataset->count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "dataset_get: index %lld is outside 0..%lld",
                         (long long)index, (long long)dataset->count - 1);
  }
  for (int32_t f = 0; f < dataset->field_count; ++f) {
    const tsr_dataset_field *field = &dataset->fields[f];
    memcpy(out_fields[f], field->data + (size_t)index * field->example_bytes, field->example_bytes);
  }
  return TSR_OK;
}
