// Plans for the ops the plugin's own kernels run (cuda_kernels.h): every op
// except MATMUL and the CONV2D family. ref has validated the signature
// already; this file decides whether the own kernels take it, copies what
// the kernels need into the plan, and launches them at execution.
//
// Not implemented here, so reported TSR_UNSUPPORTED and run by the core's
// fallback: PAD with REFLECT or REPLICATE, and the layouts the checks in
// tsr_cuda_own_supports name.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_cpu/cpu_kernels.h"
#include "cuda_kernels.h"
#include "cuda_plan.h"

typedef struct tsr_cuda_own {
  tsr_cuda_ew_args ew;
  tsr_cuda_view views[TSR_MAX_OPERANDS];
  union {
    tsr_reduce_attrs reduce;
    tsr_arg_reduce_attrs arg_reduce;
    tsr_softmax_attrs softmax;
    tsr_sgd_attrs sgd;
    tsr_adam_attrs adam;
    tsr_rng_fill_attrs rng;
    tsr_gather_attrs gather;
    tsr_pool2d_attrs pool;
    tsr_concat_attrs concat;
    tsr_pad_attrs pad;
  } attrs;
  int64_t count;       // elements of the optimizer updates
  int64_t rows, cols;  // CROSS_ENTROPY (N, C), LAYER_NORM
  int32_t reduction;
  int64_t ignore_index;
  double smoothing;
  double eps;
  tsr_dtype_t stat_dtype;
  int has_affine;
} tsr_cuda_own;

static tsr_status tsr_cuda_own_unsupported(const tsr_op_signature *signature, const char *why) {
  return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_UNSUPPORTED, "%s: %s",
                                    tsr_op_name(signature->op), why);
}

static const tsr_tensor_desc *tsr_cuda_operand_desc(const tsr_op_signature *signature,
                                                    int32_t index) {
  return index < signature->num_inputs ? &signature->inputs[index]
                                       : &signature->outputs[index - signature->num_inputs];
}

// Row-major packed, size-1 dimensions aside.
static int tsr_cuda_dense(const tsr_tensor_desc *d) {
  int64_t expected = 1;
  for (int32_t k = d->rank - 1; k >= 0; --k) {
    if (d->sizes[k] == 1)
      continue;
    if (d->strides[k] != expected)
      return 0;
    expected *= d->sizes[k];
  }
  return 1;
}

// Copies the attribute struct (or leaves |dst| zeroed when NULL).
static void tsr_cuda_attrs_copy(const tsr_op_signature *signature, void *dst, size_t size) {
  memset(dst, 0, size);
  if (signature->attrs == NULL)
    return;
  size_t given = *(const size_t *)signature->attrs;
  memcpy(dst, signature->attrs, given < size ? given : size);
}

