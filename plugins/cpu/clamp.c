// CLAMP: min(max(x, lo), hi) for the bounds present. A missing bound is the
// dtype's extreme, so one kernel per dtype serves every combination.
#include <math.h>

#include "convert.h"
#include "ew_loops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// NaN x stays NaN (both comparisons are false for it); a NaN bound makes
// the result NaN (max and min propagate NaN); lo > hi gives hi, as
// min(max(x, lo), hi) does.
#define TSR_CPU_CLAMP_FLOAT(S, T, LO, HI)                                     \
  static inline T tsr_cpu_clamp_##S(T x, T lo, T hi) {                        \
    T r = (x < lo || lo != lo) ? lo : x;                                      \
    return (r > hi || hi != hi) ? hi : r;                                     \
  }                                                                           \
  TSR_CPU_EW_LOOPS_1(clamp_##S, T, T, tsr_cpu_clamp_##S(x, p->LO, p->HI))

TSR_CPU_CLAMP_FLOAT(f32, float, lo_f32, hi_f32)
TSR_CPU_CLAMP_FLOAT(f64, double, lo_f64, hi_f64)
// The half types clamp in float32 against bounds already rounded to them.
TSR_CPU_EW_LOOPS_1_BF16(clamp_bf16, tsr_cpu_clamp_f32(x, p->lo_f32, p->hi_f32))
TSR_CPU_EW_LOOPS_1_F16(clamp_f16, tsr_cpu_clamp_f32(x, p->lo_f32, p->hi_f32))

#define TSR_CPU_CLAMP_INT(S, T)                                               \
  static inline T tsr_cpu_clamp_##S(T x, T lo, T hi) {                        \
    T r = x < lo ? lo : x;                                                    \
    return r > hi ? hi : r;                                                   \
  }                                                                           \
  TSR_CPU_EW_LOOPS_1(clamp_##S, T, T, tsr_cpu_clamp_##S(x, (T)p->lo_i64, (T)p->hi_i64))

TSR_CPU_CLAMP_INT(i32, int32_t)
TSR_CPU_CLAMP_INT(i64, int64_t)

tsr_status tsr_cpu_clamp_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 1, names);
  if (status != TSR_OK) return status;
  // NULL attrs: no bounds, so CLAMP copies.
  const tsr_clamp_attrs *attrs = signature->attrs;
  tsr_clamp_attrs bounds = {sizeof(tsr_clamp_attrs), 0.0, 0.0, 0, 0};
  if (attrs != NULL) {
    status = tsr_cpu_attrs_get(signature, sizeof(tsr_clamp_attrs), (const void **)&attrs);
    if (status != TSR_OK) return status;
    bounds = *attrs;
  }
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  status = tsr_cpu_dtype_check(signature, x, TSR_CPU_DTYPES_NUMBER, "clamp takes float and int");
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, x, out);
  if (status == TSR_OK) status = tsr_cpu_same_sizes_check(signature, x, out);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 1);
  if (status != TSR_OK) return status;

  tsr_cpu_ew_params params = {0};
  const int has_lo = bounds.has_min != 0, has_hi = bounds.has_max != 0;
  params.lo_f64 = has_lo ? bounds.min : -INFINITY;
  params.hi_f64 = has_hi ? bounds.max : INFINITY;
  params.lo_f32 = (float)params.lo_f64;
  params.hi_f32 = (float)params.hi_f64;
  // Bounds reach the half types rounded to them as CAST rounds a float64.
  if (x->dtype == TSR_BFLOAT16) {
    params.lo_f32 = tsr_cpu_bf16_to_f32(tsr_cpu_f64_to_bf16(params.lo_f64));
    params.hi_f32 = tsr_cpu_bf16_to_f32(tsr_cpu_f64_to_bf16(params.hi_f64));
  } else if (x->dtype == TSR_FLOAT16) {
    params.lo_f32 = tsr_cpu_f16_to_f32(tsr_cpu_f64_to_f16(params.lo_f64));
    params.hi_f32 = tsr_cpu_f16_to_f32(tsr_cpu_f64_to_f16(params.hi_f64));
  }
  // Bounds reach int dtypes converted as CAST converts a float64.
  if (x->dtype == TSR_INT32) {
    params.lo_i64 = has_lo ? tsr_cpu_f64_to_i32(bounds.min) : INT32_MIN;
    params.hi_i64 = has_hi ? tsr_cpu_f64_to_i32(bounds.max) : INT32_MAX;
  } else {
    params.lo_i64 = has_lo ? tsr_cpu_f64_to_i64(bounds.min) : INT64_MIN;
    params.hi_i64 = has_hi ? tsr_cpu_f64_to_i64(bounds.max) : INT64_MAX;
  }
  tsr_cpu_ew_kernel kernel;
  switch (x->dtype) {
    case TSR_FLOAT32: kernel = TSR_CPU_EW_KERNEL(clamp_f32); break;
    case TSR_FLOAT64: kernel = TSR_CPU_EW_KERNEL(clamp_f64); break;
    case TSR_BFLOAT16: kernel = TSR_CPU_EW_KERNEL(clamp_bf16); break;
    case TSR_FLOAT16: kernel = TSR_CPU_EW_KERNEL(clamp_f16); break;
    case TSR_INT32: kernel = TSR_CPU_EW_KERNEL(clamp_i32); break;
    default: kernel = TSR_CPU_EW_KERNEL(clamp_i64); break;
  }
  tsr_cpu_ew_plan_from_operands(plan, kernel, TSR_CPU_EW_CHEAP);
  plan->u.ew.params = params;
  return TSR_OK;
}
