// Looking at tensors: tsr_tensor_format, tsr_tensor_print and
// tsr_shape_format (tessera/print.h), after PyTorch's torch/_tensor_str.py.
//
// The text goes through a sink that counts every byte and stores those that
// fit, so one pass both measures and writes (snprintf's contract).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/core_layer.h"
#include "tessera/tessera.h"

// --- the sink ----------------------------------------------------------------

typedef struct sink {
  char *buf;    // may be NULL when size is 0
  size_t size;  // bytes of buf, the NUL included
  size_t len;   // bytes of text so far, stored or not
} sink;

static void put(sink *s, const char *text, size_t n) {
  if (s->size > 0 && s->len < s->size - 1) {
    size_t room = s->size - 1 - s->len;
    memcpy(s->buf + s->len, text, n < room ? n : room);
  }
  s->len += n;
}

static void put_str(sink *s, const char *text) {
  put(s, text, strlen(text));
}

static void put_spaces(sink *s, int64_t n) {
  static const char kSpaces[] = "                                ";
  while (n > 0) {
    size_t k = n < 32 ? (size_t)n : 32;
    put(s, kSpaces, k);
    n -= (int64_t)k;
  }
}

// NUL-terminates the stored text and reports the length; a |buf| that was
// too small fails. Not a sticky context error: measuring and retrying with a
// larger buffer is the expected use.
static tsr_status sink_finish(const sink *s, const char *what, size_t *out_length) {
  if (s->size > 0)
    s->buf[s->len < s->size ? s->len : s->size - 1] = '\0';
  if (out_length != NULL)
    *out_length = s->len;
  if (s->buf != NULL && s->len >= s->size) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: size is %zu, the text needs %zu bytes with its NUL (truncated)", what,
                         s->size, s->len + 1);
  }
  return TSR_OK;
}

// --- shapes --------------------------------------------------------------------

static void put_shape(sink *s, int32_t rank, const int64_t *sizes) {
  char tmp[32];
  put_str(s, "[");
  for (int32_t d = 0; d < rank; ++d) {
    int n = snprintf(tmp, sizeof(tmp), d ? ", %lld" : "%lld", (long long)sizes[d]);
    put(s, tmp, (size_t)n);
  }
  put_str(s, "]");
}

tsr_status tsr_shape_format(int32_t rank, const int64_t *sizes, char *buf, size_t size,
                            size_t *out_length) {
  if (rank < 0 || rank > TSR_MAX_RANK || (rank > 0 && sizes == NULL) ||
      (buf == NULL && size != 0)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "shape_format: rank %d (0..%d), sizes %s, buf %s with size %zu", rank,
                         TSR_MAX_RANK, sizes ? "set" : "NULL", buf ? "set" : "NULL", size);
  }
  sink s = {buf, size, 0};
  put_shape(&s, rank, sizes);
  return sink_finish(&s, "shape_format", out_length);
}

// --- values --------------------------------------------------------------------

static double half_to_double(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  double v;
  if (exponent == 0)
    v = ldexp((double)mantissa, -24);
  else if (exponent == 31)
    v = mantissa ? NAN : INFINITY;
  else
    v = ldexp((double)(mantissa + 1024), exponent - 25);
  return (h >> 15) ? -v : v;
}

