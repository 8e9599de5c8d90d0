// SOFTMAX, CROSS_ENTROPY and their backward ops (kernels/softmax.cl,
// kernels/loss.cl). Shapes come from ref's analysis: softmax's groups
// (tsr_cpu/cpu_plan.h) and cross-entropy's rows.
#include <stdio.h>
#include <string.h>

#include "ocl.h"
#include "ops_reduce_internal.h"
#include "tsr_cpu/cpu_kernels.h"

// ---------------------------------------------------------------------------
// SOFTMAX and SOFTMAX_BACKWARD: a work-group per slice along the axis, or a
// work-item per slice when slices are short or the axis is not the
// contiguous dimension (neighbouring work-items then read neighbouring
// elements).

typedef struct tsr_ocl_softmax_state {
  tsr_ocl_kernel *kernel;
  cl_mem groups;
  int item;
  int backward;
  size_t local;
  uint64_t count;
  uint32_t elem;
} tsr_ocl_softmax_state;
_Static_assert(sizeof(tsr_ocl_softmax_state) <= TSR_OCL_PLAN_STATE_BYTES, "softmax state");

static tsr_status softmax_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                                   const struct tsr_plugin_plan *ref_plan) {
  return tsr_ocl_red_dtype_check(device, tsr_op_name(signature->op), ref_plan->operands[0].dtype,
                                 0);
}

static void softmax_fini(tsr_ocl_plan *plan) {
  tsr_ocl_softmax_state *st = (tsr_ocl_softmax_state *)plan->state;
  tsr_ocl_kernel_destroy(st->kernel);
  if (st->groups != NULL)
    clReleaseMemObject(st->groups);
  memset(st, 0, sizeof(*st));
}

static tsr_status softmax_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  tsr_ocl_softmax_state *st = (tsr_ocl_softmax_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_softmax_plan *sp = &plan->ref->u.softmax;
  const tsr_cpu_groups *g = &sp->groups;
  st->backward = signature->op == TSR_OP_SOFTMAX_BACKWARD;
  st->elem = plan->ref->operands[0].elem_size;
  st->count = (uint64_t)g->count;
  const int64_t elem = st->elem;
  // Element strides of x (operand 0) inside and between slices.
  const int64_t inner = g->inner_ndim > 0 ? g->inner_strides[0][0] / elem : 1;
  const int64_t outer = g->outer_ndim > 0 ? g->outer_strides[g->outer_ndim - 1][0] / elem : 0;
  st->item = g->size <= 16 || (inner != 1 && outer == 1 && g->count >= 256);
  char name[40];
  snprintf(name, sizeof(name), "softmax%s_%s", st->backward ? "_backward" : "",
           st->item ? "item" : "wg");
  tsr_status status =
      tsr_ocl_red_kernel_create(plan->device, "softmax", sp->dtype, name, &st->kernel);
  if (status == TSR_OK) {
    st->local = tsr_ocl_red_local_size(plan->device, st->kernel);
    if (!st->item)
      st->local = tsr_ocl_red_local_fit(st->local, (uint64_t)g->size);
    int64_t longs[TSR_OCL_GROUPS_LONGS];
    const int64_t elems[3] = {elem, elem, elem};
    tsr_ocl_red_groups_pack(g, elems, longs);
    status = tsr_ocl_red_longs_create(plan->device, longs, TSR_OCL_GROUPS_LONGS, &st->groups);
  }
  if (status != TSR_OK) {
    softmax_fini(plan);
    return status;
  }
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s-%s", tsr_op_name(signature->op),
           st->item ? "item" : "wg");
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status softmax_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_softmax_state *st = (const tsr_ocl_softmax_state *)plan->state;
  if (st->count == 0 || plan->ref->u.softmax.groups.size == 0)
    return TSR_OK;
  cl_int is_log = plan->attrs.softmax.log != 0;
  cl_mem m0 = exec->mem[0], m1 = exec->mem[1], m2 = exec->mem[2];
  cl_ulong o0 = exec->offset[0], o1 = exec->offset[1], o2 = exec->offset[2];
  tsr_ocl_arg fwd[] = {TSR_OCL_ARG(m0),
                       TSR_OCL_ARG(o0),
                       TSR_OCL_ARG(m1),
                       TSR_OCL_ARG(o1),
                       TSR_OCL_ARG(st->groups),
                       TSR_OCL_ARG(is_log),
                       TSR_OCL_LOCAL(st->local * st->elem)};
  tsr_ocl_arg bwd[] = {
      TSR_OCL_ARG(m0),         TSR_OCL_ARG(o0),     TSR_OCL_ARG(m1),
      TSR_OCL_ARG(o1),         TSR_OCL_ARG(m2),     TSR_OCL_ARG(o2),
      TSR_OCL_ARG(st->groups), TSR_OCL_ARG(is_log), TSR_OCL_LOCAL(st->local * st->elem)};
  const tsr_ocl_arg *args = st->backward ? bwd : fwd;
  const int32_t num_args = st->backward ? 9 : 7;
  size_t global, local;
  if (st->item) {
    local = st->local < 64 ? st->local : 64;
    global = tsr_ocl_round_up((size_t)st->count, local);
    return tsr_ocl_launch(exec, st->kernel, 1, &global, &local, num_args - 1, args);
  }
  local = st->local;
  global = (size_t)st->count * local;
  return tsr_ocl_launch(exec, st->kernel, 1, &global, &local, num_args, args);
}

