// POOL2D and POOL2D_BACKWARD (MAX and AVG) of the OpenCL plugin.
//
// The forward runs one work-item per output row, the backward one per dx
// row: the row's position and its vertical taps are worked out once, so the
// loop over the row's elements divides only where a stride or dilation
// other than 1 asks for it. One item per element decomposed its position
// with several 64-bit divisions (tens of cycles each on a CPU device) for a
// window of a few loads.
// The backward gathers: each dx element sums the dy of the windows that
// cover it, in a fixed order, so it needs no float atomics and is
// bit-reproducible. MAX backward trusts the gather only for planes whose
// indices all lie inside their own windows (what the forward writes); a
// first pass (pool_max_check) marks the other planes, and their dx elements
// scan every output of the plane instead, which is slow but exact.
//
// Build options: -DT=float|double, -DCHK_WG=<pool_max_check's work-group
// size, a power of two>.

#ifndef T
#define T float
#endif
#ifndef CHK_WG
#define CHK_WG 64
#endif

// Keep in sync with ocl_matmul.h.
#define P_N 0
#define P_C 1
#define P_H 2
#define P_W 3
#define P_OH 4
#define P_OW 5
#define P_K0 6
#define P_K1 7
#define P_S0 8
#define P_S1 9
#define P_PB0 10
#define P_PB1 11
#define P_PA0 12
#define P_PA1 13
#define P_D0 14
#define P_D1 15
#define P_XS 16
#define P_YS 20
#define P_IS 24
#define P_CIP 29

