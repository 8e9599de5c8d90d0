// SOFTMAX and SOFTMAX_BACKWARD on oneDNN's softmax primitive (softmax_v2 on
// 2.x), log variant included, on any axis whose layout oneDNN's vector code
// takes: the axis with stride 1 in a dense tensor (rows of a row-major
// [N, C], axis 0 of a column-major one). Other layouts would run oneDNN's
// reference loops and stay on the own kernel, as does the backward on this
// AVX2 machine, where oneDNN (2.6 and 3.2) has vector code only for the
// forward.
//
// oneDNN's vector code does not follow the catalogue's special values
// (measured with 2.6 and 3.2 on AVX2): its max drops NaN and its exp(NaN) is
// +inf, so a slice holding NaN or +inf comes out NaN only at those positions
// and 0 (log: -inf) elsewhere, where the catalogue's formula makes the whole
// slice NaN. In every such slice at least one output is NaN, and by the
// formula a slice with one NaN output is NaN throughout, so after the
// primitive a pass over the output spreads a NaN over its slice. The
// log-softmax backward computes dx = dy - exp(y) * sum(dy) with the same exp
// (in its AVX-512 code), which gives -+inf for a NaN y instead of NaN, so a
// pass sets dx to NaN where y is. The plain backward, y * (dy - sum(dy * y)),
// is IEEE arithmetic throughout and needs no pass. The passes read what the
// primitive just wrote (still in cache for most sizes) and run on the
// plugin's threads.
//
// log-softmax takes oneDNN's vector log too, so it goes to oneDNN only when
// that log passes UNARY LOG's check (eltwise.c). With 2.6 and 3.2 it does
// not (24 ulps off: 2.6's log(1) is -1.4e-6, and a one-element slice came
// out 1.4e-6 instead of 0, outside the conformance tolerance), so the
// log-softmax forward stays on the own kernel there.
//
// Only float32: on this machine oneDNN has no bfloat16/float16 softmax code
// besides its reference loops. Deterministic: each slice is computed whole,
// by one thread, in a fixed order.
#include <math.h>
#include <string.h>

#include "eltwise_check.h"
#include "onednn_ew.h"
#include "onednn_plugin.h"

enum {
  TSR_SOFTMAX_FIX_NONE = 0,
  TSR_SOFTMAX_FIX_SPREAD = 1,  // forward: a NaN anywhere in a slice of y fills the slice
  TSR_SOFTMAX_FIX_FOLLOW = 2,  // log backward: dx is NaN where y is
};

// Work per chunk of the fix-up pass, in elements: well above the cost of a
// parallel dispatch.
#define TSR_ONEDNN_SOFTMAX_FIX_GRAIN 16384

typedef struct tsr_onednn_softmax_op {
  tsr_onednn_ew_op ew;
  int32_t fix;
  int32_t y_index, dx_index;  // ctx->ptrs of y and (FOLLOW) dx
  int32_t outer_rank;         // dimensions other than the axis
  int64_t outer_dims[TSR_MAX_RANK];
  int64_t outer_y_strides[TSR_MAX_RANK], outer_dx_strides[TSR_MAX_RANK];
  int64_t n, y_step, dx_step;  // the axis: size and strides
  int64_t slices;
} tsr_onednn_softmax_op;

typedef struct tsr_onednn_softmax_job {
  const tsr_onednn_softmax_op *op;
  float *y;
  float *dx;
} tsr_onednn_softmax_job;

// The element offsets of slice |slice| in y and dx.
static void tsr_onednn_softmax_slice_offsets(const tsr_onednn_softmax_op *op, int64_t slice,
                                             int64_t *y_off, int64_t *dx_off) {
  int64_t y = 0, dx = 0;
  for (int32_t d = op->outer_rank - 1; d >= 0; --d) {
    const int64_t i = slice % op->outer_dims[d];
    slice /= op->outer_dims[d];
    y += i * op->outer_y_strides[d];
    dx += i * op->outer_dx_strides[d];
  }
  *y_off = y;
  *dx_off = dx;
}

