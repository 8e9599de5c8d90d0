// GATHER and SCATTER_ADD against the conformance oracle: every dtype each
// allows, every axis, int32 and int64 strided indices, repeated indices,
// empty and size-1 cases, out-of-range indices reported from execute,
// thread-count independence, SCATTER_ADD as the gradient of GATHER by finite
// differences, and refusals.
#include "test_data_util.h"

#include "oracle/oracle.h"

// A rank-1 index of |k| values from |values|, stored every |step| elements.
static void index_make(tt_tensor *t, tsr_dtype_t dtype, int64_t k, const int64_t *values,
                       int64_t step) {
  const int64_t sizes[] = {k};
  const int64_t strides[] = {step};
  tt_tensor_make(t, dtype, 1, sizes, strides, 1);
  for (int64_t i = 0; i < k; ++i) tt_set(t, &i, (double)values[i]);
}

// Random indices in [0, size) from |seed|.
static void index_values(int64_t *values, int64_t k, int64_t size, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < k; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    values[i] = (int64_t)((s >> 33) % (uint64_t)size);
  }
}

// out against the conformance oracle's GATHER of x and index.
static void gather_check(const tt_tensor *x, const tt_tensor *index, const tt_tensor *out,
                         int32_t axis) {
  if (tt_numel(out) == 0) return;
  const tsr_gather_attrs attrs = {sizeof(attrs), axis, 0};
  tsr_oracle_tensor in[2] = {tt_oracle_tensor(x), tt_oracle_tensor(index)}, want;
  assert_int_equal(
      tsr_oracle_tensor_create(out->desc.dtype, out->desc.rank, out->desc.sizes, &want), 0);
  tsr_oracle_call call = {TSR_OP_GATHER, &attrs, 2, 1, in, &want, {0}};
  assert_int_equal(tsr_oracle_compute(&call), TSR_OK);
  int64_t idx[TSR_MAX_RANK] = {0}, i = 0;
  do {
    du_expect_exact("gather", out->desc.dtype, idx, out->desc.rank, tt_get(out, idx),
                    want.v[i++]);
  } while (tt_index_next(idx, out->desc.rank, out->desc.sizes));
  tsr_oracle_tensor_destroy(&in[0]);
  tsr_oracle_tensor_destroy(&in[1]);
  tsr_oracle_tensor_destroy(&want);
}

static tsr_status gather_run(tt_tensor *x, tt_tensor *index, tt_tensor *out, int32_t axis) {
  tsr_gather_attrs attrs = {sizeof(attrs), axis, 0};
  tt_tensor *in[] = {x, index};
  tt_tensor *outs[] = {out};
  return tt_run(TSR_OP_GATHER, &attrs, in, 2, outs, 1, NULL);
}

static tsr_status scatter_run(tt_tensor *src, tt_tensor *index, tt_tensor *out, int32_t axis) {
  tsr_gather_attrs attrs = {sizeof(attrs), axis, 0};
  tt_tensor *in[] = {src, index};
  tt_tensor *outs[] = {out};
  return tt_run(TSR_OP_SCATTER_ADD, &attrs, in, 2, outs, 1, NULL);
}

static void test_gather_matches_loops_for_every_dtype_axis_and_layout(void **state) {
  (void)state;
  const int64_t x_sizes[] = {4, 5, 6};
  const int64_t values[] = {3, 0, 3, 1, 5, 2, 0};  // repeats; 5 only for axes of size >= 6
  for (size_t di = 0; di < sizeof(du_all_dtypes) / sizeof(du_all_dtypes[0]); ++di) {
    const tsr_dtype_t dtype = du_all_dtypes[di];
    for (int32_t axis = 0; axis < 3; ++axis) {
      for (int layout = 0; layout < 2; ++layout) {
        const int64_t k = axis == 2 ? 7 : 4;  // values[4] = 5 needs axis 2
        tt_tensor x, index, out;
        if (layout == 0) {
          tt_tensor_make(&x, dtype, 3, x_sizes, NULL, 0);
        } else {
          tt_tensor_make_permuted(&x, dtype, 3, x_sizes, (const int32_t[]){2, 0, 1});
        }
        du_fill_exact(&x, 50 + (uint64_t)axis, -100, 100);
        index_make(&index, layout == 0 ? TSR_INT64 : TSR_INT32, k, values, layout + 1);
        int64_t out_sizes[3] = {x_sizes[0], x_sizes[1], x_sizes[2]};
        out_sizes[axis] = k;
        if (layout == 0) {
          tt_tensor_make(&out, dtype, 3, out_sizes, NULL, 0);
        } else {
          const int64_t strides[] = {200, 30, 3};
          tt_tensor_make(&out, dtype, 3, out_sizes, strides, 2);
        }
        assert_int_equal(gather_run(&x, &index, &out, axis), TSR_OK);
        gather_check(&x, &index, &out, axis);
        tt_tensor_free(&x);
        tt_tensor_free(&index);
        tt_tensor_free(&out);
      }
    }
  }
}

