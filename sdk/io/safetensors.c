// safetensors files: writing (crash-safe, deterministic) and reading (the
// whole file into memory, validated by safetensors_parse.c before any
// tensor is made from it).
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "tessera/core_layer.h"
#include "file_read.h"
#include "io_internal.h"
#include "tessera/tessera.h"
#include "safetensors_parse.h"

// The format is little endian; so is every host Tessera builds for. A
// big-endian port would need a byte swap on both paths.
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes little endian");

struct tsr_safetensors {
  char *path;
  uint8_t *data;
  size_t size;
  tsr_st_header header;
};

// --- a growable text buffer ----------------------------------------------------

typedef struct st_text {
  char *data;
  size_t size;
  size_t capacity;
  int failed;
} st_text;

static void text_append(st_text *t, const char *s, size_t n) {
  if (t->failed)
    return;
  if (t->size + n + 1 > t->capacity) {
    size_t grown = t->capacity ? t->capacity : 256;
    while (grown < t->size + n + 1) grown *= 2;
    char *data = realloc(t->data, grown);
    if (data == NULL) {
      t->failed = 1;
      return;
    }
    t->data = data;
    t->capacity = grown;
  }
  memcpy(t->data + t->size, s, n);
  t->size += n;
  t->data[t->size] = '\0';
}

static void text_printf(st_text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(st_text *t, const char *format, ...) {
  char buffer[128];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (n < 0 || (size_t)n >= sizeof(buffer)) {
    t->failed = 1;
    return;
  }
  text_append(t, buffer, (size_t)n);
}

// A JSON string literal of |s| (valid UTF-8, checked by the caller).
static void text_json_string(st_text *t, const char *s) {
  text_append(t, "\"", 1);
  for (const char *p = s; *p != '\0'; ++p) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\') {
      char escaped[2] = {'\\', (char)c};
      text_append(t, escaped, 2);
    } else if (c < 0x20) {
      text_printf(t, "\\u%04x", c);
    } else {
      text_append(t, p, 1);
    }
  }
  text_append(t, "\"", 1);
}

// --- save ------------------------------------------------------------------------

static int string_ok(const char *s) {
  return tsr_st_utf8_valid((const uint8_t *)s, strlen(s));
}

static tsr_status save_check(const char *path, int32_t count, const tsr_named_tensor *tensors,
                             int32_t metadata_count, const char *const *metadata_keys,
                             const char *const *metadata_values) {
  const char *what = "safetensors_save";
  if (count < 0 || metadata_count < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: %s is %d; it must be >= 0", what, path,
                         count < 0 ? "count" : "metadata_count",
                         count < 0 ? count : metadata_count);
  }
  if (count > 0 && tensors == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: tensors is NULL with count %d", what, path,
                         count);
  }
  if (metadata_count > 0 && (metadata_keys == NULL || metadata_values == NULL)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: metadata_%s is NULL with metadata_count %d",
                         what, path, metadata_keys == NULL ? "keys" : "values", metadata_count);
  }
  for (int32_t i = 0; i < count; ++i) {
    const char *name = tensors[i].name;
    if (name == NULL || tensors[i].tensor == NULL) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: tensors[%d].%s is NULL", what, path, i,
                           name == NULL ? "name" : "tensor");
    }
    if (!string_ok(name)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: tensors[%d].name is not valid UTF-8", what,
                           path, i);
    }
    if (strcmp(name, "__metadata__") == 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s %s: tensors[%d].name is \"__metadata__\", which the format reserves",
                           what, path, i);
    }
    if (tsr_st_dtype_name(tsr_tensor_dtype(tensors[i].tensor)) == NULL) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: tensor '%s' has unsupported dtype %d",
                           what, path, name, (int)tsr_tensor_dtype(tensors[i].tensor));
    }
    for (int32_t j = 0; j < i; ++j) {
      if (strcmp(tensors[j].name, name) == 0) {
        return tsr_error_set(TSR_INVALID_ARGUMENT,
                             "%s %s: tensor name '%s' is given twice (tensors[%d] and [%d])", what,
                             path, name, j, i);
      }
    }
  }
  for (int32_t i = 0; i < metadata_count; ++i) {
    const char *key = metadata_keys[i], *value = metadata_values[i];
    if (key == NULL || value == NULL) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: metadata_%s[%d] is NULL", what, path,
                           key == NULL ? "keys" : "values", i);
    }
    if (!string_ok(key) || !string_ok(value)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: metadata_%s[%d] is not valid UTF-8", what,
                           path, string_ok(key) ? "values" : "keys", i);
    }
    for (int32_t j = 0; j < i; ++j) {
      if (strcmp(metadata_keys[j], key) == 0) {
        return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: metadata key '%s' is given twice", what,
                             path, key);
      }
    }
  }
  return TSR_OK;
}

