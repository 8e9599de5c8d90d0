// The engine cache's table and its file format (engine_cache.h keeps the
// tables of a process and their files). Pure functions over memory: no I/O,
// no globals, so the parser can be fuzzed on a buffer (fuzz/fuzz_engine_cache.c).
//
// A file, every integer little-endian:
//
//   "TSRENGC\n"                          8 bytes of magic
//   u32 version (1)
//   u32 plugin key length P, u32 machine key length M, u32 entry count N
//   P bytes of plugin key, M bytes of machine key (printable ASCII, no NUL)
//   N times: u32 class key length C, u32 value length V, C bytes of class
//            key (printable ASCII), V bytes of value
//   u64 FNV-1a 64 of every byte before it
//
// Entries are in increasing byte order of their class keys, each key once;
// nothing follows the checksum. A file that breaks any of this, or exceeds
// a bound below, is refused whole.
#ifndef TESSERA_CORE_ENGINE_CACHE_FILE_H_
#define TESSERA_CORE_ENGINE_CACHE_FILE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"

#define TSR_ENGINE_CACHE_FILE_VERSION 1
// The key strings the core composes (engine_cache.c): the plugin's part and
// the machine's part, each at most this long.
#define TSR_ENGINE_CACHE_FILE_KEY_MAX 16384
#define TSR_ENGINE_CACHE_ENTRIES_MAX 4096
// Header, both keys and the most entries of the largest size, rounded up.
#define TSR_ENGINE_CACHE_FILE_MAX (8u << 20)

typedef struct tsr_engine_cache_entry {
  char *class_key;  // NUL-terminated; one allocation with |value|
  uint8_t *value;   // |bytes| bytes right after the key's NUL
  uint32_t bytes;
} tsr_engine_cache_entry;

// The decisions stored under one pair of keys. Owned by whoever initialised
// it; tsr_engine_cache_table_clear frees what it holds. Not thread-safe.
typedef struct tsr_engine_cache_table {
  char *plugin_key;  // NUL-terminated, or NULL before it is set
  char *machine_key;
  tsr_engine_cache_entry *entries;  // sorted by class key (strcmp)
  uint32_t count;
  uint32_t capacity;
} tsr_engine_cache_table;

// 1 when |text| is 1 to |max_bytes| bytes of printable ASCII (0x20-0x7e)
// before its NUL; reads at most |max_bytes| + 1 bytes.
int tsr_engine_cache_key_valid(const char *text, size_t max_bytes);

// Sets |table| empty, owning copies of both keys. TSR_OUT_OF_MEMORY leaves it
// empty with no keys.
tsr_status tsr_engine_cache_table_init(tsr_engine_cache_table *table, const char *plugin_key,
                                       const char *machine_key);
// Frees every entry and both keys; |table| is then as after a failed init.
void tsr_engine_cache_table_clear(tsr_engine_cache_table *table);

// The entry of |class_key|, or NULL. Binary search.
const tsr_engine_cache_entry *tsr_engine_cache_table_find(const tsr_engine_cache_table *table,
                                                          const char *class_key);

// Stores a copy of |value| (|bytes| bytes) for |class_key|, replacing the old
// value. The caller has checked the key and the size. TSR_UNAVAILABLE when
// the table holds TSR_ENGINE_CACHE_ENTRIES_MAX other keys; TSR_OUT_OF_MEMORY.
tsr_status tsr_engine_cache_table_set(tsr_engine_cache_table *table, const char *class_key,
                                      const void *value, uint32_t bytes);

// Adds every entry of |other| to |table|, |other|'s value winning where both
// hold a class, except for |keep_class_key| (may be NULL), whose value in
// |table| wins. Past TSR_ENGINE_CACHE_ENTRIES_MAX the classes last in order
// are dropped. TSR_OUT_OF_MEMORY leaves |table| as it was.
tsr_status tsr_engine_cache_table_merge(tsr_engine_cache_table *table,
                                        const tsr_engine_cache_table *other,
                                        const char *keep_class_key);

// Parses the |size| bytes at |data| into |out_table| (initialised here; the
// caller clears it). On a refusal the status is TSR_INVALID_ARGUMENT (or
// TSR_OUT_OF_MEMORY), |out_table| is left empty with no keys, and |why|
// (|why_size| bytes) says what is wrong. Reads only inside |data|.
tsr_status tsr_engine_cache_file_parse(const uint8_t *data, size_t size,
                                       tsr_engine_cache_table *out_table, char *why,
                                       size_t why_size);

// The file of |table| in a new malloc'd buffer (*out_data, *out_size); the
// caller frees it. TSR_OUT_OF_MEMORY.
tsr_status tsr_engine_cache_file_serialize(const tsr_engine_cache_table *table, uint8_t **out_data,
                                           size_t *out_size);

// FNV-1a 64 of |size| bytes, continuing from |hash| (start with
// TSR_FNV1A_64_INIT).
#define TSR_FNV1A_64_INIT 14695981039346656037ull
uint64_t tsr_engine_cache_fnv1a(uint64_t hash, const void *data, size_t size);

#endif  // TESSERA_CORE_ENGINE_CACHE_FILE_H_
