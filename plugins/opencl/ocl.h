// The OpenCL plugin's internal contract: devices, buffers, streams, programs,
// kernels and plans, and what an op family provides to join the table.
//
// Everything here is plugin-private (hidden visibility). The ABI handles
// (tsr_plugin_buffer, _stream, _event, _plan) are these structs cast at the
// table boundary; ref's objects are compiled in for argument validation only
// (its struct tsr_plugin_plan is ref's, so ours has another tag).
//
// Threading: devices are built once at init and then only read. Buffers,
// streams and events follow abi.h's rules. Plans are immutable after
// creation except their kernel pools, whose slots are claimed atomically, so
// one plan runs on many threads at once without sharing a cl_kernel
// (clSetKernelArg is not thread-safe).
#ifndef TESSERA_PLUGINS_OPENCL_OCL_H_
#define TESSERA_PLUGINS_OPENCL_OCL_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

#define TSR_OCL_HIDDEN __attribute__((visibility("hidden")))
#define TSR_OCL_MAX_DEVICES 8

// ---------------------------------------------------------------------------
// Host table and errors.

// The core's host table, set at entry. Thread-safe after entry.
TSR_OCL_HIDDEN const tsr_host_api *tsr_ocl_host(void);

// Attaches a printf-formatted message to the thread's error and returns
// |code|. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_error(tsr_status code, const char *format, ...)
    TSR_ABI_PRINTF(2, 3);

#define TSR_OCL_RETURN_IF_ERROR(expr)   \
  do {                                  \
    tsr_status tsr_ocl_status_ = (expr); \
    if (tsr_ocl_status_ != TSR_OK) return tsr_ocl_status_; \
  } while (0)

// Maps an OpenCL error to a status (OUT_OF_MEMORY for the allocation
// failures, DEVICE_LOST for CL_DEVICE_NOT_AVAILABLE, INTERNAL otherwise) and
// sets the message "<what>: <CL_ERROR_NAME> (<code>)". Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_cl_error(cl_int err, const char *what);

// "CL_INVALID_VALUE" for -30; "CL_UNKNOWN_ERROR" for codes it does not know.
// Static storage. Thread-safe.
TSR_OCL_HIDDEN const char *tsr_ocl_cl_error_name(cl_int err);

// Logs at |level| through the host table. Thread-safe.
TSR_OCL_HIDDEN void tsr_ocl_log(tsr_log_level_t level, const char *format, ...)
    TSR_ABI_PRINTF(2, 3);

// ---------------------------------------------------------------------------
// Devices. Discovered at init over every platform; immutable afterwards.

enum {
  TSR_OCL_CAP_FP64 = 1u << 0,           // cl_khr_fp64 or an OpenCL 1.2+ device with double config
  TSR_OCL_CAP_FP16 = 1u << 1,           // cl_khr_fp16
  TSR_OCL_CAP_SUBGROUPS = 1u << 2,      // cl_khr_subgroups or OpenCL 2.1+ subgroups
  TSR_OCL_CAP_INT64_ATOMICS = 1u << 3,  // cl_khr_int64_base_atomics
  TSR_OCL_CAP_FLOAT_ATOMICS = 1u << 4,  // cl_ext_float_atomics (global add)
  TSR_OCL_CAP_GPU = 1u << 5,            // CL_DEVICE_TYPE_GPU
};

typedef struct tsr_ocl_allocator tsr_ocl_allocator;

typedef struct tsr_ocl_device {
  int32_t index;
  cl_platform_id platform;
  cl_device_id id;
  cl_context context;
  cl_command_queue queue;  // the device's own queue: NULL-stream copies and frees
  uint32_t caps;           // TSR_OCL_CAP_*
  char name[256];          // "<platform>: <device>"
  char driver_version[128];
  char device_version[128];
  char platform_version[128];
  uint64_t global_mem_bytes;
  uint64_t max_alloc_bytes;
  uint64_t local_mem_bytes;  // 0 when the device has no dedicated local memory
  int local_mem_is_global;   // CL_GLOBAL: local memory is emulated in global memory
  uint32_t compute_units;
  size_t max_work_group_size;
  size_t max_work_item_sizes[3];
  uint32_t base_alignment;   // bytes; CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8, at least 64
  // A CPU device (PoCL): buffers live in host memory, allocated by the
  // plugin (CL_MEM_USE_HOST_PTR) so that running out of it is a status.
  // PoCL allocates lazily otherwise and aborts in an assertion when the
  // memory is first touched.
  int host_memory;
  tsr_ocl_allocator *allocator;
} tsr_ocl_device;

