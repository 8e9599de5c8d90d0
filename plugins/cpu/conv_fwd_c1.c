// CONV2D with one input channel per group, float32, no activation or RELU
// (conv.h says which shapes: tsr_cpu_conv_fwd_c1_fits).
//
// Each output plane is a short sum of shifted copies of one input plane:
//   y[n, o, p] = bias[o] + sum over taps t = (kh, kw) of w[o, 0, kh, kw] * col[t][p],
// with col the tile's im2col rows (KH * KW of them, built per image and
// position tile in the slot, L1-sized). Register tiles of 4 output channels
// by 16 positions (8 vector accumulators) run over the taps: per tap, two
// col vectors and four broadcast weights feed 8 FMAs, and the sums are
// stored straight into y's rows, so y (the only large operand: 5.5 MB for
// the CNN's first layer) is written once, in its own layout. What limits it
// is writing y.
//
// Summation order: each output element is one accumulator lane, summed in
// float32 over the taps in order from zero, then the bias is added and RELU
// applied, as ref's GEMM epilogue does (so a fused RELU gives the bits of
// CONV2D then RELU).
// Work items are (image, group) pairs and own their output planes, so
// results do not depend on the thread count.
//
// The vectors are GCC/Clang vector types (plain loops for other compilers);
// the FMAs come from contraction, which the build allows for this file
// (CMakeLists.txt).
#include <stdint.h>
#include <string.h>

#include "conv.h"
#include "host.h"

#define LANES 8
#define OB 4  // output channels per register tile

// An empty asm that takes |v| in a vector register: where one holds the 8
// lanes (AVX's ymm), the compiler must load |v| once (see fc_block).
#if defined(__GNUC__) && defined(__AVX__)
#define TSR_CPU_FC_IN_REGISTER(v) __asm__("" : "+x"(v))
#else
#define TSR_CPU_FC_IN_REGISTER(v) ((void)0)
#endif

#if defined(__GNUC__)
typedef float fc_f8 __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t fc_i8 __attribute__((vector_size(LANES * sizeof(int32_t))));

// Unaligned loads and stores through pointers: a function returning a
// 32-byte vector changes the ABI without AVX, which -Wpsabi rejects.
static inline void fc_f8_load(fc_f8 *v, const float *p) { memcpy(v, p, sizeof(*v)); }
static inline void fc_f8_store(float *p, const fc_f8 *v) { memcpy(p, v, sizeof(*v)); }
#endif

