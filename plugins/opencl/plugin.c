// The OpenCL plugin's entry, identity, lifetime, devices and table.
//
// The plugin links the ICD loader only (libOpenCL), so it loads on any
// machine; init discovers platforms and devices, and the probe reports
// "unavailable" with the reason when there are none. ref's objects are
// compiled in for argument validation only (plan.c).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_table.h"
#include "tsr_cpu/cpu_kernels.h"
#include "tessera/plugin_kit.h"

static const tsr_host_api *g_host;
static const tsr_plugin_api *g_ref;
static int g_initialized;

const tsr_host_api *tsr_ocl_host(void) {
  return g_host;
}

const tsr_plugin_api *tsr_ocl_ref_api(void) {
  return g_ref;
}

static tsr_status tsr_ocl_init(void) {
  if (g_initialized) return TSR_OK;
  tsr_status status = tsr_ocl_devices_discover();
  if (status == TSR_OK) g_initialized = 1;
  return status;
}

// TSR_OPENCL_STATS=<file>: appends the program cache's counters at shutdown,
// so a test (or a user chasing slow start-up) can see whether anything was
// compiled from source in this process.
static void stats_write(void) {
  const char *path = getenv("TSR_OPENCL_STATS");
  if (path == NULL || path[0] == '\0') return;
  tsr_ocl_program_stats stats;
  tsr_ocl_program_stats_get(&stats);
  // Non-blocking and only a regular file: a FIFO without a reader must not
  // hang shutdown.
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0666);
  struct stat st;
  if (fd < 0) return;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    tsr_ocl_log(TSR_LOG_WARNING, "TSR_OPENCL_STATS=%.64s is not a regular file; no statistics",
                path);
    return;
  }
  FILE *f = fdopen(fd, "a");
  if (f == NULL) {
    close(fd);
    return;
  }
  fprintf(f,
          "source_builds=%llu binary_loads=%llu build_calls=%llu memory_hits=%llu "
          "source_build_ms=%.1f binary_build_ms=%.1f\n",
          (unsigned long long)stats.source_builds, (unsigned long long)stats.binary_loads,
          (unsigned long long)stats.build_calls, (unsigned long long)stats.memory_hits,
          stats.source_build_ms, stats.binary_build_ms);
  fclose(f);
}

static tsr_status tsr_ocl_shutdown(void) {
  if (!g_initialized) return TSR_OK;
  stats_write();
  tsr_ocl_programs_release();
  tsr_ocl_tune_release();
  tsr_ocl_devices_release();
  g_initialized = 0;
  return TSR_OK;
}

static tsr_status tsr_ocl_probe(void) {
  if (!g_initialized) {
    tsr_status status = tsr_ocl_init();
    if (status != TSR_OK) return status;
  }
  if (tsr_ocl_device_count() == 0) {
    return tsr_ocl_error(TSR_UNAVAILABLE, "unavailable: %s", tsr_ocl_devices_unavailable_reason());
  }
  return TSR_OK;
}

static tsr_status tsr_ocl_device_count_get(int32_t *out_count) {
  if (out_count == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "device_count_get: out_count is NULL");
  }
  *out_count = tsr_ocl_device_count();
  return TSR_OK;
}

