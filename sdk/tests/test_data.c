// Datasets and loaders (tessera/data.h).
//
// IDX files are written here, raw and gzip, into a temporary folder: values,
// normalisation, flattening and limits are checked against the bytes
// written, and every kind of corrupt file must give an error naming the file.
// The real Fashion-MNIST is read when present. Loaders run over a callback
// dataset whose features encode the example's index, so each batch says
// exactly which examples it holds: every index once per epoch, orders that
// depend on (seed, epoch) only, seek reproducing an uninterrupted run bit for
// bit, prefetch on and off identical, callback errors reaching the caller.
//
// Compile definitions: TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, TSR_TEST_REF_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tessera/tessera.h"
#include "test_support.h"

#ifndef TSR_TEST_PLUGIN_PATH
#error "TSR_TEST_PLUGIN_PATH must name the plugin under test"
#endif
#ifndef TSR_TEST_DEVICE
#error "TSR_TEST_DEVICE must name the device under test"
#endif

static tsr_context *g_context;
static tsr_device *g_device;
static char g_dir[256];

static int group_setup(void **state) {
  (void)state;
  snprintf(g_dir, sizeof(g_dir), "%s/tsr_test_data_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(g_dir) == NULL) {
    fprintf(stderr, "mkdtemp(%s) failed\n", g_dir);
    return -1;
  }
  if (ts_device_open(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, &g_context, &g_device) != 0)
    return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  g_context = NULL;
  g_device = NULL;
  DIR *dir = opendir(g_dir);
  if (dir != NULL) {
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      char path[512];
      snprintf(path, sizeof(path), "%s/%s", g_dir, e->d_name);
      unlink(path);
    }
    closedir(dir);
  }
  rmdir(g_dir);
  return 0;
}

// --- writing IDX files -----------------------------------------------------------

static const char *tmp_path(const char *name) {
  static char paths[64][512];
  static int next;
  char *p = paths[next++ % 64];  // a ring: a test keeps at most a few dozen alive
  snprintf(p, 512, "%s/%s", g_dir, name);
  return p;
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

// Writes |size| bytes to |path|, gzip-compressed when |gzip|.
static void write_bytes(const char *path, const uint8_t *bytes, size_t size, int gzip) {
  if (gzip) {
    gzFile f = gzopen(path, "wb");
    assert_non_null(f);
    if (size > 0)
      assert_int_equal(gzwrite(f, bytes, (unsigned)size), (int)size);
    assert_int_equal(gzclose(f), Z_OK);
    return;
  }
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (size > 0)
    assert_int_equal(fwrite(bytes, 1, size, f), size);
  assert_int_equal(fclose(f), 0);
}

// An IDX file of |magic| with |rank| dims and |data_bytes| bytes of |data|
// (which may be fewer or more than the dims say).
static void write_idx(const char *path, uint32_t magic, const uint32_t *dims, const uint8_t *data,
                      size_t data_bytes, int gzip) {
  int rank = (int)(magic & 0xff);
  size_t header = 4 + 4 * (size_t)rank;
  uint8_t *buf = malloc(header + data_bytes + 1);
  assert_non_null(buf);
  put_be32(buf, magic);
  for (int d = 0; d < rank; ++d) put_be32(buf + 4 + 4 * d, dims[d]);
  if (data_bytes > 0)
    memcpy(buf + header, data, data_bytes);
  write_bytes(path, buf, header + data_bytes, gzip);
  free(buf);
}

// A small image/label pair: |n| images of |rows| x |cols| with pixel
// (i, k) = (i * 37 + k * 11) % 256, and label i % 10.
static uint8_t pixel_of(int64_t i, int64_t k) {
  return (uint8_t)((i * 37 + k * 11) % 256);
}

static void write_pair(const char *images, const char *labels, uint32_t n, uint32_t rows,
                       uint32_t cols, int gzip) {
  size_t numel = (size_t)rows * cols;
  uint8_t *pix = malloc(n * numel + 1);
  uint8_t *lab = malloc(n + 1);
  assert_non_null(pix);
  assert_non_null(lab);
  for (uint32_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < numel; ++k) pix[i * numel + k] = pixel_of(i, (int64_t)k);
    lab[i] = (uint8_t)(i % 10);
  }
  uint32_t idims[3] = {n, rows, cols};
  write_idx(images, 0x00000803u, idims, pix, n * numel, gzip);
  write_idx(labels, 0x00000801u, &n, lab, n, gzip);
  free(pix);
  free(lab);
}

// Checks example |i| of |dataset| against pixel_of under (mean, std).
static void expect_example(const tsr_dataset *dataset, int64_t i, double mean, double std) {
  const int64_t *sizes = tsr_dataset_example_sizes(dataset);
  int32_t rank = tsr_dataset_example_rank(dataset);
  int64_t numel = 1;
  for (int32_t d = 0; d < rank; ++d) numel *= sizes[d];
  float *features = malloc((size_t)numel * sizeof(float));
  assert_non_null(features);
  int64_t label = -1;
  TS_ASSERT_OK(tsr_dataset_get(dataset, i, features, &label));
  assert_int_equal(label, i % 10);
  for (int64_t k = 0; k < numel; ++k) {
    float want = (float)(((double)pixel_of(i, k) / 255.0 - mean) / std);
    if (features[k] != want) {
      fail_msg("example %lld element %lld is %.9g, expected %.9g", (long long)i, (long long)k,
               features[k], want);
    }
  }
  free(features);
}

