// Tessera: looking at tensors (included by tessera/tessera.h).
//
// tsr_tensor_format writes a tensor as PyTorch's repr does:
//
//   tensor([[1.5000, 2.0000],
//           [3.0000, 4.2500]], dtype=float32, device=ref:0)
//
// Floats take PyTorch's formatter: whole numbers as `1.`, else `precision`
// digits after the point, scientific notation when the largest to smallest
// nonzero magnitude ratio is above 1000, the largest above 1e8 or the
// smallest below 1e-4; NaN and infinities as nan, inf, -inf. Integers print as
// such, bools as True / False. A tensor of more than `threshold` elements is
// summarised with `...`, keeping `edge_items` at each end of every dim. The
// values are copied to the host (the whole tensor, any device, any strides)
// after the work writing them has finished.
// Its types and TSR_API come from tessera.h, which includes this header at
// its end; included first, this header lets tessera.h include it whole.
#include "tessera/tessera.h"

#ifndef TESSERA_PRINT_H_
#define TESSERA_PRINT_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/shapes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_format_options {
  size_t struct_size;  // set by the caller to sizeof(tsr_format_options)
  int32_t precision;   // digits after the point for floats, 0..30 (4)
  int32_t edge_items;  // values kept at each end of a summarised dim, >= 0 (3)
  int64_t threshold;   // summarise when numel > threshold, >= 0 (1000)
  int32_t line_width;  // characters before a row wraps, >= 1 (80)
  uint32_t reserved;   // 0
} tsr_format_options;

// Fills |options| with PyTorch's defaults (the values in brackets above). Thread-safe.
TSR_API void tsr_format_options_init(tsr_format_options *options);

// Writes |tensor| as text into |buf| (|size| bytes, NUL-terminated) and the text's length (without
// the NUL) to |out_length| when it is not NULL; |options| NULL means the defaults. |buf| NULL with
// |size| 0 only measures. A |buf| too small gets the truncated text and TSR_INVALID_ARGUMENT (with
// |out_length| still set), as snprintf. Thread-safe under the tensor rules of tessera.h.
TSR_API TSR_MUST_USE tsr_status tsr_tensor_format(const tsr_tensor *tensor, char *buf, size_t size,
                                                  const tsr_format_options *options,
                                                  size_t *out_length);
// Writes |tensor| with the default options and a newline to stdout. Thread-safe (one fwrite).
TSR_API TSR_MUST_USE tsr_status tsr_tensor_print(const tsr_tensor *tensor);
// Writes the shape |sizes| [|rank|] as "[2, 3]" ("[]" for rank 0) into |buf|, as tsr_tensor_format
// does (same |size|, |out_length| and truncation rules). Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_shape_format(int32_t rank, const int64_t *sizes, char *buf,
                                                 size_t size, size_t *out_length);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_PRINT_H_
