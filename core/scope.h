// Scopes: the per-thread lists of handles released together.
#ifndef TESSERA_CORE_SCOPE_H_
#define TESSERA_CORE_SCOPE_H_

#include "common.h"

// --- scope.c -------------------------------------------------------------

// Gives |tensor|'s creation reference to the calling thread's innermost open
// scope, if any and not suspended. Called by tsr_tensor_make.
void tsr_scope_adopt(tsr_tensor *tensor);
// Called by tsr_tensor_release before dropping a reference: when the scope of
// this thread holds |tensor|'s creation reference, that claim is given up.
void tsr_scope_forget(tsr_tensor *tensor);
// tsr_scope_suspend and tsr_scope_resume are declared in tessera/core_layer.h.
// Frees this thread's scope list when no scope is open.
void tsr_scope_list_trim(void);

#endif  // TESSERA_CORE_SCOPE_H_
