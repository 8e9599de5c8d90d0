// Per-example image transforms run by the loader: random crop with zero
// padding, random horizontal flip, per-channel normalisation. Checked and
// sized once when the loader is created; applied on the thread that fills
// batches, into buffers allocated then (no allocation per example).
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"
#include "tessera/core_layer.h"

tsr_transform tsr_transform_random_crop(int32_t field, int64_t height, int64_t width,
                                        int64_t padding) {
  tsr_transform t;
  memset(&t, 0, sizeof(t));
  t.kind = TSR_TRANSFORM_RANDOM_CROP;
  t.field = field;
  t.height = height;
  t.width = width;
  t.padding = padding;
  return t;
}

tsr_transform tsr_transform_random_hflip(int32_t field, double probability) {
  tsr_transform t;
  memset(&t, 0, sizeof(t));
  t.kind = TSR_TRANSFORM_RANDOM_HFLIP;
  t.field = field;
  t.probability = probability;
  return t;
}

tsr_transform tsr_transform_normalize(int32_t field, int32_t channels, const float *mean,
                                      const float *std) {
  tsr_transform t;
  memset(&t, 0, sizeof(t));
  t.kind = TSR_TRANSFORM_NORMALIZE;
  t.field = field;
  t.channels = channels;
  t.mean = mean;
  t.std = std;
  return t;
}

void tsr_transforms_free(tsr_loader_transform *list, uint32_t count) {
  if (list == NULL)
    return;
  for (uint32_t i = 0; i < count; ++i) free(list[i].scale);
  free(list);
}

tsr_status tsr_transforms_prepare(const tsr_transform *transforms, uint32_t count,
                                  int32_t field_count, tsr_dataset_field *fields,
                                  size_t *scratch_bytes, tsr_loader_transform **out_list) {
  const char *what = "loader_create";
  *out_list = NULL;
  for (int32_t f = 0; f < field_count; ++f) scratch_bytes[f] = fields[f].example_bytes;
  if (count == 0)
    return TSR_OK;
  if (transforms == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "%s: options->transforms is NULL with %u", what,
                         count);
  }
  tsr_loader_transform *list = calloc(count, sizeof(*list));
  if (list == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate transforms", what);
  tsr_status status = TSR_OK;
  for (uint32_t i = 0; i < count && status == TSR_OK; ++i) {
    const tsr_transform *t = &transforms[i];
    tsr_loader_transform *l = &list[i];
    l->kind = t->kind;
    l->field = t->field;
    if (t->field < 0 || t->field >= field_count) {
      status =
          tsr_error_set(TSR_INVALID_ARGUMENT, "%s: transforms[%u].field is %d, outside [0, %d)",
                        what, i, t->field, field_count);
      break;
    }
    tsr_dataset_field *field = &fields[t->field];
    if (field->dtype != TSR_FLOAT32 || (field->rank != 2 && field->rank != 3)) {
      status = tsr_error_set(TSR_INVALID_ARGUMENT,
                             "%s: transforms[%u]: field %d must be float32 [C, H, W] or [H, W] "
                             "(it is dtype %d of rank %d)",
                             what, i, t->field, (int)field->dtype, field->rank);
      break;
    }
    int32_t r = field->rank;
    l->c = r == 3 ? field->sizes[0] : 1;
    l->h = field->sizes[r - 2];
    l->w = field->sizes[r - 1];
    l->out_h = l->h;
    l->out_w = l->w;
    if (t->kind == TSR_TRANSFORM_RANDOM_CROP) {
      l->padding = t->padding;
      if (t->padding < 0 || t->padding > 65536 || t->height < 1 || t->width < 1 ||
          t->height > l->h + 2 * t->padding || t->width > l->w + 2 * t->padding) {
        status = tsr_error_set(TSR_INVALID_ARGUMENT,
                               "%s: transforms[%u]: crop %lldx%lld with padding %lld does not fit "
                               "an image of %lldx%lld",
                               what, i, (long long)t->height, (long long)t->width,
                               (long long)t->padding, (long long)l->h, (long long)l->w);
        break;
      }
      l->out_h = t->height;
      l->out_w = t->width;
    } else if (t->kind == TSR_TRANSFORM_RANDOM_HFLIP) {
      if (!(t->probability >= 0.0 && t->probability <= 1.0)) {
        status = tsr_error_set(TSR_INVALID_ARGUMENT,
                               "%s: transforms[%u]: flip probability %g is outside [0, 1]", what, i,
                               t->probability);
        break;
      }
      l->probability = t->probability;
    } else if (t->kind == TSR_TRANSFORM_NORMALIZE) {
      if (t->channels != l->c || t->mean == NULL || t->std == NULL) {
        status = tsr_error_set(TSR_INVALID_ARGUMENT,
                               "%s: transforms[%u]: normalize needs mean and std of %lld channels "
                               "(given %d%s)",
                               what, i, (long long)l->c, t->channels,
                               t->mean == NULL || t->std == NULL ? ", and a NULL array" : "");
        break;
      }
      l->scale = malloc(2 * (size_t)l->c * sizeof(float));
      if (l->scale == NULL) {
        status = tsr_error_set(TSR_OUT_OF_MEMORY, "%s: cannot allocate transforms", what);
        break;
      }
      for (int64_t c = 0; c < l->c; ++c) {
        if (!(t->std[c] != 0.0f)) {
          status = tsr_error_set(TSR_INVALID_ARGUMENT, "%s: transforms[%u]: std[%lld] is %g", what,
                                 i, (long long)c, (double)t->std[c]);
          break;
        }
        l->scale[c] = t->mean[c];
        l->scale[l->c + c] = 1.0f / t->std[c];
      }
    } else {
      status = tsr_error_set(TSR_INVALID_ARGUMENT, "%s: transforms[%u].kind %u is unknown", what, i,
                             t->kind);
      break;
    }
    // The field's example after this transform.
    field->sizes[r - 2] = l->out_h;
    field->sizes[r - 1] = l->out_w;
    field->example_bytes = (size_t)l->c * (size_t)l->out_h * (size_t)l->out_w * sizeof(float);
    if (field->example_bytes > scratch_bytes[t->field])
      scratch_bytes[t->field] = field->example_bytes;
  }
  if (status != TSR_OK) {
    tsr_transforms_free(list, count);
    return status;
  }
  *out_list = list;
  return TSR_OK;
}

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t next64(uint64_t *state) {
  *state += 0x9E3779B97F4A7C15ull;
  return mix64(*state);
}

