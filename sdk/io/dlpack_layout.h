// What DLPack import checks of a producer's tensor before it copies one
// byte: kept apart from dlpack.c (which needs a device) so that a fuzz target
// can compile it alone (fuzz/fuzz_dlpack.c).
#ifndef TESSERA_SDK_IO_DLPACK_LAYOUT_H_
#define TESSERA_SDK_IO_DLPACK_LAYOUT_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/dlpack.h"

typedef struct tsr_dlpack_layout {
  tsr_dtype_t dtype;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];  // in elements (the producer's, or row-major)
  int64_t numel;
  size_t elem;                    // bytes per element
  // The element offsets, from data + byte_offset, of the lowest and the
  // highest element the tensor reaches (0 and 0 when it is empty).
  int64_t lowest, highest;
} tsr_dlpack_layout;

// The Tessera dtype of |dl|; 0 when there is none (lanes other than 1 too).
int tsr_dlpack_dtype_from_dl(DLDataType dl, tsr_dtype_t *out);

// Checks |t| and fills |out|: a CPU tensor (TSR_UNSUPPORTED otherwise), a
// dtype Tessera has (TSR_UNSUPPORTED), 0..TSR_MAX_RANK dims with a shape
// (TSR_INVALID_ARGUMENT), sizes >= 0 whose product fits (TSR_INVALID_ARGUMENT),
// a byte count that fits (TSR_OUT_OF_MEMORY), data present for a non-empty
// tensor and strides whose reach fits in 64-bit offsets
// (TSR_INVALID_ARGUMENT). The reason goes to |why| (|why_size| bytes).
// Thread-safe.
tsr_status tsr_dlpack_layout_get(const DLTensor *t, tsr_dlpack_layout *out, char *why,
                                 size_t why_size);

// Copies the |l->numel| elements at |origin| (data + byte_offset) in
// row-major order into |dst|. Reads only elements between |l->lowest| and
// |l->highest|. Thread-safe for distinct |dst|.
void tsr_dlpack_gather(const char *origin, char *dst, const tsr_dlpack_layout *l);

#endif  // TESSERA_SDK_IO_DLPACK_LAYOUT_H_
