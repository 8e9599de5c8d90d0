// Running catalogue ops: dispatch through the plan cache, the fallback to
// ref, and the support probes.
#ifndef TESSERA_CORE_DISPATCH_H_
#define TESSERA_CORE_DISPATCH_H_

#include "common.h"
#include "device.h"

// --- dispatch.c ----------------------------------------------------------

// tsr_dispatch, which runs |op| on the device of its operands, is declared in
// tessera/core_layer.h.
// Runs a prepared |signature| on |device|: plan from the cache, execution on
// the current stream; falls back to ref when allowed. |inputs|/|outputs| may
// be NULL (no stream bookkeeping then).
tsr_status tsr_dispatch_signature_run(tsr_device *device, tsr_op_signature *signature,
                                      tsr_tensor *const *inputs, tsr_tensor *const *outputs,
                                      int allow_fallback);
// Fills |desc| for |tensor|.
void tsr_dispatch_desc_fill(const tsr_tensor *tensor, tsr_tensor_desc *desc);


// --- fallback.c ----------------------------------------------------------

// Runs |signature|'s op on the ref device, copying operands there and back,
// under |device|'s context policy. Thread-safe.
tsr_status tsr_fallback_run(tsr_device *device, const tsr_op_signature *signature,
                            const char *reason, tsr_tensor *const *inputs,
                            tsr_tensor *const *outputs);


// --- op_probe.c ----------------------------------------------------------

// |context|'s ref device, or NULL. Thread-safe.
tsr_device *tsr_context_ref_device(const tsr_context *context);

// Builds a small representative signature of |op| for |dtype| and asks the
// plugin, then each value of the op's selector until one is accepted
// (op_probe.c). Thread-safe.
tsr_status tsr_op_probe(tsr_device *device, tsr_op_id_t op, tsr_dtype_t dtype);
// The representative signature with selector value |selector|. Thread-safe.
tsr_status tsr_op_probe_selector(tsr_device *device, tsr_op_id_t op, tsr_dtype_t dtype,
                                 int32_t selector);

#endif  // TESSERA_CORE_DISPATCH_H_
