// compat.h against whichever oneDNN generation this is built with: every
// creator yields a usable pd, implementation walks end cleanly, and a few
// primitives run and produce hand-computed numbers, so compat_v2.c and
// compat_v3.c are held to the same observable behaviour.
// cmocka.h needs these four first.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <math.h>
#include <oneapi/dnnl/dnnl_version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#ifdef TSR_COMPAT_TEST_STANDALONE
// Stand-ins for the plugin's errors.c: keep the last message for failure
// reports instead of routing it through a host.
static char g_last_error[512];

tsr_status tsr_onednn_error_set(tsr_status code, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  vsnprintf(g_last_error, sizeof g_last_error, format, ap);
  va_end(ap);
  return code;
}

tsr_status tsr_onednn_check(dnnl_status_t status, const char *what) {
  switch (status) {
    case dnnl_success:
      return TSR_OK;
    case dnnl_unimplemented:
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: oneDNN unimplemented", what);
    case dnnl_invalid_arguments:
      return tsr_onednn_error_set(TSR_UNSUPPORTED, "%s: oneDNN invalid_arguments", what);
    case dnnl_out_of_memory:
      return tsr_onednn_error_set(TSR_OUT_OF_MEMORY, "%s: oneDNN out_of_memory", what);
    default:
      return tsr_onednn_error_set(TSR_INTERNAL, "%s: oneDNN status %d", what, (int)status);
  }
}

static const char *last_error(void) {
  return g_last_error;
}
#else
static const char *last_error(void) {
  return "(see the host's error log)";
}
#endif

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;

#define CHECK_OK(expr)                                                           \
  do {                                                                           \
    tsr_status check_st_ = (expr);                                               \
    if (check_st_ != TSR_OK) {                                                   \
      print_error("%s -> status %d: %s\n", #expr, (int)check_st_, last_error()); \
      fail();                                                                    \
    }                                                                            \
  } while (0)

static void expect_floats(const float *got, const float *want, int n, float tol) {
  for (int i = 0; i < n; ++i) {
    if (!(fabsf(got[i] - want[i]) <= tol)) {
      print_error("element %d: got %.7g, want %.7g\n", i, (double)got[i], (double)want[i]);
      fail();
    }
  }
}

// Plain row-major float32 descriptor.
static tsr_dnnl_md *md_plain(int32_t rank, const int64_t *dims) {
  int64_t strides[TSR_MAX_RANK];
  int64_t s = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= dims[i];
  }
  tsr_dnnl_md *md = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(rank, dims, strides, dnnl_f32, &md));
  return md;
}

static tsr_dnnl_md *md_any(int32_t rank, const int64_t *dims) {
  tsr_dnnl_md *md = NULL;
  CHECK_OK(tsr_dnnl_md_create_any(rank, dims, dnnl_f32, &md));
  return md;
}

// Walks |pd| to its last implementation, checking each has a name and that
// the end leaves the pd where it was. Returns the number of implementations.
static int walk_impls(tsr_dnnl_pd *pd) {
  int count = 1;
  char name[256];
  for (;;) {
    const char *n = tsr_dnnl_pd_impl_name(pd);
    assert_non_null(n);
    assert_true(n[0] != '\0');
    snprintf(name, sizeof name, "%s", n);
    assert_non_null(tsr_dnnl_pd_handle(pd));
    tsr_status st = tsr_dnnl_pd_next_impl(pd);
    if (st == TSR_NOT_FOUND)
      break;
    assert_int_equal(st, TSR_OK);
    ++count;
    assert_true(count < 1000);
  }
  assert_string_equal(tsr_dnnl_pd_impl_name(pd), name);
  // The end is sticky.
  assert_int_equal(tsr_dnnl_pd_next_impl(pd), TSR_NOT_FOUND);
  assert_string_equal(tsr_dnnl_pd_impl_name(pd), name);
  // The last implementation is as usable as the first.
  dnnl_primitive_t prim = NULL;
  CHECK_OK(tsr_dnnl_primitive_create(pd, &prim));
  dnnl_primitive_destroy(prim);
  return count;
}

// Creates the primitive of |pd| and runs it once with bufs[i] for ids[i],
// each memory described by the pd's own descriptor for that argument.
static void run_pd(const tsr_dnnl_pd *pd, int n, const int *ids, void *const *bufs) {
  enum { kMax = 16 };
  assert_true(n < kMax);
  dnnl_primitive_t prim = NULL;
  CHECK_OK(tsr_dnnl_primitive_create(pd, &prim));
  dnnl_exec_arg_t args[kMax];
  dnnl_memory_t mems[kMax];
  int nargs = 0;
  void *scratch = NULL;
  for (int i = 0; i < n; ++i) {
    tsr_dnnl_md *md = NULL;
    CHECK_OK(tsr_dnnl_pd_arg_md(pd, ids[i], &md));
    CHECK_OK(tsr_dnnl_memory_create(md, g_engine, bufs[i], &mems[nargs]));
    tsr_dnnl_md_destroy(md);
    args[nargs].arg = ids[i];
    args[nargs].memory = mems[nargs];
    ++nargs;
  }
  tsr_dnnl_md *smd = NULL;
  tsr_status st = tsr_dnnl_pd_arg_md(pd, DNNL_ARG_SCRATCHPAD, &smd);
  if (st == TSR_OK) {
    size_t bytes = tsr_dnnl_md_bytes(smd);
    assert_true(bytes > 0);
    scratch = malloc(bytes);
    assert_non_null(scratch);
    CHECK_OK(tsr_dnnl_memory_create(smd, g_engine, scratch, &mems[nargs]));
    tsr_dnnl_md_destroy(smd);
    args[nargs].arg = DNNL_ARG_SCRATCHPAD;
    args[nargs].memory = mems[nargs];
    ++nargs;
  } else {
    assert_int_equal(st, TSR_NOT_FOUND);
  }
  assert_int_equal(dnnl_primitive_execute(prim, g_stream, nargs, args), dnnl_success);
  assert_int_equal(dnnl_stream_wait(g_stream), dnnl_success);
  for (int i = 0; i < nargs; ++i) dnnl_memory_destroy(mems[i]);
  free(scratch);
  dnnl_primitive_destroy(prim);
}

static int setup(void **state) {
  (void)state;
  if (dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success)
    return -1;
  if (dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags) != dnnl_success) {
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  dnnl_stream_destroy(g_stream);
  dnnl_engine_destroy(g_engine);
  return 0;
}

// --- version ----------------------------------------------------------------

static void test_version(void **state) {
  (void)state;
  const char *v = tsr_dnnl_version_string();
  assert_non_null(v);
  assert_true(strncmp(v, "oneDNN ", 7) == 0);
  assert_ptr_equal(v, tsr_dnnl_version_string());
  int gen = tsr_dnnl_api_generation();
  assert_int_equal(gen, DNNL_VERSION_MAJOR >= 3 ? 3 : 2);
  char api[16];
  snprintf(api, sizeof api, "(v%d API", gen);
  assert_non_null(strstr(v, api));
  print_message("%s\n", v);
}

