// The float32 2x2 stride-2 max pool, one row of windows at a time, in AVX2
// (pool.c includes this where the compiler targets AVX2: the oneDNN
// plugin's AVX2 and AVX-512 builds of the CPU kernels, and the library built
// with -march=native on such a CPU).
//
// Why: the portable loops vectorize over the windows of a row, 8 at a time,
// and leave the rest to a scalar remainder; the CNN's rows are 13 and 5
// windows wide, so most of the work ran in that remainder (measured per
// output: docs/performance-log.md, "Measurements behind the code's decisions").
// Here a short row or a row's tail is one more vector step, loaded under a
// lane mask.
//
// Same taps, order and rules as TSR_CPU_WINDOW2_CHOOSE (pool.c): row-major
// taps, a later tap wins if strictly larger or NaN over a number; and the
// backward writes 0.0f + dy at the chosen tap, 0.0f at the others, so the
// bits equal the portable loops' (ref tests/test_pool.c checks those rules bit for
// bit on rows of 18 and of 5 windows).
#ifndef TESSERA_PLUGINS_CPU_POOL_WINDOW2_AVX2_H_
#define TESSERA_PLUGINS_CPU_POOL_WINDOW2_AVX2_H_

#include <immintrin.h>
#include <stdint.h>

// Lanes [0, count) set, count clamped to [0, 8].
static inline __m256i tsr_cpu_w2_mask32(int64_t count) {
  const int32_t c = (int32_t)(count < 0 ? 0 : (count > 8 ? 8 : count));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// 64-bit lanes [0, count) set, count clamped to [0, 4].
static inline __m256i tsr_cpu_w2_mask64(int64_t count) {
  const int64_t c = count < 0 ? 0 : (count > 4 ? 4 : count);
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(c), _mm256_setr_epi64x(0, 1, 2, 3));
}

// Stores the first |count| (0 to 8) floats of |v| at |dst| in pieces of 4,
// 2 and 1: not a masked store (AMD microcodes vmaskmovps to memory: it
// stalled this loop more than the work), and not through the stack (GCC
// turns that copy into rep movsq, tens of cycles to start).
static inline void tsr_cpu_w2_store_f32(float *dst, __m256 v, int64_t count) {
  if (count >= 8) {
    _mm256_storeu_ps(dst, v);
    return;
  }
  __m128 cur = _mm256_castps256_ps128(v);
  if (count & 4) {
    _mm_storeu_ps(dst, cur);
    cur = _mm256_extractf128_ps(v, 1);
    dst += 4;
  }
  if (count & 2) {
    _mm_storel_pi((__m64 *)(void *)dst, cur);
    cur = _mm_movehl_ps(cur, cur);
    dst += 2;
  }
  if (count & 1)
    _mm_store_ss(dst, cur);
}

// Stores the first |count| (0 to 8) int64 of |lo| then |hi| at |dst|, the
// same way.
static inline void tsr_cpu_w2_store_i64(int64_t *dst, __m256i lo, __m256i hi, int64_t count) {
  __m256i cur = lo;
  if (count >= 4) {
    _mm256_storeu_si256((__m256i *)(void *)dst, lo);
    cur = hi;
    dst += 4;
    count -= 4;
  }
  if (count >= 4) {
    _mm256_storeu_si256((__m256i *)(void *)dst, hi);
    return;
  }
  __m128i half = _mm256_castsi256_si128(cur);
  if (count & 2) {
    _mm_storeu_si128((__m128i *)(void *)dst, half);
    half = _mm256_extracti128_si256(cur, 1);
    dst += 2;
  }
  if (count & 1)
    _mm_storel_epi64((__m128i *)(void *)dst, half);
}

