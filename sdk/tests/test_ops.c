// The SDK's first op set, end to end through one plugin.
//
// Built twice: test_ops_ref runs it on the ref plugin, test_ops_async on the
// async fixture (ref's kernels behind a worker thread per stream), because
// the ABI is not right until an asynchronous plugin gives the same answers.
// Every expected value comes from oracle.h's float64 loops over the same host
// data. No test synchronizes explicitly: tsr_tensor_to_host must order itself
// after the work that wrote the tensor. The async build makes every queued
// kernel sleep first (TSR_ASYNC_FIXTURE_DELAY_US), so a read that does not
// wait sees stale memory.
//
// Compile definitions: TSR_TEST_PLUGIN_PATH (the plugin .so), TSR_TEST_DEVICE
// ("ref:0" or "async:0"), TSR_TEST_ASYNC (1 for the async build).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "tessera/tessera.h"
#include "test_support.h"

#ifndef TSR_TEST_PLUGIN_PATH
#error "TSR_TEST_PLUGIN_PATH must name the plugin under test"
#endif
#ifndef TSR_TEST_DEVICE
#error "TSR_TEST_DEVICE must name the device under test"
#endif
#ifndef TSR_TEST_ASYNC
#define TSR_TEST_ASYNC 0
#endif
// Per-kernel delay of the async fixture for every test but the ordering one.
#define TSR_TEST_ASYNC_DELAY_US "300"

static tsr_context *g_context;
static tsr_device *g_device;

static const tsr_dtype_t kAllDtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64, TSR_BOOL};
static const tsr_dtype_t kNumberDtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64};
static const tsr_dtype_t kFloatDtypes[] = {TSR_FLOAT32, TSR_FLOAT64};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int group_setup(void **state) {
  (void)state;
  g_context = ts_context_create(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE);
  if (g_context == NULL) return -1;
  g_device = tsr_context_default_device(g_context);
  if (g_device == NULL || strcmp(tsr_device_name(g_device), TSR_TEST_DEVICE) != 0) {
    fprintf(stderr, "default device is %s, not %s\n",
            g_device ? tsr_device_name(g_device) : "NULL", TSR_TEST_DEVICE);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  g_context = NULL;
  g_device = NULL;
  return 0;
}

// --- helpers ----------------------------------------------------------------

static double *dalloc(int64_t n) {
  double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  assert_non_null(p);
  return p;
}

static tsr_tensor *make(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                        const double *values) {
  tsr_tensor *t = ts_tensor(g_device, dtype, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

static void expect_shape(const char *what, const tsr_tensor *t, int32_t rank,
                         const int64_t *sizes) {
  if (tsr_tensor_rank(t) != rank) {
    fail_msg("%s: rank %d, expected %d", what, tsr_tensor_rank(t), rank);
  }
  for (int32_t d = 0; d < rank; ++d) {
    if (tsr_tensor_size(t, d) != sizes[d]) {
      fail_msg("%s: size[%d] is %lld, expected %lld", what, d, (long long)tsr_tensor_size(t, d),
               (long long)sizes[d]);
    }
  }
}

// Checks |t|'s shape and values against |want| (row-major).
static void expect_tensor(const char *what, const tsr_tensor *t, int32_t rank,
                          const int64_t *sizes, const double *want, const double *tol,
                          double rtol, double atol) {
  TS_ASSERT_TENSOR(t);
  expect_shape(what, t, rank, sizes);
  int64_t n = orc_numel(rank, sizes);
  double *got = dalloc(n);
  if (ts_read(t, got, n) != n) fail_msg("%s: reading the result failed: %s", what, tsr_last_error());
  ts_expect_values(what, tsr_tensor_dtype(t), got, want, tol, n, rtol, atol);
  free(got);
}

static void expect_default(const char *what, const tsr_tensor *t, int32_t rank,
                           const int64_t *sizes, const double *want) {
  tsr_dtype_t dtype = tsr_tensor_dtype(t);
  expect_tensor(what, t, rank, sizes, want, NULL, ts_rtol(dtype), ts_atol(dtype));
}

// Reads raw typed contents and compares each element with |want| (typed):
// floats equal or both NaN, others bit-exact.
static void expect_raw(const char *what, const tsr_tensor *t, const void *want, int64_t n) {
  tsr_dtype_t dtype = tsr_tensor_dtype(t);
  size_t elem = tsr_dtype_size(dtype);
  unsigned char *got = malloc((size_t)(n > 0 ? n : 1) * elem);
  assert_non_null(got);
  TS_ASSERT_OK(tsr_tensor_to_host(t, got, (size_t)n * elem));
  int64_t bad = -1;
  double bad_got = 0, bad_want = 0;
  long long bad_got_int = 0, bad_want_int = 0;
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char *g = got + i * elem;
    const unsigned char *w = (const unsigned char *)want + i * elem;
    int ok;
    double gv, wv;
    ts_unpack(dtype, g, 1, &gv);
    ts_unpack(dtype, w, 1, &wv);
    if (dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64) {
      ok = (isnan(gv) && isnan(wv)) || (gv == wv && signbit(gv) == signbit(wv));
    } else {
      ok = memcmp(g, w, elem) == 0;
    }
    if (!ok) {
      long long gi = 0, wi = 0;
      if (dtype == TSR_INT64) {
        memcpy(&gi, g, 8);
        memcpy(&wi, w, 8);
      }
      bad = i;
      bad_got = gv;
      bad_want = wv;
      bad_got_int = gi;
      bad_want_int = wi;
      break;
    }
  }
  free(got);
  if (bad >= 0) {
    fail_msg("%s (%s): element %lld is %.17g (%lld), expected %.17g (%lld)", what,
             ts_dtype_name(dtype), (long long)bad, bad_got, bad_got_int, bad_want, bad_want_int);
  }
}

// Element i of a [n] tensor built from raw typed host data.
static tsr_tensor *make_raw(tsr_dtype_t dtype, int64_t n, const void *data) {
  int64_t sizes[1] = {n};
  tsr_tensor *t = tsr_tensor_from_host(g_device, dtype, 1, sizes, data);
  TS_ASSERT_TENSOR(t);
  return t;
}

// ============================================================================
// FILL

static const double kFillValues[] = {0.1, -2.75, 3.7, -3.7, 1e20, -1e20, 0.5, 0.0, 7.0};

static void test_fill_sets_every_element_in_every_dtype_as_cast_converts_a_float64(void **state) {
  (void)state;
  const int64_t sizes[2] = {3, 5};
  double special[3] = {NAN, INFINITY, -INFINITY};
  for (int d = 0; d < COUNT(kAllDtypes); ++d) {
    tsr_dtype_t dtype = kAllDtypes[d];
    for (int k = 0; k < COUNT(kFillValues) + 3; ++k) {
      double value = k < COUNT(kFillValues) ? kFillValues[k] : special[k - COUNT(kFillValues)];
      unsigned char one[8], want[15 * 8];
      orc_cast_element(TSR_FLOAT64, &value, dtype, one);
      for (int i = 0; i < 15; ++i) memcpy(want + i * tsr_dtype_size(dtype), one, tsr_dtype_size(dtype));
      char what[96];
      snprintf(what, sizeof(what), "fill_(%g)", value);
      tsr_tensor *t = tsr_tensor_empty(g_device, dtype, 2, sizes);
      TS_ASSERT_TENSOR(t);
      TS_ASSERT_OK(tsr_fill_(t, value));
      expect_raw(what, t, want, 15);
      tsr_tensor_release(t);
      snprintf(what, sizeof(what), "tensor_full(%g)", value);
      t = tsr_tensor_full(g_device, dtype, 2, sizes, value);
      TS_ASSERT_TENSOR(t);
      expect_raw(what, t, want, 15);
      tsr_tensor_release(t);
    }
  }
}

static void test_fill_writes_only_the_elements_of_a_strided_view(void **state) {
  (void)state;
  const int64_t sizes[2] = {4, 6};
  double zeros[24] = {0}, want[24] = {0}, sevens[12];
  for (int i = 0; i < 12; ++i) sevens[i] = 7.0;
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_tensor *base = make(kNumberDtypes[d], 2, sizes, zeros);
    tsr_tensor *cols = tsr_slice(base, 1, 1, 6, 2);  // columns 1, 3, 5
    TS_ASSERT_TENSOR(cols);
    TS_ASSERT_OK(tsr_fill_(cols, 7.0));
    orc_view v = orc_view_slice(orc_view_contiguous(2, sizes), 1, 1, 6, 2);
    memset(want, 0, sizeof(want));
    orc_view_scatter(&v, want, sevens);
    expect_default("fill_ of a step-2 slice, read through the base", base, 2, sizes, want);
    tsr_tensor_release(cols);
    tsr_tensor_release(base);
  }
}

// A step beyond the dimension selects the first element, as in Python
// (x[0:6:2**63-1] and x[1:6:2**63-2] have one element); forming
// end - start + step - 1 used to overflow into size 0 or -1.
static void test_slice_with_a_huge_step_selects_one_element(void **state) {
  (void)state;
  const int64_t sizes[1] = {6};
  const double values[6] = {10, 11, 12, 13, 14, 15};
  tsr_tensor *x = make(TSR_FLOAT32, 1, sizes, values);
  const struct {
    int64_t start, end, step;
    double want;
  } cases[] = {
      {0, 6, INT64_MAX, 10}, {1, 6, INT64_MAX - 1, 11}, {5, INT64_MAX, INT64_MAX, 15},
      {INT64_MIN, INT64_MAX, INT64_MAX, 10}, {-1, 6, 1LL << 62, 15}};
  for (int i = 0; i < COUNT(cases); ++i) {
    tsr_tensor *v = tsr_slice(x, 0, cases[i].start, cases[i].end, cases[i].step);
    TS_ASSERT_TENSOR(v);
    const int64_t one[1] = {1};
    expect_default("slice with a huge step", v, 1, one, &cases[i].want);
    tsr_tensor_release(v);
  }
  tsr_tensor *none = tsr_slice(x, 0, 6, 6, INT64_MAX);
  TS_ASSERT_TENSOR(none);
  assert_int_equal(tsr_tensor_numel(none), 0);
  tsr_tensor_release(none);
  tsr_tensor_release(x);
}

// A successful call leaves the thread's last error as it was: plugins report
// their internal choices through the host on the way to a plan (the oneDNN
// plugin's "binary: 6 elements are cheaper on the own kernel"), and those
// never reach the caller. Every op family, tiny and large (where a plugin
// takes another path), each on a fresh signature so its plan is made here.
// The error an earlier, failed call of the application left: what a later
// successful call must leave in place.
static char g_sentinel[512];

static void sentinel_set(void) {
  assert_int_equal(tsr_device_op_supported(NULL, TSR_OP_FILL, TSR_FLOAT32), TSR_INVALID_ARGUMENT);
  snprintf(g_sentinel, sizeof(g_sentinel), "%s", tsr_last_error());
  assert_true(g_sentinel[0] != '\0');
}

static void expect_sentinel(const char *what) {
  if (tsr_last_status() != TSR_INVALID_ARGUMENT || strcmp(tsr_last_error(), g_sentinel) != 0) {
    fail_msg("%s succeeded but changed the last error to %s: \"%s\"", what,
             tsr_status_name(tsr_last_status()), tsr_last_error());
  }
}

static tsr_tensor *filled(int32_t rank, const int64_t *sizes, double value) {
  tsr_tensor *t = tsr_tensor_full(g_device, TSR_FLOAT32, rank, sizes, value);
  TS_ASSERT_TENSOR(t);
  return t;
}

static void test_success_leaves_the_last_error_untouched(void **state) {
  (void)state;
  static const int64_t small[1] = {6}, large[2] = {512, 256}, image[4] = {2, 3, 16, 16},
                       weight[4] = {4, 3, 3, 3}, square[2] = {96, 96};
  const struct {
    int32_t rank;
    const int64_t *sizes;
  } shapes[] = {{1, small}, {2, large}};
  for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
    tsr_tensor *a = filled(shapes[k].rank, shapes[k].sizes, 0.5);
    tsr_tensor *b = filled(shapes[k].rank, shapes[k].sizes, 2.0);
    tsr_tensor *r[12] = {0};
    int n = 0;
    // Each call is checked alone: the sentinel is set again before it.
#define SENTINEL_CALL(expr)                                                   \
  do {                                                                        \
    sentinel_set();                                                           \
    r[n] = (expr);                                                            \
    TS_ASSERT_TENSOR(r[n]);                                                   \
    expect_sentinel(#expr);                                                   \
    ++n;                                                                      \
  } while (0)
    SENTINEL_CALL(tsr_binary(a, b, TSR_BINARY_ADD, 1.0));
    SENTINEL_CALL(tsr_binary(a, b, TSR_BINARY_MAXIMUM, 1.0));
    SENTINEL_CALL(tsr_unary(a, TSR_UNARY_TANH, 0.0));
    SENTINEL_CALL(tsr_unary(a, TSR_UNARY_RELU, 0.0));
    SENTINEL_CALL(tsr_unary(a, TSR_UNARY_GELU, 0.0));
    SENTINEL_CALL(tsr_clamp(a, 1, 0.0, 1, 1.0));
    SENTINEL_CALL(tsr_reduce(a, TSR_REDUCE_SUM, 0, NULL, 0));
    SENTINEL_CALL(tsr_softmax(a, -1));
    SENTINEL_CALL(tsr_log_softmax(a, -1));
    SENTINEL_CALL(tsr_cast(a, TSR_FLOAT64));
    SENTINEL_CALL(tsr_compare(a, b, TSR_COMPARE_LT));
    for (int i = 0; i < n; ++i) tsr_tensor_release(r[i]);
    tsr_tensor_release(b);
    tsr_tensor_release(a);
  }
  tsr_tensor *r[4] = {0};
  int n = 0;
  tsr_tensor *x = filled(4, image, 0.25), *w = filled(4, weight, 0.5);
  tsr_tensor *m = filled(2, square, 0.125);
  SENTINEL_CALL(tsr_conv2d(x, w, NULL, NULL));
  SENTINEL_CALL(tsr_max_pool2d(x, 2, 2, 0));
  SENTINEL_CALL(tsr_matmul_ex(m, m, NULL, TSR_ACTIVATION_GELU));
  SENTINEL_CALL(tsr_matmul_ex(m, m, NULL, TSR_ACTIVATION_NONE));
#undef SENTINEL_CALL
  for (int i = 0; i < n; ++i) tsr_tensor_release(r[i]);
  tsr_tensor_release(m);
  tsr_tensor_release(w);
  tsr_tensor_release(x);
  tsr_last_error_clear();
}

static void test_fill_handles_a_scalar_and_an_empty_tensor(void **state) {
  (void)state;
  tsr_tensor *scalar = tsr_tensor_full(g_device, TSR_FLOAT64, 0, NULL, 2.5);
  double want = 2.5;
  expect_default("rank-0 full", scalar, 0, NULL, &want);
  tsr_tensor_release(scalar);
  const int64_t empty_sizes[2] = {0, 4};
  tsr_tensor *empty = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, empty_sizes);
  TS_ASSERT_TENSOR(empty);
  TS_ASSERT_OK(tsr_fill_(empty, 1.0));
  assert_int_equal(tsr_tensor_numel(empty), 0);
  TS_ASSERT_OK(tsr_tensor_to_host(empty, NULL, 0));
  tsr_tensor_release(empty);
}

