// Programs, their on-disk binary cache, kernel pools and launches.
//
// A program is (device, source, options). It is built once per process and
// kept until shutdown. Its binary is also written to the disk cache
// (TSR_OPENCL_CACHE_DIR, else $XDG_CACHE_HOME/tessera/opencl, else
// ~/.cache/tessera/opencl; TSR_OPENCL_PROGRAM_CACHE=0 turns it off) under a
// 64-bit FNV-1a hash of the device name, driver, device and platform
// versions, the build options and the full source text, so a driver update,
// another device or an edited kernel never reuses a stale binary. A cached
// file carries its own length and checksum; a damaged one is ignored and
// rewritten.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocl.h"
#include "ocl_table.h"

typedef struct program_entry {
  struct program_entry *next;
  int32_t device;
  uint64_t key;
  char *source_name;
  char *options;
  cl_program program;
} program_entry;

static pthread_mutex_t g_program_lock = PTHREAD_MUTEX_INITIALIZER;
static program_entry *g_programs;
static tsr_ocl_program_stats g_stats;

static const char k_cache_magic[8] = {'T', 'S', 'R', 'C', 'L', 'B', '1', '\n'};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static uint64_t fnv1a(uint64_t hash, const void *data, size_t size) {
  const unsigned char *p = data;
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

static uint64_t fnv1a_str(uint64_t hash, const char *text) {
  // The terminator too, so ("ab", "c") and ("a", "bc") differ.
  return fnv1a(hash, text, strlen(text) + 1);
}

void tsr_ocl_program_stats_get(tsr_ocl_program_stats *out_stats) {
  pthread_mutex_lock(&g_program_lock);
  *out_stats = g_stats;
  pthread_mutex_unlock(&g_program_lock);
}

void tsr_ocl_programs_release(void) {
  pthread_mutex_lock(&g_program_lock);
  program_entry *entry = g_programs;
  g_programs = NULL;
  pthread_mutex_unlock(&g_program_lock);
  while (entry != NULL) {
    program_entry *next = entry->next;
    clReleaseProgram(entry->program);
    free(entry->source_name);
    free(entry->options);
    free(entry);
    entry = next;
  }
}

int tsr_ocl_cache_dir(char *out, size_t size) {
  const char *off = getenv("TSR_OPENCL_PROGRAM_CACHE");
  if (off != NULL && strcmp(off, "0") == 0) return 0;
  if (off != NULL && off[0] != '\0' && strcmp(off, "1") != 0) {
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&warned)) {
      tsr_ocl_log(TSR_LOG_WARNING, "TSR_OPENCL_PROGRAM_CACHE=%.64s is not 1 or 0; using 1", off);
    }
  }
  const char *dir = getenv("TSR_OPENCL_CACHE_DIR");
  int n;
  if (dir != NULL && dir[0] != '\0') {
    n = snprintf(out, size, "%s", dir);
  } else if ((dir = getenv("XDG_CACHE_HOME")) != NULL && dir[0] != '\0') {
    n = snprintf(out, size, "%s/tessera/opencl", dir);
  } else if ((dir = getenv("HOME")) != NULL && dir[0] != '\0') {
    n = snprintf(out, size, "%s/.cache/tessera/opencl", dir);
  } else {
    return 0;
  }
  if (n <= 0 || (size_t)n >= size) return 0;
  // mkdir -p.
  for (char *p = out + 1; *p != '\0'; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(out, 0755) != 0 && errno != EEXIST) return 0;
    *p = '/';
  }
  if (mkdir(out, 0755) != 0 && errno != EEXIST) return 0;
  return 1;
}

// Reads the binary cached for |key| into a malloc'd buffer, or NULL.
static unsigned char *cache_read(uint64_t key, size_t *out_size) {
  char dir[512], path[600];
  if (!tsr_ocl_cache_dir(dir, sizeof(dir))) return NULL;
  snprintf(path, sizeof(path), "%s/%016llx.bin", dir, (unsigned long long)key);
  // Without blocking, and only a regular file: a FIFO planted in the cache
  // folder must not hang the first plan (the binary is then built anew).
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return NULL;
  }
  FILE *f = fdopen(fd, "rb");
  if (f == NULL) {
    close(fd);
    return NULL;
  }
  char magic[8];
  uint64_t header[3];  // key, size, checksum
  unsigned char *data = NULL;
  if (fread(magic, 1, 8, f) == 8 && memcmp(magic, k_cache_magic, 8) == 0 &&
      fread(header, sizeof(uint64_t), 3, f) == 3 && header[0] == key && header[1] > 0 &&
      header[1] < ((uint64_t)1 << 31)) {
    data = malloc(header[1]);
    if (data != NULL && (fread(data, 1, header[1], f) != header[1] ||
                         fnv1a(14695981039346656037ull, data, header[1]) != header[2])) {
      free(data);
      data = NULL;
    }
  }
  fclose(f);
  if (data != NULL) *out_size = header[1];
  return data;
}

