// Crash-safe file replacement. A reader of |path| sees the old file or the
// complete new one: the data reaches the disk (fsync) before the rename
// makes it visible, and the folder's fsync makes the rename itself durable.
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera/core_layer.h"

// Distinguishes the temporaries of threads of one process saving to the
// same path at once.
static atomic_uint_fast64_t tmp_counter;

static void atomic_file_clear(tsr_atomic_file *file) {
  free(file->path);
  free(file->tmp_path);
  file->path = NULL;
  file->tmp_path = NULL;
  file->fd = -1;
}

tsr_status tsr_atomic_file_open(const char *what, const char *path, tsr_atomic_file *out_file) {
  out_file->fd = -1;
  out_file->path = NULL;
  out_file->tmp_path = NULL;
  size_t n = strlen(path);
  if (n == 0)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: path is empty", what);
  size_t tmp_size = n + 64;
  out_file->path = malloc(n + 1);
  out_file->tmp_path = malloc(tmp_size);
  if (out_file->path == NULL || out_file->tmp_path == NULL) {
    atomic_file_clear(out_file);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s %s: no host memory", what, path);
  }
  memcpy(out_file->path, path, n + 1);
  unsigned long long seq = (unsigned long long)atomic_fetch_add(&tmp_counter, 1);
  snprintf(out_file->tmp_path, tmp_size, "%s.tmp.%ld.%llu", path, (long)getpid(), seq);
  // O_EXCL: a temporary left by a killed process with a recycled pid is
  // replaced rather than written through (it may be a link elsewhere).
  int fd = open(out_file->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST) {
    unlink(out_file->tmp_path);
    fd = open(out_file->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  if (fd < 0) {
    int err = errno;
    tsr_status status =
        tsr_error_set(err == ENOENT || err == ENOTDIR ? TSR_NOT_FOUND : TSR_UNAVAILABLE,
                      "%s %s: cannot create %s: %s", what, path, out_file->tmp_path, strerror(err));
    atomic_file_clear(out_file);
    return status;
  }
  out_file->fd = fd;
  return TSR_OK;
}

tsr_status tsr_atomic_file_write(const char *what, tsr_atomic_file *file, const void *data,
                                 size_t bytes) {
  const char *p = data;
  while (bytes > 0) {
    size_t chunk = bytes > ((size_t)1 << 30) ? ((size_t)1 << 30) : bytes;
    ssize_t w = write(file->fd, p, chunk);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return tsr_error_set(TSR_UNAVAILABLE, "%s %s: write failed: %s", what, file->path,
                           strerror(errno));
    }
    p += w;
    bytes -= (size_t)w;
  }
  return TSR_OK;
}

void tsr_atomic_file_abort(tsr_atomic_file *file) {
  if (file->fd >= 0)
    close(file->fd);
  if (file->tmp_path != NULL)
    unlink(file->tmp_path);
  atomic_file_clear(file);
}

tsr_status tsr_atomic_file_commit(const char *what, tsr_atomic_file *file) {
  tsr_status status = TSR_OK;
  if (fsync(file->fd) != 0) {
    status = tsr_error_set(TSR_UNAVAILABLE, "%s %s: fsync failed: %s", what, file->path,
                           strerror(errno));
  }
  int fd = file->fd;
  file->fd = -1;
  if (close(fd) != 0 && status == TSR_OK) {
    status = tsr_error_set(TSR_UNAVAILABLE, "%s %s: close failed: %s", what, file->path,
                           strerror(errno));
  }
  if (status == TSR_OK && rename(file->tmp_path, file->path) != 0) {
    status = tsr_error_set(TSR_UNAVAILABLE, "%s %s: rename from %s failed: %s", what, file->path,
                           file->tmp_path, strerror(errno));
  }
  if (status != TSR_OK) {
    tsr_atomic_file_abort(file);
    return status;
  }
  // The folder: everything before the last '/', or "." for a bare name.
  char *slash = strrchr(file->path, '/');
  const char *folder = ".";
  if (slash == file->path) {
    folder = "/";
  } else if (slash != NULL) {
    *slash = '\0';
    folder = file->path;
  }
  int dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0 || fsync(dir) != 0) {
    int err = errno;
    if (slash != NULL && slash != file->path)
      *slash = '/';
    status = tsr_error_set(TSR_UNAVAILABLE,
                           "%s %s: the file is written, but the folder's fsync failed: %s", what,
                           file->path, strerror(err));
  }
  if (dir >= 0)
    close(dir);
  atomic_file_clear(file);
  return status;
}
