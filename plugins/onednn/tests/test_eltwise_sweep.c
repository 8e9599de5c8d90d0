// Every elementwise function the oneDNN plugin serves, on whichever engine
// its accuracy check (eltwise_check.h) picked on this CPU and oneDNN, over a
// sweep of inputs denser than the check's own row and offset from it, judged
// by the conformance suite's oracle with the suite's comparison (value,
// error bound, final rounding, smallest normal). So a vendor kernel that the
// check let through but that misses the documented tolerance somewhere the
// row did not look fails here, and so does an own kernel that misses it.
//
// Covered: UNARY and UNARY_BACKWARD of every function with an eltwise
// algorithm, and the fused activations of MATMUL (a [M, 1] @ [1, 16] product
// of ones, so the post-op sees each input exactly) and CONV2D (a 1x1
// convolution from one channel to 16 with unit weights).
//
// Compile definition: TSR_TEST_ONEDNN_PATH (the plugin .so).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_test_util.h"
#include "oracle/oracle.h"  // conformance/oracle (sdk/tests has an oracle.h too)
#include "tessera/tessera.h"
#include "test_support.h"

// The sweep: [-16, 16] on a grid of 2^-13 shifted by 2^-14 (so no value is
// on the check's 2^-11 grid), 4096 values per binade from 2^-30 to 2^17 by
// bit pattern starting half a step off the check's, both signs, and exp's
// bands [-104, -80] and [80, 90] on 2^-10 shifted by 2^-11. About 680,000
// values.
static int64_t sweep_fill(double *x) {
  int64_t n = 0;
  for (int64_t i = -16 * 8192; i < 16 * 8192; ++i, ++n) {
    if (x != NULL)
      x[n] = ldexp((double)(2 * i + 1), -14);
  }
  for (uint32_t bits = 0x30800000u + (1u << 10); bits < 0x48000000u; bits += 1u << 11) {
    if (x != NULL) {
      float v;
      memcpy(&v, &bits, sizeof(v));
      x[n] = v;
      x[n + 1] = -v;
    }
    n += 2;
  }
  for (int64_t i = -104 * 1024; i < -80 * 1024; ++i, ++n) {
    if (x != NULL)
      x[n] = ldexp((double)(2 * i + 1), -11);
  }
  for (int64_t i = 80 * 1024; i < 90 * 1024; ++i, ++n) {
    if (x != NULL)
      x[n] = ldexp((double)(2 * i + 1), -11);
  }
  return n;
}

// The suite's comparison of one float32 element (conformance/suite/numerics.c):
// err/tol, where <= 1 passes.
static double ratio_of(double got, const tsr_oracle_tensor *want, int64_t i) {
  const double w = want->v[i];
  if (isnan(w) || isnan(got))
    return isnan(w) && isnan(got) ? 0 : INFINITY;
  const double uo = tsr_oracle_unit_roundoff(TSR_FLOAT32);
  if (want->compare != TSR_ORACLE_TOLERANCE) {
    const double wr = tsr_oracle_round(tsr_oracle_round(w, want->compute), TSR_FLOAT32);
    if (got == wr)
      return 0;
    return isinf(wr) || isinf(got) ? INFINITY
                                   : fabs(got - wr) / (0.5 * tsr_oracle_ulp(wr, TSR_FLOAT32));
  }
  const double bound = isfinite(want->bound[i]) ? want->bound[i] : 0;
  const double tol = bound * tsr_oracle_unit_roundoff(want->compute) + uo * fabs(w) + FLT_MIN;
  if (isinf(w))
    return got == w ? 0 : INFINITY;
  if (isinf(got)) {
    const int ok = signbit(got) == signbit(w) && fabs(w) + tol >= FLT_MAX;
    return ok ? 1 : INFINITY;
  }
  return fabs(got - w) / tol;
}

// Inputs of one op, as doubles, and their shapes.
typedef struct sweep_operand {
  int32_t rank;
  int64_t sizes[4];
  const double *values;
} sweep_operand;

