// Own kernel or oneDNN op, by measurement where both can run (route.h).
//
// Class keys name what a choice depends on and bucket the sizes it does not
// depend on much: the product's or tensor's sizes by the power of two at or
// above them, a convolution's batch likewise (its channels, image and window
// exactly: the direct kernels' domains are drawn in them). "select v1" in the
// plugin key versions the keys and the candidates' names; the core adds the
// plugin's build, the CPU, the thread count and the CPU set.
#include "route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_weight_cache.h"
#include "onednn_plugin.h"
#include "onednn_table.h"
#include "tessera/ops.h"

#define PLUGIN_KEY "select v1"

#define ROUTE_TRY(expr)            \
  do {                             \
    tsr_status status_ = (expr);   \
    if (status_ != TSR_OK)         \
      return status_;              \
  } while (0)

// The own kernel, the family's oneDNN primitive and, for large plain float32
// products, dnnl_sgemm (sgemm.c).
enum { CANDIDATE_OWN = 0, CANDIDATE_ONEDNN = 1, CANDIDATE_SGEMM = 2, CANDIDATE_COUNT = 3 };
static const char *const k_names[CANDIDATE_COUNT] = {"own", "onednn", "sgemm"};

// --- class keys ------------------------------------------------------------------

static long long bucket(int64_t x) {
  long long b = 1;
  while (b < x && b < (1LL << 40)) b <<= 1;
  return b;
}

static int64_t numel(const tsr_tensor_desc *d) {
  int64_t n = 1;
  for (int32_t i = 0; i < d->rank; ++i) n *= d->sizes[i];
  return n;
}

// 'd': dense row-major; 'b': a stride of 0 (broadcast); 's': other strides.
static char layout_of(const tsr_tensor_desc *d) {
  int64_t expect = 1;
  int dense = 1;
  for (int32_t i = d->rank - 1; i >= 0; --i) {
    if (d->sizes[i] > 1 && d->strides[i] == 0)
      return 'b';
    if (d->sizes[i] > 1 && d->strides[i] != expect)
      dense = 0;
    expect *= d->sizes[i];
  }
  return dense ? 'd' : 's';
}

// Matrix layout of the last two dimensions: 'r' row-major, 'c' column-major,
// 's' other.
static char matrix_layout_of(const tsr_tensor_desc *d) {
  const int32_t r = d->rank;
  if (d->strides[r - 1] == 1 && d->strides[r - 2] >= d->sizes[r - 1])
    return 'r';
  if (d->strides[r - 2] == 1 && d->strides[r - 1] >= d->sizes[r - 2])
    return 'c';
  return 's';
}

// Copies the op's attributes over |defaults| (|bytes| of them), as far as the
// caller's struct reaches.
static void attrs_read(const tsr_op_signature *signature, void *out, size_t bytes) {
  const size_t *given = signature->attrs;
  if (given == NULL)
    return;
  const size_t n = *given < bytes ? *given : bytes;
  memcpy(out, given, n);
}

static int matmul_key(const tsr_op_signature *s, char *out, size_t size) {
  const tsr_tensor_desc *a = &s->inputs[0], *b = &s->inputs[1], *o = &s->outputs[0];
  if ((a->dtype != TSR_FLOAT32 && a->dtype != TSR_BFLOAT16) || o->rank < 2 || a->rank < 2 ||
      b->rank < 2)
    return 0;
  tsr_matmul_attrs attrs = {.alpha = 1.0};
  attrs_read(s, &attrs, sizeof(attrs));
  const int32_t r = o->rank;
  int64_t batch = 1;
  for (int32_t d = 0; d < r - 2; ++d) batch *= o->sizes[d];
  const int n = snprintf(out, size, "matmul %s a%c b%c o%c m%lld n%lld k%lld batch%lld bias%d act%d beta%d",
                         a->dtype == TSR_FLOAT32 ? "f32" : "bf16", matrix_layout_of(a),
                         matrix_layout_of(b), matrix_layout_of(o), bucket(o->sizes[r - 2]),
                         bucket(o->sizes[r - 1]), bucket(a->sizes[a->rank - 1]), bucket(batch),
                         attrs.has_bias != 0, (int)attrs.activation, attrs.beta != 0.0);
  return n > 0 && (size_t)n < size;
}