// y rows [0, ob) (of |ys1| apart from |y0|) of 16 positions (|nj| of them
// valid) from |col| (pitch |pitch|) and the weights |wc| [OB][taps] (zero
// past ob), plus |bias| [OB] when not NULL, then RELU (x < 0 ? 0 : x, NaN
// kept, as ref's GEMM epilogue) when |relu|.
static void fc_block(const float *restrict col, int64_t pitch, int64_t taps,
                     const float *restrict wc, const float *bias, int relu, int ob, float *y0,
                     int64_t ys1, int64_t nj) {
#if defined(__GNUC__)
  fc_f8 acc[OB][2];
#pragma GCC unroll 4
  for (int i = 0; i < OB; ++i) acc[i][0] = acc[i][1] = (fc_f8){0};
  for (int64_t t = 0; t < taps; ++t) {
    fc_f8 c0, c1;
    fc_f8_load(&c0, col + t * pitch);
    fc_f8_load(&c1, col + t * pitch + LANES);
    // Keeps each col vector in a register: GCC otherwise folds its load into
    // every FMA, and four loads per vector made the loop load-bound and
    // slower (docs/performance-log.md, "Measurements behind the code's decisions").
    TSR_CPU_FC_IN_REGISTER(c0);
    TSR_CPU_FC_IN_REGISTER(c1);
#pragma GCC unroll 4
    for (int i = 0; i < OB; ++i) {
      const float v = wc[i * taps + t];
      const fc_f8 b = {v, v, v, v, v, v, v, v};
      acc[i][0] += b * c0;
      acc[i][1] += b * c1;
    }
  }
  if (bias != NULL) {
#pragma GCC unroll 4
    for (int i = 0; i < OB; ++i) {
      const float v = bias[i];
      const fc_f8 b = {v, v, v, v, v, v, v, v};
      acc[i][0] += b;
      acc[i][1] += b;
    }
  }
  if (relu) {
    const fc_f8 zero = {0};
#pragma GCC unroll 4
    for (int i = 0; i < OB; ++i) {
      for (int v = 0; v < 2; ++v) {
        const fc_i8 negative = acc[i][v] < zero;  // false for NaN and -0
        acc[i][v] = (fc_f8)((fc_i8)acc[i][v] & ~negative);
      }
    }
  }
  if (nj == 2 * LANES && ob == OB) {
#pragma GCC unroll 4
    for (int i = 0; i < OB; ++i) {
      fc_f8_store(y0 + i * ys1, &acc[i][0]);
      fc_f8_store(y0 + i * ys1 + LANES, &acc[i][1]);
    }
    return;
  }
  float tmp[OB][2 * LANES];
#pragma GCC unroll 4
  for (int i = 0; i < OB; ++i) {
    fc_f8_store(tmp[i], &acc[i][0]);
    fc_f8_store(tmp[i] + LANES, &acc[i][1]);
  }
  for (int i = 0; i < ob; ++i) {
    for (int64_t l = 0; l < nj; ++l) y0[i * ys1 + l] = tmp[i][l];
  }
#else
  for (int i = 0; i < ob; ++i) {
    for (int64_t l = 0; l < nj; ++l) {
      float s = 0.0f;
      for (int64_t t = 0; t < taps; ++t) s += wc[i * taps + t] * col[t * pitch + l];
      if (bias != NULL) s += bias[i];
      y0[i * ys1 + l] = relu && s < 0.0f ? 0.0f : s;
    }
  }
#endif
}

// Builds the im2col rows of positions [j0, j0 + nc) of the plane at |x|
// into |col| [taps][pitch]; positions past nc up to the pitch are zeros.
static void fc_col_build(const tsr_cpu_conv_plan *cv, const float *x, int64_t j0, int64_t nc,
                         float *col, int64_t pitch) {
  const int64_t xs2 = cv->xs[2], xs3 = cv->xs[3];
  for (int64_t kh = 0; kh < cv->kh; ++kh) {
    for (int64_t kw = 0; kw < cv->kw; ++kw) {
      float *dst = col + (kh * cv->kw + kw) * pitch;
      int64_t oh = j0 / cv->ow, q = j0 - oh * cv->ow, j = 0;
      while (j < nc) {
        // One output row's stretch of the tile.
        const int64_t len = cv->ow - q < nc - j ? cv->ow - q : nc - j;
        const int64_t h = oh * cv->stride[0] - cv->pad[0] + kh * cv->dilation[0];
        if (h < 0 || h >= cv->h) {
          memset(dst + j, 0, (size_t)len * sizeof(float));
        } else {
          const float *src = x + h * xs2;
          const int64_t w0 = q * cv->stride[1] - cv->pad[1] + kw * cv->dilation[1];
          const int64_t step = cv->stride[1];
          // Positions [lo, hi) of the stretch read inside the row.
          int64_t lo = w0 >= 0 ? 0 : tsr_cpu_conv_div_ceil(-w0, step);
          int64_t hi = w0 >= cv->w ? 0 : tsr_cpu_conv_div_ceil(cv->w - w0, step);
          if (lo > len) lo = len;
          if (hi > len) hi = len;
          if (hi < lo) hi = lo;
          float *d = dst + j;
          for (int64_t l = 0; l < lo; ++l) d[l] = 0.0f;
          if (step * xs3 == 1) {
            memcpy(d + lo, src + w0 + lo, (size_t)(hi - lo) * sizeof(float));
          } else {
            for (int64_t l = lo; l < hi; ++l) d[l] = src[(w0 + l * step) * xs3];
          }
          for (int64_t l = hi; l < len; ++l) d[l] = 0.0f;
        }
        j += len;
        q = 0;
        ++oh;
      }
      for (; j < pitch; ++j) dst[j] = 0.0f;
    }
  }
}

