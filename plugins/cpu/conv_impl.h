// The kernels of CONV2D and its backward ops (conv.h), written once for a
// compute type. Included only by conv_f32.c and conv_f64.c, each defining
// first:
//   TSR_CPU_CONV_T        float or double: the compute type
//   TSR_CPU_CONV_GEMM     the library's GEMM of that type (matmul.h)
//   TSR_CPU_CONV_EXECUTE  the name of the execute function to define
//
// Operands are converted to the compute type as im2col reads them (bfloat16
// and float16 widen to float32), and results are rounded once, when they are
// stored. The time goes to the GEMM: im2col copies K x cols elements per
// image against Og x K x cols multiply-adds.

#include <string.h>

#include "conv.h"
#include "half.h"
#include "host.h"
#include "tessera/ops.h"

typedef TSR_CPU_CONV_T T;

// Loads |n| elements of |dtype|, |step| bytes apart, from |src| into |dst|.
static inline void row_load(T *restrict dst, const char *src, int64_t n, int64_t step,
                            tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      if (sizeof(T) == 4 && step == 4) {
        memcpy(dst, src, (size_t)n * 4);
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = (T) * (const float *)(src + i * step);
      }
      break;
    case TSR_FLOAT64:
      if (sizeof(T) == 8 && step == 8) {
        memcpy(dst, src, (size_t)n * 8);
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = (T) * (const double *)(src + i * step);
      }
      break;
    case TSR_BFLOAT16:
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = (T)tsr_cpu_bf16_to_f32(*(const uint16_t *)(src + i * step));
      }
      break;
    default:
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = (T)tsr_cpu_f16_to_f32(*(const uint16_t *)(src + i * step));
      }
      break;
  }
}

// Stores |n| elements of |src| into |dst| as |dtype|, |step| bytes apart,
// rounding each once.
static inline void row_store(char *dst, int64_t step, const T *restrict src, int64_t n,
                             tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      for (int64_t i = 0; i < n; ++i) *(float *)(dst + i * step) = (float)src[i];
      break;
    case TSR_FLOAT64:
      for (int64_t i = 0; i < n; ++i) *(double *)(dst + i * step) = (double)src[i];
      break;
    case TSR_BFLOAT16:
      for (int64_t i = 0; i < n; ++i) *(uint16_t *)(dst + i * step) = tsr_cpu_f32_to_bf16((float)src[i]);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) *(uint16_t *)(dst + i * step) = tsr_cpu_f32_to_f16((float)src[i]);
      break;
  }
}

static inline void row_zero(T *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = 0;
}

static inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// The output columns q whose input column q * stride[1] + |w_off| lies in
// [0, W): [*q_lo, *q_hi), within [0, OW).
static inline void valid_cols_get(const tsr_cpu_conv_plan *cv, int64_t w_off, int64_t *q_lo,
                                  int64_t *q_hi) {
  *q_lo = clamp64(tsr_cpu_conv_div_ceil(-w_off, cv->stride[1]), 0, cv->ow);
  *q_hi = clamp64(tsr_cpu_conv_div_ceil(cv->w - w_off, cv->stride[1]), *q_lo, cv->ow);
}

// Positions [j0, j0 + nc) as runs along output rows: row p covers columns
// [run_begin(p), run_end(p)); the first and last rows may be partial.
typedef struct conv_runs {
  int64_t p_first, q_first;  // the first position
  int64_t p_last, q_end;     // the last row, and one past its last column
} conv_runs;

static inline conv_runs runs_get(const tsr_cpu_conv_plan *cv, int64_t j0, int64_t nc) {
  conv_runs r;
  r.p_first = j0 / cv->ow;
  r.q_first = j0 - r.p_first * cv->ow;
  r.p_last = (j0 + nc - 1) / cv->ow;
  r.q_end = j0 + nc - r.p_last * cv->ow;
  return r;
}