static int conv_key(const tsr_op_signature *s, char *out, size_t size) {
  const int fwd = s->op == TSR_OP_CONV2D;
  // CONV2D: (x, w) -> y; CONV2D_BACKWARD_FILTER: (dy, x) -> dw.
  const tsr_tensor_desc *x = fwd ? &s->inputs[0] : &s->inputs[1];
  const tsr_tensor_desc *w = fwd ? &s->inputs[1] : &s->outputs[0];
  if ((x->dtype != TSR_FLOAT32 && x->dtype != TSR_BFLOAT16) || x->rank != 4 || w->rank != 4)
    return 0;
  tsr_conv2d_attrs a = {.stride = {1, 1}, .dilation = {1, 1}, .groups = 1};
  attrs_read(s, &a, sizeof(a));
  const int n = snprintf(
      out, size,
      "%s %s x%c n%lld c%lld h%lld w%lld o%lld k%lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld "
      "d%lld,%lld g%lld act%d bias%d",
      fwd ? "conv.fwd" : "conv.filter", x->dtype == TSR_FLOAT32 ? "f32" : "bf16", layout_of(x),
      bucket(x->sizes[0]), (long long)x->sizes[1], (long long)x->sizes[2],
      (long long)x->sizes[3], (long long)w->sizes[0], (long long)w->sizes[2],
      (long long)w->sizes[3], (long long)a.stride[0], (long long)a.stride[1],
      (long long)a.pad_before[0], (long long)a.pad_before[1], (long long)a.pad_after[0],
      (long long)a.pad_after[1], (long long)a.dilation[0], (long long)a.dilation[1],
      (long long)a.groups, fwd ? (int)a.activation : 0, a.has_bias != 0);
  return n > 0 && (size_t)n < size;
}

static const char *dtype_key(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      return "f32";
    case TSR_BFLOAT16:
      return "bf16";
    case TSR_FLOAT16:
      return "f16";
    case TSR_INT32:
      return "i32";
    default:
      return NULL;  // no oneDNN primitive: nothing to choose
  }
}

static int eltwise_key(const tsr_op_signature *s, char *out, size_t size) {
  const tsr_tensor_desc *o = &s->outputs[0];
  const char *dt = dtype_key(s->inputs[0].dtype);
  if (dt == NULL || dtype_key(o->dtype) == NULL)
    return 0;
  int n = -1;
  if (s->op == TSR_OP_BINARY) {
    tsr_binary_attrs a = {.alpha = 1.0};
    attrs_read(s, &a, sizeof(a));
    n = snprintf(out, size, "binary %s fn%d n%lld a%c b%c o%c", dt, (int)a.fn, bucket(numel(o)),
                 numel(&s->inputs[0]) == numel(o) ? layout_of(&s->inputs[0]) : 'b',
                 numel(&s->inputs[1]) == numel(o) ? layout_of(&s->inputs[1]) : 'b', layout_of(o));
  } else if (s->op == TSR_OP_CLAMP) {
    tsr_clamp_attrs a = {0};
    attrs_read(s, &a, sizeof(a));
    n = snprintf(out, size, "clamp %s min%d max%d n%lld x%c o%c", dt, a.has_min != 0,
                 a.has_max != 0, bucket(numel(o)), layout_of(&s->inputs[0]), layout_of(o));
  } else {
    tsr_unary_attrs a = {0};
    attrs_read(s, &a, sizeof(a));
    n = snprintf(out, size, "%s %s fn%d n%lld x%c o%c",
                 s->op == TSR_OP_UNARY ? "unary" : "unary.bwd", dt, (int)a.fn, bucket(numel(o)),
                 layout_of(&s->inputs[0]), layout_of(o));
  }
  return n > 0 && (size_t)n < size;
}

int tsr_onednn_route_class_key(const tsr_op_signature *signature, char *out, size_t size) {
  if (signature->num_outputs < 1 || signature->num_inputs < 1)
    return 0;
  switch (signature->op) {
    case TSR_OP_MATMUL:
      return signature->num_inputs >= 2 && matmul_key(signature, out, size);
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      return signature->num_inputs >= 2 && conv_key(signature, out, size);
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_CLAMP:
      return eltwise_key(signature, out, size);
    case TSR_OP_BINARY:
      return signature->num_inputs >= 2 && eltwise_key(signature, out, size);
    default:
      return 0;
  }
}

