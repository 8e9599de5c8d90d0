// Streams and events over the plugin's, plus the per-thread current stream.
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "context.h"
#include "device.h"
#include "stream.h"

// The calling thread's current streams, by device global id. Small and
// direct-mapped: a thread rarely uses more than a few devices.
#define TSR_CURRENT_SLOTS 16
static TSR_HOT_TLS struct {
  int32_t global_id_plus_one;  // 0: empty; ids are never reused
  tsr_stream *stream;
} tls_current[TSR_CURRENT_SLOTS];

// Sets up a stream whose plugin handle is already in place: one reference.
static void stream_init(tsr_stream *stream, tsr_device *device) {
  atomic_init(&stream->refs, 1);
  atomic_init(&stream->workspace_busy, 0);
  stream->device = device;
}

tsr_status tsr_stream_create_internal(tsr_device *device, uint32_t flags, tsr_stream **out_stream) {
  tsr_stream *stream = calloc(1, sizeof(*stream));
  if (stream == NULL) return tsr_error_set(TSR_OUT_OF_MEMORY, "no memory for a stream");
  tsr_status status = device->plugin->api->stream_create(device->index, flags, &stream->handle);
  if (status != TSR_OK) {
    free(stream);
    tsr_error_prefix(device->name);
    return status;
  }
  stream_init(stream, device);
  *out_stream = stream;
  return TSR_OK;
}

tsr_stream *tsr_stream_current(tsr_device *device) {
  int slot = device->global_id & (TSR_CURRENT_SLOTS - 1);
  if (tls_current[slot].global_id_plus_one == device->global_id + 1 &&
      tls_current[slot].stream != NULL) {
    return tls_current[slot].stream;
  }
  return device->default_stream;
}

tsr_status tsr_stream_workspace_acquire(tsr_stream *stream, uint64_t bytes,
                                        tsr_plugin_buffer **out_buffer, int *out_temporary) {
  const tsr_plugin_api *api = stream->device->plugin->api;
  *out_temporary = 0;
  if (atomic_exchange_explicit(&stream->workspace_busy, 1, memory_order_acquire) == 0) {
    if (stream->workspace_bytes >= bytes && stream->workspace != NULL) {
      *out_buffer = stream->workspace;
      return TSR_OK;
    }
    // Grow: the old buffer's free is ordered after the work already queued.
    if (stream->workspace != NULL) api->buffer_free(stream->workspace, stream->handle);
    stream->workspace = NULL;
    stream->workspace_bytes = 0;
    uint64_t grown = bytes < 65536 ? 65536 : bytes + bytes / 4;
    tsr_status status =
        api->buffer_alloc(stream->device->index, grown, stream->handle, &stream->workspace);
    if (status != TSR_OK) {
      atomic_store_explicit(&stream->workspace_busy, 0, memory_order_release);
      return status;
    }
    stream->workspace_bytes = grown;
    *out_buffer = stream->workspace;
    return TSR_OK;
  }
  *out_temporary = 1;
  return api->buffer_alloc(stream->device->index, bytes, stream->handle, out_buffer);
}

void tsr_stream_workspace_release(tsr_stream *stream, tsr_plugin_buffer *buffer, int temporary) {
  if (temporary) {
    stream->device->plugin->api->buffer_free(buffer, stream->handle);
  } else {
    atomic_store_explicit(&stream->workspace_busy, 0, memory_order_release);
  }
}

// --- public stream API ----------------------------------------------------

tsr_status tsr_stream_create(tsr_device *device, uint32_t flags, tsr_stream **out_stream) {
  if (device == NULL || out_stream == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "stream_create: %s is NULL",
                         device ? "out_stream" : "device");
  }
  *out_stream = NULL;
  return tsr_stream_create_internal(device, flags, out_stream);
}

