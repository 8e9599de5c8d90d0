// The MATMUL battery: odd and empty M, K, N; K = 0; batch broadcast;
// transposed and strided operands; bias; alpha and beta; every epilogue
// activation; misaligned operands; NaN in the output before the call (which
// beta = 0 must not read).
#include <stdio.h>
#include <string.h>

#include "suite.h"

typedef struct mm_shape {
  const char *category;
  int64_t batch[2];  // 0: no batch dimension
  int64_t m, k, n;
  tsr_conf_layout_t a_layout, b_layout, out_layout;
  uint32_t b_batch_broadcast;  // b's first batch dimension has stride 0
  uint32_t misalign;
  int full_only;
} mm_shape;

static const mm_shape shapes[] = {
    {"basic", {0, 0}, 7, 13, 5, 0, 0, 0, 0, 0, 0},
    {"size 1", {0, 0}, 1, 1, 1, 0, 0, 0, 0, 0, 0},
    {"empty", {0, 0}, 0, 5, 3, 0, 0, 0, 0, 0, 0},
    {"empty", {0, 0}, 4, 0, 3, 0, 0, 0, 0, 0, 0},  // K = 0: the sum is 0
    {"odd sizes", {0, 0}, 3, 17, 1, 0, 0, 0, 0, 0, 0},
    {"vector tail", {0, 0}, 33, 67, 17, 0, 0, 0, 0, 0, 0},
    {"large reduction", {0, 0}, 9, 1031, 7, 0, 0, 0, 0, 0, 0},
    // One row (inference at batch 1): a GEMV path in some plugins, with
    // several column chunks and a K not a multiple of 4.
    {"single row", {0, 0}, 1, 301, 600, 0, 0, 0, 0, 0, 0},
    {"single row", {0, 0}, 1, 67, 129, TSR_CONF_TRANSPOSED, 0, TSR_CONF_STRIDED, 0, 1, 0},
    {"non-contiguous", {0, 0}, 11, 9, 6, TSR_CONF_TRANSPOSED, 0, 0, 0, 0, 0},
    {"non-contiguous", {0, 0}, 11, 9, 6, 0, TSR_CONF_TRANSPOSED, 0, 0, 0, 0},
    {"non-contiguous", {0, 0}, 8, 5, 7, TSR_CONF_STRIDED, TSR_CONF_STRIDED, TSR_CONF_STRIDED, 0, 0, 0},
    {"broadcast", {3, 0}, 5, 4, 6, 0, 0, 0, 1, 0, 0},
    {"broadcast", {2, 3}, 4, 3, 5, 0, TSR_CONF_TRANSPOSED, 0, 1, 0, 0},
    {"misaligned", {0, 0}, 6, 10, 5, 0, 0, 0, 0, 1, 0},
    {"large", {0, 0}, 129, 257, 65, 0, 0, 0, 0, 0, 1},
    {"large", {4, 0}, 64, 96, 48, TSR_CONF_TRANSPOSED, 0, 0, 0, 1, 1},
};

typedef struct mm_attrs {
  const char *name;
  double alpha, beta;
  tsr_activation_t activation;
  int has_bias;
} mm_attrs;

static const mm_attrs attr_list[] = {
    {"", 1.0, 0.0, TSR_ACTIVATION_NONE, 0},
    {" bias", 1.0, 0.0, TSR_ACTIVATION_NONE, 1},
    {" alpha 0.5 beta -1.5", 0.5, -1.5, TSR_ACTIVATION_NONE, 0},
    {" relu", 1.0, 0.0, TSR_ACTIVATION_RELU, 1},
    {" gelu", 1.0, 0.0, TSR_ACTIVATION_GELU, 1},
    {" gelu_tanh", 1.0, 0.0, TSR_ACTIVATION_GELU_TANH, 0},
    {" sigmoid", 1.0, 0.0, TSR_ACTIVATION_SIGMOID, 0},
    {" tanh alpha 2 beta 1 bias", 2.0, 1.0, TSR_ACTIVATION_TANH, 1},
};

