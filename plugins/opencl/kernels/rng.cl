// RNG_FILL: counter-based Philox-4x32-10 as ops.h specifies, bit-identical
// to plugins/cpu/rng.c for UNIFORM and BERNOULLI.
//
// Build options (ops_elementwise.c):
//   -DDIST=0|1|2   UNIFORM, NORMAL, BERNOULLI
//   -DTOUT=<type>  the output's element type
//   -DTSR_RNG_F64OUT=1 when TOUT is double (UNIFORM draws 53 bits)
//   -DTSR_RNG_EXACT=1  UNIFORM float32 on a device without fp64, allowed
//                      only when a == 0 and b is a power of two, where
//                      x * scale is exactly ref's double result
//   -DIDX=uint|ulong
//   -DRNG_DENSE=1  out is dense (element i at o + i); else |shape| walks it
//
// Element i of out's row-major order takes the block of counter offset + i,
// so the numbers depend only on (seed, offset, i). Work layout as in
// elementwise.cl: item l of a group of L handles l, l + L, ... of the
// group's L * RNG_VEC elements. Limited by Philox's 20 32-bit multiplies
// per element (and log/cos for NORMAL), not by memory.
#pragma OPENCL FP_CONTRACT OFF

#define RNG_VEC 1

#ifndef IDX
#define IDX uint
#endif

// Ten rounds over the counter (c, 0) with key (k0, k1); returns x0, x1.
// Written out round by round: a loop here would be the innermost loop, and
// a CPU compiler (PoCL) vectorises only innermost loops, so it would not
// vectorise across work-items.
#define RNG_ROUND(K0, K1)                                              \
  {                                                                    \
    const ulong p0 = (ulong)0xD2511F53u * c0;                          \
    const ulong p1 = (ulong)0xCD9E8D57u * c2;                          \
    const uint n0 = (uint)(p1 >> 32) ^ c1 ^ (K0);                      \
    const uint n2 = (uint)(p0 >> 32) ^ c3 ^ (K1);                      \
    c1 = (uint)p1;                                                     \
    c3 = (uint)p0;                                                     \
    c0 = n0;                                                           \
    c2 = n2;                                                           \
  }
inline uint2 rng_philox_x01(ulong c, uint k0, uint k1) {
  uint c0 = (uint)c, c1 = (uint)(c >> 32), c2 = 0u, c3 = 0u;
  RNG_ROUND(k0, k1)
  RNG_ROUND(k0 + 1u * 0x9E3779B9u, k1 + 1u * 0xBB67AE85u)
  RNG_ROUND(k0 + 2u * 0x9E3779B9u, k1 + 2u * 0xBB67AE85u)
  RNG_ROUND(k0 + 3u * 0x9E3779B9u, k1 + 3u * 0xBB67AE85u)
  RNG_ROUND(k0 + 4u * 0x9E3779B9u, k1 + 4u * 0xBB67AE85u)
  RNG_ROUND(k0 + 5u * 0x9E3779B9u, k1 + 5u * 0xBB67AE85u)
  RNG_ROUND(k0 + 6u * 0x9E3779B9u, k1 + 6u * 0xBB67AE85u)
  RNG_ROUND(k0 + 7u * 0x9E3779B9u, k1 + 7u * 0xBB67AE85u)
  RNG_ROUND(k0 + 8u * 0x9E3779B9u, k1 + 8u * 0xBB67AE85u)
  RNG_ROUND(k0 + 9u * 0x9E3779B9u, k1 + 9u * 0xBB67AE85u)
  return (uint2)(c0, c1);
}

// The parameters: UNIFORM and NORMAL take a and b in float64 (as the
// catalogue computes), or in the exact float32 form scale = b * 2^-24;
// BERNOULLI takes |threshold|: (x0 >> 8) * 2^-24 < p  <=>  (x0 >> 8) < threshold.
#if DIST == 2
#define RNG_PARAMS , uint threshold
#elif defined(TSR_RNG_EXACT)
#define RNG_PARAMS , float scale
#else
#define RNG_PARAMS , double a, double b
#endif

#if DIST == 0
#if defined(TSR_RNG_EXACT)
#define RNG_VALUE(x) ((TOUT)((float)((x).s0 >> 8) * scale))
#elif defined(TSR_RNG_F64OUT)
#define RNG_VALUE(x) \
  ((TOUT)(a + (b - a) * ((double)(((ulong)((x).s0 >> 5) << 26) | (ulong)((x).s1 >> 6)) * 0x1p-53)))
#else
#define RNG_VALUE(x) ((TOUT)(a + (b - a) * ((double)((x).s0 >> 8) * 0x1p-24)))
#endif
#elif DIST == 1
#define RNG_VALUE(x) ((TOUT)rng_normal((x), a, b))
inline double rng_normal(uint2 x, double a, double b) {
  const double u1 = ((double)x.s0 + 1.0) * 0x1p-32;  // (0, 1]: log is finite
  const double u2 = (double)x.s1 * 0x1p-32;
  return a + b * (sqrt(-2.0 * log(u1)) * cos(6.28318530717958647692 * u2));
}
#else
#define RNG_VALUE(x) ((TOUT)(((x).s0 >> 8) < threshold ? 1 : 0))
#endif

// |n| elements; out's collapsed shape is |nd| dimensions of (size, stride)
// in |shape| (unused when RNG_DENSE).
__kernel void rng_fill(IDX n, ulong counter, uint k0, uint k1, int nd, __constant long *shape,
                       __global TOUT *out, ulong o RNG_PARAMS) {
  const IDX local_size = (IDX)get_local_size(0);
  const IDX base = (IDX)get_group_id(0) * local_size * RNG_VEC + (IDX)get_local_id(0);
  for (int v = 0; v < RNG_VEC; ++v) {
    const IDX i = base + (IDX)v * local_size;
    if (i < n) {
      const uint2 x = rng_philox_x01(counter + (ulong)i, k0, k1);  // wraps mod 2^64
      ulong at = o;
#if defined(RNG_DENSE)
      at += (ulong)i;
#else
      {
        IDX rem = i;
        for (int d = nd - 1; d >= 0; --d) {
          const IDX size = (IDX)shape[2 * d];
          at += (ulong)(rem % size) * (ulong)shape[2 * d + 1];
          rem /= size;
        }
      }
#endif
      out[at] = RNG_VALUE(x);
    }
  }
}
