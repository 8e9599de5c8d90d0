// Plans of REDUCE and ARG_REDUCE.
//
// Both see x as kept dimensions (one output element each) times reduced
// dimensions, each group collapsed where contiguous. REDUCE cuts the reduced
// range into segments of a fixed length and combines their partial results in
// order, so the result is the same on one thread or many, whether threads
// split the outputs or the segments.
#ifndef TESSERA_PLUGINS_CPU_REDUCE_H_
#define TESSERA_PLUGINS_CPU_REDUCE_H_

#include <stdint.h>

#include "tessera/abi.h"
#include "tsr_cpu/cpu_plan.h"

// Collapses |x| (sizes, strides in elements, |elem_size|) and |out| (strides
// in elements, elem size |out_elem_size|) into |shape|: the axes in
// |reduce_mask| are reduced. No allocation. Thread-safe.
void tsr_cpu_reduce_shape_init(tsr_cpu_reduce_shape *shape, int32_t rank, const int64_t *x_sizes,
                               const int64_t *x_strides, int64_t elem_size,
                               const int64_t *out_strides, int64_t out_elem_size,
                               uint32_t reduce_mask);

// Byte offsets in x and out of output element |index| of |shape|. Thread-safe.
void tsr_cpu_reduce_shape_offsets_get(const tsr_cpu_reduce_shape *shape, int64_t index,
                                      int64_t *out_x_offset, int64_t *out_out_offset);

#endif  // TESSERA_PLUGINS_CPU_REDUCE_H_
