// CONV2D_BACKWARD_FILTER with several input channels and one group, float32
// (conv.h says which shapes: tsr_cpu_conv_filter_direct_fits).
//
// The filter gradient is a GEMM over the batch's output positions:
//   dW^T[(c, kh, kw)][o] = sum over n, oh, ow of dy[n, o, oh, ow] *
//                          x[n, c, oh * s0 + kh * d0 - p0, ow * s1 + kw * d1 - p1].
// Per step (the positions of up to fd_batch images, 242 for the CNN's second
// layer), the item's output channels of dy are transposed into dyT
// [positions][channels] in the slot, then register tiles of ROWS rows
// (c, kh, kw) by COLS output channels (conv.h: 6 x 16 in 12 vector
// accumulators with AVX2, 12 x 32 in 24 with AVX-512) run over the step's
// positions: per position, two dyT vectors from L1 and ROWS broadcasts of x
// feed 2 * ROWS FMAs. Each row reads x at a fixed offset from the position's
// base (a table per step), so no im2col matrix is built; with padding, x
// goes through zero-padded copies of the images in the slot first. What
// limits it is FMA throughput: on the CNN's second layer one thread runs as
// fast as ref's float32 GEMM, and the transposition, the copies and the
// float64 sums are a small share of the time (perf). Before the rows' offsets
// were precomputed and dy was read along its rows, divisions and 64 strided
// read streams took a large share. Measured at: docs/performance-log.md,
// "Measurements behind the code's decisions".
//
// Summation order: each register tile sums a step's products in float32,
// one accumulator lane per output element, over the step's positions in
// order; each step's sums are then added to float64 sums in step order and
// rounded once when dw is stored. dbias sums dy in float64 throughout. Steps
// and position tiles come from the shape alone, and work items own disjoint
// output elements (blocks of output channels, or of rows when the channel
// blocks do not divide among the threads), so results do not depend on the
// thread count.
//
// The vectors are GCC/Clang vector types (plain loops for other compilers);
// the FMAs come from contraction, which the build allows for this file
// (CMakeLists.txt). The oneDNN plugin compiles it once per x86-64 level like
// the rest of ref's kernels and picks one at run time.
#include <string.h>

#include "conv.h"
#include "host.h"

#define ROWS TSR_CPU_CONV_FD_ROWS
#define COLS TSR_CPU_CONV_FD_COLS

#if defined(__GNUC__)
#define TSR_CPU_FD_INLINE inline __attribute__((always_inline))
#else
#define TSR_CPU_FD_INLINE inline
#endif

// What the register tile needs besides its rows: its steps (positions of one
// or more images) and, per step, the offset of the position's base in the
// image data, dyT's row pitch and the float64 sums'.
typedef struct fd_tile_args {
  const int64_t *steps;
  int64_t count;
  int64_t pitch, sums_pitch;
} fd_tile_args;

#define VL TSR_CPU_CONV_VL

#if defined(__GNUC__)
typedef float fd_vec __attribute__((vector_size(VL * sizeof(float))));
typedef float fd_f4 __attribute__((vector_size(4 * sizeof(float))));
typedef double fd_d4 __attribute__((vector_size(4 * sizeof(double))));

// Unaligned loads through pointers: a function returning a 32- or 64-byte
// vector changes the ABI without AVX, which -Wpsabi rejects.
static inline void fd_vec_load(fd_vec *v, const float *p) { memcpy(v, p, sizeof(*v)); }

// Adds the VL float32 lanes of |v| to the float64 sums at |s|.
static TSR_CPU_FD_INLINE void fd_sums_add(double *restrict s, const fd_vec *v) {
#pragma GCC unroll 4
  for (int h = 0; h < VL; h += 4) {
    fd_f4 f;
    fd_d4 d;
    memcpy(&f, (const float *)v + h, sizeof(f));
    memcpy(&d, s + h, sizeof(d));
    d += __builtin_convertvector(f, fd_d4);
    memcpy(s + h, &d, sizeof(d));
  }
}

