// Plan creation, description, execution and destruction: the checks every op
// shares, then the op's own builder.
#include "plan.h"

#include <string.h>

#include "buffer.h"
#include "host.h"
#include "signature.h"
#include "stream.h"
#include "tessera/plugin_kit.h"
#include "tsr_cpu/cpu_kernels.h"

static const tsr_cpu_plan_init_fn k_plan_inits[TSR_OP_COUNT] = {
    [TSR_OP_FILL] = tsr_cpu_fill_plan_init,
    [TSR_OP_COPY] = tsr_cpu_copy_plan_init,
    [TSR_OP_CAST] = tsr_cpu_cast_plan_init,
    [TSR_OP_UNARY] = tsr_cpu_unary_plan_init,
    [TSR_OP_UNARY_BACKWARD] = tsr_cpu_unary_backward_plan_init,
    [TSR_OP_BINARY] = tsr_cpu_binary_plan_init,
    [TSR_OP_COMPARE] = tsr_cpu_compare_plan_init,
    [TSR_OP_WHERE] = tsr_cpu_where_plan_init,
    [TSR_OP_CLAMP] = tsr_cpu_clamp_plan_init,
    [TSR_OP_REDUCE] = tsr_cpu_reduce_plan_init,
    [TSR_OP_ARG_REDUCE] = tsr_cpu_arg_reduce_plan_init,
    [TSR_OP_MATMUL] = tsr_cpu_matmul_plan_init,
    [TSR_OP_CONV2D] = tsr_cpu_conv2d_plan_init,
    [TSR_OP_CONV2D_BACKWARD_DATA] = tsr_cpu_conv2d_backward_data_plan_init,
    [TSR_OP_CONV2D_BACKWARD_FILTER] = tsr_cpu_conv2d_backward_filter_plan_init,
    [TSR_OP_POOL2D] = tsr_cpu_pool2d_plan_init,
    [TSR_OP_POOL2D_BACKWARD] = tsr_cpu_pool2d_backward_plan_init,
    [TSR_OP_CONCAT] = tsr_cpu_concat_plan_init,
    [TSR_OP_PAD] = tsr_cpu_pad_plan_init,
    [TSR_OP_GATHER] = tsr_cpu_gather_plan_init,
    [TSR_OP_SCATTER_ADD] = tsr_cpu_scatter_add_plan_init,
    [TSR_OP_RNG_FILL] = tsr_cpu_rng_fill_plan_init,
    [TSR_OP_SGD_UPDATE] = tsr_cpu_sgd_update_plan_init,
    [TSR_OP_ADAM_UPDATE] = tsr_cpu_adam_update_plan_init,
    [TSR_OP_SOFTMAX] = tsr_cpu_softmax_plan_init,
    [TSR_OP_SOFTMAX_BACKWARD] = tsr_cpu_softmax_backward_plan_init,
    [TSR_OP_LAYER_NORM] = tsr_cpu_layer_norm_plan_init,
    [TSR_OP_LAYER_NORM_BACKWARD] = tsr_cpu_layer_norm_backward_plan_init,
    [TSR_OP_BATCH_NORM] = tsr_cpu_batch_norm_plan_init,
    [TSR_OP_BATCH_NORM_BACKWARD] = tsr_cpu_batch_norm_backward_plan_init,
    [TSR_OP_CROSS_ENTROPY] = tsr_cpu_cross_entropy_plan_init,
    [TSR_OP_CROSS_ENTROPY_BACKWARD] = tsr_cpu_cross_entropy_backward_plan_init,
};

