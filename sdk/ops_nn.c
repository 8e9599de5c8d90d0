// Neural-network op functions (convolution, pooling, softmax, norms, the
// fused loss and optimizer updates) and their autograd rules: shape
// inference, the outputs, one dispatch, then the node on the tape.
#include <stddef.h>
#include <string.h>

#include "autograd_internal.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"
#include "sdk_errors.h"

static void release_all(int32_t count, tsr_tensor **tensors) {
  for (int32_t i = 0; i < count; ++i) {
    tsr_tensor_release(tensors[i]);
    tensors[i] = NULL;
  }
}

// Allocates |count| outputs and runs |op|; on failure releases them.
static tsr_status alloc_run(const char *what, tsr_op_id_t op, tsr_device *device, int32_t ni,
                            tsr_tensor *const *inputs, int32_t count, const tsr_dtype_t *dtypes,
                            const int32_t *ranks, const int64_t (*sizes)[TSR_MAX_RANK],
                            const void *attrs, tsr_tensor **outputs) {
  for (int32_t i = 0; i < count; ++i) outputs[i] = NULL;
  for (int32_t i = 0; i < count; ++i) {
    outputs[i] = tsr_tensor_alloc(what, device, dtypes[i], ranks[i], sizes[i]);
    if (outputs[i] == NULL) {
      release_all(count, outputs);
      return tsr_sdk_last_status();
    }
  }
  tsr_status status = tsr_dispatch(op, ni, inputs, count, outputs, attrs);
  if (status != TSR_OK)
    release_all(count, outputs);
  return status;
}

static int dtype_is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

// Statistics of bfloat16 and float16 inputs are float32 (ops.h).
static tsr_dtype_t stat_dtype(tsr_dtype_t dtype) {
  return dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16 ? TSR_FLOAT32 : dtype;
}

// Copies a caller's attribute struct over |defaults| (|size| bytes), honouring
// a smaller struct_size from an older caller.
static tsr_status attrs_copy(const char *what, const void *attrs, void *defaults, size_t size) {
  if (attrs == NULL)
    return TSR_OK;
  size_t given = *(const size_t *)attrs;
  if (given < sizeof(size_t) || given > 512) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: attrs->struct_size %zu is not a valid size",
                         what, given);
  }
  memcpy(defaults, attrs, given < size ? given : size);
  *(size_t *)defaults = size;
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Convolution

static tsr_status conv_attrs_get(const char *what, const tsr_conv2d_attrs *attrs,
                                 tsr_conv2d_attrs *out) {
  *out =
      (tsr_conv2d_attrs){sizeof(*out), {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, TSR_ACTIVATION_NONE, 0};
  TSR_RETURN_IF_ERROR(attrs_copy(what, attrs, out, sizeof(*out)));
  for (int d = 0; d < 2; ++d) {
    if (out->stride[d] < 1 || out->dilation[d] < 1 || out->pad_before[d] < 0 ||
        out->pad_after[d] < 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: along axis %d stride %lld, dilation %lld (both >= 1), pads %lld "
                           "and %lld (both >= 0)",
                           what, d, (long long)out->stride[d], (long long)out->dilation[d],
                           (long long)out->pad_before[d], (long long)out->pad_after[d]);
    }
  }
  if (out->groups < 1) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: groups is %lld", what, (long long)out->groups);
  }
  if (out->activation < 0 || out->activation >= TSR_ACTIVATION_COUNT) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: activation %d is not a tsr_activation_t", what,
                         out->activation);
  }
  return TSR_OK;
}

// y's sizes from x [N, C, H, W] and w [O, C/groups, KH, KW].
static tsr_status conv_shape(const char *what, const int64_t *x, const int64_t *w,
                             const tsr_conv2d_attrs *a, int64_t *y) {
  if (w[1] * a->groups != x[1] || w[0] % a->groups != 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: x has %lld channels and w is [%lld, %lld, %lld, %lld] with %lld "
                         "groups; w must be [O, C/groups, KH, KW] with O divisible by groups",
                         what, (long long)x[1], (long long)w[0], (long long)w[1], (long long)w[2],
                         (long long)w[3], (long long)a->groups);
  }
  y[0] = x[0];
  y[1] = w[0];
  for (int d = 0; d < 2; ++d) {
    int64_t span =
        x[2 + d] + a->pad_before[d] + a->pad_after[d] - a->dilation[d] * (w[2 + d] - 1) - 1;
    if (span < 0 || w[2 + d] < 1) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: kernel %lld (dilation %lld) does not fit input %lld padded by "
                           "%lld + %lld along %s",
                           what, (long long)w[2 + d], (long long)a->dilation[d],
                           (long long)x[2 + d], (long long)a->pad_before[d],
                           (long long)a->pad_after[d], d == 0 ? "H" : "W");
    }
    y[2 + d] = span / a->stride[d] + 1;
  }
  return TSR_OK;
}

static tsr_status conv_rank_check(const char *what, const char *name, const tsr_tensor *t) {
  if (t == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, name);
  if (tsr_tensor_rank(t) != 4) {
    return tsr_fail(tsr_tensor_device(t), TSR_INVALID_ARGUMENT,
                    "%s: %s has rank %d, expected 4 (NCHW)", what, name, tsr_tensor_rank(t));
  }
  return TSR_OK;
}

static tsr_status conv2d_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_conv2d_attrs a;
  memcpy(&a, node->attrs, sizeof(a));
  tsr_tensor *x = node->inputs[0], *w = node->inputs[1];
  int has_bias = node->num_inputs == 3;
  tsr_tensor *g = tsr_contiguous(dy);
  if (g == NULL)
    return tsr_sdk_last_status();
  if (a.activation == TSR_ACTIVATION_RELU) {
    // relu'(pre) = (y > 0) with y the fused output.
    tsr_tensor *masked = tsr_unary_backward(g, node->saved[0], TSR_UNARY_RELU, 0.0);
    tsr_tensor_release(g);
    if (masked == NULL)
      return tsr_sdk_last_status();
    g = masked;
  }
  a.activation = TSR_ACTIVATION_NONE;
  tsr_status status = TSR_OK;
  if (tsr_ag_needs_grad(node, 0)) {
    out_dx[0] = tsr_conv2d_backward_data(g, w, tsr_tensor_sizes(x), &a);
    if (out_dx[0] == NULL)
      status = tsr_sdk_last_status();
  }
  int want_w = tsr_ag_needs_grad(node, 1), want_b = has_bias && tsr_ag_needs_grad(node, 2);
  if (status == TSR_OK && (want_w || want_b)) {
    tsr_tensor *dw = NULL, *db = NULL;
    status = tsr_conv2d_backward_filter(g, x, tsr_tensor_sizes(w), &a, &dw, want_b ? &db : NULL);
    if (status == TSR_OK) {
      if (want_w) {
        out_dx[1] = dw;
      } else {
        tsr_tensor_release(dw);
      }
      if (want_b)
        out_dx[2] = db;
    }
  }
  tsr_tensor_release(g);
  if (status != TSR_OK)
    release_all(node->num_inputs, out_dx);
  return status;
}

