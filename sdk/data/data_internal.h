// Internal: the dataset object shared by the IDX reader, callback datasets
// and the loader.
#ifndef TESSERA_SDK_DATA_DATA_INTERNAL_H_
#define TESSERA_SDK_DATA_DATA_INTERNAL_H_

#include <stdint.h>

#include "tessera/tessera.h"

enum { TSR_DATASET_IDX = 0, TSR_DATASET_CALLBACK = 1 };

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
};

#endif  // TESSERA_SDK_DATA_DATA_INTERNAL_H_
