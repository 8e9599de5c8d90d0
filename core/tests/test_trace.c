// Tests of the core's diagnostic output: op tracing (text lines and Chrome
// trace JSON) and the log lines it shares stderr with.
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// cmocka.h needs setjmp.h, stdarg.h and stddef.h before it.
#include <cmocka.h>

#include "log.h"
#include "trace.h"

// ---------------------------------------------------------------------------
// Capturing stderr.

static char g_dir[] = "/tmp/tsr-test-trace-XXXXXX";
static int g_saved_stderr = -1;
static char g_capture_path[256];

static char *file_read(const char *path) {
  FILE *file = fopen(path, "rb");
  assert_non_null(file);
  assert_int_equal(fseek(file, 0, SEEK_END), 0);
  long size = ftell(file);
  assert_true(size >= 0);
  rewind(file);
  char *text = malloc((size_t)size + 1);
  assert_non_null(text);
  assert_int_equal(fread(text, 1, (size_t)size, file), (size_t)size);
  text[size] = '\0';
  fclose(file);
  return text;
}

static void capture_begin(void) {
  snprintf(g_capture_path, sizeof(g_capture_path), "%s/stderr.txt", g_dir);
  FILE *file = fopen(g_capture_path, "w");
  assert_non_null(file);
  fflush(stderr);
  g_saved_stderr = dup(STDERR_FILENO);
  assert_true(g_saved_stderr >= 0);
  assert_true(dup2(fileno(file), STDERR_FILENO) >= 0);
  fclose(file);
}

// Restores stderr and returns what was written to it (caller frees).
static char *capture_end(void) {
  fflush(stderr);
  assert_true(dup2(g_saved_stderr, STDERR_FILENO) >= 0);
  close(g_saved_stderr);
  g_saved_stderr = -1;
  return file_read(g_capture_path);
}

static int count_lines(const char *text) {
  int lines = 0;
  for (; *text != '\0'; ++text) lines += *text == '\n';
  return lines;
}

// ---------------------------------------------------------------------------
// A strict JSON parser, enough to check the trace file's structure.

typedef enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } json_type;

typedef struct json {
  json_type type;
  double number;
  char *string;        // J_STRING
  int count;           // J_ARRAY, J_OBJECT
  struct json *items;  // J_ARRAY, J_OBJECT values
  char **keys;         // J_OBJECT
} json;

typedef struct json_parser {
  const char *p;
  int ok;
} json_parser;

static void json_space(json_parser *jp) {
  while (*jp->p == ' ' || *jp->p == '\n' || *jp->p == '\r' || *jp->p == '\t') ++jp->p;
}

