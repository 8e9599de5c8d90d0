// POOL2D and POOL2D_BACKWARD, MAX and AVG, against the conformance oracle's
// float64 loops of the catalogue's formulas: every float dtype, kernels, strides, asymmetric
// padding, dilation, ceil mode, count_include_pad, NCHW / NHWC / gapped
// views, size-0 and size-1 cases; the first-maximum, NaN and -inf rules;
// the output-size formula; bad indices; the backward against central
// differences of the forward; thread-count independence; refusals.
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

enum { LAYOUT_NCHW = 0, LAYOUT_NHWC = 1, LAYOUT_GAPPED = 2, LAYOUT_COUNT = 3 };

typedef struct pool_case {
  int64_t n, c, h, w;
  int64_t kernel[2], stride[2], pad_before[2], pad_after[2], dilation[2];
  uint32_t ceil_mode, count_include_pad;
} pool_case;

static tsr_pool2d_attrs attrs_of(const pool_case *pc, tsr_pool_kind_t kind) {
  tsr_pool2d_attrs a;
  memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.kind = kind;
  a.ceil_mode = pc->ceil_mode;
  for (int d = 0; d < 2; ++d) {
    a.kernel[d] = pc->kernel[d];
    a.stride[d] = pc->stride[d];
    a.pad_before[d] = pc->pad_before[d];
    a.pad_after[d] = pc->pad_after[d];
    a.dilation[d] = pc->dilation[d];
  }
  a.count_include_pad = pc->count_include_pad;
  return a;
}

// The catalogue's output size, written out with real division.
static int64_t out_size(const pool_case *pc, int d) {
  const int64_t in = d == 0 ? pc->h : pc->w;
  const double e = (double)(pc->dilation[d] * (pc->kernel[d] - 1) + 1);
  const double span = (double)(in + pc->pad_before[d] + pc->pad_after[d]) - e;
  if (!pc->ceil_mode) return (int64_t)floor(span / (double)pc->stride[d]) + 1;
  int64_t out = (int64_t)ceil(span / (double)pc->stride[d]) + 1;
  if ((out - 1) * pc->stride[d] >= in + pc->pad_before[d]) --out;
  return out;
}

static void tensor_make(tt_tensor *t, tsr_dtype_t dtype, const int64_t *sizes, int layout) {
  if (layout == LAYOUT_NHWC) {
    const int32_t perm[] = {0, 3, 1, 2};
    tt_tensor_make_permuted(t, dtype, 4, sizes, perm);
  } else if (layout == LAYOUT_GAPPED) {
    int64_t strides[4], stride = 1;
    for (int32_t d = 3; d >= 0; --d) {
      strides[d] = stride;
      stride *= sizes[d] + 1;
    }
    tt_tensor_make(t, dtype, 4, sizes, strides, 5);
  } else {
    tt_tensor_make(t, dtype, 4, sizes, NULL, 0);
  }
}

// The conformance oracle's |op| (POOL2D or POOL2D_BACKWARD) of |pc| and
// |kind| on the tensors |in|: output 0's values in a new row-major array of
// |out_sizes|, and for a MAX forward the indices in |out_index| (or NULL).
static double *pool_oracle(int32_t op, const pool_case *pc, tsr_pool_kind_t kind,
                           tt_tensor *const *in, int32_t ni, tsr_dtype_t dtype,
                           const int64_t *out_sizes, int64_t **out_index) {
  const tsr_pool2d_attrs attrs = attrs_of(pc, kind);
  tsr_oracle_tensor oin[2], out[2];
  for (int32_t k = 0; k < ni; ++k) oin[k] = tt_oracle_tensor(in[k]);
  assert_int_equal(tsr_oracle_tensor_create(dtype, 4, out_sizes, &out[0]), 0);
  assert_int_equal(tsr_oracle_tensor_create(TSR_INT64, 4, out_sizes, &out[1]), 0);
  const int32_t no = op == TSR_OP_POOL2D && kind == TSR_POOL_MAX ? 2 : 1;
  tsr_oracle_call call = {op, &attrs, ni, no, oin, out, {0}};
  assert_int_equal(tsr_oracle_compute(&call), TSR_OK);
  double *values = out[0].v;
  out[0].v = NULL;
  if (out_index != NULL) {
    *out_index = out[1].iv;
    out[1].iv = NULL;
  }
  for (int32_t k = 0; k < ni; ++k) tsr_oracle_tensor_destroy(&oin[k]);
  tsr_oracle_tensor_destroy(&out[0]);
  tsr_oracle_tensor_destroy(&out[1]);
  return values;
}

static void close_check(const char *what, const int64_t *idx, double got, double want,
                        tsr_dtype_t dtype) {
  const double rtol = dtype == TSR_FLOAT64 ? 1e-14 : dtype == TSR_FLOAT32 ? 1e-6 : tt_rtol(dtype);
  if (!tt_close(got, want, rtol, dtype == TSR_FLOAT64 ? 1e-14 : 1e-6)) {
    fail_msg("%s dtype %d [%lld, %lld, %lld, %lld]: got %.9g, want %.9g", what, (int)dtype,
             (long long)idx[0], (long long)idx[1], (long long)idx[2], (long long)idx[3], got,
             want);
  }
}