const tsr_ocl_op_impl tsr_ocl_softmax_impl = {softmax_supports, softmax_init, softmax_execute,
                                              softmax_fini};
const tsr_ocl_op_impl tsr_ocl_softmax_backward_impl = {softmax_supports, softmax_init,
                                                       softmax_execute, softmax_fini};

// ---------------------------------------------------------------------------
// CROSS_ENTROPY and CROSS_ENTROPY_BACKWARD.
//
// Forward: ce_targets_check (one work-group: rows counted, first bad
// target), ce_forward_wg (a work-group per row: lse, and the row's loss),
// then for SUM and MEAN ce_loss_reduce (one work-group, a tree over rows).
// Backward: ce_targets_check, then ce_backward (a work-item per logit).
// Workspace: the info block (3 longs, padded to 64 bytes), then the row
// losses of a reduced forward.

#define CE_INFO_BYTES 64

typedef struct tsr_ocl_ce_state {
  tsr_ocl_kernel *check;
  tsr_ocl_kernel *rows;    // ce_forward_wg or ce_backward
  tsr_ocl_kernel *reduce;  // forward SUM and MEAN
  tsr_ocl_red_error_watch *watch;
  int backward;
  int32_t reduction;
  size_t local_check, local_rows, local_reduce;
  uint64_t n, classes;
  int64_t ignore_index;
  double eps;
  uint32_t elem;
  // Element strides: logits (2), target, lse, loss/dloss (0 when rank 0), dlogits (2).
  uint64_t ls0, ls1, t_stride, lse_stride, loss_stride, ds0, ds1;
} tsr_ocl_ce_state;
_Static_assert(sizeof(tsr_ocl_ce_state) <= TSR_OCL_PLAN_STATE_BYTES, "cross-entropy state");

static tsr_status ce_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                              const struct tsr_plugin_plan *ref_plan) {
  return tsr_ocl_red_dtype_check(device, tsr_op_name(signature->op),
                                 ref_plan->u.cross_entropy.dtype, 0);
}

static void ce_fini(tsr_ocl_plan *plan) {
  tsr_ocl_ce_state *st = (tsr_ocl_ce_state *)plan->state;
  tsr_ocl_kernel_destroy(st->check);
  tsr_ocl_kernel_destroy(st->rows);
  tsr_ocl_kernel_destroy(st->reduce);
  tsr_ocl_red_error_watch_destroy(st->watch);
  memset(st, 0, sizeof(*st));
}

