// LAYER_NORM and LAYER_NORM_BACKWARD over axes [axis, rank) of any strides.
//
// Rows (one per index of the leading axes) are packed to doubles and
// normalised whole by one thread: mean and biased variance in two passes.
// The backward's dgamma and dbeta sum over rows: rows are cut into at most
// TSR_CPU_LAYER_NORM_BLOCKS blocks whose size depends only on the shape,
// each block sums its rows in order into its own partial, and the partials
// are added in block order, so the bits do not depend on the thread count.
#include <math.h>
#include <string.h>

#include "host.h"
#include "norm.h"
#include "plan.h"
#include "signature.h"

#define TSR_CPU_LAYER_NORM_BLOCKS 64

typedef struct tsr_cpu_layer_norm_job {
  const tsr_plugin_plan *plan;
  char *const *ptrs;
  double *ws;
} tsr_cpu_layer_norm_job;

// Rows [begin, end) of the forward.
static void tsr_cpu_layer_norm_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const tsr_cpu_layer_norm_job *job = arg;
  const tsr_cpu_layer_norm_plan *ln = &job->plan->u.layer_norm;
  const tsr_cpu_groups *g = &ln->groups;
  const int32_t ni = job->plan->num_inputs;
  const int64_t m = g->size;
  const double *gamma = job->ws;
  const double *beta = job->ws + m;
  double *v =
      job->ws + ln->affine_doubles + ln->partial_doubles + (int64_t)thread_index * ln->slot_doubles;
  int64_t off[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int64_t i = begin; i < end; ++i) {
    tsr_cpu_groups_offsets_get(g, i, off);
    tsr_cpu_groups_load(g, 0, ln->dtype, job->ptrs[0] + off[0], v);
    const double mean = tsr_cpu_groups_sum(v, m) / (double)m;
    const double sq = tsr_cpu_groups_sum_sq_dev(v, m, mean);
    const double rstd = 1 / sqrt(sq / (double)m + ln->eps);
    tsr_cpu_float_store(ln->stat_dtype, job->ptrs[ni + 1] + off[ni + 1], mean);
    tsr_cpu_float_store(ln->stat_dtype, job->ptrs[ni + 2] + off[ni + 2], rstd);
    if (ln->has_affine) {
      for (int64_t k = 0; k < m; ++k) v[k] = (v[k] - mean) * rstd * gamma[k] + beta[k];
    } else {
      for (int64_t k = 0; k < m; ++k) v[k] = (v[k] - mean) * rstd;
    }
    tsr_cpu_groups_store(g, ni, ln->dtype, job->ptrs[ni] + off[ni], v);
  }
}

// Blocks [begin, end) of the backward: dx of their rows, and each block's
// partial dgamma and dbeta.
static void tsr_cpu_layer_norm_backward_run(void *arg, int64_t begin, int64_t end,
                                            int32_t thread_index) {
  const tsr_cpu_layer_norm_job *job = arg;
  const tsr_cpu_layer_norm_plan *ln = &job->plan->u.layer_norm;
  const tsr_cpu_groups *g = &ln->groups;
  const int32_t ni = job->plan->num_inputs;
  const int64_t m = g->size;
  const double *gamma = job->ws;
  double *dy =
      job->ws + ln->affine_doubles + ln->partial_doubles + (int64_t)thread_index * ln->slot_doubles;
  double *xhat = dy + m;
  int64_t off[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int64_t b = begin; b < end; ++b) {
    double *dgamma = job->ws + ln->affine_doubles + b * 2 * m;
    double *dbeta = dgamma + m;
    if (ln->has_affine)
      memset(dgamma, 0, (size_t)(2 * m) * sizeof(double));
    int64_t row_end = (b + 1) * ln->block;
    if (row_end > g->count)
      row_end = g->count;
    for (int64_t i = b * ln->block; i < row_end; ++i) {
      tsr_cpu_groups_offsets_get(g, i, off);
      tsr_cpu_groups_load(g, 0, ln->dtype, job->ptrs[0] + off[0], dy);
      tsr_cpu_groups_load(g, 1, ln->dtype, job->ptrs[1] + off[1], xhat);
      const double mean = tsr_cpu_float_load(ln->stat_dtype, job->ptrs[2] + off[2]);
      const double rstd = tsr_cpu_float_load(ln->stat_dtype, job->ptrs[3] + off[3]);
      for (int64_t k = 0; k < m; ++k) xhat[k] = (xhat[k] - mean) * rstd;
      if (ln->has_affine) {
        for (int64_t k = 0; k < m; ++k) {
          dgamma[k] += dy[k] * xhat[k];
          dbeta[k] += dy[k];
          dy[k] *= gamma[k];  // dy becomes g
        }
      }
      const double mean_g = tsr_cpu_groups_sum(dy, m) / (double)m;
      const double mean_gx = tsr_cpu_groups_dot(dy, xhat, m) / (double)m;
      for (int64_t k = 0; k < m; ++k) dy[k] = rstd * (dy[k] - mean_g - xhat[k] * mean_gx);
      tsr_cpu_groups_store(g, ni, ln->dtype, job->ptrs[ni] + off[ni], dy);
    }
  }
}