// Runs the forward on |x| and checks y (and indices for MAX) against the
// oracle's windows: MAX bit for bit, AVG within the dtype's rounding.
static void forward_run_check(const pool_case *pc, tsr_pool_kind_t kind, tt_tensor *x,
                              int layout) {
  const tsr_dtype_t dtype = x->desc.dtype;
  const int64_t ys[] = {pc->n, pc->c, out_size(pc, 0), out_size(pc, 1)};
  tt_tensor y, indices;
  tensor_make(&y, dtype, ys, layout);
  tensor_make(&indices, TSR_INT64, ys, layout);
  tsr_pool2d_attrs attrs = attrs_of(pc, kind);
  tt_tensor *in[] = {x};
  tt_tensor *out[] = {&y, &indices};
  assert_int_equal(tt_run(TSR_OP_POOL2D, &attrs, in, 1, out, kind == TSR_POOL_MAX ? 2 : 1, NULL),
                   TSR_OK);
  if (tt_numel(&y) > 0) {
    int64_t *want_indices;
    double *want_values = pool_oracle(TSR_OP_POOL2D, pc, kind, in, 1, dtype, ys, &want_indices);
    int64_t idx[4] = {0}, i = 0;
    do {
      const double want = want_values[i];
      const int64_t want_index = want_indices[i++];
      const double got = tt_get(&y, idx);
      if (kind == TSR_POOL_MAX) {
        if (!(got == want || (isnan(got) && isnan(want)))) {
          fail_msg("pool max y [%lld, %lld, %lld, %lld]: got %.9g, want %.9g", (long long)idx[0],
                   (long long)idx[1], (long long)idx[2], (long long)idx[3], got, want);
        }
        assert_int_equal((int64_t)tt_get(&indices, idx), want_index);
      } else {
        close_check("pool avg y", idx, got, want, dtype);
      }
    } while (tt_index_next(idx, 4, ys));
    free(want_values);
    free(want_indices);
  }
  tt_tensor_free(&y);
  tt_tensor_free(&indices);
}

static void forward_check(const pool_case *pc, tsr_pool_kind_t kind, tsr_dtype_t dtype,
                          int layout, uint64_t seed) {
  const int64_t xs[] = {pc->n, pc->c, pc->h, pc->w};
  tt_tensor x;
  tensor_make(&x, dtype, xs, layout);
  // Few distinct values, so windows hold ties.
  tt_fill(&x, seed, -4, 4);
  if (kind == TSR_POOL_MAX && tt_numel(&x) > 0) {
    int64_t idx[4] = {0};
    do {
      tt_set(&x, idx, floor(tt_get(&x, idx)));
    } while (tt_index_next(idx, 4, xs));
  }
  forward_run_check(pc, kind, &x, layout);
  tt_tensor_free(&x);
}

static const pool_case k_cases[] = {
    // n  c  h  w  kernel  stride  pad_before pad_after dilation ceil include_pad
    {2, 3, 7, 6, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0},
    {1, 2, 9, 8, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {1, 1}, 0, 1},
    {2, 2, 9, 8, {3, 2}, {2, 3}, {1, 0}, {0, 1}, {1, 1}, 1, 0},
    {1, 3, 10, 9, {3, 3}, {2, 2}, {1, 1}, {0, 2}, {2, 1}, 1, 1},
    {2, 1, 5, 7, {2, 3}, {3, 2}, {1, 1}, {1, 1}, {2, 2}, 1, 0},
    {1, 2, 5, 5, {5, 5}, {1, 1}, {2, 2}, {2, 2}, {1, 1}, 0, 1},
    {3, 2, 1, 1, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 0, 0},
    {1, 1, 6, 6, {4, 4}, {3, 3}, {1, 2}, {2, 1}, {1, 1}, 1, 1},
    // 2x2/2 with vectors' worth of columns and an odd row and column left over.
    {2, 3, 9, 37, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0},
};
#define CASE_COUNT (sizeof(k_cases) / sizeof(k_cases[0]))

static void test_pool2d_max_and_avg_match_double_loops_for_every_dtype_case_and_layout(
    void **state) {
  (void)state;
  for (size_t i = 0; i < CASE_COUNT; ++i) {
    for (int di = 0; di < 4; ++di) {
      for (int layout = 0; layout < LAYOUT_COUNT; ++layout) {
        forward_check(&k_cases[i], TSR_POOL_MAX, k_dtypes[di], layout, 10 + i);
        forward_check(&k_cases[i], TSR_POOL_AVG, k_dtypes[di], layout, 20 + i);
      }
    }
  }
}