static void matmul_case(tsr_conf_case *c, const mm_shape *s, const mm_attrs *a, tsr_dtype_t dt,
                        tsr_conf_sink *sink) {
  int64_t batch_rank = s->batch[0] == 0 ? 0 : s->batch[1] == 0 ? 1 : 2;
  int32_t r = (int32_t)(batch_rank + 2);
  int64_t a_sizes[TSR_MAX_RANK], b_sizes[TSR_MAX_RANK], o_sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < batch_rank; ++d) a_sizes[d] = b_sizes[d] = o_sizes[d] = s->batch[d];
  a_sizes[r - 2] = s->m, a_sizes[r - 1] = s->k;
  b_sizes[r - 2] = s->k, b_sizes[r - 1] = s->n;
  o_sizes[r - 2] = s->m, o_sizes[r - 1] = s->n;
  char name[64] = "";
  if (batch_rank > 0) {
    snprintf(name, sizeof(name), batch_rank == 1 ? "[%lld] x " : "[%lld,%lld] x ",
             (long long)s->batch[0], (long long)s->batch[1]);
  }
  tsr_conf_case_init(c, TSR_OP_MATMUL, s->category, "matmul %s %s%lldx%lldx%lld%s%s%s%s%s",
                     tsr_oracle_dtype_name(dt), name, (long long)s->m, (long long)s->k,
                     (long long)s->n, a->name, s->a_layout == TSR_CONF_TRANSPOSED ? " a:transposed" : "",
                     s->b_layout == TSR_CONF_TRANSPOSED ? " b:transposed" : "",
                     s->a_layout == TSR_CONF_STRIDED ? " strided" : "",
                     s->b_batch_broadcast ? " b batch-broadcast" : "");
  c->has_attrs = 1;
  c->attrs.matmul = (tsr_matmul_attrs){sizeof(tsr_matmul_attrs), a->alpha, a->beta, a->activation,
                                       (uint32_t)a->has_bias};
  tsr_conf_operand *x = tsr_conf_case_input(c, dt, r, a_sizes);
  x->layout = s->a_layout;
  x->misalign = s->misalign;
  tsr_conf_operand *y = tsr_conf_case_input(c, dt, r, b_sizes);
  y->layout = s->b_layout;
  y->misalign = s->misalign;
  if (s->b_batch_broadcast) {
    // Only the first batch dimension stretches; the rest stays as laid out.
    y->layout = TSR_CONF_EXPLICIT;
    int64_t stride = 1;
    for (int32_t d = r - 1; d >= 0; --d) {
      y->strides[d] = d == 0 ? 0 : stride;
      if (d > 0) stride *= b_sizes[d];
    }
    if (s->b_layout == TSR_CONF_TRANSPOSED) {
      // Swap the two matrix strides: column-major matrices.
      y->strides[r - 1] = s->k;
      y->strides[r - 2] = 1;
    }
  }
  if (a->has_bias) {
    int64_t bias_sizes[TSR_MAX_RANK];
    for (int32_t d = 0; d < r; ++d) bias_sizes[d] = o_sizes[d];
    tsr_conf_operand *bias = tsr_conf_case_input(c, dt, r, bias_sizes);
    // [1, ..., 1, N] stretched: stride 0 everywhere but the last dimension.
    bias->layout = TSR_CONF_BROADCAST;
    bias->broadcast_mask = (1u << (r - 1)) - 1;
  }
  tsr_conf_operand *out = tsr_conf_case_output(c, dt, r, o_sizes);
  out->layout = s->out_layout;
  out->misalign = s->misalign;
  if (a->beta != 0) {
    out->read_before_write = 1;
    out->gen = TSR_CONF_GEN_UNIFORM;
    out->lo = -2, out->hi = 2;
  }
  sink->emit(sink->ctx, c);
}

void tsr_conf_cases_matmul(tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
    const mm_shape *s = &shapes[k];
    if (s->full_only && !sink->full) continue;
    for (size_t a = 0; a < sizeof(attr_list) / sizeof(attr_list[0]); ++a) {
      // Every epilogue on a few shapes; the plain product on all of them.
      if (a > 0 && strcmp(s->category, "basic") != 0 && strcmp(s->category, "broadcast") != 0 &&
          strcmp(s->category, "empty") != 0 && !(strcmp(s->category, "non-contiguous") == 0 && a < 3)) {
        continue;
      }
      tsr_conf_case c;
      matmul_case(&c, s, &attr_list[a], dt, sink);
    }
  }
  // NaN in a must reach its row; attrs NULL takes the defaults.
  tsr_conf_case c;
  tsr_conf_case_init(&c, TSR_OP_MATMUL, "special values", "matmul %s 5x6x4 NaN and inf in a",
                     tsr_oracle_dtype_name(dt));
  c.has_attrs = 1;
  c.attrs.matmul = (tsr_matmul_attrs){sizeof(tsr_matmul_attrs), 1.0, 0.0, TSR_ACTIVATION_NONE, 0};
  tsr_conf_operand *x = tsr_conf_case_input(&c, dt, 2, (const int64_t[]){5, 6});
  x->gen = TSR_CONF_GEN_SPECIAL;
  tsr_conf_case_input(&c, dt, 2, (const int64_t[]){6, 4});
  tsr_conf_case_output(&c, dt, 2, (const int64_t[]){5, 4});
  sink->emit(sink->ctx, &c);
  tsr_conf_case_init(&c, TSR_OP_MATMUL, "attributes", "matmul %s 7x13x5 attrs NULL",
                     tsr_oracle_dtype_name(dt));
  c.has_attrs = 1;
  c.attrs.matmul = (tsr_matmul_attrs){sizeof(tsr_matmul_attrs), 1.0, 0.0, TSR_ACTIVATION_NONE, 0};
  c.attrs_pass = TSR_CONF_ATTRS_NULL;
  tsr_conf_case_input(&c, dt, 2, (const int64_t[]){7, 13});
  tsr_conf_case_input(&c, dt, 2, (const int64_t[]){13, 5});
  tsr_conf_case_output(&c, dt, 2, (const int64_t[]){7, 5});
  sink->emit(sink->ctx, &c);
}
