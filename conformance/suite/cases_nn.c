// The battery of the neural-network ops: POOL2D (MAX and AVG, padding,
// ceil mode, dilation, count_include_pad), SOFTMAX (and log-softmax), layer
// and batch norm, and their backward ops.
//
// A backward op's saved operands (pooling indices, the forward's y, norm
// statistics) are computed by the oracle's forward from the same data, so
// the plugin sees what a training step would pass it.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

#define SIZES(...) ((const int64_t[]){__VA_ARGS__})

// A private generator, so several operands can be derived from one x.
static void private_values(uint64_t seed, tsr_dtype_t dtype, int64_t count, double lo, double hi,
                           double *out) {
  uint64_t rng = seed;
  for (int64_t i = 0; i < count; ++i) {
    out[i] = tsr_oracle_round(tsr_conf_random_uniform(&rng, lo, hi), dtype);
  }
}

// Runs the oracle for |op| with |attrs| on |inputs| and returns output
// |which| into |out| (shaped by the caller).
static void oracle_output(int32_t op, const void *attrs, tsr_oracle_tensor *inputs, int32_t nin,
                          const tsr_conf_operand *outs, int32_t nout, int32_t which,
                          tsr_oracle_tensor *out) {
  tsr_oracle_tensor results[TSR_MAX_OPERANDS];
  for (int32_t k = 0; k < nout; ++k) {
    tsr_oracle_tensor_create(outs[k].dtype, outs[k].rank, outs[k].sizes, &results[k]);
  }
  tsr_oracle_call call = {.op = op, .attrs = attrs, .num_inputs = nin, .num_outputs = nout,
                          .inputs = inputs, .outputs = results};
  tsr_oracle_compute(&call);
  for (int64_t i = 0; i < out->numel; ++i) {
    tsr_oracle_tensor_set(out, i, results[which].v[i], results[which].iv ? results[which].iv[i] : 0);
  }
  for (int32_t k = 0; k < nout; ++k) tsr_oracle_tensor_destroy(&results[k]);
}

// --- pooling ------------------------------------------------------------------------

typedef struct pool_shape {
  const char *category;
  int64_t n, c, h, w;
  tsr_pool_kind_t kind;
  int64_t kernel[2], stride[2], pad_before[2], pad_after[2], dilation[2];
  uint32_t ceil_mode, count_include_pad;
  int nhwc, special, full_only;
} pool_shape;

static const pool_shape pools[] = {
    {"basic", 2, 3, 6, 6, TSR_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0, 0, 0, 0},
    {"basic", 2, 3, 6, 6, TSR_POOL_AVG, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0, 0, 0, 0},
    {"padding", 1, 2, 7, 7, TSR_POOL_MAX, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0, 0, 0, 0, 0},
    {"padding", 2, 2, 5, 6, TSR_POOL_AVG, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, 1, 0, 0, 0},
    {"padding", 2, 2, 5, 6, TSR_POOL_AVG, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, 0, 0, 0, 0},
    {"ceil mode", 1, 2, 8, 7, TSR_POOL_MAX, {3, 3}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 1, 0, 0, 0, 0},
    {"ceil mode", 1, 1, 6, 6, TSR_POOL_AVG, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, 1, 0, 0, 0},
    {"ceil mode", 1, 1, 6, 6, TSR_POOL_AVG, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, 0, 0, 0, 0},
    {"dilation", 1, 2, 7, 7, TSR_POOL_MAX, {2, 2}, {1, 2}, {0, 1}, {0, 1}, {2, 2}, 0, 0, 0, 0, 0},
    {"odd sizes", 3, 1, 5, 3, TSR_POOL_MAX, {2, 3}, {1, 1}, {0, 1}, {0, 1}, {1, 1}, 0, 0, 0, 0, 0},
    // 2x2 windows, stride 2, over odd sizes: the last row and column are
    // left out (a fast path in some plugins), channels-last too.
    {"odd sizes", 2, 3, 7, 9, TSR_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0, 0, 0, 0},
    {"non-contiguous", 2, 3, 7, 5, TSR_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0, 1, 1, 0},
    {"non-contiguous", 2, 3, 6, 5, TSR_POOL_MAX, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 0, 0, 1, 0, 0},
    {"non-contiguous", 2, 3, 6, 5, TSR_POOL_AVG, {3, 2}, {2, 1}, {1, 0}, {1, 0}, {1, 1}, 0, 1, 1, 0, 0},
    {"special values", 1, 2, 6, 6, TSR_POOL_MAX, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 0, 0, 0, 1, 0},
    {"large", 4, 16, 32, 32, TSR_POOL_MAX, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, 0, 0, 0, 1},
    {"large", 4, 16, 31, 31, TSR_POOL_AVG, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 0, 0, 1, 0, 1},
};

