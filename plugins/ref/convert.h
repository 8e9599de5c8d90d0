// Conversions between dtypes exactly as CAST defines them: float -> int
// truncates toward zero and saturates, NaN -> 0; anything -> bool is x != 0;
// int -> narrower int wraps modulo 2^bits; float narrowing rounds to nearest
// even (the default rounding mode). All pure, thread-safe.
#ifndef TESSERA_PLUGINS_REF_CONVERT_H_
#define TESSERA_PLUGINS_REF_CONVERT_H_

#include <stdint.h>

// Truncates |v| toward zero into int32, saturating; NaN gives 0.
static inline int32_t tsr_ref_f64_to_i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}

// Truncates |v| toward zero into int64, saturating; NaN gives 0.
static inline int64_t tsr_ref_f64_to_i64(double v) {
  if (v != v) return 0;
  // 2^63 is the first double past INT64_MAX; -2^63 is INT64_MIN exactly.
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

// int64 -> int32 keeping the low 32 bits, without implementation-defined casts.
static inline int32_t tsr_ref_i64_to_i32(int64_t v) {
  uint32_t u = (uint32_t)(uint64_t)v;
  return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) + INT32_MIN;
}

#endif  // TESSERA_PLUGINS_REF_CONVERT_H_
