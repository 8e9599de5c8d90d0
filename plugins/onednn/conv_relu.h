// RELU as the catalogue defines it, for the convolution and matmul
// epilogues.
//
// oneDNN's relu (eltwise_relu with alpha 0, as a post-op or a primitive)
// computes max(x, 0) with vmaxps, which returns 0 for a NaN input; the
// catalogue keeps NaN (docs/abi.md 10.5). No post-op chain fixes that
// exactly (leaky relu keeps NaN but also -inf), so a fused RELU is run as
// this pass over the primitive's output instead: one read and write of
// memory the primitive has just written, a few percent of a GEMM or
// convolution of useful size.
#ifndef TESSERA_PLUGINS_ONEDNN_CONV_RELU_H_
#define TESSERA_PLUGINS_ONEDNN_CONV_RELU_H_

#include <stdint.h>

#include "tessera/abi.h"

// Replaces every element <= 0 (-0 included) of the strided tensor at |base|
// by +0 and leaves the rest, NaN included. float32 or bfloat16; |rank| 1..8,
// strides in elements. Runs on OpenMP threads when the tensor is large.
// Thread-safe for disjoint tensors; never allocates.
void tsr_onednn_relu_apply(void *base, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                           const int64_t *strides);

#endif  // TESSERA_PLUGINS_ONEDNN_CONV_RELU_H_
