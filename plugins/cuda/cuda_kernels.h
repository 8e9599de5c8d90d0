// The own CUDA kernels, as C functions that launch them (kernels_*.cu).
//
// Every launcher takes device pointers and a stream, queues its kernels and
// returns TSR_OK, or the launch error mapped as tsr_cuda_check maps it. None
// allocates or synchronizes. Shapes and strides arrive by value in small
// structs, so a queued kernel never reads host memory the caller may reuse.
// All launchers are thread-safe.
#ifndef TESSERA_PLUGINS_CUDA_CUDA_KERNELS_H_
#define TESSERA_PLUGINS_CUDA_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

// What a kernel found wrong in its data (an index out of range), written to
// the stream's error word and reported at the stream's next synchronize or
// query (docs/abi.md 5.3).
enum {
  TSR_CUDA_KERNEL_ERROR_NONE = 0,
  TSR_CUDA_KERNEL_ERROR_GATHER_INDEX = 1,
  TSR_CUDA_KERNEL_ERROR_SCATTER_INDEX = 2,
  TSR_CUDA_KERNEL_ERROR_TARGET = 3,
};

// A strided view of up to TSR_MAX_RANK dimensions, in elements.
typedef struct tsr_cuda_view {
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
} tsr_cuda_view;

// Which elementwise function a launch computes.
typedef enum tsr_cuda_ew_kind {
  TSR_CUDA_EW_FILL = 0,        // out = value
  TSR_CUDA_EW_COPY,            // out = x (same dtype)
  TSR_CUDA_EW_CAST,            // out = (out dtype) x
  TSR_CUDA_EW_UNARY,           // out = f(x); fn = tsr_unary_fn_t
  TSR_CUDA_EW_UNARY_BACKWARD,  // out = dy * f'(x)
  TSR_CUDA_EW_BINARY,          // out = a op b; fn = tsr_binary_fn_t
  TSR_CUDA_EW_COMPARE,         // out (bool) = a cmp b; fn = tsr_compare_fn_t
  TSR_CUDA_EW_WHERE,           // out = cond ? a : b
  TSR_CUDA_EW_CLAMP,           // out = clamp(x)
} tsr_cuda_ew_kind;

// One elementwise launch: the output's shape, each operand's strides over it
// (0 where it broadcasts), dtypes and the scalar parameters.
typedef struct tsr_cuda_ew_args {
  tsr_cuda_ew_kind kind;
  int32_t fn;
  int32_t num_inputs;
  tsr_dtype_t out_dtype;
  tsr_dtype_t in_dtype;  // the inputs' dtype (WHERE: a and b's; cond is bool)
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t out_strides[TSR_MAX_RANK];
  int64_t in_strides[3][TSR_MAX_RANK];
  double alpha;        // BINARY add/sub and UNARY alpha (float dtypes)
  int64_t alpha_i;     // BINARY add/sub alpha (int dtypes)
  double lo, hi;       // CLAMP bounds (float dtypes; a missing one is infinite)
  int64_t lo_i, hi_i;  // CLAMP bounds (int dtypes; a missing one is the extreme)
  uint64_t fill_bits;  // FILL: the value's bit pattern in the output dtype
} tsr_cuda_ew_args;

// Elementwise ops over |out| and |inputs| (device pointers to element 0).
tsr_status tsr_cuda_launch_elementwise(const tsr_cuda_ew_args *args, void *out,
                                       const void *const *inputs, cudaStream_t stream);

// REDUCE of |x| (view) into |out| whose view has size 1 on the reduced axes.
tsr_status tsr_cuda_launch_reduce(tsr_reduce_fn_t fn, tsr_dtype_t dtype, const void *x,
                                  const tsr_cuda_view *x_view, uint32_t axes_mask, void *out,
                                  const tsr_cuda_view *out_view, cudaStream_t stream);
// ARG_REDUCE along |axis| into int64 |out|.
tsr_status tsr_cuda_launch_arg_reduce(tsr_arg_reduce_fn_t fn, tsr_dtype_t dtype, const void *x,
                                      const tsr_cuda_view *x_view, int32_t axis, int64_t *out,
                                      const tsr_cuda_view *out_view, cudaStream_t stream);
// SOFTMAX (log when |log|) of |x| over |axis| into |y|; views share sizes.
tsr_status tsr_cuda_launch_softmax(tsr_dtype_t dtype, int log, const void *x,
                                   const tsr_cuda_view *x_view, void *y,
                                   const tsr_cuda_view *y_view, int32_t axis, cudaStream_t stream);
// SOFTMAX_BACKWARD: dx from dy and the forward's y.
tsr_status tsr_cuda_launch_softmax_backward(tsr_dtype_t dtype, int log, const void *dy,
                                            const tsr_cuda_view *dy_view, const void *y,
                                            const tsr_cuda_view *y_view, void *dx,
                                            const tsr_cuda_view *dx_view, int32_t axis,
                                            cudaStream_t stream);
// CROSS_ENTROPY forward over logits [N, C] with a unit column stride: loss
// (per row, or one scalar) and lse. |row_loss| is workspace of N doubles. A
// bad target sets |error_word| to TSR_CUDA_KERNEL_ERROR_TARGET.
tsr_status tsr_cuda_launch_cross_entropy(tsr_dtype_t dtype, const void *logits, int64_t row_stride,
                                         const int64_t *target, int64_t target_stride, int64_t n,
                                         int64_t c, tsr_reduction_t reduction, int64_t ignore_index,
                                         double label_smoothing, void *loss, int64_t loss_stride,
                                         float *lse, int64_t lse_stride, double *row_loss,
                                         int *error_word, cudaStream_t stream);
