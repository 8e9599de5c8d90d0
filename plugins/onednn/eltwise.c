// UNARY, UNARY_BACKWARD and CLAMP on oneDNN's eltwise primitive, and the
// helpers the elementwise-like families share (onednn_ew.h).
//
// A function goes to oneDNN in two steps. A table (eltwise_check.c) maps it
// to the eltwise algorithm with the catalogue's formula (NEG is x * -1 on the
// binary primitive instead: eltwise_linear computes -1 * x + 0, which turns
// -0 into +0). Then, because oneDNN's vector code does not follow the
// catalogue's special values and accuracy everywhere, and strays differently
// per version and ISA, the algorithm must pass eltwise_check.h's check on
// the CPU at hand; a function that fails stays on the own kernel.
//
// Only float32: the check compares float32 results, and on AVX2 oneDNN has
// no bfloat16/float16 eltwise code besides its reference loops; int dtypes
// would be computed in float32, which is not the catalogue's wrap-around
// arithmetic. x and out must share one dense layout (a transposed or
// permuted one is fine: elementwise work sees it as one block); broadcast
// inputs and gapped layouts stay on the own kernel.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eltwise_check.h"
#include "onednn_ew.h"
#include "onednn_plugin.h"

// --- shared helpers (onednn_ew.h) ---------------------------------------------

static tsr_status tsr_onednn_ew_op_execute(const tsr_onednn_op *base,
                                           const tsr_onednn_exec_ctx *ctx) {
  return tsr_onednn_ew_op_run((const tsr_onednn_ew_op *)base, ctx);
}

void tsr_onednn_ew_op_destroy(tsr_onednn_op *base) {
  tsr_onednn_ew_op *op = (tsr_onednn_ew_op *)base;
  if (op == NULL)
    return;
  tsr_onednn_prim_fini(&op->prim);
  free(op);
}

tsr_status tsr_onednn_ew_op_create(size_t bytes, const char *what, tsr_onednn_ew_op **out_op) {
  *out_op = NULL;
  if (bytes < sizeof(tsr_onednn_ew_op))
    bytes = sizeof(tsr_onednn_ew_op);
  tsr_onednn_ew_op *op = calloc(1, bytes);
  if (op == NULL) {
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: %zu bytes for an op", what, bytes);
  }
  op->base.execute = tsr_onednn_ew_op_execute;
  op->base.destroy = tsr_onednn_ew_op_destroy;
  *out_op = op;
  return TSR_OK;
}

tsr_status tsr_onednn_ew_op_prim_init(tsr_onednn_ew_op *op, tsr_dnnl_pd *pd,
                                      const tsr_onednn_build_ctx *ctx, int32_t num_args,
                                      const int32_t *arg_ids, const int32_t *operands,
                                      int allow_ref, const char *what) {
  // oneDNN lists its reference implementation last, so one that comes first
  // is the only one.
  if (!allow_ref && strncmp(tsr_dnnl_pd_impl_name(pd), "ref", 3) == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "%s: oneDNN has only its reference implementation (%s) here", what,
                                tsr_dnnl_pd_impl_name(pd));
  }
  tsr_status status = tsr_onednn_prim_init(&op->prim, pd, ctx, num_args, arg_ids);
  if (status != TSR_OK)
    return status;
  if (!allow_ref && strncmp(op->prim.impl, "ref", 3) == 0) {
    // Autotuning lands here only when nothing faster could run.
    tsr_onednn_prim_fini(&op->prim);
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: only oneDNN's reference code ran", what);
  }
  op->num_handles = num_args;
  for (int32_t i = 0; i < num_args; ++i) op->handle_operands[i] = operands[i];
  snprintf(op->base.engine, sizeof(op->base.engine), "onednn:%s", op->prim.impl);
  op->base.workspace_bytes =
      op->prim.scratchpad_bytes > 0 ? tsr_onednn_round64(op->prim.scratchpad_bytes) + 64 : 0;
  // Elementwise work splits by a fixed rule and every element is computed
  // alone; the families whose sums could depend on more say so themselves.
  op->base.info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

