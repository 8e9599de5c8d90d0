// safetensors files, checkpoints and DLPack (tessera/io.h).
//
// Round trips of every dtype, of strided views and of metadata; every kind
// of corrupt file refused with a message naming the file; a checkpoint of a
// small network with Adam resumed bit for bit; mismatched checkpoints
// refused with nothing changed; a writer process killed (SIGKILL) during
// checkpoint writes, the file at the path always a complete checkpoint;
// DLPack export (sharing storage) and import (copying, any strides).
//
// Compile definitions: TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, TSR_TEST_REF_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tessera/dlpack.h"
#include "tessera/tessera.h"
#include "test_support.h"

#ifndef TSR_TEST_PLUGIN_PATH
#error "TSR_TEST_PLUGIN_PATH must name the plugin under test"
#endif
#ifndef TSR_TEST_DEVICE
#error "TSR_TEST_DEVICE must name the device under test"
#endif

#define TS_OK(expr)                                                         \
  do {                                                                      \
    tsr_status s_ = (expr);                                                 \
    if (s_ != TSR_OK)                                                       \
      fail_msg("%s: %s: %s", #expr, tsr_status_name(s_), tsr_last_error()); \
  } while (0)

static tsr_context *g_context;
static tsr_device *g_device;
static char g_dir[256];

static void rm_rf(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      rm_rf(path);
    } else {
      unlink(path);
    }
  }
  closedir(d);
  rmdir(dir);
}

static int group_setup(void **state) {
  (void)state;
  g_context = ts_context_create(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE);
  if (g_context == NULL)
    return -1;
  g_device = tsr_context_default_device(g_context);
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof(g_dir), "%s/tsr_test_io_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(g_dir) == NULL)
    return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  rm_rf(g_dir);
  return 0;
}

static void path_make(char *out, size_t size, const char *name) {
  snprintf(out, size, "%s/%s", g_dir, name);
}

// The whole file at |path|; the test fails when it cannot be read. Caller
// frees.
static void *file_read(const char *path, size_t *out_size) {
  *out_size = 0;
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  assert_true(n >= 0);
  assert_int_equal(fseek(f, 0, SEEK_SET), 0);
  void *data = malloc(n > 0 ? (size_t)n : 1);
  assert_non_null(data);
  *out_size = fread(data, 1, (size_t)n, f);
  assert_int_equal(*out_size, (size_t)n);
  fclose(f);
  return data;
}

static void file_write(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, size, f), size);
  fclose(f);
}

// The bytes of |t| (row-major); caller frees.
static void *tensor_bytes(const tsr_tensor *t, size_t *out_bytes) {
  size_t bytes = (size_t)tsr_tensor_numel(t) * tsr_dtype_size(tsr_tensor_dtype(t));
  void *data = malloc(bytes ? bytes : 1);
  TS_OK(tsr_tensor_to_host(t, data, bytes));
  *out_bytes = bytes;
  return data;
}

static void expect_same_tensor(const tsr_tensor *a, const tsr_tensor *b) {
  assert_int_equal(tsr_tensor_dtype(a), tsr_tensor_dtype(b));
  assert_int_equal(tsr_tensor_rank(a), tsr_tensor_rank(b));
  for (int32_t d = 0; d < tsr_tensor_rank(a); ++d) {
    assert_int_equal(tsr_tensor_size(a, d), tsr_tensor_size(b, d));
  }
  size_t na, nb;
  void *da = tensor_bytes(a, &na), *db = tensor_bytes(b, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(da, db, na);
  free(da);
  free(db);
}

// A tensor of |dtype| whose element i is (i % 7) - 3 (bool: i % 2), exact
// in every dtype.
static tsr_tensor *pattern(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; ++i) v[i] = dtype == TSR_BOOL ? (double)(i % 2) : (double)(i % 7 - 3);
  tsr_tensor *f = tsr_tensor_from_host(g_device, TSR_FLOAT64, rank, sizes, v);
  free(v);
  assert_non_null(f);
  tsr_tensor *t = dtype == TSR_FLOAT64 ? f : tsr_cast(f, dtype);
  assert_non_null(t);
  if (t != f)
    tsr_tensor_release(f);
  return t;
}

static int device_stores(tsr_dtype_t dtype) {
  tsr_device_props props = {.struct_size = sizeof(props)};
  if (tsr_device_props_get(g_device, &props) != TSR_OK)
    return 0;
  return (props.dtype_mask & TSR_DTYPE_BIT(dtype)) != 0;
}

// --- safetensors ------------------------------------------------------------------

