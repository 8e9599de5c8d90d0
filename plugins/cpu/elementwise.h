// The elementwise engine: one loop nest over an output and up to three inputs
// of its shape (broadcast by stride 0), shared by fill, copy, cast, unary,
// binary, compare, where and clamp.
//
// Plan time collapses the shape (drops size-1 dimensions, orders dimensions by
// the output's strides, merges dimensions that are contiguous for every
// operand) and picks a loop function; execution walks rows of the innermost
// dimension and calls that function once per row.
#ifndef TESSERA_PLUGINS_CPU_ELEMENTWISE_H_
#define TESSERA_PLUGINS_CPU_ELEMENTWISE_H_

#include <stdint.h>

#include "tessera/abi.h"
#include "tsr_cpu/cpu_plan.h"

// Builds |ew| for |num_operands| operands (output last) described by their
// element sizes, sizes and strides in elements. Inputs have the output's rank
// and each size equals the output's or is 1 (read as stride 0): the caller has
// checked. Writes only |ew|; no allocation. Thread-safe.
void tsr_cpu_ew_plan_init(tsr_cpu_ew_plan *ew, int32_t num_operands, const int64_t *elem_sizes,
                          int32_t rank, const int64_t *const *sizes,
                          const int64_t *const *strides, tsr_cpu_ew_kernel kernel,
                          tsr_cpu_ew_cost cost);

// Runs |ew| over operands whose first elements are at ptrs[0..num_operands),
// output last; in parallel on the host's pool when large. No allocation, no
// locking. Thread-safe; |ew| is only read.
tsr_status tsr_cpu_ew_execute(const tsr_cpu_ew_plan *ew, char *const *ptrs);

#endif  // TESSERA_PLUGINS_CPU_ELEMENTWISE_H_
