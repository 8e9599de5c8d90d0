// MATMUL and the CONV2D family on the oneDNN plugin, at sizes larger than the
// conformance suite's (a 256x512x384 GEMM, a 3x3 convolution over
// 8 x 32 x 28 x 28), checked against the conformance oracle's float64 loops.
//
// Every op's engine is checked before it runs (tsr_op_engine_get), so a
// case meant for a oneDNN primitive cannot pass by silently running the
// plugin's own kernel. The weight-cache test changes a convolution's weights
// in place between two calls: the blocked copy the plugin keeps must follow.
//
// Compile definition: TSR_TEST_ONEDNN_PATH (the plugin .so).
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onednn_test_util.h"
#include "tessera/tessera.h"
#include "test_support.h"

// Runs |op| after checking that its plan uses a oneDNN primitive.
#define run_onednn(op, ni, in, no, out, attrs, what) \
  onednn_run_expect(op, ni, in, no, out, attrs, ENGINE_ONEDNN, what)

// Where an op with the fused |act| runs: GELU and SIGMOID post-ops are used
// only where the plugin's accuracy check passes them on this CPU and oneDNN
// (eltwise_check.h: oneDNN 3.x's GELU on AVX-512 and every oneDNN's sigmoid
// near x = -87 fail it), so either engine, and the values decide.
static engine_kind act_engine(tsr_activation_t act) {
  return act == TSR_ACTIVATION_GELU || act == TSR_ACTIVATION_SIGMOID ? ENGINE_ANY : ENGINE_ONEDNN;
}

static tsr_tensor *tensor_of(int32_t rank, const int64_t *sizes, const double *values) {
  tsr_tensor *t = ts_tensor(g_device, TSR_FLOAT32, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

static tsr_tensor *tensor_empty(int32_t rank, const int64_t *sizes) {
  tsr_tensor *t = tsr_tensor_empty(g_device, TSR_FLOAT32, rank, sizes);
  TS_ASSERT_TENSOR(t);
  return t;
}

static void read_all(const tsr_tensor *t, double *out, int64_t n) {
  assert_int_equal(ts_read(t, out, n), n);
}

// |got| against the float64 |want|: |got - want| <= rel * mag[i] + 1e-6,
// where mag[i] is the sum of the magnitudes of element i's products, the
// scale float32 rounding errors grow with. A wrong index or a stale weight
// gives an error of the order of mag itself.
static void expect_close(const char *what, const double *got, const double *want, const double *mag,
                         int64_t n, double rel) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double bound = rel * mag[i] + 1e-6;
    const double err = fabs(got[i] - want[i]);
    if (!(err <= bound)) {
      fail_msg("%s: element %lld is %.9g, expected %.9g (|diff| %.3g > bound %.3g)", what,
               (long long)i, got[i], want[i], err, bound);
    }
    if (err / bound > worst)
      worst = err / bound;
  }
  printf("  %-44s max err/bound %.3f\n", what, worst);
}

// --- MATMUL ----------------------------------------------------------------------

// out = act(alpha * a @ b + bias + beta * out0) for a [M, K] and b given
// transposed, as bt [N, K] (so b is a strided view), against the oracle.
static void matmul_case(int64_t m, int64_t k, int64_t n, double alpha, double beta,
                        tsr_activation_t act, int with_bias, uint64_t seed, const char *what) {
  ts_rng rng = {seed};
  double *a = dalloc(m * k), *bt = dalloc(n * k), *bias = dalloc(n), *out0 = dalloc(m * n);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, a, m * k);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, bt, n * k);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, bias, n);
  ts_rng_fill(&rng, TSR_FLOAT32, -4.0, 4.0, out0, m * n);
  tsr_tensor *ta = tensor_of(2, (int64_t[]){m, k}, a);
  tsr_tensor *tbt = tensor_of(2, (int64_t[]){n, k}, bt);
  tsr_tensor *tb = tsr_transpose(tbt, 0, 1);  // [K, N], strides (1, K)
  TS_ASSERT_TENSOR(tb);
  assert_int_equal(tsr_tensor_stride(tb, 0), 1);
  tsr_tensor *tbias = tensor_of(1, (int64_t[]){n}, bias);
  tsr_tensor *tout = tensor_of(2, (int64_t[]){m, n}, out0);
  tsr_matmul_attrs attrs = {sizeof(attrs), alpha, beta, act, (uint32_t)with_bias};
  tsr_tensor *inputs[3] = {ta, tb, tbias};
  onednn_run_expect(TSR_OP_MATMUL, with_bias ? 3 : 2, inputs, 1, &tout, &attrs, act_engine(act),
                    what);

  double *want = dalloc(m * n), *mag = dalloc(m * n), *got = dalloc(m * n), *b = dalloc(k * n);
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) b[p * n + j] = bt[j * k + p];
  }
  orc_matmul_attrs(&attrs, TSR_FLOAT32, 2, (int64_t[]){m, k}, a, 2, (int64_t[]){k, n}, b, 1, &n,
                   with_bias ? bias : NULL, out0, 2, (int64_t[]){m, n}, want, NULL, mag);
  free(b);
  read_all(tout, got, m * n);
  expect_close(what, got, want, mag, m * n, 1e-5);
  tsr_tensor_release(ta);
  tsr_tensor_release(tbt);
  tsr_tensor_release(tb);
  tsr_tensor_release(tbias);
  tsr_tensor_release(tout);
  free(a);
  free(bt);
  free(bias);
  free(out0);
  free(want);
  free(mag);
  free(got);
}

static void test_matmul_transposed_b_with_bias_and_relu(void **state) {
  (void)state;
  matmul_case(256, 512, 384, 1.0, 0.0, TSR_ACTIVATION_NONE, 0, 1, "matmul 256x512x384 b^T");
  matmul_case(256, 512, 384, 1.0, 0.0, TSR_ACTIVATION_RELU, 1, 2,
              "matmul 256x512x384 b^T bias relu");
}

static void test_matmul_alpha_beta_epilogues(void **state) {
  (void)state;
  matmul_case(256, 512, 384, 0.5, -1.5, TSR_ACTIVATION_NONE, 0, 3, "matmul alpha 0.5 beta -1.5");
  matmul_case(256, 512, 384, 1.0, 0.75, TSR_ACTIVATION_RELU, 1, 4, "matmul beta 0.75 bias relu");
  matmul_case(256, 512, 384, 2.0, 1.0, TSR_ACTIVATION_TANH, 1, 5,
              "matmul alpha 2 beta 1 bias tanh");
  matmul_case(256, 512, 384, -0.25, 0.0, TSR_ACTIVATION_GELU, 1, 6, "matmul alpha -0.25 bias gelu");
}