// --- scratch data and the two runs -----------------------------------------------

typedef struct route_scratch {
  const tsr_plugin_api *ref;
  tsr_plugin_stream *stream;
  int32_t count;
  tsr_plugin_buffer *buffers[TSR_MAX_OPERANDS];
  tsr_plugin_buffer *workspace;
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  tsr_exec_args own_args;
  tsr_exec_args op_args[CANDIDATE_COUNT];  // [CANDIDATE_ONEDNN] and on
  tsr_plugin_plan *own;
  const tsr_onednn_op *ops[CANDIDATE_COUNT];  // NULL where there is none
} route_scratch;

// Bytes from element 0 to one past the last element of |d|.
static uint64_t extent_of(const tsr_tensor_desc *d) {
  uint64_t last = 0;
  for (int32_t i = 0; i < d->rank; ++i) {
    if (d->sizes[i] == 0)
      return 0;
    last += (uint64_t)(d->sizes[i] - 1) * (uint64_t)d->strides[i];
  }
  return (last + 1) * tsr_dtype_size(d->dtype);
}

// 0.25 (1 for integers and bool) in every element: finite, in every
// function's domain, never a denormal.
static void fill(void *ptr, tsr_dtype_t dtype, uint64_t bytes) {
  const size_t elem = tsr_dtype_size(dtype);
  unsigned char one[8] = {0};
  switch (dtype) {
    case TSR_FLOAT32: {
      const float v = 0.25f;
      memcpy(one, &v, sizeof(v));
      break;
    }
    case TSR_FLOAT64: {
      const double v = 0.25;
      memcpy(one, &v, sizeof(v));
      break;
    }
    case TSR_BFLOAT16:
      one[0] = 0x80, one[1] = 0x3e;
      break;
    case TSR_FLOAT16:
      one[0] = 0x00, one[1] = 0x34;
      break;
    default:
      one[0] = 1;
      break;
  }
  unsigned char *p = ptr;
  for (uint64_t i = 0; i + elem <= bytes; i += elem) memcpy(p + i, one, elem);
}

static void scratch_fini(route_scratch *s) {
  for (int32_t i = 0; i < s->count; ++i) {
    if (s->buffers[i] != NULL) {
      tsr_onednn_weight_cache_buffer_forget(s->buffers[i]);
      s->ref->buffer_free(s->buffers[i], s->stream);
    }
  }
  if (s->workspace != NULL)
    s->ref->buffer_free(s->workspace, s->stream);
  if (s->stream != NULL) {
    s->ref->stream_synchronize(s->stream);
    s->ref->stream_destroy(s->stream);
  }
}

static tsr_status buffer_make(route_scratch *s, int32_t device, uint64_t bytes,
                              tsr_plugin_buffer **out) {
  return s->ref->buffer_alloc(device, bytes < 64 ? 64 : bytes, s->stream, out);
}

