// Tessera op catalogue.
//
// Stable numeric ids (append-only), one attribute struct per op, and the
// operand lists. docs/abi.md gives each op's exact semantics; the comments
// here are the summary a plugin author needs while writing a kernel.
//
// Conventions for every op:
// - Operands are listed as inputs, then outputs, in tsr_op_signature order.
// - "Broadcast" means NumPy rules: shapes aligned at the right, a size-1 or
//   missing dimension stretches. The core gives each input to an elementwise
//   op with the output's rank, broadcast dimensions carrying stride 0.
// - Outputs never overlap inputs unless the op says "in place allowed"; then
//   an output may alias an input exactly (same offset, sizes and strides).
// - "float" means float32, float64, bfloat16 and float16; bfloat16 and float16
//   compute and accumulate in float32. "int" means int32 and int64.
// - Every attribute struct opens with struct_size; an op whose attrs are NULL
//   takes the defaults given here.
#ifndef TESSERA_OPS_H_
#define TESSERA_OPS_H_

#include "tessera/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t tsr_op_id_t;
enum {
  TSR_OP_INVALID = 0,
  TSR_OP_FILL = 1,
  TSR_OP_COPY = 2,
  TSR_OP_CAST = 3,
  TSR_OP_UNARY = 4,
  TSR_OP_UNARY_BACKWARD = 5,
  TSR_OP_BINARY = 6,
  TSR_OP_COMPARE = 7,
  TSR_OP_WHERE = 8,
  TSR_OP_CLAMP = 9,
  TSR_OP_REDUCE = 10,
  TSR_OP_ARG_REDUCE = 11,
  TSR_OP_MATMUL = 12,
  TSR_OP_CONV2D = 13,
  TSR_OP_CONV2D_BACKWARD_DATA = 14,
  TSR_OP_CONV2D_BACKWARD_FILTER = 15,
  TSR_OP_POOL2D = 16,
  TSR_OP_POOL2D_BACKWARD = 17,
  TSR_OP_SOFTMAX = 18,
  TSR_OP_SOFTMAX_BACKWARD = 19,
  TSR_OP_LAYER_NORM = 20,
  TSR_OP_LAYER_NORM_BACKWARD = 21,
  TSR_OP_BATCH_NORM = 22,
  TSR_OP_BATCH_NORM_BACKWARD = 23,
  TSR_OP_CONCAT = 24,
  TSR_OP_PAD = 25,
  TSR_OP_GATHER = 26,
  TSR_OP_SCATTER_ADD = 27,
  TSR_OP_RNG_FILL = 28,
  TSR_OP_CROSS_ENTROPY = 29,
  TSR_OP_CROSS_ENTROPY_BACKWARD = 30,
  TSR_OP_SGD_UPDATE = 31,
  TSR_OP_ADAM_UPDATE = 32,
  TSR_OP_COUNT = 33,
};

// ---------------------------------------------------------------------------
// FILL: () -> (out). Every element of |out| becomes |value| converted as CAST
// converts a float64. All dtypes.
typedef struct tsr_fill_attrs {
  size_t struct_size;
  double value;
} tsr_fill_attrs;

// COPY: (x) -> (out). Same dtype and sizes; x may broadcast (stride 0); any
// strides. All dtypes. attrs NULL.
//
// CAST: (x) -> (out). Same sizes, any two dtypes. float -> int truncates toward
// zero and saturates at the int range; NaN -> 0. Anything -> bool is x != 0.
// bool -> number is 0 or 1. Narrowing float conversions round to nearest even.
// attrs NULL.

