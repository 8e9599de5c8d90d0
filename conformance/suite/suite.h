// The conformance suite as one child process runs it: the plugin under test
// (loaded through its public entry only, with the suite's own host table),
// the records the child sends to the parent, and the numerics case model.
//
// tsr-conformance forks one child per group of checks (tool/main.c); each
// child loads the plugin afresh, runs its checks and reports them as lines
// on a pipe, so a crash names the op or check it happened in.
#ifndef TESSERA_CONFORMANCE_SUITE_SUITE_H_
#define TESSERA_CONFORMANCE_SUITE_SUITE_H_

#include <stddef.h>
#include <stdint.h>

#include "oracle.h"
#include "tessera/abi.h"
#include "tessera/ops.h"

// --- the host table (host.c) ------------------------------------------------

// The host table the plugin receives: error_set keeps the calling thread's
// message, mem_alloc counts live blocks, parallel_for runs on a pool of two
// threads (core/thread_pool.c), created on first use. Static; thread-safe.
const tsr_host_api *tsr_conf_host_get(void);
// A table laid out like tsr_host_api but |extra| bytes longer (entries a
// newer core would have), for the struct_size checks. Same functions.
const tsr_host_api *tsr_conf_host_larger_get(size_t *out_extra);
// The calling thread's last message from the plugin ("" if none), and clear.
const char *tsr_conf_host_message(void);
void tsr_conf_host_message_clear(void);
// Blocks from mem_alloc not yet given to mem_free. Thread-safe.
int64_t tsr_conf_host_live_blocks(void);
// Turns the host's log into stderr lines (verbose mode).
void tsr_conf_host_verbose_set(int verbose);

// --- records (record.c) -----------------------------------------------------

typedef int32_t tsr_conf_result_t;
enum {
  TSR_CONF_PASS = 0,
  TSR_CONF_FAIL = 1,
  TSR_CONF_SKIP = 2,      // could not be checked: the reason says why
  TSR_CONF_DECLINED = 3,  // the plugin answered "unsupported" for this case
};
const char *tsr_conf_result_name(tsr_conf_result_t result);

// Child side: every record is one line on the file descriptor set here.
void tsr_conf_record_fd_set(int fd);
// "Now doing |what|": lets the parent name the step a crash happened in.
void tsr_conf_record_begin(const char *format, ...) TSR_ABI_PRINTF(1, 2);
void tsr_conf_record_info(const char *key, const char *format, ...) TSR_ABI_PRINTF(2, 3);
// One API-tier check: |name| is "group: what" ("streams: cross-stream wait").
void tsr_conf_record_check(const char *name, tsr_conf_result_t result, double ratio,
                           const char *format, ...) TSR_ABI_PRINTF(4, 5);
// The plugin's answer for the representative signature of (op, dtype).
void tsr_conf_record_support(int32_t op, tsr_dtype_t dtype, int supported, const char *reason);
// Whether the plugin accepts any case of the battery of (op, dtype) with
// selector value |index| (tsr_conf_case_selectors): 2 yes, 1 no.
void tsr_conf_record_selector(int32_t op, int32_t index, tsr_dtype_t dtype, int state);
// One cell of the numerics matrix.
void tsr_conf_record_cell(int32_t op, tsr_dtype_t dtype, tsr_conf_result_t result, double ratio,
                          int cases, int passed, int failed, int declined, const char *format,
                          ...) TSR_ABI_PRINTF(9, 10);
// One failing case: |check| is the kind of failure ("values", "out-of-bounds
// write", ...), |case_name| the case.
void tsr_conf_record_failure(int32_t op, tsr_dtype_t dtype, const char *check, double ratio,
                             const char *case_name, const char *format, ...) TSR_ABI_PRINTF(6, 7);
// The child finished its work normally.
void tsr_conf_record_done(void);

// --- the plugin under test (session.c) --------------------------------------

