// Backward rules of the elementwise, reduction, matmul and view functions.
// Rules run with grad mode off; each writes the gradient of every input that
// needs one with that input's sizes (autograd_internal.h).
#include "autograd_rules.h"

#include <string.h>

#include "tessera/core_layer.h"

// --- helpers --------------------------------------------------------------------

// t * c for a scalar c (a rank-0 constant broadcast by MUL).
static tsr_tensor *scale(tsr_tensor *t, double c) {
  if (c == 1.0)
    return tsr_detach(t);
  tsr_tensor *k = tsr_tensor_full(tsr_tensor_device(t), tsr_tensor_dtype(t), 0, NULL, c);
  if (k == NULL)
    return NULL;
  tsr_tensor *r = tsr_mul(t, k);
  tsr_tensor_release(k);
  return r;
}

// A 0/1 tensor of |like|'s dtype from a bool mask.
static tsr_tensor *mask_of(tsr_tensor *mask, tsr_dtype_t dtype) {
  if (mask == NULL)
    return NULL;
  tsr_tensor *m = tsr_cast(mask, dtype);
  tsr_tensor_release(mask);
  return m;
}

// Writes reduce_to(g, input i's shape) into out_dx[i] and releases g.
static tsr_status give(const tsr_ag_node *n, int32_t i, tsr_tensor *g, tsr_tensor **out_dx) {
  if (g == NULL)
    return tsr_error_status();
  if (!tsr_ag_needs_grad(n, i)) {
    tsr_tensor_release(g);
    return TSR_OK;
  }
  const tsr_tensor *t = n->inputs[i];
  out_dx[i] = tsr_ag_reduce_to(g, tsr_tensor_rank(t), tsr_tensor_sizes(t));
  tsr_tensor_release(g);
  return out_dx[i] != NULL ? TSR_OK : tsr_error_status();
}

static tsr_status record(const char *name, tsr_ag_backward_fn fn, int32_t count,
                         tsr_tensor *const *inputs, tsr_tensor *out, tsr_ag_node **node) {
  *node = NULL;
  if (!tsr_ag_should_record(count, inputs))
    return TSR_OK;
  return tsr_ag_record(name, fn, count, inputs, out, node);
}

// --- unary ------------------------------------------------------------------------

typedef struct unary_state {
  tsr_unary_fn_t fn;
  double alpha;
} unary_state;

static tsr_status unary_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  const unary_state *s = (const unary_state *)n->attrs;
  return give(n, 0, tsr_unary_backward(dy, n->inputs[0], s->fn, s->alpha), out_dx);
}

static int unary_differentiable(tsr_unary_fn_t fn) {
  return fn != TSR_UNARY_SIGN && fn != TSR_UNARY_FLOOR && fn != TSR_UNARY_CEIL &&
         fn != TSR_UNARY_ROUND && fn != TSR_UNARY_LOGICAL_NOT;
}

tsr_status tsr_ag_record_unary(tsr_tensor *out, tsr_tensor *x, tsr_unary_fn_t fn, double alpha) {
  // Piecewise-constant functions have a zero derivative: their output
  // carries no gradient at all.
  if (!unary_differentiable(fn))
    return TSR_OK;
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record("unary", unary_backward, 1, &x, out, &node));
  if (node != NULL) {
    unary_state s = {fn, alpha};
    memcpy(node->attrs, &s, sizeof(s));
  }
  return TSR_OK;
}

// --- binary -----------------------------------------------------------------------