// ---------------------------------------------------------------------------
// UNARY: (x) -> (out), same dtype and sizes; in place allowed.
// UNARY_BACKWARD: (dy, x) -> (dx) with dx = dy * f'(x), float only.
typedef int32_t tsr_unary_fn_t;
enum {
  TSR_UNARY_NEG = 0,         // float, int
  TSR_UNARY_ABS = 1,         // float, int; f'(0) = 0
  TSR_UNARY_EXP = 2,
  TSR_UNARY_LOG = 3,
  TSR_UNARY_SQRT = 4,
  TSR_UNARY_RSQRT = 5,
  TSR_UNARY_RECIPROCAL = 6,
  TSR_UNARY_SQUARE = 7,      // float, int
  TSR_UNARY_SIN = 8,
  TSR_UNARY_COS = 9,
  TSR_UNARY_TANH = 10,
  TSR_UNARY_SIGMOID = 11,
  TSR_UNARY_RELU = 12,       // float, int; f'(0) = 0; NaN stays NaN
  TSR_UNARY_GELU = 13,       // x * Phi(x), exact erf form
  TSR_UNARY_GELU_TANH = 14,  // tanh approximation
  TSR_UNARY_SILU = 15,
  TSR_UNARY_LEAKY_RELU = 16, // alpha = negative slope
  TSR_UNARY_ELU = 17,        // alpha
  TSR_UNARY_SIGN = 18,       // float, int; sign(NaN) = NaN; no backward
  TSR_UNARY_FLOOR = 19,      // no backward
  TSR_UNARY_CEIL = 20,       // no backward
  TSR_UNARY_ROUND = 21,      // half to even; no backward
  TSR_UNARY_LOGICAL_NOT = 22,// bool only; no backward
  TSR_UNARY_LOG1P = 23,
  TSR_UNARY_EXPM1 = 24,
  TSR_UNARY_ERF = 25,
  TSR_UNARY_FN_COUNT = 26,
};
typedef struct tsr_unary_attrs {
  size_t struct_size;
  tsr_unary_fn_t fn;
  uint32_t reserved;
  double alpha;  // LEAKY_RELU, ELU
} tsr_unary_attrs;

// ---------------------------------------------------------------------------
// BINARY: (a, b) -> (out), a, b and out of one dtype, broadcast; in place
// allowed (out aliasing a or b).
typedef int32_t tsr_binary_fn_t;
enum {
  TSR_BINARY_ADD = 0,      // a + alpha * b (alpha applies to ADD and SUB only)
  TSR_BINARY_SUB = 1,      // a - alpha * b
  TSR_BINARY_MUL = 2,
  TSR_BINARY_DIV = 3,      // int: truncates toward zero; int x / 0 gives 0
  TSR_BINARY_MAXIMUM = 4,  // NaN if either is NaN
  TSR_BINARY_MINIMUM = 5,  // NaN if either is NaN
  TSR_BINARY_POW = 6,      // float only
  TSR_BINARY_LOGICAL_AND = 7,  // bool only
  TSR_BINARY_LOGICAL_OR = 8,   // bool only
  TSR_BINARY_LOGICAL_XOR = 9,  // bool only
  TSR_BINARY_FN_COUNT = 10,
};
typedef struct tsr_binary_attrs {
  size_t struct_size;
  tsr_binary_fn_t fn;
  uint32_t reserved;
  double alpha;  // default 1; int dtypes require an integral alpha
} tsr_binary_attrs;

// COMPARE: (a, b) -> (out bool), a and b of one dtype, broadcast. Comparisons
// with NaN are false except NE, which is true.
typedef int32_t tsr_compare_fn_t;
enum {
  TSR_COMPARE_EQ = 0,
  TSR_COMPARE_NE = 1,
  TSR_COMPARE_LT = 2,
  TSR_COMPARE_LE = 3,
  TSR_COMPARE_GT = 4,
  TSR_COMPARE_GE = 5,
  TSR_COMPARE_FN_COUNT = 6,
};
typedef struct tsr_compare_attrs {
  size_t struct_size;
  tsr_compare_fn_t fn;
  uint32_t reserved;
} tsr_compare_attrs;

// WHERE: (cond bool, a, b) -> (out): out = cond ? a : b, broadcast, all dtypes.
// attrs NULL.

// CLAMP: (x) -> (out): min(max(x, lo), hi) for each bound present; NaN stays
// NaN. float and int (bounds converted to the dtype first); in place allowed.
typedef struct tsr_clamp_attrs {
  size_t struct_size;
  double min;
  double max;
  uint32_t has_min;
  uint32_t has_max;
} tsr_clamp_attrs;

