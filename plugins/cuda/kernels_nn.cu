// Network kernels: fused cross-entropy, the fused optimizer updates, RNG
// fill (Philox-4x32-10 as ops.h specifies, bit for bit), gather and
// scatter-add, and pooling.
//
// Data-dependent errors (an index or target out of range) set the stream's
// error word instead of touching memory outside the operands; streams.c
// reports it at the next synchronize or query. Only SCATTER_ADD uses atomics
// (its float results are therefore not bit-reproducible, and plans say so);
// pooling's backward gathers per input element, so it needs none.
#include <math.h>

#include <type_traits>

#include "kernels_common.cuh"

namespace tsr_cuda {

// --- cross-entropy ----------------------------------------------------------

template <typename A>
__device__ A block_sum(A v) {
  __shared__ A shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step >>= 1) {
    if ((int)threadIdx.x < step)
      shared[threadIdx.x] += shared[threadIdx.x + step];
    __syncthreads();
  }
  A r = shared[0];
  __syncthreads();
  return r;
}

template <typename A>
__device__ A block_max(A v) {
  __shared__ A shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step >>= 1) {
    if ((int)threadIdx.x < step) {
      A o = shared[threadIdx.x + step];
      A m = shared[threadIdx.x];
      shared[threadIdx.x] = (m != m || m > o) ? m : o;
    }
    __syncthreads();
  }
  A r = shared[0];
  __syncthreads();
  return r;
}

// Per row: lse, and the row's loss into |row_loss| (0 for an ignored row).
template <typename T>
__global__ void cross_entropy_rows(const T *logits, int64_t row_stride, const int64_t *target,
                                   int64_t target_stride, int64_t n, int64_t c,
                                   int64_t ignore_index, double smoothing, double *row_loss,
                                   float *lse, int64_t lse_stride, int *error_word) {
  using A = typename Acc<T>::type;
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    const T *x = logits + row * row_stride;
    A m = -INFINITY;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      A v = to_acc(x[j]);
      m = (m != m || m > v) ? m : v;
    }
    m = block_max<A>(m);
    A sum = 0, sum_x = 0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      A v = to_acc(x[j]);
      sum += exp(v - m);
      sum_x += v;
    }
    sum = block_sum<A>(sum);
    sum_x = block_sum<A>(sum_x);
    if (threadIdx.x == 0) {
      A l = m + log(sum);
      lse[row * lse_stride] = (float)l;
      int64_t t = target[row * target_stride];
      double loss = 0.0;
      if (t != ignore_index) {
        if (t < 0 || t >= c) {
          atomicExch(error_word, TSR_CUDA_KERNEL_ERROR_TARGET);
        } else {
          loss = (double)l - (1.0 - smoothing) * (double)to_acc(x[t]) -
                 smoothing / (double)c * (double)sum_x;
        }
      }
      row_loss[row] = loss;
    }
  }
}

template <typename T>
__global__ void cross_entropy_none(const double *row_loss, int64_t n, T *loss,
                                   int64_t loss_stride) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    loss[i * loss_stride] = from_acc<T>((typename Acc<T>::type)row_loss[i]);
}

// One block: the rows in a fixed order, so the sum is reproducible.
template <typename T>
__global__ void cross_entropy_total(const double *row_loss, const int64_t *target,
                                    int64_t target_stride, int64_t n, int64_t ignore_index,
                                    int mean, T *loss) {
  double sum = 0.0, count = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    sum += row_loss[i];
    count += target[i * target_stride] != ignore_index ? 1.0 : 0.0;
  }
  sum = block_sum<double>(sum);
  count = block_sum<double>(count);
  if (threadIdx.x == 0)
    *loss = from_acc<T>((typename Acc<T>::type)(mean ? sum / count : sum));
}

__global__ void count_valid(const int64_t *target, int64_t target_stride, int64_t n,
                            int64_t ignore_index, double *out) {
  double count = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    count += target[i * target_stride] != ignore_index ? 1.0 : 0.0;
  count = block_sum<double>(count);
  if (threadIdx.x == 0)
    *out = count;
}

