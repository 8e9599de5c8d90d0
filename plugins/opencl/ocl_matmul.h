// What the matmul family's files share: the GEMM engine (kernels/matmul.cl)
// that runs MATMUL and the three CONV2D ops as implicit GEMMs, its variants
// and how one is chosen for a device, and the layout of the constant arrays
// the kernels read their shapes from.
//
// Engine selection. A variant is a kernel of matmul.cl (tiled through local
// memory, or direct from global memory) with its tile and work-group shape.
// tsr_ocl_gemm_candidates orders the variants for a device and problem from
// the device's properties alone (a pure function, so tests can call it on
// made-up devices); tsr_ocl_gemm_init builds the first candidate that builds
// and fits, or with plan->autotune times every one that fits on scratch
// buffers and keeps the fastest, remembered under the problem's key with
// tsr_ocl_tune_store so the next plan of that shape reuses it. The
// environment variable TSR_OPENCL_GEMM_VARIANT=<variant name> forces one
// variant (tests and benchmarks; plan creation fails when it does not fit).
#ifndef TESSERA_PLUGINS_OPENCL_OCL_MATMUL_H_
#define TESSERA_PLUGINS_OPENCL_OCL_MATMUL_H_

#include <stdint.h>

#include "ocl.h"

// Indices into the GEMM's constant array (int64 each); matmul.cl and conv.cl
// repeat them as GEO_*.
enum {
  TSR_OCL_GEO_M = 0,
  TSR_OCL_GEO_N = 1,
  TSR_OCL_GEO_K = 2,
  TSR_OCL_GEO_A_RS = 3,
  TSR_OCL_GEO_A_CS = 4,
  TSR_OCL_GEO_B_RS = 5,
  TSR_OCL_GEO_B_CS = 6,
  TSR_OCL_GEO_C_RS = 7,
  TSR_OCL_GEO_C_CS = 8,
  TSR_OCL_GEO_BIAS_RS = 9,
  TSR_OCL_GEO_BIAS_CS = 10,
  TSR_OCL_GEO_A_KFAST = 11,  // A's loads walk k (else m) across work-items
  TSR_OCL_GEO_B_NFAST = 12,  // B's loads walk n (else k)
  TSR_OCL_GEO_BATCH_NDIM = 13,
  TSR_OCL_GEO_KCHUNK = 14,  // backward filter: depth of one split
  TSR_OCL_GEO_SPLITS = 15,  // backward filter: splits of the depth (1: none)
  TSR_OCL_GEO_CG = 16,
  TSR_OCL_GEO_OG = 17,
  TSR_OCL_GEO_H = 18,
  TSR_OCL_GEO_W = 19,
  TSR_OCL_GEO_OH = 20,
  TSR_OCL_GEO_OW = 21,
  TSR_OCL_GEO_KH = 22,
  TSR_OCL_GEO_KW = 23,
  TSR_OCL_GEO_S0 = 24,
  TSR_OCL_GEO_S1 = 25,
  TSR_OCL_GEO_P0 = 26,
  TSR_OCL_GEO_P1 = 27,
  TSR_OCL_GEO_D0 = 28,
  TSR_OCL_GEO_D1 = 29,
  TSR_OCL_GEO_XS = 30,  // 4 strides of x (dx)
  TSR_OCL_GEO_WS = 34,  // 4 strides of w (dw)
  TSR_OCL_GEO_YS = 38,  // 4 strides of y (dy)
  TSR_OCL_GEO_BIAS_STRIDE = 42,
  TSR_OCL_GEO_GROUPS = 43,
  TSR_OCL_GEO_NIMG = 44,
  TSR_OCL_GEO_BATCH = 48,  // per batch dimension: size, a, b, c, bias strides
  TSR_OCL_GEO_COUNT = TSR_OCL_GEO_BATCH + 5 * (TSR_MAX_RANK - 2),
};

// Indices into POOL2D's constant array; pool.cl repeats them as P_*.
enum {
  TSR_OCL_POOL_N = 0,
  TSR_OCL_POOL_C = 1,
  TSR_OCL_POOL_H = 2,
  TSR_OCL_POOL_W = 3,
  TSR_OCL_POOL_OH = 4,
  TSR_OCL_POOL_OW = 5,
  TSR_OCL_POOL_K0 = 6,
  TSR_OCL_POOL_S0 = 8,
  TSR_OCL_POOL_PB0 = 10,
  TSR_OCL_POOL_PA0 = 12,
  TSR_OCL_POOL_D0 = 14,
  TSR_OCL_POOL_XS = 16,
  TSR_OCL_POOL_YS = 20,
  TSR_OCL_POOL_IS = 24,
  TSR_OCL_POOL_CIP = 29,
  TSR_OCL_POOL_COUNT = 32,
};

