// The blocked GEMM, written once for float and double. Included only by
// gemm_f32.c, gemm_f64.c, gemm_bf16.c and gemm_f16.c, each defining first:
//   TSR_CPU_GEMM_T          the type the GEMM computes and packs in
//   TSR_CPU_GEMM_ELEM_BYTES sizeof(TSR_CPU_GEMM_T), for the preprocessor
//   TSR_CPU_GEMM_TAG        f32 or f64 (names the cpu_kernels.h math helpers)
//   TSR_CPU_GEMM_TANH       tanhf or tanh
//   TSR_CPU_GEMM_EXECUTE    the name of the execute function to define
//   TSR_CPU_GEMM_GEOMETRY   the name of the geometry constant to define
//                           (optional: the half types use float32's)
// and, when the operands are stored in another type (bfloat16, float16):
//   TSR_CPU_GEMM_S          the stored type of a, b, bias and out
//   TSR_CPU_GEMM_LOAD(v)    a stored element as TSR_CPU_GEMM_T
//   TSR_CPU_GEMM_STORE(v)   a TSR_CPU_GEMM_T as a stored element
// A converting GEMM widens A and B while packing them, computes and
// accumulates in T, and converts once per element of C, in the epilogue: its
// plan gives it one depth panel (kc = K), so C is never a partial sum.
//
// Structure (Goto/BLIS): for each column panel of B (nc wide) and depth
// panel (kc deep), B is packed into nr-wide slivers; for each block of A (mc
// rows) A is packed into mr-tall slivers; the micro-kernel multiplies one A
// sliver by one B sliver into an mr x nr tile held in registers, and the
// epilogue folds the tile into C. Packing makes any strides (transposed
// views, broadcast batches) look the same to the micro-kernel and pads edges
// with zeros, so the micro-kernel has no edge cases.
//
// Summation order: every element of C sums its k products in panels of kc,
// in order, each panel's partial sum folded into C. kc depends on K and the
// build only, never on the thread count or the split of C among threads, so
// results do not depend on threads.

#include <math.h>
#include <string.h>

#include "host.h"
#include "matmul.h"
#include "tessera/ops.h"
#include "tsr_cpu/cpu_kernels.h"

typedef TSR_CPU_GEMM_T T;
#ifdef TSR_CPU_GEMM_S
#define TSR_CPU_GEMM_CONVERTS 1
typedef TSR_CPU_GEMM_S S;
#else
#define TSR_CPU_GEMM_CONVERTS 0
typedef T S;
#define TSR_CPU_GEMM_LOAD(v) (v)
#define TSR_CPU_GEMM_STORE(v) (v)
#endif
#define LOAD(v) TSR_CPU_GEMM_LOAD(v)
#define STORE(v) TSR_CPU_GEMM_STORE(v)

#define TSR_CPU_GEMM_CAT_(a, b) a##b
#define TSR_CPU_GEMM_CAT(a, b) TSR_CPU_GEMM_CAT_(a, b)
#define TSR_CPU_GEMM_FN(name) TSR_CPU_GEMM_CAT(name, TSR_CPU_GEMM_TAG)

// Vector registers of the target: bytes each and how many. The micro-kernel
// holds mr x 2 vectors of C, two of B and one broadcast of A.
#if defined(__AVX512F__)
#define TSR_CPU_VEC_BYTES 64
#define TSR_CPU_VEC_REGS 32
#elif defined(__AVX__)
#define TSR_CPU_VEC_BYTES 32
#define TSR_CPU_VEC_REGS 16
#elif defined(__aarch64__)
#define TSR_CPU_VEC_BYTES 16
#define TSR_CPU_VEC_REGS 32
#else
#define TSR_CPU_VEC_BYTES 16
#define TSR_CPU_VEC_REGS 16
#endif

#define TSR_CPU_VL (TSR_CPU_VEC_BYTES / TSR_CPU_GEMM_ELEM_BYTES)
#define TSR_CPU_NV 2
#define TSR_CPU_NR (TSR_CPU_NV * TSR_CPU_VL)
#define TSR_CPU_MR (TSR_CPU_VEC_REGS == 32 ? 12 : 6)
// A kc x nr sliver of B (16 KiB for float on AVX2) and a kc x mr sliver of A
// (6 KiB) stay in a 32 KiB L1 while the micro-kernel runs; the mc x kc A
// block (144 KiB) stays in L2 with room for C tiles; the kc x nc B panel
// lives in L3. Tuning found kc and mc across a wide range within the noise
// of a shared machine (docs/performance-log.md, "Measurements behind the code's
// decisions"); these are the cache-sized middle. -D overrides are for
// tuning only: kc fixes the summation order, so it is part of the results.
#ifndef TSR_CPU_KC
#define TSR_CPU_KC 256
#endif
#ifndef TSR_CPU_MC_ROWS
#define TSR_CPU_MC_ROWS 144
#endif
#define TSR_CPU_MC_MAX (TSR_CPU_MR * (TSR_CPU_MC_ROWS / TSR_CPU_MR))
#define TSR_CPU_NC_MAX (16384 / TSR_CPU_GEMM_ELEM_BYTES)