static tsr_status tsr_ocl_device_props_get(int32_t device, tsr_device_props *out_props) {
  const tsr_ocl_device *d = tsr_ocl_device_get(device);
  if (d == NULL) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT, "device_props_get: device %d does not exist",
                         (int)device);
  }
  if (out_props == NULL || out_props->struct_size < sizeof(size_t)) {
    return tsr_ocl_error(TSR_INVALID_ARGUMENT,
                         "device_props_get: out_props is NULL or its struct_size is too small");
  }
  uint32_t dtypes = TSR_DTYPE_BIT(TSR_FLOAT32) | TSR_DTYPE_BIT(TSR_INT32) |
                    TSR_DTYPE_BIT(TSR_INT64) | TSR_DTYPE_BIT(TSR_BOOL);
  if (d->caps & TSR_OCL_CAP_FP64) dtypes |= TSR_DTYPE_BIT(TSR_FLOAT64);
  tsr_device_props props = {
      .struct_size = out_props->struct_size,
      .name = d->name,
      .memory_bytes = d->global_mem_bytes,
      .compute_units = d->compute_units,
      .flags = TSR_DEVICE_ASYNC | TSR_DEVICE_EVENTS | TSR_DEVICE_TIMING_EVENTS,
      .dtype_mask = dtypes,
      .base_alignment = d->base_alignment,
      // Above ref, below onednn: on a CPU runtime (pocl) oneDNN is faster.
      .priority = 150,
  };
  TSR_KIT_OUT_COPY(out_props, props);
  return TSR_OK;
}

#if defined(__clang__)
#define TSR_OCL_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define TSR_OCL_COMPILER "gcc " __VERSION__
#else
#define TSR_OCL_COMPILER "a C11 compiler"
#endif

static const tsr_plugin_api k_api = {
    .struct_size = sizeof(tsr_plugin_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .name = "opencl",
    .version = "0.1.0",
    .vendor = "Tessera",
    .build_info = "OpenCL 1.2 API through the ICD loader (" TSR_OCL_COMPILER ")",
    .init = tsr_ocl_init,
    .shutdown = tsr_ocl_shutdown,
    .probe = tsr_ocl_probe,
    .device_count_get = tsr_ocl_device_count_get,
    .device_props_get = tsr_ocl_device_props_get,
    .buffer_alloc = tsr_ocl_buffer_alloc,
    .buffer_free = tsr_ocl_buffer_free,
    .buffer_host_ptr_get = NULL,  // device memory: not host-accessible by contract
    .host_pinned_alloc = tsr_ocl_host_pinned_alloc,
    .host_pinned_free = tsr_ocl_host_pinned_free,
    .allocator_stats_get = tsr_ocl_allocator_stats_get,
    .allocator_trim = tsr_ocl_allocator_trim,
    .copy_host_to_device = tsr_ocl_copy_host_to_device,
    .copy_device_to_host = tsr_ocl_copy_device_to_host,
    .copy_device_to_device = tsr_ocl_copy_device_to_device,
    .stream_create = tsr_ocl_stream_create,
    .stream_destroy = tsr_ocl_stream_destroy,
    .stream_synchronize = tsr_ocl_stream_synchronize,
    .stream_query = tsr_ocl_stream_query,
    .stream_wait_event = tsr_ocl_stream_wait_event,
    .event_create = tsr_ocl_event_create,
    .event_destroy = tsr_ocl_event_destroy,
    .event_record = tsr_ocl_event_record,
    .event_query = tsr_ocl_event_query,
    .event_synchronize = tsr_ocl_event_synchronize,
    .event_elapsed_get = tsr_ocl_event_elapsed_get,
    .op_supports = tsr_ocl_op_supports,
    .plan_create = tsr_ocl_plan_create,
    .plan_info_get = tsr_ocl_plan_info_get,
    .plan_execute = tsr_ocl_plan_execute,
    .plan_destroy = tsr_ocl_plan_destroy,
    // No thread runtime of its own: the device's threads are the driver's.
    .parallel_for = NULL,
    .thread_count_get = NULL,
};

TSR_ABI_EXPORT tsr_status tsr_plugin_entry(const tsr_host_api *host,
                                           const tsr_plugin_api **out_api) {
  if (out_api != NULL) *out_api = NULL;
  const tsr_plugin_api *ref = NULL;
  tsr_status status = tsr_cpu_plugin_table_create(host, &ref);
  if (status != TSR_OK) return status;
  if (out_api == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "opencl: out_api is NULL");
  }
  g_host = host;
  g_ref = ref;
  *out_api = &k_api;
  return TSR_OK;
}
