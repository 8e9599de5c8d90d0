// Shared by the oracle's files: per-family entry points and small helpers.
#ifndef TESSERA_CONFORMANCE_ORACLE_ORACLE_INTERNAL_H_
#define TESSERA_CONFORMANCE_ORACLE_ORACLE_INTERNAL_H_

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "oracle.h"

// Ulps of slack granted to one evaluation of a transcendental function:
// C * u is 4 ulps, which covers libm (<= 1 ulp) and the fast vendor
// intrinsics (CUDA's documented float32 maxima are 2 to 4 ulps).
#define TSR_ORACLE_FN_SLACK 8.0

// Records why the call is refused and returns |code|.
static inline tsr_status tsr_oracle_fail(tsr_oracle_call *call, tsr_status code,
                                         const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(call->message, sizeof(call->message), format, args);
  va_end(args);
  return code;
}

// Marks every element of |t| exact (bound 0) with |mode| and the dtype's
// compute type.
static inline void tsr_oracle_mark(tsr_oracle_tensor *t, tsr_oracle_compare_t mode) {
  t->compare = mode;
  t->compute = tsr_oracle_compute_dtype(t->dtype);
  for (int64_t i = 0; i < t->numel; ++i) t->bound[i] = 0;
}

// The attribute value |x| converted to the compute type of |dtype| before
// use (docs/abi.md 10.1).
static inline double tsr_oracle_attr(double x, tsr_dtype_t dtype) {
  return tsr_oracle_round(x, tsr_oracle_compute_dtype(dtype));
}

// A compensated (Neumaier) float64 sum: the oracle's sums are accurate to a
// few ulps of the result whatever their length, so a float64 plugin is
// compared with something much better than its own naive sum. Infinities and
// NaN go through a plain sum, which then decides the result.
typedef struct tsr_oracle_sum {
  double s, c, plain;
} tsr_oracle_sum;

// Adds |x| to the compensated parts only.
static inline void tsr_oracle_sum_add_exact_part(tsr_oracle_sum *acc, double x) {
  double t = acc->s + x;
  if (fabs(acc->s) >= fabs(x)) {
    acc->c += (acc->s - t) + x;
  } else {
    acc->c += (x - t) + acc->s;
  }
  acc->s = t;
}

static inline void tsr_oracle_sum_add(tsr_oracle_sum *acc, double x) {
  acc->plain += x;
  tsr_oracle_sum_add_exact_part(acc, x);
}

// Adds a * b exactly: the product's rounding error comes from an fma.
static inline void tsr_oracle_sum_add_product(tsr_oracle_sum *acc, double a, double b) {
  double p = a * b;
  tsr_oracle_sum_add(acc, p);
  if (isfinite(p)) tsr_oracle_sum_add_exact_part(acc, fma(a, b, -p));
}

static inline double tsr_oracle_sum_get(const tsr_oracle_sum *acc) {
  if (!isfinite(acc->plain) || !isfinite(acc->s)) return acc->plain;
  return acc->s + acc->c;
}

tsr_status tsr_oracle_elementwise_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_reduce_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_matmul_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_conv_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_pool_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_softmax_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_norm_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_layout_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_rng_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_loss_compute(tsr_oracle_call *call);
tsr_status tsr_oracle_optim_compute(tsr_oracle_call *call);

// Error-bound magnitude of evaluating activation |act| at |v| (units of u),
// given that |v| itself carries |bound_v| units of error.
double tsr_oracle_activation_bound(tsr_activation_t act, double v, double bound_v);

#endif  // TESSERA_CONFORMANCE_ORACLE_ORACLE_INTERNAL_H_
