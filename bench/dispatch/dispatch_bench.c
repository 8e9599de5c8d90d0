// Eager dispatch overhead and ref matmul throughput.
//
//   tsr-dispatch-bench [threads] [dispatch|matmul|all]
//
// (a) dispatch: the median over 21 runs of 100,000 eager ops of the time per
//     op, for tsr_add on two 16-float tensors (result created and released)
//     and for tsr_binary_out into a preallocated output. At 16 elements the
//     kernel is a few nanoseconds, so this is the cost of the SDK + core +
//     plugin call path: shape inference, handle free lists, the plan-cache
//     lookup, storage and stream bookkeeping.
// (b) matmul: ref's 512x512x512 float32 matmul in GFLOP/s (2*M*N*K per
//     call), median of 9 timed calls after 2 warm-up calls.
//
// The context's thread count is |threads| (default 1). The thread pool is
// process-wide, so compare thread counts with one process per count.
// The plugin is TSR_BENCH_PLUGIN if set (device: TSR_DEVICE or the best),
// else the ref plugin of this build.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_protocol.h"
#include "tessera/tessera.h"

#ifndef TSR_BENCH_REF_PATH
#define TSR_BENCH_REF_PATH NULL
#endif

#define RUNS 21
#define OPS_PER_RUN 100000
#define MATMUL_SIZE 512
#define MATMUL_RUNS 9

static int fail(const char *what) {
  fprintf(stderr, "tsr-dispatch-bench: %s: %s\n", what, tsr_last_error());
  return 1;
}

static int bench_dispatch(tsr_device *device) {
  const int64_t sizes[1] = {16};
  float av[16], bv[16], check[16];
  for (int i = 0; i < 16; ++i) {
    av[i] = (float)i;
    bv[i] = 1.0f;
  }
  tsr_tensor *a = tsr_tensor_from_host(device, TSR_FLOAT32, 1, sizes, av);
  tsr_tensor *b = tsr_tensor_from_host(device, TSR_FLOAT32, 1, sizes, bv);
  tsr_tensor *out = tsr_tensor_empty(device, TSR_FLOAT32, 1, sizes);
  if (a == NULL || b == NULL || out == NULL) return fail("tensors");

  double add_ns[RUNS], out_ns[RUNS];
  // Warm-up: plans, free lists, the allocator's cache.
  for (int i = 0; i < 10000; ++i) {
    tsr_tensor *c = tsr_add(a, b);
    if (c == NULL) return fail("tsr_add");
    tsr_tensor_release(c);
    if (tsr_binary_out(out, a, b, TSR_BINARY_ADD, 1.0) != TSR_OK) return fail("tsr_binary_out");
  }
  for (int r = 0; r < RUNS; ++r) {
    double t0 = bench_now();
    for (int i = 0; i < OPS_PER_RUN; ++i) {
      tsr_tensor *c = tsr_add(a, b);
      tsr_tensor_release(c);
    }
    double t1 = bench_now();
    int failed = 0;
    for (int i = 0; i < OPS_PER_RUN; ++i) {
      failed |= tsr_binary_out(out, a, b, TSR_BINARY_ADD, 1.0) != TSR_OK;
    }
    double t2 = bench_now();
    if (failed) return fail("binary_out");
    add_ns[r] = (t1 - t0) * 1e9 / OPS_PER_RUN;
    out_ns[r] = (t2 - t1) * 1e9 / OPS_PER_RUN;
  }
  if (tsr_device_synchronize(device) != TSR_OK) return fail("synchronize");
  if (tsr_context_status(tsr_device_context_get(device)) != TSR_OK) {
    fprintf(stderr, "tsr-dispatch-bench: an op failed: %s\n",
            tsr_context_error_message(tsr_device_context_get(device)));
    return 1;
  }
  if (tsr_tensor_to_host(out, check, sizeof(check)) != TSR_OK) return fail("to_host");
  for (int i = 0; i < 16; ++i) {
    if (check[i] != (float)i + 1.0f) {
      fprintf(stderr, "tsr-dispatch-bench: wrong sum at %d: %g\n", i, (double)check[i]);
      return 1;
    }
  }
  double add_min = add_ns[0], out_min = out_ns[0];
  for (int r = 1; r < RUNS; ++r) {
    if (add_ns[r] < add_min) add_min = add_ns[r];
    if (out_ns[r] < out_min) out_min = out_ns[r];
  }
  printf("dispatch  tsr_add(16 floats) + release     median %8.1f ns/op  (min %.1f, %d runs of %d)\n",
         bench_median(add_ns, RUNS), add_min, RUNS, OPS_PER_RUN);
  printf("dispatch  tsr_binary_out(16 floats)        median %8.1f ns/op  (min %.1f, %d runs of %d)\n",
         bench_median(out_ns, RUNS), out_min, RUNS, OPS_PER_RUN);
  tsr_tensor_release(out);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  return 0;
}

