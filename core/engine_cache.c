// The persistent engine cache (engine_cache.h): settings, the machine key,
// the tables of this process and their files.
#include "engine_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "engine_cache_file.h"
#include "env.h"
#include "error.h"
#include "log.h"

#define PATH_BYTES 4096
// Room after the folder for "/<plugin>-<16 hex>.engines.XXXXXX".
#define NAME_BYTES 80
// Tables held at once; the oldest is dropped past this (it is read again
// from its file when asked for).
#define MAX_TABLES 64
// A value longer than this enters a key as its length and hash.
#define KEY_VALUE_MAX 2048
#define FILE_SUFFIX ".engines"
// How long a put waits for another process's write before writing anyway
// (the rename keeps the file whole either way; only a merge may be lost).
#define LOCK_WAIT_MS 2000

typedef struct table_slot {
  struct table_slot *next;
  uint64_t hash;  // of the plugin name and both keys
  char plugin_name[32];
  char path[PATH_BYTES];  // "" when the cache is off
  tsr_engine_cache_table table;
  int write_warned;
  int full_warned;
} table_slot;

// Guards everything below.
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static table_slot *g_slots;  // most recently loaded first
static int32_t g_slot_count;
static int g_settings_read;
static const char *g_off_reason;  // NULL when on
static char g_folder[PATH_BYTES];

// The CPU's part of the machine key: constant for the process.
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;
static char g_cpu[3 * KEY_VALUE_MAX];

// --- keys ---------------------------------------------------------------------

// Appends "|label|=|value|;" to |out| (|*used| bytes used of |size|), as the
// value's length and hash when it is long; non-printable bytes become '?'.
static void key_append(char *out, size_t size, size_t *used, const char *label, const char *value,
                       size_t length) {
  if (*used >= size)
    return;
  int n;
  if (length > KEY_VALUE_MAX) {
    n = snprintf(out + *used, size - *used, "%s=#%zu:%016" PRIx64 ";", label, length,
                 tsr_engine_cache_fnv1a(TSR_FNV1A_64_INIT, value, length));
  } else {
    n = snprintf(out + *used, size - *used, "%s=%.*s;", label, (int)length, value);
  }
  if (n < 0 || (size_t)n >= size - *used) {
    *used = size;  // marks the key as not fitting
    return;
  }
  for (size_t i = *used; i < *used + (size_t)n; ++i) {
    if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
      out[i] = '?';
  }
  *used += (size_t)n;
}

// The fields of /proc/cpuinfo's first processor that name the CPU and its
// ISA (x86, AArch64, POWER, RISC-V). "bugs", "microcode", clock speeds and
// BogoMIPS are left out: they change without the CPU changing.
static const char *const k_cpuinfo_fields[] = {
    "vendor_id",   "cpu family", "model",           "model name",
    "stepping",    "flags",      "CPU implementer", "CPU architecture",
    "CPU variant", "CPU part",   "CPU revision",    "Features",
    "cpu",         "isa",        "uarch",
};

static int cpu_from_proc(char *out, size_t size) {
  int fd = open("/proc/cpuinfo", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat st;
  enum { kRead = 64 * 1024 };
  char *text = NULL;
  size_t got = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (text = malloc(kRead + 1)) != NULL) {
    while (got < kRead) {
      ssize_t n = read(fd, text + got, kRead - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
      text[got] = '\0';
      if (strstr(text, "\n\n") != NULL)
        break;  // the first processor is complete
    }
  }
  close(fd);
  if (text == NULL)
    return 0;
  text[got] = '\0';
  char *block_end = strstr(text, "\n\n");
  if (block_end != NULL)
    block_end[1] = '\0';
  size_t used = 0;
  int fields = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    char *colon = strchr(line, ':');
    if (colon == NULL)
      continue;
    char *name_end = colon;
    while (name_end > line && (name_end[-1] == ' ' || name_end[-1] == '\t')) --name_end;
    const size_t name_length = (size_t)(name_end - line);
    const char *value = colon + 1;
    while (*value == ' ' || *value == '\t') ++value;
    size_t value_length = strlen(value);
    while (value_length > 0 && value[value_length - 1] == ' ') --value_length;
    for (size_t f = 0; f < sizeof(k_cpuinfo_fields) / sizeof(k_cpuinfo_fields[0]); ++f) {
      if (strlen(k_cpuinfo_fields[f]) == name_length &&
          memcmp(k_cpuinfo_fields[f], line, name_length) == 0) {
        key_append(out, size, &used, k_cpuinfo_fields[f], value, value_length);
        ++fields;
        break;
      }
    }
  }
  free(text);
  return fields > 0 && used < size;
}