// Number of usable devices (0 when there is no platform or device). Thread-safe after init.
TSR_OCL_HIDDEN int32_t tsr_ocl_device_count(void);
// Device |index|, or NULL out of range. Owned by the plugin. Thread-safe after init.
TSR_OCL_HIDDEN tsr_ocl_device *tsr_ocl_device_get(int32_t index);

// ---------------------------------------------------------------------------
// Buffers. A cl_mem plus its size; kernels address operands by element
// offsets into it, so no sub-buffers (with their alignment rules) are made.

#define TSR_OCL_BUFFER_MAGIC 0x4f434c42u  // "OCLB"

typedef struct tsr_ocl_buffer {
  uint32_t magic;            // TSR_OCL_BUFFER_MAGIC while live
  int32_t device;
  cl_mem mem;                // NULL for a 0-byte buffer
  uint64_t bytes;            // what was asked for; ranges are checked against it
  uint64_t capacity;         // what the block holds
  struct tsr_ocl_buffer *next_free;
  cl_event ready;            // cached: completes when the freeing stream's work did; may be NULL
  void *free_queue;          // cached: the cl_command_queue it was freed on (reuse there needs no wait)
  uint32_t size_class;
} tsr_ocl_buffer;

// Checks that |buffer| is a live buffer of this plugin and that
// [offset, offset + bytes) lies inside it, naming |what| and |name| in the
// message. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_buffer_range_check(const char *what, const char *name,
                                                     const tsr_ocl_buffer *buffer,
                                                     uint64_t offset, uint64_t bytes);

// ---------------------------------------------------------------------------
// Streams and events.

#define TSR_OCL_STREAM_MAGIC 0x4f434c53u  // "OCLS"

typedef struct tsr_ocl_stream {
  uint32_t magic;
  int32_t device;
  cl_command_queue queue;  // in-order, profiling enabled (any stream may record timing events)
  uint32_t flags;
  atomic_int error;        // first asynchronous error seen (tsr_status), reported by synchronize
  // stream_query's bookkeeping: commands enqueued so far, how many are known
  // complete, and a marker probing the rest (calls on one stream are
  // externally ordered, abi.h).
  atomic_uint_fast64_t submitted;
  uint64_t settled;
  cl_event probe;
  uint64_t probe_at;
  // Completion callbacks still to run that may write |error| (a family's
  // data-dependent check): synchronize, query and destroy wait for them, as
  // OpenCL does not order callbacks before clFinish returns.
  atomic_int callbacks_pending;
  char error_message[256];  // written by whoever set |error| first
} tsr_ocl_stream;

// Puts |status| with a printf-formatted message on |stream| unless an error is
// held already; the next synchronize or query returns it (docs/abi.md 5.3).
// Safe from OpenCL callbacks. Thread-safe.
TSR_OCL_HIDDEN void tsr_ocl_stream_error_set(tsr_ocl_stream *stream, tsr_status status,
                                             const char *format, ...) TSR_ABI_PRINTF(3, 4);

// Counts one enqueued command on |stream| (NULL: nothing). Thread-safe.
static inline void tsr_ocl_stream_note_work(tsr_ocl_stream *stream) {
  if (stream != NULL) atomic_fetch_add_explicit(&stream->submitted, 1, memory_order_relaxed);
}

// The queue work for |stream| goes to: the stream's, or the device's own
// queue for NULL. |device| is used only for NULL. Thread-safe.
TSR_OCL_HIDDEN cl_command_queue tsr_ocl_queue_of(tsr_ocl_stream *stream, tsr_ocl_device *device);