// Runs |op| on g_device, the oracle on the same inputs, and fails when any
// output element is outside the suite's tolerance. |x_of_output| names the
// input each output element was computed from, for the messages.
static void sweep_run(const char *what, int32_t op, const void *attrs, int32_t num_inputs,
                      const sweep_operand *inputs, const sweep_operand *output,
                      const double *x_of_output) {
  tsr_tensor *tin[3] = {NULL, NULL, NULL};
  tsr_oracle_tensor oin[3];
  memset(oin, 0, sizeof(oin));
  for (int32_t k = 0; k < num_inputs; ++k) {
    tin[k] = ts_tensor(g_device, TSR_FLOAT32, inputs[k].rank, inputs[k].sizes, inputs[k].values);
    TS_ASSERT_TENSOR(tin[k]);
    assert_int_equal(
        tsr_oracle_tensor_create(TSR_FLOAT32, inputs[k].rank, inputs[k].sizes, &oin[k]), 0);
    for (int64_t i = 0; i < oin[k].numel; ++i) {
      // The plugin sees the values rounded to float32; so does the oracle.
      tsr_oracle_tensor_set(&oin[k], i, (double)(float)inputs[k].values[i], 0);
    }
  }
  tsr_tensor *tout = tsr_tensor_empty(g_device, TSR_FLOAT32, output->rank, output->sizes);
  TS_ASSERT_TENSOR(tout);
  tsr_oracle_tensor oout;
  assert_int_equal(tsr_oracle_tensor_create(TSR_FLOAT32, output->rank, output->sizes, &oout), 0);

  onednn_run_expect(op, num_inputs, tin, 1, &tout, attrs, ENGINE_ANY, what);
  tsr_oracle_call call = {.op = op,
                          .attrs = attrs,
                          .num_inputs = num_inputs,
                          .num_outputs = 1,
                          .inputs = oin,
                          .outputs = &oout};
  const tsr_status status = tsr_oracle_compute(&call);
  if (status != TSR_OK)
    fail_msg("%s: the oracle refused: %s", what, call.message);

  double *got = malloc((size_t)oout.numel * sizeof(double));
  assert_non_null(got);
  assert_int_equal(ts_read(tout, got, oout.numel), oout.numel);
  double worst = 0;
  int64_t worst_i = -1, bad = 0;
  for (int64_t i = 0; i < oout.numel; ++i) {
    const double r = ratio_of(got[i], &oout, i);
    if (r > 1)
      ++bad;
    if (r > worst || (worst_i < 0 && r >= worst)) {
      worst = r;
      worst_i = i;
    }
  }
  print_message("  %-28s %lld values, worst err/tol %.3g at x = %.9g\n", what,
                (long long)oout.numel, worst, worst_i >= 0 ? x_of_output[worst_i] : 0.0);
  if (bad > 0) {
    fail_msg(
        "%s: %lld of %lld results outside the conformance tolerance; worst at x = %.9g: "
        "got %.9g, want %.9g (err/tol %.3g)",
        what, (long long)bad, (long long)oout.numel, x_of_output[worst_i], got[worst_i],
        oout.v[worst_i], worst);
  }
  free(got);
  tsr_oracle_tensor_destroy(&oout);
  tsr_tensor_release(tout);
  for (int32_t k = 0; k < num_inputs; ++k) {
    tsr_oracle_tensor_destroy(&oin[k]);
    tsr_tensor_release(tin[k]);
  }
}

typedef struct sweep_fn {
  tsr_unary_fn_t fn;
  const char *name;
  double alpha;
} sweep_fn;

// Every function with a oneDNN eltwise algorithm (eltwise_check.c's table).
static const sweep_fn k_fns[] = {
    {TSR_UNARY_ABS, "abs", 0},         {TSR_UNARY_EXP, "exp", 0},
    {TSR_UNARY_LOG, "log", 0},         {TSR_UNARY_SQRT, "sqrt", 0},
    {TSR_UNARY_RSQRT, "rsqrt", 0},     {TSR_UNARY_RECIPROCAL, "reciprocal", 0},
    {TSR_UNARY_SQUARE, "square", 0},   {TSR_UNARY_TANH, "tanh", 0},
    {TSR_UNARY_SIGMOID, "sigmoid", 0}, {TSR_UNARY_RELU, "relu", 0},
    {TSR_UNARY_GELU, "gelu", 0},       {TSR_UNARY_GELU_TANH, "gelu_tanh", 0},
    {TSR_UNARY_SILU, "silu", 0},       {TSR_UNARY_LEAKY_RELU, "leaky_relu", 0.01},
    {TSR_UNARY_ELU, "elu", 1.0},       {TSR_UNARY_ROUND, "round", 0},
};

