// Reductions: REDUCE, ARG_REDUCE, SOFTMAX(_BACKWARD), LAYER_NORM(_BACKWARD),
// BATCH_NORM(_BACKWARD) and the
// per-channel sum of CONV2D_BACKWARD_FILTER's bias gradient.
//
// One block per output element (or per row) walks its reduced elements with
// a block-wide stride and combines the partial results in a fixed tree, so
// results are bit-reproducible run to run. Bound by memory bandwidth when
// there are at least as many outputs as SMs; a full reduction to one value
// uses one block and is latency-bound (a two-pass split is the next step).
#include <math.h>

#include <limits>
#include <type_traits>

#include "kernels_common.cuh"

namespace tsr_cuda {

// The kept and the reduced dimensions of a reduction, with strides.
struct ReduceShape {
  int32_t kept_rank;
  int64_t kept_sizes[TSR_MAX_RANK];
  int64_t kept_x_strides[TSR_MAX_RANK];
  int64_t kept_out_strides[TSR_MAX_RANK];
  int32_t red_rank;
  int64_t red_sizes[TSR_MAX_RANK];
  int64_t red_x_strides[TSR_MAX_RANK];
  int64_t kept_count;
  int64_t red_count;
};

static ReduceShape reduce_shape(const tsr_cuda_view *x, const tsr_cuda_view *out,
                                uint32_t axes_mask) {
  ReduceShape s = {};
  s.kept_count = 1;
  s.red_count = 1;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (axes_mask & (1u << d)) {
      s.red_sizes[s.red_rank] = x->sizes[d];
      s.red_x_strides[s.red_rank++] = x->strides[d];
      s.red_count *= x->sizes[d];
    } else {
      s.kept_sizes[s.kept_rank] = x->sizes[d];
      s.kept_x_strides[s.kept_rank] = x->strides[d];
      s.kept_out_strides[s.kept_rank++] = out->strides[d];
      s.kept_count *= x->sizes[d];
    }
  }
  return s;
}

// Combines |v| across the block in a fixed order; every thread gets the result.
template <typename A, typename Op>
__device__ A block_reduce(A v, Op op) {
  __shared__ unsigned char raw[kThreads * sizeof(double) > kThreads * sizeof(A)
                                   ? kThreads * sizeof(double)
                                   : kThreads * sizeof(A)];
  A *shared = reinterpret_cast<A *>(raw);
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step >>= 1) {
    if ((int)threadIdx.x < step)
      shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + step]);
    __syncthreads();
  }
  A result = shared[0];
  __syncthreads();
  return result;
}

template <typename T>
constexpr bool is_int() {
  return std::is_same<T, int32_t>::value || std::is_same<T, int64_t>::value;
}

template <typename A>
struct SumOp {
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_same<A, int32_t>::value)
      return (A)((uint32_t)a + (uint32_t)b);
    else if constexpr (std::is_same<A, int64_t>::value)
      return (A)((uint64_t)a + (uint64_t)b);
    else
      return a + b;
  }
};
template <typename A>
struct ProdOp {
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_same<A, int32_t>::value)
      return (A)((uint32_t)a * (uint32_t)b);
    else if constexpr (std::is_same<A, int64_t>::value)
      return (A)((uint64_t)a * (uint64_t)b);
    else
      return a * b;
  }
};
// NaN wins (a != a only for NaN).
template <typename A>
struct MaxOp {
  __device__ A operator()(A a, A b) const { return (a != a || a > b) ? a : b; }
};
template <typename A>
struct MinOp {
  __device__ A operator()(A a, A b) const { return (a != a || a < b) ? a : b; }
};

// Identities of MAX and MIN; the axis is never empty, so they never win
// against a real element.
template <typename A>
A lowest() {
  if constexpr (std::is_floating_point<A>::value)
    return -std::numeric_limits<A>::infinity();
  else
    return std::numeric_limits<A>::lowest();
}
template <typename A>
A highest() {
  if constexpr (std::is_floating_point<A>::value)
    return std::numeric_limits<A>::infinity();
  else
    return std::numeric_limits<A>::max();
}

