// NumPy .npy and .npz parsing on memory buffers. Every length, offset and
// shape is checked against the buffer before it is used; a member of an
// .npz is inflated into a buffer of its declared size and no further, so a
// zip bomb stops at the size it admits to (itself bounded).
#include "npy_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// The fuzz target routes zlib through its own loader (see fuzz/fuzz_npy.c).
#ifndef TSR_NPY_ZLIB
#define TSR_NPY_ZLIB(name) name
#endif

static int fail(char *error, size_t error_size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *error, size_t error_size, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_size, format, args);
  va_end(args);
  return -1;
}

static uint16_t le16(const uint8_t *p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

// --- the .npy header: a Python dict literal ----------------------------------

typedef struct npy_cursor {
  const char *p, *end;
} npy_cursor;

static void skip_space(npy_cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) ++c->p;
}

// A quoted string ('...' or "...", no escapes) into |out| (NUL-terminated).
static int read_string(npy_cursor *c, char *out, size_t out_size) {
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
    return -1;
  char quote = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != quote) {
    if (*c->p == '\\' || n + 1 >= out_size)
      return -1;
    out[n++] = *c->p++;
  }
  if (c->p >= c->end)
    return -1;
  ++c->p;
  out[n] = '\0';
  return 0;
}

static int read_word(npy_cursor *c, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
    return -1;
  c->p += n;
  return 0;
}

static int parse_header(const char *text, size_t length, tsr_npy_array *out, char *error,
                        size_t error_size) {
  npy_cursor c = {text, text + length};
  char descr[16] = {0};
  int fortran = -1, have_descr = 0, have_shape = 0;
  skip_space(&c);
  if (c.p >= c.end || *c.p++ != '{')
    return fail(error, error_size, "header does not start with '{'");
  for (;;) {
    skip_space(&c);
    if (c.p < c.end && *c.p == '}') {
      ++c.p;
      break;
    }
    char key[32];
    if (read_string(&c, key, sizeof(key)) != 0)
      return fail(error, error_size, "header: expected a quoted key at byte %zu",
                  (size_t)(c.p - text));
    skip_space(&c);
    if (c.p >= c.end || *c.p++ != ':')
      return fail(error, error_size, "header: expected ':' after '%s'", key);
    skip_space(&c);
    if (strcmp(key, "descr") == 0 && !have_descr) {
      if (read_string(&c, descr, sizeof(descr)) != 0)
        return fail(error, error_size,
                    "header: 'descr' is not a short string "
                    "(structured dtypes are not supported)");
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0 && fortran < 0) {
      if (read_word(&c, "True") == 0)
        fortran = 1;
      else if (read_word(&c, "False") == 0)
        fortran = 0;
      else
        return fail(error, error_size, "header: 'fortran_order' is not True or False");
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      if (c.p >= c.end || *c.p++ != '(')
        return fail(error, error_size, "header: 'shape' is not a tuple");
      int32_t rank = 0;
      for (;;) {
        skip_space(&c);
        if (c.p < c.end && *c.p == ')') {
          ++c.p;
          break;
        }
        if (c.p >= c.end || *c.p < '0' || *c.p > '9')
          return fail(error, error_size, "header: 'shape' holds something other than integers");
        int64_t v = 0;
        while (c.p < c.end && *c.p >= '0' && *c.p <= '9') {
          if (v > (INT64_MAX - 9) / 10)
            return fail(error, error_size, "header: shape[%d] overflows int64", rank);
          v = v * 10 + (*c.p++ - '0');
        }
        if (c.p < c.end && *c.p == 'L')
          ++c.p;  // Python 2's long suffix
        if (rank >= TSR_MAX_RANK)
          return fail(error, error_size, "header: shape has more than %d dimensions", TSR_MAX_RANK);
        out->sizes[rank++] = v;
        skip_space(&c);
        if (c.p < c.end && *c.p == ',')
          ++c.p;
        else if (c.p < c.end && *c.p == ')')
          continue;
        else
          return fail(error, error_size, "header: 'shape' is not a tuple of integers");
      }
      out->rank = rank;
      have_shape = 1;
    } else {
      return fail(error, error_size, "header: unexpected or repeated key '%s'", key);
    }
    skip_space(&c);
    if (c.p < c.end && *c.p == ',')
      ++c.p;
    else if (!(c.p < c.end && *c.p == '}'))
      return fail(error, error_size, "header: expected ',' or '}' after '%s'", key);
  }
  skip_space(&c);
  if (c.p != c.end)
    return fail(error, error_size, "header: text after the closing '}'");
  if (!have_descr || fortran < 0 || !have_shape)
    return fail(error, error_size, "header: missing '%s'",
                !have_descr   ? "descr"
                : fortran < 0 ? "fortran_order"
                              : "shape");
  if (fortran)
    return fail(error, error_size,
                "fortran_order is True: Fortran-ordered arrays are not supported "
                "(save np.ascontiguousarray(a) instead)");
  static const struct {
    const char *descr;
    tsr_dtype_t dtype;
    int u8;
  } known[] = {{"<f4", TSR_FLOAT32, 0}, {"<f8", TSR_FLOAT64, 0}, {"<i4", TSR_INT32, 0},
               {"<i8", TSR_INT64, 0},   {"|b1", TSR_BOOL, 0},    {"|u1", TSR_INT32, 1},
               {"<f2", TSR_FLOAT16, 0}};
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); ++i) {
    if (strcmp(descr, known[i].descr) == 0) {
      out->dtype = known[i].dtype;
      out->u8 = known[i].u8;
      return 0;
    }
  }
  if (descr[0] == '>')
    return fail(error, error_size, "dtype '%s' is big-endian; only little-endian is supported",
                descr);
  return fail(error, error_size, "dtype '%s' is not supported (<f2 <f4 <f8 <i4 <i8 |b1 |u1 are)",
              descr);
}

