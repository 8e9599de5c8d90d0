// Gradient clipping, RMSprop, Adagrad, parameter groups and the schedules
// added after StepLR and CosineAnnealingLR (tessera/optim.h).
//
// Each optimizer's trajectory over four steps of fixed gradients is compared
// with a float64 loop written here from PyTorch's update rule (torch.optim
// RMSprop, Adagrad; torch.nn.utils.clip_grad_norm_, clip_grad_value_), for
// float32 and float64 parameters. State written into a fresh optimizer
// through a checkpoint continues bit for bit.
//
// Compile definitions: TSR_TEST_PLUGIN_PATH (colon-separated plugins),
// TSR_TEST_DEVICE ("ref:0" or "onednn:0"), TSR_TEST_REF_PATH (the ref plugin).
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
#include <unistd.h>

#include "tessera/tessera.h"
#include "test_support.h"
#include "device_fixture.h"



// --- helpers ----------------------------------------------------------------------

// Two parameters, [2, 3] and [4], seen by the float64 rules as one array of
// 10 elements: parameter j owns elements [kStart[j], kStart[j + 1]).
#define NPARAM 2
#define NELEM 10
#define NSTEPS 4
static const int kStart[NPARAM + 1] = {0, 6, 10};
static const int32_t kRank[NPARAM] = {2, 1};
static const int64_t kSizes[NPARAM][2] = {{2, 3}, {4, 0}};

static tsr_tensor *leaf(tsr_dtype_t dtype, int j, const double *values) {
  tsr_tensor *t = ts_tensor(g_device, dtype, kRank[j], kSizes[j], values);
  TS_ASSERT_TENSOR(t);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(t, 1));
  return t;
}

static void grad_set(tsr_tensor *param, const double *values) {
  tsr_tensor *g = ts_tensor(g_device, tsr_tensor_dtype(param), tsr_tensor_rank(param),
                            tsr_tensor_sizes(param), values);
  TS_ASSERT_TENSOR(g);
  TS_ASSERT_OK(tsr_tensor_grad_set(param, g));
  tsr_tensor_release(g);
}

static void read_all(tsr_tensor *const *params, double *out) {
  for (int j = 0; j < NPARAM; ++j) {
    int64_t n = kStart[j + 1] - kStart[j];
    assert_int_equal(ts_read(params[j], out + kStart[j], n), n);
  }
}

static void grads_read(tsr_tensor *const *params, double *out) {
  for (int j = 0; j < NPARAM; ++j) {
    tsr_tensor *g = tsr_tensor_grad(params[j]);
    assert_non_null(g);
    int64_t n = kStart[j + 1] - kStart[j];
    assert_int_equal(ts_read(g, out + kStart[j], n), n);
    tsr_tensor_release(g);
  }
}

static double tol_rel(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 1e-4 : 1e-11;
}
static double tol_abs(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 1e-5 : 1e-12;
}

static void expect_error(tsr_status got, tsr_status want, const char *needle) {
  if (got != want) {
    fail_msg("status %s, expected %s (%s)", tsr_status_name(got), tsr_status_name(want),
             tsr_last_error());
  }
  if (strstr(tsr_last_error(), needle) == NULL)
    fail_msg("error \"%s\" does not mention \"%s\"", tsr_last_error(), needle);
}

static void expect_null(const void *got, tsr_status want, const char *needle) {
  if (got != NULL)
    fail_msg("expected NULL for \"%s\"", needle);
  expect_error(tsr_last_status(), want, needle);
}

static const tsr_dtype_t kDtypes[] = {TSR_FLOAT32, TSR_FLOAT64};

// Initial values and per-step gradients, rounded to |dtype|.
static void data_make(tsr_dtype_t dtype, uint64_t seed, double *p0, double grads[NSTEPS][NELEM]) {
  ts_rng rng = {seed};
  ts_rng_fill(&rng, dtype, -1, 1, p0, NELEM);
  for (int t = 0; t < NSTEPS; ++t) ts_rng_fill(&rng, dtype, -1, 1, grads[t], NELEM);
}

// --- float64 rules, written from torch.optim ----------------------------------------

typedef struct ref_state {
  double p[NELEM], a[NELEM], b[NELEM], c[NELEM];  // param and up to three states
  int64_t steps;
} ref_state;

// torch.optim.RMSprop._single_tensor_rmsprop: a square_avg, b momentum_buffer, c grad_avg.
static void rmsprop_ref(const tsr_rmsprop_options *o, double lr, ref_state *s, const double *grad,
                        int lo, int hi) {
  for (int i = lo; i < hi; ++i) {
    double g = grad[i] + o->weight_decay * s->p[i];
    s->a[i] = s->a[i] * o->alpha + (1 - o->alpha) * g * g;
    double avg;
    if (o->centered) {
      s->c[i] = s->c[i] + (1 - o->alpha) * (g - s->c[i]);  // lerp_
      avg = sqrt(s->a[i] - s->c[i] * s->c[i]) + o->eps;
    } else {
      avg = sqrt(s->a[i]) + o->eps;
    }
    if (o->momentum > 0) {
      s->b[i] = s->b[i] * o->momentum + g / avg;
      s->p[i] -= lr * s->b[i];
    } else {
      s->p[i] -= lr * g / avg;
    }
  }
}

// torch.optim.Adagrad._single_tensor_adagrad: a sum; |step| counts from 1.
static void adagrad_ref(const tsr_adagrad_options *o, double lr, ref_state *s, const double *grad,
                        int64_t step, int lo, int hi) {
  double clr = lr / (1 + (double)(step - 1) * o->lr_decay);
  for (int i = lo; i < hi; ++i) {
    double g = grad[i] + o->weight_decay * s->p[i];
    s->a[i] += g * g;
    s->p[i] -= clr * g / (sqrt(s->a[i]) + o->eps);
  }
}

// --- options ----------------------------------------------------------------------

static void test_options_init_sets_pytorch_defaults(void **state) {
  (void)state;
  tsr_rmsprop_options r;
  tsr_rmsprop_options_init(&r);
  assert_int_equal(r.struct_size, sizeof(r));
  assert_true(r.lr == 1e-2 && r.alpha == 0.99 && r.eps == 1e-8 && r.weight_decay == 0 &&
              r.momentum == 0 && r.centered == 0);
  tsr_adagrad_options a;
  tsr_adagrad_options_init(&a);
  assert_int_equal(a.struct_size, sizeof(a));
  assert_true(a.lr == 1e-2 && a.lr_decay == 0 && a.weight_decay == 0 &&
              a.initial_accumulator_value == 0 && a.eps == 1e-10);
}

// --- trajectories -------------------------------------------------------------------

typedef struct opt_config {
  const char *label;
  int adagrad;  // 0: RMSprop
  tsr_rmsprop_options rmsprop;
  tsr_adagrad_options adagrad_options;
} opt_config;

