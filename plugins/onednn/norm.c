// LAYER_NORM(_BACKWARD) and BATCH_NORM(_BACKWARD) on oneDNN's normalisation
// primitives, float32 only.
//
// oneDNN normalises and reduces; the catalogue's statistics differ from
// oneDNN's in form, so small own loops over the statistics (rows or
// channels, 1/M of the data or less) translate around the primitive:
// - oneDNN produces and consumes the variance, the catalogue rstd / invstd.
//   Forward: rstd = 1 / sqrt(var + eps) after the primitive. Backward: var =
//   1 / rstd^2 - eps before it, which oneDNN turns back into 1 / sqrt(var +
//   eps): the same rstd up to a few float32 roundings, well inside the
//   conformance bounds. This inversion assumes rstd > 0, as the forward
//   produces it (a negative rstd given to the backward would lose its sign).
// - Batch norm training: the running statistics (momentum, unbiased
//   variance) are updated after the primitive, reading each channel's old
//   value before writing the new one, so running outputs may alias the
//   running inputs.
// - Batch norm inference: oneDNN normalises with the running statistics
//   (use_global_stats); save_* and the running outputs are filled after.
// Layer norm's statistics are staged densely in the workspace, so mean and
// rstd may have any strides; batch norm's [C] operands must be dense.
//
// Which implementations are taken, by measurement (oneDNN 2.6, AVX2;
// docs/performance-log.md, "Measurements behind the code's decisions"):
// - Layer norm: any but oneDNN's reference one; simple_layer_normalization
//   measured faster than the own kernel.
// - Batch norm: jit only. For NCHW oneDNN (2.6 and 3.2) has only its plain
//   C++ ncsp_bnorm, slower than the own kernel, so NCHW stays on the own
//   kernel; NHWC gets bnorm_tbb_jit, faster than the own kernel.
//
// What else stays on the own kernels: other dtypes; layer norm whose
// normalised axes are not one dense run in x-shaped operands or gamma/beta,
// or whose leading axes do not collapse to at most 4; batch norm whose
// spatial axes do not collapse to at most 3.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_op.h"

// Where a primitive argument's memory is at execution: an operand index
// (>= 0) or one of the staged statistics in the workspace.
enum { TSR_ONEDNN_NORM_WS_MEAN = -1, TSR_ONEDNN_NORM_WS_VAR = -2 };

// oneDNN's layer norm takes up to 5 dims: at most 4 leading ones.
#define TSR_ONEDNN_NORM_MAX_OUTER 4

typedef struct tsr_onednn_norm_op {
  tsr_onednn_op base;
  tsr_onednn_prim prim;
  int32_t op_id;     // TSR_OP_*
  int32_t training;  // batch norm
  int32_t num_args;
  int32_t arg_sources[TSR_ONEDNN_MAX_ARGS];  // operand index or TSR_ONEDNN_NORM_WS_*
  double eps;       // float32-rounded, as oneDNN and the own kernels use it
  double momentum;  // float32-rounded (batch norm)
  double unbiased;  // M / (M - 1) (batch norm training)
  // The statistics: layer norm rows over the collapsed leading axes (walked
  // row-major; dense in the workspace), batch norm's C channels (rank 1).
  int32_t stat_rank;
  int32_t stat_operands[2];  // layer norm: mean, rstd
  int64_t stat_count;
  int64_t stat_sizes[TSR_ONEDNN_NORM_MAX_OUTER];
  int64_t stat_strides[2][TSR_ONEDNN_NORM_MAX_OUTER];  // elements, of stat_operands
  uint64_t ws_mean;  // workspace offsets of the staged mean and variance
  uint64_t ws_var;
} tsr_onednn_norm_op;

// --- execution ----------------------------------------------------------------

