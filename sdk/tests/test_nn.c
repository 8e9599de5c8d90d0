// Layers, losses and initialisers (tessera/nn.h), end to end on one device.
//
// Built twice: test_nn_ref on the ref plugin and test_nn_onednn on the oneDNN
// plugin (with ref loaded too, so that a network can be compared across the
// two devices). Expected values are computed by hand in the test from the
// same host data, in double.
//
// Compile definitions: TSR_TEST_PLUGIN_PATH (colon-separated plugins),
// TSR_TEST_DEVICE ("ref:0" or "onednn:0"), TSR_TEST_REF_PATH (the ref plugin).
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

#include "tessera/tessera.h"
#include "test_support.h"
#include "device_fixture.h"



#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

// Each test starts from a known seed and a clean error state.
static int seeded_test_setup(void **state) {
  (void)state;
  if (tsr_context_seed_set(g_context, 1234) != TSR_OK) return -1;
  tsr_context_error_clear(g_context);
  tsr_last_error_clear();
  return 0;
}

// --- helpers ----------------------------------------------------------------

static tsr_tensor *f32(int32_t rank, const int64_t *sizes, const double *values) {
  tsr_tensor *t = ts_tensor(g_device, TSR_FLOAT32, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

// Overwrites parameter |name| of |m| with |values| (grad mode off: an in-place
// write to a leaf that requires grad is otherwise refused).
static void param_set(tsr_module *m, const char *name, const double *values) {
  tsr_tensor *p = tsr_module_parameter_by_name_get(m, name);
  if (p == NULL)
    fail_msg("no parameter %s: %s", name, tsr_last_error());
  tsr_tensor *src = ts_tensor(tsr_tensor_device(p), tsr_tensor_dtype(p), tsr_tensor_rank(p),
                              tsr_tensor_sizes(p), values);
  TS_ASSERT_TENSOR(src);
  int prev = tsr_grad_mode_set(0);
  TS_ASSERT_OK(tsr_copy_(p, src));
  tsr_grad_mode_set(prev);
  tsr_tensor_release(src);
}

// Checks |t|'s sizes and values.
static void expect_tensor(const char *what, const tsr_tensor *t, int32_t rank, const int64_t *sizes,
                          const double *want, double rtol, double atol) {
  if (t == NULL)
    fail_msg("%s is NULL: %s", what, tsr_last_error());
  assert_int_equal(tsr_tensor_rank(t), rank);
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (tsr_tensor_size(t, d) != sizes[d]) {
      fail_msg("%s: size %lld at dim %d, expected %lld", what, (long long)tsr_tensor_size(t, d), d,
               (long long)sizes[d]);
    }
    n *= sizes[d];
  }
  double *got = calloc((size_t)(n ? n : 1), sizeof(double));
  assert_non_null(got);
  assert_int_equal(ts_read(t, got, n), n);
  ts_expect_values(what, tsr_tensor_dtype(t), got, want, NULL, n, rtol, atol);
  free(got);
}

// The gradient of |t| read into |out| (numel values); fails when it has none.
static void grad_read(const tsr_tensor *t, double *out, int64_t n) {
  tsr_tensor *g = tsr_tensor_grad(t);
  if (g == NULL)
    fail_msg("no gradient: %s", tsr_last_error());
  assert_int_equal(ts_read(g, out, n), n);
  tsr_tensor_release(g);
}

static int64_t numel_of(const tsr_tensor *t) {
  return tsr_tensor_numel(t);
}

static void expect_error_contains(const char *needle) {
  const char *message = tsr_last_error();
  if (strstr(message, needle) == NULL) {
    fail_msg("last error \"%s\" does not contain \"%s\"", message, needle);
  }
}

static double scalar(const tsr_tensor *t) {
  double v = NAN;
  if (t == NULL)
    fail_msg("scalar of NULL: %s", tsr_last_error());
  assert_int_equal(ts_read(t, &v, 1), 1);
  return v;
}

// --- Linear ------------------------------------------------------------------

static void test_linear_matches_hand_computation_and_gradients(void **state) {
  (void)state;
  tsr_module *m = tsr_nn_linear(g_device, 3, 2, 1);
  TS_ASSERT_TENSOR(m);
  assert_string_equal(tsr_module_kind(m), "Linear");
  param_set(m, "weight", (double[]){1, 2, 3, 4, 5, 6});
  param_set(m, "bias", (double[]){0.5, -1});
  tsr_tensor *x = f32(2, (int64_t[]){2, 3}, (double[]){1, 0, -1, 2, 1, 0});
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(x, 1));
  tsr_tensor *y = tsr_module_forward(m, x);
  expect_tensor("linear y", y, 2, (int64_t[]){2, 2}, (double[]){-1.5, -3, 4.5, 12}, 1e-6, 1e-6);
  assert_true(tsr_tensor_requires_grad(y));
  tsr_tensor *loss = tsr_sum(y, 0, NULL, 0);
  TS_ASSERT_TENSOR(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  double g[6];
  // d sum(y) / dW[o, i] = sum_n x[n, i]; / db = N; / dx[n, i] = sum_o W[o, i].
  grad_read(tsr_module_parameter_by_name_get(m, "weight"), g, 6);
  ts_expect_values("dweight", TSR_FLOAT32, g, (double[]){3, 1, -1, 3, 1, -1}, NULL, 6, 1e-6, 1e-6);
  grad_read(tsr_module_parameter_by_name_get(m, "bias"), g, 2);
  ts_expect_values("dbias", TSR_FLOAT32, g, (double[]){2, 2}, NULL, 2, 1e-6, 1e-6);
  grad_read(x, g, 6);
  ts_expect_values("dx", TSR_FLOAT32, g, (double[]){5, 7, 9, 5, 7, 9}, NULL, 6, 1e-6, 1e-6);

  // zero_grad clears every parameter's gradient.
  tsr_module_zero_grad(m);
  tsr_tensor *none = tsr_tensor_grad(tsr_module_parameter_by_name_get(m, "weight"));
  assert_null(none);

  // Rank 1 and rank 3 inputs: [in] -> [out], [2, 1, in] -> [2, 1, out].
  tsr_tensor *x1 = f32(1, (int64_t[]){3}, (double[]){1, 0, -1});
  tsr_tensor *y1 = tsr_module_forward(m, x1);
  expect_tensor("linear rank 1", y1, 1, (int64_t[]){2}, (double[]){-1.5, -3}, 1e-6, 1e-6);
  tsr_tensor *x3 = f32(3, (int64_t[]){2, 1, 3}, (double[]){1, 0, -1, 2, 1, 0});
  tsr_tensor *y3 = tsr_module_forward(m, x3);
  expect_tensor("linear rank 3", y3, 3, (int64_t[]){2, 1, 2}, (double[]){-1.5, -3, 4.5, 12}, 1e-6,
                1e-6);
  tsr_tensor_release(y3);
  tsr_tensor_release(x3);
  tsr_tensor_release(y1);
  tsr_tensor_release(x1);
  tsr_tensor_release(loss);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
  tsr_module_destroy(m);
}

static void test_linear_default_init_is_pytorch_bound_and_seeded(void **state) {
  (void)state;
  tsr_module *m = tsr_nn_linear(g_device, 64, 32, 1);
  TS_ASSERT_TENSOR(m);
  assert_int_equal(tsr_module_parameter_count(m), 2);
  const char *name = NULL;
  tsr_tensor *w = NULL, *b = NULL;
  TS_ASSERT_OK(tsr_module_parameter_get(m, 0, &name, &w));
  assert_string_equal(name, "weight");
  TS_ASSERT_OK(tsr_module_parameter_get(m, 1, &name, &b));
  assert_string_equal(name, "bias");
  assert_true(tsr_tensor_requires_grad(w));
  assert_true(tsr_tensor_is_leaf(w));
  assert_int_equal(tsr_tensor_size(w, 0), 32);
  assert_int_equal(tsr_tensor_size(w, 1), 64);
  double bound = 1.0 / sqrt(64.0);
  static double wv[64 * 32], wv2[64 * 32];
  assert_int_equal(ts_read(w, wv, 64 * 32), 64 * 32);
  double lo = 1, hi = -1;
  for (int i = 0; i < 64 * 32; ++i) {
    assert_true(fabs(wv[i]) <= bound);
    lo = fmin(lo, wv[i]);
    hi = fmax(hi, wv[i]);
  }
  // 2048 draws from U(-b, b) reach within 1% of both ends.
  assert_true(hi > 0.99 * bound && lo < -0.99 * bound);
  double bv[32];
  assert_int_equal(ts_read(b, bv, 32), 32);
  for (int i = 0; i < 32; ++i) assert_true(fabs(bv[i]) <= bound);

  // The same seed gives the same parameters; the training flag starts on.
  assert_int_equal(tsr_module_training(m), 1);
  assert_int_equal(tsr_context_seed_set(g_context, 1234), TSR_OK);
  tsr_module *m2 = tsr_nn_linear(g_device, 64, 32, 1);
  TS_ASSERT_TENSOR(m2);
  assert_int_equal(ts_read(tsr_module_parameter_by_name_get(m2, "weight"), wv2, 64 * 32), 64 * 32);
  assert_memory_equal(wv, wv2, sizeof(wv));
  tsr_module_destroy(m2);
  tsr_module_destroy(m);

  tsr_module *nb = tsr_nn_linear(g_device, 4, 3, 0);
  TS_ASSERT_TENSOR(nb);
  assert_int_equal(tsr_module_parameter_count(nb), 1);
  assert_null(tsr_module_parameter_by_name_get(nb, "bias"));
  tsr_tensor *x = f32(2, (int64_t[]){1, 4}, (double[]){0, 0, 0, 0});
  tsr_tensor *y = tsr_module_forward(nb, x);
  expect_tensor("linear without bias", y, 2, (int64_t[]){1, 3}, (double[]){0, 0, 0}, 0, 0);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
  tsr_module_destroy(nb);
}

// --- Conv2d ------------------------------------------------------------------

static void test_conv2d_one_channel_3x3_by_hand(void **state) {
  (void)state;
  tsr_conv2d_options o;
  tsr_conv2d_options_init(&o);
  o.padding[0] = o.padding[1] = 1;
  tsr_module *m = tsr_nn_conv2d(g_device, 1, 1, 3, 3, &o);
  TS_ASSERT_TENSOR(m);
  assert_string_equal(tsr_module_kind(m), "Conv2d");
  const double w[9] = {1, 0, -1, 2, 0, -2, 1, 0, -1};  // Sobel x
  param_set(m, "weight", w);
  param_set(m, "bias", (double[]){0.25});
  double xv[16];
  for (int i = 0; i < 16; ++i) xv[i] = (i * 7) % 5 - 1.5;
  tsr_tensor *x = f32(4, (int64_t[]){1, 1, 4, 4}, xv);
  tsr_tensor *y = tsr_module_forward(m, x);
  // The oracle's forward.
  const int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {1, 1, 3, 3};
  tsr_conv2d_attrs ca = {sizeof(ca), {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, TSR_ACTIVATION_NONE, 1};
  double want[16], ones[16], bias = 0.25, dw[9];
  orc_conv2d(TSR_OP_CONV2D, &ca, xs, xv, ws, (double *)w, xs, want, &bias, NULL, NULL, NULL);
  expect_tensor("conv2d y", y, 4, (int64_t[]){1, 1, 4, 4}, want, 1e-5, 1e-5);
  // d sum(y) / dw[kh, kw] sums the inputs that tap meets (the oracle's filter
  // gradient of dy = 1); / dbias counts outputs.
  tsr_tensor *loss = tsr_sum(y, 0, NULL, 0);
  TS_ASSERT_TENSOR(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  double g[9];
  for (int i = 0; i < 16; ++i) ones[i] = 1.0;
  ca.has_bias = 0;
  orc_conv2d(TSR_OP_CONV2D_BACKWARD_FILTER, &ca, xs, xv, ws, dw, xs, ones, NULL, NULL, NULL, NULL);
  grad_read(tsr_module_parameter_by_name_get(m, "weight"), g, 9);
  ts_expect_values("conv2d dweight", TSR_FLOAT32, g, dw, NULL, 9, 1e-5, 1e-5);
  grad_read(tsr_module_parameter_by_name_get(m, "bias"), g, 1);
  ts_expect_values("conv2d dbias", TSR_FLOAT32, g, (double[]){16}, NULL, 1, 1e-6, 1e-6);
  tsr_tensor_release(loss);
  tsr_tensor_release(y);

  // Stride 2 without padding, two output channels: shapes and default init.
  tsr_conv2d_options_init(&o);
  o.stride[0] = o.stride[1] = 2;
  tsr_module *m2 = tsr_nn_conv2d(g_device, 1, 2, 3, 3, &o);
  TS_ASSERT_TENSOR(m2);
  tsr_tensor *w2 = tsr_module_parameter_by_name_get(m2, "weight");
  assert_int_equal(tsr_tensor_rank(w2), 4);
  assert_int_equal(tsr_tensor_size(w2, 0), 2);
  double wv[18];
  assert_int_equal(ts_read(w2, wv, 18), 18);
  for (int i = 0; i < 18; ++i) assert_true(fabs(wv[i]) <= 1.0 / 3.0);  // 1/sqrt(fan_in 9)
  tsr_tensor *y2 = tsr_module_forward(m2, x);
  TS_ASSERT_TENSOR(y2);
  assert_int_equal(tsr_tensor_size(y2, 1), 2);
  assert_int_equal(tsr_tensor_size(y2, 2), 1);
  assert_int_equal(tsr_tensor_size(y2, 3), 1);
  tsr_tensor_release(y2);
  tsr_module_destroy(m2);
  tsr_tensor_release(x);
  tsr_module_destroy(m);
}

// --- BatchNorm2d -------------------------------------------------------------

static void test_batch_norm2d_train_updates_running_stats_and_eval_uses_them(void **state) {
  (void)state;
  const double eps = 1e-5, momentum = 0.1;
  tsr_module *m = tsr_nn_batch_norm2d(g_device, 2, eps, momentum);
  TS_ASSERT_TENSOR(m);
  assert_int_equal(tsr_module_parameter_count(m), 2);
  assert_int_equal(tsr_module_buffer_count(m), 3);
  const char *names[3] = {"running_mean", "running_var", "num_batches_tracked"};
  tsr_tensor *buf[3];
  for (int i = 0; i < 3; ++i) {
    const char *name = NULL;
    TS_ASSERT_OK(tsr_module_buffer_get(m, i, &name, &buf[i]));
    assert_string_equal(name, names[i]);
    assert_false(tsr_tensor_requires_grad(buf[i]));
  }
  assert_int_equal(tsr_tensor_dtype(buf[2]), TSR_INT64);
  assert_int_equal(tsr_tensor_rank(buf[2]), 0);
  expect_tensor("initial running_var", buf[1], 1, (int64_t[]){2}, (double[]){1, 1}, 0, 0);
  expect_tensor("weight", tsr_module_parameter_by_name_get(m, "weight"), 1, (int64_t[]){2},
                (double[]){1, 1}, 0, 0);

  // x [N=2, C=2, 1, 2]: channel 0 holds {1, 2, 3, 4}, channel 1 {0, 0, 2, -2}.
  const double xv[8] = {1, 2, 0, 0, 3, 4, 2, -2};
  tsr_tensor *x = f32(4, (int64_t[]){2, 2, 1, 2}, xv);
  double mean[2] = {0, 0}, var[2] = {0, 0};
  for (int c = 0; c < 2; ++c) {
    for (int n = 0; n < 2; ++n) {
      for (int w = 0; w < 2; ++w) mean[c] += xv[n * 4 + c * 2 + w] / 4.0;
    }
    for (int n = 0; n < 2; ++n) {
      for (int w = 0; w < 2; ++w) var[c] += pow(xv[n * 4 + c * 2 + w] - mean[c], 2) / 4.0;
    }
  }
  double want[8];
  for (int i = 0; i < 8; ++i) {
    int c = (i / 2) % 2;
    want[i] = (xv[i] - mean[c]) / sqrt(var[c] + eps);
  }
  tsr_tensor *y = tsr_module_forward(m, x);
  expect_tensor("batch_norm train", y, 4, (int64_t[]){2, 2, 1, 2}, want, 1e-5, 1e-5);
  // The affine parameters are on the tape: d sum(y * x) / dbias = sum x per
  // channel, / dweight = sum xhat * x.
  tsr_tensor *yx = tsr_mul(y, x);
  tsr_tensor *loss = yx ? tsr_sum(yx, 0, NULL, 0) : NULL;
  TS_ASSERT_TENSOR(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  double g[2], dbias[2] = {0, 0}, dweight[2] = {0, 0};
  for (int i = 0; i < 8; ++i) {
    dbias[(i / 2) % 2] += xv[i];
    dweight[(i / 2) % 2] += want[i] * xv[i];
  }
  grad_read(tsr_module_parameter_by_name_get(m, "bias"), g, 2);
  ts_expect_values("batch_norm dbias", TSR_FLOAT32, g, dbias, NULL, 2, 1e-5, 1e-5);
  grad_read(tsr_module_parameter_by_name_get(m, "weight"), g, 2);
  ts_expect_values("batch_norm dweight", TSR_FLOAT32, g, dweight, NULL, 2, 1e-5, 1e-5);
  tsr_tensor_release(loss);
  tsr_tensor_release(yx);
  tsr_tensor_release(y);
  // Running statistics: (1 - momentum) * old + momentum * batch, unbiased var.
  double rm[2], rv[2];
  for (int c = 0; c < 2; ++c) {
    rm[c] = momentum * mean[c];
    rv[c] = (1 - momentum) * 1.0 + momentum * var[c] * 4.0 / 3.0;
  }
  expect_tensor("running_mean", buf[0], 1, (int64_t[]){2}, rm, 1e-5, 1e-6);
  expect_tensor("running_var", buf[1], 1, (int64_t[]){2}, rv, 1e-5, 1e-6);
  int64_t tracked = -1;
  assert_int_equal(ts_read_i64(buf[2], &tracked, 1), 1);
  assert_int_equal(tracked, 1);

  // Eval: normalises with the running statistics and leaves them alone.
  tsr_module_train_set(m, 0);
  assert_int_equal(tsr_module_training(m), 0);
  y = tsr_module_forward(m, x);
  for (int i = 0; i < 8; ++i) {
    int c = (i / 2) % 2;
    want[i] = (xv[i] - rm[c]) / sqrt(rv[c] + eps);
  }
  expect_tensor("batch_norm eval", y, 4, (int64_t[]){2, 2, 1, 2}, want, 1e-5, 1e-5);
  tsr_tensor_release(y);
  expect_tensor("running_mean after eval", buf[0], 1, (int64_t[]){2}, rm, 1e-5, 1e-6);
  assert_int_equal(ts_read_i64(buf[2], &tracked, 1), 1);
  assert_int_equal(tracked, 1);

  // Back to training: a second step counts a second batch.
  tsr_module_train_set(m, 1);
  y = tsr_module_forward(m, x);
  TS_ASSERT_TENSOR(y);
  tsr_tensor_release(y);
  assert_int_equal(ts_read_i64(buf[2], &tracked, 1), 1);
  assert_int_equal(tracked, 2);
  tsr_tensor_release(x);
  tsr_module_destroy(m);
}

// --- LayerNorm ---------------------------------------------------------------

static void test_layer_norm_normalises_last_axes(void **state) {
  (void)state;
  const double eps = 1e-5;
  tsr_module *m = tsr_nn_layer_norm(g_device, 1, (int64_t[]){4}, eps, 1);
  TS_ASSERT_TENSOR(m);
  assert_int_equal(tsr_module_parameter_count(m), 2);
  param_set(m, "weight", (double[]){1, 2, 1, 0.5});
  param_set(m, "bias", (double[]){0, 0, 1, 0});
  const double xv[8] = {1, 2, 3, 4, -1, 0, 0, 5};
  tsr_tensor *x = f32(2, (int64_t[]){2, 4}, xv);
  tsr_tensor *y = tsr_module_forward(m, x);
  const double gamma[4] = {1, 2, 1, 0.5}, beta[4] = {0, 0, 1, 0};
  double want[8];
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += xv[r * 4 + i] / 4;
    for (int i = 0; i < 4; ++i) var += pow(xv[r * 4 + i] - mean, 2) / 4;
    for (int i = 0; i < 4; ++i) {
      want[r * 4 + i] = (xv[r * 4 + i] - mean) / sqrt(var + eps) * gamma[i] + beta[i];
    }
  }
  expect_tensor("layer_norm", y, 2, (int64_t[]){2, 4}, want, 1e-5, 1e-5);
  tsr_tensor_release(y);
  tsr_module_destroy(m);

  // Two normalised axes without affine parameters.
  tsr_module *m2 = tsr_nn_layer_norm(g_device, 2, (int64_t[]){2, 4}, eps, 0);
  TS_ASSERT_TENSOR(m2);
  assert_int_equal(tsr_module_parameter_count(m2), 0);
  y = tsr_module_forward(m2, x);
  double mean = 0, var = 0;
  for (int i = 0; i < 8; ++i) mean += xv[i] / 8;
  for (int i = 0; i < 8; ++i) var += pow(xv[i] - mean, 2) / 8;
  for (int i = 0; i < 8; ++i) want[i] = (xv[i] - mean) / sqrt(var + eps);
  expect_tensor("layer_norm 2 axes", y, 2, (int64_t[]){2, 4}, want, 1e-5, 1e-5);
  tsr_tensor_release(y);
  tsr_module_destroy(m2);
  tsr_tensor_release(x);
}

// --- Dropout -----------------------------------------------------------------

static void test_dropout_train_zeroes_about_p_and_scales_survivors(void **state) {
  (void)state;
  const double p = 0.3;
  const int64_t n = 10000;
  tsr_module *m = tsr_nn_dropout(p);
  TS_ASSERT_TENSOR(m);
  assert_int_equal(tsr_module_parameter_count(m), 0);
  tsr_tensor *x = tsr_tensor_full(g_device, TSR_FLOAT32, 1, &n, 1.0);
  TS_ASSERT_TENSOR(x);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(x, 1));
  tsr_tensor *y = tsr_module_forward(m, x);
  TS_ASSERT_TENSOR(y);
  double *v = calloc((size_t)n, sizeof(double));
  assert_non_null(v);
  assert_int_equal(ts_read(y, v, n), n);
  int64_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] == 0.0) {
      ++zeros;
    } else if (fabs(v[i] - 1.0 / (1.0 - p)) > 1e-6) {
      fail_msg("survivor %lld is %g, expected %g", (long long)i, v[i], 1.0 / (1.0 - p));
    }
  }
  // Binomial(10000, 0.3): std 46, so +-300 is more than 6 sigma.
  if (llabs(zeros - 3000) > 300)
    fail_msg("%lld of %lld zeroed for p %g", (long long)zeros, (long long)n, p);

  // The backward multiplies by the same mask: dx equals y for x of ones.
  tsr_tensor *loss = tsr_sum(y, 0, NULL, 0);
  TS_ASSERT_TENSOR(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  double *g = calloc((size_t)n, sizeof(double));
  assert_non_null(g);
  grad_read(x, g, n);
  assert_memory_equal(g, v, sizeof(double) * (size_t)n);
  tsr_tensor_release(loss);
  tsr_tensor_release(y);

  // Two training calls draw different masks.
  tsr_tensor *y2 = tsr_module_forward(m, x);
  assert_int_equal(ts_read(y2, g, n), n);
  assert_true(memcmp(g, v, sizeof(double) * (size_t)n) != 0);
  tsr_tensor_release(y2);

  // Eval: identity (a new handle, same values).
  tsr_module_train_set(m, 0);
  tsr_tensor *ye = tsr_module_forward(m, x);
  TS_ASSERT_TENSOR(ye);
  assert_ptr_not_equal(ye, x);
  assert_int_equal(ts_read(ye, v, n), n);
  for (int64_t i = 0; i < n; ++i) assert_true(v[i] == 1.0);
  tsr_tensor_release(ye);

  // p = 0 in training is the identity too.
  tsr_module *m0 = tsr_nn_dropout(0.0);
  TS_ASSERT_TENSOR(m0);
  tsr_tensor *y0 = tsr_module_forward(m0, x);
  assert_int_equal(ts_read(y0, v, n), n);
  for (int64_t i = 0; i < n; ++i) assert_true(v[i] == 1.0);
  tsr_tensor_release(y0);
  tsr_module_destroy(m0);

  free(g);
  free(v);
  tsr_tensor_release(x);
  tsr_module_destroy(m);
}

