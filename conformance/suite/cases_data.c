// The battery of data movement, randomness, loss and optimizer ops: CONCAT,
// PAD, GATHER, SCATTER_ADD, RNG_FILL, CROSS_ENTROPY (and backward),
// SGD_UPDATE, ADAM_UPDATE.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

#define SIZES(...) ((const int64_t[]){__VA_ARGS__})

static int is_float(tsr_dtype_t dt) { return tsr_oracle_dtype_is_float(dt); }

// --- concat ---------------------------------------------------------------------

static void emit_concat(tsr_dtype_t dt, tsr_conf_sink *sink) {
  typedef struct concat_shape {
    const char *category;
    int32_t rank, axis, count;
    int64_t base[TSR_MAX_RANK];
    int64_t parts[15];
    tsr_conf_layout_t layout;
    uint32_t misalign;
    int special;
  } concat_shape;
  static const concat_shape shapes[] = {
      {"basic", 2, 1, 2, {4, 0}, {3, 5}, 0, 0, 0},
      {"basic", 2, 0, 3, {0, 6}, {2, 0, 5}, 0, 0, 0},  // an empty input
      {"odd sizes", 3, 2, 4, {2, 3, 0}, {1, 7, 2, 3}, 0, 0, 0},
      {"size 1", 1, 0, 1, {0}, {1}, 0, 0, 0},
      {"many inputs", 1, 0, 15, {0}, {1, 2, 3, 1, 1, 5, 1, 1, 2, 1, 1, 1, 4, 1, 3}, 0, 0, 0},
      {"non-contiguous", 2, 0, 2, {0, 7}, {3, 4}, TSR_CONF_TRANSPOSED, 0, 0},
      {"non-contiguous", 3, 1, 3, {2, 0, 3}, {2, 1, 4}, TSR_CONF_STRIDED, 0, 0},
      {"misaligned", 2, 1, 2, {3, 0}, {5, 2}, 0, 1, 0},
      {"special values", 1, 0, 2, {0}, {9, 7}, 0, 0, 1},
  };
  for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
    const concat_shape *s = &shapes[k];
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_CONCAT, s->category, "concat %s %d inputs axis %d rank %d%s%s",
                       tsr_oracle_dtype_name(dt), (int)s->count, (int)s->axis, (int)s->rank,
                       s->layout == TSR_CONF_TRANSPOSED ? " transposed" : s->layout == TSR_CONF_STRIDED ? " strided" : "",
                       s->misalign ? " misaligned" : "");
    c.has_attrs = 1;
    c.attrs.concat = (tsr_concat_attrs){sizeof(tsr_concat_attrs), s->axis, 0};
    int64_t total = 0;
    for (int32_t i = 0; i < s->count; ++i) {
      int64_t sizes[TSR_MAX_RANK];
      memcpy(sizes, s->base, sizeof(sizes));
      sizes[s->axis] = s->parts[i];
      total += s->parts[i];
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, s->rank, sizes);
      x->layout = s->layout, x->misalign = s->misalign;
      if (s->special) x->gen = TSR_CONF_GEN_SPECIAL;
    }
    int64_t out_sizes[TSR_MAX_RANK];
    memcpy(out_sizes, s->base, sizeof(out_sizes));
    out_sizes[s->axis] = total;
    tsr_conf_operand *out = tsr_conf_case_output(&c, dt, s->rank, out_sizes);
    out->misalign = s->misalign;
    sink->emit(sink->ctx, &c);
  }
}

// --- pad ----------------------------------------------------------------------------