static int cpu_from_cpuid(char *out, size_t size) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  char brand[49] = {0};
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4];
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      memcpy(brand + 16 * leaf, r, sizeof(r));
    }
  }
  unsigned signature = 0, ecx1 = 0, edx1 = 0, b7 = 0, c7 = 0, d7 = 0;
  if (!__get_cpuid(1, &signature, &b, &ecx1, &edx1))
    return 0;
  __get_cpuid_count(7, 0, &a, &b7, &c7, &d7);
  unsigned long long xcr0 = 0;
  if (ecx1 & (1u << 27)) {  // OSXSAVE: which register states the OS enabled
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (unsigned long long)hi << 32 | lo;
  }
  size_t used = 0;
  key_append(out, size, &used, "cpuid brand", brand, strlen(brand));
  char ids[160];
  snprintf(ids, sizeof(ids), "%08x %08x %08x %08x %08x %08x %llx", signature, ecx1, edx1, b7, c7,
           d7, xcr0);
  key_append(out, size, &used, "cpuid", ids, strlen(ids));
  return used < size;
#else
  (void)out, (void)size;
  return 0;
#endif
}

static void cpu_describe(void) {
  if (!cpu_from_proc(g_cpu, sizeof(g_cpu)) && !cpu_from_cpuid(g_cpu, sizeof(g_cpu))) {
    snprintf(g_cpu, sizeof(g_cpu), "cpu=unknown;");
  }
}

// The process's CPU set as "0-3,8,10-11" into |out|.
static int cpuset_describe(char *out, size_t size) {
  for (size_t cpus = 1024; cpus <= 65536; cpus *= 2) {
    cpu_set_t *set = CPU_ALLOC(cpus);
    if (set == NULL)
      return 0;
    const size_t bytes = CPU_ALLOC_SIZE(cpus);
    if (sched_getaffinity(getpid(), bytes, set) != 0) {
      CPU_FREE(set);
      if (errno == EINVAL)
        continue;
      return snprintf(out, size, "unknown") < (int)size;
    }
    size_t used = 0;
    out[0] = '\0';
    for (size_t cpu = 0; cpu < cpus; ++cpu) {
      if (!CPU_ISSET_S(cpu, bytes, set))
        continue;
      size_t last = cpu;
      while (last + 1 < cpus && CPU_ISSET_S(last + 1, bytes, set)) ++last;
      int n = last == cpu
                  ? snprintf(out + used, size - used, "%s%zu", used ? "," : "", cpu)
                  : snprintf(out + used, size - used, "%s%zu-%zu", used ? "," : "", cpu, last);
      if (n < 0 || (size_t)n >= size - used) {
        CPU_FREE(set);
        return 0;
      }
      used += (size_t)n;
      cpu = last;
    }
    CPU_FREE(set);
    return 1;
  }
  return snprintf(out, size, "unknown") < (int)size;
}

int tsr_engine_cache_machine_key(int32_t threads, char *out, size_t size) {
  pthread_once(&g_cpu_once, cpu_describe);
  char cpuset[KEY_VALUE_MAX + 1];
  if (!cpuset_describe(cpuset, sizeof(cpuset)))
    snprintf(cpuset, sizeof(cpuset), "too many");
  size_t used = 0;
  int n = snprintf(out, size, "%s", g_cpu);
  if (n < 0 || (size_t)n >= size)
    return 0;
  used = (size_t)n;
  char count[16];
  snprintf(count, sizeof(count), "%d", (int)(threads < 1 ? 1 : threads));
  key_append(out, size, &used, "threads", count, strlen(count));
  key_append(out, size, &used, "cpuset", cpuset, strlen(cpuset));
  return used < size;
}

// "name=...;version=...;build=...;key=..." for |api| and |plugin_key|.
static int plugin_key_compose(const tsr_plugin_api *api, const char *plugin_key, char *out,
                              size_t size) {
  size_t used = 0;
  const char *version = api->version ? api->version : "";
  const char *build = api->build_info ? api->build_info : "";
  key_append(out, size, &used, "name", api->name, strlen(api->name));
  key_append(out, size, &used, "version", version, strlen(version));
  key_append(out, size, &used, "build", build, strlen(build));
  key_append(out, size, &used, "key", plugin_key, strlen(plugin_key));
  return used < size;
}

