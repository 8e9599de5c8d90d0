// The CONV2D family through the cuDNN 9 backend (graph) API.
//
// plan_create builds an operation graph (one convolution node, plus bias
// add and activation nodes when CONV2D fuses them), asks the engine
// heuristics for configurations and lets engine_select.c pick one: mode A,
// then mode B, then the fallback list, filtering by numerical notes (no
// tensor-core engines in strict float32, no non-deterministic ones when the
// plan must be reproducible) and timing candidates under TSR_PLAN_AUTOTUNE.
// The finalised execution plan is kept in the plan; the cuDNN handle is the
// executing thread's (plan.c), bound to the stream at each execution. When
// no engine takes the fused graph, the convolution runs alone and an own
// kernel adds the bias and applies the activation.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/plan.h"
#include "cuda_kernels.h"
#include "cuda_plan.h"
#include "engine_select.h"
#include "plan_key.h"

enum {
  TSR_CUDA_UID_BASE = 1,       // operand i has uid 1 + i (inputs, then outputs)
  TSR_CUDA_UID_VIRTUAL = 100,  // intermediate tensors of a fused graph
};

typedef struct tsr_cuda_conv {
  cudnnBackendDescriptor_t exec_plan;
  int64_t uids[4];
  int32_t uid_operands[4];  // which operand each uid is
  int32_t uid_count;
  int fused;         // bias and activation run inside cuDNN
  int own_bias_act;  // CONV2D: bias/activation by an own kernel afterwards
  int own_dbias;     // BACKWARD_FILTER: dbias by an own kernel
  int has_bias_ptr;  // CONV2D with a bias input (operand 2)
  tsr_activation_t activation;
  tsr_dtype_t dtype;
  int64_t n, c, h, w;  // y (forward) or dy (backward filter) sizes
  int64_t strides[4];
} tsr_cuda_conv;

static tsr_cuda_pin_cache g_pins;
static pthread_once_t g_pins_once = PTHREAD_ONCE_INIT;

static void tsr_cuda_pins_init(void) {
  tsr_cuda_pin_cache_init(&g_pins);
}

void tsr_cuda_conv_shutdown(void) {
  // The cache survives a restart harmlessly; empty it so a new start tunes
  // again on what may be another device.
  pthread_once(&g_pins_once, tsr_cuda_pins_init);
  pthread_mutex_lock(&g_pins.lock);
  g_pins.used = 0;
  g_pins.next = 0;
  pthread_mutex_unlock(&g_pins.lock);
}

static cudnnDataType_t tsr_cuda_cudnn_type(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64:
      return CUDNN_DATA_DOUBLE;
    case TSR_FLOAT16:
      return CUDNN_DATA_HALF;
    case TSR_BFLOAT16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

// The attributes with ops.h's defaults for NULL and for fields beyond an
// older caller's struct_size (the prefix it covers overwrites them). ref has
// checked the values already.
static const tsr_conv2d_attrs *tsr_cuda_conv_attrs(const tsr_op_signature *signature,
                                                   tsr_conv2d_attrs *copy) {
  memset(copy, 0, sizeof(*copy));
  copy->stride[0] = copy->stride[1] = 1;
  copy->dilation[0] = copy->dilation[1] = 1;
  copy->groups = 1;
  if (signature->attrs != NULL) {
    size_t n = ((const tsr_conv2d_attrs *)signature->attrs)->struct_size;
    memcpy(copy, signature->attrs, n < sizeof(*copy) ? n : sizeof(*copy));
  }
  copy->struct_size = sizeof(*copy);
  return copy;
}

tsr_status tsr_cuda_conv_supports(const tsr_op_signature *signature) {
  int32_t n_ops = signature->num_inputs + signature->num_outputs;
  for (int32_t i = 0; i < n_ops; ++i) {
    const tsr_tensor_desc *d = i < signature->num_inputs
                                   ? &signature->inputs[i]
                                   : &signature->outputs[i - signature->num_inputs];
    for (int32_t k = 0; k < d->rank; ++k) {
      if (d->strides[k] == 0 && d->sizes[k] > 1) {
        return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_UNSUPPORTED,
                                          "%s: operand %d broadcasts (stride 0); cuDNN tensors "
                                          "do not",
                                          tsr_op_name(signature->op), (int)i);
      }
    }
  }
  return TSR_OK;
}

// --- building descriptors ----------------------------------------------------

#define TSR_CUDNN(call, what)                                       \
  do {                                                              \
    tsr_status s_ = tsr_cuda_cudnn_check((call), "conv2d", (what)); \
    if (s_ != TSR_OK) {                                             \
      status = s_;                                                  \
      goto done;                                                    \
    }                                                               \
  } while (0)

