// What the reduce family's files share: ops_reduce.c (REDUCE, ARG_REDUCE and
// the table), ops_reduce_nn.c (SOFTMAX, CROSS_ENTROPY, LAYER_NORM,
// BATCH_NORM and their backward ops) and ops_data.c (CONCAT, PAD, GATHER,
// SCATTER_ADD). Plugin-private.
#ifndef TESSERA_PLUGINS_OPENCL_OPS_REDUCE_INTERNAL_H_
#define TESSERA_PLUGINS_OPENCL_OPS_REDUCE_INTERNAL_H_

#include "ocl.h"
#include "tsr_cpu/cpu_kernels.h"

// The most work-items a reduction's work-group gets: enough to hide memory
// latency on a GPU, few enough that the local tree stays short.
#define TSR_OCL_RED_LOCAL_MAX 256

// TSR_OK when |dtype| is float32, or float64 on a device with fp64; else
// TSR_UNSUPPORTED naming |op|. With |ints|, int32 and int64 pass as well.
// No OpenCL calls. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_red_dtype_check(const tsr_ocl_device *device, const char *op,
                                                  tsr_dtype_t dtype, int ints);

// Creates |kernel_name| of kernels/<source>.cl built with "-DTSR_DT=<dtype>"
// into the caller-owned |*out_kernel|. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_red_kernel_create(tsr_ocl_device *device, const char *source,
                                                    tsr_dtype_t dtype, const char *kernel_name,
                                                    tsr_ocl_kernel **out_kernel);

// The work-group size for a tree reduction with |kernel|: the largest power
// of two no larger than TSR_OCL_RED_LOCAL_MAX, the kernel's and the device's
// limits. Thread-safe.
TSR_OCL_HIDDEN size_t tsr_ocl_red_local_size(const tsr_ocl_device *device,
                                             const tsr_ocl_kernel *kernel);

// |local| (a power of two) shrunk to the smallest power of two that covers
// |n| work, at least 1: a short reduction does not pay for idle work-items
// and a longer tree. Thread-safe.
static inline size_t tsr_ocl_red_local_fit(size_t local, uint64_t n) {
  size_t fit = 1;
  while (fit < local && fit < n) fit *= 2;
  return fit;
}

// A constant buffer of |count| longs at |values|, owned by the caller
// (clReleaseMemObject). Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_red_longs_create(tsr_ocl_device *device, const int64_t *values,
                                                   size_t count, cl_mem *out_mem);

// The layout of ref's groups (plugins/cpu/groups.h) the kernels read: see
// G_* in kernels/softmax.cl and kernels/norm.cl. Strides are converted from
// bytes to elements of each operand (|elem_sizes[k]|).
#define TSR_OCL_GROUPS_LONGS 148
TSR_OCL_HIDDEN void tsr_ocl_red_groups_pack(const tsr_cpu_groups *g, const int64_t *elem_sizes,
                                            int64_t *out_longs);

// Data-dependent errors (a CROSS_ENTROPY target, a GATHER index out of
// range). A kernel writes an info block of three longs into the plan's
// workspace: [0] unused by the check, [1] the first bad position or -1,
// [2] the bad value. tsr_ocl_red_error_check enqueues a read of it after the
// kernels and, when it completes, puts TSR_INVALID_ARGUMENT on the stream,
// which the next synchronize or query reports. The watch is a pool of host
// slots per plan (no allocation on the execute path).
typedef struct tsr_ocl_red_error_watch tsr_ocl_red_error_watch;
// Creates a watch for op |op|. Caller-owned (tsr_ocl_red_error_watch_destroy).
TSR_OCL_HIDDEN tsr_status tsr_ocl_red_error_watch_create(const char *op,
                                                         tsr_ocl_red_error_watch **out_watch);
// Waits for reads still in flight, then frees; NULL is ignored. Not
// thread-safe (the plan is idle).
TSR_OCL_HIDDEN void tsr_ocl_red_error_watch_destroy(tsr_ocl_red_error_watch *watch);
// Enqueues the read of the info block at |info_offset| bytes into exec's
// workspace. Thread-safe.
TSR_OCL_HIDDEN tsr_status tsr_ocl_red_error_check(tsr_ocl_red_error_watch *watch,
                                                  const tsr_ocl_exec *exec, uint64_t info_offset);

// The ops of the other files.
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_softmax_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_softmax_backward_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_cross_entropy_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_cross_entropy_backward_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_layer_norm_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_layer_norm_backward_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_batch_norm_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_batch_norm_backward_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_concat_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_pad_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_gather_impl;
TSR_OCL_HIDDEN extern const tsr_ocl_op_impl tsr_ocl_scatter_add_impl;

#endif  // TESSERA_PLUGINS_OPENCL_OPS_REDUCE_INTERNAL_H_
