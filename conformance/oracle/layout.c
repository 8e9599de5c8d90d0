// Oracle of the data-movement ops: CONCAT, PAD, GATHER, SCATTER_ADD
// (docs/abi.md 10.19-10.21).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_internal.h"

static void element_copy(const tsr_oracle_tensor *src, int64_t i, tsr_oracle_tensor *dst,
                         int64_t j) {
  if (dst->iv != NULL) {
    tsr_oracle_tensor_set(dst, j, 0, src->iv[i]);
  } else {
    dst->v[j] = src->v[i];
  }
}

static tsr_status concat_compute(tsr_oracle_call *call) {
  const tsr_concat_attrs *a = call->attrs;
  tsr_oracle_tensor *out = &call->outputs[0];
  int32_t axis = a->axis;
  if (axis < 0 || axis >= out->rank || call->num_inputs < 1 || call->num_inputs > 15) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "concat: axis %d, %d inputs", (int)axis,
                           (int)call->num_inputs);
  }
  int64_t total = 0;
  for (int32_t k = 0; k < call->num_inputs; ++k) {
    const tsr_oracle_tensor *x = &call->inputs[k];
    if (x->rank != out->rank) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "concat: rank");
    for (int32_t d = 0; d < out->rank; ++d) {
      if (d != axis && x->sizes[d] != out->sizes[d]) {
        return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "concat: input %d sizes[%d]", (int)k, (int)d);
      }
    }
    total += x->sizes[axis];
  }
  if (total != out->sizes[axis]) return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "concat: axis sizes");
  tsr_oracle_mark(out, TSR_ORACLE_BITWISE);
  int64_t offset = 0;
  int64_t index[TSR_MAX_RANK];
  for (int32_t k = 0; k < call->num_inputs; ++k) {
    const tsr_oracle_tensor *x = &call->inputs[k];
    for (int64_t i = 0; i < x->numel; ++i) {
      tsr_oracle_unravel(i, x->rank, x->sizes, index);
      index[axis] += offset;
      element_copy(x, i, out, tsr_oracle_tensor_offset(out, index));
    }
    offset += x->sizes[axis];
  }
  return TSR_OK;
}

static tsr_status pad_compute(tsr_oracle_call *call) {
  const tsr_pad_attrs *a = call->attrs;
  const tsr_oracle_tensor *x = &call->inputs[0];
  tsr_oracle_tensor *out = &call->outputs[0];
  if (a->mode < 0 || a->mode >= TSR_PAD_MODE_COUNT || x->rank != out->rank) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pad: mode %d", (int)a->mode);
  }
  if (a->mode != TSR_PAD_CONSTANT && !tsr_oracle_dtype_is_float(x->dtype) &&
      !tsr_oracle_dtype_is_int(x->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pad: mode %d on %s", (int)a->mode,
                           tsr_oracle_dtype_name(x->dtype));
  }
  for (int32_t d = 0; d < x->rank; ++d) {
    int64_t s = x->sizes[d], b = a->pad_before[d], e = a->pad_after[d];
    if (b < 0 || e < 0 || out->sizes[d] != b + s + e) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pad: axis %d sizes", (int)d);
    }
    if (a->mode == TSR_PAD_REFLECT && (b >= s || e >= s) && (b > 0 || e > 0)) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pad: REFLECT needs pads < size on axis %d", (int)d);
    }
    if (a->mode == TSR_PAD_REPLICATE && s < 1 && (b > 0 || e > 0)) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "pad: REPLICATE of an empty axis %d", (int)d);
    }
  }
  double value_v;
  int64_t value_i;
  tsr_oracle_cast_double(a->value, out->dtype, &value_v, &value_i);
  tsr_oracle_mark(out, TSR_ORACLE_BITWISE);
  int64_t index[TSR_MAX_RANK], src[TSR_MAX_RANK];
  for (int64_t o = 0; o < out->numel; ++o) {
    tsr_oracle_unravel(o, out->rank, out->sizes, index);
    int inside = 1;
    for (int32_t d = 0; d < out->rank; ++d) {
      int64_t s = x->sizes[d], i = index[d] - a->pad_before[d];
      if (i < 0 || i >= s) {
        if (a->mode == TSR_PAD_CONSTANT) {
          inside = 0;
        } else if (a->mode == TSR_PAD_REFLECT) {
          i = i < 0 ? -i : 2 * (s - 1) - i;
        } else {
          i = i < 0 ? 0 : s - 1;
        }
      }
      src[d] = i;
    }
    if (!inside) {
      tsr_oracle_tensor_set(out, o, value_v, value_i);
    } else {
      element_copy(x, tsr_oracle_tensor_offset(x, src), out, o);
    }
  }
  return TSR_OK;
}

