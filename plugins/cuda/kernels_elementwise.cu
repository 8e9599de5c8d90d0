// Elementwise kernels with broadcasting and arbitrary strides: FILL, COPY,
// CAST, UNARY(_BACKWARD), BINARY, COMPARE, WHERE, CLAMP, and the activation
// and bias epilogues matmul.c and conv.c apply after a vendor call.
//
// One thread per output element in a grid-stride loop; each operand's offset
// comes from the output's multi-index and that operand's strides (0 where it
// broadcasts). Memory-bound: the index arithmetic costs integer divisions
// that hide behind the loads. Not measured on a GPU yet (docs/cuda.md).
// The formulas follow plugins/cpu/unary.c and tsr_cpu/cpu_kernels.h exactly, so NaN
// handling and derivatives agree with every other backend.
#include <math.h>

#include <type_traits>

#include "kernels_common.cuh"

namespace tsr_cuda {

template <typename A>
__device__ A sigmoid(A x) {
  return A(1) / (A(1) + exp(-x));
}

template <typename A>
__device__ A unary_float(int fn, A x, A alpha) {
  const A k = A(0.79788456080286535588);
  switch (fn) {
    case TSR_UNARY_NEG:
      return -x;
    case TSR_UNARY_ABS:
      return fabs(x);
    case TSR_UNARY_EXP:
      return exp(x);
    case TSR_UNARY_LOG:
      return log(x);
    case TSR_UNARY_SQRT:
      return sqrt(x);
    case TSR_UNARY_RSQRT:
      return A(1) / sqrt(x);
    case TSR_UNARY_RECIPROCAL:
      return A(1) / x;
    case TSR_UNARY_SQUARE:
      return x * x;
    case TSR_UNARY_SIN:
      return sin(x);
    case TSR_UNARY_COS:
      return cos(x);
    case TSR_UNARY_TANH:
      return tanh(x);
    case TSR_UNARY_SIGMOID:
      return sigmoid(x);
    case TSR_UNARY_RELU:
      return x < A(0) ? A(0) : x;
    case TSR_UNARY_GELU:
      return A(0.5) * x * (A(1) + erf(x * A(0.70710678118654752440)));
    case TSR_UNARY_GELU_TANH:
      return A(0.5) * x * (A(1) + tanh(k * (x + A(0.044715) * x * x * x)));
    case TSR_UNARY_SILU:
      return x * sigmoid(x);
    case TSR_UNARY_LEAKY_RELU:
      return x > A(0) ? x : alpha * x;
    case TSR_UNARY_ELU:
      return x > A(0) ? x : alpha * expm1(x);
    case TSR_UNARY_SIGN:
      return x > A(0) ? A(1) : (x < A(0) ? A(-1) : x);
    case TSR_UNARY_FLOOR:
      return floor(x);
    case TSR_UNARY_CEIL:
      return ceil(x);
    case TSR_UNARY_ROUND:
      return rint(x);  // half to even
    case TSR_UNARY_LOG1P:
      return log1p(x);
    case TSR_UNARY_EXPM1:
      return expm1(x);
    case TSR_UNARY_ERF:
      return erf(x);
    default:
      return x;
  }
}

template <typename A>
__device__ A unary_grad(int fn, A a, A b, A alpha) {
  const A k = A(0.79788456080286535588);
  switch (fn) {
    case TSR_UNARY_NEG:
      return b != b ? b : -a;
    case TSR_UNARY_ABS:
      return b > A(0) ? a : (b < A(0) ? -a : (b == A(0) ? A(0) : b));
    case TSR_UNARY_EXP:
      return a * exp(b);
    case TSR_UNARY_LOG:
      return a / b;
    case TSR_UNARY_SQRT:
      return a / (A(2) * sqrt(b));
    case TSR_UNARY_RSQRT:
      return A(-0.5) * a / (b * sqrt(b));
    case TSR_UNARY_RECIPROCAL:
      return -a / (b * b);
    case TSR_UNARY_SQUARE:
      return A(2) * b * a;
    case TSR_UNARY_SIN:
      return a * cos(b);
    case TSR_UNARY_COS:
      return -a * sin(b);
    case TSR_UNARY_TANH: {
      A t = tanh(b);
      return a * (A(1) - t * t);
    }
    case TSR_UNARY_SIGMOID: {
      A s = sigmoid(b);
      return a * s * (A(1) - s);
    }
    case TSR_UNARY_RELU:
      return b > A(0) ? a : (b != b ? b : A(0));
    case TSR_UNARY_GELU: {
      A cdf = A(0.5) * (A(1) + erf(b * A(0.70710678118654752440)));
      A pdf = A(0.39894228040143267794) * exp(A(-0.5) * b * b);
      return a * (cdf + b * pdf);
    }
    case TSR_UNARY_GELU_TANH: {
      A t = tanh(k * (b + A(0.044715) * b * b * b));
      A du = k * (A(1) + A(3 * 0.044715) * b * b);
      return a * (A(0.5) * (A(1) + t) + A(0.5) * b * (A(1) - t * t) * du);
    }
    case TSR_UNARY_SILU: {
      A s = sigmoid(b);
      return a * s * (A(1) + b * (A(1) - s));
    }
    case TSR_UNARY_LEAKY_RELU:
      return b > A(0) ? a : (b != b ? b : alpha * a);
    case TSR_UNARY_ELU:
      return b > A(0) ? a : alpha * a * exp(b);
    case TSR_UNARY_LOG1P:
      return a / (A(1) + b);
    case TSR_UNARY_EXPM1:
      return a * exp(b);
    case TSR_UNARY_ERF:
      return a * A(1.12837916709551257390) * exp(-b * b);
    default:
      return a;
  }
}

// Integer arithmetic wraps modulo 2^bits through the unsigned type.
template <typename T>
struct Unsigned;
template <>
struct Unsigned<int32_t> {
  using type = uint32_t;
};
template <>
struct Unsigned<int64_t> {
  using type = uint64_t;
};
template <>
struct Unsigned<uint8_t> {
  using type = uint8_t;
};

template <typename T>
__device__ T unary_int(int fn, T x) {
  if constexpr (std::is_same<T, uint8_t>::value) {
    (void)fn;
    return (T)(x == 0);  // bool takes LOGICAL_NOT only
  } else {
    using U = typename Unsigned<T>::type;
    switch (fn) {
      case TSR_UNARY_NEG:
        return (T)((U)0 - (U)x);
      case TSR_UNARY_ABS:
        return x < 0 ? (T)((U)0 - (U)x) : x;
      case TSR_UNARY_SQUARE:
        return (T)((U)x * (U)x);
      case TSR_UNARY_RELU:
        return x < 0 ? T(0) : x;
      case TSR_UNARY_SIGN:
        return (T)((x > 0) - (x < 0));
      default:
        return x;
    }
  }
}

template <typename A>
__device__ A binary_float(int fn, A a, A b, A alpha) {
  switch (fn) {
    case TSR_BINARY_ADD:
      return a + alpha * b;
    case TSR_BINARY_SUB:
      return a - alpha * b;
    case TSR_BINARY_MUL:
      return a * b;
    case TSR_BINARY_DIV:
      return a / b;
    case TSR_BINARY_MAXIMUM:
      return (a != a || b != b) ? a + b : (a > b ? a : b);
    case TSR_BINARY_MINIMUM:
      return (a != a || b != b) ? a + b : (a < b ? a : b);
    case TSR_BINARY_POW:
      return pow(a, b);
    default:
      return a;
  }
}

template <typename T>
__device__ T binary_int(int fn, T a, T b, int64_t alpha) {
  using U = typename Unsigned<T>::type;
  switch (fn) {
    case TSR_BINARY_ADD:
      return (T)((U)a + (U)((U)alpha * (U)b));
    case TSR_BINARY_SUB:
      return (T)((U)a - (U)((U)alpha * (U)b));
    case TSR_BINARY_MUL:
      return (T)((U)a * (U)b);
    case TSR_BINARY_DIV:
      if (b == 0)
        return T(0);
      if (b == T(-1))
        return (T)((U)0 - (U)a);  // INT_MIN / -1 wraps
      return a / b;
    case TSR_BINARY_MAXIMUM:
      return a > b ? a : b;
    case TSR_BINARY_MINIMUM:
      return a < b ? a : b;
    case TSR_BINARY_LOGICAL_AND:
      return (T)(a != 0 && b != 0);
    case TSR_BINARY_LOGICAL_OR:
      return (T)(a != 0 || b != 0);
    case TSR_BINARY_LOGICAL_XOR:
      return (T)((a != 0) != (b != 0));
    default:
      return a;
  }
}

template <typename A>
__device__ bool compare(int fn, A a, A b) {
  switch (fn) {
    case TSR_COMPARE_EQ:
      return a == b;
    case TSR_COMPARE_NE:
      return a != b;
    case TSR_COMPARE_LT:
      return a < b;
    case TSR_COMPARE_LE:
      return a <= b;
    case TSR_COMPARE_GT:
      return a > b;
    case TSR_COMPARE_GE:
      return a >= b;
    default:
      return false;
  }
}

template <typename T>
constexpr bool is_float() {
  return !(std::is_same<T, int32_t>::value || std::is_same<T, int64_t>::value ||
           std::is_same<T, uint8_t>::value);
}

template <typename T>
__global__ void ew_kernel(tsr_cuda_ew_args args, int64_t count, char *out, const char *in0,
                          const char *in1, const char *in2) {
  using A = typename Acc<T>::type;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = offset_of(i, args.rank, args.sizes, args.out_strides);
    int64_t o0 = args.num_inputs > 0 ? offset_of(i, args.rank, args.sizes, args.in_strides[0]) : 0;
    int64_t o1 = args.num_inputs > 1 ? offset_of(i, args.rank, args.sizes, args.in_strides[1]) : 0;
    switch (args.kind) {
      case TSR_CUDA_EW_FILL: {
        T v;
        memcpy(&v, &args.fill_bits, sizeof(T));
        ((T *)out)[o] = v;
        break;
      }
      case TSR_CUDA_EW_COPY:
        ((T *)out)[o] = ((const T *)in0)[o0];
        break;
      case TSR_CUDA_EW_UNARY: {
        A x = to_acc(((const T *)in0)[o0]);
        A r;
        if constexpr (is_float<T>())
          r = unary_float<A>(args.fn, x, (A)args.alpha);
        else
          r = unary_int<T>(args.fn, x);
        ((T *)out)[o] = from_acc<T>(r);
        break;
      }
      case TSR_CUDA_EW_UNARY_BACKWARD:
        if constexpr (is_float<T>()) {
          A a = to_acc(((const T *)in0)[o0]);
          A b = to_acc(((const T *)in1)[o1]);
          ((T *)out)[o] = from_acc<T>(unary_grad<A>(args.fn, a, b, (A)args.alpha));
        }
        break;
      case TSR_CUDA_EW_BINARY: {
        A a = to_acc(((const T *)in0)[o0]);
        A b = to_acc(((const T *)in1)[o1]);
        A r;
        if constexpr (is_float<T>())
          r = binary_float<A>(args.fn, a, b, (A)args.alpha);
        else
          r = binary_int<T>(args.fn, a, b, args.alpha_i);
        ((T *)out)[o] = from_acc<T>(r);
        break;
      }
      case TSR_CUDA_EW_COMPARE: {
        A a = to_acc(((const T *)in0)[o0]);
        A b = to_acc(((const T *)in1)[o1]);
        ((uint8_t *)out)[o] = compare<A>(args.fn, a, b) ? 1 : 0;
        break;
      }
      case TSR_CUDA_EW_WHERE: {
        int64_t o2 = offset_of(i, args.rank, args.sizes, args.in_strides[2]);
        bool c = ((const uint8_t *)in0)[o0] != 0;
        ((T *)out)[o] = c ? ((const T *)in1)[o1] : ((const T *)in2)[o2];
        break;
      }
      case TSR_CUDA_EW_CLAMP: {
        A x = to_acc(((const T *)in0)[o0]);
        if constexpr (is_float<T>()) {
          A lo = (A)args.lo, hi = (A)args.hi;
          x = x < lo ? lo : x;
          x = x > hi ? hi : x;
        } else {
          T lo = (T)args.lo_i, hi = (T)args.hi_i;
          x = x < lo ? lo : x;
          x = x > hi ? hi : x;
        }
        ((T *)out)[o] = from_acc<T>(x);
        break;
      }
      default:
        break;
    }
  }
}

