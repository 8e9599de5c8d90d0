// The CONV2D family through the cuDNN 9 backend (graph) API.
//
// plan_create builds an operation graph (one convolution node, plus bias
// add and activation nodes when CONV2D fuses them), asks the engine
// heuristics for configurations and lets engine_select.c pick one: mode A,
// then mode B, then the fallback list, filtering by numerical notes (no
// tensor-core engines in strict float32, no down-converting ones unless the
// math mode allows reduced precision, no non-deterministic ones when the
// plan must be reproducible) and timing candidates under TSR_PLAN_AUTOTUNE.
// The plan keeps the choice as a recipe (the signature, the engine's global
// index and its knob choices), and each executing thread builds its own
// execution plan from it on its own cuDNN handle (plan.c) on its first
// execution: cuDNN execution plans are not safe to share between threads.
// When no engine takes the fused graph, the convolution runs alone and an
// own kernel adds the bias and applies the activation.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_cpu/cpu_kernels.h"
#include "cuda_kernels.h"
#include "cuda_plan.h"
#include "engine_select.h"
#include "plan_key.h"

enum {
  TSR_CUDA_UID_BASE = 1,       // operand i has uid 1 + i (inputs, then outputs)
  TSR_CUDA_UID_VIRTUAL = 100,  // intermediate tensors of a fused graph
};

// Which operand each tensor uid an execution binds stands for.
typedef struct tsr_cuda_uid_map {
  int64_t uids[4];
  int32_t operands[4];
  int32_t count;
} tsr_cuda_uid_map;

// What an execution plan is built from besides the graph: the engine's
// global index and its knob choices, read from the configuration the
// selection chose, so that every thread can build its own plan of it.
typedef struct tsr_cuda_engine_recipe {
  int64_t engine_id;
  int32_t knob_count;
  cudnnBackendKnobType_t knob_types[CUDNN_KNOB_TYPE_COUNTS];
  int64_t knob_values[CUDNN_KNOB_TYPE_COUNTS];
} tsr_cuda_engine_recipe;

// Every descriptor of one operation graph, released together.
typedef struct tsr_cuda_graph {
  cudnnBackendDescriptor_t parts[16];
  int32_t count;
  cudnnBackendDescriptor_t graph;
} tsr_cuda_graph;

// One thread's execution plan of a convolution plan, built on that thread's
// cuDNN handle and run only by that thread: cuDNN execution plans are not
// safe to share between threads (PyTorch keeps them per thread for that
// reason), and a plan points to the handle it was built with. The node owns
// every descriptor the plan was built from, and a reference on the handle.
typedef struct tsr_cuda_conv_thread_plan {
  tsr_cuda_dnn_handle *dnn;
  tsr_cuda_graph graph;
  cudnnBackendDescriptor_t engine;
  cudnnBackendDescriptor_t knobs[CUDNN_KNOB_TYPE_COUNTS];
  int32_t knob_count;
  cudnnBackendDescriptor_t config;
  cudnnBackendDescriptor_t exec_plan;
  struct tsr_cuda_conv_thread_plan *next;
} tsr_cuda_conv_thread_plan;

