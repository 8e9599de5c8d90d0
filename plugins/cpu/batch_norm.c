// BATCH_NORM and BATCH_NORM_BACKWARD: per-channel statistics of x [N, C, ...].
//
// Each channel's M = N * (spatial sizes) elements are packed to doubles and
// handled whole by one thread (mean and biased variance in two passes), so
// results do not depend on the thread count. Channels run in parallel.
#include <math.h>
#include <string.h>

#include "host.h"
#include "norm.h"
#include "plan.h"
#include "signature.h"

// Plan operands.
enum {
  BN_X = 0,
  BN_GAMMA = 1,
  BN_BETA = 2,
  BN_RUNNING_MEAN = 3,
  BN_RUNNING_VAR = 4,
  BN_Y = 5,
  BN_SAVE_MEAN = 6,
  BN_SAVE_INVSTD = 7,
  BN_RUNNING_MEAN_OUT = 8,
  BN_RUNNING_VAR_OUT = 9,
};
enum {
  BNB_DY = 0,
  BNB_X = 1,
  BNB_GAMMA = 2,
  BNB_SAVE_MEAN = 3,
  BNB_SAVE_INVSTD = 4,
  BNB_DX = 5,
  BNB_DGAMMA = 6,
  BNB_DBETA = 7,
};

typedef struct tsr_cpu_batch_norm_job {
  const tsr_cpu_batch_norm_plan *bn;
  char *const *ptrs;
  double *ws;
} tsr_cpu_batch_norm_job;

// Element |c| of the per-channel operand |k|.
static inline char *tsr_cpu_bn_channel(const tsr_cpu_batch_norm_job *job, int32_t k, int64_t c) {
  return job->ptrs[k] + c * job->bn->channel_strides[k];
}

static inline double tsr_cpu_bn_stat_load(const tsr_cpu_batch_norm_job *job, int32_t k, int64_t c) {
  return tsr_cpu_float_load(job->bn->stat_dtype, tsr_cpu_bn_channel(job, k, c));
}

static inline void tsr_cpu_bn_stat_store(const tsr_cpu_batch_norm_job *job, int32_t k, int64_t c,
                                         double v) {
  tsr_cpu_float_store(job->bn->stat_dtype, tsr_cpu_bn_channel(job, k, c), v);
}

// Channels [begin, end) of the forward.
static void tsr_cpu_batch_norm_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const tsr_cpu_batch_norm_job *job = arg;
  const tsr_cpu_batch_norm_plan *bn = job->bn;
  const tsr_cpu_groups *g = &bn->groups;
  const int64_t m = g->size;
  double *v = job->ws + (int64_t)thread_index * bn->slot_doubles;
  int64_t off[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int64_t c = begin; c < end; ++c) {
    tsr_cpu_groups_offsets_get(g, c, off);
    tsr_cpu_groups_load(g, 0, bn->dtype, job->ptrs[BN_X] + off[0], v);
    // Read before any write: the running outputs may alias the inputs.
    const double running_mean = tsr_cpu_bn_stat_load(job, BN_RUNNING_MEAN, c);
    const double running_var = tsr_cpu_bn_stat_load(job, BN_RUNNING_VAR, c);
    const double gamma = tsr_cpu_bn_stat_load(job, BN_GAMMA, c);
    const double beta = tsr_cpu_bn_stat_load(job, BN_BETA, c);
    double mean, invstd, new_mean, new_var;
    if (bn->training) {
      mean = tsr_cpu_groups_sum(v, m) / (double)m;
      const double sq = tsr_cpu_groups_sum_sq_dev(v, m, mean);
      const double var = sq / (double)m;
      invstd = 1 / sqrt(var + bn->eps);
      new_mean = (1 - bn->momentum) * running_mean + bn->momentum * mean;
      new_var = (1 - bn->momentum) * running_var + bn->momentum * (sq / (double)(m - 1));
    } else {
      mean = running_mean;
      invstd = 1 / sqrt(running_var + bn->eps);
      new_mean = running_mean;
      new_var = running_var;
    }
    const double scale = invstd * gamma;
    for (int64_t k = 0; k < m; ++k) v[k] = (v[k] - mean) * scale + beta;
    tsr_cpu_groups_store(g, 1, bn->dtype, job->ptrs[BN_Y] + off[1], v);
    tsr_cpu_bn_stat_store(job, BN_SAVE_MEAN, c, mean);
    tsr_cpu_bn_stat_store(job, BN_SAVE_INVSTD, c, invstd);
    tsr_cpu_bn_stat_store(job, BN_RUNNING_MEAN_OUT, c, new_mean);
    tsr_cpu_bn_stat_store(job, BN_RUNNING_VAR_OUT, c, new_var);
  }
}

