// MATMUL through cuBLASLt.
//
// Row-major out = a @ b is computed as the column-major product
// out^T = b^T a^T, so each operand's row-major view is a column-major matrix
// cuBLASLt takes as is (or transposed, for operands whose inner stride is
// the row stride). The algorithm comes from cuBLASLt's heuristics at plan
// time and is stored in the plan (cublasLtMatmulAlgo_t is a plain struct);
// execution rebuilds the operation descriptor on the stack, because the bias
// pointer lives in it and a plan runs on several threads at once. Strict
// float32 computes in CUBLAS_COMPUTE_32F; TF32 only when the plan's math mode
// allows it. Bias and ReLU / tanh-GELU fuse into the epilogue; the other
// activations run as an own kernel after the product.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_plan.h"
#include "matmul_layout.h"

// The most workspace a heuristic may ask for: split-K and stream-K kernels
// want a few MiB. Each stream keeps one workspace of this size for all its
// matmuls (the stream orders them), taken from the plugin's allocator on its
// first matmul that needs one, rather than the core allocating it per
// execution.
#define TSR_CUDA_MATMUL_MAX_WORKSPACE (32ull << 20)

typedef struct tsr_cuda_matmul {
  cublasLtMatrixLayoutOpaque_t layout_a;  // cuBLASLt's A: Tessera's b
  cublasLtMatrixLayoutOpaque_t layout_b;  // cuBLASLt's B: Tessera's a
  cublasLtMatrixLayoutOpaque_t layout_d;  // out (also C when beta != 0)
  cublasLtMatmulAlgo_t algo;
  cublasComputeType_t compute;
  cudaDataType_t scale_type;
  cublasOperation_t trans_a;
  cublasOperation_t trans_b;
  cublasLtEpilogue_t epilogue;
  tsr_activation_t post_activation;  // applied by an own kernel; NONE when fused
  tsr_dtype_t dtype;
  uint64_t workspace_bytes;  // the algorithm's need, served by the stream's workspace
  int has_bias;
  int empty;  // nothing to compute (M, N or the batch is 0)
  tsr_cuda_matmul_alignment alignment;  // what the heuristics were told
  int64_t out_count;
  double alpha64, beta64;
  float alpha32, beta32;
} tsr_cuda_matmul;

static cudaDataType_t tsr_cuda_data_type(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT64:
      return CUDA_R_64F;
    case TSR_FLOAT16:
      return CUDA_R_16F;
    case TSR_BFLOAT16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

static const tsr_matmul_attrs *tsr_cuda_matmul_attrs(const tsr_op_signature *signature,
                                                     tsr_matmul_attrs *defaults) {
  memset(defaults, 0, sizeof(*defaults));
  defaults->struct_size = sizeof(*defaults);
  defaults->alpha = 1.0;
  if (signature->attrs == NULL)
    return defaults;
  const tsr_matmul_attrs *given = signature->attrs;
  size_t n = given->struct_size < sizeof(*defaults) ? given->struct_size : sizeof(*defaults);
  memcpy(defaults, given, n);
  return defaults;
}

static tsr_status tsr_cuda_matmul_unsupported(const char *why) {
  return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_UNSUPPORTED, "matmul: %s", why);
}