// Full unrolling of the (at most 12-step) tile loops is what lets the
// compiler keep every accumulator in a register.
#if defined(__GNUC__)
#define TSR_CPU_UNROLL_FULL _Pragma("GCC unroll 16")
#else
#define TSR_CPU_UNROLL_FULL
#endif

// float32 operands strided in the packed direction: in-register transposes.
#if !TSR_CPU_GEMM_CONVERTS && TSR_CPU_GEMM_ELEM_BYTES == 4 && defined(__AVX__)
#define TSR_CPU_GEMM_PACK_AVX 1
#include "gemm_pack_avx.h"
#else
#define TSR_CPU_GEMM_PACK_AVX 0
#endif

#ifdef TSR_CPU_GEMM_GEOMETRY
const tsr_cpu_gemm_geometry TSR_CPU_GEMM_GEOMETRY = {
    TSR_CPU_MR, TSR_CPU_NR, TSR_CPU_KC, TSR_CPU_MC_MAX, TSR_CPU_NC_MAX,
};
#endif

// c[MR x NR] (row-major) = a-sliver (kc x MR) times b-sliver (kc x NR).
// Bound by FMA throughput: 2 * MR * NV FMAs per k against 2 loads and MR
// broadcasts, all C accumulators in registers.
// How a full tile meets C: the first depth panel overwrites C (beta 0) or
// scales it (beta != 0); later panels accumulate.
enum { TILE_OVERWRITE = 0, TILE_SCALE = 1, TILE_ACCUMULATE = 2 };

#if defined(__GNUC__)
typedef T tsr_cpu_vec __attribute__((vector_size(TSR_CPU_VEC_BYTES)));

// The multiply: acc[MR][NV] = a-sliver (kc x MR) times b-sliver (kc x NR).
#define TSR_CPU_MICRO_KERNEL_BODY                                                        \
  tsr_cpu_vec acc[TSR_CPU_MR][TSR_CPU_NV];                                               \
  TSR_CPU_UNROLL_FULL for (int i = 0; i < TSR_CPU_MR; ++i) {                             \
    TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_NV; ++v) acc[i][v] = (tsr_cpu_vec){0}; \
  }                                                                                      \
  for (int64_t p = 0; p < kc; ++p) {                                                     \
    tsr_cpu_vec bv[TSR_CPU_NV];                                                          \
    TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_NV; ++v) {                           \
      memcpy(&bv[v], b + p * TSR_CPU_NR + v * TSR_CPU_VL, sizeof(tsr_cpu_vec));          \
    }                                                                                    \
    TSR_CPU_UNROLL_FULL for (int i = 0; i < TSR_CPU_MR; ++i) {                           \
      const T av = a[p * TSR_CPU_MR + i];                                                \
      TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_NV; ++v) acc[i][v] += av * bv[v];  \
    }                                                                                    \
  }

// c[MR x NR] (row-major, NR apart) = a-sliver times b-sliver. Bound by FMA
// throughput: 2 * MR * NV FMAs per k against 2 loads and MR broadcasts, all
// accumulators in registers.
static void micro_kernel(int64_t kc, const T *restrict a, const T *restrict b, T *restrict c) {
  TSR_CPU_MICRO_KERNEL_BODY
  TSR_CPU_UNROLL_FULL for (int i = 0; i < TSR_CPU_MR; ++i) {
    TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_NV; ++v) {
      memcpy(c + i * TSR_CPU_NR + v * TSR_CPU_VL, &acc[i][v], sizeof(tsr_cpu_vec));
    }
  }
}

#if !TSR_CPU_GEMM_CONVERTS
// Lanes as signed integers of T's width, for RELU's mask.
#if TSR_CPU_GEMM_ELEM_BYTES == 4
typedef int32_t tsr_cpu_ivec __attribute__((vector_size(TSR_CPU_VEC_BYTES)));
#else
typedef int64_t tsr_cpu_ivec __attribute__((vector_size(TSR_CPU_VEC_BYTES)));
#endif

