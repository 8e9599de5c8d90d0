// Strided copies shared by CONCAT, PAD, GATHER and SCATTER_ADD.
#include <string.h>

#include "convert.h"
#include "data_ops.h"
#include "half.h"

void tsr_cpu_row_init(const int64_t *sizes, const int64_t *dst_strides, const int64_t *src_strides,
                      int32_t first, int32_t rank, tsr_cpu_row *out_row) {
  // Grow the row outwards from the last dimension while the next dimension
  // steps over exactly one row in both views. Size-1 dimensions join freely.
  tsr_cpu_row row = {.dim = rank, .n = 1, .dst_step = 1, .src_step = 1};
  for (int32_t d = rank - 1; d >= first; --d) {
    if (sizes[d] == 1) {
      row.dim = d;
    } else if (row.n == 1) {
      row.dim = d;
      row.n = sizes[d];
      row.dst_step = dst_strides[d];
      row.src_step = src_strides[d];
    } else if (dst_strides[d] == row.dst_step * row.n && src_strides[d] == row.src_step * row.n) {
      row.dim = d;
      row.n *= sizes[d];
    } else {
      break;
    }
  }
  *out_row = row;
}

#define TSR_CPU_STRIDED_COPY(T)                                                   \
  for (int64_t i = 0; i < n; ++i) {                                               \
    memcpy(dst + i * dst_step, src + i * src_step, sizeof(T));                    \
  }

void tsr_cpu_elems_copy(char *dst, int64_t dst_step, const char *src, int64_t src_step, int64_t n,
                        uint32_t elem_size) {
  if (dst_step == (int64_t)elem_size && src_step == (int64_t)elem_size) {
    memcpy(dst, src, (size_t)n * elem_size);
    return;
  }
  // Fixed-size memcpy compiles to one load and one store.
  switch (elem_size) {
    case 1: TSR_CPU_STRIDED_COPY(uint8_t) break;
    case 2: TSR_CPU_STRIDED_COPY(uint16_t) break;
    case 4: TSR_CPU_STRIDED_COPY(uint32_t) break;
    default: TSR_CPU_STRIDED_COPY(uint64_t) break;
  }
}

#define TSR_CPU_STRIDED_FILL(T)                                    \
  {                                                                \
    const T v = (T)bits;                                           \
    if (dst_step == (int64_t)sizeof(T)) {                          \
      T *d = (T *)(void *)dst;                                     \
      for (int64_t i = 0; i < n; ++i) d[i] = v;                    \
    } else {                                                       \
      for (int64_t i = 0; i < n; ++i) memcpy(dst + i * dst_step, &v, sizeof(T)); \
    }                                                              \
  }

void tsr_cpu_elems_fill(char *dst, int64_t dst_step, int64_t n, uint64_t bits, uint32_t elem_size) {
  switch (elem_size) {
    case 1: TSR_CPU_STRIDED_FILL(uint8_t) break;
    case 2: TSR_CPU_STRIDED_FILL(uint16_t) break;
    case 4: TSR_CPU_STRIDED_FILL(uint32_t) break;
    default: TSR_CPU_STRIDED_FILL(uint64_t) break;
  }
}

void tsr_cpu_block_copy(char *dst, const int64_t *dst_strides, const char *src,
                        const int64_t *src_strides, const int64_t *sizes, int32_t first,
                        const tsr_cpu_row *row, uint32_t elem_size) {
  const int64_t e = elem_size;
  const int64_t dst_step = row->dst_step * e, src_step = row->src_step * e;
  int64_t idx[TSR_MAX_RANK] = {0};
  int64_t dst_off = 0, src_off = 0;  // elements
  do {
    tsr_cpu_elems_copy(dst + dst_off * e, dst_step, src + src_off * e, src_step, row->n,
                       elem_size);
  } while (tsr_cpu_odometer_next(idx, first, row->dim, sizes, dst_strides, src_strides, &dst_off,
                                 &src_off));
}

void tsr_cpu_offsets_get(int64_t linear, int32_t ndim, const int64_t *sizes,
                         const int64_t *a_strides, const int64_t *b_strides, int64_t *out_a,
                         int64_t *out_b) {
  int64_t a = 0, b = 0;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    int64_t i = linear % sizes[d];
    linear /= sizes[d];
    a += i * a_strides[d];
    b += i * b_strides[d];
  }
  *out_a = a;
  *out_b = b;
}

uint64_t tsr_cpu_value_bits_get(double value, tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32: return tsr_cpu_f32_bits((float)value);
    case TSR_FLOAT64: {
      uint64_t bits;
      memcpy(&bits, &value, sizeof(bits));
      return bits;
    }
    case TSR_BFLOAT16: return tsr_cpu_f64_to_bf16(value);
    case TSR_FLOAT16: return tsr_cpu_f64_to_f16(value);
    case TSR_INT32: return (uint32_t)tsr_cpu_f64_to_i32(value);
    case TSR_INT64: return (uint64_t)tsr_cpu_f64_to_i64(value);
    default: return value != 0.0;
  }
}
