// RNG_FILL: counter-based random numbers (Philox-4x32-10, philox.h).
//
// Element i of out's row-major order takes the block of counter offset + i,
// so the numbers depend only on (seed, offset, i): any chunking, thread count
// or stride gives the same bits. Limited by Philox's 20 multiplies per
// element (and by log/cos for NORMAL); elements are made in batches so the
// generator, the distribution and the store each run as a tight loop.
#include <math.h>
#include <string.h>

#include "convert.h"
#include "data_ops.h"
#include "half.h"
#include "host.h"
#include "philox.h"
#include "plan.h"
#include "signature.h"

// Elements per parallel chunk, and per batch inside a chunk.
#define TSR_CPU_RNG_GRAIN 16384
#define TSR_CPU_RNG_BATCH 256
#define TSR_CPU_TWO_PI 6.28318530717958647692

// Turns one batch of blocks (words x0, x1) into values, in float64 as the
// catalogue computes them.
static void tsr_cpu_rng_values(const tsr_cpu_rng_plan *r, const uint32_t *x0, const uint32_t *x1,
                               int64_t n, double *v) {
  const double a = r->a, b = r->b;
  switch (r->distribution) {
    case TSR_RNG_UNIFORM:
      if (r->dtype == TSR_FLOAT64) {
        for (int64_t j = 0; j < n; ++j) {
          uint64_t bits = ((uint64_t)(x0[j] >> 5) << 26) | (x1[j] >> 6);
          v[j] = a + (b - a) * ((double)bits * 0x1p-53);
        }
      } else {
        for (int64_t j = 0; j < n; ++j) v[j] = a + (b - a) * ((double)(x0[j] >> 8) * 0x1p-24);
      }
      break;
    case TSR_RNG_NORMAL:
      for (int64_t j = 0; j < n; ++j) {
        double u1 = ((double)x0[j] + 1.0) * 0x1p-32;  // (0, 1]: log is finite
        double u2 = (double)x1[j] * 0x1p-32;
        v[j] = a + b * (sqrt(-2.0 * log(u1)) * cos(TSR_CPU_TWO_PI * u2));
      }
      break;
    default:  // TSR_RNG_BERNOULLI
      for (int64_t j = 0; j < n; ++j) v[j] = (double)(x0[j] >> 8) * 0x1p-24 < a ? 1.0 : 0.0;
      break;
  }
}

// Rounds |v| once to out's dtype and writes it to |p|.
static inline void tsr_cpu_rng_store(tsr_dtype_t dtype, double v, char *p) {
  switch (dtype) {
    case TSR_FLOAT32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case TSR_FLOAT64: memcpy(p, &v, 8); break;
    case TSR_BFLOAT16: { uint16_t h = tsr_cpu_f64_to_bf16(v); memcpy(p, &h, 2); break; }
    case TSR_FLOAT16: { uint16_t h = tsr_cpu_f64_to_f16(v); memcpy(p, &h, 2); break; }
    // Only BERNOULLI reaches the rest, with v 0 or 1.
    case TSR_INT32: { int32_t i = (int32_t)v; memcpy(p, &i, 4); break; }
    case TSR_INT64: { int64_t i = (int64_t)v; memcpy(p, &i, 8); break; }
    default: *p = (char)(v != 0.0); break;
  }
}

typedef struct tsr_cpu_rng_job {
  const tsr_plugin_plan *plan;
  char *out;
} tsr_cpu_rng_job;

