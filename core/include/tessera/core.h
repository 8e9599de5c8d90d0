// Tessera's core: contexts, plugins and devices, streams and events, tensor
// handles, scopes, and the dispatch of catalogue ops (tsr_op_run). The part
// of the application API that the core implements; tessera/tessera.h
// includes it and adds the op functions, autograd, layers, optimizers, data
// and I/O that the SDK builds on it. Include tessera/tessera.h.
//
// Threading: a context may be used from several threads at once. A tensor
// may be read by several threads; writing it (in-place ops, release of the
// last reference) needs external synchronisation, as for a C object.
//
// Ownership in names: a function whose name ends in _get borrows (the handle
// it returns, or writes to its out_ parameters, stays owned by its source;
// never release it); any other function returning a handle (tensor, stream,
// event, context, module, optimizer, ...) gives the caller a reference to
// release or destroy. Devices are owned by their context and have no release:
// every tsr_device * is borrowed. Strings and size arrays (const char *,
// const int64_t *) are always borrowed; each declaration says how long they
// last (docs/sdk.md, "What borrows", lists them all).
#ifndef TESSERA_CORE_H_
#define TESSERA_CORE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TSR_API __attribute__((visibility("default")))
#else
#define TSR_API
#endif

// On every function that returns a tsr_status: ignoring it is a warning.
// GCC warns even through a (void) cast; to drop a status on purpose, test it
// (`if (tsr_stream_synchronize(s) != TSR_OK) { ... }`) or read it into a
// variable.
#if defined(__GNUC__)
#define TSR_MUST_USE __attribute__((warn_unused_result))
#else
#define TSR_MUST_USE
#endif

// On a name kept for one minor version after its function was renamed:
// using it is a warning that names the replacement (docs/sdk.md, "What
// borrows").
#if defined(__GNUC__)
#define TSR_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define TSR_DEPRECATED(msg)
#endif

#define TSR_VERSION_MAJOR 0
#define TSR_VERSION_MINOR 1
#define TSR_VERSION_PATCH 0
#define TSR_MAX_DEVICES 64

typedef struct tsr_context tsr_context;
typedef struct tsr_device tsr_device;
typedef struct tsr_tensor tsr_tensor;
typedef struct tsr_stream tsr_stream;
typedef struct tsr_event tsr_event;

// ---------------------------------------------------------------------------
// Version and errors

// The library's version, "MAJOR.MINOR.PATCH". Static storage. Thread-safe.
TSR_API const char *tsr_version(void);

// The message of the last failed call on this thread ("" if none). Valid until
// the thread's next failing call. Thread-safe (per thread).
TSR_API const char *tsr_last_error(void);
// The status of the last failed call on this thread, TSR_OK if none.
TSR_API TSR_MUST_USE tsr_status tsr_last_status(void);
// Clears this thread's last error.
TSR_API void tsr_last_error_clear(void);
// A short name for |status| ("invalid argument"). Static storage. Thread-safe.
TSR_API const char *tsr_status_name(tsr_status status);
// The name of |dtype| as PyTorch spells it ("float32", "int64", "bool");
// "unknown" outside the enum. Static storage. Thread-safe.
TSR_API const char *tsr_dtype_name(tsr_dtype_t dtype);

// ---------------------------------------------------------------------------
// Context

typedef int32_t tsr_fallback_policy_t;
enum {
  TSR_FALLBACK_DEFAULT = -1,  // TSR_FALLBACK (allow|warn|deny) or else WARN
  TSR_FALLBACK_WARN = 0,      // run on ref, warn once per op
  TSR_FALLBACK_ALLOW = 1,     // run on ref silently
  TSR_FALLBACK_DENY = 2,      // fail with TSR_UNSUPPORTED
};

enum {
  // Search only options.plugin_path: skip TSR_PLUGIN_PATH, the installed
  // folder and libtessera's folder. For tests and embedders.
  TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY = 1u << 0,
};

typedef struct tsr_context_options {
  size_t struct_size;         // sizeof(tsr_context_options)
  const char *plugin_path;    // colon-separated files or folders searched first; may be NULL
  const char *device;         // "ref:0", "onednn"; NULL: TSR_DEVICE or the best available
  tsr_fallback_policy_t fallback;
  int32_t num_threads;        // 0: TSR_NUM_THREADS or every core
  uint32_t flags;             // TSR_CONTEXT_*
  uint32_t reserved;
} tsr_context_options;

// Fills |options| with defaults. Thread-safe.
TSR_API void tsr_context_options_init(tsr_context_options *options);

// Discovers and loads plugins, creates devices and picks the default device
// (logged). |options| may be NULL. The context is owned by the caller and
// destroyed with tsr_context_destroy. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_context_create(const tsr_context_options *options,
                                      tsr_context **out_context);
