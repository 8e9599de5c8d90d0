// NumPy files: .npy read into one tensor, .npz (stored or deflated zip)
// read whole into memory and validated by npy_parse.c before any tensor is
// made from it.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera/core_layer.h"
#include "file_read.h"
#include "npy_parse.h"
#include "tessera/tessera.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy I/O assumes little endian");

struct tsr_npz {
  char *path;
  tsr_npz_archive archive;
};


// A new tensor with |array|'s values (|u1| widened to int32; bool checked).
static tsr_tensor *array_tensor(const char *what, const char *path, const char *name,
                                const tsr_npy_array *array, tsr_device *device) {
  const void *values = array->data;
  int32_t *widened = NULL;
  if (array->u8) {
    widened = malloc((size_t)(array->numel ? array->numel : 1) * sizeof(int32_t));
    if (widened == NULL) {
      tsr_error_set(TSR_OUT_OF_MEMORY, "%s %s%s%s: no memory to widen uint8", what, path,
                    name ? ": " : "", name ? name : "");
      return NULL;
    }
    for (int64_t i = 0; i < array->numel; ++i) widened[i] = array->data[i];
    values = widened;
  } else if (array->dtype == TSR_BOOL) {
    for (int64_t i = 0; i < array->numel; ++i) {
      if (array->data[i] > 1) {
        tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s%s%s: bool element %lld is %u, not 0 or 1", what,
                      path, name ? ": " : "", name ? name : "", (long long)i, array->data[i]);
        return NULL;
      }
    }
  }
  tsr_tensor *t = tsr_tensor_from_host(device, array->dtype, array->rank, array->sizes, values);
  free(widened);
  if (t == NULL) {
    tsr_error_set(tsr_error_status(), "%s %s%s%s: %s", what, path, name ? ": " : "",
                  name ? name : "", tsr_error_message());
  }
  return t;
}

tsr_status tsr_npy_load(const char *path, tsr_device *device, tsr_tensor **out_tensor) {
  const char *what = "npy_load";
  if (out_tensor == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_tensor is NULL", what);
  *out_tensor = NULL;
  if (path == NULL || device == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                         path == NULL ? "path" : "device");
  uint8_t *data = NULL;
  size_t size = 0;
  TSR_RETURN_IF_ERROR(tsr_io_file_read(what, path, &data, &size));
  tsr_npy_array array;
  char error[512];
  if (tsr_npy_parse(data, size, &array, error, sizeof(error)) != 0) {
    free(data);
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: %s", what, path, error);
  }
  tsr_tensor *t = array_tensor(what, path, NULL, &array, device);
  free(data);
  if (t == NULL)
    return tsr_error_status();
  *out_tensor = t;
  return TSR_OK;
}

tsr_status tsr_npz_open(const char *path, tsr_npz **out_file) {
  const char *what = "npz_open";
  if (out_file == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_file is NULL", what);
  *out_file = NULL;
  if (path == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: path is NULL", what);
  uint8_t *data = NULL;
  size_t size = 0;
  TSR_RETURN_IF_ERROR(tsr_io_file_read(what, path, &data, &size));
  tsr_npz *file = calloc(1, sizeof(*file));
  char *path_copy = strdup(path);
  if (file == NULL || path_copy == NULL) {
    free(data);
    free(file);
    free(path_copy);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s %s: no host memory", what, path);
  }
  char error[512];
  int rc = tsr_npz_parse(data, size, &file->archive, error, sizeof(error));
  free(data);
  if (rc != 0) {
    free(file);
    free(path_copy);
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: %s", what, path, error);
  }
  file->path = path_copy;
  *out_file = file;
  return TSR_OK;
}

void tsr_npz_close(tsr_npz *file) {
  if (file == NULL)
    return;
  tsr_npz_archive_free(&file->archive);
  free(file->path);
  free(file);
}

int32_t tsr_npz_entry_count(const tsr_npz *file) {
  if (file == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "npz_entry_count: file is NULL");
    return 0;
  }
  return file->archive.count;
}

tsr_status tsr_npz_entry_get(const tsr_npz *file, int32_t index, const char **out_name,
                             tsr_dtype_t *out_dtype, int32_t *out_rank, const int64_t **out_sizes) {
  if (file == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "npz_entry_get: file is NULL");
  if (index < 0 || index >= file->archive.count) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "npz_entry_get %s: index %d is outside [0, %d)",
                         file->path, index, file->archive.count);
  }
  const tsr_npz_member *m = &file->archive.members[index];
  if (out_name != NULL)
    *out_name = m->name;
  if (out_dtype != NULL)
    *out_dtype = m->array.dtype;
  if (out_rank != NULL)
    *out_rank = m->array.rank;
  if (out_sizes != NULL)
    *out_sizes = m->array.sizes;
  return TSR_OK;
}

tsr_tensor *tsr_npz_tensor(const tsr_npz *file, const char *name, tsr_device *device) {
  if (file == NULL || name == NULL || device == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "npz_tensor: %s is NULL",
                  file == NULL   ? "file"
                  : name == NULL ? "name"
                                 : "device");
    return NULL;
  }
  for (int32_t i = 0; i < file->archive.count; ++i) {
    const tsr_npz_member *m = &file->archive.members[i];
    if (strcmp(m->name, name) == 0)
      return array_tensor("npz", file->path, name, &m->array, device);
  }
  tsr_error_set(TSR_NOT_FOUND, "npz %s: no array '%s'", file->path, name);
  return NULL;
}