// The GEMM's modes: the -DMODE of matmul.cl.
enum {
  TSR_OCL_GEMM_MATMUL = 0,
  TSR_OCL_GEMM_CONV_FORWARD = 1,
  TSR_OCL_GEMM_CONV_BACKWARD_DATA = 2,
  TSR_OCL_GEMM_CONV_BACKWARD_FILTER = 3,
};

// The kernels of matmul.cl a variant runs.
enum {
  TSR_OCL_GEMM_KERNEL_DIRECT = 0,  // gemm_direct: scalar register block from global memory
  TSR_OCL_GEMM_KERNEL_TILED = 1,   // gemm_tiled: TK-deep slices staged in local memory
  TSR_OCL_GEMM_KERNEL_VEC = 2,     // gemm_direct_vec: rows x 8 columns in vector registers
  TSR_OCL_GEMM_KERNEL_PACKED = 3,  // gemm_packed: operands packed into the workspace first
};

// One kernel variant: TM x TN tile of C per work-group of WN x WM items, TK
// deep per local-memory stage.
typedef struct tsr_ocl_gemm_variant {
  const char *name;  // "tiled-64x64-4x4": tile, then the items' register block
  int32_t kernel;    // TSR_OCL_GEMM_KERNEL_*
  int32_t tm, tn, tk, wm, wn;
} tsr_ocl_gemm_variant;

enum {
  TSR_OCL_GEMM_TILED_64 = 0,
  TSR_OCL_GEMM_TILED_128X64 = 1,
  TSR_OCL_GEMM_TILED_32 = 2,
  TSR_OCL_GEMM_TILED_32_WG64 = 3,
  TSR_OCL_GEMM_DIRECT_64 = 4,
  TSR_OCL_GEMM_DIRECT_16 = 5,
  TSR_OCL_GEMM_VEC_64 = 6,
  TSR_OCL_GEMM_VEC_16 = 7,
  TSR_OCL_GEMM_VEC_1 = 8,
  TSR_OCL_GEMM_PACKED_6X16 = 9,
  TSR_OCL_GEMM_PACKED_6X8 = 10,
  TSR_OCL_GEMM_VARIANT_COUNT = 11,
};

static const tsr_ocl_gemm_variant tsr_ocl_gemm_variants[TSR_OCL_GEMM_VARIANT_COUNT] = {
    {"tiled-64x64-4x4", 1, 64, 64, 16, 16, 16},
    {"tiled-128x64-8x4", 1, 128, 64, 16, 16, 16},
    {"tiled-32x32-2x2", 1, 32, 32, 16, 16, 16},
    {"tiled-32x32-4x4", 1, 32, 32, 16, 8, 8},
    {"direct-64x64-4x4", 0, 64, 64, 1, 16, 16},
    {"direct-16x16-4x4", 0, 16, 16, 1, 4, 4},
    {"direct-vec-64x64-4x8", 2, 64, 64, 1, 16, 8},
    {"direct-vec-16x64-4x8", 2, 16, 64, 1, 4, 8},
    {"direct-vec-1x512-1x8", 2, 1, 512, 1, 1, 64},
    {"packed-6x16", 3, 6, 16, 1, 1, 1},
    {"packed-6x8", 3, 6, 8, 1, 1, 1},
};

// Local memory the variant's kernel declares, in bytes.
static inline uint64_t tsr_ocl_gemm_variant_local_bytes(const tsr_ocl_gemm_variant *v,
                                                        uint32_t elem_size) {
  if (v->kernel != TSR_OCL_GEMM_KERNEL_TILED)
    return 0;
  return (uint64_t)v->tk * (uint64_t)(v->tm + 1 + v->tn + 1) * elem_size;
}

