// CONCAT and PAD against float64 loops: every dtype, every axis, strided and
// permuted views, empty and size-1 inputs, every pad mode with its corner
// cases, thread-count independence, and refusals.
#include "test_data_util.h"

// ---------------------------------------------------------------------------
// CONCAT

// out[..., o_i + j, ...] = x_i[..., j, ...], checked element by element.
static void concat_check(tt_tensor *const *xs, int32_t k, const tt_tensor *out, int32_t axis) {
  if (tt_numel(out) == 0) return;
  int64_t idx[TSR_MAX_RANK] = {0};
  do {
    int64_t j = idx[axis];
    int32_t i = 0;
    while (i < k && j >= xs[i]->desc.sizes[axis]) j -= xs[i++]->desc.sizes[axis];
    assert_true(i < k);
    int64_t src[TSR_MAX_RANK];
    memcpy(src, idx, sizeof(src));
    src[axis] = j;
    du_expect_exact("concat", out->desc.dtype, idx, out->desc.rank, tt_get(out, idx),
                    tt_get(xs[i], src));
  } while (tt_index_next(idx, out->desc.rank, out->desc.sizes));
}

static void concat_run_check(tt_tensor *const *xs, int32_t k, tt_tensor *out, int32_t axis) {
  tsr_concat_attrs attrs = {sizeof(attrs), axis, 0};
  tt_tensor *outs[] = {out};
  assert_int_equal(tt_run(TSR_OP_CONCAT, &attrs, xs, k, outs, 1, NULL), TSR_OK);
  concat_check(xs, k, out, axis);
}

static void test_concat_matches_loops_for_every_dtype_axis_and_layout(void **state) {
  (void)state;
  const int64_t base[] = {3, 4, 5};
  const int64_t axis_sizes[] = {2, 0, 3};  // the middle input is empty
  const int32_t perm[] = {2, 0, 1};
  for (size_t di = 0; di < sizeof(du_all_dtypes) / sizeof(du_all_dtypes[0]); ++di) {
    const tsr_dtype_t dtype = du_all_dtypes[di];
    for (int32_t axis = 0; axis < 3; ++axis) {
      for (int layout = 0; layout < 3; ++layout) {
        tt_tensor x[3], out;
        tt_tensor *xs[3];
        for (int32_t i = 0; i < 3; ++i) {
          int64_t sizes[3] = {base[0], base[1], base[2]};
          sizes[axis] = axis_sizes[i];
          if (layout == 0) {
            tt_tensor_make(&x[i], dtype, 3, sizes, NULL, 0);
          } else if (layout == 1) {
            tt_tensor_make_permuted(&x[i], dtype, 3, sizes, perm);
          } else {
            // Every other element of a wider row, and an offset start.
            int64_t strides[3] = {2 * sizes[1] * sizes[2] + 3, 2 * sizes[2], 2};
            tt_tensor_make(&x[i], dtype, 3, sizes, strides, 5);
          }
          du_fill_exact(&x[i], 10 + (uint64_t)i, -100, 100);
          xs[i] = &x[i];
        }
        int64_t out_sizes[3] = {base[0], base[1], base[2]};
        out_sizes[axis] = axis_sizes[0] + axis_sizes[1] + axis_sizes[2];
        if (layout == 1) {
          tt_tensor_make_permuted(&out, dtype, 3, out_sizes, perm);
        } else {
          tt_tensor_make(&out, dtype, 3, out_sizes, NULL, layout == 2 ? 7 : 0);
        }
        concat_run_check(xs, 3, &out, axis);
        for (int32_t i = 0; i < 3; ++i) tt_tensor_free(&x[i]);
        tt_tensor_free(&out);
      }
    }
  }
}

