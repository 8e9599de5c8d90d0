// BINARY: a op b with broadcasting.
#include <math.h>

#include "ew_loops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// NaN if either is NaN: when a is NaN the first test fails and a != a picks
// a; when b is NaN both fail and b is picked.
#define TSR_CPU_MAX(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define TSR_CPU_MIN(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))

// Kernels of one float dtype: N names it; T and F are the type it computes
// in and libm's suffix (the half types compute in float32), A the params
// field holding alpha in T, L(name, EXPR) the loop macro for the dtype.
#define TSR_CPU_BINARY_FLOAT_LOOPS(N, T, F, A, L)                                                  \
  L(add_##N, a + b)                                                  \
  L(add_alpha_##N, a + p->A * b)                                     \
  L(sub_##N, a - b)                                                  \
  L(sub_alpha_##N, a - p->A * b)                                     \
  L(mul_##N, a * b)                                                  \
  L(div_##N, a / b)                                                  \
  L(maximum_##N, TSR_CPU_MAX(a, b))                                  \
  L(minimum_##N, TSR_CPU_MIN(a, b))                                  \
  L(pow_##N, pow##F(a, b))

#define TSR_CPU_BINARY_F32(name, EXPR) TSR_CPU_EW_LOOPS_2(name, float, float, float, EXPR)
#define TSR_CPU_BINARY_F64(name, EXPR) TSR_CPU_EW_LOOPS_2(name, double, double, double, EXPR)
TSR_CPU_BINARY_FLOAT_LOOPS(f32, float, f, alpha_f32, TSR_CPU_BINARY_F32)
TSR_CPU_BINARY_FLOAT_LOOPS(f64, double, , alpha_f64, TSR_CPU_BINARY_F64)
TSR_CPU_BINARY_FLOAT_LOOPS(bf16, float, f, alpha_f32, TSR_CPU_EW_LOOPS_2_BF16)
TSR_CPU_BINARY_FLOAT_LOOPS(f16, float, f, alpha_f32, TSR_CPU_EW_LOOPS_2_F16)

// Integer arithmetic wraps modulo 2^bits through the unsigned type U (signed
// overflow would be undefined). Division truncates toward zero; x / 0 is 0;
// INT_MIN / -1 wraps to INT_MIN instead of trapping.
#define TSR_CPU_BINARY_INT_LOOPS(S, T, U)                                                       \
  static inline T tsr_cpu_div_##S(T a, T b) {                                                  \
    return b == 0 ? 0 : (b == -1 ? (T)((U)0 - (U)a) : a / b);                                  \
  }                                                                                            \
  TSR_CPU_EW_LOOPS_2(add_##S, T, T, T, (U)a + (U)b)                                            \
  TSR_CPU_EW_LOOPS_2(add_alpha_##S, T, T, T, (U)a + (U)p->alpha_i64 * (U)b)                    \
  TSR_CPU_EW_LOOPS_2(sub_##S, T, T, T, (U)a - (U)b)                                            \
  TSR_CPU_EW_LOOPS_2(sub_alpha_##S, T, T, T, (U)a - (U)p->alpha_i64 * (U)b)                    \
  TSR_CPU_EW_LOOPS_2(mul_##S, T, T, T, (U)a * (U)b)                                            \
  TSR_CPU_EW_LOOPS_2(div_##S, T, T, T, tsr_cpu_div_##S(a, b))                                  \
  TSR_CPU_EW_LOOPS_2(maximum_##S, T, T, T, a > b ? a : b)                                      \
  TSR_CPU_EW_LOOPS_2(minimum_##S, T, T, T, a < b ? a : b)

TSR_CPU_BINARY_INT_LOOPS(i32, int32_t, uint32_t)
TSR_CPU_BINARY_INT_LOOPS(i64, int64_t, uint64_t)

TSR_CPU_EW_LOOPS_2(logical_and_b8, uint8_t, uint8_t, uint8_t, (a != 0) & (b != 0))
TSR_CPU_EW_LOOPS_2(logical_or_b8, uint8_t, uint8_t, uint8_t, (a != 0) | (b != 0))
TSR_CPU_EW_LOOPS_2(logical_xor_b8, uint8_t, uint8_t, uint8_t, (a != 0) ^ (b != 0))

#define K(name) TSR_CPU_EW_KERNEL_INIT(name)
// Kernels indexed by dtype.
#define FLOAT_ONLY(n)                                                                      \
  {[TSR_FLOAT32] = K(n##_f32), [TSR_FLOAT64] = K(n##_f64), [TSR_BFLOAT16] = K(n##_bf16),   \
   [TSR_FLOAT16] = K(n##_f16)}
#define NUMBER(n)                                                                          \
  {[TSR_FLOAT32] = K(n##_f32), [TSR_FLOAT64] = K(n##_f64), [TSR_BFLOAT16] = K(n##_bf16),   \
   [TSR_FLOAT16] = K(n##_f16), [TSR_INT32] = K(n##_i32), [TSR_INT64] = K(n##_i64)}
#define BOOL_ONLY(n) {[TSR_BOOL] = K(n##_b8)}

typedef struct tsr_cpu_binary_fn_info {
  const char *name;
  const char *dtypes;
  tsr_cpu_ew_kernel kernels[TSR_DTYPE_COUNT];        // indexed by dtype
  tsr_cpu_ew_kernel alpha_kernels[TSR_DTYPE_COUNT];  // ADD and SUB when alpha != 1
} tsr_cpu_binary_fn_info;

static const tsr_cpu_binary_fn_info k_binary_fns[TSR_BINARY_FN_COUNT] = {
    [TSR_BINARY_ADD] = {"add", "float and int", NUMBER(add), NUMBER(add_alpha)},
    [TSR_BINARY_SUB] = {"sub", "float and int", NUMBER(sub), NUMBER(sub_alpha)},
    [TSR_BINARY_MUL] = {"mul", "float and int", NUMBER(mul), {{0}}},
    [TSR_BINARY_DIV] = {"div", "float and int", NUMBER(div), {{0}}},
    [TSR_BINARY_MAXIMUM] = {"maximum", "float and int", NUMBER(maximum), {{0}}},
    [TSR_BINARY_MINIMUM] = {"minimum", "float and int", NUMBER(minimum), {{0}}},
    [TSR_BINARY_POW] = {"pow", "float", FLOAT_ONLY(pow), {{0}}},
    [TSR_BINARY_LOGICAL_AND] = {"logical_and", "bool", BOOL_ONLY(logical_and), {{0}}},
    [TSR_BINARY_LOGICAL_OR] = {"logical_or", "bool", BOOL_ONLY(logical_or), {{0}}},
    [TSR_BINARY_LOGICAL_XOR] = {"logical_xor", "bool", BOOL_ONLY(logical_xor), {{0}}},
};

#undef K
#undef NUMBER
#undef FLOAT_ONLY
#undef BOOL_ONLY

tsr_status tsr_cpu_binary_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"a", "b", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 2, 2, 1, names);
  if (status != TSR_OK) return status;
  const tsr_binary_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, offsetof(tsr_binary_attrs, fn) + sizeof(tsr_binary_fn_t),
                             (const void **)&attrs);
  if (status != TSR_OK) return status;
  if (attrs->fn < 0 || attrs->fn >= TSR_BINARY_FN_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(attrs->fn < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "binary: attrs fn %d is not a binary fn",
                             (int)attrs->fn);
  }
  double alpha = TSR_ABI_COVERS(attrs, tsr_binary_attrs, alpha) ? attrs->alpha : 1.0;
  const tsr_cpu_binary_fn_info *info = &k_binary_fns[attrs->fn];
  const tsr_cpu_operand *a = &plan->operands[0];
  const tsr_cpu_operand *b = &plan->operands[1];
  const tsr_cpu_operand *out = &plan->operands[2];
  status = tsr_cpu_same_dtype_check(signature, out, a);
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, out, b);
  if (status == TSR_OK) status = tsr_cpu_broadcast_check(signature, a, out);
  if (status == TSR_OK) status = tsr_cpu_broadcast_check(signature, b, out);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 1);
  if (status != TSR_OK) return status;
  const int slot = out->dtype;
  if (out->dtype == TSR_BOOL && info->kernels[slot].contiguous == NULL) {
    // The catalogue is silent on arithmetic over bool; ref does not guess.
    return tsr_cpu_error_set(TSR_UNSUPPORTED,
                             "ref: binary %s on bool is not implemented (use a logical fn)",
                             info->name);
  }
  if (info->kernels[slot].contiguous == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "binary: a dtype %s is not allowed: %s takes %s",
                             tsr_cpu_dtype_name(out->dtype), info->name, info->dtypes);
  }
  tsr_cpu_ew_kernel kernel = info->kernels[slot];
  tsr_cpu_ew_params params = {0};
  int uses_alpha = attrs->fn == TSR_BINARY_ADD || attrs->fn == TSR_BINARY_SUB;
  if (uses_alpha && alpha != 1.0) {
    if (out->dtype == TSR_INT32 || out->dtype == TSR_INT64) {
      if (!(alpha == trunc(alpha)) || fabs(alpha) >= 9223372036854775808.0) {
        return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                                 "binary: alpha %g is not an integer, which int dtypes require",
                                 alpha);
      }
      params.alpha_i64 = (int64_t)alpha;
    }
    params.alpha_f64 = alpha;
    params.alpha_f32 = (float)alpha;
    kernel = info->alpha_kernels[slot];
  }
  tsr_cpu_ew_plan_from_operands(plan, kernel, attrs->fn == TSR_BINARY_POW ? TSR_CPU_EW_EXPENSIVE
                                                                          : TSR_CPU_EW_CHEAP);
  plan->u.ew.params = params;
  return TSR_OK;
}