// Checks what every signature must satisfy, then runs the op's builder.
static tsr_status tsr_cpu_plan_build(const char *what, const tsr_op_signature *signature,
                                     tsr_plugin_plan *plan) {
  if (signature == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: signature is NULL", what);
  if (!TSR_ABI_COVERS(signature, tsr_op_signature, flags)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: signature struct_size %zu is too small",
                             what, signature->struct_size);
  }
  const char *op = tsr_op_name(signature->op);
  if (op == NULL || signature->op == TSR_OP_INVALID) {
    // An id past the end may come from a newer catalogue (docs/abi.md 2.4).
    return tsr_cpu_error_set(signature->op >= TSR_OP_COUNT ? TSR_UNSUPPORTED : TSR_INVALID_ARGUMENT,
                             "%s: op %d is not in ref's catalogue", what, (int)signature->op);
  }
  if (signature->device != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: device %d does not exist", op,
                             (int)signature->device);
  }
  if (signature->num_inputs < 0 || signature->num_outputs < 0 ||
      signature->num_inputs + signature->num_outputs > TSR_MAX_OPERANDS) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: %d inputs and %d outputs (at most %d operands in all)", op,
                             (int)signature->num_inputs, (int)signature->num_outputs,
                             TSR_MAX_OPERANDS);
  }
  if ((signature->num_inputs > 0 && signature->inputs == NULL) ||
      (signature->num_outputs > 0 && signature->outputs == NULL)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", op,
                             signature->inputs == NULL ? "inputs" : "outputs");
  }
  if (signature->math_mode < TSR_MATH_STRICT || signature->math_mode > TSR_MATH_ALLOW_REDUCED) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: math_mode %d is unknown", op,
                             (int)signature->math_mode);
  }
  uint32_t known_flags = TSR_PLAN_REQUIRE_DETERMINISM | TSR_PLAN_AUTOTUNE;
  if ((signature->flags & ~known_flags) != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: flags 0x%x hold unknown bits", op,
                             (unsigned)signature->flags);
  }
  if (k_plan_inits[signature->op] == NULL) {
    return tsr_cpu_error_set(TSR_UNSUPPORTED, "ref: %s is not implemented yet", op);
  }
  memset(plan, 0, offsetof(tsr_plugin_plan, u));
  // Every ref kernel is bit-reproducible: fixed chunking, no atomics, the same
  // summation order whatever the thread count. So REQUIRE_DETERMINISM always
  // holds, and a strict-fp32 plan satisfies every math mode.
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return k_plan_inits[signature->op](signature, plan);
}

tsr_status tsr_cpu_op_supports(const tsr_op_signature *signature) {
  tsr_plugin_plan plan;
  return tsr_cpu_plan_build("op_supports", signature, &plan);
}

tsr_status tsr_cpu_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan) {
  if (out_plan == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "plan_create: out_plan is NULL");
  *out_plan = NULL;
  const tsr_host_api *host = tsr_cpu_host_get();
  tsr_plugin_plan *plan = host->mem_alloc(host->ctx, sizeof(*plan), 64);
  if (plan == NULL) {
    return tsr_cpu_error_set(TSR_OUT_OF_MEMORY, "plan_create: no memory for a %zu-byte plan",
                             sizeof(*plan));
  }
  tsr_status status = tsr_cpu_plan_build("plan_create", signature, plan);
  if (status != TSR_OK) {
    host->mem_free(host->ctx, plan);
    return status;
  }
  *out_plan = plan;
  return TSR_OK;
}

tsr_status tsr_cpu_plan_info_get(const tsr_plugin_plan *plan, tsr_plan_info *out_info) {
  if (plan == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "plan_info_get: plan is NULL");
  const tsr_plan_info info = {
      .engine = plan->engine, .workspace_bytes = plan->workspace_bytes, .flags = plan->info_flags};
  return tsr_kit_plan_info_answer(tsr_cpu_host_get(), &info, out_info);
}

tsr_status tsr_cpu_plan_destroy(tsr_plugin_plan *plan) {
  if (plan == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "plan_destroy: plan is NULL");
  const tsr_host_api *host = tsr_cpu_host_get();
  host->mem_free(host->ctx, plan);
  return TSR_OK;
}

// Error paths of plan_execute live out of line, so the success path carries
// none of their formatting.
#if defined(__GNUC__)
#define TSR_CPU_COLD __attribute__((cold, noinline))
#else
#define TSR_CPU_COLD
#endif

// Says how an operand departs from the plan's.
static TSR_CPU_COLD tsr_status tsr_cpu_operand_mismatch(const tsr_plugin_plan *plan,
                                                       const tsr_cpu_operand *operand,
                                                       const char *detail) {
  return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "plan_execute: %s %s does not match the plan: %s",
                           tsr_op_name(plan->op), operand->name, detail);
}

// Says which of the buffer checks |desc| failed.
static TSR_CPU_COLD tsr_status tsr_cpu_buffer_mismatch(const tsr_plugin_plan *plan,
                                                      const tsr_cpu_operand *operand,
                                                      const tsr_tensor_desc *desc) {
  const tsr_plugin_buffer *buffer = desc->buffer;
  if (buffer == NULL || buffer->state != TSR_CPU_BUFFER_LIVE) {
    return tsr_cpu_operand_mismatch(plan, operand, "buffer is NULL or not a live ref buffer");
  }
  if ((((uintptr_t)buffer->data + desc->byte_offset) & (operand->elem_size - 1)) != 0) {
    return tsr_cpu_operand_mismatch(plan, operand,
                                    "byte_offset is not a multiple of the dtype's size");
  }
  return tsr_cpu_operand_mismatch(plan, operand,
                                  "byte_offset plus the view's extent is past the buffer's end");
}

