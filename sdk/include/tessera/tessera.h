// Tessera: the application API.
//
// A context loads the plugins and owns the devices; tensors live on a device
// and are reference-counted handles over storage. Ops return a new tensor, or
// NULL with the reason in tsr_last_error(); the first error of a context also
// sticks to it (tsr_context_status) so a long expression can be checked once.
//
// Threading: a context may be used from several threads at once. A tensor
// may be read by several threads; writing it (in-place ops, release of the
// last reference) needs external synchronisation, as for a C object.
#ifndef TESSERA_TESSERA_H_
#define TESSERA_TESSERA_H_

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
TSR_API tsr_status tsr_last_status(void);
// Clears this thread's last error.
TSR_API void tsr_last_error_clear(void);
// A short name for |status| ("invalid argument"). Static storage. Thread-safe.
TSR_API const char *tsr_status_name(tsr_status status);

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
TSR_API tsr_status tsr_context_create(const tsr_context_options *options,
                                      tsr_context **out_context);
// Waits for all work, releases every device and plugin. Tensors still alive
// become invalid. Not thread-safe with other calls on |context|.
TSR_API void tsr_context_destroy(tsr_context *context);
// The first error recorded on |context| since the last clear (TSR_OK if none).
TSR_API tsr_status tsr_context_status(const tsr_context *context);
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
TSR_API tsr_status tsr_context_plugin_info_get(const tsr_context *context, int32_t index,
                                               tsr_plugin_info *out_info);
TSR_API int32_t tsr_context_rejected_count(const tsr_context *context);
TSR_API tsr_status tsr_context_rejected_get(const tsr_context *context, int32_t index,
                                            tsr_rejected_plugin *out_rejected);

// ---------------------------------------------------------------------------
// Devices. Owned by the context; valid until it is destroyed. Thread-safe.

TSR_API int32_t tsr_context_device_count(const tsr_context *context);
TSR_API tsr_device *tsr_context_device_get(const tsr_context *context, int32_t index);
// "onednn:0", or "onednn" for its first device. NULL if absent.
TSR_API tsr_device *tsr_context_device_find(const tsr_context *context, const char *name);
TSR_API tsr_device *tsr_context_default_device(const tsr_context *context);
TSR_API tsr_status tsr_context_default_device_set(tsr_context *context, tsr_device *device);

TSR_API tsr_context *tsr_device_context(const tsr_device *device);
// "ref:0". Owned by the device.
TSR_API const char *tsr_device_name(const tsr_device *device);
TSR_API const char *tsr_device_plugin_name(const tsr_device *device);
TSR_API tsr_status tsr_device_props_get(const tsr_device *device, tsr_device_props *out_props);
TSR_API tsr_status tsr_device_allocator_stats_get(const tsr_device *device,
                                                  tsr_allocator_stats *out_stats);
TSR_API tsr_status tsr_device_allocator_trim(tsr_device *device);
// Waits for all work on every stream of |device|.
TSR_API tsr_status tsr_device_synchronize(tsr_device *device);
// TSR_OK if the plugin implements |op| for |dtype| on a representative
// signature, TSR_UNSUPPORTED with the plugin's reason otherwise.
TSR_API tsr_status tsr_device_op_supported(tsr_device *device, tsr_op_id_t op,
                                           tsr_dtype_t dtype);

typedef struct tsr_plan_cache_stats {
  size_t struct_size;
  uint64_t hits;
  uint64_t misses;
  uint64_t entries;
} tsr_plan_cache_stats;
TSR_API tsr_status tsr_device_plan_cache_stats_get(const tsr_device *device,
                                                   tsr_plan_cache_stats *out_stats);

typedef struct tsr_fallback_stats {
  size_t struct_size;
  uint64_t ops;            // op calls that ran on ref instead of their device
  uint64_t copies;         // tensors copied for them, both directions
  uint64_t refusals;       // calls refused by the deny policy
} tsr_fallback_stats;
TSR_API tsr_status tsr_context_fallback_stats_get(const tsr_context *context,
                                                  tsr_fallback_stats *out_stats);
TSR_API tsr_status tsr_context_fallback_policy_set(tsr_context *context,
                                                   tsr_fallback_policy_t policy);

// ---------------------------------------------------------------------------
// Streams and events. Every device has a default stream; ops run on the
// calling thread's current stream for the device (the default unless set).

