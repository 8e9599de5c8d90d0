// The plugin's plans: the own kernel always, a oneDNN op when one fits.
//
// Every plan starts as a plan of the own kernels (ref's portable code,
// compiled into this plugin and run on OpenMP): that validates the signature
// against the catalogue with ref's exact checks and messages, and gives the
// argument checks plan_execute runs. Then the op's family builder may supply
// a oneDNN version; if it declines (TSR_UNSUPPORTED: no primitive, different
// semantics, or too small to pay a primitive's fixed cost) the own kernel
// runs. Either way the work stays in this plugin: nothing goes to the ref
// device, and the plan's engine name says which path was taken.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_op.h"
#include "onednn_plugin.h"
#include "onednn_table.h"
#include "route.h"
#include "tessera/plugin_kit.h"

typedef struct tsr_onednn_plan {
  tsr_plugin_plan *own;  // ref's plan: checks, and the kernel when |op| is NULL
  tsr_onednn_op *op;     // the oneDNN version, or NULL
  uint64_t workspace_bytes;
  uint32_t info_flags;
  uint64_t saved_state_bytes;
  char engine[176];
} tsr_onednn_plan;

static tsr_onednn_build_fn tsr_onednn_builder_for(int32_t op) {
  switch (op) {
    case TSR_OP_MATMUL:
      return tsr_onednn_matmul_build;
    case TSR_OP_CONV2D:
    case TSR_OP_CONV2D_BACKWARD_DATA:
    case TSR_OP_CONV2D_BACKWARD_FILTER:
      return tsr_onednn_conv_build;
    case TSR_OP_POOL2D:
    case TSR_OP_POOL2D_BACKWARD:
      return tsr_onednn_pool_build;
    case TSR_OP_UNARY:
    case TSR_OP_UNARY_BACKWARD:
    case TSR_OP_CLAMP:
      return tsr_onednn_eltwise_build;
    case TSR_OP_SOFTMAX:
    case TSR_OP_SOFTMAX_BACKWARD:
      return tsr_onednn_softmax_build;
    case TSR_OP_LAYER_NORM:
    case TSR_OP_LAYER_NORM_BACKWARD:
    case TSR_OP_BATCH_NORM:
    case TSR_OP_BATCH_NORM_BACKWARD:
      return tsr_onednn_norm_build;
    case TSR_OP_BINARY:
      return tsr_onednn_binary_build;
    case TSR_OP_REDUCE:
      return tsr_onednn_reduce_build;
    case TSR_OP_COPY:
    case TSR_OP_CAST:
    case TSR_OP_CONCAT:
      return tsr_onednn_data_build;
    default:
      // FILL, COMPARE, WHERE, ARG_REDUCE, PAD, GATHER, SCATTER_ADD, RNG_FILL,
      // CROSS_ENTROPY(_BACKWARD), SGD_UPDATE, ADAM_UPDATE: oneDNN has no
      // primitive for them; the own kernels are the implementation.
      return NULL;
  }
}

// Settings read once: environment variables are not for the hot path.
static int64_t g_min_elements = 1 << 16;
static int32_t g_autotune;

// A malformed setting is a warning naming it and the default kept, never a
// silent half-parse.
static void tsr_onednn_setting_warn(const char *name, const char *value, const char *expected,
                                    const char *kept) {
  const tsr_host_api *host = tsr_onednn_host_get();
  if (host == NULL)
    return;
  char message[256];
  snprintf(message, sizeof(message), "%s=%s is not %s; using %s", name, value, expected,
           kept);
  host->log(host->ctx, TSR_LOG_WARNING, message);
}

void tsr_onednn_plan_settings_init(void) {
  const char *min = getenv("TSR_ONEDNN_MIN_ELEMENTS");
  if (min != NULL && min[0] != '\0') {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(min, &end, 10);
    if (end != min && *end == '\0' && errno == 0 && v >= 0) {
      g_min_elements = v;
    } else {
      tsr_onednn_setting_warn("TSR_ONEDNN_MIN_ELEMENTS", min, "a count of elements (0 or more)",
                              "65536");
    }
  }
  const char *tune = getenv("TSR_ONEDNN_AUTOTUNE");
  g_autotune = tune != NULL && strcmp(tune, "1") == 0;
  if (tune != NULL && tune[0] != '\0' && strcmp(tune, "1") != 0 && strcmp(tune, "0") != 0)
    tsr_onednn_setting_warn("TSR_ONEDNN_AUTOTUNE", tune, "1 or 0", "0");
  tsr_onednn_select_settings_init(tsr_onednn_host_get());
}

tsr_status tsr_onednn_op_supports(const tsr_op_signature *signature) {
  // The own kernels implement everything ref does; oneDNN only replaces
  // some of them, so the answer is the own kernels' answer.
  return tsr_onednn_ref_api()->op_supports(signature);
}

static void tsr_onednn_plan_free(tsr_onednn_plan *plan) {
  if (plan == NULL)
    return;
  if (plan->op != NULL)
    plan->op->destroy(plan->op);
  if (plan->own != NULL)
    tsr_onednn_ref_api()->plan_destroy(plan->own);
  free(plan);
}

