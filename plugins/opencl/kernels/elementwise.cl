// Elementwise kernels: FILL COPY CAST UNARY UNARY_BACKWARD BINARY COMPARE
// WHERE CLAMP SGD_UPDATE ADAM_UPDATE, one program per (op, fn, dtypes).
//
// Build options (ops_elementwise.c):
//   -DKIND=<EW_*>  which op; -DFN=<fn> its fn (UNARY, BINARY, COMPARE)
//   -DNOPS=<1..4>  operands used, inputs then outputs, as the plan orders them;
//   -DNIN          how many of them are inputs
//   -DT0..-DT3     their element types; -DCT the type of the scalar params
//   -DUT           the unsigned twin of an int T0 (wrapping arithmetic)
//   -DIDX          uint or ulong: the type of element counts and indices
//   -DCVT=<fn>     CAST's conversion; -DALPHA=1 BINARY's a + alpha * b
//   -DOUTER_ND     ew_rows, ew_flat: the collapsed shape's outer dimensions
//
// Three kernels share each program: ew_contig (every operand contiguous or
// a broadcast scalar; the fast path), ew_rows (the collapsed shape's inner
// dimension is long: one row decomposition per work-item, then strided
// steps) and ew_flat (short rows: every element decomposes its index).
//
// Work layout. ew_contig: item g owns 4 consecutive elements and moves them
// with vload4/vstore4 (16-byte accesses for float32; a GPU warp still reads
// whole cache lines, and a CPU gets SIMD loads). ew_rows and ew_flat: a
// work-group of L items owns a block of L * EW_ROW_VEC elements and item l
// handles l, l + L, ...: consecutive items touch consecutive elements, so
// every strided access coalesces as well as its stride allows. All are
// bandwidth-bound except the libm-heavy unary fns. Loops inside an item
// have constant trip counts, so they unroll and PoCL vectorises across
// work-items (PoCL's times against ref's: docs/performance-log.md,
// "Measurements behind the code's decisions").
//
// Arithmetic matches ref (plugins/cpu): no contraction into FMAs (ref is
// ISO C, which gcc does not contract), the same expression order, float32
// math in float32; division and sqrt are correctly rounded where the device
// allows (the plan adds -cl-fp32-correctly-rounded-divide-sqrt).
#pragma OPENCL FP_CONTRACT OFF

#define EW_VEC 4      // ew_contig: consecutive elements per work-item
#define EW_ROW_VEC 4  // ew_rows, ew_flat: elements per work-item, interleaved

#define EW_FILL 1
#define EW_COPY 2
#define EW_CAST 3
#define EW_UNARY 4
#define EW_UNARY_BACKWARD 5
#define EW_BINARY 6
#define EW_COMPARE 7
#define EW_WHERE 8
#define EW_CLAMP 9
#define EW_SGD 10
#define EW_ADAM 11

#ifndef IDX
#define IDX uint
#endif

// Float literals in T0's precision (a bare literal is double, which a device
// without fp64 does not have).
#if defined(TSR_EW_F64)
#define CK(x) ((T0)(x))
#else
#define CK(x) (x##f)
#endif