typedef struct tsr_cuda_conv {
  // The recipe of every thread's execution plan: the signature (copied, its
  // attributes with their defaults filled in), whether the graph is fused,
  // and the chosen engine with its knobs.
  tsr_op_signature signature;
  tsr_tensor_desc inputs[TSR_MAX_OPERANDS];
  tsr_tensor_desc outputs[TSR_MAX_OPERANDS];
  tsr_conv2d_attrs attrs;
  tsr_cuda_engine_recipe recipe;
  tsr_cuda_uid_map map;
  // The threads' execution plans: pushed lock-free on a thread's first
  // execution, read lock-free, released with the plan.
  _Atomic(tsr_cuda_conv_thread_plan *) thread_plans;
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

static void tsr_cuda_graph_release(tsr_cuda_graph *g) {
  if (g->graph != NULL)
    cudnnBackendDestroyDescriptor(g->graph);
  for (int32_t i = g->count - 1; i >= 0; --i) cudnnBackendDestroyDescriptor(g->parts[i]);
  memset(g, 0, sizeof(*g));
}

// Builds the graph of |signature|; with |fuse|, CONV2D's bias and activation
// become pointwise nodes. Records the uids the execution binds in |map|.
static tsr_status tsr_cuda_graph_build(const tsr_op_signature *signature, cudnnHandle_t handle,
                                       int fuse, tsr_cuda_uid_map *map, tsr_cuda_graph *g) {
  tsr_status status = TSR_OK;
  tsr_conv2d_attrs attrs_copy;
  const tsr_conv2d_attrs *attrs = tsr_cuda_conv_attrs(signature, &attrs_copy);
  tsr_dtype_t dtype = signature->outputs[0].dtype;
  cudnnDataType_t data = tsr_cuda_cudnn_type(dtype);
  cudnnDataType_t compute = dtype == TSR_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  memset(g, 0, sizeof(*g));
  map->count = 0;
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
      map->uids[map->count] = uid;
      map->operands[map->count++] = index;
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
      map->uids[map->count] = TSR_CUDA_UID_BASE + 2;
      map->operands[map->count++] = 2;
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
    map->uids[map->count] = TSR_CUDA_UID_BASE + out_index;
    map->operands[map->count++] = out_index;
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
  const tsr_cuda_uid_map *map;
  const tsr_op_signature *signature;
  int32_t device;
  // Autotune, made by timing_prepare: scratch operands and a workspace from
  // the plugin's allocator (its cap counts them, and a miss costs one
  // cudaMalloc rather than a cudaMalloc and a synchronising cudaFree), and a
  // stream of the plugin's own to time on (tune.stream NULL until then).
  tsr_cuda_stream tune;
  tsr_cuda_block *blocks[5];  // operands 0..3, then the workspace
  void *scratch[4];
  void *workspace;
  uint64_t workspace_bytes;
  char refusal[512];  // why the last configuration or mode was refused
} tsr_cuda_cudnn_source;

// Classifies a failed cudnnBackendFinalize of |what|: the "not supported"
// family means this configuration or mode does not take the problem
// (TSR_UNSUPPORTED, the reason kept in |src|); any other status is a failure
// of its own and is reported as such, with cuDNN's words.
static tsr_status tsr_cuda_src_refusal(tsr_cuda_cudnn_source *src, cudnnStatus_t status,
                                       const char *what) {
  if (CUDNN_STATUS_CATEGORY(status) != CUDNN_STATUS_NOT_SUPPORTED)
    return tsr_cuda_cudnn_check(status, tsr_op_name(src->signature->op), what);
  char last[256];
  last[0] = '\0';
  cudnnGetLastErrorString(last, sizeof(last));
  snprintf(src->refusal, sizeof(src->refusal), "%s: %s (%d)%s%.255s", what,
           cudnnGetErrorString(status), (int)status, last[0] != '\0' ? ": " : "", last);
  return TSR_UNSUPPORTED;
}

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
  cudnnStatus_t finalized = cudnnBackendFinalize(heur);
  if (finalized != CUDNN_STATUS_SUCCESS) {
    // A mode that does not apply to this graph offers nothing; any other
    // failure is reported as itself.
    status = tsr_cuda_src_refusal(src, finalized, "heuristics finalize");
    if (status == TSR_UNSUPPORTED)
      status = TSR_OK;
    goto done;
  }
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

// Reads the engine's global index and the knob choices of |config|.
static tsr_status tsr_cuda_recipe_read(cudnnBackendDescriptor_t config,
                                       tsr_cuda_engine_recipe *out) {
  tsr_status status = TSR_OK;
  cudnnBackendDescriptor_t knobs[CUDNN_KNOB_TYPE_COUNTS];
  int32_t made = 0;
  int64_t got = 0;
  memset(out, 0, sizeof(*out));
  out->engine_id = tsr_cuda_src_engine_id_get(NULL, config);
  if (out->engine_id < 0) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INTERNAL,
                                      "conv2d: the chosen engine configuration has no engine "
                                      "index");
  }
  // cuDNN fills descriptors the caller made, as for heuristics results.
  for (; made < CUDNN_KNOB_TYPE_COUNTS; ++made) {
    TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[made]),
              "knob choice create");
  }
  TSR_CUDNN(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS, &got,
                                     knobs),
            "engine config knob choices");
  if (got > CUDNN_KNOB_TYPE_COUNTS)
    got = CUDNN_KNOB_TYPE_COUNTS;
  for (int64_t i = 0; i < got; ++i) {
    int64_t n = 0;
    TSR_CUDNN(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                       CUDNN_TYPE_KNOB_TYPE, 1, &n, &out->knob_types[i]),
              "knob choice type");
    TSR_CUDNN(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                       CUDNN_TYPE_INT64, 1, &n, &out->knob_values[i]),
              "knob choice value");
  }
  out->knob_count = (int32_t)got;
