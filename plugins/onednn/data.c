// COPY, CAST and CONCAT on oneDNN's reorder and concat primitives.
//
// COPY and CONCAT move bits, and oneDNN's reorders are only sometimes plain
// moves: some of its paths convert through float32 (an int32 reorder with a
// transposition rounded values above 2^24, and float16/bfloat16 reorders
// turned -0 into +0 and changed NaNs; measured with 2.6 and 3.2 on AVX2).
// So data travels as a carrier type whose every path is a plain move: 4-byte
// elements as float32 (random bit patterns, signalling NaNs and -0 included,
// came out bit for bit through every float32 reorder implementation that
// 1,500 random layouts met on both versions: jit:uni, jit:blk, simple:any),
// 8-byte elements as two float32, 1-byte elements as u8 and 2-byte ones as
// two u8 (u8 -> float32 -> u8 is exact for every value). The extra pair
// dimension is the innermost one. Concat copies with the same moves.
//
// CAST converts only where oneDNN's conversion is the catalogue's: int32 ->
// float32 (round to nearest even, checked bit for bit on 2^20 random values)
// and bool (0 or 1, as u8) -> float32, int32, bfloat16 (and float16 where
// oneDNN has that reorder; 2.6 and 3.2 do not). The other
// pairs stay on the own kernel: float -> int (oneDNN neither truncates nor
// maps NaN to 0), float32 <-> bfloat16/float16 (oneDNN turns -0 into +0 and,
// to bfloat16, flushes subnormals), int32 -> bfloat16/float16 (two
// roundings), anything -> bool (x != 0 is no conversion), float64 and int64
// (no oneDNN type).
//
// Inputs that broadcast (stride 0) stay on the own kernel. Moves are
// deterministic.
#include "onednn_ew.h"

// How a dtype travels through oneDNN for a bitwise move.
static void tsr_onednn_data_carrier(tsr_dtype_t dtype, dnnl_data_type_t *type, int64_t *pair) {
  switch (tsr_dtype_size(dtype)) {
    case 1:
      *type = dnnl_u8;
      *pair = 1;
      break;
    case 2:
      *type = dnnl_u8;
      *pair = 2;
      break;
    case 4:
      *type = dnnl_f32;
      *pair = 1;
      break;
    default:
      *type = dnnl_f32;
      *pair = 2;
      break;  // 8 bytes
  }
}

// A descriptor of |rank| dims and element strides for elements made of
// |pair| carrier values (pair 1: as is; 2: an inner dimension of 2).
static tsr_status tsr_onednn_data_md(int32_t rank, const int64_t *dims, const int64_t *strides,
                                     dnnl_data_type_t type, int64_t pair, tsr_dnnl_md **out_md) {
  int64_t d[TSR_MAX_RANK + 1], s[TSR_MAX_RANK + 1];
  for (int32_t i = 0; i < rank; ++i) {
    d[i] = dims[i];
    s[i] = strides[i] * pair;
  }
  if (pair == 1)
    return tsr_dnnl_md_create_strided(rank, d, s, type, out_md);
  if (rank >= TSR_MAX_RANK) {
    // compat.h describes at most TSR_MAX_RANK dimensions.
    *out_md = NULL;
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "rank %d with 2-byte or 8-byte elements: no room for the pair "
                                "dimension",
                                (int)rank);
  }
  d[rank] = pair;
  s[rank] = 1;
  return tsr_dnnl_md_create_strided(rank + 1, d, s, type, out_md);
}

