// Tessera plugin ABI.
//
// The contract between the Tessera core and a backend plugin. Plain C99: no core
// struct crosses by value, buffers are opaque handles, every struct and function
// table opens with |struct_size| and grows only at the end. docs/abi.md is the
// written specification; this header is its machine-checked half.
//
// A plugin exports exactly one symbol, TSR_PLUGIN_ENTRY_NAME, of type
// tsr_plugin_entry_fn. Everything else it hides (-fvisibility=hidden).
#ifndef TESSERA_ABI_H_
#define TESSERA_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Majors must match; a plugin built against another minor loads, and each side
// reads only the fields the other side's |struct_size| covers.
#define TSR_ABI_VERSION_MAJOR 0
#define TSR_ABI_VERSION_MINOR 4

#define TSR_PLUGIN_ENTRY_NAME "tsr_plugin_entry"
#define TSR_MAX_RANK 8
// Inputs plus outputs of one op call.
#define TSR_MAX_OPERANDS 16
// Largest alignment a plan signature distinguishes.
#define TSR_MAX_ALIGNMENT 256

#if defined(__GNUC__)
#define TSR_ABI_EXPORT __attribute__((visibility("default")))
#define TSR_ABI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TSR_ABI_EXPORT
#define TSR_ABI_PRINTF(f, a)
#endif

// ---------------------------------------------------------------------------
// Status codes. Every call that can fail returns one; the message travels
// separately through tsr_host_api.error_set.
typedef int32_t tsr_status;
enum {
  TSR_OK = 0,
  TSR_INVALID_ARGUMENT = 1,  // the caller broke a documented precondition
  TSR_UNSUPPORTED = 2,       // valid request the plugin does not implement
  TSR_OUT_OF_MEMORY = 3,
  TSR_UNAVAILABLE = 4,       // hardware or driver absent (probe) or busy
  TSR_DEVICE_LOST = 5,       // the device is unusable; refuse further work
  TSR_NOT_FOUND = 6,
  TSR_ABI_MISMATCH = 7,
  TSR_INTERNAL = 8,          // a bug in Tessera or the plugin
  TSR_NOT_READY = 9,         // stream/event query: work still pending
  TSR_STATUS_COUNT = 10,
};

// ---------------------------------------------------------------------------
// Element types. Numeric values are stable.
typedef int32_t tsr_dtype_t;
enum {
  TSR_FLOAT32 = 0,
  TSR_FLOAT64 = 1,
  TSR_BFLOAT16 = 2,
  TSR_FLOAT16 = 3,
  TSR_INT32 = 4,
  TSR_INT64 = 5,
  TSR_BOOL = 6,  // one byte, 0 or 1
  TSR_DTYPE_COUNT = 7,
};
#define TSR_DTYPE_BIT(d) (1u << (uint32_t)(d))