// The same multiply folded into a full tile of C (rows |rs| apart, unit
// columns) straight from the registers, as |mode| says. On the last depth
// panel, |bias| (the tile's corner, unit columns, rows |bias_rs| apart; or
// NULL) is added and |relu| applied on the way out, in tile_finish's order:
// x < 0 ? 0 : x keeps NaN and -0.0, as tsr_cpu_relu does.
static void micro_kernel_update(int64_t kc, const T *restrict a, const T *restrict b,
                                T *restrict c, int64_t rs, T alpha, T beta, int mode,
                                const T *bias, int64_t bias_rs, int relu) {
  TSR_CPU_MICRO_KERNEL_BODY
  TSR_CPU_UNROLL_FULL for (int i = 0; i < TSR_CPU_MR; ++i) {
    TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_NV; ++v) {
      T *cp = c + i * rs + v * TSR_CPU_VL;
      tsr_cpu_vec cv, r;
      if (mode == TILE_OVERWRITE) {
        r = alpha * acc[i][v];
      } else {
        memcpy(&cv, cp, sizeof(cv));
        r = mode == TILE_SCALE ? alpha * acc[i][v] + beta * cv : cv + alpha * acc[i][v];
      }
      if (bias != NULL) {
        tsr_cpu_vec bv;
        memcpy(&bv, bias + i * bias_rs + v * TSR_CPU_VL, sizeof(bv));
        r += bv;
      }
      if (relu) r = (tsr_cpu_vec)((tsr_cpu_ivec)r & ~(tsr_cpu_ivec)(r < (tsr_cpu_vec){0}));
      memcpy(cp, &r, sizeof(r));
    }
  }
}
#endif
#else
static void micro_kernel(int64_t kc, const T *restrict a, const T *restrict b, T *restrict c) {
  for (int i = 0; i < TSR_CPU_MR * TSR_CPU_NR; ++i) c[i] = 0;
  for (int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < TSR_CPU_MR; ++i) {
      for (int j = 0; j < TSR_CPU_NR; ++j) c[i * TSR_CPU_NR + j] += a[p * TSR_CPU_MR + i] * b[p * TSR_CPU_NR + j];
    }
  }
}

#if !TSR_CPU_GEMM_CONVERTS
static void micro_kernel_update(int64_t kc, const T *restrict a, const T *restrict b,
                                T *restrict c, int64_t rs, T alpha, T beta, int mode,
                                const T *bias, int64_t bias_rs, int relu) {
  T tile[TSR_CPU_MR * TSR_CPU_NR];
  micro_kernel(kc, a, b, tile);
  for (int i = 0; i < TSR_CPU_MR; ++i) {
    for (int j = 0; j < TSR_CPU_NR; ++j) {
      T *cp = c + i * rs + j;
      const T t = tile[i * TSR_CPU_NR + j];
      T r = mode == TILE_OVERWRITE ? alpha * t
            : mode == TILE_SCALE   ? alpha * t + beta * *cp
                                   : *cp + alpha * t;
      if (bias != NULL) r += bias[i * bias_rs + j];
      *cp = relu && r < 0 ? (T)0 : r;
    }
  }
}
#endif
#endif

#if defined(TSR_CPU_GEMM_GEOMETRY) && !TSR_CPU_GEMM_CONVERTS
// One full register tile accumulated into C, as the macro-kernel's inner
// loop runs it: for tsr_cpu_bench_kernels, which times the micro-kernel
// alone on L1-resident slivers.
void TSR_CPU_GEMM_FN(tsr_cpu_gemm_tile_accumulate_)(int64_t kc, const T *a, const T *b, T *c,
                                                   int64_t rs) {
  micro_kernel_update(kc, a, b, c, rs, (T)1, (T)0, TILE_ACCUMULATE, NULL, 0, 0);
}
#endif

