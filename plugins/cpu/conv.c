// CONV2D, CONV2D_BACKWARD_DATA and CONV2D_BACKWARD_FILTER: validation, and
// the tiling, threading and workspace decisions. The kernels are in
// conv_impl.h (instantiated by conv_f32.c and conv_f64.c).
#include <string.h>

#include "conv.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

#define TSR_CPU_CONV_DTYPES                                                  \
  (TSR_DTYPE_BIT(TSR_FLOAT32) | TSR_DTYPE_BIT(TSR_FLOAT64) |                 \
   TSR_DTYPE_BIT(TSR_BFLOAT16) | TSR_DTYPE_BIT(TSR_FLOAT16))
// One tile of the im2col matrix: half of this machine's 512 KiB L2, so the
// GEMM's packed panels fit beside it.
#define TSR_CPU_CONV_TILE_BYTES (256 * 1024)
// Fixed batch tiles of the filter gradient: the partial sums summed in order.
#define TSR_CPU_CONV_FILTER_TILES 8
// ... unless their partial sums would take more than this.
#define TSR_CPU_CONV_FILTER_PARTIAL_BYTES (64ull << 20)
// As matmul.c: below this many multiply-adds per GEMM, packing costs more
// than it saves; below this many flops in all, a pool hand-off is not worth it.
#define TSR_CPU_CONV_NAIVE_MAX_MACS 4096
#define TSR_CPU_CONV_PARALLEL_MIN_FLOPS 4000000.0
// The direct one-channel filter gradient's im2col tile: this machine's 32 KiB
// L1. A whole 28x28 image (24 KiB for 3x3) is one tile, so the channels of a
// block stream their dy planes in memory order: with 16 KiB tiles (two per
// image) the jumps between planes left the loads waiting on L3, and the
// CNN's first layer ran slower (docs/performance.md, "Measurements behind the
// code's decisions").
#define TSR_CPU_CONV_C1_TILE_BYTES (32 * 1024)
// The multi-channel direct filter gradient's dy tile, transposed, at most
// this size for all output channels (rounded up to the register tile): the
// whole 11x11 image of the CNN's second layer (64 channels, 31 KB).
#define TSR_CPU_CONV_FD_TILE_BYTES (48 * 1024)
// Positions per step of its float32 sums, from as many images as fit.
#define TSR_CPU_CONV_FD_STEP_POSITIONS 256

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t a, int64_t b) { return div_up(a, b) * b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static tsr_status tsr_cpu_conv_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                       char *workspace) {
  const tsr_cpu_conv_plan *cv = &plan->u.conv;
  if (cv->filter_c1) return tsr_cpu_conv_filter_c1_execute(cv, ptrs, workspace);
  if (cv->filter_direct) return tsr_cpu_conv_filter_direct_execute(cv, ptrs, workspace);
  if (cv->fwd_direct) return tsr_cpu_conv_fwd_direct_execute(cv, ptrs, workspace);
  if (cv->fwd_c1) return tsr_cpu_conv_fwd_c1_execute(cv, ptrs, workspace);
  if (cv->dtype == TSR_FLOAT64) return tsr_cpu_conv_f64_execute(cv, ptrs, workspace);
  return tsr_cpu_conv_f32_execute(cv, ptrs, workspace);
}

// Reads the attributes, defaults for NULL or for fields beyond struct_size,
// and checks their ranges.
static tsr_status tsr_cpu_conv_attrs_read(const tsr_op_signature *signature,
                                          tsr_conv2d_attrs *out) {
  const char *op = tsr_op_name(signature->op);
  const tsr_conv2d_attrs *a = signature->attrs;
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->stride[0] = out->stride[1] = 1;
  out->dilation[0] = out->dilation[1] = 1;
  out->groups = 1;
  out->activation = TSR_ACTIVATION_NONE;
  if (a != NULL) {
    if (a->struct_size < sizeof(size_t)) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: attrs struct_size %zu is too small", op,
                               a->struct_size);
    }
    if (TSR_ABI_COVERS(a, tsr_conv2d_attrs, stride)) memcpy(out->stride, a->stride, sizeof(a->stride));
    if (TSR_ABI_COVERS(a, tsr_conv2d_attrs, pad_before)) {
      memcpy(out->pad_before, a->pad_before, sizeof(a->pad_before));
    }
    if (TSR_ABI_COVERS(a, tsr_conv2d_attrs, pad_after)) {
      memcpy(out->pad_after, a->pad_after, sizeof(a->pad_after));
    }
    if (TSR_ABI_COVERS(a, tsr_conv2d_attrs, dilation)) {
      memcpy(out->dilation, a->dilation, sizeof(a->dilation));
    }
    if (TSR_ABI_COVERS(a, tsr_conv2d_attrs, groups)) out->groups = a->groups;
    if (TSR_ABI_COVERS(a, tsr_conv2d_attrs, activation)) out->activation = a->activation;
    if (TSR_ABI_COVERS(a, tsr_conv2d_attrs, has_bias)) out->has_bias = a->has_bias != 0;
  }
  for (int d = 0; d < 2; ++d) {
    if (out->stride[d] < 1) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: stride[%d] is %lld", op, d,
                               (long long)out->stride[d]);
    }
    if (out->dilation[d] < 1) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: dilation[%d] is %lld", op, d,
                               (long long)out->dilation[d]);
    }
    if (out->pad_before[d] < 0 || out->pad_after[d] < 0) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s[%d] is %lld", op,
                               out->pad_before[d] < 0 ? "pad_before" : "pad_after", d,
                               (long long)(out->pad_before[d] < 0 ? out->pad_before[d]
                                                                  : out->pad_after[d]));
    }
  }
  if (out->groups < 1) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: groups is %lld", op,
                             (long long)out->groups);
  }
  if (out->activation < 0 || out->activation >= TSR_ACTIVATION_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(out->activation < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "%s: activation %d is unknown", op,
                             (int)out->activation);
  }
  if (signature->op != TSR_OP_CONV2D && out->activation != TSR_ACTIVATION_NONE) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: activation is %d; the backward ops take NONE (0) only", op,
                             (int)out->activation);
  }
  return TSR_OK;
}

