// Tessera: the tensor functions a PyTorch user reaches for (included by
// tessera/tessera.h).
//
// Each is a composition of catalogue ops and views, with PyTorch's
// semantics: a negative dim counts from the end, results are recorded for
// autograd where PyTorch's function is differentiable, and an error names the
// function called and the dtypes involved ("var: x is int64; ..."). A
// function returning tsr_tensor * gives the caller one reference (release
// with tsr_tensor_release) or NULL with tsr_last_error() set. All of them only
// read their inputs, so they are thread-safe under the tensor rules of
// tessera.h.
// Its types and TSR_API come from tessera.h, which includes this header at
// its end; included first, this header lets tessera.h include it whole.
#include "tessera/tessera.h"

#ifndef TESSERA_OPS_MORE_H_
#define TESSERA_OPS_MORE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// --- shapes: joining, splitting, dims ----------------------------------------

// Joins |count| tensors of one dtype and shape along a new dim |dim| (in [-rank-1, rank]); caller
// owns the result. Thread-safe.
TSR_API tsr_tensor *tsr_stack(int32_t count, tsr_tensor *const *xs, int32_t dim);
// A view of |x| without its size-1 dims among |dims| (others stay); |num_dims| 0 drops every size-1
// dim; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_squeeze(tsr_tensor *x, int32_t num_dims, const int32_t *dims);
// A view of |x| with a size-1 dim inserted at |dim| (in [-rank-1, rank]); caller owns it.
// Thread-safe.
TSR_API tsr_tensor *tsr_unsqueeze(tsr_tensor *x, int32_t dim);
// |x| with dims |start_dim|..|end_dim| merged into one (a view when the strides allow, else a copy;
// rank 0 gives [1]); caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_flatten(tsr_tensor *x, int32_t start_dim, int32_t end_dim);
// Splits |x| along |dim| into at most |chunks| views of ceil(size / chunks) elements (the last may
// be smaller, PyTorch's count rule); writes the count to |out_count| and, unless |out_pieces| is
// NULL, the views (caller's references) to out_pieces[0..count-1], failing when count > |capacity|.
// Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_chunk(tsr_tensor *x, int32_t chunks, int32_t dim,
                                          int32_t capacity, tsr_tensor **out_pieces,
                                          int32_t *out_count);
// Splits |x| along |dim| into views of |split_size| elements (the last may be smaller);
// |out_count|, |out_pieces| and |capacity| as for tsr_chunk. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_split(tsr_tensor *x, int64_t split_size, int32_t dim,
                                          int32_t capacity, tsr_tensor **out_pieces,
                                          int32_t *out_count);
// Splits |x| along |dim| into |count| views of |sizes| (summing to the dim's size) written to
// out_pieces[0..count-1] (caller's references). Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_split_sizes(tsr_tensor *x, int32_t count, const int64_t *sizes,
                                                int32_t dim, tsr_tensor **out_pieces);
// A new contiguous tensor tiling |x| |repeats|[d] times along each dim (|num_repeats| >= rank;
// leading dims are added); caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_repeat(tsr_tensor *x, int32_t num_repeats, const int64_t *repeats);

// --- copies, masks and indexing --------------------------------------------------

// A new contiguous copy of |x| (new storage), recorded as identity; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_clone(tsr_tensor *x);
// |x| (rank >= 2) with elements above diagonal |diagonal| of the last two dims zeroed (0 main, > 0
// above); caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_tril(tsr_tensor *x, int64_t diagonal);
// |x| (rank >= 2) with elements below diagonal |diagonal| of the last two dims zeroed; caller owns
// it. Thread-safe.
TSR_API tsr_tensor *tsr_triu(tsr_tensor *x, int64_t diagonal);
// |x| with |value| (converted to x's dtype) where the bool |mask|, broadcast to x's shape, is true;
// caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_masked_fill(tsr_tensor *x, tsr_tensor *mask, double value);
// cond ? x : |other| (converted to x's dtype) for a bool |cond|, broadcast together; caller owns
// it. Thread-safe.
TSR_API tsr_tensor *tsr_where_scalar(tsr_tensor *cond, tsr_tensor *x, double other);
// int64 [..., C] with a 1 at each int64/int32 index (checked in [0, C) on the host); |num_classes|
// -1 takes max + 1; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_one_hot(tsr_tensor *indices, int64_t num_classes);
// |x| re-indexed along |dim| by the int64/int32 |index| of rank 0 or 1 (GATHER: an index outside
// [0, size) fails the op, at the next synchronisation on an asynchronous device); caller owns it.
// Thread-safe.
TSR_API tsr_tensor *tsr_index_select(tsr_tensor *x, int32_t dim, tsr_tensor *index);

