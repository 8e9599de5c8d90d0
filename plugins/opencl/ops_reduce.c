// The reduce family's table, REDUCE and ARG_REDUCE, and the helpers the
// family's files share (ops_reduce_internal.h).
//
// REDUCE sees x as ref's kept x reduced dimensions (plugins/cpu/reduce.h).
// Pass 1 folds fixed-length segments of each output's reduced range, either
// with a work-group and a tree in local memory ("wg": reduced elements close
// in memory) or with one work-item per (output, segment) ("col": the kept
// dimension is the contiguous one, as for a bias gradient [64, 512] ->
// [1, 512], so neighbouring work-items read neighbouring elements). When an
// output has several segments, pass 2 folds its partials, in segment order,
// from the workspace. Segment lengths are fixed at plan time and nothing is
// atomic, so a plan's results are the same on every run.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocl.h"
#include "ops_reduce_internal.h"
#include "tsr_cpu/cpu_kernels.h"

// ---------------------------------------------------------------------------
// Shared helpers.

tsr_status tsr_ocl_red_dtype_check(const tsr_ocl_device *device, const char *op, tsr_dtype_t dtype,
                                   int ints) {
  if (dtype == TSR_FLOAT32)
    return TSR_OK;
  if (dtype == TSR_FLOAT64) {
    if (device->caps & TSR_OCL_CAP_FP64)
      return TSR_OK;
    return tsr_ocl_error(TSR_UNSUPPORTED, "opencl: %s of float64 needs cl_khr_fp64, which %s lacks",
                         op, device->name);
  }
  if (ints && (dtype == TSR_INT32 || dtype == TSR_INT64))
    return TSR_OK;
  return tsr_ocl_error(TSR_UNSUPPORTED, "opencl: %s has no kernel for dtype %d (it takes %s)", op,
                       (int)dtype,
                       ints ? "float32, float64, int32 and int64" : "float32 and float64");
}

tsr_status tsr_ocl_red_kernel_create(tsr_ocl_device *device, const char *source, tsr_dtype_t dtype,
                                     const char *kernel_name, tsr_ocl_kernel **out_kernel) {
  char options[32];
  snprintf(options, sizeof(options), "-DTSR_DT=%d", (int)dtype);
  return tsr_ocl_kernel_create(device, source, options, kernel_name, out_kernel);
}

size_t tsr_ocl_red_local_size(const tsr_ocl_device *device, const tsr_ocl_kernel *kernel) {
  size_t limit = TSR_OCL_RED_LOCAL_MAX;
  if (kernel->max_work_group_size > 0 && kernel->max_work_group_size < limit) {
    limit = kernel->max_work_group_size;
  }
  if (device->max_work_group_size > 0 && device->max_work_group_size < limit) {
    limit = device->max_work_group_size;
  }
  if (device->max_work_item_sizes[0] > 0 && device->max_work_item_sizes[0] < limit) {
    limit = device->max_work_item_sizes[0];
  }
  size_t local = 1;
  while (local * 2 <= limit) local *= 2;
  return local;
}

tsr_status tsr_ocl_red_longs_create(tsr_ocl_device *device, const int64_t *values, size_t count,
                                    cl_mem *out_mem) {
  return tsr_ocl_const_buffer_create(device, values, count * sizeof(int64_t), out_mem);
}

void tsr_ocl_red_groups_pack(const tsr_cpu_groups *g, const int64_t *elem_sizes,
                             int64_t *out_longs) {
  memset(out_longs, 0, TSR_OCL_GROUPS_LONGS * sizeof(int64_t));
  out_longs[0] = g->outer_ndim;
  out_longs[1] = g->inner_ndim;
  out_longs[2] = g->count;
  out_longs[3] = g->size;
  for (int32_t d = 0; d < TSR_MAX_RANK; ++d) {
    out_longs[4 + d] = g->outer_sizes[d];
    out_longs[12 + d] = g->inner_sizes[d];
    for (int32_t k = 0; k < g->num_operands && k < 8; ++k) {
      out_longs[20 + d * 8 + k] = elem_sizes[k] > 0 ? g->outer_strides[d][k] / elem_sizes[k] : 0;
      out_longs[84 + d * 8 + k] = elem_sizes[k] > 0 ? g->inner_strides[d][k] / elem_sizes[k] : 0;
    }
  }
}