// ---------------------------------------------------------------------------
// REDUCE: (x) -> (out). out has x's rank, size 1 on every axis in |axes_mask|
// and x's size elsewhere; same dtype. SUM and MEAN of float accumulate in
// float32 or wider (float64 for float64); int SUM and PROD wrap modulo 2^bits.
// MEAN is float only. MAX and MIN propagate NaN. Reducing an empty axis gives
// SUM 0, PROD 1, MEAN NaN; MAX and MIN of an empty axis are invalid.
typedef int32_t tsr_reduce_fn_t;
enum {
  TSR_REDUCE_SUM = 0,
  TSR_REDUCE_MEAN = 1,
  TSR_REDUCE_MAX = 2,
  TSR_REDUCE_MIN = 3,
  TSR_REDUCE_PROD = 4,
  TSR_REDUCE_FN_COUNT = 5,
};
typedef struct tsr_reduce_attrs {
  size_t struct_size;
  tsr_reduce_fn_t fn;
  uint32_t axes_mask;  // bit d reduces axis d
} tsr_reduce_attrs;

// ARG_REDUCE: (x) -> (out int64). out has x's rank with size 1 on |axis|;
// value is the index along |axis| of the first maximum (minimum). A NaN counts
// as larger (ARGMAX) or smaller (ARGMIN) than every number; the first NaN
// wins. float and int; the axis must not be empty.
typedef int32_t tsr_arg_reduce_fn_t;
enum { TSR_ARG_REDUCE_ARGMAX = 0, TSR_ARG_REDUCE_ARGMIN = 1, TSR_ARG_REDUCE_FN_COUNT = 2 };
typedef struct tsr_arg_reduce_attrs {
  size_t struct_size;
  tsr_arg_reduce_fn_t fn;
  int32_t axis;
} tsr_arg_reduce_attrs;

// ---------------------------------------------------------------------------
// Activations used by fused epilogues.
typedef int32_t tsr_activation_t;
enum {
  TSR_ACTIVATION_NONE = 0,
  TSR_ACTIVATION_RELU = 1,
  TSR_ACTIVATION_GELU = 2,
  TSR_ACTIVATION_GELU_TANH = 3,
  TSR_ACTIVATION_SIGMOID = 4,
  TSR_ACTIVATION_TANH = 5,
  TSR_ACTIVATION_COUNT = 6,
};

// MATMUL: (a [..., M, K], b [..., K, N] [, bias]) -> (out [..., M, N]).
// out = act(alpha * a @ b + bias + beta * out_before). Batch dimensions
// broadcast (the core passes a, b and out with the same rank). bias, when
// has_bias, has out's rank and broadcasts to it (typically [1, ..., 1, N]).
// beta != 0 reads out before writing it. float; accumulation in float32 or
// wider (float64 for float64).
typedef struct tsr_matmul_attrs {
  size_t struct_size;
  double alpha;  // default 1
  double beta;   // default 0
  tsr_activation_t activation;
  uint32_t has_bias;
} tsr_matmul_attrs;

// ---------------------------------------------------------------------------
// Convolution, NCHW logical order (physical layout is whatever the strides say).
// CONV2D: (x [N, C, H, W], w [O, C/groups, KH, KW] [, bias [O]]) ->
//         (y [N, O, OH, OW]), OH = (H + pad_before[0] + pad_after[0]
//         - dilation[0] * (KH - 1) - 1) / stride[0] + 1, likewise OW.
// CONV2D_BACKWARD_DATA: (dy, w) -> (dx). Shapes as in CONV2D.
// CONV2D_BACKWARD_FILTER: (dy, x) -> (dw [, dbias [O]] when has_bias).
// float.
typedef struct tsr_conv2d_attrs {
  size_t struct_size;
  int64_t stride[2];
  int64_t pad_before[2];
  int64_t pad_after[2];
  int64_t dilation[2];
  int64_t groups;
  tsr_activation_t activation;  // CONV2D only
  uint32_t has_bias;
} tsr_conv2d_attrs;

