// CONV2D_BACKWARD_FILTER for one input channel per group, float32 (conv.h
// says which shapes: tsr_cpu_conv_filter_c1_fits).
//
// With one input channel the im2col + GEMM formulation multiplies dy [Og x
// positions] by a K = KH * KW column matrix: a GEMM only KH * KW wide, which
// ref's blocking (and oneDNN's gemm:jit) runs mostly empty. Here
// each output channel's KH * KW sums are dot products of its dy plane with
// the image's KH * KW im2col rows, one vector accumulator per tap: per 8
// positions, one dy load and KH * KW im2col loads (from L1) feed KH * KW
// FMAs. What limits it is streaming dy, read once (5.5 MB for the CNN's first
// layer): the profile's time sits on the dy loads. On the CNN's first filter
// gradient it is several times faster than im2col + GEMM and than oneDNN's
// gemm:jit (docs/performance-log.md, "Measurements behind the code's decisions").
//
// Work items are (group, block of output channels); the threads never share
// an output element, and each sum runs over images, position tiles and lanes
// in an order fixed by the shape, so results do not depend on the thread
// count. Within one image's position tile the products are summed in float32
// lanes, one lane per position modulo 8; each tile's lanes are then added to
// float64 lane sums, which are summed in lane order and rounded once when dw
// is stored. dbias sums dy in float64 throughout, as the GEMM path does.
//
// The lanes are GCC/Clang vector types (plain loops for other compilers);
// the FMAs come from contraction, which the build allows for this file
// (CMakeLists.txt). The oneDNN plugin compiles it once per x86-64 level like
// the rest of ref's kernels and picks one at run time.
#include <string.h>

#include "conv.h"
#include "host.h"

#define LANES TSR_CPU_CONV_C1_LANES
#define MAX_TAPS TSR_CPU_CONV_C1_MAX_TAPS

#if defined(__GNUC__)
#define TSR_CPU_C1_INLINE inline __attribute__((always_inline))
#else
#define TSR_CPU_C1_INLINE inline
#endif

static inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Fills the KH * KW im2col rows (row r = kh * KW + kw at col + r * pitch)
// for positions [j0, j0 + nc) of the image plane at |x| (one channel), 0 in
// the padding, and zeroes each row from nc up to the next multiple of the
// lanes so the last vector of a tile adds exact zeros.
static void c1_im2col(const tsr_cpu_conv_plan *cv, const float *x, int64_t j0, int64_t nc,
                      float *col, int64_t pitch) {
  const int64_t xs2 = cv->xs[2], xs3 = cv->xs[3], s1 = cv->stride[1];
  const int64_t padded = (nc + LANES - 1) / LANES * LANES;
  const int64_t p_first = j0 / cv->ow, p_last = (j0 + nc - 1) / cv->ow;
  for (int64_t kh = 0; kh < cv->kh; ++kh) {
    for (int64_t kw = 0; kw < cv->kw; ++kw) {
      float *dst = col + (kh * cv->kw + kw) * pitch;
      const int64_t w_off = kw * cv->dilation[1] - cv->pad[1];
      // The output columns whose input column q * s1 + w_off lies in [0, W).
      const int64_t q_lo = clamp64(tsr_cpu_conv_div_ceil(-w_off, s1), 0, cv->ow);
      const int64_t q_hi = clamp64(tsr_cpu_conv_div_ceil(cv->w - w_off, s1), q_lo, cv->ow);
      int64_t i = 0;
      for (int64_t p = p_first; p <= p_last; ++p) {
        const int64_t q0 = p == p_first ? j0 - p * cv->ow : 0;
        const int64_t q1 = p == p_last ? j0 + nc - p * cv->ow : cv->ow;
        const int64_t h = p * cv->stride[0] - cv->pad[0] + kh * cv->dilation[0];
        if (h < 0 || h >= cv->h) {
          for (int64_t q = q0; q < q1; ++q) dst[i++] = 0.0f;
          continue;
        }
        const int64_t a = clamp64(q_lo, q0, q1), b = clamp64(q_hi, a, q1);
        for (int64_t q = q0; q < a; ++q) dst[i++] = 0.0f;
        if (b > a) {
          const float *src = x + h * xs2 + (a * s1 + w_off) * xs3;
          const int64_t step = s1 * xs3;
          if (step == 1) {
            for (int64_t q = 0; q < b - a; ++q) dst[i + q] = src[q];
          } else {
            for (int64_t q = 0; q < b - a; ++q) dst[i + q] = src[q * step];
          }
          i += b - a;
        }
        for (int64_t q = b; q < q1; ++q) dst[i++] = 0.0f;
      }
      for (; i < padded; ++i) dst[i] = 0.0f;
    }
  }
}

