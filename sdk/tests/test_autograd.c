// Autograd: the gradient checker on every rule of the elementwise, reduction,
// matmul and view functions, and the engine's behaviour (accumulation,
// no_grad, retain_graph, in-place detection, scopes, long chains).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "test_support.h"

static tsr_context *g_ctx;
static tsr_device *g_dev;

static int group_setup(void **state) {
  (void)state;
  g_ctx = ts_context_create(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE);
  if (g_ctx == NULL)
    return -1;
  g_dev = tsr_context_device_find(g_ctx, TSR_TEST_DEVICE);
  return g_dev ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_ctx);
  return 0;
}

// A float64 tensor with values in [lo, hi) from |seed|.
static tsr_tensor *rnd(int32_t rank, const int64_t *sizes, double lo, double hi, uint64_t seed) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  ts_rng r = {seed};
  ts_rng_fill(&r, TSR_FLOAT64, lo, hi, v, n);
  tsr_tensor *t = ts_tensor(g_dev, TSR_FLOAT64, rank, sizes, v);
  free(v);
  assert_non_null(t);
  return t;
}

// --- the functions under test ----------------------------------------------------

typedef struct case_args {
  int kind;
  int32_t fn;
  double alpha;
  int32_t i0, i1;
} case_args;

static tsr_tensor *unary_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const case_args *c = user;
  return tsr_unary(in[0], c->fn, c->alpha);
}

static tsr_tensor *binary_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const case_args *c = user;
  return tsr_binary(in[0], in[1], c->fn, c->alpha);
}

static void expect_gradcheck(const char *what, tsr_gradcheck_fn fn, void *user, int32_t n,
                             tsr_tensor *const *inputs) {
  tsr_gradcheck_result result = {.struct_size = sizeof(result)};
  tsr_status status = tsr_gradcheck(fn, user, n, inputs, NULL, &result);
  if (status != TSR_OK)
    fail_msg("%s: gradcheck failed to run: %s", what, tsr_last_error());
  if (!result.passed) {
    fail_msg("%s: gradient of input %d element %lld: analytic %.9g, numeric %.9g", what,
             result.worst_input, (long long)result.worst_index, result.analytic, result.numeric);
  }
  assert_true(result.checked > 0);
}

// Every differentiable unary function, over a range where it is smooth (the
// kinks of abs, relu, leaky_relu and elu from both sides).
static const struct {
  tsr_unary_fn_t fn;
  double lo, hi, alpha;
  const char *name;
} k_unary_cases[] = {
    {TSR_UNARY_NEG, -2, 2, 0, "neg"},
    {TSR_UNARY_ABS, 0.1, 2, 0, "abs+"},
    {TSR_UNARY_ABS, -2, -0.1, 0, "abs-"},
    {TSR_UNARY_EXP, -2, 2, 0, "exp"},
    {TSR_UNARY_LOG, 0.2, 3, 0, "log"},
    {TSR_UNARY_SQRT, 0.2, 3, 0, "sqrt"},
    {TSR_UNARY_RSQRT, 0.2, 3, 0, "rsqrt"},
    {TSR_UNARY_RECIPROCAL, 0.3, 3, 0, "recip"},
    {TSR_UNARY_SQUARE, -2, 2, 0, "square"},
    {TSR_UNARY_SIN, -3, 3, 0, "sin"},
    {TSR_UNARY_COS, -3, 3, 0, "cos"},
    {TSR_UNARY_TANH, -2, 2, 0, "tanh"},
    {TSR_UNARY_SIGMOID, -3, 3, 0, "sigmoid"},
    {TSR_UNARY_RELU, 0.1, 2, 0, "relu+"},
    {TSR_UNARY_RELU, -2, -0.1, 0, "relu-"},
    {TSR_UNARY_GELU, -3, 3, 0, "gelu"},
    {TSR_UNARY_GELU_TANH, -3, 3, 0, "gelu_tanh"},
    {TSR_UNARY_SILU, -3, 3, 0, "silu"},
    {TSR_UNARY_LEAKY_RELU, -2, -0.1, 0.1, "leaky-"},
    {TSR_UNARY_LEAKY_RELU, 0.1, 2, 0.1, "leaky+"},
    {TSR_UNARY_ELU, -2, -0.1, 0.7, "elu-"},
    {TSR_UNARY_ELU, 0.1, 2, 0.7, "elu+"},
    {TSR_UNARY_LOG1P, -0.5, 2, 0, "log1p"},
    {TSR_UNARY_EXPM1, -2, 2, 0, "expm1"},
    {TSR_UNARY_ERF, -2, 2, 0, "erf"},
};

#define UNARY_CASES (sizeof(k_unary_cases) / sizeof(k_unary_cases[0]))