static char *json_string_parse(json_parser *jp) {
  if (*jp->p != '"') {
    jp->ok = 0;
    return NULL;
  }
  ++jp->p;
  size_t cap = 16, len = 0;
  char *out = malloc(cap);
  for (;;) {
    unsigned char c = (unsigned char)*jp->p++;
    if (c == '\0' || c < 0x20) {
      jp->ok = 0;
      break;
    }
    if (c == '"')
      break;
    if (c == '\\') {
      char e = *jp->p++;
      switch (e) {
        case '"':
          c = '"';
          break;
        case '\\':
          c = '\\';
          break;
        case '/':
          c = '/';
          break;
        case 'b':
          c = '\b';
          break;
        case 'f':
          c = '\f';
          break;
        case 'n':
          c = '\n';
          break;
        case 'r':
          c = '\r';
          break;
        case 't':
          c = '\t';
          break;
        case 'u': {
          unsigned value = 0;
          for (int i = 0; i < 4; ++i) {
            char h = *jp->p++;
            value <<= 4;
            if (h >= '0' && h <= '9')
              value |= (unsigned)(h - '0');
            else if (h >= 'a' && h <= 'f')
              value |= (unsigned)(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              value |= (unsigned)(h - 'A' + 10);
            else
              jp->ok = 0;
          }
          if (value > 0x7f)
            jp->ok = 0;  // the trace only escapes control bytes
          c = (unsigned char)value;
          break;
        }
        default:
          jp->ok = 0;
      }
      if (!jp->ok)
        break;
    }
    if (len + 2 > cap)
      out = realloc(out, cap *= 2);
    out[len++] = (char)c;
  }
  out[len] = '\0';
  return out;
}

static void json_value_parse(json_parser *jp, json *out);

static void json_container_parse(json_parser *jp, json *out, char close) {
  ++jp->p;
  json_space(jp);
  if (*jp->p == close) {
    ++jp->p;
    return;
  }
  for (;;) {
    out->items = realloc(out->items, sizeof(json) * (size_t)(out->count + 1));
    if (close == '}') {
      out->keys = realloc(out->keys, sizeof(char *) * (size_t)(out->count + 1));
      json_space(jp);
      out->keys[out->count] = json_string_parse(jp);
      json_space(jp);
      if (*jp->p++ != ':')
        jp->ok = 0;
    }
    memset(&out->items[out->count], 0, sizeof(json));
    json_value_parse(jp, &out->items[out->count++]);
    if (!jp->ok)
      return;
    json_space(jp);
    char c = *jp->p++;
    if (c == close)
      return;
    if (c != ',') {
      jp->ok = 0;
      return;
    }
  }
}

static void json_value_parse(json_parser *jp, json *out) {
  json_space(jp);
  char c = *jp->p;
  if (c == '{') {
    out->type = J_OBJECT;
    json_container_parse(jp, out, '}');
  } else if (c == '[') {
    out->type = J_ARRAY;
    json_container_parse(jp, out, ']');
  } else if (c == '"') {
    out->type = J_STRING;
    out->string = json_string_parse(jp);
  } else if (strncmp(jp->p, "true", 4) == 0 || strncmp(jp->p, "null", 4) == 0) {
    out->type = c == 't' ? J_BOOL : J_NULL;
    jp->p += 4;
  } else if (strncmp(jp->p, "false", 5) == 0) {
    out->type = J_BOOL;
    jp->p += 5;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    // JSON's grammar: no leading zeros, digits after '.', optional exponent.
    const char *s = jp->p;
    if (*s == '-')
      ++s;
    if (*s == '0') {
      ++s;
    } else if (*s >= '1' && *s <= '9') {
      while (*s >= '0' && *s <= '9') ++s;
    } else {
      jp->ok = 0;
    }
    if (*s == '.') {
      ++s;
      if (!(*s >= '0' && *s <= '9'))
        jp->ok = 0;
      while (*s >= '0' && *s <= '9') ++s;
    }
    if (*s == 'e' || *s == 'E') {
      ++s;
      if (*s == '+' || *s == '-')
        ++s;
      if (!(*s >= '0' && *s <= '9'))
        jp->ok = 0;
      while (*s >= '0' && *s <= '9') ++s;
    }
    out->type = J_NUMBER;
    out->number = strtod(jp->p, NULL);
    jp->p = s;
  } else {
    jp->ok = 0;
  }
}

// Parses the whole of |text|; fails the test if it is not one JSON value.
static json json_parse_all(const char *text) {
  json_parser jp = {text, 1};
  json root;
  memset(&root, 0, sizeof(root));
  json_value_parse(&jp, &root);
  json_space(&jp);
  if (!jp.ok || *jp.p != '\0') {
    fail_msg("invalid JSON at offset %ld: %.40s", (long)(jp.p - text), jp.p);
  }
  return root;
}

static void json_free(json *value) {
  free(value->string);
  for (int i = 0; i < value->count; ++i) {
    json_free(&value->items[i]);
    if (value->keys != NULL)
      free(value->keys[i]);
  }
  free(value->items);
  free(value->keys);
}

// The member |key| of object |value|, which must exist with |type|.
static const json *json_get(const json *value, const char *key, json_type type) {
  assert_int_equal(value->type, J_OBJECT);
  for (int i = 0; i < value->count; ++i) {
    if (strcmp(value->keys[i], key) == 0) {
      if (value->items[i].type != type)
        fail_msg("member \"%s\" has the wrong type", key);
      return &value->items[i];
    }
  }
  fail_msg("member \"%s\" missing", key);
  return NULL;
}

static json trace_file_parse(const char *path) {
  char *text = file_read(path);
  json root = json_parse_all(text);
  free(text);
  assert_int_equal(root.type, J_ARRAY);
  return root;
}

// Checks that |event| is a complete event with every member the format needs.
static void complete_event_check(const json *event) {
  assert_string_equal(json_get(event, "ph", J_STRING)->string, "X");
  json_get(event, "name", J_STRING);
  json_get(event, "cat", J_STRING);
  json_get(event, "ts", J_NUMBER);
  assert_true(json_get(event, "dur", J_NUMBER)->number >= 0);
  assert_int_equal((long)json_get(event, "pid", J_NUMBER)->number, (long)getpid());
  assert_true(json_get(event, "tid", J_NUMBER)->number > 0);
  const json *args = json_get(event, "args", J_OBJECT);
  json_get(args, "plugin", J_STRING);
  json_get(args, "engine", J_STRING);
}

static void trace_path(char *out, size_t bytes, const char *name) {
  snprintf(out, bytes, "%s/%s", g_dir, name);
}

// ---------------------------------------------------------------------------
// Logging.

// Runs first: the threshold comes from the environment on first use.
static void test_log_reads_threshold_from_environment_on_first_use(void **state) {
  (void)state;
  setenv("TSR_LOG_LEVEL", "error", 1);
  assert_false(tsr_log_enabled(TSR_LOG_WARNING));
  assert_true(tsr_log_enabled(TSR_LOG_ERROR));
  setenv("TSR_LOG_LEVEL", "debug", 1);  // read once: no effect now
  assert_false(tsr_log_enabled(TSR_LOG_WARNING));
  unsetenv("TSR_LOG_LEVEL");
}

static void test_log_writes_prefixed_lines_at_or_above_threshold(void **state) {
  (void)state;
  tsr_log_configure("Warning");
  assert_false(tsr_log_enabled(TSR_LOG_INFO));
  assert_true(tsr_log_enabled(TSR_LOG_WARNING));
  capture_begin();
  tsr_log(TSR_LOG_DEBUG, "hidden %d", 1);
  tsr_log(TSR_LOG_INFO, "hidden %d", 2);
  tsr_log(TSR_LOG_WARNING, "device %s has %d units", "ref:0", 8);
  tsr_log_message(TSR_LOG_ERROR, "plugin said no");
  tsr_log(99, "clamped to error");
  char *text = capture_end();
  assert_string_equal(text,
                      "tessera: warning: device ref:0 has 8 units\n"
                      "tessera: error: plugin said no\n"
                      "tessera: error: clamped to error\n");
  free(text);

  tsr_log_configure("off");
  capture_begin();
  tsr_log(TSR_LOG_ERROR, "hidden");
  text = capture_end();
  assert_string_equal(text, "");
  free(text);

  tsr_log_configure(NULL);  // default: warning (quiet: no info lines)
  assert_false(tsr_log_enabled(TSR_LOG_INFO));
  assert_true(tsr_log_enabled(TSR_LOG_WARNING));
}

static void test_log_names_an_unknown_threshold_and_uses_warning(void **state) {
  (void)state;
  capture_begin();
  tsr_log_configure("verbose");
  char *text = capture_end();
  assert_non_null(strstr(text, "tessera: warning: TSR_LOG_LEVEL is \"verbose\""));
  assert_non_null(strstr(text, "using warning"));
  assert_false(tsr_log_enabled(TSR_LOG_INFO));
  assert_true(tsr_log_enabled(TSR_LOG_WARNING));
  free(text);
}

static void test_log_writes_a_long_message_whole(void **state) {
  (void)state;
  tsr_log_configure("info");
  char *long_text = malloc(5001);
  assert_non_null(long_text);
  memset(long_text, 'x', 5000);
  long_text[5000] = '\0';
  capture_begin();
  tsr_log(TSR_LOG_INFO, "<%s>", long_text);
  char *text = capture_end();
  assert_int_equal(strlen(text), strlen("tessera: info: <>\n") + 5000);
  assert_int_equal(strncmp(text, "tessera: info: <x", 17), 0);
  assert_string_equal(text + strlen(text) - 3, "x>\n");
  free(text);
  free(long_text);
}

#define WRITER_THREADS 4
#define LINES_PER_WRITER 500

static void *log_writer_main(void *arg) {
  long id = (long)(intptr_t)arg;
  for (int i = 0; i < LINES_PER_WRITER; ++i) {
    tsr_log(TSR_LOG_INFO, "writer %ld line %d with some padding to make it longer", id, i);
  }
  return NULL;
}

static void test_log_lines_from_threads_do_not_interleave(void **state) {
  (void)state;
  tsr_log_configure("info");
  capture_begin();
  pthread_t threads[WRITER_THREADS];
  for (long i = 0; i < WRITER_THREADS; ++i) {
    assert_int_equal(pthread_create(&threads[i], NULL, log_writer_main, (void *)(intptr_t)i), 0);
  }
  for (int i = 0; i < WRITER_THREADS; ++i) pthread_join(threads[i], NULL);
  char *text = capture_end();
  assert_int_equal(count_lines(text), WRITER_THREADS * LINES_PER_WRITER);
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    long id;
    int index, used = 0;
    if (sscanf(line, "tessera: info: writer %ld line %d with some padding to make it longer%n", &id,
               &index, &used) != 2 ||
        line[used] != '\0') {
      fail_msg("mangled line: %s", line);
    }
  }
  free(text);
}

