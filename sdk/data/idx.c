// The IDX reader: a pair of files (images and labels, raw or gzip) read
// whole into host memory as one dataset.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_internal.h"
#include "tessera/core_layer.h"
#include "idx_parse.h"

void tsr_idx_options_init(tsr_idx_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->mean = 0.0;
  options->std = 1.0;
}

// Reads the whole file at |path| into a new malloc'd buffer.
static tsr_status file_read(const char *what, const char *path, uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  // Non-blocking: a FIFO (or a device) answers at once instead of hanging
  // here, and the check below refuses it.
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) {
      return tsr_error_set(TSR_NOT_FOUND, "%s: '%s': no such file", what, path);
    }
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: '%s': cannot open (errno %d%s)", what, path, e,
                         e == EACCES ? ", permission denied" : "");
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: '%s': not a regular file%s", what, path,
                         S_ISFIFO(st.st_mode) ? " (a FIFO)" : "");
  }
  size_t size = (size_t)st.st_size;
  uint8_t *buf = malloc(size > 0 ? size : 1);
  if (buf == NULL) {
    close(fd);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: '%s': cannot allocate %zu bytes", what, path,
                         size);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, buf + got, size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : 0;
      free(buf);
      close(fd);
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: '%s': read failed after %zu of %zu bytes (errno %d)", what, path,
                           got, size, e);
    }
    got += (size_t)n;
  }
  close(fd);
  *out = buf;
  *out_size = size;
  return TSR_OK;
}

static tsr_status idx_file_load(const char *what, const char *path, uint32_t magic,
                                tsr_idx_array *out) {
  uint8_t *bytes = NULL;
  size_t size = 0;
  TSR_RETURN_IF_ERROR(file_read(what, path, &bytes, &size));
  char message[512];
  tsr_status status = tsr_idx_parse(path, bytes, size, magic, out, message, sizeof(message));
  if (status != TSR_OK)
    return tsr_error_set(status, "%s: %s", what, message);
  return TSR_OK;
}

static tsr_status options_read(const char *what, const tsr_idx_options *given,
                               tsr_idx_options *out) {
  tsr_idx_options_init(out);
  if (given != NULL) {
    if (given->struct_size < sizeof(size_t)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "%s: options->struct_size is %zu; set it with tsr_idx_options_init",
                           what, given->struct_size);
    }
    size_t n = given->struct_size < sizeof(*out) ? given->struct_size : sizeof(*out);
    memcpy(out, given, n);
    out->struct_size = sizeof(*out);
  }
  if (!(out->std > 0) || !isfinite(out->std)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: options->std is %g; it must be positive and finite", what, out->std);
  }
  if (!isfinite(out->mean)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: options->mean is %g; it must be finite", what,
                         out->mean);
  }
  if (out->limit < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: options->limit is %lld; it must be >= 0", what,
                         (long long)out->limit);
  }
  if (out->flatten > 1) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: options->flatten is %u; it must be 0 or 1",
                         what, out->flatten);
  }
  return TSR_OK;
}

