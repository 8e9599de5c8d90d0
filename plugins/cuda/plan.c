// Plans: validation through ref, dispatch to the op families, the operand
// check of every execution, and the per-(thread, device) library handles.
#include "tsr_cpu/cpu_kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_plan.h"
#include "tessera/plugin_kit.h"

// --- library handles --------------------------------------------------------

typedef struct tsr_cuda_thread_handles {
  cublasLtHandle_t lt[TSR_CUDA_MAX_DEVICES];
  tsr_cuda_dnn_handle *dnn[TSR_CUDA_MAX_DEVICES];  // this thread's reference
  struct tsr_cuda_thread_handles *next;
} tsr_cuda_thread_handles;

static pthread_once_t g_handles_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_handles_key;
static pthread_mutex_t g_handles_lock = PTHREAD_MUTEX_INITIALIZER;
static tsr_cuda_thread_handles *g_handles_all;

void tsr_cuda_dnn_handle_retain(tsr_cuda_dnn_handle *handle) {
  atomic_fetch_add_explicit(&handle->refs, 1, memory_order_relaxed);
}

void tsr_cuda_dnn_handle_release(tsr_cuda_dnn_handle *handle) {
  if (atomic_fetch_sub_explicit(&handle->refs, 1, memory_order_acq_rel) != 1)
    return;
  tsr_cuda_device_scope scope;
  if (tsr_cuda_device_enter(handle->device, "cudnnDestroy", &scope) == TSR_OK) {
    (void)cudnnDestroy(handle->handle);
    tsr_cuda_device_leave(&scope);
  }
  free(handle);
}

// Drops the thread's references: cuBLASLt handles go at once (no plan keeps
// one), cuDNN handles when the last plan built on them goes.
static void tsr_cuda_thread_handles_destroy(tsr_cuda_thread_handles *h) {
  for (int d = 0; d < TSR_CUDA_MAX_DEVICES; ++d) {
    if (h->lt[d] != NULL)
      cublasLtDestroy(h->lt[d]);
    if (h->dnn[d] != NULL)
      tsr_cuda_dnn_handle_release(h->dnn[d]);
    h->lt[d] = NULL;
    h->dnn[d] = NULL;
  }
}

// Thread exit: the handles of this thread go, and its record leaves the list.
static void tsr_cuda_thread_handles_release(void *arg) {
  tsr_cuda_thread_handles *h = arg;
  pthread_mutex_lock(&g_handles_lock);
  tsr_cuda_thread_handles_destroy(h);
  for (tsr_cuda_thread_handles **link = &g_handles_all; *link != NULL; link = &(*link)->next) {
    if (*link == h) {
      *link = h->next;
      break;
    }
  }
  pthread_mutex_unlock(&g_handles_lock);
  free(h);
}

static void tsr_cuda_handles_key_create(void) {
  pthread_key_create(&g_handles_key, tsr_cuda_thread_handles_release);
}

static tsr_status tsr_cuda_thread_handles_get(tsr_cuda_thread_handles **out) {
  pthread_once(&g_handles_once, tsr_cuda_handles_key_create);
  tsr_cuda_thread_handles *h = pthread_getspecific(g_handles_key);
  if (h == NULL) {
    h = calloc(1, sizeof(*h));
    if (h == NULL || pthread_setspecific(g_handles_key, h) != 0) {
      free(h);
      return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_OUT_OF_MEMORY,
                                        "cuda: no room for the thread's library handles");
    }
    pthread_mutex_lock(&g_handles_lock);
    h->next = g_handles_all;
    g_handles_all = h;
    pthread_mutex_unlock(&g_handles_lock);
  }
  *out = h;
  return TSR_OK;
}

tsr_status tsr_cuda_cublaslt_handle_get(int32_t device, cublasLtHandle_t *out_handle) {
  tsr_cuda_thread_handles *h = NULL;
  tsr_status status = tsr_cuda_thread_handles_get(&h);
  if (status != TSR_OK)
    return status;
  if (h->lt[device] == NULL) {
    // Callers have made |device| current.
    status = tsr_cuda_cublas_check(cublasLtCreate(&h->lt[device]), "plan", "cublasLtCreate");
    if (status != TSR_OK)
      return status;
  }
  *out_handle = h->lt[device];
  return TSR_OK;
}

