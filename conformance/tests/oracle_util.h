// Small helpers for the oracle's own tests: build tensors, run one op.
#ifndef TESSERA_CONFORMANCE_TESTS_ORACLE_UTIL_H_
#define TESSERA_CONFORMANCE_TESTS_ORACLE_UTIL_H_

#include <stdint.h>

#include "oracle.h"

// A tensor of |dtype| and |sizes| filled from |values| (may be NULL: zeros;
// int and bool dtypes take the values as integers).
tsr_oracle_tensor tsr_test_tensor(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                                  const double *values);
// Deterministic uniform values in [lo, hi).
void tsr_test_random_fill(tsr_oracle_tensor *t, uint64_t seed, double lo, double hi);
// Runs |op| and returns its status; outputs must be created by the caller.
tsr_status tsr_test_run(int32_t op, const void *attrs, tsr_oracle_tensor *inputs, int32_t num_inputs,
                        tsr_oracle_tensor *outputs, int32_t num_outputs);
// Sum of w[i] * output[which][i]: a scalar loss whose gradient with respect
// to that output is w.
double tsr_test_dot(const tsr_oracle_tensor *a, const tsr_oracle_tensor *b);

#endif  // TESSERA_CONFORMANCE_TESTS_ORACLE_UTIL_H_
