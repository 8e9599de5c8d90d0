// Tests of the persistent engine cache (core/engine_cache.h): round trips,
// a restart reading the file again, keys that must not match, damaged,
// foreign and hostile files, two processes writing at once, the off switch,
// bad arguments, the file parser on every cut of a valid file, and the host
// table's entries through a context on ref.
//
// engine_cache.c, engine_cache_file.c and what they use are compiled into
// this test (libtessera's copies are hidden), so a "restart" is
// tsr_engine_cache_state_destroy. Each test has its own folder in
// TSR_ENGINE_CACHE_DIR: ctest runs tests in parallel.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// After the standard headers it needs (cmocka.h includes none).
#include <cmocka.h>

#include "context.h"
#include "engine_cache.h"
#include "engine_cache_file.h"
#include "error.h"
#include "tessera/engine_cache.h"
#include "tessera/tessera.h"

#include "test_check.h"

static const tsr_plugin_api k_fake = {
    .struct_size = sizeof(tsr_plugin_api),
    .name = "fake",
    .version = "1.2.3",
    .build_info = "test build, lib 7.1",
};
static const tsr_plugin_api k_other = {
    .struct_size = sizeof(tsr_plugin_api),
    .name = "other",
    .version = "1.2.3",
    .build_info = "test build, lib 7.1",
};
#define KEY "lib 7.1 isa=test"

typedef struct fixture {
  char folder[64];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  if (f == NULL)
    return -1;
  snprintf(f->folder, sizeof(f->folder), "/tmp/tsr-engine-cache-XXXXXX");
  if (mkdtemp(f->folder) == NULL)
    return -1;
  setenv("TSR_ENGINE_CACHE_DIR", f->folder, 1);
  unsetenv("TSR_ENGINE_CACHE");
  tsr_engine_cache_state_destroy();
  *state = f;
  return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int teardown(void **state) {
  fixture *f = *state;
  tsr_engine_cache_state_destroy();
  nftw(f->folder, remove_one, 16, FTW_DEPTH | FTW_PHYS);
  free(f);
  return 0;
}

static tsr_status put(const tsr_plugin_api *api, int32_t threads, const char *class_key,
                      const char *value) {
  return tsr_engine_cache_put(api, threads, KEY, class_key, value, strlen(value));
}

// The value of |class_key| as a string, or NULL (the status is this
// thread's error).
static const char *get(const tsr_plugin_api *api, int32_t threads, const char *class_key) {
  static char value[TSR_ENGINE_CACHE_VALUE_MAX + 1];
  size_t bytes = TSR_ENGINE_CACHE_VALUE_MAX;
  if (tsr_engine_cache_get(api, threads, KEY, class_key, value, &bytes) != TSR_OK)
    return NULL;
  value[bytes] = '\0';
  return value;
}

// The one cache file in |folder| (its path into |out|); fails the test when
// there is not exactly one.
static void the_file(const fixture *f, char *out, size_t size) {
  DIR *dir = opendir(f->folder);
  assert_non_null(dir);
  int found = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    const size_t n = strlen(e->d_name);
    if (n > 8 && strcmp(e->d_name + n - 8, ".engines") == 0) {
      snprintf(out, size, "%s/%s", f->folder, e->d_name);
      ++found;
    }
  }
  closedir(dir);
  assert_int_equal(found, 1);
}

// Reads |path| whole and parses it; returns the status, the table in
// |table| on success.
static tsr_status parse_path(const char *path, tsr_engine_cache_table *table) {
  FILE *file = fopen(path, "rb");
  assert_non_null(file);
  static uint8_t data[1 << 16];
  size_t size = fread(data, 1, sizeof(data), file);
  fclose(file);
  char why[256];
  return tsr_engine_cache_file_parse(data, size, table, why, sizeof(why));
}

static void write_path(const char *path, const void *data, size_t size) {
  FILE *file = fopen(path, "wb");
  assert_non_null(file);
  assert_int_equal(fwrite(data, 1, size, file), size);
  assert_int_equal(fclose(file), 0);
}

// ===========================================================================