static tsr_optimizer *config_make(const opt_config *c, tsr_tensor *const *params) {
  tsr_optimizer *o = c->adagrad ? tsr_optim_adagrad(NPARAM, params, NULL, &c->adagrad_options)
                                : tsr_optim_rmsprop(NPARAM, params, NULL, &c->rmsprop);
  if (o == NULL)
    fail_msg("%s: optimizer creation failed: %s", c->label, tsr_last_error());
  return o;
}

static void config_ref_step(const opt_config *c, ref_state *s, const double *grad) {
  ++s->steps;
  if (c->adagrad) {
    adagrad_ref(&c->adagrad_options, c->adagrad_options.lr, s, grad, s->steps, 0, NELEM);
  } else {
    rmsprop_ref(&c->rmsprop, c->rmsprop.lr, s, grad, 0, NELEM);
  }
}

static void trajectory_check(const opt_config *c, tsr_dtype_t dtype) {
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(dtype, 7, p0, grads);
  ref_state s;
  memset(&s, 0, sizeof(s));
  memcpy(s.p, p0, sizeof(p0));
  if (c->adagrad) {
    for (int i = 0; i < NELEM; ++i) s.a[i] = c->adagrad_options.initial_accumulator_value;
  }
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(dtype, j, p0 + kStart[j]);
  tsr_optimizer *o = config_make(c, params);
  char what[160];
  for (int t = 0; t < NSTEPS; ++t) {
    tsr_optimizer_zero_grad(o);
    for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[t] + kStart[j]);
    TS_ASSERT_OK(tsr_optimizer_step(o));
    config_ref_step(c, &s, grads[t]);
    double got[NELEM];
    read_all(params, got);
    snprintf(what, sizeof(what), "%s: parameters after step %d", c->label, t + 1);
    ts_expect_values(what, dtype, got, s.p, NULL, NELEM, tol_rel(dtype), tol_abs(dtype));
  }
  // The first state of every parameter is square_avg or sum.
  const char *name;
  tsr_tensor *first;
  TS_ASSERT_OK(tsr_optimizer_state_get(o, 0, &name, &first));
  assert_string_equal(name, c->adagrad ? "0.sum" : "0.square_avg");
  double got[6];
  assert_int_equal(ts_read(first, got, 6), 6);
  ts_expect_values(c->label, dtype, got, s.a, NULL, 6, tol_rel(dtype), tol_abs(dtype));
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

static opt_config rmsprop_config(const char *label, double lr, double wd, double momentum,
                                 uint32_t centered) {
  opt_config c;
  memset(&c, 0, sizeof(c));
  c.label = label;
  tsr_rmsprop_options_init(&c.rmsprop);
  c.rmsprop.lr = lr;
  c.rmsprop.weight_decay = wd;
  c.rmsprop.momentum = momentum;
  c.rmsprop.centered = centered;
  return c;
}

static opt_config adagrad_config(const char *label, double lr, double lr_decay, double wd,
                                 double init) {
  opt_config c;
  memset(&c, 0, sizeof(c));
  c.label = label;
  c.adagrad = 1;
  tsr_adagrad_options_init(&c.adagrad_options);
  c.adagrad_options.lr = lr;
  c.adagrad_options.lr_decay = lr_decay;
  c.adagrad_options.weight_decay = wd;
  c.adagrad_options.initial_accumulator_value = init;
  return c;
}

static void test_rmsprop_trajectories_match_the_float64_rule(void **state) {
  (void)state;
  const opt_config configs[] = {
      rmsprop_config("rmsprop defaults", 1e-2, 0, 0, 0),
      rmsprop_config("rmsprop wd momentum", 0.05, 0.1, 0.9, 0),
      rmsprop_config("rmsprop centered", 0.02, 0, 0, 1),
      rmsprop_config("rmsprop centered wd momentum", 0.01, 0.05, 0.5, 1),
  };
  for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); ++i) {
    for (size_t d = 0; d < 2; ++d) trajectory_check(&configs[i], kDtypes[d]);
  }
}

static void test_adagrad_trajectories_match_the_float64_rule(void **state) {
  (void)state;
  const opt_config configs[] = {
      adagrad_config("adagrad defaults", 1e-2, 0, 0, 0),
      adagrad_config("adagrad lr_decay wd init", 0.1, 0.5, 0.2, 0.3),
  };
  for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); ++i) {
    for (size_t d = 0; d < 2; ++d) trajectory_check(&configs[i], kDtypes[d]);
  }
}

static void test_rmsprop_names_its_states_as_pytorch(void **state) {
  (void)state;
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT32, 3, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  const char *names[NPARAM] = {"w", "b"};
  tsr_rmsprop_options options;
  tsr_rmsprop_options_init(&options);
  options.momentum = 0.9;
  options.centered = 1;
  tsr_optimizer *o = tsr_optim_rmsprop(NPARAM, params, names, &options);
  TS_ASSERT_TENSOR(o);
  for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[0] + kStart[j]);
  TS_ASSERT_OK(tsr_optimizer_step(o));
  assert_int_equal(tsr_optimizer_state_count(o), 6);
  const char *want[] = {"w.square_avg", "w.momentum_buffer", "w.grad_avg",
                        "b.square_avg", "b.momentum_buffer", "b.grad_avg"};
  for (int32_t i = 0; i < 6; ++i) {
    const char *name;
    tsr_tensor *t;
    TS_ASSERT_OK(tsr_optimizer_state_get(o, i, &name, &t));
    assert_string_equal(name, want[i]);
  }
  assert_int_equal(tsr_optimizer_parameter_count(o), NPARAM);
  const char *pname;
  tsr_tensor *p;
  TS_ASSERT_OK(tsr_optimizer_parameter_get(o, 1, &pname, &p));
  assert_string_equal(pname, "b");
  assert_ptr_equal(p, params[1]);
  expect_error(tsr_optimizer_parameter_get(o, 2, &pname, &p), TSR_INVALID_ARGUMENT, "index 2");
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

// --- checkpoints --------------------------------------------------------------------

