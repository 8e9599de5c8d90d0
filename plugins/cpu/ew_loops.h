// Macros that write an elementwise kernel's two loops from one expression.
//
// The contiguous loop is the fast path: unit steps, no restrict (an in-place
// output aliases an input exactly) but an ivdep promise, which holds because
// element i is read before element i is written and no other element is
// touched; gcc then vectorises it without runtime overlap checks. The strided
// loop takes any byte steps, 0 included (broadcast). The _CVT forms convert at
// the load and the store (bfloat16 and float16 compute in float32); the plain
// forms are the _CVT forms with a plain load and a cast as the store, so they
// compile to exactly the loops they always were.
#ifndef TESSERA_PLUGINS_CPU_EW_LOOPS_H_
#define TESSERA_PLUGINS_CPU_EW_LOOPS_H_

#include <stdint.h>

#include "elementwise.h"
#include "half.h"

#if defined(__clang__)
#define TSR_CPU_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TSR_CPU_IVDEP _Pragma("GCC ivdep")
#else
#define TSR_CPU_IVDEP
#endif

#define TSR_CPU_EW_UNUSED(p) (void)(p)

// out = EXPR with only p in scope: the output is the only operand.
#define TSR_CPU_EW_LOOPS_0(name, TO, EXPR)                                                    \
  static void name##_contiguous(char *const *ptrs, const int64_t *strides, int64_t n,          \
                                const tsr_cpu_ew_params *p) {                                  \
    TSR_CPU_EW_UNUSED(strides);                                                                \
    TO *o_ = (TO *)ptrs[0];                                                                    \
    const TO v_ = (TO)(EXPR);                                                                  \
    for (int64_t i = 0; i < n; ++i) o_[i] = v_;                                                \
  }                                                                                            \
  static void name##_strided(char *const *ptrs, const int64_t *strides, int64_t n,             \
                             const tsr_cpu_ew_params *p) {                                     \
    char *o_ = ptrs[0];                                                                        \
    const TO v_ = (TO)(EXPR);                                                                  \
    const int64_t so = strides[0];                                                             \
    for (int64_t i = 0; i < n; ++i) *(TO *)(o_ + i * so) = v_;                                 \
  }

// Loads and stores of the _CVT loops. A load turns a stored element into the
// type the expression computes in; a store turns the expression's value into
// the stored type TO. The half types are stored as 16 bits and computed in
// float32 (half.h rounds to nearest even).
#define TSR_CPU_LOAD_SAME(v) (v)
#define TSR_CPU_STORE_CAST(TO, v) ((TO)(v))
#define TSR_CPU_LOAD_BF16(v) tsr_cpu_bf16_to_f32(v)
#define TSR_CPU_LOAD_F16(v) tsr_cpu_f16_to_f32(v)
#define TSR_CPU_STORE_BF16(TO, v) tsr_cpu_f32_to_bf16((float)(v))
#define TSR_CPU_STORE_F16(TO, v) tsr_cpu_f32_to_f16((float)(v))

// out = STORE(TO, EXPR), with x = LOAD(element of operand 0) of type CX and p
// (the params) in scope; TX is operand 0's stored type; out is operand 1.
#define TSR_CPU_EW_LOOPS_1_CVT(name, TO, STORE, TX, CX, LOAD, EXPR)                           \
  static void name##_contiguous(char *const *ptrs, const int64_t *strides, int64_t n,          \
                                const tsr_cpu_ew_params *p) {                                  \
    TSR_CPU_EW_UNUSED(strides);                                                                \
    TSR_CPU_EW_UNUSED(p);                                                                      \
    const TX *x_ = (const TX *)ptrs[0];                                                        \
    TO *o_ = (TO *)ptrs[1];                                                                    \
    TSR_CPU_IVDEP for (int64_t i = 0; i < n; ++i) {                                            \
      const CX x = LOAD(x_[i]); (void)x;                                                       \
      o_[i] = STORE(TO, EXPR);                                                                 \
    }                                                                                          \
  }                                                                                            \
  static void name##_strided(char *const *ptrs, const int64_t *strides, int64_t n,             \
                             const tsr_cpu_ew_params *p) {                                     \
    TSR_CPU_EW_UNUSED(p);                                                                      \
    const char *x_ = ptrs[0];                                                                  \
    char *o_ = ptrs[1];                                                                        \
    const int64_t sx = strides[0], so = strides[1];                                            \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      const CX x = LOAD(*(const TX *)(x_ + i * sx)); (void)x;                                  \
      *(TO *)(o_ + i * so) = STORE(TO, EXPR);                                                  \
    }                                                                                          \
  }

// out = EXPR, with x (operand 0) and p (the params) in scope; out is operand 1.
#define TSR_CPU_EW_LOOPS_1(name, TO, TX, EXPR) \
  TSR_CPU_EW_LOOPS_1_CVT(name, TO, TSR_CPU_STORE_CAST, TX, TX, TSR_CPU_LOAD_SAME, EXPR)