static void test_concat_takes_one_to_fifteen_inputs_size_one_and_empty_outputs(void **state) {
  (void)state;
  // 15 inputs of rank 1, sizes 0..14.
  tt_tensor x[15], out;
  tt_tensor *xs[15];
  int64_t total = 0;
  for (int32_t i = 0; i < 15; ++i) {
    const int64_t size[] = {i};
    tt_tensor_make(&x[i], TSR_INT64, 1, size, NULL, 0);
    du_fill_exact(&x[i], 40 + (uint64_t)i, -1000, 1000);
    xs[i] = &x[i];
    total += i;
  }
  const int64_t out_size[] = {total};
  tt_tensor_make(&out, TSR_INT64, 1, out_size, NULL, 0);
  concat_run_check(xs, 15, &out, 0);
  tt_tensor_free(&out);
  // One input: a copy; attrs NULL means axis 0.
  tt_tensor_make(&out, TSR_INT64, 1, (const int64_t[]){14}, NULL, 0);
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_CONCAT, NULL, &xs[14], 1, outs, 1, NULL), TSR_OK);
  concat_check(&xs[14], 1, &out, 0);
  tt_tensor_free(&out);
  for (int32_t i = 0; i < 15; ++i) tt_tensor_free(&x[i]);

  // Size-1 dimensions everywhere, and an empty output (a zero size off the
  // axis) that touches nothing.
  const int64_t ones[] = {1, 1, 1};
  const int64_t two_on_axis[] = {1, 2, 1};
  tt_tensor a, b;
  tt_tensor_make(&a, TSR_FLOAT32, 3, ones, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 3, ones, (const int64_t[]){9, 9, 9}, 3);
  tt_tensor_make(&out, TSR_FLOAT32, 3, two_on_axis, NULL, 0);
  du_fill_exact(&a, 1, -5, 5);
  du_fill_exact(&b, 2, -5, 5);
  tt_tensor *ab[] = {&a, &b};
  concat_run_check(ab, 2, &out, 1);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
  const int64_t empty[] = {2, 0};
  const int64_t empty_out[] = {4, 0};
  tt_tensor_make(&a, TSR_FLOAT64, 2, empty, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT64, 2, empty, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT64, 2, empty_out, NULL, 0);
  tsr_concat_attrs attrs = {sizeof(attrs), 0, 0};
  assert_int_equal(tt_run(TSR_OP_CONCAT, &attrs, ab, 2, outs, 1, NULL), TSR_OK);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_concat_large_gives_the_same_bits_on_one_and_two_threads(void **state) {
  (void)state;
  // Axis 1 of [64, *, 1000] float32: 64 outer rows of two blocks each.
  const int64_t sa[] = {64, 3, 1000}, sb[] = {64, 5, 1000}, so[] = {64, 8, 1000};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_FLOAT32, 3, sa, NULL, 0);
  tt_tensor_make_permuted(&b, TSR_FLOAT32, 3, sb, (const int32_t[]){1, 2, 0});
  tt_tensor_make(&out, TSR_FLOAT32, 3, so, NULL, 0);
  tt_fill(&a, 3, -1, 1);
  tt_fill(&b, 4, -1, 1);
  tt_tensor *ab[] = {&a, &b};
  tt_tensor *outs[] = {&out};
  tsr_concat_attrs attrs = {sizeof(attrs), 1, 0};
  du_expect_same_bits_on_one_and_two_threads(TSR_OP_CONCAT, &attrs, ab, 2, outs, 1);
  concat_check(ab, 2, &out, 1);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_concat_refuses_what_the_catalogue_forbids(void **state) {
  (void)state;
  const int64_t s23[] = {2, 3}, s24[] = {2, 4}, s53[] = {5, 3}, s43[] = {4, 3};
  tt_tensor a, b, c, out, out_bad, scalar;
  tt_tensor_make(&a, TSR_FLOAT32, 2, s23, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, s23, NULL, 0);
  tt_tensor_make(&c, TSR_FLOAT64, 2, s23, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, s43, NULL, 0);
  tt_tensor_make(&out_bad, TSR_FLOAT32, 2, s53, NULL, 0);
  tt_tensor_make(&scalar, TSR_FLOAT32, 0, NULL, NULL, 0);
  tt_tensor *ab[] = {&a, &b};
  tt_tensor *ac[] = {&a, &c};
  tt_tensor *outs[] = {&out};
  tt_tensor *bad_outs[] = {&out_bad};
  tsr_concat_attrs attrs = {sizeof(attrs), 0, 0};
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, &attrs, ab, 2, bad_outs, 1), "sum to 4");
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, &attrs, ac, 2, outs, 1), "dtype");
  attrs.axis = 2;
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, &attrs, ab, 2, outs, 1), "axis 2");
  attrs.axis = -1;
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, &attrs, ab, 2, outs, 1), "axis -1");
  attrs.axis = 1;  // off-axis sizes must match: out is [4, 3], a and b [2, 3]
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, &attrs, ab, 2, outs, 1), "sizes[0]");
  attrs.axis = 0;
  attrs.reserved = 1;
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, &attrs, ab, 2, outs, 1), "reserved");
  tt_tensor *scalars[] = {&scalar};
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, NULL, scalars, 1, scalars, 1), "axis 0");
  // An input that shares memory with out.
  tt_tensor wide;
  tt_tensor_make(&wide, TSR_FLOAT32, 2, s24, NULL, 0);
  a.desc.alias_group = 0;
  out.desc.alias_group = 0;
  du_expect_invalid(tt_supports(TSR_OP_CONCAT, NULL, ab, 2, outs, 1), "alias group");
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&c);
  tt_tensor_free(&out);
  tt_tensor_free(&out_bad);
  tt_tensor_free(&scalar);
  tt_tensor_free(&wide);
}