static tsr_status binary_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_binary_fn_t fn = (tsr_binary_fn_t)n->ints[0];
  double alpha = n->reals[0];
  tsr_tensor *a = n->inputs[0], *b = n->inputs[1];
  tsr_tensor *da = NULL, *db = NULL;
  switch (fn) {
    case TSR_BINARY_ADD:
    case TSR_BINARY_SUB:
      da = tsr_detach(dy);
      db = tsr_ag_needs_grad(n, 1) ? scale(dy, fn == TSR_BINARY_ADD ? alpha : -alpha) : NULL;
      break;
    case TSR_BINARY_MUL:
      da = tsr_ag_needs_grad(n, 0) ? tsr_mul(dy, b) : NULL;
      db = tsr_ag_needs_grad(n, 1) ? tsr_mul(dy, a) : NULL;
      break;
    case TSR_BINARY_DIV: {
      // da = dy / b; db = -dy * a / b^2 = -(da * a) / b.
      da = tsr_div(dy, b);
      if (da != NULL && tsr_ag_needs_grad(n, 1)) {
        tsr_tensor *t = tsr_mul(da, a);
        tsr_tensor *u = t ? tsr_div(t, b) : NULL;
        db = u ? tsr_neg(u) : NULL;
        tsr_tensor_release(t);
        tsr_tensor_release(u);
      }
      break;
    }
    case TSR_BINARY_MAXIMUM:
    case TSR_BINARY_MINIMUM: {
      // The larger (smaller) operand takes the gradient; a tie splits it.
      tsr_compare_fn_t win = fn == TSR_BINARY_MAXIMUM ? TSR_COMPARE_GT : TSR_COMPARE_LT;
      tsr_compare_fn_t lose = fn == TSR_BINARY_MAXIMUM ? TSR_COMPARE_LT : TSR_COMPARE_GT;
      tsr_tensor *wa = mask_of(tsr_compare(a, b, win), tsr_tensor_dtype(dy));
      tsr_tensor *wb = mask_of(tsr_compare(a, b, lose), tsr_tensor_dtype(dy));
      tsr_tensor *eq = mask_of(tsr_compare(a, b, TSR_COMPARE_EQ), tsr_tensor_dtype(dy));
      tsr_tensor *half = eq ? scale(eq, 0.5) : NULL;
      tsr_tensor *fa = wa && half ? tsr_add(wa, half) : NULL;
      tsr_tensor *fb = wb && half ? tsr_add(wb, half) : NULL;
      da = fa ? tsr_mul(dy, fa) : NULL;
      db = fb ? tsr_mul(dy, fb) : NULL;
      tsr_tensor *tmp[] = {wa, wb, eq, half, fa, fb};
      for (size_t i = 0; i < sizeof(tmp) / sizeof(tmp[0]); ++i) tsr_tensor_release(tmp[i]);
      break;
    }
    case TSR_BINARY_POW: {
      // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b ln a.
      tsr_tensor *one = tsr_tensor_full(tsr_tensor_device(dy), tsr_tensor_dtype(dy), 0, NULL, 1.0);
      tsr_tensor *bm1 = one ? tsr_sub(b, one) : NULL;
      tsr_tensor *p = bm1 ? tsr_binary(a, bm1, TSR_BINARY_POW, 1.0) : NULL;
      tsr_tensor *bp = p ? tsr_mul(b, p) : NULL;
      da = bp ? tsr_mul(dy, bp) : NULL;
      if (tsr_ag_needs_grad(n, 1)) {
        tsr_tensor *y = tsr_binary(a, b, TSR_BINARY_POW, 1.0);
        tsr_tensor *la = tsr_unary(a, TSR_UNARY_LOG, 0.0);
        tsr_tensor *yl = y && la ? tsr_mul(y, la) : NULL;
        db = yl ? tsr_mul(dy, yl) : NULL;
        tsr_tensor_release(y);
        tsr_tensor_release(la);
        tsr_tensor_release(yl);
      }
      tsr_tensor *tmp[] = {one, bm1, p, bp};
      for (size_t i = 0; i < sizeof(tmp) / sizeof(tmp[0]); ++i) tsr_tensor_release(tmp[i]);
      break;
    }
    default:
      return tsr_fail(tsr_tensor_device(dy), TSR_INTERNAL,
                      "binary backward: function %d has no rule", fn);
  }
  tsr_status status = TSR_OK;
  if (tsr_ag_needs_grad(n, 0)) {
    status = give(n, 0, da, out_dx);
  } else {
    tsr_tensor_release(da);
  }
  if (tsr_ag_needs_grad(n, 1)) {
    if (status == TSR_OK) {
      status = give(n, 1, db, out_dx);
    } else {
      tsr_tensor_release(db);
    }
  } else {
    tsr_tensor_release(db);
  }
  return status;
}

tsr_status tsr_ag_record_binary(tsr_tensor *out, tsr_tensor *a, tsr_tensor *b, tsr_binary_fn_t fn,
                                double alpha) {
  if (fn == TSR_BINARY_LOGICAL_AND || fn == TSR_BINARY_LOGICAL_OR || fn == TSR_BINARY_LOGICAL_XOR) {
    return TSR_OK;
  }
  tsr_tensor *inputs[2] = {a, b};
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record("binary", binary_backward, 2, inputs, out, &node));
  if (node != NULL) {
    node->ints[0] = fn;
    node->reals[0] = alpha;
    if (fn == TSR_BINARY_ADD || fn == TSR_BINARY_SUB)
      node->reads_inputs = 0;
  }
  return TSR_OK;
}

