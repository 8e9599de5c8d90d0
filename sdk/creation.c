// Creating tensors with computed contents: constants, ranges and random
// numbers from the context's counter-based RNG.
#include <math.h>
#include <stdlib.h>

#include "autograd_internal.h"
#include "tessera/core_layer.h"
#include "tessera/tessera.h"
#include "sdk_errors.h"

static int dtype_is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

// A contiguous tensor of |sizes| filled with |value|; errors name |what|.
static tsr_tensor *filled(const char *what, tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                          const int64_t *sizes, double value) {
  if (device == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "%s: device is NULL", what);
  tsr_tensor *t = tsr_tensor_alloc(what, device, dtype, rank, sizes);
  if (t == NULL)
    return NULL;
  if (tsr_fill_(t, value) != TSR_OK) {
    tsr_error_prefix(what);
    tsr_tensor_release(t);
    return NULL;
  }
  return t;
}

tsr_tensor *tsr_zeros(tsr_device *device, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  return filled("zeros", device, dtype, rank, sizes, 0.0);
}

tsr_tensor *tsr_ones(tsr_device *device, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  return filled("ones", device, dtype, rank, sizes, 1.0);
}

tsr_tensor *tsr_full_like(const tsr_tensor *like, double value) {
  if (like == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "full_like: like is NULL");
  return filled("full_like", tsr_tensor_device(like), tsr_tensor_dtype(like), tsr_tensor_rank(like),
                tsr_tensor_sizes(like), value);
}

// Largest element count arange computes on the host; beyond 2^53 the double
// positions would repeat.
#define ARANGE_MAX_COUNT 9007199254740992.0

tsr_tensor *tsr_arange(tsr_device *device, tsr_dtype_t dtype, double start, double end,
                       double step) {
  if (device == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "arange: device is NULL");
  if (!isfinite(start) || !isfinite(end) || !isfinite(step)) {
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                         "arange: start %g, end %g and step %g must all be finite", start, end,
                         step);
  }
  if (step == 0.0)
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT, "arange: step is 0");
  if (dtype == TSR_BOOL || tsr_dtype_size(dtype) == 0) {
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                         "arange: dtype %d is not a number type (float or int)", dtype);
  }
  double span = ceil((end - start) / step);
  if (!(span <= ARANGE_MAX_COUNT)) {
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                         "arange: [%g, %g) with step %g has %g elements, more than 2^53", start,
                         end, step, span);
  }
  int64_t count = span > 0.0 ? (int64_t)span : 0;
  if (count > 0 && (dtype == TSR_INT32 || dtype == TSR_INT64)) {
    // The sequence is monotonic: its ends bound every value.
    double lo = trunc(start), hi = trunc(start + (double)(count - 1) * step);
    double min = dtype == TSR_INT32 ? (double)INT32_MIN : -9223372036854775808.0;
    double max = dtype == TSR_INT32 ? (double)INT32_MAX : 9223372036854775807.0;
    if (lo < min || lo >= max + 1.0 || hi < min || hi >= max + 1.0) {
      return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                           "arange: values from %g to %g do not fit dtype %s", lo, hi,
                           dtype == TSR_INT32 ? "int32" : "int64");
    }
  }
  // bfloat16 and float16 are made in float32 and cast by the device.
  tsr_dtype_t host_dtype = (dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16) ? TSR_FLOAT32 : dtype;
  size_t elem = tsr_dtype_size(host_dtype);
  void *data = calloc(count > 0 ? (size_t)count : 1, elem);
  if (data == NULL) {
    return tsr_sdk_fail(device, TSR_OUT_OF_MEMORY, "arange: no host memory for %lld elements",
                         (long long)count);
  }
  for (int64_t i = 0; i < count; ++i) {
    double v = start + (double)i * step;
    switch (host_dtype) {
      case TSR_FLOAT32:
        ((float *)data)[i] = (float)v;
        break;
      case TSR_FLOAT64:
        ((double *)data)[i] = v;
        break;
      case TSR_INT32:
        ((int32_t *)data)[i] = (int32_t)v;
        break;
      default:
        ((int64_t *)data)[i] = (int64_t)v;
        break;
    }
  }
  int64_t sizes[1] = {count};
  tsr_tensor *t = tsr_tensor_from_host(device, host_dtype, 1, sizes, data);
  free(data);
  if (t == NULL || host_dtype == dtype)
    return t;
  tsr_tensor *cast = tsr_cast(t, dtype);
  tsr_tensor_release(t);
  return cast;
}