static void tsr_onednn_softmax_spread_run(void *arg, int64_t begin, int64_t end,
                                          int32_t thread_index) {
  (void)thread_index;
  const tsr_onednn_softmax_job *job = arg;
  const tsr_onednn_softmax_op *op = job->op;
  const int64_t n = op->n, step = op->y_step;
  for (int64_t s = begin; s < end; ++s) {
    int64_t off, unused;
    tsr_onednn_softmax_slice_offsets(op, s, &off, &unused);
    float *y = job->y + off;
    int nan = 0;
    if (step == 1) {
      for (int64_t k = 0; k < n; ++k) nan |= y[k] != y[k];
    } else {
      for (int64_t k = 0; k < n; ++k) nan |= y[k * step] != y[k * step];
    }
    if (nan) {
      for (int64_t k = 0; k < n; ++k) y[k * step] = NAN;
    }
  }
}

static void tsr_onednn_softmax_follow_run(void *arg, int64_t begin, int64_t end,
                                          int32_t thread_index) {
  (void)thread_index;
  const tsr_onednn_softmax_job *job = arg;
  const tsr_onednn_softmax_op *op = job->op;
  const int64_t n = op->n;
  for (int64_t s = begin; s < end; ++s) {
    int64_t y_off, dx_off;
    tsr_onednn_softmax_slice_offsets(op, s, &y_off, &dx_off);
    const float *y = job->y + y_off;
    float *dx = job->dx + dx_off;
    for (int64_t k = 0; k < n; ++k) {
      const float v = y[k * op->y_step];
      if (v != v)
        dx[k * op->dx_step] = v;
    }
  }
}

static tsr_status tsr_onednn_softmax_execute(const tsr_onednn_op *base,
                                             const tsr_onednn_exec_ctx *ctx) {
  const tsr_onednn_softmax_op *op = (const tsr_onednn_softmax_op *)base;
  tsr_status status = tsr_onednn_ew_op_run(&op->ew, ctx);
  if (status != TSR_OK || op->fix == TSR_SOFTMAX_FIX_NONE)
    return status;
  tsr_onednn_softmax_job job = {
      op, (float *)ctx->ptrs[op->y_index],
      op->fix == TSR_SOFTMAX_FIX_FOLLOW ? (float *)ctx->ptrs[op->dx_index] : NULL};
  const int64_t grain =
      op->n >= TSR_ONEDNN_SOFTMAX_FIX_GRAIN ? 1 : TSR_ONEDNN_SOFTMAX_FIX_GRAIN / op->n;
  return tsr_onednn_parallel_for(op->slices, grain,
                                 op->fix == TSR_SOFTMAX_FIX_SPREAD ? tsr_onednn_softmax_spread_run
                                                                   : tsr_onednn_softmax_follow_run,
                                 &job);
}

// Operands of one shape as oneDNN gets them: size-1 dimensions other than
// the axis dropped (their strides would only hide a plain layout).
typedef struct tsr_onednn_softmax_shape {
  int32_t rank, axis;
  int64_t dims[TSR_MAX_RANK];
  int64_t strides[3][TSR_MAX_RANK];
} tsr_onednn_softmax_shape;

static void tsr_onednn_softmax_shape_get(const tsr_op_signature *signature, int32_t axis,
                                         tsr_onednn_softmax_shape *s) {
  const tsr_tensor_desc *ref = &signature->outputs[0];
  const int32_t count = signature->num_inputs + signature->num_outputs;
  memset(s, 0, sizeof(*s));
  for (int32_t d = 0; d < ref->rank; ++d) {
    if (ref->sizes[d] == 1 && d != axis)
      continue;
    if (d == axis)
      s->axis = s->rank;
    s->dims[s->rank] = ref->sizes[d];
    for (int32_t i = 0; i < count; ++i) {
      const tsr_tensor_desc *t = i < signature->num_inputs
                                     ? &signature->inputs[i]
                                     : &signature->outputs[i - signature->num_inputs];
      s->strides[i][s->rank] = t->strides[d];
    }
    ++s->rank;
  }
}

// Fills the fix-up geometry of |op| from |s|: y is operand |y|, dx (FOLLOW) |dx|.
static void tsr_onednn_softmax_fix_set(tsr_onednn_softmax_op *op, const tsr_onednn_softmax_shape *s,
                                       int32_t fix, int32_t y, int32_t dx) {
  op->fix = fix;
  op->y_index = y;
  op->dx_index = dx;
  op->slices = 1;
  for (int32_t d = 0; d < s->rank; ++d) {
    if (d == s->axis) {
      op->n = s->dims[d];
      op->y_step = s->strides[y][d];
      op->dx_step = s->strides[dx][d];
      continue;
    }
    op->outer_dims[op->outer_rank] = s->dims[d];
    op->outer_y_strides[op->outer_rank] = s->strides[y][d];
    op->outer_dx_strides[op->outer_rank] = s->strides[dx][d];
    ++op->outer_rank;
    op->slices *= s->dims[d];
  }
}

