// tsr-bench-limits: the machine's physical limits for the canonical
// workloads, measured in the same run as Tessera and its peers (protocol:
// bench/common/bench_protocol.h).
//
//   sgemm N   oneDNN's dnnl_sgemm called directly on preallocated n x n
//             row-major float32 matrices: the fp32 matmul peak a vendor
//             library reaches on these cores. Threads: oneDNN's OpenMP
//             runtime, OMP_NUM_THREADS (set by the harness).
//   add_16M   c[i] = a[i] + b[i] over 16M floats, preallocated and touched
//             beforehand, split over TSR_BENCH_THREADS pthreads (default 2):
//             the memory bandwidth floor of an elementwise add (12 bytes
//             per element counted; the write-allocate read of c is not).
//   mlp_train the eight GEMMs of one mlp_train step (784-512-512-10, batch
//             128: three forward products, three weight gradients, two input
//             gradients, 410.8 MFLOP) as dnnl_sgemm calls on preallocated
//             operands: the floor of a step for any implementation whose
//             matrix products are oneDNN's, before a single elementwise op,
//             bias, loss or optimizer update is counted.
//
// With each sgemm and mlp_train batch it also reports the cores' fp32 FMA
// peak (fma_peak.h), measured on TSR_BENCH_THREADS threads right after the
// samples, as extra "fma_peak_gflops": the ceiling no matrix product can
// pass, taken in the same minute as the samples because this machine's
// speed drifts.
//
// Any other workload answers "not yet": it has no limit measured here.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "bench_protocol.h"
#include "fma_peak.h"

#define ADD_COUNT (16 * 1024 * 1024)
#define MAX_THREADS 64

// The mlp_train step's layers: batch, and the widths in, hidden, hidden, out.
#define MLP_BATCH 128
#define MLP_LAYERS 3
static const int64_t k_mlp_width[MLP_LAYERS + 1] = {784, 512, 512, 10};

typedef struct limits {
  int threads;
  int64_t sgemm_n;
  float *a, *b, *c;  // the current workload's buffers, inside:
  void *raw[3];      // their allocations
  int add_ready;
  // mlp_train: per layer l, the input activation act[l] [batch, width[l]],
  // the weight w[l] [width[l+1], width[l]] and its gradient dw[l], and the
  // output gradient dact[l+1] [batch, width[l+1]]; one allocation.
  float *mlp;
  float *act[MLP_LAYERS + 1], *dact[MLP_LAYERS + 1], *w[MLP_LAYERS], *dw[MLP_LAYERS];
} limits;

static void buffers_free(limits *l) {
  for (int i = 0; i < 3; ++i) {
    free(l->raw[i]);
    l->raw[i] = NULL;
  }
  l->a = l->b = l->c = NULL;
  l->sgemm_n = 0;
  l->add_ready = 0;
  free(l->mlp);
  l->mlp = NULL;
}

static int mlp_alloc(limits *l) {
  buffers_free(l);
  size_t total = 0;
  for (int i = 0; i <= MLP_LAYERS; ++i) total += 2 * (size_t)(MLP_BATCH * k_mlp_width[i]);
  for (int i = 0; i < MLP_LAYERS; ++i) total += 2 * (size_t)(k_mlp_width[i] * k_mlp_width[i + 1]);
  // Every matrix starts on a 64-byte boundary: 16 floats of slack each.
  total += 16 * (2 * (MLP_LAYERS + 1) + 2 * MLP_LAYERS);
  l->mlp = aligned_alloc(64, (total * sizeof(float) + 63) & ~(size_t)63);
  if (l->mlp == NULL) return 0;
  bench_fill_random(l->mlp, total, 3);
  float *next = l->mlp;
  for (int i = 0; i <= MLP_LAYERS; ++i) {
    const size_t n = (size_t)(MLP_BATCH * k_mlp_width[i]);
    l->act[i] = next;
    l->dact[i] = next + ((n + 15) & ~(size_t)15);
    next = l->dact[i] + ((n + 15) & ~(size_t)15);
  }
  for (int i = 0; i < MLP_LAYERS; ++i) {
    const size_t n = (size_t)(k_mlp_width[i] * k_mlp_width[i + 1]);
    l->w[i] = next;
    l->dw[i] = next + ((n + 15) & ~(size_t)15);
    next = l->dw[i] + ((n + 15) & ~(size_t)15);
  }
  return 1;
}

