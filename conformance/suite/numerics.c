// Running one numerics case against the plugin under test.
//
// Every operand gets a buffer of its own with 64 guard bytes before and
// after its extent; the whole buffer, guards and the gaps of strided
// layouts included, starts with a byte pattern. After the execution every
// byte that is not an element of an output must be unchanged (out-of-bounds
// and gap writes), inputs must be unchanged, and every output element must
// match the oracle within its tolerance. Outputs start poisoned (NaN or a
// sentinel), so an element the plugin forgot to write shows as a mismatch.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

#define GUARD_BYTES 64
#define WORKSPACE_GUARD 256

typedef struct operand_layout {
  int64_t strides[TSR_MAX_RANK];
  uint64_t byte_offset;
  uint64_t extent_bytes;  // 0 when the tensor is empty
  uint64_t buffer_bytes;
  uint32_t alignment;
  int32_t buffer;         // index into the case's buffers; -1 for a NULL buffer
  int32_t alias_group;
  int64_t numel;
} operand_layout;

typedef struct case_buffer {
  uint64_t bytes;
  unsigned char *before;  // host image written to the device
  unsigned char *after;   // host image read back
  unsigned char *mask;    // 1 where a byte belongs to an element of some operand
  tsr_plugin_buffer *device;
  int is_output;          // some output lives here
} case_buffer;

typedef struct case_state {
  operand_layout layouts[TSR_MAX_OPERANDS];
  case_buffer buffers[TSR_MAX_OPERANDS];
  int32_t buffer_count;
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
} case_state;

static const char *operand_label(const tsr_conf_case *c, int32_t i, char *buf, size_t size) {
  if (i < c->num_inputs) {
    snprintf(buf, size, "input %d", (int)i);
  } else {
    snprintf(buf, size, "output %d", (int)(i - c->num_inputs));
  }
  return buf;
}

static uint64_t lowest_bit(uint64_t v) { return v & (~v + 1); }

// --- case construction --------------------------------------------------------

void tsr_conf_case_init(tsr_conf_case *c, int32_t op, const char *category, const char *format,
                        ...) {
  memset(c, 0, sizeof(*c));
  c->op = op;
  c->category = category;
  va_list args;
  va_start(args, format);
  vsnprintf(c->name, sizeof(c->name), format, args);
  va_end(args);
  c->expect = TSR_OK;
}

static tsr_conf_operand *operand_add(tsr_conf_operand *o, tsr_dtype_t dtype, int32_t rank,
                                     const int64_t *sizes) {
  memset(o, 0, sizeof(*o));
  o->dtype = dtype;
  o->rank = rank;
  for (int32_t d = 0; d < rank; ++d) o->sizes[d] = sizes[d];
  o->alias_of = -1;
  return o;
}

tsr_conf_operand *tsr_conf_case_input(tsr_conf_case *c, tsr_dtype_t dtype, int32_t rank,
                                      const int64_t *sizes) {
  // Inputs come before outputs: shift any outputs already added.
  for (int32_t i = c->num_inputs + c->num_outputs; i > c->num_inputs; --i) {
    c->operands[i] = c->operands[i - 1];
  }
  tsr_conf_operand *o = operand_add(&c->operands[c->num_inputs], dtype, rank, sizes);
  c->num_inputs += 1;
  if (tsr_oracle_dtype_is_float(dtype)) {
    o->gen = TSR_CONF_GEN_UNIFORM;
    o->lo = -2;
    o->hi = 2;
  } else if (dtype == TSR_BOOL) {
    o->gen = TSR_CONF_GEN_BOOL;
  } else {
    o->gen = TSR_CONF_GEN_INTS;
    o->lo = -50;
    o->hi = 50;
  }
  return o;
}

tsr_conf_operand *tsr_conf_case_output(tsr_conf_case *c, tsr_dtype_t dtype, int32_t rank,
                                       const int64_t *sizes) {
  tsr_conf_operand *o =
      operand_add(&c->operands[c->num_inputs + c->num_outputs], dtype, rank, sizes);
  c->num_outputs += 1;
  o->gen = TSR_CONF_GEN_POISON;
  return o;
}

static size_t attrs_size_of(int32_t op) {
  switch (op) {
    case TSR_OP_FILL: return sizeof(tsr_fill_attrs);
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD: return sizeof(tsr_unary_attrs);
    case TSR_OP_BINARY: return sizeof(tsr_binary_attrs);
    case TSR_OP_COMPARE: return sizeof(tsr_compare_attrs);
    case TSR_OP_CLAMP: return sizeof(tsr_clamp_attrs);
    case TSR_OP_REDUCE: return sizeof(tsr_reduce_attrs);
    case TSR_OP_ARG_REDUCE: return sizeof(tsr_arg_reduce_attrs);
    case TSR_OP_MATMUL: return sizeof(tsr_matmul_attrs);
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER: return sizeof(tsr_conv2d_attrs);
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD: return sizeof(tsr_pool2d_attrs);
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD: return sizeof(tsr_softmax_attrs);
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD: return sizeof(tsr_layer_norm_attrs);
    case TSR_OP_BATCH_NORM:
    case TSR_OP_BATCH_NORM_BACKWARD: return sizeof(tsr_batch_norm_attrs);
    case TSR_OP_CONCAT: return sizeof(tsr_concat_attrs);
    case TSR_OP_PAD: return sizeof(tsr_pad_attrs);
    case TSR_OP_GATHER:
    case TSR_OP_SCATTER_ADD: return sizeof(tsr_gather_attrs);
    case TSR_OP_RNG_FILL: return sizeof(tsr_rng_fill_attrs);
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: return sizeof(tsr_cross_entropy_attrs);
    case TSR_OP_SGD_UPDATE: return sizeof(tsr_sgd_attrs);
    case TSR_OP_ADAM_UPDATE: return sizeof(tsr_adam_attrs);
    default: return 0;
  }
}

