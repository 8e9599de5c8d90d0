// POOL2D and POOL2D_BACKWARD (MAX and AVG) on OpenCL (kernels/pool.cl).
//
// The forward is one work-item per output element. The backward gathers
// (one work-item per dx element summing the windows that cover it), so it is
// deterministic without float atomics; for MAX a first pass marks the planes
// whose indices leave their own windows, which the gather then scans whole.
// Geometry and strides come from ref's analysis in one constant array.
//
// MAX backward's workspace: the error info block (4 longs) that ops_reduce.c's
// error watch reads, each plane's first out-of-range index position (longs),
// then each plane's flags (ints).
#include <stdio.h>
#include <string.h>

#include "ocl.h"
#include "ocl_matmul.h"
#include "ops_reduce_internal.h"  // the data-dependent error watch
#include "tsr_cpu/cpu_kernels.h"                 // struct tsr_plugin_plan, tsr_cpu_pool_plan

typedef struct pool_state {
  tsr_ocl_kernel *main;   // pool_forward or pool_backward
  tsr_ocl_kernel *check;  // MAX backward: pool_max_check
  tsr_ocl_kernel *info;   // MAX backward: pool_max_error_info
  tsr_ocl_red_error_watch *watch;
  cl_mem geo;
  uint64_t planes;
  size_t global, local;
  size_t check_global, check_local;
  int32_t is_max;
} pool_state;
_Static_assert(sizeof(pool_state) <= TSR_OCL_PLAN_STATE_BYTES, "pool state fits the plan");

static void pool_fini(tsr_ocl_plan *plan) {
  pool_state *st = (pool_state *)plan->state;
  tsr_ocl_kernel_destroy(st->main);
  tsr_ocl_kernel_destroy(st->check);
  tsr_ocl_kernel_destroy(st->info);
  tsr_ocl_red_error_watch_destroy(st->watch);
  if (st->geo != NULL)
    clReleaseMemObject(st->geo);
  st->main = st->check = st->info = NULL;
  st->watch = NULL;
  st->geo = NULL;
}

