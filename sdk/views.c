// Views: new sizes, strides and offset over the same storage.
#include <string.h>

#include "autograd_rules.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"

static tsr_tensor *view_make(tsr_tensor *t, int32_t rank, const int64_t *sizes,
                             const int64_t *strides, int64_t offset) {
  if (!tsr_tensor_handle_is_live(t)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "view of a tensor handle that was released");
    return NULL;
  }
  return tsr_tensor_view_create(t, rank, sizes, strides, offset);
}

// Hands |out| back once recorded (|status|), or fails.
static tsr_tensor *view_recorded(tsr_tensor *out, tsr_status status) {
  if (out == NULL || status == TSR_OK) return out;
  tsr_tensor_release(out);
  return NULL;
}

static tsr_tensor *view_fail(const tsr_tensor *t, tsr_status status) {
  tsr_fail(t ? tsr_tensor_device(t) : NULL, status, "%s", tsr_error_message());
  return NULL;
}

static int32_t dim_wrap(int32_t dim, int32_t rank) { return dim < 0 ? dim + rank : dim; }

// Resolves one -1 in |sizes| against |numel|; checks the element count.
static tsr_status sizes_resolve(const char *what, const tsr_tensor *t, int32_t rank,
                                const int64_t *sizes, int64_t *out_sizes) {
  if (rank < 0 || rank > TSR_MAX_RANK || (rank > 0 && sizes == NULL)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: rank %d with sizes %s", what, rank,
                         sizes ? "given" : "NULL");
  }
  int64_t numel = tsr_tensor_numel(t);
  int64_t known = 1;
  int32_t infer = -1;
  for (int32_t d = 0; d < rank; ++d) {
    if (sizes[d] == -1 && infer < 0) {
      infer = d;
      continue;
    }
    if (sizes[d] < 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: sizes[%d] is %lld", what, d,
                           (long long)sizes[d]);
    }
    if (sizes[d] != 0 && known > INT64_MAX / sizes[d]) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: element count overflows int64", what);
    }
    known *= sizes[d];
    out_sizes[d] = sizes[d];
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: cannot infer sizes[%d] for %lld elements",
                           what, infer, (long long)numel);
    }
    out_sizes[infer] = numel / known;
    known = numel;
  }
  if (known != numel) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %lld elements cannot take a shape of %lld", what,
                         (long long)numel, (long long)known);
  }
  return TSR_OK;
}

// Strides for |new_sizes| over |t| without copying, if they exist (the
// algorithm of NumPy's attempt_nocopy_reshape: match runs of dims).
static int strides_for_view(const tsr_tensor *t, int32_t rank, const int64_t *new_sizes,
                            int64_t *out_strides) {
  const int32_t t_rank = tsr_tensor_rank(t);
  const int64_t *t_sizes = tsr_tensor_sizes(t), *t_strides = tsr_tensor_strides(t);
  int32_t old_rank = 0;
  int64_t old_sizes[TSR_MAX_RANK], old_strides[TSR_MAX_RANK];
  for (int32_t d = 0; d < t_rank; ++d) {
    if (t_sizes[d] == 0) {
      int64_t s = 1;
      for (int32_t k = rank - 1; k >= 0; --k) {
        out_strides[k] = s;
        s *= new_sizes[k] ? new_sizes[k] : 1;
      }
      return 1;
    }
    if (t_sizes[d] != 1) {
      old_sizes[old_rank] = t_sizes[d];
      old_strides[old_rank] = t_strides[d];
      ++old_rank;
    }
  }
  int32_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < rank && oi < old_rank) {
    int64_t np = new_sizes[ni], op = old_sizes[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= rank) return 0;
        np *= new_sizes[nj++];
      } else {
        if (oj >= old_rank) return 0;
        op *= old_sizes[oj++];
      }
    }
    for (int32_t k = oi; k < oj - 1; ++k) {
      if (old_strides[k] != old_sizes[k + 1] * old_strides[k + 1]) return 0;
    }
    out_strides[nj - 1] = old_strides[oj - 1];
    for (int32_t k = nj - 1; k > ni; --k) out_strides[k - 1] = out_strides[k] * new_sizes[k];
    ni = nj++;
    oi = oj++;
  }
  int64_t last = ni > 0 ? out_strides[ni - 1] : 1;
  for (int32_t k = ni; k < rank; ++k) out_strides[k] = last;
  return 1;
}

