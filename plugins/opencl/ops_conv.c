// CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER on OpenCL, as
// implicit GEMMs on the engine of ops_matmul.c (ocl_matmul.h): the tile
// loaders of kernels/matmul.cl compute the im2col (or col2im) elements from
// the geometry, so no column matrix is stored. Per group g:
//   forward:         y[g]  = W_g [Og x Cg*KH*KW] . col(x)   [.. x N*OH*OW]
//   backward data:   dx[g] = W_g^T [Cg x Og*KH*KW] . dcol(dy) [.. x N*H*W]
//   backward filter: dW_g  = dy_g [Og x N*OH*OW] . col(x)^T [.. x Cg*KH*KW]
// The filter gradient's depth (N*OH*OW) is long and its output small, so it
// splits the depth over work-groups by the device's compute units and sums
// the partial products in a second pass (kernels/conv.cl) in split order:
// no atomics, bit-reproducible. dbias is one work-group per channel.
#include <stdio.h>
#include <string.h>

#include "ocl.h"
#include "ocl_matmul.h"
#include "tsr_cpu/cpu_kernels.h"  // struct tsr_plugin_plan, tsr_cpu_conv_plan

typedef struct conv_state {
  tsr_ocl_gemm gemm;
  tsr_ocl_kernel *reduce;  // backward filter with a split depth
  tsr_ocl_kernel *dbias;   // backward filter with dbias
  size_t reduce_global, reduce_local;
  size_t dbias_global, dbias_local;
  int64_t splits;
  uint64_t part_bytes;  // the split filter gradient's partial sums, first in the workspace
  int32_t activation;
  int32_t has_bias;
} conv_state;
_Static_assert(sizeof(conv_state) <= TSR_OCL_PLAN_STATE_BYTES, "conv state fits the plan");

// The geometry every conv GEMM mode reads.
static void conv_geo_fill(const tsr_cpu_conv_plan *cv, int64_t *geo) {
  memset(geo, 0, TSR_OCL_GEO_COUNT * sizeof(int64_t));
  geo[TSR_OCL_GEO_CG] = cv->cg;
  geo[TSR_OCL_GEO_OG] = cv->og;
  geo[TSR_OCL_GEO_H] = cv->h;
  geo[TSR_OCL_GEO_W] = cv->w;
  geo[TSR_OCL_GEO_OH] = cv->oh;
  geo[TSR_OCL_GEO_OW] = cv->ow;
  geo[TSR_OCL_GEO_KH] = cv->kh;
  geo[TSR_OCL_GEO_KW] = cv->kw;
  geo[TSR_OCL_GEO_S0] = cv->stride[0];
  geo[TSR_OCL_GEO_S1] = cv->stride[1];
  geo[TSR_OCL_GEO_P0] = cv->pad[0];
  geo[TSR_OCL_GEO_P1] = cv->pad[1];
  geo[TSR_OCL_GEO_D0] = cv->dilation[0];
  geo[TSR_OCL_GEO_D1] = cv->dilation[1];
  for (int d = 0; d < 4; ++d) {
    geo[TSR_OCL_GEO_XS + d] = cv->xs[d];
    geo[TSR_OCL_GEO_WS + d] = cv->ws[d];
    geo[TSR_OCL_GEO_YS + d] = cv->ys[d];
  }
  geo[TSR_OCL_GEO_BIAS_STRIDE] = cv->bias_stride;
  geo[TSR_OCL_GEO_GROUPS] = cv->groups;
  geo[TSR_OCL_GEO_NIMG] = cv->n;
  geo[TSR_OCL_GEO_SPLITS] = 1;
}

// A channels-last operand (unit stride on C) is walked along channels.
static int channels_last(const int64_t *strides) {
  return strides[1] == 1 && strides[3] != 1;
}

