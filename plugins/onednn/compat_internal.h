// What compat_common.c needs from the generation-specific compat file.
#ifndef TESSERA_PLUGINS_ONEDNN_COMPAT_INTERNAL_H_
#define TESSERA_PLUGINS_ONEDNN_COMPAT_INTERNAL_H_

#include "compat.h"

// Appends post-op |op| (the |index|-th, for messages) to |po|: the one step of
// building an attribute whose oneDNN call differs between 2.x (eltwise
// post-ops take a scale) and 3.x (they do not; sum takes a zero point and a
// data type). Sets the message on failure.
tsr_status tsr_dnnl_post_op_append(dnnl_post_ops_t po, const tsr_dnnl_post_op *op, int32_t index);

#endif  // TESSERA_PLUGINS_ONEDNN_COMPAT_INTERNAL_H_
