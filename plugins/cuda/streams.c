// Streams (cudaStream_t) and events (cudaEvent_t).
//
// Each stream carries a device-side error word that kernels set when their
// data is wrong (a GATHER index out of range); synchronize and query read it
// and report it once, as abi.md 5.3 asks of an asynchronous plugin.
#include <stdlib.h>
#include <string.h>

#include "cuda_plugin.h"

static const char *tsr_cuda_kernel_error_text(int code) {
  switch (code) {
    case TSR_CUDA_KERNEL_ERROR_GATHER_INDEX:
      return "gather: an index lies outside [0, size) of the gathered axis";
    case TSR_CUDA_KERNEL_ERROR_SCATTER_INDEX:
      return "scatter_add: an index lies outside [0, size) of the axis";
    case TSR_CUDA_KERNEL_ERROR_TARGET:
      return "cross_entropy: a target lies outside [0, C) and is not ignore_index";
    default:
      return "a kernel reported an unknown data error";
  }
}

static tsr_status tsr_cuda_stream_null(const void *stream, const char *function) {
  if (stream == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                      "%s: stream is NULL", function);
  }
  return TSR_OK;
}

static tsr_status tsr_cuda_stream_wrap(int32_t device, cudaStream_t native, int owned,
                                       const char *function, tsr_plugin_stream **out_stream) {
  const tsr_host_api *host = tsr_cuda_host();
  tsr_cuda_stream *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return host->error_set(host->ctx, TSR_OUT_OF_MEMORY, "%s: no host memory", function);
  s->device = device;
  s->owned = owned;
  s->stream = native;
  s->id = tsr_cuda_stream_id_next();
  atomic_init(&s->error_word_armed, 0);
  atomic_init(&s->lt_workspace, NULL);
  tsr_status status =
      tsr_cuda_check(cudaMalloc((void **)&s->error_word, sizeof(int)), function, "cudaMalloc");
  if (status == TSR_OK) {
    status = tsr_cuda_check(cudaMemsetAsync(s->error_word, 0, sizeof(int), native), function,
                            "cudaMemsetAsync");
  }
  if (status != TSR_OK) {
    if (s->error_word != NULL)
      cudaFree(s->error_word);
    free(s);
    return status;
  }
  *out_stream = (tsr_plugin_stream *)s;
  return TSR_OK;
}

tsr_status tsr_cuda_stream_create(int32_t device, uint32_t flags, tsr_plugin_stream **out_stream) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_stream == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "stream_create: out_stream is NULL");
  *out_stream = NULL;
  tsr_status status = tsr_cuda_device_check(device, "stream_create");
  if (status != TSR_OK)
    return status;
  if (flags != 0) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "stream_create: flags is 0x%x, not 0",
                           flags);
  }
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(device, "stream_create", &scope);
  if (status != TSR_OK)
    return status;
  cudaStream_t native = NULL;
  // Non-blocking: never serialised against the legacy default stream, which
  // an application's own CUDA code may be using.
  status = tsr_cuda_check(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking),
                          "stream_create", "cudaStreamCreateWithFlags");
  if (status == TSR_OK) {
    status = tsr_cuda_stream_wrap(device, native, 1, "stream_create", out_stream);
    if (status != TSR_OK)
      cudaStreamDestroy(native);
  }
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_stream_import(int32_t device, cudaStream_t native, int take_ownership,
                                  tsr_plugin_stream **out_stream) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_stream == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "stream_import: out_stream is NULL");
  *out_stream = NULL;
  tsr_cuda_device_scope scope;
  tsr_status status = tsr_cuda_device_check(device, "stream_import");
  if (status == TSR_OK)
    status = tsr_cuda_device_enter(device, "stream_import", &scope);
  if (status != TSR_OK)
    return status;
  int stream_device = -1;
  status = tsr_cuda_check(cudaStreamGetDevice(native, &stream_device), "stream_import",
                          "cudaStreamGetDevice");
  if (status == TSR_OK && stream_device != device) {
    status = host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                             "stream_import: the stream belongs to cuda:%d, not cuda:%d",
                             stream_device, (int)device);
  }
  if (status == TSR_OK) {
    status =
        tsr_cuda_stream_wrap(device, native, take_ownership != 0, "stream_import", out_stream);
  }
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_stream_import_entry(int32_t device, void *native, uint32_t flags,
                                        tsr_plugin_stream **out_stream) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_stream == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "stream_import: out_stream is NULL");
  *out_stream = NULL;
  const uint32_t take = TSR_STREAM_IMPORT_TAKE_OWNERSHIP;
  if ((flags & ~take) != 0) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "stream_import: flags 0x%x has unknown bits 0x%x", flags, flags & ~take);
  }
  cudaStream_t stream = (cudaStream_t)native;
  // 0 means the legacy default stream only to CUDA code compiled without
  // per-thread default streams; the ABI keeps NULL for "no stream".
  if (stream == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "stream_import: native is NULL; to run on the legacy default stream "
                           "pass cudaStreamLegacy");
  }
  // Another stream on every thread: the core calls from any thread, so the
  // work of one Tessera stream would not stay in order.
  if (stream == cudaStreamPerThread) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "stream_import: cudaStreamPerThread names a different stream on each "
                           "thread; import a stream the application created");
  }
  if (stream == cudaStreamLegacy && (flags & take)) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "stream_import: cudaStreamLegacy cannot be destroyed, so its ownership "
                           "cannot be taken");
  }
  return tsr_cuda_stream_import(device, stream, (flags & take) != 0, out_stream);
}

