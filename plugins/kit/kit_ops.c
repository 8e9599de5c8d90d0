// Declared ops: the catalogue's rules, op_supports, and plans that call the
// plugin's kernels with host addresses.
#include <string.h>

#include "kit_internal.h"

static const tsr_kit_op *g_ops;
static int32_t g_op_count;

// The plan: a copy of the signature (descriptors and attributes), so that
// nothing points into the caller's memory once plan_create returns.
struct tsr_plugin_plan {
  const tsr_kit_op *decl;
  tsr_op_signature signature;
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  _Alignas(8) unsigned char attrs[TSR_KIT_ATTRS_BYTES];
};

// --- the catalogue's rules ---------------------------------------------------------

// Operand counts: [min_inputs, max_inputs] inputs and exactly |outputs|.
typedef struct arity {
  int8_t min_inputs, max_inputs, outputs;
} arity;

static arity arity_of(tsr_op_id_t op) {
  switch (op) {
    case TSR_OP_FILL: return (arity){0, 0, 1};
    case TSR_OP_COPY:
    case TSR_OP_CAST:
    case TSR_OP_UNARY:
    case TSR_OP_CLAMP:
    case TSR_OP_REDUCE:
    case TSR_OP_ARG_REDUCE: return (arity){1, 1, 1};
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE: return (arity){2, 2, 1};
    case TSR_OP_WHERE: return (arity){3, 3, 1};
    case TSR_OP_MATMUL: return (arity){2, 3, 1};
    default: return (arity){0, TSR_MAX_OPERANDS, 0};  // checked by the plugin
  }
}

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

static tsr_status desc_check(const tsr_op_signature *sig, const tsr_tensor_desc *d,
                             const char *role, int32_t index) {
  const char *op = tsr_op_name(sig->op);
  if (d->dtype < 0)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: %s %d has dtype %d", op, role, index, d->dtype);
  if (d->dtype >= TSR_DTYPE_COUNT) {
    return tsr_kit_error(TSR_UNSUPPORTED, "%s: %s %d has dtype %d, unknown to this plugin", op,
                         role, index, d->dtype);
  }
  if (d->rank < 0 || d->rank > TSR_MAX_RANK) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: %s %d has rank %d (0 to %d)", op, role, index,
                         d->rank, TSR_MAX_RANK);
  }
  if (!TSR_ABI_COVERS(d, tsr_tensor_desc, alias_group))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: %s %d struct_size is too small", op, role, index);
  uint32_t alignment = d->alignment == 0 ? 1 : d->alignment;
  if ((alignment & (alignment - 1)) != 0 || alignment > TSR_MAX_ALIGNMENT) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: %s %d alignment %u is not a power of two up to %d",
                         op, role, index, d->alignment, TSR_MAX_ALIGNMENT);
  }
  for (int32_t k = 0; k < d->rank; ++k) {
    if (d->sizes[k] < 0 || d->strides[k] < 0) {
      return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: %s %d has sizes[%d] = %lld, strides[%d] = %lld",
                           op, role, index, k, (long long)d->sizes[k], k, (long long)d->strides[k]);
    }
  }
  return TSR_OK;
}

// The ops docs/abi.md 10 marks *attrs required*; for the others NULL means
// the defaults.
static int attrs_required(tsr_op_id_t op) {
  switch (op) {
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE:
    case TSR_OP_REDUCE:
    case TSR_OP_ARG_REDUCE:
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
    case TSR_OP_RNG_FILL:
    case TSR_OP_ADAM_UPDATE:
      return 1;
    default:
      return 0;
  }
}

// |in| broadcasts to |out| (same rank; each size equal or 1), or, with
// |exact|, has out's sizes.
static tsr_status shape_check(const tsr_op_signature *sig, int32_t index, int exact) {
  const tsr_tensor_desc *in = &sig->inputs[index], *out = &sig->outputs[0];
  const char *op = tsr_op_name(sig->op);
  if (in->rank != out->rank) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: input %d has rank %d, the output %d", op,
                         index, in->rank, out->rank);
  }
  for (int32_t k = 0; k < out->rank; ++k) {
    if (in->sizes[k] != out->sizes[k] && (exact || in->sizes[k] != 1)) {
      return tsr_kit_error(TSR_INVALID_ARGUMENT,
                           "%s: input %d sizes[%d] is %lld, the output's %lld%s", op, index, k,
                           (long long)in->sizes[k], (long long)out->sizes[k],
                           exact ? "" : " (broadcast needs equal or 1)");
    }
  }
  return TSR_OK;
}