static tsr_unary_fn_t activation_unary(tsr_activation_t activation) {
  switch (activation) {
    case TSR_ACTIVATION_GELU:
      return TSR_UNARY_GELU;
    case TSR_ACTIVATION_GELU_TANH:
      return TSR_UNARY_GELU_TANH;
    case TSR_ACTIVATION_SIGMOID:
      return TSR_UNARY_SIGMOID;
    case TSR_ACTIVATION_TANH:
      return TSR_UNARY_TANH;
    default:
      return TSR_UNARY_RELU;
  }
}

tsr_tensor *tsr_conv2d(tsr_tensor *x, tsr_tensor *w, tsr_tensor *bias,
                       const tsr_conv2d_attrs *attrs) {
  const char *what = "conv2d";
  if (conv_rank_check(what, "x", x) != TSR_OK || conv_rank_check(what, "w", w) != TSR_OK) {
    return NULL;
  }
  tsr_conv2d_attrs a;
  int64_t y_sizes[TSR_MAX_RANK] = {0};
  if (conv_attrs_get(what, attrs, &a) != TSR_OK ||
      conv_shape(what, tsr_tensor_sizes(x), tsr_tensor_sizes(w), &a, y_sizes) != TSR_OK) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s", tsr_error_message());
  }
  if (bias != NULL &&
      (tsr_tensor_rank(bias) != 1 || tsr_tensor_sizes(bias)[0] != tsr_tensor_sizes(w)[0])) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "conv2d: bias must be [O] = [%lld], it has rank %d and %lld elements",
                        (long long)tsr_tensor_sizes(w)[0], tsr_tensor_rank(bias),
                        (long long)tsr_tensor_numel(bias));
  }
  a.has_bias = bias != NULL;
  tsr_tensor *inputs[3] = {x, w, bias};
  int32_t ni = bias != NULL ? 3 : 2;
  int record = tsr_ag_should_record(ni, inputs);
  tsr_activation_t activation = a.activation;
  // Only ReLU's derivative is cheap to take from the fused output; other
  // activations become a unary node of their own.
  int split = record && activation != TSR_ACTIVATION_NONE && activation != TSR_ACTIVATION_RELU;
  if (split)
    a.activation = TSR_ACTIVATION_NONE;
  tsr_tensor *y = NULL;
  int32_t rank = 4;
  if (alloc_run(what, TSR_OP_CONV2D, tsr_tensor_device(x), ni, inputs, 1,
                (const tsr_dtype_t[]){tsr_tensor_dtype(x)}, &rank,
                (const int64_t(*)[TSR_MAX_RANK])y_sizes, &a, &y) != TSR_OK) {
    return NULL;
  }
  if (record) {
    tsr_ag_node *node = NULL;
    tsr_status status = tsr_ag_record("conv2d", conv2d_rule, ni, inputs, y, &node);
    if (status == TSR_OK) {
      memcpy(node->attrs, &a, sizeof(a));
      node->reads_inputs = 3u;  // x and w; the bias only routes
      if (a.activation == TSR_ACTIVATION_RELU)
        status = tsr_ag_node_save(node, y);
    }
    if (status != TSR_OK) {
      tsr_tensor_release(y);
      return NULL;
    }
  }
  if (!split)
    return y;
  tsr_tensor *z = tsr_unary(y, activation_unary(activation), 0.0);
  tsr_tensor_release(y);
  return z;
}

tsr_tensor *tsr_conv2d_backward_data(tsr_tensor *dy, tsr_tensor *w, const int64_t *x_sizes,
                                     const tsr_conv2d_attrs *attrs) {
  const char *what = "conv2d_backward_data";
  if (conv_rank_check(what, "dy", dy) != TSR_OK || conv_rank_check(what, "w", w) != TSR_OK) {
    return NULL;
  }
  if (x_sizes == NULL)
    return tsr_sdk_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT, "%s: x_sizes is NULL", what);
  tsr_conv2d_attrs a;
  int64_t y_sizes[4];
  if (conv_attrs_get(what, attrs, &a) != TSR_OK ||
      conv_shape(what, x_sizes, tsr_tensor_sizes(w), &a, y_sizes) != TSR_OK) {
    return tsr_sdk_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT, "%s", tsr_error_message());
  }
  for (int d = 0; d < 4; ++d) {
    if (tsr_tensor_sizes(dy)[d] != y_sizes[d]) {
      return tsr_sdk_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT,
                          "%s: dy sizes[%d] is %lld, the convolution's output has %lld", what, d,
                          (long long)tsr_tensor_sizes(dy)[d], (long long)y_sizes[d]);
    }
  }
  a.activation = TSR_ACTIVATION_NONE;
  a.has_bias = 0;
  int64_t dx_sizes[1][TSR_MAX_RANK] = {{x_sizes[0], x_sizes[1], x_sizes[2], x_sizes[3]}};
  int32_t rank = 4;
  tsr_tensor *inputs[2] = {dy, w};
  tsr_tensor *dx = NULL;
  alloc_run(what, TSR_OP_CONV2D_BACKWARD_DATA, tsr_tensor_device(dy), 2, inputs, 1,
            (const tsr_dtype_t[]){tsr_tensor_dtype(dy)}, &rank,
            (const int64_t(*)[TSR_MAX_RANK])dx_sizes, &a, &dx);
  return dx;
}

tsr_status tsr_conv2d_backward_filter(tsr_tensor *dy, tsr_tensor *x, const int64_t *w_sizes,
                                      const tsr_conv2d_attrs *attrs, tsr_tensor **out_dw,
                                      tsr_tensor **out_dbias) {
  const char *what = "conv2d_backward_filter";
  if (out_dw != NULL)
    *out_dw = NULL;
  if (out_dbias != NULL)
    *out_dbias = NULL;
  TSR_RETURN_IF_ERROR(conv_rank_check(what, "dy", dy));
  TSR_RETURN_IF_ERROR(conv_rank_check(what, "x", x));
  if (w_sizes == NULL || out_dw == NULL) {
    return tsr_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                    w_sizes == NULL ? "w_sizes" : "out_dw");
  }
  tsr_conv2d_attrs a;
  int64_t y_sizes[4];
  if (conv_attrs_get(what, attrs, &a) != TSR_OK ||
      conv_shape(what, tsr_tensor_sizes(x), w_sizes, &a, y_sizes) != TSR_OK) {
    return tsr_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT, "%s", tsr_error_message());
  }
  for (int d = 0; d < 4; ++d) {
    if (tsr_tensor_sizes(dy)[d] != y_sizes[d]) {
      return tsr_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT,
                      "%s: dy sizes[%d] is %lld, the convolution's output has %lld", what, d,
                      (long long)tsr_tensor_sizes(dy)[d], (long long)y_sizes[d]);
    }
  }
  a.activation = TSR_ACTIVATION_NONE;
  a.has_bias = out_dbias != NULL;
  int64_t sizes[2][TSR_MAX_RANK] = {{w_sizes[0], w_sizes[1], w_sizes[2], w_sizes[3]}, {w_sizes[0]}};
  int32_t ranks[2] = {4, 1};
  tsr_dtype_t dtypes[2] = {tsr_tensor_dtype(dy), tsr_tensor_dtype(dy)};
  tsr_tensor *inputs[2] = {dy, x};
  tsr_tensor *outputs[2] = {NULL, NULL};
  tsr_status status = alloc_run(what, TSR_OP_CONV2D_BACKWARD_FILTER, tsr_tensor_device(dy), 2,
                                inputs, a.has_bias ? 2 : 1, dtypes, ranks,
                                (const int64_t(*)[TSR_MAX_RANK])sizes, &a, outputs);
  if (status != TSR_OK)
    return status;
  *out_dw = outputs[0];
  if (out_dbias != NULL)
    *out_dbias = outputs[1];
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Pooling

