// POOL2D and POOL2D_BACKWARD, MAX and AVG: validation, the output-size
// formula, and the per-plane kernels. Bound by memory traffic and by the
// window loops (kernel[0] x kernel[1] loads per output), not by arithmetic,
// so everything computes in float64, except the CNN's 2x2 stride-2 MAX pool
// on float32 (window2_f32), whose results float32 gives exactly: it reads
// and writes float32 in place, without a plane staged in double, and in
// AVX2 where the compiler targets it (pool_window2_avx2.h), which runs the
// CNN's pools much faster than the portable loops (docs/performance-log.md,
// "Measurements behind the code's decisions").

#include <string.h>

#include "half.h"
#include "host.h"
#include "plan.h"
#include "signature.h"
#if defined(__AVX2__)
#include "pool_window2_avx2.h"
#endif

#define TSR_CPU_POOL_DTYPES                                                  \
  (TSR_DTYPE_BIT(TSR_FLOAT32) | TSR_DTYPE_BIT(TSR_FLOAT64) |                 \
   TSR_DTYPE_BIT(TSR_BFLOAT16) | TSR_DTYPE_BIT(TSR_FLOAT16))
// Below this many window taps in all, a pool hand-off costs more than it saves.
#define TSR_CPU_POOL_PARALLEL_MIN_TAPS 65536.0
// Window taps per parallel chunk, at least.
#define TSR_CPU_POOL_CHUNK_TAPS 16384.0

static int64_t div_ceil(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static int64_t div_floor(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// ---------------------------------------------------------------------------
// Kernels.

// Loads |n| elements of |dtype|, |step| bytes apart, into |dst| as double.
static void row_load(double *restrict dst, const char *src, int64_t n, int64_t step,
                     tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      for (int64_t i = 0; i < n; ++i) dst[i] = *(const float *)(src + i * step);
      break;
    case TSR_FLOAT64:
      for (int64_t i = 0; i < n; ++i) dst[i] = *(const double *)(src + i * step);
      break;
    case TSR_BFLOAT16:
      for (int64_t i = 0; i < n; ++i) dst[i] = tsr_cpu_bf16_to_f32(*(const uint16_t *)(src + i * step));
      break;
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = tsr_cpu_f16_to_f32(*(const uint16_t *)(src + i * step));
      break;
  }
}

// Stores |n| doubles into |dst| as |dtype|, |step| bytes apart. The half
// types compute in float32, so they round through it.
static void row_store(char *dst, int64_t step, const double *restrict src, int64_t n,
                      tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      for (int64_t i = 0; i < n; ++i) *(float *)(dst + i * step) = (float)src[i];
      break;
    case TSR_FLOAT64:
      for (int64_t i = 0; i < n; ++i) *(double *)(dst + i * step) = src[i];
      break;
    case TSR_BFLOAT16:
      for (int64_t i = 0; i < n; ++i) *(uint16_t *)(dst + i * step) = tsr_cpu_f32_to_bf16((float)src[i]);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) *(uint16_t *)(dst + i * step) = tsr_cpu_f32_to_f16((float)src[i]);
      break;
  }
}

// The taps [*lo, *hi) of window |p| along axis |d| that land inside an input
// of size |in|, and how many of its taps the AVG divisor counts along |d|.
static void taps_get(const tsr_cpu_pool_plan *pl, int d, int64_t in, int64_t p, int64_t *lo,
                     int64_t *hi, int64_t *count) {
  const int64_t start = p * pl->stride[d] - pl->pad_before[d];  // where tap 0 lands
  const int64_t k = pl->kernel[d], dil = pl->dilation[d];
  *lo = clamp64(div_ceil(-start, dil), 0, k);
  *hi = clamp64(div_ceil(in - start, dil), *lo, k);
  // start >= -pad_before always, so with padding only the end can clip.
  *count = pl->count_include_pad ? clamp64(div_ceil(in + pl->pad_after[d] - start, dil), 0, k)
                                 : *hi - *lo;
}

// One thread's region of the workspace.
// Its first 64 bytes hold the backward's record of the first out-of-range
// index it met: position (INT64_MAX for none), then value.
typedef struct pool_slot {
  double *plane;         // H x W: x (forward) or the dx accumulator (backward)
  double *row;           // one row of y or dy
  int64_t *w_lo, *w_hi, *w_count;  // taps_get along W for every output column
  int64_t *w_index;                // one row of chosen indices (strided index tensors)
} pool_slot;