// Layer norm: copies the primitive's mean and variance from the workspace to
// the mean and rstd operands (|forward|), or stages the operands' mean and
// the variance recovered from rstd into the workspace (backward).
static void tsr_onednn_norm_ln_stats_walk(const tsr_onednn_norm_op *op, char *const *ptrs,
                                          float *ws_mean, float *ws_var, int forward) {
  float *mean = (float *)ptrs[op->stat_operands[0]];
  float *rstd = (float *)ptrs[op->stat_operands[1]];
  int64_t index[TSR_ONEDNN_NORM_MAX_OUTER] = {0};
  int64_t off_mean = 0, off_rstd = 0;
  for (int64_t i = 0; i < op->stat_count; ++i) {
    if (forward) {
      mean[off_mean] = ws_mean[i];
      rstd[off_rstd] = (float)(1.0 / sqrt((double)ws_var[i] + op->eps));
    } else {
      const double r = rstd[off_rstd];
      ws_mean[i] = mean[off_mean];
      ws_var[i] = (float)(1.0 / (r * r) - op->eps);
    }
    for (int32_t d = op->stat_rank - 1; d >= 0; --d) {
      off_mean += op->stat_strides[0][d];
      off_rstd += op->stat_strides[1][d];
      if (++index[d] < op->stat_sizes[d])
        break;
      off_mean -= op->stat_strides[0][d] * op->stat_sizes[d];
      off_rstd -= op->stat_strides[1][d] * op->stat_sizes[d];
      index[d] = 0;
    }
  }
}

// Batch norm forward, after the primitive. Training: the primitive wrote the
// batch mean to save_mean and the biased variance to save_invstd. Inference:
// it read running_mean and running_var.
static void tsr_onednn_norm_bn_forward_finish(const tsr_onednn_norm_op *op, char *const *ptrs) {
  const float *running_mean = (const float *)ptrs[3];
  const float *running_var = (const float *)ptrs[4];
  float *save_mean = (float *)ptrs[6];
  float *save_invstd = (float *)ptrs[7];
  float *running_mean_out = (float *)ptrs[8];
  float *running_var_out = (float *)ptrs[9];
  const double m = op->momentum;
  for (int64_t c = 0; c < op->stat_count; ++c) {
    // Read before writing: the running outputs may alias the inputs.
    const double old_mean = running_mean[c], old_var = running_var[c];
    if (op->training) {
      const double var = save_invstd[c];
      save_invstd[c] = (float)(1.0 / sqrt(var + op->eps));
      running_mean_out[c] = (float)((1 - m) * old_mean + m * (double)save_mean[c]);
      running_var_out[c] = (float)((1 - m) * old_var + m * var * op->unbiased);
    } else {
      save_mean[c] = (float)old_mean;
      save_invstd[c] = (float)(1.0 / sqrt(old_var + op->eps));
      running_mean_out[c] = (float)old_mean;
      running_var_out[c] = (float)old_var;
    }
  }
}

static tsr_status tsr_onednn_norm_execute(const tsr_onednn_op *base,
                                          const tsr_onednn_exec_ctx *ctx) {
  const tsr_onednn_norm_op *op = (const tsr_onednn_norm_op *)base;
  char *const *ptrs = ctx->ptrs;
  float *ws_mean = op->ws_mean != 0 ? (float *)(ctx->workspace + op->ws_mean) : NULL;
  float *ws_var = op->ws_var != 0 ? (float *)(ctx->workspace + op->ws_var) : NULL;
  if (op->op_id == TSR_OP_LAYER_NORM_BACKWARD) {
    tsr_onednn_norm_ln_stats_walk(op, ptrs, ws_mean, ws_var, 0);
  } else if (op->op_id == TSR_OP_BATCH_NORM_BACKWARD) {
    const float *invstd = (const float *)ptrs[4];
    for (int64_t c = 0; c < op->stat_count; ++c) {
      const double r = invstd[c];
      ws_var[c] = (float)(1.0 / (r * r) - op->eps);
    }
  }
  void *handles[TSR_ONEDNN_MAX_ARGS];
  for (int32_t i = 0; i < op->num_args; ++i) {
    const int32_t source = op->arg_sources[i];
    handles[i] = source >= 0                         ? (void *)ptrs[source]
                 : source == TSR_ONEDNN_NORM_WS_MEAN ? (void *)ws_mean
                                                     : (void *)ws_var;
  }
  // The scratchpad, when there is one, opens the workspace.
  tsr_status status = tsr_onednn_prim_execute(&op->prim, ctx->stream, handles,
                                              op->prim.scratchpad_bytes ? ctx->workspace : NULL);
  if (status != TSR_OK)
    return status;
  if (op->op_id == TSR_OP_LAYER_NORM) {
    tsr_onednn_norm_ln_stats_walk(op, ptrs, ws_mean, ws_var, 1);
  } else if (op->op_id == TSR_OP_BATCH_NORM) {
    tsr_onednn_norm_bn_forward_finish(op, ptrs);
  }
  return TSR_OK;
}