// Bytes per element of |dtype|, or 0 for an unknown dtype. Thread-safe.
static inline size_t tsr_dtype_size(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64:
    case TSR_INT64:
      return 8;
    case TSR_FLOAT32:
    case TSR_INT32:
      return 4;
    case TSR_BFLOAT16:
    case TSR_FLOAT16:
      return 2;
    case TSR_BOOL:
      return 1;
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------
// Opaque handles owned by the plugin. The core stores and passes them back,
// never dereferences them and never does arithmetic on them.
typedef struct tsr_plugin_buffer tsr_plugin_buffer;
typedef struct tsr_plugin_stream tsr_plugin_stream;
typedef struct tsr_plugin_event tsr_plugin_event;
typedef struct tsr_plugin_plan tsr_plugin_plan;

// ---------------------------------------------------------------------------
// A tensor as it crosses the boundary. Follows DLPack's DLTensor: element i
// (multi-index) lives at byte byte_offset + sum(i[d] * strides[d]) * dtype size
// inside |buffer|. Strides are in elements and never negative; a stride of 0
// broadcasts. Only the first |rank| entries of sizes and strides are meaningful.
typedef struct tsr_tensor_desc {
  size_t struct_size;      // sizeof(tsr_tensor_desc) of the side that wrote it
  tsr_dtype_t dtype;
  int32_t rank;            // 0..TSR_MAX_RANK; rank 0 is a scalar
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
  uint64_t byte_offset;    // from the start of |buffer|
  tsr_plugin_buffer *buffer;  // NULL in a plan signature; valid during execute
  int32_t device;          // device index inside the plugin
  uint32_t alignment;      // power of two <= TSR_MAX_ALIGNMENT the data address is known to have
  uint64_t storage_version;   // bumped by the core after every write to the buffer
  int32_t alias_group;     // operands of one call sharing a non-negative group overlap in memory; -1: no overlap
  uint32_t reserved;
} tsr_tensor_desc;

// ---------------------------------------------------------------------------
// The host table: what the core offers every plugin. Valid from the entry call
// until the plugin's shutdown returns. All functions are thread-safe.
typedef void (*tsr_parallel_fn)(void *arg, int64_t begin, int64_t end, int32_t thread_index);

typedef int32_t tsr_log_level_t;
enum { TSR_LOG_DEBUG = 0, TSR_LOG_INFO = 1, TSR_LOG_WARNING = 2, TSR_LOG_ERROR = 3 };

// Bounds of the engine cache's keys and values (engine_cache_get/put, ABI
// 0.4), in bytes: keys without their NUL, values as given.
#define TSR_ENGINE_CACHE_KEY_MAX 1024
#define TSR_ENGINE_CACHE_CLASS_KEY_MAX 256
#define TSR_ENGINE_CACHE_VALUE_MAX 1024

typedef struct tsr_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void *ctx;  // pass back as the first argument of every function below
  // Logs |message| (copied). Never blocks on I/O of the caller's stream.
  void (*log)(void *ctx, tsr_log_level_t level, const char *message);
  // Attaches a printf-formatted message to the calling thread's current error
  // and returns |code| unchanged, so a plugin writes
  // `return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "...", ...)`.
  tsr_status (*error_set)(void *ctx, tsr_status code, const char *format, ...)
      TSR_ABI_PRINTF(3, 4);
  // Host memory: aligned to |alignment| (a power of two, at least 16). NULL on
  // failure. Not for hot paths.
  void *(*mem_alloc)(void *ctx, size_t bytes, size_t alignment);
  void (*mem_free)(void *ctx, void *ptr);
  // Runs fn(arg, begin, end, thread_index) over [0, count) in chunks of at least
  // |grain| on the process's single thread pool, and returns when all chunks
  // are done. thread_index < thread_count(). Nested calls run serially.
  tsr_status (*parallel_for)(void *ctx, int64_t count, int64_t grain, tsr_parallel_fn fn,
                             void *arg);
  int32_t (*thread_count)(void *ctx);

  // --- ABI 0.4 ---
  // Optional (check TSR_ABI_HAS): the persistent engine cache, where a plugin
  // keeps the engine it measured best for a class of calls, from one process
  // to the next (docs/abi.md 6.2). Only for plan creation, never a hot path.
  // |plugin_key| names what the choice depends on besides the machine (the
  // plugin's build and its libraries' versions: "onednn 3.4.1"); the core
  // adds the plugin's name, version and build_info, the CPU, the thread
  // count and the CPU set. Keys are printable ASCII, 1 to
  // TSR_ENGINE_CACHE_KEY_MAX (|plugin_key|) or TSR_ENGINE_CACHE_CLASS_KEY_MAX
  // (|class_key|) bytes; values are opaque, at most TSR_ENGINE_CACHE_VALUE_MAX
  // bytes, and come from a file: validate them as input.
  //
  // get copies the value of |class_key| into |out_value| (capacity
  // *|inout_bytes|) and sets *|inout_bytes| to its size; with |out_value|
  // NULL it only sets the size. TSR_NOT_FOUND when there is none (or the
  // cache is off); TSR_INVALID_ARGUMENT, with the size in *|inout_bytes|,
  // when the value does not fit.
  tsr_status (*engine_cache_get)(void *ctx, const char *plugin_key, const char *class_key,
                                 void *out_value, size_t *inout_bytes);
  // Records |bytes| bytes of |value| for |class_key|, replacing any value it
  // had, and writes the plugin's file. The cache may drop a put (turned off,
  // full, a folder it cannot write): TSR_OK then too, with a logged warning
  // for a write that failed; only a bad argument (or no memory) is an error.
  tsr_status (*engine_cache_put)(void *ctx, const char *plugin_key, const char *class_key,
                                 const void *value, size_t bytes);
} tsr_host_api;

