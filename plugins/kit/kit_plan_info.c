// plan_info_get's validation and clamped copy, the same in every plugin.
#include "tessera/plugin_kit.h"

tsr_status tsr_kit_plan_info_answer(const tsr_host_api *host, const tsr_plan_info *info,
                                    tsr_plan_info *out_info) {
  if (out_info == NULL || out_info->struct_size < sizeof(size_t)) {
    if (host == NULL || host->error_set == NULL)
      return TSR_INVALID_ARGUMENT;
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "plan_info_get: out_info is NULL or its struct_size is too small");
  }
  tsr_plan_info copy = *info;
  copy.struct_size = out_info->struct_size;
  TSR_KIT_OUT_COPY(out_info, copy);
  return TSR_OK;
}
