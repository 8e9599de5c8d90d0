// Measures ref's MATMUL in GFLOP/s through the plugin table: one plan, a
// warm-up, then the best and the median of |reps| executions.
//   tsr_cpu_bench_gemm [m n k] [threads...]
// Default: 512 512 512 on 1 and 2 threads, float32 and float64.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera/ops.h"
#include "bench_clock.h"
#include "test_host.h"

static tsr_tensor_desc desc_make(tsr_dtype_t dtype, int64_t rows, int64_t cols,
                                 tsr_plugin_buffer *buffer) {
  tsr_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = dtype;
  d.rank = 2;
  d.sizes[0] = rows;
  d.sizes[1] = cols;
  d.strides[0] = cols;
  d.strides[1] = 1;
  d.alignment = 64;
  d.alias_group = -1;
  d.buffer = buffer;
  return d;
}

static int bench(const tsr_plugin_api *api, tsr_dtype_t dtype, int64_t m, int64_t n, int64_t k,
                 int32_t threads) {
  const size_t elem = dtype == TSR_FLOAT32 ? 4 : 8;
  tsr_plugin_buffer *a, *b, *c, *ws = NULL;
  if (api->buffer_alloc(0, (uint64_t)(m * k) * elem, NULL, &a) != TSR_OK ||
      api->buffer_alloc(0, (uint64_t)(k * n) * elem, NULL, &b) != TSR_OK ||
      api->buffer_alloc(0, (uint64_t)(m * n) * elem, NULL, &c) != TSR_OK) {
    fprintf(stderr, "alloc failed: %s\n", tsr_test_host_error_get());
    return 1;
  }
  void *pa, *pb;
  api->buffer_host_ptr_get(a, &pa);
  api->buffer_host_ptr_get(b, &pb);
  for (int64_t i = 0; i < m * k; ++i) {
    double v = (double)((i * 7919) % 1000) / 1000.0 - 0.5;
    if (dtype == TSR_FLOAT32) ((float *)pa)[i] = (float)v; else ((double *)pa)[i] = v;
  }
  for (int64_t i = 0; i < k * n; ++i) {
    double v = (double)((i * 104729) % 1000) / 1000.0 - 0.5;
    if (dtype == TSR_FLOAT32) ((float *)pb)[i] = (float)v; else ((double *)pb)[i] = v;
  }
  tsr_tensor_desc in[2] = {desc_make(dtype, m, k, a), desc_make(dtype, k, n, b)};
  tsr_tensor_desc out[1] = {desc_make(dtype, m, n, c)};
  tsr_op_signature sig = {sizeof(sig), TSR_OP_MATMUL, 0, 2, 1, in, out, NULL, TSR_MATH_STRICT, 0};
  tsr_plugin_plan *plan;
  if (api->plan_create(&sig, &plan) != TSR_OK) {
    fprintf(stderr, "plan_create: %s\n", tsr_test_host_error_get());
    return 1;
  }
  tsr_plan_info info = {.struct_size = sizeof(info)};
  api->plan_info_get(plan, &info);
  tsr_exec_args args = {.struct_size = sizeof(args), .num_inputs = 2, .num_outputs = 1,
                        .inputs = in, .outputs = out};
  if (info.workspace_bytes > 0) {
    api->buffer_alloc(0, info.workspace_bytes, NULL, &ws);
    args.workspace = ws;
    args.workspace_bytes = info.workspace_bytes;
  }
  const double flops = 2.0 * (double)m * (double)n * (double)k;
  int reps = (int)(3e9 / flops);
  if (reps < 5) reps = 5;
  if (reps > 200) reps = 200;
  double *times = malloc(sizeof(double) * (size_t)reps);
  double *cpu = malloc(sizeof(double) * (size_t)reps);
  for (int w = 0; w < 3; ++w) api->plan_execute(plan, &args, NULL);
  for (int r = 0; r < reps; ++r) {
    double c0 = cpu_s();
    double t0 = now_s();
    if (api->plan_execute(plan, &args, NULL) != TSR_OK) {
      fprintf(stderr, "plan_execute: %s\n", tsr_test_host_error_get());
      return 1;
    }
    times[r] = now_s() - t0;
    cpu[r] = cpu_s() - c0;
  }
  qsort(times, (size_t)reps, sizeof(double), cmp_double);
  qsort(cpu, (size_t)reps, sizeof(double), cmp_double);
  printf("%-7s %5lld x %5lld x %5lld  threads %d  %-17s  wall: best %6.1f median %6.1f GFLOP/s;"
         "  per CPU-second: best %6.1f median %6.1f  (%d reps, workspace %llu KiB)\n",
         dtype == TSR_FLOAT32 ? "float32" : "float64", (long long)m, (long long)n, (long long)k,
         (int)threads, info.engine, flops / times[0] * 1e-9, flops / times[reps / 2] * 1e-9,
         flops / cpu[0] * 1e-9, flops / cpu[reps / 2] * 1e-9, reps,
         (unsigned long long)(info.workspace_bytes / 1024));
  free(times);
  free(cpu);
  api->plan_destroy(plan);
  api->buffer_free(a, NULL);
  api->buffer_free(b, NULL);
  api->buffer_free(c, NULL);
  if (ws != NULL) api->buffer_free(ws, NULL);
  return 0;
}

int main(int argc, char **argv) {
  int64_t m = 512, n = 512, k = 512;
  int argi = 1;
  if (argc >= 4) {
    m = atoll(argv[1]);
    n = atoll(argv[2]);
    k = atoll(argv[3]);
    argi = 4;
  }
  int32_t thread_counts[8] = {1, 2};
  int num_threads = 2;
  if (argi < argc) {
    num_threads = 0;
    for (; argi < argc && num_threads < 8; ++argi) thread_counts[num_threads++] = atoi(argv[argi]);
  }
  int failed = 0;
  for (int t = 0; t < num_threads; ++t) {
    const tsr_plugin_api *api = tsr_test_host_start(thread_counts[t]);
    if (api == NULL) return 1;
    failed |= bench(api, TSR_FLOAT32, m, n, k, thread_counts[t]);
    failed |= bench(api, TSR_FLOAT64, m, n, k, thread_counts[t]);
  }
  tsr_test_host_stop();
  return failed;
}
