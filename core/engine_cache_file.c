// The engine cache's table and file format (engine_cache_file.h).
#include "engine_cache_file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char k_magic[8] = {'T', 'S', 'R', 'E', 'N', 'G', 'C', '\n'};
// Magic, version, three lengths.
#define HEADER_BYTES 24u

uint64_t tsr_engine_cache_fnv1a(uint64_t hash, const void *data, size_t size) {
  const uint8_t *p = data;
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

static int printable(const char *text, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] > 0x7e)
      return 0;
  }
  return 1;
}

int tsr_engine_cache_key_valid(const char *text, size_t max_bytes) {
  if (text == NULL)
    return 0;
  const size_t length = strnlen(text, max_bytes + 1);
  return length >= 1 && length <= max_bytes && printable(text, length);
}

static char *copy_text(const char *text, size_t length) {
  char *copy = malloc(length + 1);
  if (copy != NULL) {
    memcpy(copy, text, length);
    copy[length] = '\0';
  }
  return copy;
}

tsr_status tsr_engine_cache_table_init(tsr_engine_cache_table *table, const char *plugin_key,
                                       const char *machine_key) {
  memset(table, 0, sizeof(*table));
  table->plugin_key = copy_text(plugin_key, strlen(plugin_key));
  table->machine_key = copy_text(machine_key, strlen(machine_key));
  if (table->plugin_key == NULL || table->machine_key == NULL) {
    tsr_engine_cache_table_clear(table);
    return TSR_OUT_OF_MEMORY;
  }
  return TSR_OK;
}

void tsr_engine_cache_table_clear(tsr_engine_cache_table *table) {
  for (uint32_t i = 0; i < table->count; ++i) free(table->entries[i].class_key);
  free(table->entries);
  free(table->plugin_key);
  free(table->machine_key);
  memset(table, 0, sizeof(*table));
}

