// The context: its devices and plugins, rejected candidates, fallback
// policy, random numbers and sticky first error; and plugin discovery.
#ifndef TESSERA_CORE_CONTEXT_H_
#define TESSERA_CORE_CONTEXT_H_

#include <pthread.h>
#include <stdatomic.h>

#include "common.h"
#include "registry.h"

struct tsr_context {
  int32_t device_count;
  tsr_device *devices[TSR_MAX_DEVICES];
  _Atomic(tsr_device *) default_device;
  int32_t plugin_count;
  tsr_plugin *plugins[TSR_MAX_PLUGINS];
  // Every rejected candidate, however many a folder holds (grown as needed).
  int32_t rejected_count, rejected_capacity;
  struct tsr_rejected_entry {
    char *path;
    char *real;  // realpath of |path|, or NULL when it has none
    char *reason;
    tsr_status status;
  } *rejected;
  atomic_int fallback_policy;
  atomic_uint_fast64_t fallback_ops, fallback_copies, fallback_refusals;
  // Random numbers and determinism (see tsr_context_seed_set).
  atomic_uint_fast64_t rng_seed;
  atomic_uint_fast64_t rng_offset;
  atomic_int deterministic;
  // Sticky first error.
  pthread_mutex_t error_lock;
  atomic_int error_status;
  char error_message[1024];
};


// --- discovery.c --------------------------------------------------------

// Finds plugin candidates in discovery order and loads each, filling the
// context's plugin and rejected lists. Thread-safe.
tsr_status tsr_discovery_run(tsr_context *context, const tsr_context_options *options);


// --- context.c -----------------------------------------------------------
// tsr_context_fail and tsr_fail are declared in tessera/core_layer.h.

#endif  // TESSERA_CORE_CONTEXT_H_
