// The oracle's backward ops against float64 central finite differences of
// its own forward ops. The suite checks a plugin's backward against the
// oracle's backward; this is what makes that oracle trustworthy.
//
// For a forward y = f(x) and a random cotangent dy, L(x) = sum(dy * f(x))
// has dL/dx = backward(dy, ...). Each input element is nudged by +-h and
// (L(x + h) - L(x - h)) / 2h must match the backward within 1e-6 relative
// (the central difference's own error is O(h^2) for these smooth points).
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "oracle_util.h"

// The forward of one test: inputs, output shapes, which output the loss
// weighs; |eval| recomputes the loss for the current inputs.
typedef struct forward {
  int32_t op;
  const void *attrs;
  tsr_oracle_tensor *inputs;
  int32_t num_inputs;
  tsr_oracle_tensor *outputs;  // scratch, shaped
  int32_t num_outputs;
  const tsr_oracle_tensor *weights;  // dy, one per weighed output (NULL: not weighed)
  int32_t weighed[4];
  int32_t num_weighed;
} forward;

static double loss(forward *f) {
  assert_int_equal(tsr_test_run(f->op, f->attrs, f->inputs, f->num_inputs, f->outputs, f->num_outputs), TSR_OK);
  double l = 0;
  for (int32_t k = 0; k < f->num_weighed; ++k) l += tsr_test_dot(&f->weights[k], &f->outputs[f->weighed[k]]);
  return l;
}

// Checks |grad| against the central difference of the loss in input |which|.
static void finite_difference_check(forward *f, int32_t which, const tsr_oracle_tensor *grad, const char *what) {
  tsr_oracle_tensor *x = &f->inputs[which];
  double worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < x->numel; ++i) {
    double saved = x->v[i];
    double h = 1e-6 * (fabs(saved) > 1 ? fabs(saved) : 1.0);
    x->v[i] = saved + h;
    double up = loss(f);
    x->v[i] = saved - h;
    double down = loss(f);
    x->v[i] = saved;
    double fd = (up - down) / (2 * h);
    double err = fabs(fd - grad->v[i]) / (1e-4 + fabs(fd) + fabs(grad->v[i]));
    if (err > worst) worst = err, worst_at = i;
  }
  if (worst > 1e-6) {
    fail_msg("%s: element %lld: finite difference and the oracle's backward differ by %g (relative)", what,
             (long long)worst_at, worst);
  }
}

static void test_unary_backward_matches_finite_differences(void **state) {
  (void)state;
  static const double points[] = {-3.1, -1.7, -0.6, -0.05, 0.03, 0.4, 1.3, 2.9};
  for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
    if (!tsr_oracle_unary_has_backward(fn)) continue;
    double alpha = fn == TSR_UNARY_ELU ? 0.7 : fn == TSR_UNARY_LEAKY_RELU ? 0.05 : 0;
    for (size_t k = 0; k < sizeof(points) / sizeof(points[0]); ++k) {
      double x = points[k];
      if ((fn == TSR_UNARY_LOG || fn == TSR_UNARY_SQRT || fn == TSR_UNARY_RSQRT) && x <= 0) x = -x;
      if (fn == TSR_UNARY_LOG1P && x <= -1) continue;
      double h = 1e-6 * (fabs(x) > 1 ? fabs(x) : 1.0);
      double fd = (tsr_oracle_unary_value(fn, x + h, alpha) - tsr_oracle_unary_value(fn, x - h, alpha)) / (2 * h);
      // Through the op as the suite uses it: dx = dy * f'(x).
      int64_t n = 1;
      tsr_oracle_tensor in[2] = {tsr_test_tensor(TSR_FLOAT64, 1, &n, (double[]){0.75}),
                                 tsr_test_tensor(TSR_FLOAT64, 1, &n, &x)};
      tsr_oracle_tensor dx = tsr_test_tensor(TSR_FLOAT64, 1, &n, NULL);
      tsr_unary_attrs a = {sizeof(a), fn, 0, alpha};
      assert_int_equal(tsr_test_run(TSR_OP_UNARY_BACKWARD, &a, in, 2, &dx, 1), TSR_OK);
      double err = fabs(0.75 * fd - dx.v[0]) / (1e-4 + fabs(fd));
      if (err > 1e-6) fail_msg("unary fn %d at %g: f' by differences %.12g, oracle %.12g", (int)fn, x, 0.75 * fd, dx.v[0]);
      tsr_oracle_tensor_destroy(&in[0]), tsr_oracle_tensor_destroy(&in[1]), tsr_oracle_tensor_destroy(&dx);
    }
  }
}