// Whether |device|'s limits admit variant |v| (the kernel's own limit is
// checked again once it is built).
static inline int tsr_ocl_gemm_variant_fits(const tsr_ocl_device *device,
                                            const tsr_ocl_gemm_variant *v, uint32_t elem_size) {
  if ((size_t)(v->wm * v->wn) > device->max_work_group_size)
    return 0;
  if ((size_t)v->wn > device->max_work_item_sizes[0])
    return 0;
  if ((size_t)v->wm > device->max_work_item_sizes[1])
    return 0;
  if (v->kernel == TSR_OCL_GEMM_KERNEL_TILED &&
      tsr_ocl_gemm_variant_local_bytes(v, elem_size) > device->local_mem_bytes) {
    return 0;
  }
  return 1;
}

// The problem a GEMM variant is chosen for: C is m x n, k deep, over |batch|
// independent items (batch entries, or convolution groups).
typedef struct tsr_ocl_gemm_problem {
  int64_t m, n, k, batch;
  uint32_t elem_size;
} tsr_ocl_gemm_problem;

static inline int64_t tsr_ocl_gemm_tiles(const tsr_ocl_gemm_problem *p, int32_t tm, int32_t tn) {
  return ((p->m + tm - 1) / tm) * ((p->n + tn - 1) / tn) * (p->batch > 0 ? p->batch : 1);
}

// The packed variants' workspace: A and B of every batch item, padded to
// whole tiles (kernels/matmul.cl, gemm_packed), in bytes; 0 for the others.
// |extent| rounded up to whole tiles of |tile|.
static inline int64_t tsr_ocl_gemm_padded(int64_t extent, int32_t tile) {
  return (extent + tile - 1) / tile * tile;
}

static inline uint64_t tsr_ocl_gemm_packed_bytes(const tsr_ocl_gemm_problem *p,
                                                 const tsr_ocl_gemm_variant *v) {
  if (v->kernel != TSR_OCL_GEMM_KERNEL_PACKED)
    return 0;
  const uint64_t mp = (uint64_t)tsr_ocl_gemm_padded(p->m, v->tm);
  const uint64_t np = (uint64_t)tsr_ocl_gemm_padded(p->n, v->tn);
  const uint64_t batch = (uint64_t)(p->batch > 0 ? p->batch : 1);
  return batch * (uint64_t)p->k * (mp + np) * p->elem_size;
}

// The most workspace a packed variant may ask for: beyond it (a very large
// convolution's column matrix) the direct kernels run without one.
#define TSR_OCL_GEMM_PACKED_MAX_BYTES (UINT64_C(512) << 20)

