// A short MLP on Fashion-MNIST: the smallest complete training program.
//
//   tsr-example-mlp [DATA_DIR [TRAIN_IMAGES]]
//
// Loads the IDX files, trains 784-256-10 with Adam for one epoch in batches of
// 64, and prints the test accuracy. Copy it and change the model.
#include <stdio.h>
#include <stdlib.h>

#include "tessera/tessera.h"

int main(int argc, char **argv) {
  const char *data = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  tsr_idx_options idx;
  tsr_idx_options_init(&idx);
  idx.mean = 0.2860;  // Fashion-MNIST's pixel mean and standard deviation
  idx.std = 0.3530;
  idx.flatten = 1;  // examples are [784]
  idx.limit = argc > 2 ? atoll(argv[2]) : 0;

  tsr_context *context = NULL;
  if (tsr_context_create(NULL, &context) != TSR_OK) {
    fprintf(stderr, "%s\n", tsr_last_error());
    return 1;
  }
  tsr_device *device = tsr_context_default_device(context);
  if (tsr_context_seed_set(context, 1) != TSR_OK) return 1;
  tsr_dataset *train = NULL, *test = NULL;
  tsr_loader *batches = NULL, *test_batches = NULL;
  tsr_loader_options opts;
  tsr_loader_options_init(&opts);  // batch 64, shuffled, prefetched
  if (tsr_dataset_mnist_open(data, "train", &idx, &train) != TSR_OK ||
      tsr_loader_create(train, device, &opts, &batches) != TSR_OK) {
    fprintf(stderr, "%s\n", tsr_last_error());
    return 1;
  }
  idx.limit = 0;
  opts.batch_size = 1000;
  opts.shuffle = 0;
  if (tsr_dataset_mnist_open(data, "test", &idx, &test) != TSR_OK ||
      tsr_loader_create(test, device, &opts, &test_batches) != TSR_OK) {
    fprintf(stderr, "%s\n", tsr_last_error());
    return 1;
  }

  tsr_module *layers[3] = {tsr_nn_linear(device, 784, 256, 1), tsr_nn_relu(),
                           tsr_nn_linear(device, 256, 10, 1)};
  tsr_module *model = tsr_nn_sequential(3, layers);
  tsr_optimizer *adam = tsr_optim_adam_for_module(model, NULL);  // lr 1e-3

  tsr_tensor *x, *y;
  for (size_t scope = tsr_scope_begin();; scope = tsr_scope_begin()) {
    // The scope releases the batch and every temporary at the end of a step.
    if (tsr_loader_next(batches, &x, &y) != TSR_OK) {  // TSR_NOT_FOUND: epoch over
      tsr_scope_end(scope);
      break;
    }
    tsr_optimizer_zero_grad(adam);
    tsr_tensor *loss =
        tsr_nn_cross_entropy(tsr_module_forward(model, x), y, TSR_REDUCTION_MEAN, 0.0);
    if (tsr_backward(loss, NULL, 0) != TSR_OK || tsr_optimizer_step(adam) != TSR_OK) {
      fprintf(stderr, "%s\n", tsr_last_error());
      return 1;
    }
    tsr_scope_end(scope);
  }

  int grad_mode = tsr_grad_mode_set(0);
  tsr_module_train_set(model, 0);
  double right = 0, seen = 0;
  for (size_t scope = tsr_scope_begin();; scope = tsr_scope_begin()) {
    if (tsr_loader_next(test_batches, &x, &y) != TSR_OK) {
      tsr_scope_end(scope);
      break;
    }
    tsr_tensor *hits =
        tsr_compare(tsr_argmax(tsr_module_forward(model, x), 1, 0), y, TSR_COMPARE_EQ);
    float count = 0;
    if (tsr_tensor_to_host(tsr_sum(tsr_cast(hits, TSR_FLOAT32), 0, NULL, 0), &count,
                           sizeof(count)) != TSR_OK) {
      fprintf(stderr, "%s\n", tsr_last_error());
      return 1;
    }
    right += count;
    seen += (double)tsr_tensor_size(y, 0);
    tsr_scope_end(scope);
  }
  tsr_grad_mode_set(grad_mode);
  int failed = tsr_context_status(context) != TSR_OK;
  if (failed)
    fprintf(stderr, "%s\n", tsr_context_error_message(context));
  printf("test accuracy after one epoch: %.2f%%\n", 100.0 * right / seen);

  tsr_optimizer_destroy(adam);
  tsr_module_destroy(model);
  tsr_loader_destroy(batches);
  tsr_loader_destroy(test_batches);
  tsr_dataset_destroy(train);
  tsr_dataset_destroy(test);
  tsr_context_destroy(context);
  return failed;
}