tsr_tensor *tsr_view(tsr_tensor *tensor, int32_t rank, const int64_t *sizes) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "view: tensor is NULL");
    return NULL;
  }
  int64_t new_sizes[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  if (sizes_resolve("view", tensor, rank, sizes, new_sizes) != TSR_OK) {
    return view_fail(tensor, TSR_INVALID_ARGUMENT);
  }
  if (!strides_for_view(tensor, rank, new_sizes, strides)) {
    tsr_error_set(TSR_INVALID_ARGUMENT,
                  "view: the strides of this tensor do not allow the shape; use tsr_reshape");
    return view_fail(tensor, TSR_INVALID_ARGUMENT);
  }
  tsr_tensor *out = view_make(tensor, rank, new_sizes, strides, tsr_tensor_offset(tensor));
  return view_recorded(out, out ? tsr_ag_record_reshape(out, tensor) : TSR_OK);
}

tsr_tensor *tsr_reshape(tsr_tensor *tensor, int32_t rank, const int64_t *sizes) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "reshape: tensor is NULL");
    return NULL;
  }
  int64_t new_sizes[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  if (sizes_resolve("reshape", tensor, rank, sizes, new_sizes) != TSR_OK) {
    return view_fail(tensor, TSR_INVALID_ARGUMENT);
  }
  if (strides_for_view(tensor, rank, new_sizes, strides)) {
    tsr_tensor *out = view_make(tensor, rank, new_sizes, strides, tsr_tensor_offset(tensor));
    return view_recorded(out, out ? tsr_ag_record_reshape(out, tensor) : TSR_OK);
  }
  tsr_tensor *packed = tsr_contiguous(tensor);
  if (packed == NULL) return NULL;
  tsr_tensor *result = tsr_view(packed, rank, new_sizes);
  tsr_tensor_release(packed);
  return result;
}

tsr_tensor *tsr_transpose(tsr_tensor *tensor, int32_t dim0, int32_t dim1) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "transpose: tensor is NULL");
    return NULL;
  }
  const int32_t rank = tsr_tensor_rank(tensor);
  int32_t a = dim_wrap(dim0, rank), b = dim_wrap(dim1, rank);
  if (a < 0 || a >= rank || b < 0 || b >= rank) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "transpose: dims %d and %d for rank %d", dim0, dim1,
                  rank);
    return view_fail(tensor, TSR_INVALID_ARGUMENT);
  }
  int64_t sizes[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  memcpy(sizes, tsr_tensor_sizes(tensor), sizeof(sizes));
  memcpy(strides, tsr_tensor_strides(tensor), sizeof(strides));
  sizes[a] = tsr_tensor_sizes(tensor)[b];
  sizes[b] = tsr_tensor_sizes(tensor)[a];
  strides[a] = tsr_tensor_strides(tensor)[b];
  strides[b] = tsr_tensor_strides(tensor)[a];
  tsr_tensor *out = view_make(tensor, rank, sizes, strides, tsr_tensor_offset(tensor));
  int32_t dims[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) dims[d] = d == a ? b : d == b ? a : d;
  return view_recorded(out, out ? tsr_ag_record_permute(out, tensor, dims) : TSR_OK);
}

tsr_tensor *tsr_permute(tsr_tensor *tensor, int32_t rank, const int32_t *dims) {
  if (tensor == NULL || (dims == NULL && rank > 0)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "permute: %s is NULL", tensor ? "dims" : "tensor");
    return tensor ? view_fail(tensor, TSR_INVALID_ARGUMENT) : NULL;
  }
  if (rank != tsr_tensor_rank(tensor)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "permute: %d dims given for rank %d", rank,
                  tsr_tensor_rank(tensor));
    return view_fail(tensor, TSR_INVALID_ARGUMENT);
  }
  int64_t sizes[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  int seen[TSR_MAX_RANK] = {0};
  for (int32_t d = 0; d < rank; ++d) {
    int32_t src = dim_wrap(dims[d], rank);
    if (src < 0 || src >= rank || seen[src]) {
      tsr_error_set(TSR_INVALID_ARGUMENT, "permute: dims[%d] = %d is out of range or repeated", d,
                    dims[d]);
      return view_fail(tensor, TSR_INVALID_ARGUMENT);
    }
    seen[src] = 1;
    sizes[d] = tsr_tensor_sizes(tensor)[src];
    strides[d] = tsr_tensor_strides(tensor)[src];
  }
  tsr_tensor *out = view_make(tensor, rank, sizes, strides, tsr_tensor_offset(tensor));
  return view_recorded(out, out ? tsr_ag_record_permute(out, tensor, dims) : TSR_OK);
}

