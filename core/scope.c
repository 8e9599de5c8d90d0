// Scopes: per-thread lists of tensor handles whose creation reference the
// scope holds, released when the scope ends (tessera.h, "Scopes").
//
// The list is one growing array per thread with a stack of marks, like an
// autorelease pool; the array keeps its capacity between scopes, so a
// training loop allocates nothing here after its first step.
#include <stdlib.h>

#include "scope.h"
#include "tensor.h"

#define TSR_SCOPE_MAX_DEPTH 64

typedef struct tsr_scope_stack {
  tsr_tensor **entries;
  size_t count;
  size_t capacity;
  size_t marks[TSR_SCOPE_MAX_DEPTH];
  int32_t depth;      // open scopes
  int32_t suspended;  // library code creating tensors it manages itself
} tsr_scope_stack;

static TSR_HOT_TLS tsr_scope_stack tls_scopes;

static int scope_grow(tsr_scope_stack *s) {
  size_t capacity = s->capacity ? s->capacity * 2 : 256;
  tsr_tensor **entries = realloc(s->entries, capacity * sizeof(*entries));
  if (entries == NULL)
    return 0;
  s->entries = entries;
  s->capacity = capacity;
  return 1;
}

void tsr_scope_adopt(tsr_tensor *tensor) {
  tsr_scope_stack *s = &tls_scopes;
  if (s->depth == 0 || s->suspended > 0)
    return;
  // Out of host memory for the list: the handle stays the caller's, as
  // outside a scope (a leak, not a crash).
  if (s->count == s->capacity && !scope_grow(s))
    return;
  tensor->scope_slot = (int32_t)s->count;
  tensor->scope_owner = s;
  s->entries[s->count++] = tensor;
}

static void scope_detach(tsr_tensor *tensor) {
  tsr_scope_stack *s = &tls_scopes;
  if (tensor->scope_owner != s)
    return;  // another thread's scope: only that thread touches its list
  s->entries[tensor->scope_slot] = NULL;
  tensor->scope_slot = -1;
  tensor->scope_owner = NULL;
}

void tsr_scope_forget(tsr_tensor *tensor) {
  scope_detach(tensor);
}

int tsr_scope_suspend(void) {
  return tls_scopes.suspended++;
}

void tsr_scope_resume(int previous) {
  tls_scopes.suspended = previous;
}

size_t tsr_scope_begin(void) {
  tsr_scope_stack *s = &tls_scopes;
  if (s->depth == TSR_SCOPE_MAX_DEPTH) {
    // Deeper nesting shares the innermost scope's list.
    return (size_t)s->depth - 1;
  }
  s->marks[s->depth] = s->count;
  return (size_t)s->depth++;
}

void tsr_scope_end(size_t mark) {
  tsr_scope_stack *s = &tls_scopes;
  if (mark >= (size_t)s->depth)
    return;
  size_t first = s->marks[mark];
  s->depth = (int32_t)mark;
  while (s->count > first) {
    tsr_tensor *t = s->entries[--s->count];
    if (t == NULL)
      continue;
    t->scope_slot = -1;
    t->scope_owner = NULL;
    tsr_tensor_release(t);
  }
  if (s->depth == 0 && s->count == 0 && s->capacity > 65536) {
    // A one-off huge scope does not pin its list for the thread's life.
    free(s->entries);
    s->entries = NULL;
    s->capacity = 0;
  }
}

tsr_tensor *tsr_scope_keep(tsr_tensor *tensor) {
  if (tensor != NULL && tensor->scope_owner != NULL)
    scope_detach(tensor);
  return tensor;
}

size_t tsr_scope_size(void) {
  size_t n = 0;
  for (size_t i = 0; i < tls_scopes.count; ++i) n += tls_scopes.entries[i] != NULL;
  return n;
}

void tsr_scope_list_trim(void) {
  tsr_scope_stack *s = &tls_scopes;
  if (s->depth != 0 || s->count != 0)
    return;
  free(s->entries);
  s->entries = NULL;
  s->capacity = 0;
}
