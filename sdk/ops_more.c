// The PyTorch-style functions of tessera/ops_more.h that move, copy, mask and
// index elements: stack, squeeze/unsqueeze, flatten, chunk/split, repeat,
// clone, tril/triu, masked_fill, where_scalar, one_hot, index_select, lerp,
// pow and item. Each composes op functions and views, so autograd records
// the pieces and no new rule or catalogue op is needed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_rules.h"
#include "tessera/core_layer.h"
#include "ops_more_internal.h"
#include "sdk_errors.h"
#include "tessera/tessera.h"

// --- stack, squeeze, unsqueeze, flatten --------------------------------------------

tsr_tensor *tsr_stack(int32_t count, tsr_tensor *const *xs, int32_t dim) {
  const char *what = "stack";
  if (count < 1 || xs == NULL) {
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT,
                        "stack: count is %d and xs is %s; at least one tensor is needed", count,
                        xs ? "given" : "NULL");
  }
  for (int32_t i = 0; i < count; ++i) {
    char name[32];
    snprintf(name, sizeof(name), "xs[%d]", i);
    if (tsr_more_check(what, name, xs[i]) != TSR_OK)
      return NULL;
  }
  const tsr_tensor *x0 = xs[0];
  if (tsr_tensor_rank(x0) >= TSR_MAX_RANK) {
    return tsr_sdk_fail(tsr_tensor_device(x0), TSR_INVALID_ARGUMENT,
                        "stack: tensors of rank %d would stack to rank %d, above %d",
                        tsr_tensor_rank(x0), tsr_tensor_rank(x0) + 1, TSR_MAX_RANK);
  }
  int32_t d = 0;
  if (tsr_more_dim(what, x0, dim, tsr_tensor_rank(x0) + 1, &d) != TSR_OK)
    return NULL;
  for (int32_t i = 1; i < count; ++i) {
    const tsr_tensor *x = xs[i];
    int same = tsr_tensor_rank(x) == tsr_tensor_rank(x0) &&
               tsr_tensor_dtype(x) == tsr_tensor_dtype(x0) &&
               tsr_tensor_device(x) == tsr_tensor_device(x0);
    for (int32_t k = 0; same && k < tsr_tensor_rank(x); ++k)
      same = tsr_tensor_sizes(x)[k] == tsr_tensor_sizes(x0)[k];
    if (!same) {
      char s0[160], si[160];
      return tsr_sdk_fail(tsr_tensor_device(x0), TSR_INVALID_ARGUMENT,
                          "stack: xs[%d] is %s %s on %s and xs[0] is %s %s on %s; all must match",
                          i, tsr_dtype_name(tsr_tensor_dtype(x)), tsr_more_shape(x, si, sizeof(si)),
                          tsr_device_name(tsr_tensor_device(x)),
                          tsr_dtype_name(tsr_tensor_dtype(x0)), tsr_more_shape(x0, s0, sizeof(s0)),
                          tsr_device_name(tsr_tensor_device(x0)));
    }
  }
  int64_t sizes[TSR_MAX_RANK];
  for (int32_t k = 0, j = 0; k <= tsr_tensor_rank(x0); ++k)
    sizes[k] = k == d ? 1 : tsr_tensor_sizes(x0)[j++];
  tsr_tensor **views = calloc((size_t)count, sizeof(*views));
  if (views == NULL) {
    return tsr_sdk_fail(tsr_tensor_device(x0), TSR_OUT_OF_MEMORY,
                        "stack: no host memory for %d views", count);
  }
  tsr_tensor *out = NULL;
  int32_t made = 0;
  for (; made < count; ++made) {
    views[made] = tsr_view(xs[made], tsr_tensor_rank(x0) + 1, sizes);
    if (views[made] == NULL)
      break;
  }
  if (made == count)
    out = tsr_concat(count, views, d);
  tsr_more_release(made, views);
  free(views);
  return tsr_more_finish(what, out);
}