static void tsr_onednn_norm_destroy(tsr_onednn_op *base) {
  tsr_onednn_norm_op *op = (tsr_onednn_norm_op *)base;
  if (op == NULL)
    return;
  tsr_onednn_prim_fini(&op->prim);
  free(op);
}

// --- shapes -------------------------------------------------------------------

// Merges axes |axes[0..count)| (in order, sizes |sizes|) of |num| tensors
// with strides |strides[t]| into as few axes as possible: size-1 axes are
// dropped, and an axis joins the previous one when it continues it in every
// tensor. Returns the number of merged axes (|out_sizes|, |out_strides[t]|).
static int32_t tsr_onednn_norm_axes_merge(int32_t count, const int32_t *axes, const int64_t *sizes,
                                          int32_t num, const int64_t *const *strides,
                                          int64_t *out_sizes, int64_t out_strides[][TSR_MAX_RANK]) {
  int32_t merged = 0;
  for (int32_t i = 0; i < count; ++i) {
    const int32_t d = axes[i];
    if (sizes[d] == 1)
      continue;
    int joins = merged > 0;
    for (int32_t t = 0; t < num && joins; ++t) {
      joins = out_strides[t][merged - 1] == strides[t][d] * sizes[d];
    }
    if (joins) {
      out_sizes[merged - 1] *= sizes[d];
      for (int32_t t = 0; t < num; ++t) out_strides[t][merged - 1] = strides[t][d];
    } else {
      out_sizes[merged] = sizes[d];
      for (int32_t t = 0; t < num; ++t) out_strides[t][merged] = strides[t][d];
      ++merged;
    }
  }
  return merged;
}

// 1 when axes [from, rank) of |desc| (or all of it when |from| is 0) form one
// dense run ending in stride 1, size-1 axes aside.
static int tsr_onednn_norm_dense_tail(const tsr_tensor_desc *desc, int32_t from) {
  int64_t expected = 1;
  for (int32_t d = desc->rank - 1; d >= from; --d) {
    if (desc->sizes[d] == 1)
      continue;
    if (desc->strides[d] != expected)
      return 0;
    expected *= desc->sizes[d];
  }
  return 1;
}

// --- building -------------------------------------------------------------------

// What a family builder hands to the common tail.
typedef struct tsr_onednn_norm_spec {
  int32_t num_args;
  int32_t arg_ids[TSR_ONEDNN_MAX_ARGS];
  int32_t arg_sources[TSR_ONEDNN_MAX_ARGS];
  uint64_t stage_bytes;  // for each of the staged mean and variance; 0 for none
  uint64_t var_bytes;    // for the staged variance only (batch norm backward); 0 for none
} tsr_onednn_norm_spec;

