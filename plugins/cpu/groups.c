// Groups of a tensor: collapsing, offsets, packing to float64 and back.
#include "groups.h"

#include <string.h>

#include "half.h"

// Elements per parallel chunk: large enough that a pool hand-off (about a
// microsecond) is noise next to the work.
#define TSR_CPU_GROUPS_CHUNK_ELEMENTS 32768
// Most scratch a block of packed groups may take.
#define TSR_CPU_GROUPS_BLOCK_BYTES (128 * 1024)

// Appends dimension |d| to the (sizes, strides) list |n| long, merging it into
// the previous one when every operand steps over the previous one's extent.
static void tsr_cpu_groups_dim_push(int32_t *n, int64_t *out_sizes,
                                    int64_t (*out_strides)[TSR_CPU_GROUPS_MAX_OPERANDS],
                                    int32_t num_operands, int64_t size, const int64_t *strides) {
  int32_t last = *n - 1;
  if (last >= 0) {
    int merge = 1;
    for (int32_t k = 0; k < num_operands; ++k) {
      if (out_strides[last][k] != strides[k] * size)
        merge = 0;
    }
    if (merge) {
      out_sizes[last] *= size;
      for (int32_t k = 0; k < num_operands; ++k) out_strides[last][k] = strides[k];
      return;
    }
  }
  out_sizes[*n] = size;
  for (int32_t k = 0; k < num_operands; ++k) out_strides[*n][k] = strides[k];
  ++*n;
}

void tsr_cpu_groups_init(tsr_cpu_groups *g, int32_t rank, const int64_t *sizes, uint32_t inner_mask,
                         int32_t num_operands, const int64_t *const *strides,
                         const int64_t *elem_sizes) {
  memset(g, 0, sizeof(*g));
  g->num_operands = num_operands;
  g->count = 1;
  g->size = 1;
  for (int32_t d = 0; d < rank; ++d) {
    const int inner = (inner_mask >> d) & 1u;
    if (inner) {
      g->size *= sizes[d];
    } else {
      g->count *= sizes[d];
    }
    if (sizes[d] == 1)
      continue;
    int64_t bytes[TSR_CPU_GROUPS_MAX_OPERANDS];
    for (int32_t k = 0; k < num_operands; ++k) bytes[k] = strides[k][d] * elem_sizes[k];
    if (inner) {
      tsr_cpu_groups_dim_push(&g->inner_ndim, g->inner_sizes, g->inner_strides, num_operands,
                              sizes[d], bytes);
    } else {
      tsr_cpu_groups_dim_push(&g->outer_ndim, g->outer_sizes, g->outer_strides, num_operands,
                              sizes[d], bytes);
    }
  }
}

void tsr_cpu_groups_offsets_get(const tsr_cpu_groups *g, int64_t index, int64_t *offsets) {
  for (int32_t k = 0; k < g->num_operands; ++k) offsets[k] = 0;
  for (int32_t d = g->outer_ndim - 1; d >= 0; --d) {
    const int64_t i = index % g->outer_sizes[d];
    index /= g->outer_sizes[d];
    for (int32_t k = 0; k < g->num_operands; ++k) offsets[k] += i * g->outer_strides[d][k];
  }
}

double tsr_cpu_float_load(tsr_dtype_t dtype, const char *p) {
  switch (dtype) {
    case TSR_FLOAT32:
      return *(const float *)p;
    case TSR_FLOAT64:
      return *(const double *)p;
    case TSR_BFLOAT16:
      return tsr_cpu_bf16_to_f32(*(const uint16_t *)p);
    default:
      return tsr_cpu_f16_to_f32(*(const uint16_t *)p);
  }
}

void tsr_cpu_float_store(tsr_dtype_t dtype, char *p, double v) {
  switch (dtype) {
    case TSR_FLOAT32:
      *(float *)p = (float)v;
      break;
    case TSR_FLOAT64:
      *(double *)p = v;
      break;
    case TSR_BFLOAT16:
      *(uint16_t *)p = tsr_cpu_f32_to_bf16((float)v);
      break;
    default:
      *(uint16_t *)p = tsr_cpu_f32_to_f16((float)v);
      break;
  }
}