tsr_tensor *tsr_squeeze(tsr_tensor *x, int32_t num_dims, const int32_t *dims) {
  const char *what = "squeeze";
  if (tsr_more_check(what, "x", x) != TSR_OK)
    return NULL;
  if (num_dims < 0 || (num_dims > 0 && dims == NULL)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "squeeze: num_dims is %d and dims is %s", num_dims,
                        dims ? "given" : "NULL");
  }
  uint32_t drop = 0, seen = 0;
  if (num_dims == 0) {
    for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
      if (tsr_tensor_sizes(x)[d] == 1)
        drop |= 1u << d;
    }
  }
  for (int32_t i = 0; i < num_dims; ++i) {
    int32_t d = 0;
    if (tsr_more_dim(what, x, dims[i], tsr_tensor_rank(x) ? tsr_tensor_rank(x) : 1, &d) != TSR_OK)
      return NULL;
    if (seen & (1u << d)) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                          "squeeze: dim %d appears more than once in dims", d);
    }
    seen |= 1u << d;
    if (tsr_tensor_rank(x) > 0 && tsr_tensor_sizes(x)[d] == 1)
      drop |= 1u << d;  // other sizes stay, as PyTorch
  }
  int64_t sizes[TSR_MAX_RANK];
  int32_t rank = 0;
  for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
    if (!(drop & (1u << d)))
      sizes[rank++] = tsr_tensor_sizes(x)[d];
  }
  return tsr_more_finish(what, tsr_view(x, rank, sizes));
}

tsr_tensor *tsr_unsqueeze(tsr_tensor *x, int32_t dim) {
  const char *what = "unsqueeze";
  if (tsr_more_check(what, "x", x) != TSR_OK)
    return NULL;
  if (tsr_tensor_rank(x) >= TSR_MAX_RANK) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "unsqueeze: x has rank %d already, the most a tensor may have",
                        tsr_tensor_rank(x));
  }
  int32_t d = 0;
  if (tsr_more_dim(what, x, dim, tsr_tensor_rank(x) + 1, &d) != TSR_OK)
    return NULL;
  int64_t sizes[TSR_MAX_RANK];
  for (int32_t k = 0, j = 0; k <= tsr_tensor_rank(x); ++k)
    sizes[k] = k == d ? 1 : tsr_tensor_sizes(x)[j++];
  return tsr_more_finish(what, tsr_view(x, tsr_tensor_rank(x) + 1, sizes));
}

tsr_tensor *tsr_flatten(tsr_tensor *x, int32_t start_dim, int32_t end_dim) {
  const char *what = "flatten";
  if (tsr_more_check(what, "x", x) != TSR_OK)
    return NULL;
  int32_t bound = tsr_tensor_rank(x) ? tsr_tensor_rank(x) : 1, s = 0, e = 0;
  if (tsr_more_dim(what, x, start_dim, bound, &s) != TSR_OK ||
      tsr_more_dim(what, x, end_dim, bound, &e) != TSR_OK) {
    return NULL;
  }
  if (s > e) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "flatten: start_dim %d comes after end_dim %d (rank %d)", start_dim,
                        end_dim, tsr_tensor_rank(x));
  }
  if (tsr_tensor_rank(x) == 0)
    return tsr_more_finish(what, tsr_reshape(x, 1, (int64_t[]){1}));
  int64_t sizes[TSR_MAX_RANK];
  int32_t rank = 0;
  for (int32_t d = 0; d < s; ++d) sizes[rank++] = tsr_tensor_sizes(x)[d];
  int64_t merged = 1;
  for (int32_t d = s; d <= e; ++d) merged *= tsr_tensor_sizes(x)[d];  // numel fits int64 already
  sizes[rank++] = merged;
  for (int32_t d = e + 1; d < tsr_tensor_rank(x); ++d) sizes[rank++] = tsr_tensor_sizes(x)[d];
  return tsr_more_finish(what, tsr_reshape(x, rank, sizes));
}

// --- chunk, split ---------------------------------------------------------------------

// Writes |count| views of |x| along |d| to |out_pieces|: piece k has
// lengths[k] elements, or |step| (clipped at the end) when |lengths| is NULL.
static tsr_status pieces_make(const char *what, tsr_tensor *x, int32_t d, int32_t count,
                              int64_t step, const int64_t *lengths, tsr_tensor **out_pieces) {
  int64_t start = 0;
  for (int32_t k = 0; k < count; ++k) {
    int64_t len = lengths ? lengths[k] : step;
    out_pieces[k] = tsr_slice(x, d, start, start + len, 1);
    if (out_pieces[k] == NULL) {
      tsr_more_inner_fail(what);
      tsr_status status = tsr_sdk_last_status();
      tsr_more_release(k, out_pieces);
      for (int32_t j = 0; j < k; ++j) out_pieces[j] = NULL;
      return status;
    }
    start += len;
    if (start > tsr_tensor_sizes(x)[d])
      start = tsr_tensor_sizes(x)[d];
  }
  return TSR_OK;
}

