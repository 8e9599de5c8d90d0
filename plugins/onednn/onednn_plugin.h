// The oneDNN plugin's process-wide state: the host, oneDNN's engine, the
// thread runtime, and the streams of the calling threads.
#ifndef TESSERA_PLUGINS_ONEDNN_ONEDNN_PLUGIN_H_
#define TESSERA_PLUGINS_ONEDNN_ONEDNN_PLUGIN_H_

#include <oneapi/dnnl/dnnl.h>

#include "tessera/abi.h"

// Records the core's host table; called once by the entry. Not thread-safe.
void tsr_onednn_host_set(const tsr_host_api *host);
// The core's host table (NULL before the entry ran). Thread-safe.
const tsr_host_api *tsr_onednn_host_get(void);

// The host table the plugin's own kernels (ref's code) run under: the core's,
// with parallel_for and thread_count on OpenMP. Static storage. Thread-safe
// after tsr_onednn_host_set.
const tsr_host_api *tsr_onednn_kernel_host_get(void);

// OpenMP-backed parallel_for with the chunking rule of docs/abi.md 6.1;
// offered to the core as the process's runtime (tsr_plugin_api.parallel_for).
// Thread-safe; a nested or contended call runs inline.
tsr_status tsr_onednn_parallel_for(int64_t count, int64_t grain, tsr_parallel_fn fn, void *arg);
// OpenMP's thread count, fixed when the plugin starts. Thread-safe.
int32_t tsr_onednn_thread_count_get(void);
// Reads the thread count once (OpenMP's max threads). Called by init.
void tsr_onednn_threads_init(void);

// The CPU engine, created by init; NULL before. Thread-safe.
dnnl_engine_t tsr_onednn_engine_get(void);
// A oneDNN stream for the calling thread, made on its first use and destroyed
// when the thread exits (in-order streams are not thread-safe, so each thread
// has its own). Thread-safe.
tsr_status tsr_onednn_thread_stream_get(dnnl_stream_t *out_stream);

#endif  // TESSERA_PLUGINS_ONEDNN_ONEDNN_PLUGIN_H_
