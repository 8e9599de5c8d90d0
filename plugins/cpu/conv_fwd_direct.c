// CONV2D with one group, float32, no activation or RELU (conv.h says which
// shapes: tsr_cpu_conv_fwd_direct_fits).
//
// The forward is a GEMM over each image's output positions:
//   yT[p][o] = bias[o] + sum over r = (c, kh, kw) of x[n, c, base(p) + off(r)] * wT[r][o],
// with base(p) the offset of output position p's window in the image and
// off(r) the offset of row r within the window (two tables in the slot, so
// no im2col matrix is built). Register tiles of POS positions, whose x
// values are broadcast, by COLS output channels (two vectors of wT,
// transposed per item into the slot; conv.h: 6 x 16 with AVX2, 12 x 32 with
// AVX-512) run over all K = C * KH * KW rows: per row, two wT vectors from
// L1 and POS broadcasts of x feed 2 * POS FMAs into as many vector
// accumulators. The tile is then stored into y's rows with the bias added;
// with padding, x goes through a zero-padded copy of the image first. What
// limits it is FMA throughput for deep K (the CNN's second layer, K 288),
// and the scattered stores of the tile into y for shallow K (its first
// layer, K 9).
//
// Summation order: each output element is one accumulator lane, summed in
// float32 over r in order from zero, then the bias is added and RELU
// applied, as ref's GEMM epilogue does (so a fused RELU gives the bits of
// CONV2D then RELU). Work items
// own disjoint output elements (chunks of output channels; or of images,
// then of positions, when the channel blocks do not divide among the
// threads), so results do not depend on the thread count.
//
// The vectors are GCC/Clang vector types (plain loops for other compilers);
// the FMAs come from contraction, which the build allows for this file
// (CMakeLists.txt). The oneDNN plugin compiles it once per x86-64 level like
// the rest of ref's kernels and picks one at run time.
#include <string.h>

#include "conv.h"
#include "host.h"

#define POS TSR_CPU_CONV_FW_POSITIONS
#define COLS TSR_CPU_CONV_FW_COLS

#if defined(__GNUC__)
#define TSR_CPU_FW_INLINE inline __attribute__((always_inline))
#else
#define TSR_CPU_FW_INLINE inline
#endif

#define VL TSR_CPU_CONV_VL

#if defined(__GNUC__)
typedef float fw_vec __attribute__((vector_size(VL * sizeof(float))));

// Unaligned loads and stores through pointers: a function returning a
// 32- or 64-byte vector changes the ABI without AVX, which -Wpsabi rejects.
static inline void fw_vec_load(fw_vec *v, const float *p) { memcpy(v, p, sizeof(*v)); }
static inline void fw_vec_store(float *p, const fw_vec *v) { memcpy(p, v, sizeof(*v)); }

// One register tile: |mp| positions, whose windows start at |xp[i]| (with
// |row|: at xp[0] + i, consecutive positions of one output row over x's
// unit column stride), by |nv| vectors of VL output channels of |wt| (row
// pitch |pitch|), over the |k| rows whose offsets in a window are |roff|;
// the sums go to |out| [POS][COLS]. |mp|, |nv| and |row| are constants in
// every instance below, so the accumulators live in registers (2 * POS of
// them: conv.h). A row tile reads its broadcasts at fixed distances from one
// pointer; twelve separate window pointers do not fit x86-64's sixteen
// general registers beside the loop's own, and reloading them from the
// stack cost the AVX-512 tile a fifth of its speed.
static TSR_CPU_FW_INLINE void fw_tile(const float *const *xp, const int64_t *restrict roff,
                                      int64_t k, const float *restrict wt, int64_t pitch,
                                      float *restrict out, const int mp, const int nv,
                                      const int row) {
  fw_vec acc[POS][2];
  const float *xr[POS];
#pragma GCC unroll 16
  for (int i = 0; i < mp; ++i) {
    acc[i][0] = (fw_vec){0};
    acc[i][1] = (fw_vec){0};
    xr[i] = row ? xp[0] : xp[i];  // a row tile's caller sets xp[0] only
  }
  const float *w = wt;
  for (int64_t r = 0; r < k; ++r) {
    fw_vec w0, w1 = {0};
    fw_vec_load(&w0, w);
    if (nv > 1) fw_vec_load(&w1, w + VL);
    const int64_t at = roff[r];
    const float *xa = xr[0] + at;
#pragma GCC unroll 16
    for (int i = 0; i < mp; ++i) {
      const float v = row ? xa[i] : xr[i][at];
      const fw_vec b = TSR_CPU_CONV_SPLAT(fw_vec, v);
      acc[i][0] += b * w0;
      if (nv > 1) acc[i][1] += b * w1;
    }
    w += pitch;
  }
#pragma GCC unroll 16
  for (int i = 0; i < mp; ++i) {
    fw_vec_store(out + i * COLS, &acc[i][0]);
    if (nv > 1) fw_vec_store(out + i * COLS + VL, &acc[i][1]);
  }
}
#else
// Other compilers: the same sums, lane by lane.
static inline void fw_tile(const float *const *xp, const int64_t *restrict roff, int64_t k,
                           const float *restrict wt, int64_t pitch, float *restrict out,
                           const int mp, const int nv, const int row) {
  float acc[POS][COLS] = {{0}};
  const int width = nv * VL;
  for (int64_t r = 0; r < k; ++r) {
    const float *w = wt + r * pitch;
    for (int i = 0; i < mp; ++i) {
      const float b = row ? xp[0][roff[r] + i] : xp[i][roff[r]];
      for (int l = 0; l < width; ++l) acc[i][l] += b * w[l];
    }
  }
  for (int i = 0; i < mp; ++i) {
    for (int l = 0; l < width; ++l) out[i * COLS + l] = acc[i][l];
  }
}
#endif