static void test_gather_reports_an_index_out_of_range_from_execute(void **state) {
  (void)state;
  const int64_t x_sizes[] = {5, 2};
  const int64_t bad[][3] = {{0, 5, 1}, {-1, 0, 0}};
  for (int b = 0; b < 2; ++b) {
    for (int i64 = 0; i64 < 2; ++i64) {
      tt_tensor x, index, out;
      tt_tensor_make(&x, TSR_FLOAT32, 2, x_sizes, NULL, 0);
      tt_tensor_make(&out, TSR_FLOAT32, 2, (const int64_t[]){3, 2}, NULL, 0);
      tt_fill(&x, 1, -1, 1);
      index_make(&index, i64 ? TSR_INT64 : TSR_INT32, 3, bad[b], 1);
      tt_tensor *in[] = {&x, &index};
      tt_tensor *outs[] = {&out};
      tsr_gather_attrs attrs = {sizeof(attrs), 0, 0};
      // The plan is valid; the data is not.
      assert_int_equal(tt_supports(TSR_OP_GATHER, &attrs, in, 2, outs, 1), TSR_OK);
      du_expect_invalid(gather_run(&x, &index, &out, 0),
                        b == 0 ? "index[1] is 5, outside [0, 5)" : "index[0] is -1");
      // SCATTER_ADD checks the same way, against out's axis.
      du_expect_invalid(scatter_run(&out, &index, &x, 0),
                        b == 0 ? "index[1] is 5, outside [0, 5)" : "index[0] is -1");
      tt_tensor_free(&x);
      tt_tensor_free(&index);
      tt_tensor_free(&out);
    }
  }
}

static void test_gather_handles_empty_and_size_one_cases(void **state) {
  (void)state;
  // K = 0: an empty out, nothing read.
  tt_tensor x, index, out;
  tt_tensor_make(&x, TSR_INT32, 2, (const int64_t[]){3, 4}, NULL, 0);
  tt_tensor_make(&index, TSR_INT64, 1, (const int64_t[]){0}, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 2, (const int64_t[]){3, 0}, NULL, 0);
  assert_int_equal(gather_run(&x, &index, &out, 1), TSR_OK);
  tt_tensor_free(&out);
  // An empty out (zero outer size) with an out-of-range index: touches
  // nothing and succeeds, as an op with only empty outputs does.
  tt_tensor_free(&x);
  tt_tensor_free(&index);
  tt_tensor_make(&x, TSR_INT32, 2, (const int64_t[]){0, 4}, NULL, 0);
  index_make(&index, TSR_INT64, 2, (const int64_t[]){9, 1}, 1);
  tt_tensor_make(&out, TSR_INT32, 2, (const int64_t[]){0, 2}, NULL, 0);
  assert_int_equal(gather_run(&x, &index, &out, 1), TSR_OK);
  tt_tensor_free(&x);
  tt_tensor_free(&index);
  tt_tensor_free(&out);
  // Rank 1 with one element picked many times; and a size-1 axis.
  tt_tensor_make(&x, TSR_FLOAT64, 1, (const int64_t[]){1}, NULL, 0);
  tt_set(&x, (const int64_t[]){0}, 2.5);
  index_make(&index, TSR_INT32, 5, (const int64_t[]){0, 0, 0, 0, 0}, 3);
  tt_tensor_make(&out, TSR_FLOAT64, 1, (const int64_t[]){5}, NULL, 0);
  assert_int_equal(gather_run(&x, &index, &out, 0), TSR_OK);
  gather_check(&x, &index, &out, 0);
  // SCATTER_ADD of five ones into the one element: 2.5 + 5.
  tt_tensor ones;
  tt_tensor_make(&ones, TSR_FLOAT64, 1, (const int64_t[]){5}, NULL, 0);
  for (int64_t i = 0; i < 5; ++i) tt_set(&ones, &i, 1.0);
  assert_int_equal(scatter_run(&ones, &index, &x, 0), TSR_OK);
  assert_true(tt_get(&x, (const int64_t[]){0}) == 7.5);
  tt_tensor_free(&ones);
  tt_tensor_free(&x);
  tt_tensor_free(&index);
  tt_tensor_free(&out);
}

