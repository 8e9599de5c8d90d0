// MATMUL, the CONV2D family and POOL2D(_BACKWARD) on the OpenCL plugin,
// checked against the conformance oracle's float64 loops: contiguous,
// transposed, channels-last and broadcast operands, sizes that are not
// multiples of any tile, empty tensors, and the MLP and CNN shapes of
// tools/tsr-train.
//
// Engine selection is tested twice: the pure choice by device properties
// (ocl_matmul.h's tsr_ocl_gemm_candidates on made-up devices), and autotune
// on the real device, which must time the candidates, store the winner in
// the winners file and reuse it for the next plan of the shape. Every GEMM
// variant is also forced in turn (TSR_OPENCL_GEMM_VARIANT) and checked, so
// the kernels the device would not pick by default are tested too.
//
// Every op runs with fallback denied and its engine checked first, so
// nothing can pass by running on ref.
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include "../ocl_matmul.h"
#include "oracle/oracle.h"
#include "test_support.h"

static tsr_context *g_context;
static tsr_device *g_device;
// When set, the GEMM variant every engine checked must end with.
static const char *g_expect_variant;

static int group_setup(void **state) {
  (void)state;
  if (ts_device_open(TSR_TEST_OPENCL_PATH, "opencl:0", &g_context, &g_device) != 0)
    return -1;
  return tsr_context_fallback_policy_set(g_context, TSR_FALLBACK_DENY) == TSR_OK ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  return 0;
}

static double *dalloc(int64_t n) {
  double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  assert_non_null(p);
  return p;
}

// Checks that |op| plans onto an engine starting with |prefix|, then runs it.
static void run_expect(tsr_op_id_t op, int32_t ni, tsr_tensor *const *in, int32_t no,
                       tsr_tensor *const *out, const void *attrs, const char *prefix,
                       const char *what) {
  const char *engine = NULL;
  tsr_status status = tsr_op_engine_get(op, ni, in, no, out, attrs, &engine);
  if (status != TSR_OK) {
    fail_msg("%s: plan: %s: %s", what, tsr_status_name(status), tsr_last_error());
  }
  if (strncmp(engine, prefix, strlen(prefix)) != 0) {
    fail_msg("%s: engine %s, expected %s...", what, engine, prefix);
  }
  if (g_expect_variant != NULL) {
    const size_t len = strlen(engine), want = strlen(g_expect_variant);
    if (len < want || strcmp(engine + len - want, g_expect_variant) != 0) {
      fail_msg("%s: engine %s, expected variant %s", what, engine, g_expect_variant);
    }
  }
  status = tsr_op_run(op, ni, in, no, out, attrs);
  if (status != TSR_OK)
    fail_msg("%s: run: %s: %s", what, tsr_status_name(status), tsr_last_error());
  print_message("  %-48s %s\n", what, engine);
}

// A tensor of logical |sizes| holding |values| (row-major) whose storage is
// laid out as |perm| says: storage dim i is logical dim perm[i] (NULL:
// contiguous). The result is a permuted view, so its strides are not
// row-major.
static tsr_tensor *tensor_laid_out(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                                   const double *values, const int32_t *perm) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  if (perm == NULL) {
    tsr_tensor *t = ts_tensor(g_device, dtype, rank, sizes, values);
    TS_ASSERT_TENSOR(t);
    return t;
  }
  int64_t psizes[TSR_MAX_RANK], pstrides[TSR_MAX_RANK], lstride[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) psizes[d] = sizes[perm[d]];
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    pstrides[d] = s;
    s *= psizes[d];
  }
  for (int32_t d = 0; d < rank; ++d) lstride[perm[d]] = pstrides[d];
  double *phys = dalloc(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (int32_t d = rank - 1; d >= 0; --d) {
      off += (rem % sizes[d]) * lstride[d];
      rem /= sizes[d];
    }
    phys[off] = values[i];
  }
  tsr_tensor *storage = ts_tensor(g_device, dtype, rank, psizes, phys);
  TS_ASSERT_TENSOR(storage);
  free(phys);
  int32_t inverse[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) inverse[perm[d]] = d;
  tsr_tensor *view = tsr_permute(storage, rank, inverse);
  TS_ASSERT_TENSOR(view);
  tsr_tensor_release(storage);
  for (int32_t d = 0; d < rank; ++d) assert_int_equal(tsr_tensor_size(view, d), sizes[d]);
  return view;
}

static void read_all(const tsr_tensor *t, double *out, int64_t n) {
  assert_int_equal(ts_read(t, out, n), n);
}

// |got - want| <= rel * mag[i] + abs_tol, mag[i] being the sum of the
// magnitudes of element i's terms (the scale rounding errors grow with).
static void expect_close(const char *what, const double *got, const double *want, const double *mag,
                         int64_t n, double rel, double abs_tol) {
  for (int64_t i = 0; i < n; ++i) {
    const double bound = rel * (mag ? mag[i] : fabs(want[i])) + abs_tol;
    if (isnan(want[i]) || isnan(got[i])) {
      if (!(isnan(want[i]) && isnan(got[i]))) {
        fail_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
      }
      continue;
    }
    if (!(fabs(got[i] - want[i]) <= bound)) {
      fail_msg("%s: element %lld is %.9g, expected %.9g (|diff| %.3g > %.3g)", what, (long long)i,
               got[i], want[i], fabs(got[i] - want[i]), bound);
    }
  }
}

static double rel_of(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT64 ? 1e-13 : 2e-6;
}
static double abs_of(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT64 ? 1e-13 : 2e-6;
}

static const int32_t k_swap_last2[4][TSR_MAX_RANK] = {
    {1, 0}, {0, 2, 1}, {0, 1, 3, 2}, {0, 1, 2, 4, 3}};
static const int32_t k_nhwc[4] = {0, 2, 3, 1};

// --- MATMUL ----------------------------------------------------------------------

typedef struct mm_case {
  const char *what;
  tsr_dtype_t dtype;
  int32_t nb;                // batch dimensions
  int64_t batch[2];          // out's batch sizes
  int32_t a_bcast, b_bcast;  // bit d: the operand has size 1 on batch dim d (expanded)
  int64_t m, k, n;
  int ta, tb;  // stored transposed (unit stride across rows)
  double alpha, beta;
  tsr_activation_t act;
  int bias;  // 0 none, 1 [1.., N] broadcast, 2 full out shape
} mm_case;