static tsr_status tsr_cpu_conv_rank_check(const char *op, const tsr_cpu_operand *t,
                                          int32_t rank) {
  if (t->rank != rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s rank is %d, expected %d", op, t->name,
                             (int)t->rank, (int)rank);
  }
  return TSR_OK;
}

static tsr_status tsr_cpu_conv_size_check(const char *op, const tsr_cpu_operand *t, int32_t d,
                                          int64_t want, const char *what) {
  if (t->sizes[d] != want) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s sizes[%d] is %lld, expected %lld (%s)",
                             op, t->name, (int)d, (long long)t->sizes[d], (long long)want, what);
  }
  return TSR_OK;
}

// Checks the shapes of the x-role (x or dx), w-role (w or dw), y-role (y or
// dy) and optional bias-role operands against each other and the formula
// for OH and OW, and fills the problem in |cv|.
static tsr_status tsr_cpu_conv_shapes_check(const char *op, const tsr_conv2d_attrs *attrs,
                                            const tsr_cpu_operand *x, const tsr_cpu_operand *w,
                                            const tsr_cpu_operand *y,
                                            const tsr_cpu_operand *bias, tsr_cpu_conv_plan *cv) {
  tsr_status status = tsr_cpu_conv_rank_check(op, x, 4);
  if (status == TSR_OK) status = tsr_cpu_conv_rank_check(op, w, 4);
  if (status == TSR_OK) status = tsr_cpu_conv_rank_check(op, y, 4);
  if (status == TSR_OK && bias != NULL) status = tsr_cpu_conv_rank_check(op, bias, 1);
  if (status != TSR_OK) return status;
  const int64_t groups = attrs->groups;
  const int64_t c = x->sizes[1], o = w->sizes[0];
  if (c % groups != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: groups %lld does not divide %s's channel count C = %lld", op,
                             (long long)groups, x->name, (long long)c);
  }
  if (o % groups != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "%s: groups %lld does not divide %s's output channel count O = %lld",
                             op, (long long)groups, w->name, (long long)o);
  }
  status = tsr_cpu_conv_size_check(op, w, 1, c / groups, "C / groups");
  if (status != TSR_OK) return status;
  for (int d = 2; d < 4; ++d) {
    if (w->sizes[d] < 1) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "%s: %s sizes[%d] is %lld; kernels are at "
                               "least 1 wide", op, w->name, d, (long long)w->sizes[d]);
    }
  }
  int64_t out_sizes[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x->sizes[2 + d], k = w->sizes[2 + d];
    // May be negative when the kernel is wider than the padded input.
    const int64_t span = in + attrs->pad_before[d] + attrs->pad_after[d] -
                         attrs->dilation[d] * (k - 1) - 1;
    out_sizes[d] = tsr_cpu_conv_div_floor(span, attrs->stride[d]) + 1;
    if (out_sizes[d] < 1) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "%s: output %s would be %lld (input %lld, pads %lld + %lld, "
                               "kernel %lld, dilation %lld, stride %lld); it must be at least 1",
                               op, d == 0 ? "height" : "width", (long long)out_sizes[d],
                               (long long)in, (long long)attrs->pad_before[d],
                               (long long)attrs->pad_after[d], (long long)k,
                               (long long)attrs->dilation[d], (long long)attrs->stride[d]);
    }
  }
  status = tsr_cpu_conv_size_check(op, y, 0, x->sizes[0], "N");
  if (status == TSR_OK) status = tsr_cpu_conv_size_check(op, y, 1, o, "O");
  if (status == TSR_OK) status = tsr_cpu_conv_size_check(op, y, 2, out_sizes[0], "OH by the formula");
  if (status == TSR_OK) status = tsr_cpu_conv_size_check(op, y, 3, out_sizes[1], "OW by the formula");
  if (status == TSR_OK && bias != NULL) status = tsr_cpu_conv_size_check(op, bias, 0, o, "O");
  if (status != TSR_OK) return status;

  cv->n = x->sizes[0];
  cv->c = c;
  cv->h = x->sizes[2];
  cv->w = x->sizes[3];
  cv->o = o;
  cv->oh = out_sizes[0];
  cv->ow = out_sizes[1];
  cv->kh = w->sizes[2];
  cv->kw = w->sizes[3];
  cv->groups = groups;
  cv->cg = c / groups;
  cv->og = o / groups;
  for (int d = 0; d < 2; ++d) {
    cv->stride[d] = attrs->stride[d];
    cv->pad[d] = attrs->pad_before[d];
    cv->dilation[d] = attrs->dilation[d];
  }
  cv->k = cv->cg * cv->kh * cv->kw;
  cv->cols = cv->oh * cv->ow;
  for (int d = 0; d < 4; ++d) {
    cv->xs[d] = x->strides[d];
    cv->ws[d] = w->strides[d];
    cv->ys[d] = y->strides[d];
  }
  cv->bias_stride = bias != NULL ? bias->strides[0] : 0;
  return TSR_OK;
}

