// CONCAT, PAD, GATHER and SCATTER_ADD (kernels/data.cl): one work-item per
// output element. The moves copy element bits, so one program per element
// size serves every dtype; SCATTER_ADD adds in the dtype. GATHER and
// SCATTER_ADD check their index on the device (index_check) and report an
// index out of range through the family's error watch
// (ops_reduce_internal.h).
#include <stdio.h>
#include <string.h>

#include "ocl.h"
#include "ops_reduce_internal.h"
#include "tsr_cpu/cpu_kernels.h"

#define DATA_SHAPE_LONGS 25
#define PAD_SHAPE_LONGS 41
#define DATA_INFO_BYTES 64

static tsr_status data_kernel_create(tsr_ocl_device *device, uint32_t elem_size,
                                     const char *kernel_name, tsr_ocl_kernel **out_kernel) {
  char options[32];
  snprintf(options, sizeof(options), "-DTSR_ES=%u", (unsigned)elem_size);
  return tsr_ocl_kernel_create(device, "data", options, kernel_name, out_kernel);
}

// One work-item per element, in groups of 64.
static void data_range(uint64_t count, size_t *out_global, size_t *out_local) {
  *out_local = 64;
  *out_global = tsr_ocl_round_up((size_t)count, 64);
}

// [rank, sizes, a's strides, b's strides] over |sizes|.
static void block_pack(int32_t rank, const int64_t *sizes, const int64_t *a, const int64_t *b,
                       int64_t *longs) {
  memset(longs, 0, DATA_SHAPE_LONGS * sizeof(int64_t));
  longs[0] = rank;
  for (int32_t d = 0; d < rank; ++d) {
    longs[1 + d] = sizes[d];
    longs[9 + d] = a[d];
    longs[17 + d] = b[d];
  }
}

static tsr_status data_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                                const struct tsr_plugin_plan *ref_plan) {
  (void)device;
  (void)signature;
  (void)ref_plan;
  // Moves copy bits: every dtype plan.c lets through (it refuses the half
  // types and float64 without fp64) has a kernel.
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// CONCAT: one copy_block launch per non-empty input.

typedef struct tsr_ocl_concat_state {
  tsr_ocl_kernel *kernel;
  cl_mem shapes;  // DATA_SHAPE_LONGS per input
  int32_t inputs;
  uint64_t counts[TSR_MAX_OPERANDS];
  uint64_t out_offsets[TSR_MAX_OPERANDS];  // elements: o_i * out's stride on the axis
} tsr_ocl_concat_state;
_Static_assert(sizeof(tsr_ocl_concat_state) <= TSR_OCL_PLAN_STATE_BYTES, "concat state");

static void concat_fini(tsr_ocl_plan *plan) {
  tsr_ocl_concat_state *st = (tsr_ocl_concat_state *)plan->state;
  tsr_ocl_kernel_destroy(st->kernel);
  if (st->shapes != NULL)
    clReleaseMemObject(st->shapes);
  memset(st, 0, sizeof(*st));
}

static tsr_status concat_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  tsr_ocl_concat_state *st = (tsr_ocl_concat_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_plugin_plan *ref = plan->ref;
  const tsr_cpu_operand *out = &ref->operands[ref->num_inputs];
  const int32_t axis = ref->u.concat.axis;
  st->inputs = ref->num_inputs;
  int64_t longs[TSR_MAX_OPERANDS * DATA_SHAPE_LONGS];
  int64_t along = 0;
  for (int32_t i = 0; i < st->inputs; ++i) {
    const tsr_cpu_operand *x = &ref->operands[i];
    block_pack(x->rank, x->sizes, x->strides, out->strides, longs + i * DATA_SHAPE_LONGS);
    st->counts[i] = (uint64_t)x->numel;
    st->out_offsets[i] = (uint64_t)(along * out->strides[axis]);
    along += x->sizes[axis];
  }
  tsr_status status = data_kernel_create(plan->device, out->elem_size, "copy_block", &st->kernel);
  if (status == TSR_OK) {
    status = tsr_ocl_red_longs_create(plan->device, longs, (size_t)st->inputs * DATA_SHAPE_LONGS,
                                      &st->shapes);
  }
  if (status != TSR_OK) {
    concat_fini(plan);
    return status;
  }
  snprintf(plan->engine, sizeof(plan->engine), "opencl:concat");
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status concat_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_concat_state *st = (const tsr_ocl_concat_state *)plan->state;
  cl_mem out = exec->mem[st->inputs];
  for (int32_t i = 0; i < st->inputs; ++i) {
    if (st->counts[i] == 0)
      continue;
    cl_mem x = exec->mem[i];
    cl_ulong x_off = exec->offset[i], out_off = exec->offset[st->inputs] + st->out_offsets[i];
    cl_ulong count = st->counts[i], which = (cl_ulong)i;
    tsr_ocl_arg args[] = {TSR_OCL_ARG(x),       TSR_OCL_ARG(x_off),      TSR_OCL_ARG(out),
                          TSR_OCL_ARG(out_off), TSR_OCL_ARG(st->shapes), TSR_OCL_ARG(which),
                          TSR_OCL_ARG(count)};
    size_t global, local;
    data_range(count, &global, &local);
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->kernel, 1, &global, &local, 7, args));
  }
  return TSR_OK;
}