// --- settings -------------------------------------------------------------------

// Reads TSR_ENGINE_CACHE, TSR_ENGINE_CACHE_DIR, XDG_CACHE_HOME and HOME once
// (again after tsr_engine_cache_state_destroy). Under g_lock.
static void settings_read(void) {
  if (g_settings_read)
    return;
  g_settings_read = 1;
  g_folder[0] = '\0';
  g_off_reason = NULL;
  if (!tsr_env_flag("TSR_ENGINE_CACHE", 1)) {
    g_off_reason = "TSR_ENGINE_CACHE=0";
    return;
  }
  const size_t max = PATH_BYTES - NAME_BYTES;
  int n = -1;
  const char *dir = getenv("TSR_ENGINE_CACHE_DIR");
  if (dir != NULL && dir[0] != '\0') {
    dir = tsr_env_path("TSR_ENGINE_CACHE_DIR", max);
    if (dir == NULL) {
      g_off_reason = "TSR_ENGINE_CACHE_DIR is not a usable path";
    } else if (dir[0] == '/') {
      n = snprintf(g_folder, max, "%s", dir);
    } else {
      // Relative to the folder the process was in when it first asked.
      char cwd[PATH_BYTES];
      if (getcwd(cwd, sizeof(cwd)) != NULL)
        n = snprintf(g_folder, max, "%s/%s", cwd, dir);
    }
  } else if ((dir = tsr_env_path("XDG_CACHE_HOME", max)) != NULL && dir[0] == '/') {
    // (The XDG rule: a relative XDG_CACHE_HOME is ignored.)
    n = snprintf(g_folder, max, "%s/tessera/engines", dir);
  } else if ((dir = tsr_env_path("HOME", max)) != NULL) {
    n = snprintf(g_folder, max, "%s/.cache/tessera/engines", dir);
  } else {
    g_off_reason = "no TSR_ENGINE_CACHE_DIR, XDG_CACHE_HOME or HOME";
  }
  if (g_off_reason == NULL && (n <= 0 || (size_t)n >= max)) {
    g_folder[0] = '\0';
    g_off_reason = "the cache folder's path is too long";
  }
  if (g_off_reason != NULL) {
    g_folder[0] = '\0';
    tsr_log(TSR_LOG_DEBUG, "engine cache: off (%s)", g_off_reason);
  }
}

// --- files ----------------------------------------------------------------------

typedef enum { FILE_ABSENT, FILE_READ, FILE_REFUSED } file_result;