static void test_conv2d_backward_ops_match_finite_differences(void **state) {
  (void)state;
  int64_t xs[4] = {2, 4, 6, 5}, ws[4] = {6, 2, 3, 3}, bs[1] = {6};
  tsr_conv2d_attrs a = {.struct_size = sizeof(a), .stride = {2, 1}, .pad_before = {1, 0}, .pad_after = {0, 1},
                        .dilation = {1, 2}, .groups = 2, .has_bias = 1};
  // OH = (6 + 1 - 1*2 - 1)/2 + 1 = 3, OW = (5 + 1 - 2*2 - 1)/1 + 1 = 2
  int64_t ys[4] = {2, 6, 3, 2};
  tsr_oracle_tensor in[3] = {tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL), tsr_test_tensor(TSR_FLOAT64, 4, ws, NULL),
                             tsr_test_tensor(TSR_FLOAT64, 1, bs, NULL)};
  tsr_test_random_fill(&in[0], 1, -1, 1);
  tsr_test_random_fill(&in[1], 2, -1, 1);
  tsr_test_random_fill(&in[2], 3, -1, 1);
  tsr_oracle_tensor y = tsr_test_tensor(TSR_FLOAT64, 4, ys, NULL), dy = tsr_test_tensor(TSR_FLOAT64, 4, ys, NULL);
  tsr_test_random_fill(&dy, 4, -1, 1);
  forward f = {TSR_OP_CONV2D, &a, in, 3, &y, 1, &dy, {0}, 1};
  // dx from backward data.
  tsr_conv2d_attrs bd = a;
  bd.has_bias = 0;
  tsr_oracle_tensor bd_in[2] = {dy, in[1]};
  tsr_oracle_tensor dx = tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL);
  assert_int_equal(tsr_test_run(TSR_OP_CONV2D_BACKWARD_DATA, &bd, bd_in, 2, &dx, 1), TSR_OK);
  finite_difference_check(&f, 0, &dx, "conv2d dx");
  // dw and dbias from backward filter.
  tsr_oracle_tensor bf_in[2] = {dy, in[0]};
  tsr_oracle_tensor bf_out[2] = {tsr_test_tensor(TSR_FLOAT64, 4, ws, NULL), tsr_test_tensor(TSR_FLOAT64, 1, bs, NULL)};
  assert_int_equal(tsr_test_run(TSR_OP_CONV2D_BACKWARD_FILTER, &a, bf_in, 2, bf_out, 2), TSR_OK);
  finite_difference_check(&f, 1, &bf_out[0], "conv2d dw");
  finite_difference_check(&f, 2, &bf_out[1], "conv2d dbias");
  for (int i = 0; i < 3; ++i) tsr_oracle_tensor_destroy(&in[i]);
  tsr_oracle_tensor_destroy(&y), tsr_oracle_tensor_destroy(&dy), tsr_oracle_tensor_destroy(&dx);
  tsr_oracle_tensor_destroy(&bf_out[0]), tsr_oracle_tensor_destroy(&bf_out[1]);
}

