// Unit tests of the plugin kit, through a table it fills and a test host
// that keeps the last message.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tessera/plugin_kit.h"

static char g_message[1024];

static void host_log(void *ctx, tsr_log_level_t level, const char *message) {
  (void)ctx;
  (void)level;
  (void)message;
}

static tsr_status host_error_set(void *ctx, tsr_status code, const char *format, ...) {
  (void)ctx;
  va_list ap;
  va_start(ap, format);
  vsnprintf(g_message, sizeof(g_message), format, ap);
  va_end(ap);
  return code;
}

static void *host_mem_alloc(void *ctx, size_t bytes, size_t alignment) {
  (void)ctx;
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  return aligned_alloc(alignment, rounded > 0 ? rounded : alignment);
}

static void host_mem_free(void *ctx, void *ptr) {
  (void)ctx;
  free(ptr);
}

static tsr_host_api g_host = {
    .struct_size = sizeof(tsr_host_api),
    .abi_major = TSR_ABI_VERSION_MAJOR,
    .abi_minor = TSR_ABI_VERSION_MINOR,
    .log = host_log,
    .error_set = host_error_set,
    .mem_alloc = host_mem_alloc,
    .mem_free = host_mem_free,
};

static tsr_plugin_api g_api;

// out = in (float32, same shape): the kernel of the declared COPY below.
static tsr_status copy_kernel(const tsr_kit_call *call) {
  memcpy(call->outputs[0], call->inputs[0], (size_t)call->numel * sizeof(float));
  return TSR_OK;
}

static const tsr_kit_op g_ops[] = {
    {.op = TSR_OP_COPY, .dtypes = TSR_DTYPE_BIT(TSR_FLOAT32), .kernel = copy_kernel,
     .flags = TSR_KIT_CONTIGUOUS | TSR_KIT_SAME_SHAPE, .engine = "kit-test:copy"},
    {.op = TSR_OP_UNARY, .dtypes = TSR_DTYPE_BIT(TSR_FLOAT32), .kernel = copy_kernel,
     .selectors = TSR_KIT_SELECTOR(TSR_UNARY_RELU)},
};

static int setup(void **state) {
  (void)state;
  if (tsr_kit_entry_begin("kittest", &g_host) != TSR_OK)
    return -1;
  tsr_kit_table_init(&g_api, "1.0", "tests", "kit unit tests");
  tsr_kit_device_desc device = {.name = "kit test device"};
  tsr_kit_host_device_set(&g_api, &device);
  tsr_kit_ops_set(&g_api, g_ops, 2);
  return 0;
}

static tsr_tensor_desc desc(tsr_dtype_t dtype, int32_t rank, const int64_t *sizes) {
  tsr_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = dtype;
  d.rank = rank;
  int64_t stride = 1;
  for (int32_t k = rank - 1; k >= 0; --k) {
    d.sizes[k] = sizes[k];
    d.strides[k] = stride;
    stride *= sizes[k];
  }
  d.alias_group = -1;
  return d;
}

static tsr_op_signature signature(tsr_op_id_t op, int32_t n_in, const tsr_tensor_desc *in,
                                  const tsr_tensor_desc *out, const void *attrs) {
  tsr_op_signature s;
  memset(&s, 0, sizeof(s));
  s.struct_size = sizeof(s);
  s.op = op;
  s.num_inputs = n_in;
  s.num_outputs = 1;
  s.inputs = in;
  s.outputs = out;
  s.attrs = attrs;
  return s;
}

static void test_the_entry_check_refuses_what_abi_md_refuses(void **state) {
  (void)state;
  assert_int_equal(tsr_kit_entry_begin("x", NULL), TSR_INVALID_ARGUMENT);
  tsr_host_api host = g_host;
  host.abi_major = TSR_ABI_VERSION_MAJOR + 1;
  assert_int_equal(tsr_kit_entry_begin("x", &host), TSR_ABI_MISMATCH);
  host = g_host;
  host.struct_size = offsetof(tsr_host_api, mem_alloc);
  assert_int_equal(tsr_kit_entry_begin("x", &host), TSR_ABI_MISMATCH);
  host = g_host;
  host.error_set = NULL;
  assert_int_equal(tsr_kit_entry_begin("x", &host), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_kit_entry_begin("kittest", &g_host), TSR_OK);
  assert_string_equal(g_api.name, "kittest");
  assert_int_equal(g_api.struct_size, sizeof(tsr_plugin_api));
  assert_int_equal(tsr_kit_error(TSR_UNSUPPORTED, "no %s", "way"), TSR_UNSUPPORTED);
  assert_string_equal(g_message, "kittest: no way");
}