tsr_status tsr_onednn_softmax_build(const tsr_op_signature *signature,
                                    const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op) {
  *out_op = NULL;
  const tsr_softmax_attrs *attrs = signature->attrs;
  const int backward = signature->op == TSR_OP_SOFTMAX_BACKWARD;
  const int log = attrs->log != 0;
  const char *what = backward ? "softmax_backward" : "softmax";
  const tsr_tensor_desc *out = &signature->outputs[0];
  if (out->dtype != TSR_FLOAT32) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: dtype %d stays on the own kernel", what,
                                (int)out->dtype);
  }
  tsr_status status = tsr_onednn_ew_size_check(ctx, tsr_onednn_numel(out), what);
  if (status != TSR_OK)
    return status;
  if (log && !backward) {
    // y = x - m - log(sum) takes oneDNN's vector log (see the top); the
    // backward has none.
    status = tsr_onednn_eltwise_log_check(ctx);
    if (status != TSR_OK)
      return status;
  }
  tsr_onednn_softmax_shape s;
  tsr_onednn_softmax_shape_get(signature, attrs->axis, &s);

  // Forward: x = 0, y = 1. Backward: dy = 0, y = 1, dx = 2.
  const int32_t count = backward ? 3 : 2;
  tsr_dnnl_md *mds[3] = {NULL, NULL, NULL};
  dnnl_primitive_attr_t attr = NULL;
  tsr_dnnl_pd *fwd = NULL, *bwd = NULL;
  tsr_onednn_softmax_op *op = NULL;
  for (int32_t i = 0; i < count && status == TSR_OK; ++i) {
    status = tsr_dnnl_md_create_strided(s.rank, s.dims, s.strides[i], dnnl_f32, &mds[i]);
  }
  if (status == TSR_OK)
    status = tsr_dnnl_attr_create(ctx->math_mode, NULL, 0, &attr);
  if (status == TSR_OK) {
    tsr_onednn_ew_op *ew = NULL;
    status = tsr_onednn_ew_op_create(sizeof(*op), what, &ew);
    op = (tsr_onednn_softmax_op *)ew;
  }
  if (status == TSR_OK && !backward) {
    status = tsr_dnnl_pd_softmax_fwd(ctx->engine, dnnl_forward_inference, log, s.axis, mds[0],
                                     mds[1], attr, &fwd);
    if (status == TSR_OK) {
      static const int32_t ids[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
      static const int32_t operands[] = {0, 1};
      status = tsr_onednn_ew_op_prim_init(&op->ew, fwd, ctx, 2, ids, operands, 0, what);
    }
    if (status == TSR_OK)
      tsr_onednn_softmax_fix_set(op, &s, TSR_SOFTMAX_FIX_SPREAD, 1, 1);
  } else if (status == TSR_OK) {
    // The backward's hint: a forward whose output has y's layout.
    status = tsr_dnnl_pd_softmax_fwd(ctx->engine, dnnl_forward_training, log, s.axis, mds[1],
                                     mds[1], attr, &fwd);
    if (status == TSR_OK) {
      status = tsr_dnnl_pd_softmax_bwd(ctx->engine, log, s.axis, mds[2], mds[0], mds[1], fwd, attr,
                                       &bwd);
    }
    if (status == TSR_OK) {
      static const int32_t ids[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_DST, DNNL_ARG_DIFF_SRC};
      static const int32_t operands[] = {0, 1, 2};
      status = tsr_onednn_ew_op_prim_init(&op->ew, bwd, ctx, 3, ids, operands, 0, what);
    }
    if (status == TSR_OK && log)
      tsr_onednn_softmax_fix_set(op, &s, TSR_SOFTMAX_FIX_FOLLOW, 1, 2);
  }
  tsr_dnnl_pd_destroy(bwd);
  tsr_dnnl_pd_destroy(fwd);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  for (int32_t i = 0; i < 3; ++i) tsr_dnnl_md_destroy(mds[i]);
  if (status != TSR_OK) {
    tsr_onednn_ew_op_destroy(op ? &op->ew.base : NULL);
    return status;
  }
  op->ew.base.execute = tsr_onednn_softmax_execute;
  *out_op = &op->ew.base;
  return TSR_OK;
}