static void test_every_differentiable_unary_passes_gradcheck(void **state) {
  (void)state;
  for (size_t i = 0; i < UNARY_CASES; ++i) {
    tsr_tensor *x = rnd(2, (int64_t[]){3, 4}, k_unary_cases[i].lo, k_unary_cases[i].hi, 100 + i);
    case_args c = {.fn = k_unary_cases[i].fn, .alpha = k_unary_cases[i].alpha};
    expect_gradcheck(k_unary_cases[i].name, unary_case, &c, 1, &x);
    tsr_tensor_release(x);
  }
}

static void test_piecewise_constant_unary_carries_no_gradient(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){4}, -2, 2, 1);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  tsr_tensor *y = tsr_unary(x, TSR_UNARY_FLOOR, 0);
  assert_non_null(y);
  assert_false(tsr_tensor_requires_grad(y));
  tsr_tensor_release(y);
  tsr_tensor_release(x);
}

// Every differentiable binary function (logical ones take bool: no gradient).
static const struct {
  tsr_binary_fn_t fn;
  double alpha, lo, hi;
  const char *name;
} k_binary_cases[] = {
    {TSR_BINARY_ADD, 1.0, -2, 2, "add"},     {TSR_BINARY_ADD, -0.5, -2, 2, "add alpha"},
    {TSR_BINARY_SUB, 1.0, -2, 2, "sub"},     {TSR_BINARY_SUB, 2.5, -2, 2, "sub alpha"},
    {TSR_BINARY_MUL, 1.0, -2, 2, "mul"},     {TSR_BINARY_DIV, 1.0, 0.5, 2, "div"},
    {TSR_BINARY_MAXIMUM, 1.0, -2, 2, "max"}, {TSR_BINARY_MINIMUM, 1.0, -2, 2, "min"},
    {TSR_BINARY_POW, 1.0, 0.5, 2, "pow"},
};

#define BINARY_CASES (sizeof(k_binary_cases) / sizeof(k_binary_cases[0]))

static void test_every_binary_passes_gradcheck_with_broadcasting(void **state) {
  (void)state;
  for (size_t i = 0; i < BINARY_CASES; ++i) {
    // a [2, 3, 4] against b [3, 1]: both broadcast.
    tsr_tensor *in[2] = {
        rnd(3, (int64_t[]){2, 3, 4}, k_binary_cases[i].lo, k_binary_cases[i].hi, 200 + i),
        rnd(2, (int64_t[]){3, 1}, k_binary_cases[i].lo, k_binary_cases[i].hi, 300 + i)};
    case_args c = {.fn = k_binary_cases[i].fn, .alpha = k_binary_cases[i].alpha};
    expect_gradcheck(k_binary_cases[i].name, binary_case, &c, 2, in);
    tsr_tensor_release(in[0]);
    tsr_tensor_release(in[1]);
  }
}

// The lists above are the gradient checks; this keeps them complete. Every
// function of the catalogue whose result tracks a gradient has a backward
// rule, so it must be in its list; one without a rule must not be (a new
// function with a rule and no check fails here, not silently).
static void test_every_unary_and_binary_with_a_backward_rule_is_gradchecked(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){3}, 0.5, 2, 7);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  for (int fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
    if (fn == TSR_UNARY_LOGICAL_NOT) continue;  // bool only
    tsr_tensor *y = tsr_unary(x, (tsr_unary_fn_t)fn, 0.1);
    if (y == NULL) fail_msg("unary %d: %s", fn, tsr_last_error());
    int checked = 0;
    for (size_t i = 0; i < UNARY_CASES; ++i) checked |= (int)k_unary_cases[i].fn == fn;
    if (tsr_tensor_requires_grad(y) != checked) {
      fail_msg("unary %d: %s a backward rule but %s in the gradient checks", fn,
               tsr_tensor_requires_grad(y) ? "has" : "has no", checked ? "is" : "is not");
    }
    tsr_tensor_release(y);
  }
  for (int fn = 0; fn < TSR_BINARY_FN_COUNT; ++fn) {
    if (fn >= TSR_BINARY_LOGICAL_AND && fn <= TSR_BINARY_LOGICAL_XOR) continue;  // bool only
    tsr_tensor *y = tsr_binary(x, x, (tsr_binary_fn_t)fn, 1.0);
    if (y == NULL) fail_msg("binary %d: %s", fn, tsr_last_error());
    int checked = 0;
    for (size_t i = 0; i < BINARY_CASES; ++i) checked |= (int)k_binary_cases[i].fn == fn;
    if (tsr_tensor_requires_grad(y) != checked) {
      fail_msg("binary %d: %s a backward rule but %s in the gradient checks", fn,
               tsr_tensor_requires_grad(y) ? "has" : "has no", checked ? "is" : "is not");
    }
    tsr_tensor_release(y);
  }
  tsr_tensor_release(x);
}

