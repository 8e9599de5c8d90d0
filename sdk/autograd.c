// The autograd engine: recording nodes, the backward pass, gradients of
// leaves and grad mode (tessera/autograd.h, autograd_internal.h).
//
// Nodes form a DAG owned from the outputs down: an output tensor holds its
// node, a node holds its inputs, an input holds the node that produced it.
// Nothing points back up, so there are no cycles and dropping the last
// tensor of a graph frees it. Backward collects the nodes reachable from the
// root, orders them by depth (ties by recording order, so the order in which
// gradients are summed, and thus the bits, are the same on every run) and
// runs each rule once with the sum of its output's incoming gradients.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_internal.h"
#include "tessera/core_layer.h"

#define TSR_AG_FREE_LIST_CAP 1024

static TSR_HOT_TLS int tls_grad_disabled;
static TSR_HOT_TLS uint64_t tls_seq;
// Recycled nodes, and the queue that turns the release of a long chain into
// a loop instead of a recursion as deep as the graph.
static TSR_HOT_TLS tsr_ag_node *tls_free_nodes;
static TSR_HOT_TLS int tls_free_node_count;
static TSR_HOT_TLS tsr_ag_node *tls_release_queue;
static TSR_HOT_TLS int tls_releasing;
static TSR_HOT_TLS int tls_exit_registered;
// Per-thread work arrays of the backward pass, kept between passes.
static TSR_HOT_TLS tsr_ag_node **tls_order;
static TSR_HOT_TLS size_t tls_order_cap;
static TSR_HOT_TLS tsr_ag_node **tls_stack;
static TSR_HOT_TLS size_t tls_stack_cap;
static pthread_key_t g_exit_key;
static pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;
static atomic_int g_pass = 1;

int tsr_grad_mode_set(int enabled) {
  int previous = !tls_grad_disabled;
  tls_grad_disabled = !enabled;
  return previous;
}

int tsr_grad_mode(void) {
  return !tls_grad_disabled;
}

// Autograd lives in the core tensor's extension slot (core/runtime.h):
// |ext_node| is the node that produced the tensor (a reference), |ext_tensor|
// a leaf's accumulated gradient (owned), |ext_flags| TSR_AG_REQUIRES_GRAD.
// |ext_release| is tensor_ext_release whenever either pointer is set.
#define TSR_AG_REQUIRES_GRAD 1u

static tsr_ag_node *node_of(const tsr_tensor *t) {
  return (tsr_ag_node *)tsr_tensor_ext_get(t)->node;
}

static int requires_grad(const tsr_tensor *t) {
  return (tsr_tensor_ext_get(t)->flags & TSR_AG_REQUIRES_GRAD) != 0;
}

static void node_release(tsr_ag_node *n);
static void trim_hook_add(void);

// Called by the core when |t|'s last reference goes.
static void tensor_ext_release(tsr_tensor *t) {
  tsr_tensor_ext *ext = tsr_tensor_ext_get(t);
  tsr_ag_node *n = ext->node;
  ext->node = NULL;
  if (n != NULL) node_release(n);
  tsr_tensor *grad = ext->tensor;
  ext->tensor = NULL;
  tsr_tensor_release(grad);
}

// --- node lifetime ------------------------------------------------------------

static void free_list_trim(void *unused);

// Registered with the core (tsr_thread_trim_hook_add) once this thread keeps
// a cache: the core runs it at context destroy and when a thread exits.
static void thread_trim(void) { free_list_trim(NULL); }

static void trim_hook_register(void) {
  if (tsr_thread_trim_hook_add(thread_trim) != TSR_OK) tsr_last_error_clear();
}

static pthread_once_t g_trim_hook_once = PTHREAD_ONCE_INIT;

static void trim_hook_add(void) { pthread_once(&g_trim_hook_once, trim_hook_register); }

static void free_list_trim(void *unused) {
  (void)unused;
  while (tls_free_nodes != NULL) {
    tsr_ag_node *n = tls_free_nodes;
    tls_free_nodes = n->next_free;
    free(n);
  }
  tls_free_node_count = 0;
  free(tls_order);
  free(tls_stack);
  tls_order = tls_stack = NULL;
  tls_order_cap = tls_stack_cap = 0;
}

static void exit_key_create(void) {
  pthread_key_create(&g_exit_key, free_list_trim);
}

