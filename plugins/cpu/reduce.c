// REDUCE: sum, mean, max, min and prod over a set of axes.
#include <math.h>
#include <string.h>

#include "convert.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// Reduced elements per partial result. Fixed, never derived from the thread
// count, so the order of every sum is a property of the plan alone.
#define TSR_CPU_REDUCE_SEGMENT 16384
// Elements of x per parallel chunk of outputs.
#define TSR_CPU_REDUCE_GRAIN 32768

#define TSR_CPU_ADD(r, v) ((r) + (v))
#define TSR_CPU_MUL(r, v) ((r) * (v))
// NaN-propagating: once r is NaN it stays NaN; a NaN v replaces r.
#define TSR_CPU_FMAX(r, v) (((v) > (r) || (v) != (v)) ? (v) : (r))
#define TSR_CPU_FMIN(r, v) (((v) < (r) || (v) != (v)) ? (v) : (r))
#define TSR_CPU_IMAX(r, v) ((v) > (r) ? (v) : (r))
#define TSR_CPU_IMIN(r, v) ((v) < (r) ? (v) : (r))

// A row function for element type T folding into acc field F of type A with
// STEP. The contiguous case keeps eight independent partial results, which
// breaks the add latency chain and lets gcc use vector lanes; they are folded
// in a fixed order, so the result is still a function of the plan only.
#define TSR_CPU_REDUCE_ROW_CVT(name, T, A, F, INIT, STEP, LOAD)                                          \
  static void name(const char *x, int64_t n, int64_t stride, tsr_cpu_acc *acc) {               \
    A r = acc->F;                                                                              \
    if (stride == (int64_t)sizeof(T)) {                                                        \
      const T *xs = (const T *)x;                                                              \
      int64_t i = 0;                                                                           \
      if (n >= 16) {                                                                           \
        A lanes[8];                                                                            \
        for (int j = 0; j < 8; ++j) lanes[j] = (A)(INIT);                                      \
        for (; i + 8 <= n; i += 8) {                                                           \
          for (int j = 0; j < 8; ++j) lanes[j] = STEP(lanes[j], (A)LOAD(xs[i + j]));                 \
        }                                                                                      \
        for (int j = 0; j < 8; ++j) r = STEP(r, lanes[j]);                                     \
      }                                                                                        \
      for (; i < n; ++i) r = STEP(r, (A)LOAD(xs[i]));                                                \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i) r = STEP(r, (A)LOAD(*(const T *)(x + i * stride)));          \
    }                                                                                          \
    acc->F = r;                                                                                \
  }

// A row function reading T as it is; LOAD widens a half type to float32.
#define TSR_CPU_LOAD_SAME(v) (v)
#define TSR_CPU_REDUCE_ROW(name, T, A, F, INIT, STEP) \
  TSR_CPU_REDUCE_ROW_CVT(name, T, A, F, INIT, STEP, TSR_CPU_LOAD_SAME)
#define TSR_CPU_REDUCE_ROW_BF16(name, INIT, STEP) \
  TSR_CPU_REDUCE_ROW_CVT(name, uint16_t, double, f, INIT, STEP, tsr_cpu_bf16_to_f32)
#define TSR_CPU_REDUCE_ROW_F16(name, INIT, STEP) \
  TSR_CPU_REDUCE_ROW_CVT(name, uint16_t, double, f, INIT, STEP, tsr_cpu_f16_to_f32)

