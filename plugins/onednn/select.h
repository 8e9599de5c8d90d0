// Choices between candidate engines made by measurement on the machine at
// hand, kept in the host's engine cache (docs/onednn.md, "How an op runs").
//
// A signature class (a string: op, dtype, layout and a bucket of sizes, made
// by route.c) has a few candidates, one of them the cold default (the fixed
// route measured on the machine the plugin was tuned on). The first plan of a
// class looks for a decision in this process's table, then in the engine
// cache; when there is none and timing is allowed it runs every candidate on
// scratch data (a warm-up each, then rounds of one timed run per candidate
// until the medians separate or, after TSR_ONEDNN_SELECT_MIN_ROUNDS rounds,
// TSR_ONEDNN_SELECT_BUDGET_S of timed runs have passed) and keeps the fastest, unless it is within
// TSR_ONEDNN_SELECT_TIE of the default: then the default stays. The decision
// goes into both the table and the engine cache, so the next process starts
// with it.
//
// This module knows nothing of oneDNN: candidates are names and a run
// callback. Plan time only (a mutex guards the table and serialises
// measurements); nothing here is on an execution path.
#ifndef TESSERA_PLUGINS_ONEDNN_SELECT_H_
#define TESSERA_PLUGINS_ONEDNN_SELECT_H_

#include <stdint.h>

#include "tessera/abi.h"

#define TSR_ONEDNN_SELECT_MAX_CANDIDATES 4
// Timed runs per class, all candidates together, after the warm-ups and
// the first TSR_ONEDNN_SELECT_MIN_ROUNDS rounds.
#define TSR_ONEDNN_SELECT_BUDGET_S 0.010
// Timed runs per class when one round of a class costs more than a third of
// TSR_ONEDNN_SELECT_BUDGET_S: the rounds of a 1024^3 product (three
// candidates, 7 ms each) need a dozen to separate a 6% difference on a
// shared VM, where three rounds picked the slower candidate. While a round
// costs under 0.4 of this, each timed run of such a class follows an untimed
// one of the same candidate (select.c says why).
#define TSR_ONEDNN_SELECT_LONG_BUDGET_S 0.250
// A class whose default takes longer than this for a run (the second, when
// the warm-up did) is not timed: three rounds of every candidate would cost
// seconds. Below it, a long class gets the first rounds only (the budget is
// spent by then): a 2048^3 product, three candidates, about 0.8 s once per
// machine, where the choice between oneDNN's primitive and dnnl_sgemm is
// worth 15%.
#define TSR_ONEDNN_SELECT_LONG_S 0.100
// A difference of medians below this fraction of the default's is a tie.
#define TSR_ONEDNN_SELECT_TIE 0.03
// Rounds before the medians may count as separated, and at most.
#define TSR_ONEDNN_SELECT_MIN_ROUNDS 3
#define TSR_ONEDNN_SELECT_MAX_ROUNDS 25
// In a class with untimed runs before each timed one (above): untimed
// warm-up runs of each candidate before the first round, and the rounds
// before the medians may count as separated. dnnl_sgemm on a 1024^3 product
// ran its first three or four calls of a process 5-10% slower than the
// rest (it allocates its packing buffers per call, and the C library's
// allocator settles on reusing them only after a few): with one warm-up and
// three rounds, two of six fresh processes picked oneDNN's primitive,
// which ran 3-5% slower than dnnl_sgemm's settled calls.
#define TSR_ONEDNN_SELECT_LONG_WARMUPS 4
#define TSR_ONEDNN_SELECT_LONG_MIN_ROUNDS 5

// Where a plan's choice came from; shown in its engine name (" [default]",
// " [cache]", " [measured]").
typedef enum {
  TSR_ONEDNN_SOURCE_NONE = 0,  // no choice: one candidate only
  TSR_ONEDNN_SOURCE_DEFAULT = 1,
  TSR_ONEDNN_SOURCE_CACHE = 2,
  TSR_ONEDNN_SOURCE_MEASURED = 3,
} tsr_onednn_source_t;

// The engine-name suffix of |source|: "" for NONE. Static text.
const char *tsr_onednn_source_suffix(tsr_onednn_source_t source);

// What TSR_ONEDNN_SELECT asks for: measure (default), cache (decisions from
// the cache or the default, never timed) or default (the cold defaults only).
typedef enum {
  TSR_ONEDNN_SELECT_MEASURE = 0,
  TSR_ONEDNN_SELECT_CACHE_ONLY = 1,
  TSR_ONEDNN_SELECT_DEFAULT_ONLY = 2,
} tsr_onednn_select_mode_t;

// Reads TSR_ONEDNN_SELECT, TSR_ENGINE_CACHE (the core's switch: with the
// cache off nothing is timed, so a choice is never made that the next
// process cannot repeat) and the test hook TSR_ONEDNN_SELECT_TEST_DELAY_US
// ("name=microseconds,...": added to every timed run of the named candidate,
// to the measured time, not as a sleep, so tests need no timing thresholds;
// while it is set, no class is too long to time).
// Malformed values are logged through |host| (may be NULL) and ignored.
// Called by plan settings init; not thread-safe.
void tsr_onednn_select_settings_init(const tsr_host_api *host);
tsr_onednn_select_mode_t tsr_onednn_select_mode_get(void);

// Runs candidate |index| once on the caller's scratch data.
typedef tsr_status (*tsr_onednn_select_run_fn)(void *arg, int32_t index);

typedef struct tsr_onednn_select_class {
  const tsr_host_api *host;  // its engine cache, when it has one (ABI 0.4)
  const char *plugin_key;    // what decisions depend on besides the machine
  const char *class_key;     // printable ASCII, at most TSR_ENGINE_CACHE_CLASS_KEY_MAX bytes
  int32_t count;             // 2 .. TSR_ONEDNN_SELECT_MAX_CANDIDATES
  const char *const *names;  // stable names kept in the cache ("own", "onednn")
  int32_t default_index;
} tsr_onednn_select_class;

// The decision for |cls| from this process's table or the engine cache (a
// value naming no candidate, or malformed, is ignored), into *|out_index|
// with *|out_source| TSR_ONEDNN_SOURCE_CACHE; TSR_NOT_FOUND when there is
// none. Plan time only. Thread-safe.
tsr_status tsr_onednn_select_lookup(const tsr_onednn_select_class *cls, int32_t *out_index,
                                    tsr_onednn_source_t *out_source);

// Decides |cls| by timing: looks it up again under the measurement lock
// (another thread may have measured it meanwhile: source CACHE), else warms
// up and times the candidates through |run| and keeps the result in the
// table and the engine cache (source MEASURED). A candidate whose run fails
// drops out; if the default fails, or the default's warm-up takes longer than
// TSR_ONEDNN_SELECT_LONG_S, the default is kept (source DEFAULT, nothing
// stored). Never call it when timing is not allowed (determinism, the cache
// off, TSR_ONEDNN_SELECT): use the lookup, else the default. Plan time
// only; runs the candidates while holding a process-wide lock. Thread-safe.
tsr_status tsr_onednn_select_measure(const tsr_onednn_select_class *cls,
                                     tsr_onednn_select_run_fn run, void *arg, int32_t *out_index,
                                     tsr_onednn_source_t *out_source);

// For tests: timed runs made by tsr_onednn_select_measure since the process
// started (warm-ups included). Thread-safe.
int64_t tsr_onednn_select_runs_get(void);
// For tests: forgets this process's table, as a new process would.
void tsr_onednn_select_forget_all(void);

#endif  // TESSERA_PLUGINS_ONEDNN_SELECT_H_
