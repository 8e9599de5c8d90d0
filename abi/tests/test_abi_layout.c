// The ABI's layout, pinned field by field for LP64 targets. A failure here is
// an ABI break: either revert it or record it in docs/abi.md and update the
// pinned numbers together with TSR_ABI_VERSION_*.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// After the standard headers it needs (cmocka.h includes none).
#include <cmocka.h>

#include "tessera/abi.h"
#include "tessera/ops.h"

#define FIELD(type, field, offset) assert_int_equal(offsetof(type, field), (offset))
#define SIZE(type, size) assert_int_equal(sizeof(type), (size))

static void test_abi_version_is_zero_three(void **state) {
  (void)state;
  assert_int_equal(TSR_ABI_VERSION_MAJOR, 0);
  assert_int_equal(TSR_ABI_VERSION_MINOR, 4);
  assert_string_equal(TSR_PLUGIN_ENTRY_NAME, "tsr_plugin_entry");
  assert_int_equal(TSR_MAX_RANK, 8);
  assert_int_equal(TSR_MAX_OPERANDS, 16);
  assert_int_equal(TSR_MAX_ALIGNMENT, 256);
}

static void test_abi_enum_values_are_stable(void **state) {
  (void)state;
  const int statuses[] = {TSR_OK,          TSR_INVALID_ARGUMENT, TSR_UNSUPPORTED, TSR_OUT_OF_MEMORY,
                          TSR_UNAVAILABLE, TSR_DEVICE_LOST,      TSR_NOT_FOUND,   TSR_ABI_MISMATCH,
                          TSR_INTERNAL,    TSR_NOT_READY,        TSR_STATUS_COUNT};
  for (int i = 0; i < (int)(sizeof(statuses) / sizeof(statuses[0])); ++i) {
    assert_int_equal(statuses[i], i);
  }
  const int dtypes[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_BFLOAT16, TSR_FLOAT16,
                        TSR_INT32,   TSR_INT64,   TSR_BOOL,     TSR_DTYPE_COUNT};
  for (int i = 0; i < (int)(sizeof(dtypes) / sizeof(dtypes[0])); ++i) {
    assert_int_equal(dtypes[i], i);
  }
  assert_int_equal(TSR_DTYPE_BIT(TSR_INT64), 32u);
  assert_int_equal(TSR_DEVICE_ASYNC, 1);
  assert_int_equal(TSR_DEVICE_EVENTS, 2);
  assert_int_equal(TSR_DEVICE_TIMING_EVENTS, 4);
  assert_int_equal(TSR_DEVICE_HOST_ACCESSIBLE, 8);
  assert_int_equal(TSR_EVENT_TIMING, 1);
  assert_int_equal(TSR_STREAM_IMPORT_TAKE_OWNERSHIP, 1);
  assert_int_equal(TSR_PLAN_REQUIRE_DETERMINISM, 1);
  assert_int_equal(TSR_PLAN_AUTOTUNE, 2);
  assert_int_equal(TSR_PLAN_INFO_DETERMINISTIC, 1);
  assert_int_equal(TSR_MATH_STRICT, 0);
  assert_int_equal(TSR_MATH_ALLOW_TF32, 1);
  assert_int_equal(TSR_MATH_ALLOW_REDUCED, 2);
  assert_int_equal(TSR_LOG_DEBUG, 0);
  assert_int_equal(TSR_LOG_ERROR, 3);
  assert_int_equal(sizeof(tsr_status), 4);
  assert_int_equal(sizeof(tsr_dtype_t), 4);
  assert_int_equal(sizeof(tsr_op_id_t), 4);
}

static void test_abi_tensor_desc_layout(void **state) {
  (void)state;
  FIELD(tsr_tensor_desc, struct_size, 0);
  FIELD(tsr_tensor_desc, dtype, 8);
  FIELD(tsr_tensor_desc, rank, 12);
  FIELD(tsr_tensor_desc, sizes, 16);
  FIELD(tsr_tensor_desc, strides, 80);
  FIELD(tsr_tensor_desc, byte_offset, 144);
  FIELD(tsr_tensor_desc, buffer, 152);
  FIELD(tsr_tensor_desc, device, 160);
  FIELD(tsr_tensor_desc, alignment, 164);
  FIELD(tsr_tensor_desc, storage_version, 168);
  FIELD(tsr_tensor_desc, alias_group, 176);
  FIELD(tsr_tensor_desc, reserved, 180);
  SIZE(tsr_tensor_desc, 184);
}