// Opens |images|/|labels|, which must fail with |status| and a message that
// names |named_path| and contains |phrase|.
static void expect_open_error(const char *images, const char *labels, tsr_status status,
                              const char *named_path, const char *phrase) {
  tsr_dataset *dataset = (tsr_dataset *)(uintptr_t)1;
  tsr_status got = tsr_dataset_idx_open(images, labels, NULL, &dataset);
  const char *message = tsr_last_error();
  if (got != status) {
    fail_msg("open(%s, %s) gave %s (%s), expected %s", images, labels, tsr_status_name(got),
             message, tsr_status_name(status));
  }
  assert_null(dataset);
  if (strstr(message, named_path) == NULL || strstr(message, phrase) == NULL) {
    fail_msg("message \"%s\" should name '%s' and say \"%s\"", message, named_path, phrase);
  }
}

// --- IDX -------------------------------------------------------------------------

static void test_idx_reads_raw_and_gzip_files_exactly(void **state) {
  (void)state;
  for (int gzip = 0; gzip <= 1; ++gzip) {
    const char *images = tmp_path(gzip ? "v-images.gz" : "v-images");
    const char *labels = tmp_path(gzip ? "v-labels.gz" : "v-labels");
    write_pair(images, labels, 5, 2, 3, gzip);
    tsr_dataset *dataset = NULL;
    TS_ASSERT_OK(tsr_dataset_idx_open(images, labels, NULL, &dataset));
    assert_int_equal(tsr_dataset_size(dataset), 5);
    assert_int_equal(tsr_dataset_example_rank(dataset), 3);
    const int64_t *sizes = tsr_dataset_example_sizes(dataset);
    assert_int_equal(sizes[0], 1);
    assert_int_equal(sizes[1], 2);
    assert_int_equal(sizes[2], 3);
    for (int64_t i = 0; i < 5; ++i) expect_example(dataset, i, 0.0, 1.0);
    float features[6];
    int64_t label;
    assert_int_equal(tsr_dataset_get(dataset, 5, features, &label), TSR_INVALID_ARGUMENT);
    assert_non_null(strstr(tsr_last_error(), "index 5"));
    assert_int_equal(tsr_dataset_get(dataset, -1, features, &label), TSR_INVALID_ARGUMENT);
    tsr_dataset_destroy(dataset);
  }
}

static void test_idx_normalises_flattens_and_limits(void **state) {
  (void)state;
  const char *images = tmp_path("n-images");
  const char *labels = tmp_path("n-labels.gz");
  write_pair(images, labels, 7, 4, 5, 0);
  write_pair(tmp_path("n-images-unused"), labels, 7, 4, 5, 1);  // gzip labels, raw images
  tsr_idx_options options;
  tsr_idx_options_init(&options);
  assert_true(options.mean == 0.0 && options.std == 1.0 && options.limit == 0 &&
              options.flatten == 0);
  options.mean = 0.2860;
  options.std = 0.3530;
  options.flatten = 1;
  tsr_dataset *dataset = NULL;
  TS_ASSERT_OK(tsr_dataset_idx_open(images, labels, &options, &dataset));
  assert_int_equal(tsr_dataset_example_rank(dataset), 1);
  assert_int_equal(tsr_dataset_example_sizes(dataset)[0], 20);
  assert_int_equal(tsr_dataset_size(dataset), 7);
  for (int64_t i = 0; i < 7; ++i) expect_example(dataset, i, options.mean, options.std);
  tsr_dataset_destroy(dataset);

  options.limit = 3;
  TS_ASSERT_OK(tsr_dataset_idx_open(images, labels, &options, &dataset));
  assert_int_equal(tsr_dataset_size(dataset), 3);
  for (int64_t i = 0; i < 3; ++i) expect_example(dataset, i, options.mean, options.std);
  float features[20];
  int64_t label;
  assert_int_equal(tsr_dataset_get(dataset, 3, features, &label), TSR_INVALID_ARGUMENT);
  tsr_dataset_destroy(dataset);

  options.limit = 1000;  // more than there are: all of them
  TS_ASSERT_OK(tsr_dataset_idx_open(images, labels, &options, &dataset));
  assert_int_equal(tsr_dataset_size(dataset), 7);
  tsr_dataset_destroy(dataset);

  options.limit = -1;
  assert_int_equal(tsr_dataset_idx_open(images, labels, &options, &dataset), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "limit"));
  options.limit = 0;
  options.std = 0.0;
  assert_int_equal(tsr_dataset_idx_open(images, labels, &options, &dataset), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "std"));
  options.std = NAN;
  assert_int_equal(tsr_dataset_idx_open(images, labels, &options, &dataset), TSR_INVALID_ARGUMENT);
  assert_null(dataset);
}