// Layout checks shared by op_supports and plan_create; fills |m| when given.
static tsr_status tsr_cuda_matmul_shape(const tsr_op_signature *signature, tsr_cuda_matmul *m) {
  tsr_matmul_attrs attrs_buf;
  const tsr_matmul_attrs *attrs = tsr_cuda_matmul_attrs(signature, &attrs_buf);
  const tsr_tensor_desc *out = &signature->outputs[0];
  tsr_cuda_matmul_layout l;
  const char *reason = NULL;
  if (tsr_cuda_matmul_layout_get(&signature->inputs[0], &signature->inputs[1],
                                 attrs->has_bias ? &signature->inputs[2] : NULL, out,
                                 attrs->activation, &l, &reason) != TSR_OK) {
    return tsr_cuda_matmul_unsupported(reason);
  }
  if (m == NULL)
    return TSR_OK;
  m->empty = l.empty;
  if (l.empty)
    return TSR_OK;
  cudaDataType_t type = tsr_cuda_data_type(out->dtype);
  cublasStatus_t cs = cublasLtMatrixLayoutInit(&m->layout_a, type, l.a.rows, l.a.cols, l.a.ld);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatrixLayoutInit(&m->layout_b, type, l.b.rows, l.b.cols, l.b.ld);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatrixLayoutInit(&m->layout_d, type, l.d.rows, l.d.cols, l.d.ld);
  if (cs == CUBLAS_STATUS_SUCCESS && l.batch > 1) {
    int32_t count = (int32_t)l.batch;
    cublasLtMatrixLayoutOpaque_t *layouts[3] = {&m->layout_a, &m->layout_b, &m->layout_d};
    const int64_t strides[3] = {l.a.batch_stride, l.b.batch_stride, l.d.batch_stride};
    for (int i = 0; i < 3 && cs == CUBLAS_STATUS_SUCCESS; ++i) {
      cs = cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                            sizeof(count));
      if (cs == CUBLAS_STATUS_SUCCESS) {
        cs = cublasLtMatrixLayoutSetAttribute(layouts[i],
                                              CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &strides[i], sizeof(strides[i]));
      }
    }
  }
  if (cs != CUBLAS_STATUS_SUCCESS)
    return tsr_cuda_cublas_check(cs, "matmul", "cublasLtMatrixLayoutInit");
  m->trans_a = l.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  m->trans_b = l.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  m->dtype = out->dtype;
  m->has_bias = l.fuse_bias;
  m->out_count = l.batch * l.m * l.n;
  m->post_activation = l.post_activation;
  int relu = l.fused_activation == TSR_ACTIVATION_RELU;
  int gelu = l.fused_activation == TSR_ACTIVATION_GELU_TANH;
  if (l.fuse_bias) {
    m->epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                       : (gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS);
  } else {
    m->epilogue =
        relu ? CUBLASLT_EPILOGUE_RELU : (gelu ? CUBLASLT_EPILOGUE_GELU : CUBLASLT_EPILOGUE_DEFAULT);
  }
  tsr_cuda_matmul_alignment_get(&signature->inputs[0], &signature->inputs[1],
                                attrs->has_bias ? &signature->inputs[2] : NULL, out, &l,
                                &m->alignment);
  m->alpha64 = attrs->alpha;
  m->beta64 = attrs->beta;
  m->alpha32 = (float)attrs->alpha;
  m->beta32 = (float)attrs->beta;
  return TSR_OK;
}

tsr_status tsr_cuda_matmul_supports(const tsr_op_signature *signature) {
  return tsr_cuda_matmul_shape(signature, NULL);
}

// The operation descriptor, built in |desc| (stack storage: no allocation).
static tsr_status tsr_cuda_matmul_desc(const tsr_cuda_matmul *m, const void *bias,
                                       cublasLtMatmulDescOpaque_t *desc) {
  cublasStatus_t cs = cublasLtMatmulDescInit(desc, m->compute, m->scale_type);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &m->trans_a,
                                        sizeof(m->trans_a));
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &m->trans_b,
                                        sizeof(m->trans_b));
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &m->epilogue,
                                        sizeof(m->epilogue));
  if (cs == CUBLAS_STATUS_SUCCESS && m->has_bias) {
    int64_t bias_stride = 0;  // one row vector for every batch
    cs = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                        sizeof(bias));
    if (cs == CUBLAS_STATUS_SUCCESS)
      cs = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                          &bias_stride, sizeof(bias_stride));
  }
  return tsr_cuda_cublas_check(cs, "matmul", "cublasLtMatmulDescSetAttribute");
}