tsr_status tsr_cuda_dnn_handle_get(int32_t device, cudaStream_t stream,
                                   tsr_cuda_dnn_handle **out_handle) {
  tsr_cuda_thread_handles *h = NULL;
  tsr_status status = tsr_cuda_thread_handles_get(&h);
  if (status != TSR_OK)
    return status;
  if (h->dnn[device] == NULL) {
    tsr_cuda_dnn_handle *dnn = calloc(1, sizeof(*dnn));
    if (dnn == NULL) {
      return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_OUT_OF_MEMORY,
                                        "cuda: no room for a cuDNN handle");
    }
    // Callers have made |device| current.
    status = tsr_cuda_cudnn_check(cudnnCreate(&dnn->handle), "plan", "cudnnCreate");
    if (status != TSR_OK) {
      free(dnn);
      return status;
    }
    dnn->device = device;
    atomic_init(&dnn->refs, 1);
    h->dnn[device] = dnn;
  }
  status = tsr_cuda_cudnn_check(cudnnSetStream(h->dnn[device]->handle, stream), "plan",
                                "cudnnSetStream");
  if (status != TSR_OK)
    return status;
  *out_handle = h->dnn[device];
  return TSR_OK;
}

void tsr_cuda_handles_shutdown(void) {
  pthread_mutex_lock(&g_handles_lock);
  for (tsr_cuda_thread_handles *h = g_handles_all; h != NULL; h = h->next)
    tsr_cuda_thread_handles_destroy(h);
  pthread_mutex_unlock(&g_handles_lock);
}

tsr_status tsr_cuda_cublas_check(cublasStatus_t status, const char *function, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return TSR_OK;
  tsr_status code = TSR_INTERNAL;
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    code = TSR_OUT_OF_MEMORY;
  else if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH)
    code = TSR_UNSUPPORTED;
  else if (status == CUBLAS_STATUS_NOT_INITIALIZED)
    code = TSR_UNAVAILABLE;
  return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, code, "%s: %s failed: %s (%s)", function,
                                    call, cublasLtGetStatusString(status),
                                    cublasLtGetStatusName(status));
}

tsr_status tsr_cuda_cudnn_check(cudnnStatus_t status, const char *function, const char *call) {
  if (status == CUDNN_STATUS_SUCCESS)
    return TSR_OK;
  tsr_status code = TSR_INTERNAL;
  int family = (int)status / 1000;
  if (family == 3)
    code = TSR_UNSUPPORTED;
  else if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
           status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    code = TSR_OUT_OF_MEMORY;
  else if (status == CUDNN_STATUS_NOT_INITIALIZED)
    code = TSR_UNAVAILABLE;
  // cuDNN keeps the why (a shape, a layout, an attribute) in its per-thread
  // last-error text; the status alone rarely says it.
  char last[256];
  last[0] = '\0';
  cudnnGetLastErrorString(last, sizeof(last));
  return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, code, "%s: %s failed: %s (%d)%s%s",
                                    function, call, cudnnGetErrorString(status), (int)status,
                                    last[0] != '\0' ? ": " : "", last);
}

// --- plans ------------------------------------------------------------------

const struct tsr_cpu_operand *tsr_cuda_plan_operand(const tsr_cuda_plan *plan, int32_t index) {
  return &plan->ref->operands[index];
}

// ref validates device 0 only: the same signature on device 0, with the
// device range checked here instead.
typedef struct tsr_cuda_sig_copy {
  tsr_op_signature signature;
  tsr_tensor_desc inputs[TSR_MAX_OPERANDS];
  tsr_tensor_desc outputs[TSR_MAX_OPERANDS];
} tsr_cuda_sig_copy;

