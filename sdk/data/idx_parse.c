// The IDX format: a 4-byte big-endian magic (0x00, 0x00, type 0x08 for
// uint8, number of dims), one big-endian uint32 per dim, then the elements.
// Every size read from the file is checked against the bytes actually there
// before it is used, so a lying header costs nothing but an error.
#include "idx_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// fuzz/fuzz_idx.c compiles this file in and routes zlib through its own
// bindings (the fuzzer cannot link zlib directly).
#ifndef TSR_IDX_ZLIB
#define TSR_IDX_ZLIB(name) name
#endif

static tsr_status idx_error(char *error, size_t error_size, tsr_status status, const char *name,
                            const char *format, ...) __attribute__((format(printf, 5, 6)));

static tsr_status idx_error(char *error, size_t error_size, tsr_status status, const char *name,
                            const char *format, ...) {
  if (error == NULL || error_size == 0)
    return status;
  int n = snprintf(error, error_size, "'%s': ", name ? name : "(memory)");
  if (n < 0 || (size_t)n >= error_size)
    return status;
  va_list args;
  va_start(args, format);
  vsnprintf(error + n, error_size - (size_t)n, format, args);
  va_end(args);
  return status;
}

static uint32_t be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static const char *magic_name(uint32_t magic) {
  switch (magic) {
    case TSR_IDX_MAGIC_LABELS:
      return "IDX labels, uint8 [N]";
    case TSR_IDX_MAGIC_IMAGES:
      return "IDX images, uint8 [N, rows, cols]";
    default:
      return "not an IDX uint8 file of 1 or 3 dims";
  }
}

// The size a whole IDX file of |magic| has, from the first |size| bytes of
// its decompressed header: 1 with it in |*out_limit| once the header is
// complete, 0 before, 2 when the header is one parse_raw refuses (a wrong
// magic, dims that overflow): nothing past it is worth inflating.
static int declared_size(const uint8_t *bytes, size_t size, uint32_t magic, size_t *out_limit) {
  const size_t header = 4 + 4 * (size_t)(magic & 0xff);
  if (size >= 4 && be32(bytes) != magic)
    return 2;
  if (size < header)
    return 0;
  size_t total = 1;
  for (size_t d = 0; d < (magic & 0xff); ++d) {
    const size_t dim = be32(bytes + 4 + 4 * d);
    if (dim != 0 && total > (SIZE_MAX - header - 1) / dim)
      return 2;
    total *= dim;
  }
  *out_limit = header + total;
  return 1;
}

// Inflates gzip |in| (one member or several concatenated, as gzip(1) writes
// them) into a new malloc'd buffer. The output grows with the data actually
// decompressed, never with what a header claims, and stops one byte past the
// size the IDX header of |magic| declares: a small file that would inflate to
// gigabytes (a "gzip bomb") is refused after that many bytes.
static tsr_status gunzip(const char *name, const uint8_t *in, size_t in_size, uint32_t magic,
                         uint8_t **out, size_t *out_size, char *error, size_t error_size) {
  *out = NULL;
  *out_size = 0;
  z_stream z;
  memset(&z, 0, sizeof(z));
  // 16 + 15: a gzip wrapper around a 32 KiB window.
  if (TSR_IDX_ZLIB(inflateInit2_)(&z, 16 + 15, ZLIB_VERSION, (int)sizeof(z_stream)) != Z_OK) {
    return idx_error(error, error_size, TSR_OUT_OF_MEMORY, name, "zlib cannot start inflating");
  }
  size_t capacity = in_size < ((size_t)1 << 20) ? ((size_t)1 << 16) : in_size * 2;
  uint8_t *buf = malloc(capacity);
  size_t used = 0, consumed = 0;
  size_t limit = SIZE_MAX;  // the declared size, once the header is in
  int limit_known = 0;
  tsr_status status = TSR_OK;
  if (buf == NULL) {
    status = idx_error(error, error_size, TSR_OUT_OF_MEMORY, name,
                       "cannot allocate %zu bytes to decompress", capacity);
    goto done;
  }
  for (;;) {
    if (used == capacity) {
      size_t grown = capacity > SIZE_MAX / 2 ? SIZE_MAX : capacity * 2;
      uint8_t *bigger = grown > capacity ? realloc(buf, grown) : NULL;
      if (bigger == NULL) {
        status = idx_error(error, error_size, TSR_OUT_OF_MEMORY, name,
                           "cannot allocate %zu bytes to decompress", grown);
        goto done;
      }
      buf = bigger;
      capacity = grown;
    }
    // zlib counts in uInt: feed at most 1 GiB at a time.
    size_t in_chunk = in_size - consumed;
    if (in_chunk > ((size_t)1 << 30))
      in_chunk = (size_t)1 << 30;
    size_t out_chunk = capacity - used;
    if (out_chunk > ((size_t)1 << 30))
      out_chunk = (size_t)1 << 30;
    // Up to the header first, then one byte past the declared size: enough
    // to know there is more.
    const size_t header = 4 + 4 * (size_t)(magic & 0xff);
    if (!limit_known && used < header && out_chunk > header - used)
      out_chunk = header - used;
    if (limit_known && out_chunk > limit + 1 - used)
      out_chunk = limit + 1 - used;
    z.next_in = (Bytef *)(in + consumed);
    z.avail_in = (uInt)in_chunk;
    z.next_out = buf + used;
    z.avail_out = (uInt)out_chunk;
    int rc = TSR_IDX_ZLIB(inflate)(&z, Z_NO_FLUSH);
    consumed += in_chunk - z.avail_in;
    used += out_chunk - z.avail_out;
    if (!limit_known) {
      const int known = declared_size(buf, used, magic, &limit);
      if (known == 2)
        break;  // parse_raw names what is wrong with the header
      limit_known = known;
    }
    if (limit_known && used > limit) {
      status = idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                         "decompresses past the %zu bytes its IDX header declares; stopped after "
                         "%zu bytes (a gzip bomb, or trailing data)",
                         limit, used);
      goto done;
    }
    if (rc == Z_STREAM_END) {
      if (consumed == in_size)
        break;
      // Another member follows, or trailing bytes that are not one.
      if (in_size - consumed >= 2 && in[consumed] == 0x1f && in[consumed + 1] == 0x8b) {
        TSR_IDX_ZLIB(inflateReset)(&z);
        continue;
      }
      status = idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                         "%zu bytes of trailing data after the gzip stream (at byte %zu)",
                         in_size - consumed, consumed);
      goto done;
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR) {
      status = idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                         "corrupt gzip data after %zu compressed and %zu decompressed bytes: %s",
                         consumed, used, z.msg ? z.msg : "zlib data error");
      goto done;
    }
    // Z_OK or Z_BUF_ERROR: when the output has room, zlib stopped for want of
    // input, and there is none left.
    if ((rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_out > 0 && consumed == in_size) {
      status = idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                         "truncated gzip stream: it ends after %zu compressed bytes (%zu "
                         "decompressed) without its end marker",
                         in_size, used);
      goto done;
    }
    if (rc == Z_MEM_ERROR) {
      status = idx_error(error, error_size, TSR_OUT_OF_MEMORY, name, "zlib is out of memory");
      goto done;
    }
  }
