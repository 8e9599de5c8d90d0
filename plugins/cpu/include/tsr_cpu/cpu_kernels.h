// The CPU-kernel library (plugins/cpu): portable C11 kernels for the whole
// op catalogue, with the plans that drive them, a 64-byte-aligned caching
// host allocator, synchronous streams and events, and a plugin table that ties
// them together. This is the one header for code outside the library.
//
// Who uses it: plugins/ref presents the table under its own identity;
// plugins/onednn runs it where its own kernels win and for everything oneDNN
// lacks (it builds the library once more per x86-64 level, see
// tsr_cpu_kernels_isa_objects in plugins/cpu/CMakeLists.txt); plugins/opencl
// and plugins/cuda validate signatures and compute shapes with its plans and
// read the per-op fields (tsr_cpu/cpu_plan.h) to run their own kernels; the
// conformance fixtures wrap its table. The library is compiled into each of
// them (CMake target tsr_cpu_kernels, hidden visibility), so every plugin .so
// has its own copy and its own state: nothing here is shared between plugins.
//
// Ownership: the table, plans, buffers, streams and events are created and
// owned as abi.h says for a plugin's; the table is static storage, valid until
// the plugin that holds the library is unloaded. Thread-safety: after
// tsr_cpu_plugin_table_create (once per load, before any other call), every
// function here and every entry of the table may be called from any thread.
#ifndef TESSERA_PLUGINS_CPU_INCLUDE_TSR_CPU_CPU_KERNELS_H_
#define TESSERA_PLUGINS_CPU_INCLUDE_TSR_CPU_CPU_KERNELS_H_

#include <math.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"
#include "tsr_cpu/cpu_plan.h"

// ---------------------------------------------------------------------------
// The table.

// Stores |host| (which must outlive every use of the table) and writes the
// library's static table to |out_api|; the table is owned by the library and
// valid until the plugin holding it is unloaded. Checks |host| (non-NULL,
// abi_major, struct_size covering every entry the library calls, a
// parallel_for) and returns TSR_ABI_MISMATCH or TSR_INVALID_ARGUMENT when it
// does not fit. Called once per load, before any other library function;
// every function of the returned table may then be called from any thread.
//
// The table names itself "cpu" and its one device "Tessera CPU kernels" with
// priority TSR_DEVICE_PRIORITY_NONE: a plugin presents it under its own name
// (a copy of the table) and device identity (plugins/ref/entry.c is the
// smallest example).
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_plugin_table_create(
    const tsr_host_api *host, const tsr_plugin_api **out_api);

// Makes the table's device_props_get report |name| (static storage, owned by
// the caller) and |priority| for the device. Called by the plugin that
// presents the table, after tsr_cpu_plugin_table_create and before any
// entry of the table runs; not thread-safe with other library calls.
__attribute__((visibility("hidden"))) void tsr_cpu_device_identity_set(const char *name,
                                                                     int32_t priority);

// ---------------------------------------------------------------------------
// Argument checks, without the work: the code the library's copies and
// plan_execute run first, reachable on their own so a plugin that queues the
// library's work (conformance/fixtures/async) can refuse bad arguments when
// they are enqueued (docs/abi.md 5.3) with the library's status and message.
//
// Each returns TSR_OK or the error (with its message set through the host's
// error_set) that the matching table entry would return for the same
// arguments. None allocates, locks or touches buffer contents. Thread-safe.

// [|offset|, |offset| + |bytes|) lies inside the live library buffer |buffer|,
// without letting the sum overflow. |what| names the entry and |name| the
// argument in the message ("copy_host_to_device", "dst").
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_buffer_range_check(
    const char *what, const char *name, tsr_plugin_buffer *buffer, uint64_t offset,
    uint64_t bytes);

// What copy_device_to_device checks after its stream: both ranges, then that
// they do not overlap inside one buffer.
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_copy_device_to_device_check(
    tsr_plugin_buffer *src, uint64_t src_offset, tsr_plugin_buffer *dst, uint64_t dst_offset,
    uint64_t bytes);

