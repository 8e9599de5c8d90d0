// Reading an outside file whole, the way every file parser of the SDK
// starts (safetensors, NumPy).
#include "file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera/core_layer.h"

tsr_status tsr_io_file_read(const char *what, const char *path, uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return tsr_error_set(err == ENOENT ? TSR_NOT_FOUND : TSR_UNAVAILABLE, "%s %s: cannot open: %s",
                         what, path, strerror(err));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return tsr_error_set(TSR_UNAVAILABLE, "%s %s: cannot stat: %s", what, path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s %s: %s", what, path,
                         S_ISDIR(st.st_mode)    ? "is a folder, not a file"
                         : S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
                                                : "is not a regular file");
  }
  size_t size = (size_t)st.st_size;
  uint8_t *data = malloc(size ? size : 1);
  if (data == NULL) {
    close(fd);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s %s: no host memory for %zu bytes", what, path,
                         size);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t r = read(fd, data + got, size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  int read_errno = errno;
  close(fd);
  if (got != size) {
    free(data);
    return tsr_error_set(TSR_UNAVAILABLE, "%s %s: read %zu of %zu bytes: %s", what, path, got, size,
                         got < size ? strerror(read_errno) : "the file changed");
  }
  *out = data;
  *out_size = size;
  return TSR_OK;
}