template <typename T>
__global__ void cross_entropy_backward_kernel(const T *dloss, int64_t dloss_stride, const T *logits,
                                              int64_t row_stride, const int64_t *target,
                                              int64_t target_stride, const float *lse,
                                              int64_t lse_stride, int64_t n, int64_t c,
                                              int reduction, int64_t ignore_index, double smoothing,
                                              const double *valid, T *dlogits,
                                              int64_t d_row_stride) {
  using A = typename Acc<T>::type;
  int64_t count = n * c;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = i / c, j = i % c;
    int64_t t = target[row * target_stride];
    A g = 0;
    if (t != ignore_index && t >= 0 && t < c) {
      A scale =
          reduction == TSR_REDUCTION_NONE ? to_acc(dloss[row * dloss_stride]) : to_acc(dloss[0]);
      if (reduction == TSR_REDUCTION_MEAN)
        scale = scale / (A)*valid;
      A p = exp(to_acc(logits[row * row_stride + j]) - (A)lse[row * lse_stride]);
      A target_mass = (A)(1.0 - smoothing) * (j == t ? A(1) : A(0)) + (A)(smoothing / (double)c);
      g = scale * (p - target_mass);
    }
    dlogits[row * d_row_stride + j] = from_acc<T>(g);
  }
}

// --- optimizers ---------------------------------------------------------------

template <typename T>
__global__ void sgd_kernel(double lr, double momentum, double dampening, double weight_decay,
                           int nesterov, int first_step, const T *grad, T *param, T *buf,
                           int64_t count) {
  using A = typename Acc<T>::type;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    A p = to_acc(param[i]);
    A g = to_acc(grad[i]) + (A)weight_decay * p;
    A d = g;
    if (momentum != 0.0) {
      A b = first_step ? g : (A)momentum * to_acc(buf[i]) + (A)(1.0 - dampening) * g;
      buf[i] = from_acc<T>(b);
      d = nesterov ? g + (A)momentum * b : b;
    }
    param[i] = from_acc<T>(p - (A)lr * d);
  }
}

template <typename T>
__global__ void adam_kernel(double lr, double beta1, double beta2, double eps, double weight_decay,
                            int decoupled, double bc1, double bc2, const T *grad, T *param,
                            T *m_buf, T *v_buf, int64_t count) {
  using A = typename Acc<T>::type;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    A p = to_acc(param[i]);
    A g = to_acc(grad[i]);
    if (decoupled)
      p = p * (A)(1.0 - lr * weight_decay);
    else
      g = g + (A)weight_decay * p;
    A m = (A)beta1 * to_acc(m_buf[i]) + (A)(1.0 - beta1) * g;
    A v = (A)beta2 * to_acc(v_buf[i]) + (A)(1.0 - beta2) * g * g;
    m_buf[i] = from_acc<T>(m);
    v_buf[i] = from_acc<T>(v);
    p = p - (A)(lr / bc1) * m / (sqrt(v / (A)bc2) + (A)eps);
    param[i] = from_acc<T>(p);
  }
}

// --- RNG ----------------------------------------------------------------------

__device__ void philox4x32_10(uint32_t c0, uint32_t c1, uint32_t k0, uint32_t k1, uint32_t *out0,
                              uint32_t *out1) {
  uint32_t c2 = 0, c3 = 0;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
  }
  *out0 = c0;
  *out1 = c1;
}

template <typename T>
__device__ T store_from_double(double v) {
  if constexpr (std::is_same<T, float>::value)
    return (float)v;
  else if constexpr (std::is_same<T, double>::value)
    return v;
  else if constexpr (std::is_same<T, __half>::value)
    return __double2half(v);
  else if constexpr (std::is_same<T, __nv_bfloat16>::value)
    return __double2bfloat16(v);
  else if constexpr (std::is_same<T, uint8_t>::value)
    return v != 0.0 ? 1 : 0;
  else
    return (T)v;
}

