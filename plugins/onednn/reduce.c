// REDUCE on oneDNN's reduction primitive: SUM, MEAN and PROD of float32.
//
// The axes are first seen in x's physical order with neighbours of the same
// kind (reduced or kept) merged wherever x and out are contiguous across
// them, so "sum the last two axes of a dense tensor" or "sum axis 0 of a
// column-major matrix" reach oneDNN as the one inner reduction its vector
// code (jit:avx2 on this machine) handles. Everything else oneDNN would do
// in its reference loops, and that stays on the own kernel.
//
// MAX and MIN stay on the own kernel: oneDNN's vector max drops a NaN
// instead of propagating it (a NaN row came out 3 with 2.6 and 3.2 on AVX2).
// int SUM and PROD wrap in the catalogue, which oneDNN's float32 arithmetic
// does not; bfloat16/float16 have no reduction code besides the reference
// one on this machine. An empty reduced axis (SUM 0, PROD 1, MEAN NaN) and
// axes_mask 0 (a copy) are the own kernel's too.
//
// Deterministic: oneDNN's CPU reduction splits the work by a fixed rule for
// a given thread count, so repeated runs with the same threads agree bit for
// bit (the order of the float sums may change with the thread count).
#include <string.h>

#include "onednn_ew.h"

// The reduction seen as oneDNN gets it.
typedef struct tsr_onednn_reduce_shape {
  int32_t rank;
  int64_t src_dims[TSR_MAX_RANK], src_strides[TSR_MAX_RANK];
  int64_t dst_dims[TSR_MAX_RANK], dst_strides[TSR_MAX_RANK];
} tsr_onednn_reduce_shape;

// Orders x's axes by its strides (outermost first), drops size-1 axes and
// merges neighbours of one kind across which x, and out for kept axes, are
// contiguous.
static void tsr_onednn_reduce_shape_get(const tsr_tensor_desc *x, const tsr_tensor_desc *out,
                                        uint32_t mask, tsr_onednn_reduce_shape *s) {
  memset(s, 0, sizeof(*s));
  int32_t order[TSR_MAX_RANK];
  int32_t n = 0;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (x->sizes[d] != 1)
      order[n++] = d;
  }
  for (int32_t i = 1; i < n; ++i) {
    for (int32_t j = i; j > 0 && x->strides[order[j - 1]] < x->strides[order[j]]; --j) {
      const int32_t t = order[j - 1];
      order[j - 1] = order[j];
      order[j] = t;
    }
  }
  int reduced[TSR_MAX_RANK];
  for (int32_t k = 0; k < n; ++k) {
    const int32_t d = order[k];
    const int r = (mask >> d) & 1u;
    const int32_t last = s->rank - 1;
    int merge =
        s->rank > 0 && reduced[last] == r && s->src_strides[last] == x->strides[d] * x->sizes[d];
    if (merge && !r)
      merge = s->dst_strides[last] == out->strides[d] * out->sizes[d];
    if (merge) {
      s->src_dims[last] *= x->sizes[d];
      s->src_strides[last] = x->strides[d];
      if (!r) {
        s->dst_dims[last] *= out->sizes[d];
        s->dst_strides[last] = out->strides[d];
      }
      continue;
    }
    reduced[s->rank] = r;
    s->src_dims[s->rank] = x->sizes[d];
    s->src_strides[s->rank] = x->strides[d];
    s->dst_dims[s->rank] = r ? 1 : out->sizes[d];
    s->dst_strides[s->rank] = r ? 0 : out->strides[d];
    ++s->rank;
  }
  if (s->rank == 0) {
    // One element reduced to itself.
    s->rank = 1;
    s->src_dims[0] = s->dst_dims[0] = 1;
    s->src_strides[0] = s->dst_strides[0] = 1;
  }
  // Reduced axes of out have size 1: the stride a row-major layout gives.
  for (int32_t d = s->rank - 1; d >= 0; --d) {
    if (s->dst_dims[d] == 1) {
      s->dst_strides[d] = d == s->rank - 1 ? 1 : s->dst_strides[d + 1] * s->dst_dims[d + 1];
    }
  }
}

tsr_status tsr_onednn_reduce_build(const tsr_op_signature *signature,
                                   const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op) {
  *out_op = NULL;
  const tsr_reduce_attrs *attrs = signature->attrs;
  const tsr_tensor_desc *x = &signature->inputs[0], *out = &signature->outputs[0];
  dnnl_alg_kind_t alg;
  switch (attrs->fn) {
    case TSR_REDUCE_SUM:
      alg = dnnl_reduction_sum;
      break;
    case TSR_REDUCE_MEAN:
      alg = dnnl_reduction_mean;
      break;
    case TSR_REDUCE_PROD:
      alg = dnnl_reduction_mul;
      break;
    case TSR_REDUCE_MAX:
    case TSR_REDUCE_MIN:
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "reduce: oneDNN's max/min drop NaN; stays on the own kernel");
    default:
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "reduce: fn %d has no oneDNN algorithm",
                                  (int)attrs->fn);
  }
  if (x->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "reduce: dtype %d stays on the own kernel",
                                (int)x->dtype);
  }
  if (attrs->axes_mask == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "reduce: no axes, a copy");
  }
  // An empty reduced axis gives out without any input (own kernel); an
  // empty kept axis makes both empty, which the size check refuses.
  if (tsr_onednn_numel(out) == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "reduce: empty");
  }
  tsr_status status = tsr_onednn_ew_size_check(ctx, tsr_onednn_numel(x), "reduce");
  if (status != TSR_OK)
    return status;

  tsr_onednn_reduce_shape shape;
  tsr_onednn_reduce_shape_get(x, out, attrs->axes_mask, &shape);
  tsr_dnnl_md *src = NULL, *dst = NULL;
  dnnl_primitive_attr_t attr = NULL;
  tsr_dnnl_pd *pd = NULL;
  tsr_onednn_ew_op *op = NULL;
  status =
      tsr_dnnl_md_create_strided(shape.rank, shape.src_dims, shape.src_strides, dnnl_f32, &src);
  if (status == TSR_OK) {
    status =
        tsr_dnnl_md_create_strided(shape.rank, shape.dst_dims, shape.dst_strides, dnnl_f32, &dst);
  }
  if (status == TSR_OK)
    status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK)
    status = tsr_dnnl_pd_reduction(ctx->engine, alg, src, dst, 0.0f, 0.0f, attr, &pd);
  if (status == TSR_OK)
    status = tsr_onednn_ew_op_create(sizeof(*op), "reduce", &op);
  if (status == TSR_OK) {
    static const int32_t ids[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    static const int32_t operands[] = {0, 1};
    status = tsr_onednn_ew_op_prim_init(op, pd, ctx, 2, ids, operands, 0, "reduce");
  }
  tsr_dnnl_pd_destroy(pd);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  tsr_dnnl_md_destroy(src);
  tsr_dnnl_md_destroy(dst);
  if (status != TSR_OK) {
    tsr_onednn_ew_op_destroy(op ? &op->base : NULL);
    return status;
  }
  *out_op = &op->base;
  return TSR_OK;
}