static void test_round_trip_every_dtype(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "dtypes.safetensors");
  tsr_named_tensor named[TSR_DTYPE_COUNT + 2];
  char names[TSR_DTYPE_COUNT][16];
  int32_t count = 0;
  const int64_t sizes[3] = {2, 3, 4};
  for (tsr_dtype_t d = 0; d < TSR_DTYPE_COUNT; ++d) {
    if (!device_stores(d))
      continue;
    snprintf(names[count], sizeof(names[count]), "t%d", (int)d);
    named[count] = (tsr_named_tensor){names[count], pattern(d, 3, sizes)};
    ++count;
  }
  assert_true(count >= 5);
  const int64_t zero_sizes[2] = {0, 5};
  named[count++] = (tsr_named_tensor){"scalar", pattern(TSR_FLOAT32, 0, NULL)};
  named[count++] = (tsr_named_tensor){"empty", pattern(TSR_FLOAT32, 2, zero_sizes)};
  TS_OK(tsr_safetensors_save(path, count, named, 0, NULL, NULL));

  tsr_safetensors *file = NULL;
  TS_OK(tsr_safetensors_open(path, &file));
  assert_int_equal(tsr_safetensors_count(file), count);
  for (int32_t i = 0; i < count; ++i) {
    const char *name;
    tsr_dtype_t dtype;
    int32_t rank;
    const int64_t *got_sizes;
    TS_OK(tsr_safetensors_entry_get(file, i, &name, &dtype, &rank, &got_sizes));
    assert_string_equal(name, named[i].name);  // file order is the order given
    assert_int_equal(dtype, tsr_tensor_dtype(named[i].tensor));
    assert_int_equal(rank, tsr_tensor_rank(named[i].tensor));
    for (int32_t d = 0; d < rank; ++d)
      assert_int_equal(got_sizes[d], tsr_tensor_size(named[i].tensor, d));
    tsr_tensor *t = tsr_safetensors_tensor(file, name, g_device);
    assert_non_null(t);
    expect_same_tensor(t, named[i].tensor);
    tsr_tensor_release(t);
  }
  assert_null(tsr_safetensors_tensor(file, "absent", g_device));
  assert_int_equal(tsr_last_status(), TSR_NOT_FOUND);
  assert_non_null(strstr(tsr_last_error(), path));
  tsr_safetensors_close(file);

  // Layout: 8-byte little-endian length, a '{', data 8-aligned; the same
  // tensors give the same bytes.
  size_t size1, size2;
  uint8_t *bytes1 = file_read(path, &size1);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes1[i];
  assert_int_equal(n % 8, 0);
  assert_true(n + 8 <= size1);
  assert_int_equal(bytes1[8], '{');
  TS_OK(tsr_safetensors_save(path, count, named, 0, NULL, NULL));
  uint8_t *bytes2 = file_read(path, &size2);
  assert_int_equal(size1, size2);
  assert_memory_equal(bytes1, bytes2, size1);
  free(bytes1);
  free(bytes2);
  for (int32_t i = 0; i < count; ++i) tsr_tensor_release(named[i].tensor);
}

static void test_strided_views_are_stored_row_major(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "views.safetensors");
  const int64_t sizes[2] = {4, 6};
  tsr_tensor *base = pattern(TSR_FLOAT32, 2, sizes);
  tsr_tensor *transposed = tsr_transpose(base, 0, 1);
  tsr_tensor *sliced = tsr_slice(base, 1, 1, 6, 2);
  const int64_t row_sizes[2] = {1, 6}, wide[2] = {3, 6};
  tsr_tensor *row = tsr_slice(base, 0, 2, 3, 1);
  tsr_tensor *row_view = tsr_view(row, 2, row_sizes);
  tsr_tensor *expanded = tsr_expand(row_view, 2, wide);
  assert_non_null(expanded);
  tsr_named_tensor named[3] = {
      {"transposed", transposed}, {"sliced", sliced}, {"expanded", expanded}};
  TS_OK(tsr_safetensors_save(path, 3, named, 0, NULL, NULL));
  tsr_safetensors *file = NULL;
  TS_OK(tsr_safetensors_open(path, &file));
  for (int i = 0; i < 3; ++i) {
    tsr_tensor *got = tsr_safetensors_tensor(file, named[i].name, g_device);
    assert_non_null(got);
    assert_true(tsr_tensor_is_contiguous(got));
    tsr_tensor *want = tsr_contiguous(named[i].tensor);
    expect_same_tensor(got, want);
    tsr_tensor_release(want);
    tsr_tensor_release(got);
  }
  tsr_safetensors_close(file);
  tsr_tensor_release(expanded);
  tsr_tensor_release(row_view);
  tsr_tensor_release(row);
  tsr_tensor_release(sliced);
  tsr_tensor_release(transposed);
  tsr_tensor_release(base);
}

static void test_metadata_round_trips(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "meta.safetensors");
  const char *keys[4] = {"epoch", "quote\"back\\slash", "ctl\n\t\x01",
                         "caf\xc3\xa9 \xf0\x9f\x98\x80"};
  const char *values[4] = {"7", "", "line1\nline2", "\xe2\x82\xac"};
  tsr_tensor *t = pattern(TSR_INT64, 1, (int64_t[]){3});
  tsr_named_tensor named[1] = {{"x \"odd\" name\n", t}};
  TS_OK(tsr_safetensors_save(path, 1, named, 4, keys, values));
  tsr_safetensors *file = NULL;
  TS_OK(tsr_safetensors_open(path, &file));
  for (int i = 0; i < 4; ++i) {
    const char *v = tsr_safetensors_metadata(file, keys[i]);
    assert_non_null(v);
    assert_string_equal(v, values[i]);
  }
  assert_null(tsr_safetensors_metadata(file, "absent"));
  tsr_tensor *got = tsr_safetensors_tensor(file, named[0].name, g_device);
  assert_non_null(got);
  expect_same_tensor(got, t);
  tsr_tensor_release(got);
  tsr_safetensors_close(file);
  // No metadata and no tensors: an empty header.
  TS_OK(tsr_safetensors_save(path, 0, NULL, 0, NULL, NULL));
  TS_OK(tsr_safetensors_open(path, &file));
  assert_int_equal(tsr_safetensors_count(file), 0);
  tsr_safetensors_close(file);
  tsr_tensor_release(t);
}

