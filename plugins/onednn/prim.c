// One oneDNN primitive ready to run: implementation choice, memory objects
// made once, executions that only set data handles.
//
// dnnl_memory_create allocates, and a primitive execution needs one memory
// object per argument, so creating them per call would put mallocs on the
// hot path (several per call for a small add: docs/performance-log.md,
// "Measurements behind the code's decisions"). Instead each prim
// holds TSR_ONEDNN_SLOTS sets of memory objects; a call takes a free set with
// one atomic exchange. Only when more threads than that run one plan at the
// same moment does a call make temporary objects.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onednn_op.h"
#include "onednn_plugin.h"

dnnl_data_type_t tsr_onednn_dtype(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      return dnnl_f32;
    case TSR_BFLOAT16:
      return dnnl_bf16;
    case TSR_FLOAT16:
      return dnnl_f16;
    case TSR_INT32:
      return dnnl_s32;
    default:
      return dnnl_data_type_undef;
  }
}

int64_t tsr_onednn_numel(const tsr_tensor_desc *desc) {
  int64_t n = 1;
  for (int32_t d = 0; d < desc->rank; ++d) n *= desc->sizes[d];
  return n;
}

tsr_status tsr_onednn_md_from_desc(const tsr_tensor_desc *desc, tsr_dnnl_md **out_md) {
  *out_md = NULL;
  dnnl_data_type_t dt = tsr_onednn_dtype(desc->dtype);
  if (dt == dnnl_data_type_undef) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "dtype %d has no oneDNN data type",
                                (int)desc->dtype);
  }
  if (desc->rank == 0) {
    const int64_t one = 1;
    return tsr_dnnl_md_create_strided(1, &one, &one, dt, out_md);
  }
  return tsr_dnnl_md_create_strided(desc->rank, desc->sizes, desc->strides, dt, out_md);
}

// --- building -------------------------------------------------------------------

static void tsr_onednn_prim_release(tsr_onednn_prim *prim) {
  for (int32_t s = 0; s < TSR_ONEDNN_SLOTS; ++s) {
    for (int32_t a = 0; a < TSR_ONEDNN_MAX_ARGS; ++a) {
      if (prim->slots[s][a] != NULL)
        dnnl_memory_destroy(prim->slots[s][a]);
    }
  }
  for (int32_t a = 0; a < TSR_ONEDNN_MAX_ARGS; ++a) tsr_dnnl_md_destroy(prim->arg_mds[a]);
  if (prim->primitive != NULL)
    dnnl_primitive_destroy(prim->primitive);
  memset(prim, 0, sizeof(*prim));
}

void tsr_onednn_prim_fini(tsr_onednn_prim *prim) {
  if (prim != NULL)
    tsr_onednn_prim_release(prim);
}

// Fills |prim| from |pd|'s current implementation: argument descriptors, the
// scratchpad, the primitive and its name. No memory objects yet.
static tsr_status tsr_onednn_prim_from_pd(tsr_onednn_prim *prim, const tsr_dnnl_pd *pd,
                                          int32_t num_args, const int32_t *arg_ids) {
  memset(prim, 0, sizeof(*prim));
  tsr_status status = TSR_OK;
  for (int32_t a = 0; a < num_args && status == TSR_OK; ++a) {
    prim->arg_ids[a] = arg_ids[a];
    status = tsr_dnnl_pd_arg_md(pd, arg_ids[a], &prim->arg_mds[a]);
    if (status == TSR_NOT_FOUND) {
      status = tsr_onednn_error_set(TSR_INTERNAL, "%s takes no argument %d",
                                    tsr_dnnl_pd_impl_name(pd), (int)arg_ids[a]);
    }
  }
  prim->num_args = num_args;
  if (status == TSR_OK) {
    tsr_dnnl_md *scratch = NULL;
    tsr_status s = tsr_dnnl_pd_arg_md(pd, DNNL_ARG_SCRATCHPAD, &scratch);
    if (s == TSR_OK) {
      size_t bytes = tsr_dnnl_md_bytes(scratch);
      if (bytes > 0) {
        prim->arg_ids[prim->num_args] = DNNL_ARG_SCRATCHPAD;
        prim->arg_mds[prim->num_args] = scratch;
        prim->scratchpad_bytes = bytes;
        ++prim->num_args;
        scratch = NULL;
      }
      tsr_dnnl_md_destroy(scratch);
    } else if (s != TSR_NOT_FOUND) {
      status = s;
    }
  }
  if (status == TSR_OK)
    status = tsr_dnnl_primitive_create(pd, &prim->primitive);
  if (status == TSR_OK) {
    const char *name = tsr_dnnl_pd_impl_name(pd);
    strncpy(prim->impl, name ? name : "unknown", sizeof(prim->impl) - 1);
  }
  if (status != TSR_OK)
    tsr_onednn_prim_release(prim);
  return status;
}

