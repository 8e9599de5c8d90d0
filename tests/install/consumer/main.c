// Uses an installed Tessera as an application would: creates a context, adds
// two tensors on the default device and checks the sum. argv[1] is the
// install prefix; the default device's plugin must have been loaded from it,
// so that a build tree or another installation cannot stand in for it.
#define _XOPEN_SOURCE 700  // realpath
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/tessera.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static int fail(const char *what) {
  fprintf(stderr, "install consumer: %s: %s (%s)\n", what, tsr_last_error(),
          tsr_status_name(tsr_last_status()));
  return 1;
}

// True when |path| names a file under the folder |prefix|, symbolic links
// resolved on both sides.
static int path_is_under(const char *path, const char *prefix) {
  char real_path[PATH_MAX], real_prefix[PATH_MAX];
  if (!realpath(path, real_path) || !realpath(prefix, real_prefix))
    return 0;
  size_t n = strlen(real_prefix);
  return strncmp(real_path, real_prefix, n) == 0 && real_path[n] == '/';
}

// The path of the plugin that provides |device|, or NULL.
static const char *device_plugin_path(const tsr_context *context, const tsr_device *device) {
  const char *plugin = tsr_device_plugin_name(device);
  for (int32_t i = 0; i < tsr_context_plugin_count(context); ++i) {
    tsr_plugin_info info = {.struct_size = sizeof(info)};
    if (tsr_context_plugin_info_get(context, i, &info) == TSR_OK && plugin &&
        strcmp(info.name, plugin) == 0) {
      return info.path;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s INSTALL_PREFIX\n", argv[0]);
    return 2;
  }
  const char *prefix = argv[1];
  const char *header_version =
      STR(TSR_VERSION_MAJOR) "." STR(TSR_VERSION_MINOR) "." STR(TSR_VERSION_PATCH);
  if (strcmp(tsr_version(), header_version) != 0) {
    fprintf(stderr, "install consumer: library is %s, header is %s\n", tsr_version(),
            header_version);
    return 1;
  }

  tsr_context *context = NULL;
  if (tsr_context_create(NULL, &context) != TSR_OK)
    return fail("tsr_context_create");
  int rc = 1;
  tsr_tensor *a = NULL, *b = NULL, *sum = NULL;
  tsr_device *device = tsr_context_default_device(context);
  if (!device) {
    fail("tsr_context_default_device");
    goto done;
  }
  const char *path = device_plugin_path(context, device);
  if (!path || !path_is_under(path, prefix)) {
    fprintf(stderr, "install consumer: device %s comes from '%s', not from under '%s'\n",
            tsr_device_name(device), path ? path : "(no plugin)", prefix);
    goto done;
  }

  // Values whose sums are exact in float32, so the check can be exact.
  const int64_t sizes[2] = {2, 3};
  const float a_data[6] = {0.5f, 1.0f, -2.0f, 3.25f, 4.0f, 100.0f};
  const float b_data[6] = {1.25f, -1.0f, 0.5f, 0.75f, -8.0f, 0.125f};
  float got[6] = {0};
  a = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, a_data);
  b = tsr_tensor_from_host(device, TSR_FLOAT32, 2, sizes, b_data);
  if (!a || !b) {
    fail("tsr_tensor_from_host");
    goto done;
  }
  sum = tsr_add(a, b);
  if (!sum) {
    fail("tsr_add");
    goto done;
  }
  if (tsr_tensor_to_host(sum, got, sizeof(got)) != TSR_OK) {
    fail("tsr_tensor_to_host");
    goto done;
  }
  for (int i = 0; i < 6; ++i) {
    if (got[i] != a_data[i] + b_data[i]) {
      fprintf(stderr, "install consumer: sum[%d] is %g, expected %g\n", i, (double)got[i],
              (double)(a_data[i] + b_data[i]));
      goto done;
    }
  }
  printf("install consumer: Tessera %s, %s from %s: 2x3 add ok\n", tsr_version(),
         tsr_device_name(device), path);
  rc = 0;

done:
  tsr_tensor_release(sum);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
  tsr_context_destroy(context);
  return rc;
}