static void expect_error(tsr_status status, const char *needle1, const char *needle2) {
  assert_int_not_equal(status, TSR_OK);
  const char *message = tsr_last_error();
  if (strstr(message, needle1) == NULL || (needle2 && strstr(message, needle2) == NULL)) {
    fail_msg("message \"%s\" lacks \"%s\" or \"%s\"", message, needle1, needle2 ? needle2 : "");
  }
}

static void test_save_refuses_bad_arguments_and_keeps_the_old_file(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "keep.safetensors");
  tsr_tensor *t = pattern(TSR_FLOAT32, 1, (int64_t[]){5});
  tsr_named_tensor good[1] = {{"a", t}};
  TS_OK(tsr_safetensors_save(path, 1, good, 0, NULL, NULL));
  size_t size0;
  void *before = file_read(path, &size0);

  tsr_named_tensor dup[2] = {{"a", t}, {"a", t}};
  expect_error(tsr_safetensors_save(path, 2, dup, 0, NULL, NULL), path, "twice");
  tsr_named_tensor reserved[1] = {{"__metadata__", t}};
  expect_error(tsr_safetensors_save(path, 1, reserved, 0, NULL, NULL), path, "__metadata__");
  tsr_named_tensor bad_utf8[1] = {{"\xff\xfe", t}};
  expect_error(tsr_safetensors_save(path, 1, bad_utf8, 0, NULL, NULL), path, "UTF-8");
  tsr_named_tensor null_tensor[1] = {{"a", NULL}};
  expect_error(tsr_safetensors_save(path, 1, null_tensor, 0, NULL, NULL), path, "NULL");
  const char *keys[2] = {"k", "k"}, *values[2] = {"1", "2"};
  expect_error(tsr_safetensors_save(path, 1, good, 2, keys, values), path, "twice");
  assert_int_equal(tsr_safetensors_save(NULL, 1, good, 0, NULL, NULL), TSR_INVALID_ARGUMENT);
  // A folder at the path: the rename fails, the temporary is removed.
  char folder[300];
  path_make(folder, sizeof(folder), "a_folder");
  assert_int_equal(mkdir(folder, 0755), 0);
  expect_error(tsr_safetensors_save(folder, 1, good, 0, NULL, NULL), folder, "rename");
  // A missing folder.
  char missing[300];
  path_make(missing, sizeof(missing), "no/such/folder/x.safetensors");
  expect_error(tsr_safetensors_save(missing, 1, good, 0, NULL, NULL), missing, "cannot create");

  size_t size1;
  void *after = file_read(path, &size1);
  assert_int_equal(size0, size1);
  assert_memory_equal(before, after, size0);
  free(before);
  free(after);
  DIR *d = opendir(g_dir);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strstr(e->d_name, ".tmp.") != NULL)
      fail_msg("temporary %s left behind", e->d_name);
  }
  closedir(d);
  tsr_tensor_release(t);
}

// A file of header text |json| and |data_bytes| zero bytes of data.
static void write_raw(const char *path, const char *json, size_t data_bytes, uint64_t length) {
  size_t n = strlen(json);
  size_t size = 8 + n + data_bytes;
  uint8_t *buf = calloc(1, size);
  uint64_t len = length ? length : n;
  for (int i = 0; i < 8; ++i) buf[i] = (uint8_t)(len >> (8 * i));
  memcpy(buf + 8, json, n);
  file_write(path, buf, size);
  free(buf);
}

static void expect_open_fails(const char *path, const char *needle) {
  tsr_safetensors *file = (tsr_safetensors *)(uintptr_t)1;
  tsr_status status = tsr_safetensors_open(path, &file);
  assert_null(file);
  expect_error(status, path, needle);
}

static void test_corrupt_files_are_refused_naming_the_file(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "corrupt.safetensors");
  expect_open_fails(path, "No such file");  // missing
  file_write(path, "", 0);
  expect_open_fails(path, "shorter than");  // empty
  file_write(path, "\x10\0\0", 3);
  expect_open_fails(path, "shorter than");

  // Truncated: a valid file cut before its end.
  tsr_tensor *t = pattern(TSR_FLOAT32, 1, (int64_t[]){16});
  tsr_named_tensor named[1] = {{"a", t}};
  TS_OK(tsr_safetensors_save(path, 1, named, 0, NULL, NULL));
  size_t size;
  uint8_t *whole = file_read(path, &size);
  file_write(path, whole, size - 4);
  expect_open_fails(path, "run past");  // data shorter than the offsets
  file_write(path, whole, 20);
  expect_open_fails(path, "header length");  // header cut
  free(whole);

  const char *valid = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  write_raw(path, valid, 8, 0);
  tsr_safetensors *file = NULL;
  TS_OK(tsr_safetensors_open(path, &file));  // the control case opens
  tsr_safetensors_close(file);
  write_raw(path, valid, 8, 1u << 20);
  expect_open_fails(path, "header length");
  write_raw(path, valid, 8, (uint64_t)1 << 62);
  expect_open_fails(path, "header length");

  static const struct {
    const char *json;
    size_t data;
    const char *needle;
  } cases[] = {
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "expected"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", 8, "expected"},
      {"[1,2]    ", 0, "start with"},
      {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "dtype"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
       12, "overlap"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 8, "run past"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "shape and dtype"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,8]}}", 8,
       "overflows"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
       16, "twice"},
      {"{\"\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "UTF-8"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "integer"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, "fraction"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8,
       "unknown field"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8, "after the header"},
      {"{\"__metadata__\":{\"k\":1}}", 0, "not a string"},
      {"{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "surrogate"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8,
       "more than 8"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12,
       "belong to no tensor"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    write_raw(path, cases[i].json, cases[i].data, 0);
    expect_open_fails(path, cases[i].needle);
  }

  // A BOOL byte other than 0 or 1 opens but refuses to become a tensor.
  const char *bools = "{\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}";
  size_t n = strlen(bools);
  uint8_t buf[128] = {0};
  buf[0] = (uint8_t)n;
  memcpy(buf + 8, bools, n);
  buf[8 + n] = 1;
  buf[8 + n + 1] = 2;
  file_write(path, buf, 8 + n + 2);
  TS_OK(tsr_safetensors_open(path, &file));
  assert_null(tsr_safetensors_tensor(file, "b", g_device));
  expect_error(tsr_last_status(), path, "BOOL");
  tsr_safetensors_close(file);
  tsr_tensor_release(t);
}