// Operands of |signature| in fresh buffers; TSR_UNSUPPORTED where timing
// them would not show a real call (aliasing operands).
static tsr_status scratch_init(route_scratch *s, const tsr_op_signature *signature,
                               tsr_plugin_plan *own, uint64_t own_ws,
                               tsr_onednn_op *const ops[CANDIDATE_COUNT]) {
  memset(s, 0, sizeof(*s));
  s->ref = tsr_onednn_ref_api();
  s->own = own;
  uint64_t ws = own_ws;
  for (int32_t i = CANDIDATE_ONEDNN; i < CANDIDATE_COUNT; ++i) {
    s->ops[i] = ops[i];
    if (ops[i] != NULL && ops[i]->workspace_bytes > ws)
      ws = ops[i]->workspace_bytes;
  }
  const int32_t count = signature->num_inputs + signature->num_outputs;
  if (count > TSR_MAX_OPERANDS)
    return TSR_UNSUPPORTED;
  for (int32_t i = 0; i < count; ++i) {
    const tsr_tensor_desc *d = i < signature->num_inputs
                                   ? &signature->inputs[i]
                                   : &signature->outputs[i - signature->num_inputs];
    if (d->alias_group >= 0)
      return TSR_UNSUPPORTED;
    s->descs[i] = *d;
  }
  s->count = count;
  const int32_t device = signature->device;
  ROUTE_TRY(s->ref->stream_create(device, 0, &s->stream));
  for (int32_t i = 0; i < s->count; ++i) {
    const uint64_t bytes = extent_of(&s->descs[i]);
    ROUTE_TRY(buffer_make(s, device, bytes, &s->buffers[i]));
    void *host = NULL;
    ROUTE_TRY(s->ref->buffer_host_ptr_get(s->buffers[i], &host));
    fill(host, s->descs[i].dtype, bytes);
    s->descs[i].buffer = s->buffers[i];
    s->descs[i].byte_offset = 0;
    s->descs[i].storage_version = 1;
  }
  if (ws > 0)
    ROUTE_TRY(buffer_make(s, device, ws, &s->workspace));
  const tsr_exec_args args = {.struct_size = sizeof(args),
                              .num_inputs = signature->num_inputs,
                              .num_outputs = signature->num_outputs,
                              .inputs = s->descs,
                              .outputs = s->descs + signature->num_inputs};
  s->own_args = args;
  s->own_args.workspace = own_ws > 0 ? s->workspace : NULL;
  s->own_args.workspace_bytes = own_ws;
  for (int32_t i = CANDIDATE_ONEDNN; i < CANDIDATE_COUNT; ++i) {
    const uint64_t bytes = ops[i] != NULL ? ops[i]->workspace_bytes : 0;
    s->op_args[i] = args;
    s->op_args[i].workspace = bytes > 0 ? s->workspace : NULL;
    s->op_args[i].workspace_bytes = bytes;
  }
  return TSR_OK;
}

static tsr_status route_run(void *arg, int32_t index) {
  route_scratch *s = arg;
  if (index == CANDIDATE_OWN) {
    ROUTE_TRY(s->ref->plan_execute(s->own, &s->own_args, s->stream));
    return s->ref->stream_synchronize(s->stream);
  }
  // As tsr_onednn_plan_execute runs an op.
  const tsr_onednn_op *op = s->ops[index];
  if (op == NULL)
    return TSR_UNSUPPORTED;
  char *ptrs[TSR_MAX_OPERANDS];
  char *workspace = NULL;
  ROUTE_TRY(tsr_onednn_resolve_get()(s->own, &s->op_args[index], s->stream, op->workspace_bytes,
                                     ptrs, &workspace));
  tsr_onednn_exec_ctx ctx = {.ptrs = ptrs, .args = &s->op_args[index], .workspace = workspace};
  ROUTE_TRY(tsr_onednn_thread_stream_get(&ctx.stream));
  return op->execute(op, &ctx);
}

// --- the choice ------------------------------------------------------------------

// Operands that overlap (in place): scratch buffers would not show such a call.
static int aliased(const tsr_op_signature *signature) {
  for (int32_t i = 0; i < signature->num_inputs; ++i) {
    if (signature->inputs[i].alias_group >= 0)
      return 1;
  }
  for (int32_t i = 0; i < signature->num_outputs; ++i) {
    if (signature->outputs[i].alias_group >= 0)
      return 1;
  }
  return 0;
}

