// Collapsing x into kept and reduced dimensions, for REDUCE and ARG_REDUCE.
#include <string.h>

#include "reduce.h"

// Sorts |dims| (count |n|) by |key| descending, stably.
static void tsr_cpu_dims_sort(int32_t *dims, int32_t n, const int64_t *key) {
  for (int32_t i = 1; i < n; ++i) {
    int32_t d = dims[i];
    int32_t j = i;
    while (j > 0 && key[dims[j - 1]] < key[d]) {
      dims[j] = dims[j - 1];
      --j;
    }
    dims[j] = d;
  }
}

void tsr_cpu_reduce_shape_init(tsr_cpu_reduce_shape *shape, int32_t rank, const int64_t *x_sizes,
                               const int64_t *x_strides, int64_t elem_size,
                               const int64_t *out_strides, int64_t out_elem_size,
                               uint32_t reduce_mask) {
  memset(shape, 0, sizeof(*shape));
  int64_t xs[TSR_MAX_RANK];
  int32_t kept[TSR_MAX_RANK], red[TSR_MAX_RANK];
  int32_t nk = 0, nr = 0;
  shape->out_count = 1;
  shape->red_count = 1;
  for (int32_t d = 0; d < rank; ++d) {
    xs[d] = x_strides[d] * elem_size;
    if (reduce_mask & (1u << d)) {
      shape->red_count *= x_sizes[d];
      if (x_sizes[d] != 1) red[nr++] = d;
    } else {
      shape->out_count *= x_sizes[d];
      if (x_sizes[d] != 1) kept[nk++] = d;
    }
  }
  // x's memory order for both groups: the innermost reduced dimension gets
  // the smallest stride, so rows of the reduction read memory in sequence.
  tsr_cpu_dims_sort(kept, nk, xs);
  tsr_cpu_dims_sort(red, nr, xs);
  for (int32_t i = 0; i < nk; ++i) {
    int32_t d = kept[i];
    int32_t o = shape->kept_ndim - 1;
    if (o >= 0 && shape->kept_x_strides[o] == xs[d] * x_sizes[d] &&
        shape->kept_out_strides[o] == out_strides[d] * out_elem_size * x_sizes[d]) {
      shape->kept_sizes[o] *= x_sizes[d];
      shape->kept_x_strides[o] = xs[d];
      shape->kept_out_strides[o] = out_strides[d] * out_elem_size;
      continue;
    }
    o = shape->kept_ndim++;
    shape->kept_sizes[o] = x_sizes[d];
    shape->kept_x_strides[o] = xs[d];
    shape->kept_out_strides[o] = out_strides[d] * out_elem_size;
  }
  for (int32_t i = 0; i < nr; ++i) {
    int32_t d = red[i];
    int32_t o = shape->red_ndim - 1;
    if (o >= 0 && shape->red_strides[o] == xs[d] * x_sizes[d]) {
      shape->red_sizes[o] *= x_sizes[d];
      shape->red_strides[o] = xs[d];
      continue;
    }
    o = shape->red_ndim++;
    shape->red_sizes[o] = x_sizes[d];
    shape->red_strides[o] = xs[d];
  }
}

void tsr_cpu_reduce_shape_offsets_get(const tsr_cpu_reduce_shape *shape, int64_t index,
                                      int64_t *out_x_offset, int64_t *out_out_offset) {
  int64_t x_offset = 0, out_offset = 0;
  for (int32_t d = shape->kept_ndim - 1; d >= 0; --d) {
    int64_t i = index % shape->kept_sizes[d];
    index /= shape->kept_sizes[d];
    x_offset += i * shape->kept_x_strides[d];
    out_offset += i * shape->kept_out_strides[d];
  }
  *out_x_offset = x_offset;
  *out_out_offset = out_offset;
}
