// A context's random-number state and determinism switch (tessera.h).
#include "error.h"
#include "context.h"

tsr_status tsr_context_seed_set(tsr_context *context, uint64_t seed) {
  if (context == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "context_seed_set: context is NULL");
  atomic_store(&context->rng_seed, seed);
  atomic_store(&context->rng_offset, 0);
  return TSR_OK;
}

uint64_t tsr_context_seed(const tsr_context *context) {
  return context ? atomic_load(&((tsr_context *)context)->rng_seed) : 0;
}

uint64_t tsr_context_rng_offset(const tsr_context *context) {
  return context ? atomic_load(&((tsr_context *)context)->rng_offset) : 0;
}

tsr_status tsr_context_rng_offset_set(tsr_context *context, uint64_t offset) {
  if (context == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "context_rng_offset_set: context is NULL");
  }
  atomic_store(&context->rng_offset, offset);
  return TSR_OK;
}

uint64_t tsr_context_rng_claim(tsr_context *context, uint64_t count) {
  return context ? atomic_fetch_add(&context->rng_offset, count) : 0;
}

tsr_status tsr_context_deterministic_set(tsr_context *context, int enabled) {
  if (context == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "context_deterministic_set: context is NULL");
  }
  atomic_store(&context->deterministic, enabled != 0);
  return TSR_OK;
}

int tsr_context_deterministic(const tsr_context *context) {
  return context ? atomic_load(&((tsr_context *)context)->deterministic) : 0;
}
