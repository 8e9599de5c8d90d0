// Run under `ulimit -v` by ctest (test_opencl_out_of_memory_is_a_status): a
// 4 GiB tensor on the OpenCL device must come back as TSR_OUT_OF_MEMORY (or,
// if it allocates, fill and synchronize with a status), never abort. PoCL
// allocates lazily and used to abort in an assertion at the first fill; the
// plugin now backs host-memory devices with memory it allocates itself.
// Exit 0 when every call returned a status, 77 when no OpenCL device runs.
#include <stdio.h>
#include <stdlib.h>

#include "tessera/tessera.h"

int main(void) {
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_OPENCL_PATH;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  options.device = "opencl:0";
  tsr_context *context = NULL;
  if (tsr_context_create(&options, &context) != TSR_OK) {
    printf("SKIPPED: no OpenCL device: %s\n", tsr_last_error());
    return 77;
  }
  tsr_device *device = tsr_context_default_device(context);
  const int64_t sizes[1] = {(int64_t)1 << 30};  // 4 GiB of float32
  tsr_tensor *t = tsr_tensor_empty(device, TSR_FLOAT32, 1, sizes);
  if (t == NULL) {
    printf("tensor_empty: %s: %s\n", tsr_status_name(tsr_last_status()), tsr_last_error());
    int ok = tsr_last_status() == TSR_OUT_OF_MEMORY;
    tsr_context_destroy(context);
    return ok ? 0 : 1;
  }
  tsr_status status = tsr_fill_(t, 1.0);
  printf("fill_: %s %s\n", tsr_status_name(status), status == TSR_OK ? "" : tsr_last_error());
  status = tsr_device_synchronize(device);
  printf("synchronize: %s %s\n", tsr_status_name(status), status == TSR_OK ? "" : tsr_last_error());
  tsr_tensor_release(t);
  tsr_context_destroy(context);
  return 0;
}