// out_want = out + sum over k of src slabs at index[k]: the conformance
// oracle's, in float64 (int: modulo 2^bits), then stored as out's dtype
// stores it.
static void scatter_want(const tt_tensor *src, const tt_tensor *index, const tt_tensor *out,
                         int32_t axis, double *want) {
  const tsr_gather_attrs attrs = {sizeof(attrs), axis, 0};
  tsr_oracle_tensor in[2] = {tt_oracle_tensor(src), tt_oracle_tensor(index)};
  tsr_oracle_tensor result = tt_oracle_tensor(out);  // read-modify-write
  tsr_oracle_call call = {TSR_OP_SCATTER_ADD, &attrs, 2, 1, in, &result, {0}};
  assert_int_equal(tsr_oracle_compute(&call), TSR_OK);
  for (int64_t i = 0; i < result.numel; ++i) want[i] = tt_round(result.v[i], out->desc.dtype);
  tsr_oracle_tensor_destroy(&in[0]);
  tsr_oracle_tensor_destroy(&in[1]);
  tsr_oracle_tensor_destroy(&result);
}

static void scatter_check(const tt_tensor *out, const double *want) {
  int64_t idx[TSR_MAX_RANK] = {0};
  int64_t n = 0;
  do {
    du_expect_exact("scatter_add", out->desc.dtype, idx, out->desc.rank, tt_get(out, idx),
                    want[n++]);
  } while (tt_index_next(idx, out->desc.rank, out->desc.sizes));
}

static void test_scatter_add_matches_loops_for_every_dtype_axis_and_layout(void **state) {
  (void)state;
  const int64_t out_sizes[] = {4, 5, 6};
  const int64_t values[] = {3, 0, 3, 1, 3, 2, 0};  // index 3 three times
  for (size_t di = 0; di < sizeof(du_number_dtypes) / sizeof(du_number_dtypes[0]); ++di) {
    const tsr_dtype_t dtype = du_number_dtypes[di];
    for (int32_t axis = 0; axis < 3; ++axis) {
      for (int layout = 0; layout < 2; ++layout) {
        const int64_t k = 7;
        tt_tensor src, index, out;
        int64_t src_sizes[3] = {out_sizes[0], out_sizes[1], out_sizes[2]};
        src_sizes[axis] = k;
        if (layout == 0) {
          tt_tensor_make(&src, dtype, 3, src_sizes, NULL, 0);
          tt_tensor_make(&out, dtype, 3, out_sizes, NULL, 0);
        } else {
          tt_tensor_make_permuted(&src, dtype, 3, src_sizes, (const int32_t[]){1, 2, 0});
          const int64_t strides[] = {100, 19, 3};
          tt_tensor_make(&out, dtype, 3, out_sizes, strides, 1);
        }
        // Integers: every partial sum is exact in float32, so the one
        // rounding to a half type is the same in ref and in the loop.
        du_fill_exact(&src, 60 + (uint64_t)axis, -100, 100);
        du_fill_exact(&out, 70 + (uint64_t)axis, -100, 100);
        index_make(&index, layout == 0 ? TSR_INT32 : TSR_INT64, k, values, 2 - layout);
        double want[4 * 5 * 6];
        scatter_want(&src, &index, &out, axis, want);
        assert_int_equal(scatter_run(&src, &index, &out, axis), TSR_OK);
        scatter_check(&out, want);
        tt_tensor_free(&src);
        tt_tensor_free(&index);
        tt_tensor_free(&out);
      }
    }
  }
}

