// SGD_UPDATE and ADAM_UPDATE against float64 loops over several steps: every
// float dtype, momentum / dampening / nesterov / weight decay / first_step,
// Adam and AdamW with bias correction, contiguous and strided layouts, the
// ignored momentum buffer, thread-count independence, and refusals.
#include "test_data_util.h"

// Tolerance of one update computed in |dtype|'s compute type against
// float64, then stored: a few float32 roundings, or one rounding of a half
// type (which can differ by an ulp when float32 lands near a tie).
static double optim_rtol(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64: return 1e-13;
    case TSR_FLOAT32: return 4e-6;
    default: return 2 * tt_rtol(dtype);
  }
}

// Values of a tensor in row-major order, as stored.
static void values_get(const tt_tensor *t, double *v) {
  int64_t idx[TSR_MAX_RANK] = {0};
  int64_t n = 0;
  if (tt_numel(t) == 0) return;
  do {
    v[n++] = tt_get(t, idx);
  } while (tt_index_next(idx, t->desc.rank, t->desc.sizes));
}

static void values_expect(const char *what, const tt_tensor *t, const double *want,
                          const double *scale) {
  const tsr_dtype_t dtype = t->desc.dtype;
  const double rtol = optim_rtol(dtype);
  int64_t idx[TSR_MAX_RANK] = {0};
  int64_t n = 0;
  if (tt_numel(t) == 0) return;
  do {
    // Cancellation: the error scales with the terms, not with the result.
    du_expect_close(what, dtype, n, tt_get(t, idx), tt_round(want[n], dtype), rtol,
                    rtol * scale[n]);
    ++n;
  } while (tt_index_next(idx, t->desc.rank, t->desc.sizes));
}

// ---------------------------------------------------------------------------
// SGD

typedef struct sgd_case {
  double lr, momentum, dampening, weight_decay;
  uint32_t nesterov;
} sgd_case;

static const sgd_case k_sgd_cases[] = {
    {0.1, 0.0, 0.0, 0.0, 0},    // plain
    {0.05, 0.0, 0.0, 0.01, 0},  // weight decay only
    {0.1, 0.9, 0.1, 0.01, 0},   // momentum with dampening
    {0.1, 0.9, 0.0, 0.02, 1},   // nesterov
};

// Three steps, the first with first_step set when there is momentum; each
// step checked against float64 from the values the previous one stored.
static void sgd_steps_check(const sgd_case *c, tt_tensor *grad, tt_tensor *param, tt_tensor *buf) {
  const int64_t n = tt_numel(param);
  double *g = test_malloc((size_t)n * sizeof(double));
  double *p = test_malloc((size_t)n * sizeof(double));
  double *b = test_malloc((size_t)n * sizeof(double));
  double *want_p = test_malloc((size_t)n * sizeof(double));
  double *want_b = test_malloc((size_t)n * sizeof(double));
  double *scale_p = test_malloc((size_t)n * sizeof(double));
  double *scale_b = test_malloc((size_t)n * sizeof(double));
  for (int step = 0; step < 3; ++step) {
    tt_fill(grad, 100 + (uint64_t)step, -1, 1);
    values_get(grad, g);
    values_get(param, p);
    if (c->momentum != 0) values_get(buf, b);
    const int first = step == 0;
    for (int64_t i = 0; i < n; ++i) {
      const double gi = g[i] + c->weight_decay * p[i];
      double d = gi;
      if (c->momentum != 0) {
        double bi = first ? gi : c->momentum * b[i] + (1 - c->dampening) * gi;
        want_b[i] = bi;
        scale_b[i] = 1 + fabs(gi) + fabs(c->momentum * b[i]);
        d = c->nesterov ? gi + c->momentum * bi : bi;
      }
      want_p[i] = p[i] - c->lr * d;
      scale_p[i] = 1 + fabs(p[i]) + fabs(c->lr * d);
    }
    tsr_sgd_attrs attrs = {sizeof(attrs), c->lr,       c->momentum, c->dampening,
                           c->weight_decay, c->nesterov, (uint32_t)first};
    tt_tensor *in[] = {grad};
    tt_tensor *outs[] = {param, buf};
    assert_int_equal(tt_run(TSR_OP_SGD_UPDATE, &attrs, in, 1, outs, 2, NULL), TSR_OK);
    values_expect("sgd param", param, want_p, scale_p);
    if (c->momentum != 0) values_expect("sgd momentum_buf", buf, want_b, scale_b);
  }
  test_free(g);
  test_free(p);
  test_free(b);
  test_free(want_p);
  test_free(want_b);
  test_free(scale_p);
  test_free(scale_b);
}

