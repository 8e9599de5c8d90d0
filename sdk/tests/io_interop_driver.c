// The Tessera half of io_python_interop (io_interop.py runs it):
//   io_interop_driver write PATH  writes a safetensors file of every dtype
//                                 that Python then checks;
//   io_interop_driver read PATH   checks a file Python wrote with
//                                 safetensors.torch.save_file.
// Values follow formulas both sides know. Exit 0 when every check passed.
// Compile definition: TSR_TEST_REF_PATH (the ref plugin).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"

static int g_failures;

#define CHECK(cond, ...)                     \
  do {                                       \
    if (!(cond)) {                           \
      fprintf(stderr, "FAIL: " __VA_ARGS__); \
      fprintf(stderr, "\n");                 \
      ++g_failures;                          \
    }                                        \
  } while (0)

static tsr_tensor *from_doubles(tsr_device *device, tsr_dtype_t dtype, int32_t rank,
                                const int64_t *sizes, double (*f)(int64_t)) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  double v[64];
  for (int64_t i = 0; i < n; ++i) v[i] = f(i);
  tsr_tensor *t64 = tsr_tensor_from_host(device, TSR_FLOAT64, rank, sizes, v);
  if (t64 == NULL || dtype == TSR_FLOAT64)
    return t64;
  tsr_tensor *t = tsr_cast(t64, dtype);
  tsr_tensor_release(t64);
  return t;
}

static double f_f32(int64_t i) {
  return (double)(i % 7) - 3 + 0.5;
}
static double f_f64(int64_t i) {
  return (double)i * 0.25;
}
static double f_bf16(int64_t i) {
  return ((double)i - 1) * 1.5;
}
static double f_f16(int64_t i) {
  return (double)i - 2;
}
static double f_i32(int64_t i) {
  return (double)i * 1000 - 7;
}
static double f_i64(int64_t i) {
  return (double)i * 1099511627776.0;
}  // i * 2^40
static double f_bool(int64_t i) {
  return (double)(i % 2);
}
static double f_scalar(int64_t i) {
  return 3.25 + (double)i;
}

static int write_file(tsr_device *device, const char *path) {
  tsr_tensor *t[8];
  t[0] = from_doubles(device, TSR_FLOAT32, 2, (int64_t[]){2, 3}, f_f32);
  t[1] = from_doubles(device, TSR_FLOAT64, 1, (int64_t[]){4}, f_f64);
  t[2] = from_doubles(device, TSR_BFLOAT16, 1, (int64_t[]){3}, f_bf16);
  t[3] = from_doubles(device, TSR_FLOAT16, 2, (int64_t[]){2, 2}, f_f16);
  t[4] = from_doubles(device, TSR_INT32, 1, (int64_t[]){3}, f_i32);
  t[5] = from_doubles(device, TSR_INT64, 2, (int64_t[]){2, 2}, f_i64);
  t[6] = from_doubles(device, TSR_BOOL, 1, (int64_t[]){5}, f_bool);
  t[7] = from_doubles(device, TSR_FLOAT64, 0, NULL, f_scalar);
  for (int i = 0; i < 8; ++i) {
    if (t[i] == NULL) {
      fprintf(stderr, "tensor %d: %s\n", i, tsr_last_error());
      return 1;
    }
  }
  tsr_tensor *transposed = tsr_transpose(t[0], 0, 1);
  tsr_named_tensor named[9] = {{"f32", t[0]},  {"f64", t[1]},    {"bf16", t[2]},
                               {"f16", t[3]},  {"i32", t[4]},    {"i64", t[5]},
                               {"bool", t[6]}, {"scalar", t[7]}, {"transposed", transposed}};
  const char *keys[2] = {"format", "epoch"}, *values[2] = {"pt", "7"};
  tsr_status status = tsr_safetensors_save(path, 9, named, 2, keys, values);
  if (status != TSR_OK)
    fprintf(stderr, "save: %s\n", tsr_last_error());
  tsr_tensor_release(transposed);
  for (int i = 0; i < 8; ++i) tsr_tensor_release(t[i]);
  return status != TSR_OK;
}