// POOL2D: (x [N, C, H, W]) -> (y [N, C, OH, OW] [, indices int64 for MAX]).
// Output size from y's descriptor; it must satisfy the convolution formula,
// rounded down or (ceil_mode) up, with no window starting in the padding
// after the input. MAX: padding is -inf; indices are h * W + w of the chosen
// input element, the first maximum in row-major window order; NaN wins.
// AVG: divides by the window size clipped to the padded input
// (count_include_pad) or to the real input.
// POOL2D_BACKWARD: MAX: (dy, indices) -> (dx); AVG: (dy) -> (dx). float.
typedef int32_t tsr_pool_kind_t;
enum { TSR_POOL_MAX = 0, TSR_POOL_AVG = 1, TSR_POOL_KIND_COUNT = 2 };
typedef struct tsr_pool2d_attrs {
  size_t struct_size;
  tsr_pool_kind_t kind;
  uint32_t ceil_mode;
  int64_t kernel[2];
  int64_t stride[2];
  int64_t pad_before[2];
  int64_t pad_after[2];
  int64_t dilation[2];
  uint32_t count_include_pad;
  uint32_t reserved;
} tsr_pool2d_attrs;

// SOFTMAX: (x) -> (y) over |axis|; log = 1 gives log-softmax. float.
// SOFTMAX_BACKWARD: (dy, y) -> (dx), y being the forward's output.
typedef struct tsr_softmax_attrs {
  size_t struct_size;
  int32_t axis;
  uint32_t log;
} tsr_softmax_attrs;

// LAYER_NORM: (x [, gamma, beta]) -> (y, mean, rstd). Normalises over axes
// [axis, rank); gamma and beta have the normalised shape; mean and rstd have
// x's rank with size 1 on the normalised axes. rstd = 1/sqrt(var + eps), var
// biased. float; mean and rstd are float32 for bfloat16/float16 x, else x's
// dtype.
// LAYER_NORM_BACKWARD: (dy, x, mean, rstd [, gamma]) -> (dx [, dgamma, dbeta]).
typedef struct tsr_layer_norm_attrs {
  size_t struct_size;
  int32_t axis;
  uint32_t has_affine;
  double eps;
} tsr_layer_norm_attrs;

// BATCH_NORM: (x [N, C, ...], gamma [C], beta [C], running_mean [C],
// running_var [C]) -> (y, save_mean [C], save_invstd [C], running_mean_out,
// running_var_out). Training: statistics of the batch (biased variance for
// normalising, unbiased for the running update new = (1 - momentum) * old +
// momentum * batch); the running outputs may alias the running inputs.
// Inference: normalises with the running statistics; save_* receive them
// (invstd computed) and the running outputs are copies. float; the [C]
// operands are float32 for bfloat16/float16 x, else x's dtype.
// BATCH_NORM_BACKWARD: (dy, x, gamma, save_mean, save_invstd) ->
// (dx, dgamma, dbeta); training flag as in the forward.
typedef struct tsr_batch_norm_attrs {
  size_t struct_size;
  double eps;
  double momentum;
  uint32_t training;
  uint32_t reserved;
} tsr_batch_norm_attrs;

// ---------------------------------------------------------------------------
// CONCAT: (x0, x1, ...) -> (out) along |axis|. All dtypes.
typedef struct tsr_concat_attrs {
  size_t struct_size;
  int32_t axis;
  uint32_t reserved;
} tsr_concat_attrs;

// PAD: (x) -> (out), out size d = pad_before[d] + x size d + pad_after[d]
// (pads >= 0). CONSTANT fills |value|; REFLECT mirrors without repeating the
// edge (pad < size); REPLICATE repeats the edge. All dtypes (CONSTANT), float
// and int (others).
typedef int32_t tsr_pad_mode_t;
enum { TSR_PAD_CONSTANT = 0, TSR_PAD_REFLECT = 1, TSR_PAD_REPLICATE = 2, TSR_PAD_MODE_COUNT = 3 };
typedef struct tsr_pad_attrs {
  size_t struct_size;
  tsr_pad_mode_t mode;
  uint32_t reserved;
  int64_t pad_before[TSR_MAX_RANK];
  int64_t pad_after[TSR_MAX_RANK];
  double value;
} tsr_pad_attrs;