static void test_pool2d_max_picks_the_first_maximum_and_the_first_nan_and_skips_padding(
    void **state) {
  (void)state;
  // 3x3 windows over a 2x2 input padded by one on each side: each of the
  // 2x2 windows covers all four inputs and five padding positions.
  const pool_case pc = {1, 1, 2, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, 0};
  const int64_t xs[] = {1, 1, 2, 2};
  const double inputs[][4] = {
      {-INFINITY, -INFINITY, -INFINITY, -INFINITY},  // all -inf: the first input position
      {1, 3, 3, 2},                                  // tie: the first 3
      {1, NAN, 5, NAN},                              // NaN beats 5; the first NaN
      {-0.0, 0.0, -1, -2},                           // +0 and -0 equal: the first
  };
  const int64_t want_index[] = {0, 1, 1, 0};
  for (int di = 0; di < 4; ++di) {
    for (int k = 0; k < 4; ++k) {
      tt_tensor x;
      tt_tensor_make(&x, k_dtypes[di], 4, xs, NULL, 0);
      int64_t idx[4] = {0};
      for (int i = 0; i < 4; ++i) {
        idx[2] = i / 2;
        idx[3] = i % 2;
        tt_set(&x, idx, inputs[k][i]);
      }
      forward_run_check(&pc, TSR_POOL_MAX, &x, LAYOUT_NCHW);
      // forward_run_check compares with the oracle; pin the rule too.
      const int64_t ys[] = {1, 1, 2, 2};
      tt_tensor y, indices;
      tt_tensor_make(&y, k_dtypes[di], 4, ys, NULL, 0);
      tt_tensor_make(&indices, TSR_INT64, 4, ys, NULL, 0);
      tsr_pool2d_attrs attrs = attrs_of(&pc, TSR_POOL_MAX);
      tt_tensor *in[] = {&x};
      tt_tensor *out[] = {&y, &indices};
      assert_int_equal(tt_run(TSR_OP_POOL2D, &attrs, in, 1, out, 2, NULL), TSR_OK);
      const int64_t first[] = {0, 0, 1, 1};  // the window covering all four inputs
      assert_int_equal((int64_t)tt_get(&indices, first), want_index[k]);
      if (k == 3) assert_true(signbit(tt_get(&y, first)));
      tt_tensor_free(&x);
      tt_tensor_free(&y);
      tt_tensor_free(&indices);
    }
  }
}

static void test_pool2d_output_size_follows_the_formula_and_the_ceil_mode_rule(void **state) {
  (void)state;
  // Kernel 2, stride 2. H = 5, no pad: floor 2, ceil 3. H = 5, pad 1 each
  // side: floor 3; ceil 4, minus the window that would start in the padding
  // after the input: 3. H = 7, pad 1: ceil 5 - 1 = 4.
  struct {
    int64_t in, pad;
    uint32_t ceil_mode;
    int64_t want;
  } rows[] = {{6, 1, 0, 4}, {6, 1, 1, 4}, {5, 0, 0, 2}, {5, 0, 1, 3},
              {5, 1, 0, 3}, {5, 1, 1, 3}, {7, 1, 1, 4}};
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); ++i) {
    const int64_t in = rows[i].in, p = rows[i].pad;
    const pool_case pc = {1, 1, in, in, {2, 2}, {2, 2}, {p, p}, {p, p}, {1, 1}, rows[i].ceil_mode,
                          0};
    assert_int_equal(out_size(&pc, 0), rows[i].want);
    const int64_t xs[] = {1, 1, in, in};
    tt_tensor x;
    tt_tensor_make(&x, TSR_FLOAT32, 4, xs, NULL, 0);
    tt_fill(&x, 7, -1, 1);
    for (int64_t delta = -1; delta <= 1; ++delta) {
      const int64_t ys[] = {1, 1, rows[i].want + delta, rows[i].want};
      tt_tensor y;
      tt_tensor_make(&y, TSR_FLOAT32, 4, ys, NULL, 0);
      tsr_pool2d_attrs attrs = attrs_of(&pc, TSR_POOL_AVG);
      tt_tensor *in_t[] = {&x};
      tt_tensor *out[] = {&y};
      assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in_t, 1, out, 1),
                       delta == 0 ? TSR_OK : TSR_INVALID_ARGUMENT);
      if (delta != 0) {
        assert_non_null(strstr(tsr_test_host_error_get(), "pool2d: y sizes[2] is"));
      }
      tt_tensor_free(&y);
    }
    forward_check(&pc, TSR_POOL_AVG, TSR_FLOAT64, LAYOUT_NCHW, 3);
    forward_check(&pc, TSR_POOL_MAX, TSR_FLOAT64, LAYOUT_NCHW, 4);
    tt_tensor_free(&x);
  }
}

