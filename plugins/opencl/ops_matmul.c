// MATMUL on OpenCL, the GEMM engine it shares with the convolutions
// (ocl_matmul.h), and the family's table.
//
// A matmul is one launch of kernels/matmul.cl over (column tiles, row tiles,
// batch items). Shapes, strides and the broadcast batch dimensions travel in
// a constant array made at plan time, so one compiled program per (dtype,
// variant) serves every shape; alpha, beta, the activation and the bias flag
// are kernel arguments.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_matmul.h"
#include "tsr_cpu/cpu_kernels.h"  // struct tsr_plugin_plan

// --- the GEMM engine -------------------------------------------------------------

// The build options of |variant|'s program for |p| in |mode|.
static void gemm_options(const tsr_ocl_gemm_problem *p, int32_t mode, int32_t variant,
                         char *out_options, size_t size) {
  const tsr_ocl_gemm_variant *v = &tsr_ocl_gemm_variants[variant];
  const tsr_dtype_t dtype = p->elem_size == 8 ? TSR_FLOAT64 : TSR_FLOAT32;
  const int64_t limit = INT64_C(1) << 31;
  const int idx32 = p->m < limit && p->n < limit && p->k < limit;
  snprintf(out_options, size,
           "%s -DMODE=%d -DKERNEL=%d -DTM=%d -DTN=%d -DTK=%d -DWM=%d -DWN=%d -DIDX32=%d",
           tsr_ocl_type_option(dtype), (int)mode, (int)v->kernel, (int)v->tm, (int)v->tn,
           (int)v->tk, (int)v->wm, (int)v->wn, idx32);
}

static tsr_status gemm_kernel_build(tsr_ocl_device *device, const tsr_ocl_gemm_problem *p,
                                    int32_t mode, int32_t variant, tsr_ocl_kernel **out_kernel) {
  char options[160];
  gemm_options(p, mode, variant, options, sizeof(options));
  static const char *const names[] = {"gemm_direct", "gemm_tiled", "gemm_direct_vec",
                                      "gemm_packed"};
  return tsr_ocl_kernel_create(device, "matmul", options,
                               names[tsr_ocl_gemm_variants[variant].kernel], out_kernel);
}

// The packing kernels of a packed variant (the same program as its GEMM).
static tsr_status gemm_pack_kernels_build(tsr_ocl_device *device, const tsr_ocl_gemm_problem *p,
                                          int32_t mode, tsr_ocl_gemm *g) {
  char options[160];
  gemm_options(p, mode, g->variant, options, sizeof(options));
  TSR_OCL_RETURN_IF_ERROR(
      tsr_ocl_kernel_create(device, "matmul", options, "gemm_pack_a", &g->pack_a));
  return tsr_ocl_kernel_create(device, "matmul", options, "gemm_pack_b", &g->pack_b);
}

// Fills |g| for |variant|: launch shape, the split of a backward filter (into
// |geo|), and the constant array. Takes ownership of |kernel|.
static tsr_status gemm_finish(tsr_ocl_plan *plan, int32_t mode, int64_t *geo,
                              const tsr_ocl_gemm_problem *p, int32_t variant,
                              tsr_ocl_kernel *kernel, tsr_ocl_gemm *g) {
  const tsr_ocl_gemm_variant *v = &tsr_ocl_gemm_variants[variant];
  memset(g, 0, sizeof(*g));
  g->kernel = kernel;
  g->variant = variant;
  g->mode = mode;
  g->elem_size = p->elem_size;
  int64_t z = p->batch;
  if (mode == TSR_OCL_GEMM_CONV_BACKWARD_FILTER) {
    int64_t splits = 1, chunk = 1;
    tsr_ocl_gemm_split_depth(plan->device, p, v, &splits, &chunk);
    geo[TSR_OCL_GEO_SPLITS] = splits;
    geo[TSR_OCL_GEO_KCHUNK] = chunk;
    z = p->batch * splits;
  }
  g->local[0] = (size_t)v->wn;
  g->local[1] = (size_t)v->wm;
  g->local[2] = 1;
  g->global[0] = (size_t)((p->n + v->tn - 1) / v->tn) * (size_t)v->wn;
  g->global[1] = (size_t)((p->m + v->tm - 1) / v->tm) * (size_t)v->wm;
  g->global[2] = (size_t)(z > 0 ? z : 1);
  if (v->kernel == TSR_OCL_GEMM_KERNEL_PACKED) {
    // Row tiles walk fastest (gemm_packed); the packing passes run over
    // (k, item) and (column chunks of 64, k, item).
    const size_t col_tiles = g->global[0];
    g->global[0] = g->global[1];
    g->global[1] = col_tiles;
    const size_t items = (size_t)(p->batch > 0 ? p->batch : 1);
    g->mp = tsr_ocl_gemm_padded(p->m, v->tm);
    g->np = tsr_ocl_gemm_padded(p->n, v->tn);
    g->at_elems = (uint64_t)items * (uint64_t)p->k * (uint64_t)g->mp;
    g->workspace_bytes = tsr_ocl_gemm_packed_bytes(p, v);
    g->pack_a_global[0] = (size_t)(p->k > 0 ? p->k : 1);
    g->pack_a_global[1] = items;
    g->pack_b_global[0] = (size_t)((g->np + 63) / 64);
    g->pack_b_global[1] = (size_t)(p->k > 0 ? p->k : 1);
    g->pack_b_global[2] = items;
    TSR_OCL_RETURN_IF_ERROR(gemm_pack_kernels_build(plan->device, p, mode, g));
  }
  return tsr_ocl_const_buffer_create(plan->device, geo, TSR_OCL_GEO_COUNT * sizeof(int64_t),
                                     &g->geo);
}

