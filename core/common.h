// What every core object header needs: the public types (tessera/core.h),
// the hot thread-local storage class and the reference drop.
#ifndef TESSERA_CORE_COMMON_H_
#define TESSERA_CORE_COMMON_H_

#include <stdatomic.h>
#include <stdint.h>

#include "tessera/core.h"

// Thread-locals read on every eager op. initial-exec makes each access one
// instruction instead of a __tls_get_addr call, which the default model
// costs on every op (docs/performance-log.md, "Measurements behind the code's
// decisions"); they are small, so the static TLS block of a libtessera that
// is dlopened still has room for them.
#define TSR_HOT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

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