// ---------------------------------------------------------------------------
// CAST conversions, exactly as ops.h states: float -> int truncates toward
// zero and saturates, NaN -> 0; anything -> bool is x != 0; int64 -> int32
// keeps the low bits; float narrowing rounds to nearest even (OpenCL's
// default rounding for conversions to floating point).
inline int cvt_f32_i32(float x) {
  if (isnan(x)) return 0;
  if (x >= 2147483648.0f) return INT_MAX;
  if (x <= -2147483648.0f) return INT_MIN;
  return (int)x;
}
inline long cvt_f32_i64(float x) {
  if (isnan(x)) return 0;
  if (x >= 9223372036854775808.0f) return LONG_MAX;
  if (x <= -9223372036854775808.0f) return LONG_MIN;
  return (long)x;
}
inline uchar cvt_f32_b8(float x) { return (uchar)(x != 0.0f); }
inline float cvt_i32_f32(int x) { return (float)x; }
inline long cvt_i32_i64(int x) { return (long)x; }
inline uchar cvt_i32_b8(int x) { return (uchar)(x != 0); }
inline float cvt_i64_f32(long x) { return (float)x; }
inline int cvt_i64_i32(long x) { return as_int((uint)as_ulong(x)); }
inline uchar cvt_i64_b8(long x) { return (uchar)(x != 0); }
inline float cvt_b8_f32(uchar x) { return x != 0 ? 1.0f : 0.0f; }
inline int cvt_b8_i32(uchar x) { return x != 0; }
inline long cvt_b8_i64(uchar x) { return x != 0; }
#if defined(TSR_HAS_FP64) && TSR_HAS_FP64
inline double cvt_f32_f64(float x) { return (double)x; }
inline float cvt_f64_f32(double x) { return (float)x; }
inline int cvt_f64_i32(double x) {
  if (isnan(x)) return 0;
  if (x >= 2147483647.0) return INT_MAX;
  if (x <= -2147483648.0) return INT_MIN;
  return (int)x;
}
inline long cvt_f64_i64(double x) {
  if (isnan(x)) return 0;
  if (x >= 9223372036854775808.0) return LONG_MAX;
  if (x <= -9223372036854775808.0) return LONG_MIN;
  return (long)x;
}
inline uchar cvt_f64_b8(double x) { return (uchar)(x != 0.0); }
inline double cvt_i32_f64(int x) { return (double)x; }
inline double cvt_i64_f64(long x) { return (double)x; }
inline double cvt_b8_f64(uchar x) { return x != 0 ? 1.0 : 0.0; }
#endif

// ---------------------------------------------------------------------------
// The element functions, on T0 (the first operand's type).
#if KIND == EW_UNARY || KIND == EW_UNARY_BACKWARD || KIND == EW_BINARY || KIND == EW_CLAMP
#if defined(TSR_EW_FLOAT)
inline T0 ew_sigmoid(T0 x) { return CK(1.0) / (CK(1.0) + exp(-x)); }
#endif
#endif

#if KIND == EW_UNARY
#if defined(TSR_EW_FLOAT)
inline T0 ew_unary(T0 x, CT alpha) {
#if FN == 0
  return -x;
#elif FN == 1
  return fabs(x);
#elif FN == 2
  return exp(x);
#elif FN == 3
  return log(x);
#elif FN == 4
  return sqrt(x);
#elif FN == 5
  return CK(1.0) / sqrt(x);
#elif FN == 6
  return CK(1.0) / x;
#elif FN == 7
  return x * x;
#elif FN == 8
  return sin(x);
#elif FN == 9
  return cos(x);
#elif FN == 10
  return tanh(x);
#elif FN == 11
  return ew_sigmoid(x);
#elif FN == 12
  return x < 0 ? CK(0.0) : x;  // NaN < 0 is false: NaN passes through
#elif FN == 13
  return CK(0.5) * x * (CK(1.0) + erf(x * CK(0.70710678118654752440)));
#elif FN == 14
  T0 u = CK(0.79788456080286535588) * (x + CK(0.044715) * x * x * x);
  return CK(0.5) * x * (CK(1.0) + tanh(u));
#elif FN == 15
  return x * ew_sigmoid(x);
#elif FN == 16
  return x > 0 ? x : alpha * x;
#elif FN == 17
  return x > 0 ? x : alpha * expm1(x);
#elif FN == 18
  return x > 0 ? CK(1.0) : (x < 0 ? CK(-1.0) : x);
#elif FN == 19
  return floor(x);
#elif FN == 20
  return ceil(x);
#elif FN == 21
  return rint(x);  // half to even
#elif FN == 23
  return log1p(x);
#elif FN == 24
  return expm1(x);
#elif FN == 25
  return erf(x);
#else
#error "unary fn not defined for float"
#endif
}
#elif defined(TSR_EW_INT)
// Wraps modulo 2^bits through UT: -INT_MIN and |INT_MIN| are INT_MIN.
inline T0 ew_unary(T0 x, CT alpha) {
#if FN == 0
  return (T0)((UT)0 - (UT)x);
#elif FN == 1
  return x < 0 ? (T0)((UT)0 - (UT)x) : x;
#elif FN == 7
  return (T0)((UT)x * (UT)x);
#elif FN == 12
  return x < 0 ? (T0)0 : x;
#elif FN == 18
  return (T0)((x > 0) - (x < 0));
#else
#error "unary fn not defined for int"
#endif
}
#else  // bool
inline T0 ew_unary(T0 x, CT alpha) {
#if FN == 22
  return (T0)(x == 0);
#else
#error "unary fn not defined for bool"
#endif
}
#endif
#endif  // EW_UNARY