typedef void (*fw_tile_fn)(const float *const *xp, const int64_t *restrict roff, int64_t k,
                           const float *restrict wt, int64_t pitch, float *restrict out);

#define TSR_CPU_FW_TILE(mp, nv)                                                            \
  static void fw_tile_##mp##_##nv(const float *const *xp, const int64_t *restrict roff,    \
                                  int64_t k, const float *restrict wt, int64_t pitch,      \
                                  float *restrict out) {                                   \
    fw_tile(xp, roff, k, wt, pitch, out, mp, nv, 0);                                       \
  }                                                                                        \
  static void fw_row_##mp##_##nv(const float *const *xp, const int64_t *restrict roff,     \
                                 int64_t k, const float *restrict wt, int64_t pitch,       \
                                 float *restrict out) {                                    \
    fw_tile(xp, roff, k, wt, pitch, out, mp, nv, 1);                                       \
  }
#define TSR_CPU_FW_TILES(mp) TSR_CPU_FW_TILE(mp, 1) TSR_CPU_FW_TILE(mp, 2)
TSR_CPU_FW_TILES(1)
TSR_CPU_FW_TILES(2)
TSR_CPU_FW_TILES(3)
TSR_CPU_FW_TILES(4)
TSR_CPU_FW_TILES(5)
TSR_CPU_FW_TILES(6)
#if POS > 6
TSR_CPU_FW_TILES(7)
TSR_CPU_FW_TILES(8)
TSR_CPU_FW_TILES(9)
TSR_CPU_FW_TILES(10)
TSR_CPU_FW_TILES(11)
TSR_CPU_FW_TILES(12)
#endif
#undef TSR_CPU_FW_TILES
#undef TSR_CPU_FW_TILE

