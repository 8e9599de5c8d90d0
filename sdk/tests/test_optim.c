// Optimizers and learning-rate schedules (tessera/optim.h).
//
// Trajectories of SGD (plain, weight decay, momentum with and without
// dampening, Nesterov), Adam and AdamW over three steps are compared with
// float64 loops written here from PyTorch's update rules, for float32 and
// float64 parameters; a few single steps are checked against values worked
// by hand. Checkpointing is checked bit for bit: state read after two steps
// and written into a fresh optimizer gives the same third step.
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

#include "tessera/tessera.h"
#include "test_support.h"
#include "device_fixture.h"



// --- helpers ----------------------------------------------------------------------

// Two parameters, [2, 3] and [4], seen by the float64 model as one array of
// 10 elements: parameter j owns elements [kStart[j], kStart[j + 1]).
#define NPARAM 2
#define NELEM 10
#define NSTEPS 3
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

static void read_values(const tsr_tensor *t, double *out, int64_t n) {
  assert_int_equal(ts_read(t, out, n), n);
}

// The raw bytes of |t| (for bitwise comparisons); the caller frees them.
static unsigned char *raw_bytes(const tsr_tensor *t, size_t *out_bytes) {
  size_t bytes = (size_t)tsr_tensor_numel(t) * tsr_dtype_size(tsr_tensor_dtype(t));
  unsigned char *buf = malloc(bytes ? bytes : 1);
  assert_non_null(buf);
  TS_ASSERT_OK(tsr_tensor_to_host(t, buf, bytes));
  *out_bytes = bytes;
  return buf;
}

static double tol_rtol(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 2e-5 : 1e-12;
}
static double tol_atol(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 2e-6 : 1e-12;
}

static void expect_error(tsr_status got, tsr_status want, const char *needle) {
  if (got != want) {
    fail_msg("status %s, expected %s (%s)", tsr_status_name(got), tsr_status_name(want),
             tsr_last_error());
  }
  if (strstr(tsr_last_error(), needle) == NULL) {
    fail_msg("error \"%s\" does not mention \"%s\"", tsr_last_error(), needle);
  }
}

static void expect_null(const void *got, tsr_status want, const char *needle) {
  if (got != NULL)
    fail_msg("expected NULL for \"%s\"", needle);
  expect_error(tsr_last_status(), want, needle);
}

// --- the float64 model --------------------------------------------------------------

typedef struct model_config {
  const char *label;
  int adam;  // 0: SGD
  tsr_sgd_options sgd;
  tsr_adam_options adam_options;
} model_config;

typedef struct model {
  double p[NELEM], buf[NELEM], m[NELEM], v[NELEM];
  int has_state[NPARAM];
  int64_t steps;
} model;

// One optimizer step of the model; |skip| bit j: parameter j has no gradient.
static void model_step(const model_config *c, model *s, const double *grad, unsigned skip) {
  ++s->steps;  // one counter for the optimizer, as tsr_optimizer_step documents
  for (int j = 0; j < NPARAM; ++j) {
    if (skip & (1u << j))
      continue;
    int first = !s->has_state[j];
    s->has_state[j] = 1;
    // The step of parameter j: the conformance oracle's SGD_UPDATE or
    // ADAM_UPDATE over its slice of the model's arrays.
    const int64_t n = kStart[j + 1] - kStart[j];
    const int start = kStart[j];
    tsr_oracle_tensor g = tsr_oracle_tensor_over(TSR_FLOAT64, 1, &n, (double *)grad + start);
    tsr_oracle_tensor state[3] = {tsr_oracle_tensor_over(TSR_FLOAT64, 1, &n, s->p + start),
                                  tsr_oracle_tensor_over(TSR_FLOAT64, 1, &n,
                                                         (c->adam ? s->m : s->buf) + start),
                                  tsr_oracle_tensor_over(TSR_FLOAT64, 1, &n, s->v + start)};
    if (!c->adam) {
      const tsr_sgd_options *o = &c->sgd;
      const tsr_sgd_attrs a = {sizeof(a),        o->lr,       o->momentum,     o->dampening,
                               o->weight_decay, o->nesterov, (uint32_t)first};
      assert_int_equal(tsr_oracle_compute_values(TSR_OP_SGD_UPDATE, &a, 1, &g, 2, state), TSR_OK);
    } else {
      const tsr_adam_options *o = &c->adam_options;
      const tsr_adam_attrs a = {sizeof(a),          o->lr,    o->beta1,
                                o->beta2,           o->eps,   o->weight_decay,
                                s->steps,           o->decoupled_weight_decay, 0};
      assert_int_equal(tsr_oracle_compute_values(TSR_OP_ADAM_UPDATE, &a, 1, &g, 3, state), TSR_OK);
    }
  }
}

static tsr_optimizer *optimizer_make(const model_config *c, tsr_tensor *const *params,
                                     const char *const *names) {
  tsr_optimizer *o = c->adam ? tsr_optim_adam(NPARAM, params, names, &c->adam_options)
                             : tsr_optim_sgd(NPARAM, params, names, &c->sgd);
  if (o == NULL)
    fail_msg("%s: optimizer creation failed: %s", c->label, tsr_last_error());
  return o;
}

static model_config sgd_config(const char *label, double lr, double momentum, double dampening,
                               double weight_decay, uint32_t nesterov) {
  model_config c;
  memset(&c, 0, sizeof(c));
  c.label = label;
  tsr_sgd_options_init(&c.sgd);
  c.sgd.lr = lr;
  c.sgd.momentum = momentum;
  c.sgd.dampening = dampening;
  c.sgd.weight_decay = weight_decay;
  c.sgd.nesterov = nesterov;
  return c;
}

static model_config adam_config(const char *label, int adamw, double lr, double weight_decay) {
  model_config c;
  memset(&c, 0, sizeof(c));
  c.label = label;
  c.adam = 1;
  if (adamw) {
    tsr_adamw_options_init(&c.adam_options);
  } else {
    tsr_adam_options_init(&c.adam_options);
  }
  c.adam_options.lr = lr;
  c.adam_options.weight_decay = weight_decay;
  return c;
}

// Initial values and per-step gradients, rounded to |dtype|.
static void data_make(tsr_dtype_t dtype, uint64_t seed, double *p0, double grads[NSTEPS][NELEM]) {
  ts_rng rng = {seed};
  ts_rng_fill(&rng, dtype, -1, 1, p0, NELEM);
  for (int t = 0; t < NSTEPS; ++t) ts_rng_fill(&rng, dtype, -1, 1, grads[t], NELEM);
}

