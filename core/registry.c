// The process-wide plugin table: loading, version negotiation, the host
// table each plugin receives, and the shared thread pool.
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_check.h"
#include "engine_cache.h"
#include "env.h"
#include "error.h"
#include "log.h"
#include "context.h"
#include "registry.h"
#include "thread_pool.h"

// During ABI 0.x a breaking change bumps the minor; plugins built against a
// minor older than the last break are refused (docs/abi.md section 2.6).
// (volatile: while the value is 0 the check is trivially false and gcc
// would reject it under -Werror=type-limits.)
static volatile const uint32_t tsr_abi_oldest_compatible_minor = 0;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static tsr_plugin *loaded[TSR_MAX_PLUGINS];
static int32_t loaded_count;
static _Atomic(tsr_thread_pool *) pool;
static int32_t pool_refs;
// The plugin whose thread runtime the host's parallel_for runs on (ABI 0.2,
// docs/abi.md 7.9), or NULL for the core's pool. Set and cleared under
// registry_lock; read without it on every parallel_for.
static _Atomic(const tsr_plugin_api *) runtime_api;

// --- the host table -------------------------------------------------------

static void host_log(void *ctx, tsr_log_level_t level, const char *message) {
  const tsr_plugin *plugin = ctx;
  const char *name = plugin && plugin->api && plugin->api->name ? plugin->api->name : "plugin";
  if (message == NULL) return;
  tsr_log(level, "%s: %s", name, message);
}

static tsr_status host_error_set(void *ctx, tsr_status code, const char *format, ...) {
  (void)ctx;
  va_list args;
  va_start(args, format);
  tsr_error_vset(code, format, args);
  va_end(args);
  return code;
}

static void *host_mem_alloc(void *ctx, size_t bytes, size_t alignment) {
  (void)ctx;
  if (alignment < 16 || (alignment & (alignment - 1)) != 0) return NULL;
  if (bytes > SIZE_MAX - alignment) return NULL;
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  return aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
}

static void host_mem_free(void *ctx, void *ptr) {
  (void)ctx;
  free(ptr);
}

static tsr_status host_parallel_for(void *ctx, int64_t count, int64_t grain, tsr_parallel_fn fn,
                                    void *arg) {
  (void)ctx;
  if (fn == NULL || count < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "parallel_for: fn %s, count %lld",
                         fn ? "set" : "NULL", (long long)count);
  }
  const tsr_plugin_api *runtime = atomic_load_explicit(&runtime_api, memory_order_acquire);
  if (runtime != NULL) return runtime->parallel_for(count, grain, fn, arg);
  tsr_thread_pool *p = atomic_load_explicit(&pool, memory_order_acquire);
  if (p == NULL) {
    if (count > 0) fn(arg, 0, count, 0);
    return TSR_OK;
  }
  return tsr_thread_pool_parallel_for(p, count, grain, fn, arg);
}

static int32_t host_thread_count(void *ctx) {
  (void)ctx;
  const tsr_plugin_api *runtime = atomic_load_explicit(&runtime_api, memory_order_acquire);
  if (runtime != NULL) return runtime->thread_count_get();
  tsr_thread_pool *p = atomic_load_explicit(&pool, memory_order_acquire);
  return p ? tsr_thread_pool_thread_count(p) : 1;
}

// The engine cache (ABI 0.4, docs/abi.md 6.2), keyed by the calling plugin's
// identity and the thread count it runs with.
static tsr_status host_engine_cache_get(void *ctx, const char *plugin_key, const char *class_key,
                                        void *out_value, size_t *inout_bytes) {
  const tsr_plugin *plugin = ctx;
  return tsr_engine_cache_get(plugin ? plugin->api : NULL, host_thread_count(ctx), plugin_key,
                              class_key, out_value, inout_bytes);
}

static tsr_status host_engine_cache_put(void *ctx, const char *plugin_key, const char *class_key,
                                        const void *value, size_t bytes) {
  const tsr_plugin *plugin = ctx;
  return tsr_engine_cache_put(plugin ? plugin->api : NULL, host_thread_count(ctx), plugin_key,
                              class_key, value, bytes);
}