static int64_t pool_out(int64_t in, int64_t pb, int64_t pa, int64_t d, int64_t k, int64_t s, int ceil_mode) {
  int64_t span = in + pb + pa - (d * (k - 1) + 1);
  if (!ceil_mode) return span / s + 1;
  int64_t out = (span + s - 1) / s + 1;
  if ((out - 1) * s >= in + pb) out -= 1;
  return out;
}

static void nhwc(tsr_conf_operand *o) {
  o->layout = TSR_CONF_EXPLICIT;
  int64_t c = o->sizes[1], h = o->sizes[2], w = o->sizes[3];
  o->strides[0] = h * w * c;
  o->strides[1] = 1;
  o->strides[2] = w * c;
  o->strides[3] = c;
}

// POOL2D_BACKWARD's indices: the forward's, on x drawn from params[0].
static void init_pool_indices(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values,
                              uint64_t *rng) {
  (void)rng;
  (void)index;
  const tsr_conf_operand *dx = tsr_conf_case_out((tsr_conf_case *)c, 0);
  tsr_oracle_tensor x;
  tsr_oracle_tensor_create(dx->dtype, 4, dx->sizes, &x);
  private_values((uint64_t)c->params[0], dx->dtype, x.numel, -2, 2, x.v);
  tsr_conf_operand outs[2];
  memset(outs, 0, sizeof(outs));
  outs[0].dtype = dx->dtype, outs[0].rank = 4;
  outs[1].dtype = TSR_INT64, outs[1].rank = 4;
  memcpy(outs[0].sizes, values->sizes, sizeof(values->sizes));
  memcpy(outs[1].sizes, values->sizes, sizeof(values->sizes));
  oracle_output(TSR_OP_POOL2D, &c->attrs, &x, 1, outs, 2, 1, values);
  tsr_oracle_tensor_destroy(&x);
}

