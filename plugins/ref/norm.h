// The plans of LAYER_NORM, BATCH_NORM and their backward ops.
//
// Statistics (layer norm's mean and rstd; batch norm's gamma, beta, running
// and saved statistics) are float32 for bfloat16 and float16 inputs and the
// input's dtype otherwise. Both compute in float64: each group (a layer-norm
// row, a batch-norm channel) is packed to doubles and its statistics taken in
// two passes, so results do not depend on the thread count.
#ifndef TESSERA_PLUGINS_REF_NORM_H_
#define TESSERA_PLUGINS_REF_NORM_H_

#include <stdint.h>

#include "groups.h"
#include "tessera/abi.h"

// float32 for bfloat16 and float16, else |dtype|.
static inline tsr_dtype_t tsr_ref_norm_stat_dtype(tsr_dtype_t dtype) {
  return (dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16) ? TSR_FLOAT32 : dtype;
}

// Groups are the rows over the normalised axes. Group operand k is plan
// operand k (inputs, then outputs).
typedef struct tsr_ref_layer_norm_plan {
  tsr_ref_groups groups;
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
} tsr_ref_layer_norm_plan;

// Groups are the channels: x (and y, dy, dx) over every axis but 1.
typedef struct tsr_ref_batch_norm_plan {
  tsr_ref_groups groups;  // forward: x, y; backward: dy, x, dx
  tsr_dtype_t dtype;
  tsr_dtype_t stat_dtype;
  int32_t training;
  int32_t reserved;
  double eps, momentum;         // in the compute type
  int64_t channel_strides[10];  // bytes, per plan operand; 0 for x-shaped ones
  int64_t grain;                // channels per parallel chunk
  int64_t slot_doubles;
} tsr_ref_batch_norm_plan;

#endif  // TESSERA_PLUGINS_REF_NORM_H_
