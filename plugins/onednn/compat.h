// The one place where oneDNN's two API generations differ.
//
// oneDNN 2.x (Debian 12's 2.6) builds a primitive from an operation
// descriptor through dnnl_primitive_desc_iterator_*; oneDNN 3.x creates
// primitive descriptors directly (*_primitive_desc_create), walks
// implementations with dnnl_primitive_desc_next_impl, and makes memory
// descriptors opaque. Everything generation-specific lives behind this header,
// implemented once in compat_v2.c and once in compat_v3.c (CMake compiles the
// one matching the oneDNN it found). The rest of the plugin uses only this
// header and the parts of dnnl.h that both generations share: engines,
// streams, primitives, memory objects, attributes' handles, algorithm and
// propagation-kind enums, DNNL_ARG_* and dnnl_exec_arg_t.
//
// Conventions: every function returns a tsr_status and, on failure, has set
// the message through tsr_onednn_error_set. oneDNN's dnnl_unimplemented and
// dnnl_invalid_arguments map to TSR_UNSUPPORTED (the plugin then uses its own
// kernel), dnnl_out_of_memory to TSR_OUT_OF_MEMORY, anything else to
// TSR_INTERNAL. Nothing here runs on the hot path: these are plan-time calls.
// All functions are thread-safe (oneDNN's creation calls are).
#ifndef TESSERA_PLUGINS_ONEDNN_COMPAT_H_
#define TESSERA_PLUGINS_ONEDNN_COMPAT_H_

#include <oneapi/dnnl/dnnl.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"

// A memory descriptor, owned by whoever created it; free with
// tsr_dnnl_md_destroy. (v2: a heap copy of the struct; v3: the opaque handle.)
typedef struct tsr_dnnl_md tsr_dnnl_md;

// A primitive descriptor positioned on one implementation, owned by its
// creator; free with tsr_dnnl_pd_destroy. (v2 keeps the iterator inside.)
typedef struct tsr_dnnl_pd tsr_dnnl_pd;

// "oneDNN 2.6.3 (v2 API, OpenMP)", static storage.
const char *tsr_dnnl_version_string(void);
// 2 or 3: the API generation this file was compiled for.
int tsr_dnnl_api_generation(void);

// --- memory descriptors -----------------------------------------------------

// Plain descriptor: |rank| 1..TSR_MAX_RANK dims and strides in elements (a
// stride of 0 is passed through; oneDNN may then refuse primitives that use
// it). |rank| 0 is described as dims {1}.
tsr_status tsr_dnnl_md_create_strided(int32_t rank, const int64_t *dims, const int64_t *strides,
                                      dnnl_data_type_t dtype, tsr_dnnl_md **out_md);
// Descriptor with dnnl_format_tag_any: the primitive chooses the layout.
tsr_status tsr_dnnl_md_create_any(int32_t rank, const int64_t *dims, dnnl_data_type_t dtype,
                                  tsr_dnnl_md **out_md);
// Descriptor with a format tag (dnnl_abcd, dnnl_a, ...).
tsr_status tsr_dnnl_md_create_tag(int32_t rank, const int64_t *dims, dnnl_data_type_t dtype,
                                  dnnl_format_tag_t tag, tsr_dnnl_md **out_md);
// NULL is ignored.
void tsr_dnnl_md_destroy(tsr_dnnl_md *md);
// Bytes a buffer for |md| needs (padding included); 0 for a zero md.
size_t tsr_dnnl_md_bytes(const tsr_dnnl_md *md);
// 1 when |a| and |b| describe the same layout, else 0.
int tsr_dnnl_md_equal(const tsr_dnnl_md *a, const tsr_dnnl_md *b);

// --- attributes -------------------------------------------------------------

enum { TSR_DNNL_POST_ELTWISE = 0, TSR_DNNL_POST_SUM = 1, TSR_DNNL_POST_BINARY = 2 };
typedef struct tsr_dnnl_post_op {
  int32_t kind;           // TSR_DNNL_POST_*
  dnnl_alg_kind_t alg;    // ELTWISE: dnnl_eltwise_*; BINARY: dnnl_binary_*
  float alpha;            // ELTWISE
  float beta;             // ELTWISE
  float scale;            // SUM: dst = acc + scale * dst_before
  const tsr_dnnl_md *md;  // BINARY: the second operand (broadcast by oneDNN rules);
                          // executed as DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1
} tsr_dnnl_post_op;