// Drops the node's references to tensors. Releasing an input may free the
// node that produced it; that one goes on the queue.
static void node_drop_state(tsr_ag_node *n) {
  for (int32_t i = 0; i < n->num_inputs; ++i) {
    tsr_tensor *t = n->inputs[i];
    n->inputs[i] = NULL;
    tsr_tensor_unref(t);  // the node's own retain, not a scope's claim
  }
  for (int32_t i = 0; i < n->num_saved; ++i) {
    tsr_tensor *t = n->saved[i];
    n->saved[i] = NULL;
    tsr_tensor_release(t);
  }
  tsr_tensor *grad = n->grad;
  n->grad = NULL;
  tsr_tensor_release(grad);
}

static void node_recycle(tsr_ag_node *n) {
  if (tls_free_node_count >= TSR_AG_FREE_LIST_CAP) {
    free(n);
    return;
  }
  if (!tls_exit_registered) {
    tls_exit_registered = 1;
    pthread_once(&g_exit_key_once, exit_key_create);
    pthread_setspecific(g_exit_key, &g_exit_key);
    trim_hook_add();
  }
  n->next_free = tls_free_nodes;
  tls_free_nodes = n;
  ++tls_free_node_count;
}

static void node_release(tsr_ag_node *n) {
  if (atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1)
    return;
  n->next_free = tls_release_queue;
  tls_release_queue = n;
  if (tls_releasing)
    return;
  tls_releasing = 1;
  while ((n = tls_release_queue) != NULL) {
    tls_release_queue = n->next_free;
    node_drop_state(n);
    node_recycle(n);
  }
  tls_releasing = 0;
}

static tsr_ag_node *node_alloc(void) {
  tsr_ag_node *n = tls_free_nodes;
  if (n != NULL) {
    tls_free_nodes = n->next_free;
    --tls_free_node_count;
  } else {
    n = malloc(sizeof(*n));
    if (n == NULL)
      return NULL;
  }
  atomic_init(&n->refs, 1);
  n->num_inputs = 0;
  n->num_saved = 0;
  n->needs_grad = 0;
  n->reads_inputs = ~0u;
  n->grad = NULL;
  n->released = 0;
  n->visit = 0;
  n->next_free = NULL;
  memset(n->ints, 0, sizeof(n->ints));
  memset(n->reals, 0, sizeof(n->reals));
  return n;
}

// --- recording ----------------------------------------------------------------

int tsr_ag_should_record(int32_t num_inputs, tsr_tensor *const *inputs) {
  if (tls_grad_disabled)
    return 0;
  for (int32_t i = 0; i < num_inputs; ++i) {
    if (inputs[i] != NULL && requires_grad(inputs[i]))
      return 1;
  }
  return 0;
}

tsr_status tsr_ag_record(const char *name, tsr_ag_backward_fn backward, int32_t num_inputs,
                         tsr_tensor *const *inputs, tsr_tensor *out, tsr_ag_node **out_node) {
  if (num_inputs < 0 || num_inputs > TSR_MAX_OPERANDS || out == NULL || backward == NULL) {
    return tsr_error_set(TSR_INTERNAL, "%s: autograd record with %d inputs or NULL output", name,
                         num_inputs);
  }
  if (tsr_tensor_ext_get(out)->node != NULL) {
    return tsr_error_set(TSR_INTERNAL, "%s: the output was already recorded", name);
  }
  tsr_ag_node *n = node_alloc();
  if (n == NULL) {
    return tsr_fail(tsr_tensor_device(out), TSR_OUT_OF_MEMORY,
                    "%s: no host memory for an autograd node", name);
  }
  int64_t depth = 0;
  n->num_inputs = num_inputs;
  for (int32_t i = 0; i < num_inputs; ++i) {
    tsr_tensor *t = inputs[i];
    n->inputs[i] = tsr_tensor_retain(t);
    n->input_versions[i] = tsr_tensor_storage_version(t);
    if (t == NULL || !requires_grad(t))
      continue;
    n->needs_grad |= 1u << i;
    if (tsr_tensor_ext_get(t)->node != NULL && node_of(t)->depth > depth)
      depth = node_of(t)->depth;
  }
  n->depth = depth + 1;
  n->seq = ++tls_seq;
  n->name = name;
  n->backward = backward;
  n->out_rank = tsr_tensor_rank(out);
  n->out_dtype = tsr_tensor_dtype(out);
  memcpy(n->out_sizes, tsr_tensor_sizes(out), sizeof(n->out_sizes));
  tsr_tensor_ext *ext = tsr_tensor_ext_get(out);
  ext->node = n;
  ext->flags |= TSR_AG_REQUIRES_GRAD;
  ext->release = tensor_ext_release;
  if (out_node != NULL)
    *out_node = n;
  return TSR_OK;
}

