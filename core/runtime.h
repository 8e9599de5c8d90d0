// The core's objects: loaded plugins, devices, streams, storage and tensors.
//
// Plugins and devices are process-wide: a plugin's table and host binding are
// global to its shared object, so two contexts that find the same plugin
// share one loaded copy (reference-counted by the contexts using it). A
// context holds the list of devices its discovery found, its default device,
// fallback policy and sticky error.
#ifndef TESSERA_CORE_RUNTIME_H_
#define TESSERA_CORE_RUNTIME_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "plan_cache.h"
#include "tessera/core.h"

#define TSR_MAX_PLUGINS 32
// Thread-locals read on every eager op. initial-exec makes each access one
// instruction instead of a __tls_get_addr call, which the default model
// costs on every op (docs/performance.md, "Measurements behind the code's
// decisions"); they are small, so the static TLS block of a libtessera that
// is dlopened still has room for them.
#define TSR_HOT_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#define TSR_STORAGE_MAX_STREAMS 4

typedef struct tsr_plugin tsr_plugin;

struct tsr_plugin {
  char *path;                    // realpath of the shared object
  void *dl_handle;               // never dlclosed once its entry ran
  // The descriptor it was checked and loaded through (/proc/self/fd/N),
  // kept open while it is loaded so that no other library gets that name
  // (dlopen matches a loaded library by name first); -1 when loaded by path.
  int fd;
  const tsr_plugin_api *api;
  tsr_host_api host;             // host.ctx points back at this record
  int32_t context_refs;          // contexts using it; guarded by the registry lock
  int32_t device_count;          // as the plugin reported at start
};

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
  tsr_context *owner;            // the context it belongs to
  atomic_uint_least8_t fallback_warned[TSR_OP_COUNT];
};

struct tsr_stream {
  atomic_int refs;
  tsr_device *device;
  tsr_plugin_stream *handle;
  // Scratch for plans with a workspace. Streams are in-order, so one buffer
  // serves every op queued on the stream; a second thread using the stream
  // at the same moment takes a temporary one instead.
  atomic_int workspace_busy;
  tsr_plugin_buffer *workspace;
  uint64_t workspace_bytes;
};

struct tsr_event {
  tsr_device *device;
  tsr_plugin_event *handle;
};