// Runs |c| for NSTEPS steps on |dtype| parameters and compares parameters
// and state with the model after every step. skip[t] bit j: parameter j has
// no gradient at step t.
static void trajectory_check(const model_config *c, tsr_dtype_t dtype, const unsigned *skip) {
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(dtype, 42, p0, grads);
  model s;
  memset(&s, 0, sizeof(s));
  memcpy(s.p, p0, sizeof(p0));
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(dtype, j, p0 + kStart[j]);
  tsr_optimizer *o = optimizer_make(c, params, NULL);
  char what[160];
  for (int t = 0; t < NSTEPS; ++t) {
    unsigned sk = skip ? skip[t] : 0;
    tsr_optimizer_zero_grad(o);
    for (int j = 0; j < NPARAM; ++j) {
      if (!(sk & (1u << j)))
        grad_set(params[j], grads[t] + kStart[j]);
    }
    TS_ASSERT_OK(tsr_optimizer_step(o));
    model_step(c, &s, grads[t], sk);
    assert_int_equal(tsr_optimizer_step_count(o), t + 1);
    double got[NELEM];
    for (int j = 0; j < NPARAM; ++j)
      read_values(params[j], got + kStart[j], kStart[j + 1] - kStart[j]);
    snprintf(what, sizeof(what), "%s: parameters after step %d", c->label, t + 1);
    ts_expect_values(what, dtype, got, s.p, NULL, NELEM, tol_rtol(dtype), tol_atol(dtype));
    // State: one per kind for every parameter that has seen a gradient.
    int kinds = c->adam ? 2 : (c->sgd.momentum != 0 ? 1 : 0);
    int with_state = 0;
    for (int j = 0; j < NPARAM; ++j) with_state += s.has_state[j];
    assert_int_equal(tsr_optimizer_state_count(o), kinds * with_state);
    int index = 0;
    for (int j = 0; j < NPARAM; ++j) {
      if (!s.has_state[j])
        continue;
      for (int k = 0; k < kinds; ++k, ++index) {
        const char *name = NULL;
        tsr_tensor *state = NULL;
        TS_ASSERT_OK(tsr_optimizer_state_get(o, index, &name, &state));
        const char *kind = !c->adam ? "momentum_buffer" : k == 0 ? "exp_avg" : "exp_avg_sq";
        char want_name[64];
        snprintf(want_name, sizeof(want_name), "%d.%s", j, kind);
        assert_string_equal(name, want_name);
        const double *want = (!c->adam ? s.buf : k == 0 ? s.m : s.v) + kStart[j];
        int n = kStart[j + 1] - kStart[j];
        read_values(state, got, n);
        snprintf(what, sizeof(what), "%s: %s after step %d", c->label, name, t + 1);
        ts_expect_values(what, dtype, got, want, NULL, n, tol_rtol(dtype), tol_atol(dtype));
      }
    }
  }
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

static const tsr_dtype_t kDtypes[] = {TSR_FLOAT32, TSR_FLOAT64};

// Five Adam or AdamW steps on float32 parameters near 0 (so that rounding
// the parameter itself is far below the update), against the float64 rule:
// the error of every element's total update stays within 2e-6 of that
// update. With the coefficients formed in float64 and rounded once it is
// 7.4e-7 (Adam) and 2.4e-7 (AdamW) here; forming 1 - beta2 in float32
// (1.0f - 0.999f = 0.00099998713) made it 7.4e-6 and 6.8e-6.
static void adam_update_accuracy_check(int adamw) {
  enum { STEPS = 5 };
  model_config c = adam_config(adamw ? "AdamW float32, 5 steps" : "Adam float32, 5 steps", adamw,
                               1e-3, adamw ? 1e-2 : 1e-4);
  double p0[NELEM], grads[STEPS][NELEM];
  ts_rng rng = {7 + (uint64_t)adamw};
  ts_rng_fill(&rng, TSR_FLOAT32, -1e-3, 1e-3, p0, NELEM);
  for (int t = 0; t < STEPS; ++t) ts_rng_fill(&rng, TSR_FLOAT32, -1, 1, grads[t], NELEM);
  model s;
  memset(&s, 0, sizeof(s));
  memcpy(s.p, p0, sizeof(p0));
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  tsr_optimizer *o = optimizer_make(&c, params, NULL);
  for (int t = 0; t < STEPS; ++t) {
    tsr_optimizer_zero_grad(o);
    for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[t] + kStart[j]);
    TS_ASSERT_OK(tsr_optimizer_step(o));
    model_step(&c, &s, grads[t], 0);
  }
  double got[NELEM], worst = 0;
  for (int j = 0; j < NPARAM; ++j) read_values(params[j], got + kStart[j], kStart[j + 1] - kStart[j]);
  for (int i = 0; i < NELEM; ++i) {
    const double update = fabs(s.p[i] - p0[i]);
    const double err = fabs(got[i] - s.p[i]) / update;
    if (err > worst) worst = err;
  }
  print_message("  %s: worst error / update %.3g\n", c.label, worst);
  if (!(worst <= 2e-6)) fail_msg("%s: error %.3g of the update (at most 2e-6)", c.label, worst);
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

static void test_adam_float32_updates_are_within_2e_6_of_the_float64_rule(void **state) {
  (void)state;
  adam_update_accuracy_check(0);
  adam_update_accuracy_check(1);
}

// --- tests ----------------------------------------------------------------------------

static void test_options_init_sets_pytorch_defaults(void **state) {
  (void)state;
  tsr_sgd_options sgd;
  memset(&sgd, 0xff, sizeof(sgd));
  tsr_sgd_options_init(&sgd);
  assert_int_equal(sgd.struct_size, sizeof(sgd));
  assert_true(sgd.lr == 0.01 && sgd.momentum == 0 && sgd.dampening == 0 && sgd.weight_decay == 0 &&
              sgd.nesterov == 0 && sgd.reserved == 0);
  tsr_adam_options adam;
  memset(&adam, 0xff, sizeof(adam));
  tsr_adam_options_init(&adam);
  assert_int_equal(adam.struct_size, sizeof(adam));
  assert_true(adam.lr == 1e-3 && adam.beta1 == 0.9 && adam.beta2 == 0.999 && adam.eps == 1e-8 &&
              adam.weight_decay == 0 && adam.decoupled_weight_decay == 0 && adam.reserved == 0);
  tsr_adamw_options_init(&adam);
  assert_true(adam.lr == 1e-3 && adam.weight_decay == 0.01 && adam.decoupled_weight_decay == 1);
}

// The hand-worked cases: one float64 parameter of two elements.
static tsr_tensor *hand_param(double a, double b) {
  tsr_tensor *p = ts_tensor(g_device, TSR_FLOAT64, 1, (const int64_t[]){2}, (const double[]){a, b});
  TS_ASSERT_TENSOR(p);
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(p, 1));
  return p;
}

