// Helpers shared by the softmax, normalisation and cross-entropy tests:
// element access for every float dtype (bfloat16 and float16 through half.h,
// the rest through test_util.h), fills, tolerances, and runs that compare
// one thread against two. Header-only; each test includes it once.
#ifndef TESSERA_PLUGINS_CPU_TESTS_TEST_NORM_UTIL_H_
#define TESSERA_PLUGINS_CPU_TESTS_TEST_NORM_UTIL_H_

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "test_util.h"

static const tsr_dtype_t nt_float_dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16};

static inline char *nt_element(const tt_tensor *t, const int64_t *idx) {
  int64_t offset = 0;
  for (int32_t d = 0; d < t->desc.rank; ++d) offset += idx[d] * t->desc.strides[d];
  return t->base + t->desc.byte_offset + (uint64_t)offset * tsr_dtype_size(t->desc.dtype);
}

static inline double nt_get(const tt_tensor *t, const int64_t *idx) {
  uint16_t h;
  switch (t->desc.dtype) {
    case TSR_BFLOAT16:
      memcpy(&h, nt_element(t, idx), 2);
      return tsr_cpu_bf16_to_f32(h);
    case TSR_FLOAT16:
      memcpy(&h, nt_element(t, idx), 2);
      return tsr_cpu_f16_to_f32(h);
    default:
      return tt_get(t, idx);
  }
}

static inline void nt_set(tt_tensor *t, const int64_t *idx, double v) {
  uint16_t h;
  switch (t->desc.dtype) {
    case TSR_BFLOAT16:
      h = tsr_cpu_f32_to_bf16((float)v);
      memcpy(nt_element(t, idx), &h, 2);
      break;
    case TSR_FLOAT16:
      h = tsr_cpu_f32_to_f16((float)v);
      memcpy(nt_element(t, idx), &h, 2);
      break;
    default:
      tt_set(t, idx, v);
  }
}

// Element |i| in row-major order of t's logical shape.
static inline double nt_get_flat(const tt_tensor *t, int64_t i) {
  int64_t idx[TSR_MAX_RANK];
  for (int32_t d = t->desc.rank - 1; d >= 0; --d) {
    idx[d] = i % t->desc.sizes[d];
    i /= t->desc.sizes[d];
  }
  return nt_get(t, idx);
}

static inline void nt_set_flat(tt_tensor *t, int64_t i, double v) {
  int64_t idx[TSR_MAX_RANK];
  for (int32_t d = t->desc.rank - 1; d >= 0; --d) {
    idx[d] = i % t->desc.sizes[d];
    i /= t->desc.sizes[d];
  }
  nt_set(t, idx, v);
}

// Reproducible values in [lo, hi], stored rounded to t's dtype.
static inline void nt_fill(tt_tensor *t, uint64_t seed, double lo, double hi) {
  const int64_t n = tt_numel(t);
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    nt_set_flat(t, i, lo + (hi - lo) * (double)(state >> 11) * 0x1.0p-53);
  }
}

// Relative and absolute tolerance for results rounded to |dtype| from a
// float32 (or float64) computation.
static inline double nt_tol(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64:
      return 1e-11;
    case TSR_FLOAT32:
      return 2e-5;
    case TSR_FLOAT16:
      return 3e-3;
    default:
      return 2e-2;
  }
}

// Fails with a message when |got| is not within |tol| (relative and absolute)
// of |want|.
static inline void nt_expect(const char *what, int64_t i, double got, double want, double tol) {
  if (!tt_close(got, want, tol, tol)) {
    fail_msg("%s[%lld]: got %.17g, want %.17g (tol %g)", what, (long long)i, got, want, tol);
  }
}

// Makes |t| a non-contiguous view of |sizes|: the dimensions in reverse
// physical order, starting 3 elements into its buffer.
static inline void nt_tensor_make_strided(tt_tensor *t, tsr_dtype_t dtype, int32_t rank,
                                          const int64_t *sizes) {
  int64_t strides[TSR_MAX_RANK];
  int64_t stride = 1;
  for (int32_t d = 0; d < rank; ++d) {
    strides[d] = stride;
    stride *= sizes[d] > 0 ? sizes[d] + (d == 0 ? 1 : 0) : 1;  // a gap after dimension 0
  }
  tt_tensor_make(t, dtype, rank, sizes, strides, 3);
}

// Runs |op| once on 2 threads and once on 1 and checks that output |k| is
// bit-identical; leaves the 2-thread host running.
static inline void nt_expect_same_bits_on_one_and_two_threads(int32_t op, const void *attrs,
                                                              tt_tensor *const *inputs,
                                                              int32_t num_inputs,
                                                              tt_tensor *const *outputs,
                                                              int32_t num_outputs, int32_t k) {
  tt_tensor *out = outputs[k];
  const size_t bytes = (size_t)tt_numel(out) * tsr_dtype_size(out->desc.dtype);
  assert_int_equal(tt_run(op, attrs, inputs, num_inputs, outputs, num_outputs, NULL), TSR_OK);
  char *two = test_malloc(bytes + 1);
  memcpy(two, out->base + out->desc.byte_offset, bytes);
  tt_setup(1);
  assert_int_equal(tt_run(op, attrs, inputs, num_inputs, outputs, num_outputs, NULL), TSR_OK);
  tt_setup(2);
  assert_memory_equal(two, out->base + out->desc.byte_offset, bytes);
  test_free(two);
}

#endif  // TESSERA_PLUGINS_CPU_TESTS_TEST_NORM_UTIL_H_
