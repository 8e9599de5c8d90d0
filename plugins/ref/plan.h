// ref's plans: what a plan holds, and the per-op builders that fill one.
//
// A plan is built once per signature and then only read: one plan may run on
// several threads at once. Everything an execution needs (loop functions,
// collapsed shapes, blocking, workspace size) is decided when it is built.
#ifndef TESSERA_PLUGINS_REF_PLAN_H_
#define TESSERA_PLUGINS_REF_PLAN_H_

#include <stdint.h>

#include "elementwise.h"
#include "matmul.h"
#include "reduce.h"
#include "data_ops.h"
#include "softmax.h"
#include "norm.h"
#include "cross_entropy.h"
#include "conv.h"
#include "pool.h"
#include "tessera/abi.h"
#include "tessera/ops.h"

// One operand of a signature, validated.
typedef struct tsr_ref_operand {
  tsr_dtype_t dtype;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
  uint32_t alignment;     // as declared, 0 read as 1
  uint32_t elem_size;
  int32_t alias_group;
  uint32_t alias_mask;    // outputs: bit i set when input i shares its alias group
  int64_t numel;
  uint64_t extent_bytes;  // first element to one past the last; 0 when empty
  const char *name;       // "x", "out": for messages; static storage
} tsr_ref_operand;

// Runs a plan whose operands' first elements are at ptrs[0..inputs+outputs)
// (inputs, then outputs) with |workspace| of the plan's workspace size,
// aligned to 64 bytes. No allocation, no locking, no formatting.
typedef tsr_status (*tsr_ref_plan_exec_fn)(const tsr_plugin_plan *plan, char *const *ptrs,
                                           char *workspace);

struct tsr_plugin_plan {
  int32_t op;
  int32_t num_inputs;
  int32_t num_outputs;
  uint32_t info_flags;          // TSR_PLAN_INFO_*
  const char *engine;           // static storage
  uint64_t workspace_bytes;     // as plan_info reports it, alignment slack included
  tsr_ref_plan_exec_fn execute;
  tsr_ref_operand operands[TSR_MAX_OPERANDS];  // inputs, then outputs
  union {
    tsr_ref_ew_plan ew;
    tsr_ref_reduce_plan reduce;
    tsr_ref_arg_reduce_plan arg_reduce;
    tsr_ref_matmul_plan matmul;
    tsr_ref_concat_plan concat;
    tsr_ref_pad_plan pad;
    tsr_ref_index_plan index;  // GATHER, SCATTER_ADD
    tsr_ref_rng_plan rng;
    tsr_ref_optim_plan optim;  // SGD_UPDATE, ADAM_UPDATE
    tsr_ref_softmax_plan softmax;
    tsr_ref_layer_norm_plan layer_norm;
    tsr_ref_batch_norm_plan batch_norm;
    tsr_ref_cross_entropy_plan cross_entropy;
    tsr_ref_conv_plan conv;
    tsr_ref_pool_plan pool;
  } u;
};

// Fills |plan| for |signature| (already checked for counts, and its operands
// validated into plan->operands) or returns why not: TSR_INVALID_ARGUMENT for
// a request the catalogue forbids, TSR_UNSUPPORTED for one ref does not do.
// The message names the op, the operand and the value. No allocation.
// Thread-safe.
typedef tsr_status (*tsr_ref_plan_init_fn)(const tsr_op_signature *signature,
                                           tsr_plugin_plan *plan);

tsr_status tsr_ref_fill_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_copy_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_cast_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_unary_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_unary_backward_plan_init(const tsr_op_signature *signature,
                                            tsr_plugin_plan *plan);
tsr_status tsr_ref_binary_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_compare_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_where_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_clamp_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_reduce_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_arg_reduce_plan_init(const tsr_op_signature *signature,
                                        tsr_plugin_plan *plan);
tsr_status tsr_ref_matmul_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_concat_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_pad_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_gather_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_scatter_add_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_rng_fill_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_sgd_update_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_adam_update_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_conv2d_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_conv2d_backward_data_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_conv2d_backward_filter_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_pool2d_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_pool2d_backward_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_softmax_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_softmax_backward_plan_init(const tsr_op_signature *signature,
                                              tsr_plugin_plan *plan);
tsr_status tsr_ref_layer_norm_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_layer_norm_backward_plan_init(const tsr_op_signature *signature,
                                                 tsr_plugin_plan *plan);
tsr_status tsr_ref_batch_norm_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_ref_batch_norm_backward_plan_init(const tsr_op_signature *signature,
                                                 tsr_plugin_plan *plan);
tsr_status tsr_ref_cross_entropy_plan_init(const tsr_op_signature *signature,
                                           tsr_plugin_plan *plan);
tsr_status tsr_ref_cross_entropy_backward_plan_init(const tsr_op_signature *signature,
                                                    tsr_plugin_plan *plan);

// Builds plan->u.ew over the plan's output and inputs (checked already) with
// |kernel| and sets plan->execute and plan->engine to run it. Leaves
// u.ew.params zero for the caller to fill. No allocation. Thread-safe.
void tsr_ref_ew_plan_from_operands(tsr_plugin_plan *plan, tsr_ref_ew_kernel kernel,
                                   tsr_ref_ew_cost cost);

// The table entries (abi.h documents them). Thread-safe as abi.h states.
tsr_status tsr_ref_op_supports(const tsr_op_signature *signature);
tsr_status tsr_ref_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan);
tsr_status tsr_ref_plan_info_get(const tsr_plugin_plan *plan, tsr_plan_info *out_info);
tsr_status tsr_ref_plan_execute(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                tsr_plugin_stream *stream);
tsr_status tsr_ref_plan_destroy(tsr_plugin_plan *plan);

#endif  // TESSERA_PLUGINS_REF_PLAN_H_