// Takes |steps| steps of |o| (which owns a reference to |p|; destroyed here)
// with p's gradient held at |g|, then checks p against |want|.
static void expect_after_steps(const char *what, tsr_optimizer *o, tsr_tensor *p, const double *g,
                               int steps, const double *want, double atol, double rtol) {
  TS_ASSERT_TENSOR(o);
  grad_set(p, g);
  for (int i = 0; i < steps; ++i) TS_ASSERT_OK(tsr_optimizer_step(o));
  double got[2];
  read_values(p, got, 2);
  ts_expect_values(what, TSR_FLOAT64, got, want, NULL, 2, atol, rtol);
  tsr_optimizer_destroy(o);
}

static void test_updates_match_values_worked_by_hand(void **state) {
  (void)state;
  // SGD, lr 0.1: p - 0.1 g.
  tsr_tensor *p = hand_param(1, -2);
  tsr_sgd_options sgd;
  tsr_sgd_options_init(&sgd);
  sgd.lr = 0.1;
  expect_after_steps("sgd", tsr_optim_sgd(1, &p, NULL, &sgd), p, (const double[]){0.5, 0.25}, 1,
                     (const double[]){0.95, -2.025}, 1e-14, 0);
  // Momentum 0.9 from there, two steps of g = 0.5: buf 0.5 then
  // 0.9 * 0.5 + 0.5 = 0.95; p = 0.95 - 0.1 * 0.5 = 0.9, then 0.9 - 0.1 * 0.95
  // = 0.805 (and -2.025 - 0.05 - 0.095 = -2.17).
  sgd.momentum = 0.9;
  TS_ASSERT_OK(tsr_tensor_grad_set(p, NULL));
  expect_after_steps("sgd momentum", tsr_optim_sgd(1, &p, NULL, &sgd), p,
                     (const double[]){0.5, 0.5}, 2, (const double[]){0.805, -2.17}, 1e-14, 0);
  tsr_tensor_release(p);
  // Adam, lr 0.1, first step: m^ = g and v^ = g^2, so p moves by lr * sign(g).
  p = hand_param(1, -2);
  tsr_adam_options adam;
  tsr_adam_options_init(&adam);
  adam.lr = 0.1;
  expect_after_steps("adam", tsr_optim_adam(1, &p, NULL, &adam), p, (const double[]){0.5, -0.25},
                     1, (const double[]){0.9, -1.9}, 0, 1e-7);
  tsr_tensor_release(p);
  // AdamW, lr 0.1, weight decay 0.01, first step: p *= 1 - 0.001 first
  // (0.999, -1.998), then the same lr * sign(g) move: 0.899, -1.898.
  p = hand_param(1, -2);
  tsr_adamw_options_init(&adam);
  adam.lr = 0.1;
  expect_after_steps("adamw", tsr_optim_adam(1, &p, NULL, &adam), p, (const double[]){0.5, -0.25},
                     1, (const double[]){0.899, -1.898}, 0, 1e-7);
  tsr_tensor_release(p);
}

static void test_nesterov_weight_decay_and_dampening_match_values_worked_by_hand(void **state) {
  (void)state;
  // Nesterov, lr 0.1, momentum 0.9, weight decay 0.1, g = 0.5, p = (1, -2):
  //   step 1: g' = g + 0.1 p = (0.6, 0.3); buf = g'; d = g' + 0.9 buf =
  //           (1.14, 0.57); p = (0.886, -2.057)
  //   step 2: g' = (0.5886, 0.2943); buf = 0.9 buf + g' = (1.1286, 0.5643);
  //           d = g' + 0.9 buf = (1.60434, 0.80217); p = (0.725566, -2.137217)
  tsr_sgd_options sgd;
  tsr_sgd_options_init(&sgd);
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  sgd.nesterov = 1;
  sgd.weight_decay = 0.1;
  for (int steps = 1; steps <= 2; ++steps) {
    tsr_tensor *p = hand_param(1, -2);
    expect_after_steps(steps == 1 ? "nesterov, 1 step" : "nesterov, 2 steps",
                       tsr_optim_sgd(1, &p, NULL, &sgd), p, (const double[]){0.5, 0.5}, steps,
                       steps == 1 ? (const double[]){0.886, -2.057}
                                  : (const double[]){0.725566, -2.137217},
                       1e-13, 0);
    tsr_tensor_release(p);
  }
  // Momentum 0.9 with dampening 0.5, lr 0.1, g = 0.5, p = (1, -2): the first
  // step takes buf = g undamped (PyTorch's rule): p = (0.95, -2.05); then
  // buf = 0.9 * 0.5 + 0.5 * 0.5 = 0.7: p = (0.88, -2.12).
  tsr_sgd_options_init(&sgd);
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  sgd.dampening = 0.5;
  tsr_tensor *p = hand_param(1, -2);
  expect_after_steps("dampening", tsr_optim_sgd(1, &p, NULL, &sgd), p, (const double[]){0.5, 0.5},
                     2, (const double[]){0.88, -2.12}, 1e-13, 0);
  tsr_tensor_release(p);
}

// Ops dispatched on the device so far (every dispatch looks its plan up once).
static uint64_t dispatches(void) {
  tsr_plan_cache_stats st = {.struct_size = sizeof(st)};
  TS_ASSERT_OK(tsr_device_plan_cache_stats_get(g_device, &st));
  return st.hits + st.misses;
}

// Each parameter's update is one fused op on the device (SGD_UPDATE or
// ADAM_UPDATE): a step over three parameters of different shapes dispatches
// exactly three ops, with momentum or Adam's moments in place.
static void test_a_step_is_one_fused_op_per_parameter(void **state) {
  (void)state;
  const int64_t shapes[3][2] = {{3, 4}, {4, 1}, {7, 2}};
  tsr_tensor *params[3];
  for (int i = 0; i < 3; ++i) {
    double v[28];
    for (int j = 0; j < 28; ++j) v[j] = 0.25 * (j % 5) - 0.5;
    params[i] = ts_tensor(g_device, TSR_FLOAT32, 2, shapes[i], v);
    TS_ASSERT_TENSOR(params[i]);
    TS_ASSERT_OK(tsr_tensor_requires_grad_set(params[i], 1));
    grad_set(params[i], v);
  }
  tsr_sgd_options sgd;
  tsr_sgd_options_init(&sgd);
  sgd.momentum = 0.9;
  sgd.weight_decay = 1e-4;
  tsr_adam_options adam;
  tsr_adamw_options_init(&adam);
  tsr_optimizer *opts[2] = {tsr_optim_sgd(3, params, NULL, &sgd),
                            tsr_optim_adam(3, params, NULL, &adam)};
  for (int k = 0; k < 2; ++k) {
    TS_ASSERT_TENSOR(opts[k]);
    TS_ASSERT_OK(tsr_optimizer_step(opts[k]));  // the first creates the state
    uint64_t before = dispatches();
    TS_ASSERT_OK(tsr_optimizer_step(opts[k]));
    uint64_t ops = dispatches() - before;
    if (ops != 3) {
      fail_msg("%s: a step over 3 parameters dispatched %llu ops", k ? "adamw" : "sgd momentum",
               (unsigned long long)ops);
    }
    tsr_optimizer_destroy(opts[k]);
  }
  for (int i = 0; i < 3; ++i) tsr_tensor_release(params[i]);
}

