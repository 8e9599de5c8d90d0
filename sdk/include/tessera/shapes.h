// Tessera: shapes and axes written inline (included by tessera/print.h).
//
//   tsr_tensor *x = tsr_zeros(device, TSR_FLOAT32, TSR_SHAPE(2, 3));
//   tsr_tensor *s = tsr_sum(x, TSR_AXES(1), 0);
//
// TSR_SHAPE(...) expands to the `int32_t rank, const int64_t *sizes` pair of
// tsr_tensor_empty, tsr_zeros, tsr_ones, tsr_rand, tsr_view, tsr_reshape,
// tsr_expand, tsr_repeat and the like; TSR_AXES(...) to the `int32_t count,
// const int32_t *axes` pair of tsr_reduce, tsr_sum, tsr_mean, tsr_permute and
// tsr_squeeze. The arrays are compound literals: they live until the end of
// the enclosing block. Compound literals are C99, not C++: in C++ the two
// macros are not defined (write the count and an array yourself there).
// TSR_SCALAR_SHAPE and TSR_ALL_AXES (rank 0 / no axes, i.e. every axis) work in
// both languages.
#ifndef TESSERA_SHAPES_H_
#define TESSERA_SHAPES_H_

#include <stdint.h>

#ifndef __cplusplus
// The rank and sizes of a shape: TSR_SHAPE(2, 3) is
// `2, (const int64_t[]){2, 3}`. At least one size.
#define TSR_SHAPE(...)                                                              \
  (int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),             \
      (const int64_t[]) { __VA_ARGS__ }
// The count and list of axes: TSR_AXES(0, 2) is `2, (const int32_t[]){0, 2}`.
// At least one axis; negative axes count from the end, as the functions say.
#define TSR_AXES(...)                                                               \
  (int32_t)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)),             \
      (const int32_t[]) { __VA_ARGS__ }
#endif  // __cplusplus

// A rank-0 (scalar) shape: `0, NULL`.
#define TSR_SCALAR_SHAPE 0, (const int64_t *)0
// No axes, which the reduce-style functions read as every axis: `0, NULL`.
#define TSR_ALL_AXES 0, (const int32_t *)0

#endif  // TESSERA_SHAPES_H_
