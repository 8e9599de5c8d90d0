// The elementwise battery: FILL, COPY, CAST, UNARY, UNARY_BACKWARD, BINARY,
// COMPARE, WHERE, CLAMP over a list of shape variants (size 0 and 1, odd and
// prime sizes, vector tails, non-contiguous, broadcast, misaligned, in
// place, special values, and larger shapes with --full).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

typedef struct ew_variant {
  const char *category;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  tsr_conf_layout_t in_layout;
  tsr_conf_layout_t out_layout;
  int32_t broadcast_input;  // -1: none; else that input gets |broadcast_mask|
  uint32_t broadcast_mask;
  uint32_t misalign;
  int inplace;              // the output aliases input 0 (in-place ops only)
  int special;              // inputs drawn from the special values
  int full_only;
} ew_variant;

static const ew_variant variants[] = {
    {"basic", 2, {13, 5}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"scalar", 0, {0}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"empty", 1, {0}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"empty", 3, {4, 0, 3}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"size 1", 1, {1}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"odd sizes", 1, {7}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"odd sizes", 3, {3, 1, 17}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"vector tail", 1, {67}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"vector tail", 2, {5, 259}, 0, 0, -1, 0, 0, 0, 0, 0},
    {"non-contiguous", 2, {13, 5}, TSR_CONF_TRANSPOSED, TSR_CONF_TRANSPOSED, -1, 0, 0, 0, 0, 0},
    {"non-contiguous", 2, {9, 7}, TSR_CONF_STRIDED, TSR_CONF_CONTIGUOUS, -1, 0, 0, 0, 0, 0},
    {"non-contiguous", 3, {4, 5, 3}, TSR_CONF_CONTIGUOUS, TSR_CONF_STRIDED, -1, 0, 0, 0, 0, 0},
    {"broadcast", 2, {6, 7}, 0, 0, 0, 0x1, 0, 0, 0, 0},
    {"broadcast", 3, {3, 4, 5}, 0, 0, 1, 0x5, 0, 0, 0, 0},
    {"misaligned", 1, {37}, 0, 0, -1, 0, 1, 0, 0, 0},
    {"misaligned", 2, {3, 11}, TSR_CONF_TRANSPOSED, 0, -1, 0, 3, 0, 0, 0},
    {"in place", 1, {45}, 0, 0, -1, 0, 0, 1, 0, 0},
    {"in place", 2, {9, 7}, TSR_CONF_STRIDED, TSR_CONF_STRIDED, -1, 0, 0, 1, 0, 0},
    {"special values", 1, {64}, 0, 0, -1, 0, 0, 0, 1, 0},
    {"large", 2, {1031, 67}, 0, 0, -1, 0, 0, 0, 0, 1},
    {"large", 6, {2, 3, 1, 4, 5, 3}, TSR_CONF_TRANSPOSED, 0, -1, 0, 0, 0, 0, 1},
    {"large", 1, {100003}, 0, 0, -1, 0, 1, 0, 0, 1},
};
#define VARIANT_COUNT (sizeof(variants) / sizeof(variants[0]))

static void shape_text(const ew_variant *v, char *buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int32_t d = 0; d < v->rank && n < size; ++d) {
    n += (size_t)snprintf(buf + n, size - n, d ? ",%lld" : "%lld", (long long)v->sizes[d]);
  }
  if (n < size) n += (size_t)snprintf(buf + n, size - n, "]");
  if (v->in_layout == TSR_CONF_TRANSPOSED && n < size) n += (size_t)snprintf(buf + n, size - n, " in:transposed");
  if (v->in_layout == TSR_CONF_STRIDED && n < size) n += (size_t)snprintf(buf + n, size - n, " in:strided");
  if (v->out_layout == TSR_CONF_TRANSPOSED && n < size) n += (size_t)snprintf(buf + n, size - n, " out:transposed");
  if (v->out_layout == TSR_CONF_STRIDED && n < size) n += (size_t)snprintf(buf + n, size - n, " out:strided");
  if (v->broadcast_input >= 0 && n < size) {
    n += (size_t)snprintf(buf + n, size - n, " input %d broadcast 0x%x", (int)v->broadcast_input, v->broadcast_mask);
  }
  if (v->misalign && n < size) n += (size_t)snprintf(buf + n, size - n, " offset +%u elements", v->misalign);
  if (v->inplace && n < size) snprintf(buf + n, size - n, " in place");
}

