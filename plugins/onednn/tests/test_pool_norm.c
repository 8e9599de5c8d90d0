// POOL2D(_BACKWARD), LAYER_NORM(_BACKWARD) and BATCH_NORM(_BACKWARD) on the
// oneDNN plugin, at the sizes of a small CNN (N = 32, C = 16, 28 x 28),
// checked against the conformance oracle (pooling) and float64 loops
// written here (the norms, whose error scales come from their intermediate
// values).
//
// The plugin runs an op on a oneDNN primitive or on its own kernel; the
// results must agree with the catalogue either way. Every op's engine is
// checked before it runs (tsr_op_engine_get), so a case that should
// reach oneDNN cannot pass by silently running the own kernel (and one that
// must stay on the own kernel, such as MAX pooling with its catalogue
// indices, does). Pooling and batch norm run in NCHW and in NHWC (a
// permuted view of channels-last memory): oneDNN has jit kernels for NHWC
// on every x86 ISA, for NCHW pooling only with AVX-512, for NCHW batch norm
// none (the plugin keeps its own kernels where oneDNN has no jit one).
//
// Compile definition: TSR_TEST_ONEDNN_PATH (the plugin .so).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onednn_test_util.h"
#include "oracle/oracle.h"
#include "tessera/tessera.h"
#include "test_support.h"

enum { N = 32, C = 16, H = 28, W = 28 };
#define NUMEL ((int64_t)N * C * H * W)

// Runs |op| after checking the engine its plan uses.
#define run_expect(op, ni, in, no, out, attrs, want) \
  onednn_run_expect(op, ni, in, no, out, attrs, want, NULL)