#define RUN_BEGIN(r, p) ((p) == (r).p_first ? (r).q_first : 0)
#define RUN_END(cv, r, p) ((p) == (r).p_last ? (r).q_end : (cv)->ow)

// Fills rows [0, cn * KH * KW) and positions [j0, j0 + nc) of the im2col
// matrix of the |cn| channels starting at |x| (one image): row r = (c * KH +
// kh) * KW + kw, position j = p * OW + q holds x[c, p * stride[0] - pad[0] +
// kh * dilation[0], q * stride[1] - pad[1] + kw * dilation[1]], 0 in the
// padding. Row r starts at col + r * pitch. Bound by stores; the unit-stride
// case of the compute type copies with no conversion.
static void im2col(const tsr_cpu_conv_plan *cv, const char *x, int64_t cn, int64_t j0,
                   int64_t nc, T *col, int64_t pitch) {
  const int64_t elem = cv->elem_size;
  const int64_t q_step = cv->stride[1] * cv->xs[3] * elem;
  const int plain = q_step == (int64_t)sizeof(T) && elem == (int64_t)sizeof(T);
  const conv_runs runs = runs_get(cv, j0, nc);
  for (int64_t c = 0; c < cn; ++c) {
    for (int64_t kh = 0; kh < cv->kh; ++kh) {
      for (int64_t kw = 0; kw < cv->kw; ++kw) {
        T *dst = col + ((c * cv->kh + kh) * cv->kw + kw) * pitch;
        const int64_t w_off = kw * cv->dilation[1] - cv->pad[1];
        int64_t q_lo, q_hi;
        valid_cols_get(cv, w_off, &q_lo, &q_hi);
        for (int64_t p = runs.p_first; p <= runs.p_last; ++p) {
          const int64_t q0 = RUN_BEGIN(runs, p), q1 = RUN_END(cv, runs, p);
          const int64_t h = p * cv->stride[0] - cv->pad[0] + kh * cv->dilation[0];
          if (h < 0 || h >= cv->h) {
            row_zero(dst, q1 - q0);
          } else {
            // Columns [a, b) read the input; the others are padding.
            const int64_t a = clamp64(q_lo, q0, q1), b = clamp64(q_hi, a, q1);
            const char *src = x + (c * cv->xs[1] + h * cv->xs[2] +
                                   (a * cv->stride[1] + w_off) * cv->xs[3]) * elem;
            row_zero(dst, a - q0);
            if (plain) {
              const T *s = (const T *)src;
              T *d = dst + (a - q0);
              for (int64_t i = 0; i < b - a; ++i) d[i] = s[i];
            } else {
              row_load(dst + (a - q0), src, b - a, q_step, cv->dtype);
            }
            row_zero(dst + (b - q0), q1 - b);
          }
          dst += q1 - q0;
        }
      }
    }
  }
}

// The adjoint of im2col: adds rows [0, cn * KH * KW) and positions [j0, j0
// + nc) of |col| (row r at col + r * pitch) into |acc|, the cn x H x W
// block they were read from (contiguous); padding positions are dropped.
static void col2im_add(const tsr_cpu_conv_plan *cv, const T *col, int64_t cn, int64_t j0,
                       int64_t nc, int64_t pitch, T *acc) {
  const int64_t s1 = cv->stride[1];
  const conv_runs runs = runs_get(cv, j0, nc);
  for (int64_t c = 0; c < cn; ++c) {
    for (int64_t kh = 0; kh < cv->kh; ++kh) {
      for (int64_t kw = 0; kw < cv->kw; ++kw) {
        const T *src = col + ((c * cv->kh + kh) * cv->kw + kw) * pitch;
        const int64_t w_off = kw * cv->dilation[1] - cv->pad[1];
        int64_t q_lo, q_hi;
        valid_cols_get(cv, w_off, &q_lo, &q_hi);
        for (int64_t p = runs.p_first; p <= runs.p_last; ++p) {
          const int64_t q0 = RUN_BEGIN(runs, p), q1 = RUN_END(cv, runs, p);
          const int64_t h = p * cv->stride[0] - cv->pad[0] + kh * cv->dilation[0];
          if (h >= 0 && h < cv->h) {
            const int64_t a = clamp64(q_lo, q0, q1), b = clamp64(q_hi, a, q1);
            T *dst = acc + (c * cv->h + h) * cv->w + a * s1 + w_off;
            const T *s = src + (a - q0);
            if (s1 == 1) {
              for (int64_t i = 0; i < b - a; ++i) dst[i] += s[i];
            } else {
              for (int64_t i = 0; i < b - a; ++i) dst[i * s1] += s[i];
            }
          }
          src += q1 - q0;
        }
      }
    }
  }
}

