// Clocks and a sort order for the kernel library's benchmark programs
// (bench_gemm.c, bench_conv.c, bench_kernels.c).
#ifndef TESSERA_PLUGINS_CPU_TESTS_BENCH_CLOCK_H_
#define TESSERA_PLUGINS_CPU_TESTS_BENCH_CLOCK_H_

#include <time.h>

static inline double bench_clock_s(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Wall time in seconds.
static inline double now_s(void) { return bench_clock_s(CLOCK_MONOTONIC); }

// CPU time of all threads: on a shared machine it leaves out the time this
// process waited for a core, so it shows the kernel's own speed when wall
// time cannot.
static inline double cpu_s(void) { return bench_clock_s(CLOCK_PROCESS_CPUTIME_ID); }

// qsort's order for doubles, ascending.
static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#endif  // TESSERA_PLUGINS_CPU_TESTS_BENCH_CLOCK_H_
