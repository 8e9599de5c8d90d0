// sort, argsort and topk of tessera/ops_more.h: the permutation of each line
// along the dim is computed on the host (a stable merge sort, NaN ordered as
// PyTorch orders it: greater than everything), uploaded as int64 indices, and
// the values are formed on the device by the differentiable GATHER, so the
// gradient is GATHER's (SCATTER_ADD) and no new rule or catalogue op is needed.
// Uses the public tensor getters only.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops_more_internal.h"
#include "sdk_errors.h"
#include "tessera/tessera.h"

// One line's keys: doubles for float dtypes (every float16, bfloat16 and
// float32 value is exact in a double), int64 for int dtypes.
typedef struct sort_line {
  int is_float;
  int descending;
  const double *f;
  const int64_t *i;
} sort_line;

// Whether element |a| of the line goes strictly before element |b|.
static int goes_before(const sort_line *l, int64_t a, int64_t b) {
  if (!l->is_float)
    return l->descending ? l->i[a] > l->i[b] : l->i[a] < l->i[b];
  double x = l->f[a], y = l->f[b];
  if (l->descending)
    return isnan(y) ? 0 : (isnan(x) || x > y);  // NaN first
  return isnan(x) ? 0 : (isnan(y) || x < y);    // NaN last
}

// Stable bottom-up merge sort of |perm| [n] with |tmp| [n] as scratch; a
// right element moves before a left one only when it goes strictly before.
static void merge_sort(const sort_line *l, int64_t *perm, int64_t *tmp, int64_t n) {
  int64_t *src = perm, *dst = tmp;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      int64_t mid = lo + width < n ? lo + width : n;
      int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) dst[o++] = goes_before(l, src[b], src[a]) ? src[b++] : src[a++];
      while (a < mid) dst[o++] = src[a++];
      while (b < hi) dst[o++] = src[b++];
    }
    int64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != perm)
    memcpy(perm, src, (size_t)n * sizeof(*perm));
}

// IEEE half precision to double.
static double half_to_double(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  double mantissa = h & 0x3ff;
  double v = exponent == 0    ? ldexp(mantissa, -24)
             : exponent == 31 ? (mantissa != 0 ? NAN : INFINITY)
                              : ldexp(mantissa + 1024.0, exponent - 25);
  return (h & 0x8000) ? -v : v;
}

// Element |at| of the row-major host copy |raw| of dtype |dtype| as a key.
static void key_read(tsr_dtype_t dtype, const uint8_t *raw, int64_t at, double *f, int64_t *i) {
  size_t size = tsr_dtype_size(dtype);
  const uint8_t *p = raw + (size_t)at * size;
  switch (dtype) {
    case TSR_FLOAT64:
      memcpy(f, p, sizeof(*f));
      break;
    case TSR_FLOAT32: {
      float v;
      memcpy(&v, p, sizeof(v));
      *f = v;
      break;
    }
    case TSR_FLOAT16: {
      uint16_t h;
      memcpy(&h, p, sizeof(h));
      *f = half_to_double(h);
      break;
    }
    case TSR_BFLOAT16: {
      uint16_t h;
      memcpy(&h, p, sizeof(h));
      uint32_t bits = (uint32_t)h << 16;
      float v;
      memcpy(&v, &bits, sizeof(v));
      *f = v;
      break;
    }
    case TSR_INT32: {
      int32_t v;
      memcpy(&v, p, sizeof(v));
      *i = v;
      break;
    }
    default: {  // TSR_INT64
      memcpy(i, p, sizeof(*i));
      break;
    }
  }
}

static int sortable(tsr_dtype_t dtype) {
  return tsr_more_is_float(dtype) || dtype == TSR_INT32 || dtype == TSR_INT64;
}

