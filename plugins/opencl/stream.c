// Streams are in-order command queues; events are markers enqueued on them.
//
// Every queue is created with profiling enabled: the ABI lets any stream
// record a timing event, and OpenCL can time only commands of a profiling
// queue (the cost is a timestamp per command). A live-stream registry per
// device lets a NULL-stream free wait for "all work on the device".
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_table.h"

#define TSR_OCL_EVENT_MAGIC 0x4f434c45u  // "OCLE"
#define TSR_OCL_MAX_STREAMS 256

typedef struct tsr_ocl_event {
  uint32_t magic;
  int32_t device;
  uint32_t flags;
  pthread_mutex_t lock;  // guards |marker| between record and readers on other threads
  cl_event marker;       // the last recorded marker; NULL: never recorded (complete)
} tsr_ocl_event;

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static tsr_ocl_stream *g_streams[TSR_OCL_MAX_STREAMS];

cl_command_queue tsr_ocl_queue_of(tsr_ocl_stream *stream, tsr_ocl_device *device) {
  return stream != NULL ? stream->queue : device->queue;
}

void tsr_ocl_streams_finish(int32_t device) {
  // Retain under the lock, finish outside it: a finish may take long.
  cl_command_queue queues[TSR_OCL_MAX_STREAMS];
  int count = 0;
  pthread_mutex_lock(&g_registry_lock);
  for (int i = 0; i < TSR_OCL_MAX_STREAMS; ++i) {
    if (g_streams[i] != NULL && g_streams[i]->device == device) {
      clRetainCommandQueue(g_streams[i]->queue);
      queues[count++] = g_streams[i]->queue;
    }
  }
  pthread_mutex_unlock(&g_registry_lock);
  for (int i = 0; i < count; ++i) {
    clFinish(queues[i]);
    clReleaseCommandQueue(queues[i]);
  }
}

tsr_status tsr_ocl_stream_error_take(tsr_ocl_stream *stream) {
  // A check's callback may still be on its way (OpenCL runs callbacks after,
  // not before, the command completes).
  while (atomic_load(&stream->callbacks_pending) > 0) sched_yield();
  int status = atomic_load(&stream->error);
  if (status == TSR_OK) return TSR_OK;
  char message[sizeof(stream->error_message)];
  memcpy(message, stream->error_message, sizeof(message));
  message[sizeof(message) - 1] = '\0';
  atomic_store(&stream->error, TSR_OK);
  if (message[0] == '\0') {
    return tsr_ocl_error((tsr_status)status,
                         "opencl: work queued earlier on this stream failed (status %d)", status);
  }
  return tsr_ocl_error((tsr_status)status, "%s (queued earlier on this stream)", message);
}

// The writer of the message holds |error| at TSR_INTERNAL + 1000 (a value no
// status has) while it writes, so a reader never sees half a message.
#define TSR_OCL_ERROR_WRITING (TSR_STATUS_COUNT + 1000)

void tsr_ocl_stream_error_set(tsr_ocl_stream *stream, tsr_status status, const char *format, ...) {
  int expected = TSR_OK;
  if (!atomic_compare_exchange_strong(&stream->error, &expected, TSR_OCL_ERROR_WRITING)) return;
  va_list args;
  va_start(args, format);
  vsnprintf(stream->error_message, sizeof(stream->error_message), format, args);
  va_end(args);
  atomic_store(&stream->error, (int)status);
}

void tsr_ocl_stream_error_put(tsr_ocl_stream *stream, tsr_status status) {
  tsr_ocl_stream_error_set(stream, status, "%s", "");
}

static tsr_status stream_check(const char *what, tsr_plugin_stream *stream,
                               tsr_ocl_stream **out_stream) {
  tsr_ocl_stream *s = (tsr_ocl_stream *)stream;
  if (s == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: stream is NULL", what);
  if (s->magic != TSR_OCL_STREAM_MAGIC) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: stream is not a live OpenCL stream", what);
  }
  *out_stream = s;
  return TSR_OK;
}