tsr_status tsr_cuda_stream_destroy(tsr_plugin_stream *stream) {
  tsr_cuda_stream *s = (tsr_cuda_stream *)stream;
  tsr_status status = tsr_cuda_stream_null(s, "stream_destroy");
  if (status != TSR_OK)
    return status;
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(s->device, "stream_destroy", &scope);
  if (status != TSR_OK) {
    free(s);  // the device is unusable: its objects cannot be released
    return status;
  }
  // cuBLASLt's workspace goes back stream-ordered: reusable by this stream's
  // id only, so a stream made later at the same address waits for its marker.
  tsr_cuda_block *workspace = atomic_exchange(&s->lt_workspace, NULL);
  if (workspace != NULL) {
    status = tsr_cuda_allocator_free(tsr_cuda_allocator_of(s->device), tsr_cuda_host(), workspace,
                                     s, s->id);
  }
  tsr_status freed = tsr_cuda_check(cudaFree(s->error_word), "stream_destroy", "cudaFree");
  if (status == TSR_OK)
    status = freed;
  if (s->owned) {
    tsr_status destroyed =
        tsr_cuda_check(cudaStreamDestroy(s->stream), "stream_destroy", "cudaStreamDestroy");
    if (status == TSR_OK)
      status = destroyed;
  }
  tsr_cuda_device_leave(&scope);
  free(s);
  return status;
}

int *tsr_cuda_stream_error_word(tsr_cuda_stream *stream) {
  atomic_store_explicit(&stream->error_word_armed, 1, memory_order_release);
  return stream->error_word;
}

// Reads and clears the error word of an idle stream, when a kernel that may
// set it has been queued since the last read. Otherwise the word is still 0
// and reading it would cost a device-to-host copy and a second wait on every
// synchronize: cudaStreamSynchronize's own status already covers CUDA's
// errors, and the word only carries data errors (abi.md 5.3).
static tsr_status tsr_cuda_error_word_take(tsr_cuda_stream *s, const char *function) {
  if (!atomic_exchange_explicit(&s->error_word_armed, 0, memory_order_acq_rel))
    return TSR_OK;
  int code = 0;
  tsr_status status = tsr_cuda_check(
      cudaMemcpyAsync(&code, s->error_word, sizeof(int), cudaMemcpyDeviceToHost, s->stream),
      function, "cudaMemcpyAsync");
  if (status == TSR_OK) {
    status = tsr_cuda_check(cudaStreamSynchronize(s->stream), function, "cudaStreamSynchronize");
  }
  if (status != TSR_OK) {
    // Unread: the next synchronize or query tries again.
    atomic_store_explicit(&s->error_word_armed, 1, memory_order_release);
    return status;
  }
  if (code == 0)
    return status;
  status = tsr_cuda_check(cudaMemsetAsync(s->error_word, 0, sizeof(int), s->stream), function,
                          "cudaMemsetAsync");
  if (status != TSR_OK)
    return status;
  return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                    "%s: queued work failed: %s", function,
                                    tsr_cuda_kernel_error_text(code));
}

