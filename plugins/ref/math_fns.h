// Scalar functions and derivatives of UNARY's fns, for float and double,
// shared by the unary kernels and matmul's activation epilogue. Pure;
// thread-safe.
#ifndef TESSERA_PLUGINS_REF_MATH_FNS_H_
#define TESSERA_PLUGINS_REF_MATH_FNS_H_

#include <math.h>

#define TSR_REF_SQRT1_2 0.70710678118654752440
#define TSR_REF_SQRT_2_OVER_PI 0.79788456080286535588
#define TSR_REF_INV_SQRT_2PI 0.39894228040143267794
#define TSR_REF_2_OVER_SQRT_PI 1.12837916709551257390
#define TSR_REF_GELU_TANH_C 0.044715

// Writes the functions for one float type: S is the tag (f32, f64), T the
// type, F libm's suffix for it ("f" or nothing).
#define TSR_REF_MATH_FNS(S, T, F)                                                              \
  static inline T tsr_ref_sigmoid_##S(T x) { return (T)1 / ((T)1 + exp##F(-x)); }             \
  static inline T tsr_ref_gelu_##S(T x) {                                                      \
    return (T)0.5 * x * ((T)1 + erf##F(x * (T)TSR_REF_SQRT1_2));                               \
  }                                                                                            \
  static inline T tsr_ref_gelu_tanh_##S(T x) {                                                 \
    T u = (T)TSR_REF_SQRT_2_OVER_PI * (x + (T)TSR_REF_GELU_TANH_C * x * x * x);                \
    return (T)0.5 * x * ((T)1 + tanh##F(u));                                                   \
  }                                                                                            \
  /* NaN < 0 is false, so NaN passes through. */                                              \
  static inline T tsr_ref_relu_##S(T x) { return x < 0 ? (T)0 : x; }                          \
  static inline T tsr_ref_sign_##S(T x) { return x > 0 ? (T)1 : (x < 0 ? (T)-1 : x); }         \
  static inline T tsr_ref_abs_grad_##S(T dy, T x) {                                            \
    return x > 0 ? dy : (x < 0 ? -dy : (x == 0 ? (T)0 : x));                                   \
  }                                                                                            \
  /* dy * exp(x), finite wherever the product is: where exp(x) alone       */                \
  /* overflows (x just below the overflow of dy * exp(x) for |dy| < 1), as */                \
  /* (dy * exp(x / 2)) * exp(x / 2). EXP's and EXPM1's backward.           */                \
  static inline T tsr_ref_exp_grad_##S(T dy, T x) {                                            \
    T e = exp##F(x);                                                                           \
    if (!isinf(e) || isinf(x))                                                                 \
      return dy * e;                                                                           \
    T h = exp##F(x * (T)0.5);                                                                  \
    return (dy * h) * h;                                                                       \
  }                                                                                            \
  static inline T tsr_ref_tanh_grad_##S(T dy, T x) {                                           \
    T t = tanh##F(x);                                                                          \
    return dy * ((T)1 - t * t);                                                                \
  }                                                                                            \
  static inline T tsr_ref_sigmoid_grad_##S(T dy, T x) {                                        \
    T s = tsr_ref_sigmoid_##S(x);                                                              \
    return dy * s * ((T)1 - s);                                                                \
  }                                                                                            \
  static inline T tsr_ref_gelu_grad_##S(T dy, T x) {                                           \
    T cdf = (T)0.5 * ((T)1 + erf##F(x * (T)TSR_REF_SQRT1_2));                                  \
    T pdf = (T)TSR_REF_INV_SQRT_2PI * exp##F((T)-0.5 * x * x);                                 \
    return dy * (cdf + x * pdf);                                                               \
  }                                                                                            \
  static inline T tsr_ref_gelu_tanh_grad_##S(T dy, T x) {                                      \
    const T k = (T)TSR_REF_SQRT_2_OVER_PI;                                                     \
    T t = tanh##F(k * (x + (T)TSR_REF_GELU_TANH_C * x * x * x));                               \
    T du = k * ((T)1 + (T)(3 * TSR_REF_GELU_TANH_C) * x * x);                                  \
    return dy * ((T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * du);                      \
  }                                                                                            \
  /* sigmoid(x) for SILU's products: below x = -80 as e / (1 + e) with     */                \
  /* e = exp(x), so that x * sigmoid(x) stays normal where it is (down to   */                \
  /* x = -91.8 in float32) instead of vanishing once exp(-x) overflows.    */                \
  static inline T tsr_ref_silu_sigmoid_##S(T x) {                                              \
    if (!(x < (T)-80))                                                                         \
      return tsr_ref_sigmoid_##S(x);                                                           \
    T e = exp##F(x);                                                                           \
    return e / ((T)1 + e);                                                                     \
  }                                                                                            \
  static inline T tsr_ref_silu_##S(T x) { return x * tsr_ref_silu_sigmoid_##S(x); }            \
  static inline T tsr_ref_silu_grad_##S(T dy, T x) {                                           \
    T s = tsr_ref_silu_sigmoid_##S(x);                                                         \
    return dy * s * ((T)1 + x * ((T)1 - s));                                                   \
  }

TSR_REF_MATH_FNS(f32, float, f)
TSR_REF_MATH_FNS(f64, double, )

#endif  // TESSERA_PLUGINS_REF_MATH_FNS_H_