static void test_maximum_splits_the_gradient_of_a_tie(void **state) {
  (void)state;
  tsr_tensor *a = ts_tensor(g_dev, TSR_FLOAT64, 1, (int64_t[]){2}, (double[]){1, 3});
  tsr_tensor *b = ts_tensor(g_dev, TSR_FLOAT64, 1, (int64_t[]){2}, (double[]){1, 2});
  assert_int_equal(tsr_tensor_requires_grad_set(a, 1), TSR_OK);
  assert_int_equal(tsr_tensor_requires_grad_set(b, 1), TSR_OK);
  tsr_tensor *y = tsr_maximum(a, b);
  tsr_tensor *s = tsr_sum(y, 0, NULL, 0);
  assert_int_equal(tsr_backward(s, NULL, 0), TSR_OK);
  double ga[2], gb[2];
  tsr_tensor *g = tsr_tensor_grad(a);
  assert_int_equal(ts_read(g, ga, 2), 2);
  tsr_tensor_release(g);
  g = tsr_tensor_grad(b);
  assert_int_equal(ts_read(g, gb, 2), 2);
  tsr_tensor_release(g);
  assert_true(ga[0] == 0.5 && gb[0] == 0.5 && ga[1] == 1.0 && gb[1] == 0.0);
  tsr_tensor *all[] = {a, b, y, s};
  for (int i = 0; i < 4; ++i) tsr_tensor_release(all[i]);
}

static tsr_tensor *where_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)user;
  (void)n;
  return tsr_where(in[2], in[0], in[1]);
}

static tsr_tensor *clamp_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const case_args *c = user;
  return tsr_clamp(in[0], c->i0, -0.5, c->i1, 0.5);
}

static void test_where_and_clamp_pass_gradcheck(void **state) {
  (void)state;
  tsr_tensor *in[3] = {
      rnd(2, (int64_t[]){2, 3}, -1, 1, 1), rnd(1, (int64_t[]){3}, -1, 1, 2),
      ts_tensor(g_dev, TSR_BOOL, 2, (int64_t[]){2, 3}, (double[]){1, 0, 1, 0, 0, 1})};
  expect_gradcheck("where", where_case, NULL, 3, in);
  for (int i = 0; i < 3; ++i) tsr_tensor_release(in[i]);
  // Values kept away from the bounds, where the derivative jumps.
  double v[8] = {-0.9, -0.7, -0.3, 0.1, 0.2, 0.45, 0.7, 1.3};
  tsr_tensor *x = ts_tensor(g_dev, TSR_FLOAT64, 1, (int64_t[]){8}, v);
  case_args both = {.i0 = 1, .i1 = 1}, lo = {.i0 = 1}, hi = {.i1 = 1};
  expect_gradcheck("clamp", clamp_case, &both, 1, &x);
  expect_gradcheck("clamp min", clamp_case, &lo, 1, &x);
  expect_gradcheck("clamp max", clamp_case, &hi, 1, &x);
  tsr_tensor_release(x);
}

static tsr_tensor *reduce_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const case_args *c = user;
  int32_t axes[2] = {c->i0, c->i1};
  int32_t count = c->i0 < 0 && c->i1 < 0 ? 0 : (c->i1 >= 0 ? 2 : 1);
  return tsr_reduce(in[0], c->fn, count, axes, (int)c->alpha);
}

static void test_every_reduction_passes_gradcheck(void **state) {
  (void)state;
  for (tsr_reduce_fn_t fn = 0; fn < TSR_REDUCE_FN_COUNT; ++fn) {
    for (int keep = 0; keep < 2; ++keep) {
      case_args one_axis = {.fn = fn, .i0 = 1, .i1 = -1, .alpha = keep};
      case_args two_axes = {.fn = fn, .i0 = 0, .i1 = 2, .alpha = keep};
      case_args all = {.fn = fn, .i0 = -1, .i1 = -1, .alpha = keep};
      tsr_tensor *x = rnd(3, (int64_t[]){2, 3, 4}, 0.5, 1.5, 400 + fn);
      expect_gradcheck("reduce axis 1", reduce_case, &one_axis, 1, &x);
      expect_gradcheck("reduce axes 0,2", reduce_case, &two_axes, 1, &x);
      expect_gradcheck("reduce all", reduce_case, &all, 1, &x);
      tsr_tensor_release(x);
    }
  }
}