done:
  TSR_IDX_ZLIB(inflateEnd)(&z);
  if (status != TSR_OK) {
    free(buf);
    return status;
  }
  *out = buf;
  *out_size = used;
  return TSR_OK;
}

// Checks the raw IDX file in |bytes| and fills |out| (buffer left NULL).
static tsr_status parse_raw(const char *name, const uint8_t *bytes, size_t size, uint32_t magic,
                            tsr_idx_array *out, char *error, size_t error_size) {
  const char *what = magic == TSR_IDX_MAGIC_IMAGES ? "image" : "label";
  if (size == 0) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "empty file: expected an IDX %s file (magic 0x%08x)", what, magic);
  }
  if (size < 4) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "truncated header: %zu bytes, shorter than the 4-byte magic", size);
  }
  uint32_t found = be32(bytes);
  if (found != magic) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "bad magic 0x%08x (%s); expected 0x%08x (%s)", found, magic_name(found), magic,
                     magic_name(magic));
  }
  int32_t rank = (int32_t)(magic & 0xff);
  size_t header = 4 + 4 * (size_t)rank;
  if (size < header) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "truncated header: %zu bytes, expected %zu for %d dims", size, header, rank);
  }
  out->rank = rank;
  size_t item = 1;
  for (int32_t d = 0; d < rank; ++d) {
    uint32_t dim = be32(bytes + 4 + 4 * (size_t)d);
    out->dims[d] = (int64_t)dim;
    if (d == 0)
      continue;
    if (dim == 0) {
      return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                       "dim %d is 0: an example must hold at least one element", d);
    }
    if (item > SIZE_MAX / dim) {
      return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                       "dims overflow: an example of %lld x %lld elements does not fit in memory",
                       (long long)out->dims[1], (long long)out->dims[2]);
    }
    item *= dim;
  }
  // Both count and item are below 2^64; their product may not be.
  uint64_t count = (uint64_t)out->dims[0];
  if (count != 0 && item > (SIZE_MAX - header) / count) {
    if (rank == 3) {
      return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                       "dims %llu x %lld x %lld overflow: the file cannot hold that many bytes",
                       (unsigned long long)count, (long long)out->dims[1], (long long)out->dims[2]);
    }
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name, "dims overflow: %llu examples",
                     (unsigned long long)count);
  }
  if (item > (size_t)INT64_MAX / sizeof(float)) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "an example of %zu elements is too large", item);
  }
  size_t expected = (size_t)count * item;
  size_t present = size - header;
  if (present < expected) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "truncated: expected %zu bytes of %s data, found %zu", expected, what,
                     present);
  }
  if (present > expected) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "%zu bytes of trailing data after the %zu bytes of %s data",
                     present - expected, expected, what);
  }
  out->item_bytes = item;
  out->data = bytes + header;
  return TSR_OK;
}

tsr_status tsr_idx_parse(const char *name, uint8_t *bytes, size_t size, uint32_t magic,
                         tsr_idx_array *out_array, char *error, size_t error_size) {
  if (out_array == NULL) {
    free(bytes);
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name, "out_array is NULL");
  }
  memset(out_array, 0, sizeof(*out_array));
  if (magic != TSR_IDX_MAGIC_LABELS && magic != TSR_IDX_MAGIC_IMAGES) {
    free(bytes);
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name,
                     "magic 0x%08x is not one the reader supports", magic);
  }
  if (bytes == NULL && size != 0) {
    return idx_error(error, error_size, TSR_INVALID_ARGUMENT, name, "bytes is NULL");
  }
  uint8_t *raw = bytes;
  size_t raw_size = size;
  if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    tsr_status status = gunzip(name, bytes, size, magic, &raw, &raw_size, error, error_size);
    free(bytes);
    if (status != TSR_OK)
      return status;
  }
  tsr_status status = parse_raw(name, raw, raw_size, magic, out_array, error, error_size);
  if (status != TSR_OK) {
    free(raw);
    memset(out_array, 0, sizeof(*out_array));
    return status;
  }
  out_array->buffer = raw;
  return TSR_OK;
}

void tsr_idx_array_free(tsr_idx_array *array) {
  if (array == NULL)
    return;
  free(array->buffer);
  memset(array, 0, sizeof(*array));
}
