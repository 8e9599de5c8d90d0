// GEMM kernels of the OpenCL plugin: MATMUL and, as implicit GEMMs, the three
// CONV2D ops (the im2col matrix is never stored: the tile loaders compute
// each of its elements from the convolution geometry).
//
// Build options:
//   -DT=float|double        operand type; the accumulator is T as well (float32
//                           accumulates in float32, float64 in float64)
//   -DMODE=0|1|2|3          0 matmul, 1 conv forward, 2 conv backward data,
//                           3 conv backward filter
//   -DTM -DTN -DTK          the work-group's tile of C (TM x TN) and depth step
//   -DWM -DWN               work-group shape (WN x WM work-items); each item
//                           computes (TM / WM) x (TN / WN) elements of C
//   -DKERNEL=<n>            only kernel n of the file (TSR_OCL_GEMM_KERNEL_*:
//                           0 direct, 1 tiled, 2 direct_vec, 3 packed with its
//                           packing kernels); the others are not compiled
//                           (the compiler's time per program on PoCL grows
//                           with the kernels it sees: docs/performance-log.md,
//                           "Measurements behind the code's decisions")
//   -DIDX32=0|1             1 when M, N and K are below 2^31: the
//                           convolutions' index divisions run in 32 bits
//                           (64-bit division costs several times more)
//
// Shapes, strides and geometry come in a __constant long array (geo, laid out
// as ocl_matmul.h's TSR_OCL_GEO_*), so one program serves every shape.
//
// Every variant sums k in ascending order into one accumulator per element of
// C, so the variants differ in speed, not in their summation order.
//
// gemm_tiled stages TK-deep slices of A and B through local memory: each
// element loaded from global memory feeds TM or TN multiply-adds (the GPU
// kernel; bound by local-memory bandwidth at 4x4 register blocks).
// gemm_direct and gemm_direct_vec read A and B from global memory through
// the caches, for devices whose local memory is global memory (PoCL's CPU
// device), where staging only adds copies; gemm_direct_vec keeps 8 columns
// in one vector, which is what reaches a CPU's SIMD units (see there).

#ifndef T
#define T float
#endif
#ifndef MODE
#define MODE 0
#endif
#ifndef TM
#define TM 64
#endif
#ifndef TN
#define TN 64
#endif
#ifndef TK
#define TK 16
#endif
#ifndef WM
#define WM 16
#endif
#ifndef WN
#define WN 16
#endif
#ifndef IDX32
#define IDX32 0
#endif
#ifndef KERNEL
#define KERNEL -1
#endif
// Quotient of two non-negative indices.
#if IDX32
#define QUO(a, b) ((long)((uint)(a) / (uint)(b)))
#else
#define QUO(a, b) ((a) / (b))
#endif
#define RM (TM / WM)
#define RN (TN / WN)
#define NT (WM * WN)

// Keep in sync with ocl_matmul.h.
#define GEO_M 0
#define GEO_N 1
#define GEO_K 2
#define GEO_A_RS 3
#define GEO_A_CS 4
#define GEO_B_RS 5
#define GEO_B_CS 6
#define GEO_C_RS 7
#define GEO_C_CS 8
#define GEO_BIAS_RS 9
#define GEO_BIAS_CS 10
#define GEO_A_KFAST 11
#define GEO_B_NFAST 12
#define GEO_BATCH_NDIM 13
#define GEO_KCHUNK 14
#define GEO_SPLITS 15
#define GEO_CG 16
#define GEO_OG 17
#define GEO_H 18
#define GEO_W 19
#define GEO_OH 20
#define GEO_OW 21
#define GEO_KH 22
#define GEO_KW 23
#define GEO_S0 24
#define GEO_S1 25
#define GEO_P0 26
#define GEO_P1 27
#define GEO_D0 28
#define GEO_D1 29
#define GEO_XS 30
#define GEO_WS 34
#define GEO_YS 38
#define GEO_BIAS_STRIDE 42
#define GEO_GROUPS 43
#define GEO_BATCH 48

typedef struct gemm_ctx {
  long m, n, k_begin, k_end;
  long a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, bias_rs, bias_cs;
  long a_base, b_base, c_base, bias_base;
  int a_kfast, b_nfast;
#if MODE != 0
  long cg, og, h, w, oh, ow, kh, kw, s0, s1, p0, p1, d0, d1;
  long xs0, xs1, xs2, xs3, ws0, ws1, ws2, ws3, ys0, ys1, ys2, ys3;
  long khkw, cols, splits;
#endif
} gemm_ctx;

