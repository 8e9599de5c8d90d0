// The convolution battery: CONV2D and both backward ops over strides,
// asymmetric padding, dilation, groups (depthwise and one input channel
// included), 1x1 kernels, bias and activation, NHWC strides and misaligned
// operands.
#include <stdio.h>

#include "suite.h"

typedef struct conv_shape {
  const char *category;
  int64_t n, c, h, w, o, kh, kw;
  int64_t stride[2], pad_before[2], pad_after[2], dilation[2], groups;
  int has_bias;
  tsr_activation_t activation;
  int nhwc;
  uint32_t misalign;
  int full_only;
} conv_shape;

static const conv_shape shapes[] = {
    {"basic", 2, 3, 7, 6, 4, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 0, 0, 0, 0, 0},
    {"odd sizes", 1, 2, 9, 8, 3, 3, 2, {2, 2}, {1, 0}, {1, 1}, {1, 1}, 1, 1, 0, 0, 0, 0},
    {"odd sizes", 1, 2, 9, 9, 2, 3, 3, {1, 1}, {2, 2}, {2, 2}, {2, 2}, 1, 0, 0, 0, 0, 0},
    {"groups", 2, 4, 5, 5, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2, 1, 0, 0, 0, 0},
    {"groups", 1, 3, 6, 5, 3, 3, 3, {1, 2}, {1, 1}, {1, 1}, {1, 1}, 3, 0, 0, 0, 0, 0},
    {"size 1", 1, 5, 4, 4, 7, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, 0, 0, 0, 0},
    {"size 1", 1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 0, 0, 0, 0, 0},
    {"non-contiguous", 2, 3, 6, 7, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, 0, 1, 0, 0},
    {"misaligned", 1, 3, 6, 6, 2, 2, 2, {2, 1}, {0, 1}, {1, 0}, {1, 1}, 1, 0, 0, 0, 1, 0},
    {"activation", 2, 2, 5, 5, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_RELU, 0, 0, 0},
    {"activation", 1, 2, 5, 5, 3, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, TSR_ACTIVATION_GELU, 0, 0, 0},
    // Every activation of the catalogue, so a plugin cannot get one wrong
    // unseen (the bug-selector fixtures plant a bug in each in turn).
    {"activation", 1, 3, 6, 5, 2, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 0, TSR_ACTIVATION_GELU_TANH, 0, 0, 0},
    {"activation", 2, 2, 5, 6, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_SIGMOID, 0, 0, 0},
    {"activation", 1, 2, 6, 6, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, 1, TSR_ACTIVATION_TANH, 0, 0, 0},
    {"large reduction", 2, 16, 9, 9, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, 0, 0, 0, 0},
    // One input channel per group, as a CNN's first layer and a depthwise
    // one: enough positions for vector loops with a partial last vector.
    {"one input channel", 3, 1, 30, 29, 6, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, 1, 0, 0, 0, 0},
    {"one input channel", 2, 4, 12, 13, 8, 3, 3, {2, 1}, {1, 0}, {1, 2}, {1, 2}, 4, 1, 0, 0, 0, 0},
    {"large", 4, 16, 17, 17, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, 0, 1, 0, 1},
    {"large", 2, 32, 15, 15, 32, 5, 5, {2, 2}, {2, 2}, {2, 2}, {1, 1}, 4, 1, 0, 0, 1, 1},
};

static int64_t out_size(int64_t in, int64_t pb, int64_t pa, int64_t d, int64_t k, int64_t s) {
  return (in + pb + pa - d * (k - 1) - 1) / s + 1;
}

// NHWC: channels fastest.
static void nhwc(tsr_conf_operand *o) {
  o->layout = TSR_CONF_EXPLICIT;
  int64_t c = o->sizes[1], h = o->sizes[2], w = o->sizes[3];
  o->strides[0] = h * w * c;
  o->strides[1] = 1;
  o->strides[2] = w * c;
  o->strides[3] = c;
}

