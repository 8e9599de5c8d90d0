// compat.h against oneDNN 2.x (built and tested with Debian 12's 2.6.3).
//
// 2.x describes an operation with a plain op-descriptor struct and turns it
// into primitive descriptors through an iterator; memory descriptors are
// plain structs. A tsr_dnnl_pd therefore keeps its iterator (so next_impl
// can advance it) next to the primitive descriptor fetched from it.
//
// Several 2.x operations have a single data descriptor for both source and
// destination (eltwise, batch and layer normalisation, and their backward
// diff_src/diff_dst). Where the caller gives two descriptors that differ, 2.x
// cannot express the request and the creator answers TSR_UNSUPPORTED, so the
// plugin falls back to its own kernel exactly as it would for a missing
// oneDNN implementation.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "compat_internal.h"

struct tsr_dnnl_md {
  dnnl_memory_desc_t md;
};

// Every op descriptor a creator may hand to the iterator.
typedef union op_desc {
  dnnl_matmul_desc_t matmul;
  dnnl_convolution_desc_t conv;
  dnnl_pooling_v2_desc_t pool;
  dnnl_eltwise_desc_t eltwise;
  dnnl_softmax_v2_desc_t softmax;
  dnnl_layer_normalization_desc_t layer_norm;
  dnnl_batch_normalization_desc_t batch_norm;
  dnnl_binary_desc_t binary;
  dnnl_reduction_desc_t reduction;
} op_desc;

struct tsr_dnnl_pd {
  // NULL for reorder, concat and sum: 2.x creates those directly, with a
  // single implementation visible to the caller.
  dnnl_primitive_desc_iterator_t iterator;
  // Fetched from the iterator (a separate object the iterator does not own),
  // so it stays valid when the iterator runs off its end.
  dnnl_primitive_desc_t pd;
  // 2.x's iterator keeps raw pointers to the op descriptor and to the hint
  // it was created with and dereferences them on every step, so both must
  // live as long as the iterator: the op descriptor is copied here and the
  // hint cloned, since the caller may destroy or advance its forward pd.
  op_desc op;
  dnnl_primitive_desc_t hint;
  // Once the iterator has reported its end it must not be advanced again:
  // 2.x does not promise that stepping past the end is harmless.
  int at_end;
};

// --- version ----------------------------------------------------------------

static pthread_once_t g_version_once = PTHREAD_ONCE_INIT;
static char g_version[96];

static const char *runtime_name(unsigned runtime) {
  switch (runtime) {
    case DNNL_RUNTIME_OMP:
      return "OpenMP";
    case DNNL_RUNTIME_TBB:
      return "TBB";
    case DNNL_RUNTIME_SEQ:
      return "sequential";
    case DNNL_RUNTIME_THREADPOOL:
      return "threadpool";
    case DNNL_RUNTIME_NONE:
      return "no CPU runtime";
    default:
      return "unknown runtime";
  }
}

static void version_init(void) {
  // The library loaded at run time, not the headers compiled against, is
  // what executes; a distribution upgrade changes it without a rebuild.
  const dnnl_version_t *v = dnnl_version();
  snprintf(g_version, sizeof g_version, "oneDNN %d.%d.%d (v2 API, %s)", v->major, v->minor,
           v->patch, runtime_name(v->cpu_runtime));
}

const char *tsr_dnnl_version_string(void) {
  pthread_once(&g_version_once, version_init);
  return g_version;
}

int tsr_dnnl_api_generation(void) {
  return 2;
}

// --- memory descriptors -----------------------------------------------------

static tsr_status md_wrap(const dnnl_memory_desc_t *md, tsr_dnnl_md **out_md) {
  tsr_dnnl_md *m = malloc(sizeof *m);
  if (m == NULL) {
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "oneDNN memory descriptor: out of memory");
  }
  m->md = *md;
  *out_md = m;
  return TSR_OK;
}

