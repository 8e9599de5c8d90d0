// MATMUL on oneDNN's matmul primitive.
//
// Every operand is described with its own strides (a transposed operand is
// only a stride pattern to oneDNN), so nothing is copied. Batch broadcast is
// described as oneDNN wants it: size 1 on that axis in the broadcasting
// operand's descriptor.
//
// The epilogue act(alpha * a@b + bias + beta * out_before) maps onto the
// primitive's bias and post-ops. oneDNN's GEMM-based implementation (the fast
// one on AVX2) only takes a sum post-op in first position and a bias of shape
// [1, ..., 1, N], so several equivalent formulations are tried in turn and
// the first one a non-reference implementation accepts wins; when none does,
// the own kernel runs (oneDNN's "ref:any" is far slower than it). RELU is
// never fused: oneDNN's relu drops NaN, so a pass after the primitive applies
// it (conv_relu.h). The other activations are fused only where oneDNN's
// post-op passes the accuracy check on this CPU (eltwise_check.h); where it
// fails, the own kernel runs the whole product.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_relu.h"
#include "conv_tune.h"
#include "eltwise_check.h"
#include "onednn_op.h"

// Below this many multiply-adds in all, the own GEMM beats the primitive,
// whose fixed cost (memory handles, stream, OpenMP fork) outweighs the work
// there (docs/performance-log.md, "Measurements behind the code's decisions").
#define TSR_ONEDNN_MATMUL_MIN_MACS (40.0 * 40.0 * 40.0)
// Timing runs per candidate when autotuning (after one warm-up).
#define TSR_ONEDNN_MATMUL_TIMING_RUNS 3

// Operand positions in ctx->ptrs (inputs, then outputs).
enum { TSR_MM_A = 0, TSR_MM_B = 1, TSR_MM_BIAS = 2 };

typedef struct tsr_onednn_matmul_op {
  tsr_onednn_op base;
  tsr_onednn_prim prim;
  int32_t num_handles;
  int32_t handle_operands[TSR_ONEDNN_MAX_ARGS];  // ctx->ptrs index of each prim argument
  // RELU runs as a pass over out after the primitive (conv_relu.h).
  int32_t relu_pass;
  int32_t out_index;
  tsr_dtype_t dtype;
  int32_t out_rank;
  int64_t out_sizes[TSR_MAX_RANK];
  int64_t out_strides[TSR_MAX_RANK];
} tsr_onednn_matmul_op;

// How the epilogue is expressed; see tsr_onednn_matmul_post_ops. [act] is
// every activation but RELU.
typedef enum {
  TSR_MM_NATIVE_BIAS,  // bias argument, [sum(beta)], [act]; needs alpha == 1
  TSR_MM_EXACT_ORDER,  // [linear(alpha)], [binary bias], [sum(beta)], [act]
  TSR_MM_SUM_FIRST,    // [sum(beta / alpha)], [linear(alpha)], [binary bias], [act]
  TSR_MM_VARIANT_COUNT
} tsr_onednn_matmul_variant;

typedef struct tsr_onednn_matmul_params {
  float alpha;
  float beta;
  tsr_activation_t activation;
  int has_bias;
  int32_t out_index;  // ctx->ptrs index of out
} tsr_onednn_matmul_params;

// The operands' descriptors, owned by the builder.
typedef struct tsr_onednn_matmul_mds {
  tsr_dnnl_md *a, *b, *bias, *out;
} tsr_onednn_matmul_mds;

static tsr_status tsr_onednn_matmul_execute(const tsr_onednn_op *base,
                                            const tsr_onednn_exec_ctx *ctx) {
  const tsr_onednn_matmul_op *op = (const tsr_onednn_matmul_op *)base;
  void *handles[TSR_ONEDNN_MAX_ARGS];
  for (int32_t i = 0; i < op->num_handles; ++i) handles[i] = ctx->ptrs[op->handle_operands[i]];
  const tsr_status status =
      tsr_onednn_prim_execute(&op->prim, ctx->stream, handles, ctx->workspace);
  if (status == TSR_OK && op->relu_pass) {
    tsr_onednn_relu_apply(ctx->ptrs[op->out_index], op->dtype, op->out_rank, op->out_sizes,
                          op->out_strides);
  }
  return status;
}

