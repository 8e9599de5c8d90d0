// Tests of the plan cache: through the SDK on ref (one plan per signature,
// and a new plan whenever strides, alignment, aliasing or attributes
// differ), and its pieces directly (core/plan_cache.h): key building,
// lookup, insert, a full table, hash collisions and concurrent inserts.
//
// plan_cache.c and error.c are compiled into this test; libtessera's copies
// are hidden, so the unit tests use these and the SDK tests use the library.
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "plan_cache.h"
#include "tessera/tessera.h"

#include "test_check.h"


// ===========================================================================
// Through the SDK on ref. Each test gets a fresh context, so the device (and
// its plan cache) is new: the ref plugin shuts down with the last context.

typedef struct sdk_fixture {
  tsr_context *context;
  tsr_device *device;
} sdk_fixture;

static int sdk_setup(void **state) {
#ifdef TSR_TEST_REF_PLUGIN
  sdk_fixture *f = calloc(1, sizeof(*f));
  if (f == NULL) return -1;
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_REF_PLUGIN;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  if (tsr_context_create(&options, &f->context) != TSR_OK) {
    fprintf(stderr, "context_create: %s\n", tsr_last_error());
    free(f);
    return -1;
  }
  f->device = tsr_context_device_find(f->context, "ref:0");
  *state = f;
  return f->device ? 0 : -1;
#else
  (void)state;
  return -1;
#endif
}

static int sdk_teardown(void **state) {
  sdk_fixture *f = *state;
  if (f != NULL) {
    tsr_context_destroy(f->context);
    free(f);
  }
  return 0;
}

static tsr_plan_cache_stats cache_stats(const tsr_device *device) {
  tsr_plan_cache_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  CHECK_OK(tsr_device_plan_cache_stats_get(device, &stats));
  return stats;
}

// Checks how the cache moved since |before|.
static void cache_moved(const tsr_device *device, tsr_plan_cache_stats *before, uint64_t hits,
                        uint64_t misses, const char *what) {
  tsr_plan_cache_stats now = cache_stats(device);
  if (now.hits != before->hits + hits || now.misses != before->misses + misses ||
      now.entries != before->entries + misses) {
    fail_msg("%s: expected +%llu hits and +%llu misses/entries, got +%llu hits, +%llu misses, "
             "+%llu entries",
             what, (unsigned long long)hits, (unsigned long long)misses,
             (unsigned long long)(now.hits - before->hits),
             (unsigned long long)(now.misses - before->misses),
             (unsigned long long)(now.entries - before->entries));
  }
  *before = now;
}

static tsr_tensor *from_floats(tsr_device *device, int32_t rank, const int64_t *sizes,
                               const float *data) {
  tsr_tensor *t = tsr_tensor_from_host(device, TSR_FLOAT32, rank, sizes, data);
  CHECK_TENSOR(t);
  return t;
}

static void values_equal(const tsr_tensor *t, int64_t n, const float *expected) {
  float got[64];
  assert_true(n <= 64);
  assert_int_equal(tsr_tensor_numel(t), n);
  CHECK_OK(tsr_tensor_to_host(t, got, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != expected[i]) {
      fail_msg("element %lld is %g, expected %g", (long long)i, (double)got[i],
               (double)expected[i]);
    }
  }
}

