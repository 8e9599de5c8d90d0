// minimal_plugin.c: the smallest useful Tessera plugin.
//
// One device whose memory is ordinary host memory, an allocator on top of
// aligned_alloc, streams that do their work before the call returns, and one
// kernel: BINARY ADD (alpha 1) of two contiguous float32 tensors of the same
// shape. docs/writing-a-plugin.md walks through it; it needs only
// tessera/abi.h and tessera/ops.h, and builds on its own:
//     cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden
//        -I<tessera>/abi/include minimal_plugin.c -o libtessera-minimal.so
// (one command line).
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

// ---------------------------------------------------------------------------
// The host table, and errors.

// Set once by the entry, before the core calls anything else.
static const tsr_host_api *g_host;

// Formats |format| into the calling thread's error and returns |code|. The
// message names the plugin, the function and the offending value.
static tsr_status minimal_error(tsr_status code, const char *format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return g_host->error_set(g_host->ctx, code, "minimal: %s", message);
}

static tsr_status minimal_device_check(const char *what, int32_t device) {
  if (device == 0)
    return TSR_OK;
  return minimal_error(TSR_INVALID_ARGUMENT, "%s: device %d does not exist", what, (int)device);
}

// ---------------------------------------------------------------------------
// Identity, probe, device.

static tsr_status minimal_probe(void) {
  return TSR_OK;
}  // nothing to look for

static tsr_status minimal_device_count_get(int32_t *out_count) {
  if (out_count == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "device_count_get: out_count is NULL");
  *out_count = 1;
  return TSR_OK;
}

static tsr_status minimal_device_props_get(int32_t device, tsr_device_props *out_props) {
  tsr_status status = minimal_device_check("device_props_get", device);
  if (status != TSR_OK)
    return status;
  if (out_props == NULL || out_props->struct_size < sizeof(size_t)) {
    return minimal_error(TSR_INVALID_ARGUMENT, "device_props_get: out_props is NULL or too small");
  }
  tsr_device_props props = {
      .struct_size = out_props->struct_size,
      .name = "minimal example device (host memory)",
      .memory_bytes = 1ull << 30,
      .compute_units = 1,
      .flags = TSR_DEVICE_HOST_ACCESSIBLE | TSR_DEVICE_EVENTS,
      .dtype_mask = TSR_DTYPE_BIT(TSR_FLOAT32),
      .base_alignment = 64,
      // An example is never the default device over ref unless asked for;
      // a real accelerator reports more than TSR_DEVICE_PRIORITY_REFERENCE.
      .priority = TSR_DEVICE_PRIORITY_NONE,
  };
  // Write only what the caller's (possibly older, shorter) struct holds.
  memcpy(out_props, &props, props.struct_size < sizeof(props) ? props.struct_size : sizeof(props));
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Memory: a buffer is a small header (malloc) pointing at its data (aligned_alloc).

struct tsr_plugin_buffer {
  uint64_t bytes;
  char *data;  // 64-byte aligned
};

static _Atomic uint64_t g_in_use, g_peak, g_allocs, g_frees;

static tsr_status minimal_buffer_alloc(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                                       tsr_plugin_buffer **out_buffer) {
  (void)stream;  // synchronous: nothing queued can still use memory
  tsr_status status = minimal_device_check("buffer_alloc", device);
  if (status != TSR_OK)
    return status;
  if (out_buffer == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "buffer_alloc: out_buffer is NULL");
  *out_buffer = NULL;
  if (bytes > (1ull << 40)) {
    return minimal_error(TSR_OUT_OF_MEMORY, "buffer_alloc: %llu bytes is too many",
                         (unsigned long long)bytes);
  }
  size_t rounded = (size_t)((bytes + 63) & ~63ull);  // aligned_alloc wants a multiple
  tsr_plugin_buffer *buffer = malloc(sizeof(*buffer));
  char *data = aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (buffer == NULL || data == NULL) {
    free(buffer);
    free(data);
    return minimal_error(TSR_OUT_OF_MEMORY, "buffer_alloc: the system refused %llu bytes",
                         (unsigned long long)bytes);
  }
  buffer->bytes = bytes;
  buffer->data = data;
  uint64_t now = atomic_fetch_add(&g_in_use, bytes) + bytes;
  uint64_t peak = atomic_load(&g_peak);
  while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now)) {
  }
  atomic_fetch_add(&g_allocs, 1);
  *out_buffer = buffer;
  return TSR_OK;
}

