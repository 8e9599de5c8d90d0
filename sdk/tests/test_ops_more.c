// The PyTorch-style functions of tessera/ops_more.h: stack, squeeze,
// unsqueeze, flatten, chunk, split, repeat, clone, tril, triu, masked_fill,
// where_scalar, one_hot, index_select, cumsum, var, std, logsumexp, norm,
// lerp, pow and item.
//
// Built once per device (test_ops_more_ref, _onednn, _opencl; the context
// also loads ref). Expected values come from float64 loops written here;
// every differentiable function's gradient is checked against finite
// differences with tsr_gradcheck in float64 (on the context's ref device when
// the device under test lacks float64 for an op the function uses); bad input
// must fail with a message that names the function and, for a dtype error,
// the dtype.
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



#define F32_TOL 2e-5

// --- helpers ----------------------------------------------------------------

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

// Checks |t|'s shape and values (row-major |want|) within |tol| absolute and
// relative; NaN must meet NaN and infinities must match.
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

// A call that must fail: NULL result and a message naming |function| (and
// |mention| when not NULL, e.g. a dtype's name).
static void expect_refused_named(const char *what, const tsr_tensor *t, const char *function,
                                 const char *mention) {
  if (t != NULL)
    fail_msg("%s: expected NULL, got a tensor", what);
  const char *message = tsr_last_error();
  if (message[0] == '\0')
    fail_msg("%s: failed without a message", what);
  if (function != NULL && strstr(message, function) == NULL)
    fail_msg("%s: the message \"%s\" does not name %s", what, message, function);
  if (mention != NULL && strstr(message, mention) == NULL)
    fail_msg("%s: the message \"%s\" does not mention %s", what, message, mention);
  tsr_last_error_clear();
  tsr_context_error_clear(g_context);
}

static void expect_status_named(const char *what, tsr_status status, const char *function,
                                const char *mention) {
  if (status == TSR_OK)
    fail_msg("%s: expected an error, got TSR_OK", what);
  expect_refused_named(what, NULL, function, mention);
}

// The device gradchecks of a function using |ops| run on: the device under
// test when it runs all of them in float64, else the context's ref device;
// NULL when neither does.
static tsr_device *f64_device(int n, const tsr_op_id_t *ops) {
  tsr_device *candidates[2] = {g_device, tsr_context_device_find(g_context, "ref")};
  for (int c = 0; c < 2; ++c) {
    int all = candidates[c] != NULL;
    for (int i = 0; all && i < n; ++i) {
      all = tsr_device_op_supported(candidates[c], ops[i], TSR_FLOAT64) == TSR_OK;
    }
    if (all) {
      tsr_last_error_clear();
      return candidates[c];
    }
  }
  tsr_last_error_clear();
  return NULL;
}

#define F64_DEVICE_OR_SKIP(var, ...)                                                              \
  tsr_device *var = f64_device((int)(sizeof((tsr_op_id_t[]){__VA_ARGS__}) / sizeof(tsr_op_id_t)), \
                               (tsr_op_id_t[]){__VA_ARGS__});                                     \
  if (var == NULL) {                                                                              \
    printf("skipped: no device of this context runs these ops in float64\n");                     \
    skip();                                                                                       \
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

// Row-major multi-index of |flat| in |sizes|.
static void unravel(int32_t rank, const int64_t *sizes, int64_t flat, int64_t *idx) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    idx[d] = sizes[d] ? flat % sizes[d] : 0;
    flat = sizes[d] ? flat / sizes[d] : 0;
  }
}

static int64_t ravel(int32_t rank, const int64_t *sizes, const int64_t *idx) {
  int64_t flat = 0;
  for (int32_t d = 0; d < rank; ++d) flat = flat * sizes[d] + idx[d];
  return flat;
}

// Applies |fn| to every slice of |x| over the dims in |mask| (one output per
// slice, in the row-major order of the kept dims).
typedef double (*slice_fn)(const double *values, int64_t n, double param);

static void reduce_oracle(int32_t rank, const int64_t *sizes, const double *x, uint32_t mask,
                          slice_fn fn, double param, double *out) {
  int64_t kept[TSR_MAX_RANK], numel = orc_numel(rank, sizes), slice = 1;
  for (int32_t d = 0; d < rank; ++d) {
    kept[d] = (mask >> d) & 1u ? 1 : sizes[d];
    if ((mask >> d) & 1u)
      slice *= sizes[d];
  }
  int64_t outputs = orc_numel(rank, kept);
  double *buf = dalloc(slice);
  int64_t *fill = calloc((size_t)(outputs > 0 ? outputs : 1), sizeof(int64_t));
  assert_non_null(fill);
  double *all = dalloc(outputs * (slice > 0 ? slice : 1));
  int64_t idx[TSR_MAX_RANK];
  for (int64_t i = 0; i < numel; ++i) {
    unravel(rank, sizes, i, idx);
    for (int32_t d = 0; d < rank; ++d) {
      if ((mask >> d) & 1u)
        idx[d] = 0;
    }
    int64_t o = ravel(rank, kept, idx);
    all[o * slice + fill[o]++] = x[i];
  }
  for (int64_t o = 0; o < outputs; ++o) {
    memcpy(buf, all + o * slice, (size_t)slice * sizeof(double));
    out[o] = fn(buf, slice, param);
  }
  free(buf);
  free(fill);
  free(all);
}

static double slice_var(const double *v, int64_t n, double correction) {
  double mean = 0.0, ss = 0.0;
  for (int64_t i = 0; i < n; ++i) mean += v[i];
  mean /= (double)n;
  for (int64_t i = 0; i < n; ++i) ss += (v[i] - mean) * (v[i] - mean);
  return ss / fmax(0.0, (double)n - correction);
}

static double slice_std(const double *v, int64_t n, double correction) {
  return sqrt(slice_var(v, n, correction));
}

static double slice_logsumexp(const double *v, int64_t n, double unused) {
  (void)unused;
  double m = -INFINITY, s = 0.0;
  for (int64_t i = 0; i < n; ++i) m = fmax(m, v[i]);
  if (isinf(m))
    m = 0.0;
  for (int64_t i = 0; i < n; ++i) s += exp(v[i] - m);
  return log(s) + m;
}

static double slice_norm(const double *v, int64_t n, double p) {
  double r = isinf(p) ? (p > 0 ? 0.0 : INFINITY) : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double a = fabs(v[i]);
    if (isinf(p)) {
      r = p > 0 ? fmax(r, a) : fmin(r, a);
    } else if (p == 0.0) {
      r += a != 0.0;
    } else {
      r += pow(a, p);
    }
  }
  return isinf(p) || p == 0.0 ? r : pow(r, 1.0 / p);
}

// --- stack ------------------------------------------------------------------

static void test_stack_joins_along_a_new_dim_at_every_position(void **state) {
  (void)state;
  const int64_t s[2] = {2, 3};
  double v[3][6];
  tsr_tensor *xs[3];
  for (int i = 0; i < 3; ++i) xs[i] = make_random(TSR_FLOAT32, 2, s, 11 + (uint64_t)i, v[i]);
  const int32_t dims[5] = {0, 1, 2, -1, -3};
  for (int k = 0; k < 5; ++k) {
    int32_t d = dims[k] < 0 ? dims[k] + 3 : dims[k];
    int64_t os[3];
    for (int32_t j = 0, m = 0; j < 3; ++j) os[j] = j == d ? 3 : s[m++];
    double want[18];
    int64_t idx[3];
    for (int64_t f = 0; f < 18; ++f) {
      unravel(3, os, f, idx);
      int64_t src[2];
      for (int32_t j = 0, m = 0; j < 3; ++j) {
        if (j != d)
          src[m++] = idx[j];
      }
      want[f] = v[idx[d]][src[0] * 3 + src[1]];
    }
    tsr_tensor *out = tsr_stack(3, xs, dims[k]);
    char what[32];
    snprintf(what, sizeof(what), "stack dim %d", dims[k]);
    expect_values(what, out, 3, os, want, 0.0);
    tsr_tensor_release(out);
  }
  // One tensor, and a non-contiguous one.
  tsr_tensor *t = tsr_transpose(xs[0], 0, 1);
  tsr_tensor *one = tsr_stack(1, &t, 0);
  double want[6] = {v[0][0], v[0][3], v[0][1], v[0][4], v[0][2], v[0][5]};
  expect_values("stack of one transposed tensor", one, 3, (int64_t[]){1, 3, 2}, want, 0.0);
  release_n(5, (tsr_tensor *[]){xs[0], xs[1], xs[2], t, one});
}

static void test_stack_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *a = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3});
  tsr_tensor *b = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){3, 2});
  tsr_tensor *c = tsr_zeros(g_device, TSR_FLOAT64, 2, (int64_t[]){2, 3});
  expect_refused_named("stack count 0", tsr_stack(0, &a, 0), "stack", NULL);
  expect_refused_named("stack NULL xs", tsr_stack(2, NULL, 0), "stack", NULL);
  expect_refused_named("stack NULL xs[1]", tsr_stack(2, (tsr_tensor *[]){a, NULL}, 0), "stack",
                       "xs[1]");
  expect_refused_named("stack of two shapes", tsr_stack(2, (tsr_tensor *[]){a, b}, 0), "stack",
                       "[3, 2]");
  expect_refused_named("stack of two dtypes", tsr_stack(2, (tsr_tensor *[]){a, c}, 0), "stack",
                       "float64");
  expect_refused_named("stack dim 3 of rank 2", tsr_stack(2, (tsr_tensor *[]){a, a}, 3), "stack",
                       NULL);
  expect_refused_named("stack dim -4 of rank 2", tsr_stack(2, (tsr_tensor *[]){a, a}, -4), "stack",
                       NULL);
  release_n(3, (tsr_tensor *[]){a, b, c});
}

