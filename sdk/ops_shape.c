// Shape-changing op functions (concat, pad, gather, scatter_add) and their
// autograd rules.
#include <stdlib.h>
#include <string.h>

#include "autograd_internal.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"
#include "sdk_errors.h"

// Inputs one CONCAT dispatch takes: every operand slot but the output's.
#define CONCAT_MAX_INPUTS (TSR_MAX_OPERANDS - 1)

// A new contiguous tensor of |sizes| written by |op| from |inputs|.
static tsr_tensor *alloc_run(const char *what, tsr_op_id_t op, tsr_device *device,
                             tsr_dtype_t dtype, int32_t rank, const int64_t *sizes, int32_t ni,
                             tsr_tensor *const *inputs, const void *attrs) {
  tsr_tensor *out = tsr_tensor_alloc(what, device, dtype, rank, sizes);
  if (out == NULL)
    return NULL;
  if (tsr_dispatch(op, ni, inputs, 1, &out, attrs) != TSR_OK) {
    tsr_tensor_release(out);
    return NULL;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Concat

static tsr_status concat_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  int32_t axis = (int32_t)node->ints[0];
  int64_t offset = 0;
  for (int32_t i = 0; i < node->num_inputs; ++i) {
    int64_t size = tsr_tensor_sizes(node->inputs[i])[axis];
    if (tsr_ag_needs_grad(node, i)) {
      out_dx[i] = tsr_slice(dy, axis, offset, offset + size, 1);
      if (out_dx[i] == NULL) {
        for (int32_t k = 0; k < i; ++k) {
          tsr_tensor_release(out_dx[k]);
          out_dx[k] = NULL;
        }
        return tsr_sdk_last_status();
      }
    }
    offset += size;
  }
  return TSR_OK;
}

// Concatenates more inputs than one dispatch takes: groups first, then the
// groups' results (each step recorded as an ordinary concat).
static tsr_tensor *concat_grouped(int32_t count, tsr_tensor *const *xs, int32_t axis) {
  int32_t groups = (count + CONCAT_MAX_INPUTS - 1) / CONCAT_MAX_INPUTS;
  tsr_tensor **parts = calloc((size_t)groups, sizeof(*parts));
  if (parts == NULL) {
    return tsr_sdk_fail(tsr_tensor_device(xs[0]), TSR_OUT_OF_MEMORY,
                        "concat: no host memory for %d groups", groups);
  }
  tsr_tensor *out = NULL;
  int32_t made = 0;
  for (; made < groups; ++made) {
    int32_t first = made * CONCAT_MAX_INPUTS;
    int32_t n = count - first < CONCAT_MAX_INPUTS ? count - first : CONCAT_MAX_INPUTS;
    parts[made] = tsr_concat(n, xs + first, axis);
    if (parts[made] == NULL)
      break;
  }
  if (made == groups)
    out = tsr_concat(groups, parts, axis);
  for (int32_t i = 0; i < made; ++i) tsr_tensor_release(parts[i]);
  free(parts);
  return out;
}

tsr_tensor *tsr_concat(int32_t count, tsr_tensor *const *xs, int32_t axis) {
  const char *what = "concat";
  if (count < 1 || xs == NULL) {
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "concat: count is %d and xs is %s", count,
                      xs ? "given" : "NULL");
  }
  for (int32_t i = 0; i < count; ++i) {
    if (xs[i] == NULL)
      return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "concat: xs[%d] is NULL", i);
  }
  const tsr_tensor *x0 = xs[0];
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(x0) : axis;
  if (tsr_tensor_rank(x0) < 1 || a < 0 || a >= tsr_tensor_rank(x0)) {
    return tsr_sdk_fail(tsr_tensor_device(x0), TSR_INVALID_ARGUMENT,
                        "concat: axis %d for tensors of rank %d", axis, tsr_tensor_rank(x0));
  }
  int64_t sizes[TSR_MAX_RANK];
  memcpy(sizes, tsr_tensor_sizes(x0), sizeof(sizes));
  sizes[a] = 0;
  for (int32_t i = 0; i < count; ++i) {
    const tsr_tensor *x = xs[i];
    if (tsr_tensor_rank(x) != tsr_tensor_rank(x0) || tsr_tensor_dtype(x) != tsr_tensor_dtype(x0) ||
        tsr_tensor_device(x) != tsr_tensor_device(x0)) {
      return tsr_sdk_fail(tsr_tensor_device(x0), TSR_INVALID_ARGUMENT,
                          "concat: xs[%d] has rank %d, dtype %d on %s; xs[0] has rank %d, dtype %d "
                          "on %s",
                          i, tsr_tensor_rank(x), tsr_tensor_dtype(x),
                          tsr_device_name(tsr_tensor_device(x)), tsr_tensor_rank(x0),
                          tsr_tensor_dtype(x0), tsr_device_name(tsr_tensor_device(x0)));
    }
    for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
      if (d != a && tsr_tensor_sizes(x)[d] != tsr_tensor_sizes(x0)[d]) {
        return tsr_sdk_fail(tsr_tensor_device(x0), TSR_INVALID_ARGUMENT,
                            "concat: xs[%d] sizes[%d] is %lld, xs[0] has %lld (only axis %d may "
                            "differ)",
                            i, d, (long long)tsr_tensor_sizes(x)[d],
                            (long long)tsr_tensor_sizes(x0)[d], a);
      }
    }
    sizes[a] += tsr_tensor_sizes(x)[a];
  }
  if (count > CONCAT_MAX_INPUTS)
    return concat_grouped(count, xs, a);
  tsr_concat_attrs attrs = {sizeof(attrs), a, 0};
  tsr_tensor *out = alloc_run(what, TSR_OP_CONCAT, tsr_tensor_device(x0), tsr_tensor_dtype(x0),
                              tsr_tensor_rank(x0), sizes, count, xs, &attrs);
  if (out == NULL)
    return NULL;
  if (tsr_ag_should_record(count, xs)) {
    tsr_ag_node *node = NULL;
    if (tsr_ag_record("concat", concat_rule, count, xs, out, &node) != TSR_OK) {
      tsr_tensor_release(out);
      return NULL;
    }
    node->ints[0] = a;
    node->reads_inputs = 0;  // only sizes
  }
  return out;
}