static tsr_status pool_attrs_get(const char *what, const tsr_pool2d_attrs *attrs,
                                 tsr_pool2d_attrs *out) {
  if (attrs == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: attrs is NULL (kind, kernel and stride have no defaults)", what);
  }
  *out = (tsr_pool2d_attrs){sizeof(*out), TSR_POOL_MAX, 0,      {1, 1}, {1, 1},
                            {0, 0},       {0, 0},       {1, 1}, 0,      0};
  TSR_RETURN_IF_ERROR(attrs_copy(what, attrs, out, sizeof(*out)));
  if (out->kind != TSR_POOL_MAX && out->kind != TSR_POOL_AVG) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: kind %d is not TSR_POOL_MAX or TSR_POOL_AVG",
                         what, out->kind);
  }
  for (int d = 0; d < 2; ++d) {
    if (out->kernel[d] < 1 || out->stride[d] < 1 || out->dilation[d] < 1 ||
        out->pad_before[d] < 0 || out->pad_after[d] < 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: along axis %d kernel %lld, stride %lld, dilation %lld (all >= 1), "
                           "pads %lld and %lld (both >= 0)",
                           what, d, (long long)out->kernel[d], (long long)out->stride[d],
                           (long long)out->dilation[d], (long long)out->pad_before[d],
                           (long long)out->pad_after[d]);
    }
  }
  return TSR_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// The output sizes of pooling x [N, C, H, W] (ops.h: the convolution formula,
// floor or ceil, and no window may start in the padding after the input).
static tsr_status pool_shape(const char *what, const int64_t *x, const tsr_pool2d_attrs *a,
                             int64_t *y) {
  y[0] = x[0];
  y[1] = x[1];
  for (int d = 0; d < 2; ++d) {
    int64_t extent = a->dilation[d] * (a->kernel[d] - 1) + 1;
    int64_t span = x[2 + d] + a->pad_before[d] + a->pad_after[d] - extent;
    int64_t out =
        a->ceil_mode ? ceil_div(span, a->stride[d]) + 1 : floor_div(span, a->stride[d]) + 1;
    if (a->ceil_mode && out > 0 && (out - 1) * a->stride[d] >= x[2 + d] + a->pad_before[d])
      --out;
    if (out < 1) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: output %s would be %lld (input %lld, pads %lld + %lld, kernel "
                           "%lld, dilation %lld, stride %lld)",
                           what, d == 0 ? "height" : "width", (long long)out, (long long)x[2 + d],
                           (long long)a->pad_before[d], (long long)a->pad_after[d],
                           (long long)a->kernel[d], (long long)a->dilation[d],
                           (long long)a->stride[d]);
    }
    y[2 + d] = out;
  }
  return TSR_OK;
}

static tsr_status pool2d_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_pool2d_attrs a;
  memcpy(&a, node->attrs, sizeof(a));
  tsr_tensor *g = tsr_contiguous(dy);
  if (g == NULL)
    return tsr_sdk_last_status();
  out_dx[0] = tsr_pool2d_backward(g, a.kind == TSR_POOL_MAX ? node->saved[0] : NULL,
                                  tsr_tensor_sizes(node->inputs[0]), &a);
  tsr_tensor_release(g);
  return out_dx[0] != NULL ? TSR_OK : tsr_sdk_last_status();
}

tsr_tensor *tsr_pool2d(tsr_tensor *x, const tsr_pool2d_attrs *attrs, tsr_tensor **out_indices) {
  const char *what = "pool2d";
  if (out_indices != NULL)
    *out_indices = NULL;
  if (conv_rank_check(what, "x", x) != TSR_OK)
    return NULL;
  tsr_pool2d_attrs a;
  int64_t sizes[2][TSR_MAX_RANK] = {{0}};
  if (pool_attrs_get(what, attrs, &a) != TSR_OK ||
      pool_shape(what, tsr_tensor_sizes(x), &a, sizes[0]) != TSR_OK) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s", tsr_error_message());
  }
  memcpy(sizes[1], sizes[0], sizeof(sizes[0]));
  int is_max = a.kind == TSR_POOL_MAX;
  tsr_dtype_t dtypes[2] = {tsr_tensor_dtype(x), TSR_INT64};
  int32_t ranks[2] = {4, 4};
  tsr_tensor *outputs[2] = {NULL, NULL};
  if (alloc_run(what, TSR_OP_POOL2D, tsr_tensor_device(x), 1, &x, is_max ? 2 : 1, dtypes, ranks,
                (const int64_t(*)[TSR_MAX_RANK])sizes, &a, outputs) != TSR_OK) {
    return NULL;
  }
  if (tsr_ag_should_record(1, &x)) {
    tsr_ag_node *node = NULL;
    tsr_status status = tsr_ag_record("pool2d", pool2d_rule, 1, &x, outputs[0], &node);
    if (status == TSR_OK) {
      memcpy(node->attrs, &a, sizeof(a));
      node->reads_inputs = 0;  // only x's sizes
      if (is_max)
        status = tsr_ag_node_save(node, outputs[1]);
    }
    if (status != TSR_OK) {
      release_all(2, outputs);
      return NULL;
    }
  }
  if (out_indices != NULL && is_max) {
    *out_indices = outputs[1];
  } else {
    tsr_tensor_release(outputs[1]);
  }
  return outputs[0];
}

