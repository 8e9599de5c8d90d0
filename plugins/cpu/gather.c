// GATHER (index_select) and SCATTER_ADD (index_add) along one axis.
//
// GATHER copies slabs: bandwidth-bound, each (outer, k) slab one memcpy when
// contiguous. SCATTER_ADD sorts the index list by destination (a counting
// sort into the workspace) and then gives each (outer, destination) slab to
// one thread, which adds its sources in index order through a float32 (or
// wider) accumulator a chunk of a row at a time: no atomics, and the same
// additions in the same order whatever the thread count.
#include <string.h>

#include "data_ops.h"
#include "half.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// Elements per parallel chunk.
#define TSR_CPU_INDEX_CHUNK_ELEMS 32768
// Elements of a row SCATTER_ADD accumulates at once (its stack accumulator).
#define TSR_CPU_SCATTER_CHUNK 256

static inline int64_t tsr_cpu_index_at(const tsr_cpu_index_plan *ix, const char *index, int64_t k) {
  if (ix->index_is_i64) return ((const int64_t *)(const void *)index)[k * ix->index_stride];
  return ((const int32_t *)(const void *)index)[k * ix->index_stride];
}

// Checks every index before anything is written (9.3: a data-dependent
// error). Formats only on failure.
static tsr_status tsr_cpu_index_check(const tsr_plugin_plan *plan, const char *index) {
  const tsr_cpu_index_plan *ix = &plan->u.index;
  for (int64_t k = 0; k < ix->k; ++k) {
    int64_t v = tsr_cpu_index_at(ix, index, k);
    if (v < 0 || v >= ix->size) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: index[%lld] is %lld, outside [0, %lld) (%s sizes[%d])",
                               tsr_op_name(plan->op), (long long)k, (long long)v,
                               (long long)ix->size, plan->op == TSR_OP_GATHER ? "x" : "out",
                               (int)ix->axis);
    }
  }
  return TSR_OK;
}

typedef struct tsr_cpu_index_job {
  const tsr_plugin_plan *plan;
  char *const *ptrs;
  const int64_t *starts;  // SCATTER_ADD: destination j's sources are order[starts[j], starts[j+1])
  const int64_t *order;
} tsr_cpu_index_job;

// ---------------------------------------------------------------------------
// GATHER: items (outer o, k), t = o * K + k.
static void tsr_cpu_gather_items_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_index_job *job = arg;
  const tsr_plugin_plan *plan = job->plan;
  const tsr_cpu_index_plan *ix = &plan->u.index;
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[2];
  const char *index = job->ptrs[1];
  const int64_t e = out->elem_size;
  const int32_t axis = ix->axis;
  int64_t o = begin / ix->k, k = begin % ix->k;
  int64_t x_off, out_off;
  tsr_cpu_offsets_get(o, axis, out->sizes, x->strides, out->strides, &x_off, &out_off);
  for (int64_t t = begin; t < end; ++t) {
    int64_t i = tsr_cpu_index_at(ix, index, k);
    tsr_cpu_block_copy(job->ptrs[2] + (out_off + k * out->strides[axis]) * e, out->strides,
                       job->ptrs[0] + (x_off + i * x->strides[axis]) * e, x->strides, x->sizes,
                       axis + 1, &ix->row, (uint32_t)e);
    if (++k == ix->k && t + 1 < end) {
      k = 0;
      ++o;
      tsr_cpu_offsets_get(o, axis, out->sizes, x->strides, out->strides, &x_off, &out_off);
    }
  }
}

