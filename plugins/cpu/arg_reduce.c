// ARG_REDUCE: index of the first maximum or minimum along one axis.
#include <string.h>

#include "half.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// Elements of x per parallel chunk of outputs.
#define TSR_CPU_ARG_REDUCE_GRAIN 32768

// CMP is > for argmax, < for argmin: strict, so ties keep the first index.
// A NaN ranks beyond every number and the first NaN wins, so the scan ends
// at it.
#define TSR_CPU_ARG_SCAN_FLOAT_CVT(name, T, C, LOAD, CMP)                \
  static int64_t name(const char *x, int64_t n, int64_t stride) {              \
    C best = LOAD(*(const T *)x);                                              \
    if (best != best) return 0;                                                \
    int64_t index = 0;                                                         \
    for (int64_t i = 1; i < n; ++i) {                                          \
      C v = LOAD(*(const T *)(x + i * stride));                                \
      if (v != v) return i;                                                    \
      if (v CMP best) {                                                        \
        best = v;                                                              \
        index = i;                                                             \
      }                                                                        \
    }                                                                          \
    return index;                                                              \
  }
#define TSR_CPU_LOAD_SAME(v) (v)
#define TSR_CPU_ARG_SCAN_FLOAT(name, T, CMP) \
  TSR_CPU_ARG_SCAN_FLOAT_CVT(name, T, T, TSR_CPU_LOAD_SAME, CMP)

#define TSR_CPU_ARG_SCAN_INT(name, T, CMP)                                     \
  static int64_t name(const char *x, int64_t n, int64_t stride) {              \
    T best = *(const T *)x;                                                    \
    int64_t index = 0;                                                         \
    for (int64_t i = 1; i < n; ++i) {                                          \
      T v = *(const T *)(x + i * stride);                                      \
      if (v CMP best) {                                                        \
        best = v;                                                              \
        index = i;                                                             \
      }                                                                        \
    }                                                                          \
    return index;                                                              \
  }

TSR_CPU_ARG_SCAN_FLOAT(argmax_f32, float, >)
TSR_CPU_ARG_SCAN_FLOAT(argmax_f64, double, >)
TSR_CPU_ARG_SCAN_INT(argmax_i32, int32_t, >)
TSR_CPU_ARG_SCAN_INT(argmax_i64, int64_t, >)
TSR_CPU_ARG_SCAN_FLOAT(argmin_f32, float, <)
TSR_CPU_ARG_SCAN_FLOAT(argmin_f64, double, <)
TSR_CPU_ARG_SCAN_INT(argmin_i32, int32_t, <)
TSR_CPU_ARG_SCAN_INT(argmin_i64, int64_t, <)
// The half types compare in float32 (exact).
TSR_CPU_ARG_SCAN_FLOAT_CVT(argmax_bf16, uint16_t, float, tsr_cpu_bf16_to_f32, >)
TSR_CPU_ARG_SCAN_FLOAT_CVT(argmin_bf16, uint16_t, float, tsr_cpu_bf16_to_f32, <)
TSR_CPU_ARG_SCAN_FLOAT_CVT(argmax_f16, uint16_t, float, tsr_cpu_f16_to_f32, >)
TSR_CPU_ARG_SCAN_FLOAT_CVT(argmin_f16, uint16_t, float, tsr_cpu_f16_to_f32, <)

typedef struct tsr_cpu_arg_reduce_job {
  const tsr_cpu_arg_reduce_plan *r;
  const char *x;
  char *out;
} tsr_cpu_arg_reduce_job;

