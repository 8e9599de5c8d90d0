// MATMUL through oneDNN's BLAS-style dnnl_sgemm, a third candidate beside the
// matmul primitive and the own GEMM (route.c chooses by measurement). On an
// AVX-512 Xeon it ran a 2048^3 product at 325 GFLOP/s where oneDNN 2.6's
// primitive ran at 278 (docs/performance-log.md).
//
// Only large plain products qualify: float32 rank 2, no bias, no activation,
// each matrix with one unit stride. dnnl_sgemm packs its operands into
// buffers it allocates on every call (no user scratchpad in that API), so
// the size floor keeps that cost under 0.1% of the work (DESIGN 5.1:
// allocations inside vendor libraries are measured and reported).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_op.h"

// The floor: M*N*K of at least 2^27 (512^3) multiply-adds, about 1 ms here.
#define TSR_ONEDNN_SGEMM_MIN_MACS (1ll << 27)

typedef struct tsr_onednn_sgemm {
  tsr_onednn_op base;
  char transa, transb;
  dnnl_dim_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
} tsr_onednn_sgemm;

// 'N' with the row stride when |d| (rows x cols) is row-major, 'T' with the
// column stride when it is column-major; 0 otherwise.
static char tsr_onednn_sgemm_layout(const tsr_tensor_desc *d, dnnl_dim_t *out_ld) {
  const int64_t rows = d->sizes[0], cols = d->sizes[1];
  if (d->strides[1] == 1 && d->strides[0] >= (cols > 1 ? cols : 1)) {
    *out_ld = d->strides[0];
    return 'N';
  }
  if (d->strides[0] == 1 && d->strides[1] >= (rows > 1 ? rows : 1)) {
    *out_ld = d->strides[1];
    return 'T';
  }
  return 0;
}

static tsr_status tsr_onednn_sgemm_execute(const tsr_onednn_op *op,
                                           const tsr_onednn_exec_ctx *ctx) {
  const tsr_onednn_sgemm *g = (const tsr_onednn_sgemm *)op;
  return tsr_onednn_check(dnnl_sgemm(g->transa, g->transb, g->m, g->n, g->k, g->alpha,
                                     (const float *)ctx->ptrs[0], g->lda,
                                     (const float *)ctx->ptrs[1], g->ldb, g->beta,
                                     (float *)ctx->ptrs[2], g->ldc),
                          "matmul (dnnl_sgemm)");
}

static void tsr_onednn_sgemm_destroy(tsr_onednn_op *op) {
  free(op);
}

tsr_status tsr_onednn_sgemm_build(const tsr_op_signature *signature,
                                  const tsr_onednn_build_ctx *ctx, tsr_onednn_op **out_op) {
  (void)ctx;
  *out_op = NULL;
  if (signature->op != TSR_OP_MATMUL || signature->num_inputs != 2 ||
      signature->num_outputs != 1) {
    return TSR_UNSUPPORTED;
  }
  const tsr_tensor_desc *a = &signature->inputs[0], *b = &signature->inputs[1];
  const tsr_tensor_desc *c = &signature->outputs[0];
  if (a->dtype != TSR_FLOAT32 || b->dtype != TSR_FLOAT32 || c->dtype != TSR_FLOAT32 ||
      a->rank != 2 || b->rank != 2 || c->rank != 2) {
    return TSR_UNSUPPORTED;
  }
  double alpha = 1.0, beta = 0.0;
  const tsr_matmul_attrs *attrs = signature->attrs;
  if (attrs != NULL) {
    if (attrs->struct_size < offsetof(tsr_matmul_attrs, has_bias) + sizeof(attrs->has_bias) ||
        attrs->has_bias || attrs->activation != TSR_ACTIVATION_NONE) {
      return TSR_UNSUPPORTED;
    }
    alpha = attrs->alpha;
    beta = attrs->beta;
  }
  const int64_t m = c->sizes[0], n = c->sizes[1], k = a->sizes[1];
  if (m <= 0 || n <= 0 || k <= 0 || (double)m * (double)n * (double)k < TSR_ONEDNN_SGEMM_MIN_MACS)
    return TSR_UNSUPPORTED;
  dnnl_dim_t lda = 0, ldb = 0, ldc = 0;
  const char ta = tsr_onednn_sgemm_layout(a, &lda), tb = tsr_onednn_sgemm_layout(b, &ldb);
  if (ta == 0 || tb == 0 || tsr_onednn_sgemm_layout(c, &ldc) != 'N')
    return TSR_UNSUPPORTED;
  tsr_onednn_sgemm *g = calloc(1, sizeof(*g));
  if (g == NULL)
    return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "matmul: no memory for a dnnl_sgemm op");
  snprintf(g->base.engine, sizeof(g->base.engine), "onednn:sgemm");
  g->base.execute = tsr_onednn_sgemm_execute;
  g->base.destroy = tsr_onednn_sgemm_destroy;
  g->transa = ta, g->transb = tb;
  g->m = m, g->n = n, g->k = k, g->lda = lda, g->ldb = ldb, g->ldc = ldc;
  g->alpha = (float)alpha, g->beta = (float)beta;
  *out_op = &g->base;
  return TSR_OK;
}