static tsr_tensor *stack_fn(void *user, int32_t n, tsr_tensor *const *in) {
  return tsr_stack(n, in, *(const int32_t *)user);
}

static void test_stack_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_CONCAT);
  tsr_tensor *a = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, 21, -1, 1, NULL);
  tsr_tensor *b = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, 22, -1, 1, NULL);
  int32_t dim = 1;
  gradcheck_expect("stack dim 1", stack_fn, &dim, 3, (tsr_tensor *[]){a, b, a});
  dim = -1;
  gradcheck_expect("stack dim -1", stack_fn, &dim, 2, (tsr_tensor *[]){a, b});
  release_n(2, (tsr_tensor *[]){a, b});
}

// --- squeeze, unsqueeze, flatten --------------------------------------------

static void test_squeeze_and_unsqueeze_change_only_size_one_dims(void **state) {
  (void)state;
  double v[6];
  tsr_tensor *x = make_random(TSR_FLOAT32, 4, (int64_t[]){1, 3, 1, 2}, 31, v);
  tsr_tensor *all = tsr_squeeze(x, 0, NULL);
  expect_values("squeeze all", all, 2, (int64_t[]){3, 2}, v, 0.0);
  assert_true(tsr_tensor_shares_storage(all, x));
  tsr_tensor *first = tsr_squeeze(x, 1, (int32_t[]){0});
  expect_values("squeeze dim 0", first, 3, (int64_t[]){3, 1, 2}, v, 0.0);
  tsr_tensor *kept = tsr_squeeze(x, 1, (int32_t[]){1});  // size 3: kept, as PyTorch
  expect_values("squeeze of a size-3 dim", kept, 4, (int64_t[]){1, 3, 1, 2}, v, 0.0);
  tsr_tensor *two = tsr_squeeze(x, 2, (int32_t[]){-2, 0});
  expect_values("squeeze dims -2 and 0", two, 2, (int64_t[]){3, 2}, v, 0.0);
  tsr_tensor *scalar = tsr_tensor_full(g_device, TSR_FLOAT32, 0, NULL, 4.0);
  tsr_tensor *scalar_sq = tsr_squeeze(scalar, 1, (int32_t[]){-1});
  expect_values("squeeze of a scalar", scalar_sq, 0, NULL, (double[]){4.0}, 0.0);

  tsr_tensor *m = tsr_squeeze(x, 0, NULL);  // [3, 2]
  tsr_tensor *mt = tsr_transpose(m, 0, 1);  // [2, 3], not contiguous
  const double vt[6] = {v[0], v[2], v[4], v[1], v[3], v[5]};
  const int32_t dims[4] = {0, 1, 2, -1};
  const int64_t want_sizes[4][3] = {{1, 2, 3}, {2, 1, 3}, {2, 3, 1}, {2, 3, 1}};
  for (int k = 0; k < 4; ++k) {
    tsr_tensor *u = tsr_unsqueeze(mt, dims[k]);
    char what[48];
    snprintf(what, sizeof(what), "unsqueeze dim %d of a transposed view", dims[k]);
    expect_values(what, u, 3, want_sizes[k], vt, 0.0);
    assert_true(tsr_tensor_shares_storage(u, x));
    tsr_tensor_release(u);
  }
  tsr_tensor *lifted = tsr_unsqueeze(scalar, 0);
  expect_values("unsqueeze of a scalar", lifted, 1, (int64_t[]){1}, (double[]){4.0}, 0.0);
  release_n(10, (tsr_tensor *[]){x, all, first, kept, two, scalar, scalar_sq, m, mt, lifted});
}

static void test_flatten_merges_the_dims_from_start_to_end(void **state) {
  (void)state;
  double v[24];
  tsr_tensor *x = make_random(TSR_FLOAT32, 3, (int64_t[]){2, 3, 4}, 41, v);
  tsr_tensor *a = tsr_flatten(x, 0, -1);
  expect_values("flatten all", a, 1, (int64_t[]){24}, v, 0.0);
  tsr_tensor *b = tsr_flatten(x, 1, 2);
  expect_values("flatten 1..2", b, 2, (int64_t[]){2, 12}, v, 0.0);
  tsr_tensor *c = tsr_flatten(x, -3, -2);
  expect_values("flatten -3..-2", c, 2, (int64_t[]){6, 4}, v, 0.0);
  tsr_tensor *same = tsr_flatten(x, 1, 1);
  expect_values("flatten of one dim", same, 3, (int64_t[]){2, 3, 4}, v, 0.0);
  // A transposed tensor cannot be viewed flat: a copy.
  tsr_tensor *t = tsr_transpose(x, 0, 2);  // [4, 3, 2]
  double vt[24];
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 2; ++k) vt[(i * 3 + j) * 2 + k] = v[(k * 3 + j) * 4 + i];
    }
  }
  tsr_tensor *tf = tsr_flatten(t, 0, 1);
  expect_values("flatten of a transposed tensor", tf, 2, (int64_t[]){12, 2}, vt, 0.0);
  tsr_tensor *s = tsr_tensor_full(g_device, TSR_FLOAT32, 0, NULL, 2.5);
  tsr_tensor *sf = tsr_flatten(s, 0, -1);
  expect_values("flatten of a scalar", sf, 1, (int64_t[]){1}, (double[]){2.5}, 0.0);
  release_n(8, (tsr_tensor *[]){x, a, b, c, same, t, tf, s});
  tsr_tensor_release(sf);
}

static void test_squeeze_unsqueeze_and_flatten_refuse_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 3, (int64_t[]){1, 3, 1});
  tsr_tensor *full = tsr_zeros(g_device, TSR_FLOAT32, 8, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1});
  expect_refused_named("squeeze NULL", tsr_squeeze(NULL, 0, NULL), "squeeze", NULL);
  expect_refused_named("squeeze dim 3", tsr_squeeze(x, 1, (int32_t[]){3}), "squeeze", "dim 3");
  expect_refused_named("squeeze dims repeated", tsr_squeeze(x, 2, (int32_t[]){0, -3}), "squeeze",
                       NULL);
  expect_refused_named("squeeze NULL dims", tsr_squeeze(x, 1, NULL), "squeeze", NULL);
  expect_refused_named("squeeze negative count", tsr_squeeze(x, -1, NULL), "squeeze", NULL);
  expect_refused_named("unsqueeze NULL", tsr_unsqueeze(NULL, 0), "unsqueeze", NULL);
  expect_refused_named("unsqueeze dim 4 of rank 3", tsr_unsqueeze(x, 4), "unsqueeze", NULL);
  expect_refused_named("unsqueeze dim -5 of rank 3", tsr_unsqueeze(x, -5), "unsqueeze", NULL);
  expect_refused_named("unsqueeze past the largest rank", tsr_unsqueeze(full, 0), "unsqueeze",
                       NULL);
  expect_refused_named("flatten NULL", tsr_flatten(NULL, 0, -1), "flatten", NULL);
  expect_refused_named("flatten start after end", tsr_flatten(x, 2, 1), "flatten", NULL);
  expect_refused_named("flatten end 3 of rank 3", tsr_flatten(x, 0, 3), "flatten", NULL);
  release_n(2, (tsr_tensor *[]){x, full});
}

static tsr_tensor *dims_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  // unsqueeze, squeeze and flatten in one chain, then a product so that a
  // wrong routing would show.
  int which = *(const int *)user;
  tsr_tensor *x = in[0];
  if (which == 0) {
    tsr_tensor *u = tsr_unsqueeze(x, 1);
    tsr_tensor *s = tsr_squeeze(u, 0, NULL);
    tsr_tensor *y = tsr_mul(s, s);
    release_n(2, (tsr_tensor *[]){u, s});
    return y;
  }
  tsr_tensor *t = tsr_transpose(x, 0, 2);
  tsr_tensor *f = tsr_flatten(t, 0, 1);
  tsr_tensor *y = tsr_mul(f, f);
  release_n(2, (tsr_tensor *[]){t, f});
  return y;
}

static void test_squeeze_unsqueeze_and_flatten_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_BINARY, TSR_OP_COPY);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){1, 3, 2}, 51, -1, 1, NULL);
  tsr_tensor *y = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 3, 2}, 52, -1, 1, NULL);
  int which = 0;
  gradcheck_expect("unsqueeze then squeeze", dims_fn, &which, 1, &x);
  which = 1;
  gradcheck_expect("flatten of a transposed tensor", dims_fn, &which, 1, &y);
  release_n(2, (tsr_tensor *[]){x, y});
}

// --- chunk, split -----------------------------------------------------------

// Checks that |pieces| are the rows of |v| ([rows, 2]) in runs of |lengths|.
static void expect_pieces(const char *what, int32_t count, tsr_tensor **pieces,
                          const int64_t *lengths, const double *v) {
  int64_t row = 0;
  for (int32_t k = 0; k < count; ++k) {
    char name[64];
    snprintf(name, sizeof(name), "%s piece %d", what, k);
    expect_values(name, pieces[k], 2, (int64_t[]){lengths[k], 2}, v + row * 2, 0.0);
    row += lengths[k];
  }
}

