// Internal: the IDX file format (MNIST's), raw or gzip, parsed from memory.
//
// The parser depends on libc and zlib only, not on the runtime, so that
// fuzz/fuzz_idx.c can compile it into the fuzzer (coverage and sanitizers
// then reach it; libtessera itself is not instrumented). Errors are written to
// a caller buffer; sdk/data/idx.c turns them into the thread's last error.
#ifndef TESSERA_SDK_DATA_IDX_PARSE_H_
#define TESSERA_SDK_DATA_IDX_PARSE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"

enum {
  TSR_IDX_MAGIC_LABELS = 0x00000801u,  // uint8 [N]
  TSR_IDX_MAGIC_IMAGES = 0x00000803u,  // uint8 [N, rows, cols]
};

typedef struct tsr_idx_array {
  uint8_t *buffer;      // owned: the whole decompressed file
  const uint8_t *data;  // the first element, inside |buffer|
  int32_t rank;         // 1 (labels) or 3 (images)
  int64_t dims[3];      // dims[0] is the number of examples
  size_t item_bytes;    // bytes of one example: the product of dims[1..]
} tsr_idx_array;

// Parses the |size| bytes at |bytes|, an IDX file of |magic| (raw, or gzip
// when it starts with 0x1f 0x8b), into |out_array|. Takes ownership of
// |bytes| (malloc'd; freed on failure or kept as out_array->buffer). On
// failure writes "'<name>': <problem>" to |error| (|error_size| bytes) and
// returns TSR_INVALID_ARGUMENT or TSR_OUT_OF_MEMORY; |out_array| is zeroed.
// Thread-safe.
tsr_status tsr_idx_parse(const char *name, uint8_t *bytes, size_t size, uint32_t magic,
                         tsr_idx_array *out_array, char *error, size_t error_size);
// Frees |array|'s buffer and zeroes it. NULL is ignored.
void tsr_idx_array_free(tsr_idx_array *array);

#endif  // TESSERA_SDK_DATA_IDX_PARSE_H_
