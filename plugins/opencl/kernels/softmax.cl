// SOFTMAX and SOFTMAX_BACKWARD (log and not) over one axis.
//
// Build options: -DTSR_DT=0 (float32, computed in float) or 1 (float64).
// The operands are seen as ref's groups (plugins/cpu/groups.h): one group
// per index of the dimensions other than the axis, described by a
// __constant long array laid out as G_* below (strides in elements, per
// operand k). Two variants: a work-group per group, whose tree reductions
// in local memory give the max and the sums (long axes, contiguous along
// the axis), and a work-item per group, scanning the axis (short axes, or
// an axis that is not the contiguous dimension, so neighbouring work-items
// read neighbouring elements). Each reads x three times (max, sum, write):
// bandwidth-bound; the tree costs log2(local) barriers per pass.

#if TSR_DT == 0
#define T float
#elif TSR_DT == 1
#define T double
#else
#error "softmax.cl: TSR_DT must be 0 or 1"
#endif

#define G_OUTER_NDIM 0
#define G_INNER_NDIM 1
#define G_COUNT 2
#define G_SIZE 3
#define G_OUTER_SIZES 4
#define G_INNER_SIZES 12
#define G_OUTER_STRIDES 20  // + d * 8 + k
#define G_INNER_STRIDES 84  // + d * 8 + k

// Element offset of group |index| in operand |k|.
inline ulong g_group_offset(__constant const long *g, int k, ulong index) {
  ulong off = 0;
  for (int d = (int)g[G_OUTER_NDIM] - 1; d >= 0; --d) {
    ulong size = (ulong)g[G_OUTER_SIZES + d];
    off += (index % size) * (ulong)g[G_OUTER_STRIDES + d * 8 + k];
    index /= size;
  }
  return off;
}

// Element offset of element |j| of a group in operand |k|.
inline ulong g_inner_offset(__constant const long *g, int k, ulong j) {
  int nd = (int)g[G_INNER_NDIM];
  if (nd == 1) return j * (ulong)g[G_INNER_STRIDES + k];
  ulong off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    ulong size = (ulong)g[G_INNER_SIZES + d];
    off += (j % size) * (ulong)g[G_INNER_STRIDES + d * 8 + k];
    j /= size;
  }
  return off;
}

// NaN-propagating maximum, as ref's.
#define SM_MAX(r, v) (((v) > (r) || isnan(v)) ? (v) : (r))
#define SM_ADD(r, v) ((r) + (v))

// Folds scratch[0 .. local size) with OP into scratch[0] and returns it to
// every work-item; scratch may be reused after the call.
#define SM_TREE(OP, scratch, lid, local_size, out)                 \
  do {                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                  \
    for (uint h_ = (local_size) / 2; h_ > 0; h_ >>= 1) {           \
      if ((lid) < h_) scratch[lid] = OP(scratch[lid], scratch[(lid) + h_]); \
      barrier(CLK_LOCAL_MEM_FENCE);                                \
    }                                                              \
    out = scratch[0];                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                  \
  } while (0)

__kernel void softmax_wg(__global const T *x, ulong x_off, __global T *y, ulong y_off,
                         __constant const long *g, int is_log, __local T *scratch) {
  const ulong group = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const ulong n = (ulong)g[G_SIZE];
  __global const T *xp = x + x_off + g_group_offset(g, 0, group);
  __global T *yp = y + y_off + g_group_offset(g, 1, group);
  T m = -INFINITY;
  for (ulong j = lid; j < n; j += local_size) m = SM_MAX(m, xp[g_inner_offset(g, 0, j)]);
  scratch[lid] = m;
  SM_TREE(SM_MAX, scratch, lid, local_size, m);
  T sum = 0;
  for (ulong j = lid; j < n; j += local_size) sum += exp(xp[g_inner_offset(g, 0, j)] - m);
  scratch[lid] = sum;
  SM_TREE(SM_ADD, scratch, lid, local_size, sum);
  if (is_log) {
    const T lse = log(sum);
    for (ulong j = lid; j < n; j += local_size) {
      yp[g_inner_offset(g, 1, j)] = xp[g_inner_offset(g, 0, j)] - m - lse;
    }
  } else {
    const T scale = (T)1 / sum;
    for (ulong j = lid; j < n; j += local_size) {
      yp[g_inner_offset(g, 1, j)] = exp(xp[g_inner_offset(g, 0, j)] - m) * scale;
    }
  }
}

