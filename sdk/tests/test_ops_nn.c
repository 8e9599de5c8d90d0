// Creation functions, the neural-network and shape op functions, and their
// autograd rules.
//
// Built twice: test_ops_nn_ref on the ref plugin and test_ops_nn_onednn on
// the oneDNN plugin (whose context also loads ref). Expected values come
// from the conformance oracle's float64 loops; every backward rule is
// checked against finite differences with tsr_gradcheck in float64 (on the
// ref device of the same context when the device under test lacks float64
// for the op).
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
#include "device_tensors.h"



#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define F32_TOL 2e-5

// --- helpers ----------------------------------------------------------------

static tsr_tensor *make_i64_on(tsr_device *device, int64_t n, const int64_t *values) {
  tsr_tensor *t = tsr_tensor_from_host(device, TSR_INT64, 1, &n, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

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

// Checks |t|'s shape and values (row-major |want|) within |tol| absolute and relative.
static void expect_values(const char *what, const tsr_tensor *t, int32_t rank, const int64_t *sizes,
                          const double *want, double tol) {
  expect_shape(what, t, rank, sizes);
  int64_t n = orc_numel(rank, sizes);
  double *got = dalloc(n);
  if (ts_read(t, got, n) != n)
    fail_msg("%s: reading failed: %s", what, tsr_last_error());
  ts_expect_values(what, TSR_FLOAT64, got, want, NULL, n, tol, tol);
  free(got);
}

static void expect_i64(const char *what, const tsr_tensor *t, const int64_t *want, int64_t n) {
  int64_t *got = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
  assert_non_null(got);
  if (ts_read_i64(t, got, n) != n)
    fail_msg("%s: reading failed: %s", what, tsr_last_error());
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      fail_msg("%s: element %lld is %lld, expected %lld", what, (long long)i, (long long)got[i],
               (long long)want[i]);
    }
  }
  free(got);
}

// A call that must fail: NULL result, an error message, no crash.
static void expect_refused(const char *what, const tsr_tensor *t) {
  if (t != NULL)
    fail_msg("%s: expected NULL, got a tensor", what);
  if (tsr_last_error()[0] == '\0')
    fail_msg("%s: failed without a message", what);
  tsr_last_error_clear();
  tsr_context_error_clear(g_context);
}

static void expect_refused_status(const char *what, tsr_status status) {
  if (status == TSR_OK)
    fail_msg("%s: expected an error, got TSR_OK", what);
  if (tsr_last_error()[0] == '\0')
    fail_msg("%s: failed without a message", what);
  tsr_last_error_clear();
  tsr_context_error_clear(g_context);
}

// The device gradchecks of |op| run on: the device under test when it runs
// the op in float64, else the context's ref device; NULL when neither does.
static tsr_device *f64_device(tsr_op_id_t op) {
  if (tsr_device_op_supported(g_device, op, TSR_FLOAT64) == TSR_OK)
    return g_device;
  tsr_device *ref = tsr_context_device_find(g_context, "ref");
  if (ref != NULL && tsr_device_op_supported(ref, op, TSR_FLOAT64) == TSR_OK)
    return ref;
  tsr_last_error_clear();
  return NULL;
}

#define F64_DEVICE_OR_SKIP(var, op)                                                     \
  tsr_device *var = f64_device(op);                                                     \
  if (var == NULL) {                                                                    \
    printf("skipped: no device of this context runs %s in float64\n", tsr_op_name(op)); \
    skip();                                                                             \
  }

static void gradcheck_expect(const char *what, tsr_gradcheck_fn fn, void *user, int32_t n,
                             tsr_tensor *const *inputs) {
  tsr_gradcheck_result result;
  memset(&result, 0, sizeof(result));
  result.struct_size = sizeof(result);
  tsr_status status = tsr_gradcheck(fn, user, n, inputs, NULL, &result);
  if (status != TSR_OK) {
    fail_msg("%s: gradcheck did not run: %s: %s", what, tsr_status_name(status), tsr_last_error());
  }
  if (!result.passed) {
    fail_msg(
        "%s: gradient of input %d element %lld is %.10g analytically, %.10g numerically "
        "(max abs error %.3g)",
        what, result.worst_input, (long long)result.worst_index, result.analytic, result.numeric,
        result.max_abs_error);
  }
  if (result.checked <= 0)
    fail_msg("%s: gradcheck compared no elements", what);
}

static void release_n(int n, tsr_tensor **ts) {
  for (int i = 0; i < n; ++i) tsr_tensor_release(ts[i]);
}

// --- float64 oracles --------------------------------------------------------

typedef struct conv_problem {
  int64_t n, c, h, w, o, kh, kw;
  tsr_conv2d_attrs a;
  int64_t oh, ow;
} conv_problem;

static void conv_problem_init(conv_problem *p) {
  p->oh = (p->h + p->a.pad_before[0] + p->a.pad_after[0] - p->a.dilation[0] * (p->kh - 1) - 1) /
              p->a.stride[0] +
          1;
  p->ow = (p->w + p->a.pad_before[1] + p->a.pad_after[1] - p->a.dilation[1] * (p->kw - 1) - 1) /
              p->a.stride[1] +
          1;
}

// The conformance oracle's convolution (sdk/tests/oracle.h's orc_conv2d):
// with |y|, the forward of x, w and b (or NULL) without the activation; with
// |dy|, dx (or NULL) and dw and db (or NULL) from dy.
static void conv_oracle(const conv_problem *p, const double *x, const double *w, const double *b,
                        double *y, const double *dy, double *dx, double *dw, double *db) {
  const int64_t xs[4] = {p->n, p->c, p->h, p->w}, ws[4] = {p->o, p->c / p->a.groups, p->kh, p->kw};
  const int64_t ys[4] = {p->n, p->o, p->oh, p->ow};
  tsr_conv2d_attrs a = p->a;
  a.activation = TSR_ACTIVATION_NONE;
  if (y != NULL) {
    a.has_bias = b != NULL;
    orc_conv2d(TSR_OP_CONV2D, &a, xs, (double *)x, ws, (double *)w, ys, y, (double *)b, NULL,
               NULL, NULL);
    return;
  }
  if (dx != NULL) {
    orc_conv2d(TSR_OP_CONV2D_BACKWARD_DATA, &a, xs, dx, ws, (double *)w, ys, (double *)dy, NULL,
               NULL, NULL, NULL);
  }
  if (dw != NULL) {
    a.has_bias = db != NULL;
    orc_conv2d(TSR_OP_CONV2D_BACKWARD_FILTER, &a, xs, (double *)x, ws, dw, ys, (double *)dy, db,
               NULL, NULL, NULL);
  }
}

// The oracle's pooling: y, and for MAX the indices h * W + w.
static void pool_oracle(const int64_t *xs, const double *x, const tsr_pool2d_attrs *a, int64_t oh_n,
                        int64_t ow_n, double *y, int64_t *idx) {
  const int64_t ys[4] = {xs[0], xs[1], oh_n, ow_n};
  const int is_max = a->kind == TSR_POOL_MAX;
  tsr_oracle_tensor in = tsr_oracle_tensor_over(TSR_FLOAT64, 4, xs, (double *)x), out[2];
  out[0] = tsr_oracle_tensor_over(TSR_FLOAT64, 4, ys, y);
  assert_int_equal(tsr_oracle_tensor_create(TSR_INT64, 4, ys, &out[1]), 0);
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_POOL2D, a, 1, &in, is_max ? 2 : 1, out),
                   TSR_OK);
  for (int64_t i = 0; is_max && i < out[1].numel; ++i) idx[i] = out[1].iv[i];
  tsr_oracle_tensor_destroy(&out[1]);
}

// The oracle's softmax of a [rows, cols] matrix along the columns; with
// |dy|, its backward from dy and y = |x| (the forward's output) instead.
static void softmax_oracle_ex(const double *x, const double *dy, int64_t rows, int64_t cols,
                              int take_log, double *y) {
  const int64_t sizes[2] = {rows, cols};
  const tsr_softmax_attrs a = {sizeof(a), 1, (uint32_t)take_log};
  tsr_oracle_tensor in[2] = {tsr_oracle_tensor_over(TSR_FLOAT64, 2, sizes, (double *)dy),
                             tsr_oracle_tensor_over(TSR_FLOAT64, 2, sizes, (double *)x)};
  tsr_oracle_tensor out = tsr_oracle_tensor_over(TSR_FLOAT64, 2, sizes, y);
  assert_int_equal(tsr_oracle_compute_values(dy ? TSR_OP_SOFTMAX_BACKWARD : TSR_OP_SOFTMAX, &a,
                                             dy ? 2 : 1, dy ? in : in + 1, 1, &out),
                   TSR_OK);
}

static void softmax_oracle(const double *x, int64_t rows, int64_t cols, int take_log, double *y) {
  softmax_oracle_ex(x, NULL, rows, cols, take_log, y);
}

// --- creation ---------------------------------------------------------------

static void test_zeros_ones_and_full_like_fill_every_element(void **state) {
  (void)state;
  const int64_t sizes[2] = {3, 4};
  double want[12];
  tsr_tensor *z = tsr_zeros(g_device, TSR_FLOAT32, 2, sizes);
  for (int i = 0; i < 12; ++i) want[i] = 0.0;
  expect_values("zeros", z, 2, sizes, want, 0.0);
  tsr_tensor *o = tsr_ones(g_device, TSR_INT64, 2, sizes);
  for (int i = 0; i < 12; ++i) want[i] = 1.0;
  expect_values("ones", o, 2, sizes, want, 0.0);
  assert_int_equal(tsr_tensor_dtype(o), TSR_INT64);
  tsr_tensor *f = tsr_full_like(o, -7.0);
  for (int i = 0; i < 12; ++i) want[i] = -7.0;
  expect_values("full_like", f, 2, sizes, want, 0.0);
  assert_int_equal(tsr_tensor_dtype(f), TSR_INT64);
  assert_true(tsr_tensor_device(f) == g_device);
  release_n(3, (tsr_tensor *[]){z, o, f});
  expect_refused("zeros(NULL device)", tsr_zeros(NULL, TSR_FLOAT32, 2, sizes));
  expect_refused("ones(negative size)", tsr_ones(g_device, TSR_FLOAT32, 1, (int64_t[]){-1}));
  expect_refused("full_like(NULL)", tsr_full_like(NULL, 1.0));
}

