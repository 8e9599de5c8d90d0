// Conversions between dtypes exactly as CAST defines them: float -> int
// truncates toward zero and saturates, NaN -> 0; anything -> bool is x != 0;
// int -> narrower int wraps modulo 2^bits; float narrowing rounds to nearest
// even (the default rounding mode). All pure, thread-safe.
#ifndef TESSERA_PLUGINS_CPU_CONVERT_H_
#define TESSERA_PLUGINS_CPU_CONVERT_H_

#include <math.h>
#include <stdint.h>

#include "half.h"

// Truncates |v| toward zero into int32, saturating; NaN gives 0.
static inline int32_t tsr_cpu_f64_to_i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}

// Truncates |v| toward zero into int64, saturating; NaN gives 0.
static inline int64_t tsr_cpu_f64_to_i64(double v) {
  if (v != v) return 0;
  // 2^63 is the first double past INT64_MAX; -2^63 is INT64_MIN exactly.
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

// int64 -> int32 keeping the low 32 bits, without implementation-defined casts.
static inline int32_t tsr_cpu_i64_to_i32(int64_t v) {
  uint32_t u = (uint32_t)(uint64_t)v;
  return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) + INT32_MIN;
}

// |v| rounded to float32 toward zero, with the lowest mantissa bit set when
// the rounding was inexact ("round to odd"). A float32 rounded to odd keeps
// enough bits (24 against bfloat16's 8 and float16's 11) that rounding it
// again to nearest even gives the correctly rounded result: so a double or an
// int64 reaches a half type rounded once, as CAST requires, not twice.
static inline float tsr_cpu_f64_to_f32_odd(double v) {
  float f = (float)v;
  if ((double)f == v || f != f) return f;  // exact, or NaN
  uint32_t u = tsr_cpu_f32_bits(f);
  // f is v rounded to nearest: when that went away from zero, step back.
  // |f| > |v| >= 0 means f is not zero, so the step cannot underflow.
  if (fabs((double)f) > fabs(v)) u -= 1u;
  return tsr_cpu_f32_from_bits(u | 1u);
}

// |v| rounded to float32 to odd, exactly as tsr_cpu_f64_to_f32_odd for the
// double it equals.
static inline float tsr_cpu_i64_to_f32_odd(int64_t v) {
  uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  float f;
  if (a < (1ull << 24)) {
    f = (float)a;
  } else {
    int shift = 64 - __builtin_clzll(a) - 24;  // keep the top 24 bits
    uint64_t m = a >> shift;
    m |= (a & ((1ull << shift) - 1)) != 0;      // sticky: anything shifted out
    f = ldexpf((float)m, shift);                // m < 2^24: exact
  }
  return v < 0 ? -f : f;
}

// Narrowing to the half types, rounded once to nearest even.
static inline uint16_t tsr_cpu_f64_to_bf16(double v) { return tsr_cpu_f32_to_bf16(tsr_cpu_f64_to_f32_odd(v)); }
static inline uint16_t tsr_cpu_f64_to_f16(double v) { return tsr_cpu_f32_to_f16(tsr_cpu_f64_to_f32_odd(v)); }
static inline uint16_t tsr_cpu_i64_to_bf16(int64_t v) { return tsr_cpu_f32_to_bf16(tsr_cpu_i64_to_f32_odd(v)); }
static inline uint16_t tsr_cpu_i64_to_f16(int64_t v) { return tsr_cpu_f32_to_f16(tsr_cpu_i64_to_f32_odd(v)); }

#endif  // TESSERA_PLUGINS_CPU_CONVERT_H_
