// The plugin kit: what every Tessera plugin would otherwise write by hand.
// A static library (CMake target Tessera::plugin_kit, position independent,
// hidden visibility) linked into one plugin; it holds no op arithmetic.
//
//   1. The entry: the host table's checks, the plugin's identity and its
//      error messages ("<name>: ...") through the host.
//   2. Out-structs copied as far as the caller's struct_size reaches, dtype
//      names, the selector values a signature uses.
//   3. Ops the plugin declares (op, dtypes, selector values, layout): the
//      kit answers op_supports and plan_create for them, validates each
//      signature against the catalogue's rules and refuses the rest with
//      the status docs/abi.md asks for, keeps the plan, and calls the
//      plugin's kernel with host addresses of the operands.
//   4. A host-memory device for CPU-like plugins: one device, a caching
//      allocator through the host's memory functions, synchronous streams
//      and events, copies.
//
// Each plugin links its own copy, so the kit's state (the host, the name,
// the declared ops) is the plugin's. Unless a function says otherwise, it is
// thread-safe once tsr_kit_entry_begin has returned.
#ifndef TESSERA_PLUGIN_KIT_H_
#define TESSERA_PLUGIN_KIT_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------
// 1. Entry and messages

// Host entries a plugin calls besides log, error_set, mem_alloc and mem_free
// (tsr_kit_host_check's |needs|).
enum {
  TSR_KIT_HOST_THREADS = 1u << 0,  // parallel_for and thread_count
};

// Checks |host| as a plugin entry must (docs/abi.md 3.1): TSR_INVALID_ARGUMENT
// for NULL or a NULL error_set, TSR_ABI_MISMATCH for another ABI major or a
// table too short to carry what the plugin calls (error_set, mem_alloc,
// mem_free, and the entries |needs| names), TSR_INVALID_ARGUMENT for a NULL
// one of those. Once error_set is known good, the reason goes through it,
// prefixed with |name|. Keeps nothing; thread-safe.
tsr_status tsr_kit_host_check(const char *name, const tsr_host_api *host, uint32_t needs);

// Checks |host| with tsr_kit_host_check (|needs| 0) and keeps it with |name|
// (static storage, the plugin's tsr_plugin_api.name) for messages. Returns
// TSR_OK, TSR_INVALID_ARGUMENT (NULL) or TSR_ABI_MISMATCH; the plugin's
// entry returns it. Call first in tsr_plugin_entry. Not thread-safe.
tsr_status tsr_kit_entry_begin(const char *name, const tsr_host_api *host);

// Fills |api|'s identity: zeroes it, sets struct_size, this ABI's version,
// the name given to tsr_kit_entry_begin and the three strings (static
// storage). Not thread-safe.
void tsr_kit_table_init(tsr_plugin_api *api, const char *version, const char *vendor,
                        const char *build_info);

// The host table kept by tsr_kit_entry_begin (valid until shutdown).
const tsr_host_api *tsr_kit_host(void);

// Sets the calling thread's error to "<name>: <message>" through the host
// and returns |status|: `return tsr_kit_error(TSR_UNSUPPORTED, "...")`.
tsr_status tsr_kit_error(tsr_status status, const char *format, ...) TSR_ABI_PRINTF(2, 3);

// Logs "<name>: <message>" through the host at |level|.
void tsr_kit_log(tsr_log_level_t level, const char *format, ...) TSR_ABI_PRINTF(2, 3);

// ---------------------------------------------------------------------------
// 2. Out-structs and names

// Copies |value| (|value_size| bytes, a struct opening with size_t
// struct_size) into |out| as far as out's struct_size reaches, keeping out's
// struct_size: the rule for every struct a plugin fills for its caller.
void tsr_kit_out_copy(void *out, const void *value, size_t value_size);
#define TSR_KIT_OUT_COPY(out, value) tsr_kit_out_copy((out), &(value), sizeof(value))

// plan_info_get's answer (docs/abi.md) for a plan the caller has checked:
// TSR_INVALID_ARGUMENT, with its message through |host|, when |out_info| is
// NULL or too short to hold its struct_size; else |info|'s fields (its own
// struct_size ignored) copied as far as out_info's struct_size reaches.
// Thread-safe.
tsr_status tsr_kit_plan_info_answer(const tsr_host_api *host, const tsr_plan_info *info,
                                    tsr_plan_info *out_info);

// "float32", "bool", ...; "unknown" outside the enum. Static storage.
const char *tsr_kit_dtype_name(tsr_dtype_t dtype);

// TSR_KIT_SELECTOR(v) of every selector value |signature| uses (ops.h's
// tsr_op_selector_count): its function, kind, mode, distribution or
// reduction, MATMUL's and CONV2D's activation and, when has_bias, the bias
// (value TSR_ACTIVATION_COUNT). Attributes the struct does not cover take
// their defaults. 0 for an op without a selector. A value outside the enum
// sets *out_unknown (and is not in the mask).
#define TSR_KIT_SELECTOR(value) (1ull << (unsigned)(value))
uint64_t tsr_kit_selectors_of(const tsr_op_signature *signature, int *out_unknown);

// ---------------------------------------------------------------------------
// 3. Declared ops