static void tsr_onednn_matmul_destroy(tsr_onednn_op *base) {
  tsr_onednn_matmul_op *op = (tsr_onednn_matmul_op *)base;
  if (op == NULL)
    return;
  tsr_onednn_prim_fini(&op->prim);
  free(op);
}

// The dims and strides oneDNN gets for |desc|: dimensions where the operand
// broadcasts (size 1, or stride 0 in a batch dimension when |batch_bcast|)
// become size 1, and every size-1 dimension gets a stride that keeps the
// layout plain in oneDNN's eyes (its GEMM-based implementation reads the
// transposition and leading dimension from the strides, and refuses a
// stride of 0). Returns 0 when a non-broadcast dimension has stride 0.
static int tsr_onednn_matmul_layout(const tsr_tensor_desc *desc, int batch_bcast, int all_bcast,
                                    int64_t *dims, int64_t *strides) {
  const int32_t r = desc->rank;
  for (int32_t d = 0; d < r; ++d) {
    dims[d] = desc->sizes[d];
    strides[d] = desc->strides[d];
    const int is_batch = d < r - 2;
    if (dims[d] > 1 && strides[d] == 0) {
      if (!(all_bcast || (batch_bcast && is_batch)))
        return 0;
      dims[d] = 1;
    }
  }
  // The matrix dimensions first: a size-1 column dimension is contiguous, a
  // size-1 row dimension spans the row.
  if (dims[r - 1] == 1)
    strides[r - 1] = 1;
  if (dims[r - 2] == 1) {
    const int64_t row = dims[r - 1] * strides[r - 1];
    strides[r - 2] = row > 0 ? row : 1;
  }
  // Size-1 batch dimensions: past everything else, which never overlaps.
  int64_t extent = 1;
  for (int32_t d = 0; d < r; ++d) {
    if (dims[d] > 1 || d >= r - 2) {
      const int64_t e = dims[d] * strides[d];
      if (e > extent)
        extent = e;
    }
  }
  for (int32_t d = 0; d < r - 2; ++d) {
    if (dims[d] == 1)
      strides[d] = extent;
  }
  return 1;
}

// Linear's gradient products where ref's blocked GEMM (each thread packs
// its own block of C; transposed operands packed by in-register
// transposes) was measured faster than oneDNN 2.6's gemm:jit on two threads
// (docs/performance-log.md, "Measurements behind the code's decisions"):
// - the weight gradient dW = dy^T @ x (A column-major, B row-major), M and
//   N at least 256, K (the batch) at most 512;
// - the input gradient dx = dy @ w (both row-major) at M 64-512, N and K
//   256-512.
// Left to oneDNN, measured as fast or faster there: the CNN's fc1 gradient,
// N 128, the input gradient at N 784, square products from 256 up, and every
// product with B transposed (Linear's forward).
static int tsr_onednn_matmul_runs_own(const tsr_tensor_desc *a, const tsr_tensor_desc *b,
                                      const tsr_tensor_desc *out, int32_t r) {
  for (int32_t d = 0; d < r - 2; ++d) {
    if (out->sizes[d] != 1)
      return 0;
  }
  const int64_t m = out->sizes[r - 2], n = out->sizes[r - 1], k = a->sizes[r - 1];
  const int b_rows = b->strides[r - 1] == 1 && b->strides[r - 2] >= n;
  const int out_rows = out->strides[r - 1] == 1 && out->strides[r - 2] >= n;
  if (!b_rows || !out_rows)
    return 0;
  if (a->strides[r - 2] == 1 && a->strides[r - 1] >= m)
    return m >= 256 && n >= 256 && k <= 512;
  if (a->strides[r - 1] == 1 && a->strides[r - 2] >= k)
    return m >= 64 && m <= 512 && n >= 256 && n <= 512 && k >= 256 && k <= 512;
  return 0;
}