// CAST: through double for float sources (exact), directly for integers.
template <typename To>
__device__ To cast_from_double(double d) {
  if constexpr (std::is_same<To, float>::value) {
    return (float)d;
  } else if constexpr (std::is_same<To, double>::value) {
    return d;
  } else if constexpr (std::is_same<To, __half>::value) {
    return __double2half(d);
  } else if constexpr (std::is_same<To, __nv_bfloat16>::value) {
    return __double2bfloat16(d);
  } else if constexpr (std::is_same<To, uint8_t>::value) {
    return d != 0.0 ? 1 : 0;
  } else {
    // Truncate toward zero, saturate, NaN -> 0.
    if (d != d)
      return To(0);
    const double lo = std::is_same<To, int32_t>::value ? -2147483648.0 : -9223372036854775808.0;
    const double hi = std::is_same<To, int32_t>::value ? 2147483647.0 : 9223372036854775807.0;
    if (d <= lo)
      return std::is_same<To, int32_t>::value ? (To)INT32_MIN : (To)INT64_MIN;
    if (d >= hi)
      return std::is_same<To, int32_t>::value ? (To)INT32_MAX : (To)INT64_MAX;
    return (To)d;
  }
}

template <typename To, typename From>
__device__ To cast_value(From v) {
  if constexpr (std::is_same<From, int32_t>::value || std::is_same<From, int64_t>::value ||
                std::is_same<From, uint8_t>::value) {
    if constexpr (std::is_same<To, float>::value) {
      return (float)v;
    } else if constexpr (std::is_same<To, double>::value) {
      return (double)v;
    } else if constexpr (std::is_same<To, __half>::value) {
      return __ll2half_rn((long long)v);
    } else if constexpr (std::is_same<To, __nv_bfloat16>::value) {
      return __float2bfloat16_rn((float)v);
    } else if constexpr (std::is_same<To, uint8_t>::value) {
      return v != 0 ? 1 : 0;
    } else {
      return (To)v;
    }
  } else {
    return cast_from_double<To>((double)to_acc(v));
  }
}