// Writes the variants that fit |device| into out_order, best first by the
// device's properties, and returns how many. Devices whose local memory is
// global memory (CPUs) get the packed kernels first (6x16 for float, 6x8
// for double, whose vectors are twice as wide), then the direct vector ones,
// then the scalar direct and tiled ones, in the order of their measured
// speed on PoCL (docs/performance-log.md, "Measurements behind the code's
// decisions"): staging through local memory only adds copies there, and
// vector types are what reach their SIMD units. A product of 1-3 rows,
// which packing would only copy, starts with
// the direct vector kernels. Other devices get the tiled kernels. Either way
// the tile is sized so the problem still fills the compute units.
// Thread-safe (pure).
static inline int32_t tsr_ocl_gemm_candidates(const tsr_ocl_device *device,
                                              const tsr_ocl_gemm_problem *p,
                                              int32_t out_order[TSR_OCL_GEMM_VARIANT_COUNT]) {
  int32_t pref[TSR_OCL_GEMM_VARIANT_COUNT];
  int32_t count = 0;
  const int64_t cu = device->compute_units > 0 ? device->compute_units : 1;
  const int32_t packed_first =
      p->elem_size == 8 ? TSR_OCL_GEMM_PACKED_6X8 : TSR_OCL_GEMM_PACKED_6X16;
  const int32_t packed_second =
      p->elem_size == 8 ? TSR_OCL_GEMM_PACKED_6X16 : TSR_OCL_GEMM_PACKED_6X8;
  if (device->local_mem_is_global || device->local_mem_bytes == 0) {
    if (p->m > 3) {
      pref[count++] = packed_first;
      pref[count++] = packed_second;
    }
    // Rows past M are computed and dropped: a tile taller than M wastes
    // its height over M (64x for the first convolution's input gradient).
    if (p->m <= 3) {
      pref[count++] = TSR_OCL_GEMM_VEC_1;
      pref[count++] = TSR_OCL_GEMM_VEC_16;
      pref[count++] = TSR_OCL_GEMM_VEC_64;
    } else if (p->m <= 16 || tsr_ocl_gemm_tiles(p, 64, 64) < 2 * cu) {
      pref[count++] = TSR_OCL_GEMM_VEC_16;
      pref[count++] = TSR_OCL_GEMM_VEC_64;
      pref[count++] = TSR_OCL_GEMM_VEC_1;
    } else {
      pref[count++] = TSR_OCL_GEMM_VEC_64;
      pref[count++] = TSR_OCL_GEMM_VEC_16;
      pref[count++] = TSR_OCL_GEMM_VEC_1;
    }
    pref[count++] = TSR_OCL_GEMM_DIRECT_64;
    pref[count++] = TSR_OCL_GEMM_DIRECT_16;
    pref[count++] = TSR_OCL_GEMM_TILED_64;
    pref[count++] = TSR_OCL_GEMM_TILED_128X64;
    pref[count++] = TSR_OCL_GEMM_TILED_32;
    pref[count++] = TSR_OCL_GEMM_TILED_32_WG64;
    if (p->m <= 3) {
      pref[count++] = packed_first;
      pref[count++] = packed_second;
    }
  } else {
    if (tsr_ocl_gemm_tiles(p, 128, 64) >= 4 * cu) {
      pref[count++] = TSR_OCL_GEMM_TILED_128X64;
      pref[count++] = TSR_OCL_GEMM_TILED_64;
    } else if (tsr_ocl_gemm_tiles(p, 64, 64) >= 2 * cu) {
      pref[count++] = TSR_OCL_GEMM_TILED_64;
      pref[count++] = TSR_OCL_GEMM_TILED_128X64;
    } else {
      pref[count++] = TSR_OCL_GEMM_TILED_32;
      pref[count++] = TSR_OCL_GEMM_TILED_64;
      pref[count++] = TSR_OCL_GEMM_TILED_128X64;
    }
    if (count == 2)
      pref[count++] = TSR_OCL_GEMM_TILED_32;
    pref[count++] = TSR_OCL_GEMM_TILED_32_WG64;
    pref[count++] = TSR_OCL_GEMM_VEC_64;
    pref[count++] = TSR_OCL_GEMM_VEC_16;
    pref[count++] = TSR_OCL_GEMM_VEC_1;
    pref[count++] = TSR_OCL_GEMM_DIRECT_64;
    pref[count++] = TSR_OCL_GEMM_DIRECT_16;
    pref[count++] = packed_first;
    pref[count++] = packed_second;
  }
  int32_t n = 0;
  for (int32_t i = 0; i < count; ++i) {
    const tsr_ocl_gemm_variant *v = &tsr_ocl_gemm_variants[pref[i]];
    const uint64_t packed = tsr_ocl_gemm_packed_bytes(p, v);
    // An empty depth has nothing to pack (and the kernel needs a workspace).
    if (v->kernel == TSR_OCL_GEMM_KERNEL_PACKED && packed == 0)
      continue;
    if (packed > TSR_OCL_GEMM_PACKED_MAX_BYTES ||
        (device->max_alloc_bytes > 0 && packed > device->max_alloc_bytes)) {
      continue;
    }
    if (tsr_ocl_gemm_variant_fits(device, v, p->elem_size)) {
      out_order[n++] = pref[i];
    }
  }
  return n;
}

// How a backward-filter GEMM splits its (long) depth so that the work-groups
// fill the device: into *out_splits chunks of *out_chunk (a multiple of |tk|),
// summed afterwards in split order. Depends on the shape and the device only.
static inline void tsr_ocl_gemm_split_depth(const tsr_ocl_device *device,
                                            const tsr_ocl_gemm_problem *p,
                                            const tsr_ocl_gemm_variant *v, int64_t *out_splits,
                                            int64_t *out_chunk) {
  const int64_t min_chunk = 256;
  const int64_t tiles = tsr_ocl_gemm_tiles(p, v->tm, v->tn);
  const int64_t target = 4 * (int64_t)(device->compute_units > 0 ? device->compute_units : 1);
  int64_t splits = (target + tiles - 1) / tiles;
  const int64_t max_splits = (p->k + min_chunk - 1) / min_chunk;
  if (splits > max_splits)
    splits = max_splits;
  if (splits > 64)
    splits = 64;
  if (splits < 1)
    splits = 1;
  int64_t chunk = (p->k + splits - 1) / splits;
  chunk = (chunk + v->tk - 1) / v->tk * v->tk;
  if (chunk < 1)
    chunk = 1;
  *out_splits = p->k > 0 ? (p->k + chunk - 1) / chunk : 1;
  *out_chunk = chunk;
}