tsr_status tsr_cuda_stream_synchronize(tsr_plugin_stream *stream) {
  tsr_cuda_stream *s = (tsr_cuda_stream *)stream;
  tsr_cuda_device_scope scope;
  tsr_status status = tsr_cuda_stream_null(s, "stream_synchronize");
  if (status == TSR_OK)
    status = tsr_cuda_device_enter(s->device, "stream_synchronize", &scope);
  if (status != TSR_OK)
    return status;
  status = tsr_cuda_check(cudaStreamSynchronize(s->stream), "stream_synchronize",
                          "cudaStreamSynchronize");
  if (status == TSR_OK)
    status = tsr_cuda_error_word_take(s, "stream_synchronize");
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_stream_query(tsr_plugin_stream *stream) {
  tsr_cuda_stream *s = (tsr_cuda_stream *)stream;
  tsr_cuda_device_scope scope;
  tsr_status status = tsr_cuda_stream_null(s, "stream_query");
  if (status == TSR_OK)
    status = tsr_cuda_device_enter(s->device, "stream_query", &scope);
  if (status != TSR_OK)
    return status;
  cudaError_t error = cudaStreamQuery(s->stream);
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    status = TSR_NOT_READY;
  } else {
    status = tsr_cuda_check(error, "stream_query", "cudaStreamQuery");
    // Idle: reading the error word cannot block behind other work.
    if (status == TSR_OK)
      status = tsr_cuda_error_word_take(s, "stream_query");
  }
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_stream_wait_event(tsr_plugin_stream *stream, tsr_plugin_event *event) {
  tsr_cuda_stream *s = (tsr_cuda_stream *)stream;
  tsr_cuda_event *e = (tsr_cuda_event *)event;
  tsr_status status = tsr_cuda_stream_null(s, "stream_wait_event");
  if (status != TSR_OK)
    return status;
  if (e == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                      "stream_wait_event: event is NULL");
  }
  if (!e->recorded)
    return TSR_OK;  // an event never recorded is complete
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(s->device, "stream_wait_event", &scope);
  if (status != TSR_OK)
    return status;
  status = tsr_cuda_check(cudaStreamWaitEvent(s->stream, e->event, 0), "stream_wait_event",
                          "cudaStreamWaitEvent");
  tsr_cuda_device_leave(&scope);
  return status;
}

tsr_status tsr_cuda_event_create(int32_t device, uint32_t flags, tsr_plugin_event **out_event) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_event == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "event_create: out_event is NULL");
  *out_event = NULL;
  tsr_status status = tsr_cuda_device_check(device, "event_create");
  if (status != TSR_OK)
    return status;
  if ((flags & ~(uint32_t)TSR_EVENT_TIMING) != 0) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "event_create: flags is 0x%x; only TSR_EVENT_TIMING (0x1) is known",
                           flags);
  }
  tsr_cuda_event *e = calloc(1, sizeof(*e));
  if (e == NULL)
    return host->error_set(host->ctx, TSR_OUT_OF_MEMORY, "event_create: no host memory");
  e->device = device;
  e->flags = flags;
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(device, "event_create", &scope);
  if (status == TSR_OK) {
    // Timing costs a little on every record, so only timing events pay it.
    unsigned cuda_flags = (flags & TSR_EVENT_TIMING) ? cudaEventDefault : cudaEventDisableTiming;
    status = tsr_cuda_check(cudaEventCreateWithFlags(&e->event, cuda_flags), "event_create",
                            "cudaEventCreateWithFlags");
    tsr_cuda_device_leave(&scope);
  }
  if (status != TSR_OK) {
    free(e);
    return status;
  }
  *out_event = (tsr_plugin_event *)e;
  return TSR_OK;
}