inline void gemm_ctx_init(gemm_ctx *c, __constant const long *geo, long z, ulong a_off,
                          ulong b_off, ulong c_off, ulong bias_off) {
  c->m = geo[GEO_M];
  c->n = geo[GEO_N];
  c->k_begin = 0;
  c->k_end = geo[GEO_K];
  c->a_rs = geo[GEO_A_RS];
  c->a_cs = geo[GEO_A_CS];
  c->b_rs = geo[GEO_B_RS];
  c->b_cs = geo[GEO_B_CS];
  c->c_rs = geo[GEO_C_RS];
  c->c_cs = geo[GEO_C_CS];
  c->bias_rs = geo[GEO_BIAS_RS];
  c->bias_cs = geo[GEO_BIAS_CS];
  c->a_kfast = (int)geo[GEO_A_KFAST];
  c->b_nfast = (int)geo[GEO_B_NFAST];
  c->a_base = (long)a_off;
  c->b_base = (long)b_off;
  c->c_base = (long)c_off;
  c->bias_base = (long)bias_off;
#if MODE == 0
  // Batch item z over the broadcast batch dimensions, innermost last.
  for (int d = (int)geo[GEO_BATCH_NDIM] - 1; d >= 0; --d) {
    __constant const long *bd = geo + GEO_BATCH + 5 * d;
    const long index = z % bd[0];
    z /= bd[0];
    c->a_base += index * bd[1];
    c->b_base += index * bd[2];
    c->c_base += index * bd[3];
    c->bias_base += index * bd[4];
  }
#else
  c->cg = geo[GEO_CG];
  c->og = geo[GEO_OG];
  c->h = geo[GEO_H];
  c->w = geo[GEO_W];
  c->oh = geo[GEO_OH];
  c->ow = geo[GEO_OW];
  c->kh = geo[GEO_KH];
  c->kw = geo[GEO_KW];
  c->s0 = geo[GEO_S0];
  c->s1 = geo[GEO_S1];
  c->p0 = geo[GEO_P0];
  c->p1 = geo[GEO_P1];
  c->d0 = geo[GEO_D0];
  c->d1 = geo[GEO_D1];
  c->xs0 = geo[GEO_XS + 0];
  c->xs1 = geo[GEO_XS + 1];
  c->xs2 = geo[GEO_XS + 2];
  c->xs3 = geo[GEO_XS + 3];
  c->ws0 = geo[GEO_WS + 0];
  c->ws1 = geo[GEO_WS + 1];
  c->ws2 = geo[GEO_WS + 2];
  c->ws3 = geo[GEO_WS + 3];
  c->ys0 = geo[GEO_YS + 0];
  c->ys1 = geo[GEO_YS + 1];
  c->ys2 = geo[GEO_YS + 2];
  c->ys3 = geo[GEO_YS + 3];
  c->khkw = c->kh * c->kw;
  c->cols = c->oh * c->ow;
  c->splits = geo[GEO_SPLITS];
#if MODE == 1
  // z is the group: A = w, B = x (im2col), C = y.
  c->a_base += z * c->og * c->ws0;
  c->b_base += z * c->cg * c->xs1;
  c->c_base += z * c->og * c->ys1;
  c->bias_base += z * c->og * geo[GEO_BIAS_STRIDE];
  c->bias_rs = geo[GEO_BIAS_STRIDE];
#elif MODE == 2
  // z is the group: A = w^T, B = dy (col2im gathered), C = dx.
  c->a_base += z * c->og * c->ws0;
  c->b_base += z * c->og * c->ys1;
  c->c_base += z * c->cg * c->xs1;
#else
  // z = group * splits + split: A = dy, B = x (im2col)^T, C = dw or the
  // split's partial sums (contiguous [splits][groups][M][N]).
  const long g = z / c->splits, s = z % c->splits;
  const long chunk = geo[GEO_KCHUNK];
  c->a_base += g * c->og * c->ys1;
  c->b_base += g * c->cg * c->xs1;
  if (c->splits == 1) {
    c->c_base += g * c->og * c->ws0;
  } else {
    c->c_base += (s * geo[GEO_GROUPS] + g) * c->m * c->n;
  }
  c->k_begin = s * chunk;
  c->k_end = min(c->k_end, c->k_begin + chunk);
#endif
#endif
}