// ============================================================================
// COPY and CAST

#define CAST_MAX 32

// Source values of |dtype| (raw, typed) for the cast tests; returns the count.
static int cast_sources(tsr_dtype_t dtype, unsigned char *out) {
  static const double floats[] = {0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 2.5, -2.7, 0.1, 3e9, -3e9,
                                  1e20, -1e20, 16777216.0, 2147483520.0, -2147483648.0,
                                  INFINITY, -INFINITY, NAN};
  static const double doubles_only[] = {2147483647.9, -2147483648.9, 2147483648.0,
                                        -2147483649.0, 16777217.0, 1e300, -1e300,
                                        9.3e18, -9.3e18, 9223372036854775807.0,
                                        1.0 + 0x1.0p-30, 0x1.0000003p0};
  static const int64_t ints[] = {0, 1, -1, 7, -7, INT32_MAX, INT32_MIN, 16777217, 123456789};
  static const int64_t longs_only[] = {(1LL << 53) + 1, INT64_MAX, INT64_MIN, -(1LL << 40),
                                       (1LL << 31)};
  int n = 0;
  switch (dtype) {
    case TSR_FLOAT32:
      for (int i = 0; i < COUNT(floats); ++i) ((float *)out)[n++] = (float)floats[i];
      break;
    case TSR_FLOAT64:
      for (int i = 0; i < COUNT(floats); ++i) ((double *)out)[n++] = floats[i];
      for (int i = 0; i < COUNT(doubles_only); ++i) ((double *)out)[n++] = doubles_only[i];
      break;
    case TSR_INT32:
      for (int i = 0; i < COUNT(ints); ++i) ((int32_t *)out)[n++] = (int32_t)ints[i];
      break;
    case TSR_INT64:
      for (int i = 0; i < COUNT(ints); ++i) ((int64_t *)out)[n++] = ints[i];
      for (int i = 0; i < COUNT(longs_only); ++i) ((int64_t *)out)[n++] = longs_only[i];
      break;
    case TSR_BOOL:
      ((uint8_t *)out)[n++] = 0;
      ((uint8_t *)out)[n++] = 1;
      break;
    default:
      break;
  }
  return n;
}

// ops.h does not say what int64 -> int32 does out of range: those values are
// left out of the int -> int pairs.
static int cast_value_specified(tsr_dtype_t from, const unsigned char *src, tsr_dtype_t to) {
  if (from == TSR_INT64 && to == TSR_INT32) {
    int64_t v;
    memcpy(&v, src, 8);
    return v >= INT32_MIN && v <= INT32_MAX;
  }
  return 1;
}

static void test_cast_converts_every_pair_of_dtypes_with_truncation_saturation_and_nan_to_zero(
    void **state) {
  (void)state;
  for (int f = 0; f < COUNT(kAllDtypes); ++f) {
    for (int t = 0; t < COUNT(kAllDtypes); ++t) {
      tsr_dtype_t from = kAllDtypes[f], to = kAllDtypes[t];
      unsigned char all[CAST_MAX * 8], src[CAST_MAX * 8], want[CAST_MAX * 8];
      int total = cast_sources(from, all), n = 0;
      size_t fe = tsr_dtype_size(from), te = tsr_dtype_size(to);
      for (int i = 0; i < total; ++i) {
        if (!cast_value_specified(from, all + i * fe, to)) continue;
        memcpy(src + n * fe, all + i * fe, fe);
        orc_cast_element(from, src + n * fe, to, want + n * te);
        ++n;
      }
      char what[96];
      tsr_tensor *x = make_raw(from, n, src);
      snprintf(what, sizeof(what), "cast %s -> %s", ts_dtype_name(from), ts_dtype_name(to));
      tsr_tensor *y = tsr_cast(x, to);
      TS_ASSERT_TENSOR(y);
      assert_int_equal(tsr_tensor_dtype(y), to);
      expect_raw(what, y, want, n);
      tsr_tensor_release(y);
      // The same through copy_ into a preallocated tensor of the target dtype.
      snprintf(what, sizeof(what), "copy_ %s -> %s", ts_dtype_name(from), ts_dtype_name(to));
      int64_t sizes[1] = {n};
      tsr_tensor *dst = tsr_tensor_empty(g_device, to, 1, sizes);
      TS_ASSERT_TENSOR(dst);
      TS_ASSERT_OK(tsr_copy_(dst, x));
      expect_raw(what, dst, want, n);
      tsr_tensor_release(dst);
      tsr_tensor_release(x);
    }
  }
}

static void test_cast_reads_a_transposed_view(void **state) {
  (void)state;
  const int64_t sizes[2] = {3, 5};
  double x[15], want[15];
  ts_rng rng = {11};
  ts_rng_fill(&rng, TSR_FLOAT64, -100, 100, x, 15);
  tsr_tensor *base = make(TSR_FLOAT64, 2, sizes, x);
  tsr_tensor *xt = tsr_transpose(base, 0, 1);
  TS_ASSERT_TENSOR(xt);
  tsr_tensor *y = tsr_cast(xt, TSR_INT32);
  orc_view v = orc_view_transpose(orc_view_contiguous(2, sizes), 0, 1);
  orc_view_gather(&v, x, want);
  for (int i = 0; i < 15; ++i) want[i] = trunc(want[i]);
  const int64_t ysizes[2] = {5, 3};
  expect_default("cast of a transpose to int32", y, 2, ysizes, want);
  tsr_tensor_release(y);
  tsr_tensor_release(xt);
  tsr_tensor_release(base);
}

static void test_copy_broadcasts_its_source_in_every_dtype(void **state) {
  (void)state;
  const int64_t row_sizes[1] = {4}, sizes[2] = {3, 4};
  const double row[4] = {1, 0, 3, -4};
  double want[12];
  for (int i = 0; i < 12; ++i) want[i] = row[i % 4];
  for (int d = 0; d < COUNT(kAllDtypes); ++d) {
    tsr_dtype_t dtype = kAllDtypes[d];
    double w[12];
    for (int i = 0; i < 12; ++i) w[i] = dtype == TSR_BOOL ? (want[i] != 0) : want[i];
    tsr_tensor *src = make(dtype, 1, row_sizes, row);
    tsr_tensor *dst = tsr_tensor_empty(g_device, dtype, 2, sizes);
    TS_ASSERT_TENSOR(dst);
    TS_ASSERT_OK(tsr_copy_(dst, src));
    expect_default("copy_ of a row into a matrix", dst, 2, sizes, w);
    tsr_tensor_release(dst);
    tsr_tensor_release(src);
  }
}

static void test_copy_writes_through_a_strided_destination_and_reads_a_permuted_source(
    void **state) {
  (void)state;
  // dst: columns 0, 2, 4 of a [4, 6] base; src: a [3, 4] permuted to [4, 3].
  const int64_t base_sizes[2] = {4, 6}, src_sizes[2] = {3, 4};
  double base_values[24], src_values[12], gathered[12];
  ts_rng rng = {5};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    ts_rng_fill(&rng, dtype, -50, 50, base_values, 24);
    ts_rng_fill(&rng, dtype, -50, 50, src_values, 12);
    tsr_tensor *base = make(dtype, 2, base_sizes, base_values);
    tsr_tensor *src = make(dtype, 2, src_sizes, src_values);
    tsr_tensor *dst = tsr_slice(base, 1, 0, 6, 2);
    const int32_t dims[2] = {1, 0};
    tsr_tensor *srcp = tsr_permute(src, 2, dims);
    TS_ASSERT_TENSOR(dst);
    TS_ASSERT_TENSOR(srcp);
    TS_ASSERT_OK(tsr_copy_(dst, srcp));
    orc_view sv = orc_view_permute(orc_view_contiguous(2, src_sizes), dims);
    orc_view_gather(&sv, src_values, gathered);
    orc_view dv = orc_view_slice(orc_view_contiguous(2, base_sizes), 1, 0, 6, 2);
    orc_view_scatter(&dv, base_values, gathered);
    expect_default("copy_ of a permute into a step-2 slice, read through the base", base, 2,
                   base_sizes, base_values);
    tsr_tensor_release(srcp);
    tsr_tensor_release(dst);
    tsr_tensor_release(src);
    tsr_tensor_release(base);
  }
}

static void test_contiguous_returns_the_same_storage_when_packed_and_a_copy_otherwise(
    void **state) {
  (void)state;
  const int64_t sizes[3] = {2, 3, 4};
  double x[24], want[24];
  for (int i = 0; i < 24; ++i) x[i] = i;
  tsr_tensor *t = make(TSR_FLOAT32, 3, sizes, x);
  tsr_tensor *same = tsr_contiguous(t);
  TS_ASSERT_TENSOR(same);
  assert_true(tsr_tensor_shares_storage(t, same));
  expect_default("contiguous of a contiguous tensor", same, 3, sizes, x);
  const int32_t dims[3] = {2, 0, 1};
  tsr_tensor *p = tsr_permute(t, 3, dims);
  TS_ASSERT_TENSOR(p);
  assert_false(tsr_tensor_is_contiguous(p));
  tsr_tensor *packed = tsr_contiguous(p);
  TS_ASSERT_TENSOR(packed);
  assert_true(tsr_tensor_is_contiguous(packed));
  assert_false(tsr_tensor_shares_storage(p, packed));
  orc_view v = orc_view_permute(orc_view_contiguous(3, sizes), dims);
  orc_view_gather(&v, x, want);
  const int64_t psizes[3] = {4, 2, 3};
  expect_default("contiguous of a permute", packed, 3, psizes, want);
  tsr_tensor_release(packed);
  tsr_tensor_release(p);
  tsr_tensor_release(same);
  tsr_tensor_release(t);
}

// ============================================================================
// UNARY

static const char *unary_name(tsr_unary_fn_t fn) {
  static const char *names[TSR_UNARY_FN_COUNT] = {
      "neg",  "abs",     "exp",  "log",       "sqrt",       "rsqrt", "reciprocal",
      "square", "sin",   "cos",  "tanh",      "sigmoid",    "relu",  "gelu",
      "gelu_tanh", "silu", "leaky_relu", "elu", "sign",     "floor", "ceil",
      "round", "logical_not", "log1p", "expm1", "erf"};
  return fn >= 0 && fn < TSR_UNARY_FN_COUNT ? names[fn] : "?";
}

static double unary_alpha(tsr_unary_fn_t fn) {
  return fn == TSR_UNARY_LEAKY_RELU ? 0.1 : fn == TSR_UNARY_ELU ? 1.3 : 0.0;
}

// Inputs inside |fn|'s domain, away from points where it is not smooth
// (unless |with_kinks|), with halves for the rounding functions.
static void unary_inputs(tsr_unary_fn_t fn, tsr_dtype_t dtype, double *x, int64_t n,
                         int with_kinks, ts_rng *rng) {
  for (int64_t i = 0; i < n; ++i) {
    double v;
    switch (fn) {
      case TSR_UNARY_LOG:
      case TSR_UNARY_SQRT:
      case TSR_UNARY_RSQRT: v = ts_rng_value(rng, dtype, 0.05, 5.0); break;
      case TSR_UNARY_LOG1P: v = ts_rng_value(rng, dtype, -0.9, 5.0); break;
      case TSR_UNARY_RECIPROCAL:
        v = ts_rng_value(rng, dtype, 0.1, 4.0) * (i % 2 ? -1 : 1);
        break;
      case TSR_UNARY_EXP:
      case TSR_UNARY_EXPM1: v = ts_rng_value(rng, dtype, -5.0, 5.0); break;
      case TSR_UNARY_FLOOR:
      case TSR_UNARY_CEIL:
      case TSR_UNARY_ROUND:
        v = i % 2 ? (double)((int64_t)(i % 21) - 10) / 2.0 : ts_rng_value(rng, dtype, -5, 5);
        break;
      default: v = ts_rng_value(rng, dtype, -4.0, 4.0); break;
    }
    if (!with_kinks && (fn == TSR_UNARY_ABS || fn == TSR_UNARY_RELU ||
                        fn == TSR_UNARY_LEAKY_RELU || fn == TSR_UNARY_ELU) &&
        fabs(v) < 1e-3) {
      v = 0.5;
    }
    x[i] = v;
  }
  if (with_kinks && n > 3 &&
      (fn == TSR_UNARY_ABS || fn == TSR_UNARY_RELU || fn == TSR_UNARY_SIGN)) {
    x[3] = 0.0;  // f'(0) = 0 for ABS and RELU, sign(0) = 0
  }
}

