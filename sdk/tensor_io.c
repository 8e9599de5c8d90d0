// Creating tensors and moving their contents between host and devices.
#include <stdlib.h>
#include <string.h>

#include "autograd_rules.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"

// Element order of a strided tensor, walked as a row-major odometer.
typedef struct strided_walk {
  int32_t rank;
  int64_t index[TSR_MAX_RANK];
} strided_walk;

static tsr_tensor *empty_named(const char *what, tsr_device *device, tsr_dtype_t dtype,
                               int32_t rank, const int64_t *sizes) {
  if (device == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: device is NULL", what);
    return NULL;
  }
  return tsr_tensor_alloc(what, device, dtype, rank, sizes);
}

tsr_tensor *tsr_tensor_empty(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                             const int64_t *sizes) {
  return empty_named("tensor_empty", device, dtype, rank, sizes);
}

tsr_tensor *tsr_tensor_full(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                            const int64_t *sizes, double value) {
  tsr_tensor *t = empty_named("tensor_full", device, dtype, rank, sizes);
  if (t == NULL) return NULL;
  if (tsr_fill_(t, value) != TSR_OK) {
    tsr_tensor_release(t);
    return NULL;
  }
  return t;
}

tsr_tensor *tsr_tensor_from_host(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                 const int64_t *sizes, const void *data) {
  tsr_tensor *t = empty_named("tensor_from_host", device, dtype, rank, sizes);
  if (t == NULL) return NULL;
  uint64_t bytes = tsr_tensor_storage_bytes(t);
  if (bytes > 0 && data == NULL) {
    tsr_fail(device, TSR_INVALID_ARGUMENT, "tensor_from_host: data is NULL for %llu bytes",
             (unsigned long long)bytes);
    tsr_tensor_release(t);
    return NULL;
  }
  if (bytes > 0) {
    tsr_status status = tsr_tensor_storage_write("tensor_from_host", t, data, bytes);
    if (status != TSR_OK) {
      tsr_fail(device, status, "%s", tsr_error_message());
      tsr_tensor_release(t);
      return NULL;
    }
  }
  return t;
}

tsr_status tsr_tensor_to_host(const tsr_tensor *tensor, void *dst, size_t dst_bytes) {
  if (tensor == NULL || (dst == NULL && dst_bytes != 0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_to_host: %s is NULL",
                         tensor ? "dst" : "tensor");
  }
  if (!tsr_tensor_handle_is_live(tensor)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_to_host: the handle was released");
  }
  tsr_device *device = tsr_tensor_device(tensor);
  if (tsr_device_is_retired(device)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "tensor_to_host: the context of device %s was destroyed",
                         tsr_device_name(device));
  }
  uint64_t bytes = (uint64_t)tsr_tensor_numel(tensor) * tsr_dtype_size(tsr_tensor_dtype(tensor));
  if (bytes != dst_bytes) {
    return tsr_fail(device, TSR_INVALID_ARGUMENT,
                    "tensor_to_host: dst_bytes is %zu, the tensor holds %llu bytes", dst_bytes,
                    (unsigned long long)bytes);
  }
  if (bytes == 0) return TSR_OK;
  tsr_tensor *source = (tsr_tensor *)tensor;
  tsr_tensor *packed = NULL;
  if (!tsr_tensor_is_contiguous(tensor)) {
    packed = tsr_contiguous(source);
    if (packed == NULL) return tsr_error_status();
    source = packed;
  }
  tsr_status status = tsr_tensor_storage_read(
      "tensor_to_host", source,
      (uint64_t)tsr_tensor_offset(source) * tsr_dtype_size(tsr_tensor_dtype(source)), dst, bytes);
  tsr_tensor_release(packed);
  if (status != TSR_OK)
    return tsr_fail(device, status, "%s", tsr_error_message());
  return TSR_OK;
}

