// Checks shared by every op's plan builder: operands, attributes, dtypes,
// shapes and aliasing. Each returns TSR_OK or an error whose message names the
// op, the operand and the offending value. All thread-safe; none allocates.
#ifndef TESSERA_PLUGINS_REF_SIGNATURE_H_
#define TESSERA_PLUGINS_REF_SIGNATURE_H_

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define TSR_REF_DTYPES_FLOAT (TSR_DTYPE_BIT(TSR_FLOAT32) | TSR_DTYPE_BIT(TSR_FLOAT64))
#define TSR_REF_DTYPES_INT (TSR_DTYPE_BIT(TSR_INT32) | TSR_DTYPE_BIT(TSR_INT64))
#define TSR_REF_DTYPES_NUMBER (TSR_REF_DTYPES_FLOAT | TSR_REF_DTYPES_INT)
#define TSR_REF_DTYPES_ALL (TSR_REF_DTYPES_NUMBER | TSR_DTYPE_BIT(TSR_BOOL))

// "float32", "bool"...; "unknown" outside the enum. Static storage.
const char *tsr_ref_dtype_name(tsr_dtype_t dtype);

// Checks the operand counts (|min_inputs|..|max_inputs| inputs,
// |num_outputs| outputs) and validates every descriptor into plan->operands,
// naming them from |names| (max_inputs input names, then the output names).
// Sets plan->op, num_inputs, num_outputs.
tsr_status tsr_ref_operands_init(const tsr_op_signature *signature, tsr_plugin_plan *plan,
                                 int32_t min_inputs, int32_t max_inputs, int32_t num_outputs,
                                 const char *const *names);

// Checks that the op's attrs are present and at least |min_size| bytes
// (struct_size) and writes them to |out_attrs|.
tsr_status tsr_ref_attrs_get(const tsr_op_signature *signature, size_t min_size,
                             const void **out_attrs);
// Checks that an op without attributes got NULL.
tsr_status tsr_ref_attrs_null_check(const tsr_op_signature *signature);

// Checks that |operand|'s dtype is in |mask| (TSR_DTYPE_BIT bits); |rule|
// completes the message ("pow takes float").
tsr_status tsr_ref_dtype_check(const tsr_op_signature *signature, const tsr_ref_operand *operand,
                               uint32_t mask, const char *rule);
// Checks that |a| and |b| have one dtype.
tsr_status tsr_ref_same_dtype_check(const tsr_op_signature *signature, const tsr_ref_operand *a,
                                    const tsr_ref_operand *b);
// Checks that |input| has |out|'s rank and each size equals out's or is 1.
tsr_status tsr_ref_broadcast_check(const tsr_op_signature *signature,
                                   const tsr_ref_operand *input, const tsr_ref_operand *out);
// Checks that |input| has |out|'s rank and sizes.
tsr_status tsr_ref_same_sizes_check(const tsr_op_signature *signature,
                                    const tsr_ref_operand *input, const tsr_ref_operand *out);
// Checks that no two elements of output |out| share memory.
tsr_status tsr_ref_output_overlap_check(const tsr_op_signature *signature,
                                        const tsr_ref_operand *out);
// Records which inputs each output shares an alias group with and rejects it
// unless |in_place| and the two are the same view (dtype, sizes, strides).
tsr_status tsr_ref_alias_check(const tsr_op_signature *signature, tsr_plugin_plan *plan,
                               int in_place);

#endif  // TESSERA_PLUGINS_REF_SIGNATURE_H_