tsr_status tsr_onednn_ew_op_run(const tsr_onednn_ew_op *op, const tsr_onednn_exec_ctx *ctx) {
  void *handles[TSR_ONEDNN_MAX_ARGS];
  for (int32_t i = 0; i < op->num_handles; ++i) {
    const int32_t k = op->handle_operands[i];
    // oneDNN only reads an input argument, so the const constant is safe.
    handles[i] = k == TSR_ONEDNN_EW_CONSTANT ? (void *)&op->constant : (void *)ctx->ptrs[k];
  }
  return tsr_onednn_prim_execute(&op->prim, ctx->stream, handles, ctx->workspace);
}

tsr_status tsr_onednn_ew_size_check(const tsr_onednn_build_ctx *ctx, int64_t numel,
                                    const char *what) {
  if (numel == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: empty, nothing for oneDNN to do", what);
  }
  if (numel < ctx->min_elements) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "%s: %lld elements are cheaper on the own kernel (below %lld)",
                                what, (long long)numel, (long long)ctx->min_elements);
  }
  return TSR_OK;
}

void tsr_onednn_ew_layout_get(int32_t count, const tsr_tensor_desc *const *descs,
                              tsr_onednn_ew_layout *out_layout) {
  const tsr_tensor_desc *ref = descs[0];
  tsr_onednn_ew_layout *l = out_layout;
  memset(l, 0, sizeof(*l));
  l->count = count;
  // Size-1 dimensions address nothing; the rest in the first operand's
  // physical order, outermost first (insertion sort keeps ties in order).
  int32_t order[TSR_MAX_RANK];
  int32_t n = 0;
  for (int32_t d = 0; d < ref->rank; ++d) {
    if (ref->sizes[d] != 1)
      order[n++] = d;
  }
  for (int32_t i = 1; i < n; ++i) {
    for (int32_t j = i; j > 0 && ref->strides[order[j - 1]] < ref->strides[order[j]]; --j) {
      const int32_t t = order[j - 1];
      order[j - 1] = order[j];
      order[j] = t;
    }
  }
  for (int32_t k = 0; k < n; ++k) {
    const int32_t d = order[k];
    const int64_t size = ref->sizes[d];
    int merge = l->rank > 0;
    for (int32_t i = 0; i < count && merge; ++i) {
      merge = l->strides[i][l->rank - 1] == descs[i]->strides[d] * size;
    }
    if (merge) {
      l->dims[l->rank - 1] *= size;
      for (int32_t i = 0; i < count; ++i) l->strides[i][l->rank - 1] = descs[i]->strides[d];
    } else {
      l->dims[l->rank] = size;
      for (int32_t i = 0; i < count; ++i) l->strides[i][l->rank] = descs[i]->strides[d];
      ++l->rank;
    }
  }
  if (l->rank == 0) {
    // A single element.
    l->rank = 1;
    l->dims[0] = 1;
    for (int32_t i = 0; i < count; ++i) l->strides[i][0] = 1;
  }
}

int tsr_onednn_ew_layout_broadcasts(const tsr_onednn_ew_layout *layout, int32_t i) {
  for (int32_t d = 0; d < layout->rank; ++d) {
    if (layout->dims[d] > 1 && layout->strides[i][d] == 0)
      return 1;
  }
  return 0;
}

int tsr_onednn_ew_layout_same(const tsr_onednn_ew_layout *layout, int32_t i, int32_t j) {
  for (int32_t d = 0; d < layout->rank; ++d) {
    if (layout->dims[d] > 1 && layout->strides[i][d] != layout->strides[j][d])
      return 0;
  }
  return 1;
}

// Gives size-1 dimensions the stride a row-major layout would: oneDNN's
// fast paths recognise plain layouts by their strides.
static void tsr_onednn_ew_unit_strides_fill(int32_t rank, const int64_t *dims, int64_t *strides) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (dims[d] == 1)
      strides[d] = d == rank - 1 ? 1 : strides[d + 1] * dims[d + 1];
  }
}

