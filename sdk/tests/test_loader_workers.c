// The loader's worker threads (tsr_loader_options.workers): the batches are
// byte for byte those of the caller's own thread for 0, 1, 2 and 4 workers,
// across epochs and with transforms; destroying a loader mid-epoch joins its
// workers; a read that fails on a worker reaches the caller at its batch,
// after the batches before it, and the batch is prepared again on the next
// call; a callback dataset is still read one call at a time.
//
// Compile definitions: TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, TSR_TEST_REF_PATH.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera/tessera.h"
#include "test_support.h"

static tsr_context *g_context;
static tsr_device *g_device;

static int group_setup(void **state) {
  (void)state;
  return ts_device_open(TSR_TEST_PLUGIN_PATH, TSR_TEST_DEVICE, &g_context, &g_device);
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  return 0;
}

enum { N = 61, C = 2, H = 6, W = 7, E = C * H * W };

// images float32 [N, C, H, W] (each pixel names its example) and labels int64 [N].
static tsr_dataset *image_dataset(void) {
  static float images[N * E];
  static int64_t labels[N];
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t k = 0; k < E; ++k) images[i * E + k] = (float)(i * 1000 + k + 1);
    labels[i] = 3 * i + 1;
  }
  const int64_t si[4] = {N, C, H, W}, sl[1] = {N};
  tsr_tensor *t[2] = {tsr_tensor_from_host(g_device, TSR_FLOAT32, 4, si, images),
                      tsr_tensor_from_host(g_device, TSR_INT64, 1, sl, labels)};
  tsr_dataset *dataset = NULL;
  assert_int_equal(tsr_dataset_from_tensors(2, t, &dataset), TSR_OK);
  tsr_tensor_release(t[0]);
  tsr_tensor_release(t[1]);
  return dataset;
}

static tsr_loader *loader_make(tsr_dataset *dataset, int64_t batch, int drop_last, int prefetch,
                               uint32_t workers, const tsr_transform *transforms, uint32_t count) {
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  o.batch_size = batch;
  o.seed = 17;
  o.drop_last = (uint32_t)drop_last;
  o.prefetch = (uint32_t)prefetch;
  o.workers = workers;
  o.transforms = transforms;
  o.transform_count = count;
  tsr_loader *loader = NULL;
  if (tsr_loader_create(dataset, g_device, &o, &loader) != TSR_OK)
    fail_msg("loader_create with %u workers: %s", workers, tsr_last_error());
  return loader;
}

// Draws |epochs| epochs; appends every batch's bytes (features, then labels)
// to |out| and returns the bytes written.
static size_t draw(tsr_loader *loader, int epochs, uint8_t *out, size_t capacity) {
  size_t used = 0;
  for (int e = 0; e < epochs; ++e) {
    for (;;) {
      tsr_tensor *x = NULL, *y = NULL;
      tsr_status status = tsr_loader_next(loader, &x, &y);
      if (status == TSR_NOT_FOUND)
        break;
      if (status != TSR_OK)
        fail_msg("loader_next: %s", tsr_last_error());
      tsr_tensor *both[2] = {x, y};
      for (int f = 0; f < 2; ++f) {
        size_t bytes = (size_t)tsr_tensor_numel(both[f]) *
                       tsr_dtype_size(tsr_tensor_dtype(both[f]));
        assert_true(used + bytes <= capacity);
        assert_int_equal(tsr_tensor_to_host(both[f], out + used, bytes), TSR_OK);
        used += bytes;
      }
      tsr_tensor_release(x);
      tsr_tensor_release(y);
    }
  }
  return used;
}