#if defined(__GNUC__)
// GCC and Clang: explicit vectors. Left to itself, GCC 12 vectorises the
// plain loops below across the taps (broadcasts and shuffles, far slower on
// the CNN shape: docs/performance-log.md, "Measurements behind the code's
// decisions") instead of across the lanes; with these types each tap's
// accumulator is one register (one AVX2 register, two SSE2 ones).
typedef float c1_f8 __attribute__((vector_size(LANES * sizeof(float))));
typedef float c1_f4 __attribute__((vector_size(LANES / 2 * sizeof(float))));
typedef double c1_d4 __attribute__((vector_size(LANES / 2 * sizeof(double))));

// Unaligned loads (one vmovups), through a pointer: a function returning a
// 32-byte vector changes the ABI without AVX, which -Wpsabi rejects.
static inline void c1_f8_load(c1_f8 *v, const float *p) { memcpy(v, p, sizeof(*v)); }

// Adds one vector of positions: a[t] += dy * col[t * pitch ...], and dy to
// the dbias lanes b0 (lanes 0-3) and b1 (lanes 4-7) in double.
static TSR_CPU_C1_INLINE void c1_step(c1_f8 *restrict a, c1_d4 *restrict b0, c1_d4 *restrict b1,
                                      const float *restrict dy, const float *restrict col,
                                      int64_t pitch, const int taps) {
  c1_f8 d, c;
  c1_f8_load(&d, dy);
  c1_f4 lo, hi;
  memcpy(&lo, dy, sizeof(lo));
  memcpy(&hi, dy + LANES / 2, sizeof(hi));
  *b0 += __builtin_convertvector(lo, c1_d4);
  *b1 += __builtin_convertvector(hi, c1_d4);
#pragma GCC unroll 9
  for (int t = 0; t < taps; ++t) {
    c1_f8_load(&c, col + t * pitch);
    a[t] += d * c;
  }
}

// Sums |nc| positions of one dy plane (contiguous at |dy|) times the im2col
// rows in float32 lanes, then adds the lanes to the float64 lane sums |sums|
// (taps x LANES) and dy's to |bias_sums| (LANES). |taps| is a constant in
// every instance below, so the accumulators live in registers.
static TSR_CPU_C1_INLINE void c1_dot(double *restrict sums, double *restrict bias_sums,
                                     const float *restrict dy, const float *restrict col,
                                     int64_t pitch, int64_t nc, const int taps) {
  c1_f8 a[MAX_TAPS];
  c1_d4 b0 = {0}, b1 = {0};
#pragma GCC unroll 9
  for (int t = 0; t < taps; ++t) a[t] = (c1_f8){0};
  int64_t j = 0;
  for (; j + LANES <= nc; j += LANES) c1_step(a, &b0, &b1, dy + j, col + j, pitch, taps);
  if (j < nc) {
    // The last, partial vector: dy padded with zeros meets the zeroed
    // im2col columns, so the extra lanes add exact zeros.
    float tail[LANES] = {0};
    for (int64_t i = 0; j + i < nc; ++i) tail[i] = dy[j + i];
    c1_step(a, &b0, &b1, tail, col + j, pitch, taps);
  }
#pragma GCC unroll 9
  for (int t = 0; t < taps; ++t) {
    for (int l = 0; l < LANES; ++l) sums[t * LANES + l] += (double)a[t][l];
  }
  for (int l = 0; l < LANES / 2; ++l) {
    bias_sums[l] += b0[l];
    bias_sums[LANES / 2 + l] += b1[l];
  }
}
#else
// Other compilers: the same sums, lane by lane.
static inline void c1_dot(double *restrict sums, double *restrict bias_sums,
                          const float *restrict dy, const float *restrict col, int64_t pitch,
                          int64_t nc, const int taps) {
  float a[MAX_TAPS][LANES] = {{0}};
  double b[LANES] = {0};
  for (int64_t j = 0; j < nc; j += LANES) {
    for (int l = 0; l < LANES; ++l) {
      const float d = j + l < nc ? dy[j + l] : 0.0f;
      b[l] += (double)d;
      for (int t = 0; t < taps; ++t) a[t][l] += d * col[t * pitch + j + l];
    }
  }
  for (int l = 0; l < LANES; ++l) {
    for (int t = 0; t < taps; ++t) sums[t * LANES + l] += (double)a[t][l];
    bias_sums[l] += b[l];
  }
}
#endif

typedef void (*c1_dot_fn)(double *restrict sums, double *restrict bias_sums,
                          const float *restrict dy, const float *restrict col, int64_t pitch,
                          int64_t nc);

