// Choosing a cuDNN engine configuration, as plain C over an injected source.
//
// The order is fixed: heuristics mode A first; only when A gives nothing
// that passes the policy and finalises, mode B; then cuDNN's fallback list.
// Within a mode, candidates are tried best first; the policy filters them by
// their numerical notes (tensor-core and down-converting engines in strict
// float32, down-converting ones unless reduced precision is allowed,
// non-deterministic ones when determinism is required). With
// autotune, every candidate of the first productive mode that finalises (up
// to a limit) is timed and the fastest wins. conv.c supplies a source over
// the cuDNN backend API; the unit tests a fake one.
#ifndef TESSERA_PLUGINS_CUDA_ENGINE_SELECT_H_
#define TESSERA_PLUGINS_CUDA_ENGINE_SELECT_H_

#include <stdint.h>

#include "tessera/abi.h"

enum {
  TSR_CUDA_HEUR_A = 0,
  TSR_CUDA_HEUR_B = 1,
  TSR_CUDA_HEUR_FALLBACK = 2,
  TSR_CUDA_HEUR_SOURCE_COUNT = 3,
};

// Numerical notes of an engine, as bits (conv.c maps cuDNN's enum onto them).
enum {
  TSR_CUDA_NOTE_TENSOR_CORE = 1u << 0,
  TSR_CUDA_NOTE_DOWN_CONVERT_INPUTS = 1u << 1,
  TSR_CUDA_NOTE_REDUCED_PRECISION_REDUCTION = 1u << 2,
  TSR_CUDA_NOTE_FFT = 1u << 3,
  TSR_CUDA_NOTE_NONDETERMINISTIC = 1u << 4,
  TSR_CUDA_NOTE_WINOGRAD = 1u << 5,
};

#define TSR_CUDA_ENGINE_MAX_CANDIDATES 32

typedef struct tsr_cuda_engine_source {
  void *ctx;
  // Writes up to |capacity| engine configurations of heuristics |mode|
  // (TSR_CUDA_HEUR_*), best first. Each is owned by the caller until
  // config_release. TSR_OK with a count of 0 when the mode has none.
  tsr_status (*configs_get)(void *ctx, int32_t mode, void **out_configs, int32_t capacity,
                            int32_t *out_count);
  uint32_t (*notes_get)(void *ctx, void *config);  // TSR_CUDA_NOTE_* bits
  int64_t (*engine_id_get)(void *ctx, void *config);
  // Builds and finalises an execution plan: TSR_OK, TSR_UNSUPPORTED when
  // the configuration does not take this problem (the reason kept for
  // last_refusal), or another status, with its message set, when building
  // failed for another cause (which ends the selection with that status).
  tsr_status (*plan_build)(void *ctx, void *config, void **out_plan);
  // Readies what timing needs (scratch operands, a workspace for the largest
  // need among |plans|, a stream to time on). Called once, before the first
  // plan_time of a selection and only when something will be timed, however
  // the selection got there (a pinned choice that no longer builds included):
  // nothing is ever timed without buffers. Its failure ends the selection.
  tsr_status (*timing_prepare)(void *ctx, void *const *plans, int32_t count);
  // Times one execution of |plan| in milliseconds (autotune only; after
  // timing_prepare).
  tsr_status (*plan_time)(void *ctx, void *plan, float *out_ms);
  void (*plan_release)(void *ctx, void *plan);
  void (*config_release)(void *ctx, void *config);
  // Why the last configuration or heuristics mode was refused ("" when none
  // was); static or |ctx|-owned storage. May be NULL.
  const char *(*last_refusal)(void *ctx);
} tsr_cuda_engine_source;

typedef struct tsr_cuda_engine_policy {
  uint32_t forbidden_notes;  // candidates with any of these are skipped
  int autotune;
  int32_t autotune_limit;  // most candidates timed; <= 0 means 8
  // A previous choice to try first (an autotune result cached by plan key):
  // the candidate at |pinned_rank| of mode |pinned_mode|; -1: none.
  int32_t pinned_mode;
  int32_t pinned_rank;
} tsr_cuda_engine_policy;

typedef struct tsr_cuda_engine_choice {
  void *plan;    // owned by the caller: release with the source's plan_release
  int32_t mode;  // TSR_CUDA_HEUR_* it came from
  int32_t rank;  // its position in that mode's list
  int64_t engine_id;
  uint32_t notes;
  float milliseconds;  // autotune's measurement, or -1
  int32_t timed;       // candidates timed
} tsr_cuda_engine_choice;

// "A", "B", "fallback". Static storage. Thread-safe.
const char *tsr_cuda_heur_mode_name(int32_t mode);

// The notes an engine for operands of |dtype| may not have under
// |math_mode| (abi.md 9.6): down-converting inputs and reduced-precision
// reductions only with TSR_MATH_ALLOW_REDUCED, whatever the dtype (a float32
// convolution on float16 inputs is not TF32); tensor cores for float32
// (TF32) only with TSR_MATH_ALLOW_TF32 or ALLOW_REDUCED; non-deterministic
// engines never when |require_determinism|. Thread-safe.
uint32_t tsr_cuda_engine_notes_forbidden(tsr_dtype_t dtype, tsr_math_mode_t math_mode,
                                         int require_determinism);

// Picks an engine for |op_name| (used in messages) from |source| under
// |policy|. TSR_OK with |out_choice| filled; TSR_UNSUPPORTED with a message
// through |host| that counts, per mode, the candidates offered, filtered and
// not finalised, and gives the last refusal's reason; or the source's error
// (a build that failed for another cause than "not supported", a failed
// timing_prepare or plan_time). Thread-safe if the source is.
tsr_status tsr_cuda_engine_select(const tsr_cuda_engine_source *source,
                                  const tsr_cuda_engine_policy *policy, const tsr_host_api *host,
                                  const char *op_name, tsr_cuda_engine_choice *out_choice);

#endif  // TESSERA_PLUGINS_CUDA_ENGINE_SELECT_H_