static void matmul_check(const mm_case *c) {
  const int32_t r = c->nb + 2;
  int64_t bcount = 1;
  for (int32_t d = 0; d < c->nb; ++d) bcount *= c->batch[d];
  int64_t a_sizes[4], b_sizes[4], o_sizes[4], a_full[4], b_full[4], bias_sizes[4];
  int64_t a_items = 1, b_items = 1;
  for (int32_t d = 0; d < c->nb; ++d) {
    a_sizes[d] = (c->a_bcast >> d) & 1 ? 1 : c->batch[d];
    b_sizes[d] = (c->b_bcast >> d) & 1 ? 1 : c->batch[d];
    a_full[d] = b_full[d] = o_sizes[d] = c->batch[d];
    bias_sizes[d] = c->bias == 2 ? c->batch[d] : 1;
    a_items *= a_sizes[d];
    b_items *= b_sizes[d];
  }
  a_sizes[c->nb] = a_full[c->nb] = c->m;
  a_sizes[c->nb + 1] = a_full[c->nb + 1] = c->k;
  b_sizes[c->nb] = b_full[c->nb] = c->k;
  b_sizes[c->nb + 1] = b_full[c->nb + 1] = c->n;
  o_sizes[c->nb] = c->m;
  o_sizes[c->nb + 1] = c->n;
  bias_sizes[c->nb] = c->bias == 2 ? c->m : 1;
  bias_sizes[c->nb + 1] = c->n;
  int64_t bias_n = 1;
  for (int32_t d = 0; d < r; ++d) bias_n *= bias_sizes[d];
  const int64_t an = a_items * c->m * c->k, bn = b_items * c->k * c->n, on = bcount * c->m * c->n;
  ts_rng rng = {(uint64_t)(c->m * 131 + c->k * 17 + c->n)};
  double *a = dalloc(an), *b = dalloc(bn), *bias = dalloc(bias_n), *out0 = dalloc(on);
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, a, an);
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, b, bn);
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, bias, bias_n);
  ts_rng_fill(&rng, c->dtype, -2.0, 2.0, out0, on);
  tsr_tensor *ta0 = tensor_laid_out(c->dtype, r, a_sizes, a, c->ta ? k_swap_last2[r - 2] : NULL);
  tsr_tensor *tb0 = tensor_laid_out(c->dtype, r, b_sizes, b, c->tb ? k_swap_last2[r - 2] : NULL);
  tsr_tensor *ta = tsr_expand(ta0, r, a_full);
  tsr_tensor *tb = tsr_expand(tb0, r, b_full);
  TS_ASSERT_TENSOR(ta);
  TS_ASSERT_TENSOR(tb);
  tsr_tensor *tbias0 = c->bias ? tensor_laid_out(c->dtype, r, bias_sizes, bias, NULL) : NULL;
  tsr_tensor *tbias = c->bias ? tsr_expand(tbias0, r, o_sizes) : NULL;
  tsr_tensor *tout = tensor_laid_out(c->dtype, r, o_sizes, out0, NULL);
  tsr_matmul_attrs attrs = {sizeof(attrs), c->alpha, c->beta, c->act, (uint32_t)(c->bias != 0)};
  tsr_tensor *inputs[3] = {ta, tb, tbias};
  run_expect(TSR_OP_MATMUL, c->bias ? 3 : 2, inputs, 1, &tout, &attrs, "opencl:matmul-", c->what);

  double *want = dalloc(on), *pre = dalloc(on), *mag = dalloc(on), *got = dalloc(on);
  orc_matmul_attrs(&attrs, c->dtype, r, a_sizes, a, r, b_sizes, b, r, bias_sizes,
                   c->bias ? bias : NULL, out0, r, o_sizes, want, pre, mag);
  for (int64_t o = 0; o < on; ++o) mag[o] += fabs(pre[o]);
  read_all(tout, got, on);
  expect_close(c->what, got, want, mag, on, rel_of(c->dtype) * (1.0 + sqrt((double)c->k)),
               abs_of(c->dtype));
  tsr_tensor_release(ta0);
  tsr_tensor_release(tb0);
  tsr_tensor_release(ta);
  tsr_tensor_release(tb);
  tsr_tensor_release(tbias0);
  tsr_tensor_release(tbias);
  tsr_tensor_release(tout);
  free(a);
  free(b);
  free(bias);
  free(out0);
  free(want);
  free(pre);
  free(mag);
  free(got);
}

static void test_matmul_mlp_shapes_forward_and_backward(void **state) {
  (void)state;
  const mm_case cases[] = {
      {"mlp fc1 [64,784]x[784,512] bias relu",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       64,
       784,
       512,
       0,
       0,
       1,
       0,
       TSR_ACTIVATION_RELU,
       1},
      {"mlp fc2 [64,512]x[512,512] bias relu",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       64,
       512,
       512,
       0,
       0,
       1,
       0,
       TSR_ACTIVATION_RELU,
       1},
      {"mlp fc3 [64,512]x[512,10] bias",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       64,
       512,
       10,
       0,
       0,
       1,
       0,
       TSR_ACTIVATION_NONE,
       1},
      // Backward: dX = dY W^T (W stored [K, N] read transposed), dW = X^T dY.
      {"mlp fc1 dx [64,512]x[512,784]^T",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       64,
       512,
       784,
       0,
       1,
       1,
       0,
       TSR_ACTIVATION_NONE,
       0},
      {"mlp fc1 dw [784,64]^T x[64,512]",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       784,
       64,
       512,
       1,
       0,
       1,
       0,
       TSR_ACTIVATION_NONE,
       0},
      {"mlp fc2 dw [512,64]^T x[64,512]",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       512,
       64,
       512,
       1,
       0,
       1,
       0,
       TSR_ACTIVATION_NONE,
       0},
      {"mlp fc3 dx [64,10]x[10,512]^T",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       64,
       10,
       512,
       0,
       1,
       1,
       0,
       TSR_ACTIVATION_NONE,
       0},
      {"mlp fc3 dw [512,64]^T x[64,10]",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       512,
       64,
       10,
       1,
       0,
       1,
       0,
       TSR_ACTIVATION_NONE,
       0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) matmul_check(&cases[i]);
}

static void test_matmul_odd_sizes_alpha_beta_and_every_activation(void **state) {
  (void)state;
  const tsr_activation_t acts[] = {TSR_ACTIVATION_NONE,    TSR_ACTIVATION_RELU,
                                   TSR_ACTIVATION_GELU,    TSR_ACTIVATION_GELU_TANH,
                                   TSR_ACTIVATION_SIGMOID, TSR_ACTIVATION_TANH};
  const char *names[] = {"none", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh"};
  char what[6][64];
  for (int i = 0; i < 6; ++i) {
    snprintf(what[i], sizeof(what[i]), "odd 67x37x71 a^T b^T alpha beta bias %s", names[i]);
    const mm_case c = {what[i], TSR_FLOAT32,  0,   {0},  0,       0,          67, 37, 71,
                       i & 1,   (i >> 1) & 1, 0.5, -1.5, acts[i], 1 + (i & 1)};
    matmul_check(&c);
  }
  const mm_case more[] = {
      {"1x1x1", TSR_FLOAT32, 0, {0}, 0, 0, 1, 1, 1, 0, 0, 1, 0, TSR_ACTIVATION_NONE, 0},
      {"gemv 1x300x129 b^T",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       1,
       300,
       129,
       0,
       1,
       2,
       0,
       TSR_ACTIVATION_NONE,
       0},
      {"tall 257x3x5 beta 1",
       TSR_FLOAT32,
       0,
       {0},
       0,
       0,
       257,
       3,
       5,
       0,
       0,
       1,
       1,
       TSR_ACTIVATION_NONE,
       0},
      {"float64 65x130x33 bias gelu",
       TSR_FLOAT64,
       0,
       {0},
       0,
       0,
       65,
       130,
       33,
       0,
       1,
       1,
       0.25,
       TSR_ACTIVATION_GELU,
       1},
      {"float64 9x700x17 a^T tanh",
       TSR_FLOAT64,
       0,
       {0},
       0,
       0,
       9,
       700,
       17,
       1,
       0,
       -1,
       0,
       TSR_ACTIVATION_TANH,
       0},
  };
  for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); ++i) matmul_check(&more[i]);
}