static void emit_pad(tsr_dtype_t dt, tsr_conf_sink *sink) {
  typedef struct pad_shape {
    const char *category;
    tsr_pad_mode_t mode;
    int32_t rank;
    int64_t sizes[TSR_MAX_RANK];
    int64_t before[TSR_MAX_RANK], after[TSR_MAX_RANK];
    double value;
    tsr_conf_layout_t layout;
    uint32_t misalign;
    int null_attrs;
    int invalid;
  } pad_shape;
  static const pad_shape shapes[] = {
      {"basic", TSR_PAD_CONSTANT, 2, {3, 4}, {1, 2}, {2, 0}, 0.0, 0, 0, 0, 0},
      {"basic", TSR_PAD_CONSTANT, 2, {3, 4}, {0, 1}, {1, 3}, 1.5, 0, 0, 0, 0},
      {"special values", TSR_PAD_CONSTANT, 1, {5}, {2}, {3}, NAN, 0, 0, 0, 0},
      {"basic", TSR_PAD_REFLECT, 2, {4, 5}, {3, 1}, {2, 4}, 0.0, 0, 0, 0, 0},
      {"basic", TSR_PAD_REPLICATE, 2, {3, 2}, {2, 3}, {4, 1}, 0.0, 0, 0, 0, 0},
      {"odd sizes", TSR_PAD_REFLECT, 3, {2, 3, 7}, {1, 2, 6}, {0, 1, 5}, 0.0, 0, 0, 0, 0},
      {"odd sizes", TSR_PAD_REPLICATE, 3, {1, 3, 7}, {2, 0, 9}, {1, 2, 0}, 0.0, 0, 0, 0, 0},
      {"scalar", TSR_PAD_CONSTANT, 0, {0}, {0}, {0}, 3.0, 0, 0, 0, 0},
      {"empty", TSR_PAD_CONSTANT, 2, {0, 3}, {1, 1}, {2, 0}, -2.0, 0, 0, 0, 0},
      {"non-contiguous", TSR_PAD_REFLECT, 2, {5, 6}, {2, 2}, {3, 1}, 0.0, TSR_CONF_TRANSPOSED, 0, 0, 0},
      {"non-contiguous", TSR_PAD_CONSTANT, 2, {4, 3}, {1, 1}, {1, 1}, 7.0, TSR_CONF_STRIDED, 0, 0, 0},
      {"misaligned", TSR_PAD_REPLICATE, 1, {9}, {4}, {5}, 0.0, 0, 1, 0, 0},
      {"attributes", TSR_PAD_CONSTANT, 2, {3, 5}, {0, 0}, {0, 0}, 0.0, 0, 0, 1, 0},
      {"invalid call", TSR_PAD_REFLECT, 1, {3}, {3}, {0}, 0.0, 0, 0, 0, 1},
  };
  for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
    const pad_shape *s = &shapes[k];
    if (s->mode != TSR_PAD_CONSTANT && !is_float(dt) && !tsr_oracle_dtype_is_int(dt)) continue;
    static const char *const modes[] = {"constant", "reflect", "replicate"};
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_PAD, s->category, "pad %s %s rank %d value %g%s%s%s%s", modes[s->mode],
                       tsr_oracle_dtype_name(dt), (int)s->rank, s->value,
                       s->layout == TSR_CONF_TRANSPOSED ? " transposed" : s->layout == TSR_CONF_STRIDED ? " strided" : "",
                       s->misalign ? " misaligned" : "", s->null_attrs ? " attrs NULL" : "",
                       s->invalid ? " pad >= size (invalid)" : "");
    c.has_attrs = 1;
    memset(&c.attrs, 0, sizeof(c.attrs));
    c.attrs.pad.struct_size = sizeof(tsr_pad_attrs);
    c.attrs.pad.mode = s->mode;
    c.attrs.pad.value = s->value;
    int64_t out_sizes[TSR_MAX_RANK];
    for (int32_t d = 0; d < s->rank; ++d) {
      c.attrs.pad.pad_before[d] = s->before[d];
      c.attrs.pad.pad_after[d] = s->after[d];
      out_sizes[d] = s->before[d] + s->sizes[d] + s->after[d];
    }
    if (s->null_attrs) c.attrs_pass = TSR_CONF_ATTRS_NULL;
    tsr_conf_operand *x = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
    x->layout = s->layout, x->misalign = s->misalign;
    tsr_conf_operand *out = tsr_conf_case_output(&c, dt, s->rank, out_sizes);
    out->misalign = s->misalign;
    if (s->invalid) {
      c.expect = TSR_INVALID_ARGUMENT;
      c.expect_at_plan = 1;
    }
    sink->emit(sink->ctx, &c);
  }
}

// --- gather and scatter_add ----------------------------------------------------------

