// CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER on oneDNN's
// convolution primitives.
//
// Two ways to run a convolution are built and one is kept:
// - BLOCKED: the primitive chooses its layouts (format "any"; nChw8c and
//   OIhw8i8o on AVX2, 16-blocked on AVX-512), and the operands are reordered
//   from and to the user's strided layout around it, in the workspace. The
//   weights' blocked copy is cached across calls (conv_weight_cache.h).
// - PLAIN: the primitive works on the user's layout directly (oneDNN's
//   im2col + GEMM implementation for plain NCHW), no reorders.
// Which one is faster depends on the direction and the channel counts (see
// tsr_onednn_conv_layout_order); with autotuning every non-reference
// implementation of both is built and timed as a whole op (conv_tune.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_cpu/cpu_kernels.h"  // which conv gradients the direct kernels take
#include "conv_relu.h"
#include "conv_tune.h"
#include "conv_weight_cache.h"
#include "eltwise_check.h"
#include "onednn_op.h"
#include "onednn_plugin.h"

// Below this many multiply-adds the own im2col kernel wins against a
// primitive plus reorders, whose fixed costs outweigh the work there: forward
// and backward-data break even near 32K multiply-adds, the filter gradient
// near 256K (docs/performance-log.md, "Measurements behind the code's
// decisions").
#define TSR_ONEDNN_CONV_MIN_MACS (32.0 * 1024.0)
#define TSR_ONEDNN_CONV_FILTER_MIN_MACS (256.0 * 1024.0)
// The own multi-channel filter-gradient kernel's float64 sums (O x C x KH x
// KW) beyond which oneDNN's keeps the op (see tsr_onednn_conv_problem_init).
#define TSR_ONEDNN_CONV_DIRECT_SUMS_BYTES (2.0 * 1024.0 * 1024.0)
// The own direct forward kernels' domains beyond their fits predicates (see
// tsr_onednn_conv_problem_init): the one-channel one from this many y
// elements, the multi-channel one up to this size of one image.
#define TSR_ONEDNN_CONV_FWD_C1_MIN_Y (256.0 * 1024.0)
#define TSR_ONEDNN_CONV_FWD_IMAGE_BYTES (64.0 * 1024.0)
// Timing runs per candidate when autotuning (after one warm-up).
#define TSR_ONEDNN_CONV_TIMING_RUNS 3

enum { TSR_CONV_FWD = 0, TSR_CONV_BWD_DATA = 1, TSR_CONV_BWD_FILTER = 2 };
enum { TSR_CONV_BLOCKED = 0, TSR_CONV_PLAIN = 1, TSR_CONV_LAYOUT_COUNT = 2 };
// The four tensors of a convolution, by oneDNN's forward names: src is x or
// dx, weights w or dw, dst y or dy, bias bias or dbias.
enum {
  TSR_CONV_SRC = 0,
  TSR_CONV_WEI = 1,
  TSR_CONV_DST = 2,
  TSR_CONV_BIAS = 3,
  TSR_CONV_TENSORS = 4
};

#define TSR_CONV_MAX_ARGS 4

// One argument of the main primitive and where its data lives.
typedef struct tsr_onednn_conv_arg {
  int32_t arg_id;           // DNNL_ARG_*
  int32_t operand;          // index into ctx->ptrs (inputs, then outputs)
  int32_t output;           // written by the primitive
  int32_t staged;           // goes through a temporary in the primitive's layout
  uint64_t temp_offset;     // the temporary's workspace offset
  tsr_onednn_prim reorder;  // user -> primitive (input) or primitive -> user (output)
} tsr_onednn_conv_arg;

typedef struct tsr_onednn_conv_op {
  tsr_onednn_op base;
  tsr_onednn_prim main;
  int32_t num_args;
  tsr_onednn_conv_arg args[TSR_CONV_MAX_ARGS];
  uint64_t scratch_offset;  // of the scratchpad region all prims share
  uint64_t scratch_bytes;
  int32_t cached_arg;  // args index of the cached weights, or -1
  tsr_onednn_weight_cache *cache;
  // RELU runs as a pass over the output after the primitive (conv_relu.h):
  // over the blocked temporary when the output is staged, else over y.
  int32_t relu_arg;          // args index of dst, or -1
  uint64_t relu_temp_elems;  // elements of the staged dst (padding included)
  tsr_dtype_t dtype;
  int64_t y_sizes[4];
  int64_t y_strides[4];
} tsr_onednn_conv_op;

