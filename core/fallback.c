// Fallback: an op its device lacks runs on the ref plugin. Operand storages
// are copied to ref and the outputs' back, and the copies are counted. It is
// the slow path by design; the policy (allow / warn once per op / deny) makes
// it visible.
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "context.h"
#include "device.h"
#include "dispatch.h"
#include "storage.h"
#include "stream.h"
#include "tensor.h"

typedef struct fallback_copy {
  tsr_storage *source;
  tsr_plugin_buffer *ref_buffer;
  int is_output;
} fallback_copy;

static tsr_status copy_to_ref(tsr_device *device, tsr_stream *stream, tsr_device *ref,
                              fallback_copy *copy) {
  const tsr_plugin_api *ref_api = ref->plugin->api;
  uint64_t bytes = copy->source->bytes;
  TSR_RETURN_IF_ERROR(ref_api->buffer_alloc(ref->index, bytes, NULL, &copy->ref_buffer));
  void *host = NULL;
  TSR_RETURN_IF_ERROR(ref_api->buffer_host_ptr_get(copy->ref_buffer, &host));
  if (bytes == 0) return TSR_OK;
  return device->plugin->api->copy_device_to_host(stream->handle, copy->source->buffer, 0, host,
                                                  bytes);
}

tsr_status tsr_fallback_run(tsr_device *device, const tsr_op_signature *signature,
                            const char *reason, tsr_tensor *const *inputs,
                            tsr_tensor *const *outputs) {
  const char *op_name = tsr_op_name(signature->op);
  tsr_context *context = device->owner;
  tsr_device *ref = tsr_context_ref_device(context);
  if (ref == device || inputs == NULL || outputs == NULL) {
    return tsr_error_set(TSR_UNSUPPORTED, "%s on %s: %s", op_name, device->name, reason);
  }
  int policy = context ? atomic_load(&context->fallback_policy) : TSR_FALLBACK_WARN;
  if (policy == TSR_FALLBACK_DENY) {
    if (context) atomic_fetch_add(&context->fallback_refusals, 1);
    return tsr_error_set(TSR_UNSUPPORTED, "%s on %s: %s (fallback to ref is denied by policy)",
                         op_name, device->name, reason);
  }
  if (ref == NULL || !TSR_ABI_HAS(ref->plugin->api, tsr_plugin_api, buffer_host_ptr_get)) {
    return tsr_error_set(TSR_UNSUPPORTED, "%s on %s: %s, and no ref device is loaded to fall back on",
                         op_name, device->name, reason);
  }
  if (policy == TSR_FALLBACK_WARN &&
      atomic_exchange(&device->fallback_warned[signature->op], 1) == 0) {
    tsr_log(TSR_LOG_WARNING, "%s on %s falls back to %s (%s); operands are copied each call",
            op_name, device->name, ref->name, reason);
  }
  tsr_stream *stream = tsr_stream_current(device);
  int32_t operands = signature->num_inputs + signature->num_outputs;
  fallback_copy copies[TSR_MAX_OPERANDS];
  int32_t copy_of[TSR_MAX_OPERANDS];
  int32_t copy_count = 0;
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < operands && status == TSR_OK; ++i) {
    tsr_storage *s = i < signature->num_inputs ? inputs[i]->storage
                                               : outputs[i - signature->num_inputs]->storage;
    int32_t found = -1;
    for (int32_t c = 0; c < copy_count; ++c) {
      if (copies[c].source == s) found = c;
    }
    if (found < 0) {
      found = copy_count++;
      copies[found].source = s;
      copies[found].ref_buffer = NULL;
      copies[found].is_output = 0;
      status = copy_to_ref(device, stream, ref, &copies[found]);
      if (context) atomic_fetch_add(&context->fallback_copies, 1);
    }
    if (i >= signature->num_inputs) copies[found].is_output = 1;
    copy_of[i] = found;
  }
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  if (status == TSR_OK) {
    for (int32_t i = 0; i < operands; ++i) {
      descs[i] = i < signature->num_inputs ? signature->inputs[i]
                                           : signature->outputs[i - signature->num_inputs];
      descs[i].buffer = copies[copy_of[i]].ref_buffer;
      descs[i].device = ref->index;
      uint32_t base = ref->props.base_alignment > TSR_MAX_ALIGNMENT ? TSR_MAX_ALIGNMENT
                                                                     : ref->props.base_alignment;
      uint64_t off = descs[i].byte_offset;
      uint32_t a = base;
      if (off != 0 && (off & (~off + 1)) < a) a = (uint32_t)(off & (~off + 1));
      descs[i].alignment = a;
    }
    tsr_op_signature ref_signature = *signature;
    ref_signature.device = ref->index;
    ref_signature.inputs = descs;
    ref_signature.outputs = descs + signature->num_inputs;
    status = tsr_dispatch_signature_run(ref, &ref_signature, NULL, NULL, 0);
  }
  if (status == TSR_OK) status = ref->plugin->api->stream_synchronize(tsr_stream_current(ref)->handle);
  for (int32_t c = 0; c < copy_count && status == TSR_OK; ++c) {
    if (!copies[c].is_output || copies[c].source->bytes == 0) continue;
    void *host = NULL;
    status = ref->plugin->api->buffer_host_ptr_get(copies[c].ref_buffer, &host);
    if (status == TSR_OK) {
      status = device->plugin->api->copy_host_to_device(stream->handle, host, copies[c].source->buffer,
                                                        0, copies[c].source->bytes);
    }
    if (context) atomic_fetch_add(&context->fallback_copies, 1);
  }
  for (int32_t c = 0; c < copy_count; ++c) {
    if (copies[c].ref_buffer != NULL) ref->plugin->api->buffer_free(copies[c].ref_buffer, NULL);
  }
  if (status != TSR_OK) {
    return tsr_error_set(status, "%s on %s (fallback to %s): %s", op_name, device->name, ref->name,
                         tsr_error_message());
  }
  if (context) atomic_fetch_add(&context->fallback_ops, 1);
  for (int32_t i = 0; i < signature->num_outputs; ++i) {
    tsr_storage_mark_used(outputs[i]->storage, stream);
    atomic_fetch_add(&outputs[i]->storage->version, 1);
  }
  return TSR_OK;
}