typedef struct index_shape {
  const char *category;
  int32_t rank, axis;
  int64_t sizes[TSR_MAX_RANK];  // x (gather) or out (scatter_add)
  int64_t k;
  tsr_dtype_t index_dtype;
  tsr_conf_layout_t layout;
  uint32_t misalign;
  int out_of_range;
} index_shape;

static const index_shape index_shapes[] = {
    {"basic", 2, 0, {7, 5}, 4, TSR_INT64, 0, 0, 0},
    {"basic", 2, 1, {3, 6}, 9, TSR_INT32, 0, 0, 0},  // repeated indices
    {"odd sizes", 3, 1, {2, 5, 3}, 7, TSR_INT64, 0, 0, 0},
    {"empty", 2, 0, {4, 3}, 0, TSR_INT64, 0, 0, 0},
    {"size 1", 1, 0, {1}, 1, TSR_INT32, 0, 0, 0},
    {"large", 2, 0, {1000, 17}, 777, TSR_INT64, 0, 0, 0},
    {"non-contiguous", 2, 1, {6, 5}, 4, TSR_INT64, TSR_CONF_TRANSPOSED, 0, 0},
    {"misaligned", 2, 0, {5, 3}, 6, TSR_INT32, 0, 1, 0},
    {"invalid call", 2, 0, {4, 3}, 3, TSR_INT64, 0, 0, 1},
};

// Valid indices but one past the end, so the call is certainly invalid.
static void init_bad_index(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values,
                           uint64_t *rng) {
  (void)index;
  int64_t size = (int64_t)c->params[0];
  for (int64_t i = 0; i < values->numel; ++i) {
    tsr_oracle_tensor_set(values, i, 0, i == values->numel / 2 ? size + 2 : tsr_conf_random_int(rng, 0, size - 1));
  }
}

static void emit_index_op(int32_t op, tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t k = 0; k < sizeof(index_shapes) / sizeof(index_shapes[0]); ++k) {
    const index_shape *s = &index_shapes[k];
    int64_t other[TSR_MAX_RANK];
    memcpy(other, s->sizes, sizeof(other));
    other[s->axis] = s->k;
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, s->category, "%s %s rank %d axis %d K %lld %s index%s%s%s", tsr_op_name(op),
                       tsr_oracle_dtype_name(dt), (int)s->rank, (int)s->axis, (long long)s->k,
                       tsr_oracle_dtype_name(s->index_dtype), s->layout == TSR_CONF_TRANSPOSED ? " transposed" : "",
                       s->misalign ? " misaligned" : "", s->out_of_range ? " index out of range (invalid)" : "");
    c.has_attrs = 1;
    c.attrs.gather = (tsr_gather_attrs){sizeof(tsr_gather_attrs), s->axis, 0};
    tsr_conf_operand *data, *index, *out;
    if (op == TSR_OP_GATHER) {
      data = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      index = tsr_conf_case_input(&c, s->index_dtype, 1, &s->k);
      out = tsr_conf_case_output(&c, dt, s->rank, other);
    } else {
      data = tsr_conf_case_input(&c, dt, s->rank, other);
      index = tsr_conf_case_input(&c, s->index_dtype, 1, &s->k);
      out = tsr_conf_case_output(&c, dt, s->rank, s->sizes);
      out->read_before_write = 1;
      out->gen = is_float(dt) ? TSR_CONF_GEN_UNIFORM : TSR_CONF_GEN_INTS;
      out->lo = -2, out->hi = 2;
    }
    index->gen = TSR_CONF_GEN_INTS;
    index->lo = 0, index->hi = (double)(s->sizes[s->axis] - 1);
    if (s->out_of_range) {
      index->gen = TSR_CONF_GEN_CUSTOM;
      c.init = init_bad_index;
      c.params[0] = (double)s->sizes[s->axis];
      c.expect = TSR_INVALID_ARGUMENT;
    }
    data->layout = s->layout, data->misalign = s->misalign;
    out->misalign = s->misalign;
    sink->emit(sink->ctx, &c);
  }
}

// --- rng_fill -------------------------------------------------------------------------