// --- memory descriptors -------------------------------------------------------

static void test_md(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 3};
  const int64_t row_major[2] = {3, 1};
  const int64_t col_major[2] = {1, 2};
  tsr_dnnl_md *a = NULL, *b = NULL, *t = NULL, *any = NULL, *tag = NULL, *s0 = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, row_major, dnnl_f32, &a));
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, row_major, dnnl_f32, &b));
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, col_major, dnnl_f32, &t));
  CHECK_OK(tsr_dnnl_md_create_any(2, dims, dnnl_f32, &any));
  CHECK_OK(tsr_dnnl_md_create_tag(2, dims, dnnl_f32, dnnl_ab, &tag));
  CHECK_OK(tsr_dnnl_md_create_strided(0, NULL, NULL, dnnl_f32, &s0));
  assert_int_equal(tsr_dnnl_md_bytes(a), 24);
  assert_int_equal(tsr_dnnl_md_bytes(t), 24);
  assert_int_equal(tsr_dnnl_md_bytes(tag), 24);
  assert_int_equal(tsr_dnnl_md_bytes(s0), 4);
  assert_int_equal(tsr_dnnl_md_bytes(NULL), 0);
  assert_int_equal(tsr_dnnl_md_equal(a, b), 1);
  assert_int_equal(tsr_dnnl_md_equal(a, tag), 1);
  assert_int_equal(tsr_dnnl_md_equal(a, t), 0);
  assert_int_equal(tsr_dnnl_md_equal(a, any), 0);

  // A padded row: bytes follow the outermost stride, not the element count.
  const int64_t padded[2] = {4, 1};
  tsr_dnnl_md *p = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, padded, dnnl_f32, &p));
  assert_int_equal(tsr_dnnl_md_bytes(p), 2 * 4 * 4);
  tsr_dnnl_md_destroy(p);

  // Rank 0 equals an explicit {1}.
  const int64_t one = 1;
  tsr_dnnl_md *o = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(1, &one, &one, dnnl_f32, &o));
  assert_int_equal(tsr_dnnl_md_equal(s0, o), 1);
  tsr_dnnl_md_destroy(o);
  tsr_dnnl_md *a0 = NULL;
  CHECK_OK(tsr_dnnl_md_create_tag(0, NULL, dnnl_f32, dnnl_a, &a0));
  assert_int_equal(tsr_dnnl_md_equal(s0, a0), 1);
  tsr_dnnl_md_destroy(a0);

  // A zero stride is oneDNN's to accept or refuse, never an internal error.
  const int64_t bcast[2] = {0, 1};
  tsr_dnnl_md *z = NULL;
  tsr_status st = tsr_dnnl_md_create_strided(2, dims, bcast, dnnl_f32, &z);
  assert_true(st == TSR_OK || st == TSR_UNSUPPORTED);
  print_message("zero-stride md: status %d\n", (int)st);
  tsr_dnnl_md_destroy(z);

  tsr_dnnl_md *bad = NULL;
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  assert_int_equal(tsr_dnnl_md_create_strided(9, nine, nine, dnnl_f32, &bad), TSR_INVALID_ARGUMENT);
  assert_null(bad);
  assert_int_equal(tsr_dnnl_md_create_any(-1, dims, dnnl_f32, &bad), TSR_INVALID_ARGUMENT);
  assert_null(bad);

  tsr_dnnl_md_destroy(NULL);
  tsr_dnnl_md_destroy(a);
  tsr_dnnl_md_destroy(b);
  tsr_dnnl_md_destroy(t);
  tsr_dnnl_md_destroy(any);
  tsr_dnnl_md_destroy(tag);
  tsr_dnnl_md_destroy(s0);
}

// --- attributes -------------------------------------------------------------

static void test_attr(void **state) {
  (void)state;
  const int64_t dims[2] = {1, 4};
  tsr_dnnl_md *bmd = md_plain(2, dims);
  const tsr_dnnl_post_op ops[3] = {
      {.kind = TSR_DNNL_POST_ELTWISE, .alg = dnnl_eltwise_relu},
      {.kind = TSR_DNNL_POST_SUM, .scale = 1.0f},
      {.kind = TSR_DNNL_POST_BINARY, .alg = dnnl_binary_add, .md = bmd},
  };
  const tsr_math_mode_t modes[3] = {TSR_MATH_STRICT, TSR_MATH_ALLOW_TF32, TSR_MATH_ALLOW_REDUCED};
  for (int m = 0; m < 3; ++m) {
    dnnl_primitive_attr_t attr = NULL;
    CHECK_OK(tsr_dnnl_attr_create(modes[m], ops, 3, &attr));
    assert_non_null(attr);
    dnnl_scratchpad_mode_t sp;
    assert_int_equal(dnnl_primitive_attr_get_scratchpad_mode(attr, &sp), dnnl_success);
    assert_int_equal(sp, dnnl_scratchpad_mode_user);
    dnnl_fpmath_mode_t fm;
    assert_int_equal(dnnl_primitive_attr_get_fpmath_mode(attr, &fm), dnnl_success);
    assert_int_equal(fm, m == 0 ? dnnl_fpmath_mode_strict : dnnl_fpmath_mode_bf16);
    const_dnnl_post_ops_t po = NULL;
    assert_int_equal(dnnl_primitive_attr_get_post_ops(attr, &po), dnnl_success);
    assert_int_equal(dnnl_post_ops_len(po), 3);
    assert_int_equal(dnnl_post_ops_get_kind(po, 0), dnnl_eltwise);
    assert_int_equal(dnnl_post_ops_get_kind(po, 1), dnnl_sum);
    assert_int_equal(dnnl_post_ops_get_kind(po, 2), dnnl_binary);
    dnnl_primitive_attr_destroy(attr);
  }
  dnnl_primitive_attr_t attr = NULL;
  CHECK_OK(tsr_dnnl_attr_create(TSR_MATH_STRICT, NULL, 0, &attr));
  dnnl_primitive_attr_destroy(attr);

  const tsr_dnnl_post_op bad_kind = {.kind = 7};
  attr = NULL;
  assert_int_equal(tsr_dnnl_attr_create(TSR_MATH_STRICT, &bad_kind, 1, &attr),
                   TSR_INVALID_ARGUMENT);
  assert_null(attr);
  const tsr_dnnl_post_op no_md = {.kind = TSR_DNNL_POST_BINARY, .alg = dnnl_binary_add};
  assert_int_equal(tsr_dnnl_attr_create(TSR_MATH_STRICT, &no_md, 1, &attr), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_dnnl_attr_create(99, NULL, 0, &attr), TSR_INVALID_ARGUMENT);
  tsr_dnnl_md_destroy(bmd);
}

// --- matmul -----------------------------------------------------------------