// --- where, clamp -------------------------------------------------------------------

static tsr_status where_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_tensor *zero = tsr_tensor_full(tsr_tensor_device(dy), tsr_tensor_dtype(dy), 0, NULL, 0.0);
  if (zero == NULL)
    return tsr_error_status();
  tsr_status status = TSR_OK;
  if (tsr_ag_needs_grad(n, 1))
    status = give(n, 1, tsr_where(n->inputs[0], dy, zero), out_dx);
  if (status == TSR_OK && tsr_ag_needs_grad(n, 2)) {
    status = give(n, 2, tsr_where(n->inputs[0], zero, dy), out_dx);
  }
  tsr_tensor_release(zero);
  return status;
}

tsr_status tsr_ag_record_where(tsr_tensor *out, tsr_tensor *cond, tsr_tensor *a, tsr_tensor *b) {
  tsr_tensor *inputs[3] = {cond, a, b};
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record("where", where_backward, 3, inputs, out, &node));
  if (node != NULL)
    node->reads_inputs = 1u;  // only the condition
  return TSR_OK;
}

// The gradient passes where lo <= x <= hi (both ends included, as PyTorch).
static tsr_status clamp_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_clamp_attrs attrs;
  memcpy(&attrs, n->attrs, sizeof(attrs));
  tsr_tensor *x = n->inputs[0];
  tsr_tensor *pass = NULL;
  if (attrs.has_min) {
    tsr_tensor *lo = tsr_tensor_full(tsr_tensor_device(x), tsr_tensor_dtype(x), 0, NULL, attrs.min);
    pass = lo ? tsr_compare(x, lo, TSR_COMPARE_GE) : NULL;
    tsr_tensor_release(lo);
    if (pass == NULL)
      return tsr_error_status();
  }
  if (attrs.has_max) {
    tsr_tensor *hi = tsr_tensor_full(tsr_tensor_device(x), tsr_tensor_dtype(x), 0, NULL, attrs.max);
    tsr_tensor *le = hi ? tsr_compare(x, hi, TSR_COMPARE_LE) : NULL;
    tsr_tensor_release(hi);
    if (le == NULL) {
      tsr_tensor_release(pass);
      return tsr_error_status();
    }
    if (pass != NULL) {
      tsr_tensor *both = tsr_binary(pass, le, TSR_BINARY_LOGICAL_AND, 1.0);
      tsr_tensor_release(pass);
      tsr_tensor_release(le);
      pass = both;
      if (pass == NULL)
        return tsr_error_status();
    } else {
      pass = le;
    }
  }
  if (pass == NULL)
    return give(n, 0, tsr_detach(dy), out_dx);
  tsr_tensor *zero = tsr_tensor_full(tsr_tensor_device(dy), tsr_tensor_dtype(dy), 0, NULL, 0.0);
  tsr_tensor *dx = zero ? tsr_where(pass, dy, zero) : NULL;
  tsr_tensor_release(zero);
  tsr_tensor_release(pass);
  return give(n, 0, dx, out_dx);
}

tsr_status tsr_ag_record_clamp(tsr_tensor *out, tsr_tensor *x, const tsr_clamp_attrs *attrs) {
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record("clamp", clamp_backward, 1, &x, out, &node));
  if (node != NULL)
    memcpy(node->attrs, attrs, sizeof(*attrs));
  return TSR_OK;
}

// --- reductions ---------------------------------------------------------------------

// dy with the reduced axes put back as size 1.
static tsr_tensor *keepdim_grad(const tsr_ag_node *n, tsr_tensor *dy) {
  const tsr_tensor *x = n->inputs[0];
  uint32_t mask = (uint32_t)n->ints[1];
  int64_t sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < tsr_tensor_rank(x); ++d)
    sizes[d] = (mask >> d) & 1u ? 1 : tsr_tensor_sizes(x)[d];
  return tsr_reshape(dy, tsr_tensor_rank(x), sizes);
}

static tsr_tensor *expand_to_input(const tsr_ag_node *n, tsr_tensor *g) {
  if (g == NULL)
    return NULL;
  const tsr_tensor *x = n->inputs[0];
  tsr_tensor *e = tsr_expand(g, tsr_tensor_rank(x), tsr_tensor_sizes(x));
  tsr_tensor_release(g);
  return e;
}