// The shared part of chunk and split: checks, counts, then the views.
static tsr_status split_even(const char *what, tsr_tensor *x, int64_t step, int64_t count,
                             int32_t d, int32_t capacity, tsr_tensor **out_pieces,
                             int32_t *out_count) {
  if (count > INT32_MAX) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "%s: %lld pieces are more than int32 counts", what, (long long)count);
  }
  *out_count = (int32_t)count;
  if (out_pieces == NULL)
    return TSR_OK;  // a query of the count
  if (count > capacity) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "%s: %lld pieces do not fit out_pieces' capacity %d", what, (long long)count,
                    capacity);
  }
  return pieces_make(what, x, d, (int32_t)count, step, NULL, out_pieces);
}

// Checks |x| (rank >= 1), |dim| and |out_count| for chunk and split.
static tsr_status split_args(const char *what, tsr_tensor *x, int32_t dim, int32_t *out_count,
                             int32_t *out_dim) {
  TSR_RETURN_IF_ERROR(tsr_more_check(what, "x", x));
  if (out_count == NULL) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s: out_count is NULL", what);
  }
  *out_count = 0;
  if (tsr_tensor_rank(x) < 1) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "%s: x is a scalar (rank 0); it needs a dim", what);
  }
  return tsr_more_dim(what, x, dim, tsr_tensor_rank(x), out_dim);
}

tsr_status tsr_chunk(tsr_tensor *x, int32_t chunks, int32_t dim, int32_t capacity,
                     tsr_tensor **out_pieces, int32_t *out_count) {
  const char *what = "chunk";
  int32_t d = 0;
  TSR_RETURN_IF_ERROR(split_args(what, x, dim, out_count, &d));
  if (chunks < 1) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "chunk: chunks is %d; it must be at least 1", chunks);
  }
  int64_t n = tsr_tensor_sizes(x)[d];
  // PyTorch: pieces of ceil(n / chunks), so fewer than |chunks| may come
  // back; an empty dim gives |chunks| empty pieces.
  int64_t step = n / chunks + (n % chunks != 0);
  int64_t count = n == 0 ? chunks : n / step + (n % step != 0);
  return split_even(what, x, step, count, d, capacity, out_pieces, out_count);
}

tsr_status tsr_split(tsr_tensor *x, int64_t split_size, int32_t dim, int32_t capacity,
                     tsr_tensor **out_pieces, int32_t *out_count) {
  const char *what = "split";
  int32_t d = 0;
  TSR_RETURN_IF_ERROR(split_args(what, x, dim, out_count, &d));
  int64_t n = tsr_tensor_sizes(x)[d];
  if (split_size < 0 || (split_size == 0 && n > 0)) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "split: split_size is %lld; it must be positive (0 only for an empty dim)",
                    (long long)split_size);
  }
  int64_t count = split_size == 0 || n == 0 ? 1 : n / split_size + (n % split_size != 0);
  return split_even(what, x, split_size, count, d, capacity, out_pieces, out_count);
}

tsr_status tsr_split_sizes(tsr_tensor *x, int32_t count, const int64_t *sizes, int32_t dim,
                           tsr_tensor **out_pieces) {
  const char *what = "split_sizes";
  TSR_RETURN_IF_ERROR(tsr_more_check(what, "x", x));
  if (count < 1 || sizes == NULL || out_pieces == NULL) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "split_sizes: count is %d, sizes is %s and out_pieces is %s", count,
                    sizes ? "given" : "NULL", out_pieces ? "given" : "NULL");
  }
  if (tsr_tensor_rank(x) < 1) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "split_sizes: x is a scalar (rank 0); it needs a dim");
  }
  int32_t d = 0;
  TSR_RETURN_IF_ERROR(tsr_more_dim(what, x, dim, tsr_tensor_rank(x), &d));
  int64_t total = 0;
  for (int32_t k = 0; k < count; ++k) {
    if (sizes[k] < 0 || sizes[k] > tsr_tensor_sizes(x)[d] - total) {
      return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                      "split_sizes: sizes[%d] is %lld; the sizes must be >= 0 and sum to %lld, "
                      "the size of dim %d",
                      k, (long long)sizes[k], (long long)tsr_tensor_sizes(x)[d], d);
    }
    total += sizes[k];
  }
  if (total != tsr_tensor_sizes(x)[d]) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "split_sizes: the sizes sum to %lld, not %lld, the size of dim %d",
                    (long long)total, (long long)tsr_tensor_sizes(x)[d], d);
  }
  return pieces_make(what, x, d, count, 0, sizes, out_pieces);
}

