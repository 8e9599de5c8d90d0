// Oracle of POOL2D and POOL2D_BACKWARD (docs/abi.md 10.15).
#include <math.h>
#include <stdlib.h>

#include "oracle_internal.h"

typedef struct pool_shape {
  int64_t n, c, h, w, oh, ow;
  int64_t kernel[2], stride[2], pad[2], pad_after[2], dilation[2];
} pool_shape;

// Output size along one axis, floor or ceil mode (docs/abi.md 10.15).
static int64_t pool_out_size(int64_t in, int64_t pad_before, int64_t pad_after, int64_t dilation,
                             int64_t kernel, int64_t stride, int ceil_mode) {
  int64_t span = in + pad_before + pad_after - (dilation * (kernel - 1) + 1);
  if (span < 0) return 0;
  if (!ceil_mode) return span / stride + 1;
  int64_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + pad_before) out -= 1;
  return out;
}

static tsr_status pool_shape_get(tsr_oracle_call *call, const tsr_pool2d_attrs *a,
                                 const tsr_oracle_tensor *x, const tsr_oracle_tensor *y,
                                 pool_shape *s) {
  if (a->kind != TSR_POOL_MAX && a->kind != TSR_POOL_AVG) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pool2d: kind %d", (int)a->kind);
  }
  if (x->rank != 4 || y->rank != 4) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pool2d: operands must have rank 4");
  }
  for (int i = 0; i < 2; ++i) {
    if (a->kernel[i] < 1 || a->stride[i] < 1 || a->dilation[i] < 1 || a->pad_before[i] < 0 ||
        a->pad_after[i] < 0) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pool2d: attribute [%d] out of range", i);
    }
    s->kernel[i] = a->kernel[i];
    s->stride[i] = a->stride[i];
    s->pad[i] = a->pad_before[i];
    s->pad_after[i] = a->pad_after[i];
    s->dilation[i] = a->dilation[i];
  }
  s->n = x->sizes[0], s->c = x->sizes[1], s->h = x->sizes[2], s->w = x->sizes[3];
  s->oh = pool_out_size(s->h, s->pad[0], s->pad_after[0], s->dilation[0], s->kernel[0],
                        s->stride[0], a->ceil_mode != 0);
  s->ow = pool_out_size(s->w, s->pad[1], s->pad_after[1], s->dilation[1], s->kernel[1],
                        s->stride[1], a->ceil_mode != 0);
  if (y->sizes[0] != s->n || y->sizes[1] != s->c || y->sizes[2] != s->oh ||
      y->sizes[3] != s->ow || s->oh < 1 || s->ow < 1) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pool2d: output sizes do not follow the formula");
  }
  // Every window must see at least one input position.
  for (int axis = 0; axis < 2; ++axis) {
    int64_t in = axis == 0 ? s->h : s->w, out = axis == 0 ? s->oh : s->ow;
    for (int64_t p = 0; p < out; ++p) {
      int found = 0;
      for (int64_t k = 0; k < s->kernel[axis] && !found; ++k) {
        int64_t pos = p * s->stride[axis] - s->pad[axis] + k * s->dilation[axis];
        found = pos >= 0 && pos < in;
      }
      if (!found) {
        return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pool2d: window %lld of axis %d lies in the padding",
                               (long long)p, axis);
      }
    }
  }
  return TSR_OK;
}

// Divisor of AVG pooling for window (p, q).
static double avg_divisor(const pool_shape *s, const tsr_pool2d_attrs *a, int64_t p, int64_t q) {
  int64_t count[2] = {0, 0};
  for (int axis = 0; axis < 2; ++axis) {
    int64_t in = axis == 0 ? s->h : s->w, o = axis == 0 ? p : q;
    int64_t lo = a->count_include_pad ? -s->pad[axis] : 0;
    int64_t hi = a->count_include_pad ? in + s->pad_after[axis] : in;
    for (int64_t k = 0; k < s->kernel[axis]; ++k) {
      int64_t pos = o * s->stride[axis] - s->pad[axis] + k * s->dilation[axis];
      count[axis] += pos >= lo && pos < hi;
    }
  }
  return (double)(count[0] * count[1]);
}

static int64_t idx4(const int64_t *sizes, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((a * sizes[1] + b) * sizes[2] + c) * sizes[3] + d;
}

