// Failing an SDK function that returns a tensor (sdk_errors.h).
#include "sdk_errors.h"

#include <stdarg.h>
#include <stdio.h>

#include "tessera/core_layer.h"

tsr_tensor *tsr_sdk_fail(const tsr_device *device, tsr_status status, const char *format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  tsr_fail(device, status, "%s", message);
  return NULL;
}

tsr_status tsr_sdk_last_status(void) {
  tsr_status status = tsr_error_status();
  return status != TSR_OK ? status : TSR_INTERNAL;
}