// What the builder knows about the signature, in oneDNN's terms.
typedef struct tsr_onednn_conv_problem {
  int32_t kind;  // TSR_CONV_*
  dnnl_data_type_t dt;
  tsr_dnnl_window window;
  int64_t groups;
  tsr_activation_t activation;        // forward only
  int has_bias;                       // bias (forward) or dbias (filter)
  int32_t operand[TSR_CONV_TENSORS];  // ctx->ptrs index, -1 when absent
  int32_t rank[TSR_CONV_TENSORS];
  int64_t dims[TSR_CONV_TENSORS][5];
  tsr_dnnl_md *user[TSR_CONV_TENSORS];  // the user's layouts (owned)
  int64_t cg;                           // C / groups
  int64_t n;                            // batch
  int64_t y_sizes[4];                   // the forward's y as the user lays it out
  int64_t y_strides[4];
} tsr_onednn_conv_problem;

// --- running ---------------------------------------------------------------------

// Reorders |from| into |to| with |reorder|.
static tsr_status tsr_onednn_conv_reorder_run(const tsr_onednn_prim *reorder, dnnl_stream_t stream,
                                              void *from, void *to, void *scratch) {
  void *handles[2] = {from, to};
  return tsr_onednn_prim_execute(reorder, stream, handles, scratch);
}

typedef struct tsr_onednn_conv_fill {
  const tsr_onednn_prim *reorder;
  dnnl_stream_t stream;
  void *from;
  void *scratch;
} tsr_onednn_conv_fill;

static tsr_status tsr_onednn_conv_weights_fill(void *arg, void *dst) {
  const tsr_onednn_conv_fill *f = arg;
  return tsr_onednn_conv_reorder_run(f->reorder, f->stream, f->from, dst, f->scratch);
}

static tsr_status tsr_onednn_conv_execute(const tsr_onednn_op *base,
                                          const tsr_onednn_exec_ctx *ctx) {
  const tsr_onednn_conv_op *op = (const tsr_onednn_conv_op *)base;
  char *ws = ctx->workspace;
  void *scratch = op->scratch_bytes > 0 ? ws + op->scratch_offset : NULL;
  void *handles[TSR_CONV_MAX_ARGS] = {0};
  int holds_cache = 0;
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < op->num_args && status == TSR_OK; ++i) {
    const tsr_onednn_conv_arg *a = &op->args[i];
    void *user = ctx->ptrs[a->operand];
    handles[i] = user;
    if (!a->staged)
      continue;
    void *temp = ws + a->temp_offset;
    handles[i] = temp;
    if (a->output)
      continue;
    if (i == op->cached_arg && ctx->args != NULL && a->operand < ctx->args->num_inputs) {
      const tsr_tensor_desc *w = &ctx->args->inputs[a->operand];
      tsr_onednn_conv_fill fill = {&a->reorder, ctx->stream, user, scratch};
      void *data = NULL;
      status =
          tsr_onednn_weight_cache_acquire(op->cache, w->buffer, w->byte_offset, w->storage_version,
                                          tsr_onednn_conv_weights_fill, &fill, &data);
      if (status == TSR_OK && data != NULL) {
        handles[i] = data;
        holds_cache = 1;
        continue;
      }
      if (status != TSR_OK)
        break;
      // The cache is busy with other executions: reorder privately.
    }
    status = tsr_onednn_conv_reorder_run(&a->reorder, ctx->stream, user, temp, scratch);
  }
  if (status == TSR_OK)
    status = tsr_onednn_prim_execute(&op->main, ctx->stream, handles, scratch);
  if (holds_cache)
    tsr_onednn_weight_cache_release(op->cache);
  if (status == TSR_OK && op->relu_arg >= 0) {
    const tsr_onednn_conv_arg *a = &op->args[op->relu_arg];
    if (a->staged) {
      const int64_t count = (int64_t)op->relu_temp_elems, one = 1;
      tsr_onednn_relu_apply(ws + a->temp_offset, op->dtype, 1, &count, &one);
    } else {
      tsr_onednn_relu_apply(ctx->ptrs[a->operand], op->dtype, 4, op->y_sizes, op->y_strides);
    }
  }
  for (int32_t i = 0; i < op->num_args && status == TSR_OK; ++i) {
    const tsr_onednn_conv_arg *a = &op->args[i];
    if (!a->staged || !a->output)
      continue;
    status = tsr_onednn_conv_reorder_run(&a->reorder, ctx->stream, ws + a->temp_offset,
                                         ctx->ptrs[a->operand], scratch);
  }
  return status;
}

static void tsr_onednn_conv_destroy(tsr_onednn_op *base) {
  tsr_onednn_conv_op *op = (tsr_onednn_conv_op *)base;
  if (op == NULL)
    return;
  tsr_onednn_prim_fini(&op->main);
  for (int32_t i = 0; i < TSR_CONV_MAX_ARGS; ++i) tsr_onednn_prim_fini(&op->args[i].reorder);
  tsr_onednn_weight_cache_destroy(op->cache);
  free(op);
}

// --- the user's layouts ----------------------------------------------------------

