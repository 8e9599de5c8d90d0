// Checks shared by every op's plan builder: operands, attributes, dtypes,
// shapes and aliasing. Each returns TSR_OK or an error whose message names the
// op, the operand and the offending value. All thread-safe; none allocates.
#ifndef TESSERA_PLUGINS_CPU_SIGNATURE_H_
#define TESSERA_PLUGINS_CPU_SIGNATURE_H_

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "tessera/plugin_kit.h"

#define TSR_CPU_DTYPES_HALF (TSR_DTYPE_BIT(TSR_BFLOAT16) | TSR_DTYPE_BIT(TSR_FLOAT16))
// The catalogue's "float": float32, float64 and the half types.
#define TSR_CPU_DTYPES_FLOAT \
  (TSR_DTYPE_BIT(TSR_FLOAT32) | TSR_DTYPE_BIT(TSR_FLOAT64) | TSR_CPU_DTYPES_HALF)
#define TSR_CPU_DTYPES_INT (TSR_DTYPE_BIT(TSR_INT32) | TSR_DTYPE_BIT(TSR_INT64))
#define TSR_CPU_DTYPES_NUMBER (TSR_CPU_DTYPES_FLOAT | TSR_CPU_DTYPES_INT)
#define TSR_CPU_DTYPES_ALL (TSR_CPU_DTYPES_NUMBER | TSR_DTYPE_BIT(TSR_BOOL))

#define TSR_CPU_OP_BIT(op) (1ull << (uint32_t)(op))
#define TSR_CPU_HALF_OPS                                                                   \
  (TSR_CPU_OP_BIT(TSR_OP_FILL) | TSR_CPU_OP_BIT(TSR_OP_COPY) | TSR_CPU_OP_BIT(TSR_OP_CAST) |     \
   TSR_CPU_OP_BIT(TSR_OP_UNARY) | TSR_CPU_OP_BIT(TSR_OP_UNARY_BACKWARD) |                       \
   TSR_CPU_OP_BIT(TSR_OP_BINARY) | TSR_CPU_OP_BIT(TSR_OP_COMPARE) |                            \
   TSR_CPU_OP_BIT(TSR_OP_WHERE) | TSR_CPU_OP_BIT(TSR_OP_CLAMP) | TSR_CPU_OP_BIT(TSR_OP_REDUCE) | \
   TSR_CPU_OP_BIT(TSR_OP_ARG_REDUCE) | TSR_CPU_OP_BIT(TSR_OP_MATMUL) |                        \
   TSR_CPU_NORM_HALF_OPS | TSR_CPU_CONV_POOL_HALF_OPS | TSR_CPU_DATA_HALF_OPS)
// CONCAT, PAD, GATHER, SCATTER_ADD, RNG_FILL and the optimizer updates.
#define TSR_CPU_DATA_HALF_OPS                                                                \
  (TSR_CPU_OP_BIT(TSR_OP_CONCAT) | TSR_CPU_OP_BIT(TSR_OP_PAD) | TSR_CPU_OP_BIT(TSR_OP_GATHER) | \
   TSR_CPU_OP_BIT(TSR_OP_SCATTER_ADD) | TSR_CPU_OP_BIT(TSR_OP_RNG_FILL) |                     \
   TSR_CPU_OP_BIT(TSR_OP_SGD_UPDATE) | TSR_CPU_OP_BIT(TSR_OP_ADAM_UPDATE))
// CONV2D, POOL2D and their backward ops.
#define TSR_CPU_CONV_POOL_HALF_OPS                                                         \
  (TSR_CPU_OP_BIT(TSR_OP_CONV2D) | TSR_CPU_OP_BIT(TSR_OP_CONV2D_BACKWARD_DATA) |              \
   TSR_CPU_OP_BIT(TSR_OP_CONV2D_BACKWARD_FILTER) | TSR_CPU_OP_BIT(TSR_OP_POOL2D) |            \
   TSR_CPU_OP_BIT(TSR_OP_POOL2D_BACKWARD))