static void emit_rng(tsr_dtype_t dt, tsr_conf_sink *sink) {
  typedef struct rng_case {
    const char *category;
    tsr_rng_distribution_t distribution;
    int32_t rank;
    int64_t sizes[TSR_MAX_RANK];
    uint64_t seed, offset;
    double a, b;
    tsr_conf_layout_t layout;
    uint32_t misalign;
  } rng_case;
  static const rng_case cases[] = {
      {"basic", TSR_RNG_UNIFORM, 2, {13, 5}, 42, 0, 0.0, 1.0, 0, 0},
      {"basic", TSR_RNG_UNIFORM, 1, {67}, 0x123456789abcdefull, 1000, -3.0, 5.0, 0, 0},
      {"basic", TSR_RNG_NORMAL, 2, {13, 5}, 7, 0, 1.0, 2.0, 0, 0},
      {"basic", TSR_RNG_BERNOULLI, 2, {13, 5}, 9, 5, 0.3, 0.0, 0, 0},
      {"counter carry", TSR_RNG_UNIFORM, 1, {37}, 3, 0xFFFFFFF0ull, 0.0, 1.0, 0, 0},
      {"counter carry", TSR_RNG_BERNOULLI, 1, {37}, 3, 0xFFFFFFFFFFFFFFF0ull, 0.5, 0.0, 0, 0},
      {"empty", TSR_RNG_UNIFORM, 2, {0, 4}, 1, 0, 0.0, 1.0, 0, 0},
      {"scalar", TSR_RNG_NORMAL, 0, {0}, 1, 77, 0.0, 1.0, 0, 0},
      {"non-contiguous", TSR_RNG_UNIFORM, 2, {9, 7}, 11, 3, 0.0, 1.0, TSR_CONF_TRANSPOSED, 0},
      {"non-contiguous", TSR_RNG_NORMAL, 3, {3, 4, 5}, 12, 0, 0.0, 1.0, TSR_CONF_STRIDED, 0},
      {"misaligned", TSR_RNG_BERNOULLI, 1, {41}, 13, 0, 0.7, 0.0, 0, 1},
      {"attributes", TSR_RNG_BERNOULLI, 1, {16}, 14, 0, 1.5, 0.0, 0, 0},
      {"large", TSR_RNG_UNIFORM, 1, {4099}, 15, 123456789, -1.0, 1.0, 0, 0},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    const rng_case *s = &cases[k];
    if (s->distribution != TSR_RNG_BERNOULLI && !is_float(dt)) continue;
    static const char *const names[] = {"uniform", "normal", "bernoulli"};
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_RNG_FILL, s->category, "rng_fill %s %s seed %llu offset %llu%s%s",
                       names[s->distribution], tsr_oracle_dtype_name(dt), (unsigned long long)s->seed,
                       (unsigned long long)s->offset, s->layout ? " non-contiguous" : "",
                       s->misalign ? " misaligned" : "");
    c.has_attrs = 1;
    c.attrs.rng = (tsr_rng_fill_attrs){sizeof(tsr_rng_fill_attrs), s->distribution, 0, s->seed, s->offset, s->a, s->b};
    tsr_conf_operand *out = tsr_conf_case_output(&c, dt, s->rank, s->sizes);
    out->layout = s->layout, out->misalign = s->misalign;
    sink->emit(sink->ctx, &c);
  }
}

// --- cross entropy ------------------------------------------------------------------------

// Targets: mostly in [0, C), some equal to ignore_index (params[1]).
static void init_targets(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values, uint64_t *rng) {
  (void)index;
  int64_t classes = (int64_t)c->params[0];
  int64_t ignore = (int64_t)c->params[1];
  int bad = c->params[2] != 0;
  for (int64_t i = 0; i < values->numel; ++i) {
    int64_t t = tsr_conf_random_int(rng, 0, classes - 1);
    if ((tsr_conf_random_next(rng) % 5) == 0) t = ignore;
    if (bad && i == values->numel / 2) t = classes + 3;
    tsr_oracle_tensor_set(values, i, 0, t);
  }
}