// Applies the variant's layout to the operands of |c|, already added with
// the variant's sizes.
static void variant_apply(const ew_variant *v, tsr_conf_case *c, int inplace_allowed) {
  for (int32_t i = 0; i < c->num_inputs; ++i) {
    tsr_conf_operand *o = &c->operands[i];
    if (o->rank != v->rank) continue;  // e.g. a scalar attribute-like operand
    o->layout = v->in_layout;
    o->misalign = v->misalign;
    if (v->broadcast_input == i || (v->broadcast_input >= c->num_inputs && i == c->num_inputs - 1)) {
      o->layout = TSR_CONF_BROADCAST;
      o->broadcast_mask = v->broadcast_mask;
    }
    if (v->special) o->gen = o->gen == TSR_CONF_GEN_BOOL ? TSR_CONF_GEN_BOOL : TSR_CONF_GEN_SPECIAL;
  }
  for (int32_t k = 0; k < c->num_outputs; ++k) {
    tsr_conf_operand *o = tsr_conf_case_out(c, k);
    o->layout = v->out_layout;
    o->misalign = v->misalign;
  }
  if (v->inplace && inplace_allowed) {
    tsr_conf_operand *out = tsr_conf_case_out(c, 0);
    c->operands[0].layout = out->layout;
    c->operands[0].misalign = out->misalign;
    out->alias_of = 0;
  }
}

static int variant_skip(const ew_variant *v, const tsr_conf_sink *sink, int inplace_allowed,
                        int allow_special) {
  if (v->full_only && !sink->full) return 1;
  if (v->inplace && !inplace_allowed) return 1;
  if (v->special && !allow_special) return 1;
  return 0;
}

// --- value domains -------------------------------------------------------------

typedef struct domain {
  tsr_conf_gen_t gen;
  double lo, hi;
} domain;

static domain unary_domain(tsr_unary_fn_t fn, tsr_dtype_t dt) {
  if (!tsr_oracle_dtype_is_float(dt)) {
    if (dt == TSR_BOOL) return (domain){TSR_CONF_GEN_BOOL, 0, 1};
    return (domain){TSR_CONF_GEN_INTS, -1000, 1000};
  }
  switch (fn) {
    case TSR_UNARY_EXP: return (domain){TSR_CONF_GEN_UNIFORM, -10, 10};
    case TSR_UNARY_LOG: return (domain){TSR_CONF_GEN_UNIFORM, 0.01, 100};
    case TSR_UNARY_SQRT: return (domain){TSR_CONF_GEN_UNIFORM, 0, 50};
    case TSR_UNARY_RSQRT: return (domain){TSR_CONF_GEN_UNIFORM, 0.01, 50};
    case TSR_UNARY_RECIPROCAL: return (domain){TSR_CONF_GEN_NONZERO, 0.05, 20};
    case TSR_UNARY_SIN:
    case TSR_UNARY_COS: return (domain){TSR_CONF_GEN_UNIFORM, -20, 20};
    case TSR_UNARY_TANH: return (domain){TSR_CONF_GEN_UNIFORM, -6, 6};
    case TSR_UNARY_SIGMOID: return (domain){TSR_CONF_GEN_UNIFORM, -12, 12};
    case TSR_UNARY_GELU:
    case TSR_UNARY_GELU_TANH: return (domain){TSR_CONF_GEN_UNIFORM, -6, 6};
    case TSR_UNARY_SILU: return (domain){TSR_CONF_GEN_UNIFORM, -10, 10};
    case TSR_UNARY_ELU: return (domain){TSR_CONF_GEN_UNIFORM, -6, 4};
    case TSR_UNARY_LOG1P: return (domain){TSR_CONF_GEN_UNIFORM, -0.95, 20};
    case TSR_UNARY_EXPM1: return (domain){TSR_CONF_GEN_UNIFORM, -6, 6};
    case TSR_UNARY_ERF: return (domain){TSR_CONF_GEN_UNIFORM, -4, 4};
    default: return (domain){TSR_CONF_GEN_UNIFORM, -8, 8};
  }
}