// The attribute bytes as the plugin receives them. SHORT leaves 0xFF in the
// bytes past struct_size, so a plugin that reads beyond it sees garbage (a
// NaN alpha) instead of the default and fails visibly.
static const void *attrs_as_passed(const tsr_conf_case *c, tsr_conf_attrs *buffer) {
  if (!c->has_attrs || c->attrs_pass == TSR_CONF_ATTRS_NULL) return NULL;
  size_t size = attrs_size_of(c->op);
  memset(buffer, 0, sizeof(*buffer));
  memcpy(buffer, &c->attrs, size);
  switch (c->attrs_pass) {
    case TSR_CONF_ATTRS_SHORT:
      memset(buffer->bytes + c->attrs_size, 0xFF, size - c->attrs_size);
      buffer->struct_size = c->attrs_size;
      break;
    case TSR_CONF_ATTRS_LONG:
      buffer->struct_size = size + 32;
      break;
    default:
      buffer->struct_size = size;
      break;
  }
  return buffer;
}

// --- layouts and images --------------------------------------------------------

static int layout_compute(const tsr_conf_session *s, const tsr_conf_operand *o,
                          operand_layout *l) {
  memset(l, 0, sizeof(*l));
  size_t esize = tsr_dtype_size(o->dtype);
  if (esize == 0 || o->rank < 0 || o->rank > TSR_MAX_RANK) return -1;
  int64_t numel = 1;
  for (int32_t d = 0; d < o->rank; ++d) numel *= o->sizes[d];
  l->numel = numel;
  int32_t r = o->rank;
  switch (o->layout) {
    case TSR_CONF_TRANSPOSED: {
      int64_t stride = 1;
      for (int32_t d = 0; d < r; ++d) {
        l->strides[d] = stride;
        stride *= o->sizes[d] > 0 ? o->sizes[d] : 1;
      }
      break;
    }
    case TSR_CONF_STRIDED: {
      int64_t stride = 2;
      for (int32_t d = r - 1; d >= 0; --d) {
        l->strides[d] = stride;
        stride *= (o->sizes[d] > 0 ? o->sizes[d] : 1) + 1;
      }
      break;
    }
    case TSR_CONF_BROADCAST: {
      int64_t stride = 1;
      for (int32_t d = r - 1; d >= 0; --d) {
        if (o->broadcast_mask & (1u << d)) {
          l->strides[d] = 0;
        } else {
          l->strides[d] = stride;
          stride *= o->sizes[d] > 0 ? o->sizes[d] : 1;
        }
      }
      break;
    }
    case TSR_CONF_EXPLICIT:
      for (int32_t d = 0; d < r; ++d) l->strides[d] = o->strides[d];
      break;
    default: {
      int64_t stride = 1;
      for (int32_t d = r - 1; d >= 0; --d) {
        l->strides[d] = stride;
        stride *= o->sizes[d] > 0 ? o->sizes[d] : 1;
      }
      break;
    }
  }
  uint64_t last = 0;
  for (int32_t d = 0; d < r; ++d) {
    if (o->sizes[d] > 0) last += (uint64_t)(o->sizes[d] - 1) * (uint64_t)l->strides[d];
  }
  l->extent_bytes = numel > 0 ? (last + 1) * esize : 0;
  l->byte_offset = GUARD_BYTES + (uint64_t)o->misalign * esize;
  l->buffer_bytes = l->byte_offset + l->extent_bytes + GUARD_BYTES;
  uint64_t align = s->props.base_alignment ? s->props.base_alignment : 1;
  uint64_t low = lowest_bit(l->byte_offset);
  if (low < align) align = low;
  if (align > TSR_MAX_ALIGNMENT) align = TSR_MAX_ALIGNMENT;
  l->alignment = (uint32_t)align;
  l->alias_group = -1;
  return 0;
}

// Byte address (within its buffer) of logical element |i| of operand |o|.
static uint64_t element_address(const tsr_conf_operand *o, const operand_layout *l, int64_t i) {
  uint64_t offset = l->byte_offset;
  size_t esize = tsr_dtype_size(o->dtype);
  for (int32_t d = o->rank - 1; d >= 0; --d) {
    int64_t s = o->sizes[d] > 0 ? o->sizes[d] : 1;
    offset += (uint64_t)(i % s) * (uint64_t)l->strides[d] * esize;
    i /= s;
  }
  return offset;
}

static const double float_specials[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1.5, -3.75, 3.0, 0.125, -7.0,
};
static const int64_t int32_specials[] = {INT32_MIN, INT32_MAX, -1, 0, 1, 2, -2, 7, -7, 65536, INT32_MIN + 1};
static const int64_t int64_specials[] = {INT64_MIN, INT64_MAX, -1, 0, 1, 2, -2, 7, -7,
                                         ((int64_t)1 << 40), INT64_MIN + 1, 4294967296LL};

static void values_generate(const tsr_conf_case *c, int32_t index, tsr_oracle_tensor *t,
                            uint64_t *rng) {
  const tsr_conf_operand *o = &c->operands[index];
  if (o->gen == TSR_CONF_GEN_CUSTOM && c->init != NULL) {
    c->init(c, index, t, rng);
    return;
  }
  int is_float = tsr_oracle_dtype_is_float(o->dtype);
  for (int64_t i = 0; i < t->numel; ++i) {
    double v = 0;
    int64_t iv = 0;
    switch (o->gen) {
      case TSR_CONF_GEN_UNIFORM:
      case TSR_CONF_GEN_NONZERO:
        if (is_float) {
          v = tsr_conf_random_uniform(rng, o->lo, o->hi);
          if (o->gen == TSR_CONF_GEN_NONZERO && (tsr_conf_random_next(rng) & 1)) v = -v;
        } else {
          iv = tsr_conf_random_int(rng, (int64_t)o->lo, (int64_t)o->hi);
        }
        break;
      case TSR_CONF_GEN_INTS:
        iv = tsr_conf_random_int(rng, (int64_t)o->lo, (int64_t)o->hi);
        v = (double)iv;
        break;
      case TSR_CONF_GEN_BOOL:
        iv = (int64_t)(tsr_conf_random_next(rng) & 1);
        v = (double)iv;
        break;
      case TSR_CONF_GEN_SPECIAL:
        if (is_float) {
          size_t n = sizeof(float_specials) / sizeof(float_specials[0]);
          v = float_specials[tsr_conf_random_next(rng) % n];
        } else if (o->dtype == TSR_INT32) {
          iv = int32_specials[tsr_conf_random_next(rng) % (sizeof(int32_specials) / sizeof(int64_t))];
        } else if (o->dtype == TSR_INT64) {
          iv = int64_specials[tsr_conf_random_next(rng) % (sizeof(int64_specials) / sizeof(int64_t))];
        } else {
          iv = (int64_t)(tsr_conf_random_next(rng) & 1);
        }
        break;
      default:
        break;
    }
    if (is_float) {
      t->v[i] = tsr_oracle_round(v, o->dtype);
    } else {
      tsr_oracle_tensor_set(t, i, 0, tsr_oracle_wrap(iv, o->dtype));
    }
  }
}