static void test_unary_matches_float64_loops_for_every_function_on_float32_and_float64(
    void **state) {
  (void)state;
  const int64_t sizes[2] = {5, 7};
  double x[35], want[35];
  ts_rng rng = {1};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_dtype_t dtype = kFloatDtypes[d];
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (!orc_unary_allows(fn, dtype)) continue;
      unary_inputs(fn, dtype, x, 35, 1, &rng);
      double alpha = unary_alpha(fn);
      for (int i = 0; i < 35; ++i) want[i] = orc_unary(fn, x[i], alpha);
      tsr_tensor *t = make(dtype, 2, sizes, x);
      tsr_tensor *y = tsr_unary(t, fn, alpha);
      expect_default(unary_name(fn), y, 2, sizes, want);
      tsr_tensor_release(y);
      tsr_tensor_release(t);
    }
  }
}

static void test_unary_keeps_nan_and_rounds_halves_to_even(void **state) {
  (void)state;
  const double x[8] = {NAN, 2.5, -2.5, 0.5, -0.5, 1.5, -0.0, 3.0};
  const int64_t sizes[1] = {8};
  const tsr_unary_fn_t fns[] = {TSR_UNARY_RELU, TSR_UNARY_SIGN, TSR_UNARY_ROUND,
                                TSR_UNARY_ABS, TSR_UNARY_NEG, TSR_UNARY_FLOOR, TSR_UNARY_CEIL};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_tensor *t = make(kFloatDtypes[d], 1, sizes, x);
    for (int k = 0; k < COUNT(fns); ++k) {
      double want[8];
      for (int i = 0; i < 8; ++i) want[i] = orc_unary(fns[k], x[i], 0.0);
      tsr_tensor *y = tsr_unary(t, fns[k], 0.0);
      expect_default(unary_name(fns[k]), y, 1, sizes, want);
      tsr_tensor_release(y);
    }
    tsr_tensor_release(t);
  }
}

static void test_unary_integer_functions_are_exact_on_int32_and_int64(void **state) {
  (void)state;
  const int64_t sizes[2] = {4, 6};
  double x[24], want[24];
  ts_rng rng = {2};
  const tsr_dtype_t ints[2] = {TSR_INT32, TSR_INT64};
  for (int d = 0; d < 2; ++d) {
    ts_rng_fill(&rng, ints[d], -1000, 1000, x, 24);
    x[0] = 0;
    x[1] = -1;
    x[2] = 1;
    tsr_tensor *t = make(ints[d], 2, sizes, x);
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (!orc_unary_allows(fn, ints[d])) continue;
      for (int i = 0; i < 24; ++i) want[i] = (double)orc_unary_int(fn, (int64_t)x[i]);
      tsr_tensor *y = tsr_unary(t, fn, 0.0);
      expect_default(unary_name(fn), y, 2, sizes, want);
      assert_int_equal(tsr_tensor_dtype(y), ints[d]);
      tsr_tensor_release(y);
    }
    tsr_tensor_release(t);
  }
}

static void test_unary_logical_not_inverts_bools(void **state) {
  (void)state;
  const double x[5] = {0, 1, 1, 0, 1}, want[5] = {1, 0, 0, 1, 0};
  const int64_t sizes[1] = {5};
  tsr_tensor *t = make(TSR_BOOL, 1, sizes, x);
  tsr_tensor *y = tsr_unary(t, TSR_UNARY_LOGICAL_NOT, 0.0);
  expect_default("logical_not", y, 1, sizes, want);
  assert_int_equal(tsr_tensor_dtype(y), TSR_BOOL);
  tsr_tensor_release(y);
  tsr_tensor_release(t);
}

static void test_unary_refuses_a_function_on_a_dtype_ops_h_does_not_allow(void **state) {
  (void)state;
  const int64_t sizes[1] = {3};
  const double x[3] = {1, 2, 3};
  for (int d = 0; d < COUNT(kAllDtypes); ++d) {
    tsr_tensor *t = make(kAllDtypes[d], 1, sizes, x);
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (orc_unary_allows(fn, kAllDtypes[d])) continue;
      tsr_last_error_clear();
      tsr_tensor *y = tsr_unary(t, fn, 0.0);
      if (y != NULL) {
        fail_msg("unary %s on %s was accepted", unary_name(fn), ts_dtype_name(kAllDtypes[d]));
      }
      assert_true(tsr_last_error()[0] != '\0');
    }
    tsr_tensor_release(t);
  }
  tsr_context_error_clear(g_context);
}

static void test_unary_reads_transposed_sliced_and_permuted_views(void **state) {
  (void)state;
  const int64_t sizes[3] = {3, 4, 6};
  double x[72], gathered[72], want[72];
  ts_rng rng = {3};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    tsr_unary_fn_t fn = orc_is_float(dtype) ? TSR_UNARY_EXP : TSR_UNARY_NEG;
    ts_rng_fill(&rng, dtype, -3, 3, x, 72);
    tsr_tensor *base = make(dtype, 3, sizes, x);
    orc_view c = orc_view_contiguous(3, sizes);
    const int32_t dims[3] = {2, 0, 1};
    orc_view views[3] = {orc_view_transpose(c, 0, 2), orc_view_slice(c, 2, 1, 6, 2),
                         orc_view_permute(c, dims)};
    tsr_tensor *tv[3] = {tsr_transpose(base, 0, 2), tsr_slice(base, 2, 1, 6, 2),
                         tsr_permute(base, 3, dims)};
    const char *names[3] = {"unary of a transpose", "unary of a step-2 slice",
                            "unary of a permute"};
    for (int k = 0; k < 3; ++k) {
      TS_ASSERT_TENSOR(tv[k]);
      int64_t n = orc_numel(3, views[k].sizes);
      orc_view_gather(&views[k], x, gathered);
      for (int64_t i = 0; i < n; ++i) {
        want[i] = orc_is_float(dtype) ? orc_unary(fn, gathered[i], 0)
                                      : (double)orc_unary_int(fn, (int64_t)gathered[i]);
      }
      tsr_tensor *y = tsr_unary(tv[k], fn, 0.0);
      expect_default(names[k], y, 3, views[k].sizes, want);
      tsr_tensor_release(y);
      tsr_tensor_release(tv[k]);
    }
    tsr_tensor_release(base);
  }
}

static void test_unary_out_runs_in_place_and_bumps_the_storage_version(void **state) {
  (void)state;
  const int64_t sizes[2] = {6, 5};
  double x[30], want[30];
  ts_rng rng = {4};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    ts_rng_fill(&rng, kFloatDtypes[d], -2, 2, x, 30);
    for (int i = 0; i < 30; ++i) want[i] = tanh(x[i]);
    tsr_tensor *t = make(kFloatDtypes[d], 2, sizes, x);
    uint64_t before = tsr_tensor_storage_version(t);
    TS_ASSERT_OK(tsr_unary_out(t, t, TSR_UNARY_TANH, 0.0));
    assert_true(tsr_tensor_storage_version(t) > before);
    expect_default("tanh in place", t, 2, sizes, want);
    tsr_tensor_release(t);
  }
}

// ============================================================================
// UNARY_BACKWARD

static void test_unary_backward_matches_the_analytic_derivative_for_every_function(void **state) {
  (void)state;
  const int64_t sizes[2] = {4, 8};
  double x[32], dy[32], want[32];
  ts_rng rng = {6};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_dtype_t dtype = kFloatDtypes[d];
    for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
      if (!orc_unary_has_backward(fn)) continue;
      int kinks = fn == TSR_UNARY_ABS || fn == TSR_UNARY_RELU;  // f'(0) = 0 is specified
      unary_inputs(fn, dtype, x, 32, kinks, &rng);
      ts_rng_fill(&rng, dtype, -2, 2, dy, 32);
      double alpha = unary_alpha(fn);
      for (int i = 0; i < 32; ++i) want[i] = dy[i] * orc_unary_derivative(fn, x[i], alpha);
      tsr_tensor *tdy = make(dtype, 2, sizes, dy);
      tsr_tensor *tx = make(dtype, 2, sizes, x);
      tsr_tensor *dx = tsr_unary_backward(tdy, tx, fn, alpha);
      char what[64];
      snprintf(what, sizeof(what), "%s backward", unary_name(fn));
      // float32 derivatives lose a few more bits (1 - tanh^2 near saturation).
      expect_tensor(what, dx, 2, sizes, want, NULL, dtype == TSR_FLOAT32 ? 1e-5 : 1e-12,
                    dtype == TSR_FLOAT32 ? 2e-6 : 1e-12);
      tsr_tensor_release(dx);
      tsr_tensor_release(tx);
      tsr_tensor_release(tdy);
    }
  }
}

static void test_unary_backward_refuses_functions_without_a_derivative_and_integers(
    void **state) {
  (void)state;
  const int64_t sizes[1] = {3};
  const double x[3] = {1, 2, 3};
  tsr_tensor *f = make(TSR_FLOAT32, 1, sizes, x);
  for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
    if (orc_unary_has_backward(fn)) continue;
    tsr_tensor *dx = tsr_unary_backward(f, f, fn, 0.0);
    if (dx != NULL) fail_msg("unary_backward of %s was accepted", unary_name(fn));
  }
  tsr_tensor *i = make(TSR_INT32, 1, sizes, x);
  assert_null(tsr_unary_backward(i, i, TSR_UNARY_NEG, 0.0));
  assert_true(tsr_last_error()[0] != '\0');
  tsr_tensor_release(i);
  tsr_tensor_release(f);
  tsr_context_error_clear(g_context);
}

// ============================================================================
// BINARY

static const char *binary_name(tsr_binary_fn_t fn) {
  static const char *names[TSR_BINARY_FN_COUNT] = {"add", "sub", "mul", "div", "maximum",
                                                   "minimum", "pow", "logical_and",
                                                   "logical_or", "logical_xor"};
  return fn >= 0 && fn < TSR_BINARY_FN_COUNT ? names[fn] : "?";
}

static void binary_inputs(tsr_binary_fn_t fn, tsr_dtype_t dtype, double *a, double *b, int64_t n,
                          ts_rng *rng) {
  for (int64_t i = 0; i < n; ++i) {
    if (orc_is_int(dtype)) {
      a[i] = ts_rng_value(rng, dtype, -50, 51);
      b[i] = ts_rng_value(rng, dtype, -9, 10);  // includes 0: int x / 0 = 0
    } else if (dtype == TSR_BOOL) {
      a[i] = ts_rng_value(rng, dtype, 0, 1);
      b[i] = ts_rng_value(rng, dtype, 0, 1);
    } else if (fn == TSR_BINARY_POW) {
      a[i] = ts_rng_value(rng, dtype, 0.1, 3.0);
      b[i] = ts_rng_value(rng, dtype, -2.0, 2.0);
    } else if (fn == TSR_BINARY_DIV) {
      a[i] = ts_rng_value(rng, dtype, -3.0, 3.0);
      b[i] = ts_rng_value(rng, dtype, 0.5, 3.0) * (i % 3 ? 1 : -1);
    } else {
      a[i] = ts_rng_value(rng, dtype, -3.0, 3.0);
      b[i] = i % 7 == 0 ? a[i] : ts_rng_value(rng, dtype, -3.0, 3.0);  // some ties
    }
  }
}

static void binary_expect(tsr_binary_fn_t fn, tsr_dtype_t dtype, const double *a, const double *b,
                          double alpha, double *want, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (orc_is_int(dtype)) {
      want[i] = (double)orc_binary_int(fn, (int64_t)a[i], (int64_t)b[i], (int64_t)alpha);
    } else {
      want[i] = orc_binary(fn, a[i], b[i], alpha);
    }
  }
}

static void test_binary_matches_float64_loops_for_every_function_and_dtype(void **state) {
  (void)state;
  const int64_t sizes[2] = {4, 5};
  double a[20], b[20], want[20];
  ts_rng rng = {7};
  for (int d = 0; d < COUNT(kAllDtypes); ++d) {
    tsr_dtype_t dtype = kAllDtypes[d];
    for (tsr_binary_fn_t fn = 0; fn < TSR_BINARY_FN_COUNT; ++fn) {
      if (!orc_binary_allows(fn, dtype)) continue;
      binary_inputs(fn, dtype, a, b, 20, &rng);
      const double float_alphas[3] = {1.0, 2.5, -0.75}, int_alphas[3] = {1.0, 3.0, -2.0};
      int alphas = (fn == TSR_BINARY_ADD || fn == TSR_BINARY_SUB) ? 3 : 1;
      tsr_tensor *ta = make(dtype, 2, sizes, a);
      tsr_tensor *tb = make(dtype, 2, sizes, b);
      for (int k = 0; k < alphas; ++k) {
        double alpha = orc_is_int(dtype) ? int_alphas[k] : float_alphas[k];
        binary_expect(fn, dtype, a, b, alpha, want, 20);
        tsr_tensor *y = tsr_binary(ta, tb, fn, alpha);
        char what[64];
        snprintf(what, sizeof(what), "%s alpha %g", binary_name(fn), alpha);
        expect_default(what, y, 2, sizes, want);
        assert_int_equal(tsr_tensor_dtype(y), dtype);
        tsr_tensor_release(y);
      }
      tsr_tensor_release(tb);
      tsr_tensor_release(ta);
    }
  }
}

