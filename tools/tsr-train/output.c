// Output files of tsr-train (output.h).
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t mode) {
  return S_ISDIR(mode)    ? "a folder"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

FILE *tsr_train_output_create(const char *path, char *error, size_t error_size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    snprintf(error, error_size, "%s: cannot create: %s", path,
             errno == ENXIO ? "a FIFO with no reader" : strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(error, error_size, "%s: %s, not a regular file", path, kind_of(st.st_mode));
    close(fd);
    return NULL;
  }
  // Back to blocking writes: O_NONBLOCK only guarded the open.
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "wb");
  if (f == NULL) {
    snprintf(error, error_size, "%s: %s", path, strerror(errno));
    close(fd);
  }
  return f;
}

int tsr_train_output_check(const char *path, char *error, size_t error_size) {
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode) && stat(path, &st) != 0) {
      snprintf(error, error_size, "%s: a link that leads nowhere (%s)", path,
               errno == ELOOP ? "a symlink loop" : strerror(errno));
      return 1;
    }
    if (!S_ISREG(st.st_mode)) {
      snprintf(error, error_size, "%s: %s, not a regular file", path, kind_of(st.st_mode));
      return 1;
    }
  }
  char *copy = strdup(path);
  if (copy == NULL) {
    snprintf(error, error_size, "%s: out of memory", path);
    return 1;
  }
  const char *folder = dirname(copy);
  int ok = access(folder, W_OK | X_OK) == 0;
  if (!ok) snprintf(error, error_size, "%s: its folder %s is not writable: %s", path, folder, strerror(errno));
  free(copy);
  return ok ? 0 : 1;
}
