// The reference plugin's table, reachable without the exported entry.
//
// tsr_ref_objects (an OBJECT library) holds all of ref except entry.c, so a
// fixture plugin can link ref's objects into its own .so and wrap ref's table.
#ifndef TESSERA_PLUGINS_REF_REF_PLUGIN_H_
#define TESSERA_PLUGINS_REF_REF_PLUGIN_H_

#include "tessera/abi.h"

// Stores |host| (which must outlive every use of the table) and writes ref's
// static table to |out_api|; the table is owned by ref and valid until the
// library is unloaded. Checks |host| (non-NULL, abi_major, struct_size) and
// returns TSR_ABI_MISMATCH or TSR_INVALID_ARGUMENT when it does not fit.
// Called once per load, before any other ref function; every function of the
// returned table may then be called from any thread.
__attribute__((visibility("hidden"))) tsr_status tsr_ref_plugin_create(
    const tsr_host_api *host, const tsr_plugin_api **out_api);

#endif  // TESSERA_PLUGINS_REF_REF_PLUGIN_H_