static void test_abi_host_api_layout(void **state) {
  (void)state;
  FIELD(tsr_host_api, struct_size, 0);
  FIELD(tsr_host_api, abi_major, 8);
  FIELD(tsr_host_api, abi_minor, 12);
  FIELD(tsr_host_api, ctx, 16);
  FIELD(tsr_host_api, log, 24);
  FIELD(tsr_host_api, error_set, 32);
  FIELD(tsr_host_api, mem_alloc, 40);
  FIELD(tsr_host_api, mem_free, 48);
  FIELD(tsr_host_api, parallel_for, 56);
  FIELD(tsr_host_api, thread_count, 64);
  FIELD(tsr_host_api, engine_cache_get, 72);
  FIELD(tsr_host_api, engine_cache_put, 80);
  SIZE(tsr_host_api, 88);
  assert_int_equal(TSR_ENGINE_CACHE_KEY_MAX, 1024);
  assert_int_equal(TSR_ENGINE_CACHE_CLASS_KEY_MAX, 256);
  assert_int_equal(TSR_ENGINE_CACHE_VALUE_MAX, 1024);
}

static void test_abi_device_and_allocator_structs_layout(void **state) {
  (void)state;
  FIELD(tsr_device_props, struct_size, 0);
  FIELD(tsr_device_props, name, 8);
  FIELD(tsr_device_props, memory_bytes, 16);
  FIELD(tsr_device_props, compute_units, 24);
  FIELD(tsr_device_props, flags, 28);
  FIELD(tsr_device_props, dtype_mask, 32);
  FIELD(tsr_device_props, base_alignment, 36);
  FIELD(tsr_device_props, priority, 40);
  FIELD(tsr_device_props, reserved, 44);
  SIZE(tsr_device_props, 48);

  FIELD(tsr_allocator_stats, struct_size, 0);
  FIELD(tsr_allocator_stats, bytes_in_use, 8);
  FIELD(tsr_allocator_stats, bytes_reserved, 16);
  FIELD(tsr_allocator_stats, peak_bytes_in_use, 24);
  FIELD(tsr_allocator_stats, alloc_count, 32);
  FIELD(tsr_allocator_stats, free_count, 40);
  FIELD(tsr_allocator_stats, system_alloc_count, 48);
  SIZE(tsr_allocator_stats, 56);
}

static void test_abi_kernel_structs_layout(void **state) {
  (void)state;
  FIELD(tsr_op_signature, struct_size, 0);
  FIELD(tsr_op_signature, op, 8);
  FIELD(tsr_op_signature, device, 12);
  FIELD(tsr_op_signature, num_inputs, 16);
  FIELD(tsr_op_signature, num_outputs, 20);
  FIELD(tsr_op_signature, inputs, 24);
  FIELD(tsr_op_signature, outputs, 32);
  FIELD(tsr_op_signature, attrs, 40);
  FIELD(tsr_op_signature, math_mode, 48);
  FIELD(tsr_op_signature, flags, 52);
  SIZE(tsr_op_signature, 56);

  FIELD(tsr_plan_info, struct_size, 0);
  FIELD(tsr_plan_info, engine, 8);
  FIELD(tsr_plan_info, workspace_bytes, 16);
  FIELD(tsr_plan_info, saved_state_bytes, 24);
  FIELD(tsr_plan_info, flags, 32);
  FIELD(tsr_plan_info, reserved, 36);
  SIZE(tsr_plan_info, 40);

  FIELD(tsr_exec_args, struct_size, 0);
  FIELD(tsr_exec_args, num_inputs, 8);
  FIELD(tsr_exec_args, num_outputs, 12);
  FIELD(tsr_exec_args, inputs, 16);
  FIELD(tsr_exec_args, outputs, 24);
  FIELD(tsr_exec_args, workspace, 32);
  FIELD(tsr_exec_args, workspace_offset, 40);
  FIELD(tsr_exec_args, workspace_bytes, 48);
  FIELD(tsr_exec_args, saved_state, 56);
  FIELD(tsr_exec_args, saved_state_offset, 64);
  FIELD(tsr_exec_args, saved_state_bytes, 72);
  SIZE(tsr_exec_args, 80);
}