// Linear's gradient products: dW = dy^T @ x (|transposed_a|: a is the
// transposed view of a [K, M] tensor) or dx = dy @ w, b and out row-major,
// on |want|, against the oracle.
static void linear_grad_case(int64_t m, int64_t k, int64_t n, int transposed_a, engine_kind want,
                             uint64_t seed, const char *what) {
  ts_rng rng = {seed};
  double *a = dalloc(m * k), *b = dalloc(k * n);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, a, m * k);  // a[i * k + p], whatever the storage
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, b, k * n);
  tsr_tensor *ta = NULL, *stored = NULL;
  if (transposed_a) {
    double *at = dalloc(k * m);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
    }
    stored = tensor_of(2, (int64_t[]){k, m}, at);
    ta = tsr_transpose(stored, 0, 1);
    TS_ASSERT_TENSOR(ta);
    assert_int_equal(tsr_tensor_stride(ta, 0), 1);
    free(at);
  } else {
    ta = tensor_of(2, (int64_t[]){m, k}, a);
  }
  tsr_tensor *tb = tensor_of(2, (int64_t[]){k, n}, b);
  tsr_tensor *tout = tensor_empty(2, (int64_t[]){m, n});
  tsr_tensor *inputs[2] = {ta, tb};
  onednn_run_expect(TSR_OP_MATMUL, 2, inputs, 1, &tout, NULL, want, what);
  double *want_v = dalloc(m * n), *mag = dalloc(m * n), *got = dalloc(m * n);
  orc_matmul(2, (int64_t[]){m, k}, a, 2, (int64_t[]){k, n}, b, 0, NULL, NULL, TSR_ACTIVATION_NONE,
             2, (int64_t[]){m, n}, want_v, mag);
  read_all(tout, got, m * n);
  expect_close(what, got, want_v, mag, m * n, 1e-5);
  tsr_tensor_release(ta);
  tsr_tensor_release(stored);
  tsr_tensor_release(tb);
  tsr_tensor_release(tout);
  free(a);
  free(b);
  free(want_v);
  free(mag);
  free(got);
}

// Where measured faster (matmul.c), Linear's gradient products run on the
// own blocked GEMM; the shapes next to them that oneDNN won stay there.
static void test_matmul_linear_gradients_run_the_own_gemm_where_faster(void **state) {
  (void)state;
  linear_grad_case(300, 100, 270, 1, ENGINE_OWN, 11, "dW = dy^T @ x, M 300 N 270 K 100");
  linear_grad_case(100, 300, 270, 0, ENGINE_OWN, 12, "dx = dy @ w, M 100 N 270 K 300");
  linear_grad_case(128, 64, 1600, 1, ENGINE_ONEDNN, 13, "dW, M 128 N 1600 K 64 (CNN fc1)");
  linear_grad_case(100, 300, 784, 0, ENGINE_ONEDNN, 14, "dx, N 784");
}

// a [B, M, K] @ b [1 -> B, K, N] (stride 0 on the batch dimension).
static void test_matmul_batch_broadcast(void **state) {
  (void)state;
  enum { B = 4, M = 64, K = 96, NN = 80 };
  ts_rng rng = {7};
  double *a = dalloc(B * M * K), *b = dalloc(K * NN);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, a, B * M * K);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, b, K * NN);
  tsr_tensor *ta = tensor_of(3, (int64_t[]){B, M, K}, a);
  tsr_tensor *tb1 = tensor_of(3, (int64_t[]){1, K, NN}, b);
  tsr_tensor *tb = tsr_expand(tb1, 3, (int64_t[]){B, K, NN});
  TS_ASSERT_TENSOR(tb);
  assert_int_equal(tsr_tensor_stride(tb, 0), 0);
  tsr_tensor *tout = tensor_empty(3, (int64_t[]){B, M, NN});
  tsr_tensor *inputs[2] = {ta, tb};
  run_onednn(TSR_OP_MATMUL, 2, inputs, 1, &tout, NULL, "matmul [4]x64x96x80 b batch-broadcast");
  double *want = dalloc(B * M * NN), *mag = dalloc(B * M * NN), *got = dalloc(B * M * NN);
  orc_matmul(3, (int64_t[]){B, M, K}, a, 3, (int64_t[]){1, K, NN}, b, 0, NULL, NULL,
             TSR_ACTIVATION_NONE, 3, (int64_t[]){B, M, NN}, want, mag);
  read_all(tout, got, B * M * NN);
  expect_close("matmul batch-broadcast", got, want, mag, B * M * NN, 1e-5);
  tsr_tensor_release(ta);
  tsr_tensor_release(tb1);
  tsr_tensor_release(tb);
  tsr_tensor_release(tout);
  free(a);
  free(b);
  free(want);
  free(mag);
  free(got);
}

// --- CONV2D ----------------------------------------------------------------------

typedef struct conv_shape {
  int64_t n, c, h, w, o, kh, kw;
  tsr_conv2d_attrs attrs;
  int64_t oh, ow;
} conv_shape;

static conv_shape conv_shape_make(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k,
                                  int64_t stride, int64_t pad_before, int64_t pad_after,
                                  int64_t dilation, int64_t groups) {
  conv_shape s = {n, c, h, w, o, k, k, {0}, 0, 0};
  s.attrs.struct_size = sizeof(s.attrs);
  for (int d = 0; d < 2; ++d) {
    s.attrs.stride[d] = stride;
    s.attrs.pad_before[d] = pad_before;
    s.attrs.pad_after[d] = pad_after;
    s.attrs.dilation[d] = dilation;
  }
  s.attrs.groups = groups;
  s.oh = (h + pad_before + pad_after - dilation * (k - 1) - 1) / stride + 1;
  s.ow = (w + pad_before + pad_after - dilation * (k - 1) - 1) / stride + 1;
  return s;
}

// A tensor holding the NCHW values |v| of [a, b, c, d], stored NCHW or, when
// |channels_last|, NHWC (a permuted view of an [a, c, d, b] tensor).
static tsr_tensor *conv_tensor(const int64_t *sizes, const double *v, int channels_last) {
  if (!channels_last)
    return tensor_of(4, sizes, v);
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  double *nhwc = dalloc(n * c * h * w);
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
          nhwc[((a * h + i) * w + j) * c + b] = v[((a * c + b) * h + i) * w + j];
  tsr_tensor *stored = tensor_of(4, (int64_t[]){n, h, w, c}, nhwc);
  free(nhwc);
  tsr_tensor *view = tsr_permute(stored, 4, (int32_t[]){0, 3, 1, 2});
  TS_ASSERT_TENSOR(view);
  tsr_tensor_release(stored);
  return view;
}

static tsr_tensor *conv_empty(const int64_t *sizes, int channels_last) {
  if (!channels_last)
    return tensor_empty(4, sizes);
  tsr_tensor *stored = tensor_empty(4, (int64_t[]){sizes[0], sizes[2], sizes[3], sizes[1]});
  tsr_tensor *view = tsr_permute(stored, 4, (int32_t[]){0, 3, 1, 2});
  TS_ASSERT_TENSOR(view);
  tsr_tensor_release(stored);
  return view;
}

