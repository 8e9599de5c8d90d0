// The safetensors header parser: a strict JSON reader for exactly the
// grammar safetensors uses (an object of tensor entries and an optional
// "__metadata__" object of strings), so that no input can make it recurse,
// allocate without bound or read past |size|.
#include "safetensors_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_parser {
  const uint8_t *p;
  const uint8_t *end;
  const uint8_t *begin;
  char *error;
  size_t error_size;
  int failed;
  int at_position;  // syntax errors say where; layout errors are about the whole header
} st_parser;

static int st_fail(st_parser *ps, const char *format, ...) __attribute__((format(printf, 2, 3)));

static int st_fail(st_parser *ps, const char *format, ...) {
  if (ps->failed)
    return 1;
  ps->failed = 1;
  char message[256];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  if (ps->error != NULL && ps->error_size > 0) {
    if (ps->at_position) {
      snprintf(ps->error, ps->error_size, "%s (header byte %zu)", message,
               (size_t)(ps->p - ps->begin));
    } else {
      snprintf(ps->error, ps->error_size, "%s", message);
    }
  }
  return 1;
}

const char *tsr_st_dtype_name(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      return "F32";
    case TSR_FLOAT64:
      return "F64";
    case TSR_BFLOAT16:
      return "BF16";
    case TSR_FLOAT16:
      return "F16";
    case TSR_INT32:
      return "I32";
    case TSR_INT64:
      return "I64";
    case TSR_BOOL:
      return "BOOL";
    default:
      return NULL;
  }
}

static int st_dtype_parse(const char *name, tsr_dtype_t *out) {
  for (tsr_dtype_t d = 0; d < TSR_DTYPE_COUNT; ++d) {
    const char *n = tsr_st_dtype_name(d);
    if (n != NULL && strcmp(n, name) == 0) {
      *out = d;
      return 1;
    }
  }
  return 0;
}

// Length of the UTF-8 sequence at |s| (at most |n| bytes), or 0 if invalid.
static size_t utf8_sequence(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  if (c < 0x80)
    return c == 0 ? 0 : 1;
  size_t len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF)
    return 0;
  return len;
}

int tsr_st_utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t len = utf8_sequence(s + i, n - i);
    if (len == 0)
      return 0;
    i += len;
  }
  return 1;
}

static void st_skip_ws(st_parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
    ++ps->p;
  }
}

// Consumes |c| after optional whitespace.
static int st_expect(st_parser *ps, char c, const char *what) {
  st_skip_ws(ps);
  if (ps->p >= ps->end)
    return st_fail(ps, "the header ends where %s ('%c') was expected", what, c);
  if (*ps->p != (uint8_t)c) {
    return st_fail(ps, "expected %s ('%c'), found '%c'", what, c,
                   *ps->p >= 0x20 && *ps->p < 0x7F ? *ps->p : '?');
  }
  ++ps->p;
  return 0;
}

// 1 if the next non-blank byte is |c| (not consumed).
static int st_peek(st_parser *ps, char c) {
  st_skip_ws(ps);
  return ps->p < ps->end && *ps->p == (uint8_t)c;
}

static int hex4(const uint8_t *s, uint32_t *out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    uint8_t c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (uint32_t)(c - 'A' + 10);
    else
      return 0;
  }
  *out = v;
  return 1;
}

