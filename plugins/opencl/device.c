// Device discovery over every platform the ICD loader knows.
//
// Runs once at init. No platform (the loader's -1001) or no usable device is
// not an error: the plugin then has no devices and the probe reports the
// reason. Devices are ordered GPUs, then accelerators, then CPUs, so
// "opencl:0" is the most capable kind the machine has.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_table.h"

static tsr_ocl_device g_devices[TSR_OCL_MAX_DEVICES];
static int32_t g_device_count;
static char g_unavailable[512];

int32_t tsr_ocl_device_count(void) {
  return g_device_count;
}

tsr_ocl_device *tsr_ocl_device_get(int32_t index) {
  if (index < 0 || index >= g_device_count) return NULL;
  return &g_devices[index];
}

const char *tsr_ocl_devices_unavailable_reason(void) {
  return g_unavailable;
}

static void string_info(cl_device_id id, cl_device_info what, char *out, size_t size) {
  out[0] = '\0';
  if (clGetDeviceInfo(id, what, size, out, NULL) != CL_SUCCESS) out[0] = '\0';
  out[size - 1] = '\0';
}

// "OpenCL 1.2 ..." -> 102; 0 when unreadable.
static int parse_version(const char *text) {
  int major = 0, minor = 0;
  if (sscanf(text, "OpenCL %d.%d", &major, &minor) != 2) return 0;
  return major * 100 + minor;
}

static int has_extension(const char *extensions, const char *name) {
  size_t len = strlen(name);
  for (const char *p = strstr(extensions, name); p != NULL; p = strstr(p + 1, name)) {
    int starts = p == extensions || p[-1] == ' ';
    int ends = p[len] == '\0' || p[len] == ' ';
    if (starts && ends) return 1;
  }
  return 0;
}

static int kind_rank(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return 0;
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return 1;
  return 2;
}

// Fills |d| for |id| or says why the device cannot serve (*out_reason).
static int device_describe(cl_platform_id platform, cl_device_id id, tsr_ocl_device *d,
                           char *out_reason, size_t reason_size) {
  memset(d, 0, sizeof(*d));
  d->platform = platform;
  d->id = id;
  char platform_name[96] = "", device_name[128] = "";
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof(platform_name), platform_name, NULL);
  platform_name[sizeof(platform_name) - 1] = '\0';
  clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof(d->platform_version),
                    d->platform_version, NULL);
  d->platform_version[sizeof(d->platform_version) - 1] = '\0';
  string_info(id, CL_DEVICE_NAME, device_name, sizeof(device_name));
  snprintf(d->name, sizeof(d->name), "%s: %s", platform_name, device_name);
  string_info(id, CL_DRIVER_VERSION, d->driver_version, sizeof(d->driver_version));
  string_info(id, CL_DEVICE_VERSION, d->device_version, sizeof(d->device_version));

  cl_bool available = CL_FALSE, compiler = CL_FALSE;
  clGetDeviceInfo(id, CL_DEVICE_AVAILABLE, sizeof(available), &available, NULL);
  clGetDeviceInfo(id, CL_DEVICE_COMPILER_AVAILABLE, sizeof(compiler), &compiler, NULL);
  int version = parse_version(d->device_version);
  if (!available) {
    snprintf(out_reason, reason_size, "%s: not available", d->name);
    return 0;
  }
  if (!compiler) {
    snprintf(out_reason, reason_size, "%s: has no OpenCL C compiler", d->name);
    return 0;
  }
  if (version < 102) {
    snprintf(out_reason, reason_size, "%s: %s is older than OpenCL 1.2", d->name,
             d->device_version);
    return 0;
  }

  cl_device_type type = 0;
  clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
  size_t ext_size = 0;
  clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size);
  char *extensions = calloc(ext_size + 1, 1);
  if (extensions == NULL) {
    snprintf(out_reason, reason_size, "%s: out of host memory", d->name);
    return 0;
  }
  clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, ext_size, extensions, NULL);
  cl_device_fp_config fp64 = 0;
  clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof(fp64), &fp64, NULL);
  if (fp64 != 0 || has_extension(extensions, "cl_khr_fp64")) d->caps |= TSR_OCL_CAP_FP64;
  if (has_extension(extensions, "cl_khr_fp16")) d->caps |= TSR_OCL_CAP_FP16;
  if (has_extension(extensions, "cl_khr_subgroups") ||
      has_extension(extensions, "cl_intel_subgroups")) {
    d->caps |= TSR_OCL_CAP_SUBGROUPS;
  }
  if (has_extension(extensions, "cl_khr_int64_base_atomics")) d->caps |= TSR_OCL_CAP_INT64_ATOMICS;
  if (has_extension(extensions, "cl_ext_float_atomics")) d->caps |= TSR_OCL_CAP_FLOAT_ATOMICS;
  if (type & CL_DEVICE_TYPE_GPU) d->caps |= TSR_OCL_CAP_GPU;
  d->host_memory = (type & CL_DEVICE_TYPE_CPU) != 0;
  free(extensions);

  cl_ulong global = 0, max_alloc = 0, local = 0;
  cl_device_local_mem_type local_type = CL_LOCAL;
  cl_uint units = 0, align_bits = 0;
  clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(global), &global, NULL);
  clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc), &max_alloc, NULL);
  clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local), &local, NULL);
  clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_TYPE, sizeof(local_type), &local_type, NULL);
  clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units, NULL);
  clGetDeviceInfo(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits, NULL);
  clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(d->max_work_group_size),
                  &d->max_work_group_size, NULL);
  clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(d->max_work_item_sizes),
                  d->max_work_item_sizes, NULL);
  d->global_mem_bytes = global;
  d->max_alloc_bytes = max_alloc;
  d->local_mem_bytes = local;
  d->local_mem_is_global = local_type == CL_GLOBAL;
  d->compute_units = units;
  uint32_t align = align_bits / 8;
  d->base_alignment = align < 64 ? 64 : (align > TSR_MAX_ALIGNMENT ? TSR_MAX_ALIGNMENT : align);
  if (d->max_work_group_size == 0) d->max_work_group_size = 1;
  return kind_rank(type) + 1;
}

