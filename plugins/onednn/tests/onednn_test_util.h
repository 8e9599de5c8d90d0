// Shared by the oneDNN plugin's SDK tests: a context on onednn:0 with every
// primitive path enabled, and running an op while checking which engine its
// plan uses (tsr_op_engine_get), so a case meant for a oneDNN primitive
// cannot pass by quietly running on the own kernel, or the reverse.
#ifndef TESSERA_PLUGINS_ONEDNN_TESTS_ONEDNN_TEST_UTIL_H_
#define TESSERA_PLUGINS_ONEDNN_TESTS_ONEDNN_TEST_UTIL_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"
#include "test_support.h"

#ifndef TSR_TEST_ONEDNN_PATH
#error "TSR_TEST_ONEDNN_PATH must name the oneDNN plugin"
#endif

static tsr_context *g_context;
static tsr_device *g_device;

static int group_setup(void **state) {
  (void)state;
  // Every primitive path, whatever the plugin's size thresholds.
  setenv("TSR_ONEDNN_MIN_ELEMENTS", "0", 1);
  g_context = ts_context_create(TSR_TEST_ONEDNN_PATH, "onednn:0");
  if (g_context == NULL)
    return -1;
  g_device = tsr_context_default_device(g_context);
  if (g_device == NULL || strcmp(tsr_device_name(g_device), "onednn:0") != 0) {
    fprintf(stderr, "default device is %s, not onednn:0\n",
            g_device ? tsr_device_name(g_device) : "NULL");
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  g_context = NULL;
  g_device = NULL;
  return 0;
}

// Which engine an op must use; ENGINE_ANY where it depends on the ISA.
typedef enum { ENGINE_ONEDNN, ENGINE_OWN, ENGINE_ANY } engine_kind;

// Checks that |op| plans onto |want| ("onednn:<impl>" or "own:<kernel>"),
// prints the engine, then runs it. |what| names the case (may be NULL).
static void onednn_run_expect(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                              int32_t num_outputs, tsr_tensor *const *outputs, const void *attrs,
                              engine_kind want, const char *what) {
  what = what ? what : "";
  const char *engine = NULL;
  tsr_status status =
      tsr_op_engine_get(op, num_inputs, inputs, num_outputs, outputs, attrs, &engine);
  if (status != TSR_OK) {
    fail_msg("%s %s: plan: %s: %s", what, tsr_op_name(op), tsr_status_name(status),
             tsr_last_error());
  }
  const int on_onednn = strncmp(engine, "onednn:", 7) == 0;
  const int on_own = strncmp(engine, "own:", 4) == 0;
  const int ok = want == ENGINE_ONEDNN ? on_onednn
                 : want == ENGINE_OWN  ? on_own
                                       : on_onednn || on_own;
  print_message("  %-44s %-24s engine=%s\n", what, tsr_op_name(op), engine);
  if (!ok) {
    fail_msg("%s %s ran on engine %s, expected %s", what, tsr_op_name(op), engine,
             want == ENGINE_ONEDNN ? "a oneDNN primitive"
             : want == ENGINE_OWN  ? "the own kernel"
                                   : "a oneDNN primitive or the own kernel");
  }
  status = tsr_op_run(op, num_inputs, inputs, num_outputs, outputs, attrs);
  if (status != TSR_OK) {
    fail_msg("%s %s: %s: %s", what, tsr_op_name(op), tsr_status_name(status), tsr_last_error());
  }
}

static double *dalloc(int64_t n) {
  double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  assert_non_null(p);
  return p;
}

#endif  // TESSERA_PLUGINS_ONEDNN_TESTS_ONEDNN_TEST_UTIL_H_