static size_t utf8_encode(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

// Parses a JSON string into a new NUL-terminated UTF-8 buffer. The decoded
// text is never longer than the escaped one, so one allocation of the raw
// length suffices.
static char *st_string(st_parser *ps, const char *what) {
  if (st_expect(ps, '"', what))
    return NULL;
  const uint8_t *start = ps->p;
  const uint8_t *q = start;
  while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
  if (q >= ps->end) {
    st_fail(ps, "unterminated string in %s", what);
    return NULL;
  }
  char *out = malloc((size_t)(q - start) + 1);
  if (out == NULL) {
    st_fail(ps, "out of host memory");
    return NULL;
  }
  size_t n = 0;
  while (*ps->p != '"') {
    uint8_t c = *ps->p;
    if (c < 0x20) {
      st_fail(ps, "control character 0x%02x inside a string in %s", c, what);
      free(out);
      return NULL;
    }
    if (c != '\\') {
      size_t len = utf8_sequence(ps->p, (size_t)(q - ps->p));
      if (len == 0) {
        st_fail(ps, "invalid UTF-8 inside a string in %s", what);
        free(out);
        return NULL;
      }
      memcpy(out + n, ps->p, len);
      n += len;
      ps->p += len;
      continue;
    }
    uint8_t e = ps->p[1];
    ps->p += 2;
    switch (e) {
      case '"':
        out[n++] = '"';
        break;
      case '\\':
        out[n++] = '\\';
        break;
      case '/':
        out[n++] = '/';
        break;
      case 'b':
        out[n++] = '\b';
        break;
      case 'f':
        out[n++] = '\f';
        break;
      case 'n':
        out[n++] = '\n';
        break;
      case 'r':
        out[n++] = '\r';
        break;
      case 't':
        out[n++] = '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (q - ps->p < 4 || !hex4(ps->p, &cp)) {
          st_fail(ps, "bad \\u escape in %s", what);
          free(out);
          return NULL;
        }
        ps->p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (q - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' || !hex4(ps->p + 2, &low) ||
              low < 0xDC00 || low > 0xDFFF) {
            st_fail(ps, "unpaired surrogate \\u%04x in %s", cp, what);
            free(out);
            return NULL;
          }
          ps->p += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          st_fail(ps, "unpaired surrogate \\u%04x in %s", cp, what);
          free(out);
          return NULL;
        } else if (cp == 0) {
          // Names and values are C strings.
          st_fail(ps, "\\u0000 inside a string in %s", what);
          free(out);
          return NULL;
        }
        n += utf8_encode(cp, out + n);
        break;
      }
      default:
        st_fail(ps, "bad escape '\\%c' in %s", e >= 0x20 && e < 0x7F ? e : '?', what);
        free(out);
        return NULL;
    }
  }
  ++ps->p;  // closing quote
  out[n] = '\0';
  return out;
}

// A non-negative JSON integer (no sign, fraction or exponent) <= INT64_MAX.
static int st_uint(st_parser *ps, const char *what, uint64_t *out) {
  st_skip_ws(ps);
  if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
    return st_fail(ps, "expected a non-negative integer in %s", what);
  }
  if (*ps->p == '0' && ps->p + 1 < ps->end && ps->p[1] >= '0' && ps->p[1] <= '9') {
    return st_fail(ps, "leading zero in an integer in %s", what);
  }
  uint64_t v = 0;
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
    uint64_t digit = (uint64_t)(*ps->p - '0');
    if (v > ((uint64_t)INT64_MAX - digit) / 10)
      return st_fail(ps, "integer too large in %s", what);
    v = v * 10 + digit;
    ++ps->p;
  }
  if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E')) {
    return st_fail(ps, "expected an integer in %s, found a fraction or exponent", what);
  }
  *out = v;
  return 0;
}

// Parses [a, b, ...] of non-negative integers; at most |max| of them.
static int st_uint_array(st_parser *ps, const char *what, uint64_t *out, int32_t max,
                         int32_t *out_count) {
  if (st_expect(ps, '[', what))
    return 1;
  int32_t n = 0;
  if (st_peek(ps, ']')) {
    ++ps->p;
    *out_count = 0;
    return 0;
  }
  for (;;) {
    if (n == max)
      return st_fail(ps, "%s has more than %d entries", what, max);
    if (st_uint(ps, what, &out[n]))
      return 1;
    ++n;
    st_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ++ps->p;
      continue;
    }
    if (st_expect(ps, ']', what))
      return 1;
    break;
  }
  *out_count = n;
  return 0;
}