// Two steps, a checkpoint, a fresh model and optimizer loaded from it, and
// one more step on each: the parameters agree bit for bit.
static void checkpoint_continues(const opt_config *c) {
  char path[] = "/tmp/tsr_optim_more_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  tsr_module *m[2];
  tsr_optimizer *o[2];
  for (int k = 0; k < 2; ++k) {
    m[k] = tsr_nn_linear(g_device, 3, 2, 1);
    TS_ASSERT_TENSOR(m[k]);
    o[k] = c->adagrad ? tsr_optim_adagrad_for_module(m[k], &c->adagrad_options)
                      : tsr_optim_rmsprop_for_module(m[k], &c->rmsprop);
    TS_ASSERT_TENSOR(o[k]);
  }
  int32_t count = tsr_module_parameter_count(m[0]);
  ts_rng rng = {99};
  double g[3][6];
  for (int t = 0; t < 3; ++t) ts_rng_fill(&rng, TSR_FLOAT32, -1, 1, g[t], 6);
  for (int t = 0; t < 2; ++t) {
    for (int32_t i = 0; i < count; ++i) {
      const char *name;
      tsr_tensor *p;
      TS_ASSERT_OK(tsr_module_parameter_get(m[0], i, &name, &p));
      grad_set(p, g[t]);
    }
    TS_ASSERT_OK(tsr_optimizer_step(o[0]));
  }
  TS_ASSERT_OK(tsr_checkpoint_save(path, m[0], o[0], 0, NULL, NULL));
  TS_ASSERT_OK(tsr_checkpoint_load(path, m[1], o[1], NULL));
  assert_int_equal(tsr_optimizer_state_count(o[1]), tsr_optimizer_state_count(o[0]));
  assert_int_equal(tsr_optimizer_step_count(o[1]), 2);
  for (int k = 0; k < 2; ++k) {
    for (int32_t i = 0; i < count; ++i) {
      const char *name;
      tsr_tensor *p;
      TS_ASSERT_OK(tsr_module_parameter_get(m[k], i, &name, &p));
      grad_set(p, g[2]);
    }
    TS_ASSERT_OK(tsr_optimizer_step(o[k]));
  }
  for (int32_t i = 0; i < count; ++i) {
    const char *name;
    tsr_tensor *p[2];
    TS_ASSERT_OK(tsr_module_parameter_get(m[0], i, &name, &p[0]));
    TS_ASSERT_OK(tsr_module_parameter_get(m[1], i, &name, &p[1]));
    float a[6], b[6];
    size_t bytes = (size_t)tsr_tensor_numel(p[0]) * sizeof(float);
    TS_ASSERT_OK(tsr_tensor_to_host(p[0], a, bytes));
    TS_ASSERT_OK(tsr_tensor_to_host(p[1], b, bytes));
    if (memcmp(a, b, bytes) != 0)
      fail_msg("%s: %s differs after the restored step", c->label, name);
  }
  for (int k = 0; k < 2; ++k) {
    tsr_optimizer_destroy(o[k]);
    tsr_module_destroy(m[k]);
  }
  unlink(path);
}

static void test_rmsprop_and_adagrad_state_continue_through_a_checkpoint(void **state) {
  (void)state;
  const opt_config r = rmsprop_config("rmsprop", 0.01, 0.01, 0.9, 1);
  const opt_config a = adagrad_config("adagrad", 0.1, 0.01, 0.01, 0.1);
  checkpoint_continues(&r);
  checkpoint_continues(&a);
}

// --- clipping -----------------------------------------------------------------------

static void clip_case(tsr_dtype_t dtype, double max_norm, double norm_type) {
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(dtype, 11, p0, grads);
  tsr_tensor *params[NPARAM + 1];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(dtype, j, p0 + kStart[j]);
  for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[0] + kStart[j]);
  // A third parameter without a gradient is skipped.
  params[NPARAM] = leaf(dtype, 1, p0);
  // torch.nn.utils.clip_grad_norm_ in float64.
  double total = 0;
  for (int i = 0; i < NELEM; ++i) {
    double a = fabs(grads[0][i]);
    total = isinf(norm_type) ? fmax(total, a) : total + pow(a, norm_type);
  }
  if (!isinf(norm_type))
    total = pow(total, 1 / norm_type);
  double coef = max_norm / (total + 1e-6);
  double want[NELEM];
  for (int i = 0; i < NELEM; ++i) want[i] = grads[0][i] * (coef < 1 ? coef : 1);
  double got_total = -1;
  TS_ASSERT_OK(tsr_clip_grad_norm(NPARAM + 1, params, max_norm, norm_type, &got_total));
  char what[96];
  snprintf(what, sizeof(what), "clip_grad_norm max %g type %g", max_norm, norm_type);
  ts_expect_values(what, TSR_FLOAT64, &got_total, &total, NULL, 1, tol_rel(dtype), tol_abs(dtype));
  double got[NELEM];
  grads_read(params, got);
  ts_expect_values(what, dtype, got, want, NULL, NELEM, tol_rel(dtype), tol_abs(dtype));
  assert_null(tsr_tensor_grad(params[NPARAM]));
  for (int j = 0; j <= NPARAM; ++j) tsr_tensor_release(params[j]);
}

static void test_clip_grad_norm_scales_only_above_max_norm(void **state) {
  (void)state;
  for (size_t d = 0; d < 2; ++d) {
    clip_case(kDtypes[d], 0.5, 2.0);       // clipped
    clip_case(kDtypes[d], 100.0, 2.0);     // unchanged
    clip_case(kDtypes[d], 0.25, INFINITY); // clipped by the largest element
    clip_case(kDtypes[d], 1.5, 1.0);       // the 1-norm, clipped
  }
  // No gradient at all: the norm is 0.
  double p0[6] = {0};
  tsr_tensor *p = leaf(TSR_FLOAT32, 0, p0);
  double total = -1;
  TS_ASSERT_OK(tsr_clip_grad_norm(1, &p, 1.0, 2.0, &total));
  assert_true(total == 0);
  // A NaN norm makes every gradient NaN, as in PyTorch.
  grad_set(p, (const double[]){1, NAN, 0, 0, 0, 0});
  TS_ASSERT_OK(tsr_clip_grad_norm(1, &p, 1.0, 2.0, &total));
  assert_true(isnan(total));
  tsr_tensor *g = tsr_tensor_grad(p);
  double got[6];
  assert_int_equal(ts_read(g, got, 6), 6);
  for (int i = 0; i < 6; ++i) assert_true(isnan(got[i]));
  tsr_tensor_release(g);
  tsr_tensor_release(p);
}

static void test_clip_grad_value_clamps_every_gradient(void **state) {
  (void)state;
  for (size_t d = 0; d < 2; ++d) {
    tsr_dtype_t dtype = kDtypes[d];
    double p0[NELEM], grads[NSTEPS][NELEM];
    data_make(dtype, 5, p0, grads);
    tsr_tensor *params[NPARAM];
    for (int j = 0; j < NPARAM; ++j) params[j] = leaf(dtype, j, p0 + kStart[j]);
    for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[0] + kStart[j]);
    tsr_rmsprop_options options;
    tsr_rmsprop_options_init(&options);
    tsr_optimizer *o = tsr_optim_rmsprop(NPARAM, params, NULL, &options);
    TS_ASSERT_TENSOR(o);
    TS_ASSERT_OK(tsr_optimizer_clip_grad_value(o, 0.3));
    double want[NELEM], got[NELEM];
    for (int i = 0; i < NELEM; ++i) want[i] = fmin(fmax(grads[0][i], -0.3), 0.3);
    grads_read(params, got);
    ts_expect_values("clip_grad_value", dtype, got, want, NULL, NELEM, 0, 0);
    // The optimizer form of clip_grad_norm agrees with the array form.
    double total = 0, total2 = 0;
    TS_ASSERT_OK(tsr_optimizer_clip_grad_norm(o, 1e9, 2.0, &total));
    TS_ASSERT_OK(tsr_clip_grad_norm(NPARAM, params, 1e9, 2.0, &total2));
    assert_true(total == total2 && total > 0);
    tsr_optimizer_destroy(o);
    for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
  }
}