template <typename T, typename Op>
__global__ void reduce_kernel(ReduceShape s, const T *x, T *out, typename Acc<T>::type init, Op op,
                              int mean) {
  using A = typename Acc<T>::type;
  for (int64_t k = blockIdx.x; k < s.kept_count; k += gridDim.x) {
    int64_t base = offset_of(k, s.kept_rank, s.kept_sizes, s.kept_x_strides);
    A acc = init;
    for (int64_t r = threadIdx.x; r < s.red_count; r += blockDim.x)
      acc = op(acc, to_acc(x[base + offset_of(r, s.red_rank, s.red_sizes, s.red_x_strides)]));
    acc = block_reduce<A>(acc, op);
    if (threadIdx.x == 0) {
      if constexpr (!is_int<T>()) {
        if (mean)
          acc = acc / (A)s.red_count;
      }
      out[offset_of(k, s.kept_rank, s.kept_sizes, s.kept_out_strides)] = from_acc<T>(acc);
    }
  }
}

template <typename T>
static tsr_status reduce_launch(tsr_reduce_fn_t fn, const ReduceShape &s, const void *x, void *out,
                                cudaStream_t stream) {
  using A = typename Acc<T>::type;
  unsigned blocks = (unsigned)(s.kept_count < 65535 * 8 ? s.kept_count : 65535 * 8);
  const T *in = (const T *)x;
  T *o = (T *)out;
  switch (fn) {
    case TSR_REDUCE_SUM:
    case TSR_REDUCE_MEAN:
      reduce_kernel<T>
          <<<blocks, kThreads, 0, stream>>>(s, in, o, A(0), SumOp<A>(), fn == TSR_REDUCE_MEAN);
      break;
    case TSR_REDUCE_PROD:
      reduce_kernel<T><<<blocks, kThreads, 0, stream>>>(s, in, o, A(1), ProdOp<A>(), 0);
      break;
    case TSR_REDUCE_MAX:
      reduce_kernel<T><<<blocks, kThreads, 0, stream>>>(s, in, o, lowest<A>(), MaxOp<A>(), 0);
      break;
    case TSR_REDUCE_MIN:
      reduce_kernel<T><<<blocks, kThreads, 0, stream>>>(s, in, o, highest<A>(), MinOp<A>(), 0);
      break;
    default:
      return TSR_UNSUPPORTED;
  }
  return launched("reduce");
}

// ARG_REDUCE: NaN beats every number and the first NaN wins; ties keep the
// lower index.
template <typename A>
struct ArgBest {
  int argmin;
  __device__ bool better(A a, int64_t ia, A b, int64_t ib) const {
    bool na = a != a, nb = b != b;
    if (na || nb) {
      if (na && nb)
        return ia < ib;
      return na;
    }
    if (a == b)
      return ia < ib;
    return argmin ? a < b : a > b;
  }
};