static void test_out_copy_writes_only_what_the_callers_struct_holds(void **state) {
  (void)state;
  tsr_device_props value;
  memset(&value, 0x5a, sizeof(value));
  value.struct_size = sizeof(value);
  unsigned char out[sizeof(tsr_device_props) + 8];
  memset(out, 0, sizeof(out));
  size_t short_size = offsetof(tsr_device_props, memory_bytes);  // struct_size and name only
  memcpy(out, &short_size, sizeof(short_size));
  tsr_kit_out_copy(out, &value, sizeof(value));
  size_t kept;
  memcpy(&kept, out, sizeof(kept));
  assert_int_equal(kept, short_size);
  assert_int_equal(out[sizeof(size_t)], 0x5a);  // name written
  for (size_t i = short_size; i < sizeof(out); ++i) assert_int_equal(out[i], 0);
  assert_string_equal(tsr_kit_dtype_name(TSR_BFLOAT16), "bfloat16");
  assert_string_equal(tsr_kit_dtype_name(99), "unknown");
}

// plan_info_get's answer: refused with a message for NULL or a struct_size
// too small to hold itself; a short caller struct gets only its fields.
static void test_plan_info_answer_checks_and_clamps(void **state) {
  (void)state;
  const tsr_plan_info info = {.struct_size = 999, .engine = "kit-test:x", .workspace_bytes = 64,
                              .saved_state_bytes = 8, .flags = TSR_PLAN_INFO_DETERMINISTIC};
  g_message[0] = '\0';
  assert_int_equal(tsr_kit_plan_info_answer(&g_host, &info, NULL), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(g_message, "plan_info_get"));
  tsr_plan_info tiny;
  memset(&tiny, 0, sizeof(tiny));
  tiny.struct_size = sizeof(size_t) - 1;
  assert_int_equal(tsr_kit_plan_info_answer(&g_host, &info, &tiny), TSR_INVALID_ARGUMENT);
  tsr_plan_info out;
  memset(&out, 0x77, sizeof(out));
  out.struct_size = offsetof(tsr_plan_info, workspace_bytes);  // struct_size and engine only
  assert_int_equal(tsr_kit_plan_info_answer(&g_host, &info, &out), TSR_OK);
  assert_int_equal(out.struct_size, offsetof(tsr_plan_info, workspace_bytes));
  assert_string_equal(out.engine, "kit-test:x");
  unsigned char untouched;
  memcpy(&untouched, (unsigned char *)&out + offsetof(tsr_plan_info, workspace_bytes), 1);
  assert_int_equal(untouched, 0x77);
  out.struct_size = sizeof(out);
  assert_int_equal(tsr_kit_plan_info_answer(&g_host, &info, &out), TSR_OK);
  assert_int_equal(out.struct_size, sizeof(out));
  assert_int_equal(out.workspace_bytes, 64);
  assert_int_equal(out.saved_state_bytes, 8);
  assert_int_equal(out.flags, TSR_PLAN_INFO_DETERMINISTIC);
}

static void test_selectors_name_function_activation_and_bias(void **state) {
  (void)state;
  int64_t sizes[2] = {2, 3};
  tsr_tensor_desc d = desc(TSR_FLOAT32, 2, sizes);
  tsr_unary_attrs relu = {.struct_size = sizeof(relu), .fn = TSR_UNARY_RELU};
  tsr_op_signature s = signature(TSR_OP_UNARY, 1, &d, &d, &relu);
  int unknown = 1;
  assert_int_equal(tsr_kit_selectors_of(&s, &unknown), TSR_KIT_SELECTOR(TSR_UNARY_RELU));
  assert_int_equal(unknown, 0);
  relu.fn = TSR_UNARY_FN_COUNT;  // from a newer catalogue
  assert_int_equal(tsr_kit_selectors_of(&s, &unknown), 0);
  assert_int_equal(unknown, 1);
  tsr_matmul_attrs mm = {.struct_size = sizeof(mm), .alpha = 1, .activation = TSR_ACTIVATION_GELU,
                         .has_bias = 1};
  s = signature(TSR_OP_MATMUL, 2, &d, &d, &mm);
  assert_int_equal(tsr_kit_selectors_of(&s, &unknown),
                   TSR_KIT_SELECTOR(TSR_ACTIVATION_GELU) | TSR_KIT_SELECTOR(TSR_ACTIVATION_COUNT));
  mm.activation = TSR_ACTIVATION_COUNT;  // the bias's index is no activation
  tsr_kit_selectors_of(&s, &unknown);
  assert_int_equal(unknown, 1);
  // A struct too short to hold |fn| means the default, NEG.
  tsr_unary_attrs old = {.struct_size = sizeof(size_t), .fn = TSR_UNARY_RELU};
  s = signature(TSR_OP_UNARY, 1, &d, &d, &old);
  assert_int_equal(tsr_kit_selectors_of(&s, NULL), TSR_KIT_SELECTOR(TSR_UNARY_NEG));
}

