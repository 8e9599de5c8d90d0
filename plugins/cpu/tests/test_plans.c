// The plan contract every op shares: signature validation with messages that
// name op, operand and value; plan_info; execute-time checks against the
// plan; one plan executing on several threads at once.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "test_host.h"
#include "test_util.h"

static const tsr_binary_attrs k_add = {sizeof(tsr_binary_attrs), TSR_BINARY_ADD, 0, 1.0};

// A signature for BINARY add over three descriptors.
static tsr_op_signature add_signature(tsr_tensor_desc *d) {
  tsr_op_signature sig = {sizeof(sig), TSR_OP_BINARY, 0, 2, 1, d, d + 2, &k_add,
                          TSR_MATH_STRICT, 0};
  return sig;
}

static tsr_tensor_desc plain_desc(int64_t n) {
  tsr_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = TSR_FLOAT32;
  d.rank = 1;
  d.sizes[0] = n;
  d.strides[0] = 1;
  d.alignment = 4;
  d.alias_group = -1;
  return d;
}

static void expect_refusal(tsr_op_signature *sig, tsr_status status, const char *message) {
  assert_int_equal(tt_api->op_supports(sig), status);
  if (strstr(tsr_test_host_error_get(), message) == NULL) {
    fail_msg("message \"%s\" lacks \"%s\"", tsr_test_host_error_get(), message);
  }
  tsr_plugin_plan *plan = (tsr_plugin_plan *)1;
  assert_int_equal(tt_api->plan_create(sig, &plan), status);
  assert_null(plan);
}

static void test_signature_checks_name_the_op_operand_and_value(void **state) {
  (void)state;
  tsr_tensor_desc d[3] = {plain_desc(8), plain_desc(8), plain_desc(8)};
  tsr_op_signature sig = add_signature(d);
  assert_int_equal(tt_api->op_supports(&sig), TSR_OK);

  d[1].rank = 9;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "binary: b rank 9 is outside 0..8");
  d[1] = plain_desc(8);
  d[0].sizes[0] = -2;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "binary: a sizes[0] is -2");
  d[0] = plain_desc(8);
  d[2].strides[0] = -1;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "binary: out strides[0] is -1");
  d[2] = plain_desc(8);
  d[0].dtype = 42;
  expect_refusal(&sig, TSR_UNSUPPORTED, "binary: a dtype 42");  // newer catalogue?
  d[0] = plain_desc(8);
  d[0].struct_size = 16;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "binary: a struct_size 16");
  d[0] = plain_desc(8);
  d[0].alignment = 12;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "alignment 12");
  d[0] = plain_desc(8);
  d[1].device = 2;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "b device 2");
  d[1] = plain_desc(8);
  // Byte sizes that overflow 63 bits.
  for (int i = 0; i < 3; ++i) {
    d[i].rank = 2;
    d[i].sizes[0] = d[i].sizes[1] = (int64_t)1 << 40;
    d[i].strides[0] = (int64_t)1 << 40;
    d[i].strides[1] = 1;
  }
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "more bytes than fit in 63 bits");
  for (int i = 0; i < 3; ++i) d[i] = plain_desc(8);

  sig.math_mode = 7;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "math_mode 7");
  sig.math_mode = TSR_MATH_ALLOW_TF32;
  assert_int_equal(tt_api->op_supports(&sig), TSR_OK);
  sig.flags = 0x80;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "flags 0x80");
  sig.flags = TSR_PLAN_REQUIRE_DETERMINISM;
  assert_int_equal(tt_api->op_supports(&sig), TSR_OK);
  sig.num_inputs = 3;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "binary: num_inputs is 3, expected 2");
  sig.num_inputs = 16;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "at most 16 operands");
  sig.num_inputs = 2;
  sig.inputs = NULL;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "inputs is NULL");
  sig.inputs = d;
  sig.device = 1;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "device 1");
  sig.device = 0;
  sig.struct_size = 8;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "signature struct_size 8");
  assert_int_equal(tt_api->op_supports(NULL), TSR_INVALID_ARGUMENT);
}

