// Op functions: shape inference, the output tensor, then one dispatch.
#include <string.h>

#include "autograd_rules.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"

static tsr_tensor *op_fail(const tsr_tensor *t, tsr_status status) {
  tsr_fail(t ? tsr_tensor_device(t) : NULL, status, "%s", tsr_error_message());
  return NULL;
}

// NumPy broadcasting of |a| and |b|'s shapes.
static tsr_status broadcast_shape(const char *what, int32_t count, tsr_tensor *const *ts,
                                  int32_t *out_rank, int64_t *out_sizes) {
  int32_t rank = 0;
  for (int32_t i = 0; i < count; ++i) {
    int32_t rank_i = tsr_tensor_rank(ts[i]);
    rank = rank_i > rank ? rank_i : rank;
  }
  for (int32_t d = 0; d < rank; ++d) out_sizes[d] = 1;
  for (int32_t i = 0; i < count; ++i) {
    int32_t rank_i = tsr_tensor_rank(ts[i]);
    const int64_t *sizes_i = tsr_tensor_sizes(ts[i]);
    int32_t shift = rank - rank_i;
    for (int32_t d = 0; d < rank_i; ++d) {
      int64_t s = sizes_i[d];
      int64_t *o = &out_sizes[d + shift];
      if (s == *o || s == 1) continue;
      if (*o == 1) {
        *o = s;
        continue;
      }
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: operand %d has size %lld at dim %d, which does not broadcast "
                           "against %lld",
                           what, i, (long long)s, d, (long long)*o);
    }
  }
  *out_rank = rank;
  return TSR_OK;
}

static tsr_status check_inputs(const char *what, int32_t count, tsr_tensor *const *ts) {
  for (int32_t i = 0; i < count; ++i) {
    if (ts[i] == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: operand %d is NULL", what, i);
  }
  return TSR_OK;
}

// Allocates the output of an elementwise op of |inputs| and runs it.
static tsr_tensor *elementwise(tsr_op_id_t op, int32_t count, tsr_tensor *const *inputs,
                               tsr_dtype_t out_dtype, const void *attrs) {
  const char *what = tsr_op_name(op);
  if (check_inputs(what, count, inputs) != TSR_OK) return NULL;
  int32_t rank = 0;
  int64_t sizes[TSR_MAX_RANK];
  if (broadcast_shape(what, count, inputs, &rank, sizes) != TSR_OK) {
    return op_fail(inputs[0], TSR_INVALID_ARGUMENT);
  }
  tsr_tensor *out = tsr_tensor_alloc(what, tsr_tensor_device(inputs[0]), out_dtype, rank, sizes);
  if (out == NULL) return NULL;
  if (tsr_dispatch(op, count, inputs, 1, &out, attrs) != TSR_OK) {
    tsr_tensor_release(out);
    return NULL;
  }
  return out;
}

// Hands |out| back after |status| of its recording, or fails.
static tsr_tensor *recorded(tsr_tensor *out, tsr_status status) {
  if (out == NULL || status == TSR_OK) return out;
  tsr_tensor_release(out);
  return NULL;
}

tsr_tensor *tsr_unary(tsr_tensor *x, tsr_unary_fn_t fn, double alpha) {
  if (x == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "unary: x is NULL");
    return NULL;
  }
  tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
  tsr_tensor *out = elementwise(TSR_OP_UNARY, 1, &x, tsr_tensor_dtype(x), &attrs);
  return recorded(out, out ? tsr_ag_record_unary(out, x, fn, alpha) : TSR_OK);
}

tsr_status tsr_unary_out(tsr_tensor *out, tsr_tensor *x, tsr_unary_fn_t fn, double alpha) {
  if (out == NULL || x == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "unary_out: %s is NULL", out ? "x" : "out");
  }
  TSR_RETURN_IF_ERROR(tsr_ag_check_inplace("unary_out", out));
  tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
  return tsr_dispatch(TSR_OP_UNARY, 1, &x, 1, &out, &attrs);
}