// CROSS_ENTROPY_BACKWARD's logits and lse: one set of logits (params[3])
// and its log-sum-exp from the oracle's forward.
static void init_ce_backward(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *values,
                             uint64_t *rng) {
  if (index == 2) {
    init_targets(c, index, values, rng);
    return;
  }
  const tsr_conf_operand *lo = &c->operands[1];
  uint64_t private_rng = (uint64_t)c->params[3];
  tsr_oracle_tensor logits;
  tsr_oracle_tensor_create(lo->dtype, 2, lo->sizes, &logits);
  for (int64_t i = 0; i < logits.numel; ++i) {
    logits.v[i] = tsr_oracle_round(tsr_conf_random_uniform(&private_rng, -4, 4), lo->dtype);
  }
  if (index == 1) {
    for (int64_t i = 0; i < logits.numel; ++i) values->v[i] = logits.v[i];
  } else {
    // lse_n = m + ln sum exp(x - m), for every row.
    for (int64_t n = 0; n < lo->sizes[0]; ++n) {
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < lo->sizes[1]; ++k) m = fmax(m, logits.v[n * lo->sizes[1] + k]);
      for (int64_t k = 0; k < lo->sizes[1]; ++k) s += exp(logits.v[n * lo->sizes[1] + k] - m);
      values->v[n] = m + log(s);
    }
  }
  tsr_oracle_tensor_destroy(&logits);
}

static void emit_cross_entropy(int32_t op, tsr_dtype_t dt, tsr_conf_sink *sink) {
  typedef struct ce_case {
    const char *category;
    int64_t n, classes;
    tsr_reduction_t reduction;
    int64_t ignore;
    double smoothing;
    int bad_target;
    int null_attrs;
  } ce_case;
  static const ce_case cases[] = {
      {"basic", 8, 5, TSR_REDUCTION_MEAN, -100, 0.0, 0, 0},
      {"basic", 8, 5, TSR_REDUCTION_NONE, -100, 0.0, 0, 0},
      {"basic", 8, 5, TSR_REDUCTION_SUM, 2, 0.1, 0, 0},
      {"odd sizes", 13, 7, TSR_REDUCTION_MEAN, 3, 0.25, 0, 0},
      {"size 1", 1, 1, TSR_REDUCTION_NONE, -100, 0.0, 0, 0},
      {"empty", 0, 4, TSR_REDUCTION_MEAN, -100, 0.0, 0, 0},
      {"empty", 0, 4, TSR_REDUCTION_SUM, -100, 0.0, 0, 0},
      {"large reduction", 6, 1000, TSR_REDUCTION_MEAN, -100, 0.1, 0, 0},
      {"attributes", 8, 5, TSR_REDUCTION_MEAN, -100, 0.0, 0, 1},
      {"invalid call", 6, 4, TSR_REDUCTION_MEAN, -100, 0.0, 1, 0},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    const ce_case *s = &cases[k];
    static const char *const reductions[] = {"none", "mean", "sum"};
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, s->category, "%s %s N %lld C %lld %s ignore %lld smoothing %g%s%s",
                       tsr_op_name(op), tsr_oracle_dtype_name(dt), (long long)s->n, (long long)s->classes,
                       reductions[s->reduction], (long long)s->ignore, s->smoothing,
                       s->null_attrs ? " attrs NULL" : "", s->bad_target ? " target out of range (invalid)" : "");
    c.has_attrs = 1;
    c.attrs.cross_entropy = (tsr_cross_entropy_attrs){sizeof(tsr_cross_entropy_attrs), s->reduction, 0,
                                                      s->ignore, s->smoothing};
    if (s->null_attrs) c.attrs_pass = TSR_CONF_ATTRS_NULL;
    c.params[0] = (double)s->classes;
    c.params[1] = (double)s->ignore;
    c.params[2] = s->bad_target;
    c.params[3] = (double)(tsr_conf_hash(c.name) & 0xFFFFFFFFu);
    c.init = op == TSR_OP_CROSS_ENTROPY ? init_targets : init_ce_backward;
    int64_t logit_sizes[2] = {s->n, s->classes};
    int32_t loss_rank = s->reduction == TSR_REDUCTION_NONE ? 1 : 0;
    if (op == TSR_OP_CROSS_ENTROPY_BACKWARD) tsr_conf_case_input(&c, dt, loss_rank, &s->n);
    tsr_conf_operand *logits = tsr_conf_case_input(&c, dt, 2, logit_sizes);
    logits->lo = -4, logits->hi = 4;
    tsr_conf_operand *target = tsr_conf_case_input(&c, TSR_INT64, 1, &s->n);
    target->gen = TSR_CONF_GEN_CUSTOM;
    if (op == TSR_OP_CROSS_ENTROPY) {
      tsr_conf_case_output(&c, dt, loss_rank, &s->n);
      tsr_conf_case_output(&c, TSR_FLOAT32, 1, &s->n);
    } else {
      logits->gen = TSR_CONF_GEN_CUSTOM;
      tsr_conf_operand *lse = tsr_conf_case_input(&c, TSR_FLOAT32, 1, &s->n);
      lse->gen = TSR_CONF_GEN_CUSTOM;
      tsr_conf_case_output(&c, dt, 2, logit_sizes);
    }
    if (s->bad_target) c.expect = TSR_INVALID_ARGUMENT;
    sink->emit(sink->ctx, &c);
  }
}