static const float kA[6] = {1, 2, 3, 4, 5, 6};
static const float kB[12] = {1, 0, -1, 2, 0, 1, -2, -1, 1, -3, 0, 1};
static const float kAB[8] = {4, -7, -5, 3, 10, -13, -14, 9};

typedef struct matmul_mds {
  tsr_dnnl_md *src, *wei, *dst;
} matmul_mds;

static matmul_mds matmul_mds_make(void) {
  const int64_t sd[2] = {2, 3}, wd[2] = {3, 4}, dd[2] = {2, 4};
  matmul_mds m = {md_plain(2, sd), md_plain(2, wd), md_plain(2, dd)};
  return m;
}

static void matmul_mds_free(matmul_mds *m) {
  tsr_dnnl_md_destroy(m->src);
  tsr_dnnl_md_destroy(m->wei);
  tsr_dnnl_md_destroy(m->dst);
}

static void test_matmul(void **state) {
  (void)state;
  matmul_mds m = matmul_mds_make();
  tsr_dnnl_pd *pd = NULL;
  CHECK_OK(tsr_dnnl_pd_matmul(g_engine, m.src, m.wei, NULL, m.dst, NULL, &pd));

  tsr_dnnl_md *q = NULL;
  CHECK_OK(tsr_dnnl_pd_arg_md(pd, DNNL_ARG_SRC, &q));
  assert_int_equal(tsr_dnnl_md_equal(q, m.src), 1);
  tsr_dnnl_md_destroy(q);
  q = NULL;
  CHECK_OK(tsr_dnnl_pd_arg_md(pd, DNNL_ARG_DST, &q));
  assert_int_equal(tsr_dnnl_md_bytes(q), 32);
  tsr_dnnl_md_destroy(q);
  q = NULL;
  assert_int_equal(tsr_dnnl_pd_arg_md(pd, DNNL_ARG_DIFF_WEIGHTS, &q), TSR_NOT_FOUND);
  assert_null(q);
  assert_int_equal(tsr_dnnl_pd_arg_md(pd, DNNL_ARG_WORKSPACE, &q), TSR_NOT_FOUND);
  assert_int_equal(tsr_dnnl_pd_arg_md(pd, DNNL_ARG_BIAS, &q), TSR_NOT_FOUND);

  float dst[8] = {0};
  const int ids[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  void *bufs[3] = {(void *)kA, (void *)kB, dst};
  run_pd(pd, 3, ids, bufs);
  expect_floats(dst, kAB, 8, 0.0f);
  char first[256];
  snprintf(first, sizeof first, "%s", tsr_dnnl_pd_impl_name(pd));
  print_message("matmul: %d implementation(s), first %s\n", walk_impls(pd), first);
  tsr_dnnl_pd_destroy(pd);

  // Bias, and reduced math allowed: small integers are exact in bf16 too.
  const int64_t bd[2] = {1, 4};
  tsr_dnnl_md *bias = md_plain(2, bd);
  dnnl_primitive_attr_t attr = NULL;
  CHECK_OK(tsr_dnnl_attr_create(TSR_MATH_ALLOW_REDUCED, NULL, 0, &attr));
  CHECK_OK(tsr_dnnl_pd_matmul(g_engine, m.src, m.wei, bias, m.dst, attr, &pd));
  dnnl_primitive_attr_destroy(attr);
  const float bvals[4] = {1, 2, 3, 4};
  const int bids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
  void *bbufs[4] = {(void *)kA, (void *)kB, (void *)bvals, dst};
  run_pd(pd, 4, bids, bbufs);
  const float want_b[8] = {5, -5, -2, 7, 11, -11, -11, 13};
  expect_floats(dst, want_b, 8, 0.0f);
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_md_destroy(bias);

  // Weights of any layout: the pd picks one, and its arg md says which.
  const int64_t wd[2] = {3, 4};
  tsr_dnnl_md *wany = md_any(2, wd);
  CHECK_OK(tsr_dnnl_pd_matmul(g_engine, m.src, wany, NULL, m.dst, NULL, &pd));
  CHECK_OK(tsr_dnnl_pd_arg_md(pd, DNNL_ARG_WEIGHTS, &q));
  assert_true(tsr_dnnl_md_bytes(q) >= 48);
  tsr_dnnl_md_destroy(q);
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_md_destroy(wany);
  matmul_mds_free(&m);
}

static void test_matmul_unsupported(void **state) {
  (void)state;
  const int64_t sd[2] = {2, 3}, wd[2] = {4, 4}, dd[2] = {2, 4};
  tsr_dnnl_md *src = md_plain(2, sd), *wei = md_plain(2, wd), *dst = md_plain(2, dd);
  tsr_dnnl_pd *pd = (tsr_dnnl_pd *)1;
  assert_int_equal(tsr_dnnl_pd_matmul(g_engine, src, wei, NULL, dst, NULL, &pd), TSR_UNSUPPORTED);
  assert_null(pd);
  // The same through a caller's attribute, which must survive the failure.
  dnnl_primitive_attr_t attr = NULL;
  CHECK_OK(tsr_dnnl_attr_create(TSR_MATH_STRICT, NULL, 0, &attr));
  assert_int_equal(tsr_dnnl_pd_matmul(g_engine, src, wei, NULL, dst, attr, &pd), TSR_UNSUPPORTED);
  dnnl_primitive_attr_destroy(attr);
  assert_int_equal(tsr_dnnl_pd_matmul(g_engine, NULL, wei, NULL, dst, NULL, &pd),
                   TSR_INVALID_ARGUMENT);
  tsr_dnnl_md_destroy(src);
  tsr_dnnl_md_destroy(wei);
  tsr_dnnl_md_destroy(dst);
}

static void test_matmul_post_ops(void **state) {
  (void)state;
  matmul_mds m = matmul_mds_make();
  // dst = relu(A @ B) + 0.5 * dst_before
  const tsr_dnnl_post_op ops[2] = {
      {.kind = TSR_DNNL_POST_ELTWISE, .alg = dnnl_eltwise_relu, .alpha = 0.0f, .beta = 0.0f},
      {.kind = TSR_DNNL_POST_SUM, .scale = 0.5f},
  };
  dnnl_primitive_attr_t attr = NULL;
  CHECK_OK(tsr_dnnl_attr_create(TSR_MATH_STRICT, ops, 2, &attr));
  tsr_dnnl_pd *pd = NULL;
  CHECK_OK(tsr_dnnl_pd_matmul(g_engine, m.src, m.wei, NULL, m.dst, attr, &pd));
  dnnl_primitive_attr_destroy(attr);
  float dst[8] = {2, 2, 2, 2, 2, 2, 2, 2};
  const int ids[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  void *bufs[3] = {(void *)kA, (void *)kB, dst};
  run_pd(pd, 3, ids, bufs);
  const float want[8] = {5, 1, 1, 4, 11, 1, 1, 10};
  expect_floats(dst, want, 8, 0.0f);
  tsr_dnnl_pd_destroy(pd);

  // dst = A @ B + row vector, the vector broadcast over rows.
  const int64_t bd[2] = {1, 4};
  tsr_dnnl_md *vmd = md_plain(2, bd);
  const tsr_dnnl_post_op bin = {.kind = TSR_DNNL_POST_BINARY, .alg = dnnl_binary_add, .md = vmd};
  CHECK_OK(tsr_dnnl_attr_create(TSR_MATH_STRICT, &bin, 1, &attr));
  CHECK_OK(tsr_dnnl_pd_matmul(g_engine, m.src, m.wei, NULL, m.dst, attr, &pd));
  dnnl_primitive_attr_destroy(attr);
  const float vec[4] = {10, 20, 30, 40};
  const int bids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                       DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1};
  void *bbufs[4] = {(void *)kA, (void *)kB, dst, (void *)vec};
  run_pd(pd, 4, bids, bbufs);
  const float want_b[8] = {14, 13, 25, 43, 20, 7, 16, 49};
  expect_floats(dst, want_b, 8, 0.0f);
  tsr_dnnl_pd_destroy(pd);
  tsr_dnnl_md_destroy(vmd);
  matmul_mds_free(&m);
}

// --- reorder, concat, sum -----------------------------------------------------

static void test_reorder(void **state) {
  (void)state;
  // Same logical 2x3 tensor, written column-major: a transpose in memory.
  const int64_t dims[2] = {2, 3};
  const int64_t col_major[2] = {1, 2};
  tsr_dnnl_md *src = md_plain(2, dims), *dst = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, col_major, dnnl_f32, &dst));
  tsr_dnnl_pd *pd = NULL;
  CHECK_OK(tsr_dnnl_pd_reorder(g_engine, src, dst, NULL, &pd));
  float out[6] = {0};
  const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
  void *bufs[2] = {(void *)kA, out};
  run_pd(pd, 2, ids, bufs);
  const float want[6] = {1, 4, 2, 5, 3, 6};
  expect_floats(out, want, 6, 0.0f);
  assert_true(walk_impls(pd) >= 1);
  tsr_dnnl_pd_destroy(pd);

  // Different dims cannot be reordered.
  const int64_t other[2] = {3, 2};
  tsr_dnnl_md *bad = md_plain(2, other);
  assert_int_equal(tsr_dnnl_pd_reorder(g_engine, src, bad, NULL, &pd), TSR_UNSUPPORTED);
  assert_null(pd);
  tsr_dnnl_md_destroy(bad);
  tsr_dnnl_md_destroy(src);
  tsr_dnnl_md_destroy(dst);
}

