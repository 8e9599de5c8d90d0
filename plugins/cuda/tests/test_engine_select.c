// The engine selection order over a fake cuDNN: mode A first, then B, then
// the fallback list; notes filter candidates; autotune times and picks the
// fastest; a pinned choice is tried first; nothing leaks.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <string.h>

#include "engine_select.h"
#include "test_host.h"

typedef struct fake_engine {
  int64_t id;
  uint32_t notes;
  int finalises;
  float ms;
} fake_engine;

typedef struct fake_cudnn {
  fake_engine modes[TSR_CUDA_HEUR_SOURCE_COUNT][8];
  int32_t counts[TSR_CUDA_HEUR_SOURCE_COUNT];
  int32_t asked[TSR_CUDA_HEUR_SOURCE_COUNT];
  int configs_live;
  int plans_live;
  int built;
  int timed;
} fake_cudnn;

static tsr_status fake_configs_get(void *ctx, int32_t mode, void **out, int32_t capacity,
                                   int32_t *out_count) {
  fake_cudnn *f = ctx;
  f->asked[mode] += 1;
  int32_t n = f->counts[mode] < capacity ? f->counts[mode] : capacity;
  for (int32_t i = 0; i < n; ++i) out[i] = &f->modes[mode][i];
  f->configs_live += n;
  *out_count = n;
  return TSR_OK;
}

static uint32_t fake_notes_get(void *ctx, void *config) {
  (void)ctx;
  return ((fake_engine *)config)->notes;
}

static int64_t fake_engine_id_get(void *ctx, void *config) {
  (void)ctx;
  return ((fake_engine *)config)->id;
}

static tsr_status fake_plan_build(void *ctx, void *config, void **out_plan) {
  fake_cudnn *f = ctx;
  fake_engine *e = config;
  f->built += 1;
  if (!e->finalises)
    return TSR_UNSUPPORTED;
  f->plans_live += 1;
  *out_plan = e;
  return TSR_OK;
}

static tsr_status fake_plan_time(void *ctx, void *plan, float *out_ms) {
  fake_cudnn *f = ctx;
  f->timed += 1;
  *out_ms = ((fake_engine *)plan)->ms;
  return TSR_OK;
}

static void fake_plan_release(void *ctx, void *plan) {
  (void)plan;
  ((fake_cudnn *)ctx)->plans_live -= 1;
}

static void fake_config_release(void *ctx, void *config) {
  (void)config;
  ((fake_cudnn *)ctx)->configs_live -= 1;
}

static tsr_cuda_engine_source source_of(fake_cudnn *f) {
  tsr_cuda_engine_source s = {f,
                              fake_configs_get,
                              fake_notes_get,
                              fake_engine_id_get,
                              fake_plan_build,
                              fake_plan_time,
                              fake_plan_release,
                              fake_config_release};
  return s;
}

static void add(fake_cudnn *f, int32_t mode, int64_t id, uint32_t notes, int finalises, float ms) {
  fake_engine e = {id, notes, finalises, ms};
  f->modes[mode][f->counts[mode]++] = e;
}

static tsr_cuda_engine_policy strict_policy(void) {
  tsr_cuda_engine_policy p = {tsr_cuda_engine_notes_forbidden(1, 0), 0, 0, -1, -1};
  return p;
}

static void finish(fake_cudnn *f, tsr_cuda_engine_source *s, tsr_cuda_engine_choice *c) {
  if (c->plan != NULL)
    s->plan_release(s->ctx, c->plan);
  assert_int_equal(f->plans_live, 0);
  assert_int_equal(f->configs_live, 0);
}

static void test_mode_a_first_finalising_candidate_wins(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 7, 0, 0, 1);
  add(&f, TSR_CUDA_HEUR_A, 3, 0, 1, 1);
  add(&f, TSR_CUDA_HEUR_A, 9, 0, 1, 1);
  add(&f, TSR_CUDA_HEUR_B, 1, 0, 1, 1);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 3);
  assert_int_equal(c.mode, TSR_CUDA_HEUR_A);
  assert_int_equal(c.rank, 1);
  assert_int_equal(f.asked[TSR_CUDA_HEUR_B], 0);
  assert_int_equal(f.built, 2);
  finish(&f, &s, &c);
}

static void test_mode_b_only_when_a_gives_nothing_that_finalises(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 7, 0, 0, 1);
  add(&f, TSR_CUDA_HEUR_B, 4, 0, 1, 1);
  add(&f, TSR_CUDA_HEUR_FALLBACK, 0, 0, 1, 1);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 4);
  assert_int_equal(c.mode, TSR_CUDA_HEUR_B);
  assert_int_equal(f.asked[TSR_CUDA_HEUR_FALLBACK], 0);
  finish(&f, &s, &c);
}