static pool_slot slot_get(const tsr_cpu_pool_plan *pl, char *slots, int32_t thread_index) {
  char *base = slots + (uint64_t)thread_index * pl->slot_bytes;
  const uint64_t plane = ((uint64_t)(pl->h * pl->w) * 8 + 63) & ~63ull;
  const uint64_t row = ((uint64_t)(pl->ow > pl->w ? pl->ow : pl->w) * 8 + 63) & ~63ull;
  const uint64_t table = ((uint64_t)pl->ow * 8 + 63) & ~63ull;
  pool_slot s;
  s.plane = (double *)(base + 64);
  s.row = (double *)(base + 64 + plane);
  s.w_lo = (int64_t *)(base + 64 + plane + row);
  s.w_hi = (int64_t *)(base + 64 + plane + row + table);
  s.w_count = (int64_t *)(base + 64 + plane + row + 2 * table);
  s.w_index = (int64_t *)(base + 64 + plane + row + 3 * table);
  for (int64_t q = 0; q < pl->ow; ++q) {
    taps_get(pl, 1, pl->w, q, &s.w_lo[q], &s.w_hi[q], &s.w_count[q]);
  }
  return s;
}

typedef struct pool_job {
  const tsr_cpu_pool_plan *pl;
  char *const *ptrs;
  char *slots;
} pool_job;

// One 2x2 window of the max pool: the taps of rows |r0| and |r1| at columns
// 2q and 2q + 1 in row-major order, a later tap winning if strictly larger
// or NaN over a number; the maximum to |out_best|, its index h * W + w (the
// window's first at i0 + 2q) to |out_index|. Selects, not branches, so the
// loop over q vectorizes (a _Bool of && and || does with GCC 12; an int of
// & and | does not).
#define TSR_CPU_WINDOW2_CHOOSE(T, r0, r1, i0, W, q, out_best, out_index) \
  do {                                                                  \
    const T v1_ = (r0)[2 * (q) + 1], v2_ = (r1)[2 * (q)];               \
    const T v3_ = (r1)[2 * (q) + 1];                                    \
    const int64_t at_ = (i0) + 2 * (q);                                 \
    T best_ = (r0)[2 * (q)];                                            \
    int64_t index_ = at_;                                               \
    _Bool take_ = (v1_ > best_) || ((v1_ != v1_) && (best_ == best_));  \
    best_ = take_ ? v1_ : best_;                                        \
    index_ = take_ ? at_ + 1 : index_;                                  \
    take_ = (v2_ > best_) || ((v2_ != v2_) && (best_ == best_));        \
    best_ = take_ ? v2_ : best_;                                        \
    index_ = take_ ? at_ + (W) : index_;                                \
    take_ = (v3_ > best_) || ((v3_ != v3_) && (best_ == best_));        \
    best_ = take_ ? v3_ : best_;                                        \
    index_ = take_ ? at_ + (W) + 1 : index_;                            \
    (out_best) = best_;                                                 \
    (out_index) = index_;                                               \
  } while (0)

// The 2x2 stride-2 max pool of one float32 plane read and written in place
// (window2_f32: x, y and the indices unit-stride along W). The same taps,
// order and rules as the double loop below; comparing the float32 values
// themselves chooses as comparing their exact double copies does, so the
// results are identical, without staging the plane through double (8 float32
// lanes a vector instead of 4 doubles, and no plane-sized copy).
static void forward_plane_window2_f32(const tsr_cpu_pool_plan *pl, const float *x, float *y,
                                      int64_t *indices) {
  const int64_t W = pl->w, ow = pl->ow;
#if defined(__AVX2__)
  if (W <= INT32_MAX - 1) {
    for (int64_t p = 0; p < pl->oh; ++p) {
      const float *r0 = x + 2 * p * pl->xs[2], *r1 = r0 + pl->xs[2];
      float *y_row = y + p * pl->ys[2];
      int64_t *i_row = indices + p * pl->is[2];
      const int64_t i0 = 2 * p * W;
      for (int64_t q = 0; q < ow; q += 8) {
        tsr_cpu_w2_forward8(r0 + 2 * q, r1 + 2 * q, y_row + q, i_row + q, i0 + 2 * q, (int32_t)W,
                            ow - q < 8 ? ow - q : 8);
      }
    }
    return;
  }
#endif
  for (int64_t p = 0; p < pl->oh; ++p) {
    const float *r0 = x + 2 * p * pl->xs[2], *r1 = r0 + pl->xs[2];
    float *restrict best_row = y + p * pl->ys[2];
    int64_t *restrict chosen = indices + p * pl->is[2];
    const int64_t i0 = 2 * p * W;
    for (int64_t q = 0; q < ow; ++q) {
      TSR_CPU_WINDOW2_CHOOSE(float, r0, r1, i0, W, q, best_row[q], chosen[q]);
    }
  }
}

