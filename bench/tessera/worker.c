// tsr-bench-worker: the canonical workloads run through the Tessera SDK, as a
// worker of the benchmark harness (protocol: bench/common/bench_protocol.h).
//
// Environment:
//   TSR_DEVICE         the device (default: Tessera's best available device)
//   TSR_BENCH_THREADS  threads of the context's pool (default 2, the cores the
//                      harness gives every participant)
//
// Each workload sets up its tensors once (when first asked, or when the
// workload or its size changes), checks one result against a float64
// reference so that a broken kernel is never timed, and then times
// iterations. An iteration ends with tsr_device_synchronize, so it measures
// completed work on an asynchronous device too. Results are created by the
// ops and released every iteration, as an application's eager code does.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_protocol.h"
#include "tessera/tessera.h"

#define MAX_TENSORS 24

typedef struct worker worker;
typedef bench_result (*setup_fn)(worker *w, int64_t arg, char *message, size_t size);
typedef tsr_status (*iterate_fn)(worker *w);

typedef struct workload {
  const char *name;
  setup_fn setup;      // NULL: not yet; |not_yet| says why
  iterate_fn iterate;
  const char *not_yet;
} workload;

struct worker {
  tsr_context *context;
  tsr_device *device;
  const workload *current;
  int64_t current_arg;
  tsr_tensor *t[MAX_TENSORS];  // the current workload's tensors
  tsr_module *model;           // training workloads
  tsr_optimizer *optimizer;
  tsr_dataset *train, *test;   // fashion_epoch
  uint64_t epoch_seed;
};

static void tensors_release(worker *w) {
  for (int i = 0; i < MAX_TENSORS; ++i) {
    tsr_tensor_release(w->t[i]);
    w->t[i] = NULL;
  }
  tsr_optimizer_destroy(w->optimizer);
  w->optimizer = NULL;
  tsr_module_destroy(w->model);
  w->model = NULL;
  tsr_dataset_destroy(w->train);
  tsr_dataset_destroy(w->test);
  w->train = w->test = NULL;
}

static bench_result fail(char *message, size_t size, const char *what) {
  snprintf(message, size, "%s: %s", what, tsr_last_error());
  return BENCH_ERROR;
}

// A contiguous float32 tensor of |sizes| with reproducible random values.
static tsr_tensor *random_tensor(worker *w, int32_t rank, const int64_t *sizes, uint64_t seed,
                                 float scale) {
  size_t count = 1;
  for (int32_t d = 0; d < rank; ++d) count *= (size_t)sizes[d];
  float *host = malloc(count * sizeof(float));
  if (host == NULL) return NULL;
  bench_fill_random(host, count, seed);
  for (size_t i = 0; i < count; ++i) host[i] *= scale;
  tsr_tensor *t = tsr_tensor_from_host(w->device, TSR_FLOAT32, rank, sizes, host);
  free(host);
  return t;
}

static float *host_copy(const tsr_tensor *t) {
  size_t bytes = (size_t)tsr_tensor_numel(t) * sizeof(float);
  float *host = malloc(bytes);
  if (host != NULL && tsr_tensor_to_host(t, host, bytes) != TSR_OK) {
    free(host);
    return NULL;
  }
  return host;
}

static int close_enough(double got, double want, double scale) {
  return fabs(got - want) <= 1e-4 * scale + 1e-5;
}

// ---------------------------------------------------------------------------
// dispatch: out-of-place add of two 16-float tensors; the result is released.

static bench_result dispatch_setup(worker *w, int64_t arg, char *message, size_t size) {
  (void)arg;
  const int64_t sizes[1] = {16};
  w->t[0] = random_tensor(w, 1, sizes, 1, 1.0f);
  w->t[1] = random_tensor(w, 1, sizes, 2, 1.0f);
  if (w->t[0] == NULL || w->t[1] == NULL) return fail(message, size, "dispatch: tensors");
  tsr_tensor *c = tsr_add(w->t[0], w->t[1]);
  if (c == NULL) return fail(message, size, "dispatch: tsr_add");
  float *a = host_copy(w->t[0]), *b = host_copy(w->t[1]), *got = host_copy(c);
  tsr_tensor_release(c);
  bench_result result = BENCH_OK;
  for (int i = 0; a && b && got && i < 16; ++i) {
    if (got[i] != a[i] + b[i]) {
      snprintf(message, size, "dispatch: wrong sum at %d: %g", i, (double)got[i]);
      result = BENCH_ERROR;
      break;
    }
  }
  if (!a || !b || !got) result = fail(message, size, "dispatch: to_host");
  free(a);
  free(b);
  free(got);
  return result;
}