// ---------------------------------------------------------------------------
// Devices.
enum {
  TSR_DEVICE_ASYNC = 1u << 0,            // work is queued; execute returns before it finishes
  TSR_DEVICE_EVENTS = 1u << 1,           // event_* entries work
  TSR_DEVICE_TIMING_EVENTS = 1u << 2,    // event_elapsed_get works on timing events
  TSR_DEVICE_HOST_ACCESSIBLE = 1u << 3,  // buffer_host_ptr_get works
};

typedef struct tsr_device_props {
  size_t struct_size;      // set by the caller
  const char *name;        // owned by the plugin; valid until shutdown
  uint64_t memory_bytes;
  uint32_t compute_units;
  uint32_t flags;          // TSR_DEVICE_*
  uint32_t dtype_mask;     // TSR_DTYPE_BIT of every dtype the device stores
  uint32_t base_alignment; // every buffer from buffer_alloc starts this aligned
  // (0.4) Rank as a context's default device: the highest wins, ties go to
  // the device found first. 0 (what a plugin built before 0.4 leaves) says
  // nothing and ranks below ref; see TSR_DEVICE_PRIORITY_*.
  int32_t priority;
  uint32_t reserved;       // zero; the next appended field starts at a new struct_size
} tsr_device_props;

// Default-device priorities (tsr_device_props.priority, 0.4). A plugin that
// should be chosen over ref when nothing is asked reports more than
// TSR_DEVICE_PRIORITY_REFERENCE; the in-tree plugins report ref 100,
// opencl 150, onednn 200 and cuda 300.
enum {
  TSR_DEVICE_PRIORITY_NONE = 0,
  TSR_DEVICE_PRIORITY_REFERENCE = 100,
};

typedef struct tsr_allocator_stats {
  size_t struct_size;      // set by the caller
  uint64_t bytes_in_use;   // handed out and not yet freed
  uint64_t bytes_reserved; // held from the system, in use or cached
  uint64_t peak_bytes_in_use;
  uint64_t alloc_count;    // buffer_alloc calls that succeeded
  uint64_t free_count;
  uint64_t system_alloc_count;  // allocations that reached the system or driver
} tsr_allocator_stats;

// Stream and event creation flags.
enum { TSR_EVENT_TIMING = 1u << 0 };

// stream_import flags (ABI 0.3).
enum {
  // stream_destroy of the imported stream releases the native object too.
  TSR_STREAM_IMPORT_TAKE_OWNERSHIP = 1u << 0,
};

// ---------------------------------------------------------------------------
// Kernels: a signature, a plan, an execution.
typedef int32_t tsr_math_mode_t;
enum {
  TSR_MATH_STRICT = 0,      // IEEE float32 arithmetic for float32 (no TF32, no bf16 engines)
  TSR_MATH_ALLOW_TF32 = 1,  // TF32 tensor-core engines allowed for float32
  TSR_MATH_ALLOW_REDUCED = 2,
};

enum {
  TSR_PLAN_REQUIRE_DETERMINISM = 1u << 0,  // refuse a plan that is not bit-reproducible
  TSR_PLAN_AUTOTUNE = 1u << 1,             // time candidate engines; pick the fastest
};

