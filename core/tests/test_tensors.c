// Tests of tensor handles, views and storage on the ref device: views share
// storage, the sizes, strides and offsets each view function gives, reshape
// of a non-contiguous tensor copies, reference counting frees the storage
// with its last view, the storage version counts writes, and to_host reads
// any view in row-major order.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tessera/tessera.h"

typedef struct fixture {
  tsr_context *context;
  tsr_device *device;
} fixture;

// ---------------------------------------------------------------------------
// Helpers.

#include "test_check.h"


static void sizes_equal(const tsr_tensor *t, int32_t rank, const int64_t *sizes) {
  assert_int_equal(tsr_tensor_rank(t), rank);
  for (int32_t d = 0; d < rank; ++d) {
    if (tsr_tensor_size(t, d) != sizes[d]) {
      fail_msg("size[%d] is %lld, expected %lld", d, (long long)tsr_tensor_size(t, d),
               (long long)sizes[d]);
    }
  }
}

static void strides_equal(const tsr_tensor *t, int32_t rank, const int64_t *strides) {
  assert_int_equal(tsr_tensor_rank(t), rank);
  for (int32_t d = 0; d < rank; ++d) {
    if (tsr_tensor_stride(t, d) != strides[d]) {
      fail_msg("stride[%d] is %lld, expected %lld", d, (long long)tsr_tensor_stride(t, d),
               (long long)strides[d]);
    }
  }
}

// A float32 tensor holding 0, 1, 2, ... in row-major order.
static tsr_tensor *iota(tsr_device *device, int32_t rank, const int64_t *sizes) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  float *data = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  assert_non_null(data);
  for (int64_t i = 0; i < n; ++i) data[i] = (float)i;
  tsr_tensor *t = tsr_tensor_from_host(device, TSR_FLOAT32, rank, sizes, data);
  free(data);
  CHECK_TENSOR(t);
  return t;
}

// Reads |t| (float32) to the host and compares it with |expected|.
static void values_equal(const tsr_tensor *t, int64_t n, const float *expected) {
  assert_int_equal(tsr_tensor_numel(t), n);
  float *got = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  assert_non_null(got);
  CHECK_OK(tsr_tensor_to_host(t, got, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != expected[i]) {
      float g = got[i];
      free(got);
      fail_msg("element %lld is %g, expected %g", (long long)i, (double)g, (double)expected[i]);
    }
  }
  free(got);
}

static tsr_allocator_stats stats_get(const tsr_device *device) {
  tsr_allocator_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  CHECK_OK(tsr_device_allocator_stats_get(device, &stats));
  return stats;
}

static void expect_failure(const void *result, tsr_status status, const char *needle) {
  assert_null(result);
  assert_int_equal(tsr_last_status(), status);
  if (needle != NULL && strstr(tsr_last_error(), needle) == NULL) {
    fail_msg("the message '%s' does not mention '%s'", tsr_last_error(), needle);
  }
}

// ---------------------------------------------------------------------------
// Views share storage.

static void test_view_shares_storage_and_sees_writes_through_its_base(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 2, (int64_t[]){2, 3});
  tsr_tensor *v = tsr_view(a, 2, (int64_t[]){3, 2});
  CHECK_TENSOR(v);
  assert_true(tsr_tensor_shares_storage(a, v));
  sizes_equal(v, 2, (int64_t[]){3, 2});
  strides_equal(v, 2, (int64_t[]){2, 1});
  assert_int_equal(tsr_tensor_offset(v), 0);
  values_equal(v, 6, (float[]){0, 1, 2, 3, 4, 5});

  CHECK_OK(tsr_fill_(a, 7.0));
  values_equal(v, 6, (float[]){7, 7, 7, 7, 7, 7});

  // And the other way: writing a slice of the view changes the base.
  tsr_tensor *row = tsr_slice(v, 0, 1, 2, 1);
  CHECK_TENSOR(row);
  assert_true(tsr_tensor_shares_storage(row, a));
  CHECK_OK(tsr_fill_(row, -1.0));
  values_equal(a, 6, (float[]){7, 7, -1, -1, 7, 7});

  tsr_tensor_release(row);
  tsr_tensor_release(v);
  tsr_tensor_release(a);
}

