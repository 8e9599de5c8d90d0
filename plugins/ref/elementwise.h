// The elementwise engine: one loop nest over an output and up to three inputs
// of its shape (broadcast by stride 0), shared by fill, copy, cast, unary,
// binary, compare, where and clamp.
//
// Plan time collapses the shape (drops size-1 dimensions, orders dimensions by
// the output's strides, merges dimensions that are contiguous for every
// operand) and picks a loop function; execution walks rows of the innermost
// dimension and calls that function once per row.
#ifndef TESSERA_PLUGINS_REF_ELEMENTWISE_H_
#define TESSERA_PLUGINS_REF_ELEMENTWISE_H_

#include <stdint.h>

#include "tessera/abi.h"

// The inputs in signature order, then the output: the plan's own order, so
// execution hands its operand pointers over unchanged.
#define TSR_REF_EW_MAX_OPERANDS 4

// Constants a loop reads; converted to each dtype once, at plan time.
typedef struct tsr_ref_ew_params {
  double alpha_f64;
  float alpha_f32;
  int64_t alpha_i64;
  double lo_f64, hi_f64;
  float lo_f32, hi_f32;
  int64_t lo_i64, hi_i64;  // CLAMP: a missing bound is the dtype's extreme
  uint64_t fill_bits;  // FILL: the value's bit pattern in the output dtype
} tsr_ref_ew_params;

// Processes |n| elements of one row. ptrs[k] is operand k's first element,
// strides[k] its step in bytes.
typedef void (*tsr_ref_ew_loop_fn)(char *const *ptrs, const int64_t *strides, int64_t n,
                                   const tsr_ref_ew_params *params);

// The pair of loops one kernel provides: |contiguous| may assume every
// operand's step is its element size, |strided| takes any steps.
typedef struct tsr_ref_ew_kernel {
  tsr_ref_ew_loop_fn contiguous;
  tsr_ref_ew_loop_fn strided;
} tsr_ref_ew_kernel;

// Relative cost of one element, which sets how much work a parallel chunk gets.
typedef enum tsr_ref_ew_cost {
  TSR_REF_EW_CHEAP = 0,      // a load, an add, a store
  TSR_REF_EW_EXPENSIVE = 1,  // a libm call per element
} tsr_ref_ew_cost;

typedef struct tsr_ref_ew_plan {
  int32_t num_operands;
  int32_t ndim;                  // after collapsing; 0 for a single element
  int64_t numel;
  int64_t grain;                 // elements per parallel chunk; below 2 * grain runs inline
  int64_t sizes[TSR_MAX_RANK];   // outermost first
  int64_t strides[TSR_MAX_RANK][TSR_REF_EW_MAX_OPERANDS];  // bytes
  int64_t inner_strides[TSR_REF_EW_MAX_OPERANDS];          // bytes, innermost dimension
  tsr_ref_ew_loop_fn loop;
  tsr_ref_ew_params params;
} tsr_ref_ew_plan;

// Builds |ew| for |num_operands| operands (output last) described by their
// element sizes, sizes and strides in elements. Inputs have the output's rank
// and each size equals the output's or is 1 (read as stride 0): the caller has
// checked. Writes only |ew|; no allocation. Thread-safe.
void tsr_ref_ew_plan_init(tsr_ref_ew_plan *ew, int32_t num_operands, const int64_t *elem_sizes,
                          int32_t rank, const int64_t *const *sizes,
                          const int64_t *const *strides, tsr_ref_ew_kernel kernel,
                          tsr_ref_ew_cost cost);

// Runs |ew| over operands whose first elements are at ptrs[0..num_operands),
// output last; in parallel on the host's pool when large. No allocation, no
// locking. Thread-safe; |ew| is only read.
tsr_status tsr_ref_ew_execute(const tsr_ref_ew_plan *ew, char *const *ptrs);

#endif  // TESSERA_PLUGINS_REF_ELEMENTWISE_H_