template <typename T>
__global__ void arg_reduce_kernel(ReduceShape s, const T *x, int64_t *out, int argmin) {
  using A = typename Acc<T>::type;
  __shared__ A best_v[kThreads];
  __shared__ int64_t best_i[kThreads];
  ArgBest<A> rule{argmin};
  for (int64_t k = blockIdx.x; k < s.kept_count; k += gridDim.x) {
    int64_t base = offset_of(k, s.kept_rank, s.kept_sizes, s.kept_x_strides);
    int64_t bi = -1;
    A bv = A(0);
    for (int64_t r = threadIdx.x; r < s.red_count; r += blockDim.x) {
      A v = to_acc(x[base + r * s.red_x_strides[0]]);
      if (bi < 0 || rule.better(v, r, bv, bi)) {
        bv = v;
        bi = r;
      }
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step >>= 1) {
      if ((int)threadIdx.x < step) {
        int64_t oi = best_i[threadIdx.x + step];
        if (oi >= 0 &&
            (best_i[threadIdx.x] < 0 || rule.better(best_v[threadIdx.x + step], oi,
                                                    best_v[threadIdx.x], best_i[threadIdx.x]))) {
          best_v[threadIdx.x] = best_v[threadIdx.x + step];
          best_i[threadIdx.x] = oi;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0)
      out[offset_of(k, s.kept_rank, s.kept_sizes, s.kept_out_strides)] = best_i[0];
    __syncthreads();
  }
}

// SOFTMAX over one axis: a block per row.
template <typename T>
__global__ void softmax_kernel(ReduceShape sx, ReduceShape sy, const T *x, T *y, int log) {
  using A = typename Acc<T>::type;
  for (int64_t k = blockIdx.x; k < sx.kept_count; k += gridDim.x) {
    int64_t bx = offset_of(k, sx.kept_rank, sx.kept_sizes, sx.kept_x_strides);
    int64_t by = offset_of(k, sy.kept_rank, sy.kept_sizes, sy.kept_x_strides);
    int64_t n = sx.red_count, xs = sx.red_x_strides[0], ys = sy.red_x_strides[0];
    A m = -INFINITY;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) m = MaxOp<A>()(m, to_acc(x[bx + r * xs]));
    m = block_reduce<A>(m, MaxOp<A>());
    A sum = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) sum += exp(to_acc(x[bx + r * xs]) - m);
    sum = block_reduce<A>(sum, SumOp<A>());
    A lse = m + ::log(sum);
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      A v = to_acc(x[bx + r * xs]);
      y[by + r * ys] = from_acc<T>(log ? v - lse : exp(v - m) / sum);
    }
  }
}

template <typename T>
__global__ void softmax_backward_kernel(ReduceShape sdy, ReduceShape sy, ReduceShape sdx,
                                        const T *dy, const T *y, T *dx, int log) {
  using A = typename Acc<T>::type;
  for (int64_t k = blockIdx.x; k < sdy.kept_count; k += gridDim.x) {
    int64_t bdy = offset_of(k, sdy.kept_rank, sdy.kept_sizes, sdy.kept_x_strides);
    int64_t by = offset_of(k, sy.kept_rank, sy.kept_sizes, sy.kept_x_strides);
    int64_t bdx = offset_of(k, sdx.kept_rank, sdx.kept_sizes, sdx.kept_x_strides);
    int64_t n = sdy.red_count;
    int64_t s_dy = sdy.red_x_strides[0], s_y = sy.red_x_strides[0], s_dx = sdx.red_x_strides[0];
    A dot = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      A g = to_acc(dy[bdy + r * s_dy]);
      dot += log ? g : g * to_acc(y[by + r * s_y]);
    }
    dot = block_reduce<A>(dot, SumOp<A>());
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      A g = to_acc(dy[bdy + r * s_dy]);
      A v = to_acc(y[by + r * s_y]);
      dx[bdx + r * s_dx] = from_acc<T>(log ? g - exp(v) * dot : v * (g - dot));
    }
  }
}

// LAYER_NORM over contiguous rows; statistics in the accumulation type.
template <typename T, typename S>
__global__ void layer_norm_kernel(const T *x, const T *gamma, const T *beta, T *y, S *mean_out,
                                  S *rstd_out, int64_t rows, int64_t cols, double eps) {
  using A = typename Acc<T>::type;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * cols;
    A sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += to_acc(xr[c]);
    A mean = block_reduce<A>(sum, SumOp<A>()) / (A)cols;
    A sq = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      A d = to_acc(xr[c]) - mean;
      sq += d * d;
    }
    A var = block_reduce<A>(sq, SumOp<A>()) / (A)cols;
    A rstd = A(1) / sqrt(var + (A)eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      A v = (to_acc(xr[c]) - mean) * rstd;
      if (gamma != nullptr)
        v = v * to_acc(gamma[c]) + to_acc(beta[c]);
      y[row * cols + c] = from_acc<T>(v);
    }
    if (threadIdx.x == 0) {
      mean_out[row] = (S)mean;
      rstd_out[row] = (S)rstd;
    }
  }
}

