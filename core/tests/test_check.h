// Assertions shared by the core tests: a failing call fails the test with
// the status name and tsr_last_error(), so a red test says why.
#ifndef TESSERA_CORE_TESTS_TEST_CHECK_H_
#define TESSERA_CORE_TESTS_TEST_CHECK_H_

#include <string.h>

#include "tessera/tessera.h"

// The exit status ctest counts as skipped (SKIP_RETURN_CODE in CMake).
#define SKIP_CODE 77

// The ref plugin the build made, or NULL when the build did not pass it.
#ifdef TSR_TEST_REF_PLUGIN
#define REF TSR_TEST_REF_PLUGIN
#else
#define REF NULL
#endif

#define CHECK_OK(expr)                                                                 \
  do {                                                                                 \
    tsr_status check_status_ = (expr);                                                 \
    if (check_status_ != TSR_OK) {                                                     \
      fail_msg("%s: %s: %s", #expr, tsr_status_name(check_status_), tsr_last_error()); \
    }                                                                                  \
  } while (0)

#define CHECK_TENSOR(t)                                                \
  do {                                                                 \
    if ((t) == NULL) fail_msg("%s is NULL: %s", #t, tsr_last_error()); \
  } while (0)

// A context on the plugins of |plugin_path| only, whose default device is
// |device|, under fallback |policy|; fails the test with the reason if not.
static inline tsr_context *test_context_on(const char *plugin_path, const char *device,
                                           tsr_fallback_policy_t policy) {
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = plugin_path;
  options.device = device;
  options.fallback = policy;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  tsr_context *context = NULL;
  tsr_status status = tsr_context_create(&options, &context);
  if (status != TSR_OK) {
    fail_msg("context_create(%s): %s: %s", plugin_path, tsr_status_name(status), tsr_last_error());
  }
  if (strcmp(tsr_device_name(tsr_context_default_device(context)), device) != 0) {
    fail_msg("the default device is %s, not %s", tsr_device_name(tsr_context_default_device(context)),
             device);
  }
  return context;
}

// The context's fallback counters.
static inline tsr_fallback_stats test_fallback_stats(const tsr_context *context) {
  tsr_fallback_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  CHECK_OK(tsr_context_fallback_stats_get(context, &stats));
  return stats;
}

// A float32 tensor of |data| on |device|.
static inline tsr_tensor *test_floats(tsr_device *device, int32_t rank, const int64_t *sizes,
                                      const float *data) {
  tsr_tensor *t = tsr_tensor_from_host(device, TSR_FLOAT32, rank, sizes, data);
  CHECK_TENSOR(t);
  return t;
}

#endif  // TESSERA_CORE_TESTS_TEST_CHECK_H_