static void test_batches_are_identical_for_0_1_2_and_4_workers(void **state) {
  (void)state;
  tsr_dataset *dataset = image_dataset();
  const float mean[C] = {0.5f, -1.0f}, std[C] = {2.0f, 0.25f};
  tsr_transform t[3] = {tsr_transform_random_crop(0, 5, 5, 2), tsr_transform_random_hflip(0, 0.5),
                        tsr_transform_normalize(0, C, mean, std)};
  enum { CAP = 4 * N * (E * 4 + 8) };
  static uint8_t want[CAP], got[CAP];
  // Batch 6 (a short last batch), and 29 with drop_last: two batches per
  // epoch, so four workers hold batches of three epochs at once.
  const int64_t batches[2] = {6, 29};
  for (int b = 0; b < 2; ++b) {
    tsr_loader *plain = loader_make(dataset, batches[b], b, 0, 0, t, 3);
    size_t n = draw(plain, 4, want, CAP);
    tsr_loader_destroy(plain);
    assert_true(n > 0);
    const uint32_t counts[3] = {1, 2, 4};
    for (int c = 0; c < 3; ++c) {
      tsr_loader *loader = loader_make(dataset, batches[b], b, 1, counts[c], t, 3);
      memset(got, 0, sizeof(got));
      size_t m = draw(loader, 4, got, CAP);
      if (m != n || memcmp(got, want, n) != 0) {
        fail_msg("batch %lld: %u workers drew other batches than the caller's thread",
                 (long long)batches[b], counts[c]);
      }
      // A seek back to epoch 1 gives that epoch again.
      assert_int_equal(tsr_loader_seek(loader, 1, 0), TSR_OK);
      size_t one = draw(loader, 1, got, CAP);
      assert_true(one > 0 && one < n);
      tsr_loader_destroy(loader);
    }
  }
  tsr_dataset_destroy(dataset);
}

// A callback dataset: slow reads that record whether two ever overlap, and
// a failure at example |fail_at| while |failing|.
typedef struct slow_source {
  atomic_int in_flight;
  atomic_int overlapped;
  atomic_int calls;
  atomic_int failing;
  int64_t fail_at;
} slow_source;

static tsr_status slow_get(void *user, int64_t index, float *out_features, int64_t *out_label) {
  slow_source *s = user;
  if (atomic_fetch_add(&s->in_flight, 1) != 0)
    atomic_store(&s->overlapped, 1);
  atomic_fetch_add(&s->calls, 1);
  usleep(200);
  for (int64_t k = 0; k < E; ++k) out_features[k] = (float)(index * 1000 + k);
  *out_label = index;
  atomic_fetch_sub(&s->in_flight, 1);
  if (atomic_load(&s->failing) && index == s->fail_at)
    return TSR_INVALID_ARGUMENT;
  return TSR_OK;
}

static tsr_dataset *slow_dataset(slow_source *source) {
  const int64_t sizes[3] = {C, H, W};
  tsr_dataset *dataset = NULL;
  assert_int_equal(tsr_dataset_callback_create(N, 3, sizes, slow_get, source, &dataset), TSR_OK);
  return dataset;
}

static void test_destroy_mid_epoch_joins_the_workers(void **state) {
  (void)state;
  slow_source source;
  memset(&source, 0, sizeof(source));
  tsr_dataset *dataset = slow_dataset(&source);
  tsr_transform flip = tsr_transform_random_hflip(0, 0.5);
  // Destroyed at once, while the workers are inside their first batches.
  tsr_loader *loader = loader_make(dataset, 8, 0, 1, 4, &flip, 1);
  tsr_loader_destroy(loader);
  // Destroyed after one batch of an epoch, the ring full behind it.
  loader = loader_make(dataset, 8, 0, 1, 4, &flip, 1);
  tsr_tensor *x = NULL, *y = NULL;
  assert_int_equal(tsr_loader_next(loader, &x, &y), TSR_OK);
  usleep(20000);
  tsr_loader_destroy(loader);
  tsr_tensor_release(x);
  tsr_tensor_release(y);
  int calls = atomic_load(&source.calls);
  usleep(20000);
  assert_int_equal(atomic_load(&source.calls), calls);  // nothing runs after destroy
  assert_int_equal(atomic_load(&source.overlapped), 0);  // one read at a time
  tsr_dataset_destroy(dataset);
}