// Makes the primitive of |pd| with |spec|'s arguments and finishes |op|
// (whose statistics fields the caller filled). |pd|'s first implementation
// must be a jit one (|jit_only|), or else at least not oneDNN's reference
// one ("ref:any", "lnorm_ref:any"): see the top of the file. Under
// autotuning the implementation kept is at least as fast as that one.
static tsr_status tsr_onednn_norm_op_finish(tsr_onednn_norm_op *op, tsr_dnnl_pd *pd,
                                            const tsr_onednn_build_ctx *ctx,
                                            const tsr_onednn_norm_spec *spec, const char *op_name,
                                            int jit_only) {
  const char *impl = tsr_dnnl_pd_impl_name(pd);
  if (jit_only ? strstr(impl, "jit") == NULL : strstr(impl, "ref") != NULL) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "onednn: %s: oneDNN's best here is %s, no faster than the own "
                                "kernel",
                                op_name, impl);
  }
  tsr_status status = tsr_onednn_prim_init(&op->prim, pd, ctx, spec->num_args, spec->arg_ids);
  if (status != TSR_OK)
    return status;
  op->num_args = spec->num_args;
  memcpy(op->arg_sources, spec->arg_sources, sizeof(op->arg_sources));
  // Workspace: scratchpad, then the staged statistics, each 64-aligned; the
  // offsets of the statistics are never 0 when present (0 means absent).
  uint64_t bytes = tsr_onednn_round64(op->prim.scratchpad_bytes);
  if (spec->stage_bytes > 0) {
    if (bytes == 0)
      bytes = 64;
    op->ws_mean = bytes;
    bytes += tsr_onednn_round64(spec->stage_bytes);
    op->ws_var = bytes;
    bytes += tsr_onednn_round64(spec->stage_bytes);
  } else if (spec->var_bytes > 0) {
    if (bytes == 0)
      bytes = 64;
    op->ws_var = bytes;
    bytes += tsr_onednn_round64(spec->var_bytes);
  }
  op->base.workspace_bytes = bytes > 0 ? bytes + 64 : 0;  // + slack for aligning the start
  snprintf(op->base.engine, sizeof(op->base.engine), "onednn:%s", op->prim.impl);
  // oneDNN's normalisations split their reductions statically by the thread
  // count and combine the partial sums in a fixed order, and the own loops
  // here are serial: bit-reproducible for a given thread count.
  op->base.info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  op->base.execute = tsr_onednn_norm_execute;
  op->base.destroy = tsr_onednn_norm_destroy;
  return TSR_OK;
}

