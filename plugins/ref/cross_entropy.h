// The plan of CROSS_ENTROPY and CROSS_ENTROPY_BACKWARD: groups are the rows
// of logits [N, C].
#ifndef TESSERA_PLUGINS_REF_CROSS_ENTROPY_H_
#define TESSERA_PLUGINS_REF_CROSS_ENTROPY_H_

#include <stdint.h>

#include "groups.h"
#include "tessera/abi.h"

typedef struct tsr_ref_cross_entropy_plan {
  tsr_ref_groups groups;  // forward: logits; backward: logits, dlogits
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
} tsr_ref_cross_entropy_plan;

#endif  // TESSERA_PLUGINS_REF_CROSS_ENTROPY_H_