static tsr_status event_check(const char *what, tsr_plugin_event *event,
                              tsr_ocl_event **out_event) {
  tsr_ocl_event *e = (tsr_ocl_event *)event;
  if (e == NULL) return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: event is NULL", what);
  if (e->magic != TSR_OCL_EVENT_MAGIC) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "%s: event is not a live OpenCL event", what);
  }
  *out_event = e;
  return TSR_OK;
}

tsr_status tsr_ocl_stream_create(int32_t device, uint32_t flags, tsr_plugin_stream **out_stream) {
  if (out_stream == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "stream_create: out_stream is NULL");
  }
  *out_stream = NULL;
  tsr_ocl_device *d = tsr_ocl_device_get(device);
  if (d == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "stream_create: device %d does not exist",
                         (int)device);
  }
  if (flags & ~(uint32_t)TSR_EVENT_TIMING) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "stream_create: unknown flags 0x%x",
                         (unsigned)flags);
  }
  tsr_ocl_stream *s = calloc(1, sizeof(*s));
  if (s == NULL) return tsr_ocl_error(TSR_OUT_OF_MEMORY, "stream_create: out of host memory");
  cl_int err = CL_SUCCESS;
  s->queue = clCreateCommandQueue(d->context, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
  if (err != CL_SUCCESS) {
    free(s);
    return tsr_ocl_cl_error(err, "stream_create: clCreateCommandQueue");
  }
  s->magic = TSR_OCL_STREAM_MAGIC;
  s->device = device;
  s->flags = flags;
  atomic_init(&s->error, TSR_OK);
  atomic_init(&s->submitted, 0);
  atomic_init(&s->callbacks_pending, 0);
  int slot = -1;
  pthread_mutex_lock(&g_registry_lock);
  for (int i = 0; i < TSR_OCL_MAX_STREAMS && slot < 0; ++i) {
    if (g_streams[i] == NULL) {
      g_streams[i] = s;
      slot = i;
    }
  }
  pthread_mutex_unlock(&g_registry_lock);
  if (slot < 0) {
    clReleaseCommandQueue(s->queue);
    free(s);
    return tsr_ocl_error(TSR_OUT_OF_MEMORY, "stream_create: %d streams are live (the limit)",
                         TSR_OCL_MAX_STREAMS);
  }
  *out_stream = (tsr_plugin_stream *)s;
  return TSR_OK;
}

tsr_status tsr_ocl_stream_destroy(tsr_plugin_stream *stream) {
  tsr_ocl_stream *s = NULL;
  TSR_OCL_RETURN_IF_ERROR(stream_check("stream_destroy", stream, &s));
  pthread_mutex_lock(&g_registry_lock);
  for (int i = 0; i < TSR_OCL_MAX_STREAMS; ++i) {
    if (g_streams[i] == s) g_streams[i] = NULL;
  }
  pthread_mutex_unlock(&g_registry_lock);
  // Markers of blocks freed on this stream keep their own reference to it.
  clFinish(s->queue);
  while (atomic_load(&s->callbacks_pending) > 0) sched_yield();
  if (s->probe != NULL) clReleaseEvent(s->probe);
  clReleaseCommandQueue(s->queue);
  s->magic = 0;
  free(s);
  return TSR_OK;
}

tsr_status tsr_ocl_stream_synchronize(tsr_plugin_stream *stream) {
  tsr_ocl_stream *s = NULL;
  TSR_OCL_RETURN_IF_ERROR(stream_check("stream_synchronize", stream, &s));
  uint64_t submitted = atomic_load_explicit(&s->submitted, memory_order_relaxed);
  cl_int err = clFinish(s->queue);
  if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "stream_synchronize: clFinish");
  s->settled = submitted;
  return tsr_ocl_stream_error_take(s);
}

// CL_COMPLETE (0), a pending state (> 0) or an error (< 0) of |event|.
static cl_int event_state(cl_event event) {
  cl_int state = CL_COMPLETE;
  cl_int err =
      clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, NULL);
  return err != CL_SUCCESS ? err : state;
}

