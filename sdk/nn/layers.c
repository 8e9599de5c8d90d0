// The layers of tessera/nn.h. Each forward is a composition of op functions,
// which record their own tape nodes; no layer records anything itself.
//
// Constructors run with scope adoption suspended: the parameters and buffers
// they make belong to the module, not to a scope the caller has open.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tessera/core_layer.h"
#include "module_internal.h"
#include "tessera/tessera.h"

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

// "[2, 3, 4]" into |buf|.
static const char *sizes_str(int32_t rank, const int64_t *sizes, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int32_t d = 0; d < rank && n < cap; ++d) {
    n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)sizes[d]);
  }
  if (n < cap)
    snprintf(buf + n, cap - n, "]");
  return buf;
}

static tsr_tensor *forward_fail(const tsr_module *m, const tsr_tensor *x, const char *detail) {
  char shape[160];
  tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s: x %s %s: %s", m->kind,
           sizes_str(tsr_tensor_rank(x), tsr_tensor_sizes(x), shape, sizeof(shape)),
           tsr_dtype_name(tsr_tensor_dtype(x)), detail);
  return NULL;
}

// Refuses x whose dtype is not the parameters' (no silent promotion, as PyTorch).
static int dtype_matches(const tsr_module *m, const tsr_tensor *x) {
  if (m->num_params == 0 || tsr_tensor_dtype(x) == tsr_tensor_dtype(m->params[0].tensor))
    return 1;
  char detail[96];
  snprintf(detail, sizeof(detail), "the parameters are %s",
           tsr_dtype_name(tsr_tensor_dtype(m->params[0].tensor)));
  forward_fail(m, x, detail);
  return 0;
}

// An identity result that is a new handle (so that a scope the caller has
// open releases it) and keeps x's place on the tape.
static tsr_tensor *identity(tsr_tensor *x) {
  return tsr_expand(x, tsr_tensor_rank(x), tsr_tensor_sizes(x));
}

// --- parameters -------------------------------------------------------------------

// How param_make fills a new tensor (|a|, |b|: the value, range or mean and std).
typedef enum { FILL_VALUE, FILL_UNIFORM, FILL_NORMAL, FILL_KAIMING_LINEAR } fill_kind;

// Adds a parameter (a leaf that requires grad) or a buffer of |dtype| called
// |name|, filled as |kind| says.
static tsr_status param_make(tsr_module *m, const char *name, int32_t rank, const int64_t *sizes,
                             fill_kind kind, double a, double b, int is_buffer, tsr_dtype_t dtype) {
  tsr_tensor *t = tsr_tensor_empty(m->device, dtype, rank, sizes);
  if (t == NULL)
    return tsr_error_prefix(m->kind);
  tsr_status status = TSR_OK;
  switch (kind) {
    case FILL_VALUE:
      status = tsr_fill_(t, a);
      break;
    case FILL_UNIFORM:
      status = tsr_init_uniform_(t, a, b);
      break;
    case FILL_NORMAL:
      status = tsr_init_normal_(t, a, b);
      break;
    case FILL_KAIMING_LINEAR:
      // PyTorch's reset_parameters: kaiming_uniform_(a = sqrt(5)), which is
      // U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
      status = tsr_init_kaiming_uniform_(t, sqrt(5.0), TSR_FAN_IN, TSR_NONLINEARITY_LEAKY_RELU);
      break;
  }
  if (status == TSR_OK && !is_buffer)
    status = tsr_tensor_requires_grad_set(t, 1);
  if (status != TSR_OK) {
    tsr_tensor_release(t);
    return tsr_error_prefix(m->kind);
  }
  return is_buffer ? tsr_module_buffer_add(m, name, t) : tsr_module_param_add(m, name, t);
}

static tsr_status param_add(tsr_module *m, const char *name, int32_t rank, const int64_t *sizes,
                            fill_kind kind, double a, double b) {
  return param_make(m, name, rank, sizes, kind, a, b, 0, TSR_FLOAT32);
}

static tsr_status buffer_add(tsr_module *m, const char *name, int32_t rank, const int64_t *sizes,
                             double value, tsr_dtype_t dtype) {
  return param_make(m, name, rank, sizes, FILL_VALUE, value, 0.0, 1, dtype);
}