static void test_idx_corrupt_files_fail_naming_the_file(void **state) {
  (void)state;
  const char *images = tmp_path("c-images");
  const char *labels = tmp_path("c-labels");
  write_pair(images, labels, 5, 2, 3, 0);
  uint8_t data[64];
  for (int i = 0; i < 64; ++i) data[i] = (uint8_t)i;

  const char *bad = tmp_path("c-bad-magic");
  uint32_t dims[4] = {5, 2, 3, 1};
  write_idx(bad, 0x00000804u, dims, data, 30, 0);  // type 8, four dims
  expect_open_error(bad, labels, TSR_INVALID_ARGUMENT, bad, "bad magic 0x00000804");
  // A label file where images belong, and the other way round.
  expect_open_error(labels, labels, TSR_INVALID_ARGUMENT, labels, "bad magic 0x00000801");
  expect_open_error(images, images, TSR_INVALID_ARGUMENT, images, "bad magic 0x00000803");

  const char *short_header = tmp_path("c-short-header");
  uint8_t header[10] = {0, 0, 8, 3, 0, 0, 0, 5, 0, 0};
  write_bytes(short_header, header, sizeof(header), 0);
  expect_open_error(short_header, labels, TSR_INVALID_ARGUMENT, short_header,
                    "truncated header: 10 bytes, expected 16");
  write_bytes(short_header, header, 3, 0);
  expect_open_error(short_header, labels, TSR_INVALID_ARGUMENT, short_header, "truncated header");

  const char *short_data = tmp_path("c-short-data");
  write_idx(short_data, 0x00000803u, dims, data, 20, 0);
  expect_open_error(short_data, labels, TSR_INVALID_ARGUMENT, short_data,
                    "truncated: expected 30 bytes of image data, found 20");
  write_idx(short_data, 0x00000803u, dims, data, 20, 1);  // the same inside gzip
  expect_open_error(short_data, labels, TSR_INVALID_ARGUMENT, short_data,
                    "truncated: expected 30 bytes of image data, found 20");
  const char *short_labels = tmp_path("c-short-labels");
  write_idx(short_labels, 0x00000801u, dims, data, 4, 0);
  expect_open_error(images, short_labels, TSR_INVALID_ARGUMENT, short_labels,
                    "truncated: expected 5 bytes of label data, found 4");
  const char *long_data = tmp_path("c-long-data");
  write_idx(long_data, 0x00000803u, dims, data, 31, 0);
  expect_open_error(long_data, labels, TSR_INVALID_ARGUMENT, long_data, "trailing data");

  const char *other_count = tmp_path("c-other-count");
  uint32_t four = 4;
  write_idx(other_count, 0x00000801u, &four, data, 4, 0);
  expect_open_error(images, other_count, TSR_INVALID_ARGUMENT, other_count, "counts differ");

  const char *missing = tmp_path("c-missing");
  expect_open_error(missing, labels, TSR_NOT_FOUND, missing, "no such file");
  expect_open_error(images, missing, TSR_NOT_FOUND, missing, "no such file");
  expect_open_error(g_dir, labels, TSR_INVALID_ARGUMENT, g_dir, "not a regular file");

  const char *empty = tmp_path("c-empty");
  write_bytes(empty, data, 0, 0);
  expect_open_error(empty, labels, TSR_INVALID_ARGUMENT, empty, "empty file");
  write_bytes(empty, data, 0, 1);  // a valid gzip stream of nothing
  expect_open_error(empty, labels, TSR_INVALID_ARGUMENT, empty, "empty file");

  // Dims whose product overflows 64 bits, and dims that fit but promise far
  // more than the file holds: both fail before any allocation of that size.
  const char *huge = tmp_path("c-huge");
  uint32_t huge_dims[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  write_idx(huge, 0x00000803u, huge_dims, data, 64, 0);
  expect_open_error(huge, labels, TSR_INVALID_ARGUMENT, huge, "overflow");
  write_idx(huge, 0x00000803u, huge_dims, data, 64, 1);
  expect_open_error(huge, labels, TSR_INVALID_ARGUMENT, huge, "overflow");
  uint32_t big_dims[3] = {0x7fffffffu, 28, 28};
  write_idx(huge, 0x00000803u, big_dims, data, 64, 1);
  expect_open_error(huge, labels, TSR_INVALID_ARGUMENT, huge,
                    "truncated: expected 1683627179248 bytes of image data, found 64");
  uint32_t zero_dims[3] = {5, 0, 3};
  write_idx(huge, 0x00000803u, zero_dims, data, 0, 0);
  expect_open_error(huge, labels, TSR_INVALID_ARGUMENT, huge, "dim 1 is 0");
}

static uint8_t *file_slurp(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)size);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  *out_size = (size_t)size;
  return buf;
}

static void test_idx_damaged_gzip_fails_naming_the_file(void **state) {
  (void)state;
  // Enough varied data that the deflate stream is many blocks long.
  const char *images = tmp_path("g-images.gz");
  const char *labels = tmp_path("g-labels");
  write_pair(images, labels, 200, 28, 28, 0);
  write_pair(images, tmp_path("g-labels-unused"), 200, 28, 28, 1);
  size_t size = 0;
  uint8_t *bytes = file_slurp(images, &size);
  assert_true(size > 200);

  const char *damaged = tmp_path("g-damaged.gz");
  uint8_t *copy = malloc(size);
  assert_non_null(copy);
  memcpy(copy, bytes, size);
  for (size_t i = size / 2; i < size / 2 + 16; ++i) copy[i] ^= 0x5a;
  write_bytes(damaged, copy, size, 0);
  expect_open_error(damaged, labels, TSR_INVALID_ARGUMENT, damaged, "gzip");

  // A flipped byte of the CRC-32 trailer: the data decompress but do not check out.
  memcpy(copy, bytes, size);
  copy[size - 6] ^= 0x01;
  write_bytes(damaged, copy, size, 0);
  expect_open_error(damaged, labels, TSR_INVALID_ARGUMENT, damaged, "corrupt gzip data");

  write_bytes(damaged, bytes, size / 2, 0);  // cut in the middle
  expect_open_error(damaged, labels, TSR_INVALID_ARGUMENT, damaged, "truncated gzip stream");
  write_bytes(damaged, bytes, 2, 0);  // only the gzip magic
  expect_open_error(damaged, labels, TSR_INVALID_ARGUMENT, damaged, "truncated gzip stream");

  memcpy(copy, bytes, size);  // garbage after the stream
  write_bytes(damaged, copy, size, 0);
  FILE *f = fopen(damaged, "ab");
  assert_non_null(f);
  fputs("garbage", f);
  fclose(f);
  expect_open_error(damaged, labels, TSR_INVALID_ARGUMENT, damaged, "trailing data");

  // Two gzip members back to back read as one file, as gzip(1) reads them.
  size_t raw_size = 0;
  write_pair(tmp_path("g-raw"), tmp_path("g-raw-labels"), 200, 28, 28, 0);
  uint8_t *raw = file_slurp(tmp_path("g-raw"), &raw_size);
  const char *two = tmp_path("g-two-members.gz");
  write_bytes(two, raw, raw_size / 3, 1);
  gzFile g = gzopen(tmp_path("g-second.gz"), "wb");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, raw + raw_size / 3, (unsigned)(raw_size - raw_size / 3)),
                   (int)(raw_size - raw_size / 3));
  gzclose(g);
  size_t second_size = 0;
  uint8_t *second = file_slurp(tmp_path("g-second.gz"), &second_size);
  f = fopen(two, "ab");
  assert_non_null(f);
  assert_int_equal(fwrite(second, 1, second_size, f), second_size);
  fclose(f);
  tsr_dataset *dataset = NULL;
  TS_ASSERT_OK(tsr_dataset_idx_open(two, labels, NULL, &dataset));
  assert_int_equal(tsr_dataset_size(dataset), 200);
  expect_example(dataset, 199, 0.0, 1.0);
  tsr_dataset_destroy(dataset);
  free(second);
  free(raw);
  free(copy);
  free(bytes);
}