// Moves an Og x nc tile of positions [j0, j0 + nc) between |stage| (rows
// |pitch| apart, compute type) and the image at |y| (y-role strides).
static void tile_store(const tsr_cpu_conv_plan *cv, char *y, const T *stage, int64_t pitch,
                       int64_t j0, int64_t nc) {
  const int64_t elem = cv->elem_size;
  const conv_runs runs = runs_get(cv, j0, nc);
  for (int64_t o = 0; o < cv->og; ++o) {
    const T *src = stage + o * pitch;
    for (int64_t p = runs.p_first; p <= runs.p_last; ++p) {
      const int64_t q0 = RUN_BEGIN(runs, p), q1 = RUN_END(cv, runs, p);
      row_store(y + (o * cv->ys[1] + p * cv->ys[2] + q0 * cv->ys[3]) * elem, cv->ys[3] * elem,
                src, q1 - q0, cv->dtype);
      src += q1 - q0;
    }
  }
}

static void tile_load(const tsr_cpu_conv_plan *cv, const char *y, T *stage, int64_t pitch,
                      int64_t j0, int64_t nc) {
  const int64_t elem = cv->elem_size;
  const conv_runs runs = runs_get(cv, j0, nc);
  for (int64_t o = 0; o < cv->og; ++o) {
    T *dst = stage + o * pitch;
    for (int64_t p = runs.p_first; p <= runs.p_last; ++p) {
      const int64_t q0 = RUN_BEGIN(runs, p), q1 = RUN_END(cv, runs, p);
      row_load(dst, y + (o * cv->ys[1] + p * cv->ys[2] + q0 * cv->ys[3]) * elem, q1 - q0,
               cv->ys[3] * elem, cv->dtype);
      dst += q1 - q0;
    }
  }
}

// What every work item reads: the plan, the operands, the shared workspace.
typedef struct conv_job {
  const tsr_cpu_conv_plan *cv;
  char *const *ptrs;
  const T *wp;          // forward, data: w as a row-major O x K matrix
  const T *biasp;       // forward: bias, contiguous
  T *partial;           // filter: batch_tiles x O x K partial sums of dw
  double *bias_partial; // filter: batch_tiles x O partial sums of dbias
  char *slots;
} conv_job;

static char *slot_get(const conv_job *job, int32_t thread_index) {
  return job->slots + (uint64_t)thread_index * job->cv->slot_bytes;
}

// The |index|-th tile of positions: [*j0, *j0 + *nc).
static void tile_get(const tsr_cpu_conv_plan *cv, int64_t index, int64_t *j0, int64_t *nc) {
  *j0 = index * cv->tile_cols;
  *nc = cv->cols - *j0 < cv->tile_cols ? cv->cols - *j0 : cv->tile_cols;
}