// --- Embedding ---------------------------------------------------------------

static void test_embedding_looks_up_rows_of_any_index_shape(void **state) {
  (void)state;
  tsr_module *m = tsr_nn_embedding(g_device, 5, 3);
  TS_ASSERT_TENSOR(m);
  double wv[15];
  for (int i = 0; i < 15; ++i) wv[i] = i * 0.5 - 2;
  param_set(m, "weight", wv);
  tsr_tensor *idx = ts_tensor(g_device, TSR_INT64, 2, (int64_t[]){2, 2}, (double[]){4, 0, 1, 4});
  TS_ASSERT_TENSOR(idx);
  tsr_tensor *y = tsr_module_forward(m, idx);
  double want[12];
  const int rows[4] = {4, 0, 1, 4};
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 3; ++j) want[k * 3 + j] = wv[rows[k] * 3 + j];
  }
  expect_tensor("embedding", y, 3, (int64_t[]){2, 2, 3}, want, 0, 0);
  // The weight's gradient counts each row's uses.
  tsr_tensor *loss = tsr_sum(y, 0, NULL, 0);
  TS_ASSERT_TENSOR(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  double g[15];
  grad_read(tsr_module_parameter_by_name_get(m, "weight"), g, 15);
  const double uses[5] = {1, 1, 0, 0, 2};
  double gw[15];
  for (int i = 0; i < 15; ++i) gw[i] = uses[i / 3];
  ts_expect_values("embedding dweight", TSR_FLOAT32, g, gw, NULL, 15, 0, 0);
  tsr_tensor_release(loss);
  tsr_tensor_release(y);

  // int32 indices of rank 1.
  tsr_tensor *idx32 = ts_tensor(g_device, TSR_INT32, 1, (int64_t[]){2}, (double[]){2, 3});
  y = tsr_module_forward(m, idx32);
  expect_tensor("embedding int32", y, 2, (int64_t[]){2, 3}, &wv[6], 0, 0);
  tsr_tensor_release(y);
  tsr_tensor_release(idx32);
  tsr_tensor_release(idx);

  // N(0, 1) by default.
  tsr_module *big = tsr_nn_embedding(g_device, 100, 100);
  TS_ASSERT_TENSOR(big);
  static double v[10000];
  assert_int_equal(ts_read(tsr_module_parameter_by_name_get(big, "weight"), v, 10000), 10000);
  double mean = 0, sq = 0;
  for (int i = 0; i < 10000; ++i) mean += v[i] / 10000;
  for (int i = 0; i < 10000; ++i) sq += (v[i] - mean) * (v[i] - mean) / 10000;
  assert_true(fabs(mean) < 0.05);
  assert_true(fabs(sqrt(sq) - 1.0) < 0.05);
  tsr_module_destroy(big);
  tsr_module_destroy(m);
}