static void test_chunk_and_split_give_pytorchs_pieces(void **state) {
  (void)state;
  double v[14];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){7, 2}, 61, v);
  tsr_tensor *pieces[8] = {0};
  int32_t count = -1;
  // chunk(3) of 7: pieces of 3, 3, 1.
  TS_ASSERT_OK(tsr_chunk(x, 3, 0, 8, pieces, &count));
  assert_int_equal(count, 3);
  expect_pieces("chunk 3", count, pieces, (int64_t[]){3, 3, 1}, v);
  assert_true(tsr_tensor_shares_storage(pieces[0], x));
  release_n(count, pieces);
  // chunk(4) of 6 rows gives 3 pieces of 2, as torch.arange(6).chunk(4).
  tsr_tensor *six = tsr_slice(x, 0, 0, 6, 1);
  TS_ASSERT_OK(tsr_chunk(six, 4, -2, 8, pieces, &count));
  assert_int_equal(count, 3);
  expect_pieces("chunk 4 of 6", count, pieces, (int64_t[]){2, 2, 2}, v);
  release_n(count, pieces);
  // More chunks than elements: one piece per element.
  TS_ASSERT_OK(tsr_chunk(x, 9, 0, 8, pieces, &count));
  assert_int_equal(count, 7);
  release_n(count, pieces);
  // split(3): 3, 3, 1; split(7) and split(10): one piece.
  TS_ASSERT_OK(tsr_split(x, 3, 0, 8, pieces, &count));
  assert_int_equal(count, 3);
  expect_pieces("split 3", count, pieces, (int64_t[]){3, 3, 1}, v);
  release_n(count, pieces);
  TS_ASSERT_OK(tsr_split(x, 10, 0, 8, pieces, &count));
  assert_int_equal(count, 1);
  expect_pieces("split 10", count, pieces, (int64_t[]){7}, v);
  release_n(count, pieces);
  // Along the last dim.
  TS_ASSERT_OK(tsr_split(x, 1, -1, 8, pieces, &count));
  assert_int_equal(count, 2);
  double col[7];
  for (int i = 0; i < 7; ++i) col[i] = v[i * 2 + 1];
  expect_values("split 1 along dim -1, piece 1", pieces[1], 2, (int64_t[]){7, 1}, col, 0.0);
  release_n(count, pieces);
  // The count alone, and a capacity too small (the count still comes back).
  TS_ASSERT_OK(tsr_split(x, 2, 0, 0, NULL, &count));
  assert_int_equal(count, 4);
  expect_status_named("split into too small an array", tsr_split(x, 2, 0, 3, pieces, &count),
                      "split", "capacity 3");
  assert_int_equal(count, 4);
  // split_sizes.
  TS_ASSERT_OK(tsr_split_sizes(x, 3, (int64_t[]){2, 0, 5}, 0, pieces));
  expect_pieces("split_sizes 2, 0, 5", 3, pieces, (int64_t[]){2, 0, 5}, v);
  release_n(3, pieces);
  // An empty dim: chunk gives |chunks| empty pieces, split one.
  tsr_tensor *empty = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){0, 2});
  TS_ASSERT_OK(tsr_chunk(empty, 3, 0, 8, pieces, &count));
  assert_int_equal(count, 3);
  expect_shape("chunk of an empty dim", pieces[2], 2, (int64_t[]){0, 2});
  release_n(count, pieces);
  TS_ASSERT_OK(tsr_split(empty, 0, 0, 8, pieces, &count));
  assert_int_equal(count, 1);
  release_n(count, pieces);
  release_n(3, (tsr_tensor *[]){x, six, empty});
}

static void test_chunk_and_split_refuse_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){4, 2});
  tsr_tensor *s = tsr_tensor_full(g_device, TSR_FLOAT32, 0, NULL, 1.0);
  tsr_tensor *pieces[4];
  int32_t count = 0;
  expect_status_named("chunk NULL", tsr_chunk(NULL, 2, 0, 4, pieces, &count), "chunk", NULL);
  expect_status_named("chunk NULL out_count", tsr_chunk(x, 2, 0, 4, pieces, NULL), "chunk", NULL);
  expect_status_named("chunk 0 chunks", tsr_chunk(x, 0, 0, 4, pieces, &count), "chunk", NULL);
  expect_status_named("chunk dim 2", tsr_chunk(x, 2, 2, 4, pieces, &count), "chunk", "dim 2");
  expect_status_named("chunk of a scalar", tsr_chunk(s, 2, 0, 4, pieces, &count), "chunk", NULL);
  expect_status_named("split size -1", tsr_split(x, -1, 0, 4, pieces, &count), "split", NULL);
  expect_status_named("split size 0", tsr_split(x, 0, 0, 4, pieces, &count), "split", NULL);
  expect_status_named("split_sizes summing to 5",
                      tsr_split_sizes(x, 2, (int64_t[]){2, 3}, 0, pieces), "split_sizes", NULL);
  expect_status_named("split_sizes summing to 3",
                      tsr_split_sizes(x, 2, (int64_t[]){2, 1}, 0, pieces), "split_sizes", NULL);
  expect_status_named("split_sizes negative", tsr_split_sizes(x, 2, (int64_t[]){5, -1}, 0, pieces),
                      "split_sizes", NULL);
  expect_status_named("split_sizes NULL sizes", tsr_split_sizes(x, 2, NULL, 0, pieces),
                      "split_sizes", NULL);
  release_n(2, (tsr_tensor *[]){x, s});
}

static tsr_tensor *chunk_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  (void)user;
  tsr_tensor *p[3] = {0}, *q[2] = {0};
  int32_t count = 0;
  if (tsr_chunk(in[0], 3, 0, 3, p, &count) != TSR_OK)
    return NULL;
  if (tsr_split_sizes(p[2], 2, (int64_t[]){1, 1}, 1, q) != TSR_OK) {
    release_n(count, p);
    return NULL;
  }
  // Rows 0-1 times rows 2-3, plus column 1 of rows 4-5.
  tsr_tensor *prod = tsr_mul(p[0], p[1]);
  tsr_tensor *y = tsr_add(prod, q[1]);
  release_n(count, p);
  release_n(2, q);
  tsr_tensor_release(prod);
  return y;
}

static void test_chunk_and_split_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_BINARY);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){6, 2}, 71, -1, 1, NULL);
  gradcheck_expect("chunk and split_sizes", chunk_fn, NULL, 1, &x);
  tsr_tensor_release(x);
}

// --- repeat, clone ----------------------------------------------------------

// Checks tsr_repeat(x, repeats) against the tiling of |v| (x's values).
static void expect_repeat(const char *what, tsr_tensor *x, const double *v, int32_t r,
                          const int64_t *repeats) {
  int32_t rank = tsr_tensor_rank(x), shift = r - rank;
  int64_t xs[TSR_MAX_RANK], os[TSR_MAX_RANK];
  for (int32_t d = 0; d < r; ++d) {
    xs[d] = d < shift ? 1 : tsr_tensor_size(x, d - shift);
    os[d] = xs[d] * repeats[d];
  }
  int64_t n = orc_numel(r, os);
  double *want = dalloc(n);
  int64_t idx[TSR_MAX_RANK];
  for (int64_t f = 0; f < n; ++f) {
    unravel(r, os, f, idx);
    for (int32_t d = 0; d < r; ++d) idx[d] %= xs[d];
    want[f] = v[ravel(r, xs, idx)];
  }
  tsr_tensor *out = tsr_repeat(x, r, repeats);
  expect_values(what, out, r, os, want, 0.0);
  assert_false(tsr_tensor_shares_storage(out, x));
  assert_true(tsr_tensor_is_contiguous(out));
  free(want);
  tsr_tensor_release(out);
}

static void test_repeat_tiles_like_pytorch_into_new_storage(void **state) {
  (void)state;
  double v[6];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 81, v);
  expect_repeat("repeat 2, 1, 2", x, v, 3, (int64_t[]){2, 1, 2});
  expect_repeat("repeat 1, 3", x, v, 2, (int64_t[]){1, 3});
  expect_repeat("repeat 1, 1 (a copy)", x, v, 2, (int64_t[]){1, 1});
  expect_repeat("repeat 0, 2 (empty)", x, v, 2, (int64_t[]){0, 2});
  tsr_tensor *xt = tsr_transpose(x, 0, 1);
  const double vt[6] = {v[0], v[3], v[1], v[4], v[2], v[5]};
  expect_repeat("repeat of a transposed tensor", xt, vt, 2, (int64_t[]){2, 2});
  tsr_tensor *one = make(TSR_INT64, 1, (int64_t[]){1}, (double[]){7});
  expect_repeat("repeat of one int64 element", one, (double[]){7}, 1, (int64_t[]){4});
  tsr_tensor *scalar = tsr_tensor_full(g_device, TSR_FLOAT32, 0, NULL, 1.5);
  expect_repeat("repeat of a scalar", scalar, (double[]){1.5}, 2, (int64_t[]){2, 3});
  // Rank 8 has no room for the helper dim: the concat path.
  tsr_tensor *deep = tsr_view(x, 8, (int64_t[]){1, 1, 1, 1, 1, 1, 2, 3});
  expect_repeat("repeat at rank 8", deep, v, 8, (int64_t[]){1, 2, 1, 1, 1, 1, 3, 2});
  release_n(5, (tsr_tensor *[]){x, xt, one, scalar, deep});
}

static void test_clone_copies_into_new_contiguous_storage(void **state) {
  (void)state;
  double v[6];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 91, v);
  tsr_tensor *xt = tsr_transpose(x, 0, 1);
  tsr_tensor *c = tsr_clone(xt);
  const double vt[6] = {v[0], v[3], v[1], v[4], v[2], v[5]};
  expect_values("clone of a transposed tensor", c, 2, (int64_t[]){3, 2}, vt, 0.0);
  assert_false(tsr_tensor_shares_storage(c, x));
  assert_true(tsr_tensor_is_contiguous(c));
  tsr_tensor *b = make(TSR_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1});
  tsr_tensor *bc = tsr_clone(b);
  expect_values("clone of bool", bc, 1, (int64_t[]){3}, (double[]){1, 0, 1}, 0.0);
  release_n(5, (tsr_tensor *[]){x, xt, c, b, bc});
}

