// Helpers for ref's tests: tensors in ref buffers with any view, element
// access as double, and a one-call plan-execute-destroy runner. They fail
// the calling cmocka test on any unexpected status. Setup and teardown are
// not thread-safe; the rest is as thread-safe as the plugin table it calls.
#ifndef TESSERA_PLUGINS_CPU_TESTS_TEST_UTIL_H_
#define TESSERA_PLUGINS_CPU_TESTS_TEST_UTIL_H_

#include <stdint.h>

#include "oracle/oracle.h"
#include "tessera/abi.h"
#include "tessera/ops.h"

// ref's table, set by tt_setup.
extern const tsr_plugin_api *tt_api;

// Starts the test host with |threads| threads and ref on it. Returns 0 (for
// cmocka group setups).
int tt_setup(int32_t threads);
int tt_setup_serial(void **state);
int tt_setup_two_threads(void **state);
int tt_teardown(void **state);

typedef struct tt_tensor {
  tsr_tensor_desc desc;
  tsr_plugin_buffer *buffer;
  char *base;  // host address of the buffer's byte 0
} tt_tensor;

// Allocates a buffer and describes a view into it: |strides| NULL means
// row-major contiguous; the view starts |offset| elements in. Fails the test
// on error.
void tt_tensor_make(tt_tensor *t, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                    const int64_t *strides, int64_t offset);
// As tt_tensor_make, with the strides of a row-major tensor of sizes
// |sizes| permuted: logical dimension d is physical dimension perm[d].
void tt_tensor_make_permuted(tt_tensor *t, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                             const int32_t *perm);
void tt_tensor_free(tt_tensor *t);

double tt_get(const tt_tensor *t, const int64_t *idx);
void tt_set(tt_tensor *t, const int64_t *idx, double value);
// Element at |idx|, with dimensions where t has size 1 read at index 0.
double tt_get_broadcast(const tt_tensor *t, const int64_t *idx);
// |t|'s elements read at every index of |sizes| (t's rank) as
// tt_get_broadcast reads them, row-major, in a new array the caller frees:
// how a test hands its operands to the conformance oracle.
double *tt_values(const tt_tensor *t, const int64_t *sizes);
// The conformance oracle's tensor holding |t|'s elements (int and bool
// exact), created with tsr_oracle_tensor_create: release it with
// tsr_oracle_tensor_destroy.
tsr_oracle_tensor tt_oracle_tensor(const tt_tensor *t);
// Evaluates |op| with |attrs| in the conformance oracle on |inputs| into
// tensors of |outputs|' shapes and dtypes, holding |outputs|' elements (for
// the ops that read their outputs); |out_values[k]| gets output k's values,
// row-major, in a new array the caller frees. Destroys |inputs|.
void tt_oracle_run(int32_t op, const void *attrs, tsr_oracle_tensor *inputs, int32_t num_inputs,
                   tt_tensor *const *outputs, int32_t num_outputs, double **out_values);
// Row-major next multi-index; 0 once every index has been visited.
int tt_index_next(int64_t *idx, int32_t rank, const int64_t *sizes);
int64_t tt_numel(const tt_tensor *t);
// Fills with reproducible values in [lo, hi] (integers for int dtypes, 0/1
// for bool).
void tt_fill(tt_tensor *t, uint64_t seed, double lo, double hi);

// Plans, executes (with a workspace if the plan wants one) and destroys.
// Returns the first failing status; the engine string is copied to
// |out_engine| when given.
tsr_status tt_run(int32_t op, const void *attrs, tt_tensor *const *inputs, int32_t num_inputs,
                  tt_tensor *const *outputs, int32_t num_outputs, const char **out_engine);
// op_supports for the same operands.
tsr_status tt_supports(int32_t op, const void *attrs, tt_tensor *const *inputs,
                       int32_t num_inputs, tt_tensor *const *outputs, int32_t num_outputs);

// |got| within |rtol| * |want| + |atol| of |want|; NaN matches NaN only,
// infinities match themselves.
int tt_close(double got, double want, double rtol, double atol);

// Tolerances by dtype for results computed in that dtype (the half types:
// half an ulp, relative, for a float32 result rounded once).
double tt_rtol(tsr_dtype_t dtype);

// |v| rounded to nearest even in float |dtype| (float32, bfloat16, float16,
// with subnormals and overflow to infinity); other dtypes return |v|.
// Written independently of ref's conversions.
double tt_round(double v, tsr_dtype_t dtype);
// 1 for bfloat16 and float16.
int tt_is_half(tsr_dtype_t dtype);

#endif  // TESSERA_PLUGINS_CPU_TESTS_TEST_UTIL_H_
