// POOL2D and POOL2D_BACKWARD on oneDNN pooling primitives.
//
// What goes to oneDNN: AVG forward and backward on float32, with and without
// count_include_pad and ceil mode, when oneDNN has a jit implementation for
// the layout. What stays on the own kernels:
// - MAX, both directions. The catalogue's POOL2D MAX always returns int64
//   indices h * W + w (first maximum in row-major window order, NaN wins);
//   oneDNN's max-pool workspace is an implementation-specific format (u8 or
//   s32 window offsets), it does not promise the first maximum on ties, and
//   its NaN handling is unspecified. Recomputing the indices from y would
//   cost a second pass over every window, the whole of the own kernel's work.
//   POOL2D_BACKWARD MAX takes the catalogue's indices, which oneDNN cannot
//   read.
// - AVG with count_include_pad where a ceil-mode window hangs over the end of
//   the padded input: oneDNN's avg_include_padding divides by the full
//   kernel size, the catalogue by the taps inside [-pad_before, H +
//   pad_after), which is fewer for such a window.
// - Anything but float32.
// - Layouts and windows for which oneDNN has no jit implementation. Its
//   plain C++ ones measured no faster than the own kernel, and its reference
//   one is slower still (docs/performance.md, "Measurements behind the
//   code's decisions"). Which layouts get a jit kernel depends on the ISA:
//   NHWC on every x86 one, NCHW only with AVX-512 (oneDNN transposes it; not
//   timed here), dilation never (2.6 and 3.2).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_op.h"

typedef struct tsr_onednn_pool_op {
  tsr_onednn_op base;
  tsr_onednn_prim prim;
  int32_t src_operand;  // operand index of SRC (forward x) or DIFF_DST (backward dy)
  int32_t dst_operand;  // operand index of DST (forward y) or DIFF_SRC (backward dx)
} tsr_onednn_pool_op;

static tsr_status tsr_onednn_pool_execute(const tsr_onednn_op *base,
                                          const tsr_onednn_exec_ctx *ctx) {
  const tsr_onednn_pool_op *op = (const tsr_onednn_pool_op *)base;
  void *handles[2] = {ctx->ptrs[op->src_operand], ctx->ptrs[op->dst_operand]};
  return tsr_onednn_prim_execute(&op->prim, ctx->stream, handles, ctx->workspace);
}

static void tsr_onednn_pool_destroy(tsr_onednn_op *base) {
  tsr_onednn_pool_op *op = (tsr_onednn_pool_op *)base;
  if (op == NULL)
    return;
  tsr_onednn_prim_fini(&op->prim);
  free(op);
}

// oneDNN's window for the catalogue's attributes on an input of |in_h| x
// |in_w| and an output of |out_h| x |out_w|. oneDNN derives the output size
// by the floor formula only, so ceil mode becomes a larger right pad, as
// PyTorch does: the smallest that makes the floor formula give the output
// size, and never less than pad_after (in floor mode pad_after already does).
// Sets *window_past_padding when some window reaches past the padded input
// [-pad_before, in + pad_after) (only possible in ceil mode).
static void tsr_onednn_pool_window_get(const tsr_pool2d_attrs *a, const int64_t in[2],
                                       const int64_t out[2], tsr_dnnl_window *window,
                                       int *window_past_padding) {
  memset(window, 0, sizeof(*window));
  *window_past_padding = 0;
  for (int d = 0; d < 2; ++d) {
    const int64_t extent = a->dilation[d] * (a->kernel[d] - 1) + 1;
    // The end of the last window, relative to the start of the input.
    const int64_t last_end = (out[d] - 1) * a->stride[d] - a->pad_before[d] + extent;
    const int64_t needed = last_end - in[d];
    window->strides[d] = a->stride[d];
    window->kernel[d] = a->kernel[d];
    window->dilates[d] = a->dilation[d] - 1;
    window->pad_l[d] = a->pad_before[d];
    window->pad_r[d] = needed > a->pad_after[d] ? needed : a->pad_after[d];
    if (needed > a->pad_after[d])
      *window_past_padding = 1;
  }
}