typedef struct fc_job {
  const tsr_cpu_conv_plan *cv;
  char *const *ptrs;
  char *workspace;
} fc_job;

// Items [begin, end): item = n * groups + g.
static void fc_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const fc_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  char *slot = job->workspace + (uint64_t)thread_index * cv->slot_bytes;
  float *col = (float *)(slot + cv->col_offset);
  float *wc = (float *)(slot + cv->fw_wt_offset);
  const float *x = (const float *)job->ptrs[0];
  const float *w = (const float *)job->ptrs[1];
  const float *bias = cv->has_bias ? (const float *)job->ptrs[2] : NULL;
  float *y = (float *)job->ptrs[cv->has_bias ? 3 : 2];
  const int64_t taps = cv->kh * cv->kw, og = cv->og, pitch = cv->c1_pitch;
  const int relu = cv->activation == TSR_ACTIVATION_RELU;
  int64_t last_g = -1;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t n = item / cv->groups, g = item % cv->groups;
    if (g != last_g) {
      // The group's weights [og][taps], then zero channels up to a
      // multiple of OB (the last register tile reads them).
      memset(wc + og * taps, 0, (size_t)(((og + OB - 1) / OB * OB - og) * taps) * sizeof(float));
      for (int64_t i = 0; i < og; ++i) {
        const float *src = w + (g * og + i) * cv->ws[0];
        for (int64_t kh = 0; kh < cv->kh; ++kh) {
          for (int64_t kw = 0; kw < cv->kw; ++kw) {
            wc[i * taps + kh * cv->kw + kw] = src[kh * cv->ws[2] + kw * cv->ws[3]];
          }
        }
      }
      last_g = g;
    }
    const float *plane = x + n * cv->xs[0] + g * cv->xs[1];
    for (int64_t t = 0; t < cv->tiles; ++t) {
      const int64_t j0 = t * cv->tile_cols;
      const int64_t nc = cv->cols - j0 < cv->tile_cols ? cv->cols - j0 : cv->tile_cols;
      fc_col_build(cv, plane, j0, nc, col, pitch);
      for (int64_t o = 0; o < og; o += OB) {
        const int ob = (int)(og - o < OB ? og - o : OB);
        float bias_block[OB] = {0};
        for (int i = 0; bias != NULL && i < ob; ++i) {
          bias_block[i] = bias[(g * og + o + i) * cv->bias_stride];
        }
        float *y0 = y + n * cv->ys[0] + (g * og + o) * cv->ys[1] + j0;
        for (int64_t j = 0; j < nc; j += 2 * LANES) {
          const int64_t nj = nc - j < 2 * LANES ? nc - j : 2 * LANES;
          fc_block(col + j, pitch, taps, wc + o * taps, bias != NULL ? bias_block : NULL,
                   relu, ob, y0 + j, cv->ys[1], nj);
        }
      }
    }
  }
}

tsr_status tsr_cpu_conv_fwd_c1_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                       char *workspace) {
  if (cv->o == 0 || cv->n == 0) return TSR_OK;
  fc_job job = {cv, ptrs, workspace};
  if (cv->parallel && tsr_cpu_thread_count_get() <= cv->slots) {
    const tsr_host_api *host = tsr_cpu_host_get();
    return host->parallel_for(host->ctx, cv->items, cv->grain, fc_items_run, &job);
  }
  fc_items_run(&job, 0, cv->items, 0);
  return TSR_OK;
}
