// The dispatcher: tensors to descriptors, a plan from the cache, execution on
// the calling thread's current stream. This is the eager hot path: no lock,
// no allocation, no formatting unless something fails or tracing is on.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "context.h"
#include "device.h"
#include "dispatch.h"
#include "storage.h"
#include "stream.h"
#include "tensor.h"
#include "trace.h"

static inline uint32_t alignment_of(uint64_t byte_offset, uint32_t base_alignment) {
  uint32_t a = base_alignment > TSR_MAX_ALIGNMENT ? TSR_MAX_ALIGNMENT : base_alignment;
  if (byte_offset != 0) {
    uint64_t low = byte_offset & (~byte_offset + 1);
    if (low < a) a = (uint32_t)low;
  }
  return a;
}

// Fills |d| from |t| and, when |w| is not NULL, writes the operand's plan-key
// words there (plan_cache.h's layout, alias group -1) in the same pass.
// Returns the number of key words. Inlined, so the NULL test folds away.
#if defined(__GNUC__)
#define TSR_DISPATCH_INLINE inline __attribute__((always_inline))
#else
#define TSR_DISPATCH_INLINE inline
#endif
static TSR_DISPATCH_INLINE uint32_t desc_fill(const tsr_tensor *t, tsr_tensor_desc *d,
                                              uint64_t *w) {
  size_t elem = tsr_dtype_size(t->dtype);
  const int32_t rank = t->rank;
  d->struct_size = sizeof(*d);
  d->dtype = t->dtype;
  d->rank = rank;
  for (int32_t r = 0; r < rank; ++r) {
    d->sizes[r] = t->sizes[r];
    d->strides[r] = t->strides[r];
    if (w != NULL) {
      w[1 + 2 * r] = (uint64_t)t->sizes[r];
      w[2 + 2 * r] = (uint64_t)t->strides[r];
    }
  }
  d->byte_offset = (uint64_t)t->offset * elem;
  d->buffer = t->storage->buffer;
  d->device = t->device->index;
  d->alignment = alignment_of(d->byte_offset, t->device->props.base_alignment);
  d->storage_version = atomic_load_explicit(&t->storage->version, memory_order_relaxed);
  d->alias_group = -1;
  d->reserved = 0;
  if (w == NULL) return 0;
  w[0] = tsr_plan_key_operand_word(d);
  return 1 + 2 * (uint32_t)rank;
}

void tsr_dispatch_desc_fill(const tsr_tensor *t, tsr_tensor_desc *d) {
  desc_fill(t, d, NULL);
}

static int is_elementwise(tsr_op_id_t op) {
  switch (op) {
    case TSR_OP_COPY:
    case TSR_OP_CAST:
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE:
    case TSR_OP_WHERE:
    case TSR_OP_CLAMP:
      return 1;
    default:
      return 0;
  }
}

// Whether desc_expand would leave |d| as it is for an output of |rank| and
// |sizes| with nothing kept: same shape and no size-1 dim with a stride.
static inline int desc_expand_is_noop(const tsr_tensor_desc *d, int32_t rank,
                                      const int64_t *sizes) {
  if (d->rank != rank) return 0;
  int64_t differ = 0;
  for (int32_t r = 0; r < rank; ++r) {
    differ |= (d->sizes[r] ^ sizes[r]) | ((d->sizes[r] == 1) & (d->strides[r] != 0));
  }
  return differ == 0;
}

