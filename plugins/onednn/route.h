// Which engine a plan runs on where both the own kernel and a oneDNN op can
// run it: the cold default (the family builder's fixed routes), or what was
// measured on this machine (select.h). Used by plan.c.
#ifndef TESSERA_PLUGINS_ONEDNN_ROUTE_H_
#define TESSERA_PLUGINS_ONEDNN_ROUTE_H_

#include <stddef.h>
#include <stdint.h>

#include "onednn_op.h"
#include "select.h"

// The signature class of |signature| when its route is chosen by measurement
// (MATMUL; CONV2D and CONV2D_BACKWARD_FILTER; UNARY, UNARY_BACKWARD, CLAMP,
// BINARY), written into |out| (|size| bytes): 1, else 0. Thread-safe.
int tsr_onednn_route_class_key(const tsr_op_signature *signature, char *out, size_t size);

// Builds the oneDNN op for |signature| with |build| and |ctx|, or leaves the
// own kernel (*|out_op| NULL), choosing between them as select.h describes
// where |signature| has a class: the own kernel is |own| (the plan's, with
// |own_workspace_bytes| of workspace). *|out_source| says where the choice
// came from (TSR_ONEDNN_SOURCE_NONE where there was none to make). Errors
// other than the builder's TSR_UNSUPPORTED are returned. Plan time only; may
// run both candidates on scratch data. Thread-safe.
tsr_status tsr_onednn_route_choose(const tsr_op_signature *signature, tsr_onednn_build_fn build,
                                   const tsr_onednn_build_ctx *ctx, tsr_plugin_plan *own,
                                   uint64_t own_workspace_bytes, tsr_onednn_op **out_op,
                                   tsr_onednn_source_t *out_source);

#endif  // TESSERA_PLUGINS_ONEDNN_ROUTE_H_
