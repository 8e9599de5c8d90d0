// The plans of the CPU-kernel library: what tsr_cpu's plan_create fills and
// what a plugin that wraps the library's table (opencl, cuda) reads from a
// plan to run the same op its own way. Include tsr_cpu/cpu_kernels.h, which
// includes this file; this one only keeps the plan layout apart from the
// functions.
//
// A plan is built once per signature (plan.c and the per-op files) and then
// only read: one plan may run on several threads at once. Everything an
// execution needs (loop functions, collapsed shapes, blocking, workspace
// size) is decided when it is built. A plan is owned by whoever called
// plan_create and ends with plan_destroy; the library keeps no pointer to it.
// Fields are read-only to other plugins, and their layout is the library's,
// not the ABI's: it changes with the library, which is compiled into every
// plugin that reads it.
#ifndef TESSERA_PLUGINS_CPU_INCLUDE_TSR_CPU_CPU_PLAN_H_
#define TESSERA_PLUGINS_CPU_INCLUDE_TSR_CPU_CPU_PLAN_H_

#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

// ---------------------------------------------------------------------------
// Operands (plan.c validates every operand of a signature into one).
//
// One operand of a signature, validated.
typedef struct tsr_cpu_operand {
  tsr_dtype_t dtype;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
  uint32_t alignment;     // as declared, 0 read as 1
  uint32_t elem_size;
  int32_t alias_group;
  uint32_t alias_mask;    // outputs: bit i set when input i shares its alias group
  int64_t numel;
  uint64_t extent_bytes;  // first element to one past the last; 0 when empty
  const char *name;       // "x", "out": for messages; static storage
} tsr_cpu_operand;

// Runs a plan whose operands' first elements are at ptrs[0..inputs+outputs)
// (inputs, then outputs) with |workspace| of the plan's workspace size,
// aligned to 64 bytes. No allocation, no locking, no formatting.
typedef tsr_status (*tsr_cpu_plan_exec_fn)(const tsr_plugin_plan *plan, char *const *ptrs,
                                           char *workspace);

// ---------------------------------------------------------------------------
// Elementwise plans (elementwise.c): FILL, COPY, CAST, UNARY[_BACKWARD],
// BINARY, COMPARE, WHERE, CLAMP.
//
// The inputs in signature order, then the output: the plan's own order, so
// execution hands its operand pointers over unchanged.
#define TSR_CPU_EW_MAX_OPERANDS 4

// Constants a loop reads; converted to each dtype once, at plan time.
typedef struct tsr_cpu_ew_params {
  double alpha_f64;
  float alpha_f32;
  int64_t alpha_i64;
  double lo_f64, hi_f64;
  float lo_f32, hi_f32;
  int64_t lo_i64, hi_i64;  // CLAMP: a missing bound is the dtype's extreme
  uint64_t fill_bits;  // FILL: the value's bit pattern in the output dtype
} tsr_cpu_ew_params;

// Processes |n| elements of one row. ptrs[k] is operand k's first element,
// strides[k] its step in bytes.
typedef void (*tsr_cpu_ew_loop_fn)(char *const *ptrs, const int64_t *strides, int64_t n,
                                   const tsr_cpu_ew_params *params);

// The pair of loops one kernel provides: |contiguous| may assume every
// operand's step is its element size, |strided| takes any steps.
typedef struct tsr_cpu_ew_kernel {
  tsr_cpu_ew_loop_fn contiguous;
  tsr_cpu_ew_loop_fn strided;
} tsr_cpu_ew_kernel;

// Relative cost of one element, which sets how much work a parallel chunk gets.
typedef enum tsr_cpu_ew_cost {
  TSR_CPU_EW_CHEAP = 0,      // a load, an add, a store
  TSR_CPU_EW_EXPENSIVE = 1,  // a libm call per element
} tsr_cpu_ew_cost;

