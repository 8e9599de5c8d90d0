// Failing an SDK function that returns a tensor. Not installed.
#ifndef TESSERA_SDK_SDK_ERRORS_H_
#define TESSERA_SDK_SDK_ERRORS_H_

#include "tessera/core_layer.h"
#include "tessera/tessera.h"

// Sets this thread's error and |device|'s context's sticky error to the
// printf-formatted message, and returns NULL. Thread-safe.
tsr_tensor *tsr_sdk_fail(const tsr_device *device, tsr_status status, const char *format, ...)
    TSR_ABI_PRINTF(3, 4);

// The status of the failure a NULL result of an SDK call reported
// (TSR_INTERNAL if none was recorded).
tsr_status tsr_sdk_last_status(void);

#endif  // TESSERA_SDK_SDK_ERRORS_H_
