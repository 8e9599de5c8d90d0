// mlp_train's five large matrix products, each timed warm and after its
// operands had time or traffic to leave the caches.
//
//   tsr-cold-products [samples] [disturbance] [amount]
//
// disturbance (default stream):
//   stream  an add over |amount| MB of tensors (default 96) on the device's
//           threads between calls: Tessera's own traffic evicting the operands.
//   spin    this thread counts integers for |amount| ms (default 10) between
//           calls, touching no memory: whatever leaves the caches meanwhile is
//           evicted by the rest of the machine (on a VM, the other tenants),
//           and the pool's other threads go idle.
//   sleep   nanosleep for |amount| ms: the spin, with this core idle too.
//
// Each product is timed |samples| times (default 40) back to back ("warm"),
// then |samples| times each after one disturbance ("cold"); the disturbance
// is not timed. Prints the medians, minimums and the cold/warm ratio. The
// shapes and operand layouts are those of mlp_train's step (784-512-512-10 at
// batch 128, Linear weights [out, in]); the forward products carry the bias
// and ReLU as the step's do. Device: TSR_DEVICE or the best.
//
// Why: mlp_train's products run up to 1.5x longer in the step in some hours
// than in others, and longer than alone. This separates what the operands'
// place in the memory hierarchy costs from the kernels (docs/performance.md).
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_protocol.h"
#include "tessera/tessera.h"

#define PRODUCTS 5

typedef enum { DISTURB_STREAM, DISTURB_SPIN, DISTURB_SLEEP } disturbance;

typedef struct operands {
  tsr_tensor *x, *w1, *w2, *h1, *dz1, *dz2, *bias, *big_a, *big_b;
} operands;

static int fail(const char *what) {
  fprintf(stderr, "tsr-cold-products: %s: %s\n", what, tsr_last_error());
  return 1;
}

// Product |index| of the step, as the SDK computes it there; a new tensor.
static tsr_tensor *product_run(const operands *o, int index) {
  tsr_tensor *view = NULL, *out = NULL;
  switch (index) {
    case 0:  // layer 1 forward: x @ w1^T + b1, ReLU
      view = tsr_transpose(o->w1, 0, 1);
      out = tsr_matmul_ex(o->x, view, o->bias, TSR_ACTIVATION_RELU);
      break;
    case 1:  // layer 2 forward: h1 @ w2^T + b2, ReLU
      view = tsr_transpose(o->w2, 0, 1);
      out = tsr_matmul_ex(o->h1, view, o->bias, TSR_ACTIVATION_RELU);
      break;
    case 2:  // layer 2 input gradient: dz2 @ w2
      out = tsr_matmul(o->dz2, o->w2);
      break;
    case 3:  // layer 2 weight gradient: dz2^T @ h1
      view = tsr_transpose(o->dz2, 0, 1);
      out = tsr_matmul(view, o->h1);
      break;
    default:  // layer 1 weight gradient: dz1^T @ x
      view = tsr_transpose(o->dz1, 0, 1);
      out = tsr_matmul(view, o->x);
      break;
  }
  tsr_tensor_release(view);
  return out;
}

static int disturb(tsr_device *device, const operands *o, disturbance how, double amount) {
  if (how == DISTURB_STREAM) {
    tsr_tensor *sum = tsr_add(o->big_a, o->big_b);
    if (sum == NULL || tsr_device_synchronize(device) != TSR_OK)
      return 0;
    tsr_tensor_release(sum);
  } else if (how == DISTURB_SPIN) {
    volatile uint64_t count = 0;
    const double end = bench_now() + amount * 1e-3;
    while (bench_now() < end) count = count + 1;
  } else {
    struct timespec ts = {(time_t)(amount / 1000), (long)(amount * 1e6) % 1000000000L};
    nanosleep(&ts, NULL);
  }
  return 1;
}

// The median and minimum over |samples| calls of product |index|, each
// after a disturbance when |cold|. 0 on failure.
static int product_time(tsr_device *device, const operands *o, int index, int samples, int cold,
                        disturbance how, double amount, double *out_median, double *out_min) {
  double t[BENCH_MAX_SAMPLES];
  for (int s = 0; s < samples; ++s) {
    if (cold && !disturb(device, o, how, amount))
      return 0;
    const double t0 = bench_now();
    tsr_tensor *out = product_run(o, index);
    const int done = out != NULL && tsr_device_synchronize(device) == TSR_OK;
    t[s] = bench_now() - t0;
    tsr_tensor_release(out);
    if (!done)
      return 0;
  }
  *out_median = bench_median(t, (size_t)samples);
  *out_min = t[0];
  return 1;
}

