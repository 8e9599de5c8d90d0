// The gradient checker: tsr_backward's gradients against central finite
// differences, in float64 (tessera/autograd.h).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_internal.h"
#include "tessera/core_layer.h"

void tsr_gradcheck_options_init(tsr_gradcheck_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->eps = 1e-6;
  options->atol = 1e-5;
  options->rtol = 1e-3;
  options->seed = 0x5eedULL;
  options->check_mask = ~0u;
}

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

// |t|'s values as float64 on the host (malloc'd; caller frees).
static double *host_values(tsr_tensor *t) {
  int64_t n = tsr_tensor_numel(t);
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  if (v == NULL) {
    tsr_error_set(TSR_OUT_OF_MEMORY, "gradcheck: no host memory for %lld values", (long long)n);
    return NULL;
  }
  tsr_tensor *c = tsr_tensor_dtype(t) == TSR_FLOAT64 ? tsr_detach(t) : tsr_cast(t, TSR_FLOAT64);
  tsr_status status = c ? tsr_tensor_to_host(c, v, (size_t)n * sizeof(double)) : tsr_error_status();
  tsr_tensor_release(c);
  if (status != TSR_OK) {
    free(v);
    return NULL;
  }
  return v;
}

// Weights of the projection L = sum(y * r): SplitMix64 mapped to [-1, 1).
static double weight(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

typedef struct check_state {
  tsr_gradcheck_fn fn;
  void *user;
  int32_t n;
  tsr_tensor *args[TSR_MAX_OPERANDS];
  double *values[TSR_MAX_OPERANDS];  // float64 copies of checked inputs
  double *r;
  int64_t out_numel;
} check_state;

// L at the current values, with grad mode off.
static tsr_status projected(check_state *s, double *out_l) {
  tsr_tensor *args[TSR_MAX_OPERANDS];
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < s->n; ++i) {
    if (s->values[i] == NULL) {
      args[i] = tsr_tensor_retain(s->args[i]);
      continue;
    }
    args[i] = tsr_tensor_from_host(tsr_tensor_device(s->args[i]), TSR_FLOAT64,
                                   tsr_tensor_rank(s->args[i]), tsr_tensor_sizes(s->args[i]),
                                   s->values[i]);
    if (args[i] == NULL) {
      for (int32_t k = 0; k < i; ++k) {
        if (s->values[k] == NULL) {
          tsr_tensor_unref(args[k]);
        } else {
          tsr_tensor_release(args[k]);
        }
      }
      return tsr_error_status();
    }
  }
  tsr_tensor *y = s->fn(s->user, s->n, args);
  double *yv = NULL;
  if (y == NULL) {
    status = tsr_error_status() != TSR_OK
                 ? tsr_error_status()
                 : tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: the function returned NULL");
  } else if (tsr_tensor_numel(y) != s->out_numel) {
    status = tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: the output changed size");
  } else if ((yv = host_values(y)) == NULL) {
    status = tsr_error_status();
  } else {
    double l = 0;
    for (int64_t k = 0; k < s->out_numel; ++k) l += yv[k] * s->r[k];
    *out_l = l;
  }
  free(yv);
  tsr_tensor_release(y);
  for (int32_t i = 0; i < s->n; ++i) {
    if (s->values[i] == NULL) {
      tsr_tensor_unref(args[i]);  // retained above, not created
    } else {
      tsr_tensor_release(args[i]);
    }
  }
  return status;
}

// Runs the function on leaves that require grad and backpropagates r.
static tsr_status analytic(check_state *s, const tsr_gradcheck_options *o, double **out_grads) {
  tsr_tensor *leaves[TSR_MAX_OPERANDS] = {0};
  tsr_tensor *y = NULL, *rt = NULL;
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < s->n && status == TSR_OK; ++i) {
    if (s->values[i] == NULL) {
      leaves[i] = tsr_tensor_retain(s->args[i]);
      continue;
    }
    leaves[i] = tsr_tensor_from_host(tsr_tensor_device(s->args[i]), TSR_FLOAT64,
                                     tsr_tensor_rank(s->args[i]), tsr_tensor_sizes(s->args[i]),
                                     s->values[i]);
    status = leaves[i] ? tsr_tensor_requires_grad_set(leaves[i], 1) : tsr_error_status();
  }
  if (status == TSR_OK) {
    y = s->fn(s->user, s->n, leaves);
    if (y == NULL) {
      status = tsr_error_status() != TSR_OK
                   ? tsr_error_status()
                   : tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: the function returned NULL");
    }
  }
  if (status == TSR_OK && tsr_tensor_dtype(y) != TSR_FLOAT64) {
    status = tsr_error_set(TSR_INVALID_ARGUMENT,
                           "gradcheck: the function returned dtype %d for float64 inputs",
                           tsr_tensor_dtype(y));
  }
  if (status == TSR_OK) {
    s->out_numel = tsr_tensor_numel(y);
    s->r = malloc((size_t)(s->out_numel > 0 ? s->out_numel : 1) * sizeof(double));
    if (s->r == NULL)
      status = tsr_error_set(TSR_OUT_OF_MEMORY, "gradcheck: no host memory");
  }
  if (status == TSR_OK) {
    uint64_t state = o->seed;
    for (int64_t k = 0; k < s->out_numel; ++k) s->r[k] = weight(&state);
    rt = tsr_tensor_from_host(tsr_tensor_device(y), TSR_FLOAT64, tsr_tensor_rank(y),
                              tsr_tensor_sizes(y), s->r);
    status = rt ? TSR_OK : tsr_error_status();
  }
  if (status == TSR_OK && !tsr_tensor_requires_grad(y)) {
    status = tsr_error_set(TSR_INVALID_ARGUMENT,
                           "gradcheck: the output does not depend on any checked input");
  }
  if (status == TSR_OK)
    status = tsr_backward(y, rt, 0);
  for (int32_t i = 0; i < s->n && status == TSR_OK; ++i) {
    if (s->values[i] == NULL)
      continue;
    tsr_tensor *g = tsr_tensor_grad(leaves[i]);
    if (g == NULL) {
      int64_t count = tsr_tensor_numel(leaves[i]);
      out_grads[i] = calloc((size_t)(count > 0 ? count : 1), sizeof(double));
      if (out_grads[i] == NULL)
        status = tsr_error_set(TSR_OUT_OF_MEMORY, "gradcheck: no memory");
    } else {
      out_grads[i] = host_values(g);
      if (out_grads[i] == NULL)
        status = tsr_error_status();
      tsr_tensor_release(g);
    }
  }
  tsr_tensor_release(rt);
  tsr_tensor_release(y);
  for (int32_t i = 0; i < s->n; ++i) {
    if (s->values[i] == NULL) {
      tsr_tensor_unref(leaves[i]);
    } else {
      tsr_tensor_release(leaves[i]);
    }
  }
  return status;
}

