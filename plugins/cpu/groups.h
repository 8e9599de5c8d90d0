// A tensor seen as groups: one group per index of its outer dimensions, each
// group the elements of its inner dimensions. SOFTMAX (the axis), LAYER_NORM
// (axes [axis, rank)), BATCH_NORM (all axes but 1) and CROSS_ENTROPY (a row
// of logits) all compute one group at a time.
//
// Every operand of such an op is described over the shape of the main
// tensor, a dimension it lacks or broadcasts carrying stride 0 (gamma has
// stride 0 on the outer dimensions, a per-group statistic on the inner
// ones), so one multi-index walks them all. A group is packed into a
// contiguous float64 buffer, computed there, and stored back: whatever the
// dtype and strides, the kernels see plain double arrays. Each group is
// computed whole by one thread, in a fixed order, so results do not depend on
// the thread count.
#ifndef TESSERA_PLUGINS_CPU_GROUPS_H_
#define TESSERA_PLUGINS_CPU_GROUPS_H_

#include <math.h>
#include <stdint.h>

#include "tessera/abi.h"
#include "tsr_cpu/cpu_plan.h"

// Builds |g| over a shape of |rank| |sizes|, the dimensions in |inner_mask|
// forming the groups (in logical order), for |num_operands| operands whose
// strides over that shape (in elements, 0 where the operand lacks or
// broadcasts a dimension) are strides[k] and element sizes elem_sizes[k].
// Drops size-1 dimensions and merges neighbours contiguous in every operand.
// No allocation. Thread-safe.
void tsr_cpu_groups_init(tsr_cpu_groups *g, int32_t rank, const int64_t *sizes, uint32_t inner_mask,
                         int32_t num_operands, const int64_t *const *strides,
                         const int64_t *elem_sizes);

// Writes the byte offset of group |index| for every operand to offsets[k].
// Thread-safe.
void tsr_cpu_groups_offsets_get(const tsr_cpu_groups *g, int64_t index, int64_t *offsets);

// Converts the group of operand |k| (of |dtype|, a float dtype) whose first
// element is at |base| to g->size doubles at |dst|, in row-major order of
// the inner dimensions. Thread-safe.
void tsr_cpu_groups_load(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype, const char *base,
                         double *dst);
// The reverse: rounds g->size doubles from |src| to |dtype| (to nearest even)
// into the group of operand |k| at |base|. Thread-safe.
void tsr_cpu_groups_store(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype, char *base,
                          const double *src);

// As tsr_cpu_groups_load and _store for |count| groups that are neighbours
// along the innermost outer dimension (group index i, i + 1, ..., all within
// one run of that dimension: see tsr_cpu_groups_run_left), the first at
// |base|; group j is at dst[j * g->size] (src). Thread-safe.
void tsr_cpu_groups_load_many(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype,
                              const char *base, int64_t count, double *dst);
void tsr_cpu_groups_store_many(const tsr_cpu_groups *g, int32_t k, tsr_dtype_t dtype, char *base,
                               int64_t count, const double *src);
// How many groups from |index| on are neighbours along the innermost outer
// dimension (at least 1). Thread-safe.
int64_t tsr_cpu_groups_run_left(const tsr_cpu_groups *g, int64_t index);
// How many neighbouring groups are worth packing at once for operand |k|
// (element size |elem_size|): more than 1 when the groups' elements are far
// apart but neighbouring groups are close, as for a softmax over a
// non-innermost axis. At least 1. Thread-safe.
int64_t tsr_cpu_groups_block(const tsr_cpu_groups *g, int32_t k, int64_t elem_size);

// One element of a float dtype, as a double; and a double rounded into one.
double tsr_cpu_float_load(tsr_dtype_t dtype, const char *p);
void tsr_cpu_float_store(tsr_dtype_t dtype, char *p, double v);

// Sums of |n| doubles in eight interleaved partial sums folded in a fixed
// order: the vectoriser can use full registers and the add latency is
// hidden, and the order still depends on |n| alone. Thread-safe.
#define TSR_CPU_GROUPS_LANES 8
#define TSR_CPU_GROUPS_SUM(name, params, term)                                \
  static inline double name params {                                          \
    double lanes[TSR_CPU_GROUPS_LANES] = {0};                                 \
    int64_t k = 0;                                                            \
    for (; k + TSR_CPU_GROUPS_LANES <= n; k += TSR_CPU_GROUPS_LANES) {        \
      for (int j = 0; j < TSR_CPU_GROUPS_LANES; ++j) lanes[j] += term(k + j); \
    }                                                                         \
    double sum = 0;                                                           \
    for (; k < n; ++k) sum += term(k);                                        \
    for (int j = 0; j < TSR_CPU_GROUPS_LANES; ++j) sum += lanes[j];           \
    return sum;                                                               \
  }
#define TSR_CPU_GROUPS_TERM_V(k) (v[k])
#define TSR_CPU_GROUPS_TERM_DEV2(k) ((v[k] - c) * (v[k] - c))
#define TSR_CPU_GROUPS_TERM_DOT(k) (a[k] * b[k])
// Σ v[k]
TSR_CPU_GROUPS_SUM(tsr_cpu_groups_sum, (const double *v, int64_t n), TSR_CPU_GROUPS_TERM_V)
// Σ (v[k] - c)²
TSR_CPU_GROUPS_SUM(tsr_cpu_groups_sum_sq_dev, (const double *v, int64_t n, double c),
                   TSR_CPU_GROUPS_TERM_DEV2)
// Σ a[k] b[k]
TSR_CPU_GROUPS_SUM(tsr_cpu_groups_dot, (const double *a, const double *b, int64_t n),
                   TSR_CPU_GROUPS_TERM_DOT)

// e^x in the catalogue's compute type: float32 (|single|) for every dtype but
// float64. libm's expf costs half of exp, and these exponentials bound
// softmax and cross-entropy. Thread-safe.
static inline double tsr_cpu_groups_exp(double x, int single) {
  return single ? (double)expf((float)x) : exp(x);
}

// Groups per parallel chunk for groups of |size| elements, so a chunk holds
// tens of thousands of elements. At least 1.
int64_t tsr_cpu_groups_grain(int64_t size);

#endif  // TESSERA_PLUGINS_CPU_GROUPS_H_