typedef struct tsr_cpu_ew_plan {
  int32_t num_operands;
  int32_t ndim;                  // after collapsing; 0 for a single element
  int64_t numel;
  int64_t grain;                 // elements per parallel chunk; below 2 * grain runs inline
  int64_t sizes[TSR_MAX_RANK];   // outermost first
  int64_t strides[TSR_MAX_RANK][TSR_CPU_EW_MAX_OPERANDS];  // bytes
  int64_t inner_strides[TSR_CPU_EW_MAX_OPERANDS];          // bytes, innermost dimension
  tsr_cpu_ew_loop_fn loop;
  tsr_cpu_ew_params params;
} tsr_cpu_ew_plan;

// ---------------------------------------------------------------------------
// MATMUL (matmul.c, gemm_impl.h).
//
#define TSR_CPU_MATMUL_MAX_BATCH (TSR_MAX_RANK - 2)

typedef enum tsr_cpu_matmul_mode {
  TSR_CPU_MATMUL_NAIVE = 0,    // tiny: direct loops, no packing
  TSR_CPU_MATMUL_SERIAL = 1,   // blocked, on the calling thread
  TSR_CPU_MATMUL_SPLIT = 2,    // blocked; each thread owns a block of C (rows or
                               // columns) and packs its own A and B
  TSR_CPU_MATMUL_BATCHED = 3,  // blocked; threads take whole batch items
  TSR_CPU_MATMUL_GEMV = 4,     // one row of A, B with unit columns: B streamed once,
                               // threads split N
} tsr_cpu_matmul_mode;

typedef struct tsr_cpu_matmul_plan {
  tsr_dtype_t dtype;
  int32_t activation;
  int32_t has_bias;
  int32_t mode;           // tsr_cpu_matmul_mode
  int32_t gemv_parallel;  // GEMV: split N across threads
  int64_t gemv_columns;   // GEMV: outputs per task (matmul.h)
  double alpha, beta;
  int64_t m, n, k;
  int32_t batch_ndim;
  int32_t slots;          // per-thread regions in the workspace
  int64_t batch_count;
  int64_t batch_sizes[TSR_CPU_MATMUL_MAX_BATCH];
  // Strides in elements; 0 where a batch dimension broadcasts.
  int64_t a_batch_strides[TSR_CPU_MATMUL_MAX_BATCH];
  int64_t b_batch_strides[TSR_CPU_MATMUL_MAX_BATCH];
  int64_t c_batch_strides[TSR_CPU_MATMUL_MAX_BATCH];
  int64_t bias_batch_strides[TSR_CPU_MATMUL_MAX_BATCH];
  int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, bias_rs, bias_cs;
  // Blocking, fixed at plan time.
  int64_t kc, mc, nc;
  int64_t split_m, split_n;  // SPLIT: parts of C's rows and of its columns, one block each
  int64_t m_part, n_part;    // SPLIT: rows and columns of a block (multiples of mr, nr)
  int64_t naive_grain;       // NAIVE: batch items per parallel chunk; 0 runs serially
  uint64_t slot_bytes;       // one thread's packing region
} tsr_cpu_matmul_plan;

// ---------------------------------------------------------------------------
// REDUCE and ARG_REDUCE (reduce.c, arg_reduce.c, reduce_shape.c).
//
// A running result: float dtypes accumulate in double, int SUM and PROD in
// uint64 (wrapping), int MAX and MIN in int64.
typedef union tsr_cpu_acc {
  double f;
  uint64_t u;
  int64_t i;
} tsr_cpu_acc;

// Folds |n| elements, |stride| bytes apart, starting at |x| into |acc|.
typedef void (*tsr_cpu_reduce_row_fn)(const char *x, int64_t n, int64_t stride, tsr_cpu_acc *acc);
// Folds partial result |part| into |acc|.
typedef void (*tsr_cpu_reduce_combine_fn)(tsr_cpu_acc *acc, const tsr_cpu_acc *part);
// Writes |acc| to |out| in the output dtype; |count| is how many elements
// were reduced (MEAN divides by it).
typedef void (*tsr_cpu_reduce_store_fn)(const tsr_cpu_acc *acc, int64_t count, char *out);