// The NCHW sizes and element counts of |s|'s x, w and y.
typedef struct conv_dims {
  int64_t xs[4], ws[4], ys[4];
  int64_t xn, wn, yn;
} conv_dims;

static conv_dims conv_dims_of(const conv_shape *s) {
  const int64_t cg = s->c / s->attrs.groups;
  const conv_dims d = {{s->n, s->c, s->h, s->w},
                       {s->o, cg, s->kh, s->kw},
                       {s->n, s->o, s->oh, s->ow},
                       s->n * s->c * s->h * s->w,
                       s->o * cg * s->kh * s->kw,
                       s->n * s->o * s->oh * s->ow};
  return d;
}

// The oracle's CONV2D of |s| on x and w, with |bias| (or NULL: none) and
// |act|, into y; |mag| (or NULL) gets each element's sum of |terms|.
static void conv_fwd_want(const conv_shape *s, const double *x, const double *w,
                          const double *bias, tsr_activation_t act, double *y, double *mag) {
  const conv_dims d = conv_dims_of(s);
  tsr_conv2d_attrs attrs = s->attrs;
  attrs.has_bias = bias != NULL;
  attrs.activation = act;
  orc_conv2d(TSR_OP_CONV2D, &attrs, d.xs, (double *)x, d.ws, (double *)w, d.ys, y,
             (double *)bias, NULL, mag, NULL);
}

// The oracle's CONV2D_BACKWARD_DATA of |s|: dx of dy and w.
static void conv_bwd_data_want(const conv_shape *s, const double *dy, const double *w, double *dx,
                               double *mag) {
  const conv_dims d = conv_dims_of(s);
  tsr_conv2d_attrs attrs = s->attrs;
  attrs.has_bias = 0;
  orc_conv2d(TSR_OP_CONV2D_BACKWARD_DATA, &attrs, d.xs, dx, d.ws, (double *)w, d.ys, (double *)dy,
             NULL, NULL, mag, NULL);
}

// The oracle's CONV2D_BACKWARD_FILTER of |s|: dw (and, |with_bias|, dbias)
// of dy and x.
static void conv_bwd_filter_want(const conv_shape *s, const double *x, const double *dy,
                                 int with_bias, double *dw, double *mag, double *db,
                                 double *db_mag) {
  const conv_dims d = conv_dims_of(s);
  tsr_conv2d_attrs attrs = s->attrs;
  attrs.has_bias = (uint32_t)with_bias;
  orc_conv2d(TSR_OP_CONV2D_BACKWARD_FILTER, &attrs, d.xs, (double *)x, d.ws, dw, d.ys,
             (double *)dy, db, NULL, mag, db_mag);
}

// Checks dw (|wn| elements) and dbias (unless |tdb| is NULL) of a filter
// gradient against the oracle's, of x and dy over |s|.
static void expect_filter_grads(const conv_shape *s, const double *x, const double *dy,
                                int64_t wn, int64_t yn, tsr_tensor *tdw, tsr_tensor *tdb,
                                const char *w_label, const char *b_label) {
  (void)yn;
  double *want = dalloc(wn), *mag = dalloc(wn), *got = dalloc(wn);
  double *db_want = dalloc(s->o), *db_mag = dalloc(s->o), *db_got = dalloc(s->o);
  conv_bwd_filter_want(s, x, dy, tdb != NULL, want, mag, db_want, db_mag);
  read_all(tdw, got, wn);
  expect_close(w_label, got, want, mag, wn, 1e-5);
  if (tdb != NULL) {
    read_all(tdb, db_got, s->o);
    expect_close(b_label, db_got, db_want, db_mag, s->o, 1e-5);
  }
  free(want);
  free(mag);
  free(got);
  free(db_want);
  free(db_mag);
  free(db_got);
}

// Runs CONV2D (with bias and |act|), CONV2D_BACKWARD_DATA and
// CONV2D_BACKWARD_FILTER (with dbias) for |s| and checks each against the
// oracle. The forward and backward data run on oneDNN, the filter
// gradient where |filter_want| says.
static void conv_case(const conv_shape *s, tsr_activation_t act, int channels_last, uint64_t seed,
                      engine_kind filter_want, const char *what) {
  const conv_dims d = conv_dims_of(s);
  ts_rng rng = {seed};
  double *x = dalloc(d.xn), *w = dalloc(d.wn), *bias = dalloc(s->o), *dy = dalloc(d.yn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, d.xn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, w, d.wn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, bias, s->o);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, dy, d.yn);
  tsr_tensor *tx = conv_tensor(d.xs, x, channels_last);
  tsr_tensor *tw = tensor_of(4, d.ws, w);
  tsr_tensor *tbias = tensor_of(1, &s->o, bias);
  tsr_tensor *tdy = conv_tensor(d.ys, dy, channels_last);
  char label[160];

  // Forward with bias and activation.
  {
    tsr_conv2d_attrs attrs = s->attrs;
    attrs.activation = act;
    attrs.has_bias = 1;
    tsr_tensor *ty = conv_empty(d.ys, channels_last);
    tsr_tensor *inputs[3] = {tx, tw, tbias};
    snprintf(label, sizeof(label), "%s fwd", what);
    onednn_run_expect(TSR_OP_CONV2D, 3, inputs, 1, &ty, &attrs, act_engine(act), label);
    double *want = dalloc(d.yn), *mag = dalloc(d.yn), *got = dalloc(d.yn);
    conv_fwd_want(s, x, w, bias, act, want, mag);    read_all(ty, got, d.yn);
    expect_close(label, got, want, mag, d.yn, 1e-5);
    tsr_tensor_release(ty);
    free(want);
    free(mag);
    free(got);
  }
  // Backward data.
  {
    tsr_tensor *tdx = conv_empty(d.xs, channels_last);
    tsr_tensor *inputs[2] = {tdy, tw};
    snprintf(label, sizeof(label), "%s bwd-data", what);
    run_onednn(TSR_OP_CONV2D_BACKWARD_DATA, 2, inputs, 1, &tdx, &s->attrs, label);
    double *want = dalloc(d.xn), *mag = dalloc(d.xn), *got = dalloc(d.xn);
    conv_bwd_data_want(s, dy, w, want, mag);
    read_all(tdx, got, d.xn);
    expect_close(label, got, want, mag, d.xn, 1e-5);
    tsr_tensor_release(tdx);
    free(want);
    free(mag);
    free(got);
  }
  // Backward filter with dbias.
  {
    tsr_conv2d_attrs attrs = s->attrs;
    attrs.has_bias = 1;
    tsr_tensor *tdw = tensor_empty(4, d.ws);
    tsr_tensor *tdb = tensor_empty(1, &s->o);
    tsr_tensor *inputs[2] = {tdy, tx};
    tsr_tensor *outputs[2] = {tdw, tdb};
    snprintf(label, sizeof(label), "%s bwd-filter", what);
    onednn_run_expect(TSR_OP_CONV2D_BACKWARD_FILTER, 2, inputs, 2, outputs, &attrs, filter_want,
                      label);
    char bias_label[96];
    snprintf(bias_label, sizeof(bias_label), "%s dbias", what);
    expect_filter_grads(s, x, dy, d.wn, d.yn, tdw, tdb, label, bias_label);
    tsr_tensor_release(tdw);
    tsr_tensor_release(tdb);
  }
  tsr_tensor_release(tx);
  tsr_tensor_release(tw);
  tsr_tensor_release(tbias);
  tsr_tensor_release(tdy);
  free(x);
  free(w);
  free(bias);
  free(dy);
}

