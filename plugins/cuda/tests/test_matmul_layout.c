// MATMUL's mapping onto one cuBLASLt call: which layouts are taken as they
// are, transposed or batched, what fuses into the epilogue, and what is left
// to the fallback with a reason.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <string.h>

#include "matmul_layout.h"

// A row-major packed descriptor of |rank| sizes.
static tsr_tensor_desc packed(int32_t rank, const int64_t *sizes) {
  tsr_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = TSR_FLOAT32;
  d.rank = rank;
  int64_t stride = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = stride;
    stride *= sizes[i];
  }
  d.alias_group = -1;
  return d;
}

static void test_row_major_operands_map_without_transposes(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(2, (int64_t[]){4, 3}), b = packed(2, (int64_t[]){3, 5});
  tsr_tensor_desc out = packed(2, (int64_t[]){4, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  // cuBLASLt's A is b as an N x K column-major matrix, B is a as K x M.
  assert_int_equal(l.a.rows, 5);
  assert_int_equal(l.a.cols, 3);
  assert_int_equal(l.a.ld, 5);
  assert_false(l.a.transpose);
  assert_int_equal(l.b.rows, 3);
  assert_int_equal(l.b.cols, 4);
  assert_int_equal(l.b.ld, 3);
  assert_false(l.b.transpose);
  assert_int_equal(l.d.rows, 5);
  assert_int_equal(l.d.cols, 4);
  assert_int_equal(l.d.ld, 5);
  assert_int_equal(l.batch, 1);
}

static void test_a_transposed_view_becomes_op_t(void **state) {
  (void)state;
  // a [4, 3] viewed from a [3, 4] buffer: strides (1, 4).
  tsr_tensor_desc a = packed(2, (int64_t[]){4, 3});
  a.strides[0] = 1;
  a.strides[1] = 4;
  tsr_tensor_desc b = packed(2, (int64_t[]){3, 5}), out = packed(2, (int64_t[]){4, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  assert_true(l.b.transpose);
  assert_int_equal(l.b.rows, 4);
  assert_int_equal(l.b.cols, 3);
  assert_int_equal(l.b.ld, 4);
  assert_false(l.a.transpose);
}

static void test_batches_collapse_and_a_broadcast_weight_has_stride_zero(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(4, (int64_t[]){2, 3, 4, 6});
  tsr_tensor_desc b = packed(4, (int64_t[]){1, 1, 6, 5});
  b.strides[0] = 0;
  b.strides[1] = 0;
  tsr_tensor_desc out = packed(4, (int64_t[]){2, 3, 4, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  assert_int_equal(l.batch, 6);
  assert_int_equal(l.b.batch_stride, 24);
  assert_int_equal(l.a.batch_stride, 0);
  assert_int_equal(l.d.batch_stride, 20);
}

static void test_batches_that_do_not_collapse_fall_back(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(4, (int64_t[]){2, 3, 4, 6});
  a.strides[0] = 1000;  // a gap between the outer batches
  tsr_tensor_desc b = packed(4, (int64_t[]){2, 3, 6, 5});
  tsr_tensor_desc out = packed(4, (int64_t[]){2, 3, 4, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_UNSUPPORTED);
  assert_non_null(strstr(why, "do not collapse"));
}

static void test_operands_without_a_unit_stride_fall_back(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(2, (int64_t[]){4, 3});
  a.strides[0] = 6;
  a.strides[1] = 2;  // every second column
  tsr_tensor_desc b = packed(2, (int64_t[]){3, 5}), out = packed(2, (int64_t[]){4, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_UNSUPPORTED);
  assert_non_null(strstr(why, "unit stride"));
}

static void test_row_vector_bias_and_relu_fuse_into_the_epilogue(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(2, (int64_t[]){4, 3}), b = packed(2, (int64_t[]){3, 5});
  tsr_tensor_desc bias = packed(2, (int64_t[]){1, 5}), out = packed(2, (int64_t[]){4, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, &bias, &out, TSR_ACTIVATION_RELU, &l, &why),
                   TSR_OK);
  assert_true(l.fuse_bias);
  assert_int_equal(l.fused_activation, TSR_ACTIVATION_RELU);
  assert_int_equal(l.post_activation, TSR_ACTIVATION_NONE);
  // Exact GELU is not cuBLASLt's (tanh) GELU: an own kernel applies it.
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, &bias, &out, TSR_ACTIVATION_GELU, &l, &why),
                   TSR_OK);
  assert_int_equal(l.fused_activation, TSR_ACTIVATION_NONE);
  assert_int_equal(l.post_activation, TSR_ACTIVATION_GELU);
}

static void test_a_full_bias_matrix_falls_back(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(2, (int64_t[]){4, 3}), b = packed(2, (int64_t[]){3, 5});
  tsr_tensor_desc bias = packed(2, (int64_t[]){4, 5}), out = packed(2, (int64_t[]){4, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, &bias, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_UNSUPPORTED);
  assert_non_null(strstr(why, "row vector"));
}

static void test_unfusable_activation_on_a_padded_out_falls_back(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(2, (int64_t[]){4, 3}), b = packed(2, (int64_t[]){3, 5});
  tsr_tensor_desc out = packed(2, (int64_t[]){4, 5});
  out.strides[0] = 8;  // rows padded to 8
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_SIGMOID, &l, &why),
                   TSR_UNSUPPORTED);
  assert_non_null(strstr(why, "non-contiguous"));
  // ReLU fuses, so the padding is fine.
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_RELU, &l, &why),
                   TSR_OK);
  assert_int_equal(l.d.ld, 8);
}

static void test_empty_products_need_no_call(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(2, (int64_t[]){0, 3}), b = packed(2, (int64_t[]){3, 5});
  tsr_tensor_desc out = packed(2, (int64_t[]){0, 5});
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  assert_true(l.empty);
  tsr_tensor_desc a0 = packed(2, (int64_t[]){4, 0}), b0 = packed(2, (int64_t[]){0, 5});
  tsr_tensor_desc out0 = packed(2, (int64_t[]){4, 5});
  assert_int_equal(tsr_cuda_matmul_layout_get(&a0, &b0, NULL, &out0, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_UNSUPPORTED);
  assert_non_null(strstr(why, "K = 0"));
}

static void test_heuristics_are_told_each_operands_promised_alignment(void **state) {
  (void)state;
  tsr_tensor_desc a = packed(2, (int64_t[]){4, 3}), b = packed(2, (int64_t[]){3, 5});
  tsr_tensor_desc bias = packed(2, (int64_t[]){1, 5}), out = packed(2, (int64_t[]){4, 5});
  a.alignment = 16;
  b.alignment = 256;
  out.alignment = 64;
  bias.alignment = 4;  // a bias sliced at an odd float: only 4 bytes
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, &bias, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  tsr_cuda_matmul_alignment al;
  tsr_cuda_matmul_alignment_get(&a, &b, &bias, &out, &l, &al);
  // cuBLASLt's A is Tessera's b, its B Tessera's a.
  assert_int_equal(al.a, 256);
  assert_int_equal(al.b, 16);
  assert_int_equal(al.c, 64);
  assert_int_equal(al.d, 64);
  assert_int_equal(al.bias, 4);
  // Without a bias nothing is promised for one.
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  tsr_cuda_matmul_alignment_get(&a, &b, NULL, &out, &l, &al);
  assert_int_equal(al.bias, 0);
  // An undeclared alignment (0) promises nothing beyond a byte.
  a.alignment = 0;
  tsr_cuda_matmul_alignment_get(&a, &b, NULL, &out, &l, &al);
  assert_int_equal(al.b, 1);
}

static void test_the_bias_stand_in_has_exactly_the_promised_alignment(void **state) {
  (void)state;
  // NULL would read as perfectly aligned to cuBLASLt's heuristics.
  for (uint32_t alignment = 1; alignment <= 256; alignment *= 2) {
    uintptr_t p = (uintptr_t)tsr_cuda_matmul_bias_standin(alignment);
    assert_true(p != 0);
    assert_int_equal(p % alignment, 0);
    assert_int_not_equal(p % (2u * alignment), 0);
  }
  assert_true(tsr_cuda_matmul_bias_standin(0) != NULL);
}

static void test_a_batch_stride_lowers_the_promise_of_later_batches(void **state) {
  (void)state;
  // a [3, 4, 3] with batches 13 floats apart: batch 1 starts 52 bytes in,
  // so only 4-byte alignment holds for every batch's pointer.
  tsr_tensor_desc a = packed(3, (int64_t[]){3, 4, 3});
  a.strides[0] = 13;
  a.alignment = 256;
  tsr_tensor_desc b = packed(3, (int64_t[]){3, 3, 5});
  b.alignment = 256;  // batches 60 bytes apart: 4
  tsr_tensor_desc out = packed(3, (int64_t[]){3, 4, 5});
  out.alignment = 256;  // batches 80 bytes apart: 16
  tsr_cuda_matmul_layout l;
  const char *why = NULL;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &b, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  tsr_cuda_matmul_alignment al;
  tsr_cuda_matmul_alignment_get(&a, &b, NULL, &out, &l, &al);
  assert_int_equal(al.b, 4);
  assert_int_equal(al.a, 4);
  assert_int_equal(al.d, 16);
  // A broadcast weight (batch stride 0) keeps its own alignment.
  tsr_tensor_desc w = packed(3, (int64_t[]){1, 3, 5});
  w.strides[0] = 0;
  w.alignment = 128;
  assert_int_equal(tsr_cuda_matmul_layout_get(&a, &w, NULL, &out, TSR_ACTIVATION_NONE, &l, &why),
                   TSR_OK);
  tsr_cuda_matmul_alignment_get(&a, &w, NULL, &out, &l, &al);
  assert_int_equal(al.a, 128);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_row_major_operands_map_without_transposes),
      cmocka_unit_test(test_a_transposed_view_becomes_op_t),
      cmocka_unit_test(test_batches_collapse_and_a_broadcast_weight_has_stride_zero),
      cmocka_unit_test(test_batches_that_do_not_collapse_fall_back),
      cmocka_unit_test(test_operands_without_a_unit_stride_fall_back),
      cmocka_unit_test(test_row_vector_bias_and_relu_fuse_into_the_epilogue),
      cmocka_unit_test(test_a_full_bias_matrix_falls_back),
      cmocka_unit_test(test_unfusable_activation_on_a_padded_out_falls_back),
      cmocka_unit_test(test_empty_products_need_no_call),
      cmocka_unit_test(test_heuristics_are_told_each_operands_promised_alignment),
      cmocka_unit_test(test_the_bias_stand_in_has_exactly_the_promised_alignment),
      cmocka_unit_test(test_a_batch_stride_lowers_the_promise_of_later_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