tsr_status tsr_ag_node_save(tsr_ag_node *node, const tsr_tensor *tensor) {
  if (node->num_saved >= TSR_AG_MAX_SAVED || tensor == NULL) {
    return tsr_error_set(TSR_INTERNAL, "%s: cannot save %s", node->name,
                         tensor ? "more tensors" : "a NULL tensor");
  }
  int previous = tsr_scope_suspend();
  tsr_tensor *alias =
      tsr_tensor_view_create(tensor, tsr_tensor_rank(tensor), tsr_tensor_sizes(tensor),
                             tsr_tensor_strides(tensor), tsr_tensor_offset(tensor));
  tsr_scope_resume(previous);
  if (alias == NULL)
    return tsr_fail(tsr_tensor_device(tensor), TSR_OUT_OF_MEMORY, "%s", tsr_error_message());
  node->saved_versions[node->num_saved] = tsr_tensor_storage_version(tensor);
  node->saved[node->num_saved++] = alias;
  return TSR_OK;
}

tsr_status tsr_ag_check_inplace(const char *what, const tsr_tensor *tensor) {
  if (tls_grad_disabled || tensor == NULL || !requires_grad(tensor))
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                  "%s: in-place write to a tensor that requires grad while grad mode is on "
                  "(use tsr_grad_mode_set(0) or write to a detached tensor)",
                  what);
}

tsr_tensor *tsr_ag_reduce_to(tsr_tensor *grad, int32_t rank, const int64_t *sizes) {
  const int32_t grad_rank = tsr_tensor_rank(grad);
  const int64_t *grad_sizes = tsr_tensor_sizes(grad);
  int same = grad_rank == rank;
  for (int32_t d = 0; same && d < rank; ++d) same = grad_sizes[d] == sizes[d];
  if (same)
    return tsr_tensor_retain(grad);
  int32_t shift = grad_rank - rank;
  if (shift < 0) {
    tsr_fail(tsr_tensor_device(grad), TSR_INTERNAL,
             "autograd: gradient of rank %d for an input of rank %d", grad_rank, rank);
    return NULL;
  }
  int32_t axes[TSR_MAX_RANK];
  int32_t count = 0;
  for (int32_t d = 0; d < grad_rank; ++d) {
    int64_t want = d < shift ? 1 : sizes[d - shift];
    if (d < shift || (want == 1 && grad_sizes[d] != 1)) {
      axes[count++] = d;
    } else if (want != grad_sizes[d]) {
      tsr_fail(tsr_tensor_device(grad), TSR_INTERNAL,
               "autograd: gradient size %lld at dim %d cannot reduce to %lld",
               (long long)grad_sizes[d], d, (long long)want);
      return NULL;
    }
  }
  tsr_tensor *summed = tsr_reduce(grad, TSR_REDUCE_SUM, count, axes, 1);
  if (summed == NULL)
    return NULL;
  tsr_tensor *shaped = tsr_view(summed, rank, sizes);
  tsr_tensor_release(summed);
  return shaped;
}

// --- leaves and gradients -----------------------------------------------------

static int is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_FLOAT16;
}

tsr_status tsr_tensor_requires_grad_set(tsr_tensor *tensor, int requires_grad) {
  if (tensor == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_requires_grad_set: tensor is NULL");
  }
  if (tsr_tensor_ext_get(tensor)->node != NULL) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "tensor_requires_grad_set: the tensor is the output of a recorded op (%s), "
                    "not a leaf; use tsr_detach for a leaf",
                    node_of(tensor)->name);
  }
  if (requires_grad && !is_float(tsr_tensor_dtype(tensor))) {
    return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                    "tensor_requires_grad_set: only float tensors can require grad (dtype %d)",
                    tsr_tensor_dtype(tensor));
  }
  tsr_tensor_ext *ext = tsr_tensor_ext_get(tensor);
  if (requires_grad)
    ext->flags |= TSR_AG_REQUIRES_GRAD;
  else
    ext->flags &= ~TSR_AG_REQUIRES_GRAD;
  return TSR_OK;
}

int tsr_tensor_requires_grad(const tsr_tensor *tensor) {
  return tensor != NULL && requires_grad(tensor);
}

int tsr_tensor_is_leaf(const tsr_tensor *tensor) {
  return tensor != NULL && tsr_tensor_ext_get(tensor)->node == NULL;
}

