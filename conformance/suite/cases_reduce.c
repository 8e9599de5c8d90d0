// The reduction battery: REDUCE (every fn, several axis masks, empty axes,
// long reductions, non-contiguous and misaligned inputs, NaN, int
// wrap-around) and ARG_REDUCE (ties, NaN, every axis).
#include <stdio.h>
#include <string.h>

#include "suite.h"

typedef struct reduce_shape {
  const char *category;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  uint32_t axes;
  tsr_conf_layout_t layout;
  uint32_t misalign;
  int special;
  int full_only;
} reduce_shape;

static const reduce_shape shapes[] = {
    {"basic", 2, {13, 5}, 0x2, 0, 0, 0, 0},
    {"basic", 2, {13, 5}, 0x1, 0, 0, 0, 0},
    {"basic", 2, {13, 5}, 0x3, 0, 0, 0, 0},
    {"scalar", 0, {0}, 0x0, 0, 0, 0, 0},
    {"size 1", 1, {1}, 0x1, 0, 0, 0, 0},
    {"empty", 2, {3, 0}, 0x2, 0, 0, 0, 0},   // an empty reduced axis
    {"empty", 2, {0, 4}, 0x2, 0, 0, 0, 0},   // an empty output
    {"odd sizes", 3, {3, 1, 17}, 0x5, 0, 0, 0, 0},
    {"odd sizes", 3, {7, 11, 3}, 0x2, 0, 0, 0, 0},
    {"no axes", 2, {4, 3}, 0x0, 0, 0, 0, 0},
    {"vector tail", 2, {67, 5}, 0x1, 0, 0, 0, 0},
    {"vector tail", 1, {259}, 0x1, 0, 0, 0, 0},
    {"large reduction", 2, {3, 4099}, 0x2, 0, 0, 0, 0},
    {"large reduction", 1, {20011}, 0x1, 0, 0, 0, 0},
    {"non-contiguous", 2, {13, 5}, 0x2, TSR_CONF_TRANSPOSED, 0, 0, 0},
    {"non-contiguous", 3, {5, 6, 7}, 0x5, TSR_CONF_STRIDED, 0, 0, 0},
    {"misaligned", 2, {9, 10}, 0x2, 0, 1, 0, 0},
    {"special values", 2, {6, 16}, 0x2, 0, 0, 1, 0},
    {"large reduction", 1, {1000003}, 0x1, 0, 1, 0, 1},
    {"large reduction", 3, {33, 1031, 7}, 0x2, TSR_CONF_TRANSPOSED, 0, 0, 1},
    {"large", 5, {2, 3, 4, 5, 6}, 0x15, 0, 0, 0, 1},
};

static const char *reduce_name(tsr_reduce_fn_t fn) {
  static const char *const names[] = {"sum", "mean", "max", "min", "prod"};
  return fn >= 0 && fn < TSR_REDUCE_FN_COUNT ? names[fn] : "?";
}

static void shape_text(const reduce_shape *s, char *buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int32_t d = 0; d < s->rank && n < size; ++d) {
    n += (size_t)snprintf(buf + n, size - n, d ? ",%lld" : "%lld", (long long)s->sizes[d]);
  }
  if (n < size) n += (size_t)snprintf(buf + n, size - n, "] axes 0x%x", s->axes);
  if (s->layout == TSR_CONF_TRANSPOSED && n < size) n += (size_t)snprintf(buf + n, size - n, " transposed");
  if (s->layout == TSR_CONF_STRIDED && n < size) n += (size_t)snprintf(buf + n, size - n, " strided");
  if (s->misalign && n < size) snprintf(buf + n, size - n, " offset +%u elements", s->misalign);
}