static void test_matmul_batched_with_broadcast_batch_dims(void **state) {
  (void)state;
  const mm_case cases[] = {
      {"batch [4] b broadcast",
       TSR_FLOAT32,
       1,
       {4},
       0,
       1,
       33,
       20,
       45,
       0,
       0,
       1,
       0,
       TSR_ACTIVATION_NONE,
       0},
      {"batch [2,3] a bcast dim0, b bcast dim1, b^T",
       TSR_FLOAT32,
       2,
       {2, 3},
       1,
       2,
       19,
       24,
       70,
       0,
       1,
       1,
       0,
       TSR_ACTIVATION_RELU,
       1},
      {"batch [3,2] full bias, a^T, beta",
       TSR_FLOAT32,
       2,
       {3, 2},
       0,
       0,
       40,
       17,
       9,
       1,
       0,
       1.5,
       0.5,
       TSR_ACTIVATION_SIGMOID,
       2},
      {"float64 batch [5] a broadcast",
       TSR_FLOAT64,
       1,
       {5},
       1,
       0,
       13,
       66,
       12,
       0,
       0,
       1,
       0,
       TSR_ACTIVATION_NONE,
       1},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) matmul_check(&cases[i]);
}

// K = 0 gives act(bias + beta * out); M = 0 or a batch of 0 enqueue nothing.
static void test_matmul_empty_operands(void **state) {
  (void)state;
  const mm_case k0 = {"k=0: bias + beta*out",
                      TSR_FLOAT32,
                      0,
                      {0},
                      0,
                      0,
                      5,
                      0,
                      7,
                      0,
                      0,
                      1,
                      0.5,
                      TSR_ACTIVATION_TANH,
                      1};
  matmul_check(&k0);
  const mm_case m0 = {"m=0", TSR_FLOAT32,         0, {0}, 0, 0, 0, 8, 7, 0, 0, 1,
                      0,     TSR_ACTIVATION_NONE, 0};
  matmul_check(&m0);
  const mm_case b0 = {"batch 0", TSR_FLOAT32,         1, {0}, 0, 0, 4, 8, 7, 0, 0, 1,
                      0,         TSR_ACTIVATION_NONE, 0};
  matmul_check(&b0);
}

// --- CONV2D ----------------------------------------------------------------------

typedef struct conv_case {
  const char *what;
  tsr_dtype_t dtype;
  int64_t n, c, h, w, o, kh, kw;
  int64_t stride[2], pad_before[2], pad_after[2], dilation[2], groups;
  tsr_activation_t act;
  int bias;
  int nhwc;  // x, y, dx, dy stored channels-last
} conv_case;

static int64_t out_size(int64_t in, int64_t pb, int64_t pa, int64_t dil, int64_t k, int64_t s) {
  return (in + pb + pa - dil * (k - 1) - 1) / s + 1;
}