static tsr_tensor *make(int32_t rank, const int64_t *sizes, const double *values) {
  tsr_tensor *t = ts_tensor(g_device, TSR_FLOAT32, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

static tsr_tensor *empty(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  tsr_tensor *t = tsr_tensor_empty(g_device, dtype, rank, sizes);
  TS_ASSERT_TENSOR(t);
  return t;
}

// A 4-d tensor [N, C, H, W] of |values| (row-major in that order): plain,
// or (|nhwc|) a permuted view of channels-last memory [N, H, W, C].
static tsr_tensor *make4(const int64_t *sizes, const double *values, int nhwc) {
  if (!nhwc)
    return make(4, sizes, values);
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  const int64_t nhwc_sizes[4] = {n, h, w, c};
  double *packed = dalloc(n * c * h * w);
  for (int64_t i = 0; i < n * c * h * w; ++i) {
    const int64_t iw = i % w, ih = i / w % h, ic = i / (w * h) % c, in = i / (w * h * c);
    packed[((in * h + ih) * w + iw) * c + ic] = values[i];
  }
  tsr_tensor *base = make(4, nhwc_sizes, packed);
  free(packed);
  static const int32_t to_nchw[4] = {0, 3, 1, 2};
  tsr_tensor *view = tsr_permute(base, 4, to_nchw);
  tsr_tensor_release(base);
  TS_ASSERT_TENSOR(view);
  return view;
}

static tsr_tensor *empty4(const int64_t *sizes, int nhwc) {
  if (!nhwc)
    return empty(TSR_FLOAT32, 4, sizes);
  const int64_t nhwc_sizes[4] = {sizes[0], sizes[2], sizes[3], sizes[1]};
  tsr_tensor *base = empty(TSR_FLOAT32, 4, nhwc_sizes);
  static const int32_t to_nchw[4] = {0, 3, 1, 2};
  tsr_tensor *view = tsr_permute(base, 4, to_nchw);
  tsr_tensor_release(base);
  TS_ASSERT_TENSOR(view);
  return view;
}

static double *random_values(uint64_t seed, int64_t n, double lo, double hi) {
  ts_rng rng = {seed};
  double *v = dalloc(n);
  ts_rng_fill(&rng, TSR_FLOAT32, lo, hi, v, n);
  return v;
}

static double *read_back(const tsr_tensor *t) {
  const int64_t n = tsr_tensor_numel(t);
  double *v = dalloc(n);
  assert_int_equal(ts_read(t, v, n), n);
  return v;
}

// Checks |t| against |want| within |rel| of each element's magnitude bound
// |mag| (the sum of absolute terms that made it; |want| itself when NULL)
// plus |rel| of the largest |want| as an absolute floor.
static void check(const char *what, const tsr_tensor *t, const double *want, const double *mag,
                  int64_t n, double rel) {
  double *got = read_back(t);
  double peak = 0;
  for (int64_t i = 0; i < n; ++i) peak = fmax(peak, fabs(want[i]));
  double *tol = dalloc(n);
  for (int64_t i = 0; i < n; ++i) tol[i] = rel * (mag ? mag[i] : fabs(want[i])) + rel * 1e-2 * peak;
  ts_expect_values(what, TSR_FLOAT32, got, want, tol, n, 0, 1e-30);
  free(tol);
  free(got);
}

// --- pooling -----------------------------------------------------------------------

typedef struct pool_case {
  const char *name;
  int64_t kernel, stride, pad_before, pad_after, dilation;
  uint32_t ceil_mode, count_include_pad;
  engine_kind nchw_engine;  // where AVG runs (forward and backward) on NCHW
  engine_kind nhwc_engine;  // and on NHWC
} pool_case;

// NCHW average pooling reaches oneDNN's jit kernel only with AVX-512.
static const pool_case kPoolCases[] = {
    {"3x3/2 pad 1", 3, 2, 1, 1, 1, 0, 0, ENGINE_ANY, ENGINE_ONEDNN},
    {"3x3/2 pad 1 count_include_pad", 3, 2, 1, 1, 1, 0, 1, ENGINE_ANY, ENGINE_ONEDNN},
    {"3x3/2 pad 1 ceil", 3, 2, 1, 1, 1, 1, 0, ENGINE_ANY, ENGINE_ONEDNN},
    // The last ceil-mode window hangs past the padding: oneDNN would divide
    // by 9 where the catalogue divides by the 6 taps inside, so own kernel.
    {"3x3/2 pad 1 ceil count_include_pad", 3, 2, 1, 1, 1, 1, 1, ENGINE_OWN, ENGINE_OWN},
    // Ceil mode where no window passes the padding: oneDNN.
    {"2x2/2 pad 0/1 ceil count_include_pad", 2, 2, 0, 1, 1, 1, 1, ENGINE_ANY, ENGINE_ONEDNN},
    {"2x2/2", 2, 2, 0, 0, 1, 0, 0, ENGINE_ANY, ENGINE_ONEDNN},
    // Dilation: oneDNN's jit pooling has none, only plain C++ and reference
    // kernels, which the plugin declines (no faster than its own).
    {"3x3/1 pad 2 dilation 2", 3, 1, 2, 2, 2, 0, 0, ENGINE_OWN, ENGINE_OWN},
    {"3x3/1 pad 2 dilation 2 count_include_pad", 3, 1, 2, 2, 2, 0, 1, ENGINE_OWN, ENGINE_OWN},
};

static int64_t pool_out_size(const pool_case *p, int64_t in) {
  const int64_t span = in + p->pad_before + p->pad_after - (p->dilation * (p->kernel - 1) + 1);
  if (!p->ceil_mode)
    return span / p->stride + 1;
  int64_t out = (span + p->stride - 1) / p->stride + 1;
  if ((out - 1) * p->stride >= in + p->pad_before)
    --out;
  return out;
}

static tsr_pool2d_attrs pool_attrs(const pool_case *p, tsr_pool_kind_t kind) {
  tsr_pool2d_attrs a;
  memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.kind = kind;
  a.ceil_mode = p->ceil_mode;
  a.count_include_pad = p->count_include_pad;
  for (int d = 0; d < 2; ++d) {
    a.kernel[d] = p->kernel;
    a.stride[d] = p->stride;
    a.pad_before[d] = p->pad_before;
    a.pad_after[d] = p->pad_after;
    a.dilation[d] = p->dilation;
  }
  return a;
}

// The conformance oracle's |op| (POOL2D or POOL2D_BACKWARD of AVG or a MAX
// forward) with |attrs| on the NCHW values |in| of |in_sizes| (their absolute
// values when |absolute|: the magnitudes of the terms) into |out| of
// |out_sizes|, and a MAX forward's indices into |out_index|.
static void pool_oracle(int32_t op, const tsr_pool2d_attrs *attrs, const int64_t *in_sizes,
                        const double *in, const int64_t *out_sizes, double *out, int absolute,
                        int64_t *out_index) {
  const int64_t n = in_sizes[0] * in_sizes[1] * in_sizes[2] * in_sizes[3];
  double *v = dalloc(n);
  for (int64_t i = 0; i < n; ++i) v[i] = absolute ? fabs(in[i]) : in[i];
  tsr_oracle_tensor x = tsr_oracle_tensor_over(TSR_FLOAT32, 4, in_sizes, v), y[2];
  y[0] = tsr_oracle_tensor_over(TSR_FLOAT32, 4, out_sizes, out);
  assert_int_equal(tsr_oracle_tensor_create(TSR_INT64, 4, out_sizes, &y[1]), 0);
  const int32_t outputs = out_index != NULL ? 2 : 1;
  assert_int_equal(tsr_oracle_compute_values(op, attrs, 1, &x, outputs, y), TSR_OK);
  for (int64_t i = 0; out_index != NULL && i < y[1].numel; ++i) out_index[i] = y[1].iv[i];
  tsr_oracle_tensor_destroy(&y[1]);
  free(v);
}

static void avg_pool_layout(int nhwc) {
  const int64_t x_sizes[4] = {N, C, H, W};
  double *x = random_values(11, NUMEL, -2, 2);
  tsr_tensor *xt = make4(x_sizes, x, nhwc);
  for (size_t k = 0; k < sizeof(kPoolCases) / sizeof(kPoolCases[0]); ++k) {
    const pool_case *p = &kPoolCases[k];
    const engine_kind engine = nhwc ? p->nhwc_engine : p->nchw_engine;
    const int64_t oh = pool_out_size(p, H), ow = pool_out_size(p, W);
    const int64_t y_sizes[4] = {N, C, oh, ow}, yn = (int64_t)N * C * oh * ow;
    const tsr_pool2d_attrs attrs = pool_attrs(p, TSR_POOL_AVG);
    print_message("avg pool %s %s: %lldx%lld\n", nhwc ? "NHWC" : "NCHW", p->name, (long long)oh,
                  (long long)ow);

    // Forward.
    double *want = dalloc(yn);
    double *mag = dalloc(yn);
    pool_oracle(TSR_OP_POOL2D, &attrs, x_sizes, x, y_sizes, want, 0, NULL);
    pool_oracle(TSR_OP_POOL2D, &attrs, x_sizes, x, y_sizes, mag, 1, NULL);
    tsr_tensor *yt = empty4(y_sizes, nhwc);
    run_expect(TSR_OP_POOL2D, 1, &xt, 1, &yt, &attrs, engine);
    check("avg pool y", yt, want, mag, yn, 1e-5);
    tsr_tensor_release(yt);

    // Backward.
    double *dy = random_values(12 + k, yn, -1, 1);
    double *dx_want = dalloc(NUMEL);
    double *dx_mag = dalloc(NUMEL);
    pool_oracle(TSR_OP_POOL2D_BACKWARD, &attrs, y_sizes, dy, x_sizes, dx_want, 0, NULL);
    pool_oracle(TSR_OP_POOL2D_BACKWARD, &attrs, y_sizes, dy, x_sizes, dx_mag, 1, NULL);
    tsr_tensor *dyt = make4(y_sizes, dy, nhwc);
    tsr_tensor *dxt = empty4(x_sizes, nhwc);
    run_expect(TSR_OP_POOL2D_BACKWARD, 1, &dyt, 1, &dxt, &attrs, engine);
    check("avg pool dx", dxt, dx_want, dx_mag, NUMEL, 1e-5);
    tsr_tensor_release(dyt);
    tsr_tensor_release(dxt);
    free(dy);
    free(dx_want);
    free(dx_mag);
    free(want);
    free(mag);
  }
  tsr_tensor_release(xt);
  free(x);
}

static void test_avg_pool_nchw(void **state) {
  (void)state;
  avg_pool_layout(0);
}

static void test_avg_pool_nhwc(void **state) {
  (void)state;
  avg_pool_layout(1);
}

// MAX always returns the catalogue's indices, so it stays on the own kernel;
// checked here because a CNN runs it on this plugin all the same. Integer
// inputs make ties, which must go to the first maximum in window order.
static void test_max_pool_forward(void **state) {
  (void)state;
  const int64_t x_sizes[4] = {N, C, H, W};
  double *x = random_values(21, NUMEL, -4, 4);
  for (int64_t i = 0; i < NUMEL; ++i) x[i] = floor(x[i]);
  tsr_tensor *xt = make(4, x_sizes, x);
  static const pool_case kMaxCases[] = {
      {"2x2/2", 2, 2, 0, 0, 1, 0, 0, ENGINE_OWN, ENGINE_OWN},
      {"3x3/2 pad 1 ceil", 3, 2, 1, 1, 1, 1, 0, ENGINE_OWN, ENGINE_OWN},
  };
  for (size_t k = 0; k < sizeof(kMaxCases) / sizeof(kMaxCases[0]); ++k) {
    const pool_case *p = &kMaxCases[k];
    const int64_t oh = pool_out_size(p, H), ow = pool_out_size(p, W);
    const int64_t y_sizes[4] = {N, C, oh, ow}, yn = (int64_t)N * C * oh * ow;
    const tsr_pool2d_attrs attrs = pool_attrs(p, TSR_POOL_MAX);
    double *want = dalloc(yn);
    int64_t *want_index = calloc((size_t)yn, sizeof(int64_t));
    int64_t *got_index = calloc((size_t)yn, sizeof(int64_t));
    assert_non_null(want_index);
    assert_non_null(got_index);
    pool_oracle(TSR_OP_POOL2D, &attrs, x_sizes, x, y_sizes, want, 0, want_index);
    tsr_tensor *outs[2] = {empty(TSR_FLOAT32, 4, y_sizes), empty(TSR_INT64, 4, y_sizes)};
    run_expect(TSR_OP_POOL2D, 1, &xt, 2, outs, &attrs, ENGINE_OWN);
    check("max pool y", outs[0], want, NULL, yn, 0);
    assert_int_equal(ts_read_i64(outs[1], got_index, yn), yn);
    for (int64_t i = 0; i < yn; ++i) {
      if (got_index[i] != want_index[i]) {
        fail_msg("max pool %s: indices[%lld] is %lld, expected %lld", p->name, (long long)i,
                 (long long)got_index[i], (long long)want_index[i]);
      }
    }
    tsr_tensor_release(outs[0]);
    tsr_tensor_release(outs[1]);
    free(want);
    free(want_index);
    free(got_index);
  }
  tsr_tensor_release(xt);
  free(x);
}

// --- layer norm ----------------------------------------------------------------------

// x [N, C, H * W] normalised over [axis, 3), with and without affine:
// forward against float64, then backward from the forward's own statistics
// (what a training step passes).
static void layer_norm_case(int32_t axis, uint32_t affine) {
  const int64_t sizes[3] = {N, C, (int64_t)H * W};
  const int64_t rows = axis == 2 ? (int64_t)N * C : N, m = NUMEL / rows;
  int64_t stat_sizes[3] = {N, axis == 2 ? C : 1, 1};
  const int32_t affine_rank = 3 - axis;
  const int64_t *affine_sizes = sizes + axis;
  print_message("layer norm axis %d%s: %lld rows of %lld\n", (int)axis, affine ? " affine" : "",
                (long long)rows, (long long)m);
  const double eps = 1e-5;
  const tsr_layer_norm_attrs attrs = {sizeof(attrs), axis, affine, eps};
  double *x = random_values(31 + (uint64_t)axis, NUMEL, -2, 3);
  double *gamma = random_values(33, m, 0.5, 1.5);
  double *beta = random_values(34, m, -0.5, 0.5);
  if (!affine) {
    for (int64_t k = 0; k < m; ++k) gamma[k] = 1, beta[k] = 0;
  }
  // Forward.
  double *mean = dalloc(rows), *rstd = dalloc(rows), *y = dalloc(NUMEL), *y_mag = dalloc(NUMEL);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x + r * m;
    double s = 0, q = 0;
    for (int64_t k = 0; k < m; ++k) s += xr[k];
    mean[r] = s / (double)m;
    for (int64_t k = 0; k < m; ++k) q += (xr[k] - mean[r]) * (xr[k] - mean[r]);
    rstd[r] = 1 / sqrt(q / (double)m + (double)(float)eps);
    for (int64_t k = 0; k < m; ++k) {
      const double xhat = (xr[k] - mean[r]) * rstd[r];
      y[r * m + k] = xhat * gamma[k] + beta[k];
      y_mag[r * m + k] = (fabs(xhat) + 1) * fabs(gamma[k]) + fabs(beta[k]);
    }
  }
  tsr_tensor *xt = make(3, sizes, x);
  tsr_tensor *gt = make(affine_rank, affine_sizes, gamma);
  tsr_tensor *bt = make(affine_rank, affine_sizes, beta);
  tsr_tensor *fwd_in[3] = {xt, gt, bt};
  tsr_tensor *fwd_out[3] = {empty(TSR_FLOAT32, 3, sizes), empty(TSR_FLOAT32, 3, stat_sizes),
                            empty(TSR_FLOAT32, 3, stat_sizes)};
  run_expect(TSR_OP_LAYER_NORM, affine ? 3 : 1, fwd_in, 3, fwd_out, &attrs, ENGINE_ONEDNN);
  check("layer norm y", fwd_out[0], y, y_mag, NUMEL, 1e-5);
  check("layer norm mean", fwd_out[1], mean, NULL, rows, 1e-5);
  check("layer norm rstd", fwd_out[2], rstd, NULL, rows, 1e-5);

  // Backward from the device's statistics, read back exactly.
  double *dev_mean = read_back(fwd_out[1]), *dev_rstd = read_back(fwd_out[2]);
  double *dy = random_values(35 + (uint64_t)axis, NUMEL, -1, 1);
  double *dx = dalloc(NUMEL), *dx_mag = dalloc(NUMEL);
  double *dgamma = dalloc(m), *dbeta = dalloc(m), *dgamma_mag = dalloc(m), *dbeta_mag = dalloc(m);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x + r * m, *dyr = dy + r * m;
    double mg = 0, mgx = 0, mag_g = 0, mag_gx = 0;
    for (int64_t k = 0; k < m; ++k) {
      const double xhat = (xr[k] - dev_mean[r]) * dev_rstd[r], g = dyr[k] * gamma[k];
      mg += g;
      mgx += g * xhat;
      mag_g += fabs(g);
      mag_gx += fabs(g * xhat);
      dgamma[k] += dyr[k] * xhat;
      dbeta[k] += dyr[k];
      dgamma_mag[k] += fabs(dyr[k] * xhat);
      dbeta_mag[k] += fabs(dyr[k]);
    }
    mg /= (double)m, mgx /= (double)m, mag_g /= (double)m, mag_gx /= (double)m;
    for (int64_t k = 0; k < m; ++k) {
      const double xhat = (xr[k] - dev_mean[r]) * dev_rstd[r], g = dyr[k] * gamma[k];
      dx[r * m + k] = dev_rstd[r] * (g - mg - xhat * mgx);
      dx_mag[r * m + k] = dev_rstd[r] * (fabs(g) + mag_g + fabs(xhat) * mag_gx);
    }
  }
  tsr_tensor *dyt = make(3, sizes, dy);
  tsr_tensor *bwd_in[5] = {dyt, xt, fwd_out[1], fwd_out[2], gt};
  tsr_tensor *bwd_out[3] = {empty(TSR_FLOAT32, 3, sizes),
                            empty(TSR_FLOAT32, affine_rank, affine_sizes),
                            empty(TSR_FLOAT32, affine_rank, affine_sizes)};
  run_expect(TSR_OP_LAYER_NORM_BACKWARD, affine ? 5 : 4, bwd_in, affine ? 3 : 1, bwd_out, &attrs,
             ENGINE_ONEDNN);
  check("layer norm dx", bwd_out[0], dx, dx_mag, NUMEL, 1e-4);
  if (affine) {
    check("layer norm dgamma", bwd_out[1], dgamma, dgamma_mag, m, 1e-4);
    check("layer norm dbeta", bwd_out[2], dbeta, dbeta_mag, m, 1e-4);
  }
  for (int i = 0; i < 3; ++i) {
    tsr_tensor_release(fwd_out[i]);
    tsr_tensor_release(bwd_out[i]);
  }
  tsr_tensor_release(xt);
  tsr_tensor_release(gt);
  tsr_tensor_release(bt);
  tsr_tensor_release(dyt);
  double *frees[] = {x,        gamma, beta, mean,   rstd,   y,     y_mag,      dev_mean,
                     dev_rstd, dy,    dx,   dx_mag, dgamma, dbeta, dgamma_mag, dbeta_mag};
  for (size_t i = 0; i < sizeof(frees) / sizeof(frees[0]); ++i) free(frees[i]);
}

