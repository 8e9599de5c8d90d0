// Oracle of REDUCE and ARG_REDUCE (docs/abi.md 10.10, 10.11).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_internal.h"

// The output element an input element of |x| reduces into.
static int64_t reduced_offset(const tsr_oracle_tensor *x, const tsr_oracle_tensor *out,
                              uint32_t mask, int64_t i) {
  int64_t index[TSR_MAX_RANK];
  tsr_oracle_unravel(i, x->rank, x->sizes, index);
  for (int32_t d = 0; d < x->rank; ++d) {
    if (mask & (1u << d)) index[d] = 0;
  }
  return tsr_oracle_tensor_offset(out, index);
}

static tsr_status reduce_compute(tsr_oracle_call *call) {
  const tsr_reduce_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *x = &call->inputs[0];
  tsr_oracle_tensor *out = &call->outputs[0];
  tsr_reduce_fn_t fn = attrs->fn;
  uint32_t mask = attrs->axes_mask;
  if (fn < 0 || fn >= TSR_REDUCE_FN_COUNT) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "reduce fn %d", (int)fn);
  }
  if (x->rank < 32 && (mask >> x->rank) != 0) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "reduce: axes_mask 0x%x has bits at or above rank %d",
                           mask, (int)x->rank);
  }
  int is_int = tsr_oracle_dtype_is_int(x->dtype);
  if (!is_int && !tsr_oracle_dtype_is_float(x->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "reduce does not take %s",
                           tsr_oracle_dtype_name(x->dtype));
  }
  if (fn == TSR_REDUCE_MEAN && is_int) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "reduce: MEAN is float only");
  }
  int64_t n = 1;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (mask & (1u << d)) n *= x->sizes[d];
  }
  if (n == 0 && out->numel > 0 && (fn == TSR_REDUCE_MAX || fn == TSR_REDUCE_MIN)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "reduce: MAX or MIN over an empty axis");
  }
  size_t count = (size_t)(out->numel > 0 ? out->numel : 1);
  tsr_oracle_sum *sums = calloc(count, sizeof(*sums));
  double *abs_sums = calloc(count, sizeof(double));
  double *extreme = calloc(count, sizeof(double));
  double *prods = calloc(count, sizeof(double));
  uint64_t *iacc = calloc(count, sizeof(uint64_t));
  unsigned char *seen = calloc(count, 1);
  if (!sums || !abs_sums || !extreme || !prods || !iacc || !seen) {
    free(sums), free(abs_sums), free(extreme), free(prods), free(iacc), free(seen);
    return tsr_oracle_fail(call, TSR_UNSUPPORTED, "reduce: out of host memory");
  }
  for (int64_t o = 0; o < out->numel; ++o) {
    prods[o] = 1.0;
    iacc[o] = fn == TSR_REDUCE_PROD ? 1u : 0u;
  }
  for (int64_t i = 0; i < x->numel; ++i) {
    int64_t o = reduced_offset(x, out, mask, i);
    if (is_int) {
      int64_t v = x->iv[i];
      switch (fn) {
        case TSR_REDUCE_SUM: iacc[o] += (uint64_t)v; break;
        case TSR_REDUCE_PROD: iacc[o] *= (uint64_t)v; break;
        case TSR_REDUCE_MAX:
          if (!seen[o] || v > (int64_t)iacc[o]) iacc[o] = (uint64_t)v;
          break;
        default:
          if (!seen[o] || v < (int64_t)iacc[o]) iacc[o] = (uint64_t)v;
          break;
      }
      seen[o] = 1;
      continue;
    }
    double v = x->v[i];
    tsr_oracle_sum_add(&sums[o], v);
    abs_sums[o] += fabs(v);
    prods[o] *= v;
    if (!seen[o]) {
      extreme[o] = v;
    } else if (!isnan(extreme[o])) {
      if (isnan(v) || (fn == TSR_REDUCE_MAX && v > extreme[o]) ||
          (fn == TSR_REDUCE_MIN && v < extreme[o])) {
        extreme[o] = v;
      }
    }
    seen[o] = 1;
  }
  int exact = is_int || fn == TSR_REDUCE_MAX || fn == TSR_REDUCE_MIN;
  tsr_oracle_mark(out, exact ? TSR_ORACLE_EXACT : TSR_ORACLE_TOLERANCE);
  double dn = (double)n;
  for (int64_t o = 0; o < out->numel; ++o) {
    if (is_int) {
      tsr_oracle_tensor_set(out, o, 0, tsr_oracle_wrap((int64_t)iacc[o], out->dtype));
      continue;
    }
    switch (fn) {
      case TSR_REDUCE_SUM:
        out->v[o] = tsr_oracle_sum_get(&sums[o]);
        // Any order of n - 1 additions in the accumulation type.
        out->bound[o] = dn * abs_sums[o];
        break;
      case TSR_REDUCE_MEAN:
        out->v[o] = n == 0 ? NAN : tsr_oracle_sum_get(&sums[o]) / dn;
        out->bound[o] = n == 0 ? 0 : (dn + 1) * abs_sums[o] / dn;
        break;
      case TSR_REDUCE_PROD:
        out->v[o] = prods[o];
        // n - 1 multiplications, each one relative rounding.
        out->bound[o] = (dn + 1) * fabs(prods[o]);
        break;
      default:
        out->v[o] = extreme[o];
        break;
    }
  }
  free(sums), free(abs_sums), free(extreme), free(prods), free(iacc), free(seen);
  return TSR_OK;
}