template <typename T>
__global__ void rng_kernel(tsr_rng_fill_attrs attrs, tsr_cuda_view view, int64_t count, T *out,
                           int f64) {
  uint32_t k0 = (uint32_t)attrs.seed, k1 = (uint32_t)(attrs.seed >> 32);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t ctr = attrs.offset + (uint64_t)i;  // wraps mod 2^64 as specified
    uint32_t x0, x1;
    philox4x32_10((uint32_t)ctr, (uint32_t)(ctr >> 32), k0, k1, &x0, &x1);
    double v;
    if (attrs.distribution == TSR_RNG_UNIFORM) {
      double u = f64 ? (double)((((uint64_t)(x0 >> 5)) << 26) | (x1 >> 6)) * 0x1p-53
                     : (double)(x0 >> 8) * 0x1p-24;
      v = attrs.a + (attrs.b - attrs.a) * u;
    } else if (attrs.distribution == TSR_RNG_NORMAL) {
      double u1 = ((double)x0 + 1.0) * 0x1p-32;
      double u2 = (double)x1 * 0x1p-32;
      v = attrs.a + attrs.b * (sqrt(-2.0 * log(u1)) * cos(6.28318530717958647692 * u2));
    } else {
      v = (double)(x0 >> 8) * 0x1p-24 < attrs.a ? 1.0 : 0.0;
    }
    out[offset_of(i, view.rank, view.sizes, view.strides)] = store_from_double<T>(v);
  }
}

// --- gather / scatter-add -------------------------------------------------------

__device__ __forceinline__ int64_t index_at(const void *index, int is64, int64_t k,
                                            int64_t stride) {
  return is64 ? ((const int64_t *)index)[k * stride] : ((const int32_t *)index)[k * stride];
}

template <typename T>
__global__ void gather_kernel(const T *x, tsr_cuda_view xv, const void *index, int is64,
                              int64_t index_stride, T *out, tsr_cuda_view ov, int32_t axis,
                              int *error_word, int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = i, xo = 0, oo = 0;
    bool ok = true;
    for (int32_t d = ov.rank - 1; d >= 0; --d) {
      int64_t id = rem % ov.sizes[d];
      rem /= ov.sizes[d];
      oo += id * ov.strides[d];
      if (d == axis) {
        int64_t j = index_at(index, is64, id, index_stride);
        if (j < 0 || j >= xv.sizes[d]) {
          ok = false;
          j = 0;
        }
        id = j;
      }
      xo += id * xv.strides[d];
    }
    if (ok)
      out[oo] = x[xo];
    else
      atomicExch(error_word, TSR_CUDA_KERNEL_ERROR_GATHER_INDEX);
  }
}

template <typename T>
__device__ void atomic_add(T *p, T v) {
  if constexpr (std::is_same<T, int64_t>::value)
    atomicAdd((unsigned long long *)p, (unsigned long long)v);
  else
    atomicAdd(p, v);
}

template <typename T>
__global__ void scatter_add_kernel(const T *src, tsr_cuda_view sv, const void *index, int is64,
                                   int64_t index_stride, T *out, tsr_cuda_view ov, int32_t axis,
                                   int *error_word, int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = i, so = 0, oo = 0;
    bool ok = true;
    for (int32_t d = sv.rank - 1; d >= 0; --d) {
      int64_t id = rem % sv.sizes[d];
      rem /= sv.sizes[d];
      so += id * sv.strides[d];
      if (d == axis) {
        int64_t j = index_at(index, is64, id, index_stride);
        if (j < 0 || j >= ov.sizes[d]) {
          ok = false;
          j = 0;
        }
        id = j;
      }
      oo += id * ov.strides[d];
    }
    if (ok)
      atomic_add<T>(out + oo, src[so]);
    else
      atomicExch(error_word, TSR_CUDA_KERNEL_ERROR_SCATTER_INDEX);
  }
}