// One row of |n| elements |stride| bytes apart, converted in a loop per
// dtype so the conversion is chosen once per row, not per element.
static void tsr_cpu_row_load(tsr_dtype_t dtype, const char *src, int64_t stride, int64_t n,
                             double *dst) {
  switch (dtype) {
    case TSR_FLOAT32:
      if (stride == 4) {
        const float *s = (const float *)src;
        for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = *(const float *)(src + i * stride);
      }
      break;
    case TSR_FLOAT64:
      if (stride == 8) {
        memcpy(dst, src, (size_t)n * 8);
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = *(const double *)(src + i * stride);
      }
      break;
    case TSR_BFLOAT16:
      for (int64_t i = 0; i < n; ++i)
        dst[i] = tsr_cpu_bf16_to_f32(*(const uint16_t *)(src + i * stride));
      break;
    default:
      for (int64_t i = 0; i < n; ++i)
        dst[i] = tsr_cpu_f16_to_f32(*(const uint16_t *)(src + i * stride));
      break;
  }
}

static void tsr_cpu_row_store(tsr_dtype_t dtype, char *dst, int64_t stride, int64_t n,
                              const double *src) {
  switch (dtype) {
    case TSR_FLOAT32:
      if (stride == 4) {
        float *d = (float *)dst;
        for (int64_t i = 0; i < n; ++i) d[i] = (float)src[i];
      } else {
        for (int64_t i = 0; i < n; ++i) *(float *)(dst + i * stride) = (float)src[i];
      }
      break;
    case TSR_FLOAT64:
      if (stride == 8) {
        memcpy(dst, src, (size_t)n * 8);
      } else {
        for (int64_t i = 0; i < n; ++i) *(double *)(dst + i * stride) = src[i];
      }
      break;
    case TSR_BFLOAT16:
      for (int64_t i = 0; i < n; ++i)
        *(uint16_t *)(dst + i * stride) = tsr_cpu_f32_to_bf16((float)src[i]);
      break;
    default:
      for (int64_t i = 0; i < n; ++i)
        *(uint16_t *)(dst + i * stride) = tsr_cpu_f32_to_f16((float)src[i]);
      break;
  }
}

// |count| rows of |n| elements, row j starting |row_stride| bytes after row
// j - 1, elements |stride| bytes apart; element e of row j is dst[j * ld + e].
// The loop runs across the rows for each element, so when the rows are
// neighbours in memory (a softmax over a non-innermost axis) every cache line
// and page is used |count| times at once instead of once per row.
#define TSR_CPU_ROWS_LOAD(T, CVT)                                                                \
  for (int64_t e = 0; e < n; ++e) {                                                              \
    const char *p = src + e * stride;                                                            \
    for (int64_t j = 0; j < count; ++j) dst[j * ld + e] = CVT(*(const T *)(p + j * row_stride)); \
  }
#define TSR_CPU_ROWS_STORE(T, CVT)                                                         \
  for (int64_t e = 0; e < n; ++e) {                                                        \
    char *p = dst + e * stride;                                                            \
    for (int64_t j = 0; j < count; ++j) *(T *)(p + j * row_stride) = CVT(src[j * ld + e]); \
  }
#define TSR_CPU_ID(v) (v)
#define TSR_CPU_TO_F32(v) ((float)(v))
#define TSR_CPU_TO_BF16(v) tsr_cpu_f32_to_bf16((float)(v))
#define TSR_CPU_TO_F16(v) tsr_cpu_f32_to_f16((float)(v))

static void tsr_cpu_rows_load(tsr_dtype_t dtype, const char *src, int64_t stride, int64_t n,
                              int64_t row_stride, int64_t count, double *dst, int64_t ld) {
  if (count == 1) {
    tsr_cpu_row_load(dtype, src, stride, n, dst);
    return;
  }
  switch (dtype) {
    case TSR_FLOAT32:
      TSR_CPU_ROWS_LOAD(float, TSR_CPU_ID) break;
    case TSR_FLOAT64:
      TSR_CPU_ROWS_LOAD(double, TSR_CPU_ID) break;
    case TSR_BFLOAT16:
      TSR_CPU_ROWS_LOAD(uint16_t, tsr_cpu_bf16_to_f32) break;
    default:
      TSR_CPU_ROWS_LOAD(uint16_t, tsr_cpu_f16_to_f32) break;
  }
}

