// Tessera: optimizers and learning-rate schedules (included by tessera/tessera.h).
//
// An optimizer holds references to its parameters and owns its state
// (momentum buffers, Adam moments), created at the first step that sees a
// gradient, as PyTorch does. Each parameter's update is one fused op on its
// device (SGD_UPDATE, ADAM_UPDATE). State is readable and writable by name,
// "<param name>.<state>" with PyTorch's state names (momentum_buffer,
// exp_avg, exp_avg_sq), for checkpoints. Not thread-safe: one thread steps an
// optimizer at a time.
// Its types and TSR_API come from tessera.h, which includes this header at
// its end; included first, this header lets tessera.h include it whole.
#include "tessera/tessera.h"

#ifndef TESSERA_OPTIM_H_
#define TESSERA_OPTIM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_optimizer tsr_optimizer;
typedef struct tsr_lr_schedule tsr_lr_schedule;

typedef struct tsr_sgd_options {
  size_t struct_size;
  double lr;            // default 0.01
  double momentum;      // default 0
  double dampening;     // default 0
  double weight_decay;  // default 0
  uint32_t nesterov;    // default 0; needs momentum > 0 and dampening 0
  uint32_t reserved;
} tsr_sgd_options;

typedef struct tsr_adam_options {
  size_t struct_size;
  double lr;                        // default 1e-3
  double beta1;                     // default 0.9
  double beta2;                     // default 0.999
  double eps;                       // default 1e-8
  double weight_decay;              // default 0 (Adam), 0.01 (AdamW)
  uint32_t decoupled_weight_decay;  // 1: AdamW
  uint32_t reserved;
} tsr_adam_options;

TSR_API void tsr_sgd_options_init(tsr_sgd_options *options);
TSR_API void tsr_adam_options_init(tsr_adam_options *options);
TSR_API void tsr_adamw_options_init(tsr_adam_options *options);

// Optimizers over |count| parameters named |names| (NULL: "0", "1", ...; the
// names are copied). The optimizer retains the parameters; owned by the
// caller (tsr_optimizer_destroy). |options| may be NULL for the defaults.
TSR_API tsr_optimizer *tsr_optim_sgd(int32_t count, tsr_tensor *const *params,
                                     const char *const *names, const tsr_sgd_options *options);
TSR_API tsr_optimizer *tsr_optim_adam(int32_t count, tsr_tensor *const *params,
                                      const char *const *names, const tsr_adam_options *options);
// The same over every parameter of |module|, with the module's names.
TSR_API tsr_optimizer *tsr_optim_sgd_for_module(tsr_module *module, const tsr_sgd_options *options);
TSR_API tsr_optimizer *tsr_optim_adam_for_module(tsr_module *module,
                                                 const tsr_adam_options *options);
TSR_API void tsr_optimizer_destroy(tsr_optimizer *optimizer);

// Updates every parameter that has a gradient; one fused op each.
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_step(tsr_optimizer *optimizer);
// Clears the gradients of the parameters.
TSR_API void tsr_optimizer_zero_grad(tsr_optimizer *optimizer);
TSR_API double tsr_optimizer_lr(const tsr_optimizer *optimizer);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_lr_set(tsr_optimizer *optimizer, double lr);
// Steps taken (Adam's bias correction uses it); settable for checkpoints.
TSR_API int64_t tsr_optimizer_step_count(const tsr_optimizer *optimizer);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_step_count_set(tsr_optimizer *optimizer, int64_t steps);

// State tensors that exist, in parameter order. Name and tensor are owned by
// the optimizer, valid until the next step, state_set or destroy.
TSR_API int32_t tsr_optimizer_state_count(const tsr_optimizer *optimizer);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_state_get(const tsr_optimizer *optimizer, int32_t index,
                                           const char **out_name, tsr_tensor **out_tensor);
// Copies |value| into the state called |name| ("fc.weight.exp_avg"),
// creating it if needed. TSR_NOT_FOUND for a name that cannot exist in this
// optimizer; TSR_INVALID_ARGUMENT for a size or dtype mismatch.
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_state_set(tsr_optimizer *optimizer, const char *name,
                                           tsr_tensor *value);

// Learning-rate schedules, stepped once per epoch; each sets the optimizer's
// lr from the base lr it had at creation. Owned by the caller; the optimizer
// must outlive them.
// lr = base * gamma^floor(epoch / step_size).
TSR_API tsr_lr_schedule *tsr_lr_step(tsr_optimizer *optimizer, int64_t step_size, double gamma);
// lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / t_max)) / 2, epoch
// clamped to t_max.
TSR_API tsr_lr_schedule *tsr_lr_cosine(tsr_optimizer *optimizer, int64_t t_max, double eta_min);
TSR_API void tsr_lr_schedule_destroy(tsr_lr_schedule *schedule);
// Advances one epoch and sets the optimizer's lr.
TSR_API TSR_MUST_USE tsr_status tsr_lr_schedule_step(tsr_lr_schedule *schedule);
// The current epoch; setting it (to resume) also sets the lr.
TSR_API int64_t tsr_lr_schedule_epoch(const tsr_lr_schedule *schedule);
TSR_API TSR_MUST_USE tsr_status tsr_lr_schedule_epoch_set(tsr_lr_schedule *schedule, int64_t epoch);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_OPTIM_H_