// The serial blocking of ref's GEMM (matmul.c's, for one thread) for |mm|'s
// m, n and k; returns the packing bytes it needs.
static uint64_t tsr_cpu_conv_gemm_blocking_set(tsr_cpu_matmul_plan *mm, int naive) {
  const tsr_cpu_gemm_geometry *g =
      mm->dtype == TSR_FLOAT32 ? &tsr_cpu_gemm_f32_geometry : &tsr_cpu_gemm_f64_geometry;
  const uint64_t elem = mm->dtype == TSR_FLOAT32 ? 4 : 8;
  mm->batch_count = 1;
  mm->slots = 1;
  if (naive || mm->m == 0 || mm->n == 0) {
    mm->mode = TSR_CPU_MATMUL_NAIVE;
    return 0;
  }
  mm->mode = TSR_CPU_MATMUL_SERIAL;
  mm->kc = mm->k < g->kc ? mm->k : g->kc;
  mm->nc = min64(round_up(mm->n, g->nr), g->nc_max);
  mm->mc = round_up(div_up(mm->m, div_up(mm->m, g->mc_max)), g->mr);
  const uint64_t a_bytes = ((uint64_t)mm->mc * (uint64_t)mm->kc * elem + 63) & ~63ull;
  const uint64_t b_bytes = ((uint64_t)mm->kc * (uint64_t)mm->nc * elem + 63) & ~63ull;
  mm->slot_bytes = a_bytes + b_bytes;
  return mm->slot_bytes;
}

// Adds |count| * |each| bytes, rounded up to 64, to |*total|; sets |*overflow|.
static uint64_t tsr_cpu_conv_region(uint64_t *total, int *overflow, uint64_t count,
                                    uint64_t each) {
  uint64_t bytes = 0;
  *overflow |= __builtin_mul_overflow(count, each, &bytes);
  *overflow |= __builtin_add_overflow(bytes, 63, &bytes);
  bytes &= ~63ull;
  const uint64_t offset = *total;
  *overflow |= __builtin_add_overflow(*total, bytes, total);
  return offset;
}

void tsr_cpu_conv_x_pad(const tsr_cpu_conv_plan *cv, const float *x, float *xp) {
  const int64_t hp = cv->fd_hp, wp = cv->fd_wp, pt = cv->pad[0], pl = cv->pad[1];
  const int64_t w_hi = cv->w + pl < wp ? cv->w + pl : wp;  // columns [pl, w_hi) hold x
  for (int64_t c = 0; c < cv->c; ++c) {
    for (int64_t r = 0; r < hp; ++r) {
      float *dst = xp + (c * hp + r) * wp;
      const int64_t h = r - pt;
      if (h < 0 || h >= cv->h) {
        memset(dst, 0, (size_t)wp * sizeof(float));
        continue;
      }
      const float *src = x + c * cv->xs[1] + h * cv->xs[2];
      int64_t i = 0;
      for (; i < pl && i < wp; ++i) dst[i] = 0.0f;
      if (cv->xs[3] == 1) {
        for (; i < w_hi; ++i) dst[i] = src[i - pl];
      } else {
        for (; i < w_hi; ++i) dst[i] = src[(i - pl) * cv->xs[3]];
      }
      for (; i < wp; ++i) dst[i] = 0.0f;
    }
  }
}

// The direct kernels' view of x (conv_filter_direct.c, conv_fwd_direct.c):
// the part of the padded image the windows read, and whether it goes through
// a zero-padded copy (tsr_cpu_conv_x_pad) or is read in place, with the
// channel, row and column strides of what they read.
static void tsr_cpu_conv_direct_x_set(tsr_cpu_conv_plan *cv) {
  cv->fd_hp = (cv->oh - 1) * cv->stride[0] + (cv->kh - 1) * cv->dilation[0] + 1;
  cv->fd_wp = (cv->ow - 1) * cv->stride[1] + (cv->kw - 1) * cv->dilation[1] + 1;
  cv->fd_copy_x = cv->pad[0] > 0 || cv->pad[1] > 0 || cv->fd_hp > cv->h || cv->fd_wp > cv->w;
  if (cv->fd_copy_x) {
    cv->fd_xc = cv->fd_hp * cv->fd_wp;
    cv->fd_xh = cv->fd_wp;
    cv->fd_xw = 1;
  } else {
    cv->fd_xc = cv->xs[1];
    cv->fd_xh = cv->xs[2];
    cv->fd_xw = cv->xs[3];
  }
}