// A[i, k] of the GEMM.
inline T load_a(const gemm_ctx *c, __global const T *a, long i, long k) {
#if MODE == 0
  return a[c->a_base + i * c->a_rs + k * c->a_cs];
#elif MODE == 1 || MODE == 2
  // MODE 1: w[o = i, ci, kh, kw] with k = (ci, kh, kw).
  // MODE 2: w[o, ci = i, kh, kw] with k = (o, kh, kw).
  const long outer = QUO(k, c->khkw), r = k - outer * c->khkw;
  const long kh = QUO(r, c->kw), kw = r - kh * c->kw;
#if MODE == 1
  return a[c->a_base + i * c->ws0 + outer * c->ws1 + kh * c->ws2 + kw * c->ws3];
#else
  return a[c->a_base + outer * c->ws0 + i * c->ws1 + kh * c->ws2 + kw * c->ws3];
#endif
#else
  // dy[n, o = i, p, q] with k = (n, p, q).
  const long n = QUO(k, c->cols), pq = k - n * c->cols;
  const long p = QUO(pq, c->ow), q = pq - p * c->ow;
  return a[c->a_base + n * c->ys0 + i * c->ys1 + p * c->ys2 + q * c->ys3];
#endif
}

// B[k, j] of the GEMM; 0 where a window reads padding.
inline T load_b(const gemm_ctx *c, __global const T *b, long k, long j) {
#if MODE == 0
  return b[c->b_base + k * c->b_rs + j * c->b_cs];
#elif MODE == 1 || MODE == 3
  // x[n, ci, p*s0 - p0 + kh*d0, q*s1 - p1 + kw*d1]; MODE 1: k = (ci, kh, kw),
  // j = (n, p, q); MODE 3: the roles of k and j swap.
#if MODE == 1
  const long f = k, pos = j;
#else
  const long f = j, pos = k;
#endif
  const long ci = QUO(f, c->khkw), r = f - ci * c->khkw;
  const long kh = QUO(r, c->kw), kw = r - kh * c->kw;
  const long n = QUO(pos, c->cols), pq = pos - n * c->cols;
  const long p = QUO(pq, c->ow), q = pq - p * c->ow;
  const long ih = p * c->s0 - c->p0 + kh * c->d0;
  const long iw = q * c->s1 - c->p1 + kw * c->d1;
  if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w) return (T)0;
  return b[c->b_base + n * c->xs0 + ci * c->xs1 + ih * c->xs2 + iw * c->xs3];
#else
  // dy[n, o, p, q] where p*s0 - p0 + kh*d0 = h: k = (o, kh, kw), j = (n, h, w).
  const long o = QUO(k, c->khkw), r = k - o * c->khkw;
  const long kh = QUO(r, c->kw), kw = r - kh * c->kw;
  const long hw = c->h * c->w;
  const long n = QUO(j, hw), rest = j - n * hw;
  const long h = QUO(rest, c->w), w = rest - h * c->w;
  const long th = h + c->p0 - kh * c->d0, tw = w + c->p1 - kw * c->d1;
  if (th < 0 || tw < 0) return (T)0;
  const long p = QUO(th, c->s0), q = QUO(tw, c->s1);
  if (p * c->s0 != th || q * c->s1 != tw || p >= c->oh || q >= c->ow) return (T)0;
  return b[c->b_base + n * c->ys0 + o * c->ys1 + p * c->ys2 + q * c->ys3];
#endif
}

// Element offset of C[i, j] is c_row(i) + c_col(j): the row term is the
// output channel's (or matmul row's), the column term the position's.
inline long c_row(const gemm_ctx *c, long i) {
#if MODE == 0
  return c->c_base + i * c->c_rs;
#elif MODE == 1
  return c->c_base + i * c->ys1;
#elif MODE == 2
  return c->c_base + i * c->xs1;
#else
  return c->c_base + i * (c->splits != 1 ? c->n : c->ws0);
#endif
}

inline long c_col(const gemm_ctx *c, long j) {
#if MODE == 0
  return j * c->c_cs;
#elif MODE == 1
  const long n = QUO(j, c->cols), pq = j - n * c->cols;
  const long p = QUO(pq, c->ow), q = pq - p * c->ow;
  return n * c->ys0 + p * c->ys2 + q * c->ys3;
#elif MODE == 2
  const long hw = c->h * c->w;
  const long n = QUO(j, hw), rest = j - n * hw;
  const long h = QUO(rest, c->w), w = rest - h * c->w;
  return n * c->xs0 + h * c->xs2 + w * c->xs3;
#else
  if (c->splits != 1) return j;
  const long ci = QUO(j, c->khkw), r = j - ci * c->khkw;
  const long kh = QUO(r, c->kw), kw = r - kh * c->kw;
  return ci * c->ws1 + kh * c->ws2 + kw * c->ws3;
#endif
}