static void test_concat_sum(void **state) {
  (void)state;
  const int64_t d22[2] = {2, 2}, d42[2] = {4, 2};
  tsr_dnnl_md *a = md_plain(2, d22), *b = md_plain(2, d22);
  tsr_dnnl_md *cat_any = md_any(2, d42), *d = md_plain(2, d22);
  const tsr_dnnl_md *const srcs[2] = {a, b};
  const float x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8};

  tsr_dnnl_pd *pd = NULL;
  CHECK_OK(tsr_dnnl_pd_concat(g_engine, cat_any, 2, 0, srcs, NULL, &pd));
  tsr_dnnl_md *q = NULL;
  CHECK_OK(tsr_dnnl_pd_arg_md(pd, DNNL_ARG_DST, &q));
  assert_int_equal(tsr_dnnl_md_bytes(q), 32);
  tsr_dnnl_md *plain = md_plain(2, d42);
  int dst_plain = tsr_dnnl_md_equal(q, plain);
  tsr_dnnl_md_destroy(plain);
  tsr_dnnl_md_destroy(q);
  float out[8] = {0};
  const int ids[3] = {DNNL_ARG_MULTIPLE_SRC, DNNL_ARG_MULTIPLE_SRC + 1, DNNL_ARG_DST};
  void *bufs[3] = {(void *)x, (void *)y, out};
  run_pd(pd, 3, ids, bufs);
  if (dst_plain) {
    const float want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    expect_floats(out, want, 8, 0.0f);
  }
  assert_true(walk_impls(pd) >= 1);
  tsr_dnnl_pd_destroy(pd);

  const float scales[2] = {1.0f, 2.0f};
  CHECK_OK(tsr_dnnl_pd_sum(g_engine, d, 2, scales, srcs, NULL, &pd));
  float s[4] = {0};
  void *sbufs[3] = {(void *)x, (void *)y, s};
  run_pd(pd, 3, ids, sbufs);
  const float want_s[4] = {11, 14, 17, 20};
  expect_floats(s, want_s, 4, 0.0f);
  assert_true(walk_impls(pd) >= 1);
  tsr_dnnl_pd_destroy(pd);

  assert_int_equal(tsr_dnnl_pd_sum(g_engine, d, 0, scales, srcs, NULL, &pd), TSR_INVALID_ARGUMENT);
  tsr_dnnl_md_destroy(a);
  tsr_dnnl_md_destroy(b);
  tsr_dnnl_md_destroy(cat_any);
  tsr_dnnl_md_destroy(d);
}

// --- softmax ------------------------------------------------------------------

static void test_softmax(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 3};
  tsr_dnnl_md *md = md_plain(2, dims);
  const float x[6] = {1, 2, 3, 0, 0, 0};
  const float want[2][6] = {
      {0.09003057f, 0.24472847f, 0.66524096f, 1.0f / 3, 1.0f / 3, 1.0f / 3},
      {-2.40760596f, -1.40760596f, -0.40760596f, -1.09861229f, -1.09861229f, -1.09861229f},
  };
  for (int log = 0; log < 2; ++log) {
    tsr_dnnl_pd *fwd = NULL;
    CHECK_OK(tsr_dnnl_pd_softmax_fwd(g_engine, dnnl_forward_training, log, 1, md, md, NULL, &fwd));
    float y[6] = {0};
    const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    void *bufs[2] = {(void *)x, y};
    run_pd(fwd, 2, ids, bufs);
    expect_floats(y, want[log], 6, 1e-5f);

    tsr_dnnl_pd *bwd = NULL;
    CHECK_OK(tsr_dnnl_pd_softmax_bwd(g_engine, log, 1, md, md, md, fwd, NULL, &bwd));
    // softmax: dx = y * (dy - sum(dy * y)); dy = 1 gives dx = 0.
    // log-softmax: dx = dy - exp(y) * sum(dy); dy = 1 gives 1 - 3 * softmax.
    const float dy[6] = {1, 1, 1, 1, 1, 1};
    float dx[6] = {0};
    const int bids[3] = {DNNL_ARG_DST, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
    void *bbufs[3] = {y, (void *)dy, dx};
    run_pd(bwd, 3, bids, bbufs);
    float want_dx[6];
    for (int i = 0; i < 6; ++i) want_dx[i] = log ? 1.0f - 3.0f * want[0][i] : 0.0f;
    expect_floats(dx, want_dx, 6, 1e-5f);
    assert_true(walk_impls(bwd) >= 1);
    tsr_dnnl_pd_destroy(bwd);
    assert_true(walk_impls(fwd) >= 1);
    tsr_dnnl_pd_destroy(fwd);
  }
  tsr_dnnl_md_destroy(md);
}

