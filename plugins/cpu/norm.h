// The plans of LAYER_NORM, BATCH_NORM and their backward ops.
//
// Statistics (layer norm's mean and rstd; batch norm's gamma, beta, running
// and saved statistics) are float32 for bfloat16 and float16 inputs and the
// input's dtype otherwise. Both compute in float64: each group (a layer-norm
// row, a batch-norm channel) is packed to doubles and its statistics taken in
// two passes, so results do not depend on the thread count.
#ifndef TESSERA_PLUGINS_CPU_NORM_H_
#define TESSERA_PLUGINS_CPU_NORM_H_

#include <stdint.h>

#include "tessera/abi.h"

// float32 for bfloat16 and float16, else |dtype|.
static inline tsr_dtype_t tsr_cpu_norm_stat_dtype(tsr_dtype_t dtype) {
  return (dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16) ? TSR_FLOAT32 : dtype;
}

#endif  // TESSERA_PLUGINS_CPU_NORM_H_