// --- repeat, clone ----------------------------------------------------------------------

tsr_tensor *tsr_clone(tsr_tensor *x) {
  const char *what = "clone";
  if (tsr_more_check(what, "x", x) != TSR_OK)
    return NULL;
  tsr_tensor *out = tsr_tensor_alloc(what, tsr_tensor_device(x), tsr_tensor_dtype(x),
                                     tsr_tensor_rank(x), tsr_tensor_sizes(x));
  if (out == NULL)
    return NULL;
  if (tsr_copy_(out, x) != TSR_OK || tsr_ag_record_identity(out, x) != TSR_OK) {
    tsr_tensor_release(out);
    return tsr_more_inner_fail(what);
  }
  return out;
}

// |y| repeated |r| times along |d| (rank |rank|): a view with a new size-1 dim
// expanded to |r| and merged (a copy), or for a full-rank tensor, which has
// no room for the new dim, a concat of |r| handles.
static tsr_tensor *repeat_dim(tsr_tensor *y, int32_t rank, int32_t d, int64_t r) {
  if (rank < TSR_MAX_RANK) {
    int64_t one[TSR_MAX_RANK], wide[TSR_MAX_RANK], merged[TSR_MAX_RANK];
    for (int32_t k = 0, j = 0; k <= rank; ++k) one[k] = k == d ? 1 : tsr_tensor_sizes(y)[j++];
    memcpy(wide, one, sizeof(wide));
    wide[d] = r;
    memcpy(merged, tsr_tensor_sizes(y), sizeof(merged));
    merged[d] = tsr_tensor_sizes(y)[d] * r;
    tsr_tensor *v = tsr_view(y, rank + 1, one);
    tsr_tensor *e = v ? tsr_expand(v, rank + 1, wide) : NULL;
    tsr_tensor *out = e ? tsr_reshape(e, rank, merged) : NULL;
    tsr_tensor_release(v);
    tsr_tensor_release(e);
    return out;
  }
  if (r == 0)
    return tsr_slice(y, d, 0, 0, 1);
  tsr_tensor **copies = calloc((size_t)r, sizeof(*copies));
  if (copies == NULL) {
    return tsr_sdk_fail(tsr_tensor_device(y), TSR_OUT_OF_MEMORY, "no host memory for %lld handles",
                        (long long)r);
  }
  for (int64_t k = 0; k < r; ++k) copies[k] = y;
  tsr_tensor *out = tsr_concat((int32_t)r, copies, d);
  free(copies);
  return out;
}

tsr_tensor *tsr_repeat(tsr_tensor *x, int32_t num_repeats, const int64_t *repeats) {
  const char *what = "repeat";
  if (tsr_more_check(what, "x", x) != TSR_OK)
    return NULL;
  if (num_repeats < tsr_tensor_rank(x) || num_repeats > TSR_MAX_RANK ||
      (num_repeats > 0 && !repeats)) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "repeat: %d repeats (%s) for x of rank %d; one per dim is needed, at most "
                        "%d",
                        num_repeats, repeats ? "given" : "NULL", tsr_tensor_rank(x), TSR_MAX_RANK);
  }
  int32_t rank = num_repeats, shift = num_repeats - tsr_tensor_rank(x);
  int64_t sizes[TSR_MAX_RANK], numel = 1;
  for (int32_t d = 0; d < rank; ++d) {
    int64_t s = d < shift ? 1 : tsr_tensor_sizes(x)[d - shift], grown = 0;
    if (repeats[d] < 0 || (rank == TSR_MAX_RANK && repeats[d] > INT32_MAX)) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "repeat: repeats[%d] is %lld",
                          d, (long long)repeats[d]);
    }
    if (__builtin_mul_overflow(s, repeats[d], &grown) ||
        __builtin_mul_overflow(numel, grown, &numel)) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                          "repeat: the result's element count overflows int64 (dim %d)", d);
    }
    sizes[d] = s;
  }
  tsr_tensor *y = tsr_view(x, rank, sizes);
  for (int32_t d = 0; d < rank && y != NULL; ++d) {
    if (repeats[d] == 1)
      continue;
    tsr_tensor *next = repeat_dim(y, rank, d, repeats[d]);
    tsr_tensor_release(y);
    y = next;
  }
  if (y != NULL && tsr_tensor_shares_storage(y, x)) {
    // Nothing was copied (every repeat 1, or a stride-0 view of a size-1
    // dim): the result must own its elements.
    tsr_tensor *copy = tsr_clone(y);
    tsr_tensor_release(y);
    y = copy;
  }
  return tsr_more_finish(what, y);
}

