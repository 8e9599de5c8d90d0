// Plans of REDUCE and ARG_REDUCE.
//
// Both see x as kept dimensions (one output element each) times reduced
// dimensions, each group collapsed where contiguous. REDUCE cuts the reduced
// range into segments of a fixed length and combines their partial results in
// order, so the result is the same on one thread or many, whether threads
// split the outputs or the segments.
#ifndef TESSERA_PLUGINS_REF_REDUCE_H_
#define TESSERA_PLUGINS_REF_REDUCE_H_

#include <stdint.h>

#include "tessera/abi.h"

// A running result: float dtypes accumulate in double, int SUM and PROD in
// uint64 (wrapping), int MAX and MIN in int64.
typedef union tsr_ref_acc {
  double f;
  uint64_t u;
  int64_t i;
} tsr_ref_acc;

// Folds |n| elements, |stride| bytes apart, starting at |x| into |acc|.
typedef void (*tsr_ref_reduce_row_fn)(const char *x, int64_t n, int64_t stride, tsr_ref_acc *acc);
// Folds partial result |part| into |acc|.
typedef void (*tsr_ref_reduce_combine_fn)(tsr_ref_acc *acc, const tsr_ref_acc *part);
// Writes |acc| to |out| in the output dtype; |count| is how many elements
// were reduced (MEAN divides by it).
typedef void (*tsr_ref_reduce_store_fn)(const tsr_ref_acc *acc, int64_t count, char *out);

// Collapsed dimensions shared by both plans.
typedef struct tsr_ref_reduce_shape {
  int32_t kept_ndim;
  int32_t red_ndim;
  int64_t out_count;                    // product of kept sizes
  int64_t red_count;                    // product of reduced sizes
  int64_t kept_sizes[TSR_MAX_RANK];     // outermost first
  int64_t kept_x_strides[TSR_MAX_RANK];    // bytes
  int64_t kept_out_strides[TSR_MAX_RANK];  // bytes
  int64_t red_sizes[TSR_MAX_RANK];      // outermost first
  int64_t red_strides[TSR_MAX_RANK];    // bytes
} tsr_ref_reduce_shape;

typedef struct tsr_ref_reduce_plan {
  tsr_ref_reduce_shape shape;
  int64_t segment;      // reduced elements per partial result
  int64_t segments;     // ceil(red_count / segment), at least 1
  int32_t split;        // threads take (output, segment) pairs; partials in the workspace
  // Float SUM and MEAN whose innermost kept axis is contiguous in x: rows of
  // x are added into chunks of outputs at once (tsr_ref_reduce_columns_run);
  // 0 or the element size (4 or 8).
  int32_t columns;
  int32_t mean;         // columns: divide by red_count
  tsr_ref_acc init;
  tsr_ref_reduce_row_fn row;
  tsr_ref_reduce_combine_fn combine;
  tsr_ref_reduce_store_fn store;
} tsr_ref_reduce_plan;

// Index of the first maximum (minimum) of |n| >= 1 elements |stride| bytes
// apart, NaN ranking above (below) every number, the first NaN winning.
typedef int64_t (*tsr_ref_arg_scan_fn)(const char *x, int64_t n, int64_t stride);

typedef struct tsr_ref_arg_reduce_plan {
  tsr_ref_reduce_shape shape;  // one reduced dimension: the axis
  tsr_ref_arg_scan_fn scan;
} tsr_ref_arg_reduce_plan;

// Collapses |x| (sizes, strides in elements, |elem_size|) and |out| (strides
// in elements, elem size |out_elem_size|) into |shape|: the axes in
// |reduce_mask| are reduced. No allocation. Thread-safe.
void tsr_ref_reduce_shape_init(tsr_ref_reduce_shape *shape, int32_t rank, const int64_t *x_sizes,
                               const int64_t *x_strides, int64_t elem_size,
                               const int64_t *out_strides, int64_t out_elem_size,
                               uint32_t reduce_mask);

// Byte offsets in x and out of output element |index| of |shape|. Thread-safe.
void tsr_ref_reduce_shape_offsets_get(const tsr_ref_reduce_shape *shape, int64_t index,
                                      int64_t *out_x_offset, int64_t *out_out_offset);

#endif  // TESSERA_PLUGINS_REF_REDUCE_H_
