// LAYER_NORM, BATCH_NORM and their backward ops against the conformance
// oracle's float64 loops: every float dtype, axes, affine or not, training
// and inference, strided views, size-0 and size-1 cases, in-place running
// statistics, finite differences of the forward, thread-count independence,
// and refusals.
#include <stdlib.h>

#include "oracle/oracle.h"
#include "test_host.h"
#include "test_norm_util.h"

static tsr_dtype_t stat_dtype(tsr_dtype_t dtype) {
  return dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16 ? TSR_FLOAT32 : dtype;
}

// ---------------------------------------------------------------------------
// Layer norm.

typedef struct ln_case {
  tt_tensor x, gamma, beta, y, mean, rstd;  // forward
  tt_tensor dy, dx, dgamma, dbeta;          // backward
  int32_t axis;
  int affine;
  int64_t rows, m;
} ln_case;

// Tensors for x of |sizes| normalised over [axis, rank): x, y, dy and dx
// strided when |strided|.
static void ln_case_make(ln_case *c, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                         int32_t axis, int affine, int strided, uint64_t seed) {
  memset(c, 0, sizeof(*c));
  c->axis = axis;
  c->affine = affine;
  int64_t stat_sizes[TSR_MAX_RANK];
  c->rows = 1;
  c->m = 1;
  for (int32_t d = 0; d < rank; ++d) {
    stat_sizes[d] = d < axis ? sizes[d] : 1;
    if (d < axis)
      c->rows *= sizes[d];
    else
      c->m *= sizes[d];
  }
  if (strided) {
    nt_tensor_make_strided(&c->x, dtype, rank, sizes);
    nt_tensor_make_strided(&c->y, dtype, rank, sizes);
    nt_tensor_make_strided(&c->dy, dtype, rank, sizes);
    nt_tensor_make_strided(&c->dx, dtype, rank, sizes);
    nt_tensor_make_strided(&c->mean, stat_dtype(dtype), rank, stat_sizes);
  } else {
    tt_tensor_make(&c->x, dtype, rank, sizes, NULL, 0);
    tt_tensor_make(&c->y, dtype, rank, sizes, NULL, 0);
    tt_tensor_make(&c->dy, dtype, rank, sizes, NULL, 0);
    tt_tensor_make(&c->dx, dtype, rank, sizes, NULL, 0);
    tt_tensor_make(&c->mean, stat_dtype(dtype), rank, stat_sizes, NULL, 0);
  }
  tt_tensor_make(&c->rstd, stat_dtype(dtype), rank, stat_sizes, NULL, 0);
  const int32_t arank = rank - axis;
  if (strided) {
    nt_tensor_make_strided(&c->gamma, dtype, arank, sizes + axis);
    nt_tensor_make_strided(&c->dgamma, dtype, arank, sizes + axis);
  } else {
    tt_tensor_make(&c->gamma, dtype, arank, sizes + axis, NULL, 0);
    tt_tensor_make(&c->dgamma, dtype, arank, sizes + axis, NULL, 0);
  }
  tt_tensor_make(&c->beta, dtype, arank, sizes + axis, NULL, 0);
  tt_tensor_make(&c->dbeta, dtype, arank, sizes + axis, NULL, 0);
  nt_fill(&c->x, seed, -3, 5);
  nt_fill(&c->gamma, seed + 1, 0.5, 1.5);
  nt_fill(&c->beta, seed + 2, -1, 1);
  nt_fill(&c->dy, seed + 3, -1, 1);
}

static void ln_case_free(ln_case *c) {
  tt_tensor *all[] = {&c->x,    &c->gamma, &c->beta, &c->y,      &c->mean,
                      &c->rstd, &c->dy,    &c->dx,   &c->dgamma, &c->dbeta};
  for (int i = 0; i < 10; ++i) tt_tensor_free(all[i]);
}

static tsr_status ln_forward(ln_case *c, double eps) {
  tsr_layer_norm_attrs attrs = {sizeof(attrs), c->axis, (uint32_t)c->affine, eps};
  tt_tensor *in[] = {&c->x, &c->gamma, &c->beta};
  tt_tensor *out[] = {&c->y, &c->mean, &c->rstd};
  return tt_run(TSR_OP_LAYER_NORM, &attrs, in, c->affine ? 3 : 1, out, 3, NULL);
}

