// Reading an outside file whole for a parser.
#ifndef TESSERA_SDK_IO_FILE_READ_H_
#define TESSERA_SDK_IO_FILE_READ_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/core.h"

// Reads the regular file at |path| whole into a new malloc'd buffer the
// caller frees (*out, *out_size). A FIFO, device or folder is refused without
// blocking (O_NONBLOCK, then a regular-file check). Errors name |what| and
// |path|: TSR_NOT_FOUND, TSR_INVALID_ARGUMENT (not a regular file),
// TSR_OUT_OF_MEMORY, TSR_UNAVAILABLE (cannot open, stat or read). Thread-safe.
tsr_status tsr_io_file_read(const char *what, const char *path, uint8_t **out, size_t *out_size);

#endif  // TESSERA_SDK_IO_FILE_READ_H_