// Broadcasts |d| to the |rank| leading-dims-first shape |sizes|, keeping its
// last |keep| dims as they are. Size-1 dims stretch with stride 0.
static tsr_status desc_expand(tsr_tensor_desc *d, int32_t rank, const int64_t *sizes, int32_t keep,
                              const char *op_name, const char *operand, int32_t index) {
  if (d->rank == rank) {
    int32_t r = 0;
    while (r < rank - keep && d->sizes[r] == sizes[r]) ++r;
    if (r == rank - keep) {  // same shape: only normalise size-1 strides
      for (r = 0; r < rank - keep; ++r) {
        if (d->sizes[r] == 1) d->strides[r] = 0;
      }
      return TSR_OK;
    }
  }
  if (d->rank > rank || d->rank < keep) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s %d has rank %d, the output rank %d", op_name,
                         operand, index, d->rank, rank);
  }
  int64_t new_sizes[TSR_MAX_RANK];
  int64_t new_strides[TSR_MAX_RANK];
  int32_t shift = rank - d->rank;
  for (int32_t r = rank - 1; r >= 0; --r) {
    int32_t src = r - shift;
    int64_t size = src >= 0 ? d->sizes[src] : 1;
    int64_t stride = src >= 0 ? d->strides[src] : 0;
    if (r >= rank - keep) {
      new_sizes[r] = size;
      new_strides[r] = stride;
    } else if (size == sizes[r]) {
      new_sizes[r] = size;
      new_strides[r] = size == 1 ? 0 : stride;
    } else if (size == 1) {
      new_sizes[r] = sizes[r];
      new_strides[r] = 0;
    } else {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: %s %d has size %lld at dim %d where the output has %lld", op_name,
                           operand, index, (long long)size, src, (long long)sizes[r]);
    }
  }
  d->rank = rank;
  memcpy(d->sizes, new_sizes, sizeof(int64_t) * (size_t)rank);
  memcpy(d->strides, new_strides, sizeof(int64_t) * (size_t)rank);
  return TSR_OK;
}

// Byte extent [begin, end) of a descriptor inside its buffer.
static void desc_extent(const tsr_tensor_desc *d, uint64_t *begin, uint64_t *end) {
  uint64_t last = 0;
  for (int32_t r = 0; r < d->rank; ++r) {
    if (d->sizes[r] == 0) {
      *begin = *end = d->byte_offset;
      return;
    }
    last += (uint64_t)(d->sizes[r] - 1) * (uint64_t)d->strides[r];
  }
  *begin = d->byte_offset;
  *end = d->byte_offset + (last + 1) * tsr_dtype_size(d->dtype);
}

// Operands of one call that overlap in memory share an alias group, which is
// part of the plan key: an in-place plan differs from an out-of-place one.
// Groups are the connected components of the overlap relation, each named by
// its lowest operand index.
// Returns whether any operand got a group.
static int alias_groups_assign(tsr_tensor_desc *descs, int32_t count) {
  // The common case, every operand in its own buffer, decided first.
  int shared = 0;
  for (int32_t i = 1; i < count && !shared; ++i) {
    for (int32_t j = 0; j < i; ++j) shared |= descs[i].buffer == descs[j].buffer;
  }
  if (!shared) return 0;
  int32_t parent[TSR_MAX_OPERANDS];
  int any = 0;
  for (int32_t i = 0; i < count; ++i) parent[i] = i;
  for (int32_t i = 1; i < count; ++i) {
    for (int32_t j = 0; j < i; ++j) {
      if (descs[i].buffer != descs[j].buffer || descs[i].buffer == NULL) continue;
      uint64_t bi, ei, bj, ej;
      desc_extent(&descs[i], &bi, &ei);
      desc_extent(&descs[j], &bj, &ej);
      if (bi < ej && bj < ei) {
        int32_t ri = i, rj = j;
        while (parent[ri] != ri) ri = parent[ri];
        while (parent[rj] != rj) rj = parent[rj];
        if (ri != rj) parent[ri > rj ? ri : rj] = ri < rj ? ri : rj;
        any = 1;
      }
    }
  }
  if (!any) return 0;
  for (int32_t i = 0; i < count; ++i) {
    int32_t r = i;
    while (parent[r] != r) r = parent[r];
    int lone = 1;
    for (int32_t k = 0; k < count && lone; ++k) {
      if (k == i) continue;
      int32_t rk = k;
      while (parent[rk] != rk) rk = parent[rk];
      if (rk == r) lone = 0;
    }
    descs[i].alias_group = lone ? -1 : r;
  }
  return 1;
}

