// The CUDA plugin as an application meets it: through the core's discovery.
// Without a driver it is a rejected candidate whose reason is the probe's
// ("unavailable: ..."), and the context still opens on ref; with a GPU it
// is loaded with its devices.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <string.h>

#include "tessera/tessera.h"

static void test_plugin_is_loaded_or_rejected_with_the_probe_reason(void **state) {
  (void)state;
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_CUDA_PLUGIN ":" TSR_TEST_REF_PLUGIN;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  options.device = "ref:0";
  tsr_context *context = NULL;
  assert_int_equal(tsr_context_create(&options, &context), TSR_OK);
  int found = 0;
  for (int32_t i = 0; i < tsr_context_plugin_count(context); ++i) {
    tsr_plugin_info info = {.struct_size = sizeof(info)};
    assert_int_equal(tsr_context_plugin_info_get(context, i, &info), TSR_OK);
    if (strcmp(info.name, "cuda") == 0) {
      assert_true(info.device_count >= 1);
      found = 1;
    }
  }
  for (int32_t i = 0; i < tsr_context_rejected_count(context); ++i) {
    tsr_rejected_plugin rejected = {.struct_size = sizeof(rejected)};
    assert_int_equal(tsr_context_rejected_get(context, i, &rejected), TSR_OK);
    if (strstr(rejected.path, "libtessera-cuda") != NULL) {
      assert_int_equal(rejected.status, TSR_UNAVAILABLE);
      assert_non_null(strstr(rejected.reason, "unavailable: "));
      found = 1;
    }
  }
  assert_true(found);
  tsr_context_destroy(context);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plugin_is_loaded_or_rejected_with_the_probe_reason),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