TSR_API tsr_status tsr_stream_create(tsr_device *device, uint32_t flags, tsr_stream **out_stream);
// Releases the caller's reference; the stream is destroyed after its work
// completes. Thread-safe.
TSR_API void tsr_stream_release(tsr_stream *stream);
TSR_API tsr_stream *tsr_device_default_stream(tsr_device *device);
// Makes |stream| the calling thread's current stream for its device; NULL
// restores the default stream of |device|. Thread-safe (per thread).
TSR_API tsr_status tsr_stream_current_set(tsr_device *device, tsr_stream *stream);
TSR_API tsr_stream *tsr_stream_current_get(tsr_device *device);
TSR_API tsr_status tsr_stream_synchronize(tsr_stream *stream);
// TSR_OK when idle, TSR_NOT_READY while work is pending, or the first error.
TSR_API tsr_status tsr_stream_query(tsr_stream *stream);
TSR_API tsr_status tsr_stream_wait_event(tsr_stream *stream, tsr_event *event);

TSR_API tsr_status tsr_event_create(tsr_device *device, uint32_t flags, tsr_event **out_event);
TSR_API void tsr_event_release(tsr_event *event);
TSR_API tsr_status tsr_event_record(tsr_event *event, tsr_stream *stream);
TSR_API tsr_status tsr_event_query(tsr_event *event);
TSR_API tsr_status tsr_event_synchronize(tsr_event *event);
TSR_API tsr_status tsr_event_elapsed_get(tsr_event *start, tsr_event *end,
                                         float *out_milliseconds);

// ---------------------------------------------------------------------------
// Tensors. Functions returning tsr_tensor * give the caller one reference
// (release with tsr_tensor_release) or NULL with tsr_last_error() set.

// Uninitialised contiguous tensor. Thread-safe.
TSR_API tsr_tensor *tsr_tensor_empty(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                     const int64_t *sizes);
TSR_API tsr_tensor *tsr_tensor_full(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                    const int64_t *sizes, double value);
// Copies |data| (row-major, contiguous) into a new tensor. Thread-safe.
TSR_API tsr_tensor *tsr_tensor_from_host(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                         const int64_t *sizes, const void *data);
// Copies |tensor| into |dst| in row-major order after the work writing it has
// finished; |dst_bytes| must equal numel * dtype size. Thread-safe.
TSR_API tsr_status tsr_tensor_to_host(const tsr_tensor *tensor, void *dst, size_t dst_bytes);
// A contiguous copy of |tensor| on |device|.
TSR_API tsr_tensor *tsr_tensor_to_device(const tsr_tensor *tensor, tsr_device *device);

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

// Views share storage with their source. -1 in |sizes| is inferred once.
TSR_API tsr_tensor *tsr_view(tsr_tensor *tensor, int32_t rank, const int64_t *sizes);
// A view when the strides allow one, else a contiguous copy.
TSR_API tsr_tensor *tsr_reshape(tsr_tensor *tensor, int32_t rank, const int64_t *sizes);
TSR_API tsr_tensor *tsr_transpose(tsr_tensor *tensor, int32_t dim0, int32_t dim1);
TSR_API tsr_tensor *tsr_permute(tsr_tensor *tensor, int32_t rank, const int32_t *dims);
// Elements start, start+step, ... < end of |dim|; negative start/end count
// from the end and are clamped as in Python; step >= 1.
TSR_API tsr_tensor *tsr_slice(tsr_tensor *tensor, int32_t dim, int64_t start, int64_t end,
                              int64_t step);
// Broadcast view (stride 0) to |sizes|; -1 keeps a size.
TSR_API tsr_tensor *tsr_expand(tsr_tensor *tensor, int32_t rank, const int64_t *sizes);
// |tensor| itself (new reference) if contiguous, else a contiguous copy.
TSR_API tsr_tensor *tsr_contiguous(tsr_tensor *tensor);

// ---------------------------------------------------------------------------
// Ops. Inputs must live on one device; the result lives there too.

// Runs catalogue op |op| with preallocated |outputs|. The low-level entry
// behind every function below. Thread-safe.
TSR_API tsr_status tsr_op_run(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                              int32_t num_outputs, tsr_tensor *const *outputs,
                              const void *attrs);
// The engine tsr_op_run would use for the same call ("onednn:brgemm:avx2",
// "own:elementwise", "fallback: ..."), without running it: the plan is made
// and cached as a run would. *out_engine is owned by the device's plan cache
// and valid until the context is destroyed. Thread-safe.
TSR_API tsr_status tsr_op_engine_get(tsr_op_id_t op, int32_t num_inputs,
                                     tsr_tensor *const *inputs, int32_t num_outputs,
                                     tsr_tensor *const *outputs, const void *attrs,
                                     const char **out_engine);

