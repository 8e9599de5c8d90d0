// Plans of the ops that move, generate or update data rather than compute
// with it: CONCAT and PAD (concat.c, pad.c), GATHER and SCATTER_ADD
// (gather.c), RNG_FILL (rng.c), SGD_UPDATE and ADAM_UPDATE (optim.c); and the
// strided-copy helpers the first four share (data_ops.c).
#ifndef TESSERA_PLUGINS_REF_DATA_OPS_H_
#define TESSERA_PLUGINS_REF_DATA_OPS_H_

#include <stdint.h>

#include "elementwise.h"
#include "tessera/abi.h"

// ---------------------------------------------------------------------------
// Strided copies. A block of dimensions [first, rank) of two views of one
// shape (a destination and a source) is copied as rows: the innermost
// dimensions that step uniformly in both views merge into one row, and an
// odometer walks the dimensions outside it. A row whose steps are both 1 is
// one memcpy.
typedef struct tsr_ref_row {
  int32_t dim;       // the row covers dimensions [dim, rank); [first, dim) are walked
  int32_t reserved;
  int64_t n;         // elements in a row
  int64_t dst_step;  // elements between neighbours in a row
  int64_t src_step;
} tsr_ref_row;

// Finds the row of the block [first, rank) of |sizes| (every size > 0) for
// views with |dst_strides| and |src_strides| (elements). Pure; thread-safe.
void tsr_ref_row_init(const int64_t *sizes, const int64_t *dst_strides, const int64_t *src_strides,
                      int32_t first, int32_t rank, tsr_ref_row *out_row);

// Steps the multi-index |idx| over dimensions [first, last) of |sizes|
// (row-major, last fastest), moving the element offsets |a| and |b| of two
// views along. Returns 0 once every index has been visited (idx back at 0).
static inline int tsr_ref_odometer_next(int64_t *idx, int32_t first, int32_t last,
                                        const int64_t *sizes, const int64_t *a_strides,
                                        const int64_t *b_strides, int64_t *a, int64_t *b) {
  for (int32_t d = last - 1; d >= first; --d) {
    *a += a_strides[d];
    *b += b_strides[d];
    if (++idx[d] < sizes[d]) return 1;
    *a -= sizes[d] * a_strides[d];
    *b -= sizes[d] * b_strides[d];
    idx[d] = 0;
  }
  return 0;
}

// Copies |n| elements of |elem_size| bytes from |src| to |dst|, stepping
// |src_step| and |dst_step| bytes; one memcpy when both steps are the element
// size. The two must not overlap. Thread-safe.
void tsr_ref_elems_copy(char *dst, int64_t dst_step, const char *src, int64_t src_step, int64_t n,
                        uint32_t elem_size);

// Writes the |elem_size|-byte pattern |bits| (low bytes) to |n| elements of
// |dst| stepping |dst_step| bytes. Thread-safe.
void tsr_ref_elems_fill(char *dst, int64_t dst_step, int64_t n, uint64_t bits, uint32_t elem_size);

// Copies the block [first, rank) described by |row| from |src| to |dst|,
// whose dimensions have |sizes| and strides in elements. Thread-safe.
void tsr_ref_block_copy(char *dst, const int64_t *dst_strides, const char *src,
                        const int64_t *src_strides, const int64_t *sizes, int32_t first,
                        const tsr_ref_row *row, uint32_t elem_size);

// Element offsets of the multi-index of |linear| (row-major over dimensions
// [0, ndim) of |sizes|) in two views. Pure; thread-safe.
void tsr_ref_offsets_get(int64_t linear, int32_t ndim, const int64_t *sizes,
                         const int64_t *a_strides, const int64_t *b_strides, int64_t *out_a,
                         int64_t *out_b);

// The bit pattern of float64 |value| converted to |dtype| as CAST converts a
// float64 (the half types rounded once, to nearest even). Pure; thread-safe.
uint64_t tsr_ref_value_bits_get(double value, tsr_dtype_t dtype);

// ---------------------------------------------------------------------------
// CONCAT. For each index over out's dimensions [0, axis) ("outer") and each
// input i, the block x_i[outer, ...] goes to out[outer, o_i + ..., ...].
#define TSR_REF_CONCAT_MAX_INPUTS (TSR_MAX_OPERANDS - 1)