static tsr_status same_dtype_check(const tsr_op_signature *sig, int32_t first, int32_t count,
                                   int with_output) {
  tsr_dtype_t dtype = with_output ? sig->outputs[0].dtype : sig->inputs[first].dtype;
  for (int32_t i = first; i < first + count; ++i) {
    if (sig->inputs[i].dtype != dtype) {
      return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: input %d is %s, expected %s",
                           tsr_op_name(sig->op), i, tsr_kit_dtype_name(sig->inputs[i].dtype),
                           tsr_kit_dtype_name(dtype));
    }
  }
  return TSR_OK;
}

static tsr_status matmul_check(const tsr_op_signature *sig) {
  const tsr_tensor_desc *a = &sig->inputs[0], *b = &sig->inputs[1], *out = &sig->outputs[0];
  int32_t r = out->rank;
  if (!is_float(out->dtype))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "matmul: %s is not a float dtype",
                         tsr_kit_dtype_name(out->dtype));
  if (r < 2 || a->rank != r || b->rank != r) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "matmul: ranks %d, %d -> %d (equal, at least 2)",
                         a->rank, b->rank, r);
  }
  if (a->sizes[r - 1] != b->sizes[r - 2] || a->sizes[r - 2] != out->sizes[r - 2] ||
      b->sizes[r - 1] != out->sizes[r - 1]) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "matmul: [%lld x %lld] @ [%lld x %lld] -> [%lld x %lld]",
                         (long long)a->sizes[r - 2], (long long)a->sizes[r - 1],
                         (long long)b->sizes[r - 2], (long long)b->sizes[r - 1],
                         (long long)out->sizes[r - 2], (long long)out->sizes[r - 1]);
  }
  for (int32_t k = 0; k < r - 2; ++k) {
    int64_t n = out->sizes[k];
    if ((a->sizes[k] != n && a->sizes[k] != 1) || (b->sizes[k] != n && b->sizes[k] != 1))
      return tsr_kit_error(TSR_INVALID_ARGUMENT, "matmul: batch dimension %d does not broadcast", k);
  }
  int bias = KIT_ATTR(tsr_matmul_attrs, sig->attrs, has_bias, 0) != 0;
  if (bias != (sig->num_inputs == 3)) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "matmul: has_bias is %d with %d inputs", bias,
                         sig->num_inputs);
  }
  return bias ? shape_check(sig, 2, 0) : TSR_OK;
}

static tsr_status reduce_check(const tsr_op_signature *sig) {
  const tsr_tensor_desc *x = &sig->inputs[0], *out = &sig->outputs[0];
  if (!TSR_ABI_COVERS((const tsr_reduce_attrs *)sig->attrs, tsr_reduce_attrs, axes_mask))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "reduce: attrs end before axes_mask (no default)");
  int64_t mask = KIT_ATTR(tsr_reduce_attrs, sig->attrs, axes_mask, 0);
  if (x->rank != out->rank || (x->rank < 32 && (mask >> x->rank) != 0)) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "reduce: rank %d -> %d with axes_mask 0x%llx",
                         x->rank, out->rank, (unsigned long long)mask);
  }
  for (int32_t k = 0; k < x->rank; ++k) {
    int64_t want = (mask >> k) & 1 ? 1 : x->sizes[k];
    if (out->sizes[k] != want) {
      return tsr_kit_error(TSR_INVALID_ARGUMENT, "reduce: output sizes[%d] is %lld, expected %lld",
                           k, (long long)out->sizes[k], (long long)want);
    }
  }
  return TSR_OK;
}

