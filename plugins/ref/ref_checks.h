// ref's argument checks, without the work: the code ref's copies and
// plan_execute run first, reachable on its own so a fixture that queues ref's
// work (conformance/fixtures/async) can refuse bad arguments when they are
// enqueued (docs/abi.md 5.3) with ref's status and message.
//
// Each returns TSR_OK or the error (with its message set through the host's
// error_set) that the matching ref entry would return for the same arguments.
// None allocates, locks or touches buffer contents. Thread-safe.
#ifndef TESSERA_PLUGINS_REF_REF_CHECKS_H_
#define TESSERA_PLUGINS_REF_REF_CHECKS_H_

#include <stdint.h>

#include "tessera/abi.h"

// [|offset|, |offset| + |bytes|) lies inside the live ref buffer |buffer|,
// without letting the sum overflow. |what| names the entry and |name| the
// argument in the message ("copy_host_to_device", "dst").
__attribute__((visibility("hidden"))) tsr_status tsr_ref_buffer_range_check(
    const char *what, const char *name, tsr_plugin_buffer *buffer, uint64_t offset,
    uint64_t bytes);

// What copy_device_to_device checks after its stream: both ranges, then that
// they do not overlap inside one buffer.
__attribute__((visibility("hidden"))) tsr_status tsr_ref_copy_device_to_device_check(
    tsr_plugin_buffer *src, uint64_t src_offset, tsr_plugin_buffer *dst, uint64_t dst_offset,
    uint64_t bytes);

// What plan_execute checks, for a NULL stream: |args| against |plan|
// (counts, every operand's dtype, rank, sizes, strides, alignment, device,
// buffer and extent, alias groups, the workspace). |plan| is a ref plan.
__attribute__((visibility("hidden"))) tsr_status tsr_ref_exec_args_check(
    const tsr_plugin_plan *plan, const tsr_exec_args *args);

// plan_execute's checks and resolution with another plan's workspace size:
// for a plugin that compiles ref in and runs some plans on other engines
// (plugins/onednn). Checks |args| and |stream| against the ref plan |plan|,
// except that the workspace must hold |workspace_bytes| (64-byte slack
// included); writes each operand's element-0 address (inputs, then outputs)
// to |out_ptrs| and the 64-aligned workspace (NULL when 0) to |out_workspace|.
__attribute__((visibility("hidden"))) tsr_status tsr_ref_exec_args_resolve_for(
    const tsr_plugin_plan *plan, const tsr_exec_args *args, tsr_plugin_stream *stream,
    uint64_t workspace_bytes, char **out_ptrs, char **out_workspace);

#endif  // TESSERA_PLUGINS_REF_REF_CHECKS_H_
