// MATMUL: validation and the blocking and threading decisions; the GEMM
// itself is in gemm_impl.h.
#include <string.h>

#include "host.h"
#include "plan.h"
#include "signature.h"

// Below this many multiply-adds per item, packing costs more than it saves.
#define TSR_CPU_MATMUL_NAIVE_MAX_MACS 4096
// Below this many flops in all, a pool hand-off is not worth it: the work is
// too short on one core (docs/performance-log.md, "Measurements behind the code's
// decisions").
#define TSR_CPU_MATMUL_PARALLEL_MIN_FLOPS 4000000.0
// A GEMV reading at least this much of B (256 KiB of float32) is split
// across threads: it is bound by the bandwidth of one core, not by flops.
#define TSR_CPU_GEMV_PARALLEL_MIN_MACS 65536.0

static tsr_status tsr_cpu_matmul_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                         char *workspace) {
  const tsr_cpu_matmul_plan *mm = &plan->u.matmul;
  switch (mm->dtype) {
    case TSR_FLOAT32: return tsr_cpu_gemm_f32_execute(mm, ptrs, workspace);
    case TSR_FLOAT64: return tsr_cpu_gemm_f64_execute(mm, ptrs, workspace);
    case TSR_BFLOAT16: return tsr_cpu_gemm_bf16_execute(mm, ptrs, workspace);
    default: return tsr_cpu_gemm_f16_execute(mm, ptrs, workspace);
  }
}

static int64_t tsr_cpu_div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t tsr_cpu_round_up(int64_t a, int64_t b) { return tsr_cpu_div_up(a, b) * b; }
static uint64_t tsr_cpu_round_up_64(uint64_t bytes) { return (bytes + 63) & ~63ull; }

// Checks shapes: a [..., M, K], b [..., K, N], out [..., M, N], batch
// dimensions broadcast; bias of out's rank broadcasting to it.
static tsr_status tsr_cpu_matmul_shapes_check(const tsr_op_signature *signature,
                                              const tsr_plugin_plan *plan, int has_bias) {
  const tsr_cpu_operand *a = &plan->operands[0];
  const tsr_cpu_operand *b = &plan->operands[1];
  const tsr_cpu_operand *out = &plan->operands[plan->num_inputs];
  const int32_t r = out->rank;
  if (r < 2) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "matmul: out rank %d is below 2", (int)r);
  }
  if (a->rank != r || b->rank != r) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "matmul: a rank %d and b rank %d must equal out rank %d",
                             (int)a->rank, (int)b->rank, (int)r);
  }
  const int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1];
  if (b->sizes[r - 2] != k) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "matmul: b sizes[%d] is %lld but a's inner size K is %lld", (int)r - 2,
                             (long long)b->sizes[r - 2], (long long)k);
  }
  if (out->sizes[r - 2] != m || out->sizes[r - 1] != n) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "matmul: out is [..., %lld, %lld], expected [..., M=%lld, N=%lld]",
                             (long long)out->sizes[r - 2], (long long)out->sizes[r - 1],
                             (long long)m, (long long)n);
  }
  for (int32_t d = 0; d < r - 2; ++d) {
    const int64_t as = a->sizes[d], bs = b->sizes[d], os = out->sizes[d];
    const int64_t want = as != 1 ? as : bs;
    if ((as != 1 && bs != 1 && as != bs) || os != want) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "matmul: batch dimension %d: a %lld, b %lld, out %lld do not "
                               "broadcast",
                               (int)d, (long long)as, (long long)bs, (long long)os);
    }
  }
  if (has_bias) {
    const tsr_cpu_operand *bias = &plan->operands[2];
    tsr_status status = tsr_cpu_broadcast_check(signature, bias, out);
    if (status != TSR_OK) return status;
  }
  return TSR_OK;
}