// ---------------------------------------------------------------------------
// Pad

// Where output position |j| of a padded axis reads the input (REFLECT or
// REPLICATE; |n| >= 1).
static int64_t pad_source(tsr_pad_mode_t mode, int64_t j, int64_t before, int64_t n) {
  int64_t p = j - before;
  if (mode == TSR_PAD_REFLECT) {
    if (p < 0)
      p = -p;
    if (p >= n)
      p = 2 * (n - 1) - p;
    return p;
  }
  return p < 0 ? 0 : p >= n ? n - 1 : p;
}

// dx of REFLECT / REPLICATE padding: one axis at a time, dy's slabs are added
// to the input position each one was read from.
static tsr_status pad_rule_gather_back(const tsr_pad_attrs *a, const tsr_tensor *x, tsr_tensor *dy,
                                       tsr_tensor **out_dx) {
  tsr_tensor *g = tsr_tensor_retain(dy);
  int64_t *positions = NULL;
  tsr_status status = TSR_OK;
  for (int32_t d = 0; d < tsr_tensor_rank(x) && status == TSR_OK; ++d) {
    if (a->pad_before[d] == 0 && a->pad_after[d] == 0)
      continue;
    int64_t n = tsr_tensor_sizes(x)[d], len = tsr_tensor_sizes(g)[d];
    int64_t *grown = realloc(positions, (size_t)len * sizeof(int64_t));
    if (grown == NULL) {
      status = tsr_fail(tsr_tensor_device(x), TSR_OUT_OF_MEMORY, "pad backward: no host memory");
      break;
    }
    positions = grown;
    for (int64_t j = 0; j < len; ++j) positions[j] = pad_source(a->mode, j, a->pad_before[d], n);
    tsr_tensor *index = tsr_tensor_from_host(tsr_tensor_device(x), TSR_INT64, 1, &len, positions);
    int64_t sizes[TSR_MAX_RANK];
    memcpy(sizes, tsr_tensor_sizes(g), sizeof(sizes));
    sizes[d] = n;
    tsr_tensor *sum =
        tsr_zeros(tsr_tensor_device(x), tsr_tensor_dtype(g), tsr_tensor_rank(g), sizes);
    if (index == NULL || sum == NULL) {
      status = tsr_sdk_last_status();
    } else {
      status = tsr_scatter_add_(sum, d, index, g);
    }
    tsr_tensor_release(index);
    tsr_tensor_release(g);
    g = sum;
    if (status != TSR_OK) {
      tsr_tensor_release(g);
      g = NULL;
    }
  }
  free(positions);
  if (status != TSR_OK)
    return status;
  out_dx[0] = g;
  return TSR_OK;
}