// GATHER (index_select): (x, index [K] int32|int64) -> (out) where out equals x
// except along |axis|, where out[..., k, ...] = x[..., index[k], ...]. An
// index outside [0, size) is an error. All dtypes.
// SCATTER_ADD (index_add): (src, index [K]) -> (out), read-modify-write:
// out[..., index[k], ...] += src[..., k, ...]. float and int.
typedef struct tsr_gather_attrs {
  size_t struct_size;
  int32_t axis;
  uint32_t reserved;
} tsr_gather_attrs;

// RNG_FILL: () -> (out), counter-based Philox-4x32-10, key = seed (low word
// first), counter = (offset + i, 0) as two 64-bit halves, where i is the
// element's row-major position in out's logical shape. So the numbers do not
// depend on strides, threads or backend. From the block's 32-bit words
// x0..x3: UNIFORM float32 = a + (b - a) * (x0 >> 8) * 2^-24, float64 uses
// (((x0 >> 5) << 26) | (x1 >> 6)) * 2^-53; NORMAL = a + b * sqrt(-2 ln u1) *
// cos(2 pi u2) with u1 = (x0 + 1) * 2^-32 and u2 = x1 * 2^-32 computed in
// float64 then rounded; BERNOULLI = ((x0 >> 8) * 2^-24 < a) as 0 or 1.
// float (UNIFORM, NORMAL), all dtypes (BERNOULLI).
typedef int32_t tsr_rng_distribution_t;
enum { TSR_RNG_UNIFORM = 0, TSR_RNG_NORMAL = 1, TSR_RNG_BERNOULLI = 2, TSR_RNG_DISTRIBUTION_COUNT = 3 };
typedef struct tsr_rng_fill_attrs {
  size_t struct_size;
  tsr_rng_distribution_t distribution;
  uint32_t reserved;
  uint64_t seed;
  uint64_t offset;
  double a;  // UNIFORM low, NORMAL mean, BERNOULLI probability
  double b;  // UNIFORM high, NORMAL standard deviation
} tsr_rng_fill_attrs;

// ---------------------------------------------------------------------------
// CROSS_ENTROPY: (logits [N, C], target [N] int64) -> (loss, lse [N] float32
// saved for the backward). loss is [N] (NONE) or a rank-0 tensor (MEAN over
// non-ignored rows, SUM). Label smoothing eps mixes the target with the
// uniform distribution: loss_n = lse_n - (1 - eps) * x[n, t] - eps/C *
// sum_c x[n, c]. A target equal to ignore_index contributes 0; any other
// target outside [0, C) is an error. float.
// CROSS_ENTROPY_BACKWARD: (dloss, logits, target, lse) -> (dlogits).
typedef int32_t tsr_reduction_t;
enum { TSR_REDUCTION_NONE = 0, TSR_REDUCTION_MEAN = 1, TSR_REDUCTION_SUM = 2, TSR_REDUCTION_COUNT = 3 };
typedef struct tsr_cross_entropy_attrs {
  size_t struct_size;
  tsr_reduction_t reduction;
  uint32_t reserved;
  int64_t ignore_index;  // default -100
  double label_smoothing;
} tsr_cross_entropy_attrs;

// ---------------------------------------------------------------------------
// SGD_UPDATE: (grad) -> (param, momentum_buf), both read-modify-write:
//   g = grad + weight_decay * param
//   buf = first_step ? g : momentum * buf + (1 - dampening) * g   (momentum != 0)
//   d = nesterov ? g + momentum * buf : buf   (d = g when momentum == 0)
//   param -= lr * d
// momentum_buf may be an empty descriptor (rank 0, NULL buffer) when
// momentum == 0. float.
typedef struct tsr_sgd_attrs {
  size_t struct_size;
  double lr;
  double momentum;
  double dampening;
  double weight_decay;
  uint32_t nesterov;
  uint32_t first_step;
} tsr_sgd_attrs;