tsr_status tsr_stream_import(tsr_device *device, void *native, uint32_t flags,
                             tsr_stream **out_stream) {
  if (out_stream != NULL) *out_stream = NULL;
  if (device == NULL || native == NULL || out_stream == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "stream_import: %s is NULL",
                         device == NULL ? "device" : native == NULL ? "native" : "out_stream");
  }
  if ((flags & ~(uint32_t)TSR_STREAM_IMPORT_TAKE_OWNERSHIP) != 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "stream_import: flags 0x%x has unknown bits 0x%x (only "
                         "TSR_STREAM_IMPORT_TAKE_OWNERSHIP is defined)",
                         flags, flags & ~(uint32_t)TSR_STREAM_IMPORT_TAKE_OWNERSHIP);
  }
  const tsr_plugin_api *api = device->plugin->api;
  if (!TSR_ABI_HAS(api, tsr_plugin_api, stream_import)) {
    return tsr_error_set(TSR_UNSUPPORTED,
                         "stream_import: plugin '%s' (device %s, ABI %u.%u) cannot import a "
                         "native stream: its table has no stream_import entry (ABI 0.3)",
                         api->name, device->name, api->abi_major, api->abi_minor);
  }
  tsr_stream *stream = calloc(1, sizeof(*stream));
  if (stream == NULL) return tsr_error_set(TSR_OUT_OF_MEMORY, "no memory for a stream");
  tsr_status status = api->stream_import(device->index, native, flags, &stream->handle);
  if (status == TSR_OK && stream->handle == NULL) {
    status = tsr_error_set(TSR_INTERNAL, "stream_import: the plugin returned TSR_OK and no stream");
  }
  if (status != TSR_OK) {
    free(stream);
    tsr_error_prefix(device->name);
    tsr_device_check_status(device, status);
    return status;
  }
  stream_init(stream, device);
  *out_stream = stream;
  return TSR_OK;
}

void tsr_stream_release(tsr_stream *stream) {
  if (stream == NULL) return;
  if (atomic_fetch_sub(&stream->refs, 1) != 1) return;
  const tsr_plugin_api *api = stream->device->plugin->api;
  api->stream_synchronize(stream->handle);
  if (stream->workspace != NULL) api->buffer_free(stream->workspace, NULL);
  api->stream_destroy(stream->handle);
  // Forget it as this thread's current stream.
  int slot = stream->device->global_id & (TSR_CURRENT_SLOTS - 1);
  if (tls_current[slot].stream == stream) tls_current[slot].stream = NULL;
  free(stream);
}

tsr_stream *tsr_device_default_stream_get(tsr_device *device) {
  return device ? device->default_stream : NULL;
}

// The name before 0.1's ownership rule in names; removed in 0.2.
tsr_stream *tsr_device_default_stream(tsr_device *device) {
  return tsr_device_default_stream_get(device);
}

tsr_status tsr_stream_current_set(tsr_device *device, tsr_stream *stream) {
  if (device == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "stream_current_set: device is NULL");
  if (stream != NULL && stream->device != device) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "stream_current_set: stream of %s given for %s",
                         stream->device->name, device->name);
  }
  int slot = device->global_id & (TSR_CURRENT_SLOTS - 1);
  tls_current[slot].global_id_plus_one = device->global_id + 1;
  tls_current[slot].stream = stream;
  return TSR_OK;
}

tsr_stream *tsr_stream_current_get(tsr_device *device) {
  return device ? tsr_stream_current(device) : NULL;
}

static tsr_status stream_result(tsr_stream *stream, tsr_status status) {
  if (status != TSR_OK && status != TSR_NOT_READY) {
    tsr_error_prefix(stream->device->name);
    tsr_device_check_status(stream->device, status);
    return tsr_fail(stream->device, status, "%s", tsr_error_message());
  }
  return status;
}

tsr_status tsr_stream_synchronize(tsr_stream *stream) {
  if (stream == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "stream_synchronize: stream is NULL");
  return stream_result(stream, stream->device->plugin->api->stream_synchronize(stream->handle));
}

