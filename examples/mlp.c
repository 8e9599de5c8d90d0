// An MLP on Fashion-MNIST: the smallest complete training program.
//
//   tsr-example-mlp [DATA_DIR [TRAIN_IMAGES [EPOCHS [CHECKPOINT]]]]
//
// Trains 784-256-10 with Adam (lr 1e-3) in shuffled batches of 64 for EPOCHS
// epochs (default 3), the learning rate times 0.7 after each (StepLR). After
// every epoch it measures the accuracy on the 10,000 test images and saves
// the model, the optimizer and the schedule to CHECKPOINT (default
// mlp.safetensors); started again with a checkpoint there, it resumes after
// the saved epoch with the batches an uninterrupted run would have drawn.
// TRAIN_IMAGES keeps the first N training images (0, the default: all 60,000).
// examples/mlp_torch.py is the same program in PyTorch; docs/sdk.md sets the
// two training loops side by side. Copy it and change the model.
#include <stdio.h>
#include <stdlib.h>

#include "tessera/tessera.h"

// On failure: the reason on stderr, and main returns 1.
#define CHECK(call)                                   \
  do {                                                \
    if ((call) != TSR_OK) {                           \
      fprintf(stderr, "mlp: %s\n", tsr_last_error()); \
      return 1;                                       \
    }                                                 \
  } while (0)

int main(int argc, char **argv) {
  const char *data = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int64_t limit = argc > 2 ? atoll(argv[2]) : 0;
  const int64_t epochs = argc > 3 ? atoll(argv[3]) : 3;
  const char *checkpoint = argc > 4 ? argv[4] : "mlp.safetensors";

  tsr_context *context = NULL;
  CHECK(tsr_context_create(NULL, &context));
  CHECK(tsr_context_seed_set(context, 1));
  tsr_device *device = tsr_context_default_device(context);

  tsr_idx_options idx;
  tsr_idx_options_init(&idx);
  idx.mean = 0.2860;  // Fashion-MNIST's pixel mean and standard deviation
  idx.std = 0.3530;
  idx.num_classes = 10;
  idx.limit = limit;
  tsr_dataset *train_set = NULL, *test_set = NULL;
  CHECK(tsr_dataset_mnist_open(data, "train", &idx, &train_set));
  idx.limit = 0;
  CHECK(tsr_dataset_mnist_open(data, "test", &idx, &test_set));
  tsr_loader_options options;
  tsr_loader_options_init(&options);  // batches of 64, shuffled, prefetched
  options.seed = 1;
  tsr_loader *train = NULL, *test = NULL;
  CHECK(tsr_loader_create(train_set, device, &options, &train));
  options.batch_size = 1000;
  options.shuffle = 0;
  CHECK(tsr_loader_create(test_set, device, &options, &test));

  tsr_module *layers[4] = {tsr_nn_flatten(), tsr_nn_linear(device, 784, 256, 1), tsr_nn_relu(),
                           tsr_nn_linear(device, 256, 10, 1)};
  tsr_module *model = tsr_nn_sequential(4, layers);
  tsr_optimizer *optimizer = tsr_optim_adam_for_module(model, NULL);  // lr 1e-3
  tsr_lr_schedule *schedule = tsr_lr_step(optimizer, 1, 0.7);         // NULL if any failed
  if (schedule == NULL)
    CHECK(tsr_last_status());
  FILE *saved = fopen(checkpoint, "rb");
  if (saved != NULL) {  // the checkpoint holds the schedule's epoch too
    fclose(saved);
    CHECK(tsr_checkpoint_load(checkpoint, model, optimizer, NULL));
    CHECK(tsr_loader_seek(train, tsr_lr_schedule_epoch(schedule), 0));
    printf("resumed from %s after epoch %lld\n", checkpoint,
           (long long)tsr_lr_schedule_epoch(schedule));
  }

  // loop-begin
  for (int64_t epoch = tsr_lr_schedule_epoch(schedule); epoch < epochs; ++epoch) {
    tsr_module_train_set(model, 1);
    double total = 0, loss_value = 0, correct = 0, hits = 0;
    tsr_tensor *x, *y;
    size_t scope = tsr_scope_begin();  // releases a step's batch and temporaries
    while (tsr_loader_next(train, &x, &y) == TSR_OK) {
      tsr_optimizer_zero_grad(optimizer);
      tsr_tensor *loss =
          tsr_nn_cross_entropy(tsr_module_forward(model, x), y, TSR_REDUCTION_MEAN, 0.0);
      CHECK(tsr_backward(loss, NULL, 0));
      CHECK(tsr_optimizer_step(optimizer));
      CHECK(tsr_item(loss, &loss_value));
      total += loss_value;
      tsr_scope_end(scope);
      scope = tsr_scope_begin();
    }
    CHECK(tsr_lr_schedule_step(schedule));
    tsr_module_train_set(model, 0);
    int grad_mode = tsr_grad_mode_set(0);
    while (tsr_loader_next(test, &x, &y) == TSR_OK) {
      tsr_tensor *right =
          tsr_compare(tsr_argmax(tsr_module_forward(model, x), 1, 0), y, TSR_COMPARE_EQ);
      CHECK(tsr_item(tsr_sum(tsr_cast(right, TSR_FLOAT32), TSR_ALL_AXES, 0), &hits));
      correct += hits;
    }
    tsr_grad_mode_set(grad_mode);
    tsr_scope_end(scope);
    printf("epoch %lld: train loss %.4f, test accuracy %.2f%%, lr %.6f\n", (long long)epoch + 1,
           total / (double)tsr_loader_batch_count(train),
           100.0 * correct / (double)tsr_dataset_size(test_set), tsr_optimizer_lr(optimizer));
    CHECK(tsr_checkpoint_save(checkpoint, model, optimizer, 0, NULL, NULL));
  }
  // loop-end

  // Eight test images: the predicted classes, then the true ones.
  size_t scope = tsr_scope_begin();
  tsr_tensor *x, *y;
  CHECK(tsr_loader_next(test, &x, &y));
  tsr_tensor *logits = tsr_module_forward(model, tsr_slice(x, 0, 0, 8, 1));
  CHECK(tsr_tensor_print(tsr_argmax(logits, 1, 0)));
  CHECK(tsr_tensor_print(tsr_slice(y, 0, 0, 8, 1)));
  tsr_scope_end(scope);

  int failed = tsr_context_status(context) != TSR_OK;
  if (failed)
    fprintf(stderr, "mlp: %s\n", tsr_context_error_message(context));
  tsr_lr_schedule_destroy(schedule);
  tsr_optimizer_destroy(optimizer);
  tsr_module_destroy(model);
  tsr_loader_destroy(train);
  tsr_loader_destroy(test);
  tsr_dataset_destroy(train_set);
  tsr_dataset_destroy(test_set);
  tsr_context_destroy(context);
  return failed;
}