tsr_status tsr_kit_signature_check(const tsr_op_signature *sig) {
  if (sig == NULL || sig->struct_size < offsetof(tsr_op_signature, attrs) + sizeof(void *))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "signature is NULL or too short");
  if (sig->op <= TSR_OP_INVALID)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "op %d is not a catalogue op", sig->op);
  if (sig->op >= TSR_OP_COUNT)
    return tsr_kit_error(TSR_UNSUPPORTED, "op %d is unknown to this plugin", sig->op);
  const char *op = tsr_op_name(sig->op);
  arity a = arity_of(sig->op);
  if (sig->num_inputs < a.min_inputs || sig->num_inputs > a.max_inputs || sig->num_outputs < 1 ||
      (a.outputs > 0 && sig->num_outputs != a.outputs) ||
      sig->num_inputs + sig->num_outputs > TSR_MAX_OPERANDS ||
      (sig->num_inputs > 0 && sig->inputs == NULL) || sig->outputs == NULL) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: %d inputs and %d outputs", op, sig->num_inputs,
                         sig->num_outputs);
  }
  tsr_status status = TSR_OK;
  for (int32_t i = 0; status == TSR_OK && i < sig->num_inputs; ++i)
    status = desc_check(sig, &sig->inputs[i], "input", i);
  for (int32_t i = 0; status == TSR_OK && i < sig->num_outputs; ++i)
    status = desc_check(sig, &sig->outputs[i], "output", i);
  if (status != TSR_OK)
    return status;
  if (sig->attrs == NULL && attrs_required(sig->op))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: attrs is NULL", op);
  if (sig->attrs != NULL && *(const size_t *)sig->attrs < sizeof(size_t))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "%s: attrs.struct_size is too small", op);
  int unknown = 0;
  tsr_kit_selectors_of(sig, &unknown);
  if (unknown)
    return tsr_kit_error(TSR_UNSUPPORTED, "%s: a selector value unknown to this plugin", op);
  switch (sig->op) {
    case TSR_OP_UNARY:
    case TSR_OP_CLAMP:
    case TSR_OP_CAST:
      status = shape_check(sig, 0, 1);
      if (status == TSR_OK && sig->op != TSR_OP_CAST) status = same_dtype_check(sig, 0, 1, 1);
      return status;
    case TSR_OP_COPY:
      status = shape_check(sig, 0, 0);
      return status == TSR_OK ? same_dtype_check(sig, 0, 1, 1) : status;
    case TSR_OP_UNARY_BACKWARD:
      status = shape_check(sig, 0, 1);
      if (status == TSR_OK) status = shape_check(sig, 1, 1);
      if (status == TSR_OK && !is_float(sig->outputs[0].dtype))
        return tsr_kit_error(TSR_INVALID_ARGUMENT, "unary_backward: float only");
      return status == TSR_OK ? same_dtype_check(sig, 0, 2, 1) : status;
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE:
      status = shape_check(sig, 0, 0);
      if (status == TSR_OK) status = shape_check(sig, 1, 0);
      if (status == TSR_OK) status = same_dtype_check(sig, 0, 2, sig->op == TSR_OP_BINARY);
      if (status == TSR_OK && sig->op == TSR_OP_COMPARE && sig->outputs[0].dtype != TSR_BOOL)
        return tsr_kit_error(TSR_INVALID_ARGUMENT, "compare: the output is not bool");
      return status;
    case TSR_OP_WHERE:
      for (int32_t i = 0; status == TSR_OK && i < 3; ++i) status = shape_check(sig, i, 0);
      if (status == TSR_OK && sig->inputs[0].dtype != TSR_BOOL)
        return tsr_kit_error(TSR_INVALID_ARGUMENT, "where: the condition is not bool");
      return status == TSR_OK ? same_dtype_check(sig, 1, 2, 1) : status;
    case TSR_OP_REDUCE:
      status = reduce_check(sig);
      return status == TSR_OK ? same_dtype_check(sig, 0, 1, 1) : status;
    case TSR_OP_MATMUL:
      status = matmul_check(sig);
      return status == TSR_OK ? same_dtype_check(sig, 0, sig->num_inputs, 1) : status;
    default:
      return TSR_OK;
  }
}

// --- declarations --------------------------------------------------------------------

static int dense(const tsr_tensor_desc *d) {
  int64_t expected = 1;
  for (int32_t k = d->rank - 1; k >= 0; --k) {
    if (d->sizes[k] != 1 && d->strides[k] != expected)
      return 0;
    expected *= d->sizes[k];
  }
  return 1;
}