// Writes the dense strides of |dims| laid out outermost-first in |order|.
static void tsr_onednn_conv_dense_strides(int32_t nd, const int64_t *dims, const int32_t *order,
                                          int64_t *strides) {
  int64_t s = 1;
  for (int32_t i = nd - 1; i >= 0; --i) {
    strides[order[i]] = s;
    s *= dims[order[i]] > 0 ? dims[order[i]] : 1;
  }
}

// Gives size-1 dimensions the strides oneDNN's own descriptor of the same
// layout has, so that a dense NCHW or NHWC tensor compares equal to the
// primitive's plain choice (and skips a reorder) whatever its size-1 strides
// are. Non-dense layouts keep their strides; their size-1 dimensions get
// harmless ones.
static void tsr_onednn_conv_strides_normalise(int32_t nd, const int64_t *dims, int64_t *strides) {
  // Plain (abcd / abcde) and channels-last (acdb / abdec) orders.
  static const int32_t orders[2][2][5] = {
      {{0, 1, 2, 3, 0}, {0, 2, 3, 1, 0}},
      {{0, 1, 2, 3, 4}, {0, 1, 3, 4, 2}},
  };
  const int32_t(*candidates)[5] = orders[nd == 5 ? 1 : 0];
  for (int c = 0; c < 2; ++c) {
    int64_t dense[5];
    tsr_onednn_conv_dense_strides(nd, dims, candidates[c], dense);
    int match = 1;
    for (int32_t d = 0; d < nd && match; ++d) match = dims[d] == 1 || strides[d] == dense[d];
    if (match) {
      memcpy(strides, dense, (size_t)nd * sizeof(int64_t));
      return;
    }
  }
  for (int32_t d = nd - 1; d >= 0; --d) {
    if (dims[d] == 1)
      strides[d] = d == nd - 1 ? 1 : strides[d + 1] * dims[d + 1];
  }
}

// The user descriptor of |desc|; a 4D weight tensor becomes oneDNN's 5D
// grouped one when groups > 1. Inputs broadcast with stride 0 are left to
// the own kernel (the catalogue allows them; they are rare for a conv).
static tsr_status tsr_onednn_conv_user_md(const tsr_tensor_desc *desc, dnnl_data_type_t dt,
                                          int64_t groups, const char *name, int32_t *out_rank,
                                          int64_t *out_dims, tsr_dnnl_md **out_md) {
  *out_md = NULL;
  int64_t dims[5], strides[5];
  int32_t nd = desc->rank;
  for (int32_t d = 0; d < desc->rank; ++d) {
    if (desc->sizes[d] > 1 && desc->strides[d] == 0) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "conv: %s has a stride of 0", name);
    }
  }
  if (groups > 1) {
    const int64_t og = desc->sizes[0] / groups;
    dims[0] = groups;
    strides[0] = og * desc->strides[0];
    dims[1] = og;
    strides[1] = desc->strides[0];
    for (int32_t d = 1; d < desc->rank; ++d) {
      dims[d + 1] = desc->sizes[d];
      strides[d + 1] = desc->strides[d];
    }
    nd = desc->rank + 1;
  } else {
    memcpy(dims, desc->sizes, (size_t)nd * sizeof(int64_t));
    memcpy(strides, desc->strides, (size_t)nd * sizeof(int64_t));
  }
  if (nd >= 4)
    tsr_onednn_conv_strides_normalise(nd, dims, strides);
  else if (dims[0] == 1)
    strides[0] = 1;
  *out_rank = nd;
  memcpy(out_dims, dims, (size_t)nd * sizeof(int64_t));
  return tsr_dnnl_md_create_strided(nd, dims, strides, dt, out_md);
}

static void tsr_onednn_conv_problem_fini(tsr_onednn_conv_problem *pb) {
  for (int t = 0; t < TSR_CONV_TENSORS; ++t) tsr_dnnl_md_destroy(pb->user[t]);
  memset(pb->user, 0, sizeof(pb->user));
}