// The filter gradients of these 3x3 convolutions with one group run on the
// own direct kernel (ref's conv_filter_direct.c, see
// test_conv_filter_gradient_with_several_channels_runs_the_direct_kernel);
// with 4 groups, and 1x1, on oneDNN.
static void test_conv_3x3_all_directions(void **state) {
  (void)state;
  const conv_shape s = conv_shape_make(8, 32, 28, 28, 64, 3, 1, 1, 1, 1, 1);
  conv_case(&s, TSR_ACTIVATION_RELU, 0, 11, ENGINE_OWN, "conv 8x32x28x28 -> 64 3x3 p1");
  const conv_shape pointwise = conv_shape_make(8, 32, 14, 14, 64, 1, 1, 0, 0, 1, 1);
  conv_case(&pointwise, TSR_ACTIVATION_RELU, 0, 16, ENGINE_ONEDNN, "conv 8x32x14x14 -> 64 1x1");
}

static void test_conv_channels_last(void **state) {
  (void)state;
  const conv_shape s = conv_shape_make(8, 32, 28, 28, 64, 3, 1, 1, 1, 1, 1);
  conv_case(&s, TSR_ACTIVATION_NONE, 1, 12, ENGINE_OWN, "conv NHWC 8x32x28x28 -> 64");
}

static void test_conv_grouped(void **state) {
  (void)state;
  const conv_shape s = conv_shape_make(8, 32, 28, 28, 64, 3, 1, 1, 1, 1, 4);
  conv_case(&s, TSR_ACTIVATION_TANH, 0, 13, ENGINE_ONEDNN, "conv groups 4");
}

static void test_conv_dilated_strided(void **state) {
  (void)state;
  const conv_shape dilated = conv_shape_make(8, 32, 28, 28, 64, 3, 1, 2, 2, 2, 1);
  conv_case(&dilated, TSR_ACTIVATION_NONE, 0, 14, ENGINE_OWN, "conv dilation 2 p2");
  // Stride 2 with asymmetric padding (0 before, 1 after): H 28 -> OH 14.
  const conv_shape strided = conv_shape_make(8, 32, 28, 28, 64, 3, 2, 0, 1, 1, 1);
  conv_case(&strided, TSR_ACTIVATION_GELU, 0, 15, ENGINE_OWN, "conv stride 2 pad 0/1");
}

// The filter gradient with one input channel per group runs on the own
// direct kernel (ref's conv_filter_c1.c), not oneDNN, even with every
// primitive path enabled: the CNN's first layer (N 64, 1 -> 32, 28x28, 3x3)
// and a depthwise one with stride, padding and dilation, against the float64
// loops, dbias included.
static void test_conv_filter_gradient_with_one_input_channel_runs_the_direct_kernel(void **state) {
  (void)state;
  const conv_shape shapes[2] = {conv_shape_make(64, 1, 28, 28, 32, 3, 1, 0, 0, 1, 1),
                                conv_shape_make(4, 8, 19, 19, 16, 3, 2, 2, 1, 2, 8)};
  for (int k = 0; k < 2; ++k) {
    const conv_shape *s = &shapes[k];
    const int64_t xn = s->n * s->c * s->h * s->w, yn = s->n * s->o * s->oh * s->ow;
    const int64_t wn = s->o * s->kh * s->kw;
    const int64_t xs[4] = {s->n, s->c, s->h, s->w}, ys[4] = {s->n, s->o, s->oh, s->ow};
    const int64_t ws[4] = {s->o, 1, s->kh, s->kw};
    ts_rng rng = {31 + (uint64_t)k};
    double *x = dalloc(xn), *dy = dalloc(yn);
    ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, xn);
    ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, dy, yn);
    tsr_tensor *tx = tensor_of(4, xs, x), *tdy = tensor_of(4, ys, dy);
    tsr_tensor *tdw = tensor_empty(4, ws), *tdb = tensor_empty(1, &s->o);
    tsr_conv2d_attrs attrs = s->attrs;
    attrs.has_bias = 1;
    tsr_tensor *inputs[2] = {tdy, tx}, *outputs[2] = {tdw, tdb};
    const char *engine = NULL;
    assert_int_equal(
        tsr_op_engine_get(TSR_OP_CONV2D_BACKWARD_FILTER, 2, inputs, 2, outputs, &attrs, &engine),
        TSR_OK);
    assert_string_equal(engine, "own:filter-c1-direct");
    onednn_run_expect(TSR_OP_CONV2D_BACKWARD_FILTER, 2, inputs, 2, outputs, &attrs, ENGINE_OWN,
                      k == 0 ? "conv 64x1x28x28 -> 32 bwd-filter" : "depthwise bwd-filter");
    expect_filter_grads(s, x, dy, wn, yn, tdw, tdb, "direct bwd-filter", "direct dbias");
    tsr_tensor_release(tx);
    tsr_tensor_release(tdy);
    tsr_tensor_release(tdw);
    tsr_tensor_release(tdb);
    free(x);
    free(dy);
  }
}

