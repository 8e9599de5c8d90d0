// Prints, per op, the engine and a hash of the output bytes of the own
// kernels whose register tiles differ between the plugin's builds of them
// (TSR_ONEDNN_ISA: avx2, avx512): the direct conv forward (row tiles), the
// direct filter gradient (threes of taps) and the batch-1 product (register
// blocks, and rows read end to end). ctest runs it once per build and
// compares the lines: the kernels sum each output in the same order in
// every build, so the bits must agree. Exits 1 when an op fails or does not
// run on an own kernel (TSR_ONEDNN_SELECT=default keeps the cold routes,
// which are the own kernels for these shapes).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"

static tsr_device *g_device;

static tsr_tensor *tensor_make(int32_t rank, const int64_t *sizes, uint64_t seed) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= sizes[d];
  float *v = malloc(sizeof(float) * (size_t)n);
  if (v == NULL) return NULL;
  uint64_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = (float)((double)(s >> 40) / (double)(1 << 24) - 0.5);
  }
  tsr_tensor *t = tsr_tensor_from_host(g_device, TSR_FLOAT32, rank, sizes, v);
  free(v);
  return t;
}

// Prints "<what> <engine> <FNV-1a of t's bytes>"; 0, or 1 after saying why.
static int report(const char *what, tsr_op_id_t op, int32_t num_inputs, tsr_tensor *const *inputs,
                  int32_t num_outputs, tsr_tensor *const *outputs, const void *attrs,
                  const tsr_tensor *t) {
  const char *engine = NULL;
  if (t == NULL ||
      tsr_op_engine_get(op, num_inputs, inputs, num_outputs, outputs, attrs, &engine) != TSR_OK) {
    fprintf(stderr, "%s: %s\n", what, tsr_last_error());
    return 1;
  }
  if (strncmp(engine, "own:", 4) != 0) {
    fprintf(stderr, "%s ran on %s, not an own kernel\n", what, engine);
    return 1;
  }
  const size_t bytes = (size_t)tsr_tensor_numel(t) * sizeof(float);
  unsigned char *data = malloc(bytes);
  if (data == NULL || tsr_tensor_to_host(t, data, bytes) != TSR_OK) {
    fprintf(stderr, "%s: reading the output: %s\n", what, tsr_last_error());
    free(data);
    return 1;
  }
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ data[i]) * 1099511628211ULL;
  free(data);
  // The engine name without its " [default]" tag: the same for both builds.
  printf("%s %.*s %016llx\n", what, (int)strcspn(engine, " "), engine, (unsigned long long)h);
  return 0;
}

int main(void) {
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_ONEDNN_PATH;
  options.device = "onednn:0";
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  options.fallback = TSR_FALLBACK_DENY;
  tsr_context *context = NULL;
  if (tsr_context_create(&options, &context) != TSR_OK) {
    fprintf(stderr, "tsr_context_create: %s\n", tsr_last_error());
    return 1;
  }
  g_device = tsr_context_default_device(context);
  int failed = 0;

  // CNN layer 2 at 4 images (13 -> 11 wide rows: row tiles of 11), with bias.
  const int64_t xs[4] = {4, 32, 13, 13}, ws[4] = {64, 32, 3, 3}, bs[1] = {64};
  const int64_t dys[4] = {4, 64, 11, 11};
  tsr_tensor *x = tensor_make(4, xs, 1), *w = tensor_make(4, ws, 2), *b = tensor_make(1, bs, 3);
  tsr_tensor *dy = tensor_make(4, dys, 4);
  tsr_conv2d_attrs attrs = {sizeof(attrs), {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1,
                            TSR_ACTIVATION_NONE, 1};
  tsr_tensor *y = tsr_conv2d(x, w, b, &attrs);
  tsr_tensor *conv_in[3] = {x, w, b}, *conv_out[1] = {y};
  failed |= report("conv2d", TSR_OP_CONV2D, 3, conv_in, 1, conv_out, &attrs, y);
  tsr_tensor *dw = NULL, *db = NULL;
  if (tsr_conv2d_backward_filter(dy, x, ws, &attrs, &dw, &db) != TSR_OK) {
    fprintf(stderr, "conv2d_backward_filter: %s\n", tsr_last_error());
    failed = 1;
  } else {
    tsr_tensor *f_in[2] = {dy, x}, *f_out[2] = {dw, db};
    failed |= report("conv2d_backward_filter", TSR_OP_CONV2D_BACKWARD_FILTER, 2, f_in, 2, f_out,
                     &attrs, dw);
    failed |= report("conv2d_backward_filter.bias", TSR_OP_CONV2D_BACKWARD_FILTER, 2, f_in, 2,
                     f_out, &attrs, db);
  }

  // Batch-1 products: 600 columns (register blocks and a tail), and a B of
  // 4.3 MiB (row streaming).
  const int64_t shapes[2][2] = {{300, 600}, {1101, 1030}};
  for (int i = 0; i < 2; ++i) {
    const int64_t as[2] = {1, shapes[i][0]}, bsz[2] = {shapes[i][0], shapes[i][1]};
    const int64_t biass[2] = {1, shapes[i][1]};
    tsr_tensor *a = tensor_make(2, as, 10 + (uint64_t)i), *m = tensor_make(2, bsz, 20 + (uint64_t)i);
    tsr_tensor *bias = tensor_make(2, biass, 30 + (uint64_t)i);
    tsr_tensor *c = tsr_matmul_ex(a, m, bias, TSR_ACTIVATION_RELU);
    tsr_matmul_attrs mattrs = {sizeof(mattrs), 1.0, 0.0, TSR_ACTIVATION_RELU, 1};
    tsr_tensor *mm_in[3] = {a, m, bias}, *mm_out[1] = {c};
    failed |= report(i == 0 ? "gemv.blocks" : "gemv.stream", TSR_OP_MATMUL, 3, mm_in, 1, mm_out,
                     &mattrs, c);
    tsr_tensor_release(c);
    tsr_tensor_release(bias);
    tsr_tensor_release(m);
    tsr_tensor_release(a);
  }
  tsr_tensor_release(db);
  tsr_tensor_release(dw);
  tsr_tensor_release(y);
  tsr_tensor_release(dy);
  tsr_tensor_release(b);
  tsr_tensor_release(w);
  tsr_tensor_release(x);
  tsr_context_destroy(context);
  return failed;
}
