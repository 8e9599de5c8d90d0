// Argument checks and small helpers shared by the PyTorch-style functions
// (sdk/ops_more.c, sdk/ops_more_reduce.c): messages name the function
// called, its argument and dtypes by name.
#include <stdio.h>

#include "tessera/core_layer.h"
#include "ops_more_internal.h"
#include "tessera/tessera.h"

int tsr_more_is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

const char *tsr_more_shape(const tsr_tensor *t, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int32_t d = 0; d < tsr_tensor_rank(t) && used < size; ++d) {
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                             (long long)tsr_tensor_sizes(t)[d]);
  }
  if (used < size)
    snprintf(buf + used, size - used, "]");
  return buf;
}

tsr_status tsr_more_check(const char *what, const char *name, const tsr_tensor *t) {
  if (t == NULL)
    return tsr_fail(NULL, TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, name);
  if (!tsr_tensor_handle_is_live(t)) {
    return tsr_fail(NULL, TSR_INVALID_ARGUMENT, "%s: %s is a tensor handle that was released", what,
                    name);
  }
  return TSR_OK;
}

tsr_status tsr_more_check_float(const char *what, const char *name, const tsr_tensor *t) {
  if (tsr_more_is_float(tsr_tensor_dtype(t)))
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(t), TSR_INVALID_ARGUMENT,
                  "%s: %s is %s; %s takes float32, float64, bfloat16 or float16", what, name,
                  tsr_dtype_name(tsr_tensor_dtype(t)), what);
}

tsr_status tsr_more_check_pair(const char *what, const char *a_name, const tsr_tensor *a,
                               const char *b_name, const tsr_tensor *b, int same_dtype) {
  if (tsr_tensor_device(a) != tsr_tensor_device(b)) {
    return tsr_fail(tsr_tensor_device(a), TSR_INVALID_ARGUMENT, "%s: %s is on %s and %s on %s",
                    what, b_name, tsr_device_name(tsr_tensor_device(b)), a_name,
                    tsr_device_name(tsr_tensor_device(a)));
  }
  if (same_dtype && tsr_tensor_dtype(a) != tsr_tensor_dtype(b)) {
    return tsr_fail(tsr_tensor_device(a), TSR_INVALID_ARGUMENT,
                    "%s: %s is %s and %s is %s; they must match", what, a_name,
                    tsr_dtype_name(tsr_tensor_dtype(a)), b_name,
                    tsr_dtype_name(tsr_tensor_dtype(b)));
  }
  return TSR_OK;
}

tsr_status tsr_more_dim(const char *what, const tsr_tensor *x, int32_t dim, int32_t bound,
                        int32_t *out_dim) {
  int32_t d = dim < 0 ? dim + bound : dim;
  if (d < 0 || d >= bound) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "%s: dim %d is out of range for a tensor of rank %d (expected %d to %d)", what,
                    dim, tsr_tensor_rank(x), -bound, bound - 1);
  }
  *out_dim = d;
  return TSR_OK;
}

tsr_status tsr_more_dims(const char *what, const tsr_tensor *x, int32_t num_dims,
                         const int32_t *dims, uint32_t *out_mask, int64_t *out_count) {
  if (num_dims < 0 || (num_dims > 0 && dims == NULL)) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s: num_dims is %d and dims is %s",
                    what, num_dims, dims ? "given" : "NULL");
  }
  uint32_t mask = 0, seen = 0;
  if (num_dims == 0)
    mask = tsr_tensor_rank(x) ? (1u << tsr_tensor_rank(x)) - 1u : 0u;
  for (int32_t i = 0; i < num_dims; ++i) {
    int32_t d = 0;
    TSR_RETURN_IF_ERROR(
        tsr_more_dim(what, x, dims[i], tsr_tensor_rank(x) ? tsr_tensor_rank(x) : 1, &d));
    if (seen & (1u << d)) {
      return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                      "%s: dim %d appears more than once in dims", what, d);
    }
    seen |= 1u << d;
    if (tsr_tensor_rank(x) > 0)
      mask |= 1u << d;
  }
  int64_t count = 1;
  for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
    if (mask & (1u << d))
      count *= tsr_tensor_sizes(x)[d];
  }
  *out_mask = mask;
  if (out_count != NULL)
    *out_count = count;
  return TSR_OK;
}

tsr_tensor *tsr_more_reduce(tsr_tensor *x, tsr_reduce_fn_t fn, uint32_t mask, int keepdim) {
  int32_t axes[TSR_MAX_RANK], k = 0;
  for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
    if (mask & (1u << d))
      axes[k++] = d;
  }
  return tsr_reduce(x, fn, k, axes, keepdim);
}

tsr_tensor *tsr_more_squeeze_mask(tsr_tensor *t, uint32_t mask) {
  if (t == NULL)
    return NULL;
  int64_t sizes[TSR_MAX_RANK];
  int32_t rank = 0;
  for (int32_t d = 0; d < tsr_tensor_rank(t); ++d) {
    if (!(mask & (1u << d)))
      sizes[rank++] = tsr_tensor_sizes(t)[d];
  }
  tsr_tensor *v = tsr_view(t, rank, sizes);
  tsr_tensor_release(t);
  return v;
}

tsr_tensor *tsr_more_scalar(const tsr_tensor *like, double value) {
  return tsr_tensor_full(tsr_tensor_device(like), tsr_tensor_dtype(like), 0, NULL, value);
}

tsr_tensor *tsr_more_inner_fail(const char *what) {
  if (tsr_error_status() == TSR_OK) {
    tsr_error_set(TSR_INTERNAL, "%s: a step failed without a message", what);
  } else {
    tsr_error_prefix(what);
  }
  return NULL;
}

void tsr_more_release(int32_t count, tsr_tensor **ts) {
  for (int32_t i = 0; i < count; ++i) tsr_tensor_release(ts[i]);
}

tsr_tensor *tsr_more_finish(const char *what, tsr_tensor *out) {
  return out != NULL ? out : tsr_more_inner_fail(what);
}