// Packs rows [0, mc) and columns [0, kc) of A (element (i, p) at
// a[i * rs + p * cs]) into MR-row slivers, each kc x MR, zero-padded.
static void pack_a(const S *a, int64_t rs, int64_t cs, int64_t mc, int64_t kc, T *restrict dst) {
  for (int64_t ir = 0; ir < mc; ir += TSR_CPU_MR) {
    const int64_t mr = mc - ir < TSR_CPU_MR ? mc - ir : TSR_CPU_MR;
    const S *src = a + ir * rs;
#if TSR_CPU_GEMM_PACK_AVX && TSR_CPU_MR <= 8
    if (mr == TSR_CPU_MR && cs == 1 && rs != 1) {
      tsr_cpu_pack_a_sliver_rows_f32(src, rs, kc, dst);
      dst += kc * TSR_CPU_MR;
      continue;
    }
#endif
#if TSR_CPU_GEMM_PACK_AVX && TSR_CPU_MR == 6
    if (mr == TSR_CPU_MR && rs == 1) {
      tsr_cpu_pack_a_sliver_cols_f32(src, cs, kc, dst);
      dst += kc * TSR_CPU_MR;
      continue;
    }
#endif
    if (mr == TSR_CPU_MR && rs == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        for (int i = 0; i < TSR_CPU_MR; ++i) dst[p * TSR_CPU_MR + i] = LOAD(src[p * cs + i]);
      }
    } else if (mr == TSR_CPU_MR) {
      for (int i = 0; i < TSR_CPU_MR; ++i) {
        const S *row = src + i * rs;
        for (int64_t p = 0; p < kc; ++p) dst[p * TSR_CPU_MR + i] = LOAD(row[p * cs]);
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        for (int i = 0; i < TSR_CPU_MR; ++i) {
          dst[p * TSR_CPU_MR + i] = i < mr ? LOAD(src[i * rs + p * cs]) : (T)0;
        }
      }
    }
    dst += kc * TSR_CPU_MR;
  }
}

// Packs rows [0, kc) and columns [0, nc) of B (element (p, j) at
// b[p * rs + j * cs]) into NR-column slivers, each kc x NR, zero-padded.
static void pack_b(const S *b, int64_t rs, int64_t cs, int64_t kc, int64_t nc, T *restrict dst) {
  for (int64_t jr = 0; jr < nc; jr += TSR_CPU_NR) {
    const int64_t nr = nc - jr < TSR_CPU_NR ? nc - jr : TSR_CPU_NR;
    const S *src = b + jr * cs;
    if (nr == TSR_CPU_NR && cs == 1) {
#if TSR_CPU_GEMM_CONVERTS
      for (int64_t p = 0; p < kc; ++p) {
        for (int j = 0; j < TSR_CPU_NR; ++j) dst[p * TSR_CPU_NR + j] = LOAD(src[p * rs + j]);
      }
#else
      for (int64_t p = 0; p < kc; ++p) memcpy(dst + p * TSR_CPU_NR, src + p * rs, sizeof(T) * TSR_CPU_NR);
#endif
#if TSR_CPU_GEMM_PACK_AVX
    } else if (nr == TSR_CPU_NR && rs == 1) {
      tsr_cpu_pack_b_sliver_cols_f32(src, cs, kc, dst);
#endif
    } else if (nr == TSR_CPU_NR) {
      for (int j = 0; j < TSR_CPU_NR; ++j) {
        const S *col = src + j * cs;
        for (int64_t p = 0; p < kc; ++p) dst[p * TSR_CPU_NR + j] = LOAD(col[p * rs]);
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        for (int j = 0; j < TSR_CPU_NR; ++j) {
          dst[p * TSR_CPU_NR + j] = j < nr ? LOAD(src[p * rs + j * cs]) : (T)0;
        }
      }
    }
    dst += kc * TSR_CPU_NR;
  }
}

static inline T activation_apply(int32_t activation, T v) {
  switch (activation) {
    case TSR_ACTIVATION_RELU: return TSR_CPU_GEMM_FN(tsr_cpu_relu_)(v);
    case TSR_ACTIVATION_GELU: return TSR_CPU_GEMM_FN(tsr_cpu_gelu_)(v);
    case TSR_ACTIVATION_GELU_TANH: return TSR_CPU_GEMM_FN(tsr_cpu_gelu_tanh_)(v);
    case TSR_ACTIVATION_SIGMOID: return TSR_CPU_GEMM_FN(tsr_cpu_sigmoid_)(v);
    case TSR_ACTIVATION_TANH: return TSR_CPU_GEMM_TANH(v);
    default: return v;
  }
}

// Where one batch item's matrices start.
typedef struct gemm_item {
  const S *a;
  const S *b;
  const S *bias;  // NULL without bias
  S *c;
} gemm_item;

