// Devices: one per (plugin, index), with a default stream and a plan cache.
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "context.h"
#include "device.h"
#include "dispatch.h"
#include "registry.h"
#include "stream.h"

static atomic_int next_global_id;

tsr_status tsr_device_create(tsr_context *context, tsr_plugin *plugin, int32_t index,
                             tsr_device **out_device) {
  *out_device = NULL;
  tsr_device *device = calloc(1, sizeof(*device));
  if (device == NULL) return tsr_error_set(TSR_OUT_OF_MEMORY, "no memory for a device");
  device->plugin = plugin;
  device->owner = context;
  device->index = index;
  device->global_id = atomic_fetch_add(&next_global_id, 1);
  snprintf(device->name, sizeof(device->name), "%s:%d", plugin->api->name, index);
  device->props.struct_size = sizeof(device->props);
  tsr_status status = plugin->api->device_props_get(index, &device->props);
  if (status == TSR_OK && device->props.base_alignment == 0) device->props.base_alignment = 1;
  if (status == TSR_OK && (device->props.base_alignment & (device->props.base_alignment - 1))) {
    status = tsr_error_set(TSR_INTERNAL, "%s: base_alignment %u is not a power of two",
                           device->name, device->props.base_alignment);
  }
  if (device->props.struct_size > sizeof(device->props)) {
    device->props.struct_size = sizeof(device->props);
  }
  if (status == TSR_OK) status = tsr_plan_cache_init(&device->plan_cache);
  if (status == TSR_OK) status = tsr_stream_create_internal(device, 0, &device->default_stream);
  if (status != TSR_OK) {
    tsr_plan_cache_destroy(&device->plan_cache, NULL);
    free(device);
    return status;
  }
  *out_device = device;
  return TSR_OK;
}

void tsr_device_destroy(tsr_device *device) {
  if (device == NULL) return;
  const tsr_plugin_api *api = device->plugin->api;
  if (device->default_stream != NULL) {
    api->stream_synchronize(device->default_stream->handle);
  }
  tsr_status (*destroy)(tsr_plugin_plan *) =
      TSR_ABI_HAS(api, tsr_plugin_api, plan_destroy) ? api->plan_destroy : NULL;
  tsr_plan_cache_destroy(&device->plan_cache, destroy);
  tsr_stream_release(device->default_stream);
  free(device);
}

// Retired devices, freed when the library is unloaded or the process exits.
static pthread_mutex_t g_retired_lock = PTHREAD_MUTEX_INITIALIZER;
static tsr_device **g_retired;
static size_t g_retired_count, g_retired_capacity;

__attribute__((destructor)) static void tsr_retired_devices_free(void) {
  for (size_t i = 0; i < g_retired_count; ++i) free(g_retired[i]);
  free(g_retired);
  g_retired = NULL;
  g_retired_count = g_retired_capacity = 0;
}

void tsr_device_retire(tsr_device *device) {
  if (device == NULL) return;
  const tsr_plugin_api *api = device->plugin->api;
  if (device->default_stream != NULL) api->stream_synchronize(device->default_stream->handle);
  tsr_status (*destroy)(tsr_plugin_plan *) =
      TSR_ABI_HAS(api, tsr_plugin_api, plan_destroy) ? api->plan_destroy : NULL;
  tsr_plan_cache_destroy(&device->plan_cache, destroy);
  tsr_stream_release(device->default_stream);
  device->default_stream = NULL;
  device->owner = NULL;
  atomic_store(&device->retired, 1);
  pthread_mutex_lock(&g_retired_lock);
  if (g_retired_count == g_retired_capacity) {
    size_t capacity = g_retired_capacity ? 2 * g_retired_capacity : 16;
    tsr_device **grown = realloc(g_retired, capacity * sizeof(*grown));
    if (grown != NULL) {
      g_retired = grown;
      g_retired_capacity = capacity;
    }
  }
  // Without room the struct is leaked, never freed under a live tensor.
  if (g_retired_count < g_retired_capacity) g_retired[g_retired_count++] = device;
  pthread_mutex_unlock(&g_retired_lock);
}

tsr_status tsr_device_check_status(tsr_device *device, tsr_status status) {
  if (status == TSR_DEVICE_LOST && device != NULL) {
    if (atomic_exchange(&device->lost, 1) == 0) {
      tsr_log(TSR_LOG_ERROR, "device %s lost: %s; refusing further work on it", device->name,
              tsr_error_message());
    }
  }
  return status;
}

// --- public device API ----------------------------------------------------

tsr_context *tsr_device_context_get(const tsr_device *device) {
  return device ? device->owner : NULL;
}

// The name before 0.1's ownership rule in names; removed in 0.2.
tsr_context *tsr_device_context(const tsr_device *device) { return tsr_device_context_get(device); }

const char *tsr_device_name(const tsr_device *device) { return device ? device->name : NULL; }