const tsr_ocl_op_impl tsr_ocl_concat_impl = {data_supports, concat_init, concat_execute,
                                             concat_fini};

// ---------------------------------------------------------------------------
// PAD.

typedef struct tsr_ocl_pad_state {
  tsr_ocl_kernel *kernel;
  cl_mem shape;  // PAD_SHAPE_LONGS
  uint64_t count;
  int32_t mode;
  uint64_t value_bits;
} tsr_ocl_pad_state;
_Static_assert(sizeof(tsr_ocl_pad_state) <= TSR_OCL_PLAN_STATE_BYTES, "pad state");

static void pad_fini(tsr_ocl_plan *plan) {
  tsr_ocl_pad_state *st = (tsr_ocl_pad_state *)plan->state;
  tsr_ocl_kernel_destroy(st->kernel);
  if (st->shape != NULL)
    clReleaseMemObject(st->shape);
  memset(st, 0, sizeof(*st));
}

static tsr_status pad_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  tsr_ocl_pad_state *st = (tsr_ocl_pad_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_pad_plan *p = &plan->ref->u.pad;
  const tsr_cpu_operand *x = &plan->ref->operands[0];
  const tsr_cpu_operand *out = &plan->ref->operands[1];
  st->count = (uint64_t)out->numel;
  st->mode = p->mode;
  st->value_bits = p->value_bits;
  int64_t longs[PAD_SHAPE_LONGS];
  memset(longs, 0, sizeof(longs));
  longs[0] = out->rank;
  for (int32_t d = 0; d < out->rank; ++d) {
    longs[1 + d] = out->sizes[d];
    longs[9 + d] = out->strides[d];
    longs[17 + d] = x->sizes[d];
    longs[25 + d] = x->strides[d];
    longs[33 + d] = p->pad_before[d];
  }
  tsr_status status = data_kernel_create(plan->device, out->elem_size, "pad", &st->kernel);
  if (status == TSR_OK) {
    status = tsr_ocl_red_longs_create(plan->device, longs, PAD_SHAPE_LONGS, &st->shape);
  }
  if (status != TSR_OK) {
    pad_fini(plan);
    return status;
  }
  static const char *const modes[] = {"constant", "reflect", "replicate"};
  snprintf(plan->engine, sizeof(plan->engine), "opencl:pad-%s",
           st->mode >= 0 && st->mode < 3 ? modes[st->mode] : "?");
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status pad_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_pad_state *st = (const tsr_ocl_pad_state *)plan->state;
  if (st->count == 0)
    return TSR_OK;
  cl_mem x = exec->mem[0], out = exec->mem[1];
  // An empty x (all padding, CONSTANT) is never read: its mem is NULL, a
  // valid NULL buffer argument.
  cl_ulong x_off = exec->offset[0], out_off = exec->offset[1], count = st->count;
  cl_int mode = st->mode;
  cl_ulong bits = st->value_bits;
  tsr_ocl_arg args[] = {TSR_OCL_ARG(x),       TSR_OCL_ARG(x_off),     TSR_OCL_ARG(out),
                        TSR_OCL_ARG(out_off), TSR_OCL_ARG(st->shape), TSR_OCL_ARG(count),
                        TSR_OCL_ARG(mode),    TSR_OCL_ARG(bits)};
  size_t global, local;
  data_range(count, &global, &local);
  return tsr_ocl_launch(exec, st->kernel, 1, &global, &local, 8, args);
}

const tsr_ocl_op_impl tsr_ocl_pad_impl = {data_supports, pad_init, pad_execute, pad_fini};

// ---------------------------------------------------------------------------
// GATHER and SCATTER_ADD: index_check (one work-group), then the op, then
// the watch's read of the check.

typedef struct tsr_ocl_index_state {
  tsr_ocl_kernel *check;
  tsr_ocl_kernel *kernel;
  tsr_ocl_red_error_watch *watch;
  cl_mem shape;  // DATA_SHAPE_LONGS: out's sizes and strides, x's (src's) strides
  int scatter;
  size_t local_check;
  uint64_t count, k;
  int64_t size;
  int32_t axis;
  int32_t is64;
  uint64_t index_stride;
} tsr_ocl_index_state;
_Static_assert(sizeof(tsr_ocl_index_state) <= TSR_OCL_PLAN_STATE_BYTES, "index state");

