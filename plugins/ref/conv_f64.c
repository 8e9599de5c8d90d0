// The conv kernels computing in float64: conv_impl.h instantiated for double.
#define TSR_REF_CONV_T double
#define TSR_REF_CONV_GEMM tsr_ref_gemm_f64_execute
#define TSR_REF_CONV_EXECUTE tsr_ref_conv_f64_execute
#include "conv_impl.h"