tsr_tensor *tsr_pool2d_backward(tsr_tensor *dy, tsr_tensor *indices, const int64_t *x_sizes,
                                const tsr_pool2d_attrs *attrs) {
  const char *what = "pool2d_backward";
  if (conv_rank_check(what, "dy", dy) != TSR_OK)
    return NULL;
  if (x_sizes == NULL)
    return tsr_sdk_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT, "%s: x_sizes is NULL", what);
  tsr_pool2d_attrs a;
  int64_t y_sizes[4];
  if (pool_attrs_get(what, attrs, &a) != TSR_OK ||
      pool_shape(what, x_sizes, &a, y_sizes) != TSR_OK) {
    return tsr_sdk_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT, "%s", tsr_error_message());
  }
  for (int d = 0; d < 4; ++d) {
    if (tsr_tensor_sizes(dy)[d] != y_sizes[d]) {
      return tsr_sdk_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT,
                          "%s: dy sizes[%d] is %lld, pooling x gives %lld", what, d,
                          (long long)tsr_tensor_sizes(dy)[d], (long long)y_sizes[d]);
    }
  }
  int is_max = a.kind == TSR_POOL_MAX;
  if (is_max && indices == NULL) {
    return tsr_sdk_fail(tsr_tensor_device(dy), TSR_INVALID_ARGUMENT,
                        "%s: MAX pooling needs the indices", what);
  }
  int64_t dx_sizes[1][TSR_MAX_RANK] = {{x_sizes[0], x_sizes[1], x_sizes[2], x_sizes[3]}};
  int32_t rank = 4;
  tsr_tensor *inputs[2] = {dy, indices};
  tsr_tensor *dx = NULL;
  alloc_run(what, TSR_OP_POOL2D_BACKWARD, tsr_tensor_device(dy), is_max ? 2 : 1, inputs, 1,
            (const tsr_dtype_t[]){tsr_tensor_dtype(dy)}, &rank,
            (const int64_t(*)[TSR_MAX_RANK])dx_sizes, &a, &dx);
  return dx;
}

static tsr_tensor *square_pool(const char *what, tsr_tensor *x, tsr_pool_kind_t kind, int64_t k,
                               int64_t s, int64_t p) {
  if (x == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "%s: x is NULL", what);
  if (k < 1 || s < 1 || p < 0) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: kernel %lld and stride %lld must be >= 1, padding %lld >= 0", what,
                        (long long)k, (long long)s, (long long)p);
  }
  // count_include_pad as in PyTorch's AvgPool2d default.
  tsr_pool2d_attrs a = {sizeof(a), kind, 0, {k, k}, {s, s}, {p, p}, {p, p}, {1, 1}, 1, 0};
  return tsr_pool2d(x, &a, NULL);
}

tsr_tensor *tsr_max_pool2d(tsr_tensor *x, int64_t k, int64_t s, int64_t p) {
  return square_pool("max_pool2d", x, TSR_POOL_MAX, k, s, p);
}

tsr_tensor *tsr_avg_pool2d(tsr_tensor *x, int64_t k, int64_t s, int64_t p) {
  return square_pool("avg_pool2d", x, TSR_POOL_AVG, k, s, p);
}

// ---------------------------------------------------------------------------
// Softmax

static tsr_status softmax_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_tensor *g = tsr_contiguous(dy);
  if (g == NULL)
    return tsr_sdk_last_status();
  out_dx[0] = tsr_softmax_backward(g, node->saved[0], (int32_t)node->ints[0], (int)node->ints[1]);
  tsr_tensor_release(g);
  return out_dx[0] != NULL ? TSR_OK : tsr_sdk_last_status();
}

static tsr_tensor *softmax_common(const char *what, tsr_tensor *x, int32_t axis, int log) {
  if (x == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "%s: x is NULL", what);
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(x) : axis;
  if (tsr_tensor_rank(x) < 1 || a < 0 || a >= tsr_tensor_rank(x)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: axis %d for a tensor of rank %d", what, axis, tsr_tensor_rank(x));
  }
  tsr_softmax_attrs attrs = {sizeof(attrs), a, log != 0};
  tsr_tensor *y = NULL;
  if (alloc_run(what, TSR_OP_SOFTMAX, tsr_tensor_device(x), 1, &x, 1,
                (const tsr_dtype_t[]){tsr_tensor_dtype(x)}, (const int32_t[]){tsr_tensor_rank(x)},
                (const int64_t(*)[TSR_MAX_RANK])tsr_tensor_sizes(x), &attrs, &y) != TSR_OK) {
    return NULL;
  }
  if (tsr_ag_should_record(1, &x)) {
    tsr_ag_node *node = NULL;
    tsr_status status =
        tsr_ag_record(log ? "log_softmax" : "softmax", softmax_rule, 1, &x, y, &node);
    if (status == TSR_OK) {
      node->ints[0] = a;
      node->ints[1] = log != 0;
      node->reads_inputs = 0;  // the rule reads the saved output
      status = tsr_ag_node_save(node, y);
    }
    if (status != TSR_OK) {
      tsr_tensor_release(y);
      return NULL;
    }
  }
  return y;
}

tsr_tensor *tsr_softmax(tsr_tensor *x, int32_t axis) {
  return softmax_common("softmax", x, axis, 0);
}

tsr_tensor *tsr_log_softmax(tsr_tensor *x, int32_t axis) {
  return softmax_common("log_softmax", x, axis, 1);
}

tsr_tensor *tsr_softmax_backward(tsr_tensor *dy, tsr_tensor *y, int32_t axis, int log) {
  const char *what = "softmax_backward";
  if (dy == NULL || y == NULL) {
    return tsr_sdk_fail(dy ? tsr_tensor_device(dy) : NULL, TSR_INVALID_ARGUMENT, "%s: %s is NULL",
                        what, dy ? "y" : "dy");
  }
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(y) : axis;
  if (tsr_tensor_rank(y) < 1 || a < 0 || a >= tsr_tensor_rank(y)) {
    return tsr_sdk_fail(tsr_tensor_device(y), TSR_INVALID_ARGUMENT,
                        "%s: axis %d for a tensor of rank %d", what, axis, tsr_tensor_rank(y));
  }
  int same = tsr_tensor_rank(dy) == tsr_tensor_rank(y);
  for (int32_t d = 0; same && d < tsr_tensor_rank(y); ++d)
    same = tsr_tensor_sizes(dy)[d] == tsr_tensor_sizes(y)[d];
  if (!same) {
    return tsr_sdk_fail(tsr_tensor_device(y), TSR_INVALID_ARGUMENT,
                        "%s: dy (rank %d) and y (rank %d) differ in "
                        "shape",
                        what, tsr_tensor_rank(dy), tsr_tensor_rank(y));
  }
  tsr_softmax_attrs attrs = {sizeof(attrs), a, log != 0};
  tsr_tensor *inputs[2] = {dy, y};
  tsr_tensor *dx = NULL;
  alloc_run(what, TSR_OP_SOFTMAX_BACKWARD, tsr_tensor_device(y), 2, inputs, 1,
            (const tsr_dtype_t[]){tsr_tensor_dtype(y)}, (const int32_t[]){tsr_tensor_rank(y)},
            (const int64_t(*)[TSR_MAX_RANK])tsr_tensor_sizes(y), &attrs, &dx);
  return dx;
}

