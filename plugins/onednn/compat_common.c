// The parts of compat.h both oneDNN generations implement the same way.
#include <string.h>

#include "compat.h"
#include "compat_internal.h"

tsr_status tsr_dnnl_attr_create(tsr_math_mode_t math_mode, const tsr_dnnl_post_op *post_ops,
                                int32_t num_post_ops, dnnl_primitive_attr_t *out_attr) {
  static const char what[] = "tsr_dnnl_attr_create";
  if (out_attr == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: out_attr is NULL", what);
  }
  *out_attr = NULL;
  if (num_post_ops < 0 || (num_post_ops > 0 && post_ops == NULL)) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: bad post-op list (%d)", what,
                                (int)num_post_ops);
  }
  dnnl_fpmath_mode_t fpmath;
  switch (math_mode) {
    case TSR_MATH_STRICT:
      fpmath = dnnl_fpmath_mode_strict;
      break;
    case TSR_MATH_ALLOW_TF32:
    case TSR_MATH_ALLOW_REDUCED:
      // oneDNN's CPU engines have no TF32; bf16 is the reduced float32
      // arithmetic they offer (used only on hardware with bf16 support).
      fpmath = dnnl_fpmath_mode_bf16;
      break;
    default:
      return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: unknown math mode %d", what,
                                  (int)math_mode);
  }

  dnnl_primitive_attr_t attr = NULL;
  tsr_status st = tsr_onednn_check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
  if (st != TSR_OK)
    return st;
  // The plugin carves scratchpads from the ABI workspace; library-owned
  // scratchpads would allocate on every execution.
  st = tsr_onednn_check(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
                        "dnnl_primitive_attr_set_scratchpad_mode");
  if (st == TSR_OK) {
    st = tsr_onednn_check(dnnl_primitive_attr_set_fpmath_mode(attr, fpmath),
                          "dnnl_primitive_attr_set_fpmath_mode");
  }
  if (st == TSR_OK && num_post_ops > 0) {
    dnnl_post_ops_t po = NULL;
    st = tsr_onednn_check(dnnl_post_ops_create(&po), "dnnl_post_ops_create");
    for (int32_t i = 0; st == TSR_OK && i < num_post_ops; ++i) {
      st = tsr_dnnl_post_op_append(po, &post_ops[i], i);
    }
    if (st == TSR_OK) {
      st = tsr_onednn_check(dnnl_primitive_attr_set_post_ops(attr, po),
                            "dnnl_primitive_attr_set_post_ops");
    }
    // The attribute keeps its own copy of the post-ops.
    if (po != NULL)
      dnnl_post_ops_destroy(po);
  }
  if (st != TSR_OK) {
    dnnl_primitive_attr_destroy(attr);
    return st;
  }
  *out_attr = attr;
  return TSR_OK;
}

tsr_status tsr_dnnl_window_dims(const tsr_dnnl_window *w, int ndims, const char *what,
                                dnnl_dims_t strides, dnnl_dims_t kernel, dnnl_dims_t dilates,
                                dnnl_dims_t pad_l, dnnl_dims_t pad_r) {
  int spatial = ndims - 2;
  if (spatial < 1 || spatial > 2) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: %d spatial dims (1 or 2 supported)", what,
                                spatial);
  }
  memset(strides, 0, sizeof(dnnl_dims_t));
  memset(kernel, 0, sizeof(dnnl_dims_t));
  memset(dilates, 0, sizeof(dnnl_dims_t));
  memset(pad_l, 0, sizeof(dnnl_dims_t));
  memset(pad_r, 0, sizeof(dnnl_dims_t));
  for (int i = 0; i < spatial; ++i) {
    strides[i] = w->strides[i];
    kernel[i] = w->kernel[i];
    dilates[i] = w->dilates[i];
    pad_l[i] = w->pad_l[i];
    pad_r[i] = w->pad_r[i];
  }
  return TSR_OK;
}

tsr_status tsr_dnnl_norm_flags(uint32_t flags, const char *what, unsigned *out) {
  const uint32_t known =
      TSR_DNNL_NORM_USE_GLOBAL_STATS | TSR_DNNL_NORM_USE_SCALE | TSR_DNNL_NORM_USE_SHIFT;
  if (flags & ~known) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: unknown normalisation flags 0x%x", what,
                                (unsigned)(flags & ~known));
  }
  unsigned f = dnnl_normalization_flags_none;
  if (flags & TSR_DNNL_NORM_USE_GLOBAL_STATS)
    f |= dnnl_use_global_stats;
  if (flags & TSR_DNNL_NORM_USE_SCALE)
    f |= dnnl_use_scale;
  if (flags & TSR_DNNL_NORM_USE_SHIFT)
    f |= dnnl_use_shift;
  *out = f;
  return TSR_OK;
}

tsr_status tsr_dnnl_md_dims(const char *what, int32_t rank, const int64_t *dims, int *ndims,
                            dnnl_dims_t out_dims) {
  if (rank < 0 || rank > TSR_MAX_RANK) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: rank %d outside 0..%d", what, (int)rank,
                                TSR_MAX_RANK);
  }
  if (rank > 0 && dims == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: dims is NULL", what);
  }
  memset(out_dims, 0, sizeof(dnnl_dims_t));
  if (rank == 0) {
    *ndims = 1;
    out_dims[0] = 1;
    return TSR_OK;
  }
  *ndims = rank;
  for (int32_t i = 0; i < rank; ++i) out_dims[i] = dims[i];
  return TSR_OK;
}