#define TSR_CPU_C1_DOT(n)                                                                    \
  static void c1_dot_##n(double *restrict sums, double *restrict bias_sums,                  \
                         const float *restrict dy, const float *restrict col, int64_t pitch, \
                         int64_t nc) {                                                       \
    c1_dot(sums, bias_sums, dy, col, pitch, nc, n);                                          \
  }
TSR_CPU_C1_DOT(1)
TSR_CPU_C1_DOT(2)
TSR_CPU_C1_DOT(3)
TSR_CPU_C1_DOT(4)
TSR_CPU_C1_DOT(5)
TSR_CPU_C1_DOT(6)
TSR_CPU_C1_DOT(7)
TSR_CPU_C1_DOT(8)
TSR_CPU_C1_DOT(9)
#undef TSR_CPU_C1_DOT

static const c1_dot_fn c1_dots[MAX_TAPS + 1] = {NULL,     c1_dot_1, c1_dot_2, c1_dot_3, c1_dot_4,
                                                c1_dot_5, c1_dot_6, c1_dot_7, c1_dot_8, c1_dot_9};

typedef struct c1_job {
  const tsr_cpu_conv_plan *cv;
  char *const *ptrs;
  char *workspace;
} c1_job;

// Items [begin, end): item = g * o_blocks + block. For every image and
// position tile: the group's im2col rows, then each channel's dot products
// into its float64 lane sums; then the lanes are summed in order and dw and
// dbias stored.
static void c1_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const c1_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  const int taps = (int)(cv->kh * cv->kw);
  const c1_dot_fn dot = c1_dots[taps];
  char *slot = job->workspace + (uint64_t)thread_index * cv->slot_bytes;
  float *col = (float *)(slot + cv->col_offset);
  double *sums = (double *)(slot + cv->sums_offset);
  double *bias_sums = (double *)(slot + cv->bias_sums_offset);
  const float *dy = (const float *)job->ptrs[0];
  const float *x = (const float *)job->ptrs[1];
  float *dw = (float *)job->ptrs[2];
  float *dbias = cv->has_bias ? (float *)job->ptrs[3] : NULL;
  const int64_t per_o = (int64_t)taps * LANES;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t g = item / cv->o_blocks, blk = item % cv->o_blocks;
    const int64_t o_first = g * cv->og + blk * cv->o_block;
    const int64_t on = cv->og - blk * cv->o_block < cv->o_block ? cv->og - blk * cv->o_block
                                                                : cv->o_block;
    if (on <= 0) continue;
    memset(sums, 0, (size_t)(on * per_o) * sizeof(double));
    memset(bias_sums, 0, (size_t)(on * LANES) * sizeof(double));
    for (int64_t n = 0; n < cv->n; ++n) {
      const float *x_plane = x + n * cv->xs[0] + g * cv->xs[1];
      const float *dy_block = dy + n * cv->ys[0] + o_first * cv->ys[1];
      for (int64_t t = 0; t < cv->tiles; ++t) {
        const int64_t j0 = t * cv->tile_cols;
        const int64_t nc = cv->cols - j0 < cv->tile_cols ? cv->cols - j0 : cv->tile_cols;
        c1_im2col(cv, x_plane, j0, nc, col, cv->c1_pitch);
        // With one tile per image (the usual case), the block's dy planes
        // stream past in memory order.
        for (int64_t i = 0; i < on; ++i) {
          dot(sums + i * per_o, bias_sums + i * LANES, dy_block + i * cv->ys[1] + j0, col,
              cv->c1_pitch, nc);
        }
      }
    }
    for (int64_t i = 0; i < on; ++i) {
      const int64_t o = o_first + i;
      for (int64_t r = 0; r < taps; ++r) {
        const double *lane = sums + i * per_o + r * LANES;
        double v = 0.0;
        for (int l = 0; l < LANES; ++l) v += lane[l];
        dw[o * cv->ws[0] + r / cv->kw * cv->ws[2] + r % cv->kw * cv->ws[3]] = (float)v;
      }
      if (dbias != NULL) {
        double v = 0.0;
        for (int l = 0; l < LANES; ++l) v += bias_sums[i * LANES + l];
        dbias[o * cv->bias_stride] = (float)v;
      }
    }
  }
}

tsr_status tsr_cpu_conv_filter_c1_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                          char *workspace) {
  if (cv->o == 0) return TSR_OK;
  c1_job job = {cv, ptrs, workspace};
  const int64_t items = cv->groups * cv->o_blocks;
  if (cv->parallel && tsr_cpu_thread_count_get() <= cv->slots) {
    const tsr_host_api *host = tsr_cpu_host_get();
    return host->parallel_for(host->ctx, items, 1, c1_items_run, &job);
  }
  c1_items_run(&job, 0, items, 0);
  return TSR_OK;
}
