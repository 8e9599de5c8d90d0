// How an op runs on oneDNN primitives: the interface between the plugin's
// plan layer (plan.c) and the op families (matmul.c, conv.c, ...).
//
// plan.c first builds the plugin's own kernel plan for a signature (ref's
// portable kernels compiled into this plugin), which validates the signature
// against the catalogue. Only then does it ask the family's builder for a
// oneDNN version of the op. A builder answers TSR_OK with an op, or
// TSR_UNSUPPORTED (message optional) when oneDNN cannot do the signature, would
// not match the catalogue's semantics (NaN rules, rounding, index formats), or
// is not worth its per-call cost for a tensor this small; plan.c then keeps
// the own kernel. A builder never sees an invalid signature.
//
// An op is built once per plan and then only read: execute may run on
// several threads at once. It allocates nothing on the hot path: memory
// objects come from the prim's slots, scratch from the ABI workspace.
#ifndef TESSERA_PLUGINS_ONEDNN_ONEDNN_OP_H_
#define TESSERA_PLUGINS_ONEDNN_ONEDNN_OP_H_

#include <stdatomic.h>
#include <stdint.h>

#include "compat.h"
#include "tessera/abi.h"
#include "tessera/ops.h"

// Engine-selection policy of a plan.
enum { TSR_ONEDNN_SELECT_FIRST = 0, TSR_ONEDNN_SELECT_FASTEST = 1 };

typedef struct tsr_onednn_build_ctx {
  dnnl_engine_t engine;
  int32_t select;       // TSR_ONEDNN_SELECT_*
  uint32_t plan_flags;  // the signature's TSR_PLAN_*
  tsr_math_mode_t math_mode;
  // Elementwise-like ops with fewer elements stay on the own kernels: below
  // this a primitive's fixed cost (mallocs in oneDNN among it) exceeds the
  // work (docs/performance-log.md, "Measurements behind the code's decisions").
  // TSR_ONEDNN_MIN_ELEMENTS overrides it; tests set 0 to force every
  // primitive path.
  int64_t min_elements;
  // 1: decline only where oneDNN cannot run the op or would not match the
  // catalogue, never because a fixed route (the own kernels measured faster
  // on one CPU) says so: route.c builds the oneDNN candidate this way and
  // times it against the own kernel. 0 (the cold default): the fixed routes
  // apply.
  int32_t no_fixed_routes;
} tsr_onednn_build_ctx;

typedef struct tsr_onednn_exec_ctx {
  char *const *ptrs;          // element 0 of each operand: inputs, then outputs
  const tsr_exec_args *args;  // buffers and storage versions (weight caches)
  char *workspace;            // the op's workspace_bytes, 64-aligned; NULL when 0
  dnnl_stream_t stream;       // the calling thread's oneDNN stream
} tsr_onednn_exec_ctx;

typedef struct tsr_onednn_op tsr_onednn_op;
struct tsr_onednn_op {
  char engine[160];          // "onednn:brgemm:avx512_core" etc.; shown by TSR_TRACE, tsr-info
  uint64_t workspace_bytes;  // scratchpads and temporaries, 64-byte slack included
  uint32_t info_flags;       // TSR_PLAN_INFO_*
  tsr_status (*execute)(const tsr_onednn_op *op, const tsr_onednn_exec_ctx *ctx);
  void (*destroy)(tsr_onednn_op *op);  // frees everything the op owns, itself included
};

// --- one primitive, ready to run ---------------------------------------------

#define TSR_ONEDNN_MAX_ARGS 12
#define TSR_ONEDNN_SLOTS 4

// A primitive with its execution arguments. Memory objects for every argument
// are made at build time in TSR_ONEDNN_SLOTS sets; an execution takes a free
// set with one atomic exchange and only sets data handles. The scratchpad, if
// any, is carved from the workspace by the caller.
typedef struct tsr_onednn_prim {
  dnnl_primitive_t primitive;
  char impl[96];  // implementation name
  int32_t num_args;
  int32_t arg_ids[TSR_ONEDNN_MAX_ARGS];  // DNNL_ARG_*; DNNL_ARG_SCRATCHPAD appended when needed
  tsr_dnnl_md *arg_mds[TSR_ONEDNN_MAX_ARGS];
  uint64_t scratchpad_bytes;
  dnnl_memory_t slots[TSR_ONEDNN_SLOTS][TSR_ONEDNN_MAX_ARGS];
  _Atomic uint32_t slot_busy[TSR_ONEDNN_SLOTS];
} tsr_onednn_prim;