// What plan_execute checks, for a NULL stream: |args| against |plan|
// (counts, every operand's dtype, rank, sizes, strides, alignment, device,
// buffer and extent, alias groups, the workspace). |plan| is a library plan.
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_exec_args_check(
    const tsr_plugin_plan *plan, const tsr_exec_args *args);

// plan_execute's checks and resolution with another plan's workspace size:
// for a plugin that runs some of the library's plans on other engines
// (plugins/onednn). Checks |args| and |stream| against the library plan
// |plan|, except that the workspace must hold |workspace_bytes| (64-byte
// slack included); writes each operand's element-0 address (inputs, then
// outputs) to |out_ptrs| and the 64-aligned workspace (NULL when 0) to
// |out_workspace|.
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_exec_args_resolve_for(
    const tsr_plugin_plan *plan, const tsr_exec_args *args, tsr_plugin_stream *stream,
    uint64_t workspace_bytes, char **out_ptrs, char **out_workspace);

// ---------------------------------------------------------------------------
// Which direct convolution kernels a signature gets (conv.h has the kernels):
// for a plugin that picks between the library's conv plans and its own.

// At most this many taps (3x3): one accumulator vector per tap, and the 16
// vector registers of AVX2 must hold them beside dy and the dbias lanes.
#define TSR_CPU_CONV_C1_MAX_TAPS 9

// Whether the one-channel filter-gradient kernel (conv_filter_c1.c) covers
// CONV2D_BACKWARD_FILTER with float32 operands of |dtype|, |cg| input channels
// per group, a |kh| x |kw| kernel and dy of |dy_sizes| (N, O, OH, OW) and
// |dy_strides|: float32, one input channel per group, at most
// TSR_CPU_CONV_C1_MAX_TAPS taps, and each dy plane's OH * OW positions
// contiguous (the kernel streams them as one vector). Any stride, padding,
// dilation, group count, x layout and dw/dbias strides. Thread-safe.
static inline int tsr_cpu_conv_filter_c1_fits(tsr_dtype_t dtype, int64_t cg, int64_t kh,
                                              int64_t kw, const int64_t *dy_sizes,
                                              const int64_t *dy_strides) {
  const int64_t oh = dy_sizes[2], ow = dy_sizes[3];
  return dtype == TSR_FLOAT32 && cg == 1 && kh >= 1 && kw >= 1 &&
         kh * kw <= TSR_CPU_CONV_C1_MAX_TAPS && (ow == 1 || dy_strides[3] == 1) &&
         (oh == 1 || dy_strides[2] == ow);
}

// The zero-padded copy of one image stays in L2 beside the sums.
#define TSR_CPU_CONV_FD_MAX_IMAGE_BYTES (256 * 1024)

// Whether the multi-channel filter-gradient kernel (conv_filter_direct.c)
// covers CONV2D_BACKWARD_FILTER with operands of |dtype|, |groups| groups, |c|
// input channels of |h| x |w| and padding |pad_before| + |pad_after| (two
// each): float32, one group, at least two channels (one is conv_filter_c1.c's),
// and one padded image of at most TSR_CPU_CONV_FD_MAX_IMAGE_BYTES. Any kernel
// size, stride, dilation and layout of every operand. Thread-safe.
static inline int tsr_cpu_conv_filter_direct_fits(tsr_dtype_t dtype, int64_t groups, int64_t c,
                                                  int64_t h, int64_t w,
                                                  const int64_t *pad_before,
                                                  const int64_t *pad_after) {
  if (dtype != TSR_FLOAT32 || groups != 1 || c < 2) return 0;
  const double hp = (double)h + (double)pad_before[0] + (double)pad_after[0];
  const double wp = (double)w + (double)pad_before[1] + (double)pad_after[1];
  return (double)c * hp * wp * 4.0 <= (double)TSR_CPU_CONV_FD_MAX_IMAGE_BYTES;
}