// Forward planes [begin, end): x staged as double, then every window.
static void forward_planes_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const pool_job *job = arg;
  const tsr_cpu_pool_plan *pl = job->pl;
  const int64_t elem = pl->elem_size, W = pl->w;
  const int is_max = pl->kind == TSR_POOL_MAX;
  pool_slot s = slot_get(pl, job->slots, thread_index);
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t n = plane / pl->c, c = plane % pl->c;
    const char *x = job->ptrs[0] + (n * pl->xs[0] + c * pl->xs[1]) * elem;
    char *y = job->ptrs[1] + (n * pl->ys[0] + c * pl->ys[1]) * elem;
    char *indices = is_max ? job->ptrs[2] + (n * pl->is[0] + c * pl->is[1]) * 8 : NULL;
    if (pl->window2_f32) {
      forward_plane_window2_f32(pl, (const float *)x, (float *)y, (int64_t *)indices);
      continue;
    }
    for (int64_t h = 0; h < pl->h; ++h) {
      row_load(s.plane + h * W, x + h * pl->xs[2] * elem, W, pl->xs[3] * elem, pl->dtype);
    }
    if (is_max && pl->window2) {
      // The CNN's 2x2 max pool: four taps in row-major order. The output
      // columns are independent and each tap's choice is a select, so the
      // compiler vectorizes the loop over q (4 doubles and their int64
      // indices per AVX2 vector). A per-tap scalar chain of compares and
      // masks, and the generic loop, cost more per output (perf:
      // docs/performance-log.md, "Measurements behind the code's decisions").
      const int64_t is3 = pl->is[3], ow = pl->ow;
      for (int64_t p = 0; p < pl->oh; ++p) {
        const double *r0 = s.plane + 2 * p * W, *r1 = r0 + W;
        int64_t *irow = (int64_t *)(indices + p * pl->is[2] * 8);
        int64_t *restrict chosen = is3 == 1 ? irow : s.w_index;
        double *restrict best_row = s.row;
        const int64_t i0 = 2 * p * W;
        for (int64_t q = 0; q < ow; ++q) {
          TSR_CPU_WINDOW2_CHOOSE(double, r0, r1, i0, W, q, best_row[q], chosen[q]);
        }
        if (is3 != 1) {
          for (int64_t q = 0; q < ow; ++q) irow[q * is3] = s.w_index[q];
        }
        row_store(y + p * pl->ys[2] * elem, pl->ys[3] * elem, s.row, pl->ow, pl->dtype);
      }
      continue;
    }
    for (int64_t p = 0; p < pl->oh; ++p) {
      int64_t h_lo, h_hi, h_count;
      taps_get(pl, 0, pl->h, p, &h_lo, &h_hi, &h_count);
      const int64_t h0 = p * pl->stride[0] - pl->pad_before[0];
      for (int64_t q = 0; q < pl->ow; ++q) {
        const int64_t w0 = q * pl->stride[1] - pl->pad_before[1];
        const int64_t w_lo = s.w_lo[q], w_hi = s.w_hi[q];
        if (is_max) {
          // Row-major over the taps inside the input (padding is -inf and
          // never chosen); a later tap wins only if strictly larger, or NaN
          // over a number, so the first maximum and the first NaN win.
          int64_t best_index = (h0 + h_lo * pl->dilation[0]) * W + w0 + w_lo * pl->dilation[1];
          double best = s.plane[best_index];
          for (int64_t kh = h_lo; kh < h_hi; ++kh) {
            const int64_t row = (h0 + kh * pl->dilation[0]) * W;
            for (int64_t kw = w_lo; kw < w_hi; ++kw) {
              const int64_t i = row + w0 + kw * pl->dilation[1];
              const double v = s.plane[i];
              // Branch-free: on random data the comparison is a coin toss,
              // and a mispredicted branch per tap cost more than the whole
              // loop (docs/performance-log.md, "Measurements behind the code's
              // decisions").
              const int take = (v > best) | ((v != v) & (best == best));
              best = take ? v : best;
              best_index = take ? i : best_index;
            }
          }
          s.row[q] = best;
          *(int64_t *)(indices + (p * pl->is[2] + q * pl->is[3]) * 8) = best_index;
        } else {
          double sum = 0;
          for (int64_t kh = h_lo; kh < h_hi; ++kh) {
            const double *row = s.plane + (h0 + kh * pl->dilation[0]) * W + w0;
            for (int64_t kw = w_lo; kw < w_hi; ++kw) sum += row[kw * pl->dilation[1]];
          }
          s.row[q] = sum / (double)(h_count * s.w_count[q]);
        }
      }
      row_store(y + p * pl->ys[2] * elem, pl->ys[3] * elem, s.row, pl->ow, pl->dtype);
    }
  }
}