// The shared body: the first |k| (|all|: every one) of the stable sort of
// |x| along |dim|; values and int64 indices to the out_ pointers that are
// not NULL.
static tsr_status sort_run(const char *what, tsr_tensor *x, int32_t dim, int descending, int64_t k,
                           int all, tsr_tensor **out_values, tsr_tensor **out_indices) {
  if (out_values != NULL)
    *out_values = NULL;
  if (out_indices != NULL)
    *out_indices = NULL;
  tsr_status status = tsr_more_check(what, "x", x);
  if (status != TSR_OK)
    return status;
  tsr_device *device = tsr_tensor_device(x);
  tsr_dtype_t dtype = tsr_tensor_dtype(x);
  if (out_values == NULL && out_indices == NULL) {
    tsr_sdk_fail(device, TSR_INVALID_ARGUMENT, "%s: out_values and out_indices are both NULL",
                 what);
    return TSR_INVALID_ARGUMENT;
  }
  if (!sortable(dtype)) {
    tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                 "%s: x is %s; %s takes float32, float64, bfloat16, float16, int32 or int64", what,
                 tsr_dtype_name(dtype), what);
    return TSR_INVALID_ARGUMENT;
  }
  int32_t rank = tsr_tensor_rank(x), d = 0;
  status = tsr_more_dim(what, x, dim, rank ? rank : 1, &d);
  if (status != TSR_OK)
    return status;
  const int64_t *sizes = tsr_tensor_sizes(x);
  int64_t len = rank ? sizes[d] : 1, outer = 1, inner = 1;
  for (int32_t j = 0; j < rank; ++j) {
    if (j < d)
      outer *= sizes[j];
    if (j > d)
      inner *= sizes[j];
  }
  if (all)
    k = len;
  else if (k < 0 || k > len) {
    tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                 "%s: k is %lld; it must be in [0, %lld], the size of dim %d", what, (long long)k,
                 (long long)len, d);
    return TSR_INVALID_ARGUMENT;
  }
  int64_t out_sizes[TSR_MAX_RANK];
  for (int32_t j = 0; j < rank; ++j) out_sizes[j] = j == d ? k : sizes[j];
  int64_t n = outer * len * inner, m = outer * k * inner;
  size_t esize = tsr_dtype_size(dtype);

  // The scratch of this call, in one block: the host copy, one line's keys,
  // its permutation and the merge buffer, the indices and GATHER's index.
  size_t raw_bytes = ((size_t)n * esize + 7) & ~(size_t)7;
  size_t words = (size_t)len * 3 + (size_t)m * 2;
  uint8_t *scratch = malloc(raw_bytes + words * 8 + 8);
  if (scratch == NULL) {
    tsr_sdk_fail(device, TSR_OUT_OF_MEMORY, "%s: no host memory for %lld elements", what,
                 (long long)n);
    return TSR_OUT_OF_MEMORY;
  }
  uint8_t *raw = scratch;
  int64_t *keys = (int64_t *)(void *)(scratch + raw_bytes);
  int64_t *perm = keys + len, *tmp = perm + len, *indices = tmp + len, *flat = indices + m;
  tsr_tensor *index = NULL, *x_flat = NULL, *gathered = NULL, *values = NULL, *ind = NULL;
  status = tsr_tensor_to_host(x, raw, (size_t)n * esize);
  if (status != TSR_OK) {
    tsr_more_inner_fail(what);
    goto done;
  }
  sort_line line = {tsr_more_is_float(dtype), descending != 0, (const double *)(void *)keys, keys};
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < len; ++j) {
        key_read(dtype, raw, (o * len + j) * inner + i, (double *)(void *)&keys[j], &keys[j]);
        perm[j] = j;
      }
      merge_sort(&line, perm, tmp, len);
      for (int64_t j = 0; j < k; ++j) {
        indices[(o * k + j) * inner + i] = perm[j];
        flat[(o * k + j) * inner + i] = (o * len + perm[j]) * inner + i;
      }
    }
  }
  if (out_indices != NULL) {
    ind = tsr_tensor_from_host(device, TSR_INT64, rank, out_sizes, indices);
    if (ind == NULL) {
      status = tsr_sdk_last_status();
      tsr_more_inner_fail(what);
      goto done;
    }
  }
  if (out_values != NULL) {
    // values = x[flat]: one GATHER over the flattened x, recorded for autograd.
    index = tsr_tensor_from_host(device, TSR_INT64, 1, &m, flat);
    x_flat = index ? tsr_reshape(x, 1, &n) : NULL;
    gathered = x_flat ? tsr_gather(x_flat, 0, index) : NULL;
    values = gathered ? tsr_view(gathered, rank, out_sizes) : NULL;
    if (values == NULL) {
      status = tsr_sdk_last_status();
      tsr_more_inner_fail(what);
      goto done;
    }
  }
  if (out_values != NULL) {
    *out_values = values;
    values = NULL;
  }
  if (out_indices != NULL) {
    *out_indices = ind;
    ind = NULL;
  }
done:
  tsr_tensor_release(index);
  tsr_tensor_release(x_flat);
  tsr_tensor_release(gathered);
  tsr_tensor_release(values);
  tsr_tensor_release(ind);
  free(scratch);
  return status;
}

tsr_status tsr_sort(tsr_tensor *x, int32_t dim, int descending, tsr_tensor **out_values,
                    tsr_tensor **out_indices) {
  return sort_run("sort", x, dim, descending, 0, 1, out_values, out_indices);
}

tsr_tensor *tsr_argsort(tsr_tensor *x, int32_t dim, int descending) {
  tsr_tensor *indices = NULL;
  if (sort_run("argsort", x, dim, descending, 0, 1, NULL, &indices) != TSR_OK)
    return NULL;
  return indices;
}

tsr_status tsr_topk(tsr_tensor *x, int64_t k, int32_t dim, int largest, tsr_tensor **out_values,
                    tsr_tensor **out_indices) {
  return sort_run("topk", x, dim, largest, k, 0, out_values, out_indices);
}
