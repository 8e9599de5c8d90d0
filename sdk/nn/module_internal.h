// The module object behind tessera/nn.h, shared by module.c and layers.c.
// Not installed.
//
// A module is a kind name, a small function table and a flat list of named
// parameters and buffers. A Sequential copies its children's lists with the
// child's index prefixed ("0.weight"), retaining the same tensors, so that
// parameter_get is an array lookup at any depth and the names are those of
// PyTorch's state_dict.
#ifndef TESSERA_SDK_NN_MODULE_INTERNAL_H_
#define TESSERA_SDK_NN_MODULE_INTERNAL_H_

#include <stdint.h>
#include <string.h>

#include "tessera/tessera.h"

typedef struct tsr_module_ops {
  // Runs the layer on |x| (checked non-NULL); returns a new reference or NULL
  // with the error set.
  tsr_tensor *(*forward)(tsr_module *module, tsr_tensor *x);
  // Frees kind-specific state other than parameters, buffers and children.
  // May be NULL.
  void (*destroy)(tsr_module *module);
} tsr_module_ops;

typedef struct tsr_module_entry {
  char *name;          // owned (malloc)
  tsr_tensor *tensor;  // owned reference
} tsr_module_entry;

struct tsr_module {
  const char *kind;  // static storage
  const tsr_module_ops *ops;
  tsr_device *device;  // NULL for layers without parameters
  int32_t training;
  int32_t num_params;
  int32_t num_buffers;
  int32_t num_children;
  tsr_module_entry *params;
  tsr_module_entry *buffers;
  tsr_module **children;  // owned
  // Layer configuration, as each kind documents in layers.c.
  int64_t ints[16];
  double reals[4];
  // Kind-specific tensors that are neither parameters nor buffers (owned).
  tsr_tensor *extra;
};

// A module of |kind| with no parameters, or NULL (out of memory, error set).
tsr_module *tsr_module_create(const char *kind, const tsr_module_ops *ops, tsr_device *device);
// Appends |tensor| (the caller's reference moves to the module) as a
// parameter or a buffer called |name|. On failure releases |tensor|.
tsr_status tsr_module_param_add(tsr_module *module, const char *name, tsr_tensor *tensor);
tsr_status tsr_module_buffer_add(tsr_module *module, const char *name, tsr_tensor *tensor);
// Appends |child| (ownership moves to the module) and its parameters and
// buffers under "<index>.".
tsr_status tsr_module_child_add(tsr_module *module, tsr_module *child);

#endif  // TESSERA_SDK_NN_MODULE_INTERNAL_H_