static tsr_status tsr_cuda_tensor_make(const tsr_tensor_desc *d, int64_t uid, int is_virtual,
                                       cudnnDataType_t type, cudnnBackendDescriptor_t *out) {
  tsr_status status = TSR_OK;
  cudnnBackendDescriptor_t t = NULL;
  int64_t dims[4], strides[4];
  for (int i = 0; i < 4; ++i) {
    dims[i] = d->sizes[i];
    strides[i] = d->strides[i];
  }
  int64_t alignment = d->alignment == 0 ? (int64_t)tsr_dtype_size(d->dtype) : d->alignment;
  bool virt = is_virtual != 0;
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t), "tensor create");
  TSR_CUDNN(
      cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type),
      "tensor data type");
  TSR_CUDNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims),
            "tensor dimensions");
  TSR_CUDNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides),
            "tensor strides");
  TSR_CUDNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid),
            "tensor uid");
  TSR_CUDNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                     &alignment),
            "tensor alignment");
  TSR_CUDNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt),
            "tensor virtual");
  TSR_CUDNN(cudnnBackendFinalize(t), "tensor finalize");
  *out = t;
  return TSR_OK;
done:
  if (t != NULL)
    cudnnBackendDestroyDescriptor(t);
  return status;
}

static tsr_status tsr_cuda_pointwise_make(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                          cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y,
                                          cudnnBackendDescriptor_t *out_pw,
                                          cudnnBackendDescriptor_t *out_op) {
  tsr_status status = TSR_OK;
  cudnnBackendDescriptor_t pw = NULL, op = NULL;
  cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw),
            "pointwise create");
  TSR_CUDNN(
      cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode),
      "pointwise mode");
  TSR_CUDNN(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1,
                                     &precision),
            "pointwise precision");
  TSR_CUDNN(cudnnBackendFinalize(pw), "pointwise finalize");
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op),
            "pointwise op create");
  TSR_CUDNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw),
            "pointwise op descriptor");
  TSR_CUDNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x),
            "pointwise op x");
  if (b != NULL) {
    TSR_CUDNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b),
              "pointwise op b");
  }
  TSR_CUDNN(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y),
            "pointwise op y");
  TSR_CUDNN(cudnnBackendFinalize(op), "pointwise op finalize");
  *out_pw = pw;
  *out_op = op;
  return TSR_OK;
done:
  if (op != NULL)
    cudnnBackendDestroyDescriptor(op);
  if (pw != NULL)
    cudnnBackendDestroyDescriptor(pw);
  return status;
}

static int tsr_cuda_pointwise_mode(tsr_activation_t activation, cudnnPointwiseMode_t *out_mode) {
  switch (activation) {
    case TSR_ACTIVATION_RELU:
      *out_mode = CUDNN_POINTWISE_RELU_FWD;
      return 1;
    case TSR_ACTIVATION_GELU:
      *out_mode = CUDNN_POINTWISE_GELU_FWD;
      return 1;
    case TSR_ACTIVATION_GELU_TANH:
      *out_mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
      return 1;
    case TSR_ACTIVATION_SIGMOID:
      *out_mode = CUDNN_POINTWISE_SIGMOID_FWD;
      return 1;
    case TSR_ACTIVATION_TANH:
      *out_mode = CUDNN_POINTWISE_TANH_FWD;
      return 1;
    default:
      return 0;
  }
}

// Every descriptor of one operation graph, released together.
typedef struct tsr_cuda_graph {
  cudnnBackendDescriptor_t parts[16];
  int32_t count;
  cudnnBackendDescriptor_t graph;
} tsr_cuda_graph;

static void tsr_cuda_graph_release(tsr_cuda_graph *g) {
  if (g->graph != NULL)
    cudnnBackendDestroyDescriptor(g->graph);
  for (int32_t i = g->count - 1; i >= 0; --i) cudnnBackendDestroyDescriptor(g->parts[i]);
  memset(g, 0, sizeof(*g));
}