static tsr_status tsr_onednn_norm_layer_build(const tsr_op_signature *signature,
                                              const tsr_onednn_build_ctx *ctx,
                                              tsr_onednn_op **out_op) {
  const int backward = signature->op == TSR_OP_LAYER_NORM_BACKWARD;
  const char *op_name = backward ? "layer_norm_backward" : "layer_norm";
  const tsr_layer_norm_attrs *attrs = signature->attrs;
  const tsr_tensor_desc *x = &signature->inputs[backward ? 1 : 0];
  int32_t axis = x->rank - 1;
  uint32_t has_affine = 0;
  double eps = 1e-5;
  if (attrs != NULL) {
    if (TSR_ABI_COVERS(attrs, tsr_layer_norm_attrs, axis))
      axis = attrs->axis;
    if (TSR_ABI_COVERS(attrs, tsr_layer_norm_attrs, has_affine))
      has_affine = attrs->has_affine;
    if (TSR_ABI_COVERS(attrs, tsr_layer_norm_attrs, eps))
      eps = attrs->eps;
  }
  const int affine = has_affine != 0;
  const int32_t ni = signature->num_inputs;
  // Operand indices (inputs, then outputs).
  int32_t data[3], num_data, mean_k, rstd_k, affine_k[3], num_affine = 0;
  if (!backward) {
    data[0] = 0, data[1] = ni, num_data = 2;  // x, y
    mean_k = ni + 1, rstd_k = ni + 2;
    if (affine)
      affine_k[0] = 1, affine_k[1] = 2, num_affine = 2;  // gamma, beta
  } else {
    data[0] = 0, data[1] = 1, data[2] = ni, num_data = 3;  // dy, x, dx
    mean_k = 2, rstd_k = 3;
    if (affine)
      affine_k[0] = 4, affine_k[1] = ni + 1, affine_k[2] = ni + 2, num_affine = 3;
  }
#define TSR_ONEDNN_LN_DESC(k) ((k) < ni ? &signature->inputs[(k)] : &signature->outputs[(k)-ni])

  if (x->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "onednn: %s only float32", op_name);
  }
  const int64_t numel = tsr_onednn_numel(x);
  if (numel == 0 || numel < ctx->min_elements) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "onednn: %s of %lld elements is below the "
                                "primitive threshold",
                                op_name, (long long)numel);
  }
  // oneDNN normalises over the last dim: the normalised axes must be one
  // dense run in every x-shaped operand, and gamma/beta dense.
  int64_t m = 1;
  for (int32_t d = axis; d < x->rank; ++d) m *= x->sizes[d];
  for (int32_t i = 0; i < num_data; ++i) {
    if (!tsr_onednn_norm_dense_tail(TSR_ONEDNN_LN_DESC(data[i]), axis)) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "onednn: %s: the normalised axes are not dense",
                                  op_name);
    }
  }
  for (int32_t i = 0; i < num_affine; ++i) {
    if (!tsr_onednn_norm_dense_tail(TSR_ONEDNN_LN_DESC(affine_k[i]), 0)) {
      return tsr_onednn_error_set(
          TSR_UNSUPPORTED, "onednn: %s: gamma/beta (or their gradients) are not dense", op_name);
    }
  }
  // The leading axes, merged over the x-shaped operands and the statistics.
  int32_t axes[TSR_MAX_RANK];
  for (int32_t d = 0; d < axis; ++d) axes[d] = d;
  const int64_t *strides[5];
  int32_t num_tensors = 0;
  for (int32_t i = 0; i < num_data; ++i)
    strides[num_tensors++] = TSR_ONEDNN_LN_DESC(data[i])->strides;
  strides[num_tensors++] = TSR_ONEDNN_LN_DESC(mean_k)->strides;
  strides[num_tensors++] = TSR_ONEDNN_LN_DESC(rstd_k)->strides;
  int64_t outer[TSR_MAX_RANK];
  int64_t outer_strides[5][TSR_MAX_RANK];
  int32_t num_outer =
      tsr_onednn_norm_axes_merge(axis, axes, x->sizes, num_tensors, strides, outer, outer_strides);
  if (num_outer > TSR_ONEDNN_NORM_MAX_OUTER) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "onednn: %s: the leading axes collapse to %d > %d dims", op_name,
                                (int)num_outer, TSR_ONEDNN_NORM_MAX_OUTER);
  }
  if (num_outer == 0) {
    // One row: oneDNN wants at least 2 dims.
    outer[0] = 1;
    for (int32_t t = 0; t < num_tensors; ++t) outer_strides[t][0] = m;
    num_outer = 1;
  }
  int64_t rows = 1;
  for (int32_t j = 0; j < num_outer; ++j) rows *= outer[j];

  tsr_onednn_norm_op *op = calloc(1, sizeof(*op));
  if (op == NULL)
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "onednn: %s: out of memory", op_name);
  op->op_id = signature->op;
  op->eps = (double)(float)eps;
  op->stat_rank = num_outer;
  op->stat_count = rows;
  op->stat_operands[0] = mean_k;
  op->stat_operands[1] = rstd_k;
  for (int32_t j = 0; j < num_outer; ++j) {
    op->stat_sizes[j] = outer[j];
    op->stat_strides[0][j] = outer_strides[num_data][j];
    op->stat_strides[1][j] = outer_strides[num_data + 1][j];
  }

  // Descriptors: x-shaped ones [outer..., M], statistics dense [outer...].
  tsr_dnnl_md *data_md[3] = {NULL, NULL, NULL};
  tsr_dnnl_md *stat_md = NULL;
  tsr_dnnl_pd *pd = NULL, *hint = NULL;
  tsr_status status = TSR_OK;
  int64_t dims[TSR_ONEDNN_NORM_MAX_OUTER + 1], md_strides[TSR_ONEDNN_NORM_MAX_OUTER + 1];
  for (int32_t i = 0; i < num_data && status == TSR_OK; ++i) {
    for (int32_t j = 0; j < num_outer; ++j) {
      dims[j] = outer[j];
      md_strides[j] = outer_strides[i][j];
    }
    dims[num_outer] = m;
    md_strides[num_outer] = 1;
    status = tsr_dnnl_md_create_strided(num_outer + 1, dims, md_strides, dnnl_f32, &data_md[i]);
  }
  if (status == TSR_OK) {
    int64_t stride = 1;
    for (int32_t j = num_outer - 1; j >= 0; --j) {
      md_strides[j] = stride;
      stride *= outer[j];
    }
    status = tsr_dnnl_md_create_strided(num_outer, outer, md_strides, dnnl_f32, &stat_md);
  }
  const uint32_t flags = affine ? (TSR_DNNL_NORM_USE_SCALE | TSR_DNNL_NORM_USE_SHIFT) : 0;
  const float eps_f = (float)eps;
  tsr_onednn_norm_spec spec;
  memset(&spec, 0, sizeof(spec));
  spec.stage_bytes = (uint64_t)rows * sizeof(float);
  if (status == TSR_OK && !backward) {
    // (x [, gamma, beta]) -> (y, mean, rstd); training: mean and variance out.
    status = tsr_dnnl_pd_layer_norm_fwd(ctx->engine, dnnl_forward_training, data_md[0], data_md[1],
                                        stat_md, eps_f, flags, NULL, &pd);
    const int32_t ids[] = {DNNL_ARG_SRC,      DNNL_ARG_DST,   DNNL_ARG_MEAN,
                           DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    const int32_t sources[] = {0, ni, TSR_ONEDNN_NORM_WS_MEAN, TSR_ONEDNN_NORM_WS_VAR, 1, 2};
    spec.num_args = affine ? 6 : 4;
    memcpy(spec.arg_ids, ids, sizeof(ids));
    memcpy(spec.arg_sources, sources, sizeof(sources));
  } else if (status == TSR_OK) {
    // (dy, x, mean, rstd [, gamma]) -> (dx [, dgamma, dbeta]).
    status = tsr_dnnl_pd_layer_norm_fwd(ctx->engine, dnnl_forward_training, data_md[1], data_md[0],
                                        stat_md, eps_f, flags, NULL, &hint);
    if (status == TSR_OK) {
      status = tsr_dnnl_pd_layer_norm_bwd(ctx->engine, affine ? dnnl_backward : dnnl_backward_data,
                                          data_md[2], data_md[0], data_md[1], stat_md, eps_f, flags,
                                          hint, NULL, &pd);
    }
    // use_shift makes oneDNN count SHIFT among the backward's inputs (both
    // generations) though it never reads it: gamma, same shape, stands in.
    const int32_t ids[] = {DNNL_ARG_SRC,      DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,
                           DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC,   DNNL_ARG_SCALE,
                           DNNL_ARG_SHIFT,    DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT};
    const int32_t sources[] = {
        1, TSR_ONEDNN_NORM_WS_MEAN, TSR_ONEDNN_NORM_WS_VAR, 0, ni, 4, 4, ni + 1, ni + 2};
    spec.num_args = affine ? 9 : 5;
    memcpy(spec.arg_ids, ids, sizeof(ids));
    memcpy(spec.arg_sources, sources, sizeof(sources));
  }
  if (status == TSR_OK) {
    status = tsr_onednn_norm_op_finish(op, pd, ctx, &spec, op_name, 0);
  }
  if (status == TSR_OK) {
    *out_op = &op->base;
    op = NULL;
  }
#undef TSR_ONEDNN_LN_DESC
  if (op != NULL)
    tsr_onednn_norm_destroy(&op->base);
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_pd_destroy(hint);
  for (int32_t i = 0; i < 3; ++i) tsr_dnnl_md_destroy(data_md[i]);
  tsr_dnnl_md_destroy(stat_md);
  return status;
}