static double unary_alpha(tsr_unary_fn_t fn) {
  if (fn == TSR_UNARY_LEAKY_RELU) return 0.01;
  if (fn == TSR_UNARY_ELU) return 1.0;
  return 0.0;
}

static const char *unary_name(tsr_unary_fn_t fn) {
  static const char *const names[TSR_UNARY_FN_COUNT] = {
      "neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos",
      "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "leaky_relu", "elu", "sign",
      "floor", "ceil", "round", "logical_not", "log1p", "expm1", "erf"};
  return fn >= 0 && fn < TSR_UNARY_FN_COUNT ? names[fn] : "?";
}

static const char *binary_name(tsr_binary_fn_t fn) {
  static const char *const names[TSR_BINARY_FN_COUNT] = {
      "add", "sub", "mul", "div", "maximum", "minimum", "pow", "logical_and", "logical_or", "logical_xor"};
  return fn >= 0 && fn < TSR_BINARY_FN_COUNT ? names[fn] : "?";
}

static const char *compare_name(tsr_compare_fn_t fn) {
  static const char *const names[TSR_COMPARE_FN_COUNT] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return fn >= 0 && fn < TSR_COMPARE_FN_COUNT ? names[fn] : "?";
}

// Special values without infinities, for functions whose value at +-inf the
// spec leaves open (x * Phi(x) at -inf is 0 as a limit, NaN in IEEE).
static void init_finite_specials(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *t,
                                 uint64_t *rng) {
  static const double values[] = {NAN, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1.5, -3.75, 3.0, 0.125};
  (void)c;
  (void)index;
  for (int64_t i = 0; i < t->numel; ++i) {
    t->v[i] = tsr_oracle_round(values[tsr_conf_random_next(rng) % (sizeof(values) / sizeof(values[0]))], t->dtype);
  }
}

// --- per op ------------------------------------------------------------------------

static void emit_fill(tsr_dtype_t dt, tsr_conf_sink *sink) {
  static const double values[] = {2.7, -3.5, NAN, INFINITY, -0.0, 1e10, 0.5, -2.5e9};
  for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
    const ew_variant *v = &variants[vi];
    if (variant_skip(v, sink, 0, 0)) continue;
    char shape[160];
    shape_text(v, shape, sizeof(shape));
    for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); ++k) {
      if (k > 1 && strcmp(v->category, "basic") != 0 && strcmp(v->category, "odd sizes") != 0) break;
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_FILL, k > 1 ? "special values" : v->category, "fill %g %s %s",
                         values[k], tsr_oracle_dtype_name(dt), shape);
      c.has_attrs = 1;
      c.attrs.fill = (tsr_fill_attrs){sizeof(tsr_fill_attrs), values[k]};
      tsr_conf_case_output(&c, dt, v->rank, v->sizes);
      variant_apply(v, &c, 0);
      sink->emit(sink->ctx, &c);
    }
  }
  // attrs NULL: the default value 0.
  tsr_conf_case c;
  tsr_conf_case_init(&c, TSR_OP_FILL, "attributes", "fill with attrs NULL (value 0) %s [13,5]",
                     tsr_oracle_dtype_name(dt));
  c.has_attrs = 1;
  c.attrs.fill = (tsr_fill_attrs){sizeof(tsr_fill_attrs), 0.0};
  c.attrs_pass = TSR_CONF_ATTRS_NULL;
  tsr_conf_case_output(&c, dt, 2, (const int64_t[]){13, 5});
  sink->emit(sink->ctx, &c);
}

