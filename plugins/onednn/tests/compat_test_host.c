// The host errors.c reports through, for tests that link compat without the
// plugin: messages go to stderr so a failing test shows them.
#include <stdarg.h>
#include <stdio.h>

#include "onednn_plugin.h"

static tsr_status tsr_compat_test_error_set(void *ctx, tsr_status code, const char *format, ...) {
  (void)ctx;
  va_list args;
  va_start(args, format);
  fprintf(stderr, "[error %d] ", (int)code);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  return code;
}

static const tsr_host_api k_test_host = {
    .struct_size = sizeof(tsr_host_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .error_set = tsr_compat_test_error_set,
};

const tsr_host_api *tsr_onednn_host_get(void) {
  return &k_test_host;
}