// --- pools, activations, flatten ---------------------------------------------

static void test_pools_match_pytorch_defaults(void **state) {
  (void)state;
  double xv[16];
  for (int i = 0; i < 16; ++i) xv[i] = (i * 5) % 7;
  tsr_tensor *x = f32(4, (int64_t[]){1, 1, 4, 4}, xv);
  tsr_module *mp = tsr_nn_max_pool2d(2, 0, 0);  // stride 0 means the kernel
  TS_ASSERT_TENSOR(mp);
  assert_string_equal(tsr_module_kind(mp), "MaxPool2d");
  tsr_module *ap = tsr_nn_avg_pool2d(2, 2, 0);
  TS_ASSERT_TENSOR(ap);
  double wmax[4], wavg[4];
  for (int oh = 0; oh < 2; ++oh) {
    for (int ow = 0; ow < 2; ++ow) {
      double mx = -INFINITY, sum = 0;
      for (int kh = 0; kh < 2; ++kh) {
        for (int kw = 0; kw < 2; ++kw) {
          double v = xv[(oh * 2 + kh) * 4 + ow * 2 + kw];
          mx = fmax(mx, v);
          sum += v;
        }
      }
      wmax[oh * 2 + ow] = mx;
      wavg[oh * 2 + ow] = sum / 4;
    }
  }
  tsr_tensor *y = tsr_module_forward(mp, x);
  expect_tensor("max_pool2d", y, 4, (int64_t[]){1, 1, 2, 2}, wmax, 0, 0);
  tsr_tensor_release(y);
  y = tsr_module_forward(ap, x);
  expect_tensor("avg_pool2d", y, 4, (int64_t[]){1, 1, 2, 2}, wavg, 1e-6, 1e-6);
  tsr_tensor_release(y);
  tsr_module_destroy(mp);
  tsr_module_destroy(ap);
  tsr_tensor_release(x);

  // AvgPool2d counts the padding (count_include_pad, PyTorch's default).
  tsr_module *app = tsr_nn_avg_pool2d(3, 1, 1);
  TS_ASSERT_TENSOR(app);
  tsr_tensor *ones = tsr_tensor_full(g_device, TSR_FLOAT32, 4, (int64_t[]){1, 1, 3, 3}, 1.0);
  y = tsr_module_forward(app, ones);
  expect_tensor("avg_pool2d padded", y, 4, (int64_t[]){1, 1, 3, 3},
                (double[]){4. / 9, 6. / 9, 4. / 9, 6. / 9, 1, 6. / 9, 4. / 9, 6. / 9, 4. / 9}, 1e-6,
                1e-6);
  tsr_tensor_release(y);
  tsr_tensor_release(ones);
  tsr_module_destroy(app);
}