// ---------------------------------------------------------------------------
// Layer norm

// Checks that |t| has the normalised shape x.sizes[axis:].
static tsr_status norm_shape_check(const char *what, const char *name, const tsr_tensor *t,
                                   const tsr_tensor *x, int32_t axis) {
  int same = tsr_tensor_rank(t) == tsr_tensor_rank(x) - axis;
  for (int32_t d = 0; same && d < tsr_tensor_rank(t); ++d)
    same = tsr_tensor_sizes(t)[d] == tsr_tensor_sizes(x)[axis + d];
  if (same)
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                  "%s: %s (rank %d) must have the normalised shape x.sizes[%d:] (rank %d)", what,
                  name, tsr_tensor_rank(t), axis, tsr_tensor_rank(x) - axis);
}

static tsr_status layer_norm_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  int affine = node->num_inputs == 3;
  tsr_tensor *g = tsr_contiguous(dy);
  if (g == NULL)
    return tsr_sdk_last_status();
  tsr_tensor *dx = NULL, *dgamma = NULL, *dbeta = NULL;
  tsr_status status = tsr_layer_norm_backward(
      g, node->inputs[0], node->saved[0], node->saved[1], affine ? node->inputs[1] : NULL,
      (int32_t)node->ints[0], node->reals[0], &dx, affine ? &dgamma : NULL, affine ? &dbeta : NULL);
  tsr_tensor_release(g);
  if (status != TSR_OK)
    return status;
  tsr_tensor *grads[3] = {dx, dgamma, dbeta};
  for (int32_t i = 0; i < 3; ++i) {
    if (i < node->num_inputs && tsr_ag_needs_grad(node, i)) {
      out_dx[i] = grads[i];
    } else {
      tsr_tensor_release(grads[i]);
    }
  }
  return TSR_OK;
}

tsr_tensor *tsr_layer_norm(tsr_tensor *x, tsr_tensor *gamma, tsr_tensor *beta, int32_t axis,
                           double eps, tsr_tensor **out_mean, tsr_tensor **out_rstd) {
  const char *what = "layer_norm";
  if (out_mean != NULL)
    *out_mean = NULL;
  if (out_rstd != NULL)
    *out_rstd = NULL;
  if (x == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "%s: x is NULL", what);
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(x) : axis;
  if (tsr_tensor_rank(x) < 1 || a < 0 || a >= tsr_tensor_rank(x)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: axis %d for a tensor of rank %d", what, axis, tsr_tensor_rank(x));
  }
  if (!(eps >= 0.0))
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s: eps is %g", what, eps);
  if (!dtype_is_float(tsr_tensor_dtype(x))) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: x dtype %d is not a float dtype", what, tsr_tensor_dtype(x));
  }
  if ((gamma == NULL) != (beta == NULL)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: gamma and beta are both given or both NULL; "
                        "%s is NULL",
                        what, gamma ? "beta" : "gamma");
  }
  int affine = gamma != NULL;
  if (affine && (norm_shape_check(what, "gamma", gamma, x, a) != TSR_OK ||
                 norm_shape_check(what, "beta", beta, x, a) != TSR_OK)) {
    return NULL;
  }
  int64_t sizes[3][TSR_MAX_RANK];
  memcpy(sizes[0], tsr_tensor_sizes(x), sizeof(sizes[0]));
  for (int32_t d = 0; d < tsr_tensor_rank(x); ++d)
    sizes[1][d] = sizes[2][d] = d >= a ? 1 : tsr_tensor_sizes(x)[d];
  tsr_dtype_t sd = stat_dtype(tsr_tensor_dtype(x));
  tsr_dtype_t dtypes[3] = {tsr_tensor_dtype(x), sd, sd};
  int32_t ranks[3] = {tsr_tensor_rank(x), tsr_tensor_rank(x), tsr_tensor_rank(x)};
  tsr_layer_norm_attrs attrs = {sizeof(attrs), a, (uint32_t)affine, eps};
  tsr_tensor *inputs[3] = {x, gamma, beta};
  int32_t ni = affine ? 3 : 1;
  tsr_tensor *outputs[3];
  if (alloc_run(what, TSR_OP_LAYER_NORM, tsr_tensor_device(x), ni, inputs, 3, dtypes, ranks,
                (const int64_t(*)[TSR_MAX_RANK])sizes, &attrs, outputs) != TSR_OK) {
    return NULL;
  }
  if (tsr_ag_should_record(ni, inputs)) {
    tsr_ag_node *node = NULL;
    tsr_status status = tsr_ag_record("layer_norm", layer_norm_rule, ni, inputs, outputs[0], &node);
    if (status == TSR_OK) {
      node->ints[0] = a;
      node->reals[0] = eps;
      node->reads_inputs = 3u;  // x and gamma; beta only routes
      status = tsr_ag_node_save(node, outputs[1]);
    }
    if (status == TSR_OK)
      status = tsr_ag_node_save(node, outputs[2]);
    if (status != TSR_OK) {
      release_all(3, outputs);
      return NULL;
    }
  }
  if (out_mean != NULL) {
    *out_mean = outputs[1];
  } else {
    tsr_tensor_release(outputs[1]);
  }
  if (out_rstd != NULL) {
    *out_rstd = outputs[2];
  } else {
    tsr_tensor_release(outputs[2]);
  }
  return outputs[0];
}

tsr_status tsr_layer_norm_backward(tsr_tensor *dy, tsr_tensor *x, tsr_tensor *mean,
                                   tsr_tensor *rstd, tsr_tensor *gamma, int32_t axis, double eps,
                                   tsr_tensor **out_dx, tsr_tensor **out_dgamma,
                                   tsr_tensor **out_dbeta) {
  const char *what = "layer_norm_backward";
  if (out_dx != NULL)
    *out_dx = NULL;
  if (out_dgamma != NULL)
    *out_dgamma = NULL;
  if (out_dbeta != NULL)
    *out_dbeta = NULL;
  tsr_tensor *required[4] = {dy, x, mean, rstd};
  static const char *const names[4] = {"dy", "x", "mean", "rstd"};
  for (int i = 0; i < 4; ++i) {
    if (required[i] == NULL)
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, names[i]);
  }
  if (out_dx == NULL || (gamma != NULL && (out_dgamma == NULL || out_dbeta == NULL))) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "%s: out_dx is required, and out_dgamma and out_dbeta with gamma", what);
  }
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(x) : axis;
  if (tsr_tensor_rank(x) < 1 || a < 0 || a >= tsr_tensor_rank(x)) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "%s: axis %d for a tensor of rank %d", what, axis, tsr_tensor_rank(x));
  }
  if (gamma != NULL)
    TSR_RETURN_IF_ERROR(norm_shape_check(what, "gamma", gamma, x, a));
  int affine = gamma != NULL;
  int64_t sizes[3][TSR_MAX_RANK];
  memcpy(sizes[0], tsr_tensor_sizes(x), sizeof(sizes[0]));
  for (int32_t d = a; d < tsr_tensor_rank(x); ++d)
    sizes[1][d - a] = sizes[2][d - a] = tsr_tensor_sizes(x)[d];
  tsr_dtype_t dtypes[3] = {tsr_tensor_dtype(x),
                           affine ? tsr_tensor_dtype(gamma) : tsr_tensor_dtype(x),
                           affine ? tsr_tensor_dtype(gamma) : tsr_tensor_dtype(x)};
  int32_t ranks[3] = {tsr_tensor_rank(x), tsr_tensor_rank(x) - a, tsr_tensor_rank(x) - a};
  tsr_layer_norm_attrs attrs = {sizeof(attrs), a, (uint32_t)affine, eps};
  tsr_tensor *inputs[5] = {dy, x, mean, rstd, gamma};
  tsr_tensor *outputs[3] = {NULL, NULL, NULL};
  TSR_RETURN_IF_ERROR(alloc_run(what, TSR_OP_LAYER_NORM_BACKWARD, tsr_tensor_device(x),
                                affine ? 5 : 4, inputs, affine ? 3 : 1, dtypes, ranks,
                                (const int64_t(*)[TSR_MAX_RANK])sizes, &attrs, outputs));
  *out_dx = outputs[0];
  if (affine) {
    *out_dgamma = outputs[1];
    *out_dbeta = outputs[2];
  }
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Batch norm