tsr_tensor *tsr_tensor_to_device(const tsr_tensor *tensor, tsr_device *device) {
  if (tensor == NULL || device == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_to_device: %s is NULL",
                  tensor ? "device" : "tensor");
    return NULL;
  }
  if (device == tsr_tensor_device(tensor))
    return tsr_contiguous((tsr_tensor *)tensor);
  uint64_t bytes = (uint64_t)tsr_tensor_numel(tensor) * tsr_dtype_size(tsr_tensor_dtype(tensor));
  void *staging = bytes ? malloc(bytes) : NULL;
  if (bytes && staging == NULL) {
    tsr_fail(device, TSR_OUT_OF_MEMORY, "tensor_to_device: no host memory for %llu bytes",
             (unsigned long long)bytes);
    return NULL;
  }
  tsr_tensor *result = NULL;
  if (tsr_tensor_to_host(tensor, staging, bytes) == TSR_OK) {
    result = tsr_tensor_from_host(device, tsr_tensor_dtype(tensor), tsr_tensor_rank(tensor),
                                  tsr_tensor_sizes(tensor), staging);
  }
  free(staging);
  if (result != NULL && tsr_ag_record_cast(result, (tsr_tensor *)tensor) != TSR_OK) {
    tsr_tensor_release(result);
    return NULL;
  }
  return result;
}

tsr_status tsr_fill_(tsr_tensor *tensor, double value) {
  if (tensor == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "fill_: tensor is NULL");
  TSR_RETURN_IF_ERROR(tsr_ag_check_inplace("fill_", tensor));
  tsr_fill_attrs attrs = {sizeof(attrs), value};
  return tsr_dispatch(TSR_OP_FILL, 0, NULL, 1, &tensor, &attrs);
}

tsr_status tsr_copy_(tsr_tensor *dst, tsr_tensor *src) {
  if (dst == NULL || src == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "copy_: %s is NULL", dst ? "src" : "dst");
  }
  TSR_RETURN_IF_ERROR(tsr_ag_check_inplace("copy_", dst));
  tsr_tensor *inputs[1] = {src};
  return tsr_dispatch(tsr_tensor_dtype(dst) == tsr_tensor_dtype(src) ? TSR_OP_COPY : TSR_OP_CAST, 1,
                      inputs, 1, &dst, NULL);
}

tsr_tensor *tsr_contiguous(tsr_tensor *tensor) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "contiguous: tensor is NULL");
    return NULL;
  }
  tsr_tensor *out = NULL;
  if (tsr_tensor_is_contiguous(tensor)) {
    // A new handle rather than |tensor| retained, so that inside a scope the
    // result belongs to the scope like every other result.
    out = tsr_tensor_view_create(tensor, tsr_tensor_rank(tensor), tsr_tensor_sizes(tensor),
                                 tsr_tensor_strides(tensor), tsr_tensor_offset(tensor));
    if (out == NULL) return NULL;
  } else {
    out = tsr_tensor_alloc("contiguous", tsr_tensor_device(tensor), tsr_tensor_dtype(tensor),
                           tsr_tensor_rank(tensor), tsr_tensor_sizes(tensor));
    if (out == NULL) return NULL;
    if (tsr_copy_(out, tensor) != TSR_OK) {
      tsr_tensor_release(out);
      return NULL;
    }
  }
  if (tsr_ag_record_identity(out, tensor) != TSR_OK) {
    tsr_tensor_release(out);
    return NULL;
  }
  return out;
}

tsr_tensor *tsr_cast(tsr_tensor *tensor, tsr_dtype_t dtype) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "cast: tensor is NULL");
    return NULL;
  }
  tsr_tensor *out = tsr_tensor_alloc("cast", tsr_tensor_device(tensor), dtype,
                                     tsr_tensor_rank(tensor), tsr_tensor_sizes(tensor));
  if (out == NULL) return NULL;
  tsr_tensor *inputs[1] = {tensor};
  if (tsr_dispatch(TSR_OP_CAST, 1, inputs, 1, &out, NULL) != TSR_OK ||
      tsr_ag_record_cast(out, tensor) != TSR_OK) {
    tsr_tensor_release(out);
    return NULL;
  }
  return out;
}