int tsr_npy_parse(const uint8_t *data, size_t size, tsr_npy_array *out, char *error,
                  size_t error_size) {
  memset(out, 0, sizeof(*out));
  error[0] = '\0';
  if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0)
    return fail(error, error_size, "not a .npy file (no \\x93NUMPY magic)");
  uint8_t major = data[6];
  size_t header_start, header_length;
  if (major == 1) {
    header_start = 10;
    header_length = le16(data + 8);
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return fail(error, error_size, "truncated: %zu bytes", size);
    header_start = 12;
    header_length = le32(data + 8);
  } else {
    return fail(error, error_size, "format version %u.%u is not supported (1.0, 2.0, 3.0 are)",
                major, data[7]);
  }
  if (header_length > TSR_NPY_MAX_HEADER)
    return fail(error, error_size, "header length %zu is over the %zu-byte limit", header_length,
                TSR_NPY_MAX_HEADER);
  if (header_length > size - header_start)
    return fail(error, error_size, "truncated: header of %zu bytes, %zu left in the file",
                header_length, size - header_start);
  if (parse_header((const char *)data + header_start, header_length, out, error, error_size) != 0)
    return -1;
  uint64_t item = out->u8 ? 1 : tsr_dtype_size(out->dtype);
  uint64_t numel = 1;
  for (int32_t d = 0; d < out->rank; ++d) {
    uint64_t s = (uint64_t)out->sizes[d];
    if (s != 0 && numel > ((uint64_t)INT64_MAX / 8) / s)
      return fail(error, error_size, "shape overflows at dimension %d (%lld)", d,
                  (long long)out->sizes[d]);
    numel *= s;
  }
  size_t data_start = header_start + header_length;
  uint64_t bytes = numel * item;
  uint64_t left = size - data_start;
  if (bytes != left)
    return fail(error, error_size, "the shape needs %llu data bytes, the file has %llu%s",
                (unsigned long long)bytes, (unsigned long long)left,
                bytes > left ? " (truncated or a lying header)" : "");
  out->numel = (int64_t)numel;
  out->data = data + data_start;
  out->bytes = bytes;
  return 0;
}

// --- .npz: a zip of .npy members --------------------------------------------

