// The plugin table's pieces that live outside plugin.c.
#ifndef TESSERA_PLUGINS_ONEDNN_ONEDNN_TABLE_H_
#define TESSERA_PLUGINS_ONEDNN_ONEDNN_TABLE_H_

#include "tessera/abi.h"

// The table of the own kernels (the CPU-kernel library, plugins/cpu, compiled
// into this plugin, running under tsr_onednn_kernel_host_get()). Valid after
// the entry. Thread-safe.
const tsr_plugin_api *tsr_onednn_ref_api(void);

// The library's plan_execute checks with another workspace size
// (tsr_cpu_exec_args_resolve_for, tsr_cpu/cpu_kernels.h), from the same
// build of the own kernels as tsr_onednn_ref_api().
typedef tsr_status (*tsr_onednn_resolve_fn)(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                            tsr_plugin_stream *stream, uint64_t workspace_bytes,
                                            char **out_ptrs, char **out_workspace);
tsr_onednn_resolve_fn tsr_onednn_resolve_get(void);

// Reads TSR_ONEDNN_MIN_ELEMENTS and TSR_ONEDNN_AUTOTUNE; called by init.
void tsr_onednn_plan_settings_init(void);

// The kernel entries of the table (abi.h documents them). Thread-safe as
// abi.h states.
tsr_status tsr_onednn_op_supports(const tsr_op_signature *signature);
tsr_status tsr_onednn_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan);
tsr_status tsr_onednn_plan_info_get(const tsr_plugin_plan *plan, tsr_plan_info *out_info);
tsr_status tsr_onednn_plan_execute(const tsr_plugin_plan *plan, const tsr_exec_args *args,
                                   tsr_plugin_stream *stream);
tsr_status tsr_onednn_plan_destroy(tsr_plugin_plan *plan);

#endif  // TESSERA_PLUGINS_ONEDNN_ONEDNN_TABLE_H_