// ---------------------------------------------------------------------------
// PAD

// The source index on one axis, or -1 for the constant (abi.md 10.20).
static int64_t pad_source(tsr_pad_mode_t mode, int64_t o, int64_t before, int64_t size) {
  int64_t i = o - before;
  if (i >= 0 && i < size) return i;
  if (mode == TSR_PAD_CONSTANT) return -1;
  if (mode == TSR_PAD_REFLECT) return i < 0 ? -i : 2 * (size - 1) - i;
  return i < 0 ? 0 : size - 1;
}

// |value| converted as CAST converts a float64.
static double pad_value_in(double value, tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_INT32: return isnan(value) ? 0 : fmax(-2147483648.0, fmin(2147483647.0, trunc(value)));
    case TSR_INT64: return isnan(value) ? 0 : trunc(value);
    case TSR_BOOL: return value != 0;
    case TSR_FLOAT64: return value;
    default: return tt_round(value, dtype);
  }
}

static void pad_check(const tt_tensor *x, const tt_tensor *out, const tsr_pad_attrs *attrs) {
  if (tt_numel(out) == 0) return;
  const int32_t rank = out->desc.rank;
  int64_t idx[TSR_MAX_RANK] = {0};
  do {
    int64_t src[TSR_MAX_RANK];
    int inside = 1;
    for (int32_t d = 0; d < rank; ++d) {
      src[d] = pad_source(attrs->mode, idx[d], attrs->pad_before[d], x->desc.sizes[d]);
      if (src[d] < 0) inside = 0;
    }
    double want = inside ? tt_get(x, src) : pad_value_in(attrs->value, out->desc.dtype);
    du_expect_exact("pad", out->desc.dtype, idx, rank, tt_get(out, idx), want);
  } while (tt_index_next(idx, rank, out->desc.sizes));
}

static void pad_make_out(tt_tensor *out, const tt_tensor *x, const tsr_pad_attrs *attrs,
                         int permuted) {
  int64_t sizes[TSR_MAX_RANK];
  for (int32_t d = 0; d < x->desc.rank; ++d) {
    sizes[d] = attrs->pad_before[d] + x->desc.sizes[d] + attrs->pad_after[d];
  }
  if (permuted && x->desc.rank == 3) {
    tt_tensor_make_permuted(out, x->desc.dtype, 3, sizes, (const int32_t[]){1, 2, 0});
  } else {
    tt_tensor_make(out, x->desc.dtype, x->desc.rank, sizes, NULL, 0);
  }
}