static void test_sgd_trajectories_match_float64_model(void **state) {
  (void)state;
  const model_config configs[] = {
      sgd_config("sgd", 0.1, 0, 0, 0, 0),
      sgd_config("sgd weight_decay", 0.1, 0, 0, 0.05, 0),
      sgd_config("sgd momentum", 0.1, 0.9, 0, 0, 0),
      sgd_config("sgd momentum dampening 0.5 weight_decay", 0.05, 0.8, 0.5, 0.01, 0),
      sgd_config("sgd nesterov weight_decay", 0.1, 0.9, 0, 0.01, 1),
  };
  for (size_t d = 0; d < sizeof(kDtypes) / sizeof(kDtypes[0]); ++d) {
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); ++i) {
      trajectory_check(&configs[i], kDtypes[d], NULL);
    }
  }
}

static void test_adam_and_adamw_trajectories_match_float64_model(void **state) {
  (void)state;
  const model_config configs[] = {
      adam_config("adam", 0, 0.01, 0),
      adam_config("adam weight_decay", 0, 0.01, 0.1),
      adam_config("adamw", 1, 0.01, 0.1),
  };
  for (size_t d = 0; d < sizeof(kDtypes) / sizeof(kDtypes[0]); ++d) {
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); ++i) {
      trajectory_check(&configs[i], kDtypes[d], NULL);
    }
  }
}

static void test_parameters_without_grad_are_skipped_and_keep_their_state(void **state) {
  (void)state;
  // Parameter 1 has no gradient at step 1 (no state yet: its momentum buffer
  // starts at step 2 as a copy of the gradient), parameter 0 none at step 2
  // (its state stays as it was), then both at step 3.
  const unsigned skip[NSTEPS] = {2u, 1u, 0u};
  const model_config configs[] = {
      sgd_config("sgd momentum, skipped parameters", 0.1, 0.9, 0.2, 0.01, 0),
      sgd_config("sgd, skipped parameters", 0.1, 0, 0, 0.01, 0),
      adam_config("adamw, skipped parameters", 1, 0.01, 0.1),
  };
  for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); ++i) {
    trajectory_check(&configs[i], TSR_FLOAT32, skip);
  }
  // A skipped parameter is untouched, bit for bit.
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT32, 7, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  size_t bytes_before, bytes_after;
  unsigned char *before = raw_bytes(params[1], &bytes_before);
  model_config c = adam_config("adamw", 1, 0.01, 0.1);
  tsr_optimizer *o = optimizer_make(&c, params, NULL);
  grad_set(params[0], grads[0]);
  TS_ASSERT_OK(tsr_optimizer_step(o));
  unsigned char *after = raw_bytes(params[1], &bytes_after);
  assert_int_equal(bytes_before, bytes_after);
  assert_memory_equal(before, after, bytes_before);
  assert_int_equal(tsr_optimizer_state_count(o), 2);
  free(before);
  free(after);
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

static void test_zero_grad_clears_every_gradient(void **state) {
  (void)state;
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT32, 3, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  model_config c = sgd_config("sgd", 0.1, 0.9, 0, 0, 0);
  tsr_optimizer *o = optimizer_make(&c, params, NULL);
  for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[0] + kStart[j]);
  tsr_optimizer_zero_grad(o);
  for (int j = 0; j < NPARAM; ++j) assert_null(tsr_tensor_grad(params[j]));
  // A step with no gradients changes nothing and creates no state.
  TS_ASSERT_OK(tsr_optimizer_step(o));
  assert_int_equal(tsr_optimizer_state_count(o), 0);
  double got[NELEM];
  for (int j = 0; j < NPARAM; ++j)
    read_values(params[j], got + kStart[j], kStart[j + 1] - kStart[j]);
  ts_expect_values("parameters after a step without gradients", TSR_FLOAT32, got, p0, NULL, NELEM,
                   0, 0);
  tsr_optimizer_zero_grad(NULL);  // ignored
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

static void test_state_is_named_after_parameters_and_readable(void **state) {
  (void)state;
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT64, 11, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT64, j, p0 + kStart[j]);
  const char *names[NPARAM] = {"fc.weight", "fc.bias"};
  model_config c = adam_config("adam", 0, 0.01, 0);
  tsr_optimizer *o = optimizer_make(&c, params, names);
  assert_int_equal(tsr_optimizer_state_count(o), 0);
  for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[0] + kStart[j]);
  TS_ASSERT_OK(tsr_optimizer_step(o));
  const char *want_names[] = {"fc.weight.exp_avg", "fc.weight.exp_avg_sq", "fc.bias.exp_avg",
                              "fc.bias.exp_avg_sq"};
  assert_int_equal(tsr_optimizer_state_count(o), 4);
  for (int32_t i = 0; i < 4; ++i) {
    const char *name = NULL;
    tsr_tensor *t = NULL;
    TS_ASSERT_OK(tsr_optimizer_state_get(o, i, &name, &t));
    assert_string_equal(name, want_names[i]);
    int j = i / 2;
    int n = kStart[j + 1] - kStart[j];
    assert_int_equal(tsr_tensor_rank(t), kRank[j]);
    assert_int_equal(tsr_tensor_numel(t), n);
    assert_int_equal(tsr_tensor_dtype(t), TSR_FLOAT64);
    double got[NELEM], want[NELEM];
    read_values(t, got, n);
    // After one step: m = (1 - beta1) g, v = (1 - beta2) g^2.
    for (int e = 0; e < n; ++e) {
      double g = grads[0][kStart[j] + e];
      want[e] = i % 2 == 0 ? 0.1 * g : 0.001 * g * g;
    }
    ts_expect_values(name, TSR_FLOAT64, got, want, NULL, n, 1e-12, 1e-15);
  }
  const char *name = NULL;
  tsr_tensor *t = NULL;
  expect_error(tsr_optimizer_state_get(o, 4, &name, &t), TSR_INVALID_ARGUMENT, "index 4");
  assert_null(name);
  assert_null(t);
  expect_error(tsr_optimizer_state_get(o, -1, &name, &t), TSR_INVALID_ARGUMENT, "index -1");
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