// ADAM_UPDATE: (grad) -> (param, exp_avg, exp_avg_sq), read-modify-write:
//   decoupled (AdamW): param *= 1 - lr * weight_decay; g = grad
//   otherwise:         g = grad + weight_decay * param
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   param -= lr / (1 - beta1^step) * m / (sqrt(v / (1 - beta2^step)) + eps)
// float.
typedef struct tsr_adam_attrs {
  size_t struct_size;
  double lr;
  double beta1;
  double beta2;
  double eps;
  double weight_decay;
  int64_t step;  // >= 1
  uint32_t decoupled_weight_decay;
  uint32_t reserved;
} tsr_adam_attrs;

// Name of an op ("matmul") or NULL for an unknown id. Thread-safe.
static inline const char *tsr_op_name(tsr_op_id_t op) {
  static const char *const names[TSR_OP_COUNT] = {
      "invalid",        "fill",
      "copy",           "cast",
      "unary",          "unary_backward",
      "binary",         "compare",
      "where",          "clamp",
      "reduce",         "arg_reduce",
      "matmul",         "conv2d",
      "conv2d_backward_data", "conv2d_backward_filter",
      "pool2d",         "pool2d_backward",
      "softmax",        "softmax_backward",
      "layer_norm",     "layer_norm_backward",
      "batch_norm",     "batch_norm_backward",
      "concat",         "pad",
      "gather",         "scatter_add",
      "rng_fill",       "cross_entropy",
      "cross_entropy_backward", "sgd_update",
      "adam_update",
  };
  return (op >= 0 && op < TSR_OP_COUNT) ? names[op] : (const char *)0;
}

// Selectors: the values of an op's enum-valued attribute and its optional
// operand, on which support is keyed besides (op, dtype) (docs/abi.md 9.2):
// UNARY and UNARY_BACKWARD the function, BINARY and COMPARE theirs, REDUCE
// and ARG_REDUCE the kind, MATMUL and CONV2D each activation and then, at
// index TSR_ACTIVATION_COUNT, the optional bias, POOL2D(_BACKWARD) the kind,
// PAD the mode, RNG_FILL the distribution, CROSS_ENTROPY(_BACKWARD) the
// reduction. How many values |op|'s selector has, 0 for an op without one
// (or an unknown id). Thread-safe.
static inline int32_t tsr_op_selector_count(tsr_op_id_t op) {
  switch (op) {
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD: return TSR_UNARY_FN_COUNT;
    case TSR_OP_BINARY: return TSR_BINARY_FN_COUNT;
    case TSR_OP_COMPARE: return TSR_COMPARE_FN_COUNT;
    case TSR_OP_REDUCE: return TSR_REDUCE_FN_COUNT;
    case TSR_OP_ARG_REDUCE: return TSR_ARG_REDUCE_FN_COUNT;
    case TSR_OP_MATMUL:
    case TSR_OP_CONV2D: return TSR_ACTIVATION_COUNT + 1;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD: return TSR_POOL_KIND_COUNT;
    case TSR_OP_PAD: return TSR_PAD_MODE_COUNT;
    case TSR_OP_RNG_FILL: return TSR_RNG_DISTRIBUTION_COUNT;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: return TSR_REDUCTION_COUNT;
    default: return 0;
  }
}