static void test_pool2d_rejects_a_window_wholly_in_the_padding(void **state) {
  (void)state;
  // H = 1, pads 1 and 1, kernel 2, dilation 2: the window's taps are at -1
  // and 1, both padding.
  const int64_t xs[] = {1, 1, 1, 3}, ys[] = {1, 1, 1, 3};
  tt_tensor x, y;
  tt_tensor_make(&x, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 4, ys, NULL, 0);
  const pool_case pc = {1, 1, 1, 3, {2, 1}, {1, 1}, {1, 0}, {1, 0}, {2, 1}, 0, 1};
  assert_int_equal(out_size(&pc, 0), 1);
  tsr_pool2d_attrs attrs = attrs_of(&pc, TSR_POOL_AVG);
  tt_tensor *in[] = {&x};
  tt_tensor *out[] = {&y};
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "window 0 along H lies wholly in the padding"));
  tt_tensor *back_in[] = {&y};
  tt_tensor *back_out[] = {&x};
  assert_int_equal(tt_supports(TSR_OP_POOL2D_BACKWARD, &attrs, back_in, 1, back_out, 1),
                   TSR_INVALID_ARGUMENT);
  tt_tensor_free(&x);
  tt_tensor_free(&y);
}

static void test_pool2d_size_zero_and_one_cases(void **state) {
  (void)state;
  const pool_case cases[] = {
      {0, 3, 4, 4, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0},
      {2, 0, 4, 4, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0},
      {1, 1, 1, 1, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 0, 0},
      {1, 1, 1, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    for (int di = 0; di < 4; ++di) {
      forward_check(&cases[i], TSR_POOL_MAX, k_dtypes[di], LAYOUT_NCHW, 30 + i);
      forward_check(&cases[i], TSR_POOL_AVG, k_dtypes[di], LAYOUT_GAPPED, 40 + i);
    }
  }
}

// ---------------------------------------------------------------------------
// Backward.

// Runs POOL2D_BACKWARD with dy (and, for MAX, indices of the forward of a
// random x) and checks dx against the oracle's.
static void backward_check(const pool_case *pc, tsr_pool_kind_t kind, tsr_dtype_t dtype,
                           int layout, uint64_t seed) {
  const int64_t xs[] = {pc->n, pc->c, pc->h, pc->w};
  const int64_t ys[] = {pc->n, pc->c, out_size(pc, 0), out_size(pc, 1)};
  tt_tensor x, y, indices, dy, dx;
  tensor_make(&x, dtype, xs, LAYOUT_NCHW);
  tensor_make(&y, dtype, ys, LAYOUT_NCHW);
  tensor_make(&indices, TSR_INT64, ys, layout);
  tensor_make(&dy, dtype, ys, layout);
  tensor_make(&dx, dtype, xs, layout);
  tt_fill(&x, seed, -4, 4);
  tt_fill(&dy, seed + 1, -1, 1);
  tsr_pool2d_attrs attrs = attrs_of(pc, kind);
  if (kind == TSR_POOL_MAX) {
    tt_tensor *in[] = {&x};
    tt_tensor *out[] = {&y, &indices};
    assert_int_equal(tt_run(TSR_OP_POOL2D, &attrs, in, 1, out, 2, NULL), TSR_OK);
  }
  tt_tensor *in[] = {&dy, &indices};
  tt_tensor *out[] = {&dx};
  assert_int_equal(tt_run(TSR_OP_POOL2D_BACKWARD, &attrs, in, kind == TSR_POOL_MAX ? 2 : 1, out,
                          1, NULL),
                   TSR_OK);
  const int64_t count = tt_numel(&dx);
  double *want = pool_oracle(TSR_OP_POOL2D_BACKWARD, pc, kind, in, kind == TSR_POOL_MAX ? 2 : 1,
                             dtype, xs, NULL);
  if (count > 0) {
    int64_t idx[4] = {0}, flat = 0;
    do {
      close_check(kind == TSR_POOL_MAX ? "pool max dx" : "pool avg dx", idx, tt_get(&dx, idx),
                  want[flat++], dtype);
    } while (tt_index_next(idx, 4, xs));
  }
  free(want);
  tt_tensor *all[] = {&x, &y, &indices, &dy, &dx};
  for (int k = 0; k < 5; ++k) tt_tensor_free(all[k]);
}

static void test_pool2d_backward_scatters_max_and_distributes_avg(void **state) {
  (void)state;
  for (size_t i = 0; i < CASE_COUNT; ++i) {
    for (int di = 0; di < 4; ++di) {
      for (int layout = 0; layout < LAYOUT_COUNT; ++layout) {
        backward_check(&k_cases[i], TSR_POOL_MAX, k_dtypes[di], layout, 50 + i);
        backward_check(&k_cases[i], TSR_POOL_AVG, k_dtypes[di], layout, 60 + i);
      }
    }
  }
  const pool_case empty[] = {
      {0, 3, 4, 4, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0},
      {1, 1, 1, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1},
  };
  for (int k = 0; k < 2; ++k) {
    backward_check(&empty[k], TSR_POOL_MAX, TSR_FLOAT32, LAYOUT_NCHW, 70);
    backward_check(&empty[k], TSR_POOL_AVG, TSR_FLOAT16, LAYOUT_NCHW, 71);
  }
}

// The 2x2 stride-2 MAX pool on float32 runs without staging through double
// (pool.c: window2_f32); its results must be the double loops' bit for bit:
// the first maximum, the first NaN, -0.0 before +0.0, -inf; dx = 0.0 + dy at
// the chosen element (so -0.0 becomes +0.0, NaN stays NaN) and +0.0
// elsewhere, the odd last row and column included; and indices outside
// their windows (any in [0, H * W) is valid) sum colliding values in double
// and round once.
// |h| x |w| planes: rows of windows longer than a vector (9 x 37: 18, two
// vectors and a tail) and shorter (11 x 11: 5, the CNN's second pool).
static void window2_f32_check(int64_t h, int64_t w) {
  const pool_case pc = {2, 3, h, w, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0};
  const int64_t xs[] = {2, 3, h, w}, ys[] = {2, 3, h / 2, w / 2};
  tt_tensor x, y, indices, dy, dx;
  tt_tensor_make(&x, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 4, ys, NULL, 0);
  tt_tensor_make(&indices, TSR_INT64, 4, ys, NULL, 0);
  tt_tensor_make(&dy, TSR_FLOAT32, 4, ys, NULL, 0);
  tt_tensor_make(&dx, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_fill(&x, 7, -4, 4);
  int64_t idx[4] = {0};
  do {
    tt_set(&x, idx, floor(tt_get(&x, idx)));  // ties
  } while (tt_index_next(idx, 4, xs));
  // Windows of plane (0, 0), row 0: {-0, +0} first, a NaN after a larger
  // number, two NaNs, all -inf.
  const struct { int64_t h, w; double v; } sets[] = {
      {0, 0, -0.0}, {0, 1, 0.0}, {1, 0, -1}, {1, 1, -2},
      {0, 2, 3}, {0, 3, 9}, {1, 2, NAN}, {1, 3, 1},
      {0, 4, 1}, {0, 5, NAN}, {1, 4, 2}, {1, 5, NAN},
      {0, 6, -INFINITY}, {0, 7, -INFINITY}, {1, 6, -INFINITY}, {1, 7, -INFINITY},
  };
  for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); ++i) {
    const int64_t at[] = {0, 0, sets[i].h, sets[i].w};
    tt_set(&x, at, sets[i].v);
  }
  forward_run_check(&pc, TSR_POOL_MAX, &x, LAYOUT_NCHW);
  tsr_pool2d_attrs attrs = attrs_of(&pc, TSR_POOL_MAX);
  {
    tt_tensor *in[] = {&x};
    tt_tensor *out[] = {&y, &indices};
    assert_int_equal(tt_run(TSR_OP_POOL2D, &attrs, in, 1, out, 2, NULL), TSR_OK);
  }
  const int64_t w0[] = {0, 0, 0, 0}, w1[] = {0, 0, 0, 1}, w2[] = {0, 0, 0, 2},
                w3[] = {0, 0, 0, 3};
  assert_true(signbit(tt_get(&y, w0)) && tt_get(&y, w0) == 0.0);
  assert_int_equal((int64_t)tt_get(&indices, w0), 0);
  assert_true(isnan(tt_get(&y, w1)));
  assert_int_equal((int64_t)tt_get(&indices, w1), w + 2);
  assert_int_equal((int64_t)tt_get(&indices, w2), 5);
  assert_true(isinf(tt_get(&y, w3)) && tt_get(&y, w3) < 0);
  assert_int_equal((int64_t)tt_get(&indices, w3), 6);

  tt_fill(&dy, 8, -1, 1);
  tt_set(&dy, w0, -0.0);
  tt_set(&dy, w1, NAN);
  const int64_t plane = h * w;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      // Plane (1, 2): every index on element 5, except one on element 100
      // (inside another window): the planes around it keep their own.
      idx[0] = 1, idx[1] = 2;
      for (idx[2] = 0; idx[2] < ys[2]; ++idx[2]) {
        for (idx[3] = 0; idx[3] < ys[3]; ++idx[3]) tt_set(&indices, idx, 5);
      }
      const int64_t one[] = {1, 2, ys[2] - 1, ys[3] - 1};
      tt_set(&indices, one, 100);
    }
    tt_tensor *in[] = {&dy, &indices};
    tt_tensor *out[] = {&dx};
    assert_int_equal(tt_run(TSR_OP_POOL2D_BACKWARD, &attrs, in, 2, out, 1, NULL), TSR_OK);
    double *want = calloc((size_t)(2 * 3 * plane), sizeof(double));
    memset(idx, 0, sizeof(idx));
    do {
      want[(idx[0] * 3 + idx[1]) * plane + (int64_t)tt_get(&indices, idx)] += tt_get(&dy, idx);
    } while (tt_index_next(idx, 4, ys));
    int64_t flat = 0;
    memset(idx, 0, sizeof(idx));
    do {
      const double got = tt_get(&dx, idx), w = (double)(float)want[flat++];
      if (!((got == w && signbit(got) == signbit(w)) || (isnan(got) && isnan(w)))) {
        fail_msg("pass %d dx [%lld, %lld, %lld, %lld]: got %.9g, want %.9g", pass,
                 (long long)idx[0], (long long)idx[1], (long long)idx[2], (long long)idx[3], got,
                 w);
      }
    } while (tt_index_next(idx, 4, xs));
    assert_false(signbit(tt_get(&dx, w0)));  // 0.0 + -0.0
    free(want);
  }
  tt_tensor *all[] = {&x, &y, &indices, &dy, &dx};
  for (int k = 0; k < 5; ++k) tt_tensor_free(all[k]);
}