static tsr_status ce_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  tsr_ocl_ce_state *st = (tsr_ocl_ce_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_cross_entropy_plan *ce = &plan->ref->u.cross_entropy;
  const tsr_cpu_operand *ops = plan->ref->operands;
  st->backward = signature->op == TSR_OP_CROSS_ENTROPY_BACKWARD;
  st->reduction = ce->reduction;
  st->n = (uint64_t)ce->rows;
  st->classes = (uint64_t)ce->classes;
  st->ignore_index = ce->ignore_index;
  st->eps = ce->smoothing;
  const tsr_cpu_operand *logits = &ops[st->backward ? 1 : 0];
  st->elem = logits->elem_size;
  st->ls0 = (uint64_t)logits->strides[0];
  st->ls1 = (uint64_t)logits->strides[1];
  st->t_stride = (uint64_t)ce->target_stride / 8;
  st->lse_stride = (uint64_t)ce->lse_stride / 4;
  st->loss_stride = (uint64_t)ce->loss_stride / st->elem;
  if (st->backward) {
    st->ds0 = (uint64_t)ops[4].strides[0];
    st->ds1 = (uint64_t)ops[4].strides[1];
  }
  const char *op = st->backward ? "cross_entropy_backward" : "cross_entropy";
  tsr_status status =
      tsr_ocl_red_kernel_create(plan->device, "loss", ce->dtype, "ce_targets_check", &st->check);
  if (status == TSR_OK) {
    status = tsr_ocl_red_kernel_create(plan->device, "loss", ce->dtype,
                                       st->backward ? "ce_backward" : "ce_forward_wg", &st->rows);
  }
  if (status == TSR_OK && !st->backward && st->reduction != TSR_REDUCTION_NONE) {
    status =
        tsr_ocl_red_kernel_create(plan->device, "loss", ce->dtype, "ce_loss_reduce", &st->reduce);
  }
  if (status == TSR_OK)
    status = tsr_ocl_red_error_watch_create(op, &st->watch);
  if (status != TSR_OK) {
    ce_fini(plan);
    return status;
  }
  st->local_check = tsr_ocl_red_local_fit(tsr_ocl_red_local_size(plan->device, st->check), st->n);
  st->local_rows = tsr_ocl_red_local_size(plan->device, st->rows);
  if (!st->backward)
    st->local_rows = tsr_ocl_red_local_fit(st->local_rows, st->classes);
  if (st->reduce != NULL) {
    st->local_reduce =
        tsr_ocl_red_local_fit(tsr_ocl_red_local_size(plan->device, st->reduce), st->n);
  }
  plan->workspace_bytes = CE_INFO_BYTES;
  if (st->reduce != NULL)
    plan->workspace_bytes += st->n * st->elem;
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s", op);
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status ce_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_ce_state *st = (const tsr_ocl_ce_state *)plan->state;
  const int b = st->backward;
  cl_mem ws = exec->workspace;
  cl_ulong info_off = exec->workspace_offset / 8;
  cl_mem target = exec->mem[b ? 2 : 1];
  cl_ulong t_off = exec->offset[b ? 2 : 1], t_stride = st->t_stride, rows = st->n;
  cl_long classes = (cl_long)st->classes, ignore = st->ignore_index;
  size_t local = st->local_check, global = local;
  tsr_ocl_arg check[] = {TSR_OCL_ARG(target),     TSR_OCL_ARG(t_off),    TSR_OCL_ARG(t_stride),
                         TSR_OCL_ARG(rows),       TSR_OCL_ARG(classes),  TSR_OCL_ARG(ignore),
                         TSR_OCL_ARG(ws),         TSR_OCL_ARG(info_off), TSR_OCL_LOCAL(local * 8),
                         TSR_OCL_LOCAL(local * 8)};
  if (b && (st->n == 0 || st->classes == 0))
    return TSR_OK;  // dlogits is empty
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->check, 1, &global, &local, 10, check));
  // The scalar arguments in the logits' type.
  float eps32 = (float)st->eps;
  double eps64 = st->eps;
  tsr_ocl_arg eps = st->elem == 8 ? TSR_OCL_ARG(eps64) : TSR_OCL_ARG(eps32);
  cl_ulong ls0 = st->ls0, ls1 = st->ls1, lse_stride = st->lse_stride;
  cl_ulong loss_stride = st->loss_stride;
  if (b) {
    cl_mem dloss = exec->mem[0], logits = exec->mem[1], lse = exec->mem[3], dlogits = exec->mem[4];
    cl_ulong dloss_off = exec->offset[0], l_off = exec->offset[1], lse_off = exec->offset[3];
    cl_ulong d_off = exec->offset[4], ds0 = st->ds0, ds1 = st->ds1;
    cl_int reduction = st->reduction;
    tsr_ocl_arg args[] = {TSR_OCL_ARG(dloss),      TSR_OCL_ARG(dloss_off), TSR_OCL_ARG(loss_stride),
                          TSR_OCL_ARG(logits),     TSR_OCL_ARG(l_off),     TSR_OCL_ARG(ls0),
                          TSR_OCL_ARG(ls1),        TSR_OCL_ARG(target),    TSR_OCL_ARG(t_off),
                          TSR_OCL_ARG(t_stride),   TSR_OCL_ARG(lse),       TSR_OCL_ARG(lse_off),
                          TSR_OCL_ARG(lse_stride), TSR_OCL_ARG(dlogits),   TSR_OCL_ARG(d_off),
                          TSR_OCL_ARG(ds0),        TSR_OCL_ARG(ds1),       TSR_OCL_ARG(rows),
                          TSR_OCL_ARG(classes),    TSR_OCL_ARG(ignore),    eps,
                          TSR_OCL_ARG(reduction),  TSR_OCL_ARG(ws),        TSR_OCL_ARG(info_off)};
    size_t local2[2] = {st->classes >= 64 ? 64 : 16, 1};
    if (local2[0] > st->local_rows)
      local2[0] = st->local_rows;
    size_t global2[2] = {tsr_ocl_round_up((size_t)st->classes, local2[0]), (size_t)st->n};
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->rows, 2, global2, local2, 24, args));
    return tsr_ocl_red_error_check(st->watch, exec, 0);
  }
  cl_mem logits = exec->mem[0], loss = exec->mem[2], lse = exec->mem[3];
  cl_ulong l_off = exec->offset[0], loss_off = exec->offset[2], lse_off = exec->offset[3];
  cl_ulong part_off = (exec->workspace_offset + CE_INFO_BYTES) / st->elem;
  cl_int per_row = st->reduction == TSR_REDUCTION_NONE;
  if (st->n > 0) {
    tsr_ocl_arg args[] = {TSR_OCL_ARG(logits),     TSR_OCL_ARG(l_off),
                          TSR_OCL_ARG(ls0),        TSR_OCL_ARG(ls1),
                          TSR_OCL_ARG(target),     TSR_OCL_ARG(t_off),
                          TSR_OCL_ARG(t_stride),   TSR_OCL_ARG(loss),
                          TSR_OCL_ARG(loss_off),   TSR_OCL_ARG(loss_stride),
                          TSR_OCL_ARG(lse),        TSR_OCL_ARG(lse_off),
                          TSR_OCL_ARG(lse_stride), TSR_OCL_ARG(ws),
                          TSR_OCL_ARG(part_off),   TSR_OCL_ARG(classes),
                          TSR_OCL_ARG(ignore),     eps,
                          TSR_OCL_ARG(per_row),    TSR_OCL_LOCAL(st->local_rows * st->elem)};
    local = st->local_rows;
    global = (size_t)st->n * local;
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->rows, 1, &global, &local, 20, args));
  }
  if (!per_row) {
    cl_int mean = st->reduction == TSR_REDUCTION_MEAN;
    tsr_ocl_arg args[] = {
        TSR_OCL_ARG(ws),   TSR_OCL_ARG(part_off), TSR_OCL_ARG(rows),
        TSR_OCL_ARG(ws),   TSR_OCL_ARG(info_off), TSR_OCL_ARG(mean),
        TSR_OCL_ARG(loss), TSR_OCL_ARG(loss_off), TSR_OCL_LOCAL(st->local_reduce * st->elem)};
    local = st->local_reduce;
    global = local;
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->reduce, 1, &global, &local, 9, args));
  }
  return tsr_ocl_red_error_check(st->watch, exec, 0);
}

