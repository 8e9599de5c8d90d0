// sort, argsort and topk (tessera/ops_more.h) on the device under test
// (test_sort_ref, _onednn, _opencl; the context also loads ref).
//
// Expected values and indices come from a float64 oracle written here, a
// stable insertion sort with PyTorch's order (NaN greater than everything),
// a different algorithm from the library's merge sort: indices must match
// exactly, which checks stability on the many ties of the inputs. Gradients
// (GATHER's backward) are checked against finite differences in float64; bad
// input must fail with a message naming the function and, for a dtype, the
// dtype.
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
#include "device_fixture.h"

enum { MAX_N = 256 };

// --- the oracle ------------------------------------------------------------------

// Whether |a| goes strictly before |b| in PyTorch's order.
static int oracle_before(double a, double b, int descending) {
  if (descending)
    return !isnan(b) && (isnan(a) || a > b);
  return !isnan(a) && (isnan(b) || a < b);
}

// The first |k| of the stable sort of |x| (row-major |sizes|) along |d|:
// values to |values| and positions to |indices|, row-major in the sizes
// with k on |d|.
static void oracle_sort(int32_t rank, const int64_t *sizes, const double *x, int32_t d,
                        int descending, int64_t k, double *values, int64_t *indices) {
  int64_t len = rank ? sizes[d] : 1, outer = 1, inner = 1;
  for (int32_t j = 0; j < rank; ++j) {
    if (j < d)
      outer *= sizes[j];
    if (j > d)
      inner *= sizes[j];
  }
  int64_t perm[MAX_N];
  double line[MAX_N];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < len; ++j) line[j] = x[(o * len + j) * inner + i];
      for (int64_t j = 0; j < len; ++j) {
        int64_t p = j, at = j;
        while (at > 0 && oracle_before(line[p], line[perm[at - 1]], descending)) {
          perm[at] = perm[at - 1];
          --at;
        }
        perm[at] = p;
      }
      for (int64_t j = 0; j < k; ++j) {
        values[(o * k + j) * inner + i] = line[perm[j]];
        indices[(o * k + j) * inner + i] = perm[j];
      }
    }
  }
}

// --- helpers -----------------------------------------------------------------------

static void expect_shape(const char *what, const tsr_tensor *t, int32_t rank,
                         const int64_t *sizes) {
  TS_ASSERT_TENSOR(t);
  if (tsr_tensor_rank(t) != rank)
    fail_msg("%s: rank %d, expected %d", what, tsr_tensor_rank(t), rank);
  for (int32_t d = 0; d < rank; ++d) {
    if (tsr_tensor_size(t, d) != sizes[d]) {
      fail_msg("%s: size[%d] is %lld, expected %lld", what, d, (long long)tsr_tensor_size(t, d),
               (long long)sizes[d]);
    }
  }
}

// Checks values (exactly: a sort moves elements, it computes nothing) and
// int64 indices against the oracle's.
static void expect_sorted(const char *what, const tsr_tensor *values, const tsr_tensor *indices,
                          tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                          const double *want_values, const int64_t *want_indices) {
  int64_t n = orc_numel(rank, sizes);
  if (values != NULL) {
    expect_shape(what, values, rank, sizes);
    if (tsr_tensor_dtype(values) != dtype)
      fail_msg("%s: values are %s", what, tsr_dtype_name(tsr_tensor_dtype(values)));
    double got[MAX_N];
    if (ts_read(values, got, MAX_N) != n)
      fail_msg("%s: reading the values failed: %s", what, tsr_last_error());
    ts_expect_values(what, TSR_FLOAT64, got, want_values, NULL, n, 0.0, 0.0);
  }
  if (indices != NULL) {
    expect_shape(what, indices, rank, sizes);
    int64_t got[MAX_N];
    if (ts_read_i64(indices, got, MAX_N) != n)
      fail_msg("%s: reading the int64 indices failed: %s", what, tsr_last_error());
    for (int64_t i = 0; i < n; ++i) {
      if (got[i] != want_indices[i]) {
        fail_msg("%s: index %lld is %lld, expected %lld (a tie out of order?)", what,
                 (long long)i, (long long)got[i], (long long)want_indices[i]);
      }
    }
  }
}