// The three ops of one geometry against the formulas of docs/abi.md 10.14.
static void conv_check(const conv_case *c) {
  const int64_t oh =
      out_size(c->h, c->pad_before[0], c->pad_after[0], c->dilation[0], c->kh, c->stride[0]);
  const int64_t ow =
      out_size(c->w, c->pad_before[1], c->pad_after[1], c->dilation[1], c->kw, c->stride[1]);
  const int64_t cg = c->c / c->groups;
  const int64_t xn = c->n * c->c * c->h * c->w, wn = c->o * cg * c->kh * c->kw;
  const int64_t yn = c->n * c->o * oh * ow;
  ts_rng rng = {(uint64_t)(xn * 7 + wn)};
  double *x = dalloc(xn), *w = dalloc(wn), *bias = dalloc(c->o), *dy = dalloc(yn);
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, x, xn);
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, w, wn);
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, bias, c->o);
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, dy, yn);
  const int64_t xs[4] = {c->n, c->c, c->h, c->w}, wsz[4] = {c->o, cg, c->kh, c->kw};
  const int64_t ys[4] = {c->n, c->o, oh, ow}, bs[1] = {c->o};
  const int32_t *layout = c->nhwc ? k_nhwc : NULL;
  tsr_tensor *tx = tensor_laid_out(c->dtype, 4, xs, x, layout);
  tsr_tensor *tw = tensor_laid_out(c->dtype, 4, wsz, w, NULL);
  tsr_tensor *tbias = c->bias ? tensor_laid_out(c->dtype, 1, bs, bias, NULL) : NULL;
  tsr_tensor *tdy = tensor_laid_out(c->dtype, 4, ys, dy, layout);
  // Outputs start as garbage-free copies of random data so a missed element shows.
  double *junk = dalloc(xn > yn ? (xn > wn ? xn : wn) : (yn > wn ? yn : wn));
  ts_rng_fill(&rng, c->dtype, 5.0, 6.0, junk, xn > yn ? (xn > wn ? xn : wn) : (yn > wn ? yn : wn));
  tsr_tensor *ty = tensor_laid_out(c->dtype, 4, ys, junk, layout);
  tsr_tensor *tdx = tensor_laid_out(c->dtype, 4, xs, junk, layout);
  tsr_tensor *tdw = tensor_laid_out(c->dtype, 4, wsz, junk, NULL);
  tsr_tensor *tdb = c->bias ? tensor_laid_out(c->dtype, 1, bs, junk, NULL) : NULL;
  tsr_conv2d_attrs attrs = {sizeof(attrs),
                            {c->stride[0], c->stride[1]},
                            {c->pad_before[0], c->pad_before[1]},
                            {c->pad_after[0], c->pad_after[1]},
                            {c->dilation[0], c->dilation[1]},
                            c->groups,
                            c->act,
                            (uint32_t)c->bias};
  char what[160];
  snprintf(what, sizeof(what), "%s fwd", c->what);
  tsr_tensor *fin[3] = {tx, tw, tbias};
  run_expect(TSR_OP_CONV2D, c->bias ? 3 : 2, fin, 1, &ty, &attrs, "opencl:conv2d-", what);
  tsr_conv2d_attrs battrs = attrs;
  battrs.activation = TSR_ACTIVATION_NONE;
  snprintf(what, sizeof(what), "%s bwd data", c->what);
  tsr_tensor *din[2] = {tdy, tw};
  run_expect(TSR_OP_CONV2D_BACKWARD_DATA, 2, din, 1, &tdx, &battrs, "opencl:conv2d-bwd-data-",
             what);
  snprintf(what, sizeof(what), "%s bwd filter", c->what);
  tsr_tensor *filter_in[2] = {tdy, tx};
  tsr_tensor *filter_out[2] = {tdw, tdb};
  run_expect(TSR_OP_CONV2D_BACKWARD_FILTER, 2, filter_in, c->bias ? 2 : 1, filter_out, &battrs,
             "opencl:conv2d-bwd-filter-", what);

  double *y = dalloc(yn), *ymag = dalloc(yn), *ypre = dalloc(yn), *dx = dalloc(xn);
  double *dxmag = dalloc(xn), *dw = dalloc(wn), *dwmag = dalloc(wn), *db = dalloc(c->o);
  double *dbmag = dalloc(c->o);
  orc_conv2d(TSR_OP_CONV2D, &attrs, xs, x, wsz, w, ys, y, bias, ypre, ymag, NULL);
  for (int64_t i = 0; i < yn; ++i) ymag[i] += fabs(ypre[i]);
  orc_conv2d(TSR_OP_CONV2D_BACKWARD_DATA, &battrs, xs, dx, wsz, w, ys, dy, NULL, NULL, dxmag,
             NULL);
  orc_conv2d(TSR_OP_CONV2D_BACKWARD_FILTER, &battrs, xs, x, wsz, dw, ys, dy, db, NULL, dwmag,
             dbmag);
  const int64_t max_n = xn > yn ? (xn > wn ? xn : wn) : (yn > wn ? yn : wn);
  double *got = dalloc(max_n);
  const double rel = rel_of(c->dtype) * 8.0, abs_tol = abs_of(c->dtype);
  snprintf(what, sizeof(what), "%s fwd", c->what);
  read_all(ty, got, yn);
  expect_close(what, got, y, ymag, yn, rel, abs_tol);
  snprintf(what, sizeof(what), "%s bwd data", c->what);
  read_all(tdx, got, xn);
  expect_close(what, got, dx, dxmag, xn, rel, abs_tol);
  snprintf(what, sizeof(what), "%s bwd filter", c->what);
  read_all(tdw, got, wn);
  expect_close(what, got, dw, dwmag, wn, rel * 4.0, abs_tol);
  if (c->bias) {
    snprintf(what, sizeof(what), "%s dbias", c->what);
    read_all(tdb, got, c->o);
    expect_close(what, got, db, dbmag, c->o, rel * 4.0, abs_tol);
  }
  tsr_tensor *all[] = {tx, tw, tbias, tdy, ty, tdx, tdw, tdb};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) tsr_tensor_release(all[i]);
  double *bufs[] = {x, w, bias, dy, junk, y, ymag, ypre, dx, dxmag, dw, dwmag, db, dbmag, got};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); ++i) free(bufs[i]);
}

// The convolutions of tools/tsr-train's CNN on 28x28 Fashion-MNIST (batch 64).
static void test_conv_cnn_shapes(void **state) {
  (void)state;
  const conv_case cases[] = {
      {"cnn conv1 64x1x28x28 -> 32 3x3 bias",
       TSR_FLOAT32,
       64,
       1,
       28,
       28,
       32,
       3,
       3,
       {1, 1},
       {0, 0},
       {0, 0},
       {1, 1},
       1,
       TSR_ACTIVATION_NONE,
       1,
       0},
      {"cnn conv2 64x32x13x13 -> 64 3x3 bias",
       TSR_FLOAT32,
       64,
       32,
       13,
       13,
       64,
       3,
       3,
       {1, 1},
       {0, 0},
       {0, 0},
       {1, 1},
       1,
       TSR_ACTIVATION_NONE,
       1,
       0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) conv_check(&cases[i]);
}

static void test_conv_stride_padding_dilation_groups_layouts(void **state) {
  (void)state;
  const conv_case cases[] = {
      {"s2 pad(1,2)/(2,0) dil(2,1) g2 bias gelu",
       TSR_FLOAT32,
       3,
       6,
       17,
       15,
       10,
       3,
       2,
       {2, 1},
       {1, 2},
       {2, 0},
       {2, 1},
       2,
       TSR_ACTIVATION_GELU,
       1,
       0},
      {"nhwc s(1,3) pad 1 g3 bias relu",
       TSR_FLOAT32,
       2,
       9,
       11,
       13,
       6,
       3,
       3,
       {1, 3},
       {1, 1},
       {1, 1},
       {1, 1},
       3,
       TSR_ACTIVATION_RELU,
       1,
       1},
      {"depthwise 5x5 pad 2 sigmoid",
       TSR_FLOAT32,
       2,
       8,
       9,
       9,
       8,
       5,
       5,
       {1, 1},
       {2, 2},
       {2, 2},
       {1, 1},
       8,
       TSR_ACTIVATION_SIGMOID,
       1,
       0},
      {"1x1 s2 no bias tanh",
       TSR_FLOAT32,
       4,
       7,
       10,
       10,
       5,
       1,
       1,
       {2, 2},
       {0, 0},
       {0, 0},
       {1, 1},
       1,
       TSR_ACTIVATION_TANH,
       0,
       0},
      {"float64 s2 pad 1 bias gelu_tanh",
       TSR_FLOAT64,
       2,
       4,
       12,
       11,
       6,
       3,
       3,
       {2, 2},
       {1, 1},
       {1, 0},
       {1, 1},
       2,
       TSR_ACTIVATION_GELU_TANH,
       1,
       1},
      {"long depth: filter split 16x8x20x20",
       TSR_FLOAT32,
       16,
       8,
       20,
       20,
       4,
       3,
       3,
       {1, 1},
       {1, 1},
       {1, 1},
       {1, 1},
       1,
       TSR_ACTIVATION_NONE,
       1,
       0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) conv_check(&cases[i]);
}

static void test_conv_empty_batch(void **state) {
  (void)state;
  const conv_case c = {
      "batch 0", TSR_FLOAT32,         0, 3, 8, 8, 4, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1},
      1,         TSR_ACTIVATION_NONE, 1, 0};
  conv_check(&c);  // dw and dbias are zeros
}

// --- POOL2D ----------------------------------------------------------------------

typedef struct pool_case {
  const char *what;
  tsr_dtype_t dtype;
  tsr_pool_kind_t kind;
  int64_t n, c, h, w;
  int64_t k[2], s[2], pb[2], pa[2], d[2];
  int ceil_mode, cip, nans;
} pool_case;

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pa, int64_t d,
                        int ceil_mode) {
  const int64_t span = in + pb + pa - (d * (k - 1) + 1);
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + pb)
    --o;
  return o;
}