static void emit_copy(tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
    const ew_variant *v = &variants[vi];
    if (variant_skip(v, sink, 0, 1)) continue;
    char shape[160];
    shape_text(v, shape, sizeof(shape));
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_COPY, v->category, "copy %s %s", tsr_oracle_dtype_name(dt), shape);
    tsr_conf_case_input(&c, dt, v->rank, v->sizes);
    tsr_conf_case_output(&c, dt, v->rank, v->sizes);
    variant_apply(v, &c, 0);
    sink->emit(sink->ctx, &c);
  }
}

static void emit_cast(tsr_dtype_t from, tsr_conf_sink *sink) {
  for (tsr_dtype_t to = 0; to < TSR_DTYPE_COUNT; ++to) {
    if (!(sink->dtype_mask & TSR_DTYPE_BIT(to))) continue;
    for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
      const ew_variant *v = &variants[vi];
      if (variant_skip(v, sink, 0, 1)) continue;
      // Every layout for one target; the others get the value-heavy cases.
      if (to != from && strcmp(v->category, "basic") != 0 && strcmp(v->category, "special values") != 0 &&
          strcmp(v->category, "non-contiguous") != 0 && strcmp(v->category, "empty") != 0) {
        continue;
      }
      char shape[160];
      shape_text(v, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_CAST, v->category, "cast %s to %s %s", tsr_oracle_dtype_name(from),
                         tsr_oracle_dtype_name(to), shape);
      tsr_conf_operand *x = tsr_conf_case_input(&c, from, v->rank, v->sizes);
      tsr_conf_case_output(&c, to, v->rank, v->sizes);
      variant_apply(v, &c, 0);
      if (!v->special && tsr_oracle_dtype_is_float(from)) {
        // Halves and out-of-range values: rounding, truncation, saturation.
        x->lo = tsr_oracle_dtype_is_float(to) ? -1e5 : -6e9;
        x->hi = -x->lo;
        if (from == TSR_FLOAT16) x->lo = -6e4, x->hi = 6e4;
      }
      if (!v->special && tsr_oracle_dtype_is_int(from)) {
        x->lo = -3e9, x->hi = 3e9;
        if (from == TSR_INT32) x->lo = -2147483647.0, x->hi = 2147483647.0;
      }
      sink->emit(sink->ctx, &c);
    }
  }
}

static void emit_unary(tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
    if (!tsr_oracle_unary_accepts(fn, dt)) continue;
    domain dom = unary_domain(fn, dt);
    for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
      const ew_variant *v = &variants[vi];
      if (variant_skip(v, sink, 1, 1)) continue;
      char shape[160];
      shape_text(v, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_UNARY, v->category, "%s %s %s", unary_name(fn),
                         tsr_oracle_dtype_name(dt), shape);
      c.has_attrs = 1;
      c.attrs.unary = (tsr_unary_attrs){sizeof(tsr_unary_attrs), fn, 0, unary_alpha(fn)};
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, v->rank, v->sizes);
      x->gen = dom.gen, x->lo = dom.lo, x->hi = dom.hi;
      tsr_conf_case_output(&c, dt, v->rank, v->sizes);
      variant_apply(v, &c, 1);
      if (v->special && (fn == TSR_UNARY_GELU || fn == TSR_UNARY_GELU_TANH || fn == TSR_UNARY_SILU)) {
        x->gen = TSR_CONF_GEN_CUSTOM;
        c.init = init_finite_specials;
      }
      sink->emit(sink->ctx, &c);
    }
  }
  if (tsr_oracle_dtype_is_float(dt)) {
    // LEAKY_RELU and ELU with another alpha, and a larger attribute struct.
    for (int k = 0; k < 2; ++k) {
      tsr_unary_fn_t fn = k == 0 ? TSR_UNARY_LEAKY_RELU : TSR_UNARY_ELU;
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_UNARY, "attributes", "%s alpha 0.3 %s [13,5] attrs larger than sizeof",
                         unary_name(fn), tsr_oracle_dtype_name(dt));
      c.has_attrs = 1;
      c.attrs.unary = (tsr_unary_attrs){sizeof(tsr_unary_attrs), fn, 0, 0.3};
      c.attrs_pass = TSR_CONF_ATTRS_LONG;
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, 2, (const int64_t[]){13, 5});
      x->lo = -4, x->hi = 4;
      tsr_conf_case_output(&c, dt, 2, (const int64_t[]){13, 5});
      sink->emit(sink->ctx, &c);
    }
  }
}

