// compat.h against oneDNN 3.x (built and tested with 3.2).
//
// 3.x creates primitive descriptors directly and walks implementations on
// the pd itself; memory descriptors are opaque handles, so a tsr_dnnl_md *
// is the dnnl_memory_desc_t itself, cast, and never dereferenced here.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "compat_internal.h"

struct tsr_dnnl_pd {
  dnnl_primitive_desc_t pd;
  // A backward pd keeps a raw pointer to its forward hint and dereferences
  // it on every next_impl, so it holds its own clone: the caller may destroy
  // or advance its forward pd meanwhile.
  dnnl_primitive_desc_t hint;
  // Reorder, concat and sum pds have no implementation list to walk, and
  // once a list has ended it must not be stepped again: neither case is
  // promised to be harmless by the library, so they are answered here.
  int at_end;
};

static const_dnnl_memory_desc_t raw(const tsr_dnnl_md *md) {
  return (const_dnnl_memory_desc_t)md;
}

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
  // what executes; a package upgrade changes it without a rebuild.
  const dnnl_version_t *v = dnnl_version();
  snprintf(g_version, sizeof g_version, "oneDNN %d.%d.%d (v3 API, %s)", v->major, v->minor,
           v->patch, runtime_name(v->cpu_runtime));
}

const char *tsr_dnnl_version_string(void) {
  pthread_once(&g_version_once, version_init);
  return g_version;
}

int tsr_dnnl_api_generation(void) {
  return 3;
}

// --- memory descriptors -----------------------------------------------------

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
  dnnl_memory_desc_t md = NULL;
  st = tsr_onednn_check(dnnl_memory_desc_create_with_strides(&md, ndims, d, dtype, s),
                        "dnnl_memory_desc_create_with_strides");
  if (st != TSR_OK)
    return st;
  *out_md = (tsr_dnnl_md *)md;
  return TSR_OK;
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
  dnnl_memory_desc_t md = NULL;
  st = tsr_onednn_check(dnnl_memory_desc_create_with_tag(&md, ndims, d, dtype, tag),
                        "dnnl_memory_desc_create_with_tag");
  if (st != TSR_OK)
    return st;
  *out_md = (tsr_dnnl_md *)md;
  return TSR_OK;
}

tsr_status tsr_dnnl_md_create_any(int32_t rank, const int64_t *dims, dnnl_data_type_t dtype,
                                  tsr_dnnl_md **out_md) {
  return tsr_dnnl_md_create_tag(rank, dims, dtype, dnnl_format_tag_any, out_md);
}

void tsr_dnnl_md_destroy(tsr_dnnl_md *md) {
  if (md != NULL)
    dnnl_memory_desc_destroy((dnnl_memory_desc_t)md);
}

size_t tsr_dnnl_md_bytes(const tsr_dnnl_md *md) {
  return md == NULL ? 0 : dnnl_memory_desc_get_size(raw(md));
}

int tsr_dnnl_md_equal(const tsr_dnnl_md *a, const tsr_dnnl_md *b) {
  if (a == NULL || b == NULL)
    return a == b;
  return dnnl_memory_desc_equal(raw(a), raw(b)) ? 1 : 0;
}

static int md_ndims(const_dnnl_memory_desc_t md) {
  int ndims = 0;
  if (md == NULL || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success) {
    return 0;
  }
  return ndims;
}

// --- attributes -------------------------------------------------------------

tsr_status tsr_dnnl_post_op_append(dnnl_post_ops_t po, const tsr_dnnl_post_op *op, int32_t index) {
  switch (op->kind) {
    case TSR_DNNL_POST_ELTWISE:
      return tsr_onednn_check(dnnl_post_ops_append_eltwise(po, op->alg, op->alpha, op->beta),
                              "dnnl_post_ops_append_eltwise");
    case TSR_DNNL_POST_SUM:
      // Zero point 0 and undef data type: dst is read as the type it has.
      return tsr_onednn_check(dnnl_post_ops_append_sum(po, op->scale, 0, dnnl_data_type_undef),
                              "dnnl_post_ops_append_sum");
    case TSR_DNNL_POST_BINARY:
      if (op->md == NULL) {
        return tsr_onednn_error_set(
            TSR_INVALID_ARGUMENT, "tsr_dnnl_attr_create: binary post-op %d has no md", (int)index);
      }
      return tsr_onednn_check(dnnl_post_ops_append_binary(po, op->alg, raw(op->md)),
                              "dnnl_post_ops_append_binary");
    default:
      return tsr_onednn_error_set(TSR_INVALID_ARGUMENT,
                                  "tsr_dnnl_attr_create: post-op %d has unknown kind %d",
                                  (int)index, (int)op->kind);
  }
}

