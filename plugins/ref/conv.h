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
#ifndef TESSERA_PLUGINS_REF_CONV_H_
#define TESSERA_PLUGINS_REF_CONV_H_

#include <stdint.h>

#include "matmul.h"
#include "tessera/abi.h"
#include "tessera/ops.h"

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
  // The filter gradient's direct kernel (conv_filter_c1.c) instead of the
  // GEMM: items are (group, block of o_block output channels), positions go
  // in tiles of tile_cols, and a slot holds the tile's KH * KW x c1_pitch
  // im2col rows, then the block's float64 lane sums.
  int32_t filter_c1;
  int64_t o_block, o_blocks;  // output channels per item, items per group
  int64_t c1_pitch;           // im2col row pitch: tile_cols rounded up to the lanes
  uint64_t sums_offset;       // o_block x (KH * KW) x lanes doubles
  uint64_t bias_sums_offset;  // o_block x lanes doubles
  // The multi-channel filter gradient's direct kernel (conv_filter_direct.c)
  // instead of the GEMM: items are (chunk of fd_o_chunk output channels,
  // chunk of fd_r_chunk rows (c, kh, kw)), positions go in tiles of
  // tile_cols, and a slot holds the padded copy of an image (when padded),
  // the tile's dy transposed [tile_cols][fd_o_chunk], the chunk's float64
  // sums [fd_r_chunk][fd_o_chunk], dbias sums [fd_o_chunk] and each row's
  // offset in the image [fd_r_chunk].
  int32_t filter_direct;
  int32_t fd_copy_x;              // x goes through the zero-padded copy
  int64_t fd_rows;                // C * KH * KW
  int64_t fd_hp, fd_wp;           // the padded copy's height and width
  int64_t fd_xc, fd_xh, fd_xw;    // strides of the image the kernel reads
  int64_t fd_o_chunk, fd_o_chunks;  // fd_o_chunk: a multiple of TSR_REF_CONV_FD_COLS
  int64_t fd_r_chunk, fd_r_chunks;  // fd_r_chunk: a multiple of TSR_REF_CONV_FD_ROWS
  uint64_t fd_x_offset, fd_dyt_offset, fd_sums_offset, fd_bias_offset;
  int64_t fd_batch;               // images per step of the float32 sums
  uint64_t fd_roff_offset, fd_steps_offset;
  // The one-channel forward's direct kernel (conv_fwd_c1.c) instead of the
  // GEMM: items are (image, group) pairs, positions go in tiles of
  // tile_cols, and a slot holds the tile's KH * KW im2col rows of pitch
  // c1_pitch (tile_cols rounded up to 16) at col_offset, then the group's
  // weights [og rounded up to 4][KH * KW] at fw_wt_offset.
  int32_t fwd_c1;
  // The forward's direct kernel (conv_fwd_direct.c) instead of the GEMM:
  // items are (chunk of fd_o_chunk output channels, chunk of fw_n_chunk
  // images, chunk of fw_p_chunk output positions). It shares the
  // filter-direct fields above for the image it reads (fd_copy_x, fd_hp,
  // fd_wp, fd_xc, fd_xh, fd_xw) and its output channel chunks (fd_o_chunk,
  // a multiple of TSR_REF_CONV_FW_COLS, fd_o_chunks); a slot holds the
  // padded copy of one image (when padded) at fd_x_offset, the rows'
  // offsets in a window [K] at fd_roff_offset, the windows' offsets in the
  // image [OH * OW] at fd_steps_offset and the chunk's weights transposed
  // [K][fd_o_chunk] at fw_wt_offset.
  int32_t fwd_direct;
  int64_t fw_n_chunk, fw_n_chunks;
  int64_t fw_p_chunk, fw_p_chunks;  // fw_p_chunk: a multiple of TSR_REF_CONV_FW_POSITIONS
  uint64_t fw_wt_offset;
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

