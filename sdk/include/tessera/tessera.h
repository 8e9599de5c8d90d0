// Tessera: the application API.
//
// A context loads the plugins and owns the devices; tensors live on a device
// and are reference-counted handles over storage. Ops return a new tensor, or
// NULL with the reason in tsr_last_error(); the first error of a context also
// sticks to it (tsr_context_status) so a long expression can be checked once.
//
// Threading: a context may be used from several threads at once. A tensor
// may be read by several threads; writing it (in-place ops, release of the
// last reference) needs external synchronisation, as for a C object.
#ifndef TESSERA_TESSERA_H_
#define TESSERA_TESSERA_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/core.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------
// Tensors. Functions returning tsr_tensor * give the caller one reference
// (release with tsr_tensor_release) or NULL with tsr_last_error() set.

// Uninitialised contiguous tensor. Thread-safe.
TSR_API tsr_tensor *tsr_tensor_empty(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                     const int64_t *sizes);
TSR_API tsr_tensor *tsr_tensor_full(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                    const int64_t *sizes, double value);
// Copies |data| (row-major, contiguous) into a new tensor. Thread-safe.
TSR_API tsr_tensor *tsr_tensor_from_host(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                         const int64_t *sizes, const void *data);
// Copies |tensor| into |dst| in row-major order after the work writing it has
// finished; |dst_bytes| must equal numel * dtype size. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_tensor_to_host(const tsr_tensor *tensor, void *dst, size_t dst_bytes);
// A contiguous copy of |tensor| on |device|.
TSR_API tsr_tensor *tsr_tensor_to_device(const tsr_tensor *tensor, tsr_device *device);

// Views share storage with their source. -1 in |sizes| is inferred once.
TSR_API tsr_tensor *tsr_view(tsr_tensor *tensor, int32_t rank, const int64_t *sizes);
// A view when the strides allow one, else a contiguous copy.
TSR_API tsr_tensor *tsr_reshape(tsr_tensor *tensor, int32_t rank, const int64_t *sizes);
TSR_API tsr_tensor *tsr_transpose(tsr_tensor *tensor, int32_t dim0, int32_t dim1);
TSR_API tsr_tensor *tsr_permute(tsr_tensor *tensor, int32_t rank, const int32_t *dims);
// Elements start, start+step, ... < end of |dim|; negative start/end count
// from the end and are clamped as in Python; step >= 1.
TSR_API tsr_tensor *tsr_slice(tsr_tensor *tensor, int32_t dim, int64_t start, int64_t end,
                              int64_t step);
// Broadcast view (stride 0) to |sizes|; -1 keeps a size.
TSR_API tsr_tensor *tsr_expand(tsr_tensor *tensor, int32_t rank, const int64_t *sizes);
// |tensor| itself (new reference) if contiguous, else a contiguous copy.
TSR_API tsr_tensor *tsr_contiguous(tsr_tensor *tensor);

// Creation. All return a new contiguous tensor (caller's reference) or NULL.
TSR_API tsr_tensor *tsr_zeros(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                              const int64_t *sizes);
TSR_API tsr_tensor *tsr_ones(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                             const int64_t *sizes);
// A new tensor of |like|'s device, dtype and sizes, filled with |value|.
TSR_API tsr_tensor *tsr_full_like(const tsr_tensor *like, double value);
// [start, start + step, ...) below |end| (above it for a negative step), 1-D.
TSR_API tsr_tensor *tsr_arange(tsr_device *device, tsr_dtype_t dtype, double start, double end,
                               double step);
// Uniform on [low, high) and normal(mean, std) from the device's context RNG
// (claims numel counters). float dtypes. Thread-safe.
TSR_API tsr_tensor *tsr_rand(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                             const int64_t *sizes, double low, double high);
TSR_API tsr_tensor *tsr_randn(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                              const int64_t *sizes, double mean, double std);
// Fills |tensor| from the context RNG (RNG_FILL with a claimed offset).
TSR_API TSR_MUST_USE tsr_status tsr_rng_fill_(tsr_tensor *tensor, tsr_rng_distribution_t distribution,
                                 double a, double b);
