// The oneDNN plugin's entry, identity, device and table.
//
// Memory, streams, events and copies are the own kernels' (ref's code
// compiled in): oneDNN on the CPU works on plain host pointers, so a buffer
// from ref's 64-byte-aligned caching allocator serves both, and fallback to
// the ref device is zero-copy (TSR_DEVICE_HOST_ACCESSIBLE). Kernels go
// through plan.c, which picks oneDNN or the own kernel per signature.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "conv_weight_cache.h"
#include "onednn_plugin.h"
#include "onednn_table.h"
#include "tsr_cpu/cpu_kernels.h"
#include "tessera/plugin_kit.h"

#if defined(__AVX512F__)
#define TSR_ONEDNN_BUILD_ISA "the build's flags: AVX-512"
#elif defined(__AVX2__)
#define TSR_ONEDNN_BUILD_ISA "the build's flags: AVX2"
#else
#define TSR_ONEDNN_BUILD_ISA "the build's flags"
#endif

// The own kernels exist up to three times (CMakeLists.txt): built with the
// project's flags, and for x86-64-v3 (AVX2+FMA) and x86-64-v4 (AVX-512).
// The entry picks one by what the CPU has, or by TSR_ONEDNN_ISA (build,
// avx2, avx512) when that names a level the CPU runs.
typedef struct tsr_onednn_own_build {
  const char *name;  // TSR_ONEDNN_ISA value
  const char *description;
  tsr_status (*create)(const tsr_host_api *host, const tsr_plugin_api **out_api);
  tsr_onednn_resolve_fn resolve;
  int (*runs_here)(void);
} tsr_onednn_own_build;

static int tsr_onednn_cpu_any(void) {
  return 1;
}
#if defined(TSR_ONEDNN_HAS_AVX2)
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_avx2_plugin_table_create(
    const tsr_host_api *host, const tsr_plugin_api **out_api);
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_avx2_exec_args_resolve_for(
    const tsr_plugin_plan *plan, const tsr_exec_args *args, tsr_plugin_stream *stream,
    uint64_t workspace_bytes, char **out_ptrs, char **out_workspace);
static int tsr_onednn_cpu_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi2");
}
#endif
#if defined(TSR_ONEDNN_HAS_AVX512)
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_avx512_plugin_table_create(
    const tsr_host_api *host, const tsr_plugin_api **out_api);
__attribute__((visibility("hidden"))) tsr_status tsr_cpu_avx512_exec_args_resolve_for(
    const tsr_plugin_plan *plan, const tsr_exec_args *args, tsr_plugin_stream *stream,
    uint64_t workspace_bytes, char **out_ptrs, char **out_workspace);
static int tsr_onednn_cpu_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

// Most capable first.
static const tsr_onednn_own_build k_own_builds[] = {
#if defined(TSR_ONEDNN_HAS_AVX512)
    {"avx512", "x86-64-v4: AVX-512", tsr_cpu_avx512_plugin_table_create,
     tsr_cpu_avx512_exec_args_resolve_for, tsr_onednn_cpu_avx512},
#endif
#if defined(TSR_ONEDNN_HAS_AVX2)
    {"avx2", "x86-64-v3: AVX2+FMA", tsr_cpu_avx2_plugin_table_create,
     tsr_cpu_avx2_exec_args_resolve_for, tsr_onednn_cpu_avx2},
#endif
    {"build", TSR_ONEDNN_BUILD_ISA, tsr_cpu_plugin_table_create, tsr_cpu_exec_args_resolve_for,
     tsr_onednn_cpu_any},
};
#define TSR_ONEDNN_OWN_BUILD_COUNT ((int)(sizeof(k_own_builds) / sizeof(k_own_builds[0])))