static void test_repeat_and_clone_refuse_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3});
  expect_refused_named("repeat NULL", tsr_repeat(NULL, 1, (int64_t[]){2}), "repeat", NULL);
  expect_refused_named("repeat with fewer repeats than dims", tsr_repeat(x, 1, (int64_t[]){2}),
                       "repeat", NULL);
  expect_refused_named("repeat -1", tsr_repeat(x, 2, (int64_t[]){-1, 1}), "repeat", NULL);
  expect_refused_named("repeat NULL repeats", tsr_repeat(x, 2, NULL), "repeat", NULL);
  expect_refused_named("repeat past the largest rank",
                       tsr_repeat(x, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}), "repeat", NULL);
  expect_refused_named("repeat overflowing int64", tsr_repeat(x, 2, (int64_t[]){INT64_MAX / 2, 3}),
                       "repeat", NULL);
  expect_refused_named("clone NULL", tsr_clone(NULL), "clone", NULL);
  tsr_tensor_release(x);
}

static tsr_tensor *repeat_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const int64_t *r = user;
  return tsr_repeat(in[0], (int32_t)r[0], r + 1);
}

static tsr_tensor *clone_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)user;
  (void)n;
  tsr_tensor *t = tsr_transpose(in[0], 0, 1);
  tsr_tensor *c = tsr_clone(t);
  tsr_tensor *y = tsr_mul(c, c);
  release_n(2, (tsr_tensor *[]){t, c});
  return y;
}

static void test_repeat_and_clone_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_COPY, TSR_OP_CONCAT, TSR_OP_BINARY, TSR_OP_REDUCE);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, 101, -1, 1, NULL);
  int64_t r3[4] = {3, 2, 1, 2};
  gradcheck_expect("repeat 2, 1, 2", repeat_fn, r3, 1, &x);
  tsr_tensor *deep =
      make_random_on(dev, TSR_FLOAT64, 8, (int64_t[]){1, 1, 1, 1, 1, 1, 2, 3}, 102, -1, 1, NULL);
  int64_t r8[9] = {8, 1, 1, 1, 1, 1, 2, 2, 1};
  gradcheck_expect("repeat at rank 8", repeat_fn, r8, 1, &deep);
  gradcheck_expect("clone", clone_fn, NULL, 1, &x);
  release_n(2, (tsr_tensor *[]){x, deep});
}

// --- tril, triu -------------------------------------------------------------

static void test_tril_and_triu_keep_their_triangle_for_every_diagonal(void **state) {
  (void)state;
  const int64_t s[3] = {2, 3, 4};
  tsr_dtype_t dtypes[2] = {TSR_FLOAT32, TSR_INT64};
  for (int t = 0; t < 2; ++t) {
    double v[24];
    ts_rng rng = {111};
    ts_rng_fill(&rng, dtypes[t], -9.0, 9.0, v, 24);
    tsr_tensor *x = make(dtypes[t], 3, s, v);
    for (int64_t k = -5; k <= 5; ++k) {
      for (int upper = 0; upper < 2; ++upper) {
        double want[24];
        for (int64_t i = 0; i < 24; ++i) {
          int64_t r = (i / 4) % 3, c = i % 4;
          int keep = upper ? c - r >= k : c - r <= k;
          want[i] = keep ? v[i] : 0.0;
        }
        tsr_tensor *out = upper ? tsr_triu(x, k) : tsr_tril(x, k);
        char what[64];
        snprintf(what, sizeof(what), "%s(%lld) %s", upper ? "triu" : "tril", (long long)k,
                 ts_dtype_name(dtypes[t]));
        expect_values(what, out, 3, s, want, 0.0);
        assert_int_equal(tsr_tensor_dtype(out), dtypes[t]);
        tsr_tensor_release(out);
      }
    }
    tsr_tensor_release(x);
  }
  // Huge diagonals select all or nothing.
  tsr_tensor *ones = tsr_ones(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 2});
  tsr_tensor *all = tsr_tril(ones, INT64_MAX);
  tsr_tensor *none = tsr_tril(ones, INT64_MIN);
  expect_values("tril(INT64_MAX)", all, 2, (int64_t[]){2, 2}, (double[]){1, 1, 1, 1}, 0.0);
  expect_values("tril(INT64_MIN)", none, 2, (int64_t[]){2, 2}, (double[]){0, 0, 0, 0}, 0.0);
  release_n(3, (tsr_tensor *[]){ones, all, none});
  tsr_tensor *v = tsr_zeros(g_device, TSR_FLOAT32, 1, (int64_t[]){3});
  expect_refused_named("tril of a vector", tsr_tril(v, 0), "tril", "rank 1");
  expect_refused_named("triu NULL", tsr_triu(NULL, 0), "triu", NULL);
  tsr_tensor_release(v);
}

static tsr_tensor *triangle_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  int64_t k = *(const int64_t *)user;
  return k >= 0 ? tsr_tril(in[0], k) : tsr_triu(in[0], -k);
}

static void test_tril_and_triu_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_WHERE);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 3, (int64_t[]){2, 3, 3}, 121, -1, 1, NULL);
  int64_t k = 0;
  gradcheck_expect("tril(0)", triangle_fn, &k, 1, &x);
  k = -1;  // triu(1)
  gradcheck_expect("triu(1)", triangle_fn, &k, 1, &x);
  tsr_tensor_release(x);
}

// --- masked_fill, where_scalar ----------------------------------------------

static void test_masked_fill_and_where_scalar_follow_the_mask(void **state) {
  (void)state;
  double v[6];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 131, v);
  tsr_tensor *row = make(TSR_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1});
  tsr_tensor *filled = tsr_masked_fill(x, row, 7.5);
  double want[6];
  for (int i = 0; i < 6; ++i) want[i] = (i % 3 != 1) ? 7.5 : v[i];
  expect_values("masked_fill with a broadcast row", filled, 2, (int64_t[]){2, 3}, want, 0.0);
  tsr_tensor *ints = make(TSR_INT32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
  tsr_tensor *full = make(TSR_BOOL, 2, (int64_t[]){2, 3}, (double[]){0, 0, 1, 1, 0, 0});
  tsr_tensor *ifilled = tsr_masked_fill(ints, full, -1.0);
  expect_values("masked_fill of int32", ifilled, 2, (int64_t[]){2, 3},
                (double[]){1, 2, -1, -1, 5, 6}, 0.0);
  assert_int_equal(tsr_tensor_dtype(ifilled), TSR_INT32);
  // where_scalar broadcasts cond and x together: [2, 3] and [3].
  double vr[3];
  tsr_tensor *xr = make_random(TSR_FLOAT32, 1, (int64_t[]){3}, 132, vr);
  tsr_tensor *w = tsr_where_scalar(full, xr, -2.0);
  for (int i = 0; i < 6; ++i) want[i] = (i == 2 || i == 3) ? vr[i % 3] : -2.0;
  expect_values("where_scalar", w, 2, (int64_t[]){2, 3}, want, 0.0);
  release_n(7, (tsr_tensor *[]){x, row, filled, ints, full, ifilled, xr});
  tsr_tensor_release(w);
}

static void test_masked_fill_and_where_scalar_refuse_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3});
  tsr_tensor *fmask = tsr_zeros(g_device, TSR_FLOAT32, 1, (int64_t[]){3});
  tsr_tensor *short_mask = tsr_zeros(g_device, TSR_BOOL, 1, (int64_t[]){2});
  tsr_tensor *big_mask = tsr_zeros(g_device, TSR_BOOL, 3, (int64_t[]){4, 2, 3});
  expect_refused_named("masked_fill NULL x", tsr_masked_fill(NULL, short_mask, 0), "masked_fill",
                       NULL);
  expect_refused_named("masked_fill NULL mask", tsr_masked_fill(x, NULL, 0), "masked_fill", NULL);
  expect_refused_named("masked_fill float mask", tsr_masked_fill(x, fmask, 0), "masked_fill",
                       "float32");
  expect_refused_named("masked_fill mask [2] for x [2, 3]", tsr_masked_fill(x, short_mask, 0),
                       "masked_fill", "[2]");
  expect_refused_named("masked_fill mask larger than x", tsr_masked_fill(x, big_mask, 0),
                       "masked_fill", NULL);
  expect_refused_named("where_scalar float cond", tsr_where_scalar(fmask, x, 0), "where_scalar",
                       "float32");
  expect_refused_named("where_scalar NULL x", tsr_where_scalar(short_mask, NULL, 0), "where_scalar",
                       NULL);
  expect_refused_named("where_scalar shapes that do not broadcast",
                       tsr_where_scalar(short_mask, x, 0), "where_scalar", NULL);
  release_n(4, (tsr_tensor *[]){x, fmask, short_mask, big_mask});
}

static tsr_tensor *mask_fn1(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  return tsr_masked_fill(in[0], user, -4.0);
}

static tsr_tensor *where_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  return tsr_where_scalar(user, in[0], 3.0);
}

static void test_masked_fill_and_where_scalar_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_WHERE);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, 141, -1, 1, NULL);
  tsr_tensor *mask = make_on(dev, TSR_BOOL, 2, (int64_t[]){2, 3}, (double[]){1, 0, 0, 1, 1, 0});
  gradcheck_expect("masked_fill", mask_fn1, mask, 1, &x);
  gradcheck_expect("where_scalar", where_fn, mask, 1, &x);
  release_n(2, (tsr_tensor *[]){x, mask});
}

// --- one_hot, index_select --------------------------------------------------

