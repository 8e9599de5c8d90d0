// Looking at tensors (tessera/print.h): tsr_tensor_format's PyTorch-style text
// for float, int and bool tensors, strided views, summarised large tensors,
// a buffer too small and bad arguments; tsr_shape_format; the TSR_SHAPE /
// TSR_AXES macros of tessera/shapes.h; and the default initialisers of Linear
// and Conv2d, which must draw U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch's
// reset_parameters does.
//
// Built once per device (test_print_ref, _onednn). The expected strings are
// what PyTorch 2.x prints for the same values, with Tessera's dtype and
// device suffix.
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



// --- helpers ----------------------------------------------------------------

static tsr_tensor *make(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                        const double *values) {
  tsr_tensor *t = ts_tensor(g_device, dtype, rank, sizes, values);
  TS_ASSERT_TENSOR(t);
  return t;
}

// |t| formatted with |options| (NULL: defaults), measured first; caller frees.
static char *format(const tsr_tensor *t, const tsr_format_options *options) {
  size_t length = 0;
  tsr_status status = tsr_tensor_format(t, NULL, 0, options, &length);
  if (status != TSR_OK) fail_msg("tensor_format (measure): %s", tsr_last_error());
  char *text = malloc(length + 1);
  assert_non_null(text);
  size_t written = 0;
  status = tsr_tensor_format(t, text, length + 1, options, &written);
  if (status != TSR_OK) fail_msg("tensor_format: %s", tsr_last_error());
  assert_int_equal(written, length);
  assert_int_equal(strlen(text), length);
  return text;
}

// Checks that |t| prints as |body| followed by ", dtype=<dtype>, device=<device>)".
static void expect_text(const tsr_tensor *t, const char *body, const char *dtype) {
  char expected[4096];
  snprintf(expected, sizeof(expected), "tensor(%s, dtype=%s, device=%s)", body, dtype,
           TSR_TEST_DEVICE);
  char *text = format(t, NULL);
  if (strcmp(text, expected) != 0) fail_msg("got\n%s\nexpected\n%s", text, expected);
  free(text);
}

// --- formatting -------------------------------------------------------------

static void test_format_writes_floats_with_four_decimals_and_aligned_rows(void **state) {
  (void)state;
  tsr_tensor *t = make(TSR_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){1.5, 2.0, -3.0, 4.25});
  expect_text(t, "[[ 1.5000,  2.0000],\n        [-3.0000,  4.2500]]", "float32");
  tsr_tensor_release(t);
  t = make(TSR_FLOAT64, 0, NULL, (double[]){2.5});
  expect_text(t, "2.5000", "float64");
  tsr_tensor_release(t);
}

static void test_format_writes_whole_floats_as_pytorch_does(void **state) {
  (void)state;
  tsr_tensor *t = make(TSR_FLOAT32, 1, (int64_t[]){3}, (double[]){1.0, -20.0, 300.0});
  expect_text(t, "[  1., -20., 300.]", "float32");
  tsr_tensor_release(t);
  t = make(TSR_FLOAT32, 1, (int64_t[]){2}, (double[]){0.0, 0.0});
  expect_text(t, "[0., 0.]", "float32");
  tsr_tensor_release(t);
}

static void test_format_writes_nan_and_inf_and_switches_to_scientific(void **state) {
  (void)state;
  tsr_tensor *t =
      make(TSR_FLOAT32, 1, (int64_t[]){4}, (double[]){1.5, NAN, INFINITY, -INFINITY});
  expect_text(t, "[1.5000,    nan,    inf,   -inf]", "float32");
  tsr_tensor_release(t);
  t = make(TSR_FLOAT64, 1, (int64_t[]){2}, (double[]){1e-5, 1.0});
  expect_text(t, "[1.0000e-05, 1.0000e+00]", "float64");
  tsr_tensor_release(t);
}