template <typename T>
__global__ void channel_sum_kernel(const T *dy, int64_t n, int64_t c, int64_t h, int64_t w,
                                   int64_t s0, int64_t s1, int64_t s2, int64_t s3, T *dbias) {
  using A = typename Acc<T>::type;
  int64_t per = n * h * w;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    A sum = 0;
    for (int64_t i = threadIdx.x; i < per; i += blockDim.x) {
      int64_t wi = i % w, hi = (i / w) % h, ni = i / (w * h);
      sum += to_acc(dy[ni * s0 + ch * s1 + hi * s2 + wi * s3]);
    }
    sum = block_reduce<A>(sum, SumOp<A>());
    if (threadIdx.x == 0)
      dbias[ch] = from_acc<T>(sum);
  }
}

// LAYER_NORM_BACKWARD, dx: a block per packed row.
template <typename T, typename S>
__global__ void layer_norm_backward_dx(const T *dy, const T *x, const S *mean, const S *rstd,
                                       const T *gamma, T *dx, int64_t rows, int64_t cols) {
  using A = typename Acc<T>::type;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *dyr = dy + row * cols, *xr = x + row * cols;
    A mu = (A)mean[row], rs = (A)rstd[row];
    A sum_g = 0, sum_gx = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      A g = to_acc(dyr[c]) * (gamma != nullptr ? to_acc(gamma[c]) : A(1));
      sum_g += g;
      sum_gx += g * (to_acc(xr[c]) - mu) * rs;
    }
    sum_g = block_reduce<A>(sum_g, SumOp<A>()) / (A)cols;
    sum_gx = block_reduce<A>(sum_gx, SumOp<A>()) / (A)cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      A g = to_acc(dyr[c]) * (gamma != nullptr ? to_acc(gamma[c]) : A(1));
      A xhat = (to_acc(xr[c]) - mu) * rs;
      dx[row * cols + c] = from_acc<T>(rs * (g - sum_g - xhat * sum_gx));
    }
  }
}

// LAYER_NORM_BACKWARD, dgamma and dbeta: a block per column, rows in order.
template <typename T, typename S>
__global__ void layer_norm_backward_affine(const T *dy, const T *x, const S *mean, const S *rstd,
                                           T *dgamma, T *dbeta, int64_t rows, int64_t cols) {
  using A = typename Acc<T>::type;
  for (int64_t c = blockIdx.x; c < cols; c += gridDim.x) {
    A sg = 0, sb = 0;
    for (int64_t row = threadIdx.x; row < rows; row += blockDim.x) {
      A d = to_acc(dy[row * cols + c]);
      sg += d * (to_acc(x[row * cols + c]) - (A)mean[row]) * (A)rstd[row];
      sb += d;
    }
    sg = block_reduce<A>(sg, SumOp<A>());
    sb = block_reduce<A>(sb, SumOp<A>());
    if (threadIdx.x == 0) {
      dgamma[c] = from_acc<T>(sg);
      dbeta[c] = from_acc<T>(sb);
    }
  }
}

// BATCH_NORM over [N, C, ...]: a block per channel; |rest| walks every
// dimension but the channel's.
struct ChannelView {
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
  int64_t channel_stride;
  int64_t count;  // elements per channel
};

struct BatchNormArgs {
  ChannelView x, y;
  int64_t c;
  int64_t param_strides[9];  // gamma, beta, rm, rv, save_mean, save_invstd, rm_out, rv_out, spare
  double eps, momentum;
  int training;
};

