// The values a checkpoint keeps in its safetensors metadata (checkpoint.c):
// the optimizer's step count and learning rate, read back as text from a
// file that may be hostile. Kept apart so that a fuzz target can compile
// them with the header parser (fuzz/fuzz_checkpoint_meta.c).
#ifndef TESSERA_SDK_IO_CHECKPOINT_META_H_
#define TESSERA_SDK_IO_CHECKPOINT_META_H_

#include <stdint.h>

#define TSR_CKPT_STEP_KEY "optim.step"
#define TSR_CKPT_LR_KEY "optim.lr"

// A step count: decimal digits only (an optional sign is refused when
// negative), fitting int64. 1 with it in |*out|, 0 for anything else (NULL,
// empty, trailing bytes, overflow). Thread-safe.
int tsr_ckpt_meta_step_parse(const char *text, int64_t *out);
// A learning rate: a finite, non-negative number and nothing after it. 1
// with it in |*out|, 0 otherwise. Thread-safe.
int tsr_ckpt_meta_lr_parse(const char *text, double *out);

#endif  // TESSERA_SDK_IO_CHECKPOINT_META_H_