static tsr_tensor *param(const tsr_module *m, int32_t i) {
  return m->params[i].tensor;
}

// Ends a constructor: resumes scope adoption and frees the module on failure.
static tsr_module *finish(tsr_module *m, tsr_status status, int scope_prev) {
  tsr_scope_resume(scope_prev);
  if (status != TSR_OK) {
    tsr_module_destroy(m);
    return NULL;
  }
  return m;
}

static tsr_status device_check(const char *kind, const tsr_device *device) {
  if (device == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: device is NULL", kind);
  return TSR_OK;
}

// --- Linear: ints = {in, out, bias} ------------------------------------------------

// Linear with |activation| fused into the matmul (Sequential's Linear+ReLU).
static tsr_tensor *linear_run(tsr_module *m, tsr_tensor *x, tsr_activation_t activation) {
  int64_t in = m->ints[0];
  if (tsr_tensor_rank(x) < 1 || tsr_tensor_sizes(x)[tsr_tensor_rank(x) - 1] != in) {
    char detail[96];
    snprintf(detail, sizeof(detail), "the last dim must be in_features = %lld", (long long)in);
    return forward_fail(m, x, detail);
  }
  if (!dtype_matches(m, x))
    return NULL;
  tsr_tensor *wt = tsr_transpose(param(m, 0), 0, 1);
  if (wt == NULL)
    return NULL;
  // The dispatcher broadcasts a [out] bias to the output's rank.
  tsr_tensor *y = tsr_matmul_ex(x, wt, m->ints[2] ? param(m, 1) : NULL, activation);
  tsr_tensor_release(wt);
  return y;
}

static tsr_tensor *linear_forward(tsr_module *m, tsr_tensor *x) {
  return linear_run(m, x, TSR_ACTIVATION_NONE);
}

static const tsr_module_ops kLinearOps = {linear_forward, NULL};

tsr_module *tsr_nn_linear(tsr_device *device, int64_t in_features, int64_t out_features, int bias) {
  if (device_check("Linear", device) != TSR_OK)
    return NULL;
  if (in_features < 1 || out_features < 1) {
    tsr_fail(device, TSR_INVALID_ARGUMENT,
             "Linear: in_features %lld and out_features %lld must both be >= 1",
             (long long)in_features, (long long)out_features);
    return NULL;
  }
  int prev = tsr_scope_suspend();
  tsr_module *m = tsr_module_create("Linear", &kLinearOps, device);
  if (m == NULL)
    return finish(NULL, TSR_OUT_OF_MEMORY, prev);
  m->ints[0] = in_features;
  m->ints[1] = out_features;
  m->ints[2] = bias != 0;
  double bound = 1.0 / sqrt((double)in_features);
  tsr_status status =
      param_add(m, "weight", 2, (int64_t[]){out_features, in_features}, FILL_KAIMING_LINEAR, 0, 0);
  if (status == TSR_OK && bias) {
    status = param_add(m, "bias", 1, (int64_t[]){out_features}, FILL_UNIFORM, -bound, bound);
  }
  return finish(m, status, prev);
}

// --- Conv2d: ints = {in, out, kh, kw, stride[2], padding[2], dilation[2], groups, bias} -----

void tsr_conv2d_options_init(tsr_conv2d_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->stride[0] = options->stride[1] = 1;
  options->dilation[0] = options->dilation[1] = 1;
  options->groups = 1;
  options->bias = 1;
}

// Conv2d with |activation| fused into the convolution (Sequential's
// Conv2d+ReLU).
static tsr_tensor *conv2d_run(tsr_module *m, tsr_tensor *x, tsr_activation_t activation) {
  if (tsr_tensor_rank(x) != 4 || tsr_tensor_sizes(x)[1] != m->ints[0]) {
    char detail[96];
    snprintf(detail, sizeof(detail), "expected [N, %lld, H, W]", (long long)m->ints[0]);
    return forward_fail(m, x, detail);
  }
  if (!dtype_matches(m, x))
    return NULL;
  tsr_conv2d_attrs attrs;
  memset(&attrs, 0, sizeof(attrs));
  attrs.struct_size = sizeof(attrs);
  for (int i = 0; i < 2; ++i) {
    attrs.stride[i] = m->ints[4 + i];
    attrs.pad_before[i] = attrs.pad_after[i] = m->ints[6 + i];
    attrs.dilation[i] = m->ints[8 + i];
  }
  attrs.groups = m->ints[10];
  attrs.activation = activation;
  return tsr_conv2d(x, param(m, 0), m->ints[11] ? param(m, 1) : NULL, &attrs);
}

static tsr_tensor *conv2d_forward(tsr_module *m, tsr_tensor *x) {
  return conv2d_run(m, x, TSR_ACTIVATION_NONE);
}

static const tsr_module_ops kConv2dOps = {conv2d_forward, NULL};

tsr_module *tsr_nn_conv2d(tsr_device *device, int64_t in_channels, int64_t out_channels,
                          int64_t kernel_h, int64_t kernel_w, const tsr_conv2d_options *options) {
  if (device_check("Conv2d", device) != TSR_OK)
    return NULL;
  tsr_conv2d_options o;
  tsr_conv2d_options_init(&o);
  if (options != NULL) {
    if (options->struct_size < sizeof(*options)) {
      tsr_fail(device, TSR_INVALID_ARGUMENT,
               "Conv2d: options->struct_size is %zu, expected %zu (tsr_conv2d_options_init)",
               options->struct_size, sizeof(*options));
      return NULL;
    }
    o = *options;
  }
  const char *bad = NULL;
  if (in_channels < 1 || out_channels < 1)
    bad = "in_channels and out_channels must be >= 1";
  else if (kernel_h < 1 || kernel_w < 1)
    bad = "the kernel sizes must be >= 1";
  else if (o.stride[0] < 1 || o.stride[1] < 1)
    bad = "the strides must be >= 1";
  else if (o.padding[0] < 0 || o.padding[1] < 0)
    bad = "the paddings must be >= 0";
  else if (o.dilation[0] < 1 || o.dilation[1] < 1)
    bad = "the dilations must be >= 1";
  else if (o.groups < 1 || in_channels % o.groups || out_channels % o.groups) {
    bad = "groups must be >= 1 and divide in_channels and out_channels";
  }
  if (bad != NULL) {
    tsr_fail(device, TSR_INVALID_ARGUMENT,
             "Conv2d: in %lld, out %lld, kernel %lldx%lld, stride %lldx%lld, padding %lldx%lld, "
             "dilation %lldx%lld, groups %lld: %s",
             (long long)in_channels, (long long)out_channels, (long long)kernel_h,
             (long long)kernel_w, (long long)o.stride[0], (long long)o.stride[1],
             (long long)o.padding[0], (long long)o.padding[1], (long long)o.dilation[0],
             (long long)o.dilation[1], (long long)o.groups, bad);
    return NULL;
  }
  int prev = tsr_scope_suspend();
  tsr_module *m = tsr_module_create("Conv2d", &kConv2dOps, device);
  if (m == NULL)
    return finish(NULL, TSR_OUT_OF_MEMORY, prev);
  int64_t init[12] = {in_channels,   out_channels,  kernel_h,     kernel_w,
                      o.stride[0],   o.stride[1],   o.padding[0], o.padding[1],
                      o.dilation[0], o.dilation[1], o.groups,     o.bias != 0};
  memcpy(m->ints, init, sizeof(init));
  int64_t fan_in = in_channels / o.groups * kernel_h * kernel_w;
  double bound = 1.0 / sqrt((double)fan_in);
  tsr_status status = param_add(
      m, "weight", 4, (int64_t[]){out_channels, in_channels / o.groups, kernel_h, kernel_w},
      FILL_KAIMING_LINEAR, 0, 0);
  if (status == TSR_OK && o.bias) {
    status = param_add(m, "bias", 1, (int64_t[]){out_channels}, FILL_UNIFORM, -bound, bound);
  }
  return finish(m, status, prev);
}

// --- BatchNorm2d: ints = {C}, reals = {eps, momentum}, extra = int64 1 -------------

static tsr_tensor *batch_norm_forward(tsr_module *m, tsr_tensor *x) {
  int64_t c = m->ints[0];
  if (tsr_tensor_rank(x) != 4 || tsr_tensor_sizes(x)[1] != c) {
    char detail[96];
    snprintf(detail, sizeof(detail), "expected [N, %lld, H, W]", (long long)c);
    return forward_fail(m, x, detail);
  }
  if (!dtype_matches(m, x))
    return NULL;
  if (m->training &&
      tsr_tensor_sizes(x)[0] * tsr_tensor_sizes(x)[2] * tsr_tensor_sizes(x)[3] <= 1) {
    return forward_fail(m, x, "training needs more than one value per channel");
  }
  tsr_tensor *y =
      tsr_batch_norm(x, param(m, 0), param(m, 1), m->buffers[0].tensor, m->buffers[1].tensor,
                     m->training, m->reals[1], m->reals[0], NULL, NULL);
  if (y != NULL && m->training) {
    tsr_tensor *tracked = m->buffers[2].tensor;
    if (tsr_binary_out(tracked, tracked, m->extra, TSR_BINARY_ADD, 1.0) != TSR_OK) {
      tsr_tensor_release(y);
      return NULL;
    }
  }
  return y;
}

static const tsr_module_ops kBatchNormOps = {batch_norm_forward, NULL};

tsr_module *tsr_nn_batch_norm2d(tsr_device *device, int64_t num_features, double eps,
                                double momentum) {
  if (device_check("BatchNorm2d", device) != TSR_OK)
    return NULL;
  if (num_features < 1 || !(eps >= 0.0) || !isfinite(eps) ||
      !(momentum >= 0.0 && momentum <= 1.0)) {
    tsr_fail(device, TSR_INVALID_ARGUMENT,
             "BatchNorm2d: num_features %lld (>= 1), eps %g (finite, >= 0), momentum %g (in [0, "
             "1]): out of range",
             (long long)num_features, eps, momentum);
    return NULL;
  }
  int prev = tsr_scope_suspend();
  tsr_module *m = tsr_module_create("BatchNorm2d", &kBatchNormOps, device);
  if (m == NULL)
    return finish(NULL, TSR_OUT_OF_MEMORY, prev);
  m->ints[0] = num_features;
  m->reals[0] = eps;
  m->reals[1] = momentum;
  const int64_t c[1] = {num_features};
  tsr_status status = param_add(m, "weight", 1, c, FILL_VALUE, 1.0, 0);
  if (status == TSR_OK)
    status = param_add(m, "bias", 1, c, FILL_VALUE, 0.0, 0);
  if (status == TSR_OK)
    status = buffer_add(m, "running_mean", 1, c, 0.0, TSR_FLOAT32);
  if (status == TSR_OK)
    status = buffer_add(m, "running_var", 1, c, 1.0, TSR_FLOAT32);
  if (status == TSR_OK)
    status = buffer_add(m, "num_batches_tracked", 0, NULL, 0.0, TSR_INT64);
  if (status == TSR_OK) {
    m->extra = tsr_tensor_full(device, TSR_INT64, 0, NULL, 1.0);
    if (m->extra == NULL)
      status = tsr_error_prefix("BatchNorm2d");
  }
  return finish(m, status, prev);
}

// --- LayerNorm: ints = {rank, affine, shape...}, reals = {eps} --------------------

static tsr_tensor *layer_norm_forward(tsr_module *m, tsr_tensor *x) {
  int32_t rank = (int32_t)m->ints[0];
  int ok = tsr_tensor_rank(x) >= rank;
  for (int32_t d = 0; ok && d < rank; ++d)
    ok = tsr_tensor_sizes(x)[tsr_tensor_rank(x) - rank + d] == m->ints[2 + d];
  if (!ok) {
    char shape[160], detail[200];
    snprintf(detail, sizeof(detail), "the last dims must be normalized_shape %s",
             sizes_str(rank, &m->ints[2], shape, sizeof(shape)));
    return forward_fail(m, x, detail);
  }
  if (!dtype_matches(m, x))
    return NULL;
  tsr_tensor *gamma = m->ints[1] ? param(m, 0) : NULL;
  tsr_tensor *beta = m->ints[1] ? param(m, 1) : NULL;
  return tsr_layer_norm(x, gamma, beta, tsr_tensor_rank(x) - rank, m->reals[0], NULL, NULL);
}

static const tsr_module_ops kLayerNormOps = {layer_norm_forward, NULL};

tsr_module *tsr_nn_layer_norm(tsr_device *device, int32_t rank, const int64_t *normalized_shape,
                              double eps, int affine) {
  if (affine && device_check("LayerNorm", device) != TSR_OK)
    return NULL;
  if (rank < 1 || rank > TSR_MAX_RANK || normalized_shape == NULL) {
    tsr_fail(device, TSR_INVALID_ARGUMENT,
             "LayerNorm: rank %d (must be 1..%d) with normalized_shape %s", rank, TSR_MAX_RANK,
             normalized_shape ? "given" : "NULL");
    return NULL;
  }
  for (int32_t d = 0; d < rank; ++d) {
    if (normalized_shape[d] < 1) {
      tsr_fail(device, TSR_INVALID_ARGUMENT, "LayerNorm: normalized_shape[%d] is %lld (< 1)", d,
               (long long)normalized_shape[d]);
      return NULL;
    }
  }
  if (!(eps >= 0.0) || !isfinite(eps)) {
    tsr_fail(device, TSR_INVALID_ARGUMENT, "LayerNorm: eps %g must be finite and >= 0", eps);
    return NULL;
  }
  int prev = tsr_scope_suspend();
  tsr_module *m = tsr_module_create("LayerNorm", &kLayerNormOps, device);
  if (m == NULL)
    return finish(NULL, TSR_OUT_OF_MEMORY, prev);
  m->ints[0] = rank;
  m->ints[1] = affine != 0;
  memcpy(&m->ints[2], normalized_shape, sizeof(int64_t) * (size_t)rank);
  m->reals[0] = eps;
  tsr_status status = TSR_OK;
  if (affine) {
    status = param_add(m, "weight", rank, normalized_shape, FILL_VALUE, 1.0, 0);
    if (status == TSR_OK)
      status = param_add(m, "bias", rank, normalized_shape, FILL_VALUE, 0, 0);
  }
  return finish(m, status, prev);
}

// --- Dropout: reals = {p} ---------------------------------------------------------

static tsr_tensor *dropout_forward(tsr_module *m, tsr_tensor *x) {
  double p = m->reals[0];
  if (!m->training || p == 0.0)
    return identity(x);
  if (!is_float(tsr_tensor_dtype(x)))
    return forward_fail(m, x, "dropout needs a float dtype");
  // mask = bernoulli(1 - p) / (1 - p): one product on the tape, which keeps
  // the mask for its backward.
  tsr_tensor *mask = tsr_tensor_empty(tsr_tensor_device(x), tsr_tensor_dtype(x), tsr_tensor_rank(x),
                                      tsr_tensor_sizes(x));
  tsr_tensor *scale =
      tsr_tensor_full(tsr_tensor_device(x), tsr_tensor_dtype(x), 0, NULL, 1.0 / (1.0 - p));
  tsr_tensor *y = NULL;
  if (mask != NULL && scale != NULL &&
      tsr_rng_fill_(mask, TSR_RNG_BERNOULLI, 1.0 - p, 0.0) == TSR_OK &&
      tsr_binary_out(mask, mask, scale, TSR_BINARY_MUL, 1.0) == TSR_OK) {
    y = tsr_mul(x, mask);
  }
  tsr_tensor_release(mask);
  tsr_tensor_release(scale);
  return y;
}

static const tsr_module_ops kDropoutOps = {dropout_forward, NULL};

tsr_module *tsr_nn_dropout(double p) {
  if (!(p >= 0.0 && p < 1.0)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "Dropout: p %g is outside [0, 1)", p);
    return NULL;
  }
  tsr_module *m = tsr_module_create("Dropout", &kDropoutOps, NULL);
  if (m != NULL)
    m->reals[0] = p;
  return m;
}