static tsr_status dispatch_iterate(worker *w) {
  tsr_tensor *c = tsr_add(w->t[0], w->t[1]);
  if (c == NULL) return tsr_last_status();
  tsr_tensor_release(c);
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// sgemm: c = a @ b, n x n float32; the result is released.

static bench_result sgemm_setup(worker *w, int64_t n, char *message, size_t size) {
  if (n < 1 || n > 16384) {
    snprintf(message, size, "sgemm: size %lld is out of range", (long long)n);
    return BENCH_ERROR;
  }
  const int64_t sizes[2] = {n, n};
  w->t[0] = random_tensor(w, 2, sizes, 3, 1.0f);
  w->t[1] = random_tensor(w, 2, sizes, 4, 1.0f);
  if (w->t[0] == NULL || w->t[1] == NULL) return fail(message, size, "sgemm: tensors");
  tsr_tensor *c = tsr_matmul(w->t[0], w->t[1]);
  if (c == NULL) return fail(message, size, "sgemm: tsr_matmul");
  float *a = host_copy(w->t[0]), *b = host_copy(w->t[1]), *got = host_copy(c);
  tsr_tensor_release(c);
  bench_result result = BENCH_OK;
  if (!a || !b || !got) result = fail(message, size, "sgemm: to_host");
  // Three entries (corners and middle) against a float64 dot product.
  const int64_t rows[3] = {0, n / 2, n - 1}, cols[3] = {n - 1, n / 3, 0};
  for (int e = 0; result == BENCH_OK && e < 3; ++e) {
    double want = 0.0, scale = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      double p = (double)a[rows[e] * n + k] * (double)b[k * n + cols[e]];
      want += p;
      scale += fabs(p);
    }
    double value = got[rows[e] * n + cols[e]];
    if (!close_enough(value, want, scale)) {
      snprintf(message, size, "sgemm: c[%lld][%lld] is %g, float64 reference %g",
               (long long)rows[e], (long long)cols[e], value, want);
      result = BENCH_ERROR;
    }
  }
  free(a);
  free(b);
  free(got);
  return result;
}

static tsr_status sgemm_iterate(worker *w) {
  tsr_tensor *c = tsr_matmul(w->t[0], w->t[1]);
  if (c == NULL) return tsr_last_status();
  tsr_status status = tsr_device_synchronize(w->device);
  tsr_tensor_release(c);
  return status;
}

// ---------------------------------------------------------------------------
// add_16M: c = a + b over 16M floats (3 x 64 MiB); the result is released.

#define ADD_COUNT (16 * 1024 * 1024)

static bench_result add_setup(worker *w, int64_t arg, char *message, size_t size) {
  (void)arg;
  const int64_t sizes[1] = {ADD_COUNT};
  w->t[0] = random_tensor(w, 1, sizes, 5, 1.0f);
  w->t[1] = random_tensor(w, 1, sizes, 6, 1.0f);
  if (w->t[0] == NULL || w->t[1] == NULL) return fail(message, size, "add_16M: tensors");
  tsr_tensor *c = tsr_add(w->t[0], w->t[1]);
  if (c == NULL) return fail(message, size, "add_16M: tsr_add");
  float *a = host_copy(w->t[0]), *b = host_copy(w->t[1]), *got = host_copy(c);
  tsr_tensor_release(c);
  bench_result result = BENCH_OK;
  if (!a || !b || !got) result = fail(message, size, "add_16M: to_host");
  for (int64_t i = 0; result == BENCH_OK && i < ADD_COUNT; i += 4099) {
    if (got[i] != a[i] + b[i]) {
      snprintf(message, size, "add_16M: wrong sum at %lld", (long long)i);
      result = BENCH_ERROR;
    }
  }
  free(a);
  free(b);
  free(got);
  return result;
}

static tsr_status add_iterate(worker *w) {
  tsr_tensor *c = tsr_add(w->t[0], w->t[1]);
  if (c == NULL) return tsr_last_status();
  tsr_status status = tsr_device_synchronize(w->device);
  tsr_tensor_release(c);
  return status;
}

// ---------------------------------------------------------------------------
// mlp_infer: the MLP 784-512-512-10 at batch 1, one matmul with fused bias
// (and ReLU on the hidden layers) per layer. Weights are [in, out].

static const int64_t mlp_dims[4] = {784, 512, 512, 10};

