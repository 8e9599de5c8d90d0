// Shared device helpers of the own kernels: element loads and stores with
// float32 accumulation for the half types, strided offsets, and launch
// geometry. Included by kernels_*.cu only.
#ifndef TESSERA_PLUGINS_CUDA_KERNELS_COMMON_CUH_
#define TESSERA_PLUGINS_CUDA_KERNELS_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda_kernels.h"

extern "C" tsr_status tsr_cuda_check(cudaError_t error, const char *function, const char *call);

namespace tsr_cuda {

// The type arithmetic happens in: float for the half types (ops.h), the
// element type otherwise.
template <typename T>
struct Acc {
  using type = T;
};
template <>
struct Acc<__half> {
  using type = float;
};
template <>
struct Acc<__nv_bfloat16> {
  using type = float;
};

__device__ __forceinline__ float to_acc(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float to_acc(float v) {
  return v;
}
__device__ __forceinline__ double to_acc(double v) {
  return v;
}
__device__ __forceinline__ int32_t to_acc(int32_t v) {
  return v;
}
__device__ __forceinline__ int64_t to_acc(int64_t v) {
  return v;
}
__device__ __forceinline__ uint8_t to_acc(uint8_t v) {
  return v;
}

template <typename T>
__device__ __forceinline__ T from_acc(typename Acc<T>::type v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_acc<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Offset in elements of the row-major position |linear| of |sizes| under
// |strides|. Division-bound, which only matters for tiny elementwise ops.
__device__ __forceinline__ int64_t offset_of(int64_t linear, int32_t rank, const int64_t *sizes,
                                             const int64_t *strides) {
  int64_t offset = 0;
  for (int32_t d = rank - 1; d >= 0; --d) {
    int64_t size = sizes[d];
    int64_t i = linear % size;
    linear /= size;
    offset += i * strides[d];
  }
  return offset;
}

constexpr int kThreads = 256;

// Blocks for |count| elements with grid-stride loops: capped so a huge
// tensor does not launch millions of blocks.
inline unsigned blocks_for(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > 65535LL * 8)
    blocks = 65535LL * 8;
  return (unsigned)blocks;
}

inline tsr_status launched(const char *what) {
  return tsr_cuda_check(cudaGetLastError(), what, "kernel launch");
}

inline int64_t view_numel(const tsr_cuda_view *v) {
  int64_t n = 1;
  for (int32_t d = 0; d < v->rank; ++d) n *= v->sizes[d];
  return n;
}

}  // namespace tsr_cuda

// One case of the dtype switches below: |BODY| with |T| bound to |TYPE|.
#define TSR_CUDA_DTYPE_CASE(DTYPE, TYPE, ...) \
  case DTYPE: {                               \
    using T = TYPE;                           \
    __VA_ARGS__;                              \
    break;                                    \
  }

// The float dtypes' cases.
#define TSR_CUDA_FLOAT_CASES(...)                            \
  TSR_CUDA_DTYPE_CASE(TSR_FLOAT32, float, __VA_ARGS__)       \
  TSR_CUDA_DTYPE_CASE(TSR_FLOAT64, double, __VA_ARGS__)      \
  TSR_CUDA_DTYPE_CASE(TSR_FLOAT16, __half, __VA_ARGS__)      \
  TSR_CUDA_DTYPE_CASE(TSR_BFLOAT16, __nv_bfloat16, __VA_ARGS__)

// Runs |BODY| with |T| bound to the element type of float |dtype|.
#define TSR_CUDA_FLOAT_SWITCH(dtype, ...) \
  switch (dtype) {                        \
    TSR_CUDA_FLOAT_CASES(__VA_ARGS__)     \
    default:                              \
      return TSR_UNSUPPORTED;             \
  }

// As TSR_CUDA_FLOAT_SWITCH, for every dtype (bool as uint8_t).
#define TSR_CUDA_ALL_SWITCH(dtype, ...)                  \
  switch (dtype) {                                       \
    TSR_CUDA_FLOAT_CASES(__VA_ARGS__)                    \
    TSR_CUDA_DTYPE_CASE(TSR_INT32, int32_t, __VA_ARGS__) \
    TSR_CUDA_DTYPE_CASE(TSR_INT64, int64_t, __VA_ARGS__) \
    TSR_CUDA_DTYPE_CASE(TSR_BOOL, uint8_t, __VA_ARGS__)  \
    default:                                             \
      return TSR_UNSUPPORTED;                            \
  }

#endif  // TESSERA_PLUGINS_CUDA_KERNELS_COMMON_CUH_