// --- primitive descriptors ----------------------------------------------------

// What a creator prepares around oneDNN's create call: the attribute to pass
// (the caller's, or an owned default in user scratchpad mode) and the
// backward hint's clone.
typedef struct pd_prep {
  dnnl_primitive_attr_t owned_attr;
  const_dnnl_primitive_attr_t attr;
  dnnl_primitive_desc_t hint;
} pd_prep;

static tsr_status prep_begin(const_dnnl_primitive_attr_t attr, const tsr_dnnl_pd *hint,
                             pd_prep *prep) {
  memset(prep, 0, sizeof *prep);
  prep->attr = attr;
  if (attr == NULL) {
    tsr_status st = tsr_onednn_check(dnnl_primitive_attr_create(&prep->owned_attr),
                                     "dnnl_primitive_attr_create");
    if (st != TSR_OK)
      return st;
    st = tsr_onednn_check(
        dnnl_primitive_attr_set_scratchpad_mode(prep->owned_attr, dnnl_scratchpad_mode_user),
        "dnnl_primitive_attr_set_scratchpad_mode");
    if (st != TSR_OK) {
      dnnl_primitive_attr_destroy(prep->owned_attr);
      prep->owned_attr = NULL;
      return st;
    }
    prep->attr = prep->owned_attr;
  }
  if (hint != NULL) {
    tsr_status st = tsr_onednn_check(dnnl_primitive_desc_clone(&prep->hint, hint->pd),
                                     "dnnl_primitive_desc_clone");
    if (st != TSR_OK) {
      if (prep->owned_attr != NULL)
        dnnl_primitive_attr_destroy(prep->owned_attr);
      prep->owned_attr = NULL;
      prep->hint = NULL;
      return st;
    }
  }
  return TSR_OK;
}

