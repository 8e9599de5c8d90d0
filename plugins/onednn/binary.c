// BINARY on oneDNN's binary primitive (alpha = 1) and sum primitive
// (ADD/SUB with alpha != 1).
//
// oneDNN broadcasts only its second source, so for ADD and MUL a broadcast
// `a` is swapped into that place (a + b and a * b are exact in either order);
// SUB and DIV with a broadcast `a` stay on the own kernel. In place, the
// output may be the first source: an output aliasing `b` alone is swapped
// likewise, or the op stays on the own kernel.
//
// ADD and SUB with alpha != 1 are one sum primitive, dst = 1 * a +- alpha * b
// (alpha * b rounded once and possibly fused with the add, as the catalogue
// allows); it does not broadcast, so a broadcast operand keeps them on the
// own kernel.
//
// MAXIMUM and MINIMUM stay on the own kernel: oneDNN's max(NaN, 1) is 1 (its
// vector max returns the second operand when the first is NaN; measured with
// 2.6 and 3.2 on AVX2), where the catalogue propagates NaN. POW has no binary
// algorithm, the logical functions are bool. Only float32: int arithmetic
// would go through float32 in oneDNN, not the catalogue's wrap-around, and
// bfloat16/float16 have only reference code on this AVX2 machine.
#include "onednn_ew.h"

enum { TSR_BIN_OUT = 0, TSR_BIN_A = 1, TSR_BIN_B = 2 };  // layout operands

// a + alpha * b or a - alpha * b as one sum primitive.
static tsr_status tsr_onednn_binary_sum_build(const tsr_onednn_build_ctx *ctx,
                                              const tsr_onednn_ew_layout *layout, float scale_b,
                                              int b_first, const_dnnl_primitive_attr_t attr,
                                              tsr_onednn_ew_op *op) {
  tsr_dnnl_md *mds[3] = {NULL, NULL, NULL};
  tsr_dnnl_pd *pd = NULL;
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < 3 && status == TSR_OK; ++i) {
    status = tsr_onednn_ew_layout_md(layout, i, dnnl_f32, &mds[i]);
  }
  // The source the output aliases goes first: oneDNN's sum may write over
  // its first source only.
  const int first = b_first ? TSR_BIN_B : TSR_BIN_A, second = b_first ? TSR_BIN_A : TSR_BIN_B;
  const float scales[2] = {b_first ? scale_b : 1.0f, b_first ? 1.0f : scale_b};
  if (status == TSR_OK) {
    const tsr_dnnl_md *srcs[2] = {mds[first], mds[second]};
    status = tsr_dnnl_pd_sum(ctx->engine, mds[TSR_BIN_OUT], 2, scales, srcs, attr, &pd);
  }
  if (status == TSR_OK) {
    // ctx->ptrs: a = 0, b = 1, out = 2.
    const int32_t ids[] = {DNNL_ARG_MULTIPLE_SRC, DNNL_ARG_MULTIPLE_SRC + 1, DNNL_ARG_DST};
    const int32_t operands[] = {first - 1, second - 1, 2};
    status = tsr_onednn_ew_op_prim_init(op, pd, ctx, 3, ids, operands, 0, "binary");
  }
  tsr_dnnl_pd_destroy(pd);
  for (int32_t i = 0; i < 3; ++i) tsr_dnnl_md_destroy(mds[i]);
  return status;
}

static tsr_status tsr_onednn_binary_prim_build(const tsr_onednn_build_ctx *ctx,
                                               const tsr_onednn_ew_layout *layout,
                                               dnnl_alg_kind_t alg, int swap,
                                               const_dnnl_primitive_attr_t attr,
                                               tsr_onednn_ew_op *op) {
  const int32_t src0 = swap ? TSR_BIN_B : TSR_BIN_A, src1 = swap ? TSR_BIN_A : TSR_BIN_B;
  tsr_dnnl_md *md0 = NULL, *md1 = NULL, *dst = NULL;
  tsr_dnnl_pd *pd = NULL;
  tsr_status status = tsr_onednn_ew_layout_md(layout, src0, dnnl_f32, &md0);
  if (status == TSR_OK)
    status = tsr_onednn_ew_layout_md(layout, src1, dnnl_f32, &md1);
  if (status == TSR_OK)
    status = tsr_onednn_ew_layout_md(layout, TSR_BIN_OUT, dnnl_f32, &dst);
  if (status == TSR_OK)
    status = tsr_dnnl_pd_binary(ctx->engine, alg, md0, md1, dst, attr, &pd);
  if (status == TSR_OK) {
    const int32_t ids[] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    const int32_t operands[] = {src0 - 1, src1 - 1, 2};
    status = tsr_onednn_ew_op_prim_init(op, pd, ctx, 3, ids, operands, 0, "binary");
  }
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_md_destroy(md0);
  tsr_dnnl_md_destroy(md1);
  tsr_dnnl_md_destroy(dst);
  return status;
}

