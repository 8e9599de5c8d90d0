// The float64 GEMM: gemm_impl.h instantiated for double.
#define TSR_REF_GEMM_T double
#define TSR_REF_GEMM_ELEM_BYTES 8
#define TSR_REF_GEMM_TAG f64
#define TSR_REF_GEMM_TANH tanh
#define TSR_REF_GEMM_EXECUTE tsr_ref_gemm_f64_execute
#define TSR_REF_GEMM_GEOMETRY tsr_ref_gemm_f64_geometry
#include "gemm_impl.h"