static void test_binary_integer_division_truncates_toward_zero_and_gives_zero_for_zero_divisors(
    void **state) {
  (void)state;
  const double a[9] = {7, -7, 7, -7, 5, -5, 0, 1, -1};
  const double b[9] = {2, 2, -2, -2, 0, 0, 0, 3, 3};
  const double want[9] = {3, -3, -3, 3, 0, 0, 0, 0, 0};
  const int64_t sizes[1] = {9};
  const tsr_dtype_t ints[2] = {TSR_INT32, TSR_INT64};
  for (int d = 0; d < 2; ++d) {
    tsr_tensor *ta = make(ints[d], 1, sizes, a);
    tsr_tensor *tb = make(ints[d], 1, sizes, b);
    tsr_tensor *y = tsr_div(ta, tb);
    expect_default("integer division", y, 1, sizes, want);
    tsr_tensor_release(y);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
  }
}

static void test_binary_maximum_and_minimum_propagate_nan(void **state) {
  (void)state;
  const double a[4] = {NAN, 1.0, NAN, 2.0}, b[4] = {1.0, NAN, NAN, -3.0};
  const double wmax[4] = {NAN, NAN, NAN, 2.0}, wmin[4] = {NAN, NAN, NAN, -3.0};
  const int64_t sizes[1] = {4};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_tensor *ta = make(kFloatDtypes[d], 1, sizes, a);
    tsr_tensor *tb = make(kFloatDtypes[d], 1, sizes, b);
    tsr_tensor *mx = tsr_maximum(ta, tb);
    tsr_tensor *mn = tsr_minimum(ta, tb);
    expect_default("maximum with NaN", mx, 1, sizes, wmax);
    expect_default("minimum with NaN", mn, 1, sizes, wmin);
    tsr_tensor_release(mn);
    tsr_tensor_release(mx);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
  }
}

static void test_binary_broadcasts_a_column_against_a_row_and_a_vector_against_a_cube(
    void **state) {
  (void)state;
  ts_rng rng = {8};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    // [3, 1] - [1, 4] -> [3, 4]
    {
      const int64_t sa[2] = {3, 1}, sb[2] = {1, 4}, so[2] = {3, 4};
      double a[3], b[4], want[12];
      ts_rng_fill(&rng, dtype, -9, 9, a, 3);
      ts_rng_fill(&rng, dtype, -9, 9, b, 4);
      for (int64_t i = 0; i < 12; ++i) {
        want[i] = a[orc_broadcast_index(2, sa, 2, so, i)] - b[orc_broadcast_index(2, sb, 2, so, i)];
      }
      tsr_tensor *ta = make(dtype, 2, sa, a);
      tsr_tensor *tb = make(dtype, 2, sb, b);
      tsr_tensor *y = tsr_sub(ta, tb);
      expect_default("[3,1] - [1,4]", y, 2, so, want);
      tsr_tensor_release(y);
      tsr_tensor_release(tb);
      tsr_tensor_release(ta);
    }
    // [2, 3, 4] * [4] -> [2, 3, 4]
    {
      const int64_t sa[3] = {2, 3, 4}, sb[1] = {4};
      double a[24], b[4], want[24];
      ts_rng_fill(&rng, dtype, -9, 9, a, 24);
      ts_rng_fill(&rng, dtype, -9, 9, b, 4);
      for (int64_t i = 0; i < 24; ++i) want[i] = a[i] * b[orc_broadcast_index(1, sb, 3, sa, i)];
      tsr_tensor *ta = make(dtype, 3, sa, a);
      tsr_tensor *tb = make(dtype, 1, sb, b);
      tsr_tensor *y = tsr_mul(ta, tb);
      expect_default("[2,3,4] * [4]", y, 3, sa, want);
      tsr_tensor_release(y);
      // And the other way round, [4] * [2, 3, 4].
      y = tsr_mul(tb, ta);
      expect_default("[4] * [2,3,4]", y, 3, sa, want);
      tsr_tensor_release(y);
      tsr_tensor_release(tb);
      tsr_tensor_release(ta);
    }
    // An explicit expand view: [4] expanded to [3, 4], plus a [3, 4].
    {
      const int64_t sr[1] = {4}, so[2] = {3, 4};
      double r[4], m[12], want[12];
      ts_rng_fill(&rng, dtype, -9, 9, r, 4);
      ts_rng_fill(&rng, dtype, -9, 9, m, 12);
      for (int i = 0; i < 12; ++i) want[i] = r[i % 4] + m[i];
      tsr_tensor *tr = make(dtype, 1, sr, r);
      tsr_tensor *tm = make(dtype, 2, so, m);
      tsr_tensor *e = tsr_expand(tr, 2, so);
      TS_ASSERT_TENSOR(e);
      assert_int_equal(tsr_tensor_stride(e, 0), 0);
      tsr_tensor *y = tsr_add(e, tm);
      expect_default("expand([4] -> [3,4]) + [3,4]", y, 2, so, want);
      tsr_tensor_release(y);
      tsr_tensor_release(e);
      tsr_tensor_release(tm);
      tsr_tensor_release(tr);
    }
  }
}

static void test_binary_reads_transposed_sliced_and_permuted_views(void **state) {
  (void)state;
  const int64_t sizes[3] = {4, 3, 6};
  double x[72], y[72], ga[72], gb[72], want[72];
  ts_rng rng = {9};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    ts_rng_fill(&rng, dtype, -9, 9, x, 72);
    ts_rng_fill(&rng, dtype, -9, 9, y, 72);
    tsr_tensor *bx = make(dtype, 3, sizes, x);
    tsr_tensor *by = make(dtype, 3, sizes, y);
    orc_view c = orc_view_contiguous(3, sizes);
    // a: permute {1, 2, 0} of x -> [3, 6, 4]; b: y's [3, 6, 4] through a
    // transpose of a contiguous [4, 6, 3] is not available, so use a slice and
    // a permute that land on the same shape.
    const int32_t pa[3] = {1, 2, 0};
    orc_view va = orc_view_permute(c, pa);
    tsr_tensor *a = tsr_permute(bx, 3, pa);
    // b: transpose(0, 2) of y is [6, 3, 4]; then transpose(0, 1) -> [3, 6, 4].
    orc_view vb = orc_view_transpose(orc_view_transpose(c, 0, 2), 0, 1);
    tsr_tensor *t1 = tsr_transpose(by, 0, 2);
    TS_ASSERT_TENSOR(t1);
    tsr_tensor *b = tsr_transpose(t1, 0, 1);
    TS_ASSERT_TENSOR(a);
    TS_ASSERT_TENSOR(b);
    orc_view_gather(&va, x, ga);
    orc_view_gather(&vb, y, gb);
    for (int i = 0; i < 72; ++i) want[i] = ga[i] + gb[i];
    tsr_tensor *out = tsr_add(a, b);
    expect_default("permute + double transpose", out, 3, va.sizes, want);
    tsr_tensor_release(out);
    // Step-2 slices of both, on different dims but the same shape [4, 3, 3].
    orc_view sa = orc_view_slice(c, 2, 0, 6, 2), sb = orc_view_slice(c, 2, 1, 6, 2);
    tsr_tensor *xa = tsr_slice(bx, 2, 0, 6, 2);
    tsr_tensor *yb = tsr_slice(by, -1, -5, 6, 2);  // same as 1:6:2
    TS_ASSERT_TENSOR(xa);
    TS_ASSERT_TENSOR(yb);
    orc_view_gather(&sa, x, ga);
    orc_view_gather(&sb, y, gb);
    for (int i = 0; i < 36; ++i) {
      want[i] = orc_is_int(dtype) ? (double)orc_binary_int(TSR_BINARY_MUL, (int64_t)ga[i], (int64_t)gb[i], 1)
                                  : ga[i] * gb[i];
    }
    out = tsr_mul(xa, yb);
    expect_default("step-2 slice * step-2 slice", out, 3, sa.sizes, want);
    tsr_tensor_release(out);
    tsr_tensor_release(yb);
    tsr_tensor_release(xa);
    tsr_tensor_release(b);
    tsr_tensor_release(t1);
    tsr_tensor_release(a);
    tsr_tensor_release(by);
    tsr_tensor_release(bx);
  }
}

static void test_binary_handles_size_zero_size_one_and_rank_zero_tensors(void **state) {
  (void)state;
  // [0, 3] + [1, 3] -> [0, 3]
  const int64_t s0[2] = {0, 3}, s1[2] = {1, 3};
  const double row[3] = {1, 2, 3};
  tsr_tensor *e = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, s0);
  TS_ASSERT_TENSOR(e);
  tsr_tensor *r = make(TSR_FLOAT32, 2, s1, row);
  tsr_tensor *y = tsr_add(e, r);
  TS_ASSERT_TENSOR(y);
  expect_shape("[0,3] + [1,3]", y, 2, s0);
  assert_int_equal(tsr_tensor_numel(y), 0);
  TS_ASSERT_OK(tsr_tensor_to_host(y, NULL, 0));
  tsr_tensor_release(y);
  tsr_tensor_release(r);
  tsr_tensor_release(e);
  // [1] * [1]
  const int64_t one[1] = {1};
  const double a1 = 3.0, b1 = -2.0, w1 = -6.0;
  tsr_tensor *ta = make(TSR_FLOAT64, 1, one, &a1);
  tsr_tensor *tb = make(TSR_FLOAT64, 1, one, &b1);
  y = tsr_mul(ta, tb);
  expect_default("[1] * [1]", y, 1, one, &w1);
  tsr_tensor_release(y);
  tsr_tensor_release(tb);
  tsr_tensor_release(ta);
  // rank 0 + [3] -> [3]; rank 0 + rank 0 -> rank 0
  const double s = 10.0, v3[3] = {1, 2, 3}, w3[3] = {11, 12, 13}, w0 = 20.0;
  const int64_t three[1] = {3};
  tsr_tensor *sc = make(TSR_INT64, 0, NULL, &s);
  tsr_tensor *vec = make(TSR_INT64, 1, three, v3);
  y = tsr_add(sc, vec);
  expect_default("scalar + [3]", y, 1, three, w3);
  tsr_tensor_release(y);
  y = tsr_add(sc, sc);
  expect_default("scalar + scalar", y, 0, NULL, &w0);
  tsr_tensor_release(y);
  tsr_tensor_release(vec);
  tsr_tensor_release(sc);
}

static void test_binary_out_runs_in_place_on_either_input(void **state) {
  (void)state;
  const int64_t sizes[2] = {3, 7};
  double a[21], b[21], want[21];
  ts_rng rng = {10};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    ts_rng_fill(&rng, dtype, -20, 20, a, 21);
    ts_rng_fill(&rng, dtype, -20, 20, b, 21);
    tsr_tensor *ta = make(dtype, 2, sizes, a);
    tsr_tensor *tb = make(dtype, 2, sizes, b);
    uint64_t va = tsr_tensor_storage_version(ta), vb = tsr_tensor_storage_version(tb);
    // a += 2 b
    TS_ASSERT_OK(tsr_binary_out(ta, ta, tb, TSR_BINARY_ADD, 2.0));
    for (int i = 0; i < 21; ++i) want[i] = a[i] + 2.0 * b[i];
    expect_default("binary_out(a, a, b, add, 2)", ta, 2, sizes, want);
    assert_true(tsr_tensor_storage_version(ta) > va);
    assert_int_equal(tsr_tensor_storage_version(tb), vb);
    // b = a - b, with out == b
    double a2[21];
    memcpy(a2, want, sizeof(a2));
    TS_ASSERT_OK(tsr_binary_out(tb, ta, tb, TSR_BINARY_SUB, 1.0));
    for (int i = 0; i < 21; ++i) want[i] = a2[i] - b[i];
    expect_default("binary_out(b, a, b, sub)", tb, 2, sizes, want);
    assert_true(tsr_tensor_storage_version(tb) > vb);
    // a = a * a
    TS_ASSERT_OK(tsr_binary_out(ta, ta, ta, TSR_BINARY_MUL, 1.0));
    for (int i = 0; i < 21; ++i) want[i] = a2[i] * a2[i];
    expect_default("binary_out(a, a, a, mul)", ta, 2, sizes, want);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
  }
}

static void test_binary_out_writes_through_a_transposed_output(void **state) {
  (void)state;
  const int64_t base_sizes[2] = {5, 3}, sizes[2] = {3, 5};
  double base[15] = {0}, a[15], b[15], sum[15];
  ts_rng rng = {12};
  ts_rng_fill(&rng, TSR_FLOAT32, -5, 5, a, 15);
  ts_rng_fill(&rng, TSR_FLOAT32, -5, 5, b, 15);
  tsr_tensor *tbase = make(TSR_FLOAT32, 2, base_sizes, base);
  tsr_tensor *out = tsr_transpose(tbase, 0, 1);
  tsr_tensor *ta = make(TSR_FLOAT32, 2, sizes, a);
  tsr_tensor *tb = make(TSR_FLOAT32, 2, sizes, b);
  TS_ASSERT_TENSOR(out);
  TS_ASSERT_OK(tsr_binary_out(out, ta, tb, TSR_BINARY_ADD, 1.0));
  for (int i = 0; i < 15; ++i) sum[i] = a[i] + b[i];
  orc_view v = orc_view_transpose(orc_view_contiguous(2, base_sizes), 0, 1);
  orc_view_scatter(&v, base, sum);
  expect_default("binary_out into a transpose, read through the base", tbase, 2, base_sizes,
                 base);
  tsr_tensor_release(tb);
  tsr_tensor_release(ta);
  tsr_tensor_release(out);
  tsr_tensor_release(tbase);
}