// --- checkpoints ------------------------------------------------------------------

static tsr_module *mlp(uint64_t seed, int64_t hidden) {
  TS_OK(tsr_context_seed_set(g_context, seed));
  tsr_module *layers[3] = {tsr_nn_linear(g_device, 4, hidden, 1), tsr_nn_relu(),
                           tsr_nn_linear(g_device, hidden, 3, 1)};
  tsr_module *m = tsr_nn_sequential(3, layers);
  assert_non_null(m);
  return m;
}

static void train_step(tsr_module *m, tsr_optimizer *opt, tsr_tensor *x, tsr_tensor *y) {
  size_t mark = tsr_scope_begin();
  tsr_optimizer_zero_grad(opt);
  tsr_tensor *out = tsr_module_forward(m, x);
  assert_non_null(out);
  tsr_tensor *loss = tsr_nn_mse_loss(out, y, TSR_REDUCTION_MEAN);
  assert_non_null(loss);
  TS_OK(tsr_backward(loss, NULL, 0));
  TS_OK(tsr_optimizer_step(opt));
  tsr_scope_end(mark);
}

static void expect_same_parameters(const tsr_module *a, const tsr_module *b) {
  assert_int_equal(tsr_module_parameter_count(a), tsr_module_parameter_count(b));
  for (int32_t i = 0; i < tsr_module_parameter_count(a); ++i) {
    const char *na, *nb;
    tsr_tensor *ta, *tb;
    TS_OK(tsr_module_parameter_get(a, i, &na, &ta));
    TS_OK(tsr_module_parameter_get(b, i, &nb, &tb));
    assert_string_equal(na, nb);
    expect_same_tensor(ta, tb);
  }
}

static void data_make(tsr_tensor **x, tsr_tensor **y) {
  double xv[5 * 4], yv[5 * 3];
  for (int i = 0; i < 20; ++i) xv[i] = sin(i * 0.7);
  for (int i = 0; i < 15; ++i) yv[i] = cos(i * 0.3);
  *x = ts_tensor(g_device, TSR_FLOAT32, 2, (int64_t[]){5, 4}, xv);
  *y = ts_tensor(g_device, TSR_FLOAT32, 2, (int64_t[]){5, 3}, yv);
}

static int has_entry(const tsr_safetensors *file, const char *wanted) {
  for (int32_t i = 0; i < tsr_safetensors_count(file); ++i) {
    const char *name;
    TS_OK(tsr_safetensors_entry_get(file, i, &name, NULL, NULL, NULL));
    if (strcmp(name, wanted) == 0)
      return 1;
  }
  return 0;
}

static void test_checkpoint_resumes_bit_for_bit(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "ckpt.safetensors");
  tsr_tensor *x, *y;
  data_make(&x, &y);
  tsr_module *model = mlp(1, 8);
  tsr_adam_options options;
  tsr_adam_options_init(&options);
  options.lr = 0.01;
  tsr_optimizer *opt = tsr_optim_adam_for_module(model, &options);
  assert_non_null(opt);
  train_step(model, opt, x, y);
  train_step(model, opt, x, y);
  TS_OK(tsr_optimizer_lr_set(opt, 0.0123456789));
  const char *keys[1] = {"epoch"}, *values[1] = {"7"};
  TS_OK(tsr_checkpoint_save(path, model, opt, 1, keys, values));
  train_step(model, opt, x, y);  // the original continues

  tsr_module *fresh = mlp(99, 8);
  tsr_optimizer *fresh_opt = tsr_optim_adam_for_module(fresh, NULL);
  assert_non_null(fresh_opt);
  tsr_safetensors *file = NULL;
  TS_OK(tsr_checkpoint_load(path, fresh, fresh_opt, &file));
  assert_non_null(file);
  assert_string_equal(tsr_safetensors_metadata(file, "epoch"), "7");
  assert_string_equal(tsr_safetensors_metadata(file, "optim.step"), "2");
  assert_non_null(tsr_safetensors_metadata(file, "optim.lr"));
  // Parameters then optimizer state, under their names.
  const char *name;
  TS_OK(tsr_safetensors_entry_get(file, 0, &name, NULL, NULL, NULL));
  assert_string_equal(name, "0.weight");
  assert_true(has_entry(file, "optim.0.weight.exp_avg"));
  assert_true(has_entry(file, "optim.2.bias.exp_avg_sq"));
  tsr_safetensors_close(file);
  assert_int_equal(tsr_optimizer_step_count(fresh_opt), 2);
  assert_true(tsr_optimizer_lr(fresh_opt) == 0.0123456789);
  train_step(fresh, fresh_opt, x, y);
  expect_same_parameters(model, fresh);
  assert_int_equal(tsr_context_status(g_context), TSR_OK);

  tsr_optimizer_destroy(fresh_opt);
  tsr_module_destroy(fresh);
  tsr_optimizer_destroy(opt);
  tsr_module_destroy(model);
  tsr_tensor_release(x);
  tsr_tensor_release(y);
}

