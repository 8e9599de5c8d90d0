// The CUDA plugin's entry, identity, probe, devices and table.
//
// Nothing here calls CUDA before the probe: the entry only records the host
// and builds the table, so the library loads (and cudart stays unloaded from
// the driver's point of view) on a machine without a GPU.
#include <cublasLt.h>
#include <cuda.h>  // driver types only: entries are found through cudart
#include <cudnn_graph.h>
#include <cudnn_version.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_plan.h"
#include "cuda_plugin.h"
#include "tsr_cpu/cpu_kernels.h"
#include "tessera/plugin_kit.h"

static const tsr_host_api *g_host;
static const tsr_plugin_api *g_ref;
static tsr_plugin_api g_api;
static char g_build_info[256];

// What the first look at the driver found. Guarded by g_devices_lock: the
// count is read once per start (abi.md: constant while started).
static pthread_mutex_t g_devices_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_devices_known;
static int32_t g_device_count;
static cudaError_t g_device_error;
static char g_device_names[TSR_CUDA_MAX_DEVICES][256];

const tsr_host_api *tsr_cuda_host(void) {
  return g_host;
}

const tsr_plugin_api *tsr_cuda_ref(void) {
  return g_ref;
}

static int tsr_cuda_sticky(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorDevicesUnavailable:
      return 1;
    default:
      return 0;
  }
}

tsr_status tsr_cuda_check(cudaError_t error, const char *function, const char *call) {
  if (error == cudaSuccess)
    return TSR_OK;
  // Non-sticky errors stay as cudart's "last error" otherwise and would be
  // reported again by the next unrelated call.
  (void)cudaGetLastError();
  tsr_status status = TSR_INTERNAL;
  if (error == cudaErrorMemoryAllocation)
    status = TSR_OUT_OF_MEMORY;
  else if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
           error == cudaErrorInitializationError || error == cudaErrorSystemDriverMismatch ||
           error == cudaErrorCompatNotSupportedOnDevice)
    status = TSR_UNAVAILABLE;
  else if (tsr_cuda_sticky(error))
    status = TSR_DEVICE_LOST;
  return g_host->error_set(g_host->ctx, status, "%s: %s failed: %s (%s)", function, call,
                           cudaGetErrorString(error), cudaGetErrorName(error));
}

static void tsr_cuda_devices_discover(void) {
  pthread_mutex_lock(&g_devices_lock);
  if (!g_devices_known) {
    int count = 0;
    g_device_error = cudaGetDeviceCount(&count);
    if (g_device_error != cudaSuccess) {
      (void)cudaGetLastError();
      count = 0;
    }
    if (count > TSR_CUDA_MAX_DEVICES)
      count = TSR_CUDA_MAX_DEVICES;
    g_device_count = count;
    tsr_cuda_memory_init(count);
    g_devices_known = 1;
  }
  pthread_mutex_unlock(&g_devices_lock);
}

int32_t tsr_cuda_device_count(void) {
  tsr_cuda_devices_discover();
  return g_device_count;
}

tsr_status tsr_cuda_device_check(int32_t device, const char *function) {
  int32_t count = tsr_cuda_device_count();
  if (device < 0 || device >= count) {
    return g_host->error_set(g_host->ctx, TSR_INVALID_ARGUMENT, "%s: device is %d, outside [0, %d)",
                             function, (int)device, (int)count);
  }
  return TSR_OK;
}

tsr_status tsr_cuda_device_enter(int32_t device, const char *function,
                                 tsr_cuda_device_scope *out_scope) {
  out_scope->previous = device;
  out_scope->switched = 0;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    (void)cudaGetLastError();
    current = -1;
  }
  if (current == device)
    return TSR_OK;
  tsr_status status = tsr_cuda_check(cudaSetDevice(device), function, "cudaSetDevice");
  if (status == TSR_OK && current >= 0) {
    out_scope->previous = current;
    out_scope->switched = 1;
  }
  return status;
}

// The driver's cuDeviceGet and cuDevicePrimaryCtxGetState, found through
// cudart (the plugin never links libcuda); NULL when the driver lacks them.
typedef CUresult (*tsr_cu_device_get_fn)(CUdevice *device, int ordinal);
typedef CUresult (*tsr_cu_primary_state_fn)(CUdevice device, unsigned int *flags, int *active);
static pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;
static tsr_cu_device_get_fn g_cu_device_get;
static tsr_cu_primary_state_fn g_cu_primary_state;

static void tsr_cuda_driver_entries_find(void) {
  void *get = NULL, *state = NULL;
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  // 12000: both entries are older than that; the newest ABI up to 12.0 is the
  // plain function, and any driver that runs this runtime has it.
  if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &get, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    get = NULL;
  if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &state, 12000,
                                       cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    state = NULL;
  (void)cudaGetLastError();
  g_cu_device_get = (tsr_cu_device_get_fn)get;
  g_cu_primary_state = (tsr_cu_primary_state_fn)state;
}

