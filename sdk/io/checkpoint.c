// Checkpoints: a module's parameters and buffers and an optimizer's state in
// one safetensors file.
//
// Loading is all or nothing: every tensor is checked against the model and
// read onto its device before the first parameter is overwritten, so a
// refused or unreadable checkpoint leaves the model and optimizer as they
// were. (Only a device failure during the final copies could leave them
// half-updated; the error says so.)
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_meta.h"
#include "tessera/core_layer.h"
#include "io_internal.h"
#include "../optim/optim_internal.h"
#include "tessera/tessera.h"

#define CKPT_OPTIM_PREFIX "optim."
#define CKPT_STEP_KEY TSR_CKPT_STEP_KEY
#define CKPT_LR_KEY TSR_CKPT_LR_KEY

// Every optimizer's state names (SGD, Adam, RMSprop, Adagrad).
static const char *const ckpt_state_kinds[] = {"momentum_buffer", "exp_avg", "exp_avg_sq",
                                               "square_avg",      "grad_avg", "sum"};

// One tensor of the model (or optimizer) and the file name it goes under.
typedef struct ckpt_item {
  char *file_name;     // owned
  const char *name;    // the model's or optimizer's name (borrowed)
  const char *kind;    // "parameter", "buffer", "optimizer state"
  tsr_tensor *tensor;  // borrowed
  tsr_tensor *loaded;  // owned, load only
} ckpt_item;

typedef struct ckpt_list {
  ckpt_item *items;
  int32_t count;
} ckpt_list;

static void list_free(ckpt_list *list) {
  for (int32_t i = 0; i < list->count; ++i) {
    free(list->items[i].file_name);
    if (list->items[i].loaded != NULL)
      tsr_tensor_unref(list->items[i].loaded);
  }
  free(list->items);
  list->items = NULL;
  list->count = 0;
}

static tsr_status list_add(ckpt_list *list, const char *what, const char *prefix, const char *name,
                           const char *kind, tsr_tensor *tensor) {
  ckpt_item *items = realloc(list->items, sizeof(*items) * (size_t)(list->count + 1));
  if (items == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory", what);
  list->items = items;
  size_t n = strlen(prefix) + strlen(name) + 1;
  char *file_name = malloc(n);
  if (file_name == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no host memory", what);
  snprintf(file_name, n, "%s%s", prefix, name);
  list->items[list->count++] = (ckpt_item){file_name, name, kind, tensor, NULL};
  return TSR_OK;
}

// The model's parameters and buffers, and the optimizer's existing state.
static tsr_status list_build(const char *what, tsr_module *module, tsr_optimizer *optimizer,
                             ckpt_list *out) {
  out->items = NULL;
  out->count = 0;
  tsr_status status = TSR_OK;
  int32_t n = tsr_module_parameter_count(module);
  for (int32_t i = 0; i < n && status == TSR_OK; ++i) {
    const char *name;
    tsr_tensor *t;
    status = tsr_module_parameter_get(module, i, &name, &t);
    if (status == TSR_OK)
      status = list_add(out, what, "", name, "parameter", t);
  }
  n = tsr_module_buffer_count(module);
  for (int32_t i = 0; i < n && status == TSR_OK; ++i) {
    const char *name;
    tsr_tensor *t;
    status = tsr_module_buffer_get(module, i, &name, &t);
    if (status == TSR_OK)
      status = list_add(out, what, "", name, "buffer", t);
  }
  n = optimizer ? tsr_optimizer_state_count(optimizer) : 0;
  for (int32_t i = 0; i < n && status == TSR_OK; ++i) {
    const char *name;
    tsr_tensor *t;
    status = tsr_optimizer_state_get(optimizer, i, &name, &t);
    if (status == TSR_OK)
      status = list_add(out, what, CKPT_OPTIM_PREFIX, name, "optimizer state", t);
  }
  if (status != TSR_OK)
    list_free(out);
  return status;
}

static tsr_status metadata_check(const char *what, const char *path, int32_t count,
                                 const char *const *keys, const char *const *values) {
  if (count < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: metadata_count is %d; it must be >= 0", what,
                         path, count);
  }
  if (count > 0 && (keys == NULL || values == NULL)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: metadata_%s is NULL with metadata_count %d",
                         what, path, keys == NULL ? "keys" : "values", count);
  }
  for (int32_t i = 0; i < count; ++i) {
    if (keys[i] != NULL &&
        (strcmp(keys[i], CKPT_STEP_KEY) == 0 || strcmp(keys[i], CKPT_LR_KEY) == 0 ||
         strcmp(keys[i], TSR_OPTIM_GROUP_LRS_KEY) == 0 ||
         strcmp(keys[i], TSR_OPTIM_SCHEDULE_KEY) == 0)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s %s: metadata key '%s' is reserved for the optimizer", what, path,
                           keys[i]);
    }
  }
  return TSR_OK;
}