// Writes |program|'s binary for |key|: to a private file, then renamed into
// place, so a reader never sees half a file.
static void cache_write(uint64_t key, cl_program program) {
  char dir[512], path[600], tmp[640];
  if (!tsr_ocl_cache_dir(dir, sizeof(dir))) return;
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, NULL) !=
          CL_SUCCESS ||
      size == 0) {
    return;
  }
  unsigned char *data = malloc(size);
  if (data == NULL) return;
  unsigned char *binaries[1] = {data};
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(binaries), binaries, NULL) !=
      CL_SUCCESS) {
    free(data);
    return;
  }
  snprintf(path, sizeof(path), "%s/%016llx.bin", dir, (unsigned long long)key);
  snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
  // A new private file (O_EXCL: never a FIFO or link someone left there).
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (fd >= 0 && f == NULL) close(fd);
  if (f != NULL) {
    uint64_t header[3] = {key, size, fnv1a(14695981039346656037ull, data, size)};
    int ok = fwrite(k_cache_magic, 1, 8, f) == 8 && fwrite(header, sizeof(uint64_t), 3, f) == 3 &&
             fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
  }
  free(data);
}

// The build log of |program| on |device|, cut to |size|.
static void build_log(cl_program program, cl_device_id device, char *out, size_t size) {
  out[0] = '\0';
  size_t used = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, out, &used);
  out[size - 1] = '\0';
}

// Loads the cached binary for |key|: a program whose kernels can be
// created, or NULL. The spec wants clBuildProgram on a binary too; a driver
// that serves kernels from the binary without it is spared the call (PoCL
// is not: there the call loads the binary and compiles nothing).
static cl_program program_from_cache(tsr_ocl_device *d, uint64_t key, const char *options) {
  size_t size = 0;
  unsigned char *data = cache_read(key, &size);
  if (data == NULL) return NULL;
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  const unsigned char *binaries[1] = {data};
  cl_program program =
      clCreateProgramWithBinary(d->context, 1, &d->id, &size, binaries, &status, &err);
  free(data);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (program != NULL && err == CL_SUCCESS) clReleaseProgram(program);
    return NULL;
  }
  cl_uint kernels = 0;
  if (clCreateKernelsInProgram(program, 0, NULL, &kernels) != CL_SUCCESS || kernels == 0) {
    double start = now_ms();
    cl_int err = clBuildProgram(program, 1, &d->id, options, NULL, NULL);
    pthread_mutex_lock(&g_program_lock);
    ++g_stats.build_calls;
    g_stats.binary_build_ms += now_ms() - start;
    pthread_mutex_unlock(&g_program_lock);
    if (err != CL_SUCCESS) {
      clReleaseProgram(program);
      return NULL;
    }
  }
  return program;
}