static void pool_case(tsr_pool_kind_t kind, uint32_t ceil_mode, uint32_t include_pad) {
  int64_t xs[4] = {2, 2, 7, 6};
  tsr_pool2d_attrs a = {.struct_size = sizeof(a), .kind = kind, .ceil_mode = ceil_mode, .kernel = {3, 2},
                        .stride = {2, 2}, .pad_before = {1, 0}, .pad_after = {1, 1}, .dilation = {1, 1},
                        .count_include_pad = include_pad};
  // H: 7 + 2 - 3 = 6 -> 6/2 + 1 = 4 either way; W: 6 + 1 - 2 = 5 -> floor 3, ceil 4 (start 6 >= 6: 3)
  int64_t ys[4] = {2, 2, 4, 3};
  tsr_oracle_tensor x = tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL);
  tsr_test_random_fill(&x, 11 + kind, -1, 1);
  tsr_oracle_tensor outs[2] = {tsr_test_tensor(TSR_FLOAT64, 4, ys, NULL), tsr_test_tensor(TSR_INT64, 4, ys, NULL)};
  tsr_oracle_tensor dy = tsr_test_tensor(TSR_FLOAT64, 4, ys, NULL);
  tsr_test_random_fill(&dy, 12, -1, 1);
  int32_t nout = kind == TSR_POOL_MAX ? 2 : 1;
  assert_int_equal(tsr_test_run(TSR_OP_POOL2D, &a, &x, 1, outs, nout), TSR_OK);
  tsr_oracle_tensor back_in[2] = {dy, outs[1]};
  tsr_oracle_tensor dx = tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL);
  assert_int_equal(tsr_test_run(TSR_OP_POOL2D_BACKWARD, &a, back_in, nout, &dx, 1), TSR_OK);
  forward f = {TSR_OP_POOL2D, &a, &x, 1, outs, nout, &dy, {0}, 1};
  finite_difference_check(&f, 0, &dx, kind == TSR_POOL_MAX ? "max pool dx" : "avg pool dx");
  tsr_oracle_tensor_destroy(&x), tsr_oracle_tensor_destroy(&outs[0]), tsr_oracle_tensor_destroy(&outs[1]);
  tsr_oracle_tensor_destroy(&dy), tsr_oracle_tensor_destroy(&dx);
}

static void test_pool2d_backward_matches_finite_differences(void **state) {
  (void)state;
  pool_case(TSR_POOL_MAX, 0, 0);
  pool_case(TSR_POOL_AVG, 0, 1);
  pool_case(TSR_POOL_AVG, 1, 0);
  pool_case(TSR_POOL_AVG, 1, 1);
}

static void test_softmax_backward_matches_finite_differences(void **state) {
  (void)state;
  for (uint32_t log = 0; log < 2; ++log) {
    for (int32_t axis = 0; axis < 2; ++axis) {
      int64_t s[2] = {4, 7};
      tsr_softmax_attrs a = {sizeof(a), axis, log};
      tsr_oracle_tensor x = tsr_test_tensor(TSR_FLOAT64, 2, s, NULL), y = tsr_test_tensor(TSR_FLOAT64, 2, s, NULL);
      tsr_oracle_tensor dy = tsr_test_tensor(TSR_FLOAT64, 2, s, NULL), dx = tsr_test_tensor(TSR_FLOAT64, 2, s, NULL);
      tsr_test_random_fill(&x, 21 + axis, -3, 3);
      tsr_test_random_fill(&dy, 22, -1, 1);
      assert_int_equal(tsr_test_run(TSR_OP_SOFTMAX, &a, &x, 1, &y, 1), TSR_OK);
      tsr_oracle_tensor back_in[2] = {dy, y};
      assert_int_equal(tsr_test_run(TSR_OP_SOFTMAX_BACKWARD, &a, back_in, 2, &dx, 1), TSR_OK);
      forward f = {TSR_OP_SOFTMAX, &a, &x, 1, &y, 1, &dy, {0}, 1};
      finite_difference_check(&f, 0, &dx, log ? "log_softmax dx" : "softmax dx");
      tsr_oracle_tensor_destroy(&x), tsr_oracle_tensor_destroy(&y), tsr_oracle_tensor_destroy(&dy);
      tsr_oracle_tensor_destroy(&dx);
    }
  }
}

