// Thread-local last error. A message is formatted only on the error path.
#include "error.h"

#include <stdio.h>
#include <string.h>

#define TSR_ERROR_MESSAGE_BYTES 1024

static _Thread_local tsr_status tls_status = TSR_OK;
static _Thread_local char tls_message[TSR_ERROR_MESSAGE_BYTES];

tsr_status tsr_error_vset(tsr_status code, const char *format, va_list args) {
  tls_status = code;
  if (code == TSR_OK || format == NULL) {
    tls_message[0] = '\0';
    return code;
  }
  // Format aside first: callers often pass the current message as an
  // argument ("%s: %s", what, tsr_error_message()).
  char formatted[TSR_ERROR_MESSAGE_BYTES];
  vsnprintf(formatted, sizeof(formatted), format, args);
  memcpy(tls_message, formatted, sizeof(tls_message));
  return code;
}

tsr_status tsr_error_set(tsr_status code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  tsr_error_vset(code, format, args);
  va_end(args);
  return code;
}

tsr_status tsr_error_prefix(const char *prefix) {
  size_t p = strlen(prefix) + 2;  // "prefix: "
  size_t m = strlen(tls_message);
  if (p >= sizeof(tls_message)) return tls_status;
  if (m > sizeof(tls_message) - 1 - p) m = sizeof(tls_message) - 1 - p;
  memmove(tls_message + p, tls_message, m);
  tls_message[p + m] = '\0';
  memcpy(tls_message, prefix, p - 2);
  tls_message[p - 2] = ':';
  tls_message[p - 1] = ' ';
  return tls_status;
}

tsr_status tsr_error_status(void) { return tls_status; }

const char *tsr_error_message(void) { return tls_message; }

void tsr_error_clear(void) {
  tls_status = TSR_OK;
  tls_message[0] = '\0';
}

void tsr_error_save(tsr_error_saved *out_saved) {
  out_saved->status = tls_status;
  memcpy(out_saved->message, tls_message, sizeof(out_saved->message));
}

void tsr_error_restore(const tsr_error_saved *saved) {
  tls_status = saved->status;
  memcpy(tls_message, saved->message, sizeof(tls_message));
}