// Selects the implementation of |pd| by ctx->select (FIRST: as positioned;
// FASTEST: times every implementation on scratch data and keeps the fastest),
// creates the primitive and the memory objects for |arg_ids| (the descriptor
// of each taken from the pd; the scratchpad is added by itself). |prim| is
// zeroed first and owned by the caller (tsr_onednn_prim_fini). Under FASTEST
// |pd| is left on whatever implementation was timed last: read the chosen
// layouts from prim->arg_mds[i] (same order as |arg_ids|), never from |pd|
// after this call. Not thread-safe on |prim|.
tsr_status tsr_onednn_prim_init(tsr_onednn_prim *prim, tsr_dnnl_pd *pd,
                                const tsr_onednn_build_ctx *ctx, int32_t num_args,
                                const int32_t *arg_ids);
// Runs |prim| on |stream| with handles[i] for arg_ids[i] (i < the num_args
// given to init) and |scratchpad| (scratchpad_bytes, may be NULL when 0).
// Synchronous: returns when the primitive has finished. No allocation unless
// more than TSR_ONEDNN_SLOTS threads run it at once. Thread-safe.
tsr_status tsr_onednn_prim_execute(const tsr_onednn_prim *prim, dnnl_stream_t stream,
                                   void *const *handles, void *scratchpad);
// Frees what init made; a zeroed prim is fine. Not thread-safe on |prim|.
void tsr_onednn_prim_fini(tsr_onednn_prim *prim);

// --- helpers for builders ----------------------------------------------------

// oneDNN's data type for a Tessera dtype, or dnnl_data_type_undef (f64, i64
// and bool have no general oneDNN support: builders refuse them).
dnnl_data_type_t tsr_onednn_dtype(tsr_dtype_t dtype);
// Plain descriptor of a tensor descriptor (rank 0 as {1}); TSR_UNSUPPORTED
// for dtypes oneDNN lacks.
tsr_status tsr_onednn_md_from_desc(const tsr_tensor_desc *desc, tsr_dnnl_md **out_md);
// Elements of |desc| (1 for rank 0).
int64_t tsr_onednn_numel(const tsr_tensor_desc *desc);
// Rounds |bytes| up to a multiple of 64.
static inline uint64_t tsr_onednn_round64(uint64_t bytes) {
  return (bytes + 63u) & ~(uint64_t)63u;
}

// The family builders. Each returns TSR_OK with *out_op (owned by the
// caller: op->destroy) or TSR_UNSUPPORTED; see the top of this file.
typedef tsr_status (*tsr_onednn_build_fn)(const tsr_op_signature *signature,
                                          const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op);

tsr_status tsr_onednn_matmul_build(const tsr_op_signature *signature,
                                   const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op);
// MATMUL through dnnl_sgemm (sgemm.c): large plain float32 products only, a
// candidate of the measured choice (route.c), never a cold default.
tsr_status tsr_onednn_sgemm_build(const tsr_op_signature *signature,
                                  const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op);
// CONV2D, CONV2D_BACKWARD_DATA, CONV2D_BACKWARD_FILTER.
tsr_status tsr_onednn_conv_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op);
// POOL2D, POOL2D_BACKWARD.
tsr_status tsr_onednn_pool_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op);
// UNARY, UNARY_BACKWARD, CLAMP.
tsr_status tsr_onednn_eltwise_build(const tsr_op_signature *signature,
                                    const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op);
// SOFTMAX, SOFTMAX_BACKWARD.
tsr_status tsr_onednn_softmax_build(const tsr_op_signature *signature,
                                    const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op);
// LAYER_NORM(_BACKWARD), BATCH_NORM(_BACKWARD).
tsr_status tsr_onednn_norm_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op);
// BINARY.
tsr_status tsr_onednn_binary_build(const tsr_op_signature *signature,
                                   const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op);
// REDUCE.
tsr_status tsr_onednn_reduce_build(const tsr_op_signature *signature,
                                   const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op);
// COPY, CAST (reorder), CONCAT.
tsr_status tsr_onednn_data_build(const tsr_op_signature *signature, const tsr_onednn_build_ctx *ctx,
                                 tsr_onednn_op **out_op);

#endif  // TESSERA_PLUGINS_ONEDNN_ONEDNN_OP_H_