static double tsr_onednn_now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Seconds one execution of |prim| takes on zeroed scratch data (the best of
// three after a warm-up), or a negative value when it could not run.
static double tsr_onednn_prim_time(const tsr_onednn_prim *prim, dnnl_stream_t stream) {
  dnnl_engine_t engine = tsr_onednn_engine_get();
  void *buffers[TSR_ONEDNN_MAX_ARGS] = {0};
  dnnl_memory_t mems[TSR_ONEDNN_MAX_ARGS] = {0};
  dnnl_exec_arg_t args[TSR_ONEDNN_MAX_ARGS];
  double best = -1.0;
  int ok = 1;
  for (int32_t a = 0; a < prim->num_args && ok; ++a) {
    size_t bytes = tsr_onednn_round64(tsr_dnnl_md_bytes(prim->arg_mds[a]) + 64);
    buffers[a] = aligned_alloc(64, bytes);
    if (buffers[a] == NULL) {
      ok = 0;
      break;
    }
    memset(buffers[a], 0, bytes);
    ok = tsr_dnnl_memory_create(prim->arg_mds[a], engine, buffers[a], &mems[a]) == TSR_OK;
    args[a].arg = prim->arg_ids[a];
    args[a].memory = mems[a];
  }
  for (int run = 0; run < 4 && ok; ++run) {
    double start = tsr_onednn_now_seconds();
    ok = dnnl_primitive_execute(prim->primitive, stream, prim->num_args, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
    double elapsed = tsr_onednn_now_seconds() - start;
    if (ok && run > 0 && (best < 0 || elapsed < best))
      best = elapsed;
  }
  for (int32_t a = 0; a < prim->num_args; ++a) {
    if (mems[a] != NULL)
      dnnl_memory_destroy(mems[a]);
    free(buffers[a]);
  }
  return ok ? best : -1.0;
}

// Autotuning: times each of oneDNN's implementations from |pd|'s current one
// on and keeps the fastest in |prim|. Plan creation is not a hot path; the
// scratch data it allocates is freed before returning.
static tsr_status tsr_onednn_prim_select_fastest(tsr_onednn_prim *prim, tsr_dnnl_pd *pd,
                                                 int32_t num_args, const int32_t *arg_ids) {
  dnnl_stream_t stream = NULL;
  tsr_status status = tsr_onednn_thread_stream_get(&stream);
  if (status != TSR_OK)
    return status;
  double best = -1.0;
  tsr_onednn_prim candidate;
  memset(prim, 0, sizeof(*prim));
  // oneDNN lists a handful of implementations per problem; 32 bounds a
  // surprise without cutting a real list short.
  // oneDNN 2.x's walk can hand the same implementation back (from its
  // primitive cache) and never end: stop at the first name seen twice.
  char seen[32][96];
  int num_seen = 0;
  for (int tried = 0; tried < 32; ++tried) {
    const char *name = tsr_dnnl_pd_impl_name(pd);
    name = name ? name : "";
    int repeated = 0;
    for (int i = 0; i < num_seen; ++i) repeated |= strcmp(seen[i], name) == 0;
    if (repeated)
      break;
    snprintf(seen[num_seen++], sizeof(seen[0]), "%s", name);
    // Reference implementations are plain loops that can take seconds on a
    // real problem; time them only when nothing else was found.
    const int is_ref = strncmp(name, "ref", 3) == 0;
    if ((!is_ref || (prim->primitive == NULL && tried > 0)) &&
        tsr_onednn_prim_from_pd(&candidate, pd, num_args, arg_ids) == TSR_OK) {
      double t = tsr_onednn_prim_time(&candidate, stream);
      if (t >= 0 && (best < 0 || t < best)) {
        tsr_onednn_prim_release(prim);
        *prim = candidate;
        best = t;
      } else {
        tsr_onednn_prim_release(&candidate);
      }
    }
    if (tsr_dnnl_pd_next_impl(pd) != TSR_OK)
      break;
  }
  if (prim->primitive == NULL) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "no implementation of %s could run",
                                tsr_dnnl_pd_impl_name(pd));
  }
  return TSR_OK;
}