// ============================================================================
// COMPARE, WHERE, CLAMP

static void test_compare_matches_float64_loops_with_nan_false_except_not_equal(void **state) {
  (void)state;
  const int64_t sa[2] = {4, 1}, sb[2] = {1, 5}, so[2] = {4, 5};
  double a[4], b[5], want[20];
  ts_rng rng = {13};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    ts_rng_fill(&rng, dtype, -3, 3, a, 4);
    ts_rng_fill(&rng, dtype, -3, 3, b, 5);
    b[1] = a[0];  // a tie
    b[2] = a[2];
    if (orc_is_float(dtype)) {
      a[3] = NAN;
      b[4] = NAN;
    }
    tsr_tensor *ta = make(dtype, 2, sa, a);
    tsr_tensor *tb = make(dtype, 2, sb, b);
    for (tsr_compare_fn_t fn = 0; fn < TSR_COMPARE_FN_COUNT; ++fn) {
      for (int64_t i = 0; i < 20; ++i) {
        want[i] = orc_compare(fn, a[orc_broadcast_index(2, sa, 2, so, i)],
                              b[orc_broadcast_index(2, sb, 2, so, i)]);
      }
      tsr_tensor *y = tsr_compare(ta, tb, fn);
      TS_ASSERT_TENSOR(y);
      assert_int_equal(tsr_tensor_dtype(y), TSR_BOOL);
      char what[48];
      snprintf(what, sizeof(what), "compare fn %d", fn);
      expect_default(what, y, 2, so, want);
      tsr_tensor_release(y);
    }
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
  }
}

static void test_where_selects_with_broadcasting_in_every_dtype(void **state) {
  (void)state;
  const int64_t sc[2] = {3, 1}, sa[2] = {1, 4}, sb[2] = {3, 4};
  const double cond[3] = {1, 0, 1};
  double a[4], b[12], want[12];
  ts_rng rng = {14};
  for (int d = 0; d < COUNT(kAllDtypes); ++d) {
    tsr_dtype_t dtype = kAllDtypes[d];
    ts_rng_fill(&rng, dtype, -9, 9, a, 4);
    ts_rng_fill(&rng, dtype, -9, 9, b, 12);
    for (int64_t i = 0; i < 12; ++i) {
      want[i] = cond[orc_broadcast_index(2, sc, 2, sb, i)] ? a[orc_broadcast_index(2, sa, 2, sb, i)]
                                                           : b[i];
    }
    tsr_tensor *tc = make(TSR_BOOL, 2, sc, cond);
    tsr_tensor *ta = make(dtype, 2, sa, a);
    tsr_tensor *tb = make(dtype, 2, sb, b);
    tsr_tensor *y = tsr_where(tc, ta, tb);
    expect_default("where([3,1], [1,4], [3,4])", y, 2, sb, want);
    assert_int_equal(tsr_tensor_dtype(y), dtype);
    tsr_tensor_release(y);
    // A rank-0 b broadcast everywhere.
    double s = 1.0;
    tsr_tensor *ts = make(dtype, 0, NULL, &s);
    for (int64_t i = 0; i < 12; ++i) {
      want[i] = cond[orc_broadcast_index(2, sc, 2, sb, i)] ? a[orc_broadcast_index(2, sa, 2, sb, i)]
                                                           : 1.0;
    }
    const int64_t so[2] = {3, 4};
    y = tsr_where(tc, ta, ts);
    expect_default("where([3,1], [1,4], scalar)", y, 2, so, want);
    tsr_tensor_release(y);
    tsr_tensor_release(ts);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
    tsr_tensor_release(tc);
  }
}

static void test_clamp_bounds_values_keeps_nan_and_works_one_sided(void **state) {
  (void)state;
  const double x[9] = {-5, -2.5, -1, 0, 0.1, 1, 2.5, 7, NAN};
  struct {
    int has_min;
    double min;
    int has_max;
    double max;
  } cases[] = {{1, -1.5, 1, 2.0}, {1, 0.1, 0, 0}, {0, 0, 1, 0.1}, {0, 0, 0, 0},
               {1, 3.0, 1, -3.0}, {1, -2.5, 1, 3.9}};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    int n = orc_is_float(dtype) ? 9 : 8;  // no NaN in an int tensor
    int64_t sz[1] = {n};
    double xv[9];
    for (int i = 0; i < n; ++i) {
      unsigned char tmp[8];
      orc_cast_element(TSR_FLOAT64, &x[i], dtype, tmp);
      ts_unpack(dtype, tmp, 1, &xv[i]);
    }
    tsr_tensor *t = make(dtype, 1, sz, xv);
    for (int c = 0; c < COUNT(cases); ++c) {
      // Bounds are converted to the dtype first (CAST: truncation for ints).
      const tsr_clamp_attrs attrs = {sizeof(attrs), cases[c].min, cases[c].max,
                                     (uint32_t)cases[c].has_min, (uint32_t)cases[c].has_max};
      double want[9];
      for (int i = 0; i < n; ++i) want[i] = tsr_oracle_clamp_value(xv[i], &attrs, dtype);
      tsr_tensor *y = tsr_clamp(t, cases[c].has_min, cases[c].min, cases[c].has_max, cases[c].max);
      char what[96];
      snprintf(what, sizeof(what), "clamp(min %s%g, max %s%g)", cases[c].has_min ? "" : "none ",
               cases[c].min, cases[c].has_max ? "" : "none ", cases[c].max);
      expect_default(what, y, 1, sz, want);
      tsr_tensor_release(y);
    }
    tsr_tensor_release(t);
  }
}

// ============================================================================
// REDUCE

static const char *reduce_name(tsr_reduce_fn_t fn) {
  static const char *names[TSR_REDUCE_FN_COUNT] = {"sum", "mean", "max", "min", "prod"};
  return fn >= 0 && fn < TSR_REDUCE_FN_COUNT ? names[fn] : "?";
}

typedef struct axes_case {
  int32_t num_axes;
  int32_t axes[3];
} axes_case;

static const axes_case kAxesCases[] = {{0, {0}},       {1, {0}},     {1, {1}},    {1, {2}},
                                       {1, {-1}},      {2, {0, 2}},  {2, {2, 1}}, {3, {0, 1, 2}},
                                       {2, {-3, -2}}};

static uint32_t axes_mask(const axes_case *c, int32_t rank) {
  if (c->num_axes == 0) return (1u << rank) - 1u;
  uint32_t m = 0;
  for (int32_t i = 0; i < c->num_axes; ++i) m |= 1u << (c->axes[i] < 0 ? c->axes[i] + rank : c->axes[i]);
  return m;
}

// Result shape of a reduction: keepdim keeps size-1 dims.
static int32_t reduced_shape(int32_t rank, const int64_t *sizes, uint32_t mask, int keepdim,
                             int64_t *out) {
  int32_t r = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (mask & (1u << d)) {
      if (keepdim) out[r++] = 1;
    } else {
      out[r++] = sizes[d];
    }
  }
  return r;
}

// Reduces |t| (whose row-major values are |x|) every way and checks.
static void reduce_check_all(tsr_tensor *t, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                             const double *x, const char *label) {
  int64_t n = orc_numel(rank, sizes);
  double want[256], abs_sum[256], tol[256];
  int64_t count[256], xi[256], wi[256];
  for (int64_t i = 0; i < n; ++i) xi[i] = (int64_t)x[i];
  for (tsr_reduce_fn_t fn = 0; fn < TSR_REDUCE_FN_COUNT; ++fn) {
    if (fn == TSR_REDUCE_MEAN && !orc_is_float(dtype)) continue;
    for (int c = 0; c < COUNT(kAxesCases); ++c) {
      uint32_t mask = axes_mask(&kAxesCases[c], rank);
      for (int keepdim = 0; keepdim < 2; ++keepdim) {
        int64_t out_sizes[TSR_MAX_RANK];
        int32_t out_rank = reduced_shape(rank, sizes, mask, keepdim, out_sizes);
        int64_t on = orc_numel(out_rank, out_sizes);
        if (orc_is_float(dtype)) {
          orc_reduce(fn, rank, sizes, mask, x, want, abs_sum, count);
          double eps = dtype == TSR_FLOAT32 ? 2e-7 : 4e-16;
          for (int64_t o = 0; o < on; ++o) {
            double k = (double)(count[o] > 1 ? count[o] : 1);
            // Summation error grows with the count: k * eps * sum |x| (the
            // mean divides both by k). MAX and MIN are exact.
            tol[o] = fn == TSR_REDUCE_PROD   ? k * eps * fabs(want[o])
                     : fn == TSR_REDUCE_MEAN ? eps * abs_sum[o]
                     : fn == TSR_REDUCE_SUM  ? k * eps * abs_sum[o]
                                             : 0.0;
          }
        } else {
          orc_reduce_int(fn, dtype == TSR_INT32 ? 32 : 64, rank, sizes, mask, xi, wi);
          for (int64_t o = 0; o < on; ++o) want[o] = (double)wi[o];
        }
        tsr_tensor *y = tsr_reduce(t, fn, kAxesCases[c].num_axes, kAxesCases[c].axes, keepdim);
        char what[128];
        snprintf(what, sizeof(what), "%s: %s over %d axes {%d, %d, %d} keepdim %d", label,
                 reduce_name(fn), kAxesCases[c].num_axes, kAxesCases[c].axes[0],
                 kAxesCases[c].axes[1], kAxesCases[c].axes[2], keepdim);
        TS_ASSERT_TENSOR(y);
        assert_int_equal(tsr_tensor_dtype(y), dtype);
        expect_tensor(what, y, out_rank, out_sizes, want, orc_is_float(dtype) ? tol : NULL,
                      ts_rtol(dtype), dtype == TSR_FLOAT32 ? 1e-7 : ts_atol(dtype));
        tsr_tensor_release(y);
      }
    }
  }
}

static void test_reduce_matches_float64_loops_over_every_axes_mask_with_and_without_keepdim(
    void **state) {
  (void)state;
  const int64_t sizes[3] = {3, 4, 5};
  double x[60];
  ts_rng rng = {15};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    // Values near 1 keep PROD of 60 elements finite; ints stay small so
    // SUM is exact and PROD wraps deterministically.
    if (orc_is_float(dtype)) {
      ts_rng_fill(&rng, dtype, 0.5, 1.5, x, 60);
      for (int i = 0; i < 60; i += 3) x[i] = -x[i];
    } else {
      ts_rng_fill(&rng, dtype, -20, 21, x, 60);
    }
    tsr_tensor *t = make(dtype, 3, sizes, x);
    reduce_check_all(t, dtype, 3, sizes, x, "contiguous [3,4,5]");
    tsr_tensor_release(t);
  }
}

static void test_reduce_reads_a_transposed_view(void **state) {
  (void)state;
  const int64_t sizes[3] = {5, 4, 3};
  double x[60], g[60];
  ts_rng rng = {16};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    ts_rng_fill(&rng, dtype, orc_is_float(dtype) ? 0.5 : -20, orc_is_float(dtype) ? 1.5 : 21, x, 60);
    tsr_tensor *base = make(dtype, 3, sizes, x);
    tsr_tensor *t = tsr_transpose(base, 0, 2);  // [3, 4, 5], non-contiguous
    TS_ASSERT_TENSOR(t);
    orc_view v = orc_view_transpose(orc_view_contiguous(3, sizes), 0, 2);
    orc_view_gather(&v, x, g);
    reduce_check_all(t, dtype, 3, v.sizes, g, "transpose of [5,4,3]");
    tsr_tensor_release(t);
    tsr_tensor_release(base);
  }
}

static void test_reduce_of_an_empty_axis_gives_sum_zero_prod_one_and_mean_nan(void **state) {
  (void)state;
  const int64_t sizes[2] = {0, 3}, out_keep[2] = {1, 3}, out_flat[1] = {3};
  const int32_t axis0[1] = {0};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_tensor *t = tsr_tensor_empty(g_device, kFloatDtypes[d], 2, sizes);
    TS_ASSERT_TENSOR(t);
    const double zeros[3] = {0, 0, 0}, ones[3] = {1, 1, 1}, nans[3] = {NAN, NAN, NAN};
    tsr_tensor *y = tsr_reduce(t, TSR_REDUCE_SUM, 1, axis0, 1);
    expect_default("sum over an empty axis", y, 2, out_keep, zeros);
    tsr_tensor_release(y);
    y = tsr_reduce(t, TSR_REDUCE_PROD, 1, axis0, 0);
    expect_default("prod over an empty axis", y, 1, out_flat, ones);
    tsr_tensor_release(y);
    y = tsr_reduce(t, TSR_REDUCE_MEAN, 1, axis0, 0);
    expect_default("mean over an empty axis", y, 1, out_flat, nans);
    tsr_tensor_release(y);
    // Reducing everything of an empty tensor gives a rank-0 tensor.
    y = tsr_sum(t, 0, NULL, 0);
    expect_default("sum of an empty tensor", y, 0, NULL, zeros);
    tsr_tensor_release(y);
    tsr_tensor_release(t);
  }
  const tsr_dtype_t ints[2] = {TSR_INT32, TSR_INT64};
  for (int d = 0; d < 2; ++d) {
    tsr_tensor *t = tsr_tensor_empty(g_device, ints[d], 2, sizes);
    TS_ASSERT_TENSOR(t);
    const double zeros[3] = {0, 0, 0}, ones[3] = {1, 1, 1};
    tsr_tensor *y = tsr_reduce(t, TSR_REDUCE_SUM, 1, axis0, 0);
    expect_default("int sum over an empty axis", y, 1, out_flat, zeros);
    tsr_tensor_release(y);
    y = tsr_reduce(t, TSR_REDUCE_PROD, 1, axis0, 0);
    expect_default("int prod over an empty axis", y, 1, out_flat, ones);
    tsr_tensor_release(y);
    tsr_tensor_release(t);
  }
}