static tsr_status tsr_cpu_gather_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                         char *workspace) {
  (void)workspace;
  const tsr_cpu_index_plan *ix = &plan->u.index;
  if (plan->operands[2].numel == 0) return TSR_OK;
  tsr_status status = tsr_cpu_index_check(plan, ptrs[1]);
  if (status != TSR_OK) return status;
  tsr_cpu_index_job job = {plan, ptrs, NULL, NULL};
  const int64_t items = ix->outer_count * ix->k;
  if (ix->grain == 0) {
    tsr_cpu_gather_items_run(&job, 0, items, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  return host->parallel_for(host->ctx, items, ix->grain, tsr_cpu_gather_items_run, &job);
}

// ---------------------------------------------------------------------------
// SCATTER_ADD's adders: dst[e] += src_k[e] for each k of |ks| in order, for
// |n| <= TSR_CPU_SCATTER_CHUNK elements, through an accumulator of type A.
// int adds as unsigned, which wraps as the catalogue asks.
#define TSR_CPU_SCATTER_ROWS(S, T, A, LOAD, STORE)                                           \
  static void tsr_cpu_scatter_rows_##S(char *dst, int64_t dst_step, const char *src,         \
                                       int64_t src_step, int64_t src_k_step, const int64_t *ks, \
                                       int64_t nk, int64_t n) {                              \
    A acc[TSR_CPU_SCATTER_CHUNK];                                                            \
    for (int64_t e = 0; e < n; ++e) {                                                        \
      T v;                                                                                   \
      memcpy(&v, dst + e * dst_step, sizeof(T));                                             \
      acc[e] = LOAD(v);                                                                      \
    }                                                                                        \
    if (src_step == (int64_t)sizeof(T)) {                                                    \
      for (int64_t t = 0; t < nk; ++t) {                                                     \
        const T *s = (const T *)(const void *)(src + ks[t] * src_k_step);                    \
        for (int64_t e = 0; e < n; ++e) acc[e] += LOAD(s[e]);                                \
      }                                                                                      \
    } else {                                                                                 \
      for (int64_t t = 0; t < nk; ++t) {                                                     \
        const char *s = src + ks[t] * src_k_step;                                            \
        for (int64_t e = 0; e < n; ++e) {                                                    \
          T v;                                                                               \
          memcpy(&v, s + e * src_step, sizeof(T));                                           \
          acc[e] += LOAD(v);                                                                 \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
    for (int64_t e = 0; e < n; ++e) {                                                        \
      T v = STORE(acc[e]);                                                                   \
      memcpy(dst + e * dst_step, &v, sizeof(T));                                             \
    }                                                                                        \
  }

#define TSR_CPU_SAME(v) (v)
TSR_CPU_SCATTER_ROWS(f32, float, float, TSR_CPU_SAME, TSR_CPU_SAME)
TSR_CPU_SCATTER_ROWS(f64, double, double, TSR_CPU_SAME, TSR_CPU_SAME)
TSR_CPU_SCATTER_ROWS(bf16, uint16_t, float, tsr_cpu_bf16_to_f32, tsr_cpu_f32_to_bf16)
TSR_CPU_SCATTER_ROWS(f16, uint16_t, float, tsr_cpu_f16_to_f32, tsr_cpu_f32_to_f16)
TSR_CPU_SCATTER_ROWS(u32, uint32_t, uint32_t, TSR_CPU_SAME, TSR_CPU_SAME)
TSR_CPU_SCATTER_ROWS(u64, uint64_t, uint64_t, TSR_CPU_SAME, TSR_CPU_SAME)

// SCATTER_ADD: items (outer o, destination j), t = o * S + j.
static void tsr_cpu_scatter_items_run(void *arg, int64_t begin, int64_t end,
                                      int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_index_job *job = arg;
  const tsr_plugin_plan *plan = job->plan;
  const tsr_cpu_index_plan *ix = &plan->u.index;
  const tsr_cpu_operand *src = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[2];
  const int64_t e = out->elem_size;
  const int32_t axis = ix->axis;
  const tsr_cpu_row *row = &ix->row;
  const int64_t dst_step = row->dst_step * e, src_step = row->src_step * e;
  const int64_t src_k_step = src->strides[axis] * e;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t j = t % ix->size;
    const int64_t *ks = job->order + job->starts[j];
    const int64_t nk = job->starts[j + 1] - job->starts[j];
    if (nk == 0) continue;
    int64_t src_off, out_off;
    tsr_cpu_offsets_get(t / ix->size, axis, out->sizes, src->strides, out->strides, &src_off,
                        &out_off);
    char *dst_slab = job->ptrs[2] + (out_off + j * out->strides[axis]) * e;
    const char *src_slab = job->ptrs[0] + src_off * e;
    int64_t idx[TSR_MAX_RANK] = {0};
    int64_t d_off = 0, s_off = 0;  // elements inside the slabs
    do {
      for (int64_t c = 0; c < row->n; c += TSR_CPU_SCATTER_CHUNK) {
        int64_t n = row->n - c < TSR_CPU_SCATTER_CHUNK ? row->n - c : TSR_CPU_SCATTER_CHUNK;
        ix->add(dst_slab + d_off * e + c * dst_step, dst_step, src_slab + s_off * e + c * src_step,
                src_step, src_k_step, ks, nk, n);
      }
    } while (tsr_cpu_odometer_next(idx, axis + 1, row->dim, out->sizes, out->strides,
                                   src->strides, &d_off, &s_off));
  }
}

static tsr_status tsr_cpu_scatter_add_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                              char *workspace) {
  const tsr_cpu_index_plan *ix = &plan->u.index;
  if (plan->operands[2].numel == 0 || plan->operands[0].numel == 0) return TSR_OK;
  tsr_status status = tsr_cpu_index_check(plan, ptrs[1]);
  if (status != TSR_OK) return status;
  // Counting sort of 0..K-1 by index value: starts[j] is where destination
  // j's sources begin in |order|, each list in increasing k.
  int64_t *starts = (int64_t *)(void *)workspace;
  int64_t *order = starts + ix->size + 1;
  memset(starts, 0, (size_t)(ix->size + 1) * sizeof(int64_t));
  for (int64_t k = 0; k < ix->k; ++k) starts[tsr_cpu_index_at(ix, ptrs[1], k) + 1]++;
  for (int64_t j = 0; j < ix->size; ++j) starts[j + 1] += starts[j];
  for (int64_t k = 0; k < ix->k; ++k) order[starts[tsr_cpu_index_at(ix, ptrs[1], k)]++] = k;
  // Each starts[j] now holds the end of j's list, the start of j + 1's.
  for (int64_t j = ix->size; j > 0; --j) starts[j] = starts[j - 1];
  starts[0] = 0;

  tsr_cpu_index_job job = {plan, ptrs, starts, order};
  const int64_t items = ix->outer_count * ix->size;
  if (ix->grain == 0) {
    tsr_cpu_scatter_items_run(&job, 0, items, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  return host->parallel_for(host->ctx, items, ix->grain, tsr_cpu_scatter_items_run, &job);
}

// ---------------------------------------------------------------------------
// Plans. |names| are (values, index, out); the values operand has K on the
// axis, the other (|indexed|) the size the index selects from.
static tsr_status tsr_cpu_index_plan_init(const tsr_op_signature *signature,
                                          tsr_plugin_plan *plan, const char *const *names,
                                          int is_gather) {
  const char *op = is_gather ? "gather" : "scatter_add";
  tsr_status status = tsr_cpu_operands_init(signature, plan, 2, 2, 1, names);
  if (status != TSR_OK) return status;
  const tsr_gather_attrs *attrs = signature->attrs;
  int32_t axis = 0;
  if (attrs != NULL) {
    if (attrs->struct_size < sizeof(size_t)) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: attrs struct_size %zu is too small", op,
                               attrs->struct_size);
    }
    if (TSR_ABI_COVERS(attrs, tsr_gather_attrs, axis)) axis = attrs->axis;
    if (TSR_ABI_COVERS(attrs, tsr_gather_attrs, reserved) && attrs->reserved != 0) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: attrs reserved is %u, not 0", op,
                               (unsigned)attrs->reserved);
    }
  }
  const tsr_cpu_operand *values = &plan->operands[is_gather ? 2 : 0];   // out or src: K on axis
  const tsr_cpu_operand *indexed = &plan->operands[is_gather ? 0 : 2];  // x or out
  const tsr_cpu_operand *index = &plan->operands[1];
  const tsr_cpu_operand *out = &plan->operands[2];
  status = tsr_cpu_dtype_check(signature, indexed,
                               is_gather ? TSR_CPU_DTYPES_ALL : TSR_CPU_DTYPES_NUMBER,
                               is_gather ? "gather takes every dtype"
                                         : "scatter_add takes float and int");
  if (status == TSR_OK) status = tsr_cpu_same_dtype_check(signature, indexed, values);
  if (status == TSR_OK) {
    status = tsr_cpu_dtype_check(signature, index, TSR_CPU_DTYPES_INT, "index is int32 or int64");
  }
  if (status != TSR_OK) return status;
  if (index->rank != 1) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: index rank is %d, expected 1", op,
                             (int)index->rank);
  }
  if (axis < 0 || axis >= indexed->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: axis %d is outside [0, %d) (%s rank)", op,
                             (int)axis, (int)indexed->rank, indexed->name);
  }
  if (values->rank != indexed->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s rank %d differs from %s rank %d", op,
                             values->name, (int)values->rank, indexed->name, (int)indexed->rank);
  }
  const int64_t k = index->sizes[0];
  for (int32_t d = 0; d < indexed->rank; ++d) {
    int64_t want = d == axis ? k : indexed->sizes[d];
    if (values->sizes[d] != want) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s sizes[%d] is %lld, expected %lld%s",
                               op, values->name, (int)d, (long long)values->sizes[d],
                               (long long)want,
                               d == axis ? " (the index length)" : "");
    }
  }
  status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;

  tsr_cpu_index_plan *ix = &plan->u.index;
  memset(ix, 0, sizeof(*ix));
  ix->axis = axis;
  ix->index_is_i64 = index->dtype == TSR_INT64;
  ix->k = k;
  ix->size = indexed->sizes[axis];
  ix->index_stride = index->strides[0];
  ix->outer_count = 1;
  for (int32_t d = 0; d < axis; ++d) ix->outer_count *= out->sizes[d];
  ix->slab_elems = 1;
  for (int32_t d = axis + 1; d < out->rank; ++d) ix->slab_elems *= out->sizes[d];
  const tsr_cpu_operand *src = &plan->operands[0];
  if (out->numel > 0 && src->numel > 0) {
    tsr_cpu_row_init(out->sizes, out->strides, src->strides, axis + 1, out->rank, &ix->row);
  }
  // Work per item: GATHER copies one slab; SCATTER_ADD reads its
  // destination slab and about K / S source slabs.
  const int64_t items = ix->outer_count * (is_gather ? ix->k : ix->size);
  int64_t item_elems = ix->slab_elems;
  if (!is_gather && ix->size > 0) item_elems *= 1 + ix->k / ix->size;
  if (item_elems < 1) item_elems = 1;
  if (items >= 2 && items * item_elems >= 2 * TSR_CPU_INDEX_CHUNK_ELEMS) {
    ix->grain = item_elems >= TSR_CPU_INDEX_CHUNK_ELEMS ? 1 : TSR_CPU_INDEX_CHUNK_ELEMS / item_elems;
  }
  if (is_gather) {
    plan->execute = tsr_cpu_gather_execute;
    plan->engine = "ref:gather";
    return TSR_OK;
  }
  switch (out->dtype) {
    case TSR_FLOAT32: ix->add = tsr_cpu_scatter_rows_f32; break;
    case TSR_FLOAT64: ix->add = tsr_cpu_scatter_rows_f64; break;
    case TSR_BFLOAT16: ix->add = tsr_cpu_scatter_rows_bf16; break;
    case TSR_FLOAT16: ix->add = tsr_cpu_scatter_rows_f16; break;
    case TSR_INT32: ix->add = tsr_cpu_scatter_rows_u32; break;
    default: ix->add = tsr_cpu_scatter_rows_u64; break;
  }
  // The counting sort's starts (S + 1) and order (K), 64 bytes of alignment
  // slack included as plan_execute expects.
  plan->workspace_bytes = (uint64_t)(ix->size + 1 + ix->k) * sizeof(int64_t) + 64;
  plan->execute = tsr_cpu_scatter_add_execute;
  plan->engine = "ref:scatter-add-sorted";
  return TSR_OK;
}

tsr_status tsr_cpu_gather_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "index", "out"};
  return tsr_cpu_index_plan_init(signature, plan, names, 1);
}

tsr_status tsr_cpu_scatter_add_plan_init(const tsr_op_signature *signature,
                                         tsr_plugin_plan *plan) {
  static const char *const names[] = {"src", "index", "out"};
  return tsr_cpu_index_plan_init(signature, plan, names, 0);
}
