// SGD_UPDATE and ADAM_UPDATE: fused optimizer steps, in place on the
// parameter and its state.
//
// Bandwidth-bound: SGD with momentum streams 3 tensors in and 2 out, Adam 4
// in and 3 out, for a handful of flops per element. The plan collapses the
// shape with the elementwise engine's rules (tsr_cpu_ew_plan_init); when every
// operand is contiguous the loop runs over plain arrays that gcc vectorises,
// otherwise a strided loop walks rows. Elementwise, so any chunking gives the
// same bits.
#include <math.h>
#include <string.h>

#include "data_ops.h"
#include "half.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// Element access for the two loop shapes: a contiguous loop indexes arrays,
// a strided one steps bytes.
#define TSR_CPU_AT_CONTIGUOUS(T, k, i) (((T *)(void *)ptrs[k])[i])
#define TSR_CPU_AT_STRIDED(T, k, i) (*(T *)(void *)(ptrs[k] + (i) * steps[k]))

#define TSR_CPU_LOAD_SAME(v) (v)
#define TSR_CPU_STORE_SAME(v) (v)

// SGD, per element in compute type C (constants from o->K):
//   g = grad + weight_decay * param
//   buf = first_step ? g : momentum * buf + (1 - dampening) * g   (momentum != 0)
//   d = nesterov ? g + momentum * buf : buf                       (d = g otherwise)
//   param -= lr * d
#define TSR_CPU_SGD_LOOP(name, AT, T, C, K, LOAD, STORE)                                     \
  static void name(char *const *ptrs, const int64_t *steps, int64_t n,                       \
                   const tsr_cpu_optim_plan *o) {                                            \
    (void)steps;                                                                             \
    const C lr = o->K.lr, wd = o->K.weight_decay;                                            \
    if (!o->has_momentum) {                                                                  \
      TSR_CPU_IVDEP_LOOP for (int64_t i = 0; i < n; ++i) {                                   \
        const C p = LOAD(AT(T, 1, i));                                                       \
        const C g = LOAD(AT(T, 0, i)) + wd * p;                                              \
        AT(T, 1, i) = STORE(p - lr * g);                                                     \
      }                                                                                      \
      return;                                                                                \
    }                                                                                        \
    const C momentum = o->K.momentum, omd = o->K.one_minus_dampening;                        \
    const int first = o->first_step, nesterov = o->nesterov;                                 \
    TSR_CPU_IVDEP_LOOP for (int64_t i = 0; i < n; ++i) {                                     \
      const C p = LOAD(AT(T, 1, i));                                                         \
      const C g = LOAD(AT(T, 0, i)) + wd * p;                                                \
      const C buf = first ? g : momentum * LOAD(AT(T, 2, i)) + omd * g;                      \
      const C d = nesterov ? g + momentum * buf : buf;                                       \
      AT(T, 2, i) = STORE(buf);                                                              \
      AT(T, 1, i) = STORE(p - lr * d);                                                       \
    }                                                                                        \
  }

// Adam, per element in compute type C:
//   AdamW: param *= 1 - lr * weight_decay; g = grad
//   Adam:  g = grad + weight_decay * param
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   param -= (lr / bc1) * m / (sqrt(v / bc2) + eps)
#define TSR_CPU_ADAM_LOOP(name, AT, T, C, K, LOAD, STORE, SQRT)                              \
  static void name(char *const *ptrs, const int64_t *steps, int64_t n,                       \
                   const tsr_cpu_optim_plan *o) {                                            \
    (void)steps;                                                                             \
    const C wd = o->K.weight_decay, decay = o->K.decay;                                      \
    const C beta1 = o->K.beta1, omb1 = o->K.one_minus_beta1;                                 \
    const C beta2 = o->K.beta2, omb2 = o->K.one_minus_beta2;                                 \
    const C bc2 = o->K.bc2, eps = o->K.eps, step_size = o->K.step_size;                      \
    const int decoupled = o->decoupled;                                                      \
    TSR_CPU_IVDEP_LOOP for (int64_t i = 0; i < n; ++i) {                                     \
      C p = LOAD(AT(T, 1, i));                                                               \
      C g = LOAD(AT(T, 0, i));                                                               \
      if (decoupled) {                                                                       \
        p = p * decay;                                                                       \
      } else {                                                                               \
        g = g + wd * p;                                                                      \
      }                                                                                      \
      const C m = beta1 * LOAD(AT(T, 2, i)) + omb1 * g;                                      \
      const C v = beta2 * LOAD(AT(T, 3, i)) + omb2 * (g * g);                                \
      AT(T, 2, i) = STORE(m);                                                                \
      AT(T, 3, i) = STORE(v);                                                                \
      AT(T, 1, i) = STORE(p - step_size * m / (SQRT(v / bc2) + eps));                        \
    }                                                                                        \
  }