static void test_reduce_max_and_min_of_an_empty_axis_are_refused(void **state) {
  (void)state;
  const int64_t sizes[2] = {0, 3};
  const int32_t axis0[1] = {0};
  tsr_tensor *t = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, sizes);
  TS_ASSERT_TENSOR(t);
  assert_null(tsr_reduce(t, TSR_REDUCE_MAX, 1, axis0, 0));
  assert_true(tsr_last_error()[0] != '\0');
  assert_null(tsr_reduce(t, TSR_REDUCE_MIN, 1, axis0, 0));
  // Reducing the other, non-empty, axis is fine: the result is [0, 1].
  const int32_t axis1[1] = {1};
  const int64_t out_sizes[2] = {0, 1};
  tsr_tensor *y = tsr_reduce(t, TSR_REDUCE_MAX, 1, axis1, 1);
  TS_ASSERT_TENSOR(y);
  expect_shape("max over a non-empty axis of an empty tensor", y, 2, out_sizes);
  tsr_tensor_release(y);
  tsr_tensor_release(t);
  tsr_context_error_clear(g_context);
}

static void test_reduce_max_and_min_propagate_nan(void **state) {
  (void)state;
  const int64_t sizes[2] = {2, 3}, out_sizes[1] = {2};
  const double x[6] = {1, NAN, 3, -1, -2, -3};
  const int32_t axis1[1] = {1};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_tensor *t = make(kFloatDtypes[d], 2, sizes, x);
    const double wmax[2] = {NAN, -1}, wmin[2] = {NAN, -3};
    tsr_tensor *y = tsr_reduce(t, TSR_REDUCE_MAX, 1, axis1, 0);
    expect_default("max with a NaN", y, 1, out_sizes, wmax);
    tsr_tensor_release(y);
    y = tsr_reduce(t, TSR_REDUCE_MIN, 1, axis1, 0);
    expect_default("min with a NaN", y, 1, out_sizes, wmin);
    tsr_tensor_release(y);
    tsr_tensor_release(t);
  }
}

static void test_reduce_integer_sum_and_prod_wrap_modulo_two_to_the_bits(void **state) {
  (void)state;
  const int32_t i32[3] = {INT32_MAX, 1, 5};
  tsr_tensor *t = make_raw(TSR_INT32, 3, i32);
  tsr_tensor *y = tsr_sum(t, 0, NULL, 0);
  int32_t got32 = 0;
  TS_ASSERT_TENSOR(y);
  TS_ASSERT_OK(tsr_tensor_to_host(y, &got32, sizeof(got32)));
  assert_int_equal(got32, (int32_t)((uint32_t)INT32_MAX + 6u));
  tsr_tensor_release(y);
  tsr_tensor_release(t);
  const int64_t i64[3] = {INT64_MAX, 1, 5};
  t = make_raw(TSR_INT64, 3, i64);
  y = tsr_sum(t, 0, NULL, 0);
  int64_t got64 = 0;
  TS_ASSERT_TENSOR(y);
  TS_ASSERT_OK(tsr_tensor_to_host(y, &got64, sizeof(got64)));
  assert_true(got64 == (int64_t)((uint64_t)INT64_MAX + 6u));
  tsr_tensor_release(y);
  // 2^40 * 2^40 wraps to 0 in int64; 65536 * 65536 to 0 in int32.
  const int64_t big[2] = {1LL << 40, 1LL << 40};
  tsr_tensor *tb = make_raw(TSR_INT64, 2, big);
  y = tsr_reduce(tb, TSR_REDUCE_PROD, 0, NULL, 0);
  TS_ASSERT_TENSOR(y);
  TS_ASSERT_OK(tsr_tensor_to_host(y, &got64, sizeof(got64)));
  assert_true(got64 == 0);
  tsr_tensor_release(y);
  tsr_tensor_release(tb);
  const int32_t big32[2] = {65536, 65537};
  tb = make_raw(TSR_INT32, 2, big32);
  y = tsr_reduce(tb, TSR_REDUCE_PROD, 0, NULL, 0);
  TS_ASSERT_TENSOR(y);
  TS_ASSERT_OK(tsr_tensor_to_host(y, &got32, sizeof(got32)));
  assert_int_equal(got32, 65536);
  tsr_tensor_release(y);
  tsr_tensor_release(tb);
  tsr_tensor_release(t);
}

// ============================================================================
// ARG_REDUCE

static void test_arg_reduce_picks_the_first_extreme_along_every_axis(void **state) {
  (void)state;
  const int64_t sizes[3] = {3, 4, 5};
  double x[60];
  int64_t want[60], got[60];
  ts_rng rng = {17};
  for (int d = 0; d < COUNT(kNumberDtypes); ++d) {
    tsr_dtype_t dtype = kNumberDtypes[d];
    // Few distinct values: many ties, so "first" matters.
    for (int i = 0; i < 60; ++i) x[i] = floor(ts_rng_value(&rng, TSR_FLOAT64, 0, 4)) - 2;
    tsr_tensor *t = make(dtype, 3, sizes, x);
    for (int fn = 0; fn < TSR_ARG_REDUCE_FN_COUNT; ++fn) {
      for (int32_t axis = -1; axis < 3; ++axis) {
        int32_t a = axis < 0 ? axis + 3 : axis;
        orc_arg_reduce(fn, 3, sizes, a, x, want);
        for (int keepdim = 0; keepdim < 2; ++keepdim) {
          tsr_tensor *y = tsr_arg_reduce(t, fn, axis, keepdim);
          TS_ASSERT_TENSOR(y);
          assert_int_equal(tsr_tensor_dtype(y), TSR_INT64);
          int64_t out_sizes[3];
          int32_t out_rank = reduced_shape(3, sizes, 1u << a, keepdim, out_sizes);
          expect_shape("arg_reduce", y, out_rank, out_sizes);
          int64_t n = ts_read_i64(y, got, 60);
          assert_int_equal(n, orc_numel(out_rank, out_sizes));
          for (int64_t i = 0; i < n; ++i) {
            if (got[i] != want[i]) {
              fail_msg("%s %s axis %d keepdim %d: element %lld is %lld, expected %lld",
                       ts_dtype_name(dtype), fn ? "argmin" : "argmax", axis, keepdim,
                       (long long)i, (long long)got[i], (long long)want[i]);
            }
          }
          tsr_tensor_release(y);
        }
      }
    }
    tsr_tensor_release(t);
  }
}

static void test_arg_reduce_lets_the_first_nan_win(void **state) {
  (void)state;
  const int64_t sizes[2] = {3, 4};
  const double x[12] = {1, NAN, 5, NAN,  //
                        9, 2, 9, 1,      //
                        -1, -1, NAN, -5};
  const int64_t wmax[3] = {1, 0, 2}, wmin[3] = {1, 3, 2};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_tensor *t = make(kFloatDtypes[d], 2, sizes, x);
    int64_t got[3];
    tsr_tensor *y = tsr_argmax(t, 1, 0);
    TS_ASSERT_TENSOR(y);
    assert_int_equal(ts_read_i64(y, got, 3), 3);
    for (int i = 0; i < 3; ++i) assert_int_equal(got[i], wmax[i]);
    tsr_tensor_release(y);
    y = tsr_arg_reduce(t, TSR_ARG_REDUCE_ARGMIN, -1, 0);
    TS_ASSERT_TENSOR(y);
    assert_int_equal(ts_read_i64(y, got, 3), 3);
    for (int i = 0; i < 3; ++i) assert_int_equal(got[i], wmin[i]);
    tsr_tensor_release(y);
    tsr_tensor_release(t);
  }
}

// ============================================================================
// MATMUL

// Runs a @ b (+ bias, activation) on device tensors whose row-major host
// values are given, and checks against orc_matmul. |av|/|bv| describe the
// operands' logical shapes; rank-1 operands are promoted here as NumPy does.
typedef struct mm_operand {
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  const double *values;  // row-major in the logical shape
} mm_operand;

static void matmul_check(const char *what, tsr_dtype_t dtype, tsr_tensor *ta, mm_operand a,
                         tsr_tensor *tb, mm_operand b, tsr_tensor *tbias, mm_operand bias,
                         tsr_activation_t act) {
  // Promote rank-1 operands for the oracle.
  mm_operand a2 = a, b2 = b;
  if (a.rank == 1) {
    a2.rank = 2;
    a2.sizes[0] = 1;
    a2.sizes[1] = a.sizes[0];
  }
  if (b.rank == 1) {
    b2.rank = 2;
    b2.sizes[0] = b.sizes[0];
    b2.sizes[1] = 1;
  }
  int32_t batch_rank = 0;
  int64_t batch[TSR_MAX_RANK];
  int ok = orc_broadcast_shape(a2.rank - 2, a2.sizes, b2.rank - 2, b2.sizes, &batch_rank, batch);
  assert_true(ok);
  int32_t orank = batch_rank + 2;
  int64_t os[TSR_MAX_RANK];
  memcpy(os, batch, sizeof(int64_t) * (size_t)batch_rank);
  os[orank - 2] = a2.sizes[a2.rank - 2];
  os[orank - 1] = b2.sizes[b2.rank - 1];
  int64_t on = orc_numel(orank, os);
  double *want = dalloc(on), *mag = dalloc(on), *tol = dalloc(on);
  orc_matmul(a2.rank, a2.sizes, a.values, b2.rank, b2.sizes, b.values, bias.rank, bias.sizes,
             tbias ? bias.values : NULL, act, orank, os, want, mag);
  int64_t k = a2.sizes[a2.rank - 1];
  double eps = dtype == TSR_FLOAT32 ? 2e-7 : 4e-16;
  for (int64_t i = 0; i < on; ++i) tol[i] = (double)(k + 1) * eps * mag[i];
  // The shape the SDK returns drops the promoted dims again.
  int32_t rrank = 0;
  int64_t rs[TSR_MAX_RANK];
  for (int32_t d = 0; d < orank; ++d) {
    if (d == orank - 2 && a.rank == 1) continue;
    if (d == orank - 1 && b.rank == 1) continue;
    rs[rrank++] = os[d];
  }
  tsr_tensor *y = tsr_matmul_ex(ta, tb, tbias, act);
  expect_tensor(what, y, rrank, rs, want, tol, ts_rtol(dtype), dtype == TSR_FLOAT32 ? 1e-6 : 1e-12);
  assert_int_equal(tsr_tensor_dtype(y), dtype);
  tsr_tensor_release(y);
  free(tol);
  free(mag);
  free(want);
}

static mm_operand mm_random(ts_rng *rng, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                            double **storage) {
  mm_operand op;
  memset(&op, 0, sizeof(op));
  op.rank = rank;
  memcpy(op.sizes, sizes, sizeof(int64_t) * (size_t)rank);
  int64_t n = orc_numel(rank, sizes);
  *storage = dalloc(n);
  ts_rng_fill(rng, dtype, -1, 1, *storage, n);
  op.values = *storage;
  return op;
}

static void test_matmul_matches_float64_loops_for_odd_and_large_sizes(void **state) {
  (void)state;
  const int64_t mkn[][3] = {{1, 1, 1}, {7, 13, 5}, {65, 33, 17}, {128, 256, 64}, {3, 1, 4}};
  ts_rng rng = {18};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_dtype_t dtype = kFloatDtypes[d];
    for (int c = 0; c < COUNT(mkn); ++c) {
      const int64_t sa[2] = {mkn[c][0], mkn[c][1]}, sb[2] = {mkn[c][1], mkn[c][2]};
      double *av, *bv;
      mm_operand a = mm_random(&rng, dtype, 2, sa, &av);
      mm_operand b = mm_random(&rng, dtype, 2, sb, &bv);
      tsr_tensor *ta = make(dtype, 2, sa, av);
      tsr_tensor *tb = make(dtype, 2, sb, bv);
      char what[64];
      snprintf(what, sizeof(what), "matmul %lldx%lldx%lld", (long long)mkn[c][0],
               (long long)mkn[c][1], (long long)mkn[c][2]);
      mm_operand none = {0};
      matmul_check(what, dtype, ta, a, tb, b, NULL, none, TSR_ACTIVATION_NONE);
      tsr_tensor_release(tb);
      tsr_tensor_release(ta);
      free(bv);
      free(av);
    }
  }
}