typedef struct tsr_ref_concat_input {
  int64_t out_offset;  // elements: o_i * out's stride on axis
  tsr_ref_row row;     // dst = out, src = x_i; an empty input has n = 0
} tsr_ref_concat_input;

typedef struct tsr_ref_concat_plan {
  int32_t axis;
  int32_t reserved;
  int64_t outer_count;  // elements of out's dimensions [0, axis)
  int64_t grain;        // (outer, input) blocks per parallel chunk; 0 runs inline
  tsr_ref_concat_input inputs[TSR_REF_CONCAT_MAX_INPUTS];
} tsr_ref_concat_plan;

// ---------------------------------------------------------------------------
// PAD: out's rows (its last dimension) are walked; each row is the value, or
// a source row of x with its pads.
typedef struct tsr_ref_pad_plan {
  int32_t mode;          // tsr_pad_mode_t
  int32_t reserved;
  uint64_t value_bits;   // CONSTANT: the value in out's dtype
  int64_t pad_before[TSR_MAX_RANK];
  int64_t rows;          // out's elements / out's last size (1 for rank 0)
  int64_t grain;         // rows per parallel chunk; 0 runs inline
} tsr_ref_pad_plan;

// ---------------------------------------------------------------------------
// GATHER and SCATTER_ADD. The "slab" of an index along |axis| is the block of
// dimensions after it; the outer dimensions are those before it.
//
// SCATTER_ADD runs by destination: for each outer index and each position j
// of out's axis, out's slab j gets the slabs of src whose index is j, added in
// index order. The index list is sorted by destination at execution (a
// counting sort into the workspace), so every element of out is written by
// one thread, in one order, whatever the thread count.
typedef void (*tsr_ref_scatter_rows_fn)(char *dst, int64_t dst_step, const char *src,
                                        int64_t src_step, int64_t src_k_step, const int64_t *ks,
                                        int64_t nk, int64_t n);

typedef struct tsr_ref_index_plan {
  int32_t axis;
  int32_t index_is_i64;
  int64_t k;              // index length
  int64_t size;           // the indexed axis: x's (GATHER) or out's (SCATTER_ADD)
  int64_t index_stride;   // elements
  int64_t outer_count;    // elements of the dimensions before axis
  int64_t slab_elems;     // elements of a slab
  int64_t grain;          // items per parallel chunk; 0 runs inline
  tsr_ref_row row;        // the slab: dst = out, src = x (GATHER) or src (SCATTER_ADD)
  tsr_ref_scatter_rows_fn add;  // SCATTER_ADD's adder for the dtype
} tsr_ref_index_plan;

// ---------------------------------------------------------------------------
// RNG_FILL.
typedef struct tsr_ref_rng_plan {
  int32_t distribution;  // tsr_rng_distribution_t
  tsr_dtype_t dtype;
  uint32_t key[2];       // seed, low word first
  uint64_t offset;
  double a, b;
  int32_t dense;         // out is row-major contiguous: element i at i * elem_size
  int32_t reserved;
} tsr_ref_rng_plan;

// ---------------------------------------------------------------------------
// SGD_UPDATE and ADAM_UPDATE: elementwise over grad and the read-modify-write
// outputs, walked in the collapsed shape the elementwise engine computes.
struct tsr_ref_optim_plan;
typedef void (*tsr_ref_optim_loop_fn)(char *const *ptrs, const int64_t *steps, int64_t n,
                                      const struct tsr_ref_optim_plan *o);

// The attributes in one compute type, derived once at plan time.
#define TSR_REF_OPTIM_CONSTS(T)                                                              \
  struct {                                                                                   \
    T lr, weight_decay;                                                                      \
    T momentum, one_minus_dampening;          /* SGD */                                      \
    T beta1, one_minus_beta1, beta2, one_minus_beta2, bc2, eps, step_size, decay; /* Adam */ \
  }

typedef struct tsr_ref_optim_plan {
  tsr_ref_ew_plan shape;        // collapsed shape and byte strides; its loop is unused
  tsr_ref_optim_loop_fn contiguous, strided;
  int32_t has_momentum;         // SGD: momentum != 0
  int32_t nesterov;
  int32_t first_step;
  int32_t decoupled;            // Adam: AdamW
  TSR_REF_OPTIM_CONSTS(float) f32;
  TSR_REF_OPTIM_CONSTS(double) f64;
} tsr_ref_optim_plan;

#endif  // TESSERA_PLUGINS_REF_DATA_OPS_H_