tsr_tensor *tsr_unary_backward(tsr_tensor *dy, tsr_tensor *x, tsr_unary_fn_t fn, double alpha) {
  tsr_tensor *inputs[2] = {dy, x};
  if (check_inputs("unary_backward", 2, inputs) != TSR_OK) return NULL;
  tsr_unary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
  return elementwise(TSR_OP_UNARY_BACKWARD, 2, inputs, tsr_tensor_dtype(x), &attrs);
}

tsr_tensor *tsr_binary(tsr_tensor *a, tsr_tensor *b, tsr_binary_fn_t fn, double alpha) {
  tsr_tensor *inputs[2] = {a, b};
  if (check_inputs("binary", 2, inputs) != TSR_OK) return NULL;
  tsr_binary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
  tsr_tensor *out = elementwise(TSR_OP_BINARY, 2, inputs, tsr_tensor_dtype(a), &attrs);
  return recorded(out, out ? tsr_ag_record_binary(out, a, b, fn, alpha) : TSR_OK);
}

tsr_status tsr_binary_out(tsr_tensor *out, tsr_tensor *a, tsr_tensor *b, tsr_binary_fn_t fn,
                          double alpha) {
  tsr_tensor *inputs[2] = {a, b};
  if (out == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "binary_out: out is NULL");
  TSR_RETURN_IF_ERROR(check_inputs("binary_out", 2, inputs));
  TSR_RETURN_IF_ERROR(tsr_ag_check_inplace("binary_out", out));
  tsr_binary_attrs attrs = {sizeof(attrs), fn, 0, alpha};
  return tsr_dispatch(TSR_OP_BINARY, 2, inputs, 1, &out, &attrs);
}

tsr_tensor *tsr_compare(tsr_tensor *a, tsr_tensor *b, tsr_compare_fn_t fn) {
  tsr_tensor *inputs[2] = {a, b};
  tsr_compare_attrs attrs = {sizeof(attrs), fn, 0};
  return elementwise(TSR_OP_COMPARE, 2, inputs, TSR_BOOL, &attrs);
}

tsr_tensor *tsr_where(tsr_tensor *cond, tsr_tensor *a, tsr_tensor *b) {
  tsr_tensor *inputs[3] = {cond, a, b};
  if (check_inputs("where", 3, inputs) != TSR_OK) return NULL;
  tsr_tensor *out = elementwise(TSR_OP_WHERE, 3, inputs, tsr_tensor_dtype(a), NULL);
  return recorded(out, out ? tsr_ag_record_where(out, cond, a, b) : TSR_OK);
}

tsr_tensor *tsr_clamp(tsr_tensor *x, int has_min, double min, int has_max, double max) {
  if (x == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "clamp: x is NULL");
    return NULL;
  }
  tsr_clamp_attrs attrs = {sizeof(attrs), min, max, has_min != 0, has_max != 0};
  tsr_tensor *out = elementwise(TSR_OP_CLAMP, 1, &x, tsr_tensor_dtype(x), &attrs);
  return recorded(out, out ? tsr_ag_record_clamp(out, x, &attrs) : TSR_OK);
}

// Drops the size-1 dims in |mask| from a contiguous result.
static tsr_tensor *squeeze_mask(tsr_tensor *t, uint32_t mask) {
  const int32_t t_rank = tsr_tensor_rank(t);
  const int64_t *t_sizes = tsr_tensor_sizes(t);
  int64_t sizes[TSR_MAX_RANK];
  int32_t rank = 0;
  for (int32_t d = 0; d < t_rank; ++d) {
    if (!(mask & (1u << d))) sizes[rank++] = t_sizes[d];
  }
  tsr_tensor *v = tsr_view(t, rank, sizes);
  tsr_tensor_release(t);
  return v;
}