static dnnl_alg_kind_t tsr_onednn_conv_act_alg(tsr_activation_t activation) {
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

// Reads the signature into |pb|. TSR_UNSUPPORTED for what stays on the own
// kernel.
static tsr_status tsr_onednn_conv_problem_init(const tsr_op_signature *signature,
                                               const tsr_onednn_build_ctx *ctx,
                                               tsr_onednn_conv_problem *pb) {
  memset(pb, 0, sizeof(*pb));
  const tsr_conv2d_attrs *attrs = signature->attrs;
  int64_t stride[2] = {1, 1}, pad_before[2] = {0, 0}, pad_after[2] = {0, 0}, dilation[2] = {1, 1};
  pb->groups = 1;
  pb->activation = TSR_ACTIVATION_NONE;
  int has_bias = 0;
  if (attrs != NULL) {
    if (TSR_ABI_COVERS(attrs, tsr_conv2d_attrs, stride)) {
      memcpy(stride, attrs->stride, sizeof(stride));
    }
    if (TSR_ABI_COVERS(attrs, tsr_conv2d_attrs, pad_before)) {
      memcpy(pad_before, attrs->pad_before, sizeof(pad_before));
    }
    if (TSR_ABI_COVERS(attrs, tsr_conv2d_attrs, pad_after)) {
      memcpy(pad_after, attrs->pad_after, sizeof(pad_after));
    }
    if (TSR_ABI_COVERS(attrs, tsr_conv2d_attrs, dilation)) {
      memcpy(dilation, attrs->dilation, sizeof(dilation));
    }
    if (TSR_ABI_COVERS(attrs, tsr_conv2d_attrs, groups))
      pb->groups = attrs->groups;
    if (TSR_ABI_COVERS(attrs, tsr_conv2d_attrs, activation))
      pb->activation = attrs->activation;
    if (TSR_ABI_COVERS(attrs, tsr_conv2d_attrs, has_bias))
      has_bias = attrs->has_bias != 0;
  }
  for (int d = 0; d < 2; ++d) {
    pb->window.strides[d] = stride[d];
    pb->window.dilates[d] = dilation[d] - 1;  // oneDNN counts the gaps
    pb->window.pad_l[d] = pad_before[d];
    pb->window.pad_r[d] = pad_after[d];
  }
  for (int t = 0; t < TSR_CONV_TENSORS; ++t) pb->operand[t] = -1;
  const int32_t ni = signature->num_inputs;
  switch (signature->op) {
    case TSR_OP_CONV2D:
      pb->kind = TSR_CONV_FWD;
      pb->operand[TSR_CONV_SRC] = 0;
      pb->operand[TSR_CONV_WEI] = 1;
      if (has_bias)
        pb->operand[TSR_CONV_BIAS] = 2;
      pb->operand[TSR_CONV_DST] = ni;
      break;
    case TSR_OP_CONV2D_BACKWARD_DATA:
      pb->kind = TSR_CONV_BWD_DATA;
      pb->operand[TSR_CONV_DST] = 0;
      pb->operand[TSR_CONV_WEI] = 1;
      pb->operand[TSR_CONV_SRC] = ni;
      has_bias = 0;  // ignored by the catalogue
      break;
    default:
      pb->kind = TSR_CONV_BWD_FILTER;
      pb->operand[TSR_CONV_DST] = 0;
      pb->operand[TSR_CONV_SRC] = 1;
      pb->operand[TSR_CONV_WEI] = ni;
      if (has_bias)
        pb->operand[TSR_CONV_BIAS] = ni + 1;
      break;
  }
  pb->has_bias = has_bias;
  if (pb->kind != TSR_CONV_FWD)
    pb->activation = TSR_ACTIVATION_NONE;

  const tsr_tensor_desc *descs[TSR_CONV_TENSORS] = {0};
  for (int t = 0; t < TSR_CONV_TENSORS; ++t) {
    const int32_t o = pb->operand[t];
    if (o >= 0)
      descs[t] = o < ni ? &signature->inputs[o] : &signature->outputs[o - ni];
  }
  const tsr_dtype_t dtype = descs[TSR_CONV_SRC]->dtype;
  if (dtype != TSR_FLOAT32 && dtype != TSR_BFLOAT16) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "conv: dtype %d stays on the own kernel",
                                (int)dtype);
  }
  pb->dt = tsr_onednn_dtype(dtype);
  if (pb->activation != TSR_ACTIVATION_NONE &&
      tsr_onednn_conv_act_alg(pb->activation) == dnnl_alg_kind_undef) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "conv: activation %d has no oneDNN post-op",
                                (int)pb->activation);
  }
  const tsr_tensor_desc *x = descs[TSR_CONV_SRC], *w = descs[TSR_CONV_WEI],
                        *y = descs[TSR_CONV_DST];
  double macs = (double)y->sizes[0] * (double)y->sizes[1] * (double)y->sizes[2] *
                (double)y->sizes[3] * (double)w->sizes[1] * (double)w->sizes[2] *
                (double)w->sizes[3];
  if (macs == 0.0 || tsr_onednn_numel(x) == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "conv: empty tensors");
  }
  const double min_macs =
      pb->kind == TSR_CONV_BWD_FILTER ? TSR_ONEDNN_CONV_FILTER_MIN_MACS : TSR_ONEDNN_CONV_MIN_MACS;
  if (ctx->min_elements != 0 && macs < min_macs) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "conv: %.0f multiply-adds are cheaper on the own kernel", macs);
  }
  pb->cg = x->sizes[1] / pb->groups;
  pb->n = x->sizes[0];
  // One input channel per group: the filter gradient always runs on the
  // own direct kernel (ref's conv_filter_c1.c), whatever the size
  // threshold: a GEMM with K = 9 is too thin for gemm:jit's blocking, and the
  // own kernel measured several times faster than oneDNN 2.6's on the CNN's
  // first layer (docs/performance-log.md, "Measurements behind the code's
  // decisions").
  if (!ctx->no_fixed_routes && pb->kind == TSR_CONV_BWD_FILTER &&
      tsr_cpu_conv_filter_c1_fits(dtype, pb->cg, w->sizes[2], w->sizes[3], y->sizes, y->strides)) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "conv: one input channel per group runs on the own direct "
                                "filter-gradient kernel");
  }
  // Several input channels and one group: the own direct kernel (ref's
  // conv_filter_direct.c) for 3x3 and larger kernels while its float64 sums
  // stay within TSR_ONEDNN_CONV_DIRECT_SUMS_BYTES: there it measured faster
  // than oneDNN 2.6, or as fast. 1x1 kernels and larger sums stay on oneDNN,
  // which measured faster on them (docs/performance-log.md, "Measurements behind
  // the code's decisions").
  if (!ctx->no_fixed_routes && pb->kind == TSR_CONV_BWD_FILTER &&
      tsr_cpu_conv_filter_direct_fits(dtype, pb->groups, x->sizes[1], x->sizes[2], x->sizes[3],
                                      pad_before, pad_after) &&
      w->sizes[2] * w->sizes[3] >= 9 &&
      (double)w->sizes[0] * (double)w->sizes[1] * (double)(w->sizes[2] * w->sizes[3]) * 8.0 <=
          TSR_ONEDNN_CONV_DIRECT_SUMS_BYTES) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "conv: the filter gradient runs on the own direct kernel");
  }
  // The forward without an activation or with RELU (applied after the bias
  // by the own kernels, as by ref's, so that a fused RELU gives the bits of
  // CONV2D then RELU), on the own direct kernels in the two domains where
  // they measured faster than oneDNN 2.6's jit:avx2 (blocked, with its
  // reorders), alone and in cnn_train's step; elsewhere on oneDNN
  // (docs/performance-log.md, "Measurements behind the code's decisions"):
  //
  // - one input channel, one group, up to 3x3, at least 256K y elements
  //   (ref's conv_fwd_c1.c; it writes y once in NCHW). Smaller outputs, 5x5
  //   and depthwise groups (not measured) stay on oneDNN.
  // - several input channels (at least 32), one group, no padding, stride
  //   and dilation 1, 3x3 or larger, an image of at most
  //   TSR_ONEDNN_CONV_FWD_IMAGE_BYTES (ref's conv_fwd_direct.c). Padded
  //   inputs, 16 or 3 channels and 1x1 stay on oneDNN.
  if (!ctx->no_fixed_routes && pb->kind == TSR_CONV_FWD && pb->groups == 1) {
    const int64_t taps = w->sizes[2] * w->sizes[3];
    const double y_elems = (double)y->sizes[0] * (double)y->sizes[1] * (double)y->sizes[2] *
                           (double)y->sizes[3];
    const int c1 = tsr_cpu_conv_fwd_c1_fits(dtype, x->sizes[1], pb->activation, y->sizes,
                                            y->strides) &&
                   taps <= 9 && y_elems >= TSR_ONEDNN_CONV_FWD_C1_MIN_Y;
    const int unpadded = pad_before[0] == 0 && pad_before[1] == 0 && pad_after[0] == 0 &&
                         pad_after[1] == 0 && stride[0] == 1 && stride[1] == 1 &&
                         dilation[0] == 1 && dilation[1] == 1;
    const int direct = tsr_cpu_conv_fwd_direct_fits(dtype, pb->groups, pb->activation,
                                                    x->sizes[1], x->sizes[2], x->sizes[3],
                                                    pad_before, pad_after) &&
                       unpadded && taps >= 9 && x->sizes[1] >= 32 &&
                       (double)x->sizes[1] * (double)x->sizes[2] * (double)x->sizes[3] * 4.0 <=
                           TSR_ONEDNN_CONV_FWD_IMAGE_BYTES;
    if (c1 || direct) {
      return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                  "conv: the forward runs on the own direct kernel");
    }
  }
  // A fused activation only where oneDNN's post-op meets the catalogue on
  // this CPU (eltwise_check.h); else the own kernel runs the whole op.
  tsr_status status = tsr_onednn_eltwise_activation_check(ctx, pb->activation, "conv");
  if (status != TSR_OK)
    return status;
  memcpy(pb->y_sizes, y->sizes, sizeof(pb->y_sizes));
  memcpy(pb->y_strides, y->strides, sizeof(pb->y_strides));
  static const char *const names[TSR_CONV_TENSORS] = {"x", "w", "y", "bias"};
  for (int t = 0; t < TSR_CONV_TENSORS && status == TSR_OK; ++t) {
    if (descs[t] == NULL)
      continue;
    status = tsr_onednn_conv_user_md(descs[t], pb->dt, t == TSR_CONV_WEI ? pb->groups : 1, names[t],
                                     &pb->rank[t], pb->dims[t], &pb->user[t]);
  }
  if (status != TSR_OK)
    tsr_onednn_conv_problem_fini(pb);
  return status;
}

