// The OpenCL plugin's runtime: discovery without a platform, the caching
// allocator, the program binary cache across processes, and one plan run
// from many threads at once (per-thread cl_kernel objects).
//
// Modes (argv[1]):
//   (none)          the CMocka tests on opencl:0 (exit 77 when there is no device)
//   --no-platform   run with OCL_ICD_VENDORS pointing at an empty folder: the
//                   plugin must load and its probe say "unavailable" with the reason
//   --child         one short run for the program-cache test (see there)
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_support.h"

static tsr_context *g_context;
static tsr_device *g_device;

static int group_setup(void **state) {
  (void)state;
  return ts_device_open(TSR_TEST_OPENCL_PATH, "opencl:0", &g_context, &g_device);
}

static int group_teardown(void **state) {
  (void)state;
  tsr_context_destroy(g_context);
  return 0;
}

static void test_device_props(void **state) {
  (void)state;
  tsr_device_props props = {.struct_size = sizeof(props)};
  assert_int_equal(tsr_device_props_get(g_device, &props), TSR_OK);
  assert_true(props.flags & TSR_DEVICE_ASYNC);
  assert_true(props.flags & TSR_DEVICE_EVENTS);
  assert_true(props.flags & TSR_DEVICE_TIMING_EVENTS);
  // cl_mem is device memory: the host never dereferences it.
  assert_false(props.flags & TSR_DEVICE_HOST_ACCESSIBLE);
  assert_true(props.dtype_mask & TSR_DTYPE_BIT(TSR_FLOAT32));
  assert_false(props.dtype_mask & TSR_DTYPE_BIT(TSR_FLOAT16));
  assert_true(props.base_alignment >= 64);
  assert_non_null(strstr(props.name, ":"));  // "<platform>: <device>"
}

// After one round, the same sizes come from the cache: no new system
// allocations; trim gives the cache back; the figures add up.
static void test_allocator_reuse_trim(void **state) {
  (void)state;
  assert_int_equal(tsr_device_synchronize(g_device), TSR_OK);
  assert_int_equal(tsr_device_allocator_trim(g_device), TSR_OK);
  tsr_allocator_stats before = {.struct_size = sizeof(before)};
  assert_int_equal(tsr_device_allocator_stats_get(g_device, &before), TSR_OK);
  const int64_t sizes[3][1] = {{1000}, {65536}, {3000000}};
  for (int round = 0; round < 3; ++round) {
    tsr_tensor *t[3];
    for (int i = 0; i < 3; ++i) {
      t[i] = tsr_tensor_empty(g_device, TSR_FLOAT32, 1, sizes[i]);
      assert_non_null(t[i]);
    }
    for (int i = 0; i < 3; ++i) tsr_tensor_release(t[i]);
    assert_int_equal(tsr_device_synchronize(g_device), TSR_OK);
  }
  tsr_allocator_stats after = {.struct_size = sizeof(after)};
  assert_int_equal(tsr_device_allocator_stats_get(g_device, &after), TSR_OK);
  assert_int_equal(after.system_alloc_count - before.system_alloc_count, 3);
  assert_int_equal(after.alloc_count - before.alloc_count, 9);
  assert_int_equal(after.free_count - before.free_count, 9);
  assert_int_equal(after.bytes_in_use, before.bytes_in_use);
  // Classes waste at most a quarter: 12 MB asked, under 15 MB held.
  uint64_t asked = (1000 + 65536 + 3000000) * 4;
  assert_true(after.bytes_reserved - before.bytes_reserved >= asked);
  assert_true(after.bytes_reserved - before.bytes_reserved <= asked + asked / 4 + 256);
  assert_int_equal(tsr_device_allocator_trim(g_device), TSR_OK);
  tsr_allocator_stats trimmed = {.struct_size = sizeof(trimmed)};
  assert_int_equal(tsr_device_allocator_stats_get(g_device, &trimmed), TSR_OK);
  assert_int_equal(trimmed.bytes_reserved, trimmed.bytes_in_use);
}

// A request beyond the device's largest allocation fails cleanly, with the
// sizes in the message, and the device keeps working.
static void test_allocator_out_of_memory(void **state) {
  (void)state;
  const int64_t huge[1] = {(int64_t)1 << 60};
  tsr_tensor *t = tsr_tensor_empty(g_device, TSR_FLOAT32, 1, huge);
  assert_null(t);
  const char *message = tsr_last_error();
  assert_non_null(strstr(message, "bytes"));
  tsr_context_error_clear(g_context);
  const int64_t small[1] = {16};
  t = tsr_tensor_full(g_device, TSR_FLOAT32, 1, small, 2.5);
  assert_non_null(t);
  float host[16];
  assert_int_equal(tsr_tensor_to_host(t, host, sizeof(host)), TSR_OK);
  for (int i = 0; i < 16; ++i) assert_true(host[i] == 2.5f);
  tsr_tensor_release(t);
}

// One plan (an add of one signature) run from four threads at once: each
// launch claims its own cl_kernel, so arguments never mix.
typedef struct thread_job {
  float offset;
  int ok;
} thread_job;

static void *add_many(void *arg) {
  thread_job *job = arg;
  const int64_t sizes[1] = {4099};
  float *host = malloc(sizeof(float) * 4099);
  job->ok = host != NULL;
  for (int round = 0; round < 40 && job->ok; ++round) {
    tsr_tensor *a = tsr_tensor_full(g_device, TSR_FLOAT32, 1, sizes, job->offset);
    tsr_tensor *b = tsr_tensor_full(g_device, TSR_FLOAT32, 1, sizes, (double)round);
    tsr_tensor *c = a && b ? tsr_add(a, b) : NULL;
    if (c == NULL || tsr_tensor_to_host(c, host, sizeof(float) * 4099) != TSR_OK) {
      job->ok = 0;
    } else {
      for (int i = 0; i < 4099; ++i) {
        if (host[i] != job->offset + (float)round) job->ok = 0;
      }
    }
    tsr_tensor_release(a);
    tsr_tensor_release(b);
    tsr_tensor_release(c);
  }
  free(host);
  return NULL;
}

