// Internal: the dataset object shared by the IDX reader, callback datasets
// and the loader.
#ifndef TESSERA_SDK_DATA_DATA_INTERNAL_H_
#define TESSERA_SDK_DATA_DATA_INTERNAL_H_

#include <stdint.h>

#include "tessera/tessera.h"

enum { TSR_DATASET_IDX = 0, TSR_DATASET_CALLBACK = 1, TSR_DATASET_TENSORS = 2 };

// One field of a TSR_DATASET_TENSORS dataset: the example is the slice
// [index] of |data| (row-major, |example_bytes| bytes).
typedef struct tsr_dataset_field {
  tsr_dtype_t dtype;
  int32_t rank;  // of one example
  int64_t sizes[TSR_MAX_RANK];
  size_t example_bytes;
  uint8_t *data;  // owned: [count, example]
} tsr_dataset_field;

struct tsr_dataset {
  int32_t kind;
  int64_t count;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t numel;  // elements of one example
  // TSR_DATASET_IDX: uint8 pixels normalised through a table on the way out,
  // so the dataset holds a quarter of the bytes float32 features would take.
  uint8_t *pixel_buffer;  // owned (the decompressed image file)
  const uint8_t *pixels;  // [count, numel], inside pixel_buffer
  uint8_t *label_buffer;  // owned
  const uint8_t *labels;  // [count], inside label_buffer
  float table[256];       // (p / 255 - mean) / std
  // TSR_DATASET_CALLBACK
  tsr_dataset_get_fn get;
  void *user;
  // TSR_DATASET_TENSORS
  int32_t field_count;
  tsr_dataset_field fields[TSR_DATASET_MAX_FIELDS];
};

// Field |field| of |dataset| as a description: IDX and callback datasets
// have two, float32 features of the example sizes and a scalar int64 label.
// Thread-safe.
void tsr_dataset_field_describe(const tsr_dataset *dataset, int32_t field, tsr_dataset_field *out);
// Copies example |index| of every field into |out_fields[f]|. Called by the
// loader's filling thread, one call at a time per dataset.
tsr_status tsr_dataset_example_read(const tsr_dataset *dataset, int64_t index,
                                    void *const *out_fields);

// A transform as the loader keeps it: checked, with the image sizes it
// sees and produces.
typedef struct tsr_loader_transform {
  uint32_t kind;
  int32_t field;
  int64_t c, h, w, out_h, out_w, padding;
  double probability;
  float *scale;  // NORMALIZE: owned; mean[c], then 1 / std[c]
} tsr_loader_transform;

// Checks |transforms| against |fields| (the dataset's), rewrites |fields| to
// what the transforms produce and sets |scratch_bytes[f]| to the largest
// example field f passes through. The list is owned by the caller
// (tsr_transforms_free). Thread-safe.
tsr_status tsr_transforms_prepare(const tsr_transform *transforms, uint32_t count,
                                  int32_t field_count, tsr_dataset_field *fields,
                                  size_t *scratch_bytes, tsr_loader_transform **out_list);
void tsr_transforms_free(tsr_loader_transform *list, uint32_t count);
// Transforms example |index| of |epoch| in place: current[f] holds field
// f's example and spare[f] a buffer of the same capacity; the two are
// swapped when a transform writes into the spare. Random choices depend on
// (seed, epoch, index) only. Called by the filling thread.
void tsr_transforms_apply(const tsr_loader_transform *list, uint32_t count, uint64_t seed,
                          int64_t epoch, int64_t index, float **current, float **spare);

#endif  // TESSERA_SDK_DATA_DATA_INTERNAL_H_