static void test_prod_gradient_at_zeros_is_the_product_of_the_others(void **state) {
  (void)state;
  // One zero in the first row, two in the second.
  double v[6] = {2, 0, 3, 0, 5, 0};
  tsr_tensor *x = ts_tensor(g_dev, TSR_FLOAT64, 2, (int64_t[]){2, 3}, v);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  tsr_tensor *p = tsr_reduce(x, TSR_REDUCE_PROD, 1, (int32_t[]){1}, 0);
  tsr_tensor *s = tsr_sum(p, 0, NULL, 0);
  assert_int_equal(tsr_backward(s, NULL, 0), TSR_OK);
  tsr_tensor *g = tsr_tensor_grad(x);
  double got[6];
  assert_int_equal(ts_read(g, got, 6), 6);
  double want[6] = {0, 6, 0, 0, 0, 0};
  ts_expect_values("prod grad", TSR_FLOAT64, got, want, NULL, 6, 0, 0);
  tsr_tensor *all[] = {x, p, s, g};
  for (int i = 0; i < 4; ++i) tsr_tensor_release(all[i]);
}

static tsr_tensor *matmul_case(void *user, int32_t n, tsr_tensor *const *in) {
  const case_args *c = user;
  return tsr_matmul_ex(in[0], in[1], n > 2 ? in[2] : NULL, c->fn);
}

// Linear's layout: y = x @ w^T + bias with w stored [out, in], so the
// product's second operand is column-major and the rule computes its
// gradient transposed (operand_grad's first branch), for every activation;
// and a column-major first operand (a stored transposed).
static tsr_tensor *linear_layout_case(void *user, int32_t n, tsr_tensor *const *in) {
  const case_args *c = user;
  tsr_tensor *wt = tsr_transpose(in[1], 0, 1);
  tsr_tensor *y = wt ? tsr_matmul_ex(in[0], wt, n > 2 ? in[2] : NULL, c->fn) : NULL;
  tsr_tensor_release(wt);
  return y;
}

static tsr_tensor *transposed_a_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)user;
  (void)n;
  tsr_tensor *at = tsr_transpose(in[0], 0, 1);
  tsr_tensor *y = at ? tsr_matmul(at, in[1]) : NULL;
  tsr_tensor_release(at);
  return y;
}

static void test_matmul_on_column_major_operands_passes_gradcheck(void **state) {
  (void)state;
  for (tsr_activation_t act = 0; act < TSR_ACTIVATION_COUNT; ++act) {
    case_args c = {.fn = act};
    // x [3, 4], w [5, 4], bias [1, 5].
    tsr_tensor *in[3] = {rnd(2, (int64_t[]){3, 4}, -1, 1, 800 + act),
                         rnd(2, (int64_t[]){5, 4}, -1, 1, 900 + act),
                         rnd(2, (int64_t[]){1, 5}, -1, 1, 1000 + act)};
    expect_gradcheck("x @ w^T + bias", linear_layout_case, &c, 3, in);
    for (int i = 0; i < 3; ++i) tsr_tensor_release(in[i]);
  }
  // a stored [4, 3], used as a^T [3, 4]; b [4, 5].
  tsr_tensor *in[2] = {rnd(2, (int64_t[]){4, 3}, -1, 1, 1100), rnd(2, (int64_t[]){4, 5}, -1, 1, 1101)};
  expect_gradcheck("a^T @ b", transposed_a_case, NULL, 2, in);
  tsr_tensor_release(in[0]);
  tsr_tensor_release(in[1]);
}

static void test_matmul_passes_gradcheck_with_bias_activations_and_batches(void **state) {
  (void)state;
  for (tsr_activation_t act = 0; act < TSR_ACTIVATION_COUNT; ++act) {
    case_args c = {.fn = act};
    tsr_tensor *in[3] = {rnd(2, (int64_t[]){3, 4}, -1, 1, 500 + act),
                         rnd(2, (int64_t[]){4, 5}, -1, 1, 600 + act),
                         rnd(2, (int64_t[]){1, 5}, -1, 1, 700 + act)};
    expect_gradcheck("matmul 2-D", matmul_case, &c, act == 0 ? 2 : 3, in);
    for (int i = 0; i < 3; ++i) tsr_tensor_release(in[i]);
  }
  case_args none = {.fn = TSR_ACTIVATION_NONE};
  // Batch broadcast: [2, 3, 4] @ [4, 2] and [1, 3, 4] @ [2, 4, 2].
  tsr_tensor *b1[2] = {rnd(3, (int64_t[]){2, 3, 4}, -1, 1, 1), rnd(2, (int64_t[]){4, 2}, -1, 1, 2)};
  expect_gradcheck("matmul batched", matmul_case, &none, 2, b1);
  tsr_tensor *b2[2] = {rnd(3, (int64_t[]){1, 3, 4}, -1, 1, 3),
                       rnd(3, (int64_t[]){2, 4, 2}, -1, 1, 4)};
  expect_gradcheck("matmul batch-1", matmul_case, &none, 2, b2);
  // Rank-1 operands: vector @ matrix and matrix @ vector.
  tsr_tensor *v1[2] = {rnd(1, (int64_t[]){4}, -1, 1, 5), rnd(2, (int64_t[]){4, 3}, -1, 1, 6)};
  expect_gradcheck("matmul vec-mat", matmul_case, &none, 2, v1);
  tsr_tensor *v2[2] = {rnd(2, (int64_t[]){3, 4}, -1, 1, 7), rnd(1, (int64_t[]){4}, -1, 1, 8)};
  expect_gradcheck("matmul mat-vec", matmul_case, &none, 2, v2);
  tsr_tensor *all[] = {b1[0], b1[1], b2[0], b2[1], v1[0], v1[1], v2[0], v2[1]};
  for (int i = 0; i < 8; ++i) tsr_tensor_release(all[i]);
}

