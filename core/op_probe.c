// Representative signatures: "does this device do op X for dtype D?" asked
// with small contiguous tensors, for tsr-info and tsr_device_op_supported.
//
// An op with a selector (UNARY's function, REDUCE's kind, MATMUL's
// activation and bias, ...) is supported when the plugin accepts it for any
// value of the selector: a plugin that implements RELU but not NEG (UNARY's
// representative) does UNARY. The representative is asked first; its
// answer, message included, stands when no variant is accepted.
#include <string.h>

#include "error.h"
#include "device.h"
#include "dispatch.h"

typedef struct probe {
  tsr_tensor_desc in[6];
  tsr_tensor_desc out[5];
  int32_t nin, nout;
} probe;

static void desc_set(tsr_tensor_desc *d, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                     const tsr_device *device) {
  memset(d, 0, sizeof(*d));
  d->struct_size = sizeof(*d);
  d->dtype = dtype;
  d->rank = rank;
  int64_t stride = 1;
  for (int32_t r = rank - 1; r >= 0; --r) {
    d->sizes[r] = sizes[r];
    d->strides[r] = stride;
    stride *= sizes[r];
  }
  d->device = device->index;
  d->alignment = device->props.base_alignment > 64 ? 64 : device->props.base_alignment;
  d->alias_group = -1;
}

#define IN(dt, ...)                                                                 \
  do {                                                                              \
    const int64_t s_[] = {__VA_ARGS__};                                             \
    desc_set(&p.in[p.nin++], dt, (int32_t)(sizeof(s_) / sizeof(s_[0])), s_, device); \
  } while (0)
#define OUT(dt, ...)                                                                  \
  do {                                                                                \
    const int64_t s_[] = {__VA_ARGS__};                                               \
    desc_set(&p.out[p.nout++], dt, (int32_t)(sizeof(s_) / sizeof(s_[0])), s_, device); \
  } while (0)

typedef union probe_attrs {
    tsr_fill_attrs fill;
    tsr_unary_attrs unary;
    tsr_binary_attrs binary;
    tsr_compare_attrs compare;
    tsr_clamp_attrs clamp;
    tsr_reduce_attrs reduce;
    tsr_arg_reduce_attrs arg;
    tsr_matmul_attrs matmul;
    tsr_conv2d_attrs conv;
    tsr_pool2d_attrs pool;
    tsr_softmax_attrs softmax;
    tsr_layer_norm_attrs layer_norm;
    tsr_batch_norm_attrs batch_norm;
    tsr_concat_attrs concat;
    tsr_pad_attrs pad;
    tsr_gather_attrs gather;
    tsr_rng_fill_attrs rng;
    tsr_cross_entropy_attrs ce;
    tsr_sgd_attrs sgd;
    tsr_adam_attrs adam;
} probe_attrs;

