// Files tsr-train writes (metrics, plot) and the checks made on the paths it
// is given before training starts.
#ifndef TESSERA_TOOLS_TSR_TRAIN_OUTPUT_H_
#define TESSERA_TOOLS_TSR_TRAIN_OUTPUT_H_

#include <stddef.h>
#include <stdio.h>

// Creates or truncates the regular file |path| for writing ("wb"). Opened
// without blocking, so a FIFO without a reader fails at once instead of
// hanging, and anything but a regular file is refused. NULL with the reason
// in |error| otherwise. The caller fcloses.
FILE *tsr_train_output_create(const char *path, char *error, size_t error_size);

// 0 when |path| can be written later: it is absent or a regular file, and
// its folder exists and is writable; otherwise 1 with the reason in |error|.
// Writes nothing.
int tsr_train_output_check(const char *path, char *error, size_t error_size);

#endif  // TESSERA_TOOLS_TSR_TRAIN_OUTPUT_H_