// The fused activations of docs/abi.md 10.12, as ref computes them.
inline T activate(T v, int act) {
  switch (act) {
    case 1:  // RELU: NaN < 0 is false, so NaN passes through
      return v < (T)0 ? (T)0 : v;
    case 2:  // GELU, exact erf form
      return (T)0.5 * v * ((T)1 + erf(v * (T)0.70710678118654752440));
    case 3: {  // GELU_TANH
      const T u = (T)0.79788456080286535588 * (v + (T)0.044715 * v * v * v);
      return (T)0.5 * v * ((T)1 + tanh(u));
    }
    case 4:  // SIGMOID
      return (T)1 / ((T)1 + exp(-v));
    case 5:
      return tanh(v);
    default:
      return v;
  }
}

// out = act(alpha * acc + bias + beta * out) for the work-item's elements.
inline void gemm_store(const gemm_ctx *c, __global T *out, __global const T *bias, T acc[RM][RN],
                       long row0, long col0, int ty, int tx, T alpha, T beta, int act,
                       int has_bias) {
  long co[RN];
  for (int q = 0; q < RN; ++q) co[q] = c_col(c, min(col0 + tx + WN * q, c->n - 1));
  for (int r = 0; r < RM; ++r) {
    const long i = row0 + ty + WM * r;
    if (i >= c->m) break;
    const long ro = c_row(c, i);
    for (int q = 0; q < RN; ++q) {
      const long j = col0 + tx + WN * q;
      if (j >= c->n) break;
      T v = alpha * acc[r][q];
      if (has_bias) v += bias[c->bias_base + i * c->bias_rs + j * c->bias_cs];
      const long o = ro + co[q];
      if (beta != (T)0) v += beta * out[o];
      out[o] = activate(v, act);
    }
  }
}