// Collapsed dimensions shared by both plans.
typedef struct tsr_cpu_reduce_shape {
  int32_t kept_ndim;
  int32_t red_ndim;
  int64_t out_count;                    // product of kept sizes
  int64_t red_count;                    // product of reduced sizes
  int64_t kept_sizes[TSR_MAX_RANK];     // outermost first
  int64_t kept_x_strides[TSR_MAX_RANK];    // bytes
  int64_t kept_out_strides[TSR_MAX_RANK];  // bytes
  int64_t red_sizes[TSR_MAX_RANK];      // outermost first
  int64_t red_strides[TSR_MAX_RANK];    // bytes
} tsr_cpu_reduce_shape;

typedef struct tsr_cpu_reduce_plan {
  tsr_cpu_reduce_shape shape;
  int64_t segment;      // reduced elements per partial result
  int64_t segments;     // ceil(red_count / segment), at least 1
  int32_t split;        // threads take (output, segment) pairs; partials in the workspace
  // Float SUM and MEAN whose innermost kept axis is contiguous in x: rows of
  // x are added into chunks of outputs at once (tsr_cpu_reduce_columns_run);
  // 0 or the element size (4 or 8).
  int32_t columns;
  int32_t mean;         // columns: divide by red_count
  tsr_cpu_acc init;
  tsr_cpu_reduce_row_fn row;
  tsr_cpu_reduce_combine_fn combine;
  tsr_cpu_reduce_store_fn store;
} tsr_cpu_reduce_plan;

// Index of the first maximum (minimum) of |n| >= 1 elements |stride| bytes
// apart, NaN ranking above (below) every number, the first NaN winning.
typedef int64_t (*tsr_cpu_arg_scan_fn)(const char *x, int64_t n, int64_t stride);

typedef struct tsr_cpu_arg_reduce_plan {
  tsr_cpu_reduce_shape shape;  // one reduced dimension: the axis
  tsr_cpu_arg_scan_fn scan;
} tsr_cpu_arg_reduce_plan;

// ---------------------------------------------------------------------------
// Groups (groups.c): how SOFTMAX, LAYER_NORM, BATCH_NORM and CROSS_ENTROPY
// see a tensor.
//
#define TSR_CPU_GROUPS_MAX_OPERANDS 8

typedef struct tsr_cpu_groups {
  int32_t num_operands;
  int32_t outer_ndim;  // after collapsing; 0 for a single group
  int32_t inner_ndim;  // after collapsing; 0 for groups of one element
  int32_t reserved;
  int64_t count;                      // groups: product of the outer sizes
  int64_t size;                       // elements per group: product of the inner sizes
  int64_t outer_sizes[TSR_MAX_RANK];  // outermost first
  int64_t inner_sizes[TSR_MAX_RANK];
  int64_t outer_strides[TSR_MAX_RANK][TSR_CPU_GROUPS_MAX_OPERANDS];  // bytes
  int64_t inner_strides[TSR_MAX_RANK][TSR_CPU_GROUPS_MAX_OPERANDS];  // bytes
} tsr_cpu_groups;

// ---------------------------------------------------------------------------
// Rows of a strided copy (data_ops.c), shared by CONCAT, PAD, GATHER and
// SCATTER_ADD.
//
typedef struct tsr_cpu_row {
  int32_t dim;       // the row covers dimensions [dim, rank); [first, dim) are walked
  int32_t reserved;
  int64_t n;         // elements in a row
  int64_t dst_step;  // elements between neighbours in a row
  int64_t src_step;
} tsr_cpu_row;

// ---------------------------------------------------------------------------
// CONCAT. For each index over out's dimensions [0, axis) ("outer") and each
// input i, the block x_i[outer, ...] goes to out[outer, o_i + ..., ...].
#define TSR_CPU_CONCAT_MAX_INPUTS (TSR_MAX_OPERANDS - 1)

typedef struct tsr_cpu_concat_input {
  int64_t out_offset;  // elements: o_i * out's stride on axis
  tsr_cpu_row row;     // dst = out, src = x_i; an empty input has n = 0
} tsr_cpu_concat_input;