static tsr_status conv_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  const tsr_cpu_conv_plan *cv = &plan->ref->u.conv;
  const tsr_plugin_plan *ref = plan->ref;
  conv_state *st = (conv_state *)plan->state;
  memset(st, 0, sizeof(*st));
  st->activation = cv->op == TSR_OP_CONV2D ? cv->activation : 0;
  st->has_bias = cv->has_bias;
  st->splits = 1;
  int64_t geo[TSR_OCL_GEO_COUNT];
  conv_geo_fill(cv, geo);
  const uint32_t elem = (uint32_t)cv->elem_size;
  tsr_ocl_gemm_problem p = {0, 0, 0, cv->groups, elem};
  tsr_ocl_gemm_extents ext;
  memset(&ext, 0, sizeof(ext));
  int32_t mode;
  const char *what;
  switch (cv->op) {
    case TSR_OP_CONV2D:  // A = w, B = x, C = y
      mode = TSR_OCL_GEMM_CONV_FORWARD;
      what = "conv2d";
      p.m = cv->og;
      p.n = cv->n * cv->cols;
      p.k = cv->cg * cv->kh * cv->kw;
      geo[TSR_OCL_GEO_A_KFAST] = 1;
      geo[TSR_OCL_GEO_B_NFAST] = !channels_last(cv->xs);
      ext.bytes[0] = ref->operands[1].extent_bytes;
      ext.bytes[1] = ref->operands[0].extent_bytes;
      ext.bytes[2] = ref->operands[ref->num_inputs].extent_bytes;
      break;
    case TSR_OP_CONV2D_BACKWARD_DATA:  // A = w^T, B = dy, C = dx
      mode = TSR_OCL_GEMM_CONV_BACKWARD_DATA;
      what = "conv2d-bwd-data";
      p.m = cv->cg;
      p.n = cv->n * cv->h * cv->w;
      p.k = cv->og * cv->kh * cv->kw;
      geo[TSR_OCL_GEO_A_KFAST] = 1;
      geo[TSR_OCL_GEO_B_NFAST] = !channels_last(cv->ys);
      ext.bytes[0] = ref->operands[1].extent_bytes;
      ext.bytes[1] = ref->operands[0].extent_bytes;
      ext.bytes[2] = ref->operands[2].extent_bytes;
      break;
    default:  // backward filter: A = dy, B = x^T, C = dw
      mode = TSR_OCL_GEMM_CONV_BACKWARD_FILTER;
      what = "conv2d-bwd-filter";
      p.m = cv->og;
      p.n = cv->cg * cv->kh * cv->kw;
      p.k = cv->n * cv->cols;
      geo[TSR_OCL_GEO_A_KFAST] = !channels_last(cv->ys);
      geo[TSR_OCL_GEO_B_NFAST] = channels_last(cv->xs);
      ext.bytes[0] = ref->operands[0].extent_bytes;
      ext.bytes[1] = ref->operands[1].extent_bytes;
      ext.bytes[2] = ref->operands[2].extent_bytes;
      break;
  }
  geo[TSR_OCL_GEO_M] = p.m;
  geo[TSR_OCL_GEO_N] = p.n;
  geo[TSR_OCL_GEO_K] = p.k;
  geo[TSR_OCL_GEO_KCHUNK] = p.k;
  char key[160];
  snprintf(key, sizeof(key),
           "%s %s n%lld c%lld h%lld w%lld o%lld k%lldx%lld s%lldx%lld "
           "p%lldx%lld d%lldx%lld g%lld %s",
           what, elem == 8 ? "f64" : "f32", (long long)cv->n, (long long)cv->c, (long long)cv->h,
           (long long)cv->w, (long long)cv->o, (long long)cv->kh, (long long)cv->kw,
           (long long)cv->stride[0], (long long)cv->stride[1], (long long)cv->pad[0],
           (long long)cv->pad[1], (long long)cv->dilation[0], (long long)cv->dilation[1],
           (long long)cv->groups, channels_last(cv->xs) ? "nhwc" : "nchw");
  int tuned = 0;
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_gemm_create(plan, mode, geo, &p, &ext, key, &st->gemm, &tuned));
  tsr_ocl_gemm_engine_name(plan, what, &st->gemm, tuned);
  plan->info_flags = tuned ? 0 : TSR_PLAN_INFO_DETERMINISTIC;
  // A packed GEMM's operands (after the filter gradient's partial sums).
  plan->workspace_bytes = st->gemm.workspace_bytes;
  if (mode != TSR_OCL_GEMM_CONV_BACKWARD_FILTER)
    return TSR_OK;

  // The filter gradient's second passes.
  tsr_ocl_device *device = plan->device;
  const char *type = tsr_ocl_type_option(cv->dtype);
  tsr_status status = TSR_OK;
  st->splits = geo[TSR_OCL_GEO_SPLITS];
  if (st->splits > 1) {
    const uint64_t part =
        (uint64_t)st->splits * (uint64_t)cv->groups * (uint64_t)p.m * (uint64_t)p.n * elem;
    st->part_bytes = part;
    plan->workspace_bytes = part + st->gemm.workspace_bytes;
    char options[64];
    snprintf(options, sizeof(options), "%s -DRED_WG=64", type);
    status = tsr_ocl_kernel_create(device, "conv", options, "conv_filter_reduce", &st->reduce);
    if (status == TSR_OK) {
      const size_t total = (size_t)(cv->groups * p.m * p.n);
      st->reduce_local = tsr_ocl_pow2_floor(256, st->reduce->max_work_group_size);
      st->reduce_global = tsr_ocl_round_up(total, st->reduce_local);
    }
  }
  if (status == TSR_OK && cv->has_bias) {
    // The reduction's work-group is a compile-time size: the largest power
    // of two up to 256 the kernel admits on this device.
    size_t wg = tsr_ocl_pow2_floor(256, device->max_work_group_size);
    for (;;) {
      char options[64];
      snprintf(options, sizeof(options), "%s -DRED_WG=%zu", type, wg);
      status = tsr_ocl_kernel_create(device, "conv", options, "conv_dbias", &st->dbias);
      if (status != TSR_OK || st->dbias->max_work_group_size >= wg || wg == 1)
        break;
      wg = tsr_ocl_pow2_floor(st->dbias->max_work_group_size, wg);
      tsr_ocl_kernel_destroy(st->dbias);
      st->dbias = NULL;
    }
    st->dbias_local = wg;
    st->dbias_global = (size_t)cv->o * wg;
  }
  if (status != TSR_OK) {
    tsr_ocl_kernel_destroy(st->reduce);
    tsr_ocl_kernel_destroy(st->dbias);
    st->reduce = st->dbias = NULL;
    tsr_ocl_gemm_release(&st->gemm);
  }
  return status;
}

