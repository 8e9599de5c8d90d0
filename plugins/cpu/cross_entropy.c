// CROSS_ENTROPY and CROSS_ENTROPY_BACKWARD: fused log-softmax and negative
// log-likelihood over the rows of logits [N, C], with label smoothing and an
// ignored target value.
//
// Targets are checked (and the non-ignored rows counted) on the calling
// thread before any row is computed, so a bad target fails the call with
// its position and value and nothing is read out of range. Rows are packed
// to doubles and computed whole by one thread; a SUM or MEAN adds the rows'
// losses in row order, so results do not depend on the thread count.

#include <math.h>
#include <string.h>

#include "host.h"
#include "plan.h"
#include "signature.h"

// Plan operands.
enum { CE_LOGITS = 0, CE_TARGET = 1, CE_LOSS = 2, CE_LSE = 3 };
enum { CEB_DLOSS = 0, CEB_LOGITS = 1, CEB_TARGET = 2, CEB_LSE = 3, CEB_DLOGITS = 4 };

typedef struct tsr_cpu_cross_entropy_job {
  const tsr_cpu_cross_entropy_plan *ce;
  char *const *ptrs;
  double *ws;
  double scale;  // backward SUM and MEAN: dloss, or dloss / R
} tsr_cpu_cross_entropy_job;

static inline int64_t tsr_cpu_ce_target(const tsr_cpu_cross_entropy_plan *ce, const char *target,
                                        int64_t n) {
  return *(const int64_t *)(target + n * ce->target_stride);
}

// Cold: formats the message of a bad target.
#if defined(__GNUC__)
__attribute__((cold, noinline))
#endif
static tsr_status
tsr_cpu_ce_target_error(const char *op, const tsr_cpu_cross_entropy_plan *ce, int64_t n,
                        int64_t t) {
  return tsr_cpu_error_set(
      TSR_INVALID_ARGUMENT, "%s: target[%lld] is %lld, outside [0, %lld) and not ignore_index %lld",
      op, (long long)n, (long long)t, (long long)ce->classes, (long long)ce->ignore_index);
}

// Checks every target and counts the rows that are not ignored.
static tsr_status tsr_cpu_ce_targets_check(const char *op, const tsr_cpu_cross_entropy_plan *ce,
                                           const char *target, int64_t *out_counted) {
  int64_t counted = 0;
  for (int64_t n = 0; n < ce->rows; ++n) {
    const int64_t t = tsr_cpu_ce_target(ce, target, n);
    if (t == ce->ignore_index)
      continue;
    if (t < 0 || t >= ce->classes)
      return tsr_cpu_ce_target_error(op, ce, n, t);
    ++counted;
  }
  *out_counted = counted;
  return TSR_OK;
}

// Rows [begin, end) of the forward.
static void tsr_cpu_cross_entropy_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const tsr_cpu_cross_entropy_job *job = arg;
  const tsr_cpu_cross_entropy_plan *ce = job->ce;
  const tsr_cpu_groups *g = &ce->groups;
  const int64_t classes = ce->classes;
  const double eps = ce->smoothing;
  const int single = ce->dtype != TSR_FLOAT64;
  double *v = job->ws + ce->row_losses + (int64_t)thread_index * ce->slot_doubles;
  int64_t off[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int64_t n = begin; n < end; ++n) {
    tsr_cpu_groups_offsets_get(g, n, off);
    tsr_cpu_groups_load(g, 0, ce->dtype, job->ptrs[CE_LOGITS] + off[0], v);
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) m = (v[c] > m || v[c] != v[c]) ? v[c] : m;
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += tsr_cpu_groups_exp(v[c] - m, single);
    const double lse = m + log(sum);
    *(float *)(job->ptrs[CE_LSE] + n * ce->lse_stride) = (float)lse;
    const int64_t t = tsr_cpu_ce_target(ce, job->ptrs[CE_TARGET], n);
    double loss = 0;
    if (t != ce->ignore_index) {
      loss = lse;
      // A term whose weight is 0 is left out, so an infinite logit there
      // does not turn the loss into 0 * inf = NaN (as in PyTorch).
      if (eps != 1)
        loss -= (1 - eps) * v[t];
      if (eps != 0) {
        double row_sum = 0;
        for (int64_t c = 0; c < classes; ++c) row_sum += v[c];
        loss -= eps / (double)classes * row_sum;
      }
    }
    if (ce->reduction == TSR_REDUCTION_NONE) {
      tsr_cpu_float_store(ce->dtype, job->ptrs[CE_LOSS] + n * ce->loss_stride, loss);
    } else {
      job->ws[n] = loss;
    }
  }
}

