// FILL, COPY and CAST: elementwise moves of bits and conversions.
#include <string.h>

#include "convert.h"
#include "ew_loops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// FILL and COPY only move bits, so one kernel per element size serves every
// dtype of that size.
TSR_CPU_EW_LOOPS_0(fill_1, uint8_t, p->fill_bits)
TSR_CPU_EW_LOOPS_0(fill_2, uint16_t, p->fill_bits)
TSR_CPU_EW_LOOPS_0(fill_4, uint32_t, p->fill_bits)
TSR_CPU_EW_LOOPS_0(fill_8, uint64_t, p->fill_bits)
TSR_CPU_EW_LOOPS_1(copy_1, uint8_t, uint8_t, x)
TSR_CPU_EW_LOOPS_1(copy_2, uint16_t, uint16_t, x)
TSR_CPU_EW_LOOPS_1(copy_4, uint32_t, uint32_t, x)
TSR_CPU_EW_LOOPS_1(copy_8, uint64_t, uint64_t, x)

static tsr_cpu_ew_kernel tsr_cpu_copy_kernel(uint32_t elem_size) {
  switch (elem_size) {
    case 1: return TSR_CPU_EW_KERNEL(copy_1);
    case 2: return TSR_CPU_EW_KERNEL(copy_2);
    case 4: return TSR_CPU_EW_KERNEL(copy_4);
    default: return TSR_CPU_EW_KERNEL(copy_8);
  }
}

// |value| converted to |dtype| as CAST converts a float64, as a bit pattern.
static uint64_t tsr_cpu_fill_bits_get(double value, tsr_dtype_t dtype) {
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
    case TSR_BFLOAT16: bits = tsr_cpu_f64_to_bf16(value); break;
    case TSR_FLOAT16: bits = tsr_cpu_f64_to_f16(value); break;
    case TSR_INT32: bits = (uint32_t)tsr_cpu_f64_to_i32(value); break;
    case TSR_INT64: bits = (uint64_t)tsr_cpu_f64_to_i64(value); break;
    case TSR_BOOL: bits = value != 0.0; break;
    default: break;
  }
  return bits;
}

tsr_status tsr_cpu_fill_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 0, 0, 1, names);
  if (status != TSR_OK) return status;
  // attrs NULL fills with the catalogue's default value, 0 (docs/abi.md 10.2).
  double value = 0.0;
  if (signature->attrs != NULL) {
    const tsr_fill_attrs *attrs;
    status = tsr_cpu_attrs_get(signature, offsetof(tsr_fill_attrs, value) + sizeof(double),
                               (const void **)&attrs);
    if (status != TSR_OK) return status;
    value = attrs->value;
  }
  const tsr_cpu_operand *out = &plan->operands[0];
  status = tsr_cpu_output_overlap_check(signature, out);
  if (status != TSR_OK) return status;
  tsr_cpu_ew_kernel kernel;
  switch (out->elem_size) {
    case 1: kernel = TSR_CPU_EW_KERNEL(fill_1); break;
    case 2: kernel = TSR_CPU_EW_KERNEL(fill_2); break;
    case 4: kernel = TSR_CPU_EW_KERNEL(fill_4); break;
    default: kernel = TSR_CPU_EW_KERNEL(fill_8); break;
  }
  tsr_cpu_ew_plan_from_operands(plan, kernel, TSR_CPU_EW_CHEAP);
  plan->u.ew.params.fill_bits = tsr_cpu_fill_bits_get(value, out->dtype);
  return TSR_OK;
}

tsr_status tsr_cpu_copy_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 1, names);
  if (status == TSR_OK) status = tsr_cpu_attrs_null_check(signature);
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, out, x);
  if (status == TSR_OK) status = tsr_cpu_same_sizes_check(signature, x, out);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  tsr_cpu_ew_plan_from_operands(plan, tsr_cpu_copy_kernel(out->elem_size), TSR_CPU_EW_CHEAP);
  return TSR_OK;
}