static tsr_status minimal_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream) {
  (void)stream;
  if (buffer == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "buffer_free: buffer is NULL");
  atomic_fetch_sub(&g_in_use, buffer->bytes);
  atomic_fetch_add(&g_frees, 1);
  free(buffer->data);
  free(buffer);
  return TSR_OK;
}

static tsr_status minimal_buffer_host_ptr_get(tsr_plugin_buffer *buffer, void **out_ptr) {
  if (buffer == NULL || out_ptr == NULL) {
    return minimal_error(TSR_INVALID_ARGUMENT, "buffer_host_ptr_get: %s is NULL",
                         buffer == NULL ? "buffer" : "out_ptr");
  }
  *out_ptr = buffer->data;
  return TSR_OK;
}

static tsr_status minimal_allocator_stats_get(int32_t device, tsr_allocator_stats *out_stats) {
  tsr_status status = minimal_device_check("allocator_stats_get", device);
  if (status != TSR_OK)
    return status;
  if (out_stats == NULL || out_stats->struct_size < sizeof(size_t)) {
    return minimal_error(TSR_INVALID_ARGUMENT,
                         "allocator_stats_get: out_stats is NULL or too small");
  }
  tsr_allocator_stats stats = {
      .struct_size = out_stats->struct_size,
      .bytes_in_use = atomic_load(&g_in_use),
      .bytes_reserved = atomic_load(&g_in_use),  // no cache: what is in use is all it holds
      .peak_bytes_in_use = atomic_load(&g_peak),
      .alloc_count = atomic_load(&g_allocs),
      .free_count = atomic_load(&g_frees),
      .system_alloc_count = atomic_load(&g_allocs),
  };
  memcpy(out_stats, &stats, stats.struct_size < sizeof(stats) ? stats.struct_size : sizeof(stats));
  return TSR_OK;
}

// Checks that [offset, offset + bytes) lies inside |buffer| and, when bytes
// move, that the host side |host_ptr| is there.
static tsr_status minimal_range_check(const char *what, const tsr_plugin_buffer *buffer,
                                      uint64_t offset, uint64_t bytes, const void *host_ptr) {
  if (buffer == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "%s: buffer is NULL", what);
  if (bytes > 0 && host_ptr == NULL) {
    return minimal_error(TSR_INVALID_ARGUMENT, "%s: host pointer is NULL", what);
  }
  if (offset > buffer->bytes || bytes > buffer->bytes - offset) {
    return minimal_error(TSR_INVALID_ARGUMENT,
                         "%s: %llu bytes at offset %llu pass the end of a %llu-byte buffer", what,
                         (unsigned long long)bytes, (unsigned long long)offset,
                         (unsigned long long)buffer->bytes);
  }
  return TSR_OK;
}

static tsr_status minimal_copy_host_to_device(tsr_plugin_stream *stream, const void *src,
                                              tsr_plugin_buffer *dst, uint64_t dst_offset,
                                              uint64_t bytes) {
  (void)stream;
  tsr_status status = minimal_range_check("copy_host_to_device", dst, dst_offset, bytes, src);
  if (status == TSR_OK && bytes > 0)
    memcpy(dst->data + dst_offset, src, (size_t)bytes);
  return status;
}

static tsr_status minimal_copy_device_to_host(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                              uint64_t src_offset, void *dst, uint64_t bytes) {
  (void)stream;
  tsr_status status = minimal_range_check("copy_device_to_host", src, src_offset, bytes, dst);
  if (status == TSR_OK && bytes > 0)
    memcpy(dst, src->data + src_offset, (size_t)bytes);
  return status;
}

