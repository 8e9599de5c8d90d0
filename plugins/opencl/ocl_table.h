// The runtime half of the OpenCL plugin that op families never call:
// discovery, the allocator's lifetime, the program cache's teardown, and the
// table entries. plugin.c assembles the table from these.
#ifndef TESSERA_PLUGINS_OPENCL_OCL_TABLE_H_
#define TESSERA_PLUGINS_OPENCL_OCL_TABLE_H_

#include "ocl.h"

// Finds every platform's devices and opens them (context, queue,
// allocator). A machine without platforms or devices is not an error: the
// count is then 0 and tsr_ocl_devices_unavailable_reason() says why. Not
// thread-safe (init).
TSR_OCL_HIDDEN tsr_status tsr_ocl_devices_discover(void);
// Why there is no device ("" when there is one). Static storage.
TSR_OCL_HIDDEN const char *tsr_ocl_devices_unavailable_reason(void);
// Finishes and releases every device. Not thread-safe (shutdown).
TSR_OCL_HIDDEN void tsr_ocl_devices_release(void);

// The caching allocator of one device (memory.c).
TSR_OCL_HIDDEN tsr_status tsr_ocl_allocator_create(tsr_ocl_device *device,
                                                   tsr_ocl_allocator **out_allocator);
TSR_OCL_HIDDEN void tsr_ocl_allocator_destroy(tsr_ocl_allocator *allocator);

// Waits for the work queued on every live stream of |device|. Thread-safe.
TSR_OCL_HIDDEN void tsr_ocl_streams_finish(int32_t device);
// The first asynchronous error recorded on |stream| since the last take, and
// clears it. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_stream_error_take(tsr_ocl_stream *stream);
// Records |status| as |stream|'s asynchronous error unless one is held. Thread-safe.
TSR_OCL_HIDDEN void tsr_ocl_stream_error_put(tsr_ocl_stream *stream, tsr_status status);

// The folder of the program and autotune caches, created if missing:
// TSR_OPENCL_CACHE_DIR, else $XDG_CACHE_HOME/tessera/opencl, else
// ~/.cache/tessera/opencl. 0 when TSR_OPENCL_PROGRAM_CACHE=0 or it cannot be
// made. Thread-safe.
TSR_OCL_HIDDEN int tsr_ocl_cache_dir(char *out, size_t size);

// Releases every cached program. Not thread-safe (shutdown).
TSR_OCL_HIDDEN void tsr_ocl_programs_release(void);
// Forgets the autotune winners held in memory. Not thread-safe (shutdown).
TSR_OCL_HIDDEN void tsr_ocl_tune_release(void);

// Table entries (abi.h documents them; thread-safety as abi.h states).
TSR_OCL_HIDDEN tsr_status tsr_ocl_buffer_alloc(int32_t device, uint64_t bytes,
                                               tsr_plugin_stream *stream,
                                               tsr_plugin_buffer **out_buffer);
TSR_OCL_HIDDEN tsr_status tsr_ocl_buffer_free(tsr_plugin_buffer *buffer,
                                              tsr_plugin_stream *stream);
TSR_OCL_HIDDEN tsr_status tsr_ocl_host_pinned_alloc(int32_t device, uint64_t bytes,
                                                    void **out_ptr);
TSR_OCL_HIDDEN tsr_status tsr_ocl_host_pinned_free(int32_t device, void *ptr);
TSR_OCL_HIDDEN tsr_status tsr_ocl_allocator_stats_get(int32_t device,
                                                      tsr_allocator_stats *out_stats);
TSR_OCL_HIDDEN tsr_status tsr_ocl_allocator_trim(int32_t device);
TSR_OCL_HIDDEN tsr_status tsr_ocl_copy_host_to_device(tsr_plugin_stream *stream, const void *src,
                                                      tsr_plugin_buffer *dst, uint64_t dst_offset,
                                                      uint64_t bytes);
TSR_OCL_HIDDEN tsr_status tsr_ocl_copy_device_to_host(tsr_plugin_stream *stream,
                                                      tsr_plugin_buffer *src, uint64_t src_offset,
                                                      void *dst, uint64_t bytes);
TSR_OCL_HIDDEN tsr_status tsr_ocl_copy_device_to_device(tsr_plugin_stream *stream,
                                                        tsr_plugin_buffer *src,
                                                        uint64_t src_offset,
                                                        tsr_plugin_buffer *dst,
                                                        uint64_t dst_offset, uint64_t bytes);

TSR_OCL_HIDDEN tsr_status tsr_ocl_stream_create(int32_t device, uint32_t flags,
                                                tsr_plugin_stream **out_stream);
TSR_OCL_HIDDEN tsr_status tsr_ocl_stream_destroy(tsr_plugin_stream *stream);
TSR_OCL_HIDDEN tsr_status tsr_ocl_stream_synchronize(tsr_plugin_stream *stream);
TSR_OCL_HIDDEN tsr_status tsr_ocl_stream_query(tsr_plugin_stream *stream);
TSR_OCL_HIDDEN tsr_status tsr_ocl_stream_wait_event(tsr_plugin_stream *stream,
                                                    tsr_plugin_event *event);
TSR_OCL_HIDDEN tsr_status tsr_ocl_event_create(int32_t device, uint32_t flags,
                                               tsr_plugin_event **out_event);
TSR_OCL_HIDDEN tsr_status tsr_ocl_event_destroy(tsr_plugin_event *event);
TSR_OCL_HIDDEN tsr_status tsr_ocl_event_record(tsr_plugin_event *event,
                                               tsr_plugin_stream *stream);
TSR_OCL_HIDDEN tsr_status tsr_ocl_event_query(tsr_plugin_event *event);
TSR_OCL_HIDDEN tsr_status tsr_ocl_event_synchronize(tsr_plugin_event *event);
TSR_OCL_HIDDEN tsr_status tsr_ocl_event_elapsed_get(tsr_plugin_event *start,
                                                    tsr_plugin_event *end,
                                                    float *out_milliseconds);

TSR_OCL_HIDDEN tsr_status tsr_ocl_op_supports(const tsr_op_signature *signature);
TSR_OCL_HIDDEN tsr_status tsr_ocl_plan_create(const tsr_op_signature *signature,
                                              tsr_plugin_plan **out_plan);
TSR_OCL_HIDDEN tsr_status tsr_ocl_plan_info_get(const tsr_plugin_plan *plan,
                                                tsr_plan_info *out_info);
TSR_OCL_HIDDEN tsr_status tsr_ocl_plan_execute(const tsr_plugin_plan *plan,
                                               const tsr_exec_args *args,
                                               tsr_plugin_stream *stream);
TSR_OCL_HIDDEN tsr_status tsr_ocl_plan_destroy(tsr_plugin_plan *plan);

// ref's table (validation only; its kernels never see a cl_mem). Valid after entry.
TSR_OCL_HIDDEN const tsr_plugin_api *tsr_ocl_ref_api(void);

#endif  // TESSERA_PLUGINS_OPENCL_OCL_TABLE_H_