static tsr_status tsr_cuda_sig_for_ref(const tsr_op_signature *signature, const char *function,
                                       tsr_cuda_sig_copy *copy) {
  const tsr_host_api *host = tsr_cuda_host();
  if (signature == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "%s: signature is NULL", function);
  if (signature->struct_size < sizeof(tsr_op_signature)) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "%s: signature struct_size is %zu, less than %zu", function,
                           signature->struct_size, sizeof(tsr_op_signature));
  }
  const char *op = tsr_op_name(signature->op) ? tsr_op_name(signature->op) : function;
  tsr_status status = tsr_cuda_device_check(signature->device, op);
  if (status != TSR_OK)
    return status;
  copy->signature = *signature;
  copy->signature.device = 0;
  int32_t n_in = signature->num_inputs, n_out = signature->num_outputs;
  // Counts out of range, or NULL arrays: ref words the refusal.
  if (n_in < 0 || n_out < 0 || n_in > TSR_MAX_OPERANDS || n_out > TSR_MAX_OPERANDS ||
      (n_in > 0 && signature->inputs == NULL) || (n_out > 0 && signature->outputs == NULL))
    return TSR_OK;
  for (int32_t i = 0; i < n_in; ++i) {
    if (signature->inputs[i].device != signature->device) {
      return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                             "%s: input %d is on cuda:%d, the signature on cuda:%d", op, (int)i,
                             (int)signature->inputs[i].device, (int)signature->device);
    }
    copy->inputs[i] = signature->inputs[i];
    copy->inputs[i].device = 0;
  }
  for (int32_t i = 0; i < n_out; ++i) {
    if (signature->outputs[i].device != signature->device) {
      return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                             "%s: output %d is on cuda:%d, the signature on cuda:%d", op, (int)i,
                             (int)signature->outputs[i].device, (int)signature->device);
    }
    copy->outputs[i] = signature->outputs[i];
    copy->outputs[i].device = 0;
  }
  copy->signature.inputs = n_in > 0 ? copy->inputs : NULL;
  copy->signature.outputs = n_out > 0 ? copy->outputs : NULL;
  return TSR_OK;
}

static tsr_status tsr_cuda_family_supports(const tsr_op_signature *signature) {
  switch (signature->op) {
    case TSR_OP_MATMUL:
      return tsr_cuda_matmul_supports(signature);
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      return tsr_cuda_conv_supports(signature);
    default:
      return tsr_cuda_own_supports(signature);
  }
}

tsr_status tsr_cuda_op_supports(const tsr_op_signature *signature) {
  tsr_cuda_sig_copy copy;
  tsr_status status = tsr_cuda_sig_for_ref(signature, "op_supports", &copy);
  if (status == TSR_OK)
    status = tsr_cuda_ref()->op_supports(&copy.signature);
  if (status == TSR_OK)
    status = tsr_cuda_family_supports(signature);
  return status;
}

tsr_status tsr_cuda_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan) {
  const tsr_host_api *host = tsr_cuda_host();
  if (out_plan == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "plan_create: out_plan is NULL");
  *out_plan = NULL;
  tsr_cuda_sig_copy copy;
  tsr_status status = tsr_cuda_sig_for_ref(signature, "plan_create", &copy);
  tsr_plugin_plan *ref_plan = NULL;
  if (status == TSR_OK)
    status = tsr_cuda_ref()->plan_create(&copy.signature, &ref_plan);
  if (status == TSR_OK)
    status = tsr_cuda_family_supports(signature);
  if (status != TSR_OK) {
    if (ref_plan != NULL)
      tsr_cuda_ref()->plan_destroy(ref_plan);
    return status;
  }
  tsr_cuda_plan *plan = calloc(1, sizeof(*plan));
  if (plan == NULL) {
    tsr_cuda_ref()->plan_destroy(ref_plan);
    return host->error_set(host->ctx, TSR_OUT_OF_MEMORY, "plan_create: no host memory");
  }
  plan->ref = ref_plan;
  plan->op = signature->op;
  plan->device = signature->device;
  plan->num_inputs = signature->num_inputs;
  plan->num_outputs = signature->num_outputs;
  plan->math_mode = signature->math_mode;
  plan->flags = signature->flags;
  // Engine choice queries the device (heuristics, autotune scratch).
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(signature->device, "plan_create", &scope);
  int entered = status == TSR_OK;
  switch (status == TSR_OK ? signature->op : TSR_OP_INVALID) {
    case TSR_OP_INVALID:
      break;
    case TSR_OP_MATMUL:
      status = tsr_cuda_matmul_plan_init(signature, plan);
      break;
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      status = tsr_cuda_conv_plan_init(signature, plan);
      break;
    default:
      status = tsr_cuda_own_plan_init(signature, plan);
      break;
  }
  if (entered)
    tsr_cuda_device_leave(&scope);
  if (status == TSR_OK && (signature->flags & TSR_PLAN_REQUIRE_DETERMINISM) &&
      !(plan->info_flags & TSR_PLAN_INFO_DETERMINISTIC)) {
    status = host->error_set(host->ctx, TSR_UNSUPPORTED,
                             "%s: the chosen engine %s is not bit-reproducible",
                             tsr_op_name(signature->op), plan->engine);
  }
  if (status != TSR_OK) {
    tsr_cuda_plan_destroy((tsr_plugin_plan *)plan);
    return status;
  }
  *out_plan = (tsr_plugin_plan *)plan;
  return TSR_OK;
}

