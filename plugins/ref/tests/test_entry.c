// ref's entry: the CPU-kernel library's table under ref's name, device name
// and priority, and the entry's refusals.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <string.h>

#include "tessera/abi.h"
#include "test_host.h"

// The entry under test (../entry.c), compiled into this program.
tsr_status tsr_plugin_entry(const tsr_host_api *host, const tsr_plugin_api **out_api);

static void test_entry_presents_the_library_as_ref(void **state) {
  (void)state;
  const tsr_plugin_api *cpu = tsr_test_host_start(1);
  assert_non_null(cpu);
  // Before the entry the device is the library's own.
  const tsr_plugin_api *api = NULL;
  assert_int_equal(tsr_plugin_entry(tsr_test_host_get(), &api), TSR_OK);
  assert_non_null(api);
  assert_int_equal(api->struct_size, sizeof(tsr_plugin_api));
  assert_string_equal(api->name, "ref");
  assert_string_equal(api->vendor, "Tessera");
  assert_string_equal(api->version, "0.1.0");
  assert_non_null(strstr(api->build_info, "portable C11"));
  // Everything but the identity is the library's.
  assert_ptr_equal(api->plan_create, cpu->plan_create);
  assert_ptr_equal(api->buffer_alloc, cpu->buffer_alloc);
  assert_ptr_equal(api->stream_create, cpu->stream_create);
  assert_ptr_equal(api->device_props_get, cpu->device_props_get);
  tsr_device_props props = {.struct_size = sizeof(props)};
  assert_int_equal(api->device_props_get(0, &props), TSR_OK);
  assert_string_equal(props.name, "Tessera reference CPU");
  assert_int_equal(props.priority, TSR_DEVICE_PRIORITY_REFERENCE);
  assert_int_equal(props.base_alignment, 64);
  // An older, shorter props struct is filled only as far as it reaches.
  struct { size_t struct_size; const char *name; uint64_t canary; } old = {16, NULL, 5};
  assert_int_equal(api->device_props_get(0, (tsr_device_props *)&old), TSR_OK);
  assert_string_equal(old.name, "Tessera reference CPU");
  assert_int_equal(old.canary, 5);
  assert_int_equal(api->device_props_get(1, &props), TSR_INVALID_ARGUMENT);
  tsr_test_host_stop();
}

static void test_entry_refuses_a_missing_host_or_out_api(void **state) {
  (void)state;
  assert_non_null(tsr_test_host_start(1));
  const tsr_plugin_api *api = (const tsr_plugin_api *)1;
  assert_int_equal(tsr_plugin_entry(NULL, &api), TSR_INVALID_ARGUMENT);
  assert_null(api);
  assert_int_equal(tsr_plugin_entry(tsr_test_host_get(), NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "ref: out_api is NULL"));
  tsr_host_api host = *tsr_test_host_get();
  host.abi_major = TSR_ABI_VERSION_MAJOR + 1;
  api = (const tsr_plugin_api *)1;
  assert_int_equal(tsr_plugin_entry(&host, &api), TSR_ABI_MISMATCH);
  assert_null(api);
  tsr_test_host_stop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entry_presents_the_library_as_ref),
      cmocka_unit_test(test_entry_refuses_a_missing_host_or_out_api),
  };
  return cmocka_run_group_tests_name("ref entry", tests, NULL, NULL);
}