// The filter gradient with several input channels, one group and a 3x3 or
// larger kernel runs on the own direct kernel (ref's conv_filter_direct.c),
// not oneDNN, even with every primitive path enabled: the CNN's second layer
// (N 64, 32 -> 64, 13x13, 121 positions: not a multiple of 8), odd channel
// counts that leave partial register tiles (45 rows, 13 output channels),
// asymmetric padding, a single image, stride and dilation, a 5x5 kernel,
// with dbias and without, against the oracle.
static void test_conv_filter_gradient_with_several_channels_runs_the_direct_kernel(void **state) {
  (void)state;
  const conv_shape shapes[] = {conv_shape_make(64, 32, 13, 13, 64, 3, 1, 0, 0, 1, 1),
                               conv_shape_make(3, 5, 9, 11, 13, 3, 1, 1, 1, 1, 1),
                               conv_shape_make(1, 7, 12, 10, 21, 3, 1, 2, 0, 1, 1),
                               conv_shape_make(4, 6, 19, 17, 10, 3, 2, 1, 2, 2, 1),
                               conv_shape_make(2, 3, 16, 16, 40, 5, 1, 2, 2, 1, 1)};
  const int count = (int)(sizeof(shapes) / sizeof(shapes[0]));
  for (int k = 0; k < 2 * count; ++k) {
    const conv_shape *s = &shapes[k / 2];
    const int with_bias = k % 2 == 0;
    const int64_t xn = s->n * s->c * s->h * s->w, yn = s->n * s->o * s->oh * s->ow;
    const int64_t wn = s->o * s->c * s->kh * s->kw;
    const int64_t xs[4] = {s->n, s->c, s->h, s->w}, ys[4] = {s->n, s->o, s->oh, s->ow};
    const int64_t ws[4] = {s->o, s->c, s->kh, s->kw};
    ts_rng rng = {41 + (uint64_t)k};
    double *x = dalloc(xn), *dy = dalloc(yn);
    ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, xn);
    ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, dy, yn);
    tsr_tensor *tx = tensor_of(4, xs, x), *tdy = tensor_of(4, ys, dy);
    tsr_tensor *tdw = tensor_empty(4, ws), *tdb = with_bias ? tensor_empty(1, &s->o) : NULL;
    tsr_conv2d_attrs attrs = s->attrs;
    attrs.has_bias = (uint32_t)with_bias;
    tsr_tensor *inputs[2] = {tdy, tx}, *outputs[2] = {tdw, tdb};
    const char *engine = NULL;
    assert_int_equal(tsr_op_engine_get(TSR_OP_CONV2D_BACKWARD_FILTER, 2, inputs, with_bias ? 2 : 1,
                                       outputs, &attrs, &engine),
                     TSR_OK);
    assert_string_equal(engine, "own:filter-direct");
    char label[96];
    snprintf(label, sizeof(label), "direct bwd-filter %lldx%lldx%lldx%lld -> %lld k%lld%s",
             (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w, (long long)s->o,
             (long long)s->kh, with_bias ? " dbias" : "");
    onednn_run_expect(TSR_OP_CONV2D_BACKWARD_FILTER, 2, inputs, with_bias ? 2 : 1, outputs, &attrs,
                      ENGINE_OWN, label);
    expect_filter_grads(s, x, dy, wn, yn, tdw, tdb, label, "direct dbias");
    tsr_tensor_release(tx);
    tsr_tensor_release(tdy);
    tsr_tensor_release(tdw);
    tsr_tensor_release(tdb);
    free(x);
    free(dy);
  }
}

// Runs CONV2D for |s| (with bias when |with_bias|, then |act|) on |device|, checking its
// engine is |engine| (exactly, NULL: any oneDNN primitive), and writes y to
// |got| (N * O * OH * OW values).
static void conv_forward_on(tsr_device *device, const conv_shape *s, int with_bias,
                            tsr_activation_t act, uint64_t seed, const char *engine_want,
                            const char *what, double *got) {
  const conv_dims d = conv_dims_of(s);
  ts_rng rng = {seed};
  double *x = dalloc(d.xn), *w = dalloc(d.wn), *bias = dalloc(s->o);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, d.xn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, w, d.wn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, bias, s->o);
  tsr_tensor *tx = ts_tensor(device, TSR_FLOAT32, 4, d.xs, x);
  tsr_tensor *tw = ts_tensor(device, TSR_FLOAT32, 4, d.ws, w);
  tsr_tensor *tb = ts_tensor(device, TSR_FLOAT32, 1, &s->o, bias);
  tsr_tensor *ty = tsr_tensor_empty(device, TSR_FLOAT32, 4, d.ys);
  TS_ASSERT_TENSOR(tx);
  TS_ASSERT_TENSOR(tw);
  TS_ASSERT_TENSOR(tb);
  TS_ASSERT_TENSOR(ty);
  tsr_conv2d_attrs attrs = s->attrs;
  attrs.has_bias = (uint32_t)with_bias;
  attrs.activation = act;
  tsr_tensor *inputs[3] = {tx, tw, tb};
  const int32_t ni = with_bias ? 3 : 2;
  const char *engine = NULL;
  assert_int_equal(tsr_op_engine_get(TSR_OP_CONV2D, ni, inputs, 1, &ty, &attrs, &engine),
                   TSR_OK);
  print_message("  %-44s engine=%s\n", what, engine);
  if (engine_want != NULL) {
    assert_string_equal(engine, engine_want);
  } else if (strncmp(engine, "onednn:", 7) != 0) {
    fail_msg("%s ran on %s, expected a oneDNN primitive", what, engine);
  }
  assert_int_equal(tsr_op_run(TSR_OP_CONV2D, ni, inputs, 1, &ty, &attrs), TSR_OK);
  assert_int_equal(ts_read(ty, got, d.yn), d.yn);
  double *want = dalloc(d.yn), *mag = dalloc(d.yn);
  conv_fwd_want(s, x, w, with_bias ? bias : NULL, act, want, mag);
  expect_close(what, got, want, mag, d.yn, 1e-5);
  tsr_tensor_release(tx);
  tsr_tensor_release(tw);
  tsr_tensor_release(tb);
  tsr_tensor_release(ty);
  free(x);
  free(w);
  free(bias);
  free(want);
  free(mag);
}