// --- convolution and pooling --------------------------------------------------

static void test_conv(void **state) {
  (void)state;
  const int64_t sd[4] = {1, 1, 4, 4}, wd[4] = {1, 1, 3, 3}, bd[1] = {1}, dd[4] = {1, 1, 2, 2};
  tsr_dnnl_md *src = md_plain(4, sd), *wei = md_plain(4, wd), *bias = md_plain(1, bd);
  tsr_dnnl_md *dst = md_plain(4, dd);
  const tsr_dnnl_window w = {.strides = {1, 1}};
  tsr_dnnl_pd *fwd = NULL;
  CHECK_OK(
      tsr_dnnl_pd_conv_fwd(g_engine, dnnl_forward_training, src, wei, bias, dst, &w, NULL, &fwd));
  float x[16], k[9], b = 1.0f, y[4] = {0};
  for (int i = 0; i < 16; ++i) x[i] = (float)i;
  for (int i = 0; i < 9; ++i) k[i] = 1.0f;
  const int ids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
  void *bufs[4] = {x, k, &b, y};
  run_pd(fwd, 4, ids, bufs);
  const float want[4] = {46, 55, 82, 91};
  expect_floats(y, want, 4, 1e-4f);

  tsr_dnnl_pd *bd_pd = NULL, *bw_pd = NULL;
  CHECK_OK(tsr_dnnl_pd_conv_bwd_data(g_engine, src, wei, dst, &w, fwd, NULL, &bd_pd));
  CHECK_OK(tsr_dnnl_pd_conv_bwd_weights(g_engine, src, wei, bias, dst, &w, fwd, NULL, &bw_pd));
  // dW = sum over outputs of dy * x window; dy = 1 gives the window sums
  // minus the bias, i.e. for each tap the sum of the four inputs it meets.
  const float dy[4] = {1, 1, 1, 1};
  float dw[9] = {0}, db = 0;
  const int wids[4] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS};
  void *wbufs[4] = {x, (void *)dy, dw, &db};
  run_pd(bw_pd, 4, wids, wbufs);
  const float want_dw[9] = {10, 14, 18, 26, 30, 34, 42, 46, 50};
  expect_floats(dw, want_dw, 9, 1e-4f);
  assert_true(fabsf(db - 4.0f) < 1e-5f);
  assert_true(walk_impls(bd_pd) >= 1);
  assert_true(walk_impls(bw_pd) >= 1);
  assert_true(walk_impls(fwd) >= 1);
  tsr_dnnl_pd_destroy(bd_pd);
  tsr_dnnl_pd_destroy(bw_pd);
  tsr_dnnl_pd_destroy(fwd);

  // Dilated and 1-D forms go through the same creator.
  const tsr_dnnl_window wdil = {
      .strides = {1, 1}, .dilates = {1, 1}, .pad_l = {1, 1}, .pad_r = {1, 1}};
  CHECK_OK(tsr_dnnl_pd_conv_fwd(g_engine, dnnl_forward_inference, src, wei, NULL, dst, &wdil, NULL,
                                &fwd));
  tsr_dnnl_pd_destroy(fwd);
  const int64_t s3[3] = {1, 1, 4}, w3[3] = {1, 1, 3}, d3[3] = {1, 1, 2};
  tsr_dnnl_md *src1 = md_plain(3, s3), *wei1 = md_plain(3, w3), *dst1 = md_plain(3, d3);
  CHECK_OK(tsr_dnnl_pd_conv_fwd(g_engine, dnnl_forward_inference, src1, wei1, NULL, dst1, &w, NULL,
                                &fwd));
  tsr_dnnl_pd_destroy(fwd);
  tsr_dnnl_md_destroy(src1);
  tsr_dnnl_md_destroy(wei1);
  tsr_dnnl_md_destroy(dst1);

  // Wrong output size.
  tsr_dnnl_md *dst_bad = md_plain(4, sd);
  assert_int_equal(tsr_dnnl_pd_conv_fwd(g_engine, dnnl_forward_inference, src, wei, NULL, dst_bad,
                                        &w, NULL, &fwd),
                   TSR_UNSUPPORTED);
  assert_null(fwd);
  tsr_dnnl_md_destroy(dst_bad);
  tsr_dnnl_md_destroy(src);
  tsr_dnnl_md_destroy(wei);
  tsr_dnnl_md_destroy(bias);
  tsr_dnnl_md_destroy(dst);
}

static void test_pool(void **state) {
  (void)state;
  const int64_t sd[4] = {1, 1, 4, 4}, dd[4] = {1, 1, 2, 2};
  tsr_dnnl_md *src = md_plain(4, sd), *dst = md_plain(4, dd);
  const tsr_dnnl_window w = {.strides = {2, 2}, .kernel = {2, 2}};
  float x[16], y[4] = {0};
  for (int i = 0; i < 16; ++i) x[i] = (float)i;
  const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
  void *bufs[2] = {x, y};

  tsr_dnnl_pd *fwd = NULL;
  CHECK_OK(tsr_dnnl_pd_pool_fwd(g_engine, dnnl_forward_inference, dnnl_pooling_max, src, dst, &w,
                                NULL, &fwd));
  run_pd(fwd, 2, ids, bufs);
  const float want_max[4] = {5, 7, 13, 15};
  expect_floats(y, want_max, 4, 0.0f);
  assert_true(walk_impls(fwd) >= 1);
  tsr_dnnl_pd_destroy(fwd);

  CHECK_OK(tsr_dnnl_pd_pool_fwd(g_engine, dnnl_forward_inference, dnnl_pooling_avg_exclude_padding,
                                src, dst, &w, NULL, &fwd));
  run_pd(fwd, 2, ids, bufs);
  const float want_avg[4] = {2.5f, 4.5f, 10.5f, 12.5f};
  expect_floats(y, want_avg, 4, 1e-6f);
  tsr_dnnl_pd_destroy(fwd);

  // Training max pooling keeps a workspace for the backward pass.
  CHECK_OK(tsr_dnnl_pd_pool_fwd(g_engine, dnnl_forward_training, dnnl_pooling_max, src, dst, &w,
                                NULL, &fwd));
  tsr_dnnl_md *ws = NULL;
  CHECK_OK(tsr_dnnl_pd_arg_md(fwd, DNNL_ARG_WORKSPACE, &ws));
  assert_true(tsr_dnnl_md_bytes(ws) > 0);
  tsr_dnnl_md_destroy(ws);
  tsr_dnnl_pd *bwd = NULL;
  CHECK_OK(tsr_dnnl_pd_pool_bwd(g_engine, dnnl_pooling_max, src, dst, &w, fwd, NULL, &bwd));
  assert_true(walk_impls(bwd) >= 1);
  tsr_dnnl_pd_destroy(bwd);
  tsr_dnnl_pd_destroy(fwd);

  // Dilation: a 2x2 kernel dilated by 1 spans 3x3; outputs at 0 and 1.
  const tsr_dnnl_window wd = {.strides = {1, 1}, .kernel = {2, 2}, .dilates = {1, 1}};
  CHECK_OK(tsr_dnnl_pd_pool_fwd(g_engine, dnnl_forward_inference, dnnl_pooling_max, src, dst, &wd,
                                NULL, &fwd));
  run_pd(fwd, 2, ids, bufs);
  const float want_dil[4] = {10, 11, 14, 15};
  expect_floats(y, want_dil, 4, 0.0f);
  tsr_dnnl_pd_destroy(fwd);

  tsr_dnnl_md_destroy(src);
  tsr_dnnl_md_destroy(dst);
}