static void test_activations_softmax_and_flatten(void **state) {
  (void)state;
  const double xv[6] = {-2, -0.5, 0, 0.5, 1, 3};
  tsr_tensor *x = f32(2, (int64_t[]){2, 3}, xv);
  double want[6];
  struct {
    tsr_module *m;
    const char *kind;
  } acts[] = {{tsr_nn_relu(), "ReLU"},
              {tsr_nn_gelu(0), "GELU"},
              {tsr_nn_gelu(1), "GELU"},
              {tsr_nn_sigmoid(), "Sigmoid"},
              {tsr_nn_tanh(), "Tanh"},
              {tsr_nn_softmax(1), "Softmax"},
              {tsr_nn_log_softmax(-1), "LogSoftmax"}};
  // The oracle's activations of the first five (softmax for the last two).
  const tsr_activation_t act_of[5] = {TSR_ACTIVATION_RELU, TSR_ACTIVATION_GELU,
                                      TSR_ACTIVATION_GELU_TANH, TSR_ACTIVATION_SIGMOID,
                                      TSR_ACTIVATION_TANH};
  for (int a = 0; a < COUNT(acts); ++a) {
    TS_ASSERT_TENSOR(acts[a].m);
    assert_string_equal(tsr_module_kind(acts[a].m), acts[a].kind);
    if (a < 5) {
      for (int i = 0; i < 6; ++i) want[i] = tsr_oracle_activation_value(act_of[a], xv[i]);
    } else {
      const tsr_softmax_attrs sa = {sizeof(sa), 1, a == 6};
      const int64_t sizes[2] = {2, 3};
      tsr_oracle_tensor in = tsr_oracle_tensor_over(TSR_FLOAT32, 2, sizes, (double *)xv);
      tsr_oracle_tensor out = tsr_oracle_tensor_over(TSR_FLOAT32, 2, sizes, want);
      assert_int_equal(tsr_oracle_compute_values(TSR_OP_SOFTMAX, &sa, 1, &in, 1, &out), TSR_OK);
    }
    tsr_tensor *y = tsr_module_forward(acts[a].m, x);
    expect_tensor(acts[a].kind, y, 2, (int64_t[]){2, 3}, want, 1e-5, 1e-6);
    tsr_tensor_release(y);
    tsr_module_destroy(acts[a].m);
  }

  tsr_module *sm = tsr_nn_softmax(2);
  tsr_tensor *bad = tsr_module_forward(sm, x);
  assert_null(bad);
  expect_error_contains("Softmax");
  tsr_module_destroy(sm);

  tsr_module *fl = tsr_nn_flatten();
  double v24[24];
  for (int i = 0; i < 24; ++i) v24[i] = i;
  tsr_tensor *x4 = f32(4, (int64_t[]){2, 3, 2, 2}, v24);
  tsr_tensor *y = tsr_module_forward(fl, x4);
  expect_tensor("flatten", y, 2, (int64_t[]){2, 12}, v24, 0, 0);
  tsr_tensor_release(y);
  tsr_tensor *x1 = f32(1, (int64_t[]){3}, xv);
  assert_null(tsr_module_forward(fl, x1));
  expect_error_contains("Flatten");
  tsr_tensor_release(x1);
  tsr_tensor_release(x4);
  tsr_module_destroy(fl);
  tsr_tensor_release(x);
}

// --- Sequential --------------------------------------------------------------

static void test_sequential_names_parameters_as_pytorch_state_dict(void **state) {
  (void)state;
  tsr_module *inner[2] = {tsr_nn_linear(g_device, 3, 3, 1), tsr_nn_tanh()};
  tsr_module *children[6] = {tsr_nn_conv2d(g_device, 1, 2, 3, 3, NULL),
                             tsr_nn_batch_norm2d(g_device, 2, 1e-5, 0.1),
                             tsr_nn_relu(),
                             tsr_nn_flatten(),
                             tsr_nn_linear(g_device, 2 * 2 * 2, 3, 1),
                             tsr_nn_sequential(2, inner)};
  tsr_module *net = tsr_nn_sequential(6, children);
  TS_ASSERT_TENSOR(net);
  assert_string_equal(tsr_module_kind(net), "Sequential");
  const char *want_params[] = {"0.weight", "0.bias", "1.weight",   "1.bias",
                               "4.weight", "4.bias", "5.0.weight", "5.0.bias"};
  assert_int_equal(tsr_module_parameter_count(net), COUNT(want_params));
  for (int i = 0; i < COUNT(want_params); ++i) {
    const char *name = NULL;
    tsr_tensor *t = NULL;
    TS_ASSERT_OK(tsr_module_parameter_get(net, i, &name, &t));
    assert_string_equal(name, want_params[i]);
    assert_ptr_equal(tsr_module_parameter_by_name_get(net, name), t);
    assert_true(tsr_tensor_requires_grad(t));
  }
  const char *want_buffers[] = {"1.running_mean", "1.running_var", "1.num_batches_tracked"};
  assert_int_equal(tsr_module_buffer_count(net), COUNT(want_buffers));
  for (int i = 0; i < COUNT(want_buffers); ++i) {
    const char *name = NULL;
    TS_ASSERT_OK(tsr_module_buffer_get(net, i, &name, NULL));
    assert_string_equal(name, want_buffers[i]);
  }
  tsr_tensor *t = NULL;
  assert_int_equal(tsr_module_parameter_get(net, 8, NULL, &t), TSR_INVALID_ARGUMENT);
  assert_null(t);
  assert_int_equal(tsr_module_buffer_get(net, -1, NULL, NULL), TSR_INVALID_ARGUMENT);
  assert_null(tsr_module_parameter_by_name_get(net, "2.weight"));

  // A forward through all of it: [2, 1, 4, 4] -> conv [2, 2, 2, 2] -> [2, 8] -> [2, 3].
  double xv[32];
  for (int i = 0; i < 32; ++i) xv[i] = sin(i);
  tsr_tensor *x = f32(4, (int64_t[]){2, 1, 4, 4}, xv);
  tsr_tensor *y = tsr_module_forward(net, x);
  TS_ASSERT_TENSOR(y);
  assert_int_equal(tsr_tensor_rank(y), 2);
  assert_int_equal(tsr_tensor_size(y, 0), 2);
  assert_int_equal(tsr_tensor_size(y, 1), 3);
  tsr_tensor_release(y);

  // A failing child is named.
  tsr_tensor *wrong = f32(4, (int64_t[]){1, 2, 4, 4}, xv);
  assert_null(tsr_module_forward(net, wrong));
  expect_error_contains("Sequential: child 0");
  expect_error_contains("Conv2d");
  tsr_tensor_release(wrong);
  tsr_tensor_release(x);
  tsr_module_destroy(net);

  // An empty Sequential is the identity.
  tsr_module *empty = tsr_nn_sequential(0, NULL);
  TS_ASSERT_TENSOR(empty);
  tsr_tensor *one = f32(1, (int64_t[]){1}, (double[]){7});
  y = tsr_module_forward(empty, one);
  expect_tensor("empty sequential", y, 1, (int64_t[]){1}, (double[]){7}, 0, 0);
  tsr_tensor_release(y);
  tsr_tensor_release(one);
  tsr_module_destroy(empty);
}

// Sequential runs Linear+ReLU and Conv2d+ReLU as one op with the ReLU fused,
// and ReLU+MaxPool2d as MaxPool2d+ReLU. Output, input gradient and parameter
// gradients must be bit for bit those of the same children run one by one.
static void expect_same_bits(const char *what, const tsr_tensor *a, const tsr_tensor *b) {
  if (a == NULL || b == NULL) fail_msg("%s: NULL (%s)", what, tsr_last_error());
  const int64_t n = numel_of(a);
  assert_int_equal(numel_of(b), n);
  double *va = calloc((size_t)n, sizeof(double)), *vb = calloc((size_t)n, sizeof(double));
  assert_non_null(va);
  assert_non_null(vb);
  assert_int_equal(ts_read(a, va, n), n);
  assert_int_equal(ts_read(b, vb, n), n);
  for (int64_t i = 0; i < n; ++i) {
    if (memcmp(&va[i], &vb[i], sizeof(double)) != 0) {
      fail_msg("%s[%lld]: fused %.9g, unfused %.9g", what, (long long)i, va[i], vb[i]);
    }
  }
  free(va);
  free(vb);
}

