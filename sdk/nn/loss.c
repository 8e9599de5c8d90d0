// Losses: fused cross-entropy (one op each way) and mean squared error with a
// single tape node.
#include <math.h>

#include "../autograd_internal.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"

static tsr_status check_reduction(const char *what, const tsr_tensor *t,
                                  tsr_reduction_t reduction) {
  if (reduction < 0 || reduction >= TSR_REDUCTION_COUNT) {
    return tsr_fail(tsr_tensor_device(t), TSR_INVALID_ARGUMENT,
                    "%s: reduction %d is not one of TSR_REDUCTION_NONE, _MEAN, _SUM", what,
                    reduction);
  }
  return TSR_OK;
}

tsr_tensor *tsr_nn_cross_entropy(tsr_tensor *logits, tsr_tensor *target, tsr_reduction_t reduction,
                                 double label_smoothing) {
  if (logits == NULL || target == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "nn_cross_entropy: %s is NULL",
                  logits ? "target" : "logits");
    return NULL;
  }
  if (check_reduction("nn_cross_entropy", logits, reduction) != TSR_OK)
    return NULL;
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    tsr_fail(tsr_tensor_device(logits), TSR_INVALID_ARGUMENT,
             "nn_cross_entropy: label_smoothing %g is outside [0, 1]", label_smoothing);
    return NULL;
  }
  tsr_cross_entropy_attrs attrs = {sizeof(attrs), reduction, 0, -100, label_smoothing};
  return tsr_cross_entropy(logits, target, &attrs, NULL);
}

// d/dx sum_i w_i (x_i - t_i)^2 = 2 w (x - t): one scale and one product of
// the saved difference, whatever the reduction (dy is rank 0 for MEAN and
// SUM and broadcasts).
static tsr_status mse_backward(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_tensor *diff = node->saved[0];
  double scale = 2.0;
  if (node->ints[0] == TSR_REDUCTION_MEAN) {
    int64_t n = tsr_tensor_numel(diff);
    scale = n > 0 ? 2.0 / (double)n : NAN;
  }
  tsr_tensor *s = tsr_tensor_full(tsr_tensor_device(diff), tsr_tensor_dtype(diff), 0, NULL, scale);
  tsr_tensor *ds = s ? tsr_mul(dy, s) : NULL;
  tsr_tensor *dx = ds ? tsr_mul(ds, diff) : NULL;
  tsr_tensor_release(s);
  tsr_tensor_release(ds);
  if (dx == NULL)
    return tsr_error_status() != TSR_OK ? tsr_error_status() : TSR_INTERNAL;
  if (tsr_ag_needs_grad(node, 1)) {
    out_dx[1] = tsr_neg(dx);
    if (out_dx[1] == NULL) {
      tsr_tensor_release(dx);
      return tsr_error_status();
    }
  }
  if (tsr_ag_needs_grad(node, 0)) {
    out_dx[0] = dx;
  } else {
    tsr_tensor_release(dx);
  }
  return TSR_OK;
}

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

tsr_tensor *tsr_nn_mse_loss(tsr_tensor *x, tsr_tensor *target, tsr_reduction_t reduction) {
  if (x == NULL || target == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "nn_mse_loss: %s is NULL", x ? "target" : "x");
    return NULL;
  }
  if (check_reduction("nn_mse_loss", x, reduction) != TSR_OK)
    return NULL;
  if (!is_float(tsr_tensor_dtype(x)) || tsr_tensor_dtype(x) != tsr_tensor_dtype(target)) {
    tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
             "nn_mse_loss: x has dtype %d and target %d; both must be the same float dtype",
             tsr_tensor_dtype(x), tsr_tensor_dtype(target));
    return NULL;
  }
  int same = tsr_tensor_rank(x) == tsr_tensor_rank(target);
  for (int32_t d = 0; same && d < tsr_tensor_rank(x); ++d)
    same = tsr_tensor_sizes(x)[d] == tsr_tensor_sizes(target)[d];
  if (!same) {
    tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
             "nn_mse_loss: x (rank %d, %lld elements) and target (rank %d, %lld elements) "
             "differ in shape",
             tsr_tensor_rank(x), (long long)tsr_tensor_numel(x), tsr_tensor_rank(target),
             (long long)tsr_tensor_numel(target));
    return NULL;
  }
  tsr_tensor *inputs[2] = {x, target};
  int prev = tsr_grad_mode_set(0);
  tsr_tensor *diff = tsr_sub(x, target);
  tsr_tensor *sq = diff ? tsr_square(diff) : NULL;
  tsr_tensor *loss = sq;
  if (sq != NULL && reduction != TSR_REDUCTION_NONE) {
    loss = tsr_reduce(sq, reduction == TSR_REDUCTION_MEAN ? TSR_REDUCE_MEAN : TSR_REDUCE_SUM, 0,
                      NULL, 0);
    tsr_tensor_release(sq);
  }
  tsr_grad_mode_set(prev);
  if (loss != NULL && tsr_ag_should_record(2, inputs)) {
    tsr_ag_node *node = NULL;
    if (tsr_ag_record("mse_loss", mse_backward, 2, inputs, loss, &node) != TSR_OK ||
        tsr_ag_node_save(node, diff) != TSR_OK) {
      tsr_tensor_release(loss);
      loss = NULL;
    } else {
      node->ints[0] = reduction;
    }
  }
  tsr_tensor_release(diff);
  return loss;
}