static void emit_reduce(tsr_dtype_t dt, tsr_conf_sink *sink) {
  int is_float = tsr_oracle_dtype_is_float(dt);
  for (tsr_reduce_fn_t fn = 0; fn < TSR_REDUCE_FN_COUNT; ++fn) {
    if (fn == TSR_REDUCE_MEAN && !is_float) continue;
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
      const reduce_shape *s = &shapes[k];
      if (s->full_only && !sink->full) continue;
      int64_t n = 1;
      for (int32_t d = 0; d < s->rank; ++d) {
        if (s->axes & (1u << d)) n *= s->sizes[d];
      }
      // A product of thousands of factors over- or underflows: keep PROD short.
      if (fn == TSR_REDUCE_PROD && n > 300) continue;
      char shape[160];
      shape_text(s, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_REDUCE, s->category, "%s %s %s", reduce_name(fn),
                         tsr_oracle_dtype_name(dt), shape);
      c.has_attrs = 1;
      c.attrs.reduce = (tsr_reduce_attrs){sizeof(tsr_reduce_attrs), fn, s->axes};
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      x->layout = s->layout;
      x->misalign = s->misalign;
      if (fn == TSR_REDUCE_PROD) {
        x->gen = is_float ? TSR_CONF_GEN_UNIFORM : TSR_CONF_GEN_INTS;
        x->lo = is_float ? 0.8 : -3, x->hi = is_float ? 1.25 : 3;
      } else if (!is_float) {
        x->lo = -100000, x->hi = 100000;
      }
      if (s->special) x->gen = TSR_CONF_GEN_SPECIAL;
      int64_t out_sizes[TSR_MAX_RANK];
      for (int32_t d = 0; d < s->rank; ++d) out_sizes[d] = (s->axes & (1u << d)) ? 1 : s->sizes[d];
      tsr_conf_case_output(&c, dt, s->rank, out_sizes);
      int64_t out_numel = 1;
      for (int32_t d = 0; d < s->rank; ++d) out_numel *= out_sizes[d];
      if (n == 0 && out_numel > 0 && (fn == TSR_REDUCE_MAX || fn == TSR_REDUCE_MIN)) {
        c.category = "invalid call";
        c.expect = TSR_INVALID_ARGUMENT;
        c.expect_at_plan = 1;
      }
      sink->emit(sink->ctx, &c);
    }
  }
  if (!is_float) {
    // Sums that overflow wrap modulo 2^bits.
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_REDUCE, "special values", "sum %s wraps around", tsr_oracle_dtype_name(dt));
    c.has_attrs = 1;
    c.attrs.reduce = (tsr_reduce_attrs){sizeof(tsr_reduce_attrs), TSR_REDUCE_SUM, 0x2};
    tsr_conf_operand *x = tsr_conf_case_input(&c, dt, 2, (const int64_t[]){4, 33});
    x->gen = TSR_CONF_GEN_SPECIAL;
    tsr_conf_case_output(&c, dt, 2, (const int64_t[]){4, 1});
    sink->emit(sink->ctx, &c);
  }
}

static void emit_arg_reduce(tsr_dtype_t dt, tsr_conf_sink *sink) {
  int is_float = tsr_oracle_dtype_is_float(dt);
  for (tsr_arg_reduce_fn_t fn = 0; fn < TSR_ARG_REDUCE_FN_COUNT; ++fn) {
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
      const reduce_shape *s = &shapes[k];
      if ((s->full_only && !sink->full) || s->rank == 0) continue;
      int32_t axis = 0;
      while (axis < s->rank - 1 && !(s->axes & (1u << axis))) ++axis;
      char shape[160];
      shape_text(s, shape, sizeof(shape));
      tsr_conf_case c;
      tsr_conf_case_init(&c, TSR_OP_ARG_REDUCE, s->category, "%s %s %s axis %d",
                         fn == TSR_ARG_REDUCE_ARGMAX ? "argmax" : "argmin", tsr_oracle_dtype_name(dt),
                         shape, (int)axis);
      c.has_attrs = 1;
      c.attrs.arg_reduce = (tsr_arg_reduce_attrs){sizeof(tsr_arg_reduce_attrs), fn, axis};
      tsr_conf_operand *x = tsr_conf_case_input(&c, dt, s->rank, s->sizes);
      x->layout = s->layout;
      x->misalign = s->misalign;
      // Few distinct values, so ties (the first one wins) are common.
      x->gen = TSR_CONF_GEN_INTS;
      x->lo = -4, x->hi = 4;
      if (s->special) x->gen = TSR_CONF_GEN_SPECIAL;
      if (strcmp(s->category, "large reduction") == 0 && is_float) {
        x->gen = TSR_CONF_GEN_UNIFORM, x->lo = -1e3, x->hi = 1e3;
      }
      int64_t out_sizes[TSR_MAX_RANK];
      for (int32_t d = 0; d < s->rank; ++d) out_sizes[d] = d == axis ? 1 : s->sizes[d];
      tsr_conf_case_output(&c, TSR_INT64, s->rank, out_sizes);
      if (s->sizes[axis] == 0) {
        c.category = "invalid call";
        c.expect = TSR_INVALID_ARGUMENT;
        c.expect_at_plan = 1;
      }
      sink->emit(sink->ctx, &c);
    }
  }
}

void tsr_conf_cases_reduce(int32_t op, tsr_dtype_t dtype, tsr_conf_sink *sink) {
  if (op == TSR_OP_REDUCE) {
    emit_reduce(dtype, sink);
  } else {
    emit_arg_reduce(dtype, sink);
  }
}