// Folds an m x n tile (row-major, NR apart) into C, for tiles the register
// path does not take (matrix edges, strided C): the first depth panel
// applies alpha and beta * C (C is not read when beta is 0), later panels
// add alpha * tile, and the last adds bias and applies the activation.
static void tile_store(const tsr_cpu_matmul_plan *mm, const T *restrict tile, S *c,
                       const S *bias, int64_t m, int64_t n, int first, int last) {
  const T alpha = (T)mm->alpha, beta = (T)mm->beta;
  const int64_t rs = mm->c_rs, cs = mm->c_cs;
  const int32_t activation = last ? mm->activation : TSR_ACTIVATION_NONE;
  if (!last) bias = NULL;
  for (int64_t i = 0; i < m; ++i) {
    S *crow = c + i * rs;
    const T *trow = tile + i * TSR_CPU_NR;
    for (int64_t j = 0; j < n; ++j) {
      T v;
      if (!first) {
        v = LOAD(crow[j * cs]) + alpha * trow[j];
      } else if (beta != 0) {
        v = alpha * trow[j] + beta * LOAD(crow[j * cs]);
      } else {
        v = alpha * trow[j];
      }
      if (bias != NULL) v += LOAD(bias[i * mm->bias_rs + j * mm->bias_cs]);
      crow[j * cs] = STORE(activation_apply(activation, v));
    }
  }
}

// Adds bias and applies the activation to a full tile the register path
// wrote (unit columns), while it is still in L1.
#if !TSR_CPU_GEMM_CONVERTS
static void tile_finish(const tsr_cpu_matmul_plan *mm, T *c, const T *bias) {
  for (int64_t i = 0; i < TSR_CPU_MR; ++i) {
    T *crow = c + i * mm->c_rs;
    if (bias != NULL) {
      const T *brow = bias + i * mm->bias_rs;
      for (int j = 0; j < TSR_CPU_NR; ++j) crow[j] += brow[j * mm->bias_cs];
    }
    if (mm->activation != TSR_ACTIVATION_NONE) {
      for (int j = 0; j < TSR_CPU_NR; ++j) crow[j] = activation_apply(mm->activation, crow[j]);
    }
  }
}
#endif

// Multiplies a packed A block (mc rows) by NR-slivers [jr_begin, jr_end) of a
// packed B panel into C rows [0, mc) and columns [jr_begin, jr_end) * NR
// (clipped to nc), relative to |c| and |bias| at the block's corner.
static void macro_kernel(const tsr_cpu_matmul_plan *mm, int64_t mc, int64_t nc, int64_t kc,
                         const T *pa, const T *pb, S *c, const S *bias, int64_t sliver_begin,
                         int64_t sliver_end, int first, int last) {
  _Alignas(64) T tile[TSR_CPU_MR * TSR_CPU_NR];
#if !TSR_CPU_GEMM_CONVERTS
  const int mode = !first ? TILE_ACCUMULATE : mm->beta != 0 ? TILE_SCALE : TILE_OVERWRITE;
  // A bias with unit columns and RELU (or no activation) are applied in the
  // registers; anything else by tile_finish.
  const int in_registers =
      (bias == NULL || mm->bias_cs == 1) &&
      (mm->activation == TSR_ACTIVATION_NONE || mm->activation == TSR_ACTIVATION_RELU);
  const int finish =
      last && !in_registers && (bias != NULL || mm->activation != TSR_ACTIVATION_NONE);
  const int relu = last && in_registers && mm->activation == TSR_ACTIVATION_RELU;
#endif
  for (int64_t s = sliver_begin; s < sliver_end; ++s) {
    const int64_t j = s * TSR_CPU_NR;
    const int64_t n = nc - j < TSR_CPU_NR ? nc - j : TSR_CPU_NR;
    const T *b_sliver = pb + s * kc * TSR_CPU_NR;
    for (int64_t i = 0; i < mc; i += TSR_CPU_MR) {
      const int64_t m = mc - i < TSR_CPU_MR ? mc - i : TSR_CPU_MR;
      S *c_tile = c + i * mm->c_rs + j * mm->c_cs;
      const S *tile_bias = bias != NULL ? bias + i * mm->bias_rs + j * mm->bias_cs : NULL;
#if !TSR_CPU_GEMM_CONVERTS
      // C of the compute type: full tiles go straight from the registers.
      if (m == TSR_CPU_MR && n == TSR_CPU_NR && mm->c_cs == 1) {
        micro_kernel_update(kc, pa + i * kc, b_sliver, c_tile, mm->c_rs, (T)mm->alpha,
                            (T)mm->beta, mode, last && in_registers ? tile_bias : NULL,
                            mm->bias_rs, relu);
        if (finish) tile_finish(mm, c_tile, tile_bias);
      } else
#endif
      {
        micro_kernel(kc, pa + i * kc, b_sliver, tile);
        tile_store(mm, tile, c_tile, tile_bias, m, n, first, last);
      }
    }
  }
}