// A fallback entry (plan NULL) for an op the device refused, with |reason|.
// When the cache is full the entry lives in this thread's scratch until the
// next refusal on the thread: only plan and fallback_reason are read from it.
static tsr_status refusal_entry(tsr_device *device, const tsr_plan_key *key, const char *reason,
                                const tsr_plan_entry **out_entry) {
  TSR_RETURN_IF_ERROR(tsr_plan_cache_insert(&device->plan_cache, key, NULL, NULL,
                                            reason[0] ? reason : "unsupported", out_entry));
  if (*out_entry == NULL) {
    static _Thread_local char scratch_reason[512];
    static _Thread_local tsr_plan_entry scratch;
    snprintf(scratch_reason, sizeof(scratch_reason), "%s", reason[0] ? reason : "unsupported");
    memset(&scratch, 0, sizeof(scratch));
    scratch.fallback_reason = scratch_reason;
    *out_entry = &scratch;
  }
  return TSR_OK;
}

// Finds or creates the plan for |signature| on |device|. A device that
// refuses the op gets a fallback entry (plan NULL, with the reason): whether
// op_supports or plan_create says TSR_UNSUPPORTED, or the plugin returns a
// plan not marked bit-reproducible while the signature requires it.
static tsr_status plan_create_entry(tsr_device *device, const tsr_op_signature *signature,
                                    const tsr_plan_key *key, const tsr_plan_entry **out_entry,
                                    tsr_plugin_plan **out_uncached);

static tsr_status plan_get(tsr_device *device, const tsr_op_signature *signature,
                           const tsr_plan_key *key, const tsr_plan_entry **out_entry,
                           tsr_plugin_plan **out_uncached) {
  *out_uncached = NULL;
  const tsr_plan_entry *entry = tsr_plan_cache_lookup(&device->plan_cache, key);
  if (entry != NULL) {
    *out_entry = entry;
    return TSR_OK;
  }
  // A miss asks the plugin, which may report its internal choices through
  // the host's error_set on the way to a plan (a size below its threshold,
  // a vendor path it declined). A plan or a refusal entry (which keeps its
  // own reason) is a success: the caller's last error is as it was before.
  tsr_error_saved saved;
  tsr_error_save(&saved);
  tsr_status status = plan_create_entry(device, signature, key, out_entry, out_uncached);
  if (status == TSR_OK) tsr_error_restore(&saved);
  return status;
}

// plan_get's miss: asks the plugin and caches the plan or the refusal.
static tsr_status plan_create_entry(tsr_device *device, const tsr_op_signature *signature,
                                    const tsr_plan_key *key, const tsr_plan_entry **out_entry,
                                    tsr_plugin_plan **out_uncached) {
  const tsr_plugin_api *api = device->plugin->api;
  const char *op_name = tsr_op_name(signature->op);
  tsr_error_clear();
  tsr_status status = TSR_UNSUPPORTED;
  if (TSR_ABI_HAS(api, tsr_plugin_api, op_supports) && TSR_ABI_HAS(api, tsr_plugin_api, plan_create)) {
    status = api->op_supports(signature);
  } else {
    tsr_error_set(TSR_UNSUPPORTED, "%s: the plugin has no kernels", device->name);
  }
  tsr_plugin_plan *plan = NULL;
  if (status == TSR_OK) status = api->plan_create(signature, &plan);
  // Refused at plan time too (docs/abi.md 9.6: no engine for this
  // configuration, or none bit-reproducible under REQUIRE_DETERMINISM): the
  // same answer as op_supports', so the fallback policy decides.
  if (status == TSR_UNSUPPORTED) return refusal_entry(device, key, tsr_error_message(), out_entry);
  if (status != TSR_OK) {
    tsr_error_set(status, "%s on %s: %s", op_name, device->name, tsr_error_message());
    return tsr_device_check_status(device, status);
  }
  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  if (TSR_ABI_HAS(api, tsr_plugin_api, plan_info_get)) {
    status = api->plan_info_get(plan, &info);
    if (status != TSR_OK) {
      api->plan_destroy(plan);
      return tsr_error_set(status, "%s on %s: plan_info_get: %s", op_name, device->name,
                           tsr_error_message());
    }
  }
  if (info.engine == NULL) info.engine = "unnamed";
  if ((signature->flags & TSR_PLAN_REQUIRE_DETERMINISM) &&
      !(info.flags & TSR_PLAN_INFO_DETERMINISTIC)) {
    // The plugin broke the rule (a plan under REQUIRE_DETERMINISM must be
    // bit-reproducible, or refused); trust the plan's own claim, not the
    // acceptance. The engine name belongs to the plan: format it first.
    char reason[512];
    snprintf(reason, sizeof(reason),
             "%s returned a plan (%s) not marked bit-reproducible "
             "(TSR_PLAN_INFO_DETERMINISTIC) while determinism is required",
             device->name, info.engine);
    api->plan_destroy(plan);
    return refusal_entry(device, key, reason, out_entry);
  }
  status = tsr_plan_cache_insert(&device->plan_cache, key, plan, &info, NULL, out_entry);
  if (status != TSR_OK) {
    api->plan_destroy(plan);
    return status;
  }
  if (*out_entry == NULL) {
    // Cache full: this call owns the plan. Keep the info in a static entry.
    *out_uncached = plan;
  } else if ((*out_entry)->plan != plan) {
    api->plan_destroy(plan);  // a concurrent insert won
  }
  if (*out_uncached != NULL) {
    // No key words: only plan, info and reason are read from it.
    static _Thread_local tsr_plan_entry scratch;
    scratch.plan = plan;
    scratch.info = info;
    scratch.fallback_reason = NULL;
    scratch.key_length = 0;
    *out_entry = &scratch;
  }
  return TSR_OK;
}