// Reads |path| whole into a malloc'd buffer: only a regular file of this
// user, opened without following a link or blocking on a FIFO, of at most
// TSR_ENGINE_CACHE_FILE_MAX bytes.
static file_result file_read(const char *path, uint8_t **out_data, size_t *out_size, char *why,
                             size_t why_size) {
  *out_data = NULL;
  *out_size = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT)
      return FILE_ABSENT;
    snprintf(why, why_size, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
    return FILE_REFUSED;
  }
  struct stat st;
  file_result result = FILE_REFUSED;
  uint8_t *data = NULL;
  if (fstat(fd, &st) != 0) {
    snprintf(why, why_size, "cannot stat: %s", strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    snprintf(why, why_size, "not a regular file");
  } else if (st.st_uid != geteuid()) {
    snprintf(why, why_size, "owned by another user (uid %u)", (unsigned)st.st_uid);
  } else if (st.st_size < 0 || (uint64_t)st.st_size > TSR_ENGINE_CACHE_FILE_MAX) {
    snprintf(why, why_size, "%lld bytes, more than %u", (long long)st.st_size,
             TSR_ENGINE_CACHE_FILE_MAX);
  } else if ((data = malloc(st.st_size > 0 ? (size_t)st.st_size : 1)) == NULL) {
    snprintf(why, why_size, "out of memory");
  } else {
    const size_t size = (size_t)st.st_size;
    size_t got = 0;
    while (got < size) {
      ssize_t n = read(fd, data + got, size - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    if (got == size) {
      *out_data = data;
      *out_size = size;
      data = NULL;
      result = FILE_READ;
    } else {
      snprintf(why, why_size, "read %zu of %zu bytes", got, size);
    }
  }
  free(data);
  close(fd);
  return result;
}

// Reads and parses |slot|'s file into |out_table| when it holds the slot's
// keys. 1 when it did; 0 when the file is absent or refused (|why| says why,
// "" when absent).
static int file_load(const table_slot *slot, tsr_engine_cache_table *out_table, char *why,
                     size_t why_size) {
  why[0] = '\0';
  uint8_t *data = NULL;
  size_t size = 0;
  if (file_read(slot->path, &data, &size, why, why_size) != FILE_READ)
    return 0;
  tsr_status status = tsr_engine_cache_file_parse(data, size, out_table, why, why_size);
  free(data);
  if (status != TSR_OK)
    return 0;
  if (strcmp(out_table->plugin_key, slot->table.plugin_key) != 0 ||
      strcmp(out_table->machine_key, slot->table.machine_key) != 0) {
    snprintf(why, why_size, "made for another %s",
             strcmp(out_table->plugin_key, slot->table.plugin_key) != 0
                 ? "plugin build or library version"
                 : "machine, thread count or CPU set");
    tsr_engine_cache_table_clear(out_table);
    return 0;
  }
  return 1;
}

// mkdir -p |folder| (0700: decisions are the user's own).
static int folder_make(const char *folder) {
  char path[PATH_BYTES];
  snprintf(path, sizeof(path), "%s", folder);
  for (char *p = path + 1; *p != '\0'; ++p) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
      return 0;
    *p = '/';
  }
  if (mkdir(path, 0700) != 0 && errno != EEXIST)
    return 0;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return 0;
  }
  return 1;
}

// Takes the folder's write lock (an flock on "<folder>/.lock"), waiting at
// most LOCK_WAIT_MS. The descriptor to close to release it, or -1 when it
// could not be had.
static int folder_lock(const char *folder) {
  char path[PATH_BYTES];
  const int n = snprintf(path, sizeof(path), "%s/.lock", folder);
  if (n < 0 || (size_t)n >= sizeof(path))
    return -1;
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return -1;
  }
  for (int waited = 0; waited < LOCK_WAIT_MS; ++waited) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    if (errno != EWOULDBLOCK && errno != EINTR)
      break;
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  close(fd);
  return -1;
}

// Writes |size| bytes to a new file beside |path|, syncs it and renames it
// over |path|. 0 with errno on failure, nothing left behind.
static int file_replace(const char *folder, const char *path, const uint8_t *data, size_t size) {
  char temporary[PATH_BYTES + 8];
  snprintf(temporary, sizeof(temporary), "%s.XXXXXX", path);
  int fd = mkostemp(temporary, O_CLOEXEC);  // O_EXCL, mode 0600
  if (fd < 0)
    return 0;
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  int ok = done == size && fsync(fd) == 0;
  const int saved = errno;
  ok = close(fd) == 0 && ok;
  if (ok && rename(temporary, path) == 0) {
    int dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      fsync(dir);  // the rename itself; a failure here loses nothing written
      close(dir);
    }
    return 1;
  }
  const int failed = ok ? errno : (saved ? saved : EIO);
  unlink(temporary);
  errno = failed;
  return 0;
}

// Writes |slot|'s table to its file, keeping what other processes wrote
// meanwhile (every class but |class_key|, whose value was just put). Under
// g_lock. Failures are logged once per table; the table stays in memory.
static void slot_persist(table_slot *slot, const char *class_key) {
  if (slot->path[0] == '\0')
    return;
  char why[256] = "";
  if (!folder_make(g_folder)) {
    snprintf(why, sizeof(why), "cannot create the folder: %s", strerror(errno));
  } else {
    const int lock = folder_lock(g_folder);
    if (lock < 0)
      tsr_log(TSR_LOG_DEBUG, "engine cache: %s: writing without the lock", g_folder);
    tsr_engine_cache_table disk;
    char ignored[256];
    if (file_load(slot, &disk, ignored, sizeof(ignored))) {
      // Without memory for the merge the file is written from memory alone.
      (void)tsr_engine_cache_table_merge(&slot->table, &disk, class_key);
      tsr_engine_cache_table_clear(&disk);
    }
    uint8_t *data = NULL;
    size_t size = 0;
    if (tsr_engine_cache_file_serialize(&slot->table, &data, &size) != TSR_OK) {
      snprintf(why, sizeof(why), "out of memory");
    } else if (!file_replace(g_folder, slot->path, data, size)) {
      snprintf(why, sizeof(why), "%s", strerror(errno));
    }
    free(data);
    if (lock >= 0)
      close(lock);
  }
  if (why[0] != '\0' && !slot->write_warned) {
    slot->write_warned = 1;
    tsr_log(TSR_LOG_WARNING,
            "engine cache: cannot write %s: %s; %s's decisions are kept for this process only",
            slot->path, why, slot->plugin_name);
  }
}

