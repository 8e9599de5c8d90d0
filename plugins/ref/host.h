// The host table ref runs under, and how ref reports errors through it.
#ifndef TESSERA_PLUGINS_REF_HOST_H_
#define TESSERA_PLUGINS_REF_HOST_H_

#include "tessera/abi.h"

// Records |host| as the table every later ref call uses. Called once by
// tsr_ref_plugin_create before any other ref function; not thread-safe with
// other ref calls.
void tsr_ref_host_set(const tsr_host_api *host);

// The host table given to tsr_ref_plugin_create (owned by the core), or NULL
// before it. Thread-safe.
const tsr_host_api *tsr_ref_host_get(void);

// Formats a message, attaches it to the calling thread's error through the
// host and returns |code|. Formats, so it belongs on error paths only.
// Thread-safe.
tsr_status tsr_ref_error_set(tsr_status code, const char *format, ...) TSR_ABI_PRINTF(2, 3);

// Threads the host's pool runs parallel_for chunks on (at least 1).
// Thread-safe.
int32_t tsr_ref_thread_count_get(void);

#endif  // TESSERA_PLUGINS_REF_HOST_H_
