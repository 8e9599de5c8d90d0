// The float32 GEMM: gemm_impl.h instantiated for float.
#define TSR_CPU_GEMM_T float
#define TSR_CPU_GEMM_ELEM_BYTES 4
#define TSR_CPU_GEMM_TAG f32
#define TSR_CPU_GEMM_TANH tanhf
#define TSR_CPU_GEMM_EXECUTE tsr_cpu_gemm_f32_execute
#define TSR_CPU_GEMM_GEOMETRY tsr_cpu_gemm_f32_geometry
#include "gemm_impl.h"
