// The CUDA plugin through its one exported symbol: it loads without a
// driver, names itself, and its probe gives cudart's reason. On a machine
// with a GPU the same tests check the devices instead.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "tessera/abi.h"
#include "test_host.h"

// cudart's cudaStreamLegacy and cudaStreamPerThread (driver_types.h); this
// test is built without CUDA's headers.
#define CUDA_STREAM_LEGACY ((void *)(uintptr_t)0x1)
#define CUDA_STREAM_PER_THREAD ((void *)(uintptr_t)0x2)

static void *g_library;
static tsr_plugin_entry_fn g_entry;

static int open_plugin(void **state) {
  (void)state;
  g_library = dlopen(TSR_TEST_CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (g_library == NULL)
    return -1;
  g_entry = (tsr_plugin_entry_fn)dlsym(g_library, TSR_PLUGIN_ENTRY_NAME);
  return g_entry == NULL ? -1 : 0;
}

// Never dlclosed: the core does not unload plugins either (abi.md 3.3).
static int close_plugin(void **state) {
  (void)state;
  return 0;
}

static const tsr_plugin_api *start(void) {
  const tsr_plugin_api *api = NULL;
  assert_int_equal(g_entry(tsr_cuda_test_host(), &api), TSR_OK);
  assert_non_null(api);
  if (api->init != NULL)
    assert_int_equal(api->init(), TSR_OK);
  return api;
}

static void test_entry_refuses_a_bad_host_table(void **state) {
  (void)state;
  const tsr_plugin_api *api = (const tsr_plugin_api *)1;
  assert_int_equal(g_entry(NULL, &api), TSR_INVALID_ARGUMENT);
  assert_null(api);
  tsr_host_api host = *tsr_cuda_test_host();
  host.abi_major = TSR_ABI_VERSION_MAJOR + 1;
  assert_int_equal(g_entry(&host, &api), TSR_ABI_MISMATCH);
  host = *tsr_cuda_test_host();
  tsr_cuda_test_message_clear();
  assert_int_equal(g_entry(&host, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_cuda_test_message(), "out_api is NULL"));
}

static void test_identity_names_the_plugin_and_its_libraries(void **state) {
  (void)state;
  const tsr_plugin_api *api = start();
  assert_string_equal(api->name, "cuda");
  assert_int_equal(api->abi_major, TSR_ABI_VERSION_MAJOR);
  assert_int_equal(api->struct_size, sizeof(tsr_plugin_api));
  assert_non_null(strstr(api->build_info, "CUDA runtime"));
  assert_non_null(strstr(api->build_info, "cuDNN 9."));
  assert_non_null(strstr(api->build_info, "cuBLASLt"));
  // Device memory is not host-accessible; the timing and event entries are there.
  assert_null(api->buffer_host_ptr_get);
  assert_non_null(api->event_elapsed_get);
  assert_non_null(api->host_pinned_alloc);
  assert_non_null(api->allocator_trim);
  assert_non_null(api->plan_create);
  // ABI 0.3: an application's cudaStream_t can be imported.
  assert_int_equal(api->abi_minor, TSR_ABI_VERSION_MINOR);
  assert_true(TSR_ABI_HAS(api, tsr_plugin_api, stream_import));
  assert_int_equal(api->shutdown(), TSR_OK);
}

static void test_probe_gives_the_runtime_reason_or_devices(void **state) {
  (void)state;
  const tsr_plugin_api *api = start();
  tsr_cuda_test_message_clear();
  tsr_status status = api->probe();
  int32_t count = -1;
  assert_int_equal(api->device_count_get(&count), TSR_OK);
  if (status == TSR_OK) {
    // A machine with a GPU.
    assert_true(count >= 1);
    tsr_device_props props = {.struct_size = sizeof(props)};
    assert_int_equal(api->device_props_get(0, &props), TSR_OK);
    assert_true(props.memory_bytes > 0);
    assert_int_equal(props.base_alignment, 256);
    assert_true(props.flags & TSR_DEVICE_TIMING_EVENTS);
  } else {
    assert_int_equal(status, TSR_UNAVAILABLE);
    const char *m = tsr_cuda_test_message();
    assert_memory_equal(m, "unavailable: ", 13);
    // cudart's own words follow, with its error name.
    assert_true(strlen(m) > 20);
    assert_non_null(strstr(m, "cudaError"));
    assert_int_equal(count, 0);
    // Without the driver library at all, the reason says that, not cudart's
    // "insufficient driver".
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == NULL)
      assert_non_null(strstr(m, "no NVIDIA driver is installed"));
    else
      dlclose(driver);
  }
  assert_int_equal(api->shutdown(), TSR_OK);
}

