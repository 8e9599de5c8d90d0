// Checks shared by every op's plan builder.
#include "signature.h"

#include <string.h>

#include "host.h"


static const char *tsr_cpu_op_label(const tsr_op_signature *signature) {
  const char *name = tsr_op_name(signature->op);
  return name != NULL ? name : "op";
}

// Validates one descriptor into |out|.
static tsr_status tsr_cpu_operand_init(int32_t op_id, const char *op, const char *name,
                                       const tsr_tensor_desc *desc, tsr_cpu_operand *out) {
  memset(out, 0, sizeof(*out));
  out->name = name;
  if (!TSR_ABI_COVERS(desc, tsr_tensor_desc, alias_group)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s struct_size %zu is too small", op, name,
                             desc->struct_size);
  }
  if (desc->dtype < 0 || desc->dtype >= TSR_DTYPE_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(desc->dtype < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "%s: %s dtype %d is not a Tessera dtype", op,
                             name, (int)desc->dtype);
  }
  if ((desc->dtype == TSR_BFLOAT16 || desc->dtype == TSR_FLOAT16) &&
      (TSR_CPU_HALF_OPS & TSR_CPU_OP_BIT(op_id)) == 0) {
    return tsr_cpu_error_set(TSR_UNSUPPORTED, "ref: %s on %s (%s) is not implemented yet", op,
                             tsr_cpu_dtype_name(desc->dtype), name);
  }
  if (desc->rank < 0 || desc->rank > TSR_MAX_RANK) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s rank %d is outside 0..%d", op, name,
                             (int)desc->rank, TSR_MAX_RANK);
  }
  if (desc->device != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s device %d does not exist", op, name,
                             (int)desc->device);
  }
  uint32_t alignment = desc->alignment == 0 ? 1 : desc->alignment;
  if ((alignment & (alignment - 1)) != 0 || alignment > TSR_MAX_ALIGNMENT) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: %s alignment %u is not a power of two up to %d", op, name,
                             (unsigned)desc->alignment, TSR_MAX_ALIGNMENT);
  }
  out->dtype = desc->dtype;
  out->rank = desc->rank;
  out->alignment = alignment;
  out->elem_size = (uint32_t)tsr_dtype_size(desc->dtype);
  out->alias_group = desc->alias_group;

  int64_t numel = 1;
  uint64_t last = 0;  // offset in elements of the last element
  int overflow = 0;
  for (int32_t d = 0; d < desc->rank; ++d) {
    int64_t size = desc->sizes[d];
    int64_t stride = desc->strides[d];
    if (size < 0) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s sizes[%d] is %lld", op, name, (int)d,
                               (long long)size);
    }
    if (stride < 0) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s strides[%d] is %lld", op, name,
                               (int)d, (long long)stride);
    }
    out->sizes[d] = size;
    out->strides[d] = stride;
    overflow |= __builtin_mul_overflow(numel, size, &numel);
    uint64_t step;
    if (size > 0) {
      overflow |= __builtin_mul_overflow((uint64_t)(size - 1), (uint64_t)stride, &step);
      overflow |= __builtin_add_overflow(last, step, &last);
    }
  }
  uint64_t extent_bytes = 0;
  if (numel > 0) {
    overflow |= __builtin_add_overflow(last, 1, &last);
    overflow |= __builtin_mul_overflow(last, (uint64_t)out->elem_size, &extent_bytes);
  }
  if (overflow || extent_bytes > (uint64_t)INT64_MAX) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: %s sizes and strides span more bytes than fit in 63 bits", op,
                             name);
  }
  out->numel = numel;
  out->extent_bytes = extent_bytes;
  return TSR_OK;
}

tsr_status tsr_cpu_operands_init(const tsr_op_signature *signature, tsr_plugin_plan *plan,
                                 int32_t min_inputs, int32_t max_inputs, int32_t num_outputs,
                                 const char *const *names) {
  const char *op = tsr_cpu_op_label(signature);
  if (signature->num_inputs < min_inputs || signature->num_inputs > max_inputs) {
    if (min_inputs == max_inputs) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: num_inputs is %d, expected %d", op,
                               (int)signature->num_inputs, (int)min_inputs);
    }
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: num_inputs is %d, expected %d to %d", op,
                             (int)signature->num_inputs, (int)min_inputs, (int)max_inputs);
  }
  if (signature->num_outputs != num_outputs) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: num_outputs is %d, expected %d", op,
                             (int)signature->num_outputs, (int)num_outputs);
  }
  plan->op = signature->op;
  plan->num_inputs = signature->num_inputs;
  plan->num_outputs = num_outputs;
  for (int32_t i = 0; i < signature->num_inputs; ++i) {
    tsr_status status = tsr_cpu_operand_init(signature->op, op, names[i], &signature->inputs[i],
                                             &plan->operands[i]);
    if (status != TSR_OK) return status;
  }
  for (int32_t i = 0; i < num_outputs; ++i) {
    tsr_status status =
        tsr_cpu_operand_init(signature->op, op, names[max_inputs + i], &signature->outputs[i],
                             &plan->operands[signature->num_inputs + i]);
    if (status != TSR_OK) return status;
  }
  return TSR_OK;
}

tsr_status tsr_cpu_attrs_get(const tsr_op_signature *signature, size_t min_size,
                             const void **out_attrs) {
  const char *op = tsr_cpu_op_label(signature);
  const size_t *attrs = signature->attrs;
  *out_attrs = NULL;
  if (attrs == NULL) return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: attrs is NULL", op);
  if (*attrs < min_size) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: attrs struct_size %zu is smaller than the %zu bytes it needs",
                             op, *attrs, min_size);
  }
  *out_attrs = attrs;
  return TSR_OK;
}