tsr_status tsr_ocl_program_get(tsr_ocl_device *device, const char *source_name,
                               const char *options, cl_program *out_program) {
  *out_program = NULL;
  const char *common = tsr_ocl_source_get("common");
  const char *source = tsr_ocl_source_get(source_name);
  if (source == NULL || common == NULL) {
    return tsr_ocl_error(TSR_INTERNAL, "opencl: no kernel source named '%s'", source_name);
  }
  char full_options[1024];
  int n = snprintf(full_options, sizeof(full_options), "-cl-std=CL1.2%s %s",
                   (device->caps & TSR_OCL_CAP_FP64) ? " -DTSR_HAS_FP64=1" : "",
                   options != NULL ? options : "");
  if (n < 0 || (size_t)n >= sizeof(full_options)) {
    return tsr_ocl_error(TSR_INTERNAL, "opencl: build options for '%s' are too long", source_name);
  }
  uint64_t key = 14695981039346656037ull;
  key = fnv1a_str(key, device->name);
  key = fnv1a_str(key, device->driver_version);
  key = fnv1a_str(key, device->device_version);
  key = fnv1a_str(key, device->platform_version);
  key = fnv1a_str(key, full_options);
  key = fnv1a_str(key, common);
  key = fnv1a_str(key, source);

  // The lock is held across a build: two threads wanting one program build
  // it once. Builds happen at plan creation, never while executing.
  pthread_mutex_lock(&g_program_lock);
  for (program_entry *e = g_programs; e != NULL; e = e->next) {
    if (e->device == device->index && e->key == key && strcmp(e->source_name, source_name) == 0 &&
        strcmp(e->options, full_options) == 0) {
      ++g_stats.memory_hits;
      *out_program = e->program;
      pthread_mutex_unlock(&g_program_lock);
      return TSR_OK;
    }
  }
  pthread_mutex_unlock(&g_program_lock);

  cl_program program = program_from_cache(device, key, full_options);
  int from_cache = program != NULL;
  if (program == NULL) {
    size_t common_len = strlen(common), source_len = strlen(source);
    const char *texts[3] = {common, "\n", source};
    size_t lengths[3] = {common_len, 1, source_len};
    cl_int err = CL_SUCCESS;
    program = clCreateProgramWithSource(device->context, 3, texts, lengths, &err);
    if (err != CL_SUCCESS) return tsr_ocl_cl_error(err, "opencl: clCreateProgramWithSource");
    double start = now_ms();
    err = clBuildProgram(program, 1, &device->id, full_options, NULL, NULL);
    pthread_mutex_lock(&g_program_lock);
    ++g_stats.source_builds;
    ++g_stats.build_calls;
    g_stats.source_build_ms += now_ms() - start;
    pthread_mutex_unlock(&g_program_lock);
    if (err != CL_SUCCESS) {
      char log[700];
      build_log(program, device->id, log, sizeof(log));
      clReleaseProgram(program);
      return tsr_ocl_error(err == CL_BUILD_PROGRAM_FAILURE ? TSR_INTERNAL : TSR_UNSUPPORTED,
                           "opencl: building '%s' (%s) on %s: %s (%d): %s", source_name,
                           full_options, device->name, tsr_ocl_cl_error_name(err), (int)err, log);
    }
    tsr_ocl_log(TSR_LOG_DEBUG, "opencl: compiled '%s' (%s) in %.0f ms", source_name, full_options,
                now_ms() - start);
    cache_write(key, program);
  }

  program_entry *entry = calloc(1, sizeof(*entry));
  char *name_copy = strdup(source_name), *options_copy = strdup(full_options);
  if (entry == NULL || name_copy == NULL || options_copy == NULL) {
    free(entry), free(name_copy), free(options_copy);
    clReleaseProgram(program);
    return tsr_ocl_error(TSR_OUT_OF_MEMORY, "opencl: program cache: out of host memory");
  }
  entry->device = device->index;
  entry->key = key;
  entry->source_name = name_copy;
  entry->options = options_copy;
  entry->program = program;
  pthread_mutex_lock(&g_program_lock);
  // Another thread may have built the same program meanwhile: keep the first.
  for (program_entry *e = g_programs; e != NULL; e = e->next) {
    if (e->device == device->index && e->key == key && strcmp(e->source_name, source_name) == 0 &&
        strcmp(e->options, full_options) == 0) {
      *out_program = e->program;
      pthread_mutex_unlock(&g_program_lock);
      clReleaseProgram(program);
      free(entry->source_name), free(entry->options), free(entry);
      return TSR_OK;
    }
  }
  if (from_cache) ++g_stats.binary_loads;
  entry->next = g_programs;
  g_programs = entry;
  pthread_mutex_unlock(&g_program_lock);
  *out_program = program;
  return TSR_OK;
}

// --- kernels -------------------------------------------------------------------