static void test_one_hot_marks_each_class(void **state) {
  (void)state;
  const double idx[6] = {0, 3, 1, 1, 2, 0};
  tsr_dtype_t dtypes[2] = {TSR_INT64, TSR_INT32};
  for (int t = 0; t < 2; ++t) {
    tsr_tensor *i = make(dtypes[t], 2, (int64_t[]){2, 3}, idx);
    int64_t classes[2] = {5, -1};
    for (int c = 0; c < 2; ++c) {
      int64_t k = classes[c] < 0 ? 4 : classes[c];
      double want[30];
      for (int64_t e = 0; e < 6 * k; ++e) want[e] = (double)(idx[e / k] == (double)(e % k));
      tsr_tensor *out = tsr_one_hot(i, classes[c]);
      char what[64];
      snprintf(what, sizeof(what), "one_hot(%s, %lld)", ts_dtype_name(dtypes[t]),
               (long long)classes[c]);
      expect_values(what, out, 3, (int64_t[]){2, 3, k}, want, 0.0);
      assert_int_equal(tsr_tensor_dtype(out), TSR_INT64);
      tsr_tensor_release(out);
    }
    tsr_tensor_release(i);
  }
  tsr_tensor *empty = tsr_zeros(g_device, TSR_INT64, 1, (int64_t[]){0});
  tsr_tensor *none = tsr_one_hot(empty, 3);
  expect_shape("one_hot of no indices", none, 2, (int64_t[]){0, 3});
  release_n(2, (tsr_tensor *[]){empty, none});
}

static void test_one_hot_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *f = tsr_zeros(g_device, TSR_FLOAT32, 1, (int64_t[]){3});
  tsr_tensor *neg = make(TSR_INT64, 1, (int64_t[]){2}, (double[]){0, -1});
  tsr_tensor *big = make(TSR_INT64, 1, (int64_t[]){2}, (double[]){0, 3});
  tsr_tensor *empty = tsr_zeros(g_device, TSR_INT64, 1, (int64_t[]){0});
  expect_refused_named("one_hot NULL", tsr_one_hot(NULL, 3), "one_hot", NULL);
  expect_refused_named("one_hot of float32", tsr_one_hot(f, 3), "one_hot", "float32");
  expect_refused_named("one_hot of a negative class", tsr_one_hot(neg, 3), "one_hot", "-1");
  expect_refused_named("one_hot of class 3 of 3", tsr_one_hot(big, 3), "one_hot", NULL);
  expect_refused_named("one_hot num_classes -2", tsr_one_hot(big, -2), "one_hot", NULL);
  expect_refused_named("one_hot inferring from nothing", tsr_one_hot(empty, -1), "one_hot", NULL);
  release_n(4, (tsr_tensor *[]){f, neg, big, empty});
}

static void test_index_select_picks_along_the_dim(void **state) {
  (void)state;
  double v[12];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){3, 4}, 151, v);
  tsr_tensor *rows = make(TSR_INT64, 1, (int64_t[]){3}, (double[]){2, 0, 2});
  tsr_tensor *a = tsr_index_select(x, 0, rows);
  double want[12];
  const int r[3] = {2, 0, 2};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) want[i * 4 + j] = v[r[i] * 4 + j];
  }
  expect_values("index_select rows 2, 0, 2", a, 2, (int64_t[]){3, 4}, want, 0.0);
  tsr_tensor *cols = make(TSR_INT32, 1, (int64_t[]){2}, (double[]){3, 1});
  tsr_tensor *b = tsr_index_select(x, -1, cols);
  for (int i = 0; i < 3; ++i) {
    want[i * 2] = v[i * 4 + 3];
    want[i * 2 + 1] = v[i * 4 + 1];
  }
  expect_values("index_select int32 columns 3, 1", b, 2, (int64_t[]){3, 2}, want, 0.0);
  tsr_tensor *one = make(TSR_INT64, 0, NULL, (double[]){1});
  tsr_tensor *c = tsr_index_select(x, 0, one);
  expect_values("index_select with a scalar index", c, 2, (int64_t[]){1, 4}, v + 4, 0.0);
  release_n(7, (tsr_tensor *[]){x, rows, a, cols, b, one, c});
}

static void test_index_select_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){3, 4});
  tsr_tensor *fi = tsr_zeros(g_device, TSR_FLOAT64, 1, (int64_t[]){2});
  tsr_tensor *i2 = tsr_zeros(g_device, TSR_INT64, 2, (int64_t[]){1, 2});
  tsr_tensor *far = make(TSR_INT64, 1, (int64_t[]){2}, (double[]){0, 3});
  tsr_tensor *idx = make(TSR_INT64, 1, (int64_t[]){1}, (double[]){0});
  tsr_tensor *s = tsr_tensor_full(g_device, TSR_FLOAT32, 0, NULL, 1.0);
  expect_refused_named("index_select NULL x", tsr_index_select(NULL, 0, idx), "index_select", NULL);
  expect_refused_named("index_select NULL index", tsr_index_select(x, 0, NULL), "index_select",
                       NULL);
  expect_refused_named("index_select float64 index", tsr_index_select(x, 0, fi), "index_select",
                       "float64");
  expect_refused_named("index_select 2-D index", tsr_index_select(x, 0, i2), "index_select",
                       "rank 2");
  expect_refused_named("index_select dim 2", tsr_index_select(x, 2, idx), "index_select", NULL);
  expect_refused_named("index_select of a scalar", tsr_index_select(s, 0, idx), "index_select",
                       NULL);
  // GATHER's range check runs with the op: an asynchronous device (opencl)
  // reports it at the next synchronisation, the others at the call.
  tsr_tensor *bad = tsr_index_select(x, 0, far);
  if (bad != NULL) {
    float got[8];
    expect_status_named("reading index_select of index 3 of 3 rows",
                        tsr_tensor_to_host(bad, got, sizeof(got)), "gather", "outside");
    tsr_tensor_release(bad);
  } else {
    expect_refused_named("index_select index 3 of 3 rows", bad, "index_select", NULL);
  }
  release_n(6, (tsr_tensor *[]){x, fi, i2, far, idx, s});
}

static tsr_tensor *index_select_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  return tsr_index_select(in[0], 1, user);
}

static void test_index_select_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_GATHER, TSR_OP_SCATTER_ADD);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 4}, 161, -1, 1, NULL);
  tsr_tensor *idx = make_on(dev, TSR_INT64, 1, (int64_t[]){4}, (double[]){3, 0, 3, 1});
  gradcheck_expect("index_select with a repeated index", index_select_fn, idx, 1, &x);
  release_n(2, (tsr_tensor *[]){x, idx});
}

// --- cumsum -----------------------------------------------------------------

// Running sums of |v| ([rows, cols]) along |dim| 0 or 1.
static void cumsum_oracle(const double *v, int64_t rows, int64_t cols, int dim, double *out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      double prev =
          dim == 1 ? (c ? out[r * cols + c - 1] : 0.0) : (r ? out[(r - 1) * cols + c] : 0.0);
      out[r * cols + c] = prev + v[r * cols + c];
    }
  }
}

static void test_cumsum_matches_running_sums_for_floats_and_ints(void **state) {
  (void)state;
  double v[15], want[15];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){3, 5}, 171, v);
  const int32_t dims[3] = {1, 0, -1};
  for (int k = 0; k < 3; ++k) {
    int d = dims[k] < 0 ? dims[k] + 2 : dims[k];
    cumsum_oracle(v, 3, 5, d, want);
    tsr_tensor *out = tsr_cumsum(x, dims[k]);
    char what[32];
    snprintf(what, sizeof(what), "cumsum dim %d", dims[k]);
    expect_values(what, out, 2, (int64_t[]){3, 5}, want, F32_TOL);
    tsr_tensor_release(out);
  }
  // Integers and bools sum into int64.
  const double iv[6] = {1, -2, 3, 4, 0, 7};
  tsr_dtype_t dtypes[3] = {TSR_INT32, TSR_INT64, TSR_BOOL};
  for (int t = 0; t < 3; ++t) {
    double src[6];
    for (int i = 0; i < 6; ++i) src[i] = dtypes[t] == TSR_BOOL ? (iv[i] != 0) : iv[i];
    tsr_tensor *xi = make(dtypes[t], 1, (int64_t[]){6}, src);
    tsr_tensor *out = tsr_cumsum(xi, 0);
    cumsum_oracle(src, 1, 6, 1, want);
    char what[32];
    snprintf(what, sizeof(what), "cumsum of %s", ts_dtype_name(dtypes[t]));
    expect_values(what, out, 1, (int64_t[]){6}, want, 0.0);
    assert_int_equal(tsr_tensor_dtype(out), TSR_INT64);
    release_n(2, (tsr_tensor *[]){xi, out});
  }
  // A long float64 run: ten passes of the scan.
  const int64_t n = 1000;
  double *lv = dalloc(n), *lw = dalloc(n);
  tsr_tensor *lx = make_random(TSR_FLOAT64, 1, &n, 172, lv);
  cumsum_oracle(lv, 1, n, 1, lw);
  tsr_tensor *lo = tsr_cumsum(lx, 0);
  expect_values("cumsum of 1000 float64", lo, 1, &n, lw, 1e-12);
  free(lv);
  free(lw);
  // One element along the dim, and a scalar: a copy.
  tsr_tensor *single = tsr_slice(x, 0, 0, 1, 1);
  tsr_tensor *so = tsr_cumsum(single, 0);
  expect_values("cumsum over a dim of 1", so, 2, (int64_t[]){1, 5}, v, 0.0);
  assert_false(tsr_tensor_shares_storage(so, x));
  tsr_tensor *s = tsr_tensor_full(g_device, TSR_FLOAT32, 0, NULL, 3.0);
  tsr_tensor *sc = tsr_cumsum(s, -1);
  expect_values("cumsum of a scalar", sc, 0, NULL, (double[]){3.0}, 0.0);
  release_n(7, (tsr_tensor *[]){x, lx, lo, single, so, s, sc});
  expect_refused_named("cumsum NULL", tsr_cumsum(NULL, 0), "cumsum", NULL);
  tsr_tensor *m = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 2});
  expect_refused_named("cumsum dim 2", tsr_cumsum(m, 2), "cumsum", "dim 2");
  tsr_tensor_release(m);
  tsr_tensor *half = tsr_zeros(g_device, TSR_FLOAT16, 1, (int64_t[]){2});
  if (half != NULL) {
    expect_refused_named("cumsum of float16", tsr_cumsum(half, 0), "cumsum", "float16");
    tsr_tensor_release(half);
  } else {
    tsr_last_error_clear();
    tsr_context_error_clear(g_context);
  }
}