// Poison for outputs: NaN for floats, a sentinel for ints, 0xA5 for bool
// (neither 0 nor 1, so an unwritten bool shows).
static void poison_write(const tsr_conf_operand *o, const operand_layout *l, unsigned char *image) {
  for (int64_t i = 0; i < l->numel; ++i) {
    uint64_t a = element_address(o, l, i);
    if (o->dtype == TSR_BOOL) {
      image[a] = 0xA5;
    } else {
      tsr_oracle_element_store(image + a, o->dtype, NAN, (int64_t)0x5A5A5A5A5A5A5A5Bull);
    }
  }
}

static void values_write(const tsr_conf_operand *o, const operand_layout *l,
                         const tsr_oracle_tensor *t, unsigned char *image) {
  for (int64_t i = 0; i < l->numel; ++i) {
    tsr_oracle_element_store(image + element_address(o, l, i), o->dtype, t->v[i],
                             t->iv != NULL ? t->iv[i] : 0);
  }
}

static void values_read(const tsr_conf_operand *o, const operand_layout *l,
                        const unsigned char *image, tsr_oracle_tensor *t) {
  for (int64_t i = 0; i < l->numel; ++i) {
    double v;
    int64_t iv;
    tsr_oracle_element_load(image + element_address(o, l, i), o->dtype, &v, &iv);
    if (t->iv != NULL) {
      t->iv[i] = iv;
      t->v[i] = (double)iv;
    } else {
      t->v[i] = v;
    }
  }
}

static void mask_mark(const tsr_conf_operand *o, const operand_layout *l, unsigned char *mask) {
  size_t esize = tsr_dtype_size(o->dtype);
  for (int64_t i = 0; i < l->numel; ++i) memset(mask + element_address(o, l, i), 1, esize);
}

static void state_free(case_state *st) {
  for (int32_t b = 0; b < st->buffer_count; ++b) {
    free(st->buffers[b].before);
    free(st->buffers[b].after);
    free(st->buffers[b].mask);
  }
  st->buffer_count = 0;
}

// Lays out every operand, assigns buffers and builds the descriptors.
static int state_build(const tsr_conf_session *s, const tsr_conf_case *c, case_state *st) {
  memset(st, 0, sizeof(*st));
  int32_t n = c->num_inputs + c->num_outputs;
  for (int32_t i = 0; i < n; ++i) {
    const tsr_conf_operand *o = &c->operands[i];
    operand_layout *l = &st->layouts[i];
    if (o->alias_of >= 0 && i >= c->num_inputs) {
      *l = st->layouts[o->alias_of];
      l->alias_group = o->alias_of;
      st->layouts[o->alias_of].alias_group = o->alias_of;
      st->buffers[l->buffer].is_output = 1;
      continue;
    }
    if (o->null_buffer) {
      memset(l, 0, sizeof(*l));
      l->buffer = -1;
      l->alias_group = -1;
      l->alignment = s->props.base_alignment ? s->props.base_alignment : 1;
      if (l->alignment > TSR_MAX_ALIGNMENT) l->alignment = TSR_MAX_ALIGNMENT;
      continue;
    }
    if (layout_compute(s, o, l) != 0) return -1;
    case_buffer *b = &st->buffers[st->buffer_count];
    l->buffer = st->buffer_count++;
    b->bytes = l->buffer_bytes;
    b->before = malloc(b->bytes);
    b->after = malloc(b->bytes);
    b->mask = calloc(b->bytes, 1);
    if (!b->before || !b->after || !b->mask) return -1;
    for (uint64_t k = 0; k < b->bytes; ++k) b->before[k] = (unsigned char)(0xA7u + 29u * (unsigned)k);
    b->is_output = i >= c->num_inputs;
  }
  for (int32_t i = 0; i < n; ++i) {
    const tsr_conf_operand *o = &c->operands[i];
    const operand_layout *l = &st->layouts[i];
    tsr_tensor_desc *d = &st->descs[i];
    memset(d, 0, sizeof(*d));
    d->struct_size = sizeof(*d);
    d->dtype = o->dtype;
    d->device = s->device;
    d->alias_group = l->alias_group;
    d->alignment = l->alignment;
    if (o->null_buffer) continue;
    d->rank = o->rank;
    for (int32_t k = 0; k < o->rank; ++k) {
      d->sizes[k] = o->sizes[k];
      d->strides[k] = l->strides[k];
    }
    d->byte_offset = l->byte_offset;
    if (l->buffer >= 0) mask_mark(o, l, st->buffers[l->buffer].mask);
  }
  return 0;
}

static uint64_t case_seed(const tsr_conf_session *s, const tsr_conf_case *c) {
  return tsr_conf_hash(c->name) ^ (s->seed * 0x9E3779B97F4A7C15ull) ^ (uint64_t)c->op;
}