// [row][nv - 1][mp - 1]
#if POS == 6
#define TSR_CPU_FW_ROW(kind, nv)                                                           \
  {fw_##kind##_1_##nv, fw_##kind##_2_##nv, fw_##kind##_3_##nv, fw_##kind##_4_##nv,         \
   fw_##kind##_5_##nv, fw_##kind##_6_##nv}
#elif POS == 12
#define TSR_CPU_FW_ROW(kind, nv)                                                           \
  {fw_##kind##_1_##nv, fw_##kind##_2_##nv,  fw_##kind##_3_##nv,  fw_##kind##_4_##nv,       \
   fw_##kind##_5_##nv, fw_##kind##_6_##nv,  fw_##kind##_7_##nv,  fw_##kind##_8_##nv,       \
   fw_##kind##_9_##nv, fw_##kind##_10_##nv, fw_##kind##_11_##nv, fw_##kind##_12_##nv}
#else
#error "conv.h: a register tile of 6 or 12 rows"
#endif
static const fw_tile_fn fw_tiles[2][2][POS] = {
    {TSR_CPU_FW_ROW(tile, 1), TSR_CPU_FW_ROW(tile, 2)},
    {TSR_CPU_FW_ROW(row, 1), TSR_CPU_FW_ROW(row, 2)}};
#undef TSR_CPU_FW_ROW

typedef struct fw_job {
  const tsr_cpu_conv_plan *cv;
  char *const *ptrs;
  char *workspace;
} fw_job;

// Items [begin, end): item = (o_chunk_index * fw_n_chunks + n_chunk_index) *
// fw_p_chunks + p_chunk_index.
// The chunk's weights are transposed into wT [K][fd_o_chunk] (zero columns
// past O), then per image (copied with padding when padded) and block of
// COLS output channels, the register tiles run over the positions in order and
// are stored into y.
static void fw_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const fw_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  char *slot = job->workspace + (uint64_t)thread_index * cv->slot_bytes;
  float *xpad = (float *)(slot + cv->fd_x_offset);
  float *wt = (float *)(slot + cv->fw_wt_offset);
  int64_t *roff = (int64_t *)(slot + cv->fd_roff_offset);
  int64_t *base = (int64_t *)(slot + cv->fd_steps_offset);
  const float *x = (const float *)job->ptrs[0];
  const float *w = (const float *)job->ptrs[1];
  const float *bias = cv->has_bias ? (const float *)job->ptrs[2] : NULL;
  float *y = (float *)job->ptrs[cv->has_bias ? 3 : 2];
  const int64_t taps = cv->kh * cv->kw, k = cv->k, pitch = cv->fd_o_chunk;
  const int relu = cv->activation == TSR_ACTIVATION_RELU;
  // Consecutive positions of an output row are consecutive in x.
  const int row = cv->stride[1] * cv->fd_xw == 1;
  float out[POS * COLS];
  // Rows' offsets in a window and windows' offsets in the image.
  for (int64_t r = 0; r < k; ++r) {
    const int64_t c = r / taps, kh = r % taps / cv->kw, kw = r % cv->kw;
    roff[r] = c * cv->fd_xc + kh * cv->dilation[0] * cv->fd_xh + kw * cv->dilation[1] * cv->fd_xw;
  }
  for (int64_t p = 0, oh = 0, q = 0; p < cv->cols; ++p) {
    base[p] = oh * cv->stride[0] * cv->fd_xh + q * cv->stride[1] * cv->fd_xw;
    if (++q == cv->ow) {
      q = 0;
      ++oh;
    }
  }
  for (int64_t item = begin; item < end; ++item) {
    const int64_t pc = item % cv->fw_p_chunks, rest = item / cv->fw_p_chunks;
    const int64_t oc = rest / cv->fw_n_chunks, nc = rest % cv->fw_n_chunks;
    const int64_t p_begin = pc * cv->fw_p_chunk;
    const int64_t p_end = cv->cols - p_begin < cv->fw_p_chunk ? cv->cols : p_begin + cv->fw_p_chunk;
    const int64_t o0 = oc * cv->fd_o_chunk, n0 = nc * cv->fw_n_chunk;
    const int64_t on = cv->o - o0 < cv->fd_o_chunk ? cv->o - o0 : cv->fd_o_chunk;
    const int64_t n1 = cv->n - n0 < cv->fw_n_chunk ? cv->n : n0 + cv->fw_n_chunk;
    if (on <= 0 || n1 <= n0 || p_end <= p_begin) continue;
    for (int64_t r = 0; r < k; ++r) {
      const int64_t c = r / taps, kh = r % taps / cv->kw, kw = r % cv->kw;
      const float *src = w + c * cv->ws[1] + kh * cv->ws[2] + kw * cv->ws[3];
      float *dst = wt + r * pitch;
      int64_t l = 0;
      for (; l < on; ++l) dst[l] = src[(o0 + l) * cv->ws[0]];
      for (; l < pitch; ++l) dst[l] = 0.0f;
    }
    for (int64_t n = n0; n < n1; ++n) {
      const float *img = x + n * cv->xs[0];
      if (cv->fd_copy_x) {
        tsr_cpu_conv_x_pad(cv, img, xpad);
        img = xpad;
      }
      float *yn = y + n * cv->ys[0];
      for (int64_t ob = 0; ob < on; ob += COLS) {
        const int64_t width = on - ob < COLS ? on - ob : COLS;
        const int nv = width > VL ? 2 : 1;
        float b[COLS] = {0};
        for (int64_t l = 0; bias != NULL && l < width; ++l) {
          b[l] = bias[(o0 + ob + l) * cv->bias_stride];
        }
        int64_t oh = p_begin / cv->ow, q = p_begin % cv->ow;
        for (int64_t p0 = p_begin; p0 < p_end;) {
          const float *xp[POS];
          int mp;
          if (row) {
            // The rest of this output row, in tiles of near-equal sizes.
            const int64_t in_row = cv->ow - q < p_end - p0 ? cv->ow - q : p_end - p0;
            const int64_t tiles = (in_row + POS - 1) / POS;
            mp = (int)((in_row + tiles - 1) / tiles);
            xp[0] = img + base[p0];
          } else {
            mp = (int)(p_end - p0 < POS ? p_end - p0 : POS);
            for (int i = 0; i < mp; ++i) xp[i] = img + base[p0 + i];
          }
          fw_tiles[row][nv - 1][mp - 1](xp, roff, k, wt + ob, pitch, out);
          p0 += mp;
          for (int i = 0; i < mp; ++i) {
            float *dst = yn + (o0 + ob) * cv->ys[1] + oh * cv->ys[2] + q * cv->ys[3];
            const float *src = out + i * COLS;
            for (int64_t l = 0; l < width; ++l) {
              float v = bias != NULL ? src[l] + b[l] : src[l];
              if (relu && v < 0.0f) v = 0.0f;  // NaN kept, as ref's GEMM epilogue
              dst[l * cv->ys[1]] = v;
            }
            if (++q == cv->ow) {
              q = 0;
              ++oh;
            }
          }
        }
      }
    }
  }
}

tsr_status tsr_cpu_conv_fwd_direct_execute(const tsr_cpu_conv_plan *cv, char *const *ptrs,
                                           char *workspace) {
  if (cv->o == 0 || cv->n == 0) return TSR_OK;
  fw_job job = {cv, ptrs, workspace};
  if (cv->parallel && tsr_cpu_thread_count_get() <= cv->slots) {
    const tsr_host_api *host = tsr_cpu_host_get();
    return host->parallel_for(host->ctx, cv->items, 1, fw_items_run, &job);
  }
  fw_items_run(&job, 0, cv->items, 0);
  return TSR_OK;
}
