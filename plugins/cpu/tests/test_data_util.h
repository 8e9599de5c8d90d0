// Helpers for the tests of the data ops (concat, pad, gather, scatter_add,
// rng_fill) and the optimizer updates: every dtype in a list, exact and
// tolerant element checks with a message naming the element, and a runner
// that checks an op gives the same bits on one thread and on two. Not
// thread-safe (test code).
#ifndef TESSERA_PLUGINS_CPU_TESTS_TEST_DATA_UTIL_H_
#define TESSERA_PLUGINS_CPU_TESTS_TEST_DATA_UTIL_H_

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test_host.h"
#include "test_util.h"

static const tsr_dtype_t du_all_dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16,
                                            TSR_INT32,   TSR_INT64,   TSR_BOOL};
static const tsr_dtype_t du_float_dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16};
static const tsr_dtype_t du_number_dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16,
                                               TSR_FLOAT16, TSR_INT32,   TSR_INT64};

static inline int du_is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || tt_is_half(dtype);
}

// Fills |t| with values that every dtype holds exactly: integers in [lo, hi]
// (bool: 0 or 1), so moved data can be compared bit for bit.
static inline void du_fill_exact(tt_tensor *t, uint64_t seed, double lo, double hi) {
  tt_fill(t, seed, lo, hi);
  if (!du_is_float(t->desc.dtype) || tt_numel(t) == 0) return;
  int64_t idx[TSR_MAX_RANK] = {0};
  do {
    tt_set(t, idx, floor(tt_get(t, idx) + 0.5));
  } while (tt_index_next(idx, t->desc.rank, t->desc.sizes));
}

// Fails with the op, dtype and element when |got| is not |want| exactly (NaN
// matches NaN).
static inline void du_expect_exact(const char *what, tsr_dtype_t dtype, const int64_t *idx,
                                   int32_t rank, double got, double want) {
  if (got == want || (isnan(got) && isnan(want))) return;
  fail_msg("%s dtype %d at [%lld %lld %lld %lld] (rank %d): got %.17g, want %.17g", what,
           (int)dtype, (long long)(rank > 0 ? idx[0] : 0), (long long)(rank > 1 ? idx[1] : 0),
           (long long)(rank > 2 ? idx[2] : 0), (long long)(rank > 3 ? idx[3] : 0), (int)rank, got,
           want);
}

static inline void du_expect_close(const char *what, tsr_dtype_t dtype, int64_t i, double got,
                                   double want, double rtol, double atol) {
  if (tt_close(got, want, rtol, atol)) return;
  fail_msg("%s dtype %d element %lld: got %.17g, want %.17g", what, (int)dtype, (long long)i, got,
           want);
}

// Bytes from |t|'s first element to one past its last.
static inline size_t du_extent_bytes(const tt_tensor *t) {
  if (tt_numel(t) == 0) return 0;
  int64_t last = 0;
  for (int32_t d = 0; d < t->desc.rank; ++d) last += (t->desc.sizes[d] - 1) * t->desc.strides[d];
  return (size_t)(last + 1) * tsr_dtype_size(t->desc.dtype);
}

// Runs |op| on 2 threads and on 1, each time from the outputs' contents on
// entry (read-modify-write ops), and checks every output is bit-identical;
// leaves the outputs as the runs wrote them and the 2-thread host running.
static inline void du_expect_same_bits_on_one_and_two_threads(int32_t op, const void *attrs,
                                                              tt_tensor *const *inputs,
                                                              int32_t num_inputs,
                                                              tt_tensor *const *outputs,
                                                              int32_t num_outputs) {
  char *before[TSR_MAX_OPERANDS], *two[TSR_MAX_OPERANDS];
  for (int32_t k = 0; k < num_outputs; ++k) {
    const size_t bytes = du_extent_bytes(outputs[k]);
    before[k] = test_malloc(bytes + 1);
    two[k] = test_malloc(bytes + 1);
    memcpy(before[k], outputs[k]->base + outputs[k]->desc.byte_offset, bytes);
  }
  tt_setup(2);
  const uint64_t parallel_before = tsr_test_host_parallel_count();
  assert_int_equal(tt_run(op, attrs, inputs, num_inputs, outputs, num_outputs, NULL), TSR_OK);
  // The case is meant to be large enough to be split.
  assert_true(tsr_test_host_parallel_count() > parallel_before);
  for (int32_t k = 0; k < num_outputs; ++k) {
    const size_t bytes = du_extent_bytes(outputs[k]);
    char *data = outputs[k]->base + outputs[k]->desc.byte_offset;
    memcpy(two[k], data, bytes);
    memcpy(data, before[k], bytes);
  }
  tt_setup(1);
  assert_int_equal(tt_run(op, attrs, inputs, num_inputs, outputs, num_outputs, NULL), TSR_OK);
  tt_setup(2);
  for (int32_t k = 0; k < num_outputs; ++k) {
    const size_t bytes = du_extent_bytes(outputs[k]);
    assert_memory_equal(two[k], outputs[k]->base + outputs[k]->desc.byte_offset, bytes);
    test_free(before[k]);
    test_free(two[k]);
  }
}

// Expects |status| to be TSR_INVALID_ARGUMENT with |needle| in the message.
static inline void du_expect_invalid(tsr_status status, const char *needle) {
  if (status != TSR_INVALID_ARGUMENT) {
    fail_msg("expected TSR_INVALID_ARGUMENT (\"%s\"), got status %d: %s", needle, (int)status,
             tsr_test_host_error_get());
  }
  if (strstr(tsr_test_host_error_get(), needle) == NULL) {
    fail_msg("message \"%s\" lacks \"%s\"", tsr_test_host_error_get(), needle);
  }
}

#endif  // TESSERA_PLUGINS_CPU_TESTS_TEST_DATA_UTIL_H_
