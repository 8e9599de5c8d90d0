// Settings read from the environment, parsed strictly: a value that is not
// entirely a number in range is a warning naming the variable, the value and
// the default used instead, never a silent half-parse (atoi("2x") is 2,
// atoi("4294967297") 1).
#ifndef TESSERA_CORE_ENV_H_
#define TESSERA_CORE_ENV_H_

#include <stddef.h>
#include <stdint.h>

// The integer in environment variable |name|, within [min, max]; |fallback|
// when it is unset or empty (silently) or malformed or out of range (with a
// warning through the log). Thread-safe as getenv is: call it while no thread
// changes the environment.
int64_t tsr_env_int(const char *name, int64_t min, int64_t max, int64_t fallback);

// A switch in |name|: "1" or "0" (also "on"/"off", "true"/"false", "yes"/"no",
// any case); |fallback| when unset or empty, or with a warning when it is
// anything else.
int tsr_env_flag(const char *name, int fallback);

// The path in |name|: NULL when it is unset or empty (silently), or with a
// warning when it holds |max_bytes| bytes or more, or a control character
// (a newline pasted into a setting). Points into the environment.
const char *tsr_env_path(const char *name, size_t max_bytes);

#endif  // TESSERA_CORE_ENV_H_