int tsr_device_is_retired(const tsr_device *device) {
  return atomic_load_explicit(&device->retired, memory_order_relaxed) != 0;
}

int tsr_device_host_ptr_supported(const tsr_device *device) {
  return TSR_ABI_HAS(device->plugin->api, tsr_plugin_api, buffer_host_ptr_get);
}

const char *tsr_device_plugin_name(const tsr_device *device) {
  return device ? device->plugin->api->name : NULL;
}

tsr_status tsr_device_props_get(const tsr_device *device, tsr_device_props *out_props) {
  if (device == NULL || out_props == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "device_props_get: %s is NULL",
                         device ? "out_props" : "device");
  }
  size_t size = out_props->struct_size;
  if (size < sizeof(size_t)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "device_props_get: struct_size %zu too small", size);
  }
  size_t n = size < sizeof(device->props) ? size : sizeof(device->props);
  memcpy(out_props, &device->props, n);
  out_props->struct_size = n;
  return TSR_OK;
}

tsr_status tsr_device_allocator_stats_get(const tsr_device *device,
                                          tsr_allocator_stats *out_stats) {
  if (device == NULL || out_stats == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "allocator_stats_get: %s is NULL",
                         device ? "out_stats" : "device");
  }
  const tsr_plugin_api *api = device->plugin->api;
  if (!TSR_ABI_HAS(api, tsr_plugin_api, allocator_stats_get)) {
    return tsr_error_set(TSR_UNSUPPORTED, "%s: the plugin reports no allocator statistics",
                         device->name);
  }
  tsr_allocator_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  TSR_RETURN_IF_ERROR(api->allocator_stats_get(device->index, &stats));
  size_t size = out_stats->struct_size < sizeof(stats) ? out_stats->struct_size : sizeof(stats);
  if (size < sizeof(size_t)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "allocator_stats_get: struct_size %zu too small",
                         size);
  }
  memcpy(out_stats, &stats, size);
  out_stats->struct_size = size;
  return TSR_OK;
}

tsr_status tsr_device_allocator_trim(tsr_device *device) {
  if (device == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "allocator_trim: device is NULL");
  const tsr_plugin_api *api = device->plugin->api;
  if (!TSR_ABI_HAS(api, tsr_plugin_api, allocator_trim)) return TSR_OK;
  TSR_RETURN_IF_ERROR(tsr_device_synchronize(device));
  return api->allocator_trim(device->index);
}

tsr_status tsr_device_synchronize(tsr_device *device) {
  if (device == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "device_synchronize: device is NULL");
  // The default stream, then the calling thread's current stream; other
  // streams are the application's to synchronize (as in CUDA).
  tsr_status status = device->plugin->api->stream_synchronize(device->default_stream->handle);
  tsr_stream *current = tsr_stream_current(device);
  if (status == TSR_OK && current != device->default_stream) {
    status = device->plugin->api->stream_synchronize(current->handle);
  }
  if (status != TSR_OK) {
    tsr_error_prefix(device->name);
    return tsr_fail(device, tsr_device_check_status(device, status), "%s", tsr_error_message());
  }
  return TSR_OK;
}

tsr_status tsr_device_plan_cache_stats_get(const tsr_device *device,
                                           tsr_plan_cache_stats *out_stats) {
  if (device == NULL || out_stats == NULL || out_stats->struct_size < sizeof(*out_stats)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "plan_cache_stats_get: NULL or small struct");
  }
  tsr_plan_cache *cache = (tsr_plan_cache *)&device->plan_cache;
  out_stats->hits = atomic_load(&cache->hits);
  out_stats->misses = atomic_load(&cache->misses);
  out_stats->entries = atomic_load(&cache->entries);
  return TSR_OK;
}

tsr_status tsr_device_op_supported(tsr_device *device, tsr_op_id_t op, tsr_dtype_t dtype) {
  if (device == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "op_supported: device is NULL");
  if (op <= TSR_OP_INVALID || op >= TSR_OP_COUNT) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "op_supported: op id %d is not in the catalogue", op);
  }
  if (dtype < 0 || dtype >= TSR_DTYPE_COUNT) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "op_supported: dtype %d is unknown", dtype);
  }
  return tsr_op_probe(device, op, dtype);
}

tsr_status tsr_device_op_selector_supported(tsr_device *device, tsr_op_id_t op,
                                            tsr_dtype_t dtype, int32_t selector) {
  if (device == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "op_selector_supported: device is NULL");
  }
  if (op <= TSR_OP_INVALID || op >= TSR_OP_COUNT) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "op_selector_supported: op id %d is not in the catalogue", op);
  }
  if (dtype < 0 || dtype >= TSR_DTYPE_COUNT) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "op_selector_supported: dtype %d is unknown",
                         dtype);
  }
  return tsr_op_probe_selector(device, op, dtype, selector);
}