inline long div_ceil_l(long a, long b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// a / b for 0 <= a and 0 < b, in 32 bits when both fit (several times
// cheaper than the 64-bit division).
inline long quo_l(long a, long b) {
  return (a <= INT_MAX && b <= INT_MAX) ? (long)((uint)a / (uint)b) : a / b;
}

// Taps [*lo, *hi) of a window starting at |start| that land in [0, in), and
// the number the AVG divisor counts (ref's taps_get).
inline long pool_taps(long start, long k, long dil, long in, long pad_after, int cip, long *lo,
                      long *hi) {
  *lo = clamp(div_ceil_l(-start, dil), 0L, k);
  *hi = clamp(div_ceil_l(in - start, dil), *lo, k);
  return cip ? clamp(div_ceil_l(in + pad_after - start, dil), 0L, k) : *hi - *lo;
}

// Taps of a window along one dimension; a dilation of 1 needs no division.
inline long pool_taps_fast(long start, long k, long dil, long in, long pad_after, int cip,
                           long *lo, long *hi) {
  if (dil != 1) return pool_taps(start, k, dil, in, pad_after, cip, lo, hi);
  *lo = clamp(-start, 0L, k);
  *hi = clamp(in - start, *lo, k);
  return cip ? clamp(in + pad_after - start, 0L, k) : *hi - *lo;
}

// MAX: y = the first maximum of the window (NaN wins), indices = h * W + w.
// AVG: y = window sum / divisor. One work-item per output row (n, c, p).
__kernel void pool_forward(__global const T *x, ulong x_off, __global T *y, ulong y_off,
                           __global long *indices, ulong i_off, __constant const long *geo,
                           int is_max) {
  const long ow = geo[P_OW], oh = geo[P_OH], c = geo[P_C];
  const long rows = geo[P_N] * c * oh;
  long e = (long)get_global_id(0);
  if (e >= rows) return;
  const long p = e % oh;
  e /= oh;
  const long ch = e % c, n = e / c;
  const long h = geo[P_H], w = geo[P_W];
  const long d0 = geo[P_D0], d1 = geo[P_D1], k1 = geo[P_K1], s1 = geo[P_S1], pb1 = geo[P_PB1];
  const long pa1 = geo[P_PA1];
  const int cip = (int)geo[P_CIP];
  const long sh = p * geo[P_S0] - geo[P_PB0];
  long lo0, hi0;
  const long cnt0 = pool_taps(sh, geo[P_K0], d0, h, geo[P_PA0], cip, &lo0, &hi0);
  const long xbase = (long)x_off + n * geo[P_XS] + ch * geo[P_XS + 1];
  const long xs2 = geo[P_XS + 2], xs3 = geo[P_XS + 3];
  const long ybase = (long)y_off + n * geo[P_YS] + ch * geo[P_YS + 1] + p * geo[P_YS + 2];
  const long ys3 = geo[P_YS + 3];
  const long ibase = (long)i_off + n * geo[P_IS] + ch * geo[P_IS + 1] + p * geo[P_IS + 2];
  const long is3 = geo[P_IS + 3];
  for (long q = 0; q < ow; ++q) {
    const long sw = q * s1 - pb1;
    long lo1, hi1;
    const long cnt1 = pool_taps_fast(sw, k1, d1, w, pa1, cip, &lo1, &hi1);
    if (is_max) {
      T best = (T)0;
      long chosen = -1;
      for (long kh = lo0; kh < hi0; ++kh) {
        const long ih = sh + kh * d0;
        for (long kw = lo1; kw < hi1; ++kw) {
          const long iw = sw + kw * d1;
          const T v = x[xbase + ih * xs2 + iw * xs3];
          if (chosen < 0 || (!isnan(best) && (v > best || isnan(v)))) {
            best = v;
            chosen = ih * w + iw;
          }
        }
      }
      y[ybase + q * ys3] = best;
      indices[ibase + q * is3] = chosen;
    } else {
      T sum = (T)0;
      for (long kh = lo0; kh < hi0; ++kh) {
        const long ih = sh + kh * d0;
        for (long kw = lo1; kw < hi1; ++kw) sum += x[xbase + ih * xs2 + (sw + kw * d1) * xs3];
      }
      y[ybase + q * ys3] = sum / (T)(cnt0 * cnt1);
    }
  }
}

// flags[plane] = bit 0 when an index of the plane lies in [0, H*W) but
// outside its own window, bit 1 when one lies outside [0, H*W); bad[plane] =
// the row-major position (in the whole indices tensor) of the plane's first
// index outside [0, H*W), or -1. One work-group per (n, c) plane; reduced in
// local memory.
__kernel __attribute__((reqd_work_group_size(CHK_WG, 1, 1))) void pool_max_check(
    __global const long *indices, ulong i_off, __global int *flags, ulong f_off,
    __global long *bad, ulong b_off, __constant const long *geo) {
  __local int bits[CHK_WG];
  __local long first[CHK_WG];
  const long plane = (long)get_group_id(0);
  const int lid = (int)get_local_id(0);
  const long c = geo[P_C], ow = geo[P_OW], oh = geo[P_OH], h = geo[P_H], w = geo[P_W];
  const long n = plane / c, ch = plane - n * c;
  const long base = (long)i_off + n * geo[P_IS] + ch * geo[P_IS + 1];
  int flag = 0;
  long first_bad = LONG_MAX;
  for (long e = lid; e < oh * ow; e += CHK_WG) {
    const long p = e / ow, q = e - p * ow;
    const long v = indices[base + p * geo[P_IS + 2] + q * geo[P_IS + 3]];
    if (v < 0 || v >= h * w) {
      flag |= 2;
      first_bad = min(first_bad, e);
      continue;
    }
    const long th = v / w - (p * geo[P_S0] - geo[P_PB0]);
    const long tw = v % w - (q * geo[P_S1] - geo[P_PB1]);
    const int inside = th >= 0 && tw >= 0 && th % geo[P_D0] == 0 && tw % geo[P_D1] == 0 &&
                       th / geo[P_D0] < geo[P_K0] && tw / geo[P_D1] < geo[P_K1];
    if (!inside) flag |= 1;
  }
  bits[lid] = flag;
  first[lid] = first_bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = CHK_WG / 2; span > 0; span >>= 1) {
    if (lid < span) {
      bits[lid] |= bits[lid + span];
      first[lid] = min(first[lid], first[lid + span]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    flags[(long)f_off + plane] = bits[0];
    bad[(long)b_off + plane] = first[0] == LONG_MAX ? -1 : plane * oh * ow + first[0];
  }
}

// info[1] = the first out-of-range index's position over all planes (-1 for
// none), info[2] = its value: the block ops_reduce.c's error watch reads.
// One work-item; it reads one long per plane.
__kernel void pool_max_error_info(__global const long *indices, ulong i_off,
                                  __global const long *bad, ulong b_off, __global long *info,
                                  ulong info_off, __constant const long *geo) {
  const long planes = geo[P_N] * geo[P_C];
  const long c = geo[P_C], ow = geo[P_OW], oh = geo[P_OH];
  long pos = -1;
  for (long plane = 0; plane < planes && pos < 0; ++plane) pos = bad[(long)b_off + plane];
  long value = 0;
  if (pos >= 0) {
    const long plane = pos / (oh * ow), e = pos - plane * oh * ow;
    const long n = plane / c, ch = plane - n * c, p = e / ow, q = e - p * ow;
    value = indices[(long)i_off + n * geo[P_IS] + ch * geo[P_IS + 1] + p * geo[P_IS + 2] +
                    q * geo[P_IS + 3]];
  }
  info[(long)info_off] = 0;
  info[(long)info_off + 1] = pos;
  info[(long)info_off + 2] = value;
}

// dx[n, c, h, w] = the sum of dy over the windows covering (h, w): MAX those
// whose index is h * W + w, AVG each divided by its divisor. Indices outside
// [0, H*W) select nothing (never an out-of-bounds access). One work-item per
// dx row (n, c, h); the windows are visited in the same order for every
// element (kh, then kw, both descending).
__kernel void pool_backward(__global const T *dy, ulong dy_off, __global const long *indices,
                            ulong i_off, __global const int *flags, ulong f_off, __global T *dx,
                            ulong dx_off, __constant const long *geo, int is_max) {
  const long h = geo[P_H], w = geo[P_W], c = geo[P_C];
  const long rows = geo[P_N] * c * h;
  long e = (long)get_global_id(0);
  if (e >= rows) return;
  const long ih = e % h;
  e /= h;
  const long ch = e % c, n = e / c;
  const long oh = geo[P_OH], ow = geo[P_OW];
  const long s0 = geo[P_S0], s1 = geo[P_S1], d0 = geo[P_D0], d1 = geo[P_D1];
  const long k0 = geo[P_K0], k1 = geo[P_K1], pb1 = geo[P_PB1];
  const int cip = (int)geo[P_CIP];
  const long ybase = (long)dy_off + n * geo[P_YS] + ch * geo[P_YS + 1];
  const long ys2 = geo[P_YS + 2], ys3 = geo[P_YS + 3];
  const long ibase = (long)i_off + n * geo[P_IS] + ch * geo[P_IS + 1];
  const long is2 = geo[P_IS + 2], is3 = geo[P_IS + 3];
  const long xbase = (long)dx_off + n * geo[P_XS] + ch * geo[P_XS + 1] + ih * geo[P_XS + 2];
  const long xs3 = geo[P_XS + 3];
  const int scan = is_max && (flags[(long)f_off + n * c + ch] & 1);
  for (long iw = 0; iw < w; ++iw) {
    const long target = ih * w + iw;
    T sum = (T)0;
    if (scan) {
      for (long p = 0; p < oh; ++p)
        for (long q = 0; q < ow; ++q)
          if (indices[ibase + p * is2 + q * is3] == target) sum += dy[ybase + p * ys2 + q * ys3];
    } else {
      for (long kh = k0 - 1; kh >= 0; --kh) {
        const long th = ih + geo[P_PB0] - kh * d0;
        if (th < 0) continue;
        const long p = quo_l(th, s0);
        if (p * s0 != th || p >= oh) continue;
        long cnt0 = 1;
        if (!is_max) {
          long lo, hi;
          cnt0 = pool_taps(p * s0 - geo[P_PB0], k0, d0, h, geo[P_PA0], cip, &lo, &hi);
        }
        for (long kw = k1 - 1; kw >= 0; --kw) {
          const long tw = iw + pb1 - kw * d1;
          if (tw < 0) continue;
          const long q = s1 == 1 ? tw : quo_l(tw, s1);
          if (q * s1 != tw || q >= ow) continue;
          if (is_max) {
            if (indices[ibase + p * is2 + q * is3] == target) sum += dy[ybase + p * ys2 + q * ys3];
          } else {
            long lo, hi;
            const long cnt1 = pool_taps_fast(q * s1 - pb1, k1, d1, w, geo[P_PA1], cip, &lo, &hi);
            sum += dy[ybase + p * ys2 + q * ys3] / (T)(cnt0 * cnt1);
          }
        }
      }
    }
    dx[xbase + iw * xs3] = sum;
  }
}