// One backward plane: dx accumulated in double in output order, then stored.
// Out-of-range indices are skipped and the first is recorded in |bad|.
static void backward_plane_run(const tsr_cpu_pool_plan *pl, const pool_slot *s, int64_t *bad,
                               int64_t plane, const char *dy, const char *indices, char *dx) {
  const int64_t elem = pl->elem_size, W = pl->w, plane_size = pl->h * pl->w;
  const int is_max = pl->kind == TSR_POOL_MAX;
  for (int64_t i = 0; i < plane_size; ++i) s->plane[i] = 0;
  for (int64_t p = 0; p < pl->oh; ++p) {
    row_load(s->row, dy + p * pl->ys[2] * elem, pl->ow, pl->ys[3] * elem, pl->dtype);
    if (is_max) {
      for (int64_t q = 0; q < pl->ow; ++q) {
        const int64_t index = *(const int64_t *)(indices + (p * pl->is[2] + q * pl->is[3]) * 8);
        if (index >= 0 && index < plane_size) {
          s->plane[index] += s->row[q];
        } else {
          const int64_t position = (plane * pl->oh + p) * pl->ow + q;
          if (position < bad[0]) {
            bad[0] = position;
            bad[1] = index;
          }
        }
      }
      continue;
    }
    int64_t h_lo, h_hi, h_count;
    taps_get(pl, 0, pl->h, p, &h_lo, &h_hi, &h_count);
    const int64_t h0 = p * pl->stride[0] - pl->pad_before[0];
    for (int64_t q = 0; q < pl->ow; ++q) {
      const int64_t w0 = q * pl->stride[1] - pl->pad_before[1];
      const double v = s->row[q] / (double)(h_count * s->w_count[q]);
      for (int64_t kh = h_lo; kh < h_hi; ++kh) {
        double *row = s->plane + (h0 + kh * pl->dilation[0]) * W + w0;
        for (int64_t kw = s->w_lo[q]; kw < s->w_hi[q]; ++kw) row[kw * pl->dilation[1]] += v;
      }
    }
  }
  for (int64_t h = 0; h < pl->h; ++h) {
    row_store(dx + h * pl->xs[2] * elem, pl->xs[3] * elem, s->plane + h * W, W, pl->dtype);
  }
}