// --- pooling --------------------------------------------------------------------

struct PoolShape {
  int64_t n, c, h, w, oh, ow;
  int64_t xs[4], ys[4], is[4];
  int64_t kh, kw, sh, sw, ph, pw, pah, paw, dh, dw;
  int kind;
  int include_pad;
};

// The divisor of an AVG window starting at (h0, w0).
__device__ __forceinline__ int64_t avg_divisor(const PoolShape &s, int64_t h0, int64_t w0) {
  int64_t count = 0;
  int64_t lo_h = s.include_pad ? -s.ph : 0, hi_h = s.include_pad ? s.h + s.pah : s.h;
  int64_t lo_w = s.include_pad ? -s.pw : 0, hi_w = s.include_pad ? s.w + s.paw : s.w;
  for (int64_t i = 0; i < s.kh; ++i) {
    int64_t hh = h0 + i * s.dh;
    if (hh < lo_h || hh >= hi_h)
      continue;
    for (int64_t j = 0; j < s.kw; ++j) {
      int64_t ww = w0 + j * s.dw;
      if (ww >= lo_w && ww < hi_w)
        ++count;
    }
  }
  return count;
}

template <typename T>
__global__ void pool_kernel(PoolShape s, const T *x, T *y, int64_t *indices) {
  using A = typename Acc<T>::type;
  int64_t count = s.n * s.c * s.oh * s.ow;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % s.ow, oh = (i / s.ow) % s.oh, c = (i / (s.ow * s.oh)) % s.c,
            n = i / (s.ow * s.oh * s.c);
    int64_t h0 = oh * s.sh - s.ph, w0 = ow * s.sw - s.pw;
    const T *xp = x + n * s.xs[0] + c * s.xs[1];
    if (s.kind == TSR_POOL_MAX) {
      A best = -INFINITY;
      int64_t best_i = -1;
      for (int64_t a = 0; a < s.kh; ++a) {
        int64_t hh = h0 + a * s.dh;
        if (hh < 0 || hh >= s.h)
          continue;
        for (int64_t b = 0; b < s.kw; ++b) {
          int64_t ww = w0 + b * s.dw;
          if (ww < 0 || ww >= s.w)
            continue;
          A v = to_acc(xp[hh * s.xs[2] + ww * s.xs[3]]);
          bool best_nan = best != best;
          if (best_i < 0 || (!best_nan && (v != v || v > best))) {
            best = v;
            best_i = hh * s.w + ww;
          }
        }
      }
      y[n * s.ys[0] + c * s.ys[1] + oh * s.ys[2] + ow * s.ys[3]] = from_acc<T>(best);
      if (indices != nullptr)
        indices[n * s.is[0] + c * s.is[1] + oh * s.is[2] + ow * s.is[3]] = best_i;
    } else {
      A sum = 0;
      for (int64_t a = 0; a < s.kh; ++a) {
        int64_t hh = h0 + a * s.dh;
        if (hh < 0 || hh >= s.h)
          continue;
        for (int64_t b = 0; b < s.kw; ++b) {
          int64_t ww = w0 + b * s.dw;
          if (ww >= 0 && ww < s.w)
            sum += to_acc(xp[hh * s.xs[2] + ww * s.xs[3]]);
        }
      }
      int64_t div = avg_divisor(s, h0, w0);
      y[n * s.ys[0] + c * s.ys[1] + oh * s.ys[2] + ow * s.ys[3]] =
          from_acc<T>(div > 0 ? sum / (A)div : A(0));
    }
  }
}