// Creates an attribute with user scratchpad mode, the fp math mode for
// |math_mode| (STRICT: dnnl_fpmath_mode_strict; ALLOW_*: bf16 allowed) and
// the |num_post_ops| post-ops in order (none when 0). Owned by the caller;
// free with dnnl_primitive_attr_destroy.
tsr_status tsr_dnnl_attr_create(tsr_math_mode_t math_mode, const tsr_dnnl_post_op *post_ops,
                                int32_t num_post_ops, dnnl_primitive_attr_t *out_attr);

// --- primitive descriptors ----------------------------------------------------
// Each creator returns a pd positioned on oneDNN's first implementation, or
// TSR_UNSUPPORTED when oneDNN has none for the request. |attr| may be NULL
// (then a default attribute with user scratchpad mode is used). |hint| is the
// forward pd a backward pd needs.

tsr_status tsr_dnnl_pd_matmul(dnnl_engine_t engine, const tsr_dnnl_md *src,
                              const tsr_dnnl_md *weights, const tsr_dnnl_md *bias /* or NULL */,
                              const tsr_dnnl_md *dst, const_dnnl_primitive_attr_t attr,
                              tsr_dnnl_pd **out_pd);

// Spatial parameters in oneDNN's convention: dilates 0 means dense.
typedef struct tsr_dnnl_window {
  int64_t strides[2];
  int64_t kernel[2];  // pooling only
  int64_t dilates[2];
  int64_t pad_l[2];
  int64_t pad_r[2];
} tsr_dnnl_window;

tsr_status tsr_dnnl_pd_conv_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, const tsr_dnnl_md *src,
                                const tsr_dnnl_md *weights, const tsr_dnnl_md *bias /* or NULL */,
                                const tsr_dnnl_md *dst, const tsr_dnnl_window *window,
                                const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_conv_bwd_data(dnnl_engine_t engine, const tsr_dnnl_md *diff_src,
                                     const tsr_dnnl_md *weights, const tsr_dnnl_md *diff_dst,
                                     const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                     const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_conv_bwd_weights(dnnl_engine_t engine, const tsr_dnnl_md *src,
                                        const tsr_dnnl_md *diff_weights,
                                        const tsr_dnnl_md *diff_bias /* or NULL */,
                                        const tsr_dnnl_md *diff_dst, const tsr_dnnl_window *window,
                                        const tsr_dnnl_pd *hint, const_dnnl_primitive_attr_t attr,
                                        tsr_dnnl_pd **out_pd);

// alg: dnnl_pooling_max, dnnl_pooling_avg_include_padding, dnnl_pooling_avg_exclude_padding.
tsr_status tsr_dnnl_pd_pool_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, dnnl_alg_kind_t alg,
                                const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                const tsr_dnnl_window *window, const_dnnl_primitive_attr_t attr,
                                tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_pool_bwd(dnnl_engine_t engine, dnnl_alg_kind_t alg,
                                const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);

// v2's eltwise has one data descriptor: there a |dst| different from |src|
// gives TSR_UNSUPPORTED. |data| of the backward is src, or dst for the
// *_use_dst_for_bwd algorithms.
tsr_status tsr_dnnl_pd_eltwise_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, dnnl_alg_kind_t alg,
                                   float alpha, float beta, const tsr_dnnl_md *src,
                                   const tsr_dnnl_md *dst, const_dnnl_primitive_attr_t attr,
                                   tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_eltwise_bwd(dnnl_engine_t engine, dnnl_alg_kind_t alg, float alpha,
                                   float beta, const tsr_dnnl_md *diff_src,
                                   const tsr_dnnl_md *diff_dst, const tsr_dnnl_md *data,
                                   const tsr_dnnl_pd *hint, const_dnnl_primitive_attr_t attr,
                                   tsr_dnnl_pd **out_pd);

// |log| 0: softmax, 1: log-softmax (v2: softmax_v2 with dnnl_softmax_log;
// v3: dnnl_softmax_log).
tsr_status tsr_dnnl_pd_softmax_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, int log, int axis,
                                   const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                   const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_softmax_bwd(dnnl_engine_t engine, int log, int axis,
                                   const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                   const tsr_dnnl_md *dst, const tsr_dnnl_pd *hint,
                                   const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);

// Normalisation flags are given generation-neutrally and mapped inside.
enum {
  TSR_DNNL_NORM_USE_GLOBAL_STATS = 1u << 0,
  TSR_DNNL_NORM_USE_SCALE = 1u << 1,
  TSR_DNNL_NORM_USE_SHIFT = 1u << 2,
};
// |stat| describes mean and variance ([outer dims] of src); NULL lets oneDNN choose.
tsr_status tsr_dnnl_pd_layer_norm_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                      const tsr_dnnl_md *stat, float eps, uint32_t flags,
                                      const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
// prop: dnnl_backward (with scale/shift gradients) or dnnl_backward_data.
tsr_status tsr_dnnl_pd_layer_norm_bwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *stat, float eps,
                                      uint32_t flags, const tsr_dnnl_pd *hint,
                                      const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
// v2's batch normalisation has one data descriptor: |dst| different from
// |src| gives TSR_UNSUPPORTED there.
tsr_status tsr_dnnl_pd_batch_norm_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *dst, float eps,
                                      uint32_t flags, const_dnnl_primitive_attr_t attr,
                                      tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_batch_norm_bwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                      const tsr_dnnl_md *src, float eps, uint32_t flags,
                                      const tsr_dnnl_pd *hint, const_dnnl_primitive_attr_t attr,
                                      tsr_dnnl_pd **out_pd);