// Builds the graph of |signature|; with |fuse|, CONV2D's bias and activation
// become pointwise nodes. Records the uids the execution binds in |conv|.
static tsr_status tsr_cuda_graph_build(const tsr_op_signature *signature, cudnnHandle_t handle,
                                       int fuse, tsr_cuda_conv *conv, tsr_cuda_graph *g) {
  tsr_status status = TSR_OK;
  tsr_conv2d_attrs attrs_copy;
  const tsr_conv2d_attrs *attrs = tsr_cuda_conv_attrs(signature, &attrs_copy);
  tsr_dtype_t dtype = signature->outputs[0].dtype;
  cudnnDataType_t data = tsr_cuda_cudnn_type(dtype);
  cudnnDataType_t compute = dtype == TSR_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  memset(g, 0, sizeof(*g));
  conv->uid_count = 0;
  // Operand tensors: dx/dw/y and the inputs the convolution node reads.
  cudnnBackendDescriptor_t tensors[4] = {NULL, NULL, NULL, NULL};
  int32_t n_tensors = 3;
  int32_t operand_of[3] = {0, 1, signature->num_inputs};  // inputs 0, 1 and output 0
  for (int32_t i = 0; i < n_tensors; ++i) {
    int32_t index = operand_of[i];
    const tsr_tensor_desc *d = index < signature->num_inputs
                                   ? &signature->inputs[index]
                                   : &signature->outputs[index - signature->num_inputs];
    int is_virtual = fuse && signature->op == TSR_OP_CONV2D && i == 2;
    int64_t uid = is_virtual ? TSR_CUDA_UID_VIRTUAL : TSR_CUDA_UID_BASE + index;
    status = tsr_cuda_tensor_make(d, uid, is_virtual, is_virtual ? compute : data, &tensors[i]);
    if (status != TSR_OK)
      goto done;
    g->parts[g->count++] = tensors[i];
    if (!is_virtual) {
      conv->uids[conv->uid_count] = uid;
      conv->uid_operands[conv->uid_count++] = index;
    }
  }
  cudnnBackendDescriptor_t cdesc = NULL;
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &cdesc),
            "convolution create");
  g->parts[g->count++] = cdesc;
  int64_t spatial = 2;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  TSR_CUDNN(cudnnBackendSetAttribute(cdesc, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
                                     1, &compute),
            "convolution compute type");
  TSR_CUDNN(cudnnBackendSetAttribute(cdesc, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                     CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode),
            "convolution mode");
  TSR_CUDNN(cudnnBackendSetAttribute(cdesc, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64,
                                     1, &spatial),
            "convolution spatial dims");
  TSR_CUDNN(cudnnBackendSetAttribute(cdesc, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2,
                                     attrs->dilation),
            "convolution dilations");
  TSR_CUDNN(cudnnBackendSetAttribute(cdesc, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64,
                                     2, attrs->stride),
            "convolution strides");
  TSR_CUDNN(cudnnBackendSetAttribute(cdesc, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                                     2, attrs->pad_before),
            "convolution pre paddings");
  TSR_CUDNN(cudnnBackendSetAttribute(cdesc, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                                     2, attrs->pad_after),
            "convolution post paddings");
  TSR_CUDNN(cudnnBackendFinalize(cdesc), "convolution finalize");

  cudnnBackendDescriptor_t op = NULL;
  cudnnBackendAttributeType_t scalar_type =
      dtype == TSR_FLOAT64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  double alpha64 = 1.0, beta64 = 0.0;
  float alpha32 = 1.0f, beta32 = 0.0f;
  const void *alpha = dtype == TSR_FLOAT64 ? (const void *)&alpha64 : (const void *)&alpha32;
  const void *beta = dtype == TSR_FLOAT64 ? (const void *)&beta64 : (const void *)&beta32;
  cudnnBackendDescriptorType_t op_type;
  cudnnBackendAttributeName_t a_first, a_second, a_out, a_desc, a_alpha, a_beta;
  cudnnBackendDescriptor_t first = tensors[0], second = tensors[1], result = tensors[2];
  if (signature->op == TSR_OP_CONV2D) {
    op_type = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
    a_first = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X;
    a_second = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W;
    a_out = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y;
    a_desc = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC;
    a_alpha = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA;
    a_beta = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA;
  } else if (signature->op == TSR_OP_CONV2D_BACKWARD_DATA) {
    op_type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
    a_first = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY;
    a_second = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
    a_out = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX;
    a_desc = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
    a_alpha = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA;
    a_beta = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA;
  } else {
    op_type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
    a_first = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY;
    a_second = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X;
    a_out = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
    a_desc = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
    a_alpha = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA;
    a_beta = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA;
  }
  TSR_CUDNN(cudnnBackendCreateDescriptor(op_type, &op), "convolution op create");
  g->parts[g->count++] = op;
  TSR_CUDNN(cudnnBackendSetAttribute(op, a_first, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &first),
            "convolution op input");
  TSR_CUDNN(cudnnBackendSetAttribute(op, a_second, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &second),
            "convolution op input");
  TSR_CUDNN(cudnnBackendSetAttribute(op, a_out, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &result),
            "convolution op output");
  TSR_CUDNN(cudnnBackendSetAttribute(op, a_desc, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cdesc),
            "convolution op descriptor");
  TSR_CUDNN(cudnnBackendSetAttribute(op, a_alpha, scalar_type, 1, alpha), "convolution alpha");
  TSR_CUDNN(cudnnBackendSetAttribute(op, a_beta, scalar_type, 1, beta), "convolution beta");
  TSR_CUDNN(cudnnBackendFinalize(op), "convolution op finalize");

  cudnnBackendDescriptor_t ops[3] = {op, NULL, NULL};
  int64_t n_ops = 1;
  if (fuse) {
    // y = act(conv + bias): bias [1, O, 1, 1] broadcasts over N, H, W.
    const tsr_tensor_desc *yd = &signature->outputs[0];
    int32_t out_index = signature->num_inputs;
    cudnnBackendDescriptor_t current = tensors[2];
    int has_act = attrs->activation != TSR_ACTIVATION_NONE;
    if (attrs->has_bias) {
      tsr_tensor_desc bias = signature->inputs[2];
      bias.rank = 4;
      bias.sizes[0] = 1;
      bias.sizes[1] = signature->inputs[2].sizes[0];
      bias.sizes[2] = 1;
      bias.sizes[3] = 1;
      bias.strides[0] = bias.sizes[1] * signature->inputs[2].strides[0];
      bias.strides[1] = signature->inputs[2].strides[0];
      bias.strides[2] = 1;
      bias.strides[3] = 1;
      cudnnBackendDescriptor_t bias_t = NULL, sum_t = NULL, pw = NULL, pw_op = NULL;
      status = tsr_cuda_tensor_make(&bias, TSR_CUDA_UID_BASE + 2, 0, data, &bias_t);
      if (status != TSR_OK)
        goto done;
      g->parts[g->count++] = bias_t;
      conv->uids[conv->uid_count] = TSR_CUDA_UID_BASE + 2;
      conv->uid_operands[conv->uid_count++] = 2;
      int64_t sum_uid = has_act ? TSR_CUDA_UID_VIRTUAL + 1 : TSR_CUDA_UID_BASE + out_index;
      status = tsr_cuda_tensor_make(yd, sum_uid, has_act, has_act ? compute : data, &sum_t);
      if (status != TSR_OK)
        goto done;
      g->parts[g->count++] = sum_t;
      status = tsr_cuda_pointwise_make(CUDNN_POINTWISE_ADD, current, bias_t, sum_t, &pw, &pw_op);
      if (status != TSR_OK)
        goto done;
      g->parts[g->count++] = pw;
      g->parts[g->count++] = pw_op;
      ops[n_ops++] = pw_op;
      current = sum_t;
    }
    if (has_act) {
      cudnnPointwiseMode_t pw_mode;
      if (!tsr_cuda_pointwise_mode(attrs->activation, &pw_mode)) {
        status = TSR_UNSUPPORTED;
        goto done;
      }
      cudnnBackendDescriptor_t y_t = NULL, pw = NULL, pw_op = NULL;
      status = tsr_cuda_tensor_make(yd, TSR_CUDA_UID_BASE + out_index, 0, data, &y_t);
      if (status != TSR_OK)
        goto done;
      g->parts[g->count++] = y_t;
      status = tsr_cuda_pointwise_make(pw_mode, current, NULL, y_t, &pw, &pw_op);
      if (status != TSR_OK)
        goto done;
      g->parts[g->count++] = pw;
      g->parts[g->count++] = pw_op;
      ops[n_ops++] = pw_op;
    }
    conv->uids[conv->uid_count] = TSR_CUDA_UID_BASE + out_index;
    conv->uid_operands[conv->uid_count++] = out_index;
  }
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph),
            "graph create");
  TSR_CUDNN(cudnnBackendSetAttribute(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE,
                                     1, &handle),
            "graph handle");
  TSR_CUDNN(cudnnBackendSetAttribute(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops, ops),
            "graph ops");
  TSR_CUDNN(cudnnBackendFinalize(g->graph), "graph finalize");
  return TSR_OK;