// ---------------------------------------------------------------------------
// Programs and kernels.
//
// An op family's OpenCL C source lives in plugins/opencl/kernels/<name>.cl and
// is embedded at build time; tsr_ocl_source_get("<name>") returns it. Every
// program is compiled as kernels/common.cl followed by its own source. A
// program is (device, source, build options); it is built once per process
// (cached in memory) and its binary is cached on disk keyed by device,
// driver version, build options and source hash, so a later process loads the
// binary instead of compiling the source.

// The embedded source of kernels/<name>.cl, or NULL. Static storage. Thread-safe.
TSR_OCL_HIDDEN const char *tsr_ocl_source_get(const char *name);

// Returns the built program for |source_name| with |options| on |device|
// (from memory, the disk cache, or compiled now), owned by the plugin until
// shutdown; the build log goes into the error message when compilation
// fails. Thread-safe (one lock per device, not on any execute path).
TSR_OCL_HIDDEN tsr_status tsr_ocl_program_get(tsr_ocl_device *device, const char *source_name,
                                              const char *options, cl_program *out_program);

// Counters of program builds since load, for tests and tsr-info.
typedef struct tsr_ocl_program_stats {
  uint64_t source_builds;  // clBuildProgram on source (compilations)
  uint64_t binary_loads;   // programs created from a cached binary
  // Every clBuildProgram call, binary or source. OpenCL requires the call on
  // a program made from a binary too (PoCL enforces it); there it loads the
  // binary and compiles nothing.
  uint64_t build_calls;
  uint64_t memory_hits;    // served from the in-process cache
  double source_build_ms;  // time inside clBuildProgram for sources
  double binary_build_ms;  // time inside clBuildProgram for cached binaries
} tsr_ocl_program_stats;
TSR_OCL_HIDDEN void tsr_ocl_program_stats_get(tsr_ocl_program_stats *out_stats);

// A kernel of one program with a pool of cl_kernel objects, one per
// concurrent caller: clSetKernelArg on a shared kernel would race.
#define TSR_OCL_KERNEL_SLOTS 16
typedef struct tsr_ocl_kernel {
  cl_program program;   // owned by the program cache
  char name[64];
  atomic_uint busy;     // bit i: slot i is claimed
  cl_kernel slots[TSR_OCL_KERNEL_SLOTS];  // created on first claim; slot 0 at init
  pthread_mutex_t create_lock;            // guards creating a slot (never on a warm path)
  size_t max_work_group_size;  // CL_KERNEL_WORK_GROUP_SIZE on the device
  size_t preferred_multiple;   // CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
} tsr_ocl_kernel;

// Creates kernel |kernel_name| of program (|source_name|, |options|) on
// |device| into the caller-owned |*out_kernel| (heap; free with
// tsr_ocl_kernel_destroy). Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_kernel_create(tsr_ocl_device *device, const char *source_name,
                                                const char *options, const char *kernel_name,
                                                tsr_ocl_kernel **out_kernel);
// Releases the kernel's objects and frees it; NULL is ignored. Not thread-safe
// (the plan is idle).
TSR_OCL_HIDDEN void tsr_ocl_kernel_destroy(tsr_ocl_kernel *kernel);

// One kernel argument: a value of |size| bytes at |value| (for a buffer,
// &mem with sizeof(cl_mem); for local memory, value NULL and the size).
typedef struct tsr_ocl_arg {
  size_t size;
  const void *value;
} tsr_ocl_arg;
#define TSR_OCL_ARG(v) ((tsr_ocl_arg){sizeof(v), &(v)})
#define TSR_OCL_LOCAL(bytes) ((tsr_ocl_arg){(bytes), NULL})