tsr_status tsr_dnnl_pd_binary(dnnl_engine_t engine, dnnl_alg_kind_t alg, const tsr_dnnl_md *src0,
                              const tsr_dnnl_md *src1, const tsr_dnnl_md *dst,
                              const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_reduction(dnnl_engine_t engine, dnnl_alg_kind_t alg, const tsr_dnnl_md *src,
                                 const tsr_dnnl_md *dst, float p, float eps,
                                 const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_reorder(dnnl_engine_t engine, const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                               const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
// |dst| may be a format_any descriptor.
tsr_status tsr_dnnl_pd_concat(dnnl_engine_t engine, const tsr_dnnl_md *dst, int32_t num_srcs,
                              int32_t axis, const tsr_dnnl_md *const *srcs,
                              const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);
tsr_status tsr_dnnl_pd_sum(dnnl_engine_t engine, const tsr_dnnl_md *dst, int32_t num_srcs,
                           const float *scales, const tsr_dnnl_md *const *srcs,
                           const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd);

// --- primitive descriptor use -------------------------------------------------

// Moves |pd| to oneDNN's next implementation: TSR_OK, or TSR_NOT_FOUND
// (no error message set) when there is none; |pd| is then unchanged.
tsr_status tsr_dnnl_pd_next_impl(tsr_dnnl_pd *pd);
// The implementation's name ("brgemm:avx512_core"); owned by |pd|.
const char *tsr_dnnl_pd_impl_name(const tsr_dnnl_pd *pd);
// The descriptor of execution argument |arg| (DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
// DNNL_ARG_SCRATCHPAD, DNNL_ARG_WORKSPACE, ...) as a new owned md, or
// TSR_NOT_FOUND (no message) when the primitive does not take it.
tsr_status tsr_dnnl_pd_arg_md(const tsr_dnnl_pd *pd, int arg, tsr_dnnl_md **out_md);
// The underlying handle, owned by |pd| (for oneDNN calls both generations share).
const_dnnl_primitive_desc_t tsr_dnnl_pd_handle(const tsr_dnnl_pd *pd);
// Creates the primitive of |pd|'s current implementation; owned by the caller
// (dnnl_primitive_destroy).
tsr_status tsr_dnnl_primitive_create(const tsr_dnnl_pd *pd, dnnl_primitive_t *out_primitive);
// NULL is ignored.
void tsr_dnnl_pd_destroy(tsr_dnnl_pd *pd);

// --- memory objects -----------------------------------------------------------

// A memory object for |md| on |engine| over |handle| (DNNL_MEMORY_NONE for
// none yet; set per execution with dnnl_memory_set_data_handle). Owned by
// the caller (dnnl_memory_destroy).
tsr_status tsr_dnnl_memory_create(const tsr_dnnl_md *md, dnnl_engine_t engine, void *handle,
                                  dnnl_memory_t *out_memory);

// --- errors (defined in the plugin's common code, used by both generations) ----

// Attaches a formatted message through the host and returns |code|.
tsr_status tsr_onednn_error_set(tsr_status code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
// TSR_OK for dnnl_success, else the mapped status with "<what>: oneDNN <status name>".
tsr_status tsr_onednn_check(dnnl_status_t status, const char *what);

#endif  // TESSERA_PLUGINS_ONEDNN_COMPAT_H_
