// SOFTMAX and SOFTMAX_BACKWARD over one axis of any strides.
//
// Each slice along the axis is packed into a float64 buffer (several
// neighbouring slices at once when the axis is not the innermost, so each
// cache line and page is fetched once for all of them), computed there in
// three passes (max, sum of exponentials, normalise) and stored back. The
// exponentials bound the speed: one libm call per element, expf for every
// dtype but float64 (cheaper than exp: docs/performance.md, "Measurements
// behind the code's decisions"). Packing makes any layout and dtype look the
// same to them.
// Slices run in parallel, each whole on one thread, so results do not depend
// on the thread count.

#include <math.h>
#include <string.h>

#include "host.h"
#include "plan.h"
#include "signature.h"

// y = softmax(x) or log_softmax(x) of |n| doubles, in place. m = max x with
// NaN winning, so a NaN, +inf or all -inf slice comes out NaN throughout, as
// the catalogue's formula gives.
static void tsr_cpu_softmax_slice(double *v, int64_t n, int is_log, int single) {
  double m = -INFINITY;
  for (int64_t k = 0; k < n; ++k) m = (v[k] > m || v[k] != v[k]) ? v[k] : m;
  double sum = 0;
  if (is_log) {
    for (int64_t k = 0; k < n; ++k) sum += tsr_cpu_groups_exp(v[k] - m, single);
    const double lse = log(sum);
    for (int64_t k = 0; k < n; ++k) v[k] = v[k] - m - lse;
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    v[k] = tsr_cpu_groups_exp(v[k] - m, single);
    sum += v[k];
  }
  const double scale = 1 / sum;
  for (int64_t k = 0; k < n; ++k) v[k] *= scale;
}

// dx into |dy|: softmax dx = y (dy - sum(dy y)); log-softmax dx = dy - exp(y) sum(dy).
static void tsr_cpu_softmax_backward_slice(double *dy, const double *y, int64_t n, int is_log,
                                           int single) {
  if (is_log) {
    const double sum = tsr_cpu_groups_sum(dy, n);
    for (int64_t k = 0; k < n; ++k) dy[k] -= tsr_cpu_groups_exp(y[k], single) * sum;
    return;
  }
  const double sum = tsr_cpu_groups_dot(dy, y, n);
  for (int64_t k = 0; k < n; ++k) dy[k] = y[k] * (dy[k] - sum);
}

typedef struct tsr_cpu_softmax_job {
  const tsr_cpu_softmax_plan *s;
  char *const *ptrs;
  double *scratch;
  int backward;
} tsr_cpu_softmax_job;

// Slices [begin, end), packed |block| neighbours at a time.
static void tsr_cpu_softmax_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  const tsr_cpu_softmax_job *job = arg;
  const tsr_cpu_softmax_plan *s = job->s;
  const tsr_cpu_groups *g = &s->groups;
  const int64_t n = g->size;
  const int single = s->dtype != TSR_FLOAT64;
  double *a = job->scratch + (int64_t)thread_index * s->slot_doubles;
  double *b = a + s->block * n;
  int64_t off[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int64_t i = begin; i < end;) {
    int64_t count = tsr_cpu_groups_run_left(g, i);
    if (count > s->block)
      count = s->block;
    if (count > end - i)
      count = end - i;
    tsr_cpu_groups_offsets_get(g, i, off);
    tsr_cpu_groups_load_many(g, 0, s->dtype, job->ptrs[0] + off[0], count, a);
    if (job->backward) {
      tsr_cpu_groups_load_many(g, 1, s->dtype, job->ptrs[1] + off[1], count, b);
      for (int64_t j = 0; j < count; ++j) {
        tsr_cpu_softmax_backward_slice(a + j * n, b + j * n, n, s->log, single);
      }
      tsr_cpu_groups_store_many(g, 2, s->dtype, job->ptrs[2] + off[2], count, a);
    } else {
      for (int64_t j = 0; j < count; ++j) tsr_cpu_softmax_slice(a + j * n, n, s->log, single);
      tsr_cpu_groups_store_many(g, 1, s->dtype, job->ptrs[1] + off[1], count, a);
    }
    i += count;
  }
}