static bench_result mlp_infer_setup(worker *w, int64_t arg, char *message, size_t size) {
  (void)arg;
  const int64_t x_sizes[2] = {1, mlp_dims[0]};
  w->t[0] = random_tensor(w, 2, x_sizes, 7, 1.0f);
  for (int l = 0; l < 3; ++l) {
    const int64_t w_sizes[2] = {mlp_dims[l], mlp_dims[l + 1]};
    const int64_t b_sizes[2] = {1, mlp_dims[l + 1]};
    float scale = (float)(2.0 / sqrt((double)mlp_dims[l]));
    w->t[1 + 2 * l] = random_tensor(w, 2, w_sizes, 10 + (uint64_t)l, scale);
    w->t[2 + 2 * l] = random_tensor(w, 2, b_sizes, 20 + (uint64_t)l, 0.1f);
    if (w->t[1 + 2 * l] == NULL || w->t[2 + 2 * l] == NULL) {
      return fail(message, size, "mlp_infer: tensors");
    }
  }
  // float64 reference of the whole forward pass.
  double input[784], act[512], next[512];
  float *x = host_copy(w->t[0]);
  if (x == NULL) return fail(message, size, "mlp_infer: to_host");
  for (int64_t i = 0; i < 784; ++i) input[i] = x[i];
  free(x);
  const double *in = input;
  for (int l = 0; l < 3; ++l) {
    float *wt = host_copy(w->t[1 + 2 * l]), *bs = host_copy(w->t[2 + 2 * l]);
    if (wt == NULL || bs == NULL) {
      free(wt);
      free(bs);
      return fail(message, size, "mlp_infer: to_host");
    }
    for (int64_t j = 0; j < mlp_dims[l + 1]; ++j) {
      double s = bs[j];
      for (int64_t i = 0; i < mlp_dims[l]; ++i) s += in[i] * (double)wt[i * mlp_dims[l + 1] + j];
      next[j] = (l < 2 && s < 0.0) ? 0.0 : s;
    }
    free(wt);
    free(bs);
    memcpy(act, next, sizeof(double) * (size_t)mlp_dims[l + 1]);
    in = act;
  }
  tsr_tensor *h1 = tsr_matmul_ex(w->t[0], w->t[1], w->t[2], TSR_ACTIVATION_RELU);
  tsr_tensor *h2 = h1 ? tsr_matmul_ex(h1, w->t[3], w->t[4], TSR_ACTIVATION_RELU) : NULL;
  tsr_tensor *y = h2 ? tsr_matmul_ex(h2, w->t[5], w->t[6], TSR_ACTIVATION_NONE) : NULL;
  bench_result result = BENCH_OK;
  if (y == NULL) {
    result = fail(message, size, "mlp_infer: tsr_matmul_ex");
  } else {
    float got[10];
    if (tsr_tensor_to_host(y, got, sizeof(got)) != TSR_OK) {
      result = fail(message, size, "mlp_infer: to_host");
    }
    for (int j = 0; result == BENCH_OK && j < 10; ++j) {
      if (!close_enough(got[j], act[j], 1.0 + fabs(act[j]))) {
        snprintf(message, size, "mlp_infer: logit %d is %g, float64 reference %g", j,
                 (double)got[j], act[j]);
        result = BENCH_ERROR;
      }
    }
  }
  tsr_tensor_release(y);
  tsr_tensor_release(h2);
  tsr_tensor_release(h1);
  return result;
}

static tsr_status mlp_infer_iterate(worker *w) {
  tsr_tensor *h1 = tsr_matmul_ex(w->t[0], w->t[1], w->t[2], TSR_ACTIVATION_RELU);
  tsr_tensor *h2 = h1 ? tsr_matmul_ex(h1, w->t[3], w->t[4], TSR_ACTIVATION_RELU) : NULL;
  tsr_tensor *y = h2 ? tsr_matmul_ex(h2, w->t[5], w->t[6], TSR_ACTIVATION_NONE) : NULL;
  tsr_status status = y ? tsr_device_synchronize(w->device) : tsr_last_status();
  tsr_tensor_release(y);
  tsr_tensor_release(h2);
  tsr_tensor_release(h1);
  return status;
}

// ---------------------------------------------------------------------------
// conv: forward and backward of the canonical CNN's two convolutions at batch
// 64, through the catalogue ops (the SDK has no conv2d function yet):
//   layer 1: x [64,1,28,28], w [32,1,3,3] + bias: forward, backward-filter
//            (with the bias gradient); no input gradient (the input is data).
//   layer 2: x [64,32,13,13], w [64,32,3,3] + bias: forward, backward-data,
//            backward-filter (with the bias gradient).
// Stride 1, no padding. Outputs are created and released every iteration.