// Runs |c| two steps, saves state and parameters to host memory, restores
// them into a new optimizer over new parameters and checks that the third
// step of both is the same, bit for bit.
static void checkpoint_check(const model_config *c, tsr_dtype_t dtype) {
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(dtype, 99, p0, grads);
  const char *names[NPARAM] = {"layer.w", "layer.b"};
  tsr_tensor *a[NPARAM];
  for (int j = 0; j < NPARAM; ++j) a[j] = leaf(dtype, j, p0 + kStart[j]);
  tsr_optimizer *oa = optimizer_make(c, a, names);
  for (int t = 0; t < 2; ++t) {
    for (int j = 0; j < NPARAM; ++j) grad_set(a[j], grads[t] + kStart[j]);
    TS_ASSERT_OK(tsr_optimizer_step(oa));
  }
  // The checkpoint, in host memory.
  int32_t count = tsr_optimizer_state_count(oa);
  assert_true(count > 0);
  char saved_names[8][64];
  double saved[8][NELEM];
  double saved_params[NELEM];
  for (int32_t i = 0; i < count; ++i) {
    const char *name;
    tsr_tensor *t;
    TS_ASSERT_OK(tsr_optimizer_state_get(oa, i, &name, &t));
    snprintf(saved_names[i], sizeof(saved_names[i]), "%s", name);
    read_values(t, saved[i], tsr_tensor_numel(t));
  }
  for (int j = 0; j < NPARAM; ++j) {
    read_values(a[j], saved_params + kStart[j], kStart[j + 1] - kStart[j]);
  }
  int64_t steps = tsr_optimizer_step_count(oa);
  assert_int_equal(steps, 2);
  // Restored before the new optimizer's first step.
  tsr_tensor *b[NPARAM];
  for (int j = 0; j < NPARAM; ++j) b[j] = leaf(dtype, j, saved_params + kStart[j]);
  tsr_optimizer *ob = optimizer_make(c, b, names);
  for (int32_t i = 0; i < count; ++i) {
    int j = strncmp(saved_names[i], "layer.w.", 8) == 0 ? 0 : 1;
    tsr_tensor *value = ts_tensor(g_device, dtype, kRank[j], kSizes[j], saved[i]);
    TS_ASSERT_TENSOR(value);
    TS_ASSERT_OK(tsr_optimizer_state_set(ob, saved_names[i], value));
    tsr_tensor_release(value);
  }
  TS_ASSERT_OK(tsr_optimizer_step_count_set(ob, steps));
  assert_int_equal(tsr_optimizer_state_count(ob), count);
  // The third step, on both.
  for (int j = 0; j < NPARAM; ++j) {
    grad_set(a[j], grads[2] + kStart[j]);
    grad_set(b[j], grads[2] + kStart[j]);
  }
  TS_ASSERT_OK(tsr_optimizer_step(oa));
  TS_ASSERT_OK(tsr_optimizer_step(ob));
  for (int j = 0; j < NPARAM; ++j) {
    size_t na, nb;
    unsigned char *ra = raw_bytes(a[j], &na);
    unsigned char *rb = raw_bytes(b[j], &nb);
    assert_int_equal(na, nb);
    if (memcmp(ra, rb, na) != 0)
      fail_msg("%s: parameter %d differs after restore", c->label, j);
    free(ra);
    free(rb);
  }
  for (int32_t i = 0; i < count; ++i) {
    const char *name_a, *name_b;
    tsr_tensor *ta, *tb;
    TS_ASSERT_OK(tsr_optimizer_state_get(oa, i, &name_a, &ta));
    TS_ASSERT_OK(tsr_optimizer_state_get(ob, i, &name_b, &tb));
    assert_string_equal(name_a, name_b);
    size_t na, nb;
    unsigned char *ra = raw_bytes(ta, &na);
    unsigned char *rb = raw_bytes(tb, &nb);
    assert_int_equal(na, nb);
    if (memcmp(ra, rb, na) != 0)
      fail_msg("%s: %s differs after restore", c->label, name_a);
    free(ra);
    free(rb);
  }
  tsr_optimizer_destroy(oa);
  tsr_optimizer_destroy(ob);
  for (int j = 0; j < NPARAM; ++j) {
    tsr_tensor_release(a[j]);
    tsr_tensor_release(b[j]);
  }
}

static void test_restored_state_continues_bit_for_bit(void **state) {
  (void)state;
  const model_config configs[] = {
      sgd_config("sgd momentum dampening", 0.1, 0.9, 0.5, 0.01, 0),
      sgd_config("sgd nesterov", 0.1, 0.9, 0, 0, 1),
      adam_config("adam", 0, 0.01, 0.05),
      adam_config("adamw", 1, 0.01, 0.1),
  };
  for (size_t d = 0; d < sizeof(kDtypes) / sizeof(kDtypes[0]); ++d) {
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); ++i) {
      checkpoint_check(&configs[i], kDtypes[d]);
    }
  }
}

static void test_state_set_refuses_unknown_names_sizes_and_dtypes(void **state) {
  (void)state;
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT32, 5, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  model_config c = sgd_config("sgd momentum", 0.1, 0.9, 0, 0, 0);
  tsr_optimizer *o = optimizer_make(&c, params, NULL);
  tsr_tensor *good = ts_tensor(g_device, TSR_FLOAT32, 1, kSizes[1], p0);
  tsr_tensor *wrong_size = ts_tensor(g_device, TSR_FLOAT32, 1, (const int64_t[]){5}, p0);
  tsr_tensor *wrong_dtype = ts_tensor(g_device, TSR_FLOAT64, 1, kSizes[1], p0);
  TS_ASSERT_TENSOR(good);
  TS_ASSERT_TENSOR(wrong_size);
  TS_ASSERT_TENSOR(wrong_dtype);
  expect_error(tsr_optimizer_state_set(o, "1.exp_avg", good), TSR_NOT_FOUND, "1.exp_avg");
  expect_error(tsr_optimizer_state_set(o, "2.momentum_buffer", good), TSR_NOT_FOUND,
               "2.momentum_buffer");
  expect_error(tsr_optimizer_state_set(o, "1.momentum_buffer", wrong_size), TSR_INVALID_ARGUMENT,
               "sizes [5]");
  expect_error(tsr_optimizer_state_set(o, "1.momentum_buffer", wrong_dtype), TSR_INVALID_ARGUMENT,
               "dtype");
  expect_error(tsr_optimizer_state_set(o, NULL, good), TSR_INVALID_ARGUMENT, "name is NULL");
  expect_error(tsr_optimizer_state_set(o, "1.momentum_buffer", NULL), TSR_INVALID_ARGUMENT,
               "value is NULL");
  expect_error(tsr_optimizer_state_set(NULL, "1.momentum_buffer", good), TSR_INVALID_ARGUMENT,
               "optimizer is NULL");
  assert_int_equal(tsr_optimizer_state_count(o), 0);
  // A good one is a copy: changing the source afterwards changes nothing.
  TS_ASSERT_OK(tsr_optimizer_state_set(o, "1.momentum_buffer", good));
  assert_int_equal(tsr_optimizer_state_count(o), 1);
  TS_ASSERT_OK(tsr_fill_(good, 3.0));
  const char *name;
  tsr_tensor *t;
  TS_ASSERT_OK(tsr_optimizer_state_get(o, 0, &name, &t));
  assert_string_equal(name, "1.momentum_buffer");
  double got[4];
  read_values(t, got, 4);
  ts_expect_values("restored momentum_buffer", TSR_FLOAT32, got, p0, NULL, 4, 0, 0);
  tsr_optimizer_destroy(o);
  // SGD without momentum has no state at all.
  c = sgd_config("sgd", 0.1, 0, 0, 0, 0);
  o = optimizer_make(&c, params, NULL);
  expect_error(tsr_optimizer_state_set(o, "1.momentum_buffer", wrong_dtype), TSR_NOT_FOUND,
               "momentum 0 keeps no state");
  tsr_optimizer_destroy(o);
  tsr_tensor_release(good);
  tsr_tensor_release(wrong_size);
  tsr_tensor_release(wrong_dtype);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
  tsr_context_error_clear(g_context);
}