static tsr_status ln_backward(ln_case *c, double eps) {
  tsr_layer_norm_attrs attrs = {sizeof(attrs), c->axis, (uint32_t)c->affine, eps};
  tt_tensor *in[] = {&c->dy, &c->x, &c->mean, &c->rstd, &c->gamma};
  tt_tensor *out[] = {&c->dx, &c->dgamma, &c->dbeta};
  return tt_run(TSR_OP_LAYER_NORM_BACKWARD, &attrs, in, c->affine ? 5 : 4, out, c->affine ? 3 : 1,
                NULL);
}

// Checks the forward's outputs against the conformance oracle's over the
// stored x.
static void ln_forward_check(ln_case *c, double eps) {
  const tsr_layer_norm_attrs attrs = {sizeof(attrs), c->axis, (uint32_t)c->affine, eps};
  tsr_oracle_tensor in[3] = {tt_oracle_tensor(&c->x), tt_oracle_tensor(&c->gamma),
                             tt_oracle_tensor(&c->beta)};
  if (!c->affine) {
    tsr_oracle_tensor_destroy(&in[1]);
    tsr_oracle_tensor_destroy(&in[2]);
  }
  tt_tensor *out[] = {&c->y, &c->mean, &c->rstd};
  double *want[3];
  tt_oracle_run(TSR_OP_LAYER_NORM, &attrs, in, c->affine ? 3 : 1, out, 3, want);
  for (int64_t r = 0; r < c->rows; ++r) {
    nt_expect("layer_norm mean", r, nt_get_flat(&c->mean, r), want[1][r],
              nt_tol(c->mean.desc.dtype));
    nt_expect("layer_norm rstd", r, nt_get_flat(&c->rstd, r), want[2][r],
              nt_tol(c->rstd.desc.dtype));
    for (int64_t j = 0; j < c->m; ++j) {
      nt_expect("layer_norm y", r * c->m + j, nt_get_flat(&c->y, r * c->m + j),
                want[0][r * c->m + j], nt_tol(c->y.desc.dtype));
    }
  }
  for (int k = 0; k < 3; ++k) free(want[k]);
}

// Checks the backward's outputs against the conformance oracle's over the
// stored dy, x, mean, rstd and gamma.
static void ln_backward_check(ln_case *c, double tol) {
  const tsr_layer_norm_attrs attrs = {sizeof(attrs), c->axis, (uint32_t)c->affine, 0};
  tsr_oracle_tensor in[5] = {tt_oracle_tensor(&c->dy), tt_oracle_tensor(&c->x),
                             tt_oracle_tensor(&c->mean), tt_oracle_tensor(&c->rstd),
                             tt_oracle_tensor(&c->gamma)};
  if (!c->affine) tsr_oracle_tensor_destroy(&in[4]);
  tt_tensor *out[] = {&c->dx, &c->dgamma, &c->dbeta};
  double *want[3] = {NULL, NULL, NULL};
  tt_oracle_run(TSR_OP_LAYER_NORM_BACKWARD, &attrs, in, c->affine ? 5 : 4, out,
                c->affine ? 3 : 1, want);
  for (int64_t i = 0; i < c->rows * c->m; ++i) {
    nt_expect("layer_norm_backward dx", i, nt_get_flat(&c->dx, i), want[0][i], tol);
  }
  for (int64_t j = 0; c->affine && j < c->m; ++j) {
    nt_expect("layer_norm_backward dgamma", j, nt_get_flat(&c->dgamma, j), want[1][j], tol);
    nt_expect("layer_norm_backward dbeta", j, nt_get_flat(&c->dbeta, j), want[2][j], tol);
  }
  for (int k = 0; k < 3; ++k) free(want[k]);
}

static void test_layer_norm_matches_double_loops_for_every_dtype_axis_and_layout(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 4, 5};
  for (int di = 0; di < 4; ++di) {
    for (int32_t axis = 0; axis < 3; ++axis) {
      for (int variant = 0; variant < 4; ++variant) {
        const int affine = variant & 1, strided = variant >> 1;
        ln_case c;
        ln_case_make(&c, nt_float_dtypes[di], 3, sizes, axis, affine, strided,
                     100 + (uint64_t)(axis * 4 + variant));
        assert_int_equal(ln_forward(&c, 1e-5), TSR_OK);
        ln_forward_check(&c, 1e-5);
        assert_int_equal(ln_backward(&c, 1e-5), TSR_OK);
        ln_backward_check(&c, 3 * nt_tol(nt_float_dtypes[di]));
        ln_case_free(&c);
      }
    }
  }
}