// The 2x2 stride-2 max-pool backward of one float32 plane, written straight
// into dx (window2_f32). When every index lies in its own window, each dx
// element receives at most one dy: the double loop adds that one value to
// 0.0 and rounds it back, which is exactly 0.0f + dy (signed zeros and NaN
// included), so the result is identical. Each window's four dx elements are
// written as selects, with no zeroing pass and no scatter. Returns nonzero
// if an index lies outside its window (out of range, or chosen elsewhere
// by the caller): the caller then redoes the plane with the double loop,
// which sums colliding values and reports bad indices as always.
static int backward_plane_window2_f32(const tsr_cpu_pool_plan *pl, const float *dy,
                                      const int64_t *indices, float *dx) {
  const int64_t W = pl->w, ow = pl->ow, ow2 = 2 * pl->ow;
  int64_t stray = 0;
#if defined(__AVX2__)
  if (W <= INT32_MAX - 1) {
    for (int64_t p = 0; p < pl->oh; ++p) {
      const float *dy_row = dy + p * pl->ys[2];
      const int64_t *irow = indices + p * pl->is[2];
      float *d0 = dx + 2 * p * pl->xs[2];
      float *d1 = d0 + pl->xs[2];
      const int64_t i0 = 2 * p * W;
      for (int64_t q = 0; q < ow; q += 8) {
        stray |= tsr_cpu_w2_backward8(dy_row + q, irow + q, d0 + 2 * q, d1 + 2 * q, i0 + 2 * q,
                                      (int32_t)W, ow - q < 8 ? ow - q : 8);
      }
      for (int64_t w = ow2; w < W; ++w) d0[w] = d1[w] = 0.0f;
    }
    for (int64_t h = 2 * pl->oh; h < pl->h; ++h) {
      memset(dx + h * pl->xs[2], 0, (size_t)W * sizeof(float));
    }
    return stray != 0;
  }
#endif
  if (ow < 8) {
    // Rows shorter than a vector of outputs (the CNN's second pool: 5 per
    // row) spend the select loop below in its scalar remainder: zero the
    // plane, then store each dy at its index: faster than the double loop
    // and the selects in tsr-train's traces (docs/performance-log.md,
    // "Measurements behind the code's decisions").
    for (int64_t h = 0; h < pl->h; ++h) memset(dx + h * pl->xs[2], 0, (size_t)W * sizeof(float));
    for (int64_t p = 0; p < pl->oh; ++p) {
      const float *dy_row = dy + p * pl->ys[2];
      const int64_t *irow = indices + p * pl->is[2];
      float *d0 = dx + 2 * p * pl->xs[2];
      const int64_t i0 = 2 * p * W;
      for (int64_t q = 0; q < ow; ++q) {
        const int64_t off = irow[q] - (i0 + 2 * q);
        if ((off != 0) & (off != 1) & (off != W) & (off != W + 1)) return 1;
        const int64_t below = off >= W;
        d0[2 * q + off - below * W + below * pl->xs[2]] = dy_row[q] + 0.0f;
      }
    }
    return 0;
  }
  for (int64_t p = 0; p < pl->oh; ++p) {
    const float *restrict dy_row = dy + p * pl->ys[2];
    const int64_t *restrict irow = indices + p * pl->is[2];
    float *restrict d0 = dx + 2 * p * pl->xs[2];
    float *restrict d1 = d0 + pl->xs[2];
    const int64_t i0 = 2 * p * W;
    for (int64_t q = 0; q < ow; ++q) {
      const int64_t off = irow[q] - (i0 + 2 * q);
      const float v = dy_row[q] + 0.0f;  // -0.0 becomes 0.0, as 0.0 + dy does
      d0[2 * q] = off == 0 ? v : 0.0f;
      d0[2 * q + 1] = off == 1 ? v : 0.0f;
      d1[2 * q] = off == W ? v : 0.0f;
      d1[2 * q + 1] = off == W + 1 ? v : 0.0f;
      // An int64 of & and |: GCC 12 vectorizes this reduction, not a _Bool of || and &&.
      stray |= (int64_t)((off != 0) & (off != 1) & (off != W) & (off != W + 1));
    }
    for (int64_t w = ow2; w < W; ++w) d0[w] = d1[w] = 0.0f;
  }
  for (int64_t h = 2 * pl->oh; h < pl->h; ++h) {
    float *row = dx + h * pl->xs[2];
    for (int64_t w = 0; w < W; ++w) row[w] = 0.0f;
  }
  return stray != 0;
}

// Backward planes [begin, end).
static void backward_planes_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const pool_job *job = arg;
  const tsr_cpu_pool_plan *pl = job->pl;
  const int64_t elem = pl->elem_size;
  const int is_max = pl->kind == TSR_POOL_MAX;
  pool_slot s = slot_get(pl, job->slots, thread_index);
  int64_t *bad = (int64_t *)(job->slots + (uint64_t)thread_index * pl->slot_bytes);
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t n = plane / pl->c, c = plane % pl->c;
    const char *dy = job->ptrs[0] + (n * pl->ys[0] + c * pl->ys[1]) * elem;
    const char *indices = is_max ? job->ptrs[1] + (n * pl->is[0] + c * pl->is[1]) * 8 : NULL;
    char *dx = job->ptrs[is_max ? 2 : 1] + (n * pl->xs[0] + c * pl->xs[1]) * elem;
    if (pl->window2_f32 &&
        !backward_plane_window2_f32(pl, (const float *)dy, (const int64_t *)indices, (float *)dx)) {
      continue;
    }
    backward_plane_run(pl, &s, bad, plane, dy, indices, dx);
  }
}

#if defined(__GNUC__)
#define TSR_CPU_POOL_COLD __attribute__((cold, noinline))
#else
#define TSR_CPU_POOL_COLD
#endif

static TSR_CPU_POOL_COLD tsr_status tsr_cpu_pool_index_error(const tsr_cpu_pool_plan *pl,
                                                             int64_t position, int64_t value) {
  const int64_t q = position % pl->ow, p = position / pl->ow % pl->oh;
  const int64_t c = position / (pl->ow * pl->oh) % pl->c, n = position / (pl->ow * pl->oh * pl->c);
  return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                           "pool2d_backward: indices[%lld, %lld, %lld, %lld] is %lld, outside "
                           "[0, H * W = %lld)",
                           (long long)n, (long long)c, (long long)p, (long long)q,
                           (long long)value, (long long)(pl->h * pl->w));
}

