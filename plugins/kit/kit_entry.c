// The kit's entry checks, identity, messages, out-struct copies and names.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kit_internal.h"

static const tsr_host_api *g_host;
static const char *g_name = "plugin";

tsr_status tsr_kit_host_check(const char *name, const tsr_host_api *host, uint32_t needs) {
  // Without a usable host there is nowhere to send a message.
  if (host == NULL)
    return TSR_INVALID_ARGUMENT;
  if (host->struct_size < offsetof(tsr_host_api, abi_minor) + sizeof(uint32_t) ||
      host->abi_major != TSR_ABI_VERSION_MAJOR) {
    return TSR_ABI_MISMATCH;
  }
  if (!TSR_ABI_HAS(host, tsr_host_api, error_set))
    return TSR_INVALID_ARGUMENT;
  size_t need = (needs & TSR_KIT_HOST_THREADS) ? offsetof(tsr_host_api, thread_count) + sizeof(void *)
                                               : offsetof(tsr_host_api, mem_free) + sizeof(void *);
  if (host->struct_size < need) {
    return host->error_set(host->ctx, TSR_ABI_MISMATCH,
                           "%s: host table of %zu bytes lacks functions it needs (%zu bytes)", name,
                           host->struct_size, need);
  }
  if (host->mem_alloc == NULL || host->mem_free == NULL ||
      ((needs & TSR_KIT_HOST_THREADS) && (host->parallel_for == NULL || host->thread_count == NULL))) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "%s: host table has a NULL mem_alloc, mem_free%s", name,
                           (needs & TSR_KIT_HOST_THREADS) ? ", parallel_for or thread_count" : "");
  }
  return TSR_OK;
}

tsr_status tsr_kit_entry_begin(const char *name, const tsr_host_api *host) {
  if (name == NULL || name[0] == '\0')
    return TSR_INVALID_ARGUMENT;
  tsr_status status = tsr_kit_host_check(name, host, 0);
  if (status != TSR_OK)
    return status;
  g_host = host;
  g_name = name;
  return TSR_OK;
}

void tsr_kit_table_init(tsr_plugin_api *api, const char *version, const char *vendor,
                        const char *build_info) {
  memset(api, 0, sizeof(*api));
  api->struct_size = sizeof(*api);
  api->abi_major = TSR_ABI_VERSION_MAJOR;
  api->abi_minor = TSR_ABI_VERSION_MINOR;
  api->name = g_name;
  api->version = version;
  api->vendor = vendor;
  api->build_info = build_info;
}

const tsr_host_api *tsr_kit_host(void) { return g_host; }

const char *tsr_kit_name(void) { return g_name; }

tsr_status tsr_kit_error(tsr_status status, const char *format, ...) {
  char message[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(message, sizeof(message), format, ap);
  va_end(ap);
  if (g_host == NULL)
    return status;
  return g_host->error_set(g_host->ctx, status, "%s: %s", g_name, message);
}

void tsr_kit_log(tsr_log_level_t level, const char *format, ...) {
  if (g_host == NULL || g_host->log == NULL)
    return;
  char message[1024];
  int prefix = snprintf(message, sizeof(message), "%s: ", g_name);
  va_list ap;
  va_start(ap, format);
  vsnprintf(message + prefix, sizeof(message) - (size_t)prefix, format, ap);
  va_end(ap);
  g_host->log(g_host->ctx, level, message);
}

void tsr_kit_out_copy(void *out, const void *value, size_t value_size) {
  size_t out_size;
  memcpy(&out_size, out, sizeof(out_size));
  size_t n = out_size < value_size ? out_size : value_size;
  if (n > sizeof(size_t))
    memcpy((char *)out + sizeof(size_t), (const char *)value + sizeof(size_t), n - sizeof(size_t));
}

const char *tsr_kit_dtype_name(tsr_dtype_t dtype) {
  static const char *const names[] = {"float32", "float64", "bfloat16", "float16",
                                      "int32",   "int64",   "bool"};
  return dtype >= 0 && dtype < TSR_DTYPE_COUNT && (size_t)dtype < sizeof(names) / sizeof(names[0])
             ? names[dtype]
             : "unknown";
}

// The enum-valued attribute of |signature| (ops.h's selector), or -1.
static int64_t selector_value(const tsr_op_signature *signature, int *out_bias) {
  const void *at = signature->attrs;
  *out_bias = 0;
  switch (signature->op) {
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
      return KIT_ATTR(tsr_unary_attrs, at, fn, 0);
    case TSR_OP_BINARY:
      return KIT_ATTR(tsr_binary_attrs, at, fn, 0);
    case TSR_OP_COMPARE:
      return KIT_ATTR(tsr_compare_attrs, at, fn, 0);
    case TSR_OP_REDUCE:
      return KIT_ATTR(tsr_reduce_attrs, at, fn, 0);
    case TSR_OP_ARG_REDUCE:
      return KIT_ATTR(tsr_arg_reduce_attrs, at, fn, 0);
    case TSR_OP_MATMUL:
      *out_bias = KIT_ATTR(tsr_matmul_attrs, at, has_bias, 0) != 0;
      return KIT_ATTR(tsr_matmul_attrs, at, activation, TSR_ACTIVATION_NONE);
    case TSR_OP_CONV2D:
      *out_bias = KIT_ATTR(tsr_conv2d_attrs, at, has_bias, 0) != 0;
      return KIT_ATTR(tsr_conv2d_attrs, at, activation, TSR_ACTIVATION_NONE);
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
      return KIT_ATTR(tsr_pool2d_attrs, at, kind, 0);
    case TSR_OP_PAD:
      return KIT_ATTR(tsr_pad_attrs, at, mode, 0);
    case TSR_OP_RNG_FILL:
      return KIT_ATTR(tsr_rng_fill_attrs, at, distribution, 0);
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD:
      return KIT_ATTR(tsr_cross_entropy_attrs, at, reduction, TSR_REDUCTION_MEAN);
    default:
      return -1;
  }
}

uint64_t tsr_kit_selectors_of(const tsr_op_signature *signature, int *out_unknown) {
  if (out_unknown != NULL)
    *out_unknown = 0;
  int bias = 0;
  int64_t value = selector_value(signature, &bias);
  if (value < 0 && tsr_op_selector_count(signature->op) == 0)
    return 0;
  uint64_t mask = 0;
  // The epilogue's last value is the bias: an activation may not name it.
  int32_t values = tsr_op_selector_count(signature->op) -
                   (signature->op == TSR_OP_MATMUL || signature->op == TSR_OP_CONV2D);
  if (value >= 0 && value < values)
    mask |= TSR_KIT_SELECTOR(value);
  else if (out_unknown != NULL)
    *out_unknown = 1;
  if (bias)
    mask |= TSR_KIT_SELECTOR(TSR_ACTIVATION_COUNT);
  return mask;
}