done:
  for (int32_t i = 0; i < made; ++i) cudnnBackendDestroyDescriptor(knobs[i]);
  return status;
}

// A candidate as the selection sees it: the finalised execution plan (on the
// selecting thread's handle, used for timing only) and the recipe to build
// it again on any thread.
typedef struct tsr_cuda_built {
  cudnnBackendDescriptor_t exec_plan;
  tsr_cuda_engine_recipe recipe;
} tsr_cuda_built;

static tsr_status tsr_cuda_src_plan_build(void *ctx, void *config, void **out_plan) {
  tsr_cuda_cudnn_source *src = ctx;
  cudnnBackendDescriptor_t plan = NULL;
  cudnnBackendDescriptor_t cfg = (cudnnBackendDescriptor_t)config;
  tsr_status status = TSR_OK;
  tsr_cuda_built *built = calloc(1, sizeof(*built));
  if (built == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_OUT_OF_MEMORY,
                                      "conv2d: no host memory for a candidate plan");
  }
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan),
            "execution plan create");
  TSR_CUDNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &src->handle),
            "execution plan handle");
  TSR_CUDNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg),
            "execution plan config");
  cudnnStatus_t finalized = cudnnBackendFinalize(plan);
  if (finalized != CUDNN_STATUS_SUCCESS) {
    status = tsr_cuda_src_refusal(src, finalized, "execution plan finalize");
    goto done;
  }
  status = tsr_cuda_recipe_read(cfg, &built->recipe);
  if (status != TSR_OK)
    goto done;
  built->exec_plan = plan;
  *out_plan = built;
  return TSR_OK;
done:
  if (plan != NULL)
    cudnnBackendDestroyDescriptor(plan);
  free(built);
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
                                         const tsr_cuda_uid_map *map, void *const *ptrs,
                                         void *workspace) {
  tsr_status status = TSR_OK;
  cudnnBackendDescriptor_t pack = NULL;
  void *data[4];
  for (int32_t i = 0; i < map->count; ++i) data[i] = ptrs[map->operands[i]];
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack),
            "variant pack create");
  TSR_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                     map->count, map->uids),
            "variant pack uids");
  TSR_CUDNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                     CUDNN_TYPE_VOID_PTR, map->count, data),
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
  cudnnBackendDescriptor_t plan = ((const tsr_cuda_built *)plan_ptr)->exec_plan;
  int64_t need = tsr_cuda_plan_workspace(plan);
  if (src->tune.stream == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INTERNAL,
                                      "%s autotune: timing asked before its buffers were made",
                                      tsr_op_name(src->signature->op));
  }
  if (need < 0 || (uint64_t)need > src->workspace_bytes) {
    *out_ms = 1e30f;  // needs more scratch than autotune could set aside: never preferred
    return TSR_OK;
  }
  cudaEvent_t start = NULL, end = NULL;
  tsr_status status = tsr_cuda_check(cudaEventCreate(&start), "conv2d autotune", "cudaEventCreate");
  if (status == TSR_OK)
    status = tsr_cuda_check(cudaEventCreate(&end), "conv2d autotune", "cudaEventCreate");
  // One warm-up, then three timed runs.
  if (status == TSR_OK)
    status = tsr_cuda_cudnn_execute(src->handle, plan, src->map, src->scratch, src->workspace);
  if (status == TSR_OK)
    status = tsr_cuda_check(cudaEventRecord(start, src->tune.stream), "conv2d autotune",
                            "cudaEventRecord");
  for (int i = 0; i < 3 && status == TSR_OK; ++i)
    status = tsr_cuda_cudnn_execute(src->handle, plan, src->map, src->scratch, src->workspace);
  if (status == TSR_OK)
    status = tsr_cuda_check(cudaEventRecord(end, src->tune.stream), "conv2d autotune",
                            "cudaEventRecord");
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
  tsr_cuda_built *built = plan;
  cudnnBackendDestroyDescriptor(built->exec_plan);
  free(built);
}

