// The tutorial of docs/sdk.md: a small classifier trained with autograd,
// layers and an optimizer. Two Gaussian blobs in the plane, labelled 0 and
// 1, are separated by a 2-32-2 MLP; the program exits 0 when it classifies
// at least 95% of fresh points correctly.
#include <stdio.h>

#include "tessera/tessera.h"

// Points around (-1, -1) for label 0 and (1, 1) for label 1. A failed op
// returns NULL and the ops after it pass the NULL on; the caller checks.
static void make_batch(tsr_device *device, int64_t n, tsr_tensor **out_x, tsr_tensor **out_y) {
  tsr_tensor *noise = tsr_randn(device, TSR_FLOAT32, 2, (int64_t[]){n, 2}, 0.0, 0.7);
  tsr_tensor *coin = tsr_tensor_empty(device, TSR_INT64, 1, (int64_t[]){n});
  if (tsr_rng_fill_(coin, TSR_RNG_BERNOULLI, 0.5, 0.0) != TSR_OK) coin = NULL;
  // centre = 2 * label - 1, broadcast over both coordinates.
  tsr_tensor *label = tsr_cast(coin, TSR_FLOAT32);
  tsr_tensor *column = tsr_view(label, 2, (int64_t[]){n, 1});
  tsr_tensor *two = tsr_tensor_full(device, TSR_FLOAT32, 0, NULL, 2.0);
  tsr_tensor *one = tsr_tensor_full(device, TSR_FLOAT32, 0, NULL, 1.0);
  tsr_tensor *centre = tsr_sub(tsr_mul(column, two), one);
  *out_x = tsr_add(noise, centre);
  *out_y = coin;
}

int main(void) {
  tsr_context *context = NULL;
  if (tsr_context_create(NULL, &context) != TSR_OK) {
    fprintf(stderr, "context: %s\n", tsr_last_error());
    return 1;
  }
  tsr_device *device = tsr_context_default_device(context);
  if (tsr_context_seed_set(context, 42) != TSR_OK) return 1;

  tsr_module *layers[3] = {tsr_nn_linear(device, 2, 32, 1), tsr_nn_relu(),
                           tsr_nn_linear(device, 32, 2, 1)};
  tsr_module *model = tsr_nn_sequential(3, layers);
  tsr_adam_options adam;
  tsr_adam_options_init(&adam);
  adam.lr = 0.01;
  tsr_optimizer *optimizer = tsr_optim_adam_for_module(model, &adam);
  if (model == NULL || optimizer == NULL) {
    fprintf(stderr, "model: %s\n", tsr_last_error());
    return 1;
  }

  for (int step = 0; step < 200; ++step) {
    size_t scope = tsr_scope_begin();  // everything made below is released at its end
    tsr_tensor *x, *y;
    make_batch(device, 64, &x, &y);
    tsr_optimizer_zero_grad(optimizer);
    tsr_tensor *logits = tsr_module_forward(model, x);
    tsr_tensor *loss = tsr_nn_cross_entropy(logits, y, TSR_REDUCTION_MEAN, 0.0);
    // Every function that returns a tsr_status must have it checked.
    if (tsr_backward(loss, NULL, 0) != TSR_OK || tsr_optimizer_step(optimizer) != TSR_OK) {
      fprintf(stderr, "step %d: %s\n", step, tsr_last_error());
      return 1;
    }
    float value = 0;
    if (step % 50 == 0 && tsr_tensor_to_host(loss, &value, sizeof(value)) == TSR_OK) {
      printf("step %3d  loss %.4f\n", step, value);
    }
    tsr_scope_end(scope);
  }

  // Evaluation: no tape, evaluation mode, one check of the context's error.
  size_t scope = tsr_scope_begin();
  int grad_mode = tsr_grad_mode_set(0);
  tsr_module_train_set(model, 0);
  tsr_tensor *x, *y;
  make_batch(device, 1000, &x, &y);
  tsr_tensor *predicted = tsr_argmax(tsr_module_forward(model, x), 1, 0);
  tsr_tensor *right = tsr_cast(tsr_compare(predicted, y, TSR_COMPARE_EQ), TSR_FLOAT32);
  float accuracy = 0;
  tsr_status copied = tsr_tensor_to_host(tsr_mean(right, 0, NULL, 0), &accuracy, sizeof(accuracy));
  tsr_grad_mode_set(grad_mode);
  tsr_scope_end(scope);
  if (copied != TSR_OK || tsr_context_status(context) != TSR_OK) {
    fprintf(stderr, "error: %s\n", tsr_context_error_message(context));
    return 1;
  }
  printf("accuracy on 1000 new points: %.3f\n", accuracy);

  tsr_optimizer_destroy(optimizer);
  tsr_module_destroy(model);
  tsr_context_destroy(context);
  return accuracy >= 0.95f ? 0 : 1;
}