static void test_a_failed_read_on_a_worker_reaches_the_caller_at_its_batch(void **state) {
  (void)state;
  slow_source source;
  memset(&source, 0, sizeof(source));
  source.fail_at = 19;  // in batch 4 of 4-example batches in order
  atomic_store(&source.failing, 1);
  tsr_dataset *dataset = slow_dataset(&source);
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  o.batch_size = 4;
  o.shuffle = 0;
  o.workers = 4;
  tsr_loader *loader = NULL;
  assert_int_equal(tsr_loader_create(dataset, g_device, &o, &loader), TSR_OK);
  tsr_tensor *x = NULL, *y = NULL;
  for (int64_t b = 0; b < 4; ++b) {
    assert_int_equal(tsr_loader_next(loader, &x, &y), TSR_OK);
    int64_t labels[4];
    assert_int_equal(ts_read_i64(y, labels, 4), 4);
    for (int r = 0; r < 4; ++r) assert_int_equal(labels[r], b * 4 + r);
    tsr_tensor_release(x);
    tsr_tensor_release(y);
  }
  tsr_status status = tsr_loader_next(loader, &x, &y);
  assert_int_equal(status, TSR_INVALID_ARGUMENT);
  assert_null(x);
  assert_null(y);
  const char *message = tsr_last_error();
  if (strstr(message, "batch 4") == NULL || strstr(message, "example 19") == NULL)
    fail_msg("the failure's message \"%s\" names neither batch 4 nor example 19", message);
  assert_int_equal(tsr_loader_position(loader), 4);
  // Once the source recovers, the next call prepares batch 4 again.
  atomic_store(&source.failing, 0);
  assert_int_equal(tsr_loader_next(loader, &x, &y), TSR_OK);
  int64_t labels[4];
  assert_int_equal(ts_read_i64(y, labels, 4), 4);
  assert_int_equal(labels[0], 16);
  tsr_tensor_release(x);
  tsr_tensor_release(y);
  tsr_loader_destroy(loader);
  assert_int_equal(atomic_load(&source.overlapped), 0);
  tsr_dataset_destroy(dataset);
}

static void test_workers_need_prefetch(void **state) {
  (void)state;
  tsr_loader_options o;
  tsr_loader_options_init(&o);
  assert_int_equal(o.workers, 1);
  tsr_dataset *dataset = image_dataset();
  o.prefetch = 0;
  o.workers = 2;
  tsr_loader *loader = NULL;
  assert_int_equal(tsr_loader_create(dataset, g_device, &o, &loader), TSR_INVALID_ARGUMENT);
  assert_null(loader);
  if (strstr(tsr_last_error(), "workers") == NULL)
    fail_msg("the message \"%s\" does not name workers", tsr_last_error());
  // Far more workers than CPUs: clamped, and the batches are still right.
  o.prefetch = 1;
  o.workers = 100000;
  assert_int_equal(tsr_loader_create(dataset, g_device, &o, &loader), TSR_OK);
  tsr_tensor *x = NULL, *y = NULL;
  assert_int_equal(tsr_loader_next(loader, &x, &y), TSR_OK);
  tsr_tensor_release(x);
  tsr_tensor_release(y);
  tsr_loader_destroy(loader);
  tsr_dataset_destroy(dataset);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batches_are_identical_for_0_1_2_and_4_workers),
      cmocka_unit_test(test_destroy_mid_epoch_joins_the_workers),
      cmocka_unit_test(test_a_failed_read_on_a_worker_reaches_the_caller_at_its_batch),
      cmocka_unit_test(test_workers_need_prefetch),
  };
  return cmocka_run_group_tests_name(TSR_TEST_DEVICE, tests, group_setup, group_teardown);
}