void tsr_ocl_gemm_release(tsr_ocl_gemm *gemm) {
  tsr_ocl_kernel_destroy(gemm->kernel);
  tsr_ocl_kernel_destroy(gemm->pack_a);
  tsr_ocl_kernel_destroy(gemm->pack_b);
  if (gemm->geo != NULL)
    clReleaseMemObject(gemm->geo);
  gemm->kernel = gemm->pack_a = gemm->pack_b = NULL;
  gemm->geo = NULL;
}

// The packed variant's first passes: A and B packed into |ws| from byte
// |ws_off|, at element offsets *out_at and *out_bt of it.
static tsr_status gemm_pack(const tsr_ocl_exec *exec, const tsr_ocl_gemm *gemm, cl_mem a,
                            const cl_ulong *a_off, cl_mem b, const cl_ulong *b_off, cl_mem ws,
                            uint64_t ws_off, cl_ulong *out_at, cl_ulong *out_bt) {
  if (ws == NULL || gemm->workspace_bytes == 0) {
    return tsr_ocl_error(
        TSR_INVALID_ARGUMENT, "opencl: %s GEMM: needs %llu bytes of workspace, none was given",
        tsr_ocl_gemm_variants[gemm->variant].name, (unsigned long long)gemm->workspace_bytes);
  }
  *out_at = ws_off / gemm->elem_size;
  *out_bt = *out_at + gemm->at_elems;
  const tsr_ocl_arg pack_a[6] = {TSR_OCL_ARG(a),         TSR_OCL_ARG(*a_off),
                                 TSR_OCL_ARG(ws),        TSR_OCL_ARG(*out_at),
                                 TSR_OCL_ARG(gemm->geo), TSR_OCL_ARG(gemm->mp)};
  TSR_OCL_RETURN_IF_ERROR(
      tsr_ocl_launch(exec, gemm->pack_a, 2, gemm->pack_a_global, NULL, 6, pack_a));
  const tsr_ocl_arg pack_b[6] = {TSR_OCL_ARG(b),         TSR_OCL_ARG(*b_off),
                                 TSR_OCL_ARG(ws),        TSR_OCL_ARG(*out_bt),
                                 TSR_OCL_ARG(gemm->geo), TSR_OCL_ARG(gemm->np)};
  return tsr_ocl_launch(exec, gemm->pack_b, 3, gemm->pack_b_global, NULL, 6, pack_b);
}