static tsr_status pad_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_pad_attrs a;
  memcpy(&a, node->attrs, sizeof(a));
  const tsr_tensor *x = node->inputs[0];
  if (a.mode != TSR_PAD_CONSTANT)
    return pad_rule_gather_back(&a, x, dy, out_dx);
  // The padding is constant: dx is the window of dy over x.
  tsr_tensor *g = tsr_tensor_retain(dy);
  for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
    if (a.pad_before[d] == 0 && a.pad_after[d] == 0)
      continue;
    tsr_tensor *s = tsr_slice(g, d, a.pad_before[d], a.pad_before[d] + tsr_tensor_sizes(x)[d], 1);
    tsr_tensor_release(g);
    if (s == NULL)
      return tsr_sdk_last_status();
    g = s;
  }
  out_dx[0] = g;
  return TSR_OK;
}

tsr_tensor *tsr_pad(tsr_tensor *x, const tsr_pad_attrs *attrs) {
  const char *what = "pad";
  if (x == NULL || attrs == NULL) {
    return tsr_sdk_fail(x ? tsr_tensor_device(x) : NULL, TSR_INVALID_ARGUMENT, "pad: %s is NULL",
                        x ? "attrs" : "x");
  }
  tsr_pad_attrs a;
  memset(&a, 0, sizeof(a));
  if (attrs->struct_size < sizeof(size_t) || attrs->struct_size > 512) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "pad: attrs->struct_size %zu is not valid", attrs->struct_size);
  }
  memcpy(&a, attrs, attrs->struct_size < sizeof(a) ? attrs->struct_size : sizeof(a));
  a.struct_size = sizeof(a);
  if (a.mode < 0 || a.mode >= TSR_PAD_MODE_COUNT) {
    return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                        "pad: mode %d is not a tsr_pad_mode_t", a.mode);
  }
  int64_t sizes[TSR_MAX_RANK] = {0};
  for (int32_t d = 0; d < TSR_MAX_RANK; ++d) {
    if (d >= tsr_tensor_rank(x)) {  // entries past the rank mean nothing
      a.pad_before[d] = a.pad_after[d] = 0;
      continue;
    }
    int64_t n = tsr_tensor_sizes(x)[d], before = a.pad_before[d], after = a.pad_after[d];
    if (before < 0 || after < 0) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                          "pad: pads of dim %d are %lld and %lld", d, (long long)before,
                          (long long)after);
    }
    if (a.mode == TSR_PAD_REFLECT && (before >= n || after >= n) && before + after > 0) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                          "pad: reflect pads %lld and %lld of dim %d must be below its size %lld",
                          (long long)before, (long long)after, d, (long long)n);
    }
    if (a.mode == TSR_PAD_REPLICATE && n == 0 && before + after > 0) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT,
                          "pad: replicate padding of the empty dim %d has no edge to repeat", d);
    }
    if (before > INT64_MAX - n - after) {
      return tsr_sdk_fail(tsr_tensor_device(x), TSR_INVALID_ARGUMENT, "pad: dim %d overflows int64",
                          d);
    }
    sizes[d] = before + n + after;
  }
  tsr_tensor *out = alloc_run(what, TSR_OP_PAD, tsr_tensor_device(x), tsr_tensor_dtype(x),
                              tsr_tensor_rank(x), sizes, 1, &x, &a);
  if (out == NULL)
    return NULL;
  if (tsr_ag_should_record(1, &x)) {
    tsr_ag_node *node = NULL;
    if (tsr_ag_record("pad", pad_rule, 1, &x, out, &node) != TSR_OK) {
      tsr_tensor_release(out);
      return NULL;
    }
    _Static_assert(sizeof(tsr_pad_attrs) <= TSR_AG_ATTR_BYTES, "pad attrs fit a node");
    memcpy(node->attrs, &a, sizeof(a));
    node->reads_inputs = 0;  // only sizes
  }
  return out;
}