// --- tril, triu, masked_fill, where_scalar --------------------------------------------

// x where column - row compares with |diagonal| as |keep| says, else 0.
static tsr_tensor *triangle(const char *what, tsr_tensor *x, int64_t diagonal,
                            tsr_compare_fn_t keep) {
  if (tsr_more_check(what, "x", x) != TSR_OK)
    return NULL;
  if (tsr_tensor_rank(x) < 2) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "%s: x has rank %d; it needs a matrix (rank >= 2)", what,
                        tsr_tensor_rank(x));
  }
  int64_t m = tsr_tensor_sizes(x)[tsr_tensor_rank(x) - 2],
          n = tsr_tensor_sizes(x)[tsr_tensor_rank(x) - 1];
  // Diagonals beyond [-m, n] select all or nothing, as -m and n do.
  int64_t k = diagonal < -m ? -m : diagonal > n ? n : diagonal;
  // keep(column, row + k) over [m, n]: tril keeps column <= row + k.
  tsr_tensor *cols = tsr_arange(tsr_tensor_device(x), TSR_INT64, 0.0, (double)n, 1.0);
  tsr_tensor *rows = tsr_arange(tsr_tensor_device(x), TSR_INT64, (double)k, (double)(k + m), 1.0);
  tsr_tensor *column = rows ? tsr_view(rows, 2, (int64_t[]){m, 1}) : NULL;
  tsr_tensor *mask = cols && column ? tsr_compare(cols, column, keep) : NULL;
  tsr_tensor *zero = tsr_more_scalar(x, 0.0);
  tsr_tensor *out = mask && zero ? tsr_where(mask, x, zero) : NULL;
  tsr_tensor *tmp[] = {cols, rows, column, mask, zero};
  tsr_more_release(5, tmp);
  return tsr_more_finish(what, out);
}

tsr_tensor *tsr_tril(tsr_tensor *x, int64_t diagonal) {
  return triangle("tril", x, diagonal, TSR_COMPARE_LE);
}

tsr_tensor *tsr_triu(tsr_tensor *x, int64_t diagonal) {
  return triangle("triu", x, diagonal, TSR_COMPARE_GE);
}

// Checks that |cond| is a bool tensor on |x|'s device.
static tsr_status bool_check(const char *what, const char *name, const tsr_tensor *cond,
                             const tsr_tensor *x) {
  TSR_RETURN_IF_ERROR(tsr_more_check_pair(what, "x", x, name, cond, 0));
  if (tsr_tensor_dtype(cond) == TSR_BOOL)
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "%s: %s is %s; it must be bool", what,
                  name, tsr_dtype_name(tsr_tensor_dtype(cond)));
}

tsr_tensor *tsr_masked_fill(tsr_tensor *x, tsr_tensor *mask, double value) {
  const char *what = "masked_fill";
  if (tsr_more_check(what, "x", x) != TSR_OK || tsr_more_check(what, "mask", mask) != TSR_OK ||
      bool_check(what, "mask", mask, x) != TSR_OK) {
    return NULL;
  }
  // The result has x's shape: mask broadcasts to it, never the other way.
  int fits = tsr_tensor_rank(mask) <= tsr_tensor_rank(x);
  for (int32_t d = 0; fits && d < tsr_tensor_rank(mask); ++d) {
    int64_t s = tsr_tensor_sizes(mask)[d],
            t = tsr_tensor_sizes(x)[d + tsr_tensor_rank(x) - tsr_tensor_rank(mask)];
    fits = s == t || s == 1;
  }
  if (!fits) {
    char ms[160], xs[160];
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "masked_fill: mask %s does not broadcast to x's shape %s",
                        tsr_more_shape(mask, ms, sizeof(ms)), tsr_more_shape(x, xs, sizeof(xs)));
  }
  tsr_tensor *fill = tsr_more_scalar(x, value);
  tsr_tensor *out = fill ? tsr_where(mask, fill, x) : NULL;
  tsr_tensor_release(fill);
  return tsr_more_finish(what, out);
}