static void host_table_fill(tsr_plugin *plugin) {
  tsr_host_api *h = &plugin->host;
  memset(h, 0, sizeof(*h));
  h->struct_size = sizeof(*h);
  h->abi_major = TSR_ABI_VERSION_MAJOR;
  h->abi_minor = TSR_ABI_VERSION_MINOR;
  h->ctx = plugin;
  h->log = host_log;
  h->error_set = host_error_set;
  h->mem_alloc = host_mem_alloc;
  h->mem_free = host_mem_free;
  h->parallel_for = host_parallel_for;
  h->thread_count = host_thread_count;
  h->engine_cache_get = host_engine_cache_get;
  h->engine_cache_put = host_engine_cache_put;
}

// --- thread pool ----------------------------------------------------------

tsr_status tsr_registry_thread_pool_acquire(int32_t num_threads) {
  tsr_status status = TSR_OK;
  pthread_mutex_lock(&registry_lock);
  if (pool == NULL) {
    int32_t cores = (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores <= 0) cores = 1;
    if (num_threads <= 0) num_threads = (int32_t)tsr_env_int("TSR_NUM_THREADS", 1, 1024, cores);
    tsr_thread_pool *created = NULL;
    status = tsr_thread_pool_create(num_threads, &created);
    if (status == TSR_OK) atomic_store_explicit(&pool, created, memory_order_release);
  }
  if (status == TSR_OK) ++pool_refs;
  pthread_mutex_unlock(&registry_lock);
  return status;
}

void tsr_registry_thread_pool_release(void) {
  pthread_mutex_lock(&registry_lock);
  if (--pool_refs == 0) {
    tsr_thread_pool *p = atomic_exchange(&pool, NULL);
    tsr_thread_pool_destroy(p);
  }
  pthread_mutex_unlock(&registry_lock);
}

tsr_thread_pool *tsr_registry_thread_pool(void) { return atomic_load(&pool); }

// --- plugins --------------------------------------------------------------

// Required entries: a plugin without them cannot hold a tensor.
static const char *missing_required(const tsr_plugin_api *api) {
#define REQUIRE(field) \
  if (!TSR_ABI_HAS(api, tsr_plugin_api, field)) return #field;
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
  if (!TSR_ABI_COVERS(api, tsr_plugin_api, build_info) || api->name == NULL ||
      api->name[0] == '\0') {
    return "name";
  }
  return NULL;
}

static tsr_status plugin_shutdown(tsr_plugin *plugin) {
  const tsr_plugin_api *api = plugin->api;
  tsr_status status = TSR_ABI_HAS(api, tsr_plugin_api, shutdown) ? api->shutdown() : TSR_OK;
  if (status == TSR_OK && atomic_load(&runtime_api) == api) {
    atomic_store_explicit(&runtime_api, NULL, memory_order_release);
    tsr_log(TSR_LOG_INFO, "parallel_for runs on the core's thread pool again (%s shut down)",
            api->name);
  }
  return status;
}

