// Fuzz target for DLPack import's checks (sdk/io/dlpack_layout.c): the input
// describes a producer's DLTensor (device, dtype, ndim, shape, strides or
// none, byte_offset). Whatever it says, the check must return a status with
// a reason, or a layout whose reach [lowest, highest] fits; the harness then
// gives the tensor memory spanning exactly that reach, and the gather must
// read only inside it (ASan) and form no overflowing offset (UBSan).
//
// The checker is compiled into this target, so the fuzzer's coverage and
// sanitizers see it.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/dlpack_layout.c"

typedef struct reader {
  const uint8_t *p;
  size_t left;
} reader;

static uint64_t take(reader *r, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) {
    v = (v << 8) | (r->left > 0 ? *r->p : 0);
    if (r->left > 0) {
      ++r->p;
      --r->left;
    }
  }
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.device.device_type = (take(&r, 1) & 7) == 0 ? kDLCUDA : kDLCPU;
  t.dtype.code = (uint8_t)(take(&r, 1) % 8);
  t.dtype.bits = (uint8_t)take(&r, 1);
  t.dtype.lanes = (take(&r, 1) & 15) == 0 ? 2 : 1;
  t.ndim = (int32_t)(take(&r, 1) % 11) - 1;  // -1 .. 9
  int64_t shape[16], strides[16];
  for (int i = 0; i < 16; ++i) {
    // Mostly small sizes, sometimes anything.
    uint64_t s = take(&r, 1);
    shape[i] = (s & 0x80) ? (int64_t)take(&r, 8) : (int64_t)(s & 7);
    uint64_t k = take(&r, 1);
    strides[i] = (k & 0x80) ? (int64_t)take(&r, 8) : (int64_t)(k & 15) - 8;
  }
  t.shape = (take(&r, 1) & 31) == 0 ? NULL : shape;
  t.strides = (take(&r, 1) & 1) ? strides : NULL;
  t.byte_offset = take(&r, 1);
  static char dummy;
  t.data = (take(&r, 1) & 31) == 0 ? NULL : &dummy;

  tsr_dlpack_layout l;
  char why[400];
  why[0] = '\0';
  if (tsr_dlpack_layout_get(&t, &l, why, sizeof(why)) != TSR_OK) {
    if (why[0] == '\0') abort();  // every refusal says why
    return 0;
  }
  if (l.numel == 0) return 0;
  if (l.lowest > 0 || l.highest < 0 || l.highest < l.lowest) abort();
  // Memory spanning exactly the reach, when it is small enough to allocate.
  const uint64_t span = (uint64_t)(l.highest - l.lowest) + 1;
  if (span > ((uint64_t)1 << 20) / l.elem || (uint64_t)l.numel > ((uint64_t)1 << 20) / l.elem) {
    return 0;
  }
  char *memory = malloc(span * l.elem);
  char *out = malloc((size_t)l.numel * l.elem);
  if (memory == NULL || out == NULL) abort();
  memset(memory, 0x5a, span * l.elem);
  tsr_dlpack_gather(memory + (size_t)(-l.lowest) * l.elem, out, &l);
  free(out);
  free(memory);
  return 0;
}