// num_classes checks every kept label: 255 in a test split is refused,
// naming the file and the example; 0 does not check; labels past |limit|
// are not read.
static void test_idx_labels_beyond_num_classes_are_refused(void **state) {
  (void)state;
  const char *images = tmp_path("k-images");
  const char *labels = tmp_path("k-labels");
  write_pair(images, labels, 6, 2, 2, 0);
  const uint8_t bad[6] = {0, 1, 2, 255, 4, 5};
  const uint32_t n = 6;
  write_idx(labels, 0x00000801u, &n, bad, sizeof(bad), 0);
  tsr_idx_options o;
  tsr_idx_options_init(&o);
  o.num_classes = 10;
  tsr_dataset *dataset = (tsr_dataset *)(uintptr_t)1;
  assert_int_equal(tsr_dataset_idx_open(images, labels, &o, &dataset), TSR_INVALID_ARGUMENT);
  assert_null(dataset);
  const char *message = tsr_last_error();
  if (strstr(message, labels) == NULL ||
      strstr(message, "label 255 of example 3 is not below num_classes 10") == NULL) {
    fail_msg("message \"%s\"", message);
  }
  o.limit = 3;  // the bad label is past the kept examples
  TS_ASSERT_OK(tsr_dataset_idx_open(images, labels, &o, &dataset));
  tsr_dataset_destroy(dataset);
  o.limit = 0;
  o.num_classes = 0;  // not checked
  TS_ASSERT_OK(tsr_dataset_idx_open(images, labels, &o, &dataset));
  tsr_dataset_destroy(dataset);
}

// A gzip bomb: a labels file whose header declares 10 labels, followed by
// 64 MiB of zeros, about 64 KiB compressed. Inflating stops one byte past
// the 18 bytes the header declares, instead of after 64 MiB.
static void test_idx_gzip_bomb_stops_at_the_declared_size(void **state) {
  (void)state;
  const size_t zeros = (size_t)64 << 20;
  const char *bomb = tmp_path("bomb-labels.gz");
  gzFile g = gzopen(bomb, "wb9");
  assert_non_null(g);
  const uint8_t header[8] = {0, 0, 8, 1, 0, 0, 0, 10};
  assert_int_equal(gzwrite(g, header, sizeof(header)), (int)sizeof(header));
  uint8_t *block = calloc(1, (size_t)1 << 20);
  assert_non_null(block);
  for (size_t done = 0; done < zeros; done += (size_t)1 << 20) {
    assert_int_equal(gzwrite(g, block, 1u << 20), 1 << 20);
  }
  free(block);
  assert_int_equal(gzclose(g), Z_OK);
  const char *images = tmp_path("bomb-images");
  write_pair(images, tmp_path("bomb-labels-unused"), 10, 2, 2, 0);
  expect_open_error(images, bomb, TSR_INVALID_ARGUMENT, bomb,
                    "decompresses past the 18 bytes its IDX header declares; stopped after 19 "
                    "bytes");
}

static void test_mnist_open_finds_raw_or_gzip_files(void **state) {
  (void)state;
  // Raw train files and gzip test files in the same folder.
  write_pair(tmp_path("train-images-idx3-ubyte"), tmp_path("train-labels-idx1-ubyte"), 6, 3, 3, 0);
  write_pair(tmp_path("t10k-images-idx3-ubyte.gz"), tmp_path("t10k-labels-idx1-ubyte.gz"), 4, 3, 3,
             1);
  tsr_dataset *dataset = NULL;
  TS_ASSERT_OK(tsr_dataset_mnist_open(g_dir, "train", NULL, &dataset));
  assert_int_equal(tsr_dataset_size(dataset), 6);
  expect_example(dataset, 5, 0.0, 1.0);
  tsr_dataset_destroy(dataset);
  TS_ASSERT_OK(tsr_dataset_mnist_open(g_dir, "test", NULL, &dataset));
  assert_int_equal(tsr_dataset_size(dataset), 4);
  expect_example(dataset, 3, 0.0, 1.0);
  tsr_dataset_destroy(dataset);
  assert_int_equal(tsr_dataset_mnist_open(g_dir, "valid", NULL, &dataset), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "'valid'"));
  const char *nowhere = tmp_path("no-such-folder");
  assert_int_equal(tsr_dataset_mnist_open(nowhere, "train", NULL, &dataset), TSR_NOT_FOUND);
  assert_non_null(strstr(tsr_last_error(), "no-such-folder/train-images-idx3-ubyte.gz"));
  assert_null(dataset);
}