tsr_status tsr_dnnl_md_create_strided(int32_t rank, const int64_t *dims, const int64_t *strides,
                                      dnnl_data_type_t dtype, tsr_dnnl_md **out_md) {
  static const char what[] = "tsr_dnnl_md_create_strided";
  if (out_md == NULL)
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: out_md is NULL", what);
  *out_md = NULL;
  int ndims = 0;
  dnnl_dims_t d, s;
  tsr_status st = tsr_dnnl_md_dims(what, rank, dims, &ndims, d);
  if (st != TSR_OK)
    return st;
  if (rank > 0 && strides == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: strides is NULL", what);
  }
  memset(s, 0, sizeof s);
  if (rank == 0) {
    s[0] = 1;
  } else {
    for (int32_t i = 0; i < rank; ++i) s[i] = strides[i];
  }
  dnnl_memory_desc_t md;
  st = tsr_onednn_check(dnnl_memory_desc_init_by_strides(&md, ndims, d, dtype, s),
                        "dnnl_memory_desc_init_by_strides");
  if (st != TSR_OK)
    return st;
  return md_wrap(&md, out_md);
}

tsr_status tsr_dnnl_md_create_tag(int32_t rank, const int64_t *dims, dnnl_data_type_t dtype,
                                  dnnl_format_tag_t tag, tsr_dnnl_md **out_md) {
  static const char what[] = "tsr_dnnl_md_create_tag";
  if (out_md == NULL)
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: out_md is NULL", what);
  *out_md = NULL;
  int ndims = 0;
  dnnl_dims_t d;
  tsr_status st = tsr_dnnl_md_dims(what, rank, dims, &ndims, d);
  if (st != TSR_OK)
    return st;
  dnnl_memory_desc_t md;
  st = tsr_onednn_check(dnnl_memory_desc_init_by_tag(&md, ndims, d, dtype, tag),
                        "dnnl_memory_desc_init_by_tag");
  if (st != TSR_OK)
    return st;
  return md_wrap(&md, out_md);
}

tsr_status tsr_dnnl_md_create_any(int32_t rank, const int64_t *dims, dnnl_data_type_t dtype,
                                  tsr_dnnl_md **out_md) {
  return tsr_dnnl_md_create_tag(rank, dims, dtype, dnnl_format_tag_any, out_md);
}

void tsr_dnnl_md_destroy(tsr_dnnl_md *md) {
  free(md);
}

size_t tsr_dnnl_md_bytes(const tsr_dnnl_md *md) {
  return md == NULL ? 0 : dnnl_memory_desc_get_size(&md->md);
}

int tsr_dnnl_md_equal(const tsr_dnnl_md *a, const tsr_dnnl_md *b) {
  if (a == NULL || b == NULL)
    return a == b;
  return dnnl_memory_desc_equal(&a->md, &b->md) ? 1 : 0;
}

static const dnnl_memory_desc_t *raw(const tsr_dnnl_md *md) {
  return md == NULL ? NULL : &md->md;
}

// --- attributes -------------------------------------------------------------

tsr_status tsr_dnnl_post_op_append(dnnl_post_ops_t po, const tsr_dnnl_post_op *op, int32_t index) {
  switch (op->kind) {
    case TSR_DNNL_POST_ELTWISE:
      // 2.x scales the eltwise result; 3.x dropped that factor, so 1 keeps
      // the two generations computing the same thing.
      return tsr_onednn_check(dnnl_post_ops_append_eltwise(po, 1.0f, op->alg, op->alpha, op->beta),
                              "dnnl_post_ops_append_eltwise");
    case TSR_DNNL_POST_SUM:
      return tsr_onednn_check(dnnl_post_ops_append_sum(po, op->scale), "dnnl_post_ops_append_sum");
    case TSR_DNNL_POST_BINARY:
      if (op->md == NULL) {
        return tsr_onednn_error_set(
            TSR_INVALID_ARGUMENT, "tsr_dnnl_attr_create: binary post-op %d has no md", (int)index);
      }
      return tsr_onednn_check(dnnl_post_ops_append_binary(po, op->alg, &op->md->md),
                              "dnnl_post_ops_append_binary");
    default:
      return tsr_onednn_error_set(TSR_INVALID_ARGUMENT,
                                  "tsr_dnnl_attr_create: post-op %d has unknown kind %d",
                                  (int)index, (int)op->kind);
  }
}

// The attribute a creator passes to oneDNN: the caller's, or a default one
// in user scratchpad mode (*owned, destroyed by the creator afterwards).
static tsr_status attr_resolve(const_dnnl_primitive_attr_t attr, dnnl_primitive_attr_t *owned,
                               const_dnnl_primitive_attr_t *use) {
  *owned = NULL;
  *use = attr;
  if (attr != NULL)
    return TSR_OK;
  tsr_status st = tsr_onednn_check(dnnl_primitive_attr_create(owned), "dnnl_primitive_attr_create");
  if (st != TSR_OK)
    return st;
  st = tsr_onednn_check(dnnl_primitive_attr_set_scratchpad_mode(*owned, dnnl_scratchpad_mode_user),
                        "dnnl_primitive_attr_set_scratchpad_mode");
  if (st != TSR_OK) {
    dnnl_primitive_attr_destroy(*owned);
    *owned = NULL;
    return st;
  }
  *use = *owned;
  return TSR_OK;
}