// One step's GEMMs, row-major as a Linear layer stores its weight [out, in]:
//   forward  act[l+1] = act[l] w[l]^T            (batch x out x in)
//   weights  dw[l]    = dact[l+1]^T act[l]       (out x in x batch)
//   inputs   dact[l]  = dact[l+1] w[l], l >= 1   (batch x in x out)
static dnnl_status_t mlp_step(limits *l) {
  const int64_t b = MLP_BATCH;
  dnnl_status_t st = dnnl_success;
  for (int i = 0; i < MLP_LAYERS && st == dnnl_success; ++i) {
    const int64_t in = k_mlp_width[i], out = k_mlp_width[i + 1];
    st = dnnl_sgemm('N', 'T', b, out, in, 1.0f, l->act[i], in, l->w[i], in, 0.0f, l->act[i + 1],
                    out);
  }
  for (int i = MLP_LAYERS - 1; i >= 0 && st == dnnl_success; --i) {
    const int64_t in = k_mlp_width[i], out = k_mlp_width[i + 1];
    st = dnnl_sgemm('T', 'N', out, in, b, 1.0f, l->dact[i + 1], out, l->act[i], in, 0.0f,
                    l->dw[i], in);
    if (st == dnnl_success && i > 0) {
      st = dnnl_sgemm('N', 'N', b, in, out, 1.0f, l->dact[i + 1], out, l->w[i], in, 0.0f,
                      l->dact[i], in);
    }
  }
  return st;
}

// Each buffer starts at a different offset within its page (0, 1 KiB, 2 KiB):
// streams whose addresses agree in their low 12 bits alias in the load/store
// unit (4K aliasing) and cost the add loop a quarter of its bandwidth.
static int buffers_alloc(limits *l, size_t count) {
  buffers_free(l);
  float **bufs[3] = {&l->a, &l->b, &l->c};
  const size_t bytes = (count * sizeof(float) + 2 * 4096 - 1) & ~(size_t)4095;
  for (int i = 0; i < 3; ++i) {
    l->raw[i] = aligned_alloc(4096, bytes);
    if (l->raw[i] == NULL) {
      buffers_free(l);
      return 0;
    }
    *bufs[i] = (float *)((char *)l->raw[i] + 1024 * i);
  }
  bench_fill_random(l->a, count, 1);
  bench_fill_random(l->b, count, 2);
  memset(l->c, 0, count * sizeof(float));  // touched: no page faults while timed
  return 1;
}

typedef struct add_slice {
  const float *a, *b;
  float *c;
  size_t begin, end;
} add_slice;

// The loop the compiler vectorizes; bandwidth bound at this size.
static void *add_slice_run(void *arg) {
  add_slice *s = arg;
  const float *restrict a = s->a;
  const float *restrict b = s->b;
  float *restrict c = s->c;
  for (size_t i = s->begin; i < s->end; ++i) c[i] = a[i] + b[i];
  return NULL;
}

static int add_run(limits *l) {
  pthread_t tids[MAX_THREADS];
  add_slice slices[MAX_THREADS];
  const size_t chunk = (ADD_COUNT / (size_t)l->threads + 15) & ~(size_t)15;
  for (int t = 0; t < l->threads; ++t) {
    size_t begin = chunk * (size_t)t, end = begin + chunk;
    slices[t] = (add_slice){l->a, l->b, l->c, begin < ADD_COUNT ? begin : ADD_COUNT,
                            end < ADD_COUNT ? end : ADD_COUNT};
  }
  for (int t = 1; t < l->threads; ++t) {
    if (pthread_create(&tids[t], NULL, add_slice_run, &slices[t]) != 0) return 0;
  }
  add_slice_run(&slices[0]);
  for (int t = 1; t < l->threads; ++t) pthread_join(tids[t], NULL);
  return 1;
}

// One sgemm, one add or one step's GEMMs; 0 with |message| set on failure.
static int limits_iterate(limits *l, int is_sgemm, int is_mlp, char *message, size_t size) {
  if (is_mlp) {
    dnnl_status_t status = mlp_step(l);
    if (status != dnnl_success) {
      snprintf(message, size, "mlp_train: dnnl_sgemm: status %d", (int)status);
      return 0;
    }
  } else if (is_sgemm) {
    const int64_t n = l->sgemm_n;
    dnnl_status_t status = dnnl_sgemm('N', 'N', n, n, n, 1.0f, l->a, n, l->b, n, 0.0f, l->c, n);
    if (status != dnnl_success) {
      snprintf(message, size, "dnnl_sgemm: status %d", (int)status);
      return 0;
    }
  } else if (!add_run(l)) {
    snprintf(message, size, "add_16M: pthread_create failed");
    return 0;
  }
  return 1;
}