static void tsr_cuda_src_config_release(void *ctx, void *config) {
  (void)ctx;
  cudnnBackendDestroyDescriptor((cudnnBackendDescriptor_t)config);
}

// last_refusal (engine_select.h): what tsr_cuda_src_refusal kept.
static const char *tsr_cuda_src_last_refusal(void *ctx) {
  return ((const tsr_cuda_cudnn_source *)ctx)->refusal;
}

// One block of at least |bytes| from the plugin's allocator, for work on the
// autotune stream.
static tsr_status tsr_cuda_tune_alloc(tsr_cuda_cudnn_source *src, uint64_t bytes,
                                      tsr_cuda_block **out_block) {
  return tsr_cuda_allocator_alloc(tsr_cuda_allocator_of(src->device), tsr_cuda_host(), bytes,
                                  &src->tune, src->tune.id, out_block);
}

// timing_prepare (engine_select.h): a stream, scratch operands (contents do
// not matter, only their extents) and a workspace for the largest need among
// |plans|; when that much is not to be had, the smallest need, and the
// candidates that need more are timed as never preferred.
static tsr_status tsr_cuda_src_timing_prepare(void *ctx, void *const *plans, int32_t count) {
  tsr_cuda_cudnn_source *src = ctx;
  const tsr_op_signature *signature = src->signature;
  cudaStream_t native = NULL;
  tsr_status status = tsr_cuda_check(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking),
                                     "conv2d autotune", "cudaStreamCreateWithFlags");
  if (status != TSR_OK)
    return status;
  // A plugin stream with an id of its own: blocks freed on it are not taken
  // by a later stream that happens to get the same cudaStream_t address.
  src->tune.device = src->device;
  src->tune.owned = 1;
  src->tune.stream = native;
  src->tune.id = tsr_cuda_stream_id_next();
  src->tune.error_word = NULL;  // cuDNN's kernels report no data errors
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
    status = tsr_cuda_tune_alloc(src, extent * tsr_dtype_size(d->dtype), &src->blocks[i]);
    if (status == TSR_OK)
      src->scratch[i] = src->blocks[i]->ptr;
  }
  int64_t most = 0, least = -1;
  for (int32_t i = 0; i < count; ++i) {
    int64_t need = tsr_cuda_plan_workspace(((const tsr_cuda_built *)plans[i])->exec_plan);
    if (need > most)
      most = need;
    if (need >= 0 && (least < 0 || need < least))
      least = need;
  }
  if (status == TSR_OK && most > 0) {
    status = tsr_cuda_tune_alloc(src, (uint64_t)most, &src->blocks[4]);
    if (status == TSR_OUT_OF_MEMORY && least >= 0 && least < most) {
      status = least > 0 ? tsr_cuda_tune_alloc(src, (uint64_t)least, &src->blocks[4]) : TSR_OK;
      most = least;
    }
    if (status == TSR_OK && src->blocks[4] != NULL)
      src->workspace = src->blocks[4]->ptr;
  }
  if (status == TSR_OK) {
    src->workspace_bytes = (uint64_t)most;
    status = tsr_cuda_cudnn_check(cudnnSetStream(src->handle, native), "conv2d autotune",
                                  "cudnnSetStream");
  }
  return status;
}

