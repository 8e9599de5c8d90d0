// COMPARE: a op b -> bool, with broadcasting. C's comparisons already give
// the catalogue's NaN rule: false, except != which is true.
#include "ew_loops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

#define TSR_CPU_COMPARE_LOOPS(S, T)                                         \
  TSR_CPU_EW_LOOPS_2(eq_##S, uint8_t, T, T, a == b)                         \
  TSR_CPU_EW_LOOPS_2(ne_##S, uint8_t, T, T, a != b)                         \
  TSR_CPU_EW_LOOPS_2(lt_##S, uint8_t, T, T, a < b)                          \
  TSR_CPU_EW_LOOPS_2(le_##S, uint8_t, T, T, a <= b)                         \
  TSR_CPU_EW_LOOPS_2(gt_##S, uint8_t, T, T, a > b)                          \
  TSR_CPU_EW_LOOPS_2(ge_##S, uint8_t, T, T, a >= b)

// The half types compare in float32 (exact: widening loses nothing).
#define TSR_CPU_COMPARE_HALF_LOOPS(S, LOAD)                                                   \
  TSR_CPU_EW_LOOPS_2_CVT(eq_##S, uint8_t, TSR_CPU_STORE_CAST, uint16_t, float, uint16_t, float, \
                         LOAD, a == b)                                                         \
  TSR_CPU_EW_LOOPS_2_CVT(ne_##S, uint8_t, TSR_CPU_STORE_CAST, uint16_t, float, uint16_t, float, \
                         LOAD, a != b)                                                         \
  TSR_CPU_EW_LOOPS_2_CVT(lt_##S, uint8_t, TSR_CPU_STORE_CAST, uint16_t, float, uint16_t, float, \
                         LOAD, a < b)                                                          \
  TSR_CPU_EW_LOOPS_2_CVT(le_##S, uint8_t, TSR_CPU_STORE_CAST, uint16_t, float, uint16_t, float, \
                         LOAD, a <= b)                                                         \
  TSR_CPU_EW_LOOPS_2_CVT(gt_##S, uint8_t, TSR_CPU_STORE_CAST, uint16_t, float, uint16_t, float, \
                         LOAD, a > b)                                                          \
  TSR_CPU_EW_LOOPS_2_CVT(ge_##S, uint8_t, TSR_CPU_STORE_CAST, uint16_t, float, uint16_t, float, \
                         LOAD, a >= b)

TSR_CPU_COMPARE_LOOPS(f32, float)
TSR_CPU_COMPARE_LOOPS(f64, double)
TSR_CPU_COMPARE_LOOPS(i32, int32_t)
TSR_CPU_COMPARE_LOOPS(i64, int64_t)
TSR_CPU_COMPARE_LOOPS(b8, uint8_t)
TSR_CPU_COMPARE_HALF_LOOPS(bf16, TSR_CPU_LOAD_BF16)
TSR_CPU_COMPARE_HALF_LOOPS(f16, TSR_CPU_LOAD_F16)

#define K(name) TSR_CPU_EW_KERNEL_INIT(name)
#define ALL(n)                                                                           \
  {K(n##_f32), K(n##_f64), K(n##_bf16), K(n##_f16), K(n##_i32), K(n##_i64), K(n##_b8)}

// Rows: fn; columns: dtype.
static const tsr_cpu_ew_kernel k_compare_kernels[TSR_COMPARE_FN_COUNT][TSR_DTYPE_COUNT] = {
    [TSR_COMPARE_EQ] = ALL(eq), [TSR_COMPARE_NE] = ALL(ne), [TSR_COMPARE_LT] = ALL(lt),
    [TSR_COMPARE_LE] = ALL(le), [TSR_COMPARE_GT] = ALL(gt), [TSR_COMPARE_GE] = ALL(ge),
};

#undef K
#undef ALL

tsr_status tsr_cpu_compare_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"a", "b", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 2, 2, 1, names);
  if (status != TSR_OK) return status;
  const tsr_compare_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, offsetof(tsr_compare_attrs, fn) + sizeof(tsr_compare_fn_t),
                             (const void **)&attrs);
  if (status != TSR_OK) return status;
  if (attrs->fn < 0 || attrs->fn >= TSR_COMPARE_FN_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(attrs->fn < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "compare: attrs fn %d is not a compare fn",
                             (int)attrs->fn);
  }
  const tsr_cpu_operand *a = &plan->operands[0];
  const tsr_cpu_operand *b = &plan->operands[1];
  const tsr_cpu_operand *out = &plan->operands[2];
  status = tsr_cpu_same_dtype_check(signature, a, b);
  if (status == TSR_OK) status = tsr_cpu_dtype_check(signature, out, TSR_DTYPE_BIT(TSR_BOOL),
                                                     "compare writes bool");
  if (status == TSR_OK) status = tsr_cpu_broadcast_check(signature, a, out);
  if (status == TSR_OK) status = tsr_cpu_broadcast_check(signature, b, out);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  tsr_cpu_ew_plan_from_operands(plan, k_compare_kernels[attrs->fn][a->dtype],
                                TSR_CPU_EW_CHEAP);
  return TSR_OK;
}