static tsr_status tsr_onednn_matmul_md(const tsr_tensor_desc *desc, dnnl_data_type_t dt,
                                       int batch_bcast, int all_bcast, const char *name,
                                       tsr_dnnl_md **out_md) {
  int64_t dims[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  *out_md = NULL;
  if (!tsr_onednn_matmul_layout(desc, batch_bcast, all_bcast, dims, strides)) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "matmul: %s has a stride of 0 on a matrix dimension", name);
  }
  return tsr_dnnl_md_create_strided(desc->rank, dims, strides, dt, out_md);
}

static dnnl_alg_kind_t tsr_onednn_matmul_act_alg(tsr_activation_t activation) {
  switch (activation) {
    case TSR_ACTIVATION_RELU:
      return dnnl_eltwise_relu;
    case TSR_ACTIVATION_GELU:
      return dnnl_eltwise_gelu_erf;
    case TSR_ACTIVATION_GELU_TANH:
      return dnnl_eltwise_gelu_tanh;
    case TSR_ACTIVATION_SIGMOID:
      return dnnl_eltwise_logistic;
    case TSR_ACTIVATION_TANH:
      return dnnl_eltwise_tanh;
    default:
      return dnnl_alg_kind_undef;
  }
}

// Fills |post| for |variant|; returns the count, or -1 when the variant
// cannot express the parameters. *bias_post is the index of the binary
// bias post-op, or -1.
static int32_t tsr_onednn_matmul_post_ops(tsr_onednn_matmul_variant variant,
                                          const tsr_onednn_matmul_params *p,
                                          const tsr_dnnl_md *bias_md, tsr_dnnl_post_op *post,
                                          int32_t *bias_post) {
  int32_t n = 0;
  *bias_post = -1;
  const tsr_dnnl_post_op linear = {
      .kind = TSR_DNNL_POST_ELTWISE, .alg = dnnl_eltwise_linear, .alpha = p->alpha, .beta = 0.0f};
  const tsr_dnnl_post_op bias = {
      .kind = TSR_DNNL_POST_BINARY, .alg = dnnl_binary_add, .md = bias_md};
  const tsr_dnnl_post_op sum = {.kind = TSR_DNNL_POST_SUM, .scale = p->beta};
  switch (variant) {
    case TSR_MM_NATIVE_BIAS:
      if (p->alpha != 1.0f)
        return -1;
      if (p->beta != 0.0f)
        post[n++] = sum;
      break;
    case TSR_MM_EXACT_ORDER:
      if (p->alpha != 1.0f)
        post[n++] = linear;
      if (p->has_bias) {
        *bias_post = n;
        post[n++] = bias;
      }
      if (p->beta != 0.0f)
        post[n++] = sum;
      break;
    case TSR_MM_SUM_FIRST: {
      // alpha * (acc + (beta / alpha) * out) == alpha * acc + beta * out, up
      // to one rounding of the ratio; only for a finite, non-zero ratio.
      if (p->beta != 0.0f) {
        const float ratio = p->beta / p->alpha;
        if (p->alpha == 0.0f || !isfinite(ratio) || ratio == 0.0f)
          return -1;
        post[n++] = (tsr_dnnl_post_op){.kind = TSR_DNNL_POST_SUM, .scale = ratio};
      }
      if (p->alpha != 1.0f)
        post[n++] = linear;
      if (p->has_bias) {
        *bias_post = n;
        post[n++] = bias;
      }
      break;
    }
    default:
      return -1;
  }
  // RELU is left to the NaN-keeping pass (conv_relu.h).
  if (p->activation != TSR_ACTIVATION_NONE && p->activation != TSR_ACTIVATION_RELU) {
    post[n++] = (tsr_dnnl_post_op){.kind = TSR_DNNL_POST_ELTWISE,
                                   .alg = tsr_onednn_matmul_act_alg(p->activation)};
  }
  return n;
}