// Whether the direct forward kernel (conv_fwd_direct.c) covers CONV2D with
// operands of |dtype|, |groups| groups, |activation|, |c| input channels of |h|
// x |w| and padding |pad_before| + |pad_after| (two each): float32, one group,
// no activation or RELU (the fused one must give the bits of CONV2D then RELU),
// at least one channel, and one padded image of at most
// TSR_CPU_CONV_FD_MAX_IMAGE_BYTES (the kernel reads it at scattered offsets,
// from L2). Any kernel size, stride, dilation, bias or not, and layout of every
// operand. Thread-safe.
static inline int tsr_cpu_conv_fwd_direct_fits(tsr_dtype_t dtype, int64_t groups,
                                               int32_t activation, int64_t c, int64_t h,
                                               int64_t w, const int64_t *pad_before,
                                               const int64_t *pad_after) {
  if (dtype != TSR_FLOAT32 || groups != 1 || c < 1) return 0;
  if (activation != TSR_ACTIVATION_NONE && activation != TSR_ACTIVATION_RELU) return 0;
  const double hp = (double)h + (double)pad_before[0] + (double)pad_after[0];
  const double wp = (double)w + (double)pad_before[1] + (double)pad_after[1];
  return (double)c * hp * wp * 4.0 <= (double)TSR_CPU_CONV_FD_MAX_IMAGE_BYTES;
}

// Whether the one-channel forward kernel (conv_fwd_c1.c) covers CONV2D with
// operands of |dtype|, |cg| input channels per group, |activation| and y of
// |y_sizes| (N, O, OH, OW) and |y_strides|: float32, one input channel per
// group, no activation or RELU, and each y plane's OH * OW positions contiguous
// (the kernel stores them as vectors). Any kernel size, stride, padding,
// dilation, group count, bias or not, and x, w and bias layout. Thread-safe.
static inline int tsr_cpu_conv_fwd_c1_fits(tsr_dtype_t dtype, int64_t cg, int32_t activation,
                                           const int64_t *y_sizes, const int64_t *y_strides) {
  const int64_t oh = y_sizes[2], ow = y_sizes[3];
  return dtype == TSR_FLOAT32 && cg == 1 &&
         (activation == TSR_ACTIVATION_NONE || activation == TSR_ACTIVATION_RELU) &&
         (ow == 1 || y_strides[3] == 1) && (oh == 1 || y_strides[2] == ow);
}

// ---------------------------------------------------------------------------
// Scalar functions and derivatives of UNARY's fns, for float and double,
// shared by the unary kernels and matmul's activation epilogue, and by a
// plugin that checks another engine's results against them. Pure;
// thread-safe.

#define TSR_CPU_SQRT1_2 0.70710678118654752440
#define TSR_CPU_SQRT_2_OVER_PI 0.79788456080286535588
#define TSR_CPU_INV_SQRT_2PI 0.39894228040143267794
#define TSR_CPU_2_OVER_SQRT_PI 1.12837916709551257390
#define TSR_CPU_GELU_TANH_C 0.044715