static void test_the_catalogue_rules_tell_forbidden_from_unknown(void **state) {
  (void)state;
  int64_t s23[2] = {2, 3}, s13[2] = {1, 3}, s32[2] = {3, 2}, s43[2] = {4, 3}, s22[2] = {2, 2};
  tsr_tensor_desc a = desc(TSR_FLOAT32, 2, s23), b = desc(TSR_FLOAT32, 2, s13);
  tsr_tensor_desc ins[2] = {a, b};
  tsr_tensor_desc out = desc(TSR_FLOAT32, 2, s23);
  tsr_binary_attrs add = {.struct_size = sizeof(add), .fn = TSR_BINARY_ADD, .alpha = 1};
  tsr_op_signature s = signature(TSR_OP_BINARY, 2, ins, &out, &add);
  assert_int_equal(tsr_kit_signature_check(&s), TSR_OK);  // [1, 3] broadcasts
  ins[1] = desc(TSR_FLOAT32, 2, s43);
  assert_int_equal(tsr_kit_signature_check(&s), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(g_message, "input 1 sizes[0] is 4"));
  ins[1] = desc(TSR_INT32, 2, s23);
  assert_int_equal(tsr_kit_signature_check(&s), TSR_INVALID_ARGUMENT);
  ins[1] = b;
  ins[1].dtype = TSR_DTYPE_COUNT;
  assert_int_equal(tsr_kit_signature_check(&s), TSR_UNSUPPORTED);
  s.op = TSR_OP_COUNT;
  assert_int_equal(tsr_kit_signature_check(&s), TSR_UNSUPPORTED);
  s.op = TSR_OP_INVALID;
  assert_int_equal(tsr_kit_signature_check(&s), TSR_INVALID_ARGUMENT);
  // MATMUL: [2 x 3] @ [3 x 2] -> [2 x 2]; a wrong K is forbidden.
  tsr_tensor_desc mm_in[2] = {a, desc(TSR_FLOAT32, 2, s32)};
  tsr_tensor_desc mm_out = desc(TSR_FLOAT32, 2, s22);
  tsr_matmul_attrs mm = {.struct_size = sizeof(mm), .alpha = 1};
  s = signature(TSR_OP_MATMUL, 2, mm_in, &mm_out, &mm);
  assert_int_equal(tsr_kit_signature_check(&s), TSR_OK);
  mm_in[1] = desc(TSR_FLOAT32, 2, s43);
  assert_int_equal(tsr_kit_signature_check(&s), TSR_INVALID_ARGUMENT);
  // REDUCE over axis 0: [2, 3] -> [1, 3].
  tsr_reduce_attrs sum = {.struct_size = sizeof(sum), .fn = TSR_REDUCE_SUM, .axes_mask = 1};
  tsr_tensor_desc r_out = desc(TSR_FLOAT32, 2, s13);
  s = signature(TSR_OP_REDUCE, 1, &a, &r_out, &sum);
  assert_int_equal(tsr_kit_signature_check(&s), TSR_OK);
  sum.axes_mask = 2;
  assert_int_equal(tsr_kit_signature_check(&s), TSR_INVALID_ARGUMENT);
}

