// Datasets of several fields from tensors, drawn by the loader with
// tsr_loader_next_fields (and tsr_loader_next for two fields), and the
// per-example transforms: random crop with padding, random horizontal flip,
// normalisation; their correctness and their determinism under the loader's
// seed, with and without prefetch, and after a seek.
//
// Compile definitions: TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, TSR_TEST_REF_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"
#include "test_support.h"

static tsr_context *g_context;
static tsr_device *g_device;

static int group_setup(void **state) {
  (void)state;
  return ts_device_open(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, &g_context, &g_device);
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  return 0;
}

enum { N = 13, C = 3, H = 5, W = 6, L = 4 };

// Pixel (c, y, x) of example i: nonzero, and says which example it is from.
static float pixel(int64_t i, int64_t c, int64_t y, int64_t x) {
  return (float)(i * 100000 + 1 + c * 1000 + y * W + x);
}

// images float32 [N, C, H, W], labels int64 [N] = 7 * i, tokens int64 [N, L] = i * 10 + k.
static tsr_dataset *three_fields(void) {
  static float images[N * C * H * W];
  static int64_t labels[N], tokens[N * L];
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) images[((i * C + c) * H + y) * W + x] = pixel(i, c, y, x);
    labels[i] = 7 * i;
    for (int64_t k = 0; k < L; ++k) tokens[i * L + k] = i * 10 + k;
  }
  const int64_t si[4] = {N, C, H, W}, sl[1] = {N}, st[2] = {N, L};
  tsr_tensor *t[3] = {tsr_tensor_from_host(g_device, TSR_FLOAT32, 4, si, images),
                      tsr_tensor_from_host(g_device, TSR_INT64, 1, sl, labels),
                      tsr_tensor_from_host(g_device, TSR_INT64, 2, st, tokens)};
  tsr_dataset *dataset = NULL;
  assert_int_equal(tsr_dataset_from_tensors(3, t, &dataset), TSR_OK);
  for (int f = 0; f < 3; ++f) tsr_tensor_release(t[f]);  // the dataset holds a copy
  return dataset;
}

static tsr_loader *loader_make(tsr_dataset *dataset, int64_t batch, uint64_t seed, int prefetch,
                               const tsr_transform *transforms, uint32_t count) {
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  o.batch_size = batch;
  o.seed = seed;
  o.prefetch = (uint32_t)prefetch;
  o.transforms = transforms;
  o.transform_count = count;
  tsr_loader *loader = NULL;
  if (tsr_loader_create(dataset, g_device, &o, &loader) != TSR_OK)
    fail_msg("%s", tsr_last_error());
  return loader;
}

// Host copy of |t| (malloc'd; caller frees) and its element count.
static void *host_of(tsr_tensor *t, int64_t *out_numel) {
  int64_t numel = tsr_tensor_numel(t);
  size_t bytes = (size_t)numel * tsr_dtype_size(tsr_tensor_dtype(t));
  void *p = malloc(bytes ? bytes : 1);
  assert_non_null(p);
  assert_int_equal(tsr_tensor_to_host(t, p, bytes), TSR_OK);
  *out_numel = numel;
  return p;
}