const tsr_ocl_op_impl tsr_ocl_cross_entropy_impl = {ce_supports, ce_init, ce_execute, ce_fini};
const tsr_ocl_op_impl tsr_ocl_cross_entropy_backward_impl = {ce_supports, ce_init, ce_execute,
                                                             ce_fini};

// ---------------------------------------------------------------------------
// LAYER_NORM and LAYER_NORM_BACKWARD: a work-group per row (kernels/norm.cl);
// the backward's dgamma and dbeta are a column reduction over rows, one
// work-item per normalised element.

typedef struct tsr_ocl_layer_norm_state {
  tsr_ocl_kernel *rows;    // layer_norm_fwd or layer_norm_bwd_dx
  tsr_ocl_kernel *affine;  // layer_norm_bwd_affine (backward with gamma)
  cl_mem groups;
  int backward;
  int has_affine;
  size_t local;
  uint64_t count, size;
  uint32_t elem;
  double eps;
} tsr_ocl_layer_norm_state;
_Static_assert(sizeof(tsr_ocl_layer_norm_state) <= TSR_OCL_PLAN_STATE_BYTES, "layer norm state");

static tsr_status norm_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                                const struct tsr_plugin_plan *ref_plan) {
  const int k_x = signature->op == TSR_OP_LAYER_NORM_BACKWARD ? 1 : 0;
  return tsr_ocl_red_dtype_check(device, tsr_op_name(signature->op), ref_plan->operands[k_x].dtype,
                                 0);
}