static void test_engine_cache_returns_what_was_put(void **state) {
  (void)state;
  assert_null(get(&k_fake, 2, "matmul 64x64x64"));
  assert_int_equal(tsr_error_status(), TSR_NOT_FOUND);
  CHECK_OK(put(&k_fake, 2, "matmul 64x64x64", "engine 3"));
  assert_string_equal(get(&k_fake, 2, "matmul 64x64x64"), "engine 3");
  CHECK_OK(put(&k_fake, 2, "matmul 64x64x64", "engine 12"));
  assert_string_equal(get(&k_fake, 2, "matmul 64x64x64"), "engine 12");

  // The size alone, and a buffer too small: the size, nothing copied.
  size_t bytes = 0;
  CHECK_OK(tsr_engine_cache_get(&k_fake, 2, KEY, "matmul 64x64x64", NULL, &bytes));
  assert_int_equal(bytes, 9);
  char small[4] = "xyz";
  bytes = sizeof(small);
  assert_int_equal(tsr_engine_cache_get(&k_fake, 2, KEY, "matmul 64x64x64", small, &bytes),
                   TSR_INVALID_ARGUMENT);
  assert_int_equal(bytes, 9);
  assert_string_equal(small, "xyz");
  assert_non_null(strstr(tsr_error_message(), "9 bytes"));

  // An empty value is a value.
  CHECK_OK(tsr_engine_cache_put(&k_fake, 2, KEY, "empty", NULL, 0));
  bytes = 5;
  CHECK_OK(tsr_engine_cache_get(&k_fake, 2, KEY, "empty", small, &bytes));
  assert_int_equal(bytes, 0);
}

static void test_engine_cache_survives_a_restart(void **state) {
  fixture *f = *state;
  CHECK_OK(put(&k_fake, 2, "conv 3x3 [64,32,28,28]", "winograd"));
  CHECK_OK(put(&k_fake, 2, "matmul 1024", "brgemm:avx2"));
  char path[256];
  the_file(f, path, sizeof(path));
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  tsr_engine_cache_state_destroy();  // a new process: the file is read again
  assert_string_equal(get(&k_fake, 2, "conv 3x3 [64,32,28,28]"), "winograd");
  assert_string_equal(get(&k_fake, 2, "matmul 1024"), "brgemm:avx2");
  // A restart that adds keeps the old decisions in the file.
  CHECK_OK(put(&k_fake, 2, "softmax 256x1000", "ref"));
  tsr_engine_cache_state_destroy();
  assert_string_equal(get(&k_fake, 2, "matmul 1024"), "brgemm:avx2");
  assert_string_equal(get(&k_fake, 2, "softmax 256x1000"), "ref");
}

static void test_engine_cache_misses_for_another_thread_count_plugin_or_version(void **state) {
  (void)state;
  CHECK_OK(put(&k_fake, 2, "matmul 1024", "brgemm"));
  for (int restart = 0; restart < 2; ++restart) {
    assert_string_equal(get(&k_fake, 2, "matmul 1024"), "brgemm");
    assert_null(get(&k_fake, 3, "matmul 1024"));
    assert_null(get(&k_other, 2, "matmul 1024"));
    size_t bytes = 0;
    assert_int_equal(
        tsr_engine_cache_get(&k_fake, 2, "lib 7.2 isa=test", "matmul 1024", NULL, &bytes),
        TSR_NOT_FOUND);
    tsr_plugin_api newer = k_fake;
    newer.version = "1.2.4";
    assert_null(get(&newer, 2, "matmul 1024"));
    tsr_engine_cache_state_destroy();
  }
}

static void test_engine_cache_machine_key_names_cpu_threads_and_cpu_set(void **state) {
  (void)state;
  char key[TSR_ENGINE_CACHE_FILE_KEY_MAX + 1];
  assert_true(tsr_engine_cache_machine_key(6, key, sizeof(key)));
  assert_non_null(strstr(key, "threads=6;"));
  assert_non_null(strstr(key, "cpuset="));
  assert_true(tsr_engine_cache_key_valid(key, TSR_ENGINE_CACHE_FILE_KEY_MAX));
  char other[TSR_ENGINE_CACHE_FILE_KEY_MAX + 1];
  assert_true(tsr_engine_cache_machine_key(6, other, sizeof(other)));
  assert_string_equal(key, other);  // stable within a process
  print_message("machine key: %.200s...\n", key);
}