static void test_arange_counts_up_and_down_and_converts_to_the_dtype(void **state) {
  (void)state;
  tsr_tensor *a = tsr_arange(g_device, TSR_FLOAT32, 0.0, 5.0, 1.0);
  expect_values("arange(0, 5)", a, 1, (int64_t[]){5}, (double[]){0, 1, 2, 3, 4}, 0.0);
  tsr_tensor *b = tsr_arange(g_device, TSR_FLOAT64, 5.0, 0.0, -1.5);
  expect_values("arange(5, 0, -1.5)", b, 1, (int64_t[]){4}, (double[]){5, 3.5, 2, 0.5}, 0.0);
  tsr_tensor *c = tsr_arange(g_device, TSR_INT32, 2.0, 7.0, 2.0);
  expect_values("arange int32", c, 1, (int64_t[]){3}, (double[]){2, 4, 6}, 0.0);
  assert_int_equal(tsr_tensor_dtype(c), TSR_INT32);
  tsr_tensor *d = tsr_arange(g_device, TSR_INT64, 0.0, 1.0, 0.1);
  assert_int_equal(tsr_tensor_numel(d), 10);
  tsr_tensor *e = tsr_arange(g_device, TSR_FLOAT32, 3.0, 1.0, 1.0);
  expect_shape("empty arange", e, 1, (int64_t[]){0});
  release_n(5, (tsr_tensor *[]){a, b, c, d, e});
  expect_refused("arange step 0", tsr_arange(g_device, TSR_FLOAT32, 0, 1, 0));
  expect_refused("arange NaN", tsr_arange(g_device, TSR_FLOAT32, NAN, 1, 1));
  expect_refused("arange infinite end", tsr_arange(g_device, TSR_FLOAT32, 0, INFINITY, 1));
  expect_refused("arange NULL device", tsr_arange(NULL, TSR_FLOAT32, 0, 1, 1));
  expect_refused("arange bool", tsr_arange(g_device, TSR_BOOL, 0, 2, 1));
  expect_refused("arange too many", tsr_arange(g_device, TSR_FLOAT32, 0, 1e300, 1e-10));
  expect_refused("arange int32 overflow", tsr_arange(g_device, TSR_INT32, 3e9, 3e9 + 2, 1));
}

static double mean_of(const double *v, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  return s / (double)n;
}

static void test_rand_stays_in_its_range_with_the_uniform_mean(void **state) {
  (void)state;
  const int64_t n = 10000;
  tsr_dtype_t dtypes[2] = {TSR_FLOAT32, TSR_FLOAT64};
  for (int k = 0; k < 2; ++k) {
    tsr_tensor *t = tsr_rand(g_device, dtypes[k], 2, (int64_t[]){100, 100}, 2.0, 5.0);
    TS_ASSERT_TENSOR(t);
    double *v = dalloc(n);
    assert_int_equal(ts_read(t, v, n), n);
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      lo = fmin(lo, v[i]);
      hi = fmax(hi, v[i]);
    }
    if (lo < 2.0 || hi >= 5.0)
      fail_msg("rand: values span [%g, %g], outside [2, 5)", lo, hi);
    // Standard error of the mean: 3 / sqrt(12 * 10000) = 0.0087.
    double m = mean_of(v, n);
    if (fabs(m - 3.5) > 0.05)
      fail_msg("rand: mean %g, expected 3.5", m);
    free(v);
    tsr_tensor_release(t);
  }
}

static void test_randn_has_the_requested_mean_and_standard_deviation(void **state) {
  (void)state;
  const int64_t n = 10000;
  tsr_tensor *t = tsr_randn(g_device, TSR_FLOAT32, 1, &n, 1.0, 2.0);
  TS_ASSERT_TENSOR(t);
  double *v = dalloc(n);
  assert_int_equal(ts_read(t, v, n), n);
  double m = mean_of(v, n), ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += (v[i] - m) * (v[i] - m);
  double sd = sqrt(ss / (double)(n - 1));
  // Standard errors: 0.02 for the mean, 0.014 for the std.
  if (fabs(m - 1.0) > 0.1)
    fail_msg("randn: mean %g, expected 1", m);
  if (fabs(sd - 2.0) > 0.1)
    fail_msg("randn: std %g, expected 2", sd);
  free(v);
  tsr_tensor_release(t);
}

static int same_values(const tsr_tensor *a, const tsr_tensor *b, int64_t n) {
  double *va = dalloc(n), *vb = dalloc(n);
  assert_int_equal(ts_read(a, va, n), n);
  assert_int_equal(ts_read(b, vb, n), n);
  int same = memcmp(va, vb, (size_t)n * sizeof(double)) == 0;
  free(va);
  free(vb);
  return same;
}

static void test_the_same_seed_repeats_the_numbers_and_new_offsets_change_them(void **state) {
  (void)state;
  const int64_t n = 64;
  TS_ASSERT_OK(tsr_context_seed_set(g_context, 42));
  tsr_tensor *a = tsr_rand(g_device, TSR_FLOAT32, 1, &n, 0.0, 1.0);
  TS_ASSERT_TENSOR(a);
  assert_int_equal(tsr_context_rng_offset(g_context), (uint64_t)n);
  tsr_tensor *b = tsr_rand(g_device, TSR_FLOAT32, 1, &n, 0.0, 1.0);
  TS_ASSERT_TENSOR(b);
  assert_int_equal(tsr_context_rng_offset(g_context), (uint64_t)(2 * n));
  assert_false(same_values(a, b, n));  // the second call claimed new counters
  TS_ASSERT_OK(tsr_context_seed_set(g_context, 42));
  tsr_tensor *c = tsr_rand(g_device, TSR_FLOAT32, 1, &n, 0.0, 1.0);
  assert_true(same_values(a, c, n));
  // The explicit form reproduces the context's numbers at their offset.
  tsr_tensor *d = tsr_tensor_empty(g_device, TSR_FLOAT32, 1, &n);
  TS_ASSERT_OK(tsr_rng_fill_seeded_(d, TSR_RNG_UNIFORM, 0.0, 1.0, 42, (uint64_t)n));
  assert_true(same_values(b, d, n));
  TS_ASSERT_OK(tsr_rng_fill_seeded_(d, TSR_RNG_UNIFORM, 0.0, 1.0, 43, (uint64_t)n));
  assert_false(same_values(b, d, n));
  // rng_fill_ claims counters from the context too.
  uint64_t before = tsr_context_rng_offset(g_context);
  TS_ASSERT_OK(tsr_rng_fill_(d, TSR_RNG_NORMAL, 0.0, 1.0));
  assert_int_equal(tsr_context_rng_offset(g_context), before + (uint64_t)n);
  TS_ASSERT_OK(tsr_rng_fill_(d, TSR_RNG_BERNOULLI, 0.5, 0.0));
  double v[64];
  assert_int_equal(ts_read(d, v, n), n);
  for (int i = 0; i < n; ++i) assert_true(v[i] == 0.0 || v[i] == 1.0);
  release_n(4, (tsr_tensor *[]){a, b, c, d});
}

static void test_random_creation_refuses_bad_dtypes_bounds_and_grad_tensors(void **state) {
  (void)state;
  const int64_t n = 8;
  expect_refused("rand int32", tsr_rand(g_device, TSR_INT32, 1, &n, 0, 1));
  expect_refused("randn int64", tsr_randn(g_device, TSR_INT64, 1, &n, 0, 1));
  expect_refused("rand low > high", tsr_rand(g_device, TSR_FLOAT32, 1, &n, 2, 1));
  expect_refused("randn std < 0", tsr_randn(g_device, TSR_FLOAT32, 1, &n, 0, -1));
  expect_refused("rand NULL device", tsr_rand(NULL, TSR_FLOAT32, 1, &n, 0, 1));
  expect_refused_status("rng_fill_ NULL", tsr_rng_fill_(NULL, TSR_RNG_UNIFORM, 0, 1));
  tsr_tensor *i = tsr_tensor_empty(g_device, TSR_INT32, 1, &n);
  expect_refused_status("rng_fill_ uniform int", tsr_rng_fill_(i, TSR_RNG_UNIFORM, 0, 1));
  expect_refused_status("rng_fill_ distribution 7", tsr_rng_fill_(i, 7, 0, 1));
  tsr_tensor *f = tsr_tensor_empty(g_device, TSR_FLOAT32, 1, &n);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(f, 1));
  expect_refused_status("rng_fill_ of a tensor requiring grad",
                        tsr_rng_fill_(f, TSR_RNG_UNIFORM, 0, 1));
  expect_refused_status("rng_fill_seeded_ of a tensor requiring grad",
                        tsr_rng_fill_seeded_(f, TSR_RNG_UNIFORM, 0, 1, 1, 0));
  int prev = tsr_grad_mode_set(0);
  TS_ASSERT_OK(tsr_rng_fill_(f, TSR_RNG_UNIFORM, 0, 1));
  tsr_grad_mode_set(prev);
  release_n(2, (tsr_tensor *[]){i, f});
}

// --- conv2d -----------------------------------------------------------------

static tsr_conv2d_attrs conv_attrs(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  tsr_conv2d_attrs a = {
      sizeof(a), {stride, stride},    {pad, pad}, {pad, pad}, {dilation, dilation},
      groups,    TSR_ACTIVATION_NONE, 0};
  return a;
}

static void conv_case_check(const char *what, tsr_dtype_t dtype, conv_problem p, int with_bias) {
  conv_problem_init(&p);
  int64_t xs[4] = {p.n, p.c, p.h, p.w}, ws[4] = {p.o, p.c / p.a.groups, p.kh, p.kw};
  int64_t ys[4] = {p.n, p.o, p.oh, p.ow};
  double *x = dalloc(orc_numel(4, xs)), *w = dalloc(orc_numel(4, ws)), b[64];
  double *y = dalloc(orc_numel(4, ys));
  tsr_tensor *tx = make_random(dtype, 4, xs, 11, x);
  tsr_tensor *tw = make_random(dtype, 4, ws, 12, w);
  tsr_tensor *tb = with_bias ? make_random(dtype, 1, &p.o, 13, b) : NULL;
  conv_oracle(&p, x, w, with_bias ? b : NULL, y, NULL, NULL, NULL, NULL);
  double tol = dtype == TSR_FLOAT32 ? 1e-4 : 1e-12;
  tsr_tensor *ty = tsr_conv2d(tx, tw, tb, &p.a);
  expect_values(what, ty, 4, ys, y, tol);
  // Fused activations apply after the bias.
  tsr_conv2d_attrs fused = p.a;
  fused.activation = TSR_ACTIVATION_RELU;
  tsr_tensor *tr = tsr_conv2d(tx, tw, tb, &fused);
  fused.activation = TSR_ACTIVATION_SIGMOID;
  tsr_tensor *ts = tsr_conv2d(tx, tw, tb, &fused);
  int64_t ny = orc_numel(4, ys);
  double *r = dalloc(ny), *s = dalloc(ny);
  for (int64_t i = 0; i < ny; ++i) {
    r[i] = tsr_oracle_activation_value(TSR_ACTIVATION_RELU, y[i]);
    s[i] = tsr_oracle_activation_value(TSR_ACTIVATION_SIGMOID, y[i]);
  }
  expect_values("conv2d + relu", tr, 4, ys, r, tol);
  expect_values("conv2d + sigmoid", ts, 4, ys, s, tol);
  release_n(6, (tsr_tensor *[]){tx, tw, tb, ty, tr, ts});
  free(x);
  free(w);
  free(y);
  free(r);
  free(s);
}

static void test_conv2d_matches_float64_loops_with_bias_stride_padding_dilation_and_groups(
    void **state) {
  (void)state;
  tsr_dtype_t dtypes[2] = {TSR_FLOAT32, TSR_FLOAT64};
  for (int k = 0; k < 2; ++k) {
    conv_problem grouped = {2, 4, 5, 5, 6, 3, 3, conv_attrs(2, 1, 1, 2), 0, 0};
    conv_case_check("conv2d stride 2 pad 1 groups 2", dtypes[k], grouped, 1);
    conv_problem dilated = {1, 3, 6, 7, 2, 3, 2, conv_attrs(1, 0, 2, 1), 0, 0};
    conv_case_check("conv2d dilation 2", dtypes[k], dilated, 0);
    conv_problem uneven = {1, 2, 4, 5, 3, 2, 3, conv_attrs(1, 0, 1, 1), 0, 0};
    uneven.a.pad_before[0] = 1;
    uneven.a.pad_after[1] = 2;
    conv_case_check("conv2d uneven padding", dtypes[k], uneven, 1);
  }
  // attrs NULL: stride 1, no padding.
  double x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 0, 0, -1};
  tsr_tensor *tx = make(TSR_FLOAT32, 4, (int64_t[]){1, 1, 3, 3}, x);
  tsr_tensor *tw = make(TSR_FLOAT32, 4, (int64_t[]){1, 1, 2, 2}, w);
  tsr_tensor *ty = tsr_conv2d(tx, tw, NULL, NULL);
  expect_values("conv2d defaults", ty, 4, (int64_t[]){1, 1, 2, 2}, (double[]){-4, -4, -4, -4}, 0);
  release_n(3, (tsr_tensor *[]){tx, tw, ty});
}