// --- tables ---------------------------------------------------------------------

static void slot_free(table_slot *slot) {
  tsr_engine_cache_table_clear(&slot->table);
  free(slot);
}

// The table of (|name|, |plugin_key|, |machine_key|), read from its file the
// first time. Under g_lock. NULL on TSR_OUT_OF_MEMORY (set).
static table_slot *slot_get(const char *name, const char *plugin_key, const char *machine_key) {
  uint64_t hash = tsr_engine_cache_fnv1a(TSR_FNV1A_64_INIT, plugin_key, strlen(plugin_key) + 1);
  hash = tsr_engine_cache_fnv1a(hash, machine_key, strlen(machine_key));
  for (table_slot *s = g_slots; s != NULL; s = s->next) {
    if (s->hash == hash && strcmp(s->plugin_name, name) == 0 &&
        strcmp(s->table.plugin_key, plugin_key) == 0 &&
        strcmp(s->table.machine_key, machine_key) == 0) {
      return s;
    }
  }
  table_slot *slot = calloc(1, sizeof(*slot));
  if (slot == NULL ||
      tsr_engine_cache_table_init(&slot->table, plugin_key, machine_key) != TSR_OK) {
    free(slot);
    tsr_error_set(TSR_OUT_OF_MEMORY, "engine cache: no memory for a table");
    return NULL;
  }
  slot->hash = hash;
  snprintf(slot->plugin_name, sizeof(slot->plugin_name), "%s", name);
  // (The folder leaves NAME_BYTES for the name: settings_read.)
  const int n = g_off_reason != NULL
                    ? 0
                    : snprintf(slot->path, sizeof(slot->path), "%s/%s-%016" PRIx64 FILE_SUFFIX,
                               g_folder, name, hash);
  if (n > 0 && (size_t)n < sizeof(slot->path)) {
    tsr_engine_cache_table loaded;
    char why[256];
    if (file_load(slot, &loaded, why, sizeof(why))) {
      tsr_engine_cache_table_clear(&slot->table);
      slot->table = loaded;
      tsr_log(TSR_LOG_DEBUG, "engine cache: %u decisions of %s from %s", loaded.count, name,
              slot->path);
    } else if (why[0] != '\0') {
      tsr_log(TSR_LOG_WARNING, "engine cache: %s ignored (%s); it is rebuilt by the next decision",
              slot->path, why);
    }
  } else {
    slot->path[0] = '\0';  // kept in memory only
  }
  if (g_slot_count == MAX_TABLES) {
    table_slot **last = &g_slots;
    while ((*last)->next != NULL) last = &(*last)->next;
    slot_free(*last);
    *last = NULL;
    --g_slot_count;
  }
  slot->next = g_slots;
  g_slots = slot;
  ++g_slot_count;
  return slot;
}

// --- the host entries -----------------------------------------------------------