static void emit_unary_backward(tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (tsr_unary_fn_t fn = 0; fn < TSR_UNARY_FN_COUNT; ++fn) {
    if (!tsr_oracle_unary_has_backward(fn) || !tsr_oracle_unary_accepts(fn, dt)) continue;
    domain dom = unary_domain(fn, dt);
    for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
      const ew_variant *v = &variants[vi];
      if (variant_skip(v, sink, 0, 1)) continue;
      char shape[160];
      shape_text(v, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_UNARY_BACKWARD, v->category, "%s' %s %s", unary_name(fn),
                         tsr_oracle_dtype_name(dt), shape);
      c.has_attrs = 1;
      c.attrs.unary = (tsr_unary_attrs){sizeof(tsr_unary_attrs), fn, 0, unary_alpha(fn)};
      tsr_conf_case_input(&c, dt, v->rank, v->sizes);  // dy
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, v->rank, v->sizes);
      x->gen = dom.gen, x->lo = dom.lo, x->hi = dom.hi;
      tsr_conf_case_output(&c, dt, v->rank, v->sizes);
      variant_apply(v, &c, 0);
      if (v->special) {
        // NaN must propagate through f'; dy stays ordinary.
        c.operands[0].gen = TSR_CONF_GEN_UNIFORM;
        x->gen = TSR_CONF_GEN_CUSTOM;
        c.init = init_finite_specials;
      }
      sink->emit(sink->ctx, &c);
    }
  }
}

static domain binary_domain(tsr_binary_fn_t fn, tsr_dtype_t dt, int which) {
  if (dt == TSR_BOOL) return (domain){TSR_CONF_GEN_BOOL, 0, 1};
  if (!tsr_oracle_dtype_is_float(dt)) {
    if (fn == TSR_BINARY_DIV && which == 1) return (domain){TSR_CONF_GEN_INTS, -20, 20};
    if (fn == TSR_BINARY_MAXIMUM || fn == TSR_BINARY_MINIMUM) return (domain){TSR_CONF_GEN_INTS, -5, 5};
    return (domain){TSR_CONF_GEN_INTS, -1000, 1000};
  }
  switch (fn) {
    case TSR_BINARY_DIV: return which == 1 ? (domain){TSR_CONF_GEN_NONZERO, 0.25, 4} : (domain){TSR_CONF_GEN_UNIFORM, -4, 4};
    case TSR_BINARY_POW: return which == 0 ? (domain){TSR_CONF_GEN_UNIFORM, 0.25, 3} : (domain){TSR_CONF_GEN_UNIFORM, -3, 3};
    case TSR_BINARY_MAXIMUM:
    case TSR_BINARY_MINIMUM: return (domain){TSR_CONF_GEN_INTS, -3, 3};  // ties happen
    default: return (domain){TSR_CONF_GEN_UNIFORM, -4, 4};
  }
}

static int binary_accepts(tsr_binary_fn_t fn, tsr_dtype_t dt) {
  int logical = fn == TSR_BINARY_LOGICAL_AND || fn == TSR_BINARY_LOGICAL_OR || fn == TSR_BINARY_LOGICAL_XOR;
  if (dt == TSR_BOOL) return logical;
  if (logical) return 0;
  if (fn == TSR_BINARY_POW) return tsr_oracle_dtype_is_float(dt);
  return 1;
}

static void binary_case(tsr_conf_case *c, const ew_variant *v, tsr_binary_fn_t fn, tsr_dtype_t dt,
                        double alpha, const char *extra) {
  char shape[160];
  shape_text(v, shape, sizeof(shape));
  tsr_conf_case_init(c, TSR_OP_BINARY, v->category, "%s %s %s%s", binary_name(fn),
                     tsr_oracle_dtype_name(dt), shape, extra);
  c->has_attrs = 1;
  c->attrs.binary = (tsr_binary_attrs){sizeof(tsr_binary_attrs), fn, 0, alpha};
  for (int k = 0; k < 2; ++k) {
    domain dom = binary_domain(fn, dt, k);
    tsr_conf_operand *x = tsr_conf_case_input(c, dt, v->rank, v->sizes);
    x->gen = dom.gen, x->lo = dom.lo, x->hi = dom.hi;
  }
  tsr_conf_case_output(c, dt, v->rank, v->sizes);
}

