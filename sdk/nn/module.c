// The module object: named parameters and buffers, children, training flag.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/core_layer.h"
#include "module_internal.h"
#include "tessera/tessera.h"

tsr_module *tsr_module_create(const char *kind, const tsr_module_ops *ops, tsr_device *device) {
  tsr_module *module = calloc(1, sizeof(*module));
  if (module == NULL) {
    tsr_fail(device, TSR_OUT_OF_MEMORY, "%s: out of memory for the module", kind);
    return NULL;
  }
  module->kind = kind;
  module->ops = ops;
  module->device = device;
  module->training = 1;
  return module;
}

static tsr_status entry_append(tsr_module *module, const char *what, tsr_module_entry **entries,
                               int32_t *count, const char *name, tsr_tensor *tensor) {
  tsr_module_entry *grown = realloc(*entries, sizeof(**entries) * (size_t)(*count + 1));
  size_t bytes = strlen(name) + 1;
  char *copy = malloc(bytes);
  if (copy != NULL)
    memcpy(copy, name, bytes);
  if (grown != NULL)
    *entries = grown;
  if (grown == NULL || copy == NULL) {
    free(copy);
    tsr_tensor_release(tensor);
    return tsr_fail(module->device, TSR_OUT_OF_MEMORY, "%s: out of memory for %s '%s'",
                    module->kind, what, name);
  }
  (*entries)[*count].name = copy;
  (*entries)[*count].tensor = tensor;
  ++*count;
  return TSR_OK;
}

tsr_status tsr_module_param_add(tsr_module *module, const char *name, tsr_tensor *tensor) {
  return entry_append(module, "parameter", &module->params, &module->num_params, name, tensor);
}

tsr_status tsr_module_buffer_add(tsr_module *module, const char *name, tsr_tensor *tensor) {
  return entry_append(module, "buffer", &module->buffers, &module->num_buffers, name, tensor);
}

// Appends |src|'s entries to |module|'s list as "<prefix><name>".
static tsr_status entries_adopt(tsr_module *module, const char *what, tsr_module_entry **entries,
                                int32_t *count, const tsr_module_entry *src, int32_t src_count,
                                const char *prefix) {
  for (int32_t i = 0; i < src_count; ++i) {
    size_t bytes = strlen(prefix) + strlen(src[i].name) + 1;
    char *name = malloc(bytes);
    if (name == NULL) {
      return tsr_fail(module->device, TSR_OUT_OF_MEMORY, "%s: out of memory for %s names",
                      module->kind, what);
    }
    strcpy(name, prefix);
    strcat(name, src[i].name);
    tsr_status status =
        entry_append(module, what, entries, count, name, tsr_tensor_retain(src[i].tensor));
    free(name);
    TSR_RETURN_IF_ERROR(status);
  }
  return TSR_OK;
}

tsr_status tsr_module_child_add(tsr_module *module, tsr_module *child) {
  tsr_module **grown =
      realloc(module->children, sizeof(*grown) * (size_t)(module->num_children + 1));
  if (grown == NULL) {
    tsr_module_destroy(child);
    return tsr_fail(module->device, TSR_OUT_OF_MEMORY, "%s: out of memory for child %d",
                    module->kind, module->num_children);
  }
  module->children = grown;
  int32_t index = module->num_children++;
  module->children[index] = child;
  if (module->device == NULL)
    module->device = child->device;
  char prefix[24];
  snprintf(prefix, sizeof(prefix), "%d.", index);
  TSR_RETURN_IF_ERROR(entries_adopt(module, "parameter", &module->params, &module->num_params,
                                    child->params, child->num_params, prefix));
  return entries_adopt(module, "buffer", &module->buffers, &module->num_buffers, child->buffers,
                       child->num_buffers, prefix);
}

static void entries_free(tsr_module_entry *entries, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    free(entries[i].name);
    tsr_tensor_release(entries[i].tensor);
  }
  free(entries);
}

void tsr_module_destroy(tsr_module *module) {
  if (module == NULL)
    return;
  if (module->ops != NULL && module->ops->destroy != NULL)
    module->ops->destroy(module);
  entries_free(module->params, module->num_params);
  entries_free(module->buffers, module->num_buffers);
  for (int32_t i = 0; i < module->num_children; ++i) tsr_module_destroy(module->children[i]);
  free(module->children);
  tsr_tensor_release(module->extra);
  free(module);
}