typedef struct tsr_conf_session {
  const char *path;
  void *library;  // dlopen handle; never closed (docs/abi.md 3.3)
  tsr_plugin_entry_fn entry;
  const tsr_plugin_api *table;  // as the plugin returned it
  // The suite's view: the plugin's entries up to its struct_size, NULL
  // beyond, so nothing past a shorter (older) table is ever called.
  tsr_plugin_api api;
  const tsr_host_api *host;
  int32_t device;
  int32_t device_count;
  tsr_device_props props;
  tsr_plugin_stream *stream;  // created by tsr_conf_session_open
  int has_kernels;
  int started;  // entry, init and probe ran; shutdown did not
  int full;     // --full battery
  int verbose;  // --verbose: every case and its err/tol on stderr
  uint64_t seed;
  char message[1024];  // why open failed
} tsr_conf_session;

typedef int32_t tsr_conf_open_t;
enum {
  TSR_CONF_OPENED = 0,
  TSR_CONF_NOT_LOADED = 1,   // dlopen, entry or table problem: not a plugin we can judge
  TSR_CONF_UNAVAILABLE = 2,  // probe said unavailable: skipped with the reason
  TSR_CONF_NO_DEVICE = 3,    // loaded, but device |device| does not exist
};

// dlopens |path| (RTLD_NOW | RTLD_LOCAL, as the core does) unless already
// open, calls the entry with |host|, init, probe, reads device |device| and
// creates a stream on it. On failure the reason is in session->message.
tsr_conf_open_t tsr_conf_session_open(tsr_conf_session *session, const char *path, int32_t device,
                                      const tsr_host_api *host);
// Destroys the stream and calls shutdown. Returns its status.
tsr_status tsr_conf_session_close(tsr_conf_session *session);
// Name of a status code ("INVALID_ARGUMENT").
const char *tsr_conf_status_name(tsr_status status);

// --- numerics cases (numerics.c) --------------------------------------------

typedef int32_t tsr_conf_layout_t;
enum {
  TSR_CONF_CONTIGUOUS = 0,
  TSR_CONF_TRANSPOSED = 1,  // dimensions laid out in reverse order (column-major)
  TSR_CONF_STRIDED = 2,     // every other element of a padded buffer: gaps between elements
  TSR_CONF_BROADCAST = 3,   // stride 0 on the dimensions of broadcast_mask
  TSR_CONF_EXPLICIT = 4,    // strides as given
};

typedef int32_t tsr_conf_gen_t;
enum {
  TSR_CONF_GEN_POISON = 0,   // outputs: NaN / a sentinel, so an unwritten element shows
  TSR_CONF_GEN_UNIFORM = 1,  // uniform in [lo, hi], rounded to the dtype
  TSR_CONF_GEN_NONZERO = 2,  // |x| uniform in [lo, hi], random sign
  TSR_CONF_GEN_INTS = 3,     // integers uniform in [lo, hi]
  TSR_CONF_GEN_BOOL = 4,
  TSR_CONF_GEN_SPECIAL = 5,  // drawn from the dtype's special values (NaN, inf, -0, limits)
  TSR_CONF_GEN_CUSTOM = 6,   // the case's init function fills it
};

typedef struct tsr_conf_operand {
  tsr_dtype_t dtype;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  tsr_conf_layout_t layout;
  uint32_t broadcast_mask;        // TSR_CONF_BROADCAST
  int64_t strides[TSR_MAX_RANK];  // TSR_CONF_EXPLICIT
  uint32_t misalign;              // elements added to the byte offset (breaks 64-byte alignment)
  int32_t alias_of;               // outputs: the input it aliases exactly, or -1
  int null_buffer;                // an empty descriptor (rank 0, NULL buffer)
  int read_before_write;          // outputs: the op reads them; they get generated values
  tsr_conf_gen_t gen;
  double lo, hi;
} tsr_conf_operand;

// Every attribute struct of the catalogue, plus room to pass one larger
// than its type (the struct_size checks).
typedef union tsr_conf_attrs {
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
  tsr_rng_fill_attrs rng;
  tsr_cross_entropy_attrs cross_entropy;
  tsr_sgd_attrs sgd;
  tsr_adam_attrs adam;
  unsigned char bytes[256];
} tsr_conf_attrs;

typedef int32_t tsr_conf_attrs_pass_t;
enum {
  TSR_CONF_ATTRS_FULL = 0,   // the struct, struct_size = sizeof
  TSR_CONF_ATTRS_NULL = 1,   // attrs NULL: the op's defaults (|attrs| holds them for the oracle)
  TSR_CONF_ATTRS_SHORT = 2,  // struct_size = attrs_size < sizeof: later fields take defaults
  TSR_CONF_ATTRS_LONG = 3,   // struct_size = sizeof + 32 zero bytes a newer caller would send
};