// A chosen GEMM: its kernel, launch shape and constant array; a packed
// variant also has its two packing kernels and needs workspace_bytes of the
// workspace given to tsr_ocl_gemm_launch.
typedef struct tsr_ocl_gemm {
  tsr_ocl_kernel *kernel;
  tsr_ocl_kernel *pack_a;  // packed variants only
  tsr_ocl_kernel *pack_b;
  cl_mem geo;       // TSR_OCL_GEO_COUNT int64
  int32_t variant;  // index into tsr_ocl_gemm_variants
  int32_t mode;     // TSR_OCL_GEMM_*
  uint32_t elem_size;
  size_t global[3];
  size_t local[3];
  size_t pack_a_global[2];
  size_t pack_b_global[3];
  int64_t mp, np;            // packed rows and columns (whole tiles)
  uint64_t at_elems;         // elements of packed A, where packed B starts
  uint64_t workspace_bytes;  // packed A and B; 0 for the other variants
} tsr_ocl_gemm;

// Operand extents (bytes) for autotune's scratch buffers: A, B, C, bias.
typedef struct tsr_ocl_gemm_extents {
  uint64_t bytes[4];
} tsr_ocl_gemm_extents;

// Chooses and builds the GEMM for |plan| (mode |mode|, shapes in |geo|,
// which this completes with the split of a backward filter) into |out_gemm|,
// and writes the variant's name to |out_name|. With plan->autotune, times
// the candidates (|extents| sizes their scratch buffers) under |tune_key| or
// reuses the stored winner; *out_tuned is 1 when it timed, 2 when it reused.
// The caller owns |out_gemm| (tsr_ocl_gemm_release). Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_gemm_create(tsr_ocl_plan *plan, int32_t mode,
                                              int64_t geo[TSR_OCL_GEO_COUNT],
                                              const tsr_ocl_gemm_problem *problem,
                                              const tsr_ocl_gemm_extents *extents,
                                              const char *tune_key, tsr_ocl_gemm *out_gemm,
                                              int *out_tuned);
// Releases the kernel and constant array of |gemm|; a zeroed one is ignored.
// Not thread-safe (the plan is idle).
TSR_OCL_HIDDEN void tsr_ocl_gemm_release(tsr_ocl_gemm *gemm);
// Enqueues |gemm| on exec->queue: C = act(alpha * A B + bias + beta * C) with
// the element offsets given; a packed variant first packs A and B into
// |ws| from byte |ws_off| (gemm->workspace_bytes of it). Never blocks or
// allocates. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_gemm_launch(const tsr_ocl_exec *exec, const tsr_ocl_gemm *gemm,
                                              cl_mem a, uint64_t a_off, cl_mem b, uint64_t b_off,
                                              cl_mem c, uint64_t c_off, cl_mem bias,
                                              uint64_t bias_off, double alpha, double beta,
                                              int32_t activation, int32_t has_bias, cl_mem ws,
                                              uint64_t ws_off);
// Sets plan->engine to "opencl:<what>-<variant>", marked "+tuned" when
// |tuned| is 1 and "+reused" when it is 2. Thread-safe.
TSR_OCL_HIDDEN void tsr_ocl_gemm_engine_name(tsr_ocl_plan *plan, const char *what,
                                             const tsr_ocl_gemm *gemm, int tuned);

// The "-DT=... " build option of |dtype|'s kernels. Static storage.
static inline const char *tsr_ocl_type_option(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT64 ? "-DT=double" : "-DT=float";
}

// The largest power of two <= min(|want|, |limit|), at least 1.
static inline size_t tsr_ocl_pow2_floor(size_t want, size_t limit) {
  size_t v = want < limit ? want : limit;
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// The other files' ops, joined into tsr_ocl_matmul_ops by ops_matmul.c.
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_conv2d_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_conv2d_backward_data_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_conv2d_backward_filter_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_pool2d_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_pool2d_backward_impl;

#endif  // TESSERA_PLUGINS_OPENCL_OCL_MATMUL_H_