typedef struct tsr_cpu_concat_plan {
  int32_t axis;
  int32_t reserved;
  int64_t outer_count;  // elements of out's dimensions [0, axis)
  int64_t grain;        // (outer, input) blocks per parallel chunk; 0 runs inline
  tsr_cpu_concat_input inputs[TSR_CPU_CONCAT_MAX_INPUTS];
} tsr_cpu_concat_plan;

// ---------------------------------------------------------------------------
// PAD: out's rows (its last dimension) are walked; each row is the value, or
// a source row of x with its pads.
typedef struct tsr_cpu_pad_plan {
  int32_t mode;          // tsr_pad_mode_t
  int32_t reserved;
  uint64_t value_bits;   // CONSTANT: the value in out's dtype
  int64_t pad_before[TSR_MAX_RANK];
  int64_t rows;          // out's elements / out's last size (1 for rank 0)
  int64_t grain;         // rows per parallel chunk; 0 runs inline
} tsr_cpu_pad_plan;

// ---------------------------------------------------------------------------
// GATHER and SCATTER_ADD. The "slab" of an index along |axis| is the block of
// dimensions after it; the outer dimensions are those before it.
//
// SCATTER_ADD runs by destination: for each outer index and each position j
// of out's axis, out's slab j gets the slabs of src whose index is j, added in
// index order. The index list is sorted by destination at execution (a
// counting sort into the workspace), so every element of out is written by
// one thread, in one order, whatever the thread count.
typedef void (*tsr_cpu_scatter_rows_fn)(char *dst, int64_t dst_step, const char *src,
                                        int64_t src_step, int64_t src_k_step, const int64_t *ks,
                                        int64_t nk, int64_t n);

typedef struct tsr_cpu_index_plan {
  int32_t axis;
  int32_t index_is_i64;
  int64_t k;              // index length
  int64_t size;           // the indexed axis: x's (GATHER) or out's (SCATTER_ADD)
  int64_t index_stride;   // elements
  int64_t outer_count;    // elements of the dimensions before axis
  int64_t slab_elems;     // elements of a slab
  int64_t grain;          // items per parallel chunk; 0 runs inline
  tsr_cpu_row row;        // the slab: dst = out, src = x (GATHER) or src (SCATTER_ADD)
  tsr_cpu_scatter_rows_fn add;  // SCATTER_ADD's adder for the dtype
} tsr_cpu_index_plan;

// ---------------------------------------------------------------------------
// RNG_FILL.
typedef struct tsr_cpu_rng_plan {
  int32_t distribution;  // tsr_rng_distribution_t
  tsr_dtype_t dtype;
  uint32_t key[2];       // seed, low word first
  uint64_t offset;
  double a, b;
  int32_t dense;         // out is row-major contiguous: element i at i * elem_size
  int32_t reserved;
} tsr_cpu_rng_plan;

// ---------------------------------------------------------------------------
// SGD_UPDATE and ADAM_UPDATE: elementwise over grad and the read-modify-write
// outputs, walked in the collapsed shape the elementwise engine computes.
struct tsr_cpu_optim_plan;
typedef void (*tsr_cpu_optim_loop_fn)(char *const *ptrs, const int64_t *steps, int64_t n,
                                      const struct tsr_cpu_optim_plan *o);

// The attributes in one compute type, derived once at plan time.
#define TSR_CPU_OPTIM_CONSTS(T)                                                              \
  struct {                                                                                   \
    T lr, weight_decay;                                                                      \
    T momentum, one_minus_dampening;          /* SGD */                                      \
    T beta1, one_minus_beta1, beta2, one_minus_beta2, bc2, eps, step_size, decay; /* Adam */ \
  }

typedef struct tsr_cpu_optim_plan {
  tsr_cpu_ew_plan shape;        // collapsed shape and byte strides; its loop is unused
  tsr_cpu_optim_loop_fn contiguous, strided;
  int32_t has_momentum;         // SGD: momentum != 0
  int32_t nesterov;
  int32_t first_step;
  int32_t decoupled;            // Adam: AdamW
  TSR_CPU_OPTIM_CONSTS(float) f32;
  TSR_CPU_OPTIM_CONSTS(double) f64;
} tsr_cpu_optim_plan;