// ---------------------------------------------------------------------------
// Tracing.

static void test_trace_init_reads_TSR_TRACE_once(void **state) {
  (void)state;
  setenv("TSR_TRACE", "1", 1);
  tsr_trace_init();
  assert_true(tsr_trace_enabled());
  setenv("TSR_TRACE", "0", 1);
  tsr_trace_init();
  assert_true(tsr_trace_enabled());
  unsetenv("TSR_TRACE");
  tsr_trace_shutdown();
  assert_false(tsr_trace_enabled());
}

static void test_trace_is_off_for_unset_empty_or_zero(void **state) {
  (void)state;
  const char *specs[] = {NULL, "", "0"};
  for (int i = 0; i < 3; ++i) {
    tsr_trace_configure("1");
    tsr_trace_configure(specs[i]);
    assert_false(tsr_trace_enabled());
    capture_begin();
    tsr_trace_op("ref:0", "ref", "matmul", "ref:gemm", 0, 1000);
    tsr_allocator_stats stats = {sizeof(stats), 1, 2, 3, 4, 5, 6};
    tsr_trace_memory("ref:0", &stats);
    char *text = capture_end();
    assert_string_equal(text, "");
    free(text);
  }
}

static void test_trace_text_mode_prints_one_line_per_op(void **state) {
  (void)state;
  tsr_trace_configure("1");
  assert_true(tsr_trace_enabled());
  capture_begin();
  tsr_trace_op("ref:0", "ref", "matmul", "ref:blocked-gemm", 1000, 13500);
  tsr_trace_op("onednn:0", "onednn", "conv2d", NULL, 5000, 4000);
  tsr_allocator_stats stats = {sizeof(stats), 1024, 4096, 2048, 7, 5, 2};
  tsr_trace_memory("ref:0", &stats);
  // A plugin of an older ABI that filled only the first two counters.
  tsr_allocator_stats old = {
      offsetof(tsr_allocator_stats, peak_bytes_in_use), 10, 20, 99, 99, 99, 99};
  tsr_trace_memory("old:0", &old);
  tsr_trace_memory("ref:0", NULL);
  char *text = capture_end();
  assert_string_equal(text,
                      "tessera trace: ref:0 ref matmul engine=ref:blocked-gemm 12.5 us\n"
                      "tessera trace: onednn:0 onednn conv2d engine=? 0.0 us\n"
                      "tessera trace: ref:0 memory bytes_in_use=1024 bytes_reserved=4096 "
                      "peak_bytes_in_use=2048 alloc_count=7 free_count=5 system_alloc_count=2\n"
                      "tessera trace: old:0 memory bytes_in_use=10 bytes_reserved=20\n");
  free(text);
  tsr_trace_shutdown();
}