// Snapshot of every parameter's bytes, to show that a refused load changed
// nothing.
typedef struct param_snapshot {
  int32_t count;
  void *bytes[16];
  size_t sizes[16];
} param_snapshot;

static void snapshot_take(const tsr_module *m, param_snapshot *s) {
  s->count = tsr_module_parameter_count(m);
  assert_true(s->count <= 16);
  for (int32_t i = 0; i < s->count; ++i) {
    const char *name;
    tsr_tensor *t;
    TS_OK(tsr_module_parameter_get(m, i, &name, &t));
    s->bytes[i] = tensor_bytes(t, &s->sizes[i]);
  }
}

static void snapshot_expect_unchanged(const tsr_module *m, param_snapshot *s) {
  param_snapshot now;
  snapshot_take(m, &now);
  assert_int_equal(now.count, s->count);
  for (int32_t i = 0; i < s->count; ++i) {
    assert_int_equal(now.sizes[i], s->sizes[i]);
    assert_memory_equal(now.bytes[i], s->bytes[i], s->sizes[i]);
    free(now.bytes[i]);
    free(s->bytes[i]);
  }
}

static void test_mismatched_checkpoints_are_refused_and_change_nothing(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "mismatch.safetensors");
  tsr_tensor *x, *y;
  data_make(&x, &y);
  tsr_module *model = mlp(1, 8);
  tsr_optimizer *opt = tsr_optim_adam_for_module(model, NULL);
  train_step(model, opt, x, y);
  TS_OK(tsr_checkpoint_save(path, model, opt, 0, NULL, NULL));

  // Another hidden size: sizes named.
  tsr_module *wider = mlp(2, 9);
  tsr_optimizer *wider_opt = tsr_optim_adam_for_module(wider, NULL);
  param_snapshot snap;
  snapshot_take(wider, &snap);
  expect_error(tsr_checkpoint_load(path, wider, wider_opt, NULL), path,
               "parameter '0.weight' has sizes [8, 4] in the file, [9, 4] in the model");
  snapshot_expect_unchanged(wider, &snap);
  assert_int_equal(tsr_optimizer_step_count(wider_opt), 0);
  assert_int_equal(tsr_optimizer_state_count(wider_opt), 0);

  // A model with one more layer: missing; one layer fewer: unexpected.
  TS_OK(tsr_context_seed_set(g_context, 3));
  tsr_module *deeper_layers[4] = {tsr_nn_linear(g_device, 4, 8, 1), tsr_nn_relu(),
                                  tsr_nn_linear(g_device, 8, 3, 1),
                                  tsr_nn_linear(g_device, 3, 3, 1)};
  tsr_module *deeper = tsr_nn_sequential(4, deeper_layers);
  snapshot_take(deeper, &snap);
  expect_error(tsr_checkpoint_load(path, deeper, NULL, NULL), path,
               "parameter '3.weight' is missing");
  snapshot_expect_unchanged(deeper, &snap);
  tsr_module *shallow_layers[1] = {tsr_nn_linear(g_device, 4, 8, 1)};
  tsr_module *shallow = tsr_nn_sequential(1, shallow_layers);
  snapshot_take(shallow, &snap);
  expect_error(tsr_checkpoint_load(path, shallow, NULL, NULL), path, "'2.weight'");
  snapshot_expect_unchanged(shallow, &snap);

  // Same shapes, another optimizer kind: Adam's state does not fit SGD.
  tsr_module *same = mlp(4, 8);
  tsr_sgd_options sgd;
  tsr_sgd_options_init(&sgd);
  sgd.momentum = 0.9;
  tsr_optimizer *sgd_opt = tsr_optim_sgd_for_module(same, &sgd);
  snapshot_take(same, &snap);
  expect_error(tsr_checkpoint_load(path, same, sgd_opt, NULL), path, "0.weight.exp_avg");
  snapshot_expect_unchanged(same, &snap);
  assert_int_equal(tsr_optimizer_state_count(sgd_opt), 0);
  assert_int_equal(tsr_context_status(g_context), TSR_OK);  // the probe left no sticky error
  // The model alone loads from a training checkpoint.
  TS_OK(tsr_checkpoint_load(path, same, NULL, NULL));
  expect_same_parameters(model, same);

  // A checkpoint without optimizer into a model + optimizer: no optim.step.
  char bare[300];
  path_make(bare, sizeof(bare), "bare.safetensors");
  TS_OK(tsr_checkpoint_save(bare, model, NULL, 0, NULL, NULL));
  expect_error(tsr_checkpoint_load(bare, wider, wider_opt, NULL), bare, "sizes");
  tsr_optimizer *same_adam = tsr_optim_adam_for_module(same, NULL);
  expect_error(tsr_checkpoint_load(bare, same, same_adam, NULL), bare, "optim.step");
  // An optimizer that has state the file lacks is refused too.
  train_step(same, same_adam, x, y);
  snapshot_take(same, &snap);
  expect_error(tsr_checkpoint_load(bare, same, same_adam, NULL), bare, "missing");
  snapshot_expect_unchanged(same, &snap);
  // Reserved metadata and bad arguments.
  const char *keys[1] = {"optim.step"}, *values[1] = {"3"};
  expect_error(tsr_checkpoint_save(bare, model, opt, 1, keys, values), bare, "reserved");
  assert_int_equal(tsr_checkpoint_save(bare, NULL, NULL, 0, NULL, NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_checkpoint_load(NULL, model, NULL, NULL), TSR_INVALID_ARGUMENT);
  char missing[300];
  path_make(missing, sizeof(missing), "absent.safetensors");
  expect_error(tsr_checkpoint_load(missing, model, NULL, NULL), missing, "cannot open");

  tsr_optimizer_destroy(same_adam);
  tsr_optimizer_destroy(sgd_opt);
  tsr_module_destroy(same);
  tsr_module_destroy(shallow);
  tsr_module_destroy(deeper);
  tsr_optimizer_destroy(wider_opt);
  tsr_module_destroy(wider);
  tsr_optimizer_destroy(opt);
  tsr_module_destroy(model);
  tsr_tensor_release(x);
  tsr_tensor_release(y);
}