// Forward item (image n, group g, tile t): im2col, then one GEMM with the
// bias and activation fused, into y or the stage.
static void forward_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const conv_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  const int64_t elem = cv->elem_size;
  char *slot = slot_get(job, thread_index);
  T *col = (T *)(slot + cv->col_offset);
  T *stage = (T *)(slot + cv->stage_offset);
  const char *x = job->ptrs[0];
  char *y = job->ptrs[cv->has_bias ? 3 : 2];
  for (int64_t item = begin; item < end; ++item) {
    const int64_t t = item % cv->tiles, ng = item / cv->tiles;
    const int64_t g = ng % cv->groups, n = ng / cv->groups;
    int64_t j0, nc;
    tile_get(cv, t, &j0, &nc);
    im2col(cv, x + (n * cv->xs[0] + g * cv->cg * cv->xs[1]) * elem, cv->cg, j0, nc, col,
           cv->tile_cols);
    char *y_image = y + (n * cv->ys[0] + g * cv->og * cv->ys[1]) * elem;
    char *c = cv->direct ? y_image + j0 * cv->y_pos_stride * elem : (char *)stage;
    tsr_cpu_matmul_plan mm = cv->gemm;
    mm.n = nc;
    char *ptrs[4] = {(char *)(job->wp + g * cv->og * cv->k), (char *)col,
                     cv->has_bias ? (char *)(job->biasp + g * cv->og) : c, c};
    (void)TSR_CPU_CONV_GEMM(&mm, ptrs, slot + cv->gemm_offset);
    if (!cv->direct) tile_store(cv, y_image, stage, cv->tile_cols, j0, nc);
  }
}

// Backward-data item (image n, group g, block of input channels): for each
// tile, dcol = W^T . dy, folded into the block by col2im; then stored.
static void data_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const conv_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  const int64_t elem = cv->elem_size;
  char *slot = slot_get(job, thread_index);
  T *dcol = (T *)(slot + cv->col_offset);
  T *stage = (T *)(slot + cv->stage_offset);
  T *acc = (T *)(slot + cv->acc_offset);
  const char *dy = job->ptrs[0];
  char *dx = job->ptrs[2];
  const int64_t plane = cv->h * cv->w, khw = cv->kh * cv->kw;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t cb = item % cv->c_blocks, ng = item / cv->c_blocks;
    const int64_t g = ng % cv->groups, n = ng / cv->groups;
    const int64_t c0 = cb * cv->c_block;
    const int64_t cn = cv->cg - c0 < cv->c_block ? cv->cg - c0 : cv->c_block;
    row_zero(acc, cn * plane);
    const char *dy_image = dy + (n * cv->ys[0] + g * cv->og * cv->ys[1]) * elem;
    for (int64_t t = 0; t < cv->tiles; ++t) {
      int64_t j0, nc;
      tile_get(cv, t, &j0, &nc);
      const char *b = (const char *)stage;
      if (cv->direct) {
        b = dy_image + j0 * cv->y_pos_stride * elem;
      } else {
        tile_load(cv, dy_image, stage, cv->tile_cols, j0, nc);
      }
      tsr_cpu_matmul_plan mm = cv->gemm;
      mm.m = cn * khw;
      mm.n = nc;
      char *ptrs[3] = {(char *)(job->wp + g * cv->og * cv->k + c0 * khw), (char *)b, (char *)dcol};
      (void)TSR_CPU_CONV_GEMM(&mm, ptrs, slot + cv->gemm_offset);
      col2im_add(cv, dcol, cn, j0, nc, cv->tile_cols, acc);
    }
    for (int64_t c = 0; c < cn; ++c) {
      for (int64_t h = 0; h < cv->h; ++h) {
        row_store(dx + (n * cv->xs[0] + (g * cv->cg + c0 + c) * cv->xs[1] + h * cv->xs[2]) * elem,
                  cv->xs[3] * elem, acc + (c * cv->h + h) * cv->w, cv->w, cv->dtype);
      }
    }
  }
}

