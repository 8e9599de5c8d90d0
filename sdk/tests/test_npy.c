// NumPy files (tessera/io.h): .npy of every supported dtype and format
// version read exactly, .npz stored and deflated, and hostile files
// (truncated, lying headers, huge shapes, bad zip directories, zip bombs,
// FIFOs) refused with a message naming the file. Files are written here by
// hand, into a temporary folder.
//
// Compile definitions: TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, TSR_TEST_REF_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tessera/tessera.h"
#include "test_support.h"

static tsr_context *g_context;
static tsr_device *g_device;
static char g_dir[256];

static int group_setup(void **state) {
  (void)state;
  snprintf(g_dir, sizeof(g_dir), "%s/tsr_test_npy_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(g_dir) == NULL)
    return -1;
  return ts_device_open(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, &g_context, &g_device);
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  DIR *dir = opendir(g_dir);
  if (dir != NULL) {
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      char path[512];
      snprintf(path, sizeof(path), "%s/%s", g_dir, e->d_name);
      if (rmdir(path) != 0)
        unlink(path);
    }
    closedir(dir);
  }
  rmdir(g_dir);
  return 0;
}

static const char *tmp_path(const char *name) {
  static char paths[16][512];
  static int next;
  char *p = paths[next++ % 16];
  snprintf(p, 512, "%s/%s", g_dir, name);
  return p;
}

static void write_file(const char *path, const uint8_t *bytes, size_t size) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (size > 0)
    assert_int_equal(fwrite(bytes, 1, size, f), size);
  assert_int_equal(fclose(f), 0);
}

typedef struct buf {
  uint8_t data[1 << 16];
  size_t size;
} buf;

static void put(buf *b, const void *p, size_t n) {
  assert_true(b->size + n <= sizeof(b->data));
  if (n > 0)
    memcpy(b->data + b->size, p, n);
  b->size += n;
}
static void put16(buf *b, uint32_t v) {
  uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  put(b, x, 2);
}
static void put32(buf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  put(b, x, 4);
}

// A .npy image of |version| with header dict |dict| (padded as numpy pads)
// and |n| payload bytes.
static void npy_image(buf *b, int version, const char *dict, const void *payload, size_t n) {
  b->size = 0;
  size_t prefix = version == 1 ? 10 : 12;
  size_t len = strlen(dict) + 1;
  size_t pad = (64 - (prefix + len) % 64) % 64;
  put(b, "\x93NUMPY", 6);
  uint8_t v[2] = {(uint8_t)version, 0};
  put(b, v, 2);
  if (version == 1)
    put16(b, (uint32_t)(len + pad));
  else
    put32(b, (uint32_t)(len + pad));
  put(b, dict, strlen(dict));
  for (size_t i = 0; i < pad; ++i) put(b, " ", 1);
  put(b, "\n", 1);
  put(b, payload, n);
}

static const char *write_npy(const char *name, int version, const char *dict, const void *payload,
                             size_t n) {
  static buf b;
  npy_image(&b, version, dict, payload, n);
  const char *path = tmp_path(name);
  write_file(path, b.data, b.size);
  return path;
}

// Loads |path| and checks it is |dtype| [sizes] with |bytes| of values.
static void expect_npy(const char *path, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                       const void *values, size_t bytes) {
  tsr_tensor *t = NULL;
  tsr_status status = tsr_npy_load(path, g_device, &t);
  if (status != TSR_OK)
    fail_msg("%s: %s", path, tsr_last_error());
  assert_int_equal(tsr_tensor_dtype(t), dtype);
  assert_int_equal(tsr_tensor_rank(t), rank);
  for (int32_t d = 0; d < rank; ++d) assert_int_equal(tsr_tensor_sizes(t)[d], sizes[d]);
  uint8_t got[256];
  assert_true(bytes <= sizeof(got));
  assert_int_equal(tsr_tensor_to_host(t, got, bytes), TSR_OK);
  if (bytes > 0)
    assert_memory_equal(got, values, bytes);
  tsr_tensor_release(t);
}