static void test_plan_info_reports_engine_workspace_and_determinism(void **state) {
  (void)state;
  tsr_tensor_desc d[3] = {plain_desc(8), plain_desc(8), plain_desc(8)};
  tsr_op_signature sig = add_signature(d);
  tsr_plugin_plan *plan = NULL;
  assert_int_equal(tt_api->plan_create(&sig, &plan), TSR_OK);
  tsr_plan_info info = {.struct_size = sizeof(info)};
  assert_int_equal(tt_api->plan_info_get(plan, &info), TSR_OK);
  assert_string_equal(info.engine, "ref:elementwise");
  assert_int_equal(info.workspace_bytes, 0);
  assert_int_equal(info.saved_state_bytes, 0);
  assert_int_equal(info.flags, TSR_PLAN_INFO_DETERMINISTIC);
  struct { size_t struct_size; const char *engine; uint64_t canary; } old = {16, NULL, 9};
  assert_int_equal(tt_api->plan_info_get(plan, (tsr_plan_info *)&old), TSR_OK);
  assert_non_null(old.engine);
  assert_int_equal(old.canary, 9);
  assert_int_equal(tt_api->plan_destroy(plan), TSR_OK);

  const int64_t as[] = {200, 300}, bs[] = {300, 100}, os[] = {200, 100};
  tt_tensor a, b, out;
  tt_tensor_make(&a, TSR_FLOAT32, 2, as, NULL, 0);
  tt_tensor_make(&b, TSR_FLOAT32, 2, bs, NULL, 0);
  tt_tensor_make(&out, TSR_FLOAT32, 2, os, NULL, 0);
  tsr_tensor_desc md[3] = {a.desc, b.desc, out.desc};
  tsr_op_signature msig = {sizeof(msig), TSR_OP_MATMUL, 0, 2, 1, md, md + 2, NULL,
                           TSR_MATH_STRICT, TSR_PLAN_REQUIRE_DETERMINISM};
  assert_int_equal(tt_api->plan_create(&msig, &plan), TSR_OK);
  assert_int_equal(tt_api->plan_info_get(plan, &info), TSR_OK);
  assert_string_equal(info.engine, "ref:blocked-gemm");
  assert_true(info.workspace_bytes > 0);
  assert_int_equal(info.flags, TSR_PLAN_INFO_DETERMINISTIC);
  // Without its workspace the plan refuses to run.
  tsr_exec_args args = {.struct_size = sizeof(args), .num_inputs = 2, .num_outputs = 1,
                        .inputs = md, .outputs = md + 2};
  md[0].buffer = a.buffer;
  md[1].buffer = b.buffer;
  md[2].buffer = out.buffer;
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "needs a workspace"));
  tsr_plugin_buffer *ws = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, info.workspace_bytes, NULL, &ws), TSR_OK);
  args.workspace = ws;
  args.workspace_bytes = info.workspace_bytes - 1;
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_INVALID_ARGUMENT);
  args.workspace_bytes = info.workspace_bytes;
  args.workspace_offset = 1;  // then it runs past the buffer's end
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_INVALID_ARGUMENT);
  args.workspace_offset = 0;
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_OK);
  assert_int_equal(tt_api->buffer_free(ws, NULL), TSR_OK);
  assert_int_equal(tt_api->plan_destroy(plan), TSR_OK);
  tt_tensor_free(&a);
  tt_tensor_free(&b);
  tt_tensor_free(&out);
}

static void test_plan_execute_refuses_operands_that_differ_from_the_plan(void **state) {
  (void)state;
  tsr_tensor_desc d[3] = {plain_desc(8), plain_desc(8), plain_desc(8)};
  d[0].alignment = 16;
  tsr_op_signature sig = add_signature(d);
  tsr_plugin_plan *plan = NULL;
  assert_int_equal(tt_api->plan_create(&sig, &plan), TSR_OK);
  tsr_plugin_buffer *buf[3];
  for (int i = 0; i < 3; ++i) {
    assert_int_equal(tt_api->buffer_alloc(0, 64, NULL, &buf[i]), TSR_OK);
    d[i].buffer = buf[i];
  }
  tsr_exec_args args = {.struct_size = sizeof(args), .num_inputs = 2, .num_outputs = 1,
                        .inputs = d, .outputs = d + 2};
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_OK);

  tsr_tensor_desc saved[3];
  memcpy(saved, d, sizeof(saved));