const char *tsr_tensor_grad_fn_name(const tsr_tensor *tensor) {
  return tensor != NULL && tsr_tensor_ext_get(tensor)->node != NULL ? node_of(tensor)->name : NULL;
}

// A new handle on |t|'s storage with no autograd state.
static tsr_tensor *plain_alias(const tsr_tensor *t) {
  return tsr_tensor_view_create(t, tsr_tensor_rank(t), tsr_tensor_sizes(t), tsr_tensor_strides(t),
                                tsr_tensor_offset(t));
}

tsr_tensor *tsr_tensor_grad(const tsr_tensor *tensor) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_grad: tensor is NULL");
    return NULL;
  }
  const tsr_tensor *grad = tsr_tensor_ext_get(tensor)->tensor;
  return grad != NULL ? plain_alias(grad) : NULL;
}

tsr_status tsr_tensor_grad_set(tsr_tensor *tensor, tsr_tensor *grad) {
  if (tensor == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "tensor_grad_set: tensor is NULL");
  if (grad != NULL) {
    int same = tsr_tensor_rank(grad) == tsr_tensor_rank(tensor) &&
               tsr_tensor_dtype(grad) == tsr_tensor_dtype(tensor) &&
               tsr_tensor_device(grad) == tsr_tensor_device(tensor);
    for (int32_t d = 0; same && d < tsr_tensor_rank(grad); ++d)
      same = tsr_tensor_sizes(grad)[d] == tsr_tensor_sizes(tensor)[d];
    if (!same) {
      return tsr_fail(tsr_tensor_device(tensor), TSR_INVALID_ARGUMENT,
                      "tensor_grad_set: the gradient's dtype, sizes or device differ from the "
                      "tensor's");
    }
    int previous = tsr_scope_suspend();
    grad = plain_alias(grad);
    tsr_scope_resume(previous);
    if (grad == NULL)
      return tsr_fail(tsr_tensor_device(tensor), TSR_OUT_OF_MEMORY, "tensor_grad_set: %s",
                      tsr_error_message());
  }
  tsr_tensor_ext *ext = tsr_tensor_ext_get(tensor);
  tsr_tensor *old = ext->tensor;
  ext->tensor = grad;
  if (grad != NULL) ext->release = tensor_ext_release;
  tsr_tensor_release(old);
  return TSR_OK;
}

tsr_tensor *tsr_detach(tsr_tensor *tensor) {
  if (tensor == NULL) {
    tsr_error_set(TSR_INVALID_ARGUMENT, "detach: tensor is NULL");
    return NULL;
  }
  return plain_alias(tensor);
}

// --- backward -----------------------------------------------------------------


static int array_reserve(tsr_ag_node ***array, size_t *cap, size_t need) {
  if (need <= *cap)
    return 1;
  trim_hook_add();  // the core frees these arrays with its own caches
  size_t cap2 = *cap ? *cap : 256;
  while (cap2 < need) cap2 *= 2;
  tsr_ag_node **grown = realloc(*array, cap2 * sizeof(**array));
  if (grown == NULL)
    return 0;
  *array = grown;
  *cap = cap2;
  return 1;
}

static int order_compare(const void *pa, const void *pb) {
  const tsr_ag_node *a = *(tsr_ag_node *const *)pa, *b = *(tsr_ag_node *const *)pb;
  if (a->depth != b->depth)
    return a->depth > b->depth ? -1 : 1;
  if (a->seq != b->seq)
    return a->seq > b->seq ? -1 : 1;
  return 0;
}

// Adds |g| (owned) into |*slot|. The first gradient is taken as is; later
// ones make a new sum (never in place: a rule may hand out a view of dy).
static tsr_status grad_accumulate(tsr_tensor **slot, tsr_tensor *g) {
  if (*slot == NULL) {
    *slot = g;
    return TSR_OK;
  }
  tsr_tensor *sum = tsr_add(*slot, g);
  tsr_tensor_release(g);
  if (sum == NULL)
    return tsr_error_status();
  tsr_tensor_release(*slot);
  *slot = sum;
  return TSR_OK;
}

