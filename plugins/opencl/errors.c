// Errors and logging: the host table's error_set and log, and the names of
// OpenCL's error codes (the loader gives numbers only).
#include <stdarg.h>
#include <stdio.h>

#include "ocl.h"

tsr_status tsr_ocl_error(tsr_status code, const char *format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  const tsr_host_api *host = tsr_ocl_host();
  if (host == NULL) return code;
  return host->error_set(host->ctx, code, "%s", message);
}

void tsr_ocl_log(tsr_log_level_t level, const char *format, ...) {
  const tsr_host_api *host = tsr_ocl_host();
  if (host == NULL) return;
  char message[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  host->log(host->ctx, level, message);
}

const char *tsr_ocl_cl_error_name(cl_int err) {
  switch (err) {
#define TSR_OCL_CASE(name) \
  case name:               \
    return #name;
    TSR_OCL_CASE(CL_SUCCESS)
    TSR_OCL_CASE(CL_DEVICE_NOT_FOUND)
    TSR_OCL_CASE(CL_DEVICE_NOT_AVAILABLE)
    TSR_OCL_CASE(CL_COMPILER_NOT_AVAILABLE)
    TSR_OCL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    TSR_OCL_CASE(CL_OUT_OF_RESOURCES)
    TSR_OCL_CASE(CL_OUT_OF_HOST_MEMORY)
    TSR_OCL_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
    TSR_OCL_CASE(CL_MEM_COPY_OVERLAP)
    TSR_OCL_CASE(CL_IMAGE_FORMAT_MISMATCH)
    TSR_OCL_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    TSR_OCL_CASE(CL_BUILD_PROGRAM_FAILURE)
    TSR_OCL_CASE(CL_MAP_FAILURE)
    TSR_OCL_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    TSR_OCL_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    TSR_OCL_CASE(CL_COMPILE_PROGRAM_FAILURE)
    TSR_OCL_CASE(CL_LINKER_NOT_AVAILABLE)
    TSR_OCL_CASE(CL_LINK_PROGRAM_FAILURE)
    TSR_OCL_CASE(CL_DEVICE_PARTITION_FAILED)
    TSR_OCL_CASE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    TSR_OCL_CASE(CL_INVALID_VALUE)
    TSR_OCL_CASE(CL_INVALID_DEVICE_TYPE)
    TSR_OCL_CASE(CL_INVALID_PLATFORM)
    TSR_OCL_CASE(CL_INVALID_DEVICE)
    TSR_OCL_CASE(CL_INVALID_CONTEXT)
    TSR_OCL_CASE(CL_INVALID_QUEUE_PROPERTIES)
    TSR_OCL_CASE(CL_INVALID_COMMAND_QUEUE)
    TSR_OCL_CASE(CL_INVALID_HOST_PTR)
    TSR_OCL_CASE(CL_INVALID_MEM_OBJECT)
    TSR_OCL_CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    TSR_OCL_CASE(CL_INVALID_IMAGE_SIZE)
    TSR_OCL_CASE(CL_INVALID_SAMPLER)
    TSR_OCL_CASE(CL_INVALID_BINARY)
    TSR_OCL_CASE(CL_INVALID_BUILD_OPTIONS)
    TSR_OCL_CASE(CL_INVALID_PROGRAM)
    TSR_OCL_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    TSR_OCL_CASE(CL_INVALID_KERNEL_NAME)
    TSR_OCL_CASE(CL_INVALID_KERNEL_DEFINITION)
    TSR_OCL_CASE(CL_INVALID_KERNEL)
    TSR_OCL_CASE(CL_INVALID_ARG_INDEX)
    TSR_OCL_CASE(CL_INVALID_ARG_VALUE)
    TSR_OCL_CASE(CL_INVALID_ARG_SIZE)
    TSR_OCL_CASE(CL_INVALID_KERNEL_ARGS)
    TSR_OCL_CASE(CL_INVALID_WORK_DIMENSION)
    TSR_OCL_CASE(CL_INVALID_WORK_GROUP_SIZE)
    TSR_OCL_CASE(CL_INVALID_WORK_ITEM_SIZE)
    TSR_OCL_CASE(CL_INVALID_GLOBAL_OFFSET)
    TSR_OCL_CASE(CL_INVALID_EVENT_WAIT_LIST)
    TSR_OCL_CASE(CL_INVALID_EVENT)
    TSR_OCL_CASE(CL_INVALID_OPERATION)
    TSR_OCL_CASE(CL_INVALID_GL_OBJECT)
    TSR_OCL_CASE(CL_INVALID_BUFFER_SIZE)
    TSR_OCL_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
    TSR_OCL_CASE(CL_INVALID_PROPERTY)
    TSR_OCL_CASE(CL_INVALID_COMPILER_OPTIONS)
    TSR_OCL_CASE(CL_INVALID_LINKER_OPTIONS)
    TSR_OCL_CASE(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef TSR_OCL_CASE
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL_UNKNOWN_ERROR";
  }
}

tsr_status tsr_ocl_cl_error(cl_int err, const char *what) {
  tsr_status code = TSR_INTERNAL;
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
      err == CL_OUT_OF_RESOURCES) {
    code = TSR_OUT_OF_MEMORY;
  } else if (err == CL_DEVICE_NOT_AVAILABLE) {
    code = TSR_DEVICE_LOST;
  }
  return tsr_ocl_error(code, "%s: %s (%d)", what, tsr_ocl_cl_error_name(err), (int)err);
}