// A [C] tensor filled with |value|, standing in for an omitted operand.
static tsr_tensor *channel_fill(const char *what, tsr_device *device, tsr_dtype_t dtype,
                                int64_t channels, double value) {
  tsr_tensor *t = tsr_tensor_alloc(what, device, dtype, 1, &channels);
  if (t != NULL && tsr_fill_(t, value) != TSR_OK) {
    tsr_tensor_release(t);
    return NULL;
  }
  return t;
}

static tsr_status channel_check(const char *what, const char *name, const tsr_tensor *t,
                                const tsr_tensor *x, tsr_dtype_t dtype) {
  if (tsr_tensor_rank(t) == 1 && tsr_tensor_sizes(t)[0] == tsr_tensor_sizes(x)[1] &&
      tsr_tensor_dtype(t) == dtype)
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                  "%s: %s must be [C] = [%lld] of dtype %d; it has rank %d, %lld elements, dtype "
                  "%d",
                  what, name, (long long)tsr_tensor_sizes(x)[1], dtype, tsr_tensor_rank(t),
                  (long long)tsr_tensor_numel(t), tsr_tensor_dtype(t));
}

static tsr_status batch_norm_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_tensor *g = tsr_contiguous(dy);
  if (g == NULL)
    return tsr_sdk_last_status();
  tsr_tensor *grads[3] = {NULL, NULL, NULL};
  tsr_status status =
      tsr_batch_norm_backward(g, node->inputs[0], node->inputs[1], node->saved[0], node->saved[1],
                              (int)node->ints[0], node->reals[0], &grads[0], &grads[1], &grads[2]);
  tsr_tensor_release(g);
  if (status != TSR_OK)
    return status;
  for (int32_t i = 0; i < 3; ++i) {
    if (tsr_ag_needs_grad(node, i)) {
      out_dx[i] = grads[i];
    } else {
      tsr_tensor_release(grads[i]);
    }
  }
  return TSR_OK;
}

tsr_tensor *tsr_batch_norm(tsr_tensor *x, tsr_tensor *gamma, tsr_tensor *beta,
                           tsr_tensor *running_mean, tsr_tensor *running_var, int training,
                           double momentum, double eps, tsr_tensor **out_save_mean,
                           tsr_tensor **out_save_invstd) {
  const char *what = "batch_norm";
  if (out_save_mean != NULL)
    *out_save_mean = NULL;
  if (out_save_invstd != NULL)
    *out_save_invstd = NULL;
  if (x == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "%s: x is NULL", what);
  if (tsr_tensor_rank(x) < 2) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: x has rank %d, expected [N, C, ...]", what, tsr_tensor_rank(x));
  }
  if (!dtype_is_float(tsr_tensor_dtype(x))) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: x dtype %d is not a float dtype", what, tsr_tensor_dtype(x));
  }
  if (!(eps >= 0.0) || !(momentum >= 0.0 && momentum <= 1.0)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: eps %g must be >= 0 and momentum %g in [0, 1]", what, eps, momentum);
  }
  if (!training && (running_mean == NULL || running_var == NULL)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: evaluation normalises with the running statistics; %s is NULL", what,
                        running_mean == NULL ? "running_mean" : "running_var");
  }
  tsr_dtype_t sd = stat_dtype(tsr_tensor_dtype(x));
  int64_t channels = tsr_tensor_sizes(x)[1];
  tsr_tensor *given[4] = {gamma, beta, running_mean, running_var};
  static const char *const names[4] = {"gamma", "beta", "running_mean", "running_var"};
  for (int i = 0; i < 4; ++i) {
    if (given[i] != NULL && channel_check(what, names[i], given[i], x, sd) != TSR_OK)
      return NULL;
  }
  if (training) {
    for (int i = 2; i < 4; ++i) {
      if (given[i] != NULL &&
          tsr_ag_check_inplace("batch_norm (running statistics)", given[i]) != TSR_OK) {
        return NULL;
      }
    }
  }
  // Omitted operands: gamma 1, beta 0, and in training running statistics
  // that absorb the update and are dropped.
  static const double fills[4] = {1.0, 0.0, 0.0, 1.0};
  tsr_tensor *ops[4] = {NULL, NULL, NULL, NULL};
  tsr_tensor *outputs[3] = {NULL, NULL, NULL};
  tsr_tensor *y = NULL;
  for (int i = 0; i < 4; ++i) {
    ops[i] = given[i] != NULL ? tsr_tensor_retain(given[i])
                              : channel_fill(what, tsr_tensor_device(x), sd, channels, fills[i]);
    if (ops[i] == NULL)
      goto done;
  }
  int64_t sizes[3][TSR_MAX_RANK];
  memcpy(sizes[0], tsr_tensor_sizes(x), sizeof(sizes[0]));
  sizes[1][0] = sizes[2][0] = channels;
  tsr_dtype_t dtypes[3] = {tsr_tensor_dtype(x), sd, sd};
  int32_t ranks[3] = {tsr_tensor_rank(x), 1, 1};
  for (int i = 0; i < 3; ++i) {
    outputs[i] = tsr_tensor_alloc(what, tsr_tensor_device(x), dtypes[i], ranks[i], sizes[i]);
    if (outputs[i] == NULL)
      goto done;
  }
  // The running outputs alias the running inputs (allowed by the op): the
  // update is in place in training, and a copy onto itself in evaluation.
  tsr_tensor *inputs[5] = {x, ops[0], ops[1], ops[2], ops[3]};
  tsr_tensor *all_outputs[5] = {outputs[0], outputs[1], outputs[2], ops[2], ops[3]};
  tsr_batch_norm_attrs attrs = {sizeof(attrs), eps, momentum, training != 0, 0};
  if (tsr_dispatch(TSR_OP_BATCH_NORM, 5, inputs, 5, all_outputs, &attrs) != TSR_OK)
    goto done;
  // Running statistics are state, not differentiable inputs.
  if (tsr_ag_should_record(3, inputs)) {
    tsr_ag_node *node = NULL;
    tsr_status status = tsr_ag_record("batch_norm", batch_norm_rule, 3, inputs, outputs[0], &node);
    if (status == TSR_OK) {
      node->ints[0] = training != 0;
      node->reals[0] = eps;
      node->reads_inputs = 3u;  // x and gamma; beta only routes
      status = tsr_ag_node_save(node, outputs[1]);
    }
    if (status == TSR_OK)
      status = tsr_ag_node_save(node, outputs[2]);
    if (status != TSR_OK)
      goto done;
  }
  y = outputs[0];
  outputs[0] = NULL;
  if (out_save_mean != NULL) {
    *out_save_mean = outputs[1];
    outputs[1] = NULL;
  }
  if (out_save_invstd != NULL) {
    *out_save_invstd = outputs[2];
    outputs[2] = NULL;
  }