// ---------------------------------------------------------------------------
// Data-dependent errors: a pool of host slots that non-blocking reads of the
// info block land in; the read's completion callback puts the error on the
// stream. 64 executions of one plan may be in flight with a pending check;
// past that, and on the NULL stream (which has no error word), the check
// reads synchronously and execute itself returns the error.

#define TSR_OCL_RED_WATCH_SLOTS 64

typedef struct tsr_ocl_red_watch_slot {
  int64_t info[3];
  tsr_ocl_stream *stream;
  struct tsr_ocl_red_error_watch *watch;
  uint32_t index;
} tsr_ocl_red_watch_slot;

struct tsr_ocl_red_error_watch {
  const char *op;
  atomic_ullong busy;  // bit i: slot i has a read in flight
  tsr_ocl_red_watch_slot slots[TSR_OCL_RED_WATCH_SLOTS];
};

tsr_status tsr_ocl_red_error_watch_create(const char *op, tsr_ocl_red_error_watch **out_watch) {
  tsr_ocl_red_error_watch *w = calloc(1, sizeof(*w));
  if (w == NULL)
    return tsr_ocl_error(TSR_OUT_OF_MEMORY, "%s: out of host memory", op);
  w->op = op;
  atomic_init(&w->busy, 0);
  for (uint32_t i = 0; i < TSR_OCL_RED_WATCH_SLOTS; ++i) {
    w->slots[i].watch = w;
    w->slots[i].index = i;
  }
  *out_watch = w;
  return TSR_OK;
}

// How long destroy waits for reads in flight before it gives up and leaks
// the watch rather than free memory a late callback would write.
#define TSR_OCL_RED_WATCH_WAIT_MS 10000