// Computes rows [0, m) and columns [0, n) of one item (its pointers at the
// block's corner) on this thread, packing into |slot|: A blocks of mc rows
// at its start, the B panel after them.
static void block_run(const tsr_cpu_matmul_plan *mm, gemm_item item, int64_t m, int64_t n,
                      char *slot) {
  const uint64_t a_bytes = ((uint64_t)mm->mc * (uint64_t)mm->kc * sizeof(T) + 63) & ~63ull;
  T *pa = (T *)slot;
  T *pb = (T *)(slot + a_bytes);
  const int64_t k_panels = mm->k > 0 ? (mm->k + mm->kc - 1) / mm->kc : 1;
  for (int64_t j0 = 0; j0 < n; j0 += mm->nc) {
    const int64_t nc = n - j0 < mm->nc ? n - j0 : mm->nc;
    const int64_t slivers = (nc + TSR_CPU_NR - 1) / TSR_CPU_NR;
    for (int64_t kp = 0; kp < k_panels; ++kp) {
      const int64_t p0 = kp * mm->kc;
      const int64_t kc = mm->k - p0 < mm->kc ? mm->k - p0 : mm->kc;
      if (kc > 0) pack_b(item.b + p0 * mm->b_rs + j0 * mm->b_cs, mm->b_rs, mm->b_cs, kc, nc, pb);
      for (int64_t i0 = 0; i0 < m; i0 += mm->mc) {
        const int64_t mc = m - i0 < mm->mc ? m - i0 : mm->mc;
        if (kc > 0) pack_a(item.a + i0 * mm->a_rs + p0 * mm->a_cs, mm->a_rs, mm->a_cs, mc, kc, pa);
        const S *bias =
            item.bias != NULL ? item.bias + i0 * mm->bias_rs + j0 * mm->bias_cs : NULL;
        macro_kernel(mm, mc, nc, kc, pa, pb, item.c + i0 * mm->c_rs + j0 * mm->c_cs, bias, 0,
                     slivers, kp == 0, kp == k_panels - 1);
      }
    }
  }
}

// Batch item |index|: its matrices' first elements.
static gemm_item item_get(const tsr_cpu_matmul_plan *mm, const gemm_item *base, int64_t index) {
  gemm_item item = *base;
  for (int32_t d = mm->batch_ndim - 1; d >= 0; --d) {
    const int64_t i = index % mm->batch_sizes[d];
    index /= mm->batch_sizes[d];
    item.a += i * mm->a_batch_strides[d];
    item.b += i * mm->b_batch_strides[d];
    item.c += i * mm->c_batch_strides[d];
    if (item.bias != NULL) item.bias += i * mm->bias_batch_strides[d];
  }
  return item;
}

typedef struct gemm_naive_job {
  const tsr_cpu_matmul_plan *mm;
  gemm_item base;
} gemm_naive_job;

static void naive_run(const tsr_cpu_matmul_plan *mm, const gemm_item *item);

static void naive_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const gemm_naive_job *job = arg;
  for (int64_t b = begin; b < end; ++b) {
    gemm_item item = item_get(job->mm, &job->base, b);
    naive_run(job->mm, &item);
  }
}

typedef struct gemm_batch_job {
  const tsr_cpu_matmul_plan *mm;
  gemm_item base;
  char *slots;
} gemm_batch_job;

static void batch_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  gemm_batch_job *job = arg;
  for (int64_t b = begin; b < end; ++b) {
    block_run(job->mm, item_get(job->mm, &job->base, b), job->mm->m, job->mm->n,
              job->slots + (uint64_t)thread_index * job->mm->slot_bytes);
  }
}

// Task t = (item, row part, column part): the block of C a thread owns.
// Each thread packs the A rows and B columns of its own block, so tasks
// share nothing and need no barrier; the plan chose the split that packs
// the least (matmul.c).
static void split_blocks_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  gemm_batch_job *job = arg;
  const tsr_cpu_matmul_plan *mm = job->mm;
  char *slot = job->slots + (uint64_t)thread_index * mm->slot_bytes;
  const int64_t blocks = mm->split_m * mm->split_n;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t part = t % blocks;
    const int64_t i0 = part / mm->split_n * mm->m_part, j0 = part % mm->split_n * mm->n_part;
    if (i0 >= mm->m || j0 >= mm->n) continue;
    gemm_item item = item_get(mm, &job->base, t / blocks);
    item.a += i0 * mm->a_rs;
    item.b += j0 * mm->b_cs;
    item.c += i0 * mm->c_rs + j0 * mm->c_cs;
    if (item.bias != NULL) item.bias += i0 * mm->bias_rs + j0 * mm->bias_cs;
    block_run(mm, item, mm->m - i0 < mm->m_part ? mm->m - i0 : mm->m_part,
              mm->n - j0 < mm->n_part ? mm->n - j0 : mm->n_part, slot);
  }
}