// Puts one decision, damages the file with |damage|, and checks that the
// next process ignores the file and the next put rebuilds it whole.
static void damaged_file_is_ignored_and_rebuilt(fixture *f, const char *what,
                                                void (*damage)(const char *path)) {
  CHECK_OK(put(&k_fake, 2, "old", "value"));
  char path[256];
  the_file(f, path, sizeof(path));
  damage(path);
  tsr_engine_cache_state_destroy();
  print_message("%s:\n", what);
  assert_null(get(&k_fake, 2, "old"));
  CHECK_OK(put(&k_fake, 2, "new", "value 2"));
  tsr_engine_cache_table table;
  assert_int_equal(parse_path(path, &table), TSR_OK);
  assert_int_equal(table.count, 1);
  assert_string_equal(table.entries[0].class_key, "new");
  tsr_engine_cache_table_clear(&table);
  tsr_engine_cache_state_destroy();
  assert_string_equal(get(&k_fake, 2, "new"), "value 2");
  assert_int_equal(unlink(path), 0);
  tsr_engine_cache_state_destroy();
}

static void flip_a_byte(const char *path) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  uint8_t byte;
  assert_int_equal(pread(fd, &byte, 1, 30), 1);
  byte ^= 0x20;
  assert_int_equal(pwrite(fd, &byte, 1, 30), 1);
  close(fd);
}

static void cut_in_half(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(truncate(path, st.st_size / 2), 0);
}

static void empty(const char *path) {
  assert_int_equal(truncate(path, 0), 0);
}

static void huge(const char *path) {
  assert_int_equal(truncate(path, (off_t)TSR_ENGINE_CACHE_FILE_MAX + 1), 0);
}

static void wrong_magic(const char *path) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, "XSR", 3, 0), 3);
  close(fd);
}

// A whole, valid file, but made on another machine (or copied from one).
static void foreign_machine(const char *path) {
  tsr_engine_cache_table table;
  assert_int_equal(parse_path(path, &table), TSR_OK);
  free(table.machine_key);
  table.machine_key = strdup("cpu=another;threads=2;cpuset=0-1;");
  uint8_t *data = NULL;
  size_t size = 0;
  assert_int_equal(tsr_engine_cache_file_serialize(&table, &data, &size), TSR_OK);
  write_path(path, data, size);
  free(data);
  tsr_engine_cache_table_clear(&table);
}

// A valid file for another plugin build under this file's name.
static void foreign_plugin(const char *path) {
  tsr_engine_cache_table table;
  assert_int_equal(parse_path(path, &table), TSR_OK);
  free(table.plugin_key);
  table.plugin_key = strdup("name=fake;version=0.9;");
  uint8_t *data = NULL;
  size_t size = 0;
  assert_int_equal(tsr_engine_cache_file_serialize(&table, &data, &size), TSR_OK);
  write_path(path, data, size);
  free(data);
  tsr_engine_cache_table_clear(&table);
}

// A hostile file: a valid checksum over lengths that point far past the end.
static void hostile_lengths(const char *path) {
  uint8_t data[64] = {'T', 'S', 'R', 'E', 'N', 'G', 'C', '\n', 1, 0, 0, 0};
  memset(data + 12, 0xff, 12);  // both key lengths and the count
  const uint64_t sum = tsr_engine_cache_fnv1a(TSR_FNV1A_64_INIT, data, 56);
  for (int i = 0; i < 8; ++i) data[56 + i] = (uint8_t)(sum >> (8 * i));
  write_path(path, data, sizeof(data));
}

static void a_fifo(const char *path) {
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkfifo(path, 0600), 0);
}