// --- primitive descriptors ----------------------------------------------------

static tsr_status pd_alloc(tsr_dnnl_pd **out_pd) {
  tsr_dnnl_pd *p = calloc(1, sizeof *p);
  if (p == NULL) {
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "oneDNN primitive descriptor: out of memory");
  }
  *out_pd = p;
  return TSR_OK;
}

// Turns an initialised op descriptor (|size| bytes) into a pd on the first
// implementation.
static tsr_status pd_from_op_desc(dnnl_engine_t engine, const void *desc, size_t size,
                                  const_dnnl_primitive_attr_t attr, const tsr_dnnl_pd *hint,
                                  const char *what, tsr_dnnl_pd **out_pd) {
  tsr_dnnl_pd *p = NULL;
  tsr_status st = pd_alloc(&p);
  if (st != TSR_OK)
    return st;
  memcpy(&p->op, desc, size);
  if (hint != NULL) {
    st = tsr_onednn_check(dnnl_primitive_desc_clone(&p->hint, hint->pd),
                          "dnnl_primitive_desc_clone");
    if (st != TSR_OK) {
      tsr_dnnl_pd_destroy(p);
      return st;
    }
  }
  dnnl_primitive_attr_t owned = NULL;
  const_dnnl_primitive_attr_t use = NULL;
  st = attr_resolve(attr, &owned, &use);
  if (st != TSR_OK) {
    tsr_dnnl_pd_destroy(p);
    return st;
  }
  // The iterator copies the attribute, so a default one can go right away.
  st = tsr_onednn_check(
      dnnl_primitive_desc_iterator_create(&p->iterator, &p->op, use, engine, p->hint), what);
  if (owned != NULL)
    dnnl_primitive_attr_destroy(owned);
  if (st != TSR_OK) {
    p->iterator = NULL;
    tsr_dnnl_pd_destroy(p);
    return st;
  }
  p->pd = dnnl_primitive_desc_iterator_fetch(p->iterator);
  if (p->pd == NULL) {
    tsr_dnnl_pd_destroy(p);
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: dnnl_primitive_desc_iterator_fetch failed",
                                what);
  }
  *out_pd = p;
  return TSR_OK;
}

// Wraps a pd that 2.x created directly (no iterator).
static tsr_status pd_from_handle(dnnl_primitive_desc_t pd, tsr_dnnl_pd **out_pd) {
  tsr_dnnl_pd *p = NULL;
  tsr_status st = pd_alloc(&p);
  if (st != TSR_OK) {
    dnnl_primitive_desc_destroy(pd);
    return st;
  }
  p->pd = pd;
  p->at_end = 1;
  *out_pd = p;
  return TSR_OK;
}

static tsr_status need(const void *ptr, const char *what, const char *name) {
  if (ptr != NULL)
    return TSR_OK;
  return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what, name);
}

