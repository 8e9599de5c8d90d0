// The float64 GEMM: gemm_impl.h instantiated for double.
#define TSR_CPU_GEMM_T double
#define TSR_CPU_GEMM_ELEM_BYTES 8
#define TSR_CPU_GEMM_TAG f64
#define TSR_CPU_GEMM_TANH tanh
#define TSR_CPU_GEMM_EXECUTE tsr_cpu_gemm_f64_execute
#define TSR_CPU_GEMM_GEOMETRY tsr_cpu_gemm_f64_geometry
#include "gemm_impl.h"