// --- Embedding: ints = {num_embeddings, dim} ---------------------------------------

static tsr_tensor *embedding_forward(tsr_module *m, tsr_tensor *x) {
  if (tsr_tensor_dtype(x) != TSR_INT64 && tsr_tensor_dtype(x) != TSR_INT32) {
    return forward_fail(m, x, "indices must be int64 or int32");
  }
  if (tsr_tensor_rank(x) >= TSR_MAX_RANK) {
    return forward_fail(m, x, "indices have no room for the embedding dim");
  }
  int64_t numel = tsr_tensor_numel(x);
  tsr_tensor *flat = tsr_reshape(x, 1, &numel);
  tsr_tensor *rows = flat ? tsr_gather(param(m, 0), 0, flat) : NULL;
  tsr_tensor_release(flat);
  if (rows == NULL)
    return NULL;
  int64_t sizes[TSR_MAX_RANK];
  memcpy(sizes, tsr_tensor_sizes(x), sizeof(int64_t) * (size_t)tsr_tensor_rank(x));
  sizes[tsr_tensor_rank(x)] = m->ints[1];
  tsr_tensor *y = tsr_reshape(rows, tsr_tensor_rank(x) + 1, sizes);
  tsr_tensor_release(rows);
  return y;
}

static const tsr_module_ops kEmbeddingOps = {embedding_forward, NULL};