static void test_format_writes_ints_and_bools_as_such(void **state) {
  (void)state;
  tsr_tensor *t = make(TSR_INT64, 1, (int64_t[]){3}, (double[]){1, -20, 300});
  expect_text(t, "[  1, -20, 300]", "int64");
  tsr_tensor_release(t);
  t = make(TSR_INT32, 2, (int64_t[]){2, 1}, (double[]){7, 8});
  expect_text(t, "[[7],\n        [8]]", "int32");
  tsr_tensor_release(t);
  t = make(TSR_BOOL, 1, (int64_t[]){2}, (double[]){1, 0});
  expect_text(t, "[ True, False]", "bool");
  tsr_tensor_release(t);
}

static void test_format_reads_strided_views_in_logical_order(void **state) {
  (void)state;
  tsr_tensor *t = make(TSR_INT64, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
  tsr_tensor *tt = tsr_transpose(t, 0, 1);
  TS_ASSERT_TENSOR(tt);
  expect_text(tt, "[[1, 4],\n        [2, 5],\n        [3, 6]]", "int64");
  tsr_tensor *s = tsr_slice(t, 1, 0, 3, 2);
  TS_ASSERT_TENSOR(s);
  expect_text(s, "[[1, 3],\n        [4, 6]]", "int64");
  tsr_tensor_release(s);
  tsr_tensor_release(tt);
  tsr_tensor_release(t);
}

static void test_format_writes_empty_tensors_with_their_size(void **state) {
  (void)state;
  tsr_tensor *t = tsr_zeros(g_device, TSR_FLOAT32, TSR_SHAPE(0, 3));
  TS_ASSERT_TENSOR(t);
  expect_text(t, "[], size=[0, 3]", "float32");
  tsr_tensor_release(t);
  t = tsr_zeros(g_device, TSR_FLOAT32, TSR_SHAPE(0));
  TS_ASSERT_TENSOR(t);
  expect_text(t, "[]", "float32");
  tsr_tensor_release(t);
}

static void test_format_summarises_large_tensors_with_three_edge_items(void **state) {
  (void)state;
  tsr_tensor *v = tsr_arange(g_device, TSR_INT64, 0, 2000, 1);
  TS_ASSERT_TENSOR(v);
  expect_text(v, "[   0,    1,    2,  ..., 1997, 1998, 1999]", "int64");
  tsr_tensor *m = tsr_view(v, TSR_SHAPE(40, 50));
  TS_ASSERT_TENSOR(m);
  expect_text(m,
              "[[   0,    1,    2,  ...,   47,   48,   49],\n"
              "        [  50,   51,   52,  ...,   97,   98,   99],\n"
              "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
              "        ...,\n"
              "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
              "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
              "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]]",
              "int64");
  // At the threshold nothing is elided; options change it.
  tsr_format_options options;
  tsr_format_options_init(&options);
  options.threshold = 2000;
  char *text = format(v, &options);
  assert_null(strstr(text, "..."));
  assert_non_null(strstr(text, " 999, 1000,"));
  free(text);
  options.threshold = 5;
  options.edge_items = 1;
  options.precision = 2;
  tsr_tensor *f = make(TSR_FLOAT32, 1, (int64_t[]){6}, (double[]){0.5, 1, 2, 3, 4, 5.25});
  text = format(f, &options);
  char expected[256];
  snprintf(expected, sizeof(expected), "tensor([0.50,  ..., 5.25], dtype=float32, device=%s)",
           TSR_TEST_DEVICE);
  assert_string_equal(text, expected);
  free(text);
  tsr_tensor_release(f);
  tsr_tensor_release(m);
  tsr_tensor_release(v);
}

static void test_format_wraps_long_rows_at_80_columns(void **state) {
  (void)state;
  tsr_tensor *v = tsr_arange(g_device, TSR_FLOAT32, 0.5, 20.5, 1);
  TS_ASSERT_TENSOR(v);
  char *text = format(v, NULL);
  // Width 7 plus ", ": (80 - 7) / 9 = 8 values a line, continued under the '['.
  const char *expected_start =
      "tensor([ 0.5000,  1.5000,  2.5000,  3.5000,  4.5000,  5.5000,  6.5000,  7.5000,\n"
      "         8.5000,  9.5000,";
  assert_memory_equal(text, expected_start, strlen(expected_start));
  free(text);
  tsr_tensor_release(v);
}

static void test_format_says_requires_grad(void **state) {
  (void)state;
  tsr_tensor *t = make(TSR_FLOAT32, 1, (int64_t[]){1}, (double[]){1.25});
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(t, 1));
  char *text = format(t, NULL);
  char expected[256];
  snprintf(expected, sizeof(expected),
           "tensor([1.2500], dtype=float32, device=%s, requires_grad=True)", TSR_TEST_DEVICE);
  assert_string_equal(text, expected);
  free(text);
  tsr_tensor_release(t);
}

