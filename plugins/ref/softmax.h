// The plan of SOFTMAX and SOFTMAX_BACKWARD: groups are the slices along the
// axis.
#ifndef TESSERA_PLUGINS_REF_SOFTMAX_H_
#define TESSERA_PLUGINS_REF_SOFTMAX_H_

#include <stdint.h>

#include "groups.h"
#include "tessera/abi.h"

typedef struct tsr_ref_softmax_plan {
  tsr_ref_groups groups;  // forward: x, y; backward: dy, y, dx
  tsr_dtype_t dtype;
  int32_t log;
  int64_t grain;         // slices per parallel chunk
  int64_t block;         // neighbouring slices packed at once (tsr_ref_groups_block)
  int64_t slot_doubles;  // one thread's scratch: |block| slices per packed operand
} tsr_ref_softmax_plan;

#endif  // TESSERA_PLUGINS_REF_SOFTMAX_H_
