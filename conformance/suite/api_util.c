// See api.h.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

void tsr_conf_api_pattern(unsigned char *bytes, size_t size, uint32_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  size_t i = 0;
  while (i < size) {
    uint64_t r = tsr_conf_random_next(&state);
    for (int k = 0; k < 8 && i < size; ++k, ++i) bytes[i] = (unsigned char)(r >> (8 * k));
  }
}

tsr_status tsr_conf_api_buffer_create(tsr_conf_session *s, uint64_t size, uint32_t seed,
                                      tsr_plugin_buffer **out, char *why, size_t why_size) {
  *out = NULL;
  tsr_conf_host_message_clear();
  tsr_status status = s->api.buffer_alloc(s->device, size, s->stream, out);
  if (status != TSR_OK || *out == NULL) {
    snprintf(why, why_size, "buffer_alloc(%llu) returned %s: %s", (unsigned long long)size,
             tsr_conf_status_name(status), tsr_conf_host_message());
    *out = NULL;
    return status != TSR_OK ? status : TSR_INTERNAL;
  }
  if (seed != 0 && size > 0) {
    unsigned char *host = malloc(size);
    if (host == NULL) {
      snprintf(why, why_size, "suite: out of host memory");
      return TSR_OUT_OF_MEMORY;
    }
    tsr_conf_api_pattern(host, size, seed);
    status = s->api.copy_host_to_device(s->stream, host, *out, 0, size);
    free(host);
    if (status != TSR_OK) {
      snprintf(why, why_size, "copy_host_to_device(%llu) returned %s: %s", (unsigned long long)size,
               tsr_conf_status_name(status), tsr_conf_host_message());
      return status;
    }
  }
  return TSR_OK;
}

int64_t tsr_conf_api_first_difference(const unsigned char *a, const unsigned char *b, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    if (a[i] != b[i]) return (int64_t)i;
  }
  return -1;
}

static int case_declared(tsr_conf_session *s, const tsr_conf_case *c) {
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  tsr_conf_attrs attrs;
  tsr_op_signature sig;
  if (tsr_conf_case_signature(s, c, descs, &attrs, &sig) != 0) return 0;
  for (int32_t i = 0; i < c->num_inputs + c->num_outputs; ++i) {
    if (!(s->props.dtype_mask & TSR_DTYPE_BIT(c->operands[i].dtype))) return 0;
  }
  return s->api.op_supports(&sig) == TSR_OK;
}

int tsr_conf_api_case_pick(tsr_conf_session *s, tsr_conf_case *c) {
  if (!s->has_kernels) return -1;
  tsr_dtype_t dt = (s->props.dtype_mask & TSR_DTYPE_BIT(TSR_FLOAT32)) ? TSR_FLOAT32 : TSR_FLOAT64;
  // A matmul big enough that a plugin parallelises it.
  tsr_conf_case_init(c, TSR_OP_MATMUL, "concurrency", "matmul %s 48x80x40 bias gelu",
                     tsr_oracle_dtype_name(dt));
  c->has_attrs = 1;
  c->attrs.matmul = (tsr_matmul_attrs){sizeof(tsr_matmul_attrs), 1.0, 0.0, TSR_ACTIVATION_GELU, 1};
  tsr_conf_case_input(c, dt, 2, (const int64_t[]){48, 80});
  tsr_conf_case_input(c, dt, 2, (const int64_t[]){80, 40});
  tsr_conf_operand *bias = tsr_conf_case_input(c, dt, 2, (const int64_t[]){48, 40});
  bias->layout = TSR_CONF_BROADCAST;
  bias->broadcast_mask = 0x1;
  tsr_conf_case_output(c, dt, 2, (const int64_t[]){48, 40});
  if (case_declared(s, c)) return 0;
  tsr_conf_case_init(c, TSR_OP_BINARY, "concurrency", "add %s [4099]", tsr_oracle_dtype_name(dt));
  c->has_attrs = 1;
  c->attrs.binary = (tsr_binary_attrs){sizeof(tsr_binary_attrs), TSR_BINARY_ADD, 0, 1.0};
  tsr_conf_case_input(c, dt, 1, (const int64_t[]){4099});
  tsr_conf_case_input(c, dt, 1, (const int64_t[]){4099});
  tsr_conf_case_output(c, dt, 1, (const int64_t[]){4099});
  if (case_declared(s, c)) return 0;
  tsr_conf_case_init(c, TSR_OP_UNARY, "concurrency", "exp %s [4099]", tsr_oracle_dtype_name(dt));
  c->has_attrs = 1;
  c->attrs.unary = (tsr_unary_attrs){sizeof(tsr_unary_attrs), TSR_UNARY_EXP, 0, 0};
  tsr_conf_case_input(c, dt, 1, (const int64_t[]){4099});
  tsr_conf_case_output(c, dt, 1, (const int64_t[]){4099});
  if (case_declared(s, c)) return 0;
  for (int32_t op = 1; op < TSR_OP_COUNT; ++op) {
    for (tsr_dtype_t d = 0; d < TSR_DTYPE_COUNT; ++d) {
      if (!tsr_conf_op_accepts(op, d)) continue;
      tsr_conf_case_representative(op, d, c);
      if (case_declared(s, c)) return 0;
    }
  }
  return -1;
}
