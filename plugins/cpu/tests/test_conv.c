// CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER against the
// conformance oracle's float64 loops: every float dtype, groups, strides,
// asymmetric padding, dilation, bias and activations, NCHW / NHWC / gapped
// views, position tiles, size-0 and size-1 cases; the backward ops against
// central differences of the forward; thread-count independence; refusals.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/oracle.h"
#include "test_host.h"
#include "test_util.h"

static const tsr_dtype_t k_dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16};

typedef struct conv_case {
  int64_t n, c, h, w, o, kh, kw;
  int64_t stride[2], pad_before[2], pad_after[2], dilation[2], groups;
  int has_bias;
  tsr_activation_t act;
} conv_case;

enum { LAYOUT_NCHW = 0, LAYOUT_NHWC = 1, LAYOUT_GAPPED = 2, LAYOUT_COUNT = 3 };

static int64_t out_size(const conv_case *cc, int d) {
  const int64_t in = d == 0 ? cc->h : cc->w, k = d == 0 ? cc->kh : cc->kw;
  return (in + cc->pad_before[d] + cc->pad_after[d] - cc->dilation[d] * (k - 1) - 1) /
             cc->stride[d] + 1;
}

static tsr_conv2d_attrs attrs_of(const conv_case *cc) {
  tsr_conv2d_attrs a;
  memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  for (int d = 0; d < 2; ++d) {
    a.stride[d] = cc->stride[d];
    a.pad_before[d] = cc->pad_before[d];
    a.pad_after[d] = cc->pad_after[d];
    a.dilation[d] = cc->dilation[d];
  }
  a.groups = cc->groups;
  a.activation = cc->act;
  a.has_bias = (uint32_t)cc->has_bias;
  return a;
}

// A rank-|rank| tensor in |layout|: row-major; channels last (dimension 1
// innermost); or row-major over sizes + 1 (gaps after every row and plane)
// starting 3 elements in.
static void tensor_make(tt_tensor *t, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                        int layout) {
  if (layout == LAYOUT_NHWC && rank == 4) {
    const int32_t perm[] = {0, 3, 1, 2};
    tt_tensor_make_permuted(t, dtype, rank, sizes, perm);
  } else if (layout == LAYOUT_GAPPED) {
    int64_t strides[TSR_MAX_RANK], stride = 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
      strides[d] = stride;
      stride *= sizes[d] + 1;
    }
    tt_tensor_make(t, dtype, rank, sizes, strides, 3);
  } else {
    tt_tensor_make(t, dtype, rank, sizes, NULL, 0);
  }
}

// Fails unless every byte of |t|'s buffer outside its elements still holds
// tt_tensor_make's poison.
static void gaps_check(const tt_tensor *t) {
  const int64_t elem = (int64_t)tsr_dtype_size(t->desc.dtype);
  int64_t extent = 1;
  for (int32_t d = 0; d < t->desc.rank; ++d) extent += (t->desc.sizes[d] - 1) * t->desc.strides[d];
  if (tt_numel(t) == 0) return;
  const int64_t bytes = (int64_t)t->desc.byte_offset + extent * elem;
  char *mine = calloc((size_t)bytes, 1);
  int64_t idx[TSR_MAX_RANK] = {0};
  do {
    int64_t off = (int64_t)t->desc.byte_offset;
    for (int32_t d = 0; d < t->desc.rank; ++d) off += idx[d] * t->desc.strides[d] * elem;
    memset(mine + off, 1, (size_t)elem);
  } while (tt_index_next(idx, t->desc.rank, t->desc.sizes));
  for (int64_t i = 0; i < bytes; ++i) {
    if (!mine[i] && (unsigned char)t->base[i] != 0x7f) {
      free(mine);
      fail_msg("byte %lld outside the view was written", (long long)i);
    }
  }
  free(mine);
}

// Evaluates |op| of |cc| in the conformance oracle on |in| (read in their
// logical order) into new row-major arrays |out_v|, one per tensor of |out|.
// With |absolute|: on the inputs' absolute values and without the
// activation, so each element is the sum of its terms' absolute values, the
// magnitude value_check takes.
static void conv_oracle(int32_t op, const conv_case *cc, tt_tensor *const *in, int32_t num_inputs,
                        tt_tensor *const *out, int32_t num_outputs, int absolute,
                        double **out_v) {
  tsr_conv2d_attrs attrs = attrs_of(cc);
  if (op != TSR_OP_CONV2D || absolute) attrs.activation = TSR_ACTIVATION_NONE;
  tsr_oracle_tensor oracle_in[3], oracle_out[2];
  double *in_v[3];
  for (int32_t k = 0; k < num_inputs; ++k) {
    in_v[k] = tt_values(in[k], in[k]->desc.sizes);
    for (int64_t i = 0; absolute && i < tt_numel(in[k]); ++i) in_v[k][i] = fabs(in_v[k][i]);
    oracle_in[k] = tsr_oracle_tensor_over(in[k]->desc.dtype, in[k]->desc.rank, in[k]->desc.sizes,
                                          in_v[k]);
  }
  for (int32_t k = 0; k < num_outputs; ++k) {
    out_v[k] = calloc((size_t)tt_numel(out[k]) + 1, sizeof(double));
    assert_non_null(out_v[k]);
    oracle_out[k] = tsr_oracle_tensor_over(out[k]->desc.dtype, out[k]->desc.rank,
                                           out[k]->desc.sizes, out_v[k]);
  }
  assert_int_equal(
      tsr_oracle_compute_values(op, &attrs, num_inputs, oracle_in, num_outputs, oracle_out),
      TSR_OK);
  for (int32_t k = 0; k < num_inputs; ++k) free(in_v[k]);
}