// The forward without an activation runs on the own direct kernels where
// they were measured faster than oneDNN (tsr_onednn_conv_problem_init): one
// input channel with at least 256K y elements on ref's conv_fwd_c1.c (the
// CNN's first layer, 676 positions: not a multiple of the 16-position
// register tile; 28x28 with padding; 13 output channels, a partial
// 4-channel tile), several channels unpadded on ref's conv_fwd_direct.c
// (the CNN's second layer, 121 positions: not a multiple of the 6-position
// tile; 40 and 13 output channels, partial 16-channel tiles; a single image;
// 48 channels at 11x11, 5x5), with bias and without, RELU, against the
// oracle. Padding, 16 channels, 1x1, a small one-channel output,
// another activation and groups stay on oneDNN.
static void test_conv_forward_runs_the_direct_kernels_where_faster(void **state) {
  (void)state;
  typedef struct {
    conv_shape s;
    const char *engine;  // NULL: a oneDNN primitive
  } routed;
  const routed cases[] = {
      {conv_shape_make(64, 1, 28, 28, 32, 3, 1, 0, 0, 1, 1), "own:conv-c1-direct"},
      {conv_shape_make(64, 1, 28, 28, 13, 3, 1, 1, 1, 1, 1), "own:conv-c1-direct"},
      {conv_shape_make(16, 1, 64, 64, 8, 2, 1, 0, 1, 1, 1), "own:conv-c1-direct"},
      {conv_shape_make(64, 32, 13, 13, 64, 3, 1, 0, 0, 1, 1), "own:conv-direct"},
      {conv_shape_make(5, 32, 13, 13, 40, 3, 1, 0, 0, 1, 1), "own:conv-direct"},
      {conv_shape_make(1, 33, 12, 12, 13, 3, 1, 0, 0, 1, 1), "own:conv-direct"},
      {conv_shape_make(4, 48, 11, 11, 24, 5, 1, 0, 0, 1, 1), "own:conv-direct"},
      {conv_shape_make(8, 32, 13, 13, 64, 3, 1, 1, 1, 1, 1), NULL},
      {conv_shape_make(8, 16, 13, 13, 64, 3, 1, 0, 0, 1, 1), NULL},
      {conv_shape_make(8, 32, 13, 13, 64, 1, 1, 0, 0, 1, 1), NULL},
      {conv_shape_make(8, 1, 32, 32, 16, 3, 1, 1, 1, 1, 1), NULL},
      {conv_shape_make(8, 32, 13, 13, 64, 3, 1, 0, 0, 1, 2), NULL},
  };
  const int count = (int)(sizeof(cases) / sizeof(cases[0]));
  for (int k = 0; k < 3 * count; ++k) {
    const routed *c = &cases[k / 3];
    const int with_bias = k % 3 != 1;
    const tsr_activation_t act = k % 3 == 2 ? TSR_ACTIVATION_RELU : TSR_ACTIVATION_NONE;
    const conv_shape *s = &c->s;
    const int64_t yn = s->n * s->o * s->oh * s->ow;
    char label[128];
    snprintf(label, sizeof(label), "fwd %lldx%lldx%lldx%lld -> %lld k%lld g%lld%s%s",
             (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w,
             (long long)s->o, (long long)s->kh, (long long)s->attrs.groups,
             with_bias ? " bias" : "", act == TSR_ACTIVATION_RELU ? " relu" : "");
    double *got = dalloc(yn);
    conv_forward_on(g_device, s, with_bias, act, 61 + (uint64_t)k, c->engine, label, got);
    free(got);
  }
  // With another activation, the CNN's layers stay on oneDNN.
  const conv_shape s = conv_shape_make(8, 32, 13, 13, 64, 3, 1, 0, 0, 1, 1);
  conv_case(&s, TSR_ACTIVATION_TANH, 0, 17, ENGINE_OWN, "conv 8x32x13x13 -> 64 tanh");
}

// The direct forward kernels give the same bits on one thread and on two:
// each output element is summed by one thread in a fixed order. Runs on
// contexts of its own (the group's is put back afterwards).
static void test_conv_direct_forwards_match_bitwise_on_one_and_two_threads(
    void **state) {
  (void)state;
  const conv_shape shapes[] = {conv_shape_make(64, 1, 28, 28, 32, 3, 1, 0, 0, 1, 1),
                               conv_shape_make(64, 32, 13, 13, 64, 3, 1, 0, 0, 1, 1),
                               conv_shape_make(5, 32, 13, 13, 40, 3, 1, 0, 0, 1, 1)};
  const char *engines[] = {"own:conv-c1-direct", "own:conv-direct", "own:conv-direct"};
  tsr_context_destroy(g_context);
  g_context = NULL;
  g_device = NULL;
  for (int k = 0; k < 3; ++k) {
    const conv_shape *s = &shapes[k];
    const int64_t yn = s->n * s->o * s->oh * s->ow;
    double *got[2] = {dalloc(yn), dalloc(yn)};
    for (int t = 0; t < 2; ++t) {
      tsr_context_options options;
      tsr_context_options_init(&options);
      options.plugin_path = TSR_TEST_ONEDNN_PATH;
      options.device = "onednn:0";
      options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
      options.fallback = TSR_FALLBACK_DENY;
      options.num_threads = t + 1;
      tsr_context *context = NULL;
      assert_int_equal(tsr_context_create(&options, &context), TSR_OK);
      assert_int_equal(tsr_context_thread_count(context), t + 1);
      conv_forward_on(tsr_context_default_device(context), s, 1, TSR_ACTIVATION_NONE,
                      71 + (uint64_t)k, engines[k],
                      t == 0 ? "fwd on 1 thread" : "fwd on 2 threads", got[t]);
      tsr_context_destroy(context);
    }
    assert_memory_equal(got[0], got[1], (size_t)yn * sizeof(double));
    free(got[0]);
    free(got[1]);
  }
  assert_int_equal(group_setup(NULL), 0);
}

// The plugin keeps the weights' blocked copy between calls, keyed by the
// buffer's storage version: writing the weights in place must be seen.
static void test_conv_weight_cache_follows_in_place_writes(void **state) {
  (void)state;
  const conv_shape s = conv_shape_make(8, 32, 28, 28, 64, 3, 1, 1, 1, 1, 1);
  const int64_t xn = s.n * s.c * s.h * s.w, wn = s.o * s.c * s.kh * s.kw;
  const int64_t yn = s.n * s.o * s.oh * s.ow;
  const int64_t xs[4] = {s.n, s.c, s.h, s.w}, ws[4] = {s.o, s.c, s.kh, s.kw},
                ys[4] = {s.n, s.o, s.oh, s.ow};
  ts_rng rng = {21};
  double *x = dalloc(xn), *w1 = dalloc(wn), *w2 = dalloc(wn), *dy = dalloc(yn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, xn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, w1, wn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, w2, wn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, dy, yn);
  tsr_tensor *tx = tensor_of(4, xs, x);
  tsr_tensor *tw = tensor_of(4, ws, w1);
  tsr_tensor *tw2 = tensor_of(4, ws, w2);
  tsr_tensor *tdy = tensor_of(4, ys, dy);
  tsr_tensor *ty = tensor_empty(4, ys);
  tsr_tensor *tdx = tensor_empty(4, xs);
  double *want = dalloc(yn), *mag = dalloc(yn), *got = dalloc(yn);
  double *dx_want = dalloc(xn), *dx_mag = dalloc(xn), *dx_got = dalloc(xn);
  tsr_tensor *fwd_in[2] = {tx, tw};
  tsr_tensor *bwd_in[2] = {tdy, tw};

  for (int round = 0; round < 3; ++round) {
    // Round 0: w1 (fills the cache); round 1: w2 written into the same
    // tensor (must not hit the stale copy); round 2: unchanged (a hit).
    if (round == 1) {
      const uint64_t before = tsr_tensor_storage_version(tw);
      TS_ASSERT_OK(tsr_copy_(tw, tw2));
      assert_true(tsr_tensor_storage_version(tw) != before);
    }
    const double *w = round == 0 ? w1 : w2;
    char label[96];
    snprintf(label, sizeof(label), "weight cache round %d fwd", round);
    run_onednn(TSR_OP_CONV2D, 2, fwd_in, 1, &ty, &s.attrs, label);
    conv_fwd_want(&s, x, w, NULL, TSR_ACTIVATION_NONE, want, mag);
    read_all(ty, got, yn);
    expect_close(label, got, want, mag, yn, 1e-5);

    snprintf(label, sizeof(label), "weight cache round %d bwd-data", round);
    run_onednn(TSR_OP_CONV2D_BACKWARD_DATA, 2, bwd_in, 1, &tdx, &s.attrs, label);
    conv_bwd_data_want(&s, dy, w, dx_want, dx_mag);
    read_all(tdx, dx_got, xn);
    expect_close(label, dx_got, dx_want, dx_mag, xn, 1e-5);
  }
  tsr_tensor *all[] = {tx, tw, tw2, tdy, ty, tdx};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) tsr_tensor_release(all[i]);
  double *bufs[] = {x, w1, w2, dy, want, mag, got, dx_want, dx_mag, dx_got};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); ++i) free(bufs[i]);
}