tsr_module *tsr_nn_embedding(tsr_device *device, int64_t num_embeddings, int64_t dim) {
  if (device_check("Embedding", device) != TSR_OK)
    return NULL;
  if (num_embeddings < 1 || dim < 1) {
    tsr_fail(device, TSR_INVALID_ARGUMENT,
             "Embedding: num_embeddings %lld and dim %lld must both be >= 1",
             (long long)num_embeddings, (long long)dim);
    return NULL;
  }
  int prev = tsr_scope_suspend();
  tsr_module *m = tsr_module_create("Embedding", &kEmbeddingOps, device);
  if (m == NULL)
    return finish(NULL, TSR_OUT_OF_MEMORY, prev);
  m->ints[0] = num_embeddings;
  m->ints[1] = dim;
  tsr_status status =
      param_add(m, "weight", 2, (int64_t[]){num_embeddings, dim}, FILL_NORMAL, 0.0, 1.0);
  return finish(m, status, prev);
}

// --- MaxPool2d / AvgPool2d: ints = {k, s, p} ----------------------------------------

static tsr_tensor *pool_forward(tsr_module *m, tsr_tensor *x, tsr_pool_kind_t kind) {
  if (tsr_tensor_rank(x) != 4)
    return forward_fail(m, x, "expected [N, C, H, W]");
  tsr_pool2d_attrs attrs;
  memset(&attrs, 0, sizeof(attrs));
  attrs.struct_size = sizeof(attrs);
  attrs.kind = kind;
  for (int i = 0; i < 2; ++i) {
    attrs.kernel[i] = m->ints[0];
    attrs.stride[i] = m->ints[1];
    attrs.pad_before[i] = attrs.pad_after[i] = m->ints[2];
    attrs.dilation[i] = 1;
  }
  attrs.count_include_pad = 1;  // PyTorch's AvgPool2d default
  return tsr_pool2d(x, &attrs, NULL);
}