static void layer_norm_fini(tsr_ocl_plan *plan) {
  tsr_ocl_layer_norm_state *st = (tsr_ocl_layer_norm_state *)plan->state;
  tsr_ocl_kernel_destroy(st->rows);
  tsr_ocl_kernel_destroy(st->affine);
  if (st->groups != NULL)
    clReleaseMemObject(st->groups);
  memset(st, 0, sizeof(*st));
}

static tsr_status layer_norm_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  tsr_ocl_layer_norm_state *st = (tsr_ocl_layer_norm_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_layer_norm_plan *ln = &plan->ref->u.layer_norm;
  st->backward = signature->op == TSR_OP_LAYER_NORM_BACKWARD;
  st->has_affine = ln->has_affine;
  st->count = (uint64_t)ln->groups.count;
  st->size = (uint64_t)ln->groups.size;
  st->elem = plan->ref->operands[0].elem_size;
  st->eps = ln->eps;
  tsr_status status =
      tsr_ocl_red_kernel_create(plan->device, "norm", ln->dtype,
                                st->backward ? "layer_norm_bwd_dx" : "layer_norm_fwd", &st->rows);
  if (status == TSR_OK && st->backward && st->has_affine) {
    status = tsr_ocl_red_kernel_create(plan->device, "norm", ln->dtype, "layer_norm_bwd_affine",
                                       &st->affine);
  }
  if (status == TSR_OK) {
    st->local = tsr_ocl_red_local_fit(tsr_ocl_red_local_size(plan->device, st->rows), st->size);
    int64_t longs[TSR_OCL_GROUPS_LONGS];
    int64_t elems[TSR_CPU_GROUPS_MAX_OPERANDS];
    for (int32_t k = 0; k < TSR_CPU_GROUPS_MAX_OPERANDS; ++k) elems[k] = st->elem;
    tsr_ocl_red_groups_pack(&ln->groups, elems, longs);
    status = tsr_ocl_red_longs_create(plan->device, longs, TSR_OCL_GROUPS_LONGS, &st->groups);
  }
  if (status != TSR_OK) {
    layer_norm_fini(plan);
    return status;
  }
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s-wg", tsr_op_name(signature->op));
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status layer_norm_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_layer_norm_state *st = (const tsr_ocl_layer_norm_state *)plan->state;
  if (st->size == 0)
    return TSR_OK;
  cl_int affine = st->has_affine;
  float eps32 = (float)st->eps;
  double eps64 = st->eps;
  tsr_ocl_arg eps = st->elem == 8 ? TSR_OCL_ARG(eps64) : TSR_OCL_ARG(eps32);
  size_t local = st->local, global = (size_t)st->count * local;
  const cl_mem *m = exec->mem;
  const uint64_t *o = exec->offset;
  if (!st->backward) {
    if (st->count == 0)
      return TSR_OK;
    // Operands: x, [gamma, beta], y, mean, rstd; gamma and beta stand in
    // as x when absent (never read).
    const int a = affine ? 2 : 0;
    cl_mem gm = affine ? m[1] : m[0], bm = affine ? m[2] : m[0];
    cl_ulong x_off = o[0], g_off = affine ? o[1] : 0, b_off = affine ? o[2] : 0;
    cl_ulong y_off = o[1 + a], mean_off = o[2 + a], rstd_off = o[3 + a];
    tsr_ocl_arg args[] = {TSR_OCL_ARG(m[0]),
                          TSR_OCL_ARG(x_off),
                          TSR_OCL_ARG(gm),
                          TSR_OCL_ARG(g_off),
                          TSR_OCL_ARG(bm),
                          TSR_OCL_ARG(b_off),
                          TSR_OCL_ARG(m[1 + a]),
                          TSR_OCL_ARG(y_off),
                          TSR_OCL_ARG(m[2 + a]),
                          TSR_OCL_ARG(mean_off),
                          TSR_OCL_ARG(m[3 + a]),
                          TSR_OCL_ARG(rstd_off),
                          TSR_OCL_ARG(st->groups),
                          TSR_OCL_ARG(affine),
                          eps,
                          TSR_OCL_LOCAL(local * st->elem)};
    return tsr_ocl_launch(exec, st->rows, 1, &global, &local, 16, args);
  }
  // Operands: dy, x, mean, rstd, [gamma], dx, [dgamma, dbeta].
  const int kdx = affine ? 5 : 4;
  cl_mem gm = affine ? m[4] : m[0];
  cl_ulong dy_off = o[0], x_off = o[1], mean_off = o[2], rstd_off = o[3];
  cl_ulong g_off = affine ? o[4] : 0, dx_off = o[kdx];
  if (st->count > 0) {
    tsr_ocl_arg args[] = {TSR_OCL_ARG(m[0]),
                          TSR_OCL_ARG(dy_off),
                          TSR_OCL_ARG(m[1]),
                          TSR_OCL_ARG(x_off),
                          TSR_OCL_ARG(m[2]),
                          TSR_OCL_ARG(mean_off),
                          TSR_OCL_ARG(m[3]),
                          TSR_OCL_ARG(rstd_off),
                          TSR_OCL_ARG(gm),
                          TSR_OCL_ARG(g_off),
                          TSR_OCL_ARG(m[kdx]),
                          TSR_OCL_ARG(dx_off),
                          TSR_OCL_ARG(st->groups),
                          TSR_OCL_ARG(affine),
                          TSR_OCL_LOCAL(local * st->elem),
                          TSR_OCL_LOCAL(local * st->elem)};
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->rows, 1, &global, &local, 16, args));
  }
  if (!affine)
    return TSR_OK;
  cl_ulong dg_off = o[6], db_off = o[7];
  tsr_ocl_arg args[] = {TSR_OCL_ARG(m[0]),      TSR_OCL_ARG(dy_off),   TSR_OCL_ARG(m[1]),
                        TSR_OCL_ARG(x_off),     TSR_OCL_ARG(m[2]),     TSR_OCL_ARG(mean_off),
                        TSR_OCL_ARG(m[3]),      TSR_OCL_ARG(rstd_off), TSR_OCL_ARG(m[6]),
                        TSR_OCL_ARG(dg_off),    TSR_OCL_ARG(m[7]),     TSR_OCL_ARG(db_off),
                        TSR_OCL_ARG(st->groups)};
  local = 64;
  global = tsr_ocl_round_up((size_t)st->size, local);
  return tsr_ocl_launch(exec, st->affine, 1, &global, &local, 13, args);
}

