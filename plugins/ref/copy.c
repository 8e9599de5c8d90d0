// FILL, COPY and CAST: elementwise moves of bits and conversions.
#include <string.h>

#include "convert.h"
#include "ew_loops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// FILL and COPY only move bits, so one kernel per element size serves every
// dtype of that size.
TSR_REF_EW_LOOPS_0(fill_1, uint8_t, p->fill_bits)
TSR_REF_EW_LOOPS_0(fill_4, uint32_t, p->fill_bits)
TSR_REF_EW_LOOPS_0(fill_8, uint64_t, p->fill_bits)
TSR_REF_EW_LOOPS_1(copy_1, uint8_t, uint8_t, x)
TSR_REF_EW_LOOPS_1(copy_4, uint32_t, uint32_t, x)
TSR_REF_EW_LOOPS_1(copy_8, uint64_t, uint64_t, x)

static tsr_ref_ew_kernel tsr_ref_copy_kernel(uint32_t elem_size) {
  switch (elem_size) {
    case 1: return TSR_REF_EW_KERNEL(copy_1);
    case 4: return TSR_REF_EW_KERNEL(copy_4);
    default: return TSR_REF_EW_KERNEL(copy_8);
  }
}

// |value| converted to |dtype| as CAST converts a float64, as a bit pattern.
static uint64_t tsr_ref_fill_bits_get(double value, tsr_dtype_t dtype) {
  uint64_t bits = 0;
  switch (dtype) {
    case TSR_FLOAT32: {
      float f = (float)value;
      uint32_t u;
      memcpy(&u, &f, sizeof(u));
      bits = u;
      break;
    }
    case TSR_FLOAT64: memcpy(&bits, &value, sizeof(bits)); break;
    case TSR_INT32: bits = (uint32_t)tsr_ref_f64_to_i32(value); break;
    case TSR_INT64: bits = (uint64_t)tsr_ref_f64_to_i64(value); break;
    case TSR_BOOL: bits = value != 0.0; break;
    default: break;
  }
  return bits;
}

tsr_status tsr_ref_fill_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"out"};
  tsr_status status = tsr_ref_operands_init(signature, plan, 0, 0, 1, names);
  if (status != TSR_OK) return status;
  const tsr_fill_attrs *attrs;
  status = tsr_ref_attrs_get(signature, offsetof(tsr_fill_attrs, value) + sizeof(double),
                             (const void **)&attrs);
  if (status != TSR_OK) return status;
  const tsr_ref_operand *out = &plan->operands[0];
  status = tsr_ref_output_overlap_check(signature, out);
  if (status != TSR_OK) return status;
  tsr_ref_ew_kernel kernel;
  switch (out->elem_size) {
    case 1: kernel = TSR_REF_EW_KERNEL(fill_1); break;
    case 4: kernel = TSR_REF_EW_KERNEL(fill_4); break;
    default: kernel = TSR_REF_EW_KERNEL(fill_8); break;
  }
  tsr_ref_ew_plan_from_operands(plan, kernel, TSR_REF_EW_CHEAP);
  plan->u.ew.params.fill_bits = tsr_ref_fill_bits_get(attrs->value, out->dtype);
  return TSR_OK;
}

tsr_status tsr_ref_copy_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_ref_operands_init(signature, plan, 1, 1, 1, names);
  if (status == TSR_OK) status = tsr_ref_attrs_null_check(signature);
  const tsr_ref_operand *x = &plan->operands[0];
  const tsr_ref_operand *out = &plan->operands[1];
  if (status == TSR_OK) status = tsr_ref_same_dtype_check(signature, out, x);
  if (status == TSR_OK) status = tsr_ref_same_sizes_check(signature, x, out);
  if (status == TSR_OK) status = tsr_ref_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_ref_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  tsr_ref_ew_plan_from_operands(plan, tsr_ref_copy_kernel(out->elem_size), TSR_REF_EW_CHEAP);
  return TSR_OK;
}