tsr_status tsr_gradcheck(tsr_gradcheck_fn fn, void *user, int32_t num_inputs,
                         tsr_tensor *const *inputs, const tsr_gradcheck_options *options,
                         tsr_gradcheck_result *out_result) {
  if (fn == NULL || inputs == NULL || out_result == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: fn, inputs and out_result are required");
  }
  if (out_result->struct_size < sizeof(*out_result)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: out_result->struct_size is %zu",
                         out_result->struct_size);
  }
  if (num_inputs < 1 || num_inputs > TSR_MAX_OPERANDS) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: %d inputs", num_inputs);
  }
  tsr_gradcheck_options o;
  tsr_gradcheck_options_init(&o);
  if (options != NULL) {
    if (options->struct_size < sizeof(o)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: options->struct_size is %zu",
                           options->struct_size);
    }
    o = *options;
  }
  if (!(o.eps > 0) || !(o.atol >= 0) || !(o.rtol >= 0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: eps %g, atol %g, rtol %g", o.eps, o.atol,
                         o.rtol);
  }
  size_t struct_size = out_result->struct_size;
  memset(out_result, 0, sizeof(*out_result));
  out_result->struct_size = struct_size;
  out_result->worst_input = -1;
  out_result->worst_index = -1;

  check_state s = {.fn = fn, .user = user, .n = num_inputs};
  double *grads[TSR_MAX_OPERANDS] = {0};
  tsr_status status = TSR_OK;
  int mode = tsr_grad_mode_set(1);
  int scope = tsr_scope_suspend();
  int checked_any = 0;
  for (int32_t i = 0; i < num_inputs && status == TSR_OK; ++i) {
    if (inputs[i] == NULL) {
      status = tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: inputs[%d] is NULL", i);
      break;
    }
    s.args[i] = inputs[i];
    if (!is_float(tsr_tensor_dtype(inputs[i])) || !((o.check_mask >> i) & 1u))
      continue;
    s.values[i] = host_values(inputs[i]);
    if (s.values[i] == NULL)
      status = tsr_error_status();
    checked_any = 1;
  }
  if (status == TSR_OK && !checked_any) {
    status = tsr_error_set(TSR_INVALID_ARGUMENT, "gradcheck: no float input to check");
  }
  if (status == TSR_OK)
    status = analytic(&s, &o, grads);
  int passed = 1;
  double worst_excess = -INFINITY;
  tsr_grad_mode_set(0);
  for (int32_t i = 0; i < num_inputs && status == TSR_OK; ++i) {
    if (s.values[i] == NULL)
      continue;
    int64_t count = tsr_tensor_numel(inputs[i]);
    for (int64_t k = 0; k < count && status == TSR_OK; ++k) {
      double saved = s.values[i][k], lp = 0, lm = 0;
      s.values[i][k] = saved + o.eps;
      status = projected(&s, &lp);
      s.values[i][k] = saved - o.eps;
      if (status == TSR_OK)
        status = projected(&s, &lm);
      s.values[i][k] = saved;
      if (status != TSR_OK)
        break;
      double numeric = (lp - lm) / (2 * o.eps);
      double err = fabs(grads[i][k] - numeric);
      double excess = err - (o.atol + o.rtol * fabs(numeric));
      if (!(excess <= 0))
        passed = 0;  // NaN fails too
      if (err > out_result->max_abs_error || isnan(err))
        out_result->max_abs_error = err;
      if (excess > worst_excess || isnan(excess)) {
        worst_excess = isnan(excess) ? INFINITY : excess;
        out_result->worst_input = i;
        out_result->worst_index = k;
        out_result->analytic = grads[i][k];
        out_result->numeric = numeric;
      }
      ++out_result->checked;
    }
  }
  out_result->passed = status == TSR_OK && passed;
  tsr_scope_resume(scope);
  tsr_grad_mode_set(mode);
  for (int32_t i = 0; i < num_inputs; ++i) {
    free(s.values[i]);
    free(grads[i]);
  }
  free(s.r);
  return status;
}