static double bfloat16_to_double(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

// The host copy of a tensor and what printing it needs.
typedef struct printer {
  const void *data;  // row-major, numel elements of dtype
  tsr_dtype_t dtype;
  int32_t rank;
  const int64_t *sizes;
  int64_t strides[TSR_MAX_RANK];  // row-major, in elements
  int summarize;
  int64_t edge;
  int32_t precision;
  int32_t line_width;
  // The formatter (PyTorch's _Formatter), set by scan.
  int floating;
  int int_mode;
  int sci_mode;
  int max_width;
  int any_nonzero_finite;
  double abs_min, abs_max;
} printer;

static int is_float_dtype(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_FLOAT16 ||
         dtype == TSR_BFLOAT16;
}

static double value_f(const printer *p, int64_t i) {
  switch (p->dtype) {
    case TSR_FLOAT32: return ((const float *)p->data)[i];
    case TSR_FLOAT64: return ((const double *)p->data)[i];
    case TSR_FLOAT16: return half_to_double(((const uint16_t *)p->data)[i]);
    case TSR_BFLOAT16: return bfloat16_to_double(((const uint16_t *)p->data)[i]);
    default: return 0.0;
  }
}

static int64_t value_i(const printer *p, int64_t i) {
  switch (p->dtype) {
    case TSR_INT32: return ((const int32_t *)p->data)[i];
    case TSR_INT64: return ((const int64_t *)p->data)[i];
    case TSR_BOOL: return ((const uint8_t *)p->data)[i] != 0;
    default: return 0;
  }
}

// Writes element |i| without padding into |tmp| (>= 64 bytes); returns its length.
static int format_value(const printer *p, int64_t i, char *tmp, size_t cap) {
  if (!p->floating) {
    if (p->dtype == TSR_BOOL)
      return snprintf(tmp, cap, "%s", value_i(p, i) ? "True" : "False");
    return snprintf(tmp, cap, "%lld", (long long)value_i(p, i));
  }
  double v = value_f(p, i);
  if (isnan(v))
    return snprintf(tmp, cap, "nan");
  if (isinf(v))
    return snprintf(tmp, cap, "%s", v > 0 ? "inf" : "-inf");
  if (p->sci_mode)
    return snprintf(tmp, cap, "%.*e", p->precision, v);
  if (p->int_mode)
    return snprintf(tmp, cap, "%.0f.", v);
  return snprintf(tmp, cap, "%.*f", p->precision, v);
}

// Whether index |k| of dim |d| is printed.
static int shown(const printer *p, int32_t d, int64_t k) {
  int64_t n = p->sizes[d];
  return !p->summarize || n <= 2 * p->edge || k < p->edge || k >= n - p->edge;
}

// First pass over the printed elements: the min and max nonzero finite
// magnitudes and whether all are whole (floats), or the widest text (others).
static void scan_stats(printer *p, int32_t d, int64_t base) {
  if (d == p->rank) {
    if (!p->floating) {
      char tmp[64];
      int n = format_value(p, base, tmp, sizeof(tmp));
      if (n > p->max_width) p->max_width = n;
      return;
    }
    double v = value_f(p, base);
    if (!isfinite(v) || v == 0.0)
      return;
    double a = fabs(v);
    if (!p->any_nonzero_finite || a < p->abs_min) p->abs_min = a;
    if (!p->any_nonzero_finite || a > p->abs_max) p->abs_max = a;
    p->any_nonzero_finite = 1;
    if (v != ceil(v)) p->int_mode = 0;
    return;
  }
  for (int64_t k = 0; k < p->sizes[d]; ++k) {
    if (!shown(p, d, k)) {
      k = p->sizes[d] - p->edge - 1;
      continue;
    }
    scan_stats(p, d + 1, base + k * p->strides[d]);
  }
}

// Second pass (floats): the widest nonzero finite value in the chosen mode.
static void scan_width(printer *p, int32_t d, int64_t base) {
  if (d == p->rank) {
    double v = value_f(p, base);
    if (!isfinite(v) || v == 0.0)
      return;
    char tmp[64];
    int n = format_value(p, base, tmp, sizeof(tmp));
    if (n > p->max_width) p->max_width = n;
    return;
  }
  for (int64_t k = 0; k < p->sizes[d]; ++k) {
    if (!shown(p, d, k)) {
      k = p->sizes[d] - p->edge - 1;
      continue;
    }
    scan_width(p, d + 1, base + k * p->strides[d]);
  }
}

static void formatter_init(printer *p) {
  p->floating = is_float_dtype(p->dtype);
  p->int_mode = 1;
  p->sci_mode = 0;
  p->max_width = 1;
  p->any_nonzero_finite = 0;
  scan_stats(p, 0, 0);
  if (!p->floating || !p->any_nonzero_finite)
    return;
  double ratio = p->abs_max / p->abs_min;
  p->sci_mode = ratio > 1000.0 || p->abs_max > 1.0e8 || (!p->int_mode && p->abs_min < 1.0e-4);
  scan_width(p, 0, 0);
}

static void put_value(sink *s, const printer *p, int64_t i) {
  char tmp[64];
  int n = format_value(p, i, tmp, sizeof(tmp));
  put_spaces(s, p->max_width - n);
  put(s, tmp, (size_t)n);
}

// One item of a row, wrapping every |per_line| items (PyTorch's _vector_str).
static void put_item_sep(sink *s, int64_t item, int64_t per_line, int64_t indent) {
  if (item == 0)
    return;
  if (item % per_line == 0) {
    put_str(s, ",\n");
    put_spaces(s, indent + 1);
  } else {
    put_str(s, ", ");
  }
}

static void put_tensor(sink *s, const printer *p, int32_t d, int64_t base, int64_t indent) {
  int64_t n = p->sizes[d];
  int elided = p->summarize && n > 2 * p->edge;
  put_str(s, "[");
  if (d == p->rank - 1) {
    int64_t element_length = p->max_width + 2;
    int64_t per_line = (p->line_width - indent) / element_length;
    if (per_line < 1) per_line = 1;
    int64_t item = 0;
    if (p->summarize && p->edge == 0) {
      put_str(s, "...");
    } else {
      for (int64_t k = 0; k < n; ++k) {
        if (elided && k == p->edge) {
          put_item_sep(s, item++, per_line, indent);
          put_str(s, " ...");
          k = n - p->edge - 1;
          continue;
        }
        put_item_sep(s, item++, per_line, indent);
        put_value(s, p, base + k);
      }
    }
    put_str(s, "]");
    return;
  }
  int32_t sub_dims = p->rank - d;  // PyTorch's self.dim()
  for (int64_t k = 0; k < n; ++k) {
    if (k > 0) {
      put_str(s, ",");
      for (int32_t j = 0; j < sub_dims - 1; ++j) put_str(s, "\n");
      put_spaces(s, indent + 1);
    }
    if (elided && k == p->edge) {
      put_str(s, "...");
      k = n - p->edge - 1;
      continue;
    }
    put_tensor(s, p, d + 1, base + k * p->strides[d], indent + 1);
  }
  put_str(s, "]");
}

// --- tensors -------------------------------------------------------------------

void tsr_format_options_init(tsr_format_options *options) {
  if (options == NULL)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->precision = 4;
  options->edge_items = 3;
  options->threshold = 1000;
  options->line_width = 80;
}

tsr_status tsr_tensor_format(const tsr_tensor *tensor, char *buf, size_t size,
                             const tsr_format_options *options, size_t *out_length) {
  if (tensor == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_format: tensor is NULL");
  if (!tsr_tensor_handle_is_live(tensor))
    return tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_format: the handle was released");
  tsr_device *device = tsr_tensor_device(tensor);
  if (buf == NULL && size != 0) {
    return tsr_fail(device, TSR_INVALID_ARGUMENT,
                    "tensor_format: buf is NULL but size is %zu (0 measures)", size);
  }
  tsr_format_options o;
  tsr_format_options_init(&o);
  if (options != NULL) {
    if (options->struct_size < sizeof(*options)) {
      return tsr_fail(device, TSR_INVALID_ARGUMENT,
                      "tensor_format: options->struct_size is %zu, expected %zu "
                      "(tsr_format_options_init)",
                      options->struct_size, sizeof(*options));
    }
    o = *options;
  }
  if (o.precision < 0 || o.precision > 30 || o.edge_items < 0 || o.threshold < 0 ||
      o.line_width < 1) {
    return tsr_fail(device, TSR_INVALID_ARGUMENT,
                    "tensor_format: precision %d (0..30), edge_items %d (>= 0), threshold %lld "
                    "(>= 0), line_width %d (>= 1)",
                    o.precision, o.edge_items, (long long)o.threshold, o.line_width);
  }
  tsr_dtype_t dtype = tsr_tensor_dtype(tensor);
  size_t elem = tsr_dtype_size(dtype);
  if (elem == 0)
    return tsr_fail(device, TSR_INVALID_ARGUMENT, "tensor_format: dtype %d is unknown", dtype);

  printer p;
  memset(&p, 0, sizeof(p));
  p.dtype = dtype;
  p.rank = tsr_tensor_rank(tensor);
  p.sizes = tsr_tensor_sizes(tensor);
  int64_t numel = tsr_tensor_numel(tensor);
  p.summarize = numel > o.threshold;
  p.edge = o.edge_items;
  p.precision = o.precision;
  p.line_width = o.line_width;
  int64_t stride = 1;
  for (int32_t d = p.rank - 1; d >= 0; --d) {
    p.strides[d] = stride;
    stride *= p.sizes[d];
  }

  void *data = NULL;
  if (numel > 0) {
    size_t bytes = (size_t)numel * elem;
    data = malloc(bytes);
    if (data == NULL) {
      return tsr_fail(device, TSR_OUT_OF_MEMORY, "tensor_format: %zu bytes for the host copy",
                      bytes);
    }
    tsr_status status = tsr_tensor_to_host(tensor, data, bytes);
    if (status != TSR_OK) {
      free(data);
      return tsr_error_prefix("tensor_format");
    }
  }
  p.data = data;

  sink s = {buf, size, 0};
  const int64_t indent = 7;  // strlen("tensor(")
  put_str(&s, "tensor(");
  if (numel == 0) {
    put_str(&s, "[]");
    if (p.rank != 1) {
      put_str(&s, ", size=");
      put_shape(&s, p.rank, p.sizes);
    }
  } else {
    formatter_init(&p);
    if (p.rank == 0)
      put_value(&s, &p, 0);
    else
      put_tensor(&s, &p, 0, 0, indent);
  }
  put_str(&s, ", dtype=");
  put_str(&s, tsr_dtype_name(dtype));
  put_str(&s, ", device=");
  put_str(&s, tsr_device_name(device));
  if (tsr_tensor_requires_grad(tensor))
    put_str(&s, ", requires_grad=True");
  put_str(&s, ")");
  free(data);
  return sink_finish(&s, "tensor_format", out_length);
}

tsr_status tsr_tensor_print(const tsr_tensor *tensor) {
  size_t length = 0;
  TSR_RETURN_IF_ERROR(tsr_tensor_format(tensor, NULL, 0, NULL, &length));
  char *text = malloc(length + 2);
  if (text == NULL) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_OUT_OF_MEMORY,
                    "tensor_print: %zu bytes for the text", length + 2);
  }
  tsr_status status = tsr_tensor_format(tensor, text, length + 1, NULL, NULL);
  if (status == TSR_OK) {
    text[length] = '\n';
    if (fwrite(text, 1, length + 1, stdout) != length + 1)
      status = tsr_error_set(TSR_UNAVAILABLE, "tensor_print: writing to stdout failed");
  }
  free(text);
  return status;
}