tsr_tensor *tsr_reduce(tsr_tensor *x, tsr_reduce_fn_t fn, int32_t num_axes, const int32_t *axes,
                       int keepdim) {
  if (x == NULL || (num_axes > 0 && axes == NULL) || num_axes < 0) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "reduce: %s", x ? "axes is NULL or negative count" : "x is NULL");
    return x ? op_fail(x, TSR_INVALID_ARGUMENT) : NULL;
  }
  const int32_t rank = tsr_tensor_rank(x);
  const int64_t *x_sizes = tsr_tensor_sizes(x);
  uint32_t mask = 0;
  if (num_axes == 0) {
    mask = rank ? (1u << rank) - 1u : 0u;
  }
  for (int32_t i = 0; i < num_axes; ++i) {
    int32_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank || (mask & (1u << a))) {
      tsr_error_set(TSR_INVALID_ARGUMENT,
                    "reduce: axes[%d] = %d is out of range or repeated for rank %d", i, axes[i],
                    rank);
      return op_fail(x, TSR_INVALID_ARGUMENT);
    }
    mask |= 1u << a;
  }
  int64_t sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) sizes[d] = (mask & (1u << d)) ? 1 : x_sizes[d];
  tsr_tensor *out =
      tsr_tensor_alloc("reduce", tsr_tensor_device(x), tsr_tensor_dtype(x), rank, sizes);
  if (out == NULL) return NULL;
  tsr_reduce_attrs attrs = {sizeof(attrs), fn, mask};
  if (tsr_dispatch(TSR_OP_REDUCE, 1, &x, 1, &out, &attrs) != TSR_OK) {
    tsr_tensor_release(out);
    return NULL;
  }
  out = recorded(out, tsr_ag_record_reduce(out, out, x, fn, mask));
  if (out == NULL) return NULL;
  return keepdim ? out : squeeze_mask(out, mask);
}

tsr_tensor *tsr_arg_reduce(tsr_tensor *x, tsr_arg_reduce_fn_t fn, int32_t axis, int keepdim) {
  if (x == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "arg_reduce: x is NULL");
    return NULL;
  }
  int32_t a = axis < 0 ? axis + tsr_tensor_rank(x) : axis;
  if (a < 0 || a >= tsr_tensor_rank(x)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "arg_reduce: axis %d for rank %d", axis,
                  tsr_tensor_rank(x));
    return op_fail(x, TSR_INVALID_ARGUMENT);
  }
  int64_t sizes[TSR_MAX_RANK];
  memcpy(sizes, tsr_tensor_sizes(x), sizeof(sizes));
  sizes[a] = 1;
  tsr_tensor *out =
      tsr_tensor_alloc("arg_reduce", tsr_tensor_device(x), TSR_INT64, tsr_tensor_rank(x), sizes);
  if (out == NULL) return NULL;
  tsr_arg_reduce_attrs attrs = {sizeof(attrs), fn, a};
  if (tsr_dispatch(TSR_OP_ARG_REDUCE, 1, &x, 1, &out, &attrs) != TSR_OK) {
    tsr_tensor_release(out);
    return NULL;
  }
  return keepdim ? out : squeeze_mask(out, 1u << a);
}