static void test_conv2d_backward_functions_match_the_adjoint_loops(void **state) {
  (void)state;
  conv_problem p = {2, 4, 5, 6, 4, 3, 2, conv_attrs(2, 1, 1, 2), 0, 0};
  conv_problem_init(&p);
  int64_t xs[4] = {p.n, p.c, p.h, p.w}, ws[4] = {p.o, p.c / 2, p.kh, p.kw};
  int64_t ys[4] = {p.n, p.o, p.oh, p.ow};
  int64_t nx = orc_numel(4, xs), nw = orc_numel(4, ws);
  double *x = dalloc(nx), *w = dalloc(nw), *dy = dalloc(orc_numel(4, ys));
  double *dx = dalloc(nx), *dw = dalloc(nw), db[4] = {0};
  tsr_tensor *tx = make_random(TSR_FLOAT64, 4, xs, 21, x);
  tsr_tensor *tw = make_random(TSR_FLOAT64, 4, ws, 22, w);
  tsr_tensor *tdy = make_random(TSR_FLOAT64, 4, ys, 23, dy);
  conv_oracle(&p, x, w, NULL, NULL, dy, dx, dw, db);
  tsr_tensor *tdx = tsr_conv2d_backward_data(tdy, tw, xs, &p.a);
  expect_values("conv2d_backward_data", tdx, 4, xs, dx, 1e-12);
  tsr_tensor *tdw = NULL, *tdb = NULL;
  TS_ASSERT_OK(tsr_conv2d_backward_filter(tdy, tx, ws, &p.a, &tdw, &tdb));
  expect_values("conv2d_backward_filter dw", tdw, 4, ws, dw, 1e-12);
  expect_values("conv2d_backward_filter dbias", tdb, 1, &p.o, db, 1e-12);
  tsr_tensor *tdw2 = NULL;
  TS_ASSERT_OK(tsr_conv2d_backward_filter(tdy, tx, ws, &p.a, &tdw2, NULL));
  expect_values("conv2d_backward_filter without dbias", tdw2, 4, ws, dw, 1e-12);
  // Shapes that do not belong together are refused.
  int64_t bad_xs[4] = {p.n, p.c, p.h + 3, p.w};
  expect_refused("backward_data with a wrong x size",
                 tsr_conv2d_backward_data(tdy, tw, bad_xs, &p.a));
  expect_refused("backward_data NULL x_sizes", tsr_conv2d_backward_data(tdy, tw, NULL, &p.a));
  tsr_tensor *none = NULL;
  expect_refused_status("backward_filter NULL out_dw",
                        tsr_conv2d_backward_filter(tdy, tx, ws, &p.a, NULL, NULL));
  expect_refused_status("backward_filter NULL dy",
                        tsr_conv2d_backward_filter(NULL, tx, ws, &p.a, &none, NULL));
  assert_null(none);
  release_n(7, (tsr_tensor *[]){tx, tw, tdy, tdx, tdw, tdb, tdw2});
  free(x);
  free(w);
  free(dy);
  free(dx);
  free(dw);
}

static void test_conv2d_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = make_random(TSR_FLOAT32, 4, (int64_t[]){1, 4, 5, 5}, 1, NULL);
  tsr_tensor *x3 = make_random(TSR_FLOAT32, 3, (int64_t[]){4, 5, 5}, 1, NULL);
  tsr_tensor *xi = tsr_zeros(g_device, TSR_INT32, 4, (int64_t[]){1, 4, 5, 5});
  tsr_tensor *w = make_random(TSR_FLOAT32, 4, (int64_t[]){2, 4, 3, 3}, 2, NULL);
  tsr_tensor *w3 = make_random(TSR_FLOAT32, 4, (int64_t[]){2, 3, 3, 3}, 2, NULL);
  tsr_tensor *big = make_random(TSR_FLOAT32, 4, (int64_t[]){2, 4, 7, 7}, 2, NULL);
  tsr_tensor *b3 = make_random(TSR_FLOAT32, 1, (int64_t[]){3}, 3, NULL);
  tsr_conv2d_attrs stride0 = conv_attrs(0, 0, 1, 1);
  tsr_conv2d_attrs groups3 = conv_attrs(1, 0, 1, 3);
  tsr_conv2d_attrs act9 = conv_attrs(1, 0, 1, 1);
  act9.activation = 9;
  expect_refused("conv2d NULL x", tsr_conv2d(NULL, w, NULL, NULL));
  expect_refused("conv2d NULL w", tsr_conv2d(x, NULL, NULL, NULL));
  expect_refused("conv2d rank-3 x", tsr_conv2d(x3, w, NULL, NULL));
  expect_refused("conv2d channel mismatch", tsr_conv2d(x, w3, NULL, NULL));
  expect_refused("conv2d bias of the wrong size", tsr_conv2d(x, w, b3, NULL));
  expect_refused("conv2d stride 0", tsr_conv2d(x, w, NULL, &stride0));
  expect_refused("conv2d groups not dividing", tsr_conv2d(x, w, NULL, &groups3));
  expect_refused("conv2d bad activation", tsr_conv2d(x, w, NULL, &act9));
  expect_refused("conv2d kernel larger than the input", tsr_conv2d(x, big, NULL, NULL));
  expect_refused("conv2d int32 x", tsr_conv2d(xi, w, NULL, NULL));
  release_n(7, (tsr_tensor *[]){x, x3, xi, w, w3, big, b3});
}

typedef struct conv_case {
  tsr_conv2d_attrs attrs;
} conv_case;

static tsr_tensor *conv_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  const conv_case *c = user;
  return tsr_conv2d(inputs[0], inputs[1], n > 2 ? inputs[2] : NULL, &c->attrs);
}

static void test_conv2d_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_CONV2D);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 4, (int64_t[]){1, 4, 5, 5}, 31, -1, 1, NULL);
  tsr_tensor *w = make_random_on(dev, TSR_FLOAT64, 4, (int64_t[]){4, 2, 3, 3}, 32, -1, 1, NULL);
  tsr_tensor *b = make_random_on(dev, TSR_FLOAT64, 1, (int64_t[]){4}, 33, -1, 1, NULL);
  conv_case c = {conv_attrs(2, 1, 1, 2)};
  gradcheck_expect("conv2d stride 2 pad 1 groups 2 bias", conv_fn, &c, 3,
                   (tsr_tensor *[]){x, w, b});
  c.attrs = conv_attrs(1, 1, 1, 1);
  tsr_tensor *w1 = make_random_on(dev, TSR_FLOAT64, 4, (int64_t[]){3, 4, 3, 3}, 34, -1, 1, NULL);
  tsr_tensor *b1 = make_random_on(dev, TSR_FLOAT64, 1, (int64_t[]){3}, 35, -1, 1, NULL);
  gradcheck_expect("conv2d without bias", conv_fn, &c, 2, (tsr_tensor *[]){x, w1});
  c.attrs.activation = TSR_ACTIVATION_RELU;
  gradcheck_expect("conv2d + fused relu", conv_fn, &c, 3, (tsr_tensor *[]){x, w1, b1});
  c.attrs.activation = TSR_ACTIVATION_TANH;
  gradcheck_expect("conv2d + tanh", conv_fn, &c, 3, (tsr_tensor *[]){x, w1, b1});
  // ReLU stays fused on the tape; other activations record their own node.
  tsr_tensor *leaf = tsr_detach(x);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(leaf, 1));
  tsr_tensor *y = tsr_conv2d(leaf, w1, b1, &c.attrs);
  TS_ASSERT_TENSOR(y);
  assert_string_not_equal(tsr_tensor_grad_fn_name(y), "conv2d");
  c.attrs.activation = TSR_ACTIVATION_RELU;
  tsr_tensor *z = tsr_conv2d(leaf, w1, b1, &c.attrs);
  TS_ASSERT_TENSOR(z);
  assert_string_equal(tsr_tensor_grad_fn_name(z), "conv2d");
  release_n(8, (tsr_tensor *[]){x, w, b, w1, b1, leaf, y, z});
}

// --- pool2d -----------------------------------------------------------------

static tsr_pool2d_attrs pool_attrs(tsr_pool_kind_t kind, int64_t k, int64_t s, int64_t p,
                                   int ceil_mode, int count_include_pad) {
  tsr_pool2d_attrs a = {sizeof(a), kind,   (uint32_t)ceil_mode,         {k, k}, {s, s}, {p, p},
                        {p, p},    {1, 1}, (uint32_t)count_include_pad, 0};
  return a;
}

static void pool_case_check(const char *what, tsr_dtype_t dtype, const int64_t *xs,
                            tsr_pool2d_attrs a, int64_t oh, int64_t ow) {
  int64_t ys[4] = {xs[0], xs[1], oh, ow};
  int64_t nx = orc_numel(4, xs), ny = orc_numel(4, ys);
  double *x = dalloc(nx), *y = dalloc(ny);
  int64_t *idx = calloc((size_t)ny, sizeof(int64_t));
  assert_non_null(idx);
  tsr_tensor *tx = make_random(dtype, 4, xs, 41, x);
  pool_oracle(xs, x, &a, oh, ow, y, idx);
  tsr_tensor *indices = NULL;
  tsr_tensor *ty = tsr_pool2d(tx, &a, &indices);
  expect_values(what, ty, 4, ys, y, dtype == TSR_FLOAT32 ? 1e-6 : 1e-12);
  if (a.kind == TSR_POOL_MAX) {
    expect_shape("pool2d indices", indices, 4, ys);
    expect_i64("pool2d indices", indices, idx, ny);
  } else {
    assert_null(indices);
  }
  release_n(3, (tsr_tensor *[]){tx, ty, indices});
  free(x);
  free(y);
  free(idx);
}

