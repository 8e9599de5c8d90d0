// The plans of CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER.
//
// All three lower to ref's blocked GEMM (matmul.h) over an im2col matrix,
// built per work item in the executing thread's slot of the workspace:
//   forward:         y[n, g]  = W_g [Og x K] . col(x[n, g]) [K x cols]
//   backward data:   dx[n, g] = col2im(W_g^T [K x Og] . dy[n, g] [Og x cols])
//   backward filter: dW_g     = sum over n of dy[n, g] [Og x cols] . col(x[n, g])^T
// with K = Cg * KH * KW and cols = OH * OW (output positions, row-major).
// Long position ranges are cut into tiles of |tile_cols| so one tile of the
// im2col matrix stays in L2.
//
// Threads never share an output element, and every sum runs in an order fixed
// by the shape alone (the GEMM's depth panels, the position tiles, fixed batch
// tiles for the filter gradient summed in tile order), so results do not
// depend on the thread count.
#ifndef TESSERA_PLUGINS_REF_CONV_H_
#define TESSERA_PLUGINS_REF_CONV_H_

#include <stdint.h>

#include "matmul.h"
#include "tessera/abi.h"

typedef struct tsr_ref_conv_plan {
  int32_t op;               // TSR_OP_CONV2D*
  tsr_dtype_t dtype;        // of every operand
  int32_t elem_size;
  int32_t has_bias;         // forward: bias input; backward filter: dbias output
  int32_t activation;       // forward only
  int32_t direct;           // the GEMM writes y (forward) or reads dy (backward) in place
  int32_t parallel;         // items go to the host's pool
  int32_t slots;            // per-thread regions in the workspace
  // The problem, in NCHW logical order.
  int64_t n, c, h, w;       // x (or dx)
  int64_t o, oh, ow;        // y (or dy)
  int64_t kh, kw;
  int64_t groups, cg, og;   // C / groups, O / groups
  int64_t stride[2], pad[2], dilation[2];  // pad: pad_before
  int64_t k;                // cg * kh * kw: the depth of the forward GEMM
  int64_t cols;             // oh * ow
  // Strides in elements: x (dx), w (dw), y (dy), bias (dbias).
  int64_t xs[4], ws[4], ys[4], bias_stride;
  int64_t y_pos_stride;     // direct: y's (dy's) stride of one output position
  // Work split.
  int64_t tile_cols;        // output positions per tile
  int64_t tiles;            // ceil(cols / tile_cols)
  int64_t c_block;          // backward data: input channels per item
  int64_t c_blocks;         // ceil(cg / c_block)
  int64_t batch_tile;       // backward filter: images per partial sum
  int64_t batch_tiles;      // ceil(n / batch_tile)
  int64_t items;            // parallel work items
  int64_t grain;            // items per parallel chunk
  // Workspace: a shared region, then |slots| slot regions; offsets in bytes.
  uint64_t shared_bytes;
  uint64_t slot_bytes;
  uint64_t col_offset;      // im2col (forward, filter) or dcol (data) matrix
  uint64_t gemm_offset;     // the GEMM's packing region
  uint64_t stage_offset;    // y or dy tile in the compute type when not direct
  uint64_t acc_offset;      // backward data: dx block in the compute type
  // The GEMM of one tile (full width); execution copies it and trims the
  // edge sizes.
  tsr_ref_matmul_plan gemm;
} tsr_ref_conv_plan;

// Runs |cv| on operands whose first elements are at ptrs[] (inputs, then
// outputs, in signature order) with a 64-byte aligned |workspace| of the
// plan's size. The f32 entry computes float32, bfloat16 and float16
// operands in float32; the f64 entry float64. No allocation, no locking.
// Thread-safe; |cv| is only read.
tsr_status tsr_ref_conv_f32_execute(const tsr_ref_conv_plan *cv, char *const *ptrs,
                                    char *workspace);
tsr_status tsr_ref_conv_f64_execute(const tsr_ref_conv_plan *cv, char *const *ptrs,
                                    char *workspace);

// Floor and ceiling of a / b for b > 0 and any sign of a.
static inline int64_t tsr_ref_conv_div_floor(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t tsr_ref_conv_div_ceil(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

#endif  // TESSERA_PLUGINS_REF_CONV_H_