// Channels [begin, end) of the backward.
static void tsr_cpu_batch_norm_backward_run(void *arg, int64_t begin, int64_t end,
                                            int32_t thread_index) {
  const tsr_cpu_batch_norm_job *job = arg;
  const tsr_cpu_batch_norm_plan *bn = job->bn;
  const tsr_cpu_groups *g = &bn->groups;
  const int64_t m = g->size;
  double *dy = job->ws + (int64_t)thread_index * bn->slot_doubles;
  double *xhat = dy + m;
  int64_t off[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int64_t c = begin; c < end; ++c) {
    tsr_cpu_groups_offsets_get(g, c, off);
    tsr_cpu_groups_load(g, 0, bn->dtype, job->ptrs[BNB_DY] + off[0], dy);
    tsr_cpu_groups_load(g, 1, bn->dtype, job->ptrs[BNB_X] + off[1], xhat);
    const double gamma = tsr_cpu_bn_stat_load(job, BNB_GAMMA, c);
    const double mean = tsr_cpu_bn_stat_load(job, BNB_SAVE_MEAN, c);
    const double invstd = tsr_cpu_bn_stat_load(job, BNB_SAVE_INVSTD, c);
    for (int64_t k = 0; k < m; ++k) xhat[k] = (xhat[k] - mean) * invstd;
    const double dbeta = tsr_cpu_groups_sum(dy, m);
    const double dgamma = tsr_cpu_groups_dot(dy, xhat, m);
    const double scale = gamma * invstd;
    if (bn->training) {
      const double mean_dy = dbeta / (double)m, mean_dy_xhat = dgamma / (double)m;
      for (int64_t k = 0; k < m; ++k) dy[k] = scale * (dy[k] - mean_dy - xhat[k] * mean_dy_xhat);
    } else {
      for (int64_t k = 0; k < m; ++k) dy[k] *= scale;
    }
    tsr_cpu_groups_store(g, 2, bn->dtype, job->ptrs[BNB_DX] + off[2], dy);
    tsr_cpu_bn_stat_store(job, BNB_DGAMMA, c, dgamma);
    tsr_cpu_bn_stat_store(job, BNB_DBETA, c, dbeta);
  }
}