static tsr_tensor *cumsum_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  return tsr_cumsum(in[0], *(const int32_t *)user);
}

static void test_cumsum_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_PAD, TSR_OP_BINARY);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){3, 6}, 181, -1, 1, NULL);
  int32_t dim = 1;
  gradcheck_expect("cumsum dim 1", cumsum_fn, &dim, 1, &x);
  dim = 0;
  gradcheck_expect("cumsum dim 0", cumsum_fn, &dim, 1, &x);
  tsr_tensor_release(x);
}

// --- var, std ---------------------------------------------------------------

typedef struct reduce_case {
  int32_t num_dims;
  int32_t dims[2];
  uint32_t mask;  // the same dims, for the oracle
  int keepdim;
} reduce_case;

// Checks |out| of a reduction of x [3, 4] against |fn| over the case's dims.
static void expect_reduced(const char *what, tsr_tensor *out, const double *v, const reduce_case *c,
                           slice_fn fn, double param, double tol) {
  const int64_t s[2] = {3, 4};
  double want[12];
  reduce_oracle(2, s, v, c->mask, fn, param, want);
  int64_t sizes[2];
  int32_t rank = 0;
  for (int32_t d = 0; d < 2; ++d) {
    if (!((c->mask >> d) & 1u)) {
      sizes[rank++] = s[d];
    } else if (c->keepdim) {
      sizes[rank++] = 1;
    }
  }
  expect_values(what, out, rank, sizes, want, tol);
}

static const reduce_case kCases[5] = {
    {1, {1, 0}, 2u, 0},  {1, {0, 0}, 1u, 1},  {0, {0, 0}, 3u, 0},
    {2, {-1, 0}, 3u, 1}, {1, {-2, 0}, 1u, 0},
};

static void test_var_and_std_divide_by_n_minus_the_correction(void **state) {
  (void)state;
  tsr_dtype_t dtypes[2] = {TSR_FLOAT32, TSR_FLOAT64};
  const double corrections[3] = {1.0, 0.0, 2.0};
  for (int t = 0; t < 2; ++t) {
    double v[12];
    tsr_tensor *x = make_random(dtypes[t], 2, (int64_t[]){3, 4}, 191, v);
    double tol = dtypes[t] == TSR_FLOAT32 ? F32_TOL : 1e-12;
    for (int c = 0; c < 5; ++c) {
      for (int k = 0; k < 3; ++k) {
        char what[96];
        snprintf(what, sizeof(what), "var %s case %d correction %g", ts_dtype_name(dtypes[t]), c,
                 corrections[k]);
        tsr_tensor *var =
            tsr_var(x, kCases[c].num_dims, kCases[c].dims, corrections[k], kCases[c].keepdim);
        expect_reduced(what, var, v, &kCases[c], slice_var, corrections[k], tol);
        what[0] = 's', what[1] = 't', what[2] = 'd';
        tsr_tensor *std =
            tsr_std(x, kCases[c].num_dims, kCases[c].dims, corrections[k], kCases[c].keepdim);
        expect_reduced(what, std, v, &kCases[c], slice_std, corrections[k], tol);
        release_n(2, (tsr_tensor *[]){var, std});
      }
    }
    tsr_tensor_release(x);
  }
  // One element with the unbiased default: 0 / 0, NaN as in PyTorch.
  tsr_tensor *one = make(TSR_FLOAT32, 1, (int64_t[]){1}, (double[]){2.0});
  tsr_tensor *nan = tsr_var(one, 0, NULL, 1.0, 0);
  expect_values("var of one element", nan, 0, NULL, (double[]){NAN}, 0.0);
  release_n(2, (tsr_tensor *[]){one, nan});
}

static void test_var_and_std_refuse_bad_input(void **state) {
  (void)state;
  tsr_tensor *i = tsr_zeros(g_device, TSR_INT64, 2, (int64_t[]){2, 2});
  tsr_tensor *x = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 2});
  expect_refused_named("var NULL", tsr_var(NULL, 0, NULL, 1, 0), "var", NULL);
  expect_refused_named("var of int64", tsr_var(i, 0, NULL, 1, 0), "var", "int64");
  expect_refused_named("std of int64", tsr_std(i, 0, NULL, 1, 0), "std", "int64");
  expect_refused_named("var dims repeated", tsr_var(x, 2, (int32_t[]){1, -1}, 1, 0), "var", NULL);
  expect_refused_named("var dim 2", tsr_var(x, 1, (int32_t[]){2}, 1, 0), "var", "dim 2");
  expect_refused_named("var NULL dims", tsr_var(x, 1, NULL, 1, 0), "var", NULL);
  expect_refused_named("std NaN correction", tsr_std(x, 0, NULL, NAN, 0), "std", NULL);
  release_n(2, (tsr_tensor *[]){i, x});
}

static tsr_tensor *var_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  int which = *(const int *)user;
  int32_t dim = 1;
  if (which == 0)
    return tsr_var(in[0], 1, &dim, 1.0, 0);
  if (which == 1)
    return tsr_std(in[0], 0, NULL, 0.0, 1);
  return tsr_std(in[0], 1, &dim, 1.0, 1);
}

static void test_var_and_std_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_REDUCE, TSR_OP_BINARY, TSR_OP_UNARY);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){3, 4}, 201, -1, 1, NULL);
  for (int which = 0; which < 3; ++which) {
    char what[32];
    snprintf(what, sizeof(what), "var/std case %d", which);
    gradcheck_expect(what, var_fn, &which, 1, &x);
  }
  tsr_tensor_release(x);
}

// --- logsumexp --------------------------------------------------------------

static void test_logsumexp_matches_float64_and_stays_finite(void **state) {
  (void)state;
  double v[12];
  tsr_tensor *x = make_random_on(g_device, TSR_FLOAT32, 2, (int64_t[]){3, 4}, 211, -3, 3, v);
  for (int c = 0; c < 5; ++c) {
    char what[48];
    snprintf(what, sizeof(what), "logsumexp case %d", c);
    tsr_tensor *out = tsr_logsumexp(x, kCases[c].num_dims, kCases[c].dims, kCases[c].keepdim);
    expect_reduced(what, out, v, &kCases[c], slice_logsumexp, 0.0, F32_TOL);
    tsr_tensor_release(out);
  }
  // Values whose exp overflows float32, a row of -inf and a row with +inf.
  const double big[12] = {1000,      1000,      999, -5,       -INFINITY, -INFINITY,
                          -INFINITY, -INFINITY, 1,   INFINITY, 2,         3};
  tsr_tensor *b = make(TSR_FLOAT32, 2, (int64_t[]){3, 4}, big);
  tsr_tensor *out = tsr_logsumexp(b, 1, (int32_t[]){1}, 0);
  double want[3];
  reduce_oracle(2, (int64_t[]){3, 4}, big, 2u, slice_logsumexp, 0.0, want);
  assert_true(isfinite(want[0]) && want[1] == -INFINITY && want[2] == INFINITY);
  expect_values("logsumexp of huge and infinite rows", out, 1, (int64_t[]){3}, want, F32_TOL);
  // An empty reduction is log 0 = -inf.
  tsr_tensor *e = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 0});
  tsr_tensor *eo = tsr_logsumexp(e, 1, (int32_t[]){1}, 1);
  expect_values("logsumexp of empty rows", eo, 2, (int64_t[]){2, 1},
                (double[]){-INFINITY, -INFINITY}, 0.0);
  release_n(5, (tsr_tensor *[]){x, b, out, e, eo});
  tsr_tensor *i = tsr_zeros(g_device, TSR_INT32, 1, (int64_t[]){2});
  expect_refused_named("logsumexp of int32", tsr_logsumexp(i, 0, NULL, 0), "logsumexp", "int32");
  expect_refused_named("logsumexp NULL", tsr_logsumexp(NULL, 0, NULL, 0), "logsumexp", NULL);
  expect_refused_named("logsumexp dim 1 of rank 1", tsr_logsumexp(i, 1, (int32_t[]){1}, 0),
                       "logsumexp", NULL);
  tsr_tensor_release(i);
}

static tsr_tensor *logsumexp_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const reduce_case *c = user;
  return tsr_logsumexp(in[0], c->num_dims, c->dims, c->keepdim);
}

static void test_logsumexp_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_REDUCE, TSR_OP_BINARY, TSR_OP_UNARY, TSR_OP_WHERE);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){3, 4}, 221, -3, 3, NULL);
  gradcheck_expect("logsumexp dim 1", logsumexp_fn, (void *)&kCases[0], 1, &x);
  gradcheck_expect("logsumexp of all", logsumexp_fn, (void *)&kCases[2], 1, &x);
  tsr_tensor_release(x);
}