// The representative signature of (op, dt) into |p|, |a| and |*attrs|.
// TSR_INVALID_ARGUMENT for an op the catalogue lacks.
static tsr_status probe_build(const tsr_device *device, tsr_op_id_t op, tsr_dtype_t dt, probe *out_p,
                              probe_attrs *out_a, const void **attrs) {
  probe p;
  memset(&p, 0, sizeof(p));
  int is_bool = dt == TSR_BOOL;
  tsr_dtype_t stat = (dt == TSR_BFLOAT16 || dt == TSR_FLOAT16) ? TSR_FLOAT32 : dt;
  probe_attrs a;
  memset(&a, 0, sizeof(a));
  *attrs = out_a;
  switch (op) {
    case TSR_OP_FILL:
      a.fill = (tsr_fill_attrs){sizeof(a.fill), 1.0};
      OUT(dt, 2, 3);
      break;
    case TSR_OP_COPY:
      *attrs = NULL;
      IN(dt, 2, 3);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_CAST:
      *attrs = NULL;
      IN(dt, 2, 3);
      OUT(dt == TSR_FLOAT32 ? TSR_FLOAT64 : TSR_FLOAT32, 2, 3);
      break;
    case TSR_OP_UNARY:
      a.unary = (tsr_unary_attrs){sizeof(a.unary), is_bool ? TSR_UNARY_LOGICAL_NOT : TSR_UNARY_NEG,
                                  0, 0.0};
      IN(dt, 2, 3);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_UNARY_BACKWARD:
      a.unary = (tsr_unary_attrs){sizeof(a.unary), TSR_UNARY_RELU, 0, 0.0};
      IN(dt, 2, 3);
      IN(dt, 2, 3);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_BINARY:
      a.binary = (tsr_binary_attrs){sizeof(a.binary),
                                    is_bool ? TSR_BINARY_LOGICAL_AND : TSR_BINARY_ADD, 0, 1.0};
      IN(dt, 2, 3);
      IN(dt, 2, 3);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_COMPARE:
      a.compare = (tsr_compare_attrs){sizeof(a.compare), TSR_COMPARE_LT, 0};
      IN(dt, 2, 3);
      IN(dt, 2, 3);
      OUT(TSR_BOOL, 2, 3);
      break;
    case TSR_OP_WHERE:
      *attrs = NULL;
      IN(TSR_BOOL, 2, 3);
      IN(dt, 2, 3);
      IN(dt, 2, 3);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_CLAMP:
      a.clamp = (tsr_clamp_attrs){sizeof(a.clamp), 0.0, 1.0, 1, 1};
      IN(dt, 2, 3);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_REDUCE:
      a.reduce = (tsr_reduce_attrs){sizeof(a.reduce), TSR_REDUCE_SUM, 2u};
      IN(dt, 2, 3);
      OUT(dt, 2, 1);
      break;
    case TSR_OP_ARG_REDUCE:
      a.arg = (tsr_arg_reduce_attrs){sizeof(a.arg), TSR_ARG_REDUCE_ARGMAX, 1};
      IN(dt, 2, 3);
      OUT(TSR_INT64, 2, 1);
      break;
    case TSR_OP_MATMUL:
      a.matmul = (tsr_matmul_attrs){sizeof(a.matmul), 1.0, 0.0, TSR_ACTIVATION_NONE, 0};
      IN(dt, 2, 3);
      IN(dt, 3, 4);
      OUT(dt, 2, 4);
      break;
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      a.conv = (tsr_conv2d_attrs){.struct_size = sizeof(a.conv), .stride = {1, 1},
                                  .dilation = {1, 1}, .groups = 1};
      if (op == TSR_OP_CONV2D) {
        IN(dt, 1, 2, 5, 5);
        IN(dt, 3, 2, 3, 3);
        OUT(dt, 1, 3, 3, 3);
      } else if (op == TSR_OP_CONV2D_BACKWARD_DATA) {
        IN(dt, 1, 3, 3, 3);
        IN(dt, 3, 2, 3, 3);
        OUT(dt, 1, 2, 5, 5);
      } else {
        IN(dt, 1, 3, 3, 3);
        IN(dt, 1, 2, 5, 5);
        OUT(dt, 3, 2, 3, 3);
      }
      break;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
      a.pool = (tsr_pool2d_attrs){.struct_size = sizeof(a.pool), .kind = TSR_POOL_MAX,
                                  .kernel = {2, 2}, .stride = {2, 2}, .dilation = {1, 1}};
      if (op == TSR_OP_POOL2D) {
        IN(dt, 1, 2, 4, 4);
        OUT(dt, 1, 2, 2, 2);
        OUT(TSR_INT64, 1, 2, 2, 2);
      } else {
        IN(dt, 1, 2, 2, 2);
        IN(TSR_INT64, 1, 2, 2, 2);
        OUT(dt, 1, 2, 4, 4);
      }
      break;
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
      a.softmax = (tsr_softmax_attrs){sizeof(a.softmax), 1, 0};
      IN(dt, 2, 3);
      if (op == TSR_OP_SOFTMAX_BACKWARD) IN(dt, 2, 3);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_LAYER_NORM:
      a.layer_norm = (tsr_layer_norm_attrs){sizeof(a.layer_norm), 1, 1, 1e-5};
      IN(dt, 2, 3);
      IN(dt, 3);
      IN(dt, 3);
      OUT(dt, 2, 3);
      OUT(stat, 2, 1);
      OUT(stat, 2, 1);
      break;
    case TSR_OP_LAYER_NORM_BACKWARD:
      a.layer_norm = (tsr_layer_norm_attrs){sizeof(a.layer_norm), 1, 1, 1e-5};
      IN(dt, 2, 3);
      IN(dt, 2, 3);
      IN(stat, 2, 1);
      IN(stat, 2, 1);
      IN(dt, 3);
      OUT(dt, 2, 3);
      OUT(dt, 3);
      OUT(dt, 3);
      break;
    case TSR_OP_BATCH_NORM:
      a.batch_norm = (tsr_batch_norm_attrs){sizeof(a.batch_norm), 1e-5, 0.1, 1, 0};
      IN(dt, 2, 3, 2, 2);
      for (int i = 0; i < 4; ++i) IN(stat, 3);
      OUT(dt, 2, 3, 2, 2);
      for (int i = 0; i < 4; ++i) OUT(stat, 3);
      break;
    case TSR_OP_BATCH_NORM_BACKWARD:
      a.batch_norm = (tsr_batch_norm_attrs){sizeof(a.batch_norm), 1e-5, 0.1, 1, 0};
      IN(dt, 2, 3, 2, 2);
      IN(dt, 2, 3, 2, 2);
      for (int i = 0; i < 3; ++i) IN(stat, 3);
      OUT(dt, 2, 3, 2, 2);
      OUT(stat, 3);
      OUT(stat, 3);
      break;
    case TSR_OP_CONCAT:
      a.concat = (tsr_concat_attrs){sizeof(a.concat), 1, 0};
      IN(dt, 2, 3);
      IN(dt, 2, 2);
      OUT(dt, 2, 5);
      break;
    case TSR_OP_PAD:
      a.pad.struct_size = sizeof(a.pad);
      a.pad.mode = TSR_PAD_CONSTANT;
      a.pad.pad_before[0] = a.pad.pad_before[1] = a.pad.pad_after[0] = a.pad.pad_after[1] = 1;
      IN(dt, 2, 3);
      OUT(dt, 4, 5);
      break;
    case TSR_OP_GATHER:
      a.gather = (tsr_gather_attrs){sizeof(a.gather), 0, 0};
      IN(dt, 4, 3);
      IN(TSR_INT64, 2);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_SCATTER_ADD:
      a.gather = (tsr_gather_attrs){sizeof(a.gather), 0, 0};
      IN(dt, 2, 3);
      IN(TSR_INT64, 2);
      OUT(dt, 4, 3);
      break;
    case TSR_OP_RNG_FILL: {
      int is_float = dt == TSR_FLOAT32 || dt == TSR_FLOAT64 || dt == TSR_BFLOAT16 ||
                     dt == TSR_FLOAT16;
      a.rng = (tsr_rng_fill_attrs){sizeof(a.rng), is_float ? TSR_RNG_UNIFORM : TSR_RNG_BERNOULLI,
                                   0, 1, 0, is_float ? 0.0 : 0.5, 1.0};
      OUT(dt, 2, 3);
      break;
    }
    case TSR_OP_CROSS_ENTROPY:
      a.ce = (tsr_cross_entropy_attrs){sizeof(a.ce), TSR_REDUCTION_MEAN, 0, -100, 0.0};
      IN(dt, 2, 3);
      IN(TSR_INT64, 2);
      desc_set(&p.out[p.nout++], dt, 0, NULL, device);
      OUT(TSR_FLOAT32, 2);
      break;
    case TSR_OP_CROSS_ENTROPY_BACKWARD:
      a.ce = (tsr_cross_entropy_attrs){sizeof(a.ce), TSR_REDUCTION_MEAN, 0, -100, 0.0};
      desc_set(&p.in[p.nin++], dt, 0, NULL, device);
      IN(dt, 2, 3);
      IN(TSR_INT64, 2);
      IN(TSR_FLOAT32, 2);
      OUT(dt, 2, 3);
      break;
    case TSR_OP_SGD_UPDATE:
      a.sgd = (tsr_sgd_attrs){sizeof(a.sgd), 0.1, 0.9, 0.0, 0.0, 0, 0};
      IN(dt, 3);
      OUT(dt, 3);
      OUT(dt, 3);
      break;
    case TSR_OP_ADAM_UPDATE:
      a.adam = (tsr_adam_attrs){sizeof(a.adam), 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, 0, 0};
      IN(dt, 3);
      OUT(dt, 3);
      OUT(dt, 3);
      OUT(dt, 3);
      break;
    default:
      return tsr_error_set(TSR_INVALID_ARGUMENT, "op_supported: op id %d is unknown", op);
  }
  *out_p = p;
  *out_a = a;
  return TSR_OK;
}

