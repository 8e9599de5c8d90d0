// The line protocol every benchmark worker speaks, the C side.
//
// The harness (bench/harness/) starts one worker process per participant and
// configuration and keeps it alive for the whole run, so that it can
// interleave participants batch by batch (A B A B ...) without paying a
// process start per batch. A worker reads one request per line on stdin and
// answers with one JSON object per line on stdout:
//
//   info                                   -> {"ok":true,"info":{...}}
//   run WORKLOAD ARG WARMUP SAMPLES INNER  -> {"ok":true,"samples":[s,...]}
//                                             {"ok":false,"not_yet":true,"reason":"..."}
//                                             {"ok":false,"error":"..."}
//   quit                                   -> (exits)
//
// A batch runs WARMUP untimed iterations, then SAMPLES timed samples of
// INNER iterations each; a sample is the mean time of one iteration, in
// seconds. ARG is the workload's size parameter (sgemm: n), 0 if none.
// bench/peers/protocol.py is the Python side of the same protocol.
#ifndef TESSERA_BENCH_PROTOCOL_H_
#define TESSERA_BENCH_PROTOCOL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_MAX_SAMPLES 1000
#define BENCH_MAX_EXTRAS 4

typedef struct bench_request {
  char workload[64];
  int64_t arg;
  int32_t warmup;
  int32_t samples;
  int64_t inner;
} bench_request;

typedef enum bench_result {
  BENCH_OK = 0,
  BENCH_NOT_YET = 1,  // the participant cannot run this workload (yet); |message| says why
  BENCH_ERROR = 2,    // it should have run and failed; |message| says how
} bench_result;

// Runs one batch of |request|, writing request->samples times (seconds per
// iteration) to |out_samples|. On BENCH_NOT_YET or BENCH_ERROR, writes the
// reason into |message| (|message_size| bytes).
typedef bench_result (*bench_run_fn)(void *user, const bench_request *request,
                                     double *out_samples, char *message, size_t message_size);
// Writes the body of the info object (without braces) to |out|.
typedef void (*bench_info_fn)(void *user, FILE *out);

// Serves requests from stdin until "quit" or end of input. Returns the
// process exit status.
int bench_serve(bench_run_fn run, bench_info_fn info, void *user);

// Reports a number with the current request's samples, under "extra" in the
// reply (fashion_epoch's "test_accuracy", the limits' "fma_peak_gflops").
// |key| must be a string literal (it is kept, not copied); up to
// BENCH_MAX_EXTRAS keys per reply, a repeated key replaces its value. Cleared
// after each reply. Not thread-safe: call from the thread that serves.
void bench_extra_set(const char *key, double value);

// Monotonic time in seconds.
double bench_now(void);

// Sorts |values| ascending in place and returns the middle one (the upper of
// the two middles for an even |count| >= 1). Thread-safe on distinct arrays.
double bench_median(double *values, size_t count);

// Writes |text| as a JSON string literal (with quotes) to |out|.
void bench_json_string(FILE *out, const char *text);

// Deterministic pseudo-random floats in [-0.5, 0.5), reproducible from |seed|.
void bench_fill_random(float *data, size_t count, uint64_t seed);

#endif  // TESSERA_BENCH_PROTOCOL_H_