#if KERNEL < 0 || KERNEL == 1
// C tile (get_group_id(1), get_group_id(0)) of batch item get_group_id(2),
// with TK-deep slices of A and B staged through local memory.
__kernel __attribute__((reqd_work_group_size(WN, WM, 1))) void gemm_tiled(
    __global const T *a, ulong a_off, __global const T *b, ulong b_off, __global T *out,
    ulong out_off, __global const T *bias, ulong bias_off, __constant const long *geo, T alpha,
    T beta, int act, int has_bias) {
  // +1 column: the k-fast loaders write columns of a_tile, which would
  // otherwise fall into one bank.
  __local T a_tile[TK][TM + 1];
  __local T b_tile[TK][TN + 1];
  const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
  const int tid = ty * WN + tx;
  gemm_ctx c;
  gemm_ctx_init(&c, geo, (long)get_group_id(2), a_off, b_off, out_off, bias_off);
  const long row0 = (long)get_group_id(1) * TM, col0 = (long)get_group_id(0) * TN;
  T acc[RM][RN];
  for (int r = 0; r < RM; ++r)
    for (int q = 0; q < RN; ++q) acc[r][q] = (T)0;

  for (long k0 = c.k_begin; k0 < c.k_end; k0 += TK) {
    // Consecutive work-items load along A's and B's unit-stride dimension.
    for (int l = 0; l < TM * TK / NT; ++l) {
      const int e = tid + l * NT;
      int r, kk;
      if (c.a_kfast) {
        r = e / TK;
        kk = e - r * TK;
      } else {
        kk = e / TM;
        r = e - kk * TM;
      }
      const long i = row0 + r, k = k0 + kk;
      a_tile[kk][r] = (i < c.m && k < c.k_end) ? load_a(&c, a, i, k) : (T)0;
    }
    for (int l = 0; l < TN * TK / NT; ++l) {
      const int e = tid + l * NT;
      int q, kk;
      if (c.b_nfast) {
        kk = e / TN;
        q = e - kk * TN;
      } else {
        q = e / TK;
        kk = e - q * TK;
      }
      const long j = col0 + q, k = k0 + kk;
      b_tile[kk][q] = (j < c.n && k < c.k_end) ? load_b(&c, b, k, j) : (T)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TK; ++kk) {
      T av[RM], bv[RN];
      for (int r = 0; r < RM; ++r) av[r] = a_tile[kk][ty + WM * r];
      for (int q = 0; q < RN; ++q) bv[q] = b_tile[kk][tx + WN * q];
      for (int r = 0; r < RM; ++r)
        for (int q = 0; q < RN; ++q) acc[r][q] += av[r] * bv[q];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  gemm_store(&c, out, bias, acc, row0, col0, ty, tx, alpha, beta, act, has_bias);
}

#endif  // gemm_tiled

#if KERNEL < 0 || KERNEL == 0
// The same tile, read straight from global memory. Rows and columns past
// the edge load clamped indices and are not stored, so the loop has no
// branches.
__kernel __attribute__((reqd_work_group_size(WN, WM, 1))) void gemm_direct(
    __global const T *a, ulong a_off, __global const T *b, ulong b_off, __global T *out,
    ulong out_off, __global const T *bias, ulong bias_off, __constant const long *geo, T alpha,
    T beta, int act, int has_bias) {
  const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
  gemm_ctx c;
  gemm_ctx_init(&c, geo, (long)get_group_id(2), a_off, b_off, out_off, bias_off);
  const long row0 = (long)get_group_id(1) * TM, col0 = (long)get_group_id(0) * TN;
  long rows[RM], cols[RN];
  for (int r = 0; r < RM; ++r) rows[r] = min(row0 + ty + WM * r, c.m - 1);
  for (int q = 0; q < RN; ++q) cols[q] = min(col0 + tx + WN * q, c.n - 1);
  T acc[RM][RN];
  for (int r = 0; r < RM; ++r)
    for (int q = 0; q < RN; ++q) acc[r][q] = (T)0;
  for (long k = c.k_begin; k < c.k_end; ++k) {
    T av[RM], bv[RN];
    for (int r = 0; r < RM; ++r) av[r] = load_a(&c, a, rows[r], k);
    for (int q = 0; q < RN; ++q) bv[q] = load_b(&c, b, k, cols[q]);
    for (int r = 0; r < RM; ++r)
      for (int q = 0; q < RN; ++q) acc[r][q] += av[r] * bv[q];
  }
  gemm_store(&c, out, bias, acc, row0, col0, ty, tx, alpha, beta, act, has_bias);
}

#endif  // gemm_direct

// Each work-item computes RM rows by 8 adjacent columns in one vector per
// row (RN must be 8): on CPU devices (PoCL) the vector type is what reaches
// the SIMD units, where the scalar kernels above leave them idle (measured
// against gemm_direct on PoCL: docs/performance-log.md, "Measurements behind the
// code's decisions"). Matmul operands with unit-stride columns load B as vectors;
// everything else gathers B's 8 elements one by one.
#define TSR_CAT_(a, b) a##b
#define TSR_CAT(a, b) TSR_CAT_(a, b)
#define T8 TSR_CAT(T, 8)
#if KERNEL < 0 || KERNEL == 2
__kernel __attribute__((reqd_work_group_size(WN, WM, 1))) void gemm_direct_vec(
    __global const T *a, ulong a_off, __global const T *b, ulong b_off, __global T *out,
    ulong out_off, __global const T *bias, ulong bias_off, __constant const long *geo, T alpha,
    T beta, int act, int has_bias) {
  const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
  gemm_ctx c;
  gemm_ctx_init(&c, geo, (long)get_group_id(2), a_off, b_off, out_off, bias_off);
  const long row0 = (long)get_group_id(1) * TM + ty * RM;
  const long col0 = (long)get_group_id(0) * TN + tx * 8;
  long rows[RM], cols[8];
  for (int r = 0; r < RM; ++r) rows[r] = min(row0 + r, c.m - 1);
  for (int q = 0; q < 8; ++q) cols[q] = min(col0 + q, c.n - 1);
  T8 acc[RM];
  for (int r = 0; r < RM; ++r) acc[r] = (T8)((T)0);
#if MODE == 0
  const int vec_b = c.b_cs == 1 && col0 + 8 <= c.n;
  __global const T *ap[RM];
  for (int r = 0; r < RM; ++r) ap[r] = a + c.a_base + rows[r] * c.a_rs + c.k_begin * c.a_cs;
  __global const T *bp = b + c.b_base + c.k_begin * c.b_rs;
  const long a_cs = c.a_cs, b_rs = c.b_rs, b_cs = c.b_cs;
  if (vec_b) {
    for (long k = c.k_begin; k < c.k_end; ++k) {
      const T8 bv = vload8(0, bp + col0);
      bp += b_rs;
      for (int r = 0; r < RM; ++r) {
        acc[r] += *ap[r] * bv;
        ap[r] += a_cs;
      }
    }
  } else {
    for (long k = c.k_begin; k < c.k_end; ++k) {
      const T8 bv = (T8)(bp[cols[0] * b_cs], bp[cols[1] * b_cs], bp[cols[2] * b_cs],
                         bp[cols[3] * b_cs], bp[cols[4] * b_cs], bp[cols[5] * b_cs],
                         bp[cols[6] * b_cs], bp[cols[7] * b_cs]);
      bp += b_rs;
      for (int r = 0; r < RM; ++r) {
        acc[r] += *ap[r] * bv;
        ap[r] += a_cs;
      }
    }
  }
#else
  // The convolutions: each column's part of the im2col index is decomposed
  // once, each k's once per step and shared by the 8 columns and RM rows, so
  // the loop does no division but MODE 2's stride test.
  long cb[8], ch[8], cw[8];  // per column: base offset, row and column terms
  for (int q = 0; q < 8; ++q) {
    const long j = cols[q];
#if MODE == 1
    const long n = QUO(j, c.cols), pq = j - n * c.cols, p = QUO(pq, c.ow);
    cb[q] = n * c.xs0;
    ch[q] = p * c.s0 - c.p0;
    cw[q] = (pq - p * c.ow) * c.s1 - c.p1;
#elif MODE == 2
    const long hw = c.h * c.w, n = QUO(j, hw), rest = j - n * hw, h = QUO(rest, c.w);
    cb[q] = n * c.ys0;
    ch[q] = h + c.p0;
    cw[q] = rest - h * c.w + c.p1;
#else
    const long ci = QUO(j, c.khkw), r = j - ci * c.khkw, kh = QUO(r, c.kw);
    cb[q] = ci * c.xs1;
    ch[q] = kh * c.d0;
    cw[q] = (r - kh * c.kw) * c.d1;
#endif
  }
  long ra[RM];  // per row: A's offset
  for (int r = 0; r < RM; ++r) {
#if MODE == 1
    ra[r] = c.a_base + rows[r] * c.ws0;
#elif MODE == 2
    ra[r] = c.a_base + rows[r] * c.ws1;
#else
    ra[r] = c.a_base + rows[r] * c.ys1;
#endif
  }
  for (long k = c.k_begin; k < c.k_end; ++k) {
    T bs[8];
    long ka;  // k's term of A's offset
#if MODE == 1 || MODE == 2
    const long outer = QUO(k, c.khkw), rr = k - outer * c.khkw, kh = QUO(rr, c.kw);
    const long kw = rr - kh * c.kw;
#if MODE == 1
    ka = outer * c.ws1 + kh * c.ws2 + kw * c.ws3;
    const long kb = c.b_base + outer * c.xs1, dh = kh * c.d0, dw = kw * c.d1;
    for (int q = 0; q < 8; ++q) {
      const long ih = ch[q] + dh, iw = cw[q] + dw;
      bs[q] = (ih >= 0 && ih < c.h && iw >= 0 && iw < c.w)
                  ? b[kb + cb[q] + ih * c.xs2 + iw * c.xs3]
                  : (T)0;
    }
#else
    ka = outer * c.ws0 + kh * c.ws2 + kw * c.ws3;
    const long kb = c.b_base + outer * c.ys1, dh = kh * c.d0, dw = kw * c.d1;
    if (c.s0 == 1 && c.s1 == 1) {
      for (int q = 0; q < 8; ++q) {
        const long p = ch[q] - dh, pw = cw[q] - dw;
        bs[q] = (p >= 0 && pw >= 0 && p < c.oh && pw < c.ow)
                    ? b[kb + cb[q] + p * c.ys2 + pw * c.ys3]
                    : (T)0;
      }
    } else {
      for (int q = 0; q < 8; ++q) {
        const long th = ch[q] - dh, tw = cw[q] - dw;
        T v = (T)0;
        if (th >= 0 && tw >= 0) {
          const long p = QUO(th, c.s0), pw = QUO(tw, c.s1);
          if (p * c.s0 == th && pw * c.s1 == tw && p < c.oh && pw < c.ow) {
            v = b[kb + cb[q] + p * c.ys2 + pw * c.ys3];
          }
        }
        bs[q] = v;
      }
    }
#endif
#else
    const long n = QUO(k, c.cols), pq = k - n * c.cols, p = QUO(pq, c.ow), qq = pq - p * c.ow;
    ka = n * c.ys0 + p * c.ys2 + qq * c.ys3;
    const long kb = c.b_base + n * c.xs0, h0 = p * c.s0 - c.p0, w0 = qq * c.s1 - c.p1;
    for (int q = 0; q < 8; ++q) {
      const long ih = h0 + ch[q], iw = w0 + cw[q];
      bs[q] = (ih >= 0 && ih < c.h && iw >= 0 && iw < c.w)
                  ? b[kb + cb[q] + ih * c.xs2 + iw * c.xs3]
                  : (T)0;
    }
#endif
    const T8 bv = vload8(0, bs);
    for (int r = 0; r < RM; ++r) acc[r] += a[ra[r] + ka] * bv;
  }
#endif
  long co[8];
  for (int q = 0; q < 8; ++q) co[q] = c_col(&c, cols[q]);
  for (int r = 0; r < RM; ++r) {
    const long i = row0 + r;
    if (i >= c.m) break;
    const long ro = c_row(&c, i);
    T vals[8];
    vstore8(acc[r], 0, vals);
    for (int q = 0; q < 8; ++q) {
      const long j = col0 + q;
      if (j >= c.n) break;
      T v = alpha * vals[q];
      if (has_bias) v += bias[c.bias_base + i * c.bias_rs + j * c.bias_cs];
      const long o = ro + co[q];
      if (beta != (T)0) v += beta * out[o];
      out[o] = activate(v, act);
    }
  }
}

#endif  // gemm_direct_vec

// --- packed operands (CPU devices) ----------------------------------------------
//
// gemm_packed is for devices whose local memory is global memory (PoCL's CPU
// device): there the GEMM is bound by how its loads reach the SIMD units, and
// the other kernels' per-element index arithmetic (the im2col decomposition,
// the strides) costs more than the multiply-adds. So two cheap passes first
// copy A and B into the workspace in the order the GEMM reads them, zero-padded
// to whole tiles:
//   At[z][k][i] = A[i, k]   (i < Mp, a multiple of TM)
//   Bt[z][k][j] = B[k, j]   (j < Np, a multiple of TN)
// and the GEMM itself is one work-item per TM x TN tile, TN / 8 vectors of 8
// columns per row held in registers, with no index arithmetic in its loop;
// on PoCL it runs many times faster than the implicit GEMM
// (docs/performance-log.md, "Measurements behind the code's decisions"). Work-item
// ids walk the row tiles fastest, so consecutive tiles share B's panel in
// the cache. The sum over k is in ascending order, as in the other kernels.

// The batch item (matmul) or group (convolutions) a packed operand belongs
// to: a split filter gradient's splits share their group's operands.
#if KERNEL < 0 || KERNEL == 3
inline long packed_item(__constant const long *geo, long z) {
#if MODE == 3
  return z / geo[GEO_SPLITS];
#else
  return z;
#endif
}

// At = A packed: one work-item per (k, batch item), the rows in its loop (the
// decomposition of k is the same for all of them).
__kernel void gemm_pack_a(__global const T *a, ulong a_off, __global T *ws, ulong at_off,
                          __constant const long *geo, long mp) {
  const long k = (long)get_global_id(0), item = (long)get_global_id(1);
  const long depth = geo[GEO_K];
  if (k >= depth) return;
  gemm_ctx c;
#if MODE == 3
  gemm_ctx_init(&c, geo, item * geo[GEO_SPLITS], a_off, 0, 0, 0);
#else
  gemm_ctx_init(&c, geo, item, a_off, 0, 0, 0);
#endif
  __global T *dst = ws + (long)at_off + (item * depth + k) * mp;
  long i = 0;
  for (; i < c.m; ++i) dst[i] = load_a(&c, a, i, k);
  for (; i < mp; ++i) dst[i] = (T)0;
}

#define PACK_CHUNK 64

// Bt = B packed: one work-item per (PACK_CHUNK columns, k, batch item). The
// column's position is decomposed once per chunk and then stepped, so the
// loop has no division.
__kernel void gemm_pack_b(__global const T *b, ulong b_off, __global T *ws, ulong bt_off,
                          __constant const long *geo, long np) {
  const long j0 = (long)get_global_id(0) * PACK_CHUNK, k = (long)get_global_id(1);
  const long item = (long)get_global_id(2);
  const long depth = geo[GEO_K];
  if (k >= depth || j0 >= np) return;
  gemm_ctx c;
#if MODE == 3
  gemm_ctx_init(&c, geo, item * geo[GEO_SPLITS], 0, b_off, 0, 0);
#else
  gemm_ctx_init(&c, geo, item, 0, b_off, 0, 0);
#endif
  __global T *dst = ws + (long)bt_off + (item * depth + k) * np;
  const long j_end = min(j0 + PACK_CHUNK, c.n), pad_end = min(j0 + PACK_CHUNK, np);
  long j = j0;
#if MODE == 0
  __global const T *src = b + c.b_base + k * c.b_rs;
  for (; j < j_end; ++j) dst[j] = src[j * c.b_cs];
#elif MODE == 1
  // k = (ci, kh, kw); j = (n, p, q) stepped.
  const long ci = QUO(k, c.khkw), r = k - ci * c.khkw, kh = QUO(r, c.kw), kw = r - kh * c.kw;
  const long base = c.b_base + ci * c.xs1, dh = kh * c.d0 - c.p0, dw = kw * c.d1 - c.p1;
  long n = QUO(j, c.cols), pq = j - n * c.cols, p = QUO(pq, c.ow), q = pq - p * c.ow;
  for (; j < j_end; ++j) {
    const long ih = p * c.s0 + dh, iw = q * c.s1 + dw;
    dst[j] = (ih >= 0 && ih < c.h && iw >= 0 && iw < c.w)
                 ? b[base + n * c.xs0 + ih * c.xs2 + iw * c.xs3]
                 : (T)0;
    if (++q == c.ow) {
      q = 0;
      if (++p == c.oh) {
        p = 0;
        ++n;
      }
    }
  }
#elif MODE == 2
  // k = (o, kh, kw); j = (n, h, w) stepped; dy[n, o, p, q] where
  // p * s0 - p0 + kh * d0 = h.
  const long o = QUO(k, c.khkw), r = k - o * c.khkw, kh = QUO(r, c.kw), kw = r - kh * c.kw;
  const long base = c.b_base + o * c.ys1, dh = c.p0 - kh * c.d0, dw = c.p1 - kw * c.d1;
  const long hw = c.h * c.w;
  long n = QUO(j, hw), rest = j - n * hw, h = QUO(rest, c.w), w = rest - h * c.w;
  const int unit = c.s0 == 1 && c.s1 == 1;
  for (; j < j_end; ++j) {
    const long th = h + dh, tw = w + dw;
    T v = (T)0;
    if (th >= 0 && tw >= 0) {
      long p = th, q = tw;
      int hit = 1;
      if (!unit) {
        p = QUO(th, c.s0);
        q = QUO(tw, c.s1);
        hit = p * c.s0 == th && q * c.s1 == tw;
      }
      if (hit && p < c.oh && q < c.ow) v = b[base + n * c.ys0 + p * c.ys2 + q * c.ys3];
    }
    dst[j] = v;
    if (++w == c.w) {
      w = 0;
      if (++h == c.h) {
        h = 0;
        ++n;
      }
    }
  }
#else
  // k = (n, p, q); j = (ci, kh, kw) stepped.
  const long n = QUO(k, c.cols), pq = k - n * c.cols, p = QUO(pq, c.ow), q = pq - p * c.ow;
  const long base = c.b_base + n * c.xs0, h0 = p * c.s0 - c.p0, w0 = q * c.s1 - c.p1;
  long ci = QUO(j, c.khkw), r = j - ci * c.khkw, kh = QUO(r, c.kw), kw = r - kh * c.kw;
  for (; j < j_end; ++j) {
    const long ih = h0 + kh * c.d0, iw = w0 + kw * c.d1;
    dst[j] = (ih >= 0 && ih < c.h && iw >= 0 && iw < c.w)
                 ? b[base + ci * c.xs1 + ih * c.xs2 + iw * c.xs3]
                 : (T)0;
    if (++kw == c.kw) {
      kw = 0;
      if (++kh == c.kh) {
        kh = 0;
        ++ci;
      }
    }
  }
#endif
  for (; j < pad_end; ++j) dst[j] = (T)0;
}

#define VN (TN / 8)

// C tile (get_global_id(0) * TM rows, get_global_id(1) * TN columns) of item
// get_global_id(2) from At and Bt; the epilogue is gemm_store's.
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void gemm_packed(
    __global const T *ws, ulong at_off, ulong bt_off, long mp, long np, __global T *out,
    ulong out_off, __global const T *bias, ulong bias_off, __constant const long *geo, T alpha,
    T beta, int act, int has_bias) {
  const long z = (long)get_global_id(2);
  gemm_ctx c;
  gemm_ctx_init(&c, geo, z, 0, 0, out_off, bias_off);
  const long row0 = (long)get_global_id(0) * TM, col0 = (long)get_global_id(1) * TN;
  const long item = packed_item(geo, z), depth = geo[GEO_K];
  __global const T *ap = ws + (long)at_off + (item * depth + c.k_begin) * mp + row0;
  __global const T *bp = ws + (long)bt_off + (item * depth + c.k_begin) * np + col0;
  T8 acc[TM][VN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int v = 0; v < VN; ++v) acc[r][v] = (T8)((T)0);
  for (long k = c.k_begin; k < c.k_end; ++k) {
    T8 bv[VN];
#pragma unroll
    for (int v = 0; v < VN; ++v) bv[v] = vload8(v, bp);
#pragma unroll
    for (int r = 0; r < TM; ++r) {
      const T8 av = (T8)(ap[r]);
#pragma unroll
      for (int v = 0; v < VN; ++v) acc[r][v] += av * bv[v];
    }
    ap += mp;
    bp += np;
  }
  T vals[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int v = 0; v < VN; ++v) vstore8(acc[r][v], v, vals[r]);
  gemm_store(&c, out, bias, vals, row0, col0, 0, 0, alpha, beta, act, has_bias);
}
#endif  // the packed kernels