// --- eltwise ------------------------------------------------------------------

static void test_eltwise(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 3};
  tsr_dnnl_md *md = md_plain(2, dims);
  tsr_dnnl_pd *fwd = NULL;
  CHECK_OK(tsr_dnnl_pd_eltwise_fwd(g_engine, dnnl_forward_training, dnnl_eltwise_relu, 0.0f, 0.0f,
                                   md, md, NULL, &fwd));
  const float x[6] = {-1, 2, -3, 4, 0, 6};
  float y[6] = {0};
  const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
  void *bufs[2] = {(void *)x, y};
  run_pd(fwd, 2, ids, bufs);
  const float want[6] = {0, 2, 0, 4, 0, 6};
  expect_floats(y, want, 6, 0.0f);

  tsr_dnnl_pd *bwd = NULL;
  CHECK_OK(tsr_dnnl_pd_eltwise_bwd(g_engine, dnnl_eltwise_relu, 0.0f, 0.0f, md, md, md, fwd, NULL,
                                   &bwd));
  const float dy[6] = {1, 1, 1, 1, 1, 1};
  float dx[6] = {0};
  const int bids[3] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
  void *bbufs[3] = {(void *)x, (void *)dy, dx};
  run_pd(bwd, 3, bids, bbufs);
  const float want_dx[6] = {0, 1, 0, 1, 0, 1};
  expect_floats(dx, want_dx, 6, 0.0f);
  assert_true(walk_impls(bwd) >= 1);
  assert_true(walk_impls(fwd) >= 1);
  tsr_dnnl_pd_destroy(bwd);
  tsr_dnnl_pd_destroy(fwd);

  // A dst laid out differently from src: 2.x cannot express it.
  const int64_t col_major[2] = {1, 2};
  tsr_dnnl_md *t = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, col_major, dnnl_f32, &t));
  tsr_status st = tsr_dnnl_pd_eltwise_fwd(g_engine, dnnl_forward_inference, dnnl_eltwise_relu, 0.0f,
                                          0.0f, md, t, NULL, &fwd);
  if (tsr_dnnl_api_generation() == 2) {
    assert_int_equal(st, TSR_UNSUPPORTED);
    assert_null(fwd);
  } else {
    assert_true(st == TSR_OK || st == TSR_UNSUPPORTED);
    tsr_dnnl_pd_destroy(fwd);
  }
  tsr_dnnl_md_destroy(t);
  tsr_dnnl_md_destroy(md);
}

// --- normalisation ------------------------------------------------------------

static void test_layer_norm(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 4};
  tsr_dnnl_md *md = md_plain(2, dims);
  const uint32_t flags = TSR_DNNL_NORM_USE_SCALE | TSR_DNNL_NORM_USE_SHIFT;
  tsr_dnnl_pd *fwd = NULL;
  CHECK_OK(tsr_dnnl_pd_layer_norm_fwd(g_engine, dnnl_forward_training, md, md, NULL, 0.0f, flags,
                                      NULL, &fwd));
  const float x[8] = {1, 2, 3, 4, 2, 2, 2, 2};
  const float gamma[4] = {1, 1, 1, 1}, beta[4] = {0, 0, 0, 1};
  float y[8] = {0}, mean[2] = {0}, var[2] = {0};
  const int ids[6] = {DNNL_ARG_SRC,   DNNL_ARG_DST,  DNNL_ARG_SCALE,
                      DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  void *bufs[6] = {(void *)x, y, (void *)gamma, (void *)beta, mean, var};
  run_pd(fwd, 6, ids, bufs);
  // Row 0: mean 2.5, variance 1.25; row 1 is constant: (x - mean) = 0, and
  // eps 0 would divide 0 by 0, so it is not checked beyond the stats.
  const float inv = 1.0f / sqrtf(1.25f);
  const float want[4] = {-1.5f * inv, -0.5f * inv, 0.5f * inv, 1.5f * inv + 1.0f};
  expect_floats(y, want, 4, 1e-5f);
  const float want_mean[2] = {2.5f, 2.0f}, want_var[2] = {1.25f, 0.0f};
  expect_floats(mean, want_mean, 2, 1e-6f);
  expect_floats(var, want_var, 2, 1e-6f);

  tsr_dnnl_pd *bwd = NULL;
  CHECK_OK(tsr_dnnl_pd_layer_norm_bwd(g_engine, dnnl_backward, md, md, md, NULL, 0.0f, flags, fwd,
                                      NULL, &bwd));
  tsr_dnnl_md *q = NULL;
  CHECK_OK(tsr_dnnl_pd_arg_md(bwd, DNNL_ARG_DIFF_SCALE, &q));
  tsr_dnnl_md_destroy(q);
  assert_true(walk_impls(bwd) >= 1);
  tsr_dnnl_pd_destroy(bwd);
  CHECK_OK(tsr_dnnl_pd_layer_norm_bwd(g_engine, dnnl_backward_data, md, md, md, NULL, 1e-5f, 0, fwd,
                                      NULL, &bwd));
  tsr_dnnl_pd_destroy(bwd);
  assert_true(walk_impls(fwd) >= 1);
  tsr_dnnl_pd_destroy(fwd);

  // Explicit stats descriptor and global stats.
  const int64_t sdims[1] = {2};
  tsr_dnnl_md *stat = md_plain(1, sdims);
  CHECK_OK(tsr_dnnl_pd_layer_norm_fwd(g_engine, dnnl_forward_inference, md, md, stat, 1e-5f,
                                      TSR_DNNL_NORM_USE_GLOBAL_STATS, NULL, &fwd));
  tsr_dnnl_pd_destroy(fwd);
  assert_int_equal(tsr_dnnl_pd_layer_norm_fwd(g_engine, dnnl_forward_inference, md, md, stat, 1e-5f,
                                              1u << 7, NULL, &fwd),
                   TSR_INVALID_ARGUMENT);
  tsr_dnnl_md_destroy(stat);

  // A dst laid out differently from src: 2.6 has no layer_normalization_v2.
  const int64_t col_major[2] = {1, 2};
  tsr_dnnl_md *t = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, col_major, dnnl_f32, &t));
  tsr_status st = tsr_dnnl_pd_layer_norm_fwd(g_engine, dnnl_forward_inference, md, t, NULL, 1e-5f,
                                             0, NULL, &fwd);
  if (tsr_dnnl_api_generation() == 2) {
    assert_int_equal(st, TSR_UNSUPPORTED);
  } else {
    assert_true(st == TSR_OK || st == TSR_UNSUPPORTED);
    tsr_dnnl_pd_destroy(fwd);
  }
  tsr_dnnl_md_destroy(t);
  tsr_dnnl_md_destroy(md);
}