void tsr_ocl_red_error_watch_destroy(tsr_ocl_red_error_watch *watch) {
  if (watch == NULL)
    return;
  // A completion callback may still be about to run after the queue drained.
  for (int ms = 0; atomic_load(&watch->busy) != 0; ++ms) {
    if (ms == TSR_OCL_RED_WATCH_WAIT_MS) {
      tsr_ocl_log(TSR_LOG_WARNING,
                  "%s: plan destroyed with index checks still in flight; their slots are leaked",
                  watch->op);
      return;
    }
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  free(watch);
}

static void CL_CALLBACK tsr_ocl_red_watch_done(cl_event event, cl_int status, void *arg) {
  (void)event;
  tsr_ocl_red_watch_slot *slot = arg;
  tsr_ocl_red_error_watch *w = slot->watch;
  tsr_ocl_stream *stream = slot->stream;
  if (status == CL_COMPLETE && slot->info[1] >= 0) {
    tsr_ocl_stream_error_set(stream, TSR_INVALID_ARGUMENT,
                             "%s: the index or target at position %lld is %lld, outside its "
                             "valid range",
                             w->op, (long long)slot->info[1], (long long)slot->info[2]);
  } else if (status != CL_COMPLETE) {
    tsr_ocl_stream_error_set(stream, TSR_INTERNAL, "%s: reading the index check failed: %s (%d)",
                             w->op, tsr_ocl_cl_error_name(status), (int)status);
  }
  atomic_fetch_and(&w->busy, ~(1ull << slot->index));
  // Last: after this the stream may be synchronized and destroyed.
  atomic_fetch_sub(&stream->callbacks_pending, 1);
}

tsr_status tsr_ocl_red_error_check(tsr_ocl_red_error_watch *watch, const tsr_ocl_exec *exec,
                                   uint64_t info_offset) {
  const size_t bytes = 3 * sizeof(int64_t);
  const size_t offset = (size_t)(exec->workspace_offset + info_offset);
  int claimed = -1;
  if (exec->stream != NULL) {
    unsigned long long busy = atomic_load(&watch->busy);
    while (busy != ~0ull) {
      int i = __builtin_ctzll(~busy);
      if (atomic_compare_exchange_weak(&watch->busy, &busy, busy | (1ull << i))) {
        claimed = i;
        break;
      }
    }
  }
  if (claimed < 0) {
    int64_t info[3];
    cl_int err = clEnqueueReadBuffer(exec->queue, exec->workspace, CL_TRUE, offset, bytes, info, 0,
                                     NULL, NULL);
    if (err != CL_SUCCESS)
      return tsr_ocl_cl_error(err, "opencl: reading the index check");
    if (info[1] >= 0) {
      return tsr_ocl_error(
          TSR_INVALID_ARGUMENT,
          "%s: the index or target at position %lld is %lld, outside its valid range", watch->op,
          (long long)info[1], (long long)info[2]);
    }
    return TSR_OK;
  }
  tsr_ocl_red_watch_slot *slot = &watch->slots[claimed];
  slot->stream = exec->stream;
  cl_event done = NULL;
  cl_int err = clEnqueueReadBuffer(exec->queue, exec->workspace, CL_FALSE, offset, bytes,
                                   slot->info, 0, NULL, &done);
  if (err == CL_SUCCESS) {
    atomic_fetch_add(&exec->stream->callbacks_pending, 1);
    err = clSetEventCallback(done, CL_COMPLETE, tsr_ocl_red_watch_done, slot);
    if (err != CL_SUCCESS) {
      atomic_fetch_sub(&exec->stream->callbacks_pending, 1);
      clWaitForEvents(1, &done);
    }
    clReleaseEvent(done);
    // Submitted now, so the callback runs even if nobody waits on the queue.
    if (err == CL_SUCCESS)
      clFlush(exec->queue);
  }
  if (err != CL_SUCCESS) {
    atomic_fetch_and(&watch->busy, ~(1ull << claimed));
    return tsr_ocl_cl_error(err, "opencl: reading the index check");
  }
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// REDUCE.

#define RS_LONGS 44
// Work-items the column variant aims for: enough to fill a GPU.
#define TSR_OCL_RED_COL_ITEMS 65536
// Reduced elements a column work-item folds at least.
#define TSR_OCL_RED_COL_MIN_SEGMENT 64
// Work-groups the work-group variant aims for across outputs and segments.
#define TSR_OCL_RED_WG_GROUPS 1024
// Partial results above which pass 2 uses a work-group per output.
#define TSR_OCL_RED_FIN_WG 64

typedef struct tsr_ocl_reduce_state {
  tsr_ocl_kernel *pass1;
  tsr_ocl_kernel *pass2;  // NULL when every output has one segment
  cl_mem shape;
  int column;
  int fin_wg;
  size_t local1, local2;
  uint64_t out_count, segment, segments;
  uint32_t acc_size;  // bytes of a partial result
} tsr_ocl_reduce_state;
_Static_assert(sizeof(tsr_ocl_reduce_state) <= TSR_OCL_PLAN_STATE_BYTES, "reduce state");

static const char *const kReduceNames[TSR_REDUCE_FN_COUNT] = {"sum", "mean", "max", "min", "prod"};

static tsr_status reduce_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                                  const struct tsr_plugin_plan *ref_plan) {
  const tsr_reduce_attrs *attrs = signature->attrs;
  if (attrs->fn < 0 || attrs->fn >= TSR_REDUCE_FN_COUNT) {
    return tsr_ocl_error(TSR_UNSUPPORTED, "opencl: reduce fn %d has no kernel", (int)attrs->fn);
  }
  return tsr_ocl_red_dtype_check(device, "reduce", ref_plan->operands[0].dtype,
                                 attrs->fn != TSR_REDUCE_MEAN);
}

// Fills |longs| (RS_* of kernels/reduce.cl) from ref's |s|, in elements.
static void reduce_shape_pack(const tsr_cpu_reduce_shape *s, int64_t elem, int64_t *longs) {
  memset(longs, 0, RS_LONGS * sizeof(int64_t));
  longs[0] = s->kept_ndim;
  longs[1] = s->red_ndim;
  longs[2] = s->out_count;
  longs[3] = s->red_count;
  for (int32_t d = 0; d < TSR_MAX_RANK; ++d) {
    longs[4 + d] = s->kept_sizes[d];
    longs[12 + d] = s->kept_x_strides[d] / elem;
    longs[20 + d] = s->kept_out_strides[d] / elem;
    longs[28 + d] = s->red_sizes[d];
    longs[36 + d] = s->red_strides[d] / elem;
  }
}

static void reduce_fini(tsr_ocl_plan *plan) {
  tsr_ocl_reduce_state *st = (tsr_ocl_reduce_state *)plan->state;
  tsr_ocl_kernel_destroy(st->pass1);
  tsr_ocl_kernel_destroy(st->pass2);
  if (st->shape != NULL)
    clReleaseMemObject(st->shape);
  memset(st, 0, sizeof(*st));
}

static uint64_t div_up(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

static tsr_status reduce_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  tsr_ocl_reduce_state *st = (tsr_ocl_reduce_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_reduce_shape *s = &plan->ref->u.reduce.shape;
  const tsr_cpu_operand *x = &plan->ref->operands[0];
  const int64_t elem = x->elem_size;
  const char *fn = kReduceNames[plan->attrs.reduce.fn];
  st->acc_size = (uint32_t)elem;
  st->out_count = (uint64_t)s->out_count;
  const uint64_t red = (uint64_t)s->red_count;
  // The column variant when the kept dimension is the one that steps
  // fastest through memory (or nothing is reduced along a dimension).
  st->column =
      s->red_ndim == 0 || (s->kept_ndim > 0 && s->out_count >= 32 &&
                           s->kept_x_strides[s->kept_ndim - 1] < s->red_strides[s->red_ndim - 1]);
  char name[48];
  snprintf(name, sizeof(name), "reduce_%s_%s", st->column ? "col" : "wg", fn);
  tsr_status status = tsr_ocl_red_kernel_create(plan->device, "reduce", x->dtype, name, &st->pass1);
  if (status != TSR_OK)
    goto fail;
  st->local1 = tsr_ocl_red_local_size(plan->device, st->pass1);
  if (red == 0) {
    st->segment = 1;
    st->segments = 1;
  } else if (st->column) {
    uint64_t want = st->out_count > 0 ? div_up(TSR_OCL_RED_COL_ITEMS, st->out_count) : 1;
    uint64_t most = red / TSR_OCL_RED_COL_MIN_SEGMENT;
    if (most < 1)
      most = 1;
    uint64_t segments = want < most ? want : most;
    st->segment = div_up(red, segments);
    st->segments = div_up(red, st->segment);
  } else {
    uint64_t want = st->out_count > 0 ? div_up(TSR_OCL_RED_WG_GROUPS, st->out_count) : 1;
    uint64_t segment = div_up(red, want);
    uint64_t least = (uint64_t)st->local1 * 16;
    st->segment = segment > least ? segment : least;
    st->segments = div_up(red, st->segment);
    st->local1 = tsr_ocl_red_local_fit(st->local1, st->segment < red ? st->segment : red);
  }
  if (st->segments > 1) {
    st->fin_wg = st->segments > TSR_OCL_RED_FIN_WG;
    snprintf(name, sizeof(name), "reduce_%s_%s", st->fin_wg ? "finwg" : "fin", fn);
    status = tsr_ocl_red_kernel_create(plan->device, "reduce", x->dtype, name, &st->pass2);
    if (status != TSR_OK)
      goto fail;
    st->local2 = tsr_ocl_red_local_size(plan->device, st->pass2);
    if (st->fin_wg)
      st->local2 = tsr_ocl_red_local_fit(st->local2, st->segments);
    plan->workspace_bytes = st->out_count * st->segments * st->acc_size;
  }
  int64_t longs[RS_LONGS];
  reduce_shape_pack(s, elem, longs);
  status = tsr_ocl_red_longs_create(plan->device, longs, RS_LONGS, &st->shape);
  if (status != TSR_OK)
    goto fail;
  snprintf(plan->engine, sizeof(plan->engine), "opencl:reduce-%s-%s%s", fn,
           st->column ? "col" : "wg", st->segments > 1 ? "-2pass" : "");
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
fail:
  reduce_fini(plan);
  return status;
}

static tsr_status reduce_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_reduce_state *st = (const tsr_ocl_reduce_state *)plan->state;
  if (st->out_count == 0)
    return TSR_OK;
  cl_mem x = exec->mem[0], out = exec->mem[1];
  cl_ulong x_off = exec->offset[0], out_off = exec->offset[1];
  // Without partials pass 1 never touches |part|: a NULL buffer argument.
  cl_mem part = st->segments > 1 ? exec->workspace : NULL;
  cl_ulong part_off = st->segments > 1 ? exec->workspace_offset / st->acc_size : 0;
  cl_ulong segment = st->segment, segments = st->segments;
  tsr_ocl_arg args[] = {TSR_OCL_ARG(x),         TSR_OCL_ARG(x_off),
                        TSR_OCL_ARG(out),       TSR_OCL_ARG(out_off),
                        TSR_OCL_ARG(part),      TSR_OCL_ARG(part_off),
                        TSR_OCL_ARG(st->shape), TSR_OCL_ARG(segment),
                        TSR_OCL_ARG(segments),  TSR_OCL_LOCAL(st->local1 * st->acc_size)};
  size_t global, local;
  if (st->column) {
    local = st->local1 < 64 ? st->local1 : 64;
    global = tsr_ocl_round_up((size_t)(st->out_count * st->segments), local);
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->pass1, 1, &global, &local, 9, args));
  } else {
    local = st->local1;
    global = (size_t)(st->out_count * st->segments) * local;
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_launch(exec, st->pass1, 1, &global, &local, 10, args));
  }
  if (st->segments == 1)
    return TSR_OK;
  tsr_ocl_arg fin[] = {TSR_OCL_ARG(out),
                       TSR_OCL_ARG(out_off),
                       TSR_OCL_ARG(part),
                       TSR_OCL_ARG(part_off),
                       TSR_OCL_ARG(st->shape),
                       TSR_OCL_ARG(segments),
                       TSR_OCL_LOCAL(st->local2 * st->acc_size)};
  if (st->fin_wg) {
    local = st->local2;
    global = (size_t)st->out_count * local;
    return tsr_ocl_launch(exec, st->pass2, 1, &global, &local, 7, fin);
  }
  local = st->local2 < 64 ? st->local2 : 64;
  global = tsr_ocl_round_up((size_t)st->out_count, local);
  return tsr_ocl_launch(exec, st->pass2, 1, &global, &local, 6, fin);
}