static void emit_pool(int32_t op, tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t k = 0; k < sizeof(pools) / sizeof(pools[0]); ++k) {
    const pool_shape *s = &pools[k];
    if (s->full_only && !sink->full) continue;
    if (s->special && op != TSR_OP_POOL2D) continue;
    int64_t oh = pool_out(s->h, s->pad_before[0], s->pad_after[0], s->dilation[0], s->kernel[0], s->stride[0], s->ceil_mode);
    int64_t ow = pool_out(s->w, s->pad_before[1], s->pad_after[1], s->dilation[1], s->kernel[1], s->stride[1], s->ceil_mode);
    int64_t x_sizes[4] = {s->n, s->c, s->h, s->w}, y_sizes[4] = {s->n, s->c, oh, ow};
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, s->category,
                       "%s %s %s x[%lld,%lld,%lld,%lld] kernel %lldx%lld stride %lldx%lld pad %lld,%lld/%lld,%lld "
                       "dilation %lldx%lld%s%s%s",
                       tsr_op_name(op), s->kind == TSR_POOL_MAX ? "max" : "avg", tsr_oracle_dtype_name(dt),
                       (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w,
                       (long long)s->kernel[0], (long long)s->kernel[1], (long long)s->stride[0],
                       (long long)s->stride[1], (long long)s->pad_before[0], (long long)s->pad_before[1],
                       (long long)s->pad_after[0], (long long)s->pad_after[1], (long long)s->dilation[0],
                       (long long)s->dilation[1], s->ceil_mode ? " ceil" : "",
                       s->count_include_pad ? " count_include_pad" : "", s->nhwc ? " NHWC" : "");
    c.has_attrs = 1;
    c.attrs.pool2d = (tsr_pool2d_attrs){.struct_size = sizeof(tsr_pool2d_attrs), .kind = s->kind,
                                        .ceil_mode = s->ceil_mode,
                                        .kernel = {s->kernel[0], s->kernel[1]},
                                        .stride = {s->stride[0], s->stride[1]},
                                        .pad_before = {s->pad_before[0], s->pad_before[1]},
                                        .pad_after = {s->pad_after[0], s->pad_after[1]},
                                        .dilation = {s->dilation[0], s->dilation[1]},
                                        .count_include_pad = s->count_include_pad};
    c.params[0] = (double)(tsr_conf_hash(c.name) & 0xFFFFFFFFu);
    if (op == TSR_OP_POOL2D) {
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, 4, x_sizes);
      if (s->kind == TSR_POOL_MAX) x->gen = TSR_CONF_GEN_INTS, x->lo = -6, x->hi = 6;  // ties
      if (s->special) x->gen = TSR_CONF_GEN_SPECIAL;
      tsr_conf_operand *y = tsr_conf_case_output(&c, dt, 4, y_sizes);
      tsr_conf_operand *idx = NULL;
      if (s->kind == TSR_POOL_MAX) idx = tsr_conf_case_output(&c, TSR_INT64, 4, y_sizes);
      if (s->nhwc) {
        nhwc(x), nhwc(y);
        if (idx) nhwc(idx);
      }
    } else {
      tsr_conf_operand *dy = tsr_conf_case_input(&c, dt, 4, y_sizes);
      tsr_conf_operand *idx = NULL;
      if (s->kind == TSR_POOL_MAX) {
        idx = tsr_conf_case_input(&c, TSR_INT64, 4, y_sizes);
        idx->gen = TSR_CONF_GEN_CUSTOM;
        c.init = init_pool_indices;
      }
      tsr_conf_operand *dx = tsr_conf_case_output(&c, dt, 4, x_sizes);
      if (s->nhwc) {
        nhwc(dy), nhwc(dx);
        if (idx) nhwc(idx);
      }
    }
    sink->emit(sink->ctx, &c);
  }
  if (op == TSR_OP_POOL2D_BACKWARD) {
    // An index outside [0, H*W) is a data-dependent error (docs/abi.md 10.15).
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, "invalid call", "pool2d_backward max %s index out of range",
                       tsr_oracle_dtype_name(dt));
    c.has_attrs = 1;
    c.attrs.pool2d = (tsr_pool2d_attrs){.struct_size = sizeof(tsr_pool2d_attrs), .kind = TSR_POOL_MAX,
                                        .kernel = {2, 2}, .stride = {2, 2}, .dilation = {1, 1}};
    tsr_conf_case_input(&c, dt, 4, SIZES(1, 1, 2, 2));
    tsr_conf_operand *idx = tsr_conf_case_input(&c, TSR_INT64, 4, SIZES(1, 1, 2, 2));
    idx->lo = 16, idx->hi = 40;
    tsr_conf_case_output(&c, dt, 4, SIZES(1, 1, 4, 4));
    c.expect = TSR_INVALID_ARGUMENT;
    sink->emit(sink->ctx, &c);
  }
}

// --- softmax ---------------------------------------------------------------------------

typedef struct softmax_shape {
  const char *category;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int32_t axis;
  double lo, hi;
  tsr_conf_layout_t layout;
  uint32_t misalign;
  int special, full_only;
} softmax_shape;

static const softmax_shape softmaxes[] = {
    {"basic", 2, {7, 13}, 1, -5, 5, 0, 0, 0, 0},
    {"basic", 2, {7, 13}, 0, -5, 5, 0, 0, 0, 0},
    {"odd sizes", 3, {2, 3, 17}, 1, -5, 5, 0, 0, 0, 0},
    {"size 1", 1, {1}, 0, -5, 5, 0, 0, 0, 0},
    {"empty", 2, {5, 0}, 1, -5, 5, 0, 0, 0, 0},
    {"large values", 2, {4, 9}, 1, -60, 60, 0, 0, 0, 0},
    {"large reduction", 2, {3, 4099}, 1, -8, 8, 0, 0, 0, 0},
    {"non-contiguous", 2, {6, 11}, 1, -5, 5, TSR_CONF_TRANSPOSED, 0, 0, 0},
    {"non-contiguous", 3, {3, 5, 4}, 2, -5, 5, TSR_CONF_STRIDED, 0, 0, 0},
    {"misaligned", 2, {5, 7}, 1, -5, 5, 0, 1, 0, 0},
    {"special values", 2, {12, 4}, 1, -5, 5, 0, 0, 1, 0},
    {"large", 2, {64, 1000}, 1, -10, 10, 0, 0, 0, 1},
};

