// Engine selection order (engine_select.h).
#include "engine_select.h"

#include <stdio.h>
#include <string.h>

const char *tsr_cuda_heur_mode_name(int32_t mode) {
  switch (mode) {
    case TSR_CUDA_HEUR_A:
      return "A";
    case TSR_CUDA_HEUR_B:
      return "B";
    case TSR_CUDA_HEUR_FALLBACK:
      return "fallback";
    default:
      return "unknown";
  }
}

uint32_t tsr_cuda_engine_notes_forbidden(tsr_dtype_t dtype, tsr_math_mode_t math_mode,
                                         int require_determinism) {
  uint32_t notes = 0;
  // TF32 rounds float32 inputs to 10 mantissa bits with float32 accumulation:
  // what ALLOW_TF32 permits. Down-converting engines go further (float16 or
  // bfloat16 inputs), which only ALLOW_REDUCED permits.
  if (math_mode != TSR_MATH_ALLOW_REDUCED) {
    notes |= TSR_CUDA_NOTE_DOWN_CONVERT_INPUTS | TSR_CUDA_NOTE_REDUCED_PRECISION_REDUCTION;
    if (dtype == TSR_FLOAT32 && math_mode != TSR_MATH_ALLOW_TF32)
      notes |= TSR_CUDA_NOTE_TENSOR_CORE;
  }
  if (require_determinism)
    notes |= TSR_CUDA_NOTE_NONDETERMINISTIC;
  return notes;
}

typedef struct tsr_cuda_mode_tally {
  int32_t offered;
  int32_t filtered;
  int32_t not_finalised;
} tsr_cuda_mode_tally;

typedef struct tsr_cuda_candidate {
  void *plan;
  int32_t rank;
  int64_t engine_id;
  uint32_t notes;
} tsr_cuda_candidate;

// Tries the configurations of |mode| in order and keeps up to |want| plans
// that pass the policy and finalise. Releases every configuration.
static tsr_status tsr_cuda_mode_try(const tsr_cuda_engine_source *source,
                                    const tsr_cuda_engine_policy *policy, int32_t mode,
                                    int32_t only_rank, int32_t want, tsr_cuda_candidate *out,
                                    int32_t *out_count, tsr_cuda_mode_tally *tally) {
  void *configs[TSR_CUDA_ENGINE_MAX_CANDIDATES];
  int32_t count = 0;
  *out_count = 0;
  tsr_status status =
      source->configs_get(source->ctx, mode, configs, TSR_CUDA_ENGINE_MAX_CANDIDATES, &count);
  if (status != TSR_OK)
    return status;
  if (count > TSR_CUDA_ENGINE_MAX_CANDIDATES)
    count = TSR_CUDA_ENGINE_MAX_CANDIDATES;
  tally->offered += count;
  int32_t kept = 0;
  for (int32_t i = 0; i < count; ++i) {
    void *config = configs[i];
    if (status != TSR_OK || kept >= want || (only_rank >= 0 && i != only_rank))
      continue;
    uint32_t notes = source->notes_get(source->ctx, config);
    if ((notes & policy->forbidden_notes) != 0) {
      tally->filtered += 1;
      continue;
    }
    void *plan = NULL;
    tsr_status built = source->plan_build(source->ctx, config, &plan);
    if (built == TSR_UNSUPPORTED) {
      tally->not_finalised += 1;
      continue;
    }
    if (built != TSR_OK) {
      status = built;
      continue;
    }
    out[kept].plan = plan;
    out[kept].rank = i;
    out[kept].engine_id = source->engine_id_get(source->ctx, config);
    out[kept].notes = notes;
    kept += 1;
  }
  for (int32_t i = 0; i < count; ++i) source->config_release(source->ctx, configs[i]);
  if (status != TSR_OK) {
    for (int32_t k = 0; k < kept; ++k) source->plan_release(source->ctx, out[k].plan);
    return status;
  }
  *out_count = kept;
  return TSR_OK;
}