tsr_status tsr_ocl_stream_query(tsr_plugin_stream *stream) {
  tsr_ocl_stream *s = NULL;
  TSR_OCL_RETURN_IF_ERROR(stream_check("stream_query", stream, &s));
  uint64_t submitted = atomic_load_explicit(&s->submitted, memory_order_relaxed);
  if (submitted == s->settled) return tsr_ocl_stream_error_take(s);
  // Probe with a marker; reuse the last probe while nothing new was queued.
  if (s->probe == NULL || s->probe_at != submitted) {
    cl_event marker = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &marker);
    if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "stream_query: marker");
    // Submit what is queued, else a lazy driver could keep it back forever.
    clFlush(s->queue);
    if (s->probe != NULL) clReleaseEvent(s->probe);
    s->probe = marker;
    s->probe_at = submitted;
  }
  cl_int state = event_state(s->probe);
  if (state > CL_COMPLETE) return TSR_NOT_READY;
  clReleaseEvent(s->probe);
  s->probe = NULL;
  s->settled = s->probe_at;
  if (state < 0) return tsr_ocl_cl_error(state, "stream_query: queued work failed");
  return tsr_ocl_stream_error_take(s);
}

tsr_status tsr_ocl_stream_wait_event(tsr_plugin_stream *stream, tsr_plugin_event *event) {
  tsr_ocl_stream *s = NULL;
  tsr_ocl_event *e = NULL;
  TSR_OCL_RETURN_IF_ERROR(stream_check("stream_wait_event", stream, &s));
  TSR_OCL_RETURN_IF_ERROR(event_check("stream_wait_event", event, &e));
  if (e->device != s->device) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "stream_wait_event: the event is of device %d, the stream of device %d",
                         (int)e->device, (int)s->device);
  }
  pthread_mutex_lock(&e->lock);
  cl_event marker = e->marker;
  if (marker != NULL) clRetainEvent(marker);
  pthread_mutex_unlock(&e->lock);
  if (marker == NULL) return TSR_OK;  // never recorded: already complete
  cl_int err = clEnqueueBarrierWithWaitList(s->queue, 1, &marker, NULL);
  clReleaseEvent(marker);
  tsr_ocl_stream_note_work(s);
  return err == CL_SUCCESS ? TSR_OK : tsr_ocl_cl_error(err, "stream_wait_event: barrier");
}

tsr_status tsr_ocl_event_create(int32_t device, uint32_t flags, tsr_plugin_event **out_event) {
  if (out_event == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "event_create: out_event is NULL");
  }
  *out_event = NULL;
  if (tsr_ocl_device_get(device) == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "event_create: device %d does not exist",
                         (int)device);
  }
  if (flags & ~(uint32_t)TSR_EVENT_TIMING) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "event_create: unknown flags 0x%x", (unsigned)flags);
  }
  tsr_ocl_event *e = calloc(1, sizeof(*e));
  if (e == NULL) return tsr_ocl_error(TSR_OUT_OF_MEMORY, "event_create: out of host memory");
  e->magic = TSR_OCL_EVENT_MAGIC;
  e->device = device;
  e->flags = flags;
  pthread_mutex_init(&e->lock, NULL);
  *out_event = (tsr_plugin_event *)e;
  return TSR_OK;
}

tsr_status tsr_ocl_event_destroy(tsr_plugin_event *event) {
  tsr_ocl_event *e = NULL;
  TSR_OCL_RETURN_IF_ERROR(event_check("event_destroy", event, &e));
  if (e->marker != NULL) clReleaseEvent(e->marker);
  pthread_mutex_destroy(&e->lock);
  e->magic = 0;
  free(e);
  return TSR_OK;
}