// grad, param and buf in one of three layouts: contiguous; param permuted
// and grad strided; everything strided differently.
static void optim_tensors_make(tt_tensor *ts, int32_t count, tsr_dtype_t dtype, int layout) {
  const int64_t sizes[] = {5, 6, 7};
  for (int32_t k = 0; k < count; ++k) {
    if (layout == 0) {
      tt_tensor_make(&ts[k], dtype, 3, sizes, NULL, 0);
    } else if (layout == 1 && k == 1) {
      tt_tensor_make_permuted(&ts[k], dtype, 3, sizes, (const int32_t[]){2, 0, 1});
    } else if (layout == 1 && k != 0) {
      tt_tensor_make(&ts[k], dtype, 3, sizes, NULL, 0);
    } else {
      const int64_t strides[] = {100 + 3 * k, 15, 2};
      tt_tensor_make(&ts[k], dtype, 3, sizes, strides, 1 + k);
    }
  }
}

static void test_sgd_matches_double_loops_over_steps_for_every_dtype_and_layout(void **state) {
  (void)state;
  for (size_t di = 0; di < sizeof(du_float_dtypes) / sizeof(du_float_dtypes[0]); ++di) {
    for (size_t ci = 0; ci < sizeof(k_sgd_cases) / sizeof(k_sgd_cases[0]); ++ci) {
      for (int layout = 0; layout < 3; ++layout) {
        tt_tensor ts[3];
        optim_tensors_make(ts, 3, du_float_dtypes[di], layout);
        tt_fill(&ts[1], 7, -2, 2);
        tt_fill(&ts[2], 8, -1, 1);
        sgd_steps_check(&k_sgd_cases[ci], &ts[0], &ts[1], &ts[2]);
        for (int k = 0; k < 3; ++k) tt_tensor_free(&ts[k]);
      }
    }
  }
}

static void test_sgd_without_momentum_ignores_momentum_buf(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 4};
  tt_tensor grad, param, buf, empty;
  tt_tensor_make(&grad, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&param, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&buf, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_fill(&param, 1, -1, 1);
  // An empty descriptor: rank 0 and a NULL buffer at execution.
  memset(&empty, 0, sizeof(empty));
  empty.desc.struct_size = sizeof(tsr_tensor_desc);
  empty.desc.dtype = TSR_FLOAT32;
  empty.desc.alias_group = -1;
  sgd_steps_check(&k_sgd_cases[1], &grad, &param, &empty);
  // A full-sized buffer is not touched either (it keeps tt_tensor_make's
  // poison bytes).
  unsigned char poison[3 * 4 * 4];
  memcpy(poison, buf.base, sizeof(poison));
  sgd_steps_check(&k_sgd_cases[0], &grad, &param, &buf);
  assert_memory_equal(poison, buf.base, sizeof(poison));
  // Nor is a buffer of another shape.
  tt_tensor odd;
  tt_tensor_make(&odd, TSR_FLOAT64, 1, (const int64_t[]){2}, NULL, 0);
  sgd_steps_check(&k_sgd_cases[0], &grad, &param, &odd);
  tt_tensor_free(&odd);
  tt_tensor_free(&grad);
  tt_tensor_free(&param);
  tt_tensor_free(&buf);
}

