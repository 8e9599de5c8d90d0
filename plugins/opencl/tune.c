// Engine selection's memory and clock: autotune winners by (device, key),
// in memory and in the core's persistent engine cache, and the timing of
// candidate runs.
//
// The cache's plugin key names the device and its driver version, so
// another device or driver re-tunes; the core adds the plugin's build, the
// CPU and the thread count. A value is the winner's index in decimal.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_table.h"
#include "tessera/plugin_kit.h"

// Choices are indices into a candidate list; anything larger in the cache
// is not ours.
#define TSR_OCL_TUNE_CHOICE_LIMIT 1000

typedef struct tune_entry {
  struct tune_entry *next;
  int32_t device;
  int32_t choice;
  char key[160];
} tune_entry;

static pthread_mutex_t g_tune_lock = PTHREAD_MUTEX_INITIALIZER;
static tune_entry *g_tune;

void tsr_ocl_tune_release(void) {
  pthread_mutex_lock(&g_tune_lock);
  tune_entry *e = g_tune;
  g_tune = NULL;
  pthread_mutex_unlock(&g_tune_lock);
  while (e != NULL) {
    tune_entry *next = e->next;
    free(e);
    e = next;
  }
}

// "opencl <device> | <driver>", printable ASCII as the cache's keys must be.
static void plugin_key(const tsr_ocl_device *device, char *out, size_t size) {
  snprintf(out, size, "opencl %s | %s", device->name, device->driver_version);
  for (char *p = out; *p; ++p) {
    if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
  }
}

static void entry_put_locked(int32_t device, const char *key, int32_t choice) {
  for (tune_entry *e = g_tune; e != NULL; e = e->next) {
    if (e->device == device && strcmp(e->key, key) == 0) {
      e->choice = choice;
      return;
    }
  }
  tune_entry *e = calloc(1, sizeof(*e));
  if (e == NULL) return;  // forgetting a winner costs a re-tune, nothing else
  e->device = device;
  e->choice = choice;
  snprintf(e->key, sizeof(e->key), "%s", key);
  e->next = g_tune;
  g_tune = e;
}

int tsr_ocl_tune_lookup(const tsr_ocl_device *device, const char *key, int32_t *out_choice) {
  int found = 0;
  pthread_mutex_lock(&g_tune_lock);
  for (tune_entry *e = g_tune; e != NULL && !found; e = e->next) {
    if (e->device == device->index && strcmp(e->key, key) == 0) {
      *out_choice = e->choice;
      found = 1;
    }
  }
  pthread_mutex_unlock(&g_tune_lock);
  if (found) return 1;
  char pkey[TSR_ENGINE_CACHE_KEY_MAX];
  plugin_key(device, pkey, sizeof(pkey));
  int32_t choice = 0;
  if (!tsr_kit_engine_choice_get(tsr_ocl_host(), pkey, key, TSR_OCL_TUNE_CHOICE_LIMIT, &choice)) {
    return 0;
  }
  pthread_mutex_lock(&g_tune_lock);
  entry_put_locked(device->index, key, choice);
  pthread_mutex_unlock(&g_tune_lock);
  *out_choice = choice;
  return 1;
}

void tsr_ocl_tune_store(const tsr_ocl_device *device, const char *key, int32_t choice) {
  if (strlen(key) >= 160 || choice < 0 || choice >= TSR_OCL_TUNE_CHOICE_LIMIT) return;
  pthread_mutex_lock(&g_tune_lock);
  entry_put_locked(device->index, key, choice);
  pthread_mutex_unlock(&g_tune_lock);
  char pkey[TSR_ENGINE_CACHE_KEY_MAX];
  plugin_key(device, pkey, sizeof(pkey));
  tsr_kit_engine_choice_put(tsr_ocl_host(), pkey, key, choice);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

tsr_status tsr_ocl_time(tsr_ocl_device *device, tsr_ocl_timed_fn fn, void *arg, int32_t repeats,
                        double *out_ms) {
  if (repeats < 1) repeats = 1;
  if (repeats > 32) repeats = 32;
  double samples[32];
  cl_command_queue queue = device->queue;
  // One untimed run: first-use compilation (PoCL specialises per launch size).
  TSR_OCL_RETURN_IF_ERROR(fn(arg, queue));
  cl_int err = clFinish(queue);
  if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "opencl: autotune warm-up");
  for (int32_t r = 0; r < repeats; ++r) {
    cl_event start = NULL, end = NULL;
    err = clEnqueueMarkerWithWaitList(queue, 0, NULL, &start);
    if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "opencl: autotune marker");
    tsr_status status = fn(arg, queue);
    if (status == TSR_OK) {
      err = clEnqueueMarkerWithWaitList(queue, 0, NULL, &end);
      if (err == CL_SUCCESS) err = clWaitForEvents(1, &end);
    }
    cl_ulong t0 = 0, t1 = 0;
    if (status == TSR_OK && err == CL_SUCCESS) {
      err = clGetEventProfilingInfo(start, CL_PROFILING_COMMAND_END, sizeof(t0), &t0, NULL);
      if (err == CL_SUCCESS) {
        err = clGetEventProfilingInfo(end, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
      }
    }
    clReleaseEvent(start);
    if (end != NULL) clReleaseEvent(end);
    if (status != TSR_OK) return status;
    if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "opencl: autotune timing");
    samples[r] = (double)(t1 - t0) * 1e-6;
  }
  qsort(samples, (size_t)repeats, sizeof(double), compare_double);
  *out_ms = samples[repeats / 2];
  return TSR_OK;
}