static void test_layer_norm_takes_defaults_from_null_attrs(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 6};
  ln_case c;
  ln_case_make(&c, TSR_FLOAT64, 2, sizes, 1, 0, 0, 110);
  tt_tensor *in[] = {&c.x};
  tt_tensor *out[] = {&c.y, &c.mean, &c.rstd};
  assert_int_equal(tt_run(TSR_OP_LAYER_NORM, NULL, in, 1, out, 3, NULL), TSR_OK);
  ln_forward_check(&c, 1e-5);
  ln_case_free(&c);
}

static void test_layer_norm_handles_empty_rows_and_size_one_groups(void **state) {
  (void)state;
  // No rows: nothing to normalise; dgamma and dbeta are sums of nothing.
  const int64_t empty[] = {0, 3};
  ln_case c;
  ln_case_make(&c, TSR_FLOAT32, 2, empty, 1, 1, 0, 120);
  assert_int_equal(ln_forward(&c, 1e-5), TSR_OK);
  assert_int_equal(ln_backward(&c, 1e-5), TSR_OK);
  for (int64_t j = 0; j < 3; ++j) {
    assert_true(nt_get_flat(&c.dgamma, j) == 0.0);
    assert_true(nt_get_flat(&c.dbeta, j) == 0.0);
  }
  ln_case_free(&c);
  // Groups of one element: y = beta, dx = 0.
  const int64_t ones[] = {5, 1};
  ln_case_make(&c, TSR_FLOAT64, 2, ones, 1, 1, 0, 121);
  assert_int_equal(ln_forward(&c, 1e-5), TSR_OK);
  ln_forward_check(&c, 1e-5);
  assert_int_equal(ln_backward(&c, 1e-5), TSR_OK);
  ln_backward_check(&c, 1e-12);
  ln_case_free(&c);
  // M = 0 has no mean.
  const int64_t no_m[] = {2, 0};
  ln_case_make(&c, TSR_FLOAT32, 2, no_m, 1, 0, 0, 122);
  assert_int_equal(ln_forward(&c, 1e-5), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "M must be >= 1"));
  ln_case_free(&c);
  // ... unless there are no rows either: then every output is empty.
  const int64_t nothing[] = {0, 0};
  ln_case_make(&c, TSR_FLOAT32, 2, nothing, 1, 1, 0, 123);
  assert_int_equal(ln_forward(&c, 1e-5), TSR_OK);
  assert_int_equal(ln_backward(&c, 1e-5), TSR_OK);
  ln_case_free(&c);
}

// L = sum(dy * y) as a function of x, gamma and beta, with the plugin's
// float64 forward.
static double ln_objective(ln_case *c) {
  assert_int_equal(ln_forward(c, 1e-5), TSR_OK);
  double sum = 0;
  for (int64_t i = 0; i < tt_numel(&c->y); ++i)
    sum += nt_get_flat(&c->dy, i) * nt_get_flat(&c->y, i);
  return sum;
}

static void ln_finite_difference_check(ln_case *c, tt_tensor *param, const tt_tensor *grad,
                                       const char *what) {
  const double h = 1e-6;
  for (int64_t i = 0; i < tt_numel(param); ++i) {
    const double v = nt_get_flat(param, i);
    nt_set_flat(param, i, v + h);
    const double up = ln_objective(c);
    nt_set_flat(param, i, v - h);
    const double down = ln_objective(c);
    nt_set_flat(param, i, v);
    nt_expect(what, i, nt_get_flat(grad, i), (up - down) / (2 * h), 1e-6);
  }
}

static void test_layer_norm_backward_matches_finite_differences_of_the_forward(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 3, 2};
  for (int32_t axis = 1; axis < 3; ++axis) {
    for (int affine = 0; affine < 2; ++affine) {
      ln_case c;
      ln_case_make(&c, TSR_FLOAT64, 3, sizes, axis, affine, 1, 130);
      assert_int_equal(ln_forward(&c, 1e-5), TSR_OK);
      assert_int_equal(ln_backward(&c, 1e-5), TSR_OK);
      ln_finite_difference_check(&c, &c.x, &c.dx, "layer_norm dx vs finite difference");
      if (affine) {
        ln_finite_difference_check(&c, &c.gamma, &c.dgamma,
                                   "layer_norm dgamma vs finite difference");
        ln_finite_difference_check(&c, &c.beta, &c.dbeta, "layer_norm dbeta vs finite difference");
      }
      ln_case_free(&c);
    }
  }
}