// Writes the functions for one float type: S is the tag (f32, f64), T the
// type, F libm's suffix for it ("f" or nothing).
#define TSR_CPU_MATH_FNS(S, T, F)                                                              \
  static inline T tsr_cpu_sigmoid_##S(T x) { return (T)1 / ((T)1 + exp##F(-x)); }             \
  static inline T tsr_cpu_gelu_##S(T x) {                                                      \
    return (T)0.5 * x * ((T)1 + erf##F(x * (T)TSR_CPU_SQRT1_2));                               \
  }                                                                                            \
  static inline T tsr_cpu_gelu_tanh_##S(T x) {                                                 \
    T u = (T)TSR_CPU_SQRT_2_OVER_PI * (x + (T)TSR_CPU_GELU_TANH_C * x * x * x);                \
    return (T)0.5 * x * ((T)1 + tanh##F(u));                                                   \
  }                                                                                            \
  /* NaN < 0 is false, so NaN passes through. */                                              \
  static inline T tsr_cpu_relu_##S(T x) { return x < 0 ? (T)0 : x; }                          \
  static inline T tsr_cpu_sign_##S(T x) { return x > 0 ? (T)1 : (x < 0 ? (T)-1 : x); }         \
  static inline T tsr_cpu_abs_grad_##S(T dy, T x) {                                            \
    return x > 0 ? dy : (x < 0 ? -dy : (x == 0 ? (T)0 : x));                                   \
  }                                                                                            \
  /* dy * exp(x), finite wherever the product is: where exp(x) alone       */                \
  /* overflows (x just below the overflow of dy * exp(x) for |dy| < 1), as */                \
  /* (dy * exp(x / 2)) * exp(x / 2). EXP's and EXPM1's backward.           */                \
  static inline T tsr_cpu_exp_grad_##S(T dy, T x) {                                            \
    T e = exp##F(x);                                                                           \
    if (!isinf(e) || isinf(x))                                                                 \
      return dy * e;                                                                           \
    T h = exp##F(x * (T)0.5);                                                                  \
    return (dy * h) * h;                                                                       \
  }                                                                                            \
  static inline T tsr_cpu_tanh_grad_##S(T dy, T x) {                                           \
    T t = tanh##F(x);                                                                          \
    return dy * ((T)1 - t * t);                                                                \
  }                                                                                            \
  static inline T tsr_cpu_sigmoid_grad_##S(T dy, T x) {                                        \
    T s = tsr_cpu_sigmoid_##S(x);                                                              \
    return dy * s * ((T)1 - s);                                                                \
  }                                                                                            \
  static inline T tsr_cpu_gelu_grad_##S(T dy, T x) {                                           \
    T cdf = (T)0.5 * ((T)1 + erf##F(x * (T)TSR_CPU_SQRT1_2));                                  \
    T pdf = (T)TSR_CPU_INV_SQRT_2PI * exp##F((T)-0.5 * x * x);                                 \
    return dy * (cdf + x * pdf);                                                               \
  }                                                                                            \
  static inline T tsr_cpu_gelu_tanh_grad_##S(T dy, T x) {                                      \
    const T k = (T)TSR_CPU_SQRT_2_OVER_PI;                                                     \
    T t = tanh##F(k * (x + (T)TSR_CPU_GELU_TANH_C * x * x * x));                               \
    T du = k * ((T)1 + (T)(3 * TSR_CPU_GELU_TANH_C) * x * x);                                  \
    return dy * ((T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * du);                      \
  }                                                                                            \
  /* sigmoid(x) for SILU's products: below x = -80 as e / (1 + e) with     */                \
  /* e = exp(x), so that x * sigmoid(x) stays normal where it is (down to   */                \
  /* x = -91.8 in float32) instead of vanishing once exp(-x) overflows.    */                \
  static inline T tsr_cpu_silu_sigmoid_##S(T x) {                                              \
    if (!(x < (T)-80))                                                                         \
      return tsr_cpu_sigmoid_##S(x);                                                           \
    T e = exp##F(x);                                                                           \
    return e / ((T)1 + e);                                                                     \
  }                                                                                            \
  static inline T tsr_cpu_silu_##S(T x) { return x * tsr_cpu_silu_sigmoid_##S(x); }            \
  static inline T tsr_cpu_silu_grad_##S(T dy, T x) {                                           \
    T s = tsr_cpu_silu_sigmoid_##S(x);                                                         \
    return dy * s * ((T)1 + x * ((T)1 - s));                                                   \
  }

TSR_CPU_MATH_FNS(f32, float, f)
TSR_CPU_MATH_FNS(f64, double, )

#endif  // TESSERA_PLUGINS_CPU_INCLUDE_TSR_CPU_CPU_KERNELS_H_