static tsr_status pool_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  const tsr_cpu_pool_plan *pl = &plan->ref->u.pool;
  pool_state *st = (pool_state *)plan->state;
  memset(st, 0, sizeof(*st));
  st->is_max = pl->kind == TSR_POOL_MAX;
  int64_t geo[TSR_OCL_POOL_COUNT];
  memset(geo, 0, sizeof(geo));
  geo[TSR_OCL_POOL_N] = pl->n;
  geo[TSR_OCL_POOL_C] = pl->c;
  geo[TSR_OCL_POOL_H] = pl->h;
  geo[TSR_OCL_POOL_W] = pl->w;
  geo[TSR_OCL_POOL_OH] = pl->oh;
  geo[TSR_OCL_POOL_OW] = pl->ow;
  for (int d = 0; d < 2; ++d) {
    geo[TSR_OCL_POOL_K0 + d] = pl->kernel[d];
    geo[TSR_OCL_POOL_S0 + d] = pl->stride[d];
    geo[TSR_OCL_POOL_PB0 + d] = pl->pad_before[d];
    geo[TSR_OCL_POOL_PA0 + d] = pl->pad_after[d];
    geo[TSR_OCL_POOL_D0 + d] = pl->dilation[d];
  }
  for (int d = 0; d < 4; ++d) {
    geo[TSR_OCL_POOL_XS + d] = pl->xs[d];
    geo[TSR_OCL_POOL_YS + d] = pl->ys[d];
    geo[TSR_OCL_POOL_IS + d] = pl->is[d];
  }
  geo[TSR_OCL_POOL_CIP] = pl->count_include_pad;
  tsr_ocl_device *device = plan->device;
  const int forward = pl->op == TSR_OP_POOL2D;
  const char *type = tsr_ocl_type_option(pl->dtype);
  tsr_status status = tsr_ocl_const_buffer_create(device, geo, sizeof(geo), &st->geo);
  if (status == TSR_OK) {
    char options[64];
    snprintf(options, sizeof(options), "%s -DCHK_WG=%zu", type,
             tsr_ocl_pow2_floor(64, device->max_work_group_size));
    status = tsr_ocl_kernel_create(device, "pool", options,
                                   forward ? "pool_forward" : "pool_backward", &st->main);
    if (status == TSR_OK) {
      // One work-item per output row (dx row for the backward).
      const int64_t total = forward ? pl->n * pl->c * pl->oh : pl->n * pl->c * pl->h;
      st->local = tsr_ocl_pow2_floor(256, st->main->max_work_group_size);
      st->global = tsr_ocl_round_up((size_t)total, st->local);
    }
  }
  if (status == TSR_OK && !forward && st->is_max) {
    size_t wg = tsr_ocl_pow2_floor(64, device->max_work_group_size);
    for (;;) {
      char options[64];
      snprintf(options, sizeof(options), "%s -DCHK_WG=%zu", type, wg);
      status = tsr_ocl_kernel_create(device, "pool", options, "pool_max_check", &st->check);
      if (status != TSR_OK || st->check->max_work_group_size >= wg || wg == 1)
        break;
      wg = tsr_ocl_pow2_floor(st->check->max_work_group_size, wg);
      tsr_ocl_kernel_destroy(st->check);
      st->check = NULL;
    }
    st->check_local = wg;
    st->check_global = (size_t)(pl->n * pl->c) * wg;
    st->planes = (uint64_t)(pl->n * pl->c);
    plan->workspace_bytes = 4 * sizeof(cl_long) + st->planes * (sizeof(cl_long) + sizeof(cl_int));
    if (status == TSR_OK) {
      // The same options as the check's: one program.
      char options[64];
      snprintf(options, sizeof(options), "%s -DCHK_WG=%zu", type, wg);
      status = tsr_ocl_kernel_create(device, "pool", options, "pool_max_error_info", &st->info);
    }
    if (status == TSR_OK)
      status = tsr_ocl_red_error_watch_create("pool2d_backward", &st->watch);
  }
  if (status != TSR_OK) {
    pool_fini(plan);
    return status;
  }
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s-%s-%s", forward ? "pool2d" : "pool2d-bwd",
           st->is_max ? "max" : "avg", forward ? "direct" : "gather");
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status pool_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const pool_state *st = (const pool_state *)plan->state;
  const int32_t out = exec->num_inputs;
  if (exec->mem[out] == NULL || st->global == 0)
    return TSR_OK;  // empty output
  const cl_int is_max = st->is_max;
  if (plan->op == TSR_OP_POOL2D) {
    // (x) -> (y [, indices])
    cl_mem indices = st->is_max ? exec->mem[out + 1] : NULL;
    cl_ulong offs[3] = {exec->offset[0], exec->offset[out], st->is_max ? exec->offset[out + 1] : 0};
    const tsr_ocl_arg args[8] = {TSR_OCL_ARG(exec->mem[0]),   TSR_OCL_ARG(offs[0]),
                                 TSR_OCL_ARG(exec->mem[out]), TSR_OCL_ARG(offs[1]),
                                 TSR_OCL_ARG(indices),        TSR_OCL_ARG(offs[2]),
                                 TSR_OCL_ARG(st->geo),        TSR_OCL_ARG(is_max)};
    return tsr_ocl_launch(exec, st->main, 1, &st->global, &st->local, 8, args);
  }
  // MAX: (dy, indices) -> (dx); AVG: (dy) -> (dx).
  cl_mem indices = st->is_max ? exec->mem[1] : NULL;
  cl_mem ws = st->is_max ? exec->workspace : NULL;
  const uint64_t ws_long = exec->workspace_offset / sizeof(cl_long);
  cl_ulong offs[6] = {
      exec->offset[0],
      st->is_max ? exec->offset[1] : 0,
      st->is_max ? (exec->workspace_offset + 4 * sizeof(cl_long) + st->planes * sizeof(cl_long)) /
                       sizeof(cl_int)
                 : 0,
      exec->offset[out],
      ws_long + 4,  // first bad positions
      ws_long};     // info block
  if (st->is_max) {
    const tsr_ocl_arg check_args[7] = {
        TSR_OCL_ARG(indices), TSR_OCL_ARG(offs[1]), TSR_OCL_ARG(ws),     TSR_OCL_ARG(offs[2]),
        TSR_OCL_ARG(ws),      TSR_OCL_ARG(offs[4]), TSR_OCL_ARG(st->geo)};
    TSR_OCL_RETURN_IF_ERROR(
        tsr_ocl_launch(exec, st->check, 1, &st->check_global, &st->check_local, 7, check_args));
  }
  const tsr_ocl_arg args[10] = {
      TSR_OCL_ARG(exec->mem[0]),   TSR_OCL_ARG(offs[0]), TSR_OCL_ARG(indices),
      TSR_OCL_ARG(offs[1]),        TSR_OCL_ARG(ws),      TSR_OCL_ARG(offs[2]),
      TSR_OCL_ARG(exec->mem[out]), TSR_OCL_ARG(offs[3]), TSR_OCL_ARG(st->geo),
      TSR_OCL_ARG(is_max)};
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->main, 1, &st->global, &st->local, 10, args));
  if (!st->is_max)
    return TSR_OK;
  const size_t one = 1;
  const tsr_ocl_arg info_args[7] = {
      TSR_OCL_ARG(indices), TSR_OCL_ARG(offs[1]), TSR_OCL_ARG(ws),     TSR_OCL_ARG(offs[4]),
      TSR_OCL_ARG(ws),      TSR_OCL_ARG(offs[5]), TSR_OCL_ARG(st->geo)};
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->info, 1, &one, &one, 7, info_args));
  return tsr_ocl_red_error_check(st->watch, exec, 0);
}

const tsr_ocl_op_impl tsr_ocl_pool2d_impl = {NULL, pool_init, pool_execute, pool_fini};
const tsr_ocl_op_impl tsr_ocl_pool2d_backward_impl = {NULL, pool_init, pool_execute, pool_fini};