tsr_tensor *tsr_matmul_ex(tsr_tensor *a, tsr_tensor *b, tsr_tensor *bias,
                          tsr_activation_t activation) {
  tsr_tensor *operands[2] = {a, b};
  if (check_inputs("matmul", 2, operands) != TSR_OK) return NULL;
  if (activation < 0 || activation >= TSR_ACTIVATION_COUNT) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "matmul: activation %d is unknown", activation);
    return op_fail(a, TSR_INVALID_ARGUMENT);
  }
  if (tsr_tensor_rank(a) < 1 || tsr_tensor_rank(b) < 1) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "matmul: ranks %d and %d (rank 0 has no matrix product)",
                  tsr_tensor_rank(a), tsr_tensor_rank(b));
    return op_fail(a, TSR_INVALID_ARGUMENT);
  }
  // Rank-1 operands become matrices as in NumPy, and the result loses the dim.
  tsr_tensor *a2 = tsr_tensor_rank(a) == 1 ? tsr_view(a, 2, (int64_t[]){1, tsr_tensor_sizes(a)[0]})
                                           : tsr_tensor_retain(a);
  tsr_tensor *b2 = tsr_tensor_rank(b) == 1 ? tsr_view(b, 2, (int64_t[]){tsr_tensor_sizes(b)[0], 1})
                                           : tsr_tensor_retain(b);
  tsr_tensor *out = NULL;
  if (a2 == NULL || b2 == NULL) goto done;
  int64_t m = tsr_tensor_sizes(a2)[tsr_tensor_rank(a2) - 2],
          k = tsr_tensor_sizes(a2)[tsr_tensor_rank(a2) - 1];
  int64_t k2 = tsr_tensor_sizes(b2)[tsr_tensor_rank(b2) - 2],
          n = tsr_tensor_sizes(b2)[tsr_tensor_rank(b2) - 1];
  if (k != k2) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "matmul: a is [..., %lld, %lld] and b is [..., %lld, %lld]; "
                  "the inner sizes differ", (long long)m, (long long)k, (long long)k2, (long long)n);
    op_fail(a, TSR_INVALID_ARGUMENT);
    goto done;
  }
  int32_t rank =
      tsr_tensor_rank(a2) > tsr_tensor_rank(b2) ? tsr_tensor_rank(a2) : tsr_tensor_rank(b2);
  int64_t sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank - 2; ++d) {
    int32_t da = d - (rank - tsr_tensor_rank(a2)), db = d - (rank - tsr_tensor_rank(b2));
    int64_t sa = da >= 0 ? tsr_tensor_sizes(a2)[da] : 1,
            sb = db >= 0 ? tsr_tensor_sizes(b2)[db] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      tsr_error_set(TSR_INVALID_ARGUMENT, "matmul: batch sizes %lld and %lld at dim %d do not "
                    "broadcast", (long long)sa, (long long)sb, d);
      op_fail(a, TSR_INVALID_ARGUMENT);
      goto done;
    }
    sizes[d] = sa == 1 ? sb : sa;
  }
  sizes[rank - 2] = m;
  sizes[rank - 1] = n;
  out = tsr_tensor_alloc("matmul", tsr_tensor_device(a), tsr_tensor_dtype(a), rank, sizes);
  if (out == NULL) goto done;
  tsr_tensor *inputs[3] = {a2, b2, bias};
  // While recording, an activation other than RELU runs as its own unary so
  // that its rule sees the pre-activation values; RELU's derivative can be
  // read from the output, so it stays fused.
  tsr_activation_t fused = activation;
  if (activation != TSR_ACTIVATION_NONE && activation != TSR_ACTIVATION_RELU &&
      tsr_ag_should_record(bias ? 3 : 2, inputs)) {
    fused = TSR_ACTIVATION_NONE;
  }
  tsr_matmul_attrs attrs = {sizeof(attrs), 1.0, 0.0, fused, bias != NULL};
  if (tsr_dispatch(TSR_OP_MATMUL, bias ? 3 : 2, inputs, 1, &out, &attrs) != TSR_OK ||
      tsr_ag_record_matmul(out, a2, b2, bias, fused) != TSR_OK) {
    tsr_tensor_release(out);
    out = NULL;
    goto done;
  }
  if (fused != activation) {
    static const tsr_unary_fn_t kUnaryOf[TSR_ACTIVATION_COUNT] = {
        [TSR_ACTIVATION_GELU] = TSR_UNARY_GELU, [TSR_ACTIVATION_GELU_TANH] = TSR_UNARY_GELU_TANH,
        [TSR_ACTIVATION_SIGMOID] = TSR_UNARY_SIGMOID, [TSR_ACTIVATION_TANH] = TSR_UNARY_TANH};
    tsr_tensor *activated = tsr_unary(out, kUnaryOf[activation], 0.0);
    tsr_tensor_release(out);
    out = activated;
    if (out == NULL) goto done;
  }
  if (tsr_tensor_rank(a) == 1 || tsr_tensor_rank(b) == 1) {
    uint32_t mask = (tsr_tensor_rank(a) == 1 ? 1u << (rank - 2) : 0u) |
                    (tsr_tensor_rank(b) == 1 ? 1u << (rank - 1) : 0u);
    out = squeeze_mask(out, mask);
  }
done:
  // a2/b2 are new views (created here) or a/b retained.
  if (tsr_tensor_rank(a) == 1)
    tsr_tensor_release(a2);
  else
    tsr_tensor_unref(a2);
  if (tsr_tensor_rank(b) == 1)
    tsr_tensor_release(b2);
  else
    tsr_tensor_unref(b2);
  return out;
}
