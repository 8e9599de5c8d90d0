// Tessera: optimizers and learning-rate schedules (included by tessera/tessera.h).
//
// An optimizer holds references to its parameters and owns its state
// (momentum buffers, Adam moments), created at the first step that sees a
// gradient, as PyTorch does. Each parameter's update is one fused op on its
// device (SGD_UPDATE, ADAM_UPDATE), or a few elementwise ops (RMSprop,
// Adagrad). State is readable and writable by name, "<param name>.<state>"
// with PyTorch's state names (momentum_buffer, exp_avg, exp_avg_sq,
// square_avg, grad_avg, sum), for checkpoints. Not thread-safe: one thread steps an
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

// torch.optim.RMSprop's options.
typedef struct tsr_rmsprop_options {
  size_t struct_size;
  double lr;            // default 1e-2
  double alpha;         // default 0.99
  double eps;           // default 1e-8
  double weight_decay;  // default 0
  double momentum;      // default 0
  uint32_t centered;    // default 0
  uint32_t reserved;
} tsr_rmsprop_options;

// torch.optim.Adagrad's options.
typedef struct tsr_adagrad_options {
  size_t struct_size;
  double lr;                         // default 1e-2
  double lr_decay;                   // default 0
  double weight_decay;               // default 0
  double initial_accumulator_value;  // default 0
  double eps;                        // default 1e-10
} tsr_adagrad_options;

// Each sets |options| to PyTorch's defaults, struct_size included. Thread-safe.
TSR_API void tsr_sgd_options_init(tsr_sgd_options *options);
TSR_API void tsr_adam_options_init(tsr_adam_options *options);
TSR_API void tsr_adamw_options_init(tsr_adam_options *options);
TSR_API void tsr_rmsprop_options_init(tsr_rmsprop_options *options);
TSR_API void tsr_adagrad_options_init(tsr_adagrad_options *options);

// Optimizers over |count| parameters named |names| (NULL: "0", "1", ...; the
// names are copied). The optimizer retains the parameters; owned by the
// caller (tsr_optimizer_destroy). |options| may be NULL for the defaults.
TSR_API tsr_optimizer *tsr_optim_sgd(int32_t count, tsr_tensor *const *params,
                                     const char *const *names, const tsr_sgd_options *options);
TSR_API tsr_optimizer *tsr_optim_adam(int32_t count, tsr_tensor *const *params,
                                      const char *const *names, const tsr_adam_options *options);
// The same over every parameter of |module|, with the module's names.
// RMSprop and Adagrad step with a few elementwise ops per parameter, no
// fused op; states "square_avg", "momentum_buffer" (momentum > 0),
// "grad_avg" (centered) and "sum" (created at initial_accumulator_value).
// Ownership and threading as tsr_optim_sgd.
TSR_API tsr_optimizer *tsr_optim_rmsprop(int32_t count, tsr_tensor *const *params,
                                         const char *const *names,
                                         const tsr_rmsprop_options *options);
TSR_API tsr_optimizer *tsr_optim_adagrad(int32_t count, tsr_tensor *const *params,
                                         const char *const *names,
                                         const tsr_adagrad_options *options);
TSR_API tsr_optimizer *tsr_optim_sgd_for_module(tsr_module *module, const tsr_sgd_options *options);
TSR_API tsr_optimizer *tsr_optim_adam_for_module(tsr_module *module,
                                                 const tsr_adam_options *options);
TSR_API tsr_optimizer *tsr_optim_rmsprop_for_module(tsr_module *module,
                                                    const tsr_rmsprop_options *options);
TSR_API tsr_optimizer *tsr_optim_adagrad_for_module(tsr_module *module,
                                                    const tsr_adagrad_options *options);
TSR_API void tsr_optimizer_destroy(tsr_optimizer *optimizer);

// Parameter groups (torch.optim param_groups): adds |count| parameters
// (retained; |names| as at creation, NULL: their indices in the optimizer)
// with their own |lr| and |weight_decay|; the parameters given at creation
// are group 0. The group's index goes to |out_group| when it is not NULL.
// A parameter may be in one group only. Not thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_group_add(tsr_optimizer *optimizer, int32_t count,
                                                        tsr_tensor *const *params,
                                                        const char *const *names, double lr,
                                                        double weight_decay, int32_t *out_group);