// Takes the result of oneDNN's create call; everything prepared is either
// handed to the new tsr_dnnl_pd or released.
static tsr_status prep_end(pd_prep *prep, dnnl_status_t status, dnnl_primitive_desc_t pd,
                           int walkable, const char *what, tsr_dnnl_pd **out_pd) {
  // The pd keeps its own copy of the attribute.
  if (prep->owned_attr != NULL)
    dnnl_primitive_attr_destroy(prep->owned_attr);
  prep->owned_attr = NULL;
  tsr_status st = tsr_onednn_check(status, what);
  tsr_dnnl_pd *p = NULL;
  if (st == TSR_OK) {
    p = calloc(1, sizeof *p);
    if (p == NULL) {
      st = tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
  }
  if (st != TSR_OK) {
    if (status == dnnl_success && pd != NULL)
      dnnl_primitive_desc_destroy(pd);
    if (prep->hint != NULL)
      dnnl_primitive_desc_destroy(prep->hint);
    prep->hint = NULL;
    return st;
  }
  p->pd = pd;
  p->hint = prep->hint;
  p->at_end = !walkable;
  prep->hint = NULL;
  *out_pd = p;
  return TSR_OK;
}

static tsr_status need(const void *ptr, const char *func, const char *name) {
  if (ptr != NULL)
    return TSR_OK;
  return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", func, name);
}

#define TSR_NEED(ptr)                                  \
  do {                                                 \
    tsr_status need_st_ = need((ptr), __func__, #ptr); \
    if (need_st_ != TSR_OK)                            \
      return need_st_;                                 \
  } while (0)

tsr_status tsr_dnnl_pd_matmul(dnnl_engine_t engine, const tsr_dnnl_md *src,
                              const tsr_dnnl_md *weights, const tsr_dnnl_md *bias,
                              const tsr_dnnl_md *dst, const_dnnl_primitive_attr_t attr,
                              tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(weights);
  TSR_NEED(dst);
  pd_prep prep;
  tsr_status st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t s = dnnl_matmul_primitive_desc_create(&pd, engine, raw(src), raw(weights),
                                                      raw(bias), raw(dst), prep.attr);
  return prep_end(&prep, s, pd, 1, "dnnl_matmul_primitive_desc_create", out_pd);
}

// Direct, not auto: auto may pick Winograd, whose rounding differs from the
// reference convolution the plugin is checked against.
tsr_status tsr_dnnl_pd_conv_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, const tsr_dnnl_md *src,
                                const tsr_dnnl_md *weights, const tsr_dnnl_md *bias,
                                const tsr_dnnl_md *dst, const tsr_dnnl_window *window,
                                const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(weights);
  TSR_NEED(dst);
  TSR_NEED(window);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, md_ndims(raw(src)), __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_convolution_forward_primitive_desc_create(
      &pd, engine, prop, dnnl_convolution_direct, raw(src), raw(weights), raw(bias), raw(dst), s,
      dl, pl, pr, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_convolution_forward_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_conv_bwd_data(dnnl_engine_t engine, const tsr_dnnl_md *diff_src,
                                     const tsr_dnnl_md *weights, const tsr_dnnl_md *diff_dst,
                                     const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                     const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(weights);
  TSR_NEED(diff_dst);
  TSR_NEED(window);
  TSR_NEED(hint);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, md_ndims(raw(diff_src)), __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, hint, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_convolution_backward_data_primitive_desc_create(
      &pd, engine, dnnl_convolution_direct, raw(diff_src), raw(weights), raw(diff_dst), s, dl, pl,
      pr, prep.hint, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_convolution_backward_data_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_conv_bwd_weights(dnnl_engine_t engine, const tsr_dnnl_md *src,
                                        const tsr_dnnl_md *diff_weights,
                                        const tsr_dnnl_md *diff_bias, const tsr_dnnl_md *diff_dst,
                                        const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                        const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(diff_weights);
  TSR_NEED(diff_dst);
  TSR_NEED(window);
  TSR_NEED(hint);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, md_ndims(raw(src)), __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, hint, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_convolution_backward_weights_primitive_desc_create(
      &pd, engine, dnnl_convolution_direct, raw(src), raw(diff_weights), raw(diff_bias),
      raw(diff_dst), s, dl, pl, pr, prep.hint, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_convolution_backward_weights_primitive_desc_create",
                  out_pd);
}

tsr_status tsr_dnnl_pd_pool_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, dnnl_alg_kind_t alg,
                                const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                const tsr_dnnl_window *window, const_dnnl_primitive_attr_t attr,
                                tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  TSR_NEED(window);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, md_ndims(raw(src)), __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_pooling_forward_primitive_desc_create(
      &pd, engine, prop, alg, raw(src), raw(dst), s, k, dl, pl, pr, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_pooling_forward_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_pool_bwd(dnnl_engine_t engine, dnnl_alg_kind_t alg,
                                const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                const tsr_dnnl_window *window, const tsr_dnnl_pd *hint,
                                const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(window);
  TSR_NEED(hint);
  dnnl_dims_t s, k, dl, pl, pr;
  tsr_status st = tsr_dnnl_window_dims(window, md_ndims(raw(diff_src)), __func__, s, k, dl, pl, pr);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, hint, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_pooling_backward_primitive_desc_create(
      &pd, engine, alg, raw(diff_src), raw(diff_dst), s, k, dl, pl, pr, prep.hint, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_pooling_backward_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_eltwise_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, dnnl_alg_kind_t alg,
                                   float alpha, float beta, const tsr_dnnl_md *src,
                                   const tsr_dnnl_md *dst, const_dnnl_primitive_attr_t attr,
                                   tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  pd_prep prep;
  tsr_status st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_eltwise_forward_primitive_desc_create(&pd, engine, prop, alg, raw(src),
                                                                raw(dst), alpha, beta, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_eltwise_forward_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_eltwise_bwd(dnnl_engine_t engine, dnnl_alg_kind_t alg, float alpha,
                                   float beta, const tsr_dnnl_md *diff_src,
                                   const tsr_dnnl_md *diff_dst, const tsr_dnnl_md *data,
                                   const tsr_dnnl_pd *hint, const_dnnl_primitive_attr_t attr,
                                   tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(data);
  TSR_NEED(hint);
  pd_prep prep;
  tsr_status st = prep_begin(attr, hint, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_eltwise_backward_primitive_desc_create(
      &pd, engine, alg, raw(diff_src), raw(diff_dst), raw(data), alpha, beta, prep.hint, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_eltwise_backward_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_softmax_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop, int log, int axis,
                                   const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                   const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  pd_prep prep;
  tsr_status st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_softmax_forward_primitive_desc_create(
      &pd, engine, prop, log ? dnnl_softmax_log : dnnl_softmax_accurate, raw(src), raw(dst), axis,
      prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_softmax_forward_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_softmax_bwd(dnnl_engine_t engine, int log, int axis,
                                   const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                   const tsr_dnnl_md *dst, const tsr_dnnl_pd *hint,
                                   const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(diff_src);
  TSR_NEED(diff_dst);
  TSR_NEED(dst);
  TSR_NEED(hint);
  pd_prep prep;
  tsr_status st = prep_begin(attr, hint, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_softmax_backward_primitive_desc_create(
      &pd, engine, log ? dnnl_softmax_log : dnnl_softmax_accurate, raw(diff_src), raw(diff_dst),
      raw(dst), axis, prep.hint, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_softmax_backward_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_layer_norm_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                                      const tsr_dnnl_md *stat, float eps, uint32_t flags,
                                      const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  unsigned f = 0;
  tsr_status st = tsr_dnnl_norm_flags(flags, __func__, &f);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_layer_normalization_forward_primitive_desc_create(
      &pd, engine, prop, raw(src), raw(dst), raw(stat), eps, f, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_layer_normalization_forward_primitive_desc_create",
                  out_pd);
}

tsr_status tsr_dnnl_pd_layer_norm_bwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *stat, float eps,
                                      uint32_t flags, const tsr_dnnl_pd *hint,
                                      const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
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
  pd_prep prep;
  st = prep_begin(attr, hint, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_layer_normalization_backward_primitive_desc_create(
      &pd, engine, prop, raw(diff_src), raw(diff_dst), raw(src), raw(stat), eps, f, prep.hint,
      prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_layer_normalization_backward_primitive_desc_create",
                  out_pd);
}

tsr_status tsr_dnnl_pd_batch_norm_fwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *src, const tsr_dnnl_md *dst, float eps,
                                      uint32_t flags, const_dnnl_primitive_attr_t attr,
                                      tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  unsigned f = 0;
  tsr_status st = tsr_dnnl_norm_flags(flags, __func__, &f);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_batch_normalization_forward_primitive_desc_create(
      &pd, engine, prop, raw(src), raw(dst), eps, f, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_batch_normalization_forward_primitive_desc_create",
                  out_pd);
}

tsr_status tsr_dnnl_pd_batch_norm_bwd(dnnl_engine_t engine, dnnl_prop_kind_t prop,
                                      const tsr_dnnl_md *diff_src, const tsr_dnnl_md *diff_dst,
                                      const tsr_dnnl_md *src, float eps, uint32_t flags,
                                      const tsr_dnnl_pd *hint, const_dnnl_primitive_attr_t attr,
                                      tsr_dnnl_pd **out_pd) {
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
  pd_prep prep;
  st = prep_begin(attr, hint, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_batch_normalization_backward_primitive_desc_create(
      &pd, engine, prop, raw(diff_src), raw(diff_dst), raw(src), eps, f, prep.hint, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_batch_normalization_backward_primitive_desc_create",
                  out_pd);
}

tsr_status tsr_dnnl_pd_binary(dnnl_engine_t engine, dnnl_alg_kind_t alg, const tsr_dnnl_md *src0,
                              const tsr_dnnl_md *src1, const tsr_dnnl_md *dst,
                              const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src0);
  TSR_NEED(src1);
  TSR_NEED(dst);
  pd_prep prep;
  tsr_status st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_binary_primitive_desc_create(&pd, engine, alg, raw(src0), raw(src1),
                                                       raw(dst), prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_binary_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_reduction(dnnl_engine_t engine, dnnl_alg_kind_t alg, const tsr_dnnl_md *src,
                                 const tsr_dnnl_md *dst, float p, float eps,
                                 const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  pd_prep prep;
  tsr_status st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds =
      dnnl_reduction_primitive_desc_create(&pd, engine, alg, raw(src), raw(dst), p, eps, prep.attr);
  return prep_end(&prep, ds, pd, 1, "dnnl_reduction_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_reorder(dnnl_engine_t engine, const tsr_dnnl_md *src, const tsr_dnnl_md *dst,
                               const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(src);
  TSR_NEED(dst);
  pd_prep prep;
  tsr_status st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds =
      dnnl_reorder_primitive_desc_create(&pd, raw(src), engine, raw(dst), engine, prep.attr);
  return prep_end(&prep, ds, pd, 0, "dnnl_reorder_primitive_desc_create", out_pd);
}

// Validates the caller's list; 3.x takes it as an array of handles, which
// const tsr_dnnl_md *const * already is once cast.
static tsr_status srcs_check(int32_t num_srcs, const tsr_dnnl_md *const *srcs, const char *func) {
  if (num_srcs < 1 || srcs == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: bad source list (%d)", func,
                                (int)num_srcs);
  }
  for (int32_t i = 0; i < num_srcs; ++i) {
    if (srcs[i] == NULL) {
      return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "%s: srcs[%d] is NULL", func, (int)i);
    }
  }
  return TSR_OK;
}

tsr_status tsr_dnnl_pd_concat(dnnl_engine_t engine, const tsr_dnnl_md *dst, int32_t num_srcs,
                              int32_t axis, const tsr_dnnl_md *const *srcs,
                              const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(dst);
  tsr_status st = srcs_check(num_srcs, srcs, __func__);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_concat_primitive_desc_create(
      &pd, engine, raw(dst), num_srcs, axis, (const_dnnl_memory_desc_t const *)srcs, prep.attr);
  return prep_end(&prep, ds, pd, 0, "dnnl_concat_primitive_desc_create", out_pd);
}

tsr_status tsr_dnnl_pd_sum(dnnl_engine_t engine, const tsr_dnnl_md *dst, int32_t num_srcs,
                           const float *scales, const tsr_dnnl_md *const *srcs,
                           const_dnnl_primitive_attr_t attr, tsr_dnnl_pd **out_pd) {
  TSR_NEED(out_pd);
  *out_pd = NULL;
  TSR_NEED(dst);
  TSR_NEED(scales);
  tsr_status st = srcs_check(num_srcs, srcs, __func__);
  if (st != TSR_OK)
    return st;
  pd_prep prep;
  st = prep_begin(attr, NULL, &prep);
  if (st != TSR_OK)
    return st;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t ds = dnnl_sum_primitive_desc_create(
      &pd, engine, raw(dst), num_srcs, scales, (const_dnnl_memory_desc_t const *)srcs, prep.attr);
  return prep_end(&prep, ds, pd, 0, "dnnl_sum_primitive_desc_create", out_pd);
}

// --- primitive descriptor use -------------------------------------------------

tsr_status tsr_dnnl_pd_next_impl(tsr_dnnl_pd *pd) {
  if (pd == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "tsr_dnnl_pd_next_impl: pd is NULL");
  }
  if (pd->at_end)
    return TSR_NOT_FOUND;
  dnnl_status_t s = dnnl_primitive_desc_next_impl(pd->pd);
  if (s == dnnl_last_impl_reached) {
    pd->at_end = 1;
    return TSR_NOT_FOUND;
  }
  return tsr_onednn_check(s, "dnnl_primitive_desc_next_impl");
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
  const_dnnl_memory_desc_t md = dnnl_primitive_desc_query_md(pd->pd, dnnl_query_exec_arg_md, arg);
  // An argument the primitive does not take comes back as a zero md (or
  // NULL for a query rejected outright).
  if (md_ndims(md) == 0)
    return TSR_NOT_FOUND;
  dnnl_memory_desc_t copy = NULL;
  tsr_status st = tsr_onednn_check(dnnl_memory_desc_clone(&copy, md), "dnnl_memory_desc_clone");
  if (st != TSR_OK)
    return st;
  *out_md = (tsr_dnnl_md *)copy;
  return TSR_OK;
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
  return tsr_onednn_check(dnnl_memory_create(out_memory, raw(md), engine, handle),
                          "dnnl_memory_create");
}