// dx per input element: the windows covering it, in a fixed order.
template <typename T>
__global__ void pool_backward_kernel(PoolShape s, const T *dy, const int64_t *indices, T *dx) {
  using A = typename Acc<T>::type;
  int64_t count = s.n * s.c * s.h * s.w;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t w = i % s.w, h = (i / s.w) % s.h, c = (i / (s.w * s.h)) % s.c,
            n = i / (s.w * s.h * s.c);
    A g = 0;
    for (int64_t oh = 0; oh < s.oh; ++oh) {
      int64_t dh = h - (oh * s.sh - s.ph);
      if (dh < 0)
        break;
      if (dh % s.dh != 0 || dh / s.dh >= s.kh)
        continue;
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        int64_t dw = w - (ow * s.sw - s.pw);
        if (dw < 0)
          break;
        if (dw % s.dw != 0 || dw / s.dw >= s.kw)
          continue;
        A d = to_acc(dy[n * s.ys[0] + c * s.ys[1] + oh * s.ys[2] + ow * s.ys[3]]);
        if (s.kind == TSR_POOL_MAX) {
          if (indices[n * s.is[0] + c * s.is[1] + oh * s.is[2] + ow * s.is[3]] == h * s.w + w)
            g += d;
        } else {
          int64_t div = avg_divisor(s, oh * s.sh - s.ph, ow * s.sw - s.pw);
          if (div > 0)
            g += d / (A)div;
        }
      }
    }
    dx[n * s.xs[0] + c * s.xs[1] + h * s.xs[2] + w * s.xs[3]] = from_acc<T>(g);
  }
}

static PoolShape pool_shape(const tsr_pool2d_attrs *a, const tsr_cuda_view *x,
                            const tsr_cuda_view *y, const tsr_cuda_view *idx) {
  PoolShape s = {};
  s.n = x->sizes[0];
  s.c = x->sizes[1];
  s.h = x->sizes[2];
  s.w = x->sizes[3];
  s.oh = y->sizes[2];
  s.ow = y->sizes[3];
  for (int d = 0; d < 4; ++d) {
    s.xs[d] = x->strides[d];
    s.ys[d] = y->strides[d];
    s.is[d] = idx != nullptr ? idx->strides[d] : 0;
  }
  s.kh = a->kernel[0];
  s.kw = a->kernel[1];
  s.sh = a->stride[0];
  s.sw = a->stride[1];
  s.ph = a->pad_before[0];
  s.pw = a->pad_before[1];
  s.pah = a->pad_after[0];
  s.paw = a->pad_after[1];
  s.dh = a->dilation[0];
  s.dw = a->dilation[1];
  s.kind = a->kind;
  s.include_pad = a->count_include_pad != 0;
  return s;
}

}  // namespace tsr_cuda

using namespace tsr_cuda;

extern "C" tsr_status tsr_cuda_launch_cross_entropy(
    tsr_dtype_t dtype, const void *logits, int64_t row_stride, const int64_t *target,
    int64_t target_stride, int64_t n, int64_t c, tsr_reduction_t reduction, int64_t ignore_index,
    double label_smoothing, void *loss, int64_t loss_stride, float *lse, int64_t lse_stride,
    double *row_loss, int *error_word, cudaStream_t stream) {
  if (n == 0 && reduction == TSR_REDUCTION_NONE)
    return TSR_OK;
  unsigned rows = (unsigned)(n < 1 ? 1 : (n < 65535 * 8 ? n : 65535 * 8));
  if (n > 0) {
    TSR_CUDA_FLOAT_SWITCH(
        dtype, cross_entropy_rows<T><<<rows, kThreads, 0, stream>>>(
                   (const T *)logits, row_stride, target, target_stride, n, c, ignore_index,
                   label_smoothing, row_loss, lse, lse_stride, error_word));
  }
  if (reduction == TSR_REDUCTION_NONE) {
    TSR_CUDA_FLOAT_SWITCH(dtype, cross_entropy_none<T><<<blocks_for(n), kThreads, 0, stream>>>(
                                     row_loss, n, (T *)loss, loss_stride));
  } else {
    TSR_CUDA_FLOAT_SWITCH(dtype, cross_entropy_total<T><<<1, kThreads, 0, stream>>>(
                                     row_loss, target, target_stride, n, ignore_index,
                                     reduction == TSR_REDUCTION_MEAN, (T *)loss));
  }
  return launched("cross_entropy");
}

