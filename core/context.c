// Contexts: discovery, device choice, policies and the sticky first error.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"
#include "error.h"
#include "log.h"
#include "context.h"
#include "device.h"
#include "dispatch.h"
#include "registry.h"
#include "stream.h"
#include "tensor.h"
#include "thread_pool.h"
#include "trace.h"

#define TSR_STR2(x) #x
#define TSR_STR(x) TSR_STR2(x)

const char *tsr_version(void) {
  return TSR_STR(TSR_VERSION_MAJOR) "." TSR_STR(TSR_VERSION_MINOR) "." TSR_STR(TSR_VERSION_PATCH);
}

const char *tsr_last_error(void) { return tsr_error_message(); }
tsr_status tsr_last_status(void) { return tsr_error_status(); }
void tsr_last_error_clear(void) { tsr_error_clear(); }

const char *tsr_status_name(tsr_status status) {
  static const char *names[TSR_STATUS_COUNT] = {
      "ok",        "invalid argument", "unsupported",  "out of memory", "unavailable",
      "device lost", "not found",      "ABI mismatch", "internal",      "not ready"};
  return status >= 0 && status < TSR_STATUS_COUNT ? names[status] : "unknown status";
}

tsr_status tsr_context_fail(tsr_context *context, tsr_status status) {
  if (context == NULL || status == TSR_OK || status == TSR_NOT_READY) return status;
  int expected = TSR_OK;
  if (atomic_load_explicit(&context->error_status, memory_order_relaxed) != TSR_OK) return status;
  pthread_mutex_lock(&context->error_lock);
  if (atomic_compare_exchange_strong(&context->error_status, &expected, status)) {
    snprintf(context->error_message, sizeof(context->error_message), "%s", tsr_error_message());
  }
  pthread_mutex_unlock(&context->error_lock);
  return status;
}

tsr_status tsr_fail(const tsr_device *device, tsr_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  char message[1024];
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  tsr_error_set(status, "%s", message);
  return tsr_context_fail(device ? device->owner : NULL, status);
}

void tsr_context_options_init(tsr_context_options *options) {
  if (options == NULL) return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->fallback = TSR_FALLBACK_DEFAULT;
}

static tsr_fallback_policy_t policy_from_env(void) {
  const char *env = getenv("TSR_FALLBACK");
  if (env == NULL || env[0] == '\0') return TSR_FALLBACK_WARN;
  if (strcasecmp(env, "allow") == 0) return TSR_FALLBACK_ALLOW;
  if (strcasecmp(env, "deny") == 0) return TSR_FALLBACK_DENY;
  if (strcasecmp(env, "warn") != 0) {
    tsr_log(TSR_LOG_WARNING, "TSR_FALLBACK=%s is not allow|warn|deny; using warn", env);
  }
  return TSR_FALLBACK_WARN;
}

// Preference when nothing is asked for: the fastest kind of device first.
// The device whose plugin reports the highest priority (abi.h, 0.4); the
// first found among equals. A plugin built before 0.4 leaves 0 there.
static tsr_device *best_device(const tsr_context *context) {
  tsr_device *best = NULL;
  for (int32_t i = 0; i < context->device_count; ++i) {
    tsr_device *d = context->devices[i];
    if (best == NULL || d->props.priority > best->props.priority) best = d;
  }
  return best;
}