static void pad_run_check(tt_tensor *x, tt_tensor *out, const tsr_pad_attrs *attrs) {
  tt_tensor *in[] = {x};
  tt_tensor *outs[] = {out};
  assert_int_equal(tt_run(TSR_OP_PAD, attrs, in, 1, outs, 1, NULL), TSR_OK);
  pad_check(x, out, attrs);
}

static void test_pad_matches_loops_for_every_mode_dtype_and_layout(void **state) {
  (void)state;
  const int64_t sizes[] = {3, 4, 5};
  for (tsr_pad_mode_t mode = 0; mode < TSR_PAD_MODE_COUNT; ++mode) {
    for (size_t di = 0; di < sizeof(du_all_dtypes) / sizeof(du_all_dtypes[0]); ++di) {
      const tsr_dtype_t dtype = du_all_dtypes[di];
      if (mode != TSR_PAD_CONSTANT && dtype == TSR_BOOL) continue;
      for (int layout = 0; layout < 2; ++layout) {
        tt_tensor x, out;
        if (layout == 0) {
          tt_tensor_make(&x, dtype, 3, sizes, NULL, 0);
        } else {
          const int64_t strides[] = {50, 11, 2};
          tt_tensor_make(&x, dtype, 3, sizes, strides, 3);
        }
        du_fill_exact(&x, 20 + (uint64_t)mode, -100, 100);
        // Pads of 0, 1 and 2 before and after; REFLECT allows up to size - 1.
        tsr_pad_attrs attrs = {sizeof(attrs), mode, 0, {2, 0, 1}, {1, 3, 4}, -7.0};
        pad_make_out(&out, &x, &attrs, layout);
        pad_run_check(&x, &out, &attrs);
        tt_tensor_free(&out);
        tt_tensor_free(&x);
      }
    }
  }
}

static void test_pad_constant_converts_its_value_as_cast_does(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 2};
  const double values[] = {2.7, -2.7, NAN, 1e10, 0.1, 65519.0, -0.0};
  for (size_t di = 0; di < sizeof(du_all_dtypes) / sizeof(du_all_dtypes[0]); ++di) {
    for (size_t vi = 0; vi < sizeof(values) / sizeof(values[0]); ++vi) {
      const tsr_dtype_t dtype = du_all_dtypes[di];
      tt_tensor x, out;
      tt_tensor_make(&x, dtype, 2, sizes, NULL, 0);
      du_fill_exact(&x, 5, -9, 9);
      tsr_pad_attrs attrs = {sizeof(attrs), TSR_PAD_CONSTANT, 0, {1, 1}, {0, 1}, values[vi]};
      pad_make_out(&out, &x, &attrs, 0);
      pad_run_check(&x, &out, &attrs);
      tt_tensor_free(&out);
      tt_tensor_free(&x);
    }
  }
  // int saturates: 1e10 in int32 is INT32_MAX.
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_INT32, 1, (const int64_t[]){1}, NULL, 0);
  du_fill_exact(&x, 1, 0, 0);
  tsr_pad_attrs attrs = {sizeof(attrs), TSR_PAD_CONSTANT, 0, {1}, {0}, 1e10};
  pad_make_out(&out, &x, &attrs, 0);
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_PAD, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  assert_true(tt_get(&out, (const int64_t[]){0}) == 2147483647.0);
  tt_tensor_free(&out);
  tt_tensor_free(&x);
}