static void test_abi_plugin_api_layout(void **state) {
  (void)state;
  FIELD(tsr_plugin_api, struct_size, 0);
  FIELD(tsr_plugin_api, abi_major, 8);
  FIELD(tsr_plugin_api, abi_minor, 12);
  FIELD(tsr_plugin_api, name, 16);
  FIELD(tsr_plugin_api, version, 24);
  FIELD(tsr_plugin_api, vendor, 32);
  FIELD(tsr_plugin_api, build_info, 40);
  FIELD(tsr_plugin_api, init, 48);
  FIELD(tsr_plugin_api, shutdown, 56);
  FIELD(tsr_plugin_api, probe, 64);
  FIELD(tsr_plugin_api, device_count_get, 72);
  FIELD(tsr_plugin_api, device_props_get, 80);
  FIELD(tsr_plugin_api, buffer_alloc, 88);
  FIELD(tsr_plugin_api, buffer_free, 96);
  FIELD(tsr_plugin_api, buffer_host_ptr_get, 104);
  FIELD(tsr_plugin_api, host_pinned_alloc, 112);
  FIELD(tsr_plugin_api, host_pinned_free, 120);
  FIELD(tsr_plugin_api, allocator_stats_get, 128);
  FIELD(tsr_plugin_api, allocator_trim, 136);
  FIELD(tsr_plugin_api, copy_host_to_device, 144);
  FIELD(tsr_plugin_api, copy_device_to_host, 152);
  FIELD(tsr_plugin_api, copy_device_to_device, 160);
  FIELD(tsr_plugin_api, stream_create, 168);
  FIELD(tsr_plugin_api, stream_destroy, 176);
  FIELD(tsr_plugin_api, stream_synchronize, 184);
  FIELD(tsr_plugin_api, stream_query, 192);
  FIELD(tsr_plugin_api, stream_wait_event, 200);
  FIELD(tsr_plugin_api, event_create, 208);
  FIELD(tsr_plugin_api, event_destroy, 216);
  FIELD(tsr_plugin_api, event_record, 224);
  FIELD(tsr_plugin_api, event_query, 232);
  FIELD(tsr_plugin_api, event_synchronize, 240);
  FIELD(tsr_plugin_api, event_elapsed_get, 248);
  FIELD(tsr_plugin_api, op_supports, 256);
  FIELD(tsr_plugin_api, plan_create, 264);
  FIELD(tsr_plugin_api, plan_info_get, 272);
  FIELD(tsr_plugin_api, plan_execute, 280);
  FIELD(tsr_plugin_api, plan_destroy, 288);
  FIELD(tsr_plugin_api, parallel_for, 296);
  FIELD(tsr_plugin_api, thread_count_get, 304);
  FIELD(tsr_plugin_api, stream_import, 312);
  SIZE(tsr_plugin_api, 320);
}