static void test_matmul_reads_transposed_operands(void **state) {
  (void)state;
  const int64_t m = 33, k = 17, n = 9;
  ts_rng rng = {19};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_dtype_t dtype = kFloatDtypes[d];
    // a is the transpose of a [K, M] tensor, b of an [N, K] tensor.
    const int64_t sat[2] = {k, m}, sbt[2] = {n, k};
    double *at, *bt;
    mm_random(&rng, dtype, 2, sat, &at);
    mm_random(&rng, dtype, 2, sbt, &bt);
    double *av = dalloc(m * k), *bv = dalloc(k * n);
    orc_view va = orc_view_transpose(orc_view_contiguous(2, sat), 0, 1);
    orc_view vb = orc_view_transpose(orc_view_contiguous(2, sbt), 0, 1);
    orc_view_gather(&va, at, av);
    orc_view_gather(&vb, bt, bv);
    tsr_tensor *tat = make(dtype, 2, sat, at), *tbt = make(dtype, 2, sbt, bt);
    tsr_tensor *ta = tsr_transpose(tat, 0, 1), *tb = tsr_transpose(tbt, 0, 1);
    TS_ASSERT_TENSOR(ta);
    TS_ASSERT_TENSOR(tb);
    mm_operand a = {2, {m, k}, av}, b = {2, {k, n}, bv}, none = {0};
    matmul_check("matmul of transposes", dtype, ta, a, tb, b, NULL, none, TSR_ACTIVATION_NONE);
    // One transposed, one contiguous.
    tsr_tensor *tbc = make(dtype, 2, b.sizes, bv);
    matmul_check("matmul of a transpose and a contiguous", dtype, ta, a, tbc, b, NULL, none,
                 TSR_ACTIVATION_NONE);
    tsr_tensor_release(tbc);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
    tsr_tensor_release(tbt);
    tsr_tensor_release(tat);
    free(bv);
    free(av);
    free(bt);
    free(at);
  }
}

static void test_matmul_broadcasts_batch_dimensions(void **state) {
  (void)state;
  ts_rng rng = {20};
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_dtype_t dtype = kFloatDtypes[d];
    // [2, 1, 5, 6] @ [3, 6, 4] -> [2, 3, 5, 4]
    const int64_t sa[4] = {2, 1, 5, 6}, sb[3] = {3, 6, 4};
    double *av, *bv;
    mm_operand a = mm_random(&rng, dtype, 4, sa, &av);
    mm_operand b = mm_random(&rng, dtype, 3, sb, &bv);
    tsr_tensor *ta = make(dtype, 4, sa, av), *tb = make(dtype, 3, sb, bv);
    mm_operand none = {0};
    matmul_check("[2,1,5,6] @ [3,6,4]", dtype, ta, a, tb, b, NULL, none, TSR_ACTIVATION_NONE);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
    free(bv);
    free(av);
    // [4, 3, 5] @ [5, 2] -> [4, 3, 2]
    const int64_t sa2[3] = {4, 3, 5}, sb2[2] = {5, 2};
    a = mm_random(&rng, dtype, 3, sa2, &av);
    b = mm_random(&rng, dtype, 2, sb2, &bv);
    ta = make(dtype, 3, sa2, av);
    tb = make(dtype, 2, sb2, bv);
    matmul_check("[4,3,5] @ [5,2]", dtype, ta, a, tb, b, NULL, none, TSR_ACTIVATION_NONE);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
    free(bv);
    free(av);
  }
}

static void test_matmul_promotes_rank_one_operands_as_numpy_does(void **state) {
  (void)state;
  ts_rng rng = {21};
  const int64_t k = 7;
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_dtype_t dtype = kFloatDtypes[d];
    const int64_t sv[1] = {k}, sm[2] = {k, 3}, sma[2] = {4, k}, sba[3] = {2, 4, k};
    double *vv, *mv, *mav, *bav, *v2;
    mm_operand vec = mm_random(&rng, dtype, 1, sv, &vv);
    mm_operand vec2 = mm_random(&rng, dtype, 1, sv, &v2);
    mm_operand mat = mm_random(&rng, dtype, 2, sm, &mv);
    mm_operand mata = mm_random(&rng, dtype, 2, sma, &mav);
    mm_operand batch = mm_random(&rng, dtype, 3, sba, &bav);
    tsr_tensor *tv = make(dtype, 1, sv, vv), *tv2 = make(dtype, 1, sv, v2);
    tsr_tensor *tm = make(dtype, 2, sm, mv), *tma = make(dtype, 2, sma, mav);
    tsr_tensor *tba = make(dtype, 3, sba, bav);
    mm_operand none = {0};
    matmul_check("[K] @ [K,N] -> [N]", dtype, tv, vec, tm, mat, NULL, none, TSR_ACTIVATION_NONE);
    matmul_check("[M,K] @ [K] -> [M]", dtype, tma, mata, tv, vec, NULL, none, TSR_ACTIVATION_NONE);
    matmul_check("[K] @ [K] -> scalar", dtype, tv, vec, tv2, vec2, NULL, none,
                 TSR_ACTIVATION_NONE);
    matmul_check("[2,M,K] @ [K] -> [2,M]", dtype, tba, batch, tv, vec, NULL, none,
                 TSR_ACTIVATION_NONE);
    tsr_tensor_release(tba);
    tsr_tensor_release(tma);
    tsr_tensor_release(tm);
    tsr_tensor_release(tv2);
    tsr_tensor_release(tv);
    free(bav);
    free(mav);
    free(mv);
    free(v2);
    free(vv);
  }
}

static void test_matmul_adds_a_broadcast_bias_before_every_activation(void **state) {
  (void)state;
  ts_rng rng = {22};
  const int64_t m = 9, k = 11, n = 6;
  for (int d = 0; d < COUNT(kFloatDtypes); ++d) {
    tsr_dtype_t dtype = kFloatDtypes[d];
    const int64_t sa[2] = {m, k}, sb[2] = {k, n}, s_row[1] = {n}, s_col[2] = {m, 1},
                  s_full[2] = {m, n};
    double *av, *bv, *rv, *cv, *fv;
    mm_operand a = mm_random(&rng, dtype, 2, sa, &av);
    mm_operand b = mm_random(&rng, dtype, 2, sb, &bv);
    mm_operand row = mm_random(&rng, dtype, 1, s_row, &rv);
    mm_operand col = mm_random(&rng, dtype, 2, s_col, &cv);
    mm_operand full = mm_random(&rng, dtype, 2, s_full, &fv);
    tsr_tensor *ta = make(dtype, 2, sa, av), *tb = make(dtype, 2, sb, bv);
    tsr_tensor *trow = make(dtype, 1, s_row, rv), *tcol = make(dtype, 2, s_col, cv);
    tsr_tensor *tfull = make(dtype, 2, s_full, fv);
    for (tsr_activation_t act = 0; act < TSR_ACTIVATION_COUNT; ++act) {
      char what[64];
      snprintf(what, sizeof(what), "bias [N], activation %d", act);
      matmul_check(what, dtype, ta, a, tb, b, trow, row, act);
      snprintf(what, sizeof(what), "bias [M,1], activation %d", act);
      matmul_check(what, dtype, ta, a, tb, b, tcol, col, act);
      snprintf(what, sizeof(what), "bias [M,N], activation %d", act);
      matmul_check(what, dtype, ta, a, tb, b, tfull, full, act);
      mm_operand none = {0};
      snprintf(what, sizeof(what), "no bias, activation %d", act);
      matmul_check(what, dtype, ta, a, tb, b, NULL, none, act);
    }
    tsr_tensor_release(tfull);
    tsr_tensor_release(tcol);
    tsr_tensor_release(trow);
    tsr_tensor_release(tb);
    tsr_tensor_release(ta);
    free(fv);
    free(cv);
    free(rv);
    free(bv);
    free(av);
  }
}

static void test_matmul_with_an_empty_inner_dimension_gives_the_bias_and_empty_rows_give_nothing(
    void **state) {
  (void)state;
  const int64_t sa[2] = {3, 0}, sb[2] = {0, 4}, so[2] = {3, 4}, sbias[1] = {4};
  const double bias[4] = {1, -2, 3, -4};
  double want[12];
  for (int i = 0; i < 12; ++i) want[i] = bias[i % 4];
  tsr_tensor *ta = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, sa);
  tsr_tensor *tb = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, sb);
  TS_ASSERT_TENSOR(ta);
  TS_ASSERT_TENSOR(tb);
  tsr_tensor *tbias = make(TSR_FLOAT32, 1, sbias, bias);
  tsr_tensor *y = tsr_matmul_ex(ta, tb, tbias, TSR_ACTIVATION_NONE);
  expect_default("[3,0] @ [0,4] + bias", y, 2, so, want);
  tsr_tensor_release(y);
  const double zeros[12] = {0};
  y = tsr_matmul(ta, tb);
  expect_default("[3,0] @ [0,4]", y, 2, so, zeros);
  tsr_tensor_release(y);
  // [0, 5] @ [5, 4] -> [0, 4]
  const int64_t se[2] = {0, 5}, sf[2] = {5, 4}, sg[2] = {0, 4};
  double ones[20];
  for (int i = 0; i < 20; ++i) ones[i] = 1;
  tsr_tensor *te = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, se);
  tsr_tensor *tf = make(TSR_FLOAT32, 2, sf, ones);
  TS_ASSERT_TENSOR(te);
  y = tsr_matmul(te, tf);
  TS_ASSERT_TENSOR(y);
  expect_shape("[0,5] @ [5,4]", y, 2, sg);
  tsr_tensor_release(y);
  tsr_tensor_release(tf);
  tsr_tensor_release(te);
  tsr_tensor_release(tbias);
  tsr_tensor_release(tb);
  tsr_tensor_release(ta);
}

// ============================================================================
// Views and storage versions

static void expect_strides(const char *what, const tsr_tensor *t, const orc_view *v) {
  for (int32_t d = 0; d < v->rank; ++d) {
    if (v->sizes[d] > 1 && tsr_tensor_stride(t, d) != v->strides[d]) {
      fail_msg("%s: stride[%d] is %lld, expected %lld", what, d,
               (long long)tsr_tensor_stride(t, d), (long long)v->strides[d]);
    }
  }
  if (orc_numel(v->rank, v->sizes) > 0 && tsr_tensor_offset(t) != v->offset) {
    fail_msg("%s: offset %lld, expected %lld", what, (long long)tsr_tensor_offset(t),
             (long long)v->offset);
  }
}

static void test_views_share_storage_and_read_the_right_elements(void **state) {
  (void)state;
  const int64_t sizes[3] = {2, 3, 4};
  double x[24], want[120];  // the expand case has 5 * 24 elements
  for (int i = 0; i < 24; ++i) x[i] = i;
  tsr_tensor *base = make(TSR_FLOAT32, 3, sizes, x);
  orc_view c = orc_view_contiguous(3, sizes);
  const int32_t dims[3] = {1, 2, 0};
  const int64_t view_sizes[2] = {6, -1}, reshape_sizes[2] = {4, 6}, expand_sizes[4] = {5, 2, 3, 4};
  struct {
    const char *name;
    tsr_tensor *t;
    orc_view v;
  } cases[] = {
      {"view [6, -1]", tsr_view(base, 2, view_sizes), {2, {6, 4}, {4, 1}, 0}},
      {"reshape [4, 6]", tsr_reshape(base, 2, reshape_sizes), {2, {4, 6}, {6, 1}, 0}},
      {"transpose(0, 2)", tsr_transpose(base, 0, 2), orc_view_transpose(c, 0, 2)},
      {"transpose(-1, -2)", tsr_transpose(base, -1, -2), orc_view_transpose(c, 2, 1)},
      {"permute {1, 2, 0}", tsr_permute(base, 3, dims), orc_view_permute(c, dims)},
      {"slice dim 2 1:4:2", tsr_slice(base, 2, 1, 4, 2), orc_view_slice(c, 2, 1, 4, 2)},
      {"slice dim 1 -2:100", tsr_slice(base, 1, -2, 100, 1), orc_view_slice(c, 1, 1, 3, 1)},
      {"slice dim 0 1:1 (empty)", tsr_slice(base, 0, 1, 1, 1), orc_view_slice(c, 0, 1, 1, 1)},
      {"expand to [5, 2, 3, 4]", tsr_expand(base, 4, expand_sizes), orc_view_expand(c, 4, expand_sizes)},
  };
  for (int k = 0; k < COUNT(cases); ++k) {
    TS_ASSERT_TENSOR(cases[k].t);
    if (!tsr_tensor_shares_storage(base, cases[k].t)) {
      fail_msg("%s does not share storage with its source", cases[k].name);
    }
    expect_shape(cases[k].name, cases[k].t, cases[k].v.rank, cases[k].v.sizes);
    expect_strides(cases[k].name, cases[k].t, &cases[k].v);
    orc_view_gather(&cases[k].v, x, want);
    expect_default(cases[k].name, cases[k].t, cases[k].v.rank, cases[k].v.sizes, want);
  }
  // A view of a view still shares, and reads the right elements.
  tsr_tensor *tt = tsr_transpose(cases[5].t, 0, 1);  // slice, then transpose
  TS_ASSERT_TENSOR(tt);
  assert_true(tsr_tensor_shares_storage(tt, base));
  orc_view vv = orc_view_transpose(cases[5].v, 0, 1);
  orc_view_gather(&vv, x, want);
  expect_default("transpose of a slice", tt, 3, vv.sizes, want);
  tsr_tensor_release(tt);
  for (int k = 0; k < COUNT(cases); ++k) tsr_tensor_release(cases[k].t);
  tsr_tensor_release(base);
}