static void test_view_infers_one_size_and_rejects_two_unknown_sizes(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 1, (int64_t[]){12});
  tsr_tensor *v = tsr_view(a, 3, (int64_t[]){2, -1, 3});
  CHECK_TENSOR(v);
  sizes_equal(v, 3, (int64_t[]){2, 2, 3});
  strides_equal(v, 3, (int64_t[]){6, 3, 1});
  tsr_tensor_release(v);

  tsr_last_error_clear();
  expect_failure(tsr_view(a, 2, (int64_t[]){-1, -1}), TSR_INVALID_ARGUMENT, "view");
  expect_failure(tsr_view(a, 2, (int64_t[]){5, -1}), TSR_INVALID_ARGUMENT, "view");
  expect_failure(tsr_view(a, 2, (int64_t[]){5, 2}), TSR_INVALID_ARGUMENT, "view");
  tsr_context_error_clear(f->context);
  tsr_tensor_release(a);
}

static void test_view_of_a_transposed_tensor_is_refused_with_a_hint_to_reshape(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 2, (int64_t[]){2, 3});
  tsr_tensor *t = tsr_transpose(a, 0, 1);
  CHECK_TENSOR(t);
  expect_failure(tsr_view(t, 1, (int64_t[]){6}), TSR_INVALID_ARGUMENT, "tsr_reshape");
  tsr_context_error_clear(f->context);
  tsr_tensor_release(t);
  tsr_tensor_release(a);
}

// ---------------------------------------------------------------------------
// Reshape.

static void test_reshape_of_a_contiguous_tensor_is_a_view(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 2, (int64_t[]){2, 6});
  tsr_tensor *r = tsr_reshape(a, 3, (int64_t[]){3, 2, 2});
  CHECK_TENSOR(r);
  assert_true(tsr_tensor_shares_storage(a, r));
  sizes_equal(r, 3, (int64_t[]){3, 2, 2});
  strides_equal(r, 3, (int64_t[]){4, 2, 1});
  // A row slice is still viewable as a flat vector: its rows are adjacent.
  tsr_tensor *rows = tsr_slice(a, 0, 1, 2, 1);
  CHECK_TENSOR(rows);
  tsr_tensor *flat = tsr_reshape(rows, 1, (int64_t[]){-1});
  CHECK_TENSOR(flat);
  assert_true(tsr_tensor_shares_storage(a, flat));
  assert_int_equal(tsr_tensor_offset(flat), 6);
  values_equal(flat, 6, (float[]){6, 7, 8, 9, 10, 11});
  tsr_tensor_release(flat);
  tsr_tensor_release(rows);
  tsr_tensor_release(r);
  tsr_tensor_release(a);
}

static void test_reshape_of_a_non_contiguous_tensor_copies(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 2, (int64_t[]){2, 3});
  tsr_tensor *t = tsr_transpose(a, 0, 1);
  CHECK_TENSOR(t);
  tsr_tensor *r = tsr_reshape(t, 1, (int64_t[]){6});
  CHECK_TENSOR(r);
  assert_false(tsr_tensor_shares_storage(a, r));
  assert_true(tsr_tensor_is_contiguous(r));
  sizes_equal(r, 1, (int64_t[]){6});
  values_equal(r, 6, (float[]){0, 3, 1, 4, 2, 5});
  // A copy: later writes to the source do not reach it.
  CHECK_OK(tsr_fill_(a, 9.0));
  values_equal(r, 6, (float[]){0, 3, 1, 4, 2, 5});
  tsr_tensor_release(r);
  tsr_tensor_release(t);
  tsr_tensor_release(a);
}