TSR_CPU_REDUCE_ROW(sum_f32, float, double, f, 0.0, TSR_CPU_ADD)
TSR_CPU_REDUCE_ROW(sum_f64, double, double, f, 0.0, TSR_CPU_ADD)
TSR_CPU_REDUCE_ROW(sum_i32, int32_t, uint64_t, u, 0, TSR_CPU_ADD)
TSR_CPU_REDUCE_ROW(sum_i64, int64_t, uint64_t, u, 0, TSR_CPU_ADD)
TSR_CPU_REDUCE_ROW(prod_f32, float, double, f, 1.0, TSR_CPU_MUL)
TSR_CPU_REDUCE_ROW(prod_f64, double, double, f, 1.0, TSR_CPU_MUL)
TSR_CPU_REDUCE_ROW(prod_i32, int32_t, uint64_t, u, 1, TSR_CPU_MUL)
TSR_CPU_REDUCE_ROW(prod_i64, int64_t, uint64_t, u, 1, TSR_CPU_MUL)
TSR_CPU_REDUCE_ROW(max_f32, float, double, f, -INFINITY, TSR_CPU_FMAX)
TSR_CPU_REDUCE_ROW(max_f64, double, double, f, -INFINITY, TSR_CPU_FMAX)
TSR_CPU_REDUCE_ROW(max_i32, int32_t, int64_t, i, INT64_MIN, TSR_CPU_IMAX)
TSR_CPU_REDUCE_ROW(max_i64, int64_t, int64_t, i, INT64_MIN, TSR_CPU_IMAX)
TSR_CPU_REDUCE_ROW(min_f32, float, double, f, INFINITY, TSR_CPU_FMIN)
TSR_CPU_REDUCE_ROW(min_f64, double, double, f, INFINITY, TSR_CPU_FMIN)
TSR_CPU_REDUCE_ROW(min_i32, int32_t, int64_t, i, INT64_MAX, TSR_CPU_IMIN)
TSR_CPU_REDUCE_ROW(min_i64, int64_t, int64_t, i, INT64_MAX, TSR_CPU_IMIN)
// The half types accumulate in double, as float32 does: the catalogue asks
// for float32 or wider, and one accumulator type keeps one set of combines.
TSR_CPU_REDUCE_ROW_BF16(sum_bf16, 0.0, TSR_CPU_ADD)
TSR_CPU_REDUCE_ROW_BF16(prod_bf16, 1.0, TSR_CPU_MUL)
TSR_CPU_REDUCE_ROW_BF16(max_bf16, -INFINITY, TSR_CPU_FMAX)
TSR_CPU_REDUCE_ROW_BF16(min_bf16, INFINITY, TSR_CPU_FMIN)
TSR_CPU_REDUCE_ROW_F16(sum_f16, 0.0, TSR_CPU_ADD)
TSR_CPU_REDUCE_ROW_F16(prod_f16, 1.0, TSR_CPU_MUL)
TSR_CPU_REDUCE_ROW_F16(max_f16, -INFINITY, TSR_CPU_FMAX)
TSR_CPU_REDUCE_ROW_F16(min_f16, INFINITY, TSR_CPU_FMIN)

static void combine_sum_f(tsr_cpu_acc *acc, const tsr_cpu_acc *p) { acc->f += p->f; }
static void combine_sum_u(tsr_cpu_acc *acc, const tsr_cpu_acc *p) { acc->u += p->u; }
static void combine_prod_f(tsr_cpu_acc *acc, const tsr_cpu_acc *p) { acc->f *= p->f; }
static void combine_prod_u(tsr_cpu_acc *acc, const tsr_cpu_acc *p) { acc->u *= p->u; }
static void combine_max_f(tsr_cpu_acc *acc, const tsr_cpu_acc *p) {
  acc->f = TSR_CPU_FMAX(acc->f, p->f);
}
static void combine_min_f(tsr_cpu_acc *acc, const tsr_cpu_acc *p) {
  acc->f = TSR_CPU_FMIN(acc->f, p->f);
}
static void combine_max_i(tsr_cpu_acc *acc, const tsr_cpu_acc *p) {
  acc->i = TSR_CPU_IMAX(acc->i, p->i);
}
static void combine_min_i(tsr_cpu_acc *acc, const tsr_cpu_acc *p) {
  acc->i = TSR_CPU_IMIN(acc->i, p->i);
}