tsr_status tsr_onednn_route_choose(const tsr_op_signature *signature, tsr_onednn_build_fn build,
                                   const tsr_onednn_build_ctx *ctx, tsr_plugin_plan *own,
                                   uint64_t own_workspace_bytes, tsr_onednn_op **out_op,
                                   tsr_onednn_source_t *out_source) {
  *out_op = NULL;
  *out_source = TSR_ONEDNN_SOURCE_NONE;
  const tsr_onednn_select_mode_t mode = tsr_onednn_select_mode_get();
  char key[TSR_ENGINE_CACHE_CLASS_KEY_MAX + 1];
  // TSR_ONEDNN_MIN_ELEMENTS=0 sends everything oneDNN can take to oneDNN
  // (the conformance run with every primitive path forced): no choice then.
  const int has_class = ctx->min_elements != 0 && mode != TSR_ONEDNN_SELECT_DEFAULT_ONLY &&
                        tsr_onednn_route_class_key(signature, key, sizeof(key));
  tsr_status status = TSR_OK;
  if (!has_class) {
    status = build(signature, ctx, out_op);
    return status == TSR_UNSUPPORTED ? TSR_OK : status;
  }
  // The candidates' build: declines where oneDNN cannot do the op or would
  // not match the catalogue, and below the size floors (TSR_ONEDNN_MIN_ELEMENTS
  // and the families' multiply-add floors, the single-row GEMV): there a
  // primitive's per-call cost includes mallocs inside oneDNN, which no
  // measured speed may bring onto the dispatch path (DESIGN.md 5.1,
  // test_no_malloc_onednn). Above them the fixed routes are only defaults.
  tsr_onednn_build_ctx any = *ctx;
  any.no_fixed_routes = 1;
  // dnnl_sgemm, where the product qualifies: a third candidate, never the
  // default.
  tsr_onednn_op *sgemm = NULL;
  if (signature->op == TSR_OP_MATMUL) {
    status = tsr_onednn_sgemm_build(signature, &any, &sgemm);
    if (status != TSR_OK && status != TSR_UNSUPPORTED)
      return status;
  }
  tsr_onednn_select_class cls = {.host = tsr_onednn_host_get(),
                                 .plugin_key = PLUGIN_KEY,
                                 .class_key = key,
                                 .count = sgemm != NULL ? 3 : 2,
                                 .names = k_names,
                                 .default_index = CANDIDATE_OWN};
  int32_t index = 0;
  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_NONE;
  if (tsr_onednn_select_lookup(&cls, &index, &source) == TSR_OK) {
    if (index == CANDIDATE_SGEMM) {
      *out_op = sgemm;
      *out_source = source;
      return TSR_OK;
    }
    if (sgemm != NULL)
      sgemm->destroy(sgemm);
    if (index == CANDIDATE_OWN) {
      *out_source = source;
      return TSR_OK;
    }
    status = build(signature, &any, out_op);
    if (status == TSR_OK && *out_op != NULL)
      *out_source = source;
    return status == TSR_UNSUPPORTED ? TSR_OK : status;
  }
  // No decision yet: the cold default first.
  tsr_onednn_op *ops[CANDIDATE_COUNT] = {NULL, NULL, sgemm};
  status = build(signature, ctx, &ops[CANDIDATE_ONEDNN]);
  if (status != TSR_OK && status != TSR_UNSUPPORTED)
    goto done;
  status = TSR_OK;
  const int deterministic = (ctx->plan_flags & TSR_PLAN_REQUIRE_DETERMINISM) != 0;
  cls.default_index = ops[CANDIDATE_ONEDNN] != NULL ? CANDIDATE_ONEDNN : CANDIDATE_OWN;
  if (deterministic || mode != TSR_ONEDNN_SELECT_MEASURE || aliased(signature)) {
    *out_op = ops[CANDIDATE_ONEDNN];
    ops[CANDIDATE_ONEDNN] = NULL;
    *out_source = TSR_ONEDNN_SOURCE_DEFAULT;
    goto done;
  }
  if (ops[CANDIDATE_ONEDNN] == NULL) {
    status = build(signature, &any, &ops[CANDIDATE_ONEDNN]);
    if (status == TSR_UNSUPPORTED || (status == TSR_OK && ops[CANDIDATE_ONEDNN] == NULL)) {
      status = TSR_OK;  // oneDNN cannot: nothing to choose
      goto done;
    }
    if (status != TSR_OK)
      goto done;
  }
  route_scratch scratch;
  tsr_status ready = scratch_init(&scratch, signature, own, own_workspace_bytes, ops);
  index = cls.default_index;
  source = TSR_ONEDNN_SOURCE_DEFAULT;
  if (ready == TSR_OK)
    status = tsr_onednn_select_measure(&cls, route_run, &scratch, &index, &source);
  scratch_fini(&scratch);
  if (status == TSR_OK) {
    if (index != CANDIDATE_OWN) {
      *out_op = ops[index];
      ops[index] = NULL;
    }
    *out_source = source;
  }
done:
  for (int32_t i = CANDIDATE_ONEDNN; i < CANDIDATE_COUNT; ++i) {
    if (ops[i] != NULL)
      ops[i]->destroy(ops[i]);
  }
  return status;
}