// Checks what get and put share and composes both keys into |keys| (two
// halves of TSR_ENGINE_CACHE_FILE_KEY_MAX + 1 bytes, malloc'd; the caller
// frees it).
static tsr_status request_check(const char *what, const tsr_plugin_api *api, int32_t threads,
                                const char *plugin_key, const char *class_key, char **out_keys) {
  *out_keys = NULL;
  if (api == NULL || api->name == NULL) {
    return tsr_error_set(TSR_UNAVAILABLE, "%s: not before the plugin's entry has returned", what);
  }
  if (!tsr_engine_cache_key_valid(plugin_key, TSR_ENGINE_CACHE_KEY_MAX)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: plugin_key is %s; it must be 1 to %d bytes of printable ASCII", what,
                         plugin_key == NULL ? "NULL" : "empty, too long or not printable",
                         TSR_ENGINE_CACHE_KEY_MAX);
  }
  if (!tsr_engine_cache_key_valid(class_key, TSR_ENGINE_CACHE_CLASS_KEY_MAX)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "%s: class_key is %s; it must be 1 to %d bytes of printable ASCII", what,
                         class_key == NULL ? "NULL" : "empty, too long or not printable",
                         TSR_ENGINE_CACHE_CLASS_KEY_MAX);
  }
  enum { kHalf = TSR_ENGINE_CACHE_FILE_KEY_MAX + 1 };
  char *keys = malloc(2 * kHalf);
  if (keys == NULL)
    return tsr_error_set(TSR_OUT_OF_MEMORY, "%s: no memory for the keys", what);
  if (!plugin_key_compose(api, plugin_key, keys, kHalf) ||
      !tsr_engine_cache_machine_key(threads, keys + kHalf, kHalf)) {
    free(keys);
    return tsr_error_set(TSR_INTERNAL, "%s: the cache key does not fit %d bytes", what,
                         TSR_ENGINE_CACHE_FILE_KEY_MAX);
  }
  *out_keys = keys;
  return TSR_OK;
}

tsr_status tsr_engine_cache_get(const tsr_plugin_api *api, int32_t threads, const char *plugin_key,
                                const char *class_key, void *out_value, size_t *inout_bytes) {
  if (inout_bytes == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "engine_cache_get: inout_bytes is NULL");
  }
  char *keys = NULL;
  TSR_RETURN_IF_ERROR(
      request_check("engine_cache_get", api, threads, plugin_key, class_key, &keys));
  const char *machine_key = keys + TSR_ENGINE_CACHE_FILE_KEY_MAX + 1;
  tsr_status status = TSR_OK;
  pthread_mutex_lock(&g_lock);
  settings_read();
  table_slot *slot = NULL;
  const tsr_engine_cache_entry *entry = NULL;
  if (g_off_reason != NULL) {
    status = tsr_error_set(TSR_NOT_FOUND, "engine_cache_get: the engine cache is off (%s)",
                           g_off_reason);
  } else if ((slot = slot_get(api->name, keys, machine_key)) == NULL) {
    status = TSR_OUT_OF_MEMORY;
  } else if ((entry = tsr_engine_cache_table_find(&slot->table, class_key)) == NULL) {
    status = tsr_error_set(TSR_NOT_FOUND, "engine_cache_get: no decision for '%s'", class_key);
  } else if (out_value != NULL && *inout_bytes < entry->bytes) {
    status = tsr_error_set(TSR_INVALID_ARGUMENT,
                           "engine_cache_get: the value of '%s' is %u bytes; the buffer holds %zu",
                           class_key, entry->bytes, *inout_bytes);
    *inout_bytes = entry->bytes;
  } else {
    if (out_value != NULL && entry->bytes > 0)
      memcpy(out_value, entry->value, entry->bytes);
    *inout_bytes = entry->bytes;
  }
  pthread_mutex_unlock(&g_lock);
  free(keys);
  return status;
}

tsr_status tsr_engine_cache_put(const tsr_plugin_api *api, int32_t threads, const char *plugin_key,
                                const char *class_key, const void *value, size_t bytes) {
  if (bytes > TSR_ENGINE_CACHE_VALUE_MAX) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "engine_cache_put: a value of %zu bytes; at most %d",
                         bytes, TSR_ENGINE_CACHE_VALUE_MAX);
  }
  if (value == NULL && bytes > 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "engine_cache_put: value is NULL for %zu bytes",
                         bytes);
  }
  char *keys = NULL;
  TSR_RETURN_IF_ERROR(
      request_check("engine_cache_put", api, threads, plugin_key, class_key, &keys));
  const char *machine_key = keys + TSR_ENGINE_CACHE_FILE_KEY_MAX + 1;
  tsr_status status = TSR_OK;
  pthread_mutex_lock(&g_lock);
  settings_read();
  table_slot *slot = NULL;
  if (g_off_reason != NULL) {
    // Off: nothing is kept, and the next process measures again.
  } else if ((slot = slot_get(api->name, keys, machine_key)) == NULL) {
    status = TSR_OUT_OF_MEMORY;
  } else {
    const tsr_engine_cache_entry *old = tsr_engine_cache_table_find(&slot->table, class_key);
    const int same =
        old != NULL && old->bytes == bytes && (bytes == 0 || memcmp(old->value, value, bytes) == 0);
    tsr_status set =
        same ? TSR_OK : tsr_engine_cache_table_set(&slot->table, class_key, value, (uint32_t)bytes);
    if (set == TSR_OUT_OF_MEMORY) {
      status = tsr_error_set(TSR_OUT_OF_MEMORY, "engine_cache_put: no memory for '%s'", class_key);
    } else if (set == TSR_UNAVAILABLE) {
      if (!slot->full_warned) {
        slot->full_warned = 1;
        tsr_log(TSR_LOG_WARNING, "engine cache: %s holds %d decisions of %s; no more are kept",
                slot->path, TSR_ENGINE_CACHE_ENTRIES_MAX, slot->plugin_name);
      }
    } else if (!same) {
      slot_persist(slot, class_key);
    }
  }
  pthread_mutex_unlock(&g_lock);
  free(keys);
  return status;
}