// --- building --------------------------------------------------------------------

// Creates the main pd of |layout| positioned on its |impl|-th non-reference
// implementation (tsr_onednn_impl_select).
static tsr_status tsr_onednn_conv_main_pd(const tsr_onednn_conv_problem *pb, int layout,
                                          int32_t impl, const tsr_onednn_build_ctx *ctx,
                                          tsr_dnnl_pd **out_pd) {
  *out_pd = NULL;
  tsr_dnnl_md *any[TSR_CONV_BIAS] = {0};
  const tsr_dnnl_md *md[TSR_CONV_BIAS] = {0};
  tsr_dnnl_md *bias = NULL;
  tsr_status status = TSR_OK;
  for (int t = 0; t < TSR_CONV_BIAS && status == TSR_OK; ++t) {
    if (layout == TSR_CONV_BLOCKED) {
      status = tsr_dnnl_md_create_any(pb->rank[t], pb->dims[t], pb->dt, &any[t]);
      md[t] = any[t];
    } else {
      md[t] = pb->user[t];
    }
  }
  if (status == TSR_OK && pb->has_bias) {
    status = tsr_dnnl_md_create_tag(1, pb->dims[TSR_CONV_BIAS], pb->dt, dnnl_a, &bias);
  }
  dnnl_primitive_attr_t attr = NULL;
  if (status == TSR_OK) {
    const tsr_dnnl_post_op act = {.kind = TSR_DNNL_POST_ELTWISE,
                                  .alg = tsr_onednn_conv_act_alg(pb->activation)};
    // RELU is left to the NaN-keeping pass (conv_relu.h).
    const int fused =
        pb->activation != TSR_ACTIVATION_NONE && pb->activation != TSR_ACTIVATION_RELU;
    status = tsr_dnnl_attr_create(ctx->math_mode, &act, fused ? 1 : 0, &attr);
  }
  tsr_dnnl_pd *hint = NULL, *pd = NULL;
  if (status == TSR_OK) {
    const tsr_dnnl_md *src = md[TSR_CONV_SRC], *wei = md[TSR_CONV_WEI], *dst = md[TSR_CONV_DST];
    if (pb->kind == TSR_CONV_FWD) {
      status = tsr_dnnl_pd_conv_fwd(ctx->engine, dnnl_forward_inference, src, wei, bias, dst,
                                    &pb->window, attr, &pd);
    } else {
      // The backward primitives take the forward's pd as a hint of layouts.
      status = tsr_dnnl_pd_conv_fwd(ctx->engine, dnnl_forward_training, src, wei, bias, dst,
                                    &pb->window, attr, &hint);
      if (status == TSR_OK && pb->kind == TSR_CONV_BWD_DATA) {
        status =
            tsr_dnnl_pd_conv_bwd_data(ctx->engine, src, wei, dst, &pb->window, hint, attr, &pd);
      } else if (status == TSR_OK) {
        status = tsr_dnnl_pd_conv_bwd_weights(ctx->engine, src, wei, bias, dst, &pb->window, hint,
                                              attr, &pd);
      }
    }
  }
  if (status == TSR_OK)
    status = tsr_onednn_impl_select(pd, impl, "conv");
  if (status == TSR_OK) {
    *out_pd = pd;
    pd = NULL;
  }
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_pd_destroy(hint);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  tsr_dnnl_md_destroy(bias);
  for (int t = 0; t < TSR_CONV_BIAS; ++t) tsr_dnnl_md_destroy(any[t]);
  return status;
}

