// CROSS_ENTROPY and CROSS_ENTROPY_BACKWARD against the conformance oracle's
// float64 loops: every float dtype and reduction, label smoothing, ignored
// rows, strided logits, N = 0 and C = 1, bad targets reported from execute,
// finite differences of the forward, thread-count independence, refusals.
#include <stdlib.h>

#include "oracle/oracle.h"
#include "test_host.h"
#include "test_norm_util.h"

typedef struct ce_case {
  tt_tensor logits, target, loss, lse, dloss, dlogits;
  int64_t n, c;
  tsr_cross_entropy_attrs attrs;
} ce_case;

// logits [n, c] (transposed in memory when |strided|), targets cycling
// through the classes with every third row ignored.
static void ce_case_make(ce_case *k, tsr_dtype_t dtype, int64_t n, int64_t c,
                         tsr_reduction_t reduction, double smoothing, int strided, uint64_t seed) {
  memset(k, 0, sizeof(*k));
  k->n = n;
  k->c = c;
  k->attrs =
      (tsr_cross_entropy_attrs){sizeof(tsr_cross_entropy_attrs), reduction, 0, -100, smoothing};
  const int64_t sizes[] = {n, c};
  const int64_t rows[] = {n};
  if (strided) {
    const int32_t perm[] = {1, 0};
    tt_tensor_make_permuted(&k->logits, dtype, 2, sizes, perm);
    nt_tensor_make_strided(&k->dlogits, dtype, 2, sizes);
  } else {
    tt_tensor_make(&k->logits, dtype, 2, sizes, NULL, 0);
    tt_tensor_make(&k->dlogits, dtype, 2, sizes, NULL, 0);
  }
  const int64_t two[] = {2};
  tt_tensor_make(&k->target, TSR_INT64, 1, rows, strided ? two : NULL, 0);
  tt_tensor_make(&k->lse, TSR_FLOAT32, 1, rows, strided ? two : NULL, 1);
  if (reduction == TSR_REDUCTION_NONE) {
    tt_tensor_make(&k->loss, dtype, 1, rows, strided ? two : NULL, 0);
    tt_tensor_make(&k->dloss, dtype, 1, rows, NULL, 0);
  } else {
    tt_tensor_make(&k->loss, dtype, 0, NULL, NULL, 0);
    tt_tensor_make(&k->dloss, dtype, 0, NULL, NULL, 0);
  }
  nt_fill(&k->logits, seed, -4, 4);
  nt_fill(&k->dloss, seed + 1, 0.5, 1.5);
  for (int64_t i = 0; i < n; ++i)
    tt_set(&k->target, &i, i % 3 == 1 ? -100.0 : (double)((i * 7) % c));
}

static void ce_case_free(ce_case *k) {
  tt_tensor *all[] = {&k->logits, &k->target, &k->loss, &k->lse, &k->dloss, &k->dlogits};
  for (int i = 0; i < 6; ++i) tt_tensor_free(all[i]);
}

static tsr_status ce_forward(ce_case *k) {
  tt_tensor *in[] = {&k->logits, &k->target};
  tt_tensor *out[] = {&k->loss, &k->lse};
  return tt_run(TSR_OP_CROSS_ENTROPY, &k->attrs, in, 2, out, 2, NULL);
}

static tsr_status ce_backward(ce_case *k) {
  tt_tensor *in[] = {&k->dloss, &k->logits, &k->target, &k->lse};
  tt_tensor *out[] = {&k->dlogits};
  return tt_run(TSR_OP_CROSS_ENTROPY_BACKWARD, &k->attrs, in, 4, out, 1, NULL);
}

static int64_t ce_target(const ce_case *k, int64_t i) {
  return (int64_t)tt_get(&k->target, &i);
}

