// Fuzz target: the safetensors header parser, on a whole file image in
// memory (8-byte length, JSON header, data). Every input must either parse
// into a header whose entries lie inside the data, or fail with a message;
// never crash, leak or read out of bounds.
//
// The parser is compiled into this target (rather than called in
// libtessera) so that the fuzzer's coverage instrumentation and sanitizers
// see it: libtessera itself is built without -fsanitize=fuzzer.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors_parse.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tsr_st_header header;
  char error[512];
  if (tsr_st_header_parse(data, size, &header, error, sizeof(error)) != 0) {
    if (error[0] == '\0')
      abort();  // every failure says why
    return 0;
  }
  // What a reader then relies on: offsets inside the data, sizes matching.
  for (int32_t i = 0; i < header.count; ++i) {
    const tsr_st_entry *e = &header.entries[i];
    if (e->end < e->begin || e->end > header.data_bytes || e->rank < 0 || e->rank > TSR_MAX_RANK ||
        !tsr_st_utf8_valid((const uint8_t *)e->name, strlen(e->name))) {
      abort();
    }
    uint64_t bytes = tsr_dtype_size(e->dtype);
    for (int32_t d = 0; d < e->rank; ++d) bytes *= (uint64_t)e->sizes[d];
    if (bytes != e->end - e->begin)
      abort();
    // Touch the tensor's bytes, so that ASan checks they are inside |data|.
    volatile uint8_t sink = 0;
    for (uint64_t k = e->begin; k < e->end; k += 4096) sink ^= data[header.data_start + k];
    if (e->end > e->begin)
      sink ^= data[header.data_start + e->end - 1];
    (void)sink;
  }
  if (header.data_start + header.data_bytes != size)
    abort();
  tsr_st_header_free(&header);
  return 0;
}
