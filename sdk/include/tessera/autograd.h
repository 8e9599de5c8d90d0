// Tessera: automatic differentiation (included by tessera/tessera.h).
//
// Reverse mode over a tape of recorded ops. While grad mode is on (the
// default, per thread), every op with an input that requires grad records a
// node: the backward rule, the inputs and the state the rule needs (pool
// indices, norm statistics, dropout masks, the forward's output). Nodes are
// numbered by depth, and tsr_backward replays the nodes reachable from its
// root in reverse order. Gradients of leaves accumulate in their .grad until
// cleared. Gradients are first order: backward rules run with grad mode off.
//
// A tensor saved for a rule that is modified in place before tsr_backward
// makes tsr_backward fail with TSR_INVALID_ARGUMENT naming the op (its storage
// version changed). In-place ops on a tensor that requires grad are refused
// while grad mode is on.
// Its types and TSR_API come from tessera.h, which includes this header at
// its end; included first, this header lets tessera.h include it whole.
#include "tessera/tessera.h"

#ifndef TESSERA_AUTOGRAD_H_
#define TESSERA_AUTOGRAD_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Marks a leaf tensor (one no op produced while recording) as needing its
// gradient. float dtypes only. Not thread-safe with other users of |tensor|.
TSR_API TSR_MUST_USE tsr_status tsr_tensor_requires_grad_set(tsr_tensor *tensor, int requires_grad);
// True for leaves marked so and for results of recorded ops.
TSR_API int tsr_tensor_requires_grad(const tsr_tensor *tensor);
// True when no recorded op produced |tensor|.
TSR_API int tsr_tensor_is_leaf(const tsr_tensor *tensor);
// The recorded op that produced |tensor| ("matmul"), or NULL for a leaf.
// Static storage.
TSR_API const char *tsr_tensor_grad_fn_name(const tsr_tensor *tensor);
// The accumulated gradient of a leaf: a new reference, or NULL (with no error
// set) when it has none yet.
TSR_API tsr_tensor *tsr_tensor_grad(const tsr_tensor *tensor);
// Replaces the gradient (retains |grad|; NULL clears it). |grad| must have
// |tensor|'s dtype, sizes and device.
TSR_API TSR_MUST_USE tsr_status tsr_tensor_grad_set(tsr_tensor *tensor, tsr_tensor *grad);
// A new handle on |tensor|'s storage that does not require grad.
TSR_API tsr_tensor *tsr_detach(tsr_tensor *tensor);

enum {
  // Keep the saved state so that tsr_backward can run through the graph again.
  TSR_BACKWARD_RETAIN_GRAPH = 1u << 0,
};
// Computes the gradients of |root| with respect to every leaf that requires
// grad and adds them to the leaves' gradients. |grad| is d(out)/d(root): NULL
// means 1, allowed when |root| has one element. Without
// TSR_BACKWARD_RETAIN_GRAPH the saved state of the graph is freed. Runs with
// grad mode off. Thread-safe with respect to other graphs.
TSR_API TSR_MUST_USE tsr_status tsr_backward(tsr_tensor *root, tsr_tensor *grad, uint32_t flags);

// Turns recording on or off for the calling thread and returns the previous
// setting (no_grad regions: int prev = tsr_grad_mode_set(0); ...;
// tsr_grad_mode_set(prev);). Thread-safe (per thread).
TSR_API int tsr_grad_mode_set(int enabled);
TSR_API int tsr_grad_mode(void);

// ---------------------------------------------------------------------------
// Gradient checker: compares tsr_backward's gradients with central finite
// differences in float64.

// The function under test: returns a new tensor computed from |inputs|.
typedef tsr_tensor *(*tsr_gradcheck_fn)(void *user, int32_t num_inputs, tsr_tensor *const *inputs);

typedef struct tsr_gradcheck_options {
  size_t struct_size;
  double eps;           // finite-difference step, default 1e-6
  double atol;          // default 1e-5
  double rtol;          // default 1e-3
  uint64_t seed;        // weights of the random projection of the output
  uint32_t check_mask;  // bit i: check input i (default: every float input)
  uint32_t reserved;
} tsr_gradcheck_options;

typedef struct tsr_gradcheck_result {
  size_t struct_size;
  int32_t passed;       // every element within atol + rtol * |numeric|
  int32_t worst_input;  // where |analytic - numeric| - tolerance is largest
  int64_t worst_index;  // row-major element index in that input
  double analytic;
  double numeric;
  double max_abs_error;
  int64_t checked;  // elements compared
} tsr_gradcheck_result;

TSR_API void tsr_gradcheck_options_init(tsr_gradcheck_options *options);
// Runs |fn| on float64 leaf copies of |inputs| (other dtypes are passed
// through), backpropagates L = sum(fn(x) * r) for fixed random weights r, and
// compares every checked element's gradient with (L(x + eps) - L(x - eps)) /
// 2 eps. Returns TSR_OK when the check ran (see out_result->passed), or the
// error that stopped it. |options| may be NULL.
TSR_API TSR_MUST_USE tsr_status tsr_gradcheck(tsr_gradcheck_fn fn, void *user, int32_t num_inputs,
                                 tsr_tensor *const *inputs, const tsr_gradcheck_options *options,
                                 tsr_gradcheck_result *out_result);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_AUTOGRAD_H_
