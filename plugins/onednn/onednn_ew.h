// What the elementwise-like families (eltwise.c, binary.c, softmax.c,
// reduce.c, data.c) share: an op made of one primitive whose arguments are
// operands (or one constant the op holds), and the layout helpers that turn
// Tessera's strided descriptors into the plain descriptors oneDNN's fast
// implementations want. Defined in eltwise.c.
#ifndef TESSERA_PLUGINS_ONEDNN_ONEDNN_EW_H_
#define TESSERA_PLUGINS_ONEDNN_ONEDNN_EW_H_

#include <stdint.h>

#include "onednn_op.h"

// handle_operands entry for the op's own constant (ew_op.constant).
#define TSR_ONEDNN_EW_CONSTANT (-1)
// Operands one layout describes at most (CONCAT's inputs are described one by one).
#define TSR_ONEDNN_EW_MAX_OPERANDS 4

// One primitive and where each of its arguments comes from. Families with
// more state (softmax's NaN pass) embed it as their first member.
typedef struct tsr_onednn_ew_op {
  tsr_onednn_op base;
  tsr_onednn_prim prim;
  int32_t num_handles;
  int32_t handle_operands[TSR_ONEDNN_MAX_ARGS];  // ctx->ptrs index or TSR_ONEDNN_EW_CONSTANT
  float constant;                                // a one-element float32 argument
} tsr_onednn_ew_op;

// Allocates a zeroed op of |bytes| (>= sizeof(tsr_onednn_ew_op)) whose
// execute runs the primitive and whose destroy frees it.
tsr_status tsr_onednn_ew_op_create(size_t bytes, const char *what, tsr_onednn_ew_op **out_op);
// Creates the primitive of |pd| (op->prim) for the arguments |arg_ids|, taken
// at run time from |operands| (ctx->ptrs indices or TSR_ONEDNN_EW_CONSTANT),
// and fills engine name, workspace and flags. oneDNN's reference
// implementations ("ref:*", scalar loops slower than the own kernels) are
// refused with TSR_UNSUPPORTED unless |allow_ref|.
tsr_status tsr_onednn_ew_op_prim_init(tsr_onednn_ew_op *op, tsr_dnnl_pd *pd,
                                      const tsr_onednn_build_ctx *ctx, int32_t num_args,
                                      const int32_t *arg_ids, const int32_t *operands,
                                      int allow_ref, const char *what);
// Runs the primitive once with the operands of |ctx|. Thread-safe.
tsr_status tsr_onednn_ew_op_run(const tsr_onednn_ew_op *op, const tsr_onednn_exec_ctx *ctx);
// The default destroy: the primitive and the op. NULL is ignored.
void tsr_onednn_ew_op_destroy(tsr_onednn_op *base);

// TSR_UNSUPPORTED (with a message naming |what|) for an empty op or one
// below ctx->min_elements elements; TSR_OK otherwise.
tsr_status tsr_onednn_ew_size_check(const tsr_onednn_build_ctx *ctx, int64_t numel,
                                    const char *what);

// Tensors of one shape seen through the output's physical order: size-1
// dimensions dropped, dimensions sorted by the first operand's strides
// (outermost first) and neighbours merged wherever every operand is
// contiguous across them. A dense output with inputs of its layout becomes
// one dimension. Stride 0 (broadcast) survives as stride 0.
typedef struct tsr_onednn_ew_layout {
  int32_t rank;  // >= 1
  int32_t count;
  int64_t dims[TSR_MAX_RANK];
  int64_t strides[TSR_ONEDNN_EW_MAX_OPERANDS][TSR_MAX_RANK];
} tsr_onednn_ew_layout;

// |descs[0]| sets the order; every desc has its rank and sizes (as the core
// passes elementwise operands) and no empty dimension.
void tsr_onednn_ew_layout_get(int32_t count, const tsr_tensor_desc *const *descs,
                              tsr_onednn_ew_layout *out_layout);
// 1 when operand |i| has stride 0 on some dimension of |layout|.
int tsr_onednn_ew_layout_broadcasts(const tsr_onednn_ew_layout *layout, int32_t i);
// 1 when operands |i| and |j| have the same strides.
int tsr_onednn_ew_layout_same(const tsr_onednn_ew_layout *layout, int32_t i, int32_t j);
// The descriptor of operand |i|: its strides, and size 1 where it has stride
// 0 (oneDNN's way of saying broadcast), such dimensions getting the stride a
// plain row-major layout would give them.
tsr_status tsr_onednn_ew_layout_md(const tsr_onednn_ew_layout *layout, int32_t i,
                                   dnnl_data_type_t dtype, tsr_dnnl_md **out_md);
// A descriptor of |rank| dimensions of size 1 (a broadcast scalar).
tsr_status tsr_onednn_ew_scalar_md(int32_t rank, dnnl_data_type_t dtype, tsr_dnnl_md **out_md);

#endif  // TESSERA_PLUGINS_ONEDNN_ONEDNN_EW_H_