typedef struct conv_layer {
  int64_t x[4], w[4], y[4];
  int input_grad;
} conv_layer;

static const conv_layer conv_layers[2] = {
    {{64, 1, 28, 28}, {32, 1, 3, 3}, {64, 32, 26, 26}, 0},
    {{64, 32, 13, 13}, {64, 32, 3, 3}, {64, 64, 11, 11}, 1},
};

static const tsr_conv2d_attrs conv_attrs = {
    sizeof(tsr_conv2d_attrs), {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, TSR_ACTIVATION_NONE, 1};

// Tensors per layer l: x t[4l], w t[4l+1], bias t[4l+2], dy t[4l+3].
static tsr_status conv_run(worker *w, int check_layer, tsr_tensor **out_check) {
  tsr_status status = TSR_OK;
  for (int l = 0; l < 2 && status == TSR_OK; ++l) {
    const conv_layer *c = &conv_layers[l];
    tsr_tensor **t = &w->t[4 * l];
    const int64_t bias_sizes[1] = {c->w[0]};
    tsr_tensor *y = tsr_tensor_empty(w->device, TSR_FLOAT32, 4, c->y);
    tsr_tensor *dx = c->input_grad ? tsr_tensor_empty(w->device, TSR_FLOAT32, 4, c->x) : NULL;
    tsr_tensor *dw = tsr_tensor_empty(w->device, TSR_FLOAT32, 4, c->w);
    tsr_tensor *db = tsr_tensor_empty(w->device, TSR_FLOAT32, 1, bias_sizes);
    if (y == NULL || dw == NULL || db == NULL || (c->input_grad && dx == NULL)) {
      status = tsr_last_status();
    }
    if (status == TSR_OK) {
      tsr_tensor *in[3] = {t[0], t[1], t[2]};
      status = tsr_op_run(TSR_OP_CONV2D, 3, in, 1, &y, &conv_attrs);
    }
    if (status == TSR_OK && c->input_grad) {
      tsr_tensor *in[2] = {t[3], t[1]};
      status = tsr_op_run(TSR_OP_CONV2D_BACKWARD_DATA, 2, in, 1, &dx, &conv_attrs);
    }
    if (status == TSR_OK) {
      tsr_tensor *in[2] = {t[3], t[0]};
      tsr_tensor *out[2] = {dw, db};
      status = tsr_op_run(TSR_OP_CONV2D_BACKWARD_FILTER, 2, in, 2, out, &conv_attrs);
    }
    if (status == TSR_OK && l == check_layer && out_check != NULL) {
      out_check[0] = tsr_tensor_retain(y);
      out_check[1] = dx ? tsr_tensor_retain(dx) : NULL;
      out_check[2] = tsr_tensor_retain(dw);
      out_check[3] = tsr_tensor_retain(db);
    }
    tsr_tensor_release(y);
    tsr_tensor_release(dx);
    tsr_tensor_release(dw);
    tsr_tensor_release(db);
  }
  if (status == TSR_OK) status = tsr_device_synchronize(w->device);
  return status;
}

// Checks a few entries of layer 2's y, dx, dw and db against float64 sums.
static bench_result conv_check(worker *w, tsr_tensor **got, char *message, size_t size) {
  const conv_layer *c = &conv_layers[1];
  float *x = host_copy(w->t[4]), *wt = host_copy(w->t[5]), *bias = host_copy(w->t[6]);
  float *dy = host_copy(w->t[7]);
  float *y = host_copy(got[0]), *dx = host_copy(got[1]), *dw = host_copy(got[2]);
  float *db = host_copy(got[3]);
  bench_result result = BENCH_OK;
  if (!x || !wt || !bias || !dy || !y || !dx || !dw || !db) {
    result = fail(message, size, "conv: to_host");
    goto done;
  }
  const int64_t C = c->x[1], H = c->x[2], W = c->x[3], O = c->w[0], OH = c->y[2], OW = c->y[3];
  const int64_t N = c->x[0];
  // One y, dx, dw and db entry each, at fixed positions.
  const int64_t n = 5, o = 7, oh = 3, ow = 9, ci = 11, ih = 6, iw = 4, kh = 1, kw = 2;
  double ys = bias[o], ya = fabs(bias[o]);
  for (int64_t cc = 0; cc < C; ++cc) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        double p = (double)x[((n * C + cc) * H + oh + i) * W + ow + j] *
                   wt[((o * C + cc) * 3 + i) * 3 + j];
        ys += p;
        ya += fabs(p);
      }
    }
  }
  double dxs = 0.0, dxa = 0.0;
  for (int64_t oo = 0; oo < O; ++oo) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        int64_t yh = ih - i, yw = iw - j;
        if (yh < 0 || yh >= OH || yw < 0 || yw >= OW) continue;
        double p = (double)dy[((n * O + oo) * OH + yh) * OW + yw] *
                   wt[((oo * C + ci) * 3 + i) * 3 + j];
        dxs += p;
        dxa += fabs(p);
      }
    }
  }
  double dws = 0.0, dwa = 0.0, dbs = 0.0, dba = 0.0;
  for (int64_t nn = 0; nn < N; ++nn) {
    for (int64_t i = 0; i < OH; ++i) {
      for (int64_t j = 0; j < OW; ++j) {
        double g = dy[((nn * O + o) * OH + i) * OW + j];
        double p = g * x[((nn * C + ci) * H + i + kh) * W + j + kw];
        dws += p;
        dwa += fabs(p);
        dbs += g;
        dba += fabs(g);
      }
    }
  }
  const double got_values[4] = {y[((n * O + o) * OH + oh) * OW + ow],
                                dx[((n * C + ci) * H + ih) * W + iw],
                                dw[((o * C + ci) * 3 + kh) * 3 + kw], db[o]};
  const double want[4] = {ys, dxs, dws, dbs}, scale[4] = {ya, dxa, dwa, dba};
  const char *names[4] = {"y", "dx", "dw", "dbias"};
  for (int e = 0; e < 4; ++e) {
    if (!close_enough(got_values[e], want[e], scale[e])) {
      snprintf(message, size, "conv: layer 2 %s entry is %g, float64 reference %g", names[e],
               got_values[e], want[e]);
      result = BENCH_ERROR;
      break;
    }
  }
