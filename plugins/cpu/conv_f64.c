// The conv kernels computing in float64: conv_impl.h instantiated for double.
#define TSR_CPU_CONV_T double
#define TSR_CPU_CONV_GEMM tsr_cpu_gemm_f64_execute
#define TSR_CPU_CONV_EXECUTE tsr_cpu_conv_f64_execute
#include "conv_impl.h"
