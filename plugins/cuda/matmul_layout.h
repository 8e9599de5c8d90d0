// How MATMUL's operands map onto one cuBLASLt call, as plain C.
//
// Row-major out = a @ b is computed as the column-major out^T = b^T a^T: an
// operand whose last stride is 1 is a column-major matrix as it is, one whose
// second-to-last stride is 1 is one transposed. Batch dimensions must
// collapse to one stride per operand (0 where a whole operand broadcasts).
// matmul.c turns the result into cuBLASLt layouts; the unit tests check the
// decisions without a GPU.
#ifndef TESSERA_PLUGINS_CUDA_MATMUL_LAYOUT_H_
#define TESSERA_PLUGINS_CUDA_MATMUL_LAYOUT_H_

#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

// One column-major matrix of the call.
typedef struct tsr_cuda_matrix_view {
  uint64_t rows, cols;
  int64_t ld;
  int transpose;         // cuBLASLt's CUBLAS_OP_T for this operand
  int64_t batch_stride;  // elements between batches; 0 broadcasts
} tsr_cuda_matrix_view;

typedef struct tsr_cuda_matmul_layout {
  tsr_cuda_matrix_view a;             // cuBLASLt's A: Tessera's b
  tsr_cuda_matrix_view b;             // cuBLASLt's B: Tessera's a
  tsr_cuda_matrix_view d;             // out (and C when beta != 0)
  int64_t batch, m, n, k;             // Tessera's M, N, K
  int empty;                          // nothing to compute: M, N or the batch is 0
  int fuse_bias;                      // bias [1, ..., N] through the epilogue
  tsr_activation_t fused_activation;  // NONE, RELU or GELU_TANH in the epilogue
  tsr_activation_t post_activation;   // applied by an own kernel afterwards
} tsr_cuda_matmul_layout;

// Maps a (validated) MATMUL signature: |a|, |b|, |bias| (NULL without one)
// and |out|, with |activation|. TSR_OK with |out_layout| filled, or
// TSR_UNSUPPORTED with the reason in |out_reason| (static storage).
// Thread-safe; no allocation.
tsr_status tsr_cuda_matmul_layout_get(const tsr_tensor_desc *a, const tsr_tensor_desc *b,
                                      const tsr_tensor_desc *bias, const tsr_tensor_desc *out,
                                      tsr_activation_t activation,
                                      tsr_cuda_matmul_layout *out_layout, const char **out_reason);

#endif  // TESSERA_PLUGINS_CUDA_MATMUL_LAYOUT_H_