static void test_fashion_mnist_loads(void **state) {
  (void)state;
  const char *dir = getenv("TSR_FASHION_MNIST_DIR");
  if (dir == NULL)
    dir = "/usr/share/datasets/fashion-mnist";
  struct stat st;
  if (stat(dir, &st) != 0) {
    printf("skipped: no Fashion-MNIST at %s (set TSR_FASHION_MNIST_DIR)\n", dir);
    skip();
  }
  tsr_idx_options options;
  tsr_idx_options_init(&options);
  options.flatten = 1;
  const char *splits[2] = {"train", "test"};
  const int64_t counts[2] = {60000, 10000};
  for (int s = 0; s < 2; ++s) {
    tsr_dataset *dataset = NULL;
    TS_ASSERT_OK(tsr_dataset_mnist_open(dir, splits[s], &options, &dataset));
    assert_int_equal(tsr_dataset_size(dataset), counts[s]);
    assert_int_equal(tsr_dataset_example_rank(dataset), 1);
    assert_int_equal(tsr_dataset_example_sizes(dataset)[0], 784);
    float features[784];
    int64_t label = -1;
    TS_ASSERT_OK(tsr_dataset_get(dataset, 0, features, &label));
    assert_int_equal(label, 9);  // both splits open with an ankle boot
    double sum = 0;
    for (int k = 0; k < 784; ++k) {
      assert_true(features[k] >= 0.0f && features[k] <= 1.0f);
      sum += features[k];
    }
    assert_true(sum > 10.0);  // not a blank image
    int64_t histogram[10] = {0};
    for (int64_t i = 0; i < counts[s]; i += 7) {
      TS_ASSERT_OK(tsr_dataset_get(dataset, i, features, &label));
      assert_true(label >= 0 && label <= 9);
      ++histogram[label];
    }
    for (int c = 0; c < 10; ++c) assert_true(histogram[c] > 0);
    tsr_dataset_destroy(dataset);
  }
}

// --- callback datasets --------------------------------------------------------------

// Example i: features [3] = {i, i + 0.25, -i}, label i * 7; fails with
// |fail_status| on |fail_index| while |fail_index| >= 0; sleeps |delay_us|.
typedef struct counter_data {
  int64_t fail_index;
  tsr_status fail_status;
  int delay_us;
  int64_t calls;
} counter_data;

static tsr_status counter_get(void *user, int64_t index, float *out_features, int64_t *out_label) {
  counter_data *c = user;
  __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
  if (c->delay_us > 0)
    usleep((useconds_t)c->delay_us);
  if (index == __atomic_load_n(&c->fail_index, __ATOMIC_ACQUIRE))
    return c->fail_status;
  out_features[0] = (float)index;
  out_features[1] = (float)index + 0.25f;
  out_features[2] = -(float)index;
  *out_label = index * 7;
  return TSR_OK;
}

static tsr_dataset *counter_dataset(int64_t count, counter_data *c) {
  int64_t sizes[1] = {3};
  tsr_dataset *dataset = NULL;
  TS_ASSERT_OK(tsr_dataset_callback_create(count, 1, sizes, counter_get, c, &dataset));
  return dataset;
}

static void test_callback_dataset_serves_and_reports_errors(void **state) {
  (void)state;
  counter_data c = {.fail_index = 4, .fail_status = TSR_UNAVAILABLE};
  tsr_dataset *dataset = counter_dataset(9, &c);
  assert_int_equal(tsr_dataset_size(dataset), 9);
  assert_int_equal(tsr_dataset_example_rank(dataset), 1);
  float f[3];
  int64_t label;
  TS_ASSERT_OK(tsr_dataset_get(dataset, 3, f, &label));
  assert_true(f[0] == 3.0f && f[1] == 3.25f && f[2] == -3.0f);
  assert_int_equal(label, 21);
  assert_int_equal(tsr_dataset_get(dataset, 4, f, &label), TSR_UNAVAILABLE);
  assert_non_null(strstr(tsr_last_error(), "example 4"));
  tsr_dataset_destroy(dataset);

  tsr_dataset *none = NULL;
  int64_t sizes[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  assert_int_equal(tsr_dataset_callback_create(-1, 1, sizes, counter_get, &c, &none),
                   TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_dataset_callback_create(4, 8, sizes, counter_get, &c, &none),
                   TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "rank"));
  assert_int_equal(tsr_dataset_callback_create(4, 1, sizes, NULL, &c, &none), TSR_INVALID_ARGUMENT);
  sizes[0] = -2;
  assert_int_equal(tsr_dataset_callback_create(4, 1, sizes, counter_get, &c, &none),
                   TSR_INVALID_ARGUMENT);
  assert_null(none);
}

// --- loaders ------------------------------------------------------------------------

// One epoch's draws, as host copies: labels in order and features bytes.
typedef struct draws {
  int64_t batches;
  int64_t rows[64];
  int64_t labels[1024];
  float features[3 * 1024];
  int64_t total;
} draws;

static tsr_loader *loader_make(tsr_dataset *dataset, int64_t batch, uint64_t seed, int shuffle,
                               int drop_last, int prefetch) {
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  o.batch_size = batch;
  o.seed = seed;
  o.shuffle = (uint32_t)shuffle;
  o.drop_last = (uint32_t)drop_last;
  o.prefetch = (uint32_t)prefetch;
  tsr_loader *loader = NULL;
  TS_ASSERT_OK(tsr_loader_create(dataset, g_device, &o, &loader));
  return loader;
}