// ---------------------------------------------------------------------------
// Gather and scatter_add

// Checks |index| (int32/int64 [K]) and |axis| against |indexed|; wraps the axis.
static tsr_status index_check(const char *what, const tsr_tensor *indexed, const char *name,
                              int32_t axis, const tsr_tensor *index, int32_t *out_axis) {
  if (indexed == NULL || index == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, indexed ? "index" : name);
  }
  if (tsr_tensor_rank(index) != 1 ||
      (tsr_tensor_dtype(index) != TSR_INT32 && tsr_tensor_dtype(index) != TSR_INT64)) {
    return tsr_fail(tsr_tensor_device(indexed), TSR_INVALID_ARGUMENT,
                    "%s: index must be int32 or int64 of rank 1; it has rank %d and dtype %d", what,
                    tsr_tensor_rank(index), tsr_tensor_dtype(index));
  }
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(indexed) : axis;
  if (tsr_tensor_rank(indexed) < 1 || a < 0 || a >= tsr_tensor_rank(indexed)) {
    return tsr_fail(tsr_tensor_device(indexed), TSR_INVALID_ARGUMENT,
                    "%s: axis %d for %s of rank %d", what, axis, name, tsr_tensor_rank(indexed));
  }
  *out_axis = a;
  return TSR_OK;
}

// Checks that |src| has |indexed|'s sizes except K = index length on |axis|.
static tsr_status src_check(const char *what, const tsr_tensor *indexed, const tsr_tensor *src,
                            const tsr_tensor *index, int32_t axis) {
  if (src == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: src is NULL", what);
  int same = tsr_tensor_rank(src) == tsr_tensor_rank(indexed) &&
             tsr_tensor_dtype(src) == tsr_tensor_dtype(indexed);
  for (int32_t d = 0; same && d < tsr_tensor_rank(src); ++d) {
    same = tsr_tensor_sizes(src)[d] ==
           (d == axis ? tsr_tensor_sizes(index)[0] : tsr_tensor_sizes(indexed)[d]);
  }
  if (same)
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(indexed), TSR_INVALID_ARGUMENT,
                  "%s: src (rank %d, dtype %d) must have the destination's dtype %d and sizes, "
                  "with the index length %lld on axis %d",
                  what, tsr_tensor_rank(src), tsr_tensor_dtype(src), tsr_tensor_dtype(indexed),
                  (long long)tsr_tensor_sizes(index)[0], axis);
}

static tsr_status gather_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  const tsr_tensor *x = node->inputs[0];
  tsr_tensor *dx = tsr_zeros(tsr_tensor_device(x), tsr_tensor_dtype(dy), tsr_tensor_rank(x),
                             tsr_tensor_sizes(x));
  if (dx == NULL)
    return tsr_sdk_last_status();
  tsr_status status = tsr_scatter_add_(dx, (int32_t)node->ints[0], node->inputs[1], dy);
  if (status != TSR_OK) {
    tsr_tensor_release(dx);
    return status;
  }
  out_dx[0] = dx;
  return TSR_OK;
}

