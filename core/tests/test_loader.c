// Tests of plugin loading and discovery: each loader fixture's outcome and
// the reason a rejected one is shown with, discovery order (explicit path,
// TSR_PLUGIN_PATH, folders), device choice (options.device, TSR_DEVICE),
// contexts sharing a plugin, and context create/destroy cycles.
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tessera/tessera.h"

#ifdef TSR_TEST_ASYNC_PLUGIN
#define ASYNC TSR_TEST_ASYNC_PLUGIN
#else
#define ASYNC NULL
#endif
#ifdef TSR_TEST_NOENTRY_FIXTURE
#define NOENTRY TSR_TEST_NOENTRY_FIXTURE
#else
#define NOENTRY NULL
#endif
#ifdef TSR_TEST_BADMAJOR_FIXTURE
#define BADMAJOR TSR_TEST_BADMAJOR_FIXTURE
#else
#define BADMAJOR NULL
#endif
#ifdef TSR_TEST_BADNAME_FIXTURE
#define BADNAME TSR_TEST_BADNAME_FIXTURE
#else
#define BADNAME NULL
#endif
#ifdef TSR_TEST_OLDMINOR_FIXTURE
#define OLDMINOR TSR_TEST_OLDMINOR_FIXTURE
#else
#define OLDMINOR NULL
#endif
#ifdef TSR_TEST_BIGGERTABLE_FIXTURE
#define BIGGERTABLE TSR_TEST_BIGGERTABLE_FIXTURE
#else
#define BIGGERTABLE NULL
#endif
#ifdef TSR_TEST_FAILINIT_FIXTURE
#define FAILINIT TSR_TEST_FAILINIT_FIXTURE
#else
#define FAILINIT NULL
#endif
#ifdef TSR_TEST_PRIORITY_FIXTURE
#define PRIORITY TSR_TEST_PRIORITY_FIXTURE
#else
#define PRIORITY NULL
#endif
#ifdef TSR_TEST_UNAVAILABLE_FIXTURE
#define UNAVAILABLE TSR_TEST_UNAVAILABLE_FIXTURE
#else
#define UNAVAILABLE NULL
#endif
#ifdef TSR_TEST_MISSINGDEP_FIXTURE
#define MISSINGDEP TSR_TEST_MISSINGDEP_FIXTURE
#else
#define MISSINGDEP NULL
#endif

#include "test_check.h"


// ---------------------------------------------------------------------------
// Helpers.

// Skips the test when a plugin it needs was not built.
static void need(const char *path, const char *what) {
  if (path == NULL) {
    print_message("skipped: %s is not built\n", what);
    skip();
  }
}

// "a:b:c" from the non-NULL arguments. Static storage per call site is not
// needed: the result is copied by the caller's context_create at once.
static const char *join(const char *a, const char *b, const char *c) {
  static char buffer[3][8192];
  static int next;
  char *out = buffer[next++ % 3];
  snprintf(out, sizeof(buffer[0]), "%s%s%s%s%s", a ? a : "", b ? ":" : "", b ? b : "",
           c ? ":" : "", c ? c : "");
  return out;
}

static tsr_status context_try(const char *plugin_path, uint32_t flags, const char *device,
                              tsr_context **out_context) {
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = plugin_path;
  options.device = device;
  options.flags = flags;
  *out_context = NULL;
  return tsr_context_create(&options, out_context);
}

static tsr_context *context_new(const char *plugin_path) {
  tsr_context *context = NULL;
  tsr_status status =
      context_try(plugin_path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, NULL, &context);
  if (status != TSR_OK) {
    fail_msg("context_create(%s): %s: %s", plugin_path, tsr_status_name(status), tsr_last_error());
  }
  assert_non_null(context);
  return context;
}

static int same_file(const char *a, const char *b) {
  char *ra = realpath(a, NULL);
  char *rb = realpath(b, NULL);
  int same = ra != NULL && rb != NULL && strcmp(ra, rb) == 0;
  free(ra);
  free(rb);
  return same;
}

// The rejected candidate whose path is |path|; fails the test if absent.
static tsr_rejected_plugin rejected_for(const tsr_context *context, const char *path) {
  tsr_rejected_plugin r;
  for (int32_t i = 0; i < tsr_context_rejected_count(context); ++i) {
    memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    CHECK_OK(tsr_context_rejected_get(context, i, &r));
    if (strcmp(r.path, path) == 0 || same_file(r.path, path)) return r;
  }
  fail_msg("%s is not among the %d rejected candidates", path, tsr_context_rejected_count(context));
  memset(&r, 0, sizeof(r));
  return r;
}