// ---------------------------------------------------------------------------
// Adam

typedef struct adam_case {
  double lr, beta1, beta2, eps, weight_decay;
  uint32_t decoupled;
} adam_case;

static const adam_case k_adam_cases[] = {
    {1e-3, 0.9, 0.999, 1e-8, 0.0, 0},  // Adam, PyTorch's defaults
    {1e-2, 0.8, 0.99, 1e-6, 0.1, 0},   // Adam with L2 weight decay
    {1e-2, 0.9, 0.999, 1e-8, 0.05, 1}, // AdamW
    {1e-2, 0.0, 0.0, 1e-3, 0.0, 0},    // no averaging: bias corrections of 1
};

static void adam_steps_check(const adam_case *c, tt_tensor *grad, tt_tensor *param, tt_tensor *m,
                             tt_tensor *v) {
  const int64_t n = tt_numel(param);
  double *buf = test_malloc((size_t)n * 10 * sizeof(double));
  double *g = buf, *p = buf + n, *mm = buf + 2 * n, *vv = buf + 3 * n;
  double *want_p = buf + 4 * n, *want_m = buf + 5 * n, *want_v = buf + 6 * n;
  double *scale_p = buf + 7 * n, *scale_m = buf + 8 * n, *scale_v = buf + 9 * n;
  for (int64_t step = 1; step <= 4; ++step) {
    tt_fill(grad, 200 + (uint64_t)step, -1, 1);
    values_get(grad, g);
    values_get(param, p);
    values_get(m, mm);
    values_get(v, vv);
    const double bc1 = 1 - pow(c->beta1, (double)step), bc2 = 1 - pow(c->beta2, (double)step);
    for (int64_t i = 0; i < n; ++i) {
      double pi = p[i], gi = g[i];
      if (c->decoupled) {
        pi *= 1 - c->lr * c->weight_decay;
      } else {
        gi += c->weight_decay * pi;
      }
      want_m[i] = c->beta1 * mm[i] + (1 - c->beta1) * gi;
      want_v[i] = c->beta2 * vv[i] + (1 - c->beta2) * gi * gi;
      const double upd = (c->lr / bc1) * want_m[i] / (sqrt(want_v[i] / bc2) + c->eps);
      want_p[i] = pi - upd;
      scale_m[i] = 1e-3 + fabs(c->beta1 * mm[i]) + fabs(gi);
      scale_v[i] = 1e-6 + fabs(c->beta2 * vv[i]) + gi * gi;
      scale_p[i] = fabs(pi) + 4 * fabs(upd) + 1e-3;
    }
    tsr_adam_attrs attrs = {sizeof(attrs),   c->lr, c->beta1,    c->beta2, c->eps,
                            c->weight_decay, step,  c->decoupled, 0};
    tt_tensor *in[] = {grad};
    tt_tensor *outs[] = {param, m, v};
    assert_int_equal(tt_run(TSR_OP_ADAM_UPDATE, &attrs, in, 1, outs, 3, NULL), TSR_OK);
    values_expect("adam exp_avg", m, want_m, scale_m);
    values_expect("adam exp_avg_sq", v, want_v, scale_v);
    values_expect("adam param", param, want_p, scale_p);
  }
  test_free(buf);
}

static void test_adam_matches_double_loops_over_steps_for_every_dtype_and_layout(void **state) {
  (void)state;
  for (size_t di = 0; di < sizeof(du_float_dtypes) / sizeof(du_float_dtypes[0]); ++di) {
    for (size_t ci = 0; ci < sizeof(k_adam_cases) / sizeof(k_adam_cases[0]); ++ci) {
      for (int layout = 0; layout < 3; ++layout) {
        tt_tensor ts[4];
        optim_tensors_make(ts, 4, du_float_dtypes[di], layout);
        tt_fill(&ts[1], 9, -2, 2);
        tt_fill(&ts[2], 0, 0, 0);  // state starts at zero, as optimizers do
        tt_fill(&ts[3], 0, 0, 0);
        adam_steps_check(&k_adam_cases[ci], &ts[0], &ts[1], &ts[2], &ts[3]);
        for (int k = 0; k < 4; ++k) tt_tensor_free(&ts[k]);
      }
    }
  }
}