tsr_status tsr_cuda_own_supports(const tsr_op_signature *signature) {
  switch (signature->op) {
    case TSR_OP_FILL:
    case TSR_OP_COPY:
    case TSR_OP_CAST:
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE:
    case TSR_OP_WHERE:
    case TSR_OP_CLAMP:
    case TSR_OP_REDUCE:
    case TSR_OP_ARG_REDUCE:
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
    case TSR_OP_RNG_FILL:
    case TSR_OP_GATHER:
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
    case TSR_OP_CONCAT:
      return TSR_OK;
    case TSR_OP_SCATTER_ADD: {
      tsr_dtype_t dtype = signature->outputs[0].dtype;
      if ((signature->flags & TSR_PLAN_REQUIRE_DETERMINISM) && dtype != TSR_INT32 &&
          dtype != TSR_INT64) {
        return tsr_cuda_own_unsupported(signature,
                                        "float atomics are not bit-reproducible; with "
                                        "TSR_PLAN_REQUIRE_DETERMINISM it runs on the fallback");
      }
      return TSR_OK;
    }
    case TSR_OP_PAD: {
      tsr_pad_attrs attrs;
      tsr_cuda_attrs_copy(signature, &attrs, sizeof(attrs));
      if (attrs.mode != TSR_PAD_CONSTANT)
        return tsr_cuda_own_unsupported(signature, "REFLECT and REPLICATE run on the fallback");
      return TSR_OK;
    }
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: {
      int32_t logits = signature->op == TSR_OP_CROSS_ENTROPY ? 0 : 1;
      const tsr_tensor_desc *x = &signature->inputs[logits];
      const tsr_tensor_desc *dx =
          signature->op == TSR_OP_CROSS_ENTROPY ? x : &signature->outputs[0];
      if ((x->sizes[1] > 1 && x->strides[1] != 1) || (dx->sizes[1] > 1 && dx->strides[1] != 1))
        return tsr_cuda_own_unsupported(signature, "logits whose class stride is not 1");
      return TSR_OK;
    }
    case TSR_OP_SGD_UPDATE:
    case TSR_OP_ADAM_UPDATE:
      for (int32_t i = 0; i < signature->num_inputs + signature->num_outputs; ++i) {
        const tsr_tensor_desc *d = tsr_cuda_operand_desc(signature, i);
        int empty_momentum = signature->op == TSR_OP_SGD_UPDATE && i == 2 && d->rank == 0;
        if (!empty_momentum && !tsr_cuda_dense(d))
          return tsr_cuda_own_unsupported(signature, "operands that are not packed row-major");
      }
      return TSR_OK;
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD:
      for (int32_t i = 0; i < signature->num_inputs + signature->num_outputs; ++i) {
        if (!tsr_cuda_dense(tsr_cuda_operand_desc(signature, i)))
          return tsr_cuda_own_unsupported(signature, "operands that are not packed row-major");
      }
      return TSR_OK;
    case TSR_OP_BATCH_NORM:
    case TSR_OP_BATCH_NORM_BACKWARD:
      return TSR_OK;
    default:
      return tsr_cuda_own_unsupported(signature, "unknown op");
  }
}

static void tsr_cuda_view_of(const tsr_cpu_operand *o, tsr_cuda_view *v) {
  v->rank = o->rank;
  for (int32_t d = 0; d < TSR_MAX_RANK; ++d) {
    v->sizes[d] = d < o->rank ? o->sizes[d] : 1;
    v->strides[d] = d < o->rank ? o->strides[d] : 0;
  }
}

// --- execution ------------------------------------------------------------------

static tsr_status tsr_cuda_ew_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  const tsr_cuda_own *own = plan->impl;
  const void *inputs[3] = {NULL, NULL, NULL};
  for (int32_t i = 0; i < plan->num_inputs && i < 3; ++i) inputs[i] = exec->ptrs[i];
  return tsr_cuda_launch_elementwise(&own->ew, exec->ptrs[plan->num_inputs], inputs,
                                     exec->stream->stream);
}

// A strided copy of |src| (view) into |dst| (view of the same sizes).
static tsr_status tsr_cuda_view_copy(tsr_dtype_t dtype, const void *src, const tsr_cuda_view *sv,
                                     void *dst, const tsr_cuda_view *dv, cudaStream_t stream) {
  tsr_cuda_ew_args args;
  memset(&args, 0, sizeof(args));
  args.kind = TSR_CUDA_EW_COPY;
  args.num_inputs = 1;
  args.out_dtype = dtype;
  args.in_dtype = dtype;
  args.rank = dv->rank;
  for (int32_t d = 0; d < dv->rank; ++d) {
    args.sizes[d] = dv->sizes[d];
    args.out_strides[d] = dv->strides[d];
    args.in_strides[0][d] = sv->strides[d];
  }
  const void *inputs[1] = {src};
  return tsr_cuda_launch_elementwise(&args, dst, inputs, stream);
}

static tsr_status tsr_cuda_concat_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  const tsr_cuda_own *own = plan->impl;
  int32_t axis = own->attrs.concat.axis;
  const tsr_cuda_view *out = &own->views[plan->num_inputs];
  size_t elem = tsr_dtype_size(own->ew.out_dtype);
  int64_t at = 0;
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < plan->num_inputs && status == TSR_OK; ++i) {
    const tsr_cuda_view *in = &own->views[i];
    if (in->sizes[axis] == 0)
      continue;
    tsr_cuda_view part = *out;
    part.sizes[axis] = in->sizes[axis];
    char *dst = (char *)exec->ptrs[plan->num_inputs] + at * out->strides[axis] * (int64_t)elem;
    status =
        tsr_cuda_view_copy(own->ew.out_dtype, exec->ptrs[i], in, dst, &part, exec->stream->stream);
    at += in->sizes[axis];
  }
  return status;
}

