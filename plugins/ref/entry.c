// The ref plugin: Tessera's portable CPU device, always built, the core's
// fallback for missing ops and the full-catalogue reference. Its kernels,
// allocator, streams and events are the CPU-kernel library's (plugins/cpu,
// tsr_cpu/cpu_kernels.h); what is ref's own is how it presents them: the
// name the core looks for ("ref"), its device's name and its priority. The
// one symbol libtessera-ref.so exports is the entry.
#include "tessera/abi.h"
#include "tsr_cpu/cpu_kernels.h"

// The library's table under ref's name. Written by the entry, before the
// core calls anything else; read-only afterwards.
static tsr_plugin_api g_ref_api;

TSR_ABI_EXPORT tsr_status tsr_plugin_entry(const tsr_host_api *host,
                                           const tsr_plugin_api **out_api);

// tsr_cpu_plugin_table_create checks the host table (non-NULL, abi_major,
// struct_size covering every entry the library calls).
tsr_status tsr_plugin_entry(const tsr_host_api *host, const tsr_plugin_api **out_api) {
  if (out_api != NULL)
    *out_api = NULL;
  const tsr_plugin_api *cpu = NULL;
  tsr_status status = tsr_cpu_plugin_table_create(host, &cpu);
  if (status != TSR_OK)
    return status;
  if (out_api == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "ref: out_api is NULL");
  tsr_cpu_device_identity_set("Tessera reference CPU", TSR_DEVICE_PRIORITY_REFERENCE);
  g_ref_api = *cpu;
  g_ref_api.struct_size = sizeof(g_ref_api);
  g_ref_api.name = "ref";
  g_ref_api.version = "0.1.0";
  g_ref_api.vendor = "Tessera";
  *out_api = &g_ref_api;
  return TSR_OK;
}