// tsr_dispatch_signature_run with the signature's key built.
static tsr_status signature_run_keyed(tsr_device *device, tsr_op_signature *signature,
                                      const tsr_plan_key *key, tsr_tensor *const *inputs,
                                      tsr_tensor *const *outputs, int allow_fallback) {
  const tsr_plan_entry *entry = NULL;
  tsr_plugin_plan *uncached = NULL;
  TSR_RETURN_IF_ERROR(plan_get(device, signature, key, &entry, &uncached));
  if (entry->plan == NULL) {
    if (!allow_fallback) {
      return tsr_error_set(TSR_UNSUPPORTED, "%s on %s: %s", tsr_op_name(signature->op),
                           device->name, entry->fallback_reason);
    }
    return tsr_fallback_run(device, signature, entry->fallback_reason, inputs, outputs);
  }
  const tsr_plugin_api *api = device->plugin->api;
  tsr_stream *stream = tsr_stream_current(device);
  tsr_exec_args args;
  args.struct_size = sizeof(args);
  args.num_inputs = signature->num_inputs;
  args.num_outputs = signature->num_outputs;
  args.inputs = signature->inputs;
  args.outputs = signature->outputs;
  args.workspace = NULL;
  args.workspace_offset = 0;
  args.workspace_bytes = entry->info.workspace_bytes;
  args.saved_state = NULL;
  args.saved_state_offset = 0;
  args.saved_state_bytes = 0;
  int temporary = 0;
  tsr_status status = TSR_OK;
  // Saved state is optional on both sides (docs/abi.md): eager calls that
  // keep no tape pass none and the plan skips saving.
  if (status == TSR_OK && args.workspace_bytes != 0) {
    status = tsr_stream_workspace_acquire(stream, args.workspace_bytes, &args.workspace, &temporary);
  }
  uint64_t t0 = 0;
  int tracing = tsr_trace_enabled();
  if (tracing) t0 = tsr_trace_now_ns();
  if (status == TSR_OK) status = api->plan_execute(entry->plan, &args, stream->handle);
  if (args.workspace != NULL) tsr_stream_workspace_release(stream, args.workspace, temporary);
  if (tracing && status == TSR_OK) {
    // Tracing measures completed work, so it waits for asynchronous devices.
    status = api->stream_synchronize(stream->handle);
    tsr_trace_op(device->name, device->plugin->api->name, tsr_op_name(signature->op),
                 entry->info.engine, t0, tsr_trace_now_ns());
  }
  if (uncached != NULL) {
    api->stream_synchronize(stream->handle);
    api->plan_destroy(uncached);
  }
  if (status != TSR_OK) {
    tsr_error_set(status, "%s on %s: %s", tsr_op_name(signature->op), device->name,
                  tsr_error_message());
    return tsr_device_check_status(device, status);
  }
  if (inputs != NULL) {
    for (int32_t i = 0; i < signature->num_inputs; ++i) {
      tsr_storage_mark_used(inputs[i]->storage, stream);
    }
  }
  if (outputs != NULL) {
    for (int32_t i = 0; i < signature->num_outputs; ++i) {
      tsr_storage_mark_used(outputs[i]->storage, stream);
      // A load and a store, not an atomic add (a locked instruction). The
      // count is exact for writes the caller orders; two threads writing
      // one tensor at once race on its data anyway.
      atomic_uint_fast64_t *version = &outputs[i]->storage->version;
      atomic_store_explicit(version, atomic_load_explicit(version, memory_order_relaxed) + 1,
                            memory_order_relaxed);
    }
  }
  return TSR_OK;
}