tsr_status tsr_checkpoint_save(const char *path, tsr_module *module, tsr_optimizer *optimizer,
                               int32_t metadata_count, const char *const *metadata_keys,
                               const char *const *metadata_values) {
  const char *what = "checkpoint_save";
  if (path == NULL || module == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                         path == NULL ? "path" : "module");
  }
  TSR_RETURN_IF_ERROR(metadata_check(what, path, metadata_count, metadata_keys, metadata_values));
  ckpt_list list;
  TSR_RETURN_IF_ERROR(list_build(what, module, optimizer, &list));
  // Group lrs and the schedule's state, when there are any.
  char *group_lrs = NULL, *schedule = NULL;
  if (optimizer != NULL) {
    tsr_status formatted = tsr_optim_meta_format(optimizer, &group_lrs, &schedule);
    if (formatted != TSR_OK) {
      list_free(&list);
      return formatted;
    }
  }
  tsr_named_tensor *named = malloc(sizeof(*named) * (size_t)(list.count ? list.count : 1));
  int32_t total = metadata_count + (optimizer ? 2 : 0) + (group_lrs != NULL) + (schedule != NULL);
  const char **keys = malloc(sizeof(char *) * (size_t)(total ? total : 1));
  const char **values = malloc(sizeof(char *) * (size_t)(total ? total : 1));
  tsr_status status = TSR_OK;
  if (named == NULL || keys == NULL || values == NULL) {
    status = tsr_error_set(TSR_OUT_OF_MEMORY, "%s %s: no host memory", what, path);
  } else {
    for (int32_t i = 0; i < list.count; ++i) {
      named[i] = (tsr_named_tensor){list.items[i].file_name, list.items[i].tensor};
    }
    for (int32_t i = 0; i < metadata_count; ++i) {
      keys[i] = metadata_keys[i];
      values[i] = metadata_values[i];
    }
    // %.17g: the lr reads back as the same double.
    char step[32], lr[40];
    if (optimizer != NULL) {
      snprintf(step, sizeof(step), "%lld", (long long)tsr_optimizer_step_count(optimizer));
      snprintf(lr, sizeof(lr), "%.17g", tsr_optimizer_lr(optimizer));
      keys[metadata_count] = CKPT_STEP_KEY;
      values[metadata_count] = step;
      keys[metadata_count + 1] = CKPT_LR_KEY;
      values[metadata_count + 1] = lr;
      int32_t at = metadata_count + 2;
      if (group_lrs != NULL) {
        keys[at] = TSR_OPTIM_GROUP_LRS_KEY;
        values[at++] = group_lrs;
      }
      if (schedule != NULL) {
        keys[at] = TSR_OPTIM_SCHEDULE_KEY;
        values[at] = schedule;
      }
    }
    status = tsr_safetensors_save(path, list.count, named, total, keys, values);
    if (status != TSR_OK)
      tsr_error_prefix(what);
  }
  free(named);
  free(keys);
  free(values);
  free(group_lrs);
  free(schedule);
  list_free(&list);
  return status;
}

// --- load ------------------------------------------------------------------------

static void sizes_format(char *out, size_t size, int32_t rank, const int64_t *sizes) {
  size_t at = (size_t)snprintf(out, size, "[");
  for (int32_t d = 0; d < rank && at < size; ++d) {
    at += (size_t)snprintf(out + at, size - at, "%s%lld", d ? ", " : "", (long long)sizes[d]);
  }
  if (at < size)
    snprintf(out + at, size - at, "]");
}

// Checks that |entry| matches |item|'s tensor in dtype and sizes.
static tsr_status entry_check(const char *path, const ckpt_item *item, const tsr_st_entry *entry) {
  const tsr_tensor *t = item->tensor;
  if (entry == NULL) {
    return tsr_error_set(TSR_NOT_FOUND, "checkpoint %s: %s '%s' is missing", path, item->kind,
                         item->name);
  }
  if (entry->dtype != tsr_tensor_dtype(t)) {
    const char *want = tsr_st_dtype_name(tsr_tensor_dtype(t));
    return tsr_error_set(
        TSR_INVALID_ARGUMENT, "checkpoint %s: %s '%s' has dtype %s in the file, %s in the model",
        path, item->kind, item->name, tsr_st_dtype_name(entry->dtype), want ? want : "?");
  }
  int same = entry->rank == tsr_tensor_rank(t);
  for (int32_t d = 0; same && d < tsr_tensor_rank(t); ++d)
    same = entry->sizes[d] == tsr_tensor_sizes(t)[d];
  if (!same) {
    char have[200], want[200];
    sizes_format(have, sizeof(have), entry->rank, entry->sizes);
    sizes_format(want, sizeof(want), tsr_tensor_rank(t), tsr_tensor_sizes(t));
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "checkpoint %s: %s '%s' has sizes %s in the file, %s in the model", path,
                         item->kind, item->name, have, want);
  }
  return TSR_OK;
}