// Checks |desc| against the plan's |operand| and resolves its first element.
// Differences are OR-ed together so the success path takes few branches.
static inline tsr_status tsr_cpu_operand_resolve(const tsr_plugin_plan *plan,
                                                 const tsr_cpu_operand *operand,
                                                 const tsr_tensor_desc *desc, char **out_ptr) {
  if (!TSR_ABI_COVERS(desc, tsr_tensor_desc, alias_group)) {
    return tsr_cpu_operand_mismatch(plan, operand, "struct_size too small");
  }
  // An inline loop, not memcmp: for rank 1-4 the call alone would cost
  // more than the whole comparison.
  int64_t differ = (desc->dtype ^ operand->dtype) | (desc->rank ^ operand->rank);
  for (int32_t d = 0; d < operand->rank; ++d) {
    differ |= (desc->sizes[d] ^ operand->sizes[d]) | (desc->strides[d] ^ operand->strides[d]);
  }
  if (differ != 0) {
    return tsr_cpu_operand_mismatch(plan, operand, "dtype, rank, sizes or strides differ");
  }
  // A declared alignment of 0 reads as 1, which the |1 gives.
  if ((desc->alignment | 1u) < operand->alignment || desc->device != 0) {
    return tsr_cpu_operand_mismatch(plan, operand, "less aligned, or another device");
  }
  const tsr_plugin_buffer *buffer = desc->buffer;
  if (operand->extent_bytes == 0) {
    *out_ptr = buffer != NULL ? (char *)buffer->data : NULL;
    return TSR_OK;
  }
  if (buffer == NULL || buffer->state != TSR_CPU_BUFFER_LIVE ||
      desc->byte_offset > buffer->bytes ||
      operand->extent_bytes > buffer->bytes - desc->byte_offset ||
      (((uintptr_t)buffer->data + desc->byte_offset) & (operand->elem_size - 1)) != 0) {
    return tsr_cpu_buffer_mismatch(plan, operand, desc);
  }
  *out_ptr = (char *)buffer->data + desc->byte_offset;
  return TSR_OK;
}

static TSR_CPU_COLD tsr_status tsr_cpu_exec_args_error(const tsr_plugin_plan *plan,
                                                      const tsr_exec_args *args) {
  if (plan == NULL || args == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "plan_execute: %s is NULL",
                             plan == NULL ? "plan" : "args");
  }
  if (!TSR_ABI_COVERS(args, tsr_exec_args, workspace_bytes)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "plan_execute: args struct_size %zu is too small",
                             args->struct_size);
  }
  return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                           "plan_execute: %s takes %d inputs and %d outputs, got %d and %d "
                           "(or a NULL array)",
                           tsr_op_name(plan->op), (int)plan->num_inputs, (int)plan->num_outputs,
                           (int)args->num_inputs, (int)args->num_outputs);
}

static TSR_CPU_COLD tsr_status tsr_cpu_workspace_error(const tsr_plugin_plan *plan,
                                                      const tsr_exec_args *args,
                                                      uint64_t workspace_bytes) {
  return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                           "plan_execute: %s needs a workspace of %llu bytes inside a live ref "
                           "buffer; got %llu bytes at offset %llu",
                           tsr_op_name(plan->op), (unsigned long long)workspace_bytes,
                           (unsigned long long)args->workspace_bytes,
                           (unsigned long long)args->workspace_offset);
}

#if defined(__GNUC__)
#define TSR_CPU_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TSR_CPU_ALWAYS_INLINE inline
#endif