static void test_scatter_add_accumulates_in_float32_for_half_types_and_wraps_int(void **state) {
  (void)state;
  // 256 + 1 + 1 in bfloat16: rounded after each add it would stay 256 (257
  // is a tie that rounds to even); accumulated in float32 and rounded once
  // it is 258.
  tt_tensor src, index, out;
  tt_tensor_make(&src, TSR_BFLOAT16, 1, (const int64_t[]){2}, NULL, 0);
  tt_tensor_make(&out, TSR_BFLOAT16, 1, (const int64_t[]){1}, NULL, 0);
  index_make(&index, TSR_INT64, 2, (const int64_t[]){0, 0}, 1);
  tt_set(&out, (const int64_t[]){0}, 256);
  tt_set(&src, (const int64_t[]){0}, 1);
  tt_set(&src, (const int64_t[]){1}, 1);
  assert_int_equal(scatter_run(&src, &index, &out, 0), TSR_OK);
  assert_true(tt_get(&out, (const int64_t[]){0}) == 258);
  tt_tensor_free(&src);
  tt_tensor_free(&out);
  // int32 wraps modulo 2^32; int64 modulo 2^64.
  tt_tensor_make(&src, TSR_INT32, 1, (const int64_t[]){2}, NULL, 0);
  tt_tensor_make(&out, TSR_INT32, 1, (const int64_t[]){1}, NULL, 0);
  tt_set(&out, (const int64_t[]){0}, 2147483647.0);
  tt_set(&src, (const int64_t[]){0}, 2.0);
  tt_set(&src, (const int64_t[]){1}, 1.0);
  assert_int_equal(scatter_run(&src, &index, &out, 0), TSR_OK);
  assert_true(tt_get(&out, (const int64_t[]){0}) == -2147483646.0);
  tt_tensor_free(&src);
  tt_tensor_free(&out);
  tt_tensor_make(&src, TSR_INT64, 1, (const int64_t[]){2}, NULL, 0);
  tt_tensor_make(&out, TSR_INT64, 1, (const int64_t[]){1}, NULL, 0);
  const int64_t big = INT64_MAX;
  memcpy(out.base + out.desc.byte_offset, &big, 8);
  tt_set(&src, (const int64_t[]){0}, 1.0);
  tt_set(&src, (const int64_t[]){1}, 1.0);
  assert_int_equal(scatter_run(&src, &index, &out, 0), TSR_OK);
  int64_t got;
  memcpy(&got, out.base + out.desc.byte_offset, 8);
  assert_true(got == INT64_MIN + 1);
  tt_tensor_free(&src);
  tt_tensor_free(&out);
  tt_tensor_free(&index);
}

static void test_scatter_add_with_no_index_leaves_out_alone(void **state) {
  (void)state;
  tt_tensor src, index, out;
  tt_tensor_make(&src, TSR_FLOAT32, 2, (const int64_t[]){3, 0}, NULL, 0);
  tt_tensor_make(&index, TSR_INT32, 1, (const int64_t[]){0}, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, (const int64_t[]){3, 4}, NULL, 0);
  tt_fill(&out, 3, -1, 1);
  double want[12];
  scatter_want(&src, &index, &out, 1, want);
  assert_int_equal(scatter_run(&src, &index, &out, 1), TSR_OK);
  scatter_check(&out, want);
  tt_tensor_free(&src);
  tt_tensor_free(&index);
  tt_tensor_free(&out);
}

static void test_gather_and_scatter_add_large_give_the_same_bits_on_one_and_two_threads(
    void **state) {
  (void)state;
  enum { V = 1000, D = 64, K = 5000 };
  int64_t *values = test_malloc(K * sizeof(int64_t));
  index_values(values, K, V, 11);
  tt_tensor table, index, rows, grad;
  tt_tensor_make(&table, TSR_FLOAT32, 2, (const int64_t[]){V, D}, NULL, 0);
  tt_tensor_make(&rows, TSR_FLOAT32, 2, (const int64_t[]){K, D}, NULL, 0);
  tt_tensor_make(&grad, TSR_FLOAT32, 2, (const int64_t[]){V, D}, NULL, 0);
  index_make(&index, TSR_INT64, K, values, 1);
  tt_fill(&table, 12, -1, 1);
  tt_fill(&rows, 13, -1, 1);
  tt_fill(&grad, 14, -1, 1);
  tsr_gather_attrs attrs = {sizeof(attrs), 0, 0};
  tt_tensor *gin[] = {&table, &index};
  tt_tensor *sin[] = {&rows, &index};
  tt_tensor *gout[] = {&rows};
  tt_tensor *sout[] = {&grad};
  // Scatter first (it reads rows as they are), then gather over rows.
  double *want = test_malloc((size_t)V * D * sizeof(double));
  scatter_want(&rows, &index, &grad, 0, want);
  du_expect_same_bits_on_one_and_two_threads(TSR_OP_SCATTER_ADD, &attrs, sin, 2, sout, 1);
  // Real-valued sums in float32 against float64: close, not exact.
  int64_t idx[2] = {0, 0};
  int64_t n = 0;
  do {
    du_expect_close("scatter_add", TSR_FLOAT32, n, tt_get(&grad, idx), want[n], 1e-5, 1e-5);
    ++n;
  } while (tt_index_next(idx, 2, grad.desc.sizes));
  du_expect_same_bits_on_one_and_two_threads(TSR_OP_GATHER, &attrs, gin, 2, gout, 1);
  gather_check(&table, &index, &rows, 0);
  test_free(want);
  test_free(values);
  tt_tensor_free(&table);
  tt_tensor_free(&index);
  tt_tensor_free(&rows);
  tt_tensor_free(&grad);
}