// Fills the host images: generated inputs and read-before-write outputs,
// poison elsewhere.
static int images_fill(const tsr_conf_session *s, const tsr_conf_case *c, case_state *st) {
  uint64_t rng = case_seed(s, c);
  int32_t n = c->num_inputs + c->num_outputs;
  for (int32_t i = 0; i < n; ++i) {
    const tsr_conf_operand *o = &c->operands[i];
    const operand_layout *l = &st->layouts[i];
    if (o->null_buffer || l->buffer < 0) continue;
    if (i >= c->num_inputs && o->alias_of >= 0) continue;  // holds its input's values
    unsigned char *image = st->buffers[l->buffer].before;
    if (i >= c->num_inputs && !o->read_before_write) {
      poison_write(o, l, image);
      continue;
    }
    tsr_oracle_tensor t;
    if (tsr_oracle_tensor_create(o->dtype, o->rank, o->sizes, &t) != 0) return -1;
    values_generate(c, i, &t, &rng);
    values_write(o, l, &t, image);
    tsr_oracle_tensor_destroy(&t);
  }
  return 0;
}

int tsr_conf_case_signature(const tsr_conf_session *s, const tsr_conf_case *c,
                            tsr_tensor_desc *descs, tsr_conf_attrs *attrs_buffer,
                            tsr_op_signature *signature) {
  case_state st;
  if (state_build(s, c, &st) != 0) {
    state_free(&st);
    return -1;
  }
  memcpy(descs, st.descs, sizeof(st.descs));
  state_free(&st);
  memset(signature, 0, sizeof(*signature));
  signature->struct_size = sizeof(*signature);
  signature->op = c->op;
  signature->device = s->device;
  signature->num_inputs = c->num_inputs;
  signature->num_outputs = c->num_outputs;
  signature->inputs = descs;
  signature->outputs = descs + c->num_inputs;
  signature->attrs = attrs_as_passed(c, attrs_buffer);
  signature->math_mode = TSR_MATH_STRICT;
  return 0;
}

// --- device side ------------------------------------------------------------------

typedef struct device_run {
  tsr_plugin_plan *plan;
  tsr_plugin_buffer *workspace;
  uint64_t workspace_bytes;
  unsigned char *workspace_before;
} device_run;

static tsr_status buffers_upload(tsr_conf_session *s, case_state *st, char *why, size_t size) {
  for (int32_t b = 0; b < st->buffer_count; ++b) {
    case_buffer *cb = &st->buffers[b];
    tsr_conf_host_message_clear();
    tsr_status status = s->api.buffer_alloc(s->device, cb->bytes, s->stream, &cb->device);
    if (status != TSR_OK || cb->device == NULL) {
      cb->device = NULL;
      snprintf(why, size, "buffer_alloc of %llu bytes returned %s: %s",
               (unsigned long long)cb->bytes, tsr_conf_status_name(status), tsr_conf_host_message());
      return status != TSR_OK ? status : TSR_INTERNAL;
    }
    status = s->api.copy_host_to_device(s->stream, cb->before, cb->device, 0, cb->bytes);
    if (status != TSR_OK) {
      snprintf(why, size, "copy_host_to_device of %llu bytes returned %s: %s",
               (unsigned long long)cb->bytes, tsr_conf_status_name(status), tsr_conf_host_message());
      return status;
    }
  }
  return TSR_OK;
}

static void buffers_release(tsr_conf_session *s, case_state *st) {
  for (int32_t b = 0; b < st->buffer_count; ++b) {
    if (st->buffers[b].device != NULL) s->api.buffer_free(st->buffers[b].device, s->stream);
    st->buffers[b].device = NULL;
  }
}

// The descriptors of an execution: the signature's, with buffers.
static void exec_descs(const tsr_conf_case *c, const case_state *st, tsr_tensor_desc *out) {
  int32_t n = c->num_inputs + c->num_outputs;
  for (int32_t i = 0; i < n; ++i) {
    out[i] = st->descs[i];
    int32_t b = st->layouts[i].buffer;
    out[i].buffer = (b >= 0 && !c->operands[i].null_buffer) ? st->buffers[b].device : NULL;
    out[i].storage_version = 1;
  }
}

typedef struct long_signature {
  tsr_op_signature base;
  uint64_t future[4];
} long_signature;

typedef struct long_args {
  tsr_exec_args base;
  uint64_t future[4];
} long_args;

static tsr_status execute_once(tsr_conf_session *s, const tsr_conf_case *c, case_state *st,
                               const tsr_plugin_plan *plan, tsr_plugin_buffer *workspace,
                               uint64_t workspace_bytes, tsr_plugin_stream *stream) {
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  exec_descs(c, st, descs);
  long_args args;
  memset(&args, 0, sizeof(args));
  args.base.struct_size = (c->flags & TSR_CONF_CASE_ARGS_LONG) ? sizeof(long_args) : sizeof(tsr_exec_args);
  args.base.num_inputs = c->num_inputs;
  args.base.num_outputs = c->num_outputs;
  args.base.inputs = descs;
  args.base.outputs = descs + c->num_inputs;
  if (workspace_bytes > 0) {
    args.base.workspace = workspace;
    args.base.workspace_offset = WORKSPACE_GUARD;
    args.base.workspace_bytes = workspace_bytes;
  }
  return s->api.plan_execute(plan, &args.base, stream);
}

// --- comparison ------------------------------------------------------------------

typedef struct compare_state {
  double max_ratio;
  int64_t compared;
  int64_t mismatches;
  int first_special;  // the first mismatch has a NaN or an infinity, wanted or got
  char first[400];
} compare_state;

static void index_text(int64_t i, const tsr_conf_operand *o, char *buf, size_t size) {
  int64_t idx[TSR_MAX_RANK];
  tsr_oracle_unravel(i, o->rank, o->sizes, idx);
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int32_t d = 0; d < o->rank && n < size; ++d) {
    n += (size_t)snprintf(buf + n, size - n, d ? ",%lld" : "%lld", (long long)idx[d]);
  }
  if (n < size) snprintf(buf + n, size - n, "]");
}