static void test_pool2d_matches_float64_loops_with_padding_and_ceil_mode(void **state) {
  (void)state;
  const int64_t xs[4] = {2, 3, 5, 5}, xs6[4] = {1, 2, 6, 6};
  tsr_dtype_t dtypes[2] = {TSR_FLOAT32, TSR_FLOAT64};
  for (int k = 0; k < 2; ++k) {
    pool_case_check("max pool k3 s2 p1", dtypes[k], xs, pool_attrs(TSR_POOL_MAX, 3, 2, 1, 0, 0), 3,
                    3);
    pool_case_check("avg pool k3 s2 p1 counting the padding", dtypes[k], xs,
                    pool_attrs(TSR_POOL_AVG, 3, 2, 1, 0, 1), 3, 3);
    pool_case_check("avg pool k3 s2 p1 without the padding", dtypes[k], xs,
                    pool_attrs(TSR_POOL_AVG, 3, 2, 1, 0, 0), 3, 3);
    // 6 with k3 s2: floor gives 2 windows, ceil 3 (the last one clipped).
    pool_case_check("max pool floor", dtypes[k], xs6, pool_attrs(TSR_POOL_MAX, 3, 2, 0, 0, 0), 2,
                    2);
    pool_case_check("max pool ceil", dtypes[k], xs6, pool_attrs(TSR_POOL_MAX, 3, 2, 0, 1, 0), 3, 3);
    pool_case_check("avg pool ceil", dtypes[k], xs6, pool_attrs(TSR_POOL_AVG, 3, 2, 0, 1, 0), 3, 3);
  }
  // The conveniences: 2x2 windows of a 4x4 ramp.
  double ramp[16];
  for (int i = 0; i < 16; ++i) ramp[i] = i;
  tsr_tensor *x = make(TSR_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, ramp);
  tsr_tensor *mx = tsr_max_pool2d(x, 2, 2, 0);
  expect_values("max_pool2d", mx, 4, (int64_t[]){1, 1, 2, 2}, (double[]){5, 7, 13, 15}, 0);
  tsr_tensor *av = tsr_avg_pool2d(x, 2, 2, 0);
  expect_values("avg_pool2d", av, 4, (int64_t[]){1, 1, 2, 2}, (double[]){2.5, 4.5, 10.5, 12.5}, 0);
  // PyTorch's default counts the padding: window (0, 1) of k2 s2 p1 holds
  // x[0][1] + x[0][2] = 3 and two padding cells, so it averages to 3 / 4.
  tsr_tensor *avp = tsr_avg_pool2d(x, 2, 2, 1);
  expect_shape("avg_pool2d padded", avp, 4, (int64_t[]){1, 1, 3, 3});
  double edge = 0.0;
  tsr_tensor *c0 = tsr_slice(avp, 3, 1, 2, 1), *c1 = tsr_slice(c0, 2, 0, 1, 1);
  assert_int_equal(ts_read(c1, &edge, 1), 1);
  if (edge != 0.75)
    fail_msg("avg_pool2d padded window: %g, expected 0.75", edge);
  release_n(6, (tsr_tensor *[]){x, mx, av, avp, c0, c1});
}

static void test_pool2d_backward_routes_to_the_max_and_spreads_the_average(void **state) {
  (void)state;
  double v[16];
  for (int i = 0; i < 16; ++i) v[i] = (i * 7) % 16;  // a permutation: no ties
  tsr_tensor *x = make(TSR_FLOAT64, 4, (int64_t[]){1, 1, 4, 4}, v);
  tsr_pool2d_attrs a = pool_attrs(TSR_POOL_MAX, 2, 2, 0, 0, 0);
  tsr_tensor *idx = NULL;
  tsr_tensor *y = tsr_pool2d(x, &a, &idx);
  TS_ASSERT_TENSOR(y);
  tsr_tensor *dy = make(TSR_FLOAT64, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 2, 3, 4});
  const int64_t xs[4] = {1, 1, 4, 4};
  tsr_tensor *dx = tsr_pool2d_backward(dy, idx, xs, &a);
  double want[16] = {0};
  int64_t positions[4];
  assert_int_equal(ts_read_i64(idx, positions, 4), 4);
  for (int i = 0; i < 4; ++i) want[positions[i]] = i + 1;
  expect_values("max pool backward", dx, 4, xs, want, 0);
  expect_refused("max pool backward without indices", tsr_pool2d_backward(dy, NULL, xs, &a));
  tsr_pool2d_attrs avg = pool_attrs(TSR_POOL_AVG, 2, 2, 0, 0, 0);
  tsr_tensor *da = tsr_pool2d_backward(dy, NULL, xs, &avg);
  for (int h = 0; h < 4; ++h) {
    for (int w = 0; w < 4; ++w) want[h * 4 + w] = (double)((h / 2) * 2 + w / 2 + 1) / 4.0;
  }
  expect_values("avg pool backward", da, 4, xs, want, 0);
  expect_refused("pool backward with a wrong x size",
                 tsr_pool2d_backward(dy, NULL, (int64_t[]){1, 1, 8, 8}, &avg));
  release_n(6, (tsr_tensor *[]){x, idx, y, dy, dx, da});
}

static void test_pool2d_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = make_random(TSR_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, 1, NULL);
  tsr_tensor *x3 = make_random(TSR_FLOAT32, 3, (int64_t[]){1, 4, 4}, 1, NULL);
  tsr_tensor *xi = tsr_zeros(g_device, TSR_INT64, 4, (int64_t[]){1, 1, 4, 4});
  tsr_pool2d_attrs ok = pool_attrs(TSR_POOL_MAX, 2, 2, 0, 0, 0);
  tsr_pool2d_attrs k0 = pool_attrs(TSR_POOL_MAX, 0, 1, 0, 0, 0);
  tsr_pool2d_attrs huge = pool_attrs(TSR_POOL_AVG, 9, 1, 0, 0, 0);
  tsr_pool2d_attrs kind = pool_attrs(5, 2, 2, 0, 0, 0);
  tsr_pool2d_attrs dil0 = ok;
  dil0.dilation[1] = 0;
  tsr_tensor *idx = (tsr_tensor *)&idx;  // must be reset to NULL on failure
  expect_refused("pool2d NULL x", tsr_pool2d(NULL, &ok, &idx));
  assert_null(idx);
  expect_refused("pool2d NULL attrs", tsr_pool2d(x, NULL, NULL));
  expect_refused("pool2d rank 3", tsr_pool2d(x3, &ok, NULL));
  expect_refused("pool2d kernel 0", tsr_pool2d(x, &k0, NULL));
  expect_refused("pool2d window larger than the input", tsr_pool2d(x, &huge, NULL));
  expect_refused("pool2d bad kind", tsr_pool2d(x, &kind, NULL));
  expect_refused("pool2d dilation 0", tsr_pool2d(x, &dil0, NULL));
  expect_refused("pool2d int64 x", tsr_pool2d(xi, &ok, NULL));
  expect_refused("max_pool2d stride 0", tsr_max_pool2d(x, 2, 0, 0));
  expect_refused("avg_pool2d NULL", tsr_avg_pool2d(NULL, 2, 2, 0));
  release_n(3, (tsr_tensor *[]){x, x3, xi});
}

static tsr_tensor *pool_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  return tsr_pool2d(inputs[0], (const tsr_pool2d_attrs *)user, NULL);
}

static void test_pool2d_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_POOL2D);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 4, (int64_t[]){1, 2, 5, 5}, 51, -1, 1, NULL);
  tsr_pool2d_attrs a = pool_attrs(TSR_POOL_MAX, 3, 2, 1, 0, 0);
  gradcheck_expect("max pool k3 s2 p1", pool_fn, &a, 1, &x);
  a = pool_attrs(TSR_POOL_MAX, 2, 2, 0, 1, 0);
  gradcheck_expect("max pool ceil mode", pool_fn, &a, 1, &x);
  a = pool_attrs(TSR_POOL_AVG, 3, 2, 1, 0, 1);
  gradcheck_expect("avg pool counting the padding", pool_fn, &a, 1, &x);
  a = pool_attrs(TSR_POOL_AVG, 3, 2, 1, 1, 0);
  gradcheck_expect("avg pool ceil mode without the padding", pool_fn, &a, 1, &x);
  tsr_tensor_release(x);
}

// --- softmax ----------------------------------------------------------------

static void test_softmax_and_log_softmax_match_float64_along_either_axis(void **state) {
  (void)state;
  const int64_t xs[2] = {3, 5};
  double x[15], y[15], yt[15], xt[15];
  tsr_tensor *tx = make_random(TSR_FLOAT32, 2, xs, 61, x);
  for (int take_log = 0; take_log < 2; ++take_log) {
    softmax_oracle(x, 3, 5, take_log, y);
    tsr_tensor *a = take_log ? tsr_log_softmax(tx, 1) : tsr_softmax(tx, 1);
    expect_values(take_log ? "log_softmax axis 1" : "softmax axis 1", a, 2, xs, y, F32_TOL);
    tsr_tensor *b = take_log ? tsr_log_softmax(tx, -1) : tsr_softmax(tx, -1);
    expect_values("softmax axis -1", b, 2, xs, y, F32_TOL);
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 5; ++c) xt[c * 3 + r] = x[r * 5 + c];
    }
    softmax_oracle(xt, 5, 3, take_log, yt);
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 5; ++c) y[r * 5 + c] = yt[c * 3 + r];
    }
    tsr_tensor *c = take_log ? tsr_log_softmax(tx, 0) : tsr_softmax(tx, 0);
    expect_values("softmax axis 0", c, 2, xs, y, F32_TOL);
    release_n(3, (tsr_tensor *[]){a, b, c});
  }
  // Large logits do not overflow.
  tsr_tensor *big = make(TSR_FLOAT32, 1, (int64_t[]){2}, (double[]){1000, 1000});
  tsr_tensor *half = tsr_softmax(big, 0);
  expect_values("softmax of large equal logits", half, 1, (int64_t[]){2}, (double[]){0.5, 0.5}, 0);
  release_n(3, (tsr_tensor *[]){tx, big, half});
}

static void test_softmax_backward_matches_its_closed_form(void **state) {
  (void)state;
  const int64_t xs[2] = {2, 4};
  double x[8], dy[8], y[8], ly[8], want[8];
  tsr_tensor *tx = make_random(TSR_FLOAT64, 2, xs, 62, x);
  tsr_tensor *tdy = make_random(TSR_FLOAT64, 2, xs, 63, dy);
  softmax_oracle(x, 2, 4, 0, y);
  softmax_oracle(x, 2, 4, 1, ly);
  tsr_tensor *ty = make(TSR_FLOAT64, 2, xs, y), *tly = make(TSR_FLOAT64, 2, xs, ly);
  softmax_oracle_ex(y, dy, 2, 4, 0, want);
  tsr_tensor *dx = tsr_softmax_backward(tdy, ty, 1, 0);
  expect_values("softmax_backward", dx, 2, xs, want, 1e-12);
  softmax_oracle_ex(ly, dy, 2, 4, 1, want);
  tsr_tensor *dlx = tsr_softmax_backward(tdy, tly, -1, 1);
  expect_values("log_softmax backward", dlx, 2, xs, want, 1e-12);
  tsr_tensor *short_dy = make(TSR_FLOAT64, 2, (int64_t[]){2, 3}, x);
  expect_refused("softmax_backward shape mismatch", tsr_softmax_backward(short_dy, ty, 1, 0));
  expect_refused("softmax_backward NULL y", tsr_softmax_backward(tdy, NULL, 1, 0));
  release_n(7, (tsr_tensor *[]){tx, tdy, ty, tly, dx, dlx, short_dy});
}

static void test_softmax_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 1, NULL);
  tsr_tensor *xi = tsr_zeros(g_device, TSR_INT32, 2, (int64_t[]){2, 3});
  tsr_tensor *s = tsr_zeros(g_device, TSR_FLOAT32, 0, NULL);
  expect_refused("softmax NULL", tsr_softmax(NULL, 0));
  expect_refused("softmax axis 2 of rank 2", tsr_softmax(x, 2));
  expect_refused("log_softmax axis -3 of rank 2", tsr_log_softmax(x, -3));
  expect_refused("softmax of a scalar", tsr_softmax(s, 0));
  expect_refused("softmax int32", tsr_softmax(xi, 1));
  release_n(3, (tsr_tensor *[]){x, xi, s});
}