static tsr_status tsr_cuda_event_null(const void *event, const char *function) {
  if (event == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                      "%s: event is NULL", function);
  }
  return TSR_OK;
}

tsr_status tsr_cuda_event_destroy(tsr_plugin_event *event) {
  tsr_cuda_event *e = (tsr_cuda_event *)event;
  tsr_status status = tsr_cuda_event_null(e, "event_destroy");
  if (status != TSR_OK)
    return status;
  if (e->recorded && cudaEventQuery(e->event) == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                      "event_destroy: the event's last record has not completed");
  }
  status = tsr_cuda_check(cudaEventDestroy(e->event), "event_destroy", "cudaEventDestroy");
  free(e);
  return status;
}

tsr_status tsr_cuda_event_record(tsr_plugin_event *event, tsr_plugin_stream *stream) {
  tsr_cuda_event *e = (tsr_cuda_event *)event;
  tsr_cuda_stream *s = (tsr_cuda_stream *)stream;
  tsr_status status = tsr_cuda_event_null(e, "event_record");
  if (status == TSR_OK)
    status = tsr_cuda_stream_null(s, "event_record");
  if (status != TSR_OK)
    return status;
  if (e->device != s->device) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                      "event_record: event on cuda:%d, stream on cuda:%d",
                                      (int)e->device, (int)s->device);
  }
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(s->device, "event_record", &scope);
  if (status != TSR_OK)
    return status;
  status = tsr_cuda_check(cudaEventRecord(e->event, s->stream), "event_record", "cudaEventRecord");
  tsr_cuda_device_leave(&scope);
  if (status == TSR_OK)
    e->recorded = 1;
  return status;
}

tsr_status tsr_cuda_event_query(tsr_plugin_event *event) {
  tsr_cuda_event *e = (tsr_cuda_event *)event;
  tsr_status status = tsr_cuda_event_null(e, "event_query");
  if (status != TSR_OK || !e->recorded)
    return status;
  cudaError_t error = cudaEventQuery(e->event);
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return TSR_NOT_READY;
  }
  return tsr_cuda_check(error, "event_query", "cudaEventQuery");
}

tsr_status tsr_cuda_event_synchronize(tsr_plugin_event *event) {
  tsr_cuda_event *e = (tsr_cuda_event *)event;
  tsr_status status = tsr_cuda_event_null(e, "event_synchronize");
  if (status != TSR_OK || !e->recorded)
    return status;
  return tsr_cuda_check(cudaEventSynchronize(e->event), "event_synchronize",
                        "cudaEventSynchronize");
}

tsr_status tsr_cuda_event_elapsed_get(tsr_plugin_event *start, tsr_plugin_event *end,
                                      float *out_milliseconds) {
  const tsr_host_api *host = tsr_cuda_host();
  tsr_cuda_event *a = (tsr_cuda_event *)start;
  tsr_cuda_event *b = (tsr_cuda_event *)end;
  if (a == NULL || b == NULL || out_milliseconds == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "event_elapsed_get: %s is NULL",
                           a == NULL ? "start" : (b == NULL ? "end" : "out_milliseconds"));
  }
  if (!(a->flags & TSR_EVENT_TIMING) || !(b->flags & TSR_EVENT_TIMING)) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "event_elapsed_get: %s was created without TSR_EVENT_TIMING",
                           !(a->flags & TSR_EVENT_TIMING) ? "start" : "end");
  }
  if (!a->recorded || !b->recorded) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "event_elapsed_get: %s was never recorded",
                           !a->recorded ? "start" : "end");
  }
  if (a->device != b->device) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "event_elapsed_get: start on cuda:%d, end on cuda:%d", (int)a->device,
                           (int)b->device);
  }
  cudaError_t error = cudaEventElapsedTime(out_milliseconds, a->event, b->event);
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return TSR_NOT_READY;
  }
  return tsr_cuda_check(error, "event_elapsed_get", "cudaEventElapsedTime");
}