// Checks |args| and |stream| against |plan| and resolves every operand's
// first element into |ptrs| and the workspace into |out_workspace|: a few
// compares per operand, no calls, no formatting unless something is wrong.
// Inlined into both plan_execute and tsr_cpu_exec_args_check (tsr_cpu/cpu_kernels.h),
// so the two run the same checks and plan_execute pays no call.
static TSR_CPU_ALWAYS_INLINE tsr_status tsr_cpu_exec_args_resolve(
    const tsr_plugin_plan *plan, const tsr_exec_args *args, tsr_plugin_stream *stream,
    uint64_t workspace_bytes, char **ptrs, char **out_workspace) {
  if (plan == NULL || args == NULL || !TSR_ABI_COVERS(args, tsr_exec_args, workspace_bytes) ||
      args->num_inputs != plan->num_inputs || args->num_outputs != plan->num_outputs ||
      (plan->num_inputs > 0 && args->inputs == NULL) ||
      (plan->num_outputs > 0 && args->outputs == NULL)) {
    return tsr_cpu_exec_args_error(plan, args);
  }
  tsr_status status = tsr_cpu_stream_check("plan_execute", stream);
  if (status != TSR_OK) return status;
  for (int32_t i = 0; i < plan->num_inputs; ++i) {
    status = tsr_cpu_operand_resolve(plan, &plan->operands[i], &args->inputs[i], &ptrs[i]);
    if (status != TSR_OK) return status;
  }
  for (int32_t o = 0; o < plan->num_outputs; ++o) {
    const tsr_cpu_operand *operand = &plan->operands[plan->num_inputs + o];
    const tsr_tensor_desc *desc = &args->outputs[o];
    status = tsr_cpu_operand_resolve(plan, operand, desc, &ptrs[plan->num_inputs + o]);
    if (status != TSR_OK) return status;
    uint32_t mask = 0;
    if (desc->alias_group >= 0) {
      for (int32_t i = 0; i < plan->num_inputs; ++i) {
        if (args->inputs[i].alias_group != desc->alias_group) continue;
        mask |= 1u << i;
        if (args->inputs[i].buffer != desc->buffer ||
            args->inputs[i].byte_offset != desc->byte_offset) {
          return tsr_cpu_operand_mismatch(plan, operand,
                                          "it shares an alias group with an input it does not "
                                          "alias exactly");
        }
      }
    }
    if (mask != operand->alias_mask) {
      return tsr_cpu_operand_mismatch(plan, operand, "alias groups differ from the plan's");
    }
  }
  char *workspace = NULL;
  if (workspace_bytes > 0) {
    const tsr_plugin_buffer *ws = args->workspace;
    if (ws == NULL || ws->state != TSR_CPU_BUFFER_LIVE ||
        args->workspace_bytes < workspace_bytes || args->workspace_offset > ws->bytes ||
        workspace_bytes > ws->bytes - args->workspace_offset) {
      return tsr_cpu_workspace_error(plan, args, workspace_bytes);
    }
    // workspace_bytes includes the slack to round the start up to 64 bytes.
    uintptr_t start = (uintptr_t)ws->data + args->workspace_offset;
    workspace = (char *)((start + 63) & ~(uintptr_t)63);
  }
  *out_workspace = workspace;
  return TSR_OK;
}

tsr_status tsr_cpu_plan_execute(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                tsr_plugin_stream *stream) {
  char *ptrs[TSR_MAX_OPERANDS];
  char *workspace = NULL;
  const uint64_t workspace_bytes = plan != NULL ? plan->workspace_bytes : 0;
  tsr_status status =
      tsr_cpu_exec_args_resolve(plan, args, stream, workspace_bytes, ptrs, &workspace);
  if (status != TSR_OK) return status;
  return plan->execute(plan, ptrs, workspace);
}

tsr_status tsr_cpu_exec_args_resolve_for(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                         tsr_plugin_stream *stream, uint64_t workspace_bytes,
                                         char **out_ptrs, char **out_workspace) {
  return tsr_cpu_exec_args_resolve(plan, args, stream, workspace_bytes, out_ptrs, out_workspace);
}

tsr_status tsr_cpu_exec_args_check(const tsr_plugin_plan *plan, const tsr_exec_args *args) {
  char *ptrs[TSR_MAX_OPERANDS];
  char *workspace = NULL;
  const uint64_t workspace_bytes = plan != NULL ? plan->workspace_bytes : 0;
  return tsr_cpu_exec_args_resolve(plan, args, NULL, workspace_bytes, ptrs, &workspace);
}

// Runs an elementwise plan; the engine takes the plan's operand order.
static tsr_status tsr_cpu_ew_plan_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                          char *workspace) {
  (void)workspace;
  return tsr_cpu_ew_execute(&plan->u.ew, ptrs);
}

void tsr_cpu_ew_plan_from_operands(tsr_plugin_plan *plan, tsr_cpu_ew_kernel kernel,
                                   tsr_cpu_ew_cost cost) {
  int64_t elem_sizes[TSR_CPU_EW_MAX_OPERANDS];
  const int64_t *sizes[TSR_CPU_EW_MAX_OPERANDS];
  const int64_t *strides[TSR_CPU_EW_MAX_OPERANDS];
  const int32_t n = plan->num_inputs + 1;
  for (int32_t k = 0; k < n; ++k) {
    const tsr_cpu_operand *operand = &plan->operands[k];
    elem_sizes[k] = operand->elem_size;
    sizes[k] = operand->sizes;
    strides[k] = operand->strides;
  }
  tsr_cpu_ew_plan_init(&plan->u.ew, n, elem_sizes, plan->operands[n - 1].rank, sizes, strides,
                       kernel, cost);
  plan->execute = tsr_cpu_ew_plan_execute;
  plan->engine = "ref:elementwise";
}