// CAST kernels for every (from, to) pair of distinct dtypes. Tags: f32 f64
// bf16 f16 i32 i64 b8; every conversion goes through the rule CAST states.
// The half types widen exactly to float32; narrowing to them rounds once to
// nearest even (convert.h rounds a double or an int64 to odd on the way).
#define TSR_CPU_TO_B8(x) ((uint8_t)((x) != 0))
#define BF16(x) tsr_cpu_bf16_to_f32(x)
#define F16(x) tsr_cpu_f16_to_f32(x)
TSR_CPU_EW_LOOPS_1(cast_f32_f64, double, float, (double)x)
TSR_CPU_EW_LOOPS_1(cast_f32_bf16, uint16_t, float, tsr_cpu_f32_to_bf16(x))
TSR_CPU_EW_LOOPS_1(cast_f32_f16, uint16_t, float, tsr_cpu_f32_to_f16(x))
TSR_CPU_EW_LOOPS_1(cast_f32_i32, int32_t, float, tsr_cpu_f64_to_i32((double)x))
TSR_CPU_EW_LOOPS_1(cast_f32_i64, int64_t, float, tsr_cpu_f64_to_i64((double)x))
TSR_CPU_EW_LOOPS_1(cast_f32_b8, uint8_t, float, TSR_CPU_TO_B8(x))
TSR_CPU_EW_LOOPS_1(cast_f64_f32, float, double, (float)x)
TSR_CPU_EW_LOOPS_1(cast_f64_bf16, uint16_t, double, tsr_cpu_f64_to_bf16(x))
TSR_CPU_EW_LOOPS_1(cast_f64_f16, uint16_t, double, tsr_cpu_f64_to_f16(x))
TSR_CPU_EW_LOOPS_1(cast_f64_i32, int32_t, double, tsr_cpu_f64_to_i32(x))
TSR_CPU_EW_LOOPS_1(cast_f64_i64, int64_t, double, tsr_cpu_f64_to_i64(x))
TSR_CPU_EW_LOOPS_1(cast_f64_b8, uint8_t, double, TSR_CPU_TO_B8(x))
TSR_CPU_EW_LOOPS_1(cast_bf16_f32, float, uint16_t, BF16(x))
TSR_CPU_EW_LOOPS_1(cast_bf16_f64, double, uint16_t, (double)BF16(x))
TSR_CPU_EW_LOOPS_1(cast_bf16_f16, uint16_t, uint16_t, tsr_cpu_f32_to_f16(BF16(x)))
TSR_CPU_EW_LOOPS_1(cast_bf16_i32, int32_t, uint16_t, tsr_cpu_f64_to_i32((double)BF16(x)))
TSR_CPU_EW_LOOPS_1(cast_bf16_i64, int64_t, uint16_t, tsr_cpu_f64_to_i64((double)BF16(x)))
TSR_CPU_EW_LOOPS_1(cast_bf16_b8, uint8_t, uint16_t, TSR_CPU_TO_B8(BF16(x)))
TSR_CPU_EW_LOOPS_1(cast_f16_f32, float, uint16_t, F16(x))
TSR_CPU_EW_LOOPS_1(cast_f16_f64, double, uint16_t, (double)F16(x))
TSR_CPU_EW_LOOPS_1(cast_f16_bf16, uint16_t, uint16_t, tsr_cpu_f32_to_bf16(F16(x)))
TSR_CPU_EW_LOOPS_1(cast_f16_i32, int32_t, uint16_t, tsr_cpu_f64_to_i32((double)F16(x)))
TSR_CPU_EW_LOOPS_1(cast_f16_i64, int64_t, uint16_t, tsr_cpu_f64_to_i64((double)F16(x)))
TSR_CPU_EW_LOOPS_1(cast_f16_b8, uint8_t, uint16_t, TSR_CPU_TO_B8(F16(x)))
TSR_CPU_EW_LOOPS_1(cast_i32_f32, float, int32_t, (float)x)
TSR_CPU_EW_LOOPS_1(cast_i32_f64, double, int32_t, (double)x)
TSR_CPU_EW_LOOPS_1(cast_i32_bf16, uint16_t, int32_t, tsr_cpu_i64_to_bf16(x))
TSR_CPU_EW_LOOPS_1(cast_i32_f16, uint16_t, int32_t, tsr_cpu_i64_to_f16(x))
TSR_CPU_EW_LOOPS_1(cast_i32_i64, int64_t, int32_t, (int64_t)x)
TSR_CPU_EW_LOOPS_1(cast_i32_b8, uint8_t, int32_t, TSR_CPU_TO_B8(x))
TSR_CPU_EW_LOOPS_1(cast_i64_f32, float, int64_t, (float)x)
TSR_CPU_EW_LOOPS_1(cast_i64_f64, double, int64_t, (double)x)
TSR_CPU_EW_LOOPS_1(cast_i64_bf16, uint16_t, int64_t, tsr_cpu_i64_to_bf16(x))
TSR_CPU_EW_LOOPS_1(cast_i64_f16, uint16_t, int64_t, tsr_cpu_i64_to_f16(x))
TSR_CPU_EW_LOOPS_1(cast_i64_i32, int32_t, int64_t, tsr_cpu_i64_to_i32(x))
TSR_CPU_EW_LOOPS_1(cast_i64_b8, uint8_t, int64_t, TSR_CPU_TO_B8(x))
TSR_CPU_EW_LOOPS_1(cast_b8_f32, float, uint8_t, (float)(x != 0))
TSR_CPU_EW_LOOPS_1(cast_b8_f64, double, uint8_t, (double)(x != 0))
// bfloat16 and float16 1.0: 0x3f80 and 0x3c00.
TSR_CPU_EW_LOOPS_1(cast_b8_bf16, uint16_t, uint8_t, x != 0 ? 0x3f80u : 0u)
TSR_CPU_EW_LOOPS_1(cast_b8_f16, uint16_t, uint8_t, x != 0 ? 0x3c00u : 0u)
TSR_CPU_EW_LOOPS_1(cast_b8_i32, int32_t, uint8_t, (int32_t)(x != 0))
TSR_CPU_EW_LOOPS_1(cast_b8_i64, int64_t, uint8_t, (int64_t)(x != 0))
#undef BF16
#undef F16