static void test_dataset_from_tensors_serves_every_field_together(void **state) {
  (void)state;
  tsr_dataset *dataset = three_fields();
  assert_int_equal(tsr_dataset_size(dataset), N);
  assert_int_equal(tsr_dataset_field_count(dataset), 3);
  tsr_dtype_t dtype;
  int32_t rank;
  const int64_t *sizes;
  assert_int_equal(tsr_dataset_field_get(dataset, 2, &dtype, &rank, &sizes), TSR_OK);
  assert_int_equal(dtype, TSR_INT64);
  assert_int_equal(rank, 1);
  assert_int_equal(sizes[0], L);
  assert_int_not_equal(tsr_dataset_field_get(dataset, 3, &dtype, &rank, &sizes), TSR_OK);
  tsr_loader *loader = loader_make(dataset, 5, 11, 1, NULL, 0);
  int seen[N] = {0};
  for (;;) {
    tsr_tensor *out[3];
    tsr_status status = tsr_loader_next_fields(loader, 3, out);
    if (status == TSR_NOT_FOUND)
      break;
    assert_int_equal(status, TSR_OK);
    int64_t rows = tsr_tensor_sizes(out[0])[0];
    assert_int_equal(tsr_tensor_rank(out[0]), 4);
    assert_int_equal(tsr_tensor_dtype(out[1]), TSR_INT64);
    assert_int_equal(tsr_tensor_sizes(out[2])[1], L);
    int64_t n0, n1, n2;
    float *img = host_of(out[0], &n0);
    int64_t *lab = host_of(out[1], &n1);
    int64_t *tok = host_of(out[2], &n2);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t i = lab[r] / 7;
      assert_true(i >= 0 && i < N);
      ++seen[i];
      assert_true(img[r * C * H * W + 7] == pixel(i, 0, 1, 1));
      assert_int_equal(tok[r * L + 3], i * 10 + 3);
    }
    free(img);
    free(lab);
    free(tok);
    for (int f = 0; f < 3; ++f) tsr_tensor_release(out[f]);
  }
  for (int i = 0; i < N; ++i) assert_int_equal(seen[i], 1);
  // Three fields do not fit loader_next's (features, labels).
  tsr_tensor *x = NULL, *y = NULL;
  assert_int_equal(tsr_loader_next(loader, &x, &y), TSR_INVALID_ARGUMENT);
  tsr_tensor *two[2];
  assert_int_equal(tsr_loader_next_fields(loader, 2, two), TSR_INVALID_ARGUMENT);
  tsr_loader_destroy(loader);
  tsr_dataset_destroy(dataset);
}

static void test_dataset_from_tensors_refuses_mismatched_tensors(void **state) {
  (void)state;
  const int64_t s4[1] = {4}, s5[1] = {5};
  tsr_tensor *a = tsr_zeros(g_device, TSR_FLOAT32, 1, s4);
  tsr_tensor *b = tsr_zeros(g_device, TSR_INT64, 1, s5);
  tsr_tensor *scalar = tsr_zeros(g_device, TSR_FLOAT32, 0, NULL);
  tsr_dataset *dataset = (tsr_dataset *)&dataset;
  tsr_tensor *ab[2] = {a, b};
  assert_int_equal(tsr_dataset_from_tensors(2, ab, &dataset), TSR_INVALID_ARGUMENT);
  assert_null(dataset);
  assert_non_null(strstr(tsr_last_error(), "tensors[1] has 5 examples"));
  tsr_tensor *as[2] = {a, scalar};
  assert_int_equal(tsr_dataset_from_tensors(2, as, &dataset), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_dataset_from_tensors(0, as, &dataset), TSR_INVALID_ARGUMENT);
  tsr_tensor_release(a);
  tsr_tensor_release(b);
  tsr_tensor_release(scalar);
}

static void test_two_field_dataset_works_with_loader_next(void **state) {
  (void)state;
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t y[4] = {0, 1, 2, 3};
  const int64_t sx[2] = {4, 2}, sy[1] = {4};
  tsr_tensor *t[2] = {tsr_tensor_from_host(g_device, TSR_FLOAT32, 2, sx, x),
                      tsr_tensor_from_host(g_device, TSR_INT64, 1, sy, y)};
  tsr_dataset *dataset = NULL;
  assert_int_equal(tsr_dataset_from_tensors(2, t, &dataset), TSR_OK);
  tsr_tensor_release(t[0]);
  tsr_tensor_release(t[1]);
  float f[2];
  int64_t label;
  assert_int_equal(tsr_dataset_get(dataset, 2, f, &label), TSR_OK);
  assert_true(f[0] == 4.0f && f[1] == 5.0f && label == 2);
  tsr_loader *loader = loader_make(dataset, 3, 5, 0, NULL, 0);
  tsr_tensor *features = NULL, *labels = NULL;
  assert_int_equal(tsr_loader_next(loader, &features, &labels), TSR_OK);
  int64_t nf, nl;
  float *hf = host_of(features, &nf);
  int64_t *hl = host_of(labels, &nl);
  assert_int_equal(nl, 3);
  for (int64_t r = 0; r < 3; ++r) assert_true(hf[2 * r] == (float)(2 * hl[r]));
  free(hf);
  free(hl);
  tsr_tensor_release(features);
  tsr_tensor_release(labels);
  tsr_loader_destroy(loader);
  tsr_dataset_destroy(dataset);
}

