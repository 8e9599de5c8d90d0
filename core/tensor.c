// Tensor handles: reference-counted views over storage, recycled per thread.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "context.h"
#include "device.h"
#include "scope.h"
#include "storage.h"
#include "stream.h"
#include "tensor.h"

// Released handles wait in a per-thread FIFO: new ones go to the tail, and
// a handle is taken from the head only when more than TSR_TENSOR_QUARANTINE
// are waiting, so every released handle stays poisoned for at least that
// many further releases. Past TSR_FREE_LIST_CAP the oldest is freed.
#define TSR_FREE_LIST_CAP 1024
static TSR_HOT_TLS tsr_tensor *tls_free_tensors;  // head: the oldest
static TSR_HOT_TLS tsr_tensor *tls_free_tail;
static TSR_HOT_TLS int tls_free_tensor_count;
// Set once this thread's free lists will be trimmed when it exits.
static TSR_HOT_TLS int tls_trim_registered;
static pthread_key_t g_trim_key;
static pthread_once_t g_trim_key_once = PTHREAD_ONCE_INIT;
static _Atomic(void (*)(void)) g_trim_hooks[TSR_TRIM_HOOKS];

// A thread that used the SDK and exits would otherwise leak its cached
// tensor and storage records: a key destructor runs while its thread-local
// variables are still valid.
static void tsr_thread_exit_trim(void *unused) {
  (void)unused;
  tsr_tensor_free_lists_trim();
}

static void tsr_trim_key_create(void) {
  pthread_key_create(&g_trim_key, tsr_thread_exit_trim);
}

void tsr_thread_free_lists_register(void) {
  if (tls_trim_registered)
    return;
  tls_trim_registered = 1;
  pthread_once(&g_trim_key_once, tsr_trim_key_create);
  // Any non-NULL value makes the destructor run at thread exit.
  pthread_setspecific(g_trim_key, &g_trim_key);
}

void tsr_tensor_free_lists_trim(void) {
  while (tls_free_tensors != NULL) {
    tsr_tensor *t = tls_free_tensors;
    tls_free_tensors = t->next_free;
    free(t);
  }
  tls_free_tail = NULL;
  tls_free_tensor_count = 0;
  tsr_storage_free_list_trim();
  tsr_scope_list_trim();
  for (int i = 0; i < TSR_TRIM_HOOKS; ++i) {
    void (*fn)(void) = atomic_load_explicit(&g_trim_hooks[i], memory_order_acquire);
    if (fn != NULL) fn();
  }
}

tsr_status tsr_thread_trim_hook_add(void (*fn)(void)) {
  if (fn == NULL) return tsr_error_set(TSR_INVALID_ARGUMENT, "thread_trim_hook_add: fn is NULL");
  for (int i = 0; i < TSR_TRIM_HOOKS; ++i) {
    void (*seen)(void) = NULL;
    if (atomic_compare_exchange_strong(&g_trim_hooks[i], &seen, fn) || seen == fn) return TSR_OK;
  }
  return tsr_error_set(TSR_OUT_OF_MEMORY, "thread_trim_hook_add: all %d hooks are taken",
                       TSR_TRIM_HOOKS);
}

const char *tsr_dtype_name(tsr_dtype_t dtype) {
  static const char *names[] = {"float32", "float64", "bfloat16", "float16",
                                "int32",   "int64",   "bool"};
  return dtype >= 0 && dtype < TSR_DTYPE_COUNT ? names[dtype] : "unknown";
}

tsr_status tsr_shape_check(const char *what, tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                           int64_t *out_numel) {
  if (dtype < 0 || dtype >= TSR_DTYPE_COUNT) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: dtype %d is not a Tessera dtype", what, dtype);
  }
  if (rank < 0 || rank > TSR_MAX_RANK) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: rank %d is outside [0, %d]", what, rank,
                         TSR_MAX_RANK);
  }
  if (rank > 0 && sizes == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: sizes is NULL for rank %d", what, rank);
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: sizes[%d] is %lld (negative)", what, d,
                           (long long)sizes[d]);
    }
    // Overflow builtins, not INT64_MAX / size: every tensor made passes
    // here, and a 64-bit division costs tens of cycles.
    if (__builtin_mul_overflow(numel, sizes[d], &numel)) {
      return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: element count overflows int64 at sizes[%d]",
                           what, d);
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(numel, (int64_t)tsr_dtype_size(dtype), &bytes)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: %lld elements of %s overflow a byte count",
                         what, (long long)numel, tsr_dtype_name(dtype));
  }
  *out_numel = numel;
  return TSR_OK;
}