static tsr_status arg_reduce_compute(tsr_oracle_call *call) {
  const tsr_arg_reduce_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *x = &call->inputs[0];
  tsr_oracle_tensor *out = &call->outputs[0];
  int32_t axis = attrs->axis;
  if (attrs->fn < 0 || attrs->fn >= TSR_ARG_REDUCE_FN_COUNT) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "arg_reduce fn %d", (int)attrs->fn);
  }
  if (axis < 0 || axis >= x->rank) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "arg_reduce: axis %d outside [0, %d)",
                           (int)axis, (int)x->rank);
  }
  if (x->sizes[axis] == 0) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "arg_reduce: axis %d is empty", (int)axis);
  }
  int is_max = attrs->fn == TSR_ARG_REDUCE_ARGMAX;
  tsr_oracle_mark(out, TSR_ORACLE_EXACT);
  int64_t inner = 1;
  for (int32_t d = axis + 1; d < x->rank; ++d) inner *= x->sizes[d];
  int64_t k_count = x->sizes[axis];
  for (int64_t o = 0; o < out->numel; ++o) {
    int64_t outer_i = o / (inner > 0 ? inner : 1), inner_i = o % (inner > 0 ? inner : 1);
    int64_t base = outer_i * k_count * inner + inner_i;
    int64_t best = 0;
    for (int64_t k = 0; k < k_count; ++k) {
      int64_t i = base + k * inner;
      int64_t b = base + best * inner;
      if (x->iv != NULL) {
        if (k > 0 && (is_max ? x->iv[i] > x->iv[b] : x->iv[i] < x->iv[b])) best = k;
        continue;
      }
      double v = x->v[i], w = x->v[b];
      if (isnan(w) && k > 0) break;  // the first NaN wins for good
      if (k == 0) {
        if (isnan(v)) break;
        continue;
      }
      if (isnan(v) || (is_max ? v > w : v < w)) {
        best = k;
        if (isnan(v)) break;
      }
    }
    tsr_oracle_tensor_set(out, o, 0, best);
  }
  return TSR_OK;
}

tsr_status tsr_oracle_reduce_compute(tsr_oracle_call *call) {
  if (call->op == TSR_OP_REDUCE) return reduce_compute(call);
  return arg_reduce_compute(call);
}