// CROSS_ENTROPY_BACKWARD: dlogits [N, C] (unit column stride). |valid| is
// workspace of one double (MEAN's count of rows that are not ignored).
tsr_status tsr_cuda_launch_cross_entropy_backward(
    tsr_dtype_t dtype, const void *dloss, int64_t dloss_stride, const void *logits,
    int64_t row_stride, const int64_t *target, int64_t target_stride, const float *lse,
    int64_t lse_stride, int64_t n, int64_t c, tsr_reduction_t reduction, int64_t ignore_index,
    double label_smoothing, double *valid, void *dlogits, int64_t dlogits_row_stride,
    cudaStream_t stream);

// SGD_UPDATE / ADAM_UPDATE over |count| contiguous elements.
tsr_status tsr_cuda_launch_sgd(tsr_dtype_t dtype, const tsr_sgd_attrs *attrs, const void *grad,
                               void *param, void *momentum, int64_t count, cudaStream_t stream);
tsr_status tsr_cuda_launch_adam(tsr_dtype_t dtype, const tsr_adam_attrs *attrs, const void *grad,
                                void *param, void *exp_avg, void *exp_avg_sq, int64_t count,
                                cudaStream_t stream);
// RNG_FILL of |out| (view) with Philox-4x32-10 as ops.h specifies.
tsr_status tsr_cuda_launch_rng_fill(tsr_dtype_t dtype, const tsr_rng_fill_attrs *attrs, void *out,
                                    const tsr_cuda_view *out_view, cudaStream_t stream);
// GATHER along |axis|: out[.., k, ..] = x[.., index[k], ..]. A bad index sets
// |error_word| and leaves that slice unwritten.
tsr_status tsr_cuda_launch_gather(tsr_dtype_t dtype, const void *x, const tsr_cuda_view *x_view,
                                  const void *index, tsr_dtype_t index_dtype, int64_t index_stride,
                                  void *out, const tsr_cuda_view *out_view, int32_t axis,
                                  int *error_word, cudaStream_t stream);
// SCATTER_ADD along |axis|: out[.., index[k], ..] += src[.., k, ..] (atomics).
tsr_status tsr_cuda_launch_scatter_add(tsr_dtype_t dtype, const void *src,
                                       const tsr_cuda_view *src_view, const void *index,
                                       tsr_dtype_t index_dtype, int64_t index_stride, void *out,
                                       const tsr_cuda_view *out_view, int32_t axis, int *error_word,
                                       cudaStream_t stream);
// POOL2D forward (indices may be NULL for AVG) and backward, NCHW views.
tsr_status tsr_cuda_launch_pool2d(tsr_dtype_t dtype, const tsr_pool2d_attrs *attrs, const void *x,
                                  const tsr_cuda_view *x_view, void *y, const tsr_cuda_view *y_view,
                                  int64_t *indices, const tsr_cuda_view *indices_view,
                                  cudaStream_t stream);
tsr_status tsr_cuda_launch_pool2d_backward(tsr_dtype_t dtype, const tsr_pool2d_attrs *attrs,
                                           const void *dy, const tsr_cuda_view *dy_view,
                                           const int64_t *indices,
                                           const tsr_cuda_view *indices_view, void *dx,
                                           const tsr_cuda_view *dx_view, cudaStream_t stream);
// LAYER_NORM forward over contiguous rows: |rows| x |cols|; gamma/beta may
// be NULL. mean/rstd are float32 for half x, else x's dtype (|stat_dtype|).
tsr_status tsr_cuda_launch_layer_norm(tsr_dtype_t dtype, tsr_dtype_t stat_dtype, const void *x,
                                      const void *gamma, const void *beta, void *y, void *mean,
                                      void *rstd, int64_t rows, int64_t cols, double eps,
                                      cudaStream_t stream);
// LAYER_NORM_BACKWARD over packed rows; gamma may be NULL, dgamma and dbeta
// NULL together.
tsr_status tsr_cuda_launch_layer_norm_backward(tsr_dtype_t dtype, tsr_dtype_t stat_dtype,
                                               const void *dy, const void *x, const void *mean,
                                               const void *rstd, const void *gamma, void *dx,
                                               void *dgamma, void *dbeta, int64_t rows,
                                               int64_t cols, cudaStream_t stream);
// BATCH_NORM: |views| and |ptrs| hold the op's 5 inputs then 5 outputs.
tsr_status tsr_cuda_launch_batch_norm(tsr_dtype_t dtype, const tsr_cuda_view *views,
                                      void *const *ptrs, double eps, double momentum, int training,
                                      cudaStream_t stream);
// BATCH_NORM_BACKWARD: |views| and |ptrs| hold the 5 inputs then 3 outputs.
tsr_status tsr_cuda_launch_batch_norm_backward(tsr_dtype_t dtype, const tsr_cuda_view *views,
                                               void *const *ptrs, int training,
                                               cudaStream_t stream);
// CONV2D epilogue: y[n, c, h, w] = act(y + bias[c]) in place (bias may be NULL).
tsr_status tsr_cuda_launch_channel_bias_act(tsr_dtype_t dtype, void *y, const void *bias,
                                            tsr_activation_t activation, int64_t n, int64_t c,
                                            int64_t h, int64_t w, const int64_t *strides,
                                            cudaStream_t stream);
// dbias[c] = sum over n, h, w of dy[n, c, h, w].
tsr_status tsr_cuda_launch_channel_sum(tsr_dtype_t dtype, const void *dy, int64_t n, int64_t c,
                                       int64_t h, int64_t w, const int64_t *strides, void *dbias,
                                       cudaStream_t stream);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_PLUGINS_CUDA_CUDA_KERNELS_H_