static tsr_status device_open(tsr_ocl_device *d) {
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
  d->context = clCreateContext(props, 1, &d->id, NULL, NULL, &err);
  if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "clCreateContext");
  d->queue = clCreateCommandQueue(d->context, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
  if (err != CL_SUCCESS) {
    clReleaseContext(d->context);
    d->context = NULL;
    return tsr_ocl_cl_error(err, "clCreateCommandQueue");
  }
  tsr_status status = tsr_ocl_allocator_create(d, &d->allocator);
  if (status != TSR_OK) {
    clReleaseCommandQueue(d->queue);
    clReleaseContext(d->context);
    d->queue = NULL;
    d->context = NULL;
  }
  return status;
}

tsr_status tsr_ocl_devices_discover(void) {
  g_device_count = 0;
  g_unavailable[0] = '\0';
  cl_uint platform_count = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &platform_count);
  if (err == -1001 || (err == CL_SUCCESS && platform_count == 0)) {
    snprintf(g_unavailable, sizeof(g_unavailable),
             "no OpenCL platform is installed (the ICD loader found none%s; on Debian: "
             "apt-get install pocl-opencl-icd, or a GPU vendor's ICD)",
             err == -1001 ? ": CL_PLATFORM_NOT_FOUND_KHR" : "");
    return TSR_OK;
  }
  if (err != CL_SUCCESS) {
    snprintf(g_unavailable, sizeof(g_unavailable), "clGetPlatformIDs failed: %s (%d)",
             tsr_ocl_cl_error_name(err), (int)err);
    return TSR_OK;
  }
  cl_platform_id platforms[16];
  if (platform_count > 16) platform_count = 16;
  clGetPlatformIDs(platform_count, platforms, NULL);

  // Candidates from every platform, then the best kinds first.
  tsr_ocl_device candidates[TSR_OCL_MAX_DEVICES];
  int ranks[TSR_OCL_MAX_DEVICES];
  int count = 0;
  char reasons[512] = "";
  for (cl_uint p = 0; p < platform_count && count < TSR_OCL_MAX_DEVICES; ++p) {
    cl_uint n = 0;
    cl_device_id ids[TSR_OCL_MAX_DEVICES];
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, TSR_OCL_MAX_DEVICES, ids, &n) !=
        CL_SUCCESS) {
      continue;
    }
    if (n > TSR_OCL_MAX_DEVICES) n = TSR_OCL_MAX_DEVICES;
    for (cl_uint i = 0; i < n && count < TSR_OCL_MAX_DEVICES; ++i) {
      char why[256] = "";
      int rank = device_describe(platforms[p], ids[i], &candidates[count], why, sizeof(why));
      if (rank == 0) {
        tsr_ocl_log(TSR_LOG_INFO, "opencl: skipping %s", why);
        size_t used = strlen(reasons);
        snprintf(reasons + used, sizeof(reasons) - used, "%s%s", used ? "; " : "", why);
        continue;
      }
      ranks[count++] = rank;
    }
  }
  for (int kind = 1; kind <= 3; ++kind) {
    for (int i = 0; i < count; ++i) {
      if (ranks[i] != kind) continue;
      tsr_ocl_device *d = &g_devices[g_device_count];
      *d = candidates[i];
      d->index = g_device_count;
      tsr_status status = device_open(d);
      if (status != TSR_OK) {
        tsr_ocl_log(TSR_LOG_WARNING, "opencl: cannot open %s", d->name);
        continue;
      }
      ++g_device_count;
    }
  }
  if (g_device_count == 0) {
    snprintf(g_unavailable, sizeof(g_unavailable), "%u OpenCL platform(s) but no usable device%s%s",
             (unsigned)platform_count, reasons[0] ? ": " : "", reasons);
  }
  return TSR_OK;
}

void tsr_ocl_devices_release(void) {
  for (int32_t i = 0; i < g_device_count; ++i) {
    tsr_ocl_device *d = &g_devices[i];
    if (d->queue != NULL) clFinish(d->queue);
    tsr_ocl_allocator_destroy(d->allocator);
    if (d->queue != NULL) clReleaseCommandQueue(d->queue);
    if (d->context != NULL) clReleaseContext(d->context);
    memset(d, 0, sizeof(*d));
  }
  g_device_count = 0;
}
