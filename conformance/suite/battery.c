// The battery's shared parts: deterministic random data, which dtypes the
// spec allows per op, the representative signature that decides whether a
// plugin declares (op, dtype), and the dispatch to each family's cases.
#include <math.h>
#include <string.h>

#include "suite.h"

uint64_t tsr_conf_random_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double tsr_conf_random_uniform(uint64_t *state, double lo, double hi) {
  double u = (double)(tsr_conf_random_next(state) >> 11) * ldexp(1.0, -53);
  return lo + (hi - lo) * u;
}

int64_t tsr_conf_random_int(uint64_t *state, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
  uint64_t r = tsr_conf_random_next(state);
  return (int64_t)((uint64_t)lo + (span == 0 ? r : r % span));
}

uint64_t tsr_conf_hash(const char *text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return h;
}

int tsr_conf_op_accepts(int32_t op, tsr_dtype_t dtype) {
  int is_float = tsr_oracle_dtype_is_float(dtype), is_int = tsr_oracle_dtype_is_int(dtype);
  switch (op) {
    case TSR_OP_FILL:
    case TSR_OP_COPY:
    case TSR_OP_CAST:
    case TSR_OP_UNARY:
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE:
    case TSR_OP_WHERE:
    case TSR_OP_CONCAT:
    case TSR_OP_PAD:
    case TSR_OP_GATHER:
    case TSR_OP_RNG_FILL:
      return dtype >= 0 && dtype < TSR_DTYPE_COUNT;
    case TSR_OP_CLAMP:
    case TSR_OP_REDUCE:
    case TSR_OP_ARG_REDUCE:
    case TSR_OP_SCATTER_ADD:
      return is_float || is_int;
    default:
      return is_float && op > 0 && op < TSR_OP_COUNT;
  }
}

#define SIZES(...) ((const int64_t[]){__VA_ARGS__})

tsr_dtype_t tsr_conf_statistics_dtype(tsr_dtype_t dtype) {
  return dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16 ? TSR_FLOAT32 : dtype;
}