// Fills |tensor| with RNG_FILL at an explicit |seed| and |offset|.
TSR_API TSR_MUST_USE tsr_status tsr_rng_fill_seeded_(tsr_tensor *tensor, tsr_rng_distribution_t distribution,
                                        double a, double b, uint64_t seed, uint64_t offset);

// ---------------------------------------------------------------------------
// Ops. Inputs must live on one device; the result lives there too.


TSR_API TSR_MUST_USE tsr_status tsr_fill_(tsr_tensor *tensor, double value);
// Copies |src| (broadcast to |dst|'s shape) into |dst|, casting if needed.
TSR_API TSR_MUST_USE tsr_status tsr_copy_(tsr_tensor *dst, tsr_tensor *src);
TSR_API tsr_tensor *tsr_cast(tsr_tensor *tensor, tsr_dtype_t dtype);

TSR_API tsr_tensor *tsr_unary(tsr_tensor *x, tsr_unary_fn_t fn, double alpha);
TSR_API TSR_MUST_USE tsr_status tsr_unary_out(tsr_tensor *out, tsr_tensor *x, tsr_unary_fn_t fn, double alpha);
TSR_API tsr_tensor *tsr_unary_backward(tsr_tensor *dy, tsr_tensor *x, tsr_unary_fn_t fn,
                                       double alpha);
TSR_API tsr_tensor *tsr_binary(tsr_tensor *a, tsr_tensor *b, tsr_binary_fn_t fn, double alpha);
// |out| must have the broadcast shape; it may be |a| or |b| (in place).
TSR_API TSR_MUST_USE tsr_status tsr_binary_out(tsr_tensor *out, tsr_tensor *a, tsr_tensor *b,
                                  tsr_binary_fn_t fn, double alpha);
TSR_API tsr_tensor *tsr_compare(tsr_tensor *a, tsr_tensor *b, tsr_compare_fn_t fn);
TSR_API tsr_tensor *tsr_where(tsr_tensor *cond, tsr_tensor *a, tsr_tensor *b);
TSR_API tsr_tensor *tsr_clamp(tsr_tensor *x, int has_min, double min, int has_max, double max);
// Reduces |num_axes| axes (negative count from the end; 0 axes = all).
TSR_API tsr_tensor *tsr_reduce(tsr_tensor *x, tsr_reduce_fn_t fn, int32_t num_axes,
                               const int32_t *axes, int keepdim);
TSR_API tsr_tensor *tsr_arg_reduce(tsr_tensor *x, tsr_arg_reduce_fn_t fn, int32_t axis,
                                   int keepdim);
// a [..., M, K] @ b [..., K, N]; batch dims broadcast; rank-1 operands are
// promoted as in NumPy. |bias| may be NULL.
TSR_API tsr_tensor *tsr_matmul_ex(tsr_tensor *a, tsr_tensor *b, tsr_tensor *bias,
                                  tsr_activation_t activation);

// Convolution (NCHW). |attrs| NULL means stride 1, no padding, dilation 1,
// one group, no activation; attrs->has_bias is taken from |bias| != NULL.
TSR_API tsr_tensor *tsr_conv2d(tsr_tensor *x, tsr_tensor *w, tsr_tensor *bias,
                               const tsr_conv2d_attrs *attrs);
// dx of sizes |x_sizes| [4] from dy and w.
TSR_API tsr_tensor *tsr_conv2d_backward_data(tsr_tensor *dy, tsr_tensor *w,
                                             const int64_t *x_sizes,
                                             const tsr_conv2d_attrs *attrs);
// dw of sizes |w_sizes| [4] and, when |out_dbias| is not NULL, dbias [O].
TSR_API TSR_MUST_USE tsr_status tsr_conv2d_backward_filter(tsr_tensor *dy, tsr_tensor *x,
                                              const int64_t *w_sizes,
                                              const tsr_conv2d_attrs *attrs, tsr_tensor **out_dw,
                                              tsr_tensor **out_dbias);