typedef struct axis_case {
  int32_t axis;
  int log;
} axis_case;

static tsr_tensor *softmax_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  const axis_case *c = user;
  return c->log ? tsr_log_softmax(inputs[0], c->axis) : tsr_softmax(inputs[0], c->axis);
}

static void test_softmax_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_SOFTMAX);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 3, 4}, 64, -2, 2, NULL);
  axis_case c = {1, 0};
  gradcheck_expect("softmax axis 1", softmax_fn, &c, 1, &x);
  c = (axis_case){-1, 1};
  gradcheck_expect("log_softmax axis -1", softmax_fn, &c, 1, &x);
  c = (axis_case){0, 1};
  gradcheck_expect("log_softmax axis 0", softmax_fn, &c, 1, &x);
  tsr_tensor_release(x);
}

// --- layer norm -------------------------------------------------------------

// The oracle's layer norm of rows of |len| values; gamma/beta (length
// |len|) may be NULL.
static void layer_norm_oracle(const double *x, int64_t rows, int64_t len, const double *gamma,
                              const double *beta, double eps, double *y, double *mean,
                              double *rstd) {
  const int64_t xs[2] = {rows, len}, ss[2] = {rows, 1};
  const tsr_layer_norm_attrs a = {sizeof(a), 1, gamma != NULL, eps};
  tsr_oracle_tensor in[3] = {tsr_oracle_tensor_over(TSR_FLOAT64, 2, xs, (double *)x),
                             tsr_oracle_tensor_over(TSR_FLOAT64, 1, &len, (double *)gamma),
                             tsr_oracle_tensor_over(TSR_FLOAT64, 1, &len, (double *)beta)};
  tsr_oracle_tensor out[3] = {tsr_oracle_tensor_over(TSR_FLOAT64, 2, xs, y),
                              tsr_oracle_tensor_over(TSR_FLOAT64, 2, ss, mean),
                              tsr_oracle_tensor_over(TSR_FLOAT64, 2, ss, rstd)};
  assert_int_equal(
      tsr_oracle_compute_values(TSR_OP_LAYER_NORM, &a, gamma != NULL ? 3 : 1, in, 3, out), TSR_OK);
}

static void test_layer_norm_matches_float64_with_and_without_affine(void **state) {
  (void)state;
  const int64_t xs[3] = {2, 3, 4};
  double x[24], g[12], b[12], y[24], mean[6], rstd[6];
  tsr_dtype_t dtypes[2] = {TSR_FLOAT32, TSR_FLOAT64};
  for (int k = 0; k < 2; ++k) {
    double tol = dtypes[k] == TSR_FLOAT32 ? 1e-5 : 1e-12;
    tsr_tensor *tx = make_random(dtypes[k], 3, xs, 71, x);
    // Over the last axis, plain.
    tsr_tensor *m = NULL, *r = NULL;
    tsr_tensor *ty = tsr_layer_norm(tx, NULL, NULL, -1, 1e-5, &m, &r);
    layer_norm_oracle(x, 6, 4, NULL, NULL, 1e-5, y, mean, rstd);
    expect_values("layer_norm last axis", ty, 3, xs, y, tol);
    expect_values("layer_norm mean", m, 3, (int64_t[]){2, 3, 1}, mean, tol);
    expect_values("layer_norm rstd", r, 3, (int64_t[]){2, 3, 1}, rstd, tol * 10);
    // Over axes 1 and 2, affine.
    tsr_tensor *tg = make_random(dtypes[k], 2, (int64_t[]){3, 4}, 72, g);
    tsr_tensor *tb = make_random(dtypes[k], 2, (int64_t[]){3, 4}, 73, b);
    tsr_tensor *ta = tsr_layer_norm(tx, tg, tb, 1, 1e-3, NULL, NULL);
    layer_norm_oracle(x, 2, 12, g, b, 1e-3, y, mean, rstd);
    expect_values("layer_norm affine axis 1", ta, 3, xs, y, tol);
    release_n(7, (tsr_tensor *[]){tx, m, r, ty, tg, tb, ta});
  }
}

static void test_layer_norm_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 4}, 1, NULL);
  tsr_tensor *xi = tsr_zeros(g_device, TSR_INT32, 2, (int64_t[]){2, 4});
  tsr_tensor *g3 = tsr_ones(g_device, TSR_FLOAT32, 1, (int64_t[]){3});
  tsr_tensor *g4 = tsr_ones(g_device, TSR_FLOAT32, 1, (int64_t[]){4});
  expect_refused("layer_norm NULL", tsr_layer_norm(NULL, NULL, NULL, -1, 1e-5, NULL, NULL));
  expect_refused("layer_norm axis 2", tsr_layer_norm(x, NULL, NULL, 2, 1e-5, NULL, NULL));
  expect_refused("layer_norm gamma of the wrong size",
                 tsr_layer_norm(x, g3, g3, -1, 1e-5, NULL, NULL));
  expect_refused("layer_norm gamma without beta",
                 tsr_layer_norm(x, g4, NULL, -1, 1e-5, NULL, NULL));
  expect_refused("layer_norm int32", tsr_layer_norm(xi, NULL, NULL, -1, 1e-5, NULL, NULL));
  expect_refused("layer_norm negative eps", tsr_layer_norm(x, NULL, NULL, -1, -1.0, NULL, NULL));
  tsr_tensor *dx = NULL;
  expect_refused_status("layer_norm_backward NULL mean",
                        tsr_layer_norm_backward(x, x, NULL, x, NULL, -1, 1e-5, &dx, NULL, NULL));
  release_n(4, (tsr_tensor *[]){x, xi, g3, g4});
}

typedef struct norm_case {
  int32_t axis;
  int training;
  tsr_tensor *running_mean;
  tsr_tensor *running_var;
} norm_case;

static tsr_tensor *layer_norm_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  const norm_case *c = user;
  return tsr_layer_norm(inputs[0], n > 1 ? inputs[1] : NULL, n > 2 ? inputs[2] : NULL, c->axis,
                        1e-5, NULL, NULL);
}

static void test_layer_norm_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_LAYER_NORM);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 3, 4}, 74, -1, 1, NULL);
  tsr_tensor *g = make_random_on(dev, TSR_FLOAT64, 1, (int64_t[]){4}, 75, 0.5, 1.5, NULL);
  tsr_tensor *b = make_random_on(dev, TSR_FLOAT64, 1, (int64_t[]){4}, 76, -1, 1, NULL);
  norm_case c = {-1, 0, NULL, NULL};
  gradcheck_expect("layer_norm plain", layer_norm_fn, &c, 1, &x);
  gradcheck_expect("layer_norm affine", layer_norm_fn, &c, 3, (tsr_tensor *[]){x, g, b});
  tsr_tensor *g2 = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){3, 4}, 77, 0.5, 1.5, NULL);
  tsr_tensor *b2 = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){3, 4}, 78, -1, 1, NULL);
  c.axis = 1;
  gradcheck_expect("layer_norm affine over two axes", layer_norm_fn, &c, 3,
                   (tsr_tensor *[]){x, g2, b2});
  release_n(5, (tsr_tensor *[]){x, g, b, g2, b2});
}

// --- batch norm -------------------------------------------------------------

// The oracle's BATCH_NORM (eps 1e-5, momentum 0.1) of x [N, C, ...] (sizes
// |xs|, rank 4): y, the saved statistics and the running ones after the step.
static void batch_norm_oracle(const int64_t *xs, const double *x, const double *g,
                              const double *b, const double *rm, const double *rv, int training,
                              double *y, double *mean, double *invstd, double *rm_out,
                              double *rv_out) {
  const int64_t *c = &xs[1];
  const tsr_batch_norm_attrs a = {sizeof(a), 1e-5, 0.1, (uint32_t)training, 0};
  tsr_oracle_tensor in[5] = {tsr_oracle_tensor_over(TSR_FLOAT64, 4, xs, (double *)x),
                             tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, (double *)g),
                             tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, (double *)b),
                             tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, (double *)rm),
                             tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, (double *)rv)};
  tsr_oracle_tensor out[5] = {tsr_oracle_tensor_over(TSR_FLOAT64, 4, xs, y),
                              tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, mean),
                              tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, invstd),
                              tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, rm_out),
                              tsr_oracle_tensor_over(TSR_FLOAT64, 1, c, rv_out)};
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_BATCH_NORM, &a, 5, in, 5, out), TSR_OK);
}

static void test_batch_norm_normalises_and_updates_the_running_statistics(void **state) {
  (void)state;
  const int64_t xs[4] = {4, 3, 2, 2}, cs = 3;
  double x[48], g[3], b[3], rm0[3] = {0.5, -0.5, 0.0}, rv0[3] = {1.0, 2.0, 0.5};
  tsr_dtype_t dtypes[2] = {TSR_FLOAT32, TSR_FLOAT64};
  for (int k = 0; k < 2; ++k) {
    tsr_dtype_t dt = dtypes[k];
    double tol = dt == TSR_FLOAT32 ? 1e-5 : 1e-12;
    tsr_tensor *tx = make_random(dt, 4, xs, 81, x);
    tsr_tensor *tg = make_random(dt, 1, &cs, 82, g);
    tsr_tensor *tb = make_random(dt, 1, &cs, 83, b);
    tsr_tensor *rm = make(dt, 1, &cs, rm0), *rv = make(dt, 1, &cs, rv0);
    double mean[3], invstd[3], y[48], nrm[3], nrv[3], ones[3] = {1, 1, 1}, zeros[3] = {0};
    batch_norm_oracle(xs, x, g, b, rm0, rv0, 1, y, mean, invstd, nrm, nrv);
    tsr_tensor *sm = NULL, *si = NULL;
    tsr_tensor *ty = tsr_batch_norm(tx, tg, tb, rm, rv, 1, 0.1, 1e-5, &sm, &si);
    expect_values("batch_norm training", ty, 4, xs, y, tol);
    expect_values("batch_norm save_mean", sm, 1, &cs, mean, tol);
    expect_values("batch_norm save_invstd", si, 1, &cs, invstd, tol * 10);
    expect_values("batch_norm running_mean", rm, 1, &cs, nrm, tol);
    expect_values("batch_norm running_var", rv, 1, &cs, nrv, tol);
    // Evaluation normalises with the running statistics and leaves them be.
    double unused[4][3];
    batch_norm_oracle(xs, x, g, b, nrm, nrv, 0, y, unused[0], unused[1], unused[2], unused[3]);
    tsr_tensor *te = tsr_batch_norm(tx, tg, tb, rm, rv, 0, 0.1, 1e-5, NULL, NULL);
    expect_values("batch_norm eval", te, 4, xs, y, tol);
    expect_values("batch_norm eval keeps running_mean", rm, 1, &cs, nrm, tol);
    // Without gamma, beta or running statistics (training): plain normalisation.
    batch_norm_oracle(xs, x, ones, zeros, zeros, ones, 1, y, unused[0], unused[1], unused[2],
                      unused[3]);
    tsr_tensor *tp = tsr_batch_norm(tx, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, NULL, NULL);
    expect_values("batch_norm without affine or running statistics", tp, 4, xs, y, tol);
    release_n(10, (tsr_tensor *[]){tx, tg, tb, rm, rv, sm, si, ty, te, tp});
  }
}