static int st_entry(st_parser *ps, tsr_st_entry *entry) {
  char what[96];
  snprintf(what, sizeof(what), "tensor '%.60s'", entry->name);
  if (st_expect(ps, '{', what))
    return 1;
  int have_dtype = 0, have_shape = 0, have_offsets = 0;
  if (st_peek(ps, '}'))
    return st_fail(ps, "%s has no dtype, shape or data_offsets", what);
  for (;;) {
    char *key = st_string(ps, what);
    if (key == NULL)
      return 1;
    if (st_expect(ps, ':', what)) {
      free(key);
      return 1;
    }
    int dup = 0, bad = 0;
    if (strcmp(key, "dtype") == 0) {
      dup = have_dtype++;
      char *dtype = dup ? NULL : st_string(ps, what);
      if (!dup && dtype == NULL)
        bad = 1;
      if (dtype != NULL && !st_dtype_parse(dtype, &entry->dtype)) {
        st_fail(ps, "%s has unknown or unsupported dtype \"%.20s\" (F32 F64 BF16 F16 I32 I64 BOOL)",
                what, dtype);
        bad = 1;
      }
      free(dtype);
    } else if (strcmp(key, "shape") == 0) {
      dup = have_shape++;
      uint64_t sizes[TSR_MAX_RANK];
      int32_t rank = 0;
      if (!dup) {
        if (st_uint_array(ps, "shape", sizes, TSR_MAX_RANK, &rank)) {
          bad = 1;
        } else {
          entry->rank = rank;
          for (int32_t d = 0; d < rank; ++d) entry->sizes[d] = (int64_t)sizes[d];
        }
      }
    } else if (strcmp(key, "data_offsets") == 0) {
      dup = have_offsets++;
      uint64_t offsets[2];
      int32_t count = 0;
      if (!dup) {
        if (st_uint_array(ps, "data_offsets", offsets, 2, &count)) {
          bad = 1;
        } else if (count != 2) {
          st_fail(ps, "%s: data_offsets must be [begin, end]", what);
          bad = 1;
        } else {
          entry->begin = offsets[0];
          entry->end = offsets[1];
        }
      }
    } else {
      st_fail(ps, "%s has unknown field \"%.40s\"", what, key);
      bad = 1;
    }
    if (dup)
      st_fail(ps, "%s has field \"%s\" twice", what, key);
    free(key);
    if (dup || bad)
      return 1;
    st_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ++ps->p;
      continue;
    }
    if (st_expect(ps, '}', what))
      return 1;
    break;
  }
  if (!have_dtype || !have_shape || !have_offsets) {
    return st_fail(ps, "%s has no %s", what,
                   !have_dtype   ? "dtype"
                   : !have_shape ? "shape"
                                 : "data_offsets");
  }
  return 0;
}

static int st_metadata(st_parser *ps, tsr_st_header *h) {
  if (st_expect(ps, '{', "__metadata__"))
    return 1;
  if (st_peek(ps, '}')) {
    ++ps->p;
    return 0;
  }
  for (;;) {
    char *key = st_string(ps, "__metadata__ key");
    if (key == NULL)
      return 1;
    for (int32_t i = 0; i < h->metadata_count; ++i) {
      if (strcmp(h->metadata_keys[i], key) == 0) {
        st_fail(ps, "__metadata__ has key \"%.60s\" twice", key);
        free(key);
        return 1;
      }
    }
    char **keys = realloc(h->metadata_keys, sizeof(char *) * (size_t)(h->metadata_count + 1));
    if (keys != NULL)
      h->metadata_keys = keys;
    char **values =
        keys ? realloc(h->metadata_values, sizeof(char *) * (size_t)(h->metadata_count + 1)) : NULL;
    if (values != NULL)
      h->metadata_values = values;
    if (keys == NULL || values == NULL) {
      free(key);
      return st_fail(ps, "out of host memory");
    }
    char *value = NULL;
    if (!st_expect(ps, ':', "__metadata__")) {
      if (ps->p < ps->end && !st_peek(ps, '"')) {
        st_fail(ps, "__metadata__ value of \"%.60s\" is not a string", key);
      } else {
        value = st_string(ps, "__metadata__ value");
      }
    }
    if (value == NULL) {
      free(key);
      return 1;
    }
    h->metadata_keys[h->metadata_count] = key;
    h->metadata_values[h->metadata_count] = value;
    ++h->metadata_count;
    st_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ++ps->p;
      continue;
    }
    return st_expect(ps, '}', "__metadata__");
  }
}