// What an op call looks like. Plugins must not retain any pointer from it.
typedef struct tsr_op_signature {
  size_t struct_size;
  int32_t op;              // tsr_op_id_t from ops.h
  int32_t device;
  int32_t num_inputs;
  int32_t num_outputs;     // num_inputs + num_outputs <= TSR_MAX_OPERANDS
  const tsr_tensor_desc *inputs;
  const tsr_tensor_desc *outputs;
  const void *attrs;       // the op's attribute struct (opens with struct_size) or NULL
  tsr_math_mode_t math_mode;
  uint32_t flags;          // TSR_PLAN_*
} tsr_op_signature;

enum { TSR_PLAN_INFO_DETERMINISTIC = 1u << 0 };

typedef struct tsr_plan_info {
  size_t struct_size;      // set by the caller
  const char *engine;      // owned by the plan; e.g. "ref:blocked-gemm"
  uint64_t workspace_bytes;    // scratch needed per execution
  uint64_t saved_state_bytes;  // opaque bytes a forward leaves for its backward
  uint32_t flags;              // TSR_PLAN_INFO_*
  uint32_t reserved;
} tsr_plan_info;

// One execution of a plan. Operands must match the plan's signature in dtype,
// sizes, strides and alias groups, and be at least as aligned.
typedef struct tsr_exec_args {
  size_t struct_size;
  int32_t num_inputs;
  int32_t num_outputs;
  const tsr_tensor_desc *inputs;
  const tsr_tensor_desc *outputs;
  tsr_plugin_buffer *workspace;   // NULL when workspace_bytes is 0
  uint64_t workspace_offset;
  uint64_t workspace_bytes;
  tsr_plugin_buffer *saved_state; // NULL when saved_state_bytes is 0
  uint64_t saved_state_offset;
  uint64_t saved_state_bytes;
} tsr_exec_args;

