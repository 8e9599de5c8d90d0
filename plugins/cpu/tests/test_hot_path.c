// The hot path allocates nothing: this program replaces malloc and friends
// for the whole process and counts the calls made while 10,000 eager ops run
// (plan_execute of cached plans, alloc and free of cached sizes).
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "test_host.h"
#include "test_util.h"

// glibc's own entry points, which the replacements below forward to.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *ptr);

static _Atomic int g_counting;
static _Atomic uint64_t g_calls;

static void count_call(void) {
  if (atomic_load_explicit(&g_counting, memory_order_relaxed)) atomic_fetch_add(&g_calls, 1);
}

void *malloc(size_t size) {
  count_call();
  return __libc_malloc(size);
}
void *calloc(size_t count, size_t size) {
  count_call();
  return __libc_calloc(count, size);
}
void *realloc(void *ptr, size_t size) {
  count_call();
  return __libc_realloc(ptr, size);
}
void free(void *ptr) {
  if (ptr != NULL) count_call();
  __libc_free(ptr);
}
int posix_memalign(void **out, size_t alignment, size_t size) {
  count_call();
  *out = __libc_memalign(alignment, size);
  return *out == NULL ? 12 : 0;
}
void *aligned_alloc(size_t alignment, size_t size) {
  count_call();
  return __libc_memalign(alignment, size);
}

typedef struct prepared {
  tsr_plugin_plan *plan;
  tsr_exec_args args;
  tsr_tensor_desc descs[4];
  tsr_plugin_buffer *workspace;
} prepared;

static void prepare(prepared *p, int32_t op, const void *attrs, tt_tensor *const *in, int32_t nin,
                    tt_tensor *out) {
  memset(p, 0, sizeof(*p));
  for (int32_t i = 0; i < nin; ++i) p->descs[i] = in[i]->desc;
  p->descs[nin] = out->desc;
  tsr_op_signature sig = {sizeof(sig), op, 0, nin, 1, p->descs, p->descs + nin, attrs, 0, 0};
  assert_int_equal(tt_api->plan_create(&sig, &p->plan), TSR_OK);
  tsr_plan_info info = {.struct_size = sizeof(info)};
  assert_int_equal(tt_api->plan_info_get(p->plan, &info), TSR_OK);
  p->args = (tsr_exec_args){.struct_size = sizeof(tsr_exec_args), .num_inputs = nin,
                            .num_outputs = 1, .inputs = p->descs, .outputs = p->descs + nin};
  if (info.workspace_bytes > 0) {
    assert_int_equal(tt_api->buffer_alloc(0, info.workspace_bytes, NULL, &p->workspace), TSR_OK);
    p->args.workspace = p->workspace;
    p->args.workspace_bytes = info.workspace_bytes;
  }
}