// Backward-filter item (batch tile bt, group g, block of input channels):
// the tile's partial dW_g for those channels = sum over its images and
// position tiles of dy . col^T; the first block also sums dbias.
static void filter_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const conv_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  const int64_t elem = cv->elem_size;
  char *slot = slot_get(job, thread_index);
  T *col = (T *)(slot + cv->col_offset);
  T *stage = (T *)(slot + cv->stage_offset);
  const char *dy = job->ptrs[0];
  const char *x = job->ptrs[1];
  const int64_t khw = cv->kh * cv->kw;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t cb = item % cv->c_blocks, rest = item / cv->c_blocks;
    const int64_t g = rest % cv->groups, bt = rest / cv->groups;
    const int64_t c0 = cb * cv->c_block;
    const int64_t cn = cv->cg - c0 < cv->c_block ? cv->cg - c0 : cv->c_block;
    const int64_t n0 = bt * cv->batch_tile;
    const int64_t n1 = cv->n - n0 < cv->batch_tile ? cv->n : n0 + cv->batch_tile;
    T *part = job->partial + (bt * cv->o + g * cv->og) * cv->k + c0 * khw;
    double *bias_part = cv->has_bias && cb == 0 ? job->bias_partial + bt * cv->o + g * cv->og : NULL;
    if (bias_part != NULL) {
      for (int64_t o = 0; o < cv->og; ++o) bias_part[o] = 0;
    }
    int first = 1;
    for (int64_t n = n0; n < n1; ++n) {
      const char *dy_image = dy + (n * cv->ys[0] + g * cv->og * cv->ys[1]) * elem;
      const char *x_block = x + (n * cv->xs[0] + (g * cv->cg + c0) * cv->xs[1]) * elem;
      for (int64_t t = 0; t < cv->tiles; ++t) {
        int64_t j0, nc;
        tile_get(cv, t, &j0, &nc);
        im2col(cv, x_block, cn, j0, nc, col, cv->tile_cols);
        const T *a = stage;
        if (cv->direct) {
          a = (const T *)(dy_image + j0 * cv->y_pos_stride * elem);
        } else {
          tile_load(cv, dy_image, stage, cv->tile_cols, j0, nc);
        }
        tsr_cpu_matmul_plan mm = cv->gemm;
        mm.n = cn * khw;
        mm.k = nc;
        mm.beta = first ? 0.0 : 1.0;
        first = 0;
        char *ptrs[3] = {(char *)a, (char *)col, (char *)part};
        (void)TSR_CPU_CONV_GEMM(&mm, ptrs, slot + cv->gemm_offset);
        if (bias_part != NULL) {
          for (int64_t o = 0; o < cv->og; ++o) {
            const T *row = a + o * mm.a_rs;
            double sum = 0;
            for (int64_t j = 0; j < nc; ++j) sum += (double)row[j * mm.a_cs];
            bias_part[o] += sum;
          }
        }
      }
    }
  }
}

// Sums the batch tiles' partials of output channels [begin, end) in tile
// order (into tile 0's) and stores dw and dbias.
static void filter_sums_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const conv_job *job = arg;
  const tsr_cpu_conv_plan *cv = job->cv;
  const int64_t elem = cv->elem_size;
  const int64_t tiles = cv->batch_tiles;
  char *dw = job->ptrs[2];
  char *dbias = cv->has_bias ? job->ptrs[3] : NULL;
  for (int64_t o = begin; o < end; ++o) {
    T *sum = job->partial + o * cv->k;
    double bias_sum = tiles > 0 ? job->bias_partial[o] : 0.0;
    if (tiles == 0) row_zero(sum, cv->k);
    for (int64_t t = 1; t < tiles; ++t) {
      const T *part = job->partial + (t * cv->o + o) * cv->k;
      for (int64_t i = 0; i < cv->k; ++i) sum[i] += part[i];
      bias_sum += job->bias_partial[t * cv->o + o];
    }
    for (int64_t c = 0; c < cv->cg; ++c) {
      for (int64_t kh = 0; kh < cv->kh; ++kh) {
        row_store(dw + (o * cv->ws[0] + c * cv->ws[1] + kh * cv->ws[2]) * elem, cv->ws[3] * elem,
                  sum + (c * cv->kh + kh) * cv->kw, cv->kw, cv->dtype);
      }
    }
    if (dbias != NULL) {
      const T v = (T)bias_sum;
      row_store(dbias + o * cv->bias_stride * elem, elem, &v, 1, cv->dtype);
    }
  }
}