void tsr_conf_cases_conv(int32_t op, tsr_dtype_t dt, tsr_conf_sink *sink) {
  for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
    const conv_shape *s = &shapes[k];
    if (s->full_only && !sink->full) continue;
    if (op != TSR_OP_CONV2D && s->activation != TSR_ACTIVATION_NONE) continue;
    int64_t oh = out_size(s->h, s->pad_before[0], s->pad_after[0], s->dilation[0], s->kh, s->stride[0]);
    int64_t ow = out_size(s->w, s->pad_before[1], s->pad_after[1], s->dilation[1], s->kw, s->stride[1]);
    int64_t x_sizes[4] = {s->n, s->c, s->h, s->w};
    int64_t w_sizes[4] = {s->o, s->c / s->groups, s->kh, s->kw};
    int64_t y_sizes[4] = {s->n, s->o, oh, ow};
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, s->category,
                       "%s %s x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] stride %lldx%lld pad %lld,%lld/%lld,%lld "
                       "dilation %lldx%lld groups %lld%s%s%s",
                       tsr_op_name(op), tsr_oracle_dtype_name(dt), (long long)s->n, (long long)s->c,
                       (long long)s->h, (long long)s->w, (long long)w_sizes[0], (long long)w_sizes[1],
                       (long long)s->kh, (long long)s->kw, (long long)s->stride[0], (long long)s->stride[1],
                       (long long)s->pad_before[0], (long long)s->pad_before[1], (long long)s->pad_after[0],
                       (long long)s->pad_after[1], (long long)s->dilation[0], (long long)s->dilation[1],
                       (long long)s->groups, s->has_bias ? " bias" : "", s->nhwc ? " NHWC" : "",
                       s->activation ? " activation" : "");
    c.has_attrs = 1;
    tsr_conv2d_attrs *a = &c.attrs.conv2d;
    *a = (tsr_conv2d_attrs){.struct_size = sizeof(tsr_conv2d_attrs),
                            .stride = {s->stride[0], s->stride[1]},
                            .pad_before = {s->pad_before[0], s->pad_before[1]},
                            .pad_after = {s->pad_after[0], s->pad_after[1]},
                            .dilation = {s->dilation[0], s->dilation[1]},
                            .groups = s->groups,
                            .activation = op == TSR_OP_CONV2D ? s->activation : TSR_ACTIVATION_NONE,
                            .has_bias = (uint32_t)(op != TSR_OP_CONV2D_BACKWARD_DATA && s->has_bias)};
    tsr_conf_operand *first, *second, *result;
    if (op == TSR_OP_CONV2D) {
      first = tsr_conf_case_input(&c, dt, 4, x_sizes);
      second = tsr_conf_case_input(&c, dt, 4, w_sizes);
      if (s->has_bias) tsr_conf_case_input(&c, dt, 1, (const int64_t[]){s->o});
      result = tsr_conf_case_output(&c, dt, 4, y_sizes);
      if (s->nhwc) nhwc(first), nhwc(result);
    } else if (op == TSR_OP_CONV2D_BACKWARD_DATA) {
      first = tsr_conf_case_input(&c, dt, 4, y_sizes);
      second = tsr_conf_case_input(&c, dt, 4, w_sizes);
      result = tsr_conf_case_output(&c, dt, 4, x_sizes);
      if (s->nhwc) nhwc(first), nhwc(result);
    } else {
      first = tsr_conf_case_input(&c, dt, 4, y_sizes);
      second = tsr_conf_case_input(&c, dt, 4, x_sizes);
      result = tsr_conf_case_output(&c, dt, 4, w_sizes);
      if (s->has_bias) tsr_conf_case_output(&c, dt, 1, (const int64_t[]){s->o});
      if (s->nhwc) nhwc(first), nhwc(second);
    }
    first->misalign = s->misalign;
    second->misalign = s->misalign;
    result->misalign = s->misalign;
    sink->emit(sink->ctx, &c);
  }
  if (op == TSR_OP_CONV2D) {
    // attrs NULL: stride 1, no padding, no bias.
    tsr_conf_case c;
    tsr_conf_case_init(&c, op, "attributes", "conv2d %s attrs NULL x[1,2,5,5] w[3,2,3,3]",
                       tsr_oracle_dtype_name(dt));
    c.has_attrs = 1;
    c.attrs.conv2d = (tsr_conv2d_attrs){.struct_size = sizeof(tsr_conv2d_attrs), .stride = {1, 1},
                                        .dilation = {1, 1}, .groups = 1};
    c.attrs_pass = TSR_CONF_ATTRS_NULL;
    tsr_conf_case_input(&c, dt, 4, (const int64_t[]){1, 2, 5, 5});
    tsr_conf_case_input(&c, dt, 4, (const int64_t[]){3, 2, 3, 3});
    tsr_conf_case_output(&c, dt, 4, (const int64_t[]){1, 3, 3, 3});
    sink->emit(sink->ctx, &c);
    // groups that do not divide C.
    tsr_conf_case_init(&c, op, "invalid call", "conv2d %s groups 2 with C = 3 (invalid)",
                       tsr_oracle_dtype_name(dt));
    c.has_attrs = 1;
    c.attrs.conv2d = (tsr_conv2d_attrs){.struct_size = sizeof(tsr_conv2d_attrs), .stride = {1, 1},
                                        .dilation = {1, 1}, .groups = 2};
    c.expect = TSR_INVALID_ARGUMENT;
    c.expect_at_plan = 1;
    tsr_conf_case_input(&c, dt, 4, (const int64_t[]){1, 3, 5, 5});
    tsr_conf_case_input(&c, dt, 4, (const int64_t[]){4, 1, 3, 3});
    tsr_conf_case_output(&c, dt, 4, (const int64_t[]){1, 4, 3, 3});
    sink->emit(sink->ctx, &c);
  }
}