// The outputs never overlap each other or grad (the plan checks), so the
// loops may be vectorised without runtime overlap checks.
#if defined(__clang__)
#define TSR_CPU_IVDEP_LOOP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TSR_CPU_IVDEP_LOOP _Pragma("GCC ivdep")
#else
#define TSR_CPU_IVDEP_LOOP
#endif

#define TSR_CPU_OPTIM_LOOPS(S, T, C, K, LOAD, STORE, SQRT)                                       \
  TSR_CPU_SGD_LOOP(tsr_cpu_sgd_##S##_contiguous, TSR_CPU_AT_CONTIGUOUS, T, C, K, LOAD, STORE)    \
  TSR_CPU_SGD_LOOP(tsr_cpu_sgd_##S##_strided, TSR_CPU_AT_STRIDED, T, C, K, LOAD, STORE)          \
  TSR_CPU_ADAM_LOOP(tsr_cpu_adam_##S##_contiguous, TSR_CPU_AT_CONTIGUOUS, T, C, K, LOAD, STORE,  \
                    SQRT)                                                                        \
  TSR_CPU_ADAM_LOOP(tsr_cpu_adam_##S##_strided, TSR_CPU_AT_STRIDED, T, C, K, LOAD, STORE, SQRT)

TSR_CPU_OPTIM_LOOPS(f32, float, float, f32, TSR_CPU_LOAD_SAME, TSR_CPU_STORE_SAME, sqrtf)
TSR_CPU_OPTIM_LOOPS(f64, double, double, f64, TSR_CPU_LOAD_SAME, TSR_CPU_STORE_SAME, sqrt)
TSR_CPU_OPTIM_LOOPS(bf16, uint16_t, float, f32, tsr_cpu_bf16_to_f32, tsr_cpu_f32_to_bf16, sqrtf)
TSR_CPU_OPTIM_LOOPS(f16, uint16_t, float, f32, tsr_cpu_f16_to_f32, tsr_cpu_f32_to_f16, sqrtf)

// Elements per parallel chunk: a few hundred microseconds of streaming.
#define TSR_CPU_OPTIM_GRAIN 32768

// Runs elements [begin, end) in row-major order of the collapsed shape (the
// elementwise engine's walk, with the optimizer's loops).
static void tsr_cpu_optim_range_run(const tsr_cpu_optim_plan *o, char *const *base, int64_t begin,
                                    int64_t end) {
  const tsr_cpu_ew_plan *s = &o->shape;
  const int32_t nd = s->ndim, nop = s->num_operands;
  char *ptrs[TSR_CPU_EW_MAX_OPERANDS];
  const tsr_cpu_optim_loop_fn loop = o->contiguous != NULL ? o->contiguous : o->strided;
  if (nd <= 1) {
    for (int32_t k = 0; k < nop; ++k) ptrs[k] = base[k] + begin * s->inner_strides[k];
    loop(ptrs, s->inner_strides, end - begin, o);
    return;
  }
  const int32_t inner = nd - 1;
  int64_t idx[TSR_MAX_RANK];
  int64_t rem = begin;
  for (int32_t d = inner; d >= 0; --d) {
    idx[d] = rem % s->sizes[d];
    rem /= s->sizes[d];
  }
  while (begin < end) {
    for (int32_t k = 0; k < nop; ++k) {
      char *p = base[k];
      for (int32_t d = 0; d < nd; ++d) p += idx[d] * s->strides[d][k];
      ptrs[k] = p;
    }
    int64_t n = s->sizes[inner] - idx[inner];
    if (n > end - begin) n = end - begin;
    loop(ptrs, s->inner_strides, n, o);
    begin += n;
    idx[inner] += n;
    for (int32_t d = inner; d > 0 && idx[d] == s->sizes[d]; --d) {
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

typedef struct tsr_cpu_optim_job {
  const tsr_cpu_optim_plan *o;
  char *const *ptrs;
} tsr_cpu_optim_job;

static void tsr_cpu_optim_chunk_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_optim_job *job = arg;
  tsr_cpu_optim_range_run(job->o, job->ptrs, begin, end);
}

static tsr_status tsr_cpu_optim_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                        char *workspace) {
  (void)workspace;
  const tsr_cpu_optim_plan *o = &plan->u.optim;
  const int64_t numel = o->shape.numel;
  if (numel == 0) return TSR_OK;
  if (numel < 2 * TSR_CPU_OPTIM_GRAIN) {
    tsr_cpu_optim_range_run(o, ptrs, 0, numel);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  tsr_cpu_optim_job job = {o, ptrs};
  return host->parallel_for(host->ctx, numel, TSR_CPU_OPTIM_GRAIN, tsr_cpu_optim_chunk_run, &job);
}

// Checks that the first |num_used| operands (grad, param and the state the
// update reads) share grad's float dtype and sizes, and that no output
// overlaps grad, itself or another output.
static tsr_status tsr_cpu_optim_operands_check(const tsr_op_signature *signature,
                                               tsr_plugin_plan *plan, int32_t num_used) {
  const tsr_cpu_operand *grad = &plan->operands[0];
  tsr_status status = tsr_cpu_dtype_check(signature, grad, TSR_CPU_DTYPES_FLOAT,
                                          "the optimizer updates take float");
  for (int32_t k = 1; k < num_used && status == TSR_OK; ++k) {
    const tsr_cpu_operand *operand = &plan->operands[k];
    status = tsr_cpu_same_dtype_check(signature, grad, operand);
    if (status == TSR_OK) status = tsr_cpu_same_sizes_check(signature, operand, grad);
    if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, operand);
  }
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;
  // Read-modify-write outputs that overlap would update one element twice.
  for (int32_t a = 1; a < num_used; ++a) {
    for (int32_t b = a + 1; b < num_used; ++b) {
      const tsr_cpu_operand *x = &plan->operands[a], *y = &plan->operands[b];
      if (x->alias_group >= 0 && x->alias_group == y->alias_group) {
        return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s and %s overlap (alias group %d)",
                                 tsr_op_name(signature->op), x->name, y->name,
                                 (int)x->alias_group);
      }
    }
  }
  return TSR_OK;
}

// Collapses the shape over the first |num_used| operands and picks the loop.
static void tsr_cpu_optim_shape_init(tsr_plugin_plan *plan, int32_t num_used,
                                     tsr_cpu_optim_loop_fn contiguous,
                                     tsr_cpu_optim_loop_fn strided) {
  tsr_cpu_optim_plan *o = &plan->u.optim;
  int64_t elem_sizes[TSR_CPU_EW_MAX_OPERANDS];
  const int64_t *sizes[TSR_CPU_EW_MAX_OPERANDS];
  const int64_t *strides[TSR_CPU_EW_MAX_OPERANDS];
  for (int32_t k = 0; k < num_used; ++k) {
    elem_sizes[k] = plan->operands[k].elem_size;
    sizes[k] = plan->operands[k].sizes;
    strides[k] = plan->operands[k].strides;
  }
  const tsr_cpu_ew_kernel none = {NULL, NULL};
  tsr_cpu_ew_plan_init(&o->shape, num_used, elem_sizes, plan->operands[0].rank, sizes, strides,
                       none, TSR_CPU_EW_CHEAP);
  int dense = 1;
  for (int32_t k = 0; k < num_used; ++k) {
    if (o->shape.inner_strides[k] != elem_sizes[k]) dense = 0;
  }
  o->contiguous = dense ? contiguous : NULL;
  o->strided = strided;
}

#define TSR_CPU_OPTIM_PICK(kind, dtype, out_contiguous, out_strided)         \
  switch (dtype) {                                                          \
    case TSR_FLOAT32:                                                       \
      out_contiguous = tsr_cpu_##kind##_f32_contiguous;                     \
      out_strided = tsr_cpu_##kind##_f32_strided;                           \
      break;                                                                \
    case TSR_FLOAT64:                                                       \
      out_contiguous = tsr_cpu_##kind##_f64_contiguous;                     \
      out_strided = tsr_cpu_##kind##_f64_strided;                           \
      break;                                                                \
    case TSR_BFLOAT16:                                                      \
      out_contiguous = tsr_cpu_##kind##_bf16_contiguous;                    \
      out_strided = tsr_cpu_##kind##_bf16_strided;                          \
      break;                                                                \
    default:                                                                \
      out_contiguous = tsr_cpu_##kind##_f16_contiguous;                     \
      out_strided = tsr_cpu_##kind##_f16_strided;                           \
      break;                                                                \
  }

tsr_status tsr_cpu_sgd_update_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"grad", "param", "momentum_buf"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 2, names);
  if (status != TSR_OK) return status;
  const tsr_sgd_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, sizeof(tsr_sgd_attrs), (const void **)&attrs);
  if (status != TSR_OK) return status;
  const int has_momentum = attrs->momentum != 0.0;
  if (attrs->nesterov && !(attrs->momentum > 0.0 && attrs->dampening == 0.0)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "sgd_update: nesterov needs momentum > 0 and dampening 0; got "
                             "momentum %g, dampening %g",
                             attrs->momentum, attrs->dampening);
  }
  if (!has_momentum) {
    // momentum_buf is ignored, whatever it describes: an empty extent lets
    // execution take it with a NULL buffer.
    plan->operands[2].extent_bytes = 0;
  }
  const int32_t num_used = has_momentum ? 3 : 2;
  status = tsr_cpu_optim_operands_check(signature, plan, num_used);
  if (status != TSR_OK) return status;

  tsr_cpu_optim_plan *o = &plan->u.optim;
  memset(o, 0, sizeof(*o));
  o->has_momentum = has_momentum;
  o->nesterov = attrs->nesterov != 0;
  o->first_step = attrs->first_step != 0;
  o->f64.lr = attrs->lr;
  o->f64.weight_decay = attrs->weight_decay;
  o->f64.momentum = attrs->momentum;
  o->f64.one_minus_dampening = 1.0 - attrs->dampening;
  o->f32.lr = (float)attrs->lr;
  o->f32.weight_decay = (float)attrs->weight_decay;
  o->f32.momentum = (float)attrs->momentum;
  // Coefficients formed in float64 and rounded once, as PyTorch passes its
  // Python floats: 1.0f - (float)0.999 is 0.00099998713, 13 ppm off.
  o->f32.one_minus_dampening = (float)(1.0 - attrs->dampening);
  tsr_cpu_optim_loop_fn contiguous, strided;
  TSR_CPU_OPTIM_PICK(sgd, plan->operands[0].dtype, contiguous, strided)
  tsr_cpu_optim_shape_init(plan, num_used, contiguous, strided);
  plan->execute = tsr_cpu_optim_execute;
  plan->engine = "ref:sgd";
  return TSR_OK;
}

