// Helpers for ref's tests.
#include "test_util.h"

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "test_host.h"

const tsr_plugin_api *tt_api;

int tt_setup(int32_t threads) {
  tt_api = tsr_test_host_start(threads);
  return tt_api == NULL ? -1 : 0;
}

int tt_setup_serial(void **state) {
  (void)state;
  return tt_setup(1);
}

int tt_setup_two_threads(void **state) {
  (void)state;
  return tt_setup(2);
}

int tt_teardown(void **state) {
  (void)state;
  tsr_test_host_stop();
  return 0;
}

void tt_tensor_make(tt_tensor *t, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                    const int64_t *strides, int64_t offset) {
  memset(t, 0, sizeof(*t));
  t->desc.struct_size = sizeof(tsr_tensor_desc);
  t->desc.dtype = dtype;
  t->desc.rank = rank;
  t->desc.alias_group = -1;
  t->desc.alignment = (uint32_t)tsr_dtype_size(dtype);
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    t->desc.sizes[d] = sizes[d];
    t->desc.strides[d] = strides != NULL ? strides[d] : stride;
    stride *= sizes[d] > 0 ? sizes[d] : 1;
  }
  int64_t extent = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (sizes[d] == 0) extent = 0;
  }
  if (extent != 0) {
    for (int32_t d = 0; d < rank; ++d) extent += (sizes[d] - 1) * t->desc.strides[d];
  }
  uint64_t elem = tsr_dtype_size(dtype);
  t->desc.byte_offset = (uint64_t)offset * elem;
  assert_int_equal(tt_api->buffer_alloc(0, (uint64_t)(offset + extent) * elem, NULL, &t->buffer),
                   TSR_OK);
  void *ptr = NULL;
  assert_int_equal(tt_api->buffer_host_ptr_get(t->buffer, &ptr), TSR_OK);
  t->base = ptr;
  // Poison: every byte a kernel should not read or leave alone is visible.
  memset(t->base, 0x7f, (size_t)((uint64_t)(offset + extent) * elem));
  t->desc.buffer = t->buffer;
}

void tt_tensor_make_permuted(tt_tensor *t, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                             const int32_t *perm) {
  // Physical dimension p holds logical dimension d where perm[d] == p; lay
  // the physical dimensions out row-major.
  int64_t physical_sizes[TSR_MAX_RANK], physical_strides[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) physical_sizes[perm[d]] = sizes[d];
  int64_t stride = 1;
  for (int32_t p = rank - 1; p >= 0; --p) {
    physical_strides[p] = stride;
    stride *= physical_sizes[p] > 0 ? physical_sizes[p] : 1;
  }
  int64_t strides[TSR_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) strides[d] = physical_strides[perm[d]];
  tt_tensor_make(t, dtype, rank, sizes, strides, 0);
}

void tt_tensor_free(tt_tensor *t) {
  if (t->buffer != NULL) assert_int_equal(tt_api->buffer_free(t->buffer, NULL), TSR_OK);
  t->buffer = NULL;
}

static char *tt_element(const tt_tensor *t, const int64_t *idx) {
  int64_t offset = 0;
  for (int32_t d = 0; d < t->desc.rank; ++d) offset += idx[d] * t->desc.strides[d];
  return t->base + t->desc.byte_offset + (uint64_t)offset * tsr_dtype_size(t->desc.dtype);
}

double tt_get(const tt_tensor *t, const int64_t *idx) {
  const char *p = tt_element(t, idx);
  switch (t->desc.dtype) {
    case TSR_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    case TSR_FLOAT64: { double v; memcpy(&v, p, 8); return v; }
    case TSR_BFLOAT16: { uint16_t v; memcpy(&v, p, 2); return tsr_cpu_bf16_to_f32(v); }
    case TSR_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return tsr_cpu_f16_to_f32(v); }
    case TSR_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TSR_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case TSR_BOOL: return (double)(uint8_t)*p;
    default: fail_msg("tt_get: dtype %d", (int)t->desc.dtype); return 0;
  }
}

