// The CUDA plugin's plans: what one holds, how it is built and run, and the
// per-(thread, device) library handles its executions borrow.
//
// plan_create runs ref's validation first (INVALID_ARGUMENT worded as on
// every backend) and keeps ref's validated plan for the operand shapes; then
// the op's family builder (matmul.c, conv.c, own_ops.c) picks the engine. A
// plan's choice is immutable and it borrows no thread's library handle:
// cuBLASLt and cuDNN handles are per (thread, device), and a convolution
// builds one cuDNN execution plan per executing thread on that thread's
// handle (cuDNN plans are not safe to share between threads), a cache the
// plan owns. So one plan runs from many threads.
#ifndef TESSERA_PLUGINS_CUDA_CUDA_PLAN_H_
#define TESSERA_PLUGINS_CUDA_CUDA_PLAN_H_

#include <cublasLt.h>
#include <cudnn_graph.h>
#include <stdatomic.h>

#include "cuda_plugin.h"
#include "tessera/abi.h"
#include "tessera/ops.h"

typedef struct tsr_cuda_plan tsr_cuda_plan;

// One execution: device addresses of the operands (inputs, then outputs; NULL
// for an empty operand), the workspace and the stream. Built by plan_execute
// after checking the operands against the plan.
typedef struct tsr_cuda_exec {
  void *ptrs[TSR_MAX_OPERANDS];
  void *workspace;
  uint64_t workspace_bytes;
  tsr_cuda_stream *stream;
} tsr_cuda_exec;

typedef tsr_status (*tsr_cuda_plan_run_fn)(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec);
typedef void (*tsr_cuda_plan_free_fn)(tsr_cuda_plan *plan);

struct tsr_cuda_plan {
  const struct tsr_plugin_plan *ref;  // the CPU library's validated plan (tsr_cpu/cpu_plan.h)
  int32_t op;
  int32_t device;
  int32_t num_inputs;
  int32_t num_outputs;
  tsr_math_mode_t math_mode;
  uint32_t flags;       // the signature's TSR_PLAN_*
  uint32_t info_flags;  // TSR_PLAN_INFO_*
  uint64_t workspace_bytes;
  char engine[128];  // "cuda:<engine>"
  tsr_cuda_plan_run_fn run;
  tsr_cuda_plan_free_fn free_impl;  // releases |impl|; may be NULL
  void *impl;                       // the family's own state
};

// The operand |index| (inputs, then outputs) of |plan| as ref validated it:
// dtype, rank, sizes, strides, numel. Thread-safe.
const struct tsr_cpu_operand *tsr_cuda_plan_operand(const tsr_cuda_plan *plan, int32_t index);

// Table entries (abi.h documents them). Thread-safe as abi.h states.
tsr_status tsr_cuda_op_supports(const tsr_op_signature *signature);
tsr_status tsr_cuda_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan);
tsr_status tsr_cuda_plan_info_get(const tsr_plugin_plan *plan, tsr_plan_info *out_info);
tsr_status tsr_cuda_plan_execute(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                 tsr_plugin_stream *stream);
tsr_status tsr_cuda_plan_destroy(tsr_plugin_plan *plan);

// The families. *_supports answers TSR_OK or TSR_UNSUPPORTED (with the
// reason) for a signature ref accepted; cheap, no device work. *_plan_init
// fills |plan|'s engine, run, impl and workspace, or returns why not.
// Thread-safe.
tsr_status tsr_cuda_matmul_supports(const tsr_op_signature *signature);
tsr_status tsr_cuda_matmul_plan_init(const tsr_op_signature *signature, tsr_cuda_plan *plan);
tsr_status tsr_cuda_conv_supports(const tsr_op_signature *signature);
tsr_status tsr_cuda_conv_plan_init(const tsr_op_signature *signature, tsr_cuda_plan *plan);
tsr_status tsr_cuda_own_supports(const tsr_op_signature *signature);
tsr_status tsr_cuda_own_plan_init(const tsr_op_signature *signature, tsr_cuda_plan *plan);
// Drops conv.c's process-wide state (the autotune pin cache). Not thread-safe.
void tsr_cuda_conv_shutdown(void);

// The calling thread's cuBLASLt handle for |device|, made on first use. Owned
// by the plugin until the thread exits or the plugin shuts down. Thread-safe.
tsr_status tsr_cuda_cublaslt_handle_get(int32_t device, cublasLtHandle_t *out_handle);

// A cuDNN handle of one (thread, device), shared by reference count: its
// thread holds one reference until it exits (or the plugin shuts down), and
// every execution plan built on the handle holds one, because cuDNN plans
// keep pointing at the handle they were built with. The last release
// destroys it.
typedef struct tsr_cuda_dnn_handle {
  cudnnHandle_t handle;
  int32_t device;
  _Atomic int32_t refs;
} tsr_cuda_dnn_handle;

// The calling thread's cuDNN handle for |device|, made on first use and bound
// to |stream| (NULL: the legacy default stream) on every call, so it never
// stays bound to a stream that has gone. Borrowed: valid while the thread
// runs; retain it to keep it longer. Thread-safe.
tsr_status tsr_cuda_dnn_handle_get(int32_t device, cudaStream_t stream,
                                   tsr_cuda_dnn_handle **out_handle);
// Takes one more reference on |handle|. Thread-safe.
void tsr_cuda_dnn_handle_retain(tsr_cuda_dnn_handle *handle);
// Drops one reference on |handle|; the last destroys it (cudnnDestroy, which
// waits for the device). Thread-safe.
void tsr_cuda_dnn_handle_release(tsr_cuda_dnn_handle *handle);
// Drops every thread's handles (a cuDNN handle lives on while plans still
// use it). Not thread-safe: no op may be running.
void tsr_cuda_handles_shutdown(void);

// Maps a cuBLASLt / cuDNN status to a Tessera status with a message naming
// |function| and |call|. Thread-safe.
tsr_status tsr_cuda_cublas_check(cublasStatus_t status, const char *function, const char *call);
tsr_status tsr_cuda_cudnn_check(cudnnStatus_t status, const char *function, const char *call);

// Applies |activation| in place to |count| contiguous elements of |dtype| at
// |data| on |stream| (the epilogues cuBLASLt or cuDNN cannot fuse). Thread-safe.
tsr_status tsr_cuda_activation_apply(tsr_activation_t activation, tsr_dtype_t dtype, void *data,
                                     int64_t count, cudaStream_t stream);

#endif  // TESSERA_PLUGINS_CUDA_CUDA_PLAN_H_