static void test_layer_norm_many_rows_give_the_same_bits_on_one_and_two_threads(void **state) {
  (void)state;
  const int64_t sizes[] = {3000, 37};
  ln_case c;
  ln_case_make(&c, TSR_FLOAT32, 2, sizes, 1, 1, 0, 140);
  const uint64_t parallel_before = tsr_test_host_parallel_count();
  assert_int_equal(ln_forward(&c, 1e-5), TSR_OK);
  assert_true(tsr_test_host_parallel_count() > parallel_before);
  ln_forward_check(&c, 1e-5);
  assert_int_equal(ln_backward(&c, 1e-5), TSR_OK);
  ln_backward_check(&c, 1e-4);
  tsr_layer_norm_attrs attrs = {sizeof(attrs), 1, 1, 1e-5};
  tt_tensor *in[] = {&c.dy, &c.x, &c.mean, &c.rstd, &c.gamma};
  tt_tensor *out[] = {&c.dx, &c.dgamma, &c.dbeta};
  for (int k = 0; k < 3; ++k) {
    nt_expect_same_bits_on_one_and_two_threads(TSR_OP_LAYER_NORM_BACKWARD, &attrs, in, 5, out, 3,
                                               k);
  }
  ln_case_free(&c);
}

static void test_layer_norm_refuses_what_the_catalogue_forbids(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 4};
  ln_case c;
  ln_case_make(&c, TSR_FLOAT16, 2, sizes, 1, 1, 0, 150);
  assert_int_equal(ln_forward(&c, 1e-5), TSR_OK);
  ln_forward_check(&c, 1e-5);
  // Statistics of float16 are float32, not float16.
  tt_tensor half_mean;
  const int64_t stat_sizes[] = {2, 1};
  tt_tensor_make(&half_mean, TSR_FLOAT16, 2, stat_sizes, NULL, 0);
  tsr_layer_norm_attrs attrs = {sizeof(attrs), 1, 1, 1e-5};
  tt_tensor *in[] = {&c.x, &c.gamma, &c.beta};
  tt_tensor *out[] = {&c.y, &half_mean, &c.rstd};
  assert_int_equal(tt_supports(TSR_OP_LAYER_NORM, &attrs, in, 3, out, 3), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "float32"));
  tt_tensor_free(&half_mean);
  // has_affine without gamma and beta; an axis beyond the rank.
  assert_int_equal(tt_supports(TSR_OP_LAYER_NORM, &attrs, in, 1, out, 3), TSR_INVALID_ARGUMENT);
  attrs.axis = 2;
  assert_int_equal(tt_supports(TSR_OP_LAYER_NORM, &attrs, in, 3, out, 3), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "axis 2"));
  ln_case_free(&c);
  // gamma of the wrong shape: the normalised shape is [4, 5] for axis 1.
  const int64_t sizes3[] = {2, 4, 5};
  ln_case_make(&c, TSR_FLOAT32, 3, sizes3, 2, 1, 0, 151);
  attrs.axis = 1;
  tt_tensor *in3[] = {&c.x, &c.gamma, &c.beta};
  tt_tensor *out3[] = {&c.y, &c.mean, &c.rstd};
  assert_int_equal(tt_supports(TSR_OP_LAYER_NORM, &attrs, in3, 3, out3, 3), TSR_INVALID_ARGUMENT);
  ln_case_free(&c);
}

// ---------------------------------------------------------------------------
// Batch norm.

typedef struct bn_case {
  tt_tensor x, gamma, beta, rmean, rvar, y, save_mean, save_invstd, rmean_out, rvar_out;
  tt_tensor dy, dx, dgamma, dbeta;
  int64_t channels, m, inner;
} bn_case;