static tsr_status tsr_onednn_norm_batch_build(const tsr_op_signature *signature,
                                              const tsr_onednn_build_ctx *ctx,
                                              tsr_onednn_op **out_op) {
  const int backward = signature->op == TSR_OP_BATCH_NORM_BACKWARD;
  const char *op_name = backward ? "batch_norm_backward" : "batch_norm";
  const tsr_batch_norm_attrs *attrs = signature->attrs;
  double eps = 1e-5, momentum = 0.1;
  uint32_t training = 1;
  if (attrs != NULL) {
    if (TSR_ABI_COVERS(attrs, tsr_batch_norm_attrs, eps))
      eps = attrs->eps;
    if (TSR_ABI_COVERS(attrs, tsr_batch_norm_attrs, momentum))
      momentum = attrs->momentum;
    if (TSR_ABI_COVERS(attrs, tsr_batch_norm_attrs, training))
      training = attrs->training;
  }
  // Forward: (x, gamma, beta, running_mean, running_var) -> (y, save_mean,
  // save_invstd, running_mean_out, running_var_out). Backward: (dy, x, gamma,
  // save_mean, save_invstd) -> (dx, dgamma, dbeta).
  const tsr_tensor_desc *x = &signature->inputs[backward ? 1 : 0];
  const tsr_tensor_desc *data[3];
  int32_t num_data;
  if (!backward) {
    data[0] = x, data[1] = &signature->outputs[0], num_data = 2;  // x, y
  } else {
    data[0] = &signature->inputs[0], data[1] = x, data[2] = &signature->outputs[0];  // dy, x, dx
    num_data = 3;
  }
  if (x->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "onednn: %s only float32", op_name);
  }
  const int64_t numel = tsr_onednn_numel(x);
  if (numel == 0 || numel < ctx->min_elements) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "onednn: %s of %lld elements is below the "
                                "primitive threshold",
                                op_name, (long long)numel);
  }
  const int64_t channels = x->sizes[1];
  // oneDNN's statistics are dense [C]; so must the catalogue's be.
  for (int32_t k = 0; k < signature->num_inputs + signature->num_outputs; ++k) {
    const int32_t ni = signature->num_inputs;
    const tsr_tensor_desc *d = k < ni ? &signature->inputs[k] : &signature->outputs[k - ni];
    if (d->rank == 1 && channels > 1 && d->strides[0] != 1) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "onednn: %s: per-channel operands must be dense",
                                  op_name);
    }
  }
  // [N, C, spatial...] with the spatial axes merged (oneDNN takes 0 to 3).
  int32_t axes[TSR_MAX_RANK];
  for (int32_t d = 2; d < x->rank; ++d) axes[d - 2] = d;
  const int64_t *strides[3];
  for (int32_t i = 0; i < num_data; ++i) strides[i] = data[i]->strides;
  int64_t spatial[TSR_MAX_RANK];
  int64_t spatial_strides[3][TSR_MAX_RANK];
  int32_t num_spatial = tsr_onednn_norm_axes_merge(x->rank - 2, axes, x->sizes, num_data, strides,
                                                   spatial, spatial_strides);
  if (num_spatial > 3) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "onednn: %s: the spatial axes collapse to %d > 3 dims", op_name,
                                (int)num_spatial);
  }
  if (num_spatial == 1) {
    // One spatial run S: described as [N, C, 1, S], the nchw that oneDNN's
    // planar implementation recognises (2.6's takes nchw, not ncw).
    spatial[1] = spatial[0];
    spatial[0] = 1;
    for (int32_t i = 0; i < num_data; ++i) {
      spatial_strides[i][1] = spatial_strides[i][0];
      spatial_strides[i][0] = spatial[1] * spatial_strides[i][1];
    }
    num_spatial = 2;
  }
  const int64_t group = numel / channels;  // M

  tsr_onednn_norm_op *op = calloc(1, sizeof(*op));
  if (op == NULL)
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "onednn: %s: out of memory", op_name);
  op->op_id = signature->op;
  op->training = training != 0;
  op->eps = (double)(float)eps;
  op->momentum = (double)(float)momentum;
  op->unbiased = group > 1 ? (double)group / (double)(group - 1) : 0;
  op->stat_rank = 1;
  op->stat_count = channels;

  tsr_dnnl_md *data_md[3] = {NULL, NULL, NULL};
  tsr_dnnl_pd *pd = NULL, *hint = NULL;
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < num_data && status == TSR_OK; ++i) {
    int64_t dims[5] = {x->sizes[0], channels},
            md_strides[5] = {data[i]->strides[0], data[i]->strides[1]};
    for (int32_t j = 0; j < num_spatial; ++j) {
      dims[2 + j] = spatial[j];
      md_strides[2 + j] = spatial_strides[i][j];
    }
    status = tsr_dnnl_md_create_strided(2 + num_spatial, dims, md_strides, dnnl_f32, &data_md[i]);
  }
  const uint32_t flags = TSR_DNNL_NORM_USE_SCALE | TSR_DNNL_NORM_USE_SHIFT |
                         (op->training ? 0u : (uint32_t)TSR_DNNL_NORM_USE_GLOBAL_STATS);
  const float eps_f = (float)eps;
  tsr_onednn_norm_spec spec;
  memset(&spec, 0, sizeof(spec));
  if (status == TSR_OK && !backward) {
    // Training writes the batch mean to save_mean and the variance to
    // save_invstd (made invstd after); inference reads the running ones.
    status = tsr_dnnl_pd_batch_norm_fwd(
        ctx->engine, op->training ? dnnl_forward_training : dnnl_forward_inference, data_md[0],
        data_md[1], eps_f, flags, NULL, &pd);
    const int32_t ids[] = {DNNL_ARG_SRC,   DNNL_ARG_DST,  DNNL_ARG_SCALE,
                           DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    const int32_t train_sources[] = {0, 5, 1, 2, 6, 7};
    const int32_t infer_sources[] = {0, 5, 1, 2, 3, 4};
    spec.num_args = 6;
    memcpy(spec.arg_ids, ids, sizeof(ids));
    memcpy(spec.arg_sources, op->training ? train_sources : infer_sources, sizeof(train_sources));
  } else if (status == TSR_OK && tsr_dnnl_api_generation() >= 3) {
    // oneDNN 3.2's bnorm_tbb_jit backward refuses this argument set at
    // execution ("invalid arguments") although its descriptor accepted it;
    // 2.6 runs it. Until that is understood the own kernel runs it on 3.x.
    status = tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "batch_norm_backward: kept on the own kernel with oneDNN 3.x");
  } else if (status == TSR_OK) {
    status = tsr_dnnl_pd_batch_norm_fwd(ctx->engine, dnnl_forward_training, data_md[1], data_md[1],
                                        eps_f, flags, NULL, &hint);
    if (status == TSR_OK) {
      status = tsr_dnnl_pd_batch_norm_bwd(ctx->engine, dnnl_backward, data_md[2], data_md[0],
                                          data_md[1], eps_f, flags, hint, NULL, &pd);
    }
    // As for layer norm, SHIFT counts as an input of the backward but is
    // never read: gamma stands in.
    const int32_t ids[] = {DNNL_ARG_SRC,      DNNL_ARG_DIFF_DST,   DNNL_ARG_SCALE,
                           DNNL_ARG_SHIFT,    DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,
                           DNNL_ARG_DIFF_SRC, DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT};
    const int32_t sources[] = {1, 0, 2, 2, 3, TSR_ONEDNN_NORM_WS_VAR, 5, 6, 7};
    spec.num_args = 9;
    memcpy(spec.arg_ids, ids, sizeof(ids));
    memcpy(spec.arg_sources, sources, sizeof(sources));
    spec.var_bytes = (uint64_t)channels * sizeof(float);
  }
  if (status == TSR_OK)
    status = tsr_onednn_norm_op_finish(op, pd, ctx, &spec, op_name, 1);
  if (status == TSR_OK) {
    *out_op = &op->base;
    op = NULL;
  }
  if (op != NULL)
    tsr_onednn_norm_destroy(&op->base);
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_pd_destroy(hint);
  for (int32_t i = 0; i < 3; ++i) tsr_dnnl_md_destroy(data_md[i]);
  return status;
}

tsr_status tsr_onednn_norm_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op) {
  *out_op = NULL;
  switch (signature->op) {
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD:
      return tsr_onednn_norm_layer_build(signature, ctx, out_op);
    case TSR_OP_BATCH_NORM:
    case TSR_OP_BATCH_NORM_BACKWARD:
      return tsr_onednn_norm_batch_build(signature, ctx, out_op);
    default:
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "onednn: %s is not a normalisation",
                                  tsr_op_name(signature->op));
  }
}