static tsr_status tsr_cpu_pool_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                       char *workspace) {
  const tsr_cpu_pool_plan *pl = &plan->u.pool;
  const int64_t planes = pl->n * pl->c;
  const int is_forward = pl->op == TSR_OP_POOL2D;
  if (planes == 0 || (is_forward ? pl->oh * pl->ow : pl->h * pl->w) == 0) return TSR_OK;
  pool_job job = {pl, ptrs, workspace};
  tsr_parallel_fn fn = is_forward ? forward_planes_run : backward_planes_run;
  const int parallel = pl->parallel && tsr_cpu_thread_count_get() <= pl->slots;
  const int32_t slots = parallel ? pl->slots : 1;
  for (int32_t i = 0; i < slots; ++i) {
    int64_t *bad = (int64_t *)(workspace + (uint64_t)i * pl->slot_bytes);
    bad[0] = INT64_MAX;
    bad[1] = 0;
  }
  if (parallel) {
    const tsr_host_api *host = tsr_cpu_host_get();
    tsr_status status = host->parallel_for(host->ctx, planes, pl->grain, fn, &job);
    if (status != TSR_OK) return status;
  } else {
    fn(&job, 0, planes, 0);
  }
  if (!is_forward && pl->kind == TSR_POOL_MAX) {
    int64_t first = INT64_MAX, value = 0;
    for (int32_t i = 0; i < slots; ++i) {
      const int64_t *bad = (const int64_t *)(workspace + (uint64_t)i * pl->slot_bytes);
      if (bad[0] < first) {
        first = bad[0];
        value = bad[1];
      }
    }
    if (first != INT64_MAX) return tsr_cpu_pool_index_error(pl, first, value);
  }
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Plans.

static tsr_status tsr_cpu_pool_attrs_read(const tsr_op_signature *signature,
                                          tsr_pool2d_attrs *out) {
  const char *op = tsr_op_name(signature->op);
  const tsr_pool2d_attrs *a = NULL;
  // Attrs are required; every field up to count_include_pad must be there.
  tsr_status status =
      tsr_cpu_attrs_get(signature, offsetof(tsr_pool2d_attrs, reserved), (const void **)&a);
  if (status != TSR_OK) return status;
  memset(out, 0, sizeof(*out));
  memcpy(out, a, offsetof(tsr_pool2d_attrs, reserved));
  if (TSR_ABI_COVERS(a, tsr_pool2d_attrs, reserved) && a->reserved != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: reserved is %u, must be 0", op,
                             (unsigned)a->reserved);
  }
  if (out->kind < 0 || out->kind >= TSR_POOL_KIND_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(out->kind < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "%s: kind %d is unknown", op, (int)out->kind);
  }
  for (int d = 0; d < 2; ++d) {
    const char *bad = NULL;
    int64_t value = 0;
    if (out->kernel[d] < 1) {
      bad = "kernel";
      value = out->kernel[d];
    } else if (out->stride[d] < 1) {
      bad = "stride";
      value = out->stride[d];
    } else if (out->dilation[d] < 1) {
      bad = "dilation";
      value = out->dilation[d];
    } else if (out->pad_before[d] < 0) {
      bad = "pad_before";
      value = out->pad_before[d];
    } else if (out->pad_after[d] < 0) {
      bad = "pad_after";
      value = out->pad_after[d];
    }
    if (bad != NULL) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s[%d] is %lld", op, bad, d,
                               (long long)value);
    }
  }
  return TSR_OK;
}

// The output size along axis |d| by the catalogue's formula; may be negative
// when the window is larger than the padded input.
static int64_t tsr_cpu_pool_out_size(const tsr_pool2d_attrs *a, int d, int64_t in) {
  const int64_t extent = a->dilation[d] * (a->kernel[d] - 1) + 1;
  const int64_t span = in + a->pad_before[d] + a->pad_after[d] - extent;
  if (!a->ceil_mode) return div_floor(span, a->stride[d]) + 1;
  int64_t out = div_ceil(span, a->stride[d]) + 1;
  // No window may start in the padding after the input.
  if (out > 0 && (out - 1) * a->stride[d] >= in + a->pad_before[d]) --out;
  return out;
}