// Draws batches until TSR_NOT_FOUND (or |max| batches), checking each batch's
// shapes and that features agree with labels.
static void draw_epoch(tsr_loader *loader, draws *out, int64_t max) {
  memset(out, 0, sizeof(*out));
  for (;;) {
    if (out->batches == max)
      return;
    tsr_tensor *features = NULL, *labels = NULL;
    tsr_status status = tsr_loader_next(loader, &features, &labels);
    if (status == TSR_NOT_FOUND) {
      assert_null(features);
      assert_null(labels);
      return;
    }
    TS_ASSERT_OK(status);
    int64_t rows = tsr_tensor_size(labels, 0);
    assert_int_equal(tsr_tensor_rank(features), 2);
    assert_int_equal(tsr_tensor_size(features, 0), rows);
    assert_int_equal(tsr_tensor_size(features, 1), 3);
    assert_int_equal(tsr_tensor_dtype(features), TSR_FLOAT32);
    assert_int_equal(tsr_tensor_dtype(labels), TSR_INT64);
    assert_true(out->total + rows <= 1024);
    TS_ASSERT_OK(tsr_tensor_to_host(labels, out->labels + out->total, (size_t)rows * 8));
    TS_ASSERT_OK(tsr_tensor_to_host(features, out->features + 3 * out->total,
                                    (size_t)rows * 3 * sizeof(float)));
    for (int64_t r = out->total; r < out->total + rows; ++r) {
      int64_t index = out->labels[r] / 7;
      assert_true(out->features[3 * r] == (float)index);
      assert_true(out->features[3 * r + 2] == -(float)index);
    }
    out->rows[out->batches++] = rows;
    out->total += rows;
    tsr_tensor_release(features);
    tsr_tensor_release(labels);
  }
}

static int draws_equal(const draws *a, const draws *b) {
  return a->batches == b->batches && a->total == b->total &&
         memcmp(a->rows, b->rows, sizeof(a->rows)) == 0 &&
         memcmp(a->labels, b->labels, (size_t)a->total * 8) == 0 &&
         memcmp(a->features, b->features, (size_t)a->total * 3 * sizeof(float)) == 0;
}

static void expect_each_index_once(const draws *d, int64_t count) {
  assert_int_equal(d->total, count);
  char seen[1024] = {0};
  for (int64_t r = 0; r < d->total; ++r) {
    int64_t index = d->labels[r] / 7;
    assert_true(index >= 0 && index < count);
    if (seen[index])
      fail_msg("example %lld drawn twice", (long long)index);
    seen[index] = 1;
  }
}

static void test_loader_draws_every_example_once_per_epoch(void **state) {
  (void)state;
  counter_data c = {.fail_index = -1};
  tsr_dataset *dataset = counter_dataset(100, &c);
  for (int prefetch = 0; prefetch <= 1; ++prefetch) {
    tsr_loader *loader = loader_make(dataset, 32, 42, 1, 0, prefetch);
    assert_int_equal(tsr_loader_batch_count(loader), 4);
    draws *d = malloc(sizeof(draws));
    assert_non_null(d);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      assert_int_equal(tsr_loader_epoch(loader), epoch);
      assert_int_equal(tsr_loader_position(loader), 0);
      draw_epoch(loader, d, -1);
      assert_int_equal(d->batches, 4);
      assert_int_equal(d->rows[3], 4);  // 100 = 3 * 32 + 4
      expect_each_index_once(d, 100);
      int identity = 1;
      for (int64_t r = 0; r < 100; ++r) identity &= d->labels[r] == r * 7;
      assert_false(identity);
    }
    free(d);
    tsr_loader_destroy(loader);
  }
  tsr_dataset_destroy(dataset);
}

static void test_loader_order_depends_on_seed_and_epoch_only(void **state) {
  (void)state;
  counter_data c = {.fail_index = -1};
  tsr_dataset *dataset = counter_dataset(100, &c);
  draws *a = malloc(sizeof(draws)), *b = malloc(sizeof(draws)), *a1 = malloc(sizeof(draws));
  assert_true(a && b && a1);
  tsr_loader *first = loader_make(dataset, 10, 7, 1, 0, 1);
  tsr_loader *second = loader_make(dataset, 10, 7, 1, 0, 0);
  draw_epoch(first, a, -1);
  draw_epoch(second, b, -1);
  assert_true(draws_equal(a, b));  // same seed, prefetch or not
  draw_epoch(first, a1, -1);
  assert_false(draws_equal(a, a1));  // the next epoch is another order
  expect_each_index_once(a1, 100);
  tsr_loader *other = loader_make(dataset, 10, 8, 1, 0, 1);
  draw_epoch(other, b, -1);
  assert_false(draws_equal(a, b));  // another seed
  tsr_loader_destroy(other);
  // shuffle off: the identity, every epoch.
  tsr_loader *plain = loader_make(dataset, 30, 7, 0, 0, 1);
  for (int epoch = 0; epoch < 2; ++epoch) {
    draw_epoch(plain, b, -1);
    assert_int_equal(b->batches, 4);
    for (int64_t r = 0; r < 100; ++r) assert_int_equal(b->labels[r], r * 7);
  }
  tsr_loader_destroy(plain);
  tsr_loader_destroy(first);
  tsr_loader_destroy(second);
  free(a);
  free(b);
  free(a1);
  tsr_dataset_destroy(dataset);
}

