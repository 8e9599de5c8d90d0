// Parameter initialisers with PyTorch's schemes (torch.nn.init), drawing from
// the tensor's context RNG.
#include <math.h>

#include "tessera/core_layer.h"
#include "module_internal.h"
#include "tessera/tessera.h"

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

static tsr_status check_tensor(const char *what, const tsr_tensor *tensor) {
  if (tensor == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: tensor is NULL", what);
  if (!is_float(tsr_tensor_dtype(tensor))) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "%s: tensor has dtype %d; initialisers fill float tensors", what,
                    tsr_tensor_dtype(tensor));
  }
  return TSR_OK;
}

// torch.nn.init._calculate_fan_in_and_fan_out: a weight [out, in, k...] has
// fan_in = in * prod(k) and fan_out = out * prod(k).
static tsr_status fans(const char *what, const tsr_tensor *tensor, double *out_fan_in,
                       double *out_fan_out) {
  if (tsr_tensor_rank(tensor) < 2) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "%s: fan_in and fan_out need a tensor of rank >= 2, this one has rank %d", what,
                    tsr_tensor_rank(tensor));
  }
  double receptive = 1.0;
  for (int32_t d = 2; d < tsr_tensor_rank(tensor); ++d)
    receptive *= (double)tsr_tensor_sizes(tensor)[d];
  *out_fan_in = (double)tsr_tensor_sizes(tensor)[1] * receptive;
  *out_fan_out = (double)tsr_tensor_sizes(tensor)[0] * receptive;
  return TSR_OK;
}

// Fills with grad mode off: initialising a parameter is not part of any graph
// (torch.nn.init runs under no_grad), and the in-place check would refuse it.
static tsr_status fill(tsr_tensor *tensor, tsr_rng_distribution_t distribution, double a,
                       double b) {
  if (tsr_tensor_rank(tensor) > 0) {
    int64_t numel = 1;
    for (int32_t d = 0; d < tsr_tensor_rank(tensor); ++d) numel *= tsr_tensor_sizes(tensor)[d];
    if (numel == 0)
      return TSR_OK;
  }
  int prev = tsr_grad_mode_set(0);
  tsr_status status = tsr_rng_fill_(tensor, distribution, a, b);
  tsr_grad_mode_set(prev);
  return status;
}

double tsr_init_gain(tsr_nonlinearity_t nonlinearity, double param) {
  switch (nonlinearity) {
    case TSR_NONLINEARITY_LINEAR:
      return 1.0;
    case TSR_NONLINEARITY_RELU:
      return sqrt(2.0);
    case TSR_NONLINEARITY_LEAKY_RELU:
      return sqrt(2.0 / (1.0 + param * param));
    case TSR_NONLINEARITY_TANH:
      return 5.0 / 3.0;
    default:
      tsr_error_set(TSR_INVALID_ARGUMENT,
                    "init_gain: nonlinearity %d is not one of TSR_NONLINEARITY_*", nonlinearity);
      return NAN;
  }
}

tsr_status tsr_init_uniform_(tsr_tensor *tensor, double low, double high) {
  TSR_RETURN_IF_ERROR(check_tensor("init_uniform_", tensor));
  if (!(low <= high) || !isfinite(low) || !isfinite(high)) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "init_uniform_: the range [%g, %g) is empty or not finite", low, high);
  }
  return fill(tensor, TSR_RNG_UNIFORM, low, high);
}

tsr_status tsr_init_normal_(tsr_tensor *tensor, double mean, double std) {
  TSR_RETURN_IF_ERROR(check_tensor("init_normal_", tensor));
  if (!(std >= 0.0) || !isfinite(std) || !isfinite(mean)) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "init_normal_: mean %g and std %g (std must be finite and >= 0)", mean, std);
  }
  return fill(tensor, TSR_RNG_NORMAL, mean, std);
}

// The std of kaiming_* (torch.nn.init.kaiming_*: |a| only matters for leaky_relu).
static tsr_status kaiming_std(const char *what, const tsr_tensor *tensor, double a,
                              tsr_fan_mode_t mode, tsr_nonlinearity_t nonlinearity,
                              double *out_std) {
  TSR_RETURN_IF_ERROR(check_tensor(what, tensor));
  if (mode != TSR_FAN_IN && mode != TSR_FAN_OUT) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "%s: mode %d is neither TSR_FAN_IN nor TSR_FAN_OUT", what, mode);
  }
  double fan_in = 0.0, fan_out = 0.0;
  TSR_RETURN_IF_ERROR(fans(what, tensor, &fan_in, &fan_out));
  double gain = tsr_init_gain(nonlinearity, a);
  if (isnan(gain)) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "%s: nonlinearity %d is not one of TSR_NONLINEARITY_*", what, nonlinearity);
  }
  double fan = mode == TSR_FAN_IN ? fan_in : fan_out;
  *out_std = fan > 0.0 ? gain / sqrt(fan) : 0.0;
  return TSR_OK;
}

tsr_status tsr_init_kaiming_uniform_(tsr_tensor *tensor, double a, tsr_fan_mode_t mode,
                                     tsr_nonlinearity_t nonlinearity) {
  double std = 0.0;
  TSR_RETURN_IF_ERROR(kaiming_std("init_kaiming_uniform_", tensor, a, mode, nonlinearity, &std));
  double bound = sqrt(3.0) * std;
  return fill(tensor, TSR_RNG_UNIFORM, -bound, bound);
}

tsr_status tsr_init_kaiming_normal_(tsr_tensor *tensor, double a, tsr_fan_mode_t mode,
                                    tsr_nonlinearity_t nonlinearity) {
  double std = 0.0;
  TSR_RETURN_IF_ERROR(kaiming_std("init_kaiming_normal_", tensor, a, mode, nonlinearity, &std));
  return fill(tensor, TSR_RNG_NORMAL, 0.0, std);
}

static tsr_status xavier_std(const char *what, const tsr_tensor *tensor, double gain,
                             double *out_std) {
  TSR_RETURN_IF_ERROR(check_tensor(what, tensor));
  if (!(gain >= 0.0) || !isfinite(gain)) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "%s: gain %g (must be finite and >= 0)", what, gain);
  }
  double fan_in = 0.0, fan_out = 0.0;
  TSR_RETURN_IF_ERROR(fans(what, tensor, &fan_in, &fan_out));
  *out_std = fan_in + fan_out > 0.0 ? gain * sqrt(2.0 / (fan_in + fan_out)) : 0.0;
  return TSR_OK;
}

tsr_status tsr_init_xavier_uniform_(tsr_tensor *tensor, double gain) {
  double std = 0.0;
  TSR_RETURN_IF_ERROR(xavier_std("init_xavier_uniform_", tensor, gain, &std));
  double bound = sqrt(3.0) * std;
  return fill(tensor, TSR_RNG_UNIFORM, -bound, bound);
}

tsr_status tsr_init_xavier_normal_(tsr_tensor *tensor, double gain) {
  double std = 0.0;
  TSR_RETURN_IF_ERROR(xavier_std("init_xavier_normal_", tensor, gain, &std));
  return fill(tensor, TSR_RNG_NORMAL, 0.0, std);
}
