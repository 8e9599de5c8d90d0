// Internal: crash-safe file replacement (write a temporary, fsync, rename
// over the target, fsync the folder).
#ifndef TESSERA_SDK_IO_ATOMIC_FILE_H_
#define TESSERA_SDK_IO_ATOMIC_FILE_H_

#include <stddef.h>

#include "tessera/tessera.h"

typedef struct tsr_atomic_file {
  int fd;
  char *path;      // the target, owned copy
  char *tmp_path;  // "<path>.tmp.<pid>.<n>", owned
} tsr_atomic_file;

// Creates the temporary beside |path|. Errors name |what| and |path|.
// Thread-safe (each call gets its own temporary name).
tsr_status tsr_atomic_file_open(const char *what, const char *path, tsr_atomic_file *out_file);
// Writes all of |data|, retrying short writes and EINTR.
tsr_status tsr_atomic_file_write(const char *what, tsr_atomic_file *file, const void *data,
                                 size_t bytes);
// fsyncs, closes and renames the temporary over the target, then fsyncs the
// folder. On failure the temporary is removed and the target untouched
// (unless only the folder fsync failed: the new file is then in place).
// Frees |file|'s strings either way.
tsr_status tsr_atomic_file_commit(const char *what, tsr_atomic_file *file);
// Closes and removes the temporary; the target is untouched.
void tsr_atomic_file_abort(tsr_atomic_file *file);

#endif  // TESSERA_SDK_IO_ATOMIC_FILE_H_