extern "C" tsr_status tsr_cuda_launch_cross_entropy_backward(
    tsr_dtype_t dtype, const void *dloss, int64_t dloss_stride, const void *logits,
    int64_t row_stride, const int64_t *target, int64_t target_stride, const float *lse,
    int64_t lse_stride, int64_t n, int64_t c, tsr_reduction_t reduction, int64_t ignore_index,
    double label_smoothing, double *valid, void *dlogits, int64_t dlogits_row_stride,
    cudaStream_t stream) {
  if (n == 0 || c == 0)
    return TSR_OK;
  if (reduction == TSR_REDUCTION_MEAN)
    count_valid<<<1, kThreads, 0, stream>>>(target, target_stride, n, ignore_index, valid);
  TSR_CUDA_FLOAT_SWITCH(
      dtype, cross_entropy_backward_kernel<T><<<blocks_for(n * c), kThreads, 0, stream>>>(
                 (const T *)dloss, dloss_stride, (const T *)logits, row_stride, target,
                 target_stride, lse, lse_stride, n, c, (int)reduction, ignore_index,
                 label_smoothing, valid, (T *)dlogits, dlogits_row_stride));
  return launched("cross_entropy_backward");
}

extern "C" tsr_status tsr_cuda_launch_sgd(tsr_dtype_t dtype, const tsr_sgd_attrs *a,
                                          const void *grad, void *param, void *momentum,
                                          int64_t count, cudaStream_t stream) {
  if (count == 0)
    return TSR_OK;
  TSR_CUDA_FLOAT_SWITCH(dtype,
                        sgd_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
                            a->lr, a->momentum, a->dampening, a->weight_decay, (int)a->nesterov,
                            (int)a->first_step, (const T *)grad, (T *)param, (T *)momentum, count));
  return launched("sgd_update");
}

extern "C" tsr_status tsr_cuda_launch_adam(tsr_dtype_t dtype, const tsr_adam_attrs *a,
                                           const void *grad, void *param, void *exp_avg,
                                           void *exp_avg_sq, int64_t count, cudaStream_t stream) {
  if (count == 0)
    return TSR_OK;
  double bc1 = 1.0 - pow(a->beta1, (double)a->step);
  double bc2 = 1.0 - pow(a->beta2, (double)a->step);
  TSR_CUDA_FLOAT_SWITCH(
      dtype, adam_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
                 a->lr, a->beta1, a->beta2, a->eps, a->weight_decay, (int)a->decoupled_weight_decay,
                 bc1, bc2, (const T *)grad, (T *)param, (T *)exp_avg, (T *)exp_avg_sq, count));
  return launched("adam_update");
}

extern "C" tsr_status tsr_cuda_launch_rng_fill(tsr_dtype_t dtype, const tsr_rng_fill_attrs *attrs,
                                               void *out, const tsr_cuda_view *out_view,
                                               cudaStream_t stream) {
  int64_t count = view_numel(out_view);
  if (count == 0)
    return TSR_OK;
  int f64 = dtype == TSR_FLOAT64;
  TSR_CUDA_ALL_SWITCH(dtype, rng_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
                                 *attrs, *out_view, count, (T *)out, f64));
  return launched("rng_fill");
}

extern "C" tsr_status tsr_cuda_launch_gather(tsr_dtype_t dtype, const void *x,
                                             const tsr_cuda_view *x_view, const void *index,
                                             tsr_dtype_t index_dtype, int64_t index_stride,
                                             void *out, const tsr_cuda_view *out_view, int32_t axis,
                                             int *error_word, cudaStream_t stream) {
  int64_t count = view_numel(out_view);
  if (count == 0)
    return TSR_OK;
  int is64 = index_dtype == TSR_INT64;
  TSR_CUDA_ALL_SWITCH(dtype, gather_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
                                 (const T *)x, *x_view, index, is64, index_stride, (T *)out,
                                 *out_view, axis, error_word, count));
  return launched("gather");
}