// The requested build if the CPU runs it, else the most capable that runs.
static const tsr_onednn_own_build *tsr_onednn_own_build_pick(const tsr_host_api *host) {
  const char *want = getenv("TSR_ONEDNN_ISA");
  if (want != NULL && want[0] != '\0') {
    for (int i = 0; i < TSR_ONEDNN_OWN_BUILD_COUNT; ++i) {
      if (strcmp(k_own_builds[i].name, want) != 0)
        continue;
      if (k_own_builds[i].runs_here())
        return &k_own_builds[i];
      break;
    }
    char message[160];
    snprintf(message, sizeof(message),
             "onednn: TSR_ONEDNN_ISA=%s is not a build of the own kernels this CPU runs; "
             "choosing by the CPU",
             want);
    host->log(host->ctx, TSR_LOG_WARNING, message);
  }
  for (int i = 0; i < TSR_ONEDNN_OWN_BUILD_COUNT; ++i) {
    if (k_own_builds[i].runs_here())
      return &k_own_builds[i];
  }
  return &k_own_builds[TSR_ONEDNN_OWN_BUILD_COUNT - 1];
}

static const tsr_host_api *g_host;
static tsr_host_api g_kernel_host;
static const tsr_plugin_api *g_ref;
static tsr_onednn_resolve_fn g_resolve = tsr_cpu_exec_args_resolve_for;
static tsr_plugin_api g_api;
static char g_build_info[192];
static dnnl_engine_t g_engine;
static pthread_key_t g_stream_key;
static pthread_once_t g_stream_key_once = PTHREAD_ONCE_INIT;

void tsr_onednn_host_set(const tsr_host_api *host) {
  g_host = host;
}
const tsr_host_api *tsr_onednn_host_get(void) {
  return g_host;
}
const tsr_host_api *tsr_onednn_kernel_host_get(void) {
  return &g_kernel_host;
}
const tsr_plugin_api *tsr_onednn_ref_api(void) {
  return g_ref;
}
tsr_onednn_resolve_fn tsr_onednn_resolve_get(void) {
  return g_resolve;
}
dnnl_engine_t tsr_onednn_engine_get(void) {
  return g_engine;
}

// --- per-thread oneDNN streams -------------------------------------------------

static void tsr_onednn_stream_release(void *stream) {
  if (stream != NULL)
    dnnl_stream_destroy((dnnl_stream_t)stream);
}

static void tsr_onednn_stream_key_create(void) {
  pthread_key_create(&g_stream_key, tsr_onednn_stream_release);
}

tsr_status tsr_onednn_thread_stream_get(dnnl_stream_t *out_stream) {
  dnnl_stream_t stream = pthread_getspecific(g_stream_key);
  if (stream != NULL) {
    *out_stream = stream;
    return TSR_OK;
  }
  // First op of this thread: not the hot path.
  tsr_status status = tsr_onednn_check(
      dnnl_stream_create(&stream, g_engine, dnnl_stream_default_flags), "dnnl_stream_create");
  if (status != TSR_OK)
    return status;
  if (pthread_setspecific(g_stream_key, stream) != 0) {
    dnnl_stream_destroy(stream);
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "no room for the thread's oneDNN stream");
  }
  *out_stream = stream;
  return TSR_OK;
}

// --- the own kernels' host: the core's, with OpenMP as its pool ------------------

static tsr_status tsr_onednn_host_parallel_for(void *ctx, int64_t count, int64_t grain,
                                               tsr_parallel_fn fn, void *arg) {
  (void)ctx;
  return tsr_onednn_parallel_for(count, grain, fn, arg);
}

static int32_t tsr_onednn_host_thread_count(void *ctx) {
  (void)ctx;
  return tsr_onednn_thread_count_get();
}

// --- lifetime and device -------------------------------------------------------

static tsr_status tsr_onednn_init(void) {
  tsr_onednn_threads_init();
  tsr_onednn_plan_settings_init();
  tsr_onednn_weight_cache_enable();
  pthread_once(&g_stream_key_once, tsr_onednn_stream_key_create);
  // The engine outlives a shutdown: threads may still hold streams on it,
  // and a later entry (the core never unloads a plugin) reuses it.
  if (g_engine == NULL) {
    tsr_status status =
        tsr_onednn_check(dnnl_engine_create(&g_engine, dnnl_cpu, 0), "dnnl_engine_create");
    if (status != TSR_OK)
      return status;
  }
  return TSR_OK;
}

