// tsr-train's chart: training loss (blue, left axis) and test accuracy
// (orange, right axis, 0-100%) per epoch, as a 640x400 PNG.
#ifndef TESSERA_TOOLS_TSR_TRAIN_PLOT_H_
#define TESSERA_TOOLS_TSR_TRAIN_PLOT_H_

#include <stddef.h>

// Writes the chart of |count| epochs to |path|. Returns 1, or 0 with the
// reason in |error|.
int tsr_train_plot_write(const char *path, int count, const double *loss, const double *accuracy,
                         char *error, size_t error_size);

#endif  // TESSERA_TOOLS_TSR_TRAIN_PLOT_H_
