// Fuzz target for a checkpoint's metadata, as tsr_checkpoint_load reads it:
// the input is a whole safetensors file; its header is parsed
// (io/safetensors_parse.c), and the optimizer's step count and learning rate
// are taken from the metadata and parsed (io/checkpoint_meta.c). Every
// failure must say why; a value accepted must be what the text says: a
// step >= 0, a finite rate >= 0.
//
// The parsers are compiled into this target, so the fuzzer's coverage and
// sanitizers see them.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint_meta.c"
#include "io/safetensors_parse.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tsr_st_header header;
  char error[512];
  if (tsr_st_header_parse(data, size, &header, error, sizeof(error)) != 0) {
    if (error[0] == '\0') abort();  // every failure says why
    return 0;
  }
  for (int32_t i = 0; i < header.metadata_count; ++i) {
    const char *key = header.metadata_keys[i], *value = header.metadata_values[i];
    if (key == NULL || value == NULL) abort();
    if (strcmp(key, TSR_CKPT_STEP_KEY) == 0) {
      int64_t step = -1;
      if (tsr_ckpt_meta_step_parse(value, &step) && step < 0) abort();
    } else if (strcmp(key, TSR_CKPT_LR_KEY) == 0) {
      double lr = -1;
      if (tsr_ckpt_meta_lr_parse(value, &lr) && (!isfinite(lr) || lr < 0)) abort();
    } else {
      // Any value through both parsers: they must not read past its end.
      int64_t step;
      double lr;
      (void)tsr_ckpt_meta_step_parse(value, &step);
      (void)tsr_ckpt_meta_lr_parse(value, &lr);
    }
  }
  tsr_st_header_free(&header);
  return 0;
}