static const tsr_ocl_op_impl reduce_impl = {reduce_supports, reduce_init, reduce_execute,
                                            reduce_fini};

// ---------------------------------------------------------------------------
// ARG_REDUCE: a work-group per output (a tree of (value, index) pairs) or a
// work-item per output scanning the axis in order, as for REDUCE.

typedef struct tsr_ocl_arg_reduce_state {
  tsr_ocl_kernel *kernel;
  cl_mem shape;
  int item;
  size_t local;
  uint64_t out_count;
  uint32_t elem;
} tsr_ocl_arg_reduce_state;
_Static_assert(sizeof(tsr_ocl_arg_reduce_state) <= TSR_OCL_PLAN_STATE_BYTES, "arg state");

static tsr_status arg_reduce_supports(const tsr_ocl_device *device,
                                      const tsr_op_signature *signature,
                                      const struct tsr_plugin_plan *ref_plan) {
  (void)signature;
  return tsr_ocl_red_dtype_check(device, "arg_reduce", ref_plan->operands[0].dtype, 1);
}

static void arg_reduce_fini(tsr_ocl_plan *plan) {
  tsr_ocl_arg_reduce_state *st = (tsr_ocl_arg_reduce_state *)plan->state;
  tsr_ocl_kernel_destroy(st->kernel);
  if (st->shape != NULL)
    clReleaseMemObject(st->shape);
  memset(st, 0, sizeof(*st));
}