template <typename T, typename S>
__global__ void batch_norm_kernel(BatchNormArgs a, const T *x, const S *gamma, const S *beta,
                                  const S *rm, const S *rv, T *y, S *save_mean, S *save_invstd,
                                  S *rm_out, S *rv_out) {
  using A = typename Acc<T>::type;
  const int64_t *ps = a.param_strides;
  for (int64_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
    const T *xc = x + ch * a.x.channel_stride;
    A mean, invstd;
    if (a.training) {
      A sum = 0;
      for (int64_t i = threadIdx.x; i < a.x.count; i += blockDim.x)
        sum += to_acc(xc[offset_of(i, a.x.rank, a.x.sizes, a.x.strides)]);
      mean = block_reduce<A>(sum, SumOp<A>()) / (A)a.x.count;
      A sq = 0;
      for (int64_t i = threadIdx.x; i < a.x.count; i += blockDim.x) {
        A d = to_acc(xc[offset_of(i, a.x.rank, a.x.sizes, a.x.strides)]) - mean;
        sq += d * d;
      }
      sq = block_reduce<A>(sq, SumOp<A>());
      A var = sq / (A)a.x.count;
      invstd = A(1) / sqrt(var + (A)a.eps);
      if (threadIdx.x == 0) {
        A unbiased = a.x.count > 1 ? sq / (A)(a.x.count - 1) : var;
        A m = (A)a.momentum;
        rm_out[ch * ps[6]] = (S)((A(1) - m) * (A)rm[ch * ps[2]] + m * mean);
        rv_out[ch * ps[7]] = (S)((A(1) - m) * (A)rv[ch * ps[3]] + m * unbiased);
      }
    } else {
      mean = (A)rm[ch * ps[2]];
      invstd = A(1) / sqrt((A)rv[ch * ps[3]] + (A)a.eps);
      if (threadIdx.x == 0) {
        rm_out[ch * ps[6]] = rm[ch * ps[2]];
        rv_out[ch * ps[7]] = rv[ch * ps[3]];
      }
    }
    if (threadIdx.x == 0) {
      save_mean[ch * ps[4]] = (S)mean;
      save_invstd[ch * ps[5]] = (S)invstd;
    }
    A g = (A)gamma[ch * ps[0]], b = (A)beta[ch * ps[1]];
    T *yc = y + ch * a.y.channel_stride;
    for (int64_t i = threadIdx.x; i < a.x.count; i += blockDim.x) {
      A v = to_acc(xc[offset_of(i, a.x.rank, a.x.sizes, a.x.strides)]);
      yc[offset_of(i, a.y.rank, a.y.sizes, a.y.strides)] = from_acc<T>((v - mean) * invstd * g + b);
    }
  }
}

template <typename T, typename S>
__global__ void batch_norm_backward_kernel(BatchNormArgs a, ChannelView dyv, const T *dy,
                                           const T *x, const S *gamma, const S *save_mean,
                                           const S *save_invstd, T *dx, S *dgamma, S *dbeta) {
  using A = typename Acc<T>::type;
  const int64_t *ps = a.param_strides;  // gamma, save_mean, save_invstd, dgamma, dbeta
  for (int64_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
    const T *xc = x + ch * a.x.channel_stride;
    const T *dyc = dy + ch * dyv.channel_stride;
    A mean = (A)save_mean[ch * ps[1]], invstd = (A)save_invstd[ch * ps[2]];
    A sum_dy = 0, sum_dyx = 0;
    for (int64_t i = threadIdx.x; i < a.x.count; i += blockDim.x) {
      A d = to_acc(dyc[offset_of(i, dyv.rank, dyv.sizes, dyv.strides)]);
      A xhat = (to_acc(xc[offset_of(i, a.x.rank, a.x.sizes, a.x.strides)]) - mean) * invstd;
      sum_dy += d;
      sum_dyx += d * xhat;
    }
    sum_dy = block_reduce<A>(sum_dy, SumOp<A>());
    sum_dyx = block_reduce<A>(sum_dyx, SumOp<A>());
    if (threadIdx.x == 0) {
      dgamma[ch * ps[3]] = (S)sum_dyx;
      dbeta[ch * ps[4]] = (S)sum_dy;
    }
    A g = (A)gamma[ch * ps[0]];
    A inv_m = A(1) / (A)a.x.count;
    T *dxc = dx + ch * a.y.channel_stride;
    for (int64_t i = threadIdx.x; i < a.x.count; i += blockDim.x) {
      A d = to_acc(dyc[offset_of(i, dyv.rank, dyv.sizes, dyv.strides)]);
      A r;
      if (a.training) {
        A xhat = (to_acc(xc[offset_of(i, a.x.rank, a.x.sizes, a.x.strides)]) - mean) * invstd;
        r = g * invstd * (d - sum_dy * inv_m - xhat * sum_dyx * inv_m);
      } else {
        r = d * g * invstd;
      }
      dxc[offset_of(i, a.y.rank, a.y.sizes, a.y.strides)] = from_acc<T>(r);
    }
  }
}

