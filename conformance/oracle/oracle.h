// The conformance oracle: every op of the catalogue evaluated in float64 (and
// exact int64 for integers), written from docs/abi.md alone. It shares no
// code with any plugin, so a plugin and the oracle agreeing means two
// independent readings of the spec agree.
//
// Besides each expected value, the oracle returns an error bound: how far a
// correct implementation may be from the exact value, in units of the unit
// roundoff of the op's compute type. The bounds are the first-order error
// analysis of the formulas in docs/abi.md (docs/conformance.md derives them);
// the comparison in the suite adds the final rounding to the output dtype.
#ifndef TESSERA_CONFORMANCE_ORACLE_ORACLE_H_
#define TESSERA_CONFORMANCE_ORACLE_ORACLE_H_

#include <stddef.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

// How the suite compares an oracle output with a plugin's output.
typedef int32_t tsr_oracle_compare_t;
enum {
  // |got - want| <= bound * u(compute) + u(out) * |want| + floor(out).
  TSR_ORACLE_TOLERANCE = 0,
  // got equals want rounded once to the compute type and once to the output
  // dtype (docs/abi.md 10.1 "Exactness"); +0 and -0 compare equal.
  TSR_ORACLE_EXACT = 1,
  // As EXACT, and the sign of zero must match too (COPY, CAST, WHERE, ...).
  // NaN payloads are not compared.
  TSR_ORACLE_BITWISE = 2,
};

// A tensor of the oracle: logical, row-major, contiguous. Values of float
// dtypes live in |v|; int and bool dtypes keep exact values in |iv| and
// mirror them (rounded) in |v|.
typedef struct tsr_oracle_tensor {
  tsr_dtype_t dtype;
  int32_t rank;
  int64_t sizes[TSR_MAX_RANK];
  int64_t numel;
  double *v;
  int64_t *iv;       // NULL for float dtypes
  // Outputs only, written by the oracle:
  double *bound;     // per element, in units of u(compute); 0 where exact
  tsr_oracle_compare_t compare;
  tsr_dtype_t compute;  // dtype whose unit roundoff |bound| counts in
} tsr_oracle_tensor;

// Allocates a tensor of |dtype| and |sizes| (rank <= 8) with zeroed values.
// Returns 0 on success, -1 when memory runs out. Owned by the caller; release
// with tsr_oracle_tensor_destroy. Thread-safe.
int tsr_oracle_tensor_create(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                             tsr_oracle_tensor *out_tensor);
void tsr_oracle_tensor_destroy(tsr_oracle_tensor *tensor);
// Sets element |i| from a double (float dtypes) or an integer (int, bool).
void tsr_oracle_tensor_set(tsr_oracle_tensor *t, int64_t i, double v, int64_t iv);
// Row-major linear index of |index| (rank entries) in |t|.
int64_t tsr_oracle_tensor_offset(const tsr_oracle_tensor *t, const int64_t *index);

// Decomposes the row-major linear index |i| of a tensor of |rank| |sizes|.
static inline void tsr_oracle_unravel(int64_t i, int32_t rank, const int64_t *sizes,
                                      int64_t *index) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    int64_t s = sizes[d] > 0 ? sizes[d] : 1;
    index[d] = i % s;
    i /= s;
  }
}

// One evaluation: the op, its attribute struct (complete, defaults already
// applied: never NULL for an op that has attributes), inputs and outputs.
// Outputs arrive shaped, allocated, and, where the op reads them
// (read-modify-write, matmul with beta != 0), holding their initial values.
typedef struct tsr_oracle_call {
  int32_t op;
  const void *attrs;
  int32_t num_inputs;
  int32_t num_outputs;
  const tsr_oracle_tensor *inputs;
  tsr_oracle_tensor *outputs;
  char message[256];  // why, when tsr_oracle_compute does not return TSR_OK
} tsr_oracle_call;

// Evaluates |call|. TSR_OK; TSR_INVALID_ARGUMENT when docs/abi.md makes the
// call an error (an index out of range, an empty MAX): a plugin must refuse
// it too; TSR_UNSUPPORTED when the oracle has no model of the op or of these
// operands. Thread-safe.
tsr_status tsr_oracle_compute(tsr_oracle_call *call);
// 1 when tsr_oracle_compute models |op|.
int tsr_oracle_covers(int32_t op);

// --- dtypes (dtype.c) -------------------------------------------------------