// Views, each followed by a product with fixed weights inside gradcheck's
// projection, and an op so that strided gradients flow through real kernels.
static tsr_tensor *view_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)n;
  const case_args *c = user;
  tsr_tensor *x = in[0], *v = NULL;
  switch (c->kind) {
    case 0:
      v = tsr_reshape(x, 2, (int64_t[]){4, -1});
      break;
    case 1:
      v = tsr_transpose(x, 0, 2);
      break;
    case 2:
      v = tsr_permute(x, 3, (int32_t[]){2, 0, 1});
      break;
    case 3:
      v = tsr_slice(x, 2, 1, 4, 2);
      break;
    case 4: {
      tsr_tensor *t = tsr_slice(x, 1, 0, 1, 1);
      v = tsr_expand(t, 4, (int64_t[]){3, 2, 3, 4});
      tsr_tensor_release(t);
      break;
    }
    case 5: {
      tsr_tensor *t = tsr_transpose(x, 1, 2);
      v = tsr_contiguous(t);
      tsr_tensor_release(t);
      break;
    }
    case 6: {
      tsr_tensor *t = tsr_transpose(x, 0, 1);
      v = tsr_reshape(t, 1, (int64_t[]){-1});  // a copy: the strides forbid a view
      tsr_tensor_release(t);
      break;
    }
    default:
      return NULL;
  }
  if (v == NULL)
    return NULL;
  tsr_tensor *y = tsr_square(v);
  tsr_tensor_release(v);
  return y;
}

static void test_views_pass_gradcheck(void **state) {
  (void)state;
  tsr_tensor *x = rnd(3, (int64_t[]){2, 3, 4}, -1, 1, 42);
  static const char *names[] = {"reshape", "transpose",  "permute",     "slice",
                                "expand",  "contiguous", "reshape copy"};
  for (int k = 0; k < 7; ++k) {
    case_args c = {.kind = k};
    expect_gradcheck(names[k], view_case, &c, 1, &x);
  }
  tsr_tensor_release(x);
}

static tsr_tensor *cast_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)user;
  (void)n;
  tsr_tensor *f = tsr_cast(in[0], TSR_FLOAT32);
  tsr_tensor *y = f ? tsr_cast(f, TSR_FLOAT64) : NULL;
  tsr_tensor_release(f);
  return y;
}

static void test_cast_passes_gradients_through(void **state) {
  (void)state;
  // Values exact in float32, so the round trip is the identity.
  tsr_tensor *x = ts_tensor(g_dev, TSR_FLOAT64, 1, (int64_t[]){3}, (double[]){0.5, -1.25, 2});
  tsr_gradcheck_options o;
  tsr_gradcheck_options_init(&o);
  o.eps = 1.0 / 64;  // float32 steps must be representable
  tsr_gradcheck_result r = {.struct_size = sizeof(r)};
  assert_int_equal(tsr_gradcheck(cast_case, NULL, 1, &x, &o, &r), TSR_OK);
  assert_true(r.passed);
  tsr_tensor_release(x);
}

// Moving to another device and back (tsr_tensor_to_device records a cast
// node whose backward moves the gradient back), with an op on the other
// device in between.
static tsr_device *g_other;

static tsr_tensor *to_device_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)user;
  (void)n;
  tsr_tensor *there = tsr_tensor_to_device(in[0], g_other);
  tsr_tensor *squared = there ? tsr_mul(there, there) : NULL;
  tsr_tensor *back = squared ? tsr_tensor_to_device(squared, g_dev) : NULL;
  tsr_tensor_release(squared);
  tsr_tensor_release(there);
  return back;
}

static void test_moving_between_devices_passes_gradients_through(void **state) {
  (void)state;
  g_other = tsr_context_device_find(g_ctx, "ref:0");
  if (g_other == g_dev || g_other == NULL) {
    print_message("skipped: the context has no second device (this build tests ref alone)\n");
    skip();
  }
  tsr_tensor *x = rnd(2, (int64_t[]){2, 3}, -1, 1, 1200);
  expect_gradcheck("to_device", to_device_case, NULL, 1, &x);
  tsr_tensor_release(x);
}