tsr_status tsr_onednn_ew_layout_md(const tsr_onednn_ew_layout *layout, int32_t i,
                                   dnnl_data_type_t dtype, tsr_dnnl_md **out_md) {
  int64_t dims[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  for (int32_t d = 0; d < layout->rank; ++d) {
    strides[d] = layout->strides[i][d];
    dims[d] = strides[d] == 0 ? 1 : layout->dims[d];
  }
  tsr_onednn_ew_unit_strides_fill(layout->rank, dims, strides);
  return tsr_dnnl_md_create_strided(layout->rank, dims, strides, dtype, out_md);
}

tsr_status tsr_onednn_ew_scalar_md(int32_t rank, dnnl_data_type_t dtype, tsr_dnnl_md **out_md) {
  int64_t dims[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) dims[d] = strides[d] = 1;
  return tsr_dnnl_md_create_strided(rank, dims, strides, dtype, out_md);
}

// --- UNARY, UNARY_BACKWARD, CLAMP ---------------------------------------------

// Reads the op's attributes into |s| (defaults as the catalogue gives them).
static tsr_status tsr_onednn_eltwise_spec_read(const tsr_op_signature *signature,
                                               tsr_onednn_eltwise_spec *s) {
  memset(s, 0, sizeof(*s));
  s->op = signature->op;
  s->fn = -1;
  if (signature->op == TSR_OP_CLAMP) {
    const tsr_clamp_attrs *attrs = signature->attrs;
    // NULL attrs: no bounds, a copy (data.c's business, not eltwise's).
    if (attrs == NULL || (!attrs->has_min && !attrs->has_max)) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "clamp: no bounds, a copy");
    }
    if ((attrs->has_min && isnan(attrs->min)) || (attrs->has_max && isnan(attrs->max))) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "clamp: a NaN bound stays on the own kernel");
    }
    // Bounds are converted to the dtype first, as CAST converts a float64.
    s->lo = attrs->has_min ? (float)attrs->min : -INFINITY;
    s->hi = attrs->has_max ? (float)attrs->max : INFINITY;
    s->alg = dnnl_eltwise_clip;
    s->dnnl_alpha = s->lo;
    s->dnnl_beta = s->hi;
    return TSR_OK;
  }
  // The plan layer validated that fn is covered and valid.
  const tsr_unary_attrs *attrs = signature->attrs;
  s->fn = attrs->fn;
  double alpha = attrs->fn == TSR_UNARY_LEAKY_RELU ? 0.01 : 1.0;
  if (TSR_ABI_COVERS(attrs, tsr_unary_attrs, alpha))
    alpha = attrs->alpha;
  s->alpha = (float)alpha;
  return TSR_OK;
}

// Describes the operands as one plain layout; TSR_UNSUPPORTED when they do
// not share one (oneDNN's eltwise takes one layout for data and result) or
// an input broadcasts.
static tsr_status tsr_onednn_eltwise_layout(const tsr_op_signature *signature, const char *what,
                                            tsr_onednn_ew_layout *layout) {
  const tsr_tensor_desc *descs[TSR_ONEDNN_EW_MAX_OPERANDS];
  int32_t count = 0;
  descs[count++] = &signature->outputs[0];
  for (int32_t i = 0; i < signature->num_inputs; ++i) descs[count++] = &signature->inputs[i];
  tsr_onednn_ew_layout_get(count, descs, layout);
  for (int32_t i = 1; i < count; ++i) {
    if (tsr_onednn_ew_layout_broadcasts(layout, i)) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: a broadcast input stays on the own kernel",
                                  what);
    }
    if (!tsr_onednn_ew_layout_same(layout, 0, i)) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "%s: inputs and output in different layouts stay on the own "
                                  "kernel",
                                  what);
    }
  }
  return TSR_OK;
}

// NEG as x * -1 on the binary primitive: exact, -0 and NaN included.
static tsr_status tsr_onednn_eltwise_neg_build(const tsr_onednn_build_ctx *ctx,
                                               const tsr_dnnl_md *md, int32_t rank,
                                               const_dnnl_primitive_attr_t attr,
                                               tsr_onednn_ew_op *op) {
  tsr_dnnl_md *scalar = NULL;
  tsr_dnnl_pd *pd = NULL;
  tsr_status status = tsr_onednn_ew_scalar_md(rank, dnnl_f32, &scalar);
  if (status == TSR_OK) {
    status = tsr_dnnl_pd_binary(ctx->engine, dnnl_binary_mul, md, scalar, md, attr, &pd);
  }
  if (status == TSR_OK) {
    static const int32_t ids[] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    static const int32_t operands[] = {0, TSR_ONEDNN_EW_CONSTANT, 1};
    op->constant = -1.0f;
    status = tsr_onednn_ew_op_prim_init(op, pd, ctx, 3, ids, operands, 0, "neg");
  }
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_md_destroy(scalar);
  return status;
}

