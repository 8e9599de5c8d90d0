// REDUCE (sum, mean, max, min, prod) and ARG_REDUCE (argmax, argmin).
//
// Build options: -DTSR_DT=<tsr_dtype_t> (0 float32, 1 float64, 4 int32,
// 5 int64). One program per dtype holds every function's kernels, so a dtype
// costs one compilation whatever the functions and shapes.
//
// The shape (ref's collapsed kept x reduced dimensions, strides in elements)
// is a __constant long array laid out as RS_* below; ops_reduce.c writes it.
// The reduced range of each output is cut into segments of a length fixed at
// plan time. Pass 1 folds a segment, either by a work-group (a tree in local
// memory: the reduced elements are close in memory) or by one work-item (the
// kept dimension is the contiguous one, so neighbouring work-items read
// neighbouring elements). With more than one segment, pass 2 folds the
// partial results of each output in segment order. No atomics: the order of
// every fold is a function of the plan, so results are bit-reproducible.
// Limited by memory bandwidth (one read of x); the tree costs log2(local)
// barriers per work-group. Reduced dimensions that do not merge are walked
// row by row (one division per row, not per element). Measured on PoCL's
// CPU device: docs/performance-log.md, "Measurements behind the code's
// decisions".

#define RS_KEPT_NDIM 0
#define RS_RED_NDIM 1
#define RS_OUT_COUNT 2
#define RS_RED_COUNT 3
#define RS_KEPT_SIZES 4
#define RS_KEPT_X 12
#define RS_KEPT_OUT 20
#define RS_RED_SIZES 28
#define RS_RED_X 36

#if TSR_DT == 0
#define T float
#define IS_FLOAT 1
#define FACC float
#elif TSR_DT == 1
#define T double
#define IS_FLOAT 1
#define FACC double
#elif TSR_DT == 4
#define T int
#define IS_FLOAT 0
#define UACC uint
#define T_MIN INT_MIN
#define T_MAX INT_MAX
#define AS_T as_int
#elif TSR_DT == 5
#define T long
#define IS_FLOAT 0
#define UACC ulong
#define T_MIN LONG_MIN
#define T_MAX LONG_MAX
#define AS_T as_long
#else
#error "reduce.cl: TSR_DT must be 0, 1, 4 or 5"
#endif

// Offsets in x and out of output element |o| (row-major over the kept dims).
inline void rs_kept_offsets(__constant const long *s, ulong o, ulong *x_off, ulong *out_off) {
  ulong a = 0, b = 0;
  for (int d = (int)s[RS_KEPT_NDIM] - 1; d >= 0; --d) {
    ulong size = (ulong)s[RS_KEPT_SIZES + d];
    ulong i = o % size;
    o /= size;
    a += i * (ulong)s[RS_KEPT_X + d];
    b += i * (ulong)s[RS_KEPT_OUT + d];
  }
  *x_off = a;
  *out_off = b;
}

// Offset in x of reduced element |i| (row-major over the reduced dims).
inline ulong rs_red_offset(__constant const long *s, ulong i) {
  int nd = (int)s[RS_RED_NDIM];
  if (nd == 1) return i * (ulong)s[RS_RED_X];
  ulong off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    ulong size = (ulong)s[RS_RED_SIZES + d];
    off += (i % size) * (ulong)s[RS_RED_X + d];
    i /= size;
  }
  return off;
}

// Offset in x of the first element of reduced row |r|: the rows are the
// innermost reduced dimension, |r| runs row-major over the others.
inline ulong rs_row_offset(__constant const long *s, ulong r) {
  ulong off = 0;
  for (int d = (int)s[RS_RED_NDIM] - 2; d >= 0; --d) {
    ulong size = (ulong)s[RS_RED_SIZES + d];
    off += (r % size) * (ulong)s[RS_RED_X + d];
    r /= size;
  }
  return off;
}

