// The persistent engine cache as an application sees it: where plugins keep
// the engines they measured best on this machine, and how many decisions it
// holds (docs/performance.md, "The engine cache"). Plugins use the cache
// through the host table (docs/abi.md 6.2); nothing here changes it.
#ifndef TESSERA_ENGINE_CACHE_H_
#define TESSERA_ENGINE_CACHE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_engine_cache_info {
  size_t struct_size;  // set by the caller
  // The cache's folder, or NULL when the cache is off. Thread-local storage,
  // valid until this thread's next tsr_engine_cache_info_get.
  const char *folder;
  // Why the cache is off ("TSR_ENGINE_CACHE=0", ...); static text. NULL when on.
  const char *off_reason;
  int64_t decisions;  // held by |files|
  int32_t files;      // the plugin's files made for this machine and thread count
  uint32_t reserved;
} tsr_engine_cache_info;

// Describes the engine cache as plugins of |context| use it: for the plugin
// named |plugin_name| (as in tsr_plugin_info.name), or every plugin when it
// is NULL. Only files made on this CPU, CPU set and the context's thread
// count are counted. Reads the folder; not for hot paths. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_engine_cache_info_get(const tsr_context *context,
                                                          const char *plugin_name,
                                                          tsr_engine_cache_info *out_info);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_ENGINE_CACHE_H_
