// Implementation walking and whole-op timing for the builders;
// conv_tune.h says why.
#include "conv_tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conv_weight_cache.h"
#include "onednn_plugin.h"

static double tsr_onednn_tune_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Steps of an implementation walk: oneDNN lists a handful of CPU
// implementations per problem; this bounds a walk that repeats itself.
#define TSR_ONEDNN_IMPL_WALK_MAX 24
#define TSR_ONEDNN_IMPL_NAMES_MAX 12

tsr_status tsr_onednn_impl_select(tsr_dnnl_pd *pd, int32_t index, const char *what) {
  char seen[TSR_ONEDNN_IMPL_NAMES_MAX][96];
  int32_t distinct = 0;
  for (int step = 0; step < TSR_ONEDNN_IMPL_WALK_MAX; ++step) {
    const char *name = tsr_dnnl_pd_impl_name(pd);
    if (strncmp(name, "ref", 3) == 0)
      break;
    int repeat = 0;
    for (int32_t j = 0; j < distinct && !repeat; ++j) repeat = strcmp(seen[j], name) == 0;
    if (!repeat) {
      if (distinct == index)
        return TSR_OK;
      if (distinct == TSR_ONEDNN_IMPL_NAMES_MAX)
        break;
      snprintf(seen[distinct++], sizeof(seen[0]), "%s", name);
    }
    if (tsr_dnnl_pd_next_impl(pd) != TSR_OK)
      break;
  }
  if (distinct == 0) {
    return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: oneDNN has only its reference implementation",
                                what);
  }
  return TSR_NOT_FOUND;
}

// Stands for every timed input's buffer in weight-cache keys.
static char tsr_onednn_tune_buffer;

// Bytes from element 0 to one past the last element of |desc|.
static uint64_t tsr_onednn_tune_extent(const tsr_tensor_desc *desc) {
  uint64_t last = 0;
  for (int32_t d = 0; d < desc->rank; ++d) {
    if (desc->sizes[d] > 0)
      last += (uint64_t)(desc->sizes[d] - 1) * (uint64_t)desc->strides[d];
  }
  return (last + 1) * tsr_dtype_size(desc->dtype);
}

double tsr_onednn_op_time(const tsr_onednn_op *op, const tsr_op_signature *signature, int runs) {
  const int32_t count = signature->num_inputs + signature->num_outputs;
  if (count > TSR_MAX_OPERANDS)
    return -1.0;
  char *ptrs[TSR_MAX_OPERANDS] = {0};
  tsr_tensor_desc inputs[TSR_MAX_OPERANDS];
  char *ws = NULL;
  dnnl_stream_t stream = NULL;
  int ok = tsr_onednn_thread_stream_get(&stream) == TSR_OK;
  for (int32_t i = 0; i < count && ok; ++i) {
    const tsr_tensor_desc *d = i < signature->num_inputs
                                   ? &signature->inputs[i]
                                   : &signature->outputs[i - signature->num_inputs];
    const uint64_t bytes = tsr_onednn_round64(tsr_onednn_tune_extent(d));
    ptrs[i] = aligned_alloc(64, bytes);
    ok = ptrs[i] != NULL;
    if (ok)
      memset(ptrs[i], 0, bytes);
    if (i < signature->num_inputs) {
      inputs[i] = *d;
      inputs[i].buffer = (tsr_plugin_buffer *)&tsr_onednn_tune_buffer;
    }
  }
  if (ok && op->workspace_bytes > 0) {
    ws = aligned_alloc(64, tsr_onednn_round64(op->workspace_bytes));
    ok = ws != NULL;
  }
  const tsr_exec_args args = {.struct_size = sizeof(args),
                              .num_inputs = signature->num_inputs,
                              .num_outputs = signature->num_outputs,
                              .inputs = inputs,
                              .outputs = signature->outputs};
  const tsr_onednn_exec_ctx ctx = {.ptrs = ptrs, .args = &args, .workspace = ws, .stream = stream};
  double best = -1.0;
  for (int run = 0; run <= runs && ok; ++run) {
    const double start = tsr_onednn_tune_now();
    ok = op->execute(op, &ctx) == TSR_OK;
    const double elapsed = tsr_onednn_tune_now() - start;
    if (ok && run > 0 && (best < 0 || elapsed < best))
      best = elapsed;
  }
  tsr_onednn_weight_cache_buffer_forget((const tsr_plugin_buffer *)&tsr_onednn_tune_buffer);
  free(ws);
  for (int32_t i = 0; i < count; ++i) free(ptrs[i]);
  return ok ? best : -1.0;
}
