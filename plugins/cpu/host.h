// The host table the library runs under, and how it reports errors through it.
#ifndef TESSERA_PLUGINS_CPU_HOST_H_
#define TESSERA_PLUGINS_CPU_HOST_H_

#include "tessera/abi.h"

// Records |host| as the table every later library call uses. Called once by
// tsr_cpu_plugin_table_create before any other library function; not
// thread-safe with other library calls.
void tsr_cpu_host_set(const tsr_host_api *host);

// The host table given to tsr_cpu_plugin_table_create (owned by the core), or NULL
// before it. Thread-safe.
const tsr_host_api *tsr_cpu_host_get(void);

// Formats a message, attaches it to the calling thread's error through the
// host and returns |code|. Formats, so it belongs on error paths only.
// Thread-safe.
tsr_status tsr_cpu_error_set(tsr_status code, const char *format, ...) TSR_ABI_PRINTF(2, 3);

// Threads the host's pool runs parallel_for chunks on (at least 1).
// Thread-safe.
int32_t tsr_cpu_thread_count_get(void);

#endif  // TESSERA_PLUGINS_CPU_HOST_H_