static tsr_status minimal_copy_device_to_device(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                                uint64_t src_offset, tsr_plugin_buffer *dst,
                                                uint64_t dst_offset, uint64_t bytes) {
  (void)stream;
  tsr_status status = minimal_range_check("copy_device_to_device", src, src_offset, bytes, "");
  if (status == TSR_OK)
    status = minimal_range_check("copy_device_to_device", dst, dst_offset, bytes, "");
  if (status != TSR_OK)
    return status;
  // docs/abi.md: overlapping ranges of one buffer are an invalid request.
  if (src == dst && bytes > 0 && src_offset < dst_offset + bytes &&
      dst_offset < src_offset + bytes) {
    return minimal_error(TSR_INVALID_ARGUMENT,
                         "copy_device_to_device: ranges overlap in one buffer");
  }
  if (bytes > 0)
    memcpy(dst->data + dst_offset, src->data + src_offset, (size_t)bytes);
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Streams and events. Every call finishes its work before it returns, so a
// stream is only a name for an order that already holds, and an event is
// complete as soon as it is recorded.

struct tsr_plugin_stream {
  int32_t device;
};
struct tsr_plugin_event {
  int32_t device;
};

static tsr_status minimal_stream_create(int32_t device, uint32_t flags,
                                        tsr_plugin_stream **out_stream) {
  tsr_status status = minimal_device_check("stream_create", device);
  if (status != TSR_OK)
    return status;
  if (out_stream == NULL || flags != 0) {
    return minimal_error(TSR_INVALID_ARGUMENT, "stream_create: %s",
                         out_stream == NULL ? "out_stream is NULL" : "unknown flags");
  }
  *out_stream = malloc(sizeof(**out_stream));
  if (*out_stream == NULL)
    return minimal_error(TSR_OUT_OF_MEMORY, "stream_create: no memory");
  (*out_stream)->device = device;
  return TSR_OK;
}

static tsr_status minimal_stream_destroy(tsr_plugin_stream *stream) {
  if (stream == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "stream_destroy: stream is NULL");
  free(stream);
  return TSR_OK;
}

// Synchronize and query: nothing is ever pending.
static tsr_status minimal_stream_done(tsr_plugin_stream *stream) {
  return stream != NULL ? TSR_OK : minimal_error(TSR_INVALID_ARGUMENT, "stream is NULL");
}

static tsr_status minimal_stream_wait_event(tsr_plugin_stream *stream, tsr_plugin_event *event) {
  if (stream == NULL || event == NULL) {
    return minimal_error(TSR_INVALID_ARGUMENT, "stream_wait_event: %s is NULL",
                         stream == NULL ? "stream" : "event");
  }
  return TSR_OK;  // the event's work has finished already
}

static tsr_status minimal_event_create(int32_t device, uint32_t flags,
                                       tsr_plugin_event **out_event) {
  tsr_status status = minimal_device_check("event_create", device);
  if (status != TSR_OK)
    return status;
  if (out_event == NULL || flags != 0) {  // no TSR_EVENT_TIMING: the device does not time
    return minimal_error(TSR_INVALID_ARGUMENT, "event_create: %s",
                         out_event == NULL ? "out_event is NULL" : "flags must be 0");
  }
  *out_event = malloc(sizeof(**out_event));
  if (*out_event == NULL)
    return minimal_error(TSR_OUT_OF_MEMORY, "event_create: no memory");
  (*out_event)->device = device;
  return TSR_OK;
}

static tsr_status minimal_event_destroy(tsr_plugin_event *event) {
  if (event == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "event_destroy: event is NULL");
  free(event);
  return TSR_OK;
}

static tsr_status minimal_event_record(tsr_plugin_event *event, tsr_plugin_stream *stream) {
  (void)stream;  // NULL is allowed: "after all work on the device"
  return event != NULL ? TSR_OK
                       : minimal_error(TSR_INVALID_ARGUMENT, "event_record: event is NULL");
}

static tsr_status minimal_event_done(tsr_plugin_event *event) {
  return event != NULL ? TSR_OK : minimal_error(TSR_INVALID_ARGUMENT, "event is NULL");
}

// ---------------------------------------------------------------------------
// The one kernel: BINARY ADD, float32, a, b and out contiguous, one shape.

struct tsr_plugin_plan {
  int64_t numel;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
};

// Checks what the ABI asks of every descriptor: TSR_INVALID_ARGUMENT when
// the request itself is malformed, whatever the op.
static tsr_status minimal_desc_check(const tsr_tensor_desc *t, int i) {
  if (t->struct_size < sizeof(tsr_tensor_desc)) {
    return minimal_error(TSR_INVALID_ARGUMENT, "operand %d: struct_size %zu is too small", i,
                         t->struct_size);
  }
  if (t->dtype < 0 || t->dtype >= TSR_DTYPE_COUNT || t->rank < 0 || t->rank > TSR_MAX_RANK ||
      t->device != 0) {
    return minimal_error(TSR_INVALID_ARGUMENT,
                         "operand %d: dtype %d, rank %d or device %d is invalid", i, (int)t->dtype,
                         (int)t->rank, (int)t->device);
  }
  if ((t->alignment & (t->alignment - 1)) != 0 || t->alignment > TSR_MAX_ALIGNMENT) {
    return minimal_error(TSR_INVALID_ARGUMENT,
                         "operand %d: alignment %u is not a power of two up to %d", i,
                         (unsigned)t->alignment, TSR_MAX_ALIGNMENT);
  }
  for (int32_t d = 0; d < t->rank; ++d) {
    if (t->sizes[d] < 0 || t->strides[d] < 0) {
      return minimal_error(TSR_INVALID_ARGUMENT,
                           "operand %d: sizes[%d] %lld or strides[%d] %lld is negative", i, (int)d,
                           (long long)t->sizes[d], (int)d, (long long)t->strides[d]);
    }
  }
  return TSR_OK;
}

// 1 when |t| is row-major contiguous with |rank| and |sizes|.
static int minimal_is_plain(const tsr_tensor_desc *t, int32_t rank, const int64_t *sizes) {
  if (t->rank != rank)
    return 0;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (t->sizes[d] != sizes[d])
      return 0;
    if (t->sizes[d] != 1 && t->strides[d] != stride)
      return 0;
    stride *= t->sizes[d];
  }
  return 1;
}