tsr_status tsr_onednn_eltwise_build(const tsr_op_signature *signature,
                                    const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op) {
  *out_op = NULL;
  tsr_onednn_eltwise_spec s;
  tsr_status status = tsr_onednn_eltwise_spec_read(signature, &s);
  if (status != TSR_OK)
    return status;
  const char *what = tsr_onednn_eltwise_fn_name(&s);
  const tsr_tensor_desc *out = &signature->outputs[0];
  if (out->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: dtype %d stays on the own kernel", what,
                                (int)out->dtype);
  }
  const int neg = s.op == TSR_OP_UNARY && s.fn == TSR_UNARY_NEG;
  if (s.op != TSR_OP_CLAMP && !neg && !tsr_onednn_eltwise_alg(&s)) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: oneDNN has no eltwise algorithm for it",
                                what);
  }
  status = tsr_onednn_ew_size_check(ctx, tsr_onednn_numel(out), what);
  if (status != TSR_OK)
    return status;
  tsr_onednn_ew_layout layout;
  status = tsr_onednn_eltwise_layout(signature, what, &layout);
  if (status != TSR_OK)
    return status;

  tsr_dnnl_md *md = NULL;
  dnnl_primitive_attr_t attr = NULL;
  tsr_dnnl_pd *fwd = NULL, *bwd = NULL;
  tsr_onednn_ew_op *op = NULL;
  status = tsr_onednn_ew_layout_md(&layout, 0, dnnl_f32, &md);
  if (status == TSR_OK)
    status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK)
    status = tsr_onednn_ew_op_create(sizeof(*op), what, &op);
  if (status == TSR_OK && neg) {
    status = tsr_onednn_eltwise_neg_build(ctx, md, layout.rank, attr, op);
  } else if (status == TSR_OK && s.op == TSR_OP_UNARY_BACKWARD) {
    // (dy, x) -> dx, x being the data of the backward.
    status = tsr_dnnl_pd_eltwise_fwd(ctx->engine, dnnl_forward_training, s.alg, s.dnnl_alpha,
                                     s.dnnl_beta, md, md, attr, &fwd);
    if (status == TSR_OK) {
      status = tsr_dnnl_pd_eltwise_bwd(ctx->engine, s.alg, s.dnnl_alpha, s.dnnl_beta, md, md, md,
                                       fwd, attr, &bwd);
    }
    if (status == TSR_OK) {
      static const int32_t ids[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_DIFF_SRC};
      static const int32_t operands[] = {0, 1, 2};
      status = tsr_onednn_ew_op_prim_init(op, bwd, ctx, 3, ids, operands, 0, what);
    }
  } else if (status == TSR_OK) {
    status = tsr_dnnl_pd_eltwise_fwd(ctx->engine, dnnl_forward_inference, s.alg, s.dnnl_alpha,
                                     s.dnnl_beta, md, md, attr, &fwd);
    if (status == TSR_OK) {
      static const int32_t ids[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
      static const int32_t operands[] = {0, 1};
      status = tsr_onednn_ew_op_prim_init(op, fwd, ctx, 2, ids, operands, 0, what);
    }
  }
  if (status == TSR_OK && !neg)
    status = tsr_onednn_eltwise_check(&s, ctx, op->prim.impl);
  tsr_dnnl_pd_destroy(bwd);
  tsr_dnnl_pd_destroy(fwd);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  tsr_dnnl_md_destroy(md);
  if (status != TSR_OK) {
    tsr_onednn_ew_op_destroy(op ? &op->base : NULL);
    return status;
  }
  *out_op = &op->base;
  return TSR_OK;
}