// --- optimizers ---------------------------------------------------------------------------

static void optimizer_operands(tsr_conf_case *c, tsr_dtype_t dt, int32_t rank, const int64_t *sizes,
                               int states, tsr_conf_layout_t layout, uint32_t misalign, int null_buffer) {
  tsr_conf_operand *g = tsr_conf_case_input(c, dt, rank, sizes);
  g->layout = layout, g->misalign = misalign;
  for (int i = 0; i < states; ++i) {
    tsr_conf_operand *o = tsr_conf_case_output(c, dt, rank, sizes);
    o->read_before_write = 1;
    o->gen = TSR_CONF_GEN_UNIFORM;
    o->lo = (c->op == TSR_OP_ADAM_UPDATE && i == 2) ? 0.0 : -1.0;
    o->hi = 1.0;
    o->layout = layout, o->misalign = misalign;
    if (i == 1 && null_buffer) {
      memset(o, 0, sizeof(*o));
      o->dtype = dt;
      o->alias_of = -1;
      o->null_buffer = 1;
    }
  }
}

static void emit_sgd(tsr_dtype_t dt, tsr_conf_sink *sink) {
  typedef struct sgd_case {
    const char *category;
    double lr, momentum, dampening, weight_decay;
    uint32_t nesterov, first_step;
    int32_t rank;
    int64_t sizes[TSR_MAX_RANK];
    tsr_conf_layout_t layout;
    uint32_t misalign;
    int invalid;
  } sgd_case;
  static const sgd_case cases[] = {
      {"basic", 0.1, 0.0, 0.0, 0.0, 0, 0, 2, {13, 5}, 0, 0, 0},  // momentum 0: empty buffer
      {"basic", 0.1, 0.9, 0.0, 0.0, 0, 1, 2, {13, 5}, 0, 0, 0},
      {"basic", 0.05, 0.9, 0.1, 1e-2, 0, 0, 1, {67}, 0, 0, 0},
      {"basic", 0.05, 0.8, 0.0, 1e-3, 1, 0, 1, {67}, 0, 0, 0},
      {"empty", 0.1, 0.9, 0.0, 0.0, 0, 0, 1, {0}, 0, 0, 0},
      {"non-contiguous", 0.1, 0.9, 0.0, 0.01, 1, 0, 2, {9, 7}, TSR_CONF_STRIDED, 0, 0},
      {"misaligned", 0.1, 0.9, 0.0, 0.0, 0, 0, 1, {37}, 0, 1, 0},
      {"large", 0.01, 0.9, 0.0, 1e-4, 0, 0, 1, {4099}, 0, 0, 0},
      {"invalid call", 0.1, 0.9, 0.5, 0.0, 1, 0, 1, {5}, 0, 0, 1},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    const sgd_case *s = &cases[k];
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_SGD_UPDATE, s->category,
                       "sgd_update %s lr %g momentum %g dampening %g wd %g%s%s numel %lld%s%s", tsr_oracle_dtype_name(dt),
                       s->lr, s->momentum, s->dampening, s->weight_decay, s->nesterov ? " nesterov" : "",
                       s->first_step ? " first step" : "", (long long)(s->rank == 2 ? s->sizes[0] * s->sizes[1] : s->sizes[0]),
                       s->layout ? " strided" : "", s->misalign ? " misaligned" : "");
    c.has_attrs = 1;
    c.attrs.sgd = (tsr_sgd_attrs){sizeof(tsr_sgd_attrs), s->lr, s->momentum, s->dampening, s->weight_decay,
                                  s->nesterov, s->first_step};
    optimizer_operands(&c, dt, s->rank, s->sizes, 2, s->layout, s->misalign, s->momentum == 0);
    if (s->invalid) {
      c.expect = TSR_INVALID_ARGUMENT;
      c.expect_at_plan = 1;
    }
    sink->emit(sink->ctx, &c);
  }
}