// Forward and backward of sum(net(x)) (fused when |unfused| is 0, else the
// children one by one); returns the output, x's and the parameters' grads.
static tsr_tensor *fusion_run(tsr_module *net, tsr_module *const *children, int count, int unfused,
                              tsr_tensor *x, tsr_tensor **out_grads, int num_params) {
  tsr_module_zero_grad(net);
  TS_ASSERT_OK(tsr_tensor_grad_set(x, NULL));
  tsr_tensor *y = NULL;
  if (unfused) {
    y = tsr_tensor_retain(x);
    for (int i = 0; i < count && y != NULL; ++i) {
      tsr_tensor *next = tsr_module_forward(children[i], y);
      tsr_tensor_release(y);
      y = next;
    }
  } else {
    y = tsr_module_forward(net, x);
  }
  TS_ASSERT_TENSOR(y);
  tsr_tensor *loss = tsr_sum(y, 0, NULL, 0);
  TS_ASSERT_TENSOR(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  tsr_tensor_release(loss);
  out_grads[0] = tsr_tensor_grad(x);
  for (int i = 0; i < num_params; ++i) {
    tsr_tensor *p = NULL;
    TS_ASSERT_OK(tsr_module_parameter_get(net, i, NULL, &p));
    out_grads[1 + i] = tsr_tensor_grad(p);
  }
  return y;
}

static void test_sequential_fuses_and_swaps_relu_with_the_same_bits(void **state) {
  (void)state;
  for (int model = 0; model < 3; ++model) {
    tsr_module *children[6];
    int count;
    int64_t x_sizes[4];
    int32_t x_rank;
    if (model == 0) {
      children[0] = tsr_nn_linear(g_device, 6, 5, 1);
      children[1] = tsr_nn_relu();
      children[2] = tsr_nn_linear(g_device, 5, 3, 1);
      count = 3;
      x_rank = 2;
      x_sizes[0] = 4;
      x_sizes[1] = 6;
    } else if (model == 2) {
      // ReLU then MaxPool2d: swapped, the pool runs first.
      children[0] = tsr_nn_conv2d(g_device, 2, 3, 3, 3, NULL);
      children[1] = tsr_nn_relu();
      children[2] = tsr_nn_max_pool2d(2, 2, 0);
      children[3] = tsr_nn_flatten();
      children[4] = tsr_nn_linear(g_device, 3 * 2 * 2, 2, 1);
      count = 5;
      x_rank = 4;
      x_sizes[0] = 2;
      x_sizes[1] = 2;
      x_sizes[2] = x_sizes[3] = 6;
    } else {
      children[0] = tsr_nn_conv2d(g_device, 1, 3, 3, 3, NULL);
      children[1] = tsr_nn_relu();
      children[2] = tsr_nn_flatten();
      children[3] = tsr_nn_linear(g_device, 3 * 3 * 3, 2, 1);
      children[4] = tsr_nn_relu();
      count = 5;
      x_rank = 4;
      x_sizes[0] = 2;
      x_sizes[1] = 1;
      x_sizes[2] = x_sizes[3] = 5;
    }
    tsr_module *net = tsr_nn_sequential(count, children);
    TS_ASSERT_TENSOR(net);
    // Negative biases, so that ReLU zeroes whole pooling windows too.
    param_set(net, "0.bias", (double[]){-0.4, -0.2, -0.6, -0.3, -0.5});
    double xv[144];
    for (int i = 0; i < 144; ++i) xv[i] = sin(1.7 * i + model);
    tsr_tensor *x = f32(x_rank, x_sizes, xv);
    TS_ASSERT_OK(tsr_tensor_requires_grad_set(x, 1));
    const int num_params = tsr_module_parameter_count(net);
    tsr_tensor *grads[2][8] = {{NULL}};
    tsr_tensor *y[2];
    for (int unfused = 0; unfused < 2; ++unfused) {
      y[unfused] = fusion_run(net, children, count, unfused, x, grads[unfused], num_params);
    }
    expect_same_bits("output", y[0], y[1]);
    if (model == 1) {
      // The last ReLU ran inside the Linear only on the fused path.
      const char *fused = tsr_tensor_grad_fn_name(y[0]), *plain = tsr_tensor_grad_fn_name(y[1]);
      assert_non_null(fused);
      assert_non_null(plain);
      assert_string_not_equal(fused, plain);
    }
    for (int i = 0; i <= num_params; ++i) expect_same_bits("gradient", grads[0][i], grads[1][i]);
    for (int k = 0; k < 2; ++k) {
      tsr_tensor_release(y[k]);
      for (int i = 0; i <= num_params; ++i) tsr_tensor_release(grads[k][i]);
    }
    tsr_tensor_release(x);
    tsr_module_destroy(net);
  }
}

static void test_train_set_reaches_children(void **state) {
  (void)state;
  tsr_module *children[2] = {tsr_nn_relu(), tsr_nn_dropout(0.5)};
  tsr_module *net = tsr_nn_sequential(2, children);
  TS_ASSERT_TENSOR(net);
  int64_t n = 1000;
  tsr_tensor *x = tsr_tensor_full(g_device, TSR_FLOAT32, 1, &n, 1.0);
  static double v[1000];
  int zeros = 0;

  tsr_module_train_set(net, 0);
  assert_int_equal(tsr_module_training(net), 0);
  tsr_tensor *y = tsr_module_forward(net, x);
  assert_int_equal(ts_read(y, v, n), n);
  for (int i = 0; i < n; ++i) zeros += v[i] == 0.0;
  assert_int_equal(zeros, 0);  // the child Dropout is in eval mode
  tsr_tensor_release(y);

  tsr_module_train_set(net, 1);
  y = tsr_module_forward(net, x);
  assert_int_equal(ts_read(y, v, n), n);
  for (int i = 0; i < n; ++i) zeros += v[i] == 0.0;
  assert_true(zeros > 350 && zeros < 650);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
  tsr_module_destroy(net);
}

// Parameters made while a scope is open belong to the module, and forward
// results made inside a scope are released by it.
static void test_modules_and_scopes(void **state) {
  (void)state;
  size_t mark = tsr_scope_begin();
  tsr_module *m = tsr_nn_linear(g_device, 2, 2, 1);
  TS_ASSERT_TENSOR(m);
  assert_int_equal(tsr_scope_size(), 0);
  tsr_tensor *x = f32(2, (int64_t[]){1, 2}, (double[]){1, 2});
  tsr_tensor *y = tsr_module_forward(m, x);
  TS_ASSERT_TENSOR(y);
  tsr_module *d = tsr_nn_dropout(0.5);
  tsr_module_train_set(d, 0);
  tsr_tensor *z = tsr_module_forward(d, y);  // identity in eval: still a new scope handle
  TS_ASSERT_TENSOR(z);
  assert_true(tsr_scope_size() >= 3);
  tsr_scope_end(mark);
  assert_int_equal(tsr_scope_size(), 0);
  // The parameters survived the scope.
  double w[4];
  assert_int_equal(ts_read(tsr_module_parameter_by_name_get(m, "weight"), w, 4), 4);
  tsr_module_destroy(d);
  tsr_module_destroy(m);
}

// --- initialisers ------------------------------------------------------------

// Mean, std, min and max of |t|'s values.
typedef struct stats {
  double mean, std, min, max;
} stats;

static stats stats_of(const tsr_tensor *t) {
  int64_t n = numel_of(t);
  double *v = calloc((size_t)n, sizeof(double));
  assert_non_null(v);
  assert_int_equal(ts_read(t, v, n), n);
  stats s = {0, 0, INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; ++i) {
    s.mean += v[i] / (double)n;
    s.min = fmin(s.min, v[i]);
    s.max = fmax(s.max, v[i]);
  }
  for (int64_t i = 0; i < n; ++i) s.std += (v[i] - s.mean) * (v[i] - s.mean) / (double)n;
  s.std = sqrt(s.std);
  free(v);
  return s;
}

// 10k values of U(-b, b): inside the bounds, reaching them, std b / sqrt(3).
static void expect_uniform(const char *what, const tsr_tensor *t, double bound) {
  stats s = stats_of(t);
  if (s.min < -bound || s.max > bound || s.min > -0.98 * bound || s.max < 0.98 * bound ||
      fabs(s.std - bound / sqrt(3.0)) > 0.05 * bound / sqrt(3.0) || fabs(s.mean) > 0.05 * bound) {
    fail_msg("%s: min %g max %g mean %g std %g for U(-%g, %g)", what, s.min, s.max, s.mean, s.std,
             bound, bound);
  }
}

static void expect_normal(const char *what, const tsr_tensor *t, double mean, double std) {
  stats s = stats_of(t);
  if (fabs(s.std - std) > 0.05 * std || fabs(s.mean - mean) > 0.05 * std) {
    fail_msg("%s: mean %g std %g, expected N(%g, %g^2)", what, s.mean, s.std, mean, std);
  }
}

static void test_initialisers_match_pytorch_formulas(void **state) {
  (void)state;
  tsr_tensor *w = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, (int64_t[]){100, 100});
  TS_ASSERT_TENSOR(w);
  // fan_in = fan_out = 100.
  TS_ASSERT_OK(tsr_init_kaiming_uniform_(w, 0, TSR_FAN_IN, TSR_NONLINEARITY_RELU));
  expect_uniform("kaiming_uniform relu", w, sqrt(2.0) * sqrt(3.0 / 100));
  TS_ASSERT_OK(tsr_init_kaiming_uniform_(w, sqrt(5.0), TSR_FAN_IN, TSR_NONLINEARITY_LEAKY_RELU));
  expect_uniform("kaiming_uniform a=sqrt(5)", w, 1.0 / sqrt(100.0));
  TS_ASSERT_OK(tsr_init_kaiming_normal_(w, 0, TSR_FAN_OUT, TSR_NONLINEARITY_TANH));
  expect_normal("kaiming_normal tanh", w, 0, 5.0 / 3.0 / sqrt(100.0));
  TS_ASSERT_OK(tsr_init_xavier_uniform_(w, 2.0));
  expect_uniform("xavier_uniform", w, 2.0 * sqrt(6.0 / 200));
  TS_ASSERT_OK(tsr_init_xavier_normal_(w, 1.0));
  expect_normal("xavier_normal", w, 0, sqrt(2.0 / 200));
  TS_ASSERT_OK(tsr_init_uniform_(w, -3, 5));
  stats s = stats_of(w);
  assert_true(s.min >= -3 && s.max < 5 && fabs(s.mean - 1) < 0.1);
  TS_ASSERT_OK(tsr_init_normal_(w, 2, 0.5));
  expect_normal("normal", w, 2, 0.5);
  tsr_tensor_release(w);

  // Convolution weights [out 40, in 25, 3, 3]: fan_in 225, fan_out 360.
  tsr_tensor *c = tsr_tensor_empty(g_device, TSR_FLOAT32, 4, (int64_t[]){40, 25, 3, 3});
  TS_ASSERT_TENSOR(c);
  TS_ASSERT_OK(tsr_init_kaiming_uniform_(c, 0, TSR_FAN_OUT, TSR_NONLINEARITY_LINEAR));
  expect_uniform("kaiming_uniform conv fan_out", c, sqrt(3.0 / 360));
  TS_ASSERT_OK(tsr_init_xavier_uniform_(c, 1.0));
  expect_uniform("xavier_uniform conv", c, sqrt(6.0 / (225 + 360)));
  tsr_tensor_release(c);

  // float64 tensors too, and a tensor that requires grad (initialisers run
  // with grad mode off).
  tsr_tensor *d = tsr_tensor_empty(g_device, TSR_FLOAT64, 2, (int64_t[]){50, 200});
  TS_ASSERT_TENSOR(d);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(d, 1));
  TS_ASSERT_OK(tsr_init_kaiming_normal_(d, 0, TSR_FAN_IN, TSR_NONLINEARITY_RELU));
  expect_normal("kaiming_normal float64", d, 0, sqrt(2.0 / 200));
  tsr_tensor_release(d);

  // Bad input.
  tsr_tensor *v = tsr_tensor_empty(g_device, TSR_FLOAT32, 1, (int64_t[]){10});
  assert_int_equal(tsr_init_xavier_uniform_(v, 1.0), TSR_INVALID_ARGUMENT);
  expect_error_contains("rank");
  assert_int_equal(tsr_init_uniform_(v, 0, 1), TSR_OK);
  assert_int_equal(tsr_init_uniform_(v, 1, 0), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_init_normal_(v, 0, -1), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_init_uniform_(NULL, 0, 1), TSR_INVALID_ARGUMENT);
  tsr_tensor *i = tsr_tensor_empty(g_device, TSR_INT64, 2, (int64_t[]){4, 4});
  assert_int_equal(tsr_init_normal_(i, 0, 1), TSR_INVALID_ARGUMENT);
  expect_error_contains("dtype");
  tsr_tensor *m2 = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, (int64_t[]){4, 4});
  assert_int_equal(tsr_init_kaiming_uniform_(m2, 0, 7, TSR_NONLINEARITY_RELU),
                   TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_init_kaiming_uniform_(m2, 0, TSR_FAN_IN, 42), TSR_INVALID_ARGUMENT);
  tsr_tensor_release(m2);
  tsr_tensor_release(i);
  tsr_tensor_release(v);
  tsr_context_error_clear(g_context);
}