static void test_pool2d_2x2_max_on_float32_matches_the_double_rules_bit_for_bit(void **state) {
  (void)state;
  window2_f32_check(9, 37);
  window2_f32_check(11, 11);
}

static void test_pool2d_backward_rejects_an_index_outside_the_plane(void **state) {
  (void)state;
  const pool_case pc = {2, 2, 4, 4, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0};
  const int64_t xs[] = {2, 2, 4, 4}, ys[] = {2, 2, 2, 2};
  tt_tensor dy, indices, dx;
  tt_tensor_make(&dy, TSR_FLOAT32, 4, ys, NULL, 0);
  tt_tensor_make(&indices, TSR_INT64, 4, ys, NULL, 0);
  tt_tensor_make(&dx, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_fill(&dy, 1, -1, 1);
  tt_fill(&indices, 2, 0, 15);
  const int64_t bad[] = {1, 0, 1, 0}, later[] = {1, 1, 0, 1};
  tt_set(&indices, bad, 16);
  tt_set(&indices, later, -1);
  tsr_pool2d_attrs attrs = attrs_of(&pc, TSR_POOL_MAX);
  tt_tensor *in[] = {&dy, &indices};
  tt_tensor *out[] = {&dx};
  assert_int_equal(tt_run(TSR_OP_POOL2D_BACKWARD, &attrs, in, 2, out, 1, NULL),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(),
                         "pool2d_backward: indices[1, 0, 1, 0] is 16, outside [0, H * W = 16)"));
  tt_set(&indices, bad, 3);
  assert_int_equal(tt_run(TSR_OP_POOL2D_BACKWARD, &attrs, in, 2, out, 1, NULL),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "indices[1, 1, 0, 1] is -1"));
  tt_set(&indices, later, 0);
  assert_int_equal(tt_run(TSR_OP_POOL2D_BACKWARD, &attrs, in, 2, out, 1, NULL), TSR_OK);
  tt_tensor_free(&dy);
  tt_tensor_free(&indices);
  tt_tensor_free(&dx);
}