// Windows q..q+7 of one output row: |r0| and |r1| point at the row pair's
// column 2q; |m| of the 8 windows are real (m = 8 reads 16 floats of each
// row, fewer read only their columns). The maximum to y[0, m) and its index
// (|at|: the first window's top-left index) to indices[0, m).
static inline void tsr_cpu_w2_forward8(const float *r0, const float *r1, float *y, int64_t *indices,
                                       int64_t at, int32_t W, int64_t m) {
  __m256 a0, a1, b0, b1;
  if (m == 8) {
    a0 = _mm256_loadu_ps(r0);
    a1 = _mm256_loadu_ps(r0 + 8);
    b0 = _mm256_loadu_ps(r1);
    b1 = _mm256_loadu_ps(r1 + 8);
  } else {
    const __m256i lo = tsr_cpu_w2_mask32(2 * m), hi = tsr_cpu_w2_mask32(2 * m - 8);
    a0 = _mm256_maskload_ps(r0, lo);
    a1 = _mm256_maskload_ps(r0 + 8, hi);
    b0 = _mm256_maskload_ps(r1, lo);
    b1 = _mm256_maskload_ps(r1 + 8, hi);
  }
  // Even and odd columns, windows in the order q, q+1, q+4, q+5, q+2, q+3,
  // q+6, q+7 (in-lane shuffles); put back in order once, at the end.
  const __m256 t0 = _mm256_shuffle_ps(a0, a1, 0x88), t1 = _mm256_shuffle_ps(a0, a1, 0xdd);
  const __m256 t2 = _mm256_shuffle_ps(b0, b1, 0x88), t3 = _mm256_shuffle_ps(b0, b1, 0xdd);
  __m256 best = t0;
  __m256 off = _mm256_castsi256_ps(_mm256_setzero_si256());
  const __m256 taps[3] = {t1, t2, t3};
  const __m256 offs[3] = {_mm256_castsi256_ps(_mm256_set1_epi32(1)),
                          _mm256_castsi256_ps(_mm256_set1_epi32(W)),
                          _mm256_castsi256_ps(_mm256_set1_epi32(W + 1))};
  for (int k = 0; k < 3; ++k) {
    const __m256 t = taps[k];
    const __m256 take = _mm256_or_ps(
        _mm256_cmp_ps(t, best, _CMP_GT_OQ),
        _mm256_and_ps(_mm256_cmp_ps(t, t, _CMP_UNORD_Q), _mm256_cmp_ps(best, best, _CMP_ORD_Q)));
    best = _mm256_blendv_ps(best, t, take);
    off = _mm256_blendv_ps(off, offs[k], take);
  }
  best = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(best), 0xd8));
  const __m256i off32 = _mm256_permute4x64_epi64(_mm256_castps_si256(off), 0xd8);
  const __m256i base = _mm256_add_epi64(_mm256_set1_epi64x(at), _mm256_setr_epi64x(0, 2, 4, 6));
  const __m256i i_lo = _mm256_add_epi64(base, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(off32)));
  const __m256i i_hi = _mm256_add_epi64(_mm256_add_epi64(base, _mm256_set1_epi64x(8)),
                                        _mm256_cvtepi32_epi64(_mm256_extracti128_si256(off32, 1)));
  tsr_cpu_w2_store_f32(y, best, m);
  tsr_cpu_w2_store_i64(indices, i_lo, i_hi, m);
}

// Whether each 64-bit lane of |d| is one of a window's four offsets.
static inline __m256i tsr_cpu_w2_offset_ok(__m256i d, __m256i w, __m256i w1) {
  const __m256i one = _mm256_set1_epi64x(1);
  return _mm256_or_si256(
      _mm256_or_si256(_mm256_cmpeq_epi64(d, _mm256_setzero_si256()), _mm256_cmpeq_epi64(d, one)),
      _mm256_or_si256(_mm256_cmpeq_epi64(d, w), _mm256_cmpeq_epi64(d, w1)));
}