static uint64_t tensor_bytes(const tsr_tensor *t) {
  return (uint64_t)tsr_tensor_numel(t) * tsr_dtype_size(tsr_tensor_dtype(t));
}

// The JSON header, padded with spaces so that the data starts 8-aligned.
static tsr_status header_build(const char *path, int32_t count, const tsr_named_tensor *tensors,
                               int32_t metadata_count, const char *const *keys,
                               const char *const *values, st_text *out) {
  st_text t = {0};
  text_append(&t, "{", 1);
  int first = 1;
  if (metadata_count > 0) {
    text_append(&t, "\"__metadata__\":{", 16);
    for (int32_t i = 0; i < metadata_count; ++i) {
      if (i > 0)
        text_append(&t, ",", 1);
      text_json_string(&t, keys[i]);
      text_append(&t, ":", 1);
      text_json_string(&t, values[i]);
    }
    text_append(&t, "}", 1);
    first = 0;
  }
  uint64_t at = 0;
  for (int32_t i = 0; i < count; ++i) {
    const tsr_tensor *x = tensors[i].tensor;
    if (!first)
      text_append(&t, ",", 1);
    first = 0;
    text_json_string(&t, tensors[i].name);
    text_printf(&t, ":{\"dtype\":\"%s\",\"shape\":[", tsr_st_dtype_name(tsr_tensor_dtype(x)));
    for (int32_t d = 0; d < tsr_tensor_rank(x); ++d) {
      text_printf(&t, "%s%lld", d ? "," : "", (long long)tsr_tensor_sizes(x)[d]);
    }
    uint64_t bytes = tensor_bytes(x);
    text_printf(&t, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                (unsigned long long)(at + bytes));
    at += bytes;
  }
  text_append(&t, "}", 1);
  while (t.size % 8 != 0) text_append(&t, " ", 1);
  if (t.failed) {
    free(t.data);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "safetensors_save %s: no host memory for the header",
                         path);
  }
  *out = t;
  return TSR_OK;
}

tsr_status tsr_safetensors_save(const char *path, int32_t count, const tsr_named_tensor *tensors,
                                int32_t metadata_count, const char *const *metadata_keys,
                                const char *const *metadata_values) {
  if (path == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "safetensors_save: path is NULL");
  TSR_RETURN_IF_ERROR(
      save_check(path, count, tensors, metadata_count, metadata_keys, metadata_values));
  st_text header = {0};
  TSR_RETURN_IF_ERROR(
      header_build(path, count, tensors, metadata_count, metadata_keys, metadata_values, &header));
  uint64_t largest = 0;
  for (int32_t i = 0; i < count; ++i) {
    uint64_t bytes = tensor_bytes(tensors[i].tensor);
    if (bytes > largest)
      largest = bytes;
  }
  void *staging = largest ? malloc(largest) : NULL;
  if (largest && staging == NULL) {
    free(header.data);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "safetensors_save %s: no host memory for %llu bytes",
                         path, (unsigned long long)largest);
  }
  tsr_atomic_file file;
  tsr_status status = tsr_atomic_file_open("safetensors_save", path, &file);
  if (status == TSR_OK) {
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = (uint8_t)((uint64_t)header.size >> (8 * i));
    status = tsr_atomic_file_write("safetensors_save", &file, length, 8);
    if (status == TSR_OK) {
      status = tsr_atomic_file_write("safetensors_save", &file, header.data, header.size);
    }
    // Strided views are packed by to_host; grad mode off so that packing a
    // parameter records nothing on the tape.
    int grad_mode = tsr_grad_mode_set(0);
    for (int32_t i = 0; i < count && status == TSR_OK; ++i) {
      uint64_t bytes = tensor_bytes(tensors[i].tensor);
      status = tsr_tensor_to_host(tensors[i].tensor, staging, (size_t)bytes);
      if (status != TSR_OK) {
        tsr_error_set(status, "safetensors_save %s: tensor '%s': %s", path, tensors[i].name,
                      tsr_error_message());
      } else {
        status = tsr_atomic_file_write("safetensors_save", &file, staging, (size_t)bytes);
      }
    }
    tsr_grad_mode_set(grad_mode);
    if (status == TSR_OK) {
      status = tsr_atomic_file_commit("safetensors_save", &file);
    } else {
      tsr_atomic_file_abort(&file);
    }
  }
  free(staging);
  free(header.data);
  return status;
}

// --- load ------------------------------------------------------------------------

