// Oracle of CONV2D and its two backward ops (docs/abi.md 10.14): direct
// loops over the formulas, compensated sums.
#include <math.h>
#include <stdlib.h>

#include "oracle_internal.h"

typedef struct conv_shape {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups, cg, og;
  int64_t stride[2], pad[2], pad_after[2], dilation[2];
} conv_shape;

static int64_t conv_out_size(int64_t in, int64_t pad_before, int64_t pad_after, int64_t dilation,
                             int64_t kernel, int64_t stride) {
  int64_t span = in + pad_before + pad_after - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

// Reads the attributes and sizes from x-like |x| [N, C, H, W], w-like |w|
// [O, C/g, KH, KW] and y-like |y| [N, O, OH, OW], checking every rule.
static tsr_status conv_shape_get(tsr_oracle_call *call, const tsr_conv2d_attrs *a,
                                 const tsr_oracle_tensor *x, const tsr_oracle_tensor *w,
                                 const tsr_oracle_tensor *y, conv_shape *s) {
  if (x->rank != 4 || w->rank != 4 || y->rank != 4) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d: operands must have rank 4");
  }
  for (int i = 0; i < 2; ++i) {
    if (a->stride[i] < 1 || a->dilation[i] < 1 || a->pad_before[i] < 0 || a->pad_after[i] < 0) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d: stride, dilation or pad [%d] out of range", i);
    }
    s->stride[i] = a->stride[i];
    s->pad[i] = a->pad_before[i];
    s->pad_after[i] = a->pad_after[i];
    s->dilation[i] = a->dilation[i];
  }
  s->n = x->sizes[0], s->c = x->sizes[1], s->h = x->sizes[2], s->w = x->sizes[3];
  s->o = w->sizes[0], s->kh = w->sizes[2], s->kw = w->sizes[3];
  s->groups = a->groups;
  if (s->groups < 1 || s->c % s->groups != 0 || s->o % s->groups != 0) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d: groups %lld does not divide C and O",
                           (long long)s->groups);
  }
  s->cg = s->c / s->groups;
  s->og = s->o / s->groups;
  if (w->sizes[1] != s->cg || s->kh < 1 || s->kw < 1) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d: w must be [O, C/groups, KH, KW]");
  }
  s->oh = conv_out_size(s->h, s->pad[0], s->pad_after[0], s->dilation[0], s->kh, s->stride[0]);
  s->ow = conv_out_size(s->w, s->pad[1], s->pad_after[1], s->dilation[1], s->kw, s->stride[1]);
  if (s->oh < 1 || s->ow < 1 || y->sizes[0] != s->n || y->sizes[1] != s->o ||
      y->sizes[2] != s->oh || y->sizes[3] != s->ow) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d: output sizes do not follow the formula");
  }
  return TSR_OK;
}

static int64_t idx4(const int64_t *sizes, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((a * sizes[1] + b) * sizes[2] + c) * sizes[3] + d;
}