static void test_same_op_twice_misses_once_then_hits(void **state) {
  sdk_fixture *f = *state;
  tsr_tensor *a = from_floats(f->device, 1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
  tsr_tensor *b = from_floats(f->device, 1, (int64_t[]){4}, (float[]){10, 20, 30, 40});
  tsr_plan_cache_stats s = cache_stats(f->device);
  tsr_tensor *c1 = tsr_add(a, b);
  CHECK_TENSOR(c1);
  cache_moved(f->device, &s, 0, 1, "first add");
  for (int i = 0; i < 3; ++i) {
    tsr_tensor *c = tsr_add(a, b);
    CHECK_TENSOR(c);
    cache_moved(f->device, &s, 1, 0, "repeated add");
    values_equal(c, 4, (float[]){11, 22, 33, 44});
    tsr_tensor_release(c);
  }
  values_equal(c1, 4, (float[]){11, 22, 33, 44});
  tsr_tensor_release(c1);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
}

static void test_a_transposed_operand_gets_its_own_plan(void **state) {
  sdk_fixture *f = *state;
  tsr_tensor *x = from_floats(f->device, 2, (int64_t[]){3, 2}, (float[]){0, 1, 2, 3, 4, 5});
  tsr_tensor *y = from_floats(f->device, 2, (int64_t[]){3, 2}, (float[]){10, 10, 10, 10, 10, 10});
  tsr_tensor *z = from_floats(f->device, 2, (int64_t[]){2, 3}, (float[]){0, 1, 2, 3, 4, 5});
  tsr_tensor *zt = tsr_transpose(z, 0, 1);  // [3, 2], strides [1, 3]
  CHECK_TENSOR(zt);
  tsr_plan_cache_stats s = cache_stats(f->device);
  tsr_tensor *c1 = tsr_add(x, y);
  CHECK_TENSOR(c1);
  cache_moved(f->device, &s, 0, 1, "contiguous add");
  tsr_tensor *c2 = tsr_add(zt, y);
  CHECK_TENSOR(c2);
  cache_moved(f->device, &s, 0, 1, "add of a transposed view (same sizes, other strides)");
  tsr_tensor *c3 = tsr_add(x, y);
  CHECK_TENSOR(c3);
  cache_moved(f->device, &s, 1, 0, "contiguous add again");
  values_equal(c1, 6, (float[]){10, 11, 12, 13, 14, 15});
  values_equal(c2, 6, (float[]){10, 13, 11, 14, 12, 15});
  tsr_tensor_release(c3);
  tsr_tensor_release(c2);
  tsr_tensor_release(c1);
  tsr_tensor_release(zt);
  tsr_tensor_release(z);
  tsr_tensor_release(y);
  tsr_tensor_release(x);
}

static void test_a_less_aligned_slice_gets_its_own_plan(void **state) {
  sdk_fixture *f = *state;
  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  CHECK_OK(tsr_device_props_get(f->device, &props));
  // A float32 slice starting at element 1 sits 4 bytes into its buffer.
  assert_true(props.base_alignment > 4);
  tsr_tensor *a = from_floats(f->device, 1, (int64_t[]){8}, (float[]){0, 1, 2, 3, 4, 5, 6, 7});
  tsr_tensor *b = from_floats(f->device, 1, (int64_t[]){4}, (float[]){100, 100, 100, 100});
  tsr_tensor *at0 = tsr_slice(a, 0, 0, 4, 1);  // byte offset 0: fully aligned
  tsr_tensor *at1 = tsr_slice(a, 0, 1, 5, 1);  // byte offset 4: alignment 4
  tsr_tensor *at2 = tsr_slice(a, 0, 2, 6, 1);  // byte offset 8: alignment 8
  CHECK_TENSOR(at0);
  CHECK_TENSOR(at1);
  CHECK_TENSOR(at2);
  tsr_tensor *fresh = from_floats(f->device, 1, (int64_t[]){4}, (float[]){0, 0, 0, 0});
  tsr_plan_cache_stats s = cache_stats(f->device);
  tsr_tensor *c0 = tsr_add(fresh, b);
  CHECK_TENSOR(c0);
  cache_moved(f->device, &s, 0, 1, "add of fresh tensors");
  // Offset 0 is as aligned as a fresh tensor: the same signature.
  tsr_tensor *r0 = tsr_add(at0, b);
  CHECK_TENSOR(r0);
  cache_moved(f->device, &s, 1, 0, "add of a slice at byte offset 0");
  tsr_tensor *r1 = tsr_add(at1, b);
  CHECK_TENSOR(r1);
  cache_moved(f->device, &s, 0, 1, "add of a slice at byte offset 4");
  tsr_tensor *r2 = tsr_add(at2, b);
  CHECK_TENSOR(r2);
  cache_moved(f->device, &s, 0, 1, "add of a slice at byte offset 8");
  tsr_tensor *r1b = tsr_add(at1, b);
  CHECK_TENSOR(r1b);
  cache_moved(f->device, &s, 1, 0, "add of the offset-4 slice again");
  values_equal(r0, 4, (float[]){100, 101, 102, 103});
  values_equal(r1, 4, (float[]){101, 102, 103, 104});
  values_equal(r2, 4, (float[]){102, 103, 104, 105});
  tsr_tensor *release[] = {r1b, r2, r1, r0, c0, fresh, at2, at1, at0, b, a};
  for (size_t i = 0; i < sizeof(release) / sizeof(release[0]); ++i) tsr_tensor_release(release[i]);
}

static void test_an_output_aliasing_an_input_gets_its_own_plan(void **state) {
  sdk_fixture *f = *state;
  tsr_tensor *a = from_floats(f->device, 1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
  tsr_tensor *b = from_floats(f->device, 1, (int64_t[]){4}, (float[]){10, 20, 30, 40});
  tsr_tensor *out1 = tsr_tensor_empty(f->device, TSR_FLOAT32, 1, (int64_t[]){4});
  tsr_tensor *out2 = tsr_tensor_empty(f->device, TSR_FLOAT32, 1, (int64_t[]){4});
  CHECK_TENSOR(out1);
  CHECK_TENSOR(out2);
  tsr_plan_cache_stats s = cache_stats(f->device);
  CHECK_OK(tsr_binary_out(out1, a, b, TSR_BINARY_ADD, 1.0));
  cache_moved(f->device, &s, 0, 1, "out of place");
  CHECK_OK(tsr_binary_out(out2, a, b, TSR_BINARY_ADD, 1.0));
  cache_moved(f->device, &s, 1, 0, "out of place, another fresh output");
  CHECK_OK(tsr_binary_out(a, a, b, TSR_BINARY_ADD, 1.0));
  cache_moved(f->device, &s, 0, 1, "in place on the first input");
  values_equal(a, 4, (float[]){11, 22, 33, 44});
  CHECK_OK(tsr_binary_out(b, a, b, TSR_BINARY_ADD, 1.0));
  cache_moved(f->device, &s, 0, 1, "in place on the second input");
  values_equal(b, 4, (float[]){21, 42, 63, 84});
  CHECK_OK(tsr_binary_out(a, a, b, TSR_BINARY_ADD, 1.0));
  cache_moved(f->device, &s, 1, 0, "in place on the first input again");
  values_equal(a, 4, (float[]){32, 64, 96, 128});
  values_equal(out1, 4, (float[]){11, 22, 33, 44});
  tsr_tensor_release(out2);
  tsr_tensor_release(out1);
  tsr_tensor_release(b);
  tsr_tensor_release(a);
}

static void test_a_different_alpha_gets_its_own_plan(void **state) {
  sdk_fixture *f = *state;
  tsr_tensor *a = from_floats(f->device, 1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
  tsr_tensor *b = from_floats(f->device, 1, (int64_t[]){4}, (float[]){10, 20, 30, 40});
  tsr_plan_cache_stats s = cache_stats(f->device);
  tsr_tensor *c1 = tsr_binary(a, b, TSR_BINARY_ADD, 1.0);
  CHECK_TENSOR(c1);
  cache_moved(f->device, &s, 0, 1, "alpha 1");
  tsr_tensor *c2 = tsr_binary(a, b, TSR_BINARY_ADD, 2.0);
  CHECK_TENSOR(c2);
  cache_moved(f->device, &s, 0, 1, "alpha 2");
  tsr_tensor *c3 = tsr_binary(a, b, TSR_BINARY_ADD, 2.0);
  CHECK_TENSOR(c3);
  cache_moved(f->device, &s, 1, 0, "alpha 2 again");
  tsr_tensor *c4 = tsr_binary(a, b, TSR_BINARY_SUB, 2.0);
  CHECK_TENSOR(c4);
  cache_moved(f->device, &s, 0, 1, "sub, alpha 2");
  values_equal(c1, 4, (float[]){11, 22, 33, 44});
  values_equal(c2, 4, (float[]){21, 42, 63, 84});
  values_equal(c4, 4, (float[]){-19, -38, -57, -76});
  tsr_tensor *release[] = {c4, c3, c2, c1, b, a};
  for (size_t i = 0; i < sizeof(release) / sizeof(release[0]); ++i) tsr_tensor_release(release[i]);
}

static void test_plan_cache_stats_get_rejects_a_small_struct(void **state) {
  sdk_fixture *f = *state;
  tsr_plan_cache_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(size_t);
  assert_int_equal(tsr_device_plan_cache_stats_get(f->device, &stats), TSR_INVALID_ARGUMENT);
  assert_int_equal(tsr_device_plan_cache_stats_get(NULL, &stats), TSR_INVALID_ARGUMENT);
}

// ===========================================================================
// The cache's pieces, directly.

typedef struct sig_builder {
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  tsr_binary_attrs attrs;
  tsr_op_signature signature;
} sig_builder;

static void desc_init(tsr_tensor_desc *d, int32_t rank, const int64_t *sizes) {
  memset(d, 0, sizeof(*d));
  d->struct_size = sizeof(*d);
  d->dtype = TSR_FLOAT32;
  d->rank = rank;
  int64_t stride = 1;
  for (int32_t r = rank - 1; r >= 0; --r) {
    d->sizes[r] = sizes[r];
    d->strides[r] = stride;
    stride *= sizes[r];
  }
  d->alignment = 64;
  d->alias_group = -1;
}

// A binary add of two [2, 3] float32 tensors into a third.
static void sig_builder_init(sig_builder *b) {
  memset(b, 0, sizeof(*b));
  for (int i = 0; i < 3; ++i) desc_init(&b->descs[i], 2, (int64_t[]){2, 3});
  b->attrs.struct_size = sizeof(b->attrs);
  b->attrs.fn = TSR_BINARY_ADD;
  b->attrs.alpha = 1.0;
  b->signature.struct_size = sizeof(b->signature);
  b->signature.op = TSR_OP_BINARY;
  b->signature.device = 0;
  b->signature.num_inputs = 2;
  b->signature.num_outputs = 1;
  b->signature.inputs = b->descs;
  b->signature.outputs = b->descs + 2;
  b->signature.attrs = &b->attrs;
  b->signature.math_mode = TSR_MATH_STRICT;
}

static void key_build(const sig_builder *b, tsr_plan_key *key) {
  tsr_status status = tsr_plan_key_build(&b->signature, key);
  if (status != TSR_OK) fail_msg("plan_key_build: %s", tsr_error_message());
  assert_true(key->length > 0 && key->length <= TSR_PLAN_KEY_MAX_WORDS);
}

static int keys_equal(const tsr_plan_key *a, const tsr_plan_key *b) {
  return a->length == b->length && a->hash == b->hash &&
         memcmp(a->words, b->words, a->length * sizeof(uint64_t)) == 0;
}

static void test_plan_key_ignores_buffers_offsets_and_versions(void **state) {
  (void)state;
  static sig_builder a, b;
  static tsr_plan_key ka, kb;
  sig_builder_init(&a);
  sig_builder_init(&b);
  for (int i = 0; i < 3; ++i) {
    b.descs[i].buffer = (tsr_plugin_buffer *)(uintptr_t)(0x1000 * (i + 1));
    b.descs[i].byte_offset = 64 * (uint64_t)(i + 3);  // as aligned as the signature says
    b.descs[i].storage_version = 77 + (uint64_t)i;
    b.descs[i].device = 0;
  }
  key_build(&a, &ka);
  key_build(&b, &kb);
  assert_true(keys_equal(&ka, &kb));
  // Bytes of the attribute struct beyond its struct_size are not part of it.
  struct {
    tsr_binary_attrs attrs;
    uint64_t beyond;
  } longer = {b.attrs, 1}, longer2 = {b.attrs, 2};
  b.signature.attrs = &longer;
  key_build(&b, &kb);
  assert_true(keys_equal(&ka, &kb));
  b.signature.attrs = &longer2;
  key_build(&b, &kb);
  assert_true(keys_equal(&ka, &kb));
}

typedef void (*sig_mutation)(sig_builder *b);
static void mutate_op(sig_builder *b) { b->signature.op = TSR_OP_COMPARE; }
static void mutate_device(sig_builder *b) { b->signature.device = 1; }
static void mutate_math_mode(sig_builder *b) { b->signature.math_mode = TSR_MATH_ALLOW_TF32; }
static void mutate_flags(sig_builder *b) { b->signature.flags = TSR_PLAN_REQUIRE_DETERMINISM; }
static void mutate_dtype(sig_builder *b) { b->descs[1].dtype = TSR_FLOAT64; }
static void mutate_output_dtype(sig_builder *b) { b->descs[2].dtype = TSR_FLOAT64; }
static void mutate_size(sig_builder *b) { b->descs[0].sizes[1] = 4; }
static void mutate_stride(sig_builder *b) {
  b->descs[0].strides[0] = 1;
  b->descs[0].strides[1] = 2;
}
static void mutate_broadcast(sig_builder *b) { b->descs[1].strides[0] = 0; }
static void mutate_rank(sig_builder *b) {
  desc_init(&b->descs[0], 3, (int64_t[]){1, 2, 3});
}
static void mutate_alignment(sig_builder *b) { b->descs[1].alignment = 4; }
static void mutate_output_alignment(sig_builder *b) { b->descs[2].alignment = 16; }
static void mutate_alias(sig_builder *b) {
  b->descs[0].alias_group = 0;
  b->descs[2].alias_group = 0;
}
static void mutate_other_alias(sig_builder *b) {
  b->descs[1].alias_group = 1;
  b->descs[2].alias_group = 1;
}
static void mutate_alpha(sig_builder *b) { b->attrs.alpha = 2.0; }
static void mutate_fn(sig_builder *b) { b->attrs.fn = TSR_BINARY_MUL; }
static void mutate_no_attrs(sig_builder *b) { b->signature.attrs = NULL; }
static void mutate_operand_split(sig_builder *b) {
  b->signature.num_inputs = 1;
  b->signature.num_outputs = 2;
  b->signature.outputs = b->descs + 1;
}

static void test_plan_key_differs_when_any_part_of_the_signature_differs(void **state) {
  (void)state;
  static const struct {
    const char *name;
    sig_mutation mutate;
  } cases[] = {
      {"op", mutate_op},
      {"device", mutate_device},
      {"math mode", mutate_math_mode},
      {"flags", mutate_flags},
      {"input dtype", mutate_dtype},
      {"output dtype", mutate_output_dtype},
      {"size", mutate_size},
      {"strides", mutate_stride},
      {"broadcast stride", mutate_broadcast},
      {"rank", mutate_rank},
      {"input alignment", mutate_alignment},
      {"output alignment", mutate_output_alignment},
      {"alias group with input 0", mutate_alias},
      {"alias group with input 1", mutate_other_alias},
      {"alpha", mutate_alpha},
      {"binary fn", mutate_fn},
      {"attrs absent", mutate_no_attrs},
      {"inputs/outputs split", mutate_operand_split},
  };
  static sig_builder base, changed;
  static tsr_plan_key kbase, kchanged;
  sig_builder_init(&base);
  key_build(&base, &kbase);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    sig_builder_init(&changed);
    cases[i].mutate(&changed);
    key_build(&changed, &kchanged);
    if (keys_equal(&kbase, &kchanged)) fail_msg("a different %s gave the same key", cases[i].name);
    if (kbase.hash == kchanged.hash) fail_msg("a different %s gave the same hash", cases[i].name);
  }
}

static void test_plan_key_rejects_attribute_sizes_a_key_cannot_hold(void **state) {
  (void)state;
  static sig_builder b;
  static tsr_plan_key key;
  static unsigned char big[600];
  sig_builder_init(&b);
  size_t size = 513;
  memcpy(big, &size, sizeof(size));
  b.signature.attrs = big;
  tsr_error_clear();
  assert_int_equal(tsr_plan_key_build(&b.signature, &key), TSR_INVALID_ARGUMENT);
  assert_non_null(strstr(tsr_error_message(), "513"));
  size = 4;
  memcpy(big, &size, sizeof(size));
  assert_int_equal(tsr_plan_key_build(&b.signature, &key), TSR_INVALID_ARGUMENT);
  size = 512;
  memcpy(big, &size, sizeof(size));
  assert_int_equal(tsr_plan_key_build(&b.signature, &key), TSR_OK);
}

static void test_plan_key_holds_the_largest_signature(void **state) {
  (void)state;
  static tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  static unsigned char attrs[512];
  int64_t sizes[TSR_MAX_RANK] = {2, 2, 2, 2, 2, 2, 2, 2};
  for (int i = 0; i < TSR_MAX_OPERANDS; ++i) desc_init(&descs[i], TSR_MAX_RANK, sizes);
  size_t size = sizeof(attrs);
  memset(attrs, 0xab, sizeof(attrs));
  memcpy(attrs, &size, sizeof(size));
  tsr_op_signature sig;
  memset(&sig, 0, sizeof(sig));
  sig.struct_size = sizeof(sig);
  sig.op = TSR_OP_CONCAT;
  sig.num_inputs = TSR_MAX_OPERANDS - 1;
  sig.num_outputs = 1;
  sig.inputs = descs;
  sig.outputs = descs + TSR_MAX_OPERANDS - 1;
  sig.attrs = attrs;
  // The words after the key are a canary: building must not reach them.
  static struct {
    tsr_plan_key key;
    uint64_t canary[8];
  } guarded;
  for (int i = 0; i < 8; ++i) guarded.canary[i] = 0x5a5a5a5a5a5a5a5aull;
  assert_int_equal(tsr_plan_key_build(&sig, &guarded.key), TSR_OK);
  assert_true(guarded.key.length <= TSR_PLAN_KEY_MAX_WORDS);
  for (int i = 0; i < 8; ++i) assert_true(guarded.canary[i] == 0x5a5a5a5a5a5a5a5aull);
}

// A cache on the heap with its stats zeroed.
static tsr_plan_cache *cache_new(void) {
  tsr_plan_cache *cache = malloc(sizeof(*cache));
  assert_non_null(cache);
  assert_int_equal(tsr_plan_cache_init(cache), TSR_OK);
  return cache;
}

static atomic_int g_destroyed;
static tsr_plugin_plan *g_destroyed_last;
static tsr_status count_destroy(tsr_plugin_plan *plan) {
  atomic_fetch_add(&g_destroyed, 1);
  g_destroyed_last = plan;
  return TSR_OK;
}

static void cache_free(tsr_plan_cache *cache) {
  tsr_plan_cache_destroy(cache, count_destroy);
  free(cache);
}

static tsr_plugin_plan *fake_plan(uintptr_t n) { return (tsr_plugin_plan *)(n * 64); }

// A short key of its own: |n| in the first word.
static void small_key(tsr_plan_key *key, uint64_t n) {
  key->length = 2;
  key->words[0] = n;
  key->words[1] = ~n;
  key->hash = n * 0x9e3779b97f4a7c15ull;
}

static void test_lookup_misses_until_an_insert_then_hits(void **state) {
  (void)state;
  tsr_plan_cache *cache = cache_new();
  static sig_builder b;
  static tsr_plan_key key;
  sig_builder_init(&b);
  key_build(&b, &key);
  assert_null(tsr_plan_cache_lookup(cache, &key));
  assert_int_equal(atomic_load(&cache->misses), 1);
  assert_int_equal(atomic_load(&cache->hits), 0);

  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  info.engine = "test:engine";
  info.workspace_bytes = 4096;
  const tsr_plan_entry *inserted = NULL;
  assert_int_equal(tsr_plan_cache_insert(cache, &key, fake_plan(1), &info, NULL, &inserted),
                   TSR_OK);
  assert_non_null(inserted);
  assert_ptr_equal(inserted->plan, fake_plan(1));
  assert_string_equal(inserted->info.engine, "test:engine");
  assert_int_equal(inserted->info.workspace_bytes, 4096);
  assert_null(inserted->fallback_reason);
  assert_int_equal(atomic_load(&cache->entries), 1);

  const tsr_plan_entry *found = tsr_plan_cache_lookup(cache, &key);
  assert_ptr_equal(found, inserted);
  assert_int_equal(atomic_load(&cache->hits), 1);
  assert_int_equal(atomic_load(&cache->misses), 1);

  // A key differing in one word is another entry.
  static sig_builder other;
  static tsr_plan_key other_key;
  sig_builder_init(&other);
  other.attrs.alpha = 3.0;
  key_build(&other, &other_key);
  assert_null(tsr_plan_cache_lookup(cache, &other_key));

  atomic_store(&g_destroyed, 0);
  cache_free(cache);
  assert_int_equal(atomic_load(&g_destroyed), 1);
  assert_ptr_equal(g_destroyed_last, fake_plan(1));
}

static void test_insert_of_a_present_key_returns_the_existing_entry(void **state) {
  (void)state;
  tsr_plan_cache *cache = cache_new();
  tsr_plan_key key;
  small_key(&key, 42);
  const tsr_plan_entry *first = NULL, *second = NULL;
  assert_int_equal(tsr_plan_cache_insert(cache, &key, fake_plan(1), NULL, NULL, &first), TSR_OK);
  assert_int_equal(tsr_plan_cache_insert(cache, &key, fake_plan(2), NULL, NULL, &second), TSR_OK);
  assert_ptr_equal(first, second);
  assert_ptr_equal(second->plan, fake_plan(1));  // the caller destroys plan 2
  assert_int_equal(atomic_load(&cache->entries), 1);
  // With no info given, the entry's info is zero with its struct_size set.
  assert_int_equal(first->info.struct_size, sizeof(tsr_plan_info));
  assert_null(first->info.engine);
  atomic_store(&g_destroyed, 0);
  cache_free(cache);
  assert_int_equal(atomic_load(&g_destroyed), 1);
}

static void test_a_fallback_entry_keeps_its_own_copy_of_the_reason(void **state) {
  (void)state;
  tsr_plan_cache *cache = cache_new();
  tsr_plan_key key;
  small_key(&key, 7);
  char reason[64];
  snprintf(reason, sizeof(reason), "partial: binary is not offered");
  const tsr_plan_entry *entry = NULL;
  assert_int_equal(tsr_plan_cache_insert(cache, &key, NULL, NULL, reason, &entry), TSR_OK);
  assert_non_null(entry);
  assert_null(entry->plan);
  assert_ptr_not_equal(entry->fallback_reason, reason);
  memset(reason, 'x', sizeof(reason) - 1);
  assert_string_equal(entry->fallback_reason, "partial: binary is not offered");
  assert_ptr_equal(tsr_plan_cache_lookup(cache, &key), entry);
  // Entries without a plan are not passed to destroy.
  atomic_store(&g_destroyed, 0);
  cache_free(cache);
  assert_int_equal(atomic_load(&g_destroyed), 0);
}

static void test_keys_with_colliding_hashes_are_told_apart(void **state) {
  (void)state;
  tsr_plan_cache *cache = cache_new();
  tsr_plan_key keys[3];
  small_key(&keys[0], 1);
  small_key(&keys[1], 2);
  small_key(&keys[2], 3);
  keys[1].hash = keys[0].hash;
  keys[2].hash = keys[0].hash + TSR_PLAN_CACHE_SLOTS;  // same slot, another hash
  const tsr_plan_entry *entries[3];
  for (int i = 0; i < 3; ++i) {
    assert_null(tsr_plan_cache_lookup(cache, &keys[i]));
    assert_int_equal(
        tsr_plan_cache_insert(cache, &keys[i], fake_plan((uintptr_t)i + 1), NULL, NULL, &entries[i]),
        TSR_OK);
    assert_non_null(entries[i]);
  }
  assert_int_equal(atomic_load(&cache->entries), 3);
  for (int i = 0; i < 3; ++i) {
    const tsr_plan_entry *e = tsr_plan_cache_lookup(cache, &keys[i]);
    assert_ptr_equal(e, entries[i]);
    assert_ptr_equal(e->plan, fake_plan((uintptr_t)i + 1));
  }
  // A fourth key of the same hash but never inserted is still a miss.
  tsr_plan_key absent;
  small_key(&absent, 4);
  absent.hash = keys[0].hash;
  assert_null(tsr_plan_cache_lookup(cache, &absent));
  atomic_store(&g_destroyed, 0);
  cache_free(cache);
  assert_int_equal(atomic_load(&g_destroyed), 3);
}

static void test_insert_stops_caching_at_three_quarters_full(void **state) {
  (void)state;
  tsr_plan_cache *cache = cache_new();
  const uint64_t limit = TSR_PLAN_CACHE_SLOTS / 4 * 3;
  tsr_plan_key key;
  for (uint64_t i = 0; i < limit; ++i) {
    small_key(&key, i + 1);
    const tsr_plan_entry *entry = NULL;
    tsr_status status = tsr_plan_cache_insert(cache, &key, fake_plan(i + 1), NULL, NULL, &entry);
    if (status != TSR_OK || entry == NULL) fail_msg("insert %llu failed", (unsigned long long)i);
  }
  assert_int_equal(atomic_load(&cache->entries), limit);
  small_key(&key, limit + 1);
  const tsr_plan_entry *entry = (const tsr_plan_entry *)&key;  // must be overwritten
  assert_int_equal(tsr_plan_cache_insert(cache, &key, fake_plan(limit + 1), NULL, NULL, &entry),
                   TSR_OK);
  assert_null(entry);  // the caller keeps and destroys the plan
  assert_int_equal(atomic_load(&cache->entries), limit);
  // Every cached key is still found, and the refused one is not.
  for (uint64_t i = 0; i < limit; i += 97) {
    small_key(&key, i + 1);
    const tsr_plan_entry *e = tsr_plan_cache_lookup(cache, &key);
    assert_non_null(e);
    assert_ptr_equal(e->plan, fake_plan(i + 1));
  }
  small_key(&key, limit + 1);
  assert_null(tsr_plan_cache_lookup(cache, &key));
  atomic_store(&g_destroyed, 0);
  cache_free(cache);
  assert_int_equal(atomic_load(&g_destroyed), (int)limit);
}

// --- concurrency --------------------------------------------------------------

typedef struct race {
  tsr_plan_cache *cache;
  pthread_barrier_t *barrier;
  const tsr_plan_key *key;
  tsr_plugin_plan *plan;
  const tsr_plan_entry *entry;
  tsr_status status;
  int lookups_found;  // reader: lookups that saw the entry
} race;

static void *race_insert(void *arg) {
  race *r = arg;
  // As the dispatcher does: look up, then insert on a miss. Both inserters
  // miss before either inserts, the case the insert lock exists for.
  r->entry = tsr_plan_cache_lookup(r->cache, r->key);
  pthread_barrier_wait(r->barrier);
  if (r->entry == NULL) {
    r->status = tsr_plan_cache_insert(r->cache, r->key, r->plan, NULL, NULL, &r->entry);
  } else {
    r->status = TSR_INTERNAL;  // nothing was inserted before the barrier
  }
  return NULL;
}

static void *race_lookup(void *arg) {
  race *r = arg;
  pthread_barrier_wait(r->barrier);
  for (int i = 0; i < 2000; ++i) {
    const tsr_plan_entry *e = tsr_plan_cache_lookup(r->cache, r->key);
    if (e != NULL) {
      // A published entry is complete.
      if (e->key_length != r->key->length || e->hash != r->key->hash ||
          (e->plan != fake_plan(1) && e->plan != fake_plan(2))) {
        r->status = TSR_INTERNAL;
      }
      ++r->lookups_found;
    }
  }
  return NULL;
}

static void test_concurrent_inserts_of_one_key_leave_one_entry(void **state) {
  (void)state;
  static sig_builder b;
  static tsr_plan_key key;
  sig_builder_init(&b);
  key_build(&b, &key);
  for (int round = 0; round < 200; ++round) {
    tsr_plan_cache *cache = cache_new();
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 3);
    race racers[3];
    memset(racers, 0, sizeof(racers));
    pthread_t threads[3];
    for (int i = 0; i < 3; ++i) {
      racers[i].cache = cache;
      racers[i].barrier = &barrier;
      racers[i].key = &key;
      racers[i].plan = fake_plan((uintptr_t)i + 1);
      assert_int_equal(pthread_create(&threads[i], NULL, i < 2 ? race_insert : race_lookup,
                                      &racers[i]),
                       0);
    }
    for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&barrier);

    assert_int_equal(racers[0].status, TSR_OK);
    assert_int_equal(racers[1].status, TSR_OK);
    assert_int_equal(racers[2].status, TSR_OK);
    assert_non_null(racers[0].entry);
    assert_ptr_equal(racers[0].entry, racers[1].entry);
    assert_int_equal(atomic_load(&cache->entries), 1);
    // Exactly one plan won; the other inserter would destroy its own.
    int won = (racers[0].entry->plan == racers[0].plan) + (racers[1].entry->plan == racers[1].plan);
    assert_int_equal(won, 1);
    atomic_store(&g_destroyed, 0);
    cache_free(cache);
    assert_int_equal(atomic_load(&g_destroyed), 1);
  }
}