static void pool_check(const pool_case *c) {
  const int64_t oh = pool_out(c->h, c->k[0], c->s[0], c->pb[0], c->pa[0], c->d[0], c->ceil_mode);
  const int64_t ow = pool_out(c->w, c->k[1], c->s[1], c->pb[1], c->pa[1], c->d[1], c->ceil_mode);
  const int64_t xn = c->n * c->c * c->h * c->w, yn = c->n * c->c * oh * ow;
  ts_rng rng = {(uint64_t)(xn + 3 * yn)};
  double *x = dalloc(xn), *dy = dalloc(yn);
  // Few distinct values, so windows hold ties; some NaN and -inf.
  for (int64_t i = 0; i < xn; ++i) x[i] = floor(ts_rng_value(&rng, TSR_FLOAT64, -4.0, 4.0));
  if (c->nans) {
    for (int64_t i = 5; i < xn; i += 23) x[i] = NAN;
    for (int64_t i = 11; i < xn; i += 31) x[i] = -INFINITY;
  }
  ts_rng_fill(&rng, c->dtype, -1.0, 1.0, dy, yn);
  const int64_t xs[4] = {c->n, c->c, c->h, c->w}, ys[4] = {c->n, c->c, oh, ow};
  tsr_tensor *tx = tensor_laid_out(c->dtype, 4, xs, x, NULL);
  tsr_tensor *ty = tsr_tensor_empty(g_device, c->dtype, 4, ys);
  tsr_tensor *ti = tsr_tensor_empty(g_device, TSR_INT64, 4, ys);
  TS_ASSERT_TENSOR(ty);
  TS_ASSERT_TENSOR(ti);
  tsr_pool2d_attrs attrs = {sizeof(attrs),          c->kind,
                            (uint32_t)c->ceil_mode, {c->k[0], c->k[1]},
                            {c->s[0], c->s[1]},     {c->pb[0], c->pb[1]},
                            {c->pa[0], c->pa[1]},   {c->d[0], c->d[1]},
                            (uint32_t)c->cip,       0};
  const int is_max = c->kind == TSR_POOL_MAX;
  char what[160];
  snprintf(what, sizeof(what), "%s fwd", c->what);
  tsr_tensor *outs[2] = {ty, ti};
  run_expect(TSR_OP_POOL2D, 1, &tx, is_max ? 2 : 1, outs, &attrs, "opencl:pool2d-", what);

  // The oracle's forward (and MAX's indices), its backward from those
  // indices, and that backward of |dy|: the magnitudes of dx's terms.
  double *y = dalloc(yn), *dx = dalloc(xn), *dxmag = dalloc(xn), *dy_abs = dalloc(yn);
  tsr_oracle_tensor ox = tsr_oracle_tensor_over(c->dtype, 4, xs, x), oy[2];
  oy[0] = tsr_oracle_tensor_over(c->dtype, 4, ys, y);
  assert_int_equal(tsr_oracle_tensor_create(TSR_INT64, 4, ys, &oy[1]), 0);
  assert_int_equal(tsr_oracle_compute_values(TSR_OP_POOL2D, &attrs, 1, &ox, is_max ? 2 : 1, oy),
                   TSR_OK);
  const int64_t *idx = oy[1].iv;
  for (int64_t i = 0; i < yn; ++i) dy_abs[i] = fabs(dy[i]);
  tsr_oracle_tensor obin[2] = {tsr_oracle_tensor_over(c->dtype, 4, ys, dy), oy[1]};
  tsr_oracle_tensor obout = tsr_oracle_tensor_over(c->dtype, 4, xs, dx);
  assert_int_equal(
      tsr_oracle_compute_values(TSR_OP_POOL2D_BACKWARD, &attrs, is_max ? 2 : 1, obin, 1, &obout),
      TSR_OK);
  obin[0].v = dy_abs;
  obout.v = dxmag;
  assert_int_equal(
      tsr_oracle_compute_values(TSR_OP_POOL2D_BACKWARD, &attrs, is_max ? 2 : 1, obin, 1, &obout),
      TSR_OK);
  double *got = dalloc(xn > yn ? xn : yn);
  read_all(ty, got, yn);
  expect_close(what, got, y, NULL, yn, rel_of(c->dtype), is_max ? 0.0 : abs_of(c->dtype));
  if (is_max) {
    int64_t *gi = calloc((size_t)(yn > 0 ? yn : 1), sizeof(int64_t));
    assert_non_null(gi);
    assert_int_equal(ts_read_i64(ti, gi, yn), yn);
    for (int64_t i = 0; i < yn; ++i) {
      if (gi[i] != idx[i]) {
        fail_msg("%s: index %lld is %lld, expected %lld", what, (long long)i, (long long)gi[i],
                 (long long)idx[i]);
      }
    }
    free(gi);
  }
  // Backward from the forward's own indices.
  tsr_tensor *tdy = tensor_laid_out(c->dtype, 4, ys, dy, NULL);
  tsr_tensor *tdx = tsr_tensor_empty(g_device, c->dtype, 4, xs);
  TS_ASSERT_TENSOR(tdx);
  snprintf(what, sizeof(what), "%s bwd", c->what);
  tsr_tensor *bin[2] = {tdy, ti};
  run_expect(TSR_OP_POOL2D_BACKWARD, is_max ? 2 : 1, bin, 1, &tdx, &attrs, "opencl:pool2d-bwd-",
             what);
  read_all(tdx, got, xn);
  expect_close(what, got, dx, dxmag, xn, rel_of(c->dtype) * 4.0, abs_of(c->dtype) * 0.01);
  tsr_tensor *all[] = {tx, ty, ti, tdy, tdx};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) tsr_tensor_release(all[i]);
  free(x);
  free(dy);
  free(y);
  free(dx);
  free(dxmag);
  free(dy_abs);
  tsr_oracle_tensor_destroy(&oy[1]);
  free(got);
}