const tsr_ocl_op_impl tsr_ocl_layer_norm_impl = {norm_supports, layer_norm_init, layer_norm_execute,
                                                 layer_norm_fini};
const tsr_ocl_op_impl tsr_ocl_layer_norm_backward_impl = {norm_supports, layer_norm_init,
                                                          layer_norm_execute, layer_norm_fini};

// ---------------------------------------------------------------------------
// BATCH_NORM and BATCH_NORM_BACKWARD: a work-group per channel.

typedef struct tsr_ocl_batch_norm_state {
  tsr_ocl_kernel *kernel;
  cl_mem groups;
  cl_mem channel_strides;  // 10 longs: each plan operand's [C] stride in elements
  int backward;
  int training;
  size_t local;
  uint64_t count;
  uint32_t elem;
  double eps, momentum;
} tsr_ocl_batch_norm_state;
_Static_assert(sizeof(tsr_ocl_batch_norm_state) <= TSR_OCL_PLAN_STATE_BYTES, "batch norm state");

static void batch_norm_fini(tsr_ocl_plan *plan) {
  tsr_ocl_batch_norm_state *st = (tsr_ocl_batch_norm_state *)plan->state;
  tsr_ocl_kernel_destroy(st->kernel);
  if (st->groups != NULL)
    clReleaseMemObject(st->groups);
  if (st->channel_strides != NULL)
    clReleaseMemObject(st->channel_strides);
  memset(st, 0, sizeof(*st));
}

