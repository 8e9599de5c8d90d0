// Element types for the oracle: rounding to each dtype's value set, the CAST
// rules of docs/abi.md 10.4, and the bit layouts. Written from IEEE 754 and
// the spec only; in particular bfloat16 and float16 are encoded here rather
// than borrowed, so a plugin's conversion bug cannot hide behind a shared one.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

int tsr_oracle_dtype_is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

int tsr_oracle_dtype_is_int(tsr_dtype_t dtype) {
  return dtype == TSR_INT32 || dtype == TSR_INT64;
}

tsr_dtype_t tsr_oracle_compute_dtype(tsr_dtype_t dtype) {
  if (dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16) return TSR_FLOAT32;
  return dtype;
}

double tsr_oracle_unit_roundoff(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64: return ldexp(1.0, -53);
    case TSR_FLOAT32: return ldexp(1.0, -24);
    case TSR_BFLOAT16: return ldexp(1.0, -8);
    case TSR_FLOAT16: return ldexp(1.0, -11);
    default: return 0.0;
  }
}

double tsr_oracle_min_normal(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64: return ldexp(1.0, -1022);
    case TSR_FLOAT32:
    case TSR_BFLOAT16: return ldexp(1.0, -126);
    case TSR_FLOAT16: return ldexp(1.0, -14);
    default: return 0.0;
  }
}

double tsr_oracle_max_finite(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64: return 1.7976931348623157e308;
    case TSR_FLOAT32: return (double)3.40282346638528859812e38f;
    case TSR_BFLOAT16: return ldexp(255.0, 120);  // 0x7F7F
    case TSR_FLOAT16: return 65504.0;
    case TSR_INT32: return 2147483647.0;
    case TSR_INT64: return 9223372036854775807.0;
    case TSR_BOOL: return 1.0;
    default: return 0.0;
  }
}

// Rounds |x| to a binary format with |precision| significand bits whose
// smallest normal is 2^|emin| and largest finite value |max|, ties to even.
static double round_to_format(double x, int precision, int emin, double max) {
  if (x == 0 || !isfinite(x)) return x;
  int e;
  frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  int exponent = e - 1;
  if (exponent < emin) exponent = emin;  // subnormal: fixed quantum
  double quantum = ldexp(1.0, exponent - (precision - 1));
  // x / quantum is exact (a power-of-two scaling); nearbyint rounds to even
  // in the default rounding mode.
  double r = nearbyint(x / quantum) * quantum;
  if (fabs(r) > max) return copysign(INFINITY, x);
  return r;
}

double tsr_oracle_round(double x, tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64: return x;
    case TSR_FLOAT32: return (double)(float)x;  // one IEEE rounding, ties to even
    case TSR_BFLOAT16: return round_to_format(x, 8, -126, tsr_oracle_max_finite(TSR_BFLOAT16));
    case TSR_FLOAT16: return round_to_format(x, 11, -14, 65504.0);
    default: return x;
  }
}

double tsr_oracle_ulp(double x, tsr_dtype_t dtype) {
  if (!tsr_oracle_dtype_is_float(dtype)) return 1.0;
  int precision = dtype == TSR_FLOAT64 ? 53 : dtype == TSR_FLOAT32 ? 24 : dtype == TSR_BFLOAT16 ? 8 : 11;
  double min_normal = tsr_oracle_min_normal(dtype);
  double a = fabs(x);
  if (!isfinite(a)) return INFINITY;
  if (a < min_normal) a = min_normal;
  int e;
  frexp(a, &e);
  return ldexp(1.0, e - precision);
}

int64_t tsr_oracle_wrap(int64_t x, tsr_dtype_t dtype) {
  if (dtype == TSR_INT32) return (int64_t)(int32_t)(uint32_t)(uint64_t)x;
  if (dtype == TSR_BOOL) return x != 0;
  return x;
}