// COPY (same dtype: the carrier) and CAST (the oneDNN types of both sides).
static tsr_status tsr_onednn_data_reorder_build(const tsr_op_signature *signature,
                                                const tsr_onednn_build_ctx *ctx, const char *what,
                                                tsr_onednn_op **out_op) {
  const tsr_tensor_desc *x = &signature->inputs[0], *out = &signature->outputs[0];
  dnnl_data_type_t src_type, dst_type;
  int64_t pair = 1;
  if (x->dtype == out->dtype) {
    tsr_onednn_data_carrier(x->dtype, &src_type, &pair);
    dst_type = src_type;
  } else {
    const int from_bool = x->dtype == TSR_BOOL;
    const int ok = (x->dtype == TSR_INT32 && out->dtype == TSR_FLOAT32) ||
                   (from_bool && (out->dtype == TSR_FLOAT32 || out->dtype == TSR_INT32 ||
                                  out->dtype == TSR_BFLOAT16 || out->dtype == TSR_FLOAT16));
    if (!ok) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "cast: %d -> %d: oneDNN's conversion is not the catalogue's; "
                                  "stays on the own kernel",
                                  (int)x->dtype, (int)out->dtype);
    }
    src_type = from_bool ? dnnl_u8 : dnnl_s32;
    dst_type = tsr_onednn_dtype(out->dtype);
  }
  tsr_status status = tsr_onednn_ew_size_check(ctx, tsr_onednn_numel(out), what);
  if (status != TSR_OK)
    return status;
  const tsr_tensor_desc *descs[2] = {out, x};
  tsr_onednn_ew_layout layout;
  tsr_onednn_ew_layout_get(2, descs, &layout);
  if (tsr_onednn_ew_layout_broadcasts(&layout, 1)) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: a broadcast input stays on the own kernel",
                                what);
  }
  tsr_dnnl_md *src = NULL, *dst = NULL;
  dnnl_primitive_attr_t attr = NULL;
  tsr_dnnl_pd *pd = NULL;
  tsr_onednn_ew_op *op = NULL;
  status = tsr_onednn_data_md(layout.rank, layout.dims, layout.strides[1], src_type, pair, &src);
  if (status == TSR_OK) {
    status = tsr_onednn_data_md(layout.rank, layout.dims, layout.strides[0], dst_type, pair, &dst);
  }
  if (status == TSR_OK)
    status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK)
    status = tsr_dnnl_pd_reorder(ctx->engine, src, dst, attr, &pd);
  if (status == TSR_OK)
    status = tsr_onednn_ew_op_create(sizeof(*op), what, &op);
  if (status == TSR_OK) {
    static const int32_t ids[] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    static const int32_t operands[] = {0, 1};
    status = tsr_onednn_ew_op_prim_init(op, pd, ctx, 2, ids, operands, 0, what);
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

// Sources one concat primitive takes here: the primitive's argument table
// also holds dst and the scratchpad.
#define TSR_ONEDNN_CONCAT_MAX_SRCS (TSR_ONEDNN_MAX_ARGS - 2)

static tsr_status tsr_onednn_data_concat_build(const tsr_op_signature *signature,
                                               const tsr_onednn_build_ctx *ctx,
                                               tsr_onednn_op **out_op) {
  const tsr_concat_attrs *attrs = signature->attrs;
  const int32_t axis =
      attrs != NULL && TSR_ABI_COVERS(attrs, tsr_concat_attrs, axis) ? attrs->axis : 0;
  const tsr_tensor_desc *out = &signature->outputs[0];
  tsr_status status = tsr_onednn_ew_size_check(ctx, tsr_onednn_numel(out), "concat");
  if (status != TSR_OK)
    return status;
  // Empty inputs contribute nothing; oneDNN takes none.
  int32_t srcs[TSR_MAX_OPERANDS];
  int32_t num_srcs = 0;
  for (int32_t i = 0; i < signature->num_inputs; ++i) {
    const tsr_tensor_desc *x = &signature->inputs[i];
    if (x->sizes[axis] == 0)
      continue;
    for (int32_t d = 0; d < x->rank; ++d) {
      if (x->sizes[d] > 1 && x->strides[d] == 0) {
        return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                    "concat: a broadcast input stays on the own kernel");
      }
    }
    srcs[num_srcs++] = i;
  }
  if (num_srcs > TSR_ONEDNN_CONCAT_MAX_SRCS) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "concat: %d inputs (oneDNN op takes %d)",
                                (int)num_srcs, TSR_ONEDNN_CONCAT_MAX_SRCS);
  }
  dnnl_data_type_t type;
  int64_t pair;
  tsr_onednn_data_carrier(out->dtype, &type, &pair);
  tsr_dnnl_md *mds[TSR_ONEDNN_CONCAT_MAX_SRCS] = {NULL};
  tsr_dnnl_md *dst = NULL;
  dnnl_primitive_attr_t attr = NULL;
  tsr_dnnl_pd *pd = NULL;
  tsr_onednn_ew_op *op = NULL;
  for (int32_t j = 0; j < num_srcs && status == TSR_OK; ++j) {
    const tsr_tensor_desc *x = &signature->inputs[srcs[j]];
    status = tsr_onednn_data_md(x->rank, x->sizes, x->strides, type, pair, &mds[j]);
  }
  if (status == TSR_OK)
    status = tsr_onednn_data_md(out->rank, out->sizes, out->strides, type, pair, &dst);
  if (status == TSR_OK)
    status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK) {
    status = tsr_dnnl_pd_concat(ctx->engine, dst, num_srcs, axis, (const tsr_dnnl_md *const *)mds,
                                attr, &pd);
  }
  if (status == TSR_OK)
    status = tsr_onednn_ew_op_create(sizeof(*op), "concat", &op);
  if (status == TSR_OK) {
    int32_t ids[TSR_ONEDNN_CONCAT_MAX_SRCS + 1], operands[TSR_ONEDNN_CONCAT_MAX_SRCS + 1];
    for (int32_t j = 0; j < num_srcs; ++j) {
      ids[j] = DNNL_ARG_MULTIPLE_SRC + j;
      operands[j] = srcs[j];
    }
    ids[num_srcs] = DNNL_ARG_DST;
    operands[num_srcs] = signature->num_inputs;
    // oneDNN's "ref" concat is a reorder per input into its part of dst:
    // the reorders are the fast ones, so it is no reference loop.
    status = tsr_onednn_ew_op_prim_init(op, pd, ctx, num_srcs + 1, ids, operands, 1, "concat");
  }
  tsr_dnnl_pd_destroy(pd);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  for (int32_t j = 0; j < num_srcs; ++j) tsr_dnnl_md_destroy(mds[j]);
  tsr_dnnl_md_destroy(dst);
  if (status != TSR_OK) {
    tsr_onednn_ew_op_destroy(op ? &op->base : NULL);
    return status;
  }
  *out_op = &op->base;
  return TSR_OK;
}

tsr_status tsr_onednn_data_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op) {
  *out_op = NULL;
  switch (signature->op) {
    case TSR_OP_COPY:
      return tsr_onednn_data_reorder_build(signature, ctx, "copy", out_op);
    case TSR_OP_CAST:
      return tsr_onednn_data_reorder_build(signature, ctx, "cast", out_op);
    case TSR_OP_CONCAT:
      return tsr_onednn_data_concat_build(signature, ctx, out_op);
    default:
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: not a data op here",
                                  tsr_op_name(signature->op));
  }
}