done:
  tsr_cuda_graph_release(g);
  return status;
}

// --- the engine source over cuDNN ---------------------------------------------

typedef struct tsr_cuda_cudnn_source {
  cudnnHandle_t handle;
  cudnnBackendDescriptor_t graph;
  const tsr_cuda_conv *conv;
  // Autotune: scratch operands and a stream to time on.
  void *scratch[4];
  void *workspace;
  uint64_t workspace_bytes;
  cudaStream_t stream;
} tsr_cuda_cudnn_source;

static tsr_status tsr_cuda_src_configs_get(void *ctx, int32_t mode, void **out_configs,
                                           int32_t capacity, int32_t *out_count) {
  tsr_cuda_cudnn_source *src = ctx;
  tsr_status status = TSR_OK;
  cudnnBackendDescriptor_t heur = NULL;
  static const cudnnBackendHeurMode_t modes[TSR_CUDA_HEUR_SOURCE_COUNT] = {
      CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK};
  cudnnBackendHeurMode_t heur_mode = modes[mode];
  int64_t available = 0, got = 0;
  int32_t made = 0;
  *out_count = 0;
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur),
            "heuristics create");
  TSR_CUDNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &src->graph),
            "heuristics graph");
  TSR_CUDNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                     &heur_mode),
            "heuristics mode");
  if (cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS)
    goto done;  // a mode that does not apply to this graph offers nothing
  TSR_CUDNN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, NULL),
            "heuristics result count");
  if (available > capacity)
    available = capacity;
  for (; made < available; ++made) {
    cudnnBackendDescriptor_t cfg = NULL;
    TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg),
              "engine config create");
    out_configs[made] = cfg;
  }
  TSR_CUDNN(
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               available, &got, (cudnnBackendDescriptor_t *)out_configs),
      "heuristics results");
  for (int64_t i = got; i < made; ++i)
    cudnnBackendDestroyDescriptor((cudnnBackendDescriptor_t)out_configs[i]);
  made = (int32_t)got;
  *out_count = made;
  made = 0;  // handed over