// Sets |plan|'s workspace: |shared| bytes, then one |slot| of bytes per
// thread slot, plus 64 bytes of slack so that execution can round an
// arbitrary workspace offset up; refuses sizes past 2^63 (|overflow| set by
// the caller's region arithmetic included).
static tsr_status tsr_cpu_conv_workspace_set(const char *op, tsr_plugin_plan *plan,
                                             uint64_t shared, uint64_t slot, int overflow) {
  tsr_cpu_conv_plan *cv = &plan->u.conv;
  cv->shared_bytes = shared;
  cv->slot_bytes = slot;
  uint64_t total = 0;
  overflow |= __builtin_mul_overflow(slot, (uint64_t)cv->slots, &total);
  overflow |= __builtin_add_overflow(total, shared + 64, &total);
  if (overflow || total > (uint64_t)INT64_MAX) {
    return tsr_cpu_error_set(TSR_UNSUPPORTED, "ref: %s needs a workspace beyond 2^63 bytes", op);
  }
  plan->workspace_bytes = total;
  return TSR_OK;
}

// Whether |cv|'s layouts run on the pool: only above
// TSR_CPU_CONV_PARALLEL_MIN_FLOPS, counting |depth| multiply-adds per output
// element (C*KH*KW, or KH*KW with one channel per group). Sets parallel and
// the workspace slots; returns the pool's thread count.
static int32_t tsr_cpu_conv_threads_set(tsr_cpu_conv_plan *cv, int64_t depth) {
  const int32_t threads = tsr_cpu_thread_count_get();
  const double flops = 2.0 * (double)cv->n * (double)cv->o * (double)cv->cols * (double)depth;
  cv->parallel = threads > 1 && flops >= TSR_CPU_CONV_PARALLEL_MIN_FLOPS;
  cv->slots = cv->parallel ? threads : 1;
  return threads;
}