static void store_f32(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(float *)out = (float)acc->f;
}
static void store_f64(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(double *)out = acc->f;
}
// The mean of nothing is 0 / 0: NaN, as the catalogue asks.
static void store_mean_f32(const tsr_cpu_acc *acc, int64_t count, char *out) {
  *(float *)out = (float)(acc->f / (double)count);
}
static void store_mean_f64(const tsr_cpu_acc *acc, int64_t count, char *out) {
  *(double *)out = acc->f / (double)count;
}
// The half types round the double result once, to nearest even.
static void store_bf16(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(uint16_t *)out = tsr_cpu_f64_to_bf16(acc->f);
}
static void store_f16(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(uint16_t *)out = tsr_cpu_f64_to_f16(acc->f);
}
static void store_mean_bf16(const tsr_cpu_acc *acc, int64_t count, char *out) {
  *(uint16_t *)out = tsr_cpu_f64_to_bf16(acc->f / (double)count);
}
static void store_mean_f16(const tsr_cpu_acc *acc, int64_t count, char *out) {
  *(uint16_t *)out = tsr_cpu_f64_to_f16(acc->f / (double)count);
}
static void store_u_i32(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(int32_t *)out = (int32_t)(uint32_t)acc->u;
}
static void store_u_i64(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(int64_t *)out = (int64_t)acc->u;
}
static void store_i_i32(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(int32_t *)out = (int32_t)acc->i;
}
static void store_i_i64(const tsr_cpu_acc *acc, int64_t count, char *out) {
  (void)count;
  *(int64_t *)out = acc->i;
}