// Layout flags of a declaration.
enum {
  // Every operand is dense and row-major (strides of a contiguous tensor).
  TSR_KIT_CONTIGUOUS = 1u << 0,
  // Every input has the output's sizes (no broadcast).
  TSR_KIT_SAME_SHAPE = 1u << 1,
};

// One execution, as a kernel sees it.
typedef struct tsr_kit_call {
  const tsr_op_signature *signature;  // the plan's copy (descriptors without buffers)
  const tsr_exec_args *args;          // this execution's descriptors
  // The plan's copy of signature->attrs (its struct_size as the caller
  // wrote it, at most 256 bytes), or NULL; read fields with TSR_ABI_COVERS.
  const void *attrs;
  void *inputs[TSR_MAX_OPERANDS];     // host address of each input's first element
  void *outputs[TSR_MAX_OPERANDS];    // likewise for the outputs
  int64_t numel;                      // elements of output 0
} tsr_kit_call;

// Runs the op of |call|; TSR_OK or an error through tsr_kit_error.
typedef tsr_status (*tsr_kit_kernel_fn)(const tsr_kit_call *call);

// What a plugin implements: (op, dtypes, selector values, layout) and the
// kernel. A signature is accepted when a declaration covers it whole.
typedef struct tsr_kit_op {
  tsr_op_id_t op;
  uint32_t dtypes;             // TSR_DTYPE_BIT of each dtype taken
  uint64_t selectors;          // TSR_KIT_SELECTOR of each value; 0 for an op without one
  uint32_t flags;              // TSR_KIT_*
  int32_t min_rank, max_rank;  // of every operand; 0 and 0 for any rank
  tsr_kit_kernel_fn kernel;
  const char *engine;          // tsr_plan_info.engine, static storage
  // Optional: a further refusal of a valid signature the kernel does not
  // handle (return TSR_UNSUPPORTED with tsr_kit_error), or NULL.
  tsr_status (*check)(const tsr_op_signature *signature);
} tsr_kit_op;

// Validates |signature| against the catalogue's rules (docs/abi.md 10):
// TSR_UNSUPPORTED for an op, dtype or selector value past the enums this
// plugin was built with; TSR_INVALID_ARGUMENT for a request the catalogue
// forbids (operand counts, mixed dtypes, shapes, ranks, a bad attribute).
// Shapes are checked for the elementwise ops (UNARY, UNARY_BACKWARD,
// BINARY, COMPARE, WHERE, CLAMP, FILL, COPY, CAST), REDUCE and MATMUL;
// other ops get the descriptor checks only, and a plugin implementing one
// checks its shapes in tsr_kit_op.check.
tsr_status tsr_kit_signature_check(const tsr_op_signature *signature);

// Fills |api|'s op_supports, plan_create, plan_info_get, plan_execute and
// plan_destroy from |ops| (|count| declarations, static storage). op_supports
// answers TSR_OK for a signature a declaration covers and TSR_UNSUPPORTED
// otherwise (never TSR_INVALID_ARGUMENT); plan_create answers
// TSR_INVALID_ARGUMENT for a forbidden request. Plans copy the signature and
// report TSR_PLAN_INFO_DETERMINISTIC. Kernels receive host addresses, so the
// device must be host-accessible (section 4). Not thread-safe.
void tsr_kit_ops_set(tsr_plugin_api *api, const tsr_kit_op *ops, int32_t count);

// ---------------------------------------------------------------------------
// 4. A host-memory device

typedef struct tsr_kit_device_desc {
  const char *name;        // tsr_device_props.name, static storage
  uint32_t dtype_mask;     // dtypes the device stores; 0: all
  int32_t priority;        // tsr_device_props.priority (0: never the default over ref)
  uint32_t compute_units;  // 0: the host pool's thread count
} tsr_kit_device_desc;

// Fills |api| with one host-memory device described by |desc| (copied):
// probe (always available), device_count_get, device_props_get
// (TSR_DEVICE_HOST_ACCESSIBLE, events, timing events), buffer_alloc and
// buffer_free (a caching allocator of power-of-two size classes over the
// host's mem_alloc), buffer_host_ptr_get, allocator_stats_get,
// allocator_trim, the three copies, synchronous streams and events, and
// shutdown (gives the cache back). Work runs when it is issued, so every
// stream and event is always complete. Not thread-safe.
void tsr_kit_host_device_set(tsr_plugin_api *api, const tsr_kit_device_desc *desc);

// ---------------------------------------------------------------------------
// 5. Engine choices kept in the host's engine cache (ABI 0.4, optional)

// The choice recorded for |class_key| under |plugin_key| (the keys as
// engine_cache_get takes them): 1 with *|out_choice| set when one is recorded
// and lies in [0, |limit|); 0 when the host has no cache, none is recorded,
// or the value is not a decimal integer in range (the cache is a file: its
// values are input). For plan creation, not hot paths. Thread-safe.
int tsr_kit_engine_choice_get(const tsr_host_api *host, const char *plugin_key,
                              const char *class_key, int32_t limit, int32_t *out_choice);

// Records |choice| (>= 0) for |class_key| under |plugin_key|, written as a
// decimal integer. Nothing when the host has no cache; the cache itself may
// drop it (see engine_cache_put). Thread-safe.
void tsr_kit_engine_choice_put(const tsr_host_api *host, const char *plugin_key,
                               const char *class_key, int32_t choice);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_PLUGIN_KIT_H_