// --- the checker itself can fail ---------------------------------------------------

static tsr_tensor *broken_case(void *user, int32_t n, tsr_tensor *const *in) {
  (void)user;
  (void)n;
  // x * detach(x): the analytic gradient misses half of d(x^2)/dx.
  tsr_tensor *d = tsr_detach(in[0]);
  tsr_tensor *y = tsr_mul(in[0], d);
  tsr_tensor_release(d);
  return y;
}

static void test_gradcheck_reports_a_wrong_gradient(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){5}, 0.5, 1.5, 9);
  tsr_gradcheck_result r = {.struct_size = sizeof(r)};
  assert_int_equal(tsr_gradcheck(broken_case, NULL, 1, &x, NULL, &r), TSR_OK);
  assert_false(r.passed);
  assert_int_equal(r.worst_input, 0);
  assert_true(fabs(r.numeric - 2 * r.analytic) < 1e-6);
  tsr_tensor_release(x);
}

// --- engine behaviour --------------------------------------------------------------

static double grad_at(tsr_tensor *t, int64_t i) {
  tsr_tensor *g = tsr_tensor_grad(t);
  assert_non_null(g);
  double v[64];
  assert_true(ts_read(g, v, 64) > i);
  tsr_tensor_release(g);
  return v[i];
}

static void test_gradients_accumulate_until_cleared(void **state) {
  (void)state;
  tsr_tensor *x = ts_tensor(g_dev, TSR_FLOAT32, 1, (int64_t[]){2}, (double[]){1, 2});
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  assert_null(tsr_tensor_grad(x));
  for (int pass = 1; pass <= 2; ++pass) {
    tsr_tensor *y = tsr_mul(x, x);  // d/dx = 2x
    tsr_tensor *s = tsr_sum(y, 0, NULL, 0);
    assert_non_null(tsr_tensor_grad_fn_name(s));
    assert_int_equal(tsr_backward(s, NULL, 0), TSR_OK);
    assert_true(grad_at(x, 1) == 4.0 * pass);
    tsr_tensor_release(y);
    tsr_tensor_release(s);
  }
  assert_int_equal(tsr_tensor_grad_set(x, NULL), TSR_OK);
  assert_null(tsr_tensor_grad(x));
  tsr_tensor_release(x);
}

static void test_a_tensor_used_twice_gets_the_sum_of_both_paths(void **state) {
  (void)state;
  tsr_tensor *x = ts_tensor(g_dev, TSR_FLOAT64, 1, (int64_t[]){1}, (double[]){3});
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  tsr_tensor *e = tsr_exp(x);
  tsr_tensor *y = tsr_mul(e, x);  // d(x e^x)/dx = e^x (1 + x)
  assert_int_equal(tsr_backward(y, NULL, 0), TSR_OK);
  assert_true(fabs(grad_at(x, 0) - exp(3.0) * 4.0) < 1e-12);
  tsr_tensor *all[] = {x, e, y};
  for (int i = 0; i < 3; ++i) tsr_tensor_release(all[i]);
}

static void test_no_grad_regions_record_nothing(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){3}, -1, 1, 1);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  int prev = tsr_grad_mode_set(0);
  assert_true(prev);
  assert_false(tsr_grad_mode());
  tsr_tensor *y = tsr_exp(x);
  assert_false(tsr_tensor_requires_grad(y));
  assert_true(tsr_tensor_is_leaf(y));
  assert_null(tsr_tensor_grad_fn_name(y));
  assert_int_equal(tsr_backward(y, NULL, 0), TSR_INVALID_ARGUMENT);
  tsr_grad_mode_set(prev);
  tsr_tensor *z = tsr_exp(x);
  assert_true(tsr_tensor_requires_grad(z));
  assert_false(tsr_tensor_is_leaf(z));
  tsr_tensor_release(y);
  tsr_tensor_release(z);
  tsr_tensor_release(x);
}

static void test_a_second_backward_needs_retain_graph(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){3}, -1, 1, 2);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  tsr_tensor *y = tsr_exp(x);
  tsr_tensor *s = tsr_sum(y, 0, NULL, 0);
  assert_int_equal(tsr_backward(s, NULL, TSR_BACKWARD_RETAIN_GRAPH), TSR_OK);
  double once = grad_at(x, 0);
  assert_int_equal(tsr_backward(s, NULL, 0), TSR_OK);
  assert_true(grad_at(x, 0) == 2 * once);
  assert_int_equal(tsr_backward(s, NULL, 0), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "RETAIN_GRAPH"));
  tsr_context_error_clear(g_ctx);
  tsr_tensor *all[] = {x, y, s};
  for (int i = 0; i < 3; ++i) tsr_tensor_release(all[i]);
}

