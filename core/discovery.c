// Plugin discovery, in the order of docs/abi.md 3.2: the application's
// explicit path, TSR_PLUGIN_PATH, the installed plugin folder, then the
// folder of libtessera.so. Every rejected candidate is kept with its reason.
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "log.h"
#include "context.h"
#include "device.h"
#include "registry.h"

#ifndef TSR_INSTALLED_PLUGIN_DIR
#define TSR_INSTALLED_PLUGIN_DIR "/usr/local/lib/tessera"
#endif
#ifndef TSR_PLUGIN_DIR_FROM_LIB
#define TSR_PLUGIN_DIR_FROM_LIB "tessera"
#endif

static void reject(tsr_context *context, const char *path, tsr_status status, const char *reason) {
  if (context->rejected_count == context->rejected_capacity) {
    const int32_t grown = context->rejected_capacity ? 2 * context->rejected_capacity : 16;
    struct tsr_rejected_entry *bigger =
        realloc(context->rejected, (size_t)grown * sizeof(*context->rejected));
    if (bigger == NULL) {
      tsr_log(TSR_LOG_WARNING, "plugin %s rejected (%s); out of memory to keep the reason", path,
              reason);
      return;
    }
    context->rejected = bigger;
    context->rejected_capacity = grown;
  }
  struct tsr_rejected_entry *r = &context->rejected[context->rejected_count];
  r->path = strdup(path);
  r->real = realpath(path, NULL);
  r->reason = strdup(reason);
  r->status = status;
  if (r->path == NULL || r->reason == NULL) {
    free(r->path);
    free(r->real);
    free(r->reason);
    tsr_log(TSR_LOG_WARNING, "plugin %s rejected (%s); out of memory to keep the reason", path,
            reason);
    return;
  }
  ++context->rejected_count;
  tsr_log(TSR_LOG_DEBUG, "plugin %s rejected: %s", path, reason);
}

static int already_seen(const tsr_context *context, const char *real) {
  for (int32_t i = 0; i < context->plugin_count; ++i) {
    if (strcmp(context->plugins[i]->path, real) == 0) return 1;
  }
  for (int32_t i = 0; i < context->rejected_count; ++i) {
    if (context->rejected[i].real != NULL && strcmp(context->rejected[i].real, real) == 0) return 1;
  }
  return 0;
}

static void try_file(tsr_context *context, const char *path) {
  char *real = realpath(path, NULL);
  if (real == NULL) {
    const int e = errno;
    reject(context, path, TSR_NOT_FOUND,
           e == ELOOP    ? "a symlink loop"
           : e == ENOENT ? "no such file (or a link to nothing)"
                         : strerror(e));
    return;
  }
  int seen = already_seen(context, real);
  free(real);
  if (seen) return;
  if (context->plugin_count == TSR_MAX_PLUGINS) {
    reject(context, path, TSR_OUT_OF_MEMORY, "too many plugins");
    return;
  }
  tsr_plugin *plugin = NULL;
  tsr_error_clear();
  tsr_status status = tsr_registry_plugin_acquire(context, path, &plugin);
  if (status != TSR_OK) {
    reject(context, path, status, tsr_error_message());
    return;
  }
  context->plugins[context->plugin_count++] = plugin;
  for (int32_t i = 0; i < plugin->device_count && context->device_count < TSR_MAX_DEVICES; ++i) {
    tsr_device *device = NULL;
    if (tsr_device_create(context, plugin, i, &device) != TSR_OK) {
      char reason[1024];
      snprintf(reason, sizeof(reason), "device %d: %s", i, tsr_error_message());
      reject(context, path, tsr_error_status(), reason);
      continue;
    }
    context->devices[context->device_count++] = device;
  }
}

static int is_plugin_name(const char *name) {
  size_t n = strlen(name);
  return strncmp(name, "libtessera-", 11) == 0 && n > 14 && strcmp(name + n - 3, ".so") == 0;
}

static int compare_names(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  if (x == NULL || y == NULL) return (x != NULL) - (y != NULL);
  return strcmp(x, y);
}

// Loads every libtessera-*.so in |folder|, in name order so runs agree,
// however many there are.
static void try_folder(tsr_context *context, const char *folder) {
  DIR *dir = opendir(folder);
  if (dir == NULL) return;
  char **names = NULL;
  size_t count = 0, capacity = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (!is_plugin_name(entry->d_name)) continue;
    if (count == capacity) {
      const size_t grown = capacity ? 2 * capacity : 16;
      char **bigger = realloc(names, grown * sizeof(*names));
      if (bigger == NULL) {
        reject(context, folder, TSR_OUT_OF_MEMORY,
               "out of memory listing the folder; the rest of its plugins were not tried");
        break;
      }
      names = bigger;
      capacity = grown;
    }
    names[count++] = strdup(entry->d_name);
  }
  closedir(dir);
  // A failed strdup leaves NULL, sorted first and skipped. (No names: names
  // is NULL, which qsort must not be given.)
  if (count > 1) qsort(names, count, sizeof(char *), compare_names);
  for (size_t i = 0; i < count; ++i) {
    if (names[i] == NULL) continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", folder, names[i]);
    try_file(context, path);
    free(names[i]);
  }
  free(names);
}

static void try_path_list(tsr_context *context, const char *list) {
  if (list == NULL || list[0] == '\0') return;
  char *copy = strdup(list);
  if (copy == NULL) return;
  char *save = NULL;
  for (char *item = strtok_r(copy, ":", &save); item; item = strtok_r(NULL, ":", &save)) {
    struct stat st;
    if (stat(item, &st) != 0) {
      reject(context, item, TSR_NOT_FOUND,
             errno == ELOOP ? "a symlink loop" : "no such file or folder");
    } else if (S_ISDIR(st.st_mode)) {
      try_folder(context, item);
    } else {
      try_file(context, item);
    }
  }
  free(copy);
}

tsr_status tsr_discovery_run(tsr_context *context, const tsr_context_options *options) {
  const char *explicit_path = options ? options->plugin_path : NULL;
  uint32_t flags = options ? options->flags : 0;
  try_path_list(context, explicit_path);
  if (!(flags & TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY)) {
    try_path_list(context, getenv("TSR_PLUGIN_PATH"));
    try_folder(context, TSR_INSTALLED_PLUGIN_DIR);
    Dl_info info;
    if (dladdr((void *)&tsr_discovery_run, &info) != 0 && info.dli_fname != NULL) {
      char *copy = strdup(info.dli_fname);
      if (copy != NULL) {
        // An installation: <libdir>/tessera beside libtessera.so. A build
        // tree: the plugins sit in libtessera.so's own folder.
        const char *folder = dirname(copy);
        char installed[4096];
        snprintf(installed, sizeof(installed), "%s/%s", folder, TSR_PLUGIN_DIR_FROM_LIB);
        try_folder(context, installed);
        try_folder(context, folder);
        free(copy);
      }
    }
  }
  return TSR_OK;
}