static void test_abi_op_attrs_layout(void **state) {
  (void)state;
  FIELD(tsr_fill_attrs, value, 8);
  SIZE(tsr_fill_attrs, 16);
  FIELD(tsr_unary_attrs, fn, 8);
  FIELD(tsr_unary_attrs, alpha, 16);
  SIZE(tsr_unary_attrs, 24);
  FIELD(tsr_binary_attrs, fn, 8);
  FIELD(tsr_binary_attrs, alpha, 16);
  SIZE(tsr_binary_attrs, 24);
  FIELD(tsr_compare_attrs, fn, 8);
  SIZE(tsr_compare_attrs, 16);
  FIELD(tsr_clamp_attrs, min, 8);
  FIELD(tsr_clamp_attrs, max, 16);
  FIELD(tsr_clamp_attrs, has_min, 24);
  FIELD(tsr_clamp_attrs, has_max, 28);
  SIZE(tsr_clamp_attrs, 32);
  FIELD(tsr_reduce_attrs, fn, 8);
  FIELD(tsr_reduce_attrs, axes_mask, 12);
  SIZE(tsr_reduce_attrs, 16);
  FIELD(tsr_arg_reduce_attrs, fn, 8);
  FIELD(tsr_arg_reduce_attrs, axis, 12);
  SIZE(tsr_arg_reduce_attrs, 16);
  FIELD(tsr_matmul_attrs, alpha, 8);
  FIELD(tsr_matmul_attrs, beta, 16);
  FIELD(tsr_matmul_attrs, activation, 24);
  FIELD(tsr_matmul_attrs, has_bias, 28);
  SIZE(tsr_matmul_attrs, 32);
  FIELD(tsr_conv2d_attrs, stride, 8);
  FIELD(tsr_conv2d_attrs, pad_before, 24);
  FIELD(tsr_conv2d_attrs, pad_after, 40);
  FIELD(tsr_conv2d_attrs, dilation, 56);
  FIELD(tsr_conv2d_attrs, groups, 72);
  FIELD(tsr_conv2d_attrs, activation, 80);
  FIELD(tsr_conv2d_attrs, has_bias, 84);
  SIZE(tsr_conv2d_attrs, 88);
  FIELD(tsr_pool2d_attrs, kind, 8);
  FIELD(tsr_pool2d_attrs, ceil_mode, 12);
  FIELD(tsr_pool2d_attrs, kernel, 16);
  FIELD(tsr_pool2d_attrs, stride, 32);
  FIELD(tsr_pool2d_attrs, pad_before, 48);
  FIELD(tsr_pool2d_attrs, pad_after, 64);
  FIELD(tsr_pool2d_attrs, dilation, 80);
  FIELD(tsr_pool2d_attrs, count_include_pad, 96);
  SIZE(tsr_pool2d_attrs, 104);
  FIELD(tsr_softmax_attrs, axis, 8);
  FIELD(tsr_softmax_attrs, log, 12);
  SIZE(tsr_softmax_attrs, 16);
  FIELD(tsr_layer_norm_attrs, axis, 8);
  FIELD(tsr_layer_norm_attrs, has_affine, 12);
  FIELD(tsr_layer_norm_attrs, eps, 16);
  SIZE(tsr_layer_norm_attrs, 24);
  FIELD(tsr_batch_norm_attrs, eps, 8);
  FIELD(tsr_batch_norm_attrs, momentum, 16);
  FIELD(tsr_batch_norm_attrs, training, 24);
  SIZE(tsr_batch_norm_attrs, 32);
  FIELD(tsr_concat_attrs, axis, 8);
  SIZE(tsr_concat_attrs, 16);
  FIELD(tsr_pad_attrs, mode, 8);
  FIELD(tsr_pad_attrs, pad_before, 16);
  FIELD(tsr_pad_attrs, pad_after, 80);
  FIELD(tsr_pad_attrs, value, 144);
  SIZE(tsr_pad_attrs, 152);
  FIELD(tsr_gather_attrs, axis, 8);
  SIZE(tsr_gather_attrs, 16);
  FIELD(tsr_rng_fill_attrs, distribution, 8);
  FIELD(tsr_rng_fill_attrs, seed, 16);
  FIELD(tsr_rng_fill_attrs, offset, 24);
  FIELD(tsr_rng_fill_attrs, a, 32);
  FIELD(tsr_rng_fill_attrs, b, 40);
  SIZE(tsr_rng_fill_attrs, 48);
  FIELD(tsr_cross_entropy_attrs, reduction, 8);
  FIELD(tsr_cross_entropy_attrs, ignore_index, 16);
  FIELD(tsr_cross_entropy_attrs, label_smoothing, 24);
  SIZE(tsr_cross_entropy_attrs, 32);
  FIELD(tsr_sgd_attrs, lr, 8);
  FIELD(tsr_sgd_attrs, momentum, 16);
  FIELD(tsr_sgd_attrs, dampening, 24);
  FIELD(tsr_sgd_attrs, weight_decay, 32);
  FIELD(tsr_sgd_attrs, nesterov, 40);
  FIELD(tsr_sgd_attrs, first_step, 44);
  SIZE(tsr_sgd_attrs, 48);
  FIELD(tsr_adam_attrs, lr, 8);
  FIELD(tsr_adam_attrs, beta1, 16);
  FIELD(tsr_adam_attrs, beta2, 24);
  FIELD(tsr_adam_attrs, eps, 32);
  FIELD(tsr_adam_attrs, weight_decay, 40);
  FIELD(tsr_adam_attrs, step, 48);
  FIELD(tsr_adam_attrs, decoupled_weight_decay, 56);
  SIZE(tsr_adam_attrs, 64);
}