static int inflate_member(const uint8_t *src, size_t src_size, uint8_t *dst, size_t dst_size,
                          char *error, size_t error_size, const char *name) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  if (TSR_NPY_ZLIB(inflateInit2_)(&z, -15, ZLIB_VERSION, (int)sizeof(z_stream)) != Z_OK)
    return fail(error, error_size, "member '%s': cannot start inflate", name);
  uint8_t spare;
  z.next_in = (Bytef *)src;
  z.avail_in = (uInt)src_size;
  z.next_out = dst_size ? dst : &spare;
  z.avail_out = (uInt)dst_size;
  int rc = TSR_NPY_ZLIB(inflate)(&z, Z_FINISH);
  size_t produced = dst_size - z.avail_out;
  if (rc != Z_STREAM_END && z.avail_out == 0) {
    // The declared size is full but the stream goes on: does it produce more?
    z.next_out = &spare;
    z.avail_out = 1;
    rc = TSR_NPY_ZLIB(inflate)(&z, Z_FINISH);
    if (z.avail_out == 0) {
      TSR_NPY_ZLIB(inflateEnd)(&z);
      return fail(error, error_size,
                  "member '%s' inflates past its declared %zu bytes (a zip bomb or a lying "
                  "directory)",
                  name, dst_size);
    }
  }
  TSR_NPY_ZLIB(inflateEnd)(&z);
  if (rc != Z_STREAM_END)
    return fail(error, error_size, "member '%s': corrupt deflate data (zlib %d)", name, rc);
  if (produced != dst_size)
    return fail(error, error_size, "member '%s' inflates to %zu bytes, not its declared %zu", name,
                produced, dst_size);
  return 0;
}

void tsr_npz_archive_free(tsr_npz_archive *archive) {
  if (archive == NULL)
    return;
  for (int32_t i = 0; i < archive->count; ++i) {
    free(archive->members[i].name);
    free(archive->members[i].image);
  }
  free(archive->members);
  archive->members = NULL;
  archive->count = 0;
}