static void test_npy_reads_every_dtype_and_version(void **state) {
  (void)state;
  const float f4[6] = {0.0f, 1.5f, -2.0f, 3.25f, 4.0f, -0.0f};
  const int64_t s23[2] = {2, 3};
  for (int version = 1; version <= 3; ++version) {
    expect_npy(
        write_npy("f4.npy", version, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                  f4, sizeof(f4)),
        TSR_FLOAT32, 2, s23, f4, sizeof(f4));
  }
  const double f8[3] = {1e300, -1.0, 0.125};
  const int64_t s3[1] = {3};
  expect_npy(write_npy("f8.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", f8,
                       sizeof(f8)),
             TSR_FLOAT64, 1, s3, f8, sizeof(f8));
  const int32_t i4[3] = {-7, 0, 2147483647};
  expect_npy(
      write_npy("i4.npy", 2, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (3,)}", i4,
                sizeof(i4)),
      TSR_INT32, 1, s3, i4, sizeof(i4));
  const int64_t i8[3] = {INT64_MIN, 1, (int64_t)1 << 40};
  expect_npy(write_npy("i8.npy", 3, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", i8,
                       sizeof(i8)),
             TSR_INT64, 1, s3, i8, sizeof(i8));
  const uint8_t b1[3] = {1, 0, 1};
  expect_npy(write_npy("b1.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b1,
                       sizeof(b1)),
             TSR_BOOL, 1, s3, b1, sizeof(b1));
  // |u1 widens to int32 (lossless; images convert with a cast or a transform).
  const uint8_t u1[3] = {0, 128, 255};
  const int32_t u1_as_i4[3] = {0, 128, 255};
  expect_npy(write_npy("u1.npy", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", u1,
                       sizeof(u1)),
             TSR_INT32, 1, s3, u1_as_i4, sizeof(u1_as_i4));
  const uint16_t f2[3] = {0x3c00, 0xc000, 0x7bff};  // 1, -2, 65504
  expect_npy(write_npy("f2.npy", 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", f2,
                       sizeof(f2)),
             TSR_FLOAT16, 1, s3, f2, sizeof(f2));
  // A scalar, and an empty array.
  const double scalar = 42.5;
  expect_npy(write_npy("scalar.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                       &scalar, sizeof(scalar)),
             TSR_FLOAT64, 0, NULL, &scalar, sizeof(scalar));
  const int64_t s03[2] = {0, 3};
  expect_npy(write_npy("empty.npy", 1,
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", NULL, 0),
             TSR_FLOAT32, 2, s03, NULL, 0);
}

// Expects |status| to fail with a message that names |path| and holds |text|.
static void expect_refused(tsr_status status, const char *path, const char *text) {
  if (status == TSR_OK)
    fail_msg("%s was accepted; expected '%s'", path, text);
  const char *message = tsr_last_error();
  if (strstr(message, path) == NULL || strstr(message, text) == NULL)
    fail_msg("message '%s' should name %s and say '%s'", message, path, text);
}

static void expect_npy_refused(const char *path, const char *text) {
  tsr_tensor *t = (tsr_tensor *)&t;
  expect_refused(tsr_npy_load(path, g_device, &t), path, text);
  assert_null(t);
}

static void test_npy_hostile_files_fail_with_a_message(void **state) {
  (void)state;
  const float f4[6] = {0};
  const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  buf b;
  npy_image(&b, 1, ok, f4, sizeof(f4));
  const char *path = tmp_path("truncated.npy");
  write_file(path, b.data, b.size - 1);
  expect_npy_refused(path, "truncated");
  write_file(path, b.data, 9);
  expect_npy_refused(path, "magic");
  // A header length beyond the file.
  buf lie = b;
  lie.data[8] = 0xff;
  lie.data[9] = 0x7f;
  write_file(path, lie.data, lie.size);
  expect_npy_refused(path, "truncated");
  expect_npy_refused(
      write_npy("lying.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", f4,
                sizeof(f4)),
      "lying header");
  expect_npy_refused(write_npy("huge.npy", 1,
                               "{'descr': '<f8', 'fortran_order': False, "
                               "'shape': (4294967296, 4294967296, 4294967296), }",
                               f4, sizeof(f4)),
                     "overflows");
  expect_npy_refused(write_npy("bigdim.npy", 1,
                               "{'descr': '<f8', 'fortran_order': False, "
                               "'shape': (99999999999999999999999,), }",
                               f4, sizeof(f4)),
                     "overflows");
  expect_npy_refused(
      write_npy("fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f4,
                sizeof(f4)),
      "Fortran");
  expect_npy_refused(
      write_npy("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", f4,
                sizeof(f4)),
      "big-endian");
  expect_npy_refused(
      write_npy("c8.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", f4, 24),
      "not supported");
  expect_npy_refused(write_npy("struct.npy", 1,
                               "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }",
                               f4, sizeof(f4)),
                     "structured");
  expect_npy_refused(write_npy("nokey.npy", 1, "{'descr': '<f4', 'shape': (6,), }", f4, sizeof(f4)),
                     "missing 'fortran_order'");
  expect_npy_refused(
      write_npy("open.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,", f4,
                sizeof(f4)),
      "header");
  expect_npy_refused(write_npy("rank9.npy", 1,
                               "{'descr': '|b1', 'fortran_order': False, "
                               "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
                               f4, 1),
                     "dimensions");
  const uint8_t two[1] = {2};
  expect_npy_refused(write_npy("bool2.npy", 1,
                               "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", two, 1),
                     "not 0 or 1");
  npy_image(&b, 4, ok, f4, sizeof(f4));
  write_file(path, b.data, b.size);
  expect_npy_refused(path, "version 4");
  // Not regular files: a FIFO (must not block), a folder, a missing file.
  const char *fifo = tmp_path("fifo.npy");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  expect_npy_refused(fifo, "FIFO");
  const char *folder = tmp_path("folder.npy");
  assert_int_equal(mkdir(folder, 0700), 0);
  expect_npy_refused(folder, "folder");
  tsr_tensor *t = NULL;
  assert_int_equal(tsr_npy_load(tmp_path("missing.npy"), g_device, &t), TSR_NOT_FOUND);
  tsr_npz *z = (tsr_npz *)&z;
  expect_refused(tsr_npz_open(fifo, &z), fifo, "FIFO");
  assert_null(z);
}

// --- .npz ---------------------------------------------------------------------------

typedef struct zip_member {
  const char *name;
  const uint8_t *data;
  size_t size;
  int deflate;
  // Lies told by the directory, for hostile archives (0: the truth).
  uint32_t usize_lie, crc_xor;
} zip_member;

static size_t deflate_raw(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = (Bytef *)src;
  z.avail_in = (uInt)n;
  z.next_out = dst;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  size_t out = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static void zip_image(buf *b, const zip_member *members, int count) {
  static uint8_t packed[8][1 << 13];
  size_t csize[8];
  uint32_t offset[8];
  b->size = 0;
  for (int i = 0; i < count; ++i) {
    const zip_member *m = &members[i];
    csize[i] = m->deflate ? deflate_raw(m->data, m->size, packed[i], sizeof(packed[i])) : m->size;
    if (!m->deflate)
      memcpy(packed[i], m->data, m->size);
    offset[i] = (uint32_t)b->size;
    uint32_t crc = (uint32_t)crc32(0, m->data, (uInt)m->size);
    put32(b, 0x04034b50u);
    put16(b, 20);
    put16(b, 0);
    put16(b, m->deflate ? 8 : 0);
    put32(b, 0);
    put32(b, crc);
    put32(b, (uint32_t)csize[i]);
    put32(b, (uint32_t)m->size);
    put16(b, (uint32_t)strlen(m->name));
    put16(b, 0);
    put(b, m->name, strlen(m->name));
    put(b, packed[i], csize[i]);
  }
  uint32_t cd = (uint32_t)b->size;
  for (int i = 0; i < count; ++i) {
    const zip_member *m = &members[i];
    uint32_t crc = (uint32_t)crc32(0, m->data, (uInt)m->size) ^ m->crc_xor;
    put32(b, 0x02014b50u);
    put16(b, 20);
    put16(b, 20);
    put16(b, 0);
    put16(b, m->deflate ? 8 : 0);
    put32(b, 0);
    put32(b, crc);
    put32(b, (uint32_t)csize[i]);
    put32(b, m->usize_lie ? m->usize_lie : (uint32_t)m->size);
    put16(b, (uint32_t)strlen(m->name));
    put16(b, 0);
    put16(b, 0);
    put16(b, 0);
    put16(b, 0);
    put32(b, 0);
    put32(b, offset[i]);
    put(b, m->name, strlen(m->name));
  }
  uint32_t cd_size = (uint32_t)b->size - cd;
  put32(b, 0x06054b50u);
  put16(b, 0);
  put16(b, 0);
  put16(b, (uint32_t)count);
  put16(b, (uint32_t)count);
  put32(b, cd_size);
  put32(b, cd);
  put16(b, 0);
}

static buf g_x, g_y;  // x: float32 [2, 3]; y: int64 [4]
static const float kx[6] = {1, 2, 3, 4, 5, 6};
static const int64_t ky[4] = {10, 20, 30, -40};

static void members_make(zip_member *m, int deflate) {
  npy_image(&g_x, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", kx, sizeof(kx));
  npy_image(&g_y, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", ky, sizeof(ky));
  memset(m, 0, 2 * sizeof(*m));
  m[0] = (zip_member){"x.npy", g_x.data, g_x.size, deflate, 0, 0};
  m[1] = (zip_member){"y.npy", g_y.data, g_y.size, deflate, 0, 0};
}

static void test_npz_reads_stored_and_deflated_archives(void **state) {
  (void)state;
  for (int deflate = 0; deflate <= 1; ++deflate) {
    zip_member m[2];
    members_make(m, deflate);
    buf b;
    zip_image(&b, m, 2);
    const char *path = tmp_path(deflate ? "deflated.npz" : "stored.npz");
    write_file(path, b.data, b.size);
    tsr_npz *z = NULL;
    if (tsr_npz_open(path, &z) != TSR_OK)
      fail_msg("%s", tsr_last_error());
    assert_int_equal(tsr_npz_entry_count(z), 2);
    const char *name;
    tsr_dtype_t dtype;
    int32_t rank;
    const int64_t *sizes;
    assert_int_equal(tsr_npz_entry_get(z, 1, &name, &dtype, &rank, &sizes), TSR_OK);
    assert_string_equal(name, "y");
    assert_int_equal(dtype, TSR_INT64);
    assert_int_equal(rank, 1);
    assert_int_equal(sizes[0], 4);
    assert_int_not_equal(tsr_npz_entry_get(z, 2, &name, NULL, NULL, NULL), TSR_OK);
    tsr_tensor *x = tsr_npz_tensor(z, "x", g_device);
    tsr_tensor *y = tsr_npz_tensor(z, "y", g_device);
    assert_non_null(x);
    assert_non_null(y);
    float gx[6];
    int64_t gy[4];
    assert_int_equal(tsr_tensor_to_host(x, gx, sizeof(gx)), TSR_OK);
    assert_int_equal(tsr_tensor_to_host(y, gy, sizeof(gy)), TSR_OK);
    assert_memory_equal(gx, kx, sizeof(kx));
    assert_memory_equal(gy, ky, sizeof(ky));
    assert_null(tsr_npz_tensor(z, "z", g_device));
    tsr_tensor_release(x);
    tsr_tensor_release(y);
    tsr_npz_close(z);
  }
}

static void expect_npz_refused(const buf *b, const char *text) {
  const char *path = tmp_path("hostile.npz");
  write_file(path, b->data, b->size);
  tsr_npz *z = (tsr_npz *)&z;
  expect_refused(tsr_npz_open(path, &z), path, text);
  assert_null(z);
}

static void test_npz_hostile_archives_fail_with_a_message(void **state) {
  (void)state;
  zip_member m[2];
  buf b;
  members_make(m, 1);
  zip_image(&b, m, 2);
  buf cut = b;
  cut.size -= 1;  // the end record no longer ends the file
  expect_npz_refused(&cut, "end of central directory");
  cut.size = 10;
  expect_npz_refused(&cut, "not a zip file");
  // The directory's offset pointing past the file.
  buf bad = b;
  bad.data[bad.size - 6] = 0xff;
  expect_npz_refused(&bad, "outside the file");
  // A directory entry's signature broken.
  bad = b;
  uint32_t cd = (uint32_t)bad.data[bad.size - 6] | (uint32_t)bad.data[bad.size - 5] << 8;
  bad.data[cd] ^= 0xff;
  expect_npz_refused(&bad, "bad signature");
  // A member claiming more than deflate can produce from its bytes: a bomb.
  members_make(m, 1);
  m[0].usize_lie = 0x7fffffff;
  zip_image(&b, m, 2);
  expect_npz_refused(&b, "zip bomb");
  // A member inflating past what it declares.
  members_make(m, 1);
  m[0].usize_lie = (uint32_t)m[0].size - 1;
  zip_image(&b, m, 2);
  expect_npz_refused(&b, "past its declared");
  // Declaring more than it inflates to.
  members_make(m, 1);
  m[0].usize_lie = (uint32_t)m[0].size + 100;
  zip_image(&b, m, 2);
  expect_npz_refused(&b, "not its declared");
  members_make(m, 0);
  m[1].crc_xor = 1;
  zip_image(&b, m, 2);
  expect_npz_refused(&b, "CRC");
  members_make(m, 0);
  m[1].name = "x.npy";
  zip_image(&b, m, 2);
  expect_npz_refused(&b, "twice");
  // A member that is not a valid .npy.
  members_make(m, 0);
  m[1].size -= 3;
  zip_image(&b, m, 2);
  expect_npz_refused(&b, "member 'y'");
  // Two directory entries over one member's bytes (a bomb multiplied).
  members_make(m, 1);
  zip_image(&b, m, 1);
  uint32_t cd1 = (uint32_t)b.data[b.size - 6] | (uint32_t)b.data[b.size - 5] << 8;
  size_t entry = 46 + 5;
  buf twice = b;
  twice.size = cd1 + entry;
  put(&twice, b.data + cd1, entry);
  twice.data[twice.size - 5] = 'z';
  put(&twice, b.data + cd1 + entry, 22);
  uint8_t *end = twice.data + twice.size - 22;
  end[8] = end[10] = 2;
  end[12] = (uint8_t)(2 * entry);
  expect_npz_refused(&twice, "overlap");
  // Corrupt deflate data.
  members_make(m, 1);
  zip_image(&b, m, 2);
  b.data[30 + 5 + 2] ^= 0x55;
  b.data[30 + 5 + 3] ^= 0xaa;
  const char *path = tmp_path("corrupt.npz");
  write_file(path, b.data, b.size);
  tsr_npz *z = NULL;
  assert_int_not_equal(tsr_npz_open(path, &z), TSR_OK);
  assert_null(z);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_npy_reads_every_dtype_and_version),
      cmocka_unit_test(test_npy_hostile_files_fail_with_a_message),
      cmocka_unit_test(test_npz_reads_stored_and_deflated_archives),
      cmocka_unit_test(test_npz_hostile_archives_fail_with_a_message),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