static void test_fallback_list_after_a_and_b(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_B, 4, 0, 0, 1);
  add(&f, TSR_CUDA_HEUR_FALLBACK, 11, 0, 1, 1);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 11);
  assert_int_equal(c.mode, TSR_CUDA_HEUR_FALLBACK);
  assert_int_equal(f.asked[TSR_CUDA_HEUR_A], 1);
  assert_int_equal(f.asked[TSR_CUDA_HEUR_B], 1);
  finish(&f, &s, &c);
}

static void test_strict_fp32_skips_tensor_core_engines(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 1, TSR_CUDA_NOTE_TENSOR_CORE, 1, 1);
  add(&f, TSR_CUDA_HEUR_A, 2, TSR_CUDA_NOTE_DOWN_CONVERT_INPUTS, 1, 1);
  add(&f, TSR_CUDA_HEUR_A, 5, TSR_CUDA_NOTE_NONDETERMINISTIC, 1, 1);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 5);
  finish(&f, &s, &c);
  // TF32 allowed: the tensor-core engine, ranked first, wins.
  memset(&c, 0, sizeof(c));
  p.forbidden_notes = tsr_cuda_engine_notes_forbidden(0, 0);
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 1);
  finish(&f, &s, &c);
}

static void test_determinism_refuses_with_the_tally_when_nothing_fits(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 5, TSR_CUDA_NOTE_NONDETERMINISTIC, 1, 1);
  add(&f, TSR_CUDA_HEUR_A, 6, 0, 0, 1);
  add(&f, TSR_CUDA_HEUR_FALLBACK, 8, TSR_CUDA_NOTE_TENSOR_CORE, 1, 1);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  p.forbidden_notes = tsr_cuda_engine_notes_forbidden(1, 1);
  tsr_cuda_engine_choice c;
  tsr_cuda_test_message_clear();
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c),
                   TSR_UNSUPPORTED);
  assert_null(c.plan);
  const char *m = tsr_cuda_test_message();
  assert_non_null(strstr(m, "conv2d: no cuDNN engine fits"));
  assert_non_null(strstr(m, "A offered 2 (1 filtered by math mode or determinism, 1 did not"));
  assert_non_null(strstr(m, "B offered 0"));
  assert_non_null(strstr(m, "fallback offered 1 (1 filtered"));
  finish(&f, &s, &c);
}

static void test_autotune_times_the_candidates_and_keeps_the_fastest(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 1, 0, 1, 3.0f);
  add(&f, TSR_CUDA_HEUR_A, 2, 0, 0, 0.1f);
  add(&f, TSR_CUDA_HEUR_A, 3, 0, 1, 1.5f);
  add(&f, TSR_CUDA_HEUR_A, 4, TSR_CUDA_NOTE_TENSOR_CORE, 1, 0.2f);
  add(&f, TSR_CUDA_HEUR_A, 5, 0, 1, 2.0f);
  add(&f, TSR_CUDA_HEUR_B, 6, 0, 1, 0.01f);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  p.autotune = 1;
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 3);
  assert_int_equal(c.timed, 3);
  assert_true(c.milliseconds > 1.4f && c.milliseconds < 1.6f);
  assert_int_equal(f.asked[TSR_CUDA_HEUR_B], 0);
  finish(&f, &s, &c);
  // A limit of two times only the first two that finalise.
  memset(&c, 0, sizeof(c));
  f.timed = 0;
  p.autotune_limit = 2;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(f.timed, 2);
  assert_int_equal(c.engine_id, 3);
  finish(&f, &s, &c);
}

static void test_pinned_choice_is_tried_first_without_timing(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 1, 0, 1, 3.0f);
  add(&f, TSR_CUDA_HEUR_A, 3, 0, 1, 1.5f);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  p.autotune = 1;
  p.pinned_mode = TSR_CUDA_HEUR_A;
  p.pinned_rank = 1;
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 3);
  assert_int_equal(f.timed, 0);
  assert_int_equal(f.built, 1);
  finish(&f, &s, &c);
  // A pin that no longer finalises falls back to the normal order.
  memset(&c, 0, sizeof(c));
  f.modes[TSR_CUDA_HEUR_A][1].finalises = 0;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 1);
  finish(&f, &s, &c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mode_a_first_finalising_candidate_wins),
      cmocka_unit_test(test_mode_b_only_when_a_gives_nothing_that_finalises),
      cmocka_unit_test(test_fallback_list_after_a_and_b),
      cmocka_unit_test(test_strict_fp32_skips_tensor_core_engines),
      cmocka_unit_test(test_determinism_refuses_with_the_tally_when_nothing_fits),
      cmocka_unit_test(test_autotune_times_the_candidates_and_keeps_the_fastest),
      cmocka_unit_test(test_pinned_choice_is_tried_first_without_timing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