// ---------------------------------------------------------------------------
// Transpose, permute, slice, expand.

static void test_transpose_swaps_two_sizes_and_strides(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 3, (int64_t[]){2, 3, 4});
  tsr_tensor *t = tsr_transpose(a, 0, 2);
  CHECK_TENSOR(t);
  assert_true(tsr_tensor_shares_storage(a, t));
  sizes_equal(t, 3, (int64_t[]){4, 3, 2});
  strides_equal(t, 3, (int64_t[]){1, 4, 12});
  assert_int_equal(tsr_tensor_offset(t), 0);
  assert_false(tsr_tensor_is_contiguous(t));
  // Negative dims count from the end.
  tsr_tensor *n = tsr_transpose(a, -1, -3);
  CHECK_TENSOR(n);
  strides_equal(n, 3, (int64_t[]){1, 4, 12});
  expect_failure(tsr_transpose(a, 0, 3), TSR_INVALID_ARGUMENT, "transpose");
  tsr_context_error_clear(f->context);
  tsr_tensor_release(n);
  tsr_tensor_release(t);
  tsr_tensor_release(a);
}

static void test_permute_reorders_sizes_and_strides_and_rejects_repeated_dims(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 3, (int64_t[]){2, 3, 4});
  tsr_tensor *p = tsr_permute(a, 3, (int32_t[]){2, 0, 1});
  CHECK_TENSOR(p);
  assert_true(tsr_tensor_shares_storage(a, p));
  sizes_equal(p, 3, (int64_t[]){4, 2, 3});
  strides_equal(p, 3, (int64_t[]){1, 12, 4});
  expect_failure(tsr_permute(a, 3, (int32_t[]){0, 0, 1}), TSR_INVALID_ARGUMENT, "permute");
  expect_failure(tsr_permute(a, 2, (int32_t[]){0, 1}), TSR_INVALID_ARGUMENT, "permute");
  tsr_context_error_clear(f->context);
  tsr_tensor_release(p);
  tsr_tensor_release(a);
}

static void test_slice_sets_offset_size_and_stride_and_clamps_like_python(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 2, (int64_t[]){4, 6});
  // Columns 1, 3 of every row.
  tsr_tensor *s = tsr_slice(a, 1, 1, 5, 2);
  CHECK_TENSOR(s);
  assert_true(tsr_tensor_shares_storage(a, s));
  sizes_equal(s, 2, (int64_t[]){4, 2});
  strides_equal(s, 2, (int64_t[]){6, 2});
  assert_int_equal(tsr_tensor_offset(s), 1);
  values_equal(s, 8, (float[]){1, 3, 7, 9, 13, 15, 19, 21});

  // Rows -3..-1: rows 1 and 2.
  tsr_tensor *r = tsr_slice(a, 0, -3, -1, 1);
  CHECK_TENSOR(r);
  sizes_equal(r, 2, (int64_t[]){2, 6});
  assert_int_equal(tsr_tensor_offset(r), 6);
  assert_true(tsr_tensor_is_contiguous(r));

  // Out-of-range bounds clamp; an empty range gives size 0.
  tsr_tensor *all = tsr_slice(a, 0, -100, 100, 1);
  CHECK_TENSOR(all);
  sizes_equal(all, 2, (int64_t[]){4, 6});
  assert_int_equal(tsr_tensor_offset(all), 0);
  tsr_tensor *none = tsr_slice(a, 0, 3, 1, 1);
  CHECK_TENSOR(none);
  assert_int_equal(tsr_tensor_size(none, 0), 0);
  assert_int_equal(tsr_tensor_numel(none), 0);

  // A slice of a slice composes offsets.
  tsr_tensor *rs = tsr_slice(r, 1, 2, 6, 3);
  CHECK_TENSOR(rs);
  assert_int_equal(tsr_tensor_offset(rs), 8);
  strides_equal(rs, 2, (int64_t[]){6, 3});
  values_equal(rs, 4, (float[]){8, 11, 14, 17});

  expect_failure(tsr_slice(a, 0, 0, 2, 0), TSR_INVALID_ARGUMENT, "slice");
  expect_failure(tsr_slice(a, 2, 0, 2, 1), TSR_INVALID_ARGUMENT, "slice");
  tsr_context_error_clear(f->context);
  tsr_tensor_release(rs);
  tsr_tensor_release(none);
  tsr_tensor_release(all);
  tsr_tensor_release(r);
  tsr_tensor_release(s);
  tsr_tensor_release(a);
}

