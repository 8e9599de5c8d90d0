// What compat_common.c needs from the generation-specific compat file.
#ifndef TESSERA_PLUGINS_ONEDNN_COMPAT_INTERNAL_H_
#define TESSERA_PLUGINS_ONEDNN_COMPAT_INTERNAL_H_

#include "compat.h"

// Appends post-op |op| (the |index|-th, for messages) to |po|: the one step of
// building an attribute whose oneDNN call differs between 2.x (eltwise
// post-ops take a scale) and 3.x (they do not; sum takes a zero point and a
// data type). Sets the message on failure.
tsr_status tsr_dnnl_post_op_append(dnnl_post_ops_t po, const tsr_dnnl_post_op *op, int32_t index);

// Checks |rank| and |dims| and writes oneDNN's dims, a rank-0 request widened
// to dims {1}. |what| names the caller in messages.
tsr_status tsr_dnnl_md_dims(const char *what, int32_t rank, const int64_t *dims, int *ndims,
                            dnnl_dims_t out_dims);

// Fills oneDNN's spatial arrays from |w| for a source of |ndims| dims
// (oneDNN reads ndims - 2 entries; 1 or 2 spatial dims are supported, else
// TSR_UNSUPPORTED). |what| names the caller in messages.
tsr_status tsr_dnnl_window_dims(const tsr_dnnl_window *w, int ndims, const char *what,
                                dnnl_dims_t strides, dnnl_dims_t kernel, dnnl_dims_t dilates,
                                dnnl_dims_t pad_l, dnnl_dims_t pad_r);

// oneDNN's normalisation flags for TSR_DNNL_NORM_* |flags| (unknown bits:
// TSR_INVALID_ARGUMENT).
tsr_status tsr_dnnl_norm_flags(uint32_t flags, const char *what, unsigned *out);

#endif  // TESSERA_PLUGINS_ONEDNN_COMPAT_INTERNAL_H_