static tsr_status fake_event_fn(tsr_plugin_event *event) {
  (void)event;
  return TSR_OK;
}
static tsr_status fake_elapsed_fn(tsr_plugin_event *a, tsr_plugin_event *b, float *out_ms) {
  (void)a;
  (void)b;
  (void)out_ms;
  return TSR_OK;
}
static tsr_status fake_plan_destroy(tsr_plugin_plan *plan) {
  (void)plan;
  return TSR_OK;
}
static tsr_status fake_stream_import(int32_t device, void *native, uint32_t flags,
                                     tsr_plugin_stream **out_stream) {
  (void)device;
  (void)native;
  (void)flags;
  (void)out_stream;
  return TSR_OK;
}
static tsr_status fake_parallel_for(void *ctx, int64_t count, int64_t grain, tsr_parallel_fn fn,
                                    void *arg) {
  (void)ctx;
  (void)count;
  (void)grain;
  (void)fn;
  (void)arg;
  return TSR_OK;
}
static int32_t fake_thread_count(void *ctx) {
  (void)ctx;
  return 1;
}

static tsr_status fake_engine_cache_get(void *ctx, const char *plugin_key, const char *class_key,
                                        void *out_value, size_t *inout_bytes) {
  (void)ctx, (void)plugin_key, (void)class_key, (void)out_value, (void)inout_bytes;
  return TSR_NOT_FOUND;
}

static tsr_status fake_engine_cache_put(void *ctx, const char *plugin_key, const char *class_key,
                                        const void *value, size_t bytes) {
  (void)ctx, (void)plugin_key, (void)class_key, (void)value, (void)bytes;
  return TSR_OK;
}

// A table as an older plugin (or core) writes it: the same memory, a smaller
// struct_size.
static void test_abi_covers_only_fields_inside_struct_size(void **state) {
  (void)state;
  tsr_plugin_api api;
  memset(&api, 0, sizeof(api));
  api.event_synchronize = fake_event_fn;
  api.event_elapsed_get = fake_elapsed_fn;

  api.struct_size = offsetof(tsr_plugin_api, event_elapsed_get);
  assert_true(TSR_ABI_COVERS(&api, tsr_plugin_api, event_synchronize));
  assert_true(TSR_ABI_HAS(&api, tsr_plugin_api, event_synchronize));
  assert_false(TSR_ABI_COVERS(&api, tsr_plugin_api, event_elapsed_get));
  assert_false(TSR_ABI_HAS(&api, tsr_plugin_api, event_elapsed_get));

  // One byte short of a whole field is not enough.
  api.struct_size = offsetof(tsr_plugin_api, event_elapsed_get) + sizeof(void *) - 1;
  assert_false(TSR_ABI_COVERS(&api, tsr_plugin_api, event_elapsed_get));
  api.struct_size = offsetof(tsr_plugin_api, event_elapsed_get) + sizeof(void *);
  assert_true(TSR_ABI_HAS(&api, tsr_plugin_api, event_elapsed_get));

  api.struct_size = 0;
  assert_false(TSR_ABI_COVERS(&api, tsr_plugin_api, name));
}

