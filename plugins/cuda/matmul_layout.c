// MATMUL's mapping onto cuBLASLt (matmul_layout.h).
#include "matmul_layout.h"

#include <string.h>

// Collapses the batch dimensions [0, rank - 2) of |d| into one count and
// stride. 0 when they do not form one arithmetic progression.
static int tsr_cuda_batch_collapse(const tsr_tensor_desc *d, int64_t *out_count,
                                   int64_t *out_stride) {
  int64_t count = 1, stride = 0, expected = -1;
  for (int32_t k = d->rank - 3; k >= 0; --k) {
    if (d->sizes[k] == 1)
      continue;
    if (expected >= 0 && d->strides[k] != expected)
      return 0;
    if (expected < 0)
      stride = d->strides[k];
    count *= d->sizes[k];
    expected = d->strides[k] * d->sizes[k];
  }
  *out_count = count;
  *out_stride = stride;
  return 1;
}

// The column-major view of row-major |d| [R, C]: as is when its last stride
// is 1, transposed when its second-to-last is.
static int tsr_cuda_matrix_of(const tsr_tensor_desc *d, tsr_cuda_matrix_view *v) {
  int32_t r = d->rank;
  int64_t rows_rm = d->sizes[r - 2], cols_rm = d->sizes[r - 1];
  if (d->strides[r - 1] == 1 || cols_rm == 1) {
    v->rows = (uint64_t)cols_rm;
    v->cols = (uint64_t)rows_rm;
    v->ld = rows_rm == 1 ? cols_rm : d->strides[r - 2];
    v->transpose = 0;
  } else if (d->strides[r - 2] == 1 || rows_rm == 1) {
    v->rows = (uint64_t)rows_rm;
    v->cols = (uint64_t)cols_rm;
    v->ld = cols_rm == 1 ? rows_rm : d->strides[r - 1];
    v->transpose = 1;
  } else {
    return 0;
  }
  if (v->ld < (int64_t)v->rows)
    return 0;  // rows would overlap: a broadcast matrix
  if (v->ld < 1)
    v->ld = 1;
  return 1;
}

tsr_status tsr_cuda_matmul_layout_get(const tsr_tensor_desc *a, const tsr_tensor_desc *b,
                                      const tsr_tensor_desc *bias, const tsr_tensor_desc *out,
                                      tsr_activation_t activation,
                                      tsr_cuda_matmul_layout *out_layout, const char **out_reason) {
  tsr_cuda_matmul_layout *l = out_layout;
  memset(l, 0, sizeof(*l));
  *out_reason = NULL;
  int32_t r = out->rank;
  if (r < 2) {
    *out_reason = "rank below 2 runs on the fallback";
    return TSR_UNSUPPORTED;
  }
  l->m = out->sizes[r - 2];
  l->n = out->sizes[r - 1];
  l->k = a->sizes[r - 1];
  int64_t a_count = 1, b_count = 1;
  if (!tsr_cuda_batch_collapse(out, &l->batch, &l->d.batch_stride) ||
      !tsr_cuda_batch_collapse(a, &a_count, &l->b.batch_stride) ||
      !tsr_cuda_batch_collapse(b, &b_count, &l->a.batch_stride)) {
    *out_reason = "batch dimensions that do not collapse to one stride";
    return TSR_UNSUPPORTED;
  }
  if ((a_count != l->batch && a_count != 1) || (b_count != l->batch && b_count != 1)) {
    *out_reason = "partly broadcast batch dimensions";
    return TSR_UNSUPPORTED;
  }
  if (a_count == 1)
    l->b.batch_stride = 0;
  if (b_count == 1)
    l->a.batch_stride = 0;
  l->empty = l->m == 0 || l->n == 0 || l->batch == 0;
  if (l->empty)
    return TSR_OK;
  if (l->k == 0) {
    *out_reason = "K = 0 runs on the fallback";
    return TSR_UNSUPPORTED;
  }
  if (out->strides[r - 1] != 1 && l->n > 1) {
    *out_reason = "out's last stride is not 1";
    return TSR_UNSUPPORTED;
  }
  if (!tsr_cuda_matrix_of(b, &l->a) || !tsr_cuda_matrix_of(a, &l->b)) {
    *out_reason = "a or b has no unit stride in its last two dimensions";
    return TSR_UNSUPPORTED;
  }
  l->d.rows = (uint64_t)l->n;
  l->d.cols = (uint64_t)l->m;
  l->d.ld = l->m == 1 ? l->n : out->strides[r - 2];
  if (l->d.ld < l->n) {
    *out_reason = "out's rows overlap";
    return TSR_UNSUPPORTED;
  }
  if (bias != NULL) {
    for (int32_t d = 0; d < r - 1; ++d) {
      if (bias->sizes[d] != 1) {
        *out_reason = "a bias that is not a row vector [1, ..., N]";
        return TSR_UNSUPPORTED;
      }
    }
    if (bias->sizes[r - 1] != l->n || (bias->strides[r - 1] != 1 && l->n > 1)) {
      *out_reason = "a bias whose last dimension is not contiguous";
      return TSR_UNSUPPORTED;
    }
    l->fuse_bias = 1;
  }
  if (activation == TSR_ACTIVATION_NONE || activation == TSR_ACTIVATION_RELU ||
      activation == TSR_ACTIVATION_GELU_TANH) {
    l->fused_activation = activation;
    l->post_activation = TSR_ACTIVATION_NONE;
  } else {
    int contiguous = l->d.ld == l->n && (l->batch == 1 || l->d.batch_stride == l->m * l->n);
    if (!contiguous) {
      *out_reason = "an activation cuBLASLt cannot fuse on a non-contiguous out";
      return TSR_UNSUPPORTED;
    }
    l->fused_activation = TSR_ACTIVATION_NONE;
    l->post_activation = activation;
  }
  return TSR_OK;
}

