// Plans of the ops that move, generate or update data rather than compute
// with it: CONCAT and PAD (concat.c, pad.c), GATHER and SCATTER_ADD
// (gather.c), RNG_FILL (rng.c), SGD_UPDATE and ADAM_UPDATE (optim.c); and the
// strided-copy helpers the first four share (data_ops.c).
#ifndef TESSERA_PLUGINS_CPU_DATA_OPS_H_
#define TESSERA_PLUGINS_CPU_DATA_OPS_H_

#include <stdint.h>

#include "elementwise.h"
#include "tessera/abi.h"
#include "tsr_cpu/cpu_plan.h"

// ---------------------------------------------------------------------------
// Strided copies. A block of dimensions [first, rank) of two views of one
// shape (a destination and a source) is copied as rows: the innermost
// dimensions that step uniformly in both views merge into one row, and an
// odometer walks the dimensions outside it. A row whose steps are both 1 is
// one memcpy.
// Finds the row of the block [first, rank) of |sizes| (every size > 0) for
// views with |dst_strides| and |src_strides| (elements). Pure; thread-safe.
void tsr_cpu_row_init(const int64_t *sizes, const int64_t *dst_strides, const int64_t *src_strides,
                      int32_t first, int32_t rank, tsr_cpu_row *out_row);

// Steps the multi-index |idx| over dimensions [first, last) of |sizes|
// (row-major, last fastest), moving the element offsets |a| and |b| of two
// views along. Returns 0 once every index has been visited (idx back at 0).
static inline int tsr_cpu_odometer_next(int64_t *idx, int32_t first, int32_t last,
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
void tsr_cpu_elems_copy(char *dst, int64_t dst_step, const char *src, int64_t src_step, int64_t n,
                        uint32_t elem_size);

// Writes the |elem_size|-byte pattern |bits| (low bytes) to |n| elements of
// |dst| stepping |dst_step| bytes. Thread-safe.
void tsr_cpu_elems_fill(char *dst, int64_t dst_step, int64_t n, uint64_t bits, uint32_t elem_size);

// Copies the block [first, rank) described by |row| from |src| to |dst|,
// whose dimensions have |sizes| and strides in elements. Thread-safe.
void tsr_cpu_block_copy(char *dst, const int64_t *dst_strides, const char *src,
                        const int64_t *src_strides, const int64_t *sizes, int32_t first,
                        const tsr_cpu_row *row, uint32_t elem_size);

// Element offsets of the multi-index of |linear| (row-major over dimensions
// [0, ndim) of |sizes|) in two views. Pure; thread-safe.
void tsr_cpu_offsets_get(int64_t linear, int32_t ndim, const int64_t *sizes,
                         const int64_t *a_strides, const int64_t *b_strides, int64_t *out_a,
                         int64_t *out_b);

// The bit pattern of float64 |value| converted to |dtype| as CAST converts a
// float64 (the half types rounded once, to nearest even). Pure; thread-safe.
uint64_t tsr_cpu_value_bits_get(double value, tsr_dtype_t dtype);

#endif  // TESSERA_PLUGINS_CPU_DATA_OPS_H_