// Chooses tiles, items and the GEMM, and lays out the workspace.
static tsr_status tsr_cpu_conv_layout_set(const char *op, tsr_plugin_plan *plan) {
  tsr_cpu_conv_plan *cv = &plan->u.conv;
  const int is_data = cv->op == TSR_OP_CONV2D_BACKWARD_DATA;
  const int is_filter = cv->op == TSR_OP_CONV2D_BACKWARD_FILTER;
  const tsr_dtype_t compute = cv->dtype == TSR_FLOAT64 ? TSR_FLOAT64 : TSR_FLOAT32;
  const uint64_t ce = compute == TSR_FLOAT64 ? 8 : 4;
  const tsr_cpu_gemm_geometry *geo =
      compute == TSR_FLOAT32 ? &tsr_cpu_gemm_f32_geometry : &tsr_cpu_gemm_f64_geometry;
  const int32_t threads = tsr_cpu_conv_threads_set(cv, cv->k);

  // y (dy) read or written in place: the compute type is its dtype, and its
  // two spatial dimensions collapse into one of stride y_pos_stride.
  cv->direct = 0;
  if (cv->dtype == compute) {
    if (cv->ow == 1) {
      cv->direct = 1;
      cv->y_pos_stride = cv->ys[2];
    } else if (cv->oh == 1 || cv->ys[2] == cv->ow * cv->ys[3]) {
      cv->direct = 1;
      cv->y_pos_stride = cv->ys[3];
    }
  }

  // Position tiles, from the shape alone: they fix the order of the
  // backward sums. K * tile_cols compute elements stay within the budget.
  const uint64_t col_row_bytes = (uint64_t)max64(cv->k, 1) * ce;
  int64_t tile = cv->cols;
  if ((uint64_t)cv->cols * col_row_bytes > TSR_CPU_CONV_TILE_BYTES) {
    tile = max64(geo->nr, (int64_t)(TSR_CPU_CONV_TILE_BYTES / col_row_bytes));
    tile = min64(round_up(div_up(cv->cols, div_up(cv->cols, tile)), geo->nr), cv->cols);
  }
  if (cv->op == TSR_OP_CONV2D && cv->parallel) {
    // The forward's sums do not depend on the tiles: cut finer when there
    // are too few images for the threads.
    const int64_t want = div_up(2 * (int64_t)threads, max64(cv->n * cv->groups, 1));
    if (div_up(cv->cols, tile) < want) {
      tile = min64(max64(geo->nr, round_up(div_up(cv->cols, want), geo->nr)), cv->cols);
    }
  }
  cv->tile_cols = tile;
  cv->tiles = div_up(cv->cols, tile);

  cv->batch_tile = 1;
  cv->batch_tiles = 0;
  if (is_filter && cv->n > 0) {
    int64_t tiles = min64(cv->n, TSR_CPU_CONV_FILTER_TILES);
    const uint64_t per_tile = (uint64_t)cv->o * (uint64_t)cv->k * ce;
    while (tiles > 1 && per_tile * (uint64_t)tiles > TSR_CPU_CONV_FILTER_PARTIAL_BYTES) --tiles;
    cv->batch_tile = div_up(cv->n, tiles);
    cv->batch_tiles = div_up(cv->n, cv->batch_tile);
  }
  // The backward ops split the input channels when there are too few
  // images (batch tiles) for the threads: blocks of channels own disjoint
  // rows of dx, or columns of dw, so the sums do not change.
  cv->c_block = max64(cv->cg, 1);
  cv->c_blocks = 1;
  const int64_t images = max64(is_filter ? cv->batch_tiles * cv->groups : cv->n * cv->groups, 1);
  if ((is_data || is_filter) && cv->parallel && cv->cg > 0 && images < 2 * (int64_t)threads) {
    const int64_t want = min64(cv->cg, div_up(2 * (int64_t)threads, images));
    cv->c_block = div_up(cv->cg, want);
    cv->c_blocks = div_up(cv->cg, cv->c_block);
  }
  if (is_data) {
    cv->items = cv->n * cv->groups * cv->c_blocks;
  } else if (is_filter) {
    cv->items = cv->batch_tiles * cv->groups * cv->c_blocks;
  } else {
    cv->items = cv->n * cv->groups * cv->tiles;
  }
  cv->grain = 1;

  // The GEMM of one full tile. Naive or blocked is decided from the whole
  // per-image problem, so the choice does not move with the tiles.
  tsr_cpu_matmul_plan *mm = &cv->gemm;
  memset(mm, 0, sizeof(*mm));
  mm->dtype = compute;
  mm->alpha = 1.0;
  mm->beta = 0.0;
  const int64_t y_rs = cv->direct ? cv->ys[1] : tile;
  const int64_t y_cs = cv->direct ? cv->y_pos_stride : 1;
  const double macs = (double)cv->og * (double)cv->cols * (double)cv->k;
  const int naive = macs <= TSR_CPU_CONV_NAIVE_MAX_MACS;
  if (is_data) {
    // dcol [c_block * KH * KW x tile] = W_g^T [.. x Og] . dy [Og x tile]
    mm->m = cv->c_block * cv->kh * cv->kw;
    mm->n = tile;
    mm->k = cv->og;
    mm->a_rs = 1;
    mm->a_cs = cv->k;
    mm->b_rs = y_rs;
    mm->b_cs = y_cs;
    mm->c_rs = tile;
    mm->c_cs = 1;
  } else if (is_filter) {
    // dW_g [Og x c_block * KH * KW] (+)= dy [Og x tile] . col^T [tile x ..]
    mm->m = cv->og;
    mm->n = cv->c_block * cv->kh * cv->kw;
    mm->k = tile;
    mm->a_rs = y_rs;
    mm->a_cs = y_cs;
    mm->b_rs = 1;
    mm->b_cs = tile;
    mm->c_rs = cv->k;
    mm->c_cs = 1;
  } else {
    // y [Og x tile] = act(W_g [Og x K] . col [K x tile] + bias)
    mm->m = cv->og;
    mm->n = tile;
    mm->k = cv->k;
    mm->a_rs = cv->k;
    mm->a_cs = 1;
    mm->b_rs = tile;
    mm->b_cs = 1;
    mm->c_rs = y_rs;
    mm->c_cs = y_cs;
    mm->has_bias = cv->has_bias;
    mm->bias_rs = 1;
    mm->bias_cs = 0;
    mm->activation = cv->activation;
  }
  const uint64_t gemm_bytes = tsr_cpu_conv_gemm_blocking_set(mm, naive);

  int overflow = 0;
  uint64_t shared = 0;
  if (is_filter) {
    const uint64_t partial_tiles = (uint64_t)max64(cv->batch_tiles, 1);
    tsr_cpu_conv_region(&shared, &overflow, partial_tiles * (uint64_t)cv->o, (uint64_t)cv->k * ce);
    tsr_cpu_conv_region(&shared, &overflow, partial_tiles * (uint64_t)cv->o, sizeof(double));
  } else {
    tsr_cpu_conv_region(&shared, &overflow, (uint64_t)cv->o, (uint64_t)cv->k * ce);
    if (cv->has_bias && !is_data) tsr_cpu_conv_region(&shared, &overflow, (uint64_t)cv->o, ce);
  }
  uint64_t slot = 0;
  const uint64_t col_rows = (uint64_t)(is_data || is_filter ? cv->c_block : cv->cg) *
                            (uint64_t)(cv->kh * cv->kw);
  cv->col_offset = tsr_cpu_conv_region(&slot, &overflow, col_rows * (uint64_t)tile, ce);
  cv->gemm_offset = tsr_cpu_conv_region(&slot, &overflow, gemm_bytes, 1);
  cv->stage_offset = tsr_cpu_conv_region(
      &slot, &overflow, cv->direct ? 0 : (uint64_t)cv->og * (uint64_t)tile, ce);
  cv->acc_offset = tsr_cpu_conv_region(
      &slot, &overflow, is_data ? (uint64_t)cv->c_block * (uint64_t)(cv->h * cv->w) : 0, ce);
  return tsr_cpu_conv_workspace_set(op, plan, shared, slot, overflow);
}