done:
  for (int32_t i = 0; i < made; ++i)
    cudnnBackendDestroyDescriptor((cudnnBackendDescriptor_t)out_configs[i]);
  if (heur != NULL)
    cudnnBackendDestroyDescriptor(heur);
  return status;
}

// The engine behind |config| (a new descriptor the caller destroys), or NULL.
static cudnnBackendDescriptor_t tsr_cuda_engine_of(void *config) {
  cudnnBackendDescriptor_t engine = NULL;
  int64_t got = 0;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) !=
      CUDNN_STATUS_SUCCESS)
    return NULL;
  if (cudnnBackendGetAttribute((cudnnBackendDescriptor_t)config, CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                               &engine) != CUDNN_STATUS_SUCCESS) {
    cudnnBackendDestroyDescriptor(engine);
    return NULL;
  }
  return engine;
}

static uint32_t tsr_cuda_src_notes_get(void *ctx, void *config) {
  (void)ctx;
  cudnnBackendDescriptor_t engine = tsr_cuda_engine_of(config);
  // An engine whose notes cannot be read is treated as having all of them.
  uint32_t bits = ~0u;
  if (engine == NULL)
    return bits;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                               notes) == CUDNN_STATUS_SUCCESS) {
    bits = 0;
    for (int64_t i = 0; i < count; ++i) {
      switch (notes[i]) {
        case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
          bits |= TSR_CUDA_NOTE_TENSOR_CORE;
          break;
        case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
          bits |= TSR_CUDA_NOTE_DOWN_CONVERT_INPUTS;
          break;
        case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
          bits |= TSR_CUDA_NOTE_REDUCED_PRECISION_REDUCTION;
          break;
        case CUDNN_NUMERICAL_NOTE_FFT:
          bits |= TSR_CUDA_NOTE_FFT;
          break;
        case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
          bits |= TSR_CUDA_NOTE_NONDETERMINISTIC;
          break;
        case CUDNN_NUMERICAL_NOTE_WINOGRAD:
        case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
        case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
        case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
          bits |= TSR_CUDA_NOTE_WINOGRAD;
          break;
        default:
          break;
      }
    }
  }
  cudnnBackendDestroyDescriptor(engine);
  return bits;
}

static int64_t tsr_cuda_src_engine_id_get(void *ctx, void *config) {
  (void)ctx;
  cudnnBackendDescriptor_t engine = tsr_cuda_engine_of(config);
  int64_t id = -1, got = 0;
  if (engine != NULL) {
    (void)cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                   &got, &id);
    cudnnBackendDestroyDescriptor(engine);
  }
  return id;
}

static tsr_status tsr_cuda_src_plan_build(void *ctx, void *config, void **out_plan) {
  tsr_cuda_cudnn_source *src = ctx;
  cudnnBackendDescriptor_t plan = NULL;
  cudnnBackendDescriptor_t cfg = (cudnnBackendDescriptor_t)config;
  tsr_status status = TSR_OK;
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan),
            "execution plan create");
  TSR_CUDNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &src->handle),
            "execution plan handle");
  TSR_CUDNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg),
            "execution plan config");
  if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
    cudnnBackendDestroyDescriptor(plan);
    return TSR_UNSUPPORTED;  // this configuration does not take this problem
  }
  *out_plan = plan;
  return TSR_OK;
done:
  if (plan != NULL)
    cudnnBackendDestroyDescriptor(plan);
  return status;
}

static int64_t tsr_cuda_plan_workspace(cudnnBackendDescriptor_t plan) {
  int64_t bytes = 0, got = 0;
  if (cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                               &got, &bytes) != CUDNN_STATUS_SUCCESS)
    return -1;
  return bytes;
}

// One execution of |plan| with |ptrs| bound to the graph's uids.
static tsr_status tsr_cuda_cudnn_execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                         const tsr_cuda_conv *conv, void *const *ptrs,
                                         void *workspace) {
  tsr_status status = TSR_OK;
  cudnnBackendDescriptor_t pack = NULL;
  void *data[4];
  for (int32_t i = 0; i < conv->uid_count; ++i) data[i] = ptrs[conv->uid_operands[i]];
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack),
            "variant pack create");
  TSR_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                     conv->uid_count, conv->uids),
            "variant pack uids");
  TSR_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                     CUDNN_TYPE_VOID_PTR, conv->uid_count, data),
            "variant pack pointers");
  TSR_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                                     1, &workspace),
            "variant pack workspace");
  TSR_CUDNN(cudnnBackendFinalize(pack), "variant pack finalize");
  TSR_CUDNN(cudnnBackendExecute(handle, plan, pack), "cudnnBackendExecute");