static ChannelView channel_view(const tsr_cuda_view *v) {
  ChannelView c = {};
  c.count = 1;
  for (int32_t d = 0; d < v->rank; ++d) {
    if (d == 1) {
      c.channel_stride = v->strides[d];
      continue;
    }
    c.sizes[c.rank] = v->sizes[d];
    c.strides[c.rank++] = v->strides[d];
    c.count *= v->sizes[d];
  }
  return c;
}

static unsigned row_blocks(int64_t rows) {
  return (unsigned)(rows < 1 ? 1 : (rows < 65535 * 8 ? rows : 65535 * 8));
}

}  // namespace tsr_cuda

using namespace tsr_cuda;

extern "C" tsr_status tsr_cuda_launch_reduce(tsr_reduce_fn_t fn, tsr_dtype_t dtype, const void *x,
                                             const tsr_cuda_view *x_view, uint32_t axes_mask,
                                             void *out, const tsr_cuda_view *out_view,
                                             cudaStream_t stream) {
  ReduceShape s = reduce_shape(x_view, out_view, axes_mask);
  if (s.kept_count == 0)
    return TSR_OK;
  switch (dtype) {
    case TSR_FLOAT32:
      return reduce_launch<float>(fn, s, x, out, stream);
    case TSR_FLOAT64:
      return reduce_launch<double>(fn, s, x, out, stream);
    case TSR_FLOAT16:
      return reduce_launch<__half>(fn, s, x, out, stream);
    case TSR_BFLOAT16:
      return reduce_launch<__nv_bfloat16>(fn, s, x, out, stream);
    case TSR_INT32:
      return reduce_launch<int32_t>(fn, s, x, out, stream);
    case TSR_INT64:
      return reduce_launch<int64_t>(fn, s, x, out, stream);
    default:
      return TSR_UNSUPPORTED;
  }
}