static tsr_status tsr_cpu_batch_norm_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                             char *workspace) {
  const tsr_cpu_batch_norm_plan *bn = &plan->u.batch_norm;
  tsr_cpu_batch_norm_job job = {bn, ptrs, (double *)workspace};
  tsr_parallel_fn fn =
      plan->op == TSR_OP_BATCH_NORM ? tsr_cpu_batch_norm_run : tsr_cpu_batch_norm_backward_run;
  const int64_t channels = bn->groups.count;
  if (channels <= bn->grain) {
    if (channels > 0)
      fn(&job, 0, channels, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  return host->parallel_for(host->ctx, channels, bn->grain, fn, &job);
}

static tsr_status tsr_cpu_batch_norm_plan_build(const tsr_op_signature *signature,
                                                tsr_plugin_plan *plan) {
  static const char *const fwd_names[] = {
      "x", "gamma",     "beta",        "running_mean",     "running_var",
      "y", "save_mean", "save_invstd", "running_mean_out", "running_var_out"};
  static const char *const bwd_names[] = {"dy",          "x",  "gamma",  "save_mean",
                                          "save_invstd", "dx", "dgamma", "dbeta"};
  const int backward = signature->op == TSR_OP_BATCH_NORM_BACKWARD;
  const char *op = backward ? "batch_norm_backward" : "batch_norm";
  const int32_t ni = 5, no = backward ? 3 : 5;
  tsr_status status =
      tsr_cpu_operands_init(signature, plan, ni, ni, no, backward ? bwd_names : fwd_names);
  if (status != TSR_OK)
    return status;
  const tsr_batch_norm_attrs *attrs = signature->attrs;
  double eps = 1e-5, momentum = 0.1;
  uint32_t training = 1;
  if (attrs != NULL) {
    if (TSR_ABI_COVERS(attrs, tsr_batch_norm_attrs, eps))
      eps = attrs->eps;
    if (TSR_ABI_COVERS(attrs, tsr_batch_norm_attrs, momentum))
      momentum = attrs->momentum;
    if (TSR_ABI_COVERS(attrs, tsr_batch_norm_attrs, training))
      training = attrs->training;
  }
  const int32_t k_x = backward ? BNB_X : BN_X;
  const tsr_cpu_operand *x = &plan->operands[k_x];
  status = tsr_cpu_dtype_check(signature, x, TSR_CPU_DTYPES_FLOAT, "batch_norm takes float");
  if (status != TSR_OK)
    return status;
  if (x->rank < 2) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: x rank %d is below 2 (x is [N, C, ...])",
                             op, (int)x->rank);
  }
  const tsr_dtype_t stat_dtype = tsr_cpu_norm_stat_dtype(x->dtype);
  const int64_t channels = x->sizes[1];
  // x-shaped operands: y; dy and dx.
  const int32_t x_shaped[] = {backward ? BNB_DY : BN_Y, BNB_DX};
  for (int32_t i = 0; i < (backward ? 2 : 1) && status == TSR_OK; ++i) {
    const tsr_cpu_operand *operand = &plan->operands[x_shaped[i]];
    status = tsr_cpu_same_dtype_check(signature, x, operand);
    if (status == TSR_OK)
      status = tsr_cpu_same_sizes_check(signature, operand, x);
  }
  if (status != TSR_OK)
    return status;
  for (int32_t k = 0; k < ni + no; ++k) {
    const tsr_cpu_operand *operand = &plan->operands[k];
    if (k == k_x || k == x_shaped[0] || (backward && k == BNB_DX))
      continue;
    if (operand->dtype != stat_dtype) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s dtype %s is not allowed: %s", op,
                               operand->name, tsr_cpu_dtype_name(operand->dtype),
                               stat_dtype != x->dtype
                                   ? "statistics of bfloat16 and float16 are float32"
                                   : "statistics have x's dtype");
    }
    if (operand->rank != 1 || operand->sizes[0] != channels) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: %s must be [C] = [%lld] (rank %d, sizes[0] %lld)", op,
                               operand->name, (long long)channels, (int)operand->rank,
                               (long long)(operand->rank > 0 ? operand->sizes[0] : -1));
    }
  }
  int64_t m = 1;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (d != 1)
      m *= x->sizes[d];
  }
  // (With no channels every output is empty, and that succeeds.)
  if (!backward && training != 0 && m < 2 && channels > 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: training needs at least 2 values per channel, x has M = %lld", op,
                             (long long)m);
  }
  for (int32_t o = 0; o < no && status == TSR_OK; ++o) {
    status = tsr_cpu_output_overlap_check(signature, &plan->operands[ni + o]);
  }
  // The running outputs may alias the running inputs exactly; nothing else
  // may alias.
  if (status == TSR_OK)
    status = tsr_cpu_alias_check(signature, plan, 1);
  if (status != TSR_OK)
    return status;
  for (int32_t o = 0; o < no; ++o) {
    const tsr_cpu_operand *out = &plan->operands[ni + o];
    uint32_t allowed = 0;
    if (!backward && ni + o == BN_RUNNING_MEAN_OUT)
      allowed = 1u << BN_RUNNING_MEAN;
    if (!backward && ni + o == BN_RUNNING_VAR_OUT)
      allowed = 1u << BN_RUNNING_VAR;
    if ((out->alias_mask & ~allowed) != 0) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: %s aliases an input (only running_mean_out and "
                               "running_var_out may alias running_mean and running_var)",
                               op, out->name);
    }
  }

  tsr_cpu_batch_norm_plan *bn = &plan->u.batch_norm;
  memset(bn, 0, sizeof(*bn));
  const int32_t group_operands[] = {backward ? BNB_DY : BN_X, backward ? BNB_X : BN_Y, BNB_DX};
  const int32_t n = backward ? 3 : 2;
  const int64_t *strides[TSR_CPU_GROUPS_MAX_OPERANDS];
  int64_t elem_sizes[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int32_t k = 0; k < n; ++k) {
    strides[k] = plan->operands[group_operands[k]].strides;
    elem_sizes[k] = plan->operands[group_operands[k]].elem_size;
  }
  const uint32_t inner_mask = ((1u << x->rank) - 1u) & ~2u;
  tsr_cpu_groups_init(&bn->groups, x->rank, x->sizes, inner_mask, n, strides, elem_sizes);
  for (int32_t k = 0; k < ni + no; ++k) {
    const tsr_cpu_operand *operand = &plan->operands[k];
    if (operand->rank == 1) {
      bn->channel_strides[k] = operand->strides[0] * (int64_t)operand->elem_size;
    }
  }
  bn->dtype = x->dtype;
  bn->stat_dtype = stat_dtype;
  bn->training = training != 0;
  // Attributes are converted to the compute type (float32 for all but float64).
  bn->eps = x->dtype == TSR_FLOAT64 ? eps : (double)(float)eps;
  bn->momentum = x->dtype == TSR_FLOAT64 ? momentum : (double)(float)momentum;
  bn->grain = tsr_cpu_groups_grain(m);
  bn->slot_doubles = (backward ? 2 : 1) * m;
  plan->workspace_bytes =
      (uint64_t)tsr_cpu_thread_count_get() * (uint64_t)bn->slot_doubles * sizeof(double) + 64;
  plan->execute = tsr_cpu_batch_norm_execute;
  plan->engine = "ref:batch-norm";
  return TSR_OK;
}

tsr_status tsr_cpu_batch_norm_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  return tsr_cpu_batch_norm_plan_build(signature, plan);
}

tsr_status tsr_cpu_batch_norm_backward_plan_init(const tsr_op_signature *signature,
                                                 tsr_plugin_plan *plan) {
  return tsr_cpu_batch_norm_plan_build(signature, plan);
}