enum {
  TSR_CONF_CASE_SIGNATURE_LONG = 1u << 0,  // tsr_op_signature with a larger struct_size
  TSR_CONF_CASE_ARGS_LONG = 1u << 1,       // tsr_exec_args with a larger struct_size
};

typedef struct tsr_conf_case tsr_conf_case;
// Fills the logical values of operand |index| (inputs first, then outputs)
// for a case whose operand uses TSR_CONF_GEN_CUSTOM. |rng| is the case's
// generator state (tsr_conf_random_*).
typedef void (*tsr_conf_init_fn)(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values,
                                 uint64_t *rng);

struct tsr_conf_case {
  char name[192];
  const char *category;  // the battery feature it exercises: "basic", "non-contiguous", ...
  int32_t op;
  int32_t num_inputs;
  int32_t num_outputs;
  tsr_conf_operand operands[TSR_MAX_OPERANDS];  // inputs, then outputs
  tsr_conf_attrs attrs;  // complete, defaults applied: what the oracle reads
  int has_attrs;         // the op takes an attribute struct
  tsr_conf_attrs_pass_t attrs_pass;
  size_t attrs_size;     // TSR_CONF_ATTRS_SHORT: the struct_size passed
  tsr_conf_init_fn init;
  double params[8];      // for |init|
  // TSR_OK, or TSR_INVALID_ARGUMENT when the spec makes this call an error:
  // at plan_create (expect_at_plan) or, data-dependent, at execution.
  tsr_status expect;
  int expect_at_plan;
  uint32_t flags;        // TSR_CONF_CASE_*
};

// Starts |c| for |op| with no operands; the name is printf-formatted.
void tsr_conf_case_init(tsr_conf_case *c, int32_t op, const char *category, const char *format,
                        ...) TSR_ABI_PRINTF(4, 5);
// Appends an input or output (contiguous, generated uniform in [-2, 2] for
// inputs, poisoned for outputs) and returns it for adjustment.
tsr_conf_operand *tsr_conf_case_input(tsr_conf_case *c, tsr_dtype_t dtype, int32_t rank,
                                      const int64_t *sizes);
tsr_conf_operand *tsr_conf_case_output(tsr_conf_case *c, tsr_dtype_t dtype, int32_t rank,
                                       const int64_t *sizes);
static inline tsr_conf_operand *tsr_conf_case_out(tsr_conf_case *c, int32_t i) {
  return &c->operands[c->num_inputs + i];
}

typedef struct tsr_conf_case_result {
  tsr_conf_result_t result;
  const char *check;    // the failing check, NULL when it passed
  double ratio;         // largest error / tolerance over the compared elements
  int64_t compared;     // elements compared
  char detail[640];
} tsr_conf_case_result;

// Runs |c| on the session's device: buffers with guard bytes around every
// operand, op_supports, plan_create, execute, synchronize, then the oracle
// and the comparisons. Never aborts; |out| says what happened.
void tsr_conf_case_run(tsr_conf_session *s, const tsr_conf_case *c, tsr_conf_case_result *out);

// Builds the plan signature of |c| into |descs| (inputs then outputs) and
// |signature|, as tsr_conf_case_run does; for probes and the API tier.
// |attrs_buffer| receives the attrs as passed. Returns 0, or -1 when the
// operands cannot be laid out.
int tsr_conf_case_signature(const tsr_conf_session *s, const tsr_conf_case *c,
                            tsr_tensor_desc *descs, tsr_conf_attrs *attrs_buffer,
                            tsr_op_signature *signature);

// --- prepared executions, for the API tier (numerics.c) ---------------------

// A case with its device buffers filled and its plan built, ready to execute
// any number of times (on any stream), and read back.
typedef struct tsr_conf_prepared tsr_conf_prepared;
// Prepares |c|; TSR_UNSUPPORTED when the plugin declines it. The message of
// any failure is in |why|.
tsr_status tsr_conf_prepared_create(tsr_conf_session *s, const tsr_conf_case *c, int copies,
                                    tsr_conf_prepared **out, char *why, size_t why_size);
