// What the kit's files share; not installed.
#ifndef TESSERA_PLUGINS_KIT_KIT_INTERNAL_H_
#define TESSERA_PLUGINS_KIT_KIT_INTERNAL_H_

#include "tessera/plugin_kit.h"

// A plan keeps at most this many bytes of the op's attribute struct; every
// catalogue struct is smaller, and a longer one comes from a newer catalogue.
#define TSR_KIT_ATTRS_BYTES 256

// The attribute |field| of |type| at |attrs| as an int64_t, or |fallback|
// where the struct is absent or too short to hold it.
#define KIT_ATTR(type, attrs, field, fallback)                           \
  ((attrs) != NULL && TSR_ABI_COVERS((const type *)(attrs), type, field) \
       ? (int64_t)((const type *)(attrs))->field                         \
       : (int64_t)(fallback))

// The plugin's name, as given to tsr_kit_entry_begin.
const char *tsr_kit_name(void);

// The host address of byte 0 of a buffer of the kit's host-memory device, or
// NULL for NULL.
void *tsr_kit_buffer_data(tsr_plugin_buffer *buffer);
// The bytes a buffer was allocated with (0 for NULL).
uint64_t tsr_kit_buffer_bytes(const tsr_plugin_buffer *buffer);

#endif  // TESSERA_PLUGINS_KIT_KIT_INTERNAL_H_