static void test_batch_norm_refuses_bad_input(void **state) {
  (void)state;
  const int64_t c3 = 3, c2 = 2;
  tsr_tensor *x = make_random(TSR_FLOAT32, 4, (int64_t[]){2, 3, 2, 2}, 1, NULL);
  tsr_tensor *x1 = make_random(TSR_FLOAT32, 1, (int64_t[]){3}, 1, NULL);
  tsr_tensor *g2 = tsr_ones(g_device, TSR_FLOAT32, 1, &c2);
  tsr_tensor *g3d = tsr_ones(g_device, TSR_FLOAT64, 1, &c3);
  tsr_tensor *r3 = tsr_zeros(g_device, TSR_FLOAT32, 1, &c3);
  expect_refused("batch_norm NULL",
                 tsr_batch_norm(NULL, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, NULL, NULL));
  expect_refused("batch_norm rank 1",
                 tsr_batch_norm(x1, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, NULL, NULL));
  expect_refused("batch_norm gamma [2] for 3 channels",
                 tsr_batch_norm(x, g2, NULL, NULL, NULL, 1, 0.1, 1e-5, NULL, NULL));
  expect_refused("batch_norm float64 gamma for float32 x",
                 tsr_batch_norm(x, g3d, NULL, NULL, NULL, 1, 0.1, 1e-5, NULL, NULL));
  expect_refused("batch_norm eval without running statistics",
                 tsr_batch_norm(x, NULL, NULL, NULL, r3, 0, 0.1, 1e-5, NULL, NULL));
  expect_refused("batch_norm momentum 2",
                 tsr_batch_norm(x, NULL, NULL, r3, r3, 1, 2.0, 1e-5, NULL, NULL));
  tsr_tensor *dx = NULL;
  expect_refused_status("batch_norm_backward NULL save_mean",
                        tsr_batch_norm_backward(x, x, NULL, NULL, r3, 1, 1e-5, &dx, NULL, NULL));
  release_n(5, (tsr_tensor *[]){x, x1, g2, g3d, r3});
}

static tsr_tensor *batch_norm_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  const norm_case *c = user;
  return tsr_batch_norm(inputs[0], inputs[1], inputs[2], c->running_mean, c->running_var,
                        c->training, 0.1, 1e-5, NULL, NULL);
}

static void test_batch_norm_gradients_match_finite_differences_in_training_and_eval(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_BATCH_NORM);
  const int64_t cs = 3;
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 4, (int64_t[]){3, 3, 2, 2}, 84, -1, 1, NULL);
  tsr_tensor *g = make_random_on(dev, TSR_FLOAT64, 1, &cs, 85, 0.5, 1.5, NULL);
  tsr_tensor *b = make_random_on(dev, TSR_FLOAT64, 1, &cs, 86, -1, 1, NULL);
  norm_case c = {0, 1, make_on(dev, TSR_FLOAT64, 1, &cs, (double[]){0, 0.1, -0.1}),
                 make_on(dev, TSR_FLOAT64, 1, &cs, (double[]){1, 0.5, 2})};
  gradcheck_expect("batch_norm training", batch_norm_fn, &c, 3, (tsr_tensor *[]){x, g, b});
  c.training = 0;
  gradcheck_expect("batch_norm eval", batch_norm_fn, &c, 3, (tsr_tensor *[]){x, g, b});
  // The running statistics are state: they never require grad.
  tsr_tensor *leaf = tsr_detach(x);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(leaf, 1));
  tsr_tensor *y =
      tsr_batch_norm(leaf, g, b, c.running_mean, c.running_var, 1, 0.1, 1e-5, NULL, NULL);
  TS_ASSERT_TENSOR(y);
  assert_string_equal(tsr_tensor_grad_fn_name(y), "batch_norm");
  assert_false(tsr_tensor_requires_grad(c.running_mean));
  release_n(7, (tsr_tensor *[]){x, g, b, c.running_mean, c.running_var, leaf, y});
}

// --- cross-entropy ----------------------------------------------------------

// The oracle's cross-entropy: per-row losses (0 for ignored rows), the
// rows' log-sum-exp, and the loss reduced as |a| says; with |dl| (the NONE
// loss's gradient), the backward into |dx| as well.
static double cross_entropy_oracle_ex(const double *x, const int64_t *t, int64_t n, int64_t c,
                                      const tsr_cross_entropy_attrs *a, double *rows, double *lse,
                                      const double *dl, double *dx) {
  const int64_t xs[2] = {n, c};
  tsr_oracle_tensor in[4];
  in[0] = tsr_oracle_tensor_over(TSR_FLOAT64, 2, xs, (double *)x);
  assert_int_equal(tsr_oracle_tensor_create(TSR_INT64, 1, &n, &in[1]), 0);
  for (int64_t r = 0; r < n; ++r) tsr_oracle_tensor_set(&in[1], r, 0, t[r]);
  tsr_cross_entropy_attrs none = *a;
  none.reduction = TSR_REDUCTION_NONE;
  double total = 0.0;
  tsr_oracle_tensor out[2] = {tsr_oracle_tensor_over(TSR_FLOAT64, 1, &n, rows),
                              tsr_oracle_tensor_over(TSR_FLOAT32, 1, &n, lse)};
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_CROSS_ENTROPY, &none, 2, in, 2, out), TSR_OK);
  out[0] = tsr_oracle_tensor_over(TSR_FLOAT64, 0, NULL, &total);
  out[1] = tsr_oracle_tensor_over(TSR_FLOAT32, 1, &n, lse);
  if (a->reduction != TSR_REDUCTION_NONE) {
    assert_int_equal(tsr_oracle_compute_values(TSR_OP_CROSS_ENTROPY, a, 2, in, 2, out), TSR_OK);
  }
  if (dl != NULL) {
    tsr_oracle_tensor bin[4] = {tsr_oracle_tensor_over(TSR_FLOAT64, 1, &n, (double *)dl), in[0],
                                in[1], tsr_oracle_tensor_over(TSR_FLOAT32, 1, &n, lse)};
    tsr_oracle_tensor bout = tsr_oracle_tensor_over(TSR_FLOAT64, 2, xs, dx);
    assert_int_equal(tsr_oracle_compute_values(TSR_OP_CROSS_ENTROPY_BACKWARD, &none, 4, bin, 1,
                                               &bout),
                     TSR_OK);
  }
  tsr_oracle_tensor_destroy(&in[1]);
  return total;
}

static double cross_entropy_oracle(const double *x, const int64_t *t, int64_t n, int64_t c,
                                   const tsr_cross_entropy_attrs *a, double *rows, double *lse) {
  return cross_entropy_oracle_ex(x, t, n, c, a, rows, lse, NULL, NULL);
}

static void test_cross_entropy_matches_float64_for_every_reduction(void **state) {
  (void)state;
  const int64_t xs[2] = {4, 5}, n = 4;
  double x[20], rows[4], lse[4];
  int64_t target[4] = {1, 4, 0, 2};
  tsr_tensor *tx = make_random(TSR_FLOAT32, 2, xs, 91, x);
  for (int i = 0; i < 20; ++i) x[i] = (double)(float)x[i];
  tsr_tensor *tt = make_i64_on(g_device, n, target);
  tsr_cross_entropy_attrs a = {sizeof(a), TSR_REDUCTION_NONE, 0, -100, 0.0};
  tsr_tensor *lse_t = NULL;
  tsr_tensor *none = tsr_cross_entropy(tx, tt, &a, &lse_t);
  cross_entropy_oracle(x, target, 4, 5, &a, rows, lse);
  expect_values("cross_entropy NONE", none, 1, &n, rows, 1e-5);
  expect_values("cross_entropy lse", lse_t, 1, &n, lse, 1e-5);
  assert_int_equal(tsr_tensor_dtype(lse_t), TSR_FLOAT32);
  tsr_tensor *mean = tsr_cross_entropy(tx, tt, NULL, NULL);  // defaults: MEAN
  a.reduction = TSR_REDUCTION_MEAN;
  double want = cross_entropy_oracle(x, target, 4, 5, &a, rows, lse);
  expect_values("cross_entropy MEAN", mean, 0, NULL, &want, 1e-5);
  // Row 1 ignored, label smoothing 0.2, summed.
  int64_t target_ignore[4] = {1, -1, 0, 2};
  tsr_tensor *ti = make_i64_on(g_device, n, target_ignore);
  a = (tsr_cross_entropy_attrs){sizeof(a), TSR_REDUCTION_SUM, 0, -1, 0.2};
  tsr_tensor *sum = tsr_cross_entropy(tx, ti, &a, NULL);
  want = cross_entropy_oracle(x, target_ignore, 4, 5, &a, rows, lse);
  expect_values("cross_entropy SUM ignore smoothing", sum, 0, NULL, &want, 1e-5);
  a.reduction = TSR_REDUCTION_MEAN;
  tsr_tensor *mean_i = tsr_cross_entropy(tx, ti, &a, NULL);
  want = cross_entropy_oracle(x, target_ignore, 4, 5, &a, rows, lse);
  expect_values("cross_entropy MEAN over non-ignored rows", mean_i, 0, NULL, &want, 1e-5);
  // The backward of NONE: dlogits = dloss * (softmax - onehot).
  a = (tsr_cross_entropy_attrs){sizeof(a), TSR_REDUCTION_NONE, 0, -100, 0.0};
  double dl[4] = {1.0, -2.0, 0.5, 3.0}, dx[20];
  tsr_tensor *tdl = make(TSR_FLOAT32, 1, &n, dl);
  tsr_tensor *tdx = tsr_cross_entropy_backward(tdl, tx, tt, lse_t, &a);
  cross_entropy_oracle_ex(x, target, 4, 5, &a, rows, lse, dl, dx);
  expect_values("cross_entropy_backward", tdx, 2, xs, dx, 1e-5);
  release_n(10, (tsr_tensor *[]){tx, tt, lse_t, none, mean, ti, sum, mean_i, tdl, tdx});
}

static void test_cross_entropy_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 1, NULL);
  tsr_tensor *x3 = make_random(TSR_FLOAT32, 3, (int64_t[]){2, 3, 1}, 1, NULL);
  tsr_tensor *t = make_i64_on(g_device, 2, (int64_t[]){0, 2});
  tsr_tensor *t3 = make_i64_on(g_device, 3, (int64_t[]){0, 2, 1});
  tsr_tensor *bad = make_i64_on(g_device, 2, (int64_t[]){0, 7});
  tsr_tensor *t32 = tsr_zeros(g_device, TSR_INT32, 1, (int64_t[]){2});
  tsr_cross_entropy_attrs smooth = {sizeof(smooth), TSR_REDUCTION_MEAN, 0, -100, 2.0};
  tsr_cross_entropy_attrs red = {sizeof(red), 7, 0, -100, 0.0};
  expect_refused("cross_entropy NULL logits", tsr_cross_entropy(NULL, t, NULL, NULL));
  expect_refused("cross_entropy NULL target", tsr_cross_entropy(x, NULL, NULL, NULL));
  expect_refused("cross_entropy rank-3 logits", tsr_cross_entropy(x3, t, NULL, NULL));
  expect_refused("cross_entropy int32 target", tsr_cross_entropy(x, t32, NULL, NULL));
  expect_refused("cross_entropy target of the wrong length", tsr_cross_entropy(x, t3, NULL, NULL));
  expect_refused("cross_entropy target out of range", tsr_cross_entropy(x, bad, NULL, NULL));
  expect_refused("cross_entropy smoothing 2", tsr_cross_entropy(x, t, &smooth, NULL));
  expect_refused("cross_entropy reduction 7", tsr_cross_entropy(x, t, &red, NULL));
  expect_refused("cross_entropy_backward NULL lse",
                 tsr_cross_entropy_backward(x, x, t, NULL, NULL));
  release_n(6, (tsr_tensor *[]){x, x3, t, t3, bad, t32});
}