// --- parameter groups ---------------------------------------------------------------

static void test_groups_step_with_their_own_lr_and_weight_decay(void **state) {
  (void)state;
  for (size_t d = 0; d < 2; ++d) {
    tsr_dtype_t dtype = kDtypes[d];
    double p0[NELEM], grads[NSTEPS][NELEM];
    data_make(dtype, 21, p0, grads);
    tsr_tensor *params[NPARAM];
    for (int j = 0; j < NPARAM; ++j) params[j] = leaf(dtype, j, p0 + kStart[j]);
    // Group 0: params[0] with RMSprop's options; group 1: params[1].
    opt_config c0 = rmsprop_config("group 0", 0.02, 0.0, 0.9, 1);
    opt_config c1 = c0;
    c1.rmsprop.lr = 0.005;
    c1.rmsprop.weight_decay = 0.3;
    tsr_optimizer *o = tsr_optim_rmsprop(1, &params[0], NULL, &c0.rmsprop);
    TS_ASSERT_TENSOR(o);
    int32_t group = -1;
    TS_ASSERT_OK(tsr_optimizer_group_add(o, 1, &params[1], NULL, 0.005, 0.3, &group));
    assert_int_equal(group, 1);
    assert_int_equal(tsr_optimizer_group_count(o), 2);
    assert_true(tsr_optimizer_group_lr(o, 1) == 0.005 && tsr_optimizer_lr(o) == 0.02);
    ref_state s;
    memset(&s, 0, sizeof(s));
    memcpy(s.p, p0, sizeof(p0));
    for (int t = 0; t < NSTEPS; ++t) {
      for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[t] + kStart[j]);
      TS_ASSERT_OK(tsr_optimizer_step(o));
      rmsprop_ref(&c0.rmsprop, c0.rmsprop.lr, &s, grads[t], kStart[0], kStart[1]);
      rmsprop_ref(&c1.rmsprop, c1.rmsprop.lr, &s, grads[t], kStart[1], kStart[2]);
      double got[NELEM];
      read_all(params, got);
      ts_expect_values("rmsprop groups", dtype, got, s.p, NULL, NELEM, tol_rel(dtype),
                       tol_abs(dtype));
    }
    // The second group's state is named after its index in the optimizer.
    const char *name;
    tsr_tensor *t;
    TS_ASSERT_OK(tsr_optimizer_state_get(o, 3, &name, &t));
    assert_string_equal(name, "1.square_avg");
    // lr_set sets every group; group_lr_set one.
    TS_ASSERT_OK(tsr_optimizer_lr_set(o, 0.5));
    assert_true(tsr_optimizer_group_lr(o, 1) == 0.5);
    TS_ASSERT_OK(tsr_optimizer_group_lr_set(o, 1, 0.25));
    assert_true(tsr_optimizer_group_lr(o, 1) == 0.25 && tsr_optimizer_lr(o) == 0.5);
    // Bad groups.
    expect_error(tsr_optimizer_group_add(o, 1, &params[1], NULL, 0.1, 0, NULL),
                 TSR_INVALID_ARGUMENT, "already parameter");
    tsr_tensor *extra = leaf(dtype, 1, p0);
    const char *taken[] = {"0"};
    expect_error(tsr_optimizer_group_add(o, 1, &extra, taken, 0.1, 0, NULL), TSR_INVALID_ARGUMENT,
                 "is taken");
    expect_error(tsr_optimizer_group_add(o, 1, &extra, NULL, -1, 0, NULL), TSR_INVALID_ARGUMENT,
                 "lr is -1");
    expect_error(tsr_optimizer_group_add(o, 1, &extra, NULL, 0.1, NAN, NULL),
                 TSR_INVALID_ARGUMENT, "weight_decay");
    expect_error(tsr_optimizer_group_add(o, 0, &extra, NULL, 0.1, 0, NULL), TSR_INVALID_ARGUMENT,
                 "count");
    expect_error(tsr_optimizer_group_add(NULL, 1, &extra, NULL, 0.1, 0, NULL),
                 TSR_INVALID_ARGUMENT, "optimizer is NULL");
    expect_error(tsr_optimizer_group_lr_set(o, 2, 0.1), TSR_INVALID_ARGUMENT, "group is 2");
    assert_true(isnan(tsr_optimizer_group_lr(o, -1)));
    assert_int_equal(tsr_optimizer_group_count(o), 2);
    tsr_tensor_release(extra);
    tsr_optimizer_destroy(o);
    for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
  }
}

// SGD with per-group weight decay over a fused op: p -= lr * (g + wd * p).
static void test_groups_apply_to_fused_sgd(void **state) {
  (void)state;
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT64, 8, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT64, j, p0 + kStart[j]);
  tsr_optimizer *o = tsr_optim_sgd(1, &params[0], NULL, NULL);
  TS_ASSERT_TENSOR(o);
  TS_ASSERT_OK(tsr_optimizer_group_add(o, 1, &params[1], NULL, 0.5, 0.2, NULL));
  double want[NELEM];
  memcpy(want, p0, sizeof(p0));
  for (int t = 0; t < NSTEPS; ++t) {
    for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[t] + kStart[j]);
    TS_ASSERT_OK(tsr_optimizer_step(o));
    for (int i = 0; i < NELEM; ++i) {
      int g1 = i >= kStart[1];
      want[i] -= (g1 ? 0.5 : 0.01) * (grads[t][i] + (g1 ? 0.2 : 0.0) * want[i]);
    }
  }
  double got[NELEM];
  read_all(params, got);
  ts_expect_values("sgd groups", TSR_FLOAT64, got, want, NULL, NELEM, 1e-12, 1e-12);
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

// --- schedules ----------------------------------------------------------------------

static tsr_optimizer *two_group_sgd(tsr_tensor **params, double lr0, double lr1) {
  double p0[NELEM] = {0};
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  tsr_sgd_options options;
  tsr_sgd_options_init(&options);
  options.lr = lr0;
  tsr_optimizer *o = tsr_optim_sgd(1, &params[0], NULL, &options);
  TS_ASSERT_TENSOR(o);
  TS_ASSERT_OK(tsr_optimizer_group_add(o, 1, &params[1], NULL, lr1, 0, NULL));
  return o;
}

static void expect_lr(const char *what, tsr_optimizer *o, int32_t group, int64_t epoch,
                      double want) {
  double got = tsr_optimizer_group_lr(o, group);
  if (!(fabs(got - want) <= 1e-15 * fabs(want) + 1e-300))
    fail_msg("%s: group %d lr at epoch %lld is %.17g, want %.17g", what, group, (long long)epoch,
             got, want);
}

