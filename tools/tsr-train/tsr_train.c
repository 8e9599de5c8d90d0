// tsr-train: trains an MLP or a CNN on Fashion-MNIST (or MNIST) with the SDK
// and reports test accuracy after every epoch. The README's first command
// runs it.
//
//   tsr-train [--model mlp|cnn] [--epochs N] [--batch B] [--lr X] [--device D]
//             [--data DIR] [--save FILE] [--resume FILE] [--seed S]
//             [--train-limit N] [--metrics PREFIX]
//
// Adam with a cosine learning-rate schedule over --epochs; inputs normalised
// with Fashion-MNIST's mean and standard deviation. --epochs is the total:
// with --resume, training continues from the checkpoint's epoch up to it, and
// the result is bit for bit that of an uninterrupted run on a deterministic
// device (parameters, Adam moments, step count, schedule, RNG offset and the
// shuffle order all come back). Metrics go to PREFIX.csv and PREFIX.png.
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output.h"
#include "plot.h"
#include "tessera/tessera.h"

#define MAX_EPOCHS 1000
// Fashion-MNIST's training-set pixel statistics (over [0, 1]).
#define DATA_MEAN 0.2860
#define DATA_STD 0.3530

typedef struct options {
  const char *model;
  int epochs;
  int64_t batch;
  double lr;
  const char *device;
  const char *data;
  const char *save;
  const char *resume;
  uint64_t seed;
  int64_t train_limit;
  const char *metrics;
  int allow_nonfinite;  // --resume from weights holding NaN or infinity
} options;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *out) {
  fputs(
      "usage: tsr-train [--model mlp|cnn] [--epochs N] [--batch B] [--lr X] [--device D]\n"
      "                 [--data DIR] [--save FILE] [--resume FILE] [--seed S]\n"
      "                 [--train-limit N] [--metrics PREFIX] [--allow-nonfinite]\n"
      "\n"
      "Trains on Fashion-MNIST (IDX files, raw or .gz) and prints test accuracy on the\n"
      "whole test set after every epoch.\n"
      "  --model        mlp (784-512-512-10, ReLU) or cnn (2 conv + 2 linear); default mlp\n"
      "  --epochs       total epochs (default 5); with --resume, trains up to this epoch\n"
      "  --batch        batch size (default 64)\n"
      "  --lr           Adam's learning rate, annealed by a cosine schedule (default 0.001)\n"
      "  --device       e.g. ref, onednn:0 (default: the best available device)\n"
      "  --data         the folder of the IDX files\n"
      "                 (default /usr/share/datasets/fashion-mnist)\n"
      "  --save         checkpoint (safetensors) written after every epoch\n"
      "  --resume       checkpoint to continue from (refused when a weight is NaN or\n"
      "                 infinite, unless --allow-nonfinite)\n"
      "  --seed         initialisation and shuffle seed (default 1)\n"
      "  --train-limit  use only the first N training images (default: all)\n"
      "  --metrics      PREFIX.csv and PREFIX.png get the per-epoch metrics\n"
      "                 (default tsr-train)\n",
      out);
}

// Parses a whole number in [lo, hi]; 0 on failure with a message.
static int parse_int(const char *flag, const char *text, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "tsr-train: %s must be a whole number in [%lld, %lld], not '%s'\n", flag,
            (long long)lo, (long long)hi, text);
    return 0;
  }
  *out = v;
  return 1;
}

// Parses a positive, finite learning rate; 0 on failure with a message.
static int parse_lr(const char *flag, const char *text, double *out) {
  char *end = NULL;
  const double v = strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0) || !isfinite(v)) {
    fprintf(stderr, "tsr-train: %s must be a positive number, not '%s'\n", flag, text);
    return 0;
  }
  *out = v;
  return 1;
}

