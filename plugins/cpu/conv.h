// The plans of CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER.
//
// All three lower to the library's blocked GEMM (matmul.h) over an im2col matrix,
// built per work item in the executing thread's slot of the workspace:
//   forward:         y[n, g]  = W_g [Og x K] . col(x[n, g]) [K x cols]
//   backward data:   dx[n, g] = col2im(W_g^T [K x Og] . dy[n, g] [Og x cols])
//   backward filter: dW_g     = sum over n of dy[n, g] [Og x cols] . col(x[n, g])^T
// with K = Cg * KH * KW and cols = OH * OW (output positions, row-major).
// Long position ranges are cut into tiles of |tile_cols| so one tile of the
// im2col matrix stays in L2.
//
// The filter gradient with one input channel per group (float32, small
// kernels) has a direct kernel instead (conv_filter_c1.c, declared below),
// and so has the float32 one with several channels and one group
// (conv_filter_direct.c). So has the float32 forward without an activation
// or with RELU:
// with one input channel per group (conv_fwd_c1.c), and with one group
// (conv_fwd_direct.c).
//
// Threads never share an output element, and every sum runs in an order fixed
// by the shape alone (the GEMM's depth panels, the position tiles, fixed batch
// tiles for the filter gradient summed in tile order), so results do not
// depend on the thread count.
#ifndef TESSERA_PLUGINS_CPU_CONV_H_
#define TESSERA_PLUGINS_CPU_CONV_H_

#include <stdint.h>

#include "matmul.h"
#include "tessera/abi.h"
#include "tessera/ops.h"
#include "tsr_cpu/cpu_kernels.h"

// Runs |cv| on operands whose first elements are at ptrs[] (inputs, then
// outputs, in signature order) with a 64-byte aligned |workspace| of the
// plan's size. The f32 entry computes float32, bfloat16 and float16
// operands in float32; the f64 entry float64. No allocation, no locking.
// Thread-safe; |cv| is only read.
tsr_status tsr_cpu_conv_f32_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                    char *workspace);
tsr_status tsr_cpu_conv_f64_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                    char *workspace);

// The register tiles of the direct forward and filter-gradient kernels:
// TILE_ROWS broadcast rows (output positions, or filter rows) by two vectors
// of VL float32 lanes (output channels), in 2 * TILE_ROWS accumulators. With
// AVX-512's 32 registers of 16 lanes that is 12 x 32 (24 accumulators, as
// the GEMM's micro-kernel); with 16 registers of 8 lanes (AVX2 and older),
// 6 x 16 (12). The layouts in conv.c follow the build's tile, and the sums'
// order does not depend on it (each lane sums its element's products in the
// same order), so every build gives the same bits.
// TSR_CPU_CONV_SPLAT(type, v): a vector of VL copies of |v| (a broadcast
// load; writing 0 + v instead would be an add, and turn -0.0 into +0.0).
#if defined(__AVX512F__)
#define TSR_CPU_CONV_VL 16
#define TSR_CPU_CONV_TILE_ROWS 12
#define TSR_CPU_CONV_SPLAT(type, v) ((type){v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v})
#else
#define TSR_CPU_CONV_VL 8
#define TSR_CPU_CONV_TILE_ROWS 6
#define TSR_CPU_CONV_SPLAT(type, v) ((type){v, v, v, v, v, v, v, v})
#endif

// The direct filter-gradient kernel for one input channel per group
// (conv_filter_c1.c): dW[o, 0] = sum over n of dy[n, o] (x) x[n, o / Og], a
// KH x KW correlation of two planes, with dbias summed beside it when the
// plan has it. im2col + GEMM spends its time there on a GEMM with K = 1 *
// KH * KW, too thin for its blocking.
#define TSR_CPU_CONV_C1_LANES 8

// Runs a plan with filter_c1 set, as tsr_cpu_conv_f32_execute does.
tsr_status tsr_cpu_conv_filter_c1_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                          char *workspace);

// The direct filter-gradient kernel for several input channels and one
// group (conv_filter_direct.c): dW^T [C * KH * KW][O] as a GEMM over the
// output positions of every image, with register tiles of ROWS rows
// (c, kh, kw), whose x values are broadcast, by COLS output channels of dy
// transposed per image. im2col + GEMM writes and re-reads the im2col matrix
// (KH * KW times x) for every image instead.
#define TSR_CPU_CONV_FD_ROWS TSR_CPU_CONV_TILE_ROWS
#define TSR_CPU_CONV_FD_COLS (2 * TSR_CPU_CONV_VL)

// Runs a plan with filter_direct set, as tsr_cpu_conv_f32_execute does.
tsr_status tsr_cpu_conv_filter_direct_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                              char *workspace);

// The direct forward kernel (conv_fwd_direct.c): yT [OH * OW][O] per image
// as a GEMM over K = C * KH * KW, with register tiles of POSITIONS output
// positions, whose x values are broadcast, by COLS output channels of the
// weights transposed. im2col + GEMM writes and re-reads the im2col matrix
// (KH * KW times x) for every image instead.
#define TSR_CPU_CONV_FW_POSITIONS TSR_CPU_CONV_TILE_ROWS
#define TSR_CPU_CONV_FW_COLS (2 * TSR_CPU_CONV_VL)

// The direct forward kernel for one input channel per group
// (conv_fwd_c1.c): each output plane is KH * KW FMAs per position over the
// tile's im2col rows, vectorised over positions and stored straight into
// y's rows. The generic kernels write y through a transposition or a
// blocked layout, the one cost of a layer this shallow.

// Runs a plan with fwd_c1 set, as tsr_cpu_conv_f32_execute does.
tsr_status tsr_cpu_conv_fwd_c1_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                       char *workspace);

// Runs a plan with fwd_direct set, as tsr_cpu_conv_f32_execute does.
tsr_status tsr_cpu_conv_fwd_direct_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                           char *workspace);

// Copies one image of x, at |x| (strides cv->xs), into the zero-padded
// [C][fd_hp][fd_wp] float32 copy at |xp|: the direct kernels' input when
// the plan pads. Thread-safe.
void tsr_cpu_conv_x_pad(const tsr_cpu_conv_plan *cv, const float *x, float *xp);

// Floor and ceiling of a / b for b > 0 and any sign of a.
static inline int64_t tsr_cpu_conv_div_floor(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t tsr_cpu_conv_div_ceil(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

#endif  // TESSERA_PLUGINS_CPU_CONV_H_