tsr_status tsr_onednn_plan_create(const tsr_op_signature *signature, tsr_plugin_plan **out_plan) {
  if (out_plan == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "plan_create: out_plan is NULL");
  }
  *out_plan = NULL;
  const tsr_plugin_api *ref = tsr_onednn_ref_api();
  tsr_plugin_plan *own = NULL;
  tsr_status status = ref->plan_create(signature, &own);
  if (status != TSR_OK)
    return status;
  tsr_plan_info own_info = {.struct_size = sizeof(tsr_plan_info)};
  status = ref->plan_info_get(own, &own_info);
  if (status != TSR_OK) {
    ref->plan_destroy(own);
    return status;
  }
  tsr_onednn_plan *plan = calloc(1, sizeof(*plan));
  if (plan == NULL) {
    ref->plan_destroy(own);
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "plan_create: %zu bytes for a plan",
                                sizeof(*plan));
  }
  plan->own = own;
  plan->workspace_bytes = own_info.workspace_bytes;
  plan->saved_state_bytes = own_info.saved_state_bytes;
  plan->info_flags = own_info.flags;

  tsr_onednn_source_t source = TSR_ONEDNN_SOURCE_NONE;
  tsr_onednn_build_fn build = tsr_onednn_builder_for(signature->op);
  if (build != NULL && own_info.saved_state_bytes == 0) {
    const uint32_t flags =
        TSR_ABI_COVERS(signature, tsr_op_signature, flags) ? signature->flags : 0;
    tsr_onednn_build_ctx ctx = {
        .engine = tsr_onednn_engine_get(),
        .select = (g_autotune || (flags & TSR_PLAN_AUTOTUNE)) ? TSR_ONEDNN_SELECT_FASTEST
                                                              : TSR_ONEDNN_SELECT_FIRST,
        .plan_flags = flags,
        .math_mode = signature->math_mode,
        .min_elements = g_min_elements,
    };
    tsr_onednn_op *op = NULL;
    // The fixed routes, or what was measured on this machine (route.h).
    status = tsr_onednn_route_choose(signature, build, &ctx, own, own_info.workspace_bytes, &op,
                                     &source);
    if (status == TSR_OK && op != NULL) {
      if ((flags & TSR_PLAN_REQUIRE_DETERMINISM) &&
          !(op->info_flags & TSR_PLAN_INFO_DETERMINISTIC)) {
        // The own kernel splits work by a fixed rule (docs/abi.md 6.1);
        // keep it rather than refuse the plan.
        op->destroy(op);
        source = TSR_ONEDNN_SOURCE_NONE;
      } else {
        plan->op = op;
        plan->workspace_bytes = op->workspace_bytes;
        plan->info_flags = op->info_flags;
        snprintf(plan->engine, sizeof(plan->engine), "%s", op->engine);
      }
    } else if (status != TSR_OK && status != TSR_UNSUPPORTED) {
      tsr_onednn_plan_free(plan);
      return status;
    }
  }
  if (plan->op == NULL) {
    // "ref:blocked-gemm" -> "own:blocked-gemm": ref's code, this plugin's kernel.
    const char *name = own_info.engine ? own_info.engine : "kernel";
    if (strncmp(name, "ref:", 4) == 0)
      name += 4;
    snprintf(plan->engine, sizeof(plan->engine), "own:%s", name);
  }
  // Where the choice came from, for TSR_TRACE and tsr-info: " [measured]" etc.
  const size_t used = strlen(plan->engine);
  snprintf(plan->engine + used, sizeof(plan->engine) - used, "%s",
           tsr_onednn_source_suffix(source));
  *out_plan = (tsr_plugin_plan *)plan;
  return TSR_OK;
}

tsr_status tsr_onednn_plan_info_get(const tsr_plugin_plan *handle, tsr_plan_info *out_info) {
  const tsr_onednn_plan *plan = (const tsr_onednn_plan *)handle;
  if (plan == NULL)
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "plan_info_get: plan is NULL");
  const tsr_plan_info info = {.engine = plan->engine,
                              .workspace_bytes = plan->workspace_bytes,
                              .saved_state_bytes = plan->saved_state_bytes,
                              .flags = plan->info_flags};
  return tsr_kit_plan_info_answer(tsr_onednn_host_get(), &info, out_info);
}

tsr_status tsr_onednn_plan_execute(const tsr_plugin_plan *handle, const tsr_exec_args *args,
                                   tsr_plugin_stream *stream) {
  const tsr_onednn_plan *plan = (const tsr_onednn_plan *)handle;
  if (plan == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "plan_execute: plan is NULL");
  }
  if (plan->op == NULL)
    return tsr_onednn_ref_api()->plan_execute(plan->own, args, stream);
  char *ptrs[TSR_MAX_OPERANDS];
  char *workspace = NULL;
  tsr_status status =
      tsr_onednn_resolve_get()(plan->own, args, stream, plan->workspace_bytes, ptrs, &workspace);
  if (status != TSR_OK)
    return status;
  tsr_onednn_exec_ctx ctx = {.ptrs = ptrs, .args = args, .workspace = workspace};
  status = tsr_onednn_thread_stream_get(&ctx.stream);
  if (status != TSR_OK)
    return status;
  return plan->op->execute(plan->op, &ctx);
}

tsr_status tsr_onednn_plan_destroy(tsr_plugin_plan *handle) {
  if (handle == NULL) {
    return tsr_onednn_error_set(TSR_INVALID_ARGUMENT, "plan_destroy: plan is NULL");
  }
  tsr_onednn_plan_free((tsr_onednn_plan *)handle);
  return TSR_OK;
}