static void test_batch_norm(void **state) {
  (void)state;
  const int64_t dims[4] = {2, 3, 1, 2};
  tsr_dnnl_md *md = md_plain(4, dims);
  const uint32_t flags = TSR_DNNL_NORM_USE_SCALE | TSR_DNNL_NORM_USE_SHIFT;
  tsr_dnnl_pd *fwd = NULL;
  CHECK_OK(
      tsr_dnnl_pd_batch_norm_fwd(g_engine, dnnl_forward_training, md, md, 0.0f, flags, NULL, &fwd));
  // Channel c holds n*6 + c*2 + {0, 1}: per channel {c*2, c*2+1, 6+c*2, 7+c*2},
  // mean c*2 + 3.5, variance (12.25 + 6.25 + 6.25 + 12.25) / 4 = 9.25.
  float x[12];
  for (int i = 0; i < 12; ++i) x[i] = (float)i;
  const float gamma[3] = {1, 2, 1}, beta[3] = {0, 0, 5};
  float y[12] = {0}, mean[3] = {0}, var[3] = {0};
  const int ids[6] = {DNNL_ARG_SRC,   DNNL_ARG_DST,  DNNL_ARG_SCALE,
                      DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  void *bufs[6] = {x, y, (void *)gamma, (void *)beta, mean, var};
  run_pd(fwd, 6, ids, bufs);
  const float want_mean[3] = {3.5f, 5.5f, 7.5f}, want_var[3] = {9.25f, 9.25f, 9.25f};
  expect_floats(mean, want_mean, 3, 1e-5f);
  expect_floats(var, want_var, 3, 1e-5f);
  const float inv = 1.0f / sqrtf(9.25f);
  float want[12];
  for (int i = 0; i < 12; ++i) {
    int c = (i / 2) % 3;
    want[i] = gamma[c] * (x[i] - want_mean[c]) * inv + beta[c];
  }
  expect_floats(y, want, 12, 1e-5f);

  tsr_dnnl_pd *bwd = NULL;
  CHECK_OK(tsr_dnnl_pd_batch_norm_bwd(g_engine, dnnl_backward, md, md, md, 0.0f, flags, fwd, NULL,
                                      &bwd));
  assert_true(walk_impls(bwd) >= 1);
  tsr_dnnl_pd_destroy(bwd);
  assert_true(walk_impls(fwd) >= 1);
  tsr_dnnl_pd_destroy(fwd);

  CHECK_OK(tsr_dnnl_pd_batch_norm_fwd(g_engine, dnnl_forward_inference, md, md, 1e-5f,
                                      TSR_DNNL_NORM_USE_GLOBAL_STATS, NULL, &fwd));
  tsr_dnnl_pd_destroy(fwd);

  // A dst laid out differently from src: 2.x cannot express it.
  const int64_t other[4] = {6, 1, 6, 3};  // the same dims, channels innermost (NHWC)
  tsr_dnnl_md *t = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(4, dims, other, dnnl_f32, &t));
  tsr_status st =
      tsr_dnnl_pd_batch_norm_fwd(g_engine, dnnl_forward_inference, md, t, 1e-5f, 0, NULL, &fwd);
  if (tsr_dnnl_api_generation() == 2) {
    assert_int_equal(st, TSR_UNSUPPORTED);
  } else {
    assert_true(st == TSR_OK || st == TSR_UNSUPPORTED);
    tsr_dnnl_pd_destroy(fwd);
  }
  tsr_dnnl_md_destroy(t);
  tsr_dnnl_md_destroy(md);
}

// --- binary and reduction -----------------------------------------------------