static tsr_status conv2d_forward(tsr_oracle_call *call, const tsr_conv2d_attrs *a) {
  const tsr_oracle_tensor *x = &call->inputs[0];
  const tsr_oracle_tensor *w = &call->inputs[1];
  const tsr_oracle_tensor *bias = a->has_bias ? &call->inputs[2] : NULL;
  tsr_oracle_tensor *y = &call->outputs[0];
  conv_shape s;
  tsr_status status = conv_shape_get(call, a, x, w, y, &s);
  if (status != TSR_OK) return status;
  if (a->has_bias && (call->num_inputs != 3 || bias->numel != s.o)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d: bias must be [O]");
  }
  tsr_oracle_mark(y, TSR_ORACLE_TOLERANCE);
  double terms = (double)(s.cg * s.kh * s.kw);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o)
      for (int64_t p = 0; p < s.oh; ++p)
        for (int64_t q = 0; q < s.ow; ++q) {
          int64_t g = o / s.og;
          tsr_oracle_sum acc = {0, 0, 0};
          double mag = 0;
          for (int64_t c = 0; c < s.cg; ++c)
            for (int64_t kh = 0; kh < s.kh; ++kh) {
              int64_t h = p * s.stride[0] - s.pad[0] + kh * s.dilation[0];
              if (h < 0 || h >= s.h) continue;
              for (int64_t kw = 0; kw < s.kw; ++kw) {
                int64_t ww = q * s.stride[1] - s.pad[1] + kw * s.dilation[1];
                if (ww < 0 || ww >= s.w) continue;
                double xv = x->v[idx4(x->sizes, n, g * s.cg + c, h, ww)];
                double wv = w->v[idx4(w->sizes, o, c, kh, kw)];
                tsr_oracle_sum_add_product(&acc, xv, wv);
                mag += fabs(xv * wv);
              }
            }
          double v = tsr_oracle_sum_get(&acc);
          double bound = (terms + 1) * mag;
          if (bias != NULL) {
            v += bias->v[o];
            bound += 2 * (fabs(v) + fabs(bias->v[o]));
          }
          int64_t i = idx4(y->sizes, n, o, p, q);
          y->v[i] = tsr_oracle_activation_value(a->activation, v);
          y->bound[i] = tsr_oracle_activation_bound(a->activation, v, bound);
        }
  return TSR_OK;
}

// Accumulators for outputs written by scattering.
typedef struct scatter_acc {
  tsr_oracle_sum *sum;
  double *mag;
  int64_t *terms;
} scatter_acc;

static int scatter_acc_create(int64_t n, scatter_acc *acc) {
  size_t c = (size_t)(n > 0 ? n : 1);
  acc->sum = calloc(c, sizeof(*acc->sum));
  acc->mag = calloc(c, sizeof(double));
  acc->terms = calloc(c, sizeof(int64_t));
  return acc->sum && acc->mag && acc->terms ? 0 : -1;
}

static void scatter_acc_destroy(scatter_acc *acc) {
  free(acc->sum);
  free(acc->mag);
  free(acc->terms);
}

static void scatter_acc_finish(scatter_acc *acc, tsr_oracle_tensor *out) {
  for (int64_t i = 0; i < out->numel; ++i) {
    out->v[i] = tsr_oracle_sum_get(&acc->sum[i]);
    out->bound[i] = ((double)acc->terms[i] + 1) * acc->mag[i];
  }
}

static tsr_status conv2d_backward_data(tsr_oracle_call *call, const tsr_conv2d_attrs *a) {
  const tsr_oracle_tensor *dy = &call->inputs[0];
  const tsr_oracle_tensor *w = &call->inputs[1];
  tsr_oracle_tensor *dx = &call->outputs[0];
  if (a->activation != TSR_ACTIVATION_NONE) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d_backward_data: activation must be NONE");
  }
  conv_shape s;
  tsr_status status = conv_shape_get(call, a, dx, w, dy, &s);
  if (status != TSR_OK) return status;
  scatter_acc acc;
  if (scatter_acc_create(dx->numel, &acc) != 0) {
    scatter_acc_destroy(&acc);
    return tsr_oracle_fail(call, TSR_UNSUPPORTED, "conv2d_backward_data: out of host memory");
  }
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o)
      for (int64_t p = 0; p < s.oh; ++p)
        for (int64_t q = 0; q < s.ow; ++q) {
          int64_t g = o / s.og;
          double g_v = dy->v[idx4(dy->sizes, n, o, p, q)];
          for (int64_t kh = 0; kh < s.kh; ++kh) {
            int64_t h = p * s.stride[0] - s.pad[0] + kh * s.dilation[0];
            if (h < 0 || h >= s.h) continue;
            for (int64_t kw = 0; kw < s.kw; ++kw) {
              int64_t ww = q * s.stride[1] - s.pad[1] + kw * s.dilation[1];
              if (ww < 0 || ww >= s.w) continue;
              for (int64_t c = 0; c < s.cg; ++c) {
                int64_t i = idx4(dx->sizes, n, g * s.cg + c, h, ww);
                double wv = w->v[idx4(w->sizes, o, c, kh, kw)];
                tsr_oracle_sum_add_product(&acc.sum[i], g_v, wv);
                acc.mag[i] += fabs(g_v * wv);
                acc.terms[i] += 1;
              }
            }
          }
        }
  tsr_oracle_mark(dx, TSR_ORACLE_TOLERANCE);
  scatter_acc_finish(&acc, dx);
  scatter_acc_destroy(&acc);
  return TSR_OK;
}