// One register tile: |mr| rows, whose x values sit at |roff| from each
// position's base in |img|, by |nv| vectors of VL output channels at |dyt|;
// the float32 sums over the tile's positions are added to |sums|. With
// |taps3|, the rows come in threes of one (c, kh) whose x values are
// adjacent (kw 0, 1, 2 over a unit column stride), read at fixed distances
// from one pointer per three: twelve row pointers do not fit x86-64's
// sixteen general registers beside the loop's own, and reloading them from
// the stack cost the AVX-512 tile a fifth of its speed. |mr|, |nv| and
// |taps3| are constants in every instance below, so the accumulators live
// in registers (2 * ROWS of them: conv.h).
static TSR_CPU_FD_INLINE void fd_tile(const fd_tile_args *a, const float *restrict img,
                                      const int64_t *restrict roff, const float *restrict dyt,
                                      double *restrict sums, const int mr, const int nv,
                                      const int taps3) {
  fd_vec acc[ROWS][2];
  const float *xr[ROWS];
#pragma GCC unroll 16
  for (int i = 0; i < mr; ++i) {
    acc[i][0] = (fd_vec){0};
    acc[i][1] = (fd_vec){0};
    xr[i] = img + roff[taps3 ? i - i % 3 : i];
  }
  const int64_t *restrict steps = a->steps;
  const int64_t count = a->count, pitch = a->pitch;
  const float *d = dyt;
  for (int64_t k = 0; k < count; ++k) {
    fd_vec d0, d1 = {0};
    fd_vec_load(&d0, d);
    if (nv > 1) fd_vec_load(&d1, d + VL);
    const int64_t at = steps[k];
#pragma GCC unroll 16
    for (int i = 0; i < mr; ++i) {
      const float v = taps3 ? xr[i - i % 3][at + i % 3] : xr[i][at];
      const fd_vec b = TSR_CPU_CONV_SPLAT(fd_vec, v);
      acc[i][0] += b * d0;
      if (nv > 1) acc[i][1] += b * d1;
    }
    d += pitch;
  }
#pragma GCC unroll 16
  for (int i = 0; i < mr; ++i) {
    fd_sums_add(sums + i * a->sums_pitch, &acc[i][0]);
    if (nv > 1) fd_sums_add(sums + i * a->sums_pitch + VL, &acc[i][1]);
  }
}
#else
// Other compilers: the same sums, lane by lane.
static inline void fd_tile(const fd_tile_args *a, const float *restrict img,
                           const int64_t *restrict roff, const float *restrict dyt,
                           double *restrict sums, const int mr, const int nv,
                           const int taps3) {
  (void)taps3;  // the offsets say the same
  float acc[ROWS][COLS] = {{0}};
  const int width = nv * VL;
  for (int64_t k = 0; k < a->count; ++k) {
    const float *d = dyt + k * a->pitch;
    for (int i = 0; i < mr; ++i) {
      const float b = img[roff[i] + a->steps[k]];
      for (int l = 0; l < width; ++l) acc[i][l] += b * d[l];
    }
  }
  for (int i = 0; i < mr; ++i) {
    for (int l = 0; l < width; ++l) sums[i * a->sums_pitch + l] += (double)acc[i][l];
  }
}
#endif

typedef void (*fd_tile_fn)(const fd_tile_args *a, const float *restrict img,
                           const int64_t *restrict roff, const float *restrict dyt,
                           double *restrict sums);

#define TSR_CPU_FD_TILE(mr, nv)                                                            \
  static void fd_tile_##mr##_##nv(const fd_tile_args *a, const float *restrict img,        \
                                  const int64_t *restrict roff, const float *restrict dyt, \
                                  double *restrict sums) {                                 \
    fd_tile(a, img, roff, dyt, sums, mr, nv, 0);                                           \
  }                                                                                        \
  static void fd_taps3_##mr##_##nv(const fd_tile_args *a, const float *restrict img,       \
                                   const int64_t *restrict roff, const float *restrict dyt, \
                                   double *restrict sums) {                                \
    fd_tile(a, img, roff, dyt, sums, mr, nv, 1);                                           \
  }
#define TSR_CPU_FD_TILES(mr) TSR_CPU_FD_TILE(mr, 1) TSR_CPU_FD_TILE(mr, 2)
TSR_CPU_FD_TILES(1)
TSR_CPU_FD_TILES(2)
TSR_CPU_FD_TILES(3)
TSR_CPU_FD_TILES(4)
TSR_CPU_FD_TILES(5)
TSR_CPU_FD_TILES(6)
#if ROWS > 6
TSR_CPU_FD_TILES(7)
TSR_CPU_FD_TILES(8)
TSR_CPU_FD_TILES(9)
TSR_CPU_FD_TILES(10)
TSR_CPU_FD_TILES(11)
TSR_CPU_FD_TILES(12)
#endif
#undef TSR_CPU_FD_TILES
#undef TSR_CPU_FD_TILE

