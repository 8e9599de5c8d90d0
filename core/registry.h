// Loaded plugins: process-wide, shared by the contexts that find the same
// shared object (reference-counted by them), and the process thread pool.
#ifndef TESSERA_CORE_REGISTRY_H_
#define TESSERA_CORE_REGISTRY_H_

#include <stdint.h>

#include "common.h"

#define TSR_MAX_PLUGINS 32

typedef struct tsr_plugin tsr_plugin;

struct tsr_plugin {
  char *path;                    // realpath of the shared object
  void *dl_handle;               // never dlclosed once its entry ran
  // The descriptor it was checked and loaded through (/proc/self/fd/N),
  // kept open while it is loaded so that no other library gets that name
  // (dlopen matches a loaded library by name first); -1 when loaded by path.
  int fd;
  const tsr_plugin_api *api;
  tsr_host_api host;             // host.ctx points back at this record
  int32_t context_refs;          // contexts using it; guarded by the registry lock
  int32_t device_count;          // as the plugin reported at start
};


// --- registry.c: the process-wide plugin and device tables --------------

// Loads (or reuses) the plugin at |path| for |context|; on rejection returns
// the status with the reason as this thread's error. Thread-safe.
tsr_status tsr_registry_plugin_acquire(tsr_context *context, const char *path,
                                       tsr_plugin **out_plugin);
// Drops |context|'s use of |plugin|; the last user shuts it down. Thread-safe.
void tsr_registry_plugin_release(tsr_plugin *plugin);
// The process thread pool (created with the first context). Thread-safe.
struct tsr_thread_pool *tsr_registry_thread_pool(void);
tsr_status tsr_registry_thread_pool_acquire(int32_t num_threads);
void tsr_registry_thread_pool_release(void);

#endif  // TESSERA_CORE_REGISTRY_H_