tsr_tensor *tsr_gather(tsr_tensor *x, int32_t axis, tsr_tensor *index) {
  const char *what = "gather";
  int32_t a = 0;
  if (index_check(what, x, "x", axis, index, &a) != TSR_OK)
    return NULL;
  int64_t sizes[TSR_MAX_RANK];
  memcpy(sizes, tsr_tensor_sizes(x), sizeof(sizes));
  sizes[a] = tsr_tensor_sizes(index)[0];
  tsr_gather_attrs attrs = {sizeof(attrs), a, 0};
  tsr_tensor *inputs[2] = {x, index};
  tsr_tensor *out = alloc_run(what, TSR_OP_GATHER, tsr_tensor_device(x), tsr_tensor_dtype(x),
                              tsr_tensor_rank(x), sizes, 2, inputs, &attrs);
  if (out == NULL)
    return NULL;
  if (tsr_ag_should_record(2, inputs)) {
    tsr_ag_node *node = NULL;
    if (tsr_ag_record("gather", gather_rule, 2, inputs, out, &node) != TSR_OK) {
      tsr_tensor_release(out);
      return NULL;
    }
    node->ints[0] = a;
    node->reads_inputs = 2u;  // the index; x only gives sizes
  }
  return out;
}

static tsr_status scatter_add_rule(const tsr_ag_node *node, tsr_tensor *dy, tsr_tensor **out_dx) {
  if (tsr_ag_needs_grad(node, 0))
    out_dx[0] = tsr_tensor_retain(dy);
  if (tsr_ag_needs_grad(node, 2)) {
    out_dx[2] = tsr_gather(dy, (int32_t)node->ints[0], node->inputs[1]);
    if (out_dx[2] == NULL) {
      tsr_tensor_release(out_dx[0]);
      out_dx[0] = NULL;
      return tsr_sdk_last_status();
    }
  }
  return TSR_OK;
}

tsr_tensor *tsr_scatter_add(tsr_tensor *base, int32_t axis, tsr_tensor *index, tsr_tensor *src) {
  const char *what = "scatter_add";
  int32_t a = 0;
  if (index_check(what, base, "base", axis, index, &a) != TSR_OK ||
      src_check(what, base, src, index, a) != TSR_OK) {
    return NULL;
  }
  tsr_tensor *out = tsr_tensor_alloc(what, tsr_tensor_device(base), tsr_tensor_dtype(base),
                                     tsr_tensor_rank(base), tsr_tensor_sizes(base));
  if (out == NULL)
    return NULL;
  tsr_gather_attrs attrs = {sizeof(attrs), a, 0};
  tsr_tensor *op_inputs[2] = {src, index};
  if (tsr_copy_(out, base) != TSR_OK ||
      tsr_dispatch(TSR_OP_SCATTER_ADD, 2, op_inputs, 1, &out, &attrs) != TSR_OK) {
    tsr_tensor_release(out);
    return NULL;
  }
  tsr_tensor *inputs[3] = {base, index, src};
  if (tsr_ag_should_record(3, inputs)) {
    tsr_ag_node *node = NULL;
    if (tsr_ag_record("scatter_add", scatter_add_rule, 3, inputs, out, &node) != TSR_OK) {
      tsr_tensor_release(out);
      return NULL;
    }
    node->ints[0] = a;
    node->reads_inputs = 2u;  // the index
  }
  return out;
}

tsr_status tsr_scatter_add_(tsr_tensor *out, int32_t axis, tsr_tensor *index, tsr_tensor *src) {
  const char *what = "scatter_add_";
  int32_t a = 0;
  TSR_RETURN_IF_ERROR(index_check(what, out, "out", axis, index, &a));
  TSR_RETURN_IF_ERROR(src_check(what, out, src, index, a));
  TSR_RETURN_IF_ERROR(tsr_ag_check_inplace(what, out));
  if (tsr_ag_should_record(1, &src)) {
    // An in-place op has no node to carry src's gradient: it would be lost.
    return tsr_fail(tsr_tensor_device(out), TSR_INVALID_ARGUMENT,
                    "%s: src requires grad while grad mode is on, and the in-place form is not "
                    "recorded; use tsr_scatter_add",
                    what);
  }
  tsr_gather_attrs attrs = {sizeof(attrs), a, 0};
  tsr_tensor *inputs[2] = {src, index};
  return tsr_dispatch(TSR_OP_SCATTER_ADD, 2, inputs, 1, &out, &attrs);
}