static void test_lr_set_changes_the_next_step(void **state) {
  (void)state;
  const int64_t two[] = {2};
  tsr_tensor *p = ts_tensor(g_device, TSR_FLOAT64, 1, two, (const double[]){1, -2});
  TS_ASSERT_OK(tsr_tensor_requires_grad_set(p, 1));
  tsr_optimizer *o = tsr_optim_sgd(1, &p, NULL, NULL);
  TS_ASSERT_TENSOR(o);
  assert_true(tsr_optimizer_lr(o) == 0.01);
  TS_ASSERT_OK(tsr_optimizer_lr_set(o, 0.5));
  assert_true(tsr_optimizer_lr(o) == 0.5);
  expect_error(tsr_optimizer_lr_set(o, -0.1), TSR_INVALID_ARGUMENT, "lr is -0.1");
  expect_error(tsr_optimizer_lr_set(o, NAN), TSR_INVALID_ARGUMENT, "lr is nan");
  expect_error(tsr_optimizer_lr_set(o, INFINITY), TSR_INVALID_ARGUMENT, "lr is inf");
  assert_true(tsr_optimizer_lr(o) == 0.5);
  grad_set(p, (const double[]){0.5, 0.25});
  TS_ASSERT_OK(tsr_optimizer_step(o));
  double got[2];
  read_values(p, got, 2);
  ts_expect_values("sgd at lr 0.5", TSR_FLOAT64, got, (const double[]){0.75, -2.125}, NULL, 2,
                   1e-15, 0);
  // lr 0 leaves the parameter as it is.
  TS_ASSERT_OK(tsr_optimizer_lr_set(o, 0));
  TS_ASSERT_OK(tsr_optimizer_step(o));
  read_values(p, got, 2);
  ts_expect_values("sgd at lr 0", TSR_FLOAT64, got, (const double[]){0.75, -2.125}, NULL, 2, 0, 0);
  assert_int_equal(tsr_optimizer_step_count(o), 2);
  TS_ASSERT_OK(tsr_optimizer_step_count_set(o, 10));
  assert_int_equal(tsr_optimizer_step_count(o), 10);
  expect_error(tsr_optimizer_step_count_set(o, -1), TSR_INVALID_ARGUMENT, "steps is -1");
  tsr_optimizer_destroy(o);
  tsr_tensor_release(p);
  tsr_context_error_clear(g_context);
}

static double step_lr(double base, int64_t epoch) {
  return base * pow(0.5, (double)(epoch / 3));
}

static double cosine_lr(double base, int64_t epoch) {
  const double pi = 3.14159265358979323846;
  int64_t e = epoch < 6 ? epoch : 6;
  return 0.001 + (base - 0.001) * (1 + cos(pi * (double)e / 6.0)) / 2;
}

static void test_schedules_follow_their_closed_forms(void **state) {
  (void)state;
  const int64_t one[] = {1};
  tsr_tensor *p = ts_tensor(g_device, TSR_FLOAT32, 1, one, (const double[]){1});
  tsr_optimizer *o = tsr_optim_sgd(1, &p, NULL, NULL);
  TS_ASSERT_TENSOR(o);
  TS_ASSERT_OK(tsr_optimizer_lr_set(o, 0.1));
  tsr_lr_schedule *s = tsr_lr_step(o, 3, 0.5);
  TS_ASSERT_TENSOR(s);
  assert_int_equal(tsr_lr_schedule_epoch(s), 0);
  assert_true(tsr_optimizer_lr(o) == 0.1);
  for (int64_t e = 1; e <= 10; ++e) {
    TS_ASSERT_OK(tsr_lr_schedule_step(s));
    assert_int_equal(tsr_lr_schedule_epoch(s), e);
    double got = tsr_optimizer_lr(o), want = step_lr(0.1, e);
    if (fabs(got - want) > 1e-16 * want)
      fail_msg("step lr at epoch %lld: %.17g, want %.17g", (long long)e, got, want);
  }
  TS_ASSERT_OK(tsr_lr_schedule_epoch_set(s, 4));
  assert_int_equal(tsr_lr_schedule_epoch(s), 4);
  assert_true(fabs(tsr_optimizer_lr(o) - 0.05) <= 1e-17);
  tsr_lr_schedule_destroy(s);
  // The cosine schedule's base is the lr when it is created.
  TS_ASSERT_OK(tsr_optimizer_lr_set(o, 0.2));
  s = tsr_lr_cosine(o, 6, 0.001);
  TS_ASSERT_TENSOR(s);
  for (int64_t e = 1; e <= 10; ++e) {
    TS_ASSERT_OK(tsr_lr_schedule_step(s));
    double got = tsr_optimizer_lr(o), want = cosine_lr(0.2, e);
    if (fabs(got - want) > 1e-15)
      fail_msg("cosine lr at epoch %lld: %.17g, want %.17g", (long long)e, got, want);
  }
  assert_true(fabs(tsr_optimizer_lr(o) - 0.001) <= 1e-17);  // clamped at t_max
  TS_ASSERT_OK(tsr_lr_schedule_epoch_set(s, 3));
  assert_true(fabs(tsr_optimizer_lr(o) - 0.1005) <= 1e-15);
  TS_ASSERT_OK(tsr_lr_schedule_epoch_set(s, 0));
  assert_true(fabs(tsr_optimizer_lr(o) - 0.2) <= 1e-16);
  expect_error(tsr_lr_schedule_epoch_set(s, -1), TSR_INVALID_ARGUMENT, "epoch is -1");
  tsr_lr_schedule_destroy(s);
  // Bad arguments.
  expect_null(tsr_lr_step(NULL, 3, 0.5), TSR_INVALID_ARGUMENT, "optimizer is NULL");
  expect_null(tsr_lr_step(o, 0, 0.5), TSR_INVALID_ARGUMENT, "step_size is 0");
  expect_null(tsr_lr_step(o, 3, NAN), TSR_INVALID_ARGUMENT, "gamma is nan");
  expect_null(tsr_lr_cosine(NULL, 3, 0), TSR_INVALID_ARGUMENT, "optimizer is NULL");
  expect_null(tsr_lr_cosine(o, 0, 0), TSR_INVALID_ARGUMENT, "t_max is 0");
  expect_null(tsr_lr_cosine(o, 5, -1), TSR_INVALID_ARGUMENT, "eta_min is -1");
  expect_error(tsr_lr_schedule_step(NULL), TSR_INVALID_ARGUMENT, "schedule is NULL");
  expect_error(tsr_lr_schedule_epoch_set(NULL, 1), TSR_INVALID_ARGUMENT, "schedule is NULL");
  assert_int_equal(tsr_lr_schedule_epoch(NULL), -1);
  tsr_lr_schedule_destroy(NULL);
  tsr_optimizer_destroy(o);
  tsr_tensor_release(p);
}

