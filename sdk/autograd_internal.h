// Recording ops on the autograd tape (sdk/autograd.c), for the SDK's op
// functions and layers. Not installed.
//
// An op function records after its forward has produced |out|:
//
//   if (tsr_ag_should_record(2, inputs)) {
//     tsr_ag_node *node = NULL;
//     if (tsr_ag_record("mul", mul_backward, 2, inputs, out, &node) != TSR_OK) {
//       tsr_tensor_release(out);
//       return NULL;
//     }
//     memcpy(node->attrs, &attrs, sizeof(attrs));   // what the rule needs
//     tsr_ag_node_save(node, indices);              // extra saved tensors
//   }
//
// The node retains every input (as given: views keep their storage alive) and
// records their storage versions; saved tensors are retained as detached
// handles (a saved forward output does not keep its own node alive). The
// backward rule runs with grad mode off and scope adoption suspended, so it
// may call any SDK function and must release its temporaries.
#ifndef TESSERA_SDK_AUTOGRAD_INTERNAL_H_
#define TESSERA_SDK_AUTOGRAD_INTERNAL_H_

#include <stdatomic.h>
#include <stdint.h>

#include "tessera/core_layer.h"
#include "tessera/tessera.h"

#define TSR_AG_MAX_SAVED 4
#define TSR_AG_ATTR_BYTES 256

typedef struct tsr_ag_node tsr_ag_node;

// Computes the gradients of |node|'s inputs from |dy|, the gradient of its
// output (same sizes as the output, any strides). For each input i with
// tsr_ag_needs_grad(node, i), writes out_dx[i]: a new tensor with input i's
// sizes and dtype (any strides), or NULL when the gradient is zero. Entries
// of inputs that need no gradient may be left NULL. On error returns the
// status with tsr_last_error() set, after releasing what it wrote.
typedef tsr_status (*tsr_ag_backward_fn)(const tsr_ag_node *node, tsr_tensor *dy,
                                         tsr_tensor **out_dx);

struct tsr_ag_node {
  atomic_int refs;   // the output tensor's reference + children's
  int32_t num_inputs;
  int32_t num_saved;
  uint32_t needs_grad;  // bit i: input i requires grad
  // Bit i: the rule reads input i's values, so tsr_backward checks that its
  // storage version did not change (all bits by default; a rule that only
  // routes gradients, like add's, clears them).
  uint32_t reads_inputs;
  int64_t depth;     // 1 + the deepest input node: reverse order key
  uint64_t seq;      // recording order on the thread: ties of depth
  const char *name;  // static storage, "matmul"
  tsr_ag_backward_fn backward;
  tsr_tensor *inputs[TSR_MAX_OPERANDS];  // retained
  uint64_t input_versions[TSR_MAX_OPERANDS];
  tsr_tensor *saved[TSR_AG_MAX_SAVED];  // retained detached handles
  uint64_t saved_versions[TSR_AG_MAX_SAVED];
  // The output's sizes and dtype (the output itself is not referenced).
  int32_t out_rank;
  tsr_dtype_t out_dtype;
  int64_t out_sizes[TSR_MAX_RANK];
  // Whatever the rule needs: attribute structs, axes, flags.
  _Alignas(16) unsigned char attrs[TSR_AG_ATTR_BYTES];
  int64_t ints[8];
  double reals[4];
  // Backward bookkeeping (autograd.c).
  tsr_tensor *grad;  // accumulated gradient of the output
  int32_t released;  // saved state freed by a backward pass
  int32_t visit;
  struct tsr_ag_node *next_free;
};

// True when grad mode is on and one of |inputs| (NULL entries skipped)
// requires grad. Cheap: the common inference path pays a few loads.
int tsr_ag_should_record(int32_t num_inputs, tsr_tensor *const *inputs);

// Makes |out| the output of a new node with |backward| over |inputs|;
// |out| then requires grad. Returns the node through |out_node| for the
// caller to fill attrs/ints/reals and save state. Thread-safe.
tsr_status tsr_ag_record(const char *name, tsr_ag_backward_fn backward, int32_t num_inputs,
                         tsr_tensor *const *inputs, tsr_tensor *out, tsr_ag_node **out_node);

// Saves |tensor| (retained as a detached handle) in the next saved slot.
tsr_status tsr_ag_node_save(tsr_ag_node *node, const tsr_tensor *tensor);

static inline int tsr_ag_needs_grad(const tsr_ag_node *node, int32_t input) {
  return (node->needs_grad >> input) & 1u;
}

// Sums |grad| over the dims it was broadcast along so that it has |rank| and
// |sizes| (NumPy rules, leading dims dropped). Returns a new reference (may
// be |grad| retained when the shapes already match), or NULL on error.
tsr_tensor *tsr_ag_reduce_to(tsr_tensor *grad, int32_t rank, const int64_t *sizes);

// Refuses an in-place write to |tensor| while grad mode is on and it requires
// grad. Returns TSR_OK or TSR_INVALID_ARGUMENT naming |what|.
tsr_status tsr_ag_check_inplace(const char *what, const tsr_tensor *tensor);

#endif  // TESSERA_SDK_AUTOGRAD_INTERNAL_H_
