// The per-op builders that fill a plan, and the table's plan entries. What a
// plan holds is in tsr_cpu/cpu_plan.h.
//
// A plan is built once per signature and then only read: one plan may run on
// several threads at once. Everything an execution needs (loop functions,
// collapsed shapes, blocking, workspace size) is decided when it is built.
#ifndef TESSERA_PLUGINS_CPU_PLAN_H_
#define TESSERA_PLUGINS_CPU_PLAN_H_

#include <stdint.h>

#include "conv.h"
#include "data_ops.h"
#include "elementwise.h"
#include "groups.h"
#include "matmul.h"
#include "norm.h"
#include "reduce.h"
#include "tessera/abi.h"
#include "tessera/ops.h"
#include "tsr_cpu/cpu_plan.h"

// Fills |plan| for |signature| (already checked for counts, and its operands
// validated into plan->operands) or returns why not: TSR_INVALID_ARGUMENT for
// a request the catalogue forbids, TSR_UNSUPPORTED for one the library does not do.
// The message names the op, the operand and the value. No allocation.
// Thread-safe.
typedef tsr_status (*tsr_cpu_plan_init_fn)(const tsr_op_signature *signature,
                                           tsr_plugin_plan *plan);

tsr_status tsr_cpu_fill_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_copy_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_cast_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_unary_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_unary_backward_plan_init(const tsr_op_signature *signature,
                                            tsr_plugin_plan *plan);
tsr_status tsr_cpu_binary_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_compare_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_where_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_clamp_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_reduce_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_arg_reduce_plan_init(const tsr_op_signature *signature,
                                        tsr_plugin_plan *plan);
tsr_status tsr_cpu_matmul_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_concat_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_pad_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_gather_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_scatter_add_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_rng_fill_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_sgd_update_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_adam_update_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_conv2d_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_conv2d_backward_data_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_conv2d_backward_filter_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_pool2d_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_pool2d_backward_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_softmax_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_softmax_backward_plan_init(const tsr_op_signature *signature,
                                              tsr_plugin_plan *plan);
tsr_status tsr_cpu_layer_norm_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_layer_norm_backward_plan_init(const tsr_op_signature *signature,
                                                 tsr_plugin_plan *plan);
tsr_status tsr_cpu_batch_norm_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan);
tsr_status tsr_cpu_batch_norm_backward_plan_init(const tsr_op_signature *signature,
                                                 tsr_plugin_plan *plan);
tsr_status tsr_cpu_cross_entropy_plan_init(const tsr_op_signature *signature,
                                           tsr_plugin_plan *plan);
tsr_status tsr_cpu_cross_entropy_backward_plan_init(const tsr_op_signature *signature,
                                                    tsr_plugin_plan *plan);

// Builds plan->u.ew over the plan's output and inputs (checked already) with
// |kernel| and sets plan->execute and plan->engine to run it. Leaves
// u.ew.params zero for the caller to fill. No allocation. Thread-safe.
void tsr_cpu_ew_plan_from_operands(tsr_plugin_plan *plan, tsr_cpu_ew_kernel kernel,
                                   tsr_cpu_ew_cost cost);

// The table entries (abi.h documents them). Thread-safe as abi.h states.
tsr_status tsr_cpu_op_supports(const tsr_op_signature *signature);
tsr_status tsr_cpu_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan);
tsr_status tsr_cpu_plan_info_get(const tsr_plugin_plan *plan, tsr_plan_info *out_info);
tsr_status tsr_cpu_plan_execute(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                tsr_plugin_stream *stream);
tsr_status tsr_cpu_plan_destroy(tsr_plugin_plan *plan);

#endif  // TESSERA_PLUGINS_CPU_PLAN_H_