// The declaration covering |sig| whole, or NULL with the reason set as
// TSR_UNSUPPORTED.
static const tsr_kit_op *decl_find(const tsr_op_signature *sig) {
  const char *op = tsr_op_name(sig->op);
  uint64_t used = tsr_kit_selectors_of(sig, NULL);
  const char *why = "not implemented";
  for (int32_t n = 0; n < g_op_count; ++n) {
    const tsr_kit_op *d = &g_ops[n];
    if (d->op != sig->op)
      continue;
    int fits = (used & ~d->selectors) == 0;
    if (!fits) why = "this selector value is not implemented";
    for (int32_t i = 0; fits && i < sig->num_inputs + sig->num_outputs; ++i) {
      const tsr_tensor_desc *t = i < sig->num_inputs ? &sig->inputs[i]
                                                      : &sig->outputs[i - sig->num_inputs];
      if (!(d->dtypes & TSR_DTYPE_BIT(t->dtype))) {
        fits = 0;
        why = "this dtype is not implemented";
      } else if ((d->min_rank || d->max_rank) && (t->rank < d->min_rank || t->rank > d->max_rank)) {
        fits = 0;
        why = "this rank is not implemented";
      } else if ((d->flags & TSR_KIT_CONTIGUOUS) && !dense(t)) {
        fits = 0;
        why = "only contiguous operands are implemented";
      } else if ((d->flags & TSR_KIT_SAME_SHAPE) && i < sig->num_inputs &&
                 memcmp(t->sizes, sig->outputs[0].sizes, sizeof(int64_t) * (size_t)t->rank) != 0) {
        fits = 0;
        why = "broadcasting is not implemented";
      }
    }
    if (fits && d->check != NULL && d->check(sig) != TSR_OK)
      return NULL;  // the plugin's check set the reason
    if (fits)
      return d;
  }
  tsr_kit_error(TSR_UNSUPPORTED, "%s with %s: %s", op,
                sig->num_outputs > 0 && sig->outputs != NULL
                    ? tsr_kit_dtype_name(sig->outputs[0].dtype)
                    : "no output",
                why);
  return NULL;
}

static tsr_status kit_op_supports(const tsr_op_signature *sig) {
  tsr_status status = tsr_kit_signature_check(sig);
  if (status == TSR_INVALID_ARGUMENT)
    return TSR_UNSUPPORTED;  // op_supports never says invalid; plan_create does
  if (status != TSR_OK)
    return status;
  return decl_find(sig) != NULL ? TSR_OK : TSR_UNSUPPORTED;
}