static void test_checkpoint_keeps_buffers(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "bn.safetensors");
  tsr_module *bn = tsr_nn_batch_norm2d(g_device, 3, 1e-5, 0.1);
  assert_non_null(bn);
  // Running statistics after one training-mode forward.
  double xv[2 * 3 * 2 * 2];
  for (int i = 0; i < 24; ++i) xv[i] = i * 0.25 - 2;
  tsr_tensor *x = ts_tensor(g_device, TSR_FLOAT32, 4, (int64_t[]){2, 3, 2, 2}, xv);
  tsr_tensor *out = tsr_module_forward(bn, x);
  assert_non_null(out);
  tsr_tensor_release(out);
  TS_OK(tsr_checkpoint_save(path, bn, NULL, 0, NULL, NULL));
  tsr_module *fresh = tsr_nn_batch_norm2d(g_device, 3, 1e-5, 0.1);
  TS_OK(tsr_checkpoint_load(path, fresh, NULL, NULL));
  assert_int_equal(tsr_module_buffer_count(bn), tsr_module_buffer_count(fresh));
  for (int32_t i = 0; i < tsr_module_buffer_count(bn); ++i) {
    const char *na, *nb;
    tsr_tensor *ta, *tb;
    TS_OK(tsr_module_buffer_get(bn, i, &na, &ta));
    TS_OK(tsr_module_buffer_get(fresh, i, &nb, &tb));
    assert_string_equal(na, nb);
    expect_same_tensor(ta, tb);
  }
  tsr_tensor_release(x);
  tsr_module_destroy(fresh);
  tsr_module_destroy(bn);
}

// --- the kill test ----------------------------------------------------------------

// The writer: about 4 MB of parameters, every element equal to the version.
static tsr_module *kill_model(tsr_device *device) {
  tsr_module *layers[2] = {tsr_nn_linear(device, 512, 1024, 1),
                           tsr_nn_linear(device, 1024, 512, 1)};
  return tsr_nn_sequential(2, layers);
}

static int kill_model_fill(tsr_module *m, double version) {
  int grad_mode = tsr_grad_mode_set(0);
  for (int32_t i = 0; i < tsr_module_parameter_count(m); ++i) {
    const char *name;
    tsr_tensor *t;
    if (tsr_module_parameter_get(m, i, &name, &t) != TSR_OK || tsr_fill_(t, version) != TSR_OK) {
      tsr_grad_mode_set(grad_mode);
      return 1;
    }
  }
  tsr_grad_mode_set(grad_mode);
  return 0;
}

static int kill_save(tsr_module *m, const char *path, long version) {
  char v[32];
  snprintf(v, sizeof(v), "%ld", version);
  const char *keys[1] = {"version"}, *values[1] = {v};
  if (kill_model_fill(m, (double)version) != 0)
    return 1;
  return tsr_checkpoint_save(path, m, NULL, 1, keys, values) != TSR_OK;
}

// Runs in the child (the test binary exec'd again): saves versions base+1,
// base+2, ... and reports each completed one on |fd| until killed.
static int kill_writer_main(const char *path, int fd, long base) {
  tsr_context *context = ts_context_create(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE);
  if (context == NULL)
    return 2;
  tsr_module *m = kill_model(tsr_context_default_device(context));
  if (m == NULL)
    return 2;
  long ready = -1;
  if (write(fd, &ready, sizeof(ready)) != sizeof(ready))
    return 2;
  for (long v = base + 1;; ++v) {
    if (kill_save(m, path, v) != 0) {
      fprintf(stderr, "kill writer: %s\n", tsr_last_error());
      return 3;
    }
    if (write(fd, &v, sizeof(v)) != sizeof(v))
      return 2;
  }
}

// Loads |path| into |m| and returns its version after checking that every
// parameter element equals it.
static long kill_verify(tsr_module *m, const char *path) {
  tsr_safetensors *file = NULL;
  tsr_status status = tsr_checkpoint_load(path, m, NULL, &file);
  if (status != TSR_OK)
    fail_msg("checkpoint after a kill does not load: %s", tsr_last_error());
  const char *v = tsr_safetensors_metadata(file, "version");
  assert_non_null(v);
  long version = strtol(v, NULL, 10);
  tsr_safetensors_close(file);
  for (int32_t i = 0; i < tsr_module_parameter_count(m); ++i) {
    const char *name;
    tsr_tensor *t;
    TS_OK(tsr_module_parameter_get(m, i, &name, &t));
    size_t bytes;
    float *data = tensor_bytes(t, &bytes);
    for (size_t k = 0; k < bytes / sizeof(float); ++k) {
      if (data[k] != (float)version) {
        fail_msg("%s element %zu is %g in a checkpoint of version %ld", name, k, data[k], version);
      }
    }
    free(data);
  }
  return version;
}