static int options_parse(int argc, char **argv, options *o) {
  *o = (options){.model = "mlp",
                 .epochs = 5,
                 .batch = 64,
                 .lr = 1e-3,
                 .data = "/usr/share/datasets/fashion-mnist",
                 .seed = 1,
                 .metrics = "tsr-train"};
  static const struct option long_options[] = {{"model", required_argument, 0, 'm'},
                                               {"epochs", required_argument, 0, 'e'},
                                               {"batch", required_argument, 0, 'b'},
                                               {"lr", required_argument, 0, 'l'},
                                               {"device", required_argument, 0, 'd'},
                                               {"data", required_argument, 0, 'D'},
                                               {"save", required_argument, 0, 's'},
                                               {"resume", required_argument, 0, 'r'},
                                               {"seed", required_argument, 0, 'S'},
                                               {"train-limit", required_argument, 0, 't'},
                                               {"metrics", required_argument, 0, 'M'},
                                               {"allow-nonfinite", no_argument, 0, 'N'},
                                               {"help", no_argument, 0, 'h'},
                                               {0, 0, 0, 0}};
  int c;
  int64_t v;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
    switch (c) {
      case 'm':
        o->model = optarg;
        break;
      case 'e':
        if (!parse_int("--epochs", optarg, 1, MAX_EPOCHS, &v))
          return 2;
        o->epochs = (int)v;
        break;
      case 'b':
        if (!parse_int("--batch", optarg, 1, 65536, &v))
          return 2;
        o->batch = v;
        break;
      case 'l':
        if (!parse_lr("--lr", optarg, &o->lr))
          return 2;
        break;
      case 'd':
        o->device = optarg;
        break;
      case 'D':
        o->data = optarg;
        break;
      case 's':
        o->save = optarg;
        break;
      case 'r':
        o->resume = optarg;
        break;
      case 'S':
        if (!parse_int("--seed", optarg, 0, INT64_MAX, &v))
          return 2;
        o->seed = (uint64_t)v;
        break;
      case 't':
        if (!parse_int("--train-limit", optarg, 1, INT64_MAX, &v))
          return 2;
        o->train_limit = v;
        break;
      case 'M':
        o->metrics = optarg;
        break;
      case 'N':
        o->allow_nonfinite = 1;
        break;
      case 'h':
        usage(stdout);
        return 1;
      default:
        fprintf(stderr, "tsr-train: unknown or incomplete option '%s'\n", argv[optind - 1]);
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "tsr-train: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (strcmp(o->model, "mlp") != 0 && strcmp(o->model, "cnn") != 0) {
    fprintf(stderr, "tsr-train: --model must be mlp or cnn, not '%s'\n", o->model);
    return 2;
  }
  return 0;
}

static tsr_module *model_create(tsr_device *device, const char *kind) {
  if (strcmp(kind, "mlp") == 0) {
    tsr_module *layers[6] = {tsr_nn_flatten(), tsr_nn_linear(device, 784, 512, 1),
                             tsr_nn_relu(),    tsr_nn_linear(device, 512, 512, 1),
                             tsr_nn_relu(),    tsr_nn_linear(device, 512, 10, 1)};
    return tsr_nn_sequential(6, layers);
  }
  tsr_module *layers[10] = {tsr_nn_conv2d(device, 1, 32, 3, 3, NULL),
                            tsr_nn_relu(),
                            tsr_nn_max_pool2d(2, 2, 0),
                            tsr_nn_conv2d(device, 32, 64, 3, 3, NULL),
                            tsr_nn_relu(),
                            tsr_nn_max_pool2d(2, 2, 0),
                            tsr_nn_flatten(),
                            tsr_nn_linear(device, 1600, 128, 1),
                            tsr_nn_relu(),
                            tsr_nn_linear(device, 128, 10, 1)};
  return tsr_nn_sequential(10, layers);
}