static tsr_status tsr_cpu_softmax_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                          char *workspace) {
  const tsr_cpu_softmax_plan *s = &plan->u.softmax;
  const int64_t count = s->groups.count;
  if (count == 0 || s->groups.size == 0)
    return TSR_OK;
  tsr_cpu_softmax_job job = {s, ptrs, (double *)workspace, plan->op == TSR_OP_SOFTMAX_BACKWARD};
  if (count <= s->grain) {
    tsr_cpu_softmax_run(&job, 0, count, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  return host->parallel_for(host->ctx, count, s->grain, tsr_cpu_softmax_run, &job);
}

static tsr_status tsr_cpu_softmax_plan_build(const tsr_op_signature *signature,
                                             tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "y"};
  static const char *const backward_names[] = {"dy", "y", "dx"};
  const int backward = signature->op == TSR_OP_SOFTMAX_BACKWARD;
  const char *op = backward ? "softmax_backward" : "softmax";
  const int32_t num_inputs = backward ? 2 : 1;
  tsr_status status = tsr_cpu_operands_init(signature, plan, num_inputs, num_inputs, 1,
                                            backward ? backward_names : names);
  if (status != TSR_OK)
    return status;
  const tsr_softmax_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, sizeof(tsr_softmax_attrs), (const void **)&attrs);
  if (status != TSR_OK)
    return status;
  const int32_t n = num_inputs + 1;
  const tsr_cpu_operand *x = &plan->operands[0];
  status = tsr_cpu_dtype_check(signature, x, TSR_CPU_DTYPES_FLOAT, "softmax takes float");
  for (int32_t k = 1; k < n && status == TSR_OK; ++k) {
    status = tsr_cpu_same_dtype_check(signature, x, &plan->operands[k]);
    if (status == TSR_OK)
      status = tsr_cpu_same_sizes_check(signature, &plan->operands[k], x);
  }
  if (status != TSR_OK)
    return status;
  if (attrs->axis < 0 || attrs->axis >= x->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: attrs axis %d is outside [0, %d)", op,
                             (int)attrs->axis, (int)x->rank);
  }
  status = tsr_cpu_output_overlap_check(signature, &plan->operands[num_inputs]);
  if (status == TSR_OK)
    status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK)
    return status;

  tsr_cpu_softmax_plan *s = &plan->u.softmax;
  memset(s, 0, sizeof(*s));
  const int64_t *strides[TSR_CPU_GROUPS_MAX_OPERANDS];
  int64_t elem_sizes[TSR_CPU_GROUPS_MAX_OPERANDS];
  for (int32_t k = 0; k < n; ++k) {
    strides[k] = plan->operands[k].strides;
    elem_sizes[k] = plan->operands[k].elem_size;
  }
  tsr_cpu_groups_init(&s->groups, x->rank, x->sizes, 1u << attrs->axis, n, strides, elem_sizes);
  s->dtype = x->dtype;
  s->log = attrs->log != 0;
  s->grain = tsr_cpu_groups_grain(s->groups.size);
  s->block = tsr_cpu_groups_block(&s->groups, 0, x->elem_size);
  s->slot_doubles = (backward ? 2 : 1) * s->block * s->groups.size;
  if (s->groups.count > 0 && s->groups.size > 0) {
    plan->workspace_bytes =
        (uint64_t)tsr_cpu_thread_count_get() * (uint64_t)s->slot_doubles * sizeof(double) + 64;
  }
  plan->execute = tsr_cpu_softmax_execute;
  plan->engine = "ref:softmax";
  return TSR_OK;
}

tsr_status tsr_cpu_softmax_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  return tsr_cpu_softmax_plan_build(signature, plan);
}

tsr_status tsr_cpu_softmax_backward_plan_init(const tsr_op_signature *signature,
                                              tsr_plugin_plan *plan) {
  return tsr_cpu_softmax_plan_build(signature, plan);
}
