// The plans of POOL2D and POOL2D_BACKWARD (MAX and AVG).
//
// Work items are (n, c) planes. Each plane is computed in float64 in the
// executing thread's slot of the workspace: the forward reads x through any
// strides and dtype into the slot, then walks the windows; the backward
// accumulates dx there, in a fixed (row-major output) order, and rounds once
// when it stores. The 2x2 stride-2 MAX pool on float32 (window2_f32) works
// on the operands in place instead, with identical results (pool.c says
// why). Planes never share an output element, so results do not
// depend on the thread count.
#ifndef TESSERA_PLUGINS_REF_POOL_H_
#define TESSERA_PLUGINS_REF_POOL_H_

#include <stdint.h>

#include "tessera/abi.h"

typedef struct tsr_ref_pool_plan {
  int32_t op;                 // TSR_OP_POOL2D or TSR_OP_POOL2D_BACKWARD
  tsr_dtype_t dtype;          // of x, y, dx, dy
  int32_t elem_size;
  int32_t kind;               // tsr_pool_kind_t
  int32_t count_include_pad;
  int32_t parallel;           // planes go to the host's pool
  int32_t slots;              // per-thread regions in the workspace
  int32_t window2;            // 2x2 windows, stride 2, no padding, all inside x
  int32_t window2_f32;        // ... MAX on float32, unit stride along W: no double staging
  int64_t n, c, h, w, oh, ow;
  int64_t kernel[2], stride[2], pad_before[2], pad_after[2], dilation[2];
  // Strides in elements: x (dx), y (dy), indices.
  int64_t xs[4], ys[4], is[4];
  int64_t grain;              // planes per parallel chunk
  uint64_t slot_bytes;
} tsr_ref_pool_plan;

#endif  // TESSERA_PLUGINS_REF_POOL_H_
