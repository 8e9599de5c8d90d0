// Measures ref's CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER in
// milliseconds and GFLOP/s through the plugin table: one plan per op, a
// warm-up, then the best and the median of |reps| executions.
//   tsr_cpu_bench_conv [n c h w o k] [threads...]
// Default: the canonical CNN's second layer (64 images, 32 -> 64 channels,
// 13x13, 3x3, stride 1, no padding -> 11x11), float32, on 1 and 2 threads.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera/ops.h"
#include "bench_clock.h"
#include "test_host.h"

static tsr_tensor_desc desc_make(const tsr_plugin_api *api, int64_t n0, int64_t n1, int64_t n2,
                                 int64_t n3) {
  tsr_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = TSR_FLOAT32;
  d.rank = 4;
  const int64_t sizes[4] = {n0, n1, n2, n3};
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = stride;
    stride *= sizes[i];
  }
  d.alignment = 64;
  d.alias_group = -1;
  if (api->buffer_alloc(0, (uint64_t)stride * 4, NULL, &d.buffer) != TSR_OK) return d;
  void *p;
  api->buffer_host_ptr_get(d.buffer, &p);
  for (int64_t i = 0; i < stride; ++i) ((float *)p)[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
  return d;
}

static int bench(const tsr_plugin_api *api, int32_t op, tsr_tensor_desc *in, int32_t num_in,
                 tsr_tensor_desc *out, double flops, int32_t threads) {
  tsr_conv2d_attrs attrs = {sizeof(attrs), {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1,
                            TSR_ACTIVATION_NONE, 0};
  tsr_op_signature sig = {sizeof(sig), op, 0, num_in, 1, in, out, &attrs, TSR_MATH_STRICT, 0};
  tsr_plugin_plan *plan;
  if (api->plan_create(&sig, &plan) != TSR_OK) {
    fprintf(stderr, "plan_create: %s\n", tsr_test_host_error_get());
    return 1;
  }
  tsr_plan_info info = {.struct_size = sizeof(info)};
  api->plan_info_get(plan, &info);
  tsr_exec_args args = {.struct_size = sizeof(args), .num_inputs = num_in, .num_outputs = 1,
                        .inputs = in, .outputs = out};
  tsr_plugin_buffer *ws = NULL;
  if (info.workspace_bytes > 0) {
    api->buffer_alloc(0, info.workspace_bytes, NULL, &ws);
    args.workspace = ws;
    args.workspace_bytes = info.workspace_bytes;
  }
  enum { REPS = 30 };
  double times[REPS], cpu[REPS];
  for (int w = 0; w < 3; ++w) api->plan_execute(plan, &args, NULL);
  for (int r = 0; r < REPS; ++r) {
    const double c0 = cpu_s();
    const double t0 = now_s();
    if (api->plan_execute(plan, &args, NULL) != TSR_OK) {
      fprintf(stderr, "plan_execute: %s\n", tsr_test_host_error_get());
      return 1;
    }
    times[r] = now_s() - t0;
    cpu[r] = cpu_s() - c0;
  }
  qsort(times, REPS, sizeof(double), cmp_double);
  qsort(cpu, REPS, sizeof(double), cmp_double);
  printf("%-23s threads %d  wall: best %7.2f ms (%5.1f GFLOP/s) median %7.2f ms (%5.1f GFLOP/s);"
         "  CPU: best %7.2f ms (%5.1f GFLOP/s per CPU-second)  workspace %llu KiB\n",
         tsr_op_name(op), (int)threads, times[0] * 1e3, flops / times[0] * 1e-9,
         times[REPS / 2] * 1e3, flops / times[REPS / 2] * 1e-9, cpu[0] * 1e3,
         flops / cpu[0] * 1e-9, (unsigned long long)(info.workspace_bytes / 1024));
  api->plan_destroy(plan);
  if (ws != NULL) api->buffer_free(ws, NULL);
  return 0;
}

int main(int argc, char **argv) {
  int64_t n = 64, c = 32, h = 13, w = 13, o = 64, k = 3;
  int argi = 1;
  if (argc >= 7) {
    n = atoll(argv[1]);
    c = atoll(argv[2]);
    h = atoll(argv[3]);
    w = atoll(argv[4]);
    o = atoll(argv[5]);
    k = atoll(argv[6]);
    argi = 7;
  }
  int32_t thread_counts[8] = {1, 2};
  int num_threads = 2;
  if (argi < argc) {
    num_threads = 0;
    for (; argi < argc && num_threads < 8; ++argi) thread_counts[num_threads++] = atoi(argv[argi]);
  }
  const int64_t oh = h - k + 1, ow = w - k + 1;
  const double flops = 2.0 * (double)n * (double)o * (double)(oh * ow) * (double)(c * k * k);
  printf("conv2d float32: %lld x %lld x %lldx%lld -> %lld x %lldx%lld, kernel %lldx%lld: %.1f MFLOP\n",
         (long long)n, (long long)c, (long long)h, (long long)w, (long long)o, (long long)oh,
         (long long)ow, (long long)k, (long long)k, flops * 1e-6);
  int failed = 0;
  for (int t = 0; t < num_threads; ++t) {
    const tsr_plugin_api *api = tsr_test_host_start(thread_counts[t]);
    if (api == NULL) return 1;
    tsr_tensor_desc x = desc_make(api, n, c, h, w), wt = desc_make(api, o, c, k, k);
    tsr_tensor_desc y = desc_make(api, n, o, oh, ow);
    tsr_tensor_desc fwd_in[] = {x, wt}, data_in[] = {y, wt}, filter_in[] = {y, x};
    failed |= bench(api, TSR_OP_CONV2D, fwd_in, 2, &y, flops, thread_counts[t]);
    failed |= bench(api, TSR_OP_CONV2D_BACKWARD_DATA, data_in, 2, &x, flops, thread_counts[t]);
    failed |= bench(api, TSR_OP_CONV2D_BACKWARD_FILTER, filter_in, 2, &wt, flops,
                    thread_counts[t]);
    api->buffer_free(x.buffer, NULL);
    api->buffer_free(wt.buffer, NULL);
    api->buffer_free(y.buffer, NULL);
  }
  tsr_test_host_stop();
  return failed;
}