// ---------------------------------------------------------------------------
// SOFTMAX and SOFTMAX_BACKWARD (softmax.c): groups are the slices along the
// axis.
//
typedef struct tsr_cpu_softmax_plan {
  tsr_cpu_groups groups;  // forward: x, y; backward: dy, y, dx
  tsr_dtype_t dtype;
  int32_t log;
  int64_t grain;         // slices per parallel chunk
  int64_t block;         // neighbouring slices packed at once (tsr_cpu_groups_block)
  int64_t slot_doubles;  // one thread's scratch: |block| slices per packed operand
} tsr_cpu_softmax_plan;

// ---------------------------------------------------------------------------
// LAYER_NORM, BATCH_NORM and their backward ops (layer_norm.c,
// batch_norm.c).
//
// Groups are the rows over the normalised axes. Group operand k is plan
// operand k (inputs, then outputs).
typedef struct tsr_cpu_layer_norm_plan {
  tsr_cpu_groups groups;
  tsr_dtype_t dtype;       // x, y, gamma, beta and their gradients
  tsr_dtype_t stat_dtype;  // mean and rstd
  int32_t has_affine;
  int32_t reserved;
  double eps;               // in the compute type
  int64_t grain;            // rows per parallel chunk (forward)
  int64_t block;            // rows per block of partial dgamma/dbeta (backward)
  int64_t blocks;           // ceil(rows / block), at least 1
  int64_t affine_doubles;   // workspace head: packed gamma [and beta]
  int64_t partial_doubles;  // then blocks x (dgamma, dbeta) partial sums
  int64_t slot_doubles;     // then per-thread scratch
} tsr_cpu_layer_norm_plan;

// Groups are the channels: x (and y, dy, dx) over every axis but 1.
typedef struct tsr_cpu_batch_norm_plan {
  tsr_cpu_groups groups;  // forward: x, y; backward: dy, x, dx
  tsr_dtype_t dtype;
  tsr_dtype_t stat_dtype;
  int32_t training;
  int32_t reserved;
  double eps, momentum;         // in the compute type
  int64_t channel_strides[10];  // bytes, per plan operand; 0 for x-shaped ones
  int64_t grain;                // channels per parallel chunk
  int64_t slot_doubles;
} tsr_cpu_batch_norm_plan;

// ---------------------------------------------------------------------------
// CROSS_ENTROPY and CROSS_ENTROPY_BACKWARD (cross_entropy.c): groups are
// the rows of logits [N, C].
//
typedef struct tsr_cpu_cross_entropy_plan {
  tsr_cpu_groups groups;  // forward: logits; backward: logits, dlogits
  tsr_dtype_t dtype;      // logits, loss, dloss, dlogits
  int32_t reduction;      // tsr_reduction_t
  int64_t ignore_index;
  double smoothing;       // label_smoothing in the compute type
  int64_t rows, classes;  // N, C
  // Bytes between rows of the per-row operands: target, lse, and loss
  // (forward, NONE) or dloss (backward, NONE); 0 for a rank-0 loss or dloss.
  int64_t target_stride, lse_stride, loss_stride;
  int64_t grain;         // rows per parallel chunk
  int64_t row_losses;    // forward SUM/MEAN: doubles at the workspace head
  int64_t slot_doubles;  // per-thread scratch: one row
} tsr_cpu_cross_entropy_plan;

