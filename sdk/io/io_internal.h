// Internal: what checkpoint.c needs of an open safetensors file.
#ifndef TESSERA_SDK_IO_IO_INTERNAL_H_
#define TESSERA_SDK_IO_IO_INTERNAL_H_

#include "safetensors_parse.h"
#include "tessera/tessera.h"

// The entry called |name|, or NULL. Owned by |file|. Thread-safe.
const tsr_st_entry *tsr_safetensors_entry_find(const tsr_safetensors *file, const char *name);
// The path |file| was opened from. Owned by |file|. Thread-safe.
const char *tsr_safetensors_path(const tsr_safetensors *file);

#endif  // TESSERA_SDK_IO_IO_INTERNAL_H_