static void reason_mentions(const tsr_rejected_plugin *r, const char *needle) {
  if (strstr(r->reason, needle) == NULL) {
    fail_msg("the reason for rejecting %s, '%s', does not mention '%s'", r->path, r->reason, needle);
  }
}

// Index of the loaded plugin named |name|, or -1.
static int32_t plugin_index(const tsr_context *context, const char *name) {
  for (int32_t i = 0; i < tsr_context_plugin_count(context); ++i) {
    tsr_plugin_info info;
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    CHECK_OK(tsr_context_plugin_info_get(context, i, &info));
    if (strcmp(info.name, name) == 0) return i;
  }
  return -1;
}

static tsr_plugin_info plugin_info(const tsr_context *context, const char *name) {
  int32_t index = plugin_index(context, name);
  if (index < 0) fail_msg("no plugin named '%s' is loaded", name);
  tsr_plugin_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  CHECK_OK(tsr_context_plugin_info_get(context, index, &info));
  return info;
}

// Uploads, reads back and compares: the device holds memory and copies.
static void round_trip(tsr_device *device) {
  const int32_t values[6] = {1, -2, 3, -4, 5, 1 << 30};
  tsr_tensor *t = tsr_tensor_from_host(device, TSR_INT32, 2, (int64_t[]){2, 3}, values);
  CHECK_TENSOR(t);
  int32_t back[6] = {0};
  CHECK_OK(tsr_tensor_to_host(t, back, sizeof(back)));
  assert_memory_equal(back, values, sizeof(values));
  tsr_tensor_release(t);
}

// a + b on |device|, checked.
static void add_works(tsr_device *device) {
  tsr_tensor *a = tsr_tensor_from_host(device, TSR_FLOAT32, 1, (int64_t[]){3},
                                       (float[]){1, 2, 3});
  tsr_tensor *b = tsr_tensor_from_host(device, TSR_FLOAT32, 1, (int64_t[]){3},
                                       (float[]){10, 20, 30});
  CHECK_TENSOR(a);
  CHECK_TENSOR(b);
  tsr_tensor *c = tsr_add(a, b);
  CHECK_TENSOR(c);
  float got[3];
  CHECK_OK(tsr_tensor_to_host(c, got, sizeof(got)));
  assert_true(got[0] == 11 && got[1] == 22 && got[2] == 33);
  tsr_tensor_release(c);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
}

static int clean_env(void **state) {
  (void)state;
  unsetenv("TSR_PLUGIN_PATH");
  unsetenv("TSR_DEVICE");
  unsetenv("TSR_FALLBACK");
  return 0;
}

// ---------------------------------------------------------------------------
// Each loader fixture.

static void test_loader_rejects_a_library_without_the_entry_symbol(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(NOENTRY, "the noentry fixture");
  tsr_context *context = context_new(join(REF, NOENTRY, NULL));
  assert_int_equal(tsr_context_plugin_count(context), 1);
  assert_int_equal(tsr_context_rejected_count(context), 1);
  tsr_rejected_plugin r = rejected_for(context, NOENTRY);
  assert_int_equal(r.status, TSR_NOT_FOUND);
  reason_mentions(&r, TSR_PLUGIN_ENTRY_NAME);
  tsr_context_destroy(context);
}

static void test_loader_rejects_a_plugin_whose_name_breaks_the_rule(void **state) {
  (void)state;
  need(BADNAME, "the badname fixture");
  tsr_context *context = context_new(join(REF, BADNAME, NULL));
  assert_int_equal(tsr_context_plugin_count(context), 1);
  tsr_rejected_plugin r = rejected_for(context, BADNAME);
  assert_int_equal(r.status, TSR_INVALID_ARGUMENT);
  reason_mentions(&r, "Bad Name:1");
  reason_mentions(&r, "naming rule");
  tsr_context_destroy(context);
}