// --- census and reset -----------------------------------------------------------

// 1 when |name| is "<plugin>-<16 hex>.engines" (with <plugin> |plugin_name|
// when that is not NULL).
static int file_name_matches(const char *name, const char *plugin_name) {
  const size_t length = strlen(name), suffix = strlen(FILE_SUFFIX);
  if (length < 1 + 1 + 16 + suffix || strcmp(name + length - suffix, FILE_SUFFIX) != 0)
    return 0;
  const char *hex = name + length - suffix - 16;
  for (int i = 0; i < 16; ++i) {
    if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
      return 0;
  }
  if (hex[-1] != '-')
    return 0;
  const size_t prefix = (size_t)(hex - 1 - name);
  if (plugin_name == NULL)
    return prefix > 0;
  return strlen(plugin_name) == prefix && memcmp(name, plugin_name, prefix) == 0;
}

void tsr_engine_cache_census(const char *plugin_name, int32_t threads, char *folder,
                             size_t folder_size, const char **out_off_reason, int32_t *out_files,
                             int64_t *out_decisions) {
  *out_files = 0;
  *out_decisions = 0;
  pthread_mutex_lock(&g_lock);
  settings_read();
  *out_off_reason = g_off_reason;
  snprintf(folder, folder_size, "%s", g_folder);
  char path[PATH_BYTES];
  snprintf(path, sizeof(path), "%s", g_folder);
  pthread_mutex_unlock(&g_lock);
  if (*out_off_reason != NULL)
    return;
  char *machine_key = malloc(TSR_ENGINE_CACHE_FILE_KEY_MAX + 1);
  if (machine_key == NULL ||
      !tsr_engine_cache_machine_key(threads, machine_key, TSR_ENGINE_CACHE_FILE_KEY_MAX + 1)) {
    free(machine_key);
    return;
  }
  DIR *dir = opendir(path);
  struct dirent *entry;
  int32_t seen = 0;
  while (dir != NULL && seen < TSR_ENGINE_CACHE_ENTRIES_MAX && (entry = readdir(dir)) != NULL) {
    if (!file_name_matches(entry->d_name, plugin_name))
      continue;
    ++seen;
    char file[PATH_BYTES + 256];
    snprintf(file, sizeof(file), "%s/%s", path, entry->d_name);
    uint8_t *data = NULL;
    size_t size = 0;
    char why[256];
    tsr_engine_cache_table table;
    if (file_read(file, &data, &size, why, sizeof(why)) == FILE_READ &&
        tsr_engine_cache_file_parse(data, size, &table, why, sizeof(why)) == TSR_OK) {
      if (strcmp(table.machine_key, machine_key) == 0) {
        ++*out_files;
        *out_decisions += table.count;
      }
      tsr_engine_cache_table_clear(&table);
    }
    free(data);
  }
  if (dir != NULL)
    closedir(dir);
  free(machine_key);
}

void tsr_engine_cache_state_destroy(void) {
  pthread_mutex_lock(&g_lock);
  while (g_slots != NULL) {
    table_slot *next = g_slots->next;
    slot_free(g_slots);
    g_slots = next;
  }
  g_slot_count = 0;
  g_settings_read = 0;
  g_off_reason = NULL;
  g_folder[0] = '\0';
  pthread_mutex_unlock(&g_lock);
}