// SOFTMAX_BACKWARD's y: the forward's output on x drawn from params[0].
static void init_softmax_y(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values,
                           uint64_t *rng) {
  (void)rng;
  const tsr_conf_operand *y = &c->operands[index];
  tsr_oracle_tensor x;
  tsr_oracle_tensor_create(y->dtype, y->rank, y->sizes, &x);
  private_values((uint64_t)c->params[0], y->dtype, x.numel, c->params[1], c->params[2], x.v);
  oracle_output(TSR_OP_SOFTMAX, &c->attrs, &x, 1, y, 1, 0, values);
  tsr_oracle_tensor_destroy(&x);
}

static void emit_softmax(int32_t op, tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t k = 0; k < sizeof(softmaxes) / sizeof(softmaxes[0]); ++k) {
    const softmax_shape *s = &softmaxes[k];
    if (s->full_only && !sink->full) continue;
    if (s->special && op != TSR_OP_SOFTMAX) continue;
    for (uint32_t log = 0; log < 2; ++log) {
      char shape[96];
      size_t n = (size_t)snprintf(shape, sizeof(shape), "[");
      for (int32_t d = 0; d < s->rank; ++d) n += (size_t)snprintf(shape + n, sizeof(shape) - n, d ? ",%lld" : "%lld", (long long)s->sizes[d]);
      snprintf(shape + n, sizeof(shape) - n, "]");
      tsr_conf_case c;
      tsr_conf_case_init(&c, op, s->category, "%s %s%s %s axis %d%s%s", tsr_op_name(op),
                         log ? "log " : "", tsr_oracle_dtype_name(dt), shape, (int)s->axis,
                         s->layout == TSR_CONF_TRANSPOSED ? " transposed" : s->layout == TSR_CONF_STRIDED ? " strided" : "",
                         s->misalign ? " misaligned" : "");
      c.has_attrs = 1;
      c.attrs.softmax = (tsr_softmax_attrs){sizeof(tsr_softmax_attrs), s->axis, log};
      c.params[0] = (double)(tsr_conf_hash(c.name) & 0xFFFFFFFFu);
      c.params[1] = s->lo, c.params[2] = s->hi;
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      x->lo = s->lo, x->hi = s->hi, x->layout = s->layout, x->misalign = s->misalign;
      if (s->special) x->gen = TSR_CONF_GEN_SPECIAL;
      if (op == TSR_OP_SOFTMAX_BACKWARD) {
        tsr_conf_operand *y = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
        y->gen = TSR_CONF_GEN_CUSTOM;
        y->layout = s->layout, y->misalign = s->misalign;
        c.init = init_softmax_y;
      }
      tsr_conf_operand *out = tsr_conf_case_output(&c, dt, s->rank, s->sizes);
      out->layout = s->layout, out->misalign = s->misalign;
      sink->emit(sink->ctx, &c);
    }
  }
}

// --- layer norm ---------------------------------------------------------------------

typedef struct ln_shape {
  const char *category;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int32_t axis;
  uint32_t affine;
  double eps;
  tsr_conf_layout_t layout;
  uint32_t misalign;
  int null_attrs, full_only;
} ln_shape;

static const ln_shape layer_norms[] = {
    {"basic", 2, {4, 13}, 1, 1, 1e-5, 0, 0, 0, 0},
    {"basic", 2, {4, 13}, 1, 0, 1e-5, 0, 0, 0, 0},
    {"odd sizes", 3, {3, 5, 7}, 1, 1, 1e-5, 0, 0, 0, 0},
    {"odd sizes", 3, {3, 5, 7}, 0, 1, 0.1, 0, 0, 0, 0},
    {"size 1", 2, {5, 1}, 1, 1, 1e-5, 0, 0, 0, 0},  // M = 1: variance 0
    {"empty", 2, {0, 6}, 1, 1, 1e-5, 0, 0, 0, 0},
    {"large reduction", 2, {3, 4099}, 1, 1, 1e-5, 0, 0, 0, 0},
    {"non-contiguous", 2, {6, 9}, 1, 1, 1e-5, TSR_CONF_TRANSPOSED, 0, 0, 0},
    {"non-contiguous", 3, {2, 3, 5}, 2, 0, 1e-5, TSR_CONF_STRIDED, 0, 0, 0},
    {"misaligned", 2, {5, 7}, 1, 1, 1e-5, 0, 1, 0, 0},
    {"attributes", 2, {4, 13}, 1, 0, 1e-5, 0, 0, 1, 0},
    {"large", 2, {64, 1024}, 1, 1, 1e-5, 0, 0, 0, 1},
};