static tsr_status reduce_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_reduce_fn_t fn = (tsr_reduce_fn_t)n->ints[0];
  tsr_tensor *x = n->inputs[0];
  tsr_tensor *g = keepdim_grad(n, dy);
  if (g == NULL)
    return tsr_error_status();
  int64_t count = tsr_tensor_numel(x) / (tsr_tensor_numel(g) ? tsr_tensor_numel(g) : 1);
  switch (fn) {
    case TSR_REDUCE_SUM:
      return give(n, 0, expand_to_input(n, g), out_dx);
    case TSR_REDUCE_MEAN: {
      tsr_tensor *s = scale(g, count ? 1.0 / (double)count : 0.0);
      tsr_tensor_release(g);
      return give(n, 0, expand_to_input(n, s), out_dx);
    }
    case TSR_REDUCE_MAX:
    case TSR_REDUCE_MIN: {
      // Every element equal to the extreme shares the gradient equally.
      tsr_tensor *y = n->saved[0];
      tsr_tensor *hit = mask_of(tsr_compare(x, y, TSR_COMPARE_EQ), tsr_tensor_dtype(x));
      uint32_t mask = (uint32_t)n->ints[1];
      int32_t axes[TSR_MAX_RANK], k = 0;
      for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
        if ((mask >> d) & 1u)
          axes[k++] = d;
      }
      tsr_tensor *ties = hit ? tsr_reduce(hit, TSR_REDUCE_SUM, k, axes, 1) : NULL;
      tsr_tensor *share = ties ? tsr_div(g, ties) : NULL;
      tsr_tensor *dx = share ? tsr_mul(hit, share) : NULL;
      tsr_tensor *tmp[] = {g, hit, ties, share};
      for (size_t i = 0; i < sizeof(tmp) / sizeof(tmp[0]); ++i) tsr_tensor_release(tmp[i]);
      return give(n, 0, dx, out_dx);
    }
    case TSR_REDUCE_PROD: {
      // d prod / d x_i = product of the others: y / x_i where x_i != 0. At a
      // zero it is the product of the non-zeros when x_i is the only zero of
      // its slice, else 0.
      tsr_tensor *y = n->saved[0];
      uint32_t mask = (uint32_t)n->ints[1];
      int32_t axes[TSR_MAX_RANK], k = 0;
      for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
        if ((mask >> d) & 1u)
          axes[k++] = d;
      }
      tsr_tensor *zero = tsr_tensor_full(tsr_tensor_device(x), tsr_tensor_dtype(x), 0, NULL, 0.0);
      tsr_tensor *one = tsr_tensor_full(tsr_tensor_device(x), tsr_tensor_dtype(x), 0, NULL, 1.0);
      tsr_tensor *is0 = zero ? tsr_compare(x, zero, TSR_COMPARE_EQ) : NULL;
      tsr_tensor *nz = is0 ? tsr_where(is0, one, x) : NULL;
      tsr_tensor *pnz = nz ? tsr_reduce(nz, TSR_REDUCE_PROD, k, axes, 1) : NULL;
      tsr_tensor *zf = is0 ? tsr_cast(is0, tsr_tensor_dtype(x)) : NULL;
      tsr_tensor *zc = zf ? tsr_reduce(zf, TSR_REDUCE_SUM, k, axes, 1) : NULL;
      tsr_tensor *single = zc && one ? tsr_compare(zc, one, TSR_COMPARE_EQ) : NULL;
      tsr_tensor *at0 = single ? tsr_where(single, pnz, zero) : NULL;
      tsr_tensor *others = y && nz ? tsr_div(y, nz) : NULL;  // y / x away from zeros
      tsr_tensor *others2 = others && at0 ? tsr_where(is0, at0, others) : NULL;
      tsr_tensor *dx = others2 ? tsr_mul(g, others2) : NULL;
      tsr_tensor *tmp[] = {g, zero, one, is0, nz, pnz, zf, zc, single, at0, others, others2};
      for (size_t i = 0; i < sizeof(tmp) / sizeof(tmp[0]); ++i) tsr_tensor_release(tmp[i]);
      return give(n, 0, dx, out_dx);
    }
    default:
      tsr_tensor_release(g);
      return tsr_fail(tsr_tensor_device(dy), TSR_INTERNAL,
                      "reduce backward: function %d has no rule", fn);
  }
}

