// Records a child sends to the parent: one line each, tab-separated fields,
// written with a single write() so lines never interleave and a crash loses
// at most the line being formatted.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

static int record_fd = -1;

void tsr_conf_record_fd_set(int fd) { record_fd = fd; }

const char *tsr_conf_result_name(tsr_conf_result_t result) {
  switch (result) {
    case TSR_CONF_PASS: return "pass";
    case TSR_CONF_FAIL: return "fail";
    case TSR_CONF_SKIP: return "skip";
    case TSR_CONF_DECLINED: return "declined";
    default: return "?";
  }
}

// Tabs and newlines would break the line format.
static void sanitize(char *text) {
  for (char *p = text; *p; ++p) {
    if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
  }
}

static void line_write(const char *line) {
  if (record_fd < 0) return;
  size_t n = strlen(line), done = 0;
  while (done < n) {
    ssize_t w = write(record_fd, line + done, n - done);
    if (w <= 0) return;
    done += (size_t)w;
  }
}

static void vformat(char *buf, size_t size, const char *format, va_list args) {
  vsnprintf(buf, size, format, args);
  sanitize(buf);
}

static const char *ratio_text(double ratio, char *buf, size_t size) {
  if (isnan(ratio)) {
    snprintf(buf, size, "-");
  } else {
    snprintf(buf, size, "%.6g", ratio);
  }
  return buf;
}

void tsr_conf_record_begin(const char *format, ...) {
  char what[512], line[600];
  va_list args;
  va_start(args, format);
  vformat(what, sizeof(what), format, args);
  va_end(args);
  snprintf(line, sizeof(line), "begin\t%s\n", what);
  line_write(line);
}

void tsr_conf_record_info(const char *key, const char *format, ...) {
  char value[1024], line[1200];
  va_list args;
  va_start(args, format);
  vformat(value, sizeof(value), format, args);
  va_end(args);
  snprintf(line, sizeof(line), "info\t%s\t%s\n", key, value);
  line_write(line);
}

void tsr_conf_record_check(const char *name, tsr_conf_result_t result, double ratio,
                           const char *format, ...) {
  char detail[1024], line[1400], r[32];
  va_list args;
  va_start(args, format);
  vformat(detail, sizeof(detail), format, args);
  va_end(args);
  snprintf(line, sizeof(line), "check\t%s\t%s\t%s\t%s\n", name, tsr_conf_result_name(result),
           ratio_text(ratio, r, sizeof(r)), detail);
  line_write(line);
}

void tsr_conf_record_support(int32_t op, tsr_dtype_t dtype, int supported, const char *reason) {
  char text[600], line[700];
  snprintf(text, sizeof(text), "%s", reason != NULL ? reason : "");
  sanitize(text);
  snprintf(line, sizeof(line), "support\t%d\t%d\t%d\t%s\n", (int)op, (int)dtype, supported, text);
  line_write(line);
}

void tsr_conf_record_selector(int32_t op, int32_t index, tsr_dtype_t dtype, int state) {
  char line[96];
  snprintf(line, sizeof(line), "selector\t%d\t%d\t%d\t%d\n", (int)op, (int)index, (int)dtype, state);
  line_write(line);
}

void tsr_conf_record_cell(int32_t op, tsr_dtype_t dtype, tsr_conf_result_t result, double ratio,
                          int cases, int passed, int failed, int declined, const char *format,
                          ...) {
  char detail[1024], line[1300], r[32];
  va_list args;
  va_start(args, format);
  vformat(detail, sizeof(detail), format, args);
  va_end(args);
  snprintf(line, sizeof(line), "cell\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", (int)op, (int)dtype,
           tsr_conf_result_name(result), ratio_text(ratio, r, sizeof(r)), cases, passed, failed,
           declined, detail);
  line_write(line);
}

void tsr_conf_record_failure(int32_t op, tsr_dtype_t dtype, const char *check, double ratio,
                             const char *case_name, const char *format, ...) {
  char detail[1024], name[256], line[1500], r[32];
  va_list args;
  va_start(args, format);
  vformat(detail, sizeof(detail), format, args);
  va_end(args);
  snprintf(name, sizeof(name), "%s", case_name);
  sanitize(name);
  snprintf(line, sizeof(line), "failure\t%d\t%d\t%s\t%s\t%s\t%s\n", (int)op, (int)dtype, check,
           ratio_text(ratio, r, sizeof(r)), name, detail);
  line_write(line);
}

void tsr_conf_record_done(void) { line_write("done\n"); }