// Creates the pd of |variant| positioned on its |impl|-th non-reference
// implementation (tsr_onednn_impl_select, whose statuses it returns).
static tsr_status tsr_onednn_matmul_pd(tsr_onednn_matmul_variant variant,
                                       const tsr_onednn_matmul_params *p, int32_t impl,
                                       const tsr_onednn_build_ctx *ctx,
                                       const tsr_onednn_matmul_mds *mds, tsr_dnnl_pd **out_pd,
                                       int32_t *bias_post) {
  *out_pd = NULL;
  tsr_dnnl_post_op post[4];
  const int32_t n = tsr_onednn_matmul_post_ops(variant, p, mds->bias, post, bias_post);
  if (n < 0)
    return TSR_UNSUPPORTED;
  dnnl_primitive_attr_t attr = NULL;
  tsr_status status = tsr_dnnl_attr_create(ctx->math_mode, post, n, &attr);
  if (status != TSR_OK)
    return status;
  tsr_dnnl_pd *pd = NULL;
  status =
      tsr_dnnl_pd_matmul(ctx->engine, mds->a, mds->b,
                         variant == TSR_MM_NATIVE_BIAS ? mds->bias : NULL, mds->out, attr, &pd);
  dnnl_primitive_attr_destroy(attr);
  if (status == TSR_OK)
    status = tsr_onednn_impl_select(pd, impl, "matmul");
  if (status != TSR_OK) {
    tsr_dnnl_pd_destroy(pd);
    return status;
  }
  *out_pd = pd;
  return TSR_OK;
}

// Builds the op for |variant| on its |impl|-th non-reference implementation
// (tsr_onednn_matmul_pd's statuses). |ctx| selects as positioned.
static tsr_status tsr_onednn_matmul_op_build(const tsr_onednn_matmul_params *p,
                                             tsr_onednn_matmul_variant variant, int32_t impl,
                                             const tsr_onednn_build_ctx *ctx,
                                             const tsr_onednn_matmul_mds *mds,
                                             const tsr_tensor_desc *out,
                                             tsr_onednn_matmul_op **out_op) {
  *out_op = NULL;
  tsr_dnnl_pd *pd = NULL;
  int32_t bias_post = -1;
  tsr_status status = tsr_onednn_matmul_pd(variant, p, impl, ctx, mds, &pd, &bias_post);
  if (status != TSR_OK)
    return status;
  tsr_onednn_matmul_op *op = calloc(1, sizeof(*op));
  if (op == NULL) {
    tsr_dnnl_pd_destroy(pd);
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "matmul: %zu bytes for an op", sizeof(*op));
  }
  int32_t ids[TSR_ONEDNN_MAX_ARGS];
  int32_t count = 0;
  ids[count] = DNNL_ARG_SRC;
  op->handle_operands[count++] = TSR_MM_A;
  ids[count] = DNNL_ARG_WEIGHTS;
  op->handle_operands[count++] = TSR_MM_B;
  if (variant == TSR_MM_NATIVE_BIAS && p->has_bias) {
    ids[count] = DNNL_ARG_BIAS;
    op->handle_operands[count++] = TSR_MM_BIAS;
  }
  ids[count] = DNNL_ARG_DST;
  op->handle_operands[count++] = p->out_index;
  if (bias_post >= 0) {
    ids[count] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(bias_post) | DNNL_ARG_SRC_1;
    op->handle_operands[count++] = TSR_MM_BIAS;
  }
  op->num_handles = count;
  status = tsr_onednn_prim_init(&op->prim, pd, ctx, count, ids);
  tsr_dnnl_pd_destroy(pd);
  if (status != TSR_OK) {
    free(op);
    return status;
  }
  op->relu_pass = p->activation == TSR_ACTIVATION_RELU;
  op->out_index = p->out_index;
  op->dtype = out->dtype;
  op->out_rank = out->rank;
  memcpy(op->out_sizes, out->sizes, sizeof(op->out_sizes));
  memcpy(op->out_strides, out->strides, sizeof(op->out_strides));
  snprintf(op->base.engine, sizeof(op->base.engine), "onednn:%s%s", op->prim.impl,
           op->relu_pass ? "+relu" : "");
  op->base.workspace_bytes =
      op->prim.scratchpad_bytes > 0 ? tsr_onednn_round64(op->prim.scratchpad_bytes) + 64 : 0;
  // oneDNN's CPU matmul splits work by a fixed rule for a given thread count.
  op->base.info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  op->base.execute = tsr_onednn_matmul_execute;
  op->base.destroy = tsr_onednn_matmul_destroy;
  *out_op = op;
  return TSR_OK;
}