static tsr_tensor *cross_entropy_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  return tsr_cross_entropy(inputs[0], inputs[1], (const tsr_cross_entropy_attrs *)user, NULL);
}

static void test_cross_entropy_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_CROSS_ENTROPY);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){4, 5}, 92, -2, 2, NULL);
  tsr_tensor *t = make_i64_on(dev, 4, (int64_t[]){1, 4, 0, 2});
  tsr_tensor *ti = make_i64_on(dev, 4, (int64_t[]){1, -100, 0, 2});
  tsr_cross_entropy_attrs a = {sizeof(a), TSR_REDUCTION_MEAN, 0, -100, 0.0};
  gradcheck_expect("cross_entropy mean", cross_entropy_fn, &a, 2, (tsr_tensor *[]){x, t});
  gradcheck_expect("cross_entropy mean with an ignored row", cross_entropy_fn, &a, 2,
                   (tsr_tensor *[]){x, ti});
  a.label_smoothing = 0.1;
  gradcheck_expect("cross_entropy mean with label smoothing", cross_entropy_fn, &a, 2,
                   (tsr_tensor *[]){x, ti});
  a.reduction = TSR_REDUCTION_NONE;
  gradcheck_expect("cross_entropy none", cross_entropy_fn, &a, 2, (tsr_tensor *[]){x, t});
  a.reduction = TSR_REDUCTION_SUM;
  gradcheck_expect("cross_entropy sum", cross_entropy_fn, &a, 2, (tsr_tensor *[]){x, ti});
  release_n(3, (tsr_tensor *[]){x, t, ti});
}

// --- optimizer updates ------------------------------------------------------

static void test_sgd_update_applies_weight_decay_momentum_and_nesterov(void **state) {
  (void)state;
  const int64_t n = 3;
  double p[3] = {1, 2, 3}, g[3] = {0.5, -1, 2}, want[3], buf[3];
  tsr_tensor *tp = make(TSR_FLOAT64, 1, &n, p), *tg = make(TSR_FLOAT64, 1, &n, g);
  // Parameters require grad: the update is neither refused nor recorded.
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(tp, 1));
  tsr_sgd_attrs plain = {sizeof(plain), 0.1, 0.0, 0.0, 0.01, 0, 1};
  TS_ASSERT_OK(tsr_sgd_update_(tp, tg, NULL, &plain));
  for (int i = 0; i < 3; ++i) want[i] = p[i] - 0.1 * (g[i] + 0.01 * p[i]);
  expect_values("sgd without momentum", tp, 1, &n, want, 1e-12);
  assert_true(tsr_tensor_is_leaf(tp));
  memcpy(p, want, sizeof(p));
  // Momentum: the first step takes g, the second blends.
  tsr_tensor *tb = tsr_zeros(g_device, TSR_FLOAT64, 1, &n);
  tsr_sgd_attrs mom = {sizeof(mom), 0.1, 0.9, 0.0, 0.0, 1, 1};
  TS_ASSERT_OK(tsr_sgd_update_(tp, tg, tb, &mom));
  for (int i = 0; i < 3; ++i) {
    buf[i] = g[i];
    p[i] -= 0.1 * (g[i] + 0.9 * buf[i]);
  }
  expect_values("sgd nesterov first step", tp, 1, &n, p, 1e-12);
  expect_values("sgd momentum buffer", tb, 1, &n, buf, 1e-12);
  mom.first_step = 0;
  TS_ASSERT_OK(tsr_sgd_update_(tp, tg, tb, &mom));
  for (int i = 0; i < 3; ++i) {
    buf[i] = 0.9 * buf[i] + g[i];
    p[i] -= 0.1 * (g[i] + 0.9 * buf[i]);
  }
  expect_values("sgd nesterov second step", tp, 1, &n, p, 1e-12);
  expect_refused_status("sgd momentum without a buffer", tsr_sgd_update_(tp, tg, NULL, &mom));
  expect_refused_status("sgd NULL grad", tsr_sgd_update_(tp, NULL, NULL, &plain));
  expect_refused_status("sgd NULL attrs", tsr_sgd_update_(tp, tg, NULL, NULL));
  tsr_tensor *short_g = make(TSR_FLOAT64, 1, (int64_t[]){2}, g);
  expect_refused_status("sgd grad of the wrong size", tsr_sgd_update_(tp, short_g, NULL, &plain));
  release_n(4, (tsr_tensor *[]){tp, tg, tb, short_g});
}

static void test_adam_update_matches_its_formula_with_and_without_decoupling(void **state) {
  (void)state;
  const int64_t n = 3;
  double p[3] = {1, -2, 3}, g[3] = {0.5, -1, 2}, want[3], m[3], v[3];
  for (int decoupled = 0; decoupled < 2; ++decoupled) {
    tsr_tensor *tp = make(TSR_FLOAT64, 1, &n, p), *tg = make(TSR_FLOAT64, 1, &n, g);
    tsr_tensor *tm = tsr_zeros(g_device, TSR_FLOAT64, 1, &n);
    tsr_tensor *tv = tsr_zeros(g_device, TSR_FLOAT64, 1, &n);
    tsr_adam_attrs a = {sizeof(a), 0.01, 0.9, 0.999, 1e-8, 0.1, 1, (uint32_t)decoupled, 0};
    TS_ASSERT_OK(tsr_adam_update_(tp, tg, tm, tv, &a));
    for (int i = 0; i < 3; ++i) {
      double q = decoupled ? p[i] * (1 - 0.01 * 0.1) : p[i];
      double gi = decoupled ? g[i] : g[i] + 0.1 * p[i];
      m[i] = 0.1 * gi;
      v[i] = 0.001 * gi * gi;
      want[i] = q - 0.01 / 0.1 * m[i] / (sqrt(v[i] / 0.001) + 1e-8);
    }
    expect_values("adam param", tp, 1, &n, want, 1e-12);
    expect_values("adam exp_avg", tm, 1, &n, m, 1e-12);
    expect_values("adam exp_avg_sq", tv, 1, &n, v, 1e-12);
    a.step = 0;
    expect_refused_status("adam step 0", tsr_adam_update_(tp, tg, tm, tv, &a));
    expect_refused_status("adam NULL exp_avg", tsr_adam_update_(tp, tg, NULL, tv, &a));
    release_n(4, (tsr_tensor *[]){tp, tg, tm, tv});
  }
}

// --- concat -----------------------------------------------------------------

static void test_concat_joins_along_the_axis_even_past_one_dispatch(void **state) {
  (void)state;
  tsr_tensor *a = make(TSR_FLOAT32, 2, (int64_t[]){2, 1}, (double[]){1, 2});
  tsr_tensor *b = make(TSR_FLOAT32, 2, (int64_t[]){2, 3}, (double[]){3, 4, 5, 6, 7, 8});
  tsr_tensor *c = make(TSR_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){9, 10, 11, 12});
  tsr_tensor *y = tsr_concat(3, (tsr_tensor *[]){a, b, c}, 1);
  expect_values("concat axis 1", y, 2, (int64_t[]){2, 6},
                (double[]){1, 3, 4, 5, 9, 10, 2, 6, 7, 8, 11, 12}, 0);
  tsr_tensor *z = tsr_concat(2, (tsr_tensor *[]){b, b}, -2);
  expect_values("concat axis -2", z, 2, (int64_t[]){4, 3},
                (double[]){3, 4, 5, 6, 7, 8, 3, 4, 5, 6, 7, 8}, 0);
  // 20 inputs take two dispatches; the gradient still reaches every one.
  enum { kMany = 20 };
  tsr_tensor *xs[kMany];
  double want[2 * kMany];
  for (int i = 0; i < kMany; ++i) {
    want[2 * i] = i;
    want[2 * i + 1] = -i;
    xs[i] = make(TSR_FLOAT64, 2, (int64_t[]){1, 2}, &want[2 * i]);
    TS_ASSERT_OK(tsr_tensor_requires_grad_set(xs[i], 1));
  }
  tsr_tensor *many = tsr_concat(kMany, xs, 0);
  expect_values("concat of 20", many, 2, (int64_t[]){kMany, 2}, want, 0);
  double w[2 * kMany];
  for (int i = 0; i < 2 * kMany; ++i) w[i] = 0.5 * i + 1;
  tsr_tensor *tw = make(TSR_FLOAT64, 2, (int64_t[]){kMany, 2}, w);
  TS_ASSERT_OK(tsr_backward(many, tw, 0));
  for (int i = 0; i < kMany; ++i) {
    tsr_tensor *g = tsr_tensor_grad(xs[i]);
    expect_values("concat of 20: gradient", g, 2, (int64_t[]){1, 2}, &w[2 * i], 0);
    tsr_tensor_release(g);
  }
  release_n(kMany, xs);
  release_n(7, (tsr_tensor *[]){a, b, c, y, z, many, tw});
}

static void test_concat_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *a = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3});
  tsr_tensor *b = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){3, 3});
  tsr_tensor *c = tsr_zeros(g_device, TSR_FLOAT64, 2, (int64_t[]){2, 3});
  tsr_tensor *d = tsr_zeros(g_device, TSR_FLOAT32, 1, (int64_t[]){6});
  expect_refused("concat count 0", tsr_concat(0, (tsr_tensor *[]){a}, 0));
  expect_refused("concat NULL array", tsr_concat(2, NULL, 0));
  expect_refused("concat NULL entry", tsr_concat(2, (tsr_tensor *[]){a, NULL}, 0));
  expect_refused("concat sizes differ off the axis", tsr_concat(2, (tsr_tensor *[]){a, b}, 1));
  expect_refused("concat dtypes differ", tsr_concat(2, (tsr_tensor *[]){a, c}, 0));
  expect_refused("concat ranks differ", tsr_concat(2, (tsr_tensor *[]){a, d}, 0));
  expect_refused("concat axis 2", tsr_concat(2, (tsr_tensor *[]){a, a}, 2));
  release_n(4, (tsr_tensor *[]){a, b, c, d});
}

static tsr_tensor *concat_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  return tsr_concat(n, inputs, *(const int32_t *)user);
}

static void test_concat_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_CONCAT);
  tsr_tensor *a = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 1, 3}, 101, -1, 1, NULL);
  tsr_tensor *b = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 2, 3}, 102, -1, 1, NULL);
  tsr_tensor *c = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 3, 3}, 103, -1, 1, NULL);
  int32_t axis = 1;
  gradcheck_expect("concat axis 1", concat_fn, &axis, 3, (tsr_tensor *[]){a, b, c});
  release_n(3, (tsr_tensor *[]){a, b, c});
}

// --- pad --------------------------------------------------------------------

static tsr_pad_attrs pad_attrs(tsr_pad_mode_t mode, int64_t b0, int64_t a0, int64_t b1, int64_t a1,
                               double value) {
  tsr_pad_attrs p;
  memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  p.mode = mode;
  p.pad_before[0] = b0;
  p.pad_after[0] = a0;
  p.pad_before[1] = b1;
  p.pad_after[1] = a1;
  p.value = value;
  return p;
}