// The main primitive's arguments: oneDNN's id, which tensor, and whether the
// primitive writes it. Returns the count.
static int32_t tsr_onednn_conv_arg_list(const tsr_onednn_conv_problem *pb, int32_t *ids,
                                        int32_t *tensors, int32_t *outputs) {
  int32_t n = 0;
#define TSR_CONV_ARG(id, tensor, out) \
  (ids[n] = (id), tensors[n] = (tensor), outputs[n] = (out), ++n)
  switch (pb->kind) {
    case TSR_CONV_FWD:
      TSR_CONV_ARG(DNNL_ARG_SRC, TSR_CONV_SRC, 0);
      TSR_CONV_ARG(DNNL_ARG_WEIGHTS, TSR_CONV_WEI, 0);
      if (pb->has_bias)
        TSR_CONV_ARG(DNNL_ARG_BIAS, TSR_CONV_BIAS, 0);
      TSR_CONV_ARG(DNNL_ARG_DST, TSR_CONV_DST, 1);
      break;
    case TSR_CONV_BWD_DATA:
      TSR_CONV_ARG(DNNL_ARG_DIFF_DST, TSR_CONV_DST, 0);
      TSR_CONV_ARG(DNNL_ARG_WEIGHTS, TSR_CONV_WEI, 0);
      TSR_CONV_ARG(DNNL_ARG_DIFF_SRC, TSR_CONV_SRC, 1);
      break;
    default:
      TSR_CONV_ARG(DNNL_ARG_SRC, TSR_CONV_SRC, 0);
      TSR_CONV_ARG(DNNL_ARG_DIFF_DST, TSR_CONV_DST, 0);
      TSR_CONV_ARG(DNNL_ARG_DIFF_WEIGHTS, TSR_CONV_WEI, 1);
      if (pb->has_bias)
        TSR_CONV_ARG(DNNL_ARG_DIFF_BIAS, TSR_CONV_BIAS, 1);
      break;
  }
#undef TSR_CONV_ARG
  return n;
}