template <typename To, typename From>
__global__ void cast_kernel(tsr_cuda_ew_args args, int64_t count, char *out, const char *in) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = offset_of(i, args.rank, args.sizes, args.out_strides);
    int64_t o0 = offset_of(i, args.rank, args.sizes, args.in_strides[0]);
    ((To *)out)[o] = cast_value<To, From>(((const From *)in)[o0]);
  }
}

template <typename A>
__device__ A activation(tsr_activation_t act, A x) {
  switch (act) {
    case TSR_ACTIVATION_RELU:
      return unary_float<A>(TSR_UNARY_RELU, x, A(0));
    case TSR_ACTIVATION_GELU:
      return unary_float<A>(TSR_UNARY_GELU, x, A(0));
    case TSR_ACTIVATION_GELU_TANH:
      return unary_float<A>(TSR_UNARY_GELU_TANH, x, A(0));
    case TSR_ACTIVATION_SIGMOID:
      return sigmoid(x);
    case TSR_ACTIVATION_TANH:
      return tanh(x);
    default:
      return x;
  }
}

template <typename T>
__global__ void activation_kernel(tsr_activation_t act, T *data, int64_t count) {
  using A = typename Acc<T>::type;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x)
    data[i] = from_acc<T>(activation<A>(act, to_acc(data[i])));
}