static void test_optimizers_handle_empty_and_single_element_tensors(void **state) {
  (void)state;
  for (int size = 0; size < 2; ++size) {
    tt_tensor ts[4];
    for (int k = 0; k < 4; ++k) {
      tt_tensor_make(&ts[k], TSR_FLOAT64, 1, (const int64_t[]){size}, NULL, 0);
      tt_fill(&ts[k], (uint64_t)k, 0, 0);
    }
    tt_fill(&ts[1], 3, 1, 1);
    sgd_steps_check(&k_sgd_cases[2], &ts[0], &ts[1], &ts[2]);
    adam_steps_check(&k_adam_cases[2], &ts[0], &ts[1], &ts[2], &ts[3]);
    for (int k = 0; k < 4; ++k) tt_tensor_free(&ts[k]);
  }
  // Rank 0.
  tt_tensor ts[4];
  for (int k = 0; k < 4; ++k) tt_tensor_make(&ts[k], TSR_FLOAT32, 0, NULL, NULL, 0);
  for (int k = 0; k < 4; ++k) tt_set(&ts[k], NULL, k == 1 ? 0.5 : 0);
  adam_steps_check(&k_adam_cases[0], &ts[0], &ts[1], &ts[2], &ts[3]);
  for (int k = 0; k < 4; ++k) tt_tensor_free(&ts[k]);
}

static void test_optimizers_large_give_the_same_bits_on_one_and_two_threads(void **state) {
  (void)state;
  const int64_t sizes[] = {300, 400};
  for (int layout = 0; layout < 2; ++layout) {
    tt_tensor ts[4];
    for (int k = 0; k < 4; ++k) {
      if (layout == 1 && k == 1) {
        tt_tensor_make_permuted(&ts[k], TSR_FLOAT32, 2, sizes, (const int32_t[]){1, 0});
      } else {
        tt_tensor_make(&ts[k], TSR_FLOAT32, 2, sizes, NULL, 0);
      }
      tt_fill(&ts[k], 30 + (uint64_t)k, k == 3 ? 0 : -1, 1);
    }
    tsr_sgd_attrs sgd = {sizeof(sgd), 0.1, 0.9, 0.0, 1e-4, 1, 0};
    tsr_adam_attrs adam = {sizeof(adam), 1e-3, 0.9, 0.999, 1e-8, 1e-2, 3, 1, 0};
    tt_tensor *in[] = {&ts[0]};
    tt_tensor *outs[] = {&ts[1], &ts[2], &ts[3]};
    du_expect_same_bits_on_one_and_two_threads(TSR_OP_SGD_UPDATE, &sgd, in, 1, outs, 2);
    du_expect_same_bits_on_one_and_two_threads(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3);
    for (int k = 0; k < 4; ++k) tt_tensor_free(&ts[k]);
  }
}