tsr_status tsr_cuda_plan_info_get(const tsr_plugin_plan *handle, tsr_plan_info *out_info) {
  const tsr_host_api *host = tsr_cuda_host();
  const tsr_cuda_plan *plan = (const tsr_cuda_plan *)handle;
  if (plan == NULL)
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "plan_info_get: plan is NULL");
  const tsr_plan_info info = {
      .engine = plan->engine, .workspace_bytes = plan->workspace_bytes, .flags = plan->info_flags};
  return tsr_kit_plan_info_answer(host, &info, out_info);
}

tsr_status tsr_cuda_plan_destroy(tsr_plugin_plan *handle) {
  tsr_cuda_plan *plan = (tsr_cuda_plan *)handle;
  if (plan == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_INVALID_ARGUMENT,
                                      "plan_destroy: plan is NULL");
  }
  if (plan->free_impl != NULL)
    plan->free_impl(plan);
  if (plan->ref != NULL)
    tsr_cuda_ref()->plan_destroy((tsr_plugin_plan *)plan->ref);
  free(plan);
  return TSR_OK;
}

// Compares one operand of an execution with the plan's copy and resolves its
// device address. Cheap: a few comparisons, no formatting unless it fails.
static tsr_status tsr_cuda_operand_resolve(const tsr_cuda_plan *plan, int32_t index,
                                           const tsr_tensor_desc *desc, void **out_ptr) {
  const tsr_host_api *host = tsr_cuda_host();
  const tsr_cpu_operand *want = &plan->ref->operands[index];
  const char *op = tsr_op_name(plan->op);
  int mismatch = desc->dtype != want->dtype || desc->rank != want->rank ||
                 desc->device != plan->device || (desc->alignment | 1u) < want->alignment;
  for (int32_t d = 0; !mismatch && d < want->rank; ++d)
    mismatch = desc->sizes[d] != want->sizes[d] || desc->strides[d] != want->strides[d];
  if (mismatch) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "%s: operand %s (%d) differs from the plan's signature in dtype, "
                           "sizes, strides, device or alignment",
                           op, want->name, (int)index);
  }
  *out_ptr = NULL;
  if (want->numel == 0 || want->extent_bytes == 0)
    return TSR_OK;
  const tsr_cuda_block *block = (const tsr_cuda_block *)desc->buffer;
  // SGD without momentum: momentum_buf may be an empty descriptor.
  if (block == NULL && plan->op == TSR_OP_SGD_UPDATE && want->rank == 0)
    return TSR_OK;
  if (block == NULL || block->device != plan->device) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "%s: operand %s has %s", op, want->name,
                           block == NULL ? "no buffer" : "a buffer of another device");
  }
  if (desc->byte_offset > block->requested ||
      want->extent_bytes > block->requested - desc->byte_offset) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "%s: operand %s spans [%llu, %llu), beyond its buffer's %llu bytes", op,
                           want->name, (unsigned long long)desc->byte_offset,
                           (unsigned long long)(desc->byte_offset + want->extent_bytes),
                           (unsigned long long)block->requested);
  }
  char *ptr = (char *)block->ptr + desc->byte_offset;
  // The engines were chosen for this alignment (cuBLASLt's heuristics were
  // told it), so an address that breaks it is refused rather than faulting.
  if (((uintptr_t)ptr & (uintptr_t)(want->alignment - 1)) != 0) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "%s: operand %s at byte offset %llu is less aligned than the plan's "
                           "%u bytes",
                           op, want->name, (unsigned long long)desc->byte_offset,
                           (unsigned)want->alignment);
  }
  *out_ptr = ptr;
  return TSR_OK;
}

