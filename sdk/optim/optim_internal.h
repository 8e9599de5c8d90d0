// The optimizer's layout, shared by optimizer.c (SGD, Adam, state access),
// composite.c (RMSprop, Adagrad) and clip_grad.c. Private to the SDK.
#ifndef TESSERA_SDK_OPTIM_INTERNAL_H_
#define TESSERA_SDK_OPTIM_INTERNAL_H_

#include <stdint.h>

#include "tessera/tessera.h"

enum { OPTIM_SGD = 0, OPTIM_ADAM = 1, OPTIM_RMSPROP = 2, OPTIM_ADAGRAD = 3 };
enum { OPTIM_MAX_STATES = 3 };

typedef struct optim_slot {
  tsr_tensor *param;                    // retained
  int32_t group;                        // index into tsr_optimizer.groups
  char *name;                           // owned copy
  char *state_names[OPTIM_MAX_STATES];  // "<name>.<state>", owned
  tsr_tensor *state[OPTIM_MAX_STATES];  // owned, NULL until created
} optim_slot;

// An empty tensor (numel 0) per device and dtype, passed as SGD_UPDATE's
// momentum_buf when momentum is 0.
typedef struct optim_empty {
  tsr_device *device;
  tsr_dtype_t dtype;
  tsr_tensor *tensor;
} optim_empty;

// A parameter group: its own lr and weight decay (torch.optim param_groups).
typedef struct optim_group {
  double lr;
  double weight_decay;
  double base_lr;  // the attached schedule's base (PyTorch's initial_lr)
} optim_group;

// The state of the schedule attached to an optimizer, kept in the optimizer
// so that a checkpoint saves and restores it whichever was created first.
typedef struct optim_schedule_state {
  int32_t attached;  // a live schedule of |kind| uses it
  int32_t loaded;    // restored from a checkpoint and not yet claimed
  int32_t kind;      // SCHEDULE_* of schedule.c
  int64_t epoch;
  double best;  // plateau
  int64_t num_bad_epochs;
  int64_t cooldown_counter;
  tsr_lr_schedule *schedule;  // the attached schedule, NULL when none
} optim_schedule_state;

struct tsr_optimizer {
  int32_t kind;
  int32_t count;
  int32_t num_state_kinds;  // states per parameter: 0 or 1 (SGD), 2 (Adam), 1-3 (RMSprop), 1
  const char *state_kinds[OPTIM_MAX_STATES];
  tsr_sgd_options sgd;
  tsr_adam_options adam;
  tsr_rmsprop_options rmsprop;
  tsr_adagrad_options adagrad;
  optim_group *groups;  // groups[0]: the parameters given at creation
  int32_t num_groups;
  optim_schedule_state schedule;
  int64_t steps;
  optim_slot *slots;
  optim_empty *empties;
  int32_t num_empties;
};

// Creates state |k| of |slot| filled with |value|; the optimizer owns it.
tsr_status tsr_optim_state_create(optim_slot *slot, int32_t k, double value);
// One RMSprop or Adagrad step of |s| from |grad|, as a composition of
// elementwise ops; |step| counts from 1.
tsr_status tsr_optim_composite_update(tsr_optimizer *o, optim_slot *s, tsr_tensor *grad,
                                      int64_t step);

// Checkpoint metadata beyond "optim.step" and "optim.lr": every group's lr
// (with more than one group) and the schedule's state (when one is attached
// or loaded), as text.
#define TSR_OPTIM_GROUP_LRS_KEY "optim.group_lrs"
#define TSR_OPTIM_SCHEDULE_KEY "optim.schedule"

// The texts for those keys (NULL when not needed); the caller frees them.
tsr_status tsr_optim_meta_format(const tsr_optimizer *o, char **out_group_lrs,
                                 char **out_schedule);

// Parsed metadata, checked against an optimizer, ready to apply.
typedef struct optim_meta {
  double *group_lrs;  // num_groups of them, or NULL; owned
  int32_t has_schedule;
  optim_schedule_state schedule;
  double *bases;  // num_groups schedule bases when has_schedule; owned
} optim_meta;

// Parses |group_lrs| and |schedule| (either may be NULL) for |o| into
// |out| without changing |o|; tsr_optim_meta_free frees |out| either way.
tsr_status tsr_optim_meta_parse(const tsr_optimizer *o, const char *group_lrs,
                                const char *schedule, optim_meta *out);
void tsr_optim_meta_apply(tsr_optimizer *o, const optim_meta *meta);
// Sets what the attached schedule derives from its epoch besides the lr (a
// one-cycle schedule's momentum), after a checkpoint set the epoch.
void tsr_optim_schedule_sync(tsr_optimizer *optimizer);
void tsr_optim_meta_free(optim_meta *meta);

#endif  // TESSERA_SDK_OPTIM_INTERNAL_H_