// Builds the op for |layout| on the main pd's |impl|-th non-reference
// implementation: the main primitive, a reorder for every argument whose
// layout differs from the user's, the weight cache, and the workspace plan
// (temporaries first, then one scratchpad region all the primitives share,
// as they run one after another). |ctx| selects as positioned.
static tsr_status tsr_onednn_conv_op_build(const tsr_onednn_conv_problem *pb, int layout,
                                           int32_t impl, const tsr_onednn_build_ctx *ctx,
                                           tsr_onednn_conv_op **out_op) {
  *out_op = NULL;
  tsr_dnnl_pd *pd = NULL;
  tsr_status status = tsr_onednn_conv_main_pd(pb, layout, impl, ctx, &pd);
  if (status != TSR_OK)
    return status;
  tsr_onednn_conv_op *op = calloc(1, sizeof(*op));
  if (op == NULL) {
    tsr_dnnl_pd_destroy(pd);
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "conv: %zu bytes for an op", sizeof(*op));
  }
  op->cached_arg = -1;
  op->relu_arg = -1;
  int32_t ids[TSR_CONV_MAX_ARGS], tensors[TSR_CONV_MAX_ARGS], outputs[TSR_CONV_MAX_ARGS];
  op->num_args = tsr_onednn_conv_arg_list(pb, ids, tensors, outputs);
  status = tsr_onednn_prim_init(&op->main, pd, ctx, op->num_args, ids);
  tsr_dnnl_pd_destroy(pd);
  if (status == TSR_OK && strncmp(op->main.impl, "ref", 3) == 0) {
    status =
        tsr_onednn_error_set(TSR_UNSUPPORTED, "conv: oneDNN has only its reference implementation");
  }
  uint64_t temps = 0, scratch = op->main.scratchpad_bytes;
  int staged = 0;
  for (int32_t i = 0; i < op->num_args && status == TSR_OK; ++i) {
    tsr_onednn_conv_arg *a = &op->args[i];
    a->arg_id = ids[i];
    a->operand = pb->operand[tensors[i]];
    a->output = outputs[i];
    const tsr_dnnl_md *user = pb->user[tensors[i]];
    const tsr_dnnl_md *inner = op->main.arg_mds[i];
    if (tsr_dnnl_md_equal(user, inner))
      continue;
    a->staged = 1;
    staged = 1;
    a->temp_offset = temps;
    const uint64_t bytes = tsr_dnnl_md_bytes(inner);
    temps += tsr_onednn_round64(bytes);
    tsr_dnnl_pd *rpd = NULL;
    status = a->output ? tsr_dnnl_pd_reorder(ctx->engine, inner, user, NULL, &rpd)
                       : tsr_dnnl_pd_reorder(ctx->engine, user, inner, NULL, &rpd);
    if (status != TSR_OK)
      break;
    static const int32_t reorder_ids[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    status = tsr_onednn_prim_init(&a->reorder, rpd, ctx, 2, reorder_ids);
    tsr_dnnl_pd_destroy(rpd);
    if (status != TSR_OK)
      break;
    if (a->reorder.scratchpad_bytes > scratch)
      scratch = a->reorder.scratchpad_bytes;
    if (a->output && tensors[i] == TSR_CONV_DST) {
      op->relu_temp_elems = bytes / (pb->dt == dnnl_bf16 ? 2 : 4);
    }
    if (!a->output && tensors[i] == TSR_CONV_WEI) {
      // The weights are read-only here: keep their blocked copy.
      status = tsr_onednn_weight_cache_create(bytes, &op->cache);
      op->cached_arg = i;
    }
  }
  if (status != TSR_OK) {
    tsr_onednn_conv_destroy(&op->base);
    return status;
  }
  // Temporaries first: their offsets are known before the scratchpad's size.
  op->scratch_offset = temps;
  op->scratch_bytes = scratch;
  if (pb->activation == TSR_ACTIVATION_RELU) {
    for (int32_t i = 0; i < op->num_args; ++i) {
      if (op->args[i].arg_id == DNNL_ARG_DST)
        op->relu_arg = i;
    }
    op->dtype = pb->dt == dnnl_bf16 ? TSR_BFLOAT16 : TSR_FLOAT32;
    memcpy(op->y_sizes, pb->y_sizes, sizeof(op->y_sizes));
    memcpy(op->y_strides, pb->y_strides, sizeof(op->y_strides));
  }
  snprintf(op->base.engine, sizeof(op->base.engine), "onednn:%s%s%s", op->main.impl,
           staged ? "+reorder" : "", op->relu_arg >= 0 ? "+relu" : "");
  op->base.workspace_bytes =
      temps + tsr_onednn_round64(scratch) > 0 ? temps + tsr_onednn_round64(scratch) + 64 : 0;
  // oneDNN's CPU convolutions, the filter gradient's reductions included,
  // split work by a fixed rule for a given thread count; reorders and the
  // RELU pass are exact, and a cached weight copy equals a fresh one.
  op->base.info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  op->base.execute = tsr_onednn_conv_execute;
  op->base.destroy = tsr_onednn_conv_destroy;
  *out_op = op;
  return TSR_OK;
}