done:
  if (pack != NULL)
    cudnnBackendDestroyDescriptor(pack);
  return status;
}

static tsr_status tsr_cuda_src_plan_time(void *ctx, void *plan_ptr, float *out_ms) {
  tsr_cuda_cudnn_source *src = ctx;
  cudnnBackendDescriptor_t plan = (cudnnBackendDescriptor_t)plan_ptr;
  int64_t need = tsr_cuda_plan_workspace(plan);
  if (need < 0 || (uint64_t)need > src->workspace_bytes) {
    *out_ms = 1e30f;  // needs more scratch than autotune set aside: never preferred
    return TSR_OK;
  }
  cudaEvent_t start = NULL, end = NULL;
  tsr_status status = tsr_cuda_check(cudaEventCreate(&start), "conv2d autotune", "cudaEventCreate");
  if (status == TSR_OK)
    status = tsr_cuda_check(cudaEventCreate(&end), "conv2d autotune", "cudaEventCreate");
  // One warm-up, then three timed runs.
  if (status == TSR_OK)
    status = tsr_cuda_cudnn_execute(src->handle, plan, src->conv, src->scratch, src->workspace);
  if (status == TSR_OK)
    status =
        tsr_cuda_check(cudaEventRecord(start, src->stream), "conv2d autotune", "cudaEventRecord");
  for (int i = 0; i < 3 && status == TSR_OK; ++i)
    status = tsr_cuda_cudnn_execute(src->handle, plan, src->conv, src->scratch, src->workspace);
  if (status == TSR_OK)
    status =
        tsr_cuda_check(cudaEventRecord(end, src->stream), "conv2d autotune", "cudaEventRecord");
  if (status == TSR_OK)
    status = tsr_cuda_check(cudaEventSynchronize(end), "conv2d autotune", "cudaEventSynchronize");
  float ms = 0.0f;
  if (status == TSR_OK)
    status = tsr_cuda_check(cudaEventElapsedTime(&ms, start, end), "conv2d autotune",
                            "cudaEventElapsedTime");
  if (start != NULL)
    cudaEventDestroy(start);
  if (end != NULL)
    cudaEventDestroy(end);
  *out_ms = ms / 3.0f;
  return status;
}

static void tsr_cuda_src_plan_release(void *ctx, void *plan) {
  (void)ctx;
  cudnnBackendDestroyDescriptor((cudnnBackendDescriptor_t)plan);
}

static void tsr_cuda_src_config_release(void *ctx, void *config) {
  (void)ctx;
  cudnnBackendDestroyDescriptor((cudnnBackendDescriptor_t)config);
}

// Scratch operands for autotune: contents do not matter, only their sizes.
#define TSR_CUDA_AUTOTUNE_WORKSPACE (256ull << 20)

static tsr_status tsr_cuda_autotune_scratch(const tsr_op_signature *signature,
                                            tsr_cuda_cudnn_source *src) {
  tsr_status status = tsr_cuda_check(cudaStreamCreateWithFlags(&src->stream, cudaStreamNonBlocking),
                                     "conv2d autotune", "cudaStreamCreateWithFlags");
  int32_t n_ops = signature->num_inputs + signature->num_outputs;
  for (int32_t i = 0; i < n_ops && i < 4 && status == TSR_OK; ++i) {
    const tsr_tensor_desc *d = i < signature->num_inputs
                                   ? &signature->inputs[i]
                                   : &signature->outputs[i - signature->num_inputs];
    uint64_t extent = 1;
    for (int32_t k = 0; k < d->rank; ++k) {
      if (d->sizes[k] == 0)
        extent = 0;
      else if (extent > 0)
        extent += (uint64_t)(d->sizes[k] - 1) * (uint64_t)d->strides[k];
    }
    status = tsr_cuda_check(cudaMalloc(&src->scratch[i], extent * tsr_dtype_size(d->dtype) + 256),
                            "conv2d autotune", "cudaMalloc");
  }
  src->workspace_bytes = TSR_CUDA_AUTOTUNE_WORKSPACE;
  if (status == TSR_OK && cudaMalloc(&src->workspace, src->workspace_bytes) != cudaSuccess) {
    // Less scratch: engines that need more are simply not preferred.
    (void)cudaGetLastError();
    src->workspace_bytes = 16ull << 20;
    status = tsr_cuda_check(cudaMalloc(&src->workspace, src->workspace_bytes), "conv2d autotune",
                            "cudaMalloc");
  }
  if (status == TSR_OK)
    status = tsr_cuda_cudnn_check(cudnnSetStream(src->handle, src->stream), "conv2d autotune",
                                  "cudnnSetStream");
  return status;
}