// LAYER_NORM_BACKWARD's x, mean and rstd: one x (from params[0]) and its
// statistics from the oracle's forward.
static void init_ln_backward(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values,
                             uint64_t *rng) {
  (void)rng;
  const tsr_conf_operand *xo = &c->operands[1];
  tsr_oracle_tensor x;
  tsr_oracle_tensor_create(xo->dtype, xo->rank, xo->sizes, &x);
  private_values((uint64_t)c->params[0], xo->dtype, x.numel, -2, 3, x.v);
  if (index == 1) {
    for (int64_t i = 0; i < x.numel; ++i) values->v[i] = x.v[i];
  } else {
    tsr_conf_operand outs[3];
    memset(outs, 0, sizeof(outs));
    outs[0] = *xo;
    outs[1] = c->operands[2];
    outs[2] = c->operands[3];
    oracle_output(TSR_OP_LAYER_NORM, &c->attrs, &x, 1, outs, 3, index == 2 ? 1 : 2, values);
  }
  tsr_oracle_tensor_destroy(&x);
}

static void emit_layer_norm(int32_t op, tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t k = 0; k < sizeof(layer_norms) / sizeof(layer_norms[0]); ++k) {
    const ln_shape *s = &layer_norms[k];
    if (s->full_only && !sink->full) continue;
    int64_t stat_sizes[TSR_MAX_RANK];
    for (int32_t d = 0; d < s->rank; ++d) stat_sizes[d] = d >= s->axis ? 1 : s->sizes[d];
    int32_t nrank = s->rank - s->axis;
    const int64_t *nsizes = s->sizes + s->axis;
    char shape[96];
    size_t n = (size_t)snprintf(shape, sizeof(shape), "[");
    for (int32_t d = 0; d < s->rank; ++d) n += (size_t)snprintf(shape + n, sizeof(shape) - n, d ? ",%lld" : "%lld", (long long)s->sizes[d]);
    snprintf(shape + n, sizeof(shape) - n, "]");
    tsr_dtype_t st = tsr_conf_statistics_dtype(dt);
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, s->category, "%s %s %s axis %d%s eps %g%s%s%s", tsr_op_name(op),
                       tsr_oracle_dtype_name(dt), shape, (int)s->axis, s->affine ? " affine" : "", s->eps,
                       s->layout == TSR_CONF_TRANSPOSED ? " transposed" : s->layout == TSR_CONF_STRIDED ? " strided" : "",
                       s->misalign ? " misaligned" : "", s->null_attrs ? " attrs NULL" : "");
    c.has_attrs = 1;
    c.attrs.layer_norm = (tsr_layer_norm_attrs){sizeof(tsr_layer_norm_attrs), s->axis, s->affine, s->eps};
    if (s->null_attrs) c.attrs_pass = TSR_CONF_ATTRS_NULL;
    c.params[0] = (double)(tsr_conf_hash(c.name) & 0xFFFFFFFFu);
    tsr_conf_operand *main_in, *main_out;
    if (op == TSR_OP_LAYER_NORM) {
      main_in = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      main_in->lo = -2, main_in->hi = 3;
      if (s->affine) {
        tsr_conf_case_input(&c, dt, nrank, nsizes);
        tsr_conf_case_input(&c, dt, nrank, nsizes);
      }
      main_out = tsr_conf_case_output(&c, dt, s->rank, s->sizes);
      tsr_conf_case_output(&c, st, s->rank, stat_sizes);
      tsr_conf_case_output(&c, st, s->rank, stat_sizes);
    } else {
      main_in = tsr_conf_case_input(&c, dt, s->rank, s->sizes);  // dy
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      tsr_conf_operand *mean = tsr_conf_case_input(&c, st, s->rank, stat_sizes);
      tsr_conf_operand *rstd = tsr_conf_case_input(&c, st, s->rank, stat_sizes);
      x->gen = mean->gen = rstd->gen = TSR_CONF_GEN_CUSTOM;
      x->layout = s->layout, x->misalign = s->misalign;
      c.init = init_ln_backward;
      if (s->affine) tsr_conf_case_input(&c, dt, nrank, nsizes);
      main_out = tsr_conf_case_output(&c, dt, s->rank, s->sizes);
      if (s->affine) {
        tsr_conf_case_output(&c, dt, nrank, nsizes);
        tsr_conf_case_output(&c, dt, nrank, nsizes);
      }
    }
    main_in->layout = s->layout, main_in->misalign = s->misalign;
    main_out->layout = s->layout, main_out->misalign = s->misalign;
    sink->emit(sink->ctx, &c);
  }
}

