// WHERE: cond ? a : b with broadcasting. It only moves bits, so one kernel
// per element size serves every dtype.
#include "ew_loops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

TSR_CPU_EW_LOOPS_3(where_1, uint8_t, uint8_t, uint8_t, uint8_t, a ? b : c)
TSR_CPU_EW_LOOPS_3(where_2, uint16_t, uint8_t, uint16_t, uint16_t, a ? b : c)
TSR_CPU_EW_LOOPS_3(where_4, uint32_t, uint8_t, uint32_t, uint32_t, a ? b : c)
TSR_CPU_EW_LOOPS_3(where_8, uint64_t, uint8_t, uint64_t, uint64_t, a ? b : c)

tsr_status tsr_cpu_where_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"cond", "a", "b", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 3, 3, 1, names);
  if (status == TSR_OK) status = tsr_cpu_attrs_null_check(signature);
  if (status != TSR_OK) return status;
  const tsr_cpu_operand *cond = &plan->operands[0];
  const tsr_cpu_operand *a = &plan->operands[1];
  const tsr_cpu_operand *b = &plan->operands[2];
  const tsr_cpu_operand *out = &plan->operands[3];
  status = tsr_cpu_dtype_check(signature, cond, TSR_DTYPE_BIT(TSR_BOOL), "where's cond is bool");
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, out, a);
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, out, b);
  if (status == TSR_OK) status = tsr_cpu_broadcast_check(signature, cond, out);
  if (status == TSR_OK) status = tsr_cpu_broadcast_check(signature, a, out);
  if (status == TSR_OK) status = tsr_cpu_broadcast_check(signature, b, out);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  tsr_cpu_ew_kernel kernel;
  switch (out->elem_size) {
    case 1: kernel = TSR_CPU_EW_KERNEL(where_1); break;
    case 2: kernel = TSR_CPU_EW_KERNEL(where_2); break;
    case 4: kernel = TSR_CPU_EW_KERNEL(where_4); break;
    default: kernel = TSR_CPU_EW_KERNEL(where_8); break;
  }
  tsr_cpu_ew_plan_from_operands(plan, kernel, TSR_CPU_EW_CHEAP);
  return TSR_OK;
}