done:
  free(x);
  free(wt);
  free(bias);
  free(dy);
  free(y);
  free(dx);
  free(dw);
  free(db);
  return result;
}

static bench_result conv_setup(worker *w, int64_t arg, char *message, size_t size) {
  (void)arg;
  const tsr_op_id_t ops[3] = {TSR_OP_CONV2D, TSR_OP_CONV2D_BACKWARD_DATA,
                              TSR_OP_CONV2D_BACKWARD_FILTER};
  for (int i = 0; i < 3; ++i) {
    if (tsr_device_op_supported(w->device, ops[i], TSR_FLOAT32) != TSR_OK) {
      snprintf(message, size, "%s has no float32 %s: %s", tsr_device_name(w->device),
               tsr_op_name(ops[i]), tsr_last_error());
      return BENCH_NOT_YET;
    }
  }
  for (int l = 0; l < 2; ++l) {
    const conv_layer *c = &conv_layers[l];
    const int64_t bias_sizes[1] = {c->w[0]};
    w->t[4 * l] = random_tensor(w, 4, c->x, 30 + (uint64_t)l, 1.0f);
    w->t[4 * l + 1] = random_tensor(w, 4, c->w, 40 + (uint64_t)l, 0.2f);
    w->t[4 * l + 2] = random_tensor(w, 1, bias_sizes, 50 + (uint64_t)l, 0.1f);
    w->t[4 * l + 3] = random_tensor(w, 4, c->y, 60 + (uint64_t)l, 0.01f);
    for (int k = 0; k < 4; ++k) {
      if (w->t[4 * l + k] == NULL) return fail(message, size, "conv: tensors");
    }
  }
  tsr_tensor *got[4] = {NULL, NULL, NULL, NULL};
  if (conv_run(w, 1, got) != TSR_OK) return fail(message, size, "conv");
  bench_result result = conv_check(w, got, message, size);
  for (int i = 0; i < 4; ++i) tsr_tensor_release(got[i]);
  return result;
}

static tsr_status conv_iterate(worker *w) { return conv_run(w, -1, NULL); }

// ---------------------------------------------------------------------------
// Training steps, written as an application writes them with the SDK: a scope
// per step, zero_grad, forward, fused cross-entropy, backward, optimizer step.
//   mlp_train: MLP 784-512-512-10, ReLU, SGD lr 0.01 momentum 0.9, batch 128.
//   cnn_train: conv(1,32,3) relu maxpool2 conv(32,64,3) relu maxpool2 flatten
//              linear(1600,128) relu linear(128,10), Adam lr 1e-3, batch 64.
// The check: the first loss is near ln 10 (a fresh initialisation), finite,
// and ten steps on the same batch lower it (a broken gradient does not).

