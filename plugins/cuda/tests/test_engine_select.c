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
  int prepared;           // timing_prepare calls
  int timed_unprepared;   // plan_time calls before any timing_prepare
  tsr_status prepare_status;
  tsr_status build_error;  // returned by plan_build for engines with finalises < 0
  const char *refusal;
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
  if (e->finalises < 0)
    return f->build_error;
  if (!e->finalises) {
    f->refusal = "CUDNN_STATUS_NOT_SUPPORTED: no kernel for this problem";
    return TSR_UNSUPPORTED;
  }
  f->plans_live += 1;
  *out_plan = e;
  return TSR_OK;
}

static tsr_status fake_timing_prepare(void *ctx, void *const *plans, int32_t count) {
  fake_cudnn *f = ctx;
  for (int32_t i = 0; i < count; ++i) assert_non_null(plans[i]);
  f->prepared += 1;
  return f->prepare_status;
}

static tsr_status fake_plan_time(void *ctx, void *plan, float *out_ms) {
  fake_cudnn *f = ctx;
  f->timed += 1;
  if (f->prepared == 0)
    f->timed_unprepared += 1;
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

static const char *fake_last_refusal(void *ctx) {
  const fake_cudnn *f = ctx;
  return f->refusal != NULL ? f->refusal : "";
}

static tsr_cuda_engine_source source_of(fake_cudnn *f) {
  tsr_cuda_engine_source s = {f,
                              fake_configs_get,
                              fake_notes_get,
                              fake_engine_id_get,
                              fake_plan_build,
                              fake_timing_prepare,
                              fake_plan_time,
                              fake_plan_release,
                              fake_config_release,
                              fake_last_refusal};
  return s;
}

static void add(fake_cudnn *f, int32_t mode, int64_t id, uint32_t notes, int finalises, float ms) {
  fake_engine e = {id, notes, finalises, ms};
  f->modes[mode][f->counts[mode]++] = e;
}

static tsr_cuda_engine_policy strict_policy(void) {
  tsr_cuda_engine_policy p = {
      tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_STRICT, 0), 0, 0, -1, -1};
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
  p.forbidden_notes = tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_ALLOW_TF32, 0);
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
  p.forbidden_notes = tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_STRICT, 1);
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
  // The cause of the last refusal, not only the count.
  assert_non_null(strstr(m, "last refusal: CUDNN_STATUS_NOT_SUPPORTED"));
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

static void test_a_pinned_choice_that_no_longer_builds_times_only_after_preparing(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 1, 0, 1, 3.0f);
  add(&f, TSR_CUDA_HEUR_A, 3, 0, 0, 1.5f);  // the cached choice: fails to build now
  add(&f, TSR_CUDA_HEUR_A, 4, 0, 1, 2.0f);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  p.autotune = 1;
  p.pinned_mode = TSR_CUDA_HEUR_A;
  p.pinned_rank = 1;
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 4);
  assert_int_equal(f.timed, 2);
  assert_int_equal(f.prepared, 1);
  assert_int_equal(f.timed_unprepared, 0);
  finish(&f, &s, &c);
}

static void test_a_pinned_choice_that_builds_prepares_nothing(void **state) {
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
  assert_int_equal(f.prepared, 0);
  assert_int_equal(f.timed, 0);
  finish(&f, &s, &c);
  // Without autotune nothing is timed, so nothing is prepared either.
  memset(&c, 0, sizeof(c));
  p.autotune = 0;
  p.pinned_mode = -1;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(f.prepared, 0);
  finish(&f, &s, &c);
}

static void test_a_failed_preparation_is_reported_and_nothing_is_timed(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 1, 0, 1, 3.0f);
  add(&f, TSR_CUDA_HEUR_A, 2, 0, 1, 1.0f);
  f.prepare_status = TSR_OUT_OF_MEMORY;
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  p.autotune = 1;
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c),
                   TSR_OUT_OF_MEMORY);
  assert_null(c.plan);
  assert_int_equal(f.timed, 0);
  finish(&f, &s, &c);
}

static void test_a_build_that_fails_for_another_cause_is_reported_as_itself(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 1, 0, -1, 1.0f);  // finalize fails: internal error
  add(&f, TSR_CUDA_HEUR_A, 2, 0, 1, 1.0f);
  f.build_error = TSR_INTERNAL;
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  tsr_cuda_engine_choice c;
  tsr_cuda_test_message_clear();
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c),
                   TSR_INTERNAL);
  assert_null(strstr(tsr_cuda_test_message(), "no cuDNN engine fits"));
  assert_int_equal(f.asked[TSR_CUDA_HEUR_B], 0);
  finish(&f, &s, &c);
}