// Checks |signature| and fills |plan| (which may be a stack copy): the whole
// of op_supports and plan_create. A malformed request is TSR_INVALID_ARGUMENT;
// a valid one this plugin does not do is TSR_UNSUPPORTED (the core may then
// fall back to ref).
static tsr_status minimal_plan_build(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  if (signature == NULL || signature->struct_size < sizeof(tsr_op_signature)) {
    return minimal_error(TSR_INVALID_ARGUMENT, "signature is NULL or too small");
  }
  const char *op = tsr_op_name(signature->op);
  if (op == NULL || signature->op == TSR_OP_INVALID) {
    return minimal_error(TSR_INVALID_ARGUMENT, "op %d is not in the catalogue", (int)signature->op);
  }
  if (signature->op != TSR_OP_BINARY) {
    return minimal_error(TSR_UNSUPPORTED, "%s is not implemented (only binary add)", op);
  }
  if (signature->device != 0)
    return minimal_device_check("binary", signature->device);
  if (signature->num_inputs != 2 || signature->num_outputs != 1 || signature->inputs == NULL ||
      signature->outputs == NULL) {
    return minimal_error(TSR_INVALID_ARGUMENT, "binary: %d inputs and %d outputs, expected 2 and 1",
                         (int)signature->num_inputs, (int)signature->num_outputs);
  }
  // An attribute struct from an older ABI may end early: fields it lacks take
  // the catalogue's defaults (alpha 1).
  const tsr_binary_attrs *attrs = signature->attrs;
  if (attrs == NULL || !TSR_ABI_COVERS(attrs, tsr_binary_attrs, fn)) {
    return minimal_error(TSR_INVALID_ARGUMENT, "binary: attrs are NULL or end before fn");
  }
  if (attrs->fn < 0 || attrs->fn >= TSR_BINARY_FN_COUNT) {
    return minimal_error(TSR_INVALID_ARGUMENT, "binary: fn %d is not a binary fn", (int)attrs->fn);
  }
  const tsr_tensor_desc *t[3] = {&signature->inputs[0], &signature->inputs[1],
                                 &signature->outputs[0]};
  for (int i = 0; i < 3; ++i) {
    tsr_status status = minimal_desc_check(t[i], i);
    if (status != TSR_OK)
      return status;
  }
  const tsr_tensor_desc *out = t[2];
  // The catalogue's rules: one dtype; inputs of out's rank, each size equal
  // to out's or 1 (broadcast).
  for (int i = 0; i < 2; ++i) {
    if (t[i]->dtype != out->dtype || t[i]->rank != out->rank) {
      return minimal_error(TSR_INVALID_ARGUMENT,
                           "binary: operand %d's dtype or rank differs from out's", i);
    }
    for (int32_t d = 0; d < out->rank; ++d) {
      if (t[i]->sizes[d] != out->sizes[d] && t[i]->sizes[d] != 1) {
        return minimal_error(TSR_INVALID_ARGUMENT,
                             "binary: operand %d sizes[%d] is %lld, out's is %lld", i, (int)d,
                             (long long)t[i]->sizes[d], (long long)out->sizes[d]);
      }
    }
  }
  // What this plugin does of it.
  const double alpha = TSR_ABI_COVERS(attrs, tsr_binary_attrs, alpha) ? attrs->alpha : 1.0;
  if (attrs->fn != TSR_BINARY_ADD || alpha != 1.0 || out->dtype != TSR_FLOAT32) {
    return minimal_error(TSR_UNSUPPORTED,
                         "binary: only float32 add with alpha 1 (got fn %d, alpha %g, dtype %d)",
                         (int)attrs->fn, alpha, (int)out->dtype);
  }
  for (int i = 0; i < 3; ++i) {
    if (!minimal_is_plain(t[i], out->rank, out->sizes)) {
      return minimal_error(TSR_UNSUPPORTED,
                           "binary add: operand %d is not contiguous with out's shape "
                           "(no broadcasting, no strides here)",
                           i);
    }
  }
  plan->rank = out->rank;
  plan->numel = 1;
  for (int32_t d = 0; d < out->rank; ++d) {
    plan->sizes[d] = out->sizes[d];
    plan->numel *= out->sizes[d];
  }
  return TSR_OK;
}

