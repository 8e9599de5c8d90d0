// Fuzz target for the NumPy parsers (sdk/io/npy_parse.c): the input is parsed
// as a .npy image and as a .npz (zip) image. Every input must either parse
// into arrays whose data lies inside the buffer it came from, or fail with a
// message; never crash, leak, hang or read out of bounds.
//
// The parser is compiled into this target, so the fuzzer's coverage and
// sanitizers see it. zlib comes through fuzz_zlib.h.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_zlib.h"

#define TSR_NPY_ZLIB(name) fuzz_##name
#include "io/npy_parse.c"

static void check_array(const tsr_npy_array *a, const uint8_t *base, size_t size) {
  if (a->rank < 0 || a->rank > TSR_MAX_RANK || a->numel < 0)
    abort();
  uint64_t numel = 1;
  for (int32_t d = 0; d < a->rank; ++d) numel *= (uint64_t)a->sizes[d];
  uint64_t item = a->u8 ? 1 : tsr_dtype_size(a->dtype);
  if (numel != (uint64_t)a->numel || item == 0 || numel * item != a->bytes)
    abort();
  if (a->data < base || a->data + a->bytes != base + size)
    abort();
  volatile uint8_t sink = 0;
  for (uint64_t k = 0; k < a->bytes; k += 4096) sink ^= a->data[k];
  if (a->bytes > 0)
    sink ^= a->data[a->bytes - 1];
  (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char error[512];
  tsr_npy_array array;
  if (tsr_npy_parse(data, size, &array, error, sizeof(error)) != 0) {
    if (error[0] == '\0')
      abort();  // every failure says why
  } else {
    check_array(&array, data, size);
  }
  tsr_npz_archive archive;
  if (tsr_npz_parse(data, size, &archive, error, sizeof(error)) != 0) {
    if (error[0] == '\0' || archive.members != NULL || archive.count != 0)
      abort();
    return 0;
  }
  for (int32_t i = 0; i < archive.count; ++i) {
    const tsr_npz_member *m = &archive.members[i];
    if (m->name == NULL)
      abort();
    check_array(&m->array, m->image, m->image_size);
  }
  tsr_npz_archive_free(&archive);
  return 0;
}