static void *insert_many(void *arg) {
  race *r = arg;
  pthread_barrier_wait(r->barrier);
  for (uint64_t i = 0; i < 1000; ++i) {
    tsr_plan_key key;
    small_key(&key, i + 1);
    const tsr_plan_entry *e = tsr_plan_cache_lookup(r->cache, &key);
    if (e == NULL) {
      if (tsr_plan_cache_insert(r->cache, &key, fake_plan(i + 1), NULL, NULL, &e) != TSR_OK ||
          e == NULL) {
        r->status = TSR_INTERNAL;
        return NULL;
      }
    }
    if (e->plan != fake_plan(i + 1)) r->status = TSR_INTERNAL;
  }
  return NULL;
}

static void test_threads_inserting_the_same_keys_agree_on_every_entry(void **state) {
  (void)state;
  tsr_plan_cache *cache = cache_new();
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 4);
  race racers[4];
  memset(racers, 0, sizeof(racers));
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) {
    racers[i].cache = cache;
    racers[i].barrier = &barrier;
    assert_int_equal(pthread_create(&threads[i], NULL, insert_many, &racers[i]), 0);
  }
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&barrier);
  for (int i = 0; i < 4; ++i) assert_int_equal(racers[i].status, TSR_OK);
  assert_int_equal(atomic_load(&cache->entries), 1000);
  atomic_store(&g_destroyed, 0);
  cache_free(cache);
  assert_int_equal(atomic_load(&g_destroyed), 1000);
}