// Turns the representative (|p|, |a|) into its variant |k| of the op's
// selector; 0 when the op has no variant |k|.
static int probe_variant(const tsr_device *device, tsr_op_id_t op, tsr_dtype_t dt, int32_t k,
                         probe *p, probe_attrs *a) {
  switch (op) {
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
      if (k >= TSR_UNARY_FN_COUNT) return 0;
      a->unary.fn = (tsr_unary_fn_t)k;
      a->unary.alpha = k == TSR_UNARY_LEAKY_RELU ? 0.01 : (k == TSR_UNARY_ELU ? 1.0 : 0.0);
      return 1;
    case TSR_OP_BINARY:
      if (k >= TSR_BINARY_FN_COUNT) return 0;
      a->binary.fn = (tsr_binary_fn_t)k;
      return 1;
    case TSR_OP_COMPARE:
      if (k >= TSR_COMPARE_FN_COUNT) return 0;
      a->compare.fn = (tsr_compare_fn_t)k;
      return 1;
    case TSR_OP_REDUCE:
      if (k >= TSR_REDUCE_FN_COUNT) return 0;
      a->reduce.fn = (tsr_reduce_fn_t)k;
      return 1;
    case TSR_OP_ARG_REDUCE:
      if (k >= TSR_ARG_REDUCE_FN_COUNT) return 0;
      a->arg.fn = k;
      return 1;
    case TSR_OP_MATMUL:
      // Each activation; TSR_ACTIVATION_COUNT: the optional bias.
      if (k > TSR_ACTIVATION_COUNT) return 0;
      if (k < TSR_ACTIVATION_COUNT) {
        a->matmul.activation = (tsr_activation_t)k;
      } else {
        // The bias as the core passes it (docs/abi.md 10.13): out's rank and
        // sizes, stride 0 on every dimension but the last.
        a->matmul.has_bias = 1;
        desc_set(&p->in[2], dt, p->out[0].rank, p->out[0].sizes, device);
        p->in[2].strides[0] = 0;
        p->nin = 3;
      }
      return 1;
    case TSR_OP_CONV2D:
      if (k > TSR_ACTIVATION_COUNT) return 0;
      if (k < TSR_ACTIVATION_COUNT) {
        a->conv.activation = (tsr_activation_t)k;
      } else {
        a->conv.has_bias = 1;
        desc_set(&p->in[2], dt, 1, &p->out[0].sizes[1], device);
        p->nin = 3;
      }
      return 1;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD:
      // NONE gives one loss per row: [N] for the loss (forward) or for the
      // incoming gradient (backward) instead of a scalar.
      if (k >= TSR_REDUCTION_COUNT) return 0;
      a->ce.reduction = k;
      if (k == TSR_REDUCTION_NONE) {
        const int64_t rows = 2;
        desc_set(op == TSR_OP_CROSS_ENTROPY ? &p->out[0] : &p->in[0], dt, 1, &rows, device);
      }
      return 1;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
      if (k >= TSR_POOL_KIND_COUNT) return 0;
      if (k == TSR_POOL_AVG) {
        // AVG has no indices: forward without its second output, backward
        // without its second input.
        a->pool.kind = TSR_POOL_AVG;
        if (op == TSR_OP_POOL2D) {
          p->nout = 1;
        } else {
          p->nin = 1;
        }
      }
      return 1;
    case TSR_OP_PAD:
      if (k >= TSR_PAD_MODE_COUNT) return 0;
      a->pad.mode = k;
      return 1;
    case TSR_OP_RNG_FILL:
      if (k >= TSR_RNG_DISTRIBUTION_COUNT) return 0;
      a->rng.distribution = k;
      return 1;
    default:
      return 0;
  }
}