tsr_status tsr_ocl_gemm_launch(const tsr_ocl_exec *exec, const tsr_ocl_gemm *gemm, cl_mem a,
                               uint64_t a_off, cl_mem b, uint64_t b_off, cl_mem c, uint64_t c_off,
                               cl_mem bias, uint64_t bias_off, double alpha, double beta,
                               int32_t activation, int32_t has_bias, cl_mem ws, uint64_t ws_off) {
  const cl_ulong offs[4] = {a_off, b_off, c_off, bias_off};
  cl_ulong at = 0, bt = 0;
  float alpha_f = (float)alpha, beta_f = (float)beta;
  const int f64 = gemm->elem_size == 8;
  // The operands: A and B (gemm_tiled, gemm_direct, gemm_direct_vec), or
  // their packed copies in the workspace (gemm_packed); then the common tail.
  tsr_ocl_arg args[14];
  int32_t n = 0;
  if (gemm->pack_a != NULL) {
    TSR_OCL_RETURN_IF_ERROR(gemm_pack(exec, gemm, a, &offs[0], b, &offs[1], ws, ws_off, &at, &bt));
    args[n++] = TSR_OCL_ARG(ws);
    args[n++] = TSR_OCL_ARG(at);
    args[n++] = TSR_OCL_ARG(bt);
    args[n++] = TSR_OCL_ARG(gemm->mp);
    args[n++] = TSR_OCL_ARG(gemm->np);
  } else {
    args[n++] = TSR_OCL_ARG(a);
    args[n++] = TSR_OCL_ARG(offs[0]);
    args[n++] = TSR_OCL_ARG(b);
    args[n++] = TSR_OCL_ARG(offs[1]);
  }
  args[n++] = TSR_OCL_ARG(c);
  args[n++] = TSR_OCL_ARG(offs[2]);
  args[n++] = TSR_OCL_ARG(bias);
  args[n++] = TSR_OCL_ARG(offs[3]);
  args[n++] = TSR_OCL_ARG(gemm->geo);
  args[n++] = f64 ? TSR_OCL_ARG(alpha) : TSR_OCL_ARG(alpha_f);
  args[n++] = f64 ? TSR_OCL_ARG(beta) : TSR_OCL_ARG(beta_f);
  args[n++] = TSR_OCL_ARG(activation);
  args[n++] = TSR_OCL_ARG(has_bias);
  return tsr_ocl_launch(exec, gemm->kernel, 3, gemm->global, gemm->local, n, args);
}

void tsr_ocl_gemm_engine_name(tsr_ocl_plan *plan, const char *what, const tsr_ocl_gemm *gemm,
                              int tuned) {
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s-%s%s", what,
           tsr_ocl_gemm_variants[gemm->variant].name,
           tuned == 1   ? "+tuned"
           : tuned == 2 ? "+reused"
                        : "");
}

// What the autotuner times: one launch of a candidate on scratch buffers.
typedef struct gemm_trial {
  tsr_ocl_device *device;
  const tsr_ocl_gemm *gemm;
  cl_mem mem[5];  // A, B, C, bias, workspace
} gemm_trial;

static tsr_status gemm_trial_run(void *arg, cl_command_queue queue) {
  const gemm_trial *t = arg;
  tsr_ocl_exec exec;
  memset(&exec, 0, sizeof(exec));
  exec.device = t->device;
  exec.queue = queue;
  return tsr_ocl_gemm_launch(&exec, t->gemm, t->mem[0], 0, t->mem[1], 0, t->mem[2], 0, t->mem[3], 0,
                             1.0, 0.0, 0, 0, t->mem[4], 0);
}

// The C scratch of a candidate: a backward filter split writes partial sums.
static uint64_t trial_c_bytes(const tsr_ocl_gemm *g, const int64_t *geo,
                              const tsr_ocl_gemm_problem *p, uint64_t c_bytes) {
  if (g->mode == TSR_OCL_GEMM_CONV_BACKWARD_FILTER && geo[TSR_OCL_GEO_SPLITS] > 1) {
    return (uint64_t)geo[TSR_OCL_GEO_SPLITS] * (uint64_t)p->batch * (uint64_t)p->m *
           (uint64_t)p->n * p->elem_size;
  }
  return c_bytes;
}

