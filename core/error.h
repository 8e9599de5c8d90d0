// Errors as values: the calling thread's last error, and a context's sticky
// first error.
#ifndef TESSERA_CORE_ERROR_H_
#define TESSERA_CORE_ERROR_H_

#include "tessera/abi.h"
// tsr_error_set, tsr_error_prefix, tsr_error_status, tsr_error_message,
// tsr_error_clear and TSR_RETURN_IF_ERROR, which the SDK uses too.
#include "tessera/core_layer.h"

// A copy of this thread's last error, so that work which succeeds after
// plugins reported their internal choices through the host ("6 elements are
// cheaper on the own kernel") leaves the caller's last error as it found it.
typedef struct tsr_error_saved {
  tsr_status status;
  char message[1024];
} tsr_error_saved;
void tsr_error_save(tsr_error_saved *out_saved);
void tsr_error_restore(const tsr_error_saved *saved);

#endif  // TESSERA_CORE_ERROR_H_