int main(void) {
  const struct CMUnitTest unit_tests[] = {
      cmocka_unit_test(test_plan_key_ignores_buffers_offsets_and_versions),
      cmocka_unit_test(test_plan_key_differs_when_any_part_of_the_signature_differs),
      cmocka_unit_test(test_plan_key_rejects_attribute_sizes_a_key_cannot_hold),
      cmocka_unit_test(test_plan_key_holds_the_largest_signature),
      cmocka_unit_test(test_lookup_misses_until_an_insert_then_hits),
      cmocka_unit_test(test_insert_of_a_present_key_returns_the_existing_entry),
      cmocka_unit_test(test_a_fallback_entry_keeps_its_own_copy_of_the_reason),
      cmocka_unit_test(test_keys_with_colliding_hashes_are_told_apart),
      cmocka_unit_test(test_insert_stops_caching_at_three_quarters_full),
      cmocka_unit_test(test_concurrent_inserts_of_one_key_leave_one_entry),
      cmocka_unit_test(test_threads_inserting_the_same_keys_agree_on_every_entry),
  };
  const struct CMUnitTest sdk_tests[] = {
      cmocka_unit_test_setup_teardown(test_same_op_twice_misses_once_then_hits, sdk_setup,
                                      sdk_teardown),
      cmocka_unit_test_setup_teardown(test_a_transposed_operand_gets_its_own_plan, sdk_setup,
                                      sdk_teardown),
      cmocka_unit_test_setup_teardown(test_a_less_aligned_slice_gets_its_own_plan, sdk_setup,
                                      sdk_teardown),
      cmocka_unit_test_setup_teardown(test_an_output_aliasing_an_input_gets_its_own_plan,
                                      sdk_setup, sdk_teardown),
      cmocka_unit_test_setup_teardown(test_a_different_alpha_gets_its_own_plan, sdk_setup,
                                      sdk_teardown),
      cmocka_unit_test_setup_teardown(test_plan_cache_stats_get_rejects_a_small_struct, sdk_setup,
                                      sdk_teardown),
  };
  unsetenv("TSR_DEVICE");
  unsetenv("TSR_FALLBACK");
  int failed = cmocka_run_group_tests_name("plan cache internals", unit_tests, NULL, NULL);
#ifdef TSR_TEST_REF_PLUGIN
  failed += cmocka_run_group_tests_name("plan cache through the SDK on ref", sdk_tests, NULL, NULL);
#else
  (void)sdk_tests;
  fprintf(stderr, "test_plan_cache: the SDK tests are skipped: tessera-ref is not built\n");
#endif
  return failed;
}