// A weight tensor freed and a new one allocated (the allocator may hand out
// the same block, with versions restarting at 0) must not hit the old copy.
static void test_conv_weight_cache_survives_buffer_reuse(void **state) {
  (void)state;
  const conv_shape s = conv_shape_make(8, 32, 28, 28, 64, 3, 1, 1, 1, 1, 1);
  const int64_t xn = s.n * s.c * s.h * s.w, wn = s.o * s.c * s.kh * s.kw;
  const int64_t yn = s.n * s.o * s.oh * s.ow;
  const int64_t xs[4] = {s.n, s.c, s.h, s.w}, ws[4] = {s.o, s.c, s.kh, s.kw},
                ys[4] = {s.n, s.o, s.oh, s.ow};
  ts_rng rng = {31};
  double *x = dalloc(xn), *w = dalloc(wn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, xn);
  tsr_tensor *tx = tensor_of(4, xs, x);
  tsr_tensor *ty = tensor_empty(4, ys);
  double *want = dalloc(yn), *mag = dalloc(yn), *got = dalloc(yn);
  for (int round = 0; round < 3; ++round) {
    ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, w, wn);
    tsr_tensor *tw = tensor_of(4, ws, w);
    tsr_tensor *inputs[2] = {tx, tw};
    char label[96];
    snprintf(label, sizeof(label), "weight buffer reuse round %d", round);
    run_onednn(TSR_OP_CONV2D, 2, inputs, 1, &ty, &s.attrs, label);
    conv_fwd_want(&s, x, w, NULL, TSR_ACTIVATION_NONE, want, mag);
    read_all(ty, got, yn);
    expect_close(label, got, want, mag, yn, 1e-5);
    tsr_tensor_release(tw);
  }
  tsr_tensor_release(tx);
  tsr_tensor_release(ty);
  free(x);
  free(w);
  free(want);
  free(mag);
  free(got);
}

// Threads running one convolution plan at once, each with its own weights
// (and its own stream): the plan's single cached copy is contended, and an
// execution that finds it in use by another key must reorder privately.
enum { STRESS_THREADS = 4, STRESS_ROUNDS = 6 };
typedef struct stress_arg {
  int index;
  const conv_shape *s;
  double *x, *w[2], *want[2];
  int failures;
  char message[256];
} stress_arg;

static void *stress_thread(void *p) {
  stress_arg *t = p;
  const conv_shape *s = t->s;
  const int64_t xs[4] = {s->n, s->c, s->h, s->w}, ws[4] = {s->o, s->c, s->kh, s->kw},
                ys[4] = {s->n, s->o, s->oh, s->ow};
  const int64_t yn = s->n * s->o * s->oh * s->ow;
  tsr_stream *stream = NULL;
  if (tsr_stream_create(g_device, 0, &stream) != TSR_OK ||
      tsr_stream_current_set(g_device, stream) != TSR_OK) {
    snprintf(t->message, sizeof(t->message), "stream: %s", tsr_last_error());
    t->failures = 1;
    return NULL;
  }
  tsr_tensor *tx = ts_tensor(g_device, TSR_FLOAT32, 4, xs, t->x);
  tsr_tensor *source[2] = {ts_tensor(g_device, TSR_FLOAT32, 4, ws, t->w[0]),
                           ts_tensor(g_device, TSR_FLOAT32, 4, ws, t->w[1])};
  tsr_tensor *tw = tsr_tensor_empty(g_device, TSR_FLOAT32, 4, ws);
  tsr_tensor *ty = tsr_tensor_empty(g_device, TSR_FLOAT32, 4, ys);
  double *got = calloc((size_t)yn, sizeof(double));
  for (int round = 0; round < STRESS_ROUNDS && t->failures == 0; ++round) {
    // The weights change in place every round: w[0], w[1], w[0], ...
    const int which = round % 2;
    tsr_tensor *inputs[2] = {tx, tw};
    if (tsr_copy_(tw, source[which]) != TSR_OK ||
        tsr_op_run(TSR_OP_CONV2D, 2, inputs, 1, &ty, &s->attrs) != TSR_OK ||
        ts_read(ty, got, yn) != yn) {
      snprintf(t->message, sizeof(t->message), "thread %d round %d: %s", t->index, round,
               tsr_last_error());
      t->failures = 1;
      break;
    }
    for (int64_t i = 0; i < yn; ++i) {
      if (fabs(got[i] - t->want[which][i]) > 1e-3) {
        snprintf(t->message, sizeof(t->message),
                 "thread %d round %d: element %lld is %g, expected %g", t->index, round,
                 (long long)i, got[i], t->want[which][i]);
        t->failures = 1;
        break;
      }
    }
  }
  free(got);
  tsr_tensor_release(tx);
  tsr_tensor_release(source[0]);
  tsr_tensor_release(source[1]);
  tsr_tensor_release(tw);
  tsr_tensor_release(ty);
  if (tsr_stream_current_set(g_device, NULL) != TSR_OK) t->failures = 1;
  tsr_stream_release(stream);
  return NULL;
}

static void test_conv_weight_cache_under_concurrent_executions(void **state) {
  (void)state;
  const conv_shape s = conv_shape_make(2, 16, 14, 14, 32, 3, 1, 1, 1, 1, 1);
  const int64_t xn = s.n * s.c * s.h * s.w, wn = s.o * s.c * s.kh * s.kw;
  const int64_t yn = s.n * s.o * s.oh * s.ow;
  stress_arg args[STRESS_THREADS];
  pthread_t threads[STRESS_THREADS];
  ts_rng rng = {51};
  for (int t = 0; t < STRESS_THREADS; ++t) {
    stress_arg *a = &args[t];
    memset(a, 0, sizeof(*a));
    a->index = t;
    a->s = &s;
    a->x = dalloc(xn);
    ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, a->x, xn);
    for (int k = 0; k < 2; ++k) {
      a->w[k] = dalloc(wn);
      ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, a->w[k], wn);
      a->want[k] = dalloc(yn);
      conv_fwd_want(&s, a->x, a->w[k], NULL, TSR_ACTIVATION_NONE, a->want[k], NULL);
    }
  }
  // One run first, so the threads share an existing plan.
  {
    tsr_tensor *tx = tensor_of(4, (int64_t[]){s.n, s.c, s.h, s.w}, args[0].x);
    tsr_tensor *tw = tensor_of(4, (int64_t[]){s.o, s.c, s.kh, s.kw}, args[0].w[0]);
    tsr_tensor *ty = tensor_empty(4, (int64_t[]){s.n, s.o, s.oh, s.ow});
    tsr_tensor *inputs[2] = {tx, tw};
    run_onednn(TSR_OP_CONV2D, 2, inputs, 1, &ty, &s.attrs, "conv shared by threads");
    tsr_tensor_release(tx);
    tsr_tensor_release(tw);
    tsr_tensor_release(ty);
  }
  for (int t = 0; t < STRESS_THREADS; ++t) {
    assert_int_equal(pthread_create(&threads[t], NULL, stress_thread, &args[t]), 0);
  }
  for (int t = 0; t < STRESS_THREADS; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < STRESS_THREADS; ++t) {
    if (args[t].failures)
      fail_msg("%s", args[t].message);
    free(args[t].x);
    for (int k = 0; k < 2; ++k) {
      free(args[t].w[k]);
      free(args[t].want[k]);
    }
  }
}

