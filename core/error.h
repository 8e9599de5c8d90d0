// Errors as values: the calling thread's last error, and a context's sticky
// first error.
#ifndef TESSERA_CORE_ERROR_H_
#define TESSERA_CORE_ERROR_H_

#include <stdarg.h>

#include "tessera/abi.h"

// Records |code| with a printf-formatted message as this thread's last error
// and returns |code|. TSR_OK clears. Thread-safe (per thread).
tsr_status tsr_error_set(tsr_status code, const char *format, ...) TSR_ABI_PRINTF(2, 3);
tsr_status tsr_error_vset(tsr_status code, const char *format, va_list args);
// Prefixes this thread's current message with "<prefix>: ". Returns the status.
tsr_status tsr_error_prefix(const char *prefix);
// This thread's last status and message ("" when none). The message lives in
// thread-local storage until the thread's next error.
tsr_status tsr_error_status(void);
const char *tsr_error_message(void);
void tsr_error_clear(void);

// A copy of this thread's last error, so that work which succeeds after
// plugins reported their internal choices through the host ("6 elements are
// cheaper on the own kernel") leaves the caller's last error as it found it.
typedef struct tsr_error_saved {
  tsr_status status;
  char message[1024];
} tsr_error_saved;
void tsr_error_save(tsr_error_saved *out_saved);
void tsr_error_restore(const tsr_error_saved *saved);

#define TSR_RETURN_IF_ERROR(expr)      \
  do {                                 \
    tsr_status tsr_status_ = (expr);   \
    if (tsr_status_ != TSR_OK) return tsr_status_; \
  } while (0)

#endif  // TESSERA_CORE_ERROR_H_
