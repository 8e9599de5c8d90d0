// A device as one context sees it: its plugin, properties, default stream
// and plan cache.
#ifndef TESSERA_CORE_DEVICE_H_
#define TESSERA_CORE_DEVICE_H_

#include <stdatomic.h>

#include "common.h"
#include "plan_cache.h"
#include "registry.h"

// A device of a loaded plugin as one context sees it: each context has its
// own device objects (plan cache, default stream, policies through |owner|)
// over the shared plugin. Lives until the context is destroyed.
struct tsr_device {
  tsr_plugin *plugin;
  int32_t index;                 // inside the plugin
  int32_t global_id;             // index into the process's device table
  char name[64];                 // "ref:0"
  tsr_device_props props;
  tsr_stream *default_stream;
  tsr_plan_cache plan_cache;
  atomic_int lost;               // set on TSR_DEVICE_LOST; refuses further work
  // Set when its context is destroyed while tensors on it are alive: the
  // struct stays (tsr_device_retire) so that releasing them later is safe.
  atomic_int retired;
  tsr_context *owner;            // the context it belongs to; NULL once retired
  atomic_uint_least8_t fallback_warned[TSR_OP_COUNT];
};


// --- device.c ------------------------------------------------------------

tsr_status tsr_device_create(tsr_context *context, tsr_plugin *plugin, int32_t index,
                             tsr_device **out_device);
void tsr_device_destroy(tsr_device *device);
// At context destroy: frees what the device holds on its plugin (plan cache,
// default stream), marks it retired and keeps the struct until the process
// exits, for tensors the application still holds: releasing one then frees
// only its handle (storage.c), and an op on it is refused. Thread-safe.
void tsr_device_retire(tsr_device *device);
// Marks |device| lost when |status| says so. Returns |status|.
tsr_status tsr_device_check_status(tsr_device *device, tsr_status status);

#endif  // TESSERA_CORE_DEVICE_H_