static void test_killed_writer_leaves_a_complete_checkpoint(void **state) {
  (void)state;
  char path[300];
  path_make(path, sizeof(path), "killed.safetensors");
  tsr_module *m = kill_model(g_device);
  assert_non_null(m);
  assert_int_equal(kill_save(m, path, 0), 0);  // the previous checkpoint
  long last_complete = 0;
  int killed_mid_run = 0;
  for (int run = 0; run < 10; ++run) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    long base = (run + 1) * 1000L;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      char fd_arg[16], base_arg[32];
      snprintf(fd_arg, sizeof(fd_arg), "%d", fds[1]);
      snprintf(base_arg, sizeof(base_arg), "%ld", base);
      execl("/proc/self/exe", "test_io", "--kill-writer", path, fd_arg, base_arg, (char *)NULL);
      _exit(127);
    }
    close(fds[1]);
    long msg = 0;
    assert_int_equal(read(fds[0], &msg, sizeof(msg)), sizeof(msg));
    assert_int_equal(msg, -1);  // ready
    // Kills land at different points of the writes (one takes some 10 to
    // 50 ms: 4 MB and two fsyncs).
    static const long delays_ms[10] = {1, 5, 10, 20, 30, 45, 60, 80, 110, 150};
    struct timespec delay = {0, delays_ms[run] * 1000000L};
    nanosleep(&delay, NULL);
    kill(pid, SIGKILL);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    long reported = last_complete;
    while (read(fds[0], &msg, sizeof(msg)) == sizeof(msg)) reported = msg;
    close(fds[0]);
    long version = kill_verify(m, path);
    // The last version reported, or the next one when the kill came after
    // its rename but before the report.
    long next = reported == last_complete ? base + 1 : reported + 1;
    if (version != reported && version != next) {
      fail_msg("run %d: the file has version %ld; the last complete was %ld", run, version,
               reported);
    }
    killed_mid_run += version == reported;
    last_complete = version;
  }
  // Temporaries of killed writers are allowed to remain; count and remove them.
  int leftovers = 0;
  DIR *d = opendir(g_dir);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "killed.safetensors.tmp.", 23) == 0) {
      char tmp[600];
      snprintf(tmp, sizeof(tmp), "%s/%s", g_dir, e->d_name);
      unlink(tmp);
      ++leftovers;
    }
  }
  closedir(d);
  printf(
      "kill test: 10 writers killed, %d of them between a write's start and its rename; %d left a "
      "temporary; last version %ld\n",
      killed_mid_run, leftovers, last_complete);
  tsr_module_destroy(m);
}

// --- DLPack -----------------------------------------------------------------------

static void test_dlpack_export_shares_storage(void **state) {
  (void)state;
  tsr_device_props props = {.struct_size = sizeof(props)};
  TS_OK(tsr_device_props_get(g_device, &props));
  assert_true(props.flags & TSR_DEVICE_HOST_ACCESSIBLE);
  const int64_t sizes[2] = {3, 4};
  tsr_tensor *base = pattern(TSR_FLOAT32, 2, sizes);
  tsr_tensor *transposed = tsr_transpose(base, 0, 1);
  tsr_tensor *view = tsr_slice(transposed, 0, 1, 4, 1);  // [3, 3], strided
  assert_non_null(view);
  DLManagedTensor *managed = NULL;
  TS_OK(tsr_dlpack_export(view, &managed));
  DLTensor *t = &managed->dl_tensor;
  assert_int_equal(t->device.device_type, kDLCPU);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->dtype.code, kDLFloat);
  assert_int_equal(t->dtype.bits, 32);
  assert_int_equal(t->dtype.lanes, 1);
  assert_int_equal(t->shape[0], 3);
  assert_int_equal(t->shape[1], 3);
  assert_int_equal(t->strides[0], 1);
  assert_int_equal(t->strides[1], 4);
  // Element (i, j) of the view is base (j, i + 1) = ((j*4 + i + 1) % 7) - 3.
  const float *data = (const float *)((const char *)t->data + t->byte_offset);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      assert_true(data[i * t->strides[0] + j * t->strides[1]] == (float)((j * 4 + i + 1) % 7 - 3));
    }
  }
  // Shared: a write through Tessera shows through the DLPack pointer, and the
  // storage outlives the tensors until the deleter.
  TS_OK(tsr_fill_(base, 5.0));
  tsr_tensor_release(view);
  tsr_tensor_release(transposed);
  tsr_tensor_release(base);
  assert_true(data[0] == 5.0f);
  // Import copies onto the device; the deleter runs at once.
  tsr_tensor *back = tsr_dlpack_import(managed, g_device);
  assert_non_null(back);
  float got[9];
  TS_OK(tsr_tensor_to_host(back, got, sizeof(got)));
  for (int i = 0; i < 9; ++i) assert_true(got[i] == 5.0f);
  tsr_tensor_release(back);

  // Every dtype round trips through export and import.
  for (tsr_dtype_t d = 0; d < TSR_DTYPE_COUNT; ++d) {
    if (!device_stores(d))
      continue;
    tsr_tensor *x = pattern(d, 2, sizes);
    TS_OK(tsr_dlpack_export(x, &managed));
    tsr_tensor *y = tsr_dlpack_import(managed, g_device);
    assert_non_null(y);
    expect_same_tensor(x, y);
    tsr_tensor_release(x);
    tsr_tensor_release(y);
  }
}