// |stream|'s cuBLASLt workspace, made on the stream's first matmul that needs
// one. Two threads racing on one stream both allocate; one block is kept.
static tsr_status tsr_cuda_matmul_workspace(tsr_cuda_stream *stream, void **out_ptr) {
  tsr_cuda_block *workspace = atomic_load_explicit(&stream->lt_workspace, memory_order_acquire);
  if (workspace == NULL) {
    tsr_cuda_allocator *allocator = tsr_cuda_allocator_of(stream->device);
    tsr_cuda_block *made = NULL;
    tsr_status status = tsr_cuda_allocator_alloc(allocator, tsr_cuda_host(),
                                                 TSR_CUDA_MATMUL_MAX_WORKSPACE, stream, stream->id,
                                                 &made);
    if (status != TSR_OK)
      return status;
    if (atomic_compare_exchange_strong_explicit(&stream->lt_workspace, &workspace, made,
                                                memory_order_acq_rel, memory_order_acquire)) {
      workspace = made;
    } else {
      (void)tsr_cuda_allocator_free(allocator, tsr_cuda_host(), made, stream, stream->id);
    }
  }
  *out_ptr = workspace->ptr;
  return TSR_OK;
}

static tsr_status tsr_cuda_matmul_run(const tsr_cuda_plan *plan, const tsr_cuda_exec *exec) {
  const tsr_cuda_matmul *m = plan->impl;
  if (m->empty)
    return TSR_OK;
  cublasLtHandle_t handle = NULL;
  tsr_status status = tsr_cuda_cublaslt_handle_get(plan->device, &handle);
  if (status != TSR_OK)
    return status;
  int32_t out_index = plan->num_inputs;
  cublasLtMatmulDescOpaque_t desc;
  status = tsr_cuda_matmul_desc(m, m->has_bias ? exec->ptrs[2] : NULL, &desc);
  if (status != TSR_OK)
    return status;
  int f64 = m->dtype == TSR_FLOAT64;
  const void *alpha = f64 ? (const void *)&m->alpha64 : (const void *)&m->alpha32;
  const void *beta = f64 ? (const void *)&m->beta64 : (const void *)&m->beta32;
  void *out = exec->ptrs[out_index];
  void *workspace = NULL;
  if (m->workspace_bytes > 0) {
    status = tsr_cuda_matmul_workspace(exec->stream, &workspace);
    if (status != TSR_OK)
      return status;
  }
  status = tsr_cuda_cublas_check(
      cublasLtMatmul(handle, &desc, alpha, exec->ptrs[1], (cublasLtMatrixLayout_t)&m->layout_a,
                     exec->ptrs[0], (cublasLtMatrixLayout_t)&m->layout_b, beta, out,
                     (cublasLtMatrixLayout_t)&m->layout_d, out,
                     (cublasLtMatrixLayout_t)&m->layout_d, &m->algo, workspace,
                     (size_t)m->workspace_bytes, exec->stream->stream),
      "matmul", "cublasLtMatmul");
  if (status == TSR_OK && m->post_activation != TSR_ACTIVATION_NONE) {
    status = tsr_cuda_activation_apply(m->post_activation, m->dtype, out, m->out_count,
                                       exec->stream->stream);
  }
  return status;
}

static void tsr_cuda_matmul_free(tsr_cuda_plan *plan) {
  free(plan->impl);
  plan->impl = NULL;
}