// op_supports answers TSR_OK or TSR_UNSUPPORTED, nothing else (docs/abi.md
// 9.2): an invalid signature is "unsupported" here, with the same message;
// plan_create reports it as TSR_INVALID_ARGUMENT.
static tsr_status minimal_op_supports(const tsr_op_signature *signature) {
  tsr_plugin_plan scratch;
  return minimal_plan_build(signature, &scratch) == TSR_OK ? TSR_OK : TSR_UNSUPPORTED;
}

static tsr_status minimal_plan_create(const tsr_op_signature *signature,
                                      tsr_plugin_plan **out_plan) {
  if (out_plan == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "plan_create: out_plan is NULL");
  *out_plan = NULL;
  tsr_plugin_plan *plan = malloc(sizeof(*plan));
  if (plan == NULL)
    return minimal_error(TSR_OUT_OF_MEMORY, "plan_create: no memory");
  tsr_status status = minimal_plan_build(signature, plan);
  if (status != TSR_OK) {
    free(plan);
    return status;
  }
  *out_plan = plan;
  return TSR_OK;
}

static tsr_status minimal_plan_info_get(const tsr_plugin_plan *plan, tsr_plan_info *out_info) {
  if (plan == NULL || out_info == NULL || out_info->struct_size < sizeof(size_t)) {
    return minimal_error(TSR_INVALID_ARGUMENT,
                         "plan_info_get: plan or out_info is NULL or too small");
  }
  tsr_plan_info info = {
      .struct_size = out_info->struct_size,
      .engine = "minimal:add-loop",
      .workspace_bytes = 0,
      .saved_state_bytes = 0,
      .flags = TSR_PLAN_INFO_DETERMINISTIC,  // one loop, one order
  };
  memcpy(out_info, &info, info.struct_size < sizeof(info) ? info.struct_size : sizeof(info));
  return TSR_OK;
}

