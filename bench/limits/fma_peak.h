// The cores' fp32 multiply-add peak, measured: every thread runs independent
// FMA chains on registers only, in the widest vectors this CPU offers. It is
// the ceiling for any float32 matrix product on these cores, and the VM this
// project is benchmarked on hides ISA extensions and drifts in speed, so it is
// measured in the run rather than taken from a data sheet.
#ifndef TESSERA_BENCH_FMA_PEAK_H_
#define TESSERA_BENCH_FMA_PEAK_H_

#include <stddef.h>

// Measures the peak over |threads| threads (1..64): the best of three short
// runs (a few ms each), in GFLOP/s counting a multiply-add as two. Writes
// the vector ISA used ("avx512f", "avx2+fma"; a static string) to
// |out_isa|. Returns 1, or 0 with |message| set when this CPU has no FMA
// kernel here, a thread could not start, or the chains computed a wrong sum.
// Not thread-safe: one measurement at a time.
int bench_fma_peak_measure(int threads, double *out_gflops, const char **out_isa, char *message,
                           size_t message_size);

#endif  // TESSERA_BENCH_FMA_PEAK_H_