static void test_bad_options_and_parameters_are_refused(void **state) {
  (void)state;
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT32, 1, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);

  struct sgd_case {
    double lr, momentum, dampening, weight_decay;
    uint32_t nesterov;
    const char *needle;
  } sgd_cases[] = {
      {-0.1, 0, 0, 0, 0, "lr is -0.1"},
      {NAN, 0, 0, 0, 0, "lr is nan"},
      {INFINITY, 0, 0, 0, 0, "lr is inf"},
      {0.1, -0.5, 0, 0, 0, "momentum is -0.5"},
      {0.1, 0.9, 0, -1, 0, "weight_decay is -1"},
      {0.1, 0, 0, 0, 1, "nesterov needs momentum > 0 and dampening 0"},
      {0.1, 0.9, 0.5, 0, 1, "nesterov needs momentum > 0 and dampening 0"},
  };
  for (size_t i = 0; i < sizeof(sgd_cases) / sizeof(sgd_cases[0]); ++i) {
    tsr_sgd_options o;
    tsr_sgd_options_init(&o);
    o.lr = sgd_cases[i].lr;
    o.momentum = sgd_cases[i].momentum;
    o.dampening = sgd_cases[i].dampening;
    o.weight_decay = sgd_cases[i].weight_decay;
    o.nesterov = sgd_cases[i].nesterov;
    expect_null(tsr_optim_sgd(NPARAM, params, NULL, &o), TSR_INVALID_ARGUMENT, sgd_cases[i].needle);
  }
  struct adam_case {
    double lr, beta1, beta2, eps, weight_decay;
    const char *needle;
  } adam_cases[] = {
      {-1, 0.9, 0.999, 1e-8, 0, "lr is -1"},
      {0.1, 1.0, 0.999, 1e-8, 0, "beta1 is 1"},
      {0.1, -0.1, 0.999, 1e-8, 0, "beta1 is -0.1"},
      {0.1, 0.9, 1.5, 1e-8, 0, "beta2 is 1.5"},
      {0.1, 0.9, NAN, 1e-8, 0, "beta2 is nan"},
      {0.1, 0.9, 0.999, 0, 0, "eps is 0"},
      {0.1, 0.9, 0.999, 1e-8, -0.01, "weight_decay is -0.01"},
  };
  for (size_t i = 0; i < sizeof(adam_cases) / sizeof(adam_cases[0]); ++i) {
    tsr_adam_options o;
    tsr_adamw_options_init(&o);
    o.lr = adam_cases[i].lr;
    o.beta1 = adam_cases[i].beta1;
    o.beta2 = adam_cases[i].beta2;
    o.eps = adam_cases[i].eps;
    o.weight_decay = adam_cases[i].weight_decay;
    expect_null(tsr_optim_adam(NPARAM, params, NULL, &o), TSR_INVALID_ARGUMENT,
                adam_cases[i].needle);
  }
  tsr_sgd_options unset;
  memset(&unset, 0, sizeof(unset));
  expect_null(tsr_optim_sgd(NPARAM, params, NULL, &unset), TSR_INVALID_ARGUMENT,
              "struct_size is 0");

  // Parameters and names.
  expect_null(tsr_optim_sgd(0, params, NULL, NULL), TSR_INVALID_ARGUMENT, "count is 0");
  expect_null(tsr_optim_adam(-1, params, NULL, NULL), TSR_INVALID_ARGUMENT, "count is -1");
  expect_null(tsr_optim_sgd(1, NULL, NULL, NULL), TSR_INVALID_ARGUMENT, "params is NULL");
  tsr_tensor *with_null[] = {params[0], NULL};
  expect_null(tsr_optim_sgd(2, with_null, NULL, NULL), TSR_INVALID_ARGUMENT, "params[1] is NULL");
  tsr_tensor *ints = ts_tensor(g_device, TSR_INT32, 1, kSizes[1], p0);
  tsr_tensor *with_int[] = {params[0], ints};
  expect_null(tsr_optim_adam(2, with_int, NULL, NULL), TSR_INVALID_ARGUMENT, "params[1] has dtype");
  tsr_tensor_release(ints);
  tsr_tensor *twice[] = {params[0], params[1], params[0]};
  expect_null(tsr_optim_sgd(3, twice, NULL, NULL), TSR_INVALID_ARGUMENT, "params[0] and params[2]");
  tsr_tensor *view = tsr_reshape(params[0], 1, (const int64_t[]){6});
  TS_ASSERT_TENSOR(view);
  tsr_tensor *aliased[] = {params[0], view};
  expect_null(tsr_optim_sgd(2, aliased, NULL, NULL), TSR_INVALID_ARGUMENT, "share storage");
  tsr_tensor_release(view);
  const char *null_name[] = {"w", NULL};
  expect_null(tsr_optim_sgd(2, params, null_name, NULL), TSR_INVALID_ARGUMENT, "names[1] is NULL");
  const char *empty_name[] = {"", "b"};
  expect_null(tsr_optim_sgd(2, params, empty_name, NULL), TSR_INVALID_ARGUMENT,
              "names[0] is empty");
  const char *same_names[] = {"w", "w"};
  expect_null(tsr_optim_adam(2, params, same_names, NULL), TSR_INVALID_ARGUMENT,
              "names[0] and names[1] are both \"w\"");
  expect_null(tsr_optim_sgd_for_module(NULL, NULL), TSR_INVALID_ARGUMENT, "module is NULL");
  expect_null(tsr_optim_adam_for_module(NULL, NULL), TSR_INVALID_ARGUMENT, "module is NULL");

  // NULL optimizers.
  expect_error(tsr_optimizer_step(NULL), TSR_INVALID_ARGUMENT, "optimizer is NULL");
  expect_error(tsr_optimizer_lr_set(NULL, 0.1), TSR_INVALID_ARGUMENT, "optimizer is NULL");
  expect_error(tsr_optimizer_step_count_set(NULL, 1), TSR_INVALID_ARGUMENT, "optimizer is NULL");
  assert_true(isnan(tsr_optimizer_lr(NULL)));
  assert_int_equal(tsr_optimizer_step_count(NULL), -1);
  assert_int_equal(tsr_optimizer_state_count(NULL), 0);
  const char *name;
  tsr_tensor *t;
  expect_error(tsr_optimizer_state_get(NULL, 0, &name, &t), TSR_INVALID_ARGUMENT,
               "optimizer is NULL");
  tsr_optimizer_destroy(NULL);

  // A step that the device refuses names the parameter: a gradient that is
  // the parameter itself would be read while it is written.
  tsr_optimizer *o = tsr_optim_sgd(NPARAM, params, (const char *const[]){"w", "b"}, NULL);
  TS_ASSERT_TENSOR(o);
  TS_ASSERT_OK(tsr_tensor_grad_set(params[1], params[1]));
  expect_error(tsr_optimizer_step(o), TSR_INVALID_ARGUMENT, "parameter \"b\"");
  assert_int_equal(tsr_optimizer_step_count(o), 0);
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
  tsr_context_error_clear(g_context);
}

