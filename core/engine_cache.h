// The persistent engine cache: the engine a plugin measured best for a class
// of calls, kept from one process to the next (docs/abi.md 6.2; the host
// table's engine_cache_get and engine_cache_put land here).
//
// One table per (plugin, plugin key, machine key), read lazily from its file
// on first use and then held in memory; a put updates the table and rewrites
// the file. The machine key is the CPU (model and ISA flags from
// /proc/cpuinfo, else cpuid), the thread count the plugin runs with and the
// process's CPU set, so a file from another machine, thread count or library
// version is never read. Files live in TSR_ENGINE_CACHE_DIR, else
// $XDG_CACHE_HOME/tessera/engines, else ~/.cache/tessera/engines, named
// "<plugin>-<16 hex digits of the keys' hash>.engines"; TSR_ENGINE_CACHE=0
// turns the cache off. A file is written to a temporary file in the same
// folder, synced and renamed, under an flock on the folder's ".lock" file,
// after merging what another process wrote meanwhile. A file that cannot be
// read back whole and valid is ignored and rebuilt by the next put.
//
// Not for hot paths: a mutex guards the tables, and a put writes a file.
#ifndef TESSERA_CORE_ENGINE_CACHE_H_
#define TESSERA_CORE_ENGINE_CACHE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"

// The host table's engine_cache_get for the plugin |api| running with
// |threads| threads (docs/abi.md 6.2). Errors are this thread's error.
// Thread-safe.
tsr_status tsr_engine_cache_get(const tsr_plugin_api *api, int32_t threads, const char *plugin_key,
                                const char *class_key, void *out_value, size_t *inout_bytes);

// The host table's engine_cache_put (docs/abi.md 6.2). Thread-safe.
tsr_status tsr_engine_cache_put(const tsr_plugin_api *api, int32_t threads, const char *plugin_key,
                                const char *class_key, const void *value, size_t bytes);

// What tsr_engine_cache_info_get (tessera/engine_cache.h) reports for
// |plugin_name| (NULL: every plugin) and |threads|: the folder (copied into
// |folder|, |folder_size| bytes; "" when off), why the cache is off (static
// text, NULL when on), and the files made on this machine with |threads|
// threads and the decisions they hold. Reads the folder. Thread-safe.
void tsr_engine_cache_census(const char *plugin_name, int32_t threads, char *folder,
                             size_t folder_size, const char **out_off_reason, int32_t *out_files,
                             int64_t *out_decisions);

// The machine key for |threads| threads into |out| (|size| bytes). 0 when it
// does not fit. Thread-safe.
int tsr_engine_cache_machine_key(int32_t threads, char *out, size_t size);

// Frees every table held in memory and forgets the settings: the next call
// reads the environment and the files again, as a new process would. For
// tests. Thread-safe, but not while another thread is inside a call here.
void tsr_engine_cache_state_destroy(void);

#endif  // TESSERA_CORE_ENGINE_CACHE_H_