// ---------------------------------------------------------------------------
// The plugin table. Static for the plugin's lifetime. An entry beyond the
// caller's view of struct_size, or NULL where docs/abi.md marks it optional,
// is absent; the core checks with TSR_ABI_HAS before every call.
//
// Threading: identity/probe/device calls are thread-safe. Allocation, copies,
// stream and event calls are thread-safe across different streams; calls on
// one stream must be externally ordered. op_supports, plan_create,
// plan_info_get and plan_execute are thread-safe, including concurrent
// execution of one plan on different streams. plan_destroy, stream_destroy and
// event_destroy need the object to be idle and unused by other threads.
typedef struct tsr_plugin_api {
  size_t struct_size;
  uint32_t abi_major;      // TSR_ABI_VERSION_* the plugin was built against
  uint32_t abi_minor;
  const char *name;        // short, lower case: "ref", "onednn"; devices are "name:index"
  const char *version;
  const char *vendor;
  const char *build_info;  // versions of the libraries it was built with

  // Lifetime. init is optional and runs once after the entry; shutdown runs
  // once, when nothing of the plugin is in use.
  tsr_status (*init)(void);
  tsr_status (*shutdown)(void);
  // Cheap. TSR_OK, or TSR_UNAVAILABLE with the reason when the hardware or
  // driver is absent. Must not fail to load for that reason.
  tsr_status (*probe)(void);
  tsr_status (*device_count_get)(int32_t *out_count);
  tsr_status (*device_props_get)(int32_t device, tsr_device_props *out_props);

  // Memory. Frees are stream-ordered: the memory may be reused by work queued
  // on |stream| after the free, never earlier. |stream| may be NULL for
  // "after all work on the device".
  tsr_status (*buffer_alloc)(int32_t device, uint64_t bytes, tsr_plugin_stream *stream,
                             tsr_plugin_buffer **out_buffer);
  tsr_status (*buffer_free)(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream);
  // Optional (TSR_DEVICE_HOST_ACCESSIBLE): the host address of byte 0.
  tsr_status (*buffer_host_ptr_get)(tsr_plugin_buffer *buffer, void **out_ptr);
  // Optional: page-locked host memory from which copies may be asynchronous.
  tsr_status (*host_pinned_alloc)(int32_t device, uint64_t bytes, void **out_ptr);
  tsr_status (*host_pinned_free)(int32_t device, void *ptr);
  tsr_status (*allocator_stats_get)(int32_t device, tsr_allocator_stats *out_stats);
  // Returns cached, unused memory to the system.
  tsr_status (*allocator_trim)(int32_t device);

  // Copies, ordered on |stream|. A copy from or to ordinary host memory has
  // finished reading or writing host memory when the call returns; a copy
  // from or to pinned memory may still be queued.
  tsr_status (*copy_host_to_device)(tsr_plugin_stream *stream, const void *src,
                                    tsr_plugin_buffer *dst, uint64_t dst_offset, uint64_t bytes);
  tsr_status (*copy_device_to_host)(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                    uint64_t src_offset, void *dst, uint64_t bytes);
  tsr_status (*copy_device_to_device)(tsr_plugin_stream *stream, tsr_plugin_buffer *src,
                                      uint64_t src_offset, tsr_plugin_buffer *dst,
                                      uint64_t dst_offset, uint64_t bytes);

  // Streams: in-order queues. synchronize waits for all queued work and
  // returns the first error any of it raised; query returns TSR_NOT_READY
  // while work is pending.
  tsr_status (*stream_create)(int32_t device, uint32_t flags, tsr_plugin_stream **out_stream);
  tsr_status (*stream_destroy)(tsr_plugin_stream *stream);
  tsr_status (*stream_synchronize)(tsr_plugin_stream *stream);
  tsr_status (*stream_query)(tsr_plugin_stream *stream);
  // Work queued on |stream| after this call waits until |event| completes.
  tsr_status (*stream_wait_event)(tsr_plugin_stream *stream, tsr_plugin_event *event);
  tsr_status (*event_create)(int32_t device, uint32_t flags, tsr_plugin_event **out_event);
  tsr_status (*event_destroy)(tsr_plugin_event *event);
  // Completes when all work queued on |stream| before it has completed.
  tsr_status (*event_record)(tsr_plugin_event *event, tsr_plugin_stream *stream);
  tsr_status (*event_query)(tsr_plugin_event *event);
  tsr_status (*event_synchronize)(tsr_plugin_event *event);
  // Optional (TSR_DEVICE_TIMING_EVENTS): milliseconds between two recorded
  // timing events that have completed.
  tsr_status (*event_elapsed_get)(tsr_plugin_event *start, tsr_plugin_event *end,
                                  float *out_milliseconds);

  // Kernels. op_supports returns TSR_OK, TSR_UNSUPPORTED (valid, not implemented)
  // or TSR_INVALID_ARGUMENT (forbidden by the catalogue), with the reason.
  tsr_status (*op_supports)(const tsr_op_signature *signature);
  tsr_status (*plan_create)(const tsr_op_signature *signature, tsr_plugin_plan **out_plan);
  tsr_status (*plan_info_get)(const tsr_plugin_plan *plan, tsr_plan_info *out_info);
  tsr_status (*plan_execute)(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                             tsr_plugin_stream *stream);
  tsr_status (*plan_destroy)(tsr_plugin_plan *plan);

  // --- ABI 0.2 ---
  // Optional: the plugin's own thread runtime. A plugin whose vendor library
  // brings a thread pool (oneDNN's OpenMP) offers it here; from the plugin's
  // load until its shutdown the core runs the host table's parallel_for and
  // thread_count on it instead of on the core's pool, so a process never
  // keeps two pools busy on the same cores (DESIGN.md 5.3). The contract is
  // tsr_host_api.parallel_for's, including the chunking rule of docs/abi.md
  // 4.4, so results do not depend on which runtime ran them. Both or neither.
  tsr_status (*parallel_for)(int64_t count, int64_t grain, tsr_parallel_fn fn, void *arg);
  int32_t (*thread_count_get)(void);

  // --- ABI 0.3 ---
  // Optional: wraps |native|, an in-order queue of |device| that the
  // application made with the vendor's API, as a stream. The plugin documents
  // what |native| is (the CUDA plugin: a cudaStream_t; OpenCL would take a
  // cl_command_queue). Without TSR_STREAM_IMPORT_TAKE_OWNERSHIP in |flags| the
  // caller keeps owning |native| and must keep it valid until stream_destroy
  // of the imported stream returns, which then destroys only the plugin's
  // wrapper; with it, stream_destroy releases |native| too. The imported
  // stream is used like a created one (copies, execution, stream-ordered
  // frees, events, synchronize, query). TSR_INVALID_ARGUMENT for a NULL
  // |out_stream|, an unknown flag, or a |native| the plugin can tell is not
  // a queue of |device|; on failure the caller still owns |native|.
  tsr_status (*stream_import)(int32_t device, void *native, uint32_t flags,
                              tsr_plugin_stream **out_stream);
} tsr_plugin_api;