// Fills the strides and blocking of |mm| from the checked operands.
static void tsr_cpu_matmul_layout_set(tsr_cpu_matmul_plan *mm, const tsr_plugin_plan *plan) {
  const tsr_cpu_operand *a = &plan->operands[0];
  const tsr_cpu_operand *b = &plan->operands[1];
  const tsr_cpu_operand *bias = mm->has_bias ? &plan->operands[2] : NULL;
  const tsr_cpu_operand *out = &plan->operands[plan->num_inputs];
  const int32_t r = out->rank;
  mm->m = a->sizes[r - 2];
  mm->k = a->sizes[r - 1];
  mm->n = b->sizes[r - 1];
  mm->a_rs = a->strides[r - 2];
  mm->a_cs = a->strides[r - 1];
  mm->b_rs = b->strides[r - 2];
  mm->b_cs = b->strides[r - 1];
  mm->c_rs = out->strides[r - 2];
  mm->c_cs = out->strides[r - 1];
  if (bias != NULL) {
    mm->bias_rs = bias->sizes[r - 2] == 1 ? 0 : bias->strides[r - 2];
    mm->bias_cs = bias->sizes[r - 1] == 1 ? 0 : bias->strides[r - 1];
  }
  mm->batch_ndim = r - 2;
  mm->batch_count = 1;
  for (int32_t d = 0; d < r - 2; ++d) {
    mm->batch_sizes[d] = out->sizes[d];
    mm->batch_count *= out->sizes[d];
    mm->a_batch_strides[d] = a->sizes[d] == 1 ? 0 : a->strides[d];
    mm->b_batch_strides[d] = b->sizes[d] == 1 ? 0 : b->strides[d];
    mm->c_batch_strides[d] = out->strides[d];
    if (bias != NULL) mm->bias_batch_strides[d] = bias->sizes[d] == 1 ? 0 : bias->strides[d];
  }
}

// SPLIT: how |threads| blocks of C divide its rows and columns. Every
// thread packs the A rows and the B columns of its own block, so the split
// with the least packing per thread wins: rows split in |parts| cost
// M*K/parts of A plus all K*N of B, and the other way round. A B with
// strided columns (weight^T) packs through transposes, at about twice the
// cost per element. Sets the block's rows and columns in *m and *n.
static void tsr_cpu_matmul_split_set(tsr_cpu_matmul_plan *mm, const tsr_cpu_gemm_geometry *g,
                                     int32_t threads, int64_t *m, int64_t *n) {
  const double a_cost = (double)mm->m * (double)mm->k * (mm->a_cs == 1 || mm->a_rs == 1 ? 1 : 2);
  const double b_cost = (double)mm->k * (double)mm->n * (mm->b_cs == 1 ? 1 : 2);
  const int64_t row_slivers = tsr_cpu_div_up(mm->m, g->mr);
  const int64_t col_slivers = tsr_cpu_div_up(mm->n, g->nr);
  double best = -1.0;
  for (int64_t pm = 1; pm <= threads; ++pm) {
    if (threads % pm != 0) continue;
    const int64_t pn = threads / pm;
    if (pm > row_slivers || pn > col_slivers) continue;
    const double cost = a_cost / (double)pm + b_cost / (double)pn;
    if (best < 0.0 || cost < best) {
      best = cost;
      mm->split_m = pm;
      mm->split_n = pn;
    }
  }
  if (best < 0.0) {
    // Fewer slivers than threads either way: as many row blocks as slivers.
    mm->split_m = row_slivers < threads ? row_slivers : threads;
    mm->split_n = 1;
  }
  mm->m_part = tsr_cpu_div_up(row_slivers, mm->split_m) * g->mr;
  mm->n_part = tsr_cpu_div_up(col_slivers, mm->split_n) * g->nr;
  *m = mm->m_part < mm->m ? mm->m_part : mm->m;
  *n = mm->n_part < mm->n ? mm->n_part : mm->n;
}