tsr_status tsr_ocl_event_record(tsr_plugin_event *event, tsr_plugin_stream *stream) {
  tsr_ocl_stream *s = NULL;
  tsr_ocl_event *e = NULL;
  TSR_OCL_RETURN_IF_ERROR(event_check("event_record", event, &e));
  TSR_OCL_RETURN_IF_ERROR(stream_check("event_record", stream, &s));
  if (e->device != s->device) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "event_record: the event is of device %d, the stream of device %d",
                         (int)e->device, (int)s->device);
  }
  cl_event marker = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &marker);
  if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "event_record: marker");
  // Waiters on other queues or the host need the marker submitted.
  clFlush(s->queue);
  pthread_mutex_lock(&e->lock);
  cl_event old = e->marker;
  e->marker = marker;
  pthread_mutex_unlock(&e->lock);
  if (old != NULL) clReleaseEvent(old);
  return TSR_OK;
}

// The event's marker, retained (NULL when never recorded).
static cl_event marker_get(tsr_ocl_event *e) {
  pthread_mutex_lock(&e->lock);
  cl_event marker = e->marker;
  if (marker != NULL) clRetainEvent(marker);
  pthread_mutex_unlock(&e->lock);
  return marker;
}

tsr_status tsr_ocl_event_query(tsr_plugin_event *event) {
  tsr_ocl_event *e = NULL;
  TSR_OCL_RETURN_IF_ERROR(event_check("event_query", event, &e));
  cl_event marker = marker_get(e);
  if (marker == NULL) return TSR_OK;
  cl_int state = event_state(marker);
  clReleaseEvent(marker);
  if (state > CL_COMPLETE) return TSR_NOT_READY;
  if (state < 0) return tsr_ocl_cl_error(state, "event_query: the recorded work failed");
  return TSR_OK;
}

tsr_status tsr_ocl_event_synchronize(tsr_plugin_event *event) {
  tsr_ocl_event *e = NULL;
  TSR_OCL_RETURN_IF_ERROR(event_check("event_synchronize", event, &e));
  cl_event marker = marker_get(e);
  if (marker == NULL) return TSR_OK;
  cl_int err = clWaitForEvents(1, &marker);
  cl_int state = event_state(marker);
  clReleaseEvent(marker);
  if (err != CL_SUCCESS || state < 0) {
    return tsr_ocl_cl_error(err != CL_SUCCESS ? err : state, "event_synchronize");
  }
  return TSR_OK;
}

tsr_status tsr_ocl_event_elapsed_get(tsr_plugin_event *start, tsr_plugin_event *end,
                                     float *out_milliseconds) {
  tsr_ocl_event *a = NULL, *b = NULL;
  TSR_OCL_RETURN_IF_ERROR(event_check("event_elapsed_get", start, &a));
  TSR_OCL_RETURN_IF_ERROR(event_check("event_elapsed_get", end, &b));
  if (out_milliseconds == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "event_elapsed_get: out_milliseconds is NULL");
  }
  if (!(a->flags & TSR_EVENT_TIMING) || !(b->flags & TSR_EVENT_TIMING)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "event_elapsed_get: both events must be created with TSR_EVENT_TIMING");
  }
  cl_event ma = marker_get(a), mb = marker_get(b);
  tsr_status status = TSR_OK;
  if (ma == NULL || mb == NULL) {
    status = tsr_ocl_error(TSR_INVALID_ARGUMENT, "event_elapsed_get: the %s event was never recorded",
                           ma == NULL ? "start" : "end");
  } else if (event_state(ma) > CL_COMPLETE || event_state(mb) > CL_COMPLETE) {
    status = tsr_ocl_error(TSR_NOT_READY, "event_elapsed_get: the events have not completed");
  } else {
    // A marker's END is when everything before it had finished.
    cl_ulong t0 = 0, t1 = 0;
    cl_int err = clGetEventProfilingInfo(ma, CL_PROFILING_COMMAND_END, sizeof(t0), &t0, NULL);
    if (err == CL_SUCCESS) {
      err = clGetEventProfilingInfo(mb, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
    }
    if (err != CL_SUCCESS) {
      status = tsr_ocl_cl_error(err, "event_elapsed_get: clGetEventProfilingInfo");
    } else {
      *out_milliseconds = (float)((double)((int64_t)(t1 - t0)) * 1e-6);
    }
  }
  if (ma != NULL) clReleaseEvent(ma);
  if (mb != NULL) clReleaseEvent(mb);
  return status;
}