// [taps3][nv - 1][mr - 1]
#if ROWS == 6
#define TSR_CPU_FD_ROW(kind, nv)                                                           \
  {fd_##kind##_1_##nv, fd_##kind##_2_##nv, fd_##kind##_3_##nv, fd_##kind##_4_##nv,         \
   fd_##kind##_5_##nv, fd_##kind##_6_##nv}
#elif ROWS == 12
#define TSR_CPU_FD_ROW(kind, nv)                                                           \
  {fd_##kind##_1_##nv, fd_##kind##_2_##nv,  fd_##kind##_3_##nv,  fd_##kind##_4_##nv,       \
   fd_##kind##_5_##nv, fd_##kind##_6_##nv,  fd_##kind##_7_##nv,  fd_##kind##_8_##nv,       \
   fd_##kind##_9_##nv, fd_##kind##_10_##nv, fd_##kind##_11_##nv, fd_##kind##_12_##nv}
#else
#error "conv.h: a register tile of 6 or 12 rows"
#endif
static const fd_tile_fn fd_tiles[2][2][ROWS] = {
    {TSR_CPU_FD_ROW(tile, 1), TSR_CPU_FD_ROW(tile, 2)},
    {TSR_CPU_FD_ROW(taps3, 1), TSR_CPU_FD_ROW(taps3, 2)}};
#undef TSR_CPU_FD_ROW

// Transposes output channels [o0, o0 + on) of dy's image |dy| (already at
// image n), positions [j0, j0 + nc), into dyT [nc][pitch]; columns on..pitch
// are zeros, so the last register tile adds exact zeros there. dy is read
// along its rows (one channel's positions), eight channels at a time: one
// read stream per channel of all of them stalled on L2 (a quarter of the
// kernel's time at 64 channels).
static void fd_dy_transpose(const tsr_cpu_conv_plan *cv, const float *dy, int64_t o0, int64_t on,
                            int64_t j0, int64_t nc, float *dyt, int64_t pitch) {
  const int64_t ys1 = cv->ys[1], ys2 = cv->ys[2], ys3 = cv->ys[3];
  const int64_t oh0 = j0 / cv->ow, q0 = j0 - oh0 * cv->ow;
  if (ys3 == 1 && (cv->oh == 1 || ys2 == cv->ow)) {
    // Each channel's positions are contiguous.
    const float *src = dy + o0 * ys1 + oh0 * ys2 + q0;
    int64_t i = 0;
    for (; i + 8 <= on; i += 8) {
      const float *s0 = src + i * ys1;
      for (int64_t j = 0; j < nc; ++j) {
        float *dst = dyt + j * pitch + i;
#pragma GCC unroll 8
        for (int l = 0; l < 8; ++l) dst[l] = s0[l * ys1 + j];
      }
    }
    for (; i < on; ++i) {
      for (int64_t j = 0; j < nc; ++j) dyt[j * pitch + i] = src[i * ys1 + j];
    }
  } else {
    int64_t oh = oh0, q = q0;
    for (int64_t j = 0; j < nc; ++j) {
      const float *src = dy + o0 * ys1 + oh * ys2 + q * ys3;
      for (int64_t i = 0; i < on; ++i) dyt[j * pitch + i] = src[i * ys1];
      if (++q == cv->ow) {
        q = 0;
        ++oh;
      }
    }
  }
  if (on < pitch) {
    for (int64_t j = 0; j < nc; ++j) {
      for (int64_t i = on; i < pitch; ++i) dyt[j * pitch + i] = 0.0f;
    }
  }
}

typedef struct fd_job {
  const tsr_cpu_conv_plan *cv;
  char *const *ptrs;
  char *workspace;
} fd_job;

// Items [begin, end): item = o_chunk_index * fd_r_chunks + r_chunk_index.
// Per batch of fd_batch images and position tile: the padded copies of x
// (with padding), the steps' offsets, the chunk's dy channels transposed,
// dbias (the first row chunk of each channel chunk), then every register
// tile of the chunk, channel blocks outermost so that a block's dyT columns
// stay in L1. Then dw and dbias are stored.
static void fd_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const fd_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  char *slot = job->workspace + (uint64_t)thread_index * cv->slot_bytes;
  float *xp = (float *)(slot + cv->fd_x_offset);
  float *dyt = (float *)(slot + cv->fd_dyt_offset);
  double *sums = (double *)(slot + cv->fd_sums_offset);
  double *bias_sums = (double *)(slot + cv->fd_bias_offset);
  int64_t *roffs = (int64_t *)(slot + cv->fd_roff_offset);
  int64_t *steps = (int64_t *)(slot + cv->fd_steps_offset);
  const float *dy = (const float *)job->ptrs[0];
  const float *x = (const float *)job->ptrs[1];
  float *dw = (float *)job->ptrs[2];
  float *dbias = cv->has_bias ? (float *)job->ptrs[3] : NULL;
  const int64_t taps = cv->kh * cv->kw, pitch = cv->fd_o_chunk;
  // Image b of a batch starts this far from the first.
  const int64_t image_stride = cv->fd_copy_x ? cv->c * cv->fd_xc : cv->xs[0];
  const int64_t row_step = cv->stride[0] * cv->fd_xh, col_step = cv->stride[1] * cv->fd_xw;
  // Rows in threes of adjacent x values: 3 taps wide over a unit column
  // step, and every tile starting at a kw = 0 row (ROWS and the row chunks
  // are multiples of 3, and K = C * KH * 3).
  const int taps3 = cv->kw == 3 && cv->dilation[1] * cv->fd_xw == 1 && ROWS % 3 == 0;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t oc = item / cv->fd_r_chunks, rc = item % cv->fd_r_chunks;
    const int64_t o0 = oc * cv->fd_o_chunk, r0 = rc * cv->fd_r_chunk;
    const int64_t on = cv->o - o0 < cv->fd_o_chunk ? cv->o - o0 : cv->fd_o_chunk;
    const int64_t rn = cv->fd_rows - r0 < cv->fd_r_chunk ? cv->fd_rows - r0 : cv->fd_r_chunk;
    if (on <= 0 || rn <= 0) continue;
    const int with_bias = dbias != NULL && rc == 0;
    memset(sums, 0, (size_t)(rn * pitch) * sizeof(double));
    if (with_bias) memset(bias_sums, 0, (size_t)on * sizeof(double));
    for (int64_t i = 0; i < rn; ++i) {
      const int64_t r = r0 + i, c = r / taps, kh = r % taps / cv->kw, kw = r % cv->kw;
      roffs[i] = c * cv->fd_xc + kh * cv->dilation[0] * cv->fd_xh +
                 kw * cv->dilation[1] * cv->fd_xw;
    }
    for (int64_t n0 = 0; n0 < cv->n; n0 += cv->fd_batch) {
      const int64_t nb = cv->n - n0 < cv->fd_batch ? cv->n - n0 : cv->fd_batch;
      const float *img = x + n0 * cv->xs[0];
      if (cv->fd_copy_x) {
        for (int64_t b = 0; b < nb; ++b) {
          tsr_cpu_conv_x_pad(cv, img + b * cv->xs[0], xp + b * image_stride);
        }
        img = xp;
      }
      for (int64_t t = 0; t < cv->tiles; ++t) {
        const int64_t j0 = t * cv->tile_cols;
        const int64_t nc = cv->cols - j0 < cv->tile_cols ? cv->cols - j0 : cv->tile_cols;
        int64_t oh = j0 / cv->ow, q = j0 - oh * cv->ow;
        for (int64_t j = 0; j < nc; ++j) {
          steps[j] = oh * row_step + q * col_step;
          if (++q == cv->ow) {
            q = 0;
            ++oh;
          }
        }
        for (int64_t b = 1; b < nb; ++b) {
          for (int64_t j = 0; j < nc; ++j) steps[b * nc + j] = steps[j] + b * image_stride;
        }
        for (int64_t b = 0; b < nb; ++b) {
          fd_dy_transpose(cv, dy + (n0 + b) * cv->ys[0], o0, on, j0, nc, dyt + b * nc * pitch,
                          pitch);
        }
        const fd_tile_args a = {steps, nb * nc, pitch, pitch};
        if (with_bias) {
          for (int64_t j = 0; j < a.count; ++j) {
            for (int64_t i = 0; i < on; ++i) bias_sums[i] += (double)dyt[j * pitch + i];
          }
        }
        for (int64_t ob = 0; ob < on; ob += COLS) {
          const int nv = on - ob > VL ? 2 : 1;
          for (int64_t rb = 0; rb < rn; rb += ROWS) {
            const int mr = (int)(rn - rb < ROWS ? rn - rb : ROWS);
            fd_tiles[taps3][nv - 1][mr - 1](&a, img, roffs + rb, dyt + ob,
                                            sums + rb * pitch + ob);
          }
        }
      }
    }
    for (int64_t i = 0; i < rn; ++i) {
      const int64_t r = r0 + i, c = r / taps, kh = r % taps / cv->kw, kw = r % cv->kw;
      float *dst = dw + c * cv->ws[1] + kh * cv->ws[2] + kw * cv->ws[3];
      for (int64_t l = 0; l < on; ++l) dst[(o0 + l) * cv->ws[0]] = (float)sums[i * pitch + l];
    }
    if (with_bias) {
      for (int64_t l = 0; l < on; ++l) dbias[(o0 + l) * cv->bias_stride] = (float)bias_sums[l];
    }
  }
}

tsr_status tsr_cpu_conv_filter_direct_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                              char *workspace) {
  if (cv->o == 0) return TSR_OK;
  fd_job job = {cv, ptrs, workspace};
  if (cv->parallel && tsr_cpu_thread_count_get() <= cv->slots) {
    const tsr_host_api *host = tsr_cpu_host_get();
    return host->parallel_for(host->ctx, cv->items, 1, fd_items_run, &job);
  }
  fd_items_run(&job, 0, cv->items, 0);
  return TSR_OK;
}
