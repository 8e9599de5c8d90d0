// The conv kernels computing in float32 (float32, bfloat16 and float16
// operands): conv_impl.h instantiated for float.
#define TSR_CPU_CONV_T float
#define TSR_CPU_CONV_GEMM tsr_cpu_gemm_f32_execute
#define TSR_CPU_CONV_EXECUTE tsr_cpu_conv_f32_execute
#include "conv_impl.h"