tsr_status tsr_onednn_binary_build(const tsr_op_signature *signature,
                                   const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op) {
  *out_op = NULL;
  // The plan layer validated the attributes; alpha defaults to 1 when an
  // older, shorter struct lacks it.
  const tsr_binary_attrs *attrs = signature->attrs;
  const tsr_binary_fn_t fn = attrs->fn;
  const double alpha = TSR_ABI_COVERS(attrs, tsr_binary_attrs, alpha) ? attrs->alpha : 1.0;
  const tsr_tensor_desc *a = &signature->inputs[0], *b = &signature->inputs[1];
  const tsr_tensor_desc *out = &signature->outputs[0];

  dnnl_alg_kind_t alg;
  int commutative = 0;
  switch (fn) {
    case TSR_BINARY_ADD:
      alg = dnnl_binary_add;
      commutative = 1;
      break;
    case TSR_BINARY_SUB:
      alg = dnnl_binary_sub;
      break;
    case TSR_BINARY_MUL:
      alg = dnnl_binary_mul;
      commutative = 1;
      break;
    case TSR_BINARY_DIV:
      alg = dnnl_binary_div;
      break;
    case TSR_BINARY_MAXIMUM:
    case TSR_BINARY_MINIMUM:
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "binary: oneDNN's max/min drop a NaN operand; stays on the own "
                                  "kernel");
    default:
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "binary: fn %d has no oneDNN algorithm",
                                  (int)fn);
  }
  if (out->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "binary: dtype %d stays on the own kernel",
                                (int)out->dtype);
  }
  tsr_status status = tsr_onednn_ew_size_check(ctx, tsr_onednn_numel(out), "binary");
  if (status != TSR_OK)
    return status;

  const tsr_tensor_desc *descs[3] = {out, a, b};
  tsr_onednn_ew_layout layout;
  tsr_onednn_ew_layout_get(3, descs, &layout);
  const int a_bcast = tsr_onednn_ew_layout_broadcasts(&layout, TSR_BIN_A);
  const int b_bcast = tsr_onednn_ew_layout_broadcasts(&layout, TSR_BIN_B);
  // An output sharing an alias group with an input is that input's view
  // exactly (the plan layer checked it).
  const int out_is_a = out->alias_group >= 0 && out->alias_group == a->alias_group;
  const int out_is_b = out->alias_group >= 0 && out->alias_group == b->alias_group;
  // The catalogue converts alpha to the compute type first.
  const float alpha_f = (float)alpha;
  const int use_sum = (fn == TSR_BINARY_ADD || fn == TSR_BINARY_SUB) && alpha_f != 1.0f;
  int swap = 0;
  if (use_sum) {
    if (a_bcast || b_bcast) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "binary: alpha != 1 with a broadcast operand stays on the own "
                                  "kernel");
    }
  } else {
    swap = (a_bcast && !b_bcast) || (out_is_b && !out_is_a);
    if (swap && !commutative) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "binary: oneDNN broadcasts and writes in place only its first "
                                  "source's partner; sub/div with a broadcast or overwritten b "
                                  "stay on the own kernel");
    }
    if (swap ? b_bcast : a_bcast) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "binary: both operands broadcast; stays on the own kernel");
    }
  }

  dnnl_primitive_attr_t attr = NULL;
  tsr_onednn_ew_op *op = NULL;
  status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK)
    status = tsr_onednn_ew_op_create(sizeof(*op), "binary", &op);
  if (status == TSR_OK && use_sum) {
    const float scale_b = fn == TSR_BINARY_SUB ? -alpha_f : alpha_f;
    status = tsr_onednn_binary_sum_build(ctx, &layout, scale_b, out_is_b && !out_is_a, attr, op);
  } else if (status == TSR_OK) {
    status = tsr_onednn_binary_prim_build(ctx, &layout, alg, swap, attr, op);
  }
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  if (status != TSR_OK) {
    tsr_onednn_ew_op_destroy(op ? &op->base : NULL);
    return status;
  }
  *out_op = &op->base;
  return TSR_OK;
}
