// CONCAT: inputs laid side by side along one axis of out.
//
// Bandwidth-bound: each block x_i[outer, ...] is one memcpy when it is
// contiguous in both views, rows of strided copies otherwise. Blocks are
// independent, so threads split them in any grouping without changing a bit.
#include <string.h>

#include "data_ops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// Bytes per parallel chunk: large enough that a pool hand-off (microseconds)
// is noise against the copy.
#define TSR_CPU_CONCAT_CHUNK_BYTES (256 * 1024)

typedef struct tsr_cpu_concat_job {
  const tsr_plugin_plan *plan;
  char *const *ptrs;
} tsr_cpu_concat_job;

// Blocks [begin, end): block t is input t % k of outer index t / k.
static void tsr_cpu_concat_blocks_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_concat_job *job = arg;
  const tsr_plugin_plan *plan = job->plan;
  const tsr_cpu_concat_plan *c = &plan->u.concat;
  const int32_t k = plan->num_inputs;
  const tsr_cpu_operand *out = &plan->operands[k];
  const uint32_t e = out->elem_size;
  for (int64_t t = begin; t < end; ++t) {
    const int32_t i = (int32_t)(t % k);
    const tsr_cpu_concat_input *in = &c->inputs[i];
    if (in->row.n == 0) continue;
    const tsr_cpu_operand *x = &plan->operands[i];
    int64_t x_off, out_off;
    tsr_cpu_offsets_get(t / k, c->axis, out->sizes, x->strides, out->strides, &x_off, &out_off);
    tsr_cpu_block_copy(job->ptrs[k] + (out_off + in->out_offset) * e, out->strides,
                       job->ptrs[i] + x_off * e, x->strides, x->sizes, c->axis, &in->row, e);
  }
}

static tsr_status tsr_cpu_concat_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                         char *workspace) {
  (void)workspace;
  const tsr_cpu_concat_plan *c = &plan->u.concat;
  const int64_t blocks = c->outer_count * plan->num_inputs;
  if (plan->operands[plan->num_inputs].numel == 0) return TSR_OK;
  tsr_cpu_concat_job job = {plan, ptrs};
  if (c->grain == 0) {
    tsr_cpu_concat_blocks_run(&job, 0, blocks, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  return host->parallel_for(host->ctx, blocks, c->grain, tsr_cpu_concat_blocks_run, &job);
}

tsr_status tsr_cpu_concat_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x0", "x1", "x2",  "x3",  "x4",  "x5",  "x6", "x7",
                                      "x8", "x9", "x10", "x11", "x12", "x13", "x14", "out"};
  tsr_status status =
      tsr_cpu_operands_init(signature, plan, 1, TSR_CPU_CONCAT_MAX_INPUTS, 1, names);
  if (status != TSR_OK) return status;
  // Attributes: NULL, or any struct_size, a missing field taking its default.
  const tsr_concat_attrs *attrs = signature->attrs;
  int32_t axis = 0;
  if (attrs != NULL) {
    if (attrs->struct_size < sizeof(size_t)) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "concat: attrs struct_size %zu is too small",
                               attrs->struct_size);
    }
    if (TSR_ABI_COVERS(attrs, tsr_concat_attrs, axis)) axis = attrs->axis;
    if (TSR_ABI_COVERS(attrs, tsr_concat_attrs, reserved) && attrs->reserved != 0) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "concat: attrs reserved is %u, not 0",
                               (unsigned)attrs->reserved);
    }
  }
  const int32_t k = plan->num_inputs;
  const tsr_cpu_operand *out = &plan->operands[k];
  if (axis < 0 || axis >= out->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "concat: axis %d is outside [0, %d) (out rank)",
                             (int)axis, (int)out->rank);
  }
  int64_t axis_total = 0;
  for (int32_t i = 0; i < k; ++i) {
    const tsr_cpu_operand *x = &plan->operands[i];
    status = tsr_cpu_same_dtype_check(signature, out, x);
    if (status != TSR_OK) return status;
    if (x->rank != out->rank) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "concat: %s rank %d differs from out rank %d",
                               x->name, (int)x->rank, (int)out->rank);
    }
    for (int32_t d = 0; d < out->rank; ++d) {
      if (d != axis && x->sizes[d] != out->sizes[d]) {
        return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                                 "concat: %s sizes[%d] is %lld but out sizes[%d] is %lld", x->name,
                                 (int)d, (long long)x->sizes[d], (int)d,
                                 (long long)out->sizes[d]);
      }
    }
    axis_total += x->sizes[axis];
  }
  if (axis_total != out->sizes[axis]) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "concat: inputs' sizes on axis %d sum to %lld but out sizes[%d] is %lld",
                             (int)axis, (long long)axis_total, (int)axis,
                             (long long)out->sizes[axis]);
  }
  status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;

  tsr_cpu_concat_plan *c = &plan->u.concat;
  memset(c, 0, sizeof(*c));
  c->axis = axis;
  c->outer_count = 1;
  for (int32_t d = 0; d < axis; ++d) c->outer_count *= out->sizes[d];
  int64_t offset = 0;
  for (int32_t i = 0; i < k; ++i) {
    const tsr_cpu_operand *x = &plan->operands[i];
    tsr_cpu_concat_input *in = &c->inputs[i];
    in->out_offset = offset * out->strides[axis];
    offset += x->sizes[axis];
    if (x->numel == 0) continue;  // row.n stays 0: nothing to copy
    tsr_cpu_row_init(x->sizes, out->strides, x->strides, axis, out->rank, &in->row);
  }
  const int64_t blocks = c->outer_count * k;
  const int64_t bytes = out->numel * (int64_t)out->elem_size;
  if (blocks >= 2 && bytes >= 2 * TSR_CPU_CONCAT_CHUNK_BYTES) {
    int64_t block_bytes = bytes / blocks;
    c->grain = block_bytes >= TSR_CPU_CONCAT_CHUNK_BYTES ? 1 : TSR_CPU_CONCAT_CHUNK_BYTES / block_bytes;
  }
  plan->execute = tsr_cpu_concat_execute;
  plan->engine = "ref:concat";
  return TSR_OK;
}