// --- choosing ----------------------------------------------------------------------

// The order in which the layouts are tried when not autotuning, from
// measurements with oneDNN 2.6, reorders included (docs/performance-log.md,
// "Measurements behind the code's decisions"):
// - forward: the blocked direct convolution (jit:avx2) wins at every shape
//   measured, also with one input channel;
// - backward-data: blocked, except with fewer input channels per group than
//   a vector holds, where its kernels run mostly empty;
// - filter gradient: the im2col + GEMM on plain NCHW wins when there are
//   images for every thread to take or few channels, but it splits work by
//   image, so with fewer images than 2 per thread the blocked one wins.
// A layout oneDNN cannot run (a reference implementation only) falls
// through to the other.
static void tsr_onednn_conv_layout_order(const tsr_onednn_conv_problem *pb, int *order) {
  int plain_first = 0;
  const int64_t threads = tsr_onednn_thread_count_get();
  if (pb->kind == TSR_CONV_BWD_DATA)
    plain_first = pb->cg < 8;
  if (pb->kind == TSR_CONV_BWD_FILTER)
    plain_first = pb->cg < 8 || pb->n >= 2 * threads;
  order[0] = plain_first ? TSR_CONV_PLAIN : TSR_CONV_BLOCKED;
  order[1] = plain_first ? TSR_CONV_BLOCKED : TSR_CONV_PLAIN;
}

tsr_status tsr_onednn_conv_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op) {
  *out_op = NULL;
  tsr_onednn_conv_problem pb;
  tsr_status status = tsr_onednn_conv_problem_init(signature, ctx, &pb);
  if (status != TSR_OK)
    return status;
  int order[TSR_CONV_LAYOUT_COUNT];
  tsr_onednn_conv_layout_order(&pb, order);
  const int tune = ctx->select == TSR_ONEDNN_SELECT_FASTEST;
  // Candidates are built as positioned; the choice among them is made here.
  tsr_onednn_build_ctx positioned = *ctx;
  positioned.select = TSR_ONEDNN_SELECT_FIRST;
  tsr_onednn_conv_op *best = NULL;
  double best_time = -1.0;
  status = TSR_OK;
  for (int l = 0; l < TSR_CONV_LAYOUT_COUNT && status == TSR_OK; ++l) {
    // Without autotuning, the first implementation of the first layout
    // that has one; with it, every implementation of both.
    for (int32_t impl = 0; status == TSR_OK && (tune || impl == 0); ++impl) {
      tsr_onednn_conv_op *op = NULL;
      const tsr_status s = tsr_onednn_conv_op_build(&pb, order[l], impl, &positioned, &op);
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
      const double t = tsr_onednn_op_time(&op->base, signature, TSR_ONEDNN_CONV_TIMING_RUNS);
      if (t >= 0 && (best == NULL || t < best_time)) {
        tsr_onednn_conv_destroy(best != NULL ? &best->base : NULL);
        best = op;
        best_time = t;
      } else {
        tsr_onednn_conv_destroy(&op->base);
      }
    }
    if (best != NULL && !tune)
      break;
  }
  tsr_onednn_conv_problem_fini(&pb);
  if (status != TSR_OK) {
    tsr_onednn_conv_destroy(best != NULL ? &best->base : NULL);
    return status;
  }
  if (best == NULL) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED,
                                "conv: no oneDNN implementation besides the reference one");
  }
  *out_op = &best->base;
  return TSR_OK;
}