static void bn_case_make(bn_case *c, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                         int strided, uint64_t seed) {
  memset(c, 0, sizeof(*c));
  const tsr_dtype_t sd = stat_dtype(dtype);
  c->channels = sizes[1];
  c->inner = 1;
  for (int32_t d = 2; d < rank; ++d) c->inner *= sizes[d];
  c->m = sizes[0] * c->inner;
  if (strided) {
    nt_tensor_make_strided(&c->x, dtype, rank, sizes);
    nt_tensor_make_strided(&c->y, dtype, rank, sizes);
    nt_tensor_make_strided(&c->dx, dtype, rank, sizes);
  } else {
    tt_tensor_make(&c->x, dtype, rank, sizes, NULL, 0);
    tt_tensor_make(&c->y, dtype, rank, sizes, NULL, 0);
    tt_tensor_make(&c->dx, dtype, rank, sizes, NULL, 0);
  }
  tt_tensor_make(&c->dy, dtype, rank, sizes, NULL, 0);
  const int64_t cs[] = {c->channels};
  const int64_t two[] = {2};
  tt_tensor *stats[] = {&c->gamma,       &c->beta,      &c->rmean,    &c->rvar,   &c->save_mean,
                        &c->save_invstd, &c->rmean_out, &c->rvar_out, &c->dgamma, &c->dbeta};
  for (int i = 0; i < 10; ++i) {
    // Every other statistic strided (every second element).
    tt_tensor_make(stats[i], sd, 1, cs, strided && (i & 1) ? two : NULL, 0);
  }
  nt_fill(&c->x, seed, -2, 4);
  nt_fill(&c->dy, seed + 1, -1, 1);
  nt_fill(&c->gamma, seed + 2, 0.5, 1.5);
  nt_fill(&c->beta, seed + 3, -1, 1);
  nt_fill(&c->rmean, seed + 4, -0.5, 0.5);
  nt_fill(&c->rvar, seed + 5, 0.5, 2);
}

static void bn_case_free(bn_case *c) {
  tt_tensor *all[] = {&c->x,  &c->gamma,     &c->beta,        &c->rmean,     &c->rvar,
                      &c->y,  &c->save_mean, &c->save_invstd, &c->rmean_out, &c->rvar_out,
                      &c->dy, &c->dx,        &c->dgamma,      &c->dbeta};
  for (int i = 0; i < 14; ++i) tt_tensor_free(all[i]);
}

static tsr_status bn_forward(bn_case *c, int training, tt_tensor *rmean_out, tt_tensor *rvar_out) {
  tsr_batch_norm_attrs attrs = {sizeof(attrs), 1e-5, 0.1, (uint32_t)training, 0};
  tt_tensor *in[] = {&c->x, &c->gamma, &c->beta, &c->rmean, &c->rvar};
  tt_tensor *out[] = {&c->y, &c->save_mean, &c->save_invstd, rmean_out, rvar_out};
  return tt_run(TSR_OP_BATCH_NORM, &attrs, in, 5, out, 5, NULL);
}

static tsr_status bn_backward(bn_case *c, int training) {
  tsr_batch_norm_attrs attrs = {sizeof(attrs), 1e-5, 0.1, (uint32_t)training, 0};
  tt_tensor *in[] = {&c->dy, &c->x, &c->gamma, &c->save_mean, &c->save_invstd};
  tt_tensor *out[] = {&c->dx, &c->dgamma, &c->dbeta};
  return tt_run(TSR_OP_BATCH_NORM_BACKWARD, &attrs, in, 5, out, 3, NULL);
}