tsr_tensor *tsr_where_scalar(tsr_tensor *cond, tsr_tensor *x, double other) {
  const char *what = "where_scalar";
  if (tsr_more_check(what, "cond", cond) != TSR_OK || tsr_more_check(what, "x", x) != TSR_OK ||
      bool_check(what, "cond", cond, x) != TSR_OK) {
    return NULL;
  }
  tsr_tensor *value = tsr_more_scalar(x, other);
  tsr_tensor *out = value ? tsr_where(cond, x, value) : NULL;
  tsr_tensor_release(value);
  return tsr_more_finish(what, out);
}

// --- one_hot, index_select ----------------------------------------------------------

// The min or max of an int64 tensor, read on the host.
static tsr_status int64_extreme(tsr_tensor *t, tsr_reduce_fn_t fn, int64_t *out_value) {
  tsr_tensor *r = tsr_reduce(t, fn, 0, NULL, 0);
  if (r == NULL)
    return tsr_sdk_last_status();
  tsr_status status = tsr_tensor_to_host(r, out_value, sizeof(*out_value));
  tsr_tensor_release(r);
  return status;
}

// Checks that |index| is int64 or int32.
static tsr_status index_dtype_check(const char *what, const char *name, const tsr_tensor *index) {
  if (tsr_tensor_dtype(index) == TSR_INT64 || tsr_tensor_dtype(index) == TSR_INT32)
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(index), TSR_INVALID_ARGUMENT,
                  "%s: %s is %s; it must be int64 or int32", what, name,
                  tsr_dtype_name(tsr_tensor_dtype(index)));
}

tsr_tensor *tsr_one_hot(tsr_tensor *indices, int64_t num_classes) {
  const char *what = "one_hot";
  if (tsr_more_check(what, "indices", indices) != TSR_OK ||
      index_dtype_check(what, "indices", indices) != TSR_OK) {
    return NULL;
  }
  tsr_device *device = tsr_tensor_device(indices);
  if (num_classes < -1) {
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                        "one_hot: num_classes is %lld; it must be >= 0, or -1 to infer it",
                        (long long)num_classes);
  }
  if (tsr_tensor_rank(indices) >= TSR_MAX_RANK) {
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                        "one_hot: indices of rank %d would give rank %d, above %d",
                        tsr_tensor_rank(indices), tsr_tensor_rank(indices) + 1, TSR_MAX_RANK);
  }
  int64_t n = tsr_tensor_numel(indices);
  if (n == 0 && num_classes == -1) {
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                        "one_hot: num_classes cannot be inferred from empty indices");
  }
  // |wide| is the int64 copy of int32 indices (released at the end); |idx|
  // is what is read. The caller's handle is never released here: inside a
  // scope that would take it out of the scope.
  tsr_tensor *wide = tsr_tensor_dtype(indices) == TSR_INT64 ? NULL : tsr_cast(indices, TSR_INT64);
  tsr_tensor *idx = wide ? wide : indices;
  if (tsr_tensor_dtype(indices) != TSR_INT64 && wide == NULL)
    return tsr_more_inner_fail(what);
  if (n > 0) {
    // As PyTorch, the class values are checked: on the host, a synchronisation.
    int64_t lo = 0, hi = 0;
    if (int64_extreme(idx, TSR_REDUCE_MIN, &lo) != TSR_OK ||
        int64_extreme(idx, TSR_REDUCE_MAX, &hi) != TSR_OK) {
      tsr_tensor_release(wide);
      return tsr_more_inner_fail(what);
    }
    if (num_classes == -1)
      num_classes = hi + 1;
    if (lo < 0 || hi >= num_classes) {
      tsr_tensor_release(wide);
      return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                          "one_hot: class values range from %lld to %lld; they must be in [0, "
                          "%lld)",
                          (long long)lo, (long long)hi, (long long)num_classes);
    }
  }
  int64_t sizes[TSR_MAX_RANK];
  memcpy(sizes, tsr_tensor_sizes(indices), sizeof(sizes));
  sizes[tsr_tensor_rank(indices)] = 1;
  tsr_tensor *column = tsr_view(idx, tsr_tensor_rank(indices) + 1, sizes);
  tsr_tensor *classes = tsr_arange(device, TSR_INT64, 0.0, (double)num_classes, 1.0);
  tsr_tensor *hit = column && classes ? tsr_compare(column, classes, TSR_COMPARE_EQ) : NULL;
  tsr_tensor *out = hit ? tsr_cast(hit, TSR_INT64) : NULL;
  tsr_tensor *tmp[] = {wide, column, classes, hit};
  tsr_more_release(4, tmp);
  return tsr_more_finish(what, out);
}