// Rows [begin, end) of the backward.
static void tsr_cpu_cross_entropy_backward_run(void *arg, int64_t begin, int64_t end,
                                               int32_t thread_index) {
  const tsr_cpu_cross_entropy_job *job = arg;
  const tsr_cpu_cross_entropy_plan *ce = job->ce;
  const tsr_cpu_groups *g = &ce->groups;
  const int64_t classes = ce->classes;
  const double eps = ce->smoothing;
  const int single = ce->dtype != TSR_FLOAT64;
  const double uniform = eps / (double)classes;
  double *v = job->ws + (int64_t)thread_index * ce->slot_doubles;
  int64_t off[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int64_t n = begin; n < end; ++n) {
    tsr_cpu_groups_offsets_get(g, n, off);
    const int64_t t = tsr_cpu_ce_target(ce, job->ptrs[CEB_TARGET], n);
    if (t == ce->ignore_index) {
      memset(v, 0, (size_t)classes * sizeof(double));
    } else {
      tsr_cpu_groups_load(g, 0, ce->dtype, job->ptrs[CEB_LOGITS] + off[0], v);
      const double lse = *(const float *)(job->ptrs[CEB_LSE] + n * ce->lse_stride);
      const double s =
          ce->reduction == TSR_REDUCTION_NONE
              ? tsr_cpu_float_load(ce->dtype, job->ptrs[CEB_DLOSS] + n * ce->loss_stride)
              : job->scale;
      for (int64_t c = 0; c < classes; ++c) v[c] = tsr_cpu_groups_exp(v[c] - lse, single) - uniform;
      v[t] -= 1 - eps;
      for (int64_t c = 0; c < classes; ++c) v[c] *= s;
    }
    tsr_cpu_groups_store(g, 1, ce->dtype, job->ptrs[CEB_DLOGITS] + off[1], v);
  }
}

static tsr_status tsr_cpu_cross_entropy_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                                char *workspace) {
  const tsr_cpu_cross_entropy_plan *ce = &plan->u.cross_entropy;
  const int backward = plan->op == TSR_OP_CROSS_ENTROPY_BACKWARD;
  int64_t counted = 0;
  tsr_status status =
      tsr_cpu_ce_targets_check(backward ? "cross_entropy_backward" : "cross_entropy", ce,
                               ptrs[backward ? CEB_TARGET : CE_TARGET], &counted);
  if (status != TSR_OK)
    return status;
  tsr_cpu_cross_entropy_job job = {ce, ptrs, (double *)workspace, 0};
  if (backward && ce->reduction != TSR_REDUCTION_NONE) {
    const double dloss = tsr_cpu_float_load(ce->dtype, ptrs[CEB_DLOSS]);
    job.scale = ce->reduction == TSR_REDUCTION_SUM ? dloss : dloss / (double)counted;
  }
  tsr_parallel_fn fn = backward ? tsr_cpu_cross_entropy_backward_run : tsr_cpu_cross_entropy_run;
  if (ce->rows <= ce->grain) {
    if (ce->rows > 0)
      fn(&job, 0, ce->rows, 0);
  } else {
    const tsr_host_api *host = tsr_cpu_host_get();
    status = host->parallel_for(host->ctx, ce->rows, ce->grain, fn, &job);
    if (status != TSR_OK)
      return status;
  }
  if (!backward && ce->reduction != TSR_REDUCTION_NONE) {
    double total = 0;
    for (int64_t n = 0; n < ce->rows; ++n) total += job.ws[n];
    // MEAN over no counted rows is 0 / 0: NaN, as PyTorch gives.
    if (ce->reduction == TSR_REDUCTION_MEAN)
      total /= (double)counted;
    tsr_cpu_float_store(ce->dtype, ptrs[CE_LOSS], total);
  }
  return TSR_OK;
}

// Checks |operand|: |dtype|, and rank 1 of size |n| or (|n| < 0) rank 0.
static tsr_status tsr_cpu_ce_operand_check(const char *op, const tsr_cpu_operand *operand,
                                           tsr_dtype_t dtype, int64_t n, const char *rule) {
  if (operand->dtype != dtype) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s dtype %s is not allowed: %s", op,
                             operand->name, tsr_cpu_dtype_name(operand->dtype), rule);
  }
  if (n < 0 && operand->rank != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: %s rank %d, expected 0 (reduction MEAN or SUM)", op,
                             operand->name, (int)operand->rank);
  }
  if (n >= 0 && (operand->rank != 1 || operand->sizes[0] != n)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s must be [N] = [%lld] (rank %d)", op,
                             operand->name, (long long)n, (int)operand->rank);
  }
  return TSR_OK;
}