static tsr_status gather_compute(tsr_oracle_call *call) {
  const tsr_gather_attrs *a = call->attrs;
  const tsr_oracle_tensor *x = &call->inputs[0];
  const tsr_oracle_tensor *index = &call->inputs[1];
  tsr_oracle_tensor *out = &call->outputs[0];
  int32_t axis = a->axis;
  if (axis < 0 || axis >= x->rank || index->rank != 1 || out->rank != x->rank ||
      (index->dtype != TSR_INT32 && index->dtype != TSR_INT64)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "gather: axis %d, index rank %d", (int)axis,
                           (int)index->rank);
  }
  for (int64_t k = 0; k < index->numel; ++k) {
    if (index->iv[k] < 0 || index->iv[k] >= x->sizes[axis]) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "gather: index[%lld] = %lld outside [0, %lld)",
                             (long long)k, (long long)index->iv[k], (long long)x->sizes[axis]);
    }
  }
  tsr_oracle_mark(out, TSR_ORACLE_BITWISE);
  int64_t idx[TSR_MAX_RANK];
  for (int64_t o = 0; o < out->numel; ++o) {
    tsr_oracle_unravel(o, out->rank, out->sizes, idx);
    idx[axis] = index->iv[idx[axis]];
    element_copy(x, tsr_oracle_tensor_offset(x, idx), out, o);
  }
  return TSR_OK;
}

static tsr_status scatter_add_compute(tsr_oracle_call *call) {
  const tsr_gather_attrs *a = call->attrs;
  const tsr_oracle_tensor *src = &call->inputs[0];
  const tsr_oracle_tensor *index = &call->inputs[1];
  tsr_oracle_tensor *out = &call->outputs[0];
  int32_t axis = a->axis;
  if (axis < 0 || axis >= out->rank || index->rank != 1 || src->rank != out->rank ||
      (index->dtype != TSR_INT32 && index->dtype != TSR_INT64)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "scatter_add: axis %d, index rank %d",
                           (int)axis, (int)index->rank);
  }
  if (!tsr_oracle_dtype_is_float(out->dtype) && !tsr_oracle_dtype_is_int(out->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "scatter_add does not take %s",
                           tsr_oracle_dtype_name(out->dtype));
  }
  for (int64_t k = 0; k < index->numel; ++k) {
    if (index->iv[k] < 0 || index->iv[k] >= out->sizes[axis]) {
      return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT,
                             "scatter_add: index[%lld] = %lld outside [0, %lld)", (long long)k,
                             (long long)index->iv[k], (long long)out->sizes[axis]);
    }
  }
  size_t count = (size_t)(out->numel > 0 ? out->numel : 1);
  tsr_oracle_sum *sums = calloc(count, sizeof(*sums));
  double *mag = calloc(count, sizeof(double));
  double *terms = calloc(count, sizeof(double));
  uint64_t *iacc = calloc(count, sizeof(uint64_t));
  if (!sums || !mag || !terms || !iacc) {
    free(sums), free(mag), free(terms), free(iacc);
    return tsr_oracle_fail(call, TSR_UNSUPPORTED, "scatter_add: out of host memory");
  }
  for (int64_t o = 0; o < out->numel; ++o) {
    if (out->iv != NULL) {
      iacc[o] = (uint64_t)out->iv[o];
    } else {
      tsr_oracle_sum_add(&sums[o], out->v[o]);
      mag[o] = fabs(out->v[o]);
    }
  }
  int64_t idx[TSR_MAX_RANK];
  for (int64_t i = 0; i < src->numel; ++i) {
    tsr_oracle_unravel(i, src->rank, src->sizes, idx);
    idx[axis] = index->iv[idx[axis]];
    int64_t o = tsr_oracle_tensor_offset(out, idx);
    if (out->iv != NULL) {
      iacc[o] += (uint64_t)src->iv[i];
    } else {
      tsr_oracle_sum_add(&sums[o], src->v[i]);
      mag[o] += fabs(src->v[i]);
      terms[o] += 1;
    }
  }
  tsr_oracle_mark(out, out->iv != NULL ? TSR_ORACLE_EXACT : TSR_ORACLE_TOLERANCE);
  for (int64_t o = 0; o < out->numel; ++o) {
    if (out->iv != NULL) {
      tsr_oracle_tensor_set(out, o, 0, tsr_oracle_wrap((int64_t)iacc[o], out->dtype));
    } else {
      out->v[o] = tsr_oracle_sum_get(&sums[o]);
      out->bound[o] = (terms[o] + 1) * mag[o];
    }
  }
  free(sums), free(mag), free(terms), free(iacc);
  return TSR_OK;
}

tsr_status tsr_oracle_layout_compute(tsr_oracle_call *call) {
  switch (call->op) {
    case TSR_OP_CONCAT: return concat_compute(call);
    case TSR_OP_PAD: return pad_compute(call);
    case TSR_OP_GATHER: return gather_compute(call);
    default: return scatter_add_compute(call);
  }
}