static int g_deleter_calls;
static void count_deleter(DLManagedTensor *self) {
  (void)self;
  ++g_deleter_calls;
}

static void test_dlpack_import_any_strides_and_refusals(void **state) {
  (void)state;
  // A foreign [2, 3] int64 tensor, column-major, with a byte offset.
  int64_t storage[1 + 6] = {-99, 0, 3, 1, 4, 2, 5};  // element (i, j) = i * 3 + j
  int64_t shape[2] = {2, 3}, strides[2] = {1, 2};
  DLManagedTensor m = {
      {storage, {kDLCPU, 0}, 2, {kDLInt, 64, 1}, shape, strides, 8}, NULL, count_deleter};
  g_deleter_calls = 0;
  tsr_tensor *t = tsr_dlpack_import(&m, g_device);
  assert_non_null(t);
  assert_int_equal(g_deleter_calls, 1);
  int64_t got[6];
  TS_OK(tsr_tensor_to_host(t, got, sizeof(got)));
  for (int i = 0; i < 6; ++i) assert_int_equal(got[i], i);
  tsr_tensor_release(t);
  // NULL strides: row-major; bool bytes normalised; a scalar.
  uint8_t bools[4] = {0, 7, 1, 0};
  int64_t bshape[1] = {4};
  DLManagedTensor b = {{bools, {kDLCPU, 0}, 1, {kDLBool, 8, 1}, bshape, NULL, 0}, NULL, NULL};
  t = tsr_dlpack_import(&b, g_device);
  assert_non_null(t);
  uint8_t bgot[4];
  TS_OK(tsr_tensor_to_host(t, bgot, sizeof(bgot)));
  assert_int_equal(bgot[1], 1);
  assert_int_equal(bgot[2], 1);
  assert_int_equal(bgot[3], 0);
  tsr_tensor_release(t);
  double scalar = 2.5;
  DLManagedTensor s = {{&scalar, {kDLCPU, 0}, 0, {kDLFloat, 64, 1}, NULL, NULL, 0}, NULL, NULL};
  t = tsr_dlpack_import(&s, g_device);
  assert_non_null(t);
  assert_int_equal(tsr_tensor_rank(t), 0);
  tsr_tensor_release(t);

  // Refusals leave the producer's tensor alone (no deleter call).
  g_deleter_calls = 0;
  m.dl_tensor.device.device_type = kDLCUDA;
  assert_null(tsr_dlpack_import(&m, g_device));
  assert_non_null(strstr(tsr_last_error(), "kDLCPU"));
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.dtype.lanes = 4;
  assert_null(tsr_dlpack_import(&m, g_device));
  m.dl_tensor.dtype = (DLDataType){kDLUInt, 8, 1};
  assert_null(tsr_dlpack_import(&m, g_device));
  m.dl_tensor.dtype = (DLDataType){kDLInt, 64, 1};
  m.dl_tensor.ndim = 9;
  assert_null(tsr_dlpack_import(&m, g_device));
  m.dl_tensor.ndim = 2;
  shape[0] = -1;
  assert_null(tsr_dlpack_import(&m, g_device));
  // Strides whose reach overflows 64-bit offsets: refused before any read
  // (the copy's offset arithmetic used to overflow and read anywhere).
  shape[0] = 3;
  int64_t wild[2] = {INT64_MAX / 2, 1};
  int64_t *saved_strides = m.dl_tensor.strides;
  m.dl_tensor.strides = wild;
  assert_null(tsr_dlpack_import(&m, g_device));
  assert_non_null(strstr(tsr_last_error(), "strides reach past 64-bit offsets"));
  m.dl_tensor.strides = saved_strides;
  assert_int_equal(g_deleter_calls, 0);
  assert_null(tsr_dlpack_import(NULL, g_device));
  assert_int_equal(tsr_dlpack_export(NULL, NULL), TSR_INVALID_ARGUMENT);
  tsr_context_error_clear(g_context);
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "--kill-writer") == 0) {
    return kill_writer_main(argv[2], atoi(argv[3]), strtol(argv[4], NULL, 10));
  }
  // One test by name (for a sanitizer's report about one of them).
  if (argc == 2)
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_every_dtype),
      cmocka_unit_test(test_strided_views_are_stored_row_major),
      cmocka_unit_test(test_metadata_round_trips),
      cmocka_unit_test(test_save_refuses_bad_arguments_and_keeps_the_old_file),
      cmocka_unit_test(test_corrupt_files_are_refused_naming_the_file),
      cmocka_unit_test(test_checkpoint_resumes_bit_for_bit),
      cmocka_unit_test(test_mismatched_checkpoints_are_refused_and_change_nothing),
      cmocka_unit_test(test_checkpoint_keeps_buffers),
      cmocka_unit_test(test_killed_writer_leaves_a_complete_checkpoint),
      cmocka_unit_test(test_dlpack_export_shares_storage),
      cmocka_unit_test(test_dlpack_import_any_strides_and_refusals),
  };
  return cmocka_run_group_tests_name(TSR_TEST_DEVICE, tests, group_setup, group_teardown);
}
