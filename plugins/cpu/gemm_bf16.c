// The bfloat16 GEMM: gemm_impl.h computing in float32 on bfloat16 storage. It
// shares float32's geometry (tsr_cpu_gemm_f32_geometry).
#include <stdint.h>

#include "half.h"

#define TSR_CPU_GEMM_T float
#define TSR_CPU_GEMM_ELEM_BYTES 4
#define TSR_CPU_GEMM_TAG f32
#define TSR_CPU_GEMM_TANH tanhf
#define TSR_CPU_GEMM_EXECUTE tsr_cpu_gemm_bf16_execute
#define TSR_CPU_GEMM_S uint16_t
#define TSR_CPU_GEMM_LOAD(v) tsr_cpu_bf16_to_f32(v)
#define TSR_CPU_GEMM_STORE(v) tsr_cpu_f32_to_bf16(v)
#include "gemm_impl.h"
