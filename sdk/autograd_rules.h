// Recording the elementwise, reduction, matmul and view functions of the
// SDK (sdk/ops.c, sdk/views.c, sdk/tensor_io.c) on the autograd tape. Each
// call records when grad mode is on and an input requires grad, and is a
// no-op otherwise; on failure the caller releases |out| and fails. Not
// installed.
#ifndef TESSERA_SDK_AUTOGRAD_RULES_H_
#define TESSERA_SDK_AUTOGRAD_RULES_H_

#include "autograd_internal.h"

tsr_status tsr_ag_record_unary(tsr_tensor *out, tsr_tensor *x, tsr_unary_fn_t fn, double alpha);
tsr_status tsr_ag_record_binary(tsr_tensor *out, tsr_tensor *a, tsr_tensor *b, tsr_binary_fn_t fn,
                                double alpha);
tsr_status tsr_ag_record_where(tsr_tensor *out, tsr_tensor *cond, tsr_tensor *a, tsr_tensor *b);
tsr_status tsr_ag_record_clamp(tsr_tensor *out, tsr_tensor *x, const tsr_clamp_attrs *attrs);
// |out| is the result handed to the caller; |kept| the same values with the
// reduced axes kept (size 1), which MAX, MIN and PROD save.
tsr_status tsr_ag_record_reduce(tsr_tensor *out, tsr_tensor *kept, tsr_tensor *x,
                                tsr_reduce_fn_t fn, uint32_t mask);
// a, b of rank >= 2 (broadcast batch dims); |bias| may be NULL; activation
// NONE or RELU (others are recorded as a separate unary by the caller).
tsr_status tsr_ag_record_matmul(tsr_tensor *out, tsr_tensor *a, tsr_tensor *b, tsr_tensor *bias,
                                tsr_activation_t activation);
// out is a reshaping of x (view, reshape, squeeze): dx = reshape(dy).
tsr_status tsr_ag_record_reshape(tsr_tensor *out, tsr_tensor *x);
tsr_status tsr_ag_record_permute(tsr_tensor *out, tsr_tensor *x, const int32_t *dims);
tsr_status tsr_ag_record_slice(tsr_tensor *out, tsr_tensor *x, int32_t dim, int64_t start,
                               int64_t step);
tsr_status tsr_ag_record_expand(tsr_tensor *out, tsr_tensor *x);
// out holds x's values (a copy or another handle): dx = dy.
tsr_status tsr_ag_record_identity(tsr_tensor *out, tsr_tensor *x);
// out = cast(x) or x moved to another device: dx = dy brought back.
tsr_status tsr_ag_record_cast(tsr_tensor *out, tsr_tensor *x);

#endif  // TESSERA_SDK_AUTOGRAD_RULES_H_