// The progress line: a bar on a terminal, nothing otherwise (plain lines
// come once per epoch).
static void progress(int tty, int epoch, int epochs, int64_t done, int64_t total, double loss,
                     double rate, double eta) {
  if (!tty)
    return;
  const int width = 24;
  int filled = total > 0 ? (int)(width * done / total) : width;
  char bar[32];
  for (int i = 0; i < width; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[width] = '\0';
  printf("\repoch %d/%d [%s] %" PRId64 "/%" PRId64 "  loss %.4f  %.0f ex/s  ETA %d:%02d ", epoch,
         epochs, bar, done, total, loss, rate, (int)eta / 60, (int)eta % 60);
  fflush(stdout);
}

static int fail(const char *what) {
  fprintf(stderr, "tsr-train: %s: %s\n", what, tsr_last_error());
  return 1;
}

// Accuracy of |model| over every example of |test|.
static tsr_status evaluate(tsr_module *model, tsr_loader *test, double *out_accuracy) {
  int mode = tsr_grad_mode_set(0);
  tsr_module_train_set(model, 0);
  int64_t right = 0, seen = 0;
  tsr_status status = TSR_OK;
  for (;;) {
    size_t scope = tsr_scope_begin();
    tsr_tensor *x = NULL, *y = NULL;
    status = tsr_loader_next(test, &x, &y);
    if (status == TSR_NOT_FOUND) {
      status = TSR_OK;
      tsr_scope_end(scope);
      break;
    }
    tsr_tensor *logits = status == TSR_OK ? tsr_module_forward(model, x) : NULL;
    tsr_tensor *predicted = logits ? tsr_argmax(logits, 1, 0) : NULL;
    tsr_tensor *hits = predicted ? tsr_compare(predicted, y, TSR_COMPARE_EQ) : NULL;
    tsr_tensor *as_float = hits ? tsr_cast(hits, TSR_FLOAT32) : NULL;
    tsr_tensor *count = as_float ? tsr_sum(as_float, 0, NULL, 0) : NULL;
    float value = 0;
    if (status == TSR_OK) {
      status = count ? tsr_tensor_to_host(count, &value, sizeof(value)) : tsr_last_status();
    }
    if (status == TSR_OK) {
      right += (int64_t)value;
      seen += tsr_tensor_size(y, 0);
    }
    tsr_scope_end(scope);
    if (status != TSR_OK)
      break;
  }
  tsr_module_train_set(model, 1);
  tsr_grad_mode_set(mode);
  *out_accuracy = seen > 0 ? (double)right / (double)seen : 0.0;
  return status;
}

static tsr_status checkpoint_save(const options *o, tsr_module *model, tsr_optimizer *opt,
                                  tsr_context *context, int epochs_done) {
  char epoch[32], seed[32], offset[32], lr[64], batch[32];
  snprintf(epoch, sizeof(epoch), "%d", epochs_done);
  snprintf(seed, sizeof(seed), "%" PRIu64, o->seed);
  snprintf(offset, sizeof(offset), "%" PRIu64, tsr_context_rng_offset(context));
  snprintf(lr, sizeof(lr), "%.17g", o->lr);
  snprintf(batch, sizeof(batch), "%" PRId64, o->batch);
  const char *keys[] = {"tsr-train.model",      "tsr-train.epoch",   "tsr-train.seed",
                        "tsr-train.rng_offset", "tsr-train.base_lr", "tsr-train.batch"};
  const char *values[] = {o->model, epoch, seed, offset, lr, batch};
  return tsr_checkpoint_save(o->save, model, opt, 6, keys, values);
}

// 0 when every parameter of |model| is finite; otherwise 1 after naming the
// first that is not. A NaN or infinite weight trains on as NaN: the
// checkpoint came from a diverged run or a damaged file.
static int parameters_finite(const options *o, const tsr_module *model) {
  for (int32_t p = 0; p < tsr_module_parameter_count(model); ++p) {
    const char *name = NULL;
    tsr_tensor *t = NULL;
    if (tsr_module_parameter_get(model, p, &name, &t) != TSR_OK) return fail("--resume");
    tsr_tensor *wide = tsr_cast(t, TSR_FLOAT64);
    const int64_t n = tsr_tensor_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int bad = wide == NULL || v == NULL ||
              tsr_tensor_to_host(wide, v, (size_t)n * sizeof(double)) != TSR_OK;
    if (bad) {
      tsr_tensor_release(wide);
      free(v);
      return fail("--resume");
    }
    int64_t at = -1;
    for (int64_t i = 0; i < n && at < 0; ++i) {
      if (!isfinite(v[i])) at = i;
    }
    if (at >= 0) {
      fprintf(stderr,
              "tsr-train: --resume %s: parameter %s holds %g at element %lld; refusing to train "
              "from it (--allow-nonfinite to do so anyway)\n",
              o->resume, name, v[at], (long long)at);
    }
    tsr_tensor_release(wide);
    free(v);
    if (at >= 0) return 1;
  }
  return 0;
}

// Restores training state from o->resume; returns the epochs already done.
static int checkpoint_resume(options *o, tsr_module *model, tsr_optimizer *opt,
                             tsr_context *context, int *out_epochs_done) {
  tsr_safetensors *file = NULL;
  if (tsr_checkpoint_load(o->resume, model, opt, &file) != TSR_OK)
    return fail("--resume");
  const char *model_kind = tsr_safetensors_metadata(file, "tsr-train.model");
  const char *epoch = tsr_safetensors_metadata(file, "tsr-train.epoch");
  const char *seed = tsr_safetensors_metadata(file, "tsr-train.seed");
  const char *offset = tsr_safetensors_metadata(file, "tsr-train.rng_offset");
  const char *lr = tsr_safetensors_metadata(file, "tsr-train.base_lr");
  const char *batch = tsr_safetensors_metadata(file, "tsr-train.batch");
  int rc = 0;
  if (!model_kind || !epoch || !seed || !offset || !lr || !batch) {
    fprintf(stderr, "tsr-train: --resume %s: not a tsr-train checkpoint (metadata missing)\n",
            o->resume);
    rc = 1;
  } else if (strcmp(model_kind, o->model) != 0) {
    fprintf(stderr, "tsr-train: --resume %s holds a %s model, not %s\n", o->resume, model_kind,
            o->model);
    rc = 1;
  } else {
    // Parsed and checked exactly as the options they stand for: a file is
    // outside input, and "abc" must not restart at epoch 1 with trained
    // weights, nor a NaN rate train at lr 0.
    char what[4200];
    int64_t v_epoch = 0, v_seed = 0, v_offset = 0, v_batch = 0;
    double v_lr = 0;
    snprintf(what, sizeof(what), "--resume %s: tsr-train.epoch", o->resume);
    int ok = parse_int(what, epoch, 0, MAX_EPOCHS, &v_epoch);
    snprintf(what, sizeof(what), "--resume %s: tsr-train.seed", o->resume);
    ok = ok && parse_int(what, seed, 0, INT64_MAX, &v_seed);
    snprintf(what, sizeof(what), "--resume %s: tsr-train.rng_offset", o->resume);
    ok = ok && parse_int(what, offset, 0, INT64_MAX, &v_offset);
    snprintf(what, sizeof(what), "--resume %s: tsr-train.batch", o->resume);
    ok = ok && parse_int(what, batch, 1, 65536, &v_batch);
    snprintf(what, sizeof(what), "--resume %s: tsr-train.base_lr", o->resume);
    ok = ok && parse_lr(what, lr, &v_lr);
    if (!ok) {
      rc = 1;
    } else {
      *out_epochs_done = (int)v_epoch;
      o->seed = (uint64_t)v_seed;
      o->lr = v_lr;
      o->batch = v_batch;
      if (tsr_context_rng_offset_set(context, (uint64_t)v_offset) != TSR_OK)
        rc = fail("--resume: the random stream's offset");
    }
  }
  tsr_safetensors_close(file);
  return rc;
}

static int metrics_write(const options *o, int count, const int *epoch, const double *loss,
                         const double *accuracy, const double *seconds, const double *lr) {
  char path[4096];
  snprintf(path, sizeof(path), "%s.csv", o->metrics);
  char error[512];
  FILE *f = tsr_train_output_create(path, error, sizeof(error));
  if (f == NULL) {
    fprintf(stderr, "tsr-train: %s\n", error);
    return 1;
  }
  fprintf(f, "epoch,train_loss,test_accuracy,seconds,lr\n");
  for (int i = 0; i < count; ++i) {
    fprintf(f, "%d,%.6f,%.4f,%.2f,%.6g\n", epoch[i], loss[i], accuracy[i], seconds[i], lr[i]);
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "tsr-train: %s: %s\n", path, strerror(errno));
    return 1;
  }
  snprintf(path, sizeof(path), "%s.png", o->metrics);
  if (!tsr_train_plot_write(path, count, loss, accuracy, error, sizeof(error))) {
    fprintf(stderr, "tsr-train: %s\n", error);
    return 1;
  }
  return 0;
}