static int64_t pad_index(tsr_pad_mode_t mode, int64_t j, int64_t before, int64_t n) {
  int64_t p = j - before;
  if (mode == TSR_PAD_CONSTANT)
    return p >= 0 && p < n ? p : -1;
  if (mode == TSR_PAD_REPLICATE)
    return p < 0 ? 0 : p >= n ? n - 1 : p;
  if (p < 0)
    p = -p;
  if (p >= n)
    p = 2 * (n - 1) - p;
  return p;
}

static void test_pad_matches_float64_for_every_mode(void **state) {
  (void)state;
  const int64_t xs[2] = {3, 4};
  double x[12];
  tsr_tensor *tx = make_random(TSR_FLOAT32, 2, xs, 111, x);
  for (tsr_pad_mode_t mode = 0; mode < TSR_PAD_MODE_COUNT; ++mode) {
    tsr_pad_attrs a = pad_attrs(mode, 1, 2, 2, 1, 7.5);
    int64_t ys[2] = {6, 7};
    double y[42];
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 7; ++j) {
        int64_t si = pad_index(mode, i, 1, 3), sj = pad_index(mode, j, 2, 4);
        y[i * 7 + j] = si < 0 || sj < 0 ? 7.5 : x[si * 4 + sj];
      }
    }
    tsr_tensor *ty = tsr_pad(tx, &a);
    expect_values(mode == 0   ? "pad constant"
                  : mode == 1 ? "pad reflect"
                              : "pad replicate",
                  ty, 2, ys, y, 0);
    tsr_tensor_release(ty);
  }
  tsr_tensor_release(tx);
}

static void test_pad_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3});
  tsr_pad_attrs reflect = pad_attrs(TSR_PAD_REFLECT, 2, 0, 0, 0, 0);
  tsr_pad_attrs negative = pad_attrs(TSR_PAD_CONSTANT, -1, 0, 0, 0, 0);
  tsr_pad_attrs mode = pad_attrs(9, 1, 0, 0, 0, 0);
  expect_refused("pad NULL x", tsr_pad(NULL, &reflect));
  expect_refused("pad NULL attrs", tsr_pad(x, NULL));
  expect_refused("pad reflect as wide as the dim", tsr_pad(x, &reflect));
  expect_refused("pad negative", tsr_pad(x, &negative));
  expect_refused("pad bad mode", tsr_pad(x, &mode));
  tsr_tensor_release(x);
}

static tsr_tensor *pad_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  return tsr_pad(inputs[0], (const tsr_pad_attrs *)user);
}

static void test_pad_gradients_match_finite_differences_for_every_mode(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_PAD);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 3, 4}, 112, -1, 1, NULL);
  for (tsr_pad_mode_t mode = 0; mode < TSR_PAD_MODE_COUNT; ++mode) {
    tsr_pad_attrs a = pad_attrs(mode, 0, 0, 2, 1, 0.25);
    a.pad_before[2] = 3;
    a.pad_after[2] = 2;
    gradcheck_expect(mode == 0   ? "pad constant"
                     : mode == 1 ? "pad reflect"
                                 : "pad replicate",
                     pad_fn, &a, 1, &x);
  }
  tsr_tensor_release(x);
}

// --- gather and scatter_add -------------------------------------------------

static void test_gather_and_scatter_add_index_along_the_axis(void **state) {
  (void)state;
  const int64_t xs[2] = {3, 4};
  double x[12];
  for (int i = 0; i < 12; ++i) x[i] = i;
  tsr_tensor *tx = make(TSR_FLOAT32, 2, xs, x);
  tsr_tensor *idx = make_i64_on(g_device, 3, (int64_t[]){3, 0, 3});
  tsr_tensor *g = tsr_gather(tx, 1, idx);
  expect_values("gather axis 1", g, 2, (int64_t[]){3, 3}, (double[]){3, 0, 3, 7, 4, 7, 11, 8, 11},
                0);
  int32_t rows[2] = {2, 2};
  tsr_tensor *idx32 = tsr_tensor_from_host(g_device, TSR_INT32, 1, (int64_t[]){2}, rows);
  tsr_tensor *g0 = tsr_gather(tx, -2, idx32);
  expect_values("gather axis -2 with int32 index", g0, 2, (int64_t[]){2, 4},
                (double[]){8, 9, 10, 11, 8, 9, 10, 11}, 0);
  // scatter_add: rows 0 and 2 of src land on row 2, row 1 on row 0.
  tsr_tensor *base = tsr_ones(g_device, TSR_FLOAT32, 2, xs);
  tsr_tensor *ridx = make_i64_on(g_device, 3, (int64_t[]){2, 0, 2});
  tsr_tensor *s = tsr_scatter_add(base, 0, ridx, tx);
  expect_values("scatter_add", s, 2, xs, (double[]){5, 6, 7, 8, 1, 1, 1, 1, 9, 11, 13, 15}, 0);
  double ones[12];
  for (int i = 0; i < 12; ++i) ones[i] = 1;
  expect_values("scatter_add leaves base alone", base, 2, xs, ones, 0);
  TS_ASSERT_OK(tsr_scatter_add_(base, 0, ridx, tx));
  expect_values("scatter_add_", base, 2, xs, (double[]){5, 6, 7, 8, 1, 1, 1, 1, 9, 11, 13, 15}, 0);
  release_n(9, (tsr_tensor *[]){tx, idx, g, idx32, g0, base, ridx, s, NULL});
}

static void test_gather_and_scatter_add_refuse_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){3, 4});
  tsr_tensor *idx = make_i64_on(g_device, 2, (int64_t[]){0, 1});
  tsr_tensor *out_of_range = make_i64_on(g_device, 2, (int64_t[]){0, 5});
  tsr_tensor *idx2 = tsr_zeros(g_device, TSR_INT64, 2, (int64_t[]){1, 2});
  tsr_tensor *fidx = tsr_zeros(g_device, TSR_FLOAT32, 1, (int64_t[]){2});
  tsr_tensor *src = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 4});
  tsr_tensor *src_bad = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){3, 4});
  expect_refused("gather NULL x", tsr_gather(NULL, 0, idx));
  expect_refused("gather NULL index", tsr_gather(x, 0, NULL));
  expect_refused("gather rank-2 index", tsr_gather(x, 0, idx2));
  expect_refused("gather float index", tsr_gather(x, 0, fidx));
  expect_refused("gather axis 2", tsr_gather(x, 2, idx));
  expect_refused("gather index out of range", tsr_gather(x, 0, out_of_range));
  expect_refused("scatter_add src of the wrong size", tsr_scatter_add(x, 0, idx, src_bad));
  expect_refused("scatter_add NULL src", tsr_scatter_add(x, 0, idx, NULL));
  expect_refused_status("scatter_add_ index out of range",
                        tsr_scatter_add_(x, 0, out_of_range, src));
  // In place with gradients involved: refused while grad mode is on.
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(src, 1));
  expect_refused_status("scatter_add_ of a src requiring grad", tsr_scatter_add_(x, 0, idx, src));
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(src, 0));
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(x, 1));
  expect_refused_status("scatter_add_ into a tensor requiring grad",
                        tsr_scatter_add_(x, 0, idx, src));
  release_n(7, (tsr_tensor *[]){x, idx, out_of_range, idx2, fidx, src, src_bad});
}

static tsr_tensor *gather_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  return tsr_gather(inputs[0], *(const int32_t *)user, inputs[1]);
}

static tsr_tensor *scatter_add_fn(void *user, int32_t n, tsr_tensor *const *inputs) {
  (void)n;
  return tsr_scatter_add(inputs[0], *(const int32_t *)user, inputs[1], inputs[2]);
}

static void test_gather_and_scatter_add_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_SCATTER_ADD);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 4, 3}, 121, -1, 1, NULL);
  tsr_tensor *idx = make_i64_on(dev, 5, (int64_t[]){3, 0, 3, 1, 3});
  int32_t axis = 1;
  gradcheck_expect("gather with repeated indices", gather_fn, &axis, 2, (tsr_tensor *[]){x, idx});
  tsr_tensor *src = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 5, 3}, 122, -1, 1, NULL);
  gradcheck_expect("scatter_add with repeated indices", scatter_add_fn, &axis, 3,
                   (tsr_tensor *[]){x, idx, src});
  release_n(3, (tsr_tensor *[]){x, idx, src});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_zeros_ones_and_full_like_fill_every_element, test_setup),
      cmocka_unit_test_setup(test_arange_counts_up_and_down_and_converts_to_the_dtype, test_setup),
      cmocka_unit_test_setup(test_rand_stays_in_its_range_with_the_uniform_mean, test_setup),
      cmocka_unit_test_setup(test_randn_has_the_requested_mean_and_standard_deviation, test_setup),
      cmocka_unit_test_setup(test_the_same_seed_repeats_the_numbers_and_new_offsets_change_them,
                             test_setup),
      cmocka_unit_test_setup(test_random_creation_refuses_bad_dtypes_bounds_and_grad_tensors,
                             test_setup),
      cmocka_unit_test_setup(
          test_conv2d_matches_float64_loops_with_bias_stride_padding_dilation_and_groups,
          test_setup),
      cmocka_unit_test_setup(test_conv2d_backward_functions_match_the_adjoint_loops, test_setup),
      cmocka_unit_test_setup(test_conv2d_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_conv2d_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_pool2d_matches_float64_loops_with_padding_and_ceil_mode,
                             test_setup),
      cmocka_unit_test_setup(test_pool2d_backward_routes_to_the_max_and_spreads_the_average,
                             test_setup),
      cmocka_unit_test_setup(test_pool2d_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_pool2d_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_softmax_and_log_softmax_match_float64_along_either_axis,
                             test_setup),
      cmocka_unit_test_setup(test_softmax_backward_matches_its_closed_form, test_setup),
      cmocka_unit_test_setup(test_softmax_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_softmax_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_layer_norm_matches_float64_with_and_without_affine, test_setup),
      cmocka_unit_test_setup(test_layer_norm_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_layer_norm_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_batch_norm_normalises_and_updates_the_running_statistics,
                             test_setup),
      cmocka_unit_test_setup(test_batch_norm_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(
          test_batch_norm_gradients_match_finite_differences_in_training_and_eval, test_setup),
      cmocka_unit_test_setup(test_cross_entropy_matches_float64_for_every_reduction, test_setup),
      cmocka_unit_test_setup(test_cross_entropy_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_cross_entropy_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_sgd_update_applies_weight_decay_momentum_and_nesterov,
                             test_setup),
      cmocka_unit_test_setup(test_adam_update_matches_its_formula_with_and_without_decoupling,
                             test_setup),
      cmocka_unit_test_setup(test_concat_joins_along_the_axis_even_past_one_dispatch, test_setup),
      cmocka_unit_test_setup(test_concat_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_concat_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_pad_matches_float64_for_every_mode, test_setup),
      cmocka_unit_test_setup(test_pad_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_pad_gradients_match_finite_differences_for_every_mode,
                             test_setup),
      cmocka_unit_test_setup(test_gather_and_scatter_add_index_along_the_axis, test_setup),
      cmocka_unit_test_setup(test_gather_and_scatter_add_refuse_bad_input, test_setup),
      cmocka_unit_test_setup(test_gather_and_scatter_add_gradients_match_finite_differences,
                             test_setup),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
