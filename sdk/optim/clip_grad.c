// Gradient clipping: torch.nn.utils.clip_grad_norm_ and clip_grad_value_.
//
// The total norm takes one reduction per gradient (NORM over all its
// elements, cast to float64), one more over the stacked per-gradient norms,
// and a single read to the host: the scale decision needs the value, and the
// scaling is one in-place multiply per gradient.
#include <math.h>
#include <stdlib.h>

#include "tessera/core_layer.h"
#include "optim_internal.h"
#include "tessera/tessera.h"

// The gradients of |params| that exist (new references) in |out_grads|,
// their number in |out_count|; the caller releases them and frees the array.
static tsr_status grads_collect(const char *what, int32_t count, tsr_tensor *const *params,
                                tsr_tensor ***out_grads, int32_t *out_count) {
  *out_grads = NULL;
  *out_count = 0;
  if (count < 0)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: count is %d; it must be >= 0", what, count);
  if (count > 0 && params == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: params is NULL with count %d", what, count);
  tsr_tensor **grads = calloc((size_t)(count ? count : 1), sizeof(*grads));
  if (grads == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory for %d gradients", what, count);
  int32_t n = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (params[i] == NULL) {
      for (int32_t j = 0; j < n; ++j) tsr_tensor_release(grads[j]);
      free(grads);
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: params[%d] is NULL", what, i);
    }
    tsr_tensor *g = tsr_tensor_grad(params[i]);
    if (g != NULL)
      grads[n++] = g;
  }
  *out_grads = grads;
  *out_count = n;
  return TSR_OK;
}

static void grads_release(tsr_tensor **grads, int32_t n) {
  for (int32_t i = 0; i < n; ++i) tsr_tensor_release(grads[i]);
  free(grads);
}

// The |p|-norm of all |grads| together, read to the host.
static tsr_status total_norm(int32_t n, tsr_tensor **grads, double p, double *out_total) {
  tsr_status status = TSR_OK;
  tsr_tensor **norms = calloc((size_t)n, sizeof(*norms));
  tsr_tensor *stacked = NULL, *total = NULL;
  if (norms == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "clip_grad_norm: no host memory");
  tsr_device *device = tsr_tensor_device(grads[0]);
  for (int32_t i = 0; i < n && status == TSR_OK; ++i) {
    tsr_tensor *norm = tsr_norm(grads[i], p, 0, NULL, 0);
    tsr_tensor *wide = norm ? tsr_cast(norm, TSR_FLOAT64) : NULL;
    tsr_tensor_release(norm);
    if (wide != NULL && tsr_tensor_device(wide) != device) {
      norms[i] = tsr_tensor_to_device(wide, device);
      tsr_tensor_release(wide);
    } else {
      norms[i] = wide;
    }
    if (norms[i] == NULL)
      status = tsr_error_status();
  }
  if (status == TSR_OK) {
    stacked = tsr_stack(n, norms, 0);
    total = stacked ? tsr_norm(stacked, p, 0, NULL, 0) : NULL;
    status = total ? tsr_item(total, out_total) : tsr_error_status();
  }
  tsr_tensor_release(total);
  tsr_tensor_release(stacked);
  for (int32_t i = 0; i < n; ++i) tsr_tensor_release(norms[i]);
  free(norms);
  return status;
}

tsr_status tsr_clip_grad_norm(int32_t count, tsr_tensor *const *params, double max_norm,
                              double norm_type, double *out_total_norm) {
  const char *what = "clip_grad_norm";
  if (out_total_norm != NULL)
    *out_total_norm = 0;
  if (!(max_norm >= 0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: max_norm is %g; it must be >= 0", what,
                         max_norm);
  }
  if (!(norm_type > 0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: norm_type is %g; it must be > 0 (2, INFINITY, ...)", what,
                         norm_type);
  }
  tsr_tensor **grads;
  int32_t n;
  TSR_RETURN_IF_ERROR(grads_collect(what, count, params, &grads, &n));
  if (n == 0) {
    free(grads);
    return TSR_OK;  // no gradient: the norm is 0, as PyTorch's
  }
  int grad_mode = tsr_grad_mode_set(0);
  int previous = tsr_scope_suspend();
  double total = 0;
  tsr_status status = total_norm(n, grads, norm_type, &total);
  // A NaN total makes every gradient NaN, as PyTorch's clamp(coef, max=1).
  double coef = max_norm / (total + 1e-6);
  int scale = coef < 1.0 || isnan(coef);
  for (int32_t i = 0; i < n && status == TSR_OK && scale; ++i) {
    tsr_tensor *g = grads[i];
    tsr_tensor *c = tsr_tensor_full(tsr_tensor_device(g), tsr_tensor_dtype(g), 0, NULL, coef);
    status = c ? tsr_binary_out(g, g, c, TSR_BINARY_MUL, 1.0) : tsr_error_status();
    tsr_tensor_release(c);
  }
  tsr_scope_resume(previous);
  tsr_grad_mode_set(grad_mode);
  grads_release(grads, n);
  if (status != TSR_OK)
    return tsr_error_prefix(what);
  if (out_total_norm != NULL)
    *out_total_norm = total;
  return TSR_OK;
}

tsr_status tsr_clip_grad_value(int32_t count, tsr_tensor *const *params, double clip_value) {
  const char *what = "clip_grad_value";
  if (!(clip_value >= 0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: clip_value is %g; it must be >= 0", what,
                         clip_value);
  }
  tsr_tensor **grads;
  int32_t n;
  TSR_RETURN_IF_ERROR(grads_collect(what, count, params, &grads, &n));
  int grad_mode = tsr_grad_mode_set(0);
  int previous = tsr_scope_suspend();
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < n && status == TSR_OK; ++i) {
    tsr_tensor *clamped = tsr_clamp(grads[i], 1, -clip_value, 1, clip_value);
    status = clamped ? tsr_copy_(grads[i], clamped) : tsr_error_status();
    tsr_tensor_release(clamped);
  }
  tsr_scope_resume(previous);
  tsr_grad_mode_set(grad_mode);
  grads_release(grads, n);
  return status == TSR_OK ? TSR_OK : tsr_error_prefix(what);
}

// The optimizer's parameters as an array the caller frees.
static tsr_tensor **optimizer_params(const char *what, tsr_optimizer *optimizer) {
  if (optimizer == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: optimizer is NULL", what);
    return NULL;
  }
  tsr_tensor **params = calloc((size_t)optimizer->count, sizeof(*params));
  if (params == NULL) {
    tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory", what);
    return NULL;
  }
  for (int32_t i = 0; i < optimizer->count; ++i) params[i] = optimizer->slots[i].param;
  return params;
}

tsr_status tsr_optimizer_clip_grad_norm(tsr_optimizer *optimizer, double max_norm,
                                        double norm_type, double *out_total_norm) {
  if (out_total_norm != NULL)
    *out_total_norm = 0;
  tsr_tensor **params = optimizer_params("optimizer_clip_grad_norm", optimizer);
  if (params == NULL)
    return tsr_error_status();
  tsr_status status =
      tsr_clip_grad_norm(optimizer->count, params, max_norm, norm_type, out_total_norm);
  free(params);
  return status;
}

tsr_status tsr_optimizer_clip_grad_value(tsr_optimizer *optimizer, double clip_value) {
  tsr_tensor **params = optimizer_params("optimizer_clip_grad_value", optimizer);
  if (params == NULL)
    return tsr_error_status();
  tsr_status status = tsr_clip_grad_value(optimizer->count, params, clip_value);
  free(params);
  return status;
}