static tsr_status arg_reduce_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  tsr_ocl_arg_reduce_state *st = (tsr_ocl_arg_reduce_state *)plan->state;
  memset(st, 0, sizeof(*st));
  const tsr_cpu_reduce_shape *s = &plan->ref->u.arg_reduce.shape;
  const tsr_cpu_operand *x = &plan->ref->operands[0];
  st->elem = x->elem_size;
  st->out_count = (uint64_t)s->out_count;
  st->item = s->red_ndim == 0 || s->red_count <= 8 ||
             (s->kept_ndim > 0 && s->out_count >= 32 &&
              s->kept_x_strides[s->kept_ndim - 1] < s->red_strides[s->red_ndim - 1]);
  tsr_status status =
      tsr_ocl_red_kernel_create(plan->device, "reduce", x->dtype,
                                st->item ? "arg_reduce_item" : "arg_reduce_wg", &st->kernel);
  if (status == TSR_OK) {
    st->local = tsr_ocl_red_local_size(plan->device, st->kernel);
    if (!st->item)
      st->local = tsr_ocl_red_local_fit(st->local, (uint64_t)s->red_count);
    // The shape's out strides are in int64 elements of out: ref collapsed
    // them with out's element size, which is 8.
    int64_t longs[RS_LONGS];
    memset(longs, 0, sizeof(longs));
    longs[0] = s->kept_ndim;
    longs[1] = s->red_ndim;
    longs[2] = s->out_count;
    longs[3] = s->red_count;
    for (int32_t d = 0; d < TSR_MAX_RANK; ++d) {
      longs[4 + d] = s->kept_sizes[d];
      longs[12 + d] = s->kept_x_strides[d] / st->elem;
      longs[20 + d] = s->kept_out_strides[d] / 8;
      longs[28 + d] = s->red_sizes[d];
      longs[36 + d] = s->red_strides[d] / st->elem;
    }
    status = tsr_ocl_red_longs_create(plan->device, longs, RS_LONGS, &st->shape);
  }
  if (status != TSR_OK) {
    arg_reduce_fini(plan);
    return status;
  }
  snprintf(plan->engine, sizeof(plan->engine), "opencl:arg-reduce-%s", st->item ? "item" : "wg");
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status arg_reduce_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_arg_reduce_state *st = (const tsr_ocl_arg_reduce_state *)plan->state;
  if (st->out_count == 0)
    return TSR_OK;
  cl_mem x = exec->mem[0], out = exec->mem[1];
  cl_ulong x_off = exec->offset[0], out_off = exec->offset[1];
  cl_int is_max = plan->attrs.arg_reduce.fn == TSR_ARG_REDUCE_ARGMAX;
  tsr_ocl_arg args[] = {TSR_OCL_ARG(x),
                        TSR_OCL_ARG(x_off),
                        TSR_OCL_ARG(out),
                        TSR_OCL_ARG(out_off),
                        TSR_OCL_ARG(st->shape),
                        TSR_OCL_ARG(is_max),
                        TSR_OCL_LOCAL(st->local * st->elem),
                        TSR_OCL_LOCAL(st->local * 8)};
  size_t global, local;
  if (st->item) {
    local = st->local < 64 ? st->local : 64;
    global = tsr_ocl_round_up((size_t)st->out_count, local);
    return tsr_ocl_launch(exec, st->kernel, 1, &global, &local, 6, args);
  }
  local = st->local;
  global = (size_t)st->out_count * local;
  return tsr_ocl_launch(exec, st->kernel, 1, &global, &local, 8, args);
}