// loss and lse from the conformance oracle, over the stored logits.
static void ce_forward_check(const ce_case *k) {
  const double tol = nt_tol(k->logits.desc.dtype);
  tsr_oracle_tensor in[2] = {tt_oracle_tensor(&k->logits), tt_oracle_tensor(&k->target)};
  tt_tensor *shapes[2] = {(tt_tensor *)&k->loss, (tt_tensor *)&k->lse};
  double *want[2];
  tt_oracle_run(TSR_OP_CROSS_ENTROPY, &k->attrs, in, 2, shapes, 2, want);
  for (int64_t i = 0; i < k->n; ++i) {
    nt_expect("cross_entropy lse", i, tt_get(&k->lse, &i), want[1][i], 2e-6);
    if (k->attrs.reduction == TSR_REDUCTION_NONE) {
      nt_expect("cross_entropy loss", i, nt_get_flat(&k->loss, i), want[0][i], tol);
    }
  }
  if (k->attrs.reduction == TSR_REDUCTION_SUM) {
    nt_expect("cross_entropy sum", 0, nt_get_flat(&k->loss, 0), want[0][0], tol);
  }
  if (k->attrs.reduction == TSR_REDUCTION_MEAN) {
    nt_expect("cross_entropy mean", 0, nt_get_flat(&k->loss, 0), want[0][0], tol);
  }
  free(want[0]);
  free(want[1]);
}

// dlogits from the conformance oracle over the stored logits, lse and dloss.
static void ce_backward_check(const ce_case *k, double tol) {
  tsr_oracle_tensor in[4] = {tt_oracle_tensor(&k->dloss), tt_oracle_tensor(&k->logits),
                             tt_oracle_tensor(&k->target), tt_oracle_tensor(&k->lse)};
  tt_tensor *shapes[1] = {(tt_tensor *)&k->dlogits};
  double *want;
  tt_oracle_run(TSR_OP_CROSS_ENTROPY_BACKWARD, &k->attrs, in, 4, shapes, 1, &want);
  for (int64_t i = 0; i < k->n * k->c; ++i) {
    nt_expect("cross_entropy_backward dlogits", i, nt_get_flat(&k->dlogits, i), want[i], tol);
  }
  free(want);
}

static void test_cross_entropy_matches_double_loops_for_every_dtype_and_reduction(void **state) {
  (void)state;
  for (int di = 0; di < 4; ++di) {
    const tsr_dtype_t dtype = nt_float_dtypes[di];
    for (tsr_reduction_t r = 0; r < TSR_REDUCTION_COUNT; ++r) {
      for (int variant = 0; variant < 4; ++variant) {
        const double smoothing = variant & 1 ? 0.15 : 0.0;
        ce_case k;
        ce_case_make(&k, dtype, 7, 5, r, smoothing, variant >> 1, 300 + (uint64_t)variant);
        assert_int_equal(ce_forward(&k), TSR_OK);
        ce_forward_check(&k);
        assert_int_equal(ce_backward(&k), TSR_OK);
        ce_backward_check(&k, dtype == TSR_FLOAT64 ? 1e-12 : 2 * nt_tol(dtype));
        ce_case_free(&k);
      }
    }
  }
}

static void test_cross_entropy_mean_of_only_ignored_rows_is_nan_and_empty_batches_work(
    void **state) {
  (void)state;
  ce_case k;
  ce_case_make(&k, TSR_FLOAT32, 3, 4, TSR_REDUCTION_MEAN, 0.1, 0, 310);
  for (int64_t i = 0; i < 3; ++i) tt_set(&k.target, &i, -100);
  assert_int_equal(ce_forward(&k), TSR_OK);
  assert_true(isnan(nt_get_flat(&k.loss, 0)));
  assert_int_equal(ce_backward(&k), TSR_OK);
  for (int64_t i = 0; i < 12; ++i) assert_true(nt_get_flat(&k.dlogits, i) == 0.0);
  ce_case_free(&k);
  // N = 0: SUM is 0, MEAN is NaN, NONE writes nothing.
  for (tsr_reduction_t r = 0; r < TSR_REDUCTION_COUNT; ++r) {
    ce_case_make(&k, TSR_FLOAT64, 0, 4, r, 0, 0, 311);
    assert_int_equal(ce_forward(&k), TSR_OK);
    if (r == TSR_REDUCTION_SUM)
      assert_true(nt_get_flat(&k.loss, 0) == 0.0);
    if (r == TSR_REDUCTION_MEAN)
      assert_true(isnan(nt_get_flat(&k.loss, 0)));
    assert_int_equal(ce_backward(&k), TSR_OK);
    ce_case_free(&k);
  }
  // C = 1: the only class has probability 1; loss 0, gradient 0.
  ce_case_make(&k, TSR_FLOAT64, 4, 1, TSR_REDUCTION_NONE, 0, 0, 312);
  assert_int_equal(ce_forward(&k), TSR_OK);
  ce_forward_check(&k);
  assert_int_equal(ce_backward(&k), TSR_OK);
  ce_backward_check(&k, 1e-12);
  ce_case_free(&k);
}

