// Measures the CPU-kernel library's compute kernels on one thread against
// the limit each is bound by, both measured in this run (the machine's
// speed drifts, so a figure from another minute is no ceiling):
//   gemm micro-kernel  one register tile (geometry: mr x nr) accumulated over
//                      kc = 64, 128, 256 from packed slivers that stay in L1
//                      (at most 44 KiB for kc 256 with AVX-512's 12 x 32),
//                      against the one-thread FMA peak (bench/limits);
//   conv forward /     the direct kernels as whole ops through the plugin
//   filter gradient    table (weight transposes, tile stores and float64
//                      sums included) on the canonical CNN's second layer
//                      (8 images, 32 -> 64 channels, 13x13, 3x3) and on an
//                      L1-resident layer (1 image, 8 -> 32), against the FMA
//                      peak;
//   gemv               MATMUL at batch 1 with bias and RELU fused, which
//                      streams B once, against a vector sum over a buffer of
//                      B's size, read the same way (the memory speed of
//                      the cache level B lives in).
// Every figure is the best of several timed batches; the FMA peak is the
// best of the measurements before and after the kernels.
//   tsr_cpu_bench_kernels
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "fma_peak.h"
#include "matmul.h"
#include "tessera/ops.h"
#include "test_host.h"

// Seconds per call of |fn(arg)|: batches of calls of about 20 ms, the best
// of |batches|.
static double best_per_call(void (*fn)(void *), void *arg, int batches) {
  long calls = 1;
  for (;;) {
    const double t0 = now_s();
    for (long i = 0; i < calls; ++i) fn(arg);
    if (now_s() - t0 > 0.02 || calls > (1L << 30)) break;
    calls *= 2;
  }
  double best = 1e30;
  for (int b = 0; b < batches; ++b) {
    const double t0 = now_s();
    for (long i = 0; i < calls; ++i) fn(arg);
    const double t = (now_s() - t0) / (double)calls;
    if (t < best) best = t;
  }
  return best;
}

static double fma_peak(void) {
  double gflops = 0;
  const char *isa = NULL;
  char message[256];
  if (!bench_fma_peak_measure(1, &gflops, &isa, message, sizeof(message))) {
    fprintf(stderr, "FMA peak: %s\n", message);
    return 0;
  }
  return gflops;
}

typedef struct tile_arg {
  int64_t kc, nr;
  const float *a, *b;
  float *c;
} tile_arg;

static void tile_run(void *p) {
  tile_arg *t = p;
  tsr_cpu_gemm_tile_accumulate_f32(t->kc, t->a, t->b, t->c, t->nr);
}

typedef struct plan_arg {
  const tsr_plugin_api *api;
  tsr_plugin_plan *plan;
  tsr_exec_args args;
} plan_arg;

static void plan_run(void *p) {
  plan_arg *r = p;
  r->api->plan_execute(r->plan, &r->args, NULL);
}

typedef struct sum_arg {
  const float *x;
  int64_t n;
  float out;
} sum_arg;

// Where the reference reads' sums go (volatile: the compiler keeps them).
static volatile float g_sink;

// The reference read: eight independent sums of 64-byte vectors (zmm
// registers with AVX-512, pairs of ymm with AVX2), so the loads, not the
// adds' latency, bound it.
typedef float sum_vec __attribute__((vector_size(64)));

static void sum_run(void *p) {
  sum_arg *s = p;
  sum_vec acc[8] = {{0}};
  int64_t i = 0;
  for (; i + 128 <= s->n; i += 128) {
    for (int l = 0; l < 8; ++l) {
      sum_vec v;
      memcpy(&v, s->x + i + 16 * l, sizeof(v));
      acc[l] += v;
    }
  }
  float total = 0;
  for (int l = 0; l < 8; ++l) {
    for (int j = 0; j < 16; ++j) total += acc[l][j];
  }
  s->out += total;
}

static tsr_tensor_desc desc_make(const tsr_plugin_api *api, int rank, const int64_t *sizes) {
  tsr_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = TSR_FLOAT32;
  d.rank = rank;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = stride;
    stride *= sizes[i];
  }
  d.alignment = 64;
  d.alias_group = -1;
  if (api->buffer_alloc(0, (uint64_t)stride * 4, NULL, &d.buffer) != TSR_OK) {
    fprintf(stderr, "alloc: %s\n", tsr_test_host_error_get());
    exit(1);
  }
  void *p;
  api->buffer_host_ptr_get(d.buffer, &p);
  for (int64_t i = 0; i < stride; ++i) ((float *)p)[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
  return d;
}