// The largest power of two (up to TSR_MAX_ALIGNMENT) dividing |bytes|; no
// limit for 0.
static uint32_t tsr_cuda_alignment_of_bytes(uint64_t bytes) {
  if (bytes == 0)
    return TSR_MAX_ALIGNMENT;
  uint64_t low = bytes & (~bytes + 1);
  return low >= TSR_MAX_ALIGNMENT ? TSR_MAX_ALIGNMENT : (uint32_t)low;
}

// |d|'s signature alignment, lowered by |batch_stride| elements when |batch|
// matrices start at multiples of it.
static uint32_t tsr_cuda_operand_alignment(const tsr_tensor_desc *d, int64_t batch,
                                           int64_t batch_stride) {
  uint32_t alignment = d->alignment == 0 ? 1 : d->alignment;
  if (alignment > TSR_MAX_ALIGNMENT)
    alignment = TSR_MAX_ALIGNMENT;
  if (batch > 1 && batch_stride != 0) {
    uint64_t step = (uint64_t)(batch_stride < 0 ? -batch_stride : batch_stride) *
                    (uint64_t)tsr_dtype_size(d->dtype);
    uint32_t of_step = tsr_cuda_alignment_of_bytes(step);
    if (of_step < alignment)
      alignment = of_step;
  }
  return alignment;
}

void tsr_cuda_matmul_alignment_get(const tsr_tensor_desc *a, const tsr_tensor_desc *b,
                                   const tsr_tensor_desc *bias, const tsr_tensor_desc *out,
                                   const tsr_cuda_matmul_layout *layout,
                                   tsr_cuda_matmul_alignment *out_alignment) {
  const tsr_cuda_matmul_layout *l = layout;
  out_alignment->a = tsr_cuda_operand_alignment(b, l->batch, l->a.batch_stride);
  out_alignment->b = tsr_cuda_operand_alignment(a, l->batch, l->b.batch_stride);
  out_alignment->d = tsr_cuda_operand_alignment(out, l->batch, l->d.batch_stride);
  out_alignment->c = out_alignment->d;
  // One bias row serves every batch (CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE 0).
  out_alignment->bias = bias != NULL && l->fuse_bias ? tsr_cuda_operand_alignment(bias, 1, 0) : 0;
}

const void *tsr_cuda_matmul_bias_standin(uint32_t alignment) {
  return (const void *)(uintptr_t)(alignment == 0 ? 1u : alignment);
}