static void test_reshape_of_a_tensor_whose_strides_forbid_a_view_copies(void **state) {
  (void)state;
  const int64_t sizes[2] = {3, 4}, flat[1] = {12};
  double x[12], want[12];
  for (int i = 0; i < 12; ++i) x[i] = i * 1.5;
  tsr_tensor *base = make(TSR_FLOAT64, 2, sizes, x);
  tsr_tensor *t = tsr_transpose(base, 0, 1);
  TS_ASSERT_TENSOR(t);
  assert_null(tsr_view(t, 1, flat));  // a view is impossible
  tsr_tensor *r = tsr_reshape(t, 1, flat);
  TS_ASSERT_TENSOR(r);
  assert_false(tsr_tensor_shares_storage(r, base));
  orc_view v = orc_view_transpose(orc_view_contiguous(2, sizes), 0, 1);
  orc_view_gather(&v, x, want);
  expect_default("reshape of a transpose", r, 1, flat, want);
  tsr_tensor_release(r);
  tsr_tensor_release(t);
  tsr_tensor_release(base);
  tsr_context_error_clear(g_context);
}

static void test_writes_through_a_view_reach_the_source_and_every_other_view(void **state) {
  (void)state;
  const int64_t sizes[2] = {4, 4};
  double x[16] = {0}, want[16];
  tsr_tensor *base = make(TSR_INT32, 2, sizes, x);
  tsr_tensor *row = tsr_slice(base, 0, 2, 3, 1);    // row 2
  tsr_tensor *tr = tsr_transpose(base, 0, 1);       // column 2 of tr is row 2 of base
  TS_ASSERT_TENSOR(row);
  TS_ASSERT_TENSOR(tr);
  TS_ASSERT_OK(tsr_fill_(row, 5.0));
  memset(want, 0, sizeof(want));
  for (int j = 0; j < 4; ++j) want[2 * 4 + j] = 5;
  expect_default("base after filling row 2", base, 2, sizes, want);
  orc_view v = orc_view_transpose(orc_view_contiguous(2, sizes), 0, 1);
  double wt[16];
  orc_view_gather(&v, want, wt);
  expect_default("transpose after filling row 2", tr, 2, sizes, wt);
  assert_int_equal(tsr_tensor_storage_version(row), tsr_tensor_storage_version(base));
  assert_int_equal(tsr_tensor_storage_version(tr), tsr_tensor_storage_version(base));
  tsr_tensor_release(tr);
  tsr_tensor_release(row);
  tsr_tensor_release(base);
}

static void test_storage_version_bumps_after_every_write_and_not_after_reads(void **state) {
  (void)state;
  const int64_t sizes[1] = {8};
  double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
  tsr_tensor *t = make(TSR_FLOAT32, 1, sizes, x);
  tsr_tensor *other = make(TSR_FLOAT32, 1, sizes, x);
  uint64_t v = tsr_tensor_storage_version(t);
  // Reads: to_host, use as an input, views.
  assert_int_equal(ts_read(t, out, 8), 8);
  tsr_tensor *sum = tsr_add(t, other);
  TS_ASSERT_TENSOR(sum);
  tsr_tensor *view = tsr_slice(t, 0, 0, 8, 2);
  TS_ASSERT_TENSOR(view);
  tsr_tensor *c = tsr_contiguous(t);
  assert_int_equal(tsr_tensor_storage_version(t), v);
  // Writes: each bumps, whichever view it goes through.
  struct {
    const char *name;
    tsr_status status;
  } writes[5];
  int w = 0;
  uint64_t before[5];
  before[w] = tsr_tensor_storage_version(t);
  writes[w].name = "fill_";
  writes[w++].status = tsr_fill_(t, 2.0);
  before[w] = tsr_tensor_storage_version(t);
  writes[w].name = "copy_";
  writes[w++].status = tsr_copy_(t, other);
  before[w] = tsr_tensor_storage_version(t);
  writes[w].name = "binary_out in place";
  writes[w++].status = tsr_binary_out(t, t, other, TSR_BINARY_MUL, 1.0);
  before[w] = tsr_tensor_storage_version(t);
  writes[w].name = "unary_out in place";
  writes[w++].status = tsr_unary_out(t, t, TSR_UNARY_NEG, 0.0);
  before[w] = tsr_tensor_storage_version(t);
  writes[w].name = "fill_ of a view";
  writes[w++].status = tsr_fill_(view, 0.0);
  uint64_t after = tsr_tensor_storage_version(t);
  for (int i = 0; i < w; ++i) {
    if (writes[i].status != TSR_OK) fail_msg("%s failed: %s", writes[i].name, tsr_last_error());
    uint64_t next = i + 1 < w ? before[i + 1] : after;
    if (next <= before[i]) {
      fail_msg("%s left the storage version at %llu", writes[i].name,
               (unsigned long long)before[i]);
    }
  }
  assert_int_equal(tsr_tensor_storage_version(view), after);
  // The result of the final writes: -(x * x) with even positions zeroed.
  double want[8];
  for (int i = 0; i < 8; ++i) want[i] = i % 2 ? -(x[i] * x[i]) : 0.0;
  expect_default("after the writes", t, 1, sizes, want);
  tsr_tensor_release(c);
  tsr_tensor_release(view);
  tsr_tensor_release(sum);
  tsr_tensor_release(other);
  tsr_tensor_release(t);
}

// ============================================================================
// Ordering: reads wait for queued work without an explicit synchronize.

// Reloads the plugin under test with every kernel delayed by |delay_us|
// (async only: the fixture reads TSR_ASYNC_FIXTURE_DELAY_US in its init,
// which runs again once the last context using it is gone).
static void reload_with_kernel_delay(const char *delay_us) {
#if TSR_TEST_ASYNC
  tsr_context_destroy(g_context);
  setenv("TSR_ASYNC_FIXTURE_DELAY_US", delay_us, 1);
  assert_int_equal(group_setup(NULL), 0);
#else
  (void)delay_us;
#endif
}

static void test_to_host_waits_for_queued_work_without_an_explicit_synchronize(void **state) {
  (void)state;
  // 5 ms per kernel: with the fixture's 32-job ring, ~160 ms of work is
  // still queued when the last op returns, so the NOT_READY check below
  // cannot lose a race against a busy machine.
  reload_with_kernel_delay("5000");
  const int64_t sizes[1] = {4096};
  tsr_tensor *acc = tsr_tensor_full(g_device, TSR_FLOAT32, 1, sizes, 0.0);
  tsr_tensor *one = tsr_tensor_full(g_device, TSR_FLOAT32, 1, sizes, 1.0);
  TS_ASSERT_TENSOR(acc);
  TS_ASSERT_TENSOR(one);
  // 40 in-place adds, and temporaries released while their work may still
  // be queued (the free is stream-ordered).
  for (int i = 0; i < 40; ++i) {
    TS_ASSERT_OK(tsr_binary_out(acc, acc, one, TSR_BINARY_ADD, 1.0));
    tsr_tensor *tmp = tsr_add(acc, one);
    TS_ASSERT_TENSOR(tmp);
    tsr_tensor_release(tmp);
  }
  tsr_tensor *neg = tsr_neg(acc);
  TS_ASSERT_TENSOR(neg);
#if TSR_TEST_ASYNC
  // With every kernel delayed, work must still be pending here; otherwise
  // this test could not tell an ordered read from a lucky one.
  assert_int_equal(tsr_stream_query(tsr_device_default_stream_get(g_device)), TSR_NOT_READY);
#endif
  double got[4096];
  assert_int_equal(ts_read(neg, got, 4096), 4096);
  for (int i = 0; i < 4096; ++i) {
    if (got[i] != -40.0) fail_msg("element %d is %g, expected -40", i, got[i]);
  }
  // A view's read orders itself too (it packs first).
  TS_ASSERT_OK(tsr_binary_out(acc, acc, one, TSR_BINARY_ADD, 1.0));
  tsr_tensor *strided = tsr_slice(acc, 0, 1, 4096, 2);
  TS_ASSERT_TENSOR(strided);
  assert_int_equal(ts_read(strided, got, 4096), 2048);
  for (int i = 0; i < 2048; ++i) {
    if (got[i] != 41.0) fail_msg("strided element %d is %g, expected 41", i, got[i]);
  }
  tsr_tensor_release(strided);
  tsr_tensor_release(neg);
  tsr_tensor_release(one);
  tsr_tensor_release(acc);
  reload_with_kernel_delay(TSR_TEST_ASYNC_DELAY_US);
}

int main(void) {
#if TSR_TEST_ASYNC
  // Every queued kernel of the async fixture sleeps this long first (read by
  // the fixture's init, so set before the context loads it).
  setenv("TSR_ASYNC_FIXTURE_DELAY_US", TSR_TEST_ASYNC_DELAY_US, 0);
#endif
  // TSR_TEST_FILTER / TSR_TEST_SKIP: cmocka glob patterns over test names.
  if (getenv("TSR_TEST_FILTER") != NULL) cmocka_set_test_filter(getenv("TSR_TEST_FILTER"));
  if (getenv("TSR_TEST_SKIP") != NULL) cmocka_set_skip_filter(getenv("TSR_TEST_SKIP"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill_sets_every_element_in_every_dtype_as_cast_converts_a_float64),
      cmocka_unit_test(test_fill_writes_only_the_elements_of_a_strided_view),
      cmocka_unit_test(test_fill_handles_a_scalar_and_an_empty_tensor),
      cmocka_unit_test(test_slice_with_a_huge_step_selects_one_element),
      cmocka_unit_test(test_success_leaves_the_last_error_untouched),
      cmocka_unit_test(
          test_cast_converts_every_pair_of_dtypes_with_truncation_saturation_and_nan_to_zero),
      cmocka_unit_test(test_cast_reads_a_transposed_view),
      cmocka_unit_test(test_copy_broadcasts_its_source_in_every_dtype),
      cmocka_unit_test(test_copy_writes_through_a_strided_destination_and_reads_a_permuted_source),
      cmocka_unit_test(test_contiguous_returns_the_same_storage_when_packed_and_a_copy_otherwise),
      cmocka_unit_test(test_unary_matches_float64_loops_for_every_function_on_float32_and_float64),
      cmocka_unit_test(test_unary_keeps_nan_and_rounds_halves_to_even),
      cmocka_unit_test(test_unary_integer_functions_are_exact_on_int32_and_int64),
      cmocka_unit_test(test_unary_logical_not_inverts_bools),
      cmocka_unit_test(test_unary_refuses_a_function_on_a_dtype_ops_h_does_not_allow),
      cmocka_unit_test(test_unary_reads_transposed_sliced_and_permuted_views),
      cmocka_unit_test(test_unary_out_runs_in_place_and_bumps_the_storage_version),
      cmocka_unit_test(test_unary_backward_matches_the_analytic_derivative_for_every_function),
      cmocka_unit_test(test_unary_backward_refuses_functions_without_a_derivative_and_integers),
      cmocka_unit_test(test_binary_matches_float64_loops_for_every_function_and_dtype),
      cmocka_unit_test(
          test_binary_integer_division_truncates_toward_zero_and_gives_zero_for_zero_divisors),
      cmocka_unit_test(test_binary_maximum_and_minimum_propagate_nan),
      cmocka_unit_test(test_binary_broadcasts_a_column_against_a_row_and_a_vector_against_a_cube),
      cmocka_unit_test(test_binary_reads_transposed_sliced_and_permuted_views),
      cmocka_unit_test(test_binary_handles_size_zero_size_one_and_rank_zero_tensors),
      cmocka_unit_test(test_binary_out_runs_in_place_on_either_input),
      cmocka_unit_test(test_binary_out_writes_through_a_transposed_output),
      cmocka_unit_test(test_compare_matches_float64_loops_with_nan_false_except_not_equal),
      cmocka_unit_test(test_where_selects_with_broadcasting_in_every_dtype),
      cmocka_unit_test(test_clamp_bounds_values_keeps_nan_and_works_one_sided),
      cmocka_unit_test(
          test_reduce_matches_float64_loops_over_every_axes_mask_with_and_without_keepdim),
      cmocka_unit_test(test_reduce_reads_a_transposed_view),
      cmocka_unit_test(test_reduce_of_an_empty_axis_gives_sum_zero_prod_one_and_mean_nan),
      cmocka_unit_test(test_reduce_max_and_min_of_an_empty_axis_are_refused),
      cmocka_unit_test(test_reduce_max_and_min_propagate_nan),
      cmocka_unit_test(test_reduce_integer_sum_and_prod_wrap_modulo_two_to_the_bits),
      cmocka_unit_test(test_arg_reduce_picks_the_first_extreme_along_every_axis),
      cmocka_unit_test(test_arg_reduce_lets_the_first_nan_win),
      cmocka_unit_test(test_matmul_matches_float64_loops_for_odd_and_large_sizes),
      cmocka_unit_test(test_matmul_reads_transposed_operands),
      cmocka_unit_test(test_matmul_broadcasts_batch_dimensions),
      cmocka_unit_test(test_matmul_promotes_rank_one_operands_as_numpy_does),
      cmocka_unit_test(test_matmul_adds_a_broadcast_bias_before_every_activation),
      cmocka_unit_test(
          test_matmul_with_an_empty_inner_dimension_gives_the_bias_and_empty_rows_give_nothing),
      cmocka_unit_test(test_views_share_storage_and_read_the_right_elements),
      cmocka_unit_test(test_reshape_of_a_tensor_whose_strides_forbid_a_view_copies),
      cmocka_unit_test(test_writes_through_a_view_reach_the_source_and_every_other_view),
      cmocka_unit_test(test_storage_version_bumps_after_every_write_and_not_after_reads),
      cmocka_unit_test(test_to_host_waits_for_queued_work_without_an_explicit_synchronize),
  };
  return cmocka_run_group_tests_name(TSR_TEST_DEVICE, tests, group_setup, group_teardown);
}