// Checks x-role (x or dx), y-role (y or dy) and indices shapes against each
// other and the formula, and that every window reaches the input; fills
// the problem in |pl|.
static tsr_status tsr_cpu_pool_shapes_check(const tsr_op_signature *signature,
                                            const tsr_pool2d_attrs *a, const tsr_cpu_operand *x,
                                            const tsr_cpu_operand *y,
                                            const tsr_cpu_operand *indices,
                                            tsr_cpu_pool_plan *pl) {
  const char *op = tsr_op_name(signature->op);
  const tsr_cpu_operand *ranked[] = {x, y, indices};
  for (int i = 0; i < 3; ++i) {
    if (ranked[i] != NULL && ranked[i]->rank != 4) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s rank is %d, expected 4", op,
                               ranked[i]->name, (int)ranked[i]->rank);
    }
  }
  int64_t want[4] = {x->sizes[0], x->sizes[1], 0, 0};
  for (int d = 0; d < 2; ++d) {
    want[2 + d] = tsr_cpu_pool_out_size(a, d, x->sizes[2 + d]);
    if (want[2 + d] < 1) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: output %s would be %lld (input %lld, pads %lld + %lld, "
                               "kernel %lld, dilation %lld, stride %lld); it must be at least 1",
                               op, d == 0 ? "height" : "width", (long long)want[2 + d],
                               (long long)x->sizes[2 + d], (long long)a->pad_before[d],
                               (long long)a->pad_after[d], (long long)a->kernel[d],
                               (long long)a->dilation[d], (long long)a->stride[d]);
    }
  }
  static const char *const what[4] = {"N", "C", "OH by the formula", "OW by the formula"};
  for (int d = 0; d < 4; ++d) {
    if (y->sizes[d] != want[d]) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: %s sizes[%d] is %lld, expected %lld (%s; %s mode)", op,
                               y->name, d, (long long)y->sizes[d], (long long)want[d], what[d],
                               a->ceil_mode ? "ceil" : "floor");
    }
  }
  if (indices != NULL) {
    tsr_status status = tsr_cpu_same_sizes_check(signature, indices, y);
    if (status != TSR_OK) return status;
  }
  memset(pl, 0, sizeof(*pl));
  pl->n = x->sizes[0];
  pl->c = x->sizes[1];
  pl->h = x->sizes[2];
  pl->w = x->sizes[3];
  pl->oh = y->sizes[2];
  pl->ow = y->sizes[3];
  for (int d = 0; d < 2; ++d) {
    pl->kernel[d] = a->kernel[d];
    pl->stride[d] = a->stride[d];
    pl->pad_before[d] = a->pad_before[d];
    pl->pad_after[d] = a->pad_after[d];
    pl->dilation[d] = a->dilation[d];
  }
  pl->count_include_pad = a->count_include_pad != 0;
  // Every window needs a tap inside the input along both axes.
  for (int d = 0; d < 2; ++d) {
    const int64_t in = d == 0 ? pl->h : pl->w, outs = d == 0 ? pl->oh : pl->ow;
    for (int64_t p = 0; p < outs; ++p) {
      int64_t lo, hi, count;
      taps_get(pl, d, in, p, &lo, &hi, &count);
      if (lo == hi) {
        return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                                 "%s: window %lld along %s lies wholly in the padding (input "
                                 "%lld, kernel %lld, stride %lld, pad_before %lld, dilation %lld)",
                                 op, (long long)p, d == 0 ? "H" : "W", (long long)in,
                                 (long long)pl->kernel[d], (long long)pl->stride[d],
                                 (long long)pl->pad_before[d], (long long)pl->dilation[d]);
      }
    }
  }
  for (int d = 0; d < 4; ++d) {
    pl->xs[d] = x->strides[d];
    pl->ys[d] = y->strides[d];
    pl->is[d] = indices != NULL ? indices->strides[d] : 0;
  }
  return TSR_OK;
}