static void test_pool_max_and_avg(void **state) {
  (void)state;
  const pool_case cases[] = {
      {"cnn max 2x2 s2 64x32x26x26",
       TSR_FLOAT32,
       TSR_POOL_MAX,
       64,
       32,
       26,
       26,
       {2, 2},
       {2, 2},
       {0, 0},
       {0, 0},
       {1, 1},
       0,
       0,
       0},
      {"cnn max 2x2 s2 64x64x11x11 (floor)",
       TSR_FLOAT32,
       TSR_POOL_MAX,
       64,
       64,
       11,
       11,
       {2, 2},
       {2, 2},
       {0, 0},
       {0, 0},
       {1, 1},
       0,
       0,
       0},
      {"max 3x3 s2 pad 1 ceil NaN -inf ties",
       TSR_FLOAT32,
       TSR_POOL_MAX,
       2,
       3,
       13,
       10,
       {3, 3},
       {2, 2},
       {1, 1},
       {1, 1},
       {1, 1},
       1,
       0,
       1},
      {"max 3x2 s(1,3) pad(1,0)/(2,1) dil(2,2) ceil",
       TSR_FLOAT64,
       TSR_POOL_MAX,
       2,
       2,
       9,
       14,
       {3, 2},
       {1, 3},
       {1, 0},
       {2, 1},
       {2, 2},
       1,
       0,
       1},
      {"avg 3x3 s2 pad 1 count_include_pad ceil",
       TSR_FLOAT32,
       TSR_POOL_AVG,
       2,
       3,
       12,
       11,
       {3, 3},
       {2, 2},
       {1, 1},
       {1, 1},
       {1, 1},
       1,
       1,
       0},
      {"avg 3x3 s2 pad 1 exclude pad",
       TSR_FLOAT32,
       TSR_POOL_AVG,
       2,
       3,
       12,
       11,
       {3, 3},
       {2, 2},
       {1, 1},
       {1, 1},
       {1, 1},
       0,
       0,
       0},
      {"avg 2x3 s(2,1) pad(0,1)/(1,2) dil(1,2) ceil cip",
       TSR_FLOAT64,
       TSR_POOL_AVG,
       1,
       4,
       7,
       9,
       {2, 3},
       {2, 1},
       {0, 1},
       {1, 2},
       {1, 2},
       1,
       1,
       0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) pool_check(&cases[i]);
}

// MAX backward with indices that do not come from the forward: some point
// outside their own window (but inside the plane), which the gather must
// still honour exactly as the scatter of docs/abi.md 10.15 does.
static void test_pool_max_backward_indices_outside_window(void **state) {
  (void)state;
  const int64_t n = 2, c = 2, h = 6, w = 7, oh = 3, ow = 3;
  const int64_t xs[4] = {n, c, h, w}, ys[4] = {n, c, oh, ow};
  const int64_t yn = n * c * oh * ow, xn = n * c * h * w;
  double *dy = dalloc(yn), *want = dalloc(xn), *got = dalloc(xn);
  int64_t *idx = calloc((size_t)yn, sizeof(int64_t));
  assert_non_null(idx);
  ts_rng rng = {99};
  ts_rng_fill(&rng, TSR_FLOAT32, -1.0, 1.0, dy, yn);
  for (int64_t i = 0; i < yn; ++i) {
    const int64_t plane = i / (oh * ow);
    // Plane 1 points every output at element 5 (outside most windows); the
    // others keep their windows' top-left element.
    const int64_t p = (i / ow) % oh, q = i % ow;
    idx[i] = plane == 1 ? 5 : (p * 2) * w + q * 2;
    want[plane * h * w + idx[i]] += dy[i];
  }
  tsr_tensor *tdy = tensor_laid_out(TSR_FLOAT32, 4, ys, dy, NULL);
  tsr_tensor *ti = tsr_tensor_from_host(g_device, TSR_INT64, 4, ys, idx);
  TS_ASSERT_TENSOR(ti);
  tsr_tensor *tdx = tsr_tensor_empty(g_device, TSR_FLOAT32, 4, xs);
  TS_ASSERT_TENSOR(tdx);
  tsr_pool2d_attrs attrs = {sizeof(attrs), TSR_POOL_MAX, 0,      {2, 2}, {2, 2},
                            {0, 0},        {0, 0},       {1, 1}, 0,      0};
  tsr_tensor *in[2] = {tdy, ti};
  run_expect(TSR_OP_POOL2D_BACKWARD, 2, in, 1, &tdx, &attrs, "opencl:pool2d-bwd-",
             "max bwd, indices outside their windows");
  read_all(tdx, got, xn);
  expect_close("max bwd, indices outside their windows", got, want, NULL, xn, 1e-6, 1e-6);
  tsr_tensor_release(tdy);
  tsr_tensor_release(ti);
  tsr_tensor_release(tdx);
  free(dy);
  free(want);
  free(got);
  free(idx);
}

// An index outside [0, H*W) is a data-dependent error (docs/abi.md 9.3): the
// asynchronous plugin reports INVALID_ARGUMENT by the next synchronize, and
// never writes outside dx.
static void test_pool_max_backward_index_out_of_range_is_reported(void **state) {
  (void)state;
  const int64_t xs[4] = {1, 2, 4, 4}, ys[4] = {1, 2, 2, 2};
  const double dy[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t idx[8] = {0, 2, 8, 10, 0, 2, 16, 10};  // 16 is past the 4x4 plane
  tsr_tensor *tdy = tensor_laid_out(TSR_FLOAT32, 4, ys, dy, NULL);
  tsr_tensor *ti = tsr_tensor_from_host(g_device, TSR_INT64, 4, ys, idx);
  TS_ASSERT_TENSOR(ti);
  tsr_tensor *tdx = tsr_tensor_empty(g_device, TSR_FLOAT32, 4, xs);
  TS_ASSERT_TENSOR(tdx);
  tsr_pool2d_attrs attrs = {sizeof(attrs), TSR_POOL_MAX, 0,      {2, 2}, {2, 2},
                            {0, 0},        {0, 0},       {1, 1}, 0,      0};
  tsr_tensor *in[2] = {tdy, ti};
  tsr_status status = tsr_op_run(TSR_OP_POOL2D_BACKWARD, 2, in, 1, &tdx, &attrs);
  // The stream waits for the check's callback, so the next synchronize reports it.
  if (status == TSR_OK)
    status = tsr_device_synchronize(g_device);
  assert_int_equal(status, TSR_INVALID_ARGUMENT);
  print_message("  out-of-range index: %s\n", tsr_last_error());
  // The error was taken; the device is usable again.
  assert_int_equal(tsr_device_synchronize(g_device), TSR_OK);
  tsr_tensor_release(tdy);
  tsr_tensor_release(ti);
  tsr_tensor_release(tdx);
}

// --- engine selection ------------------------------------------------------------

static tsr_ocl_device fake_device(uint64_t local_bytes, int local_is_global, size_t max_wg,
                                  uint32_t cus) {
  tsr_ocl_device d;
  memset(&d, 0, sizeof(d));
  d.local_mem_bytes = local_bytes;
  d.local_mem_is_global = local_is_global;
  d.max_work_group_size = max_wg;
  d.max_work_item_sizes[0] = d.max_work_item_sizes[1] = d.max_work_item_sizes[2] = max_wg;
  d.compute_units = cus;
  return d;
}

static int32_t first_choice(const tsr_ocl_device *d, int64_t m, int64_t n, int64_t k,
                            uint32_t elem) {
  const tsr_ocl_gemm_problem p = {m, n, k, 1, elem};
  int32_t order[TSR_OCL_GEMM_VARIANT_COUNT];
  const int32_t count = tsr_ocl_gemm_candidates(d, &p, order);
  assert_true(count > 0);
  return order[0];
}

// The default pick follows the device's properties: direct kernels where
// local memory is global memory (CPUs), the tiled ones sized by how many
// tiles fill the compute units elsewhere, smaller work-groups where the
// device admits no 256, and nothing that needs more local memory than there is.
static void test_engine_default_pick_by_device_properties(void **state) {
  (void)state;
  const tsr_ocl_device gpu = fake_device(65536, 0, 1024, 80);
  assert_int_equal(first_choice(&gpu, 4096, 4096, 4096, 4), TSR_OCL_GEMM_TILED_128X64);
  assert_int_equal(first_choice(&gpu, 64, 512, 784, 4), TSR_OCL_GEMM_TILED_32);
  const tsr_ocl_device small_gpu = fake_device(32768, 0, 256, 4);
  assert_int_equal(first_choice(&small_gpu, 64, 512, 784, 4), TSR_OCL_GEMM_TILED_64);
  const tsr_ocl_device cpu = fake_device(524288, 1, 4096, 2);
  assert_int_equal(first_choice(&cpu, 64, 512, 784, 4), TSR_OCL_GEMM_PACKED_6X16);
  assert_int_equal(first_choice(&cpu, 64, 512, 784, 8), TSR_OCL_GEMM_PACKED_6X8);
  assert_int_equal(first_choice(&cpu, 16, 64, 784, 4), TSR_OCL_GEMM_PACKED_6X16);
  assert_int_equal(first_choice(&cpu, 1, 50176, 288, 4), TSR_OCL_GEMM_VEC_1);
  // Packing a column matrix past the workspace limit: the direct kernels.
  assert_int_equal(first_choice(&cpu, 64, 64 * 224 * 224, 576, 4), TSR_OCL_GEMM_VEC_64);
  // An empty depth has nothing to pack.
  assert_int_equal(first_choice(&cpu, 64, 512, 0, 4), TSR_OCL_GEMM_VEC_64);
  const tsr_ocl_device wg64 = fake_device(49152, 0, 64, 16);
  assert_int_equal(first_choice(&wg64, 1024, 1024, 1024, 4), TSR_OCL_GEMM_TILED_32_WG64);
  const tsr_ocl_device wg16 = fake_device(49152, 0, 16, 16);
  assert_int_equal(first_choice(&wg16, 1024, 1024, 1024, 4), TSR_OCL_GEMM_DIRECT_16);
  // 6 KiB of local memory holds a 32x32 float tile pair but not 64x64.
  const tsr_ocl_device tiny_local = fake_device(6144, 0, 1024, 80);
  assert_int_equal(first_choice(&tiny_local, 4096, 4096, 4096, 4), TSR_OCL_GEMM_TILED_32);
  const tsr_ocl_gemm_problem big = {4096, 4096, 4096, 1, 8};
  int32_t order[TSR_OCL_GEMM_VARIANT_COUNT];
  const int32_t count = tsr_ocl_gemm_candidates(&tiny_local, &big, order);
  for (int32_t i = 0; i < count; ++i) {
    const tsr_ocl_gemm_variant *v = &tsr_ocl_gemm_variants[order[i]];
    assert_true(tsr_ocl_gemm_variant_local_bytes(v, 8) <= 6144);
  }
  const tsr_ocl_device no_local = fake_device(0, 0, 1024, 8);
  const int32_t n2 = tsr_ocl_gemm_candidates(&no_local, &big, order);
  assert_int_equal(n2, 7);
  assert_int_equal(order[0], TSR_OCL_GEMM_PACKED_6X8);
  // The filter gradient splits a long depth only as far as the device needs.
  int64_t splits = 0, chunk = 0;
  const tsr_ocl_gemm_problem filter = {64, 288, 64 * 121, 1, 4};
  tsr_ocl_gemm_split_depth(&cpu, &filter, &tsr_ocl_gemm_variants[TSR_OCL_GEMM_VEC_64], &splits,
                           &chunk);
  assert_int_equal(splits, 2);
  assert_true(chunk * splits >= filter.k && chunk * (splits - 1) < filter.k);
  tsr_ocl_gemm_split_depth(&gpu, &filter, &tsr_ocl_gemm_variants[TSR_OCL_GEMM_TILED_64], &splits,
                           &chunk);
  assert_true(splits > 2 && chunk % 16 == 0 && chunk >= 256);
  const tsr_ocl_gemm_problem shallow = {64, 288, 200, 1, 4};
  tsr_ocl_gemm_split_depth(&gpu, &shallow, &tsr_ocl_gemm_variants[TSR_OCL_GEMM_TILED_64], &splits,
                           &chunk);
  assert_int_equal(splits, 1);
}

// The engine a plan names is one of the variants, with no autotune mark
// when autotune is off.
static void test_engine_names_a_variant(void **state) {
  (void)state;
  const mm_case c = {"engine name 50x60x70",
                     TSR_FLOAT32,
                     0,
                     {0},
                     0,
                     0,
                     50,
                     60,
                     70,
                     0,
                     0,
                     1,
                     0,
                     TSR_ACTIVATION_NONE,
                     0};
  matmul_check(&c);
  const int64_t as[2] = {50, 60}, bs[2] = {60, 70}, os[2] = {50, 70};
  tsr_tensor *ta = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, as);
  tsr_tensor *tb = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, bs);
  tsr_tensor *to = tsr_tensor_empty(g_device, TSR_FLOAT32, 2, os);
  tsr_tensor *in[2] = {ta, tb};
  const char *engine = NULL;
  TS_ASSERT_OK(tsr_op_engine_get(TSR_OP_MATMUL, 2, in, 1, &to, NULL, &engine));
  int known = 0;
  for (int i = 0; i < TSR_OCL_GEMM_VARIANT_COUNT; ++i) {
    char name[96];
    snprintf(name, sizeof(name), "opencl:matmul-%s", tsr_ocl_gemm_variants[i].name);
    known |= strcmp(engine, name) == 0;
  }
  if (!known)
    fail_msg("engine %s names no variant", engine);
  tsr_tensor_release(ta);
  tsr_tensor_release(tb);
  tsr_tensor_release(to);
}