static int run(options *o) {
  struct stat st;
  if (stat(o->data, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr,
            "tsr-train: the data folder %s does not exist (Debian: apt-get install "
            "dataset-fashion-mnist; or pass --data DIR)\n",
            o->data);
    return 1;
  }
  // Every path written later is checked now, not after the first epoch.
  {
    char csv[4096], png[4096], error[4600];
    snprintf(csv, sizeof(csv), "%s.csv", o->metrics);
    snprintf(png, sizeof(png), "%s.png", o->metrics);
    const char *const outputs[] = {o->save, csv, png};
    const char *const flags[] = {"--save", "--metrics", "--metrics"};
    for (int i = 0; i < 3; ++i) {
      if (outputs[i] != NULL && tsr_train_output_check(outputs[i], error, sizeof(error)) != 0) {
        fprintf(stderr, "tsr-train: %s %s\n", flags[i], error);
        return 2;
      }
    }
  }
  tsr_context_options copts;
  tsr_context_options_init(&copts);
  copts.device = o->device;
  tsr_context *context = NULL;
  if (tsr_context_create(&copts, &context) != TSR_OK)
    return fail("context");
  int rc = 1;
  tsr_device *device = tsr_context_default_device(context);
  tsr_dataset *train = NULL, *test = NULL;
  tsr_loader *train_loader = NULL, *test_loader = NULL;
  tsr_module *model = NULL;
  tsr_optimizer *opt = NULL;
  tsr_lr_schedule *schedule = NULL;
  tsr_tensor *loss_sum = NULL;
  int epochs_done = 0, count = 0;
  int epoch_of[MAX_EPOCHS];
  double losses[MAX_EPOCHS], accuracies[MAX_EPOCHS], seconds[MAX_EPOCHS], lrs[MAX_EPOCHS];

  if (tsr_context_seed_set(context, o->seed) != TSR_OK) {
    fail("seed");
    goto done;
  }
  model = model_create(device, o->model);
  if (model == NULL) {
    fail("model");
    goto done;
  }
  tsr_adam_options adam;
  tsr_adam_options_init(&adam);
  adam.lr = o->lr;
  opt = tsr_optim_adam_for_module(model, &adam);
  if (opt == NULL) {
    fail("optimizer");
    goto done;
  }
  if (o->resume != NULL && (checkpoint_resume(o, model, opt, context, &epochs_done) != 0 ||
                            (!o->allow_nonfinite && parameters_finite(o, model) != 0)))
    goto done;
  // The schedule's base lr is the run's --lr (the checkpoint's on resume).
  schedule = tsr_optimizer_lr_set(opt, o->lr) == TSR_OK ? tsr_lr_cosine(opt, o->epochs, 0.0) : NULL;
  if (schedule == NULL || tsr_lr_schedule_epoch_set(schedule, epochs_done) != TSR_OK) {
    fail("schedule");
    goto done;
  }
  if (epochs_done >= o->epochs) {
    fprintf(stderr, "tsr-train: the checkpoint has %d epochs already; --epochs is %d\n",
            epochs_done, o->epochs);
    goto done;
  }

  tsr_idx_options idx;
  tsr_idx_options_init(&idx);
  idx.mean = DATA_MEAN;
  idx.std = DATA_STD;
  // Both splits: a test label out of range would score 0% without a word.
  idx.num_classes = 10;
  idx.limit = o->train_limit;
  if (tsr_dataset_mnist_open(o->data, "train", &idx, &train) != TSR_OK) {
    fail("training data");
    goto done;
  }
  idx.limit = 0;
  if (tsr_dataset_mnist_open(o->data, "test", &idx, &test) != TSR_OK) {
    fail("test data");
    goto done;
  }
  tsr_loader_options lopts;
  tsr_loader_options_init(&lopts);
  lopts.batch_size = o->batch;
  lopts.seed = o->seed;
  if (tsr_loader_create(train, device, &lopts, &train_loader) != TSR_OK ||
      tsr_loader_seek(train_loader, epochs_done, 0) != TSR_OK) {
    fail("training loader");
    goto done;
  }
  lopts.batch_size = 1000;
  lopts.shuffle = 0;
  if (tsr_loader_create(test, device, &lopts, &test_loader) != TSR_OK) {
    fail("test loader");
    goto done;
  }
  loss_sum = tsr_zeros(device, TSR_FLOAT32, 0, NULL);
  if (loss_sum == NULL) {
    fail("loss accumulator");
    goto done;
  }

  const int tty = isatty(STDOUT_FILENO);
  const int64_t batches = tsr_loader_batch_count(train_loader);
  printf("tsr-train: %s on %s, %" PRId64 " training and %" PRId64 " test images, batch %" PRId64
         ", Adam lr %g (cosine), epochs %d..%d\n",
         o->model, tsr_device_name(device), tsr_dataset_size(train), tsr_dataset_size(test),
         o->batch, o->lr, epochs_done + 1, o->epochs);
  for (int epoch = epochs_done; epoch < o->epochs; ++epoch) {
    double start = now(), shown = 0;
    double lr = tsr_optimizer_lr(opt);
    float shown_loss = 0;
    int64_t done_batches = 0, examples = 0;
    if (tsr_fill_(loss_sum, 0.0) != TSR_OK) {
      fail("loss sum");
      goto done;
    }
    for (;;) {
      size_t scope = tsr_scope_begin();
      tsr_tensor *x = NULL, *y = NULL;
      tsr_status status = tsr_loader_next(train_loader, &x, &y);
      if (status == TSR_NOT_FOUND) {
        tsr_scope_end(scope);
        break;
      }
      tsr_optimizer_zero_grad(opt);
      tsr_tensor *logits = status == TSR_OK ? tsr_module_forward(model, x) : NULL;
      tsr_tensor *loss = logits ? tsr_nn_cross_entropy(logits, y, TSR_REDUCTION_MEAN, 0.0) : NULL;
      if (status == TSR_OK)
        status = loss ? tsr_backward(loss, NULL, 0) : tsr_last_status();
      if (status == TSR_OK)
        status = tsr_optimizer_step(opt);
      if (status == TSR_OK) {
        int mode = tsr_grad_mode_set(0);
        status = tsr_binary_out(loss_sum, loss_sum, loss, TSR_BINARY_ADD, 1.0);
        tsr_grad_mode_set(mode);
      }
      ++done_batches;
      examples += status == TSR_OK ? tsr_tensor_size(y, 0) : 0;
      double t = now();
      if (status == TSR_OK && tty && (t - shown > 0.2 || done_batches == batches)) {
        status = tsr_tensor_to_host(loss, &shown_loss, sizeof(shown_loss));
        double rate = examples / (t - start);
        double eta = rate > 0 ? (double)(batches - done_batches) * o->batch / rate : 0;
        progress(tty, epoch + 1, o->epochs, done_batches, batches, shown_loss, rate, eta);
        shown = t;
      }
      tsr_scope_end(scope);
      if (status != TSR_OK) {
        if (tty)
          printf("\n");
        fail("training step");
        goto done;
      }
    }
    float total = 0;
    if (tsr_tensor_to_host(loss_sum, &total, sizeof(total)) != TSR_OK) {
      fail("loss");
      goto done;
    }
    double train_seconds = now() - start;
    double accuracy = 0;
    if (evaluate(model, test_loader, &accuracy) != TSR_OK) {
      fail("evaluation");
      goto done;
    }
    if (tty)
      printf("\r%*s\r", 100, "");
    double mean_loss = done_batches > 0 ? total / (double)done_batches : 0.0;
    printf("epoch %d/%d  loss %.4f  test accuracy %.2f%%  %.1f s (%.0f images/s)  lr %.3g\n",
           epoch + 1, o->epochs, mean_loss, 100.0 * accuracy, train_seconds,
           examples / train_seconds, lr);
    fflush(stdout);
    epoch_of[count] = epoch + 1;
    losses[count] = mean_loss;
    accuracies[count] = accuracy;
    seconds[count] = train_seconds;
    lrs[count] = lr;
    ++count;
    if (tsr_lr_schedule_step(schedule) != TSR_OK) {
      fail("schedule");
      goto done;
    }
    if (o->save != NULL && checkpoint_save(o, model, opt, context, epoch + 1) != TSR_OK) {
      fail("--save");
      goto done;
    }
  }
  rc = metrics_write(o, count, epoch_of, losses, accuracies, seconds, lrs);
done:
  tsr_tensor_release(loss_sum);
  tsr_loader_destroy(train_loader);
  tsr_loader_destroy(test_loader);
  tsr_dataset_destroy(train);
  tsr_dataset_destroy(test);
  tsr_lr_schedule_destroy(schedule);
  tsr_optimizer_destroy(opt);
  tsr_module_destroy(model);
  tsr_context_destroy(context);
  return rc;
}

int main(int argc, char **argv) {
  options o;
  int parsed = options_parse(argc, argv, &o);
  if (parsed == 1)
    return 0;  // --help
  if (parsed != 0)
    return parsed;
  return run(&o);
}