// Lays out the direct one-channel filter gradient (conv_filter_c1.c): a
// position tile's im2col rows stay within TSR_CPU_CONV_C1_TILE_BYTES, and
// each group's output channels are cut into as many blocks as the threads
// need (a block rebuilds the im2col rows for itself, so no finer).
static tsr_status tsr_cpu_conv_c1_layout_set(const char *op, tsr_plugin_plan *plan) {
  tsr_cpu_conv_plan *cv = &plan->u.conv;
  const int64_t lanes = TSR_CPU_CONV_C1_LANES, taps = cv->kh * cv->kw;
  const int32_t threads = tsr_cpu_conv_threads_set(cv, taps);
  cv->filter_c1 = 1;
  int64_t tile = max64(lanes, (int64_t)(TSR_CPU_CONV_C1_TILE_BYTES / (uint64_t)(taps * 4)));
  if (cv->cols > tile) {
    tile = round_up(div_up(cv->cols, div_up(cv->cols, tile)), lanes);
  }
  cv->tile_cols = min64(tile, cv->cols);
  cv->tiles = div_up(cv->cols, cv->tile_cols);
  cv->c1_pitch = round_up(cv->tile_cols, lanes);
  const int64_t want = cv->parallel ? div_up(threads, max64(cv->groups, 1)) : 1;
  cv->o_blocks = max64(min64(cv->og, want), 1);
  cv->o_block = max64(div_up(cv->og, cv->o_blocks), 1);
  cv->o_blocks = div_up(max64(cv->og, 1), cv->o_block);
  cv->items = cv->groups * cv->o_blocks;
  cv->grain = 1;
  int overflow = 0;
  uint64_t slot = 0;
  const uint64_t ob = (uint64_t)cv->o_block;
  cv->col_offset = tsr_cpu_conv_region(&slot, &overflow, (uint64_t)(taps * cv->c1_pitch), 4);
  cv->sums_offset = tsr_cpu_conv_region(&slot, &overflow, ob * (uint64_t)(taps * lanes), 8);
  cv->bias_sums_offset = tsr_cpu_conv_region(&slot, &overflow, ob * (uint64_t)lanes, 8);
  return tsr_cpu_conv_workspace_set(op, plan, 0, slot, overflow);
}

// Lays out the multi-channel direct filter gradient (conv_filter_direct.c).
// Position tiles come from the shape alone (they fix the order of the
// sums). Items own output channel chunks when the register tiles' channel
// blocks divide among the threads (each transposes only its channels of
// dy), else row chunks (each transposes all of dy).
static tsr_status tsr_cpu_conv_fd_layout_set(const char *op, tsr_plugin_plan *plan) {
  tsr_cpu_conv_plan *cv = &plan->u.conv;
  const int64_t rows = TSR_CPU_CONV_FD_ROWS, cols = TSR_CPU_CONV_FD_COLS;
  const int32_t threads = tsr_cpu_conv_threads_set(cv, cv->k);
  cv->filter_direct = 1;
  cv->fd_rows = cv->k;
  const int64_t o_all = round_up(max64(cv->o, 1), cols);
  int64_t tile = max64(8, (int64_t)(TSR_CPU_CONV_FD_TILE_BYTES / ((uint64_t)o_all * 4)));
  if (cv->cols > tile) tile = round_up(div_up(cv->cols, div_up(cv->cols, tile)), 8);
  cv->tile_cols = min64(tile, cv->cols);
  cv->tiles = div_up(cv->cols, cv->tile_cols);
  cv->fd_batch = max64(1, min64(cv->n, TSR_CPU_CONV_FD_STEP_POSITIONS / cv->tile_cols));
  tsr_cpu_conv_direct_x_set(cv);
  const int64_t o_blocks = div_up(max64(cv->o, 1), cols);
  const int64_t r_blocks = div_up(max64(cv->fd_rows, 1), rows);
  int64_t o_chunks = 1, r_chunks = 1;
  if (cv->parallel) {
    if (o_blocks % threads == 0) {
      o_chunks = threads;
    } else {
      r_chunks = min64(threads, r_blocks);
    }
  }
  cv->fd_o_chunk = div_up(o_blocks, o_chunks) * cols;
  cv->fd_o_chunks = div_up(max64(cv->o, 1), cv->fd_o_chunk);
  cv->fd_r_chunk = div_up(r_blocks, r_chunks) * rows;
  cv->fd_r_chunks = div_up(max64(cv->fd_rows, 1), cv->fd_r_chunk);
  cv->items = cv->fd_o_chunks * cv->fd_r_chunks;
  cv->grain = 1;
  int overflow = 0;
  uint64_t slot = 0;
  const uint64_t oc = (uint64_t)cv->fd_o_chunk;
  const uint64_t batch = (uint64_t)cv->fd_batch, steps = batch * (uint64_t)cv->tile_cols;
  cv->fd_x_offset = tsr_cpu_conv_region(
      &slot, &overflow, cv->fd_copy_x ? batch * (uint64_t)cv->c * (uint64_t)cv->fd_xc : 0, 4);
  cv->fd_dyt_offset = tsr_cpu_conv_region(&slot, &overflow, steps * oc, 4);
  cv->fd_sums_offset = tsr_cpu_conv_region(&slot, &overflow, (uint64_t)cv->fd_r_chunk * oc, 8);
  cv->fd_bias_offset = tsr_cpu_conv_region(&slot, &overflow, oc, 8);
  cv->fd_roff_offset = tsr_cpu_conv_region(&slot, &overflow, (uint64_t)cv->fd_r_chunk, 8);
  cv->fd_steps_offset = tsr_cpu_conv_region(&slot, &overflow, steps, 8);
  return tsr_cpu_conv_workspace_set(op, plan, 0, slot, overflow);
}