// --- batch norm ----------------------------------------------------------------------

typedef struct bn_shape {
  const char *category;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  uint32_t training;
  int alias_running;
  tsr_conf_layout_t layout;
  uint32_t misalign;
  int full_only;
} bn_shape;

static const bn_shape batch_norms[] = {
    {"basic", 4, {4, 3, 5, 5}, 1, 0, 0, 0, 0},
    {"basic", 4, {4, 3, 5, 5}, 0, 0, 0, 0, 0},
    {"in place", 4, {2, 5, 3, 4}, 1, 1, 0, 0, 0},
    {"in place", 2, {8, 5}, 0, 1, 0, 0, 0},
    {"odd sizes", 2, {7, 3}, 1, 0, 0, 0, 0},
    {"size 1", 4, {2, 1, 1, 1}, 1, 0, 0, 0, 0},
    {"large reduction", 3, {16, 2, 257}, 1, 0, 0, 0, 0},
    {"non-contiguous", 4, {3, 4, 3, 5}, 1, 0, TSR_CONF_TRANSPOSED, 0, 0},
    {"misaligned", 3, {5, 3, 7}, 1, 0, 0, 1, 0},
    {"large", 4, {16, 32, 14, 14}, 1, 0, 0, 0, 1},
};

// BATCH_NORM_BACKWARD's x, save_mean and save_invstd from one x (params[0]);
// in inference the statistics are running ones (positive variance).
static void init_bn_backward(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values,
                             uint64_t *rng) {
  const tsr_conf_operand *xo = &c->operands[1];
  tsr_oracle_tensor x;
  tsr_oracle_tensor_create(xo->dtype, xo->rank, xo->sizes, &x);
  private_values((uint64_t)c->params[0], xo->dtype, x.numel, -2, 3, x.v);
  if (index == 1) {
    for (int64_t i = 0; i < x.numel; ++i) values->v[i] = x.v[i];
  } else if (!c->attrs.batch_norm.training) {
    for (int64_t i = 0; i < values->numel; ++i) {
      values->v[i] = index == 3 ? tsr_conf_random_uniform(rng, -0.5, 0.5) : tsr_conf_random_uniform(rng, 0.5, 2);
    }
  } else {
    int64_t channels = xo->sizes[1];
    tsr_oracle_tensor in[5];
    in[0] = x;
    for (int k = 1; k < 5; ++k) {
      tsr_oracle_tensor_create(tsr_conf_statistics_dtype(xo->dtype), 1, &channels, &in[k]);
      for (int64_t i = 0; i < channels; ++i) in[k].v[i] = k == 4 ? 1.0 : 0.0;
    }
    tsr_conf_operand outs[5];
    memset(outs, 0, sizeof(outs));
    outs[0] = *xo;
    for (int k = 1; k < 5; ++k) {
      outs[k].dtype = tsr_conf_statistics_dtype(xo->dtype);
      outs[k].rank = 1;
      outs[k].sizes[0] = channels;
    }
    oracle_output(TSR_OP_BATCH_NORM, &c->attrs, in, 5, outs, 5, index == 3 ? 1 : 2, values);
    for (int k = 1; k < 5; ++k) tsr_oracle_tensor_destroy(&in[k]);
  }
  tsr_oracle_tensor_destroy(&x);
}