tsr_status tsr_context_create(const tsr_context_options *options, tsr_context **out_context) {
  if (out_context == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "context_create: out_context is NULL");
  }
  *out_context = NULL;
  tsr_context_options opts;
  tsr_context_options_init(&opts);
  if (options != NULL) {
    if (options->struct_size < offsetof(tsr_context_options, device) ||
        options->struct_size > 4096) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "context_create: options.struct_size %zu is wrong",
                           options->struct_size);
    }
    size_t n = options->struct_size < sizeof(opts) ? options->struct_size : sizeof(opts);
    memcpy(&opts, options, n);
    opts.struct_size = sizeof(opts);
  }
  if (opts.fallback < TSR_FALLBACK_DEFAULT || opts.fallback > TSR_FALLBACK_DENY) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "context_create: fallback policy %d is unknown",
                         opts.fallback);
  }
  tsr_trace_init();
  tsr_context *context = calloc(1, sizeof(*context));
  if (context == NULL) return tsr_error_set(TSR_OUT_OF_MEMORY, "context_create: no memory");
  pthread_mutex_init(&context->error_lock, NULL);
  atomic_init(&context->error_status, TSR_OK);
  atomic_init(&context->rng_seed, 0);
  atomic_init(&context->rng_offset, 0);
  atomic_init(&context->deterministic, tsr_env_flag("TSR_DETERMINISTIC", 0));
  atomic_init(&context->fallback_policy,
              opts.fallback == TSR_FALLBACK_DEFAULT ? policy_from_env() : opts.fallback);
  tsr_status status = tsr_registry_thread_pool_acquire(opts.num_threads);
  if (status != TSR_OK) {
    pthread_mutex_destroy(&context->error_lock);
    free(context);
    return status;
  }
  tsr_discovery_run(context, &opts);

  const char *wanted = opts.device ? opts.device : getenv("TSR_DEVICE");
  tsr_device *chosen = NULL;
  if (wanted != NULL && wanted[0] != '\0') {
    chosen = tsr_context_device_find(context, wanted);
    if (chosen == NULL) {
      status = tsr_error_set(TSR_NOT_FOUND, "context_create: device '%s' was not found (%d devices"
                             " loaded, %d plugin candidates rejected; tsr-info lists them)",
                             wanted, context->device_count, context->rejected_count);
    }
  } else {
    chosen = best_device(context);
    if (chosen == NULL) {
      status = tsr_error_set(TSR_NOT_FOUND,
                             "context_create: no device found (%d plugin candidates rejected%s%s)",
                             context->rejected_count, context->rejected_count ? "; first: " : "",
                             context->rejected_count ? context->rejected[0].reason : "");
    }
  }
  if (status != TSR_OK) {
    char message[1024];
    snprintf(message, sizeof(message), "%s", tsr_error_message());
    tsr_context_destroy(context);
    return tsr_error_set(status, "%s", message);
  }
  atomic_init(&context->default_device, chosen);
  tsr_log(TSR_LOG_INFO, "default device %s (%s)", chosen->name,
          chosen->props.name ? chosen->props.name : "");
  *out_context = context;
  return TSR_OK;
}

void tsr_context_destroy(tsr_context *context) {
  if (context == NULL) return;
  for (int32_t i = 0; i < context->device_count; ++i) {
    tsr_device *d = context->devices[i];
    if (tsr_trace_enabled() && TSR_ABI_HAS(d->plugin->api, tsr_plugin_api, allocator_stats_get)) {
      tsr_allocator_stats stats = {.struct_size = sizeof(stats)};
      if (d->plugin->api->allocator_stats_get(d->index, &stats) == TSR_OK) {
        tsr_trace_memory(d->name, &stats);
      }
    }
    d->plugin->api->stream_synchronize(d->default_stream->handle);
  }
  tsr_tensor_free_lists_trim();
  // Devices are retired, not freed: tensors the application still holds
  // point at them (tsr_device_retire).
  for (int32_t i = 0; i < context->device_count; ++i) tsr_device_retire(context->devices[i]);
  for (int32_t i = context->plugin_count - 1; i >= 0; --i) {
    tsr_registry_plugin_release(context->plugins[i]);
  }
  for (int32_t i = 0; i < context->rejected_count; ++i) {
    free(context->rejected[i].path);
    free(context->rejected[i].real);
    free(context->rejected[i].reason);
  }
  free(context->rejected);
  tsr_registry_thread_pool_release();
  pthread_mutex_destroy(&context->error_lock);
  free(context);
}

tsr_status tsr_context_status(const tsr_context *context) {
  if (context == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "context_status: context is NULL");
  return atomic_load(&((tsr_context *)context)->error_status);
}

const char *tsr_context_error_message(const tsr_context *context) {
  return context ? context->error_message : "context is NULL";
}

void tsr_context_error_clear(tsr_context *context) {
  if (context == NULL) return;
  pthread_mutex_lock(&context->error_lock);
  atomic_store(&context->error_status, TSR_OK);
  context->error_message[0] = '\0';
  pthread_mutex_unlock(&context->error_lock);
}

int32_t tsr_context_thread_count(const tsr_context *context) {
  (void)context;
  tsr_thread_pool *pool = tsr_registry_thread_pool();
  return pool ? tsr_thread_pool_thread_count(pool) : 1;
}

tsr_device *tsr_context_ref_device(const tsr_context *context) {
  for (int32_t i = 0; context != NULL && i < context->device_count; ++i) {
    tsr_device *d = context->devices[i];
    if (strcmp(d->plugin->api->name, "ref") == 0) return d;
  }
  return NULL;
}