template <typename T>
__global__ void channel_bias_act_kernel(T *y, const T *bias, tsr_activation_t act, int64_t n,
                                        int64_t c, int64_t h, int64_t w, int64_t s0, int64_t s1,
                                        int64_t s2, int64_t s3) {
  using A = typename Acc<T>::type;
  int64_t count = n * c * h * w;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t wi = i % w, hi = (i / w) % h, ci = (i / (w * h)) % c, ni = i / (w * h * c);
    T *p = y + ni * s0 + ci * s1 + hi * s2 + wi * s3;
    A v = to_acc(*p);
    if (bias != nullptr)
      v += to_acc(bias[ci]);
    *p = from_acc<T>(activation<A>(act, v));
  }
}

}  // namespace tsr_cuda

using namespace tsr_cuda;

template <typename To>
static tsr_status cast_launch(const tsr_cuda_ew_args *args, int64_t count, void *out,
                              const void *in, cudaStream_t stream) {
  unsigned blocks = blocks_for(count);
  switch (args->in_dtype) {
    case TSR_FLOAT32:
      cast_kernel<To, float>
          <<<blocks, kThreads, 0, stream>>>(*args, count, (char *)out, (const char *)in);
      break;
    case TSR_FLOAT64:
      cast_kernel<To, double>
          <<<blocks, kThreads, 0, stream>>>(*args, count, (char *)out, (const char *)in);
      break;
    case TSR_FLOAT16:
      cast_kernel<To, __half>
          <<<blocks, kThreads, 0, stream>>>(*args, count, (char *)out, (const char *)in);
      break;
    case TSR_BFLOAT16:
      cast_kernel<To, __nv_bfloat16>
          <<<blocks, kThreads, 0, stream>>>(*args, count, (char *)out, (const char *)in);
      break;
    case TSR_INT32:
      cast_kernel<To, int32_t>
          <<<blocks, kThreads, 0, stream>>>(*args, count, (char *)out, (const char *)in);
      break;
    case TSR_INT64:
      cast_kernel<To, int64_t>
          <<<blocks, kThreads, 0, stream>>>(*args, count, (char *)out, (const char *)in);
      break;
    case TSR_BOOL:
      cast_kernel<To, uint8_t>
          <<<blocks, kThreads, 0, stream>>>(*args, count, (char *)out, (const char *)in);
      break;
    default:
      return TSR_UNSUPPORTED;
  }
  return launched("cast");
}