// SCATTER_ADD(dy, index) into zeros is d/dx of sum(dy * GATHER(x, index)):
// checked against central differences of the GATHER op in float64.
static void test_scatter_add_is_the_gradient_of_gather_by_finite_differences(void **state) {
  (void)state;
  const int64_t x_sizes[] = {3, 5};
  const int64_t values[] = {4, 1, 4, 0, 4, 2};
  for (int32_t axis = 0; axis < 2; ++axis) {
    const int64_t k = axis == 0 ? 4 : 6;  // axis 0 has size 3: values 4 only on axis 1
    const int64_t vals0[] = {2, 0, 2, 2};
    tt_tensor x, index, y, dy, dx;
    tt_tensor_make(&x, TSR_FLOAT64, 2, x_sizes, NULL, 0);
    tt_tensor_make(&dx, TSR_FLOAT64, 2, x_sizes, NULL, 0);
    int64_t y_sizes[2] = {x_sizes[0], x_sizes[1]};
    y_sizes[axis] = k;
    tt_tensor_make(&y, TSR_FLOAT64, 2, y_sizes, NULL, 0);
    tt_tensor_make(&dy, TSR_FLOAT64, 2, y_sizes, NULL, 0);
    index_make(&index, TSR_INT64, k, axis == 0 ? vals0 : values, 1);
    tt_fill(&x, 80, -1, 1);
    tt_fill(&dy, 81, -1, 1);
    tt_fill(&dx, 0, 0, 0);
    assert_int_equal(scatter_run(&dy, &index, &dx, axis), TSR_OK);
    int64_t idx[2] = {0, 0};
    do {
      const double x0 = tt_get(&x, idx), h = 1e-4;
      double f[2];
      for (int side = 0; side < 2; ++side) {
        tt_set(&x, idx, x0 + (side == 0 ? h : -h));
        assert_int_equal(gather_run(&x, &index, &y, axis), TSR_OK);
        double sum = 0;
        int64_t j[2] = {0, 0};
        do {
          sum += tt_get(&dy, j) * tt_get(&y, j);
        } while (tt_index_next(j, 2, y_sizes));
        f[side] = sum;
      }
      tt_set(&x, idx, x0);
      const double numeric = (f[0] - f[1]) / (2 * h);
      du_expect_close("d gather / dx", TSR_FLOAT64, idx[0] * x_sizes[1] + idx[1],
                      tt_get(&dx, idx), numeric, 1e-7, 1e-9);
    } while (tt_index_next(idx, 2, x_sizes));
    tt_tensor_free(&x);
    tt_tensor_free(&index);
    tt_tensor_free(&y);
    tt_tensor_free(&dy);
    tt_tensor_free(&dx);
  }
}

