// The elementwise engine's loop nest.
#include "elementwise.h"

#include <string.h>

#include "host.h"

// Elements per parallel chunk. A cheap loop over 32k elements takes far
// longer than a pool hand-off (docs/performance.md, "Measurements behind the
// code's decisions"); a libm-bound loop gets there with fewer.
#define TSR_CPU_EW_GRAIN_CHEAP 32768
#define TSR_CPU_EW_GRAIN_EXPENSIVE 4096

void tsr_cpu_ew_plan_init(tsr_cpu_ew_plan *ew, int32_t num_operands, const int64_t *elem_sizes,
                          int32_t rank, const int64_t *const *sizes,
                          const int64_t *const *strides, tsr_cpu_ew_kernel kernel,
                          tsr_cpu_ew_cost cost) {
  memset(ew, 0, sizeof(*ew));
  ew->num_operands = num_operands;
  ew->grain = cost == TSR_CPU_EW_EXPENSIVE ? TSR_CPU_EW_GRAIN_EXPENSIVE : TSR_CPU_EW_GRAIN_CHEAP;

  // Keep the dimensions that iterate, with byte strides; an input's size-1
  // dimension under a larger output dimension broadcasts.
  const int32_t out = num_operands - 1;
  int64_t numel = 1;
  int32_t nd = 0;
  int64_t dim_sizes[TSR_MAX_RANK];
  int64_t dim_strides[TSR_MAX_RANK][TSR_CPU_EW_MAX_OPERANDS];
  for (int32_t d = 0; d < rank; ++d) {
    int64_t size = sizes[out][d];
    numel *= size;
    if (size == 1) continue;
    dim_sizes[nd] = size;
    for (int32_t k = 0; k < num_operands; ++k) {
      dim_strides[nd][k] = sizes[k][d] == 1 ? 0 : strides[k][d] * elem_sizes[k];
    }
    ++nd;
  }
  ew->numel = numel;
  for (int32_t k = 0; k < num_operands; ++k) ew->inner_strides[k] = elem_sizes[k];
  ew->loop = kernel.contiguous;
  if (numel == 0 || nd == 0) return;

  // Walk in the output's memory order, so writes stream: a stable insertion
  // sort of the dimensions by the output's stride, largest (outermost) first.
  int32_t order[TSR_MAX_RANK];
  for (int32_t i = 0; i < nd; ++i) {
    int32_t j = i;
    while (j > 0 && dim_strides[order[j - 1]][out] < dim_strides[i][out]) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = i;
  }

  // Merge a dimension into the one outside it when every operand steps over
  // the inner one exactly into the next outer element.
  int32_t out_nd = 0;
  for (int32_t i = 0; i < nd; ++i) {
    int32_t d = order[i];
    if (out_nd > 0) {
      int32_t o = out_nd - 1;
      int mergeable = 1;
      for (int32_t k = 0; k < num_operands; ++k) {
        if (ew->strides[o][k] != dim_strides[d][k] * dim_sizes[d]) mergeable = 0;
      }
      if (mergeable) {
        ew->sizes[o] *= dim_sizes[d];
        for (int32_t k = 0; k < num_operands; ++k) ew->strides[o][k] = dim_strides[d][k];
        continue;
      }
    }
    ew->sizes[out_nd] = dim_sizes[d];
    for (int32_t k = 0; k < num_operands; ++k) ew->strides[out_nd][k] = dim_strides[d][k];
    ++out_nd;
  }
  ew->ndim = out_nd;

  int contiguous = 1;
  for (int32_t k = 0; k < num_operands; ++k) {
    ew->inner_strides[k] = ew->strides[out_nd - 1][k];
    if (ew->inner_strides[k] != elem_sizes[k]) contiguous = 0;
  }
  ew->loop = contiguous ? kernel.contiguous : kernel.strided;
}

// Runs elements [begin, end) in row-major order of the collapsed shape.
static void tsr_cpu_ew_range_run(const tsr_cpu_ew_plan *ew, char *const *base, int64_t begin,
                                 int64_t end) {
  const int32_t nd = ew->ndim;
  const int32_t nop = ew->num_operands;
  char *ptrs[TSR_CPU_EW_MAX_OPERANDS];
  if (nd <= 1) {
    for (int32_t k = 0; k < nop; ++k) ptrs[k] = base[k] + begin * ew->inner_strides[k];
    ew->loop(ptrs, ew->inner_strides, end - begin, &ew->params);
    return;
  }
  const int32_t inner = nd - 1;
  int64_t idx[TSR_MAX_RANK];
  int64_t rem = begin;
  for (int32_t d = inner; d >= 0; --d) {
    idx[d] = rem % ew->sizes[d];
    rem /= ew->sizes[d];
  }
  while (begin < end) {
    for (int32_t k = 0; k < nop; ++k) {
      char *p = base[k];
      for (int32_t d = 0; d < nd; ++d) p += idx[d] * ew->strides[d][k];
      ptrs[k] = p;
    }
    int64_t n = ew->sizes[inner] - idx[inner];
    if (n > end - begin) n = end - begin;
    ew->loop(ptrs, ew->inner_strides, n, &ew->params);
    begin += n;
    idx[inner] += n;
    for (int32_t d = inner; d > 0 && idx[d] == ew->sizes[d]; --d) {
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

typedef struct tsr_cpu_ew_job {
  const tsr_cpu_ew_plan *ew;
  char *const *ptrs;
} tsr_cpu_ew_job;

static void tsr_cpu_ew_chunk_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_ew_job *job = arg;
  tsr_cpu_ew_range_run(job->ew, job->ptrs, begin, end);
}

tsr_status tsr_cpu_ew_execute(const tsr_cpu_ew_plan *ew, char *const *ptrs) {
  if (ew->numel < 2 * ew->grain) {
    if (ew->ndim <= 1) {
      // The tiny-op path: one call of the loop, nothing else.
      if (ew->numel > 0) ew->loop(ptrs, ew->inner_strides, ew->numel, &ew->params);
    } else {
      tsr_cpu_ew_range_run(ew, ptrs, 0, ew->numel);
    }
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  tsr_cpu_ew_job job = {ew, ptrs};
  return host->parallel_for(host->ctx, ew->numel, ew->grain, tsr_cpu_ew_chunk_run, &job);
}
