// Fuzz target for the engine cache's file parser (core/engine_cache_file.c):
// the input is a file in the engine cache folder, which anyone able to write
// there may have left. Whatever the bytes, the parse must return a status
// without reading outside them; a refusal says why and leaves no table; a
// file accepted holds keys and entries within the format's bounds, in
// order, and writes back to the very same bytes.
//
// The parser is compiled into this target, so the fuzzer's coverage and
// sanitizers see it.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine_cache_file.c"

static void parse_one(const uint8_t *data, size_t size) {
  tsr_engine_cache_table table;
  char why[256];
  tsr_status status = tsr_engine_cache_file_parse(data, size, &table, why, sizeof(why));
  if (status != TSR_OK) {
    // Every refusal says why and leaves nothing to free.
    if (why[0] == '\0' || table.plugin_key != NULL || table.entries != NULL)
      abort();
    return;
  }
  if (!tsr_engine_cache_key_valid(table.plugin_key, TSR_ENGINE_CACHE_FILE_KEY_MAX) ||
      !tsr_engine_cache_key_valid(table.machine_key, TSR_ENGINE_CACHE_FILE_KEY_MAX) ||
      table.count > TSR_ENGINE_CACHE_ENTRIES_MAX) {
    abort();
  }
  for (uint32_t i = 0; i < table.count; ++i) {
    const tsr_engine_cache_entry *e = &table.entries[i];
    if (!tsr_engine_cache_key_valid(e->class_key, TSR_ENGINE_CACHE_CLASS_KEY_MAX) ||
        e->bytes > TSR_ENGINE_CACHE_VALUE_MAX ||
        (i > 0 && strcmp(table.entries[i - 1].class_key, e->class_key) >= 0) ||
        tsr_engine_cache_table_find(&table, e->class_key) != e) {
      abort();
    }
  }
  uint8_t *written = NULL;
  size_t written_size = 0;
  if (tsr_engine_cache_file_serialize(&table, &written, &written_size) != TSR_OK)
    abort();
  if (written_size != size || memcmp(written, data, size) != 0)
    abort();
  free(written);
  tsr_engine_cache_table_clear(&table);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  parse_one(data, size);
  // Again with the checksum made right, so that the fuzzer reaches the
  // structure behind it (a hostile file carries a right checksum too).
  if (size >= 8 && size <= 1u << 20) {
    uint8_t *fixed = malloc(size);
    if (fixed == NULL)
      abort();
    memcpy(fixed, data, size);
    const uint64_t sum = tsr_engine_cache_fnv1a(TSR_FNV1A_64_INIT, fixed, size - 8);
    store_u64(fixed + size - 8, sum);
    parse_one(fixed, size);
    free(fixed);
  }
  return 0;
}