// |got| against a float64 |want| whose terms summed to |magnitude| in
// absolute value: the dtype's rounding of the result plus float32 (or
// float64) accumulation error.
static void value_check(const char *what, const int64_t *idx, double got, double want,
                        double magnitude, tsr_dtype_t dtype) {
  const double acc = dtype == TSR_FLOAT64 ? 1e-13 : 2e-6;
  const double rtol = dtype == TSR_FLOAT64 ? 1e-13 : dtype == TSR_FLOAT32 ? 2e-6 : tt_rtol(dtype);
  if (!tt_close(got, want, rtol, acc * (magnitude + 1))) {
    fail_msg("%s dtype %d [%lld, %lld, %lld, %lld]: got %.9g, want %.9g", what, (int)dtype,
             (long long)idx[0], (long long)idx[1], (long long)idx[2], (long long)idx[3], got,
             want);
  }
}

// ---------------------------------------------------------------------------
// Forward.

// The engine the forward of |cc| in |dtype| with output |y| should take:
// float32 without an activation or with RELU takes a direct kernel, conv_fwd_c1.c with
// one input channel per group and y's planes contiguous, else
// conv_fwd_direct.c with one group, at least one channel and a padded image
// of at most 256 KiB; everything else the GEMM.
static const char *forward_engine_expected(const conv_case *cc, tsr_dtype_t dtype,
                                           const tt_tensor *y) {
  const int64_t hp = cc->h + cc->pad_before[0] + cc->pad_after[0];
  const int64_t wp = cc->w + cc->pad_before[1] + cc->pad_after[1];
  const int64_t oh = y->desc.sizes[2], ow = y->desc.sizes[3];
  if (dtype != TSR_FLOAT32 || (cc->act != TSR_ACTIVATION_NONE && cc->act != TSR_ACTIVATION_RELU)) {
    return "ref:im2col-gemm";
  }
  if (cc->c == cc->groups && (ow == 1 || y->desc.strides[3] == 1) &&
      (oh == 1 || y->desc.strides[2] == ow)) {
    return "ref:conv-c1-direct";
  }
  if (cc->groups == 1 && cc->c >= 1 && cc->c * hp * wp * 4 <= 256 * 1024) {
    return "ref:conv-direct";
  }
  return "ref:im2col-gemm";
}

// The engine of the last forward_check's plan.
static const char *g_forward_engine;

static void forward_check(const conv_case *cc, tsr_dtype_t dtype, int layout, uint64_t seed) {
  const int64_t oh = out_size(cc, 0), ow = out_size(cc, 1), cg = cc->c / cc->groups;
  const int64_t xs[] = {cc->n, cc->c, cc->h, cc->w}, ws[] = {cc->o, cg, cc->kh, cc->kw};
  const int64_t ys[] = {cc->n, cc->o, oh, ow}, bs[] = {cc->o};
  tt_tensor x, w, bias, y;
  tensor_make(&x, dtype, 4, xs, layout);
  tensor_make(&w, dtype, 4, ws, layout);
  tensor_make(&bias, dtype, 1, bs, layout);
  tensor_make(&y, dtype, 4, ys, layout);
  tt_fill(&x, seed, -1, 1);
  tt_fill(&w, seed + 1, -1, 1);
  tt_fill(&bias, seed + 2, -1, 1);
  tsr_conv2d_attrs attrs = attrs_of(cc);
  tt_tensor *in[] = {&x, &w, &bias};
  tt_tensor *out[] = {&y};
  const char *engine = NULL;
  assert_int_equal(tt_run(TSR_OP_CONV2D, &attrs, in, cc->has_bias ? 3 : 2, out, 1, &engine),
                   TSR_OK);
  assert_string_equal(engine, forward_engine_expected(cc, dtype, &y));
  g_forward_engine = engine;
  if (tt_numel(&y) > 0) {
    double *want, *magnitude;
    conv_oracle(TSR_OP_CONV2D, cc, in, cc->has_bias ? 3 : 2, out, 1, 0, &want);
    conv_oracle(TSR_OP_CONV2D, cc, in, cc->has_bias ? 3 : 2, out, 1, 1, &magnitude);
    int64_t idx[4] = {0}, i = 0;
    do {
      value_check("conv2d y", idx, tt_get(&y, idx), want[i], magnitude[i], dtype);
      ++i;
    } while (tt_index_next(idx, 4, ys));
    free(want);
    free(magnitude);
  }
  gaps_check(&y);
  tt_tensor_free(&x);
  tt_tensor_free(&w);
  tt_tensor_free(&bias);
  tt_tensor_free(&y);
}