tsr_status tsr_cpu_cast_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 1, names);
  if (status == TSR_OK) status = tsr_cpu_attrs_null_check(signature);
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  if (status == TSR_OK) status = tsr_cpu_same_sizes_check(signature, x, out);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  // Rows: from; columns: to; both indexed by dtype. The diagonal is COPY's.
#define K(from, to) TSR_CPU_EW_KERNEL_INIT(cast_##from##_##to)
  static const tsr_cpu_ew_kernel kernels[TSR_DTYPE_COUNT][TSR_DTYPE_COUNT] = {
      [TSR_FLOAT32] = {
          [TSR_FLOAT64] = K(f32, f64), [TSR_BFLOAT16] = K(f32, bf16), [TSR_FLOAT16] = K(f32, f16),
          [TSR_INT32] = K(f32, i32), [TSR_INT64] = K(f32, i64), [TSR_BOOL] = K(f32, b8)},
      [TSR_FLOAT64] = {
          [TSR_FLOAT32] = K(f64, f32), [TSR_BFLOAT16] = K(f64, bf16), [TSR_FLOAT16] = K(f64, f16),
          [TSR_INT32] = K(f64, i32), [TSR_INT64] = K(f64, i64), [TSR_BOOL] = K(f64, b8)},
      [TSR_BFLOAT16] = {
          [TSR_FLOAT32] = K(bf16, f32), [TSR_FLOAT64] = K(bf16, f64),
          [TSR_FLOAT16] = K(bf16, f16), [TSR_INT32] = K(bf16, i32), [TSR_INT64] = K(bf16, i64),
          [TSR_BOOL] = K(bf16, b8)},
      [TSR_FLOAT16] = {
          [TSR_FLOAT32] = K(f16, f32), [TSR_FLOAT64] = K(f16, f64), [TSR_BFLOAT16] = K(f16, bf16),
          [TSR_INT32] = K(f16, i32), [TSR_INT64] = K(f16, i64), [TSR_BOOL] = K(f16, b8)},
      [TSR_INT32] = {
          [TSR_FLOAT32] = K(i32, f32), [TSR_FLOAT64] = K(i32, f64), [TSR_BFLOAT16] = K(i32, bf16),
          [TSR_FLOAT16] = K(i32, f16), [TSR_INT64] = K(i32, i64), [TSR_BOOL] = K(i32, b8)},
      [TSR_INT64] = {
          [TSR_FLOAT32] = K(i64, f32), [TSR_FLOAT64] = K(i64, f64), [TSR_BFLOAT16] = K(i64, bf16),
          [TSR_FLOAT16] = K(i64, f16), [TSR_INT32] = K(i64, i32), [TSR_BOOL] = K(i64, b8)},
      [TSR_BOOL] = {
          [TSR_FLOAT32] = K(b8, f32), [TSR_FLOAT64] = K(b8, f64), [TSR_BFLOAT16] = K(b8, bf16),
          [TSR_FLOAT16] = K(b8, f16), [TSR_INT32] = K(b8, i32), [TSR_INT64] = K(b8, i64)},
  };
#undef K
  tsr_cpu_ew_kernel kernel = x->dtype == out->dtype
                                 ? tsr_cpu_copy_kernel(out->elem_size)
                                 : kernels[x->dtype][out->dtype];
  tsr_cpu_ew_plan_from_operands(plan, kernel, TSR_CPU_EW_CHEAP);
  return TSR_OK;
}