// OneCycleLR.get_lr with anneal_strategy "cos", written from PyTorch.
static double one_cycle_ref(double max_lr, int64_t total, double pct, double div, double fdiv,
                            int64_t step) {
  double initial = max_lr / div, min_lr = initial / fdiv;
  double end0 = pct * (double)total - 1, end1 = (double)total - 1;
  double start_lr, end_lr, pct_now;
  if ((double)step <= end0) {
    start_lr = initial, end_lr = max_lr, pct_now = (double)step / end0;
  } else {
    start_lr = max_lr, end_lr = min_lr, pct_now = ((double)step - end0) / (end1 - end0);
  }
  return end_lr + (start_lr - end_lr) / 2.0 * (cos(M_PI * pct_now) + 1.0);
}

static void test_schedules_follow_pytorch_closed_forms(void **state) {
  (void)state;
  tsr_tensor *params[NPARAM];
  // ExponentialLR scales each group from its own base.
  tsr_optimizer *o = two_group_sgd(params, 0.1, 0.03);
  tsr_lr_schedule *s = tsr_lr_exponential(o, 0.9);
  TS_ASSERT_TENSOR(s);
  for (int64_t e = 1; e <= 6; ++e) {
    TS_ASSERT_OK(tsr_lr_schedule_step(s));
    expect_lr("exponential", o, 0, e, 0.1 * pow(0.9, (double)e));
    expect_lr("exponential", o, 1, e, 0.03 * pow(0.9, (double)e));
  }
  // One schedule at a time.
  expect_null(tsr_lr_cosine(o, 5, 0), TSR_INVALID_ARGUMENT, "already has a exponential");
  tsr_lr_schedule_destroy(s);
  // LinearLR as a warm-up: the first lr is set at creation.
  TS_ASSERT_OK(tsr_optimizer_lr_set(o, 0.2));
  s = tsr_lr_linear(o, 0.25, 1.0, 4);
  TS_ASSERT_TENSOR(s);
  for (int64_t e = 0; e <= 7; ++e) {
    if (e > 0)
      TS_ASSERT_OK(tsr_lr_schedule_step(s));
    double f = 0.25 + 0.75 * (double)(e < 4 ? e : 4) / 4.0;
    expect_lr("linear", o, 0, e, 0.2 * f);
    expect_lr("linear", o, 1, e, 0.2 * f);
  }
  tsr_lr_schedule_destroy(s);
  // OneCycleLR with PyTorch's defaults, then with others.
  s = tsr_lr_one_cycle(o, 0.5, 20, NULL);
  TS_ASSERT_TENSOR(s);
  expect_lr("one-cycle", o, 0, 0, 0.5 / 25);
  for (int64_t e = 1; e <= 20; ++e) {
    TS_ASSERT_OK(tsr_lr_schedule_step(s));
    expect_lr("one-cycle", o, 0, e, one_cycle_ref(0.5, 20, 0.3, 25, 1e4, e));
    expect_lr("one-cycle", o, 1, e, one_cycle_ref(0.5, 20, 0.3, 25, 1e4, e));
  }
  TS_ASSERT_OK(tsr_lr_schedule_epoch_set(s, 5));
  expect_lr("one-cycle peak", o, 0, 5, 0.5);
  TS_ASSERT_OK(tsr_lr_schedule_epoch_set(s, 19));
  expect_lr("one-cycle end", o, 0, 19, 0.5 / 25 / 1e4);
  TS_ASSERT_OK(tsr_lr_schedule_epoch_set(s, 20));
  expect_error(tsr_lr_schedule_step(s), TSR_INVALID_ARGUMENT, "total_steps");
  expect_error(tsr_lr_schedule_step_metric(s, 1.0), TSR_INVALID_ARGUMENT, "no metric");
  tsr_lr_schedule_destroy(s);
  tsr_one_cycle_options oc;
  tsr_one_cycle_options_init(&oc);
  assert_true(oc.pct_start == 0.3 && oc.div_factor == 25 && oc.final_div_factor == 1e4);
  oc.pct_start = 0.5;
  oc.div_factor = 10;
  oc.final_div_factor = 100;
  s = tsr_lr_one_cycle(o, 1.0, 10, &oc);
  TS_ASSERT_TENSOR(s);
  for (int64_t e = 1; e <= 10; ++e) {
    TS_ASSERT_OK(tsr_lr_schedule_step(s));
    expect_lr("one-cycle options", o, 1, e, one_cycle_ref(1.0, 10, 0.5, 10, 100, e));
  }
  tsr_lr_schedule_destroy(s);
  // Bad arguments.
  expect_null(tsr_lr_exponential(o, -1), TSR_INVALID_ARGUMENT, "gamma");
  expect_null(tsr_lr_exponential(NULL, 0.5), TSR_INVALID_ARGUMENT, "optimizer is NULL");
  expect_null(tsr_lr_linear(o, 0, 1, 4), TSR_INVALID_ARGUMENT, "start_factor");
  expect_null(tsr_lr_linear(o, 0.5, 1.5, 4), TSR_INVALID_ARGUMENT, "end_factor");
  expect_null(tsr_lr_linear(o, 0.5, 1, 0), TSR_INVALID_ARGUMENT, "total_iters");
  expect_null(tsr_lr_one_cycle(o, 1, 1, NULL), TSR_INVALID_ARGUMENT, "total_steps");
  expect_null(tsr_lr_one_cycle(o, NAN, 10, NULL), TSR_INVALID_ARGUMENT, "max_lr");
  oc.pct_start = 0.05;  // pct_start * total_steps <= 1: a phase of no length
  expect_null(tsr_lr_one_cycle(o, 1, 10, &oc), TSR_INVALID_ARGUMENT, "pct_start");
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

// ReduceLROnPlateau.step, written from PyTorch, over one lr.
typedef struct plateau_ref {
  double lr, best;
  int64_t bad, cooldown_counter;
} plateau_ref;

static void plateau_ref_step(const tsr_plateau_options *o, plateau_ref *r, double metric) {
  int better;
  if (o->mode == 0) {
    better = o->threshold_mode == 0 ? metric < r->best * (1 - o->threshold)
                                    : metric < r->best - o->threshold;
  } else {
    better = o->threshold_mode == 0 ? metric > r->best * (1 + o->threshold)
                                    : metric > r->best + o->threshold;
  }
  if (better) {
    r->best = metric;
    r->bad = 0;
  } else {
    r->bad++;
  }
  if (r->cooldown_counter > 0) {
    r->cooldown_counter--;
    r->bad = 0;
  }
  if (r->bad > o->patience) {
    double n = fmax(r->lr * o->factor, o->min_lr);
    if (r->lr - n > o->eps)
      r->lr = n;
    r->cooldown_counter = o->cooldown;
    r->bad = 0;
  }
}

static void test_plateau_reduces_the_lr_after_patience(void **state) {
  (void)state;
  tsr_plateau_options d;
  tsr_plateau_options_init(&d);
  assert_true(d.mode == 0 && d.threshold_mode == 0 && d.factor == 0.1 && d.patience == 10 &&
              d.threshold == 1e-4 && d.cooldown == 0 && d.min_lr == 0 && d.eps == 1e-8);
  const double metrics[] = {1.0, 0.9, 0.95, 0.9, 0.91, 0.92, 0.5, 0.6, 0.7, 0.8,
                            0.9, 0.49999, 0.3, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4};
  const int n = (int)(sizeof(metrics) / sizeof(metrics[0]));
  tsr_plateau_options cases[4];
  for (int c = 0; c < 4; ++c) {
    tsr_plateau_options_init(&cases[c]);
    cases[c].patience = 2;
    cases[c].factor = 0.5;
  }
  cases[1].cooldown = 2;
  cases[1].min_lr = 0.004;
  cases[2].mode = 1;  // max
  cases[3].threshold_mode = 1;
  cases[3].threshold = 0.05;
  for (int c = 0; c < 4; ++c) {
    tsr_tensor *params[NPARAM];
    tsr_optimizer *o = two_group_sgd(params, 0.1, 0.1);
    tsr_lr_schedule *s = tsr_lr_plateau(o, &cases[c]);
    TS_ASSERT_TENSOR(s);
    plateau_ref r = {0.1, cases[c].mode ? -INFINITY : INFINITY, 0, 0};
    for (int e = 0; e < n; ++e) {
      TS_ASSERT_OK(tsr_lr_schedule_step_metric(s, metrics[e]));
      plateau_ref_step(&cases[c], &r, metrics[e]);
      char what[48];
      snprintf(what, sizeof(what), "plateau case %d", c);
      expect_lr(what, o, 0, e + 1, r.lr);
      expect_lr(what, o, 1, e + 1, r.lr);
    }
    assert_int_equal(tsr_lr_schedule_epoch(s), n);
    if (c == 0)
      assert_true(r.lr < 0.1);  // the sequence does reduce it
    expect_error(tsr_lr_schedule_step(s), TSR_INVALID_ARGUMENT, "step_metric");
    expect_error(tsr_lr_schedule_step_metric(s, NAN), TSR_INVALID_ARGUMENT, "NaN");
    tsr_lr_schedule_destroy(s);
    tsr_optimizer_destroy(o);
    for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
  }
  tsr_tensor *params[NPARAM];
  tsr_optimizer *o = two_group_sgd(params, 0.1, 0.1);
  tsr_plateau_options bad;
  tsr_plateau_options_init(&bad);
  bad.factor = 1.0;
  expect_null(tsr_lr_plateau(o, &bad), TSR_INVALID_ARGUMENT, "factor");
  tsr_plateau_options_init(&bad);
  bad.patience = -1;
  expect_null(tsr_lr_plateau(o, &bad), TSR_INVALID_ARGUMENT, "patience");
  tsr_plateau_options_init(&bad);
  bad.mode = 2;
  expect_null(tsr_lr_plateau(o, &bad), TSR_INVALID_ARGUMENT, "mode");
  tsr_plateau_options_init(&bad);
  bad.struct_size = 0;
  expect_null(tsr_lr_plateau(o, &bad), TSR_INVALID_ARGUMENT, "struct_size");
  expect_error(tsr_lr_schedule_step_metric(NULL, 1), TSR_INVALID_ARGUMENT, "schedule is NULL");
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

// A module's weight in group 0 and its bias in group 1 (lr 0.1 and 0.03).
static tsr_optimizer *linear_two_groups(tsr_module *m) {
  const char *names[2];
  tsr_tensor *ps[2];
  for (int32_t i = 0; i < 2; ++i) TS_ASSERT_OK(tsr_module_parameter_get(m, i, &names[i], &ps[i]));
  tsr_sgd_options options;
  tsr_sgd_options_init(&options);
  options.lr = 0.1;
  tsr_optimizer *o = tsr_optim_sgd(1, &ps[0], &names[0], &options);
  TS_ASSERT_TENSOR(o);
  TS_ASSERT_OK(tsr_optimizer_group_add(o, 1, &ps[1], &names[1], 0.03, 0, NULL));
  return o;
}

static void test_schedule_state_survives_a_checkpoint_in_either_order(void **state) {
  (void)state;
  char path[] = "/tmp/tsr_optim_sched_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  for (int plateau = 0; plateau < 2; ++plateau) {
    tsr_module *m = tsr_nn_linear(g_device, 3, 2, 1);
    TS_ASSERT_TENSOR(m);
    tsr_optimizer *o = linear_two_groups(m);
    tsr_plateau_options po;
    tsr_plateau_options_init(&po);
    po.patience = 1;
    po.cooldown = 3;
    tsr_lr_schedule *s = plateau ? tsr_lr_plateau(o, &po) : tsr_lr_cosine(o, 10, 0.001);
    TS_ASSERT_TENSOR(s);
    const double metrics[] = {1.0, 0.8, 0.9, 0.9, 0.7};
    for (int e = 0; e < 5; ++e) {
      TS_ASSERT_OK(plateau ? tsr_lr_schedule_step_metric(s, metrics[e])
                           : tsr_lr_schedule_step(s));
    }
    TS_ASSERT_OK(tsr_checkpoint_save(path, m, o, 0, NULL, NULL));
    // The original continues for two more epochs.
    double want[2][2];
    for (int e = 0; e < 2; ++e) {
      TS_ASSERT_OK(plateau ? tsr_lr_schedule_step_metric(s, 0.9) : tsr_lr_schedule_step(s));
      for (int32_t g = 0; g < 2; ++g) want[e][g] = tsr_optimizer_group_lr(o, g);
    }
    for (int order = 0; order < 2; ++order) {
      tsr_module *m2 = tsr_nn_linear(g_device, 3, 2, 1);
      TS_ASSERT_TENSOR(m2);
      tsr_optimizer *o2 = linear_two_groups(m2);
      tsr_lr_schedule *s2 = NULL;
      if (order == 0)  // schedule first, then the checkpoint
        s2 = plateau ? tsr_lr_plateau(o2, &po) : tsr_lr_cosine(o2, 10, 0.001);
      TS_ASSERT_OK(tsr_checkpoint_load(path, m2, o2, NULL));
      if (order == 1)  // the checkpoint first
        s2 = plateau ? tsr_lr_plateau(o2, &po) : tsr_lr_cosine(o2, 10, 0.001);
      TS_ASSERT_TENSOR(s2);
      assert_int_equal(tsr_lr_schedule_epoch(s2), 5);
      for (int e = 0; e < 2; ++e) {
        TS_ASSERT_OK(plateau ? tsr_lr_schedule_step_metric(s2, 0.9) : tsr_lr_schedule_step(s2));
        for (int32_t g = 0; g < 2; ++g) {
          if (tsr_optimizer_group_lr(o2, g) != want[e][g]) {
            fail_msg("%s, order %d: group %d lr %.17g after resuming, want %.17g",
                     plateau ? "plateau" : "cosine", order, g, tsr_optimizer_group_lr(o2, g),
                     want[e][g]);
          }
        }
      }
      tsr_lr_schedule_destroy(s2);
      // A checkpoint of one kind of schedule is refused by another.
      if (order == 1 && !plateau) {
        TS_ASSERT_OK(tsr_checkpoint_load(path, m2, o2, NULL));
        expect_null(tsr_lr_exponential(o2, 0.5), TSR_INVALID_ARGUMENT, "cosine schedule");
      }
      tsr_optimizer_destroy(o2);
      tsr_module_destroy(m2);
    }
    // Reserved metadata keys.
    const char *key[] = {"optim.schedule"}, *value[] = {"1"};
    expect_error(tsr_checkpoint_save(path, m, o, 1, key, value), TSR_INVALID_ARGUMENT,
                 "reserved");
    tsr_lr_schedule_destroy(s);
    tsr_optimizer_destroy(o);
    tsr_module_destroy(m);
  }
  unlink(path);
}

// OneCycleLR's momentum with cycle_momentum, written from PyTorch in float64:
// max -> base over the first phase, base -> max over the second.
static double one_cycle_momentum_ref(double base, double max, int64_t total, double pct,
                                     int64_t step) {
  double end0 = pct * (double)total - 1, end1 = (double)total - 1;
  double start, end, pct_now;
  if ((double)step <= end0) {
    start = max, end = base, pct_now = (double)step / end0;
  } else {
    start = base, end = max, pct_now = ((double)step - end0) / (end1 - end0);
  }
  return end + (start - end) / 2.0 * (cos(M_PI * pct_now) + 1.0);
}

static void expect_momentum(const char *what, const tsr_optimizer *o, int64_t step, double want) {
  double got = tsr_optimizer_momentum(o);
  if (!(fabs(got - want) <= 1e-15 * fabs(want)))
    fail_msg("%s: momentum at step %lld is %.17g, want %.17g", what, (long long)step, got, want);
}

static void test_one_cycle_cycles_momentum_and_beta1_inversely_to_the_lr(void **state) {
  (void)state;
  tsr_tensor *params[NPARAM];
  double p0[NELEM] = {0};
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  // SGD with momentum, PyTorch's defaults: 0.95 at step 0, 0.85 at the lr's peak.
  tsr_sgd_options so;
  tsr_sgd_options_init(&so);
  so.momentum = 0.9;
  tsr_optimizer *o = tsr_optim_sgd(NPARAM, params, NULL, &so);
  TS_ASSERT_TENSOR(o);
  tsr_one_cycle_options oc;
  tsr_one_cycle_options_init(&oc);
  assert_true(oc.cycle_momentum == 1 && oc.base_momentum == 0.85 && oc.max_momentum == 0.95);
  tsr_lr_schedule *s = tsr_lr_one_cycle(o, 0.5, 20, NULL);
  TS_ASSERT_TENSOR(s);
  expect_momentum("sgd one-cycle", o, 0, 0.95);
  for (int64_t e = 1; e <= 20; ++e) {
    TS_ASSERT_OK(tsr_lr_schedule_step(s));
    expect_momentum("sgd one-cycle", o, e, one_cycle_momentum_ref(0.85, 0.95, 20, 0.3, e));
  }
  TS_ASSERT_OK(tsr_lr_schedule_epoch_set(s, 5));
  expect_momentum("sgd one-cycle at the peak", o, 5, 0.85);
  tsr_lr_schedule_destroy(s);
  tsr_optimizer_destroy(o);
  // Adam's beta1, with other bounds and phases; cycle_momentum 0 leaves it alone.
  o = tsr_optim_adam(NPARAM, params, NULL, NULL);
  TS_ASSERT_TENSOR(o);
  oc.pct_start = 0.5;
  oc.base_momentum = 0.7;
  oc.max_momentum = 0.9;
  s = tsr_lr_one_cycle(o, 1.0, 10, &oc);
  TS_ASSERT_TENSOR(s);
  for (int64_t e = 0; e <= 10; ++e) {
    if (e > 0)
      TS_ASSERT_OK(tsr_lr_schedule_step(s));
    expect_momentum("adam one-cycle beta1", o, e, one_cycle_momentum_ref(0.7, 0.9, 10, 0.5, e));
  }
  tsr_lr_schedule_destroy(s);
  oc.cycle_momentum = 0;
  s = tsr_lr_one_cycle(o, 1.0, 10, &oc);
  TS_ASSERT_TENSOR(s);
  TS_ASSERT_OK(tsr_lr_schedule_step(s));
  // Where the last schedule left it (step 10 = total_steps extrapolates, as PyTorch's does).
  expect_momentum("adam one-cycle without cycle_momentum", o, 1,
                  one_cycle_momentum_ref(0.7, 0.9, 10, 0.5, 10));
  tsr_lr_schedule_destroy(s);
  // Bounds outside [0, 1) are refused when cycling.
  oc.cycle_momentum = 1;
  oc.max_momentum = 1.0;
  expect_null(tsr_lr_one_cycle(o, 1.0, 10, &oc), TSR_INVALID_ARGUMENT, "max_momentum");
  oc.max_momentum = 0.9;
  oc.base_momentum = -0.1;
  expect_null(tsr_lr_one_cycle(o, 1.0, 10, &oc), TSR_INVALID_ARGUMENT, "base_momentum");
  tsr_optimizer_destroy(o);
  // Adagrad has no momentum: the lr still cycles.
  o = tsr_optim_adagrad(NPARAM, params, NULL, NULL);
  TS_ASSERT_TENSOR(o);
  s = tsr_lr_one_cycle(o, 0.5, 20, NULL);
  TS_ASSERT_TENSOR(s);
  TS_ASSERT_OK(tsr_lr_schedule_step(s));
  assert_true(isnan(tsr_optimizer_momentum(o)));
  expect_error(tsr_last_status(), TSR_INVALID_ARGUMENT, "no momentum");
  tsr_lr_schedule_destroy(s);
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

static void test_one_cycle_momentum_survives_a_checkpoint_in_either_order(void **state) {
  (void)state;
  char path[] = "/tmp/tsr_optim_cycle_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  tsr_module *m = tsr_nn_linear(g_device, 3, 2, 1);
  TS_ASSERT_TENSOR(m);
  tsr_optimizer *o = tsr_optim_adam_for_module(m, NULL);
  TS_ASSERT_TENSOR(o);
  tsr_lr_schedule *s = tsr_lr_one_cycle(o, 0.1, 12, NULL);
  TS_ASSERT_TENSOR(s);
  for (int e = 0; e < 5; ++e) TS_ASSERT_OK(tsr_lr_schedule_step(s));
  TS_ASSERT_OK(tsr_checkpoint_save(path, m, o, 0, NULL, NULL));
  for (int order = 0; order < 2; ++order) {
    tsr_module *m2 = tsr_nn_linear(g_device, 3, 2, 1);
    TS_ASSERT_TENSOR(m2);
    tsr_optimizer *o2 = tsr_optim_adam_for_module(m2, NULL);
    TS_ASSERT_TENSOR(o2);
    tsr_lr_schedule *s2 = NULL;
    if (order == 0)  // schedule first, then the checkpoint
      s2 = tsr_lr_one_cycle(o2, 0.1, 12, NULL);
    TS_ASSERT_OK(tsr_checkpoint_load(path, m2, o2, NULL));
    if (order == 1)  // the checkpoint first
      s2 = tsr_lr_one_cycle(o2, 0.1, 12, NULL);
    TS_ASSERT_TENSOR(s2);
    expect_momentum(order ? "checkpoint, then schedule" : "schedule, then checkpoint", o2, 5,
                    one_cycle_momentum_ref(0.85, 0.95, 12, 0.3, 5));
    TS_ASSERT_OK(tsr_lr_schedule_step(s2));
    expect_momentum("resumed", o2, 6, one_cycle_momentum_ref(0.85, 0.95, 12, 0.3, 6));
    tsr_lr_schedule_destroy(s2);
    tsr_optimizer_destroy(o2);
    tsr_module_destroy(m2);
  }
  tsr_lr_schedule_destroy(s);
  tsr_optimizer_destroy(o);
  tsr_module_destroy(m);
  unlink(path);
}

// --- bad input ----------------------------------------------------------------------

static void test_bad_options_and_arguments_are_refused(void **state) {
  (void)state;
  double p0[NELEM] = {0};
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  tsr_rmsprop_options r;
  tsr_rmsprop_options_init(&r);
  r.alpha = 1.5;
  expect_null(tsr_optim_rmsprop(NPARAM, params, NULL, &r), TSR_INVALID_ARGUMENT, "alpha");
  tsr_rmsprop_options_init(&r);
  r.eps = NAN;
  expect_null(tsr_optim_rmsprop(NPARAM, params, NULL, &r), TSR_INVALID_ARGUMENT, "eps");
  tsr_rmsprop_options_init(&r);
  r.momentum = -1;
  expect_null(tsr_optim_rmsprop(NPARAM, params, NULL, &r), TSR_INVALID_ARGUMENT, "momentum");
  tsr_rmsprop_options_init(&r);
  r.centered = 2;
  expect_null(tsr_optim_rmsprop(NPARAM, params, NULL, &r), TSR_INVALID_ARGUMENT, "centered");
  tsr_rmsprop_options_init(&r);
  r.struct_size = 0;
  expect_null(tsr_optim_rmsprop(NPARAM, params, NULL, &r), TSR_INVALID_ARGUMENT, "struct_size");
  expect_null(tsr_optim_rmsprop(0, params, NULL, NULL), TSR_INVALID_ARGUMENT, "count");
  expect_null(tsr_optim_rmsprop_for_module(NULL, NULL), TSR_INVALID_ARGUMENT, "module");
  tsr_adagrad_options a;
  tsr_adagrad_options_init(&a);
  a.lr_decay = -0.1;
  expect_null(tsr_optim_adagrad(NPARAM, params, NULL, &a), TSR_INVALID_ARGUMENT, "lr_decay");
  tsr_adagrad_options_init(&a);
  a.initial_accumulator_value = -1;
  expect_null(tsr_optim_adagrad(NPARAM, params, NULL, &a), TSR_INVALID_ARGUMENT,
              "initial_accumulator_value");
  tsr_adagrad_options_init(&a);
  a.lr = INFINITY;
  expect_null(tsr_optim_adagrad(NPARAM, params, NULL, &a), TSR_INVALID_ARGUMENT, "lr");
  expect_null(tsr_optim_adagrad(NPARAM, NULL, NULL, NULL), TSR_INVALID_ARGUMENT, "params");

  // Clipping.
  double total = 0;
  expect_error(tsr_clip_grad_norm(NPARAM, params, -1, 2, &total), TSR_INVALID_ARGUMENT,
               "max_norm");
  expect_error(tsr_clip_grad_norm(NPARAM, params, NAN, 2, &total), TSR_INVALID_ARGUMENT,
               "max_norm");
  expect_error(tsr_clip_grad_norm(NPARAM, params, 1, 0, &total), TSR_INVALID_ARGUMENT,
               "norm_type");
  expect_error(tsr_clip_grad_norm(NPARAM, NULL, 1, 2, &total), TSR_INVALID_ARGUMENT, "params");
  expect_error(tsr_clip_grad_norm(-1, params, 1, 2, &total), TSR_INVALID_ARGUMENT, "count");
  tsr_tensor *with_null[2] = {params[0], NULL};
  expect_error(tsr_clip_grad_norm(2, with_null, 1, 2, &total), TSR_INVALID_ARGUMENT,
               "params[1]");
  expect_error(tsr_clip_grad_value(NPARAM, params, -0.5), TSR_INVALID_ARGUMENT, "clip_value");
  expect_error(tsr_optimizer_clip_grad_norm(NULL, 1, 2, &total), TSR_INVALID_ARGUMENT,
               "optimizer");
  expect_error(tsr_optimizer_clip_grad_value(NULL, 1), TSR_INVALID_ARGUMENT, "optimizer");

  // State names of another optimizer.
  tsr_optimizer *o = tsr_optim_adagrad(NPARAM, params, NULL, NULL);
  TS_ASSERT_TENSOR(o);
  expect_error(tsr_optimizer_state_set(o, "0.exp_avg", params[0]), TSR_NOT_FOUND, "Adagrad");
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init_sets_pytorch_defaults),
      cmocka_unit_test(test_rmsprop_trajectories_match_the_float64_rule),
      cmocka_unit_test(test_adagrad_trajectories_match_the_float64_rule),
      cmocka_unit_test(test_rmsprop_names_its_states_as_pytorch),
      cmocka_unit_test(test_rmsprop_and_adagrad_state_continue_through_a_checkpoint),
      cmocka_unit_test(test_clip_grad_norm_scales_only_above_max_norm),
      cmocka_unit_test(test_clip_grad_value_clamps_every_gradient),
      cmocka_unit_test(test_groups_step_with_their_own_lr_and_weight_decay),
      cmocka_unit_test(test_groups_apply_to_fused_sgd),
      cmocka_unit_test(test_schedules_follow_pytorch_closed_forms),
      cmocka_unit_test(test_plateau_reduces_the_lr_after_patience),
      cmocka_unit_test(test_schedule_state_survives_a_checkpoint_in_either_order),
      cmocka_unit_test(test_one_cycle_cycles_momentum_and_beta1_inversely_to_the_lr),
      cmocka_unit_test(test_one_cycle_momentum_survives_a_checkpoint_in_either_order),
      cmocka_unit_test(test_bad_options_and_arguments_are_refused),
  };
  return cmocka_run_group_tests_name(TSR_TEST_DEVICE, tests, group_setup, group_teardown);
}