TSR_API tsr_status tsr_fill_(tsr_tensor *tensor, double value);
// Copies |src| (broadcast to |dst|'s shape) into |dst|, casting if needed.
TSR_API tsr_status tsr_copy_(tsr_tensor *dst, tsr_tensor *src);
TSR_API tsr_tensor *tsr_cast(tsr_tensor *tensor, tsr_dtype_t dtype);

TSR_API tsr_tensor *tsr_unary(tsr_tensor *x, tsr_unary_fn_t fn, double alpha);
TSR_API tsr_status tsr_unary_out(tsr_tensor *out, tsr_tensor *x, tsr_unary_fn_t fn, double alpha);
TSR_API tsr_tensor *tsr_unary_backward(tsr_tensor *dy, tsr_tensor *x, tsr_unary_fn_t fn,
                                       double alpha);
TSR_API tsr_tensor *tsr_binary(tsr_tensor *a, tsr_tensor *b, tsr_binary_fn_t fn, double alpha);
// |out| must have the broadcast shape; it may be |a| or |b| (in place).
TSR_API tsr_status tsr_binary_out(tsr_tensor *out, tsr_tensor *a, tsr_tensor *b,
                                  tsr_binary_fn_t fn, double alpha);
TSR_API tsr_tensor *tsr_compare(tsr_tensor *a, tsr_tensor *b, tsr_compare_fn_t fn);
TSR_API tsr_tensor *tsr_where(tsr_tensor *cond, tsr_tensor *a, tsr_tensor *b);
TSR_API tsr_tensor *tsr_clamp(tsr_tensor *x, int has_min, double min, int has_max, double max);
// Reduces |num_axes| axes (negative count from the end; 0 axes = all).
TSR_API tsr_tensor *tsr_reduce(tsr_tensor *x, tsr_reduce_fn_t fn, int32_t num_axes,
                               const int32_t *axes, int keepdim);
TSR_API tsr_tensor *tsr_arg_reduce(tsr_tensor *x, tsr_arg_reduce_fn_t fn, int32_t axis,
                                   int keepdim);
// a [..., M, K] @ b [..., K, N]; batch dims broadcast; rank-1 operands are
// promoted as in NumPy. |bias| may be NULL.
TSR_API tsr_tensor *tsr_matmul_ex(tsr_tensor *a, tsr_tensor *b, tsr_tensor *bias,
                                  tsr_activation_t activation);

static inline tsr_tensor *tsr_add(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_ADD, 1.0); }
static inline tsr_tensor *tsr_sub(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_SUB, 1.0); }
static inline tsr_tensor *tsr_mul(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_MUL, 1.0); }
static inline tsr_tensor *tsr_div(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_DIV, 1.0); }
static inline tsr_tensor *tsr_maximum(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_MAXIMUM, 1.0); }
static inline tsr_tensor *tsr_minimum(tsr_tensor *a, tsr_tensor *b) { return tsr_binary(a, b, TSR_BINARY_MINIMUM, 1.0); }
static inline tsr_tensor *tsr_neg(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_NEG, 0.0); }
static inline tsr_tensor *tsr_exp(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_EXP, 0.0); }
static inline tsr_tensor *tsr_relu(tsr_tensor *x) { return tsr_unary(x, TSR_UNARY_RELU, 0.0); }
static inline tsr_tensor *tsr_sum(tsr_tensor *x, int32_t num_axes, const int32_t *axes, int keepdim) { return tsr_reduce(x, TSR_REDUCE_SUM, num_axes, axes, keepdim); }
static inline tsr_tensor *tsr_mean(tsr_tensor *x, int32_t num_axes, const int32_t *axes, int keepdim) { return tsr_reduce(x, TSR_REDUCE_MEAN, num_axes, axes, keepdim); }
static inline tsr_tensor *tsr_argmax(tsr_tensor *x, int32_t axis, int keepdim) { return tsr_arg_reduce(x, TSR_ARG_REDUCE_ARGMAX, axis, keepdim); }
static inline tsr_tensor *tsr_matmul(tsr_tensor *a, tsr_tensor *b) { return tsr_matmul_ex(a, b, NULL, TSR_ACTIVATION_NONE); }

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_TESSERA_H_