// Uniform in [0, range] (range < 2^32; the bias of a 64-bit modulo is
// negligible there).
static int64_t draw_upto(uint64_t *state, int64_t range) {
  return (int64_t)(next64(state) % ((uint64_t)range + 1));
}

void tsr_transforms_apply(const tsr_loader_transform *list, uint32_t count, uint64_t seed,
                          int64_t epoch, int64_t index, float **current, float **spare) {
  uint64_t state = mix64(seed ^ 0x5851F42D4C957F2Dull) ^
                   mix64((uint64_t)epoch * 0xD1B54A32D192ED03ull + 7) ^
                   mix64((uint64_t)index * 0x9E3779B97F4A7C15ull + 3);
  for (uint32_t i = 0; i < count; ++i) {
    const tsr_loader_transform *l = &list[i];
    float *src = current[l->field];
    float *dst = spare[l->field];
    int64_t plane_in = l->h * l->w, plane_out = l->out_h * l->out_w;
    if (l->kind == TSR_TRANSFORM_RANDOM_CROP) {
      int64_t top = draw_upto(&state, l->h + 2 * l->padding - l->out_h) - l->padding;
      int64_t left = draw_upto(&state, l->w + 2 * l->padding - l->out_w) - l->padding;
      for (int64_t c = 0; c < l->c; ++c) {
        for (int64_t y = 0; y < l->out_h; ++y) {
          int64_t sy = top + y;
          float *row = dst + c * plane_out + y * l->out_w;
          for (int64_t x = 0; x < l->out_w; ++x) {
            int64_t sx = left + x;
            row[x] = sy >= 0 && sy < l->h && sx >= 0 && sx < l->w
                         ? src[c * plane_in + sy * l->w + sx]
                         : 0.0f;
          }
        }
      }
      current[l->field] = dst;
      spare[l->field] = src;
    } else if (l->kind == TSR_TRANSFORM_RANDOM_HFLIP) {
      // 53 random bits against the probability: exact for 0 and 1.
      double u = (double)(next64(&state) >> 11) * (1.0 / 9007199254740992.0);
      if (u < l->probability) {
        for (int64_t row = 0; row < l->c * l->h; ++row) {
          float *p = src + row * l->w;
          for (int64_t a = 0, b = l->w - 1; a < b; ++a, --b) {
            float t = p[a];
            p[a] = p[b];
            p[b] = t;
          }
        }
      }
    } else {  // TSR_TRANSFORM_NORMALIZE
      for (int64_t c = 0; c < l->c; ++c) {
        float mean = l->scale[c], inv = l->scale[l->c + c];
        float *p = src + c * plane_in;
        for (int64_t k = 0; k < plane_in; ++k) p[k] = (p[k] - mean) * inv;
      }
    }
  }
}