static tsr_tensor *max_pool_forward(tsr_module *m, tsr_tensor *x) {
  return pool_forward(m, x, TSR_POOL_MAX);
}
static tsr_tensor *avg_pool_forward(tsr_module *m, tsr_tensor *x) {
  return pool_forward(m, x, TSR_POOL_AVG);
}

static const tsr_module_ops kMaxPoolOps = {max_pool_forward, NULL};
static const tsr_module_ops kAvgPoolOps = {avg_pool_forward, NULL};

static tsr_module *pool_create(const char *kind, const tsr_module_ops *ops, int64_t k, int64_t s,
                               int64_t p) {
  // PyTorch: pad should be at most half of the kernel size.
  if (k < 1 || s < 0 || p < 0 || 2 * p > k) {
    tsr_error_set(TSR_INVALID_ARGUMENT,
                  "%s: kernel %lld (>= 1), stride %lld (>= 0), padding %lld (0..kernel/2): out "
                  "of range",
                  kind, (long long)k, (long long)s, (long long)p);
    return NULL;
  }
  tsr_module *m = tsr_module_create(kind, ops, NULL);
  if (m == NULL)
    return NULL;
  m->ints[0] = k;
  m->ints[1] = s ? s : k;
  m->ints[2] = p;
  return m;
}

