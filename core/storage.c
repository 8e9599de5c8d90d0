// Storage: a plugin buffer with a reference count, a version, and the set of
// streams that used it, so that its free is ordered after all of their work.
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "device.h"
#include "storage.h"
#include "stream.h"
#include "tensor.h"

// Storage records are recycled per thread so that an eager op allocates no
// host memory after warm-up.
#define TSR_FREE_LIST_CAP 1024
static TSR_HOT_TLS tsr_storage *tls_free_storage;
static TSR_HOT_TLS int tls_free_storage_count;

// A storage holds a reference on every stream that used it, so a stream the
// user destroys lives until its last storage is freed. The device's default
// stream lives as long as the device, which outlives every valid storage, so
// it is not counted: two atomic read-modify-writes fewer per eager op.
static void stream_hold(tsr_stream *stream) {
  if (stream != stream->device->default_stream)
    atomic_fetch_add_explicit(&stream->refs, 1, memory_order_relaxed);
}

static void stream_drop(tsr_stream *stream) {
  if (stream != stream->device->default_stream)
    tsr_stream_release(stream);
}

static tsr_storage *storage_record_get(void) {
  tsr_storage *s = tls_free_storage;
  if (s != NULL) {
    tls_free_storage = s->next_free;
    --tls_free_storage_count;
    return s;
  }
  return malloc(sizeof(tsr_storage));
}

static void storage_record_put(tsr_storage *s) {
  if (tls_free_storage_count >= TSR_FREE_LIST_CAP) {
    free(s);
    return;
  }
  tsr_thread_free_lists_register();
  s->next_free = tls_free_storage;
  tls_free_storage = s;
  ++tls_free_storage_count;
}

void tsr_storage_free_list_trim(void) {
  while (tls_free_storage != NULL) {
    tsr_storage *s = tls_free_storage;
    tls_free_storage = s->next_free;
    free(s);
  }
  tls_free_storage_count = 0;
}

tsr_status tsr_storage_create(tsr_device *device, uint64_t bytes, tsr_stream *stream,
                              tsr_storage **out_storage) {
  *out_storage = NULL;
  if (atomic_load_explicit(&device->lost, memory_order_relaxed)) {
    return tsr_error_set(TSR_DEVICE_LOST, "%s is lost", device->name);
  }
  tsr_storage *s = storage_record_get();
  if (s == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "no host memory for a storage record");
  tsr_status status =
      device->plugin->api->buffer_alloc(device->index, bytes, stream->handle, &s->buffer);
  if (status != TSR_OK) {
    storage_record_put(s);
    if (status == TSR_OUT_OF_MEMORY && tsr_error_message()[0] == '\0') {
      tsr_error_set(status, "%llu bytes", (unsigned long long)bytes);
    }
    tsr_error_prefix(device->name);
    return tsr_device_check_status(device, status);
  }
  atomic_init(&s->refs, 1);
  s->device = device;
  s->bytes = bytes;
  atomic_init(&s->version, 0);
  atomic_init(&s->streams[0], stream);
  for (int i = 1; i < TSR_STORAGE_MAX_STREAMS; ++i) atomic_init(&s->streams[i], NULL);
  atomic_init(&s->many_streams, 0);
  stream_hold(stream);
  s->next_free = NULL;
  *out_storage = s;
  return TSR_OK;
}

void tsr_storage_retain(tsr_storage *storage) {
  atomic_fetch_add_explicit(&storage->refs, 1, memory_order_relaxed);
}

void tsr_storage_mark_used(tsr_storage *storage, tsr_stream *stream) {
  for (int i = 0; i < TSR_STORAGE_MAX_STREAMS; ++i) {
    tsr_stream *seen = atomic_load_explicit(&storage->streams[i], memory_order_acquire);
    if (seen == stream)
      return;
    if (seen == NULL) {
      tsr_stream *expected = NULL;
      if (atomic_compare_exchange_strong(&storage->streams[i], &expected, stream)) {
        stream_hold(stream);
        return;
      }
      if (expected == stream)
        return;
    }
  }
  atomic_store(&storage->many_streams, 1);
}

void tsr_storage_release(tsr_storage *storage) {
  if (storage == NULL)
    return;
  if (!tsr_ref_drop(&storage->refs))
    return;
  tsr_device *device = storage->device;
  if (atomic_load_explicit(&device->retired, memory_order_relaxed)) {
    // Its context, plugin state and streams are gone: only the handle's
    // record is freed (docs/sdk.md, "Tensors").
    storage_record_put(storage);
    return;
  }
  const tsr_plugin_api *api = device->plugin->api;
  tsr_stream *owner = atomic_load(&storage->streams[0]);
  tsr_plugin_stream *free_on = owner->handle;
  if (atomic_load(&storage->many_streams)) {
    // More streams used it than we tracked: free after all device work.
    free_on = NULL;
  } else if (atomic_load(&storage->streams[1]) != NULL) {
    // Wait on the host for every other user's work so far; the owner
    // stream's own work is ordered by the stream itself.
    for (int i = 1; i < TSR_STORAGE_MAX_STREAMS; ++i) {
      tsr_stream *other = atomic_load(&storage->streams[i]);
      if (other == NULL)
        break;
      tsr_plugin_event *event = NULL;
      if ((device->props.flags & TSR_DEVICE_EVENTS) &&
          api->event_create(device->index, 0, &event) == TSR_OK) {
        if (api->event_record(event, other->handle) != TSR_OK ||
            api->event_synchronize(event) != TSR_OK) {
          api->stream_synchronize(other->handle);
        }
        api->event_destroy(event);
      } else {
        api->stream_synchronize(other->handle);
      }
    }
  }
  api->buffer_free(storage->buffer, free_on);
  stream_drop(owner);
  for (int i = 1; i < TSR_STORAGE_MAX_STREAMS; ++i) {
    tsr_stream *s = atomic_load_explicit(&storage->streams[i], memory_order_relaxed);
    if (s == NULL)
      break;  // slots fill in order (tsr_storage_mark_used)
    stream_drop(s);
  }
  storage_record_put(storage);
}