static void test_module_optimizer_uses_module_names(void **state) {
  (void)state;
  tsr_module *m = tsr_nn_linear(g_device, 3, 2, 1);
  TS_ASSERT_TENSOR(m);
  int32_t count = tsr_module_parameter_count(m);
  assert_int_equal(count, 2);
  const char *pnames[2];
  tsr_tensor *ps[2];
  double before[2][6], grads[2][6], after[2][6];
  ts_rng rng = {17};
  for (int32_t i = 0; i < count; ++i) {
    TS_ASSERT_OK(tsr_module_parameter_get(m, i, &pnames[i], &ps[i]));
    int64_t n = tsr_tensor_numel(ps[i]);
    read_values(ps[i], before[i], n);
    ts_rng_fill(&rng, TSR_FLOAT32, -1, 1, grads[i], n);
    grad_set(ps[i], grads[i]);
  }
  tsr_adam_options options;
  tsr_adamw_options_init(&options);
  options.lr = 0.01;
  tsr_optimizer *o = tsr_optim_adam_for_module(m, &options);
  TS_ASSERT_TENSOR(o);
  TS_ASSERT_OK(tsr_optimizer_step(o));
  assert_int_equal(tsr_optimizer_state_count(o), 4);
  for (int32_t i = 0; i < count; ++i) {
    const char *name;
    tsr_tensor *t;
    char want[128];
    TS_ASSERT_OK(tsr_optimizer_state_get(o, 2 * i, &name, &t));
    snprintf(want, sizeof(want), "%s.exp_avg", pnames[i]);
    assert_string_equal(name, want);
    TS_ASSERT_OK(tsr_optimizer_state_get(o, 2 * i + 1, &name, &t));
    snprintf(want, sizeof(want), "%s.exp_avg_sq", pnames[i]);
    assert_string_equal(name, want);
    // AdamW's first step: p (1 - lr wd) - lr g / (|g| + eps).
    int64_t n = tsr_tensor_numel(ps[i]);
    double expect[6];
    for (int64_t e = 0; e < n; ++e) {
      double g = grads[i][e];
      expect[e] = before[i][e] * (1 - 0.01 * 0.01) - 0.01 * g / (fabs(g) + 1e-8);
    }
    read_values(ps[i], after[i], n);
    ts_expect_values("linear after adamw", TSR_FLOAT32, after[i], expect, NULL, n, 2e-5, 2e-6);
  }
  tsr_optimizer_zero_grad(o);
  for (int32_t i = 0; i < count; ++i) assert_null(tsr_tensor_grad(ps[i]));
  tsr_optimizer_destroy(o);
  // The same over SGD.
  tsr_optimizer *sgd = tsr_optim_sgd_for_module(m, NULL);
  TS_ASSERT_TENSOR(sgd);
  tsr_optimizer_destroy(sgd);
  tsr_module_destroy(m);
}

static void test_scopes_do_not_free_optimizer_state(void **state) {
  (void)state;
  double p0[NELEM], grads[NSTEPS][NELEM];
  data_make(TSR_FLOAT32, 23, p0, grads);
  tsr_tensor *params[NPARAM];
  for (int j = 0; j < NPARAM; ++j) params[j] = leaf(TSR_FLOAT32, j, p0 + kStart[j]);
  model_config c = sgd_config("sgd momentum", 0.1, 0.9, 0, 0, 0);
  model s;
  memset(&s, 0, sizeof(s));
  memcpy(s.p, p0, sizeof(p0));
  tsr_optimizer *o = optimizer_make(&c, params, NULL);
  for (int t = 0; t < NSTEPS; ++t) {
    // A training-loop body: the state created in the first step must outlive
    // the scope.
    size_t mark = tsr_scope_begin();
    for (int j = 0; j < NPARAM; ++j) grad_set(params[j], grads[t] + kStart[j]);
    TS_ASSERT_OK(tsr_optimizer_step(o));
    tsr_optimizer_zero_grad(o);
    tsr_scope_end(mark);
    model_step(&c, &s, grads[t], 0);
  }
  double got[NELEM];
  for (int j = 0; j < NPARAM; ++j)
    read_values(params[j], got + kStart[j], kStart[j + 1] - kStart[j]);
  ts_expect_values("parameters after scoped steps", TSR_FLOAT32, got, s.p, NULL, NELEM, 2e-5, 2e-6);
  tsr_optimizer_destroy(o);
  for (int j = 0; j < NPARAM; ++j) tsr_tensor_release(params[j]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init_sets_pytorch_defaults),
      cmocka_unit_test(test_updates_match_values_worked_by_hand),
      cmocka_unit_test(test_nesterov_weight_decay_and_dampening_match_values_worked_by_hand),
      cmocka_unit_test(test_a_step_is_one_fused_op_per_parameter),
      cmocka_unit_test(test_sgd_trajectories_match_float64_model),
      cmocka_unit_test(test_adam_and_adamw_trajectories_match_float64_model),
      cmocka_unit_test(test_adam_float32_updates_are_within_2e_6_of_the_float64_rule),
      cmocka_unit_test(test_parameters_without_grad_are_skipped_and_keep_their_state),
      cmocka_unit_test(test_zero_grad_clears_every_gradient),
      cmocka_unit_test(test_state_is_named_after_parameters_and_readable),
      cmocka_unit_test(test_restored_state_continues_bit_for_bit),
      cmocka_unit_test(test_state_set_refuses_unknown_names_sizes_and_dtypes),
      cmocka_unit_test(test_lr_set_changes_the_next_step),
      cmocka_unit_test(test_schedules_follow_their_closed_forms),
      cmocka_unit_test(test_bad_options_and_parameters_are_refused),
      cmocka_unit_test(test_module_optimizer_uses_module_names),
      cmocka_unit_test(test_scopes_do_not_free_optimizer_state),
  };
  return cmocka_run_group_tests_name(TSR_TEST_DEVICE, tests, group_setup, group_teardown);
}
