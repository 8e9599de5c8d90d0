// Engine selection's memory and clock: autotune winners by (device, key),
// in memory and on disk, and the timing of candidate runs.
//
// Winners live in one text file per device next to the program cache
// ("<key>\t<choice>" lines, appended; the last line for a key wins), named by
// a hash of the device name and driver version, so another driver re-tunes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_table.h"

typedef struct tune_entry {
  struct tune_entry *next;
  int32_t device;
  int32_t choice;
  char key[160];
} tune_entry;

static pthread_mutex_t g_tune_lock = PTHREAD_MUTEX_INITIALIZER;
static tune_entry *g_tune;
static uint32_t g_loaded_devices;  // bit d: device d's file was read

void tsr_ocl_tune_release(void) {
  pthread_mutex_lock(&g_tune_lock);
  tune_entry *e = g_tune;
  g_tune = NULL;
  g_loaded_devices = 0;
  pthread_mutex_unlock(&g_tune_lock);
  while (e != NULL) {
    tune_entry *next = e->next;
    free(e);
    e = next;
  }
}

// The winners file of |device|; 0 when there is no cache folder.
static int tune_path(const tsr_ocl_device *device, char *out, size_t size) {
  char base[512];
  if (!tsr_ocl_cache_dir(base, sizeof(base))) return 0;
  uint64_t hash = 14695981039346656037ull;
  for (const char *p = device->name; *p; ++p) hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
  for (const char *p = device->driver_version; *p; ++p) {
    hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
  }
  int n = snprintf(out, size, "%s/tune-%016llx.txt", base, (unsigned long long)hash);
  return n > 0 && (size_t)n < size;
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

static void load_locked(const tsr_ocl_device *device) {
  if (device->index < 32 && (g_loaded_devices & (1u << device->index))) return;
  if (device->index < 32) g_loaded_devices |= 1u << device->index;
  char path[640];
  if (!tune_path(device, path, sizeof(path))) return;
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  char line[256];
  while (fgets(line, sizeof(line), f) != NULL) {
    char *tab = strchr(line, '\t');
    if (tab == NULL) continue;
    *tab = '\0';
    char *end = NULL;
    long choice = strtol(tab + 1, &end, 10);
    if (end == tab + 1 || choice < 0 || choice > 1000 || strlen(line) >= 160) continue;
    entry_put_locked(device->index, line, (int32_t)choice);
  }
  fclose(f);
}

int tsr_ocl_tune_lookup(const tsr_ocl_device *device, const char *key, int32_t *out_choice) {
  int found = 0;
  pthread_mutex_lock(&g_tune_lock);
  load_locked(device);
  for (tune_entry *e = g_tune; e != NULL && !found; e = e->next) {
    if (e->device == device->index && strcmp(e->key, key) == 0) {
      *out_choice = e->choice;
      found = 1;
    }
  }
  pthread_mutex_unlock(&g_tune_lock);
  return found;
}

void tsr_ocl_tune_store(const tsr_ocl_device *device, const char *key, int32_t choice) {
  if (strlen(key) >= 160 || strchr(key, '\t') != NULL || strchr(key, '\n') != NULL) return;
  pthread_mutex_lock(&g_tune_lock);
  load_locked(device);
  entry_put_locked(device->index, key, choice);
  char path[640];
  if (tune_path(device, path, sizeof(path))) {
    // One short append is atomic enough for a file whose last line per key wins.
    FILE *f = fopen(path, "a");
    if (f != NULL) {
      fprintf(f, "%s\t%d\n", key, (int)choice);
      fclose(f);
    }
  }
  pthread_mutex_unlock(&g_tune_lock);
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