static void test_optimizers_refuse_what_the_catalogue_forbids(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 3};
  tt_tensor grad, param, buf, v, small, igrad, iparam, ibuf;
  tt_tensor_make(&grad, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&param, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&buf, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&v, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&small, TSR_FLOAT32, 2, (const int64_t[]){2, 2}, NULL, 0);
  tt_tensor_make(&igrad, TSR_INT32, 2, sizes, NULL, 0);
  tt_tensor_make(&iparam, TSR_INT32, 2, sizes, NULL, 0);
  tt_tensor_make(&ibuf, TSR_INT32, 2, sizes, NULL, 0);
  tt_tensor *in[] = {&grad};
  tt_tensor *outs[] = {&param, &buf, &v};
  tsr_sgd_attrs sgd = {sizeof(sgd), 0.1, 0.9, 0.0, 0.0, 1, 0};
  assert_int_equal(tt_supports(TSR_OP_SGD_UPDATE, &sgd, in, 1, outs, 2), TSR_OK);
  du_expect_invalid(tt_supports(TSR_OP_SGD_UPDATE, NULL, in, 1, outs, 2), "attrs is NULL");
  sgd.dampening = 0.1;
  du_expect_invalid(tt_supports(TSR_OP_SGD_UPDATE, &sgd, in, 1, outs, 2), "nesterov");
  sgd.dampening = 0;
  sgd.momentum = 0;
  du_expect_invalid(tt_supports(TSR_OP_SGD_UPDATE, &sgd, in, 1, outs, 2), "nesterov");
  sgd.nesterov = 0;
  sgd.momentum = 0.9;
  tt_tensor *iin[] = {&igrad};
  tt_tensor *iouts[] = {&iparam, &ibuf};
  du_expect_invalid(tt_supports(TSR_OP_SGD_UPDATE, &sgd, iin, 1, iouts, 2), "int32");
  tt_tensor *small_outs[] = {&param, &small};
  du_expect_invalid(tt_supports(TSR_OP_SGD_UPDATE, &sgd, in, 1, small_outs, 2), "sizes[1]");
  // param and momentum_buf overlapping; param overlapping grad.
  param.desc.alias_group = 1;
  buf.desc.alias_group = 1;
  du_expect_invalid(tt_supports(TSR_OP_SGD_UPDATE, &sgd, in, 1, outs, 2), "overlap");
  buf.desc.alias_group = -1;
  grad.desc.alias_group = 1;
  du_expect_invalid(tt_supports(TSR_OP_SGD_UPDATE, &sgd, in, 1, outs, 2), "alias group");
  grad.desc.alias_group = -1;
  param.desc.alias_group = -1;

  tsr_adam_attrs adam = {sizeof(adam), 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, 0, 0};
  assert_int_equal(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), TSR_OK);
  adam.step = 0;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), "step is 0");
  adam.step = 1;
  adam.beta1 = 1.0;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), "beta1");
  adam.beta1 = 0.9;
  adam.beta2 = -0.1;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), "beta2");
  adam.beta2 = 0.999;
  adam.lr = NAN;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), "lr");
  adam.lr = 1e-3;
  adam.eps = -1;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), "eps");
  adam.eps = 1e-8;
  adam.weight_decay = -1;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), "weight_decay");
  adam.weight_decay = 0;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, NULL, in, 1, outs, 3), "attrs is NULL");
  v.desc.alias_group = 2;
  buf.desc.alias_group = 2;
  du_expect_invalid(tt_supports(TSR_OP_ADAM_UPDATE, &adam, in, 1, outs, 3), "overlap");
  tt_tensor_free(&grad);
  tt_tensor_free(&param);
  tt_tensor_free(&buf);
  tt_tensor_free(&v);
  tt_tensor_free(&small);
  tt_tensor_free(&igrad);
  tt_tensor_free(&iparam);
  tt_tensor_free(&ibuf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd_matches_double_loops_over_steps_for_every_dtype_and_layout),
      cmocka_unit_test(test_sgd_without_momentum_ignores_momentum_buf),
      cmocka_unit_test(test_adam_matches_double_loops_over_steps_for_every_dtype_and_layout),
      cmocka_unit_test(test_optimizers_handle_empty_and_single_element_tensors),
      cmocka_unit_test(test_optimizers_large_give_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_optimizers_refuse_what_the_catalogue_forbids),
  };
  return cmocka_run_group_tests(tests, tt_setup_two_threads, tt_teardown);
}