// Times every candidate in |order| and returns the fastest in *out_best.
static tsr_status gemm_autotune(tsr_ocl_plan *plan, int32_t mode, int64_t *geo,
                                const tsr_ocl_gemm_problem *p, const tsr_ocl_gemm_extents *ext,
                                const int32_t *order, int32_t count, int32_t *out_best) {
  tsr_ocl_device *device = plan->device;
  tsr_ocl_buffer *scratch[5] = {NULL, NULL, NULL, NULL, NULL};
  cl_mem mem[5] = {NULL, NULL, NULL, NULL, NULL};
  tsr_status status = TSR_OK;
  double best_ms = 0.0;
  *out_best = -1;
  for (int i = 0; i < 3 && status == TSR_OK; ++i) {
    if (i == 2)
      continue;  // C depends on the candidate (split partial sums)
    status =
        tsr_ocl_scratch_alloc(device, ext->bytes[i] > 0 ? ext->bytes[i] : 64, &mem[i], &scratch[i]);
  }
  uint64_t c_capacity = 0, ws_capacity = 0;
  for (int32_t c = 0; c < count && status == TSR_OK; ++c) {
    tsr_ocl_kernel *kernel = NULL;
    if (gemm_kernel_build(device, p, mode, order[c], &kernel) != TSR_OK)
      continue;
    const tsr_ocl_gemm_variant *v = &tsr_ocl_gemm_variants[order[c]];
    if (kernel->max_work_group_size < (size_t)(v->wm * v->wn)) {
      tsr_ocl_kernel_destroy(kernel);
      continue;
    }
    int64_t trial_geo[TSR_OCL_GEO_COUNT];
    memcpy(trial_geo, geo, sizeof(trial_geo));
    tsr_ocl_gemm g;
    status = gemm_finish(plan, mode, trial_geo, p, order[c], kernel, &g);
    if (status != TSR_OK) {
      tsr_ocl_gemm_release(&g);
      break;
    }
    const uint64_t c_bytes = trial_c_bytes(&g, trial_geo, p, ext->bytes[2]);
    if (c_bytes > c_capacity) {
      tsr_ocl_scratch_free(scratch[2]);
      scratch[2] = NULL;
      mem[2] = NULL;
      status = tsr_ocl_scratch_alloc(device, c_bytes > 0 ? c_bytes : 64, &mem[2], &scratch[2]);
      c_capacity = status == TSR_OK ? c_bytes : 0;
    }
    if (status == TSR_OK && g.workspace_bytes > ws_capacity) {
      tsr_ocl_scratch_free(scratch[4]);
      scratch[4] = NULL;
      mem[4] = NULL;
      status = tsr_ocl_scratch_alloc(device, g.workspace_bytes, &mem[4], &scratch[4]);
      ws_capacity = status == TSR_OK ? g.workspace_bytes : 0;
    }
    double ms = 0.0;
    if (status == TSR_OK) {
      gemm_trial trial = {device, &g, {mem[0], mem[1], mem[2], mem[3], mem[4]}};
      status = tsr_ocl_time(device, gemm_trial_run, &trial, 3, &ms);
    }
    tsr_ocl_gemm_release(&g);
    if (status == TSR_OK) {
      tsr_ocl_log(TSR_LOG_DEBUG, "opencl: autotune %s: %s %.3f ms", tsr_op_name(plan->op), v->name,
                  ms);
    }
    if (status == TSR_OK && (*out_best < 0 || ms < best_ms)) {
      *out_best = order[c];
      best_ms = ms;
    }
  }
  for (int i = 0; i < 5; ++i) tsr_ocl_scratch_free(scratch[i]);
  if (status == TSR_OK && *out_best < 0) {
    status = tsr_ocl_error(TSR_UNSUPPORTED, "opencl: %s: no GEMM variant builds on %s",
                           tsr_op_name(plan->op), device->name);
  }
  return status;
}

