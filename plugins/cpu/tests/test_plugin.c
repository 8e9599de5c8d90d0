// The library's table: its identity, device, host checks, and what it says
// about ops it lacks. (ref's identity: plugins/ref/tests/test_entry.c.)
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_host.h"
#include "test_util.h"
#include "tsr_cpu/cpu_kernels.h"

static void test_plugin_names_itself_and_its_build(void **state) {
  (void)state;
  assert_int_equal(tt_api->struct_size, sizeof(tsr_plugin_api));
  assert_int_equal(tt_api->abi_major, TSR_ABI_VERSION_MAJOR);
  assert_int_equal(tt_api->abi_minor, TSR_ABI_VERSION_MINOR);
  assert_string_equal(tt_api->name, "cpu");
  assert_string_equal(tt_api->vendor, "Tessera");
  assert_string_equal(tt_api->version, "0.1.0");
  assert_non_null(strstr(tt_api->build_info, "portable C11"));
  assert_int_equal(tt_api->probe(), TSR_OK);
}

static void test_plugin_has_one_host_accessible_device_with_timing_events(void **state) {
  (void)state;
  int32_t count = 0;
  assert_int_equal(tt_api->device_count_get(&count), TSR_OK);
  assert_int_equal(count, 1);
  tsr_device_props props = {.struct_size = sizeof(props)};
  assert_int_equal(tt_api->device_props_get(0, &props), TSR_OK);
  assert_string_equal(props.name, "Tessera CPU kernels");
  assert_int_equal(props.priority, TSR_DEVICE_PRIORITY_NONE);
  assert_true(props.memory_bytes > (64ull << 20));
  assert_int_equal(props.compute_units, (uint32_t)tsr_test_host_get()->thread_count(NULL));
  assert_int_equal(props.flags, TSR_DEVICE_HOST_ACCESSIBLE | TSR_DEVICE_EVENTS |
                                    TSR_DEVICE_TIMING_EVENTS);
  const uint32_t want_dtypes = TSR_DTYPE_BIT(TSR_FLOAT32) | TSR_DTYPE_BIT(TSR_FLOAT64) |
                               TSR_DTYPE_BIT(TSR_BFLOAT16) | TSR_DTYPE_BIT(TSR_FLOAT16) |
                               TSR_DTYPE_BIT(TSR_INT32) | TSR_DTYPE_BIT(TSR_INT64) |
                               TSR_DTYPE_BIT(TSR_BOOL);
  assert_int_equal(props.dtype_mask, want_dtypes);
  assert_int_equal(props.base_alignment, 64);
  assert_int_equal(tt_api->device_props_get(1, &props), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "device 1"));
  // An older, shorter props struct is filled only as far as it reaches.
  struct { size_t struct_size; const char *name; uint64_t canary; } old = {16, NULL, 5};
  assert_int_equal(tt_api->device_props_get(0, (tsr_device_props *)&old), TSR_OK);
  assert_non_null(old.name);
  assert_int_equal(old.canary, 5);
}

static void test_plugin_create_refuses_a_missing_or_mismatched_host(void **state) {
  (void)state;
  const tsr_plugin_api *api = (const tsr_plugin_api *)1;
  assert_int_equal(tsr_cpu_plugin_table_create(NULL, &api), TSR_INVALID_ARGUMENT);
  assert_null(api);
  tsr_host_api host = *tsr_test_host_get();
  host.abi_major = TSR_ABI_VERSION_MAJOR + 1;
  assert_int_equal(tsr_cpu_plugin_table_create(&host, &api), TSR_ABI_MISMATCH);
  host = *tsr_test_host_get();
  host.struct_size = offsetof(tsr_host_api, parallel_for);
  assert_int_equal(tsr_cpu_plugin_table_create(&host, &api), TSR_ABI_MISMATCH);
  assert_non_null(strstr(tsr_test_host_error_get(), "lacks functions"));
  host = *tsr_test_host_get();
  host.parallel_for = NULL;
  assert_int_equal(tsr_cpu_plugin_table_create(&host, &api), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "parallel_for"));
  // The good host still works, and a newer minor is fine.
  host = *tsr_test_host_get();
  host.abi_minor = TSR_ABI_VERSION_MINOR + 3;
  assert_int_equal(tsr_cpu_plugin_table_create(&host, &api), TSR_OK);
  assert_ptr_equal(api, tt_api);
  assert_int_equal(tsr_cpu_plugin_table_create(tsr_test_host_get(), &api), TSR_OK);
}

static void test_plugin_says_which_ops_are_not_implemented_yet(void **state) {
  (void)state;
  const int64_t sizes[] = {1, 1, 4, 4};
  tt_tensor x, w, y;
  tt_tensor_make(&x, TSR_FLOAT32, 4, sizes, NULL, 0);
  tt_tensor_make(&w, TSR_FLOAT32, 4, sizes, NULL, 0);
  tt_tensor_make(&y, TSR_FLOAT32, 4, sizes, NULL, 0);
  tt_tensor *in[] = {&x, &w};
  tt_tensor *outs[] = {&y};
  // Ops being added run their own checks (these operands are wrong for
  // most); an op not there yet says so by name.
  for (int32_t op = TSR_OP_CONV2D; op < TSR_OP_COUNT; ++op) {
    char want[96];
    snprintf(want, sizeof(want), "ref: %s is not implemented yet", tsr_op_name(op));
    if (tt_supports(op, NULL, in, 2, outs, 1) == TSR_UNSUPPORTED &&
        strstr(tsr_test_host_error_get(), "is not implemented yet") != NULL) {
      assert_string_equal(tsr_test_host_error_get(), want);
    }
  }
  // An id past the end may come from a newer catalogue: unsupported.
  assert_int_equal(tt_supports(TSR_OP_COUNT, NULL, in, 2, outs, 1), TSR_UNSUPPORTED);
  assert_non_null(strstr(tsr_test_host_error_get(), "not in ref's catalogue"));
  assert_int_equal(tt_supports(TSR_OP_INVALID, NULL, in, 2, outs, 1), TSR_INVALID_ARGUMENT);
  // bfloat16 and float16 are taken like any float dtype; mixing them is not.
  tt_tensor h, hy;
  tt_tensor_make(&h, TSR_FLOAT16, 4, sizes, NULL, 0);
  tt_tensor_make(&hy, TSR_BFLOAT16, 4, sizes, NULL, 0);
  tsr_unary_attrs attrs = {sizeof(attrs), TSR_UNARY_NEG, 0, 0};
  in[0] = &h;
  outs[0] = &h;
  assert_int_equal(tt_supports(TSR_OP_UNARY, &attrs, in, 1, outs, 1), TSR_OK);
  outs[0] = &hy;
  assert_int_equal(tt_supports(TSR_OP_UNARY, &attrs, in, 1, outs, 1), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "out dtype bfloat16 differs from x dtype float16"));
  tt_tensor_free(&x);
  tt_tensor_free(&w);
  tt_tensor_free(&y);
  tt_tensor_free(&h);
  tt_tensor_free(&hy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plugin_names_itself_and_its_build),
      cmocka_unit_test(test_plugin_has_one_host_accessible_device_with_timing_events),
      cmocka_unit_test(test_plugin_create_refuses_a_missing_or_mismatched_host),
      cmocka_unit_test(test_plugin_says_which_ops_are_not_implemented_yet),
  };
  int failed = cmocka_run_group_tests_name("plugin, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("plugin, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