tsr_status tsr_cpu_attrs_null_check(const tsr_op_signature *signature) {
  if (signature->attrs != NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: attrs must be NULL (the op has none)",
                             tsr_cpu_op_label(signature));
  }
  return TSR_OK;
}

tsr_status tsr_cpu_dtype_check(const tsr_op_signature *signature, const tsr_cpu_operand *operand,
                               uint32_t mask, const char *rule) {
  if ((TSR_DTYPE_BIT(operand->dtype) & mask) == 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s dtype %s is not allowed: %s",
                             tsr_cpu_op_label(signature), operand->name,
                             tsr_cpu_dtype_name(operand->dtype), rule);
  }
  return TSR_OK;
}

tsr_status tsr_cpu_same_dtype_check(const tsr_op_signature *signature, const tsr_cpu_operand *a,
                                    const tsr_cpu_operand *b) {
  if (a->dtype != b->dtype) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s dtype %s differs from %s dtype %s",
                             tsr_cpu_op_label(signature), b->name, tsr_cpu_dtype_name(b->dtype),
                             a->name, tsr_cpu_dtype_name(a->dtype));
  }
  return TSR_OK;
}

static tsr_status tsr_cpu_rank_match_check(const tsr_op_signature *signature,
                                           const tsr_cpu_operand *input,
                                           const tsr_cpu_operand *out) {
  if (input->rank != out->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s rank %d differs from %s rank %d",
                             tsr_cpu_op_label(signature), input->name, (int)input->rank,
                             out->name, (int)out->rank);
  }
  return TSR_OK;
}

tsr_status tsr_cpu_broadcast_check(const tsr_op_signature *signature,
                                   const tsr_cpu_operand *input, const tsr_cpu_operand *out) {
  tsr_status status = tsr_cpu_rank_match_check(signature, input, out);
  if (status != TSR_OK) return status;
  for (int32_t d = 0; d < out->rank; ++d) {
    if (input->sizes[d] != out->sizes[d] && input->sizes[d] != 1) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: %s sizes[%d] is %lld, which neither equals %s sizes[%d] = %lld "
                               "nor is 1",
                               tsr_cpu_op_label(signature), input->name, (int)d,
                               (long long)input->sizes[d], out->name, (int)d,
                               (long long)out->sizes[d]);
    }
  }
  return TSR_OK;
}

tsr_status tsr_cpu_same_sizes_check(const tsr_op_signature *signature,
                                    const tsr_cpu_operand *input, const tsr_cpu_operand *out) {
  tsr_status status = tsr_cpu_rank_match_check(signature, input, out);
  if (status != TSR_OK) return status;
  for (int32_t d = 0; d < out->rank; ++d) {
    if (input->sizes[d] != out->sizes[d]) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s sizes[%d] is %lld but %s sizes[%d] is %lld",
                               tsr_cpu_op_label(signature), input->name, (int)d,
                               (long long)input->sizes[d], out->name, (int)d,
                               (long long)out->sizes[d]);
    }
  }
  return TSR_OK;
}

tsr_status tsr_cpu_output_overlap_check(const tsr_op_signature *signature,
                                        const tsr_cpu_operand *out) {
  if (out->numel <= 1) return TSR_OK;
  // Sufficient test: with dimensions sorted by stride, each stride must step
  // past everything the smaller-strided dimensions reach.
  int32_t dims[TSR_MAX_RANK];
  int32_t n = 0;
  for (int32_t d = 0; d < out->rank; ++d) {
    if (out->sizes[d] <= 1) continue;
    int32_t j = n++;
    while (j > 0 && out->strides[dims[j - 1]] > out->strides[d]) {
      dims[j] = dims[j - 1];
      --j;
    }
    dims[j] = d;
  }
  int64_t reach = 0;  // largest element offset the dimensions so far reach
  for (int32_t i = 0; i < n; ++i) {
    int32_t d = dims[i];
    if (out->strides[d] <= reach) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: %s strides[%d] = %lld makes elements overlap (size %lld)",
                               tsr_cpu_op_label(signature), out->name, (int)d,
                               (long long)out->strides[d], (long long)out->sizes[d]);
    }
    reach += (out->sizes[d] - 1) * out->strides[d];
  }
  return TSR_OK;
}

tsr_status tsr_cpu_alias_check(const tsr_op_signature *signature, tsr_plugin_plan *plan,
                               int in_place) {
  for (int32_t o = 0; o < plan->num_outputs; ++o) {
    tsr_cpu_operand *out = &plan->operands[plan->num_inputs + o];
    out->alias_mask = 0;
    if (out->alias_group < 0) continue;
    for (int32_t i = 0; i < plan->num_inputs; ++i) {
      const tsr_cpu_operand *in = &plan->operands[i];
      if (in->alias_group != out->alias_group) continue;
      if (!in_place) {
        return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                                 "%s: %s shares alias group %d with %s, and the op is not in place",
                                 tsr_cpu_op_label(signature), out->name, (int)out->alias_group,
                                 in->name);
      }
      int same = in->dtype == out->dtype && in->rank == out->rank &&
                 memcmp(in->sizes, out->sizes, sizeof(int64_t) * (size_t)out->rank) == 0 &&
                 memcmp(in->strides, out->strides, sizeof(int64_t) * (size_t)out->rank) == 0;
      if (!same) {
        return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                                 "%s: %s shares alias group %d with %s but is not the same view "
                                 "(dtype, sizes and strides must match)",
                                 tsr_cpu_op_label(signature), out->name, (int)out->alias_group,
                                 in->name);
      }
      out->alias_mask |= 1u << i;
    }
  }
  return TSR_OK;
}
