// The NaN-keeping RELU pass; conv_relu.h says why it exists.
#include "conv_relu.h"

#include <omp.h>

// Below this many elements one thread does the pass: an OpenMP fork costs
// more than it saves.
#define TSR_ONEDNN_RELU_PARALLEL_MIN 32768
// Row length a long vector is cut into.
#define TSR_ONEDNN_RELU_CHUNK 4096

static void tsr_onednn_relu_row_f32(float *p, int64_t n, int64_t stride) {
  if (stride == 1) {
    // Written without branches so that it vectorises: the comparison is
    // false for NaN, which is kept.
    for (int64_t i = 0; i < n; ++i) {
      const float v = p[i];
      p[i] = v <= 0.0f ? 0.0f : v;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float v = p[i * stride];
    p[i * stride] = v <= 0.0f ? 0.0f : v;
  }
}

static void tsr_onednn_relu_row_bf16(uint16_t *p, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t v = p[i * stride];
    // Negative (sign bit) and not NaN (exponent all ones with a mantissa).
    const int negative = (v & 0x8000u) != 0 && (v & 0x7fffu) <= 0x7f80u;
    p[i * stride] = negative ? (uint16_t)0 : v;
  }
}

void tsr_onednn_relu_apply(void *base, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                           const int64_t *strides) {
  if (rank == 1 && sizes[0] > 2 * TSR_ONEDNN_RELU_CHUNK) {
    // One long vector (a blocked temporary): cut it into rows the threads
    // can share, then the tail.
    const int64_t rows = sizes[0] / TSR_ONEDNN_RELU_CHUNK;
    const int64_t split_sizes[2] = {rows, TSR_ONEDNN_RELU_CHUNK};
    const int64_t split_strides[2] = {TSR_ONEDNN_RELU_CHUNK * strides[0], strides[0]};
    tsr_onednn_relu_apply(base, dtype, 2, split_sizes, split_strides);
    const size_t elem = dtype == TSR_BFLOAT16 ? 2 : 4;
    const int64_t tail_size = sizes[0] - rows * TSR_ONEDNN_RELU_CHUNK;
    char *tail = (char *)base + rows * TSR_ONEDNN_RELU_CHUNK * strides[0] * (int64_t)elem;
    if (tail_size > 0)
      tsr_onednn_relu_apply(tail, dtype, 1, &tail_size, strides);
    return;
  }
  // Rows along the last dimension; the others are flattened into a row index.
  const int64_t n = sizes[rank - 1], stride = strides[rank - 1];
  int64_t rows = 1;
  for (int32_t d = 0; d < rank - 1; ++d) rows *= sizes[d];
  if (rows <= 0 || n <= 0)
    return;
  const size_t elem = dtype == TSR_BFLOAT16 ? 2 : 4;
  char *const bytes = base;
  const int parallel = rows > 1 && rows * n >= TSR_ONEDNN_RELU_PARALLEL_MIN && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t offset = 0, rest = row;
    for (int32_t d = rank - 2; d >= 0; --d) {
      offset += (rest % sizes[d]) * strides[d];
      rest /= sizes[d];
    }
    char *p = bytes + offset * (int64_t)elem;
    if (dtype == TSR_BFLOAT16) {
      tsr_onednn_relu_row_bf16((uint16_t *)(void *)p, n, stride);
    } else {
      tsr_onednn_relu_row_f32((float *)(void *)p, n, stride);
    }
  }
}