// Chooses the mode and the blocking, and the workspace they need.
static uint64_t tsr_cpu_matmul_blocking_set(tsr_cpu_matmul_plan *mm) {
  // The half types pack and compute in float32, with float32's geometry.
  const tsr_cpu_gemm_geometry *g =
      mm->dtype == TSR_FLOAT64 ? &tsr_cpu_gemm_f64_geometry : &tsr_cpu_gemm_f32_geometry;
  const uint64_t elem = mm->dtype == TSR_FLOAT64 ? 8 : 4;
  int64_t kc_max = g->kc, mc_max = g->mc_max, nc_max = g->nc_max;
  if (mm->dtype == TSR_BFLOAT16 || mm->dtype == TSR_FLOAT16) {
    // One depth panel, so every element of C is summed whole in float32 and
    // rounded once. A and B panels then grow with K: shrink mc and nc to
    // keep them within 4x float32's (a speed trade-off only).
    kc_max = mm->k > 0 ? mm->k : 1;
    const int64_t mc_fit = g->mc_max * g->kc * 4 / kc_max / g->mr * g->mr;
    const int64_t nc_fit = g->nc_max * g->kc * 4 / kc_max / g->nr * g->nr;
    mc_max = mc_fit < g->mr ? g->mr : mc_fit > g->mc_max ? g->mc_max : mc_fit;
    nc_max = nc_fit < g->nr ? g->nr : nc_fit > g->nc_max ? g->nc_max : nc_fit;
  }
  const double macs = (double)mm->m * (double)mm->n * (double)mm->k;
  const int32_t threads = tsr_cpu_thread_count_get();
  const double flops = 2.0 * macs * (double)mm->batch_count;
  if (mm->m == 1 && mm->batch_count == 1 && mm->b_cs == 1 &&
      macs > TSR_CPU_MATMUL_NAIVE_MAX_MACS) {
    // Packing would copy all of B to use each element once: stream it.
    mm->mode = TSR_CPU_MATMUL_GEMV;
    mm->gemv_parallel = threads > 1 && macs >= TSR_CPU_GEMV_PARALLEL_MIN_MACS;
    mm->gemv_columns = TSR_CPU_GEMV_COLUMNS;
    // B's bytes as stored (2 each for the half types, which compute in float32).
    if (macs * (double)tsr_dtype_size(mm->dtype) >= TSR_CPU_GEMV_STREAM_MIN_BYTES) {
      const int64_t share = (mm->n + threads - 1) / threads;
      const int64_t columns = (share + 63) / 64 * 64;
      mm->gemv_columns = columns > TSR_CPU_GEMV_STREAM_COLUMNS ? TSR_CPU_GEMV_STREAM_COLUMNS
                         : columns < TSR_CPU_GEMV_COLUMNS   ? TSR_CPU_GEMV_COLUMNS
                                                            : columns;
    }
    return 0;
  }
  if (macs <= TSR_CPU_MATMUL_NAIVE_MAX_MACS) {
    // Many tiny items (attention heads, per-sample products): spread the
    // items, each still computed whole by one thread.
    mm->mode = TSR_CPU_MATMUL_NAIVE;
    if (threads > 1 && flops >= TSR_CPU_MATMUL_PARALLEL_MIN_FLOPS) {
      mm->naive_grain = (int64_t)(TSR_CPU_MATMUL_PARALLEL_MIN_FLOPS / 4 / (2.0 * macs + 1)) + 1;
    }
    return 0;
  }
  if (threads == 1 || flops < TSR_CPU_MATMUL_PARALLEL_MIN_FLOPS) {
    mm->mode = TSR_CPU_MATMUL_SERIAL;
  } else if (mm->batch_count % threads == 0 || mm->batch_count >= 4 * threads) {
    mm->mode = TSR_CPU_MATMUL_BATCHED;
  } else {
    mm->mode = TSR_CPU_MATMUL_SPLIT;
  }
  // Depth panels of even depth: K = 784 in panels of 196, not 256 + 256 +
  // 256 + 16, whose last would fold a nearly empty panel into C.
  mm->kc = mm->k < kc_max ? mm->k : tsr_cpu_div_up(mm->k, tsr_cpu_div_up(mm->k, kc_max));
  if (mm->kc < 1) mm->kc = 1;
  int64_t m = mm->m, n = mm->n;
  if (mm->mode == TSR_CPU_MATMUL_SPLIT) tsr_cpu_matmul_split_set(mm, g, threads, &m, &n);
  mm->nc = tsr_cpu_round_up(n, g->nr);
  if (mm->nc > nc_max) mm->nc = nc_max;
  mm->mc = tsr_cpu_round_up(tsr_cpu_div_up(m, tsr_cpu_div_up(m, mc_max)), g->mr);

  const uint64_t a_bytes = tsr_cpu_round_up_64((uint64_t)mm->mc * (uint64_t)mm->kc * elem);
  const uint64_t b_bytes = tsr_cpu_round_up_64((uint64_t)mm->kc * (uint64_t)mm->nc * elem);
  mm->slots = mm->mode == TSR_CPU_MATMUL_SERIAL ? 1 : threads;
  mm->slot_bytes = a_bytes + b_bytes;
  // 64 bytes of slack let execution round an arbitrary workspace offset up.
  return (uint64_t)mm->slots * mm->slot_bytes + 64;
}

