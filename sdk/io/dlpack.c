// DLPack export and import.
//
// Export shares the tensor's storage: the plugin ABI gives the host address
// of a host-accessible device's buffer (buffer_host_ptr_get), and the
// DLManagedTensor holds a reference to the tensor until its deleter runs.
//
// Import copies. Wrapping the producer's memory would need a plugin buffer
// over foreign memory, and the ABI (0.2) has no entry that makes one: every
// buffer an op may touch comes from the plugin's buffer_alloc. So the values
// are gathered (any strides) into a new tensor on |device| and the
// producer's deleter is called before tsr_dlpack_import returns.
#include "tessera/dlpack.h"

#include <stdlib.h>
#include <string.h>

#include "dlpack_layout.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"

typedef struct dlpack_export_ctx {
  DLManagedTensor managed;
  tsr_tensor *tensor;  // a reference of our own
  int64_t shape[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
} dlpack_export_ctx;

static int dtype_to_dl(tsr_dtype_t dtype, DLDataType *out) {
  switch (dtype) {
    case TSR_FLOAT32:
      *out = (DLDataType){kDLFloat, 32, 1};
      return 1;
    case TSR_FLOAT64:
      *out = (DLDataType){kDLFloat, 64, 1};
      return 1;
    case TSR_FLOAT16:
      *out = (DLDataType){kDLFloat, 16, 1};
      return 1;
    case TSR_BFLOAT16:
      *out = (DLDataType){kDLBfloat, 16, 1};
      return 1;
    case TSR_INT32:
      *out = (DLDataType){kDLInt, 32, 1};
      return 1;
    case TSR_INT64:
      *out = (DLDataType){kDLInt, 64, 1};
      return 1;
    case TSR_BOOL:
      *out = (DLDataType){kDLBool, 8, 1};
      return 1;
    default:
      return 0;
  }
}

static void dlpack_export_delete(DLManagedTensor *self) {
  if (self == NULL)
    return;
  dlpack_export_ctx *ctx = self->manager_ctx;
  tsr_tensor_unref(ctx->tensor);
  free(ctx);
}

tsr_status tsr_dlpack_export(tsr_tensor *tensor, DLManagedTensor **out_managed) {
  if (out_managed != NULL)
    *out_managed = NULL;
  if (tensor == NULL || out_managed == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "dlpack_export: %s is NULL",
                         tensor == NULL ? "tensor" : "out_managed");
  }
  tsr_device *device = tsr_tensor_device(tensor);
  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  TSR_RETURN_IF_ERROR(tsr_device_props_get(device, &props));
  if (!(props.flags & TSR_DEVICE_HOST_ACCESSIBLE) || !tsr_device_host_ptr_supported(device)) {
    return tsr_fail(device, TSR_UNSUPPORTED,
                    "dlpack_export: device %s is not host-accessible; copy the tensor to a CPU "
                    "device first (tsr_tensor_to_device)",
                    tsr_device_name(device));
  }
  DLDataType dtype;
  if (!dtype_to_dl(tsr_tensor_dtype(tensor), &dtype)) {
    return tsr_fail(device, TSR_INVALID_ARGUMENT, "dlpack_export: tensor has unknown dtype %d",
                    (int)tsr_tensor_dtype(tensor));
  }
  void *base = NULL;
  tsr_status status = tsr_tensor_storage_host_ptr_get(tensor, &base);
  if (status != TSR_OK) {
    tsr_error_prefix("dlpack_export: buffer_host_ptr_get");
    return tsr_fail(device, status, "%s", tsr_error_message());
  }
  // The consumer reads the memory directly, outside every stream: the work
  // writing it must be finished first.
  TSR_RETURN_IF_ERROR(tsr_device_synchronize(device));
  dlpack_export_ctx *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL)
    return tsr_fail(device, TSR_OUT_OF_MEMORY, "dlpack_export: no host memory");
  ctx->tensor = tsr_tensor_retain(tensor);
  for (int32_t d = 0; d < tsr_tensor_rank(tensor); ++d) {
    ctx->shape[d] = tsr_tensor_sizes(tensor)[d];
    ctx->strides[d] = tsr_tensor_strides(tensor)[d];
  }
  DLTensor *t = &ctx->managed.dl_tensor;
  t->data = base;
  t->device = (DLDevice){kDLCPU, 0};
  t->ndim = tsr_tensor_rank(tensor);
  t->dtype = dtype;
  t->shape = ctx->shape;
  t->strides = ctx->strides;
  t->byte_offset = (uint64_t)tsr_tensor_offset(tensor) * tsr_dtype_size(tsr_tensor_dtype(tensor));
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = dlpack_export_delete;
  *out_managed = &ctx->managed;
  return TSR_OK;
}

tsr_tensor *tsr_dlpack_import(DLManagedTensor *managed, tsr_device *device) {
  if (managed == NULL || device == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "dlpack_import: %s is NULL",
                  managed == NULL ? "managed" : "device");
    return NULL;
  }
  const DLTensor *t = &managed->dl_tensor;
  tsr_dlpack_layout l;
  char why[400];
  tsr_status status = tsr_dlpack_layout_get(t, &l, why, sizeof(why));
  if (status != TSR_OK) {
    tsr_fail(device, status, "dlpack_import: %s", why);
    return NULL;
  }
  const tsr_dtype_t dtype = l.dtype;
  const int64_t numel = l.numel;
  char *packed = malloc(numel > 0 ? (size_t)numel * l.elem : 1);
  if (packed == NULL) {
    tsr_fail(device, TSR_OUT_OF_MEMORY, "dlpack_import: no host memory for %lld elements",
             (long long)numel);
    return NULL;
  }
  if (numel > 0) tsr_dlpack_gather((const char *)t->data + t->byte_offset, packed, &l);
  if (dtype == TSR_BOOL) {
    // Tessera's bool is 0 or 1.
    for (int64_t i = 0; i < numel; ++i) packed[i] = packed[i] != 0;
  }
  tsr_tensor *result = tsr_tensor_from_host(device, dtype, t->ndim, t->shape, packed);
  free(packed);
  if (result == NULL) {
    tsr_error_prefix("dlpack_import");
    return NULL;
  }
  // The values are copied: the producer's tensor is not needed any more.
  if (managed->deleter != NULL)
    managed->deleter(managed);
  return result;
}
