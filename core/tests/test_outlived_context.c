// A tensor that outlives its context (issue 29): the core keeps the retired
// device's record, refuses work on it and frees only handles on release.
//
// The tensor's device memory belonged to a plugin that has shut down, so it
// is not given back: this test runs alone, and without LeakSanitizer in the
// sanitizer build (core/tests/CMakeLists.txt).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tessera/tessera.h"

#include "test_check.h"

// An op or a copy to the host on a tensor outliving its context is refused
// naming the destroyed context, and releasing it (with a view of it and an
// autograd graph through it) frees the handles without touching the plugin,
// which has shut down.
static void test_a_tensor_released_after_its_context_is_destroyed_is_harmless(void **state) {
  (void)state;
#ifdef TSR_TEST_REF_PLUGIN
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_REF_PLUGIN;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  tsr_context *context = NULL;
  CHECK_OK(tsr_context_create(&options, &context));
  tsr_device *device = tsr_context_default_device(context);
  float data[6] = {1, 2, 3, 4, 5, 6};
  tsr_tensor *a = tsr_tensor_from_host(device, TSR_FLOAT32, 2, (int64_t[]){2, 3}, data);
  CHECK_TENSOR(a);
  CHECK_OK(tsr_tensor_requires_grad_set(a, 1));
  tsr_tensor *b = tsr_mul(a, a);  // holds an autograd node that holds a
  CHECK_TENSOR(b);
  tsr_tensor *view = tsr_transpose(a, 0, 1);
  CHECK_TENSOR(view);
  tsr_context_destroy(context);

  assert_null(tsr_add(b, b));
  assert_int_equal(tsr_last_status(), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "was destroyed"));
  float out[6];
  assert_int_equal(tsr_tensor_to_host(a, out, sizeof(out)), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_last_error(), "was destroyed"));
  tsr_last_error_clear();
  tsr_tensor_release(b);
  tsr_tensor_release(view);
  tsr_tensor_release(a);
  assert_int_equal(tsr_last_status(), TSR_OK);
#endif
}

int main(void) {
#ifndef TSR_TEST_REF_PLUGIN
  fprintf(stderr, "test_outlived_context: skipped: the ref plugin (tessera-ref) is not built\n");
  return SKIP_CODE;
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_tensor_released_after_its_context_is_destroyed_is_harmless),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