void tsr_oracle_cast_double(double x, tsr_dtype_t dtype, double *out_v, int64_t *out_iv) {
  int64_t iv = 0;
  double v;
  switch (dtype) {
    case TSR_FLOAT32:
    case TSR_FLOAT64:
    case TSR_BFLOAT16:
    case TSR_FLOAT16:
      v = tsr_oracle_round(x, dtype);
      break;
    case TSR_BOOL:
      iv = x != 0 || isnan(x);  // NaN != 0 is true in C already; stated for the reader
      v = (double)iv;
      break;
    case TSR_INT32:
    case TSR_INT64: {
      if (isnan(x)) {
        iv = 0;
      } else {
        double t = trunc(x);
        if (dtype == TSR_INT32) {
          iv = t >= 2147483647.0 ? 2147483647 : t <= -2147483648.0 ? -2147483647 - 1 : (int64_t)t;
        } else {
          // 2^63 is the first double beyond int64's range.
          iv = t >= 9223372036854775808.0 ? INT64_MAX
               : t < -9223372036854775808.0 ? INT64_MIN
                                             : (int64_t)t;
        }
      }
      v = (double)iv;
      break;
    }
    default:
      v = x;
  }
  *out_v = v;
  *out_iv = iv;
}

void tsr_oracle_cast_int(int64_t x, tsr_dtype_t dtype, double *out_v, int64_t *out_iv) {
  switch (dtype) {
    case TSR_FLOAT64:
      *out_v = (double)x;  // one rounding, ties to even
      *out_iv = 0;
      return;
    case TSR_FLOAT32:
      // long double holds every int64 exactly (x87 extended or quad), so
      // this is a single rounding to float32, as the spec asks.
      *out_v = (double)(float)(long double)x;
      *out_iv = 0;
      return;
    case TSR_BFLOAT16:
    case TSR_FLOAT16: {
      // Round the exact integer once: split it into a part double holds
      // exactly and a remainder that only breaks ties.
      long double exact = (long double)x;
      double hi = (double)exact;
      double rounded = tsr_oracle_round(hi, dtype);
      // hi is within half an ulp(double) of x; a tie of the narrow format
      // falls on a value double holds exactly (narrow ulps are large powers
      // of two), so only the exact tie needs the remainder.
      double lo = (double)(exact - (long double)hi);
      if (lo != 0 && isfinite(rounded) && fabs(hi - rounded) == tsr_oracle_ulp(rounded, dtype) / 2) {
        double away = rounded + copysign(tsr_oracle_ulp(rounded, dtype), hi - rounded);
        if ((lo > 0) == (hi > rounded)) rounded = tsr_oracle_round(away, dtype);
      }
      *out_v = rounded;
      *out_iv = 0;
      return;
    }
    case TSR_BOOL:
      *out_iv = x != 0;
      *out_v = (double)*out_iv;
      return;
    case TSR_INT32:
    case TSR_INT64:
    default:
      *out_iv = tsr_oracle_wrap(x, dtype);
      *out_v = (double)*out_iv;
      return;
  }
}

static uint16_t float16_bits(double x) {
  double r = tsr_oracle_round(x, TSR_FLOAT16);
  uint16_t sign = signbit(r) ? 0x8000u : 0;
  if (isnan(r)) return 0x7E00u;
  double a = fabs(r);
  if (isinf(a)) return sign | 0x7C00u;
  if (a == 0) return sign;
  if (a < ldexp(1.0, -14)) return sign | (uint16_t)(a / ldexp(1.0, -24));  // subnormal
  int e;
  double m = frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint16_t exponent = (uint16_t)(e - 1 + 15);
  uint16_t mantissa = (uint16_t)((m * 2.0 - 1.0) * 1024.0);
  return sign | (uint16_t)(exponent << 10) | mantissa;
}

static double float16_value(uint16_t bits) {
  int sign = bits >> 15;
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  double v;
  if (exponent == 0) {
    v = ldexp((double)mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa ? NAN : INFINITY;
  } else {
    v = ldexp((double)(mantissa | 0x400), exponent - 25);
  }
  return sign ? -v : v;
}

static uint16_t bfloat16_bits(double x) {
  double r = tsr_oracle_round(x, TSR_BFLOAT16);
  if (isnan(r)) return signbit(r) ? 0xFFC0u : 0x7FC0u;
  float f = (float)r;  // exact: bfloat16 values are float32 values
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  return (uint16_t)(bits >> 16);
}

static double bfloat16_value(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &wide, sizeof(f));
  return (double)f;
}