// The number of groups (1 without group_add). Not thread-safe.
TSR_API int32_t tsr_optimizer_group_count(const tsr_optimizer *optimizer);
// Group |group|'s lr (NAN with an error for a bad index), and its setter.
// tsr_optimizer_lr is group 0's; tsr_optimizer_lr_set sets every group's.
TSR_API double tsr_optimizer_group_lr(const tsr_optimizer *optimizer, int32_t group);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_group_lr_set(tsr_optimizer *optimizer,
                                                           int32_t group, double lr);

// Updates every parameter that has a gradient; one fused op each.
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_step(tsr_optimizer *optimizer);
// Clears the gradients of the parameters.
TSR_API void tsr_optimizer_zero_grad(tsr_optimizer *optimizer);
TSR_API double tsr_optimizer_lr(const tsr_optimizer *optimizer);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_lr_set(tsr_optimizer *optimizer, double lr);
// Steps taken (Adam's bias correction uses it); settable for checkpoints.
TSR_API int64_t tsr_optimizer_step_count(const tsr_optimizer *optimizer);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_step_count_set(tsr_optimizer *optimizer, int64_t steps);

// The optimizer's parameters, in order: |out_name| and |out_param| are
// owned by the optimizer and valid until it is destroyed. Not thread-safe.
TSR_API int32_t tsr_optimizer_parameter_count(const tsr_optimizer *optimizer);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_parameter_get(const tsr_optimizer *optimizer,
                                                            int32_t index, const char **out_name,
                                                            tsr_tensor **out_param);

// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_)
// over the gradients of |count| parameters; parameters without a gradient
// are skipped. clip_grad_norm computes the |norm_type| (2 or INFINITY) norm
// of all gradients together, one reduction per gradient and one read of the
// total, and scales every gradient by max_norm / (total + 1e-6) when that is
// below 1; the total goes to |out_total_norm| when it is not NULL. The
// gradients are changed in place; not thread-safe for those gradients.
TSR_API TSR_MUST_USE tsr_status tsr_clip_grad_norm(int32_t count, tsr_tensor *const *params,
                                                   double max_norm, double norm_type,
                                                   double *out_total_norm);
// Clamps every gradient to [-|clip_value|, |clip_value|] in place.
TSR_API TSR_MUST_USE tsr_status tsr_clip_grad_value(int32_t count, tsr_tensor *const *params,
                                                    double clip_value);
// The same over an optimizer's parameters.
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_clip_grad_norm(tsr_optimizer *optimizer,
                                                             double max_norm, double norm_type,
                                                             double *out_total_norm);
TSR_API TSR_MUST_USE tsr_status tsr_optimizer_clip_grad_value(tsr_optimizer *optimizer,
                                                              double clip_value);

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

// Learning-rate schedules, stepped once per epoch (one-cycle: per batch);
// each sets every group's lr from the base lr the group had when the
// schedule was created. One schedule per optimizer at a time. The epoch,
// the base lrs and the plateau's counters are kept in the optimizer, so a
// checkpoint saves them and a schedule created after tsr_checkpoint_load
// continues where the saved one was. Owned by the caller; the optimizer
// must outlive them. Not thread-safe.
// lr = base * gamma^floor(epoch / step_size) (StepLR).
TSR_API tsr_lr_schedule *tsr_lr_step(tsr_optimizer *optimizer, int64_t step_size, double gamma);
// lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / t_max)) / 2, epoch
// clamped to t_max (CosineAnnealingLR).
TSR_API tsr_lr_schedule *tsr_lr_cosine(tsr_optimizer *optimizer, int64_t t_max, double eta_min);
// lr = base * gamma^epoch (ExponentialLR).
TSR_API tsr_lr_schedule *tsr_lr_exponential(tsr_optimizer *optimizer, double gamma);
// Linear warm-up (LinearLR; PyTorch's defaults 1/3, 1, 5): lr = base *
// (start + (end - start) * min(epoch, total_iters) / total_iters); sets the
// epoch-0 lr at creation.
TSR_API tsr_lr_schedule *tsr_lr_linear(tsr_optimizer *optimizer, double start_factor,
                                       double end_factor, int64_t total_iters);