static tsr_status conv_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const conv_state *st = (const conv_state *)plan->state;
  const tsr_cpu_conv_plan *cv = &plan->ref->u.conv;
  const int32_t out = exec->num_inputs;
  switch (cv->op) {
    case TSR_OP_CONV2D:
      if (exec->mem[out] == NULL)
        return TSR_OK;
      return tsr_ocl_gemm_launch(exec, &st->gemm, exec->mem[1], exec->offset[1], exec->mem[0],
                                 exec->offset[0], exec->mem[out], exec->offset[out],
                                 st->has_bias ? exec->mem[2] : NULL,
                                 st->has_bias ? exec->offset[2] : 0, 1.0, 0.0, st->activation,
                                 st->has_bias, exec->workspace, exec->workspace_offset);
    case TSR_OP_CONV2D_BACKWARD_DATA:
      if (exec->mem[out] == NULL)
        return TSR_OK;
      return tsr_ocl_gemm_launch(exec, &st->gemm, exec->mem[1], exec->offset[1], exec->mem[0],
                                 exec->offset[0], exec->mem[out], exec->offset[out], NULL, 0, 1.0,
                                 0.0, 0, 0, exec->workspace, exec->workspace_offset);
    default:
      break;
  }
  // Backward filter: dw (through the partial sums when split), then dbias.
  if (exec->mem[out] != NULL) {
    if (st->splits > 1) {
      const uint64_t part_off = exec->workspace_offset / (uint64_t)cv->elem_size;
      TSR_OCL_RETURN_IF_ERROR(
          tsr_ocl_gemm_launch(exec, &st->gemm, exec->mem[0], exec->offset[0], exec->mem[1],
                              exec->offset[1], exec->workspace, part_off, NULL, 0, 1.0, 0.0, 0, 0,
                              exec->workspace, exec->workspace_offset + st->part_bytes));
      cl_ulong offs[2] = {part_off, exec->offset[out]};
      const tsr_ocl_arg args[5] = {TSR_OCL_ARG(exec->workspace), TSR_OCL_ARG(offs[0]),
                                   TSR_OCL_ARG(exec->mem[out]), TSR_OCL_ARG(offs[1]),
                                   TSR_OCL_ARG(st->gemm.geo)};
      TSR_OCL_RETURN_IF_ERROR(
          tsr_ocl_launch(exec, st->reduce, 1, &st->reduce_global, &st->reduce_local, 5, args));
    } else {
      TSR_OCL_RETURN_IF_ERROR(tsr_ocl_gemm_launch(exec, &st->gemm, exec->mem[0], exec->offset[0],
                                                  exec->mem[1], exec->offset[1], exec->mem[out],
                                                  exec->offset[out], NULL, 0, 1.0, 0.0, 0, 0,
                                                  exec->workspace, exec->workspace_offset));
    }
  }
  if (st->has_bias && exec->mem[out + 1] != NULL) {
    cl_ulong offs[2] = {exec->offset[0], exec->offset[out + 1]};
    const tsr_ocl_arg args[5] = {TSR_OCL_ARG(exec->mem[0]), TSR_OCL_ARG(offs[0]),
                                 TSR_OCL_ARG(exec->mem[out + 1]), TSR_OCL_ARG(offs[1]),
                                 TSR_OCL_ARG(st->gemm.geo)};
    TSR_OCL_RETURN_IF_ERROR(
        tsr_ocl_launch(exec, st->dbias, 1, &st->dbias_global, &st->dbias_local, 5, args));
  }
  return TSR_OK;
}

static void conv_fini(tsr_ocl_plan *plan) {
  conv_state *st = (conv_state *)plan->state;
  tsr_ocl_kernel_destroy(st->reduce);
  tsr_ocl_kernel_destroy(st->dbias);
  st->reduce = st->dbias = NULL;
  tsr_ocl_gemm_release(&st->gemm);
}

const tsr_ocl_op_impl tsr_ocl_conv2d_impl = {NULL, conv_init, conv_execute, conv_fini};
const tsr_ocl_op_impl tsr_ocl_conv2d_backward_data_impl = {NULL, conv_init, conv_execute,
                                                           conv_fini};
const tsr_ocl_op_impl tsr_ocl_conv2d_backward_filter_impl = {NULL, conv_init, conv_execute,
                                                             conv_fini};