tsr_tensor *tsr_index_select(tsr_tensor *x, int32_t dim, tsr_tensor *index) {
  const char *what = "index_select";
  if (tsr_more_check(what, "x", x) != TSR_OK || tsr_more_check(what, "index", index) != TSR_OK ||
      tsr_more_check_pair(what, "x", x, "index", index, 0) != TSR_OK ||
      index_dtype_check(what, "index", index) != TSR_OK) {
    return NULL;
  }
  if (tsr_tensor_rank(index) > 1) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "index_select: index has rank %d; it must be 0 or 1",
                        tsr_tensor_rank(index));
  }
  if (tsr_tensor_rank(x) < 1) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "index_select: x is a scalar (rank 0); it needs a dim to index");
  }
  int32_t d = 0;
  if (tsr_more_dim(what, x, dim, tsr_tensor_rank(x), &d) != TSR_OK)
    return NULL;
  tsr_tensor *row = tsr_tensor_rank(index) == 0 ? tsr_view(index, 1, (int64_t[]){1}) : NULL;
  if (tsr_tensor_rank(index) == 0 && row == NULL)
    return tsr_more_inner_fail(what);
  tsr_tensor *out = tsr_gather(x, d, row ? row : index);
  tsr_tensor_release(row);
  return tsr_more_finish(what, out);
}

// --- lerp, pow ------------------------------------------------------------------------

tsr_tensor *tsr_lerp(tsr_tensor *start, tsr_tensor *end, tsr_tensor *weight) {
  const char *what = "lerp";
  if (tsr_more_check(what, "start", start) != TSR_OK ||
      tsr_more_check(what, "end", end) != TSR_OK ||
      tsr_more_check(what, "weight", weight) != TSR_OK ||
      tsr_more_check_float(what, "start", start) != TSR_OK ||
      tsr_more_check_pair(what, "start", start, "end", end, 1) != TSR_OK ||
      tsr_more_check_pair(what, "start", start, "weight", weight, 1) != TSR_OK) {
    return NULL;
  }
  // PyTorch's form, exact at both ends: |w| < 0.5 ? start + w * (end - start)
  // : end - (end - start) * (1 - w). The branch mask carries no gradient.
  int grad_mode = tsr_grad_mode_set(0);
  tsr_tensor *half = tsr_more_scalar(weight, 0.5);
  tsr_tensor *w_abs = tsr_unary(weight, TSR_UNARY_ABS, 0.0);
  tsr_tensor *small = half && w_abs ? tsr_compare(w_abs, half, TSR_COMPARE_LT) : NULL;
  tsr_grad_mode_set(grad_mode);
  tsr_tensor *one = tsr_more_scalar(weight, 1.0);
  tsr_tensor *diff = tsr_sub(end, start);
  tsr_tensor *step = diff ? tsr_mul(weight, diff) : NULL;
  tsr_tensor *low = step ? tsr_add(start, step) : NULL;
  tsr_tensor *rest = one ? tsr_sub(one, weight) : NULL;
  tsr_tensor *back = diff && rest ? tsr_mul(diff, rest) : NULL;
  tsr_tensor *high = back ? tsr_sub(end, back) : NULL;
  tsr_tensor *out = small && low && high ? tsr_where(small, low, high) : NULL;
  tsr_tensor *tmp[] = {half, w_abs, small, one, diff, step, low, rest, back, high};
  tsr_more_release(10, tmp);
  return tsr_more_finish(what, out);
}