static void test_cross_entropy_reports_a_target_out_of_range_from_execute(void **state) {
  (void)state;
  for (int backward = 0; backward < 2; ++backward) {
    ce_case k;
    ce_case_make(&k, TSR_FLOAT32, 4, 5, TSR_REDUCTION_SUM, 0, 0, 320);
    if (backward)
      assert_int_equal(ce_forward(&k), TSR_OK);
    int64_t i = 2;
    tt_set(&k.target, &i, 5);
    assert_int_equal(backward ? ce_backward(&k) : ce_forward(&k), TSR_INVALID_ARGUMENT);
    assert_non_null(strstr(tsr_test_host_error_get(), "target[2] is 5"));
    tt_set(&k.target, &i, -1);
    assert_int_equal(backward ? ce_backward(&k) : ce_forward(&k), TSR_INVALID_ARGUMENT);
    assert_non_null(strstr(tsr_test_host_error_get(), "target[2] is -1"));
    // -1 is fine once it is the ignore_index.
    k.attrs.ignore_index = -1;
    for (int64_t j = 0; j < 4; ++j) {
      if (ce_target(&k, j) == -100)
        tt_set(&k.target, &j, 0);
    }
    assert_int_equal(backward ? ce_backward(&k) : ce_forward(&k), TSR_OK);
    ce_case_free(&k);
  }
}

// L = sum(dloss * loss(logits)) with the plugin's float64 forward.
static double ce_objective(ce_case *k) {
  assert_int_equal(ce_forward(k), TSR_OK);
  double sum = 0;
  for (int64_t i = 0; i < tt_numel(&k->loss); ++i)
    sum += nt_get_flat(&k->dloss, i) * nt_get_flat(&k->loss, i);
  return sum;
}

static void test_cross_entropy_backward_matches_finite_differences_of_the_forward(void **state) {
  (void)state;
  for (tsr_reduction_t r = 0; r < TSR_REDUCTION_COUNT; ++r) {
    for (int smooth = 0; smooth < 2; ++smooth) {
      ce_case k;
      ce_case_make(&k, TSR_FLOAT64, 5, 4, r, smooth ? 0.2 : 0.0, 1, 330);
      assert_int_equal(ce_forward(&k), TSR_OK);
      assert_int_equal(ce_backward(&k), TSR_OK);
      const double h = 1e-6;
      for (int64_t i = 0; i < 20; ++i) {
        const double v = nt_get_flat(&k.logits, i);
        nt_set_flat(&k.logits, i, v + h);
        const double up = ce_objective(&k);
        nt_set_flat(&k.logits, i, v - h);
        const double down = ce_objective(&k);
        nt_set_flat(&k.logits, i, v);
        // lse crosses to the backward as float32, which limits agreement.
        nt_expect("cross_entropy dlogits vs finite difference", i, nt_get_flat(&k.dlogits, i),
                  (up - down) / (2 * h), 1e-6);
      }
      ce_case_free(&k);
    }
  }
}