#if KIND == EW_UNARY_BACKWARD
// dx = dy * f'(x) with a = dy, b = x; NaN x gives NaN (docs/abi.md 10.5).
inline T0 ew_unary_grad(T0 a, T0 b, CT alpha) {
#if FN == 0
  return isnan(b) ? b : -a;
#elif FN == 1
  return b > 0 ? a : (b < 0 ? -a : (b == 0 ? CK(0.0) : b));
#elif FN == 2
  return a * exp(b);
#elif FN == 3
  return a / b;
#elif FN == 4
  return a / (CK(2.0) * sqrt(b));
#elif FN == 5
  return CK(-0.5) * a / (b * sqrt(b));
#elif FN == 6
  return -a / (b * b);
#elif FN == 7
  return CK(2.0) * b * a;
#elif FN == 8
  return a * cos(b);
#elif FN == 9
  return -a * sin(b);
#elif FN == 10
  T0 t = tanh(b);
  return a * (CK(1.0) - t * t);
#elif FN == 11
  T0 s = ew_sigmoid(b);
  return a * s * (CK(1.0) - s);
#elif FN == 12
  return b > 0 ? a : (isnan(b) ? b : CK(0.0));
#elif FN == 13
  T0 cdf = CK(0.5) * (CK(1.0) + erf(b * CK(0.70710678118654752440)));
  T0 pdf = CK(0.39894228040143267794) * exp(CK(-0.5) * b * b);
  return a * (cdf + b * pdf);
#elif FN == 14
  const T0 k = CK(0.79788456080286535588);
  T0 t = tanh(k * (b + CK(0.044715) * b * b * b));
  T0 du = k * (CK(1.0) + CK(0.134145) * b * b);
  return a * (CK(0.5) * (CK(1.0) + t) + CK(0.5) * b * (CK(1.0) - t * t) * du);
#elif FN == 15
  T0 s = ew_sigmoid(b);
  return a * s * (CK(1.0) + b * (CK(1.0) - s));
#elif FN == 16
  return b > 0 ? a : (isnan(b) ? b : alpha * a);
#elif FN == 17
  return b > 0 ? a : alpha * a * exp(b);
#elif FN == 23
  return a / (CK(1.0) + b);
#elif FN == 24
  return a * exp(b);
#elif FN == 25
  return a * CK(1.12837916709551257390) * exp(-b * b);
#else
#error "unary fn has no backward"
#endif
}
#endif  // EW_UNARY_BACKWARD