tsr_tensor *tsr_lerp_scalar(tsr_tensor *start, tsr_tensor *end, double weight) {
  const char *what = "lerp_scalar";
  if (tsr_more_check(what, "start", start) != TSR_OK ||
      tsr_more_check(what, "end", end) != TSR_OK ||
      tsr_more_check_float(what, "start", start) != TSR_OK ||
      tsr_more_check_pair(what, "start", start, "end", end, 1) != TSR_OK) {
    return NULL;
  }
  tsr_tensor *diff = tsr_sub(end, start);
  tsr_tensor *out = NULL;
  if (diff != NULL) {
    // BINARY's alpha: start + w * diff, or end - (1 - w) * diff.
    out = fabs(weight) < 0.5 ? tsr_binary(start, diff, TSR_BINARY_ADD, weight)
                             : tsr_binary(end, diff, TSR_BINARY_SUB, 1.0 - weight);
  }
  tsr_tensor_release(diff);
  return tsr_more_finish(what, out);
}

tsr_tensor *tsr_pow(tsr_tensor *x, tsr_tensor *exponent) {
  const char *what = "pow";
  if (tsr_more_check(what, "x", x) != TSR_OK ||
      tsr_more_check(what, "exponent", exponent) != TSR_OK ||
      tsr_more_check_float(what, "x", x) != TSR_OK ||
      tsr_more_check_pair(what, "x", x, "exponent", exponent, 1) != TSR_OK) {
    return NULL;
  }
  return tsr_more_finish(what, tsr_binary(x, exponent, TSR_BINARY_POW, 1.0));
}

tsr_tensor *tsr_pow_scalar(tsr_tensor *x, double exponent) {
  const char *what = "pow_scalar";
  if (tsr_more_check(what, "x", x) != TSR_OK || tsr_more_check_float(what, "x", x) != TSR_OK) {
    return NULL;
  }
  tsr_tensor *e = tsr_more_scalar(x, exponent);
  tsr_tensor *out = e ? tsr_binary(x, e, TSR_BINARY_POW, 1.0) : NULL;
  tsr_tensor_release(e);
  return tsr_more_finish(what, out);
}

// --- item ---------------------------------------------------------------------------------

// IEEE half precision to double.
static double half_to_double(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  double mantissa = h & 0x3ff;
  double v = exponent == 0    ? ldexp(mantissa, -24)
             : exponent == 31 ? (mantissa != 0 ? NAN : INFINITY)
                              : ldexp(mantissa + 1024.0, exponent - 25);
  return (h & 0x8000) ? -v : v;
}

tsr_status tsr_item(const tsr_tensor *x, double *out_value) {
  const char *what = "item";
  TSR_RETURN_IF_ERROR(tsr_more_check(what, "x", x));
  if (out_value == NULL) {
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "item: out_value is NULL");
  }
  int64_t n = tsr_tensor_numel(x);
  if (n != 1) {
    char s[160];
    return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                    "item: x %s has %lld elements; item needs exactly one",
                    tsr_more_shape(x, s, sizeof(s)), (long long)n);
  }
  union {
    double f64;
    float f32;
    int64_t i64;
    int32_t i32;
    uint16_t u16;
    uint8_t u8;
  } v;
  memset(&v, 0, sizeof(v));
  tsr_status status = tsr_tensor_to_host(x, &v, tsr_dtype_size(tsr_tensor_dtype(x)));
  if (status != TSR_OK) {
    tsr_error_prefix(what);
    return status;
  }
  switch (tsr_tensor_dtype(x)) {
    case TSR_FLOAT64:
      *out_value = v.f64;
      break;
    case TSR_FLOAT32:
      *out_value = v.f32;
      break;
    case TSR_INT64:
      *out_value = (double)v.i64;
      break;
    case TSR_INT32:
      *out_value = v.i32;
      break;
    case TSR_BOOL:
      *out_value = v.u8 != 0;
      break;
    case TSR_FLOAT16:
      *out_value = half_to_double(v.u16);
      break;
    case TSR_BFLOAT16: {
      uint32_t bits = (uint32_t)v.u16 << 16;
      float f;
      memcpy(&f, &bits, sizeof(f));
      *out_value = f;
      break;
    }
    default:
      return tsr_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "item: x has %s",
                      tsr_dtype_name(tsr_tensor_dtype(x)));
  }
  return TSR_OK;
}