static tsr_status kit_plan_create(const tsr_op_signature *sig, tsr_plugin_plan **out_plan) {
  if (out_plan == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_create: out_plan is NULL");
  *out_plan = NULL;
  tsr_status status = tsr_kit_signature_check(sig);
  if (status != TSR_OK)
    return status;
  const tsr_kit_op *decl = decl_find(sig);
  if (decl == NULL)
    return TSR_UNSUPPORTED;
  const tsr_host_api *host = tsr_kit_host();
  tsr_plugin_plan *plan = host->mem_alloc(host->ctx, sizeof(*plan), 64);
  if (plan == NULL)
    return tsr_kit_error(TSR_OUT_OF_MEMORY, "plan_create: %zu bytes for a plan", sizeof(*plan));
  memset(plan, 0, sizeof(*plan));
  plan->decl = decl;
  memcpy(&plan->signature, sig, sizeof(plan->signature));
  plan->signature.struct_size = sizeof(plan->signature);
  for (int32_t i = 0; i < sig->num_inputs; ++i) plan->descs[i] = sig->inputs[i];
  for (int32_t i = 0; i < sig->num_outputs; ++i) plan->descs[sig->num_inputs + i] = sig->outputs[i];
  plan->signature.inputs = plan->descs;
  plan->signature.outputs = plan->descs + sig->num_inputs;
  if (sig->attrs != NULL) {
    size_t bytes = *(const size_t *)sig->attrs;
    if (bytes > sizeof(plan->attrs))
      bytes = sizeof(plan->attrs);  // fields past this are from a newer catalogue
    memcpy(plan->attrs, sig->attrs, bytes);
    memcpy(plan->attrs, &bytes, sizeof(bytes));
    plan->signature.attrs = plan->attrs;
  }
  *out_plan = plan;
  return TSR_OK;
}

static tsr_status kit_plan_info_get(const tsr_plugin_plan *plan, tsr_plan_info *out_info) {
  if (plan == NULL || out_info == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_info_get: plan or out_info is NULL");
  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  info.engine = plan->decl->engine != NULL ? plan->decl->engine : tsr_op_name(plan->signature.op);
  info.flags = TSR_PLAN_INFO_DETERMINISTIC;
  TSR_KIT_OUT_COPY(out_info, info);
  return TSR_OK;
}

// The execution's operands are the plan's (dtype, sizes, strides), in
// buffers that hold them, at least as aligned as the plan was promised.
static tsr_status args_check(const tsr_plugin_plan *plan, const tsr_exec_args *args) {
  int32_t count = args->num_inputs + args->num_outputs;
  if (count > 0 && ((args->num_inputs > 0 && args->inputs == NULL) || args->outputs == NULL))
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_execute: operand arrays are NULL");
  for (int32_t i = 0; i < count; ++i) {
    const tsr_tensor_desc *d =
        i < args->num_inputs ? &args->inputs[i] : &args->outputs[i - args->num_inputs];
    const tsr_tensor_desc *p = &plan->descs[i];
    if (d->dtype != p->dtype || d->rank != p->rank ||
        memcmp(d->sizes, p->sizes, sizeof(int64_t) * (size_t)p->rank) != 0 ||
        memcmp(d->strides, p->strides, sizeof(int64_t) * (size_t)p->rank) != 0) {
      return tsr_kit_error(TSR_INVALID_ARGUMENT,
                           "plan_execute: operand %d's dtype, sizes or strides differ from the plan",
                           i);
    }
    char *base = tsr_kit_buffer_data(d->buffer);
    if (base == NULL)
      return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_execute: operand %d's buffer is NULL", i);
    uint32_t promised = p->alignment == 0 ? 1 : p->alignment;
    if (((uintptr_t)(base + d->byte_offset) & (promised - 1)) != 0 || d->alignment < p->alignment) {
      return tsr_kit_error(TSR_INVALID_ARGUMENT,
                           "plan_execute: operand %d is less aligned than the plan's %u bytes", i,
                           promised);
    }
    uint64_t extent = 0;  // bytes from the first element to past the last
    int empty = 0;
    for (int32_t k = 0; k < p->rank; ++k) {
      empty |= p->sizes[k] == 0;
      extent += (uint64_t)(p->sizes[k] - 1) * (uint64_t)p->strides[k];
    }
    extent = empty ? 0 : (extent + 1) * tsr_dtype_size(p->dtype);
    uint64_t bytes = tsr_kit_buffer_bytes(d->buffer);
    if (d->byte_offset > bytes || extent > bytes - d->byte_offset)
      return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_execute: operand %d runs past its buffer", i);
  }
  return TSR_OK;
}

static tsr_status kit_plan_execute(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                   tsr_plugin_stream *stream) {
  (void)stream;  // synchronous: the work runs now
  if (plan == NULL || args == NULL || args->num_inputs != plan->signature.num_inputs ||
      args->num_outputs != plan->signature.num_outputs) {
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_execute: plan or arguments do not match");
  }
  tsr_status status = args_check(plan, args);
  if (status != TSR_OK)
    return status;
  tsr_kit_call call;
  memset(&call, 0, sizeof(call));
  call.signature = &plan->signature;
  call.args = args;
  call.attrs = plan->signature.attrs;
  for (int32_t i = 0; i < args->num_inputs + args->num_outputs; ++i) {
    const tsr_tensor_desc *d =
        i < args->num_inputs ? &args->inputs[i] : &args->outputs[i - args->num_inputs];
    char *base = tsr_kit_buffer_data(d->buffer);
    if (base == NULL)
      return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_execute: operand %d has no buffer", i);
    if (i < args->num_inputs)
      call.inputs[i] = base + d->byte_offset;
    else
      call.outputs[i - args->num_inputs] = base + d->byte_offset;
  }
  call.numel = 1;
  for (int32_t k = 0; k < args->outputs[0].rank; ++k) call.numel *= args->outputs[0].sizes[k];
  return plan->decl->kernel(&call);
}

static tsr_status kit_plan_destroy(tsr_plugin_plan *plan) {
  if (plan == NULL)
    return tsr_kit_error(TSR_INVALID_ARGUMENT, "plan_destroy: plan is NULL");
  const tsr_host_api *host = tsr_kit_host();
  host->mem_free(host->ctx, plan);
  return TSR_OK;
}

void tsr_kit_ops_set(tsr_plugin_api *api, const tsr_kit_op *ops, int32_t count) {
  g_ops = ops;
  g_op_count = count;
  api->op_supports = kit_op_supports;
  api->plan_create = kit_plan_create;
  api->plan_info_get = kit_plan_info_get;
  api->plan_execute = kit_plan_execute;
  api->plan_destroy = kit_plan_destroy;
}