// 0 only when the primary context of |device| is known not to exist yet.
static int tsr_cuda_primary_context_may_exist(int device) {
  pthread_once(&g_driver_once, tsr_cuda_driver_entries_find);
  CUdevice handle = 0;
  unsigned int flags = 0;
  int active = 1;
  if (g_cu_device_get == NULL || g_cu_primary_state == NULL ||
      g_cu_device_get(&handle, device) != CUDA_SUCCESS ||
      g_cu_primary_state(handle, &flags, &active) != CUDA_SUCCESS)
    return 1;
  return active != 0;
}

void tsr_cuda_device_leave(const tsr_cuda_device_scope *scope) {
  if (!scope->switched || !tsr_cuda_primary_context_may_exist(scope->previous))
    return;
  if (cudaSetDevice(scope->previous) != cudaSuccess)
    (void)cudaGetLastError();
}

static tsr_status tsr_cuda_init(void) {
  return TSR_OK;
}

static tsr_status tsr_cuda_shutdown(void) {
  tsr_cuda_handles_shutdown();
  tsr_cuda_conv_shutdown();
  pthread_mutex_lock(&g_devices_lock);
  if (g_devices_known)
    tsr_cuda_memory_shutdown();
  g_devices_known = 0;
  pthread_mutex_unlock(&g_devices_lock);
  return g_ref->shutdown != NULL ? g_ref->shutdown() : TSR_OK;
}

// 1 when the driver library loads; otherwise 0 with dlerror's words in
// |why|. cudart opens libcuda.so.1 itself, so when it is there it is usually
// loaded already (RTLD_NOLOAD finds it without a second load).
static int tsr_cuda_driver_library_present(char *why, size_t why_size) {
  void *library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (library == NULL)
    library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (library == NULL) {
    const char *error = dlerror();
    snprintf(why, why_size, "%s", error != NULL ? error : "libcuda.so.1 not found");
    return 0;
  }
  dlclose(library);
  return 1;
}

// Cheap: cudaGetDeviceCount loads the driver if there is one and creates no
// context. Its error text is the reason ("no CUDA-capable device is
// detected", "CUDA driver version is insufficient for CUDA runtime version"),
// except that cudart says "insufficient driver" also when there is no driver
// at all: then the probe says so.
static tsr_status tsr_cuda_probe(void) {
  tsr_cuda_devices_discover();
  char why[256];
  if ((g_device_error == cudaErrorInsufficientDriver || g_device_error == cudaErrorNoDevice) &&
      !tsr_cuda_driver_library_present(why, sizeof(why))) {
    return g_host->error_set(g_host->ctx, TSR_UNAVAILABLE,
                             "unavailable: no NVIDIA driver is installed (libcuda.so.1 cannot be "
                             "loaded: %.200s; cudart reports %s)",
                             why, cudaGetErrorName(g_device_error));
  }
  if (g_device_error != cudaSuccess) {
    return g_host->error_set(g_host->ctx, TSR_UNAVAILABLE, "unavailable: %s (%s)",
                             cudaGetErrorString(g_device_error), cudaGetErrorName(g_device_error));
  }
  if (g_device_count == 0) {
    return g_host->error_set(g_host->ctx, TSR_UNAVAILABLE,
                             "unavailable: the CUDA driver reports no device");
  }
  return TSR_OK;
}

static tsr_status tsr_cuda_device_count_get(int32_t *out_count) {
  if (out_count == NULL) {
    return g_host->error_set(g_host->ctx, TSR_INVALID_ARGUMENT,
                             "device_count_get: out_count is NULL");
  }
  *out_count = tsr_cuda_device_count();
  return TSR_OK;
}

static tsr_status tsr_cuda_device_props_get(int32_t device, tsr_device_props *out_props) {
  if (out_props == NULL) {
    return g_host->error_set(g_host->ctx, TSR_INVALID_ARGUMENT,
                             "device_props_get: out_props is NULL");
  }
  tsr_status status = tsr_cuda_device_check(device, "device_props_get");
  if (status != TSR_OK)
    return status;
  struct cudaDeviceProp prop;
  status = tsr_cuda_check(cudaGetDeviceProperties(&prop, device), "device_props_get",
                          "cudaGetDeviceProperties");
  if (status != TSR_OK)
    return status;
  pthread_mutex_lock(&g_devices_lock);
  snprintf(g_device_names[device], sizeof(g_device_names[device]), "%.200s (sm_%d%d)", prop.name,
           prop.major, prop.minor);
  pthread_mutex_unlock(&g_devices_lock);
  tsr_device_props props = {
      .struct_size = sizeof(props),
      .name = g_device_names[device],
      .memory_bytes = (uint64_t)prop.totalGlobalMem,
      .compute_units = (uint32_t)prop.multiProcessorCount,
      .flags = TSR_DEVICE_ASYNC | TSR_DEVICE_EVENTS | TSR_DEVICE_TIMING_EVENTS,
      .dtype_mask = (1u << TSR_DTYPE_COUNT) - 1u,
      // cudaMalloc returns 256-byte aligned addresses; the size classes keep it.
      .base_alignment = 256,
      .priority = 300,  // a GPU outranks every CPU plugin
  };
  TSR_KIT_OUT_COPY(out_props, props);
  return TSR_OK;
}