// Waits for all work, releases every device and plugin. Tensors still alive
// become invalid. Not thread-safe with other calls on |context|.
TSR_API void tsr_context_destroy(tsr_context *context);
// The first error recorded on |context| since the last clear (TSR_OK if none).
TSR_API TSR_MUST_USE tsr_status tsr_context_status(const tsr_context *context);
// The message of that first error; owned by the context, valid until cleared.
TSR_API const char *tsr_context_error_message(const tsr_context *context);
TSR_API void tsr_context_error_clear(tsr_context *context);
// Threads of the context's pool (including the caller). Thread-safe.
TSR_API int32_t tsr_context_thread_count(const tsr_context *context);

typedef struct tsr_plugin_info {
  size_t struct_size;      // set by the caller
  const char *name;        // strings owned by the context
  const char *version;
  const char *vendor;
  const char *build_info;
  const char *path;
  uint32_t abi_major;
  uint32_t abi_minor;
  int32_t device_count;
  uint32_t reserved;
} tsr_plugin_info;

typedef struct tsr_rejected_plugin {
  size_t struct_size;      // set by the caller
  const char *path;        // owned by the context
  const char *reason;      // dlerror() text, ABI mismatch, the probe's answer...
  tsr_status status;
  uint32_t reserved;
} tsr_rejected_plugin;

// Loaded plugins, and candidates that were rejected with their reasons.
TSR_API int32_t tsr_context_plugin_count(const tsr_context *context);
TSR_API TSR_MUST_USE tsr_status tsr_context_plugin_info_get(const tsr_context *context, int32_t index,
                                               tsr_plugin_info *out_info);
TSR_API int32_t tsr_context_rejected_count(const tsr_context *context);
TSR_API TSR_MUST_USE tsr_status tsr_context_rejected_get(const tsr_context *context, int32_t index,
                                            tsr_rejected_plugin *out_rejected);

// ---------------------------------------------------------------------------
// Random numbers and determinism. The context holds a seed and an offset into
// the counter-based RNG (RNG_FILL, Philox-4x32-10): every random tensor claims
// numel counters, so the numbers depend only on the seed and the order of the
// calls, never on the device, thread count or strides.

// Sets the seed and resets the offset to 0. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_context_seed_set(tsr_context *context, uint64_t seed);
TSR_API uint64_t tsr_context_seed(const tsr_context *context);
// The next counter the context hands out; writable to restore a checkpoint.
// Thread-safe.
TSR_API uint64_t tsr_context_rng_offset(const tsr_context *context);
TSR_API TSR_MUST_USE tsr_status tsr_context_rng_offset_set(tsr_context *context, uint64_t offset);
// Claims |count| counters and returns the first; the caller passes it as
// RNG_FILL's offset. Thread-safe (atomic).
TSR_API uint64_t tsr_context_rng_claim(tsr_context *context, uint64_t count);
// While on, every plan is created with TSR_PLAN_REQUIRE_DETERMINISM: a plugin
// that cannot make an op bit-reproducible refuses the plan, a plan it returns
// without TSR_PLAN_INFO_DETERMINISTIC is refused by the core, and the fallback
// policy decides (deny: TSR_UNSUPPORTED with the reason). Off by default.
// Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_context_deterministic_set(tsr_context *context, int enabled);
TSR_API int tsr_context_deterministic(const tsr_context *context);

// ---------------------------------------------------------------------------
// Devices. Owned by the context; valid until it is destroyed. Thread-safe.

TSR_API int32_t tsr_context_device_count(const tsr_context *context);
TSR_API tsr_device *tsr_context_device_get(const tsr_context *context, int32_t index);
// "onednn:0", or "onednn" for its first device. NULL if absent.
TSR_API tsr_device *tsr_context_device_find(const tsr_context *context, const char *name);
TSR_API tsr_device *tsr_context_default_device(const tsr_context *context);
TSR_API TSR_MUST_USE tsr_status tsr_context_default_device_set(tsr_context *context, tsr_device *device);

// The context that owns |device| (borrowed: do not destroy it).
TSR_API tsr_context *tsr_device_context_get(const tsr_device *device);
// "ref:0". Owned by the device.
TSR_API const char *tsr_device_name(const tsr_device *device);
TSR_API const char *tsr_device_plugin_name(const tsr_device *device);
TSR_API TSR_MUST_USE tsr_status tsr_device_props_get(const tsr_device *device, tsr_device_props *out_props);
TSR_API TSR_MUST_USE tsr_status tsr_device_allocator_stats_get(const tsr_device *device,
                                                  tsr_allocator_stats *out_stats);