static const ckpt_item *item_find(const ckpt_list *list, const char *file_name) {
  for (int32_t i = 0; i < list->count; ++i) {
    if (strcmp(list->items[i].file_name, file_name) == 0)
      return &list->items[i];
  }
  return NULL;
}

// The module parameter an optimizer state name "<param>.<kind>" belongs to.
static tsr_tensor *state_param(tsr_module *module, const char *state_name) {
  size_t n = strlen(state_name);
  for (size_t k = 0; k < sizeof(ckpt_state_kinds) / sizeof(ckpt_state_kinds[0]); ++k) {
    size_t m = strlen(ckpt_state_kinds[k]);
    if (n <= m + 1 || strcmp(state_name + n - m, ckpt_state_kinds[k]) != 0 ||
        state_name[n - m - 1] != '.') {
      continue;
    }
    char *param = malloc(n - m);
    if (param == NULL)
      return NULL;
    memcpy(param, state_name, n - m - 1);
    param[n - m - 1] = '\0';
    tsr_tensor *t = tsr_module_parameter_by_name_get(module, param);
    free(param);
    if (t != NULL)
      return t;
  }
  return NULL;
}

// Whether |optimizer| has a state called |name|, without changing it:
// state_set refuses a value of another dtype (TSR_INVALID_ARGUMENT) only
// after it found the name, and says TSR_NOT_FOUND before. The refusal's
// sticky context error is not the caller's, so it is cleared again.
static int optimizer_has_state(tsr_optimizer *optimizer, const char *name, tsr_tensor *param) {
  tsr_context *context = tsr_device_context_get(tsr_tensor_device(param));
  tsr_status before = tsr_context_status(context);
  const int64_t zero = 0;
  int previous = tsr_scope_suspend();
  tsr_tensor *probe = tsr_tensor_empty(
      tsr_tensor_device(param), tsr_tensor_dtype(param) == TSR_FLOAT64 ? TSR_FLOAT32 : TSR_FLOAT64,
      1, &zero);
  tsr_scope_resume(previous);
  if (probe == NULL)
    return -1;
  tsr_status status = tsr_optimizer_state_set(optimizer, name, probe);
  tsr_tensor_unref(probe);
  if (before == TSR_OK)
    tsr_context_error_clear(context);
  tsr_error_clear();
  return status == TSR_NOT_FOUND ? 0 : 1;
}