static tsr_module *bench_mlp(tsr_device *device) {
  tsr_module *layers[5] = {tsr_nn_linear(device, 784, 512, 1), tsr_nn_relu(),
                           tsr_nn_linear(device, 512, 512, 1), tsr_nn_relu(),
                           tsr_nn_linear(device, 512, 10, 1)};
  return tsr_nn_sequential(5, layers);
}

static tsr_module *bench_cnn(tsr_device *device) {
  tsr_module *layers[10] = {
      tsr_nn_conv2d(device, 1, 32, 3, 3, NULL),  tsr_nn_relu(), tsr_nn_max_pool2d(2, 2, 0),
      tsr_nn_conv2d(device, 32, 64, 3, 3, NULL), tsr_nn_relu(), tsr_nn_max_pool2d(2, 2, 0),
      tsr_nn_flatten(),                          tsr_nn_linear(device, 1600, 128, 1),
      tsr_nn_relu(),                             tsr_nn_linear(device, 128, 10, 1)};
  return tsr_nn_sequential(10, layers);
}

// One step; the loss to |out_loss| when not NULL.
static tsr_status train_step(worker *w, float *out_loss) {
  size_t scope = tsr_scope_begin();
  tsr_optimizer_zero_grad(w->optimizer);
  tsr_tensor *logits = tsr_module_forward(w->model, w->t[0]);
  tsr_tensor *loss = logits ? tsr_nn_cross_entropy(logits, w->t[1], TSR_REDUCTION_MEAN, 0.0)
                            : NULL;
  tsr_status status = loss ? tsr_backward(loss, NULL, 0) : tsr_last_status();
  if (status == TSR_OK) status = tsr_optimizer_step(w->optimizer);
  if (status == TSR_OK && out_loss != NULL) {
    status = tsr_tensor_to_host(loss, out_loss, sizeof(float));
  }
  tsr_scope_end(scope);
  return status;
}

static bench_result train_setup(worker *w, int is_cnn, char *message, size_t size) {
  const char *what = is_cnn ? "cnn_train" : "mlp_train";
  int64_t batch = is_cnn ? 64 : 128;
  if (tsr_context_seed_set(w->context, 1234) != TSR_OK) return fail(message, size, what);
  w->model = is_cnn ? bench_cnn(w->device) : bench_mlp(w->device);
  if (w->model == NULL) return fail(message, size, what);
  if (is_cnn) {
    tsr_adam_options adam;
    tsr_adam_options_init(&adam);
    adam.lr = 1e-3;
    w->optimizer = tsr_optim_adam_for_module(w->model, &adam);
  } else {
    tsr_sgd_options sgd;
    tsr_sgd_options_init(&sgd);
    sgd.lr = 0.01;
    sgd.momentum = 0.9;
    w->optimizer = tsr_optim_sgd_for_module(w->model, &sgd);
  }
  if (w->optimizer == NULL) return fail(message, size, what);
  const int64_t image[4] = {batch, 1, 28, 28}, flat[2] = {batch, 784};
  w->t[0] = is_cnn ? random_tensor(w, 4, image, 70, 1.0f) : random_tensor(w, 2, flat, 70, 1.0f);
  int64_t labels[128];
  for (int64_t i = 0; i < batch; ++i) labels[i] = (i * 7 + 3) % 10;
  w->t[1] = tsr_tensor_from_host(w->device, TSR_INT64, 1, &batch, labels);
  if (w->t[0] == NULL || w->t[1] == NULL) return fail(message, size, what);
  float first = 0, last = 0;
  for (int step = 0; step < 10; ++step) {
    if (train_step(w, step == 0 ? &first : &last) != TSR_OK) return fail(message, size, what);
  }
  if (!isfinite(first) || fabs(first - log(10.0)) > 0.5 || !(last < first)) {
    snprintf(message, size, "%s: loss %g at the first step (ln 10 = 2.30 expected), %g after 10",
             what, (double)first, (double)last);
    return BENCH_ERROR;
  }
  return BENCH_OK;
}

static bench_result mlp_train_setup(worker *w, int64_t arg, char *message, size_t size) {
  (void)arg;
  return train_setup(w, 0, message, size);
}

static bench_result cnn_train_setup(worker *w, int64_t arg, char *message, size_t size) {
  (void)arg;
  return train_setup(w, 1, message, size);
}

static tsr_status train_iterate(worker *w) { return train_step(w, NULL); }

// An error status for a trained model that is too poor to be right.
static tsr_status accuracy_too_low(worker *w, double accuracy) {
  (void)w;
  fprintf(stderr, "tsr-bench-worker: fashion_epoch: test accuracy %.4f is below 0.8\n",
          accuracy);
  return TSR_INTERNAL;
}