// A symbolic link to a valid file elsewhere: not followed.
static void a_symlink(const char *path) {
  char moved[300];
  snprintf(moved, sizeof(moved), "%s.elsewhere", path);
  assert_int_equal(rename(path, moved), 0);
  assert_int_equal(symlink(moved, path), 0);
}

static void test_engine_cache_ignores_and_rebuilds_a_damaged_or_foreign_file(void **state) {
  fixture *f = *state;
  damaged_file_is_ignored_and_rebuilt(f, "a flipped byte", flip_a_byte);
  damaged_file_is_ignored_and_rebuilt(f, "cut in half", cut_in_half);
  damaged_file_is_ignored_and_rebuilt(f, "empty", empty);
  damaged_file_is_ignored_and_rebuilt(f, "larger than the limit", huge);
  damaged_file_is_ignored_and_rebuilt(f, "another magic", wrong_magic);
  damaged_file_is_ignored_and_rebuilt(f, "another machine", foreign_machine);
  damaged_file_is_ignored_and_rebuilt(f, "another plugin build", foreign_plugin);
  damaged_file_is_ignored_and_rebuilt(f, "hostile lengths", hostile_lengths);
}

static void test_engine_cache_reads_around_a_fifo_and_a_symlink(void **state) {
  fixture *f = *state;
  const time_t start = time(NULL);
  damaged_file_is_ignored_and_rebuilt(f, "a FIFO", a_fifo);
  assert_true(time(NULL) - start < 10);  // never a hang
  damaged_file_is_ignored_and_rebuilt(f, "a symbolic link", a_symlink);
}

// Each child puts |kPuts| decisions of its own; they start together.
enum { kPuts = 25 };

static void child_puts(int child, int go) {
  char byte;
  if (read(go, &byte, 1) != 1)
    _exit(2);
  for (int i = 0; i < kPuts; ++i) {
    char class_key[32], value[32];
    snprintf(class_key, sizeof(class_key), "child %d class %d", child, i);
    snprintf(value, sizeof(value), "engine %d.%d", child, i);
    if (put(&k_fake, 2, class_key, value) != TSR_OK)
      _exit(1);
  }
  _exit(0);
}

static void test_engine_cache_two_processes_writing_at_once_keep_both(void **state) {
  fixture *f = *state;
  CHECK_OK(put(&k_fake, 2, "before", "parent"));
  tsr_engine_cache_state_destroy();  // the children start from the file
  int go[2];
  assert_int_equal(pipe(go), 0);
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = fork();
    assert_true(children[c] >= 0);
    if (children[c] == 0) {
      close(go[1]);
      child_puts(c, go[0]);
    }
  }
  close(go[0]);
  assert_int_equal(write(go[1], "gg", 2), 2);
  close(go[1]);
  for (int c = 0; c < 2; ++c) {
    int status = 0;
    assert_int_equal(waitpid(children[c], &status, 0), children[c]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  char path[256];
  the_file(f, path, sizeof(path));
  tsr_engine_cache_table table;
  assert_int_equal(parse_path(path, &table), TSR_OK);
  assert_int_equal(table.count, 2 * kPuts + 1);
  tsr_engine_cache_table_clear(&table);
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < kPuts; ++i) {
      char class_key[32], value[32];
      snprintf(class_key, sizeof(class_key), "child %d class %d", c, i);
      snprintf(value, sizeof(value), "engine %d.%d", c, i);
      const char *got = get(&k_fake, 2, class_key);
      if (got == NULL || strcmp(got, value) != 0)
        fail_msg("%s: %s", class_key, got);
    }
  }
  assert_string_equal(get(&k_fake, 2, "before"), "parent");
  // No temporary file is left behind.
  DIR *dir = opendir(f->folder);
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    const size_t n = strlen(e->d_name);
    if (n < 8 || strcmp(e->d_name + n - 8, ".engines") != 0)
      fail_msg("left over: %s", e->d_name);
  }
  closedir(dir);
}