tsr_status tsr_ag_record_reduce(tsr_tensor *out, tsr_tensor *kept, tsr_tensor *x,
                                tsr_reduce_fn_t fn, uint32_t mask) {
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record("reduce", reduce_backward, 1, &x, out, &node));
  if (node == NULL)
    return TSR_OK;
  node->ints[0] = fn;
  node->ints[1] = mask;
  if (fn == TSR_REDUCE_SUM || fn == TSR_REDUCE_MEAN) {
    node->reads_inputs = 0;
    return TSR_OK;
  }
  return tsr_ag_node_save(node, kept);
}

// --- matmul -------------------------------------------------------------------------

// True when |t| is a 2-D column-major matrix (a transposed contiguous one,
// as Linear's weight^T is).
static int column_major(const tsr_tensor *t) {
  return tsr_tensor_rank(t) == 2 && tsr_tensor_strides(t)[0] == 1 && tsr_tensor_sizes(t)[1] > 1 &&
         tsr_tensor_strides(t)[1] == tsr_tensor_sizes(t)[0];
}

// The gradient of one matmul operand: da = g @ b^T (|which| 0) or
// db = a^T @ g (|which| 1), where |other| is the other operand and |self|
// the one whose gradient this is. For a column-major |self| the product is
// computed transposed (db^T = g^T @ a), so that the gradient comes out in
// the operand's own layout: for Linear, the weight's gradient is then
// contiguous and is not copied again on its way to the leaf.
static tsr_tensor *operand_grad(tsr_tensor *g, tsr_tensor *other, tsr_tensor *self, int which) {
  if (column_major(self) && tsr_tensor_rank(g) == 2 && tsr_tensor_rank(other) == 2) {
    tsr_tensor *gt = tsr_transpose(g, 0, 1);
    tsr_tensor *product = NULL;
    if (gt != NULL) {
      // da^T = b @ g^T; db^T = g^T @ a.
      product = which == 0 ? tsr_matmul(other, gt) : tsr_matmul(gt, other);
    }
    tsr_tensor *result = product ? tsr_transpose(product, 0, 1) : NULL;
    tsr_tensor_release(gt);
    tsr_tensor_release(product);
    return result;
  }
  tsr_tensor *ot = tsr_transpose(other, -1, -2);
  tsr_tensor *result = ot ? (which == 0 ? tsr_matmul(g, ot) : tsr_matmul(ot, g)) : NULL;
  tsr_tensor_release(ot);
  return result;
}

static tsr_status matmul_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  tsr_activation_t activation = (tsr_activation_t)n->ints[0];
  tsr_tensor *a = n->inputs[0], *b = n->inputs[1];
  // Through a fused RELU: relu'(z) from the output (y > 0 exactly when z > 0).
  tsr_tensor *g = activation == TSR_ACTIVATION_RELU
                      ? tsr_unary_backward(dy, n->saved[0], TSR_UNARY_RELU, 0.0)
                      : tsr_detach(dy);
  if (g == NULL)
    return tsr_error_status();
  tsr_status status = TSR_OK;
  if (tsr_ag_needs_grad(n, 0)) status = give(n, 0, operand_grad(g, b, a, 0), out_dx);
  if (status == TSR_OK && tsr_ag_needs_grad(n, 1)) {
    status = give(n, 1, operand_grad(g, a, b, 1), out_dx);
  }
  if (status == TSR_OK && n->num_inputs > 2 && tsr_ag_needs_grad(n, 2)) {
    status = give(n, 2, tsr_detach(g), out_dx);
  }
  tsr_tensor_release(g);
  return status;
}

tsr_status tsr_ag_record_matmul(tsr_tensor *out, tsr_tensor *a, tsr_tensor *b, tsr_tensor *bias,
                                tsr_activation_t activation) {
  tsr_tensor *inputs[3] = {a, b, bias};
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record("matmul", matmul_backward, bias ? 3 : 2, inputs, out, &node));
  if (node == NULL)
    return TSR_OK;
  node->ints[0] = activation;
  node->reads_inputs = 3u;  // a and b; the bias only routes
  if (activation == TSR_ACTIVATION_RELU)
    return tsr_ag_node_save(node, out);
  return TSR_OK;
}

// --- views and copies ---------------------------------------------------------------

static tsr_status reshape_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  const tsr_tensor *x = n->inputs[0];
  return give(n, 0, tsr_reshape(dy, tsr_tensor_rank(x), tsr_tensor_sizes(x)), out_dx);
}