static void *trace_writer_main(void *arg) {
  long id = (long)(intptr_t)arg;
  for (int i = 0; i < LINES_PER_WRITER; ++i) {
    uint64_t start = tsr_trace_now_ns();
    char engine[32];
    snprintf(engine, sizeof(engine), "w%ld-%d", id, i);
    tsr_trace_op("ref:0", "ref", "binary", engine, start, tsr_trace_now_ns());
  }
  return NULL;
}

static void run_trace_writers(void) {
  pthread_t threads[WRITER_THREADS];
  for (long i = 0; i < WRITER_THREADS; ++i) {
    assert_int_equal(pthread_create(&threads[i], NULL, trace_writer_main, (void *)(intptr_t)i), 0);
  }
  for (int i = 0; i < WRITER_THREADS; ++i) pthread_join(threads[i], NULL);
}

static void test_trace_text_lines_from_threads_do_not_interleave(void **state) {
  (void)state;
  tsr_trace_configure("1");
  capture_begin();
  run_trace_writers();
  char *text = capture_end();
  tsr_trace_shutdown();
  assert_int_equal(count_lines(text), WRITER_THREADS * LINES_PER_WRITER);
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    long id;
    int index, used = 0;
    double us;
    if (sscanf(line, "tessera trace: ref:0 ref binary engine=w%ld-%d %lf us%n", &id, &index, &us,
               &used) != 3 ||
        line[used] != '\0' || us < 0) {
      fail_msg("mangled line: %s", line);
    }
  }
  free(text);
}