// Name of value |index| of |op|'s selector ("relu", "bias"), or NULL when
// there is none. Thread-safe.
static inline const char *tsr_op_selector_name(tsr_op_id_t op, int32_t index) {
  static const char *const unary[TSR_UNARY_FN_COUNT] = {
      "neg",   "abs",   "exp",  "log",   "sqrt",        "rsqrt", "reciprocal", "square",    "sin",
      "cos",   "tanh",  "sigmoid", "relu", "gelu",      "gelu_tanh", "silu",   "leaky_relu", "elu",
      "sign",  "floor", "ceil", "round", "logical_not", "log1p", "expm1",      "erf"};
  static const char *const binary[TSR_BINARY_FN_COUNT] = {
      "add", "sub", "mul", "div", "maximum", "minimum", "pow", "logical_and", "logical_or",
      "logical_xor"};
  static const char *const compare[TSR_COMPARE_FN_COUNT] = {"eq", "ne", "lt", "le", "gt", "ge"};
  static const char *const reduce[TSR_REDUCE_FN_COUNT] = {"sum", "mean", "max", "min", "prod"};
  static const char *const arg[TSR_ARG_REDUCE_FN_COUNT] = {"argmax", "argmin"};
  static const char *const epilogue[TSR_ACTIVATION_COUNT + 1] = {
      "no activation", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "bias"};
  static const char *const pool[TSR_POOL_KIND_COUNT] = {"max", "avg"};
  static const char *const pad[TSR_PAD_MODE_COUNT] = {"constant", "reflect", "replicate"};
  static const char *const rng[TSR_RNG_DISTRIBUTION_COUNT] = {"uniform", "normal", "bernoulli"};
  static const char *const reduction[TSR_REDUCTION_COUNT] = {"none", "mean", "sum"};
  const char *const *names = (const char *const *)0;
  switch (op) {
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD: names = unary; break;
    case TSR_OP_BINARY: names = binary; break;
    case TSR_OP_COMPARE: names = compare; break;
    case TSR_OP_REDUCE: names = reduce; break;
    case TSR_OP_ARG_REDUCE: names = arg; break;
    case TSR_OP_MATMUL:
    case TSR_OP_CONV2D: names = epilogue; break;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD: names = pool; break;
    case TSR_OP_PAD: names = pad; break;
    case TSR_OP_RNG_FILL: names = rng; break;
    case TSR_OP_CROSS_ENTROPY:
    case TSR_OP_CROSS_ENTROPY_BACKWARD: names = reduction; break;
    default: return (const char *)0;
  }
  return index >= 0 && index < tsr_op_selector_count(op) ? names[index] : (const char *)0;
}

// ---------------------------------------------------------------------------
// Attribute initialisers: each zeroes the struct, sets struct_size to this
// catalogue's size and every field to PyTorch's default for the op. A field
// with no default (a function, an axis, a kernel size) is a parameter.
// Header-only; thread-safe. Use them rather than a positional initialiser,
// so that a later catalogue's appended fields get their defaults too.

// Zeroes |bytes| at |attrs| and writes |bytes| as its struct_size.
static inline void tsr_attrs_clear_(void *attrs, size_t bytes) {
  unsigned char *p = (unsigned char *)attrs;
  for (size_t i = 0; i < bytes; ++i) p[i] = 0;
  *(size_t *)attrs = bytes;
}

// FILL: value 0.
static inline void tsr_fill_attrs_init(tsr_fill_attrs *a) { tsr_attrs_clear_(a, sizeof(*a)); }

// UNARY and UNARY_BACKWARD: |fn|; alpha 0.01 for LEAKY_RELU (negative_slope)
// and 1 for ELU, as torch.nn.functional.
static inline void tsr_unary_attrs_init(tsr_unary_attrs *a, tsr_unary_fn_t fn) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->fn = fn;
  a->alpha = fn == TSR_UNARY_LEAKY_RELU ? 0.01 : fn == TSR_UNARY_ELU ? 1.0 : 0.0;
}

// BINARY: |fn|, alpha 1.
static inline void tsr_binary_attrs_init(tsr_binary_attrs *a, tsr_binary_fn_t fn) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->fn = fn;
  a->alpha = 1.0;
}

// COMPARE: |fn|.
static inline void tsr_compare_attrs_init(tsr_compare_attrs *a, tsr_compare_fn_t fn) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->fn = fn;
}

// CLAMP: no bound (set min/has_min, max/has_max).
static inline void tsr_clamp_attrs_init(tsr_clamp_attrs *a) { tsr_attrs_clear_(a, sizeof(*a)); }

// REDUCE: |fn| over the axes in |axes_mask|.
static inline void tsr_reduce_attrs_init(tsr_reduce_attrs *a, tsr_reduce_fn_t fn,
                                         uint32_t axes_mask) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->fn = fn;
  a->axes_mask = axes_mask;
}

// ARG_REDUCE: |fn| along |axis|.
static inline void tsr_arg_reduce_attrs_init(tsr_arg_reduce_attrs *a, tsr_arg_reduce_fn_t fn,
                                             int32_t axis) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->fn = fn;
  a->axis = axis;
}