extern "C" tsr_status tsr_cuda_launch_scatter_add(tsr_dtype_t dtype, const void *src,
                                                  const tsr_cuda_view *src_view, const void *index,
                                                  tsr_dtype_t index_dtype, int64_t index_stride,
                                                  void *out, const tsr_cuda_view *out_view,
                                                  int32_t axis, int *error_word,
                                                  cudaStream_t stream) {
  int64_t count = view_numel(src_view);
  if (count == 0)
    return TSR_OK;
  int is64 = index_dtype == TSR_INT64;
  unsigned blocks = blocks_for(count);
  switch (dtype) {
    case TSR_FLOAT32:
      scatter_add_kernel<float><<<blocks, kThreads, 0, stream>>>(
          (const float *)src, *src_view, index, is64, index_stride, (float *)out, *out_view, axis,
          error_word, count);
      break;
    case TSR_FLOAT64:
      scatter_add_kernel<double><<<blocks, kThreads, 0, stream>>>(
          (const double *)src, *src_view, index, is64, index_stride, (double *)out, *out_view, axis,
          error_word, count);
      break;
    case TSR_FLOAT16:
      scatter_add_kernel<__half><<<blocks, kThreads, 0, stream>>>(
          (const __half *)src, *src_view, index, is64, index_stride, (__half *)out, *out_view, axis,
          error_word, count);
      break;
    case TSR_BFLOAT16:
      scatter_add_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
          (const __nv_bfloat16 *)src, *src_view, index, is64, index_stride, (__nv_bfloat16 *)out,
          *out_view, axis, error_word, count);
      break;
    case TSR_INT32:
      scatter_add_kernel<int32_t><<<blocks, kThreads, 0, stream>>>(
          (const int32_t *)src, *src_view, index, is64, index_stride, (int32_t *)out, *out_view,
          axis, error_word, count);
      break;
    case TSR_INT64:
      scatter_add_kernel<int64_t><<<blocks, kThreads, 0, stream>>>(
          (const int64_t *)src, *src_view, index, is64, index_stride, (int64_t *)out, *out_view,
          axis, error_word, count);
      break;
    default:
      return TSR_UNSUPPORTED;
  }
  return launched("scatter_add");
}

extern "C" tsr_status tsr_cuda_launch_pool2d(tsr_dtype_t dtype, const tsr_pool2d_attrs *attrs,
                                             const void *x, const tsr_cuda_view *x_view, void *y,
                                             const tsr_cuda_view *y_view, int64_t *indices,
                                             const tsr_cuda_view *indices_view,
                                             cudaStream_t stream) {
  PoolShape s = pool_shape(attrs, x_view, y_view, indices != nullptr ? indices_view : nullptr);
  int64_t count = s.n * s.c * s.oh * s.ow;
  if (count == 0)
    return TSR_OK;
  TSR_CUDA_FLOAT_SWITCH(dtype, pool_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
                                   s, (const T *)x, (T *)y, indices));
  return launched("pool2d");
}

extern "C" tsr_status tsr_cuda_launch_pool2d_backward(
    tsr_dtype_t dtype, const tsr_pool2d_attrs *attrs, const void *dy, const tsr_cuda_view *dy_view,
    const int64_t *indices, const tsr_cuda_view *indices_view, void *dx,
    const tsr_cuda_view *dx_view, cudaStream_t stream) {
  PoolShape s = pool_shape(attrs, dx_view, dy_view, indices != nullptr ? indices_view : nullptr);
  int64_t count = s.n * s.c * s.h * s.w;
  if (count == 0)
    return TSR_OK;
  TSR_CUDA_FLOAT_SWITCH(dtype, pool_backward_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
                                   s, (const T *)dy, indices, (T *)dx));
  return launched("pool2d_backward");
}