// A handle on |storage| that takes over one of the caller's references.
static tsr_tensor *tensor_adopt(tsr_storage *storage, tsr_dtype_t dtype, int32_t rank,
                                const int64_t *sizes, const int64_t *strides, int64_t offset) {
  tsr_tensor *t = NULL;
  if (tls_free_tensor_count > TSR_TENSOR_QUARANTINE) {
    t = tls_free_tensors;
    tls_free_tensors = t->next_free;
    if (tls_free_tensors == NULL) tls_free_tail = NULL;
    --tls_free_tensor_count;
  } else {
    t = malloc(sizeof(*t));
    if (t == NULL) {
      tsr_error_set(TSR_OUT_OF_MEMORY, "no host memory for a tensor handle");
      return NULL;
    }
  }
  atomic_init(&t->refs, 1);
  t->live = TSR_TENSOR_LIVE;
  t->dtype = dtype;
  t->rank = rank;
  t->storage = storage;
  t->device = storage->device;
  t->offset = offset;
  for (int32_t d = 0; d < rank; ++d) {
    t->sizes[d] = sizes[d];
    t->strides[d] = strides[d];
  }
  t->next_free = NULL;
  t->ext.release = NULL;
  t->ext.node = NULL;
  t->ext.tensor = NULL;
  t->ext.flags = 0;
  t->scope_slot = -1;
  t->scope_owner = NULL;
  tsr_scope_adopt(t);
  return t;
}

tsr_tensor *tsr_tensor_make(tsr_storage *storage, tsr_dtype_t dtype, int32_t rank,
                            const int64_t *sizes, const int64_t *strides, int64_t offset) {
  tsr_tensor *t = tensor_adopt(storage, dtype, rank, sizes, strides, offset);
  if (t != NULL) tsr_storage_retain(storage);
  return t;
}

tsr_tensor *tsr_tensor_alloc(const char *what, tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                             const int64_t *sizes) {
  if (atomic_load_explicit(&device->retired, memory_order_relaxed)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "%s: the context of device %s was destroyed", what,
                  device->name);
    return NULL;
  }
  int64_t numel = 0;
  if (tsr_shape_check(what, dtype, rank, sizes, &numel) != TSR_OK) {
    tsr_fail(device, tsr_error_status(), "%s", tsr_error_message());
    return NULL;
  }
  int64_t strides[TSR_MAX_RANK];
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= sizes[d] > 0 ? sizes[d] : 1;
  }
  tsr_storage *storage = NULL;
  tsr_status status = tsr_storage_create(device, (uint64_t)numel * tsr_dtype_size(dtype),
                                         tsr_stream_current(device), &storage);
  if (status != TSR_OK) {
    tsr_fail(device, status, "%s: %s", what, tsr_error_message());
    return NULL;
  }
  // The new storage's one reference goes to the tensor: no retain and
  // release pair, each an atomic read-modify-write on the eager path.
  tsr_tensor *t = tensor_adopt(storage, dtype, rank, sizes, strides, 0);
  if (t == NULL) tsr_storage_release(storage);
  return t;
}

// --- for the layers above the core (tessera/core_layer.h) -----------------

tsr_tensor_ext *tsr_tensor_ext_get(const tsr_tensor *tensor) {
  return (tsr_tensor_ext *)&tensor->ext;
}

int tsr_tensor_handle_is_live(const tsr_tensor *tensor) { return tsr_tensor_is_live(tensor); }

int tsr_tensor_is_shared(const tsr_tensor *tensor) {
  return atomic_load(&tensor->refs) > 1 || atomic_load(&tensor->storage->refs) > 1;
}

tsr_tensor *tsr_tensor_view_create(const tsr_tensor *base, int32_t rank, const int64_t *sizes,
                                   const int64_t *strides, int64_t offset) {
  return tsr_tensor_make(base->storage, base->dtype, rank, sizes, strides, offset);
}

uint64_t tsr_tensor_storage_bytes(const tsr_tensor *tensor) { return tensor->storage->bytes; }

tsr_status tsr_tensor_storage_write(const char *what, tsr_tensor *tensor, const void *src,
                                    uint64_t bytes) {
  tsr_device *device = tensor->device;
  tsr_stream *stream = tsr_stream_current(device);
  tsr_status status = device->plugin->api->copy_host_to_device(stream->handle, src,
                                                               tensor->storage->buffer, 0, bytes);
  if (status != TSR_OK) {
    tsr_error_prefix(what);
    return tsr_device_check_status(device, status);
  }
  atomic_fetch_add(&tensor->storage->version, 1);
  return TSR_OK;
}

tsr_status tsr_tensor_storage_read(const char *what, const tsr_tensor *tensor,
                                   uint64_t byte_offset, void *dst, uint64_t bytes) {
  tsr_device *device = tensor->device;
  tsr_stream *stream = tsr_stream_current(device);
  tsr_status status = device->plugin->api->copy_device_to_host(
      stream->handle, tensor->storage->buffer, byte_offset, dst, bytes);
  if (status != TSR_OK) {
    tsr_error_prefix(what);
    return tsr_device_check_status(device, status);
  }
  return TSR_OK;
}