static const tsr_ocl_op_impl arg_reduce_impl = {arg_reduce_supports, arg_reduce_init,
                                                arg_reduce_execute, arg_reduce_fini};

// ---------------------------------------------------------------------------
// The table.

const tsr_ocl_op_impl *const tsr_ocl_reduce_ops[TSR_OP_COUNT] = {
    [TSR_OP_REDUCE] = &reduce_impl,
    [TSR_OP_ARG_REDUCE] = &arg_reduce_impl,
    [TSR_OP_SOFTMAX] = &tsr_ocl_softmax_impl,
    [TSR_OP_SOFTMAX_BACKWARD] = &tsr_ocl_softmax_backward_impl,
    [TSR_OP_CROSS_ENTROPY] = &tsr_ocl_cross_entropy_impl,
    [TSR_OP_CROSS_ENTROPY_BACKWARD] = &tsr_ocl_cross_entropy_backward_impl,
    [TSR_OP_LAYER_NORM] = &tsr_ocl_layer_norm_impl,
    [TSR_OP_LAYER_NORM_BACKWARD] = &tsr_ocl_layer_norm_backward_impl,
    [TSR_OP_BATCH_NORM] = &tsr_ocl_batch_norm_impl,
    [TSR_OP_BATCH_NORM_BACKWARD] = &tsr_ocl_batch_norm_backward_impl,
    [TSR_OP_CONCAT] = &tsr_ocl_concat_impl,
    [TSR_OP_PAD] = &tsr_ocl_pad_impl,
    [TSR_OP_GATHER] = &tsr_ocl_gather_impl,
    [TSR_OP_SCATTER_ADD] = &tsr_ocl_scatter_add_impl,
};