tsr_status tsr_ocl_gemm_create(tsr_ocl_plan *plan, int32_t mode, int64_t geo[TSR_OCL_GEO_COUNT],
                               const tsr_ocl_gemm_problem *problem,
                               const tsr_ocl_gemm_extents *extents, const char *tune_key,
                               tsr_ocl_gemm *out_gemm, int *out_tuned) {
  memset(out_gemm, 0, sizeof(*out_gemm));
  *out_tuned = 0;
  tsr_ocl_device *device = plan->device;
  int32_t order[TSR_OCL_GEMM_VARIANT_COUNT];
  int32_t count = tsr_ocl_gemm_candidates(device, problem, order);
  if (count == 0) {
    return tsr_ocl_error(TSR_UNSUPPORTED,
                         "opencl: %s: no GEMM variant fits %s (max work-group size %zu)",
                         tsr_op_name(plan->op), device->name, device->max_work_group_size);
  }
  // TSR_OPENCL_GEMM_VARIANT=<name> forces a variant (tests, benchmarks).
  const char *forced = getenv("TSR_OPENCL_GEMM_VARIANT");
  if (forced != NULL && forced[0] != '\0') {
    int32_t found = -1;
    for (int32_t i = 0; i < count; ++i) {
      if (strcmp(tsr_ocl_gemm_variants[order[i]].name, forced) == 0)
        found = order[i];
    }
    if (found < 0) {
      return tsr_ocl_error(TSR_UNSUPPORTED,
                           "opencl: %s: TSR_OPENCL_GEMM_VARIANT=%s names no variant that fits %s",
                           tsr_op_name(plan->op), forced, device->name);
    }
    order[0] = found;
    count = 1;
  }
  // Autotuning makes the choice depend on timing, so a plan that must be
  // bit-reproducible keeps the choice by device properties.
  const int tune = plan->autotune && count > 1 && problem->m > 0 && problem->n > 0 &&
                   problem->batch > 0 && !(plan->flags & TSR_PLAN_REQUIRE_DETERMINISM);
  if (tune) {
    int32_t choice = -1;
    int found = tsr_ocl_tune_lookup(device, tune_key, &choice);
    int listed = 0;
    for (int32_t i = 0; found && i < count; ++i) listed |= order[i] == choice;
    if (found && listed) {
      order[0] = choice;
      count = 1;
      *out_tuned = 2;
    } else {
      TSR_OCL_RETURN_IF_ERROR(
          gemm_autotune(plan, mode, geo, problem, extents, order, count, &choice));
      tsr_ocl_tune_store(device, tune_key, choice);
      order[0] = choice;
      count = 1;
      *out_tuned = 1;
    }
  }
  // The first candidate whose kernel builds and admits its work-group.
  tsr_status status = TSR_OK;
  for (int32_t c = 0; c < count; ++c) {
    tsr_ocl_kernel *kernel = NULL;
    status = gemm_kernel_build(device, problem, mode, order[c], &kernel);
    if (status != TSR_OK)
      continue;
    const tsr_ocl_gemm_variant *v = &tsr_ocl_gemm_variants[order[c]];
    if (kernel->max_work_group_size < (size_t)(v->wm * v->wn)) {
      tsr_ocl_kernel_destroy(kernel);
      status = tsr_ocl_error(
          TSR_UNSUPPORTED, "opencl: %s: kernel %s admits work-groups of %zu items, not %d",
          tsr_op_name(plan->op), v->name, kernel->max_work_group_size, (int)(v->wm * v->wn));
      continue;
    }
    status = gemm_finish(plan, mode, geo, problem, order[c], kernel, out_gemm);
    if (status != TSR_OK)
      tsr_ocl_gemm_release(out_gemm);
    return status;
  }
  return status;
}

// --- MATMUL ----------------------------------------------------------------------

typedef struct matmul_state {
  tsr_ocl_gemm gemm;
  double alpha, beta;
  int32_t activation;
  int32_t has_bias;
} matmul_state;
_Static_assert(sizeof(matmul_state) <= TSR_OCL_PLAN_STATE_BYTES, "matmul state fits the plan");

