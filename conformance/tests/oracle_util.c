// See oracle_util.h.
#include "oracle_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tsr_oracle_tensor tsr_test_tensor(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                                  const double *values) {
  tsr_oracle_tensor t;
  if (tsr_oracle_tensor_create(dtype, rank, sizes, &t) != 0) abort();
  for (int64_t i = 0; values != NULL && i < t.numel; ++i) {
    tsr_oracle_tensor_set(&t, i, values[i], (int64_t)values[i]);
  }
  return t;
}

void tsr_test_random_fill(tsr_oracle_tensor *t, uint64_t seed, double lo, double hi) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (int64_t i = 0; i < t->numel; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    double u = (double)(s >> 11) * ldexp(1.0, -53);
    t->v[i] = lo + (hi - lo) * u;
  }
}

tsr_status tsr_test_run(int32_t op, const void *attrs, tsr_oracle_tensor *inputs, int32_t num_inputs,
                        tsr_oracle_tensor *outputs, int32_t num_outputs) {
  tsr_oracle_call call;
  memset(&call, 0, sizeof(call));
  call.op = op;
  call.attrs = attrs;
  call.inputs = inputs;
  call.num_inputs = num_inputs;
  call.outputs = outputs;
  call.num_outputs = num_outputs;
  return tsr_oracle_compute(&call);
}

double tsr_test_dot(const tsr_oracle_tensor *a, const tsr_oracle_tensor *b) {
  double s = 0;
  for (int64_t i = 0; i < a->numel; ++i) s += a->v[i] * b->v[i];
  return s;
}