// Runs the entry, checks the ABI, init, probe and devices. On failure the
// error is set and the plugin is left shut down (but not dlclosed: its code
// may have started threads we cannot see).
static tsr_status plugin_start(tsr_plugin *plugin) {
  dlerror();
  void *symbol = dlsym(plugin->dl_handle, TSR_PLUGIN_ENTRY_NAME);
  if (symbol == NULL) {
    const char *why = dlerror();
    return tsr_error_set(TSR_NOT_FOUND, "no %s symbol (%s)", TSR_PLUGIN_ENTRY_NAME,
                         why ? why : "dlsym returned NULL");
  }
  tsr_plugin_entry_fn entry;
  memcpy(&entry, &symbol, sizeof(entry));
  host_table_fill(plugin);
  tsr_error_clear();
  const tsr_plugin_api *api = NULL;
  tsr_status status = entry(&plugin->host, &api);
  if (status != TSR_OK) {
    if (tsr_error_message()[0] == '\0') tsr_error_set(status, "entry failed");
    tsr_error_set(status, "entry returned %s: %s", tsr_status_name(status), tsr_error_message());
    return status;
  }
  if (api == NULL || api->struct_size < offsetof(tsr_plugin_api, name)) {
    return tsr_error_set(TSR_ABI_MISMATCH, "entry returned no plugin table or one too small");
  }
  if (api->abi_major != TSR_ABI_VERSION_MAJOR) {
    // The status's name already says "ABI mismatch": the reason does not
    // repeat it (tsr-info prints "ABI mismatch: <reason>").
    return tsr_error_set(TSR_ABI_MISMATCH, "plugin built against ABI %u.%u, core is %d.%d",
                         api->abi_major, api->abi_minor, TSR_ABI_VERSION_MAJOR,
                         TSR_ABI_VERSION_MINOR);
  }
  if (api->abi_minor < tsr_abi_oldest_compatible_minor) {
    return tsr_error_set(TSR_ABI_MISMATCH,
                         "plugin built against ABI %u.%u, older than %d.%u, the oldest "
                         "minor this core accepts",
                         api->abi_major, api->abi_minor, TSR_ABI_VERSION_MAJOR,
                         tsr_abi_oldest_compatible_minor);
  }
  const char *missing = missing_required(api);
  if (missing != NULL) {
    return tsr_error_set(TSR_ABI_MISMATCH, "plugin table lacks the required entry '%s'", missing);
  }
  // docs/abi.md 7.1: devices are "<name>:<index>" and TSR_DEVICE names
  // them, so a name is short, lower case, and has no ':' or space.
  size_t name_length = strlen(api->name);
  int name_ok = name_length <= 31 && api->name[0] >= 'a' && api->name[0] <= 'z';
  for (size_t i = 0; name_ok && i < name_length; ++i) {
    const char c = api->name[i];
    name_ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }
  if (!name_ok) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "plugin name '%.64s' breaks the naming rule (a lower-case letter, then "
                         "lower-case letters, digits, '-' or '_'; at most 31 characters)",
                         api->name);
  }
  plugin->api = api;
  for (int32_t i = 0; i < loaded_count; ++i) {
    if (loaded[i] != plugin && loaded[i]->api && loaded[i]->context_refs > 0 &&
        strcmp(loaded[i]->api->name, api->name) == 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "a plugin named '%s' is already loaded from %s",
                           api->name, loaded[i]->path);
    }
  }
  if (TSR_ABI_HAS(api, tsr_plugin_api, init)) {
    tsr_error_clear();
    status = api->init();
    if (status != TSR_OK) {
      tsr_error_set(status, "init failed (%s): %s", tsr_status_name(status), tsr_error_message());
      return status;
    }
  }
  tsr_error_clear();
  status = api->probe();
  if (status != TSR_OK) {
    tsr_error_set(status, "probe: %s", tsr_error_message());
    if (TSR_ABI_HAS(api, tsr_plugin_api, shutdown)) api->shutdown();
    return status;
  }
  int32_t count = 0;
  status = api->device_count_get(&count);
  if (status == TSR_OK && (count < 0 || count > TSR_MAX_DEVICES)) {
    status = tsr_error_set(TSR_INTERNAL, "device_count_get gave %d devices", count);
  }
  if (status != TSR_OK) {
    tsr_error_prefix("devices");
    plugin_shutdown(plugin);
    return status;
  }
  plugin->device_count = count;
  // One thread runtime per process (DESIGN.md 5.3): the first plugin that
  // brings one runs everybody's parallel_for from now on.
  if (TSR_ABI_HAS(api, tsr_plugin_api, parallel_for) &&
      TSR_ABI_HAS(api, tsr_plugin_api, thread_count_get) && atomic_load(&runtime_api) == NULL) {
    atomic_store_explicit(&runtime_api, api, memory_order_release);
    tsr_log(TSR_LOG_INFO, "parallel_for runs on %s's thread runtime (%d threads)", api->name,
            (int)api->thread_count_get());
  }
  return TSR_OK;
}

