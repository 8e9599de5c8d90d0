// Diagnostic lines on stderr: "tessera: <level>: <message>\n".
//
// The threshold comes from TSR_LOG_LEVEL (debug|info|warning|error|off,
// case-insensitive; default info), read once on first use. Each line reaches
// stderr in one write(2), so lines from several threads never interleave.
// Plugins log through the host table's log entry, which lands here.
#ifndef TESSERA_CORE_LOG_H_
#define TESSERA_CORE_LOG_H_

#include "tessera/abi.h"

// Threshold above every level: nothing is logged.
#define TSR_LOG_OFF 4

// Formats and writes one line at |level| if the threshold admits it. Levels
// outside DEBUG..ERROR are clamped into it. Thread-safe.
void tsr_log(tsr_log_level_t level, const char *format, ...) TSR_ABI_PRINTF(2, 3);

// Writes |message| (already formatted; NULL counts as "") as one line at
// |level|. Thread-safe.
void tsr_log_message(tsr_log_level_t level, const char *message);

// Nonzero when a line at |level| would be written. Use it to skip building a
// message nobody will read. Thread-safe.
int tsr_log_enabled(tsr_log_level_t level);

// Sets the threshold from |spec| as TSR_LOG_LEVEL would (NULL or "" means
// the default). An unknown value keeps the default and logs a warning that
// names it. Used by the first log call and by tests. Thread-safe.
void tsr_log_configure(const char *spec);

#endif  // TESSERA_CORE_LOG_H_