static void test_modifying_a_saved_tensor_in_place_fails_backward(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){3}, 0.5, 1, 3);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  tsr_tensor *y = tsr_exp(x);
  tsr_tensor *z = tsr_unary(y, TSR_UNARY_LOG, 0);  // saves y
  tsr_tensor *s = tsr_sum(z, 0, NULL, 0);
  int prev = tsr_grad_mode_set(0);
  assert_int_equal(tsr_fill_(y, 2.0), TSR_OK);
  tsr_grad_mode_set(prev);
  assert_int_equal(tsr_backward(s, NULL, 0), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "modified in place"));
  tsr_context_error_clear(g_ctx);
  tsr_tensor *all[] = {x, y, z, s};
  for (int i = 0; i < 4; ++i) tsr_tensor_release(all[i]);
}

static void test_in_place_writes_to_tensors_that_require_grad_are_refused(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){3}, 0, 1, 4);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  assert_int_equal(tsr_fill_(x, 1.0), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_binary_out(x, x, x, TSR_BINARY_ADD, 1.0), TSR_INVALID_ARGUMENT);
  int prev = tsr_grad_mode_set(0);
  assert_int_equal(tsr_fill_(x, 1.0), TSR_OK);  // an optimizer's update
  tsr_grad_mode_set(prev);
  tsr_context_error_clear(g_ctx);
  tsr_tensor_release(x);
}

static void test_bad_backward_arguments_are_refused(void **state) {
  (void)state;
  assert_int_equal(tsr_backward(NULL, NULL, 0), TSR_INVALID_ARGUMENT);
  tsr_tensor *x = rnd(1, (int64_t[]){3}, 0, 1, 5);
  tsr_tensor *i = ts_tensor(g_dev, TSR_INT32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  assert_int_equal(tsr_tensor_requires_grad_set(i, 1), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  tsr_tensor *y = tsr_exp(x);
  // Three elements: the gradient must be given, with the root's shape.
  assert_int_equal(tsr_backward(y, NULL, 0), TSR_INVALID_ARGUMENT);
  tsr_tensor *wrong = rnd(1, (int64_t[]){2}, 0, 1, 6);
  assert_int_equal(tsr_backward(y, wrong, 0), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_backward(y, NULL, 0x80), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_tensor_requires_grad_set(y, 0), TSR_INVALID_ARGUMENT);
  tsr_gradcheck_result r = {.struct_size = sizeof(r)};
  assert_int_equal(tsr_gradcheck(NULL, NULL, 1, &x, NULL, &r), TSR_INVALID_ARGUMENT);
  tsr_context_error_clear(g_ctx);
  tsr_tensor *all[] = {x, i, y, wrong};
  for (int k = 0; k < 4; ++k) tsr_tensor_release(all[k]);
}

static void test_gradients_are_bitwise_reproducible(void **state) {
  (void)state;
  double first[12] = {0};
  for (int pass = 0; pass < 2; ++pass) {
    tsr_tensor *w = rnd(2, (int64_t[]){4, 3}, -1, 1, 11);
    tsr_tensor *x = rnd(2, (int64_t[]){5, 4}, -1, 1, 12);
    assert_int_equal(tsr_tensor_requires_grad_set(w, 1), TSR_OK);
    tsr_tensor *h = tsr_matmul_ex(x, w, NULL, TSR_ACTIVATION_TANH);
    tsr_tensor *a = tsr_mul(h, h);
    tsr_tensor *b = tsr_add(a, h);
    tsr_tensor *s = tsr_mean(b, 0, NULL, 0);
    assert_int_equal(tsr_backward(s, NULL, 0), TSR_OK);
    tsr_tensor *g = tsr_tensor_grad(w);
    double v[12];
    assert_int_equal(ts_read(g, v, 12), 12);
    if (pass == 0)
      memcpy(first, v, sizeof(v));
    else
      assert_memory_equal(first, v, sizeof(v));
    tsr_tensor *all[] = {w, x, h, a, b, s, g};
    for (int k = 0; k < 7; ++k) tsr_tensor_release(all[k]);
  }
}

static void test_a_long_chain_is_freed_without_deep_recursion(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){2}, -1, 1, 7);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  tsr_tensor *y = tsr_detach(x);
  tsr_tensor_release(y);
  y = tsr_neg(x);
  for (int i = 0; i < 200000; ++i) {
    tsr_tensor *z = tsr_neg(y);
    tsr_tensor_release(y);
    y = z;
    assert_non_null(y);
  }
  tsr_tensor_release(y);  // 200001 nodes go at once
  tsr_tensor_release(x);
}