// Pooling; output sizes from the attrs (floor or ceil_mode). For MAX the
// int64 indices go to |out_indices| when it is not NULL (caller's reference).
TSR_API tsr_tensor *tsr_pool2d(tsr_tensor *x, const tsr_pool2d_attrs *attrs,
                               tsr_tensor **out_indices);
// dx of sizes |x_sizes| [4]; |indices| for MAX, NULL for AVG.
TSR_API tsr_tensor *tsr_pool2d_backward(tsr_tensor *dy, tsr_tensor *indices,
                                        const int64_t *x_sizes, const tsr_pool2d_attrs *attrs);
// Square-window conveniences: kernel k, stride s, padding p on both sides.
TSR_API tsr_tensor *tsr_max_pool2d(tsr_tensor *x, int64_t k, int64_t s, int64_t p);
TSR_API tsr_tensor *tsr_avg_pool2d(tsr_tensor *x, int64_t k, int64_t s, int64_t p);
TSR_API tsr_tensor *tsr_softmax(tsr_tensor *x, int32_t axis);
TSR_API tsr_tensor *tsr_log_softmax(tsr_tensor *x, int32_t axis);
TSR_API tsr_tensor *tsr_softmax_backward(tsr_tensor *dy, tsr_tensor *y, int32_t axis, int log);
// Layer norm over axes [axis, rank). gamma and beta may both be NULL. mean and
// rstd go to |out_mean| / |out_rstd| when not NULL.
TSR_API tsr_tensor *tsr_layer_norm(tsr_tensor *x, tsr_tensor *gamma, tsr_tensor *beta,
                                   int32_t axis, double eps, tsr_tensor **out_mean,
                                   tsr_tensor **out_rstd);
// dx to |out_dx|; with |gamma|, dgamma and dbeta to |out_dgamma| / |out_dbeta|
// (then required). Caller's references.
TSR_API TSR_MUST_USE tsr_status tsr_layer_norm_backward(tsr_tensor *dy, tsr_tensor *x, tsr_tensor *mean,
                                           tsr_tensor *rstd, tsr_tensor *gamma, int32_t axis,
                                           double eps, tsr_tensor **out_dx,
                                           tsr_tensor **out_dgamma, tsr_tensor **out_dbeta);
// Batch norm over [N, C, ...]; in training the running statistics are
// updated in place. save_mean / save_invstd go to the out_ pointers when not NULL.
TSR_API tsr_tensor *tsr_batch_norm(tsr_tensor *x, tsr_tensor *gamma, tsr_tensor *beta,
                                   tsr_tensor *running_mean, tsr_tensor *running_var,
                                   int training, double momentum, double eps,
                                   tsr_tensor **out_save_mean, tsr_tensor **out_save_invstd);
TSR_API TSR_MUST_USE tsr_status tsr_batch_norm_backward(tsr_tensor *dy, tsr_tensor *x, tsr_tensor *gamma,
                                           tsr_tensor *save_mean, tsr_tensor *save_invstd,
                                           int training, double eps, tsr_tensor **out_dx,
                                           tsr_tensor **out_dgamma, tsr_tensor **out_dbeta);
TSR_API tsr_tensor *tsr_concat(int32_t count, tsr_tensor *const *xs, int32_t axis);
TSR_API tsr_tensor *tsr_pad(tsr_tensor *x, const tsr_pad_attrs *attrs);
// out = x with |axis| re-indexed by |index| (int32/int64, 1-D).
TSR_API tsr_tensor *tsr_gather(tsr_tensor *x, int32_t axis, tsr_tensor *index);
// A copy of |base| with |src| added at |index| along |axis|.
TSR_API tsr_tensor *tsr_scatter_add(tsr_tensor *base, int32_t axis, tsr_tensor *index,
                                    tsr_tensor *src);
