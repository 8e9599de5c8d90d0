// Plan keys and the autotune pin cache: keys differ exactly when something
// that changes the engine choice differs.
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>
#include <string.h>

#include "engine_select.h"
#include "plan_key.h"
#include "tessera/ops.h"
#include "test_host.h"

typedef struct conv_call {
  tsr_tensor_desc in[2];
  tsr_tensor_desc out[1];
  tsr_conv2d_attrs attrs;
  tsr_op_signature sig;
} conv_call;

static void desc4(tsr_tensor_desc *d, int64_t n, int64_t c, int64_t h, int64_t w) {
  memset(d, 0, sizeof(*d));
  d->struct_size = sizeof(*d);
  d->dtype = TSR_FLOAT32;
  d->rank = 4;
  int64_t sizes[4] = {n, c, h, w};
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    d->sizes[i] = sizes[i];
    d->strides[i] = stride;
    stride *= sizes[i];
  }
  d->alignment = 256;
  d->alias_group = -1;
}

static void conv_call_init(conv_call *c) {
  memset(c, 0, sizeof(*c));
  desc4(&c->in[0], 8, 3, 32, 32);
  desc4(&c->in[1], 16, 3, 3, 3);
  desc4(&c->out[0], 8, 16, 30, 30);
  c->attrs.struct_size = sizeof(c->attrs);
  c->attrs.stride[0] = c->attrs.stride[1] = 1;
  c->attrs.dilation[0] = c->attrs.dilation[1] = 1;
  c->attrs.groups = 1;
  c->sig.struct_size = sizeof(c->sig);
  c->sig.op = TSR_OP_CONV2D;
  c->sig.num_inputs = 2;
  c->sig.num_outputs = 1;
  c->sig.inputs = c->in;
  c->sig.outputs = c->out;
  c->sig.attrs = &c->attrs;
}

static tsr_cuda_plan_key key_of(const conv_call *c) {
  tsr_cuda_plan_key key;
  assert_int_equal(tsr_cuda_plan_key_build(&c->sig, tsr_cuda_test_host(), &key), TSR_OK);
  return key;
}

static void test_equal_signatures_give_equal_keys(void **state) {
  (void)state;
  conv_call a, b;
  conv_call_init(&a);
  conv_call_init(&b);
  // The buffer and storage version are not part of a signature's identity.
  b.in[0].storage_version = 99;
  tsr_cuda_plan_key ka = key_of(&a), kb = key_of(&b);
  assert_true(tsr_cuda_plan_key_equal(&ka, &kb));
  assert_int_equal(ka.hash, kb.hash);
}

static void test_keys_differ_in_everything_that_changes_the_engine(void **state) {
  (void)state;
  conv_call base;
  conv_call_init(&base);
  tsr_cuda_plan_key kbase = key_of(&base);
  for (int change = 0; change < 9; ++change) {
    conv_call c;
    conv_call_init(&c);
    switch (change) {
      case 0:
        c.in[0].strides[1] = 1;
        c.in[0].strides[3] = 3;
        break;  // channels-last
      case 1:
        c.in[1].dtype = TSR_FLOAT16;
        break;
      case 2:
        c.sig.math_mode = TSR_MATH_ALLOW_TF32;
        break;
      case 3:
        c.sig.flags = TSR_PLAN_REQUIRE_DETERMINISM;
        break;
      case 4:
        c.attrs.pad_before[0] = 1;
        break;
      case 5:
        c.out[0].alignment = 16;
        break;
      case 6:
        c.sig.device = 1;
        break;
      case 7:
        c.attrs.activation = TSR_ACTIVATION_RELU;
        break;
      case 8:
        c.in[0].sizes[0] = 9;
        break;
    }
    tsr_cuda_plan_key k = key_of(&c);
    assert_false(tsr_cuda_plan_key_equal(&kbase, &k));
  }
}