// The tiny case: each element a dot product, accumulated in T.
static void naive_run(const tsr_cpu_matmul_plan *mm, const gemm_item *item) {
  for (int64_t i = 0; i < mm->m; ++i) {
    for (int64_t j = 0; j < mm->n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < mm->k; ++p) sum += LOAD(item->a[i * mm->a_rs + p * mm->a_cs]) * LOAD(item->b[p * mm->b_rs + j * mm->b_cs]);
      S *cp = item->c + i * mm->c_rs + j * mm->c_cs;
      T v = (T)mm->alpha * sum;
      if (mm->beta != 0) v += (T)mm->beta * LOAD(*cp);
      if (item->bias != NULL) v += LOAD(item->bias[i * mm->bias_rs + j * mm->bias_cs]);
      *cp = STORE(activation_apply(mm->activation, v));
    }
  }
}

// One row of A times B with unit column stride (inference at batch 1). The
// work is streaming B once: each task owns mm->gemv_columns outputs (matmul.h
// says how many), so two threads read disjoint parts of every row. Each
// output is one multiply-add chain over k in order (both paths below: the
// register blocks and the row-streaming loop), so the bits do not depend on
// the thread count, the chunks or the build.

typedef struct gemm_gemv_job {
  const tsr_cpu_matmul_plan *mm;
  gemm_item item;
} gemm_gemv_job;

#if defined(__GNUC__) && !TSR_CPU_GEMM_CONVERTS
// Columns per register block: half the vector registers hold accumulators
// for the whole of k (256 float32 columns with AVX-512, 64 with AVX2), so a
// row of B costs its loads and multiply-adds only, not a load and a store
// of each accumulator as well.
#define TSR_CPU_GEMV_VECS (TSR_CPU_VEC_REGS / 2)
#define TSR_CPU_GEMV_BLOCK (TSR_CPU_GEMV_VECS * TSR_CPU_VL)

// out[0, BLOCK) = a (k elements, |a_cs| apart) times rows of b (|b_rs|
// apart), BLOCK columns from |b|.
static void gemv_block(const T *restrict a, int64_t a_cs, const T *restrict b, int64_t b_rs,
                       int64_t k, T *restrict out) {
  tsr_cpu_vec acc[TSR_CPU_GEMV_VECS];
  TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_GEMV_VECS; ++v) acc[v] = (tsr_cpu_vec){0};
  for (int64_t p = 0; p < k; ++p) {
    const T av = a[p * a_cs];
    const T *restrict row = b + p * b_rs;
    TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_GEMV_VECS; ++v) {
      tsr_cpu_vec bv;
      memcpy(&bv, row + v * TSR_CPU_VL, sizeof(bv));
      acc[v] += av * bv;
    }
  }
  TSR_CPU_UNROLL_FULL for (int v = 0; v < TSR_CPU_GEMV_VECS; ++v) {
    memcpy(out + v * TSR_CPU_VL, &acc[v], sizeof(acc[v]));
  }
}
#else
#define TSR_CPU_GEMV_BLOCK TSR_CPU_GEMV_COLUMNS
#endif