// Executes copy |copy| (each copy has its own buffers) on |stream|.
tsr_status tsr_conf_prepared_execute(tsr_conf_prepared *p, int copy, tsr_plugin_stream *stream);
// Reads copy |copy|'s first output back into |bytes| (its whole buffer).
tsr_status tsr_conf_prepared_read(tsr_conf_prepared *p, int copy, tsr_plugin_stream *stream,
                                  unsigned char *bytes, size_t *out_size);
const tsr_plugin_plan *tsr_conf_prepared_plan(const tsr_conf_prepared *p);
void tsr_conf_prepared_destroy(tsr_conf_prepared *p);

// --- the battery (battery.c and cases_*.c) ---------------------------------

// Receives the cases of one (op, dtype).
typedef struct tsr_conf_sink {
  void (*emit)(void *ctx, tsr_conf_case *c);
  void *ctx;
  int full;
  uint32_t dtype_mask;  // dtypes the device stores (for CAST targets)
} tsr_conf_sink;

// Emits every case of |op| for |dtype| (the matrix column). Returns 0, or -1
// when the suite has no cases for the op yet.
int tsr_conf_cases_emit(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink);
// The dtype of LAYER_NORM's statistics and BATCH_NORM's per-channel
// operands: float32 for bfloat16 and float16 x, else x's (docs/abi.md
// 10.17, 10.18).
tsr_dtype_t tsr_conf_statistics_dtype(tsr_dtype_t dtype);
// 1 when docs/abi.md allows |dtype| as the main dtype of |op|.
int tsr_conf_op_accepts(int32_t op, tsr_dtype_t dtype);
// The representative (small, contiguous) case that decides whether the
// plugin declares (op, dtype).
void tsr_conf_case_representative(int32_t op, tsr_dtype_t dtype, tsr_conf_case *c);

// Selectors (tsr_op_selector_count and tsr_op_selector_name in ops.h): the
// values of an op's enum-valued attribute and its optional bias, on which
// support is keyed besides (op, dtype).
#define TSR_CONF_MAX_SELECTORS 32
// The selector values case |c| exercises, as a bit mask (bit i: value i);
// 0 for an op without a selector.
uint32_t tsr_conf_case_selectors(const tsr_conf_case *c);

// Per-family emitters (cases_*.c).
void tsr_conf_cases_elementwise(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink);
void tsr_conf_cases_reduce(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink);
void tsr_conf_cases_matmul(tsr_dtype_t dtype, tsr_conf_sink *sink);
void tsr_conf_cases_conv(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink);
void tsr_conf_cases_nn(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink);
void tsr_conf_cases_data(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink);

// Deterministic generator for test data (splitmix64).
uint64_t tsr_conf_random_next(uint64_t *state);
double tsr_conf_random_uniform(uint64_t *state, double lo, double hi);
int64_t tsr_conf_random_int(uint64_t *state, int64_t lo, int64_t hi);
uint64_t tsr_conf_hash(const char *text);

// --- the tiers ----------------------------------------------------------------

// Numerics of one op, every declared dtype (numerics_op.c).
void tsr_conf_numerics_op_run(tsr_conf_session *s, int32_t op);
// The support matrix: representative signature per (op, dtype) (numerics_op.c).
void tsr_conf_support_report(tsr_conf_session *s);

// API-tier groups (api_*.c). Each records its checks.
void tsr_conf_api_identity_run(tsr_conf_session *s);
void tsr_conf_api_compat_run(tsr_conf_session *s);
void tsr_conf_api_allocator_run(tsr_conf_session *s);
void tsr_conf_api_copies_run(tsr_conf_session *s);
void tsr_conf_api_streams_run(tsr_conf_session *s);
void tsr_conf_api_errors_run(tsr_conf_session *s);
void tsr_conf_api_threads_run(tsr_conf_session *s);
// Shuts the plugin down and starts it again (also with a larger host
// table); leaves |s| started.
void tsr_conf_api_lifecycle_run(tsr_conf_session *s, const char *path, int32_t device);

#endif  // TESSERA_CONFORMANCE_SUITE_SUITE_H_
