// Oracle of RNG_FILL (docs/abi.md 10.22): Philox-4x32-10 and the three
// distributions, bit for bit as written there.
#include <math.h>

#include "oracle_internal.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void tsr_oracle_philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = (uint32_t)p0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

tsr_status tsr_oracle_rng_compute(tsr_oracle_call *call) {
  const tsr_rng_fill_attrs *a = call->attrs;
  tsr_oracle_tensor *out = &call->outputs[0];
  int is_float = tsr_oracle_dtype_is_float(out->dtype);
  if (a->distribution < 0 || a->distribution >= TSR_RNG_DISTRIBUTION_COUNT ||
      (a->distribution != TSR_RNG_BERNOULLI && !is_float)) {
    return tsr_oracle_fail(call, TSR_INVALID_ARGUMENT, "rng_fill: distribution %d on %s",
                           (int)a->distribution, tsr_oracle_dtype_name(out->dtype));
  }
  uint32_t key[2] = {(uint32_t)a->seed, (uint32_t)(a->seed >> 32)};
  tsr_oracle_mark(out, a->distribution == TSR_RNG_NORMAL ? TSR_ORACLE_TOLERANCE : TSR_ORACLE_EXACT);
  // "All arithmetic in float64, then rounded once to out's dtype."
  out->compute = is_float ? TSR_FLOAT64 : out->dtype;
  for (int64_t i = 0; i < out->numel; ++i) {
    uint64_t n = a->offset + (uint64_t)i;
    uint32_t counter[4] = {(uint32_t)n, (uint32_t)(n >> 32), 0, 0};
    uint32_t x[4];
    tsr_oracle_philox4x32(counter, key, x);
    switch (a->distribution) {
      case TSR_RNG_UNIFORM: {
        double u;
        if (out->dtype == TSR_FLOAT64) {
          u = (double)((((uint64_t)(x[0] >> 5)) << 26) | (x[1] >> 6)) * ldexp(1.0, -53);
        } else {
          u = (double)(x[0] >> 8) * ldexp(1.0, -24);
        }
        out->v[i] = a->a + (a->b - a->a) * u;
        break;
      }
      case TSR_RNG_NORMAL: {
        double u1 = ((double)x[0] + 1.0) * ldexp(1.0, -32);
        double u2 = (double)x[1] * ldexp(1.0, -32);
        double radius = sqrt(-2.0 * log(u1));
        double angle = 2.0 * 3.14159265358979323846 * u2;
        double z = radius * cos(angle);
        out->v[i] = a->a + a->b * z;
        // The last bits of ln and cos in float64, through sqrt and the scale.
        double cond = fabs(a->b) * (fabs(z) + radius * fabs(angle * sin(angle)));
        out->bound[i] = TSR_ORACLE_FN_SLACK * (fabs(a->a) + cond + fabs(out->v[i]));
        break;
      }
      default: {
        int bit = (double)(x[0] >> 8) * ldexp(1.0, -24) < a->a;
        double v;
        int64_t iv;
        tsr_oracle_cast_int(bit, out->dtype, &v, &iv);
        tsr_oracle_tensor_set(out, i, v, iv);
        break;
      }
    }
  }
  return TSR_OK;
}