static void test_loader_rejects_a_plugin_built_for_another_major(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(BADMAJOR, "the badmajor fixture");
  tsr_context *context = context_new(join(REF, BADMAJOR, NULL));
  assert_int_equal(tsr_context_plugin_count(context), 1);
  assert_int_equal(plugin_index(context, "badmajor"), -1);
  tsr_rejected_plugin r = rejected_for(context, BADMAJOR);
  assert_int_equal(r.status, TSR_ABI_MISMATCH);
  char plugin_version[32], core_version[32];
  snprintf(plugin_version, sizeof(plugin_version), "%d.%d", TSR_ABI_VERSION_MAJOR + 1,
           TSR_ABI_VERSION_MINOR);
  snprintf(core_version, sizeof(core_version), "%d.%d", TSR_ABI_VERSION_MAJOR,
           TSR_ABI_VERSION_MINOR);
  reason_mentions(&r, plugin_version);
  reason_mentions(&r, core_version);
  // The status's name says "ABI mismatch"; the reason does not say it again.
  assert_null(strstr(r.reason, "ABI mismatch"));
  assert_null(tsr_context_device_find(context, "badmajor:0"));
  tsr_context_destroy(context);
}

static void test_loader_rejects_a_plugin_whose_init_fails_with_its_message(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(FAILINIT, "the failinit fixture");
  tsr_context *context = context_new(join(REF, FAILINIT, NULL));
  assert_int_equal(tsr_context_plugin_count(context), 1);
  tsr_rejected_plugin r = rejected_for(context, FAILINIT);
  assert_int_equal(r.status, TSR_INTERNAL);
  reason_mentions(&r, "failinit: init failed on purpose (conformance fixture)");
  assert_null(tsr_context_device_find(context, "failinit"));
  tsr_context_destroy(context);
}

static void test_loader_rejects_an_unavailable_plugin_with_the_probe_reason(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(UNAVAILABLE, "the unavailable fixture");
  tsr_context *context = context_new(join(REF, UNAVAILABLE, NULL));
  assert_int_equal(tsr_context_plugin_count(context), 1);
  tsr_rejected_plugin r = rejected_for(context, UNAVAILABLE);
  assert_int_equal(r.status, TSR_UNAVAILABLE);
  reason_mentions(&r, "unavailable: fixture hardware not present");
  assert_null(tsr_context_device_find(context, "unavailable"));
  tsr_context_destroy(context);
}

static void test_loader_rejects_a_plugin_with_a_missing_dependency_with_the_dlerror_text(
    void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(MISSINGDEP, "the missingdep fixture");
  tsr_context *context = context_new(join(REF, MISSINGDEP, NULL));
  assert_int_equal(tsr_context_plugin_count(context), 1);
  tsr_rejected_plugin r = rejected_for(context, MISSINGDEP);
  assert_int_equal(r.status, TSR_NOT_FOUND);
  reason_mentions(&r, "libtessera-fixture-dep.so");
  reason_mentions(&r, "cannot open shared object file");
  tsr_context_destroy(context);
}

static void test_loader_loads_a_plugin_built_against_an_older_minor(void **state) {
  (void)state;
  need(OLDMINOR, "the oldminor fixture");
  tsr_context *context = context_new(OLDMINOR);
  assert_int_equal(tsr_context_rejected_count(context), 0);
  tsr_plugin_info info = plugin_info(context, "oldminor");
  assert_int_equal(info.abi_major, TSR_ABI_VERSION_MAJOR);
  assert_int_equal(info.abi_minor, 0);
  assert_int_equal(info.device_count, 1);
  assert_true(same_file(info.path, OLDMINOR));
  tsr_device *device = tsr_context_default_device(context);
  assert_non_null(device);
  assert_string_equal(tsr_device_name(device), "oldminor:0");
  assert_string_equal(tsr_device_plugin_name(device), "oldminor");
  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  CHECK_OK(tsr_device_props_get(device, &props));
  assert_non_null(strstr(props.name, "minimal fixture device"));

  // Memory, copies, streams and events work.
  round_trip(device);
  tsr_stream *stream = NULL;
  CHECK_OK(tsr_stream_create(device, 0, &stream));
  tsr_event *event = NULL;
  CHECK_OK(tsr_event_create(device, 0, &event));
  CHECK_OK(tsr_event_record(event, stream));
  CHECK_OK(tsr_event_synchronize(event));
  CHECK_OK(tsr_stream_synchronize(stream));
  tsr_event_release(event);
  tsr_stream_release(stream);

  // No kernels: ops are unsupported, and nothing beyond its table is called.
  tsr_last_error_clear();
  tsr_tensor *t = tsr_tensor_full(device, TSR_FLOAT32, 1, (int64_t[]){4}, 1.0);
  assert_null(t);
  assert_int_equal(tsr_last_status(), TSR_UNSUPPORTED);
  if (strstr(tsr_last_error(), "beyond") != NULL) {
    fail_msg("the core read past the 0.0 table: %s", tsr_last_error());
  }
  assert_int_equal(tsr_device_op_supported(device, TSR_OP_FILL, TSR_FLOAT32), TSR_UNSUPPORTED);
  if (strstr(tsr_last_error(), "beyond") != NULL) {
    fail_msg("the core read past the 0.0 table: %s", tsr_last_error());
  }
  // Entries added later (0.3's stream_import) are absent, not called.
  int native = 0;
  tsr_stream *imported = NULL;
  assert_int_equal(tsr_stream_import(device, &native, 0, &imported), TSR_UNSUPPORTED);
  if (strstr(tsr_last_error(), "beyond") != NULL) {
    fail_msg("the core read past the 0.0 table: %s", tsr_last_error());
  }
  assert_non_null(strstr(tsr_last_error(), "plugin 'oldminor'"));
  assert_null(imported);
  tsr_context_destroy(context);
}

