// Whether oneDNN's vector code for an elementwise function meets the
// catalogue on the CPU at hand: special values, and accuracy within the
// conformance suite's tolerance (docs/conformance.md 5). Every eltwise
// primitive (eltwise.c) and every fused activation post-op (matmul.c,
// conv.c) asks before it is used; a function that fails stays on the own
// kernel. Defined in eltwise_check.c.
#ifndef TESSERA_PLUGINS_ONEDNN_ELTWISE_CHECK_H_
#define TESSERA_PLUGINS_ONEDNN_ELTWISE_CHECK_H_

#include <stdint.h>

#include "onednn_op.h"

// What one build asks of oneDNN.
typedef struct tsr_onednn_eltwise_spec {
  int32_t op;           // TSR_OP_UNARY, TSR_OP_UNARY_BACKWARD or TSR_OP_CLAMP
  tsr_unary_fn_t fn;    // UNARY*: the function
  float alpha;          // UNARY*: the catalogue's alpha in float32 (LEAKY_RELU, ELU)
  float lo, hi;         // CLAMP: the bounds in float32, +-inf when absent
  dnnl_alg_kind_t alg;  // oneDNN's algorithm and its parameters
  float dnnl_alpha, dnnl_beta;
} tsr_onednn_eltwise_spec;

// Sets s->alg, dnnl_alpha and dnnl_beta to the eltwise algorithm with the
// formula of s->fn (UNARY*); returns 0 when oneDNN has none.
int tsr_onednn_eltwise_alg(tsr_onednn_eltwise_spec *s);
// The function's name in messages ("gelu", "clamp"); static storage.
const char *tsr_onednn_eltwise_fn_name(const tsr_onednn_eltwise_spec *s);

// TSR_OK when oneDNN's eltwise primitive for |s| (s->alg set), in its
// implementation |impl| (NULL: whichever oneDNN picks for a plain row),
// agrees with the catalogue on the check's row of inputs; TSR_UNSUPPORTED
// naming the first disagreement otherwise, or when the check ran on another
// implementation than |impl|. The verdict is computed once per (function,
// parameters, math mode) and kept for the process, with the implementation
// the row ran on; only the first call pays for the row (about 120,000
// values; its time: docs/performance-log.md, "Measurements behind the code's
// decisions"). CLAMP's verdicts, one per pair of bounds, are not kept.
// Thread-safe.
tsr_status tsr_onednn_eltwise_check(const tsr_onednn_eltwise_spec *s,
                                    const tsr_onednn_build_ctx *ctx, const char *impl);

// The check of UNARY LOG's forward, for families whose primitives compute a
// log with the same code (log-softmax). Thread-safe.
tsr_status tsr_onednn_eltwise_log_check(const tsr_onednn_build_ctx *ctx);

// The check of |activation|'s forward as a fused post-op of MATMUL or
// CONV2D: the post-op runs the same vector code as the eltwise primitive on
// the same ISA, so the eltwise verdict decides. TSR_OK for NONE and for
// RELU (which the callers apply in their own pass, conv_relu.h);
// TSR_UNSUPPORTED, prefixed with |what|, when the post-op fails, so the own
// kernel runs the whole op. Thread-safe.
tsr_status tsr_onednn_eltwise_activation_check(const tsr_onednn_build_ctx *ctx,
                                               tsr_activation_t activation, const char *what);

#endif  // TESSERA_PLUGINS_ONEDNN_ELTWISE_CHECK_H_