// Every variant of the GEMM engine, forced in turn, computes MATMUL and the
// three convolutions right (odd sizes, both dtypes), whatever the device
// would pick by default.
static void test_every_gemm_variant_is_correct(void **state) {
  (void)state;
  for (int v = 0; v < TSR_OCL_GEMM_VARIANT_COUNT; ++v) {
    const char *name = tsr_ocl_gemm_variants[v].name;
    setenv("TSR_OPENCL_GEMM_VARIANT", name, 1);
    g_expect_variant = name;
    char what[4][96];
    // Shapes differ per variant so that no plan comes from the plan cache.
    snprintf(what[0], sizeof(what[0]), "variant %s f32 a^T", name);
    const mm_case c32 = {what[0], TSR_FLOAT32,         1, {2}, 0, 1, 70 + v, 45, 83 - v, 1, 0, 1.5,
                         0.5,     TSR_ACTIVATION_RELU, 1};
    snprintf(what[1], sizeof(what[1]), "variant %s f32 b^T", name);
    const mm_case t32 = {what[1], TSR_FLOAT32,         0, {0}, 0, 0, 9 + v, 130, 67, 0, 1, 1,
                         0,       TSR_ACTIVATION_NONE, 0};
    snprintf(what[2], sizeof(what[2]), "variant %s f64", name);
    const mm_case c64 = {
        what[2], TSR_FLOAT64, 0, {0}, 0, 0, 33, 29 + v, 66, 0, 0, -1, 0, TSR_ACTIVATION_SIGMOID, 1};
    matmul_check(&c32);
    matmul_check(&t32);
    matmul_check(&c64);
    snprintf(what[3], sizeof(what[3]), "variant %s conv", name);
    const conv_case cv = {
        what[3], TSR_FLOAT32,         3, 4, 9 + v, 11, 6, 3, 3, {2, 1}, {1, 1}, {0, 1}, {1, 2},
        2,       TSR_ACTIVATION_GELU, 1, 0};
    conv_check(&cv);
  }
  unsetenv("TSR_OPENCL_GEMM_VARIANT");
  g_expect_variant = NULL;
}