#if KIND == EW_BINARY
#if defined(TSR_EW_FLOAT)
inline T0 ew_binary(T0 a, T0 b, CT alpha) {
#if FN == 0 && defined(ALPHA)
  return a + alpha * b;
#elif FN == 0
  return a + b;
#elif FN == 1 && defined(ALPHA)
  return a - alpha * b;
#elif FN == 1
  return a - b;
#elif FN == 2
  return a * b;
#elif FN == 3
  return a / b;
#elif FN == 4
  return (a > b || isnan(a)) ? a : b;  // NaN if either is
#elif FN == 5
  return (a < b || isnan(a)) ? a : b;
#elif FN == 6
  return pow(a, b);
#else
#error "binary fn not defined for float"
#endif
}
#elif defined(TSR_EW_INT)
// Wraps modulo 2^bits; division truncates, x / 0 is 0, INT_MIN / -1 wraps.
inline T0 ew_binary(T0 a, T0 b, CT alpha) {
#if FN == 0 && defined(ALPHA)
  return (T0)((UT)a + (UT)alpha * (UT)b);
#elif FN == 0
  return (T0)((UT)a + (UT)b);
#elif FN == 1 && defined(ALPHA)
  return (T0)((UT)a - (UT)alpha * (UT)b);
#elif FN == 1
  return (T0)((UT)a - (UT)b);
#elif FN == 2
  return (T0)((UT)a * (UT)b);
#elif FN == 3
  return b == 0 ? (T0)0 : (b == -1 ? (T0)((UT)0 - (UT)a) : a / b);
#elif FN == 4
  return a > b ? a : b;
#elif FN == 5
  return a < b ? a : b;
#else
#error "binary fn not defined for int"
#endif
}
#else  // bool
inline T0 ew_binary(T0 a, T0 b, CT alpha) {
#if FN == 7
  return (T0)((a != 0) & (b != 0));
#elif FN == 8
  return (T0)((a != 0) | (b != 0));
#elif FN == 9
  return (T0)((a != 0) ^ (b != 0));
#else
#error "binary fn not defined for bool"
#endif
}
#endif
#endif  // EW_BINARY

#if KIND == EW_COMPARE
// C's comparisons give the catalogue's NaN rule: false, except != (true).
inline uchar ew_compare(T0 a, T0 b) {
#if FN == 0
  return a == b;
#elif FN == 1
  return a != b;
#elif FN == 2
  return a < b;
#elif FN == 3
  return a <= b;
#elif FN == 4
  return a > b;
#elif FN == 5
  return a >= b;
#else
#error "compare fn unknown"
#endif
}
#endif

#if KIND == EW_CLAMP
#if defined(TSR_EW_FLOAT)
// NaN x stays NaN; a NaN bound gives NaN; lo > hi gives hi.
inline T0 ew_clamp(T0 x, T0 lo, T0 hi) {
  T0 r = (x < lo || isnan(lo)) ? lo : x;
  return (r > hi || isnan(hi)) ? hi : r;
}
#else
inline T0 ew_clamp(T0 x, T0 lo, T0 hi) {
  T0 r = x < lo ? lo : x;
  return r > hi ? hi : r;
}
#endif
#endif

// ---------------------------------------------------------------------------
// Each op's scalar parameters and its work on one element, whose operand k
// lies at p<k>[i<k>].
#if KIND == EW_FILL
#define EW_PARAMS , ulong bits
#define EW_BODY p0[i0] = (T0)bits;
#elif KIND == EW_COPY
#define EW_PARAMS
#define EW_BODY p1[i1] = p0[i0];
#elif KIND == EW_CAST
#define EW_PARAMS
#define EW_BODY p1[i1] = CVT(p0[i0]);
#elif KIND == EW_UNARY
#define EW_PARAMS , CT alpha
#define EW_BODY p1[i1] = ew_unary(p0[i0], alpha);
#elif KIND == EW_UNARY_BACKWARD
#define EW_PARAMS , CT alpha
#define EW_BODY p2[i2] = ew_unary_grad(p0[i0], p1[i1], alpha);
#elif KIND == EW_BINARY
#define EW_PARAMS , CT alpha
#define EW_BODY p2[i2] = ew_binary(p0[i0], p1[i1], alpha);
#elif KIND == EW_COMPARE
#define EW_PARAMS
#define EW_BODY p2[i2] = ew_compare(p0[i0], p1[i1]);
#elif KIND == EW_WHERE
#define EW_PARAMS
#define EW_BODY p3[i3] = p0[i0] ? p1[i1] : p2[i2];
#elif KIND == EW_CLAMP
#define EW_PARAMS , CT lo, CT hi
#define EW_BODY p1[i1] = ew_clamp(p0[i0], (T0)lo, (T0)hi);
#elif KIND == EW_SGD
// (grad, param [, momentum_buf]); NOPS == 2 when momentum is 0.
#define EW_PARAMS , CT lr, CT wd, CT momentum, CT omd, int first, int nesterov
#if NOPS == 2
#define EW_BODY                            \
  {                                        \
    const T0 p = p1[i1];                   \
    const T0 g = p0[i0] + wd * p;          \
    p1[i1] = p - lr * g;                   \
  }