tsr_status tsr_registry_plugin_acquire(tsr_context *context, const char *path,
                                       tsr_plugin **out_plugin) {
  (void)context;
  *out_plugin = NULL;
  char *real = realpath(path, NULL);
  if (real == NULL) return tsr_error_set(TSR_NOT_FOUND, "cannot resolve the path");
  pthread_mutex_lock(&registry_lock);
  tsr_plugin *plugin = NULL;
  for (int32_t i = 0; i < loaded_count; ++i) {
    if (strcmp(loaded[i]->path, real) == 0) plugin = loaded[i];
  }
  tsr_status status = TSR_OK;
  // A plugin whose shutdown refused (objects still alive) keeps running;
  // reuse it rather than calling its entry twice.
  if (plugin != NULL && (plugin->context_refs > 0 || plugin->api != NULL)) {
    ++plugin->context_refs;
    free(real);
    *out_plugin = plugin;
    pthread_mutex_unlock(&registry_lock);
    return TSR_OK;
  }
  if (plugin == NULL) {
    if (loaded_count == TSR_MAX_PLUGINS) {
      free(real);
      pthread_mutex_unlock(&registry_lock);
      return tsr_error_set(TSR_OUT_OF_MEMORY, "more than %d plugins", TSR_MAX_PLUGINS);
    }
    // Checked through one descriptor first (elf_check.h): a truncated
    // library would kill the process with SIGBUS inside dlopen, a FIFO
    // would hang it.
    char why[512];
    int fd = -1;
    struct stat checked;
    status = tsr_elf_candidate_open(real, &fd, &checked, why, sizeof(why));
    if (status != TSR_OK) {
      tsr_error_set(status, "%s", why);
      free(real);
      pthread_mutex_unlock(&registry_lock);
      return status;
    }
    // The file checked is the file loaded: dlopen reads it through the
    // same descriptor (/proc/self/fd/N), so no one can swap it in between.
    // Except for a library whose RUNPATH uses $ORIGIN, which through that
    // path would mean /proc/self/fd (and where /proc is missing): it is
    // loaded by its path, and refused
    // when the file there is no longer the one checked (another inode,
    // size or time); the window left is the few instructions between that
    // stat and dlopen's own open.
    void *handle = NULL;
    int same = 1;
    // Without /proc (a container that does not mount it) there is no
    // descriptor path: load by path, as for $ORIGIN.
    const int through_descriptor = access("/proc/self/fd", X_OK) == 0 &&
                                   !tsr_elf_mentions_origin(fd, (uint64_t)checked.st_size);
    if (through_descriptor) {
      char through_fd[64];
      snprintf(through_fd, sizeof(through_fd), "/proc/self/fd/%d", fd);
      dlerror();
      handle = dlopen(through_fd, RTLD_NOW | RTLD_LOCAL);
    } else {
      struct stat now;
      same = stat(real, &now) == 0 && now.st_dev == checked.st_dev &&
             now.st_ino == checked.st_ino && now.st_size == checked.st_size &&
             now.st_mtime == checked.st_mtime;
      if (same) {
        dlerror();
        handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
      }
    }
    if (!through_descriptor || handle == NULL) {
      close(fd);
      fd = -1;
    }
    if (!same) {
      free(real);
      pthread_mutex_unlock(&registry_lock);
      return tsr_error_set(TSR_UNAVAILABLE, "the file changed while it was being checked");
    }
    if (handle == NULL) {
      const char *why_dl = dlerror();
      tsr_error_set(TSR_NOT_FOUND, "dlopen failed: %s", why_dl ? why_dl : "unknown error");
      free(real);
      pthread_mutex_unlock(&registry_lock);
      return TSR_NOT_FOUND;
    }
    plugin = calloc(1, sizeof(*plugin));
    if (plugin == NULL) {
      dlclose(handle);
      if (fd >= 0) close(fd);
      free(real);
      pthread_mutex_unlock(&registry_lock);
      return tsr_error_set(TSR_OUT_OF_MEMORY, "no memory for a plugin record");
    }
    plugin->path = real;
    plugin->dl_handle = handle;
    plugin->fd = fd;
    // A library without an entry never ran code of ours: close it again.
    if (dlsym(handle, TSR_PLUGIN_ENTRY_NAME) == NULL) {
      status = tsr_error_set(TSR_NOT_FOUND, "not a Tessera plugin: no exported %s symbol",
                             TSR_PLUGIN_ENTRY_NAME);
      dlclose(handle);
      if (fd >= 0) close(fd);
      free(plugin->path);
      free(plugin);
      pthread_mutex_unlock(&registry_lock);
      return status;
    }
    loaded[loaded_count++] = plugin;
  } else {
    free(real);
  }
  status = plugin_start(plugin);
  if (status == TSR_OK) {
    plugin->context_refs = 1;
    *out_plugin = plugin;
  } else {
    plugin->api = NULL;
  }
  pthread_mutex_unlock(&registry_lock);
  return status;
}

void tsr_registry_plugin_release(tsr_plugin *plugin) {
  if (plugin == NULL) return;
  pthread_mutex_lock(&registry_lock);
  if (--plugin->context_refs == 0) {
    tsr_error_clear();
    if (plugin_shutdown(plugin) == TSR_OK) {
      plugin->api = NULL;
    } else {
      tsr_log(TSR_LOG_WARNING, "plugin %s refused to shut down (%s); it stays loaded",
              plugin->path, tsr_error_message());
    }
  }
  pthread_mutex_unlock(&registry_lock);
}