// The plugin's answer for one signature.
static tsr_status probe_ask(const tsr_plugin_api *api, const tsr_device *device, tsr_op_id_t op,
                            const probe *p, const void *attrs) {
  tsr_op_signature signature = {sizeof(signature), op, device->index, p->nin, p->nout,
                                (tsr_tensor_desc *)p->in, (tsr_tensor_desc *)p->out, attrs,
                                TSR_MATH_STRICT, 0};
  tsr_error_clear();
  tsr_status status = api->op_supports(&signature);
  // A combination the catalogue leaves undefined (matmul of int32) is, for
  // this question, simply not supported.
  if (status == TSR_INVALID_ARGUMENT) status = TSR_UNSUPPORTED;
  return status;
}

tsr_status tsr_op_probe_selector(tsr_device *device, tsr_op_id_t op, tsr_dtype_t dt, int32_t selector) {
  probe p;
  probe_attrs a;
  const void *attrs = NULL;
  tsr_status status = probe_build(device, op, dt, &p, &a, &attrs);
  if (status != TSR_OK) return status;
  if (selector < 0 || !probe_variant(device, op, dt, selector, &p, &a)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "op_selector_supported: %s has no selector value %d",
                         tsr_op_name(op), selector);
  }
  const tsr_plugin_api *api = device->plugin->api;
  if (!TSR_ABI_HAS(api, tsr_plugin_api, op_supports)) {
    return tsr_error_set(TSR_UNSUPPORTED, "%s: the plugin has no kernels", device->name);
  }
  return probe_ask(api, device, op, &p, attrs == NULL ? NULL : &a);
}

tsr_status tsr_op_probe(tsr_device *device, tsr_op_id_t op, tsr_dtype_t dt) {
  probe p;
  probe_attrs a;
  const void *attrs = NULL;
  tsr_status status = probe_build(device, op, dt, &p, &a, &attrs);
  if (status != TSR_OK) return status;
  const tsr_plugin_api *api = device->plugin->api;
  if (!TSR_ABI_HAS(api, tsr_plugin_api, op_supports)) {
    return tsr_error_set(TSR_UNSUPPORTED, "%s: the plugin has no kernels", device->name);
  }
  status = probe_ask(api, device, op, &p, attrs);
  if (status != TSR_UNSUPPORTED) return status;
  for (int32_t k = 0;; ++k) {
    probe pv = p;
    probe_attrs av = a;
    if (!probe_variant(device, op, dt, k, &pv, &av)) break;
    if (probe_ask(api, device, op, &pv, attrs == NULL ? NULL : &av) == TSR_OK) return TSR_OK;
  }
  // No variant either: the representative's answer, with its message.
  return probe_ask(api, device, op, &p, attrs);
}
