// The core's interface for the layers above it inside libtessera.so (the
// SDK, sdk/): what those layers need of the core beyond the application API
// of tessera/core.h. Not for applications: it is not installed, and its
// functions have hidden visibility (no TSR_API), so only code linked into
// libtessera.so can call them. The SDK reaches the core's state only through
// tessera/core.h and this header, never through the core's structs or its
// private headers (the test sdk_includes_no_private_core_header keeps it so).
//
// Errors: a function returning tsr_status sets this thread's error when it
// fails, unless it says otherwise.
#ifndef TESSERA_CORE_LAYER_H_
#define TESSERA_CORE_LAYER_H_

#include <stdarg.h>
#include <stdint.h>

#include "tessera/core.h"

#ifdef __cplusplus
extern "C" {
#endif

// Thread-locals read on every eager op. initial-exec makes each access one
// instruction instead of a __tls_get_addr call, which the default model
// costs on every op (docs/performance-log.md, "Measurements behind the code's
// decisions"); they are small, so the static TLS block of a libtessera that
// is dlopened still has room for them.
#define TSR_HOT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

// ---------------------------------------------------------------------------
// Errors: this thread's last error, and a context's sticky first error.

// Records |code| with a printf-formatted message as this thread's last error
// and returns |code|. TSR_OK clears. Thread-safe (per thread).
tsr_status tsr_error_set(tsr_status code, const char *format, ...) TSR_ABI_PRINTF(2, 3);
// tsr_error_set with a va_list.
tsr_status tsr_error_vset(tsr_status code, const char *format, va_list args);
// Prefixes this thread's current message with "<prefix>: ". Returns the status.
// Thread-safe (per thread).
tsr_status tsr_error_prefix(const char *prefix);
// This thread's last status and message ("" when none). The message lives in
// thread-local storage until the thread's next error. Thread-safe (per thread).
tsr_status tsr_error_status(void);
const char *tsr_error_message(void);
void tsr_error_clear(void);

#define TSR_RETURN_IF_ERROR(expr)      \
  do {                                 \
    tsr_status tsr_status_ = (expr);   \
    if (tsr_status_ != TSR_OK) return tsr_status_; \
  } while (0)

// Records |status| with this thread's message as |context|'s first error (if
// none yet) and returns |status|. NULL |context|, TSR_OK and TSR_NOT_READY
// record nothing. Thread-safe.
tsr_status tsr_context_fail(tsr_context *context, tsr_status status);
// Sets this thread's error to the printf-formatted message and records it as
// the sticky error of |device|'s context (none for a NULL |device|). Returns
// |status|. Thread-safe.
tsr_status tsr_fail(const tsr_device *device, tsr_status status, const char *format, ...)
    TSR_ABI_PRINTF(3, 4);

// ---------------------------------------------------------------------------
// Tensor handles

// The extension slot of a tensor handle, for the layer above the core (the
// SDK's autograd keeps the node that made the tensor, its gradient and its
// requires-grad flag here: sdk/autograd.c). The core clears it when it makes
// a handle and, when the last reference goes, calls |release| if set (after
// setting it to NULL); what the slot holds is owned by whoever set |release|.
typedef struct tsr_tensor_ext {
  void (*release)(tsr_tensor *tensor);
  void *node;
  tsr_tensor *tensor;
  uint32_t flags;
} tsr_tensor_ext;

// |tensor|'s extension slot, part of the handle: valid while the handle
// lives. A pointer computation, no lookup; |tensor| must not be NULL. Like
// strchr, it takes a const handle for readers; writing the slot needs the
// same external synchronisation as writing the tensor.
tsr_tensor_ext *tsr_tensor_ext_get(const tsr_tensor *tensor);
// 1 when |tensor| is a live handle, 0 when its last reference was released
// (within the core's quarantine of released handles). One compare.
// |tensor| must not be NULL. Thread-safe.
int tsr_tensor_handle_is_live(const tsr_tensor *tensor);
// 1 when another reference to |tensor| or another handle on its storage
// exists, so that writing the storage in place could be seen elsewhere.
// |tensor| must be live. Thread-safe; the answer holds while no other thread
// retains or releases those handles.
int tsr_tensor_is_shared(const tsr_tensor *tensor);

// A new handle over |base|'s storage (retained) with |base|'s dtype and the
// given |rank|, |sizes|, |strides| and |offset| (in elements), copied; not
// checked against the storage. The caller owns the one reference (adopted by
// the calling thread's open scope, as every new handle); NULL with this
// thread's error set when out of memory. |base| must be live. Thread-safe.
tsr_tensor *tsr_tensor_view_create(const tsr_tensor *base, int32_t rank, const int64_t *sizes,
                                   const int64_t *strides, int64_t offset);
// A contiguous tensor with fresh storage on the calling thread's current
// stream of |device|, owned by the caller as tsr_tensor_view_create's. NULL
// with the error set (and |device|'s sticky error for a bad shape or a
// failed allocation); messages name |what|, the public function being
// served. Thread-safe.
tsr_tensor *tsr_tensor_alloc(const char *what, tsr_device *device, tsr_dtype_t dtype,
                             int32_t rank, const int64_t *sizes);
// Validates |dtype|, |rank| and |sizes|, and writes their element count to
// |out_numel|; refuses counts that overflow int64 in elements or bytes.
// Messages name |what|. Thread-safe.
tsr_status tsr_shape_check(const char *what, tsr_dtype_t dtype, int32_t rank,
                           const int64_t *sizes, int64_t *out_numel);
// Drops a reference taken with tsr_tensor_retain by library code. Unlike
// tsr_tensor_release it never hands back a scope's claim on the handle (the
// retain was not the creation reference the scope holds). NULL is ignored.
// Thread-safety as tsr_tensor_release's.
void tsr_tensor_unref(tsr_tensor *tensor);

// The size in bytes of |tensor|'s storage (live). Thread-safe.
uint64_t tsr_tensor_storage_bytes(const tsr_tensor *tensor);
// Copies |bytes| from host memory |src| to the start of |tensor|'s storage,
// queued on the calling thread's current stream of its device, and bumps the
// storage version. |src| stays the caller's (the plugin's copy_host_to_device
// contract says for how long). On failure returns the plugin's status with
// its message prefixed by |what|, marks the device lost when the status says
// so, and records no sticky error. Thread-safe.
tsr_status tsr_tensor_storage_write(const char *what, tsr_tensor *tensor, const void *src,
                                    uint64_t bytes);
// Copies |bytes| from |tensor|'s storage at |byte_offset| to host memory
// |dst| on the calling thread's current stream of its device. Errors as
// tsr_tensor_storage_write's. Thread-safe.
tsr_status tsr_tensor_storage_read(const char *what, const tsr_tensor *tensor,
                                   uint64_t byte_offset, void *dst, uint64_t bytes);
// The host address of the start of |tensor|'s storage in |out_base| (NULL
// for a storage without a buffer), valid while the storage lives. Call only
// when tsr_device_host_ptr_supported says the device's plugin offers host
// pointers; returns the plugin's status and message. Thread-safe.
tsr_status tsr_tensor_storage_host_ptr_get(const tsr_tensor *tensor, void **out_base);

// ---------------------------------------------------------------------------
// Devices

// 1 when |device|'s context was destroyed (the device is kept for tensors
// that outlive it, and refuses work). Thread-safe.
int tsr_device_is_retired(const tsr_device *device);
// 1 when |device|'s plugin can give the host address of its buffers
// (buffer_host_ptr_get; whether that address may be used depends on
// TSR_DEVICE_HOST_ACCESSIBLE). Thread-safe.
int tsr_device_host_ptr_supported(const tsr_device *device);

// ---------------------------------------------------------------------------
// Scopes, threads and dispatch

// Suspends scope adoption on this thread (nesting) while library code creates
// tensors it stores or releases itself; returns the previous depth for
// tsr_scope_resume. Thread-safe (per thread).
int tsr_scope_suspend(void);
void tsr_scope_resume(int previous);

// Adds |fn| to the hooks the core runs on a thread when it trims that
// thread's free lists (context destroy, thread exit), so that a layer above
// the core frees its own per-thread caches at the same moments. Adding the
// same function again does nothing. TSR_OUT_OF_MEMORY when TSR_TRIM_HOOKS
// are taken. Thread-safe.
#define TSR_TRIM_HOOKS 4
tsr_status tsr_thread_trim_hook_add(void (*fn)(void));

// Runs |op| on the device of its operands: tsr_op_run, as a direct call
// inside the library (the eager path's entry). Thread-safe.
tsr_status tsr_dispatch(tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                        int32_t num_outputs, tsr_tensor *const *outputs, const void *attrs);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_CORE_LAYER_H_