tsr_status tsr_cpu_matmul_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  const tsr_matmul_attrs *attrs = signature->attrs;
  if (attrs != NULL && attrs->struct_size < sizeof(size_t) + sizeof(double)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "matmul: attrs struct_size %zu is too small",
                             attrs->struct_size);
  }
  // NULL attrs, or fields an older struct lacks, take the catalogue defaults.
  double alpha = 1.0, beta = 0.0;
  int32_t activation = TSR_ACTIVATION_NONE;
  int has_bias = 0;
  if (attrs != NULL) {
    alpha = attrs->alpha;
    if (TSR_ABI_COVERS(attrs, tsr_matmul_attrs, beta)) beta = attrs->beta;
    if (TSR_ABI_COVERS(attrs, tsr_matmul_attrs, activation)) activation = attrs->activation;
    if (TSR_ABI_COVERS(attrs, tsr_matmul_attrs, has_bias)) has_bias = attrs->has_bias != 0;
  }
  if (activation < 0 || activation >= TSR_ACTIVATION_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(activation < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "matmul: activation %d is unknown",
                             (int)activation);
  }
  static const char *const with_bias[] = {"a", "b", "bias", "out"};
  static const char *const without_bias[] = {"a", "b", "out"};
  tsr_status status = has_bias ? tsr_cpu_operands_init(signature, plan, 3, 3, 1, with_bias)
                               : tsr_cpu_operands_init(signature, plan, 2, 2, 1, without_bias);
  if (status != TSR_OK) return status;
  const tsr_cpu_operand *a = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[plan->num_inputs];
  status = tsr_cpu_dtype_check(signature, a, TSR_CPU_DTYPES_FLOAT, "matmul takes float");
  for (int32_t i = 1; i < plan->num_inputs + 1 && status == TSR_OK; ++i) {
    status = tsr_cpu_same_dtype_check(signature, a, &plan->operands[i]);
  }
  if (status == TSR_OK) status = tsr_cpu_matmul_shapes_check(signature, plan, has_bias);
  if (status == TSR_OK) status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;

  tsr_cpu_matmul_plan *mm = &plan->u.matmul;
  memset(mm, 0, sizeof(*mm));
  mm->dtype = a->dtype;
  mm->alpha = alpha;
  mm->beta = beta;
  mm->activation = activation;
  mm->has_bias = has_bias;
  tsr_cpu_matmul_layout_set(mm, plan);
  plan->workspace_bytes = tsr_cpu_matmul_blocking_set(mm);
  plan->execute = tsr_cpu_matmul_execute;
  plan->engine = mm->mode == TSR_CPU_MATMUL_NAIVE  ? "ref:naive-gemm"
                 : mm->mode == TSR_CPU_MATMUL_GEMV ? "ref:gemv"
                                                    : "ref:blocked-gemm";
  return TSR_OK;
}