tsr_status tsr_safetensors_open(const char *path, tsr_safetensors **out_file) {
  if (out_file != NULL)
    *out_file = NULL;
  if (path == NULL || out_file == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "safetensors_open: %s is NULL",
                         path == NULL ? "path" : "out_file");
  }
  uint8_t *data = NULL;
  size_t size = 0;
  tsr_status status = tsr_io_file_read("safetensors", path, &data, &size);
  if (status != TSR_OK)
    return status;
  tsr_safetensors *file = calloc(1, sizeof(*file));
  char *path_copy = strdup(path);
  if (file == NULL || path_copy == NULL) {
    free(file);
    free(data);
    free(path_copy);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "safetensors %s: no host memory", path);
  }
  char error[512];
  if (tsr_st_header_parse(data, size, &file->header, error, sizeof(error)) != 0) {
    free(file);
    free(data);
    free(path_copy);
    return tsr_error_set(TSR_INVALID_ARGUMENT, "safetensors %s: %s", path, error);
  }
  file->path = path_copy;
  file->data = data;
  file->size = size;
  *out_file = file;
  return TSR_OK;
}

void tsr_safetensors_close(tsr_safetensors *file) {
  if (file == NULL)
    return;
  tsr_st_header_free(&file->header);
  free(file->data);
  free(file->path);
  free(file);
}

int32_t tsr_safetensors_count(const tsr_safetensors *file) {
  if (file == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "safetensors_count: file is NULL");
    return 0;
  }
  return file->header.count;
}

tsr_status tsr_safetensors_entry_get(const tsr_safetensors *file, int32_t index,
                                     const char **out_name, tsr_dtype_t *out_dtype,
                                     int32_t *out_rank, const int64_t **out_sizes) {
  if (file == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "safetensors_entry_get: file is NULL");
  if (index < 0 || index >= file->header.count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "safetensors_entry_get %s: index %d is outside [0, %d)", file->path, index,
                         file->header.count);
  }
  const tsr_st_entry *e = &file->header.entries[index];
  if (out_name != NULL)
    *out_name = e->name;
  if (out_dtype != NULL)
    *out_dtype = e->dtype;
  if (out_rank != NULL)
    *out_rank = e->rank;
  if (out_sizes != NULL)
    *out_sizes = e->sizes;
  return TSR_OK;
}

const tsr_st_entry *tsr_safetensors_entry_find(const tsr_safetensors *file, const char *name) {
  for (int32_t i = 0; i < file->header.count; ++i) {
    if (strcmp(file->header.entries[i].name, name) == 0)
      return &file->header.entries[i];
  }
  return NULL;
}

const char *tsr_safetensors_path(const tsr_safetensors *file) {
  return file->path;
}

tsr_tensor *tsr_safetensors_tensor(const tsr_safetensors *file, const char *name,
                                   tsr_device *device) {
  if (file == NULL || name == NULL || device == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "safetensors_tensor: %s is NULL",
                  file == NULL   ? "file"
                  : name == NULL ? "name"
                                 : "device");
    return NULL;
  }
  const tsr_st_entry *e = tsr_safetensors_entry_find(file, name);
  if (e == NULL) {
    tsr_error_set(TSR_NOT_FOUND, "safetensors %s: no tensor '%s'", file->path, name);
    return NULL;
  }
  const uint8_t *data = file->data + file->header.data_start + e->begin;
  if (e->dtype == TSR_BOOL) {
    // Tessera's bool is 0 or 1; any other byte would be a value no op expects.
    for (uint64_t i = 0; i < e->end - e->begin; ++i) {
      if (data[i] > 1) {
        tsr_error_set(TSR_INVALID_ARGUMENT,
                      "safetensors %s: tensor '%s': BOOL element %llu is %u, not 0 or 1",
                      file->path, name, (unsigned long long)i, data[i]);
        return NULL;
      }
    }
  }
  tsr_tensor *t = tsr_tensor_from_host(device, e->dtype, e->rank, e->sizes, data);
  if (t == NULL) {
    tsr_error_set(tsr_error_status(), "safetensors %s: tensor '%s': %s", file->path, name,
                  tsr_error_message());
  }
  return t;
}

const char *tsr_safetensors_metadata(const tsr_safetensors *file, const char *key) {
  if (file == NULL || key == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "safetensors_metadata: %s is NULL",
                  file == NULL ? "file" : "key");
    return NULL;
  }
  for (int32_t i = 0; i < file->header.metadata_count; ++i) {
    if (strcmp(file->header.metadata_keys[i], key) == 0)
      return file->header.metadata_values[i];
  }
  return NULL;
}
