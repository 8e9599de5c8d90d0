// Internal: NumPy .npy and .npz parsing on memory buffers (no I/O, no
// tensors), so that fuzz/fuzz_npy.c can drive it directly.
#ifndef TESSERA_SDK_IO_NPY_PARSE_H_
#define TESSERA_SDK_IO_NPY_PARSE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"

// Largest .npy header accepted (numpy writes well under 4 KiB).
#define TSR_NPY_MAX_HEADER ((size_t)1 << 20)
// Largest member an .npz may inflate to, and the most members it may hold.
#define TSR_NPZ_MAX_MEMBER_BYTES ((uint64_t)1 << 31)
#define TSR_NPZ_MAX_MEMBERS 65535

// A parsed .npy image. |data| points into the parsed buffer: |bytes| bytes
// of the file's dtype. |u8| is set for '|u1', whose values the reader widens
// to |dtype| TSR_INT32.
typedef struct tsr_npy_array {
  tsr_dtype_t dtype;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t numel;
  int u8;
  const uint8_t *data;
  uint64_t bytes;
} tsr_npy_array;

// Parses a whole .npy file image. 0 on success, else -1 with |error| set.
// Thread-safe.
int tsr_npy_parse(const uint8_t *data, size_t size, tsr_npy_array *out, char *error,
                  size_t error_size);

// One member of a .npz: its name (".npy" removed, NUL-terminated, owned by
// the archive) and its inflated .npy image (owned by the archive).
typedef struct tsr_npz_member {
  char *name;
  uint8_t *image;
  size_t image_size;
  tsr_npy_array array;
} tsr_npz_member;

typedef struct tsr_npz_archive {
  int32_t count;
  tsr_npz_member *members;
} tsr_npz_archive;

// Parses a whole .npz (zip) image: every member stored or deflated, its CRC
// checked, inflated to no more than its declared size, and parsed as .npy.
// 0 on success, else -1 with |error| set and nothing to free. Thread-safe.
int tsr_npz_parse(const uint8_t *data, size_t size, tsr_npz_archive *out, char *error,
                  size_t error_size);
// Frees what tsr_npz_parse allocated. Thread-safe.
void tsr_npz_archive_free(tsr_npz_archive *archive);

#endif  // TESSERA_SDK_IO_NPY_PARSE_H_