static void test_declared_ops_are_supported_and_the_rest_refused(void **state) {
  (void)state;
  int64_t s23[2] = {2, 3}, s13[2] = {1, 3};
  tsr_tensor_desc x = desc(TSR_FLOAT32, 2, s23), out = desc(TSR_FLOAT32, 2, s23);
  tsr_op_signature s = signature(TSR_OP_COPY, 1, &x, &out, NULL);
  assert_int_equal(g_api.op_supports(&s), TSR_OK);
  tsr_tensor_desc small = desc(TSR_FLOAT32, 2, s13);  // valid broadcast, not declared
  s = signature(TSR_OP_COPY, 1, &small, &out, NULL);
  assert_int_equal(g_api.op_supports(&s), TSR_UNSUPPORTED);
  assert_non_null(strstr(g_message, "broadcasting is not implemented"));
  tsr_tensor_desc f64 = desc(TSR_FLOAT64, 2, s23), out64 = desc(TSR_FLOAT64, 2, s23);
  s = signature(TSR_OP_COPY, 1, &f64, &out64, NULL);
  assert_int_equal(g_api.op_supports(&s), TSR_UNSUPPORTED);
  assert_non_null(strstr(g_message, "dtype is not implemented"));
  tsr_unary_attrs neg = {.struct_size = sizeof(neg), .fn = TSR_UNARY_NEG};
  s = signature(TSR_OP_UNARY, 1, &x, &out, &neg);
  assert_int_equal(g_api.op_supports(&s), TSR_UNSUPPORTED);
  assert_non_null(strstr(g_message, "selector value is not implemented"));
  neg.fn = TSR_UNARY_RELU;
  assert_int_equal(g_api.op_supports(&s), TSR_OK);
  // Forbidden: op_supports says unsupported, plan_create says invalid.
  tsr_tensor_desc wrong = desc(TSR_FLOAT32, 2, (int64_t[]){4, 3});
  s = signature(TSR_OP_UNARY, 1, &wrong, &out, &neg);
  assert_int_equal(g_api.op_supports(&s), TSR_UNSUPPORTED);
  tsr_plugin_plan *plan = (tsr_plugin_plan *)&s;
  assert_int_equal(g_api.plan_create(&s, &plan), TSR_INVALID_ARGUMENT);
  assert_null(plan);
  assert_int_equal(g_api.buffer_alloc == NULL, 0);
}

static void test_a_plan_runs_its_kernel_on_host_buffers(void **state) {
  (void)state;
  int64_t s23[2] = {2, 3};
  tsr_tensor_desc x = desc(TSR_FLOAT32, 2, s23), out = desc(TSR_FLOAT32, 2, s23);
  tsr_op_signature s = signature(TSR_OP_COPY, 1, &x, &out, NULL);
  tsr_plugin_plan *plan = NULL;
  assert_int_equal(g_api.plan_create(&s, &plan), TSR_OK);
  tsr_plan_info info = {.struct_size = sizeof(info)};
  assert_int_equal(g_api.plan_info_get(plan, &info), TSR_OK);
  assert_string_equal(info.engine, "kit-test:copy");
  assert_true(info.flags & TSR_PLAN_INFO_DETERMINISTIC);

  tsr_plugin_buffer *src = NULL, *dst = NULL;
  tsr_plugin_stream *stream = NULL;
  assert_int_equal(g_api.stream_create(0, 0, &stream), TSR_OK);
  assert_int_equal(g_api.buffer_alloc(0, 64, stream, &src), TSR_OK);
  assert_int_equal(g_api.buffer_alloc(0, 24, stream, &dst), TSR_OK);
  float values[8] = {9, 9, 1, 2, 3, 4, 5, 6};
  assert_int_equal(g_api.copy_host_to_device(stream, values, src, 0, sizeof(values)), TSR_OK);
  tsr_tensor_desc run_in = x, run_out = out;
  run_in.buffer = src;
  run_in.byte_offset = 2 * sizeof(float);
  run_out.buffer = dst;
  tsr_exec_args args = {.struct_size = sizeof(args), .num_inputs = 1, .num_outputs = 1,
                        .inputs = &run_in, .outputs = &run_out};
  assert_int_equal(g_api.plan_execute(plan, &args, stream), TSR_OK);
  float got[6] = {0};
  assert_int_equal(g_api.copy_device_to_host(stream, dst, 0, got, sizeof(got)), TSR_OK);
  for (int i = 0; i < 6; ++i) assert_true(got[i] == (float)(i + 1));
  assert_int_equal(g_api.plan_destroy(plan), TSR_OK);
  assert_int_equal(g_api.buffer_free(dst, stream), TSR_OK);
  assert_int_equal(g_api.buffer_free(src, stream), TSR_OK);
  assert_int_equal(g_api.stream_destroy(stream), TSR_OK);
}

