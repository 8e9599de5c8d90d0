// LAYER_NORM, BATCH_NORM and their backward ops.
//
// Build options: -DTSR_DT=0 (float32, computed in float) or 1 (float64).
// Operands are seen as ref's groups (plugins/cpu/groups.h; the plans in
// tsr_cpu/cpu_plan.h), laid out as G_* (strides in elements, per operand
// k): a layer-norm group is a row over the normalised axes, a batch-norm
// group a channel. A work-group owns a group: a tree in local memory gives
// its mean, then (two passes, as ref) the sum of squared deviations, so
// results do not depend on anything but the plan. Layer norm's dgamma and
// dbeta sum over rows, a column reduction: one work-item per normalised
// element, rows in order. Bound by memory bandwidth (x read three times);
// the trees cost log2(local) barriers per pass.

#if TSR_DT == 0
#define T float
#elif TSR_DT == 1
#define T double
#else
#error "norm.cl: TSR_DT must be 0 or 1"
#endif

#define G_OUTER_NDIM 0
#define G_INNER_NDIM 1
#define G_COUNT 2
#define G_SIZE 3
#define G_OUTER_SIZES 4
#define G_INNER_SIZES 12
#define G_OUTER_STRIDES 20  // + d * 8 + k
#define G_INNER_STRIDES 84  // + d * 8 + k

inline ulong g_group_offset(__constant const long *g, int k, ulong index) {
  ulong off = 0;
  for (int d = (int)g[G_OUTER_NDIM] - 1; d >= 0; --d) {
    ulong size = (ulong)g[G_OUTER_SIZES + d];
    off += (index % size) * (ulong)g[G_OUTER_STRIDES + d * 8 + k];
    index /= size;
  }
  return off;
}

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

// Sums scratch[0 .. local size) into scratch[0] and gives it to every
// work-item; scratch may be reused after it.
#define N_TREE_SUM(scratch, lid, local_size, out)                          \
  do {                                                                     \
    barrier(CLK_LOCAL_MEM_FENCE);                                          \
    for (uint h_ = (local_size) / 2; h_ > 0; h_ >>= 1) {                   \
      if ((lid) < h_) scratch[lid] += scratch[(lid) + h_];                 \
      barrier(CLK_LOCAL_MEM_FENCE);                                        \
    }                                                                      \
    out = scratch[0];                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                          \
  } while (0)

// Sums of a and of a·b over a group, both trees in one pass.
#define N_TREE_SUM2(sa, sb, lid, local_size, out_a, out_b)                 \
  do {                                                                     \
    barrier(CLK_LOCAL_MEM_FENCE);                                          \
    for (uint h_ = (local_size) / 2; h_ > 0; h_ >>= 1) {                   \
      if ((lid) < h_) {                                                    \
        sa[lid] += sa[(lid) + h_];                                         \
        sb[lid] += sb[(lid) + h_];                                         \
      }                                                                    \
      barrier(CLK_LOCAL_MEM_FENCE);                                        \
    }                                                                      \
    out_a = sa[0];                                                         \
    out_b = sb[0];                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                          \
  } while (0)

// ---------------------------------------------------------------------------
// LAYER_NORM. Group operands: x 0, [gamma 1, beta 2], y, mean, rstd.
__kernel void layer_norm_fwd(__global const T *x, ulong x_off, __global const T *gamma,
                             ulong gamma_off, __global const T *beta, ulong beta_off,
                             __global T *y, ulong y_off, __global T *mean, ulong mean_off,
                             __global T *rstd, ulong rstd_off, __constant const long *g,
                             int affine, T eps, __local T *scratch) {
  const ulong row = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const ulong m = (ulong)g[G_SIZE];
  const int ky = affine ? 3 : 1;
  __global const T *xp = x + x_off + g_group_offset(g, 0, row);
  __global T *yp = y + y_off + g_group_offset(g, ky, row);
  T s = 0;
  for (ulong j = lid; j < m; j += local_size) s += xp[g_inner_offset(g, 0, j)];
  scratch[lid] = s;
  N_TREE_SUM(scratch, lid, local_size, s);
  const T mu = s / (T)m;
  T q = 0;
  for (ulong j = lid; j < m; j += local_size) {
    T d = xp[g_inner_offset(g, 0, j)] - mu;
    q += d * d;
  }
  scratch[lid] = q;
  N_TREE_SUM(scratch, lid, local_size, q);
  const T r = (T)1 / sqrt(q / (T)m + eps);
  if (lid == 0) {
    mean[mean_off + g_group_offset(g, ky + 1, row)] = mu;
    rstd[rstd_off + g_group_offset(g, ky + 2, row)] = r;
  }
  for (ulong j = lid; j < m; j += local_size) {
    T v = (xp[g_inner_offset(g, 0, j)] - mu) * r;
    if (affine) {
      v = v * gamma[gamma_off + g_inner_offset(g, 1, j)] + beta[beta_off + g_inner_offset(g, 2, j)];
    }
    yp[g_inner_offset(g, ky, j)] = v;
  }
}