int main(int argc, char **argv) {
  const int samples = argc > 1 ? atoi(argv[1]) : 40;
  const char *kind = argc > 2 ? argv[2] : "stream";
  disturbance how = DISTURB_STREAM;
  int known = 1;
  if (strcmp(kind, "spin") == 0) {
    how = DISTURB_SPIN;
  } else if (strcmp(kind, "sleep") == 0) {
    how = DISTURB_SLEEP;
  } else if (strcmp(kind, "stream") != 0) {
    known = 0;
  }
  const double amount = argc > 3 ? atof(argv[3]) : how == DISTURB_STREAM ? 96.0 : 10.0;
  if (!known || samples < 1 || samples > BENCH_MAX_SAMPLES || !(amount > 0) || amount > 4096) {
    fprintf(stderr,
            "usage: tsr-cold-products [samples 1-%d] [stream|spin|sleep] [MB or ms, above 0, at "
            "most 4096]\n",
            BENCH_MAX_SAMPLES);
    return 2;
  }

  tsr_context *context = NULL;
  if (tsr_context_create(NULL, &context) != TSR_OK)
    return fail("context");
  tsr_device *device = tsr_context_default_device(context);
  if (tsr_context_seed_set(context, 7) != TSR_OK) return fail("seed");
  const int64_t x_sizes[2] = {128, 784}, w1_sizes[2] = {512, 784}, w2_sizes[2] = {512, 512};
  const int64_t act_sizes[2] = {128, 512}, bias_sizes[1] = {512};
  // Two float32 inputs and the sum: 12 bytes per element streamed.
  const int64_t big_sizes[1] = {(int64_t)(amount * 1048576.0 / 12.0) + 1};
  operands o = {
      tsr_rand(device, TSR_FLOAT32, 2, x_sizes, -1, 1),
      tsr_rand(device, TSR_FLOAT32, 2, w1_sizes, -1, 1),
      tsr_rand(device, TSR_FLOAT32, 2, w2_sizes, -1, 1),
      tsr_rand(device, TSR_FLOAT32, 2, act_sizes, -1, 1),
      tsr_rand(device, TSR_FLOAT32, 2, act_sizes, -1, 1),
      tsr_rand(device, TSR_FLOAT32, 2, act_sizes, -1, 1),
      tsr_rand(device, TSR_FLOAT32, 1, bias_sizes, -1, 1),
      how == DISTURB_STREAM ? tsr_rand(device, TSR_FLOAT32, 1, big_sizes, -1, 1) : NULL,
      how == DISTURB_STREAM ? tsr_rand(device, TSR_FLOAT32, 1, big_sizes, -1, 1) : NULL,
  };
  int status = tsr_context_status(context) == TSR_OK ? 0 : fail("operands");

  static const char *const names[PRODUCTS] = {
      "layer 1 forward (+bias, ReLU)", "layer 2 forward (+bias, ReLU)", "layer 2 input gradient",
      "layer 2 weight gradient", "layer 1 weight gradient"};
  static const double flops[PRODUCTS] = {2.0 * 128 * 784 * 512, 2.0 * 128 * 512 * 512,
                                         2.0 * 128 * 512 * 512, 2.0 * 128 * 512 * 512,
                                         2.0 * 128 * 784 * 512};
  if (status == 0) {
    printf("device %s; cold: after a %s of %g %s\n", tsr_device_name(device), kind, amount,
           how == DISTURB_STREAM ? "MB" : "ms");
    printf("%-31s %10s %10s %10s %10s %6s\n", "product", "warm us", "(min)", "cold us", "(min)",
           "ratio");
  }
  for (int p = 0; p < PRODUCTS && status == 0; ++p) {
    double warm, warm_min, cold, cold_min, ignored;
    // One untimed call plans and warms the product.
    if (!product_time(device, &o, p, 1, 0, how, amount, &ignored, &ignored) ||
        !product_time(device, &o, p, samples, 0, how, amount, &warm, &warm_min) ||
        !product_time(device, &o, p, samples, 1, how, amount, &cold, &cold_min)) {
      status = fail(names[p]);
      break;
    }
    printf("%-31s %10.1f %10.1f %10.1f %10.1f %6.2f  (%.0f / %.0f GFLOP/s)\n", names[p], warm * 1e6,
           warm_min * 1e6, cold * 1e6, cold_min * 1e6, cold / warm, flops[p] / warm * 1e-9,
           flops[p] / cold * 1e-9);
  }
  tsr_tensor *all[] = {o.x, o.w1, o.w2, o.h1, o.dz1, o.dz2, o.bias, o.big_a, o.big_b};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) tsr_tensor_release(all[i]);
  tsr_context_destroy(context);
  return status;
}