// Lays out the direct forward (conv_fwd_direct.c). Items own output channel
// chunks when the register tiles' channel blocks divide among the threads
// (each reads every image), else chunks of images (each transposes all the
// weights), and chunks of positions when there are fewer images than
// threads.
static tsr_status tsr_cpu_conv_fw_layout_set(const char *op, tsr_plugin_plan *plan) {
  tsr_cpu_conv_plan *cv = &plan->u.conv;
  const int64_t cols = TSR_CPU_CONV_FW_COLS;
  const int32_t threads = tsr_cpu_conv_threads_set(cv, cv->k);
  cv->fwd_direct = 1;
  cv->tile_cols = cv->cols;
  cv->tiles = 1;
  tsr_cpu_conv_direct_x_set(cv);
  const int64_t o_blocks = div_up(max64(cv->o, 1), cols);
  int64_t o_chunks = 1, n_chunks = 1, p_chunks = 1;
  if (cv->parallel) {
    if (o_blocks % threads == 0) {
      o_chunks = threads;
    } else if (cv->n >= threads) {
      n_chunks = threads;
    } else {
      n_chunks = max64(cv->n, 1);
      p_chunks = div_up(threads, n_chunks);
    }
  }
  cv->fw_p_chunk = min64(round_up(div_up(max64(cv->cols, 1), p_chunks), TSR_CPU_CONV_FW_POSITIONS),
                         max64(cv->cols, 1));
  cv->fw_p_chunks = div_up(max64(cv->cols, 1), cv->fw_p_chunk);
  cv->fd_o_chunk = div_up(o_blocks, o_chunks) * cols;
  cv->fd_o_chunks = div_up(max64(cv->o, 1), cv->fd_o_chunk);
  cv->fw_n_chunk = max64(div_up(cv->n, n_chunks), 1);
  cv->fw_n_chunks = div_up(max64(cv->n, 1), cv->fw_n_chunk);
  cv->items = cv->fd_o_chunks * cv->fw_n_chunks * cv->fw_p_chunks;
  cv->grain = 1;
  int overflow = 0;
  uint64_t slot = 0;
  cv->fd_x_offset = tsr_cpu_conv_region(
      &slot, &overflow, cv->fd_copy_x ? (uint64_t)cv->c * (uint64_t)cv->fd_xc : 0, 4);
  cv->fw_wt_offset =
      tsr_cpu_conv_region(&slot, &overflow, (uint64_t)cv->k * (uint64_t)cv->fd_o_chunk, 4);
  cv->fd_roff_offset = tsr_cpu_conv_region(&slot, &overflow, (uint64_t)cv->k, 8);
  cv->fd_steps_offset = tsr_cpu_conv_region(&slot, &overflow, (uint64_t)cv->cols, 8);
  return tsr_cpu_conv_workspace_set(op, plan, 0, slot, overflow);
}

// Lays out the one-channel direct forward (conv_fwd_c1.c): a position
// tile's im2col rows stay within TSR_CPU_CONV_C1_TILE_BYTES (the CNN's first
// layer: a whole 26x26 plane), items are (image, group) pairs.
static tsr_status tsr_cpu_conv_fc_layout_set(const char *op, tsr_plugin_plan *plan) {
  tsr_cpu_conv_plan *cv = &plan->u.conv;
  const int64_t vec = 16, taps = cv->kh * cv->kw;
  tsr_cpu_conv_threads_set(cv, taps);
  cv->fwd_c1 = 1;
  int64_t tile =
      max64(vec, (int64_t)(TSR_CPU_CONV_C1_TILE_BYTES / (uint64_t)(taps * 4)) / vec * vec);
  if (cv->cols > tile) tile = round_up(div_up(cv->cols, div_up(cv->cols, tile)), vec);
  cv->tile_cols = max64(min64(tile, cv->cols), 1);
  cv->tiles = div_up(cv->cols, cv->tile_cols);
  cv->c1_pitch = round_up(cv->tile_cols, vec);
  cv->items = cv->n * cv->groups;
  cv->grain = 1;
  int overflow = 0;
  uint64_t slot = 0;
  cv->col_offset = tsr_cpu_conv_region(&slot, &overflow, (uint64_t)(taps * cv->c1_pitch), 4);
  cv->fw_wt_offset =
      tsr_cpu_conv_region(&slot, &overflow, (uint64_t)(round_up(max64(cv->og, 1), 4) * taps), 4);
  return tsr_cpu_conv_workspace_set(op, plan, 0, slot, overflow);
}