static void test_scope_releases_its_temporaries_and_keeps_what_is_kept(void **state) {
  (void)state;
  tsr_allocator_stats before = {.struct_size = sizeof(before)},
                      after = {.struct_size = sizeof(after)};
  tsr_tensor *x = rnd(1, (int64_t[]){1024}, -1, 1, 8);
  assert_int_equal(tsr_tensor_requires_grad_set(x, 1), TSR_OK);
  assert_int_equal(tsr_device_allocator_stats_get(g_dev, &before), TSR_OK);
  size_t base = tsr_scope_size();
  tsr_tensor *kept = NULL;
  for (int step = 0; step < 3; ++step) {
    size_t mark = tsr_scope_begin();
    tsr_tensor *y = tsr_exp(x);
    tsr_tensor *z = tsr_mul(y, x);
    tsr_tensor *t = tsr_transpose(tsr_view(z, 2, (int64_t[]){32, 32}), 0, 1);
    tsr_tensor *s = tsr_sum(t, 0, NULL, 0);
    assert_int_equal(tsr_backward(s, NULL, 0), TSR_OK);
    tsr_tensor *released_early = tsr_neg(x);
    tsr_tensor_release(released_early);  // hands back the scope's claim
    assert_true(tsr_scope_size() >= base + 5);
    if (step == 2)
      kept = tsr_scope_keep(tsr_contiguous(z));
    tsr_scope_end(mark);
    assert_int_equal(tsr_scope_size(), base);
  }
  assert_non_null(kept);
  assert_int_equal(tsr_tensor_numel(kept), 1024);
  tsr_tensor_release(kept);
  assert_int_equal(tsr_tensor_grad_set(x, NULL), TSR_OK);
  assert_int_equal(tsr_device_allocator_stats_get(g_dev, &after), TSR_OK);
  assert_int_equal(after.bytes_in_use, before.bytes_in_use);
  // The leaf itself lives on: it was made outside the scope.
  assert_int_equal(tsr_tensor_numel(x), 1024);
  tsr_tensor_release(x);
}

static void test_nested_scopes_end_independently(void **state) {
  (void)state;
  tsr_tensor *x = rnd(1, (int64_t[]){4}, -1, 1, 9);
  size_t base = tsr_scope_size();
  size_t outer = tsr_scope_begin();
  tsr_tensor *a = tsr_exp(x);
  size_t inner = tsr_scope_begin();
  tsr_tensor *b = tsr_exp(a);
  (void)b;
  assert_int_equal(tsr_scope_size(), base + 2);
  tsr_scope_end(inner);
  assert_int_equal(tsr_scope_size(), base + 1);
  assert_int_equal(tsr_tensor_numel(a), 4);  // still alive
  tsr_scope_end(outer);
  assert_int_equal(tsr_scope_size(), base);
  tsr_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_differentiable_unary_passes_gradcheck),
      cmocka_unit_test(test_piecewise_constant_unary_carries_no_gradient),
      cmocka_unit_test(test_every_binary_passes_gradcheck_with_broadcasting),
      cmocka_unit_test(test_every_unary_and_binary_with_a_backward_rule_is_gradchecked),
      cmocka_unit_test(test_maximum_splits_the_gradient_of_a_tie),
      cmocka_unit_test(test_where_and_clamp_pass_gradcheck),
      cmocka_unit_test(test_every_reduction_passes_gradcheck),
      cmocka_unit_test(test_prod_gradient_at_zeros_is_the_product_of_the_others),
      cmocka_unit_test(test_matmul_passes_gradcheck_with_bias_activations_and_batches),
      cmocka_unit_test(test_matmul_on_column_major_operands_passes_gradcheck),
      cmocka_unit_test(test_views_pass_gradcheck),
      cmocka_unit_test(test_cast_passes_gradients_through),
      cmocka_unit_test(test_moving_between_devices_passes_gradients_through),
      cmocka_unit_test(test_gradcheck_reports_a_wrong_gradient),
      cmocka_unit_test(test_gradients_accumulate_until_cleared),
      cmocka_unit_test(test_a_tensor_used_twice_gets_the_sum_of_both_paths),
      cmocka_unit_test(test_no_grad_regions_record_nothing),
      cmocka_unit_test(test_a_second_backward_needs_retain_graph),
      cmocka_unit_test(test_modifying_a_saved_tensor_in_place_fails_backward),
      cmocka_unit_test(test_in_place_writes_to_tensors_that_require_grad_are_refused),
      cmocka_unit_test(test_bad_backward_arguments_are_refused),
      cmocka_unit_test(test_gradients_are_bitwise_reproducible),
      cmocka_unit_test(test_a_long_chain_is_freed_without_deep_recursion),
      cmocka_unit_test(test_scope_releases_its_temporaries_and_keeps_what_is_kept),
      cmocka_unit_test(test_nested_scopes_end_independently),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