// Draws a whole epoch of field 0 and labels into |out| (rows in draw order).
static void draw_epoch(tsr_loader *loader, float *out, int64_t *labels, int64_t example) {
  int64_t row = 0;
  for (;;) {
    tsr_tensor *t[3];
    tsr_status status = tsr_loader_next_fields(loader, 3, t);
    if (status == TSR_NOT_FOUND)
      break;
    if (status != TSR_OK)
      fail_msg("%s", tsr_last_error());
    int64_t n, m;
    float *img = host_of(t[0], &n);
    int64_t *lab = host_of(t[1], &m);
    memcpy(out + row * example, img, (size_t)n * sizeof(float));
    memcpy(labels + row, lab, (size_t)m * sizeof(int64_t));
    row += m;
    free(img);
    free(lab);
    for (int f = 0; f < 3; ++f) tsr_tensor_release(t[f]);
  }
  assert_int_equal(row, N);
}

static void test_random_crop_takes_a_window_of_the_padded_image(void **state) {
  (void)state;
  enum { CH = 4, CW = 5, P = 2 };
  tsr_dataset *dataset = three_fields();
  tsr_transform crop = tsr_transform_random_crop(0, CH, CW, P);
  tsr_loader *loader = loader_make(dataset, 4, 3, 1, &crop, 1);
  static float out[N * C * CH * CW];
  int64_t labels[N];
  int tops[H + 2 * P] = {0};
  draw_epoch(loader, out, labels, C * CH * CW);
  for (int64_t r = 0; r < N; ++r) {
    int64_t i = labels[r] / 7;
    const float *e = out + r * C * CH * CW;
    int matches = 0;
    for (int64_t top = -P; top <= H + P - CH; ++top) {
      for (int64_t left = -P; left <= W + P - CW; ++left) {
        int ok = 1;
        for (int64_t c = 0; c < C && ok; ++c)
          for (int64_t y = 0; y < CH && ok; ++y)
            for (int64_t x = 0; x < CW && ok; ++x) {
              int64_t sy = top + y, sx = left + x;
              float want = sy >= 0 && sy < H && sx >= 0 && sx < W ? pixel(i, c, sy, sx) : 0.0f;
              ok = e[(c * CH + y) * CW + x] == want;
            }
        if (ok) {
          ++matches;
          ++tops[top + P];
        }
      }
    }
    assert_int_equal(matches, 1);
  }
  int distinct = 0;
  for (int k = 0; k < H + 2 * P; ++k) distinct += tops[k] > 0;
  assert_true(distinct >= 2);  // the offsets vary
  tsr_loader_destroy(loader);
  tsr_dataset_destroy(dataset);
}

static void test_flip_and_normalize_are_exact(void **state) {
  (void)state;
  tsr_dataset *dataset = three_fields();
  const float mean[C] = {1.0f, 2.0f, 3.0f}, std[C] = {2.0f, 4.0f, 0.5f};
  tsr_transform t[2] = {tsr_transform_random_hflip(0, 1.0),
                        tsr_transform_normalize(0, C, mean, std)};
  tsr_loader *loader = loader_make(dataset, 5, 9, 1, t, 2);
  static float out[N * C * H * W];
  int64_t labels[N];
  draw_epoch(loader, out, labels, C * H * W);
  for (int64_t r = 0; r < N; ++r) {
    int64_t i = labels[r] / 7;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          float want = (pixel(i, c, y, W - 1 - x) - mean[c]) * (1.0f / std[c]);
          assert_true(out[((r * C + c) * H + y) * W + x] == want);
        }
  }
  tsr_loader_destroy(loader);
  // Probability 0 never flips.
  tsr_transform none = tsr_transform_random_hflip(0, 0.0);
  loader = loader_make(dataset, 5, 9, 0, &none, 1);
  draw_epoch(loader, out, labels, C * H * W);
  for (int64_t r = 0; r < N; ++r)
    assert_true(out[r * C * H * W + 1] == pixel(labels[r] / 7, 0, 0, 1));
  tsr_loader_destroy(loader);
  tsr_dataset_destroy(dataset);
}