static void test_loader_seek_reproduces_an_uninterrupted_run(void **state) {
  (void)state;
  counter_data c = {.fail_index = -1};
  tsr_dataset *dataset = counter_dataset(50, &c);
  for (int prefetch = 0; prefetch <= 1; ++prefetch) {
    draws *run = malloc(3 * sizeof(draws)), *resumed = malloc(sizeof(draws));
    assert_true(run && resumed);
    tsr_loader *loader = loader_make(dataset, 8, 1234, 1, 0, prefetch);
    for (int e = 0; e < 3; ++e) draw_epoch(loader, &run[e], -1);
    tsr_loader_destroy(loader);
    // Resume at every (epoch, position), including the exhausted end.
    for (int64_t e = 0; e < 3; ++e) {
      for (int64_t p = 0; p <= 7; ++p) {
        loader = loader_make(dataset, 8, 1234, 1, 0, !prefetch);
        if ((e + p) % 2) {  // on a fresh loader, or one that has been drawing
          draws *scratch = malloc(sizeof(draws));
          draw_epoch(loader, scratch, 3);
          free(scratch);
        }
        TS_ASSERT_OK(tsr_loader_seek(loader, e, p));
        assert_int_equal(tsr_loader_epoch(loader), e);
        assert_int_equal(tsr_loader_position(loader), p);
        draw_epoch(loader, resumed, -1);
        assert_int_equal(resumed->batches, 7 - p);
        int64_t offset = p * 8 < 50 ? p * 8 : 50;
        assert_int_equal(resumed->total, run[e].total - offset);
        assert_memory_equal(resumed->labels, run[e].labels + offset, (size_t)resumed->total * 8);
        assert_memory_equal(resumed->features, run[e].features + 3 * offset,
                            (size_t)resumed->total * 3 * sizeof(float));
        if (e + 1 < 3) {  // and the epoch after continues as the run did
          assert_int_equal(tsr_loader_epoch(loader), e + 1);
          draw_epoch(loader, resumed, -1);
          assert_true(draws_equal(resumed, &run[e + 1]));
        }
        tsr_loader_destroy(loader);
      }
    }
    loader = loader_make(dataset, 8, 1234, 1, 0, prefetch);
    assert_int_equal(tsr_loader_seek(loader, 0, 8), TSR_INVALID_ARGUMENT);
    assert_non_null(strstr(tsr_last_error(), "position is 8"));
    assert_int_equal(tsr_loader_seek(loader, -1, 0), TSR_INVALID_ARGUMENT);
    tsr_loader_destroy(loader);
    free(run);
    free(resumed);
  }
  tsr_dataset_destroy(dataset);
}

static void test_loader_drop_last_and_epoch_end(void **state) {
  (void)state;
  counter_data c = {.fail_index = -1};
  tsr_dataset *dataset = counter_dataset(10, &c);
  draws *d = malloc(sizeof(draws));
  assert_non_null(d);
  for (int prefetch = 0; prefetch <= 1; ++prefetch) {
    tsr_loader *loader = loader_make(dataset, 3, 5, 1, 1, prefetch);
    assert_int_equal(tsr_loader_batch_count(loader), 3);
    draw_epoch(loader, d, -1);
    assert_int_equal(d->batches, 3);
    assert_int_equal(d->total, 9);
    for (int b = 0; b < 3; ++b) assert_int_equal(d->rows[b], 3);
    // After TSR_NOT_FOUND the next call begins epoch 1.
    assert_int_equal(tsr_loader_epoch(loader), 1);
    assert_int_equal(tsr_loader_position(loader), 0);
    tsr_tensor *f = NULL, *l = NULL;
    TS_ASSERT_OK(tsr_loader_next(loader, &f, &l));
    assert_int_equal(tsr_loader_position(loader), 1);
    tsr_tensor_release(f);
    tsr_tensor_release(l);
    tsr_loader_destroy(loader);

    loader = loader_make(dataset, 3, 5, 1, 0, prefetch);
    assert_int_equal(tsr_loader_batch_count(loader), 4);
    draw_epoch(loader, d, -1);
    assert_int_equal(d->rows[3], 1);
    expect_each_index_once(d, 10);
    tsr_loader_destroy(loader);

    loader = loader_make(dataset, 64, 5, 1, 0, prefetch);  // one batch of all 10
    draw_epoch(loader, d, -1);
    assert_int_equal(d->batches, 1);
    expect_each_index_once(d, 10);
    tsr_loader_destroy(loader);
  }
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  assert_int_equal(o.batch_size, 64);
  assert_true(o.shuffle == 1 && o.prefetch == 1 && o.drop_last == 0);
  o.drop_last = 1;
  tsr_loader *loader = (tsr_loader *)(uintptr_t)1;
  assert_int_equal(tsr_loader_create(dataset, g_device, &o, &loader), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "no batch"));
  o.batch_size = 0;
  assert_int_equal(tsr_loader_create(dataset, g_device, &o, &loader), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_loader_create(dataset, NULL, NULL, &loader), TSR_INVALID_ARGUMENT);
  assert_null(loader);
  tsr_tensor *f = NULL, *l = NULL;
  assert_int_equal(tsr_loader_next(NULL, &f, &l), TSR_INVALID_ARGUMENT);
  free(d);
  tsr_dataset_destroy(dataset);
}

static void test_loader_batches_from_idx_match_the_dataset(void **state) {
  (void)state;
  const char *images = tmp_path("l-images.gz");
  const char *labels = tmp_path("l-labels.gz");
  write_pair(images, labels, 37, 4, 4, 1);
  tsr_dataset *dataset = NULL;
  TS_ASSERT_OK(tsr_dataset_idx_open(images, labels, NULL, &dataset));
  tsr_loader *loader = loader_make(dataset, 8, 3, 1, 0, 1);
  float batch[8 * 16], one[16];
  int64_t batch_labels[8];
  int64_t seen = 0;
  for (;;) {
    tsr_tensor *f = NULL, *l = NULL;
    tsr_status status = tsr_loader_next(loader, &f, &l);
    if (status == TSR_NOT_FOUND)
      break;
    TS_ASSERT_OK(status);
    assert_int_equal(tsr_tensor_rank(f), 4);  // [B, 1, 4, 4]
    assert_int_equal(tsr_tensor_size(f, 1), 1);
    int64_t rows = tsr_tensor_size(f, 0);
    TS_ASSERT_OK(tsr_tensor_to_host(f, batch, (size_t)rows * 16 * sizeof(float)));
    TS_ASSERT_OK(tsr_tensor_to_host(l, batch_labels, (size_t)rows * 8));
    for (int64_t r = 0; r < rows; ++r) {
      // Find the example by its first pixel and label: pixel_of(i, 0) = i * 37 % 256.
      int64_t index = -1;
      for (int64_t i = 0; i < 37; ++i) {
        int64_t label;
        TS_ASSERT_OK(tsr_dataset_get(dataset, i, one, &label));
        if (label == batch_labels[r] && memcmp(one, batch + r * 16, sizeof(one)) == 0)
          index = i;
      }
      assert_true(index >= 0);
    }
    seen += rows;
    tsr_tensor_release(f);
    tsr_tensor_release(l);
  }
  assert_int_equal(seen, 37);
  tsr_loader_destroy(loader);
  tsr_dataset_destroy(dataset);
}

