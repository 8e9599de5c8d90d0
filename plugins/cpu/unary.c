// UNARY and UNARY_BACKWARD.
#include <math.h>

#include "ew_loops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"
#include "tsr_cpu/cpu_kernels.h"

// Forward kernels of one float dtype: N names it (f32, f64, bf16, f16); S, T,
// F are the tag, type and libm suffix of the type it computes in (the half
// types compute in float32), A the params field holding alpha in that type,
// and L(name, EXPR) the loop macro that loads and stores the dtype.
#define TSR_CPU_UNARY_FLOAT_LOOPS(N, S, T, F, A, L)                                                   \
  L(neg_##N, -x)                                                        \
  L(abs_##N, fabs##F(x))                                                \
  L(exp_##N, exp##F(x))                                                 \
  L(log_##N, log##F(x))                                                 \
  L(sqrt_##N, sqrt##F(x))                                               \
  L(rsqrt_##N, (T)1 / sqrt##F(x))                                       \
  L(reciprocal_##N, (T)1 / x)                                           \
  L(square_##N, x * x)                                                  \
  L(sin_##N, sin##F(x))                                                 \
  L(cos_##N, cos##F(x))                                                 \
  L(tanh_##N, tanh##F(x))                                               \
  L(sigmoid_##N, tsr_cpu_sigmoid_##S(x))                                \
  L(relu_##N, tsr_cpu_relu_##S(x))                                      \
  L(gelu_##N, tsr_cpu_gelu_##S(x))                                      \
  L(gelu_tanh_##N, tsr_cpu_gelu_tanh_##S(x))                            \
  L(silu_##N, tsr_cpu_silu_##S(x))                                      \
  L(leaky_relu_##N, x > 0 ? x : p->A * x)                               \
  L(elu_##N, x > 0 ? x : p->A * expm1##F(x))                            \
  L(sign_##N, tsr_cpu_sign_##S(x))                                      \
  L(floor_##N, floor##F(x))                                             \
  L(ceil_##N, ceil##F(x))                                               \
  /* nearbyint rounds half to even in the default rounding mode. */                           \
  L(round_##N, nearbyint##F(x))                                         \
  L(log1p_##N, log1p##F(x))                                             \
  L(expm1_##N, expm1##F(x))                                             \
  L(erf_##N, erf##F(x))

#define TSR_CPU_UNARY_F32(name, EXPR) TSR_CPU_EW_LOOPS_1(name, float, float, EXPR)
#define TSR_CPU_UNARY_F64(name, EXPR) TSR_CPU_EW_LOOPS_1(name, double, double, EXPR)
TSR_CPU_UNARY_FLOAT_LOOPS(f32, f32, float, f, alpha_f32, TSR_CPU_UNARY_F32)
TSR_CPU_UNARY_FLOAT_LOOPS(f64, f64, double, , alpha_f64, TSR_CPU_UNARY_F64)
TSR_CPU_UNARY_FLOAT_LOOPS(bf16, f32, float, f, alpha_f32, TSR_CPU_EW_LOOPS_1_BF16)
TSR_CPU_UNARY_FLOAT_LOOPS(f16, f32, float, f, alpha_f32, TSR_CPU_EW_LOOPS_1_F16)

// Integer kernels wrap modulo 2^bits (through the unsigned type U): -INT_MIN
// and |INT_MIN| are INT_MIN, as two's complement hardware gives.
#define TSR_CPU_UNARY_INT_LOOPS(S, T, U)                                                        \
  TSR_CPU_EW_LOOPS_1(neg_##S, T, T, (T)((U)0 - (U)x))                                          \
  TSR_CPU_EW_LOOPS_1(abs_##S, T, T, x < 0 ? (T)((U)0 - (U)x) : x)                              \
  TSR_CPU_EW_LOOPS_1(square_##S, T, T, (T)((U)x * (U)x))                                       \
  TSR_CPU_EW_LOOPS_1(relu_##S, T, T, x < 0 ? 0 : x)                                            \
  TSR_CPU_EW_LOOPS_1(sign_##S, T, T, (x > 0) - (x < 0))

TSR_CPU_UNARY_INT_LOOPS(i32, int32_t, uint32_t)
TSR_CPU_UNARY_INT_LOOPS(i64, int64_t, uint64_t)
TSR_CPU_EW_LOOPS_1(logical_not_b8, uint8_t, uint8_t, x == 0)

// Backward kernels (a = dy, b = x) of one float dtype, named as above; L(name,
// EXPR) is a two-input loop macro. f'(NaN) is NaN for every fn (docs/abi.md
// 10.5), so dx is NaN where x is: the fns whose derivative does not read x
// (neg) or does only through a comparison (relu, leaky_relu) test for it.
#define TSR_CPU_UNARY_GRAD_LOOPS(N, S, T, F, A, L)                                                    \
  L(neg_grad_##N, b != b ? b : -a)                                                \
  L(abs_grad_##N, tsr_cpu_abs_grad_##S(a, b))                        \
  L(exp_grad_##N, tsr_cpu_exp_grad_##S(a, b))                        \
  L(log_grad_##N, a / b)                                             \
  L(sqrt_grad_##N, a / ((T)2 * sqrt##F(b)))                          \
  L(rsqrt_grad_##N, (T)-0.5 * a / (b * sqrt##F(b)))                  \
  L(reciprocal_grad_##N, -a / (b * b))                               \
  L(square_grad_##N, (T)2 * b * a)                                   \
  L(sin_grad_##N, a * cos##F(b))                                     \
  L(cos_grad_##N, -a * sin##F(b))                                    \
  L(tanh_grad_##N, tsr_cpu_tanh_grad_##S(a, b))                      \
  L(sigmoid_grad_##N, tsr_cpu_sigmoid_grad_##S(a, b))                \
  L(relu_grad_##N, b > 0 ? a : (b != b ? b : (T)0))                                 \
  L(gelu_grad_##N, tsr_cpu_gelu_grad_##S(a, b))                      \
  L(gelu_tanh_grad_##N, tsr_cpu_gelu_tanh_grad_##S(a, b))            \
  L(silu_grad_##N, tsr_cpu_silu_grad_##S(a, b))                      \
  L(leaky_relu_grad_##N, b > 0 ? a : (b != b ? b : p->A * a))                       \
  L(elu_grad_##N, b > 0 ? a : p->A * a * exp##F(b))                  \
  L(log1p_grad_##N, a / ((T)1 + b))                                  \
  L(expm1_grad_##N, tsr_cpu_exp_grad_##S(a, b))                      \
  L(erf_grad_##N, a * (T)TSR_CPU_2_OVER_SQRT_PI * exp##F(-b * b))

#define TSR_CPU_GRAD_F32(name, EXPR) TSR_CPU_EW_LOOPS_2(name, float, float, float, EXPR)
#define TSR_CPU_GRAD_F64(name, EXPR) TSR_CPU_EW_LOOPS_2(name, double, double, double, EXPR)
TSR_CPU_UNARY_GRAD_LOOPS(f32, f32, float, f, alpha_f32, TSR_CPU_GRAD_F32)
TSR_CPU_UNARY_GRAD_LOOPS(f64, f64, double, , alpha_f64, TSR_CPU_GRAD_F64)
TSR_CPU_UNARY_GRAD_LOOPS(bf16, f32, float, f, alpha_f32, TSR_CPU_EW_LOOPS_2_BF16)
TSR_CPU_UNARY_GRAD_LOOPS(f16, f32, float, f, alpha_f32, TSR_CPU_EW_LOOPS_2_F16)

// Kernels indexed by dtype. An empty entry is a dtype the catalogue does not
// define the fn for.
enum { TSR_CPU_SLOTS = TSR_DTYPE_COUNT };

#define K(name) TSR_CPU_EW_KERNEL_INIT(name)
#define FLOAT_ONLY(n)                                                                      \
  {[TSR_FLOAT32] = K(n##_f32), [TSR_FLOAT64] = K(n##_f64), [TSR_BFLOAT16] = K(n##_bf16),   \
   [TSR_FLOAT16] = K(n##_f16)}
#define FLOAT_INT(n)                                                                       \
  {[TSR_FLOAT32] = K(n##_f32), [TSR_FLOAT64] = K(n##_f64), [TSR_BFLOAT16] = K(n##_bf16),   \
   [TSR_FLOAT16] = K(n##_f16), [TSR_INT32] = K(n##_i32), [TSR_INT64] = K(n##_i64)}
#define GRAD(n) FLOAT_ONLY(n##_grad)
#define NONE {{0}}

typedef struct tsr_cpu_unary_fn_info {
  const char *name;
  const char *dtypes;  // completes "not allowed: <name> takes <dtypes>"
  tsr_cpu_ew_cost cost;
  tsr_cpu_ew_kernel forward[TSR_CPU_SLOTS];
  tsr_cpu_ew_kernel backward[TSR_CPU_SLOTS];  // all empty: no backward
} tsr_cpu_unary_fn_info;

static const tsr_cpu_unary_fn_info k_unary_fns[TSR_UNARY_FN_COUNT] = {
    [TSR_UNARY_NEG] = {"neg", "float and int", TSR_CPU_EW_CHEAP, FLOAT_INT(neg), GRAD(neg)},
    [TSR_UNARY_ABS] = {"abs", "float and int", TSR_CPU_EW_CHEAP, FLOAT_INT(abs), GRAD(abs)},
    [TSR_UNARY_EXP] = {"exp", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(exp), GRAD(exp)},
    [TSR_UNARY_LOG] = {"log", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(log), GRAD(log)},
    [TSR_UNARY_SQRT] = {"sqrt", "float", TSR_CPU_EW_CHEAP, FLOAT_ONLY(sqrt), GRAD(sqrt)},
    [TSR_UNARY_RSQRT] = {"rsqrt", "float", TSR_CPU_EW_CHEAP, FLOAT_ONLY(rsqrt), GRAD(rsqrt)},
    [TSR_UNARY_RECIPROCAL] = {"reciprocal", "float", TSR_CPU_EW_CHEAP, FLOAT_ONLY(reciprocal),
                              GRAD(reciprocal)},
    [TSR_UNARY_SQUARE] = {"square", "float and int", TSR_CPU_EW_CHEAP, FLOAT_INT(square),
                          GRAD(square)},
    [TSR_UNARY_SIN] = {"sin", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(sin), GRAD(sin)},
    [TSR_UNARY_COS] = {"cos", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(cos), GRAD(cos)},
    [TSR_UNARY_TANH] = {"tanh", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(tanh), GRAD(tanh)},
    [TSR_UNARY_SIGMOID] = {"sigmoid", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(sigmoid),
                           GRAD(sigmoid)},
    [TSR_UNARY_RELU] = {"relu", "float and int", TSR_CPU_EW_CHEAP, FLOAT_INT(relu), GRAD(relu)},
    [TSR_UNARY_GELU] = {"gelu", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(gelu), GRAD(gelu)},
    [TSR_UNARY_GELU_TANH] = {"gelu_tanh", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(gelu_tanh),
                             GRAD(gelu_tanh)},
    [TSR_UNARY_SILU] = {"silu", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(silu), GRAD(silu)},
    [TSR_UNARY_LEAKY_RELU] = {"leaky_relu", "float", TSR_CPU_EW_CHEAP, FLOAT_ONLY(leaky_relu),
                              GRAD(leaky_relu)},
    [TSR_UNARY_ELU] = {"elu", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(elu), GRAD(elu)},
    [TSR_UNARY_SIGN] = {"sign", "float and int", TSR_CPU_EW_CHEAP, FLOAT_INT(sign), NONE},
    [TSR_UNARY_FLOOR] = {"floor", "float", TSR_CPU_EW_CHEAP, FLOAT_ONLY(floor), NONE},
    [TSR_UNARY_CEIL] = {"ceil", "float", TSR_CPU_EW_CHEAP, FLOAT_ONLY(ceil), NONE},
    [TSR_UNARY_ROUND] = {"round", "float", TSR_CPU_EW_CHEAP, FLOAT_ONLY(round), NONE},
    [TSR_UNARY_LOGICAL_NOT] = {"logical_not", "bool", TSR_CPU_EW_CHEAP,
                               {[TSR_BOOL] = K(logical_not_b8)}, NONE},
    [TSR_UNARY_LOG1P] = {"log1p", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(log1p), GRAD(log1p)},
    [TSR_UNARY_EXPM1] = {"expm1", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(expm1), GRAD(expm1)},
    [TSR_UNARY_ERF] = {"erf", "float", TSR_CPU_EW_EXPENSIVE, FLOAT_ONLY(erf), GRAD(erf)},
};

#undef K
#undef FLOAT_ONLY
#undef FLOAT_INT
#undef GRAD
#undef NONE

// Reads UNARY's attrs: fn must be present; alpha defaults to the usual slopes
// when an older, shorter struct lacks it.
static tsr_status tsr_cpu_unary_attrs_read(const tsr_op_signature *signature,
                                           const tsr_unary_attrs **out_attrs, double *out_alpha) {
  const tsr_unary_attrs *attrs;
  tsr_status status = tsr_cpu_attrs_get(
      signature, offsetof(tsr_unary_attrs, fn) + sizeof(tsr_unary_fn_t), (const void **)&attrs);
  if (status != TSR_OK) return status;
  if (attrs->fn < 0 || attrs->fn >= TSR_UNARY_FN_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(attrs->fn < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "%s: attrs fn %d is not a unary fn",
                             tsr_op_name(signature->op), (int)attrs->fn);
  }
  if (TSR_ABI_COVERS(attrs, tsr_unary_attrs, alpha)) {
    *out_alpha = attrs->alpha;
  } else {
    *out_alpha = attrs->fn == TSR_UNARY_LEAKY_RELU ? 0.01 : 1.0;
  }
  *out_attrs = attrs;
  return TSR_OK;
}

static void tsr_cpu_unary_params_set(tsr_plugin_plan *plan, double alpha) {
  plan->u.ew.params.alpha_f64 = alpha;
  plan->u.ew.params.alpha_f32 = (float)alpha;
}

tsr_status tsr_cpu_unary_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 1, names);
  if (status != TSR_OK) return status;
  const tsr_unary_attrs *attrs = NULL;
  double alpha = 0.0;
  status = tsr_cpu_unary_attrs_read(signature, &attrs, &alpha);
  if (status != TSR_OK) return status;
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  const tsr_cpu_unary_fn_info *info = &k_unary_fns[attrs->fn];
  status = tsr_cpu_same_dtype_check(signature, x, out);
  if (status == TSR_OK) status = tsr_cpu_same_sizes_check(signature, x, out);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 1);
  if (status != TSR_OK) return status;
  tsr_cpu_ew_kernel kernel = info->forward[x->dtype];
  if (kernel.contiguous == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "unary: x dtype %s is not allowed: %s takes %s",
                             tsr_cpu_dtype_name(x->dtype), info->name, info->dtypes);
  }
  tsr_cpu_ew_plan_from_operands(plan, kernel, info->cost);
  tsr_cpu_unary_params_set(plan, alpha);
  return TSR_OK;
}

tsr_status tsr_cpu_unary_backward_plan_init(const tsr_op_signature *signature,
                                            tsr_plugin_plan *plan) {
  static const char *const names[] = {"dy", "x", "dx"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 2, 2, 1, names);
  if (status != TSR_OK) return status;
  const tsr_unary_attrs *attrs = NULL;
  double alpha = 0.0;
  status = tsr_cpu_unary_attrs_read(signature, &attrs, &alpha);
  if (status != TSR_OK) return status;
  const tsr_cpu_operand *dy = &plan->operands[0];
  const tsr_cpu_operand *x = &plan->operands[1];
  const tsr_cpu_operand *dx = &plan->operands[2];
  const tsr_cpu_unary_fn_info *info = &k_unary_fns[attrs->fn];
  if (info->backward[TSR_FLOAT32].contiguous == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "unary_backward: %s has no backward",
                             info->name);
  }
  status = tsr_cpu_same_dtype_check(signature, dx, dy);
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, dx, x);
  if (status == TSR_OK) status = tsr_cpu_same_sizes_check(signature, dy, dx);
  if (status == TSR_OK) status = tsr_cpu_same_sizes_check(signature, x, dx);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, dx);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  tsr_cpu_ew_kernel kernel = info->backward[x->dtype];
  if (kernel.contiguous == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "unary_backward: x dtype %s is not allowed: the backward takes float",
                             tsr_cpu_dtype_name(x->dtype));
  }
  tsr_cpu_ew_plan_from_operands(plan, kernel, info->cost);
  tsr_cpu_unary_params_set(plan, alpha);
  return TSR_OK;
}