static tsr_status tsr_cpu_layer_norm_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                             char *workspace) {
  const tsr_cpu_layer_norm_plan *ln = &plan->u.layer_norm;
  const tsr_cpu_groups *g = &ln->groups;
  const int backward = plan->op == TSR_OP_LAYER_NORM_BACKWARD;
  tsr_cpu_layer_norm_job job = {plan, ptrs, (double *)workspace};
  if (g->count == 0 && !(backward && ln->has_affine))
    return TSR_OK;
  if (ln->has_affine) {
    // gamma (and beta) are read by every row: packed once, here.
    const int32_t k_gamma = backward ? 4 : 1;
    tsr_cpu_groups_load(g, k_gamma, ln->dtype, ptrs[k_gamma], job.ws);
    if (!backward)
      tsr_cpu_groups_load(g, 2, ln->dtype, ptrs[2], job.ws + g->size);
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  if (!backward) {
    if (g->count <= ln->grain) {
      tsr_cpu_layer_norm_run(&job, 0, g->count, 0);
      return TSR_OK;
    }
    return host->parallel_for(host->ctx, g->count, ln->grain, tsr_cpu_layer_norm_run, &job);
  }
  int64_t grain = ln->grain / ln->block;
  if (grain < 1)
    grain = 1;
  if (ln->blocks <= grain) {
    tsr_cpu_layer_norm_backward_run(&job, 0, ln->blocks, 0);
  } else {
    tsr_status status =
        host->parallel_for(host->ctx, ln->blocks, grain, tsr_cpu_layer_norm_backward_run, &job);
    if (status != TSR_OK)
      return status;
  }
  if (ln->has_affine) {
    const int32_t ni = plan->num_inputs;
    const int64_t m = g->size;
    double *total = job.ws + ln->affine_doubles;
    for (int64_t b = 1; b < ln->blocks; ++b) {
      const double *part = total + b * 2 * m;
      for (int64_t k = 0; k < 2 * m; ++k) total[k] += part[k];
    }
    tsr_cpu_groups_store(g, ni + 1, ln->dtype, ptrs[ni + 1], total);
    tsr_cpu_groups_store(g, ni + 2, ln->dtype, ptrs[ni + 2], total + m);
  }
  return TSR_OK;
}

// Checks that |operand| of |dtype| has x's rank with x's sizes on the
// leading axes and 1 on the normalised ones (mean, rstd).
static tsr_status tsr_cpu_layer_norm_stat_check(const char *op, const tsr_cpu_operand *operand,
                                                const tsr_cpu_operand *x, int32_t axis,
                                                tsr_dtype_t dtype) {
  if (operand->dtype != dtype) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s dtype %s is not allowed: %s", op,
                             operand->name, tsr_cpu_dtype_name(operand->dtype),
                             dtype == TSR_FLOAT32 && x->dtype != TSR_FLOAT32
                                 ? "statistics of bfloat16 and float16 are float32"
                                 : "statistics have x's dtype");
  }
  if (operand->rank != x->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s rank %d differs from x rank %d", op,
                             operand->name, (int)operand->rank, (int)x->rank);
  }
  for (int32_t d = 0; d < x->rank; ++d) {
    const int64_t want = d < axis ? x->sizes[d] : 1;
    if (operand->sizes[d] != want) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s sizes[%d] is %lld, expected %lld", op,
                               operand->name, (int)d, (long long)operand->sizes[d],
                               (long long)want);
    }
  }
  return TSR_OK;
}

