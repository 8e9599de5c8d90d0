// Tessera: layers, losses and initialisers (included by tessera/tessera.h).
//
// A module owns its parameters (leaf tensors that require grad) and buffers
// (running statistics), named as PyTorch's state_dict names them ("weight",
// "bias", "running_mean"; "0.weight" inside a Sequential), so checkpoints
// interoperate. Modules start in training mode. Parameters are initialised
// from the device's context RNG (tsr_context_seed_set makes them
// reproducible), with PyTorch's default schemes.
//
// Threading: a module may run forward on several threads at once in eval
// mode; training-mode forward (batch-norm running statistics, dropout) and
// every setter need external synchronisation.
// Its types and TSR_API come from tessera.h, which includes this header at
// its end; included first, this header lets tessera.h include it whole.
#include "tessera/tessera.h"

#ifndef TESSERA_NN_H_
#define TESSERA_NN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_module tsr_module;

// Layers. Each returns a new module owned by the caller (tsr_module_destroy)
// or NULL with tsr_last_error() set.

// y = x @ weight^T + bias; weight [out, in], bias [out]. x is [..., in].
TSR_API tsr_module *tsr_nn_linear(tsr_device *device, int64_t in_features, int64_t out_features,
                                  int bias);

typedef struct tsr_conv2d_options {
  size_t struct_size;
  int64_t stride[2];    // default 1
  int64_t padding[2];   // both sides, default 0
  int64_t dilation[2];  // default 1
  int64_t groups;       // default 1
  uint32_t bias;        // default 1
  uint32_t reserved;
} tsr_conv2d_options;
TSR_API void tsr_conv2d_options_init(tsr_conv2d_options *options);
// weight [out, in/groups, kh, kw], bias [out]. |options| may be NULL.
TSR_API tsr_module *tsr_nn_conv2d(tsr_device *device, int64_t in_channels, int64_t out_channels,
                                  int64_t kernel_h, int64_t kernel_w,
                                  const tsr_conv2d_options *options);
// weight (gamma) [C] = 1, bias (beta) [C] = 0; buffers running_mean [C] = 0,
// running_var [C] = 1, num_batches_tracked int64 [] = 0.
TSR_API tsr_module *tsr_nn_batch_norm2d(tsr_device *device, int64_t num_features, double eps,
                                        double momentum);
// Normalises the last |rank| axes of sizes |normalized_shape|; weight and
// bias of that shape when |affine|.
TSR_API tsr_module *tsr_nn_layer_norm(tsr_device *device, int32_t rank,
                                      const int64_t *normalized_shape, double eps, int affine);
// Zeroes elements with probability |p| in training mode (mask from the
// context RNG, kept on the tape) and scales the rest by 1/(1-p).
TSR_API tsr_module *tsr_nn_dropout(double p);
// weight [num_embeddings, dim] ~ N(0, 1); forward takes int64/int32 indices
// of any shape and returns [..., dim].
TSR_API tsr_module *tsr_nn_embedding(tsr_device *device, int64_t num_embeddings, int64_t dim);
// Square windows: kernel k, stride s (0 means k), padding p.
TSR_API tsr_module *tsr_nn_max_pool2d(int64_t k, int64_t s, int64_t p);
TSR_API tsr_module *tsr_nn_avg_pool2d(int64_t k, int64_t s, int64_t p);
TSR_API tsr_module *tsr_nn_relu(void);
// tanh_approximation: 0 for the exact erf form.
TSR_API tsr_module *tsr_nn_gelu(int tanh_approximation);
TSR_API tsr_module *tsr_nn_sigmoid(void);
TSR_API tsr_module *tsr_nn_tanh(void);
TSR_API tsr_module *tsr_nn_softmax(int32_t axis);
TSR_API tsr_module *tsr_nn_log_softmax(int32_t axis);
// [N, ...] -> [N, prod(...)].
TSR_API tsr_module *tsr_nn_flatten(void);
// Runs |children| in order. Takes ownership of every child, also on failure.
TSR_API tsr_module *tsr_nn_sequential(int32_t count, tsr_module *const *children);

// Destroys |module|, its children and its parameters' references. NULL is ignored.
TSR_API void tsr_module_destroy(tsr_module *module);
// The layer's kind ("Linear", "Sequential"). Static storage.
TSR_API const char *tsr_module_kind(const tsr_module *module);
// Runs the module on |x| (recording on the tape when grad mode is on and a
// parameter or |x| requires grad). New reference, or NULL.
TSR_API tsr_tensor *tsr_module_forward(tsr_module *module, tsr_tensor *x);
// Training (1) or evaluation (0) mode, for the module and its children.
TSR_API void tsr_module_train_set(tsr_module *module, int training);
TSR_API int tsr_module_training(const tsr_module *module);

