// The convolution kernels that are not GEMMs (matmul.cl runs those): the
// second pass of the split-depth filter gradient and the bias gradient.
// Both sum in an order fixed by the shape, with no atomics, so they are
// bit-reproducible.
//
// Build options: -DT=float|double, -DRED_WG=<work-group size of conv_dbias,
// a power of two>.

#ifndef T
#define T float
#endif
#ifndef RED_WG
#define RED_WG 256
#endif

// Keep in sync with ocl_matmul.h (and matmul.cl).
#define GEO_M 0
#define GEO_N 1
#define GEO_SPLITS 15
#define GEO_OG 17
#define GEO_OH 20
#define GEO_OW 21
#define GEO_KH 22
#define GEO_KW 23
#define GEO_WS 34
#define GEO_YS 38
#define GEO_BIAS_STRIDE 42
#define GEO_GROUPS 43
#define GEO_NIMG 44

// dw[o, ci, kh, kw] = the sum over the splits, in split order, of the
// partial products the GEMM left in |part| ([splits][groups][Og][Cg*KH*KW]).
// One work-item per element of dw; bandwidth-bound.
__kernel void conv_filter_reduce(__global const T *part, ulong part_off, __global T *dw,
                                 ulong dw_off, __constant const long *geo) {
  const long m = geo[GEO_M], n = geo[GEO_N];
  const long total = geo[GEO_GROUPS] * m * n;
  const long e = (long)get_global_id(0);
  if (e >= total) return;
  const long splits = geo[GEO_SPLITS];
  T sum = (T)0;
  for (long s = 0; s < splits; ++s) sum += part[(long)part_off + s * total + e];
  const long o = e / n, j = e - o * n;  // o over all groups: g * Og + i
  const long khkw = geo[GEO_KH] * geo[GEO_KW];
  const long ci = j / khkw, r = j - ci * khkw;
  const long kh = r / geo[GEO_KW], kw = r - kh * geo[GEO_KW];
  dw[(long)dw_off + o * geo[GEO_WS] + ci * geo[GEO_WS + 1] + kh * geo[GEO_WS + 2] +
     kw * geo[GEO_WS + 3]] = sum;
}

// dbias[o] = the sum of dy[n, o, p, q] over n, p, q. One work-group per
// output channel: each work-item sums a strided subset in order, then a
// tree in local memory combines them in a fixed order.
__kernel __attribute__((reqd_work_group_size(RED_WG, 1, 1))) void conv_dbias(
    __global const T *dy, ulong dy_off, __global T *dbias, ulong dbias_off,
    __constant const long *geo) {
  __local T partial[RED_WG];
  const long o = (long)get_group_id(0);
  const int lid = (int)get_local_id(0);
  const long ow = geo[GEO_OW], cols = geo[GEO_OH] * ow;
  const long count = geo[GEO_NIMG] * cols;
  const long base = (long)dy_off + o * geo[GEO_YS + 1];
  T sum = (T)0;
  for (long e = lid; e < count; e += RED_WG) {
    const long n = e / cols, pq = e - n * cols;
    const long p = pq / ow, q = pq - p * ow;
    sum += dy[base + n * geo[GEO_YS] + p * geo[GEO_YS + 2] + q * geo[GEO_YS + 3]];
  }
  partial[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = RED_WG / 2; span > 0; span >>= 1) {
    if (lid < span) partial[lid] += partial[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) dbias[(long)dbias_off + o * geo[GEO_BIAS_STRIDE]] = partial[0];
}