#define TSR_NEED(ptr)                                  \
  do {                                                 \
    tsr_status need_st_ = need((ptr), __func__, #ptr); \
    if (need_st_ != TSR_OK)                            \
      return need_st_;                                 \
  } while (0)

// Rejects a request that needs two data descriptors where 2.x has one.
static tsr_status same_md(const tsr_dnnl_md *a, const tsr_dnnl_md *b, const char *what,
                          const char *names) {
  if (dnnl_memory_desc_equal(&a->md, &b->md))
    return TSR_OK;
  return tsr_onednn_error_set(TSR_UNSUPPORTED,
                              "%s: oneDNN 2.x needs %s to have the same descriptor", what, names);
}

tsr_status tsr_dnnl_pd_matmul(dnnl_engine_t engine, const tsr_dnnl_md *src,
                              const tsr_dnnl_md *weights, const tsr_dnnl_md *bias,
                              const tsr_dnnl_md *dst, const_dnnl_primitive_attr_t attr,
                              tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_matmul_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(weights);
  TSR_NEED(dst);
  dnnl_matmul_desc_t d;
  tsr_status st = tsr_onednn_check(
      dnnl_matmul_desc_init(&d, &src->md, &weights->md, raw(bias), &dst->md), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL, "matmul primitive descriptor", out_pd);
}

// Direct, not auto: auto may pick Winograd, whose rounding differs from the
// reference convolution the plugin is checked against.
tsr_status tsr_dnnl_pd_conv_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, const tsr_dnnl_md *src,
                                const tsr_dnnl_md *weights, const tsr_dnnl_md *bias,
                                const tsr_dnnl_md *dst, const tsr_dnnl_window *window,
                                const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_dilated_convolution_forward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(weights);
  TSR_NEED(dst);
  TSR_NEED(window);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, src->md.ndims, __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  dnnl_convolution_desc_t d;
  st = tsr_onednn_check(
      dnnl_dilated_convolution_forward_desc_init(&d, prop, dnnl_convolution_direct, &src->md,
                                                 &weights->md, raw(bias), &dst->md, s, dl, pl, pr),
      what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL,
                         "convolution forward primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_conv_bwd_data(dnnl_engine_t engine, const tsr_dnnl_md *diff_src,
                                     const tsr_dnnl_md *weights, const tsr_dnnl_md *diff_dst,
                                     const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                     const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_dilated_convolution_backward_data_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(weights);
  TSR_NEED(diff_dst);
  TSR_NEED(window);
  TSR_NEED(hint);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, diff_src->md.ndims, __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  dnnl_convolution_desc_t d;
  st = tsr_onednn_check(
      dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &diff_src->md,
                                                       &weights->md, &diff_dst->md, s, dl, pl, pr),
      what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, hint,
                         "convolution backward data primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_conv_bwd_weights(dnnl_engine_t engine, const tsr_dnnl_md *src,
                                        const tsr_dnnl_md *diff_weights,
                                        const tsr_dnnl_md *diff_bias, const tsr_dnnl_md *diff_dst,
                                        const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                        const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_dilated_convolution_backward_weights_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(diff_weights);
  TSR_NEED(diff_dst);
  TSR_NEED(window);
  TSR_NEED(hint);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, src->md.ndims, __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  dnnl_convolution_desc_t d;
  st = tsr_onednn_check(dnnl_dilated_convolution_backward_weights_desc_init(
                            &d, dnnl_convolution_direct, &src->md, &diff_weights->md,
                            raw(diff_bias), &diff_dst->md, s, dl, pl, pr),
                        what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, hint,
                         "convolution backward weights primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_pool_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, dnnl_alg_kind_t alg,
                                const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                const tsr_dnnl_window *window, const_dnnl_primitive_attr_t attr,
                                tsr_dnnl_pd **out_pd) {
  // pooling_v2: the first 2.x pooling with dilation.
  static const char what[] = "dnnl_pooling_v2_forward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  TSR_NEED(window);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, src->md.ndims, __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  dnnl_pooling_v2_desc_t d;
  st = tsr_onednn_check(
      dnnl_pooling_v2_forward_desc_init(&d, prop, alg, &src->md, &dst->md, s, k, dl, pl, pr), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL, "pooling forward primitive descriptor",
                         out_pd);
}

tsr_status tsr_dnnl_pd_pool_bwd(dnnl_engine_t engine, dnnl_alg_kind_t alg,
                                const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_pooling_v2_backward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(window);
  TSR_NEED(hint);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, diff_src->md.ndims, __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  dnnl_pooling_v2_desc_t d;
  st = tsr_onednn_check(
      dnnl_pooling_v2_backward_desc_init(&d, alg, &diff_src->md, &diff_dst->md, s, k, dl, pl, pr),
      what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, hint, "pooling backward primitive descriptor",
                         out_pd);
}

tsr_status tsr_dnnl_pd_eltwise_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, dnnl_alg_kind_t alg,
                                   float alpha, float beta, const tsr_dnnl_md *src,
                                   const tsr_dnnl_md *dst, const_dnnl_primitive_attr_t attr,
                                   tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_eltwise_forward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  tsr_status st = same_md(src, dst, __func__, "src and dst");
  if (st != TSR_OK)
    return st;
  dnnl_eltwise_desc_t d;
  st = tsr_onednn_check(dnnl_eltwise_forward_desc_init(&d, prop, alg, &src->md, alpha, beta), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL, "eltwise forward primitive descriptor",
                         out_pd);
}

tsr_status tsr_dnnl_pd_eltwise_bwd(dnnl_engine_t engine, dnnl_alg_kind_t alg, float alpha,
                                   float beta, const tsr_dnnl_md *diff_src,
                                   const tsr_dnnl_md *diff_dst, const tsr_dnnl_md *data,
                                   const tsr_dnnl_pd *hint, const_dnnl_primitive_attr_t attr,
                                   tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_eltwise_backward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(data);
  TSR_NEED(hint);
  tsr_status st = same_md(diff_src, diff_dst, __func__, "diff_src and diff_dst");
  if (st != TSR_OK)
    return st;
  dnnl_eltwise_desc_t d;
  st = tsr_onednn_check(
      dnnl_eltwise_backward_desc_init(&d, alg, &diff_src->md, &data->md, alpha, beta), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, hint, "eltwise backward primitive descriptor",
                         out_pd);
}

// softmax_v2 (2.6+) carries the log variant and a separate dst; the older
// logsoftmax descriptor has neither a dst nor a future in 3.x.
tsr_status tsr_dnnl_pd_softmax_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, int log, int axis,
                                   const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                   const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_softmax_v2_forward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  dnnl_softmax_v2_desc_t d;
  tsr_status st = tsr_onednn_check(
      dnnl_softmax_v2_forward_desc_init(&d, prop, log ? dnnl_softmax_log : dnnl_softmax_accurate,
                                        &src->md, &dst->md, axis),
      what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL, "softmax forward primitive descriptor",
                         out_pd);
}