// --- norm -------------------------------------------------------------------

static void test_norm_matches_float64_for_every_p(void **state) {
  (void)state;
  double v[12];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){3, 4}, 231, v);
  v[5] = 0.0;  // a zero for p = 0 to skip
  tsr_tensor_release(x);
  x = make(TSR_FLOAT32, 2, (int64_t[]){3, 4}, v);
  const double ps[7] = {2.0, 1.0, INFINITY, -INFINITY, 0.0, 3.0, 0.5};
  for (int k = 0; k < 7; ++k) {
    for (int c = 0; c < 5; ++c) {
      char what[48];
      snprintf(what, sizeof(what), "norm p=%g case %d", ps[k], c);
      tsr_tensor *out = tsr_norm(x, ps[k], kCases[c].num_dims, kCases[c].dims, kCases[c].keepdim);
      expect_reduced(what, out, v, &kCases[c], slice_norm, ps[k], F32_TOL);
      tsr_tensor_release(out);
    }
  }
  tsr_tensor_release(x);
}

static void test_norm_refuses_bad_input(void **state) {
  (void)state;
  tsr_tensor *i = tsr_zeros(g_device, TSR_INT64, 1, (int64_t[]){2});
  tsr_tensor *e = tsr_zeros(g_device, TSR_FLOAT32, 2, (int64_t[]){0, 2});
  expect_refused_named("norm NULL", tsr_norm(NULL, 2, 0, NULL, 0), "norm", NULL);
  expect_refused_named("norm of int64", tsr_norm(i, 2, 0, NULL, 0), "norm", "int64");
  expect_refused_named("norm NaN p", tsr_norm(e, NAN, 0, NULL, 0), "norm", NULL);
  expect_refused_named("inf norm of an empty dim", tsr_norm(e, INFINITY, 1, (int32_t[]){0}, 0),
                       "norm", NULL);
  // Over the non-empty dim the inf norm of no rows is an empty result.
  tsr_tensor *ok = tsr_norm(e, INFINITY, 1, (int32_t[]){1}, 0);
  expect_shape("inf norm of zero rows", ok, 1, (int64_t[]){0});
  release_n(3, (tsr_tensor *[]){i, e, ok});
}

typedef struct norm_case {
  double p;
  int32_t dim;
  int keepdim;
} norm_case;

static tsr_tensor *norm_fn(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const norm_case *c = user;
  return tsr_norm(in[0], c->p, c->dim < 0 ? 0 : 1, &c->dim, c->keepdim);
}

static void test_norm_gradients_match_finite_differences_and_are_zero_at_zero(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_REDUCE, TSR_OP_BINARY, TSR_OP_UNARY, TSR_OP_WHERE);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){3, 4}, 241, -1, 1, NULL);
  const norm_case cases[5] = {
      {2.0, 1, 0}, {2.0, -1, 0}, {1.0, 0, 1}, {INFINITY, 1, 0}, {3.0, 1, 1}};
  for (int k = 0; k < 5; ++k) {
    char what[48];
    snprintf(what, sizeof(what), "norm p=%g dim %d", cases[k].p, cases[k].dim);
    gradcheck_expect(what, norm_fn, (void *)&cases[k], 1, &x);
  }
  tsr_tensor_release(x);
  // A zero row: PyTorch's gradient there is 0, not NaN.
  const double v[4] = {0, 0, 3, 4};
  for (int k = 0; k < 2; ++k) {
    double p = k == 0 ? 2.0 : 3.0;
    tsr_tensor *z = make_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 2}, v);
    TS_ASSERT_OK(tsr_tensor_requires_grad_set(z, 1));
    tsr_tensor *n = tsr_norm(z, p, 1, (int32_t[]){1}, 0);
    tsr_tensor *s = tsr_sum(n, 0, NULL, 0);
    TS_ASSERT_OK(tsr_backward(s, NULL, 0));
    tsr_tensor *g = tsr_tensor_grad(z);
    double want[4] = {0, 0, 0, 0};
    double r = pow(pow(3, p) + pow(4, p), 1.0 / p);
    want[2] = pow(3.0 / r, p - 1);
    want[3] = pow(4.0 / r, p - 1);
    expect_values(p == 2.0 ? "2-norm gradient at a zero row" : "3-norm gradient at a zero row", g,
                  2, (int64_t[]){2, 2}, want, 1e-12);
    release_n(4, (tsr_tensor *[]){z, n, s, g});
  }
}

// --- lerp, pow --------------------------------------------------------------

static void test_lerp_matches_both_of_pytorchs_branches(void **state) {
  (void)state;
  double a[6], b[6];
  tsr_tensor *s = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 251, a);
  tsr_tensor *e = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 252, b);
  const double wv[3] = {-0.25, 0.25, 0.75};
  tsr_tensor *w = make(TSR_FLOAT32, 1, (int64_t[]){3}, wv);
  tsr_tensor *out = tsr_lerp(s, e, w);
  double want[6];
  for (int i = 0; i < 6; ++i) want[i] = a[i] + wv[i % 3] * (b[i] - a[i]);
  expect_values("lerp with a tensor weight", out, 2, (int64_t[]){2, 3}, want, F32_TOL);
  tsr_tensor_release(out);
  const double scalars[4] = {0.0, 0.3, 0.8, 1.0};
  for (int k = 0; k < 4; ++k) {
    out = tsr_lerp_scalar(s, e, scalars[k]);
    for (int i = 0; i < 6; ++i) want[i] = a[i] + scalars[k] * (b[i] - a[i]);
    if (scalars[k] == 1.0)
      memcpy(want, b, sizeof(want));  // exactly end, as PyTorch's form gives
    char what[48];
    snprintf(what, sizeof(what), "lerp_scalar %g", scalars[k]);
    expect_values(what, out, 2, (int64_t[]){2, 3}, want, scalars[k] == 1.0 ? 0.0 : F32_TOL);
    tsr_tensor_release(out);
  }
  tsr_tensor *i = tsr_zeros(g_device, TSR_INT32, 1, (int64_t[]){3});
  tsr_tensor *d = tsr_zeros(g_device, TSR_FLOAT64, 1, (int64_t[]){3});
  expect_refused_named("lerp NULL weight", tsr_lerp(s, e, NULL), "lerp", "weight");
  expect_refused_named("lerp of int32", tsr_lerp(i, i, i), "lerp", "int32");
  expect_refused_named("lerp float32 and float64", tsr_lerp(s, e, d), "lerp", "float64");
  expect_refused_named("lerp_scalar of int32", tsr_lerp_scalar(i, i, 0.5), "lerp_scalar", "int32");
  expect_refused_named("lerp_scalar NULL end", tsr_lerp_scalar(s, NULL, 0.5), "lerp_scalar", NULL);
  release_n(5, (tsr_tensor *[]){s, e, w, i, d});
}

static tsr_tensor *lerp_fn(void *user, int32_t n, tsr_tensor *const *in) {
  if (n == 3)
    return tsr_lerp(in[0], in[1], in[2]);
  return tsr_lerp_scalar(in[0], in[1], *(const double *)user);
}

static void test_lerp_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_BINARY, TSR_OP_WHERE, TSR_OP_COMPARE);
  tsr_tensor *s = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, 261, -1, 1, NULL);
  tsr_tensor *e = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, 262, -1, 1, NULL);
  tsr_tensor *w = make_on(dev, TSR_FLOAT64, 1, (int64_t[]){3}, (double[]){-0.2, 0.3, 0.9});
  gradcheck_expect("lerp", lerp_fn, NULL, 3, (tsr_tensor *[]){s, e, w});
  double weights[2] = {0.2, 0.7};
  for (int k = 0; k < 2; ++k) {
    gradcheck_expect("lerp_scalar", lerp_fn, &weights[k], 2, (tsr_tensor *[]){s, e});
  }
  release_n(3, (tsr_tensor *[]){s, e, w});
}

static void test_pow_raises_to_tensor_and_scalar_exponents(void **state) {
  (void)state;
  double a[6], b[3], want[6];
  tsr_tensor *x = make_random_on(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3}, 271, 0.5, 2.0, a);
  tsr_tensor *e = make_random_on(g_device, TSR_FLOAT32, 1, (int64_t[]){3}, 272, -2.0, 2.0, b);
  tsr_tensor *out = tsr_pow(x, e);
  for (int i = 0; i < 6; ++i) want[i] = pow(a[i], b[i % 3]);
  expect_values("pow with a broadcast exponent", out, 2, (int64_t[]){2, 3}, want, F32_TOL);
  tsr_tensor_release(out);
  const double exps[4] = {2.0, 0.5, -1.5, 0.0};
  for (int k = 0; k < 4; ++k) {
    out = tsr_pow_scalar(x, exps[k]);
    for (int i = 0; i < 6; ++i) want[i] = pow(a[i], exps[k]);
    char what[32];
    snprintf(what, sizeof(what), "pow_scalar %g", exps[k]);
    expect_values(what, out, 2, (int64_t[]){2, 3}, want, F32_TOL);
    tsr_tensor_release(out);
  }
  tsr_tensor *i = tsr_zeros(g_device, TSR_INT64, 1, (int64_t[]){3});
  tsr_tensor *d = tsr_zeros(g_device, TSR_FLOAT64, 1, (int64_t[]){3});
  expect_refused_named("pow of int64", tsr_pow(i, i), "pow", "int64");
  expect_refused_named("pow float32 by float64", tsr_pow(x, d), "pow", "float64");
  expect_refused_named("pow NULL exponent", tsr_pow(x, NULL), "pow", "exponent");
  expect_refused_named("pow_scalar of int64", tsr_pow_scalar(i, 2.0), "pow_scalar", "int64");
  expect_refused_named("pow_scalar NULL", tsr_pow_scalar(NULL, 2.0), "pow_scalar", NULL);
  release_n(4, (tsr_tensor *[]){x, e, i, d});
}