// oneDNN's own relu turns NaN into 0; the catalogue keeps NaN. A NaN (and
// infinities) in one row of a, or one pixel of x, must come out as the
// catalogue says: NaN stays NaN, -inf and negatives become +0.
static void test_relu_epilogues_keep_nan(void **state) {
  (void)state;
  enum { M = 64, K = 64, NN = 64 };
  double *a = dalloc(M * K), *b = dalloc(K * NN), *got = dalloc(M * NN);
  ts_rng rng = {41};
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, a, M * K);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, b, K * NN);
  a[0] = NAN;        // row 0: NaN everywhere
  a[K] = -INFINITY;  // row 1: +-inf by the sign of b[0][j]
  tsr_tensor *ta = tensor_of(2, (int64_t[]){M, K}, a);
  tsr_tensor *tb = tensor_of(2, (int64_t[]){K, NN}, b);
  tsr_tensor *tout = tensor_empty(2, (int64_t[]){M, NN});
  tsr_matmul_attrs attrs = {sizeof(attrs), 1.0, 0.0, TSR_ACTIVATION_RELU, 0};
  tsr_tensor *inputs[2] = {ta, tb};
  run_onednn(TSR_OP_MATMUL, 2, inputs, 1, &tout, &attrs, "matmul relu with NaN and -inf");
  read_all(tout, got, M * NN);
  for (int64_t j = 0; j < NN; ++j) {
    if (!isnan(got[j])) {
      fail_msg("matmul relu: row 0 column %lld is %g, not NaN", (long long)j, got[j]);
    }
    // -inf * b[0][j]: +inf for b < 0, -inf (relu: +0) for b > 0, NaN for 0.
    const double v = got[NN + j];
    const int ok = b[j] < 0 ? v == INFINITY : b[j] > 0 ? v == 0.0 && !signbit(v) : isnan(v);
    if (!ok)
      fail_msg("matmul relu: row 1 column %lld is %g for b %g", (long long)j, v, b[j]);
  }
  for (int64_t i = 2 * NN; i < M * NN; ++i) {
    if (!(got[i] >= 0.0) || signbit(got[i])) {
      fail_msg("matmul relu: element %lld is %g", (long long)i, got[i]);
    }
  }
  tsr_tensor_release(ta);
  tsr_tensor_release(tb);
  tsr_tensor_release(tout);

  // A 1x1 convolution with weights +1 and -1 passes x and -x through relu.
  const conv_shape s = conv_shape_make(2, 8, 16, 16, 2, 1, 1, 0, 0, 1, 1);
  const int64_t xn = s.n * s.c * s.h * s.w, yn = s.n * s.o * s.oh * s.ow;
  double *x = dalloc(xn), *w = dalloc(16), *y = dalloc(yn);
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, x, xn);
  for (int64_t c = 0; c < 8; ++c) {
    w[c] = c == 0 ? 1.0 : 0.0;
    w[8 + c] = c == 0 ? -1.0 : 0.0;
  }
  x[0] = NAN;
  x[1] = -INFINITY;
  tsr_tensor *tx = tensor_of(4, (int64_t[]){s.n, s.c, s.h, s.w}, x);
  tsr_tensor *tw = tensor_of(4, (int64_t[]){2, 8, 1, 1}, w);
  tsr_tensor *ty = tensor_empty(4, (int64_t[]){s.n, s.o, s.oh, s.ow});
  tsr_conv2d_attrs ca = s.attrs;
  ca.activation = TSR_ACTIVATION_RELU;
  tsr_tensor *cin[2] = {tx, tw};
  run_onednn(TSR_OP_CONV2D, 2, cin, 1, &ty, &ca, "conv relu with NaN and -inf");
  read_all(ty, y, yn);
  const int64_t plane = s.oh * s.ow;
  if (!isnan(y[0]) || !isnan(y[plane]))
    fail_msg("conv relu: NaN became %g and %g", y[0], y[plane]);
  if (y[1] != 0.0 || signbit(y[1]) || y[plane + 1] != INFINITY) {
    fail_msg("conv relu: -inf gave %g and %g, expected 0 and inf", y[1], y[plane + 1]);
  }
  for (int64_t p = 2; p < plane; ++p) {
    const double v = x[p];
    if (y[p] != (v > 0 ? v : 0.0) || y[plane + p] != (v < 0 ? -v : 0.0)) {
      fail_msg("conv relu: pixel %lld: %g and %g for x %g", (long long)p, y[p], y[plane + p], v);
    }
  }
  tsr_tensor_release(tx);
  tsr_tensor_release(tw);
  tsr_tensor_release(ty);
  free(a);
  free(b);
  free(got);
  free(x);
  free(w);
  free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_transposed_b_with_bias_and_relu),
      cmocka_unit_test(test_matmul_alpha_beta_epilogues),
      cmocka_unit_test(test_matmul_batch_broadcast),
      cmocka_unit_test(test_matmul_linear_gradients_run_the_own_gemm_where_faster),
      cmocka_unit_test(test_conv_3x3_all_directions),
      cmocka_unit_test(test_conv_channels_last),
      cmocka_unit_test(test_conv_grouped),
      cmocka_unit_test(test_conv_dilated_strided),
      cmocka_unit_test(test_conv_filter_gradient_with_one_input_channel_runs_the_direct_kernel),
      cmocka_unit_test(test_conv_filter_gradient_with_several_channels_runs_the_direct_kernel),
      cmocka_unit_test(test_conv_forward_runs_the_direct_kernels_where_faster),
      cmocka_unit_test(test_conv_weight_cache_follows_in_place_writes),
      cmocka_unit_test(test_conv_weight_cache_survives_buffer_reuse),
      cmocka_unit_test(test_conv_weight_cache_under_concurrent_executions),
      cmocka_unit_test(test_relu_epilogues_keep_nan),
      // Last: it replaces the group's context.
      cmocka_unit_test(test_conv_direct_forwards_match_bitwise_on_one_and_two_threads),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