// A leaf's gradient is its own contiguous tensor, so that a user or an
// optimizer may update it in place without touching another tensor.
static tsr_status leaf_accumulate(tsr_tensor *leaf, tsr_tensor *g) {
  tsr_tensor_ext *leaf_ext = tsr_tensor_ext_get(leaf);
  if (leaf_ext->tensor != NULL)
    return grad_accumulate(&leaf_ext->tensor, g);
  tsr_tensor *own = g;
  int shared = tsr_tensor_is_shared(g) || !tsr_tensor_is_contiguous(g) ||
               tsr_tensor_offset(g) != 0 || tsr_tensor_ext_get(g)->node != NULL;
  if (shared) {
    own = tsr_tensor_alloc("backward", tsr_tensor_device(g), tsr_tensor_dtype(g),
                           tsr_tensor_rank(g), tsr_tensor_sizes(g));
    if (own == NULL || tsr_copy_(own, g) != TSR_OK) {
      tsr_tensor_release(own);
      tsr_tensor_release(g);
      return tsr_error_status();
    }
    tsr_tensor_release(g);
  }
  leaf_ext->tensor = own;
  leaf_ext->release = tensor_ext_release;
  return TSR_OK;
}

static tsr_status check_versions(const tsr_ag_node *n) {
  for (int32_t i = 0; i < n->num_inputs; ++i) {
    const tsr_tensor *t = n->inputs[i];
    if (t == NULL || !((n->reads_inputs >> i) & 1u))
      continue;
    if (tsr_tensor_storage_version(t) != n->input_versions[i]) {
      return tsr_fail(tsr_tensor_device(t), TSR_INVALID_ARGUMENT,
                      "backward: input %d of %s was modified in place after it was recorded; "
                      "its gradient would be wrong",
                      i, n->name);
    }
  }
  for (int32_t i = 0; i < n->num_saved; ++i) {
    if (tsr_tensor_storage_version(n->saved[i]) != n->saved_versions[i]) {
      return tsr_fail(tsr_tensor_device(n->saved[i]), TSR_INVALID_ARGUMENT,
                      "backward: a tensor saved by %s was modified in place after it was "
                      "recorded; its gradient would be wrong",
                      n->name);
    }
  }
  return TSR_OK;
}

static tsr_status shape_check(const tsr_ag_node *n, int32_t i, const tsr_tensor *g) {
  const tsr_tensor *t = n->inputs[i];
  int same = tsr_tensor_rank(g) == tsr_tensor_rank(t) && tsr_tensor_dtype(g) == tsr_tensor_dtype(t);
  for (int32_t d = 0; same && d < tsr_tensor_rank(g); ++d)
    same = tsr_tensor_sizes(g)[d] == tsr_tensor_sizes(t)[d];
  if (same)
    return TSR_OK;
  return tsr_fail(tsr_tensor_device(t), TSR_INTERNAL,
                  "backward: the rule of %s gave input %d a gradient of rank %d dtype %d for a "
                  "tensor of rank %d dtype %d",
                  n->name, i, tsr_tensor_rank(g), tsr_tensor_dtype(g), tsr_tensor_rank(t),
                  tsr_tensor_dtype(t));
}

// Collects the nodes reachable from |root| into tls_order (each retained).
static tsr_status collect(tsr_ag_node *root, size_t *out_count) {
  int pass = atomic_fetch_add(&g_pass, 1);
  size_t count = 0, top = 0;
  if (!array_reserve(&tls_stack, &tls_stack_cap, 1))
    goto oom;
  tls_stack[top++] = root;
  root->visit = pass;
  while (top > 0) {
    tsr_ag_node *n = tls_stack[--top];
    if (!array_reserve(&tls_order, &tls_order_cap, count + 1))
      goto oom;
    atomic_fetch_add(&n->refs, 1);
    tls_order[count++] = n;
    if (n->released) {
      *out_count = count;
      return tsr_error_set(TSR_INVALID_ARGUMENT,
                           "backward: the graph through %s was already used by a backward pass "
                           "that freed its saved state; pass TSR_BACKWARD_RETAIN_GRAPH to the "
                           "first one",
                           n->name);
    }
    for (int32_t i = 0; i < n->num_inputs; ++i) {
      tsr_tensor *t = n->inputs[i];
      if (t == NULL || tsr_tensor_ext_get(t)->node == NULL || !tsr_ag_needs_grad(n, i))
        continue;
      tsr_ag_node *c = node_of(t);
      if (c->visit == pass)
        continue;
      c->visit = pass;
      if (!array_reserve(&tls_stack, &tls_stack_cap, top + 1)) {
        *out_count = count;
        goto oom;
      }
      tls_stack[top++] = c;
    }
  }
  *out_count = count;
  return TSR_OK;
oom:
  return tsr_error_set(TSR_OUT_OF_MEMORY, "backward: no host memory for the node list");
}