static void test_layer_norm_last_axis(void **state) {
  (void)state;
  layer_norm_case(2, 1);
  layer_norm_case(2, 0);
}

static void test_layer_norm_two_axes(void **state) {
  (void)state;
  layer_norm_case(1, 1);
  layer_norm_case(1, 0);
}

// --- batch norm ------------------------------------------------------------------------

#define BN_M ((int64_t)N * H * W)

// Channel c's value of x [N, C, H, W] number k < BN_M.
static double bn_at(const double *x, int64_t c, int64_t k) {
  return x[((k / (H * W)) * C + c) * (H * W) + k % (H * W)];
}

// Forward (training or inference) with separate or in-place running
// statistics, then the backward from the forward's saved statistics. oneDNN
// has jit batch norm for NHWC only; NCHW stays on the own kernel.
static void batch_norm_case(uint32_t training, int in_place, int nhwc) {
  print_message("batch norm %s %s, running statistics %s\n", nhwc ? "NHWC" : "NCHW",
                training ? "training" : "inference", in_place ? "in place" : "separate");
  const engine_kind engine = nhwc ? ENGINE_ONEDNN : ENGINE_OWN;
  const int64_t sizes[4] = {N, C, H, W}, ch[1] = {C};
  const double eps = 1e-5, momentum = 0.1;
  const tsr_batch_norm_attrs attrs = {sizeof(attrs), eps, momentum, training, 0};
  double *x = random_values(41 + training, NUMEL, -2, 3);
  double *gamma = random_values(42, C, 0.5, 1.5), *beta = random_values(43, C, -0.5, 0.5);
  double *rm = random_values(44, C, -0.5, 0.5), *rv = random_values(45, C, 0.5, 2);
  const double eps_f = (double)(float)eps, mom_f = (double)(float)momentum;
  double mean[C], invstd[C], rm_out[C], rv_out[C], mean_mag[C], rm_mag[C], rv_mag[C];
  double *y = dalloc(NUMEL), *y_mag = dalloc(NUMEL);
  for (int64_t c = 0; c < C; ++c) {
    if (training) {
      double s = 0, a = 0, q = 0;
      for (int64_t k = 0; k < BN_M; ++k) s += bn_at(x, c, k), a += fabs(bn_at(x, c, k));
      mean[c] = s / (double)BN_M;
      mean_mag[c] = a / (double)BN_M;
      for (int64_t k = 0; k < BN_M; ++k) q += pow(bn_at(x, c, k) - mean[c], 2);
      const double var = q / (double)BN_M;
      invstd[c] = 1 / sqrt(var + eps_f);
      rm_out[c] = (1 - mom_f) * rm[c] + mom_f * mean[c];
      rv_out[c] = (1 - mom_f) * rv[c] + mom_f * q / (double)(BN_M - 1);
      rm_mag[c] = fabs((1 - mom_f) * rm[c]) + fabs(mom_f * mean[c]) + mom_f * mean_mag[c];
      rv_mag[c] = fabs((1 - mom_f) * rv[c]) + fabs(mom_f * q / (double)(BN_M - 1));
    } else {
      mean[c] = rm[c];
      mean_mag[c] = fabs(rm[c]);
      invstd[c] = 1 / sqrt(rv[c] + eps_f);
      rm_out[c] = rm[c], rv_out[c] = rv[c];
      rm_mag[c] = fabs(rm[c]), rv_mag[c] = fabs(rv[c]);
    }
    for (int64_t k = 0; k < BN_M; ++k) {
      const int64_t i = ((k / (H * W)) * C + c) * (H * W) + k % (H * W);
      const double xhat = (x[i] - mean[c]) * invstd[c];
      y[i] = xhat * gamma[c] + beta[c];
      y_mag[i] = (fabs(xhat) + 1 + (fabs(x[i]) + mean_mag[c]) * invstd[c]) * fabs(gamma[c]) +
                 fabs(beta[c]);
    }
  }
  tsr_tensor *xt = make4(sizes, x, nhwc), *gt = make(1, ch, gamma), *bt = make(1, ch, beta);
  tsr_tensor *rmt = make(1, ch, rm), *rvt = make(1, ch, rv);
  tsr_tensor *fwd_in[5] = {xt, gt, bt, rmt, rvt};
  tsr_tensor *fwd_out[5] = {empty4(sizes, nhwc), empty(TSR_FLOAT32, 1, ch),
                            empty(TSR_FLOAT32, 1, ch), NULL, NULL};
  fwd_out[3] = in_place ? tsr_tensor_retain(rmt) : empty(TSR_FLOAT32, 1, ch);
  fwd_out[4] = in_place ? tsr_tensor_retain(rvt) : empty(TSR_FLOAT32, 1, ch);
  run_expect(TSR_OP_BATCH_NORM, 5, fwd_in, 5, fwd_out, &attrs, engine);
  check("batch norm y", fwd_out[0], y, y_mag, NUMEL, 1e-5);
  check("batch norm save_mean", fwd_out[1], mean, mean_mag, C, 1e-5);
  check("batch norm save_invstd", fwd_out[2], invstd, NULL, C, 1e-5);
  check("batch norm running_mean_out", fwd_out[3], rm_out, rm_mag, C, 1e-5);
  check("batch norm running_var_out", fwd_out[4], rv_out, rv_mag, C, 1e-5);
  if (in_place) {
    // The input tensors are the outputs: they now hold the new values.
    check("batch norm running_mean (in place)", rmt, rm_out, rm_mag, C, 1e-5);
  }

  // Backward from the device's saved statistics.
  double *dev_mean = read_back(fwd_out[1]), *dev_invstd = read_back(fwd_out[2]);
  double *dy = random_values(46 + training, NUMEL, -1, 1);
  double *dx = dalloc(NUMEL), *dx_mag = dalloc(NUMEL);
  double dgamma[C], dbeta[C], dgamma_mag[C], dbeta_mag[C];
  for (int64_t c = 0; c < C; ++c) {
    double sb = 0, sg = 0, ab = 0, ag = 0;
    for (int64_t k = 0; k < BN_M; ++k) {
      const double xhat = (bn_at(x, c, k) - dev_mean[c]) * dev_invstd[c], g = bn_at(dy, c, k);
      sb += g, sg += g * xhat, ab += fabs(g), ag += fabs(g * xhat);
    }
    dbeta[c] = sb, dgamma[c] = sg, dbeta_mag[c] = ab, dgamma_mag[c] = ag;
    for (int64_t k = 0; k < BN_M; ++k) {
      const int64_t i = ((k / (H * W)) * C + c) * (H * W) + k % (H * W);
      const double xhat = (x[i] - dev_mean[c]) * dev_invstd[c], scale = gamma[c] * dev_invstd[c];
      if (training) {
        dx[i] = scale * (dy[i] - sb / (double)BN_M - xhat * sg / (double)BN_M);
        dx_mag[i] =
            fabs(scale) * (fabs(dy[i]) + ab / (double)BN_M + fabs(xhat) * ag / (double)BN_M);
      } else {
        dx[i] = scale * dy[i];
        dx_mag[i] = fabs(dx[i]);
      }
    }
  }
  tsr_tensor *dyt = make4(sizes, dy, nhwc);
  tsr_tensor *bwd_in[5] = {dyt, xt, gt, fwd_out[1], fwd_out[2]};
  tsr_tensor *bwd_out[3] = {empty4(sizes, nhwc), empty(TSR_FLOAT32, 1, ch),
                            empty(TSR_FLOAT32, 1, ch)};
  // oneDNN 3.x keeps the backward on the own kernel (norm.c says why).
  run_expect(TSR_OP_BATCH_NORM_BACKWARD, 5, bwd_in, 3, bwd_out, &attrs,
             TSR_TEST_DNNL_MAJOR >= 3 ? ENGINE_OWN : engine);
  check("batch norm dx", bwd_out[0], dx, dx_mag, NUMEL, 1e-4);
  check("batch norm dgamma", bwd_out[1], dgamma, dgamma_mag, C, 1e-4);
  check("batch norm dbeta", bwd_out[2], dbeta, dbeta_mag, C, 1e-4);

  for (int i = 0; i < 5; ++i) tsr_tensor_release(fwd_out[i]);
  for (int i = 0; i < 3; ++i) tsr_tensor_release(bwd_out[i]);
  tsr_tensor *tensors[] = {xt, gt, bt, rmt, rvt, dyt};
  for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]); ++i) tsr_tensor_release(tensors[i]);
  double *frees[] = {x, gamma, beta, rm, rv, y, y_mag, dev_mean, dev_invstd, dy, dx, dx_mag};
  for (size_t i = 0; i < sizeof(frees) / sizeof(frees[0]); ++i) free(frees[i]);
}