static void test_init_gain_values(void **state) {
  (void)state;
  assert_true(tsr_init_gain(TSR_NONLINEARITY_LINEAR, 0) == 1.0);
  assert_true(fabs(tsr_init_gain(TSR_NONLINEARITY_RELU, 0) - sqrt(2.0)) < 1e-15);
  assert_true(fabs(tsr_init_gain(TSR_NONLINEARITY_TANH, 0) - 5.0 / 3.0) < 1e-15);
  assert_true(fabs(tsr_init_gain(TSR_NONLINEARITY_LEAKY_RELU, 0.01) -
                   sqrt(2.0 / (1 + 0.01 * 0.01))) < 1e-15);
  assert_true(fabs(tsr_init_gain(TSR_NONLINEARITY_LEAKY_RELU, sqrt(5.0)) - sqrt(1.0 / 3.0)) <
              1e-15);
  assert_true(isnan(tsr_init_gain(99, 0)));
  expect_error_contains("nonlinearity");
}

// --- losses ------------------------------------------------------------------

static void test_mse_loss_values_and_gradients(void **state) {
  (void)state;
  const double xv[6] = {1, 2, 3, -1, 0.5, 4}, tv[6] = {0, 2, 5, 1, 0, 3};
  tsr_tensor *x = f32(2, (int64_t[]){2, 3}, xv);
  tsr_tensor *t = f32(2, (int64_t[]){2, 3}, tv);
  double sq[6], sum = 0;
  for (int i = 0; i < 6; ++i) {
    sq[i] = (xv[i] - tv[i]) * (xv[i] - tv[i]);
    sum += sq[i];
  }
  tsr_tensor *l = tsr_nn_mse_loss(x, t, TSR_REDUCTION_MEAN);
  expect_tensor("mse mean", l, 0, NULL, (double[]){sum / 6}, 1e-6, 1e-6);
  tsr_tensor_release(l);
  l = tsr_nn_mse_loss(x, t, TSR_REDUCTION_SUM);
  expect_tensor("mse sum", l, 0, NULL, (double[]){sum}, 1e-6, 1e-6);
  tsr_tensor_release(l);
  l = tsr_nn_mse_loss(x, t, TSR_REDUCTION_NONE);
  expect_tensor("mse none", l, 2, (int64_t[]){2, 3}, sq, 1e-6, 1e-6);
  tsr_tensor_release(l);

  // One node; dx = 2 (x - t) / n, dt = -dx.
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(x, 1));
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(t, 1));
  l = tsr_nn_mse_loss(x, t, TSR_REDUCTION_MEAN);
  TS_ASSERT_TENSOR(l);
  assert_string_equal(tsr_tensor_grad_fn_name(l), "mse_loss");
  TS_ASSERT_OK(tsr_backward(l, NULL, 0));
  double g[6], want[6];
  for (int i = 0; i < 6; ++i) want[i] = 2 * (xv[i] - tv[i]) / 6;
  grad_read(x, g, 6);
  ts_expect_values("mse dx", TSR_FLOAT32, g, want, NULL, 6, 1e-6, 1e-6);
  for (int i = 0; i < 6; ++i) want[i] = -want[i];
  grad_read(t, g, 6);
  ts_expect_values("mse dtarget", TSR_FLOAT32, g, want, NULL, 6, 1e-6, 1e-6);
  tsr_tensor_release(l);

  // With grad mode off nothing is recorded.
  int prev = tsr_grad_mode_set(0);
  l = tsr_nn_mse_loss(x, t, TSR_REDUCTION_SUM);
  TS_ASSERT_TENSOR(l);
  assert_false(tsr_tensor_requires_grad(l));
  tsr_grad_mode_set(prev);
  tsr_tensor_release(l);

  // Bad input.
  assert_null(tsr_nn_mse_loss(x, t, 3));
  expect_error_contains("reduction");
  assert_null(tsr_nn_mse_loss(x, NULL, TSR_REDUCTION_MEAN));
  tsr_tensor *t3 = f32(1, (int64_t[]){6}, tv);
  assert_null(tsr_nn_mse_loss(x, t3, TSR_REDUCTION_MEAN));
  expect_error_contains("shape");
  tsr_tensor_release(t3);
  tsr_tensor_release(t);
  tsr_tensor_release(x);
  tsr_context_error_clear(g_context);
}

static tsr_tensor *mse_fn(void *user, int32_t num_inputs, tsr_tensor *const *inputs) {
  (void)num_inputs;
  return tsr_nn_mse_loss(inputs[0], inputs[1], *(const tsr_reduction_t *)user);
}

static void test_mse_loss_gradcheck_every_reduction(void **state) {
  (void)state;
  double xv[12], tv[12];
  ts_rng r = {7};
  ts_rng_fill(&r, TSR_FLOAT64, -2, 2, xv, 12);
  ts_rng_fill(&r, TSR_FLOAT64, -2, 2, tv, 12);
  tsr_tensor *x = ts_tensor(g_device, TSR_FLOAT64, 2, (int64_t[]){3, 4}, xv);
  tsr_tensor *t = ts_tensor(g_device, TSR_FLOAT64, 2, (int64_t[]){3, 4}, tv);
  TS_ASSERT_TENSOR(x);
  TS_ASSERT_TENSOR(t);
  tsr_tensor *inputs[2] = {x, t};
  for (tsr_reduction_t red = 0; red < TSR_REDUCTION_COUNT; ++red) {
    tsr_gradcheck_result result = {.struct_size = sizeof(result)};
    TS_ASSERT_OK(tsr_gradcheck(mse_fn, &red, 2, inputs, NULL, &result));
    if (!result.passed) {
      fail_msg("mse reduction %d: input %d element %lld analytic %g numeric %g", red,
               result.worst_input, (long long)result.worst_index, result.analytic, result.numeric);
    }
    assert_int_equal(result.checked, 24);
  }
  tsr_tensor_release(t);
  tsr_tensor_release(x);
}

// A float32 Linear run on float64 input through casts. The layer is linear in
// x, so a large finite-difference step is exact and float32 rounding stays
// far below the tolerance.
static tsr_tensor *linear_fn(void *user, int32_t num_inputs, tsr_tensor *const *inputs) {
  (void)num_inputs;
  tsr_tensor *x32 = tsr_cast(inputs[0], TSR_FLOAT32);
  tsr_tensor *y32 = x32 ? tsr_module_forward((tsr_module *)user, x32) : NULL;
  tsr_tensor *y = y32 ? tsr_cast(y32, TSR_FLOAT64) : NULL;
  tsr_tensor_release(y32);
  tsr_tensor_release(x32);
  return y;
}

static void test_linear_gradcheck_wrt_input(void **state) {
  (void)state;
  tsr_module *m = tsr_nn_linear(g_device, 5, 4, 1);
  TS_ASSERT_TENSOR(m);
  double xv[15];
  ts_rng r = {11};
  ts_rng_fill(&r, TSR_FLOAT32, -1, 1, xv, 15);
  tsr_tensor *x = ts_tensor(g_device, TSR_FLOAT64, 2, (int64_t[]){3, 5}, xv);
  TS_ASSERT_TENSOR(x);
  tsr_gradcheck_options o;
  tsr_gradcheck_options_init(&o);
  o.eps = 1e-2;
  o.atol = 1e-4;
  o.rtol = 1e-3;
  tsr_gradcheck_result result = {.struct_size = sizeof(result)};
  TS_ASSERT_OK(tsr_gradcheck(linear_fn, m, 1, &x, &o, &result));
  if (!result.passed) {
    fail_msg("linear: element %lld analytic %g numeric %g", (long long)result.worst_index,
             result.analytic, result.numeric);
  }
  assert_int_equal(result.checked, 15);
  tsr_tensor_release(x);
  tsr_module_destroy(m);
}