// MATMUL: alpha 1, beta 0, no activation, no bias.
static inline void tsr_matmul_attrs_init(tsr_matmul_attrs *a) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->alpha = 1.0;
  a->activation = TSR_ACTIVATION_NONE;
}

// CONV2D and its backward ops: stride 1, no padding, dilation 1, groups 1,
// no activation, no bias (torch.nn.functional.conv2d).
static inline void tsr_conv2d_attrs_init(tsr_conv2d_attrs *a) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->stride[0] = a->stride[1] = 1;
  a->dilation[0] = a->dilation[1] = 1;
  a->groups = 1;
}

// POOL2D and POOL2D_BACKWARD: |kind| over a |kernel_h| x |kernel_w| window,
// stride = the kernel, no padding, dilation 1, floor mode, and (AVG) the
// padding counted (torch.nn.functional.max_pool2d / avg_pool2d).
static inline void tsr_pool2d_attrs_init(tsr_pool2d_attrs *a, tsr_pool_kind_t kind,
                                         int64_t kernel_h, int64_t kernel_w) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->kind = kind;
  a->kernel[0] = a->stride[0] = kernel_h;
  a->kernel[1] = a->stride[1] = kernel_w;
  a->dilation[0] = a->dilation[1] = 1;
  a->count_include_pad = 1;
}

// SOFTMAX and SOFTMAX_BACKWARD: along |axis|, not log.
static inline void tsr_softmax_attrs_init(tsr_softmax_attrs *a, int32_t axis) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->axis = axis;
}

// LAYER_NORM: normalised from |axis| on, with weight and bias, eps 1e-5.
static inline void tsr_layer_norm_attrs_init(tsr_layer_norm_attrs *a, int32_t axis) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->axis = axis;
  a->has_affine = 1;
  a->eps = 1e-5;
}

// BATCH_NORM: eps 1e-5, momentum 0.1, training.
static inline void tsr_batch_norm_attrs_init(tsr_batch_norm_attrs *a) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->eps = 1e-5;
  a->momentum = 0.1;
  a->training = 1;
}

// CONCAT: along |axis|.
static inline void tsr_concat_attrs_init(tsr_concat_attrs *a, int32_t axis) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->axis = axis;
}

// PAD: |mode|, no padding yet, value 0.
static inline void tsr_pad_attrs_init(tsr_pad_attrs *a, tsr_pad_mode_t mode) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->mode = mode;
}

// GATHER and SCATTER_ADD: along |axis|.
static inline void tsr_gather_attrs_init(tsr_gather_attrs *a, int32_t axis) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->axis = axis;
}

// RNG_FILL: |distribution| with PyTorch's parameters: uniform on [0, 1),
// standard normal, Bernoulli(0.5); seed and offset 0.
static inline void tsr_rng_fill_attrs_init(tsr_rng_fill_attrs *a,
                                           tsr_rng_distribution_t distribution) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->distribution = distribution;
  a->a = distribution == TSR_RNG_BERNOULLI ? 0.5 : 0.0;
  a->b = 1.0;
}

// CROSS_ENTROPY and its backward: mean reduction, ignore_index -100, no
// label smoothing.
static inline void tsr_cross_entropy_attrs_init(tsr_cross_entropy_attrs *a) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->reduction = TSR_REDUCTION_MEAN;
  a->ignore_index = -100;
}

// SGD_UPDATE: lr 1e-3, no momentum, dampening or weight decay, first step.
static inline void tsr_sgd_attrs_init(tsr_sgd_attrs *a) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->lr = 1e-3;
  a->first_step = 1;
}

// ADAM_UPDATE: lr 1e-3, betas (0.9, 0.999), eps 1e-8, no weight decay, step 1,
// Adam's L2 decay (set decoupled_weight_decay for AdamW).
static inline void tsr_adam_attrs_init(tsr_adam_attrs *a) {
  tsr_attrs_clear_(a, sizeof(*a));
  a->lr = 1e-3;
  a->beta1 = 0.9;
  a->beta2 = 0.999;
  a->eps = 1e-8;
  a->step = 1;
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_OPS_H_