// Gives back what timing_prepare made. The handle is bound to the legacy
// default stream again first: it must not stay bound to a destroyed stream.
// The blocks go back to the cache stream-ordered (no device sync); the
// stream is destroyed once its queued work is done (cudaStreamDestroy does
// not wait).
static void tsr_cuda_autotune_release(tsr_cuda_cudnn_source *src) {
  if (src->tune.stream == NULL)
    return;
  (void)cudnnSetStream(src->handle, NULL);
  for (int i = 0; i < 5; ++i) {
    if (src->blocks[i] != NULL) {
      (void)tsr_cuda_allocator_free(tsr_cuda_allocator_of(src->device), tsr_cuda_host(),
                                    src->blocks[i], &src->tune, src->tune.id);
    }
    src->blocks[i] = NULL;
  }
  (void)cudaStreamDestroy(src->tune.stream);
  (void)cudaGetLastError();
  src->tune.stream = NULL;
}

// --- plans ---------------------------------------------------------------------

// Destroys |node|'s descriptors, then drops its reference on the handle.
static void tsr_cuda_thread_plan_free(tsr_cuda_conv_thread_plan *node) {
  if (node->exec_plan != NULL)
    cudnnBackendDestroyDescriptor(node->exec_plan);
  if (node->config != NULL)
    cudnnBackendDestroyDescriptor(node->config);
  for (int32_t i = 0; i < node->knob_count; ++i) cudnnBackendDestroyDescriptor(node->knobs[i]);
  if (node->engine != NULL)
    cudnnBackendDestroyDescriptor(node->engine);
  tsr_cuda_graph_release(&node->graph);
  // Last: the descriptors above point to the handle.
  if (node->dnn != NULL)
    tsr_cuda_dnn_handle_release(node->dnn);
  free(node);
}

// Builds on |dnn| the execution plan |conv|'s recipe describes: its graph,
// the engine by global index, the knob choices, the configuration and the
// plan, all owned by the returned node, which holds a reference on |dnn|.
static tsr_status tsr_cuda_thread_plan_build(const tsr_cuda_conv *conv, tsr_cuda_dnn_handle *dnn,
                                             tsr_cuda_conv_thread_plan **out_node) {
  const char *op = tsr_op_name(conv->signature.op);
  const tsr_cuda_engine_recipe *r = &conv->recipe;
  tsr_cuda_conv_thread_plan *node = calloc(1, sizeof(*node));
  if (node == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_OUT_OF_MEMORY,
                                      "%s: no host memory for this thread's execution plan", op);
  }
  tsr_cuda_uid_map map;
  tsr_status status =
      tsr_cuda_graph_build(&conv->signature, dnn->handle, conv->fused, &map, &node->graph);
  if (status != TSR_OK)
    goto done;
  if (map.count != conv->map.count ||
      memcmp(map.uids, conv->map.uids, sizeof(map.uids[0]) * (size_t)map.count) != 0) {
    status = tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INTERNAL,
                                        "%s: the graph built again binds other tensors", op);
    goto done;
  }
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &node->engine),
            "engine create");
  TSR_CUDNN(cudnnBackendSetAttribute(node->engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &node->graph.graph),
            "engine graph");
  TSR_CUDNN(cudnnBackendSetAttribute(node->engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                     CUDNN_TYPE_INT64, 1, &r->engine_id),
            "engine global index");
  TSR_CUDNN(cudnnBackendFinalize(node->engine), "engine finalize");
  for (int32_t i = 0; i < r->knob_count; ++i) {
    TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &node->knobs[i]),
              "knob choice create");
    node->knob_count = i + 1;
    TSR_CUDNN(cudnnBackendSetAttribute(node->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                       CUDNN_TYPE_KNOB_TYPE, 1, &r->knob_types[i]),
              "knob choice type");
    TSR_CUDNN(cudnnBackendSetAttribute(node->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                       CUDNN_TYPE_INT64, 1, &r->knob_values[i]),
              "knob choice value");
    TSR_CUDNN(cudnnBackendFinalize(node->knobs[i]), "knob choice finalize");
  }
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &node->config),
            "engine config create");
  TSR_CUDNN(cudnnBackendSetAttribute(node->config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &node->engine),
            "engine config engine");
  if (node->knob_count > 0) {
    TSR_CUDNN(cudnnBackendSetAttribute(node->config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, node->knob_count,
                                       node->knobs),
              "engine config knob choices");
  }
  TSR_CUDNN(cudnnBackendFinalize(node->config), "engine config finalize");
  TSR_CUDNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &node->exec_plan),
            "execution plan create");
  TSR_CUDNN(cudnnBackendSetAttribute(node->exec_plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                     CUDNN_TYPE_HANDLE, 1, &dnn->handle),
            "execution plan handle");
  TSR_CUDNN(cudnnBackendSetAttribute(node->exec_plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &node->config),
            "execution plan config");
  TSR_CUDNN(cudnnBackendFinalize(node->exec_plan), "execution plan finalize");
  tsr_cuda_dnn_handle_retain(dnn);
  node->dnn = dnn;
  *out_node = node;
  return TSR_OK;