static void expect_refused(const char *what, tsr_status status, const char *function,
                           const char *mention) {
  if (status == TSR_OK)
    fail_msg("%s: expected an error, got TSR_OK", what);
  const char *message = tsr_last_error();
  if (strstr(message, function) == NULL)
    fail_msg("%s: the message \"%s\" does not name %s", what, message, function);
  if (mention != NULL && strstr(message, mention) == NULL)
    fail_msg("%s: the message \"%s\" does not mention %s", what, message, mention);
  tsr_last_error_clear();
  tsr_context_error_clear(g_context);
}

// Values with many ties (integers in [-3, 3)), and for float dtypes NaN,
// infinities and a negative zero among them.
static void tied_values(tsr_dtype_t dtype, uint64_t seed, int64_t n, double *v) {
  ts_rng rng = {seed};
  for (int64_t i = 0; i < n; ++i) v[i] = floor(ts_rng_value(&rng, TSR_FLOAT64, -3, 3));
  if (orc_is_float(dtype)) {
    for (int64_t i = 0; i < n; i += 5) v[i] = NAN;
    for (int64_t i = 2; i < n; i += 11) v[i] = INFINITY;
    for (int64_t i = 3; i < n; i += 13) v[i] = -INFINITY;
    for (int64_t i = 4; i < n; i += 7) v[i] = -0.0;
    for (int64_t i = 6; i < n; i += 9) v[i] += 0.25;
  }
}

// Sorts |x| along |dim| both ways with sort, argsort and topk (every k for
// a short dim, three otherwise) and checks each against the oracle.
static void check_all(const char *what, tsr_tensor *x, tsr_dtype_t dtype, int32_t rank,
                      const int64_t *sizes, const double *v, int32_t dim) {
  int32_t d = dim < 0 ? dim + (rank ? rank : 1) : dim;
  int64_t len = rank ? sizes[d] : 1;
  int64_t n = orc_numel(rank, sizes);
  double want_v[MAX_N];
  int64_t want_i[MAX_N], out_sizes[TSR_MAX_RANK];
  char label[160];
  for (int descending = 0; descending < 2; ++descending) {
    oracle_sort(rank, sizes, v, d, descending, len, want_v, want_i);
    tsr_tensor *values = NULL, *indices = NULL;
    snprintf(label, sizeof(label), "%s: sort dim %d%s", what, dim, descending ? " descending" : "");
    TS_ASSERT_OK(tsr_sort(x, dim, descending, &values, &indices));
    expect_sorted(label, values, indices, dtype, rank, sizes, want_v, want_i);
    tsr_tensor *args = tsr_argsort(x, dim, descending);
    snprintf(label, sizeof(label), "%s: argsort dim %d%s", what, dim,
             descending ? " descending" : "");
    expect_sorted(label, NULL, args, dtype, rank, sizes, want_v, want_i);
    tsr_tensor_release(values);
    tsr_tensor_release(indices);
    tsr_tensor_release(args);
    (void)n;
    const int64_t ks[3] = {0, 1, len};
    for (int64_t t = 0; t < (len <= 4 ? len + 1 : 3); ++t) {
      int64_t k = len <= 4 ? t : ks[t];
      oracle_sort(rank, sizes, v, d, descending, k, want_v, want_i);
      for (int32_t j = 0; j < rank; ++j) out_sizes[j] = j == d ? k : sizes[j];
      snprintf(label, sizeof(label), "%s: topk k %lld dim %d %s", what, (long long)k, dim,
               descending ? "largest" : "smallest");
      TS_ASSERT_OK(tsr_topk(x, k, dim, descending, &values, &indices));
      expect_sorted(label, values, indices, dtype, rank, out_sizes, want_v, want_i);
      tsr_tensor_release(values);
      tsr_tensor_release(indices);
    }
  }
}

static int device_runs(tsr_dtype_t dtype) {
  int ok = tsr_device_op_supported(g_device, TSR_OP_GATHER, dtype) == TSR_OK;
  tsr_last_error_clear();
  return ok;
}

// --- tests -------------------------------------------------------------------------