// Checks dtypes, shapes and overlap, then decides the threading and the
// workspace. |x|, |y|, |indices| index plan->operands (indices -1 for AVG).
static tsr_status tsr_cpu_pool_plan_finish(const tsr_op_signature *signature,
                                           tsr_plugin_plan *plan, const tsr_pool2d_attrs *a,
                                           int x, int y, int indices) {
  const tsr_cpu_operand *xo = &plan->operands[x];
  const tsr_cpu_operand *yo = &plan->operands[y];
  const tsr_cpu_operand *io = indices >= 0 ? &plan->operands[indices] : NULL;
  const tsr_cpu_operand *first = &plan->operands[0];
  tsr_status status = tsr_cpu_dtype_check(signature, first, TSR_CPU_POOL_DTYPES,
                                          "the pool2d ops take float");
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, xo, yo);
  if (status == TSR_OK && io != NULL) {
    status = tsr_cpu_dtype_check(signature, io, TSR_DTYPE_BIT(TSR_INT64), "indices are int64");
  }
  if (status == TSR_OK) status = tsr_cpu_pool_shapes_check(signature, a, xo, yo, io, &plan->u.pool);
  for (int32_t o = plan->num_inputs; o < plan->num_inputs + plan->num_outputs && status == TSR_OK; ++o) {
    status = tsr_cpu_output_overlap_check(signature, &plan->operands[o]);
  }
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;

  tsr_cpu_pool_plan *pl = &plan->u.pool;
  pl->op = signature->op;
  pl->dtype = xo->dtype;
  pl->elem_size = (int32_t)xo->elem_size;
  pl->kind = a->kind;
  pl->window2 = pl->kernel[0] == 2 && pl->kernel[1] == 2 && pl->stride[0] == 2 &&
                pl->stride[1] == 2 && pl->pad_before[0] == 0 && pl->pad_before[1] == 0 &&
                pl->dilation[0] == 1 && pl->dilation[1] == 1 && 2 * pl->oh <= pl->h &&
                2 * pl->ow <= pl->w;
  pl->window2_f32 = pl->window2 && pl->kind == TSR_POOL_MAX && pl->dtype == TSR_FLOAT32 &&
                    pl->xs[3] == 1 && (pl->ow == 1 || (pl->ys[3] == 1 && pl->is[3] == 1));
  const int32_t threads = tsr_cpu_thread_count_get();
  const double planes = (double)pl->n * (double)pl->c;
  const double taps_per_plane =
      (double)pl->oh * (double)pl->ow * (double)(pl->kernel[0] * pl->kernel[1]) +
      (double)(pl->h * pl->w);
  pl->parallel = threads > 1 && planes > 1 &&
                 planes * taps_per_plane >= TSR_CPU_POOL_PARALLEL_MIN_TAPS;
  pl->slots = pl->parallel ? threads : 1;
  pl->grain = (int64_t)(TSR_CPU_POOL_CHUNK_TAPS / (taps_per_plane + 1)) + 1;
  // A slot: the first-bad-index record, the plane, a row, four column tables.
  uint64_t slot = 64;
  int overflow = 0;
  const uint64_t counts[] = {(uint64_t)pl->h * (uint64_t)pl->w,
                             (uint64_t)(pl->ow > pl->w ? pl->ow : pl->w), (uint64_t)pl->ow,
                             (uint64_t)pl->ow, (uint64_t)pl->ow, (uint64_t)pl->ow};
  for (int i = 0; i < 6; ++i) {
    uint64_t bytes;
    overflow |= __builtin_mul_overflow(counts[i], 8, &bytes);
    overflow |= __builtin_add_overflow(bytes, 63, &bytes);
    overflow |= __builtin_add_overflow(slot, bytes & ~63ull, &slot);
  }
  uint64_t total;
  overflow |= __builtin_mul_overflow(slot, (uint64_t)pl->slots, &total);
  overflow |= __builtin_add_overflow(total, 64, &total);
  if (overflow || total > (uint64_t)INT64_MAX) {
    return tsr_cpu_error_set(TSR_UNSUPPORTED, "ref: %s needs a workspace beyond 2^63 bytes",
                             tsr_op_name(signature->op));
  }
  pl->slot_bytes = slot;
  plan->workspace_bytes = total;  // 64 bytes of slack for aligning the start
  plan->execute = tsr_cpu_pool_execute;
  plan->engine = a->kind == TSR_POOL_MAX ? "ref:pool-max" : "ref:pool-avg";
  return TSR_OK;
}

tsr_status tsr_cpu_pool2d_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  tsr_pool2d_attrs attrs;
  tsr_status status = tsr_cpu_pool_attrs_read(signature, &attrs);
  if (status != TSR_OK) return status;
  static const char *const max_names[] = {"x", "y", "indices"};
  static const char *const avg_names[] = {"x", "y"};
  const int is_max = attrs.kind == TSR_POOL_MAX;
  status = tsr_cpu_operands_init(signature, plan, 1, 1, is_max ? 2 : 1,
                                 is_max ? max_names : avg_names);
  if (status != TSR_OK) return status;
  return tsr_cpu_pool_plan_finish(signature, plan, &attrs, 0, 1, is_max ? 2 : -1);
}

tsr_status tsr_cpu_pool2d_backward_plan_init(const tsr_op_signature *signature,
                                             tsr_plugin_plan *plan) {
  tsr_pool2d_attrs attrs;
  tsr_status status = tsr_cpu_pool_attrs_read(signature, &attrs);
  if (status != TSR_OK) return status;
  static const char *const max_names[] = {"dy", "indices", "dx"};
  static const char *const avg_names[] = {"dy", "dx"};
  const int is_max = attrs.kind == TSR_POOL_MAX;
  status = tsr_cpu_operands_init(signature, plan, is_max ? 2 : 1, is_max ? 2 : 1, 1,
                                 is_max ? max_names : avg_names);
  if (status != TSR_OK) return status;
  return tsr_cpu_pool_plan_finish(signature, plan, &attrs, is_max ? 2 : 1, 0, is_max ? 1 : -1);
}