static void test_engine_cache_off_keeps_nothing(void **state) {
  fixture *f = *state;
  setenv("TSR_ENGINE_CACHE", "0", 1);
  tsr_engine_cache_state_destroy();
  CHECK_OK(put(&k_fake, 2, "matmul", "engine 1"));
  assert_null(get(&k_fake, 2, "matmul"));
  assert_int_equal(tsr_error_status(), TSR_NOT_FOUND);
  assert_non_null(strstr(tsr_error_message(), "TSR_ENGINE_CACHE=0"));
  DIR *dir = opendir(f->folder);
  assert_non_null(dir);
  int files = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) files += e->d_name[0] != '.';
  closedir(dir);
  assert_int_equal(files, 0);
  char folder[256];
  const char *why = NULL;
  int32_t count = -1;
  int64_t decisions = -1;
  tsr_engine_cache_census(NULL, 2, folder, sizeof(folder), &why, &count, &decisions);
  assert_string_equal(why, "TSR_ENGINE_CACHE=0");
  assert_string_equal(folder, "");
  // A value that is not a switch is a warning, and the cache stays on.
  setenv("TSR_ENGINE_CACHE", "maybe", 1);
  tsr_engine_cache_state_destroy();
  CHECK_OK(put(&k_fake, 2, "matmul", "engine 1"));
  assert_string_equal(get(&k_fake, 2, "matmul"), "engine 1");
  unsetenv("TSR_ENGINE_CACHE");
}

static void test_engine_cache_follows_xdg_cache_home(void **state) {
  fixture *f = *state;
  unsetenv("TSR_ENGINE_CACHE_DIR");
  char xdg[128];
  snprintf(xdg, sizeof(xdg), "%s/xdg", f->folder);
  setenv("XDG_CACHE_HOME", xdg, 1);
  tsr_engine_cache_state_destroy();
  CHECK_OK(put(&k_fake, 2, "matmul", "engine 1"));
  char folder[256], expected[256];
  const char *why = NULL;
  int32_t files = 0;
  int64_t decisions = 0;
  tsr_engine_cache_census("fake", 2, folder, sizeof(folder), &why, &files, &decisions);
  snprintf(expected, sizeof(expected), "%s/tessera/engines", xdg);
  assert_null(why);
  assert_string_equal(folder, expected);
  assert_int_equal(files, 1);
  assert_int_equal(decisions, 1);
  unsetenv("XDG_CACHE_HOME");
  setenv("TSR_ENGINE_CACHE_DIR", f->folder, 1);
}

static void test_engine_cache_census_counts_this_machine_per_plugin(void **state) {
  (void)state;
  CHECK_OK(put(&k_fake, 2, "a", "1"));
  CHECK_OK(put(&k_fake, 2, "b", "2"));
  CHECK_OK(put(&k_other, 2, "a", "1"));
  CHECK_OK(put(&k_other, 4, "a", "1"));  // another thread count
  char folder[4096];
  const char *why = NULL;
  int32_t files = 0;
  int64_t decisions = 0;
  tsr_engine_cache_census(NULL, 2, folder, sizeof(folder), &why, &files, &decisions);
  assert_int_equal(files, 2);
  assert_int_equal(decisions, 3);
  tsr_engine_cache_census("fake", 2, folder, sizeof(folder), &why, &files, &decisions);
  assert_int_equal(files, 1);
  assert_int_equal(decisions, 2);
  tsr_engine_cache_census("other", 4, folder, sizeof(folder), &why, &files, &decisions);
  assert_int_equal(files, 1);
  assert_int_equal(decisions, 1);
  tsr_engine_cache_census("fak", 2, folder, sizeof(folder), &why, &files, &decisions);
  assert_int_equal(files, 0);
}

static void expect_invalid(tsr_status status, const char *named) {
  assert_int_equal(status, TSR_INVALID_ARGUMENT);
  if (strstr(tsr_error_message(), named) == NULL) {
    fail_msg("'%s' does not name %s", tsr_error_message(), named);
  }
}

