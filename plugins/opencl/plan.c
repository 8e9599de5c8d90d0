// Plans: validation through ref, the op families' tables, and execution.
//
// Every signature goes through ref's plan builder first, so a request the
// catalogue forbids gets the same INVALID_ARGUMENT and message on every
// backend, and the families receive validated operands and ref's shape
// analysis. Execution checks every argument (counts, dtypes, sizes, strides,
// buffers, ranges, aliasing) before any OpenCL call.
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "ocl.h"
#include "ocl_table.h"
#include "tsr_cpu/cpu_kernels.h"  // struct tsr_plugin_plan and tsr_cpu_operand
#include "tessera/plugin_kit.h"

static const tsr_ocl_op_impl *impl_of(int32_t op) {
  if (op <= TSR_OP_INVALID || op >= TSR_OP_COUNT) return NULL;
  const tsr_ocl_op_impl *impl = tsr_ocl_elementwise_ops[op];
  if (impl == NULL) impl = tsr_ocl_reduce_ops[op];
  if (impl == NULL) impl = tsr_ocl_matmul_ops[op];
  return impl;
}

static int autotune_env(void) {
  const char *v = getenv("TSR_OPENCL_AUTOTUNE");
  if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0) return 0;
  if (strcmp(v, "1") == 0) return 1;
  static atomic_flag warned = ATOMIC_FLAG_INIT;
  if (!atomic_flag_test_and_set(&warned)) {
    tsr_ocl_log(TSR_LOG_WARNING, "TSR_OPENCL_AUTOTUNE=%.64s is not 1 or 0; using 0", v);
  }
  return 0;
}

// Validates |signature| with ref (device index rewritten to 0: ref has one
// device) and checks what this plugin needs beyond the catalogue. On TSR_OK,
// *out_ref is ref's plan (owned by the caller) and *out_impl the family.
static tsr_status signature_check(const char *what, const tsr_op_signature *signature,
                                  tsr_ocl_device **out_device, tsr_plugin_plan **out_ref,
                                  const tsr_ocl_op_impl **out_impl) {
  *out_ref = NULL;
  if (signature == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: signature is NULL", what);
  if (!TSR_ABI_COVERS(signature, tsr_op_signature, flags)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: signature struct_size %zu is too small", what,
                         signature->struct_size);
  }
  tsr_ocl_device *device = tsr_ocl_device_get(signature->device);
  if (device == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: device %d does not exist", what,
                         (int)signature->device);
  }
  tsr_op_signature as_ref = *signature;
  as_ref.struct_size = sizeof(as_ref) < signature->struct_size ? sizeof(as_ref)
                                                               : signature->struct_size;
  as_ref.device = 0;
  tsr_plugin_plan *ref = NULL;
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_ref_api()->plan_create(&as_ref, &ref));
  const char *op = tsr_op_name(signature->op);
  tsr_status status = TSR_OK;
  int32_t operands = ref->num_inputs + ref->num_outputs;
  for (int32_t i = 0; i < operands && status == TSR_OK; ++i) {
    const tsr_cpu_operand *o = &ref->operands[i];
    if (o->extent_bytes == 0) continue;  // empty or ignored: never addressed
    if (o->dtype == TSR_FLOAT16 || o->dtype == TSR_BFLOAT16) {
      status = tsr_ocl_error(TSR_UNSUPPORTED,
                             "opencl: %s: %s is %s; the OpenCL kernels take float32 and float64 "
                             "(and ints where the op allows)",
                             op, o->name, o->dtype == TSR_FLOAT16 ? "float16" : "bfloat16");
    } else if (o->dtype == TSR_FLOAT64 && !(device->caps & TSR_OCL_CAP_FP64)) {
      status = tsr_ocl_error(TSR_UNSUPPORTED, "opencl: %s: %s is float64 and %s lacks cl_khr_fp64",
                             op, o->name, device->name);
    } else if ((o->alignment | 1u) < o->elem_size) {
      status = tsr_ocl_error(TSR_UNSUPPORTED,
                             "opencl: %s: %s is only %u-byte aligned; kernels address whole "
                             "elements of %u bytes",
                             op, o->name, (unsigned)(o->alignment | 1u), (unsigned)o->elem_size);
    }
  }
  const tsr_ocl_op_impl *impl = impl_of(signature->op);
  if (status == TSR_OK && impl == NULL) {
    status = tsr_ocl_error(TSR_UNSUPPORTED, "opencl: %s has no OpenCL kernel", op);
  }
  if (status == TSR_OK && impl->supports != NULL) status = impl->supports(device, signature, ref);
  if (status != TSR_OK) {
    tsr_ocl_ref_api()->plan_destroy(ref);
    return status;
  }
  *out_device = device;
  *out_ref = ref;
  *out_impl = impl;
  return TSR_OK;
}

tsr_status tsr_ocl_op_supports(const tsr_op_signature *signature) {
  tsr_ocl_device *device = NULL;
  tsr_plugin_plan *ref = NULL;
  const tsr_ocl_op_impl *impl = NULL;
  TSR_OCL_RETURN_IF_ERROR(signature_check("op_supports", signature, &device, &ref, &impl));
  tsr_ocl_ref_api()->plan_destroy(ref);
  return TSR_OK;
}

