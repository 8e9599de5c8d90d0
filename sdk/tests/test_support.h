// Helpers shared by the SDK tests: contexts on one named plugin, host data in
// any dtype, a deterministic generator, and value checks that say which
// element differs. Include after <cmocka.h>.
#ifndef TESSERA_SDK_TESTS_TEST_SUPPORT_H_
#define TESSERA_SDK_TESTS_TEST_SUPPORT_H_

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "tessera/tessera.h"

// Creates a context that loads only |plugin_path| (colon-separated) with
// fallback denied, so an op runs on the device under test or fails.
static inline tsr_context *ts_context_create(const char *plugin_path, const char *device) {
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = plugin_path;
  options.device = device;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  options.fallback = TSR_FALLBACK_DENY;
  tsr_context *context = NULL;
  tsr_status status = tsr_context_create(&options, &context);
  if (status != TSR_OK) {
    fprintf(stderr, "tsr_context_create(%s, %s): %s: %s\n", plugin_path, device ? device : "NULL",
            tsr_status_name(status), tsr_last_error());
    return NULL;
  }
  return context;
}

// Creates a context on |plugin_path| whose default device must be |device|
// (by name). Returns 0, or -1 after printing why (a CMocka group setup's
// failure value).
static inline int ts_device_open(const char *plugin_path, const char *device,
                                 tsr_context **out_context, tsr_device **out_device) {
  *out_context = ts_context_create(plugin_path, device);
  if (*out_context == NULL) return -1;
  *out_device = tsr_context_default_device(*out_context);
  if (*out_device == NULL || strcmp(tsr_device_name(*out_device), device) != 0) {
    fprintf(stderr, "default device is %s, not %s\n",
            *out_device ? tsr_device_name(*out_device) : "NULL", device);
    return -1;
  }
  return 0;
}

// The library's dtype names, for test messages.
static inline const char *ts_dtype_name(tsr_dtype_t dtype) { return tsr_dtype_name(dtype); }

// --- host data ----------------------------------------------------------------

// Converts |n| doubles to |dtype| (C conversions; bool is v != 0). Not
// inlined: GCC 12 at -O3 inlines it into callers with small constant arrays,
// vectorises the loop, and then warns that the array "may be used
// uninitialized" in the vector path it cannot prove dead.
__attribute__((noinline)) static void ts_pack(tsr_dtype_t dtype, const double *v, int64_t n,
                                              void *out) {
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case TSR_FLOAT32: ((float *)out)[i] = (float)v[i]; break;
      case TSR_FLOAT64: ((double *)out)[i] = v[i]; break;
      case TSR_INT32: ((int32_t *)out)[i] = (int32_t)v[i]; break;
      case TSR_INT64: ((int64_t *)out)[i] = (int64_t)v[i]; break;
      case TSR_BOOL: ((uint8_t *)out)[i] = v[i] != 0; break;
      default: break;
    }
  }
}

static inline void ts_unpack(tsr_dtype_t dtype, const void *in, int64_t n, double *v) {
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case TSR_FLOAT32: v[i] = ((const float *)in)[i]; break;
      case TSR_FLOAT64: v[i] = ((const double *)in)[i]; break;
      case TSR_INT32: v[i] = ((const int32_t *)in)[i]; break;
      case TSR_INT64: v[i] = (double)((const int64_t *)in)[i]; break;
      case TSR_BOOL: v[i] = ((const uint8_t *)in)[i]; break;
      default: v[i] = NAN; break;
    }
  }
}

// A tensor of |dtype| holding |values| (row-major) converted as ts_pack does.
static inline tsr_tensor *ts_tensor(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                    const int64_t *sizes, const double *values) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  void *buf = malloc((size_t)(n > 0 ? n : 1) * 8);
  if (buf == NULL) return NULL;
  ts_pack(dtype, values, n, buf);
  tsr_tensor *t = tsr_tensor_from_host(device, dtype, rank, sizes, buf);
  free(buf);
  if (t == NULL) fprintf(stderr, "tsr_tensor_from_host: %s\n", tsr_last_error());
  return t;
}