static void test_expand_broadcasts_size_one_dims_with_stride_zero(void **state) {
  fixture *f = *state;
  tsr_tensor *b = iota(f->device, 2, (int64_t[]){3, 1});
  tsr_tensor *e = tsr_expand(b, 3, (int64_t[]){2, 3, 4});
  CHECK_TENSOR(e);
  assert_true(tsr_tensor_shares_storage(b, e));
  sizes_equal(e, 3, (int64_t[]){2, 3, 4});
  strides_equal(e, 3, (int64_t[]){0, 1, 0});
  values_equal(e, 24,
               (float[]){0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  // -1 keeps a size.
  tsr_tensor *k = tsr_expand(b, 2, (int64_t[]){-1, 5});
  CHECK_TENSOR(k);
  sizes_equal(k, 2, (int64_t[]){3, 5});
  strides_equal(k, 2, (int64_t[]){1, 0});
  // Only size-1 dims stretch; a new leading dim cannot be -1.
  expect_failure(tsr_expand(b, 2, (int64_t[]){4, 1}), TSR_INVALID_ARGUMENT, "expand");
  expect_failure(tsr_expand(b, 3, (int64_t[]){-1, 3, 1}), TSR_INVALID_ARGUMENT, "expand");
  tsr_context_error_clear(f->context);
  tsr_tensor_release(k);
  tsr_tensor_release(e);
  tsr_tensor_release(b);
}

// A new handle (so that a scope owns it like any result) over the same
// storage, offset and strides: no copy.
static void test_contiguous_of_a_contiguous_tensor_shares_its_storage(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 2, (int64_t[]){2, 3});
  tsr_tensor *c = tsr_contiguous(a);
  assert_ptr_not_equal(c, a);
  assert_true(tsr_tensor_shares_storage(c, a));
  assert_int_equal(tsr_tensor_offset(c), tsr_tensor_offset(a));
  assert_memory_equal(tsr_tensor_strides(c), tsr_tensor_strides(a), 2 * sizeof(int64_t));
  tsr_tensor_release(c);
  tsr_tensor *t = tsr_transpose(a, 0, 1);
  CHECK_TENSOR(t);
  tsr_tensor *ct = tsr_contiguous(t);
  CHECK_TENSOR(ct);
  assert_ptr_not_equal(ct, t);
  assert_false(tsr_tensor_shares_storage(ct, a));
  values_equal(ct, 6, (float[]){0, 3, 1, 4, 2, 5});
  tsr_tensor_release(ct);
  tsr_tensor_release(t);
  values_equal(a, 6, (float[]){0, 1, 2, 3, 4, 5});
  tsr_tensor_release(a);
}

static void test_is_contiguous_ignores_the_stride_of_size_one_dims(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 2, (int64_t[]){4, 1});
  tsr_tensor *t = tsr_transpose(a, 0, 1);  // [1, 4] with strides [1, 1]
  CHECK_TENSOR(t);
  assert_true(tsr_tensor_is_contiguous(t));
  tsr_tensor *b = iota(f->device, 2, (int64_t[]){2, 2});
  tsr_tensor *bt = tsr_transpose(b, 0, 1);
  CHECK_TENSOR(bt);
  assert_false(tsr_tensor_is_contiguous(bt));
  tsr_tensor_release(bt);
  tsr_tensor_release(b);
  tsr_tensor_release(t);
  tsr_tensor_release(a);
}