static void test_trace_json_mode_writes_chrome_trace_events(void **state) {
  (void)state;
  char path[300];
  trace_path(path, sizeof(path), "ops.json");
  tsr_trace_configure(path);
  assert_true(tsr_trace_enabled());
  tsr_trace_op("ref:0", "ref", "matmul", "ref:blocked-gemm", 2000000, 2012345);
  tsr_trace_op("cuda:1", "cuda", "conv2d", "cudnn \"engine\" 7\\b\n", 3000000, 3000001);
  tsr_trace_op(NULL, NULL, NULL, NULL, 10, 5);
  tsr_allocator_stats stats = {sizeof(stats), 1024, 4096, 2048, 7, 5, 2};
  tsr_trace_memory("ref:0", &stats);
  tsr_trace_shutdown();
  assert_false(tsr_trace_enabled());
  tsr_trace_op("ref:0", "ref", "after", "shutdown", 0, 1);  // dropped

  json root = trace_file_parse(path);
  assert_int_equal(root.count, 4);
  for (int i = 0; i < 3; ++i) complete_event_check(&root.items[i]);
  const json *matmul = &root.items[0];
  assert_string_equal(json_get(matmul, "name", J_STRING)->string, "matmul");
  assert_string_equal(json_get(matmul, "cat", J_STRING)->string, "ref:0");
  assert_true(json_get(matmul, "ts", J_NUMBER)->number == 2000.0);
  assert_true(json_get(matmul, "dur", J_NUMBER)->number == 12.345);
  const json *args = json_get(matmul, "args", J_OBJECT);
  assert_string_equal(json_get(args, "plugin", J_STRING)->string, "ref");
  assert_string_equal(json_get(args, "engine", J_STRING)->string, "ref:blocked-gemm");
  // Quotes, backslashes and control bytes survive the escaping.
  args = json_get(&root.items[1], "args", J_OBJECT);
  assert_string_equal(json_get(args, "engine", J_STRING)->string, "cudnn \"engine\" 7\\b\n");
  assert_string_equal(json_get(&root.items[2], "name", J_STRING)->string, "?");
  assert_true(json_get(&root.items[2], "dur", J_NUMBER)->number == 0.0);

  const json *memory = &root.items[3];
  assert_string_equal(json_get(memory, "ph", J_STRING)->string, "C");
  assert_string_equal(json_get(memory, "name", J_STRING)->string, "memory ref:0");
  json_get(memory, "ts", J_NUMBER);
  args = json_get(memory, "args", J_OBJECT);
  assert_true(json_get(args, "bytes_in_use", J_NUMBER)->number == 1024);
  assert_true(json_get(args, "system_alloc_count", J_NUMBER)->number == 2);
  json_free(&root);
}