tsr_status tsr_dispatch_signature_run(tsr_device *device, tsr_op_signature *signature,
                                      tsr_tensor *const *inputs, tsr_tensor *const *outputs,
                                      int allow_fallback) {
  tsr_plan_key key;
  TSR_RETURN_IF_ERROR(tsr_plan_key_build(signature, &key));
  return signature_run_keyed(device, signature, &key, inputs, outputs, allow_fallback);
}

// Builds the signature of an op call and runs it, or (|out_engine| not NULL)
// only finds or creates its plan and reports the plan's engine.
static tsr_status dispatch_common(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                                  int32_t num_outputs, tsr_tensor *const *outputs,
                                  const void *attrs, const char **out_engine) {
  const char *op_name = tsr_op_name(op);
  if (op_name == NULL || op == TSR_OP_INVALID) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "op_run: op id %d is not in the catalogue", op);
  }
  if (num_inputs < 0 || num_outputs < 1 || num_inputs + num_outputs > TSR_MAX_OPERANDS) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %d inputs and %d outputs (at most %d in all, "
                         "at least one output)", op_name, num_inputs, num_outputs, TSR_MAX_OPERANDS);
  }
  if ((num_inputs > 0 && inputs == NULL) || outputs == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: the %s array is NULL", op_name,
                         outputs == NULL ? "outputs" : "inputs");
  }
  if (attrs != NULL) {
    size_t size = *(const size_t *)attrs;
    if (size < sizeof(size_t) || size > 512) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: attrs.struct_size %zu is not a valid size",
                           op_name, size);
    }
  }
  tsr_device *device = NULL;
  for (int32_t i = 0; i < num_inputs + num_outputs; ++i) {
    const tsr_tensor *t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
    if (t == NULL || !tsr_tensor_is_live(t)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s %d %s", op_name,
                           i < num_inputs ? "input" : "output",
                           i < num_inputs ? i : i - num_inputs,
                           t == NULL ? "is NULL" : "was released (a handle used after release)");
    }
    if (device == NULL) {
      device = t->device;
    } else if (t->device != device) {
      return tsr_fail(device, TSR_INVALID_ARGUMENT,
                      "%s: operands on two devices, %s and %s; move one with tsr_tensor_to_device",
                      op_name, device->name, t->device->name);
    }
  }
  if (atomic_load_explicit(&device->retired, memory_order_relaxed)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: the context of device %s was destroyed",
                         op_name, device->name);
  }
  if (atomic_load_explicit(&device->lost, memory_order_relaxed)) {
    return tsr_fail(device, TSR_DEVICE_LOST, "%s: device %s is lost", op_name, device->name);
  }
  // The descriptors and, in the same pass, the operands' key words. A
  // broadcast, a size-1 dim's stride or an alias group changes descriptors
  // afterwards; the key is then built again from them (rekey).
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  tsr_plan_key key;
  uint32_t n = TSR_PLAN_KEY_HEAD_WORDS;
  for (int32_t i = 0; i < num_inputs; ++i) n += desc_fill(inputs[i], &descs[i], key.words + n);
  for (int32_t i = 0; i < num_outputs; ++i) {
    n += desc_fill(outputs[i], &descs[num_inputs + i], key.words + n);
  }
  const tsr_tensor_desc *out0 = &descs[num_inputs];
  tsr_status status = TSR_OK;
  int rekey = 0;
  if (is_elementwise(op)) {
    for (int32_t i = 0; i < num_inputs && status == TSR_OK; ++i) {
      if (desc_expand_is_noop(&descs[i], out0->rank, out0->sizes)) continue;
      status = desc_expand(&descs[i], out0->rank, out0->sizes, 0, op_name, "input", i);
      rekey = 1;
    }
  } else if (op == TSR_OP_MATMUL && num_inputs >= 2 && out0->rank >= 2) {
    for (int32_t i = 0; i < 2 && status == TSR_OK; ++i) {
      status = desc_expand(&descs[i], out0->rank, out0->sizes, 2, op_name, "input", i);
    }
    if (status == TSR_OK && num_inputs >= 3) {
      status = desc_expand(&descs[2], out0->rank, out0->sizes, 0, op_name, "bias", 2);
    }
    rekey = 1;
  }
  if (status != TSR_OK) return tsr_fail(device, status, "%s", tsr_error_message());
  rekey |= alias_groups_assign(descs, num_inputs + num_outputs);
  tsr_op_signature signature;
  signature.struct_size = sizeof(signature);
  signature.op = op;
  signature.device = device->index;
  signature.num_inputs = num_inputs;
  signature.num_outputs = num_outputs;
  signature.inputs = descs;
  signature.outputs = descs + num_inputs;
  signature.attrs = attrs;
  signature.math_mode = TSR_MATH_STRICT;
  signature.flags = atomic_load_explicit(&device->owner->deterministic, memory_order_relaxed)
                        ? TSR_PLAN_REQUIRE_DETERMINISM
                        : 0;
  if (rekey) {
    status = tsr_plan_key_build(&signature, &key);
    if (status != TSR_OK) return tsr_context_fail(device->owner, status);
  } else {
    tsr_plan_key_head_put(&signature, key.words);
    tsr_plan_key_finish(&key, n, attrs);
  }
  if (out_engine != NULL) {
    const tsr_plan_entry *entry = NULL;
    tsr_plugin_plan *uncached = NULL;
    status = plan_get(device, &signature, &key, &entry, &uncached);
    if (status != TSR_OK) return tsr_context_fail(device->owner, status);
    if (uncached != NULL) {
      // Plan cache full: the engine name dies with the plan.
      device->plugin->api->plan_destroy(uncached);
      *out_engine = "(plan not cached: the plan cache is full)";
    } else {
      *out_engine = entry->plan != NULL ? entry->info.engine : "fallback: not on this device";
    }
    return TSR_OK;
  }
  status = signature_run_keyed(device, &signature, &key, inputs, outputs, 1);
  if (status != TSR_OK) return tsr_context_fail(device->owner, status);
  return TSR_OK;
}

tsr_status tsr_dispatch(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                        int32_t num_outputs, tsr_tensor *const *outputs, const void *attrs) {
  return dispatch_common(op, num_inputs, inputs, num_outputs, outputs, attrs, NULL);
}

tsr_status tsr_op_engine_get(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                             int32_t num_outputs, tsr_tensor *const *outputs, const void *attrs,
                             const char **out_engine) {
  if (out_engine == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "op_engine_get: out_engine is NULL");
  *out_engine = NULL;
  return dispatch_common(op, num_inputs, inputs, num_outputs, outputs, attrs, out_engine);
}

tsr_status tsr_op_run(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                      int32_t num_outputs, tsr_tensor *const *outputs, const void *attrs) {
  return tsr_dispatch(op, num_inputs, inputs, num_outputs, outputs, attrs);
}
