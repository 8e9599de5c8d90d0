// A PNG chart of training loss and test accuracy per epoch: a small RGB
// raster, two polylines, axes with tick labels in a 3x5 digit font, written
// as PNG through zlib (filter 0 rows, one IDAT chunk).
#include "plot.h"

#include "output.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define W 640
#define H 400
#define LEFT 60
#define RIGHT 60
#define TOP 20
#define BOTTOM 40

typedef struct raster {
  unsigned char px[H][W][3];
} raster;

static void put(raster *r, int x, int y, const unsigned char c[3]) {
  if (x < 0 || y < 0 || x >= W || y >= H)
    return;
  memcpy(r->px[y][x], c, 3);
}

static void line(raster *r, double x0, double y0, double x1, double y1, const unsigned char c[3],
                 int thick) {
  double dx = x1 - x0, dy = y1 - y0;
  int steps = (int)(fabs(dx) > fabs(dy) ? fabs(dx) : fabs(dy)) + 1;
  for (int i = 0; i <= steps; ++i) {
    double t = (double)i / steps;
    int x = (int)lround(x0 + t * dx), y = (int)lround(y0 + t * dy);
    for (int a = -thick; a <= thick; ++a) {
      for (int b = -thick; b <= thick; ++b) put(r, x + a, y + b, c);
    }
  }
}

// 3x5 glyphs for "0123456789.%", one row per 3-bit pattern.
static const unsigned char kGlyphs[12][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
    {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
    {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}, {0, 0, 0, 0, 2}, {5, 1, 2, 4, 5},
};

// Draws |text| (digits, '.', '%') with its top-left corner at (x, y), scale 2.
static void text(raster *r, int x, int y, const char *s, const unsigned char c[3]) {
  for (; *s; ++s, x += 8) {
    int g = *s >= '0' && *s <= '9' ? *s - '0' : *s == '.' ? 10 : *s == '%' ? 11 : -1;
    if (g < 0)
      continue;
    for (int row = 0; row < 5; ++row) {
      for (int col = 0; col < 3; ++col) {
        if (!(kGlyphs[g][row] & (4 >> col)))
          continue;
        for (int a = 0; a < 2; ++a) {
          for (int b = 0; b < 2; ++b) put(r, x + 2 * col + a, y + 2 * row + b, c);
        }
      }
    }
  }
}

static void be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static int chunk(FILE *f, const char *type, const unsigned char *data, uint32_t size) {
  unsigned char head[8];
  be32(head, size);
  memcpy(head + 4, type, 4);
  uLong crc = crc32(0, (const Bytef *)type, 4);
  if (size > 0)
    crc = crc32(crc, data, size);
  unsigned char tail[4];
  be32(tail, (uint32_t)crc);
  return fwrite(head, 1, 8, f) == 8 && (size == 0 || fwrite(data, 1, size, f) == size) &&
         fwrite(tail, 1, 4, f) == 4;
}

static int png_write(const char *path, const raster *r, char *error, size_t error_size) {
  const size_t row = 1 + 3 * W, raw_size = row * H;
  unsigned char *raw = malloc(raw_size);
  uLongf packed_size = compressBound((uLong)raw_size);
  unsigned char *packed = malloc(packed_size);
  int ok = raw != NULL && packed != NULL;
  if (ok) {
    for (int y = 0; y < H; ++y) {
      raw[y * row] = 0;  // filter: none
      memcpy(raw + y * row + 1, r->px[y], 3 * W);
    }
    ok = compress2(packed, &packed_size, raw, (uLong)raw_size, 9) == Z_OK;
  }
  FILE *f = ok ? tsr_train_output_create(path, error, error_size) : NULL;
  if (ok && f == NULL) {
    free(raw);
    free(packed);
    return 0;
  }
  if (ok) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char ihdr[13];
    be32(ihdr, W);
    be32(ihdr + 4, H);
    ihdr[8] = 8;   // bit depth
    ihdr[9] = 2;   // RGB
    ihdr[10] = 0;  // deflate
    ihdr[11] = 0;  // filter method
    ihdr[12] = 0;  // no interlace
    ok = fwrite(signature, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) &&
         chunk(f, "IDAT", packed, (uint32_t)packed_size) && chunk(f, "IEND", NULL, 0);
    ok = (fclose(f) == 0) && ok;
  }
  if (!ok)
    snprintf(error, error_size, "%s: cannot write the PNG", path);
  free(raw);
  free(packed);
  return ok;
}

int tsr_train_plot_write(const char *path, int count, const double *loss, const double *accuracy,
                         char *error, size_t error_size) {
  raster *r = malloc(sizeof(*r));
  if (r == NULL) {
    snprintf(error, error_size, "%s: no memory for the chart", path);
    return 0;
  }
  memset(r, 255, sizeof(*r));
  static const unsigned char axis[3] = {60, 60, 60}, grid[3] = {225, 225, 225};
  static const unsigned char blue[3] = {31, 119, 180}, orange[3] = {255, 127, 14};
  const int x0 = LEFT, x1 = W - RIGHT, y0 = H - BOTTOM, y1 = TOP;
  double loss_max = 0;
  for (int i = 0; i < count; ++i) loss_max = loss[i] > loss_max ? loss[i] : loss_max;
  if (!(loss_max > 0))
    loss_max = 1;
  // Horizontal grid at fifths; loss on the left, accuracy (0-100%) on the right.
  for (int k = 0; k <= 5; ++k) {
    double y = y0 + (y1 - y0) * k / 5.0;
    line(r, x0, y, x1, y, grid, 0);
    char label[16];
    snprintf(label, sizeof(label), "%.2f", loss_max * k / 5.0);
    text(r, 4, (int)y - 5, label, blue);
    snprintf(label, sizeof(label), "%d%%", 20 * k);
    text(r, x1 + 6, (int)y - 5, label, orange);
  }
  line(r, x0, y0, x1, y0, axis, 0);
  line(r, x0, y0, x0, y1, axis, 0);
  line(r, x1, y0, x1, y1, axis, 0);
  const int n = count > 1 ? count - 1 : 1;
  for (int i = 0; i < count; ++i) {
    double x = x0 + (double)(x1 - x0) * i / n;
    char label[16];
    snprintf(label, sizeof(label), "%d", i + 1);
    text(r, (int)x - 3, y0 + 8, label, axis);
    line(r, x, y0, x, y0 + 4, axis, 0);
  }
  for (int i = 0; i < count; ++i) {
    double x = x0 + (double)(x1 - x0) * i / n;
    double yl = y0 + (y1 - y0) * (loss[i] / loss_max);
    double ya = y0 + (y1 - y0) * accuracy[i];
    if (i > 0) {
      double xp = x0 + (double)(x1 - x0) * (i - 1) / n;
      line(r, xp, y0 + (y1 - y0) * (loss[i - 1] / loss_max), x, yl, blue, 1);
      line(r, xp, y0 + (y1 - y0) * accuracy[i - 1], x, ya, orange, 1);
    }
    line(r, x - 3, yl, x + 3, yl, blue, 1);
    line(r, x - 3, ya, x + 3, ya, orange, 1);
  }
  int ok = png_write(path, r, error, error_size);
  free(r);
  return ok;
}