extern "C" tsr_status tsr_cuda_launch_elementwise(const tsr_cuda_ew_args *args, void *out,
                                                  const void *const *inputs, cudaStream_t stream) {
  int64_t count = 1;
  for (int32_t d = 0; d < args->rank; ++d) count *= args->sizes[d];
  if (count == 0)
    return TSR_OK;
  if (args->kind == TSR_CUDA_EW_CAST) {
    TSR_CUDA_ALL_SWITCH(args->out_dtype,
                        return cast_launch<T>(args, count, out, inputs[0], stream));
  }
  const char *in[3] = {nullptr, nullptr, nullptr};
  for (int32_t i = 0; i < args->num_inputs && i < 3; ++i) in[i] = (const char *)inputs[i];
  unsigned blocks = blocks_for(count);
  TSR_CUDA_ALL_SWITCH(args->in_dtype, ew_kernel<T><<<blocks, kThreads, 0, stream>>>(
                                          *args, count, (char *)out, in[0], in[1], in[2]));
  return launched("elementwise");
}

extern "C" tsr_status tsr_cuda_activation_apply(tsr_activation_t act, tsr_dtype_t dtype, void *data,
                                                int64_t count, cudaStream_t stream) {
  if (count == 0 || act == TSR_ACTIVATION_NONE)
    return TSR_OK;
  unsigned blocks = blocks_for(count);
  TSR_CUDA_FLOAT_SWITCH(
      dtype, activation_kernel<T><<<blocks, kThreads, 0, stream>>>(act, (T *)data, count));
  return launched("activation");
}

extern "C" tsr_status tsr_cuda_launch_channel_bias_act(tsr_dtype_t dtype, void *y, const void *bias,
                                                       tsr_activation_t activation, int64_t n,
                                                       int64_t c, int64_t h, int64_t w,
                                                       const int64_t *strides,
                                                       cudaStream_t stream) {
  int64_t count = n * c * h * w;
  if (count == 0)
    return TSR_OK;
  unsigned blocks = blocks_for(count);
  TSR_CUDA_FLOAT_SWITCH(dtype, channel_bias_act_kernel<T><<<blocks, kThreads, 0, stream>>>(
                                   (T *)y, (const T *)bias, activation, n, c, h, w, strides[0],
                                   strides[1], strides[2], strides[3]));
  return launched("conv2d bias and activation");
}
