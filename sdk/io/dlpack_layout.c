// The checks of a DLPack producer's tensor (dlpack_layout.h).
#include "dlpack_layout.h"

#include <stdio.h>
#include <string.h>

int tsr_dlpack_dtype_from_dl(DLDataType dl, tsr_dtype_t *out) {
  if (dl.lanes != 1) return 0;
  switch (dl.code) {
    case kDLFloat:
      if (dl.bits == 32) *out = TSR_FLOAT32;
      else if (dl.bits == 64) *out = TSR_FLOAT64;
      else if (dl.bits == 16) *out = TSR_FLOAT16;
      else return 0;
      return 1;
    case kDLBfloat:
      if (dl.bits != 16) return 0;
      *out = TSR_BFLOAT16;
      return 1;
    case kDLInt:
      if (dl.bits == 32) *out = TSR_INT32;
      else if (dl.bits == 64) *out = TSR_INT64;
      else return 0;
      return 1;
    case kDLBool:
      if (dl.bits != 8) return 0;
      *out = TSR_BOOL;
      return 1;
    default:
      return 0;
  }
}

tsr_status tsr_dlpack_layout_get(const DLTensor *t, tsr_dlpack_layout *out, char *why,
                                 size_t why_size) {
  memset(out, 0, sizeof(*out));
  if (t->device.device_type != kDLCPU) {
    snprintf(why, why_size, "device type %d is not kDLCPU (1); only host memory is imported",
             (int)t->device.device_type);
    return TSR_UNSUPPORTED;
  }
  if (!tsr_dlpack_dtype_from_dl(t->dtype, &out->dtype)) {
    snprintf(why, why_size,
             "dtype {code %u, bits %u, lanes %u} has no Tessera dtype (float 16/32/64, bfloat 16, "
             "int 32/64, bool 8; one lane)",
             t->dtype.code, t->dtype.bits, t->dtype.lanes);
    return TSR_UNSUPPORTED;
  }
  if (t->ndim < 0 || t->ndim > TSR_MAX_RANK || (t->ndim > 0 && t->shape == NULL)) {
    snprintf(why, why_size, "ndim is %d%s; at most %d", t->ndim,
             t->ndim > 0 && t->shape == NULL ? " with shape NULL" : "", TSR_MAX_RANK);
    return TSR_INVALID_ARGUMENT;
  }
  out->rank = t->ndim;
  out->numel = 1;
  for (int32_t d = 0; d < t->ndim; ++d) {
    if (t->shape[d] < 0 || __builtin_mul_overflow(out->numel, t->shape[d], &out->numel)) {
      snprintf(why, why_size, "shape[%d] is %lld", d, (long long)t->shape[d]);
      return TSR_INVALID_ARGUMENT;
    }
    out->sizes[d] = t->shape[d];
  }
  out->elem = tsr_dtype_size(out->dtype);
  if (out->numel > 0 && t->data == NULL) {
    snprintf(why, why_size, "data is NULL for %lld elements", (long long)out->numel);
    return TSR_INVALID_ARGUMENT;
  }
  if ((uint64_t)out->numel > SIZE_MAX / out->elem) {
    snprintf(why, why_size, "%lld elements overflow", (long long)out->numel);
    return TSR_OUT_OF_MEMORY;
  }
  int64_t running = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    out->strides[d] = t->strides != NULL ? t->strides[d] : running;
    running *= t->shape[d] > 0 ? t->shape[d] : 1;  // <= numel or a 0-size dim: no overflow
  }
  // The reach of the strides: every element offset the copy forms must fit,
  // or the gather's arithmetic overflows (a producer's bug, or a hostile
  // capsule).
  if (out->numel > 0) {
    for (int32_t d = 0; d < t->ndim; ++d) {
      int64_t step;
      if (__builtin_mul_overflow(out->sizes[d] - 1, out->strides[d], &step) ||
          (step < 0 ? __builtin_add_overflow(out->lowest, step, &out->lowest)
                    : __builtin_add_overflow(out->highest, step, &out->highest))) {
        snprintf(why, why_size, "strides reach past 64-bit offsets (dim %d: size %lld, stride %lld)",
                 d, (long long)out->sizes[d], (long long)out->strides[d]);
        return TSR_INVALID_ARGUMENT;
      }
    }
    int64_t span;
    if (__builtin_sub_overflow(out->highest, out->lowest, &span) ||
        __builtin_mul_overflow(span, (int64_t)out->elem, &span) ||
        (int64_t)t->byte_offset < 0) {
      snprintf(why, why_size, "strides reach past 64-bit byte offsets");
      return TSR_INVALID_ARGUMENT;
    }
  }
  return TSR_OK;
}

void tsr_dlpack_gather(const char *origin, char *dst, const tsr_dlpack_layout *l) {
  int64_t index[TSR_MAX_RANK] = {0};
  int64_t at = 0;  // element offset of |index| from |origin|
  for (int64_t i = 0; i < l->numel; ++i) {
    memcpy(dst + (size_t)i * l->elem, origin + at * (int64_t)l->elem, l->elem);
    for (int32_t d = l->rank - 1; d >= 0; --d) {
      if (++index[d] < l->sizes[d]) {
        at += l->strides[d];
        break;
      }
      at -= l->strides[d] * (index[d] - 1);
      index[d] = 0;
    }
  }
}
