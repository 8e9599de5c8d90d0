// The one symbol libtessera-ref.so exports. tsr_ref_plugin_create checks the
// host table (non-NULL, abi_major, struct_size covering every entry ref
// calls) so that a fixture linking ref's objects gets the same checks.
#include "ref_plugin.h"

TSR_ABI_EXPORT tsr_status tsr_plugin_entry(const tsr_host_api *host,
                                           const tsr_plugin_api **out_api);

tsr_status tsr_plugin_entry(const tsr_host_api *host, const tsr_plugin_api **out_api) {
  return tsr_ref_plugin_create(host, out_api);
}