// The hot path: check the operands against the plan, resolve the pointers,
// run the loop. No allocation, no lock, no formatting unless it fails.
static tsr_status minimal_plan_execute(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                       tsr_plugin_stream *stream) {
  (void)stream;  // synchronous: the work is done when this returns
  if (plan == NULL || args == NULL || args->num_inputs != 2 || args->num_outputs != 1) {
    return minimal_error(TSR_INVALID_ARGUMENT, "plan_execute: plan or args do not match");
  }
  float *ptrs[3];
  const uint64_t bytes = (uint64_t)plan->numel * sizeof(float);
  for (int i = 0; i < 3; ++i) {
    const tsr_tensor_desc *t = i < 2 ? &args->inputs[i] : &args->outputs[0];
    if (t->struct_size < sizeof(tsr_tensor_desc) || t->dtype != TSR_FLOAT32 ||
        !minimal_is_plain(t, plan->rank, plan->sizes)) {
      return minimal_error(TSR_INVALID_ARGUMENT, "plan_execute: operand %d differs from the plan",
                           i);
    }
    if (bytes == 0) {
      ptrs[i] = NULL;
      continue;
    }
    tsr_status status = minimal_range_check("plan_execute", t->buffer, t->byte_offset, bytes, "");
    if (status != TSR_OK)
      return status;
    if (t->byte_offset % sizeof(float) != 0) {
      return minimal_error(TSR_INVALID_ARGUMENT, "plan_execute: operand %d is not float-aligned",
                           i);
    }
    ptrs[i] = (float *)(t->buffer->data + t->byte_offset);
  }
  // out may alias a or b exactly (the catalogue allows in place): element i
  // is read before it is written, so that is safe.
  for (int64_t i = 0; i < plan->numel; ++i) ptrs[2][i] = ptrs[0][i] + ptrs[1][i];
  return TSR_OK;
}

static tsr_status minimal_plan_destroy(tsr_plugin_plan *plan) {
  if (plan == NULL)
    return minimal_error(TSR_INVALID_ARGUMENT, "plan_destroy: plan is NULL");
  free(plan);
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// The table and the one exported symbol.

static const tsr_plugin_api k_minimal_api = {
    .struct_size = sizeof(tsr_plugin_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .name = "minimal",
    .version = "0.1.0",
    .vendor = "Tessera examples",
    .build_info = "C11, no libraries",
    // init, shutdown, host_pinned_*, allocator_trim and event_elapsed_get
    // are optional: NULL.
    .probe = minimal_probe,
    .device_count_get = minimal_device_count_get,
    .device_props_get = minimal_device_props_get,
    .buffer_alloc = minimal_buffer_alloc,
    .buffer_free = minimal_buffer_free,
    .buffer_host_ptr_get = minimal_buffer_host_ptr_get,
    .allocator_stats_get = minimal_allocator_stats_get,
    .copy_host_to_device = minimal_copy_host_to_device,
    .copy_device_to_host = minimal_copy_device_to_host,
    .copy_device_to_device = minimal_copy_device_to_device,
    .stream_create = minimal_stream_create,
    .stream_destroy = minimal_stream_destroy,
    .stream_synchronize = minimal_stream_done,
    .stream_query = minimal_stream_done,
    .stream_wait_event = minimal_stream_wait_event,
    .event_create = minimal_event_create,
    .event_destroy = minimal_event_destroy,
    .event_record = minimal_event_record,
    .event_query = minimal_event_done,
    .event_synchronize = minimal_event_done,
    .op_supports = minimal_op_supports,
    .plan_create = minimal_plan_create,
    .plan_info_get = minimal_plan_info_get,
    .plan_execute = minimal_plan_execute,
    .plan_destroy = minimal_plan_destroy,
};

TSR_ABI_EXPORT tsr_status tsr_plugin_entry(const tsr_host_api *host,
                                           const tsr_plugin_api **out_api);

tsr_status tsr_plugin_entry(const tsr_host_api *host, const tsr_plugin_api **out_api) {
  if (host == NULL || out_api == NULL)
    return TSR_INVALID_ARGUMENT;  // nowhere to say why
  if (!TSR_ABI_COVERS(host, tsr_host_api, abi_major) || host->abi_major != TSR_ABI_VERSION_MAJOR) {
    return TSR_ABI_MISMATCH;
  }
  if (!TSR_ABI_HAS(host, tsr_host_api, error_set))
    return TSR_ABI_MISMATCH;
  g_host = host;
  *out_api = &k_minimal_api;
  return TSR_OK;
}