static void test_sort_argsort_and_topk_match_a_stable_float64_sort_for_ranks_1_to_4(void **state) {
  (void)state;
  static const int32_t ranks[4] = {1, 2, 3, 4};
  static const int64_t shapes[4][4] = {{13}, {4, 6}, {3, 4, 5}, {2, 3, 1, 4}};
  const tsr_dtype_t dtypes[4] = {TSR_FLOAT32, TSR_FLOAT64, TSR_INT32, TSR_INT64};
  for (int t = 0; t < 4; ++t) {
    if (!device_runs(dtypes[t])) {
      printf("note: %s skipped, the device has no GATHER for it\n", tsr_dtype_name(dtypes[t]));
      continue;
    }
    for (int s = 0; s < 4; ++s) {
      int32_t rank = ranks[s];
      double v[MAX_N];
      int64_t n = orc_numel(rank, shapes[s]);
      tied_values(dtypes[t], 100 + (uint64_t)(t * 4 + s), n, v);
      tsr_tensor *x = ts_tensor(g_device, dtypes[t], rank, shapes[s], v);
      TS_ASSERT_TENSOR(x);
      for (int32_t dim = -rank; dim < rank; ++dim) {
        char what[64];
        snprintf(what, sizeof(what), "%s rank %d", tsr_dtype_name(dtypes[t]), rank);
        check_all(what, x, dtypes[t], rank, shapes[s], v, dim);
      }
      tsr_tensor_release(x);
    }
  }
}

static void test_sort_reads_a_transposed_view_in_its_own_order(void **state) {
  (void)state;
  const int64_t sizes[2] = {5, 3};
  double v[15], vt[15];
  tied_values(TSR_FLOAT32, 7, 15, v);
  tsr_tensor *x = ts_tensor(g_device, TSR_FLOAT32, 2, sizes, v);
  TS_ASSERT_TENSOR(x);
  tsr_tensor *xt = tsr_transpose(x, 0, 1);  // [3, 5], not contiguous
  TS_ASSERT_TENSOR(xt);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) vt[i * 5 + j] = v[j * 3 + i];
  }
  check_all("transposed float32", xt, TSR_FLOAT32, 2, (int64_t[]){3, 5}, vt, 1);
  check_all("transposed float32", xt, TSR_FLOAT32, 2, (int64_t[]){3, 5}, vt, 0);
  tsr_tensor_release(xt);
  tsr_tensor_release(x);
}

static void test_half_precision_sorts_like_float32(void **state) {
  (void)state;
  const tsr_dtype_t halves[2] = {TSR_FLOAT16, TSR_BFLOAT16};
  const int64_t sizes[2] = {3, 7};
  double v[21];
  tied_values(TSR_FLOAT32, 31, 21, v);  // exact in both half formats
  for (int h = 0; h < 2; ++h) {
    if (!device_runs(halves[h]) ||
        tsr_device_op_supported(g_device, TSR_OP_CAST, halves[h]) != TSR_OK) {
      tsr_last_error_clear();
      printf("note: %s skipped on this device\n", tsr_dtype_name(halves[h]));
      continue;
    }
    tsr_tensor *x32 = ts_tensor(g_device, TSR_FLOAT32, 2, sizes, v);
    tsr_tensor *x = tsr_cast(x32, halves[h]);
    TS_ASSERT_TENSOR(x);
    tsr_tensor *values = NULL, *indices = NULL;
    TS_ASSERT_OK(tsr_sort(x, -1, 1, &values, &indices));
    tsr_tensor *back = tsr_cast(values, TSR_FLOAT32);
    double want_v[21];
    int64_t want_i[21];
    oracle_sort(2, sizes, v, 1, 1, 7, want_v, want_i);
    expect_sorted(tsr_dtype_name(halves[h]), back, indices, TSR_FLOAT32, 2, sizes, want_v, want_i);
    tsr_tensor *ts[5] = {x32, x, values, indices, back};
    for (int i = 0; i < 5; ++i) tsr_tensor_release(ts[i]);
  }
}