static void test_size_and_stride_count_negative_dims_from_the_end(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 3, (int64_t[]){2, 3, 4});
  assert_int_equal(tsr_tensor_size(a, -1), 4);
  assert_int_equal(tsr_tensor_size(a, -3), 2);
  assert_int_equal(tsr_tensor_size(a, 3), -1);
  assert_int_equal(tsr_tensor_size(a, -4), -1);
  assert_int_equal(tsr_tensor_stride(a, -2), 4);
  assert_int_equal(tsr_tensor_numel(a), 24);
  assert_int_equal(tsr_tensor_dtype(a), TSR_FLOAT32);
  assert_ptr_equal(tsr_tensor_device(a), f->device);
  tsr_tensor_release(a);
}

static void test_tensor_creation_rejects_bad_shapes_with_a_message(void **state) {
  fixture *f = *state;
  expect_failure(tsr_tensor_empty(f->device, TSR_FLOAT32, 2, (int64_t[]){2, -3}),
                 TSR_INVALID_ARGUMENT, "negative");
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  expect_failure(tsr_tensor_empty(f->device, TSR_FLOAT32, 9, nine), TSR_INVALID_ARGUMENT, "rank");
  expect_failure(tsr_tensor_empty(f->device, 99, 1, (int64_t[]){2}), TSR_INVALID_ARGUMENT, "dtype");
  expect_failure(
      tsr_tensor_empty(f->device, TSR_FLOAT32, 2, (int64_t[]){INT64_MAX / 2, 4}),
      TSR_INVALID_ARGUMENT, "overflow");
  tsr_context_error_clear(f->context);
}

// ---------------------------------------------------------------------------
// Reference counting.

static void test_storage_is_freed_with_its_last_view_not_before(void **state) {
  fixture *f = *state;
  tsr_allocator_stats before = stats_get(f->device);
  tsr_tensor *a = tsr_tensor_empty(f->device, TSR_FLOAT32, 1, (int64_t[]){4096});
  CHECK_TENSOR(a);
  tsr_allocator_stats allocated = stats_get(f->device);
  assert_int_equal(allocated.alloc_count, before.alloc_count + 1);
  assert_true(allocated.bytes_in_use >= before.bytes_in_use + 4096 * sizeof(float));

  tsr_tensor *v = tsr_view(a, 2, (int64_t[]){64, 64});
  CHECK_TENSOR(v);
  assert_ptr_equal(tsr_tensor_retain(a), a);
  tsr_tensor_release(a);  // the retained reference
  tsr_tensor_release(a);  // the original: the view still holds the storage
  tsr_allocator_stats viewed = stats_get(f->device);
  assert_int_equal(viewed.free_count, before.free_count);
  assert_int_equal(viewed.bytes_in_use, allocated.bytes_in_use);
  // The view still reads and writes its storage.
  CHECK_OK(tsr_fill_(v, 3.0));
  float corner = 0;
  tsr_tensor *one = tsr_slice(v, 0, 63, 64, 1);
  CHECK_TENSOR(one);
  tsr_tensor *last = tsr_slice(one, 1, 63, 64, 1);
  CHECK_TENSOR(last);
  CHECK_OK(tsr_tensor_to_host(last, &corner, sizeof(corner)));
  assert_true(corner == 3.0f);
  tsr_tensor_release(last);
  tsr_tensor_release(one);
  assert_int_equal(stats_get(f->device).free_count, before.free_count);

  tsr_tensor_release(v);
  tsr_allocator_stats released = stats_get(f->device);
  assert_int_equal(released.free_count, before.free_count + 1);
  assert_int_equal(released.bytes_in_use, before.bytes_in_use);
  tsr_tensor_release(NULL);  // ignored
}