static void test_batch_norm_training(void **state) {
  (void)state;
  for (int nhwc = 0; nhwc < 2; ++nhwc) {
    batch_norm_case(1, 0, nhwc);
    batch_norm_case(1, 1, nhwc);
  }
}

static void test_batch_norm_inference(void **state) {
  (void)state;
  for (int nhwc = 0; nhwc < 2; ++nhwc) {
    batch_norm_case(0, 0, nhwc);
    batch_norm_case(0, 1, nhwc);
  }
}

// --- determinism -------------------------------------------------------------------

// The plugin reports these plans as bit-reproducible (TSR_PLAN_INFO_
// DETERMINISTIC): two runs on the same inputs must give the same bits,
// reductions (batch norm statistics, dgamma, dbeta) included.
static void outputs_bits_get(tsr_tensor *const *outputs, int32_t count, float **out) {
  for (int32_t i = 0; i < count; ++i) {
    const int64_t n = tsr_tensor_numel(outputs[i]);
    out[i] = malloc((size_t)n * sizeof(float));
    assert_non_null(out[i]);
    TS_ASSERT_OK(tsr_tensor_to_host(outputs[i], out[i], (size_t)n * sizeof(float)));
  }
}

static void run_twice_same_bits(const char *what, tsr_op_id_t op, int32_t num_inputs,
                                tsr_tensor *const *inputs, int32_t num_outputs,
                                tsr_tensor *const *outputs, const void *attrs) {
  // oneDNN 3.x keeps batch-norm backward on the own kernel (norm.c says why).
  const engine_kind want =
      op == TSR_OP_BATCH_NORM_BACKWARD && TSR_TEST_DNNL_MAJOR >= 3 ? ENGINE_OWN : ENGINE_ONEDNN;
  float *first[5], *second[5];
  run_expect(op, num_inputs, inputs, num_outputs, outputs, attrs, want);
  outputs_bits_get(outputs, num_outputs, first);
  run_expect(op, num_inputs, inputs, num_outputs, outputs, attrs, want);
  outputs_bits_get(outputs, num_outputs, second);
  for (int32_t i = 0; i < num_outputs; ++i) {
    const int64_t n = tsr_tensor_numel(outputs[i]);
    if (memcmp(first[i], second[i], (size_t)n * sizeof(float)) != 0) {
      fail_msg("%s: output %d differs between two runs", what, (int)i);
    }
    free(first[i]);
    free(second[i]);
  }
}