static double tolerance_floor(tsr_dtype_t out) {
  // float16's smallest normal (6e-5) would excuse too much: allow its
  // subnormal step only. The others may flush subnormals to zero.
  return out == TSR_FLOAT16 ? ldexp(1.0, -24) : tsr_oracle_min_normal(out);
}

static void compare_output(const tsr_conf_case *c, int32_t index, const operand_layout *l,
                           const unsigned char *image, const tsr_oracle_tensor *want,
                           compare_state *cs) {
  const tsr_conf_operand *o = &c->operands[index];
  tsr_dtype_t out = o->dtype;
  int is_float = tsr_oracle_dtype_is_float(out);
  double uc = tsr_oracle_unit_roundoff(want->compute);
  double uo = tsr_oracle_unit_roundoff(out);
  for (int64_t i = 0; i < l->numel; ++i) {
    double g;
    int64_t gi;
    tsr_oracle_element_load(image + element_address(o, l, i), out, &g, &gi);
    double ratio = 0, tol = 0;
    int ok;
    double w = want->v[i], shown = w;
    if (!is_float) {
      int64_t wi = want->iv != NULL ? want->iv[i] : (int64_t)w;
      ok = gi == wi;
      ratio = ok ? 0 : fabs((double)gi - (double)wi) / 0.5;
      if (!ok && ratio < 2) ratio = 2;
      tol = 0;
    } else if (isnan(w) || isnan(g)) {
      ok = isnan(w) && isnan(g);
      ratio = ok ? 0 : INFINITY;
    } else if (want->compare != TSR_ORACLE_TOLERANCE) {
      // Exact: the correctly rounded value and nothing else. err/tol is
      // measured in half ulps from it, so a correct plugin scores 0 and one
      // ulp off scores 2.
      double wr = tsr_oracle_round(tsr_oracle_round(w, want->compute), out);
      shown = wr;
      ok = g == wr && (want->compare != TSR_ORACLE_BITWISE || signbit(g) == signbit(wr));
      tol = 0.5 * tsr_oracle_ulp(wr, out);
      if (isinf(wr) || isinf(g)) {
        ratio = ok ? 0 : INFINITY;
      } else {
        ratio = fabs(g - wr) / (tol > 0 ? tol : ldexp(1.0, -1074));
        if (!ok && ratio == 0) ratio = INFINITY;  // a wrong sign of zero
      }
    } else {
      double bound = isfinite(want->bound[i]) ? want->bound[i] : 0;
      tol = bound * uc + uo * fabs(w) + tolerance_floor(out);
      if (isinf(w)) {
        ok = g == w;
        ratio = ok ? 0 : INFINITY;
      } else if (isinf(g)) {
        ok = signbit(g) == signbit(w) && fabs(w) + tol >= tsr_oracle_max_finite(out);
        ratio = ok ? 1 : INFINITY;
      } else {
        ratio = fabs(g - w) / tol;
        ok = ratio <= 1;
      }
    }
    cs->compared += 1;
    if (ratio > cs->max_ratio || isnan(ratio)) cs->max_ratio = isnan(ratio) ? INFINITY : ratio;
    if (!ok) {
      if (cs->mismatches == 0) {
        char idx[96];
        index_text(i, o, idx, sizeof(idx));
        cs->first_special = is_float && (!isfinite(w) || !isfinite(g));
        if (!is_float) {
          snprintf(cs->first, sizeof(cs->first), "output %d%s: got %lld, want %lld",
                   (int)(index - c->num_inputs), idx, (long long)gi,
                   (long long)(want->iv != NULL ? want->iv[i] : (int64_t)w));
        } else {
          snprintf(cs->first, sizeof(cs->first),
                   "output %d%s: got %.9g, want %.17g (tolerance %.3g, %s)",
                   (int)(index - c->num_inputs), idx, g, shown, tol,
                   want->compare == TSR_ORACLE_TOLERANCE ? "derived"
                   : want->compare == TSR_ORACLE_EXACT   ? "exact: correctly rounded"
                                                          : "exact: same bits");
        }
      }
      cs->mismatches += 1;
    }
  }
}

// Bytes that changed although no output element lives there.
static int64_t stray_writes(const case_buffer *b, uint64_t *first) {
  int64_t count = 0;
  for (uint64_t k = 0; k < b->bytes; ++k) {
    if (!b->mask[k] && b->before[k] != b->after[k]) {
      if (count == 0) *first = k;
      ++count;
    }
  }
  return count;
}

static void result_set(tsr_conf_case_result *r, const char *check, const char *format, ...)
    TSR_ABI_PRINTF(3, 4);
static void result_set(tsr_conf_case_result *r, const char *check, const char *format, ...) {
  if (r->result == TSR_CONF_FAIL) return;  // keep the first failure
  r->result = TSR_CONF_FAIL;
  r->check = check;
  va_list args;
  va_start(args, format);
  vsnprintf(r->detail, sizeof(r->detail), format, args);
  va_end(args);
}

// Which operand a byte of buffer |b| belongs to (for messages), and where
// the byte lies relative to it.
static void stray_where(const tsr_conf_case *c, const case_state *st, int32_t b, uint64_t byte,
                        char *buf, size_t size) {
  int32_t n = c->num_inputs + c->num_outputs;
  for (int32_t i = n - 1; i >= 0; --i) {
    if (st->layouts[i].buffer != b || c->operands[i].null_buffer) continue;
    const operand_layout *l = &st->layouts[i];
    char label[32];
    operand_label(c, i, label, sizeof(label));
    if (byte < l->byte_offset) {
      snprintf(buf, size, "%llu bytes before %s's first element",
               (unsigned long long)(l->byte_offset - byte), label);
    } else if (byte >= l->byte_offset + l->extent_bytes) {
      snprintf(buf, size, "%llu bytes past the end of %s",
               (unsigned long long)(byte - l->byte_offset - l->extent_bytes), label);
    } else {
      snprintf(buf, size, "in a gap between %s's strided elements (byte %llu of its extent)", label,
               (unsigned long long)(byte - l->byte_offset));
    }
    return;
  }
  snprintf(buf, size, "byte %llu", (unsigned long long)byte);
}