static tsr_status pool2d_forward(tsr_oracle_call *call, const tsr_pool2d_attrs *a) {
  const tsr_oracle_tensor *x = &call->inputs[0];
  tsr_oracle_tensor *y = &call->outputs[0];
  int is_max = a->kind == TSR_POOL_MAX;
  if (call->num_outputs != (is_max ? 2 : 1)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pool2d: MAX has two outputs, AVG one");
  }
  pool_shape s;
  tsr_status status = pool_shape_get(call, a, x, y, &s);
  if (status != TSR_OK) return status;
  tsr_oracle_tensor *indices = is_max ? &call->outputs[1] : NULL;
  tsr_oracle_mark(y, is_max ? TSR_ORACLE_EXACT : TSR_ORACLE_TOLERANCE);
  if (indices != NULL) tsr_oracle_mark(indices, TSR_ORACLE_EXACT);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t p = 0; p < s.oh; ++p)
        for (int64_t q = 0; q < s.ow; ++q) {
          double best = -INFINITY, sum = 0, mag = 0;
          int64_t best_index = -1, terms = 0;
          for (int64_t kh = 0; kh < s.kernel[0]; ++kh) {
            int64_t h = p * s.stride[0] - s.pad[0] + kh * s.dilation[0];
            if (h < 0 || h >= s.h) continue;
            for (int64_t kw = 0; kw < s.kernel[1]; ++kw) {
              int64_t w = q * s.stride[1] - s.pad[1] + kw * s.dilation[1];
              if (w < 0 || w >= s.w) continue;
              double v = x->v[idx4(x->sizes, n, c, h, w)];
              sum += v;
              mag += fabs(v);
              terms += 1;
              if (best_index < 0 || (!isnan(best) && (isnan(v) || v > best))) {
                best = v;
                best_index = h * s.w + w;
              }
            }
          }
          int64_t o = idx4(y->sizes, n, c, p, q);
          if (is_max) {
            y->v[o] = best;
            tsr_oracle_tensor_set(indices, o, 0, best_index);
          } else {
            double div = avg_divisor(&s, a, p, q);
            y->v[o] = sum / div;
            y->bound[o] = ((double)terms + 2) * mag / div;
          }
        }
  return TSR_OK;
}

static tsr_status pool2d_backward(tsr_oracle_call *call, const tsr_pool2d_attrs *a) {
  const tsr_oracle_tensor *dy = &call->inputs[0];
  tsr_oracle_tensor *dx = &call->outputs[0];
  int is_max = a->kind == TSR_POOL_MAX;
  if (call->num_inputs != (is_max ? 2 : 1)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pool2d_backward: MAX takes indices, AVG does not");
  }
  pool_shape s;
  tsr_status status = pool_shape_get(call, a, dx, dy, &s);
  if (status != TSR_OK) return status;
  const tsr_oracle_tensor *indices = is_max ? &call->inputs[1] : NULL;
  size_t count = (size_t)(dx->numel > 0 ? dx->numel : 1);
  double *sum = calloc(count, sizeof(double));
  double *mag = calloc(count, sizeof(double));
  int64_t *terms = calloc(count, sizeof(int64_t));
  if (!sum || !mag || !terms) {
    free(sum), free(mag), free(terms);
    return tsr_oracle_fail(call, TSR_UNSUPPORTED, "pool2d_backward: out of host memory");
  }
  tsr_status result = TSR_OK;
  for (int64_t n = 0; n < s.n && result == TSR_OK; ++n)
    for (int64_t c = 0; c < s.c && result == TSR_OK; ++c)
      for (int64_t p = 0; p < s.oh && result == TSR_OK; ++p)
        for (int64_t q = 0; q < s.ow; ++q) {
          int64_t o = idx4(dy->sizes, n, c, p, q);
          double g = dy->v[o];
          if (is_max) {
            int64_t idx = indices->iv[o];
            if (idx < 0 || idx >= s.h * s.w) {
              result = tsr_oracle_fail(call, TSR_INVALID_ARGUMENT,
                                       "pool2d_backward: index %lld outside [0, %lld)",
                                       (long long)idx, (long long)(s.h * s.w));
              break;
            }
            int64_t i = idx4(dx->sizes, n, c, idx / s.w, idx % s.w);
            sum[i] += g;
            mag[i] += fabs(g);
            terms[i] += 1;
            continue;
          }
          double div = avg_divisor(&s, a, p, q);
          for (int64_t kh = 0; kh < s.kernel[0]; ++kh) {
            int64_t h = p * s.stride[0] - s.pad[0] + kh * s.dilation[0];
            if (h < 0 || h >= s.h) continue;
            for (int64_t kw = 0; kw < s.kernel[1]; ++kw) {
              int64_t w = q * s.stride[1] - s.pad[1] + kw * s.dilation[1];
              if (w < 0 || w >= s.w) continue;
              int64_t i = idx4(dx->sizes, n, c, h, w);
              sum[i] += g / div;
              mag[i] += fabs(g / div);
              terms[i] += 1;
            }
          }
        }
  if (result == TSR_OK) {
    tsr_oracle_mark(dx, TSR_ORACLE_TOLERANCE);
    for (int64_t i = 0; i < dx->numel; ++i) {
      dx->v[i] = sum[i];
      dx->bound[i] = ((double)terms[i] + 2) * mag[i];
    }
  }
  free(sum), free(mag), free(terms);
  return result;
}

tsr_status tsr_oracle_pool_compute(tsr_oracle_call *call) {
  const tsr_pool2d_attrs *a = call->attrs;
  if (call->op == TSR_OP_POOL2D) return pool2d_forward(call, a);
  return pool2d_backward(call, a);
}