static void test_abi_has_needs_the_entry_present_and_covered(void **state) {
  (void)state;
  // A newer, larger table: everything this header knows is covered.
  struct {
    tsr_plugin_api base;
    void *future[3];
  } bigger;
  memset(&bigger, 0, sizeof(bigger));
  bigger.base.struct_size = sizeof(bigger);
  assert_true(TSR_ABI_COVERS(&bigger.base, tsr_plugin_api, plan_destroy));
  assert_false(TSR_ABI_HAS(&bigger.base, tsr_plugin_api, plan_destroy));  // NULL
  bigger.base.plan_destroy = fake_plan_destroy;
  assert_true(TSR_ABI_HAS(&bigger.base, tsr_plugin_api, plan_destroy));

  // A 0.2 plugin's table ends before stream_import (0.3): whatever lies
  // there is not an entry.
  tsr_plugin_api v02;
  memset(&v02, 0, sizeof(v02));
  v02.stream_import = fake_stream_import;
  v02.struct_size = offsetof(tsr_plugin_api, stream_import);
  assert_false(TSR_ABI_HAS(&v02, tsr_plugin_api, stream_import));
  v02.struct_size = sizeof(v02);
  assert_true(TSR_ABI_HAS(&v02, tsr_plugin_api, stream_import));

  tsr_host_api host;
  memset(&host, 0, sizeof(host));
  host.struct_size = offsetof(tsr_host_api, thread_count);
  host.parallel_for = fake_parallel_for;
  host.thread_count = fake_thread_count;
  assert_true(TSR_ABI_HAS(&host, tsr_host_api, parallel_for));
  assert_false(TSR_ABI_HAS(&host, tsr_host_api, thread_count));
  // A 0.3 core's host table ends at thread_count: no engine cache (0.4).
  host.struct_size = offsetof(tsr_host_api, engine_cache_get);
  host.engine_cache_get = fake_engine_cache_get;
  host.engine_cache_put = fake_engine_cache_put;
  assert_false(TSR_ABI_HAS(&host, tsr_host_api, engine_cache_get));
  host.struct_size = offsetof(tsr_host_api, engine_cache_put);
  assert_true(TSR_ABI_HAS(&host, tsr_host_api, engine_cache_get));
  assert_false(TSR_ABI_HAS(&host, tsr_host_api, engine_cache_put));
  host.struct_size = sizeof(host);
  assert_true(TSR_ABI_HAS(&host, tsr_host_api, engine_cache_put));
  host.engine_cache_put = NULL;
  assert_false(TSR_ABI_HAS(&host, tsr_host_api, engine_cache_put));

  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = offsetof(tsr_device_props, base_alignment);
  assert_true(TSR_ABI_COVERS(&props, tsr_device_props, dtype_mask));
  assert_false(TSR_ABI_COVERS(&props, tsr_device_props, base_alignment));
}

static void test_abi_dtype_size_of_every_dtype(void **state) {
  (void)state;
  assert_int_equal(tsr_dtype_size(TSR_FLOAT32), 4);
  assert_int_equal(tsr_dtype_size(TSR_FLOAT64), 8);
  assert_int_equal(tsr_dtype_size(TSR_BFLOAT16), 2);
  assert_int_equal(tsr_dtype_size(TSR_FLOAT16), 2);
  assert_int_equal(tsr_dtype_size(TSR_INT32), 4);
  assert_int_equal(tsr_dtype_size(TSR_INT64), 8);
  assert_int_equal(tsr_dtype_size(TSR_BOOL), 1);
  assert_int_equal(tsr_dtype_size(TSR_DTYPE_COUNT), 0);
  assert_int_equal(tsr_dtype_size(-1), 0);
  assert_int_equal(tsr_dtype_size(1000), 0);
}

static void test_abi_op_name_of_every_op(void **state) {
  (void)state;
  static const struct {
    tsr_op_id_t op;
    const char *name;
  } expected[] = {
      {TSR_OP_INVALID, "invalid"},
      {TSR_OP_FILL, "fill"},
      {TSR_OP_COPY, "copy"},
      {TSR_OP_CAST, "cast"},
      {TSR_OP_UNARY, "unary"},
      {TSR_OP_UNARY_BACKWARD, "unary_backward"},
      {TSR_OP_BINARY, "binary"},
      {TSR_OP_COMPARE, "compare"},
      {TSR_OP_WHERE, "where"},
      {TSR_OP_CLAMP, "clamp"},
      {TSR_OP_REDUCE, "reduce"},
      {TSR_OP_ARG_REDUCE, "arg_reduce"},
      {TSR_OP_MATMUL, "matmul"},
      {TSR_OP_CONV2D, "conv2d"},
      {TSR_OP_CONV2D_BACKWARD_DATA, "conv2d_backward_data"},
      {TSR_OP_CONV2D_BACKWARD_FILTER, "conv2d_backward_filter"},
      {TSR_OP_POOL2D, "pool2d"},
      {TSR_OP_POOL2D_BACKWARD, "pool2d_backward"},
      {TSR_OP_SOFTMAX, "softmax"},
      {TSR_OP_SOFTMAX_BACKWARD, "softmax_backward"},
      {TSR_OP_LAYER_NORM, "layer_norm"},
      {TSR_OP_LAYER_NORM_BACKWARD, "layer_norm_backward"},
      {TSR_OP_BATCH_NORM, "batch_norm"},
      {TSR_OP_BATCH_NORM_BACKWARD, "batch_norm_backward"},
      {TSR_OP_CONCAT, "concat"},
      {TSR_OP_PAD, "pad"},
      {TSR_OP_GATHER, "gather"},
      {TSR_OP_SCATTER_ADD, "scatter_add"},
      {TSR_OP_RNG_FILL, "rng_fill"},
      {TSR_OP_CROSS_ENTROPY, "cross_entropy"},
      {TSR_OP_CROSS_ENTROPY_BACKWARD, "cross_entropy_backward"},
      {TSR_OP_SGD_UPDATE, "sgd_update"},
      {TSR_OP_ADAM_UPDATE, "adam_update"},
  };
  const int n = (int)(sizeof(expected) / sizeof(expected[0]));
  assert_int_equal(n, TSR_OP_COUNT);
  for (int i = 0; i < n; ++i) {
    // Ids are dense and in order: the catalogue is append-only.
    assert_int_equal(expected[i].op, i);
    assert_non_null(tsr_op_name(expected[i].op));
    assert_string_equal(tsr_op_name(expected[i].op), expected[i].name);
  }
  assert_null(tsr_op_name(TSR_OP_COUNT));
  assert_null(tsr_op_name(-1));
  assert_null(tsr_op_name(INT32_MAX));
}