// Checks y, save_* and the running outputs against the conformance
// oracle's over the stored inputs; |old_rmean| and |old_rvar| are the running
// inputs before the call (the outputs may have overwritten them).
static void bn_forward_check(bn_case *c, int training, const double *old_rmean,
                             const double *old_rvar, const tt_tensor *rmean_out,
                             const tt_tensor *rvar_out) {
  const tsr_dtype_t dtype = c->x.desc.dtype, sd = stat_dtype(dtype);
  const int64_t total = tt_numel(&c->x);
  const tsr_batch_norm_attrs attrs = {sizeof(attrs), 1e-5, 0.1, (uint32_t)training, 0};
  tsr_oracle_tensor in[5] = {tt_oracle_tensor(&c->x), tt_oracle_tensor(&c->gamma),
                             tt_oracle_tensor(&c->beta), tt_oracle_tensor(&c->rmean),
                             tt_oracle_tensor(&c->rvar)};
  for (int64_t ch = 0; ch < c->channels; ++ch) {
    in[3].v[ch] = old_rmean[ch];
    in[4].v[ch] = old_rvar[ch];
  }
  tt_tensor *out[] = {&c->y, &c->save_mean, &c->save_invstd, (tt_tensor *)rmean_out,
                      (tt_tensor *)rvar_out};
  double *want[5];
  tt_oracle_run(TSR_OP_BATCH_NORM, &attrs, in, 5, out, 5, want);
  for (int64_t ch = 0; ch < c->channels; ++ch) {
    nt_expect("batch_norm save_mean", ch, nt_get_flat(&c->save_mean, ch), want[1][ch], nt_tol(sd));
    nt_expect("batch_norm save_invstd", ch, nt_get_flat(&c->save_invstd, ch), want[2][ch],
              nt_tol(sd));
    nt_expect("batch_norm running_mean_out", ch, nt_get_flat(rmean_out, ch), want[3][ch],
              nt_tol(sd));
    nt_expect("batch_norm running_var_out", ch, nt_get_flat(rvar_out, ch), want[4][ch],
              nt_tol(sd));
  }
  for (int64_t i = 0; i < total; ++i) {
    nt_expect("batch_norm y", i, nt_get_flat(&c->y, i), want[0][i], 2 * nt_tol(dtype));
  }
  for (int k = 0; k < 5; ++k) free(want[k]);
}

static void bn_backward_check(bn_case *c, int training, double tol) {
  const tsr_batch_norm_attrs attrs = {sizeof(attrs), 1e-5, 0.1, (uint32_t)training, 0};
  tsr_oracle_tensor in[5] = {tt_oracle_tensor(&c->dy), tt_oracle_tensor(&c->x),
                             tt_oracle_tensor(&c->gamma), tt_oracle_tensor(&c->save_mean),
                             tt_oracle_tensor(&c->save_invstd)};
  tt_tensor *out[] = {&c->dx, &c->dgamma, &c->dbeta};
  double *want[3];
  tt_oracle_run(TSR_OP_BATCH_NORM_BACKWARD, &attrs, in, 5, out, 3, want);
  for (int64_t ch = 0; ch < c->channels; ++ch) {
    nt_expect("batch_norm_backward dbeta", ch, nt_get_flat(&c->dbeta, ch), want[2][ch], tol);
    nt_expect("batch_norm_backward dgamma", ch, nt_get_flat(&c->dgamma, ch), want[1][ch], tol);
  }
  for (int64_t i = 0; i < tt_numel(&c->x); ++i) {
    nt_expect("batch_norm_backward dx", i, nt_get_flat(&c->dx, i), want[0][i], tol);
  }
  for (int k = 0; k < 3; ++k) free(want[k]);
}

static void bn_running_get(const bn_case *c, double *rmean, double *rvar) {
  for (int64_t ch = 0; ch < c->channels; ++ch) {
    rmean[ch] = nt_get_flat(&c->rmean, ch);
    rvar[ch] = nt_get_flat(&c->rvar, ch);
  }
}

static void test_batch_norm_matches_double_loops_for_every_dtype_mode_and_layout(void **state) {
  (void)state;
  const int64_t sizes4[] = {3, 4, 2, 5};
  const int64_t sizes2[] = {6, 3};
  for (int di = 0; di < 4; ++di) {
    const tsr_dtype_t dtype = nt_float_dtypes[di];
    for (int variant = 0; variant < 8; ++variant) {
      const int training = variant & 1, strided = (variant >> 1) & 1, rank2 = variant >> 2;
      bn_case c;
      bn_case_make(&c, dtype, rank2 ? 2 : 4, rank2 ? sizes2 : sizes4, strided,
                   200 + (uint64_t)variant);
      double rmean[8], rvar[8];
      bn_running_get(&c, rmean, rvar);
      assert_int_equal(bn_forward(&c, training, &c.rmean_out, &c.rvar_out), TSR_OK);
      bn_forward_check(&c, training, rmean, rvar, &c.rmean_out, &c.rvar_out);
      assert_int_equal(bn_backward(&c, training), TSR_OK);
      bn_backward_check(&c, training, 3 * nt_tol(dtype));
      bn_case_free(&c);
    }
  }
}