static void tsr_cpu_arg_reduce_outputs_run(void *arg, int64_t begin, int64_t end,
                                           int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_arg_reduce_job *job = arg;
  const tsr_cpu_reduce_shape *s = &job->r->shape;
  // The axis is one dimension: its size 1 case collapses away (index 0).
  const int64_t n = s->red_ndim > 0 ? s->red_sizes[0] : 1;
  const int64_t stride = s->red_ndim > 0 ? s->red_strides[0] : 0;
  for (int64_t o = begin; o < end; ++o) {
    int64_t x_offset, out_offset;
    tsr_cpu_reduce_shape_offsets_get(s, o, &x_offset, &out_offset);
    *(int64_t *)(job->out + out_offset) = job->r->scan(job->x + x_offset, n, stride);
  }
}

static tsr_status tsr_cpu_arg_reduce_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                             char *workspace) {
  (void)workspace;
  const tsr_cpu_arg_reduce_plan *r = &plan->u.arg_reduce;
  tsr_cpu_arg_reduce_job job = {r, ptrs[0], ptrs[1]};
  const int64_t out_count = r->shape.out_count;
  const int64_t n = r->shape.red_count;
  if (out_count * n < 2 * TSR_CPU_ARG_REDUCE_GRAIN) {
    tsr_cpu_arg_reduce_outputs_run(&job, 0, out_count, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  int64_t grain = TSR_CPU_ARG_REDUCE_GRAIN / n;
  return host->parallel_for(host->ctx, out_count, grain < 1 ? 1 : grain,
                            tsr_cpu_arg_reduce_outputs_run, &job);
}

tsr_status tsr_cpu_arg_reduce_plan_init(const tsr_op_signature *signature,
                                        tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 1, names);
  if (status != TSR_OK) return status;
  const tsr_arg_reduce_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, sizeof(tsr_arg_reduce_attrs), (const void **)&attrs);
  if (status != TSR_OK) return status;
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  if (attrs->fn < 0 || attrs->fn >= TSR_ARG_REDUCE_FN_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(attrs->fn < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "arg_reduce: attrs fn %d is not an arg_reduce fn",
                             (int)attrs->fn);
  }
  if (attrs->axis < 0 || attrs->axis >= x->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "arg_reduce: axis %d is outside x's rank %d",
                             (int)attrs->axis, (int)x->rank);
  }
  status = tsr_cpu_dtype_check(signature, x, TSR_CPU_DTYPES_NUMBER,
                               "arg_reduce takes float and int");
  if (status == TSR_OK) {
    status = tsr_cpu_dtype_check(signature, out, TSR_DTYPE_BIT(TSR_INT64),
                                 "arg_reduce writes int64");
  }
  if (status != TSR_OK) return status;
  if (x->sizes[attrs->axis] == 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "arg_reduce: axis %d of x is empty",
                             (int)attrs->axis);
  }
  if (out->rank != x->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "arg_reduce: out rank %d differs from x rank %d",
                             (int)out->rank, (int)x->rank);
  }
  for (int32_t d = 0; d < x->rank; ++d) {
    int64_t want = d == attrs->axis ? 1 : x->sizes[d];
    if (out->sizes[d] != want) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "arg_reduce: out sizes[%d] is %lld, expected %lld",
                               (int)d, (long long)out->sizes[d], (long long)want);
    }
  }
  status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;

  tsr_cpu_arg_reduce_plan *r = &plan->u.arg_reduce;
  memset(r, 0, sizeof(*r));
  tsr_cpu_reduce_shape_init(&r->shape, x->rank, x->sizes, x->strides, x->elem_size, out->strides,
                            out->elem_size, 1u << attrs->axis);
  // Rows: fn; columns: dtype (bool is refused above).
  static const tsr_cpu_arg_scan_fn scans[2][TSR_DTYPE_COUNT] = {
      {argmax_f32, argmax_f64, argmax_bf16, argmax_f16, argmax_i32, argmax_i64, NULL},
      {argmin_f32, argmin_f64, argmin_bf16, argmin_f16, argmin_i32, argmin_i64, NULL},
  };
  r->scan = scans[attrs->fn][x->dtype];
  plan->execute = tsr_cpu_arg_reduce_execute;
  plan->engine = "ref:arg-reduce";
  return TSR_OK;
}