static void test_an_empty_dim_and_a_scalar_sort_to_themselves(void **state) {
  (void)state;
  // An empty dim: empty results of the same shape; topk k 0 only.
  tsr_tensor *e = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){3, 0});
  TS_ASSERT_TENSOR(e);
  tsr_tensor *values = NULL, *indices = NULL;
  TS_ASSERT_OK(tsr_sort(e, 1, 0, &values, &indices));
  expect_shape("sort of [3, 0] along dim 1", values, 2, (int64_t[]){3, 0});
  expect_shape("sort of [3, 0] along dim 1 (indices)", indices, 2, (int64_t[]){3, 0});
  assert_int_equal(tsr_tensor_dtype(indices), TSR_INT64);
  tsr_tensor_release(values);
  tsr_tensor_release(indices);
  TS_ASSERT_OK(tsr_sort(e, 0, 1, &values, &indices));
  expect_shape("sort of [3, 0] along dim 0", values, 2, (int64_t[]){3, 0});
  tsr_tensor_release(values);
  tsr_tensor_release(indices);
  TS_ASSERT_OK(tsr_topk(e, 0, -1, 1, &values, NULL));
  expect_shape("topk 0 of [3, 0]", values, 2, (int64_t[]){3, 0});
  tsr_tensor_release(values);
  expect_refused("topk 1 of an empty dim", tsr_topk(e, 1, -1, 1, &values, &indices), "topk", "k is 1");
  assert_null(values);
  tsr_tensor_release(e);
  // A scalar: itself, index 0, dims 0 and -1.
  tsr_tensor *s = ts_tensor(g_device, TSR_FLOAT32, 0, NULL, (double[]){2.5});
  TS_ASSERT_TENSOR(s);
  for (int32_t dim = -1; dim <= 0; ++dim) {
    TS_ASSERT_OK(tsr_sort(s, dim, 0, &values, &indices));
    expect_sorted("sort of a scalar", values, indices, TSR_FLOAT32, 0, NULL, (double[]){2.5},
                  (int64_t[]){0});
    tsr_tensor_release(values);
    tsr_tensor_release(indices);
  }
  expect_refused("sort of a scalar along dim 1", tsr_sort(s, 1, 0, &values, &indices), "sort",
                 "dim 1");
  tsr_tensor_release(s);
}

static void test_sort_argsort_and_topk_refuse_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3});
  tsr_tensor *b = tsr_zeros(g_device, TSR_BOOL, 1, (int64_t[]){4});
  TS_ASSERT_TENSOR(x);
  TS_ASSERT_TENSOR(b);
  tsr_tensor *values = (tsr_tensor *)1, *indices = (tsr_tensor *)1;
  expect_refused("sort of NULL", tsr_sort(NULL, 0, 0, &values, &indices), "sort", "x is NULL");
  assert_null(values);
  assert_null(indices);
  expect_refused("sort without outputs", tsr_sort(x, 0, 0, NULL, NULL), "sort", "both NULL");
  expect_refused("sort of bool", tsr_sort(b, 0, 0, &values, NULL), "sort", "bool");
  assert_null(tsr_argsort(b, 0, 0));
  expect_refused("argsort of bool", TSR_INVALID_ARGUMENT, "argsort", "bool");
  expect_refused("topk of bool", tsr_topk(b, 1, 0, 1, &values, NULL), "topk", "bool");
  expect_refused("sort dim 2 of rank 2", tsr_sort(x, 2, 0, &values, NULL), "sort", "dim 2");
  expect_refused("sort dim -3 of rank 2", tsr_sort(x, -3, 0, &values, NULL), "sort", "dim -3");
  assert_null(tsr_argsort(x, 5, 1));
  expect_refused("argsort dim 5", TSR_INVALID_ARGUMENT, "argsort", "dim 5");
  expect_refused("topk k 4 of 3", tsr_topk(x, 4, 1, 1, &values, &indices), "topk", "k is 4");
  expect_refused("topk k -1", tsr_topk(x, -1, 1, 1, &values, &indices), "topk", "k is -1");
  expect_refused("topk k huge", tsr_topk(x, INT64_MAX, 0, 1, &values, &indices), "topk", NULL);
  assert_null(values);
  assert_null(indices);
  expect_refused("topk dim 7", tsr_topk(x, 1, 7, 1, &values, &indices), "topk", "dim 7");
  // A released handle is refused, not read.
  tsr_tensor *gone = tsr_zeros(g_device, TSR_FLOAT32, 1, (int64_t[]){3});
  tsr_tensor_release(gone);
  expect_refused("sort of a released tensor", tsr_sort(gone, 0, 0, &values, NULL), "sort", NULL);
  tsr_tensor_release(x);
  tsr_tensor_release(b);
}