// What plan_execute resolved: the queue and each operand's cl_mem and
// element offset (byte_offset / dtype size: the plan guarantees operands are
// element-aligned). |mem| is NULL for an empty operand (0 elements or an
// absent optional operand).
typedef struct tsr_ocl_exec {
  tsr_ocl_device *device;
  tsr_ocl_stream *stream;  // NULL: the device's own queue
  cl_command_queue queue;
  int32_t num_inputs;
  int32_t num_outputs;
  cl_mem mem[TSR_MAX_OPERANDS];      // inputs, then outputs
  uint64_t offset[TSR_MAX_OPERANDS]; // in elements of the operand's dtype
  cl_mem workspace;                  // NULL when the plan needs none
  uint64_t workspace_offset;         // bytes, a multiple of the device's base alignment
} tsr_ocl_exec;

// Claims a slot of |kernel|, sets |args| and enqueues it over |global| (work
// dims |dims|, each a multiple of |local| when |local| is not NULL) on
// exec->queue without waiting; the slot is free again on return (arguments
// are captured at enqueue). No allocation after the slot exists. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_launch(const tsr_ocl_exec *exec, const tsr_ocl_kernel *kernel,
                                         cl_uint dims, const size_t *global, const size_t *local,
                                         int32_t num_args, const tsr_ocl_arg *args);

// Rounds |n| up to a multiple of |m| (m > 0). Thread-safe.
static inline size_t tsr_ocl_round_up(size_t n, size_t m) {
  return (n + m - 1) / m * m;
}

// ---------------------------------------------------------------------------
// Plans.

// Bytes of per-plan state an op family may keep in tsr_ocl_plan.state
// (kernels, chosen variant, shape constants). Checked with _Static_assert by
// each family.
#define TSR_OCL_PLAN_STATE_BYTES 2048
#define TSR_OCL_PLAN_MAGIC 0x4f434c50u  // "OCLP"

typedef struct tsr_ocl_plan tsr_ocl_plan;

// What an op family provides for one op id.
typedef struct tsr_ocl_op_impl {
  // TSR_OK when this plugin runs |signature| (already valid by the
  // catalogue: ref's plan builder accepted it into |ref_plan|; plan.c has
  // refused the half types and float64 without cl_khr_fp64), else
  // TSR_UNSUPPORTED with the reason. No OpenCL calls, no allocation. NULL:
  // the family runs every signature that reaches it.
  tsr_status (*supports)(const tsr_ocl_device *device, const tsr_op_signature *signature,
                         const struct tsr_plugin_plan *ref_plan);
  // Builds the plan's kernels and picks its variant: fills plan->state,
  // plan->engine, plan->workspace_bytes and plan->info_flags. May time
  // candidates when plan->autotune is set. On failure, releases what it made.
  tsr_status (*init)(tsr_ocl_plan *plan, const tsr_op_signature *signature);
  // Enqueues the work on exec->queue. Must not block, allocate or lock.
  tsr_status (*execute)(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec);
  // Releases what init made (kernels, constant buffers). May be NULL.
  void (*fini)(tsr_ocl_plan *plan);
} tsr_ocl_op_impl;

struct tsr_ocl_plan {
  uint32_t magic;
  int32_t op;
  tsr_ocl_device *device;
  const tsr_ocl_op_impl *impl;
  // ref's validated plan for the same signature (device index rewritten to
  // 0): operands[] (dtype, rank, sizes, strides, numel, extent_bytes) and
  // ref's per-op analysis (collapsed shapes, conv geometry). Owned.
  struct tsr_plugin_plan *ref;
  // The signature's attribute struct, copied (every op's attrs fit).
  union {
    size_t struct_size;
    tsr_fill_attrs fill;
    tsr_unary_attrs unary;
    tsr_binary_attrs binary;
    tsr_compare_attrs compare;
    tsr_clamp_attrs clamp;
    tsr_reduce_attrs reduce;
    tsr_arg_reduce_attrs arg_reduce;
    tsr_matmul_attrs matmul;
    tsr_conv2d_attrs conv2d;
    tsr_pool2d_attrs pool2d;
    tsr_softmax_attrs softmax;
    tsr_layer_norm_attrs layer_norm;
    tsr_batch_norm_attrs batch_norm;
    tsr_concat_attrs concat;
    tsr_pad_attrs pad;
    tsr_gather_attrs gather;
    tsr_rng_fill_attrs rng_fill;
    tsr_cross_entropy_attrs cross_entropy;
    tsr_sgd_attrs sgd;
    tsr_adam_attrs adam;
  } attrs;
  int has_attrs;
  tsr_math_mode_t math_mode;
  uint32_t flags;          // the signature's TSR_PLAN_*
  int autotune;            // TSR_PLAN_AUTOTUNE or TSR_OPENCL_AUTOTUNE=1
  char engine[96];         // "opencl:matmul-tiled-64x64"
  uint64_t workspace_bytes;
  uint32_t info_flags;     // TSR_PLAN_INFO_*
  _Alignas(16) unsigned char state[TSR_OCL_PLAN_STATE_BYTES];
};