void tt_set(tt_tensor *t, const int64_t *idx, double value) {
  char *p = tt_element(t, idx);
  switch (t->desc.dtype) {
    case TSR_FLOAT32: { float v = (float)value; memcpy(p, &v, 4); break; }
    case TSR_FLOAT64: memcpy(p, &value, 8); break;
    case TSR_BFLOAT16: {
      // Rounded here, independently of ref; then exact in float32.
      uint16_t v = tsr_cpu_f32_to_bf16((float)tt_round(value, TSR_BFLOAT16));
      memcpy(p, &v, 2);
      break;
    }
    case TSR_FLOAT16: {
      uint16_t v = tsr_cpu_f32_to_f16((float)tt_round(value, TSR_FLOAT16));
      memcpy(p, &v, 2);
      break;
    }
    case TSR_INT32: {
      int32_t v = value >= 2147483647.0 ? INT32_MAX
                  : value <= -2147483648.0 ? INT32_MIN : (int32_t)value;
      memcpy(p, &v, 4);
      break;
    }
    case TSR_INT64: {
      int64_t v = value >= 9223372036854775807.0 ? INT64_MAX
                  : value <= -9223372036854775808.0 ? INT64_MIN : (int64_t)value;
      memcpy(p, &v, 8);
      break;
    }
    case TSR_BOOL: *p = value != 0; break;
    default: fail_msg("tt_set: dtype %d", (int)t->desc.dtype);
  }
}

double tt_get_broadcast(const tt_tensor *t, const int64_t *idx) {
  int64_t local[TSR_MAX_RANK];
  for (int32_t d = 0; d < t->desc.rank; ++d) local[d] = t->desc.sizes[d] == 1 ? 0 : idx[d];
  return tt_get(t, local);
}

double *tt_values(const tt_tensor *t, const int64_t *sizes) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->desc.rank; ++d) n *= sizes[d];
  double *v = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  assert_non_null(v);
  if (n == 0) return v;
  int64_t idx[TSR_MAX_RANK] = {0}, i = 0;
  do v[i++] = tt_get_broadcast(t, idx); while (tt_index_next(idx, t->desc.rank, sizes));
  return v;
}

tsr_oracle_tensor tt_oracle_tensor(const tt_tensor *t) {
  tsr_oracle_tensor o;
  assert_int_equal(tsr_oracle_tensor_create(t->desc.dtype, t->desc.rank, t->desc.sizes, &o), 0);
  if (o.numel == 0) return o;
  int64_t idx[TSR_MAX_RANK] = {0}, i = 0;
  do {
    const double v = tt_get(t, idx);
    tsr_oracle_tensor_set(&o, i++, v, (int64_t)v);
  } while (tt_index_next(idx, t->desc.rank, t->desc.sizes));
  return o;
}

void tt_oracle_run(int32_t op, const void *attrs, tsr_oracle_tensor *inputs, int32_t num_inputs,
                   tt_tensor *const *outputs, int32_t num_outputs, double **out_values) {
  tsr_oracle_tensor out[8];
  assert_true(num_outputs <= 8);
  for (int32_t k = 0; k < num_outputs; ++k) out[k] = tt_oracle_tensor(outputs[k]);
  tsr_oracle_call call = {op, attrs, num_inputs, num_outputs, inputs, out, {0}};
  if (tsr_oracle_compute(&call) != TSR_OK) fail_msg("oracle op %d: %s", (int)op, call.message);
  for (int32_t k = 0; k < num_outputs; ++k) {
    out_values[k] = out[k].v;
    out[k].v = NULL;
    tsr_oracle_tensor_destroy(&out[k]);
  }
  for (int32_t k = 0; k < num_inputs; ++k) tsr_oracle_tensor_destroy(&inputs[k]);
}

int tt_index_next(int64_t *idx, int32_t rank, const int64_t *sizes) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (++idx[d] < sizes[d]) return 1;
    idx[d] = 0;
  }
  return 0;
}

int64_t tt_numel(const tt_tensor *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->desc.rank; ++d) n *= t->desc.sizes[d];
  return n;
}

void tt_fill(tt_tensor *t, uint64_t seed, double lo, double hi) {
  if (tt_numel(t) == 0) return;
  int64_t idx[TSR_MAX_RANK] = {0};
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  do {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(state >> 11) * 0x1.0p-53;
    double v = lo + (hi - lo) * u;
    if (t->desc.dtype == TSR_INT32 || t->desc.dtype == TSR_INT64) v = floor(v + 0.5);
    if (t->desc.dtype == TSR_BOOL) v = u < 0.5 ? 0 : 1;
    tt_set(t, idx, v);
  } while (tt_index_next(idx, t->desc.rank, t->desc.sizes));
}

static void tt_signature_make(tsr_op_signature *sig, tsr_tensor_desc *in, tsr_tensor_desc *out,
                              int32_t op, const void *attrs, tt_tensor *const *inputs,
                              int32_t num_inputs, tt_tensor *const *outputs, int32_t num_outputs) {
  for (int32_t i = 0; i < num_inputs; ++i) {
    in[i] = inputs[i]->desc;
    in[i].buffer = NULL;
  }
  for (int32_t i = 0; i < num_outputs; ++i) {
    out[i] = outputs[i]->desc;
    out[i].buffer = NULL;
  }
  memset(sig, 0, sizeof(*sig));
  sig->struct_size = sizeof(*sig);
  sig->op = op;
  sig->num_inputs = num_inputs;
  sig->num_outputs = num_outputs;
  sig->inputs = in;
  sig->outputs = out;
  sig->attrs = attrs;
}

