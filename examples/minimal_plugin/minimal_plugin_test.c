// minimal_plugin_test.c: loads the minimal example plugin, and only it,
// through the SDK and checks an add on its device.
//
//     minimal_plugin_test PATH/libtessera-minimal.so
//
// Exits 0 when a + b comes back right, the device is the plugin's, and an op
// the plugin lacks fails instead of running elsewhere (fallback denied).
#include <stdio.h>
#include <string.h>
#include <tessera/tessera.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH/libtessera-minimal.so\n", argv[0]);
    return 2;
  }
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = argv[1];
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;  // not ref, not TSR_PLUGIN_PATH
  options.device = "minimal";
  options.fallback = TSR_FALLBACK_DENY;  // nothing may run elsewhere
  tsr_context *context = NULL;
  if (tsr_context_create(&options, &context) != TSR_OK) {
    fprintf(stderr, "minimal_plugin_test: no context: %s\n", tsr_last_error());
    return 1;
  }
  int ok = 1;
  tsr_device *device = tsr_context_default_device(context);
  printf("device: %s\n", tsr_device_name(device));
  if (tsr_context_plugin_count(context) != 1 || strcmp(tsr_device_name(device), "minimal:0") != 0) {
    fprintf(stderr, "minimal_plugin_test: expected the minimal plugin alone\n");
    ok = 0;
  }

  enum { ROWS = 3, COLS = 5 };
  float a_data[ROWS][COLS], b_data[ROWS][COLS], got[ROWS][COLS];
  for (int i = 0; i < ROWS; ++i) {
    for (int j = 0; j < COLS; ++j) {
      a_data[i][j] = 0.5f * (float)(i * COLS + j);
      b_data[i][j] = 100.0f - (float)j;
    }
  }
  const int64_t sizes[2] = {ROWS, COLS};
  tsr_tensor *a = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, a_data);
  tsr_tensor *b = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, b_data);
  tsr_tensor *sum = tsr_add(a, b);
  if (sum == NULL || tsr_tensor_to_host(sum, got, sizeof(got)) != TSR_OK) {
    fprintf(stderr, "minimal_plugin_test: add failed: %s\n", tsr_last_error());
    ok = 0;
  } else {
    for (int i = 0; i < ROWS; ++i) {
      for (int j = 0; j < COLS; ++j) {
        if (got[i][j] != a_data[i][j] + b_data[i][j]) {
          fprintf(stderr, "minimal_plugin_test: sum[%d][%d] = %g, want %g\n", i, j, got[i][j],
                  a_data[i][j] + b_data[i][j]);
          ok = 0;
        }
      }
    }
  }
  // The plugin has no MUL; with fallback denied the op must fail, not run
  // on some other device.
  tsr_tensor *product = tsr_mul(a, b);
  if (product != NULL) {
    fprintf(stderr, "minimal_plugin_test: mul ran, but the plugin has no mul\n");
    ok = 0;
  }
  tsr_context_error_clear(context);

  tsr_tensor_release(product);
  tsr_tensor_release(sum);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  tsr_context_destroy(context);
  printf("%s\n", ok ? "minimal plugin: add agrees" : "minimal plugin: FAILED");
  return ok ? 0 : 1;
}
