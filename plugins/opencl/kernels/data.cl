// CONCAT, PAD, GATHER and SCATTER_ADD.
//
// Build options: -DTSR_ES=<element bytes> (1, 2, 4, 8) for the moves, which
// copy bits and so serve every dtype; SCATTER_ADD adds and takes
// -DTSR_DT=<tsr_dtype_t> (0 float32, 1 float64, 4 int32, 5 int64) instead.
// Every kernel is one work-item per output element, consecutive work-items
// on consecutive row-major output positions, so a contiguous output is
// written coalesced. Shapes are __constant long arrays (strides in
// elements) laid out as described at each kernel. Bound by memory
// bandwidth (and, for SCATTER_ADD, by K index reads per element).

#if defined(TSR_ES)
#if TSR_ES == 1
#define E uchar
#elif TSR_ES == 2
#define E ushort
#elif TSR_ES == 4
#define E uint
#else
#define E ulong
#endif
#endif

#if defined(TSR_DT)
#if TSR_DT == 0
#define E float
#define ADD(a, b) ((a) + (b))
#elif TSR_DT == 1
#define E double
#define ADD(a, b) ((a) + (b))
#elif TSR_DT == 4
#define E int
// Int sums wrap: computed unsigned.
#define ADD(a, b) as_int(as_uint(a) + as_uint(b))
#else
#define E long
#define ADD(a, b) as_long(as_ulong(a) + as_ulong(b))
#endif
#endif

// A block copy: shape[0] rank, [1..9) sizes, [9..17) source strides,
// [17..25) destination strides, at shapes + 25 * |which|. CONCAT runs it
// once per input (|which|), the destination offset pointing at the input's
// place along the axis.
__kernel void copy_block(__global const E *src, ulong src_off, __global E *dst, ulong dst_off,
                         __constant const long *shapes, ulong which, ulong count) {
  const ulong i = get_global_id(0);
  if (i >= count) return;
  __constant const long *shape = shapes + 25 * which;
  ulong rem = i, s = 0, d = 0;
  for (int k = (int)shape[0] - 1; k >= 0; --k) {
    ulong size = (ulong)shape[1 + k];
    ulong idx = rem % size;
    rem /= size;
    s += idx * (ulong)shape[9 + k];
    d += idx * (ulong)shape[17 + k];
  }
  dst[dst_off + d] = src[src_off + s];
}

// PAD: shape[0] rank, [1..9) out sizes, [9..17) out strides, [17..25) x
// sizes, [25..33) x strides, [33..41) pad_before. |mode|: 0 CONSTANT
// (|value_bits| in the element's bits), 1 REFLECT, 2 REPLICATE.
__kernel void pad(__global const E *x, ulong x_off, __global E *out, ulong out_off,
                  __constant const long *shape, ulong count, int mode, ulong value_bits) {
  const ulong i = get_global_id(0);
  if (i >= count) return;
  ulong rem = i, o = 0, s = 0;
  int inside = 1;
  for (int k = (int)shape[0] - 1; k >= 0; --k) {
    ulong size = (ulong)shape[1 + k];
    long idx = (long)(rem % size);
    rem /= size;
    o += (ulong)idx * (ulong)shape[9 + k];
    long n = shape[17 + k];
    long j = idx - shape[33 + k];
    if (j < 0 || j >= n) {
      if (mode == 0) {
        inside = 0;
        continue;
      }
      if (mode == 1) {
        j = j < 0 ? -j : 2 * (n - 1) - j;
      } else {
        j = j < 0 ? 0 : n - 1;
      }
    }
    s += (ulong)j * (ulong)shape[25 + k];
  }
#if defined(TSR_DT)
  out[out_off + o] = inside ? x[x_off + s] : (E)0;
#else
  out[out_off + o] = inside ? x[x_off + s] : (E)value_bits;
#endif
}

// The index of GATHER and SCATTER_ADD: int32 (|is64| 0) or int64.
inline long index_at(__global const int *index, ulong off, ulong stride, ulong k, int is64) {
  if (is64) return ((__global const long *)index)[off + k * stride];
  return index[off + k * stride];
}

// One work-group: info[1] = the first k whose index is outside [0, size)
// (or -1), info[2] = that index. No atomics: a tree of minima.
__kernel void index_check(__global const int *index, ulong index_off, ulong index_stride,
                          int is64, ulong k_count, long size, __global long *info,
                          ulong info_off, __local long *bads) {
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  long bad = LONG_MAX;
  for (ulong k = lid; k < k_count; k += local_size) {
    long j = index_at(index, index_off, index_stride, k, is64);
    if (j < 0 || j >= size) bad = min(bad, (long)k);
  }
  bads[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = local_size / 2; h > 0; h >>= 1) {
    if (lid < h) bads[lid] = min(bads[lid], bads[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    info[info_off] = 0;
    info[info_off + 1] = bads[0] == LONG_MAX ? -1 : bads[0];
    info[info_off + 2] =
        bads[0] == LONG_MAX ? 0 : index_at(index, index_off, index_stride, (ulong)bads[0], is64);
  }
}

// GATHER: out (rank shape[0], sizes [1..9), strides [9..17)) from x
// (strides [17..25)) with out's position on |axis| mapped through the index.
// A bad index reads nothing (index_check reports it; out is then
// unspecified).
__kernel void gather(__global const E *x, ulong x_off, __global const int *index, ulong index_off,
                     ulong index_stride, int is64, __global E *out, ulong out_off,
                     __constant const long *shape, ulong count, int axis, long size) {
  const ulong i = get_global_id(0);
  if (i >= count) return;
  ulong rem = i, o = 0, s = 0;
  for (int k = (int)shape[0] - 1; k >= 0; --k) {
    ulong n = (ulong)shape[1 + k];
    ulong idx = rem % n;
    rem /= n;
    o += idx * (ulong)shape[9 + k];
    if (k == axis) {
      long j = index_at(index, index_off, index_stride, idx, is64);
      if (j < 0 || j >= size) return;
      idx = (ulong)j;
    }
    s += idx * (ulong)shape[17 + k];
  }
  out[out_off + o] = x[x_off + s];
}

#if defined(TSR_DT)
// SCATTER_ADD: each out element (rank shape[0], sizes [1..9), strides
// [9..17)) adds, in index order, the src elements (strides [17..25), |k_count|
// on |axis|) whose index names its position on the axis. One work-item owns
// an element: no atomics, and the order of the additions is ref's.
__kernel void scatter_add(__global const E *src, ulong src_off, __global const int *index,
                          ulong index_off, ulong index_stride, int is64, __global E *out,
                          ulong out_off, __constant const long *shape, ulong count, int axis,
                          ulong k_count) {
  const ulong i = get_global_id(0);
  if (i >= count) return;
  ulong rem = i, o = 0, s = 0, pos = 0;
  for (int k = (int)shape[0] - 1; k >= 0; --k) {
    ulong n = (ulong)shape[1 + k];
    ulong idx = rem % n;
    rem /= n;
    o += idx * (ulong)shape[9 + k];
    if (k == axis) {
      pos = idx;
    } else {
      s += idx * (ulong)shape[17 + k];
    }
  }
  const ulong step = (ulong)shape[17 + axis];
  E acc = out[out_off + o];
  for (ulong k = 0; k < k_count; ++k) {
    if (index_at(index, index_off, index_stride, k, is64) == (long)pos) {
      acc = ADD(acc, src[src_off + s + k * step]);
    }
  }
  out[out_off + o] = acc;
}
#endif