static tsr_status scatter_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                                   const struct tsr_plugin_plan *ref_plan) {
  (void)signature;
  return tsr_ocl_red_dtype_check(device, "scatter_add", ref_plan->operands[0].dtype, 1);
}

static void index_fini(tsr_ocl_plan *plan) {
  tsr_ocl_index_state *st = (tsr_ocl_index_state *)plan->state;
  tsr_ocl_kernel_destroy(st->check);
  tsr_ocl_kernel_destroy(st->kernel);
  tsr_ocl_red_error_watch_destroy(st->watch);
  if (st->shape != NULL)
    clReleaseMemObject(st->shape);
  memset(st, 0, sizeof(*st));
}

static tsr_status index_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  tsr_ocl_index_state *st = (tsr_ocl_index_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_index_plan *ix = &plan->ref->u.index;
  const tsr_cpu_operand *data = &plan->ref->operands[0];
  const tsr_cpu_operand *out = &plan->ref->operands[2];
  st->scatter = signature->op == TSR_OP_SCATTER_ADD;
  st->count = (uint64_t)out->numel;
  st->k = (uint64_t)ix->k;
  st->size = ix->size;
  st->axis = ix->axis;
  st->is64 = ix->index_is_i64;
  st->index_stride = (uint64_t)ix->index_stride;
  const char *op = st->scatter ? "scatter_add" : "gather";
  int64_t longs[DATA_SHAPE_LONGS];
  block_pack(out->rank, out->sizes, out->strides, data->strides, longs);
  tsr_status status;
  if (st->scatter) {
    status =
        tsr_ocl_red_kernel_create(plan->device, "data", out->dtype, "scatter_add", &st->kernel);
    if (status == TSR_OK) {
      status =
          tsr_ocl_red_kernel_create(plan->device, "data", out->dtype, "index_check", &st->check);
    }
  } else {
    status = data_kernel_create(plan->device, out->elem_size, "gather", &st->kernel);
    if (status == TSR_OK) {
      status = data_kernel_create(plan->device, out->elem_size, "index_check", &st->check);
    }
  }
  if (status == TSR_OK) {
    status = tsr_ocl_red_longs_create(plan->device, longs, DATA_SHAPE_LONGS, &st->shape);
  }
  if (status == TSR_OK)
    status = tsr_ocl_red_error_watch_create(op, &st->watch);
  if (status != TSR_OK) {
    index_fini(plan);
    return status;
  }
  st->local_check = tsr_ocl_red_local_fit(tsr_ocl_red_local_size(plan->device, st->check), st->k);
  plan->workspace_bytes = DATA_INFO_BYTES;
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s", op);
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status index_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_index_state *st = (const tsr_ocl_index_state *)plan->state;
  // Nothing to write (and, with K = 0, no index to check).
  if (st->count == 0 || st->k == 0)
    return TSR_OK;
  cl_mem data = exec->mem[0], index = exec->mem[1], out = exec->mem[2], ws = exec->workspace;
  cl_ulong data_off = exec->offset[0], index_off = exec->offset[1], out_off = exec->offset[2];
  cl_ulong index_stride = st->index_stride, k = st->k, count = st->count;
  cl_ulong info_off = exec->workspace_offset / 8;
  cl_int is64 = st->is64, axis = st->axis;
  cl_long size = st->size;
  size_t local = st->local_check, global = local;
  tsr_ocl_arg check[] = {TSR_OCL_ARG(index), TSR_OCL_ARG(index_off), TSR_OCL_ARG(index_stride),
                         TSR_OCL_ARG(is64),  TSR_OCL_ARG(k),         TSR_OCL_ARG(size),
                         TSR_OCL_ARG(ws),    TSR_OCL_ARG(info_off),  TSR_OCL_LOCAL(local * 8)};
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->check, 1, &global, &local, 9, check));
  tsr_ocl_arg args[] = {
      TSR_OCL_ARG(data),         TSR_OCL_ARG(data_off),
      TSR_OCL_ARG(index),        TSR_OCL_ARG(index_off),
      TSR_OCL_ARG(index_stride), TSR_OCL_ARG(is64),
      TSR_OCL_ARG(out),          TSR_OCL_ARG(out_off),
      TSR_OCL_ARG(st->shape),    TSR_OCL_ARG(count),
      TSR_OCL_ARG(axis),         st->scatter ? TSR_OCL_ARG(k) : TSR_OCL_ARG(size)};
  data_range(count, &global, &local);
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->kernel, 1, &global, &local, 12, args));
  return tsr_ocl_red_error_check(st->watch, exec, 0);
}

const tsr_ocl_op_impl tsr_ocl_gather_impl = {data_supports, index_init, index_execute, index_fini};
const tsr_ocl_op_impl tsr_ocl_scatter_add_impl = {scatter_supports, index_init, index_execute,
                                                  index_fini};