tsr_status tsr_onednn_prim_init(tsr_onednn_prim *prim, tsr_dnnl_pd *pd,
                                const tsr_onednn_build_ctx *ctx, int32_t num_args,
                                const int32_t *arg_ids) {
  memset(prim, 0, sizeof(*prim));
  if (num_args < 0 || num_args >= TSR_ONEDNN_MAX_ARGS) {
    return tsr_onednn_error_set(TSR_INTERNAL, "a primitive with %d arguments (at most %d)",
                                (int)num_args, TSR_ONEDNN_MAX_ARGS - 1);
  }
  tsr_status status = ctx->select == TSR_ONEDNN_SELECT_FASTEST
                          ? tsr_onednn_prim_select_fastest(prim, pd, num_args, arg_ids)
                          : tsr_onednn_prim_from_pd(prim, pd, num_args, arg_ids);
  if (status != TSR_OK)
    return status;
  dnnl_engine_t engine = tsr_onednn_engine_get();
  for (int32_t s = 0; s < TSR_ONEDNN_SLOTS && status == TSR_OK; ++s) {
    for (int32_t a = 0; a < prim->num_args && status == TSR_OK; ++a) {
      status =
          tsr_dnnl_memory_create(prim->arg_mds[a], engine, DNNL_MEMORY_NONE, &prim->slots[s][a]);
    }
  }
  if (status != TSR_OK)
    tsr_onednn_prim_release(prim);
  return status;
}

// --- running --------------------------------------------------------------------

static tsr_status tsr_onednn_prim_run(const tsr_onednn_prim *prim, dnnl_stream_t stream,
                                      dnnl_memory_t const *mems, void *const *handles,
                                      void *scratchpad) {
  dnnl_exec_arg_t args[TSR_ONEDNN_MAX_ARGS];
  for (int32_t a = 0; a < prim->num_args; ++a) {
    void *handle = prim->arg_ids[a] == DNNL_ARG_SCRATCHPAD ? scratchpad : handles[a];
    dnnl_status_t s = dnnl_memory_set_data_handle(mems[a], handle);
    if (s != dnnl_success)
      return tsr_onednn_check(s, "dnnl_memory_set_data_handle");
    args[a].arg = prim->arg_ids[a];
    args[a].memory = mems[a];
  }
  dnnl_status_t s = dnnl_primitive_execute(prim->primitive, stream, prim->num_args, args);
  if (s != dnnl_success)
    return tsr_onednn_check(s, prim->impl);
  return tsr_onednn_check(dnnl_stream_wait(stream), "dnnl_stream_wait");
}

tsr_status tsr_onednn_prim_execute(const tsr_onednn_prim *prim, dnnl_stream_t stream,
                                   void *const *handles, void *scratchpad) {
  // The slots are the prim's only mutable state; their flags make each set
  // private to one call.
  tsr_onednn_prim *mutable_prim = (tsr_onednn_prim *)prim;
  for (int32_t s = 0; s < TSR_ONEDNN_SLOTS; ++s) {
    if (atomic_exchange_explicit(&mutable_prim->slot_busy[s], 1u, memory_order_acquire) == 0) {
      tsr_status status = tsr_onednn_prim_run(prim, stream, prim->slots[s], handles, scratchpad);
      atomic_store_explicit(&mutable_prim->slot_busy[s], 0u, memory_order_release);
      return status;
    }
  }
  // More concurrent callers than slots: correct, slower (oneDNN allocates).
  dnnl_engine_t engine = tsr_onednn_engine_get();
  dnnl_memory_t mems[TSR_ONEDNN_MAX_ARGS] = {0};
  tsr_status status = TSR_OK;
  for (int32_t a = 0; a < prim->num_args && status == TSR_OK; ++a) {
    status = tsr_dnnl_memory_create(prim->arg_mds[a], engine, DNNL_MEMORY_NONE, &mems[a]);
  }
  if (status == TSR_OK)
    status = tsr_onednn_prim_run(prim, stream, mems, handles, scratchpad);
  for (int32_t a = 0; a < prim->num_args; ++a) {
    if (mems[a] != NULL)
      dnnl_memory_destroy(mems[a]);
  }
  return status;
}