static void test_cross_entropy_large_batch_gives_the_same_bits_on_one_and_two_threads(
    void **state) {
  (void)state;
  ce_case k;
  ce_case_make(&k, TSR_FLOAT32, 6000, 10, TSR_REDUCTION_MEAN, 0.1, 0, 340);
  tt_tensor *in[] = {&k.logits, &k.target};
  tt_tensor *out[] = {&k.loss, &k.lse};
  const uint64_t parallel_before = tsr_test_host_parallel_count();
  nt_expect_same_bits_on_one_and_two_threads(TSR_OP_CROSS_ENTROPY, &k.attrs, in, 2, out, 2, 0);
  assert_true(tsr_test_host_parallel_count() > parallel_before);
  ce_forward_check(&k);
  tt_tensor *bin[] = {&k.dloss, &k.logits, &k.target, &k.lse};
  tt_tensor *bout[] = {&k.dlogits};
  nt_expect_same_bits_on_one_and_two_threads(TSR_OP_CROSS_ENTROPY_BACKWARD, &k.attrs, bin, 4, bout,
                                             1, 0);
  ce_backward_check(&k, 1e-6);
  ce_case_free(&k);
}

static void test_cross_entropy_refuses_what_the_catalogue_forbids(void **state) {
  (void)state;
  ce_case k;
  ce_case_make(&k, TSR_FLOAT16, 3, 4, TSR_REDUCTION_MEAN, 0, 0, 350);
  tt_tensor *in[] = {&k.logits, &k.target};
  tt_tensor *out[] = {&k.loss, &k.lse};
  // Defaults (MEAN, ignore -100, no smoothing) from NULL attrs.
  assert_int_equal(tt_run(TSR_OP_CROSS_ENTROPY, NULL, in, 2, out, 2, NULL), TSR_OK);
  ce_forward_check(&k);
  k.attrs.label_smoothing = 1.5;
  assert_int_equal(tt_supports(TSR_OP_CROSS_ENTROPY, &k.attrs, in, 2, out, 2),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "label_smoothing"));
  k.attrs.label_smoothing = 0;
  k.attrs.reduction = TSR_REDUCTION_NONE;  // loss must then be [N]
  assert_int_equal(tt_supports(TSR_OP_CROSS_ENTROPY, &k.attrs, in, 2, out, 2),
                   TSR_INVALID_ARGUMENT);
  k.attrs.reduction = TSR_REDUCTION_COUNT;  // maybe from a newer catalogue
  assert_int_equal(tt_supports(TSR_OP_CROSS_ENTROPY, &k.attrs, in, 2, out, 2),
                   TSR_UNSUPPORTED);
  k.attrs.reduction = TSR_REDUCTION_SUM;
  // lse is float32 whatever the logits' dtype; target is int64.
  tt_tensor lse16, target32;
  const int64_t rows[] = {3};
  tt_tensor_make(&lse16, TSR_FLOAT16, 1, rows, NULL, 0);
  tt_tensor_make(&target32, TSR_INT32, 1, rows, NULL, 0);
  tt_tensor *out16[] = {&k.loss, &lse16};
  assert_int_equal(tt_supports(TSR_OP_CROSS_ENTROPY, &k.attrs, in, 2, out16, 2),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "lse"));
  tt_tensor *in32[] = {&k.logits, &target32};
  assert_int_equal(tt_supports(TSR_OP_CROSS_ENTROPY, &k.attrs, in32, 2, out, 2),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "target"));
  tt_tensor_free(&lse16);
  tt_tensor_free(&target32);
  ce_case_free(&k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cross_entropy_matches_double_loops_for_every_dtype_and_reduction),
      cmocka_unit_test(test_cross_entropy_mean_of_only_ignored_rows_is_nan_and_empty_batches_work),
      cmocka_unit_test(test_cross_entropy_reports_a_target_out_of_range_from_execute),
      cmocka_unit_test(test_cross_entropy_backward_matches_finite_differences_of_the_forward),
      cmocka_unit_test(test_cross_entropy_large_batch_gives_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_cross_entropy_refuses_what_the_catalogue_forbids),
  };
  return cmocka_run_group_tests(tests, tt_setup_two_threads, tt_teardown);
}