static void test_gather_and_scatter_add_refuse_what_the_catalogue_forbids(void **state) {
  (void)state;
  tt_tensor x, out, index, index2d, findex, xb, outb, wrong;
  tt_tensor_make(&x, TSR_FLOAT32, 2, (const int64_t[]){4, 3}, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, (const int64_t[]){2, 3}, NULL, 0);
  tt_tensor_make(&wrong, TSR_FLOAT32, 2, (const int64_t[]){2, 4}, NULL, 0);
  tt_tensor_make(&xb, TSR_BOOL, 2, (const int64_t[]){4, 3}, NULL, 0);
  tt_tensor_make(&outb, TSR_BOOL, 2, (const int64_t[]){2, 3}, NULL, 0);
  tt_tensor_make(&index, TSR_INT64, 1, (const int64_t[]){2}, NULL, 0);
  tt_tensor_make(&index2d, TSR_INT64, 2, (const int64_t[]){1, 2}, NULL, 0);
  tt_tensor_make(&findex, TSR_FLOAT32, 1, (const int64_t[]){2}, NULL, 0);
  tsr_gather_attrs attrs = {sizeof(attrs), 0, 0};
  tt_tensor *ok_in[] = {&x, &index};
  tt_tensor *ok_out[] = {&out};
  assert_int_equal(tt_supports(TSR_OP_GATHER, &attrs, ok_in, 2, ok_out, 1), TSR_OK);
  assert_int_equal(tt_supports(TSR_OP_GATHER, NULL, ok_in, 2, ok_out, 1), TSR_OK);
  tt_tensor *bad2d[] = {&x, &index2d};
  du_expect_invalid(tt_supports(TSR_OP_GATHER, &attrs, bad2d, 2, ok_out, 1), "index rank is 2");
  tt_tensor *badf[] = {&x, &findex};
  du_expect_invalid(tt_supports(TSR_OP_GATHER, &attrs, badf, 2, ok_out, 1), "float32");
  tt_tensor *wrong_out[] = {&wrong};
  du_expect_invalid(tt_supports(TSR_OP_GATHER, &attrs, ok_in, 2, wrong_out, 1), "sizes[1]");
  attrs.axis = 2;
  du_expect_invalid(tt_supports(TSR_OP_GATHER, &attrs, ok_in, 2, ok_out, 1), "axis 2");
  attrs.axis = 0;
  // Bool gathers; bool does not add.
  tt_tensor *bool_in[] = {&xb, &index};
  tt_tensor *bool_out[] = {&outb};
  assert_int_equal(tt_supports(TSR_OP_GATHER, &attrs, bool_in, 2, bool_out, 1), TSR_OK);
  tt_tensor *sbool_in[] = {&outb, &index};
  tt_tensor *sbool_out[] = {&xb};
  du_expect_invalid(tt_supports(TSR_OP_SCATTER_ADD, &attrs, sbool_in, 2, sbool_out, 1), "bool");
  tt_tensor *s_in[] = {&out, &index};
  tt_tensor *s_out[] = {&x};
  assert_int_equal(tt_supports(TSR_OP_SCATTER_ADD, &attrs, s_in, 2, s_out, 1), TSR_OK);
  tt_tensor *s_mixed[] = {&outb, &index};
  du_expect_invalid(tt_supports(TSR_OP_SCATTER_ADD, &attrs, s_mixed, 2, s_out, 1), "dtype");
  // out overlapping src is not in place.
  out.desc.alias_group = 0;
  x.desc.alias_group = 0;
  du_expect_invalid(tt_supports(TSR_OP_SCATTER_ADD, &attrs, s_in, 2, s_out, 1), "alias group");
  tt_tensor_free(&x);
  tt_tensor_free(&out);
  tt_tensor_free(&wrong);
  tt_tensor_free(&xb);
  tt_tensor_free(&outb);
  tt_tensor_free(&index);
  tt_tensor_free(&index2d);
  tt_tensor_free(&findex);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gather_matches_loops_for_every_dtype_axis_and_layout),
      cmocka_unit_test(test_gather_reports_an_index_out_of_range_from_execute),
      cmocka_unit_test(test_gather_handles_empty_and_size_one_cases),
      cmocka_unit_test(test_scatter_add_matches_loops_for_every_dtype_axis_and_layout),
      cmocka_unit_test(test_scatter_add_accumulates_in_float32_for_half_types_and_wraps_int),
      cmocka_unit_test(test_scatter_add_with_no_index_leaves_out_alone),
      cmocka_unit_test(test_gather_and_scatter_add_large_give_the_same_bits_on_one_and_two_threads),
      cmocka_unit_test(test_scatter_add_is_the_gradient_of_gather_by_finite_differences),
      cmocka_unit_test(test_gather_and_scatter_add_refuse_what_the_catalogue_forbids),
  };
  return cmocka_run_group_tests(tests, tt_setup_two_threads, tt_teardown);
}