tsr_status tsr_dataset_idx_open(const char *images_path, const char *labels_path,
                                const tsr_idx_options *options, tsr_dataset **out_dataset) {
  const char *what = "dataset_idx_open";
  if (out_dataset == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_dataset is NULL", what);
  }
  *out_dataset = NULL;
  if (images_path == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: images_path is NULL", what);
  }
  if (labels_path == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: labels_path is NULL", what);
  }
  tsr_idx_options o;
  TSR_RETURN_IF_ERROR(options_read(what, options, &o));

  tsr_idx_array images, labels;
  memset(&labels, 0, sizeof(labels));
  TSR_RETURN_IF_ERROR(idx_file_load(what, images_path, TSR_IDX_MAGIC_IMAGES, &images));
  tsr_status status = idx_file_load(what, labels_path, TSR_IDX_MAGIC_LABELS, &labels);
  if (status != TSR_OK)
    goto fail;
  if (images.dims[0] != labels.dims[0]) {
    status = tsr_error_set(
        TSR_INVALID_ARGUMENT, "%s: counts differ: '%s' holds %lld images, '%s' holds %lld labels",
        what, images_path, (long long)images.dims[0], labels_path, (long long)labels.dims[0]);
    goto fail;
  }
  tsr_dataset *dataset = calloc(1, sizeof(*dataset));
  if (dataset == NULL) {
    status = tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate the dataset", what);
    goto fail;
  }
  int64_t count = images.dims[0];
  if (o.limit > 0 && o.limit < count)
    count = o.limit;
  for (int64_t i = 0; o.num_classes > 0 && i < count; ++i) {
    if (labels.data[i] >= o.num_classes) {
      status = tsr_error_set(TSR_INVALID_ARGUMENT,
                             "%s: '%s': label %u of example %lld is not below num_classes %u", what,
                             labels_path, (unsigned)labels.data[i], (long long)i, o.num_classes);
      free(dataset);
      goto fail;
    }
  }
  dataset->kind = TSR_DATASET_IDX;
  dataset->count = count;
  if (o.flatten) {
    dataset->rank = 1;
    dataset->sizes[0] = images.dims[1] * images.dims[2];
  } else {
    dataset->rank = 3;
    dataset->sizes[0] = 1;
    dataset->sizes[1] = images.dims[1];
    dataset->sizes[2] = images.dims[2];
  }
  dataset->numel = (int64_t)images.item_bytes;
  // The whole files stay in memory (they are small next to float features);
  // examples past |limit| are simply never read.
  dataset->pixel_buffer = images.buffer;
  dataset->pixels = images.data;
  dataset->label_buffer = labels.buffer;
  dataset->labels = labels.data;
  for (int p = 0; p < 256; ++p) {
    dataset->table[p] = (float)(((double)p / 255.0 - o.mean) / o.std);
  }
  *out_dataset = dataset;
  return TSR_OK;

fail:
  tsr_idx_array_free(&images);
  tsr_idx_array_free(&labels);
  return status;
}

// "<dir>/<stem>" when it exists, else "<dir>/<stem>.gz" when that exists;
// NULL (with the error set, naming both) when neither does.
static char *mnist_path(const char *what, const char *dir, const char *stem) {
  size_t n = strlen(dir) + strlen(stem) + 8;
  char *path = malloc(n);
  if (path == NULL) {
    tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate a path", what);
    return NULL;
  }
  snprintf(path, n, "%s/%s", dir, stem);
  if (access(path, F_OK) == 0)
    return path;
  snprintf(path, n, "%s/%s.gz", dir, stem);
  if (access(path, F_OK) == 0)
    return path;
  tsr_error_set(TSR_NOT_FOUND, "%s: neither '%s/%s' nor '%s' exists", what, dir, stem, path);
  free(path);
  return NULL;
}

tsr_status tsr_dataset_mnist_open(const char *dir, const char *split,
                                  const tsr_idx_options *options, tsr_dataset **out_dataset) {
  const char *what = "dataset_mnist_open";
  if (out_dataset == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: out_dataset is NULL", what);
  }
  *out_dataset = NULL;
  if (dir == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: dir is NULL", what);
  if (split == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: split is NULL", what);
  const char *prefix;
  if (strcmp(split, "train") == 0) {
    prefix = "train";
  } else if (strcmp(split, "test") == 0) {
    prefix = "t10k";
  } else {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: split is '%s'; expected 'train' or 'test'",
                         what, split);
  }
  char images_stem[64], labels_stem[64];
  snprintf(images_stem, sizeof(images_stem), "%s-images-idx3-ubyte", prefix);
  snprintf(labels_stem, sizeof(labels_stem), "%s-labels-idx1-ubyte", prefix);
  char *images = mnist_path(what, dir, images_stem);
  if (images == NULL)
    return tsr_error_status();
  char *labels = mnist_path(what, dir, labels_stem);
  if (labels == NULL) {
    free(images);
    return tsr_error_status();
  }
  tsr_status status = tsr_dataset_idx_open(images, labels, options, out_dataset);
  free(images);
  free(labels);
  return status;
}