// The one exported function. Called once per load, before anything else, on
// the loading thread. On success *out_api points at a table valid until the
// plugin is unloaded. |host| stays valid until shutdown returns.
typedef tsr_status (*tsr_plugin_entry_fn)(const tsr_host_api *host,
                                          const tsr_plugin_api **out_api);

// True when the struct at |ptr| is large enough to hold |field|.
#define TSR_ABI_COVERS(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))
// True when an entry of a function table is present.
#define TSR_ABI_HAS(ptr, type, field) (TSR_ABI_COVERS(ptr, type, field) && (ptr)->field != NULL)

// ---------------------------------------------------------------------------
// Layout pins for LP64 targets. A change here is an ABI break.
#if !defined(__cplusplus) && UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
_Static_assert(sizeof(tsr_tensor_desc) == 184, "ABI layout");
_Static_assert(offsetof(tsr_tensor_desc, sizes) == 16, "ABI layout");
_Static_assert(offsetof(tsr_tensor_desc, strides) == 80, "ABI layout");
_Static_assert(offsetof(tsr_tensor_desc, byte_offset) == 144, "ABI layout");
_Static_assert(offsetof(tsr_tensor_desc, buffer) == 152, "ABI layout");
_Static_assert(offsetof(tsr_tensor_desc, storage_version) == 168, "ABI layout");
_Static_assert(offsetof(tsr_tensor_desc, alias_group) == 176, "ABI layout");
_Static_assert(offsetof(tsr_host_api, ctx) == 16, "ABI layout");
_Static_assert(offsetof(tsr_host_api, thread_count) == 64, "ABI layout");
_Static_assert(offsetof(tsr_host_api, engine_cache_get) == 72, "ABI layout");
_Static_assert(offsetof(tsr_host_api, engine_cache_put) == 80, "ABI layout");
_Static_assert(sizeof(tsr_host_api) == 88, "ABI layout");
_Static_assert(sizeof(tsr_device_props) == 48, "ABI layout");
_Static_assert(offsetof(tsr_device_props, priority) == 40, "ABI layout");
_Static_assert(sizeof(tsr_allocator_stats) == 56, "ABI layout");
_Static_assert(sizeof(tsr_op_signature) == 56, "ABI layout");
_Static_assert(sizeof(tsr_plan_info) == 40, "ABI layout");
_Static_assert(sizeof(tsr_exec_args) == 80, "ABI layout");
_Static_assert(offsetof(tsr_plugin_api, init) == 48, "ABI layout");
_Static_assert(offsetof(tsr_plugin_api, plan_destroy) == 288, "ABI layout");
_Static_assert(offsetof(tsr_plugin_api, parallel_for) == 296, "ABI layout");
_Static_assert(offsetof(tsr_plugin_api, stream_import) == 312, "ABI layout");
_Static_assert(sizeof(tsr_plugin_api) == 320, "ABI layout");
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_ABI_H_