// LAYER_NORM_BACKWARD's dx. Group operands: dy 0, x 1, mean 2, rstd 3,
// [gamma 4], dx.
__kernel void layer_norm_bwd_dx(__global const T *dy, ulong dy_off, __global const T *x,
                                ulong x_off, __global const T *mean, ulong mean_off,
                                __global const T *rstd, ulong rstd_off, __global const T *gamma,
                                ulong gamma_off, __global T *dx, ulong dx_off,
                                __constant const long *g, int affine, __local T *sa,
                                __local T *sb) {
  const ulong row = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const ulong m = (ulong)g[G_SIZE];
  const int kdx = affine ? 5 : 4;
  __global const T *dyp = dy + dy_off + g_group_offset(g, 0, row);
  __global const T *xp = x + x_off + g_group_offset(g, 1, row);
  __global T *dxp = dx + dx_off + g_group_offset(g, kdx, row);
  const T mu = mean[mean_off + g_group_offset(g, 2, row)];
  const T r = rstd[rstd_off + g_group_offset(g, 3, row)];
  T s1 = 0, s2 = 0;
  for (ulong j = lid; j < m; j += local_size) {
    T gv = dyp[g_inner_offset(g, 0, j)];
    if (affine) gv *= gamma[gamma_off + g_inner_offset(g, 4, j)];
    s1 += gv;
    s2 += gv * (xp[g_inner_offset(g, 1, j)] - mu) * r;
  }
  sa[lid] = s1;
  sb[lid] = s2;
  N_TREE_SUM2(sa, sb, lid, local_size, s1, s2);
  const T mean_g = s1 / (T)m, mean_gx = s2 / (T)m;
  for (ulong j = lid; j < m; j += local_size) {
    T gv = dyp[g_inner_offset(g, 0, j)];
    if (affine) gv *= gamma[gamma_off + g_inner_offset(g, 4, j)];
    T xhat = (xp[g_inner_offset(g, 1, j)] - mu) * r;
    dxp[g_inner_offset(g, kdx, j)] = r * (gv - mean_g - xhat * mean_gx);
  }
}

// LAYER_NORM_BACKWARD's dgamma and dbeta (operands 6 and 7): one work-item
// per normalised element j, summing over rows in order.
__kernel void layer_norm_bwd_affine(__global const T *dy, ulong dy_off, __global const T *x,
                                    ulong x_off, __global const T *mean, ulong mean_off,
                                    __global const T *rstd, ulong rstd_off, __global T *dgamma,
                                    ulong dgamma_off, __global T *dbeta, ulong dbeta_off,
                                    __constant const long *g) {
  const ulong j = get_global_id(0);
  const ulong m = (ulong)g[G_SIZE];
  if (j >= m) return;
  const ulong rows = (ulong)g[G_COUNT];
  const ulong dy_j = g_inner_offset(g, 0, j), x_j = g_inner_offset(g, 1, j);
  T dgv = 0, dbv = 0;
  for (ulong i = 0; i < rows; ++i) {
    T d = dy[dy_off + g_group_offset(g, 0, i) + dy_j];
    T xhat = (x[x_off + g_group_offset(g, 1, i) + x_j] - mean[mean_off + g_group_offset(g, 2, i)]) *
             rstd[rstd_off + g_group_offset(g, 3, i)];
    dgv += d * xhat;
    dbv += d;
  }
  dgamma[dgamma_off + g_inner_offset(g, 6, j)] = dgv;
  dbeta[dbeta_off + g_inner_offset(g, 7, j)] = dbv;
}