static void tsr_cuda_choice_set(tsr_cuda_engine_choice *choice, const tsr_cuda_candidate *c,
                                int32_t mode, float ms, int32_t timed) {
  choice->plan = c->plan;
  choice->mode = mode;
  choice->rank = c->rank;
  choice->engine_id = c->engine_id;
  choice->notes = c->notes;
  choice->milliseconds = ms;
  choice->timed = timed;
}

tsr_status tsr_cuda_engine_select(const tsr_cuda_engine_source *source,
                                  const tsr_cuda_engine_policy *policy, const tsr_host_api *host,
                                  const char *op_name, tsr_cuda_engine_choice *out_choice) {
  memset(out_choice, 0, sizeof(*out_choice));
  out_choice->milliseconds = -1.0f;
  tsr_cuda_mode_tally tally[TSR_CUDA_HEUR_SOURCE_COUNT];
  memset(tally, 0, sizeof(tally));
  tsr_cuda_candidate found[TSR_CUDA_ENGINE_MAX_CANDIDATES];
  int32_t count = 0;
  tsr_status status = TSR_OK;

  if (policy->pinned_mode >= 0 && policy->pinned_mode < TSR_CUDA_HEUR_SOURCE_COUNT &&
      policy->pinned_rank >= 0) {
    tsr_cuda_mode_tally ignored = {0, 0, 0};
    status = tsr_cuda_mode_try(source, policy, policy->pinned_mode, policy->pinned_rank, 1, found,
                               &count, &ignored);
    if (status != TSR_OK)
      return status;
    if (count == 1) {
      tsr_cuda_choice_set(out_choice, &found[0], policy->pinned_mode, -1.0f, 0);
      return TSR_OK;
    }
  }

  int32_t limit = policy->autotune_limit > 0 ? policy->autotune_limit : 8;
  if (limit > TSR_CUDA_ENGINE_MAX_CANDIDATES)
    limit = TSR_CUDA_ENGINE_MAX_CANDIDATES;
  int32_t want = policy->autotune ? limit : 1;
  for (int32_t mode = 0; mode < TSR_CUDA_HEUR_SOURCE_COUNT; ++mode) {
    status = tsr_cuda_mode_try(source, policy, mode, -1, want, found, &count, &tally[mode]);
    if (status != TSR_OK)
      return status;
    if (count == 0)
      continue;
    int32_t best = 0;
    float best_ms = -1.0f;
    int32_t timed = 0;
    if (policy->autotune) {
      // Buffers first, whatever led here: a pinned choice that no longer
      // builds reaches this loop without any having been made.
      void *plans[TSR_CUDA_ENGINE_MAX_CANDIDATES];
      for (int32_t i = 0; i < count; ++i) plans[i] = found[i].plan;
      status = source->timing_prepare(source->ctx, plans, count);
      for (int32_t i = 0; i < count && status == TSR_OK; ++i) {
        float ms = 0.0f;
        status = source->plan_time(source->ctx, found[i].plan, &ms);
        if (status != TSR_OK)
          break;
        timed += 1;
        // Ties keep the heuristics' order.
        if (best_ms < 0.0f || ms < best_ms) {
          best_ms = ms;
          best = i;
        }
      }
    }
    for (int32_t i = 0; i < count; ++i) {
      if (i != best || status != TSR_OK)
        source->plan_release(source->ctx, found[i].plan);
    }
    if (status != TSR_OK)
      return status;
    tsr_cuda_choice_set(out_choice, &found[best], mode, best_ms, timed);
    return TSR_OK;
  }
  if (host == NULL)
    return TSR_UNSUPPORTED;
  const char *refusal = source->last_refusal != NULL ? source->last_refusal(source->ctx) : "";
  return host->error_set(
      host->ctx, TSR_UNSUPPORTED,
      "%s: no cuDNN engine fits: heuristics A offered %d (%d filtered by math mode or "
      "determinism, %d did not finalise), B offered %d (%d filtered, %d did not finalise), "
      "fallback offered %d (%d filtered, %d did not finalise)%s%s",
      op_name, tally[0].offered, tally[0].filtered, tally[0].not_finalised, tally[1].offered,
      tally[1].filtered, tally[1].not_finalised, tally[2].offered, tally[2].filtered,
      tally[2].not_finalised, refusal[0] != '\0' ? "; last refusal: " : "", refusal);
}