tsr_status tsr_onednn_pool_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op) {
  *out_op = NULL;
  const int backward = signature->op == TSR_OP_POOL2D_BACKWARD;
  const char *op_name = backward ? "pool2d_backward" : "pool2d";
  const tsr_pool2d_attrs *a = signature->attrs;  // required by the catalogue, validated
  if (a->kind != TSR_POOL_AVG) {
    return tsr_onednn_error_set(
        TSR_UNSUPPORTED, "onednn: %s max stays on the own kernel (catalogue indices)", op_name);
  }
  // AVG: forward (x) -> (y), backward (dy) -> (dx).
  const tsr_tensor_desc *big = backward ? &signature->outputs[0] : &signature->inputs[0];
  const tsr_tensor_desc *small = backward ? &signature->inputs[0] : &signature->outputs[0];
  if (big->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "onednn: %s only float32", op_name);
  }
  const int64_t numel = tsr_onednn_numel(big);
  if (numel == 0 || tsr_onednn_numel(small) == 0 || numel < ctx->min_elements) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "onednn: %s of %lld elements is below the "
                                "primitive threshold",
                                op_name, (long long)numel);
  }
  const int64_t in[2] = {big->sizes[2], big->sizes[3]};
  const int64_t out[2] = {small->sizes[2], small->sizes[3]};
  tsr_dnnl_window window;
  int past_padding;
  tsr_onednn_pool_window_get(a, in, out, &window, &past_padding);
  if (a->count_include_pad && past_padding) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "onednn: %s avg count_include_pad with a ceil-mode window past "
                                "the padding: oneDNN's divisor differs",
                                op_name);
  }
  const dnnl_alg_kind_t alg =
      a->count_include_pad ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;

  tsr_dnnl_md *big_md = NULL, *small_md = NULL;
  tsr_dnnl_pd *pd = NULL, *hint = NULL;
  tsr_onednn_pool_op *op = NULL;
  tsr_status status = tsr_onednn_md_from_desc(big, &big_md);
  if (status == TSR_OK)
    status = tsr_onednn_md_from_desc(small, &small_md);
  if (status != TSR_OK)
    goto done;
  if (!backward) {
    status = tsr_dnnl_pd_pool_fwd(ctx->engine, dnnl_forward_inference, alg, big_md, small_md,
                                  &window, NULL, &pd);
  } else {
    // The backward pd needs its forward as a hint: same window, x-shaped src.
    status = tsr_dnnl_pd_pool_fwd(ctx->engine, dnnl_forward_training, alg, big_md, small_md,
                                  &window, NULL, &hint);
    if (status == TSR_OK) {
      status = tsr_dnnl_pd_pool_bwd(ctx->engine, alg, big_md, small_md, &window, hint, NULL, &pd);
    }
  }
  if (status != TSR_OK)
    goto done;
  // oneDNN positions its jit implementations first: a first one that is not
  // jit means none applies (see the top of the file). Under autotuning the
  // implementation kept is at least as fast as this one.
  if (strstr(tsr_dnnl_pd_impl_name(pd), "jit") == NULL) {
    status = tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "onednn: %s: oneDNN's best here is %s, no faster than the own "
                                  "kernel",
                                  op_name, tsr_dnnl_pd_impl_name(pd));
    goto done;
  }
  op = calloc(1, sizeof(*op));
  if (op == NULL) {
    status = tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "onednn: %s: out of memory", op_name);
    goto done;
  }
  static const int32_t fwd_args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
  static const int32_t bwd_args[2] = {DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
  status = tsr_onednn_prim_init(&op->prim, pd, ctx, 2, backward ? bwd_args : fwd_args);
  if (status != TSR_OK)
    goto done;
  // Operands: forward (x) -> (y); backward (dy) -> (dx). ptrs lists inputs,
  // then outputs, so the output is operand 1 in both.
  op->src_operand = 0;
  op->dst_operand = 1;
  snprintf(op->base.engine, sizeof(op->base.engine), "onednn:%s", op->prim.impl);
  op->base.workspace_bytes =
      op->prim.scratchpad_bytes > 0 ? tsr_onednn_round64(op->prim.scratchpad_bytes) + 64 : 0;
  // Every output element is a fixed-order sum over its window (forward) or
  // its input position's windows (backward, partitioned by planes), so a
  // result does not depend on the run.
  op->base.info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  op->base.execute = tsr_onednn_pool_execute;
  op->base.destroy = tsr_onednn_pool_destroy;
  *out_op = &op->base;
  op = NULL;

done:
  if (op != NULL)
    tsr_onednn_pool_destroy(&op->base);
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_pd_destroy(hint);
  tsr_dnnl_md_destroy(big_md);
  tsr_dnnl_md_destroy(small_md);
  return status;
}