static tsr_status record_routing(const char *name, tsr_ag_backward_fn fn, tsr_tensor *out,
                                 tsr_tensor *x, tsr_ag_node **node) {
  TSR_RETURN_IF_ERROR(record(name, fn, 1, &x, out, node));
  if (*node != NULL)
    (*node)->reads_inputs = 0;
  return TSR_OK;
}

tsr_status tsr_ag_record_reshape(tsr_tensor *out, tsr_tensor *x) {
  tsr_ag_node *node;
  return record_routing("reshape", reshape_backward, out, x, &node);
}

static tsr_status permute_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  int32_t rank = tsr_tensor_rank(n->inputs[0]);
  int32_t inverse[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) inverse[n->ints[d]] = d;
  return give(n, 0, tsr_permute(dy, rank, inverse), out_dx);
}

tsr_status tsr_ag_record_permute(tsr_tensor *out, tsr_tensor *x, const int32_t *dims) {
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record_routing("permute", permute_backward, out, x, &node));
  if (node != NULL) {
    for (int32_t d = 0; d < tsr_tensor_rank(x); ++d)
      node->ints[d] = dims[d] < 0 ? dims[d] + tsr_tensor_rank(x) : dims[d];
  }
  return TSR_OK;
}

static tsr_status slice_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  const tsr_tensor *x = n->inputs[0];
  int32_t dim = (int32_t)n->ints[0];
  int64_t start = n->ints[1], step = n->ints[2];
  tsr_tensor *dx = tsr_tensor_full(tsr_tensor_device(x), tsr_tensor_dtype(x), tsr_tensor_rank(x),
                                   tsr_tensor_sizes(x), 0.0);
  if (dx == NULL)
    return tsr_error_status();
  int64_t end = start + tsr_tensor_sizes(dy)[dim] * step;
  if (end > tsr_tensor_sizes(x)[dim])
    end = tsr_tensor_sizes(x)[dim];
  tsr_tensor *window = tsr_slice(dx, dim, start, end, step);
  tsr_status status = window ? tsr_copy_(window, dy) : tsr_error_status();
  tsr_tensor_release(window);
  if (status != TSR_OK) {
    tsr_tensor_release(dx);
    return status;
  }
  return give(n, 0, dx, out_dx);
}

tsr_status tsr_ag_record_slice(tsr_tensor *out, tsr_tensor *x, int32_t dim, int64_t start,
                               int64_t step) {
  tsr_ag_node *node;
  TSR_RETURN_IF_ERROR(record_routing("slice", slice_backward, out, x, &node));
  if (node != NULL) {
    node->ints[0] = dim;
    node->ints[1] = start;
    node->ints[2] = step;
  }
  return TSR_OK;
}

static tsr_status expand_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  return give(n, 0, tsr_detach(dy), out_dx);  // give() sums the broadcast dims
}

tsr_status tsr_ag_record_expand(tsr_tensor *out, tsr_tensor *x) {
  tsr_ag_node *node;
  return record_routing("expand", expand_backward, out, x, &node);
}

static tsr_status identity_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  return give(n, 0, tsr_detach(dy), out_dx);
}

tsr_status tsr_ag_record_identity(tsr_tensor *out, tsr_tensor *x) {
  tsr_ag_node *node;
  return record_routing("identity", identity_backward, out, x, &node);
}

static tsr_status cast_backward(const tsr_ag_node *n, tsr_tensor *dy, tsr_tensor **out_dx) {
  const tsr_tensor *x = n->inputs[0];
  tsr_tensor *g = tsr_tensor_device(x) == tsr_tensor_device(dy)
                      ? tsr_detach(dy)
                      : tsr_tensor_to_device(dy, tsr_tensor_device(x));
  if (g == NULL)
    return tsr_error_status();
  if (tsr_tensor_dtype(g) != tsr_tensor_dtype(x)) {
    tsr_tensor *c = tsr_cast(g, tsr_tensor_dtype(x));
    tsr_tensor_release(g);
    g = c;
  }
  return give(n, 0, g, out_dx);
}

tsr_status tsr_ag_record_cast(tsr_tensor *out, tsr_tensor *x) {
  tsr_dtype_t dt = tsr_tensor_dtype(out);
  int float_out = dt == TSR_FLOAT32 || dt == TSR_FLOAT64 || dt == TSR_BFLOAT16 || dt == TSR_FLOAT16;
  if (!float_out)
    return TSR_OK;  // an integer result carries no gradient
  tsr_ag_node *node;
  return record_routing("cast", cast_backward, out, x, &node);
}
