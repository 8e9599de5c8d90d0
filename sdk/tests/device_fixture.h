// The fixture the device tests of sdk/tests share: one context holding the
// plugin under test (TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, set per test
// binary by tsr_sdk_device_test), opened once per group, and a clean error
// state with grad mode on before each test. Include once, in the test file.
#ifndef TESSERA_SDK_TESTS_DEVICE_FIXTURE_H_
#define TESSERA_SDK_TESTS_DEVICE_FIXTURE_H_

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

// Opens the device under test (cmocka group setup).
static int group_setup(void **state) {
  (void)state;
  if (ts_device_open(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, &g_context, &g_device) != 0)
    return -1;
  return 0;
}

// Destroys the context of group_setup (cmocka group teardown).
static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  g_context = NULL;
  g_device = NULL;
  return 0;
}

// Each test starts with a clean error state and grad mode on (cmocka setup).
static inline int test_setup(void **state) {
  (void)state;
  tsr_context_error_clear(g_context);
  tsr_last_error_clear();
  tsr_grad_mode_set(1);
  return 0;
}

#endif  // TESSERA_SDK_TESTS_DEVICE_FIXTURE_H_