// The direct filter-gradient kernel for one input channel per group
// (conv_filter_c1.c): dW[o, 0] = sum over n of dy[n, o] (x) x[n, o / Og], a
// KH x KW correlation of two planes, with dbias summed beside it when the
// plan has it. im2col + GEMM spends its time there on a GEMM with K = 1 *
// KH * KW, too thin for its blocking.
#define TSR_REF_CONV_C1_LANES 8
// At most this many taps (3x3): one accumulator vector per tap, and the 16
// vector registers of AVX2 must hold them beside dy and the dbias lanes.
#define TSR_REF_CONV_C1_MAX_TAPS 9

// Whether the direct kernel covers CONV2D_BACKWARD_FILTER with float32
// operands of |dtype|, |cg| input channels per group, a |kh| x |kw| kernel and
// dy of |dy_sizes| (N, O, OH, OW) and |dy_strides|: float32, one input
// channel per group, at most TSR_REF_CONV_C1_MAX_TAPS taps, and each dy
// plane's OH * OW positions contiguous (the kernel streams them as one
// vector). Any stride, padding, dilation, group count, x layout and dw/dbias
// strides. Thread-safe.
static inline int tsr_ref_conv_filter_c1_fits(tsr_dtype_t dtype, int64_t cg, int64_t kh,
                                              int64_t kw, const int64_t *dy_sizes,
                                              const int64_t *dy_strides) {
  const int64_t oh = dy_sizes[2], ow = dy_sizes[3];
  return dtype == TSR_FLOAT32 && cg == 1 && kh >= 1 && kw >= 1 &&
         kh * kw <= TSR_REF_CONV_C1_MAX_TAPS && (ow == 1 || dy_strides[3] == 1) &&
         (oh == 1 || dy_strides[2] == ow);
}

// Runs a plan with filter_c1 set, as tsr_ref_conv_f32_execute does.
tsr_status tsr_ref_conv_filter_c1_execute(const tsr_ref_conv_plan *cv, char *const *ptrs,
                                          char *workspace);

// The direct filter-gradient kernel for several input channels and one
// group (conv_filter_direct.c): dW^T [C * KH * KW][O] as a GEMM over the
// output positions of every image, with register tiles of ROWS rows
// (c, kh, kw), whose x values are broadcast, by COLS output channels of dy
// transposed per image. im2col + GEMM writes and re-reads the im2col matrix
// (KH * KW times x) for every image instead.
#define TSR_REF_CONV_FD_ROWS 6
#define TSR_REF_CONV_FD_COLS 16
// The zero-padded copy of one image stays in L2 beside the sums.
#define TSR_REF_CONV_FD_MAX_IMAGE_BYTES (256 * 1024)

// Whether the direct kernel covers CONV2D_BACKWARD_FILTER with operands of
// |dtype|, |groups| groups, |c| input channels of |h| x |w| and padding
// |pad_before| + |pad_after| (two each): float32, one group, at least two
// channels (one is conv_filter_c1.c's), and one padded image of at most
// TSR_REF_CONV_FD_MAX_IMAGE_BYTES. Any kernel size, stride, dilation and
// layout of every operand. Thread-safe.
static inline int tsr_ref_conv_filter_direct_fits(tsr_dtype_t dtype, int64_t groups, int64_t c,
                                                  int64_t h, int64_t w,
                                                  const int64_t *pad_before,
                                                  const int64_t *pad_after) {
  if (dtype != TSR_FLOAT32 || groups != 1 || c < 2) return 0;
  const double hp = (double)h + (double)pad_before[0] + (double)pad_after[0];
  const double wp = (double)w + (double)pad_before[1] + (double)pad_after[1];
  return (double)c * hp * wp * 4.0 <= (double)TSR_REF_CONV_FD_MAX_IMAGE_BYTES;
}

// Runs a plan with filter_direct set, as tsr_ref_conv_f32_execute does.
tsr_status tsr_ref_conv_filter_direct_execute(const tsr_ref_conv_plan *cv, char *const *ptrs,
                                              char *workspace);