void tsr_conf_case_representative(int32_t op, tsr_dtype_t dt, tsr_conf_case *c) {
  int is_bool = dt == TSR_BOOL;
  int is_float = tsr_oracle_dtype_is_float(dt);
  tsr_dtype_t st = tsr_conf_statistics_dtype(dt);
  tsr_conf_case_init(c, op, "representative", "%s %s representative", tsr_op_name(op),
                     tsr_oracle_dtype_name(dt));
  c->has_attrs = 1;
  switch (op) {
    case TSR_OP_FILL:
      c->attrs.fill = (tsr_fill_attrs){sizeof(tsr_fill_attrs), 1.0};
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_COPY:
      c->has_attrs = 0;
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_CAST:
      c->has_attrs = 0;
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt == TSR_FLOAT32 ? TSR_FLOAT64 : TSR_FLOAT32, 2, SIZES(2, 3));
      break;
    case TSR_OP_UNARY:
      c->attrs.unary = (tsr_unary_attrs){sizeof(tsr_unary_attrs),
                                         is_bool ? TSR_UNARY_LOGICAL_NOT : TSR_UNARY_NEG, 0, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_UNARY_BACKWARD:
      c->attrs.unary = (tsr_unary_attrs){sizeof(tsr_unary_attrs), TSR_UNARY_RELU, 0, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_BINARY:
      c->attrs.binary = (tsr_binary_attrs){sizeof(tsr_binary_attrs),
                                           is_bool ? TSR_BINARY_LOGICAL_AND : TSR_BINARY_ADD, 0, 1.0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_COMPARE:
      c->attrs.compare = (tsr_compare_attrs){sizeof(tsr_compare_attrs), TSR_COMPARE_LT, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, TSR_BOOL, 2, SIZES(2, 3));
      break;
    case TSR_OP_WHERE:
      c->has_attrs = 0;
      tsr_conf_case_input(c, TSR_BOOL, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_CLAMP:
      c->attrs.clamp = (tsr_clamp_attrs){sizeof(tsr_clamp_attrs), 0.0, 1.0, 1, 1};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_REDUCE:
      c->attrs.reduce = (tsr_reduce_attrs){sizeof(tsr_reduce_attrs), TSR_REDUCE_SUM, 2u};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 1));
      break;
    case TSR_OP_ARG_REDUCE:
      c->attrs.arg_reduce = (tsr_arg_reduce_attrs){sizeof(tsr_arg_reduce_attrs), TSR_ARG_REDUCE_ARGMAX, 1};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, TSR_INT64, 2, SIZES(2, 1));
      break;
    case TSR_OP_MATMUL:
      c->attrs.matmul = (tsr_matmul_attrs){sizeof(tsr_matmul_attrs), 1.0, 0.0, TSR_ACTIVATION_NONE, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(3, 4));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 4));
      break;
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      c->attrs.conv2d = (tsr_conv2d_attrs){.struct_size = sizeof(tsr_conv2d_attrs),
                                           .stride = {1, 1}, .dilation = {1, 1}, .groups = 1};
      if (op == TSR_OP_CONV2D) {
        tsr_conf_case_input(c, dt, 4, SIZES(1, 2, 5, 5));
        tsr_conf_case_input(c, dt, 4, SIZES(3, 2, 3, 3));
        tsr_conf_case_output(c, dt, 4, SIZES(1, 3, 3, 3));
      } else if (op == TSR_OP_CONV2D_BACKWARD_DATA) {
        tsr_conf_case_input(c, dt, 4, SIZES(1, 3, 3, 3));
        tsr_conf_case_input(c, dt, 4, SIZES(3, 2, 3, 3));
        tsr_conf_case_output(c, dt, 4, SIZES(1, 2, 5, 5));
      } else {
        tsr_conf_case_input(c, dt, 4, SIZES(1, 3, 3, 3));
        tsr_conf_case_input(c, dt, 4, SIZES(1, 2, 5, 5));
        tsr_conf_case_output(c, dt, 4, SIZES(3, 2, 3, 3));
      }
      break;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
      c->attrs.pool2d = (tsr_pool2d_attrs){.struct_size = sizeof(tsr_pool2d_attrs), .kind = TSR_POOL_AVG,
                                           .kernel = {2, 2}, .stride = {2, 2}, .dilation = {1, 1}};
      if (op == TSR_OP_POOL2D) {
        tsr_conf_case_input(c, dt, 4, SIZES(1, 2, 4, 4));
        tsr_conf_case_output(c, dt, 4, SIZES(1, 2, 2, 2));
      } else {
        tsr_conf_case_input(c, dt, 4, SIZES(1, 2, 2, 2));
        tsr_conf_case_output(c, dt, 4, SIZES(1, 2, 4, 4));
      }
      break;
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
      c->attrs.softmax = (tsr_softmax_attrs){sizeof(tsr_softmax_attrs), 1, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      if (op == TSR_OP_SOFTMAX_BACKWARD) {
        tsr_conf_operand *y = tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
        y->lo = 0.05, y->hi = 0.6;
      }
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_LAYER_NORM:
      c->attrs.layer_norm = (tsr_layer_norm_attrs){sizeof(tsr_layer_norm_attrs), 1, 1, 1e-5};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 1, SIZES(3));
      tsr_conf_case_input(c, dt, 1, SIZES(3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, st, 2, SIZES(2, 1));
      tsr_conf_case_output(c, st, 2, SIZES(2, 1));
      break;
    case TSR_OP_LAYER_NORM_BACKWARD: {
      c->attrs.layer_norm = (tsr_layer_norm_attrs){sizeof(tsr_layer_norm_attrs), 1, 1, 1e-5};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, st, 2, SIZES(2, 1));
      tsr_conf_operand *rstd = tsr_conf_case_input(c, st, 2, SIZES(2, 1));
      rstd->lo = 0.5, rstd->hi = 2;
      tsr_conf_case_input(c, dt, 1, SIZES(3));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 1, SIZES(3));
      tsr_conf_case_output(c, dt, 1, SIZES(3));
      break;
    }
    case TSR_OP_BATCH_NORM:
      c->attrs.batch_norm = (tsr_batch_norm_attrs){sizeof(tsr_batch_norm_attrs), 1e-5, 0.1, 1, 0};
      tsr_conf_case_input(c, dt, 4, SIZES(2, 3, 2, 2));
      for (int i = 0; i < 4; ++i) {
        tsr_conf_operand *o = tsr_conf_case_input(c, st, 1, SIZES(3));
        if (i == 3) o->lo = 0.5, o->hi = 2;
      }
      tsr_conf_case_output(c, dt, 4, SIZES(2, 3, 2, 2));
      for (int i = 0; i < 4; ++i) tsr_conf_case_output(c, st, 1, SIZES(3));
      break;
    case TSR_OP_BATCH_NORM_BACKWARD: {
      c->attrs.batch_norm = (tsr_batch_norm_attrs){sizeof(tsr_batch_norm_attrs), 1e-5, 0.1, 1, 0};
      tsr_conf_case_input(c, dt, 4, SIZES(2, 3, 2, 2));
      tsr_conf_case_input(c, dt, 4, SIZES(2, 3, 2, 2));
      tsr_conf_case_input(c, st, 1, SIZES(3));
      tsr_conf_case_input(c, st, 1, SIZES(3));
      tsr_conf_operand *inv = tsr_conf_case_input(c, st, 1, SIZES(3));
      inv->lo = 0.5, inv->hi = 2;
      tsr_conf_case_output(c, dt, 4, SIZES(2, 3, 2, 2));
      tsr_conf_case_output(c, st, 1, SIZES(3));
      tsr_conf_case_output(c, st, 1, SIZES(3));
      break;
    }
    case TSR_OP_CONCAT:
      c->attrs.concat = (tsr_concat_attrs){sizeof(tsr_concat_attrs), 1, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_input(c, dt, 2, SIZES(2, 2));
      tsr_conf_case_output(c, dt, 2, SIZES(2, 5));
      break;
    case TSR_OP_PAD:
      memset(&c->attrs, 0, sizeof(c->attrs));
      c->attrs.pad.struct_size = sizeof(tsr_pad_attrs);
      c->attrs.pad.mode = TSR_PAD_CONSTANT;
      c->attrs.pad.pad_before[0] = c->attrs.pad.pad_before[1] = 1;
      c->attrs.pad.pad_after[0] = c->attrs.pad.pad_after[1] = 1;
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_case_output(c, dt, 2, SIZES(4, 5));
      break;
    case TSR_OP_GATHER: {
      c->attrs.gather = (tsr_gather_attrs){sizeof(tsr_gather_attrs), 0, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(4, 3));
      tsr_conf_operand *index = tsr_conf_case_input(c, TSR_INT64, 1, SIZES(2));
      index->lo = 0, index->hi = 3;
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    }
    case TSR_OP_SCATTER_ADD: {
      c->attrs.gather = (tsr_gather_attrs){sizeof(tsr_gather_attrs), 0, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_operand *index = tsr_conf_case_input(c, TSR_INT64, 1, SIZES(2));
      index->lo = 0, index->hi = 3;
      tsr_conf_operand *out = tsr_conf_case_output(c, dt, 2, SIZES(4, 3));
      out->read_before_write = 1;
      out->gen = is_float ? TSR_CONF_GEN_UNIFORM : TSR_CONF_GEN_INTS;
      out->lo = -2, out->hi = 2;
      break;
    }
    case TSR_OP_RNG_FILL:
      c->attrs.rng = (tsr_rng_fill_attrs){sizeof(tsr_rng_fill_attrs),
                                          is_float ? TSR_RNG_UNIFORM : TSR_RNG_BERNOULLI, 0, 1, 0,
                                          is_float ? 0.0 : 0.5, 1.0};
      tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      break;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: {
      c->attrs.cross_entropy = (tsr_cross_entropy_attrs){sizeof(tsr_cross_entropy_attrs),
                                                         TSR_REDUCTION_MEAN, 0, -100, 0.0};
      if (op == TSR_OP_CROSS_ENTROPY_BACKWARD) tsr_conf_case_input(c, dt, 0, NULL);
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      tsr_conf_operand *target = tsr_conf_case_input(c, TSR_INT64, 1, SIZES(2));
      target->lo = 0, target->hi = 2;
      if (op == TSR_OP_CROSS_ENTROPY) {
        tsr_conf_case_output(c, dt, 0, NULL);
        tsr_conf_case_output(c, TSR_FLOAT32, 1, SIZES(2));
      } else {
        tsr_conf_operand *lse = tsr_conf_case_input(c, TSR_FLOAT32, 1, SIZES(2));
        lse->lo = 2, lse->hi = 3;
        tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
      }
      break;
    }
    case TSR_OP_SGD_UPDATE: {
      c->attrs.sgd = (tsr_sgd_attrs){sizeof(tsr_sgd_attrs), 0.1, 0.9, 0.0, 0.0, 0, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      for (int i = 0; i < 2; ++i) {
        tsr_conf_operand *o = tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
        o->read_before_write = 1;
        o->gen = TSR_CONF_GEN_UNIFORM;
        o->lo = -1, o->hi = 1;
      }
      break;
    }
    case TSR_OP_ADAM_UPDATE: {
      c->attrs.adam = (tsr_adam_attrs){sizeof(tsr_adam_attrs), 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, 0, 0};
      tsr_conf_case_input(c, dt, 2, SIZES(2, 3));
      for (int i = 0; i < 3; ++i) {
        tsr_conf_operand *o = tsr_conf_case_output(c, dt, 2, SIZES(2, 3));
        o->read_before_write = 1;
        o->gen = TSR_CONF_GEN_UNIFORM;
        o->lo = i == 2 ? 0 : -1, o->hi = 1;
      }
      break;
    }
    default:
      c->has_attrs = 0;
      break;
  }
}

int tsr_conf_cases_emit(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink) {
  switch (op) {
    case TSR_OP_FILL:
    case TSR_OP_COPY:
    case TSR_OP_CAST:
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_BINARY:
    case TSR_OP_COMPARE:
    case TSR_OP_WHERE:
    case TSR_OP_CLAMP:
      tsr_conf_cases_elementwise(op, dtype, sink);
      return 0;
    case TSR_OP_REDUCE:
    case TSR_OP_ARG_REDUCE:
      tsr_conf_cases_reduce(op, dtype, sink);
      return 0;
    case TSR_OP_MATMUL:
      tsr_conf_cases_matmul(dtype, sink);
      return 0;
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      tsr_conf_cases_conv(op, dtype, sink);
      return 0;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD:
    case TSR_OP_BATCH_NORM:
    case TSR_OP_BATCH_NORM_BACKWARD:
      tsr_conf_cases_nn(op, dtype, sink);
      return 0;
    case TSR_OP_CONCAT:
    case TSR_OP_PAD:
    case TSR_OP_GATHER:
    case TSR_OP_SCATTER_ADD:
    case TSR_OP_RNG_FILL:
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD:
    case TSR_OP_SGD_UPDATE:
    case TSR_OP_ADAM_UPDATE:
      tsr_conf_cases_data(op, dtype, sink);
      return 0;
    default:
      return -1;
  }
}

// --- selectors ----------------------------------------------------------------

uint32_t tsr_conf_case_selectors(const tsr_conf_case *c) {
  const tsr_conf_attrs *a = &c->attrs;
  int32_t v = -1;
  uint32_t extra = 0;
  switch (c->op) {
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD: v = a->unary.fn; break;
    case TSR_OP_BINARY: v = a->binary.fn; break;
    case TSR_OP_COMPARE: v = a->compare.fn; break;
    case TSR_OP_REDUCE: v = a->reduce.fn; break;
    case TSR_OP_ARG_REDUCE: v = a->arg_reduce.fn; break;
    case TSR_OP_MATMUL:
      v = a->matmul.activation;
      if (a->matmul.has_bias) extra = 1u << TSR_ACTIVATION_COUNT;
      break;
    case TSR_OP_CONV2D:
      v = a->conv2d.activation;
      if (a->conv2d.has_bias) extra = 1u << TSR_ACTIVATION_COUNT;
      break;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD: v = a->pool2d.kind; break;
    case TSR_OP_PAD: v = a->pad.mode; break;
    case TSR_OP_RNG_FILL: v = a->rng.distribution; break;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: v = a->cross_entropy.reduction; break;
    default: return 0;
  }
  if (v < 0 || v >= tsr_op_selector_count(c->op) || v >= TSR_CONF_MAX_SELECTORS) return extra;
  return (1u << v) | extra;
}
