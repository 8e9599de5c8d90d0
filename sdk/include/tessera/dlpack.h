// DLPack v0.8: the C ABI for exchanging tensors between frameworks, written
// from the published specification (github.com/dmlc/dlpack, include/dlpack/
// dlpack.h, v0.8): its device and data-type enums and its DLDevice,
// DLDataType, DLTensor and DLManagedTensor, with the specification's names,
// values and layouts, so that a consumer's own dlpack.h and this one
// describe the same structs. Skipped entirely when the application included
// dlpack.h first; a dlpack.h included after this one skips itself.
#ifndef DLPACK_VERSION
#ifndef TESSERA_DLPACK_H_
#define TESSERA_DLPACK_H_
// The specification's own include guard: a dlpack.h included after this one
// is skipped rather than declaring everything twice.
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#define DLPACK_VERSION 80
#define DLPACK_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
  uint8_t code;  // DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  // Element (0, ..., 0) is at (char *)data + byte_offset.
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  // In elements; NULL means compact row-major.
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  // Called by the consumer when it no longer needs the tensor.
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_DLPACK_H_
#endif  // DLPACK_VERSION