static void gemv_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const gemm_gemv_job *job = arg;
  const tsr_cpu_matmul_plan *mm = job->mm;
  const gemm_item *it = &job->item;
  const T alpha = (T)mm->alpha, beta = (T)mm->beta;
  _Alignas(64) T acc[TSR_CPU_GEMV_STREAM_COLUMNS];
  const int64_t width = mm->gemv_columns;
  for (int64_t chunk = begin; chunk < end; ++chunk) {
    const int64_t j0 = chunk * width;
    const int64_t nj = mm->n - j0 < width ? mm->n - j0 : width;
    int64_t jb = 0;
#if defined(__GNUC__) && !TSR_CPU_GEMM_CONVERTS
    // B within the caches: register blocks over the whole of k.
    for (; width <= TSR_CPU_GEMV_COLUMNS && jb + TSR_CPU_GEMV_BLOCK <= nj;
         jb += TSR_CPU_GEMV_BLOCK) {
      gemv_block(it->a, mm->a_cs, it->b + j0 + jb, mm->b_rs, mm->k, acc + jb);
    }
#endif
    if (jb < nj) {
      // The other columns (all of them when B is larger than a cache, or the
      // operands are converted): B's rows read from end to end, four at a
      // time, into accumulators in L1 (one load and store of each per four
      // rows), as the memory's prefetchers serve best.
      for (int64_t j = jb; j < nj; ++j) acc[j] = 0;
      int64_t p = 0;
      for (; p + 4 <= mm->k; p += 4) {
        const T a0 = LOAD(it->a[p * mm->a_cs]), a1 = LOAD(it->a[(p + 1) * mm->a_cs]);
        const T a2 = LOAD(it->a[(p + 2) * mm->a_cs]), a3 = LOAD(it->a[(p + 3) * mm->a_cs]);
        const S *restrict b0 = it->b + p * mm->b_rs + j0;
        const S *restrict b1 = b0 + mm->b_rs, *restrict b2 = b1 + mm->b_rs;
        const S *restrict b3 = b2 + mm->b_rs;
        for (int64_t j = jb; j < nj; ++j) {
          T t = acc[j];
          t += a0 * LOAD(b0[j]);
          t += a1 * LOAD(b1[j]);
          t += a2 * LOAD(b2[j]);
          t += a3 * LOAD(b3[j]);
          acc[j] = t;
        }
      }
      for (; p < mm->k; ++p) {
        const T av = LOAD(it->a[p * mm->a_cs]);
        const S *restrict brow = it->b + p * mm->b_rs + j0;
        for (int64_t j = jb; j < nj; ++j) acc[j] += av * LOAD(brow[j]);
      }
    }
    S *c = it->c + j0 * mm->c_cs;
    const S *bias = it->bias != NULL ? it->bias + j0 * mm->bias_cs : NULL;
    for (int64_t j = 0; j < nj; ++j) {
      T v = alpha * acc[j];
      if (beta != 0) v += beta * LOAD(c[j * mm->c_cs]);
      if (bias != NULL) v += LOAD(bias[j * mm->bias_cs]);
      c[j * mm->c_cs] = STORE(activation_apply(mm->activation, v));
    }
  }
}

tsr_status TSR_CPU_GEMM_EXECUTE(const tsr_cpu_matmul_plan *mm, char *const *ptrs, char *workspace) {
  gemm_item base = {
      (const S *)ptrs[0],
      (const S *)ptrs[1],
      mm->has_bias ? (const S *)ptrs[2] : NULL,
      (S *)ptrs[mm->has_bias ? 3 : 2],
  };
  if (mm->m == 0 || mm->n == 0 || mm->batch_count == 0) return TSR_OK;
  int mode = mm->mode;
  // A pool that grew since planning would hand out thread indices the
  // workspace has no slot for: fall back to this thread.
  if ((mode == TSR_CPU_MATMUL_SPLIT || mode == TSR_CPU_MATMUL_BATCHED) &&
      tsr_cpu_thread_count_get() > mm->slots) {
    mode = TSR_CPU_MATMUL_SERIAL;
  }
  switch (mode) {
    case TSR_CPU_MATMUL_GEMV: {
      gemm_gemv_job job = {mm, base};
      const int64_t chunks = (mm->n + mm->gemv_columns - 1) / mm->gemv_columns;
      if (mm->gemv_parallel && chunks > 1) {
        const tsr_host_api *host = tsr_cpu_host_get();
        return host->parallel_for(host->ctx, chunks, 1, gemv_run, &job);
      }
      gemv_run(&job, 0, chunks, 0);
      return TSR_OK;
    }
    case TSR_CPU_MATMUL_NAIVE: {
      gemm_naive_job job = {mm, base};
      if (mm->naive_grain > 0) {
        const tsr_host_api *host = tsr_cpu_host_get();
        return host->parallel_for(host->ctx, mm->batch_count, mm->naive_grain, naive_items_run,
                                  &job);
      }
      naive_items_run(&job, 0, mm->batch_count, 0);
      return TSR_OK;
    }
    case TSR_CPU_MATMUL_BATCHED: {
      const tsr_host_api *host = tsr_cpu_host_get();
      gemm_batch_job job = {mm, base, workspace};
      return host->parallel_for(host->ctx, mm->batch_count, 1, batch_items_run, &job);
    }
    case TSR_CPU_MATMUL_SPLIT: {
      const tsr_host_api *host = tsr_cpu_host_get();
      gemm_batch_job job = {mm, base, workspace};
      return host->parallel_for(host->ctx, mm->batch_count * mm->split_m * mm->split_n, 1,
                                split_blocks_run, &job);
    }
    default:
      for (int64_t b = 0; b < mm->batch_count; ++b) {
        block_run(mm, item_get(mm, &base, b), mm->m, mm->n, workspace);
      }
      return TSR_OK;
  }
}
