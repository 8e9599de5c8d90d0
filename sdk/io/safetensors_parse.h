// Internal: the safetensors header parser, from memory.
//
// Self-contained (libc and tessera/abi.h only) and reporting errors into a
// caller's buffer rather than through the core's error state, so that the
// fuzz target can compile it with the fuzzer's coverage and sanitizers
// (fuzz/fuzz_safetensors.c includes safetensors_parse.c) while libtessera
// wraps it with tsr_error_set.
#ifndef TESSERA_SDK_IO_SAFETENSORS_PARSE_H_
#define TESSERA_SDK_IO_SAFETENSORS_PARSE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"

// Headers larger than this are refused before any allocation (the reference
// implementation's limit is 100 MB too).
#define TSR_ST_MAX_HEADER_BYTES (100u * 1000u * 1000u)

typedef struct tsr_st_entry {
  char *name;  // owned, NUL-terminated, valid UTF-8
  tsr_dtype_t dtype;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  uint64_t begin;  // byte offsets into the data buffer
  uint64_t end;
} tsr_st_entry;

typedef struct tsr_st_header {
  int32_t count;
  tsr_st_entry *entries;  // file order
  int32_t metadata_count;
  char **metadata_keys;  // owned
  char **metadata_values;
  uint64_t data_start;  // byte offset of the data buffer in the file (8 + N)
  uint64_t data_bytes;  // length of the data buffer
} tsr_st_header;

// Parses and validates the header of a whole safetensors file image |data|
// of |size| bytes: JSON grammar, UTF-8, dtypes, shapes, and that the
// offsets tile the data buffer exactly. On failure returns nonzero, writes a
// message (without the file name) into |error| and leaves |out| empty.
// |out| is owned by the caller (tsr_st_header_free). Thread-safe.
int tsr_st_header_parse(const uint8_t *data, size_t size, tsr_st_header *out, char *error,
                        size_t error_size);
// Frees what |header| owns and empties it; an empty header is fine. Not
// thread-safe for one header.
void tsr_st_header_free(tsr_st_header *header);

// True when |s| (|n| bytes) is valid UTF-8 without NUL, surrogates or
// overlong forms. Thread-safe.
int tsr_st_utf8_valid(const uint8_t *s, size_t n);
// The safetensors name of |dtype| ("F32"), or NULL. Static storage.
const char *tsr_st_dtype_name(tsr_dtype_t dtype);

#endif  // TESSERA_SDK_IO_SAFETENSORS_PARSE_H_