static void emit_adam(tsr_dtype_t dt, tsr_conf_sink *sink) {
  typedef struct adam_case {
    const char *category;
    double lr, beta1, beta2, eps, weight_decay;
    int64_t step;
    uint32_t decoupled;
    int32_t rank;
    int64_t sizes[TSR_MAX_RANK];
    tsr_conf_layout_t layout;
    uint32_t misalign;
    int invalid;
  } adam_case;
  static const adam_case cases[] = {
      {"basic", 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, 0, 2, {13, 5}, 0, 0, 0},
      {"basic", 1e-2, 0.9, 0.999, 1e-8, 0.01, 10, 0, 1, {67}, 0, 0, 0},
      {"basic", 1e-2, 0.8, 0.99, 1e-6, 0.1, 3, 1, 1, {67}, 0, 0, 0},
      {"empty", 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, 0, 1, {0}, 0, 0, 0},
      {"non-contiguous", 1e-3, 0.9, 0.999, 1e-8, 0.0, 2, 1, 2, {9, 7}, TSR_CONF_STRIDED, 0, 0},
      {"misaligned", 1e-3, 0.9, 0.999, 1e-8, 0.0, 5, 0, 1, {37}, 0, 1, 0},
      {"large", 1e-3, 0.9, 0.999, 1e-8, 0.01, 100, 1, 1, {4099}, 0, 0, 0},
      {"invalid call", 1e-3, 0.9, 0.999, 1e-8, 0.0, 0, 0, 1, {5}, 0, 0, 1},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    const adam_case *s = &cases[k];
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_ADAM_UPDATE, s->category,
                       "adam_update %s lr %g betas %g/%g eps %g wd %g step %lld%s%s%s", tsr_oracle_dtype_name(dt),
                       s->lr, s->beta1, s->beta2, s->eps, s->weight_decay, (long long)s->step,
                       s->decoupled ? " decoupled" : "", s->layout ? " strided" : "", s->misalign ? " misaligned" : "");
    c.has_attrs = 1;
    c.attrs.adam = (tsr_adam_attrs){sizeof(tsr_adam_attrs), s->lr, s->beta1, s->beta2, s->eps, s->weight_decay,
                                    s->step, s->decoupled, 0};
    optimizer_operands(&c, dt, s->rank, s->sizes, 3, s->layout, s->misalign, 0);
    if (s->invalid) {
      c.expect = TSR_INVALID_ARGUMENT;
      c.expect_at_plan = 1;
    }
    sink->emit(sink->ctx, &c);
  }
}

void tsr_conf_cases_data(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink) {
  switch (op) {
    case TSR_OP_CONCAT: emit_concat(dtype, sink); break;
    case TSR_OP_PAD: emit_pad(dtype, sink); break;
    case TSR_OP_GATHER:
    case TSR_OP_SCATTER_ADD: emit_index_op(op, dtype, sink); break;
    case TSR_OP_RNG_FILL: emit_rng(dtype, sink); break;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: emit_cross_entropy(op, dtype, sink); break;
    case TSR_OP_SGD_UPDATE: emit_sgd(dtype, sink); break;
    case TSR_OP_ADAM_UPDATE: emit_adam(dtype, sink); break;
    default: break;
  }
}