tsr_module *tsr_nn_max_pool2d(int64_t k, int64_t s, int64_t p) {
  return pool_create("MaxPool2d", &kMaxPoolOps, k, s, p);
}

tsr_module *tsr_nn_avg_pool2d(int64_t k, int64_t s, int64_t p) {
  return pool_create("AvgPool2d", &kAvgPoolOps, k, s, p);
}

// --- activations: ints = {unary fn} or {axis} ----------------------------------------

static tsr_tensor *unary_forward(tsr_module *m, tsr_tensor *x) {
  if (!is_float(tsr_tensor_dtype(x)))
    return forward_fail(m, x, "activations need a float dtype");
  return tsr_unary(x, (tsr_unary_fn_t)m->ints[0], 0.0);
}

static const tsr_module_ops kUnaryOps = {unary_forward, NULL};

static tsr_module *unary_create(const char *kind, tsr_unary_fn_t fn) {
  tsr_module *m = tsr_module_create(kind, &kUnaryOps, NULL);
  if (m != NULL)
    m->ints[0] = fn;
  return m;
}

tsr_module *tsr_nn_relu(void) {
  return unary_create("ReLU", TSR_UNARY_RELU);
}
tsr_module *tsr_nn_gelu(int tanh_approximation) {
  return unary_create("GELU", tanh_approximation ? TSR_UNARY_GELU_TANH : TSR_UNARY_GELU);
}
tsr_module *tsr_nn_sigmoid(void) {
  return unary_create("Sigmoid", TSR_UNARY_SIGMOID);
}
tsr_module *tsr_nn_tanh(void) {
  return unary_create("Tanh", TSR_UNARY_TANH);
}