static void test_one_plan_many_threads(void **state) {
  (void)state;
  pthread_t threads[4];
  thread_job jobs[4];
  for (int i = 0; i < 4; ++i) {
    jobs[i].offset = 1000.0f * (float)(i + 1);
    assert_int_equal(pthread_create(&threads[i], NULL, add_many, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < 4; ++i) assert_true(jobs[i].ok);
}

// Runs this program as "--child" with |env| added; returns its exit status.
static int run_child(const char *cache_dir, const char *stats_file) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("TSR_OPENCL_CACHE_DIR", cache_dir, 1);
    setenv("TSR_OPENCL_STATS", stats_file, 1);
    // PoCL's own cache off, so only Tessera's cache can spare a compilation.
    setenv("POCL_KERNEL_CACHE", "0", 1);
    execl("/proc/self/exe", "test_runtime", "--child", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The line of |path| number |index| (0-based) parsed into counters and times.
static int stats_read(const char *path, int index, unsigned long long *out, double *out_ms) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  char line[256];
  int found = -1;
  for (int i = 0; fgets(line, sizeof(line), f) != NULL; ++i) {
    if (i == index &&
        sscanf(line,
               "source_builds=%llu binary_loads=%llu build_calls=%llu memory_hits=%llu "
               "source_build_ms=%lf binary_build_ms=%lf",
               &out[0], &out[1], &out[2], &out[3], &out_ms[0], &out_ms[1]) == 6) {
      found = 0;
    }
  }
  fclose(f);
  return found;
}

// The first process compiles its programs and writes their binaries; the
// second, with PoCL's own cache off, compiles nothing: every program comes
// from Tessera's disk cache. OpenCL still requires clBuildProgram on a
// program made from a binary (PoCL refuses kernels otherwise); that call
// loads the binary, and the test prints its cost next to the compilation's.
static void test_program_cache_across_processes(void **state) {
  (void)state;
  char dir[] = "/tmp/tsr-ocl-cache-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cache[300], stats[300];
  snprintf(cache, sizeof(cache), "%s/cache", dir);
  snprintf(stats, sizeof(stats), "%s/stats.txt", dir);
  assert_int_equal(run_child(cache, stats), 0);
  assert_int_equal(run_child(cache, stats), 0);
  unsigned long long first[4], second[4];
  double first_ms[2], second_ms[2];
  assert_int_equal(stats_read(stats, 0, first, first_ms), 0);
  assert_int_equal(stats_read(stats, 1, second, second_ms), 0);
  printf("first run: %llu programs compiled from source (%.1f ms), %llu from the disk cache\n",
         first[0], first_ms[0], first[1]);
  printf("second run: %llu compiled from source, %llu from the disk cache (%llu clBuildProgram "
         "calls on binaries, %.1f ms)\n",
         second[0], second[1], second[2], second_ms[1]);
  assert_true(first[0] > 0);
  assert_int_equal(first[1], 0);
  assert_int_equal(second[0], 0);
  assert_int_equal(second[1], first[0]);
  // Only binaries reach clBuildProgram, at most once each.
  assert_true(second[2] <= second[1]);
  char command[400];
  snprintf(command, sizeof(command), "rm -rf %s", dir);
  assert_int_equal(system(command), 0);
}

// The child: a fill, an add and a read, which build the elementwise programs.
static int child_main(void) {
  tsr_context *context = NULL;
  tsr_device *device = NULL;
  if (ts_device_open(TSR_TEST_OPENCL_PATH, "opencl:0", &context, &device) != 0) return 2;
  const int64_t sizes[1] = {33};
  tsr_tensor *a = tsr_tensor_full(device, TSR_FLOAT32, 1, sizes, 1.5);
  tsr_tensor *b = a ? tsr_add(a, a) : NULL;
  float host[33];
  int ok = b != NULL && tsr_tensor_to_host(b, host, sizeof(host)) == TSR_OK && host[32] == 3.0f;
  if (!ok) fprintf(stderr, "child: %s\n", tsr_last_error());
  tsr_tensor_release(a);
  tsr_tensor_release(b);
  tsr_context_destroy(context);
  return ok ? 0 : 1;
}

// With no ICD registered the plugin still loads and its probe says why.
static int no_platform_main(void) {
  tsr_context_options options;
  tsr_context_options_init(&options);
  options.plugin_path = TSR_TEST_OPENCL_PATH;
  options.flags = TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
  tsr_context *context = NULL;
  tsr_status status = tsr_context_create(&options, &context);
  const char *message = tsr_last_error();
  printf("context_create: %s: %s\n", tsr_status_name(status), message);
  if (status == TSR_OK) {
    tsr_context_destroy(context);
    return 1;
  }
  return strstr(message, "unavailable: no OpenCL platform") != NULL ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child_main();
  if (argc > 1 && strcmp(argv[1], "--no-platform") == 0) return no_platform_main();
  tsr_context *probe = ts_context_create(TSR_TEST_OPENCL_PATH, "opencl:0");
  if (probe == NULL) {
    printf("skipped: no OpenCL device (%s)\n", tsr_last_error());
    return 77;
  }
  tsr_context_destroy(probe);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_props),
      cmocka_unit_test(test_allocator_reuse_trim),
      cmocka_unit_test(test_allocator_out_of_memory),
      cmocka_unit_test(test_one_plan_many_threads),
      cmocka_unit_test(test_program_cache_across_processes),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