static char g_engine_cache_dir[] = "/tmp/tsr-ocl-engines-XXXXXX";

// Whether a file in |dir| (the engine cache's folder) holds |key|: the
// cache stores class keys as plain bytes.
static int winners_file_has(const char *dir, const char *key) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  int found = 0;
  struct dirent *e;
  char path[1024];
  static char bytes[1 << 20];
  while (!found && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
      continue;
    size_t n = fread(bytes, 1, sizeof(bytes), f);
    fclose(f);
    found = memmem(bytes, n, key, strlen(key)) != NULL;
  }
  closedir(d);
  return found;
}

// With TSR_OPENCL_AUTOTUNE=1 a new shape is timed ("+tuned"), its winner
// lands in the engine cache under the matmul's key, and a fresh plan of the
// same shape (another context) reuses it ("+reused") with the same variant;
// both compute the right numbers.
static void test_autotune_stores_and_reuses_the_winner(void **state) {
  (void)state;
  setenv("TSR_OPENCL_AUTOTUNE", "1", 1);
  const int64_t m = 96, k = 80, n = 72;
  const mm_case c = {
      "autotune 96x80x72", TSR_FLOAT32, 0, {0}, 0, 0, m, k, n, 0, 0, 1, 0, TSR_ACTIVATION_NONE, 0};
  const int64_t as[2] = {m, k}, bs[2] = {k, n}, os[2] = {m, n};
  char first[96] = "", second[96] = "";
  for (int round = 0; round < 2; ++round) {
    tsr_context *ctx = NULL;
    tsr_device *dev = NULL;
    assert_int_equal(ts_device_open(TSR_TEST_OPENCL_PATH, "opencl:0", &ctx, &dev), 0);
    tsr_tensor *ta = tsr_tensor_empty(dev, TSR_FLOAT32, 2, as);
    tsr_tensor *tb = tsr_tensor_empty(dev, TSR_FLOAT32, 2, bs);
    tsr_tensor *to = tsr_tensor_empty(dev, TSR_FLOAT32, 2, os);
    tsr_tensor *in[2] = {ta, tb};
    const char *engine = NULL;
    TS_ASSERT_OK(tsr_op_engine_get(TSR_OP_MATMUL, 2, in, 1, &to, NULL, &engine));
    print_message("  autotune round %d: %s\n", round, engine);
    snprintf(round == 0 ? first : second, sizeof(first), "%s", engine);
    tsr_tensor_release(ta);
    tsr_tensor_release(tb);
    tsr_tensor_release(to);
    tsr_context_destroy(ctx);
  }
  const char *mark1 = strstr(first, "+tuned"), *mark2 = strstr(second, "+reused");
  if (mark1 == NULL || mark2 == NULL)
    fail_msg("engines %s then %s", first, second);
  assert_int_equal(mark1 - first, mark2 - second);
  assert_memory_equal(first, second, (size_t)(mark1 - first));  // the same variant
  assert_true(winners_file_has(g_engine_cache_dir, "matmul f32 b1 m96 n72 k80 a:kb:n"));
  // The tuned plan computes correctly on the test's context too.
  matmul_check(&c);
  unsetenv("TSR_OPENCL_AUTOTUNE");
}

int main(void) {
  // The core reads the engine cache's folder once per process: a folder of
  // this run's own, set before the first context.
  assert_non_null(mkdtemp(g_engine_cache_dir));
  setenv("TSR_ENGINE_CACHE_DIR", g_engine_cache_dir, 1);
  tsr_context *probe = ts_context_create(TSR_TEST_OPENCL_PATH, "opencl:0");
  if (probe == NULL) {
    printf("skipped: no OpenCL device (%s)\n", tsr_last_error());
    return 77;
  }
  tsr_context_destroy(probe);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_engine_default_pick_by_device_properties),
      cmocka_unit_test(test_engine_names_a_variant),
      cmocka_unit_test(test_every_gemm_variant_is_correct),
      cmocka_unit_test(test_matmul_mlp_shapes_forward_and_backward),
      cmocka_unit_test(test_matmul_odd_sizes_alpha_beta_and_every_activation),
      cmocka_unit_test(test_matmul_batched_with_broadcast_batch_dims),
      cmocka_unit_test(test_matmul_empty_operands),
      cmocka_unit_test(test_conv_cnn_shapes),
      cmocka_unit_test(test_conv_stride_padding_dilation_groups_layouts),
      cmocka_unit_test(test_conv_empty_batch),
      cmocka_unit_test(test_pool_max_and_avg),
      cmocka_unit_test(test_pool_max_backward_indices_outside_window),
      cmocka_unit_test(test_pool_max_backward_index_out_of_range_is_reported),
      cmocka_unit_test(test_autotune_stores_and_reuses_the_winner),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
