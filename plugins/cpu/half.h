// bfloat16 and float16 storage. The library computes in float32 and converts at the
// load and the store; narrowing rounds to nearest even, NaN stays NaN (quiet),
// overflow becomes infinity, float16 subnormals are kept. Pure, thread-safe.
#ifndef TESSERA_PLUGINS_CPU_HALF_H_
#define TESSERA_PLUGINS_CPU_HALF_H_

#include <stdint.h>
#include <string.h>

static inline uint32_t tsr_cpu_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float tsr_cpu_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// bfloat16 is the top half of a float32.
static inline float tsr_cpu_bf16_to_f32(uint16_t h) { return tsr_cpu_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t tsr_cpu_f32_to_bf16(float f) {
  uint32_t u = tsr_cpu_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return (uint16_t)(u >> 16);
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
static inline float tsr_cpu_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return tsr_cpu_f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24, exact in float32.
    float v = (float)man * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return tsr_cpu_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t tsr_cpu_f32_to_f16(float f) {
  uint32_t u = tsr_cpu_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to >= 65520: infinity
  if (a < 0x38800000u) {
    // Below the smallest normal (2^-14): a subnormal, rounded to nearest even
    // in units of 2^-24; the float arithmetic here is exact until the final
    // rounding, which the default mode does to nearest even.
    float v = tsr_cpu_f32_from_bits(a) * 16777216.0f;
    uint32_t m = (uint32_t)__builtin_nearbyintf(v);
    return (uint16_t)(sign | m);  // m == 0x400 carries into the smallest normal
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);  // round mantissa to 10 bits, ties to even
  return (uint16_t)(sign | (((r >> 13) - (112u << 10)) & 0xffffu));
}

#endif  // TESSERA_PLUGINS_CPU_HALF_H_