static void tsr_cuda_autotune_release(tsr_cuda_cudnn_source *src) {
  for (int i = 0; i < 4; ++i) {
    if (src->scratch[i] != NULL)
      cudaFree(src->scratch[i]);
  }
  if (src->workspace != NULL)
    cudaFree(src->workspace);
  if (src->stream != NULL)
    cudaStreamDestroy(src->stream);
}

// --- plans ---------------------------------------------------------------------

static tsr_status tsr_cuda_conv_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  const tsr_cuda_conv *conv = plan->impl;
  cudnnHandle_t handle = NULL;
  tsr_status status = tsr_cuda_cudnn_handle_get(plan->device, exec->stream->stream, &handle);
  if (status != TSR_OK)
    return status;
  int32_t out_index = plan->num_inputs;
  status = tsr_cuda_cudnn_execute(handle, conv->exec_plan, conv, exec->ptrs, exec->workspace);
  if (status != TSR_OK)
    return status;
  if (conv->own_bias_act) {
    return tsr_cuda_launch_channel_bias_act(
        conv->dtype, exec->ptrs[out_index], conv->has_bias_ptr ? exec->ptrs[2] : NULL,
        conv->activation, conv->n, conv->c, conv->h, conv->w, conv->strides, exec->stream->stream);
  }
  if (conv->own_dbias) {
    return tsr_cuda_launch_channel_sum(conv->dtype, exec->ptrs[0], conv->n, conv->c, conv->h,
                                       conv->w, conv->strides, exec->ptrs[out_index + 1],
                                       exec->stream->stream);
  }
  return TSR_OK;
}

static void tsr_cuda_conv_free(tsr_cuda_plan *plan) {
  tsr_cuda_conv *conv = plan->impl;
  if (conv != NULL && conv->exec_plan != NULL)
    cudnnBackendDestroyDescriptor(conv->exec_plan);
  free(conv);
  plan->impl = NULL;
}

static tsr_status tsr_cuda_conv_select(const tsr_op_signature *signature, cudnnHandle_t handle,
                                       int fuse, tsr_cuda_conv *conv,
                                       tsr_cuda_engine_choice *out_choice, int *out_from_pin) {
  tsr_cuda_graph graph;
  tsr_status status = tsr_cuda_graph_build(signature, handle, fuse, conv, &graph);
  if (status != TSR_OK)
    return status;
  tsr_cuda_cudnn_source src;
  memset(&src, 0, sizeof(src));
  src.handle = handle;
  src.graph = graph.graph;
  src.conv = conv;
  tsr_cuda_engine_source source = {&src,
                                   tsr_cuda_src_configs_get,
                                   tsr_cuda_src_notes_get,
                                   tsr_cuda_src_engine_id_get,
                                   tsr_cuda_src_plan_build,
                                   tsr_cuda_src_plan_time,
                                   tsr_cuda_src_plan_release,
                                   tsr_cuda_src_config_release};
  tsr_dtype_t dtype = signature->outputs[0].dtype;
  int strict_fp32 = dtype == TSR_FLOAT32 && signature->math_mode == TSR_MATH_STRICT;
  int deterministic = (signature->flags & TSR_PLAN_REQUIRE_DETERMINISM) != 0;
  tsr_cuda_engine_policy policy = {
      .forbidden_notes = tsr_cuda_engine_notes_forbidden(strict_fp32, deterministic),
      .autotune = (signature->flags & TSR_PLAN_AUTOTUNE) != 0,
      .autotune_limit = 8,
      .pinned_mode = -1,
      .pinned_rank = -1,
  };
  if (signature->math_mode != TSR_MATH_ALLOW_REDUCED)
    policy.forbidden_notes |= TSR_CUDA_NOTE_REDUCED_PRECISION_REDUCTION;
  tsr_cuda_plan_key key;
  int keyed = 0;
  *out_from_pin = 0;
  if (policy.autotune) {
    pthread_once(&g_pins_once, tsr_cuda_pins_init);
    keyed = tsr_cuda_plan_key_build(signature, NULL, &key) == TSR_OK;
    // The fused and the unfused graph are different problems.
    key.words[0] ^= (uint64_t)fuse << 63;
    tsr_cuda_engine_pin pin;
    if (keyed && tsr_cuda_pin_cache_lookup(&g_pins, &key, &pin)) {
      policy.pinned_mode = pin.mode;
      policy.pinned_rank = pin.rank;
      *out_from_pin = 1;
    } else {
      status = tsr_cuda_autotune_scratch(signature, &src);
    }
  }
  if (status == TSR_OK) {
    status = tsr_cuda_engine_select(&source, &policy, tsr_cuda_host(), tsr_op_name(signature->op),
                                    out_choice);
  }
  if (status == TSR_OK && policy.autotune && keyed && out_choice->timed > 0) {
    tsr_cuda_engine_pin pin = {out_choice->mode, out_choice->rank, out_choice->engine_id};
    tsr_cuda_pin_cache_insert(&g_pins, &key, &pin);
  }
  tsr_cuda_autotune_release(&src);
  tsr_cuda_graph_release(&graph);
  return status;
}