static int entry_begin_cmp(const void *a, const void *b) {
  const tsr_st_entry *x = *(const tsr_st_entry *const *)a;
  const tsr_st_entry *y = *(const tsr_st_entry *const *)b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

// Shapes against offsets, then the offsets against the buffer: sorted by
// begin they must tile [0, data_bytes) exactly, as the reference
// implementation requires, so no byte is shared or unaccounted for.
static int st_check_layout(st_parser *ps, tsr_st_header *h) {
  for (int32_t i = 0; i < h->count; ++i) {
    tsr_st_entry *e = &h->entries[i];
    uint64_t bytes = tsr_dtype_size(e->dtype);
    for (int32_t d = 0; d < e->rank; ++d) {
      uint64_t s = (uint64_t)e->sizes[d];
      if (s != 0 && bytes > UINT64_MAX / s) {
        return st_fail(ps, "tensor '%.60s': the byte size of its shape overflows", e->name);
      }
      bytes *= s;
    }
    if (e->end < e->begin) {
      return st_fail(ps, "tensor '%.60s': data_offsets [%llu, %llu] end before they begin", e->name,
                     (unsigned long long)e->begin, (unsigned long long)e->end);
    }
    if (e->end - e->begin != bytes) {
      return st_fail(ps,
                     "tensor '%.60s': its shape and dtype make %llu bytes, its data_offsets "
                     "[%llu, %llu] %llu",
                     e->name, (unsigned long long)bytes, (unsigned long long)e->begin,
                     (unsigned long long)e->end, (unsigned long long)(e->end - e->begin));
    }
    if (e->end > h->data_bytes) {
      return st_fail(ps, "tensor '%.60s': data_offsets [%llu, %llu] run past the %llu-byte data",
                     e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                     (unsigned long long)h->data_bytes);
    }
  }
  tsr_st_entry **sorted = malloc(sizeof(*sorted) * ((size_t)(uint32_t)h->count + 1));
  if (sorted == NULL)
    return st_fail(ps, "out of host memory");
  for (int32_t i = 0; i < h->count; ++i) sorted[i] = &h->entries[i];
  qsort(sorted, (size_t)h->count, sizeof(*sorted), entry_begin_cmp);
  uint64_t at = 0;
  int failed = 0;
  for (int32_t i = 0; i < h->count && !failed; ++i) {
    if (sorted[i]->begin < at) {
      failed = st_fail(ps, "tensor '%.60s': data_offsets [%llu, %llu] overlap another tensor",
                       sorted[i]->name, (unsigned long long)sorted[i]->begin,
                       (unsigned long long)sorted[i]->end);
    } else if (sorted[i]->begin > at) {
      failed = st_fail(ps, "bytes [%llu, %llu) of the data belong to no tensor",
                       (unsigned long long)at, (unsigned long long)sorted[i]->begin);
    }
    at = sorted[i]->end;
  }
  free(sorted);
  if (!failed && at != h->data_bytes) {
    failed = st_fail(ps, "bytes [%llu, %llu) of the data belong to no tensor",
                     (unsigned long long)at, (unsigned long long)h->data_bytes);
  }
  return failed;
}

void tsr_st_header_free(tsr_st_header *header) {
  if (header == NULL)
    return;
  for (int32_t i = 0; i < header->count; ++i) free(header->entries[i].name);
  free(header->entries);
  for (int32_t i = 0; i < header->metadata_count; ++i) {
    free(header->metadata_keys[i]);
    free(header->metadata_values[i]);
  }
  free(header->metadata_keys);
  free(header->metadata_values);
  memset(header, 0, sizeof(*header));
}

static int st_parse_object(st_parser *ps, tsr_st_header *h) {
  if (st_expect(ps, '{', "the header object"))
    return 1;
  if (st_peek(ps, '}')) {
    ++ps->p;
    return 0;
  }
  int have_metadata = 0;
  int32_t capacity = 0;
  for (;;) {
    char *name = st_string(ps, "a tensor name");
    if (name == NULL)
      return 1;
    if (st_expect(ps, ':', "the header object")) {
      free(name);
      return 1;
    }
    if (strcmp(name, "__metadata__") == 0) {
      free(name);
      if (have_metadata++)
        return st_fail(ps, "__metadata__ appears twice");
      if (st_metadata(ps, h))
        return 1;
    } else {
      for (int32_t i = 0; i < h->count; ++i) {
        if (strcmp(h->entries[i].name, name) == 0) {
          st_fail(ps, "tensor '%.60s' appears twice", name);
          free(name);
          return 1;
        }
      }
      if (h->count == capacity) {
        if (capacity >= (1 << 24)) {
          free(name);
          return st_fail(ps, "more than %d tensors", 1 << 24);
        }
        int32_t grown = capacity ? capacity * 2 : 16;
        tsr_st_entry *entries = realloc(h->entries, sizeof(*entries) * (size_t)(uint32_t)grown);
        if (entries == NULL) {
          free(name);
          return st_fail(ps, "out of host memory");
        }
        h->entries = entries;
        capacity = grown;
      }
      tsr_st_entry *e = &h->entries[h->count++];
      memset(e, 0, sizeof(*e));
      e->name = name;
      if (st_entry(ps, e))
        return 1;
    }
    st_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ++ps->p;
      continue;
    }
    return st_expect(ps, '}', "the header object");
  }
}