static void test_batch_norm_updates_running_statistics_in_place(void **state) {
  (void)state;
  const int64_t sizes[] = {4, 3, 3};
  for (int training = 0; training < 2; ++training) {
    bn_case c;
    bn_case_make(&c, TSR_FLOAT32, 3, sizes, 0, 210);
    double rmean[3], rvar[3];
    bn_running_get(&c, rmean, rvar);
    c.rmean.desc.alias_group = 3;
    c.rvar.desc.alias_group = 4;
    tt_tensor rmean_out = c.rmean, rvar_out = c.rvar;
    assert_int_equal(bn_forward(&c, training, &rmean_out, &rvar_out), TSR_OK);
    bn_forward_check(&c, training, rmean, rvar, &c.rmean, &c.rvar);
    // y may not alias x.
    c.x.desc.alias_group = 0;
    tt_tensor y = c.y;
    c.y = c.x;
    assert_int_equal(bn_forward(&c, training, &rmean_out, &rvar_out), TSR_INVALID_ARGUMENT);
    c.y = y;
    bn_case_free(&c);
  }
}

static void test_batch_norm_handles_size_one_and_empty_batches(void **state) {
  (void)state;
  // Training needs two values per channel; inference does not.
  const int64_t one[] = {1, 3};
  bn_case c;
  bn_case_make(&c, TSR_FLOAT64, 2, one, 0, 220);
  assert_int_equal(bn_forward(&c, 1, &c.rmean_out, &c.rvar_out), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "M = 1"));
  double rmean[3], rvar[3];
  bn_running_get(&c, rmean, rvar);
  assert_int_equal(bn_forward(&c, 0, &c.rmean_out, &c.rvar_out), TSR_OK);
  bn_forward_check(&c, 0, rmean, rvar, &c.rmean_out, &c.rvar_out);
  bn_case_free(&c);
  // No channels: every output is empty, so even training succeeds.
  const int64_t no_channels[] = {1, 0, 1};
  bn_case_make(&c, TSR_FLOAT32, 3, no_channels, 0, 222);
  assert_int_equal(bn_forward(&c, 1, &c.rmean_out, &c.rvar_out), TSR_OK);
  assert_int_equal(bn_backward(&c, 1), TSR_OK);
  bn_case_free(&c);
  // An empty batch in inference still writes save_* and the running copies;
  // its backward gives zero dgamma and dbeta.
  const int64_t empty[] = {0, 3, 2};
  bn_case_make(&c, TSR_FLOAT32, 3, empty, 0, 221);
  bn_running_get(&c, rmean, rvar);
  assert_int_equal(bn_forward(&c, 0, &c.rmean_out, &c.rvar_out), TSR_OK);
  bn_forward_check(&c, 0, rmean, rvar, &c.rmean_out, &c.rvar_out);
  assert_int_equal(bn_backward(&c, 1), TSR_OK);
  for (int64_t ch = 0; ch < 3; ++ch) {
    assert_true(nt_get_flat(&c.dgamma, ch) == 0.0 && nt_get_flat(&c.dbeta, ch) == 0.0);
  }
  bn_case_free(&c);
}

static double bn_objective(bn_case *c, int training) {
  assert_int_equal(bn_forward(c, training, &c->rmean_out, &c->rvar_out), TSR_OK);
  double sum = 0;
  for (int64_t i = 0; i < tt_numel(&c->y); ++i)
    sum += nt_get_flat(&c->dy, i) * nt_get_flat(&c->y, i);
  return sum;
}

static void test_batch_norm_backward_matches_finite_differences_of_the_forward(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 2, 2};
  for (int training = 0; training < 2; ++training) {
    bn_case c;
    bn_case_make(&c, TSR_FLOAT64, 3, sizes, 1, 230);
    assert_int_equal(bn_forward(&c, training, &c.rmean_out, &c.rvar_out), TSR_OK);
    assert_int_equal(bn_backward(&c, training), TSR_OK);
    tt_tensor *params[] = {&c.x, &c.gamma, &c.beta};
    tt_tensor *grads[] = {&c.dx, &c.dgamma, &c.dbeta};
    const double h = 1e-6;
    for (int p = 0; p < 3; ++p) {
      for (int64_t i = 0; i < tt_numel(params[p]); ++i) {
        const double v = nt_get_flat(params[p], i);
        nt_set_flat(params[p], i, v + h);
        const double up = bn_objective(&c, training);
        nt_set_flat(params[p], i, v - h);
        const double down = bn_objective(&c, training);
        nt_set_flat(params[p], i, v);
        nt_expect("batch_norm gradient vs finite difference", p * 100 + i, nt_get_flat(grads[p], i),
                  (up - down) / (2 * h), 1e-6);
      }
    }
    bn_case_free(&c);
  }
}