tsr_status tt_supports(int32_t op, const void *attrs, tt_tensor *const *inputs,
                       int32_t num_inputs, tt_tensor *const *outputs, int32_t num_outputs) {
  tsr_tensor_desc in[TSR_MAX_OPERANDS], out[TSR_MAX_OPERANDS];
  tsr_op_signature sig;
  tt_signature_make(&sig, in, out, op, attrs, inputs, num_inputs, outputs, num_outputs);
  return tt_api->op_supports(&sig);
}

tsr_status tt_run(int32_t op, const void *attrs, tt_tensor *const *inputs, int32_t num_inputs,
                  tt_tensor *const *outputs, int32_t num_outputs, const char **out_engine) {
  tsr_tensor_desc in[TSR_MAX_OPERANDS], out[TSR_MAX_OPERANDS];
  tsr_op_signature sig;
  tt_signature_make(&sig, in, out, op, attrs, inputs, num_inputs, outputs, num_outputs);
  tsr_plugin_plan *plan = NULL;
  tsr_status status = tt_api->plan_create(&sig, &plan);
  if (status != TSR_OK) return status;
  tsr_plan_info info = {.struct_size = sizeof(info)};
  status = tt_api->plan_info_get(plan, &info);
  if (status != TSR_OK) return status;
  if (out_engine != NULL) *out_engine = info.engine;
  tsr_exec_args args = {.struct_size = sizeof(args)};
  tsr_tensor_desc exec_in[TSR_MAX_OPERANDS], exec_out[TSR_MAX_OPERANDS];
  for (int32_t i = 0; i < num_inputs; ++i) exec_in[i] = inputs[i]->desc;
  for (int32_t i = 0; i < num_outputs; ++i) exec_out[i] = outputs[i]->desc;
  args.num_inputs = num_inputs;
  args.num_outputs = num_outputs;
  args.inputs = exec_in;
  args.outputs = exec_out;
  tsr_plugin_buffer *workspace = NULL;
  if (info.workspace_bytes > 0) {
    // An odd offset checks that the plan aligns its workspace itself.
    assert_int_equal(tt_api->buffer_alloc(0, info.workspace_bytes + 8, NULL, &workspace), TSR_OK);
    args.workspace = workspace;
    args.workspace_offset = 8;
    args.workspace_bytes = info.workspace_bytes;
  }
  tsr_plugin_stream *stream = NULL;
  assert_int_equal(tt_api->stream_create(0, 0, &stream), TSR_OK);
  status = tt_api->plan_execute(plan, &args, stream);
  assert_int_equal(tt_api->stream_synchronize(stream), TSR_OK);
  assert_int_equal(tt_api->stream_destroy(stream), TSR_OK);
  if (workspace != NULL) assert_int_equal(tt_api->buffer_free(workspace, NULL), TSR_OK);
  assert_int_equal(tt_api->plan_destroy(plan), TSR_OK);
  return status;
}

int tt_close(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isnan(got)) return 0;
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

double tt_rtol(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32: return 2e-6;
    case TSR_FLOAT64: return 1e-13;
    // Half an ulp at the top of a binade, plus float32's own error.
    case TSR_BFLOAT16: return 0x1.02p-8;
    case TSR_FLOAT16: return 0x1.02p-11;
    default: return 0;
  }
}

// |v| rounded to nearest even with |p| significand bits, exponents down to
// |emin| (below it the quantum stays 2^(emin - p + 1): subnormals), and
// infinity beyond |max_finite|. Every step is exact in double.
static double tt_round_binary(double v, int p, int emin, double max_finite) {
  if (isnan(v) || isinf(v) || v == 0) return v;
  int e;
  frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  int lead = e - 1 < emin ? emin : e - 1;
  double quantum = ldexp(1.0, lead - (p - 1));
  double r = nearbyint(v / quantum) * quantum;
  return fabs(r) > max_finite ? copysign(INFINITY, v) : r;
}

double tt_round(double v, tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32: return (float)v;
    case TSR_BFLOAT16: return tt_round_binary(v, 8, -126, 0x1.fep127);
    case TSR_FLOAT16: return tt_round_binary(v, 11, -14, 65504.0);
    default: return v;
  }
}

int tt_is_half(tsr_dtype_t dtype) { return dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16; }