static void test_abi_op_function_enums_are_stable(void **state) {
  (void)state;
  assert_int_equal(TSR_UNARY_ERF, 25);
  assert_int_equal(TSR_UNARY_FN_COUNT, 26);
  assert_int_equal(TSR_BINARY_LOGICAL_XOR, 9);
  assert_int_equal(TSR_BINARY_FN_COUNT, 10);
  assert_int_equal(TSR_COMPARE_GE, 5);
  assert_int_equal(TSR_REDUCE_PROD, 4);
  assert_int_equal(TSR_ARG_REDUCE_ARGMIN, 1);
  assert_int_equal(TSR_ACTIVATION_TANH, 5);
  assert_int_equal(TSR_POOL_AVG, 1);
  assert_int_equal(TSR_PAD_REPLICATE, 2);
  assert_int_equal(TSR_RNG_BERNOULLI, 2);
  assert_int_equal(TSR_REDUCTION_SUM, 2);
}

// Every attribute initialiser sets this catalogue's struct_size and
// PyTorch's defaults, and leaves nothing uninitialised (a struct filled with
// 0xff first comes back with only the documented nonzero fields).
static void test_abi_attrs_inits_set_struct_size_and_pytorch_defaults(void **state) {
  (void)state;
  tsr_conv2d_attrs conv;
  memset(&conv, 0xff, sizeof(conv));
  tsr_conv2d_attrs_init(&conv);
  assert_int_equal(conv.struct_size, sizeof(conv));
  assert_int_equal(conv.stride[0], 1);
  assert_int_equal(conv.dilation[1], 1);
  assert_int_equal(conv.groups, 1);
  assert_int_equal(conv.pad_before[0] | conv.pad_after[1] | conv.has_bias, 0);
  assert_int_equal(conv.activation, TSR_ACTIVATION_NONE);
  tsr_pool2d_attrs pool;
  memset(&pool, 0xff, sizeof(pool));
  tsr_pool2d_attrs_init(&pool, TSR_POOL_AVG, 3, 2);
  assert_int_equal(pool.kernel[0], 3);
  assert_int_equal(pool.stride[0], 3);
  assert_int_equal(pool.stride[1], 2);
  assert_int_equal(pool.count_include_pad, 1);
  assert_int_equal(pool.ceil_mode | pool.reserved, 0);
  tsr_unary_attrs unary;
  tsr_unary_attrs_init(&unary, TSR_UNARY_LEAKY_RELU);
  assert_true(unary.alpha == 0.01);
  tsr_unary_attrs_init(&unary, TSR_UNARY_ELU);
  assert_true(unary.alpha == 1.0);
  tsr_binary_attrs binary;
  tsr_binary_attrs_init(&binary, TSR_BINARY_SUB);
  assert_int_equal(binary.fn, TSR_BINARY_SUB);
  assert_true(binary.alpha == 1.0);
  tsr_matmul_attrs mm;
  memset(&mm, 0xff, sizeof(mm));
  tsr_matmul_attrs_init(&mm);
  assert_true(mm.alpha == 1.0 && mm.beta == 0.0 && mm.has_bias == 0);
  tsr_layer_norm_attrs ln;
  tsr_layer_norm_attrs_init(&ln, 1);
  assert_true(ln.eps == 1e-5 && ln.has_affine == 1 && ln.axis == 1);
  tsr_batch_norm_attrs bn;
  tsr_batch_norm_attrs_init(&bn);
  assert_true(bn.momentum == 0.1 && bn.training == 1);
  tsr_cross_entropy_attrs ce;
  tsr_cross_entropy_attrs_init(&ce);
  assert_int_equal(ce.ignore_index, -100);
  assert_int_equal(ce.reduction, TSR_REDUCTION_MEAN);
  tsr_rng_fill_attrs rng;
  tsr_rng_fill_attrs_init(&rng, TSR_RNG_BERNOULLI);
  assert_true(rng.a == 0.5);
  tsr_rng_fill_attrs_init(&rng, TSR_RNG_NORMAL);
  assert_true(rng.a == 0.0 && rng.b == 1.0);
  tsr_adam_attrs adam;
  tsr_adam_attrs_init(&adam);
  assert_true(adam.lr == 1e-3 && adam.beta1 == 0.9 && adam.beta2 == 0.999 && adam.eps == 1e-8);
  assert_int_equal(adam.step, 1);
  tsr_sgd_attrs sgd;
  tsr_sgd_attrs_init(&sgd);
  assert_true(sgd.lr == 1e-3 && sgd.momentum == 0.0);
  assert_int_equal(sgd.first_step, 1);
  tsr_reduce_attrs reduce;
  tsr_reduce_attrs_init(&reduce, TSR_REDUCE_MEAN, 6u);
  assert_int_equal(reduce.struct_size, sizeof(reduce));
  assert_int_equal(reduce.axes_mask, 6u);
  tsr_fill_attrs fill;
  tsr_fill_attrs_init(&fill);
  tsr_clamp_attrs clamp;
  tsr_clamp_attrs_init(&clamp);
  assert_int_equal(clamp.has_min | clamp.has_max, 0);
  tsr_compare_attrs cmp;
  tsr_compare_attrs_init(&cmp, TSR_COMPARE_GE);
  tsr_arg_reduce_attrs arg;
  tsr_arg_reduce_attrs_init(&arg, TSR_ARG_REDUCE_ARGMIN, 2);
  tsr_softmax_attrs sm;
  tsr_softmax_attrs_init(&sm, -1);
  tsr_concat_attrs cat;
  tsr_concat_attrs_init(&cat, 0);
  tsr_pad_attrs pad;
  tsr_pad_attrs_init(&pad, TSR_PAD_REFLECT);
  tsr_gather_attrs gather;
  tsr_gather_attrs_init(&gather, 1);
  assert_true(fill.value == 0.0 && cmp.fn == TSR_COMPARE_GE && arg.axis == 2 && sm.axis == -1 &&
              cat.struct_size == sizeof(cat) && pad.mode == TSR_PAD_REFLECT && gather.axis == 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_abi_version_is_zero_three),
      cmocka_unit_test(test_abi_enum_values_are_stable),
      cmocka_unit_test(test_abi_tensor_desc_layout),
      cmocka_unit_test(test_abi_host_api_layout),
      cmocka_unit_test(test_abi_device_and_allocator_structs_layout),
      cmocka_unit_test(test_abi_kernel_structs_layout),
      cmocka_unit_test(test_abi_plugin_api_layout),
      cmocka_unit_test(test_abi_op_attrs_layout),
      cmocka_unit_test(test_abi_covers_only_fields_inside_struct_size),
      cmocka_unit_test(test_abi_has_needs_the_entry_present_and_covered),
      cmocka_unit_test(test_abi_dtype_size_of_every_dtype),
      cmocka_unit_test(test_abi_op_name_of_every_op),
      cmocka_unit_test(test_abi_op_function_enums_are_stable),
      cmocka_unit_test(test_abi_attrs_inits_set_struct_size_and_pytorch_defaults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