done:
  release_all(3, outputs);
  for (int i = 0; i < 4; ++i) {
    if (given[i] != NULL) {
      tsr_tensor_unref(ops[i]);  // retained above, not created
    } else {
      tsr_tensor_release(ops[i]);
    }
  }
  return y;
}

tsr_status tsr_batch_norm_backward(tsr_tensor *dy, tsr_tensor *x, tsr_tensor *gamma,
                                   tsr_tensor *save_mean, tsr_tensor *save_invstd, int training,
                                   double eps, tsr_tensor **out_dx, tsr_tensor **out_dgamma,
                                   tsr_tensor **out_dbeta) {
  const char *what = "batch_norm_backward";
  if (out_dx != NULL)
    *out_dx = NULL;
  if (out_dgamma != NULL)
    *out_dgamma = NULL;
  if (out_dbeta != NULL)
    *out_dbeta = NULL;
  tsr_tensor *required[4] = {dy, x, save_mean, save_invstd};
  static const char *const names[4] = {"dy", "x", "save_mean", "save_invstd"};
  for (int i = 0; i < 4; ++i) {
    if (required[i] == NULL)
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, names[i]);
  }
  if (out_dx == NULL)
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s: out_dx is NULL", what);
  if (tsr_tensor_rank(x) < 2) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "%s: x has rank %d, expected [N, C, ...]", what, tsr_tensor_rank(x));
  }
  tsr_dtype_t sd = stat_dtype(tsr_tensor_dtype(x));
  int64_t channels = tsr_tensor_sizes(x)[1];
  tsr_tensor *g = gamma != NULL ? tsr_tensor_retain(gamma)
                                : channel_fill(what, tsr_tensor_device(x), sd, channels, 1.0);
  if (g == NULL)
    return tsr_sdk_last_status();
  int64_t sizes[3][TSR_MAX_RANK];
  memcpy(sizes[0], tsr_tensor_sizes(x), sizeof(sizes[0]));
  sizes[1][0] = sizes[2][0] = channels;
  tsr_dtype_t dtypes[3] = {tsr_tensor_dtype(x), sd, sd};
  int32_t ranks[3] = {tsr_tensor_rank(x), 1, 1};
  tsr_batch_norm_attrs attrs = {sizeof(attrs), eps, 0.0, training != 0, 0};
  tsr_tensor *inputs[5] = {dy, x, g, save_mean, save_invstd};
  tsr_tensor *outputs[3] = {NULL, NULL, NULL};
  tsr_status status =
      alloc_run(what, TSR_OP_BATCH_NORM_BACKWARD, tsr_tensor_device(x), 5, inputs, 3, dtypes, ranks,
                (const int64_t(*)[TSR_MAX_RANK])sizes, &attrs, outputs);
  if (gamma != NULL) {
    tsr_tensor_unref(g);  // retained above, not created
  } else {
    tsr_tensor_release(g);
  }
  if (status != TSR_OK)
    return status;
  *out_dx = outputs[0];
  tsr_tensor **outs[2] = {out_dgamma, out_dbeta};
  for (int i = 0; i < 2; ++i) {
    if (outs[i] != NULL) {
      *outs[i] = outputs[1 + i];
    } else {
      tsr_tensor_release(outputs[1 + i]);
    }
  }
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Cross-entropy

static tsr_status ce_attrs_get(const char *what, const tsr_cross_entropy_attrs *attrs,
                               tsr_cross_entropy_attrs *out) {
  *out = (tsr_cross_entropy_attrs){sizeof(*out), TSR_REDUCTION_MEAN, 0, -100, 0.0};
  TSR_RETURN_IF_ERROR(attrs_copy(what, attrs, out, sizeof(*out)));
  if (out->reduction < 0 || out->reduction >= TSR_REDUCTION_COUNT) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: reduction %d is not a tsr_reduction_t", what,
                         out->reduction);
  }
  if (!(out->label_smoothing >= 0.0 && out->label_smoothing <= 1.0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: label_smoothing %g is outside [0, 1]", what,
                         out->label_smoothing);
  }
  return TSR_OK;
}

static tsr_status ce_operands_check(const char *what, const tsr_tensor *logits,
                                    const tsr_tensor *target) {
  if (logits == NULL || target == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                         logits ? "target" : "logits");
  }
  if (tsr_tensor_rank(logits) != 2 || !dtype_is_float(tsr_tensor_dtype(logits))) {
    return tsr_fail(tsr_tensor_device(logits), TSR_INVALID_ARGUMENT,
                    "%s: logits must be float [N, C]; it has rank %d and dtype %d", what,
                    tsr_tensor_rank(logits), tsr_tensor_dtype(logits));
  }
  if (tsr_tensor_rank(target) != 1 || tsr_tensor_sizes(target)[0] != tsr_tensor_sizes(logits)[0] ||
      tsr_tensor_dtype(target) != TSR_INT64) {
    return tsr_fail(tsr_tensor_device(logits), TSR_INVALID_ARGUMENT,
                    "%s: target must be int64 [N] = [%lld]; it has rank %d, %lld elements, dtype "
                    "%d",
                    what, (long long)tsr_tensor_sizes(logits)[0], tsr_tensor_rank(target),
                    (long long)tsr_tensor_numel(target), tsr_tensor_dtype(target));
  }
  return TSR_OK;
}