// ---------------------------------------------------------------------------
// Storage version.

static void test_storage_version_increments_after_every_write_and_not_after_reads(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 1, (int64_t[]){8});
  tsr_tensor *b = iota(f->device, 1, (int64_t[]){8});
  uint64_t v0 = tsr_tensor_storage_version(a);
  assert_true(v0 >= 1);  // the upload wrote it

  CHECK_OK(tsr_fill_(a, 1.0));
  assert_int_equal(tsr_tensor_storage_version(a), v0 + 1);

  // A view reports its storage's version, and writing it bumps the base's.
  tsr_tensor *half = tsr_slice(a, 0, 0, 4, 1);
  CHECK_TENSOR(half);
  assert_int_equal(tsr_tensor_storage_version(half), v0 + 1);
  CHECK_OK(tsr_fill_(half, 2.0));
  assert_int_equal(tsr_tensor_storage_version(a), v0 + 2);

  // Reading |a| leaves it alone; the result's storage was written once.
  uint64_t vb = tsr_tensor_storage_version(b);
  tsr_tensor *sum = tsr_add(a, b);
  CHECK_TENSOR(sum);
  assert_int_equal(tsr_tensor_storage_version(a), v0 + 2);
  assert_int_equal(tsr_tensor_storage_version(b), vb);
  assert_int_equal(tsr_tensor_storage_version(sum), 1);

  // In place: a = a + b.
  CHECK_OK(tsr_binary_out(a, a, b, TSR_BINARY_ADD, 1.0));
  assert_int_equal(tsr_tensor_storage_version(a), v0 + 3);
  values_equal(a, 8, (float[]){2, 3, 4, 5, 5, 6, 7, 8});

  // copy_ into a view.
  tsr_tensor *b_half = tsr_slice(b, 0, 4, 8, 1);
  CHECK_TENSOR(b_half);
  CHECK_OK(tsr_copy_(half, b_half));
  assert_int_equal(tsr_tensor_storage_version(a), v0 + 4);
  assert_int_equal(tsr_tensor_storage_version(b), vb);
  values_equal(a, 8, (float[]){4, 5, 6, 7, 5, 6, 7, 8});
  tsr_tensor_release(b_half);

  tsr_tensor_release(sum);
  tsr_tensor_release(half);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
}

// ---------------------------------------------------------------------------
// to_host of views.

static void test_to_host_reads_non_contiguous_views_in_row_major_order(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 3, (int64_t[]){2, 3, 4});

  tsr_tensor *p = tsr_permute(a, 3, (int32_t[]){2, 0, 1});  // [4, 2, 3]
  CHECK_TENSOR(p);
  float expected[24];
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) expected[(k * 2 + i) * 3 + j] = (float)(i * 12 + j * 4 + k);
    }
  }
  values_equal(p, 24, expected);

  // Every other column of the last two rows of each matrix, reversed dims.
  tsr_tensor *s = tsr_slice(a, 2, 1, 4, 2);  // [2, 3, 2], offset 1
  CHECK_TENSOR(s);
  tsr_tensor *s2 = tsr_slice(s, 1, 1, 3, 1);  // [2, 2, 2], offset 5
  CHECK_TENSOR(s2);
  tsr_tensor *st = tsr_transpose(s2, 0, 2);  // [2, 2, 2]
  CHECK_TENSOR(st);
  values_equal(s2, 8, (float[]){5, 7, 9, 11, 17, 19, 21, 23});
  values_equal(st, 8, (float[]){5, 17, 9, 21, 7, 19, 11, 23});

  // A broadcast view (stride 0) repeats elements.
  tsr_tensor *row = tsr_slice(a, 0, 1, 2, 1);  // [1, 3, 4], offset 12
  CHECK_TENSOR(row);
  tsr_tensor *col = tsr_slice(row, 2, 3, 4, 1);  // [1, 3, 1], offset 15
  CHECK_TENSOR(col);
  tsr_tensor *e = tsr_expand(col, 3, (int64_t[]){2, 3, 2});
  CHECK_TENSOR(e);
  values_equal(e, 12, (float[]){15, 15, 19, 19, 23, 23, 15, 15, 19, 19, 23, 23});

  // to_host of a view leaves the source untouched.
  float all[24];
  for (int i = 0; i < 24; ++i) all[i] = (float)i;
  values_equal(a, 24, all);

  tsr_tensor_release(e);
  tsr_tensor_release(col);
  tsr_tensor_release(row);
  tsr_tensor_release(st);
  tsr_tensor_release(s2);
  tsr_tensor_release(s);
  tsr_tensor_release(p);
  tsr_tensor_release(a);
}