tsr_status tsr_dnnl_pd_softmax_bwd(dnnl_engine_t engine, int log, int axis,
                                   const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                   const tsr_dnnl_md *dst, const tsr_dnnl_pd *hint,
                                   const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_softmax_v2_backward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(dst);
  TSR_NEED(hint);
  dnnl_softmax_v2_desc_t d;
  tsr_status st = tsr_onednn_check(
      dnnl_softmax_v2_backward_desc_init(&d, log ? dnnl_softmax_log : dnnl_softmax_accurate,
                                         &diff_src->md, &diff_dst->md, &dst->md, axis),
      what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, hint, "softmax backward primitive descriptor",
                         out_pd);
}

// 2.6 has no layer_normalization_v2: one data descriptor, like batch norm.
tsr_status tsr_dnnl_pd_layer_norm_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                      const tsr_dnnl_md *stat, float eps, uint32_t flags,
                                      const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_layer_normalization_forward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  unsigned f = 0;
  tsr_status st = tsr_dnnl_norm_flags(flags, __func__, &f);
  if (st != TSR_OK)
    return st;
  st = same_md(src, dst, __func__, "src and dst");
  if (st != TSR_OK)
    return st;
  dnnl_layer_normalization_desc_t d;
  st = tsr_onednn_check(
      dnnl_layer_normalization_forward_desc_init(&d, prop, &src->md, raw(stat), eps, f), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL,
                         "layer normalization forward primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_layer_norm_bwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *stat, float eps,
                                      uint32_t flags, const tsr_dnnl_pd *hint,
                                      const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_layer_normalization_backward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(src);
  TSR_NEED(hint);
  unsigned f = 0;
  tsr_status st = tsr_dnnl_norm_flags(flags, __func__, &f);
  if (st != TSR_OK)
    return st;
  st = same_md(diff_src, diff_dst, __func__, "diff_src and diff_dst");
  if (st != TSR_OK)
    return st;
  dnnl_layer_normalization_desc_t d;
  st = tsr_onednn_check(dnnl_layer_normalization_backward_desc_init(&d, prop, &diff_src->md,
                                                                    &src->md, raw(stat), eps, f),
                        what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, hint,
                         "layer normalization backward primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_batch_norm_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *dst, float eps,
                                      uint32_t flags, const_dnnl_primitive_attr_t attr,
                                      tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_batch_normalization_forward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  unsigned f = 0;
  tsr_status st = tsr_dnnl_norm_flags(flags, __func__, &f);
  if (st != TSR_OK)
    return st;
  st = same_md(src, dst, __func__, "src and dst");
  if (st != TSR_OK)
    return st;
  dnnl_batch_normalization_desc_t d;
  st = tsr_onednn_check(dnnl_batch_normalization_forward_desc_init(&d, prop, &src->md, eps, f),
                        what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL,
                         "batch normalization forward primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_batch_norm_bwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                      const tsr_dnnl_md *src, float eps, uint32_t flags,
                                      const tsr_dnnl_pd *hint, const_dnnl_primitive_attr_t attr,
                                      tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_batch_normalization_backward_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(src);
  TSR_NEED(hint);
  unsigned f = 0;
  tsr_status st = tsr_dnnl_norm_flags(flags, __func__, &f);
  if (st != TSR_OK)
    return st;
  st = same_md(diff_src, diff_dst, __func__, "diff_src and diff_dst");
  if (st != TSR_OK)
    return st;
  dnnl_batch_normalization_desc_t d;
  st = tsr_onednn_check(
      dnnl_batch_normalization_backward_desc_init(&d, prop, &diff_src->md, &src->md, eps, f), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, hint,
                         "batch normalization backward primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_binary(dnnl_engine_t engine, dnnl_alg_kind_t alg, const tsr_dnnl_md *src0,
                              const tsr_dnnl_md *src1, const tsr_dnnl_md *dst,
                              const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_binary_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src0);
  TSR_NEED(src1);
  TSR_NEED(dst);
  dnnl_binary_desc_t d;
  tsr_status st =
      tsr_onednn_check(dnnl_binary_desc_init(&d, alg, &src0->md, &src1->md, &dst->md), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL, "binary primitive descriptor", out_pd);
}

tsr_status tsr_dnnl_pd_reduction(dnnl_engine_t engine, dnnl_alg_kind_t alg, const tsr_dnnl_md *src,
                                 const tsr_dnnl_md *dst, float p, float eps,
                                 const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_reduction_desc_init";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  dnnl_reduction_desc_t d;
  tsr_status st =
      tsr_onednn_check(dnnl_reduction_desc_init(&d, alg, &src->md, &dst->md, p, eps), what);
  if (st != TSR_OK)
    return st;
  return pd_from_op_desc(engine, &d, sizeof d, attr, NULL, "reduction primitive descriptor",
                         out_pd);
}

tsr_status tsr_dnnl_pd_reorder(dnnl_engine_t engine, const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                               const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_reorder_primitive_desc_create";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  dnnl_primitive_attr_t owned = NULL;
  const_dnnl_primitive_attr_t use = NULL;
  tsr_status st = attr_resolve(attr, &owned, &use);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  st = tsr_onednn_check(
      dnnl_reorder_primitive_desc_create(&pd, &src->md, engine, &dst->md, engine, use), what);
  if (owned != NULL)
    dnnl_primitive_attr_destroy(owned);
  if (st != TSR_OK)
    return st;
  return pd_from_handle(pd, out_pd);
}

// Gathers the caller's descriptors into the contiguous array 2.x takes.
static tsr_status srcs_gather(int32_t num_srcs, const tsr_dnnl_md *const *srcs, const char *what,
                              dnnl_memory_desc_t **out) {
  *out = NULL;
  if (num_srcs < 1 || srcs == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: bad source list (%d)", what,
                                (int)num_srcs);
  }
  dnnl_memory_desc_t *a = malloc((size_t)num_srcs * sizeof *a);
  if (a == NULL)
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: out of memory", what);
  for (int32_t i = 0; i < num_srcs; ++i) {
    if (srcs[i] == NULL) {
      free(a);
      return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: srcs[%d] is NULL", what, (int)i);
    }
    a[i] = srcs[i]->md;
  }
  *out = a;
  return TSR_OK;
}

tsr_status tsr_dnnl_pd_concat(dnnl_engine_t engine, const tsr_dnnl_md *dst, int32_t num_srcs,
                              int32_t axis, const tsr_dnnl_md *const *srcs,
                              const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_concat_primitive_desc_create";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(dst);
  dnnl_memory_desc_t *a = NULL;
  tsr_status st = srcs_gather(num_srcs, srcs, __func__, &a);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_attr_t owned = NULL;
  const_dnnl_primitive_attr_t use = NULL;
  st = attr_resolve(attr, &owned, &use);
  if (st != TSR_OK) {
    free(a);
    return st;
  }
  dnnl_primitive_desc_t pd = NULL;
  st = tsr_onednn_check(
      dnnl_concat_primitive_desc_create(&pd, &dst->md, num_srcs, axis, a, use, engine), what);
  if (owned != NULL)
    dnnl_primitive_attr_destroy(owned);
  free(a);
  if (st != TSR_OK)
    return st;
  return pd_from_handle(pd, out_pd);
}

tsr_status tsr_dnnl_pd_sum(dnnl_engine_t engine, const tsr_dnnl_md *dst, int32_t num_srcs,
                           const float *scales, const tsr_dnnl_md *const *srcs,
                           const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  static const char what[] = "dnnl_sum_primitive_desc_create";
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(dst);
  TSR_NEED(scales);
  dnnl_memory_desc_t *a = NULL;
  tsr_status st = srcs_gather(num_srcs, srcs, __func__, &a);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_attr_t owned = NULL;
  const_dnnl_primitive_attr_t use = NULL;
  st = attr_resolve(attr, &owned, &use);
  if (st != TSR_OK) {
    free(a);
    return st;
  }
  dnnl_primitive_desc_t pd = NULL;
  st = tsr_onednn_check(
      dnnl_sum_primitive_desc_create(&pd, &dst->md, num_srcs, scales, a, use, engine), what);
  if (owned != NULL)
    dnnl_primitive_attr_destroy(owned);
  free(a);
  if (st != TSR_OK)
    return st;
  return pd_from_handle(pd, out_pd);
}

// --- primitive descriptor use -------------------------------------------------

tsr_status tsr_dnnl_pd_next_impl(tsr_dnnl_pd *pd) {
  if (pd == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "tsr_dnnl_pd_next_impl: pd is NULL");
  }
  if (pd->iterator == NULL || pd->at_end)
    return TSR_NOT_FOUND;
  dnnl_status_t s = dnnl_primitive_desc_iterator_next(pd->iterator);
  if (s == dnnl_iterator_ends) {
    pd->at_end = 1;
    return TSR_NOT_FOUND;
  }
  tsr_status st = tsr_onednn_check(s, "dnnl_primitive_desc_iterator_next");
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t next = dnnl_primitive_desc_iterator_fetch(pd->iterator);
  if (next == NULL) {
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "dnnl_primitive_desc_iterator_fetch failed");
  }
  dnnl_primitive_desc_destroy(pd->pd);
  pd->pd = next;
  return TSR_OK;
}