static void test_repeatable(void **state) {
  (void)state;
  const int64_t sizes[4] = {N, C, H, W}, ch[1] = {C};
  double *x = random_values(51, NUMEL, -2, 3), *dy = random_values(52, NUMEL, -1, 1);
  double *gamma = random_values(53, C, 0.5, 1.5), *zeros = dalloc(C);
  tsr_tensor *xt = make4(sizes, x, 1), *dyt = make4(sizes, dy, 1), *gt = make(1, ch, gamma);
  tsr_tensor *bt = make(1, ch, zeros), *rmt = make(1, ch, zeros), *rvt = make(1, ch, gamma);
  tsr_tensor *mean = empty(TSR_FLOAT32, 1, ch), *invstd = empty(TSR_FLOAT32, 1, ch);
  tsr_tensor *rm_out = empty(TSR_FLOAT32, 1, ch), *rv_out = empty(TSR_FLOAT32, 1, ch);
  tsr_tensor *y = empty4(sizes, 1), *dx = empty4(sizes, 1);
  tsr_tensor *dgamma = empty(TSR_FLOAT32, 1, ch), *dbeta = empty(TSR_FLOAT32, 1, ch);
  const tsr_batch_norm_attrs bn = {sizeof(bn), 1e-5, 0.1, 1, 0};
  tsr_tensor *bn_in[5] = {xt, gt, bt, rmt, rvt}, *bn_out[5] = {y, mean, invstd, rm_out, rv_out};
  run_twice_same_bits("batch norm NHWC training", TSR_OP_BATCH_NORM, 5, bn_in, 5, bn_out, &bn);
  tsr_tensor *bnb_in[5] = {dyt, xt, gt, mean, invstd}, *bnb_out[3] = {dx, dgamma, dbeta};
  run_twice_same_bits("batch norm NHWC training backward", TSR_OP_BATCH_NORM_BACKWARD, 5, bnb_in, 3,
                      bnb_out, &bn);

  // Layer norm over the last two axes of [N * C, H, W], affine.
  const int64_t ln_sizes[3] = {(int64_t)N * C, H, W}, stat_sizes[3] = {(int64_t)N * C, 1, 1};
  const int64_t affine_sizes[2] = {H, W};
  double *ln_gamma = random_values(54, (int64_t)H * W, 0.5, 1.5);
  tsr_tensor *lx = make(3, ln_sizes, x), *ldy = make(3, ln_sizes, dy);
  tsr_tensor *lg = make(2, affine_sizes, ln_gamma), *lb = make(2, affine_sizes, ln_gamma);
  tsr_tensor *ly = empty(TSR_FLOAT32, 3, ln_sizes), *ldx = empty(TSR_FLOAT32, 3, ln_sizes);
  tsr_tensor *lmean = empty(TSR_FLOAT32, 3, stat_sizes), *lrstd = empty(TSR_FLOAT32, 3, stat_sizes);
  tsr_tensor *ldg = empty(TSR_FLOAT32, 2, affine_sizes), *ldb = empty(TSR_FLOAT32, 2, affine_sizes);
  const tsr_layer_norm_attrs ln = {sizeof(ln), 1, 1, 1e-5};
  tsr_tensor *ln_in[3] = {lx, lg, lb}, *ln_out[3] = {ly, lmean, lrstd};
  run_twice_same_bits("layer norm", TSR_OP_LAYER_NORM, 3, ln_in, 3, ln_out, &ln);
  tsr_tensor *lnb_in[5] = {ldy, lx, lmean, lrstd, lg}, *lnb_out[3] = {ldx, ldg, ldb};
  run_twice_same_bits("layer norm backward", TSR_OP_LAYER_NORM_BACKWARD, 5, lnb_in, 3, lnb_out,
                      &ln);

  tsr_tensor *tensors[] = {xt,     dyt,    gt, bt,  rmt,    rvt,   mean, invstd,
                           rm_out, rv_out, y,  dx,  dgamma, dbeta, lx,   ldy,
                           lg,     lb,     ly, ldx, lmean,  lrstd, ldg,  ldb};
  for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]); ++i) tsr_tensor_release(tensors[i]);
  free(x);
  free(dy);
  free(gamma);
  free(zeros);
  free(ln_gamma);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_avg_pool_nchw),        cmocka_unit_test(test_avg_pool_nhwc),
      cmocka_unit_test(test_max_pool_forward),     cmocka_unit_test(test_layer_norm_last_axis),
      cmocka_unit_test(test_layer_norm_two_axes),  cmocka_unit_test(test_batch_norm_training),
      cmocka_unit_test(test_batch_norm_inference), cmocka_unit_test(test_repeatable),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
