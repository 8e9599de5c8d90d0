// Oracle of MATMUL (docs/abi.md 10.13): out = act(alpha * a @ b + bias +
// beta * out_before), batch dimensions already expanded by the suite.
#include <math.h>

#include "oracle_internal.h"

tsr_status tsr_oracle_matmul_compute(tsr_oracle_call *call) {
  const tsr_matmul_attrs *attrs = call->attrs;
  const tsr_oracle_tensor *a = &call->inputs[0];
  const tsr_oracle_tensor *b = &call->inputs[1];
  const tsr_oracle_tensor *bias = attrs->has_bias ? &call->inputs[2] : NULL;
  tsr_oracle_tensor *out = &call->outputs[0];
  int32_t r = out->rank;
  if (r < 2 || a->rank != r || b->rank != r || !tsr_oracle_dtype_is_float(out->dtype)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "matmul: ranks %d, %d, %d or dtype %s",
                           (int)a->rank, (int)b->rank, (int)r, tsr_oracle_dtype_name(out->dtype));
  }
  if (attrs->has_bias && call->num_inputs != 3) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "matmul: has_bias without a bias input");
  }
  int64_t m = out->sizes[r - 2], n = out->sizes[r - 1], k = a->sizes[r - 1];
  if (a->sizes[r - 2] != m || b->sizes[r - 2] != k || b->sizes[r - 1] != n) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "matmul: inner sizes do not match");
  }
  int64_t batches = out->numel / (m * n > 0 ? m * n : 1);
  if (m * n == 0) batches = 0;
  double alpha = tsr_oracle_attr(attrs->alpha, out->dtype);
  double beta = tsr_oracle_attr(attrs->beta, out->dtype);
  tsr_oracle_mark(out, TSR_ORACLE_TOLERANCE);
  for (int64_t batch = 0; batch < batches; ++batch) {
    const double *ab = a->v + batch * m * k;
    const double *bb = b->v + batch * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        tsr_oracle_sum acc = {0, 0, 0};
        double mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          tsr_oracle_sum_add_product(&acc, ab[i * k + p], bb[p * n + j]);
          mag += fabs(ab[i * k + p] * bb[p * n + j]);
        }
        int64_t o = batch * m * n + i * n + j;
        double dot = tsr_oracle_sum_get(&acc);
        double v = alpha * dot;
        // K products and K - 1 sums in any order (fused or not), then
        // alpha's multiply and the adds of bias and beta * out.
        double bound = fabs(alpha) * ((double)k + 1) * mag;
        double terms = fabs(v);
        if (bias != NULL) {
          v += bias->v[o];
          terms += fabs(bias->v[o]);
        }
        if (beta != 0) {
          v += beta * out->v[o];
          terms += 2 * fabs(beta * out->v[o]);
        }
        bound += 2 * terms;
        out->v[o] = tsr_oracle_activation_value(attrs->activation, v);
        out->bound[o] = tsr_oracle_activation_bound(attrs->activation, v, bound);
      }
    }
  }
  return TSR_OK;
}