int tsr_oracle_dtype_is_float(tsr_dtype_t dtype);
int tsr_oracle_dtype_is_int(tsr_dtype_t dtype);
// float64 for float64, float32 for the other floats, the dtype itself else.
tsr_dtype_t tsr_oracle_compute_dtype(tsr_dtype_t dtype);
// Unit roundoff (half an ulp of 1): 2^-53, 2^-24, 2^-8 (bf16), 2^-11 (f16);
// 0 for int and bool.
double tsr_oracle_unit_roundoff(tsr_dtype_t dtype);
double tsr_oracle_min_normal(tsr_dtype_t dtype);
double tsr_oracle_max_finite(tsr_dtype_t dtype);
// |x| rounded to nearest even in |dtype|'s value set (float dtypes),
// overflowing to +-inf; ints and bool return x unchanged.
double tsr_oracle_round(double x, tsr_dtype_t dtype);
// The distance between |x| (a value of |dtype|) and its neighbour away from
// zero; 1 for int dtypes.
double tsr_oracle_ulp(double x, tsr_dtype_t dtype);
// CAST of a float64 to |dtype| as docs/abi.md 10.4 defines it.
void tsr_oracle_cast_double(double x, tsr_dtype_t dtype, double *out_v, int64_t *out_iv);
// CAST of an int64 (int or bool source) to |dtype|.
void tsr_oracle_cast_int(int64_t x, tsr_dtype_t dtype, double *out_v, int64_t *out_iv);
// int64 arithmetic wrapped to |dtype|'s width (int32: low 32 bits).
int64_t tsr_oracle_wrap(int64_t x, tsr_dtype_t dtype);
// Reads one element of |dtype| at |src| (any alignment).
void tsr_oracle_element_load(const void *src, tsr_dtype_t dtype, double *out_v, int64_t *out_iv);
// Writes one element: |v| for float dtypes (rounded), |iv| for int and bool.
void tsr_oracle_element_store(void *dst, tsr_dtype_t dtype, double v, int64_t iv);
const char *tsr_oracle_dtype_name(tsr_dtype_t dtype);

// --- scalar functions -------------------------------------------------------
//
// The repository's one float64 reading of each elementwise function: the
// finite-difference self-tests, the suite, and every plugin's and the SDK's
// tests call these rather than keep their own. Pure and thread-safe.

// UNARY's f(x) and f'(x) (docs/abi.md 10.5) in float64; f'(NaN) is NaN.
double tsr_oracle_unary_value(tsr_unary_fn_t fn, double x, double alpha);
double tsr_oracle_unary_derivative(tsr_unary_fn_t fn, double x, double alpha);
// UNARY of an int or bool |x|, exact, wrapped to |dtype|'s width.
int64_t tsr_oracle_unary_int(tsr_unary_fn_t fn, int64_t x, tsr_dtype_t dtype);
// 1 when |fn| has a backward in the catalogue.
int tsr_oracle_unary_has_backward(tsr_unary_fn_t fn);
// 1 when |fn| accepts |dtype| (docs/abi.md 10.5 table).
int tsr_oracle_unary_accepts(tsr_unary_fn_t fn, tsr_dtype_t dtype);
// BINARY's a op b (docs/abi.md 10.6) in float64: ADD and SUB scale b by
// |alpha|; MAXIMUM and MINIMUM propagate NaN; the LOGICAL fns give 0 or 1.
double tsr_oracle_binary_value(tsr_binary_fn_t fn, double a, double b, double alpha);
// BINARY of ints, exact, wrapped to |dtype|'s width: DIV truncates toward
// zero, x / 0 is 0 and MIN / -1 is MIN.
int64_t tsr_oracle_binary_int(tsr_binary_fn_t fn, int64_t a, int64_t b, int64_t alpha,
                              tsr_dtype_t dtype);
// 1 when |fn| accepts |dtype| (docs/abi.md 10.6).
int tsr_oracle_binary_accepts(tsr_binary_fn_t fn, tsr_dtype_t dtype);
// COMPARE's a op b (docs/abi.md 10.7) of floats: 1 or 0; a NaN makes every
// fn but NE false.
int tsr_oracle_compare_value(tsr_compare_fn_t fn, double a, double b);
// CLAMP of |x| (docs/abi.md 10.9) with |attrs|' bounds converted to |dtype|
// first (CAST's rule); NaN stays NaN, a NaN bound gives NaN.
double tsr_oracle_clamp_value(double x, const tsr_clamp_attrs *attrs, tsr_dtype_t dtype);
// The fused epilogue activation of MATMUL and CONV2D; NONE returns |v|.
double tsr_oracle_activation_value(tsr_activation_t act, double v);

// --- float64 host arrays, for tests ----------------------------------------

// A float tensor of |dtype| and |sizes| over the caller's row-major
// |values|: nothing is copied or owned (never pass it to
// tsr_oracle_tensor_destroy), and |bound| is NULL. As an input it is read;
// as an output of tsr_oracle_compute_values it receives the values.
tsr_oracle_tensor tsr_oracle_tensor_over(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                                         double *values);
// Evaluates |op| with |attrs| as tsr_oracle_compute does, for callers that
// want the values only: outputs whose |bound| is NULL get scratch bounds for
// the call's duration. TSR_OUT_OF_MEMORY when that scratch cannot be had.
// Thread-safe.
tsr_status tsr_oracle_compute_values(int32_t op, const void *attrs, int32_t num_inputs,
                                     const tsr_oracle_tensor *inputs, int32_t num_outputs,
                                     tsr_oracle_tensor *outputs);

// Philox-4x32-10 as docs/abi.md 10.22 defines it.
void tsr_oracle_philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

#endif  // TESSERA_CONFORMANCE_ORACLE_ORACLE_H_
