# Issue 8: safetensors files, checkpoints and DLPack (paths relative to sdk/).
list(APPEND TSR_SDK_SOURCES
  io/file_read.c
  io/safetensors_parse.c
  io/safetensors.c
  io/atomic_file.c
  io/checkpoint.c
  io/checkpoint_meta.c
  io/dlpack.c
  io/dlpack_layout.c
  io/npy_parse.c
  io/npy.c)