static void test_pad_reflects_and_replicates_corners_and_size_one_axes(void **state) {
  (void)state;
  // A 2-D REFLECT with pads of size - 1 on both sides of both axes: the
  // corners reflect on both axes.
  const int64_t sizes[] = {3, 4};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_FLOAT64, 2, sizes, NULL, 0);
  du_fill_exact(&x, 30, -50, 50);
  tsr_pad_attrs attrs = {sizeof(attrs), TSR_PAD_REFLECT, 0, {2, 3}, {2, 3}, 0};
  pad_make_out(&out, &x, &attrs, 0);
  pad_run_check(&x, &out, &attrs);
  // Spot-check the formula itself: out[0][0] = x[2][3].
  assert_true(tt_get(&out, (const int64_t[]){0, 0}) == tt_get(&x, (const int64_t[]){2, 3}));
  tt_tensor_free(&out);
  // REPLICATE from a size-1 axis repeats its one element.
  tt_tensor one;
  tt_tensor_make(&one, TSR_INT32, 2, (const int64_t[]){1, 4}, NULL, 0);
  du_fill_exact(&one, 31, -50, 50);
  tsr_pad_attrs rep = {sizeof(rep), TSR_PAD_REPLICATE, 0, {3, 2}, {2, 5}, 0};
  pad_make_out(&out, &one, &rep, 0);
  pad_run_check(&one, &out, &rep);
  tt_tensor_free(&out);
  tt_tensor_free(&one);
  tt_tensor_free(&x);
}

static void test_pad_handles_rank_zero_empty_inputs_and_null_attrs(void **state) {
  (void)state;
  // attrs NULL: no padding, a copy.
  const int64_t sizes[] = {2, 3};
  tt_tensor x, out;
  tt_tensor_make(&x, TSR_BOOL, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_BOOL, 2, sizes, NULL, 0);
  du_fill_exact(&x, 6, 0, 1);
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  assert_int_equal(tt_run(TSR_OP_PAD, NULL, in, 1, outs, 1, NULL), TSR_OK);
  tsr_pad_attrs none = {sizeof(none), TSR_PAD_CONSTANT, 0, {0}, {0}, 0};
  pad_check(&x, &out, &none);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  // Rank 0.
  tt_tensor_make(&x, TSR_FLOAT16, 0, NULL, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT16, 0, NULL, NULL, 0);
  tt_set(&x, NULL, 1.5);
  assert_int_equal(tt_run(TSR_OP_PAD, &none, in, 1, outs, 1, NULL), TSR_OK);
  assert_true(tt_get(&out, NULL) == 1.5);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  // An empty x padded with CONSTANT on either axis: all value.
  for (int32_t d = 0; d < 2; ++d) {
    int64_t esizes[2] = {3, 3};
    esizes[d] = 0;
    tt_tensor_make(&x, TSR_FLOAT32, 2, esizes, NULL, 0);
    tsr_pad_attrs attrs = {sizeof(attrs), TSR_PAD_CONSTANT, 0, {1, 1}, {2, 0}, 4.25};
    pad_make_out(&out, &x, &attrs, 0);
    pad_run_check(&x, &out, &attrs);
    tt_tensor_free(&x);
    tt_tensor_free(&out);
  }
  // An empty out touches nothing.
  tt_tensor_make(&x, TSR_FLOAT32, 2, (const int64_t[]){0, 3}, NULL, 0);
  tsr_pad_attrs attrs = {sizeof(attrs), TSR_PAD_REPLICATE, 0, {0, 2}, {0, 2}, 0};
  pad_make_out(&out, &x, &attrs, 0);
  assert_int_equal(tt_run(TSR_OP_PAD, &attrs, in, 1, outs, 1, NULL), TSR_OK);
  tt_tensor_free(&x);
  tt_tensor_free(&out);
}

static void test_pad_large_gives_the_same_bits_on_one_and_two_threads(void **state) {
  (void)state;
  const int64_t sizes[] = {300, 500};
  for (tsr_pad_mode_t mode = 0; mode < TSR_PAD_MODE_COUNT; ++mode) {
    tt_tensor x, out;
    tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
    tt_fill(&x, 7, -1, 1);
    tsr_pad_attrs attrs = {sizeof(attrs), mode, 0, {5, 7}, {6, 2}, 0.5};
    pad_make_out(&out, &x, &attrs, 0);
    tt_tensor *in[] = {&x};
    tt_tensor *outs[] = {&out};
    du_expect_same_bits_on_one_and_two_threads(TSR_OP_PAD, &attrs, in, 1, outs, 1);
    pad_check(&x, &out, &attrs);
    tt_tensor_free(&x);
    tt_tensor_free(&out);
  }
}