// CAST kernels for every (from, to) pair of distinct dtypes. Tags: f32 f64
// i32 i64 b8; every conversion goes through the rule CAST states.
#define TSR_REF_TO_B8(x) ((uint8_t)((x) != 0))
TSR_REF_EW_LOOPS_1(cast_f32_f64, double, float, (double)x)
TSR_REF_EW_LOOPS_1(cast_f32_i32, int32_t, float, tsr_ref_f64_to_i32((double)x))
TSR_REF_EW_LOOPS_1(cast_f32_i64, int64_t, float, tsr_ref_f64_to_i64((double)x))
TSR_REF_EW_LOOPS_1(cast_f32_b8, uint8_t, float, TSR_REF_TO_B8(x))
TSR_REF_EW_LOOPS_1(cast_f64_f32, float, double, (float)x)
TSR_REF_EW_LOOPS_1(cast_f64_i32, int32_t, double, tsr_ref_f64_to_i32(x))
TSR_REF_EW_LOOPS_1(cast_f64_i64, int64_t, double, tsr_ref_f64_to_i64(x))
TSR_REF_EW_LOOPS_1(cast_f64_b8, uint8_t, double, TSR_REF_TO_B8(x))
TSR_REF_EW_LOOPS_1(cast_i32_f32, float, int32_t, (float)x)
TSR_REF_EW_LOOPS_1(cast_i32_f64, double, int32_t, (double)x)
TSR_REF_EW_LOOPS_1(cast_i32_i64, int64_t, int32_t, (int64_t)x)
TSR_REF_EW_LOOPS_1(cast_i32_b8, uint8_t, int32_t, TSR_REF_TO_B8(x))
TSR_REF_EW_LOOPS_1(cast_i64_f32, float, int64_t, (float)x)
TSR_REF_EW_LOOPS_1(cast_i64_f64, double, int64_t, (double)x)
TSR_REF_EW_LOOPS_1(cast_i64_i32, int32_t, int64_t, tsr_ref_i64_to_i32(x))
TSR_REF_EW_LOOPS_1(cast_i64_b8, uint8_t, int64_t, TSR_REF_TO_B8(x))
TSR_REF_EW_LOOPS_1(cast_b8_f32, float, uint8_t, (float)(x != 0))
TSR_REF_EW_LOOPS_1(cast_b8_f64, double, uint8_t, (double)(x != 0))
TSR_REF_EW_LOOPS_1(cast_b8_i32, int32_t, uint8_t, (int32_t)(x != 0))
TSR_REF_EW_LOOPS_1(cast_b8_i64, int64_t, uint8_t, (int64_t)(x != 0))

// Index by dtype: float32, float64, -, -, int32, int64, bool.
static int tsr_ref_cast_slot(tsr_dtype_t dtype) {
  static const int slots[TSR_DTYPE_COUNT] = {0, 1, -1, -1, 2, 3, 4};
  return slots[dtype];
}

tsr_status tsr_ref_cast_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_ref_operands_init(signature, plan, 1, 1, 1, names);
  if (status == TSR_OK) status = tsr_ref_attrs_null_check(signature);
  const tsr_ref_operand *x = &plan->operands[0];
  const tsr_ref_operand *out = &plan->operands[1];
  if (status == TSR_OK) status = tsr_ref_same_sizes_check(signature, x, out);
  if (status == TSR_OK) status = tsr_ref_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_ref_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  static const tsr_ref_ew_kernel kernels[5][5] = {
      {{0}, TSR_REF_EW_KERNEL_INIT(cast_f32_f64), TSR_REF_EW_KERNEL_INIT(cast_f32_i32),
       TSR_REF_EW_KERNEL_INIT(cast_f32_i64), TSR_REF_EW_KERNEL_INIT(cast_f32_b8)},
      {TSR_REF_EW_KERNEL_INIT(cast_f64_f32), {0}, TSR_REF_EW_KERNEL_INIT(cast_f64_i32),
       TSR_REF_EW_KERNEL_INIT(cast_f64_i64), TSR_REF_EW_KERNEL_INIT(cast_f64_b8)},
      {TSR_REF_EW_KERNEL_INIT(cast_i32_f32), TSR_REF_EW_KERNEL_INIT(cast_i32_f64), {0},
       TSR_REF_EW_KERNEL_INIT(cast_i32_i64), TSR_REF_EW_KERNEL_INIT(cast_i32_b8)},
      {TSR_REF_EW_KERNEL_INIT(cast_i64_f32), TSR_REF_EW_KERNEL_INIT(cast_i64_f64),
       TSR_REF_EW_KERNEL_INIT(cast_i64_i32), {0}, TSR_REF_EW_KERNEL_INIT(cast_i64_b8)},
      {TSR_REF_EW_KERNEL_INIT(cast_b8_f32), TSR_REF_EW_KERNEL_INIT(cast_b8_f64),
       TSR_REF_EW_KERNEL_INIT(cast_b8_i32), TSR_REF_EW_KERNEL_INIT(cast_b8_i64), {0}},
  };
  tsr_ref_ew_kernel kernel = x->dtype == out->dtype
                                 ? tsr_ref_copy_kernel(out->elem_size)
                                 : kernels[tsr_ref_cast_slot(x->dtype)][tsr_ref_cast_slot(out->dtype)];
  tsr_ref_ew_plan_from_operands(plan, kernel, TSR_REF_EW_CHEAP);
  return TSR_OK;
}