// Runs |fn| over |count| items: on the pool when the plan chose it and the
// pool has no more threads than the workspace has slots; else here, on slot 0.
static tsr_status items_run(const tsr_cpu_conv_plan *cv, int64_t count, int64_t grain,
                            tsr_parallel_fn fn, conv_job *job) {
  if (count == 0) return TSR_OK;
  if (cv->parallel && tsr_cpu_thread_count_get() <= cv->slots) {
    const tsr_host_api *host = tsr_cpu_host_get();
    return host->parallel_for(host->ctx, count, grain, fn, job);
  }
  fn(job, 0, count, 0);
  return TSR_OK;
}

// Copies w (any strides, any float dtype) into |wp| as a row-major O x K
// matrix of the compute type.
static void weights_pack(const tsr_cpu_conv_plan *cv, const char *w, T *wp) {
  const int64_t elem = cv->elem_size;
  for (int64_t o = 0; o < cv->o; ++o) {
    for (int64_t c = 0; c < cv->cg; ++c) {
      for (int64_t kh = 0; kh < cv->kh; ++kh) {
        row_load(wp + o * cv->k + (c * cv->kh + kh) * cv->kw,
                 w + (o * cv->ws[0] + c * cv->ws[1] + kh * cv->ws[2]) * elem, cv->kw,
                 cv->ws[3] * elem, cv->dtype);
      }
    }
  }
}

tsr_status TSR_CPU_CONV_EXECUTE(const tsr_cpu_conv_plan *cv, char *const *ptrs, char *workspace) {
  conv_job job = {cv, ptrs, NULL, NULL, NULL, NULL, workspace + cv->shared_bytes};
  const uint64_t wp_bytes = ((uint64_t)cv->o * (uint64_t)cv->k * sizeof(T) + 63) & ~63ull;
  switch (cv->op) {
    case TSR_OP_CONV2D: {
      if (cv->n == 0 || cv->o == 0) return TSR_OK;
      T *wp = (T *)workspace;
      weights_pack(cv, ptrs[1], wp);
      job.wp = wp;
      if (cv->has_bias) {
        T *biasp = (T *)(workspace + wp_bytes);
        row_load(biasp, ptrs[2], cv->o, cv->bias_stride * cv->elem_size, cv->dtype);
        job.biasp = biasp;
      }
      return items_run(cv, cv->items, cv->grain, forward_items_run, &job);
    }
    case TSR_OP_CONV2D_BACKWARD_DATA: {
      if (cv->n == 0 || cv->c == 0 || cv->h == 0 || cv->w == 0) return TSR_OK;
      T *wp = (T *)workspace;
      weights_pack(cv, ptrs[1], wp);
      job.wp = wp;
      return items_run(cv, cv->items, cv->grain, data_items_run, &job);
    }
    default: {
      if (cv->o == 0 || (cv->k == 0 && !cv->has_bias)) return TSR_OK;
      const uint64_t tiles = cv->batch_tiles > 0 ? (uint64_t)cv->batch_tiles : 1;
      const uint64_t partial_bytes = (tiles * (uint64_t)cv->o * (uint64_t)cv->k * sizeof(T) + 63) & ~63ull;
      job.partial = (T *)workspace;
      job.bias_partial = (double *)(workspace + partial_bytes);
      tsr_status status = items_run(cv, cv->items, cv->grain, filter_items_run, &job);
      if (status != TSR_OK) return status;
      // About 64 K elements of partial sums per chunk.
      const int64_t per_row = (cv->k + 1) * (int64_t)tiles;
      return items_run(cv, cv->o, 65536 / per_row + 1, filter_sums_run, &job);
    }
  }
}
