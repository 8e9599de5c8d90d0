// A complete Tessera plugin for a CPU-like device: five ops in float32 on
// contiguous tensors (BINARY add and mul, UNARY relu, MATMUL of rank 2,
// REDUCE sum), built on the plugin kit (tessera/plugin_kit.h).
//
// The kit supplies the device (host memory, a caching allocator, synchronous
// streams and events), checks every request against the catalogue's rules
// and answers for everything not declared below, so what is left here is the
// declarations and the arithmetic. docs/writing-a-plugin.md walks through it;
// `tsr-conformance --plugin ./libtessera-five.so` certifies it.
#include <string.h>

#include "tessera/plugin_kit.h"

#define F32 TSR_DTYPE_BIT(TSR_FLOAT32)

// Attribute |field| of |type| at |attrs| as a double, or |fallback| where the
// caller's struct is absent or too old to hold it.
#define ATTR(type, attrs, field, fallback)                               \
  ((attrs) != NULL && TSR_ABI_COVERS((const type *)(attrs), type, field) \
       ? (double)((const type *)(attrs))->field                          \
       : (double)(fallback))

// out = a + alpha * b, or a * b. Operands have one shape (TSR_KIT_SAME_SHAPE)
// and may alias: each element is read before it is written.
static tsr_status binary(const tsr_kit_call *call) {
  const float *a = call->inputs[0], *b = call->inputs[1];
  float *out = call->outputs[0];
  int mul = ATTR(tsr_binary_attrs, call->attrs, fn, TSR_BINARY_ADD) == TSR_BINARY_MUL;
  float alpha = (float)ATTR(tsr_binary_attrs, call->attrs, alpha, 1.0);
  for (int64_t i = 0; i < call->numel; ++i) out[i] = mul ? a[i] * b[i] : a[i] + alpha * b[i];
  return TSR_OK;
}

// max(x, 0), written so that NaN stays NaN as the catalogue asks.
static tsr_status relu(const tsr_kit_call *call) {
  const float *x = call->inputs[0];
  float *out = call->outputs[0];
  for (int64_t i = 0; i < call->numel; ++i) out[i] = x[i] < 0.0f ? 0.0f : x[i];
  return TSR_OK;
}

// out[M, N] = alpha * a[M, K] @ b[K, N] + beta * out, summed in double.
static tsr_status matmul(const tsr_kit_call *call) {
  const tsr_tensor_desc *ad = &call->args->inputs[0], *bd = &call->args->inputs[1];
  int64_t m = ad->sizes[0], k = ad->sizes[1], n = bd->sizes[1];
  const float *a = call->inputs[0], *b = call->inputs[1];
  float *out = call->outputs[0];
  double alpha = ATTR(tsr_matmul_attrs, call->attrs, alpha, 1.0);
  double beta = ATTR(tsr_matmul_attrs, call->attrs, beta, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) sum += (double)a[i * k + p] * b[p * n + j];
      double before = beta != 0.0 ? beta * out[i * n + j] : 0.0;
      out[i * n + j] = (float)(alpha * sum + before);
    }
  }
  return TSR_OK;
}

// Sums x over the axes in axes_mask into out (x's rank, size 1 there).
// Walks x in order, keeping the index of the output element it adds into.
static tsr_status reduce_sum(const tsr_kit_call *call) {
  const tsr_tensor_desc *xd = &call->args->inputs[0];
  uint32_t mask = (uint32_t)ATTR(tsr_reduce_attrs, call->attrs, axes_mask, 0);
  const float *x = call->inputs[0];
  float *out = call->outputs[0];
  int64_t index[TSR_MAX_RANK] = {0}, out_stride[TSR_MAX_RANK], total = 1, at_out = 0, s = 1;
  for (int32_t d = xd->rank - 1; d >= 0; --d) {
    out_stride[d] = (mask >> d) & 1 ? 0 : s;
    s *= (mask >> d) & 1 ? 1 : xd->sizes[d];
    total *= xd->sizes[d];
  }
  for (int64_t i = 0; i < call->numel; ++i) out[i] = 0.0f;
  for (int64_t i = 0; i < total; ++i) {
    out[at_out] += x[i];
    for (int32_t d = xd->rank - 1; d >= 0; --d) {  // the next index, last axis fastest
      at_out += out_stride[d];
      if (++index[d] < xd->sizes[d]) break;
      at_out -= out_stride[d] * index[d];
      index[d] = 0;
    }
  }
  return TSR_OK;
}

// What this plugin implements; the kit refuses everything else, with the
// status docs/abi.md asks for and a message naming what is missing.
static const tsr_kit_op ops[] = {
    {.op = TSR_OP_BINARY, .dtypes = F32, .kernel = binary, .engine = "five:binary",
     .selectors = TSR_KIT_SELECTOR(TSR_BINARY_ADD) | TSR_KIT_SELECTOR(TSR_BINARY_MUL),
     .flags = TSR_KIT_CONTIGUOUS | TSR_KIT_SAME_SHAPE},
    {.op = TSR_OP_UNARY, .dtypes = F32, .kernel = relu, .engine = "five:relu",
     .selectors = TSR_KIT_SELECTOR(TSR_UNARY_RELU), .flags = TSR_KIT_CONTIGUOUS},
    {.op = TSR_OP_MATMUL, .dtypes = F32, .kernel = matmul, .engine = "five:matmul",
     .selectors = TSR_KIT_SELECTOR(TSR_ACTIVATION_NONE), .flags = TSR_KIT_CONTIGUOUS,
     .min_rank = 2, .max_rank = 2},
    {.op = TSR_OP_REDUCE, .dtypes = F32, .kernel = reduce_sum, .engine = "five:reduce_sum",
     .selectors = TSR_KIT_SELECTOR(TSR_REDUCE_SUM), .flags = TSR_KIT_CONTIGUOUS},
};

static tsr_plugin_api api;

// The plugin's one exported symbol: checks the host, then fills the table.
TSR_ABI_EXPORT tsr_status tsr_plugin_entry(const tsr_host_api *host,
                                           const tsr_plugin_api **out_api) {
  if (out_api == NULL)
    return TSR_INVALID_ARGUMENT;
  *out_api = NULL;
  tsr_status status = tsr_kit_entry_begin("five", host);
  if (status != TSR_OK)
    return status;
  tsr_kit_table_init(&api, "0.1.0", "Tessera examples", "five ops on the plugin kit");
  tsr_kit_device_desc device = {.name = "five-op example device (host memory)",
                                .dtype_mask = F32};
  tsr_kit_host_device_set(&api, &device);
  tsr_kit_ops_set(&api, ops, (int32_t)(sizeof(ops) / sizeof(ops[0])));
  *out_api = &api;
  return TSR_OK;
}