// SOFTMAX, LAYER_NORM, BATCH_NORM, CROSS_ENTROPY and their backward ops.
#define TSR_CPU_NORM_HALF_OPS                                                                \
  (TSR_CPU_OP_BIT(TSR_OP_SOFTMAX) | TSR_CPU_OP_BIT(TSR_OP_SOFTMAX_BACKWARD) |                  \
   TSR_CPU_OP_BIT(TSR_OP_LAYER_NORM) | TSR_CPU_OP_BIT(TSR_OP_LAYER_NORM_BACKWARD) |            \
   TSR_CPU_OP_BIT(TSR_OP_BATCH_NORM) | TSR_CPU_OP_BIT(TSR_OP_BATCH_NORM_BACKWARD) |            \
   TSR_CPU_OP_BIT(TSR_OP_CROSS_ENTROPY) | TSR_CPU_OP_BIT(TSR_OP_CROSS_ENTROPY_BACKWARD))

// "float32", "bool"...; "unknown" outside the enum: the kit's names.
#define tsr_cpu_dtype_name tsr_kit_dtype_name

// Checks the operand counts (|min_inputs|..|max_inputs| inputs,
// |num_outputs| outputs) and validates every descriptor into plan->operands,
// naming them from |names| (max_inputs input names, then the output names).
// Sets plan->op, num_inputs, num_outputs. A bfloat16 or float16 operand is
// refused (TSR_UNSUPPORTED) unless the op is in TSR_CPU_HALF_OPS.
//
// TSR_CPU_HALF_OPS: bit op is set for every op whose kernels take bfloat16
// and float16. An op joins once its kernels handle them (load-convert,
// compute in float32, convert-store) and its tests cover them.
tsr_status tsr_cpu_operands_init(const tsr_op_signature *signature, tsr_plugin_plan *plan,
                                 int32_t min_inputs, int32_t max_inputs, int32_t num_outputs,
                                 const char *const *names);

// Checks that the op's attrs are present and at least |min_size| bytes
// (struct_size) and writes them to |out_attrs|.
tsr_status tsr_cpu_attrs_get(const tsr_op_signature *signature, size_t min_size,
                             const void **out_attrs);
// Checks that an op without attributes got NULL.
tsr_status tsr_cpu_attrs_null_check(const tsr_op_signature *signature);

// Checks that |operand|'s dtype is in |mask| (TSR_DTYPE_BIT bits); |rule|
// completes the message ("pow takes float").
tsr_status tsr_cpu_dtype_check(const tsr_op_signature *signature, const tsr_cpu_operand *operand,
                               uint32_t mask, const char *rule);
// Checks that |a| and |b| have one dtype.
tsr_status tsr_cpu_same_dtype_check(const tsr_op_signature *signature, const tsr_cpu_operand *a,
                                    const tsr_cpu_operand *b);
// Checks that |input| has |out|'s rank and each size equals out's or is 1.
tsr_status tsr_cpu_broadcast_check(const tsr_op_signature *signature,
                                   const tsr_cpu_operand *input, const tsr_cpu_operand *out);
// Checks that |input| has |out|'s rank and sizes.
tsr_status tsr_cpu_same_sizes_check(const tsr_op_signature *signature,
                                    const tsr_cpu_operand *input, const tsr_cpu_operand *out);
// Checks that no two elements of output |out| share memory.
tsr_status tsr_cpu_output_overlap_check(const tsr_op_signature *signature,
                                        const tsr_cpu_operand *out);
// Records which inputs each output shares an alias group with and rejects it
// unless |in_place| and the two are the same view (dtype, sizes, strides).
tsr_status tsr_cpu_alias_check(const tsr_op_signature *signature, tsr_plugin_plan *plan,
                               int in_place);

#endif  // TESSERA_PLUGINS_CPU_SIGNATURE_H_