// Parameters, depth first in registration order. The name and tensor are
// owned by the module and valid until it is destroyed (or the tensor is
// replaced with tsr_module_parameter_set).
TSR_API int32_t tsr_module_parameter_count(const tsr_module *module);
TSR_API TSR_MUST_USE tsr_status tsr_module_parameter_get(const tsr_module *module, int32_t index,
                                            const char **out_name, tsr_tensor **out_tensor);
// The parameter called |name| ("0.weight"), or NULL (TSR_NOT_FOUND when
// absent). Borrowed, as above: do not release it.
TSR_API tsr_tensor *tsr_module_parameter_by_name_get(const tsr_module *module, const char *name);
// The old name of tsr_module_parameter_by_name_get; removed in 0.2.0.
TSR_API TSR_DEPRECATED("use tsr_module_parameter_by_name_get (removed in 0.2)")
    tsr_tensor *tsr_module_parameter_find(const tsr_module *module, const char *name);
// Buffers (running statistics), named and owned as parameters are.
TSR_API int32_t tsr_module_buffer_count(const tsr_module *module);
TSR_API TSR_MUST_USE tsr_status tsr_module_buffer_get(const tsr_module *module, int32_t index,
                                         const char **out_name, tsr_tensor **out_tensor);
// Clears the gradient of every parameter.
TSR_API void tsr_module_zero_grad(tsr_module *module);

// Losses. Return a new tensor: rank 0 for MEAN and SUM, [N] (cross-entropy)
// or x's shape (MSE) for NONE.
// Fused log-softmax + negative log-likelihood of logits [N, C] against int64
// class indices [N]; one op forward, one op backward.
TSR_API tsr_tensor *tsr_nn_cross_entropy(tsr_tensor *logits, tsr_tensor *target,
                                         tsr_reduction_t reduction, double label_smoothing);
// (x - target)^2, reduced; the backward is one fused expression 2 (x - t) / n.
TSR_API tsr_tensor *tsr_nn_mse_loss(tsr_tensor *x, tsr_tensor *target, tsr_reduction_t reduction);

// Initialisers, in place, from the tensor's context RNG. fan_in and fan_out
// follow PyTorch: for a weight [out, in, k...], fan_in = in * prod(k).
typedef int32_t tsr_fan_mode_t;
enum { TSR_FAN_IN = 0, TSR_FAN_OUT = 1 };
typedef int32_t tsr_nonlinearity_t;
enum {
  TSR_NONLINEARITY_LINEAR = 0,      // gain 1 (also sigmoid, conv)
  TSR_NONLINEARITY_RELU = 1,        // gain sqrt(2)
  TSR_NONLINEARITY_LEAKY_RELU = 2,  // gain sqrt(2 / (1 + a^2))
  TSR_NONLINEARITY_TANH = 3,        // gain 5/3
};
// The recommended gain of |nonlinearity| (|param|: leaky_relu's slope).
TSR_API double tsr_init_gain(tsr_nonlinearity_t nonlinearity, double param);
TSR_API TSR_MUST_USE tsr_status tsr_init_uniform_(tsr_tensor *tensor, double low, double high);
TSR_API TSR_MUST_USE tsr_status tsr_init_normal_(tsr_tensor *tensor, double mean, double std);
// U(-b, b) with b = gain * sqrt(3 / fan), gain from |nonlinearity| and |a|.
TSR_API TSR_MUST_USE tsr_status tsr_init_kaiming_uniform_(tsr_tensor *tensor, double a, tsr_fan_mode_t mode,
                                             tsr_nonlinearity_t nonlinearity);
// N(0, std^2) with std = gain / sqrt(fan).
TSR_API TSR_MUST_USE tsr_status tsr_init_kaiming_normal_(tsr_tensor *tensor, double a, tsr_fan_mode_t mode,
                                            tsr_nonlinearity_t nonlinearity);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
TSR_API TSR_MUST_USE tsr_status tsr_init_xavier_uniform_(tsr_tensor *tensor, double gain);
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
TSR_API TSR_MUST_USE tsr_status tsr_init_xavier_normal_(tsr_tensor *tensor, double gain);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_NN_H_