#define EXPECT_MISMATCH(stmt, msg)                                                   \
  do {                                                                               \
    memcpy(d, saved, sizeof(saved));                                                 \
    stmt;                                                                            \
    assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_INVALID_ARGUMENT); \
    assert_non_null(strstr(tsr_test_host_error_get(), msg));                         \
  } while (0)
  EXPECT_MISMATCH(d[1].sizes[0] = 7, "binary b does not match the plan");
  EXPECT_MISMATCH(d[2].strides[0] = 2, "binary out does not match the plan");
  EXPECT_MISMATCH(d[0].dtype = TSR_INT32, "dtype, rank, sizes or strides differ");
  EXPECT_MISMATCH(d[0].alignment = 4, "less aligned");
  EXPECT_MISMATCH(d[1].byte_offset = 36, "past the buffer's end");
  EXPECT_MISMATCH(d[1].byte_offset = 2, "not a multiple of the dtype's size");
  EXPECT_MISMATCH(d[2].buffer = NULL, "buffer is NULL");
  EXPECT_MISMATCH((d[2].alias_group = d[0].alias_group = 4, d[2].buffer = d[0].buffer),
                  "alias groups differ from the plan's");
  EXPECT_MISMATCH(d[2].alias_group = d[0].alias_group = 4, "does not alias exactly");
  EXPECT_MISMATCH(args.num_inputs = 1, "takes 2 inputs and 1 outputs");
  args.num_inputs = 2;
  EXPECT_MISMATCH(args.struct_size = 8, "args struct_size 8");
  args.struct_size = sizeof(args);
#undef EXPECT_MISMATCH
  memcpy(d, saved, sizeof(saved));
  // A buffer that was freed is no longer live.
  tsr_plugin_buffer *dead = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 64, NULL, &dead), TSR_OK);
  assert_int_equal(tt_api->buffer_free(dead, NULL), TSR_OK);
  d[0].buffer = dead;
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_INVALID_ARGUMENT);
  d[0].buffer = buf[0];
  assert_int_equal(tt_api->plan_execute(NULL, &args, NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->plan_execute(plan, NULL, NULL), TSR_INVALID_ARGUMENT);
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_OK);
  for (int i = 0; i < 3; ++i) assert_int_equal(tt_api->buffer_free(buf[i], NULL), TSR_OK);
  assert_int_equal(tt_api->plan_destroy(plan), TSR_OK);
}

static void test_aliasing_is_allowed_only_in_place_and_only_exactly(void **state) {
  (void)state;
  tsr_tensor_desc d[3] = {plain_desc(8), plain_desc(8), plain_desc(8)};
  d[0].alias_group = d[2].alias_group = 1;
  tsr_op_signature sig = add_signature(d);
  assert_int_equal(tt_api->op_supports(&sig), TSR_OK);
  d[2].strides[0] = 2;
  expect_refusal(&sig, TSR_INVALID_ARGUMENT, "is not the same view");
  d[2].strides[0] = 1;
  // COMPARE is not in place.
  d[2].dtype = TSR_BOOL;
  tsr_compare_attrs eq = {sizeof(eq), TSR_COMPARE_EQ, 0};
  tsr_op_signature csig = {sizeof(csig), TSR_OP_COMPARE, 0, 2, 1, d, d + 2, &eq, 0, 0};
  expect_refusal(&csig, TSR_INVALID_ARGUMENT, "the op is not in place");
  // At execute time an aliased pair must really be the same view.
  d[2].dtype = TSR_FLOAT32;
  tsr_plugin_plan *plan = NULL;
  assert_int_equal(tt_api->plan_create(&sig, &plan), TSR_OK);
  tsr_plugin_buffer *a = NULL, *b = NULL;
  assert_int_equal(tt_api->buffer_alloc(0, 64, NULL, &a), TSR_OK);
  assert_int_equal(tt_api->buffer_alloc(0, 64, NULL, &b), TSR_OK);
  d[0].buffer = a;
  d[1].buffer = b;
  d[2].buffer = a;
  tsr_exec_args args = {.struct_size = sizeof(args), .num_inputs = 2, .num_outputs = 1,
                        .inputs = d, .outputs = d + 2};
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_OK);
  d[2].byte_offset = 4;
  assert_int_equal(tt_api->plan_execute(plan, &args, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_test_host_error_get(), "does not alias exactly"));
  assert_int_equal(tt_api->buffer_free(a, NULL), TSR_OK);
  assert_int_equal(tt_api->buffer_free(b, NULL), TSR_OK);
  assert_int_equal(tt_api->plan_destroy(plan), TSR_OK);
}