// --- sorting (the order is found on the host: a copy to the host and a synchronisation) -------

// Sorts |x| (float or int; bool fails) along |dim| (rank 0: dim 0 or -1), ascending or, when
// |descending|, descending; stable, NaN last ascending and first descending (torch.sort with
// stable=True). Values (differentiable, through GATHER) go to |out_values| and int64 indices to
// |out_indices|, caller's references; either may be NULL, not both. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_sort(tsr_tensor *x, int32_t dim, int descending,
                                         tsr_tensor **out_values, tsr_tensor **out_indices);
// The int64 indices of tsr_sort; caller owns them. Thread-safe.
TSR_API tsr_tensor *tsr_argsort(tsr_tensor *x, int32_t dim, int descending);
// The |k| (0 to the size of |dim|) largest elements of |x| along |dim| (the smallest unless
// |largest|), sorted, with their int64 indices: the first k of tsr_sort(x, dim, largest); outputs
// as tsr_sort's (caller's references, either may be NULL). Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_topk(tsr_tensor *x, int64_t k, int32_t dim, int largest,
                                         tsr_tensor **out_values, tsr_tensor **out_indices);

// --- reductions and scans ----------------------------------------------------------
// |num_dims| 0 reduces every dim; |keepdim| keeps reduced dims as size 1.

// Running sum along |dim|; int32 and bool sum into int64, as in PyTorch; caller owns it.
// Thread-safe.
TSR_API tsr_tensor *tsr_cumsum(tsr_tensor *x, int32_t dim);
// Variance over |dims| dividing by max(0, N - |correction|) (1 is PyTorch's default, unbiased; 0
// biased); float; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_var(tsr_tensor *x, int32_t num_dims, const int32_t *dims, double correction,
                            int keepdim);
// sqrt of tsr_var's result, with the same arguments; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_std(tsr_tensor *x, int32_t num_dims, const int32_t *dims, double correction,
                            int keepdim);
// log(sum(exp(x))) over |dims|, shifted by the max so that it neither overflows nor underflows;
// float; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_logsumexp(tsr_tensor *x, int32_t num_dims, const int32_t *dims,
                                  int keepdim);
// The p-norm over |dims| (torch.linalg.vector_norm): p = 2 is PyTorch's default, 1, INFINITY,
// -INFINITY, 0 (count of non-zeros) or any other p; float; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_norm(tsr_tensor *x, double p, int32_t num_dims, const int32_t *dims,
                             int keepdim);

// --- elementwise ---------------------------------------------------------------------

// start + weight * (end - start), broadcast, in PyTorch's two-sided form; float, one dtype; caller
// owns it. Thread-safe.
TSR_API tsr_tensor *tsr_lerp(tsr_tensor *start, tsr_tensor *end, tsr_tensor *weight);
// tsr_lerp with a scalar |weight|; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_lerp_scalar(tsr_tensor *start, tsr_tensor *end, double weight);
// x ^ exponent elementwise (BINARY POW), broadcast; float, one dtype; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_pow(tsr_tensor *x, tsr_tensor *exponent);
// x ^ |exponent| elementwise; float; caller owns it. Thread-safe.
TSR_API tsr_tensor *tsr_pow_scalar(tsr_tensor *x, double exponent);
// The value of the one-element tensor |x| (any dtype) as a double in |out_value|, after the work
// writing it has finished. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_item(const tsr_tensor *x, double *out_value);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_OPS_MORE_H_