static void test_cross_entropy_values(void **state) {
  (void)state;
  const double lv[6] = {1, 2, 3, 1, 1, 1};
  tsr_tensor *logits = f32(2, (int64_t[]){2, 3}, lv);
  tsr_tensor *target = ts_tensor(g_device, TSR_INT64, 1, (int64_t[]){2}, (double[]){2, 0});
  double lse0 = log(exp(1) + exp(2) + exp(3)), lse1 = log(3 * exp(1));
  double l0 = lse0 - 3, l1 = lse1 - 1;
  tsr_tensor *l = tsr_nn_cross_entropy(logits, target, TSR_REDUCTION_NONE, 0);
  expect_tensor("ce none", l, 1, (int64_t[]){2}, (double[]){l0, l1}, 1e-5, 1e-6);
  tsr_tensor_release(l);
  l = tsr_nn_cross_entropy(logits, target, TSR_REDUCTION_MEAN, 0);
  expect_tensor("ce mean", l, 0, NULL, (double[]){(l0 + l1) / 2}, 1e-5, 1e-6);
  tsr_tensor_release(l);
  l = tsr_nn_cross_entropy(logits, target, TSR_REDUCTION_SUM, 0);
  expect_tensor("ce sum", l, 0, NULL, (double[]){l0 + l1}, 1e-5, 1e-6);
  tsr_tensor_release(l);
  // Label smoothing 0.1: lse - 0.9 x_t - 0.1 / 3 sum_c x_c.
  l = tsr_nn_cross_entropy(logits, target, TSR_REDUCTION_SUM, 0.1);
  double s0 = lse0 - 0.9 * 3 - 0.1 / 3 * 6, s1 = lse1 - 0.9 * 1 - 0.1 / 3 * 3;
  expect_tensor("ce smoothed", l, 0, NULL, (double[]){s0 + s1}, 1e-5, 1e-6);
  tsr_tensor_release(l);
  // ignore_index -100: the mean is over the other rows.
  tsr_tensor *ignored = ts_tensor(g_device, TSR_INT64, 1, (int64_t[]){2}, (double[]){-100, 0});
  l = tsr_nn_cross_entropy(logits, ignored, TSR_REDUCTION_MEAN, 0);
  expect_tensor("ce ignore_index", l, 0, NULL, (double[]){l1}, 1e-5, 1e-6);
  tsr_tensor_release(l);
  tsr_tensor_release(ignored);

  assert_null(tsr_nn_cross_entropy(logits, target, -1, 0));
  expect_error_contains("reduction");
  assert_null(tsr_nn_cross_entropy(logits, target, TSR_REDUCTION_MEAN, 1.5));
  expect_error_contains("label_smoothing");
  assert_null(tsr_nn_cross_entropy(NULL, target, TSR_REDUCTION_MEAN, 0));
  tsr_tensor_release(target);
  tsr_tensor_release(logits);
  tsr_context_error_clear(g_context);
}

// --- bad input ----------------------------------------------------------------