// Elements [begin, end) of out's row-major order.
static void tsr_cpu_rng_range_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_rng_job *job = arg;
  const tsr_cpu_rng_plan *r = &job->plan->u.rng;
  const tsr_cpu_operand *out = &job->plan->operands[0];
  const int64_t e = out->elem_size;
  uint32_t x0[TSR_CPU_RNG_BATCH], x1[TSR_CPU_RNG_BATCH];
  double v[TSR_CPU_RNG_BATCH];
  // Strided outputs: the multi-index of |begin| and its element offset.
  int64_t idx[TSR_MAX_RANK] = {0}, off = 0, unused = 0;
  if (!r->dense) {
    int64_t rem = begin;
    for (int32_t d = out->rank - 1; d >= 0; --d) {
      idx[d] = rem % out->sizes[d];
      rem /= out->sizes[d];
      off += idx[d] * out->strides[d];
    }
  }
  for (int64_t i = begin; i < end; i += TSR_CPU_RNG_BATCH) {
    const int64_t n = end - i < TSR_CPU_RNG_BATCH ? end - i : TSR_CPU_RNG_BATCH;
    // gcc vectorises this loop across the batch (Philox's rounds are 32x32
    // -> 64-bit multiplies and xors).
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t c = r->offset + (uint64_t)(i + j);  // wraps mod 2^64 as specified
      const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
      uint32_t block[4];
      tsr_cpu_philox4x32_10(ctr, r->key, block);
      x0[j] = block[0];
      x1[j] = block[1];
    }
    tsr_cpu_rng_values(r, x0, x1, n, v);
    if (r->dense) {
      char *p = job->out + i * e;
      if (r->dtype == TSR_FLOAT32) {
        for (int64_t j = 0; j < n; ++j) ((float *)(void *)p)[j] = (float)v[j];
      } else {
        for (int64_t j = 0; j < n; ++j) tsr_cpu_rng_store(r->dtype, v[j], p + j * e);
      }
      continue;
    }
    for (int64_t j = 0; j < n; ++j) {
      tsr_cpu_rng_store(r->dtype, v[j], job->out + off * e);
      tsr_cpu_odometer_next(idx, 0, out->rank, out->sizes, out->strides, out->strides, &off,
                            &unused);
    }
  }
}

static tsr_status tsr_cpu_rng_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                      char *workspace) {
  (void)workspace;
  const int64_t numel = plan->operands[0].numel;
  tsr_cpu_rng_job job = {plan, ptrs[0]};
  if (numel < 2 * TSR_CPU_RNG_GRAIN) {
    if (numel > 0) tsr_cpu_rng_range_run(&job, 0, numel, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  return host->parallel_for(host->ctx, numel, TSR_CPU_RNG_GRAIN, tsr_cpu_rng_range_run, &job);
}

tsr_status tsr_cpu_rng_fill_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 0, 0, 1, names);
  if (status != TSR_OK) return status;
  const tsr_rng_fill_attrs *attrs;
  status = tsr_cpu_attrs_get(signature, sizeof(tsr_rng_fill_attrs), (const void **)&attrs);
  if (status != TSR_OK) return status;
  const tsr_cpu_operand *out = &plan->operands[0];
  if (attrs->distribution < 0 || attrs->distribution >= TSR_RNG_DISTRIBUTION_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(attrs->distribution < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED,
                             "rng_fill: attrs distribution %d is not a distribution",
                             (int)attrs->distribution);
  }
  if (attrs->reserved != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "rng_fill: attrs reserved is %u, not 0",
                             (unsigned)attrs->reserved);
  }
  if (attrs->distribution != TSR_RNG_BERNOULLI) {
    status = tsr_cpu_dtype_check(signature, out, TSR_CPU_DTYPES_FLOAT,
                                 attrs->distribution == TSR_RNG_UNIFORM
                                     ? "uniform takes float"
                                     : "normal takes float");
  }
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status != TSR_OK) return status;

  tsr_cpu_rng_plan *r = &plan->u.rng;
  memset(r, 0, sizeof(*r));
  r->distribution = attrs->distribution;
  r->dtype = out->dtype;
  r->key[0] = (uint32_t)attrs->seed;
  r->key[1] = (uint32_t)(attrs->seed >> 32);
  r->offset = attrs->offset;
  r->a = attrs->a;
  r->b = attrs->b;
  // Dense: row-major strides, or a shape whose other dimensions are all 1.
  r->dense = 1;
  int64_t stride = 1;
  for (int32_t d = out->rank - 1; d >= 0; --d) {
    if (out->sizes[d] != 1 && out->strides[d] != stride) r->dense = 0;
    stride *= out->sizes[d];
  }
  plan->execute = tsr_cpu_rng_execute;
  plan->engine = "ref:philox4x32-10";
  return TSR_OK;
}