static tsr_status tsr_cpu_cross_entropy_plan_build(const tsr_op_signature *signature,
                                                   tsr_plugin_plan *plan) {
  static const char *const fwd_names[] = {"logits", "target", "loss", "lse"};
  static const char *const bwd_names[] = {"dloss", "logits", "target", "lse", "dlogits"};
  const int backward = signature->op == TSR_OP_CROSS_ENTROPY_BACKWARD;
  const char *op = backward ? "cross_entropy_backward" : "cross_entropy";
  const int32_t ni = backward ? 4 : 2, no = backward ? 1 : 2;
  tsr_status status =
      tsr_cpu_operands_init(signature, plan, ni, ni, no, backward ? bwd_names : fwd_names);
  if (status != TSR_OK)
    return status;
  const tsr_cross_entropy_attrs *attrs = signature->attrs;
  tsr_reduction_t reduction = TSR_REDUCTION_MEAN;
  int64_t ignore_index = -100;
  double smoothing = 0;
  if (attrs != NULL) {
    if (TSR_ABI_COVERS(attrs, tsr_cross_entropy_attrs, reduction))
      reduction = attrs->reduction;
    if (TSR_ABI_COVERS(attrs, tsr_cross_entropy_attrs, ignore_index)) {
      ignore_index = attrs->ignore_index;
    }
    if (TSR_ABI_COVERS(attrs, tsr_cross_entropy_attrs, label_smoothing)) {
      smoothing = attrs->label_smoothing;
    }
  }
  if (reduction < 0 || reduction >= TSR_REDUCTION_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(reduction < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "%s: attrs reduction %d is not a reduction", op,
                             (int)reduction);
  }
  if (!(smoothing >= 0 && smoothing <= 1)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: attrs label_smoothing %g is outside [0, 1]",
                             op, smoothing);
  }
  const int32_t k_logits = backward ? CEB_LOGITS : CE_LOGITS;
  const tsr_cpu_operand *logits = &plan->operands[k_logits];
  status = tsr_cpu_dtype_check(signature, logits, TSR_CPU_DTYPES_FLOAT,
                               "cross_entropy takes float logits");
  if (status != TSR_OK)
    return status;
  if (logits->rank != 2) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: logits rank %d, expected 2 ([N, C])", op,
                             (int)logits->rank);
  }
  const int64_t rows = logits->sizes[0];
  const int64_t reduced_n = reduction == TSR_REDUCTION_NONE ? rows : -1;
  const tsr_cpu_operand *target = &plan->operands[backward ? CEB_TARGET : CE_TARGET];
  const tsr_cpu_operand *lse = &plan->operands[backward ? CEB_LSE : CE_LSE];
  const tsr_cpu_operand *loss = &plan->operands[backward ? CEB_DLOSS : CE_LOSS];
  status = tsr_cpu_ce_operand_check(op, target, TSR_INT64, rows, "target is int64");
  if (status == TSR_OK) {
    status = tsr_cpu_ce_operand_check(op, lse, TSR_FLOAT32, rows, "lse is float32");
  }
  if (status == TSR_OK) {
    status =
        tsr_cpu_ce_operand_check(op, loss, logits->dtype, reduced_n, "it has the logits' dtype");
  }
  if (status == TSR_OK && backward) {
    const tsr_cpu_operand *dlogits = &plan->operands[CEB_DLOGITS];
    status = tsr_cpu_same_dtype_check(signature, logits, dlogits);
    if (status == TSR_OK)
      status = tsr_cpu_same_sizes_check(signature, dlogits, logits);
  }
  for (int32_t o = 0; o < no && status == TSR_OK; ++o) {
    status = tsr_cpu_output_overlap_check(signature, &plan->operands[ni + o]);
  }
  if (status == TSR_OK)
    status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK)
    return status;

  tsr_cpu_cross_entropy_plan *ce = &plan->u.cross_entropy;
  memset(ce, 0, sizeof(*ce));
  const int64_t *strides[2] = {logits->strides, plan->operands[CEB_DLOGITS].strides};
  const int64_t elem_sizes[2] = {logits->elem_size, logits->elem_size};
  tsr_cpu_groups_init(&ce->groups, 2, logits->sizes, 2u, backward ? 2 : 1, strides, elem_sizes);
  ce->dtype = logits->dtype;
  ce->reduction = reduction;
  ce->ignore_index = ignore_index;
  // Attributes are converted to the compute type (float32 for all but float64).
  ce->smoothing = logits->dtype == TSR_FLOAT64 ? smoothing : (double)(float)smoothing;
  ce->rows = rows;
  ce->classes = logits->sizes[1];
  ce->target_stride = target->strides[0] * 8;
  ce->lse_stride = lse->strides[0] * 4;
  ce->loss_stride = reduced_n >= 0 ? loss->strides[0] * (int64_t)loss->elem_size : 0;
  ce->grain = tsr_cpu_groups_grain(ce->classes);
  ce->row_losses = !backward && reduction != TSR_REDUCTION_NONE ? rows : 0;
  ce->slot_doubles = ce->classes;
  plan->workspace_bytes = ((uint64_t)ce->row_losses +
                           (uint64_t)tsr_cpu_thread_count_get() * (uint64_t)ce->slot_doubles) *
                              sizeof(double) +
                          64;
  plan->execute = tsr_cpu_cross_entropy_execute;
  plan->engine = "ref:cross-entropy";
  return TSR_OK;
}

tsr_status tsr_cpu_cross_entropy_plan_init(const tsr_op_signature *signature,
                                           tsr_plugin_plan *plan) {
  return tsr_cpu_cross_entropy_plan_build(signature, plan);
}

tsr_status tsr_cpu_cross_entropy_backward_plan_init(const tsr_op_signature *signature,
                                                    tsr_plugin_plan *plan) {
  return tsr_cpu_cross_entropy_plan_build(signature, plan);
}