static tsr_status cross_entropy_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_cross_entropy_attrs attrs;
  memcpy(&attrs, node->attrs, sizeof(attrs));
  tsr_tensor *g = tsr_contiguous(dy);
  if (g == NULL)
    return tsr_sdk_last_status();
  out_dx[0] =
      tsr_cross_entropy_backward(g, node->inputs[0], node->inputs[1], node->saved[0], &attrs);
  tsr_tensor_release(g);
  return out_dx[0] != NULL ? TSR_OK : tsr_sdk_last_status();
}

tsr_tensor *tsr_cross_entropy(tsr_tensor *logits, tsr_tensor *target,
                              const tsr_cross_entropy_attrs *attrs, tsr_tensor **out_lse) {
  const char *what = "cross_entropy";
  if (out_lse != NULL)
    *out_lse = NULL;
  if (ce_operands_check(what, logits, target) != TSR_OK)
    return NULL;
  tsr_cross_entropy_attrs a;
  if (ce_attrs_get(what, attrs, &a) != TSR_OK) {
    return tsr_sdk_fail(tsr_tensor_device(logits), TSR_INVALID_ARGUMENT, "%s", tsr_error_message());
  }
  int64_t sizes[2][TSR_MAX_RANK] = {{tsr_tensor_sizes(logits)[0]}, {tsr_tensor_sizes(logits)[0]}};
  tsr_dtype_t dtypes[2] = {tsr_tensor_dtype(logits), TSR_FLOAT32};
  int32_t ranks[2] = {a.reduction == TSR_REDUCTION_NONE ? 1 : 0, 1};
  tsr_tensor *inputs[2] = {logits, target};
  tsr_tensor *outputs[2];
  if (alloc_run(what, TSR_OP_CROSS_ENTROPY, tsr_tensor_device(logits), 2, inputs, 2, dtypes, ranks,
                (const int64_t(*)[TSR_MAX_RANK])sizes, &a, outputs) != TSR_OK) {
    return NULL;
  }
  if (tsr_ag_should_record(2, inputs)) {
    tsr_ag_node *node = NULL;
    tsr_status status =
        tsr_ag_record("cross_entropy", cross_entropy_rule, 2, inputs, outputs[0], &node);
    if (status == TSR_OK) {
      memcpy(node->attrs, &a, sizeof(a));
      status = tsr_ag_node_save(node, outputs[1]);
    }
    if (status != TSR_OK) {
      release_all(2, outputs);
      return NULL;
    }
  }
  if (out_lse != NULL) {
    *out_lse = outputs[1];
  } else {
    tsr_tensor_release(outputs[1]);
  }
  return outputs[0];
}

tsr_tensor *tsr_cross_entropy_backward(tsr_tensor *dloss, tsr_tensor *logits, tsr_tensor *target,
                                       tsr_tensor *lse, const tsr_cross_entropy_attrs *attrs) {
  const char *what = "cross_entropy_backward";
  if (ce_operands_check(what, logits, target) != TSR_OK)
    return NULL;
  if (dloss == NULL || lse == NULL) {
    return tsr_sdk_fail(tsr_tensor_device(logits), TSR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                        dloss ? "lse" : "dloss");
  }
  tsr_cross_entropy_attrs a;
  if (ce_attrs_get(what, attrs, &a) != TSR_OK) {
    return tsr_sdk_fail(tsr_tensor_device(logits), TSR_INVALID_ARGUMENT, "%s", tsr_error_message());
  }
  tsr_tensor *inputs[4] = {dloss, logits, target, lse};
  tsr_tensor *dlogits = NULL;
  alloc_run(what, TSR_OP_CROSS_ENTROPY_BACKWARD, tsr_tensor_device(logits), 4, inputs, 1,
            (const tsr_dtype_t[]){tsr_tensor_dtype(logits)},
            (const int32_t[]){tsr_tensor_rank(logits)},
            (const int64_t(*)[TSR_MAX_RANK])tsr_tensor_sizes(logits), &a, &dlogits);
  return dlogits;
}

// ---------------------------------------------------------------------------
// Optimizer updates. Not recorded and not refused for parameters that
// require grad: updating them is their purpose, and nothing reads the old
// values through the tape afterwards.

tsr_status tsr_sgd_update_(tsr_tensor *param, tsr_tensor *grad, tsr_tensor *momentum_buf,
                           const tsr_sgd_attrs *attrs) {
  const char *what = "sgd_update_";
  if (param == NULL || grad == NULL || attrs == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                         param == NULL  ? "param"
                         : grad == NULL ? "grad"
                                        : "attrs");
  }
  if (attrs->momentum != 0.0 && momentum_buf == NULL) {
    return tsr_fail(tsr_tensor_device(param), TSR_INVALID_ARGUMENT,
                    "%s: momentum is %g and momentum_buf is NULL", what, attrs->momentum);
  }
  tsr_tensor *buf = momentum_buf;
  tsr_tensor *empty = NULL;
  if (buf == NULL) {
    // The op ignores momentum_buf without momentum; an empty descriptor stands
    // in for it: a [0] handle on param's storage, which allocates nothing and
    // overlaps nothing. (The core refuses a NULL operand.)
    int previous = tsr_scope_suspend();
    empty = tsr_tensor_view_create(param, 1, (const int64_t[]){0}, (const int64_t[]){1},
                                   tsr_tensor_offset(param));
    tsr_scope_resume(previous);
    if (empty == NULL) {
      return tsr_fail(tsr_tensor_device(param), TSR_OUT_OF_MEMORY,
                      "%s: no host memory for a handle", what);
    }
    buf = empty;
  }
  tsr_tensor *outputs[2] = {param, buf};
  tsr_status status = tsr_dispatch(TSR_OP_SGD_UPDATE, 1, &grad, 2, outputs, attrs);
  tsr_tensor_release(empty);
  return status;
}

tsr_status tsr_adam_update_(tsr_tensor *param, tsr_tensor *grad, tsr_tensor *exp_avg,
                            tsr_tensor *exp_avg_sq, const tsr_adam_attrs *attrs) {
  const char *what = "adam_update_";
  const tsr_tensor *required[4] = {param, grad, exp_avg, exp_avg_sq};
  static const char *const names[4] = {"param", "grad", "exp_avg", "exp_avg_sq"};
  for (int i = 0; i < 4; ++i) {
    if (required[i] == NULL)
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, names[i]);
  }
  if (attrs == NULL)
    return tsr_fail(tsr_tensor_device(param), TSR_INVALID_ARGUMENT, "%s: attrs is NULL", what);
  if (attrs->struct_size >= offsetof(tsr_adam_attrs, step) + sizeof(int64_t) && attrs->step < 1) {
    return tsr_fail(tsr_tensor_device(param), TSR_INVALID_ARGUMENT,
                    "%s: step is %lld, it counts from 1", what, (long long)attrs->step);
  }
  tsr_tensor *outputs[3] = {param, exp_avg, exp_avg_sq};
  return tsr_dispatch(TSR_OP_ADAM_UPDATE, 1, &grad, 3, outputs, attrs);
}
