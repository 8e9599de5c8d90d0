// What every core object header needs: the public types (tessera/core.h),
// the core's interface for the SDK (tessera/core_layer.h: the hot
// thread-local storage class, errors) and the reference drop.
#ifndef TESSERA_CORE_COMMON_H_
#define TESSERA_CORE_COMMON_H_

#include <stdatomic.h>
#include <stdint.h>

#include "tessera/core.h"
#include "tessera/core_layer.h"  // TSR_HOT_TLS, and what the core offers the SDK

// Drops one reference from |refs|; returns 1 when it was the last. A count
// of 1 (read with acquire, pairing with other holders' releasing drops)
// means the caller holds the only reference, and then no other thread can
// change it: the locked decrement is skipped. That is the common case for
// an eager op's temporaries.
static inline int tsr_ref_drop(atomic_int *refs) {
  if (atomic_load_explicit(refs, memory_order_acquire) == 1)
    return 1;
  return atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

#endif  // TESSERA_CORE_COMMON_H_