// Drops one reference from |refs|; returns 1 when it was the last. A count
// of 1 (read with acquire, pairing with other holders' releasing drops)
// means the caller holds the only reference, and then no other thread can
// change it: the locked decrement is skipped. That is the common case for
// an eager op's temporaries.
static inline int tsr_ref_drop(atomic_int *refs) {
  if (atomic_load_explicit(refs, memory_order_acquire) == 1)
    return 1;
  return atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

typedef struct tsr_storage {
  atomic_int refs;
  tsr_device *device;
  tsr_plugin_buffer *buffer;
  uint64_t bytes;
  atomic_uint_fast64_t version;
  // Streams that used the storage, so that its free waits for all of them.
  // A storage used by more streams than fit sets |many_streams|; its free
  // then waits for the whole device.
  _Atomic(tsr_stream *) streams[TSR_STORAGE_MAX_STREAMS];
  atomic_int many_streams;
  struct tsr_storage *next_free;
} tsr_storage;

struct tsr_scope_stack;

// tsr_tensor.live: set while the handle is live, poisoned when its last
// reference goes (tensor.c). A released handle's memory is not handed out
// again before TSR_TENSOR_QUARANTINE further releases on the same thread, so
// that using or releasing it in that window is a clean error, found by a
// compare.
#define TSR_TENSOR_LIVE 0x7e5a11feu
#define TSR_TENSOR_RELEASED 0xdeadbeefu
#define TSR_TENSOR_QUARANTINE 256

struct tsr_tensor {
  atomic_int refs;
  uint32_t live;  // TSR_TENSOR_LIVE or TSR_TENSOR_RELEASED
  tsr_dtype_t dtype;
  int32_t rank;
  tsr_storage *storage;
  tsr_device *device;
  int64_t offset;                // in elements
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
  struct tsr_tensor *next_free;
  // An extension slot for a layer above the core (the SDK's autograd keeps
  // the node that made the tensor, its gradient and its requires-grad flag
  // here: sdk/autograd.c). The core clears it when it makes a handle and,
  // when the last reference goes, calls |ext_release| if set; what the slot
  // holds is owned by whoever set |ext_release|. Plain fields, so reading
  // them on the eager path costs no lookup.
  void (*ext_release)(struct tsr_tensor *tensor);
  void *ext_node;
  struct tsr_tensor *ext_tensor;
  uint32_t ext_flags;
  // The scope that holds this handle's creation reference (scope.c), or NULL.
  int32_t scope_slot;
  struct tsr_scope_stack *scope_owner;
};

// 1 when |t| is a live handle (not released). A compare, for the hot path.
static inline int tsr_tensor_is_live(const tsr_tensor *t) { return t->live == TSR_TENSOR_LIVE; }

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

// --- registry.c: the process-wide plugin and device tables --------------

// Loads (or reuses) the plugin at |path| for |context|; on rejection returns
// the status with the reason as this thread's error. Thread-safe.
tsr_status tsr_registry_plugin_acquire(tsr_context *context, const char *path,
                                       tsr_plugin **out_plugin);
// Drops |context|'s use of |plugin|; the last user shuts it down. Thread-safe.
void tsr_registry_plugin_release(tsr_plugin *plugin);
// The process thread pool (created with the first context). Thread-safe.
struct tsr_thread_pool *tsr_registry_thread_pool(void);
tsr_status tsr_registry_thread_pool_acquire(int32_t num_threads);
void tsr_registry_thread_pool_release(void);

// --- discovery.c --------------------------------------------------------

// Finds plugin candidates in discovery order and loads each, filling the
// context's plugin and rejected lists. Thread-safe.
tsr_status tsr_discovery_run(tsr_context *context, const tsr_context_options *options);

// --- device.c ------------------------------------------------------------

tsr_status tsr_device_create(tsr_context *context, tsr_plugin *plugin, int32_t index,
                             tsr_device **out_device);
void tsr_device_destroy(tsr_device *device);
// Marks |device| lost when |status| says so. Returns |status|.
tsr_status tsr_device_check_status(tsr_device *device, tsr_status status);

// --- stream.c ------------------------------------------------------------

tsr_status tsr_stream_create_internal(tsr_device *device, uint32_t flags, tsr_stream **out_stream);
// The calling thread's current stream for |device|. Never NULL.
tsr_stream *tsr_stream_current(tsr_device *device);
// Takes the stream's workspace of at least |bytes| or a temporary one;
// give it back with tsr_stream_workspace_release. Thread-safe.
tsr_status tsr_stream_workspace_acquire(tsr_stream *stream, uint64_t bytes,
                                        tsr_plugin_buffer **out_buffer, int *out_temporary);
void tsr_stream_workspace_release(tsr_stream *stream, tsr_plugin_buffer *buffer, int temporary);

// --- storage.c -----------------------------------------------------------

// Allocates storage of |bytes| on |device|, stream-ordered on |stream|.
tsr_status tsr_storage_create(tsr_device *device, uint64_t bytes, tsr_stream *stream,
                              tsr_storage **out_storage);
void tsr_storage_retain(tsr_storage *storage);
// Frees the storage after the work of every stream that used it.
void tsr_storage_release(tsr_storage *storage);
// Records that |stream| uses |storage|. Lock-free.
void tsr_storage_mark_used(tsr_storage *storage, tsr_stream *stream);

// --- tensor.c ------------------------------------------------------------

// A tensor handle from this thread's free list (refs = 1), over |storage|
// (retained). Sizes/strides are copied.
tsr_tensor *tsr_tensor_make(tsr_storage *storage, tsr_dtype_t dtype, int32_t rank,
                            const int64_t *sizes, const int64_t *strides, int64_t offset);
// A contiguous tensor with fresh storage on the current stream of |device|.
// Errors name |what|, the public function being served.
tsr_tensor *tsr_tensor_alloc(const char *what, tsr_device *device, tsr_dtype_t dtype,
                             int32_t rank, const int64_t *sizes);
// Validates dtype/rank/sizes and computes numel; checks int64 and byte overflow.
tsr_status tsr_shape_check(const char *what, tsr_dtype_t dtype, int32_t rank,
                           const int64_t *sizes, int64_t *out_numel);
// Drops a reference taken with tsr_tensor_retain by library code. Unlike
// tsr_tensor_release it never hands back a scope's claim on the handle (the
// retain was not the creation reference the scope holds).
void tsr_tensor_unref(tsr_tensor *tensor);
// Frees this thread's cached storage records.
void tsr_storage_free_list_trim(void);
// Frees this thread's cached tensor and storage handles, then runs the trim
// hooks. Called at context destroy and thread exit.
void tsr_tensor_free_lists_trim(void);
// Adds |fn| to the hooks tsr_tensor_free_lists_trim runs on the trimming
// thread, so that a layer above the core (the SDK's autograd) frees its own
// per-thread caches at the same moments. Adding the same function again does
// nothing. TSR_OUT_OF_MEMORY when TSR_TRIM_HOOKS are taken. Thread-safe.
#define TSR_TRIM_HOOKS 4
tsr_status tsr_thread_trim_hook_add(void (*fn)(void));
// Arranges for the calling thread's free lists to be trimmed when it exits;
// one thread-local test after the first call.
void tsr_thread_free_lists_register(void);

// --- scope.c -------------------------------------------------------------

// Gives |tensor|'s creation reference to the calling thread's innermost open
// scope, if any and not suspended. Called by tsr_tensor_make.
void tsr_scope_adopt(tsr_tensor *tensor);
// Called by tsr_tensor_release before dropping a reference: when the scope of
// this thread holds |tensor|'s creation reference, that claim is given up.
void tsr_scope_forget(tsr_tensor *tensor);
// Suspends adoption on this thread (nesting) while library code creates
// tensors it stores or releases itself; returns the previous depth.
int tsr_scope_suspend(void);
void tsr_scope_resume(int previous);
// Frees this thread's scope list when no scope is open.
void tsr_scope_list_trim(void);

// --- dispatch.c ----------------------------------------------------------

// Runs |op| on the device of its operands (see tsr_op_run).
tsr_status tsr_dispatch(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                        int32_t num_outputs, tsr_tensor *const *outputs, const void *attrs);
// Runs a prepared |signature| on |device|: plan from the cache, execution on
// the current stream; falls back to ref when allowed. |inputs|/|outputs| may
// be NULL (no stream bookkeeping then).
tsr_status tsr_dispatch_signature_run(tsr_device *device, tsr_op_signature *signature,
                                      tsr_tensor *const *inputs, tsr_tensor *const *outputs,
                                      int allow_fallback);
// Fills |desc| for |tensor|.
void tsr_dispatch_desc_fill(const tsr_tensor *tensor, tsr_tensor_desc *desc);

// --- context.c -----------------------------------------------------------

// Records |status| with this thread's message as |context|'s first error (if
// none yet) and returns |status|. Thread-safe.
tsr_status tsr_context_fail(tsr_context *context, tsr_status status);
// Sets this thread's error and the sticky error of |device|'s context.
tsr_status tsr_fail(const tsr_device *device, tsr_status status, const char *format, ...)
    TSR_ABI_PRINTF(3, 4);

// --- fallback.c ----------------------------------------------------------

// Runs |signature|'s op on the ref device, copying operands there and back,
// under |device|'s context policy. Thread-safe.
tsr_status tsr_fallback_run(tsr_device *device, const tsr_op_signature *signature,
                            const char *reason, tsr_tensor *const *inputs,
                            tsr_tensor *const *outputs);

// --- op_probe.c ----------------------------------------------------------

// |context|'s ref device, or NULL. Thread-safe.
tsr_device *tsr_context_ref_device(const tsr_context *context);

// Builds a small representative signature of |op| for |dtype| and asks the
// plugin, then each value of the op's selector until one is accepted
// (op_probe.c). Thread-safe.
tsr_status tsr_op_probe(tsr_device *device, tsr_op_id_t op, tsr_dtype_t dtype);
// The representative signature with selector value |selector|. Thread-safe.
tsr_status tsr_op_probe_selector(tsr_device *device, tsr_op_id_t op, tsr_dtype_t dtype,
                                 int32_t selector);

#endif  // TESSERA_CORE_RUNTIME_H_