static tsr_status run_node(tsr_ag_node *n, uint32_t flags) {
  tsr_tensor *dy = n->grad;
  n->grad = NULL;
  tsr_status status = TSR_OK;
  if (dy != NULL) {
    status = check_versions(n);
    tsr_tensor *dx[TSR_MAX_OPERANDS] = {0};
    if (status == TSR_OK)
      status = n->backward(n, dy, dx);
    tsr_tensor_release(dy);
    for (int32_t i = 0; i < n->num_inputs; ++i) {
      tsr_tensor *g = dx[i];
      if (g == NULL)
        continue;
      tsr_tensor *t = n->inputs[i];
      if (status == TSR_OK && tsr_ag_needs_grad(n, i))
        status = shape_check(n, i, g);
      if (status != TSR_OK || !tsr_ag_needs_grad(n, i)) {
        tsr_tensor_release(g);
        continue;
      }
      if (tsr_tensor_ext_get(t)->node != NULL) {
        status = grad_accumulate(&node_of(t)->grad, g);
      } else {
        status = leaf_accumulate(t, g);
      }
    }
  }
  if (!(flags & TSR_BACKWARD_RETAIN_GRAPH)) {
    n->released = 1;
    node_drop_state(n);
  }
  return status;
}

tsr_status tsr_backward(tsr_tensor *root, tsr_tensor *grad, uint32_t flags) {
  if (root == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "backward: root is NULL");
  if (!requires_grad(root)) {
    return tsr_fail(tsr_tensor_device(root), TSR_INVALID_ARGUMENT,
                    "backward: the root does not require grad (no input of the ops that made "
                    "it requires grad, or grad mode was off)");
  }
  if (flags & ~(uint32_t)TSR_BACKWARD_RETAIN_GRAPH) {
    return tsr_fail(tsr_tensor_device(root), TSR_INVALID_ARGUMENT, "backward: unknown flags 0x%x",
                    flags);
  }
  if (grad == NULL && tsr_tensor_numel(root) != 1) {
    return tsr_fail(tsr_tensor_device(root), TSR_INVALID_ARGUMENT,
                    "backward: the root has %lld elements; pass its gradient explicitly",
                    (long long)tsr_tensor_numel(root));
  }
  if (grad != NULL) {
    int same = tsr_tensor_rank(grad) == tsr_tensor_rank(root) &&
               tsr_tensor_dtype(grad) == tsr_tensor_dtype(root) &&
               tsr_tensor_device(grad) == tsr_tensor_device(root);
    for (int32_t d = 0; same && d < tsr_tensor_rank(grad); ++d)
      same = tsr_tensor_sizes(grad)[d] == tsr_tensor_sizes(root)[d];
    if (!same) {
      return tsr_fail(tsr_tensor_device(root), TSR_INVALID_ARGUMENT,
                      "backward: grad must have the root's dtype, sizes and device");
    }
  }
  int mode = tsr_grad_mode_set(0);
  int scope = tsr_scope_suspend();
  tsr_status status = TSR_OK;
  tsr_tensor *seed = grad != NULL
                         ? plain_alias(grad)
                         : tsr_tensor_full(tsr_tensor_device(root), tsr_tensor_dtype(root),
                                           tsr_tensor_rank(root), tsr_tensor_sizes(root), 1.0);
  if (seed == NULL) {
    status = tsr_error_status();
    goto done;
  }
  if (tsr_tensor_ext_get(root)->node == NULL) {
    status = leaf_accumulate(root, seed);
    goto done;
  }
  size_t count = 0;
  status = collect(node_of(root), &count);
  if (status == TSR_OK) {
    qsort(tls_order, count, sizeof(*tls_order), order_compare);
    tsr_ag_node *top = node_of(root);
    status = grad_accumulate(&top->grad, seed);
    for (size_t i = 0; i < count && status == TSR_OK; ++i) status = run_node(tls_order[i], flags);
  } else {
    tsr_tensor_release(seed);
  }
  // Drop partial gradients after an error, then the pass's references.
  for (size_t i = 0; i < count; ++i) {
    tsr_ag_node *n = tls_order[i];
    tsr_tensor *g = n->grad;
    n->grad = NULL;
    tsr_tensor_release(g);
  }
  for (size_t i = 0; i < count; ++i) node_release(tls_order[i]);
done:
  tsr_scope_resume(scope);
  tsr_grad_mode_set(mode);
  if (status != TSR_OK)
    tsr_context_fail(tsr_device_context_get(tsr_tensor_device(root)), status);
  return status;
}