static void test_bad_input_is_refused_with_the_layer_and_sizes(void **state) {
  (void)state;
  tsr_tensor *x = f32(2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
  assert_null(tsr_module_forward(NULL, x));
  expect_error_contains("module is NULL");

  tsr_module *lin = tsr_nn_linear(g_device, 4, 2, 1);
  TS_ASSERT_TENSOR(lin);
  assert_null(tsr_module_forward(lin, NULL));
  expect_error_contains("x is NULL");
  assert_null(tsr_module_forward(lin, x));
  expect_error_contains("Linear");
  expect_error_contains("[2, 3]");
  expect_error_contains("in_features = 4");
  tsr_tensor *x64 = ts_tensor(g_device, TSR_FLOAT64, 2, (int64_t[]){1, 4}, (double[]){1, 2, 3, 4});
  assert_null(tsr_module_forward(lin, x64));
  expect_error_contains("float32");
  tsr_tensor_release(x64);
  tsr_module_destroy(lin);

  assert_null(tsr_nn_linear(g_device, 0, 2, 1));
  expect_error_contains("Linear");
  assert_null(tsr_nn_linear(NULL, 2, 2, 1));
  expect_error_contains("device is NULL");

  tsr_conv2d_options o;
  tsr_conv2d_options_init(&o);
  o.groups = 2;
  assert_null(tsr_nn_conv2d(g_device, 3, 4, 3, 3, &o));
  expect_error_contains("groups");
  o.groups = 1;
  o.stride[1] = 0;
  assert_null(tsr_nn_conv2d(g_device, 3, 4, 3, 3, &o));
  expect_error_contains("stride");
  o.stride[1] = 1;
  o.struct_size = 8;
  assert_null(tsr_nn_conv2d(g_device, 3, 4, 3, 3, &o));
  expect_error_contains("struct_size");
  tsr_module *conv = tsr_nn_conv2d(g_device, 3, 4, 3, 3, NULL);
  TS_ASSERT_TENSOR(conv);
  assert_null(tsr_module_forward(conv, x));
  expect_error_contains("Conv2d");
  expect_error_contains("[N, 3, H, W]");
  tsr_module_destroy(conv);

  tsr_module *bn = tsr_nn_batch_norm2d(g_device, 3, 1e-5, 0.1);
  TS_ASSERT_TENSOR(bn);
  assert_null(tsr_module_forward(bn, x));
  expect_error_contains("BatchNorm2d");
  tsr_tensor *single = tsr_tensor_full(g_device, TSR_FLOAT32, 4, (int64_t[]){1, 3, 1, 1}, 1.0);
  assert_null(tsr_module_forward(bn, single));
  expect_error_contains("more than one value");
  tsr_tensor_release(single);
  tsr_module_destroy(bn);
  assert_null(tsr_nn_batch_norm2d(g_device, 3, 1e-5, 1.5));
  expect_error_contains("momentum");

  assert_null(tsr_nn_layer_norm(g_device, 0, (int64_t[]){1}, 1e-5, 1));
  expect_error_contains("LayerNorm");
  assert_null(tsr_nn_layer_norm(g_device, 1, (int64_t[]){0}, 1e-5, 1));
  tsr_module *ln = tsr_nn_layer_norm(g_device, 1, (int64_t[]){4}, 1e-5, 1);
  assert_null(tsr_module_forward(ln, x));
  expect_error_contains("normalized_shape [4]");
  tsr_module_destroy(ln);

  assert_null(tsr_nn_dropout(1.0));
  expect_error_contains("Dropout");
  assert_null(tsr_nn_dropout(-0.1));
  assert_null(tsr_nn_dropout(NAN));

  tsr_module *emb = tsr_nn_embedding(g_device, 4, 2);
  assert_null(tsr_module_forward(emb, x));
  expect_error_contains("int64 or int32");
  tsr_tensor *far = ts_tensor(g_device, TSR_INT64, 1, (int64_t[]){1}, (double[]){9});
  assert_null(tsr_module_forward(emb, far));
  expect_error_contains("Embedding");
  tsr_tensor_release(far);
  tsr_module_destroy(emb);
  assert_null(tsr_nn_embedding(g_device, 0, 2));

  assert_null(tsr_nn_max_pool2d(0, 1, 0));
  expect_error_contains("MaxPool2d");
  assert_null(tsr_nn_avg_pool2d(2, 1, 2));
  expect_error_contains("padding");
  tsr_module *mp = tsr_nn_max_pool2d(2, 2, 0);
  assert_null(tsr_module_forward(mp, x));
  expect_error_contains("[N, C, H, W]");
  tsr_module_destroy(mp);

  // Sequential takes its children even when it fails.
  tsr_module *kids[3] = {tsr_nn_relu(), NULL, tsr_nn_tanh()};
  assert_null(tsr_nn_sequential(3, kids));
  expect_error_contains("NULL");
  assert_null(tsr_nn_sequential(-1, NULL));

  assert_int_equal(tsr_module_parameter_count(NULL), 0);
  assert_null(tsr_module_kind(NULL));
  assert_null(tsr_module_parameter_by_name_get(NULL, "weight"));
  tsr_module_destroy(NULL);
  tsr_module_train_set(NULL, 1);
  tsr_module_zero_grad(NULL);
  tsr_tensor_release(x);
  tsr_context_error_clear(g_context);
}

// Names deprecated by the ownership rule in names (docs/sdk.md, "What
// borrows") answer as their replacements until they go in 0.2.0.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
static void test_deprecated_names_answer_as_their_replacements(void **state) {
  (void)state;
  tsr_module *m = tsr_nn_linear(g_device, 3, 2, 1);
  assert_non_null(m);
  assert_non_null(tsr_module_parameter_by_name_get(m, "weight"));
  assert_ptr_equal(tsr_module_parameter_find(m, "weight"),
                   tsr_module_parameter_by_name_get(m, "weight"));
  assert_null(tsr_module_parameter_find(m, "gamma"));
  assert_int_equal(tsr_last_status(), TSR_NOT_FOUND);
  assert_ptr_equal(tsr_device_context(g_device), g_context);
  assert_ptr_equal(tsr_device_context_get(g_device), g_context);
  assert_non_null(tsr_device_default_stream_get(g_device));
  assert_ptr_equal(tsr_device_default_stream(g_device), tsr_device_default_stream_get(g_device));
  tsr_module_destroy(m);
  tsr_last_error_clear();
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

// --- training -----------------------------------------------------------------

// Two Gaussian blobs in 2-D, class 0 around (-1, -1) and class 1 around (1, 1),
// std 0.7, from a fixed seed.
#define BLOB_N 64
static void blobs(double *x, double *labels) {
  ts_rng r = {2024};
  for (int i = 0; i < BLOB_N; ++i) {
    int cls = i % 2;
    for (int d = 0; d < 2; ++d) {
      double u1 = ts_rng_value(&r, TSR_FLOAT64, 1e-12, 1), u2 = ts_rng_value(&r, TSR_FLOAT64, 0, 1);
      double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
      x[i * 2 + d] = (cls ? 1.0 : -1.0) + 0.7 * z;
    }
    labels[i] = cls;
  }
}

static tsr_module *mlp(tsr_device *device) {
  tsr_module *layers[3] = {tsr_nn_linear(device, 2, 16, 1), tsr_nn_relu(),
                           tsr_nn_linear(device, 16, 2, 1)};
  return tsr_nn_sequential(3, layers);
}

// Forward, cross-entropy and backward (gradients cleared before by the
// caller); returns the loss. Call inside a scope.
static double loss_backward(tsr_module *net, tsr_tensor *x, tsr_tensor *y) {
  tsr_tensor *logits = tsr_module_forward(net, x);
  TS_ASSERT_TENSOR(logits);
  tsr_tensor *loss = tsr_nn_cross_entropy(logits, y, TSR_REDUCTION_MEAN, 0);
  TS_ASSERT_TENSOR(loss);
  double value = scalar(loss);
  TS_ASSERT_OK(tsr_backward(loss, NULL, 0));
  return value;
}

// One SGD step written with tensor ops: p -= lr * grad under no_grad.
// Returns the loss before the step.
static double sgd_step(tsr_module *net, tsr_tensor *x, tsr_tensor *y, double lr) {
  size_t mark = tsr_scope_begin();
  tsr_module_zero_grad(net);
  double value = loss_backward(net, x, y);
  int prev = tsr_grad_mode_set(0);
  for (int32_t i = 0; i < tsr_module_parameter_count(net); ++i) {
    tsr_tensor *p = NULL;
    TS_ASSERT_OK(tsr_module_parameter_get(net, i, NULL, &p));
    tsr_tensor *g = tsr_tensor_grad(p);
    TS_ASSERT_TENSOR(g);
    TS_ASSERT_OK(tsr_binary_out(p, p, g, TSR_BINARY_SUB, lr));
    tsr_tensor_release(g);
  }
  tsr_grad_mode_set(prev);
  tsr_scope_end(mark);
  return value;
}

static void test_mlp_learns_two_blobs_with_sgd(void **state) {
  (void)state;
  double xv[BLOB_N * 2], lv[BLOB_N];
  blobs(xv, lv);
  tsr_tensor *x = f32(2, (int64_t[]){BLOB_N, 2}, xv);
  tsr_tensor *y = ts_tensor(g_device, TSR_INT64, 1, (int64_t[]){BLOB_N}, lv);
  TS_ASSERT_TENSOR(y);
  tsr_module *net = mlp(g_device);
  TS_ASSERT_TENSOR(net);
  double first = sgd_step(net, x, y, 0.1), last = first;
  for (int step = 1; step < 200; ++step) last = sgd_step(net, x, y, 0.1);
  tsr_module_train_set(net, 0);
  tsr_tensor *logits = tsr_module_forward(net, x);
  tsr_tensor *loss = tsr_nn_cross_entropy(logits, y, TSR_REDUCTION_MEAN, 0);
  double final = scalar(loss);
  print_message("two blobs: loss %.4g -> %.4g after 200 SGD steps\n", first, final);
  if (!(final < 0.3 * first)) {
    fail_msg("loss %g after 200 steps (%g at step 199) is not below 30%% of the initial %g", final,
             last, first);
  }
  tsr_tensor_release(loss);
  tsr_tensor_release(logits);
  tsr_module_destroy(net);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
}

// Copies every parameter of |src| into |dst| (same architecture) through the host.
static void parameters_copy(tsr_module *dst, const tsr_module *src) {
  assert_int_equal(tsr_module_parameter_count(dst), tsr_module_parameter_count(src));
  for (int32_t i = 0; i < tsr_module_parameter_count(src); ++i) {
    tsr_tensor *s = NULL, *d = NULL;
    TS_ASSERT_OK(tsr_module_parameter_get(src, i, NULL, &s));
    TS_ASSERT_OK(tsr_module_parameter_get(dst, i, NULL, &d));
    int64_t n = numel_of(s);
    float *buf = calloc((size_t)n, sizeof(float));
    assert_non_null(buf);
    TS_ASSERT_OK(tsr_tensor_to_host(s, buf, (size_t)n * sizeof(float)));
    tsr_tensor *tmp = tsr_tensor_from_host(tsr_tensor_device(d), TSR_FLOAT32, tsr_tensor_rank(d),
                                           tsr_tensor_sizes(d), buf);
    TS_ASSERT_TENSOR(tmp);
    int prev = tsr_grad_mode_set(0);
    TS_ASSERT_OK(tsr_copy_(d, tmp));
    tsr_grad_mode_set(prev);
    tsr_tensor_release(tmp);
    free(buf);
  }
}

// One step through a fused optimizer; returns the loss before the step.
static double optimizer_step(tsr_module *net, tsr_optimizer *opt, tsr_tensor *x, tsr_tensor *y) {
  size_t mark = tsr_scope_begin();
  tsr_optimizer_zero_grad(opt);
  double value = loss_backward(net, x, y);
  TS_ASSERT_OK(tsr_optimizer_step(opt));
  tsr_scope_end(mark);
  return value;
}

// On onednn: the same network with the same initial weights gives the same
// losses on ref and onednn, step after step: 5 steps of plain SGD written
// out with tensor ops, then 5 of the fused SGD update (momentum, Nesterov,
// weight decay) and 5 of the fused AdamW update, each parameter update one
// op on its device. float32 with different summation orders: relative 1e-4
// leaves two orders of magnitude of room over the rounding of a 16-wide
// hidden layer.
static void test_mlp_same_losses_on_ref_and_device(void **state) {
  (void)state;
  tsr_device *ref = tsr_context_device_find(g_context, "ref");
  if (ref == NULL || ref == g_device) {
    // test_nn_ref: the device under test is ref itself; nothing to compare.
    assert_string_equal(TSR_TEST_DEVICE, "ref:0");
    return;
  }
  double xv[BLOB_N * 2], lv[BLOB_N];
  blobs(xv, lv);
  tsr_tensor *x[2], *y[2];
  tsr_module *net[2];
  tsr_optimizer *sgd[2], *adamw[2];
  tsr_device *devices[2] = {ref, g_device};
  tsr_sgd_options so;
  tsr_sgd_options_init(&so);
  so.lr = 0.05;
  so.momentum = 0.9;
  so.nesterov = 1;
  so.weight_decay = 1e-3;
  tsr_adam_options ao;
  tsr_adamw_options_init(&ao);
  ao.lr = 0.01;
  for (int k = 0; k < 2; ++k) {
    x[k] = ts_tensor(devices[k], TSR_FLOAT32, 2, (int64_t[]){BLOB_N, 2}, xv);
    y[k] = ts_tensor(devices[k], TSR_INT64, 1, (int64_t[]){BLOB_N}, lv);
    net[k] = mlp(devices[k]);
    TS_ASSERT_TENSOR(x[k]);
    TS_ASSERT_TENSOR(y[k]);
    TS_ASSERT_TENSOR(net[k]);
  }
  parameters_copy(net[1], net[0]);
  for (int k = 0; k < 2; ++k) {
    sgd[k] = tsr_optim_sgd_for_module(net[k], &so);
    adamw[k] = tsr_optim_adam_for_module(net[k], &ao);
    TS_ASSERT_TENSOR(sgd[k]);
    TS_ASSERT_TENSOR(adamw[k]);
  }
  static const char *const phases[3] = {"SGD by tensor ops", "fused SGD (Nesterov, weight decay)",
                                        "fused AdamW"};
  double worst = 0;
  for (int step = 0; step < 15; ++step) {
    const int phase = step / 5;
    double loss[2];
    for (int k = 0; k < 2; ++k) {
      loss[k] = phase == 0   ? sgd_step(net[k], x[k], y[k], 0.1)
                : phase == 1 ? optimizer_step(net[k], sgd[k], x[k], y[k])
                             : optimizer_step(net[k], adamw[k], x[k], y[k]);
    }
    if (!(fabs(loss[0] - loss[1]) <= 1e-4 * fabs(loss[0]))) {
      fail_msg("step %d (%s): loss %.9g on ref, %.9g on %s", step, phases[phase], loss[0],
               loss[1], TSR_TEST_DEVICE);
    }
    worst = fmax(worst, fabs(loss[0] - loss[1]) / fabs(loss[0]));
  }
  print_message("ref vs %s: largest relative loss difference %.3g over 15 steps (%s, %s, %s)\n",
                TSR_TEST_DEVICE, worst, phases[0], phases[1], phases[2]);
  for (int k = 0; k < 2; ++k) {
    tsr_optimizer_destroy(adamw[k]);
    tsr_optimizer_destroy(sgd[k]);
    tsr_module_destroy(net[k]);
    tsr_tensor_release(y[k]);
    tsr_tensor_release(x[k]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_linear_matches_hand_computation_and_gradients, seeded_test_setup),
      cmocka_unit_test_setup(test_linear_default_init_is_pytorch_bound_and_seeded, seeded_test_setup),
      cmocka_unit_test_setup(test_conv2d_one_channel_3x3_by_hand, seeded_test_setup),
      cmocka_unit_test_setup(test_batch_norm2d_train_updates_running_stats_and_eval_uses_them,
                             seeded_test_setup),
      cmocka_unit_test_setup(test_layer_norm_normalises_last_axes, seeded_test_setup),
      cmocka_unit_test_setup(test_dropout_train_zeroes_about_p_and_scales_survivors, seeded_test_setup),
      cmocka_unit_test_setup(test_embedding_looks_up_rows_of_any_index_shape, seeded_test_setup),
      cmocka_unit_test_setup(test_pools_match_pytorch_defaults, seeded_test_setup),
      cmocka_unit_test_setup(test_activations_softmax_and_flatten, seeded_test_setup),
      cmocka_unit_test_setup(test_sequential_names_parameters_as_pytorch_state_dict, seeded_test_setup),
      cmocka_unit_test_setup(test_sequential_fuses_and_swaps_relu_with_the_same_bits,
                             seeded_test_setup),
      cmocka_unit_test_setup(test_train_set_reaches_children, seeded_test_setup),
      cmocka_unit_test_setup(test_modules_and_scopes, seeded_test_setup),
      cmocka_unit_test_setup(test_initialisers_match_pytorch_formulas, seeded_test_setup),
      cmocka_unit_test_setup(test_init_gain_values, seeded_test_setup),
      cmocka_unit_test_setup(test_mse_loss_values_and_gradients, seeded_test_setup),
      cmocka_unit_test_setup(test_mse_loss_gradcheck_every_reduction, seeded_test_setup),
      cmocka_unit_test_setup(test_linear_gradcheck_wrt_input, seeded_test_setup),
      cmocka_unit_test_setup(test_cross_entropy_values, seeded_test_setup),
      cmocka_unit_test_setup(test_bad_input_is_refused_with_the_layer_and_sizes, seeded_test_setup),
      cmocka_unit_test_setup(test_deprecated_names_answer_as_their_replacements,
                             seeded_test_setup),
      cmocka_unit_test_setup(test_mlp_learns_two_blobs_with_sgd, seeded_test_setup),
      cmocka_unit_test_setup(test_mlp_same_losses_on_ref_and_device, seeded_test_setup),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