static void emit_binary(tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (tsr_binary_fn_t fn = 0; fn < TSR_BINARY_FN_COUNT; ++fn) {
    if (!binary_accepts(fn, dt)) continue;
    for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
      const ew_variant *v = &variants[vi];
      if (variant_skip(v, sink, 1, 1)) continue;
      tsr_conf_case c;
      binary_case(&c, v, fn, dt, 1.0, "");
      variant_apply(v, &c, 1);
      sink->emit(sink->ctx, &c);
      if (v->inplace) {
        // The output aliasing b instead of a.
        binary_case(&c, v, fn, dt, 1.0, " (aliasing b)");
        variant_apply(v, &c, 1);
        c.operands[1].layout = c.operands[0].layout;
        c.operands[1].misalign = c.operands[0].misalign;
        tsr_conf_case_out(&c, 0)->alias_of = 1;
        sink->emit(sink->ctx, &c);
      }
    }
  }
  if (dt == TSR_BOOL) return;
  const ew_variant *basic = &variants[0], *bcast = &variants[12];
  tsr_conf_case c;
  // alpha != 1 scales b (ADD and SUB only).
  double alpha = tsr_oracle_dtype_is_float(dt) ? -2.5 : 3.0;
  binary_case(&c, basic, TSR_BINARY_ADD, dt, alpha, " alpha != 1");
  c.category = "attributes";
  sink->emit(sink->ctx, &c);
  binary_case(&c, bcast, TSR_BINARY_SUB, dt, alpha, " alpha != 1");
  variant_apply(bcast, &c, 1);
  c.category = "attributes";
  sink->emit(sink->ctx, &c);
  // An attribute struct that ends before alpha: alpha takes its default 1.
  binary_case(&c, basic, TSR_BINARY_SUB, dt, 1.0, " attrs without alpha (default 1)");
  c.category = "attributes";
  c.attrs_pass = TSR_CONF_ATTRS_SHORT;
  c.attrs_size = offsetof(tsr_binary_attrs, fn) + sizeof(tsr_binary_fn_t);
  sink->emit(sink->ctx, &c);
  if (tsr_oracle_dtype_is_int(dt)) {
    // docs/abi.md 10.6: an int alpha must be integral.
    binary_case(&c, basic, TSR_BINARY_ADD, dt, 0.5, " non-integral alpha (invalid)");
    c.category = "invalid call";
    c.expect = TSR_INVALID_ARGUMENT;
    c.expect_at_plan = 1;
    sink->emit(sink->ctx, &c);
  }
}

static void emit_compare(tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (tsr_compare_fn_t fn = 0; fn < TSR_COMPARE_FN_COUNT; ++fn) {
    for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
      const ew_variant *v = &variants[vi];
      if (variant_skip(v, sink, 0, 1)) continue;
      char shape[160];
      shape_text(v, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_COMPARE, v->category, "%s %s %s", compare_name(fn),
                         tsr_oracle_dtype_name(dt), shape);
      c.has_attrs = 1;
      c.attrs.compare = (tsr_compare_attrs){sizeof(tsr_compare_attrs), fn, 0};
      for (int k = 0; k < 2; ++k) {
        tsr_conf_operand *x = tsr_conf_case_input(&c, dt, v->rank, v->sizes);
        if (dt != TSR_BOOL) x->gen = TSR_CONF_GEN_INTS, x->lo = -2, x->hi = 2;  // equal pairs happen
      }
      tsr_conf_case_output(&c, TSR_BOOL, v->rank, v->sizes);
      variant_apply(v, &c, 0);
      sink->emit(sink->ctx, &c);
    }
  }
}