// L = sum(y * r) of the float64 forward; dL/dx is the backward of dy = r.
static double forward_loss(const pool_case *pc, tsr_pool_kind_t kind, tt_tensor *x,
                           const tt_tensor *r) {
  const int64_t ys[] = {pc->n, pc->c, out_size(pc, 0), out_size(pc, 1)};
  tt_tensor y, indices;
  tt_tensor_make(&y, TSR_FLOAT64, 4, ys, NULL, 0);
  tt_tensor_make(&indices, TSR_INT64, 4, ys, NULL, 0);
  tsr_pool2d_attrs attrs = attrs_of(pc, kind);
  tt_tensor *in[] = {x};
  tt_tensor *out[] = {&y, &indices};
  assert_int_equal(tt_run(TSR_OP_POOL2D, &attrs, in, 1, out, kind == TSR_POOL_MAX ? 2 : 1, NULL),
                   TSR_OK);
  double loss = 0;
  int64_t idx[4] = {0};
  do {
    loss += tt_get(&y, idx) * tt_get(r, idx);
  } while (tt_index_next(idx, 4, ys));
  tt_tensor_free(&y);
  tt_tensor_free(&indices);
  return loss;
}

static void test_pool2d_backward_matches_finite_differences_of_the_forward(void **state) {
  (void)state;
  const pool_case cases[] = {
      {2, 2, 7, 6, {3, 2}, {2, 1}, {1, 0}, {1, 1}, {1, 2}, 1, 0},
      {1, 2, 6, 6, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0, 1},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const pool_case *pc = &cases[i];
    for (int k = 0; k < 2; ++k) {
      const tsr_pool_kind_t kind = k == 0 ? TSR_POOL_MAX : TSR_POOL_AVG;
      const int64_t xs[] = {pc->n, pc->c, pc->h, pc->w};
      const int64_t ys[] = {pc->n, pc->c, out_size(pc, 0), out_size(pc, 1)};
      tt_tensor x, y, indices, r, dx;
      tt_tensor_make(&x, TSR_FLOAT64, 4, xs, NULL, 0);
      tt_tensor_make(&y, TSR_FLOAT64, 4, ys, NULL, 0);
      tt_tensor_make(&indices, TSR_INT64, 4, ys, NULL, 0);
      tt_tensor_make(&r, TSR_FLOAT64, 4, ys, NULL, 0);
      tt_tensor_make(&dx, TSR_FLOAT64, 4, xs, NULL, 0);
      // Distinct values at least 1e-3 apart, so a step of 1e-5 never
      // changes which element is the maximum.
      int64_t idx[4] = {0}, count = 0;
      do {
        tt_set(&x, idx, (double)((count * 7919) % 1009) * 1e-3 - 0.5);
        ++count;
      } while (tt_index_next(idx, 4, xs));
      tt_fill(&r, 90 + i, -1, 1);
      tsr_pool2d_attrs attrs = attrs_of(pc, kind);
      tt_tensor *fwd_in[] = {&x};
      tt_tensor *fwd_out[] = {&y, &indices};
      assert_int_equal(
          tt_run(TSR_OP_POOL2D, &attrs, fwd_in, 1, fwd_out, kind == TSR_POOL_MAX ? 2 : 1, NULL),
          TSR_OK);
      tt_tensor *in[] = {&r, &indices};
      tt_tensor *out[] = {&dx};
      assert_int_equal(tt_run(TSR_OP_POOL2D_BACKWARD, &attrs, in, kind == TSR_POOL_MAX ? 2 : 1,
                              out, 1, NULL),
                       TSR_OK);
      const double step = 1e-5;
      memset(idx, 0, sizeof(idx));
      do {
        const double v = tt_get(&x, idx);
        tt_set(&x, idx, v + step);
        const double up = forward_loss(pc, kind, &x, &r);
        tt_set(&x, idx, v - step);
        const double down = forward_loss(pc, kind, &x, &r);
        tt_set(&x, idx, v);
        const double fd = (up - down) / (2 * step);
        if (!tt_close(tt_get(&dx, idx), fd, 1e-7, 1e-8)) {
          fail_msg("pool kind %d dx [%lld, %lld, %lld, %lld]: backward %.12g, finite difference "
                   "%.12g",
                   (int)kind, (long long)idx[0], (long long)idx[1], (long long)idx[2],
                   (long long)idx[3], tt_get(&dx, idx), fd);
        }
      } while (tt_index_next(idx, 4, xs));
      tt_tensor *all[] = {&x, &y, &indices, &r, &dx};
      for (int j = 0; j < 5; ++j) tt_tensor_free(all[j]);
    }
  }
}