static void test_loader_reports_callback_errors_and_retries(void **state) {
  (void)state;
  for (int prefetch = 0; prefetch <= 1; ++prefetch) {
    counter_data c = {.fail_index = -1, .fail_status = TSR_UNAVAILABLE};
    tsr_dataset *dataset = counter_dataset(20, &c);
    draws *want = malloc(sizeof(draws)), *got = malloc(sizeof(draws));
    assert_true(want && got);
    tsr_loader *loader = loader_make(dataset, 4, 9, 1, 0, prefetch);
    draw_epoch(loader, want, -1);
    tsr_loader_destroy(loader);
    // Fail on the first example of batch 2.
    int64_t bad = want->labels[8] / 7;
    __atomic_store_n(&c.fail_index, bad, __ATOMIC_RELEASE);
    loader = loader_make(dataset, 4, 9, 1, 0, prefetch);
    draw_epoch(loader, got, 2);
    tsr_tensor *f = (tsr_tensor *)(uintptr_t)1, *l = (tsr_tensor *)(uintptr_t)1;
    assert_int_equal(tsr_loader_next(loader, &f, &l), TSR_UNAVAILABLE);
    assert_null(f);
    assert_null(l);
    char expected[64];
    snprintf(expected, sizeof(expected), "example %lld", (long long)bad);
    if (strstr(tsr_last_error(), expected) == NULL || strstr(tsr_last_error(), "batch 2") == NULL) {
      fail_msg("message \"%s\" should name batch 2 and %s", tsr_last_error(), expected);
    }
    assert_int_equal(tsr_loader_position(loader), 2);
    // Still failing: the same error again, nothing consumed.
    assert_int_equal(tsr_loader_next(loader, &f, &l), TSR_UNAVAILABLE);
    // Once the callback recovers, the same batch comes, and the rest as before.
    __atomic_store_n(&c.fail_index, -1, __ATOMIC_RELEASE);
    draws *rest = malloc(sizeof(draws));
    assert_non_null(rest);
    draw_epoch(loader, rest, -1);
    assert_int_equal(rest->total, 12);
    assert_memory_equal(rest->labels, want->labels + 8, 12 * 8);
    tsr_loader_destroy(loader);
    free(rest);
    free(want);
    free(got);
    tsr_dataset_destroy(dataset);
  }
}

static void test_loader_destroy_while_prefetching_is_clean(void **state) {
  (void)state;
  counter_data c = {.fail_index = -1, .delay_us = 200};
  tsr_dataset *dataset = counter_dataset(400, &c);
  for (int round = 0; round < 5; ++round) {
    tsr_loader *loader = loader_make(dataset, 50, (uint64_t)round, 1, 0, 1);
    if (round % 2) {
      tsr_tensor *f = NULL, *l = NULL;
      TS_ASSERT_OK(tsr_loader_next(loader, &f, &l));
      tsr_tensor_release(f);
      tsr_tensor_release(l);
      TS_ASSERT_OK(tsr_loader_seek(loader, 3, 1));  // a seek in the middle of a fill
    }
    tsr_loader_destroy(loader);  // the producer is in the middle of a batch
  }
  tsr_dataset_destroy(dataset);
}

static void test_loader_tensors_belong_to_the_callers_scope(void **state) {
  (void)state;
  counter_data c = {.fail_index = -1};
  tsr_dataset *dataset = counter_dataset(16, &c);
  tsr_loader *loader = loader_make(dataset, 4, 1, 1, 0, 1);
  size_t before = tsr_scope_size();
  size_t mark = tsr_scope_begin();
  tsr_tensor *f = NULL, *l = NULL;
  TS_ASSERT_OK(tsr_loader_next(loader, &f, &l));
  assert_int_equal(tsr_scope_size(), before + 2);
  tsr_scope_end(mark);  // releases both
  assert_int_equal(tsr_scope_size(), before);
  tsr_loader_destroy(loader);
  tsr_dataset_destroy(dataset);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idx_reads_raw_and_gzip_files_exactly),
      cmocka_unit_test(test_idx_normalises_flattens_and_limits),
      cmocka_unit_test(test_idx_corrupt_files_fail_naming_the_file),
      cmocka_unit_test(test_idx_damaged_gzip_fails_naming_the_file),
      cmocka_unit_test(test_idx_gzip_bomb_stops_at_the_declared_size),
      cmocka_unit_test(test_idx_labels_beyond_num_classes_are_refused),
      cmocka_unit_test(test_mnist_open_finds_raw_or_gzip_files),
      cmocka_unit_test(test_fashion_mnist_loads),
      cmocka_unit_test(test_callback_dataset_serves_and_reports_errors),
      cmocka_unit_test(test_loader_draws_every_example_once_per_epoch),
      cmocka_unit_test(test_loader_order_depends_on_seed_and_epoch_only),
      cmocka_unit_test(test_loader_seek_reproduces_an_uninterrupted_run),
      cmocka_unit_test(test_loader_drop_last_and_epoch_end),
      cmocka_unit_test(test_loader_batches_from_idx_match_the_dataset),
      cmocka_unit_test(test_loader_reports_callback_errors_and_retries),
      cmocka_unit_test(test_loader_destroy_while_prefetching_is_clean),
      cmocka_unit_test(test_loader_tensors_belong_to_the_callers_scope),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