static void test_pad_refuses_what_the_catalogue_forbids(void **state) {
  (void)state;
  const int64_t sizes[] = {2, 3};
  tt_tensor x, out, xb, outb;
  tt_tensor_make(&x, TSR_FLOAT32, 2, sizes, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, (const int64_t[]){4, 5}, NULL, 0);
  tt_tensor_make(&xb, TSR_BOOL, 2, sizes, NULL, 0);
  tt_tensor_make(&outb, TSR_BOOL, 2, (const int64_t[]){4, 5}, NULL, 0);
  tt_tensor *in[] = {&x};
  tt_tensor *outs[] = {&out};
  tt_tensor *inb[] = {&xb};
  tt_tensor *outsb[] = {&outb};
  tsr_pad_attrs attrs = {sizeof(attrs), TSR_PAD_REFLECT, 0, {1, 1}, {1, 1}, 0};
  assert_int_equal(tt_supports(TSR_OP_PAD, &attrs, in, 1, outs, 1), TSR_OK);
  du_expect_invalid(tt_supports(TSR_OP_PAD, &attrs, inb, 1, outsb, 1), "bool");
  attrs.pad_before[0] = 2;  // = size: REFLECT would repeat the edge
  attrs.pad_after[0] = 0;
  du_expect_invalid(tt_supports(TSR_OP_PAD, &attrs, in, 1, outs, 1), "reflect");
  attrs.pad_before[0] = 3;
  attrs.pad_after[0] = -1;
  du_expect_invalid(tt_supports(TSR_OP_PAD, &attrs, in, 1, outs, 1), "pad_after[0] is -1");
  attrs.mode = TSR_PAD_CONSTANT;
  attrs.pad_before[0] = 1;
  attrs.pad_after[0] = 2;  // out would be 5, not 4
  du_expect_invalid(tt_supports(TSR_OP_PAD, &attrs, in, 1, outs, 1), "out sizes[0] is 4");
  attrs.pad_after[0] = 1;
  attrs.mode = 3;
  assert_int_equal(tt_supports(TSR_OP_PAD, &attrs, in, 1, outs, 1), TSR_UNSUPPORTED);
  assert_non_null(strstr(tsr_test_host_error_get(), "mode 3"));
  attrs.mode = TSR_PAD_CONSTANT;
  attrs.reserved = 1;
  du_expect_invalid(tt_supports(TSR_OP_PAD, &attrs, in, 1, outs, 1), "reserved");
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  // REPLICATE has nothing to repeat from an empty axis.
  tt_tensor_make(&x, TSR_FLOAT32, 2, (const int64_t[]){0, 3}, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, (const int64_t[]){1, 3}, NULL, 0);
  tsr_pad_attrs rep = {sizeof(rep), TSR_PAD_REPLICATE, 0, {1, 0}, {0, 0}, 0};
  du_expect_invalid(tt_supports(TSR_OP_PAD, &rep, in, 1, outs, 1), "replicate");
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  tt_tensor_free(&xb);
  tt_tensor_free(&outb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concat_matches_loops_for_every_dtype_axis_and_layout),
      cmocka_unit_test(test_concat_takes_one_to_fifteen_inputs_size_one_and_empty_outputs),
      cmocka_unit_test(test_concat_large_gives_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_concat_refuses_what_the_catalogue_forbids),
      cmocka_unit_test(test_pad_matches_loops_for_every_mode_dtype_and_layout),
      cmocka_unit_test(test_pad_constant_converts_its_value_as_cast_does),
      cmocka_unit_test(test_pad_reflects_and_replicates_corners_and_size_one_axes),
      cmocka_unit_test(test_pad_handles_rank_zero_empty_inputs_and_null_attrs),
      cmocka_unit_test(test_pad_large_gives_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_pad_refuses_what_the_catalogue_forbids),
  };
  return cmocka_run_group_tests(tests, tt_setup_two_threads, tt_teardown);
}