static void test_layer_norm_backward_matches_finite_differences(void **state) {
  (void)state;
  int64_t xs[3] = {3, 4, 5}, ns[2] = {4, 5}, ss[3] = {3, 1, 1};
  tsr_layer_norm_attrs a = {sizeof(a), 1, 1, 1e-3};
  tsr_oracle_tensor in[3] = {tsr_test_tensor(TSR_FLOAT64, 3, xs, NULL), tsr_test_tensor(TSR_FLOAT64, 2, ns, NULL),
                             tsr_test_tensor(TSR_FLOAT64, 2, ns, NULL)};
  tsr_test_random_fill(&in[0], 31, -2, 3);
  tsr_test_random_fill(&in[1], 32, 0.5, 1.5);
  tsr_test_random_fill(&in[2], 33, -1, 1);
  tsr_oracle_tensor outs[3] = {tsr_test_tensor(TSR_FLOAT64, 3, xs, NULL), tsr_test_tensor(TSR_FLOAT64, 3, ss, NULL),
                               tsr_test_tensor(TSR_FLOAT64, 3, ss, NULL)};
  tsr_oracle_tensor dy = tsr_test_tensor(TSR_FLOAT64, 3, xs, NULL);
  tsr_test_random_fill(&dy, 34, -1, 1);
  assert_int_equal(tsr_test_run(TSR_OP_LAYER_NORM, &a, in, 3, outs, 3), TSR_OK);
  tsr_oracle_tensor back_in[5] = {dy, in[0], outs[1], outs[2], in[1]};
  tsr_oracle_tensor grads[3] = {tsr_test_tensor(TSR_FLOAT64, 3, xs, NULL), tsr_test_tensor(TSR_FLOAT64, 2, ns, NULL),
                                tsr_test_tensor(TSR_FLOAT64, 2, ns, NULL)};
  assert_int_equal(tsr_test_run(TSR_OP_LAYER_NORM_BACKWARD, &a, back_in, 5, grads, 3), TSR_OK);
  // Copies of the statistics tensors are recomputed by every forward: only
  // y is weighed.
  tsr_oracle_tensor scratch[3] = {tsr_test_tensor(TSR_FLOAT64, 3, xs, NULL), tsr_test_tensor(TSR_FLOAT64, 3, ss, NULL),
                                  tsr_test_tensor(TSR_FLOAT64, 3, ss, NULL)};
  forward f = {TSR_OP_LAYER_NORM, &a, in, 3, scratch, 3, &dy, {0}, 1};
  finite_difference_check(&f, 0, &grads[0], "layer_norm dx");
  finite_difference_check(&f, 1, &grads[1], "layer_norm dgamma");
  finite_difference_check(&f, 2, &grads[2], "layer_norm dbeta");
  for (int i = 0; i < 3; ++i) {
    tsr_oracle_tensor_destroy(&in[i]), tsr_oracle_tensor_destroy(&outs[i]);
    tsr_oracle_tensor_destroy(&grads[i]), tsr_oracle_tensor_destroy(&scratch[i]);
  }
  tsr_oracle_tensor_destroy(&dy);
}

static void batch_norm_case(uint32_t training) {
  int64_t xs[4] = {3, 2, 2, 3}, cs[1] = {2};
  tsr_batch_norm_attrs a = {sizeof(a), 1e-3, 0.1, training, 0};
  tsr_oracle_tensor in[5];
  in[0] = tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL);
  for (int k = 1; k < 5; ++k) in[k] = tsr_test_tensor(TSR_FLOAT64, 1, cs, NULL);
  tsr_test_random_fill(&in[0], 41, -2, 3);
  tsr_test_random_fill(&in[1], 42, 0.5, 1.5);
  tsr_test_random_fill(&in[2], 43, -1, 1);
  tsr_test_random_fill(&in[3], 44, -0.5, 0.5);
  tsr_test_random_fill(&in[4], 45, 0.5, 2);
  tsr_oracle_tensor outs[5];
  outs[0] = tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL);
  for (int k = 1; k < 5; ++k) outs[k] = tsr_test_tensor(TSR_FLOAT64, 1, cs, NULL);
  tsr_oracle_tensor dy = tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL);
  tsr_test_random_fill(&dy, 46, -1, 1);
  assert_int_equal(tsr_test_run(TSR_OP_BATCH_NORM, &a, in, 5, outs, 5), TSR_OK);
  tsr_oracle_tensor back_in[5] = {dy, in[0], in[1], outs[1], outs[2]};
  tsr_oracle_tensor grads[3] = {tsr_test_tensor(TSR_FLOAT64, 4, xs, NULL), tsr_test_tensor(TSR_FLOAT64, 1, cs, NULL),
                                tsr_test_tensor(TSR_FLOAT64, 1, cs, NULL)};
  assert_int_equal(tsr_test_run(TSR_OP_BATCH_NORM_BACKWARD, &a, back_in, 5, grads, 3), TSR_OK);
  forward f = {TSR_OP_BATCH_NORM, &a, in, 5, outs, 5, &dy, {0}, 1};
  finite_difference_check(&f, 0, &grads[0], training ? "batch_norm dx (training)" : "batch_norm dx (inference)");
  finite_difference_check(&f, 1, &grads[1], "batch_norm dgamma");
  finite_difference_check(&f, 2, &grads[2], "batch_norm dbeta");
  for (int k = 0; k < 5; ++k) tsr_oracle_tensor_destroy(&in[k]), tsr_oracle_tensor_destroy(&outs[k]);
  for (int k = 0; k < 3; ++k) tsr_oracle_tensor_destroy(&grads[k]);
  tsr_oracle_tensor_destroy(&dy);
}