// Reads |t| (any layout) into row-major doubles; returns numel or -1.
static inline int64_t ts_read(const tsr_tensor *t, double *out, int64_t capacity) {
  int64_t n = tsr_tensor_numel(t);
  if (n < 0 || n > capacity) return -1;
  size_t bytes = (size_t)n * tsr_dtype_size(tsr_tensor_dtype(t));
  void *buf = malloc(bytes ? bytes : 1);
  if (buf == NULL) return -1;
  tsr_status status = tsr_tensor_to_host(t, buf, bytes);
  if (status != TSR_OK) {
    fprintf(stderr, "tsr_tensor_to_host: %s\n", tsr_last_error());
    free(buf);
    return -1;
  }
  ts_unpack(tsr_tensor_dtype(t), buf, n, out);
  free(buf);
  return n;
}

// Reads an int64 tensor exactly.
static inline int64_t ts_read_i64(const tsr_tensor *t, int64_t *out, int64_t capacity) {
  int64_t n = tsr_tensor_numel(t);
  if (n < 0 || n > capacity || tsr_tensor_dtype(t) != TSR_INT64) return -1;
  if (tsr_tensor_to_host(t, out, (size_t)n * 8) != TSR_OK) {
    fprintf(stderr, "tsr_tensor_to_host: %s\n", tsr_last_error());
    return -1;
  }
  return n;
}

// --- generator ------------------------------------------------------------------

typedef struct ts_rng {
  uint64_t state;
} ts_rng;

static inline uint64_t ts_rng_next(ts_rng *r) {
  // splitmix64
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [lo, hi), rounded to float when |dtype| is float32 and to an
// integer for int and bool dtypes, so the host copy is exactly the device's.
static inline double ts_rng_value(ts_rng *r, tsr_dtype_t dtype, double lo, double hi) {
  double u = (double)(ts_rng_next(r) >> 11) * 0x1.0p-53;
  double v = lo + (hi - lo) * u;
  switch (dtype) {
    case TSR_FLOAT32: return (double)(float)v;
    case TSR_INT32:
    case TSR_INT64: return floor(v);
    case TSR_BOOL: return u < 0.5 ? 0.0 : 1.0;
    default: return v;
  }
}

static inline void ts_rng_fill(ts_rng *r, tsr_dtype_t dtype, double lo, double hi, double *v,
                               int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = ts_rng_value(r, dtype, lo, hi);
}

// --- checks ---------------------------------------------------------------------

// Compares |got| to |want| elementwise: |got - want| <= rtol * |want| + atol
// (+ tol[i] when |tol| is given). For float32 |want| is first rounded to
// float. NaN must meet NaN, infinities must match exactly. Ints and bools
// compare exactly. Fails the test naming |what| and the first bad element.
static inline void ts_expect_values(const char *what, tsr_dtype_t dtype, const double *got,
                                    const double *want, const double *tol, int64_t n, double rtol,
                                    double atol) {
  for (int64_t i = 0; i < n; ++i) {
    double w = want[i];
    if (dtype == TSR_FLOAT32) w = (double)(float)w;
    double g = got[i];
    int ok;
    if (isnan(w) || isnan(g)) {
      ok = isnan(w) && isnan(g);
    } else if (isinf(w) || isinf(g)) {
      ok = g == w;
    } else if (!orc_is_float(dtype)) {
      ok = g == w;
    } else {
      double bound = rtol * fabs(w) + atol + (tol ? tol[i] : 0.0);
      ok = fabs(g - w) <= bound;
    }
    if (!ok) {
      fail_msg("%s (%s): element %lld is %.17g, expected %.17g (|diff| %.3g, rtol %.3g atol %.3g)",
               what, ts_dtype_name(dtype), (long long)i, g, w, fabs(g - w), rtol, atol);
    }
  }
}

// Default elementwise tolerances by dtype.
static inline double ts_rtol(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 2e-6 : dtype == TSR_FLOAT64 ? 1e-12 : 0.0;
}
static inline double ts_atol(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 ? 1e-6 : dtype == TSR_FLOAT64 ? 1e-12 : 0.0;
}

#define TS_ASSERT_TENSOR(t)                                                 \
  do {                                                                      \
    if ((t) == NULL) fail_msg("%s is NULL: %s", #t, tsr_last_error());     \
  } while (0)

#define TS_ASSERT_OK(expr)                                                  \
  do {                                                                      \
    tsr_status ts_status_ = (expr);                                         \
    if (ts_status_ != TSR_OK) {                                             \
      fail_msg("%s: %s: %s", #expr, tsr_status_name(ts_status_), tsr_last_error()); \
    }                                                                       \
  } while (0)

#endif  // TESSERA_SDK_TESTS_TEST_SUPPORT_H_