done:
  tsr_cuda_thread_plan_free(node);
  return status;
}

// Publishes |node| to every thread's lookups.
static void tsr_cuda_thread_plan_push(tsr_cuda_conv *conv, tsr_cuda_conv_thread_plan *node) {
  tsr_cuda_conv_thread_plan *head = atomic_load_explicit(&conv->thread_plans, memory_order_relaxed);
  do {
    node->next = head;
  } while (!atomic_compare_exchange_weak_explicit(&conv->thread_plans, &head, node,
                                                  memory_order_release, memory_order_relaxed));
}

// The execution plan of |conv| on |dnn|, the calling thread's handle: found
// without a lock or an allocation, or built on the thread's first execution
// (a handle is one thread's, so no two threads build for the same one).
static tsr_status tsr_cuda_thread_plan_get(const tsr_cuda_plan *plan, tsr_cuda_conv *conv,
                                           tsr_cuda_dnn_handle *dnn,
                                           cudnnBackendDescriptor_t *out_exec_plan) {
  for (tsr_cuda_conv_thread_plan *node =
           atomic_load_explicit(&conv->thread_plans, memory_order_acquire);
       node != NULL; node = node->next) {
    if (node->dnn == dnn) {
      *out_exec_plan = node->exec_plan;
      return TSR_OK;
    }
  }
  tsr_cuda_conv_thread_plan *node = NULL;
  tsr_status status = tsr_cuda_thread_plan_build(conv, dnn, &node);
  if (status != TSR_OK)
    return status;
  // The core sized the workspace by the plan's report.
  int64_t need = tsr_cuda_plan_workspace(node->exec_plan);
  if (need < 0 || (uint64_t)need > plan->workspace_bytes) {
    tsr_cuda_thread_plan_free(node);
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INTERNAL,
                                      "%s: this thread's execution plan needs %lld bytes of "
                                      "workspace, more than the plan's %llu",
                                      tsr_op_name(plan->op), (long long)need,
                                      (unsigned long long)plan->workspace_bytes);
  }
  tsr_cuda_thread_plan_push(conv, node);
  *out_exec_plan = node->exec_plan;
  return TSR_OK;
}

static tsr_status tsr_cuda_conv_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  tsr_cuda_conv *conv = plan->impl;
  tsr_cuda_dnn_handle *dnn = NULL;
  tsr_status status = tsr_cuda_dnn_handle_get(plan->device, exec->stream->stream, &dnn);
  cudnnBackendDescriptor_t exec_plan = NULL;
  if (status == TSR_OK)
    status = tsr_cuda_thread_plan_get(plan, conv, dnn, &exec_plan);
  if (status != TSR_OK)
    return status;
  int32_t out_index = plan->num_inputs;
  status = tsr_cuda_cudnn_execute(dnn->handle, exec_plan, &conv->map, exec->ptrs, exec->workspace);
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
  if (conv != NULL) {
    tsr_cuda_conv_thread_plan *node = atomic_load(&conv->thread_plans);
    while (node != NULL) {
      tsr_cuda_conv_thread_plan *next = node->next;
      tsr_cuda_thread_plan_free(node);
      node = next;
    }
  }
  free(conv);
  plan->impl = NULL;
}