static void test_to_host_refuses_a_destination_of_the_wrong_size(void **state) {
  fixture *f = *state;
  tsr_tensor *a = iota(f->device, 1, (int64_t[]){4});
  float out[5];
  assert_int_equal(tsr_tensor_to_host(a, out, sizeof(out)), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "dst_bytes"));
  assert_int_equal(tsr_tensor_to_host(a, NULL, 16), TSR_INVALID_ARGUMENT);
  tsr_context_error_clear(f->context);
  tsr_tensor_release(a);
}

// ---------------------------------------------------------------------------

static int group_setup(void **state) {
#ifdef TSR_TEST_REF_PLUGIN
  static fixture f;
  unsetenv("TSR_DEVICE");
  unsetenv("TSR_FALLBACK");
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_REF_PLUGIN;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  if (tsr_context_create(&options, &f.context) != TSR_OK) {
    fprintf(stderr, "context_create: %s\n", tsr_last_error());
    return -1;
  }
  f.device = tsr_context_device_find(f.context, "ref:0");
  if (f.device == NULL) return -1;
  *state = &f;
  return 0;
#else
  (void)state;
  return -1;
#endif
}

static int group_teardown(void **state) {
  fixture *f = *state;
  if (f != NULL) tsr_context_destroy(f->context);
  return 0;
}

int main(void) {
#ifndef TSR_TEST_REF_PLUGIN
  fprintf(stderr, "test_tensors: skipped: the ref plugin (tessera-ref) is not built\n");
  return SKIP_CODE;
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_view_shares_storage_and_sees_writes_through_its_base),
      cmocka_unit_test(test_view_infers_one_size_and_rejects_two_unknown_sizes),
      cmocka_unit_test(test_view_of_a_transposed_tensor_is_refused_with_a_hint_to_reshape),
      cmocka_unit_test(test_reshape_of_a_contiguous_tensor_is_a_view),
      cmocka_unit_test(test_reshape_of_a_non_contiguous_tensor_copies),
      cmocka_unit_test(test_transpose_swaps_two_sizes_and_strides),
      cmocka_unit_test(test_permute_reorders_sizes_and_strides_and_rejects_repeated_dims),
      cmocka_unit_test(test_slice_sets_offset_size_and_stride_and_clamps_like_python),
      cmocka_unit_test(test_expand_broadcasts_size_one_dims_with_stride_zero),
      cmocka_unit_test(test_contiguous_of_a_contiguous_tensor_shares_its_storage),
      cmocka_unit_test(test_is_contiguous_ignores_the_stride_of_size_one_dims),
      cmocka_unit_test(test_size_and_stride_count_negative_dims_from_the_end),
      cmocka_unit_test(test_tensor_creation_rejects_bad_shapes_with_a_message),
      cmocka_unit_test(test_storage_is_freed_with_its_last_view_not_before),
      cmocka_unit_test(test_storage_version_increments_after_every_write_and_not_after_reads),
      cmocka_unit_test(test_to_host_reads_non_contiguous_views_in_row_major_order),
      cmocka_unit_test(test_to_host_refuses_a_destination_of_the_wrong_size),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