// The index of |class_key|, or of where it would go (*out_found 0).
static uint32_t table_search(const tsr_engine_cache_table *table, const char *class_key,
                             int *out_found) {
  uint32_t low = 0, high = table->count;
  while (low < high) {
    const uint32_t mid = low + (high - low) / 2;
    const int order = strcmp(table->entries[mid].class_key, class_key);
    if (order == 0) {
      *out_found = 1;
      return mid;
    }
    if (order < 0) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  *out_found = 0;
  return low;
}

const tsr_engine_cache_entry *tsr_engine_cache_table_find(const tsr_engine_cache_table *table,
                                                          const char *class_key) {
  int found = 0;
  const uint32_t at = table_search(table, class_key, &found);
  return found ? &table->entries[at] : NULL;
}

static tsr_status entry_make(const char *class_key, size_t key_length, const void *value,
                             uint32_t bytes, tsr_engine_cache_entry *out_entry) {
  char *block = malloc(key_length + 1 + (size_t)bytes);
  if (block == NULL)
    return TSR_OUT_OF_MEMORY;
  memcpy(block, class_key, key_length);
  block[key_length] = '\0';
  if (bytes > 0)
    memcpy(block + key_length + 1, value, bytes);
  out_entry->class_key = block;
  out_entry->value = (uint8_t *)block + key_length + 1;
  out_entry->bytes = bytes;
  return TSR_OK;
}

tsr_status tsr_engine_cache_table_set(tsr_engine_cache_table *table, const char *class_key,
                                      const void *value, uint32_t bytes) {
  int found = 0;
  const uint32_t at = table_search(table, class_key, &found);
  tsr_engine_cache_entry entry;
  if (!found && table->count >= TSR_ENGINE_CACHE_ENTRIES_MAX)
    return TSR_UNAVAILABLE;
  if (!found && table->count == table->capacity) {
    const uint32_t grown = table->capacity ? 2 * table->capacity : 16;
    tsr_engine_cache_entry *bigger = realloc(table->entries, grown * sizeof(*bigger));
    if (bigger == NULL)
      return TSR_OUT_OF_MEMORY;
    table->entries = bigger;
    table->capacity = grown;
  }
  tsr_status status = entry_make(class_key, strlen(class_key), value, bytes, &entry);
  if (status != TSR_OK)
    return status;
  if (found) {
    free(table->entries[at].class_key);
  } else {
    memmove(&table->entries[at + 1], &table->entries[at],
            (table->count - at) * sizeof(table->entries[0]));
    ++table->count;
  }
  table->entries[at] = entry;
  return TSR_OK;
}

tsr_status tsr_engine_cache_table_merge(tsr_engine_cache_table *table,
                                        const tsr_engine_cache_table *other,
                                        const char *keep_class_key) {
  uint32_t total = table->count + other->count;
  if (total > TSR_ENGINE_CACHE_ENTRIES_MAX)
    total = TSR_ENGINE_CACHE_ENTRIES_MAX;
  if (other->count == 0)
    return TSR_OK;
  tsr_engine_cache_entry *merged = calloc(total, sizeof(*merged));
  if (merged == NULL)
    return TSR_OUT_OF_MEMORY;
  // Both are sorted: one pass, copying, so that |table| is untouched on failure.
  uint32_t i = 0, j = 0, n = 0;
  tsr_status status = TSR_OK;
  while (status == TSR_OK && n < total && (i < table->count || j < other->count)) {
    const int order = i == table->count ? 1
                      : j == other->count
                          ? -1
                          : strcmp(table->entries[i].class_key, other->entries[j].class_key);
    const tsr_engine_cache_entry *e;
    if (order < 0 || (order == 0 && keep_class_key != NULL &&
                      strcmp(table->entries[i].class_key, keep_class_key) == 0)) {
      e = &table->entries[i];
    } else {
      e = &other->entries[j];
    }
    i += order <= 0;
    j += order >= 0;
    status = entry_make(e->class_key, strlen(e->class_key), e->value, e->bytes, &merged[n]);
    n += status == TSR_OK;
  }
  if (status != TSR_OK) {
    for (uint32_t k = 0; k < n; ++k) free(merged[k].class_key);
    free(merged);
    return status;
  }
  for (uint32_t k = 0; k < table->count; ++k) free(table->entries[k].class_key);
  free(table->entries);
  table->entries = merged;
  table->count = n;
  table->capacity = total;
  return TSR_OK;
}

// --- the file ---------------------------------------------------------------

static tsr_status refuse(char *why, size_t why_size, const char *format, ...) TSR_ABI_PRINTF(3, 4);

static tsr_status refuse(char *why, size_t why_size, const char *format, ...) {
  if (why_size > 0) {
    va_list args;
    va_start(args, format);
    vsnprintf(why, why_size, format, args);
    va_end(args);
  }
  return TSR_INVALID_ARGUMENT;
}

static uint32_t load_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_u64(const uint8_t *p) {
  return (uint64_t)load_u32(p) | (uint64_t)load_u32(p + 4) << 32;
}

static void store_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static void store_u64(uint8_t *p, uint64_t v) {
  store_u32(p, (uint32_t)v);
  store_u32(p + 4, (uint32_t)(v >> 32));
}

// Parses what follows the checksum test; |table| has its keys already.
static tsr_status parse_entries(const uint8_t *data, size_t end, size_t at, uint32_t count,
                                tsr_engine_cache_table *table, char *why, size_t why_size) {
  if (count > 0) {
    table->entries = calloc(count, sizeof(*table->entries));
    if (table->entries == NULL)
      return TSR_OUT_OF_MEMORY;
    table->capacity = count;
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (end - at < 8)
      return refuse(why, why_size, "entry %u: cut short", i);
    const uint32_t key_length = load_u32(data + at);
    const uint32_t bytes = load_u32(data + at + 4);
    at += 8;
    if (key_length == 0 || key_length > TSR_ENGINE_CACHE_CLASS_KEY_MAX) {
      return refuse(why, why_size, "entry %u: class key of %u bytes", i, key_length);
    }
    if (bytes > TSR_ENGINE_CACHE_VALUE_MAX) {
      return refuse(why, why_size, "entry %u: value of %u bytes", i, bytes);
    }
    if (end - at < (size_t)key_length + bytes) {
      return refuse(why, why_size, "entry %u: runs past the end", i);
    }
    const char *key = (const char *)data + at;
    if (!printable(key, key_length)) {
      return refuse(why, why_size, "entry %u: class key is not printable text", i);
    }
    if (i > 0) {
      // Strictly increasing, as strcmp orders the NUL-terminated keys.
      const char *previous = table->entries[i - 1].class_key;
      const size_t previous_length = strlen(previous);
      const size_t common = previous_length < key_length ? previous_length : key_length;
      const int order = memcmp(previous, key, common);
      if (order > 0 || (order == 0 && previous_length >= key_length)) {
        return refuse(why, why_size, "entry %u: class keys out of order or repeated", i);
      }
    }
    tsr_status status =
        entry_make(key, key_length, data + at + key_length, bytes, &table->entries[i]);
    if (status != TSR_OK)
      return status;
    table->count = i + 1;
    at += (size_t)key_length + bytes;
  }
  if (at != end)
    return refuse(why, why_size, "%zu bytes after the last entry", end - at);
  return TSR_OK;
}

tsr_status tsr_engine_cache_file_parse(const uint8_t *data, size_t size,
                                       tsr_engine_cache_table *out_table, char *why,
                                       size_t why_size) {
  memset(out_table, 0, sizeof(*out_table));
  if (why_size > 0)
    why[0] = '\0';
  if (size < HEADER_BYTES + 8)
    return refuse(why, why_size, "%zu bytes: cut short", size);
  if (size > TSR_ENGINE_CACHE_FILE_MAX) {
    return refuse(why, why_size, "%zu bytes: larger than %u", size, TSR_ENGINE_CACHE_FILE_MAX);
  }
  if (memcmp(data, k_magic, sizeof(k_magic)) != 0) {
    return refuse(why, why_size, "not an engine cache file (magic)");
  }
  const uint32_t version = load_u32(data + 8);
  if (version != TSR_ENGINE_CACHE_FILE_VERSION) {
    return refuse(why, why_size, "format version %u, not %d", version,
                  TSR_ENGINE_CACHE_FILE_VERSION);
  }
  const size_t end = size - 8;
  if (load_u64(data + end) != tsr_engine_cache_fnv1a(TSR_FNV1A_64_INIT, data, end)) {
    return refuse(why, why_size, "checksum mismatch (damaged or cut short)");
  }
  const uint32_t plugin_length = load_u32(data + 12);
  const uint32_t machine_length = load_u32(data + 16);
  const uint32_t count = load_u32(data + 20);
  if (plugin_length == 0 || plugin_length > TSR_ENGINE_CACHE_FILE_KEY_MAX || machine_length == 0 ||
      machine_length > TSR_ENGINE_CACHE_FILE_KEY_MAX) {
    return refuse(why, why_size, "key lengths %u and %u", plugin_length, machine_length);
  }
  if (count > TSR_ENGINE_CACHE_ENTRIES_MAX)
    return refuse(why, why_size, "%u entries", count);
  size_t at = HEADER_BYTES;
  if (end - at < (size_t)plugin_length + machine_length) {
    return refuse(why, why_size, "keys run past the end");
  }
  const char *plugin_key = (const char *)data + at;
  const char *machine_key = plugin_key + plugin_length;
  if (!printable(plugin_key, plugin_length) || !printable(machine_key, machine_length)) {
    return refuse(why, why_size, "keys are not printable text");
  }
  out_table->plugin_key = copy_text(plugin_key, plugin_length);
  out_table->machine_key = copy_text(machine_key, machine_length);
  tsr_status status = TSR_OUT_OF_MEMORY;
  if (out_table->plugin_key != NULL && out_table->machine_key != NULL) {
    at += (size_t)plugin_length + machine_length;
    status = parse_entries(data, end, at, count, out_table, why, why_size);
  }
  if (status != TSR_OK) {
    if (status == TSR_OUT_OF_MEMORY)
      refuse(why, why_size, "out of memory");
    tsr_engine_cache_table_clear(out_table);
  }
  return status;
}

tsr_status tsr_engine_cache_file_serialize(const tsr_engine_cache_table *table, uint8_t **out_data,
                                           size_t *out_size) {
  const size_t plugin_length = strlen(table->plugin_key);
  const size_t machine_length = strlen(table->machine_key);
  size_t size = HEADER_BYTES + plugin_length + machine_length + 8;
  for (uint32_t i = 0; i < table->count; ++i) {
    size += 8 + strlen(table->entries[i].class_key) + table->entries[i].bytes;
  }
  uint8_t *data = malloc(size);
  if (data == NULL)
    return TSR_OUT_OF_MEMORY;
  memcpy(data, k_magic, sizeof(k_magic));
  store_u32(data + 8, TSR_ENGINE_CACHE_FILE_VERSION);
  store_u32(data + 12, (uint32_t)plugin_length);
  store_u32(data + 16, (uint32_t)machine_length);
  store_u32(data + 20, table->count);
  size_t at = HEADER_BYTES;
  memcpy(data + at, table->plugin_key, plugin_length);
  at += plugin_length;
  memcpy(data + at, table->machine_key, machine_length);
  at += machine_length;
  for (uint32_t i = 0; i < table->count; ++i) {
    const tsr_engine_cache_entry *e = &table->entries[i];
    const size_t key_length = strlen(e->class_key);
    store_u32(data + at, (uint32_t)key_length);
    store_u32(data + at + 4, e->bytes);
    at += 8;
    memcpy(data + at, e->class_key, key_length);
    at += key_length;
    if (e->bytes > 0)
      memcpy(data + at, e->value, e->bytes);
    at += e->bytes;
  }
  store_u64(data + at, tsr_engine_cache_fnv1a(TSR_FNV1A_64_INIT, data, at));
  *out_data = data;
  *out_size = size;
  return TSR_OK;
}
