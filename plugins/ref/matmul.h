// The plan of MATMUL and the blocked GEMM that runs it.
#ifndef TESSERA_PLUGINS_REF_MATMUL_H_
#define TESSERA_PLUGINS_REF_MATMUL_H_

#include <stdint.h>

#include "tessera/abi.h"

#define TSR_REF_MATMUL_MAX_BATCH (TSR_MAX_RANK - 2)

// The register tile and cache blocks of one dtype's GEMM in this build.
typedef struct tsr_ref_gemm_geometry {
  int64_t mr, nr;   // micro-kernel tile: mr rows of A times nr columns of B
  int64_t kc;       // deepest packed panel; the plan evens the panels out over K,
                    // and their depth fixes the summation order
  int64_t mc_max;   // rows of A packed at once (L2-sized)
  int64_t nc_max;   // columns of B packed at once (L3-sized)
} tsr_ref_gemm_geometry;

typedef enum tsr_ref_matmul_mode {
  TSR_REF_MATMUL_NAIVE = 0,    // tiny: direct loops, no packing
  TSR_REF_MATMUL_SERIAL = 1,   // blocked, on the calling thread
  TSR_REF_MATMUL_SPLIT = 2,    // blocked; each thread owns a block of C (rows or
                               // columns) and packs its own A and B
  TSR_REF_MATMUL_BATCHED = 3,  // blocked; threads take whole batch items
  TSR_REF_MATMUL_GEMV = 4,     // one row of A, B with unit columns: B streamed once,
                               // threads split N
} tsr_ref_matmul_mode;

typedef struct tsr_ref_matmul_plan {
  tsr_dtype_t dtype;
  int32_t activation;
  int32_t has_bias;
  int32_t mode;           // tsr_ref_matmul_mode
  int32_t gemv_parallel;  // GEMV: split N across threads
  double alpha, beta;
  int64_t m, n, k;
  int32_t batch_ndim;
  int32_t slots;          // per-thread regions in the workspace
  int64_t batch_count;
  int64_t batch_sizes[TSR_REF_MATMUL_MAX_BATCH];
  // Strides in elements; 0 where a batch dimension broadcasts.
  int64_t a_batch_strides[TSR_REF_MATMUL_MAX_BATCH];
  int64_t b_batch_strides[TSR_REF_MATMUL_MAX_BATCH];
  int64_t c_batch_strides[TSR_REF_MATMUL_MAX_BATCH];
  int64_t bias_batch_strides[TSR_REF_MATMUL_MAX_BATCH];
  int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, bias_rs, bias_cs;
  // Blocking, fixed at plan time.
  int64_t kc, mc, nc;
  int64_t split_m, split_n;  // SPLIT: parts of C's rows and of its columns, one block each
  int64_t m_part, n_part;    // SPLIT: rows and columns of a block (multiples of mr, nr)
  int64_t naive_grain;       // NAIVE: batch items per parallel chunk; 0 runs serially
  uint64_t slot_bytes;       // one thread's packing region
} tsr_ref_matmul_plan;

// The geometry of the float32 and float64 GEMMs. Static storage.
extern const tsr_ref_gemm_geometry tsr_ref_gemm_f32_geometry;
extern const tsr_ref_gemm_geometry tsr_ref_gemm_f64_geometry;

// Runs |mm| with a, b, [bias,] out at ptrs[0..) and |workspace| (64-byte
// aligned, the plan's size). No allocation, no locking. Thread-safe.
tsr_status tsr_ref_gemm_f32_execute(const tsr_ref_matmul_plan *mm, char *const *ptrs,
                                    char *workspace);
tsr_status tsr_ref_gemm_f64_execute(const tsr_ref_matmul_plan *mm, char *const *ptrs,
                                    char *workspace);
// bfloat16 and float16 operands, computed in float32 with float32's geometry;
// the plan must hold one depth panel (kc >= k).
tsr_status tsr_ref_gemm_bf16_execute(const tsr_ref_matmul_plan *mm, char *const *ptrs,
                                     char *workspace);
tsr_status tsr_ref_gemm_f16_execute(const tsr_ref_matmul_plan *mm, char *const *ptrs,
                                    char *workspace);

#endif  // TESSERA_PLUGINS_REF_MATMUL_H_