// Plans |op| and returns seconds per execution (best batch), with the
// engine's name in |out_engine|.
static double plan_time(const tsr_plugin_api *api, int32_t op, const void *attrs,
                        tsr_tensor_desc *in, int32_t num_in, tsr_tensor_desc *out,
                        const char **out_engine) {
  tsr_op_signature sig = {sizeof(sig), op, 0, num_in, 1, in, out, attrs, TSR_MATH_STRICT, 0};
  plan_arg r = {api, NULL, {0}};
  if (api->plan_create(&sig, &r.plan) != TSR_OK) {
    fprintf(stderr, "plan_create %s: %s\n", tsr_op_name(op), tsr_test_host_error_get());
    exit(1);
  }
  tsr_plan_info info = {.struct_size = sizeof(info)};
  api->plan_info_get(r.plan, &info);
  *out_engine = info.engine;
  r.args = (tsr_exec_args){.struct_size = sizeof(r.args), .num_inputs = num_in,
                           .num_outputs = 1, .inputs = in, .outputs = out};
  tsr_plugin_buffer *ws = NULL;
  if (info.workspace_bytes > 0) {
    api->buffer_alloc(0, info.workspace_bytes, NULL, &ws);
    r.args.workspace = ws;
    r.args.workspace_bytes = info.workspace_bytes;
  }
  if (api->plan_execute(r.plan, &r.args, NULL) != TSR_OK) {
    fprintf(stderr, "plan_execute %s: %s\n", tsr_op_name(op), tsr_test_host_error_get());
    exit(1);
  }
  const double t = best_per_call(plan_run, &r, 7);
  api->plan_destroy(r.plan);
  if (ws != NULL) api->buffer_free(ws, NULL);
  return t;
}

static void descs_free(const tsr_plugin_api *api, tsr_tensor_desc *d, int count) {
  for (int i = 0; i < count; ++i) api->buffer_free(d[i].buffer, NULL);
}