// Several threads run one plan, each on its own operands and workspace.
typedef struct concurrent_job {
  const tsr_plugin_plan *plan;
  tsr_tensor_desc d[3];
  tsr_plugin_buffer *workspace;
  uint64_t workspace_bytes;
  int iterations;
  tsr_status status;
} concurrent_job;

static void *concurrent_run(void *arg) {
  concurrent_job *job = arg;
  tsr_exec_args args = {.struct_size = sizeof(args), .num_inputs = 2, .num_outputs = 1,
                        .inputs = job->d, .outputs = job->d + 2, .workspace = job->workspace,
                        .workspace_bytes = job->workspace_bytes};
  tsr_plugin_stream *stream = NULL;
  job->status = tt_api->stream_create(0, 0, &stream);
  for (int i = 0; i < job->iterations && job->status == TSR_OK; ++i) {
    job->status = tt_api->plan_execute(job->plan, &args, stream);
  }
  if (stream != NULL) tt_api->stream_destroy(stream);
  return NULL;
}

static void test_one_plan_executes_on_several_threads_at_once(void **state) {
  (void)state;
  enum { kThreads = 4 };
  const int64_t as[] = {3, 96, 130}, bs[] = {3, 130, 70}, os[] = {3, 96, 70};
  tt_tensor a[kThreads], b[kThreads], out[kThreads], want;
  for (int t = 0; t < kThreads; ++t) {
    tt_tensor_make(&a[t], TSR_FLOAT32, 3, as, NULL, 0);
    tt_tensor_make(&b[t], TSR_FLOAT32, 3, bs, NULL, 0);
    tt_tensor_make(&out[t], TSR_FLOAT32, 3, os, NULL, 0);
    tt_fill(&a[t], 1, -1, 1);
    tt_fill(&b[t], 2, -1, 1);
  }
  tt_tensor_make(&want, TSR_FLOAT32, 3, os, NULL, 0);
  tt_tensor *in[] = {&a[0], &b[0]};
  tt_tensor *outs[] = {&want};
  assert_int_equal(tt_run(TSR_OP_MATMUL, NULL, in, 2, outs, 1, NULL), TSR_OK);

  tsr_tensor_desc sd[3] = {a[0].desc, b[0].desc, out[0].desc};
  tsr_op_signature sig = {sizeof(sig), TSR_OP_MATMUL, 0, 2, 1, sd, sd + 2, NULL, 0, 0};
  tsr_plugin_plan *plan = NULL;
  assert_int_equal(tt_api->plan_create(&sig, &plan), TSR_OK);
  tsr_plan_info info = {.struct_size = sizeof(info)};
  assert_int_equal(tt_api->plan_info_get(plan, &info), TSR_OK);
  concurrent_job jobs[kThreads];
  pthread_t threads[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    jobs[t] = (concurrent_job){plan, {a[t].desc, b[t].desc, out[t].desc}, NULL,
                               info.workspace_bytes, 20, TSR_OK};
    if (info.workspace_bytes > 0) {
      assert_int_equal(tt_api->buffer_alloc(0, info.workspace_bytes, NULL, &jobs[t].workspace),
                       TSR_OK);
    }
    pthread_create(&threads[t], NULL, concurrent_run, &jobs[t]);
  }
  for (int t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    assert_int_equal(jobs[t].status, TSR_OK);
    assert_memory_equal(out[t].base, want.base, sizeof(float) * 3 * 96 * 70);
    if (jobs[t].workspace != NULL) tt_api->buffer_free(jobs[t].workspace, NULL);
    tt_tensor_free(&a[t]);
    tt_tensor_free(&b[t]);
    tt_tensor_free(&out[t]);
  }
  tt_tensor_free(&want);
  assert_int_equal(tt_api->plan_destroy(plan), TSR_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_signature_checks_name_the_op_operand_and_value),
      cmocka_unit_test(test_plan_info_reports_engine_workspace_and_determinism),
      cmocka_unit_test(test_plan_execute_refuses_operands_that_differ_from_the_plan),
      cmocka_unit_test(test_aliasing_is_allowed_only_in_place_and_only_exactly),
      cmocka_unit_test(test_one_plan_executes_on_several_threads_at_once),
  };
  int failed = cmocka_run_group_tests_name("plans, serial host", tests, tt_setup_serial, tt_teardown);
  failed += cmocka_run_group_tests_name("plans, two-thread host", tests, tt_setup_two_threads,
                                        tt_teardown);
  return failed;
}
