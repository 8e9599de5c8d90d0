// PAD: CONSTANT, REFLECT and REPLICATE padding.
//
// Bandwidth-bound. Work goes by rows of out's last dimension: a row whose
// outer index lies in the padding is the value (CONSTANT) or a copy of the
// source row its index maps to (REFLECT, REPLICATE); any other row is its
// source row with the edge elements around it. Rows are independent, so the
// thread count never changes a bit.
#include <string.h>

#include "data_ops.h"
#include "host.h"
#include "plan.h"
#include "signature.h"

// Elements per parallel chunk of rows.
#define TSR_CPU_PAD_CHUNK_ELEMS 65536

// The source index on an axis of size |size| for index |i| outside [0, size)
// (REFLECT: pad < size; REPLICATE: size >= 1; the plan checked).
static inline int64_t tsr_cpu_pad_source(int32_t mode, int64_t i, int64_t size) {
  if (mode == TSR_PAD_REFLECT) return i < 0 ? -i : 2 * (size - 1) - i;
  return i < 0 ? 0 : size - 1;
}

typedef struct tsr_cpu_pad_job {
  const tsr_plugin_plan *plan;
  const char *x;
  char *out;
} tsr_cpu_pad_job;

// Writes out's rows [begin, end).
static void tsr_cpu_pad_rows_run(void *arg, int64_t begin, int64_t end, int32_t thread_index) {
  (void)thread_index;
  const tsr_cpu_pad_job *job = arg;
  const tsr_plugin_plan *plan = job->plan;
  const tsr_cpu_pad_plan *p = &plan->u.pad;
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  const int64_t e = out->elem_size;
  const int32_t last = out->rank - 1;
  const int64_t len = out->sizes[last];
  const int64_t before = p->pad_before[last];
  const int64_t size = x->sizes[last];
  const int64_t x_step = x->strides[last] * e, out_step = out->strides[last] * e;
  for (int64_t r = begin; r < end; ++r) {
    // Map the row's outer index to x's, one axis at a time.
    int64_t rem = r, x_off = 0, out_off = 0;
    int inside = 1;
    for (int32_t d = last - 1; d >= 0; --d) {
      int64_t o = rem % out->sizes[d];
      rem /= out->sizes[d];
      out_off += o * out->strides[d];
      int64_t i = o - p->pad_before[d];
      if (i < 0 || i >= x->sizes[d]) {
        if (p->mode == TSR_PAD_CONSTANT) {
          inside = 0;
          continue;
        }
        i = tsr_cpu_pad_source(p->mode, i, x->sizes[d]);
      }
      x_off += i * x->strides[d];
    }
    char *dst = job->out + out_off * e;
    if (!inside) {
      tsr_cpu_elems_fill(dst, out_step, len, p->value_bits, (uint32_t)e);
      continue;
    }
    // An empty x (CONSTANT only) is never addressed.
    const char *src = size > 0 ? job->x + x_off * e : NULL;
    if (size > 0) {
      tsr_cpu_elems_copy(dst + before * out_step, out_step, src, x_step, size, (uint32_t)e);
    }
    if (p->mode == TSR_PAD_CONSTANT) {
      tsr_cpu_elems_fill(dst, out_step, before, p->value_bits, (uint32_t)e);
      tsr_cpu_elems_fill(dst + (before + size) * out_step, out_step, len - before - size,
                         p->value_bits, (uint32_t)e);
      continue;
    }
    for (int64_t o = 0; o < len; ++o) {
      int64_t i = o - before;
      if (i >= 0 && i < size) {
        o = before + size - 1;  // the middle is copied already
        continue;
      }
      memcpy(dst + o * out_step, src + tsr_cpu_pad_source(p->mode, i, size) * x_step, (size_t)e);
    }
  }
}

static tsr_status tsr_cpu_pad_execute(const tsr_plugin_plan *plan, char *const *ptrs,
                                      char *workspace) {
  (void)workspace;
  const tsr_cpu_pad_plan *p = &plan->u.pad;
  const tsr_cpu_operand *out = &plan->operands[1];
  if (out->numel == 0) return TSR_OK;
  if (out->rank == 0) {
    memcpy(ptrs[1], ptrs[0], out->elem_size);
    return TSR_OK;
  }
  tsr_cpu_pad_job job = {plan, ptrs[0], ptrs[1]};
  if (p->grain == 0) {
    tsr_cpu_pad_rows_run(&job, 0, p->rows, 0);
    return TSR_OK;
  }
  const tsr_host_api *host = tsr_cpu_host_get();
  return host->parallel_for(host->ctx, p->rows, p->grain, tsr_cpu_pad_rows_run, &job);
}