// ---------------------------------------------------------------------------
// fashion_epoch: one epoch of the CNN on Fashion-MNIST (60,000 images, Adam
// lr 1e-3, batch 64, shuffled; pixels / 255 as the PyTorch peer does) from a
// fresh initialisation, then the accuracy on the 10,000 test images,
// reported with the sample. Reading the IDX files is setup.

static bench_result fashion_setup(worker *w, int64_t arg, char *message, size_t size) {
  (void)arg;
  const char *dir = getenv("TSR_BENCH_FASHION_DIR");
  if (dir == NULL || dir[0] == '\0') dir = "/usr/share/datasets/fashion-mnist";
  tsr_idx_options idx;
  tsr_idx_options_init(&idx);
  if (tsr_dataset_mnist_open(dir, "train", &idx, &w->train) != TSR_OK ||
      tsr_dataset_mnist_open(dir, "test", &idx, &w->test) != TSR_OK) {
    if (tsr_last_status() == TSR_NOT_FOUND) {
      snprintf(message, size, "Fashion-MNIST not found: %s", tsr_last_error());
      return BENCH_NOT_YET;
    }
    return fail(message, size, "fashion_epoch: data");
  }
  return BENCH_OK;
}

static tsr_status fashion_iterate(worker *w) {
  tsr_status status = tsr_context_seed_set(w->context, w->epoch_seed++);
  if (status != TSR_OK) return status;
  tsr_module *model = bench_cnn(w->device);
  tsr_adam_options adam;
  tsr_adam_options_init(&adam);
  tsr_optimizer *opt = model ? tsr_optim_adam_for_module(model, &adam) : NULL;
  tsr_loader *train = NULL, *test = NULL;
  tsr_loader_options opts;
  tsr_loader_options_init(&opts);
  opts.seed = w->epoch_seed;
  status = opt ? tsr_loader_create(w->train, w->device, &opts, &train)
                          : tsr_last_status();
  opts.batch_size = 1000;
  opts.shuffle = 0;
  if (status == TSR_OK) status = tsr_loader_create(w->test, w->device, &opts, &test);
  while (status == TSR_OK) {
    size_t scope = tsr_scope_begin();
    tsr_tensor *x = NULL, *y = NULL;
    status = tsr_loader_next(train, &x, &y);
    if (status == TSR_OK) {
      tsr_optimizer_zero_grad(opt);
      tsr_tensor *logits = tsr_module_forward(model, x);
      tsr_tensor *loss =
          logits ? tsr_nn_cross_entropy(logits, y, TSR_REDUCTION_MEAN, 0.0) : NULL;
      status = loss ? tsr_backward(loss, NULL, 0) : tsr_last_status();
      if (status == TSR_OK) status = tsr_optimizer_step(opt);
    }
    tsr_scope_end(scope);
  }
  if (status == TSR_NOT_FOUND) status = TSR_OK;  // the epoch is over
  int mode = tsr_grad_mode_set(0);
  tsr_module_train_set(model, 0);
  double right = 0, seen = 0;
  while (status == TSR_OK) {
    size_t scope = tsr_scope_begin();
    tsr_tensor *x = NULL, *y = NULL;
    status = tsr_loader_next(test, &x, &y);
    if (status == TSR_OK) {
      tsr_tensor *logits = tsr_module_forward(model, x);
      tsr_tensor *hit = logits ? tsr_compare(tsr_argmax(logits, 1, 0), y, TSR_COMPARE_EQ) : NULL;
      tsr_tensor *count = hit ? tsr_sum(tsr_cast(hit, TSR_FLOAT32), 0, NULL, 0) : NULL;
      float value = 0;
      status = count ? tsr_tensor_to_host(count, &value, sizeof(value)) : tsr_last_status();
      right += value;
      seen += (double)tsr_tensor_size(y, 0);
    }
    tsr_scope_end(scope);
  }
  if (status == TSR_NOT_FOUND) status = TSR_OK;
  tsr_grad_mode_set(mode);
  if (status == TSR_OK && seen > 0) {
    bench_extra_set("test_accuracy", right / seen);
    if (right / seen < 0.8) {
      // A broken kernel that still runs must not be timed as a result.
      status = accuracy_too_low(w, right / seen);
    }
  }
  tsr_loader_destroy(train);
  tsr_loader_destroy(test);
  tsr_optimizer_destroy(opt);
  tsr_module_destroy(model);
  return status;
}

// ---------------------------------------------------------------------------