int32_t tsr_context_plugin_count(const tsr_context *context) {
  return context ? context->plugin_count : 0;
}

tsr_status tsr_context_plugin_info_get(const tsr_context *context, int32_t index,
                                       tsr_plugin_info *out_info) {
  if (context == NULL || out_info == NULL || out_info->struct_size < sizeof(*out_info)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "plugin_info_get: NULL argument or small struct");
  }
  if (index < 0 || index >= context->plugin_count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "plugin_info_get: index %d outside [0, %d)", index,
                         context->plugin_count);
  }
  const tsr_plugin *p = context->plugins[index];
  const tsr_plugin_api *api = p->api;
  out_info->name = api->name;
  out_info->version = api->version ? api->version : "";
  out_info->vendor = api->vendor ? api->vendor : "";
  out_info->build_info = api->build_info ? api->build_info : "";
  out_info->path = p->path;
  out_info->abi_major = api->abi_major;
  out_info->abi_minor = api->abi_minor;
  out_info->device_count = p->device_count;
  return TSR_OK;
}

int32_t tsr_context_rejected_count(const tsr_context *context) {
  return context ? context->rejected_count : 0;
}

tsr_status tsr_context_rejected_get(const tsr_context *context, int32_t index,
                                    tsr_rejected_plugin *out_rejected) {
  if (context == NULL || out_rejected == NULL || out_rejected->struct_size < sizeof(*out_rejected)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "rejected_get: NULL argument or small struct");
  }
  if (index < 0 || index >= context->rejected_count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "rejected_get: index %d outside [0, %d)", index,
                         context->rejected_count);
  }
  out_rejected->path = context->rejected[index].path;
  out_rejected->reason = context->rejected[index].reason;
  out_rejected->status = context->rejected[index].status;
  return TSR_OK;
}

int32_t tsr_context_device_count(const tsr_context *context) {
  return context ? context->device_count : 0;
}

tsr_device *tsr_context_device_get(const tsr_context *context, int32_t index) {
  if (context == NULL || index < 0 || index >= context->device_count) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "device_get: index %d outside [0, %d)", index,
                  context ? context->device_count : 0);
    return NULL;
  }
  return context->devices[index];
}

tsr_device *tsr_context_device_find(const tsr_context *context, const char *name) {
  if (context == NULL || name == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "device_find: %s is NULL", context ? "name" : "context");
    return NULL;
  }
  for (int32_t i = 0; i < context->device_count; ++i) {
    tsr_device *d = context->devices[i];
    if (strcmp(d->name, name) == 0) return d;
    if (d->index == 0 && strcmp(d->plugin->api->name, name) == 0) return d;
  }
  tsr_error_set(TSR_NOT_FOUND, "device_find: no device named '%s'", name);
  return NULL;
}

tsr_device *tsr_context_default_device(const tsr_context *context) {
  return context ? atomic_load(&((tsr_context *)context)->default_device) : NULL;
}

tsr_status tsr_context_default_device_set(tsr_context *context, tsr_device *device) {
  if (context == NULL || device == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "default_device_set: %s is NULL",
                         context ? "device" : "context");
  }
  for (int32_t i = 0; i < context->device_count; ++i) {
    if (context->devices[i] == device) {
      atomic_store(&context->default_device, device);
      tsr_log(TSR_LOG_INFO, "default device %s", device->name);
      return TSR_OK;
    }
  }
  return tsr_error_set(TSR_INVALID_ARGUMENT, "default_device_set: %s is not in this context",
                       device->name);
}

tsr_status tsr_context_fallback_stats_get(const tsr_context *context,
                                          tsr_fallback_stats *out_stats) {
  if (context == NULL || out_stats == NULL || out_stats->struct_size < sizeof(*out_stats)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "fallback_stats_get: NULL argument or small struct");
  }
  tsr_context *c = (tsr_context *)context;
  out_stats->ops = atomic_load(&c->fallback_ops);
  out_stats->copies = atomic_load(&c->fallback_copies);
  out_stats->refusals = atomic_load(&c->fallback_refusals);
  return TSR_OK;
}

tsr_status tsr_context_fallback_policy_set(tsr_context *context, tsr_fallback_policy_t policy) {
  if (context == NULL || policy < TSR_FALLBACK_WARN || policy > TSR_FALLBACK_DENY) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "fallback_policy_set: %s",
                         context ? "unknown policy" : "context is NULL");
  }
  atomic_store(&context->fallback_policy, policy);
  return TSR_OK;
}
