// zlib for the fuzz targets that compile a parser with zlib in it
// (fuzz_npy.c, fuzz_idx.c): the functions come from the libz that libtessera
// already loads, through dlopen, so a target links only libtessera. Each
// target names the ones its parser calls through the parser's macro
// (TSR_NPY_ZLIB, TSR_IDX_ZLIB) as fuzz_<name>. A libz that cannot be loaded
// aborts the target: it is the environment, not a finding.
#ifndef TESSERA_FUZZ_FUZZ_ZLIB_H_
#define TESSERA_FUZZ_FUZZ_ZLIB_H_

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

typedef struct fuzz_zlib {
  int (*inflate_init2)(z_streamp, int, const char *, int);
  int (*inflate)(z_streamp, int);
  int (*inflate_end)(z_streamp);
  int (*inflate_reset)(z_streamp);
  uLong (*crc32)(uLong, const Bytef *, uInt);
} fuzz_zlib;

static inline fuzz_zlib *fuzz_zlib_get(void) {
  static fuzz_zlib z;
  if (z.inflate == NULL) {
    void *lib = dlopen("libz.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
      fprintf(stderr, "fuzz: cannot load libz.so.1: %s\n", dlerror());
      abort();
    }
    z.inflate_init2 = (int (*)(z_streamp, int, const char *, int))dlsym(lib, "inflateInit2_");
    z.inflate = (int (*)(z_streamp, int))dlsym(lib, "inflate");
    z.inflate_end = (int (*)(z_streamp))dlsym(lib, "inflateEnd");
    z.inflate_reset = (int (*)(z_streamp))dlsym(lib, "inflateReset");
    z.crc32 = (uLong(*)(uLong, const Bytef *, uInt))dlsym(lib, "crc32");
    if (!z.inflate_init2 || !z.inflate || !z.inflate_end || !z.inflate_reset || !z.crc32)
      abort();
  }
  return &z;
}

static inline int fuzz_inflateInit2_(z_streamp s, int bits, const char *version, int size) {
  return fuzz_zlib_get()->inflate_init2(s, bits, version, size);
}
static inline int fuzz_inflate(z_streamp s, int flush) {
  return fuzz_zlib_get()->inflate(s, flush);
}
static inline int fuzz_inflateEnd(z_streamp s) {
  return fuzz_zlib_get()->inflate_end(s);
}
static inline int fuzz_inflateReset(z_streamp s) {
  return fuzz_zlib_get()->inflate_reset(s);
}
static inline uLong fuzz_crc32(uLong crc, const Bytef *buf, uInt len) {
  return fuzz_zlib_get()->crc32(crc, buf, len);
}

#endif  // TESSERA_FUZZ_FUZZ_ZLIB_H_