// ref's allocator hands a freed buffer's handle out again and the new
// storage's versions start over, so a blocked-weight copy keyed by (buffer,
// offset, version) would be taken for the new contents: drop it first.
static tsr_status tsr_onednn_buffer_free(tsr_plugin_buffer *buffer, tsr_plugin_stream *stream) {
  tsr_onednn_weight_cache_buffer_forget(buffer);
  return g_ref->buffer_free(buffer, stream);
}

static tsr_status tsr_onednn_shutdown(void) {
  return g_ref->shutdown();
}

static tsr_status tsr_onednn_probe(void) {
  if (dnnl_engine_get_count(dnnl_cpu) == 0) {
    return tsr_onednn_error_set(TSR_UNAVAILABLE, "oneDNN reports no CPU engine");
  }
  return TSR_OK;
}

static tsr_status tsr_onednn_device_props_get(int32_t device, tsr_device_props *out_props) {
  tsr_status status = g_ref->device_props_get(device, out_props);
  if (status != TSR_OK)
    return status;
  if (TSR_ABI_COVERS(out_props, tsr_device_props, name))
    out_props->name = "oneDNN CPU";
  if (TSR_ABI_COVERS(out_props, tsr_device_props, compute_units)) {
    out_props->compute_units = (uint32_t)tsr_onednn_thread_count_get();
  }
  if (TSR_ABI_COVERS(out_props, tsr_device_props, priority))
    out_props->priority = 200;  // above ref and opencl on the same CPU
  return TSR_OK;
}

TSR_ABI_EXPORT tsr_status tsr_plugin_entry(const tsr_host_api *host,
                                           const tsr_plugin_api **out_api) {
  if (out_api != NULL)
    *out_api = NULL;
  tsr_status checked = tsr_kit_host_check("onednn", host, TSR_KIT_HOST_THREADS);
  if (checked != TSR_OK)
    return checked;
  if (out_api == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "onednn: out_api is NULL");
  }
  tsr_onednn_host_set(host);
  g_kernel_host = *host;
  g_kernel_host.struct_size = sizeof(g_kernel_host);
  g_kernel_host.parallel_for = tsr_onednn_host_parallel_for;
  g_kernel_host.thread_count = tsr_onednn_host_thread_count;
  const tsr_onednn_own_build *own = tsr_onednn_own_build_pick(host);
  tsr_status status = own->create(&g_kernel_host, &g_ref);
  if (status != TSR_OK)
    return status;
  g_resolve = own->resolve;

  snprintf(g_build_info, sizeof(g_build_info),
           "%s; own kernels: portable C11 built for %s (chosen at run time)",
           tsr_dnnl_version_string(), own->description);
  g_api = *g_ref;
  g_api.struct_size = sizeof(g_api);
  g_api.abi_major = TSR_ABI_VERSION_MAJOR;
  g_api.abi_minor = TSR_ABI_VERSION_MINOR;
  g_api.name = "onednn";
  g_api.version = "0.1.0";
  g_api.vendor = "Tessera";
  g_api.build_info = g_build_info;
  g_api.init = tsr_onednn_init;
  g_api.shutdown = tsr_onednn_shutdown;
  g_api.probe = tsr_onednn_probe;
  g_api.device_props_get = tsr_onednn_device_props_get;
  g_api.buffer_free = tsr_onednn_buffer_free;
  g_api.op_supports = tsr_onednn_op_supports;
  g_api.plan_create = tsr_onednn_plan_create;
  g_api.plan_info_get = tsr_onednn_plan_info_get;
  g_api.plan_execute = tsr_onednn_plan_execute;
  g_api.plan_destroy = tsr_onednn_plan_destroy;
  g_api.parallel_for = tsr_onednn_parallel_for;
  g_api.thread_count_get = tsr_onednn_thread_count_get;
  *out_api = &g_api;
  return TSR_OK;
}