static tsr_status tsr_cuda_pad_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  const tsr_cuda_own *own = plan->impl;
  // Fill all of out with the value, then copy x into the interior.
  tsr_status status =
      tsr_cuda_launch_elementwise(&own->ew, exec->ptrs[1], NULL, exec->stream->stream);
  const tsr_cuda_view *x = &own->views[0], *out = &own->views[1];
  int64_t offset = 0;
  for (int32_t d = 0; d < out->rank; ++d) offset += own->attrs.pad.pad_before[d] * out->strides[d];
  for (int32_t d = 0; d < x->rank; ++d) {
    if (x->sizes[d] == 0)
      return status;
  }
  tsr_cuda_view inner = *out;
  for (int32_t d = 0; d < x->rank; ++d) inner.sizes[d] = x->sizes[d];
  char *dst = (char *)exec->ptrs[1] + offset * (int64_t)tsr_dtype_size(own->ew.out_dtype);
  if (status == TSR_OK)
    status =
        tsr_cuda_view_copy(own->ew.out_dtype, exec->ptrs[0], x, dst, &inner, exec->stream->stream);
  return status;
}

static tsr_status tsr_cuda_reduce_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  const tsr_cuda_own *own = plan->impl;
  cudaStream_t stream = exec->stream->stream;
  tsr_dtype_t dtype = own->ew.in_dtype;
  switch (plan->op) {
    case TSR_OP_REDUCE:
      return tsr_cuda_launch_reduce(own->attrs.reduce.fn, dtype, exec->ptrs[0], &own->views[0],
                                    own->attrs.reduce.axes_mask, exec->ptrs[1], &own->views[1],
                                    stream);
    case TSR_OP_ARG_REDUCE:
      return tsr_cuda_launch_arg_reduce(own->attrs.arg_reduce.fn, dtype, exec->ptrs[0],
                                        &own->views[0], own->attrs.arg_reduce.axis, exec->ptrs[1],
                                        &own->views[1], stream);
    case TSR_OP_SOFTMAX:
      return tsr_cuda_launch_softmax(dtype, own->attrs.softmax.log != 0, exec->ptrs[0],
                                     &own->views[0], exec->ptrs[1], &own->views[1],
                                     own->attrs.softmax.axis, stream);
    default:  // TSR_OP_SOFTMAX_BACKWARD
      return tsr_cuda_launch_softmax_backward(
          dtype, own->attrs.softmax.log != 0, exec->ptrs[0], &own->views[0], exec->ptrs[1],
          &own->views[1], exec->ptrs[2], &own->views[2], own->attrs.softmax.axis, stream);
  }
}

