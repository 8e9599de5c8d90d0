// hello.c: a first Tessera program.
//
// On the default device it computes
//     y = x @ w + b      a matrix product, then b added to every row (broadcast)
//     s = y summed along each row
// copies y and s back to the host, computes the same in plain C, prints both
// and exits 0 only if they agree.
//
// Against an installed Tessera:
//     cc -std=c11 hello.c $(pkg-config --cflags --libs tessera) -lm -o hello
// Pick a device with TSR_DEVICE=ref (or onednn, opencl, cuda:0); tsr-info
// lists what this machine has.
#include <math.h>
#include <stdio.h>
#include <tessera/tessera.h>

enum { ROWS = 2, INNER = 3, COLS = 4 };

int main(void) {
  // Host data, row-major, as plain C arrays.
  const float x_data[ROWS][INNER] = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
  const float w_data[INNER][COLS] = {
      {0.5f, -1.0f, 2.0f, 0.0f}, {1.0f, 0.25f, -0.5f, 3.0f}, {-2.0f, 1.0f, 0.0f, 0.75f}};
  const float b_data[COLS] = {0.1f, 0.2f, 0.3f, 0.4f};

  // 1. A context loads the plugins and picks the best device (or TSR_DEVICE).
  tsr_context *context = NULL;
  if (tsr_context_create(NULL, &context) != TSR_OK) {
    fprintf(stderr, "hello: no context: %s\n", tsr_last_error());
    return 1;
  }
  tsr_device *device = tsr_context_default_device(context);
  printf("device: %s\n", tsr_device_name(device));

  // 2. Tensors are handles; from_host copies the data onto the device.
  const int64_t x_sizes[2] = {ROWS, INNER};
  const int64_t w_sizes[2] = {INNER, COLS};
  const int64_t b_sizes[1] = {COLS};
  tsr_tensor *x = tsr_tensor_from_host(device, TSR_FLOAT32, 2, x_sizes, x_data);
  tsr_tensor *w = tsr_tensor_from_host(device, TSR_FLOAT32, 2, w_sizes, w_data);
  tsr_tensor *b = tsr_tensor_from_host(device, TSR_FLOAT32, 1, b_sizes, b_data);

  // 3. Each op returns a new tensor, or NULL if it failed. A failure also
  // sticks to the context and makes later ops on NULL fail too, so one check
  // after the whole chain is enough.
  tsr_tensor *xw = tsr_matmul(x, w);  // [ROWS, COLS]
  tsr_tensor *y = tsr_add(xw, b);     // b [COLS] broadcasts over rows
  const int32_t row_axis[1] = {1};
  tsr_tensor *s = tsr_sum(y, 1, row_axis, /*keepdim=*/0);  // [ROWS]

  // 4. Copying back waits for the device to finish the work.
  float y_got[ROWS][COLS] = {{0}};
  float s_got[ROWS] = {0};
  int computed = tsr_context_status(context) == TSR_OK &&
                 tsr_tensor_to_host(y, y_got, sizeof(y_got)) == TSR_OK &&
                 tsr_tensor_to_host(s, s_got, sizeof(s_got)) == TSR_OK;
  if (!computed) {
    const char *why = tsr_context_status(context) != TSR_OK ? tsr_context_error_message(context)
                                                            : tsr_last_error();
    fprintf(stderr, "hello: %s\n", why);
  }

  // 5. The same computation in plain C, in double, to check against.
  int ok = computed;
  for (int i = 0; computed && i < ROWS; ++i) {
    double row_sum = 0.0;
    for (int j = 0; j < COLS; ++j) {
      double want = b_data[j];
      for (int k = 0; k < INNER; ++k) want += (double)x_data[i][k] * w_data[k][j];
      row_sum += want;
      printf("y[%d][%d] = %9.4f  (plain C %9.4f)\n", i, j, y_got[i][j], want);
      // float32 keeps about 7 digits; allow a few rounding steps.
      if (fabs(y_got[i][j] - want) > 1e-5 * (1.0 + fabs(want)))
        ok = 0;
    }
    printf("s[%d]    = %9.4f  (plain C %9.4f)\n", i, s_got[i], row_sum);
    if (fabs(s_got[i] - row_sum) > 1e-5 * (1.0 + fabs(row_sum)))
      ok = 0;
  }
  if (computed)
    printf("%s\n", ok ? "results agree" : "results DIFFER");

  // 6. Release every handle; release(NULL) is allowed.
  tsr_tensor_release(s);
  tsr_tensor_release(y);
  tsr_tensor_release(xw);
  tsr_tensor_release(b);
  tsr_tensor_release(w);
  tsr_tensor_release(x);
  tsr_context_destroy(context);
  return ok ? 0 : 1;
}
