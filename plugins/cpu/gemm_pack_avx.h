// float32 packing of the operands whose packed direction is strided in
// memory, with 8x8 in-register transposes. Included only by gemm_impl.h,
// for float32 under __AVX__, after it defined TSR_CPU_MR and TSR_CPU_NR.
//
// Why: Linear's forward multiplies by weight^T, a B whose columns are
// contiguous, and its A (the activations) has contiguous rows. Packing
// such an operand element by element costs about as much as a tenth of the
// product itself at batch 128 (one strided load and one store per element);
// eight loads, 24 shuffles and eight stores move 64 elements.
#ifndef TESSERA_PLUGINS_CPU_GEMM_PACK_AVX_H_
#define TESSERA_PLUGINS_CPU_GEMM_PACK_AVX_H_

#include <immintrin.h>
#include <string.h>

// r[0..8) rows become r[0..8) columns.
static inline void tsr_cpu_transpose8_ps(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// One full NR-column sliver of B whose columns are contiguous (element
// (p, j) at src[j * cs + p]) into dst, kc x NR.
static void tsr_cpu_pack_b_sliver_cols_f32(const float *src, int64_t cs, int64_t kc,
                                           float *restrict dst) {
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    for (int h = 0; h < TSR_CPU_NR / 8; ++h) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + (h * 8 + j) * cs + p);
      tsr_cpu_transpose8_ps(r);
      for (int q = 0; q < 8; ++q) _mm256_storeu_ps(dst + (p + q) * TSR_CPU_NR + h * 8, r[q]);
    }
  }
  for (; p < kc; ++p) {
    for (int j = 0; j < TSR_CPU_NR; ++j) dst[p * TSR_CPU_NR + j] = src[j * cs + p];
  }
}

#if TSR_CPU_MR <= 8
// One full MR-row sliver of A whose rows are contiguous (element (i, p) at
// src[i * rs + p]) into dst, kc x MR. Each 8-wide store also writes the
// next p's first 8 - MR slots, which that p's own store overwrites later;
// only the sliver's last p is stored exactly, so nothing past the sliver
// is touched.
static void tsr_cpu_pack_a_sliver_rows_f32(const float *src, int64_t rs, int64_t kc,
                                           float *restrict dst) {
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) {
      r[i] = i < TSR_CPU_MR ? _mm256_loadu_ps(src + i * rs + p) : _mm256_setzero_ps();
    }
    tsr_cpu_transpose8_ps(r);
    for (int q = 0; q < 8; ++q) {
      float *d = dst + (p + q) * TSR_CPU_MR;
      if (p + q + 1 < kc) {
        _mm256_storeu_ps(d, r[q]);
      } else {
        float row[8];
        _mm256_storeu_ps(row, r[q]);
        memcpy(d, row, sizeof(float) * TSR_CPU_MR);
      }
    }
  }
  for (; p < kc; ++p) {
    for (int i = 0; i < TSR_CPU_MR; ++i) dst[p * TSR_CPU_MR + i] = src[i * rs + p];
  }
}
#endif

#if TSR_CPU_MR == 6
// One full 6-row sliver of A whose columns are contiguous (element (i, p) at
// src[p * cs + i], a transposed activation in a weight gradient) into dst,
// kc x 6: four and two elements per p, never reading past row 5.
static void tsr_cpu_pack_a_sliver_cols_f32(const float *src, int64_t cs, int64_t kc,
                                           float *restrict dst) {
  for (int64_t p = 0; p < kc; ++p) {
    const float *col = src + p * cs;
    _mm_storeu_ps(dst + p * 6, _mm_loadu_ps(col));
    // 64-bit moves through the unaligned __m128i_u forms: rows 4 and 5 need
    // not be 8-byte aligned.
    _mm_storel_epi64((__m128i_u *)(void *)(dst + p * 6 + 4),
                     _mm_loadl_epi64((const __m128i_u *)(const void *)(col + 4)));
  }
}
#endif

#endif  // TESSERA_PLUGINS_CPU_GEMM_PACK_AVX_H_