static tsr_status tsr_cuda_nn_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  const tsr_cuda_own *own = plan->impl;
  cudaStream_t stream = exec->stream->stream;
  tsr_dtype_t dtype = own->ew.in_dtype;
  const tsr_cuda_view *v = own->views;
  switch (plan->op) {
    case TSR_OP_CROSS_ENTROPY:
      // (logits, target) -> (loss, lse)
      return tsr_cuda_launch_cross_entropy(
          dtype, exec->ptrs[0], v[0].strides[0], exec->ptrs[1], v[1].strides[0], own->rows,
          own->cols, (tsr_reduction_t)own->reduction, own->ignore_index, own->smoothing,
          exec->ptrs[2], v[2].rank > 0 ? v[2].strides[0] : 0, exec->ptrs[3], v[3].strides[0],
          exec->workspace, tsr_cuda_stream_error_word(exec->stream), stream);
    case TSR_OP_CROSS_ENTROPY_BACKWARD:
      // (dloss, logits, target, lse) -> (dlogits)
      return tsr_cuda_launch_cross_entropy_backward(
          dtype, exec->ptrs[0], v[0].rank > 0 ? v[0].strides[0] : 0, exec->ptrs[1], v[1].strides[0],
          exec->ptrs[2], v[2].strides[0], exec->ptrs[3], v[3].strides[0], own->rows, own->cols,
          (tsr_reduction_t)own->reduction, own->ignore_index, own->smoothing, exec->workspace,
          exec->ptrs[4], v[4].strides[0], stream);
    case TSR_OP_SGD_UPDATE:
      return tsr_cuda_launch_sgd(dtype, &own->attrs.sgd, exec->ptrs[0], exec->ptrs[1],
                                 exec->ptrs[2], own->count, stream);
    case TSR_OP_ADAM_UPDATE:
      return tsr_cuda_launch_adam(dtype, &own->attrs.adam, exec->ptrs[0], exec->ptrs[1],
                                  exec->ptrs[2], exec->ptrs[3], own->count, stream);
    case TSR_OP_RNG_FILL:
      return tsr_cuda_launch_rng_fill(own->ew.out_dtype, &own->attrs.rng, exec->ptrs[0], &v[0],
                                      stream);
    case TSR_OP_GATHER:
      return tsr_cuda_launch_gather(own->ew.out_dtype, exec->ptrs[0], &v[0], exec->ptrs[1],
                                    own->stat_dtype, v[1].strides[0], exec->ptrs[2], &v[2],
                                    own->attrs.gather.axis,
                                    tsr_cuda_stream_error_word(exec->stream), stream);
    case TSR_OP_SCATTER_ADD:
      return tsr_cuda_launch_scatter_add(own->ew.out_dtype, exec->ptrs[0], &v[0], exec->ptrs[1],
                                         own->stat_dtype, v[1].strides[0], exec->ptrs[2], &v[2],
                                         own->attrs.gather.axis,
                                         tsr_cuda_stream_error_word(exec->stream), stream);
    case TSR_OP_POOL2D:
      return tsr_cuda_launch_pool2d(dtype, &own->attrs.pool, exec->ptrs[0], &v[0], exec->ptrs[1],
                                    &v[1], plan->num_outputs > 1 ? exec->ptrs[2] : NULL,
                                    plan->num_outputs > 1 ? &v[2] : NULL, stream);
    case TSR_OP_POOL2D_BACKWARD: {
      int max = own->attrs.pool.kind == TSR_POOL_MAX;
      int32_t dx = plan->num_inputs;
      return tsr_cuda_launch_pool2d_backward(dtype, &own->attrs.pool, exec->ptrs[0], &v[0],
                                             max ? exec->ptrs[1] : NULL, max ? &v[1] : NULL,
                                             exec->ptrs[dx], &v[dx], stream);
    }
    case TSR_OP_LAYER_NORM_BACKWARD: {
      // (dy, x, mean, rstd [, gamma]) -> (dx [, dgamma, dbeta])
      int32_t dx = plan->num_inputs;
      int affine = plan->num_outputs > 1;
      return tsr_cuda_launch_layer_norm_backward(
          dtype, own->stat_dtype, exec->ptrs[0], exec->ptrs[1], exec->ptrs[2], exec->ptrs[3],
          plan->num_inputs > 4 ? exec->ptrs[4] : NULL, exec->ptrs[dx],
          affine ? exec->ptrs[dx + 1] : NULL, affine ? exec->ptrs[dx + 2] : NULL, own->rows,
          own->cols, stream);
    }
    case TSR_OP_BATCH_NORM:
      return tsr_cuda_launch_batch_norm(dtype, v, exec->ptrs, own->eps, own->smoothing,
                                        own->has_affine, stream);
    case TSR_OP_BATCH_NORM_BACKWARD:
      return tsr_cuda_launch_batch_norm_backward(dtype, v, exec->ptrs, own->has_affine, stream);
    default: {  // TSR_OP_LAYER_NORM: (x [, gamma, beta]) -> (y, mean, rstd)
      int32_t y = plan->num_inputs;
      return tsr_cuda_launch_layer_norm(
          dtype, own->stat_dtype, exec->ptrs[0], own->has_affine ? exec->ptrs[1] : NULL,
          own->has_affine ? exec->ptrs[2] : NULL, exec->ptrs[y], exec->ptrs[y + 1],
          exec->ptrs[y + 2], own->rows, own->cols, own->eps, stream);
    }
  }
}