// The direct forward kernel (conv_fwd_direct.c): yT [OH * OW][O] per image
// as a GEMM over K = C * KH * KW, with register tiles of POSITIONS output
// positions, whose x values are broadcast, by COLS output channels of the
// weights transposed. im2col + GEMM writes and re-reads the im2col matrix
// (KH * KW times x) for every image instead.
#define TSR_REF_CONV_FW_POSITIONS 6
#define TSR_REF_CONV_FW_COLS 16

// Whether the direct kernel covers CONV2D with operands of |dtype|, |groups|
// groups, |activation|, |c| input channels of |h| x |w| and padding
// |pad_before| + |pad_after| (two each): float32, one group, no activation
// or RELU (the fused one must give the bits of CONV2D then RELU), at least
// one channel, and one padded image of at most
// TSR_REF_CONV_FD_MAX_IMAGE_BYTES (the kernel reads it at scattered offsets,
// from L2). Any kernel size, stride, dilation, bias or not, and layout of
// every operand. Thread-safe.
static inline int tsr_ref_conv_fwd_direct_fits(tsr_dtype_t dtype, int64_t groups,
                                               int32_t activation, int64_t c, int64_t h,
                                               int64_t w, const int64_t *pad_before,
                                               const int64_t *pad_after) {
  if (dtype != TSR_FLOAT32 || groups != 1 || c < 1) return 0;
  if (activation != TSR_ACTIVATION_NONE && activation != TSR_ACTIVATION_RELU) return 0;
  const double hp = (double)h + (double)pad_before[0] + (double)pad_after[0];
  const double wp = (double)w + (double)pad_before[1] + (double)pad_after[1];
  return (double)c * hp * wp * 4.0 <= (double)TSR_REF_CONV_FD_MAX_IMAGE_BYTES;
}

// The direct forward kernel for one input channel per group
// (conv_fwd_c1.c): each output plane is KH * KW FMAs per position over the
// tile's im2col rows, vectorised over positions and stored straight into
// y's rows. The generic kernels write y through a transposition or a
// blocked layout, the one cost of a layer this shallow.
//
// Whether it covers CONV2D with operands of |dtype|, |cg| input channels
// per group, |activation| and y of |y_sizes| (N, O, OH, OW) and |y_strides|:
// float32, one input channel per group, no activation or RELU, and each y plane's
// OH * OW positions contiguous (the kernel stores them as vectors). Any
// kernel size, stride, padding, dilation, group count, bias or not, and x,
// w and bias layout. Thread-safe.
static inline int tsr_ref_conv_fwd_c1_fits(tsr_dtype_t dtype, int64_t cg, int32_t activation,
                                           const int64_t *y_sizes, const int64_t *y_strides) {
  const int64_t oh = y_sizes[2], ow = y_sizes[3];
  return dtype == TSR_FLOAT32 && cg == 1 &&
         (activation == TSR_ACTIVATION_NONE || activation == TSR_ACTIVATION_RELU) &&
         (ow == 1 || y_strides[3] == 1) && (oh == 1 || y_strides[2] == ow);
}

// Runs a plan with fwd_c1 set, as tsr_ref_conv_f32_execute does.
tsr_status tsr_ref_conv_fwd_c1_execute(const tsr_ref_conv_plan *cv, char *const *ptrs,
                                       char *workspace);

// Runs a plan with fwd_direct set, as tsr_ref_conv_f32_execute does.
tsr_status tsr_ref_conv_fwd_direct_execute(const tsr_ref_conv_plan *cv, char *const *ptrs,
                                           char *workspace);

// Copies one image of x, at |x| (strides cv->xs), into the zero-padded
// [C][fd_hp][fd_wp] float32 copy at |xp|: the direct kernels' input when
// the plan pads. Thread-safe.
void tsr_ref_conv_x_pad(const tsr_ref_conv_plan *cv, const float *x, float *xp);

// Floor and ceiling of a / b for b > 0 and any sign of a.
static inline int64_t tsr_ref_conv_div_floor(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t tsr_ref_conv_div_ceil(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

#endif  // TESSERA_PLUGINS_REF_CONV_H_