// What torch wrote (io_interop.py, torch_tensors()).
static double p_f32(int64_t i) {
  return (double)i * 0.5;
}
static double p_f64(int64_t i) {
  return (double)i * -0.25;
}
static double p_i64(int64_t i) {
  return (double)i * 1099511627776.0 - 3;
}
static double p_bool(int64_t i) {
  return (double)(i % 3 == 0);
}
static double p_bf16(int64_t i) {
  return (double)i * 2.5 - 4;
}
static double p_f16(int64_t i) {
  return (double)i * 0.125;
}
static double p_i32(int64_t i) {
  return (double)i * -100000;
}

static void check_entry(tsr_device *device, const tsr_safetensors *file, const char *name,
                        tsr_dtype_t dtype, int32_t rank, const int64_t *sizes,
                        double (*f)(int64_t)) {
  tsr_tensor *t = tsr_safetensors_tensor(file, name, device);
  if (t == NULL) {
    CHECK(0, "%s: %s", name, tsr_last_error());
    return;
  }
  CHECK(tsr_tensor_dtype(t) == dtype, "%s: dtype %d, want %d", name, tsr_tensor_dtype(t), dtype);
  CHECK(tsr_tensor_rank(t) == rank, "%s: rank %d, want %d", name, tsr_tensor_rank(t), rank);
  for (int32_t d = 0; d < rank && d < tsr_tensor_rank(t); ++d) {
    CHECK(tsr_tensor_size(t, d) == sizes[d], "%s: size %d is %lld", name, d,
          (long long)tsr_tensor_size(t, d));
  }
  tsr_tensor *t64 = dtype == TSR_FLOAT64 ? tsr_tensor_retain(t) : tsr_cast(t, TSR_FLOAT64);
  int64_t n = tsr_tensor_numel(t);
  double got[64];
  if (t64 == NULL || n > 64 || tsr_tensor_to_host(t64, got, (size_t)n * 8) != TSR_OK) {
    CHECK(0, "%s: cannot read: %s", name, tsr_last_error());
  } else {
    for (int64_t i = 0; i < n; ++i) {
      CHECK(got[i] == f(i), "%s[%lld] is %.17g, want %.17g", name, (long long)i, got[i], f(i));
    }
  }
  tsr_tensor_release(t64);
  tsr_tensor_release(t);
}

static int read_file(tsr_device *device, const char *path) {
  tsr_safetensors *file = NULL;
  if (tsr_safetensors_open(path, &file) != TSR_OK) {
    fprintf(stderr, "open: %s\n", tsr_last_error());
    return 1;
  }
  CHECK(tsr_safetensors_count(file) == 7, "count %d, want 7", tsr_safetensors_count(file));
  const char *source = tsr_safetensors_metadata(file, "source");
  CHECK(source != NULL && strcmp(source, "torch") == 0, "metadata source is %s",
        source ? source : "absent");
  check_entry(device, file, "f32", TSR_FLOAT32, 2, (int64_t[]){2, 3}, p_f32);
  check_entry(device, file, "f64", TSR_FLOAT64, 1, (int64_t[]){4}, p_f64);
  check_entry(device, file, "i64", TSR_INT64, 2, (int64_t[]){5, 1}, p_i64);
  check_entry(device, file, "bool", TSR_BOOL, 1, (int64_t[]){7}, p_bool);
  check_entry(device, file, "bf16", TSR_BFLOAT16, 1, (int64_t[]){4}, p_bf16);
  check_entry(device, file, "f16", TSR_FLOAT16, 3, (int64_t[]){2, 1, 2}, p_f16);
  check_entry(device, file, "i32", TSR_INT32, 0, NULL, p_i32);
  tsr_safetensors_close(file);
  return g_failures != 0;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
    fprintf(stderr, "usage: %s write|read PATH\n", argv[0]);
    return 2;
  }
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_REF_PATH;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  tsr_context *context = NULL;
  if (tsr_context_create(&options, &context) != TSR_OK) {
    fprintf(stderr, "context: %s\n", tsr_last_error());
    return 1;
  }
  tsr_device *device = tsr_context_default_device(context);
  int rc = strcmp(argv[1], "write") == 0 ? write_file(device, argv[2]) : read_file(device, argv[2]);
  tsr_context_destroy(context);
  if (rc == 0)
    printf("io_interop_driver %s %s: ok\n", argv[1], argv[2]);
  return rc;
}