// Stores the 16 floats that interleave |even| and |odd| (e0 o0 e1 o1 ...)
// at |dst|, the first |count| of them.
static inline void tsr_cpu_w2_store_pairs(float *dst, __m256 even, __m256 odd, int64_t count) {
  const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
  const __m256 first = _mm256_permute2f128_ps(lo, hi, 0x20);
  const __m256 second = _mm256_permute2f128_ps(lo, hi, 0x31);
  tsr_cpu_w2_store_f32(dst, first, count);
  if (count > 8)
    tsr_cpu_w2_store_f32(dst + 8, second, count - 8);
}

// The backward of windows q..q+7: dy and the indices at q, |m| of them
// real; writes columns [2q, 2q + 2m) of the row pair |d0|, |d1| (pointing at
// column 2q). Returns nonzero if an index is not one of its window's four.
static inline int tsr_cpu_w2_backward8(const float *dy, const int64_t *indices, float *d0,
                                       float *d1, int64_t at, int32_t W, int64_t m) {
  __m256 v;
  __m256i i_lo, i_hi, live_lo, live_hi;
  if (m == 8) {
    v = _mm256_loadu_ps(dy);
    i_lo = _mm256_loadu_si256((const __m256i *)indices);
    i_hi = _mm256_loadu_si256((const __m256i *)(indices + 4));
    live_lo = live_hi = _mm256_set1_epi64x(-1);
  } else {
    live_lo = tsr_cpu_w2_mask64(m);
    live_hi = tsr_cpu_w2_mask64(m - 4);
    v = _mm256_maskload_ps(dy, tsr_cpu_w2_mask32(m));
    i_lo = _mm256_maskload_epi64((const long long *)indices, live_lo);
    i_hi = _mm256_maskload_epi64((const long long *)(indices + 4), live_hi);
  }
  const __m256i base = _mm256_add_epi64(_mm256_set1_epi64x(at), _mm256_setr_epi64x(0, 2, 4, 6));
  const __m256i d_lo = _mm256_sub_epi64(i_lo, base);
  const __m256i d_hi = _mm256_sub_epi64(i_hi, _mm256_add_epi64(base, _mm256_set1_epi64x(8)));
  const __m256i w = _mm256_set1_epi64x(W), w1 = _mm256_set1_epi64x(W + 1);
  // Dead tail lanes count as fine.
  const __m256i ok =
      _mm256_and_si256(_mm256_or_si256(tsr_cpu_w2_offset_ok(d_lo, w, w1),
                                       _mm256_xor_si256(live_lo, _mm256_set1_epi64x(-1))),
                       _mm256_or_si256(tsr_cpu_w2_offset_ok(d_hi, w, w1),
                                       _mm256_xor_si256(live_hi, _mm256_set1_epi64x(-1))));
  if (_mm256_movemask_epi8(ok) != -1)
    return 1;
  // Valid offsets fit 32 bits: keep each lane's low half, in window order.
  const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m256i d32 = _mm256_permute2x128_si256(_mm256_permutevar8x32_epi32(d_lo, pick),
                                                _mm256_permutevar8x32_epi32(d_hi, pick), 0x20);
  v = _mm256_add_ps(v, _mm256_setzero_ps());  // -0.0 becomes 0.0, as 0.0 + dy does
  const __m256 e0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(d32, _mm256_setzero_si256()));
  const __m256 e1 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(d32, _mm256_set1_epi32(1)));
  const __m256 e2 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(d32, _mm256_set1_epi32(W)));
  const __m256 e3 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(d32, _mm256_set1_epi32(W + 1)));
  tsr_cpu_w2_store_pairs(d0, _mm256_and_ps(v, e0), _mm256_and_ps(v, e1), 2 * m);
  tsr_cpu_w2_store_pairs(d1, _mm256_and_ps(v, e2), _mm256_and_ps(v, e3), 2 * m);
  return 0;
}

#endif  // TESSERA_PLUGINS_CPU_POOL_WINDOW2_AVX2_H_