// Kernels of one function: accumulator type A, identity INIT, fold STEP,
// and FINAL(acc, count) giving the stored T.
#define REDUCE_KERNELS(NAME, A, INIT, STEP, FINAL)                                               \
  __kernel void reduce_wg_##NAME(__global const T *x, ulong x_off, __global T *out,              \
                                 ulong out_off, __global A *part, ulong part_off,                \
                                 __constant const long *s, ulong segment, ulong segments,        \
                                 __local A *scratch) {                                           \
    const ulong g = get_group_id(0);                                                             \
    const uint lid = (uint)get_local_id(0);                                                      \
    const uint local_size = (uint)get_local_size(0);                                             \
    const ulong o = g / segments;                                                                \
    const ulong red = (ulong)s[RS_RED_COUNT];                                                    \
    const ulong begin = (g % segments) * segment;                                                \
    const ulong end = min(begin + segment, red);                                                 \
    ulong xo, oo;                                                                                \
    rs_kept_offsets(s, o, &xo, &oo);                                                             \
    __global const T *xp = x + x_off + xo;                                                       \
    A acc = INIT;                                                                                \
    const int nd = (int)s[RS_RED_NDIM];                                                          \
    const ulong n1 = nd > 0 ? (ulong)s[RS_RED_SIZES + nd - 1] : 1;                               \
    if (nd <= 1 || n1 < local_size) {                                                            \
      for (ulong i = begin + lid; i < end; i += local_size) {                                    \
        acc = STEP(acc, (A)xp[rs_red_offset(s, i)]);                                             \
      }                                                                                          \
    } else {                                                                                     \
      /* Row by row: one division per row, work-items side by side in it. */                    \
      const ulong s1 = (ulong)s[RS_RED_X + nd - 1];                                              \
      ulong r = begin / n1, j0 = begin % n1;                                                     \
      for (ulong i = begin; i < end; ++r, j0 = 0) {                                              \
        const ulong base = rs_row_offset(s, r);                                                  \
        const ulong j1 = min(n1, j0 + (end - i));                                                \
        for (ulong j = j0 + lid; j < j1; j += local_size) acc = STEP(acc, (A)xp[base + j * s1]); \
        i += j1 - j0;                                                                            \
      }                                                                                          \
    }                                                                                            \
    scratch[lid] = acc;                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    for (uint h = local_size / 2; h > 0; h >>= 1) {                                              \
      if (lid < h) scratch[lid] = STEP(scratch[lid], scratch[lid + h]);                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                            \
    if (lid == 0) {                                                                              \
      if (segments == 1) {                                                                       \
        out[out_off + oo] = FINAL(scratch[0], red);                                              \
      } else {                                                                                   \
        part[part_off + g] = scratch[0];                                                         \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
  __kernel void reduce_col_##NAME(__global const T *x, ulong x_off, __global T *out,             \
                                  ulong out_off, __global A *part, ulong part_off,               \
                                  __constant const long *s, ulong segment, ulong segments) {     \
    const ulong out_count = (ulong)s[RS_OUT_COUNT];                                              \
    const ulong t = get_global_id(0);                                                            \
    if (t >= out_count * segments) return;                                                       \
    const ulong o = t % out_count;                                                               \
    const ulong seg = t / out_count;                                                             \
    const ulong red = (ulong)s[RS_RED_COUNT];                                                    \
    const ulong begin = seg * segment;                                                           \
    const ulong end = min(begin + segment, red);                                                 \
    ulong xo, oo;                                                                                \
    rs_kept_offsets(s, o, &xo, &oo);                                                             \
    __global const T *xp = x + x_off + xo;                                                       \
    A acc = INIT;                                                                                \
    if (s[RS_RED_NDIM] <= 1) {                                                                   \
      const ulong step = s[RS_RED_NDIM] == 1 ? (ulong)s[RS_RED_X] : 0;                           \
      for (ulong i = begin; i < end; ++i) acc = STEP(acc, (A)xp[i * step]);                      \
    } else if (begin < end) {                                                                    \
      /* Walks the reduced dims as rows: one division per row, not per element. */              \
      const int nd = (int)s[RS_RED_NDIM];                                                        \
      const ulong n1 = (ulong)s[RS_RED_SIZES + nd - 1], s1 = (ulong)s[RS_RED_X + nd - 1];        \
      ulong r = begin / n1, j = begin % n1, base = rs_row_offset(s, r);                          \
      for (ulong i = begin; i < end; ++i) {                                                      \
        acc = STEP(acc, (A)xp[base + j * s1]);                                                   \
        if (++j == n1) {                                                                         \
          j = 0;                                                                                 \
          base = rs_row_offset(s, ++r);                                                          \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
    if (segments == 1) {                                                                         \
      out[out_off + oo] = FINAL(acc, red);                                                       \
    } else {                                                                                     \
      part[part_off + o * segments + seg] = acc;                                                 \
    }                                                                                            \
  }                                                                                              \
  __kernel void reduce_fin_##NAME(__global T *out, ulong out_off, __global const A *part,        \
                                  ulong part_off, __constant const long *s, ulong segments) {    \
    const ulong o = get_global_id(0);                                                            \
    if (o >= (ulong)s[RS_OUT_COUNT]) return;                                                     \
    ulong xo, oo;                                                                                \
    rs_kept_offsets(s, o, &xo, &oo);                                                             \
    __global const A *p = part + part_off + o * segments;                                        \
    A acc = INIT;                                                                                \
    for (ulong k = 0; k < segments; ++k) acc = STEP(acc, p[k]);                                  \
    out[out_off + oo] = FINAL(acc, (ulong)s[RS_RED_COUNT]);                                      \
  }                                                                                              \
  __kernel void reduce_finwg_##NAME(__global T *out, ulong out_off, __global const A *part,      \
                                    ulong part_off, __constant const long *s, ulong segments,    \
                                    __local A *scratch) {                                        \
    const ulong o = get_group_id(0);                                                             \
    const uint lid = (uint)get_local_id(0);                                                      \
    const uint local_size = (uint)get_local_size(0);                                             \
    ulong xo, oo;                                                                                \
    rs_kept_offsets(s, o, &xo, &oo);                                                             \
    __global const A *p = part + part_off + o * segments;                                        \
    A acc = INIT;                                                                                \
    for (ulong k = lid; k < segments; k += local_size) acc = STEP(acc, p[k]);                    \
    scratch[lid] = acc;                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    for (uint h = local_size / 2; h > 0; h >>= 1) {                                              \
      if (lid < h) scratch[lid] = STEP(scratch[lid], scratch[lid + h]);                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                            \
    if (lid == 0) out[out_off + oo] = FINAL(scratch[0], (ulong)s[RS_RED_COUNT]);                 \
  }

#define RS_ADD(r, v) ((r) + (v))
#define RS_MUL(r, v) ((r) * (v))

#if IS_FLOAT
// NaN-propagating: a NaN v replaces r, and a NaN r is never replaced.
#define RS_FMAX(r, v) (((v) > (r) || isnan(v)) ? (v) : (r))
#define RS_FMIN(r, v) (((v) < (r) || isnan(v)) ? (v) : (r))
#define RS_STORE(acc, count) ((T)(acc))
// The mean of nothing is 0 / 0: NaN, as the catalogue asks.
#define RS_STORE_MEAN(acc, count) ((T)((acc) / (FACC)(count)))
REDUCE_KERNELS(sum, FACC, (FACC)0, RS_ADD, RS_STORE)
REDUCE_KERNELS(mean, FACC, (FACC)0, RS_ADD, RS_STORE_MEAN)
REDUCE_KERNELS(prod, FACC, (FACC)1, RS_MUL, RS_STORE)
REDUCE_KERNELS(max, FACC, (FACC)(-INFINITY), RS_FMAX, RS_STORE)
REDUCE_KERNELS(min, FACC, (FACC)INFINITY, RS_FMIN, RS_STORE)
#else
// Sums and products wrap modulo 2^bits: computed unsigned, reinterpreted.
#define RS_IMAX(r, v) ((v) > (r) ? (v) : (r))
#define RS_IMIN(r, v) ((v) < (r) ? (v) : (r))
#define RS_STORE_WRAP(acc, count) AS_T(acc)
#define RS_STORE(acc, count) (acc)
REDUCE_KERNELS(sum, UACC, (UACC)0, RS_ADD, RS_STORE_WRAP)
REDUCE_KERNELS(prod, UACC, (UACC)1, RS_MUL, RS_STORE_WRAP)
REDUCE_KERNELS(max, T, (T)T_MIN, RS_IMAX, RS_STORE)
REDUCE_KERNELS(min, T, (T)T_MAX, RS_IMIN, RS_STORE)
#endif

// ---------------------------------------------------------------------------
// ARG_REDUCE: one reduced dimension (the axis). A candidate is (value,
// index); ARGMAX prefers a NaN, then a larger value, then (ties, or two NaNs)
// the smaller index, so the first maximum wins whatever the fold order.
// ARGMIN mirrors it. The same shape layout as REDUCE.

#if IS_FLOAT
#define AR_NAN(v) isnan(v)
#else
#define AR_NAN(v) ((v) != (v))
#endif

// 1 when candidate (v, i) beats (w, j) for ARGMAX (|is_max|) or ARGMIN.
inline int ar_better(T v, long i, T w, long j, int is_max) {
  int vn = AR_NAN(v), wn = AR_NAN(w);
  if (vn || wn) return vn && (!wn || i < j);
  if (v == w) return i < j;
  return is_max ? v > w : v < w;
}

// One work-group per output; |is_max| selects ARGMAX.
__kernel void arg_reduce_wg(__global const T *x, ulong x_off, __global long *out, ulong out_off,
                            __constant const long *s, int is_max, __local T *vals,
                            __local long *idxs) {
  const ulong o = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const long n = s[RS_RED_COUNT];
  const ulong step = s[RS_RED_NDIM] == 1 ? (ulong)s[RS_RED_X] : 0;
  ulong xo, oo;
  rs_kept_offsets(s, o, &xo, &oo);
  __global const T *xp = x + x_off + xo;
  T best = 0;
  long best_i = -1;
  for (long i = lid; i < n; i += local_size) {
    T v = xp[(ulong)i * step];
    if (best_i < 0 || ar_better(v, i, best, best_i, is_max)) {
      best = v;
      best_i = i;
    }
  }
  vals[lid] = best;
  idxs[lid] = best_i;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = local_size / 2; h > 0; h >>= 1) {
    if (lid < h && idxs[lid + h] >= 0 &&
        (idxs[lid] < 0 || ar_better(vals[lid + h], idxs[lid + h], vals[lid], idxs[lid], is_max))) {
      vals[lid] = vals[lid + h];
      idxs[lid] = idxs[lid + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[out_off + oo] = idxs[0];
}

// One work-item per output, scanning the axis in order (the kept dimension
// is the contiguous one).
__kernel void arg_reduce_item(__global const T *x, ulong x_off, __global long *out, ulong out_off,
                              __constant const long *s, int is_max) {
  const ulong o = get_global_id(0);
  if (o >= (ulong)s[RS_OUT_COUNT]) return;
  const long n = s[RS_RED_COUNT];
  const ulong step = s[RS_RED_NDIM] == 1 ? (ulong)s[RS_RED_X] : 0;
  ulong xo, oo;
  rs_kept_offsets(s, o, &xo, &oo);
  __global const T *xp = x + x_off + xo;
  T best = xp[0];
  long best_i = 0;
  for (long i = 1; i < n && !AR_NAN(best); ++i) {
    T v = xp[(ulong)i * step];
    if (ar_better(v, i, best, best_i, is_max)) {
      best = v;
      best_i = i;
    }
  }
  out[out_off + oo] = best_i;
}