TSR_API TSR_MUST_USE tsr_status tsr_device_allocator_trim(tsr_device *device);
// Waits for all work on every stream of |device|.
TSR_API TSR_MUST_USE tsr_status tsr_device_synchronize(tsr_device *device);
// TSR_OK if the plugin implements |op| for |dtype| on a representative
// signature (small, contiguous) with some value of the op's selector
// (UNARY's function, REDUCE's kind, MATMUL's activation and bias, POOL2D's
// kind, ...), TSR_UNSUPPORTED with the plugin's reason for the
// representative otherwise.
TSR_API TSR_MUST_USE tsr_status tsr_device_op_supported(tsr_device *device, tsr_op_id_t op,
                                           tsr_dtype_t dtype);
// As tsr_device_op_supported, for the representative signature with value
// |selector| of the op's selector (0 .. tsr_op_selector_count(op) - 1, see
// tessera/ops.h; MATMUL's and CONV2D's last value is the optional bias):
// whether the plugin implements UNARY's RELU, MATMUL with a bias.
// TSR_INVALID_ARGUMENT for a value out of range. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_device_op_selector_supported(tsr_device *device, tsr_op_id_t op,
                                                    tsr_dtype_t dtype, int32_t selector);

typedef struct tsr_plan_cache_stats {
  size_t struct_size;
  uint64_t hits;     // exact from one thread; threads hitting at once may lose a count
  uint64_t misses;
  uint64_t entries;
} tsr_plan_cache_stats;
TSR_API TSR_MUST_USE tsr_status tsr_device_plan_cache_stats_get(const tsr_device *device,
                                                   tsr_plan_cache_stats *out_stats);

typedef struct tsr_fallback_stats {
  size_t struct_size;
  uint64_t ops;            // op calls that ran on ref instead of their device
  uint64_t copies;         // tensors copied for them, both directions
  uint64_t refusals;       // calls refused by the deny policy
} tsr_fallback_stats;
TSR_API TSR_MUST_USE tsr_status tsr_context_fallback_stats_get(const tsr_context *context,
                                                  tsr_fallback_stats *out_stats);
TSR_API TSR_MUST_USE tsr_status tsr_context_fallback_policy_set(tsr_context *context,
                                                   tsr_fallback_policy_t policy);

// ---------------------------------------------------------------------------
// Streams and events. Every device has a default stream; ops run on the
// calling thread's current stream for the device (the default unless set).

TSR_API TSR_MUST_USE tsr_status tsr_stream_create(tsr_device *device, uint32_t flags, tsr_stream **out_stream);
// Wraps |native|, a queue the application made with the vendor's API for
// |device| (the CUDA plugin: a cudaStream_t; docs/abi.md 7.5 and the plugin's
// page say what each plugin takes), as a stream used like a created one. |flags|
// is 0 or TSR_STREAM_IMPORT_TAKE_OWNERSHIP. Without the flag the application
// keeps owning |native| and must keep it valid until tsr_stream_release of the
// returned stream has returned (the last release synchronizes |native|, its own
// work included, then destroys only Tessera's wrapper); with it, the last
// release destroys |native| too. On failure |native| stays the caller's.
// TSR_UNSUPPORTED when the device's plugin cannot import. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_stream_import(tsr_device *device, void *native, uint32_t flags,
                                     tsr_stream **out_stream);
// Releases the caller's reference; the stream is destroyed after its work
// completes. Thread-safe.
TSR_API void tsr_stream_release(tsr_stream *stream);
// The default stream of |device|, borrowed: owned by the device, valid until
// the context is destroyed; do not release it. Thread-safe.
TSR_API tsr_stream *tsr_device_default_stream_get(tsr_device *device);
// Makes |stream| the calling thread's current stream for its device; NULL
// restores the default stream of |device|. Thread-safe (per thread).
TSR_API TSR_MUST_USE tsr_status tsr_stream_current_set(tsr_device *device, tsr_stream *stream);
TSR_API tsr_stream *tsr_stream_current_get(tsr_device *device);
TSR_API TSR_MUST_USE tsr_status tsr_stream_synchronize(tsr_stream *stream);
// TSR_OK when idle, TSR_NOT_READY while work is pending, or the first error.
TSR_API TSR_MUST_USE tsr_status tsr_stream_query(tsr_stream *stream);
TSR_API TSR_MUST_USE tsr_status tsr_stream_wait_event(tsr_stream *stream, tsr_event *event);