static tsr_tensor *pow_fn(void *user, int32_t n, tsr_tensor *const *in) {
  if (n == 2)
    return tsr_pow(in[0], in[1]);
  return tsr_pow_scalar(in[0], *(const double *)user);
}

static void test_pow_gradients_match_finite_differences(void **state) {
  (void)state;
  F64_DEVICE_OR_SKIP(dev, TSR_OP_BINARY, TSR_OP_UNARY);
  tsr_tensor *x = make_random_on(dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, 281, 0.5, 2.0, NULL);
  tsr_tensor *e = make_random_on(dev, TSR_FLOAT64, 1, (int64_t[]){3}, 282, -2.0, 2.0, NULL);
  gradcheck_expect("pow", pow_fn, NULL, 2, (tsr_tensor *[]){x, e});
  double exps[3] = {2.0, 0.5, -1.5};
  for (int k = 0; k < 3; ++k) gradcheck_expect("pow_scalar", pow_fn, &exps[k], 1, &x);
  release_n(2, (tsr_tensor *[]){x, e});
}

// --- item -------------------------------------------------------------------

static void test_item_reads_the_one_element_of_any_dtype(void **state) {
  (void)state;
  const tsr_dtype_t dtypes[7] = {TSR_FLOAT32, TSR_FLOAT64,  TSR_INT32,  TSR_INT64,
                                 TSR_BOOL,    TSR_BFLOAT16, TSR_FLOAT16};
  const double values[7] = {-1.25, 0.1, -7, 123456789012, 1, 2.5, -0.375};
  for (int t = 0; t < 7; ++t) {
    tsr_tensor *x = tsr_tensor_full(g_device, dtypes[t], 2, (int64_t[]){1, 1}, values[t]);
    if (x == NULL) {  // a device without the half dtypes
      assert_true(dtypes[t] == TSR_BFLOAT16 || dtypes[t] == TSR_FLOAT16);
      tsr_last_error_clear();
      tsr_context_error_clear(g_context);
      continue;
    }
    double got = 0.0;
    TS_ASSERT_OK(tsr_item(x, &got));
    double want = dtypes[t] == TSR_FLOAT32 ? (double)(float)values[t] : values[t];
    if (got != want)
      fail_msg("item of dtype %d: %.17g, expected %.17g", dtypes[t], got, want);
    tsr_tensor_release(x);
  }
  // A rank-0 result of a computation, and an element of a view.
  double v[6];
  tsr_tensor *x = make_random(TSR_FLOAT32, 2, (int64_t[]){2, 3}, 291, v);
  tsr_tensor *sum = tsr_sum(x, 0, NULL, 0);
  double got = 0.0, want = 0.0;
  for (int i = 0; i < 6; ++i) want += v[i];
  TS_ASSERT_OK(tsr_item(sum, &got));
  if (fabs(got - want) > F32_TOL)
    fail_msg("item of a sum: %.9g, expected %.9g", got, want);
  tsr_tensor *col = tsr_slice(x, 1, 2, 3, 1);
  tsr_tensor *cell = tsr_slice(col, 0, 1, 2, 1);
  TS_ASSERT_OK(tsr_item(cell, &got));
  if (got != v[5])
    fail_msg("item of a view: %.9g, expected %.9g", got, v[5]);
  expect_status_named("item of two elements", tsr_item(x, &got), "item", "6 elements");
  expect_status_named("item NULL out_value", tsr_item(sum, NULL), "item", NULL);
  expect_status_named("item NULL", tsr_item(NULL, &got), "item", NULL);
  release_n(4, (tsr_tensor *[]){x, sum, col, cell});
}

// --- scopes -----------------------------------------------------------------

static void test_results_and_inputs_stay_in_their_scope(void **state) {
  (void)state;
  // Inside a scope every function hands back a scope tensor and leaves its
  // inputs in the scope (releasing a retained input there would take it out):
  // the scope's end releases all of them, so every handle is dead after it.
  size_t scope = tsr_scope_begin();
  tsr_tensor *x = tsr_ones(g_device, TSR_FLOAT32, 2, (int64_t[]){2, 3});
  tsr_tensor *i32 = make(TSR_INT32, 1, (int64_t[]){2}, (double[]){1, 0});
  tsr_tensor *i64 = make(TSR_INT64, 1, (int64_t[]){2}, (double[]){1, 0});
  tsr_tensor *i0 = make(TSR_INT64, 0, NULL, (double[]){1});
  tsr_tensor *column = tsr_slice(x, 1, 0, 1, 1);
  tsr_tensor *results[] = {
      tsr_cumsum(x, 1),
      tsr_cumsum(column, 1),
      tsr_cumsum(i32, 0),
      tsr_var(x, 0, NULL, 1, 1),
      tsr_std(x, 0, NULL, 1, 0),
      tsr_logsumexp(x, 0, NULL, 1),
      tsr_logsumexp(x, 0, NULL, 0),
      tsr_norm(x, 2, 0, NULL, 0),
      tsr_norm(x, 3, 0, NULL, 1),
      tsr_one_hot(i32, 2),
      tsr_one_hot(i64, -1),
      tsr_index_select(x, 0, i64),
      tsr_index_select(x, 0, i0),
      tsr_repeat(x, 2, (int64_t[]){1, 1}),
      tsr_clone(x),
  };
  const size_t count = sizeof(results) / sizeof(results[0]);
  for (size_t k = 0; k < count; ++k) TS_ASSERT_TENSOR(results[k]);
  tsr_tensor *inputs[] = {x, i32, i64, i0, column};
  tsr_scope_end(scope);
  for (size_t k = 0; k < sizeof(inputs) / sizeof(inputs[0]); ++k) {
    if (tsr_tensor_retain(inputs[k]) != NULL)
      fail_msg("input %zu outlived its scope", k);
  }
  for (size_t k = 0; k < count; ++k) {
    if (tsr_tensor_retain(results[k]) != NULL)
      fail_msg("result %zu outlived its scope", k);
  }
  tsr_last_error_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_stack_joins_along_a_new_dim_at_every_position, test_setup),
      cmocka_unit_test_setup(test_stack_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_stack_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_squeeze_and_unsqueeze_change_only_size_one_dims, test_setup),
      cmocka_unit_test_setup(test_flatten_merges_the_dims_from_start_to_end, test_setup),
      cmocka_unit_test_setup(test_squeeze_unsqueeze_and_flatten_refuse_bad_input, test_setup),
      cmocka_unit_test_setup(test_squeeze_unsqueeze_and_flatten_gradients_match_finite_differences,
                             test_setup),
      cmocka_unit_test_setup(test_chunk_and_split_give_pytorchs_pieces, test_setup),
      cmocka_unit_test_setup(test_chunk_and_split_refuse_bad_input, test_setup),
      cmocka_unit_test_setup(test_chunk_and_split_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_repeat_tiles_like_pytorch_into_new_storage, test_setup),
      cmocka_unit_test_setup(test_clone_copies_into_new_contiguous_storage, test_setup),
      cmocka_unit_test_setup(test_repeat_and_clone_refuse_bad_input, test_setup),
      cmocka_unit_test_setup(test_repeat_and_clone_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_tril_and_triu_keep_their_triangle_for_every_diagonal, test_setup),
      cmocka_unit_test_setup(test_tril_and_triu_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_masked_fill_and_where_scalar_follow_the_mask, test_setup),
      cmocka_unit_test_setup(test_masked_fill_and_where_scalar_refuse_bad_input, test_setup),
      cmocka_unit_test_setup(test_masked_fill_and_where_scalar_gradients_match_finite_differences,
                             test_setup),
      cmocka_unit_test_setup(test_one_hot_marks_each_class, test_setup),
      cmocka_unit_test_setup(test_one_hot_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_index_select_picks_along_the_dim, test_setup),
      cmocka_unit_test_setup(test_index_select_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_index_select_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_cumsum_matches_running_sums_for_floats_and_ints, test_setup),
      cmocka_unit_test_setup(test_cumsum_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_var_and_std_divide_by_n_minus_the_correction, test_setup),
      cmocka_unit_test_setup(test_var_and_std_refuse_bad_input, test_setup),
      cmocka_unit_test_setup(test_var_and_std_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_logsumexp_matches_float64_and_stays_finite, test_setup),
      cmocka_unit_test_setup(test_logsumexp_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_norm_matches_float64_for_every_p, test_setup),
      cmocka_unit_test_setup(test_norm_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_norm_gradients_match_finite_differences_and_are_zero_at_zero,
                             test_setup),
      cmocka_unit_test_setup(test_lerp_matches_both_of_pytorchs_branches, test_setup),
      cmocka_unit_test_setup(test_lerp_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_pow_raises_to_tensor_and_scalar_exponents, test_setup),
      cmocka_unit_test_setup(test_pow_gradients_match_finite_differences, test_setup),
      cmocka_unit_test_setup(test_item_reads_the_one_element_of_any_dtype, test_setup),
      cmocka_unit_test_setup(test_results_and_inputs_stay_in_their_scope, test_setup),
  };
#ifdef TSR_TEST_SKIP_WITHOUT_DEVICE
  // The OpenCL build runs where there may be no OpenCL device: skip (77).
  tsr_context *probe = ts_context_create(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE);
  if (probe == NULL) {
    printf("SKIPPED: no %s device: %s\n", TSR_TEST_DEVICE, tsr_last_error());
    return 77;
  }
  tsr_context_destroy(probe);
#endif
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