static void test_binary_reduction(void **state) {
  (void)state;
  const int64_t d23[2] = {2, 3}, d13[2] = {1, 3}, d21[2] = {2, 1};
  tsr_dnnl_md *a = md_plain(2, d23), *b = md_plain(2, d13), *r = md_plain(2, d21);
  tsr_dnnl_pd *pd = NULL;
  CHECK_OK(tsr_dnnl_pd_binary(g_engine, dnnl_binary_mul, a, b, a, NULL, &pd));
  const float v[3] = {2, -1, 0.5f};
  float out[6] = {0};
  const int ids[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
  void *bufs[3] = {(void *)kA, (void *)v, out};
  run_pd(pd, 3, ids, bufs);
  const float want[6] = {2, -2, 1.5f, 8, -5, 3};
  expect_floats(out, want, 6, 0.0f);
  assert_true(walk_impls(pd) >= 1);
  tsr_dnnl_pd_destroy(pd);

  CHECK_OK(tsr_dnnl_pd_reduction(g_engine, dnnl_reduction_sum, a, r, 0.0f, 0.0f, NULL, &pd));
  float s[2] = {0};
  const int rids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
  void *rbufs[2] = {(void *)kA, s};
  run_pd(pd, 2, rids, rbufs);
  const float want_s[2] = {6, 15};
  expect_floats(s, want_s, 2, 0.0f);
  assert_true(walk_impls(pd) >= 1);
  tsr_dnnl_pd_destroy(pd);

  CHECK_OK(
      tsr_dnnl_pd_reduction(g_engine, dnnl_reduction_norm_lp_sum, a, r, 2.0f, 0.0f, NULL, &pd));
  run_pd(pd, 2, rids, rbufs);
  const float want_n[2] = {sqrtf(14.0f), sqrtf(77.0f)};
  expect_floats(s, want_n, 2, 1e-5f);
  tsr_dnnl_pd_destroy(pd);

  tsr_dnnl_md_destroy(a);
  tsr_dnnl_md_destroy(b);
  tsr_dnnl_md_destroy(r);
}

// --- failure paths and lifetimes ------------------------------------------------

static void test_no_implementation(void **state) {
  (void)state;
  // Valid descriptors no oneDNN implementation takes (softmax of int32):
  // creation fails after the library has been asked, which must release the
  // default attribute, a caller's attribute untouched, and the hint's clone.
  const int64_t dims[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  tsr_dnnl_md *i32 = NULL;
  CHECK_OK(tsr_dnnl_md_create_strided(2, dims, strides, dnnl_s32, &i32));
  tsr_dnnl_md *f32 = md_plain(2, dims);
  tsr_dnnl_pd *pd = (tsr_dnnl_pd *)1;
  assert_int_equal(
      tsr_dnnl_pd_softmax_fwd(g_engine, dnnl_forward_inference, 0, 1, i32, i32, NULL, &pd),
      TSR_UNSUPPORTED);
  assert_null(pd);
  dnnl_primitive_attr_t attr = NULL;
  CHECK_OK(tsr_dnnl_attr_create(TSR_MATH_STRICT, NULL, 0, &attr));
  assert_int_equal(
      tsr_dnnl_pd_softmax_fwd(g_engine, dnnl_forward_inference, 1, 1, i32, i32, attr, &pd),
      TSR_UNSUPPORTED);
  dnnl_primitive_attr_destroy(attr);
  tsr_dnnl_pd *fwd = NULL;
  CHECK_OK(tsr_dnnl_pd_softmax_fwd(g_engine, dnnl_forward_training, 0, 1, f32, f32, NULL, &fwd));
  assert_int_equal(tsr_dnnl_pd_softmax_bwd(g_engine, 0, 1, i32, i32, i32, fwd, NULL, &pd),
                   TSR_UNSUPPORTED);
  assert_null(pd);
  tsr_dnnl_pd_destroy(fwd);
  tsr_dnnl_md_destroy(i32);
  tsr_dnnl_md_destroy(f32);
}

// A backward pd outlives its forward hint, and the hint moving to another
// implementation, without touching freed memory: the library keeps a raw
// pointer to the hint and reads it on every next_impl (ASan runs of this
// test watch that).
static void test_hint_lifetime(void **state) {
  (void)state;
  const int64_t sd[4] = {1, 1, 4, 4}, dd[4] = {1, 1, 2, 2};
  tsr_dnnl_md *src = md_plain(4, sd), *dst = md_plain(4, dd);
  const tsr_dnnl_window w = {.strides = {2, 2}, .kernel = {2, 2}};
  tsr_dnnl_pd *fwd = NULL, *bwd = NULL;
  CHECK_OK(tsr_dnnl_pd_pool_fwd(g_engine, dnnl_forward_training, dnnl_pooling_max, src, dst, &w,
                                NULL, &fwd));
  CHECK_OK(tsr_dnnl_pd_pool_bwd(g_engine, dnnl_pooling_max, src, dst, &w, fwd, NULL, &bwd));
  // Walk the hint away and free it before any primitive (whose cache entry
  // would keep the implementation alive) exists.
  while (tsr_dnnl_pd_next_impl(fwd) == TSR_OK) {
  }
  tsr_dnnl_pd_destroy(fwd);

  // A fresh forward pd on the same first implementation makes the workspace.
  CHECK_OK(tsr_dnnl_pd_pool_fwd(g_engine, dnnl_forward_training, dnnl_pooling_max, src, dst, &w,
                                NULL, &fwd));
  float x[16], y[4];
  for (int i = 0; i < 16; ++i) x[i] = (float)((i * 7) % 16);
  tsr_dnnl_md *ws_md = NULL;
  CHECK_OK(tsr_dnnl_pd_arg_md(fwd, DNNL_ARG_WORKSPACE, &ws_md));
  void *ws = calloc(1, tsr_dnnl_md_bytes(ws_md));
  assert_non_null(ws);
  tsr_dnnl_md_destroy(ws_md);
  const int fids[3] = {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_WORKSPACE};
  void *fbufs[3] = {x, y, ws};
  run_pd(fwd, 3, fids, fbufs);
  tsr_dnnl_pd_destroy(fwd);
  // x = (7i mod 16): windows hold {0,7,12,3}, {14,5,10,1}, {8,15,4,11}, {6,13,2,9}.
  const float want_y[4] = {12, 14, 15, 13};
  expect_floats(y, want_y, 4, 0.0f);

  const float dy[4] = {1, 2, 3, 4};
  float dx[16];
  const int bids[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WORKSPACE, DNNL_ARG_DIFF_SRC};
  void *bbufs[3] = {(void *)dy, ws, dx};
  run_pd(bwd, 3, bids, bbufs);
  float want_dx[16] = {0};
  want_dx[4] = 1;   // 12 sits at (1,0)
  want_dx[2] = 2;   // 14 at (0,2)
  want_dx[9] = 3;   // 15 at (2,1)
  want_dx[11] = 4;  // 13 at (2,3)
  expect_floats(dx, want_dx, 16, 0.0f);
  assert_true(walk_impls(bwd) >= 1);
  tsr_dnnl_pd_destroy(bwd);
  free(ws);
  tsr_dnnl_md_destroy(src);
  tsr_dnnl_md_destroy(dst);
}

// --- argument checks ----------------------------------------------------------

static void test_null_arguments(void **state) {
  (void)state;
  assert_int_equal(tsr_dnnl_pd_next_impl(NULL), TSR_INVALID_ARGUMENT);
  assert_string_equal(tsr_dnnl_pd_impl_name(NULL), "");
  assert_null(tsr_dnnl_pd_handle(NULL));
  tsr_dnnl_pd_destroy(NULL);
  tsr_dnnl_md *md = NULL;
  assert_int_equal(tsr_dnnl_pd_arg_md(NULL, DNNL_ARG_SRC, &md), TSR_INVALID_ARGUMENT);
  dnnl_primitive_t prim = NULL;
  assert_int_equal(tsr_dnnl_primitive_create(NULL, &prim), TSR_INVALID_ARGUMENT);
  dnnl_memory_t mem = NULL;
  assert_int_equal(tsr_dnnl_memory_create(NULL, g_engine, NULL, &mem), TSR_INVALID_ARGUMENT);
  const int64_t dims[4] = {1, 1, 4, 4};
  tsr_dnnl_md *x = md_plain(4, dims);
  const tsr_dnnl_window w = {.strides = {1, 1}, .kernel = {2, 2}};
  tsr_dnnl_pd *pd = NULL;
  // Backward creators need their forward hint.
  assert_int_equal(tsr_dnnl_pd_pool_bwd(g_engine, dnnl_pooling_max, x, x, &w, NULL, NULL, &pd),
                   TSR_INVALID_ARGUMENT);
  assert_null(pd);
  // Memory without a buffer yet, attached later.
  CHECK_OK(tsr_dnnl_memory_create(x, g_engine, DNNL_MEMORY_NONE, &mem));
  float buf[16];
  assert_int_equal(dnnl_memory_set_data_handle(mem, buf), dnnl_success);
  dnnl_memory_destroy(mem);
  tsr_dnnl_md_destroy(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_md),
      cmocka_unit_test(test_attr),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_matmul_unsupported),
      cmocka_unit_test(test_matmul_post_ops),
      cmocka_unit_test(test_reorder),
      cmocka_unit_test(test_concat_sum),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_conv),
      cmocka_unit_test(test_pool),
      cmocka_unit_test(test_eltwise),
      cmocka_unit_test(test_layer_norm),
      cmocka_unit_test(test_batch_norm),
      cmocka_unit_test(test_binary_reduction),
      cmocka_unit_test(test_no_implementation),
      cmocka_unit_test(test_hint_lifetime),
      cmocka_unit_test(test_null_arguments),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