// Runs RNG_FILL on |tensor| with |seed| and |offset|.
static tsr_status rng_run(const char *what, tsr_tensor *tensor, tsr_rng_distribution_t distribution,
                          double a, double b, uint64_t seed, uint64_t offset) {
  tsr_rng_fill_attrs attrs = {sizeof(attrs), distribution, 0, seed, offset, a, b};
  tsr_status status = tsr_dispatch(TSR_OP_RNG_FILL, 0, NULL, 1, &tensor, &attrs);
  if (status != TSR_OK)
    tsr_error_prefix(what);
  return status;
}

static tsr_status rng_args_check(const char *what, const tsr_tensor *tensor,
                                 tsr_rng_distribution_t distribution, double a, double b) {
  switch (distribution) {
    case TSR_RNG_UNIFORM:
      if (!isfinite(a) || !isfinite(b) || a > b) {
        return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                        "%s: uniform bounds [%g, %g) must be finite with low <= high", what, a, b);
      }
      break;
    case TSR_RNG_NORMAL:
      if (!isfinite(a) || !isfinite(b) || b < 0.0) {
        return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                        "%s: normal mean %g and std %g must be finite with std >= 0", what, a, b);
      }
      break;
    case TSR_RNG_BERNOULLI:
      if (!(a >= 0.0 && a <= 1.0)) {
        return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                        "%s: bernoulli probability %g is outside [0, 1]", what, a);
      }
      break;
    default:
      return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                      "%s: distribution %d is not a tsr_rng_distribution_t", what, distribution);
  }
  if (distribution != TSR_RNG_BERNOULLI && !dtype_is_float(tsr_tensor_dtype(tensor))) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "%s: uniform and normal numbers need a float dtype, the tensor has dtype %d",
                    what, tsr_tensor_dtype(tensor));
  }
  return TSR_OK;
}

// A new tensor filled from the context RNG of |device|.
static tsr_tensor *random_tensor(const char *what, tsr_device *device, tsr_dtype_t dtype,
                                 int32_t rank, const int64_t *sizes,
                                 tsr_rng_distribution_t distribution, double a, double b) {
  if (device == NULL)
    return tsr_sdk_fail(NULL, TSR_INVALID_ARGUMENT, "%s: device is NULL", what);
  if (!dtype_is_float(dtype)) {
    return tsr_sdk_fail(device, TSR_INVALID_ARGUMENT,
                         "%s: dtype %d is not a float dtype (float32, float64, bfloat16, float16)",
                         what, dtype);
  }
  tsr_tensor *t = tsr_tensor_alloc(what, device, dtype, rank, sizes);
  if (t == NULL)
    return NULL;
  tsr_context *context = tsr_device_context_get(device);
  if (rng_args_check(what, t, distribution, a, b) != TSR_OK) {
    tsr_tensor_release(t);
    return NULL;
  }
  uint64_t offset = tsr_context_rng_claim(context, (uint64_t)tsr_tensor_numel(t));
  if (rng_run(what, t, distribution, a, b, tsr_context_seed(context), offset) != TSR_OK) {
    tsr_tensor_release(t);
    return NULL;
  }
  return t;
}

tsr_tensor *tsr_rand(tsr_device *device, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                     double low, double high) {
  return random_tensor("rand", device, dtype, rank, sizes, TSR_RNG_UNIFORM, low, high);
}

tsr_tensor *tsr_randn(tsr_device *device, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                      double mean, double std) {
  return random_tensor("randn", device, dtype, rank, sizes, TSR_RNG_NORMAL, mean, std);
}

tsr_status tsr_rng_fill_(tsr_tensor *tensor, tsr_rng_distribution_t distribution, double a,
                         double b) {
  if (tensor == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "rng_fill_: tensor is NULL");
  TSR_RETURN_IF_ERROR(tsr_ag_check_inplace("rng_fill_", tensor));
  TSR_RETURN_IF_ERROR(rng_args_check("rng_fill_", tensor, distribution, a, b));
  tsr_context *context = tsr_device_context_get(tsr_tensor_device(tensor));
  uint64_t offset = tsr_context_rng_claim(context, (uint64_t)tsr_tensor_numel(tensor));
  return rng_run("rng_fill_", tensor, distribution, a, b, tsr_context_seed(context), offset);
}

tsr_status tsr_rng_fill_seeded_(tsr_tensor *tensor, tsr_rng_distribution_t distribution, double a,
                                double b, uint64_t seed, uint64_t offset) {
  if (tensor == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "rng_fill_seeded_: tensor is NULL");
  }
  TSR_RETURN_IF_ERROR(tsr_ag_check_inplace("rng_fill_seeded_", tensor));
  TSR_RETURN_IF_ERROR(rng_args_check("rng_fill_seeded_", tensor, distribution, a, b));
  return rng_run("rng_fill_seeded_", tensor, distribution, a, b, seed, offset);
}
