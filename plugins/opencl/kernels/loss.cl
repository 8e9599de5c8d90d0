// CROSS_ENTROPY and CROSS_ENTROPY_BACKWARD over logits [N, C].
//
// Build options: -DTSR_DT=0 (float32, computed in float) or 1 (float64).
//
// Targets are data: one outside [0, C) that is not ignore_index is an error
// only the device can see. ce_targets_check (one work-group) counts the
// rows that are not ignored and records the first bad row into a small info
// block of the plan's workspace: info[0] = rows counted (R), info[1] = the
// first bad row or -1, info[2] = its target. The kernels never index with a
// bad target; a bad row's loss and gradient are NaN, and so is a reduced
// loss that includes it. Nothing is atomic, so results are reproducible.

#if TSR_DT == 0
#define T float
#elif TSR_DT == 1
#define T double
#else
#error "loss.cl: TSR_DT must be 0 or 1"
#endif

#define CE_MAX(r, v) (((v) > (r) || isnan(v)) ? (v) : (r))
#define CE_ADD(r, v) ((r) + (v))

// Folds scratch[0 .. local size) with OP into scratch[0] and gives it to
// every work-item; scratch may be reused after it.
#define CE_TREE(OP, scratch, lid, local_size, out)                          \
  do {                                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
    for (uint h_ = (local_size) / 2; h_ > 0; h_ >>= 1) {                    \
      if ((lid) < h_) scratch[lid] = OP(scratch[lid], scratch[(lid) + h_]); \
      barrier(CLK_LOCAL_MEM_FENCE);                                         \
    }                                                                       \
    out = scratch[0];                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
  } while (0)

inline int ce_bad(long t, long classes, long ignore) {
  return t != ignore && (t < 0 || t >= classes);
}

// One work-group: info[0..3) as described above.
__kernel void ce_targets_check(__global const long *target, ulong t_off, ulong t_stride, ulong rows,
                               long classes, long ignore, __global long *info, ulong info_off,
                               __local long *counts, __local long *bads) {
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  long count = 0, bad = LONG_MAX;
  for (ulong n = lid; n < rows; n += local_size) {
    long t = target[t_off + n * t_stride];
    if (t == ignore) continue;
    if (t < 0 || t >= classes) {
      bad = min(bad, (long)n);
    } else {
      ++count;
    }
  }
  counts[lid] = count;
  bads[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = local_size / 2; h > 0; h >>= 1) {
    if (lid < h) {
      counts[lid] += counts[lid + h];
      bads[lid] = min(bads[lid], bads[lid + h]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    info[info_off] = counts[0];
    info[info_off + 1] = bads[0] == LONG_MAX ? -1 : bads[0];
    info[info_off + 2] = bads[0] == LONG_MAX ? 0 : target[t_off + (ulong)bads[0] * t_stride];
  }
}

// One work-group per row n: lse[n], and loss[n] (|per_row|, reduction NONE)
// or part[n] for ce_loss_reduce.
__kernel void ce_forward_wg(__global const T *logits, ulong l_off, ulong ls0, ulong ls1,
                            __global const long *target, ulong t_off, ulong t_stride,
                            __global T *loss, ulong loss_off, ulong loss_stride,
                            __global float *lse, ulong lse_off, ulong lse_stride,
                            __global T *part, ulong part_off, long classes, long ignore, T eps,
                            int per_row, __local T *scratch) {
  const ulong n = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const ulong c_count = (ulong)classes;
  __global const T *xp = logits + l_off + n * ls0;
  T m = -INFINITY;
  for (ulong c = lid; c < c_count; c += local_size) m = CE_MAX(m, xp[c * ls1]);
  scratch[lid] = m;
  CE_TREE(CE_MAX, scratch, lid, local_size, m);
  T sum = 0;
  for (ulong c = lid; c < c_count; c += local_size) sum += exp(xp[c * ls1] - m);
  scratch[lid] = sum;
  CE_TREE(CE_ADD, scratch, lid, local_size, sum);
  T row_sum = 0;
  if (eps != 0) {
    for (ulong c = lid; c < c_count; c += local_size) row_sum += xp[c * ls1];
    scratch[lid] = row_sum;
    CE_TREE(CE_ADD, scratch, lid, local_size, row_sum);
  }
  if (lid != 0) return;
  const T l = m + log(sum);
  lse[lse_off + n * lse_stride] = (float)l;
  const long t = target[t_off + n * t_stride];
  T value = 0;
  if (ce_bad(t, classes, ignore)) {
    value = NAN;
  } else if (t != ignore) {
    value = l;
    if (eps != 1) value -= (1 - eps) * xp[(ulong)t * ls1];
    if (eps != 0) value -= eps / (T)classes * row_sum;
  }
  if (per_row) {
    loss[loss_off + n * loss_stride] = value;
  } else {
    part[part_off + n] = value;
  }
}

// One work-group: loss = Σ part (SUM) or Σ part / R (MEAN, NaN when R = 0).
__kernel void ce_loss_reduce(__global const T *part, ulong part_off, ulong rows,
                             __global const long *info, ulong info_off, int mean,
                             __global T *loss, ulong loss_off, __local T *scratch) {
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  T sum = 0;
  for (ulong n = lid; n < rows; n += local_size) sum += part[part_off + n];
  scratch[lid] = sum;
  CE_TREE(CE_ADD, scratch, lid, local_size, sum);
  if (lid == 0) loss[loss_off] = mean ? sum / (T)info[info_off] : sum;
}

// One work-item per logit (c fastest): dlogits[n, c].
__kernel void ce_backward(__global const T *dloss, ulong dloss_off, ulong dloss_stride,
                          __global const T *logits, ulong l_off, ulong ls0, ulong ls1,
                          __global const long *target, ulong t_off, ulong t_stride,
                          __global const float *lse, ulong lse_off, ulong lse_stride,
                          __global T *dlogits, ulong d_off, ulong ds0, ulong ds1, ulong rows,
                          long classes, long ignore, T eps, int reduction,
                          __global const long *info, ulong info_off) {
  const ulong c = get_global_id(0);
  const ulong n = get_global_id(1);
  if (c >= (ulong)classes || n >= rows) return;
  const long t = target[t_off + n * t_stride];
  T v = 0;
  if (ce_bad(t, classes, ignore)) {
    v = NAN;
  } else if (t != ignore) {
    // reduction: 0 NONE (per-row dloss), 1 MEAN (dloss / R), 2 SUM.
    T s = reduction == 0 ? dloss[dloss_off + n * dloss_stride] : dloss[dloss_off];
    if (reduction == 1) s /= (T)info[info_off];
    v = exp(logits[l_off + n * ls0 + c * ls1] - (T)lse[lse_off + n * lse_stride]) - eps / (T)classes;
    if ((long)c == t) v -= 1 - eps;
    v *= s;
  }
  dlogits[d_off + n * ds0 + c * ds1] = v;
}