__kernel void softmax_item(__global const T *x, ulong x_off, __global T *y, ulong y_off,
                           __constant const long *g, int is_log) {
  const ulong group = get_global_id(0);
  if (group >= (ulong)g[G_COUNT]) return;
  const ulong n = (ulong)g[G_SIZE];
  __global const T *xp = x + x_off + g_group_offset(g, 0, group);
  __global T *yp = y + y_off + g_group_offset(g, 1, group);
  T m = -INFINITY;
  for (ulong j = 0; j < n; ++j) m = SM_MAX(m, xp[g_inner_offset(g, 0, j)]);
  T sum = 0;
  for (ulong j = 0; j < n; ++j) sum += exp(xp[g_inner_offset(g, 0, j)] - m);
  if (is_log) {
    const T lse = log(sum);
    for (ulong j = 0; j < n; ++j) yp[g_inner_offset(g, 1, j)] = xp[g_inner_offset(g, 0, j)] - m - lse;
  } else {
    const T scale = (T)1 / sum;
    for (ulong j = 0; j < n; ++j) {
      yp[g_inner_offset(g, 1, j)] = exp(xp[g_inner_offset(g, 0, j)] - m) * scale;
    }
  }
}

// dx = y * (dy - Σ dy·y), or for log-softmax dx = dy - exp(y) · Σ dy.
// Group operands: 0 dy, 1 y, 2 dx.
__kernel void softmax_backward_wg(__global const T *dy, ulong dy_off, __global const T *y,
                                  ulong y_off, __global T *dx, ulong dx_off,
                                  __constant const long *g, int is_log, __local T *scratch) {
  const ulong group = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const ulong n = (ulong)g[G_SIZE];
  __global const T *dyp = dy + dy_off + g_group_offset(g, 0, group);
  __global const T *yp = y + y_off + g_group_offset(g, 1, group);
  __global T *dxp = dx + dx_off + g_group_offset(g, 2, group);
  T sum = 0;
  for (ulong j = lid; j < n; j += local_size) {
    T d = dyp[g_inner_offset(g, 0, j)];
    sum += is_log ? d : d * yp[g_inner_offset(g, 1, j)];
  }
  scratch[lid] = sum;
  SM_TREE(SM_ADD, scratch, lid, local_size, sum);
  for (ulong j = lid; j < n; j += local_size) {
    T d = dyp[g_inner_offset(g, 0, j)];
    T v = yp[g_inner_offset(g, 1, j)];
    dxp[g_inner_offset(g, 2, j)] = is_log ? d - exp(v) * sum : v * (d - sum);
  }
}

__kernel void softmax_backward_item(__global const T *dy, ulong dy_off, __global const T *y,
                                    ulong y_off, __global T *dx, ulong dx_off,
                                    __constant const long *g, int is_log) {
  const ulong group = get_global_id(0);
  if (group >= (ulong)g[G_COUNT]) return;
  const ulong n = (ulong)g[G_SIZE];
  __global const T *dyp = dy + dy_off + g_group_offset(g, 0, group);
  __global const T *yp = y + y_off + g_group_offset(g, 1, group);
  __global T *dxp = dx + dx_off + g_group_offset(g, 2, group);
  T sum = 0;
  for (ulong j = 0; j < n; ++j) {
    T d = dyp[g_inner_offset(g, 0, j)];
    sum += is_log ? d : d * yp[g_inner_offset(g, 1, j)];
  }
  for (ulong j = 0; j < n; ++j) {
    T d = dyp[g_inner_offset(g, 0, j)];
    T v = yp[g_inner_offset(g, 1, j)];
    dxp[g_inner_offset(g, 2, j)] = is_log ? d - exp(v) * sum : v * (d - sum);
  }
}