// The engine cache's plugin key for |device|: what the choice depends on
// besides the machine (the core adds the plugin build, CPU and threads):
// the GPU, its driver and cuDNN. 0 when the driver cannot say.
static int tsr_cuda_pin_plugin_key(int32_t device, char *out, size_t size) {
  struct cudaDeviceProp prop;
  int driver = 0;
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
      cudaDriverGetVersion(&driver) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  prop.name[sizeof(prop.name) - 1] = '\0';
  int n = snprintf(out, size, "cuda %s sm%d%d driver %d cudnn %zu", prop.name, prop.major,
                   prop.minor, driver, cudnnGetVersion());
  if (n <= 0 || (size_t)n >= size)
    return 0;
  for (char *p = out; *p; ++p) {
    if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
      *p = '?';
  }
  return 1;
}

// The pin the engine cache holds for |key| (another process timed it).
static int tsr_cuda_pin_stored(const char *plugin_key, const tsr_cuda_plan_key *key,
                               tsr_cuda_engine_pin *out_pin) {
  const tsr_host_api *host = tsr_cuda_host();
  if (!TSR_ABI_HAS(host, tsr_host_api, engine_cache_get))
    return 0;
  char class_key[TSR_CUDA_PIN_CLASS_KEY_SIZE], value[TSR_CUDA_PIN_VALUE_SIZE];
  tsr_cuda_pin_class_key(key, class_key);
  size_t bytes = sizeof(value);
  return host->engine_cache_get(host->ctx, plugin_key, class_key, value, &bytes) == TSR_OK &&
         tsr_cuda_pin_parse(value, bytes, out_pin);
}

static void tsr_cuda_pin_store(const char *plugin_key, const tsr_cuda_plan_key *key,
                               const tsr_cuda_engine_pin *pin) {
  const tsr_host_api *host = tsr_cuda_host();
  if (!TSR_ABI_HAS(host, tsr_host_api, engine_cache_put))
    return;
  char class_key[TSR_CUDA_PIN_CLASS_KEY_SIZE], value[TSR_CUDA_PIN_VALUE_SIZE];
  tsr_cuda_pin_class_key(key, class_key);
  size_t bytes = tsr_cuda_pin_format(pin, value);
  if (bytes > 0)
    (void)host->engine_cache_put(host->ctx, plugin_key, class_key, value, bytes);
}