tsr_status tsr_cuda_conv_plan_init(const tsr_op_signature *signature, tsr_cuda_plan *plan) {
  tsr_cuda_conv *conv = calloc(1, sizeof(*conv));
  if (conv == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_OUT_OF_MEMORY,
                                      "%s: no host memory for the plan",
                                      tsr_op_name(signature->op));
  }
  plan->impl = conv;
  plan->free_impl = tsr_cuda_conv_free;
  plan->run = tsr_cuda_conv_run;
  tsr_conv2d_attrs attrs_copy;
  const tsr_conv2d_attrs *attrs = tsr_cuda_conv_attrs(signature, &attrs_copy);
  const tsr_tensor_desc *out = &signature->outputs[0];
  conv->dtype = out->dtype;
  conv->activation = attrs->activation;
  // Sizes and strides of y (forward) or dy (backward filter's dbias).
  const tsr_tensor_desc *nchw = signature->op == TSR_OP_CONV2D ? out : &signature->inputs[0];
  conv->n = nchw->sizes[0];
  conv->c = nchw->sizes[1];
  conv->h = nchw->sizes[2];
  conv->w = nchw->sizes[3];
  for (int i = 0; i < 4; ++i) conv->strides[i] = nchw->strides[i];
  for (int32_t i = 0; i < signature->num_inputs + signature->num_outputs; ++i) {
    const tsr_tensor_desc *d = i < signature->num_inputs
                                   ? &signature->inputs[i]
                                   : &signature->outputs[i - signature->num_inputs];
    for (int32_t k = 0; k < d->rank; ++k) {
      // cuDNN refuses empty tensors; the fallback handles the degenerate case.
      if (d->sizes[k] == 0) {
        return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_UNSUPPORTED,
                                          "%s: operand %d is empty; it runs on the fallback",
                                          tsr_op_name(signature->op), (int)i);
      }
    }
  }
  cudnnHandle_t handle = NULL;
  tsr_status status = tsr_cuda_cudnn_handle_get(plan->device, NULL, &handle);
  if (status != TSR_OK)
    return status;
  int wants_fusion = signature->op == TSR_OP_CONV2D &&
                     (attrs->has_bias || attrs->activation != TSR_ACTIVATION_NONE);
  tsr_cuda_engine_choice choice;
  int from_pin = 0;
  status = TSR_UNSUPPORTED;
  if (wants_fusion) {
    status = tsr_cuda_conv_select(signature, handle, 1, conv, &choice, &from_pin);
    conv->fused = status == TSR_OK;
  }
  // A fused graph cuDNN refuses in any way but running out of memory or
  // losing the device leaves the unfused graph to try.
  if (status != TSR_OK && status != TSR_OUT_OF_MEMORY && status != TSR_DEVICE_LOST) {
    status = tsr_cuda_conv_select(signature, handle, 0, conv, &choice, &from_pin);
    conv->own_bias_act = wants_fusion;
    conv->has_bias_ptr = signature->op == TSR_OP_CONV2D && attrs->has_bias;
    conv->own_dbias = signature->op == TSR_OP_CONV2D_BACKWARD_FILTER && attrs->has_bias;
  }
  if (status != TSR_OK)
    return status;
  conv->exec_plan = (cudnnBackendDescriptor_t)choice.plan;
  int64_t workspace = tsr_cuda_plan_workspace(conv->exec_plan);
  plan->workspace_bytes = workspace > 0 ? (uint64_t)workspace : 0;
  plan->info_flags =
      (choice.notes & TSR_CUDA_NOTE_NONDETERMINISTIC) ? 0 : TSR_PLAN_INFO_DETERMINISTIC;
  char tuned[48] = "";
  if (choice.timed > 0)
    snprintf(tuned, sizeof(tuned), ":tuned-%d-%.3fms", (int)choice.timed, choice.milliseconds);
  else if (from_pin)
    snprintf(tuned, sizeof(tuned), ":tuned-cached");
  snprintf(plan->engine, sizeof(plan->engine), "cuda:cudnn:eng%lld:heur-%s:rank%d%s%s%s",
           (long long)choice.engine_id, tsr_cuda_heur_mode_name(choice.mode), (int)choice.rank,
           (choice.notes & TSR_CUDA_NOTE_TENSOR_CORE) ? ":tensor-core" : "",
           conv->fused ? ":fused" : (conv->own_bias_act || conv->own_dbias ? "+own-epilogue" : ""),
           tuned);
  return TSR_OK;
}