static tsr_status conv2d_backward_filter(tsr_oracle_call *call, const tsr_conv2d_attrs *a) {
  const tsr_oracle_tensor *dy = &call->inputs[0];
  const tsr_oracle_tensor *x = &call->inputs[1];
  tsr_oracle_tensor *dw = &call->outputs[0];
  tsr_oracle_tensor *dbias = a->has_bias ? &call->outputs[1] : NULL;
  if (a->activation != TSR_ACTIVATION_NONE) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d_backward_filter: activation must be NONE");
  }
  if (a->has_bias && call->num_outputs != 2) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "conv2d_backward_filter: has_bias needs dbias");
  }
  conv_shape s;
  tsr_status status = conv_shape_get(call, a, x, dw, dy, &s);
  if (status != TSR_OK) return status;
  tsr_oracle_mark(dw, TSR_ORACLE_TOLERANCE);
  double terms = (double)(s.n * s.oh * s.ow);
  for (int64_t o = 0; o < s.o; ++o)
    for (int64_t c = 0; c < s.cg; ++c)
      for (int64_t kh = 0; kh < s.kh; ++kh)
        for (int64_t kw = 0; kw < s.kw; ++kw) {
          int64_t g = o / s.og;
          tsr_oracle_sum acc = {0, 0, 0};
          double mag = 0;
          for (int64_t n = 0; n < s.n; ++n)
            for (int64_t p = 0; p < s.oh; ++p) {
              int64_t h = p * s.stride[0] - s.pad[0] + kh * s.dilation[0];
              if (h < 0 || h >= s.h) continue;
              for (int64_t q = 0; q < s.ow; ++q) {
                int64_t ww = q * s.stride[1] - s.pad[1] + kw * s.dilation[1];
                if (ww < 0 || ww >= s.w) continue;
                double gv = dy->v[idx4(dy->sizes, n, o, p, q)];
                double xv = x->v[idx4(x->sizes, n, g * s.cg + c, h, ww)];
                tsr_oracle_sum_add_product(&acc, gv, xv);
                mag += fabs(gv * xv);
              }
            }
          int64_t i = idx4(dw->sizes, o, c, kh, kw);
          dw->v[i] = tsr_oracle_sum_get(&acc);
          dw->bound[i] = (terms + 1) * mag;
        }
  if (dbias != NULL) {
    tsr_oracle_mark(dbias, TSR_ORACLE_TOLERANCE);
    for (int64_t o = 0; o < s.o; ++o) {
      tsr_oracle_sum acc = {0, 0, 0};
      double mag = 0;
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t p = 0; p < s.oh; ++p)
          for (int64_t q = 0; q < s.ow; ++q) {
            double gv = dy->v[idx4(dy->sizes, n, o, p, q)];
            tsr_oracle_sum_add(&acc, gv);
            mag += fabs(gv);
          }
      dbias->v[o] = tsr_oracle_sum_get(&acc);
      dbias->bound[o] = (terms + 1) * mag;
    }
  }
  return TSR_OK;
}

tsr_status tsr_oracle_conv_compute(tsr_oracle_call *call) {
  const tsr_conv2d_attrs *a = call->attrs;
  switch (call->op) {
    case TSR_OP_CONV2D: return conv2d_forward(call, a);
    case TSR_OP_CONV2D_BACKWARD_DATA: return conv2d_backward_data(call, a);
    default: return conv2d_backward_filter(call, a);
  }
}