// The one exported symbol (abi.h): checks |host|, sets up ref for validation
// and returns the plugin's static table, valid until the library is unloaded.
// Called once per load on the loading thread; touches no CUDA device.
TSR_ABI_EXPORT tsr_status tsr_plugin_entry(const tsr_host_api *host,
                                           const tsr_plugin_api **out_api) {
  if (out_api != NULL)
    *out_api = NULL;
  tsr_status checked = tsr_kit_host_check("cuda", host, TSR_KIT_HOST_THREADS);
  if (checked != TSR_OK)
    return checked;
  if (out_api == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "cuda: out_api is NULL");
  tsr_status status = tsr_cpu_plugin_table_create(host, &g_ref);
  if (status != TSR_OK)
    return status;
  g_host = host;
  size_t lt_version = cublasLtGetVersion();
  snprintf(g_build_info, sizeof(g_build_info),
           "CUDA runtime %d.%d (built), cuBLASLt %zu (loaded), cuDNN %d.%d.%d (built) / %zu "
           "(loaded); kernels for sm " TSR_CUDA_ARCHS,
           CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10, lt_version, CUDNN_MAJOR,
           CUDNN_MINOR, CUDNN_PATCHLEVEL, cudnnGetVersion());
  memset(&g_api, 0, sizeof(g_api));
  g_api.struct_size = sizeof(g_api);
  g_api.abi_major = TSR_ABI_VERSION_MAJOR;
  g_api.abi_minor = TSR_ABI_VERSION_MINOR;
  g_api.name = "cuda";
  g_api.version = "0.1.0";
  g_api.vendor = "Tessera";
  g_api.build_info = g_build_info;
  g_api.init = tsr_cuda_init;
  g_api.shutdown = tsr_cuda_shutdown;
  g_api.probe = tsr_cuda_probe;
  g_api.device_count_get = tsr_cuda_device_count_get;
  g_api.device_props_get = tsr_cuda_device_props_get;
  g_api.buffer_alloc = tsr_cuda_buffer_alloc;
  g_api.buffer_free = tsr_cuda_buffer_free;
  g_api.buffer_host_ptr_get = NULL;  // device memory: not host-accessible
  g_api.host_pinned_alloc = tsr_cuda_host_pinned_alloc;
  g_api.host_pinned_free = tsr_cuda_host_pinned_free;
  g_api.allocator_stats_get = tsr_cuda_allocator_stats;
  g_api.allocator_trim = tsr_cuda_allocator_trim_entry;
  g_api.copy_host_to_device = tsr_cuda_copy_host_to_device;
  g_api.copy_device_to_host = tsr_cuda_copy_device_to_host;
  g_api.copy_device_to_device = tsr_cuda_copy_device_to_device;
  g_api.stream_create = tsr_cuda_stream_create;
  g_api.stream_destroy = tsr_cuda_stream_destroy;
  g_api.stream_synchronize = tsr_cuda_stream_synchronize;
  g_api.stream_query = tsr_cuda_stream_query;
  g_api.stream_wait_event = tsr_cuda_stream_wait_event;
  g_api.event_create = tsr_cuda_event_create;
  g_api.event_destroy = tsr_cuda_event_destroy;
  g_api.event_record = tsr_cuda_event_record;
  g_api.event_query = tsr_cuda_event_query;
  g_api.event_synchronize = tsr_cuda_event_synchronize;
  g_api.event_elapsed_get = tsr_cuda_event_elapsed_get;
  g_api.op_supports = tsr_cuda_op_supports;
  g_api.plan_create = tsr_cuda_plan_create;
  g_api.plan_info_get = tsr_cuda_plan_info_get;
  g_api.plan_execute = tsr_cuda_plan_execute;
  g_api.plan_destroy = tsr_cuda_plan_destroy;
  g_api.stream_import = tsr_cuda_stream_import_entry;
  *out_api = &g_api;
  return TSR_OK;
}