static int bench_matmul(tsr_device *device, int32_t threads) {
  const int64_t n = MATMUL_SIZE;
  const int64_t sizes[2] = {n, n};
  float *host = malloc(sizeof(float) * (size_t)(n * n));
  if (host == NULL) return 1;
  uint64_t state = 42;
  for (int64_t i = 0; i < n * n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    host[i] = (float)((double)(state >> 40) / (double)(1ull << 24)) - 0.5f;
  }
  tsr_tensor *a = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, host);
  tsr_tensor *b = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, host);
  if (a == NULL || b == NULL) return fail("matmul tensors");
  double seconds[MATMUL_RUNS];
  for (int r = -2; r < MATMUL_RUNS; ++r) {
    double t0 = bench_now();
    tsr_tensor *c = tsr_matmul(a, b);
    if (c == NULL) return fail("tsr_matmul");
    // Completed work only: read the first row back (to_host orders itself
    // after the matmul; a 2 KiB copy costs next to nothing).
    tsr_tensor *row = tsr_slice(c, 0, 0, 1, 1);
    if (row == NULL || tsr_tensor_to_host(row, host, sizeof(float) * (size_t)n) != TSR_OK) {
      return fail("matmul to_host");
    }
    tsr_tensor_release(row);
    double t1 = bench_now();
    tsr_tensor_release(c);
    if (r >= 0) seconds[r] = t1 - t0;
  }
  double best = seconds[0];
  for (int r = 1; r < MATMUL_RUNS; ++r) best = seconds[r] < best ? seconds[r] : best;
  double flops = 2.0 * (double)n * (double)n * (double)n;
  double med = bench_median(seconds, MATMUL_RUNS);
  printf("matmul    %lldx%lldx%lld float32, %d thread%s   median %8.2f GFLOP/s  (%.2f ms; best %.2f "
         "GFLOP/s)\n",
         (long long)n, (long long)n, (long long)n, threads, threads == 1 ? " " : "s",
         flops / med * 1e-9, med * 1e3, flops / best * 1e-9);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  free(host);
  return 0;
}

int main(int argc, char **argv) {
  int32_t threads = argc > 1 ? (int32_t)atoi(argv[1]) : 1;
  const char *which = argc > 2 ? argv[2] : "all";
  if (threads < 1 || (strcmp(which, "all") != 0 && strcmp(which, "dispatch") != 0 &&
                      strcmp(which, "matmul") != 0)) {
    fprintf(stderr, "usage: %s [threads >= 1] [dispatch|matmul|all]\n", argv[0]);
    return 2;
  }
  // TSR_BENCH_PLUGIN measures another plugin (its best device, or
  // TSR_DEVICE); by default the ref plugin of this build.
  const char *plugin = getenv("TSR_BENCH_PLUGIN");
  const char *device_name = NULL;
  if (plugin == NULL || plugin[0] == '\0') {
    plugin = TSR_BENCH_REF_PATH;
    device_name = "ref";
  }
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = plugin;
  options.flags = plugin != NULL ? TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY : 0;
  options.device = device_name;
  options.num_threads = threads;
  options.fallback = TSR_FALLBACK_DENY;
  tsr_context *context = NULL;
  if (tsr_context_create(&options, &context) != TSR_OK) return fail("tsr_context_create");
  tsr_device *device = tsr_context_default_device(context);
  printf("tsr-dispatch-bench: Tessera %s, device %s, %d thread%s (pool: %d)\n", tsr_version(),
         tsr_device_name(device), threads, threads == 1 ? "" : "s",
         tsr_context_thread_count(context));
  int rc = 0;
  if (strcmp(which, "matmul") != 0) rc |= bench_dispatch(device);
  if (rc == 0 && strcmp(which, "dispatch") != 0) rc |= bench_matmul(device, threads);
  tsr_context_destroy(context);
  return rc;
}