#else
#define EW_BODY                                              \
  {                                                          \
    const T0 p = p1[i1];                                     \
    const T0 g = p0[i0] + wd * p;                            \
    const T0 buf = first ? g : momentum * p2[i2] + omd * g;  \
    const T0 d = nesterov ? g + momentum * buf : buf;        \
    p2[i2] = buf;                                            \
    p1[i1] = p - lr * d;                                     \
  }
#endif
#elif KIND == EW_ADAM
// (grad, param, exp_avg, exp_avg_sq), with ref's constants and order.
#define EW_PARAMS                                                                              \
  , CT wd, CT decay, CT beta1, CT omb1, CT beta2, CT omb2, CT bc2, CT eps, CT step_size, \
      int decoupled
#define EW_BODY                                            \
  {                                                        \
    T0 p = p1[i1];                                         \
    T0 g = p0[i0];                                         \
    if (decoupled) {                                       \
      p = p * decay;                                       \
    } else {                                               \
      g = g + wd * p;                                      \
    }                                                      \
    const T0 m = beta1 * p2[i2] + omb1 * g;                \
    const T0 v = beta2 * p3[i3] + omb2 * (g * g);          \
    p2[i2] = m;                                            \
    p3[i3] = v;                                            \
    p1[i1] = p - step_size * m / (sqrt(v / bc2) + eps);    \
  }
#else
#error "KIND unknown"
#endif

// ---------------------------------------------------------------------------
// Operand lists. Contiguous: a pointer, an element offset and an index mask
// (all ones, or 0 for a broadcast scalar). Strided: a pointer, an offset and
// the step along the inner dimension, in elements.
#define EW_OPC(k) , __global T##k *p##k, ulong o##k, IDX m##k
#define EW_OPS(k) , __global T##k *p##k, ulong o##k, long s##k
#define EW_IC(k) const ulong i##k = o##k + (ulong)(i & m##k);
#define EW_IS(k) const ulong i##k = r##k + (ulong)j * (ulong)s##k;
#define EW_R0(k) ulong r##k = o##k;
#define EW_RD(k) r##k += (ulong)index * (ulong)shape[d * 5 + 1 + k];

#if NOPS == 1
#define EW_EACH(M) M(0)
#elif NOPS == 2
#define EW_EACH(M) M(0) M(1)
#elif NOPS == 3
#define EW_EACH(M) M(0) M(1) M(2)
#elif NOPS == 4
#define EW_EACH(M) M(0) M(1) M(2) M(3)
#else
#error "NOPS must be 1..4"
#endif