tsr_status tsr_ocl_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan) {
  if (out_plan == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "plan_create: out_plan is NULL");
  *out_plan = NULL;
  tsr_ocl_device *device = NULL;
  tsr_plugin_plan *ref = NULL;
  const tsr_ocl_op_impl *impl = NULL;
  TSR_OCL_RETURN_IF_ERROR(signature_check("plan_create", signature, &device, &ref, &impl));
  tsr_ocl_plan *plan = calloc(1, sizeof(*plan));
  if (plan == NULL) {
    tsr_ocl_ref_api()->plan_destroy(ref);
    return tsr_ocl_error(TSR_OUT_OF_MEMORY, "plan_create: out of host memory");
  }
  plan->magic = TSR_OCL_PLAN_MAGIC;
  plan->op = signature->op;
  plan->device = device;
  plan->impl = impl;
  plan->ref = ref;
  if (signature->attrs != NULL) {
    size_t size = *(const size_t *)signature->attrs;
    if (size > sizeof(plan->attrs)) size = sizeof(plan->attrs);
    memcpy(&plan->attrs, signature->attrs, size);
    plan->has_attrs = 1;
  }
  plan->math_mode = signature->math_mode;
  plan->flags = signature->flags;
  plan->autotune = (signature->flags & TSR_PLAN_AUTOTUNE) != 0 || autotune_env();
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s", tsr_op_name(signature->op));
  tsr_status status = impl->init(plan, signature);
  if (status == TSR_OK && (signature->flags & TSR_PLAN_REQUIRE_DETERMINISM) &&
      !(plan->info_flags & TSR_PLAN_INFO_DETERMINISTIC)) {
    if (impl->fini != NULL) impl->fini(plan);
    status = tsr_ocl_error(TSR_UNSUPPORTED,
                           "opencl: %s: the chosen kernel (%s) is not bit-reproducible and the "
                           "plan requires determinism",
                           tsr_op_name(signature->op), plan->engine);
  }
  if (status != TSR_OK) {
    tsr_ocl_ref_api()->plan_destroy(ref);
    plan->magic = 0;
    free(plan);
    return status;
  }
  *out_plan = (tsr_plugin_plan *)plan;
  return TSR_OK;
}

static tsr_status plan_check(const char *what, const tsr_plugin_plan *handle,
                             const tsr_ocl_plan **out_plan) {
  const tsr_ocl_plan *plan = (const tsr_ocl_plan *)handle;
  if (plan == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: plan is NULL", what);
  if (plan->magic != TSR_OCL_PLAN_MAGIC) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: plan is not a live OpenCL plan", what);
  }
  *out_plan = plan;
  return TSR_OK;
}

tsr_status tsr_ocl_plan_info_get(const tsr_plugin_plan *handle, tsr_plan_info *out_info) {
  const tsr_ocl_plan *plan = NULL;
  TSR_OCL_RETURN_IF_ERROR(plan_check("plan_info_get", handle, &plan));
  const tsr_plan_info info = {
      .engine = plan->engine, .workspace_bytes = plan->workspace_bytes, .flags = plan->info_flags};
  return tsr_kit_plan_info_answer(tsr_ocl_host(), &info, out_info);
}

tsr_status tsr_ocl_plan_destroy(tsr_plugin_plan *handle) {
  const tsr_ocl_plan *checked = NULL;
  TSR_OCL_RETURN_IF_ERROR(plan_check("plan_destroy", handle, &checked));
  tsr_ocl_plan *plan = (tsr_ocl_plan *)handle;
  if (plan->impl->fini != NULL) plan->impl->fini(plan);
  tsr_ocl_ref_api()->plan_destroy(plan->ref);
  plan->magic = 0;
  free(plan);
  return TSR_OK;
}

// Says how operand |o| of |plan| departs from the plan.
static tsr_status operand_mismatch(const tsr_ocl_plan *plan, const tsr_cpu_operand *o,
                                   const char *detail) {
  return tsr_ocl_error(TSR_INVALID_ARGUMENT, "plan_execute: %s %s does not match the plan: %s",
                       tsr_op_name(plan->op), o->name, detail);
}