// In place: out[..., index[k], ...] += src[..., k, ...].
TSR_API TSR_MUST_USE tsr_status tsr_scatter_add_(tsr_tensor *out, int32_t axis, tsr_tensor *index,
                                    tsr_tensor *src);
// Cross-entropy of logits [N, C] against int64 targets [N]. lse [N] float32
// to |out_lse| when not NULL.
TSR_API tsr_tensor *tsr_cross_entropy(tsr_tensor *logits, tsr_tensor *target,
                                      const tsr_cross_entropy_attrs *attrs, tsr_tensor **out_lse);
TSR_API tsr_tensor *tsr_cross_entropy_backward(tsr_tensor *dloss, tsr_tensor *logits,
                                               tsr_tensor *target, tsr_tensor *lse,
                                               const tsr_cross_entropy_attrs *attrs);
// Fused optimizer updates, in place. |momentum_buf| may be NULL when
// attrs->momentum == 0.
TSR_API TSR_MUST_USE tsr_status tsr_sgd_update_(tsr_tensor *param, tsr_tensor *grad, tsr_tensor *momentum_buf,
                                   const tsr_sgd_attrs *attrs);
TSR_API TSR_MUST_USE tsr_status tsr_adam_update_(tsr_tensor *param, tsr_tensor *grad, tsr_tensor *exp_avg,
                                    tsr_tensor *exp_avg_sq, const tsr_adam_attrs *attrs);

static inline tsr_tensor *tsr_add(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_ADD, 1.0); }
static inline tsr_tensor *tsr_sub(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_SUB, 1.0); }
static inline tsr_tensor *tsr_mul(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_MUL, 1.0); }
static inline tsr_tensor *tsr_div(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_DIV, 1.0); }
static inline tsr_tensor *tsr_maximum(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_MAXIMUM, 1.0); }
static inline tsr_tensor *tsr_minimum(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_MINIMUM, 1.0); }
static inline tsr_tensor *tsr_neg(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_NEG, 0.0); }
static inline tsr_tensor *tsr_exp(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_EXP, 0.0); }
static inline tsr_tensor *tsr_relu(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_RELU, 0.0); }
static inline tsr_tensor *tsr_sum(tsr_tensor *x, int32_t num_axes, const int32_t *axes, int keepdim) { return tsr_reduce(x, TSR_REDUCE_SUM, num_axes, axes, keepdim); }
static inline tsr_tensor *tsr_mean(tsr_tensor *x, int32_t num_axes, const int32_t *axes, int keepdim) { return tsr_reduce(x, TSR_REDUCE_MEAN, num_axes, axes, keepdim); }
static inline tsr_tensor *tsr_argmax(tsr_tensor *x, int32_t axis, int keepdim) { return tsr_arg_reduce(x, TSR_ARG_REDUCE_ARGMAX, axis, keepdim); }
static inline tsr_tensor *tsr_matmul(tsr_tensor *a, tsr_tensor *b) { return tsr_matmul_ex(a, b, NULL, TSR_ACTIVATION_NONE); }
static inline tsr_tensor *tsr_sigmoid(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_SIGMOID, 0.0); }
static inline tsr_tensor *tsr_tanh(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_TANH, 0.0); }
static inline tsr_tensor *tsr_logarithm(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_LOG, 0.0); }
static inline tsr_tensor *tsr_square(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_SQUARE, 0.0); }
static inline tsr_tensor *tsr_gelu(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_GELU, 0.0); }

#ifdef __cplusplus
}  // extern "C"
#endif

#include "tessera/autograd.h"
#include "tessera/nn.h"
#include "tessera/optim.h"
#include "tessera/data.h"
#include "tessera/io.h"
// PyTorch-style functions over the ops above: stack, split, var, norm, ...
#include "tessera/ops_more.h"
// Looking at tensors (tsr_tensor_format, tsr_tensor_print) and TSR_SHAPE / TSR_AXES.
#include "tessera/print.h"

#endif  // TESSERA_TESSERA_H_