static void test_batch_norm_backward_matches_finite_differences(void **state) {
  (void)state;
  batch_norm_case(1);
  batch_norm_case(0);
}

static void cross_entropy_case(tsr_reduction_t reduction, double smoothing) {
  int64_t ls[2] = {5, 4}, n = 5;
  tsr_cross_entropy_attrs a = {sizeof(a), reduction, 0, 2, smoothing};
  tsr_oracle_tensor in[2] = {tsr_test_tensor(TSR_FLOAT64, 2, ls, NULL),
                             tsr_test_tensor(TSR_INT64, 1, &n, (double[]){0, 2, 3, 1, 2})};  // 2 is ignored
  tsr_test_random_fill(&in[0], 51, -3, 3);
  int32_t loss_rank = reduction == TSR_REDUCTION_NONE ? 1 : 0;
  tsr_oracle_tensor outs[2] = {tsr_test_tensor(TSR_FLOAT64, loss_rank, &n, NULL), tsr_test_tensor(TSR_FLOAT32, 1, &n, NULL)};
  tsr_oracle_tensor dloss = tsr_test_tensor(TSR_FLOAT64, loss_rank, &n, NULL);
  tsr_test_random_fill(&dloss, 52, 0.5, 1.5);
  assert_int_equal(tsr_test_run(TSR_OP_CROSS_ENTROPY, &a, in, 2, outs, 2), TSR_OK);
  tsr_oracle_tensor back_in[4] = {dloss, in[0], in[1], outs[1]};
  tsr_oracle_tensor dlogits = tsr_test_tensor(TSR_FLOAT64, 2, ls, NULL);
  assert_int_equal(tsr_test_run(TSR_OP_CROSS_ENTROPY_BACKWARD, &a, back_in, 4, &dlogits, 1), TSR_OK);
  forward f = {TSR_OP_CROSS_ENTROPY, &a, in, 2, outs, 2, &dloss, {0}, 1};
  char what[64];
  snprintf(what, sizeof(what), "cross_entropy dlogits (reduction %d, smoothing %g)", (int)reduction, smoothing);
  finite_difference_check(&f, 0, &dlogits, what);
  tsr_oracle_tensor_destroy(&in[0]), tsr_oracle_tensor_destroy(&in[1]), tsr_oracle_tensor_destroy(&outs[0]);
  tsr_oracle_tensor_destroy(&outs[1]), tsr_oracle_tensor_destroy(&dloss), tsr_oracle_tensor_destroy(&dlogits);
}

static void test_cross_entropy_backward_matches_finite_differences(void **state) {
  (void)state;
  cross_entropy_case(TSR_REDUCTION_NONE, 0.0);
  cross_entropy_case(TSR_REDUCTION_MEAN, 0.1);
  cross_entropy_case(TSR_REDUCTION_SUM, 0.25);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_backward_matches_finite_differences),
      cmocka_unit_test(test_conv2d_backward_ops_match_finite_differences),
      cmocka_unit_test(test_pool2d_backward_matches_finite_differences),
      cmocka_unit_test(test_softmax_backward_matches_finite_differences),
      cmocka_unit_test(test_layer_norm_backward_matches_finite_differences),
      cmocka_unit_test(test_batch_norm_backward_matches_finite_differences),
      cmocka_unit_test(test_cross_entropy_backward_matches_finite_differences),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