static void test_trace_json_from_threads_keeps_every_event(void **state) {
  (void)state;
  char path[300];
  trace_path(path, sizeof(path), "threads.json");
  tsr_trace_configure(path);
  run_trace_writers();
  tsr_trace_shutdown();
  json root = trace_file_parse(path);
  assert_int_equal(root.count, WRITER_THREADS * LINES_PER_WRITER);
  int seen[WRITER_THREADS][LINES_PER_WRITER];
  memset(seen, 0, sizeof(seen));
  for (int i = 0; i < root.count; ++i) {
    complete_event_check(&root.items[i]);
    long id;
    int index;
    const char *engine =
        json_get(json_get(&root.items[i], "args", J_OBJECT), "engine", J_STRING)->string;
    assert_int_equal(sscanf(engine, "w%ld-%d", &id, &index), 2);
    assert_true(id >= 0 && id < WRITER_THREADS && index >= 0 && index < LINES_PER_WRITER);
    ++seen[id][index];
  }
  for (int t = 0; t < WRITER_THREADS; ++t) {
    for (int i = 0; i < LINES_PER_WRITER; ++i) assert_int_equal(seen[t][i], 1);
  }
  json_free(&root);
}

static void test_trace_reconfigure_finishes_the_open_file(void **state) {
  (void)state;
  char first[300], second[300];
  trace_path(first, sizeof(first), "first.json");
  trace_path(second, sizeof(second), "second.json");
  tsr_trace_configure(first);
  tsr_trace_op("ref:0", "ref", "fill", "ref:fill", 0, 1000);
  tsr_trace_configure(second);
  json root = trace_file_parse(first);
  assert_int_equal(root.count, 1);
  json_free(&root);
  tsr_trace_shutdown();
  tsr_trace_shutdown();  // idempotent
  root = trace_file_parse(second);
  assert_int_equal(root.count, 0);
  json_free(&root);
}

static void test_trace_unopenable_file_leaves_tracing_off_with_a_warning(void **state) {
  (void)state;
  tsr_log_configure("info");
  capture_begin();
  tsr_trace_configure("/nonexistent-tessera-dir/trace.json");
  char *text = capture_end();
  assert_false(tsr_trace_enabled());
  assert_non_null(strstr(text,
                         "tessera: warning: trace: cannot open TSR_TRACE file "
                         "\"/nonexistent-tessera-dir/trace.json\": No such file"));
  free(text);
}

static int group_setup(void **state) {
  (void)state;
  return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int group_teardown(void **state) {
  (void)state;
  const char *names[] = {"stderr.txt", "ops.json", "threads.json", "first.json", "second.json"};
  char path[300];
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    trace_path(path, sizeof(path), names[i]);
    unlink(path);
  }
  rmdir(g_dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_reads_threshold_from_environment_on_first_use),
      cmocka_unit_test(test_log_writes_prefixed_lines_at_or_above_threshold),
      cmocka_unit_test(test_log_names_an_unknown_threshold_and_uses_warning),
      cmocka_unit_test(test_log_writes_a_long_message_whole),
      cmocka_unit_test(test_log_lines_from_threads_do_not_interleave),
      cmocka_unit_test(test_trace_init_reads_TSR_TRACE_once),
      cmocka_unit_test(test_trace_is_off_for_unset_empty_or_zero),
      cmocka_unit_test(test_trace_text_mode_prints_one_line_per_op),
      cmocka_unit_test(test_trace_text_lines_from_threads_do_not_interleave),
      cmocka_unit_test(test_trace_json_mode_writes_chrome_trace_events),
      cmocka_unit_test(test_trace_json_from_threads_keeps_every_event),
      cmocka_unit_test(test_trace_reconfigure_finishes_the_open_file),
      cmocka_unit_test(test_trace_unopenable_file_leaves_tracing_off_with_a_warning),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