const char *tsr_dnnl_pd_impl_name(const tsr_dnnl_pd *pd) {
  const char *name = NULL;
  if (pd == NULL ||
      dnnl_primitive_desc_query(pd->pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success ||
      name == NULL) {
    return "";
  }
  return name;
}

tsr_status tsr_dnnl_pd_arg_md(const tsr_dnnl_pd *pd, int arg, tsr_dnnl_md **out_md) {
  if (pd == NULL || out_md == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "tsr_dnnl_pd_arg_md: NULL argument");
  }
  *out_md = NULL;
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd->pd, dnnl_query_exec_arg_md, arg);
  // 2.x answers an argument the primitive does not take with a zero md (or
  // NULL for a query it rejects outright).
  if (md == NULL || md->ndims == 0)
    return TSR_NOT_FOUND;
  return md_wrap(md, out_md);
}

const_dnnl_primitive_desc_t tsr_dnnl_pd_handle(const tsr_dnnl_pd *pd) {
  return pd == NULL ? NULL : pd->pd;
}

tsr_status tsr_dnnl_primitive_create(const tsr_dnnl_pd *pd, dnnl_primitive_t *out_primitive) {
  if (pd == NULL || out_primitive == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "tsr_dnnl_primitive_create: NULL argument");
  }
  *out_primitive = NULL;
  return tsr_onednn_check(dnnl_primitive_create(out_primitive, pd->pd), "dnnl_primitive_create");
}

void tsr_dnnl_pd_destroy(tsr_dnnl_pd *pd) {
  if (pd == NULL)
    return;
  if (pd->pd != NULL)
    dnnl_primitive_desc_destroy(pd->pd);
  if (pd->iterator != NULL)
    dnnl_primitive_desc_iterator_destroy(pd->iterator);
  if (pd->hint != NULL)
    dnnl_primitive_desc_destroy(pd->hint);
  free(pd);
}

// --- memory objects -----------------------------------------------------------

tsr_status tsr_dnnl_memory_create(const tsr_dnnl_md *md, dnnl_engine_t engine, void *handle,
                                  dnnl_memory_t *out_memory) {
  if (md == NULL || out_memory == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "tsr_dnnl_memory_create: NULL argument");
  }
  *out_memory = NULL;
  return tsr_onednn_check(dnnl_memory_create(out_memory, &md->md, engine, handle),
                          "dnnl_memory_create");
}