static void test_loader_loads_a_plugin_with_a_bigger_table_than_the_core_knows(void **state) {
  (void)state;
  need(BIGGERTABLE, "the biggertable fixture");
  tsr_context *context = context_new(BIGGERTABLE);
  assert_int_equal(tsr_context_rejected_count(context), 0);
  tsr_plugin_info info = plugin_info(context, "biggertable");
  assert_int_equal(info.abi_major, TSR_ABI_VERSION_MAJOR);
  assert_int_equal(info.abi_minor, TSR_ABI_VERSION_MINOR + 1);
  assert_int_equal(info.device_count, 1);
  tsr_device *device = tsr_context_device_find(context, "biggertable:0");
  assert_non_null(device);
  assert_ptr_equal(tsr_context_default_device(context), device);
  round_trip(device);
  tsr_context_destroy(context);
}

static void test_context_create_with_only_rejected_candidates_fails_with_the_first_reason(
    void **state) {
  (void)state;
  need(FAILINIT, "the failinit fixture");
  need(NOENTRY, "the noentry fixture");
  tsr_context *context = NULL;
  tsr_status status =
      context_try(join(FAILINIT, NOENTRY, NULL), TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, NULL, &context);
  assert_int_equal(status, TSR_NOT_FOUND);
  assert_null(context);
  if (strstr(tsr_last_error(), "init failed on purpose") == NULL) {
    fail_msg("'%s' does not give the first candidate's reason", tsr_last_error());
  }
}

// ---------------------------------------------------------------------------
// Discovery.

static void test_discovery_rejects_a_nonexistent_path_as_no_such_file(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  const char *ghost = "/nonexistent-tessera-test/libtessera-ghost.so";
  tsr_context *context = context_new(join(REF, ghost, NULL));
  assert_int_equal(tsr_context_plugin_count(context), 1);
  assert_int_equal(tsr_context_rejected_count(context), 1);
  tsr_rejected_plugin r = rejected_for(context, ghost);
  assert_string_equal(r.path, ghost);
  assert_int_equal(r.status, TSR_NOT_FOUND);
  reason_mentions(&r, "no such file");
  tsr_context_destroy(context);
}

typedef struct temp_folder {
  char path[1024];
  char links[8][1200];
  int count;
} temp_folder;

static void temp_folder_link(temp_folder *folder, const char *name, const char *target) {
  char link[sizeof(folder->links[0])];
  int n = snprintf(link, sizeof(link), "%.1023s/%.100s", folder->path, name);
  assert_true(n > 0 && (size_t)n < sizeof(link));
  memcpy(folder->links[folder->count++], link, sizeof(link));
  if (symlink(target, link) != 0) fail_msg("symlink %s: %s", link, strerror(errno));
}

static void temp_folder_remove(temp_folder *folder) {
  for (int i = 0; i < folder->count; ++i) unlink(folder->links[i]);
  rmdir(folder->path);
}