tsr_status tsr_cuda_matmul_plan_init(const tsr_op_signature *signature, tsr_cuda_plan *plan) {
  tsr_cuda_matmul *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_OUT_OF_MEMORY,
                                      "matmul: no host memory for the plan");
  }
  plan->impl = m;
  plan->free_impl = tsr_cuda_matmul_free;
  plan->run = tsr_cuda_matmul_run;
  // cuBLASLt's kernels for one algorithm and one device are bit-reproducible
  // run to run (its split-K reductions are sequenced, not atomic).
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  tsr_dtype_t dtype = signature->outputs[0].dtype;
  if (dtype == TSR_FLOAT64) {
    m->compute = CUBLAS_COMPUTE_64F;
    m->scale_type = CUDA_R_64F;
  } else if (dtype == TSR_FLOAT32 && signature->math_mode != TSR_MATH_STRICT) {
    m->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    m->scale_type = CUDA_R_32F;
  } else {
    // Strict float32, and bfloat16/float16 with float32 accumulation.
    m->compute = CUBLAS_COMPUTE_32F;
    m->scale_type = CUDA_R_32F;
  }
  tsr_status status = tsr_cuda_matmul_shape(signature, m);
  if (status != TSR_OK)
    return status;
  if (m->empty) {
    snprintf(plan->engine, sizeof(plan->engine), "cuda:empty");
    return TSR_OK;
  }
  cublasLtHandle_t handle = NULL;
  status = tsr_cuda_cublaslt_handle_get(plan->device, &handle);
  if (status != TSR_OK)
    return status;
  // The bias pointer is read for its alignment only (cublasLt.h): a stand-in
  // with exactly the promised alignment, since NULL reads as perfectly aligned.
  cublasLtMatmulDescOpaque_t desc;
  status = tsr_cuda_matmul_desc(
      m, m->has_bias ? tsr_cuda_matmul_bias_standin(m->alignment.bias) : NULL, &desc);
  if (status != TSR_OK)
    return status;
  cublasLtMatmulPreferenceOpaque_t pref;
  uint64_t max_workspace = TSR_CUDA_MATMUL_MAX_WORKSPACE;
  cublasStatus_t cs = cublasLtMatmulPreferenceInit(&pref);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &max_workspace, sizeof(max_workspace));
  // The alignment the plan promises (matmul_layout.c), so the heuristics
  // never pick a kernel that needs more than an execution is guaranteed. The
  // default of these preferences is 256 bytes, more than a slice may have.
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t align_of[4] = {m->alignment.a, m->alignment.b, m->alignment.c, m->alignment.d};
  for (int i = 0; i < 4 && cs == CUBLAS_STATUS_SUCCESS; ++i) {
    cs = cublasLtMatmulPreferenceSetAttribute(&pref, align_attr[i], &align_of[i],
                                              sizeof(align_of[i]));
  }
  if (cs != CUBLAS_STATUS_SUCCESS)
    return tsr_cuda_cublas_check(cs, "matmul", "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t results[8];
  int found = 0;
  status = tsr_cuda_cublas_check(
      cublasLtMatmulAlgoGetHeuristic(
          handle, &desc, (cublasLtMatrixLayout_t)&m->layout_a, (cublasLtMatrixLayout_t)&m->layout_b,
          (cublasLtMatrixLayout_t)&m->layout_d, (cublasLtMatrixLayout_t)&m->layout_d, &pref, 8,
          results, &found),
      "matmul", "cublasLtMatmulAlgoGetHeuristic");
  if (status != TSR_OK)
    return status;
  int chosen = -1;
  for (int i = 0; i < found; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) {
      chosen = i;
      break;
    }
  }
  if (chosen < 0) {
    return tsr_cuda_host()->error_set(tsr_cuda_host()->ctx, TSR_UNSUPPORTED,
                                      "matmul: cuBLASLt's heuristics offer no algorithm for this "
                                      "layout and epilogue (%d candidates)",
                                      found);
  }
  m->algo = results[chosen].algo;
  m->workspace_bytes = results[chosen].workspaceSize;
  plan->workspace_bytes = 0;  // the stream's workspace serves it
  int algo_id = 0;
  size_t written = 0;
  (void)cublasLtMatmulAlgoConfigGetAttribute(&m->algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id,
                                             sizeof(algo_id), &written);
  snprintf(plan->engine, sizeof(plan->engine), "cuda:cublaslt:algo%d%s%s%s", algo_id,
           m->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? ":tf32" : "",
           m->epilogue != CUBLASLT_EPILOGUE_DEFAULT ? ":epilogue" : "",
           m->post_activation != TSR_ACTIVATION_NONE ? "+act" : "");
  return TSR_OK;
}