static void tsr_cpu_rows_store(tsr_dtype_t dtype, char *dst, int64_t stride, int64_t n,
                               int64_t row_stride, int64_t count, const double *src, int64_t ld) {
  if (count == 1) {
    tsr_cpu_row_store(dtype, dst, stride, n, src);
    return;
  }
  switch (dtype) {
    case TSR_FLOAT32:
      TSR_CPU_ROWS_STORE(float, TSR_CPU_TO_F32) break;
    case TSR_FLOAT64:
      TSR_CPU_ROWS_STORE(double, TSR_CPU_ID) break;
    case TSR_BFLOAT16:
      TSR_CPU_ROWS_STORE(uint16_t, TSR_CPU_TO_BF16) break;
    default:
      TSR_CPU_ROWS_STORE(uint16_t, TSR_CPU_TO_F16) break;
  }
}

// Loads or stores |count| groups, neighbours along the innermost outer
// dimension, one row of the innermost inner dimension at a time.
static void tsr_cpu_groups_walk(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype, char *base,
                                int64_t count, double *buf, int store) {
  if (g->size == 0 || count == 0)
    return;
  const int64_t group_stride = g->outer_ndim > 0 ? g->outer_strides[g->outer_ndim - 1][k] : 0;
  const int32_t nd = g->inner_ndim;
  const int64_t n = nd > 0 ? g->inner_sizes[nd - 1] : 1;
  const int64_t stride = nd > 0 ? g->inner_strides[nd - 1][k] : 0;
  const int64_t rows = g->size / n;
  int64_t idx[TSR_MAX_RANK] = {0};
  for (int64_t row = 0; row < rows; ++row) {
    char *p = base;
    for (int32_t d = 0; d < nd - 1; ++d) p += idx[d] * g->inner_strides[d][k];
    if (store) {
      tsr_cpu_rows_store(dtype, p, stride, n, group_stride, count, buf + row * n, g->size);
    } else {
      tsr_cpu_rows_load(dtype, p, stride, n, group_stride, count, buf + row * n, g->size);
    }
    for (int32_t d = nd - 2; d >= 0 && ++idx[d] == g->inner_sizes[d]; --d) idx[d] = 0;
  }
}

void tsr_cpu_groups_load(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype, const char *base,
                         double *dst) {
  tsr_cpu_groups_walk(g, k, dtype, (char *)base, 1, dst, 0);
}

void tsr_cpu_groups_store(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype, char *base,
                          const double *src) {
  tsr_cpu_groups_walk(g, k, dtype, base, 1, (double *)src, 1);
}

void tsr_cpu_groups_load_many(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype,
                              const char *base, int64_t count, double *dst) {
  tsr_cpu_groups_walk(g, k, dtype, (char *)base, count, dst, 0);
}

void tsr_cpu_groups_store_many(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype, char *base,
                               int64_t count, const double *src) {
  tsr_cpu_groups_walk(g, k, dtype, base, count, (double *)src, 1);
}

int64_t tsr_cpu_groups_run_left(const tsr_cpu_groups *g, int64_t index) {
  if (g->outer_ndim == 0)
    return 1;
  const int64_t n = g->outer_sizes[g->outer_ndim - 1];
  return n - index % n;
}

int64_t tsr_cpu_groups_block(const tsr_cpu_groups *g, int32_t k, int64_t elem_size) {
  // Worth it when a group's elements are far apart and its neighbours are
  // near: the group stride within a cache line, the element stride beyond.
  if (g->outer_ndim == 0 || g->inner_ndim == 0 || g->size == 0)
    return 1;
  const int64_t group_stride = g->outer_strides[g->outer_ndim - 1][k];
  const int64_t element_stride = g->inner_strides[g->inner_ndim - 1][k];
  if (group_stride > 4 * elem_size || element_stride < 64)
    return 1;
  // Up to 16 groups, their packed doubles within 128 KiB (L2).
  int64_t block = TSR_CPU_GROUPS_BLOCK_BYTES / (g->size * 8);
  if (block > 16)
    block = 16;
  if (block > g->outer_sizes[g->outer_ndim - 1])
    block = g->outer_sizes[g->outer_ndim - 1];
  return block < 1 ? 1 : block;
}

int64_t tsr_cpu_groups_grain(int64_t size) {
  int64_t grain = TSR_CPU_GROUPS_CHUNK_ELEMENTS / (size > 0 ? size : 1);
  return grain < 1 ? 1 : grain;
}