// out = STORE(TO, EXPR), with a = LOAD(operand 0) of type CA, b = LOAD(operand
// 1) of type CB and p in scope; TA and TB are the stored types; out is
// operand 2.
#define TSR_CPU_EW_LOOPS_2_CVT(name, TO, STORE, TA, CA, TB, CB, LOAD, EXPR)                   \
  static void name##_contiguous(char *const *ptrs, const int64_t *strides, int64_t n,          \
                                const tsr_cpu_ew_params *p) {                                  \
    TSR_CPU_EW_UNUSED(strides);                                                                \
    TSR_CPU_EW_UNUSED(p);                                                                      \
    const TA *a_ = (const TA *)ptrs[0];                                                        \
    const TB *b_ = (const TB *)ptrs[1];                                                        \
    TO *o_ = (TO *)ptrs[2];                                                                    \
    TSR_CPU_IVDEP for (int64_t i = 0; i < n; ++i) {                                            \
      const CA a = LOAD(a_[i]); (void)a;                                                       \
      const CB b = LOAD(b_[i]); (void)b;                                                       \
      o_[i] = STORE(TO, EXPR);                                                                 \
    }                                                                                          \
  }                                                                                            \
  static void name##_strided(char *const *ptrs, const int64_t *strides, int64_t n,             \
                             const tsr_cpu_ew_params *p) {                                     \
    TSR_CPU_EW_UNUSED(p);                                                                      \
    const char *a_ = ptrs[0];                                                                  \
    const char *b_ = ptrs[1];                                                                  \
    char *o_ = ptrs[2];                                                                        \
    const int64_t sa = strides[0], sb = strides[1], so = strides[2];                           \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      const CA a = LOAD(*(const TA *)(a_ + i * sa)); (void)a;                                  \
      const CB b = LOAD(*(const TB *)(b_ + i * sb)); (void)b;                                  \
      *(TO *)(o_ + i * so) = STORE(TO, EXPR);                                                  \
    }                                                                                          \
  }

// out = EXPR, with a, b (operands 0 and 1) and p in scope; out is operand 2.
#define TSR_CPU_EW_LOOPS_2(name, TO, TA, TB, EXPR) \
  TSR_CPU_EW_LOOPS_2_CVT(name, TO, TSR_CPU_STORE_CAST, TA, TA, TB, TB, TSR_CPU_LOAD_SAME, EXPR)

// The half-type loops: operands stored as bfloat16 (float16), the expression
// computed in float32.
#define TSR_CPU_EW_LOOPS_1_BF16(name, EXPR) \
  TSR_CPU_EW_LOOPS_1_CVT(name, uint16_t, TSR_CPU_STORE_BF16, uint16_t, float, TSR_CPU_LOAD_BF16, EXPR)
#define TSR_CPU_EW_LOOPS_1_F16(name, EXPR) \
  TSR_CPU_EW_LOOPS_1_CVT(name, uint16_t, TSR_CPU_STORE_F16, uint16_t, float, TSR_CPU_LOAD_F16, EXPR)
#define TSR_CPU_EW_LOOPS_2_BF16(name, EXPR)                                                    \
  TSR_CPU_EW_LOOPS_2_CVT(name, uint16_t, TSR_CPU_STORE_BF16, uint16_t, float, uint16_t, float, \
                         TSR_CPU_LOAD_BF16, EXPR)
#define TSR_CPU_EW_LOOPS_2_F16(name, EXPR)                                                     \
  TSR_CPU_EW_LOOPS_2_CVT(name, uint16_t, TSR_CPU_STORE_F16, uint16_t, float, uint16_t, float,  \
                         TSR_CPU_LOAD_F16, EXPR)

// out = EXPR, with a, b, c (operands 0 to 2) and p in scope; out is operand 3.
#define TSR_CPU_EW_LOOPS_3(name, TO, TA, TB, TC, EXPR)                                        \
  static void name##_contiguous(char *const *ptrs, const int64_t *strides, int64_t n,          \
                                const tsr_cpu_ew_params *p) {                                  \
    TSR_CPU_EW_UNUSED(strides);                                                                \
    TSR_CPU_EW_UNUSED(p);                                                                      \
    const TA *a_ = (const TA *)ptrs[0];                                                        \
    const TB *b_ = (const TB *)ptrs[1];                                                        \
    const TC *c_ = (const TC *)ptrs[2];                                                        \
    TO *o_ = (TO *)ptrs[3];                                                                    \
    TSR_CPU_IVDEP for (int64_t i = 0; i < n; ++i) {                                            \
      const TA a = a_[i]; (void)a;                                                             \
      const TB b = b_[i]; (void)b;                                                             \
      const TC c = c_[i]; (void)c;                                                             \
      o_[i] = (TO)(EXPR);                                                                      \
    }                                                                                          \
  }                                                                                            \
  static void name##_strided(char *const *ptrs, const int64_t *strides, int64_t n,             \
                             const tsr_cpu_ew_params *p) {                                     \
    TSR_CPU_EW_UNUSED(p);                                                                      \
    const char *a_ = ptrs[0];                                                                  \
    const char *b_ = ptrs[1];                                                                  \
    const char *c_ = ptrs[2];                                                                  \
    char *o_ = ptrs[3];                                                                        \
    const int64_t sa = strides[0], sb = strides[1], sc = strides[2], so = strides[3];          \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      const TA a = *(const TA *)(a_ + i * sa); (void)a;                                        \
      const TB b = *(const TB *)(b_ + i * sb); (void)b;                                        \
      const TC c = *(const TC *)(c_ + i * sc); (void)c;                                        \
      *(TO *)(o_ + i * so) = (TO)(EXPR);                                                       \
    }                                                                                          \
  }

// The kernel pair TSR_CPU_EW_LOOPS_* wrote for |name|, as an initializer of
// a static table and as a value.
#define TSR_CPU_EW_KERNEL_INIT(name) {name##_contiguous, name##_strided}
#define TSR_CPU_EW_KERNEL(name) ((tsr_cpu_ew_kernel)TSR_CPU_EW_KERNEL_INIT(name))

#endif  // TESSERA_PLUGINS_CPU_EW_LOOPS_H_