int tsr_npz_parse(const uint8_t *data, size_t size, tsr_npz_archive *out, char *error,
                  size_t error_size) {
  memset(out, 0, sizeof(*out));
  error[0] = '\0';
  // The end-of-central-directory record: 22 bytes and a comment of <= 64 KiB.
  if (size < 22)
    return fail(error, error_size, "not a zip file (%zu bytes)", size);
  size_t eocd = SIZE_MAX;
  size_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
  for (size_t at = size - 22 + 1; at-- > lowest;) {
    if (le32(data + at) == 0x06054b50u && at + 22 + le16(data + at + 20) == size) {
      eocd = at;
      break;
    }
  }
  if (eocd == SIZE_MAX)
    return fail(error, error_size, "not a zip file (no end of central directory record)");
  const uint8_t *e = data + eocd;
  uint32_t entries = le16(e + 10), cd_size = le32(e + 12), cd_offset = le32(e + 16);
  if (le16(e + 4) != 0 || le16(e + 6) != 0 || le16(e + 8) != entries)
    return fail(error, error_size, "multi-disk zip archives are not supported");
  if (entries == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu)
    return fail(error, error_size, "zip64 archives (over 4 GiB) are not supported");
  if ((uint64_t)cd_offset + cd_size > eocd)
    return fail(error, error_size, "central directory (%u bytes at %u) lies outside the file",
                cd_size, cd_offset);
  if (entries > TSR_NPZ_MAX_MEMBERS)
    return fail(error, error_size, "%u members is over the limit", entries);
  out->members = calloc(entries ? entries : 1, sizeof(*out->members));
  if (out->members == NULL)
    return fail(error, error_size, "no memory for %u members", entries);
  size_t at = cd_offset, cd_end = (size_t)cd_offset + cd_size;
  uint64_t compressed_total = 0;
  for (uint32_t i = 0; i < entries; ++i) {
    if (cd_end - at < 46 || le32(data + at) != 0x02014b50u) {
      fail(error, error_size, "central directory entry %u is truncated or has a bad signature", i);
      goto failed;
    }
    const uint8_t *c = data + at;
    uint16_t flags = le16(c + 8), method = le16(c + 10);
    uint32_t crc = le32(c + 16), csize = le32(c + 20), usize = le32(c + 24);
    size_t name_length = le16(c + 28), extra = le16(c + 30), comment = le16(c + 32);
    uint32_t local = le32(c + 42);
    if (cd_end - at - 46 < name_length + extra + comment) {
      fail(error, error_size, "central directory entry %u runs past the directory", i);
      goto failed;
    }
    if (memchr(c + 46, 0, name_length) != NULL) {
      fail(error, error_size, "central directory entry %u's name holds a NUL byte", i);
      goto failed;
    }
    char *name = malloc(name_length + 1);
    if (name == NULL) {
      fail(error, error_size, "no memory for a name");
      goto failed;
    }
    memcpy(name, c + 46, name_length);
    name[name_length] = '\0';
    if (name_length >= 4 && strcmp(name + name_length - 4, ".npy") == 0)
      name[name_length - 4] = '\0';
    tsr_npz_member *m = &out->members[out->count++];
    m->name = name;
    at += 46 + name_length + extra + comment;
    for (int32_t j = 0; j + 1 < out->count; ++j) {
      if (strcmp(out->members[j].name, name) == 0) {
        fail(error, error_size, "member '%s' appears twice", name);
        goto failed;
      }
    }
    if (flags & 1u) {
      fail(error, error_size, "member '%s' is encrypted", name);
      goto failed;
    }
    if (csize == 0xffffffffu || usize == 0xffffffffu || local == 0xffffffffu) {
      fail(error, error_size, "member '%s' uses zip64 sizes (not supported)", name);
      goto failed;
    }
    if (method != 0 && method != 8) {
      fail(error, error_size, "member '%s': compression method %u (only stored 0 and deflate 8)",
           name, method);
      goto failed;
    }
    if ((uint64_t)usize > TSR_NPZ_MAX_MEMBER_BYTES) {
      fail(error, error_size, "member '%s' declares %u bytes, over the limit", name, usize);
      goto failed;
    }
    // Deflate cannot exceed about 1032:1; a larger claim is a lie.
    if (method == 8 && (uint64_t)usize > (uint64_t)csize * 1032u + 1024u) {
      fail(error, error_size,
           "member '%s' declares %u bytes from %u compressed: beyond deflate's ratio (a zip bomb)",
           name, usize, csize);
      goto failed;
    }
    if (method == 0 && csize != usize) {
      fail(error, error_size, "stored member '%s' has sizes %u and %u", name, csize, usize);
      goto failed;
    }
    if ((uint64_t)local + 30 > cd_offset || le32(data + local) != 0x04034b50u) {
      fail(error, error_size, "member '%s': local header at %u is outside the file or bad", name,
           local);
      goto failed;
    }
    uint64_t body = (uint64_t)local + 30 + le16(data + local + 26) + le16(data + local + 28);
    if (body > cd_offset || (uint64_t)csize > cd_offset - body) {
      fail(error, error_size, "member '%s': %u compressed bytes at %llu run past the data", name,
           csize, (unsigned long long)body);
      goto failed;
    }
    // Members must not share compressed bytes (many directory entries over
    // one member would multiply a bomb): their data together fits the file.
    compressed_total += 30 + (uint64_t)name_length + csize;
    if (compressed_total > cd_offset) {
      fail(error, error_size,
           "member '%s': the members' data together (%llu bytes) exceeds the archive's data "
           "(%u bytes); entries overlap",
           name, (unsigned long long)compressed_total, cd_offset);
      goto failed;
    }
    m->image = malloc(usize ? usize : 1);
    if (m->image == NULL) {
      fail(error, error_size, "member '%s': no memory for %u bytes", name, usize);
      goto failed;
    }
    m->image_size = usize;
    if (method == 0) {
      memcpy(m->image, data + body, usize);
    } else if (inflate_member(data + body, csize, m->image, usize, error, error_size, name) != 0) {
      goto failed;
    }
    if ((uint32_t)TSR_NPY_ZLIB(crc32)(0, m->image, usize) != crc) {
      fail(error, error_size, "member '%s': CRC mismatch", name);
      goto failed;
    }
    char inner[400];
    if (tsr_npy_parse(m->image, m->image_size, &m->array, inner, sizeof(inner)) != 0) {
      fail(error, error_size, "member '%s': %s", name, inner);
      goto failed;
    }
  }
  return 0;
failed:
  tsr_npz_archive_free(out);
  return -1;
}