static tsr_status matmul_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  const tsr_cpu_matmul_plan *mm = &plan->ref->u.matmul;
  matmul_state *st = (matmul_state *)plan->state;
  memset(st, 0, sizeof(*st));
  st->alpha = mm->alpha;
  st->beta = mm->beta;
  st->activation = mm->activation;
  st->has_bias = mm->has_bias;
  int64_t geo[TSR_OCL_GEO_COUNT];
  memset(geo, 0, sizeof(geo));
  geo[TSR_OCL_GEO_M] = mm->m;
  geo[TSR_OCL_GEO_N] = mm->n;
  geo[TSR_OCL_GEO_K] = mm->k;
  geo[TSR_OCL_GEO_A_RS] = mm->a_rs;
  geo[TSR_OCL_GEO_A_CS] = mm->a_cs;
  geo[TSR_OCL_GEO_B_RS] = mm->b_rs;
  geo[TSR_OCL_GEO_B_CS] = mm->b_cs;
  geo[TSR_OCL_GEO_C_RS] = mm->c_rs;
  geo[TSR_OCL_GEO_C_CS] = mm->c_cs;
  geo[TSR_OCL_GEO_BIAS_RS] = mm->has_bias ? mm->bias_rs : 0;
  geo[TSR_OCL_GEO_BIAS_CS] = mm->has_bias ? mm->bias_cs : 0;
  // Work-items load along the unit-stride dimension (coalesced); a
  // transposed operand (unit stride across rows) flips the walk.
  const int a_kfast = !(mm->a_rs == 1 && mm->a_cs != 1);
  const int b_nfast = !(mm->b_rs == 1 && mm->b_cs != 1);
  geo[TSR_OCL_GEO_A_KFAST] = a_kfast;
  geo[TSR_OCL_GEO_B_NFAST] = b_nfast;
  geo[TSR_OCL_GEO_BATCH_NDIM] = mm->batch_ndim;
  geo[TSR_OCL_GEO_SPLITS] = 1;
  geo[TSR_OCL_GEO_KCHUNK] = mm->k;
  for (int32_t d = 0; d < mm->batch_ndim; ++d) {
    int64_t *bd = &geo[TSR_OCL_GEO_BATCH + 5 * d];
    bd[0] = mm->batch_sizes[d];
    bd[1] = mm->a_batch_strides[d];
    bd[2] = mm->b_batch_strides[d];
    bd[3] = mm->c_batch_strides[d];
    bd[4] = mm->has_bias ? mm->bias_batch_strides[d] : 0;
  }
  const uint32_t elem = mm->dtype == TSR_FLOAT64 ? 8 : 4;
  const tsr_ocl_gemm_problem problem = {mm->m, mm->n, mm->k, mm->batch_count, elem};
  tsr_ocl_gemm_extents ext;
  for (int i = 0; i < 4; ++i) ext.bytes[i] = 0;
  for (int i = 0; i < plan->ref->num_inputs && i < 3; ++i) {
    ext.bytes[i == 2 ? 3 : i] = plan->ref->operands[i].extent_bytes;
  }
  ext.bytes[2] = plan->ref->operands[plan->ref->num_inputs].extent_bytes;
  char key[160];
  snprintf(key, sizeof(key), "matmul %s b%lld m%lld n%lld k%lld %s%s", elem == 8 ? "f64" : "f32",
           (long long)mm->batch_count, (long long)mm->m, (long long)mm->n, (long long)mm->k,
           a_kfast ? "a:k" : "a:m", b_nfast ? "b:n" : "b:k");
  int tuned = 0;
  TSR_OCL_RETURN_IF_ERROR(
      tsr_ocl_gemm_create(plan, TSR_OCL_GEMM_MATMUL, geo, &problem, &ext, key, &st->gemm, &tuned));
  tsr_ocl_gemm_engine_name(plan, "matmul", &st->gemm, tuned);
  plan->workspace_bytes = st->gemm.workspace_bytes;
  // Every variant sums k in order with no atomics; only a timed choice can
  // differ between runs.
  plan->info_flags = tuned ? 0 : TSR_PLAN_INFO_DETERMINISTIC;
  return TSR_OK;
}

static tsr_status matmul_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const matmul_state *st = (const matmul_state *)plan->state;
  const int32_t out = exec->num_inputs;
  if (exec->mem[out] == NULL)
    return TSR_OK;  // empty output
  return tsr_ocl_gemm_launch(
      exec, &st->gemm, exec->mem[0], exec->offset[0], exec->mem[1], exec->offset[1], exec->mem[out],
      exec->offset[out], st->has_bias ? exec->mem[2] : NULL, st->has_bias ? exec->offset[2] : 0,
      st->alpha, st->beta, st->activation, st->has_bias, exec->workspace, exec->workspace_offset);
}

static void matmul_fini(tsr_ocl_plan *plan) {
  matmul_state *st = (matmul_state *)plan->state;
  tsr_ocl_gemm_release(&st->gemm);
}

static const tsr_ocl_op_impl k_matmul_impl = {NULL, matmul_init, matmul_execute, matmul_fini};

const tsr_ocl_op_impl *const tsr_ocl_matmul_ops[TSR_OP_COUNT] = {
    [TSR_OP_MATMUL] = &k_matmul_impl,
    [TSR_OP_CONV2D] = &tsr_ocl_conv2d_impl,
    [TSR_OP_CONV2D_BACKWARD_DATA] = &tsr_ocl_conv2d_backward_data_impl,
    [TSR_OP_CONV2D_BACKWARD_FILTER] = &tsr_ocl_conv2d_backward_filter_impl,
    [TSR_OP_POOL2D] = &tsr_ocl_pool2d_impl,
    [TSR_OP_POOL2D_BACKWARD] = &tsr_ocl_pool2d_backward_impl,
};