// ---------------------------------------------------------------------------
// BATCH_NORM. Groups are channels; operands x 0, y 1 over x's shape. The [C]
// operands come as pointers with offsets and element strides cs[k] (k as
// the plan operand: 1 gamma, 2 beta, 3 running_mean, 4 running_var,
// 6 save_mean, 7 save_invstd, 8 running_mean_out, 9 running_var_out).
__kernel void batch_norm_fwd(__global const T *x, ulong x_off, __global T *y, ulong y_off,
                             __global const T *gamma, ulong gamma_off, __global const T *beta,
                             ulong beta_off, __global const T *rmean, ulong rmean_off,
                             __global const T *rvar, ulong rvar_off, __global T *smean,
                             ulong smean_off, __global T *sinv, ulong sinv_off,
                             __global T *rmean_out, ulong rmean_out_off, __global T *rvar_out,
                             ulong rvar_out_off, __constant const long *g,
                             __constant const long *cs, int training, T eps, T momentum,
                             __local T *scratch) {
  const ulong c = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const ulong m = (ulong)g[G_SIZE];
  __global const T *xp = x + x_off + g_group_offset(g, 0, c);
  __global T *yp = y + y_off + g_group_offset(g, 1, c);
  const T running_mean = rmean[rmean_off + c * cs[3]];
  const T running_var = rvar[rvar_off + c * cs[4]];
  T mu, inv, new_mean, new_var;
  if (training) {
    T s = 0;
    for (ulong j = lid; j < m; j += local_size) s += xp[g_inner_offset(g, 0, j)];
    scratch[lid] = s;
    N_TREE_SUM(scratch, lid, local_size, s);
    mu = s / (T)m;
    T q = 0;
    for (ulong j = lid; j < m; j += local_size) {
      T d = xp[g_inner_offset(g, 0, j)] - mu;
      q += d * d;
    }
    scratch[lid] = q;
    N_TREE_SUM(scratch, lid, local_size, q);
    inv = (T)1 / sqrt(q / (T)m + eps);
    new_mean = (1 - momentum) * running_mean + momentum * mu;
    new_var = (1 - momentum) * running_var + momentum * (q / (T)(m - 1));
  } else {
    mu = running_mean;
    inv = (T)1 / sqrt(running_var + eps);
    new_mean = running_mean;
    new_var = running_var;
  }
  const T scale = inv * gamma[gamma_off + c * cs[1]];
  const T shift = beta[beta_off + c * cs[2]];
  for (ulong j = lid; j < m; j += local_size) {
    yp[g_inner_offset(g, 1, j)] = (xp[g_inner_offset(g, 0, j)] - mu) * scale + shift;
  }
  // The running outputs may alias the running inputs: every work-item has
  // read them above, before this barrier.
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (lid == 0) {
    smean[smean_off + c * cs[6]] = mu;
    sinv[sinv_off + c * cs[7]] = inv;
    rmean_out[rmean_out_off + c * cs[8]] = new_mean;
    rvar_out[rvar_out_off + c * cs[9]] = new_var;
  }
}

// BATCH_NORM_BACKWARD. Group operands dy 0, x 1, dx 2; [C] operands as plan
// operands 2 gamma, 3 save_mean, 4 save_invstd, 6 dgamma, 7 dbeta.
__kernel void batch_norm_bwd(__global const T *dy, ulong dy_off, __global const T *x, ulong x_off,
                             __global T *dx, ulong dx_off, __global const T *gamma,
                             ulong gamma_off, __global const T *smean, ulong smean_off,
                             __global const T *sinv, ulong sinv_off, __global T *dgamma,
                             ulong dgamma_off, __global T *dbeta, ulong dbeta_off,
                             __constant const long *g, __constant const long *cs, int training,
                             __local T *sa, __local T *sb) {
  const ulong c = get_group_id(0);
  const uint lid = (uint)get_local_id(0);
  const uint local_size = (uint)get_local_size(0);
  const ulong m = (ulong)g[G_SIZE];
  __global const T *dyp = dy + dy_off + g_group_offset(g, 0, c);
  __global const T *xp = x + x_off + g_group_offset(g, 1, c);
  __global T *dxp = dx + dx_off + g_group_offset(g, 2, c);
  const T mu = smean[smean_off + c * cs[3]];
  const T inv = sinv[sinv_off + c * cs[4]];
  T s1 = 0, s2 = 0;
  for (ulong j = lid; j < m; j += local_size) {
    T d = dyp[g_inner_offset(g, 0, j)];
    s1 += d;
    s2 += d * (xp[g_inner_offset(g, 1, j)] - mu) * inv;
  }
  sa[lid] = s1;
  sb[lid] = s2;
  N_TREE_SUM2(sa, sb, lid, local_size, s1, s2);
  const T scale = gamma[gamma_off + c * cs[2]] * inv;
  const T mean_dy = s1 / (T)m, mean_dy_xhat = s2 / (T)m;
  for (ulong j = lid; j < m; j += local_size) {
    T d = dyp[g_inner_offset(g, 0, j)];
    if (training) {
      T xhat = (xp[g_inner_offset(g, 1, j)] - mu) * inv;
      d = scale * (d - mean_dy - xhat * mean_dy_xhat);
    } else {
      d *= scale;
    }
    dxp[g_inner_offset(g, 2, j)] = d;
  }
  if (lid == 0) {
    dgamma[dgamma_off + c * cs[6]] = s2;
    dbeta[dbeta_off + c * cs[7]] = s1;
  }
}