// ---------------------------------------------------------------------------
// POOL2D and POOL2D_BACKWARD, MAX and AVG (pool.c).
//
// Work items are (n, c) planes. Each plane is computed in float64 in the
// executing thread's slot of the workspace: the forward reads x through any
// strides and dtype into the slot, then walks the windows; the backward
// accumulates dx there, in a fixed (row-major output) order, and rounds once
// when it stores. The 2x2 stride-2 MAX pool on float32 (window2_f32) works
// on the operands in place instead, with identical results (pool.c says
// why). Planes never share an output element, so results do not
// depend on the thread count.
typedef struct tsr_cpu_pool_plan {
  int32_t op;                 // TSR_OP_POOL2D or TSR_OP_POOL2D_BACKWARD
  tsr_dtype_t dtype;          // of x, y, dx, dy
  int32_t elem_size;
  int32_t kind;               // tsr_pool_kind_t
  int32_t count_include_pad;
  int32_t parallel;           // planes go to the host's pool
  int32_t slots;              // per-thread regions in the workspace
  int32_t window2;            // 2x2 windows, stride 2, no padding, all inside x
  int32_t window2_f32;        // ... MAX on float32, unit stride along W: no double staging
  int64_t n, c, h, w, oh, ow;
  int64_t kernel[2], stride[2], pad_before[2], pad_after[2], dilation[2];
  // Strides in elements: x (dx), y (dy), indices.
  int64_t xs[4], ys[4], is[4];
  int64_t grain;              // planes per parallel chunk
  uint64_t slot_bytes;
} tsr_cpu_pool_plan;

// ---------------------------------------------------------------------------
// CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER (conv.c; conv.h
// has the kernels).
//
typedef struct tsr_cpu_conv_plan {
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
  tsr_cpu_matmul_plan gemm;
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
  int64_t fd_o_chunk, fd_o_chunks;  // fd_o_chunk: a multiple of TSR_CPU_CONV_FD_COLS
  int64_t fd_r_chunk, fd_r_chunks;  // fd_r_chunk: a multiple of TSR_CPU_CONV_FD_ROWS
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
  // a multiple of TSR_CPU_CONV_FW_COLS, fd_o_chunks); a slot holds the
  // padded copy of one image (when padded) at fd_x_offset, the rows'
  // offsets in a window [K] at fd_roff_offset, the windows' offsets in the
  // image [OH * OW] at fd_steps_offset and the chunk's weights transposed
  // [K][fd_o_chunk] at fw_wt_offset.
  int32_t fwd_direct;
  int64_t fw_n_chunk, fw_n_chunks;
  int64_t fw_p_chunk, fw_p_chunks;  // fw_p_chunk: a multiple of TSR_CPU_CONV_FW_POSITIONS
  uint64_t fw_wt_offset;
} tsr_cpu_conv_plan;

// ---------------------------------------------------------------------------
// The plan: struct tsr_plugin_plan (the ABI's opaque plan type) as this
// library fills it.
//
struct tsr_plugin_plan {
  int32_t op;
  int32_t num_inputs;
  int32_t num_outputs;
  uint32_t info_flags;          // TSR_PLAN_INFO_*
  const char *engine;           // static storage
  uint64_t workspace_bytes;     // as plan_info reports it, alignment slack included
  tsr_cpu_plan_exec_fn execute;
  tsr_cpu_operand operands[TSR_MAX_OPERANDS];  // inputs, then outputs
  union {
    tsr_cpu_ew_plan ew;
    tsr_cpu_reduce_plan reduce;
    tsr_cpu_arg_reduce_plan arg_reduce;
    tsr_cpu_matmul_plan matmul;
    tsr_cpu_concat_plan concat;
    tsr_cpu_pad_plan pad;
    tsr_cpu_index_plan index;  // GATHER, SCATTER_ADD
    tsr_cpu_rng_plan rng;
    tsr_cpu_optim_plan optim;  // SGD_UPDATE, ADAM_UPDATE
    tsr_cpu_softmax_plan softmax;
    tsr_cpu_layer_norm_plan layer_norm;
    tsr_cpu_batch_norm_plan batch_norm;
    tsr_cpu_cross_entropy_plan cross_entropy;
    tsr_cpu_conv_plan conv;
    tsr_cpu_pool_plan pool;
  } u;
};

#endif  // TESSERA_PLUGINS_CPU_INCLUDE_TSR_CPU_CPU_PLAN_H_