static tsr_status batch_norm_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  tsr_ocl_batch_norm_state *st = (tsr_ocl_batch_norm_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_batch_norm_plan *bn = &plan->ref->u.batch_norm;
  st->backward = signature->op == TSR_OP_BATCH_NORM_BACKWARD;
  st->training = bn->training;
  st->count = (uint64_t)bn->groups.count;
  st->elem = plan->ref->operands[0].elem_size;
  st->eps = bn->eps;
  st->momentum = bn->momentum;
  tsr_status status =
      tsr_ocl_red_kernel_create(plan->device, "norm", bn->dtype,
                                st->backward ? "batch_norm_bwd" : "batch_norm_fwd", &st->kernel);
  if (status == TSR_OK) {
    st->local = tsr_ocl_red_local_fit(tsr_ocl_red_local_size(plan->device, st->kernel),
                                      (uint64_t)bn->groups.size);
    int64_t longs[TSR_OCL_GROUPS_LONGS];
    const int64_t elems[3] = {st->elem, st->elem, st->elem};
    tsr_ocl_red_groups_pack(&bn->groups, elems, longs);
    status = tsr_ocl_red_longs_create(plan->device, longs, TSR_OCL_GROUPS_LONGS, &st->groups);
  }
  if (status == TSR_OK) {
    int64_t cs[10];
    for (int32_t k = 0; k < 10; ++k) cs[k] = bn->channel_strides[k] / st->elem;
    status = tsr_ocl_red_longs_create(plan->device, cs, 10, &st->channel_strides);
  }
  if (status != TSR_OK) {
    batch_norm_fini(plan);
    return status;
  }
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s-wg", tsr_op_name(signature->op));
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status batch_norm_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_batch_norm_state *st = (const tsr_ocl_batch_norm_state *)plan->state;
  if (st->count == 0)
    return TSR_OK;
  cl_int training = st->training;
  size_t local = st->local, global = (size_t)st->count * local;
  const cl_mem *m = exec->mem;
  cl_ulong o[10];
  for (int k = 0; k < 10; ++k) o[k] = exec->offset[k];
  if (!st->backward) {
    float eps32 = (float)st->eps, mom32 = (float)st->momentum;
    double eps64 = st->eps, mom64 = st->momentum;
    tsr_ocl_arg eps = st->elem == 8 ? TSR_OCL_ARG(eps64) : TSR_OCL_ARG(eps32);
    tsr_ocl_arg mom = st->elem == 8 ? TSR_OCL_ARG(mom64) : TSR_OCL_ARG(mom32);
    // Plan operands: x 0, gamma 1, beta 2, running_mean 3, running_var 4,
    // y 5, save_mean 6, save_invstd 7, running_mean_out 8, running_var_out 9.
    tsr_ocl_arg args[] = {TSR_OCL_ARG(m[0]),
                          TSR_OCL_ARG(o[0]),
                          TSR_OCL_ARG(m[5]),
                          TSR_OCL_ARG(o[5]),
                          TSR_OCL_ARG(m[1]),
                          TSR_OCL_ARG(o[1]),
                          TSR_OCL_ARG(m[2]),
                          TSR_OCL_ARG(o[2]),
                          TSR_OCL_ARG(m[3]),
                          TSR_OCL_ARG(o[3]),
                          TSR_OCL_ARG(m[4]),
                          TSR_OCL_ARG(o[4]),
                          TSR_OCL_ARG(m[6]),
                          TSR_OCL_ARG(o[6]),
                          TSR_OCL_ARG(m[7]),
                          TSR_OCL_ARG(o[7]),
                          TSR_OCL_ARG(m[8]),
                          TSR_OCL_ARG(o[8]),
                          TSR_OCL_ARG(m[9]),
                          TSR_OCL_ARG(o[9]),
                          TSR_OCL_ARG(st->groups),
                          TSR_OCL_ARG(st->channel_strides),
                          TSR_OCL_ARG(training),
                          eps,
                          mom,
                          TSR_OCL_LOCAL(local * st->elem)};
    return tsr_ocl_launch(exec, st->kernel, 1, &global, &local, 26, args);
  }
  // Plan operands: dy 0, x 1, gamma 2, save_mean 3, save_invstd 4, dx 5,
  // dgamma 6, dbeta 7.
  tsr_ocl_arg args[] = {TSR_OCL_ARG(m[0]),
                        TSR_OCL_ARG(o[0]),
                        TSR_OCL_ARG(m[1]),
                        TSR_OCL_ARG(o[1]),
                        TSR_OCL_ARG(m[5]),
                        TSR_OCL_ARG(o[5]),
                        TSR_OCL_ARG(m[2]),
                        TSR_OCL_ARG(o[2]),
                        TSR_OCL_ARG(m[3]),
                        TSR_OCL_ARG(o[3]),
                        TSR_OCL_ARG(m[4]),
                        TSR_OCL_ARG(o[4]),
                        TSR_OCL_ARG(m[6]),
                        TSR_OCL_ARG(o[6]),
                        TSR_OCL_ARG(m[7]),
                        TSR_OCL_ARG(o[7]),
                        TSR_OCL_ARG(st->groups),
                        TSR_OCL_ARG(st->channel_strides),
                        TSR_OCL_ARG(training),
                        TSR_OCL_LOCAL(local * st->elem),
                        TSR_OCL_LOCAL(local * st->elem)};
  return tsr_ocl_launch(exec, st->kernel, 1, &global, &local, 21, args);
}

const tsr_ocl_op_impl tsr_ocl_batch_norm_impl = {norm_supports, batch_norm_init, batch_norm_execute,
                                                 batch_norm_fini};
const tsr_ocl_op_impl tsr_ocl_batch_norm_backward_impl = {norm_supports, batch_norm_init,
                                                          batch_norm_execute, batch_norm_fini};
