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

// The byte alignment each pointer of the call is promised. The heuristics are
// asked with exactly these, so the chosen algorithm never needs more than an
// execution is guaranteed (plan_execute refuses a less aligned operand).
typedef struct tsr_cuda_matmul_alignment {
  uint32_t a, b;  // cuBLASLt's A (Tessera's b) and B (Tessera's a)
  uint32_t c, d;  // out, read as C when beta != 0 and written as D
  uint32_t bias;  // 0 without a fused bias
} tsr_cuda_matmul_alignment;

// The promised alignments of |a|, |b|, |bias| (NULL without one) and |out|
// as |layout| (from tsr_cuda_matmul_layout_get) maps them: each operand's
// signature alignment (0 reads as 1), lowered to the alignment of its batch
// stride in bytes when the batches advance its pointer. Thread-safe; no
// allocation.
void tsr_cuda_matmul_alignment_get(const tsr_tensor_desc *a, const tsr_tensor_desc *b,
                                   const tsr_tensor_desc *bias, const tsr_tensor_desc *out,
                                   const tsr_cuda_matmul_layout *layout,
                                   tsr_cuda_matmul_alignment *out_alignment);

// A stand-in bias address for the heuristic query, aligned to exactly
// |alignment| bytes (a power of two) and never dereferenced. cuBLASLt judges
// the bias's alignment from the pointer value it is given
// (CUBLASLT_MATMUL_DESC_BIAS_POINTER), and has no preference attribute for it:
// NULL would read as perfectly aligned. Thread-safe.
const void *tsr_cuda_matmul_bias_standin(uint32_t alignment);

#endif  // TESSERA_PLUGINS_CUDA_MATMUL_LAYOUT_H_