const char *tsr_module_kind(const tsr_module *module) {
  if (module == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "module_kind: module is NULL");
    return NULL;
  }
  return module->kind;
}

tsr_tensor *tsr_module_forward(tsr_module *module, tsr_tensor *x) {
  if (module == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "module_forward: module is NULL");
    return NULL;
  }
  if (x == NULL) {
    tsr_fail(module->device, TSR_INVALID_ARGUMENT, "%s: forward: x is NULL", module->kind);
    return NULL;
  }
  tsr_tensor *y = module->ops->forward(module, x);
  if (y == NULL) {
    // Errors of the ops inside a layer name the op; say which layer ran it.
    size_t n = strlen(module->kind);
    const char *message = tsr_error_message();
    if (strncmp(message, module->kind, n) != 0 || message[n] != ':') {
      tsr_error_prefix(module->kind);
    }
  }
  return y;
}

void tsr_module_train_set(tsr_module *module, int training) {
  if (module == NULL)
    return;
  module->training = training != 0;
  for (int32_t i = 0; i < module->num_children; ++i) {
    tsr_module_train_set(module->children[i], training);
  }
}

int tsr_module_training(const tsr_module *module) {
  return module ? module->training : 0;
}

int32_t tsr_module_parameter_count(const tsr_module *module) {
  return module ? module->num_params : 0;
}

static tsr_status entry_get(const tsr_module *module, const char *what, const char *list,
                            const tsr_module_entry *entries, int32_t count, int32_t index,
                            const char **out_name, tsr_tensor **out_tensor) {
  if (out_name)
    *out_name = NULL;
  if (out_tensor)
    *out_tensor = NULL;
  if (module == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: module is NULL", what);
  if (index < 0 || index >= count) {
    return tsr_fail(module->device, TSR_INVALID_ARGUMENT,
                    "%s: index %d is out of range for %s's %d %s", what, index, module->kind, count,
                    list);
  }
  if (out_name)
    *out_name = entries[index].name;
  if (out_tensor)
    *out_tensor = entries[index].tensor;
  return TSR_OK;
}

tsr_status tsr_module_parameter_get(const tsr_module *module, int32_t index, const char **out_name,
                                    tsr_tensor **out_tensor) {
  return entry_get(module, "module_parameter_get", "parameters", module ? module->params : NULL,
                   module ? module->num_params : 0, index, out_name, out_tensor);
}

tsr_tensor *tsr_module_parameter_by_name_get(const tsr_module *module, const char *name) {
  if (module == NULL || name == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "module_parameter_by_name_get: %s is NULL",
                  module ? "name" : "module");
    return NULL;
  }
  for (int32_t i = 0; i < module->num_params; ++i) {
    if (strcmp(module->params[i].name, name) == 0)
      return module->params[i].tensor;
  }
  tsr_error_set(TSR_NOT_FOUND, "module_parameter_by_name_get: %s has no parameter '%s'",
                module->kind, name);
  return NULL;
}

// The name before 0.1's ownership rule in names; removed in 0.2.
tsr_tensor *tsr_module_parameter_find(const tsr_module *module, const char *name) {
  return tsr_module_parameter_by_name_get(module, name);
}

int32_t tsr_module_buffer_count(const tsr_module *module) {
  return module ? module->num_buffers : 0;
}

tsr_status tsr_module_buffer_get(const tsr_module *module, int32_t index, const char **out_name,
                                 tsr_tensor **out_tensor) {
  return entry_get(module, "module_buffer_get", "buffers", module ? module->buffers : NULL,
                   module ? module->num_buffers : 0, index, out_name, out_tensor);
}

void tsr_module_zero_grad(tsr_module *module) {
  if (module == NULL)
    return;
  // Clearing cannot fail: the parameter is valid and NULL needs no checks.
  for (int32_t i = 0; i < module->num_params; ++i) {
    tsr_status cleared = tsr_tensor_grad_set(module->params[i].tensor, NULL);
    (void)cleared;
  }
}