static tsr_device *f64_device(void) {
  tsr_device *candidates[2] = {g_device, tsr_context_device_find(g_context, "ref")};
  for (int c = 0; c < 2; ++c) {
    if (candidates[c] != NULL &&
        tsr_device_op_supported(candidates[c], TSR_OP_GATHER, TSR_FLOAT64) == TSR_OK &&
        tsr_device_op_supported(candidates[c], TSR_OP_SCATTER_ADD, TSR_FLOAT64) == TSR_OK) {
      tsr_last_error_clear();
      return candidates[c];
    }
  }
  tsr_last_error_clear();
  return NULL;
}

typedef struct sort_args {
  int32_t dim;
  int64_t k;  // -1: sort
  int descending;
} sort_args;

static tsr_tensor *sort_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  const sort_args *a = user;
  tsr_tensor *values = NULL;
  tsr_status status = a->k < 0 ? tsr_sort(inputs[0], a->dim, a->descending, &values, NULL)
                               : tsr_topk(inputs[0], a->k, a->dim, a->descending, &values, NULL);
  return status == TSR_OK ? values : NULL;
}

static void test_sort_and_topk_gradients_match_finite_differences(void **state) {
  (void)state;
  tsr_device *dev = f64_device();
  if (dev == NULL) {
    printf("skipped: no device of this context runs GATHER and SCATTER_ADD in float64\n");
    skip();
  }
  // Distinct values, far enough apart that the finite differences keep the order.
  double v[24];
  for (int i = 0; i < 24; ++i) v[i] = (double)((i * 7) % 24) * 0.1 - 1.0;
  tsr_tensor *x = ts_tensor(dev, TSR_FLOAT64, 3, (int64_t[]){2, 3, 4}, v);
  TS_ASSERT_TENSOR(x);
  const sort_args cases[5] = {{1, -1, 0}, {-1, -1, 1}, {0, -1, 0}, {2, 2, 1}, {-2, 1, 0}};
  for (int c = 0; c < 5; ++c) {
    tsr_gradcheck_result result;
    memset(&result, 0, sizeof(result));
    result.struct_size = sizeof(result);
    TS_ASSERT_OK(tsr_gradcheck(sort_fn, (void *)&cases[c], 1, &x, NULL, &result));
    if (!result.passed || result.checked <= 0) {
      fail_msg("%s dim %d k %lld: gradient element %lld is %.10g analytically, %.10g numerically",
               cases[c].k < 0 ? "sort" : "topk", cases[c].dim, (long long)cases[c].k,
               (long long)result.worst_index, result.analytic, result.numeric);
    }
  }
  tsr_tensor_release(x);
}

static void test_indices_carry_no_gradient_and_values_do(void **state) {
  (void)state;
  tsr_tensor *x = ts_tensor(g_device, TSR_FLOAT32, 1, (int64_t[]){4}, (double[]){3, 1, 2, 0});
  TS_ASSERT_TENSOR(x);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(x, 1));
  tsr_tensor *values = NULL, *indices = NULL;
  TS_ASSERT_OK(tsr_topk(x, 2, 0, 1, &values, &indices));
  assert_true(tsr_tensor_requires_grad(values));
  assert_false(tsr_tensor_requires_grad(indices));
  tsr_tensor *loss = tsr_sum(values, 0, NULL, 0);
  TS_ASSERT_TENSOR(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  tsr_tensor *g = tsr_tensor_grad(x);
  double got[4];
  assert_int_equal(ts_read(g, got, 4), 4);
  ts_expect_values("topk 2 of [3, 1, 2, 0]: gradient", TSR_FLOAT32, got, (double[]){1, 0, 1, 0},
                   NULL, 4, 0, 0);
  tsr_tensor *ts[5] = {x, values, indices, loss, g};
  for (int i = 0; i < 5; ++i) tsr_tensor_release(ts[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_sort_argsort_and_topk_match_a_stable_float64_sort_for_ranks_1_to_4,
                             test_setup),
      cmocka_unit_test_setup(test_sort_reads_a_transposed_view_in_its_own_order, test_setup),
      cmocka_unit_test_setup(test_half_precision_sorts_like_float32, test_setup),
      cmocka_unit_test_setup(test_an_empty_dim_and_a_scalar_sort_to_themselves, test_setup),
      cmocka_unit_test_setup(test_sort_argsort_and_topk_refuse_bad_input, test_setup),
      cmocka_unit_test_setup(test_sort_and_topk_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_indices_carry_no_gradient_and_values_do, test_setup),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