// OneCycleLR's options past max_lr and total_steps (cosine annealing, two
// phases; momentum cycled inversely to the lr, as PyTorch's cycle_momentum).
typedef struct tsr_one_cycle_options {
  size_t struct_size;
  double pct_start;         // default 0.3
  double div_factor;        // default 25: initial lr = max_lr / div_factor
  double final_div_factor;  // default 1e4: final lr = initial lr / final_div_factor
  double max_lr;            // set from tsr_lr_one_cycle's argument
  int64_t total_steps;      // set from tsr_lr_one_cycle's argument
  // Added with momentum cycling: the momentum (SGD or RMSprop created with
  // momentum > 0) or Adam's beta1 goes from max_momentum down to
  // base_momentum while the lr rises, then back up. An optimizer without a
  // momentum (Adagrad, momentum 0) keeps it unchanged, where PyTorch turns
  // SGD's on or refuses Adagrad.
  uint32_t cycle_momentum;  // default 1 (PyTorch's); 0 leaves the momentum alone
  uint32_t reserved;
  double base_momentum;     // default 0.85, in [0, 1)
  double max_momentum;      // default 0.95, in [0, 1)
} tsr_one_cycle_options;
TSR_API void tsr_one_cycle_options_init(tsr_one_cycle_options *options);
// OneCycleLR over |total_steps| steps, the same |max_lr| for every group;
// sets the step-0 lr at creation; stepping past total_steps fails.
// |options| may be NULL for the defaults.
TSR_API tsr_lr_schedule *tsr_lr_one_cycle(tsr_optimizer *optimizer, double max_lr,
                                          int64_t total_steps,
                                          const tsr_one_cycle_options *options);
// The momentum a one-cycle schedule cycles: SGD's and RMSprop's momentum,
// Adam's beta1; NAN with an error for Adagrad or a NULL |optimizer|. Not
// thread-safe with a step of |optimizer|.
TSR_API double tsr_optimizer_momentum(const tsr_optimizer *optimizer);

// ReduceLROnPlateau's options.
typedef struct tsr_plateau_options {
  size_t struct_size;
  uint32_t mode;            // 0: min (default), 1: max
  uint32_t threshold_mode;  // 0: rel (default), 1: abs
  double factor;            // default 0.1
  int64_t patience;         // default 10
  double threshold;         // default 1e-4
  int64_t cooldown;         // default 0
  double min_lr;            // default 0, for every group
  double eps;               // default 1e-8
} tsr_plateau_options;
TSR_API void tsr_plateau_options_init(tsr_plateau_options *options);
// ReduceLROnPlateau; stepped with tsr_lr_schedule_step_metric. |options|
// may be NULL for the defaults.
TSR_API tsr_lr_schedule *tsr_lr_plateau(tsr_optimizer *optimizer,
                                        const tsr_plateau_options *options);

// Detaches |schedule| from its optimizer and frees it. NULL is ignored.
TSR_API void tsr_lr_schedule_destroy(tsr_lr_schedule *schedule);
// Advances one epoch and sets the optimizer's lrs (not for plateau).
TSR_API TSR_MUST_USE tsr_status tsr_lr_schedule_step(tsr_lr_schedule *schedule);
// Advances a plateau schedule one epoch with the epoch's |metric| (a
// validation loss), reducing the lrs after |patience| epochs without
// improvement.
TSR_API TSR_MUST_USE tsr_status tsr_lr_schedule_step_metric(tsr_lr_schedule *schedule,
                                                            double metric);
// The current epoch; setting it (to resume) also sets the lr (plateau: the
// counter only).
TSR_API int64_t tsr_lr_schedule_epoch(const tsr_lr_schedule *schedule);
TSR_API TSR_MUST_USE tsr_status tsr_lr_schedule_epoch_set(tsr_lr_schedule *schedule, int64_t epoch);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_OPTIM_H_
