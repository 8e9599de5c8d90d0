// The plan of MATMUL and the blocked GEMM that runs it.
#ifndef TESSERA_PLUGINS_CPU_MATMUL_H_
#define TESSERA_PLUGINS_CPU_MATMUL_H_

#include <stdint.h>

#include "tessera/abi.h"
#include "tsr_cpu/cpu_plan.h"

// The register tile and cache blocks of one dtype's GEMM in this build.
typedef struct tsr_cpu_gemm_geometry {
  int64_t mr, nr;   // micro-kernel tile: mr rows of A times nr columns of B
  int64_t kc;       // deepest packed panel; the plan evens the panels out over K,
                    // and their depth fixes the summation order
  int64_t mc_max;   // rows of A packed at once (L2-sized)
  int64_t nc_max;   // columns of B packed at once (L3-sized)
} tsr_cpu_gemm_geometry;

// The batch-1 product's column chunks (a task each; gemm_impl.h): 256
// columns run in register blocks over the whole of k while B fits the
// caches; from TSR_CPU_GEMV_STREAM_MIN_BYTES of B, chunks of up to 4096
// columns (one per thread where fewer) read B's rows from end to end.
#define TSR_CPU_GEMV_COLUMNS 256
#define TSR_CPU_GEMV_STREAM_COLUMNS 4096
#define TSR_CPU_GEMV_STREAM_MIN_BYTES (4.0 * 1024 * 1024)

// The geometry of the float32 and float64 GEMMs. Static storage.
extern const tsr_cpu_gemm_geometry tsr_cpu_gemm_f32_geometry;
extern const tsr_cpu_gemm_geometry tsr_cpu_gemm_f64_geometry;

// c[mr x nr] (rows |rs| apart) += a-sliver (kc x mr, packed) times b-sliver
// (kc x nr, packed): the micro-kernel alone, exported for the kernel
// benchmark (tests/bench_kernels.c). Thread-safe.
void tsr_cpu_gemm_tile_accumulate_f32(int64_t kc, const float *a, const float *b, float *c,
                                      int64_t rs);
void tsr_cpu_gemm_tile_accumulate_f64(int64_t kc, const double *a, const double *b, double *c,
                                      int64_t rs);

// Runs |mm| with a, b, [bias,] out at ptrs[0..) and |workspace| (64-byte
// aligned, the plan's size). No allocation, no locking. Thread-safe.
tsr_status tsr_cpu_gemm_f32_execute(const tsr_cpu_matmul_plan *mm, char *const *ptrs,
                                    char *workspace);
tsr_status tsr_cpu_gemm_f64_execute(const tsr_cpu_matmul_plan *mm, char *const *ptrs,
                                    char *workspace);
// bfloat16 and float16 operands, computed in float32 with float32's geometry;
// the plan must hold one depth panel (kc >= k).
tsr_status tsr_cpu_gemm_bf16_execute(const tsr_cpu_matmul_plan *mm, char *const *ptrs,
                                     char *workspace);
tsr_status tsr_cpu_gemm_f16_execute(const tsr_cpu_matmul_plan *mm, char *const *ptrs,
                                    char *workspace);

#endif  // TESSERA_PLUGINS_CPU_MATMUL_H_