tsr_status tsr_cpu_pad_plan_init(const tsr_op_signature *signature, tsr_plugin_plan *plan) {
  static const char *const names[] = {"x", "out"};
  tsr_status status = tsr_cpu_operands_init(signature, plan, 1, 1, 1, names);
  if (status != TSR_OK) return status;
  // Attributes: NULL, or any struct_size, a missing field taking its default
  // (CONSTANT, no padding, value 0: a copy).
  tsr_pad_attrs attrs;
  memset(&attrs, 0, sizeof(attrs));
  const tsr_pad_attrs *given = signature->attrs;
  if (given != NULL) {
    if (given->struct_size < sizeof(size_t)) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "pad: attrs struct_size %zu is too small",
                               given->struct_size);
    }
    memcpy(&attrs, given, given->struct_size < sizeof(attrs) ? given->struct_size : sizeof(attrs));
  }
  const tsr_cpu_operand *x = &plan->operands[0];
  const tsr_cpu_operand *out = &plan->operands[1];
  if (attrs.mode < 0 || attrs.mode >= TSR_PAD_MODE_COUNT) {
    // A value past the end may come from a newer catalogue: unsupported, not
    // invalid (docs/abi.md 2.4).
    return tsr_cpu_error_set(attrs.mode < 0 ? TSR_INVALID_ARGUMENT : TSR_UNSUPPORTED, "pad: attrs mode %d is not a pad mode",
                             (int)attrs.mode);
  }
  if (attrs.reserved != 0) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "pad: attrs reserved is %u, not 0",
                             (unsigned)attrs.reserved);
  }
  status = tsr_cpu_same_dtype_check(signature, x, out);
  if (status == TSR_OK && attrs.mode != TSR_PAD_CONSTANT) {
    status = tsr_cpu_dtype_check(signature, x, TSR_CPU_DTYPES_NUMBER,
                                 "reflect and replicate take float and int");
  }
  if (status != TSR_OK) return status;
  if (x->rank != out->rank) {
    return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "pad: out rank %d differs from x rank %d",
                             (int)out->rank, (int)x->rank);
  }
  for (int32_t d = 0; d < x->rank; ++d) {
    const int64_t before = attrs.pad_before[d], after = attrs.pad_after[d], size = x->sizes[d];
    if (before < 0 || after < 0) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT, "pad: pad_%s[%d] is %lld; pads are >= 0",
                               before < 0 ? "before" : "after", (int)d,
                               (long long)(before < 0 ? before : after));
    }
    // Pads are at most the largest size: no overflow in the sum below.
    if (before > out->sizes[d] || after > out->sizes[d] ||
        out->sizes[d] != before + size + after) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "pad: out sizes[%d] is %lld, expected pad_before %lld + x size %lld "
                               "+ pad_after %lld",
                               (int)d, (long long)out->sizes[d], (long long)before,
                               (long long)size, (long long)after);
    }
    if (attrs.mode == TSR_PAD_REFLECT && (before >= size || after >= size)) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "pad: reflect needs pads below the size on axis %d: pad_before "
                               "%lld, pad_after %lld, size %lld",
                               (int)d, (long long)before, (long long)after, (long long)size);
    }
    if (attrs.mode == TSR_PAD_REPLICATE && size == 0 && (before != 0 || after != 0)) {
      return tsr_cpu_error_set(TSR_INVALID_ARGUMENT,
                               "pad: replicate of the empty axis %d has nothing to repeat "
                               "(pad_before %lld, pad_after %lld)",
                               (int)d, (long long)before, (long long)after);
    }
  }
  status = tsr_cpu_output_overlap_check(signature, out);
  if (status == TSR_OK) status = tsr_cpu_alias_check(signature, plan, 0);
  if (status != TSR_OK) return status;

  tsr_cpu_pad_plan *p = &plan->u.pad;
  memset(p, 0, sizeof(*p));
  p->mode = attrs.mode;
  p->value_bits = attrs.mode == TSR_PAD_CONSTANT ? tsr_cpu_value_bits_get(attrs.value, out->dtype) : 0;
  for (int32_t d = 0; d < out->rank; ++d) p->pad_before[d] = attrs.pad_before[d];
  const int64_t len = out->rank > 0 ? out->sizes[out->rank - 1] : 1;
  p->rows = len > 0 ? out->numel / len : 0;
  if (out->numel >= 2 * TSR_CPU_PAD_CHUNK_ELEMS && p->rows >= 2) {
    p->grain = len >= TSR_CPU_PAD_CHUNK_ELEMS ? 1 : TSR_CPU_PAD_CHUNK_ELEMS / len;
  }
  plan->execute = tsr_cpu_pad_execute;
  plan->engine = "ref:pad";
  return TSR_OK;
}