static void test_discovery_loads_the_plugins_of_a_folder_in_name_order(void **state) {
  (void)state;
  need(OLDMINOR, "the oldminor fixture");
  need(BIGGERTABLE, "the biggertable fixture");
  need(NOENTRY, "the noentry fixture");
  need(REF, "tessera-ref");
  temp_folder folder;
  memset(&folder, 0, sizeof(folder));
  snprintf(folder.path, sizeof(folder.path), "%s/tsr-loader-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  assert_non_null(mkdtemp(folder.path));
  temp_folder_link(&folder, "libtessera-b.so", OLDMINOR);
  temp_folder_link(&folder, "libtessera-a.so", BIGGERTABLE);
  temp_folder_link(&folder, "libtessera-c.so", NOENTRY);
  // Not plugin names: ignored even though one is a working plugin.
  temp_folder_link(&folder, "libref.so", REF);
  temp_folder_link(&folder, "libtessera-ref.so.0", REF);
  temp_folder_link(&folder, "tessera-ref.so", REF);

  tsr_context *context = NULL;
  tsr_status status = context_try(folder.path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, NULL, &context);
  if (status != TSR_OK) {
    temp_folder_remove(&folder);
    fail_msg("context_create(%s): %s", folder.path, tsr_last_error());
  }
  int32_t plugins = tsr_context_plugin_count(context);
  int32_t a = plugin_index(context, "biggertable");
  int32_t b = plugin_index(context, "oldminor");
  int32_t ref = plugin_index(context, "ref");
  int32_t rejected = tsr_context_rejected_count(context);
  tsr_rejected_plugin r;
  memset(&r, 0, sizeof(r));
  r.struct_size = sizeof(r);
  tsr_status got = rejected == 1 ? tsr_context_rejected_get(context, 0, &r) : TSR_INTERNAL;
  char rejected_path[2048] = "";
  if (got == TSR_OK) snprintf(rejected_path, sizeof(rejected_path), "%s", r.path);
  tsr_context_destroy(context);  // r's strings belonged to it
  temp_folder_remove(&folder);

  assert_int_equal(plugins, 2);
  assert_int_equal(a, 0);  // libtessera-a.so
  assert_int_equal(b, 1);  // libtessera-b.so
  assert_int_equal(ref, -1);
  assert_int_equal(rejected, 1);
  assert_int_equal(got, TSR_OK);
  if (strstr(rejected_path, "/libtessera-c.so") == NULL) {
    fail_msg("the rejected candidate is %s, expected the folder's libtessera-c.so", rejected_path);
  }
  assert_int_equal(r.status, TSR_NOT_FOUND);
}

static void test_discovery_searches_the_explicit_path_before_TSR_PLUGIN_PATH(void **state) {
  (void)state;
  need(OLDMINOR, "the oldminor fixture");
  need(BIGGERTABLE, "the biggertable fixture");
  // Twice, with the two fixtures swapped, so name order cannot pass for it.
  const char *order[2][2] = {{BIGGERTABLE, OLDMINOR}, {OLDMINOR, BIGGERTABLE}};
  const char *names[2][2] = {{"biggertable", "oldminor"}, {"oldminor", "biggertable"}};
  for (int round = 0; round < 2; ++round) {
    setenv("TSR_PLUGIN_PATH", order[round][1], 1);
    tsr_context *context = NULL;
    // Without EXPLICIT_PLUGINS_ONLY: the environment and the library's folder count.
    tsr_status status = context_try(order[round][0], 0, NULL, &context);
    unsetenv("TSR_PLUGIN_PATH");
    if (status != TSR_OK) fail_msg("context_create: %s", tsr_last_error());
    int32_t first = plugin_index(context, names[round][0]);
    int32_t second = plugin_index(context, names[round][1]);
    int32_t ref = plugin_index(context, "ref");
    tsr_context_destroy(context);
    assert_int_equal(first, 0);
    assert_int_equal(second, 1);
    // ref comes from libtessera's folder, searched after both.
    assert_true(ref == -1 || ref > second);
  }
}

static void test_explicit_plugins_only_ignores_TSR_PLUGIN_PATH(void **state) {
  (void)state;
  need(OLDMINOR, "the oldminor fixture");
  need(BIGGERTABLE, "the biggertable fixture");
  setenv("TSR_PLUGIN_PATH", OLDMINOR, 1);
  tsr_context *context = context_new(BIGGERTABLE);
  unsetenv("TSR_PLUGIN_PATH");
  assert_int_equal(tsr_context_plugin_count(context), 1);
  assert_int_equal(plugin_index(context, "oldminor"), -1);
  tsr_context_destroy(context);
}

static void test_a_plugin_found_twice_is_loaded_once(void **state) {
  (void)state;
  need(OLDMINOR, "the oldminor fixture");
  setenv("TSR_PLUGIN_PATH", OLDMINOR, 1);
  tsr_context *context = NULL;
  tsr_status status = context_try(join(OLDMINOR, OLDMINOR, NULL), 0, NULL, &context);
  unsetenv("TSR_PLUGIN_PATH");
  if (status != TSR_OK) fail_msg("context_create: %s", tsr_last_error());
  int32_t count = 0;
  for (int32_t i = 0; i < tsr_context_plugin_count(context); ++i) {
    tsr_plugin_info info;
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    CHECK_OK(tsr_context_plugin_info_get(context, i, &info));
    count += strcmp(info.name, "oldminor") == 0;
  }
  int32_t found_rejected = 0;
  for (int32_t i = 0; i < tsr_context_rejected_count(context); ++i) {
    tsr_rejected_plugin r;
    memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    CHECK_OK(tsr_context_rejected_get(context, i, &r));
    found_rejected += same_file(r.path, OLDMINOR);
  }
  tsr_context_destroy(context);
  assert_int_equal(count, 1);
  assert_int_equal(found_rejected, 0);
}

// ---------------------------------------------------------------------------
// Device choice.

static void test_the_device_option_picks_the_default_device(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(OLDMINOR, "the oldminor fixture");
  const char *path = join(OLDMINOR, REF, NULL);
  tsr_context *context = NULL;
  // Nothing asked: ref (priority 100) is preferred over a plugin built
  // before ABI 0.4, which reports no priority.
  CHECK_OK(context_try(path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, NULL, &context));
  assert_string_equal(tsr_device_name(tsr_context_default_device(context)), "ref:0");
  tsr_context_destroy(context);
  CHECK_OK(context_try(path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, "oldminor:0", &context));
  assert_string_equal(tsr_device_name(tsr_context_default_device(context)), "oldminor:0");
  tsr_context_destroy(context);
  CHECK_OK(context_try(path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, "oldminor", &context));
  assert_string_equal(tsr_device_name(tsr_context_default_device(context)), "oldminor:0");
  tsr_context_destroy(context);
  CHECK_OK(context_try(path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, "ref:0", &context));
  assert_string_equal(tsr_device_name(tsr_context_default_device(context)), "ref:0");
  // And the API moves it.
  tsr_device *oldminor = tsr_context_device_find(context, "oldminor:0");
  assert_non_null(oldminor);
  CHECK_OK(tsr_context_default_device_set(context, oldminor));
  assert_ptr_equal(tsr_context_default_device(context), oldminor);
  assert_null(tsr_context_device_find(context, "oldminor:1"));
  assert_int_equal(tsr_last_status(), TSR_NOT_FOUND);
  tsr_context_destroy(context);
}

// The default device is the one whose plugin reports the highest priority,
// whatever its name and wherever it is found; asking still wins.
static void test_a_plugin_reporting_a_higher_priority_outranks_ref(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(PRIORITY, "the priority fixture");
  need(OLDMINOR, "the oldminor fixture");
  const char *orders[2] = {join(REF, PRIORITY, OLDMINOR), join(OLDMINOR, PRIORITY, REF)};
  for (int k = 0; k < 2; ++k) {
    tsr_context *context = NULL;
    CHECK_OK(context_try(orders[k], TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, NULL, &context));
    tsr_device *chosen = tsr_context_default_device(context);
    tsr_device_props props;
    memset(&props, 0, sizeof(props));
    props.struct_size = sizeof(props);
    CHECK_OK(tsr_device_props_get(chosen, &props));
    assert_string_equal(tsr_device_name(chosen), "priority:0");
    assert_int_equal(props.priority, TSR_DEVICE_PRIORITY_REFERENCE + 1000);
    tsr_device *ref = tsr_context_device_find(context, "ref:0");
    CHECK_OK(tsr_device_props_get(ref, &props));
    assert_int_equal(props.priority, TSR_DEVICE_PRIORITY_REFERENCE);
    tsr_context_destroy(context);
    CHECK_OK(context_try(orders[k], TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, "ref:0", &context));
    assert_string_equal(tsr_device_name(tsr_context_default_device(context)), "ref:0");
    tsr_context_destroy(context);
  }
}

static void test_a_device_option_naming_a_missing_device_fails_with_not_found(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  tsr_context *context = NULL;
  tsr_status status = context_try(REF, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, "cuda:3", &context);
  assert_int_equal(status, TSR_NOT_FOUND);
  assert_null(context);
  if (strstr(tsr_last_error(), "cuda:3") == NULL) {
    fail_msg("'%s' does not name the device asked for", tsr_last_error());
  }
  status = context_try(REF, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, "ref:1", &context);
  assert_int_equal(status, TSR_NOT_FOUND);
  assert_non_null(strstr(tsr_last_error(), "ref:1"));
}

static void test_TSR_DEVICE_picks_the_default_device_unless_the_option_does(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(OLDMINOR, "the oldminor fixture");
  const char *path = join(REF, OLDMINOR, NULL);
  tsr_context *context = NULL;
  setenv("TSR_DEVICE", "oldminor:0", 1);
  tsr_status status = context_try(path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, NULL, &context);
  const char *chosen = status == TSR_OK ? tsr_device_name(tsr_context_default_device(context)) : "";
  int env_worked = status == TSR_OK && strcmp(chosen, "oldminor:0") == 0;
  tsr_context_destroy(context);
  context = NULL;
  status = context_try(path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, "ref:0", &context);
  int option_won = status == TSR_OK &&
                   strcmp(tsr_device_name(tsr_context_default_device(context)), "ref:0") == 0;
  tsr_context_destroy(context);
  context = NULL;
  setenv("TSR_DEVICE", "nothing:0", 1);
  status = context_try(path, TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY, NULL, &context);
  unsetenv("TSR_DEVICE");
  assert_true(env_worked);
  assert_true(option_won);
  assert_int_equal(status, TSR_NOT_FOUND);
  assert_null(context);
  assert_non_null(strstr(tsr_last_error(), "nothing:0"));
}

// ---------------------------------------------------------------------------
// Contexts.

static void test_two_contexts_share_one_loaded_plugin(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  tsr_context *first = context_new(REF);
  tsr_context *second = context_new(REF);
  tsr_plugin_info a = plugin_info(first, "ref");
  tsr_plugin_info b = plugin_info(second, "ref");
  assert_string_equal(a.path, b.path);  // one loaded copy
  tsr_device *d1 = tsr_context_device_find(first, "ref:0");
  tsr_device *d2 = tsr_context_device_find(second, "ref:0");
  assert_non_null(d1);
  assert_non_null(d2);
  assert_ptr_equal(tsr_device_context_get(d1), first);
  assert_ptr_equal(tsr_device_context_get(d2), second);
  add_works(d1);
  add_works(d2);

  // The second context's tensors outlive the first context.
  tsr_tensor *kept = tsr_tensor_from_host(d2, TSR_FLOAT32, 1, (int64_t[]){2}, (float[]){5, 6});
  CHECK_TENSOR(kept);
  tsr_context_destroy(first);
  float got[2];
  CHECK_OK(tsr_tensor_to_host(kept, got, sizeof(got)));
  assert_true(got[0] == 5 && got[1] == 6);
  add_works(d2);
  tsr_tensor_release(kept);
  tsr_context_destroy(second);
}

static void test_a_context_keeps_its_device_and_sticky_error_after_a_sharing_context_goes(
    void **state) {
  (void)state;
  need(REF, "tessera-ref");
  tsr_context *first = context_new(REF);
  tsr_context *second = context_new(REF);
  tsr_context_destroy(first);
  tsr_device *device = tsr_context_default_device(second);
  assert_non_null(device);
  tsr_context *owner = tsr_device_context_get(device);
  // An error made on the second context's device sticks to it.
  tsr_tensor *a = tsr_tensor_from_host(device, TSR_FLOAT32, 1, (int64_t[]){2}, (float[]){1, 2});
  tsr_tensor *b =
      tsr_tensor_from_host(device, TSR_FLOAT32, 1, (int64_t[]){3}, (float[]){1, 2, 3});
  CHECK_TENSOR(a);
  CHECK_TENSOR(b);
  assert_null(tsr_add(a, b));
  tsr_status sticky = tsr_context_status(second);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  tsr_context_destroy(second);
  assert_ptr_equal(owner, second);
  assert_int_equal(sticky, TSR_INVALID_ARGUMENT);
}

static void test_contexts_can_be_created_and_destroyed_many_times(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(NOENTRY, "the noentry fixture");
  for (int i = 0; i < 25; ++i) {
    tsr_context *context = context_new(join(REF, NOENTRY, NULL));
    assert_int_equal(tsr_context_plugin_count(context), 1);
    assert_int_equal(tsr_context_rejected_count(context), 1);
    add_works(tsr_context_default_device(context));
    tsr_context_destroy(context);
  }
  // Overlapping lifetimes: each new context reuses the loaded plugin.
  tsr_context *previous = context_new(REF);
  for (int i = 0; i < 10; ++i) {
    tsr_context *next = context_new(REF);
    tsr_context_destroy(previous);
    add_works(tsr_context_default_device(next));
    previous = next;
  }
  tsr_context_destroy(previous);
}

static void test_an_async_plugin_survives_context_create_and_destroy_cycles(void **state) {
  (void)state;
  need(ASYNC, "the async fixture");
  for (int i = 0; i < 10; ++i) {
    tsr_context *context = context_new(ASYNC);
    tsr_device *device = tsr_context_default_device(context);
    assert_string_equal(tsr_device_name(device), "async:0");
    add_works(device);
    tsr_stream *stream = NULL;
    CHECK_OK(tsr_stream_create(device, 0, &stream));
    tsr_stream_release(stream);
    tsr_context_destroy(context);
  }
}

static void test_plugin_and_rejection_queries_check_their_arguments(void **state) {
  (void)state;
  need(REF, "tessera-ref");
  need(NOENTRY, "the noentry fixture");
  tsr_context *context = context_new(join(REF, NOENTRY, NULL));
  tsr_plugin_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  CHECK_OK(tsr_context_plugin_info_get(context, 0, &info));
  assert_string_equal(info.name, "ref");
  assert_true(same_file(info.path, REF));
  assert_int_equal(info.abi_major, TSR_ABI_VERSION_MAJOR);
  assert_int_equal(info.device_count, 1);
  assert_int_equal(tsr_context_plugin_info_get(context, 1, &info), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_context_plugin_info_get(context, -1, &info), TSR_INVALID_ARGUMENT);
  info.struct_size = 8;
  assert_int_equal(tsr_context_plugin_info_get(context, 0, &info), TSR_INVALID_ARGUMENT);
  tsr_rejected_plugin r;
  memset(&r, 0, sizeof(r));
  r.struct_size = sizeof(r);
  assert_int_equal(tsr_context_rejected_get(context, 1, &r), TSR_INVALID_ARGUMENT);
  r.struct_size = 8;
  assert_int_equal(tsr_context_rejected_get(context, 0, &r), TSR_INVALID_ARGUMENT);
  tsr_context_destroy(context);

  tsr_context_options options;
  tsr_context_options_init(&options);
  options.struct_size = 4;
  tsr_context *none = NULL;
  assert_int_equal(tsr_context_create(&options, &none), TSR_INVALID_ARGUMENT);
  assert_null(none);
  tsr_context_options_init(&options);
  options.fallback = 7;
  assert_int_equal(tsr_context_create(&options, &none), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "fallback"));
  assert_int_equal(tsr_context_create(NULL, NULL), TSR_INVALID_ARGUMENT);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, clean_env, clean_env)
  const struct CMUnitTest tests[] = {
      T(test_loader_rejects_a_library_without_the_entry_symbol),
      T(test_loader_rejects_a_plugin_built_for_another_major),
      T(test_loader_rejects_a_plugin_whose_name_breaks_the_rule),
      T(test_loader_rejects_a_plugin_whose_init_fails_with_its_message),
      T(test_loader_rejects_an_unavailable_plugin_with_the_probe_reason),
      T(test_loader_rejects_a_plugin_with_a_missing_dependency_with_the_dlerror_text),
      T(test_loader_loads_a_plugin_built_against_an_older_minor),
      T(test_loader_loads_a_plugin_with_a_bigger_table_than_the_core_knows),
      T(test_context_create_with_only_rejected_candidates_fails_with_the_first_reason),
      T(test_discovery_rejects_a_nonexistent_path_as_no_such_file),
      T(test_discovery_loads_the_plugins_of_a_folder_in_name_order),
      T(test_discovery_searches_the_explicit_path_before_TSR_PLUGIN_PATH),
      T(test_explicit_plugins_only_ignores_TSR_PLUGIN_PATH),
      T(test_a_plugin_found_twice_is_loaded_once),
      T(test_the_device_option_picks_the_default_device),
      T(test_a_plugin_reporting_a_higher_priority_outranks_ref),
      T(test_a_device_option_naming_a_missing_device_fails_with_not_found),
      T(test_TSR_DEVICE_picks_the_default_device_unless_the_option_does),
      T(test_two_contexts_share_one_loaded_plugin),
      T(test_a_context_keeps_its_device_and_sticky_error_after_a_sharing_context_goes),
      T(test_contexts_can_be_created_and_destroyed_many_times),
      T(test_an_async_plugin_survives_context_create_and_destroy_cycles),
      T(test_plugin_and_rejection_queries_check_their_arguments),
  };
#undef T
  if (REF == NULL && OLDMINOR == NULL) {
    fprintf(stderr, "test_loader: skipped: neither tessera-ref nor the loader fixtures are built\n");
    return SKIP_CODE;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
