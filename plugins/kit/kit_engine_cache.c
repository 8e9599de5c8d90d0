// Integer engine choices over the host's engine cache: the value is the
// choice in decimal, so a file a person reads says what was chosen.
#include <stdio.h>
#include <string.h>

#include "tessera/plugin_kit.h"

int tsr_kit_engine_choice_get(const tsr_host_api *host, const char *plugin_key,
                              const char *class_key, int32_t limit, int32_t *out_choice) {
  if (host == NULL || plugin_key == NULL || class_key == NULL || out_choice == NULL ||
      !TSR_ABI_HAS(host, tsr_host_api, engine_cache_get)) {
    return 0;
  }
  char value[16];
  size_t bytes = sizeof(value) - 1;
  if (host->engine_cache_get(host->ctx, plugin_key, class_key, value, &bytes) != TSR_OK ||
      bytes == 0 || bytes >= sizeof(value)) {
    return 0;
  }
  int64_t choice = 0;
  for (size_t i = 0; i < bytes; ++i) {
    if (value[i] < '0' || value[i] > '9') return 0;
    choice = choice * 10 + (value[i] - '0');
    if (choice >= limit) return 0;
  }
  *out_choice = (int32_t)choice;
  return 1;
}

void tsr_kit_engine_choice_put(const tsr_host_api *host, const char *plugin_key,
                               const char *class_key, int32_t choice) {
  if (host == NULL || plugin_key == NULL || class_key == NULL || choice < 0 ||
      !TSR_ABI_HAS(host, tsr_host_api, engine_cache_put)) {
    return;
  }
  char value[16];
  int n = snprintf(value, sizeof(value), "%d", (int)choice);
  if (n > 0 && (size_t)n < sizeof(value)) {
    (void)host->engine_cache_put(host->ctx, plugin_key, class_key, value, (size_t)n);
  }
}