tsr_status tsr_ocl_kernel_create(tsr_ocl_device *device, const char *source_name,
                                 const char *options, const char *kernel_name,
                                 tsr_ocl_kernel **out_kernel) {
  *out_kernel = NULL;
  if (strlen(kernel_name) >= sizeof(((tsr_ocl_kernel *)0)->name)) {
    return tsr_ocl_error(TSR_INTERNAL, "opencl: kernel name '%s' is too long", kernel_name);
  }
  cl_program program = NULL;
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_program_get(device, source_name, options, &program));
  tsr_ocl_kernel *k = calloc(1, sizeof(*k));
  if (k == NULL) return tsr_ocl_error(TSR_OUT_OF_MEMORY, "opencl: kernel: out of host memory");
  cl_int err = CL_SUCCESS;
  k->slots[0] = clCreateKernel(program, kernel_name, &err);
  if (err != CL_SUCCESS) {
    free(k);
    return tsr_ocl_error(TSR_INTERNAL, "opencl: kernel '%s' of '%s': %s (%d)", kernel_name,
                         source_name, tsr_ocl_cl_error_name(err), (int)err);
  }
  k->program = program;
  snprintf(k->name, sizeof(k->name), "%s", kernel_name);
  atomic_init(&k->busy, 0u);
  pthread_mutex_init(&k->create_lock, NULL);
  k->max_work_group_size = device->max_work_group_size;
  k->preferred_multiple = 1;
  clGetKernelWorkGroupInfo(k->slots[0], device->id, CL_KERNEL_WORK_GROUP_SIZE,
                           sizeof(k->max_work_group_size), &k->max_work_group_size, NULL);
  clGetKernelWorkGroupInfo(k->slots[0], device->id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                           sizeof(k->preferred_multiple), &k->preferred_multiple, NULL);
  if (k->max_work_group_size == 0) k->max_work_group_size = 1;
  if (k->preferred_multiple == 0) k->preferred_multiple = 1;
  *out_kernel = k;
  return TSR_OK;
}

void tsr_ocl_kernel_destroy(tsr_ocl_kernel *kernel) {
  if (kernel == NULL) return;
  for (int i = 0; i < TSR_OCL_KERNEL_SLOTS; ++i) {
    if (kernel->slots[i] != NULL) clReleaseKernel(kernel->slots[i]);
  }
  pthread_mutex_destroy(&kernel->create_lock);
  free(kernel);
}

// Claims a free slot; creates its cl_kernel on first use. -1 on failure.
static int slot_claim(tsr_ocl_kernel *k) {
  for (;;) {
    unsigned busy = atomic_load_explicit(&k->busy, memory_order_relaxed);
    if (busy == (1u << TSR_OCL_KERNEL_SLOTS) - 1u) {
      sched_yield();
      continue;
    }
    int slot = __builtin_ctz(~busy);
    if (!atomic_compare_exchange_weak_explicit(&k->busy, &busy, busy | (1u << slot),
                                               memory_order_acquire, memory_order_relaxed)) {
      continue;
    }
    if (k->slots[slot] == NULL) {
      pthread_mutex_lock(&k->create_lock);
      cl_int err = CL_SUCCESS;
      k->slots[slot] = clCreateKernel(k->program, k->name, &err);
      pthread_mutex_unlock(&k->create_lock);
      if (err != CL_SUCCESS) {
        k->slots[slot] = NULL;
        atomic_fetch_and_explicit(&k->busy, ~(1u << slot), memory_order_release);
        return -1;
      }
    }
    return slot;
  }
}

tsr_status tsr_ocl_launch(const tsr_ocl_exec *exec, const tsr_ocl_kernel *kernel, cl_uint dims,
                          const size_t *global, const size_t *local, int32_t num_args,
                          const tsr_ocl_arg *args) {
  for (cl_uint d = 0; d < dims; ++d) {
    if (global[d] == 0) return TSR_OK;  // nothing to do (OpenCL refuses a zero range)
  }
  // The pool is the only mutable part of a plan; its slots are claimed atomically.
  tsr_ocl_kernel *k = (tsr_ocl_kernel *)kernel;
  int slot = slot_claim(k);
  if (slot < 0) return tsr_ocl_error(TSR_OUT_OF_MEMORY, "opencl: %s: clCreateKernel failed", k->name);
  cl_kernel cl = k->slots[slot];
  cl_int err = CL_SUCCESS;
  for (int32_t i = 0; i < num_args && err == CL_SUCCESS; ++i) {
    err = clSetKernelArg(cl, (cl_uint)i, args[i].size, args[i].value);
    if (err != CL_SUCCESS) {
      atomic_fetch_and_explicit(&k->busy, ~(1u << slot), memory_order_release);
      return tsr_ocl_error(TSR_INTERNAL, "opencl: %s: argument %d: %s (%d)", k->name, (int)i,
                           tsr_ocl_cl_error_name(err), (int)err);
    }
  }
  err = clEnqueueNDRangeKernel(exec->queue, cl, dims, NULL, global, local, 0, NULL, NULL);
  atomic_fetch_and_explicit(&k->busy, ~(1u << slot), memory_order_release);
  tsr_ocl_stream_note_work(exec->stream);
  if (err != CL_SUCCESS) {
    char what[128];
    snprintf(what, sizeof(what), "opencl: enqueueing %s", k->name);
    return tsr_ocl_cl_error(err, what);
  }
  return TSR_OK;
}