static tsr_tensor *softmax_forward(tsr_module *m, tsr_tensor *x) {
  int32_t axis = (int32_t)m->ints[0];
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(x) : axis;
  if (a < 0 || a >= tsr_tensor_rank(x)) {
    char detail[64];
    snprintf(detail, sizeof(detail), "axis %d is out of range", axis);
    return forward_fail(m, x, detail);
  }
  return m->ints[1] ? tsr_log_softmax(x, a) : tsr_softmax(x, a);
}

static const tsr_module_ops kSoftmaxOps = {softmax_forward, NULL};

static tsr_module *softmax_create(const char *kind, int32_t axis, int log) {
  tsr_module *m = tsr_module_create(kind, &kSoftmaxOps, NULL);
  if (m != NULL) {
    m->ints[0] = axis;
    m->ints[1] = log;
  }
  return m;
}

tsr_module *tsr_nn_softmax(int32_t axis) {
  return softmax_create("Softmax", axis, 0);
}
tsr_module *tsr_nn_log_softmax(int32_t axis) {
  return softmax_create("LogSoftmax", axis, 1);
}

// --- Flatten ------------------------------------------------------------------------

static tsr_tensor *flatten_forward(tsr_module *m, tsr_tensor *x) {
  if (tsr_tensor_rank(x) < 2)
    return forward_fail(m, x, "expected rank >= 2 ([N, ...])");
  // Explicit sizes rather than -1, which is ambiguous when N is 0.
  int64_t sizes[2] = {tsr_tensor_sizes(x)[0], 1};
  for (int32_t d = 1; d < tsr_tensor_rank(x); ++d) sizes[1] *= tsr_tensor_sizes(x)[d];
  return tsr_reshape(x, 2, sizes);
}

static const tsr_module_ops kFlattenOps = {flatten_forward, NULL};

tsr_module *tsr_nn_flatten(void) {
  return tsr_module_create("Flatten", &kFlattenOps, NULL);
}

// --- Sequential ---------------------------------------------------------------------

static int is_relu(const tsr_module *m) {
  return m->ops == &kUnaryOps && m->ints[0] == TSR_UNARY_RELU;
}