static void test_engine_cache_refuses_bad_arguments(void **state) {
  (void)state;
  char value[8];
  size_t bytes = sizeof(value);
  char long_key[TSR_ENGINE_CACHE_CLASS_KEY_MAX + 2];
  memset(long_key, 'k', sizeof(long_key) - 1);
  long_key[sizeof(long_key) - 1] = '\0';
  char long_plugin_key[TSR_ENGINE_CACHE_KEY_MAX + 2];
  memset(long_plugin_key, 'p', sizeof(long_plugin_key) - 1);
  long_plugin_key[sizeof(long_plugin_key) - 1] = '\0';
  static uint8_t big[TSR_ENGINE_CACHE_VALUE_MAX + 1];

  expect_invalid(tsr_engine_cache_get(&k_fake, 2, NULL, "c", value, &bytes), "plugin_key");
  expect_invalid(tsr_engine_cache_get(&k_fake, 2, KEY, NULL, value, &bytes), "class_key");
  expect_invalid(tsr_engine_cache_get(&k_fake, 2, KEY, "", value, &bytes), "class_key");
  expect_invalid(tsr_engine_cache_get(&k_fake, 2, KEY, "a\nb", value, &bytes), "class_key");
  expect_invalid(tsr_engine_cache_get(&k_fake, 2, KEY, long_key, value, &bytes), "class_key");
  expect_invalid(tsr_engine_cache_get(&k_fake, 2, long_plugin_key, "c", value, &bytes),
                 "plugin_key");
  expect_invalid(tsr_engine_cache_get(&k_fake, 2, KEY, "c", value, NULL), "inout_bytes");
  expect_invalid(tsr_engine_cache_put(&k_fake, 2, KEY, "c", NULL, 4), "value is NULL");
  expect_invalid(tsr_engine_cache_put(&k_fake, 2, KEY, "c", big, sizeof(big)), "1025 bytes");
  expect_invalid(tsr_engine_cache_put(&k_fake, 2, KEY, long_key, "v", 1), "class_key");
  expect_invalid(tsr_engine_cache_put(&k_fake, 2, "\x7f", "c", "v", 1), "plugin_key");
  assert_int_equal(tsr_engine_cache_put(NULL, 2, KEY, "c", "v", 1), TSR_UNAVAILABLE);
  // The largest value and keys are fine.
  long_key[TSR_ENGINE_CACHE_CLASS_KEY_MAX] = '\0';
  long_plugin_key[TSR_ENGINE_CACHE_KEY_MAX] = '\0';
  CHECK_OK(tsr_engine_cache_put(&k_fake, 2, long_plugin_key, long_key, big, sizeof(big) - 1));
  static uint8_t back[TSR_ENGINE_CACHE_VALUE_MAX];
  bytes = sizeof(back);
  CHECK_OK(tsr_engine_cache_get(&k_fake, 2, long_plugin_key, long_key, back, &bytes));
  assert_int_equal(bytes, TSR_ENGINE_CACHE_VALUE_MAX);
}

static void test_engine_cache_file_parser_refuses_every_cut_and_flip(void **state) {
  (void)state;
  tsr_engine_cache_table table;
  assert_int_equal(tsr_engine_cache_table_init(&table, "name=p;", "cpu=x;"), TSR_OK);
  assert_int_equal(tsr_engine_cache_table_set(&table, "b", "22", 2), TSR_OK);
  assert_int_equal(tsr_engine_cache_table_set(&table, "a", "1", 1), TSR_OK);
  assert_int_equal(tsr_engine_cache_table_set(&table, "c", "", 0), TSR_OK);
  uint8_t *data = NULL;
  size_t size = 0;
  assert_int_equal(tsr_engine_cache_file_serialize(&table, &data, &size), TSR_OK);
  tsr_engine_cache_table_clear(&table);
  char why[256];
  assert_int_equal(tsr_engine_cache_file_parse(data, size, &table, why, sizeof(why)), TSR_OK);
  assert_int_equal(table.count, 3);
  assert_string_equal(table.entries[0].class_key, "a");
  assert_string_equal(table.entries[2].class_key, "c");
  assert_string_equal(table.machine_key, "cpu=x;");
  tsr_engine_cache_table_clear(&table);
  for (size_t cut = 0; cut < size; ++cut) {
    why[0] = '\0';
    assert_int_equal(tsr_engine_cache_file_parse(data, cut, &table, why, sizeof(why)),
                     TSR_INVALID_ARGUMENT);
    assert_true(why[0] != '\0');
    assert_null(table.plugin_key);
  }
  for (size_t at = 0; at < size; ++at) {
    data[at] ^= 0x01;
    assert_int_equal(tsr_engine_cache_file_parse(data, size, &table, why, sizeof(why)),
                     TSR_INVALID_ARGUMENT);
    data[at] ^= 0x01;
  }
  free(data);
}