int tsr_st_header_parse(const uint8_t *data, size_t size, tsr_st_header *out, char *error,
                        size_t error_size) {
  memset(out, 0, sizeof(*out));
  if (error != NULL && error_size > 0)
    error[0] = '\0';
  st_parser ps = {data, data, data, error, error_size, 0, 0};
  if (size < 8) {
    st_fail(&ps, "the file is %zu bytes, shorter than the 8-byte header length", size);
    return 1;
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > size - 8) {
    st_fail(&ps, "the header length %llu is larger than the %zu bytes after it (truncated file?)",
            (unsigned long long)n, size - 8);
    return 1;
  }
  if (n > TSR_ST_MAX_HEADER_BYTES) {
    st_fail(&ps, "the header length %llu is over the %u-byte limit", (unsigned long long)n,
            TSR_ST_MAX_HEADER_BYTES);
    return 1;
  }
  if (n < 2) {
    st_fail(&ps, "the header length %llu cannot hold a JSON object", (unsigned long long)n);
    return 1;
  }
  ps.begin = ps.p = data + 8;
  ps.at_position = 1;
  ps.end = data + 8 + n;
  out->data_start = 8 + n;
  out->data_bytes = (uint64_t)size - 8 - n;
  if (*ps.p != '{') {
    st_fail(&ps, "the header does not start with '{'");
    return 1;
  }
  int failed = st_parse_object(&ps, out);
  if (!failed) {
    st_skip_ws(&ps);
    if (ps.p != ps.end)
      failed = st_fail(&ps, "bytes after the header object");
  }
  ps.at_position = 0;
  if (!failed)
    failed = st_check_layout(&ps, out);
  if (failed) {
    st_fail(&ps, "invalid header");  // no-op when a message is set already
    tsr_st_header_free(out);
  }
  return failed;
}