static void emit_batch_norm(int32_t op, tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t k = 0; k < sizeof(batch_norms) / sizeof(batch_norms[0]); ++k) {
    const bn_shape *s = &batch_norms[k];
    if (s->full_only && !sink->full) continue;
    if (s->alias_running && op != TSR_OP_BATCH_NORM) continue;
    int64_t ch = s->sizes[1];
    tsr_dtype_t st = tsr_conf_statistics_dtype(dt);
    char shape[96];
    size_t n = (size_t)snprintf(shape, sizeof(shape), "[");
    for (int32_t d = 0; d < s->rank; ++d) n += (size_t)snprintf(shape + n, sizeof(shape) - n, d ? ",%lld" : "%lld", (long long)s->sizes[d]);
    snprintf(shape + n, sizeof(shape) - n, "]");
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, s->category, "%s %s %s %s%s%s%s", tsr_op_name(op), tsr_oracle_dtype_name(dt),
                       shape, s->training ? "training" : "inference",
                       s->alias_running ? " running stats in place" : "",
                       s->layout == TSR_CONF_TRANSPOSED ? " transposed" : "", s->misalign ? " misaligned" : "");
    c.has_attrs = 1;
    c.attrs.batch_norm = (tsr_batch_norm_attrs){sizeof(tsr_batch_norm_attrs), 1e-5, 0.1, s->training, 0};
    c.params[0] = (double)(tsr_conf_hash(c.name) & 0xFFFFFFFFu);
    tsr_conf_operand *main_in, *main_out;
    if (op == TSR_OP_BATCH_NORM) {
      main_in = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      main_in->lo = -2, main_in->hi = 3;
      tsr_conf_case_input(&c, st, 1, &ch);  // gamma
      tsr_conf_case_input(&c, st, 1, &ch);  // beta
      tsr_conf_operand *rm = tsr_conf_case_input(&c, st, 1, &ch);
      rm->lo = -0.5, rm->hi = 0.5;
      tsr_conf_operand *rv = tsr_conf_case_input(&c, st, 1, &ch);
      rv->lo = 0.5, rv->hi = 2;
      main_out = tsr_conf_case_output(&c, dt, s->rank, s->sizes);
      for (int i = 0; i < 4; ++i) tsr_conf_case_output(&c, st, 1, &ch);
      if (s->alias_running) {
        tsr_conf_case_out(&c, 3)->alias_of = 3;
        tsr_conf_case_out(&c, 4)->alias_of = 4;
      }
    } else {
      main_in = tsr_conf_case_input(&c, dt, s->rank, s->sizes);  // dy
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      x->gen = TSR_CONF_GEN_CUSTOM;
      x->layout = s->layout, x->misalign = s->misalign;
      tsr_conf_case_input(&c, st, 1, &ch);  // gamma
      tsr_conf_operand *mean = tsr_conf_case_input(&c, st, 1, &ch);
      tsr_conf_operand *inv = tsr_conf_case_input(&c, st, 1, &ch);
      mean->gen = inv->gen = TSR_CONF_GEN_CUSTOM;
      c.init = init_bn_backward;
      main_out = tsr_conf_case_output(&c, dt, s->rank, s->sizes);
      tsr_conf_case_output(&c, st, 1, &ch);
      tsr_conf_case_output(&c, st, 1, &ch);
    }
    main_in->layout = s->layout, main_in->misalign = s->misalign;
    main_out->layout = s->layout, main_out->misalign = s->misalign;
    sink->emit(sink->ctx, &c);
  }
  if (op == TSR_OP_BATCH_NORM) {
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, "invalid call", "batch_norm %s training with one value per channel (invalid)",
                       tsr_oracle_dtype_name(dt));
    c.has_attrs = 1;
    c.attrs.batch_norm = (tsr_batch_norm_attrs){sizeof(tsr_batch_norm_attrs), 1e-5, 0.1, 1, 0};
    c.expect = TSR_INVALID_ARGUMENT;
    c.expect_at_plan = 1;
    int64_t ch = 3;
    tsr_dtype_t st = tsr_conf_statistics_dtype(dt);
    tsr_conf_case_input(&c, dt, 2, SIZES(1, 3));
    for (int i = 0; i < 4; ++i) {
      tsr_conf_operand *o = tsr_conf_case_input(&c, st, 1, &ch);
      o->lo = 0.5;
    }
    tsr_conf_case_output(&c, dt, 2, SIZES(1, 3));
    for (int i = 0; i < 4; ++i) tsr_conf_case_output(&c, st, 1, &ch);
    sink->emit(sink->ctx, &c);
  }
}

void tsr_conf_cases_nn(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink) {
  switch (op) {
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD: emit_pool(op, dtype, sink); break;
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD: emit_softmax(op, dtype, sink); break;
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD: emit_layer_norm(op, dtype, sink); break;
    default: emit_batch_norm(op, dtype, sink); break;
  }
}
