# Data loading (issue 8): the IDX parser, datasets and batch loaders.
list(APPEND TSR_SDK_SOURCES
  data/idx_parse.c
  data/idx.c
  data/dataset.c
  data/loader.c
  data/transform.c)
