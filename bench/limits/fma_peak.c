// The register-only FMA peak; see fma_peak.h.
#include "fma_peak.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "bench_protocol.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FMA_PEAK_X86 1
#endif

// Twelve chains: two FMA pipes of four cycles' latency need eight
// independent accumulators to stay busy, and twelve leave room for a
// longer latency. 2^19 iterations are ~2 ms per thread with AVX2 at 3 GHz.
#define FMA_CHAINS 12
#define FMA_ITERATIONS (1L << 19)
#define FMA_MAX_THREADS 64

// Every chain starts at its index and adds 0.5 * 0.5 per iteration: exact in
// float32 (i + 2^17 < 2^24), so the result is checked to the bit. The empty
// asm statements make x and y unknown to the compiler and keep every
// iteration's FMAs: a compiler that saw equal inputs could merge chains.
#define FMA_PEAK_KERNEL(name, isa, vec, set1, fmadd, store, lanes, reg)                         \
  __attribute__((target(isa))) static int name(long n) {                                        \
    vec x = set1(0.5f), y = set1(0.5f);                                                         \
    vec c0 = set1(0), c1 = set1(1), c2 = set1(2), c3 = set1(3), c4 = set1(4), c5 = set1(5);     \
    vec c6 = set1(6), c7 = set1(7), c8 = set1(8), c9 = set1(9), c10 = set1(10), c11 = set1(11); \
    __asm__ volatile("" : "+" reg(x), "+" reg(y));                                              \
    for (long i = 0; i < n; ++i) {                                                              \
      c0 = fmadd(x, y, c0);                                                                     \
      c1 = fmadd(x, y, c1);                                                                     \
      c2 = fmadd(x, y, c2);                                                                     \
      c3 = fmadd(x, y, c3);                                                                     \
      c4 = fmadd(x, y, c4);                                                                     \
      c5 = fmadd(x, y, c5);                                                                     \
      c6 = fmadd(x, y, c6);                                                                     \
      c7 = fmadd(x, y, c7);                                                                     \
      c8 = fmadd(x, y, c8);                                                                     \
      c9 = fmadd(x, y, c9);                                                                     \
      c10 = fmadd(x, y, c10);                                                                   \
      c11 = fmadd(x, y, c11);                                                                   \
      __asm__ volatile(""                                                                       \
                       : "+" reg(c0), "+" reg(c1), "+" reg(c2), "+" reg(c3), "+" reg(c4),       \
                         "+" reg(c5), "+" reg(c6), "+" reg(c7), "+" reg(c8), "+" reg(c9),       \
                         "+" reg(c10), "+" reg(c11));                                           \
    }                                                                                           \
    const vec all[FMA_CHAINS] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};             \
    float lane[lanes];                                                                          \
    for (int k = 0; k < FMA_CHAINS; ++k) {                                                      \
      store(lane, all[k]);                                                                      \
      for (int j = 0; j < (lanes); ++j) {                                                       \
        if (lane[j] != (float)k + 0.25f * (float)n)                                             \
          return 0;                                                                             \
      }                                                                                         \
    }                                                                                           \
    return 1;                                                                                   \
  }

#if FMA_PEAK_X86
FMA_PEAK_KERNEL(chains_avx512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_storeu_ps,
                16, "v")
FMA_PEAK_KERNEL(chains_avx2, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps,
                8, "x")
#endif

typedef struct fma_thread {
  atomic_int *go;  // 0: wait, 1: run, -1: leave without running
  int (*chains)(long);
  double seconds;
  int ok;
} fma_thread;

static void *fma_thread_run(void *arg) {
  fma_thread *t = arg;
  int go;
  while ((go = atomic_load_explicit(t->go, memory_order_acquire)) == 0) {
  }
  if (go < 0)
    return NULL;
  const double t0 = bench_now();
  t->ok = t->chains(FMA_ITERATIONS);
  t->seconds = bench_now() - t0;
  return NULL;
}

// One run on |threads| threads (the caller is one of them); the rate counts
// every thread's work over the slowest thread's time. The threads start
// together on a flag: a thread that cannot be created releases the others
// without running, where a barrier would leave them waiting.
static int fma_run(int threads, int (*chains)(long), int lanes, double *out_gflops) {
  atomic_int go = 0;
  fma_thread slots[FMA_MAX_THREADS];
  pthread_t tids[FMA_MAX_THREADS];
  int started = 1;
  for (int i = 0; i < threads; ++i) slots[i] = (fma_thread){&go, chains, 0.0, 0};
  for (; started < threads; ++started) {
    if (pthread_create(&tids[started], NULL, fma_thread_run, &slots[started]) != 0)
      break;
  }
  atomic_store_explicit(&go, started == threads ? 1 : -1, memory_order_release);
  if (started == threads)
    fma_thread_run(&slots[0]);
  double slowest = slots[0].seconds;
  int ok = started == threads && slots[0].ok;
  for (int i = 1; i < started; ++i) {
    pthread_join(tids[i], NULL);
    ok = ok && slots[i].ok;
    if (slots[i].seconds > slowest)
      slowest = slots[i].seconds;
  }
  if (ok) {
    *out_gflops = (double)threads * FMA_ITERATIONS * FMA_CHAINS * lanes * 2.0 / slowest * 1e-9;
  }
  return ok;
}

int bench_fma_peak_measure(int threads, double *out_gflops, const char **out_isa, char *message,
                           size_t message_size) {
  int (*chains)(long) = NULL;
  int lanes = 0;
#if FMA_PEAK_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    chains = chains_avx512;
    lanes = 16;
    *out_isa = "avx512f";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    chains = chains_avx2;
    lanes = 8;
    *out_isa = "avx2+fma";
  }
#endif
  if (chains == NULL) {
    snprintf(message, message_size,
             "FMA peak: no kernel for this CPU (x86 with AVX2 and FMA, "
             "or AVX-512)");
    return 0;
  }
  if (threads < 1 || threads > FMA_MAX_THREADS) {
    snprintf(message, message_size, "FMA peak: %d threads is out of range", threads);
    return 0;
  }
  double best = 0.0;
  for (int run = 0; run < 3; ++run) {
    double gflops = 0.0;
    if (!fma_run(threads, chains, lanes, &gflops)) {
      snprintf(message, message_size,
               "FMA peak: a thread could not start, or the chains summed wrong");
      return 0;
    }
    if (gflops > best)
      best = gflops;
  }
  *out_gflops = best;
  return 1;
}