// Checks that |operand| has x's dtype and the normalised shape x.sizes[axis:]
// (gamma, beta, dgamma, dbeta).
static tsr_status tsr_cpu_layer_norm_affine_check(const char *op, const tsr_cpu_operand *operand,
                                                  const tsr_cpu_operand *x, int32_t axis) {
  if (operand->dtype != x->dtype) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s dtype %s differs from x dtype %s", op,
                             operand->name, tsr_cpu_dtype_name(operand->dtype),
                             tsr_cpu_dtype_name(x->dtype));
  }
  if (operand->rank != x->rank - axis) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: %s rank %d, expected %d (the normalised axes)", op, operand->name,
                             (int)operand->rank, (int)(x->rank - axis));
  }
  for (int32_t d = 0; d < operand->rank; ++d) {
    if (operand->sizes[d] != x->sizes[axis + d]) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s sizes[%d] is %lld, expected %lld", op,
                               operand->name, (int)d, (long long)operand->sizes[d],
                               (long long)x->sizes[axis + d]);
    }
  }
  return TSR_OK;
}

typedef enum { TSR_CPU_LN_X_SHAPED, TSR_CPU_LN_STAT, TSR_CPU_LN_AFFINE } tsr_cpu_ln_kind;

static tsr_status tsr_cpu_layer_norm_plan_build(const tsr_op_signature *signature,
                                                tsr_plugin_plan *plan) {
  static const char *const fwd_names[] = {"x", "gamma", "beta", "y", "mean", "rstd"};
  static const char *const fwd_names_plain[] = {"x", "y", "mean", "rstd"};
  static const char *const bwd_names[] = {"dy",    "x",  "mean",   "rstd",
                                          "gamma", "dx", "dgamma", "dbeta"};
  static const char *const bwd_names_plain[] = {"dy", "x", "mean", "rstd", "dx"};
  const int backward = signature->op == TSR_OP_LAYER_NORM_BACKWARD;
  const char *op = backward ? "layer_norm_backward" : "layer_norm";
  const tsr_layer_norm_attrs *attrs = signature->attrs;
  uint32_t has_affine = 0;
  double eps = 1e-5;
  if (attrs != NULL) {
    if (TSR_ABI_COVERS(attrs, tsr_layer_norm_attrs, has_affine))
      has_affine = attrs->has_affine;
    if (TSR_ABI_COVERS(attrs, tsr_layer_norm_attrs, eps))
      eps = attrs->eps;
  }
  const int affine = has_affine != 0;
  const int32_t ni = backward ? (affine ? 5 : 4) : (affine ? 3 : 1);
  const int32_t no = backward ? (affine ? 3 : 1) : 3;
  const char *const *names =
      backward ? (affine ? bwd_names : bwd_names_plain) : (affine ? fwd_names : fwd_names_plain);
  tsr_status status = tsr_cpu_operands_init(signature, plan, ni, ni, no, names);
  if (status != TSR_OK)
    return status;
  const int32_t k_x = backward ? 1 : 0;
  const tsr_cpu_operand *x = &plan->operands[k_x];
  const int32_t rank = x->rank;
  int32_t axis = rank - 1;
  if (attrs != NULL && TSR_ABI_COVERS(attrs, tsr_layer_norm_attrs, axis))
    axis = attrs->axis;
  if (axis < 0 || axis >= rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: axis %d is outside [0, %d) (x rank %d)", op,
                             (int)axis, (int)rank, (int)rank);
  }
  status = tsr_cpu_dtype_check(signature, x, TSR_CPU_DTYPES_FLOAT, "layer_norm takes float");
  if (status != TSR_OK)
    return status;
  const tsr_dtype_t stat_dtype = tsr_cpu_norm_stat_dtype(x->dtype);

  // What each operand is, in plan order.
  tsr_cpu_ln_kind kinds[TSR_CPU_GROUPS_MAX_OPERANDS];
  if (backward) {
    const tsr_cpu_ln_kind k[] = {TSR_CPU_LN_X_SHAPED, TSR_CPU_LN_X_SHAPED, TSR_CPU_LN_STAT,
                                 TSR_CPU_LN_STAT, TSR_CPU_LN_AFFINE};
    for (int32_t i = 0; i < ni; ++i) kinds[i] = k[i];
    kinds[ni] = TSR_CPU_LN_X_SHAPED;
    if (affine)
      kinds[ni + 1] = kinds[ni + 2] = TSR_CPU_LN_AFFINE;
  } else {
    kinds[0] = TSR_CPU_LN_X_SHAPED;
    if (affine)
      kinds[1] = kinds[2] = TSR_CPU_LN_AFFINE;
    kinds[ni] = TSR_CPU_LN_X_SHAPED;
    kinds[ni + 1] = kinds[ni + 2] = TSR_CPU_LN_STAT;
  }
  const int32_t n = ni + no;
  for (int32_t k = 0; k < n && status == TSR_OK; ++k) {
    const tsr_cpu_operand *operand = &plan->operands[k];
    if (k == k_x)
      continue;
    if (kinds[k] == TSR_CPU_LN_X_SHAPED) {
      status = tsr_cpu_same_dtype_check(signature, x, operand);
      if (status == TSR_OK)
        status = tsr_cpu_same_sizes_check(signature, operand, x);
    } else if (kinds[k] == TSR_CPU_LN_STAT) {
      status = tsr_cpu_layer_norm_stat_check(op, operand, x, axis, stat_dtype);
    } else {
      status = tsr_cpu_layer_norm_affine_check(op, operand, x, axis);
    }
  }
  if (status != TSR_OK)
    return status;
  int64_t m = 1, rows = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (d < axis)
      rows *= x->sizes[d];
    else
      m *= x->sizes[d];
  }
  // With no rows every output is empty, and an op with only empty outputs
  // succeeds; otherwise each row needs a mean.
  if (m == 0 && rows > 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: the normalised axes [%d, %d) hold no elements (M must be >= 1)",
                             op, (int)axis, (int)rank);
  }
  for (int32_t o = 0; o < no && status == TSR_OK; ++o) {
    status = tsr_cpu_output_overlap_check(signature, &plan->operands[ni + o]);
  }
  if (status == TSR_OK)
    status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK)
    return status;

  // Every operand's strides over x's shape: 0 where it broadcasts.
  int64_t strides[TSR_CPU_GROUPS_MAX_OPERANDS][TSR_MAX_RANK];
  const int64_t *stride_ptrs[TSR_CPU_GROUPS_MAX_OPERANDS];
  int64_t elem_sizes[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int32_t k = 0; k < n; ++k) {
    const tsr_cpu_operand *operand = &plan->operands[k];
    for (int32_t d = 0; d < rank; ++d) {
      if (kinds[k] == TSR_CPU_LN_AFFINE) {
        strides[k][d] = d < axis ? 0 : operand->strides[d - axis];
      } else {
        strides[k][d] = operand->sizes[d] == 1 ? 0 : operand->strides[d];
      }
    }
    stride_ptrs[k] = strides[k];
    elem_sizes[k] = operand->elem_size;
  }
  const uint32_t inner_mask = (uint32_t)((1u << rank) - (1u << axis));
  tsr_cpu_layer_norm_plan *ln = &plan->u.layer_norm;
  memset(ln, 0, sizeof(*ln));
  tsr_cpu_groups_init(&ln->groups, rank, x->sizes, inner_mask, n, stride_ptrs, elem_sizes);
  ln->dtype = x->dtype;
  ln->stat_dtype = stat_dtype;
  ln->has_affine = affine;
  // Attributes are converted to the compute type (float32 for all but float64).
  ln->eps = x->dtype == TSR_FLOAT64 ? eps : (double)(float)eps;
  ln->grain = tsr_cpu_groups_grain(m);
  ln->block = (rows + TSR_CPU_LAYER_NORM_BLOCKS - 1) / TSR_CPU_LAYER_NORM_BLOCKS;
  if (ln->block < 1)
    ln->block = 1;
  ln->blocks = (rows + ln->block - 1) / ln->block;
  if (ln->blocks < 1)
    ln->blocks = 1;
  if (affine) {
    ln->affine_doubles = backward ? m : 2 * m;
    ln->partial_doubles = backward ? ln->blocks * 2 * m : 0;
  }
  ln->slot_doubles = backward ? 2 * m : m;
  const uint64_t doubles = (uint64_t)ln->affine_doubles + (uint64_t)ln->partial_doubles +
                           (uint64_t)tsr_cpu_thread_count_get() * (uint64_t)ln->slot_doubles;
  plan->workspace_bytes = doubles * sizeof(double) + 64;
  plan->execute = tsr_cpu_layer_norm_execute;
  plan->engine = "ref:layer-norm";
  return TSR_OK;
}

tsr_status tsr_cpu_layer_norm_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  return tsr_cpu_layer_norm_plan_build(signature, plan);
}

tsr_status tsr_cpu_layer_norm_backward_plan_init(const tsr_op_signature *signature,
                                                 tsr_plugin_plan *plan) {
  return tsr_cpu_layer_norm_plan_build(signature, plan);
}