tsr_status tsr_cpu_adam_update_plan_init(const tsr_op_signature *signature,
                                         tsr_plugin_plan *plan) {
  static const char *const names[] = {"grad", "param", "exp_avg", "exp_avg_sq"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 3, names);
  if (status != TSR_OK) return status;
  const tsr_adam_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, offsetof(tsr_adam_attrs, decoupled_weight_decay) +
                                            sizeof(uint32_t),
                             (const void **)&attrs);
  if (status != TSR_OK) return status;
  // Ranges as PyTorch checks them; written so that NaN fails too.
  const char *bad = NULL;
  double bad_value = 0;
  if (!(attrs->lr >= 0)) bad = "lr", bad_value = attrs->lr;
  else if (!(attrs->eps >= 0)) bad = "eps", bad_value = attrs->eps;
  else if (!(attrs->beta1 >= 0 && attrs->beta1 < 1)) bad = "beta1", bad_value = attrs->beta1;
  else if (!(attrs->beta2 >= 0 && attrs->beta2 < 1)) bad = "beta2", bad_value = attrs->beta2;
  else if (!(attrs->weight_decay >= 0)) bad = "weight_decay", bad_value = attrs->weight_decay;
  if (bad != NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "adam_update: attrs %s is %g, outside its range",
                             bad, bad_value);
  }
  if (attrs->step < 1) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "adam_update: attrs step is %lld; it starts at 1",
                             (long long)attrs->step);
  }
  if (TSR_ABI_COVERS(attrs, tsr_adam_attrs, reserved) && attrs->reserved != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "adam_update: attrs reserved is %u, not 0",
                             (unsigned)attrs->reserved);
  }
  status = tsr_cpu_optim_operands_check(signature, plan, 4);
  if (status != TSR_OK) return status;

  // Bias corrections once, in float64; the rest in the compute type.
  const double bc1 = 1.0 - pow(attrs->beta1, (double)attrs->step);
  const double bc2 = 1.0 - pow(attrs->beta2, (double)attrs->step);
  tsr_cpu_optim_plan *o = &plan->u.optim;
  memset(o, 0, sizeof(*o));
  o->decoupled = attrs->decoupled_weight_decay != 0;
  o->f64.lr = attrs->lr;
  o->f64.weight_decay = attrs->weight_decay;
  o->f64.beta1 = attrs->beta1;
  o->f64.one_minus_beta1 = 1.0 - attrs->beta1;
  o->f64.beta2 = attrs->beta2;
  o->f64.one_minus_beta2 = 1.0 - attrs->beta2;
  o->f64.bc2 = bc2;
  o->f64.eps = attrs->eps;
  o->f64.step_size = attrs->lr / bc1;
  o->f64.decay = 1.0 - attrs->lr * attrs->weight_decay;
  o->f32.lr = (float)attrs->lr;
  o->f32.weight_decay = (float)attrs->weight_decay;
  o->f32.beta1 = (float)attrs->beta1;
  // Coefficients formed in float64 and rounded once (see SGD's).
  o->f32.one_minus_beta1 = (float)(1.0 - attrs->beta1);
  o->f32.beta2 = (float)attrs->beta2;
  o->f32.one_minus_beta2 = (float)(1.0 - attrs->beta2);
  o->f32.bc2 = (float)bc2;
  o->f32.eps = (float)attrs->eps;
  o->f32.step_size = (float)(attrs->lr / bc1);
  o->f32.decay = (float)(1.0 - attrs->lr * attrs->weight_decay);
  tsr_cpu_optim_loop_fn contiguous, strided;
  TSR_CPU_OPTIM_PICK(adam, plan->operands[0].dtype, contiguous, strided)
  tsr_cpu_optim_shape_init(plan, 4, contiguous, strided);
  plan->execute = tsr_cpu_optim_execute;
  plan->engine = "ref:adam";
  return TSR_OK;
}