// Cases every test below walks: odd sizes, strides, asymmetric pads,
// dilation, groups (depthwise too), 1x1 kernels, kernels wider than the
// unpadded input.
static const conv_case k_cases[] = {
    // n  c  h  w  o kh kw  stride  pad_before pad_after dilation groups bias act
    {2, 3, 7, 6, 4, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
    {1, 4, 9, 8, 6, 3, 2, {2, 3}, {1, 0}, {2, 1}, {1, 1}, 2, 1, TSR_ACTIVATION_RELU},
    {2, 4, 8, 9, 4, 2, 3, {1, 2}, {2, 1}, {0, 3}, {2, 3}, 4, 0, TSR_ACTIVATION_NONE},
    {3, 2, 5, 5, 3, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_SIGMOID},
    {1, 6, 4, 5, 9, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 3, 1, TSR_ACTIVATION_GELU},
    {2, 1, 2, 3, 2, 4, 4, {1, 2}, {2, 1}, {1, 2}, {1, 1}, 1, 1, TSR_ACTIVATION_TANH},
    {1, 2, 1, 1, 2, 1, 1, {3, 3}, {0, 0}, {0, 0}, {1, 1}, 2, 0, TSR_ACTIVATION_GELU_TANH},
    // More images than the filter gradient's batch tiles: tiles of two.
    {11, 2, 5, 4, 3, 2, 2, {1, 1}, {1, 0}, {0, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
};
#define CASE_COUNT (sizeof(k_cases) / sizeof(k_cases[0]))

static void test_conv2d_matches_double_loops_for_every_dtype_case_and_layout(void **state) {
  (void)state;
  for (size_t i = 0; i < CASE_COUNT; ++i) {
    for (int di = 0; di < 4; ++di) {
      for (int layout = 0; layout < LAYOUT_COUNT; ++layout) {
        forward_check(&k_cases[i], k_dtypes[di], layout, 10 + i);
      }
    }
  }
}

// Enough positions (and channels) that one image's im2col matrix is cut
// into several tiles, and a y layout whose rows do not collapse.
static void test_conv2d_cuts_large_images_into_tiles(void **state) {
  (void)state;
  const conv_case big = {2, 32, 24, 23, 5, 3, 3, {1, 1}, {1, 0}, {0, 1}, {1, 1}, 1, 1,
                         TSR_ACTIVATION_NONE};
  forward_check(&big, TSR_FLOAT32, LAYOUT_NCHW, 1);
  forward_check(&big, TSR_FLOAT64, LAYOUT_GAPPED, 2);
  forward_check(&big, TSR_BFLOAT16, LAYOUT_NHWC, 3);
}

// float32 with one group, several input channels and no activation (or
// RELU) takes
// the direct forward kernel (conv_fwd_direct.c) in every layout: the CNN's
// second layer (N 64, 32 -> 64, 13x13; 121 positions, not a multiple of the
// 6-position tile), one input channel in layouts whose y planes are not
// contiguous (NHWC, gapped), odd channel counts that leave partial register tiles
// (5, 13, 21 and 40 output channels), a single image, padding (asymmetric),
// strides, dilation, 1x1, with bias and without, RELU. Another
// activation, groups, float64 and a larger padded image keep the GEMM.
static void test_conv2d_with_one_group_runs_the_direct_forward_kernel(void **state) {
  (void)state;
  const conv_case cases[] = {
      // n  c  h  w  o kh kw  stride  pad_before pad_after dilation groups bias act
      {64, 32, 13, 13, 64, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {3, 5, 9, 11, 13, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {1, 7, 12, 10, 21, 3, 3, {1, 1}, {2, 0}, {0, 1}, {1, 1}, 1, 0, TSR_ACTIVATION_NONE},
      {2, 4, 17, 15, 5, 5, 1, {2, 1}, {1, 2}, {2, 0}, {1, 2}, 1, 1, TSR_ACTIVATION_NONE},
      {2, 3, 6, 6, 40, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 0, TSR_ACTIVATION_NONE},
      {1, 2, 5, 7, 3, 2, 2, {3, 2}, {0, 1}, {1, 0}, {2, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    for (int layout = 0; layout < LAYOUT_COUNT; ++layout) {
      forward_check(&cases[i], TSR_FLOAT32, layout, 700 + 10 * i + (uint64_t)layout);
      assert_string_equal(g_forward_engine, "ref:conv-direct");
    }
    if (i == 0) {
      // One input channel, y not plane-contiguous.
      const conv_case c1 = {4, 1, 28, 28, 32, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1,
                            TSR_ACTIVATION_NONE};
      forward_check(&c1, TSR_FLOAT32, LAYOUT_NHWC, 780);
      assert_string_equal(g_forward_engine, "ref:conv-direct");
      forward_check(&c1, TSR_FLOAT32, LAYOUT_GAPPED, 781);
      assert_string_equal(g_forward_engine, "ref:conv-direct");
    }
    forward_check(&cases[i], TSR_FLOAT64, LAYOUT_NCHW, 790 + i);
    assert_string_equal(g_forward_engine, "ref:im2col-gemm");
  }
  // RELU too, after the bias.
  const conv_case relu = {3, 5, 9, 11, 13, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1,
                          TSR_ACTIVATION_RELU};
  forward_check(&relu, TSR_FLOAT32, LAYOUT_NCHW, 799);
  assert_string_equal(g_forward_engine, "ref:conv-direct");
  const conv_case others[] = {
      {2, 4, 9, 9, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_GELU},
      {2, 4, 9, 9, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2, 1, TSR_ACTIVATION_NONE},
      // 80 x 30 x 30 floats padded: beyond 256 KiB.
      {1, 80, 28, 28, 2, 1, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); ++i) {
    forward_check(&others[i], TSR_FLOAT32, LAYOUT_NCHW, 800 + i);
    assert_string_equal(g_forward_engine, "ref:im2col-gemm");
  }
}

// float32 with one input channel per group, no activation or RELU, and y's planes
// contiguous takes the one-channel direct forward kernel (conv_fwd_c1.c):
// the CNN's first layer (N 64, 1 -> 32, 28x28: 676 positions, not a
// multiple of the 16-position register tile), output channel counts that
// leave partial 4-channel tiles (5, 7, 2 per group), depthwise groups,
// padding (asymmetric), strides, dilation, a plane of several position
// tiles (98x98), a single image, with bias and without, RELU. float64,
// another activation, and NHWC or gapped y keep other kernels.
static void test_conv2d_with_one_input_channel_runs_the_c1_forward_kernel(void **state) {
  (void)state;
  const conv_case cases[] = {
      // n  c  h  w  o kh kw  stride  pad_before pad_after dilation groups bias act
      {64, 1, 28, 28, 32, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {3, 1, 9, 11, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 0, TSR_ACTIVATION_NONE},
      {2, 4, 17, 15, 8, 3, 3, {2, 1}, {1, 2}, {2, 0}, {1, 2}, 4, 1, TSR_ACTIVATION_NONE},
      {1, 3, 12, 19, 21, 5, 2, {1, 3}, {2, 0}, {0, 1}, {2, 1}, 3, 1, TSR_ACTIVATION_NONE},
      {1, 1, 100, 100, 7, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {2, 1, 6, 6, 3, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 0, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    forward_check(&cases[i], TSR_FLOAT32, LAYOUT_NCHW, 900 + i);
    assert_string_equal(g_forward_engine, "ref:conv-c1-direct");
    forward_check(&cases[i], TSR_FLOAT64, LAYOUT_NCHW, 920 + i);
    assert_string_equal(g_forward_engine, "ref:im2col-gemm");
    conv_case act = cases[i];
    act.act = TSR_ACTIVATION_RELU;
    forward_check(&act, TSR_FLOAT32, LAYOUT_NCHW, 940 + i);
    assert_string_equal(g_forward_engine, "ref:conv-c1-direct");
    act.act = TSR_ACTIVATION_SIGMOID;
    forward_check(&act, TSR_FLOAT32, LAYOUT_NCHW, 960 + i);
    assert_string_equal(g_forward_engine, "ref:im2col-gemm");
  }
}

static void test_conv2d_size_zero_and_one_cases(void **state) {
  (void)state;
  // N = 0: nothing to do. C = 0 (K = 0): y = act(bias). O = 0: empty y.
  const conv_case cases[] = {
      {0, 2, 4, 4, 2, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {2, 0, 4, 4, 3, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_RELU},
      {2, 2, 4, 4, 0, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      // Zero-size input rows, all padding.
      {1, 2, 0, 3, 2, 1, 1, {1, 1}, {1, 0}, {1, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    for (int di = 0; di < 4; ++di) forward_check(&cases[i], k_dtypes[di], LAYOUT_NCHW, 40 + i);
  }
}

// ---------------------------------------------------------------------------
// Backward data and filter.

static void backward_data_check(const conv_case *cc, tsr_dtype_t dtype, int layout,
                                uint64_t seed) {
  const int64_t oh = out_size(cc, 0), ow = out_size(cc, 1), cg = cc->c / cc->groups;
  const int64_t xs[] = {cc->n, cc->c, cc->h, cc->w}, ws[] = {cc->o, cg, cc->kh, cc->kw};
  const int64_t ys[] = {cc->n, cc->o, oh, ow};
  tt_tensor dy, w, dx;
  tensor_make(&dy, dtype, 4, ys, layout);
  tensor_make(&w, dtype, 4, ws, layout);
  tensor_make(&dx, dtype, 4, xs, layout);
  tt_fill(&dy, seed, -1, 1);
  tt_fill(&w, seed + 1, -1, 1);
  tsr_conv2d_attrs attrs = attrs_of(cc);
  attrs.activation = TSR_ACTIVATION_NONE;
  tt_tensor *in[] = {&dy, &w};
  tt_tensor *out[] = {&dx};
  assert_int_equal(tt_run(TSR_OP_CONV2D_BACKWARD_DATA, &attrs, in, 2, out, 1, NULL), TSR_OK);
  if (tt_numel(&dx) > 0) {
    double *want, *magnitude;
    conv_oracle(TSR_OP_CONV2D_BACKWARD_DATA, cc, in, 2, out, 1, 0, &want);
    conv_oracle(TSR_OP_CONV2D_BACKWARD_DATA, cc, in, 2, out, 1, 1, &magnitude);
    int64_t idx[4] = {0}, flat = 0;
    do {
      value_check("conv2d dx", idx, tt_get(&dx, idx), want[flat], magnitude[flat], dtype);
      ++flat;
    } while (tt_index_next(idx, 4, xs));
    free(want);
    free(magnitude);
  }
  gaps_check(&dx);
  tt_tensor_free(&dy);
  tt_tensor_free(&w);
  tt_tensor_free(&dx);
}

// The engine of the last backward_filter_check's plan.
static const char *g_filter_engine;

static void backward_filter_check(const conv_case *cc, tsr_dtype_t dtype, int layout,
                                  uint64_t seed) {
  const int64_t oh = out_size(cc, 0), ow = out_size(cc, 1), cg = cc->c / cc->groups;
  const int64_t xs[] = {cc->n, cc->c, cc->h, cc->w}, ws[] = {cc->o, cg, cc->kh, cc->kw};
  const int64_t ys[] = {cc->n, cc->o, oh, ow}, bs[] = {cc->o};
  tt_tensor dy, x, dw, dbias;
  tensor_make(&dy, dtype, 4, ys, layout);
  tensor_make(&x, dtype, 4, xs, layout);
  tensor_make(&dw, dtype, 4, ws, layout);
  tensor_make(&dbias, dtype, 1, bs, layout);
  tt_fill(&dy, seed, -1, 1);
  tt_fill(&x, seed + 1, -1, 1);
  tsr_conv2d_attrs attrs = attrs_of(cc);
  attrs.activation = TSR_ACTIVATION_NONE;
  tt_tensor *in[] = {&dy, &x};
  tt_tensor *out[] = {&dw, &dbias};
  assert_int_equal(tt_run(TSR_OP_CONV2D_BACKWARD_FILTER, &attrs, in, 2, out,
                          cc->has_bias ? 2 : 1, &g_filter_engine),
                   TSR_OK);
  const int32_t outputs = cc->has_bias ? 2 : 1;
  double *want[2] = {NULL, NULL}, *magnitude[2] = {NULL, NULL};
  conv_oracle(TSR_OP_CONV2D_BACKWARD_FILTER, cc, in, 2, out, outputs, 0, want);
  conv_oracle(TSR_OP_CONV2D_BACKWARD_FILTER, cc, in, 2, out, outputs, 1, magnitude);
  if (tt_numel(&dw) > 0) {
    int64_t idx[4] = {0}, i = 0;
    do {
      value_check("conv2d dw", idx, tt_get(&dw, idx), want[0][i], magnitude[0][i], dtype);
      ++i;
    } while (tt_index_next(idx, 4, ws));
  }
  if (cc->has_bias) {
    for (int64_t o = 0; o < cc->o; ++o) {
      const int64_t bi[] = {o}, shown[4] = {o, 0, 0, 0};
      value_check("conv2d dbias", shown, tt_get(&dbias, bi), want[1][o], magnitude[1][o], dtype);
    }
    gaps_check(&dbias);
  }
  for (int k = 0; k < 2; ++k) {
    free(want[k]);
    free(magnitude[k]);
  }
  gaps_check(&dw);
  tt_tensor_free(&dy);
  tt_tensor_free(&x);
  tt_tensor_free(&dw);
  tt_tensor_free(&dbias);
}

static void test_conv2d_backward_data_matches_double_loops(void **state) {
  (void)state;
  for (size_t i = 0; i < CASE_COUNT; ++i) {
    for (int di = 0; di < 4; ++di) {
      for (int layout = 0; layout < LAYOUT_COUNT; ++layout) {
        backward_data_check(&k_cases[i], k_dtypes[di], layout, 100 + i);
      }
    }
  }
}

static void test_conv2d_backward_filter_matches_double_loops_with_and_without_dbias(void **state) {
  (void)state;
  for (size_t i = 0; i < CASE_COUNT; ++i) {
    for (int di = 0; di < 4; ++di) {
      for (int layout = 0; layout < LAYOUT_COUNT; ++layout) {
        backward_filter_check(&k_cases[i], k_dtypes[di], layout, 200 + i);
      }
    }
  }
}

static void test_conv2d_backward_ops_cut_large_images_into_tiles(void **state) {
  (void)state;
  const conv_case big = {3, 32, 24, 23, 6, 3, 3, {1, 1}, {1, 0}, {0, 1}, {1, 1}, 2, 1,
                         TSR_ACTIVATION_NONE};
  backward_data_check(&big, TSR_FLOAT32, LAYOUT_NCHW, 1);
  backward_data_check(&big, TSR_FLOAT64, LAYOUT_GAPPED, 2);
  backward_data_check(&big, TSR_FLOAT16, LAYOUT_NHWC, 3);
  backward_filter_check(&big, TSR_FLOAT32, LAYOUT_NHWC, 4);
  backward_filter_check(&big, TSR_FLOAT64, LAYOUT_NCHW, 5);
  backward_filter_check(&big, TSR_BFLOAT16, LAYOUT_GAPPED, 6);
}

// One input channel per group (float32, up to 3x3, dy's positions
// contiguous) takes the direct kernel (conv_filter_c1.c): several position
// tiles with a partial last vector, padding, strides, dilation, depthwise
// groups with two channels each, dw and dbias both, small and empty batches.
// Other layouts and dtypes of the same shapes keep the GEMM.
static void test_conv2d_backward_filter_with_one_input_channel_runs_the_direct_kernel(
    void **state) {
  (void)state;
  const conv_case cases[] = {
      // n  c  h  w  o kh kw  stride  pad_before pad_after dilation groups bias act
      {5, 1, 30, 29, 7, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {3, 4, 11, 13, 8, 3, 3, {2, 1}, {1, 0}, {1, 2}, {1, 2}, 4, 1, TSR_ACTIVATION_NONE},
      {2, 1, 9, 10, 3, 2, 2, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 1, 0, TSR_ACTIVATION_NONE},
      {1, 3, 6, 17, 3, 1, 3, {1, 3}, {0, 2}, {0, 1}, {1, 1}, 3, 1, TSR_ACTIVATION_NONE},
      {0, 1, 5, 5, 4, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    backward_filter_check(&cases[i], TSR_FLOAT32, LAYOUT_NCHW, 300 + i);
    assert_string_equal(g_filter_engine, "ref:filter-c1-direct");
    backward_filter_check(&cases[i], TSR_FLOAT32, LAYOUT_GAPPED, 310 + i);
    if (cases[i].n > 0) assert_string_equal(g_filter_engine, "ref:im2col-gemm");
    backward_filter_check(&cases[i], TSR_FLOAT64, LAYOUT_NCHW, 320 + i);
    assert_string_equal(g_filter_engine, "ref:im2col-gemm");
  }
}

// Several input channels and one group (float32, a padded image of at most
// 256 KiB) take the multi-channel direct kernel (conv_filter_direct.c) in
// every layout: the CNN's second layer (at 8 images), channel and row counts
// that leave partial register tiles (45 and 20 rows; 13, 5 and 40 output
// channels), padding (asymmetric), strides, dilation, a single image, a
// partial batch of images (3 images of 99 positions: two per step), several
// position tiles per image (400 positions), 1x1, dw and dbias or dw alone.
// float64, groups and a larger padded image keep the GEMM.
static void test_conv2d_backward_filter_with_several_channels_runs_the_direct_kernel(
    void **state) {
  (void)state;
  const conv_case cases[] = {
      // n  c  h  w  o kh kw  stride  pad_before pad_after dilation groups bias act
      {8, 32, 13, 13, 64, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {3, 5, 9, 11, 13, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {1, 7, 12, 10, 21, 3, 3, {1, 1}, {2, 0}, {0, 1}, {1, 1}, 1, 0, TSR_ACTIVATION_NONE},
      {2, 4, 17, 15, 5, 5, 1, {2, 1}, {1, 2}, {2, 0}, {1, 2}, 1, 1, TSR_ACTIVATION_NONE},
      {2, 3, 6, 6, 40, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 0, TSR_ACTIVATION_NONE},
      {2, 3, 22, 22, 64, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    for (int layout = 0; layout < LAYOUT_COUNT; ++layout) {
      backward_filter_check(&cases[i], TSR_FLOAT32, layout, 500 + 10 * i + (uint64_t)layout);
      assert_string_equal(g_filter_engine, "ref:filter-direct");
    }
    backward_filter_check(&cases[i], TSR_FLOAT64, LAYOUT_NCHW, 590 + i);
    assert_string_equal(g_filter_engine, "ref:im2col-gemm");
  }
  const conv_case others[] = {
      // Two groups.
      {2, 4, 9, 9, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2, 1, TSR_ACTIVATION_NONE},
      // 80 x 30 x 30 floats padded: beyond 256 KiB.
      {1, 80, 28, 28, 2, 1, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); ++i) {
    backward_filter_check(&others[i], TSR_FLOAT32, LAYOUT_NCHW, 600 + i);
    assert_string_equal(g_filter_engine, "ref:im2col-gemm");
  }
}

static void test_conv2d_backward_size_zero_and_one_cases(void **state) {
  (void)state;
  // N = 0: dx empty, dw and dbias zero. C = 0: dx empty, dw empty, dbias
  // sums dy. O = 0: dx zero. 1x1 everything.
  const conv_case cases[] = {
      {0, 2, 4, 4, 2, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {2, 0, 4, 4, 3, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {2, 2, 4, 4, 0, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {1, 2, 0, 3, 2, 1, 1, {1, 1}, {1, 0}, {1, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    for (int di = 0; di < 4; ++di) {
      // Poisoned outputs show that N = 0 still writes zeros to dw.
      backward_data_check(&cases[i], k_dtypes[di], LAYOUT_NCHW, 300 + i);
      backward_filter_check(&cases[i], k_dtypes[di], LAYOUT_NCHW, 400 + i);
    }
  }
}

// ---------------------------------------------------------------------------
// Finite differences: with L = sum(y * r) of the float64 forward, dL/dx is
// backward data of dy = r, dL/dw and dL/dbias are backward filter's.

static double forward_loss(const conv_case *cc, tt_tensor *x, tt_tensor *w, tt_tensor *bias,
                           tt_tensor *y, const tt_tensor *r) {
  tsr_conv2d_attrs attrs = attrs_of(cc);
  tt_tensor *in[] = {x, w, bias};
  tt_tensor *out[] = {y};
  assert_int_equal(tt_run(TSR_OP_CONV2D, &attrs, in, 3, out, 1, NULL), TSR_OK);
  double loss = 0;
  int64_t idx[4] = {0};
  do {
    loss += tt_get(y, idx) * tt_get(r, idx);
  } while (tt_index_next(idx, 4, y->desc.sizes));
  return loss;
}

// Checks |grad| against central differences of the loss in every element
// of |param|.
static void differences_check(const char *what, const conv_case *cc, tt_tensor *param,
                              const tt_tensor *grad, tt_tensor *x, tt_tensor *w, tt_tensor *bias,
                              tt_tensor *y, const tt_tensor *r) {
  const double step = 1e-3;
  int64_t idx[4] = {0};
  do {
    const double v = tt_get(param, idx);
    tt_set(param, idx, v + step);
    const double up = forward_loss(cc, x, w, bias, y, r);
    tt_set(param, idx, v - step);
    const double down = forward_loss(cc, x, w, bias, y, r);
    tt_set(param, idx, v);
    const double fd = (up - down) / (2 * step);
    const double got = tt_get(grad, idx);
    if (!tt_close(got, fd, 1e-7, 1e-8)) {
      fail_msg("%s [%lld, %lld, %lld, %lld]: backward %.12g, finite difference %.12g", what,
               (long long)idx[0], (long long)idx[1], (long long)idx[2], (long long)idx[3], got,
               fd);
    }
  } while (tt_index_next(idx, param->desc.rank, param->desc.sizes));
}

static void test_conv2d_backward_ops_match_finite_differences_of_the_forward(void **state) {
  (void)state;
  const conv_case cases[] = {
      {2, 4, 6, 5, 4, 3, 2, {2, 1}, {1, 0}, {0, 1}, {1, 2}, 2, 1, TSR_ACTIVATION_NONE},
      {1, 3, 5, 5, 2, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const conv_case *cc = &cases[i];
    const int64_t oh = out_size(cc, 0), ow = out_size(cc, 1), cg = cc->c / cc->groups;
    const int64_t xs[] = {cc->n, cc->c, cc->h, cc->w}, ws[] = {cc->o, cg, cc->kh, cc->kw};
    const int64_t ys[] = {cc->n, cc->o, oh, ow}, bs[] = {cc->o};
    tt_tensor x, w, bias, y, r, dx, dw, dbias;
    tt_tensor_make(&x, TSR_FLOAT64, 4, xs, NULL, 0);
    tt_tensor_make(&w, TSR_FLOAT64, 4, ws, NULL, 0);
    tt_tensor_make(&bias, TSR_FLOAT64, 1, bs, NULL, 0);
    tt_tensor_make(&y, TSR_FLOAT64, 4, ys, NULL, 0);
    tt_tensor_make(&r, TSR_FLOAT64, 4, ys, NULL, 0);
    tt_tensor_make(&dx, TSR_FLOAT64, 4, xs, NULL, 0);
    tt_tensor_make(&dw, TSR_FLOAT64, 4, ws, NULL, 0);
    tt_tensor_make(&dbias, TSR_FLOAT64, 1, bs, NULL, 0);
    tt_fill(&x, 500 + i, -1, 1);
    tt_fill(&w, 600 + i, -1, 1);
    tt_fill(&bias, 700 + i, -1, 1);
    tt_fill(&r, 800 + i, -1, 1);
    tsr_conv2d_attrs attrs = attrs_of(cc);
    tt_tensor *data_in[] = {&r, &w};
    tt_tensor *data_out[] = {&dx};
    assert_int_equal(tt_run(TSR_OP_CONV2D_BACKWARD_DATA, &attrs, data_in, 2, data_out, 1, NULL),
                     TSR_OK);
    tt_tensor *filter_in[] = {&r, &x};
    tt_tensor *filter_out[] = {&dw, &dbias};
    assert_int_equal(
        tt_run(TSR_OP_CONV2D_BACKWARD_FILTER, &attrs, filter_in, 2, filter_out, 2, NULL), TSR_OK);
    differences_check("dx", cc, &x, &dx, &x, &w, &bias, &y, &r);
    differences_check("dw", cc, &w, &dw, &x, &w, &bias, &y, &r);
    differences_check("dbias", cc, &bias, &dbias, &x, &w, &bias, &y, &r);
    tt_tensor *all[] = {&x, &w, &bias, &y, &r, &dx, &dw, &dbias};
    for (int k = 0; k < 8; ++k) tt_tensor_free(all[k]);
  }
}

// ---------------------------------------------------------------------------
// Threads.

// Runs |op| on a fresh host of |threads| threads and copies its first
// output's bytes to |result|.
static void conv_on_threads(int32_t threads, int32_t op, const conv_case *cc, tsr_dtype_t dtype,
                            char *result, size_t *out_bytes) {
  assert_int_equal(tt_setup(threads), 0);
  const int64_t oh = out_size(cc, 0), ow = out_size(cc, 1), cg = cc->c / cc->groups;
  const int64_t xs[] = {cc->n, cc->c, cc->h, cc->w}, ws[] = {cc->o, cg, cc->kh, cc->kw};
  const int64_t ys[] = {cc->n, cc->o, oh, ow}, bs[] = {cc->o};
  tt_tensor x, w, y, bias;
  tt_tensor_make(&x, dtype, 4, xs, NULL, 0);
  tt_tensor_make(&w, dtype, 4, ws, NULL, 0);
  tt_tensor_make(&y, dtype, 4, ys, NULL, 0);
  tt_tensor_make(&bias, dtype, 1, bs, NULL, 0);
  tt_fill(&x, 1, -1, 1);
  tt_fill(&w, 2, -1, 1);
  tt_fill(&y, 3, -1, 1);
  tt_fill(&bias, 4, -1, 1);
  tsr_conv2d_attrs attrs = attrs_of(cc);
  if (op != TSR_OP_CONV2D) attrs.activation = TSR_ACTIVATION_NONE;
  tt_tensor *result_tensor;
  if (op == TSR_OP_CONV2D) {
    tt_tensor *in[] = {&x, &w, &bias};
    tt_tensor *out[] = {&y};
    assert_int_equal(tt_run(op, &attrs, in, 3, out, 1, NULL), TSR_OK);
    result_tensor = &y;
  } else if (op == TSR_OP_CONV2D_BACKWARD_DATA) {
    tt_tensor *in[] = {&y, &w};
    tt_tensor *out[] = {&x};
    assert_int_equal(tt_run(op, &attrs, in, 2, out, 1, NULL), TSR_OK);
    result_tensor = &x;
  } else {
    tt_tensor *in[] = {&y, &x};
    tt_tensor *out[] = {&w, &bias};
    assert_int_equal(tt_run(op, &attrs, in, 2, out, 2, NULL), TSR_OK);
    result_tensor = &w;
  }
  *out_bytes = (size_t)tt_numel(result_tensor) * tsr_dtype_size(dtype);
  memcpy(result, result_tensor->base, *out_bytes);
  tt_tensor_free(&x);
  tt_tensor_free(&w);
  tt_tensor_free(&y);
  tt_tensor_free(&bias);
}

static void test_conv2d_results_are_bitwise_identical_on_one_and_two_threads(void **state) {
  (void)state;
  const int32_t threads_before = tsr_test_host_get()->thread_count(NULL);
  // Many images; one large image (the forward cuts positions, backward data
  // cuts channels); groups.
  const conv_case cases[] = {
      {8, 16, 13, 13, 32, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_RELU},
      {1, 16, 40, 40, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {3, 32, 20, 20, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 4, 1, TSR_ACTIVATION_NONE},
      // One input channel: the filter gradient's direct kernel.
      {16, 1, 28, 28, 32, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      // The multi-channel one (float32): the CNN's second layer at 8 images
      // (output channel chunks), and with 48 and 10 output channels (row
      // chunks: 3 and 1 blocks of 16 do not divide between two threads),
      // padding, several position tiles.
      {8, 32, 13, 13, 64, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {8, 6, 15, 15, 48, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {3, 9, 30, 30, 10, 3, 3, {1, 1}, {1, 0}, {0, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      // The direct forwards (float32; the cases above without an activation
      // take them too): one input channel (conv_fwd_c1.c), and 32 channels
      // to 40 (3 blocks of 16: image chunks) and to 32 (channel chunks,
      // padding) (conv_fwd_direct.c).
      {16, 1, 28, 28, 40, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {4, 32, 13, 13, 40, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
      {2, 32, 13, 13, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_NONE},
  };
  const int32_t ops[] = {TSR_OP_CONV2D, TSR_OP_CONV2D_BACKWARD_DATA,
                         TSR_OP_CONV2D_BACKWARD_FILTER};
  static char serial[1 << 22], parallel[1 << 22];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    for (int k = 0; k < 3; ++k) {
      for (int d = 0; d < 2; ++d) {
        const tsr_dtype_t dtype = d == 0 ? TSR_FLOAT32 : TSR_FLOAT64;
        size_t bytes_serial, bytes_parallel;
        conv_on_threads(1, ops[k], &cases[i], dtype, serial, &bytes_serial);
        const uint64_t pool_calls = tsr_test_host_parallel_count();
        conv_on_threads(2, ops[k], &cases[i], dtype, parallel, &bytes_parallel);
        assert_true(tsr_test_host_parallel_count() > pool_calls);
        assert_int_equal(bytes_serial, bytes_parallel);
        assert_memory_equal(serial, parallel, bytes_serial);
      }
    }
  }
  assert_int_equal(tt_setup(threads_before), 0);
}

// ---------------------------------------------------------------------------
// Refusals.

static void expect_refusal(int32_t op, const tsr_conv2d_attrs *attrs, tt_tensor *const *in,
                           int32_t num_in, tt_tensor *const *out, int32_t num_out,
                           tsr_status status, const char *message) {
  assert_int_equal(tt_supports(op, attrs, in, num_in, out, num_out), status);
  const char *got = tsr_test_host_error_get();
  if (strstr(got, message) == NULL) fail_msg("message \"%s\" lacks \"%s\"", got, message);
}

static void test_conv2d_rejects_bad_signatures_with_a_message(void **state) {
  (void)state;
  const int64_t xs[] = {2, 4, 5, 5}, ws[] = {6, 2, 3, 3}, ys[] = {2, 6, 3, 3}, bs[] = {6};
  const int64_t bad_ys[] = {2, 6, 4, 3}, x3[] = {2, 4, 5};
  tt_tensor x, w, y, bias, bad_y, ints, doubles, rank3;
  tt_tensor_make(&x, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_tensor_make(&w, TSR_FLOAT32, 4, ws, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 4, ys, NULL, 0);
  tt_tensor_make(&bias, TSR_FLOAT32, 1, bs, NULL, 0);
  tt_tensor_make(&bad_y, TSR_FLOAT32, 4, bad_ys, NULL, 0);
  tt_tensor_make(&ints, TSR_INT32, 4, xs, NULL, 0);
  tt_tensor_make(&doubles, TSR_FLOAT64, 4, ws, NULL, 0);
  tt_tensor_make(&rank3, TSR_FLOAT32, 3, x3, NULL, 0);
  tsr_conv2d_attrs attrs = {sizeof(attrs), {1, 1}, {0, 0}, {0, 0}, {1, 1}, 2,
                            TSR_ACTIVATION_NONE, 0};
  tt_tensor *in[] = {&x, &w, &bias};
  tt_tensor *out[] = {&y};
  assert_int_equal(tt_supports(TSR_OP_CONV2D, &attrs, in, 2, out, 1), TSR_OK);
  // groups 1 would need w with 4 channels.
  assert_int_equal(tt_supports(TSR_OP_CONV2D, NULL, in, 2, out, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "conv2d: w sizes[1] is 2, expected 4"));
  attrs.stride[1] = 0;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "conv2d: stride[1] is 0");
  attrs.stride[1] = 1;
  attrs.dilation[0] = 0;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT, "dilation[0] is 0");
  attrs.dilation[0] = 1;
  attrs.pad_after[1] = -1;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "pad_after[1] is -1");
  attrs.pad_after[1] = 0;
  attrs.groups = 3;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "groups 3 does not divide x's channel count C = 4");
  attrs.groups = 0;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT, "groups is 0");
  attrs.groups = 2;
  attrs.activation = 77;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_UNSUPPORTED, "activation 77");
  attrs.activation = TSR_ACTIVATION_NONE;
  attrs.has_bias = 1;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "num_inputs is 2, expected 3");
  assert_int_equal(tt_supports(TSR_OP_CONV2D, &attrs, in, 3, out, 1), TSR_OK);
  attrs.has_bias = 0;
  out[0] = &bad_y;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "y sizes[2] is 4, expected 3");
  out[0] = &y;
  in[0] = &ints;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT, "take float");
  in[0] = &x;
  in[1] = &doubles;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "w dtype float64 differs from x dtype float32");
  in[1] = &w;
  in[0] = &rank3;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "x rank is 3, expected 4");
  in[0] = &x;
  // A kernel wider than the padded input leaves no output.
  const int64_t wide[] = {6, 2, 7, 3};
  tt_tensor wide_w;
  tt_tensor_make(&wide_w, TSR_FLOAT32, 4, wide, NULL, 0);
  in[1] = &wide_w;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "output height would be -1");
  // Kernels are at least 1 wide.
  const int64_t empty_kernel[] = {6, 2, 0, 3};
  tt_tensor empty_w;
  tt_tensor_make(&empty_w, TSR_FLOAT32, 4, empty_kernel, NULL, 0);
  in[1] = &empty_w;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "w sizes[2] is 0; kernels are at least 1 wide");
  tt_tensor_free(&empty_w);
  in[1] = &w;
  tt_tensor_free(&wide_w);
  // y may not alias x.
  tt_tensor aliased = y;
  aliased.desc.alias_group = 1;
  x.desc.alias_group = 1;
  out[0] = &aliased;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT, "alias group 1");
  x.desc.alias_group = -1;
  out[0] = &y;
  // The backward ops take no activation; has_bias gives backward filter a
  // second output.
  attrs.activation = TSR_ACTIVATION_RELU;
  tt_tensor *data_in[] = {&y, &w};
  tt_tensor *data_out[] = {&x};
  expect_refusal(TSR_OP_CONV2D_BACKWARD_DATA, &attrs, data_in, 2, data_out, 1,
                 TSR_INVALID_ARGUMENT, "conv2d_backward_data: activation is 1");
  attrs.activation = TSR_ACTIVATION_NONE;
  attrs.has_bias = 1;
  assert_int_equal(tt_supports(TSR_OP_CONV2D_BACKWARD_DATA, &attrs, data_in, 2, data_out, 1),
                   TSR_OK);
  tt_tensor *filter_in[] = {&y, &x};
  tt_tensor *filter_out[] = {&w, &bias};
  expect_refusal(TSR_OP_CONV2D_BACKWARD_FILTER, &attrs, filter_in, 2, filter_out, 1,
                 TSR_INVALID_ARGUMENT, "num_outputs is 1, expected 2");
  assert_int_equal(
      tt_supports(TSR_OP_CONV2D_BACKWARD_FILTER, &attrs, filter_in, 2, filter_out, 2), TSR_OK);
  attrs.has_bias = 0;
  filter_in[0] = &bad_y;
  expect_refusal(TSR_OP_CONV2D_BACKWARD_FILTER, &attrs, filter_in, 2, filter_out, 1,
                 TSR_INVALID_ARGUMENT, "dy sizes[2] is 4, expected 3");
  // An output whose elements overlap.
  tt_tensor overlapping = y;
  overlapping.desc.strides[3] = 0;
  out[0] = &overlapping;
  expect_refusal(TSR_OP_CONV2D, &attrs, in, 2, out, 1, TSR_INVALID_ARGUMENT,
                 "y strides[3] = 0 makes elements overlap");
  tt_tensor *all[] = {&x, &w, &y, &bias, &bad_y, &ints, &doubles, &rank3};
  for (int k = 0; k < 8; ++k) tt_tensor_free(all[k]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d_matches_double_loops_for_every_dtype_case_and_layout),
      cmocka_unit_test(test_conv2d_cuts_large_images_into_tiles),
      cmocka_unit_test(test_conv2d_with_one_group_runs_the_direct_forward_kernel),
      cmocka_unit_test(test_conv2d_with_one_input_channel_runs_the_c1_forward_kernel),
      cmocka_unit_test(test_conv2d_size_zero_and_one_cases),
      cmocka_unit_test(test_conv2d_backward_data_matches_double_loops),
      cmocka_unit_test(test_conv2d_backward_filter_matches_double_loops_with_and_without_dbias),
      cmocka_unit_test(test_conv2d_backward_ops_cut_large_images_into_tiles),
      cmocka_unit_test(test_conv2d_backward_filter_with_one_input_channel_runs_the_direct_kernel),
      cmocka_unit_test(test_conv2d_backward_filter_with_several_channels_runs_the_direct_kernel),
      cmocka_unit_test(test_conv2d_backward_size_zero_and_one_cases),
      cmocka_unit_test(test_conv2d_backward_ops_match_finite_differences_of_the_forward),
      cmocka_unit_test(test_conv2d_results_are_bitwise_identical_on_one_and_two_threads),
      cmocka_unit_test(test_conv2d_rejects_bad_signatures_with_a_message),
  };
  int failed =
      cmocka_run_group_tests_name("conv2d, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("conv2d, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