// Checks |desc| against operand |o| and resolves its cl_mem and element offset.
static tsr_status operand_resolve(const tsr_ocl_plan *plan, const tsr_cpu_operand *o,
                                  const tsr_tensor_desc *desc, cl_mem *out_mem,
                                  uint64_t *out_offset) {
  if (!TSR_ABI_COVERS(desc, tsr_tensor_desc, alias_group)) {
    return operand_mismatch(plan, o, "struct_size too small");
  }
  int64_t differ = (desc->dtype ^ o->dtype) | (desc->rank ^ o->rank);
  for (int32_t d = 0; d < o->rank; ++d) {
    differ |= (desc->sizes[d] ^ o->sizes[d]) | (desc->strides[d] ^ o->strides[d]);
  }
  if (differ != 0) return operand_mismatch(plan, o, "dtype, rank, sizes or strides differ");
  if ((desc->alignment | 1u) < o->alignment || desc->device != plan->device->index) {
    return operand_mismatch(plan, o, "less aligned, or another device");
  }
  *out_mem = NULL;
  *out_offset = 0;
  if (o->extent_bytes == 0) return TSR_OK;
  const tsr_ocl_buffer *b = (const tsr_ocl_buffer *)desc->buffer;
  if (b == NULL || b->magic != TSR_OCL_BUFFER_MAGIC || b->device != plan->device->index) {
    return operand_mismatch(plan, o, "buffer is NULL or not a live OpenCL buffer of the device");
  }
  if (desc->byte_offset % o->elem_size != 0) {
    return operand_mismatch(plan, o, "byte_offset is not a multiple of the dtype's size");
  }
  if (desc->byte_offset > b->bytes || o->extent_bytes > b->bytes - desc->byte_offset) {
    return operand_mismatch(plan, o, "byte_offset plus the view's extent is past the buffer's end");
  }
  *out_mem = b->mem;
  *out_offset = desc->byte_offset / o->elem_size;
  return TSR_OK;
}

tsr_status tsr_ocl_plan_execute(const tsr_plugin_plan *handle, const tsr_exec_args *args,
                                tsr_plugin_stream *stream) {
  const tsr_ocl_plan *plan = NULL;
  TSR_OCL_RETURN_IF_ERROR(plan_check("plan_execute", handle, &plan));
  const tsr_plugin_plan *ref = plan->ref;
  if (args == NULL || !TSR_ABI_COVERS(args, tsr_exec_args, workspace_bytes) ||
      args->num_inputs != ref->num_inputs || args->num_outputs != ref->num_outputs ||
      (ref->num_inputs > 0 && args->inputs == NULL) ||
      (ref->num_outputs > 0 && args->outputs == NULL)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "plan_execute: %s takes %d inputs and %d outputs (args %s)",
                         tsr_op_name(plan->op), (int)ref->num_inputs, (int)ref->num_outputs,
                         args == NULL ? "is NULL" : "differ, are too small or hold a NULL array");
  }
  tsr_ocl_stream *s = (tsr_ocl_stream *)stream;
  if (s != NULL && (s->magic != TSR_OCL_STREAM_MAGIC || s->device != plan->device->index)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "plan_execute: stream is not a live stream of device %d",
                         (int)plan->device->index);
  }
  tsr_ocl_exec exec;
  exec.device = plan->device;
  exec.stream = s;
  exec.queue = tsr_ocl_queue_of(s, plan->device);
  exec.num_inputs = ref->num_inputs;
  exec.num_outputs = ref->num_outputs;
  for (int32_t i = 0; i < ref->num_inputs; ++i) {
    TSR_OCL_RETURN_IF_ERROR(operand_resolve(plan, &ref->operands[i], &args->inputs[i],
                                            &exec.mem[i], &exec.offset[i]));
  }
  for (int32_t o = 0; o < ref->num_outputs; ++o) {
    int32_t k = ref->num_inputs + o;
    const tsr_cpu_operand *operand = &ref->operands[k];
    const tsr_tensor_desc *desc = &args->outputs[o];
    TSR_OCL_RETURN_IF_ERROR(operand_resolve(plan, operand, desc, &exec.mem[k], &exec.offset[k]));
    uint32_t mask = 0;
    if (desc->alias_group >= 0) {
      for (int32_t i = 0; i < ref->num_inputs; ++i) {
        if (args->inputs[i].alias_group != desc->alias_group) continue;
        mask |= 1u << i;
        if (args->inputs[i].buffer != desc->buffer ||
            args->inputs[i].byte_offset != desc->byte_offset) {
          return operand_mismatch(plan, operand,
                                  "it shares an alias group with an input it does not alias "
                                  "exactly");
        }
      }
    }
    if (mask != operand->alias_mask) {
      return operand_mismatch(plan, operand, "alias groups differ from the plan's");
    }
  }
  exec.workspace = NULL;
  exec.workspace_offset = 0;
  if (plan->workspace_bytes > 0) {
    const tsr_ocl_buffer *ws = (const tsr_ocl_buffer *)args->workspace;
    if (ws == NULL || ws->magic != TSR_OCL_BUFFER_MAGIC || ws->device != plan->device->index ||
        args->workspace_bytes < plan->workspace_bytes || args->workspace_offset > ws->bytes ||
        plan->workspace_bytes > ws->bytes - args->workspace_offset ||
        args->workspace_offset % plan->device->base_alignment != 0) {
      return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                           "plan_execute: %s needs a workspace of %llu bytes at an offset that "
                           "is a multiple of %u inside a live buffer of the device; got %llu "
                           "bytes at offset %llu",
                           tsr_op_name(plan->op), (unsigned long long)plan->workspace_bytes,
                           (unsigned)plan->device->base_alignment,
                           (unsigned long long)args->workspace_bytes,
                           (unsigned long long)args->workspace_offset);
    }
    exec.workspace = ws->mem;
    exec.workspace_offset = args->workspace_offset;
  }
  return plan->impl->execute(plan, &exec);
}