void tsr_conf_case_run(tsr_conf_session *s, const tsr_conf_case *c, tsr_conf_case_result *r) {
  memset(r, 0, sizeof(*r));
  r->result = TSR_CONF_PASS;
  case_state st;
  tsr_oracle_tensor inputs[TSR_MAX_OPERANDS], outputs[TSR_MAX_OPERANDS];
  int32_t made_in = 0, made_out = 0;
  device_run dev = {0};
  char why[700];
  if (state_build(s, c, &st) != 0 || images_fill(s, c, &st) != 0) {
    r->result = TSR_CONF_SKIP;
    snprintf(r->detail, sizeof(r->detail), "suite: cannot lay out the operands (host memory)");
    goto done;
  }
  // The oracle reads exactly what the plugin will read.
  for (; made_in < c->num_inputs; ++made_in) {
    const tsr_conf_operand *o = &c->operands[made_in];
    if (tsr_oracle_tensor_create(o->dtype, o->rank, o->sizes, &inputs[made_in]) != 0) goto oom;
    if (!o->null_buffer) {
      values_read(o, &st.layouts[made_in], st.buffers[st.layouts[made_in].buffer].before,
                  &inputs[made_in]);
    }
  }
  for (; made_out < c->num_outputs; ++made_out) {
    int32_t i = c->num_inputs + made_out;
    const tsr_conf_operand *o = &c->operands[i];
    if (tsr_oracle_tensor_create(o->dtype, o->rank, o->sizes, &outputs[made_out]) != 0) goto oom;
    if (!o->null_buffer) {
      values_read(o, &st.layouts[i], st.buffers[st.layouts[i].buffer].before, &outputs[made_out]);
    }
  }
  tsr_oracle_call call = {
      .op = c->op,
      .attrs = c->has_attrs ? (const void *)&c->attrs : NULL,
      .num_inputs = c->num_inputs,
      .num_outputs = c->num_outputs,
      .inputs = inputs,
      .outputs = outputs,
  };
  tsr_status oracle_status = tsr_oracle_compute(&call);
  if (oracle_status == TSR_UNSUPPORTED) {
    r->result = TSR_CONF_SKIP;
    snprintf(r->detail, sizeof(r->detail), "no oracle yet: %s", call.message);
    goto done;
  }
  if ((oracle_status == TSR_OK) != (c->expect == TSR_OK)) {
    // The suite and its oracle disagree about the spec: a suite bug.
    r->result = TSR_CONF_SKIP;
    snprintf(r->detail, sizeof(r->detail), "suite error: the oracle %s this case (%s)",
             oracle_status == TSR_OK ? "accepts" : "refuses", call.message);
    goto done;
  }

  tsr_conf_attrs attrs_buffer;
  long_signature sig;
  memset(&sig, 0, sizeof(sig));
  sig.base.struct_size = (c->flags & TSR_CONF_CASE_SIGNATURE_LONG) ? sizeof(sig) : sizeof(sig.base);
  sig.base.op = c->op;
  sig.base.device = s->device;
  sig.base.num_inputs = c->num_inputs;
  sig.base.num_outputs = c->num_outputs;
  sig.base.inputs = st.descs;
  sig.base.outputs = st.descs + c->num_inputs;
  sig.base.attrs = attrs_as_passed(c, &attrs_buffer);
  sig.base.math_mode = TSR_MATH_STRICT;

  tsr_conf_host_message_clear();
  tsr_status supported = s->api.op_supports(&sig.base);
  // For a call the spec forbids, op_supports may say so in either way; the
  // verdict on it is plan_create's (docs/abi.md 9.2).
  if (c->expect != TSR_OK && supported == TSR_INVALID_ARGUMENT) supported = TSR_UNSUPPORTED;
  if (supported != TSR_OK && supported != TSR_UNSUPPORTED) {
    result_set(r, "op_supports",
               supported == TSR_INVALID_ARGUMENT
                   ? "op_supports called a call docs/abi.md allows forbidden (%s): %s"
                   : "op_supports returned %s (OK, UNSUPPORTED or INVALID_ARGUMENT expected): %s",
               tsr_conf_status_name(supported), tsr_conf_host_message());
    goto done;
  }
  if (supported == TSR_UNSUPPORTED && c->expect == TSR_OK) {
    r->result = TSR_CONF_DECLINED;
    snprintf(r->detail, sizeof(r->detail), "%s", tsr_conf_host_message());
    goto done;
  }
  tsr_conf_host_message_clear();
  tsr_status status = s->api.plan_create(&sig.base, &dev.plan);
  if (c->expect != TSR_OK && c->expect_at_plan) {
    if (status == TSR_OK) {
      result_set(r, "expected error", "plan_create accepted a call docs/abi.md forbids (%s)", call.message);
    } else if (status == TSR_UNSUPPORTED && supported == TSR_UNSUPPORTED) {
      r->result = TSR_CONF_DECLINED;
      snprintf(r->detail, sizeof(r->detail), "%s", tsr_conf_host_message());
    } else if (status != c->expect) {
      result_set(r, "expected error", "plan_create returned %s for a call docs/abi.md makes %s (%s): %s",
                 tsr_conf_status_name(status), tsr_conf_status_name(c->expect), call.message,
                 tsr_conf_host_message());
    } else if (tsr_conf_host_message()[0] == '\0') {
      result_set(r, "expected error", "plan_create returned %s without a message",
                 tsr_conf_status_name(status));
    }
    goto done;
  }
  if (status == TSR_UNSUPPORTED) {
    r->result = TSR_CONF_DECLINED;
    snprintf(r->detail, sizeof(r->detail), "plan_create: %s", tsr_conf_host_message());
    dev.plan = NULL;
    goto done;
  }
  if (status != TSR_OK || dev.plan == NULL) {
    result_set(r, "plan_create", "plan_create returned %s for a valid call: %s",
               tsr_conf_status_name(status), tsr_conf_host_message());
    dev.plan = NULL;
    goto done;
  }
  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  status = s->api.plan_info_get(dev.plan, &info);
  if (status != TSR_OK) {
    result_set(r, "plan_info_get", "plan_info_get returned %s: %s", tsr_conf_status_name(status),
               tsr_conf_host_message());
    goto done;
  }
  if (info.engine == NULL) {
    result_set(r, "plan_info_get", "plan_info_get gave no engine name");
    goto done;
  }
  status = buffers_upload(s, &st, why, sizeof(why));
  if (status != TSR_OK) {
    result_set(r, "memory", "%s", why);
    goto done;
  }
  if (info.workspace_bytes > 0) {
    dev.workspace_bytes = info.workspace_bytes;
    uint64_t total = info.workspace_bytes + 2 * WORKSPACE_GUARD;
    dev.workspace_before = malloc(total);
    if (dev.workspace_before == NULL) goto oom;
    for (uint64_t k = 0; k < total; ++k) dev.workspace_before[k] = (unsigned char)(0x3Cu + 17u * (unsigned)k);
    status = s->api.buffer_alloc(s->device, total, s->stream, &dev.workspace);
    if (status == TSR_OK) {
      status = s->api.copy_host_to_device(s->stream, dev.workspace_before, dev.workspace, 0, total);
    }
    if (status != TSR_OK) {
      result_set(r, "memory", "workspace of %llu bytes: %s: %s",
                 (unsigned long long)info.workspace_bytes, tsr_conf_status_name(status),
                 tsr_conf_host_message());
      goto done;
    }
  }
  tsr_conf_host_message_clear();
  status = execute_once(s, c, &st, dev.plan, dev.workspace, dev.workspace_bytes, s->stream);
  tsr_status sync_status = TSR_OK;
  char exec_message[512];
  snprintf(exec_message, sizeof(exec_message), "%s", tsr_conf_host_message());
  if (status == TSR_OK) {
    tsr_conf_host_message_clear();
    sync_status = s->api.stream_synchronize(s->stream);
    snprintf(exec_message, sizeof(exec_message), "%s", tsr_conf_host_message());
  }
  if (c->expect != TSR_OK) {
    // A data-dependent error: at execute (synchronous) or at synchronize.
    tsr_status seen = status != TSR_OK ? status : sync_status;
    if (seen != c->expect) {
      result_set(r, "expected error", "execution returned %s where docs/abi.md 9.3 requires %s (%s)",
                 tsr_conf_status_name(seen), tsr_conf_status_name(c->expect), call.message);
    } else if (exec_message[0] == '\0') {
      result_set(r, "expected error", "execution returned %s without a message",
                 tsr_conf_status_name(seen));
    }
  } else if (status != TSR_OK) {
    result_set(r, "plan_execute", "plan_execute returned %s: %s", tsr_conf_status_name(status), exec_message);
    goto done;
  } else if (sync_status != TSR_OK) {
    result_set(r, "stream_synchronize", "the queued execution failed: %s: %s",
               tsr_conf_status_name(sync_status), exec_message);
    goto done;
  }
  // Read everything back.
  for (int32_t b = 0; b < st.buffer_count; ++b) {
    status = s->api.copy_device_to_host(s->stream, st.buffers[b].device, 0, st.buffers[b].after,
                                        st.buffers[b].bytes);
    if (status != TSR_OK) {
      result_set(r, "memory", "copy_device_to_host returned %s: %s", tsr_conf_status_name(status),
                 tsr_conf_host_message());
      goto done;
    }
  }
  s->api.stream_synchronize(s->stream);
  // Out-of-bounds and gap writes.
  for (int32_t b = 0; b < st.buffer_count; ++b) {
    uint64_t first = 0;
    int64_t stray = stray_writes(&st.buffers[b], &first);
    if (stray > 0) {
      char where[160];
      stray_where(c, &st, b, first, where, sizeof(where));
      result_set(r, "out-of-bounds write", "%lld bytes changed outside every element; the first %s",
                 (long long)stray, where);
      r->ratio = INFINITY;
    }
  }
  // Inputs must be left as they were.
  for (int32_t i = 0; i < c->num_inputs; ++i) {
    const operand_layout *l = &st.layouts[i];
    if (c->operands[i].null_buffer || l->buffer < 0 || st.buffers[l->buffer].is_output) continue;
    const case_buffer *b = &st.buffers[l->buffer];
    if (memcmp(b->before, b->after, b->bytes) != 0) {
      result_set(r, "input modified", "input %d was written to (outputs never overlap it)", (int)i);
      r->ratio = INFINITY;
    }
  }
  if (dev.workspace != NULL) {
    uint64_t total = dev.workspace_bytes + 2 * WORKSPACE_GUARD;
    unsigned char *after = malloc(total);
    if (after != NULL && s->api.copy_device_to_host(s->stream, dev.workspace, 0, after, total) == TSR_OK) {
      if (memcmp(after, dev.workspace_before, WORKSPACE_GUARD) != 0 ||
          memcmp(after + WORKSPACE_GUARD + dev.workspace_bytes,
                 dev.workspace_before + WORKSPACE_GUARD + dev.workspace_bytes, WORKSPACE_GUARD) != 0) {
        result_set(r, "out-of-bounds write", "the execution wrote outside the %llu workspace bytes its plan asked for",
                   (unsigned long long)dev.workspace_bytes);
        r->ratio = INFINITY;
      }
    }
    free(after);
  }
  if (c->expect != TSR_OK) goto done;  // outputs are unspecified after an error
  compare_state cs = {0};
  for (int32_t k = 0; k < c->num_outputs; ++k) {
    int32_t i = c->num_inputs + k;
    if (c->operands[i].null_buffer) continue;
    const operand_layout *l = &st.layouts[i];
    compare_output(c, i, l, st.buffers[l->buffer].after, &outputs[k], &cs);
  }
  r->compared = cs.compared;
  if (cs.max_ratio > r->ratio || r->ratio != r->ratio) r->ratio = cs.max_ratio;
  if (cs.mismatches > 0) {
    // Named after what went wrong, not after the case: a finite value off
    // in a special-values case is a values failure.
    const char *check = cs.first_special ? "NaN/Inf propagation" : "values";
    result_set(r, check, "%lld of %lld elements outside tolerance; first: %s",
               (long long)cs.mismatches, (long long)cs.compared, cs.first);
  }
  goto done;

oom:
  r->result = TSR_CONF_SKIP;
  snprintf(r->detail, sizeof(r->detail), "suite: out of host memory");
done:
  if (dev.plan != NULL) {
    s->api.stream_synchronize(s->stream);
  }
  buffers_release(s, &st);
  if (dev.workspace != NULL) s->api.buffer_free(dev.workspace, s->stream);
  if (dev.plan != NULL) {
    s->api.stream_synchronize(s->stream);
    s->api.plan_destroy(dev.plan);
  }
  free(dev.workspace_before);
  for (int32_t i = 0; i < made_in; ++i) tsr_oracle_tensor_destroy(&inputs[i]);
  for (int32_t i = 0; i < made_out; ++i) tsr_oracle_tensor_destroy(&outputs[i]);
  state_free(&st);
}