static void test_calls_on_a_missing_device_are_refused_by_name(void **state) {
  (void)state;
  const tsr_plugin_api *api = start();
  int32_t count = 0;
  assert_int_equal(api->device_count_get(&count), TSR_OK);
  tsr_plugin_buffer *buffer = (tsr_plugin_buffer *)1;
  tsr_cuda_test_message_clear();
  assert_int_equal(api->buffer_alloc(count, 64, NULL, &buffer), TSR_INVALID_ARGUMENT);
  assert_null(buffer);
  assert_non_null(strstr(tsr_cuda_test_message(), "buffer_alloc: device is"));
  tsr_plugin_stream *stream = (tsr_plugin_stream *)1;
  assert_int_equal(api->stream_create(count, 0, &stream), TSR_INVALID_ARGUMENT);
  assert_null(stream);
  assert_non_null(strstr(tsr_cuda_test_message(), "stream_create: device is"));
  tsr_device_props props = {.struct_size = sizeof(props)};
  assert_int_equal(api->device_props_get(-1, &props), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->device_count_get(NULL), TSR_INVALID_ARGUMENT);
  tsr_allocator_stats stats = {.struct_size = sizeof(stats)};
  assert_int_equal(api->allocator_stats_get(count, &stats), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->allocator_trim(count), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->buffer_free(NULL, NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->stream_synchronize(NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->event_query(NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->plan_destroy(NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->shutdown(), TSR_OK);
}

static void test_op_supports_names_a_missing_device(void **state) {
  (void)state;
  const tsr_plugin_api *api = start();
  int32_t count = 0;
  api->device_count_get(&count);
  tsr_tensor_desc out = {.struct_size = sizeof(out),
                         .dtype = TSR_FLOAT32,
                         .rank = 1,
                         .sizes = {4},
                         .strides = {1},
                         .device = count,
                         .alias_group = -1};
  tsr_op_signature sig = {.struct_size = sizeof(sig),
                          .op = 1 /* FILL */,
                          .device = count,
                          .num_inputs = 0,
                          .num_outputs = 1,
                          .outputs = &out};
  tsr_cuda_test_message_clear();
  assert_int_equal(api->op_supports(&sig), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_cuda_test_message(), "fill: device is"));
  tsr_plugin_plan *plan = (tsr_plugin_plan *)1;
  assert_int_equal(api->plan_create(&sig, &plan), TSR_INVALID_ARGUMENT);
  assert_null(plan);
  assert_int_equal(api->op_supports(NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(api->shutdown(), TSR_OK);
}

// What stream_import refuses before it looks at the driver, and, on a
// machine without one (or for a device beyond the last), the device by name.
static void test_stream_import_refuses_bad_arguments_and_a_missing_device(void **state) {
  (void)state;
  const tsr_plugin_api *api = start();
  int32_t count = 0;
  assert_int_equal(api->device_count_get(&count), TSR_OK);
  // Never dereferenced: every call below is refused before CUDA sees it.
  void *native = (void *)(uintptr_t)0x1000;
  tsr_plugin_stream *stream = (tsr_plugin_stream *)1;
  tsr_cuda_test_message_clear();
  assert_int_equal(api->stream_import(0, native, 0, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_cuda_test_message(), "stream_import: out_stream is NULL"));
  assert_int_equal(api->stream_import(0, native, 1u << 3, &stream), TSR_INVALID_ARGUMENT);
  assert_null(stream);
  assert_non_null(strstr(tsr_cuda_test_message(), "unknown bits 0x8"));
  assert_int_equal(api->stream_import(0, NULL, 0, &stream), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_cuda_test_message(), "native is NULL"));
  assert_int_equal(api->stream_import(0, CUDA_STREAM_PER_THREAD, 0, &stream), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_cuda_test_message(), "cudaStreamPerThread"));
  assert_int_equal(
      api->stream_import(0, CUDA_STREAM_LEGACY, TSR_STREAM_IMPORT_TAKE_OWNERSHIP, &stream),
      TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_cuda_test_message(), "cudaStreamLegacy"));
  // No driver: count is 0 and device 0 is missing; with one, |count| is.
  stream = (tsr_plugin_stream *)1;
  assert_int_equal(api->stream_import(count, native, TSR_STREAM_IMPORT_TAKE_OWNERSHIP, &stream),
                   TSR_INVALID_ARGUMENT);
  assert_null(stream);
  assert_non_null(strstr(tsr_cuda_test_message(), "stream_import: device is"));
  assert_int_equal(api->shutdown(), TSR_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entry_refuses_a_bad_host_table),
      cmocka_unit_test(test_identity_names_the_plugin_and_its_libraries),
      cmocka_unit_test(test_probe_gives_the_runtime_reason_or_devices),
      cmocka_unit_test(test_calls_on_a_missing_device_are_refused_by_name),
      cmocka_unit_test(test_op_supports_names_a_missing_device),
      cmocka_unit_test(test_stream_import_refuses_bad_arguments_and_a_missing_device),
  };
  return cmocka_run_group_tests(tests, open_plugin, close_plugin);
}