extern "C" tsr_status tsr_cuda_launch_arg_reduce(tsr_arg_reduce_fn_t fn, tsr_dtype_t dtype,
                                                 const void *x, const tsr_cuda_view *x_view,
                                                 int32_t axis, int64_t *out,
                                                 const tsr_cuda_view *out_view,
                                                 cudaStream_t stream) {
  ReduceShape s = reduce_shape(x_view, out_view, 1u << axis);
  if (s.kept_count == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(s.kept_count);
  int argmin = fn == TSR_ARG_REDUCE_ARGMIN;
  switch (dtype) {
    case TSR_INT32:
      arg_reduce_kernel<int32_t>
          <<<blocks, kThreads, 0, stream>>>(s, (const int32_t *)x, out, argmin);
      break;
    case TSR_INT64:
      arg_reduce_kernel<int64_t>
          <<<blocks, kThreads, 0, stream>>>(s, (const int64_t *)x, out, argmin);
      break;
    default:
      TSR_CUDA_FLOAT_SWITCH(dtype, arg_reduce_kernel<T>
                            <<<blocks, kThreads, 0, stream>>>(s, (const T *)x, out, argmin));
  }
  return launched("arg_reduce");
}

extern "C" tsr_status tsr_cuda_launch_softmax(tsr_dtype_t dtype, int log, const void *x,
                                              const tsr_cuda_view *x_view, void *y,
                                              const tsr_cuda_view *y_view, int32_t axis,
                                              cudaStream_t stream) {
  ReduceShape sx = reduce_shape(x_view, x_view, 1u << axis);
  ReduceShape sy = reduce_shape(y_view, y_view, 1u << axis);
  if (sx.kept_count == 0 || sx.red_count == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(sx.kept_count);
  TSR_CUDA_FLOAT_SWITCH(
      dtype, softmax_kernel<T><<<blocks, kThreads, 0, stream>>>(sx, sy, (const T *)x, (T *)y, log));
  return launched("softmax");
}

extern "C" tsr_status tsr_cuda_launch_softmax_backward(tsr_dtype_t dtype, int log, const void *dy,
                                                       const tsr_cuda_view *dy_view, const void *y,
                                                       const tsr_cuda_view *y_view, void *dx,
                                                       const tsr_cuda_view *dx_view, int32_t axis,
                                                       cudaStream_t stream) {
  ReduceShape sdy = reduce_shape(dy_view, dy_view, 1u << axis);
  ReduceShape sy = reduce_shape(y_view, y_view, 1u << axis);
  ReduceShape sdx = reduce_shape(dx_view, dx_view, 1u << axis);
  if (sdy.kept_count == 0 || sdy.red_count == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(sdy.kept_count);
  TSR_CUDA_FLOAT_SWITCH(dtype, softmax_backward_kernel<T><<<blocks, kThreads, 0, stream>>>(
                                   sdy, sy, sdx, (const T *)dy, (const T *)y, (T *)dx, log));
  return launched("softmax_backward");
}

extern "C" tsr_status tsr_cuda_launch_layer_norm(tsr_dtype_t dtype, tsr_dtype_t stat_dtype,
                                                 const void *x, const void *gamma, const void *beta,
                                                 void *y, void *mean, void *rstd, int64_t rows,
                                                 int64_t cols, double eps, cudaStream_t stream) {
  if (rows == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(rows);
  if (stat_dtype == TSR_FLOAT64) {
    layer_norm_kernel<double, double><<<blocks, kThreads, 0, stream>>>(
        (const double *)x, (const double *)gamma, (const double *)beta, (double *)y, (double *)mean,
        (double *)rstd, rows, cols, eps);
  } else {
    TSR_CUDA_FLOAT_SWITCH(dtype, layer_norm_kernel<T, float><<<blocks, kThreads, 0, stream>>>(
                                     (const T *)x, (const T *)gamma, (const T *)beta, (T *)y,
                                     (float *)mean, (float *)rstd, rows, cols, eps));
  }
  return launched("layer_norm");
}

extern "C" tsr_status tsr_cuda_launch_channel_sum(tsr_dtype_t dtype, const void *dy, int64_t n,
                                                  int64_t c, int64_t h, int64_t w,
                                                  const int64_t *strides, void *dbias,
                                                  cudaStream_t stream) {
  if (c == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(c);
  TSR_CUDA_FLOAT_SWITCH(dtype, channel_sum_kernel<T><<<blocks, kThreads, 0, stream>>>(
                                   (const T *)dy, n, c, h, w, strides[0], strides[1], strides[2],
                                   strides[3], (T *)dbias));
  return launched("conv2d bias gradient");
}

extern "C" tsr_status tsr_cuda_launch_layer_norm_backward(tsr_dtype_t dtype, tsr_dtype_t stat_dtype,
                                                          const void *dy, const void *x,
                                                          const void *mean, const void *rstd,
                                                          const void *gamma, void *dx, void *dgamma,
                                                          void *dbeta, int64_t rows, int64_t cols,
                                                          cudaStream_t stream) {
  if (rows == 0 || cols == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(rows), col_blocks = row_blocks(cols);
  if (stat_dtype == TSR_FLOAT64) {
    layer_norm_backward_dx<double, double><<<blocks, kThreads, 0, stream>>>(
        (const double *)dy, (const double *)x, (const double *)mean, (const double *)rstd,
        (const double *)gamma, (double *)dx, rows, cols);
    if (dgamma != nullptr)
      layer_norm_backward_affine<double, double><<<col_blocks, kThreads, 0, stream>>>(
          (const double *)dy, (const double *)x, (const double *)mean, (const double *)rstd,
          (double *)dgamma, (double *)dbeta, rows, cols);
  } else {
    TSR_CUDA_FLOAT_SWITCH(dtype, {
      layer_norm_backward_dx<T, float><<<blocks, kThreads, 0, stream>>>(
          (const T *)dy, (const T *)x, (const float *)mean, (const float *)rstd, (const T *)gamma,
          (T *)dx, rows, cols);
      if (dgamma != nullptr)
        layer_norm_backward_affine<T, float><<<col_blocks, kThreads, 0, stream>>>(
            (const T *)dy, (const T *)x, (const float *)mean, (const float *)rstd, (T *)dgamma,
            (T *)dbeta, rows, cols);
    });
  }
  return launched("layer_norm_backward");
}

extern "C" tsr_status tsr_cuda_launch_batch_norm(tsr_dtype_t dtype, const tsr_cuda_view *views,
                                                 void *const *ptrs, double eps, double momentum,
                                                 int training, cudaStream_t stream) {
  // views/ptrs: x, gamma, beta, running_mean, running_var, y, save_mean,
  // save_invstd, running_mean_out, running_var_out.
  BatchNormArgs a = {};
  a.x = channel_view(&views[0]);
  a.y = channel_view(&views[5]);
  a.c = views[0].sizes[1];
  const int idx[8] = {1, 2, 3, 4, 6, 7, 8, 9};
  for (int i = 0; i < 8; ++i) a.param_strides[i] = views[idx[i]].strides[0];
  a.eps = eps;
  a.momentum = momentum;
  a.training = training;
  if (a.c == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(a.c);
  if (dtype == TSR_FLOAT64) {
    batch_norm_kernel<double, double><<<blocks, kThreads, 0, stream>>>(
        a, (const double *)ptrs[0], (const double *)ptrs[1], (const double *)ptrs[2],
        (const double *)ptrs[3], (const double *)ptrs[4], (double *)ptrs[5], (double *)ptrs[6],
        (double *)ptrs[7], (double *)ptrs[8], (double *)ptrs[9]);
  } else {
    TSR_CUDA_FLOAT_SWITCH(
        dtype, batch_norm_kernel<T, float><<<blocks, kThreads, 0, stream>>>(
                   a, (const T *)ptrs[0], (const float *)ptrs[1], (const float *)ptrs[2],
                   (const float *)ptrs[3], (const float *)ptrs[4], (T *)ptrs[5], (float *)ptrs[6],
                   (float *)ptrs[7], (float *)ptrs[8], (float *)ptrs[9]));
  }
  return launched("batch_norm");
}

extern "C" tsr_status tsr_cuda_launch_batch_norm_backward(tsr_dtype_t dtype,
                                                          const tsr_cuda_view *views,
                                                          void *const *ptrs, int training,
                                                          cudaStream_t stream) {
  // views/ptrs: dy, x, gamma, save_mean, save_invstd, dx, dgamma, dbeta.
  BatchNormArgs a = {};
  a.x = channel_view(&views[1]);
  a.y = channel_view(&views[5]);
  ChannelView dyv = channel_view(&views[0]);
  a.c = views[1].sizes[1];
  const int idx[5] = {2, 3, 4, 6, 7};
  for (int i = 0; i < 5; ++i) a.param_strides[i] = views[idx[i]].strides[0];
  a.training = training;
  if (a.c == 0)
    return TSR_OK;
  unsigned blocks = row_blocks(a.c);
  if (dtype == TSR_FLOAT64) {
    batch_norm_backward_kernel<double, double><<<blocks, kThreads, 0, stream>>>(
        a, dyv, (const double *)ptrs[0], (const double *)ptrs[1], (const double *)ptrs[2],
        (const double *)ptrs[3], (const double *)ptrs[4], (double *)ptrs[5], (double *)ptrs[6],
        (double *)ptrs[7]);
  } else {
    TSR_CUDA_FLOAT_SWITCH(
        dtype, batch_norm_backward_kernel<T, float><<<blocks, kThreads, 0, stream>>>(
                   a, dyv, (const T *)ptrs[0], (const T *)ptrs[1], (const float *)ptrs[2],
                   (const float *)ptrs[3], (const float *)ptrs[4], (T *)ptrs[5], (float *)ptrs[6],
                   (float *)ptrs[7]));
  }
  return launched("batch_norm_backward");
}
