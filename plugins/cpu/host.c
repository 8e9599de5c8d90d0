// The host table ref runs under.
#include "host.h"

#include <stdarg.h>
#include <stdio.h>

// Written once by tsr_cpu_plugin_table_create before the table is handed out, so
// every later reader sees it through the happens-before of that hand-out.
static const tsr_host_api *g_host;

void tsr_cpu_host_set(const tsr_host_api *host) { g_host = host; }

const tsr_host_api *tsr_cpu_host_get(void) { return g_host; }

tsr_status tsr_cpu_error_set(tsr_status code, const char *format, ...) {
  // error_set is variadic, so a va_list cannot be forwarded: format here and
  // hand over the finished text.
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  if (g_host == NULL) return code;
  return g_host->error_set(g_host->ctx, code, "%s", message);
}

int32_t tsr_cpu_thread_count_get(void) {
  if (g_host == NULL) return 1;
  int32_t count = g_host->thread_count(g_host->ctx);
  return count < 1 ? 1 : count;
}
