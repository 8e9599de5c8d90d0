// The library's table: its one device, and the entries that tie the
// allocator, streams and plans together. A plugin presents it under its own
// name, device name and priority (cpu_kernels.h).
#include <string.h>
#include <unistd.h>

#include "buffer.h"
#include "host.h"
#include "plan.h"
#include "stream.h"
#include "tessera/plugin_kit.h"
#include "tsr_cpu/cpu_kernels.h"

#if defined(__clang__)
#define TSR_CPU_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define TSR_CPU_COMPILER "gcc " __VERSION__
#else
#define TSR_CPU_COMPILER "an unknown C11 compiler"
#endif

#if defined(__AVX512F__)
#define TSR_CPU_ISA ", AVX-512"
#elif defined(__AVX2__) && defined(__FMA__)
#define TSR_CPU_ISA ", AVX2+FMA"
#elif defined(__AVX__)
#define TSR_CPU_ISA ", AVX"
#elif defined(__SSE2__)
#define TSR_CPU_ISA ", SSE2"
#else
#define TSR_CPU_ISA ""
#endif

static tsr_status tsr_cpu_shutdown(void) {
  // Nothing of the library is in use any more: give the cached blocks back.
  return tsr_cpu_allocator_trim(0);
}

static tsr_status tsr_cpu_probe(void) { return TSR_OK; }

static tsr_status tsr_cpu_device_count_get(int32_t *out_count) {
  if (out_count == NULL) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "device_count_get: out_count is NULL");
  }
  *out_count = 1;
  return TSR_OK;
}

// The device's name and priority as the presenting plugin set them
// (tsr_cpu_device_identity_set); written before the table is handed out.
static const char *g_device_name = "Tessera CPU kernels";
static int32_t g_device_priority = TSR_DEVICE_PRIORITY_NONE;

void tsr_cpu_device_identity_set(const char *name, int32_t priority) {
  g_device_name = name;
  g_device_priority = priority;
}

static tsr_status tsr_cpu_device_props_get(int32_t device, tsr_device_props *out_props) {
  if (device != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "device_props_get: device %d does not exist",
                             (int)device);
  }
  if (out_props == NULL || out_props->struct_size < sizeof(size_t)) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                             "device_props_get: out_props is NULL or its struct_size is too small");
  }
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  tsr_device_props props = {
      .struct_size = out_props->struct_size,
      .name = g_device_name,
      .memory_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0,
      .compute_units = (uint32_t)tsr_cpu_thread_count_get(),
      .flags = TSR_DEVICE_HOST_ACCESSIBLE | TSR_DEVICE_EVENTS | TSR_DEVICE_TIMING_EVENTS,
      .dtype_mask = TSR_DTYPE_BIT(TSR_FLOAT32) | TSR_DTYPE_BIT(TSR_FLOAT64) |
                    TSR_DTYPE_BIT(TSR_BFLOAT16) | TSR_DTYPE_BIT(TSR_FLOAT16) |
                    TSR_DTYPE_BIT(TSR_INT32) | TSR_DTYPE_BIT(TSR_INT64) | TSR_DTYPE_BIT(TSR_BOOL),
      .base_alignment = TSR_CPU_BASE_ALIGNMENT,
      .priority = g_device_priority,
  };
  TSR_KIT_OUT_COPY(out_props, props);
  return TSR_OK;
}

static const tsr_plugin_api k_cpu_api = {
    .struct_size = sizeof(tsr_plugin_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .name = "cpu",
    .version = "0.1.0",
    .vendor = "Tessera",
    .build_info = "portable C11 (" TSR_CPU_COMPILER TSR_CPU_ISA ")",
    .init = NULL,
    .shutdown = tsr_cpu_shutdown,
    .probe = tsr_cpu_probe,
    .device_count_get = tsr_cpu_device_count_get,
    .device_props_get = tsr_cpu_device_props_get,
    .buffer_alloc = tsr_cpu_buffer_alloc,
    .buffer_free = tsr_cpu_buffer_free,
    .buffer_host_ptr_get = tsr_cpu_buffer_host_ptr_get,
    // The library's buffers are host memory already: no pinned staging to offer.
    .host_pinned_alloc = NULL,
    .host_pinned_free = NULL,
    .allocator_stats_get = tsr_cpu_allocator_stats_get,
    .allocator_trim = tsr_cpu_allocator_trim,
    .copy_host_to_device = tsr_cpu_copy_host_to_device,
    .copy_device_to_host = tsr_cpu_copy_device_to_host,
    .copy_device_to_device = tsr_cpu_copy_device_to_device,
    .stream_create = tsr_cpu_stream_create,
    .stream_destroy = tsr_cpu_stream_destroy,
    .stream_synchronize = tsr_cpu_stream_synchronize,
    .stream_query = tsr_cpu_stream_query,
    .stream_wait_event = tsr_cpu_stream_wait_event,
    .event_create = tsr_cpu_event_create,
    .event_destroy = tsr_cpu_event_destroy,
    .event_record = tsr_cpu_event_record,
    .event_query = tsr_cpu_event_query,
    .event_synchronize = tsr_cpu_event_synchronize,
    .event_elapsed_get = tsr_cpu_event_elapsed_get,
    .op_supports = tsr_cpu_op_supports,
    .plan_create = tsr_cpu_plan_create,
    .plan_info_get = tsr_cpu_plan_info_get,
    .plan_execute = tsr_cpu_plan_execute,
    .plan_destroy = tsr_cpu_plan_destroy,
};

tsr_status tsr_cpu_plugin_table_create(const tsr_host_api *host, const tsr_plugin_api **out_api) {
  if (out_api != NULL) *out_api = NULL;
  tsr_status status = tsr_kit_host_check("cpu", host, TSR_KIT_HOST_THREADS);
  if (status != TSR_OK) return status;
  if (out_api == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "cpu: out_api is NULL");
  }
  tsr_cpu_host_set(host);
  *out_api = &k_cpu_api;
  return TSR_OK;
}