TSR_API TSR_MUST_USE tsr_status tsr_event_create(tsr_device *device, uint32_t flags, tsr_event **out_event);
TSR_API void tsr_event_release(tsr_event *event);
TSR_API TSR_MUST_USE tsr_status tsr_event_record(tsr_event *event, tsr_stream *stream);
TSR_API TSR_MUST_USE tsr_status tsr_event_query(tsr_event *event);
TSR_API TSR_MUST_USE tsr_status tsr_event_synchronize(tsr_event *event);
TSR_API TSR_MUST_USE tsr_status tsr_event_elapsed_get(tsr_event *start, tsr_event *end,
                                         float *out_milliseconds);

// ---------------------------------------------------------------------------
// Tensor handles. Functions returning tsr_tensor * give the caller one
// reference (release with tsr_tensor_release) or NULL with tsr_last_error()
// set. Making tensors, copying them to and from the host and views are in
// tessera/tessera.h.

TSR_API tsr_tensor *tsr_tensor_retain(tsr_tensor *tensor);
// Drops a reference; NULL is ignored. The storage is freed, stream-ordered,
// when its last view goes.
TSR_API void tsr_tensor_release(tsr_tensor *tensor);

TSR_API tsr_dtype_t tsr_tensor_dtype(const tsr_tensor *tensor);
TSR_API int32_t tsr_tensor_rank(const tsr_tensor *tensor);
// Size of dimension |dim| (negative counts from the end), -1 if out of range.
TSR_API int64_t tsr_tensor_size(const tsr_tensor *tensor, int32_t dim);
TSR_API int64_t tsr_tensor_stride(const tsr_tensor *tensor, int32_t dim);
// Pointers into the tensor; valid while it lives.
TSR_API const int64_t *tsr_tensor_sizes(const tsr_tensor *tensor);
TSR_API const int64_t *tsr_tensor_strides(const tsr_tensor *tensor);
TSR_API int64_t tsr_tensor_numel(const tsr_tensor *tensor);
TSR_API int64_t tsr_tensor_offset(const tsr_tensor *tensor);  // in elements
TSR_API int tsr_tensor_is_contiguous(const tsr_tensor *tensor);
TSR_API tsr_device *tsr_tensor_device(const tsr_tensor *tensor);
// Bumped after every write to the tensor's storage.
TSR_API uint64_t tsr_tensor_storage_version(const tsr_tensor *tensor);
// True when |a| and |b| are views of one storage.
TSR_API int tsr_tensor_shares_storage(const tsr_tensor *a, const tsr_tensor *b);

// ---------------------------------------------------------------------------
// Scopes. Between tsr_scope_begin and tsr_scope_end, every tensor handle the
// calling thread creates belongs to the innermost open scope: tsr_scope_end
// releases each one not released already, so a training loop body needs no
// tsr_tensor_release calls. To keep a result past the scope, take it with
// tsr_scope_keep. Releasing a scope tensor inside the scope is allowed (it
// hands back the scope's reference). Scopes are per thread and nest; handles
// made by other threads are not affected. Keep a scope tensor with
// tsr_scope_keep rather than tsr_tensor_retain: inside its scope,
// tsr_tensor_release of a scope tensor always gives up the scope's reference.

// Opens a scope on the calling thread and returns its mark. Thread-safe (per thread).
TSR_API size_t tsr_scope_begin(void);
// Releases the handles created since |mark| (in reverse order) and closes the
// scopes opened since. Thread-safe (per thread).
TSR_API void tsr_scope_end(size_t mark);
// Takes |tensor| out of its scope: the caller now owns that reference and
// releases it. A tensor outside any scope is returned unchanged. Returns |tensor|.
TSR_API tsr_tensor *tsr_scope_keep(tsr_tensor *tensor);
// Number of handles the calling thread's open scopes hold.
TSR_API size_t tsr_scope_size(void);


// ---------------------------------------------------------------------------
// Runs catalogue op |op| with preallocated |outputs|. The low-level entry
// behind every function below. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_op_run(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                              int32_t num_outputs, tsr_tensor *const *outputs,
                              const void *attrs);
// The engine tsr_op_run would use for the same call ("onednn:brgemm:avx2",
// "own:elementwise", "fallback: ..."), without running it: the plan is made
// and cached as a run would. *out_engine is owned by the device's plan cache
// and valid until the context is destroyed. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_op_engine_get(tsr_op_id_t op, int32_t num_inputs,
                                     tsr_tensor *const *inputs, int32_t num_outputs,
                                     tsr_tensor *const *outputs, const void *attrs,
                                     const char **out_engine);

// ---------------------------------------------------------------------------
// Old names, kept for one minor version: removed in 0.2.0.

TSR_API TSR_DEPRECATED("use tsr_device_context_get (removed in 0.2)") tsr_context *
tsr_device_context(const tsr_device *device);
TSR_API TSR_DEPRECATED("use tsr_device_default_stream_get (removed in 0.2)") tsr_stream *
tsr_device_default_stream(tsr_device *device);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_CORE_H_