// --- prepared executions -------------------------------------------------------------

struct tsr_conf_prepared {
  tsr_conf_session *session;
  tsr_conf_case c;
  int copies;
  case_state *states;  // one per copy, each with its device buffers
  tsr_plugin_plan *plan;
  tsr_plugin_buffer **workspaces;
  uint64_t workspace_bytes;
};

tsr_status tsr_conf_prepared_create(tsr_conf_session *s, const tsr_conf_case *c, int copies,
                                    tsr_conf_prepared **out, char *why, size_t why_size) {
  *out = NULL;
  tsr_conf_prepared *p = calloc(1, sizeof(*p));
  if (p == NULL) return TSR_OUT_OF_MEMORY;
  p->session = s;
  p->c = *c;
  p->copies = copies;
  p->states = calloc((size_t)copies, sizeof(case_state));
  p->workspaces = calloc((size_t)copies, sizeof(tsr_plugin_buffer *));
  if (p->states == NULL || p->workspaces == NULL) {
    tsr_conf_prepared_destroy(p);
    return TSR_OUT_OF_MEMORY;
  }
  for (int k = 0; k < copies; ++k) {
    if (state_build(s, c, &p->states[k]) != 0 || images_fill(s, c, &p->states[k]) != 0) {
      snprintf(why, why_size, "cannot lay out the operands");
      tsr_conf_prepared_destroy(p);
      return TSR_OUT_OF_MEMORY;
    }
  }
  tsr_conf_attrs attrs_buffer;
  tsr_op_signature sig;
  memset(&sig, 0, sizeof(sig));
  sig.struct_size = sizeof(sig);
  sig.op = c->op;
  sig.device = s->device;
  sig.num_inputs = c->num_inputs;
  sig.num_outputs = c->num_outputs;
  sig.inputs = p->states[0].descs;
  sig.outputs = p->states[0].descs + c->num_inputs;
  sig.attrs = attrs_as_passed(c, &attrs_buffer);
  tsr_conf_host_message_clear();
  tsr_status status = s->api.op_supports(&sig);
  if (status == TSR_OK) status = s->api.plan_create(&sig, &p->plan);
  if (status != TSR_OK) {
    snprintf(why, why_size, "%s: %s", tsr_conf_status_name(status), tsr_conf_host_message());
    p->plan = NULL;
    tsr_conf_prepared_destroy(p);
    return status;
  }
  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  s->api.plan_info_get(p->plan, &info);
  p->workspace_bytes = info.workspace_bytes;
  for (int k = 0; k < copies; ++k) {
    status = buffers_upload(s, &p->states[k], why, why_size);
    if (status == TSR_OK && p->workspace_bytes > 0) {
      status = s->api.buffer_alloc(s->device, p->workspace_bytes + 2 * WORKSPACE_GUARD, s->stream,
                                   &p->workspaces[k]);
    }
    if (status != TSR_OK) {
      tsr_conf_prepared_destroy(p);
      return status;
    }
  }
  s->api.stream_synchronize(s->stream);
  *out = p;
  return TSR_OK;
}