// --- plan building ---------------------------------------------------------------

static void tsr_cuda_ew_fill(const tsr_cuda_plan *plan, tsr_cuda_own *own) {
  const tsr_cpu_operand *out = tsr_cuda_plan_operand(plan, plan->num_inputs);
  tsr_cuda_ew_args *ew = &own->ew;
  ew->num_inputs = plan->num_inputs;
  ew->out_dtype = out->dtype;
  ew->in_dtype = plan->num_inputs > 0 ? tsr_cuda_plan_operand(plan, 0)->dtype : out->dtype;
  ew->rank = out->rank;
  for (int32_t d = 0; d < out->rank; ++d) {
    ew->sizes[d] = out->sizes[d];
    ew->out_strides[d] = out->strides[d];
    for (int32_t i = 0; i < plan->num_inputs && i < 3; ++i)
      ew->in_strides[i][d] = tsr_cuda_plan_operand(plan, i)->strides[d];
  }
}

static void tsr_cuda_own_free(tsr_cuda_plan *plan) {
  free(plan->impl);
  plan->impl = NULL;
}

tsr_status tsr_cuda_own_plan_init(const tsr_op_signature *signature, tsr_cuda_plan *plan) {
  tsr_cuda_own *own = calloc(1, sizeof(*own));
  if (own == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_OUT_OF_MEMORY,
                                      "%s: no host memory for the plan",
                                      tsr_op_name(signature->op));
  }
  plan->impl = own;
  plan->free_impl = tsr_cuda_own_free;
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  const struct tsr_plugin_plan *ref = plan->ref;
  for (int32_t i = 0; i < plan->num_inputs + plan->num_outputs; ++i)
    tsr_cuda_view_of(tsr_cuda_plan_operand(plan, i), &own->views[i]);
  tsr_cuda_ew_fill(plan, own);
  // The float ops' dtype: the first input's (the output's for FILL/RNG).
  const char *engine = "cuda:own:elementwise";
  switch (signature->op) {
    case TSR_OP_FILL:
      own->ew.kind = TSR_CUDA_EW_FILL;
      own->ew.fill_bits = ref->u.ew.params.fill_bits;
      plan->run = tsr_cuda_ew_run;
      break;
    case TSR_OP_COPY:
      own->ew.kind = TSR_CUDA_EW_COPY;
      plan->run = tsr_cuda_ew_run;
      break;
    case TSR_OP_CAST:
      own->ew.kind = TSR_CUDA_EW_CAST;
      plan->run = tsr_cuda_ew_run;
      break;
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD: {
      tsr_unary_attrs attrs;
      tsr_cuda_attrs_copy(signature, &attrs, sizeof(attrs));
      own->ew.kind = signature->op == TSR_OP_UNARY ? TSR_CUDA_EW_UNARY : TSR_CUDA_EW_UNARY_BACKWARD;
      own->ew.fn = attrs.fn;
      own->ew.alpha = ref->u.ew.params.alpha_f64;
      plan->run = tsr_cuda_ew_run;
      break;
    }
    case TSR_OP_BINARY: {
      tsr_binary_attrs attrs;
      tsr_cuda_attrs_copy(signature, &attrs, sizeof(attrs));
      double alpha = TSR_ABI_COVERS(&attrs, tsr_binary_attrs, alpha) ? attrs.alpha : 1.0;
      if (signature->attrs == NULL || ((const tsr_binary_attrs *)signature->attrs)->struct_size <
                                          offsetof(tsr_binary_attrs, alpha) + sizeof(double))
        alpha = 1.0;
      own->ew.kind = TSR_CUDA_EW_BINARY;
      own->ew.fn = attrs.fn;
      own->ew.alpha = alpha;
      own->ew.alpha_i = (int64_t)alpha;  // ref checked it is integral for int dtypes
      plan->run = tsr_cuda_ew_run;
      break;
    }
    case TSR_OP_COMPARE: {
      tsr_compare_attrs attrs;
      tsr_cuda_attrs_copy(signature, &attrs, sizeof(attrs));
      own->ew.kind = TSR_CUDA_EW_COMPARE;
      own->ew.fn = attrs.fn;
      plan->run = tsr_cuda_ew_run;
      break;
    }
    case TSR_OP_WHERE:
      own->ew.kind = TSR_CUDA_EW_WHERE;
      own->ew.in_dtype = tsr_cuda_plan_operand(plan, 1)->dtype;
      plan->run = tsr_cuda_ew_run;
      break;
    case TSR_OP_CLAMP: {
      const tsr_cpu_ew_params *p = &ref->u.ew.params;
      own->ew.kind = TSR_CUDA_EW_CLAMP;
      own->ew.lo = own->ew.in_dtype == TSR_FLOAT64 ? p->lo_f64 : (double)p->lo_f32;
      own->ew.hi = own->ew.in_dtype == TSR_FLOAT64 ? p->hi_f64 : (double)p->hi_f32;
      own->ew.lo_i = p->lo_i64;
      own->ew.hi_i = p->hi_i64;
      plan->run = tsr_cuda_ew_run;
      break;
    }
    case TSR_OP_CONCAT:
      tsr_cuda_attrs_copy(signature, &own->attrs.concat, sizeof(own->attrs.concat));
      if (own->attrs.concat.axis < 0)
        own->attrs.concat.axis += own->views[plan->num_inputs].rank;
      plan->run = tsr_cuda_concat_run;
      engine = "cuda:own:concat";
      break;
    case TSR_OP_PAD:
      tsr_cuda_attrs_copy(signature, &own->attrs.pad, sizeof(own->attrs.pad));
      // The fill of the padding: FILL's args over out with the value's bits.
      own->ew.kind = TSR_CUDA_EW_FILL;
      own->ew.num_inputs = 0;
      own->ew.fill_bits = ref->u.pad.value_bits;
      plan->run = tsr_cuda_pad_run;
      engine = "cuda:own:pad";
      break;
    case TSR_OP_REDUCE:
      tsr_cuda_attrs_copy(signature, &own->attrs.reduce, sizeof(own->attrs.reduce));
      plan->run = tsr_cuda_reduce_run;
      engine = "cuda:own:reduce-block-tree";
      break;
    case TSR_OP_ARG_REDUCE:
      tsr_cuda_attrs_copy(signature, &own->attrs.arg_reduce, sizeof(own->attrs.arg_reduce));
      if (own->attrs.arg_reduce.axis < 0)
        own->attrs.arg_reduce.axis += own->views[0].rank;
      plan->run = tsr_cuda_reduce_run;
      engine = "cuda:own:arg-reduce";
      break;
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
      tsr_cuda_attrs_copy(signature, &own->attrs.softmax, sizeof(own->attrs.softmax));
      if (own->attrs.softmax.axis < 0)
        own->attrs.softmax.axis += own->views[0].rank;
      plan->run = tsr_cuda_reduce_run;
      engine = "cuda:own:softmax-row-block";
      break;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: {
      const tsr_cpu_cross_entropy_plan *ce = &ref->u.cross_entropy;
      int32_t logits = signature->op == TSR_OP_CROSS_ENTROPY ? 0 : 1;
      own->ew.in_dtype = tsr_cuda_plan_operand(plan, logits)->dtype;
      own->rows = ce->rows;
      own->cols = ce->classes;
      own->reduction = ce->reduction;
      own->ignore_index = ce->ignore_index;
      own->smoothing = ce->smoothing;
      if (signature->op == TSR_OP_CROSS_ENTROPY)
        plan->workspace_bytes = (uint64_t)(own->rows > 0 ? own->rows : 1) * sizeof(double);
      else if (own->reduction == TSR_REDUCTION_MEAN)
        plan->workspace_bytes = sizeof(double);
      plan->run = tsr_cuda_nn_run;
      engine = "cuda:own:cross-entropy";
      break;
    }
    case TSR_OP_SGD_UPDATE:
    case TSR_OP_ADAM_UPDATE:
      if (signature->op == TSR_OP_SGD_UPDATE)
        tsr_cuda_attrs_copy(signature, &own->attrs.sgd, sizeof(own->attrs.sgd));
      else
        tsr_cuda_attrs_copy(signature, &own->attrs.adam, sizeof(own->attrs.adam));
      own->count = tsr_cuda_plan_operand(plan, 0)->numel;
      plan->run = tsr_cuda_nn_run;
      engine = "cuda:own:fused-optimizer";
      break;
    case TSR_OP_RNG_FILL:
      tsr_cuda_attrs_copy(signature, &own->attrs.rng, sizeof(own->attrs.rng));
      plan->run = tsr_cuda_nn_run;
      engine = "cuda:own:philox4x32-10";
      break;
    case TSR_OP_GATHER:
    case TSR_OP_SCATTER_ADD:
      tsr_cuda_attrs_copy(signature, &own->attrs.gather, sizeof(own->attrs.gather));
      if (own->attrs.gather.axis < 0)
        own->attrs.gather.axis += own->views[plan->num_inputs].rank;
      own->stat_dtype = tsr_cuda_plan_operand(plan, 1)->dtype;  // the index dtype
      plan->run = tsr_cuda_nn_run;
      engine = signature->op == TSR_OP_GATHER ? "cuda:own:gather" : "cuda:own:scatter-add-atomic";
      if (signature->op == TSR_OP_SCATTER_ADD && own->ew.out_dtype != TSR_INT32 &&
          own->ew.out_dtype != TSR_INT64)
        plan->info_flags = 0;  // float atomics: the order of additions varies
      break;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD: {
      // ref's reading of the attributes, defaults for an older struct included.
      const tsr_cpu_pool_plan *p = &ref->u.pool;
      tsr_pool2d_attrs *a = &own->attrs.pool;
      a->struct_size = sizeof(*a);
      a->kind = p->kind;
      a->count_include_pad = (uint32_t)p->count_include_pad;
      for (int d = 0; d < 2; ++d) {
        a->kernel[d] = p->kernel[d];
        a->stride[d] = p->stride[d];
        a->pad_before[d] = p->pad_before[d];
        a->pad_after[d] = p->pad_after[d];
        a->dilation[d] = p->dilation[d];
      }
    }
      plan->run = tsr_cuda_nn_run;
      engine = signature->op == TSR_OP_POOL2D ? "cuda:own:pool2d" : "cuda:own:pool2d-gather";
      break;
    case TSR_OP_BATCH_NORM:
    case TSR_OP_BATCH_NORM_BACKWARD: {
      tsr_batch_norm_attrs attrs;
      tsr_cuda_attrs_copy(signature, &attrs, sizeof(attrs));
      own->eps = attrs.eps;
      own->smoothing = attrs.momentum;        // the running statistics' momentum
      own->has_affine = attrs.training != 0;  // the training flag
      plan->run = tsr_cuda_nn_run;
      engine = signature->op == TSR_OP_BATCH_NORM ? "cuda:own:batch-norm-channel-block"
                                                  : "cuda:own:batch-norm-backward-channel-block";
      break;
    }
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD: {
      const tsr_cpu_layer_norm_plan *ln = &ref->u.layer_norm;
      tsr_layer_norm_attrs attrs;
      tsr_cuda_attrs_copy(signature, &attrs, sizeof(attrs));
      const tsr_cpu_operand *x = tsr_cuda_plan_operand(plan, 0);
      int32_t axis = attrs.axis < 0 ? attrs.axis + x->rank : attrs.axis;
      own->rows = 1;
      own->cols = 1;
      for (int32_t d = 0; d < x->rank; ++d) {
        if (d < axis)
          own->rows *= x->sizes[d];
        else
          own->cols *= x->sizes[d];
      }
      own->eps = ln->eps;
      own->has_affine = ln->has_affine;
      own->stat_dtype = ln->stat_dtype;
      plan->run = tsr_cuda_nn_run;
      engine = signature->op == TSR_OP_LAYER_NORM ? "cuda:own:layer-norm-row-block"
                                                  : "cuda:own:layer-norm-backward";
      break;
    }
    default:
      return tsr_cuda_own_unsupported(signature, "not implemented by the CUDA plugin");
  }
  snprintf(plan->engine, sizeof(plan->engine), "%s", engine);
  return TSR_OK;
}