// The checks and decisions all three ops share once their operands are
// named: dtypes, shapes, overlap, then the layout.
static tsr_status tsr_cpu_conv_plan_finish(const tsr_op_signature *signature,
                                           tsr_plugin_plan *plan, const tsr_conv2d_attrs *attrs,
                                           int x_index, int w_index, int y_index,
                                           int bias_index) {
  const char *op = tsr_op_name(signature->op);
  const int32_t count = plan->num_inputs + plan->num_outputs;
  const tsr_cpu_operand *first = &plan->operands[0];
  tsr_status status = tsr_cpu_dtype_check(signature, first, TSR_CPU_CONV_DTYPES,
                                          "the conv2d ops take float");
  for (int32_t i = 1; i < count && status == TSR_OK; ++i) {
    status = tsr_cpu_same_dtype_check(signature, first, &plan->operands[i]);
  }
  if (status != TSR_OK) return status;
  tsr_cpu_conv_plan *cv = &plan->u.conv;
  memset(cv, 0, sizeof(*cv));
  cv->op = signature->op;
  cv->dtype = first->dtype;
  cv->elem_size = (int32_t)first->elem_size;
  cv->has_bias = bias_index >= 0;
  cv->activation = attrs->activation;
  status = tsr_cpu_conv_shapes_check(op, attrs, &plan->operands[x_index],
                                     &plan->operands[w_index], &plan->operands[y_index],
                                     bias_index >= 0 ? &plan->operands[bias_index] : NULL, cv);
  for (int32_t o = plan->num_inputs; o < count && status == TSR_OK; ++o) {
    status = tsr_cpu_output_overlap_check(signature, &plan->operands[o]);
  }
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  const int c1 = status == TSR_OK && signature->op == TSR_OP_CONV2D_BACKWARD_FILTER &&
                 tsr_cpu_conv_filter_c1_fits(cv->dtype, cv->cg, cv->kh, cv->kw,
                                             plan->operands[y_index].sizes, cv->ys);
  const int direct = status == TSR_OK && !c1 &&
                     signature->op == TSR_OP_CONV2D_BACKWARD_FILTER &&
                     tsr_cpu_conv_filter_direct_fits(cv->dtype, cv->groups, cv->c, cv->h, cv->w,
                                                     attrs->pad_before, attrs->pad_after);
  const int fwd_c1 = status == TSR_OK && signature->op == TSR_OP_CONV2D &&
                     tsr_cpu_conv_fwd_c1_fits(cv->dtype, cv->cg, cv->activation,
                                              plan->operands[y_index].sizes, cv->ys);
  const int fwd = status == TSR_OK && !fwd_c1 && signature->op == TSR_OP_CONV2D &&
                  tsr_cpu_conv_fwd_direct_fits(cv->dtype, cv->groups, cv->activation, cv->c,
                                               cv->h, cv->w, attrs->pad_before,
                                               attrs->pad_after);
  if (status == TSR_OK) {
    status = c1       ? tsr_cpu_conv_c1_layout_set(op, plan)
             : direct ? tsr_cpu_conv_fd_layout_set(op, plan)
             : fwd_c1 ? tsr_cpu_conv_fc_layout_set(op, plan)
             : fwd    ? tsr_cpu_conv_fw_layout_set(op, plan)
                      : tsr_cpu_conv_layout_set(op, plan);
  }
  if (status != TSR_OK) return status;
  plan->execute = tsr_cpu_conv_execute;
  plan->engine = c1       ? "ref:filter-c1-direct"
                 : direct ? "ref:filter-direct"
                 : fwd_c1 ? "ref:conv-c1-direct"
                 : fwd    ? "ref:conv-direct"
                          : "ref:im2col-gemm";
  return TSR_OK;
}

tsr_status tsr_cpu_conv2d_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  tsr_conv2d_attrs attrs;
  tsr_status status = tsr_cpu_conv_attrs_read(signature, &attrs);
  if (status != TSR_OK) return status;
  static const char *const with_bias[] = {"x", "w", "bias", "y"};
  static const char *const without_bias[] = {"x", "w", "y"};
  status = attrs.has_bias ? tsr_cpu_operands_init(signature, plan, 3, 3, 1, with_bias)
                          : tsr_cpu_operands_init(signature, plan, 2, 2, 1, without_bias);
  if (status != TSR_OK) return status;
  return tsr_cpu_conv_plan_finish(signature, plan, &attrs, 0, 1, attrs.has_bias ? 3 : 2,
                                  attrs.has_bias ? 2 : -1);
}

tsr_status tsr_cpu_conv2d_backward_data_plan_init(const tsr_op_signature *signature,
                                                  tsr_plugin_plan *plan) {
  tsr_conv2d_attrs attrs;
  tsr_status status = tsr_cpu_conv_attrs_read(signature, &attrs);
  if (status != TSR_OK) return status;
  static const char *const names[] = {"dy", "w", "dx"};
  status = tsr_cpu_operands_init(signature, plan, 2, 2, 1, names);
  if (status != TSR_OK) return status;
  // has_bias is ignored here, as the catalogue says.
  return tsr_cpu_conv_plan_finish(signature, plan, &attrs, 2, 1, 0, -1);
}

tsr_status tsr_cpu_conv2d_backward_filter_plan_init(const tsr_op_signature *signature,
                                                    tsr_plugin_plan *plan) {
  tsr_conv2d_attrs attrs;
  tsr_status status = tsr_cpu_conv_attrs_read(signature, &attrs);
  if (status != TSR_OK) return status;
  static const char *const with_bias[] = {"dy", "x", "dw", "dbias"};
  static const char *const without_bias[] = {"dy", "x", "dw"};
  status = attrs.has_bias ? tsr_cpu_operands_init(signature, plan, 2, 2, 2, with_bias)
                          : tsr_cpu_operands_init(signature, plan, 2, 2, 1, without_bias);
  if (status != TSR_OK) return status;
  return tsr_cpu_conv_plan_finish(signature, plan, &attrs, 1, 2, 0, attrs.has_bias ? 3 : -1);
}
