// The oracle's dispatcher: which file models which op.
#include <stdlib.h>
#include <string.h>

#include "oracle_internal.h"

typedef tsr_status (*oracle_fn)(tsr_oracle_call *call);

static oracle_fn oracle_for(int32_t op) {
  switch (op) {
    case TSR_OP_FILL:
    case TSR_OP_COPY:
    case TSR_OP_CAST:
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE:
    case TSR_OP_WHERE:
    case TSR_OP_CLAMP:
      return tsr_oracle_elementwise_compute;
    case TSR_OP_REDUCE:
    case TSR_OP_ARG_REDUCE:
      return tsr_oracle_reduce_compute;
    case TSR_OP_MATMUL:
      return tsr_oracle_matmul_compute;
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      return tsr_oracle_conv_compute;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
      return tsr_oracle_pool_compute;
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
      return tsr_oracle_softmax_compute;
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD:
    case TSR_OP_BATCH_NORM:
    case TSR_OP_BATCH_NORM_BACKWARD:
      return tsr_oracle_norm_compute;
    case TSR_OP_CONCAT:
    case TSR_OP_PAD:
    case TSR_OP_GATHER:
    case TSR_OP_SCATTER_ADD:
      return tsr_oracle_layout_compute;
    case TSR_OP_RNG_FILL:
      return tsr_oracle_rng_compute;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD:
      return tsr_oracle_loss_compute;
    case TSR_OP_SGD_UPDATE:
    case TSR_OP_ADAM_UPDATE:
      return tsr_oracle_optim_compute;
    default:
      return NULL;
  }
}

int tsr_oracle_covers(int32_t op) { return oracle_for(op) != NULL; }

tsr_status tsr_oracle_compute(tsr_oracle_call *call) {
  call->message[0] = '\0';
  oracle_fn fn = oracle_for(call->op);
  if (fn == NULL) {
    return tsr_oracle_fail(call, TSR_UNSUPPORTED, "no oracle for op %d", (int)call->op);
  }
  if (call->num_outputs < 1 || call->num_inputs < 0) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "%d inputs, %d outputs",
                           (int)call->num_inputs, (int)call->num_outputs);
  }
  return fn(call);
}

tsr_oracle_tensor tsr_oracle_tensor_over(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                                         double *values) {
  tsr_oracle_tensor t;
  memset(&t, 0, sizeof(t));
  t.dtype = dtype;
  t.rank = rank;
  t.numel = 1;
  for (int32_t d = 0; d < rank; ++d) {
    t.sizes[d] = sizes[d];
    t.numel *= sizes[d];
  }
  t.v = values;
  t.compute = tsr_oracle_compute_dtype(dtype);
  return t;
}

tsr_status tsr_oracle_compute_values(int32_t op, const void *attrs, int32_t num_inputs,
                                     const tsr_oracle_tensor *inputs, int32_t num_outputs,
                                     tsr_oracle_tensor *outputs) {
  enum { MAX_OUTPUTS = 8 };
  double *scratch[MAX_OUTPUTS] = {0};
  tsr_oracle_call call = {op, attrs, num_inputs, num_outputs, inputs, outputs, {0}};
  tsr_status status = TSR_OK;
  if (num_outputs < 1 || num_outputs > MAX_OUTPUTS) return TSR_INVALID_ARGUMENT;
  for (int32_t k = 0; k < num_outputs; ++k) {
    if (outputs[k].bound != NULL) continue;
    scratch[k] = calloc((size_t)(outputs[k].numel > 0 ? outputs[k].numel : 1), sizeof(double));
    if (scratch[k] == NULL) {
      status = TSR_OUT_OF_MEMORY;
      goto done;
    }
    outputs[k].bound = scratch[k];
  }
  status = tsr_oracle_compute(&call);
done:
  for (int32_t k = 0; k < num_outputs; ++k) {
    if (scratch[k] != NULL) outputs[k].bound = NULL;
    free(scratch[k]);
  }
  return status;
}