// The op families. Each table is indexed by op id; NULL where the family
// does not implement the op. Defined in ops_<family>.c; plan.c consults
// them in this order.
//   elementwise: FILL COPY CAST UNARY UNARY_BACKWARD BINARY COMPARE WHERE
//                CLAMP SGD_UPDATE ADAM_UPDATE RNG_FILL
//   reduce:      REDUCE ARG_REDUCE SOFTMAX(_BACKWARD) CROSS_ENTROPY(_BACKWARD)
//                LAYER_NORM(_BACKWARD) BATCH_NORM(_BACKWARD) CONCAT PAD
//                GATHER SCATTER_ADD
//   matmul:      MATMUL CONV2D CONV2D_BACKWARD_DATA CONV2D_BACKWARD_FILTER
//                POOL2D POOL2D_BACKWARD
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl *const tsr_ocl_elementwise_ops[TSR_OP_COUNT];
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl *const tsr_ocl_reduce_ops[TSR_OP_COUNT];
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl *const tsr_ocl_matmul_ops[TSR_OP_COUNT];

// ---------------------------------------------------------------------------
// Engine selection. A candidate is a variant of an op's kernel (program
// options + work-group shape); the family lists candidates in order of
// preference for the device, and tsr_ocl_tune_pick returns the first that
// builds and fits, or with autotune the fastest by timing.

// Winner memory for autotune: |key| (the family's description of device and
// shape, e.g. "matmul f32 64x128x256 nn") to a candidate index. In memory for
// the process, and on disk next to the program cache. Thread-safe.
TSR_OCL_HIDDEN int tsr_ocl_tune_lookup(const tsr_ocl_device *device, const char *key,
                                       int32_t *out_choice);
TSR_OCL_HIDDEN void tsr_ocl_tune_store(const tsr_ocl_device *device, const char *key,
                                       int32_t choice);

// Times one run of |fn| (which enqueues work on |queue|) with profiling
// events around it; *out_ms is the median of |repeats| runs. Thread-safe.
typedef tsr_status (*tsr_ocl_timed_fn)(void *arg, cl_command_queue queue);
TSR_OCL_HIDDEN tsr_status tsr_ocl_time(tsr_ocl_device *device, tsr_ocl_timed_fn fn, void *arg,
                                       int32_t repeats, double *out_ms);

// Scratch device memory for autotuning: a buffer of at least |bytes| from
// the device's allocator (freed with tsr_ocl_scratch_free). Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_scratch_alloc(tsr_ocl_device *device, uint64_t bytes,
                                                cl_mem *out_mem, tsr_ocl_buffer **out_buffer);
TSR_OCL_HIDDEN void tsr_ocl_scratch_free(tsr_ocl_buffer *buffer);

// A read-only device buffer holding a copy of |bytes| at |data| (shape
// constants a kernel reads), owned by the caller (clReleaseMemObject). Made
// at plan time, never on an execute path. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_const_buffer_create(tsr_ocl_device *device, const void *data,
                                                      size_t bytes, cl_mem *out_mem);

#endif  // TESSERA_PLUGINS_OPENCL_OCL_H_