static void release(prepared *p) {
  if (p->workspace != NULL) tt_api->buffer_free(p->workspace, NULL);
  tt_api->plan_destroy(p->plan);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void test_ten_thousand_eager_ops_call_no_allocator(void **state) {
  (void)state;
  const int64_t tiny[] = {16}, big[] = {300, 400}, mat[] = {96, 96};
  tt_tensor a, b, out, ba, bb, bout, ma, mb, mout;
  tt_tensor_make(&a, TSR_FLOAT32, 1, tiny, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 1, tiny, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 1, tiny, NULL, 0);
  tt_tensor_make(&ba, TSR_FLOAT32, 2, big, NULL, 0);
  tt_tensor_make(&bb, TSR_FLOAT32, 2, big, NULL, 0);
  tt_tensor_make(&bout, TSR_FLOAT32, 2, big, NULL, 0);
  tt_tensor_make(&ma, TSR_FLOAT32, 2, mat, NULL, 0);
  tt_tensor_make(&mb, TSR_FLOAT32, 2, mat, NULL, 0);
  tt_tensor_make(&mout, TSR_FLOAT32, 2, mat, NULL, 0);
  tt_fill(&a, 1, -1, 1);
  tt_fill(&b, 2, -1, 1);
  tt_fill(&ba, 3, -1, 1);
  tt_fill(&bb, 4, -1, 1);
  tt_fill(&ma, 5, -1, 1);
  tt_fill(&mb, 6, -1, 1);
  tsr_binary_attrs add = {sizeof(add), TSR_BINARY_ADD, 0, 1.0};
  tsr_unary_attrs relu = {sizeof(relu), TSR_UNARY_RELU, 0, 0.0};
  tsr_reduce_attrs sum = {sizeof(sum), TSR_REDUCE_SUM, 1u};
  const int64_t one[] = {1};
  tt_tensor scalar;
  tt_tensor_make(&scalar, TSR_FLOAT32, 1, one, NULL, 0);
  prepared p_add, p_relu, p_big, p_mm, p_sum;
  tt_tensor *ab[] = {&a, &b}, *aa[] = {&a}, *big_ab[] = {&ba, &bb}, *mm[] = {&ma, &mb};
  prepare(&p_add, TSR_OP_BINARY, &add, ab, 2, &out);
  prepare(&p_relu, TSR_OP_UNARY, &relu, aa, 1, &out);
  prepare(&p_big, TSR_OP_BINARY, &add, big_ab, 2, &bout);
  prepare(&p_mm, TSR_OP_MATMUL, NULL, mm, 2, &mout);
  prepare(&p_sum, TSR_OP_REDUCE, &sum, aa, 1, &scalar);
  tsr_plugin_stream *stream = NULL;
  assert_int_equal(tt_api->stream_create(0, 0, &stream), TSR_OK);
  // Warm-up: every size class used below holds a cached block.
  tsr_plugin_buffer *warm = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 1000, NULL, &warm), TSR_OK);
  assert_int_equal(tt_api->buffer_free(warm, NULL), TSR_OK);

  atomic_store(&g_calls, 0);
  atomic_store(&g_counting, 1);
  int failures = 0;
  for (int i = 0; i < 10000; ++i) {
    failures += tt_api->plan_execute(p_add.plan, &p_add.args, stream) != TSR_OK;
    failures += tt_api->plan_execute(p_relu.plan, &p_relu.args, stream) != TSR_OK;
    failures += tt_api->plan_execute(p_sum.plan, &p_sum.args, stream) != TSR_OK;
    tsr_plugin_buffer *buffer = NULL;
    failures += tt_api->buffer_alloc(0, 1000, stream, &buffer) != TSR_OK;
    failures += tt_api->buffer_free(buffer, stream) != TSR_OK;
    if (i % 100 == 0) {
      failures += tt_api->plan_execute(p_big.plan, &p_big.args, stream) != TSR_OK;
      failures += tt_api->plan_execute(p_mm.plan, &p_mm.args, stream) != TSR_OK;
    }
  }
  atomic_store(&g_counting, 0);
  assert_int_equal(failures, 0);
  assert_int_equal(atomic_load(&g_calls), 0);

  // What a tiny op costs inside ref (informational: the eager budget is
  // ~200 ns per op in all).
  double t0 = now_ns();
  for (int i = 0; i < 100000; ++i) tt_api->plan_execute(p_add.plan, &p_add.args, stream);
  double per_op = (now_ns() - t0) / 100000;
  printf("ref: 16-element float32 add, plan_execute: %.1f ns per op (%d threads)\n", per_op,
         (int)tsr_test_host_get()->thread_count(NULL));

  tt_api->stream_destroy(stream);
  release(&p_add);
  release(&p_relu);
  release(&p_big);
  release(&p_mm);
  release(&p_sum);
  tt_tensor *all[] = {&a, &b, &out, &ba, &bb, &bout, &ma, &mb, &mout, &scalar};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) tt_tensor_free(all[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ten_thousand_eager_ops_call_no_allocator),
  };
  int failed = cmocka_run_group_tests_name("hot path, serial host", tests, tt_setup_serial,
                                           tt_teardown);
  failed += cmocka_run_group_tests_name("hot path, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