// Reads the attributes (defaults for NULL or an older, shorter struct).
static void tsr_onednn_matmul_params_read(const tsr_op_signature *signature,
                                          tsr_onednn_matmul_params *p) {
  const tsr_matmul_attrs *attrs = signature->attrs;
  double alpha = 1.0, beta = 0.0;
  p->activation = TSR_ACTIVATION_NONE;
  p->has_bias = 0;
  if (attrs != NULL) {
    if (TSR_ABI_COVERS(attrs, tsr_matmul_attrs, alpha))
      alpha = attrs->alpha;
    if (TSR_ABI_COVERS(attrs, tsr_matmul_attrs, beta))
      beta = attrs->beta;
    if (TSR_ABI_COVERS(attrs, tsr_matmul_attrs, activation))
      p->activation = attrs->activation;
    if (TSR_ABI_COVERS(attrs, tsr_matmul_attrs, has_bias))
      p->has_bias = attrs->has_bias != 0;
  }
  // The catalogue converts attribute values to the compute type first.
  p->alpha = (float)alpha;
  p->beta = (float)beta;
  p->out_index = signature->num_inputs;
}

tsr_status tsr_onednn_matmul_build(const tsr_op_signature *signature,
                                   const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op) {
  *out_op = NULL;
  tsr_onednn_matmul_params p;
  tsr_onednn_matmul_params_read(signature, &p);
  const tsr_tensor_desc *a = &signature->inputs[TSR_MM_A];
  const tsr_tensor_desc *b = &signature->inputs[TSR_MM_B];
  const tsr_tensor_desc *bias = p.has_bias ? &signature->inputs[TSR_MM_BIAS] : NULL;
  const tsr_tensor_desc *out = &signature->outputs[0];
  const int32_t r = out->rank;

  // float64 accumulates in float64 by the catalogue: oneDNN has no such
  // matmul. float16 has no CPU implementation on the machines we target.
  if (a->dtype != TSR_FLOAT32 && a->dtype != TSR_BFLOAT16) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "matmul: dtype %d stays on the own kernel",
                                (int)a->dtype);
  }
  const dnnl_data_type_t dt = tsr_onednn_dtype(a->dtype);
  if (p.activation != TSR_ACTIVATION_NONE &&
      tsr_onednn_matmul_act_alg(p.activation) == dnnl_alg_kind_undef) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "matmul: activation %d has no oneDNN post-op",
                                (int)p.activation);
  }
  const int64_t m = out->sizes[r - 2], n = out->sizes[r - 1], k = a->sizes[r - 1];
  double macs = (double)m * (double)n * (double)k;
  for (int32_t d = 0; d < r - 2; ++d) macs *= (double)out->sizes[d];
  if (macs == 0.0) {
    // Nothing to multiply (or K = 0, where out is the epilogue of zeros):
    // the own kernel's loops get that right for free.
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "matmul: empty product");
  }
  if (ctx->min_elements != 0 && macs < TSR_ONEDNN_MATMUL_MIN_MACS) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "matmul: %.0f multiply-adds are cheaper on the own kernel", macs);
  }
  if (ctx->min_elements != 0 && m == 1 && macs == (double)n * (double)k &&
      b->strides[r - 1] == 1) {
    // One row times a row-major B: the own GEMV streams B once, split over
    // the threads, with bias and activation in the same pass (see
    // docs/onednn.md for the measurement).
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "matmul: a single row is the own GEMV's");
  }
  // Not a size threshold, so TSR_ONEDNN_MIN_ELEMENTS=0 keeps it (as conv.c's
  // routes to the direct kernels).
  if (!ctx->no_fixed_routes && a->dtype == TSR_FLOAT32 &&
      tsr_onednn_matmul_runs_own(a, b, out, r)) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "matmul: a Linear gradient's product runs on the own kernel");
  }
  for (int32_t d = 0; d < r; ++d) {
    if (out->sizes[d] > 1 && out->strides[d] == 0) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "matmul: out has a stride of 0");
    }
  }
  // A fused activation only where oneDNN's post-op meets the catalogue on
  // this CPU (eltwise_check.h); else the own kernel runs the whole op.
  tsr_status act = tsr_onednn_eltwise_activation_check(ctx, p.activation, "matmul");
  if (act != TSR_OK)
    return act;

  tsr_onednn_matmul_mds mds = {0};
  tsr_status status = tsr_onednn_matmul_md(a, dt, 1, 0, "a", &mds.a);
  if (status == TSR_OK)
    status = tsr_onednn_matmul_md(b, dt, 1, 0, "b", &mds.b);
  if (status == TSR_OK)
    status = tsr_onednn_matmul_md(out, dt, 0, 0, "out", &mds.out);
  if (status == TSR_OK && bias != NULL) {
    status = tsr_onednn_matmul_md(bias, dt, 1, 1, "bias", &mds.bias);
  }
  // The first formulation with a non-reference implementation wins; the
  // exact order goes before the sum-first rewrite, which rounds beta / alpha.
  // Autotuning times every implementation of that formulation as a whole op
  // (conv_tune.h); candidates are built as positioned.
  const int tune = ctx->select == TSR_ONEDNN_SELECT_FASTEST;
  tsr_onednn_build_ctx positioned = *ctx;
  positioned.select = TSR_ONEDNN_SELECT_FIRST;
  tsr_onednn_matmul_op *best = NULL;
  double best_time = -1.0;
  for (int v = 0; v < TSR_MM_VARIANT_COUNT && status == TSR_OK && best == NULL; ++v) {
    if (v == TSR_MM_NATIVE_BIAS && p.alpha != 1.0f)
      continue;
    if (v == TSR_MM_EXACT_ORDER && p.alpha == 1.0f && !p.has_bias)
      continue;  // = native
    for (int32_t impl = 0; status == TSR_OK && (tune || impl == 0); ++impl) {
      tsr_onednn_matmul_op *op = NULL;
      const tsr_status s = tsr_onednn_matmul_op_build(&p, (tsr_onednn_matmul_variant)v, impl,
                                                      &positioned, &mds, out, &op);
      if (s == TSR_UNSUPPORTED || s == TSR_NOT_FOUND)
        break;
      if (s != TSR_OK) {
        status = s;
        break;
      }
      if (!tune) {
        best = op;
        break;
      }
      const double t = tsr_onednn_op_time(&op->base, signature, TSR_ONEDNN_MATMUL_TIMING_RUNS);
      if (t >= 0 && (best == NULL || t < best_time)) {
        tsr_onednn_matmul_destroy(best != NULL ? &best->base : NULL);
        best = op;
        best_time = t;
      } else {
        tsr_onednn_matmul_destroy(&op->base);
      }
    }
  }
  tsr_dnnl_md_destroy(mds.a);
  tsr_dnnl_md_destroy(mds.b);
  tsr_dnnl_md_destroy(mds.bias);
  tsr_dnnl_md_destroy(mds.out);
  if (status != TSR_OK) {
    tsr_onednn_matmul_destroy(best != NULL ? &best->base : NULL);
    return status;
  }
  if (best == NULL) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "matmul: no oneDNN implementation besides the reference one "
                                "takes this layout and epilogue");
  }
  *out_op = &best->base;
  return TSR_OK;
}