tsr_tensor *tsr_slice(tsr_tensor *tensor, int32_t dim, int64_t start, int64_t end, int64_t step) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "slice: tensor is NULL");
    return NULL;
  }
  int32_t d = dim_wrap(dim, tsr_tensor_rank(tensor));
  if (d < 0 || d >= tsr_tensor_rank(tensor) || step < 1) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "slice: dim %d of rank %d with step %lld", dim,
                  tsr_tensor_rank(tensor), (long long)step);
    return view_fail(tensor, TSR_INVALID_ARGUMENT);
  }
  int64_t n = tsr_tensor_sizes(tensor)[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (end > n) end = n;
  if (end < start) end = start;
  int64_t sizes[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  memcpy(sizes, tsr_tensor_sizes(tensor), sizeof(sizes));
  memcpy(strides, tsr_tensor_strides(tensor), sizeof(strides));
  // ceil((end - start) / step) without forming end - start + step - 1,
  // which overflows for a huge step (Python: x[0:6:2**63-1] has 1 element).
  sizes[d] = end == start ? 0 : 1 + (end - start - 1) / step;
  // One element or none: the step addresses nothing, and stride * step
  // could overflow. Two or more: step < n, so the product stays within
  // the storage the tensor already spans.
  strides[d] = sizes[d] > 1 ? tsr_tensor_strides(tensor)[d] * step : tsr_tensor_strides(tensor)[d];
  int64_t offset =
      tsr_tensor_offset(tensor) + (sizes[d] > 0 ? start * tsr_tensor_strides(tensor)[d] : 0);
  tsr_tensor *out = view_make(tensor, tsr_tensor_rank(tensor), sizes, strides, offset);
  return view_recorded(out, out ? tsr_ag_record_slice(out, tensor, d, start, step) : TSR_OK);
}

tsr_tensor *tsr_expand(tsr_tensor *tensor, int32_t rank, const int64_t *sizes) {
  if (tensor == NULL || (sizes == NULL && rank > 0)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "expand: %s is NULL", tensor ? "sizes" : "tensor");
    return tensor ? view_fail(tensor, TSR_INVALID_ARGUMENT) : NULL;
  }
  if (rank < tsr_tensor_rank(tensor) || rank > TSR_MAX_RANK) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "expand: rank %d for a tensor of rank %d", rank,
                  tsr_tensor_rank(tensor));
    return view_fail(tensor, TSR_INVALID_ARGUMENT);
  }
  int64_t new_sizes[TSR_MAX_RANK], strides[TSR_MAX_RANK];
  int32_t shift = rank - tsr_tensor_rank(tensor);
  for (int32_t d = 0; d < rank; ++d) {
    int32_t src = d - shift;
    int64_t have = src >= 0 ? tsr_tensor_sizes(tensor)[src] : 1;
    int64_t want = sizes[d] == -1 ? have : sizes[d];
    if (sizes[d] == -1 && src < 0) want = -2;
    if (want < 0 || (have != want && have != 1)) {
      tsr_error_set(TSR_INVALID_ARGUMENT, "expand: size %lld at dim %d cannot become %lld",
                    (long long)have, d, (long long)sizes[d]);
      return view_fail(tensor, TSR_INVALID_ARGUMENT);
    }
    new_sizes[d] = want;
    strides[d] = (src >= 0 && have == want) ? tsr_tensor_strides(tensor)[src] : 0;
  }
  // A view whose element count overflows int64 could be made here and
  // refused by every later op: refuse it where it is asked for.
  int64_t numel = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (__builtin_mul_overflow(numel, new_sizes[d], &numel)) {
      tsr_error_set(TSR_INVALID_ARGUMENT,
                    "expand: the sizes' product overflows 64 bits (size %lld at dim %d)",
                    (long long)new_sizes[d], d);
      return view_fail(tensor, TSR_INVALID_ARGUMENT);
    }
  }
  tsr_tensor *out = view_make(tensor, rank, new_sizes, strides, tsr_tensor_offset(tensor));
  return view_recorded(out, out ? tsr_ag_record_expand(out, tensor) : TSR_OK);
}
