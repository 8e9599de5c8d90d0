// Helpers shared by the PyTorch-style functions of tessera/ops_more.h
// (sdk/ops_more.c, sdk/ops_more_reduce.c), defined in sdk/ops_more_checks.c:
// argument checks whose messages name the function called and dtypes by
// name. Not installed.
#ifndef TESSERA_SDK_OPS_MORE_INTERNAL_H_
#define TESSERA_SDK_OPS_MORE_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/core_layer.h"
#include "tessera/tessera.h"

int tsr_more_is_float(tsr_dtype_t dtype);
// "[2, 3]" into |buf|; returns |buf|.
const char *tsr_more_shape(const tsr_tensor *t, char *buf, size_t size);

// Fails naming |what| and |name| unless |t| is a live tensor handle.
tsr_status tsr_more_check(const char *what, const char *name, const tsr_tensor *t);
// Fails unless |t| has a float dtype.
tsr_status tsr_more_check_float(const char *what, const char *name, const tsr_tensor *t);
// Fails unless |b| lives on |a|'s device and, when |same_dtype|, has its dtype.
tsr_status tsr_more_check_pair(const char *what, const char *a_name, const tsr_tensor *a,
                               const char *b_name, const tsr_tensor *b, int same_dtype);
// Wraps |dim| into [0, bound) (negative counts from |bound|): bound is the
// rank for an existing dim, rank + 1 for a new one.
tsr_status tsr_more_dim(const char *what, const tsr_tensor *x, int32_t dim, int32_t bound,
                        int32_t *out_dim);
// The bit mask of |dims| (|num_dims| 0: every dim), each checked and not
// repeated, and the number of elements one reduced slice holds. A rank-0
// tensor takes dims 0 and -1, which reduce nothing.
tsr_status tsr_more_dims(const char *what, const tsr_tensor *x, int32_t num_dims,
                         const int32_t *dims, uint32_t *out_mask, int64_t *out_count);
// tsr_reduce over the dims in |mask|.
tsr_tensor *tsr_more_reduce(tsr_tensor *x, tsr_reduce_fn_t fn, uint32_t mask, int keepdim);
// |t| with the size-1 dims in |mask| dropped (a recorded view); releases |t|.
tsr_tensor *tsr_more_squeeze_mask(tsr_tensor *t, uint32_t mask);
// A rank-0 tensor of |like|'s device and dtype holding |value|.
tsr_tensor *tsr_more_scalar(const tsr_tensor *like, double value);
// After a call inside |what| failed: prefixes its message with "|what|: "
// and returns NULL.
tsr_tensor *tsr_more_inner_fail(const char *what);
// |out|, or tsr_more_inner_fail(|what|) when it is NULL.
tsr_tensor *tsr_more_finish(const char *what, tsr_tensor *out);
// Releases the |count| tensors of |ts| (NULL entries skipped).
void tsr_more_release(int32_t count, tsr_tensor **ts);

#endif  // TESSERA_SDK_OPS_MORE_INTERNAL_H_