tsr_status tsr_stream_query(tsr_stream *stream) {
  if (stream == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "stream_query: stream is NULL");
  const tsr_plugin_api *api = stream->device->plugin->api;
  if (!TSR_ABI_HAS(api, tsr_plugin_api, stream_query)) return tsr_stream_synchronize(stream);
  return stream_result(stream, api->stream_query(stream->handle));
}

static tsr_status events_supported(const tsr_device *device, const char *what) {
  const tsr_plugin_api *api = device->plugin->api;
  if (!(device->props.flags & TSR_DEVICE_EVENTS) ||
      !TSR_ABI_HAS(api, tsr_plugin_api, event_synchronize)) {
    return tsr_error_set(TSR_UNSUPPORTED, "%s: %s has no events", what, device->name);
  }
  return TSR_OK;
}

tsr_status tsr_stream_wait_event(tsr_stream *stream, tsr_event *event) {
  if (stream == NULL || event == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "stream_wait_event: %s is NULL",
                         stream ? "event" : "stream");
  }
  if (event->device->plugin != stream->device->plugin) {
    // Between plugins the host is the only common ground.
    TSR_RETURN_IF_ERROR(tsr_event_synchronize(event));
    return TSR_OK;
  }
  return stream_result(stream,
                       stream->device->plugin->api->stream_wait_event(stream->handle, event->handle));
}

tsr_status tsr_event_create(tsr_device *device, uint32_t flags, tsr_event **out_event) {
  if (device == NULL || out_event == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "event_create: %s is NULL",
                         device ? "out_event" : "device");
  }
  *out_event = NULL;
  TSR_RETURN_IF_ERROR(events_supported(device, "event_create"));
  tsr_event *event = calloc(1, sizeof(*event));
  if (event == NULL) return tsr_error_set(TSR_OUT_OF_MEMORY, "no memory for an event");
  event->device = device;
  tsr_status status = device->plugin->api->event_create(device->index, flags, &event->handle);
  if (status != TSR_OK) {
    free(event);
    tsr_error_prefix(device->name);
    return status;
  }
  *out_event = event;
  return TSR_OK;
}

void tsr_event_release(tsr_event *event) {
  if (event == NULL) return;
  const tsr_plugin_api *api = event->device->plugin->api;
  api->event_synchronize(event->handle);
  api->event_destroy(event->handle);
  free(event);
}

tsr_status tsr_event_record(tsr_event *event, tsr_stream *stream) {
  if (event == NULL || stream == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "event_record: %s is NULL",
                         event ? "stream" : "event");
  }
  if (event->device != stream->device) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "event_record: event of %s, stream of %s",
                         event->device->name, stream->device->name);
  }
  return stream_result(stream, stream->device->plugin->api->event_record(event->handle,
                                                                         stream->handle));
}

tsr_status tsr_event_query(tsr_event *event) {
  if (event == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "event_query: event is NULL");
  return event->device->plugin->api->event_query(event->handle);
}

tsr_status tsr_event_synchronize(tsr_event *event) {
  if (event == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "event_synchronize: event is NULL");
  return event->device->plugin->api->event_synchronize(event->handle);
}

tsr_status tsr_event_elapsed_get(tsr_event *start, tsr_event *end, float *out_milliseconds) {
  if (start == NULL || end == NULL || out_milliseconds == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "event_elapsed_get: an argument is NULL");
  }
  if (start->device != end->device) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "event_elapsed_get: events of %s and %s",
                         start->device->name, end->device->name);
  }
  const tsr_plugin_api *api = start->device->plugin->api;
  if (!(start->device->props.flags & TSR_DEVICE_TIMING_EVENTS) ||
      !TSR_ABI_HAS(api, tsr_plugin_api, event_elapsed_get)) {
    return tsr_error_set(TSR_UNSUPPORTED, "event_elapsed_get: %s has no timing events",
                         start->device->name);
  }
  return api->event_elapsed_get(start->handle, end->handle, out_milliseconds);
}