static tsr_status tsr_cuda_conv_select(const tsr_op_signature *signature, cudnnHandle_t handle,
                                       int fuse, tsr_cuda_conv *conv,
                                       tsr_cuda_engine_choice *out_choice, int *out_from_pin) {
  tsr_cuda_graph graph;
  tsr_status status = tsr_cuda_graph_build(signature, handle, fuse, &conv->map, &graph);
  if (status != TSR_OK)
    return status;
  tsr_cuda_cudnn_source src;
  memset(&src, 0, sizeof(src));
  src.handle = handle;
  src.graph = graph.graph;
  src.map = &conv->map;
  src.signature = signature;
  src.device = signature->device;
  tsr_cuda_engine_source source = {&src,
                                   tsr_cuda_src_configs_get,
                                   tsr_cuda_src_notes_get,
                                   tsr_cuda_src_engine_id_get,
                                   tsr_cuda_src_plan_build,
                                   tsr_cuda_src_timing_prepare,
                                   tsr_cuda_src_plan_time,
                                   tsr_cuda_src_plan_release,
                                   tsr_cuda_src_config_release,
                                   tsr_cuda_src_last_refusal};
  int deterministic = (signature->flags & TSR_PLAN_REQUIRE_DETERMINISM) != 0;
  tsr_cuda_engine_policy policy = {
      .forbidden_notes = tsr_cuda_engine_notes_forbidden(signature->outputs[0].dtype,
                                                         signature->math_mode, deterministic),
      .autotune = (signature->flags & TSR_PLAN_AUTOTUNE) != 0,
      .autotune_limit = 8,
      .pinned_mode = -1,
      .pinned_rank = -1,
  };
  tsr_cuda_plan_key key;
  int keyed = 0;
  char plugin_key[TSR_ENGINE_CACHE_KEY_MAX];
  int stored = 0;  // plugin_key is set: the engine cache may hold the pin
  *out_from_pin = 0;
  if (policy.autotune) {
    pthread_once(&g_pins_once, tsr_cuda_pins_init);
    keyed = tsr_cuda_plan_key_build(signature, NULL, &key) == TSR_OK;
    // The fused and the unfused graph are different problems.
    key.words[0] ^= (uint64_t)fuse << 63;
    stored = keyed && tsr_cuda_pin_plugin_key(signature->device, plugin_key, sizeof(plugin_key));
    tsr_cuda_engine_pin pin;
    // No buffers yet: the selection asks for them (timing_prepare) only if
    // it comes to time something, the pin failing to build included. A pin
    // from the engine cache (an earlier process) counts like one of ours.
    int pinned = keyed && tsr_cuda_pin_cache_lookup(&g_pins, &key, &pin);
    if (!pinned && stored && tsr_cuda_pin_stored(plugin_key, &key, &pin)) {
      tsr_cuda_pin_cache_insert(&g_pins, &key, &pin);
      pinned = 1;
    }
    if (pinned) {
      policy.pinned_mode = pin.mode;
      policy.pinned_rank = pin.rank;
      *out_from_pin = 1;
    }
  }
  if (status == TSR_OK) {
    status = tsr_cuda_engine_select(&source, &policy, tsr_cuda_host(), tsr_op_name(signature->op),
                                    out_choice);
  }
  if (status == TSR_OK && policy.autotune && keyed && out_choice->timed > 0) {
    tsr_cuda_engine_pin pin = {out_choice->mode, out_choice->rank, out_choice->engine_id};
    tsr_cuda_pin_cache_insert(&g_pins, &key, &pin);
    if (stored)
      tsr_cuda_pin_store(plugin_key, &key, &pin);
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
  atomic_init(&conv->thread_plans, NULL);
  const tsr_conv2d_attrs *attrs = tsr_cuda_conv_attrs(signature, &conv->attrs);
  // The recipe's own copy of the signature: other threads build from it
  // after plan_create has returned and the caller's signature is gone.
  conv->signature = *signature;
  memcpy(conv->inputs, signature->inputs,
         sizeof(conv->inputs[0]) * (size_t)signature->num_inputs);
  memcpy(conv->outputs, signature->outputs,
         sizeof(conv->outputs[0]) * (size_t)signature->num_outputs);
  conv->signature.inputs = conv->inputs;
  conv->signature.outputs = conv->outputs;
  conv->signature.attrs = &conv->attrs;
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
  tsr_cuda_dnn_handle *dnn = NULL;
  tsr_status status = tsr_cuda_dnn_handle_get(plan->device, NULL, &dnn);
  if (status != TSR_OK)
    return status;
  cudnnHandle_t handle = dnn->handle;
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
  // The selection's plan served the choice (and the timing) only: every
  // thread, this one included, runs a plan of its own built from the recipe,
  // which this first build also proves.
  tsr_cuda_built *built = choice.plan;
  conv->recipe = built->recipe;
  tsr_cuda_src_plan_release(NULL, built);
  tsr_cuda_conv_thread_plan *node = NULL;
  status = tsr_cuda_thread_plan_build(conv, dnn, &node);
  if (status != TSR_OK)
    return status;
  int64_t workspace = tsr_cuda_plan_workspace(node->exec_plan);
  tsr_cuda_thread_plan_push(conv, node);
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