// Every operand contiguous (or a scalar broadcast by mask 0): n elements.
// Item g owns elements [g * EW_VEC, g * EW_VEC + EW_VEC): whole vectors are
// loaded and stored (vloadn needs only element alignment), the element
// function runs on private copies, and the last item takes the tail.
#define EW_VT_(T) T##4
#define EW_VT(T) EW_VT_(T)
#define EW_VLOAD(k)                                          \
  T##k v##k[EW_VEC];                                         \
  if (EW_LOADS(k)) {                                         \
    if (m##k != 0) {                                         \
      vstore4(vload4(0, p##k + o##k + base), 0, v##k);       \
    } else {                                                 \
      const T##k s = p##k[o##k];                             \
      for (int e = 0; e < EW_VEC; ++e) v##k[e] = s;          \
    }                                                        \
  }
#define EW_VSTORE(k) \
  if (k >= NIN) vstore4(vload4(0, v##k), 0, p##k + o##k + base);
#define EW_PRIV(k) T##k *p##k = v##k;
#define EW_IE(k) const int i##k = e;
// Inputs are loaded; outputs too when the op reads them (the optimizers).
#if KIND == EW_SGD || KIND == EW_ADAM
#define EW_LOADS(k) 1
#else
#define EW_LOADS(k) ((k) < NIN)
#endif

__kernel void ew_contig(IDX n EW_EACH(EW_OPC) EW_PARAMS) {
  const IDX base = (IDX)get_global_id(0) * EW_VEC;
  if (base + EW_VEC <= n) {
    EW_EACH(EW_VLOAD)
    {
      EW_EACH(EW_PRIV)
      for (int e = 0; e < EW_VEC; ++e) {
        EW_EACH(EW_IE)
        EW_BODY
      }
    }
    EW_EACH(EW_VSTORE)
  } else {
    for (IDX i = base; i < n; ++i) {
      EW_EACH(EW_IC)
      EW_BODY
    }
  }
}

// The strided kernels take the number of outer dimensions as -DOUTER_ND: a
// loop of constant trip count unrolls into straight-line code, which CPU
// compilers (PoCL) need to vectorise across work-items.
#ifndef OUTER_ND
#define OUTER_ND 0
#endif

// Rows of |inner| elements; |shape| holds the OUTER_ND outer dimensions
// (size, then each operand's stride, 5 longs per dimension). Each row has
// |blocks_per_row| work-groups.
__kernel void ew_rows(IDX inner, IDX blocks_per_row,
                      __constant long *shape EW_EACH(EW_OPS) EW_PARAMS) {
  const IDX group = (IDX)get_group_id(0);
  const IDX row = group / blocks_per_row;
  const IDX block = group - row * blocks_per_row;
  EW_EACH(EW_R0)
  IDX rem = row;
  for (int d = OUTER_ND - 1; d >= 0; --d) {
    const IDX size = (IDX)shape[d * 5];
    const IDX index = rem % size;
    rem /= size;
    EW_EACH(EW_RD)
  }
  const IDX local_size = (IDX)get_local_size(0);
  const IDX base = block * local_size * EW_ROW_VEC + (IDX)get_local_id(0);
  for (int v = 0; v < EW_ROW_VEC; ++v) {
    const IDX j = base + (IDX)v * local_size;
    if (j < inner) {
      EW_EACH(EW_IS)
      EW_BODY
    }
  }
}

// n elements in rows of |inner| (short): each element finds its own row.
__kernel void ew_flat(IDX n, IDX inner,
                      __constant long *shape EW_EACH(EW_OPS) EW_PARAMS) {
  const IDX local_size = (IDX)get_local_size(0);
  const IDX base = (IDX)get_group_id(0) * local_size * EW_ROW_VEC + (IDX)get_local_id(0);
  for (int v = 0; v < EW_ROW_VEC; ++v) {
    const IDX i = base + (IDX)v * local_size;
    if (i < n) {
      IDX rem = i / inner;
      const IDX j = i - rem * inner;
      EW_EACH(EW_R0)
      for (int d = OUTER_ND - 1; d >= 0; --d) {
        const IDX size = (IDX)shape[d * 5];
        const IDX index = rem % size;
        rem /= size;
        EW_EACH(EW_RD)
      }
      EW_EACH(EW_IS)
      EW_BODY
    }
  }
}