static void test_batch_norm_refuses_what_the_catalogue_forbids(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 3, 4};
  bn_case c;
  bn_case_make(&c, TSR_BFLOAT16, 3, sizes, 0, 240);
  double rmean[3], rvar[3];
  bn_running_get(&c, rmean, rvar);
  assert_int_equal(bn_forward(&c, 1, &c.rmean_out, &c.rvar_out), TSR_OK);
  bn_forward_check(&c, 1, rmean, rvar, &c.rmean_out, &c.rvar_out);
  // Statistics of bfloat16 are float32.
  tt_tensor bad;
  const int64_t cs[] = {3};
  tt_tensor_make(&bad, TSR_BFLOAT16, 1, cs, NULL, 0);
  tt_tensor keep = c.gamma;
  c.gamma = bad;
  assert_int_equal(bn_forward(&c, 1, &c.rmean_out, &c.rvar_out), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "gamma"));
  c.gamma = keep;
  tt_tensor_free(&bad);
  // Rank 1 x has no channel axis.
  const int64_t four[] = {4};
  tt_tensor x1;
  tt_tensor_make(&x1, TSR_BFLOAT16, 1, four, NULL, 0);
  keep = c.x;
  c.x = x1;
  assert_int_equal(bn_forward(&c, 0, &c.rmean_out, &c.rvar_out), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "rank 1"));
  c.x = keep;
  tt_tensor_free(&x1);
  bn_case_free(&c);
}

static void test_batch_norm_large_input_gives_the_same_bits_on_one_and_two_threads(void **state) {
  (void)state;
  const int64_t sizes[] = {64, 8, 13, 13};
  bn_case c;
  bn_case_make(&c, TSR_FLOAT32, 4, sizes, 0, 250);
  tsr_batch_norm_attrs attrs = {sizeof(attrs), 1e-5, 0.1, 1, 0};
  tt_tensor *in[] = {&c.x, &c.gamma, &c.beta, &c.rmean, &c.rvar};
  tt_tensor *out[] = {&c.y, &c.save_mean, &c.save_invstd, &c.rmean_out, &c.rvar_out};
  const uint64_t parallel_before = tsr_test_host_parallel_count();
  nt_expect_same_bits_on_one_and_two_threads(TSR_OP_BATCH_NORM, &attrs, in, 5, out, 5, 0);
  assert_true(tsr_test_host_parallel_count() > parallel_before);
  double rmean[8], rvar[8];
  bn_running_get(&c, rmean, rvar);
  bn_forward_check(&c, 1, rmean, rvar, &c.rmean_out, &c.rvar_out);
  tt_tensor *bin[] = {&c.dy, &c.x, &c.gamma, &c.save_mean, &c.save_invstd};
  tt_tensor *bout[] = {&c.dx, &c.dgamma, &c.dbeta};
  nt_expect_same_bits_on_one_and_two_threads(TSR_OP_BATCH_NORM_BACKWARD, &attrs, bin, 5, bout, 3,
                                             0);
  bn_backward_check(&c, 1, 1e-4);
  bn_case_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layer_norm_matches_double_loops_for_every_dtype_axis_and_layout),
      cmocka_unit_test(test_layer_norm_takes_defaults_from_null_attrs),
      cmocka_unit_test(test_layer_norm_handles_empty_rows_and_size_one_groups),
      cmocka_unit_test(test_layer_norm_backward_matches_finite_differences_of_the_forward),
      cmocka_unit_test(test_layer_norm_many_rows_give_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_layer_norm_refuses_what_the_catalogue_forbids),
      cmocka_unit_test(test_batch_norm_matches_double_loops_for_every_dtype_mode_and_layout),
      cmocka_unit_test(test_batch_norm_updates_running_statistics_in_place),
      cmocka_unit_test(test_batch_norm_handles_size_one_and_empty_batches),
      cmocka_unit_test(test_batch_norm_backward_matches_finite_differences_of_the_forward),
      cmocka_unit_test(test_batch_norm_refuses_what_the_catalogue_forbids),
      cmocka_unit_test(test_batch_norm_large_input_gives_the_same_bits_on_one_and_two_threads),
  };
  return cmocka_run_group_tests(tests, tt_setup_two_threads, tt_teardown);
}
