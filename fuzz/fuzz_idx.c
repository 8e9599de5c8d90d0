// Fuzz target for the IDX reader (sdk/data/idx_parse.c): the input is parsed
// as an image file and as a label file (raw, or gzip when it starts with
// 0x1f 0x8b), then split in two by its first byte and parsed as an
// image/label pair whose counts are compared, as tsr_dataset_idx_open does.
//
// The parser is compiled into this target, so the fuzzer's coverage and
// sanitizers see it (libtessera is built without them). zlib comes through
// fuzz_zlib.h.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"

#include "fuzz_zlib.h"

#define TSR_IDX_ZLIB(name) fuzz_##name
#include "data/idx_parse.c"

// Parses a copy of |data| (the parser takes ownership of its input) and
// checks what it returns against the bytes it had.
static int parse_one(const uint8_t *data, size_t size, uint32_t magic, tsr_idx_array *out) {
  uint8_t *copy = malloc(size > 0 ? size : 1);
  if (copy == NULL)
    return 0;
  if (size > 0)
    memcpy(copy, data, size);
  char error[512];
  error[0] = '\0';
  tsr_status status = tsr_idx_parse("fuzz-input", copy, size, magic, out, error, sizeof(error));
  if (status != TSR_OK) {
    // Every failure explains itself and names the file.
    if (strncmp(error, "'fuzz-input': ", 14) != 0 || error[14] == '\0')
      abort();
    if (out->buffer != NULL || out->data != NULL)
      abort();
    return 0;
  }
  if (out->rank != (int32_t)(magic & 0xff) || out->data == NULL)
    abort();
  // Touch every byte the parser vouched for: ASan checks they exist.
  size_t total = (size_t)out->dims[0] * out->item_bytes;
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < total; ++i) sink ^= out->data[i];
  (void)sink;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tsr_idx_array a, b;
  if (parse_one(data, size, TSR_IDX_MAGIC_IMAGES, &a))
    tsr_idx_array_free(&a);
  if (parse_one(data, size, TSR_IDX_MAGIC_LABELS, &a))
    tsr_idx_array_free(&a);
  if (size < 1)
    return 0;
  size_t split = 1 + (size_t)data[0] * (size - 1) / 255;
  int images_ok = parse_one(data + 1, split - 1, TSR_IDX_MAGIC_IMAGES, &a);
  int labels_ok = parse_one(data + split, size - split, TSR_IDX_MAGIC_LABELS, &b);
  if (images_ok && labels_ok) {
    volatile int same = a.dims[0] == b.dims[0];
    (void)same;
  }
  if (images_ok)
    tsr_idx_array_free(&a);
  if (labels_ok)
    tsr_idx_array_free(&b);
  // Keep libtessera (and so libz) a dependency of this target.
  tsr_idx_options options;
  tsr_idx_options_init(&options);
  return 0;
}