static void test_unary_sweep(void **state) {
  (void)state;
  const int64_t n = sweep_fill(NULL);
  double *x = dalloc(n), *dy = dalloc(n);
  sweep_fill(x);
  for (int64_t i = 0; i < n; ++i) dy[i] = i % 3 == 0 ? 1.0 : (i % 3 == 1 ? -0.75 : 2.0);
  const sweep_operand vx = {1, {n}, x}, vdy = {1, {n}, dy};
  for (size_t f = 0; f < sizeof(k_fns) / sizeof(k_fns[0]); ++f) {
    const tsr_unary_attrs attrs = {sizeof(attrs), k_fns[f].fn, 0, k_fns[f].alpha};
    char what[64];
    snprintf(what, sizeof(what), "%s", k_fns[f].name);
    sweep_run(what, TSR_OP_UNARY, &attrs, 1, &vx, &vx, x);
    if (tsr_oracle_unary_has_backward(k_fns[f].fn)) {
      const sweep_operand in[2] = {vdy, vx};
      snprintf(what, sizeof(what), "%s backward", k_fns[f].name);
      sweep_run(what, TSR_OP_UNARY_BACKWARD, &attrs, 2, in, &vx, x);
    }
  }
  free(dy);
  free(x);
}

static const struct {
  tsr_activation_t act;
  const char *name;
} k_acts[] = {
    {TSR_ACTIVATION_GELU, "gelu"},
    {TSR_ACTIVATION_GELU_TANH, "gelu_tanh"},
    {TSR_ACTIVATION_SIGMOID, "sigmoid"},
    {TSR_ACTIVATION_TANH, "tanh"},
};

enum { FANOUT = 16 };

// Every fourth value of the sweep, and each repeated FANOUT times (the
// output element's x).
static double *sweep_quarter(int64_t *out_n, double **out_x_of_output) {
  const int64_t all = sweep_fill(NULL);
  double *full = dalloc(all);
  sweep_fill(full);
  const int64_t n = (all + 3) / 4;
  double *x = dalloc(n), *xo = dalloc(n * FANOUT);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = full[4 * i];
    for (int64_t j = 0; j < FANOUT; ++j) xo[i * FANOUT + j] = x[i];
  }
  free(full);
  *out_n = n;
  *out_x_of_output = xo;
  return x;
}

static void test_matmul_activation_sweep(void **state) {
  (void)state;
  int64_t n = 0;
  double *xo = NULL;
  double *x = sweep_quarter(&n, &xo);
  double *ones = dalloc(FANOUT);
  for (int64_t j = 0; j < FANOUT; ++j) ones[j] = 1.0;
  const sweep_operand in[2] = {{2, {n, 1}, x}, {2, {1, FANOUT}, ones}};
  const sweep_operand out = {2, {n, FANOUT}, NULL};
  for (size_t a = 0; a < sizeof(k_acts) / sizeof(k_acts[0]); ++a) {
    const tsr_matmul_attrs attrs = {sizeof(attrs), 1.0, 0.0, k_acts[a].act, 0};
    char what[64];
    snprintf(what, sizeof(what), "matmul %s", k_acts[a].name);
    sweep_run(what, TSR_OP_MATMUL, &attrs, 2, in, &out, xo);
  }
  free(ones);
  free(xo);
  free(x);
}

static void test_conv_activation_sweep(void **state) {
  (void)state;
  int64_t n = 0;
  double *xo_rows = NULL;
  double *x = sweep_quarter(&n, &xo_rows);
  free(xo_rows);
  // x as [1, 1, n / 64, 64] (the tail dropped), y [1, 16, n / 64, 64]: the
  // output element (o, h, w) sees x[h, w].
  const int64_t h = n / 64, plane = h * 64;
  double *ones = dalloc(FANOUT);
  double *xo = dalloc(plane * FANOUT);
  for (int64_t j = 0; j < FANOUT; ++j) ones[j] = 1.0;
  for (int64_t o = 0; o < FANOUT; ++o) memcpy(xo + o * plane, x, (size_t)plane * sizeof(double));
  const sweep_operand in[2] = {{4, {1, 1, h, 64}, x}, {4, {FANOUT, 1, 1, 1}, ones}};
  const sweep_operand out = {4, {1, FANOUT, h, 64}, NULL};
  for (size_t a = 0; a < sizeof(k_acts) / sizeof(k_acts[0]); ++a) {
    const tsr_conv2d_attrs attrs = {.struct_size = sizeof(attrs),
                                    .stride = {1, 1},
                                    .dilation = {1, 1},
                                    .groups = 1,
                                    .activation = k_acts[a].act};
    char what[64];
    snprintf(what, sizeof(what), "conv2d %s", k_acts[a].name);
    sweep_run(what, TSR_OP_CONV2D, &attrs, 2, in, &out, xo);
  }
  free(xo);
  free(ones);
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_sweep),
      cmocka_unit_test(test_matmul_activation_sweep),
      cmocka_unit_test(test_conv_activation_sweep),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