// Through libtessera's host table, in a child so that the library reads
// this test's settings.
static void test_engine_cache_host_table_entries_reach_the_cache(void **state) {
  fixture *f = *state;
  if (REF == NULL)
    skip();
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    tsr_context_options options;
    tsr_context_options_init(&options);
    options.plugin_path = REF;
    options.flags |= TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
    tsr_context *context = NULL;
    if (tsr_context_create(&options, &context) != TSR_OK || context->plugin_count != 1)
      _exit(10);
    const tsr_host_api *host = &context->plugins[0]->host;
    if (!TSR_ABI_HAS(host, tsr_host_api, engine_cache_get) ||
        !TSR_ABI_HAS(host, tsr_host_api, engine_cache_put)) {
      _exit(11);
    }
    char value[16];
    size_t bytes = sizeof(value);
    if (host->engine_cache_get(host->ctx, KEY, "matmul", value, &bytes) != TSR_NOT_FOUND)
      _exit(12);
    if (host->engine_cache_put(host->ctx, KEY, "matmul", "blocked", 7) != TSR_OK)
      _exit(13);
    if (host->engine_cache_put(host->ctx, KEY, "conv", "direct", 6) != TSR_OK)
      _exit(13);
    if (host->engine_cache_get(host->ctx, KEY, "matmul", value, &bytes) != TSR_OK || bytes != 7 ||
        memcmp(value, "blocked", 7) != 0) {
      _exit(14);
    }
    if (host->engine_cache_put(host->ctx, KEY, NULL, "x", 1) != TSR_INVALID_ARGUMENT)
      _exit(15);
    tsr_engine_cache_info info = {.struct_size = sizeof(info)};
    if (tsr_engine_cache_info_get(context, "ref", &info) != TSR_OK || info.folder == NULL ||
        strcmp(info.folder, f->folder) != 0 || info.files != 1 || info.decisions != 2) {
      _exit(16);
    }
    if (tsr_engine_cache_info_get(context, "onednn", &info) != TSR_OK || info.files != 0)
      _exit(17);
    tsr_context_destroy(context);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail_msg("the child failed at step %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  char path[256];
  the_file(f, path, sizeof(path));
  assert_non_null(strstr(path, "/ref-"));
  tsr_engine_cache_table table;
  assert_int_equal(parse_path(path, &table), TSR_OK);
  assert_int_equal(table.count, 2);
  assert_non_null(strstr(table.plugin_key, "name=ref;"));
  assert_non_null(strstr(table.plugin_key, "key=" KEY ";"));
  tsr_engine_cache_table_clear(&table);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
      T(test_engine_cache_returns_what_was_put),
      T(test_engine_cache_survives_a_restart),
      T(test_engine_cache_misses_for_another_thread_count_plugin_or_version),
      T(test_engine_cache_machine_key_names_cpu_threads_and_cpu_set),
      T(test_engine_cache_ignores_and_rebuilds_a_damaged_or_foreign_file),
      T(test_engine_cache_reads_around_a_fifo_and_a_symlink),
      T(test_engine_cache_two_processes_writing_at_once_keep_both),
      T(test_engine_cache_off_keeps_nothing),
      T(test_engine_cache_follows_xdg_cache_home),
      T(test_engine_cache_census_counts_this_machine_per_plugin),
      T(test_engine_cache_refuses_bad_arguments),
      T(test_engine_cache_file_parser_refuses_every_cut_and_flip),
      T(test_engine_cache_host_table_entries_reach_the_cache),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