static const workload workloads[] = {
    {"dispatch", dispatch_setup, dispatch_iterate, NULL},
    {"sgemm", sgemm_setup, sgemm_iterate, NULL},
    {"add_16M", add_setup, add_iterate, NULL},
    {"conv", conv_setup, conv_iterate, NULL},
    {"mlp_train", mlp_train_setup, train_iterate, NULL},
    {"cnn_train", cnn_train_setup, train_iterate, NULL},
    {"mlp_infer", mlp_infer_setup, mlp_infer_iterate, NULL},
    {"fashion_epoch", fashion_setup, fashion_iterate, NULL},
};

static bench_result worker_run(void *user, const bench_request *request, double *out_samples,
                               char *message, size_t size) {
  worker *w = user;
  const workload *found = NULL;
  for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); ++i) {
    if (strcmp(workloads[i].name, request->workload) == 0) found = &workloads[i];
  }
  if (found == NULL) {
    snprintf(message, size, "unknown workload '%s'", request->workload);
    return BENCH_ERROR;
  }
  if (found->setup == NULL) {
    snprintf(message, size, "%s", found->not_yet);
    return BENCH_NOT_YET;
  }
  if (found != w->current || request->arg != w->current_arg) {
    tensors_release(w);
    w->current = NULL;
    bench_result result = found->setup(w, request->arg, message, size);
    if (result != BENCH_OK) {
      tensors_release(w);
      return result;
    }
    w->current = found;
    w->current_arg = request->arg;
  }
  tsr_status status = TSR_OK;
  for (int32_t i = 0; i < request->warmup && status == TSR_OK; ++i) status = found->iterate(w);
  for (int32_t s = 0; s < request->samples && status == TSR_OK; ++s) {
    double t0 = bench_now();
    for (int64_t i = 0; i < request->inner && status == TSR_OK; ++i) status = found->iterate(w);
    if (status == TSR_OK) status = tsr_device_synchronize(w->device);
    out_samples[s] = (bench_now() - t0) / (double)request->inner;
  }
  if (status != TSR_OK) {
    snprintf(message, size, "%s: %s", request->workload, tsr_last_error());
    w->current = NULL;
    tensors_release(w);
    return BENCH_ERROR;
  }
  return BENCH_OK;
}

static void worker_info(void *user, FILE *out) {
  worker *w = user;
  tsr_plugin_info plugin;
  memset(&plugin, 0, sizeof(plugin));
  const char *plugin_name = tsr_device_plugin_name(w->device);
  for (int32_t i = 0; i < tsr_context_plugin_count(w->context); ++i) {
    tsr_plugin_info p;
    memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    if (tsr_context_plugin_info_get(w->context, i, &p) == TSR_OK && p.name != NULL &&
        plugin_name != NULL && strcmp(p.name, plugin_name) == 0) {
      plugin = p;
    }
  }
  fputs("\"name\":\"Tessera\",\"version\":", out);
  bench_json_string(out, tsr_version());
  fputs(",\"device\":", out);
  bench_json_string(out, tsr_device_name(w->device));
  fputs(",\"plugin\":", out);
  bench_json_string(out, plugin_name ? plugin_name : "");
  fputs(",\"plugin_version\":", out);
  bench_json_string(out, plugin.version ? plugin.version : "");
  fputs(",\"plugin_build\":", out);
  bench_json_string(out, plugin.build_info ? plugin.build_info : "");
  fprintf(out, ",\"threads\":%d", (int)tsr_context_thread_count(w->context));
}

int main(void) {
  const char *threads_text = getenv("TSR_BENCH_THREADS");
  int threads = threads_text != NULL && threads_text[0] != '\0' ? atoi(threads_text) : 2;
  if (threads < 1) {
    fprintf(stderr, "tsr-bench-worker: TSR_BENCH_THREADS must be at least 1\n");
    return 2;
  }
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.num_threads = threads;
  // A missing op must show as "not yet", never be timed on ref behind the
  // device's back.
  options.fallback = TSR_FALLBACK_DENY;
  worker w;
  memset(&w, 0, sizeof(w));
  if (tsr_context_create(&options, &w.context) != TSR_OK) {
    fprintf(stderr, "tsr-bench-worker: tsr_context_create: %s\n", tsr_last_error());
    return 1;
  }
  w.device = tsr_context_default_device(w.context);
  if (w.device == NULL) {
    fprintf(stderr, "tsr-bench-worker: no device\n");
    tsr_context_destroy(w.context);
    return 1;
  }
  int rc = bench_serve(worker_run, worker_info, &w);
  tensors_release(&w);
  tsr_context_destroy(w.context);
  return rc;
}