static tsr_allocator_stats stats(void) {
  tsr_allocator_stats st;
  memset(&st, 0, sizeof(st));
  st.struct_size = sizeof(st);
  assert_int_equal(g_api.allocator_stats_get(0, &st), TSR_OK);
  return st;
}

static void test_the_allocator_reuses_a_freed_block_and_trims(void **state) {
  (void)state;
  assert_int_equal(g_api.allocator_trim(0), TSR_OK);
  tsr_allocator_stats start = stats();
  assert_int_equal(start.bytes_reserved, 0);
  tsr_plugin_buffer *b = NULL;
  assert_int_equal(g_api.buffer_alloc(0, 1000, NULL, &b), TSR_OK);
  assert_int_equal(g_api.buffer_free(b, NULL), TSR_OK);
  assert_int_equal(g_api.buffer_alloc(0, 900, NULL, &b), TSR_OK);  // the same 1 KiB class
  tsr_allocator_stats mid = stats();
  assert_int_equal(mid.system_alloc_count, start.system_alloc_count + 1);
  assert_int_equal(mid.bytes_in_use, 900);
  assert_int_equal(mid.bytes_reserved, 1024);
  assert_int_equal(g_api.buffer_free(b, NULL), TSR_OK);
  assert_int_equal(g_api.allocator_trim(0), TSR_OK);
  assert_int_equal(stats().bytes_reserved, 0);
  assert_int_equal(g_api.buffer_alloc(0, 1ull << 62, NULL, &b), TSR_OUT_OF_MEMORY);
  assert_int_equal(g_api.buffer_alloc(1, 16, NULL, &b), TSR_INVALID_ARGUMENT);
}

static void test_events_are_complete_and_time_what_lies_between(void **state) {
  (void)state;
  tsr_plugin_stream *stream = NULL;
  tsr_plugin_event *start = NULL, *end = NULL, *plain = NULL;
  assert_int_equal(g_api.stream_create(0, 0, &stream), TSR_OK);
  assert_int_equal(g_api.event_create(0, TSR_EVENT_TIMING, &start), TSR_OK);
  assert_int_equal(g_api.event_create(0, TSR_EVENT_TIMING, &end), TSR_OK);
  assert_int_equal(g_api.event_create(0, 0, &plain), TSR_OK);
  assert_int_equal(g_api.event_create(0, 0x80, &plain), TSR_INVALID_ARGUMENT);
  assert_int_equal(g_api.event_record(start, stream), TSR_OK);
  assert_int_equal(g_api.event_record(end, stream), TSR_OK);
  assert_int_equal(g_api.event_query(end), TSR_OK);
  float ms = -1;
  assert_int_equal(g_api.event_elapsed_get(start, end, &ms), TSR_OK);
  assert_true(ms >= 0.0f && ms < 1000.0f);
  assert_int_equal(g_api.event_elapsed_get(start, plain, &ms), TSR_INVALID_ARGUMENT);
  tsr_device_props props = {.struct_size = sizeof(props)};
  assert_int_equal(g_api.device_props_get(0, &props), TSR_OK);
  assert_string_equal(props.name, "kit test device");
  assert_true(props.flags & TSR_DEVICE_HOST_ACCESSIBLE);
  assert_int_equal(props.priority, TSR_DEVICE_PRIORITY_NONE);
  g_api.event_destroy(plain);
  g_api.event_destroy(end);
  g_api.event_destroy(start);
  g_api.stream_destroy(stream);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_entry_check_refuses_what_abi_md_refuses),
      cmocka_unit_test(test_out_copy_writes_only_what_the_callers_struct_holds),
      cmocka_unit_test(test_plan_info_answer_checks_and_clamps),
      cmocka_unit_test(test_selectors_name_function_activation_and_bias),
      cmocka_unit_test(test_the_catalogue_rules_tell_forbidden_from_unknown),
      cmocka_unit_test(test_declared_ops_are_supported_and_the_rest_refused),
      cmocka_unit_test(test_a_plan_runs_its_kernel_on_host_buffers),
      cmocka_unit_test(test_the_allocator_reuses_a_freed_block_and_trims),
      cmocka_unit_test(test_events_are_complete_and_time_what_lies_between),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