// A Linear or Conv2d followed by a ReLU runs as one op with the ReLU fused
// into it (a post-op of the matmul or convolution): one pass over the
// activation fewer. The values are the same, as ReLU is exact, and so are
// the gradients: the fused rule masks with the output, y > 0, which holds
// exactly where ReLU's own rule's x > 0 does. Returns 1 and the output (or
// NULL on error) in *out_y when |layer| and |next| fuse.
static int fused_relu_forward(tsr_module *layer, const tsr_module *next, tsr_tensor *x,
                              tsr_tensor **out_y) {
  if (!is_relu(next))
    return 0;
  if (layer->ops == &kLinearOps) {
    *out_y = linear_run(layer, x, TSR_ACTIVATION_RELU);
  } else if (layer->ops == &kConv2dOps) {
    *out_y = conv2d_run(layer, x, TSR_ACTIVATION_RELU);
  } else {
    return 0;
  }
  if (*out_y == NULL) {
    size_t n = strlen(layer->kind);
    const char *message = tsr_error_message();
    if (strncmp(message, layer->kind, n) != 0 || message[n] != ':')
      tsr_error_prefix(layer->kind);
  }
  return 1;
}

// ReLU then MaxPool2d runs as MaxPool2d then ReLU: max commutes with a
// non-decreasing function, so the values are the same (NaN included: the
// pool lets NaN win and ReLU keeps it), and so are the gradients: where the
// window's maximum is positive both route dy to it, elsewhere both give 0.
// The ReLU and its backward then touch the pooled tensor, a quarter of the
// size for 2x2 windows, and the full-size ReLU backward pass is gone.
// Returns 1 and the output (or NULL on error) in *out_y when they swap.
static int swapped_relu_pool_forward(tsr_module *relu, tsr_module *pool, tsr_tensor *x,
                                     tsr_tensor **out_y) {
  if (!is_relu(relu) || pool->ops != &kMaxPoolOps)
    return 0;
  tsr_tensor *pooled = tsr_module_forward(pool, x);
  *out_y = pooled != NULL ? tsr_module_forward(relu, pooled) : NULL;
  tsr_tensor_release(pooled);
  return 1;
}

static tsr_tensor *sequential_forward(tsr_module *m, tsr_tensor *x) {
  if (m->num_children == 0)
    return identity(x);
  tsr_tensor *cur = NULL;
  const int32_t count = m->num_children;
  tsr_module *const *c = m->children;
  for (int32_t i = 0; i < count; ++i) {
    tsr_tensor *next = NULL;
    const int32_t child = i;
    if (i + 1 < count && swapped_relu_pool_forward(c[i], c[i + 1], cur ? cur : x, &next)) {
      ++i;  // child i + 1, the pool, ran first
    } else if (i + 1 < count && !(i + 2 < count && c[i + 2]->ops == &kMaxPoolOps) &&
               fused_relu_forward(c[i], c[i + 1], cur ? cur : x, &next)) {
      // (A ReLU before a MaxPool2d is swapped with it instead.)
      ++i;  // the ReLU ran inside child i - 1
    } else {
      next = tsr_module_forward(m->children[i], cur ? cur : x);
    }
    tsr_tensor_release(cur);
    if (next == NULL) {
      char prefix[48];
      snprintf(prefix, sizeof(prefix), "Sequential: child %d", child);
      tsr_error_prefix(prefix);
      return NULL;
    }
    cur = next;
  }
  return cur;
}

static const tsr_module_ops kSequentialOps = {sequential_forward, NULL};

tsr_module *tsr_nn_sequential(int32_t count, tsr_module *const *children) {
  const char *bad = count < 0                         ? "count is negative"
                    : (count > 0 && children == NULL) ? "children is NULL"
                                                      : NULL;
  for (int32_t i = 0; bad == NULL && i < count; ++i) {
    if (children[i] == NULL)
      bad = "a child is NULL";
  }
  if (bad != NULL) {
    for (int32_t i = 0; children != NULL && i < count; ++i) tsr_module_destroy(children[i]);
    tsr_error_set(TSR_INVALID_ARGUMENT, "Sequential: %s (count %d)", bad, count);
    return NULL;
  }
  tsr_module *m = tsr_module_create("Sequential", &kSequentialOps, NULL);
  tsr_status status = m != NULL ? TSR_OK : TSR_OUT_OF_MEMORY;
  for (int32_t i = 0; i < count; ++i) {
    // child_add takes the child also when it fails.
    if (status == TSR_OK) {
      status = tsr_module_child_add(m, children[i]);
    } else {
      tsr_module_destroy(children[i]);
    }
  }
  if (status != TSR_OK) {
    tsr_module_destroy(m);
    return NULL;
  }
  return m;
}