int main(void) {
  const tsr_plugin_api *api = tsr_test_host_start(1);
  if (api == NULL) return 1;
  const double peak_before = fma_peak();
  const tsr_cpu_gemm_geometry *g = &tsr_cpu_gemm_f32_geometry;
  printf("float32, one thread; FMA peak measured below. Register tile %lld x %lld.\n",
         (long long)g->mr, (long long)g->nr);

  // The micro-kernel: slivers of the deepest kc, 64-byte aligned.
  const int64_t kc_max = 256;
  float *a = aligned_alloc(64, (size_t)(kc_max * g->mr) * sizeof(float));
  float *b = aligned_alloc(64, (size_t)(kc_max * g->nr) * sizeof(float));
  float *c = aligned_alloc(64, (size_t)(g->mr * g->nr) * sizeof(float));
  if (a == NULL || b == NULL || c == NULL) return 1;
  for (int64_t i = 0; i < kc_max * g->mr; ++i) a[i] = 1e-3f * (float)(i % 7);
  for (int64_t i = 0; i < kc_max * g->nr; ++i) b[i] = 1e-3f * (float)(i % 5);
  memset(c, 0, (size_t)(g->mr * g->nr) * sizeof(float));
  double tile_gflops[3];
  const int64_t kcs[3] = {64, 128, 256};
  for (int i = 0; i < 3; ++i) {
    tile_arg t = {kcs[i], g->nr, a, b, c};
    const double s = best_per_call(tile_run, &t, 9);
    tile_gflops[i] = 2.0 * (double)(g->mr * g->nr * kcs[i]) / s * 1e-9;
  }

  // The direct conv kernels: on the CNN's second layer (8 images, 32 -> 64
  // channels, 13x13 -> 11x11, 3x3), whose weights (36 KiB per 32 output
  // channels) and images (21 KiB) do not fit L1 together, and on one image
  // of 8 -> 32 channels, whose operands do (9 + 5 KiB).
  const int64_t conv_shapes[2][3] = {{8, 32, 64}, {1, 8, 32}};  // images, in, out
  double conv_gflops[2][2];
  const char *conv_engine[2][2];
  tsr_conv2d_attrs cattrs = {sizeof(cattrs), {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1,
                             TSR_ACTIVATION_NONE, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t n = conv_shapes[i][0], ci = conv_shapes[i][1], co = conv_shapes[i][2];
    const int64_t xs[4] = {n, ci, 13, 13}, wsz[4] = {co, ci, 3, 3}, ys[4] = {n, co, 11, 11};
    const double flops = 2.0 * (double)(n * co * 11 * 11 * ci * 9);
    tsr_tensor_desc fin[2] = {desc_make(api, 4, xs), desc_make(api, 4, wsz)};
    tsr_tensor_desc fout[1] = {desc_make(api, 4, ys)};
    conv_gflops[i][0] =
        flops / plan_time(api, TSR_OP_CONV2D, &cattrs, fin, 2, fout, &conv_engine[i][0]) * 1e-9;
    tsr_tensor_desc bin[2] = {fout[0], fin[0]};
    tsr_tensor_desc bout[1] = {desc_make(api, 4, wsz)};
    conv_gflops[i][1] = flops /
                        plan_time(api, TSR_OP_CONV2D_BACKWARD_FILTER, &cattrs, bin, 2, bout,
                                  &conv_engine[i][1]) *
                        1e-9;
    descs_free(api, fin, 2);
    descs_free(api, fout, 1);
    descs_free(api, bout, 1);
  }

  // Batch-1 products with bias and RELU, and a read of B's bytes.
  const int64_t shapes[3][2] = {{784, 512}, {512, 512}, {4096, 4096}};
  double gemv_s[3], read_s[3];
  const char *gemv_engine[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t k = shapes[i][0], n = shapes[i][1];
    const int64_t asz[2] = {1, k}, bsz[2] = {k, n}, biassz[2] = {1, n}, csz[2] = {1, n};
    tsr_tensor_desc in[3] = {desc_make(api, 2, asz), desc_make(api, 2, bsz),
                             desc_make(api, 2, biassz)};
    tsr_tensor_desc out[1] = {desc_make(api, 2, csz)};
    tsr_matmul_attrs mattrs = {sizeof(mattrs), 1.0, 0.0, TSR_ACTIVATION_RELU, 1};
    gemv_s[i] = plan_time(api, TSR_OP_MATMUL, &mattrs, in, 3, out, &gemv_engine[i]);
    void *pb;
    api->buffer_host_ptr_get(in[1].buffer, &pb);
    sum_arg s = {pb, k * n, 0};
    read_s[i] = best_per_call(sum_run, &s, 7);
    g_sink += s.out;  // the sums are used, so the reads stay
    descs_free(api, in, 3);
    descs_free(api, out, 1);
  }
  const double peak_after = fma_peak();
  const double peak = peak_before > peak_after ? peak_before : peak_after;
  printf("FMA peak, one thread: %.1f GFLOP/s (before %.1f, after the kernels %.1f)\n", peak,
         peak_before, peak_after);
  for (int i = 0; i < 3; ++i) {
    printf("gemm micro-kernel  kc %3lld (L1: %5.1f KiB)      %6.1f GFLOP/s  %5.1f%% of peak\n",
           (long long)kcs[i], (double)(kcs[i] * (g->mr + g->nr) * 4) / 1024.0, tile_gflops[i],
           100.0 * tile_gflops[i] / peak);
  }
  for (int i = 0; i < 2; ++i) {
    for (int op = 0; op < 2; ++op) {
      printf("%-18s %lld x %2lld -> %2lld  %-22s %6.1f GFLOP/s  %5.1f%% of peak\n",
             op == 0 ? "conv forward" : "conv filter grad", (long long)conv_shapes[i][0],
             (long long)conv_shapes[i][1], (long long)conv_shapes[i][2], conv_engine[i][op],
             conv_gflops[i][op], 100.0 * conv_gflops[i][op] / peak);
    }
  }
  for (int i = 0; i < 3; ++i) {
    const double bytes = 4.0 * (double)(shapes[i][0] * shapes[i][1]);
    printf("gemv %4lld x %4lld   %-26s %6.1f GB/s of B (read of B's bytes: %6.1f GB/s) "
           "%5.1f%%; %5.1f GFLOP/s\n",
           (long long)shapes[i][0], (long long)shapes[i][1], gemv_engine[i],
           bytes / gemv_s[i] * 1e-9, bytes / read_s[i] * 1e-9, 100.0 * read_s[i] / gemv_s[i],
           2.0 * bytes / 4.0 / gemv_s[i] * 1e-9);
  }
  free(a);
  free(b);
  free(c);
  tsr_test_host_stop();
  return 0;
}