tsr_status tsr_cuda_plan_execute(const tsr_plugin_plan *handle, const tsr_exec_args *args,
                                 tsr_plugin_stream *stream) {
  const tsr_host_api *host = tsr_cuda_host();
  const tsr_cuda_plan *plan = (const tsr_cuda_plan *)handle;
  tsr_cuda_stream *s = (tsr_cuda_stream *)stream;
  if (plan == NULL || args == NULL || s == NULL) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT, "plan_execute: %s is NULL",
                           plan == NULL ? "plan" : (args == NULL ? "args" : "stream"));
  }
  const char *op = tsr_op_name(plan->op);
  if (args->struct_size < sizeof(tsr_exec_args) || args->num_inputs != plan->num_inputs ||
      args->num_outputs != plan->num_outputs) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "%s: args has %d inputs and %d outputs (struct_size %zu); the plan "
                           "has %d and %d",
                           op, (int)args->num_inputs, (int)args->num_outputs, args->struct_size,
                           (int)plan->num_inputs, (int)plan->num_outputs);
  }
  if (s->device != plan->device) {
    return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                           "%s: stream is on cuda:%d, the plan on cuda:%d", op, (int)s->device,
                           (int)plan->device);
  }
  tsr_cuda_exec exec;
  exec.stream = s;
  exec.workspace = NULL;
  exec.workspace_bytes = 0;
  tsr_status status = TSR_OK;
  for (int32_t i = 0; status == TSR_OK && i < plan->num_inputs; ++i)
    status = tsr_cuda_operand_resolve(plan, i, &args->inputs[i], &exec.ptrs[i]);
  for (int32_t i = 0; status == TSR_OK && i < plan->num_outputs; ++i) {
    int32_t index = plan->num_inputs + i;
    status = tsr_cuda_operand_resolve(plan, index, &args->outputs[i], &exec.ptrs[index]);
  }
  if (status != TSR_OK)
    return status;
  if (plan->workspace_bytes > 0) {
    const tsr_cuda_block *ws = (const tsr_cuda_block *)args->workspace;
    if (ws == NULL || args->workspace_bytes < plan->workspace_bytes ||
        args->workspace_offset > ws->requested ||
        plan->workspace_bytes > ws->requested - args->workspace_offset) {
      return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                             "%s: the plan needs %llu bytes of workspace; args give %llu", op,
                             (unsigned long long)plan->workspace_bytes,
                             (unsigned long long)(ws == NULL ? 0 : args->workspace_bytes));
    }
    // abi.md 9.3 promises 256-byte aligned workspace offsets, and cuDNN's
    // and the own kernels' scratch layouts rely on it.
    if (args->workspace_offset % TSR_MAX_ALIGNMENT != 0 || ws->device != plan->device) {
      return host->error_set(host->ctx, TSR_INVALID_ARGUMENT,
                             "%s: workspace at byte offset %llu of a cuda:%d buffer; it must be "
                             "on cuda:%d at a multiple of %d bytes",
                             op, (unsigned long long)args->workspace_offset, (int)ws->device,
                             (int)plan->device, TSR_MAX_ALIGNMENT);
    }
    exec.workspace = (char *)ws->ptr + args->workspace_offset;
    exec.workspace_bytes = args->workspace_bytes;
  }
  tsr_cuda_device_scope scope;
  status = tsr_cuda_device_enter(plan->device, op, &scope);
  if (status != TSR_OK)
    return status;
  status = plan->run(plan, &exec);
  tsr_cuda_device_leave(&scope);
  return status;
}