void tsr_oracle_element_load(const void *src, tsr_dtype_t dtype, double *out_v, int64_t *out_iv) {
  *out_iv = 0;
  switch (dtype) {
    case TSR_FLOAT32: {
      float f;
      memcpy(&f, src, sizeof(f));
      *out_v = (double)f;
      return;
    }
    case TSR_FLOAT64:
      memcpy(out_v, src, sizeof(double));
      return;
    case TSR_BFLOAT16:
    case TSR_FLOAT16: {
      uint16_t bits;
      memcpy(&bits, src, sizeof(bits));
      *out_v = dtype == TSR_BFLOAT16 ? bfloat16_value(bits) : float16_value(bits);
      return;
    }
    case TSR_INT32: {
      int32_t i;
      memcpy(&i, src, sizeof(i));
      *out_iv = i;
      break;
    }
    case TSR_INT64:
      memcpy(out_iv, src, sizeof(int64_t));
      break;
    case TSR_BOOL: {
      uint8_t b;
      memcpy(&b, src, 1);
      // A byte other than 0 or 1 is kept as is, so a comparison can see it.
      *out_iv = b;
      break;
    }
    default:
      *out_v = 0;
      return;
  }
  *out_v = (double)*out_iv;
}

void tsr_oracle_element_store(void *dst, tsr_dtype_t dtype, double v, int64_t iv) {
  switch (dtype) {
    case TSR_FLOAT32: {
      float f = (float)v;
      memcpy(dst, &f, sizeof(f));
      return;
    }
    case TSR_FLOAT64:
      memcpy(dst, &v, sizeof(v));
      return;
    case TSR_BFLOAT16: {
      uint16_t bits = bfloat16_bits(v);
      memcpy(dst, &bits, sizeof(bits));
      return;
    }
    case TSR_FLOAT16: {
      uint16_t bits = float16_bits(v);
      memcpy(dst, &bits, sizeof(bits));
      return;
    }
    case TSR_INT32: {
      int32_t i = (int32_t)tsr_oracle_wrap(iv, TSR_INT32);
      memcpy(dst, &i, sizeof(i));
      return;
    }
    case TSR_INT64:
      memcpy(dst, &iv, sizeof(iv));
      return;
    case TSR_BOOL: {
      uint8_t b = (uint8_t)iv;
      memcpy(dst, &b, 1);
      return;
    }
    default:
      return;
  }
}

const char *tsr_oracle_dtype_name(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32: return "float32";
    case TSR_FLOAT64: return "float64";
    case TSR_BFLOAT16: return "bfloat16";
    case TSR_FLOAT16: return "float16";
    case TSR_INT32: return "int32";
    case TSR_INT64: return "int64";
    case TSR_BOOL: return "bool";
    default: return "unknown";
  }
}

// --- tensors ---------------------------------------------------------------

int tsr_oracle_tensor_create(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                             tsr_oracle_tensor *out_tensor) {
  tsr_oracle_tensor *t = out_tensor;
  memset(t, 0, sizeof(*t));
  t->dtype = dtype;
  t->rank = rank;
  t->numel = 1;
  for (int32_t d = 0; d < rank; ++d) {
    t->sizes[d] = sizes[d];
    t->numel *= sizes[d];
  }
  t->compute = tsr_oracle_compute_dtype(dtype);
  size_t n = (size_t)(t->numel > 0 ? t->numel : 1);
  t->v = calloc(n, sizeof(double));
  t->bound = calloc(n, sizeof(double));
  if (!tsr_oracle_dtype_is_float(dtype)) t->iv = calloc(n, sizeof(int64_t));
  if (t->v == NULL || t->bound == NULL || (!tsr_oracle_dtype_is_float(dtype) && t->iv == NULL)) {
    tsr_oracle_tensor_destroy(t);
    return -1;
  }
  return 0;
}

void tsr_oracle_tensor_destroy(tsr_oracle_tensor *t) {
  if (t == NULL) return;
  free(t->v);
  free(t->iv);
  free(t->bound);
  t->v = NULL;
  t->iv = NULL;
  t->bound = NULL;
}

void tsr_oracle_tensor_set(tsr_oracle_tensor *t, int64_t i, double v, int64_t iv) {
  if (t->iv != NULL) {
    t->iv[i] = iv;
    t->v[i] = (double)iv;
  } else {
    t->v[i] = v;
  }
}

int64_t tsr_oracle_tensor_offset(const tsr_oracle_tensor *t, const int64_t *index) {
  int64_t offset = 0;
  for (int32_t d = 0; d < t->rank; ++d) offset = offset * t->sizes[d] + index[d];
  return offset;
}
