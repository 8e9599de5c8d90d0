// Error messages through the host, and oneDNN statuses mapped to Tessera's.
#include <stdarg.h>
#include <stdio.h>

#include "compat.h"
#include "onednn_plugin.h"

tsr_status tsr_onednn_error_set(tsr_status code, const char *format, ...) {
  const tsr_host_api *host = tsr_onednn_host_get();
  if (host == NULL)
    return code;
  // The host's error_set is variadic; format here once and pass the text.
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return host->error_set(host->ctx, code, "onednn: %s", message);
}

static const char *tsr_onednn_dnnl_status_name(dnnl_status_t status) {
  switch (status) {
    case dnnl_success:
      return "success";
    case dnnl_out_of_memory:
      return "out of memory";
    case dnnl_invalid_arguments:
      return "invalid arguments";
    case dnnl_unimplemented:
      return "unimplemented";
    case dnnl_runtime_error:
      return "runtime error";
    case dnnl_not_required:
      return "not required";
    default:
      return "unknown status";
  }
}

tsr_status tsr_onednn_check(dnnl_status_t status, const char *what) {
  if (status == dnnl_success)
    return TSR_OK;
  tsr_status code = TSR_INTERNAL;
  // oneDNN says "invalid arguments" for combinations it does not implement as
  // often as for real misuse; the plan layer validated the signature already,
  // so to Tessera both mean "not on oneDNN".
  if (status == dnnl_unimplemented || status == dnnl_invalid_arguments)
    code = TSR_UNSUPPORTED;
  if (status == dnnl_out_of_memory)
    code = TSR_OUT_OF_MEMORY;
  return tsr_onednn_error_set(code, "%s: oneDNN %s (%d)", what, tsr_onednn_dnnl_status_name(status),
                              (int)status);
}