static void test_transforms_depend_on_seed_epoch_and_example_only(void **state) {
  (void)state;
  tsr_dataset *dataset = three_fields();
  tsr_transform t[2] = {tsr_transform_random_crop(0, H, W, 2), tsr_transform_random_hflip(0, 0.5)};
  enum { E = C * H * W };
  static float a[N * E], b[N * E], c[N * E], d[N * E];
  int64_t la[N], lb[N], lc[N], ld[N];
  tsr_loader *prefetching = loader_make(dataset, 4, 21, 1, t, 2);
  tsr_loader *plain = loader_make(dataset, 4, 21, 0, t, 2);
  draw_epoch(prefetching, a, la, E);
  draw_epoch(plain, b, lb, E);
  assert_memory_equal(la, lb, sizeof(la));
  assert_memory_equal(a, b, sizeof(a));  // prefetch on the producer thread, same values
  // Epoch 1 differs from epoch 0; a seek back to epoch 0 reproduces it.
  draw_epoch(plain, c, lc, E);
  assert_memory_not_equal(c, a, sizeof(a));
  assert_int_equal(tsr_loader_seek(prefetching, 0, 0), TSR_OK);
  draw_epoch(prefetching, d, ld, E);
  assert_memory_equal(d, a, sizeof(a));
  tsr_loader_destroy(prefetching);
  tsr_loader_destroy(plain);
  // Another seed gives other crops or flips.
  tsr_loader *other = loader_make(dataset, 4, 22, 1, t, 2);
  draw_epoch(other, c, lc, E);
  assert_memory_not_equal(c, a, sizeof(a));
  tsr_loader_destroy(other);
  tsr_dataset_destroy(dataset);
}

static void test_transforms_are_checked_at_loader_creation(void **state) {
  (void)state;
  tsr_dataset *dataset = three_fields();
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  tsr_loader *loader = (tsr_loader *)&loader;
  const float mean[2] = {0, 0}, std[3] = {1, 0, 1};
  struct {
    tsr_transform t;
    const char *text;
  } bad[] = {
      {tsr_transform_random_hflip(1, 0.5), "must be float32"},
      {tsr_transform_random_hflip(3, 0.5), "outside"},
      {tsr_transform_random_hflip(0, 1.5), "probability"},
      {tsr_transform_random_crop(0, H + 5, W, 2), "does not fit"},
      {tsr_transform_normalize(0, 2, mean, std), "3 channels"},
      {tsr_transform_normalize(0, 3, std, std), "std[1]"},
  };
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); ++k) {
    o.transforms = &bad[k].t;
    o.transform_count = 1;
    assert_int_equal(tsr_loader_create(dataset, g_device, &o, &loader), TSR_INVALID_ARGUMENT);
    assert_null(loader);
    if (strstr(tsr_last_error(), bad[k].text) == NULL)
      fail_msg("case %zu: '%s' should say '%s'", k, tsr_last_error(), bad[k].text);
  }
  tsr_dataset_destroy(dataset);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dataset_from_tensors_serves_every_field_together),
      cmocka_unit_test(test_dataset_from_tensors_refuses_mismatched_tensors),
      cmocka_unit_test(test_two_field_dataset_works_with_loader_next),
      cmocka_unit_test(test_random_crop_takes_a_window_of_the_padded_image),
      cmocka_unit_test(test_flip_and_normalize_are_exact),
      cmocka_unit_test(test_transforms_depend_on_seed_epoch_and_example_only),
      cmocka_unit_test(test_transforms_are_checked_at_loader_creation),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
