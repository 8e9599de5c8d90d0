// Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011; Random123's philox4x32), the generator RNG_FILL
// specifies: a pure function of a 128-bit counter and a 64-bit key. Pure;
// thread-safe.
#ifndef TESSERA_PLUGINS_CPU_PHILOX_H_
#define TESSERA_PLUGINS_CPU_PHILOX_H_

#include <stdint.h>

#define TSR_CPU_PHILOX_M0 0xD2511F53u
#define TSR_CPU_PHILOX_M1 0xCD9E8D57u
#define TSR_CPU_PHILOX_W0 0x9E3779B9u
#define TSR_CPU_PHILOX_W1 0xBB67AE85u

// Ten rounds over |ctr| (c0..c3) with |key| (k0, k1); the block lands in
// |out| (x0..x3). Each round is
//   (c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))
// and the key is bumped by (W0, W1) between rounds.
static inline void tsr_cpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                         uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += TSR_CPU_PHILOX_W0;
      k1 += TSR_CPU_PHILOX_W1;
    }
    const uint64_t p0 = (uint64_t)TSR_CPU_PHILOX_M0 * c0;
    const uint64_t p1 = (uint64_t)TSR_CPU_PHILOX_M1 * c2;
    const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

#endif  // TESSERA_PLUGINS_CPU_PHILOX_H_