tsr_status tsr_tensor_storage_host_ptr_get(const tsr_tensor *tensor, void **out_base) {
  *out_base = NULL;
  if (tensor->storage == NULL || tensor->storage->buffer == NULL) return TSR_OK;
  return tensor->device->plugin->api->buffer_host_ptr_get(tensor->storage->buffer, out_base);
}

// --- public tensor API ----------------------------------------------------

tsr_tensor *tsr_tensor_retain(tsr_tensor *tensor) {
  if (tensor == NULL)
    return NULL;
  if (!tsr_tensor_is_live(tensor)) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_retain: the handle was already released");
    return NULL;
  }
  atomic_fetch_add_explicit(&tensor->refs, 1, memory_order_relaxed);
  return tensor;
}

void tsr_tensor_release(tsr_tensor * tensor) {
  if (tensor == NULL)
    return;
  if (!tsr_tensor_is_live(tensor)) {
    // A double release: an error, never a second free that would hand one
    // handle to two new tensors.
    tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_release: the handle was already released");
    return;
  }
  if (tensor->scope_owner != NULL)
    tsr_scope_forget(tensor);
  tsr_tensor_unref(tensor);
}

void tsr_tensor_unref(tsr_tensor *tensor) {
  if (tensor == NULL)
    return;
  if (!tsr_ref_drop(&tensor->refs))
    return;
  if (tensor->ext.release != NULL) {
    void (*release)(tsr_tensor *) = tensor->ext.release;
    tensor->ext.release = NULL;
    release(tensor);
  }
  tsr_storage_release(tensor->storage);
  tensor->live = TSR_TENSOR_RELEASED;
  tsr_thread_free_lists_register();
  tensor->next_free = NULL;
  if (tls_free_tail != NULL) {
    tls_free_tail->next_free = tensor;
  } else {
    tls_free_tensors = tensor;
  }
  tls_free_tail = tensor;
  if (++tls_free_tensor_count > TSR_FREE_LIST_CAP) {
    tsr_tensor *oldest = tls_free_tensors;
    tls_free_tensors = oldest->next_free;
    --tls_free_tensor_count;
    free(oldest);
  }
}

tsr_dtype_t tsr_tensor_dtype(const tsr_tensor *tensor) {
  return tensor ? tensor->dtype : -1;
}
int32_t tsr_tensor_rank(const tsr_tensor *tensor) {
  return tensor ? tensor->rank : -1;
}

int64_t tsr_tensor_size(const tsr_tensor *tensor, int32_t dim) {
  if (tensor == NULL)
    return -1;
  if (dim < 0)
    dim += tensor->rank;
  return dim >= 0 && dim < tensor->rank ? tensor->sizes[dim] : -1;
}

int64_t tsr_tensor_stride(const tsr_tensor *tensor, int32_t dim) {
  if (tensor == NULL)
    return -1;
  if (dim < 0)
    dim += tensor->rank;
  return dim >= 0 && dim < tensor->rank ? tensor->strides[dim] : -1;
}

const int64_t *tsr_tensor_sizes(const tsr_tensor *tensor) {
  return tensor ? tensor->sizes : NULL;
}
const int64_t *tsr_tensor_strides(const tsr_tensor *tensor) {
  return tensor ? tensor->strides : NULL;
}

int64_t tsr_tensor_numel(const tsr_tensor *tensor) {
  if (tensor == NULL)
    return -1;
  int64_t n = 1;
  for (int32_t d = 0; d < tensor->rank; ++d) n *= tensor->sizes[d];
  return n;
}

int64_t tsr_tensor_offset(const tsr_tensor *tensor) {
  return tensor ? tensor->offset : -1;
}

int tsr_tensor_is_contiguous(const tsr_tensor *tensor) {
  if (tensor == NULL)
    return 0;
  int64_t expected = 1;
  for (int32_t d = tensor->rank - 1; d >= 0; --d) {
    if (tensor->sizes[d] != 1 && tensor->strides[d] != expected)
      return 0;
    expected *= tensor->sizes[d];
  }
  return 1;
}

tsr_device *tsr_tensor_device(const tsr_tensor *tensor) {
  return tensor ? tensor->device : NULL;
}

uint64_t tsr_tensor_storage_version(const tsr_tensor *tensor) {
  return tensor && tsr_tensor_is_live(tensor) ? atomic_load(&tensor->storage->version) : 0;
}

int tsr_tensor_shares_storage(const tsr_tensor *a, const tsr_tensor *b) {
  return a != NULL && b != NULL && a->storage == b->storage;
}