// Every check, and every read from the file, before anything changes.
static tsr_status load_prepare(const tsr_safetensors *file, tsr_module *module,
                               tsr_optimizer *optimizer, ckpt_list *list, ckpt_list *extra,
                               int64_t *out_step, double *out_lr, optim_meta *out_meta) {
  const char *path = tsr_safetensors_path(file);
  for (int32_t i = 0; i < list->count; ++i) {
    const ckpt_item *item = &list->items[i];
    TSR_RETURN_IF_ERROR(entry_check(path, item, tsr_safetensors_entry_find(file, item->file_name)));
  }
  size_t prefix = strlen(CKPT_OPTIM_PREFIX);
  int32_t count = tsr_safetensors_count(file);
  for (int32_t i = 0; i < count; ++i) {
    const char *name;
    TSR_RETURN_IF_ERROR(tsr_safetensors_entry_get(file, i, &name, NULL, NULL, NULL));
    if (item_find(list, name) != NULL)
      continue;
    if (strncmp(name, CKPT_OPTIM_PREFIX, prefix) != 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "checkpoint %s: tensor '%s' in the file is no parameter or buffer of "
                           "the model",
                           path, name);
    }
    if (optimizer == NULL)
      continue;  // the model alone is wanted
    // A state the optimizer has not created yet (a fresh optimizer).
    const char *state = name + prefix;
    tsr_tensor *param = state_param(module, state);
    if (param == NULL) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "checkpoint %s: optimizer state '%s' in the file belongs to no "
                           "parameter of the model",
                           path, state);
    }
    TSR_RETURN_IF_ERROR(list_add(extra, "checkpoint_load", "", name, "optimizer state", param));
    extra->items[extra->count - 1].name = state;
    TSR_RETURN_IF_ERROR(
        entry_check(path, &extra->items[extra->count - 1], tsr_safetensors_entry_find(file, name)));
    int has = optimizer_has_state(optimizer, state, param);
    if (has < 0)
      return tsr_error_status();
    if (!has) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "checkpoint %s: optimizer state '%s' in the file does not exist in this "
                           "optimizer (another kind of optimizer?)",
                           path, state);
    }
  }
  if (optimizer != NULL) {
    const char *step = tsr_safetensors_metadata(file, CKPT_STEP_KEY);
    const char *lr = tsr_safetensors_metadata(file, CKPT_LR_KEY);
    if (step == NULL || lr == NULL) {
      return tsr_error_set(TSR_NOT_FOUND,
                           "checkpoint %s: metadata '%s' is missing (a checkpoint saved without an "
                           "optimizer?)",
                           path, step == NULL ? CKPT_STEP_KEY : CKPT_LR_KEY);
    }
    if (!tsr_ckpt_meta_step_parse(step, out_step)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "checkpoint %s: metadata '%s' is \"%s\", not a step count", path,
                           CKPT_STEP_KEY, step);
    }
    if (!tsr_ckpt_meta_lr_parse(lr, out_lr)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "checkpoint %s: metadata '%s' is \"%s\", not a learning rate", path,
                           CKPT_LR_KEY, lr);
    }
    // Absent from older checkpoints: one group, no schedule state.
    if (tsr_optim_meta_parse(optimizer, tsr_safetensors_metadata(file, TSR_OPTIM_GROUP_LRS_KEY),
                             tsr_safetensors_metadata(file, TSR_OPTIM_SCHEDULE_KEY),
                             out_meta) != TSR_OK) {
      return tsr_error_set(tsr_error_status(), "checkpoint %s: %s", path, tsr_error_message());
    }
  }
  // Read every tensor onto its device.
  ckpt_list *lists[2] = {list, extra};
  for (int l = 0; l < 2; ++l) {
    for (int32_t i = 0; i < lists[l]->count; ++i) {
      ckpt_item *item = &lists[l]->items[i];
      item->loaded = tsr_safetensors_tensor(file, item->file_name, tsr_tensor_device(item->tensor));
      if (item->loaded == NULL)
        return tsr_error_status();
    }
  }
  return TSR_OK;
}

tsr_status tsr_checkpoint_load(const char *path, tsr_module *module, tsr_optimizer *optimizer,
                               tsr_safetensors **out_file) {
  if (out_file != NULL)
    *out_file = NULL;
  if (path == NULL || module == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "checkpoint_load: %s is NULL",
                         path == NULL ? "path" : "module");
  }
  tsr_safetensors *file = NULL;
  tsr_status status = tsr_safetensors_open(path, &file);
  if (status != TSR_OK)
    return tsr_error_prefix("checkpoint_load");
  ckpt_list list = {NULL, 0}, extra = {NULL, 0};
  int previous = tsr_scope_suspend();
  int grad_mode = tsr_grad_mode_set(0);
  status = list_build("checkpoint_load", module, optimizer, &list);
  int64_t step = 0;
  double lr = 0;
  optim_meta meta = {0};
  if (status == TSR_OK) {
    status = load_prepare(file, module, optimizer, &list, &extra, &step, &lr, &meta);
  }
  // From here on the model changes.
  int changed = 0;
  for (int32_t i = 0; i < list.count && status == TSR_OK; ++i) {
    ckpt_item *item = &list.items[i];
    if (strncmp(item->file_name, CKPT_OPTIM_PREFIX, strlen(CKPT_OPTIM_PREFIX)) == 0) {
      status = tsr_optimizer_state_set(optimizer, item->name, item->loaded);
    } else {
      status = tsr_copy_(item->tensor, item->loaded);
    }
    changed += status == TSR_OK;
  }
  for (int32_t i = 0; i < extra.count && status == TSR_OK; ++i) {
    status = tsr_optimizer_state_set(optimizer, extra.items[i].name, extra.items[i].loaded);
    changed += status == TSR_OK;
  }
  if (status == TSR_OK && optimizer != NULL) {
    status = tsr_optimizer_step_count_set(optimizer, step);
    if (status == TSR_OK)
      status = tsr_optimizer_lr_set(optimizer, lr);
    if (status == TSR_OK)
      tsr_optim_meta_apply(optimizer, &meta);
  }
  tsr_optim_meta_free(&meta);
  if (status != TSR_OK && changed > 0) {
    tsr_error_set(status, "checkpoint %s: copying failed part way; the model is partly loaded: %s",
                  path, tsr_error_message());
  }
  tsr_grad_mode_set(grad_mode);
  tsr_scope_resume(previous);
  list_free(&extra);
  list_free(&list);
  if (status == TSR_OK && out_file != NULL) {
    *out_file = file;
  } else {
    tsr_safetensors_close(file);
  }
  return status;
}
