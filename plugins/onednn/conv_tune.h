// Implementation choice for conv.c and matmul.c: walking oneDNN's
// implementations, and timing candidate ops for autotuning
// (TSR_PLAN_AUTOTUNE or TSR_ONEDNN_AUTOTUNE).
//
// Those builders do their own selection rather than prim.c's per-primitive
// one: a whole op is timed, reorders and epilogue passes included (a
// convolution implementation that picks a different layout brings
// different reorders), and oneDNN's reference implementations, which can
// take seconds per run at real sizes, are never candidates.
#ifndef TESSERA_PLUGINS_ONEDNN_CONV_TUNE_H_
#define TESSERA_PLUGINS_ONEDNN_CONV_TUNE_H_

#include "onednn_op.h"

// Positions |pd| on its |index|-th (from 0) distinct implementation that is
// not oneDNN's reference code (far slower than the own kernels; last in
// oneDNN's lists). Distinct by name: oneDNN 2.x's iterator first returns a
// pd from its primitive cache when one matches, and keeps returning it, so a
// walk can repeat an implementation, or never end (bounded here).
// TSR_UNSUPPORTED, with a message naming |what|, when the first
// implementation is the reference one; TSR_NOT_FOUND (no message) when
// there are fewer than |index| + 1.
tsr_status tsr_onednn_impl_select(tsr_dnnl_pd *pd, int32_t index, const char *what);

// Seconds one execution of |op| takes on zeroed operands of |signature|'s
// layouts (the best of |runs| after a warm-up run), or a negative value when
// it could not run. Inputs carry a stand-in buffer handle so that a weight
// cache is warm as in steady state; the stand-in is forgotten afterwards.
// Plan time only: allocates the operands and the workspace.
double tsr_onednn_op_time(const tsr_onednn_op *op, const tsr_op_signature *signature, int runs);

#endif  // TESSERA_PLUGINS_ONEDNN_CONV_TUNE_H_