// Folds reduced elements [begin, end) (row-major over the reduced
// dimensions) of the output element whose x starts at |x| into |acc|.
static void tsr_cpu_reduce_range_run(const tsr_cpu_reduce_plan *r, const char *x, int64_t begin,
                                     int64_t end, tsr_cpu_acc *acc) {
  const tsr_cpu_reduce_shape *s = &r->shape;
  const int32_t nd = s->red_ndim;
  // An empty reduction (a size-0 axis) has nothing to fold and would divide
  // by that 0 below.
  if (begin >= end) return;
  if (nd == 0) {
    r->row(x, 1, 0, acc);
    return;
  }
  const int32_t inner = nd - 1;
  int64_t idx[TSR_MAX_RANK];
  int64_t rem = begin;
  for (int32_t d = inner; d >= 0; --d) {
    idx[d] = rem % s->red_sizes[d];
    rem /= s->red_sizes[d];
  }
  while (begin < end) {
    const char *p = x;
    for (int32_t d = 0; d < nd; ++d) p += idx[d] * s->red_strides[d];
    int64_t n = s->red_sizes[inner] - idx[inner];
    if (n > end - begin) n = end - begin;
    r->row(p, n, s->red_strides[inner], acc);
    begin += n;
    idx[inner] += n;
    for (int32_t d = inner; d > 0 && idx[d] == s->red_sizes[d]; --d) {
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

// The partial result of segment |seg| of the output element at |x|.
static tsr_cpu_acc tsr_cpu_reduce_segment_run(const tsr_cpu_reduce_plan *r, const char *x,
                                              int64_t seg) {
  tsr_cpu_acc part = r->init;
  int64_t begin = seg * r->segment;
  int64_t end = begin + r->segment;
  if (end > r->shape.red_count) end = r->shape.red_count;
  tsr_cpu_reduce_range_run(r, x, begin, end, &part);
  return part;
}

typedef struct tsr_cpu_reduce_job {
  const tsr_cpu_reduce_plan *r;
  const char *x;
  char *out;
  tsr_cpu_acc *partials;
} tsr_cpu_reduce_job;

// Whole output elements [begin, end): every segment, folded in order.
static void tsr_cpu_reduce_outputs_run(void *arg, int64_t begin, int64_t end,
                                       int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_reduce_job *job = arg;
  const tsr_cpu_reduce_plan *r = job->r;
  for (int64_t o = begin; o < end; ++o) {
    int64_t x_offset, out_offset;
    tsr_cpu_reduce_shape_offsets_get(&r->shape, o, &x_offset, &out_offset);
    tsr_cpu_acc acc = r->init;
    for (int64_t seg = 0; seg < r->segments; ++seg) {
      tsr_cpu_acc part = tsr_cpu_reduce_segment_run(r, job->x + x_offset, seg);
      r->combine(&acc, &part);
    }
    r->store(&acc, r->shape.red_count, job->out + out_offset);
  }
}

// (output, segment) pairs [begin, end): partial results to the workspace.
static void tsr_cpu_reduce_segments_run(void *arg, int64_t begin, int64_t end,
                                        int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_reduce_job *job = arg;
  const tsr_cpu_reduce_plan *r = job->r;
  for (int64_t t = begin; t < end; ++t) {
    int64_t o = t / r->segments;
    int64_t x_offset, out_offset;
    tsr_cpu_reduce_shape_offsets_get(&r->shape, o, &x_offset, &out_offset);
    job->partials[t] = tsr_cpu_reduce_segment_run(r, job->x + x_offset, t % r->segments);
  }
}

// --- Column path -------------------------------------------------------------
// A bias gradient sums [N, C] over N: the general path walks each of the C
// outputs down a column, N strided loads through a function pointer, which is
// slow (docs/performance-log.md, "Measurements behind the code's decisions").
// Here rows of x are
// added into a chunk of double accumulators, a loop gcc vectorizes. Each
// output still folds its elements in the same order, in the same segments,
// from the same 0.0, so the bits equal the general path's.

// Outputs per task; their accumulators live on the stack.
#define TSR_CPU_REDUCE_COLUMNS 256

// Byte offset in x of reduced element |r| (row-major over the reduced axes).
static int64_t tsr_cpu_reduce_red_offset(const tsr_cpu_reduce_shape *s, int64_t r) {
  int64_t offset = 0;
  for (int32_t d = s->red_ndim - 1; d >= 0; --d) {
    offset += (r % s->red_sizes[d]) * s->red_strides[d];
    r /= s->red_sizes[d];
  }
  return offset;
}

#define TSR_CPU_REDUCE_COLUMNS_FN(name, T)                                                    \
  static void name(const tsr_cpu_reduce_plan *rp, const char *x, char *out, int64_t n) {      \
    const tsr_cpu_reduce_shape *s = &rp->shape;                                              \
    double acc[TSR_CPU_REDUCE_COLUMNS], part[TSR_CPU_REDUCE_COLUMNS];                        \
    for (int64_t j = 0; j < n; ++j) acc[j] = 0.0;                                            \
    for (int64_t seg = 0; seg < rp->segments; ++seg) {                                       \
      const int64_t begin = seg * rp->segment;                                               \
      const int64_t end = begin + rp->segment < s->red_count ? begin + rp->segment           \
                                                             : s->red_count;                 \
      for (int64_t j = 0; j < n; ++j) part[j] = 0.0;                                         \
      for (int64_t r = begin; r < end; ++r) {                                                \
        const T *row = (const T *)(const void *)(x + tsr_cpu_reduce_red_offset(s, r));       \
        for (int64_t j = 0; j < n; ++j) part[j] += (double)row[j];                           \
      }                                                                                      \
      for (int64_t j = 0; j < n; ++j) acc[j] += part[j];                                     \
    }                                                                                        \
    T *o = (T *)(void *)out;                                                                 \
    if (rp->mean) {                                                                          \
      const double count = (double)s->red_count;                                             \
      for (int64_t j = 0; j < n; ++j) o[j] = (T)(acc[j] / count);                            \
    } else {                                                                                 \
      for (int64_t j = 0; j < n; ++j) o[j] = (T)acc[j];                                      \
    }                                                                                        \
  }

TSR_CPU_REDUCE_COLUMNS_FN(tsr_cpu_reduce_columns_f32, float)
TSR_CPU_REDUCE_COLUMNS_FN(tsr_cpu_reduce_columns_f64, double)

// Tasks [begin, end): task t is chunk t % chunks of the innermost kept axis
// in row t / chunks of the outer kept axes.
static void tsr_cpu_reduce_columns_run(void *arg, int64_t begin, int64_t end,
                                       int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_reduce_job *job = arg;
  const tsr_cpu_reduce_plan *r = job->r;
  const tsr_cpu_reduce_shape *s = &r->shape;
  const int64_t inner = s->kept_sizes[s->kept_ndim - 1];
  const int64_t chunks = (inner + TSR_CPU_REDUCE_COLUMNS - 1) / TSR_CPU_REDUCE_COLUMNS;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t first = (t / chunks) * inner + (t % chunks) * TSR_CPU_REDUCE_COLUMNS;
    const int64_t left = inner - (t % chunks) * TSR_CPU_REDUCE_COLUMNS;
    const int64_t n = left < TSR_CPU_REDUCE_COLUMNS ? left : TSR_CPU_REDUCE_COLUMNS;
    int64_t x_offset, out_offset;
    tsr_cpu_reduce_shape_offsets_get(s, first, &x_offset, &out_offset);
    if (r->columns == 4) {
      tsr_cpu_reduce_columns_f32(r, job->x + x_offset, job->out + out_offset, n);
    } else {
      tsr_cpu_reduce_columns_f64(r, job->x + x_offset, job->out + out_offset, n);
    }
  }
}

static tsr_status tsr_cpu_reduce_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                         char *workspace) {
  const tsr_cpu_reduce_plan *r = &plan->u.reduce;
  tsr_cpu_reduce_job job = {r, ptrs[0], ptrs[1], (tsr_cpu_acc *)workspace};
  const int64_t out_count = r->shape.out_count;
  if (out_count == 0) return TSR_OK;
  const tsr_host_api *host = tsr_cpu_host_get();
  if (r->columns) {
    const int64_t inner = r->shape.kept_sizes[r->shape.kept_ndim - 1];
    const int64_t tasks = (out_count / inner) *
                          ((inner + TSR_CPU_REDUCE_COLUMNS - 1) / TSR_CPU_REDUCE_COLUMNS);
    const int64_t per_task = (r->shape.red_count > 0 ? r->shape.red_count : 1) *
                             (inner < TSR_CPU_REDUCE_COLUMNS ? inner : TSR_CPU_REDUCE_COLUMNS);
    if (tasks * per_task < 2 * TSR_CPU_REDUCE_GRAIN) {
      tsr_cpu_reduce_columns_run(&job, 0, tasks, 0);
      return TSR_OK;
    }
    const int64_t grain = TSR_CPU_REDUCE_GRAIN / per_task;
    return host->parallel_for(host->ctx, tasks, grain < 1 ? 1 : grain, tsr_cpu_reduce_columns_run,
                              &job);
  }
  if (r->split) {
    tsr_status status = host->parallel_for(host->ctx, out_count * r->segments, 1,
                                           tsr_cpu_reduce_segments_run, &job);
    if (status != TSR_OK) return status;
    for (int64_t o = 0; o < out_count; ++o) {
      int64_t x_offset, out_offset;
      tsr_cpu_reduce_shape_offsets_get(&r->shape, o, &x_offset, &out_offset);
      tsr_cpu_acc acc = r->init;
      for (int64_t seg = 0; seg < r->segments; ++seg) {
        r->combine(&acc, &job.partials[o * r->segments + seg]);
      }
      r->store(&acc, r->shape.red_count, job.out + out_offset);
    }
    return TSR_OK;
  }
  int64_t per_output = r->shape.red_count > 0 ? r->shape.red_count : 1;
  if (out_count * per_output < 2 * TSR_CPU_REDUCE_GRAIN) {
    tsr_cpu_reduce_outputs_run(&job, 0, out_count, 0);
    return TSR_OK;
  }
  int64_t grain = TSR_CPU_REDUCE_GRAIN / per_output;
  return host->parallel_for(host->ctx, out_count, grain < 1 ? 1 : grain,
                            tsr_cpu_reduce_outputs_run, &job);
}

typedef struct tsr_cpu_reduce_fns {
  tsr_cpu_reduce_row_fn row;
  tsr_cpu_reduce_combine_fn combine;
  tsr_cpu_reduce_store_fn store;
  tsr_cpu_acc init;
} tsr_cpu_reduce_fns;

// The functions for |fn| on |dtype| (any but bool).
static tsr_cpu_reduce_fns tsr_cpu_reduce_fns_get(tsr_reduce_fn_t fn, tsr_dtype_t dtype) {
  const int is_i32 = dtype == TSR_INT32;
  tsr_cpu_reduce_fns f;
  memset(&f, 0, sizeof(f));
  if (dtype != TSR_INT32 && dtype != TSR_INT64) {
    // Rows: float32, float64, bfloat16, float16.
    static const tsr_cpu_reduce_row_fn sums[] = {sum_f32, sum_f64, sum_bf16, sum_f16};
    static const tsr_cpu_reduce_row_fn prods[] = {prod_f32, prod_f64, prod_bf16, prod_f16};
    static const tsr_cpu_reduce_row_fn maxs[] = {max_f32, max_f64, max_bf16, max_f16};
    static const tsr_cpu_reduce_row_fn mins[] = {min_f32, min_f64, min_bf16, min_f16};
    static const tsr_cpu_reduce_store_fn stores[] = {store_f32, store_f64, store_bf16, store_f16};
    static const tsr_cpu_reduce_store_fn mean_stores[] = {store_mean_f32, store_mean_f64,
                                                          store_mean_bf16, store_mean_f16};
    // TSR_FLOAT32..TSR_FLOAT16 are 0..3.
    const int k = (int)dtype;
    switch (fn) {
      case TSR_REDUCE_SUM:
      case TSR_REDUCE_MEAN:
        f.row = sums[k];
        f.combine = combine_sum_f;
        f.init.f = 0.0;
        break;
      case TSR_REDUCE_PROD:
        f.row = prods[k];
        f.combine = combine_prod_f;
        f.init.f = 1.0;
        break;
      case TSR_REDUCE_MAX:
        f.row = maxs[k];
        f.combine = combine_max_f;
        f.init.f = -INFINITY;
        break;
      default:
        f.row = mins[k];
        f.combine = combine_min_f;
        f.init.f = INFINITY;
        break;
    }
    f.store = fn == TSR_REDUCE_MEAN ? mean_stores[k] : stores[k];
    return f;
  }
  switch (fn) {
    case TSR_REDUCE_SUM:
      f.row = is_i32 ? sum_i32 : sum_i64;
      f.combine = combine_sum_u;
      f.init.u = 0;
      break;
    case TSR_REDUCE_PROD:
      f.row = is_i32 ? prod_i32 : prod_i64;
      f.combine = combine_prod_u;
      f.init.u = 1;
      break;
    case TSR_REDUCE_MAX:
      f.row = is_i32 ? max_i32 : max_i64;
      f.combine = combine_max_i;
      f.init.i = INT64_MIN;
      break;
    default:
      f.row = is_i32 ? min_i32 : min_i64;
      f.combine = combine_min_i;
      f.init.i = INT64_MAX;
      break;
  }
  if (fn == TSR_REDUCE_SUM || fn == TSR_REDUCE_PROD) {
    f.store = is_i32 ? store_u_i32 : store_u_i64;
  } else {
    f.store = is_i32 ? store_i_i32 : store_i_i64;
  }
  return f;
}

tsr_status tsr_cpu_reduce_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  static const char *const fn_names[] = {"sum", "mean", "max", "min", "prod"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 1, names);
  if (status != TSR_OK) return status;
  const tsr_reduce_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, sizeof(tsr_reduce_attrs), (const void **)&attrs);
  if (status != TSR_OK) return status;
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  if (attrs->fn < 0 || attrs->fn >= TSR_REDUCE_FN_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(attrs->fn < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "reduce: attrs fn %d is not a reduce fn",
                             (int)attrs->fn);
  }
  const char *fn_name = fn_names[attrs->fn];
  uint32_t rank_mask = x->rank >= 32 ? ~0u : (1u << x->rank) - 1u;
  if ((attrs->axes_mask & ~rank_mask) != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "reduce: axes_mask 0x%x names axes beyond x's rank %d",
                             (unsigned)attrs->axes_mask, (int)x->rank);
  }
  if (x->dtype == TSR_BOOL) {
    // The catalogue does not define reductions of bool; ref does not guess.
    return tsr_cpu_error_set(TSR_UNSUPPORTED, "ref: reduce %s on bool is not implemented",
                             fn_name);
  }
  status = tsr_cpu_dtype_check(
      signature, x, attrs->fn == TSR_REDUCE_MEAN ? TSR_CPU_DTYPES_FLOAT : TSR_CPU_DTYPES_NUMBER,
      attrs->fn == TSR_REDUCE_MEAN ? "mean takes float" : "reduce takes float and int");
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, x, out);
  if (status != TSR_OK) return status;
  if (out->rank != x->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "reduce: out rank %d differs from x rank %d",
                             (int)out->rank, (int)x->rank);
  }
  for (int32_t d = 0; d < x->rank; ++d) {
    int reduced = (attrs->axes_mask >> d) & 1u;
    int64_t want = reduced ? 1 : x->sizes[d];
    if (out->sizes[d] != want) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "reduce: out sizes[%d] is %lld, expected %lld%s",
                               (int)d, (long long)out->sizes[d], (long long)want,
                               reduced ? " (a reduced axis)" : " (x's size)");
    }
    if (reduced && x->sizes[d] == 0 &&
        (attrs->fn == TSR_REDUCE_MAX || attrs->fn == TSR_REDUCE_MIN)) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "reduce: %s of empty axis %d is undefined",
                               fn_name, (int)d);
    }
  }
  status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;

  tsr_cpu_reduce_plan *r = &plan->u.reduce;
  memset(r, 0, sizeof(*r));
  tsr_cpu_reduce_shape_init(&r->shape, x->rank, x->sizes, x->strides, x->elem_size, out->strides,
                            out->elem_size, attrs->axes_mask);
  tsr_cpu_reduce_fns fns = tsr_cpu_reduce_fns_get(attrs->fn, x->dtype);
  r->row = fns.row;
  r->combine = fns.combine;
  r->store = fns.store;
  r->init = fns.init;
  r->segment = TSR_CPU_REDUCE_SEGMENT;
  r->segments = (r->shape.red_count + r->segment - 1) / r->segment;
  if (r->segments < 1) r->segments = 1;
  // Few outputs over long reductions: threads share the segments of each
  // output instead of the outputs. Same partials, same order, same result.
  int32_t threads = tsr_cpu_thread_count_get();
  if (threads > 1 && r->segments >= 2 && r->shape.out_count < 2 * threads) {
    uint64_t bytes = (uint64_t)r->shape.out_count * (uint64_t)r->segments * sizeof(tsr_cpu_acc);
    r->split = 1;
    plan->workspace_bytes = bytes + 64;
  }
  // The column path: float SUM or MEAN, the innermost kept axis contiguous
  // in x and out and long enough to fill vectors, the innermost reduced one
  // not (that one the general path's row function reads with 8 lanes).
  const tsr_cpu_reduce_shape *sh = &r->shape;
  const int32_t kin = sh->kept_ndim - 1;
  if (!r->split && (x->dtype == TSR_FLOAT32 || x->dtype == TSR_FLOAT64) &&
      (attrs->fn == TSR_REDUCE_SUM || attrs->fn == TSR_REDUCE_MEAN) && kin >= 0 &&
      sh->red_ndim > 0 && sh->red_count > 0 && sh->kept_sizes[kin] >= 8 &&
      sh->kept_x_strides[kin] == x->elem_size && sh->kept_out_strides[kin] == out->elem_size &&
      sh->red_strides[sh->red_ndim - 1] != x->elem_size) {
    r->columns = (int32_t)x->elem_size;
    r->mean = attrs->fn == TSR_REDUCE_MEAN;
  }
  plan->execute = tsr_cpu_reduce_execute;
  plan->engine = "ref:segmented-reduce";
  return TSR_OK;
}