static bench_result limits_run(void *user, const bench_request *request, double *out_samples,
                               char *message, size_t size) {
  limits *l = user;
  const int is_sgemm = strcmp(request->workload, "sgemm") == 0;
  const int is_add = strcmp(request->workload, "add_16M") == 0;
  const int is_mlp = strcmp(request->workload, "mlp_train") == 0;
  if (!is_sgemm && !is_add && !is_mlp) {
    snprintf(message, size, "no physical limit is measured for %s", request->workload);
    return BENCH_NOT_YET;
  }
  const int64_t n = request->arg;
  if (is_sgemm && (n < 1 || n > 16384)) {
    snprintf(message, size, "sgemm: size %lld is out of range", (long long)n);
    return BENCH_ERROR;
  }
  if (is_sgemm && l->sgemm_n != n) {
    if (!buffers_alloc(l, (size_t)(n * n))) {
      snprintf(message, size, "sgemm: out of memory for n = %lld", (long long)n);
      return BENCH_ERROR;
    }
    l->sgemm_n = n;
  } else if (is_add && !l->add_ready) {
    if (!buffers_alloc(l, ADD_COUNT)) {
      snprintf(message, size, "add_16M: out of memory");
      return BENCH_ERROR;
    }
    l->add_ready = 1;
  } else if (is_mlp && l->mlp == NULL) {
    if (!mlp_alloc(l)) {
      snprintf(message, size, "mlp_train: out of memory");
      return BENCH_ERROR;
    }
  }
  for (int32_t i = 0; i < request->warmup; ++i) {
    if (!limits_iterate(l, is_sgemm, is_mlp, message, size)) return BENCH_ERROR;
  }
  for (int32_t s = 0; s < request->samples; ++s) {
    double t0 = bench_now();
    for (int64_t i = 0; i < request->inner; ++i) {
      if (!limits_iterate(l, is_sgemm, is_mlp, message, size)) return BENCH_ERROR;
    }
    out_samples[s] = (bench_now() - t0) / (double)request->inner;
  }
  // One entry checked, so that a failed call is never reported as a peak.
  if (is_mlp) {
    // The last product: dw[0][0][0] = sum over the batch of dact[1][.][0] act[0][.][0].
    double want = 0.0;
    for (int64_t k = 0; k < MLP_BATCH; ++k) {
      want += (double)l->dact[1][k * k_mlp_width[1]] * l->act[0][k * k_mlp_width[0]];
    }
    double got = l->dw[0][0], err = got > want ? got - want : want - got;
    if (err > 1e-3 * MLP_BATCH) {
      snprintf(message, size, "mlp_train: dw[0][0] is %g, float64 reference %g", got, want);
      return BENCH_ERROR;
    }
  } else if (is_sgemm) {
    double want = 0.0;
    for (int64_t k = 0; k < n; ++k) want += (double)l->a[k] * l->b[k * n];
    double got = l->c[0], err = got > want ? got - want : want - got;
    if (err > 1e-3 * (double)n) {
      snprintf(message, size, "dnnl_sgemm: c[0][0] is %g, float64 reference %g", got, want);
      return BENCH_ERROR;
    }
  } else if (l->c[ADD_COUNT - 1] != l->a[ADD_COUNT - 1] + l->b[ADD_COUNT - 1]) {
    snprintf(message, size, "add_16M: wrong sum");
    return BENCH_ERROR;
  }
  if (is_mlp || is_sgemm) {
    double gflops = 0.0;
    const char *isa = NULL;
    if (!bench_fma_peak_measure(l->threads, &gflops, &isa, message, size)) return BENCH_ERROR;
    bench_extra_set("fma_peak_gflops", gflops);
  }
  return BENCH_OK;
}

static void limits_info(void *user, FILE *out) {
  limits *l = user;
  const dnnl_version_t *v = dnnl_version();
  char version[64];
  snprintf(version, sizeof(version), "%d.%d.%d", v->major, v->minor, v->patch);
  fputs("\"name\":\"limits\",\"version\":", out);
  bench_json_string(out, version);
  fputs(",\"onednn\":", out);
  bench_json_string(out, version);
  fputs(",\"onednn_hash\":", out);
  bench_json_string(out, v->hash ? v->hash : "");
  fprintf(out, ",\"onednn_cpu_runtime\":%u,\"stream_threads\":%d", v->cpu_runtime, l->threads);
  double gflops = 0.0;
  const char *isa = NULL;
  char why[128];
  fputs(",\"fma_peak_isa\":", out);
  bench_json_string(out, bench_fma_peak_measure(1, &gflops, &isa, why, sizeof(why)) ? isa : "");
  const char *omp = getenv("OMP_NUM_THREADS");
  fputs(",\"omp_num_threads\":", out);
  bench_json_string(out, omp ? omp : "");
}

int main(void) {
  const char *threads_text = getenv("TSR_BENCH_THREADS");
  limits l;
  memset(&l, 0, sizeof(l));
  l.threads = threads_text != NULL && threads_text[0] != '\0' ? atoi(threads_text) : 2;
  if (l.threads < 1 || l.threads > MAX_THREADS) {
    fprintf(stderr, "tsr-bench-limits: TSR_BENCH_THREADS must be in 1..%d\n", MAX_THREADS);
    return 2;
  }
  int rc = bench_serve(limits_run, limits_info, &l);
  buffers_free(&l);
  return rc;
}