static void emit_where(tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
    const ew_variant *v = &variants[vi];
    if (variant_skip(v, sink, 0, 1)) continue;
    for (int cond_broadcast = 0; cond_broadcast < 2; ++cond_broadcast) {
      if (cond_broadcast && (v->rank < 2 || strcmp(v->category, "basic") != 0)) continue;
      char shape[160];
      shape_text(v, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_WHERE, cond_broadcast ? "broadcast" : v->category, "where %s %s%s",
                         tsr_oracle_dtype_name(dt), shape, cond_broadcast ? " cond broadcast 0x2" : "");
      tsr_conf_case_input(&c, TSR_BOOL, v->rank, v->sizes);
      tsr_conf_case_input(&c, dt, v->rank, v->sizes);
      tsr_conf_case_input(&c, dt, v->rank, v->sizes);
      tsr_conf_case_output(&c, dt, v->rank, v->sizes);
      variant_apply(v, &c, 0);
      if (cond_broadcast) {
        c.operands[0].layout = TSR_CONF_BROADCAST;
        c.operands[0].broadcast_mask = 0x2;
      }
      sink->emit(sink->ctx, &c);
    }
  }
}

static void emit_clamp(tsr_dtype_t dt, tsr_conf_sink *sink) {
  typedef struct bounds {
    const char *name;
    double lo, hi;
    uint32_t has_lo, has_hi;
    int null_attrs;
  } bounds;
  const bounds list[] = {
      {"[-1.5, 2.25]", -1.5, 2.25, 1, 1, 0}, {"min 0.5", 0.5, 0, 1, 0, 0},
      {"max -0.75", 0, -0.75, 0, 1, 0},      {"lo > hi", 2, -1, 1, 1, 0},
      {"NaN max", 0, NAN, 0, 1, 0},          {"no bounds (attrs NULL)", 0, 0, 0, 0, 1},
  };
  for (size_t b = 0; b < sizeof(list) / sizeof(list[0]); ++b) {
    if (!tsr_oracle_dtype_is_float(dt) && isnan(list[b].hi)) continue;
    for (size_t vi = 0; vi < VARIANT_COUNT; ++vi) {
      const ew_variant *v = &variants[vi];
      if (variant_skip(v, sink, 1, 1)) continue;
      if (b > 0 && strcmp(v->category, "basic") != 0 && strcmp(v->category, "special values") != 0 &&
          strcmp(v->category, "in place") != 0) {
        continue;
      }
      char shape[160];
      shape_text(v, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_CLAMP, list[b].null_attrs ? "attributes" : v->category,
                         "clamp %s %s %s", list[b].name, tsr_oracle_dtype_name(dt), shape);
      c.has_attrs = 1;
      c.attrs.clamp = (tsr_clamp_attrs){sizeof(tsr_clamp_attrs), list[b].lo, list[b].hi,
                                        list[b].has_lo, list[b].has_hi};
      if (list[b].null_attrs) c.attrs_pass = TSR_CONF_ATTRS_NULL;
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, v->rank, v->sizes);
      if (!tsr_oracle_dtype_is_float(dt)) x->lo = -5, x->hi = 5;
      tsr_conf_case_output(&c, dt, v->rank, v->sizes);
      variant_apply(v, &c, 1);
      sink->emit(sink->ctx, &c);
    }
  }
}

void tsr_conf_cases_elementwise(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink) {
  switch (op) {
    case TSR_OP_FILL: emit_fill(dtype, sink); break;
    case TSR_OP_COPY: emit_copy(dtype, sink); break;
    case TSR_OP_CAST: emit_cast(dtype, sink); break;
    case TSR_OP_UNARY: emit_unary(dtype, sink); break;
    case TSR_OP_UNARY_BACKWARD: emit_unary_backward(dtype, sink); break;
    case TSR_OP_BINARY: emit_binary(dtype, sink); break;
    case TSR_OP_COMPARE: emit_compare(dtype, sink); break;
    case TSR_OP_WHERE: emit_where(dtype, sink); break;
    case TSR_OP_CLAMP: emit_clamp(dtype, sink); break;
    default: break;
  }
}