static void test_pin_cache_finds_replaces_and_evicts_the_oldest(void **state) {
  (void)state;
  static tsr_cuda_pin_cache cache;
  tsr_cuda_pin_cache_init(&cache);
  conv_call c;
  conv_call_init(&c);
  tsr_cuda_plan_key first = key_of(&c);
  tsr_cuda_engine_pin pin = {TSR_MATH_STRICT, 2, 42}, got;
  assert_false(tsr_cuda_pin_cache_lookup(&cache, &first, &got));
  tsr_cuda_pin_cache_insert(&cache, &first, &pin);
  assert_true(tsr_cuda_pin_cache_lookup(&cache, &first, &got));
  assert_int_equal(got.engine_id, 42);
  pin.engine_id = 43;
  tsr_cuda_pin_cache_insert(&cache, &first, &pin);
  assert_true(tsr_cuda_pin_cache_lookup(&cache, &first, &got));
  assert_int_equal(got.engine_id, 43);
  assert_int_equal(cache.used, 1);
  for (int i = 1; i <= TSR_CUDA_PIN_CACHE_SLOTS; ++i) {
    c.in[0].sizes[0] = 100 + i;
    tsr_cuda_plan_key k = key_of(&c);
    tsr_cuda_engine_pin p = {0, 0, i};
    tsr_cuda_pin_cache_insert(&cache, &k, &p);
  }
  assert_false(tsr_cuda_pin_cache_lookup(&cache, &first, &got));
  c.in[0].sizes[0] = 100 + TSR_CUDA_PIN_CACHE_SLOTS;
  tsr_cuda_plan_key last = key_of(&c);
  assert_true(tsr_cuda_pin_cache_lookup(&cache, &last, &got));
  assert_int_equal(got.engine_id, TSR_CUDA_PIN_CACHE_SLOTS);
  tsr_cuda_pin_cache_destroy(&cache);
}

// A pin survives its trip through the engine cache's text; anything else a
// file may hold is refused; class keys are printable, bounded and differ
// where the keys differ.
static void test_pin_values_round_trip_and_refuse_what_a_file_may_hold(void **state) {
  (void)state;
  char text[TSR_CUDA_PIN_VALUE_SIZE];
  tsr_cuda_engine_pin pin = {TSR_CUDA_HEUR_B, 7, 2147483647}, got = {-1, -1, -1};
  size_t n = tsr_cuda_pin_format(&pin, text);
  assert_true(n > 0);
  assert_true(tsr_cuda_pin_parse(text, n, &got));
  assert_int_equal(got.mode, pin.mode);
  assert_int_equal(got.rank, pin.rank);
  assert_int_equal(got.engine_id, pin.engine_id);
  static const char *bad[] = {"", "1", "1 2", "1 2 ", " 1 2 3", "1  2 3", "3 0 0", "0 32 0",
                              "0 0 2147483648", "0 0 -1", "0 0 1x", "0 0 12345678901",
                              "a b c", "0\t0\t0"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    if (tsr_cuda_pin_parse(bad[i], strlen(bad[i]), &got))
      fail_msg("accepted '%s'", bad[i]);
  }
  assert_false(tsr_cuda_pin_parse("0 0 1", 6, &got));  // a NUL inside
  assert_false(tsr_cuda_pin_parse(NULL, 3, &got));
  conv_call c;
  conv_call_init(&c);
  tsr_cuda_plan_key a = key_of(&c);
  c.in[0].sizes[0] = 9;
  tsr_cuda_plan_key b = key_of(&c);
  char ka[TSR_CUDA_PIN_CLASS_KEY_SIZE], kb[TSR_CUDA_PIN_CLASS_KEY_SIZE];
  tsr_cuda_pin_class_key(&a, ka);
  tsr_cuda_pin_class_key(&b, kb);
  assert_string_not_equal(ka, kb);
  assert_true(strlen(ka) > 0 && strlen(ka) < TSR_ENGINE_CACHE_CLASS_KEY_MAX);
  for (const char *p = ka; *p; ++p)
    assert_true(*p >= 0x20 && *p <= 0x7e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_signatures_give_equal_keys),
      cmocka_unit_test(test_keys_differ_in_everything_that_changes_the_engine),
      cmocka_unit_test(test_pin_cache_finds_replaces_and_evicts_the_oldest),
      cmocka_unit_test(test_pin_values_round_trip_and_refuse_what_a_file_may_hold),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