tsr_status tsr_conf_prepared_execute(tsr_conf_prepared *p, int copy, tsr_plugin_stream *stream) {
  return execute_once(p->session, &p->c, &p->states[copy], p->plan, p->workspaces[copy],
                      p->workspace_bytes, stream);
}

tsr_status tsr_conf_prepared_read(tsr_conf_prepared *p, int copy, tsr_plugin_stream *stream,
                                  unsigned char *bytes, size_t *out_size) {
  const case_state *st = &p->states[copy];
  int32_t i = p->c.num_inputs;
  const case_buffer *b = &st->buffers[st->layouts[i].buffer];
  *out_size = b->bytes;
  if (bytes == NULL) return TSR_OK;
  return p->session->api.copy_device_to_host(stream, b->device, 0, bytes, b->bytes);
}

const tsr_plugin_plan *tsr_conf_prepared_plan(const tsr_conf_prepared *p) { return p->plan; }

void tsr_conf_prepared_destroy(tsr_conf_prepared *p) {
  if (p == NULL) return;
  tsr_conf_session *s = p->session;
  s->api.stream_synchronize(s->stream);
  for (int k = 0; k < p->copies && p->states != NULL; ++k) {
    buffers_release(s, &p->states[k]);
    if (p->workspaces[k] != NULL) s->api.buffer_free(p->workspaces[k], s->stream);
    state_free(&p->states[k]);
  }
  s->api.stream_synchronize(s->stream);
  if (p->plan != NULL) s->api.plan_destroy(p->plan);
  free(p->states);
  free(p->workspaces);
  free(p);
}