// ---------------------------------------------------------------------------
// Threads and refusals.

static void pool_on_threads(int32_t threads, tsr_pool_kind_t kind, int backward, char *result,
                            size_t *out_bytes) {
  assert_int_equal(tt_setup(threads), 0);
  const pool_case pc = {4, 16, 20, 20, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, 0};
  const int64_t xs[] = {4, 16, 20, 20};
  const int64_t ys[] = {4, 16, out_size(&pc, 0), out_size(&pc, 1)};
  tt_tensor x, y, indices, dx;
  tt_tensor_make(&x, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 4, ys, NULL, 0);
  tt_tensor_make(&indices, TSR_INT64, 4, ys, NULL, 0);
  tt_tensor_make(&dx, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_fill(&x, 5, -1, 1);
  tsr_pool2d_attrs attrs = attrs_of(&pc, kind);
  tt_tensor *in[] = {&x};
  tt_tensor *out[] = {&y, &indices};
  assert_int_equal(tt_run(TSR_OP_POOL2D, &attrs, in, 1, out, kind == TSR_POOL_MAX ? 2 : 1, NULL),
                   TSR_OK);
  tt_tensor *result_tensor = &y;
  if (backward) {
    tt_tensor *back_in[] = {&y, &indices};
    tt_tensor *back_out[] = {&dx};
    assert_int_equal(tt_run(TSR_OP_POOL2D_BACKWARD, &attrs, back_in, kind == TSR_POOL_MAX ? 2 : 1,
                            back_out, 1, NULL),
                     TSR_OK);
    result_tensor = &dx;
  }
  *out_bytes = (size_t)tt_numel(result_tensor) * 4;
  memcpy(result, result_tensor->base, *out_bytes);
  tt_tensor *all[] = {&x, &y, &indices, &dx};
  for (int j = 0; j < 4; ++j) tt_tensor_free(all[j]);
}

static void test_pool2d_results_are_bitwise_identical_on_one_and_two_threads(void **state) {
  (void)state;
  const int32_t threads_before = tsr_test_host_get()->thread_count(NULL);
  static char serial[4 * 16 * 20 * 20 * 4], parallel[4 * 16 * 20 * 20 * 4];
  for (int k = 0; k < 2; ++k) {
    for (int backward = 0; backward < 2; ++backward) {
      size_t bytes_serial, bytes_parallel;
      pool_on_threads(1, k == 0 ? TSR_POOL_MAX : TSR_POOL_AVG, backward, serial, &bytes_serial);
      const uint64_t pool_calls = tsr_test_host_parallel_count();
      pool_on_threads(2, k == 0 ? TSR_POOL_MAX : TSR_POOL_AVG, backward, parallel,
                      &bytes_parallel);
      assert_true(tsr_test_host_parallel_count() > pool_calls);
      assert_int_equal(bytes_serial, bytes_parallel);
      assert_memory_equal(serial, parallel, bytes_serial);
    }
  }
  assert_int_equal(tt_setup(threads_before), 0);
}

static void test_pool2d_rejects_bad_signatures_with_a_message(void **state) {
  (void)state;
  const int64_t xs[] = {1, 2, 6, 6}, ys[] = {1, 2, 3, 3};
  tt_tensor x, y, indices, int_indices, doubles;
  tt_tensor_make(&x, TSR_FLOAT32, 4, xs, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 4, ys, NULL, 0);
  tt_tensor_make(&indices, TSR_INT64, 4, ys, NULL, 0);
  tt_tensor_make(&int_indices, TSR_INT32, 4, ys, NULL, 0);
  tt_tensor_make(&doubles, TSR_FLOAT64, 4, ys, NULL, 0);
  const pool_case pc = {1, 2, 6, 6, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0};
  tsr_pool2d_attrs attrs = attrs_of(&pc, TSR_POOL_MAX);
  tt_tensor *in[] = {&x};
  tt_tensor *out[] = {&y, &indices};
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_OK);
  assert_int_equal(tt_supports(TSR_OP_POOL2D, NULL, in, 1, out, 2), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "pool2d: attrs is NULL"));
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "num_outputs is 1, expected 2"));
  out[1] = &int_indices;
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "indices dtype int32 is not allowed"));
  out[1] = &indices;
  out[0] = &doubles;
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "y dtype float64 differs from x dtype float32"));
  out[0] = &y;
  attrs.kernel[1] = 0;
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "pool2d: kernel[1] is 0"));
  attrs.kernel[1] = 2;
  attrs.stride[0] = 0;
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "stride[0] is 0"));
  attrs.stride[0] = 2;
  attrs.pad_before[0] = -1;
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "pad_before[0] is -1"));
  attrs.pad_before[0] = 0;
  // A window larger than the padded input leaves no output.
  attrs.kernel[0] = 8;
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "pool2d: output height would be 0"));
  attrs.kernel[0] = 2;
  attrs.kind = 5;  // maybe from a newer catalogue: unsupported
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 2), TSR_UNSUPPORTED);
  assert_non_null(strstr(tsr_test_host_error_get(), "kind 5 is unknown"));
  attrs.kind = TSR_POOL_AVG;
  assert_int_equal(tt_supports(TSR_OP_POOL2D, &attrs, in, 1, out, 1), TSR_OK);
  tt_tensor *back_in[] = {&y, &indices};
  tt_tensor *back_out[] = {&x};
  assert_int_equal(tt_supports(TSR_OP_POOL2D_BACKWARD, &attrs, back_in, 2, back_out, 1),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "num_inputs is 2, expected 1"));
  attrs.kind = TSR_POOL_MAX;
  assert_int_equal(tt_supports(TSR_OP_POOL2D_BACKWARD, &attrs, back_in, 2, back_out, 1), TSR_OK);
  // dx may not alias dy.
  tt_tensor aliased = x;
  aliased.desc.alias_group = 4;
  y.desc.alias_group = 4;
  back_out[0] = &aliased;
  assert_int_equal(tt_supports(TSR_OP_POOL2D_BACKWARD, &attrs, back_in, 2, back_out, 1),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "alias group 4"));
  y.desc.alias_group = -1;
  tt_tensor *all[] = {&x, &y, &indices, &int_indices, &doubles};
  for (int j = 0; j < 5; ++j) tt_tensor_free(all[j]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(
          test_pool2d_max_and_avg_match_double_loops_for_every_dtype_case_and_layout),
      cmocka_unit_test(
          test_pool2d_max_picks_the_first_maximum_and_the_first_nan_and_skips_padding),
      cmocka_unit_test(test_pool2d_output_size_follows_the_formula_and_the_ceil_mode_rule),
      cmocka_unit_test(test_pool2d_rejects_a_window_wholly_in_the_padding),
      cmocka_unit_test(test_pool2d_size_zero_and_one_cases),
      cmocka_unit_test(test_pool2d_backward_scatters_max_and_distributes_avg),
      cmocka_unit_test(test_pool2d_2x2_max_on_float32_matches_the_double_rules_bit_for_bit),
      cmocka_unit_test(test_pool2d_backward_rejects_an_index_outside_the_plane),
      cmocka_unit_test(test_pool2d_backward_matches_finite_differences_of_the_forward),
      cmocka_unit_test(test_pool2d_results_are_bitwise_identical_on_one_and_two_threads),
      cmocka_unit_test(test_pool2d_rejects_bad_signatures_with_a_message),
  };
  int failed =
      cmocka_run_group_tests_name("pool2d, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("pool2d, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