static void test_tf32_allows_tensor_cores_but_not_down_converting_engines(void **state) {
  (void)state;
  fake_cudnn f;
  memset(&f, 0, sizeof(f));
  add(&f, TSR_CUDA_HEUR_A, 2, TSR_CUDA_NOTE_DOWN_CONVERT_INPUTS | TSR_CUDA_NOTE_TENSOR_CORE, 1, 1);
  add(&f, TSR_CUDA_HEUR_A, 3, TSR_CUDA_NOTE_REDUCED_PRECISION_REDUCTION, 1, 1);
  add(&f, TSR_CUDA_HEUR_A, 1, TSR_CUDA_NOTE_TENSOR_CORE, 1, 1);
  tsr_cuda_engine_source s = source_of(&f);
  tsr_cuda_engine_policy p = strict_policy();
  p.forbidden_notes = tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_ALLOW_TF32, 0);
  tsr_cuda_engine_choice c;
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 1);
  finish(&f, &s, &c);
  // Reduced precision allowed: the down-converting engine, ranked first, wins.
  memset(&c, 0, sizeof(c));
  p.forbidden_notes = tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_ALLOW_REDUCED, 0);
  assert_int_equal(tsr_cuda_engine_select(&s, &p, tsr_cuda_test_host(), "conv2d", &c), TSR_OK);
  assert_int_equal(c.engine_id, 2);
  finish(&f, &s, &c);
}

static void test_the_filter_follows_dtype_and_math_mode(void **state) {
  (void)state;
  const uint32_t tc = TSR_CUDA_NOTE_TENSOR_CORE, dc = TSR_CUDA_NOTE_DOWN_CONVERT_INPUTS;
  const uint32_t rpr = TSR_CUDA_NOTE_REDUCED_PRECISION_REDUCTION;
  const uint32_t nd = TSR_CUDA_NOTE_NONDETERMINISTIC;
  uint32_t strict = tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_STRICT, 0);
  assert_int_equal(strict, tc | dc | rpr);
  uint32_t tf32 = tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_ALLOW_TF32, 0);
  assert_int_equal(tf32, dc | rpr);
  assert_int_equal(tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_ALLOW_REDUCED, 0), 0);
  // Tensor cores on float16, bfloat16 and float64 are not TF32; converting
  // their inputs down still needs ALLOW_REDUCED.
  assert_int_equal(tsr_cuda_engine_notes_forbidden(TSR_FLOAT16, TSR_MATH_STRICT, 0), dc | rpr);
  assert_int_equal(tsr_cuda_engine_notes_forbidden(TSR_BFLOAT16, TSR_MATH_ALLOW_TF32, 0), dc | rpr);
  assert_int_equal(tsr_cuda_engine_notes_forbidden(TSR_FLOAT64, TSR_MATH_STRICT, 0), dc | rpr);
  assert_int_equal(tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, TSR_MATH_ALLOW_REDUCED, 1), nd);
  // An unknown math mode is treated as strict.
  assert_int_equal(tsr_cuda_engine_notes_forbidden(TSR_FLOAT32, 7, 0), tc | dc | rpr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mode_a_first_finalising_candidate_wins),
      cmocka_unit_test(test_mode_b_only_when_a_gives_nothing_that_finalises),
      cmocka_unit_test(test_fallback_list_after_a_and_b),
      cmocka_unit_test(test_strict_fp32_skips_tensor_core_engines),
      cmocka_unit_test(test_tf32_allows_tensor_cores_but_not_down_converting_engines),
      cmocka_unit_test(test_the_filter_follows_dtype_and_math_mode),
      cmocka_unit_test(test_determinism_refuses_with_the_tally_when_nothing_fits),
      cmocka_unit_test(test_autotune_times_the_candidates_and_keeps_the_fastest),
      cmocka_unit_test(test_pinned_choice_is_tried_first_without_timing),
      cmocka_unit_test(test_a_pinned_choice_that_no_longer_builds_times_only_after_preparing),
      cmocka_unit_test(test_a_pinned_choice_that_builds_prepares_nothing),
      cmocka_unit_test(test_a_failed_preparation_is_reported_and_nothing_is_timed),
      cmocka_unit_test(test_a_build_that_fails_for_another_cause_is_reported_as_itself),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
