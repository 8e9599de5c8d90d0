// Loading the plugin under test the way docs/abi.md 3.2 says the core does:
// dlopen with RTLD_NOW | RTLD_LOCAL, the one entry symbol, table checks,
// init, probe, devices.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

const char *tsr_conf_status_name(tsr_status status) {
  switch (status) {
    case TSR_OK: return "OK";
    case TSR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case TSR_UNSUPPORTED: return "UNSUPPORTED";
    case TSR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case TSR_UNAVAILABLE: return "UNAVAILABLE";
    case TSR_DEVICE_LOST: return "DEVICE_LOST";
    case TSR_NOT_FOUND: return "NOT_FOUND";
    case TSR_ABI_MISMATCH: return "ABI_MISMATCH";
    case TSR_INTERNAL: return "INTERNAL";
    case TSR_NOT_READY: return "NOT_READY";
    default: return "an unknown status";
  }
}

static tsr_conf_open_t open_fail(tsr_conf_session *s, tsr_conf_open_t code, const char *format,
                                 const char *a, const char *b) {
  snprintf(s->message, sizeof(s->message), format, a ? a : "", b ? b : "");
  return code;
}

// The entries docs/abi.md section 7 requires.
static const char *missing_required(const tsr_plugin_api *api) {
#define REQUIRE(field) \
  if (api->field == NULL) return #field;
  REQUIRE(probe)
  REQUIRE(device_count_get)
  REQUIRE(device_props_get)
  REQUIRE(buffer_alloc)
  REQUIRE(buffer_free)
  REQUIRE(copy_host_to_device)
  REQUIRE(copy_device_to_host)
  REQUIRE(copy_device_to_device)
  REQUIRE(stream_create)
  REQUIRE(stream_destroy)
  REQUIRE(stream_synchronize)
#undef REQUIRE
  return NULL;
}

tsr_conf_open_t tsr_conf_session_open(tsr_conf_session *s, const char *path, int32_t device,
                                      const tsr_host_api *host) {
  void *library = s->library;
  int full = s->full, verbose = s->verbose;
  uint64_t seed = s->seed;
  memset(s, 0, sizeof(*s));
  s->full = full;
  s->verbose = verbose;
  s->seed = seed;
  s->path = path;
  s->device = device;
  s->host = host;
  if (library == NULL) {
    // A bare name is the file in the current folder, as the user typed it:
    // dlopen would otherwise search the library path for it and could
    // certify another file of that name.
    char local[4096];
    const char *file = path;
    if (strchr(path, '/') == NULL && strlen(path) + 3 <= sizeof(local)) {
      snprintf(local, sizeof(local), "./%s", path);
      file = local;
    }
    library = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
      const char *error = dlerror();
      return open_fail(s, TSR_CONF_NOT_LOADED, "dlopen failed: %s%s", error, NULL);
    }
  }
  s->library = library;
  void *symbol = dlsym(library, TSR_PLUGIN_ENTRY_NAME);
  if (symbol == NULL) {
    return open_fail(s, TSR_CONF_NOT_LOADED, "not a Tessera plugin: no %s symbol%s",
                     TSR_PLUGIN_ENTRY_NAME, NULL);
  }
  memcpy(&s->entry, &symbol, sizeof(s->entry));
  const tsr_plugin_api *table = NULL;
  tsr_conf_host_message_clear();
  tsr_status status = s->entry(host, &table);
  if (status != TSR_OK || table == NULL) {
    char code[64];
    snprintf(code, sizeof(code), "%s", status == TSR_OK ? "OK but no table" : tsr_conf_status_name(status));
    return open_fail(s, TSR_CONF_NOT_LOADED, "the entry returned %s: %s", code,
                     tsr_conf_host_message());
  }
  s->table = table;
  if (table->struct_size < offsetof(tsr_plugin_api, name) + sizeof(table->name)) {
    return open_fail(s, TSR_CONF_NOT_LOADED, "the plugin table's struct_size is too small to hold its name%s%s",
                     NULL, NULL);
  }
  if (table->abi_major != TSR_ABI_VERSION_MAJOR) {
    char text[128];
    snprintf(text, sizeof(text), "ABI mismatch: plugin built against %u.%u, suite is %d.%d",
             table->abi_major, table->abi_minor, TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR);
    return open_fail(s, TSR_CONF_NOT_LOADED, "%s%s", text, NULL);
  }
  memset(&s->api, 0, sizeof(s->api));
  memcpy(&s->api, table, table->struct_size < sizeof(s->api) ? table->struct_size : sizeof(s->api));
  const char *missing = missing_required(&s->api);
  if (missing != NULL) {
    return open_fail(s, TSR_CONF_NOT_LOADED, "the plugin table lacks the required entry '%s'%s",
                     missing, NULL);
  }
  if (s->api.init != NULL) {
    tsr_conf_host_message_clear();
    status = s->api.init();
    if (status != TSR_OK) {
      return open_fail(s, TSR_CONF_NOT_LOADED, "init failed: %s%s", tsr_conf_host_message(), NULL);
    }
  }
  tsr_conf_host_message_clear();
  status = s->api.probe();
  if (status != TSR_OK) {
    char text[900];
    snprintf(text, sizeof(text), "probe returned %s: %s", tsr_conf_status_name(status),
             tsr_conf_host_message());
    if (s->api.shutdown != NULL) s->api.shutdown();
    return open_fail(s, TSR_CONF_UNAVAILABLE, "%s%s", text, NULL);
  }
  s->started = 1;
  int32_t count = 0;
  status = s->api.device_count_get(&count);
  if (status != TSR_OK || count < 0 || count > 64) {
    tsr_conf_session_close(s);
    return open_fail(s, TSR_CONF_NOT_LOADED, "device_count_get failed or gave a count outside [0, 64]%s%s",
                     NULL, NULL);
  }
  s->device_count = count;
  if (device < 0 || device >= count) {
    char text[128];
    snprintf(text, sizeof(text), "device %d does not exist (the plugin has %d)", (int)device, (int)count);
    tsr_conf_session_close(s);
    return open_fail(s, TSR_CONF_NO_DEVICE, "%s%s", text, NULL);
  }
  memset(&s->props, 0, sizeof(s->props));
  s->props.struct_size = sizeof(s->props);
  status = s->api.device_props_get(device, &s->props);
  if (status != TSR_OK) {
    tsr_conf_session_close(s);
    return open_fail(s, TSR_CONF_NOT_LOADED, "device_props_get failed: %s%s", tsr_conf_host_message(), NULL);
  }
  s->props.struct_size = sizeof(s->props);
  s->has_kernels = s->api.op_supports != NULL && s->api.plan_create != NULL &&
                   s->api.plan_info_get != NULL && s->api.plan_execute != NULL &&
                   s->api.plan_destroy != NULL;
  status = s->api.stream_create(device, 0, &s->stream);
  if (status != TSR_OK || s->stream == NULL) {
    char text[900];
    snprintf(text, sizeof(text), "stream_create on device %d failed: %s", (int)device, tsr_conf_host_message());
    s->stream = NULL;
    tsr_conf_session_close(s);
    return open_fail(s, TSR_CONF_NOT_LOADED, "%s%s", text, NULL);
  }
  return TSR_CONF_OPENED;
}

tsr_status tsr_conf_session_close(tsr_conf_session *s) {
  if (!s->started) return TSR_OK;
  if (s->stream != NULL) {
    s->api.stream_synchronize(s->stream);
    s->api.stream_destroy(s->stream);
    s->stream = NULL;
  }
  s->started = 0;
  if (s->api.shutdown != NULL) return s->api.shutdown();
  return TSR_OK;
}
