// Tensors on the device under test (device_fixture.h's g_device) from float64
// values, for the op tests that share them (test_ops_nn.c, test_ops_more.c).
// Include after device_fixture.h. Each helper fails the running test on error.
#ifndef TESSERA_SDK_TESTS_DEVICE_TENSORS_H_
#define TESSERA_SDK_TESTS_DEVICE_TENSORS_H_

#include <stdint.h>
#include <stdlib.h>

#include "device_fixture.h"
#include "oracle.h"
#include "tessera/tessera.h"
#include "test_support.h"

// n (at least one) zeroed doubles; the caller frees them.
static inline double *dalloc(int64_t n) {
  double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  assert_non_null(p);
  return p;
}

static inline tsr_tensor *make_on(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                  const int64_t *sizes, const double *values) {
  tsr_tensor *t = ts_tensor(device, dtype, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

static inline tsr_tensor *make(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                               const double *values) {
  return make_on(g_device, dtype, rank, sizes, values);
}

// A tensor of |sizes| with deterministic values in [lo, hi); the values (as
// the device holds them) go to |out_values| when it is not NULL.
static inline tsr_tensor *make_random_on(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                         const int64_t *sizes, uint64_t seed, double lo,
                                         double hi, double *out_values) {
  int64_t n = orc_numel(rank, sizes);
  double *v = out_values != NULL ? out_values : dalloc(n);
  ts_rng rng = {seed};
  ts_rng_fill(&rng, dtype, lo, hi, v, n);
  tsr_tensor *t = make_on(device, dtype, rank, sizes, v);
  if (out_values == NULL)
    free(v);
  return t;
}

static inline tsr_tensor *make_random(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                                      uint64_t seed, double *out_values) {
  return make_random_on(g_device, dtype, rank, sizes, seed, -1.0, 1.0, out_values);
}

#endif  // TESSERA_SDK_TESTS_DEVICE_TENSORS_H_
