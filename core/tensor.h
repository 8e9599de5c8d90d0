// Tensor handles: views over storage, per-thread free lists, poisoning of
// released handles, and the extension slot the SDK fills.
#ifndef TESSERA_CORE_TENSOR_H_
#define TESSERA_CORE_TENSOR_H_

#include <stdatomic.h>

#include "common.h"
#include "storage.h"

struct tsr_scope_stack;

// tsr_tensor.live: set while the handle is live, poisoned when its last
// reference goes (tensor.c). A released handle's memory is not handed out
// again before TSR_TENSOR_QUARANTINE further releases on the same thread, so
// that using or releasing it in that window is a clean error, found by a
// compare.
#define TSR_TENSOR_LIVE 0x7e5a11feu
#define TSR_TENSOR_RELEASED 0xdeadbeefu
#define TSR_TENSOR_QUARANTINE 256

struct tsr_tensor {
  atomic_int refs;
  uint32_t live;  // TSR_TENSOR_LIVE or TSR_TENSOR_RELEASED
  tsr_dtype_t dtype;
  int32_t rank;
  tsr_storage *storage;
  tsr_device *device;
  int64_t offset;                // in elements
  int64_t sizes[TSR_MAX_RANK];
  int64_t strides[TSR_MAX_RANK];
  struct tsr_tensor *next_free;
  // The extension slot for a layer above the core (tessera/core_layer.h,
  // tsr_tensor_ext_get): part of the handle, so reaching it on the eager
  // path costs no lookup.
  tsr_tensor_ext ext;
  // The scope that holds this handle's creation reference (scope.c), or NULL.
  int32_t scope_slot;
  struct tsr_scope_stack *scope_owner;
};

// 1 when |t| is a live handle (not released). A compare, for the hot path.
static inline int tsr_tensor_is_live(const tsr_tensor *t) { return t->live == TSR_TENSOR_LIVE; }


// --- tensor.c ------------------------------------------------------------

// tsr_tensor_alloc, tsr_tensor_view_create, tsr_shape_check,
// tsr_tensor_unref and tsr_thread_trim_hook_add are declared in
// tessera/core_layer.h, for the SDK too.

// A tensor handle from this thread's free list (refs = 1), over |storage|
// (retained). Sizes/strides are copied.
tsr_tensor *tsr_tensor_make(tsr_storage *storage, tsr_dtype_t dtype, int32_t rank,
                            const int64_t *sizes, const int64_t *strides, int64_t offset);
// Frees this thread's cached storage records.
void tsr_storage_free_list_trim(void);
// Frees this thread's cached tensor and storage handles, then runs the trim
// hooks. Called at context destroy and thread exit.
void tsr_tensor_free_lists_trim(void);
// Arranges for the calling thread's free lists to be trimmed when it exits;
// one thread-local test after the first call.
void tsr_thread_free_lists_register(void);

#endif  // TESSERA_CORE_TENSOR_H_