static void test_format_truncates_a_small_buffer_and_fails(void **state) {
  (void)state;
  tsr_tensor *t = make(TSR_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){1.5, 2, 3, 4});
  size_t needed = 0;
  TS_ASSERT_OK(tsr_tensor_format(t, NULL, 0, NULL, &needed));
  char buf[10];
  memset(buf, 'x', sizeof(buf));
  size_t length = 0;
  assert_int_equal(tsr_tensor_format(t, buf, sizeof(buf), NULL, &length), TSR_INVALID_ARGUMENT);
  assert_int_equal(length, needed);
  assert_string_equal(buf, "tensor([[");
  assert_non_null(strstr(tsr_last_error(), "tensor_format"));
  // Exactly needed + 1 bytes fits.
  char *full = malloc(needed + 1);
  assert_non_null(full);
  TS_ASSERT_OK(tsr_tensor_format(t, full, needed + 1, NULL, NULL));
  assert_int_equal(strlen(full), needed);
  assert_int_equal(tsr_tensor_format(t, full, needed, NULL, NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(strlen(full), needed - 1);
  free(full);
  tsr_tensor_release(t);
}

static void test_format_refuses_bad_arguments(void **state) {
  (void)state;
  char buf[64];
  assert_int_equal(tsr_tensor_format(NULL, buf, sizeof(buf), NULL, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "tensor is NULL"));
  tsr_tensor *t = make(TSR_FLOAT32, 1, (int64_t[]){1}, (double[]){1});
  assert_int_equal(tsr_tensor_format(t, NULL, 5, NULL, NULL), TSR_INVALID_ARGUMENT);
  tsr_format_options options;
  tsr_format_options_init(&options);
  options.struct_size = 0;
  assert_int_equal(tsr_tensor_format(t, buf, sizeof(buf), &options, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "struct_size"));
  tsr_format_options_init(&options);
  options.precision = 31;
  assert_int_equal(tsr_tensor_format(t, buf, sizeof(buf), &options, NULL), TSR_INVALID_ARGUMENT);
  tsr_format_options_init(&options);
  options.line_width = 0;
  assert_int_equal(tsr_tensor_format(t, buf, sizeof(buf), &options, NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_tensor_print(NULL), TSR_INVALID_ARGUMENT);
  tsr_context_error_clear(g_context);
  tsr_tensor_release(t);
}

static void test_print_writes_to_stdout(void **state) {
  (void)state;
  tsr_tensor *t = make(TSR_INT32, 1, (int64_t[]){2}, (double[]){3, 4});
  TS_ASSERT_OK(tsr_tensor_print(t));
  fflush(stdout);
  tsr_tensor_release(t);
}

static void test_shape_format_writes_brackets_and_refuses_bad_input(void **state) {
  (void)state;
  char buf[32];
  size_t length = 0;
  TS_ASSERT_OK(tsr_shape_format(TSR_SHAPE(2, 3), buf, sizeof(buf), &length));
  assert_string_equal(buf, "[2, 3]");
  assert_int_equal(length, 6);
  TS_ASSERT_OK(tsr_shape_format(TSR_SCALAR_SHAPE, buf, sizeof(buf), NULL));
  assert_string_equal(buf, "[]");
  assert_int_equal(tsr_shape_format(TSR_SHAPE(2, 3), buf, 4, &length), TSR_INVALID_ARGUMENT);
  assert_string_equal(buf, "[2,");
  assert_int_equal(length, 6);
  assert_int_equal(tsr_shape_format(-1, NULL, buf, sizeof(buf), NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_shape_format(2, NULL, buf, sizeof(buf), NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_shape_format(TSR_SHAPE(1), NULL, 3, NULL), TSR_INVALID_ARGUMENT);
}

// --- macros -------------------------------------------------------------------

static void test_shape_and_axes_macros_fit_the_creation_and_reduce_functions(void **state) {
  (void)state;
  tsr_tensor *x = tsr_ones(g_device, TSR_FLOAT32, TSR_SHAPE(2, 3, 4));
  TS_ASSERT_TENSOR(x);
  assert_int_equal(tsr_tensor_rank(x), 3);
  assert_int_equal(tsr_tensor_size(x, 2), 4);
  tsr_tensor *s = tsr_sum(x, TSR_AXES(1), 0);
  TS_ASSERT_TENSOR(s);
  assert_int_equal(tsr_tensor_rank(s), 2);
  assert_int_equal(tsr_tensor_size(s, 0), 2);
  assert_int_equal(tsr_tensor_size(s, 1), 4);
  double v[8];
  assert_int_equal(ts_read(s, v, 8), 8);
  assert_true(v[0] == 3.0);
  tsr_tensor *m = tsr_mean(x, TSR_AXES(0, -1), 1);
  TS_ASSERT_TENSOR(m);
  assert_int_equal(tsr_tensor_rank(m), 3);
  assert_int_equal(tsr_tensor_size(m, 0), 1);
  assert_int_equal(tsr_tensor_size(m, 1), 3);
  assert_int_equal(tsr_tensor_size(m, 2), 1);
  tsr_tensor *all = tsr_sum(x, TSR_ALL_AXES, 0);
  TS_ASSERT_TENSOR(all);
  assert_int_equal(tsr_tensor_rank(all), 0);
  assert_int_equal(ts_read(all, v, 8), 1);
  assert_true(v[0] == 24.0);
  tsr_tensor *r = tsr_reshape(x, TSR_SHAPE(6, -1));
  TS_ASSERT_TENSOR(r);
  assert_int_equal(tsr_tensor_size(r, 1), 4);
  tsr_tensor *p = tsr_permute(x, TSR_AXES(2, 0, 1));
  TS_ASSERT_TENSOR(p);
  assert_int_equal(tsr_tensor_size(p, 0), 4);
  tsr_tensor *z = tsr_zeros(g_device, TSR_INT64, TSR_SCALAR_SHAPE);
  TS_ASSERT_TENSOR(z);
  assert_int_equal(tsr_tensor_rank(z), 0);
  tsr_tensor *releases[] = {x, s, m, all, r, p, z};
  for (size_t i = 0; i < sizeof(releases) / sizeof(releases[0]); ++i)
    tsr_tensor_release(releases[i]);
}

// --- default initialisers -----------------------------------------------------

// Checks that |t|'s values look like U(-bound, bound): none outside, the
// largest magnitude near the bound, mean 0 and variance bound^2 / 3 within
// five standard errors.
static void expect_uniform(const tsr_tensor *t, double bound, const char *what) {
  int64_t n = tsr_tensor_numel(t);
  double *v = malloc((size_t)n * sizeof(double));
  assert_non_null(v);
  assert_int_equal(ts_read(t, v, n), n);
  double sum = 0.0, sum_sq = 0.0, max_abs = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += v[i];
    sum_sq += v[i] * v[i];
    if (fabs(v[i]) > max_abs) max_abs = fabs(v[i]);
  }
  free(v);
  double mean = sum / (double)n;
  double var = sum_sq / (double)n - mean * mean;
  double want_var = bound * bound / 3.0;
  double mean_se = sqrt(want_var / (double)n);
  // Var(X^2) of U(-b, b) is b^4/5 - b^4/9 = 4 b^4 / 45.
  double var_se = sqrt(4.0 / 45.0 / (double)n) * bound * bound;
  if (max_abs > bound * (1.0 + 1e-6) || max_abs < bound * (1.0 - 20.0 / (double)n) ||
      fabs(mean) > 5.0 * mean_se || fabs(var - want_var) > 5.0 * var_se) {
    fail_msg("%s: %lld values, bound %g: max |v| %g, mean %g (se %g), var %g (want %g, se %g)",
             what, (long long)n, bound, max_abs, mean, mean_se, var, want_var, var_se);
  }
}

static void test_linear_and_conv2d_initialise_as_pytorch_does(void **state) {
  (void)state;
  // Linear(400, 500): weight and bias U(-1/sqrt(400), 1/sqrt(400)).
  tsr_module *linear = tsr_nn_linear(g_device, 400, 500, 1);
  assert_non_null(linear);
  expect_uniform(tsr_module_parameter_by_name_get(linear, "weight"), 0.05, "Linear weight");
  expect_uniform(tsr_module_parameter_by_name_get(linear, "bias"), 0.05, "Linear bias");
  tsr_module_destroy(linear);
  // Conv2d(16, 512, 5x5): fan_in = 16 * 25 = 400.
  tsr_module *conv = tsr_nn_conv2d(g_device, 16, 512, 5, 5, NULL);
  assert_non_null(conv);
  expect_uniform(tsr_module_parameter_by_name_get(conv, "weight"), 0.05, "Conv2d weight");
  expect_uniform(tsr_module_parameter_by_name_get(conv, "bias"), 0.05, "Conv2d bias");
  tsr_module_destroy(conv);
  // Grouped: fan_in = in / groups * kh * kw = 16 / 4 * 25 = 100.
  tsr_conv2d_options options;
  tsr_conv2d_options_init(&options);
  options.groups = 4;
  conv = tsr_nn_conv2d(g_device, 16, 512, 5, 5, &options);
  assert_non_null(conv);
  expect_uniform(tsr_module_parameter_by_name_get(conv, "weight"), 0.1, "grouped Conv2d weight");
  expect_uniform(tsr_module_parameter_by_name_get(conv, "bias"), 0.1, "grouped Conv2d bias");
  tsr_module_destroy(conv);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_format_writes_floats_with_four_decimals_and_aligned_rows,
                             test_setup),
      cmocka_unit_test_setup(test_format_writes_whole_floats_as_pytorch_does, test_setup),
      cmocka_unit_test_setup(test_format_writes_nan_and_inf_and_switches_to_scientific,
                             test_setup),
      cmocka_unit_test_setup(test_format_writes_ints_and_bools_as_such, test_setup),
      cmocka_unit_test_setup(test_format_reads_strided_views_in_logical_order, test_setup),
      cmocka_unit_test_setup(test_format_writes_empty_tensors_with_their_size, test_setup),
      cmocka_unit_test_setup(test_format_summarises_large_tensors_with_three_edge_items,
                             test_setup),
      cmocka_unit_test_setup(test_format_wraps_long_rows_at_80_columns, test_setup),
      cmocka_unit_test_setup(test_format_says_requires_grad, test_setup),
      cmocka_unit_test_setup(test_format_truncates_a_small_buffer_and_fails, test_setup),
      cmocka_unit_test_setup(test_format_refuses_bad_arguments, test_setup),
      cmocka_unit_test_setup(test_print_writes_to_stdout, test_setup),
      cmocka_unit_test_setup(test_shape_format_writes_brackets_and_refuses_bad_input, test_setup),
      cmocka_unit_test_setup(test_shape_and_axes_macros_fit_the_creation_and_reduce_functions,
                             test_setup),
      cmocka_unit_test_setup(test_linear_and_conv2d_initialise_as_pytorch_does, test_setup),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
