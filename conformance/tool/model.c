// Assembling the children's records, and the verdict.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define FIELDS 12

// Splits |line| (modified) at tabs; the last field takes the rest.
static int split(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  while (n < max) {
    fields[n++] = p;
    if (n == max) break;
    char *tab = strchr(p, '\t');
    if (tab == NULL) break;
    *tab = '\0';
    p = tab + 1;
  }
  size_t len = strlen(fields[n - 1]);
  if (len > 0 && fields[n - 1][len - 1] == '\n') fields[n - 1][len - 1] = '\0';
  return n;
}

static tsr_conf_result_t result_parse(const char *text) {
  if (strcmp(text, "pass") == 0) return TSR_CONF_PASS;
  if (strcmp(text, "fail") == 0) return TSR_CONF_FAIL;
  if (strcmp(text, "declined") == 0) return TSR_CONF_DECLINED;
  return TSR_CONF_SKIP;
}

static double ratio_parse(const char *text) {
  if (strcmp(text, "-") == 0) return NAN;
  return strtod(text, NULL);
}

void tsr_conf_model_check_add(tsr_conf_model *m, const char *name, tsr_conf_result_t result, double ratio,
                              const char *detail) {
  if (m->check_count == m->check_capacity) {
    int cap = m->check_capacity ? 2 * m->check_capacity : 64;
    tsr_conf_check_row *rows = realloc(m->checks, (size_t)cap * sizeof(*rows));
    if (rows == NULL) return;
    m->checks = rows;
    m->check_capacity = cap;
  }
  tsr_conf_check_row *r = &m->checks[m->check_count++];
  snprintf(r->name, sizeof(r->name), "%s", name);
  r->result = result;
  r->ratio = ratio;
  snprintf(r->detail, sizeof(r->detail), "%s", detail);
}

void tsr_conf_model_failure_add(tsr_conf_model *m, int32_t op, tsr_dtype_t dtype, const char *check, double ratio,
                                const char *case_name, const char *detail) {
  if (m->failure_count == m->failure_capacity) {
    int cap = m->failure_capacity ? 2 * m->failure_capacity : 32;
    tsr_conf_failure_row *rows = realloc(m->failures, (size_t)cap * sizeof(*rows));
    if (rows == NULL) return;
    m->failures = rows;
    m->failure_capacity = cap;
  }
  tsr_conf_failure_row *r = &m->failures[m->failure_count++];
  r->op = op;
  r->dtype = dtype;
  snprintf(r->check, sizeof(r->check), "%s", check);
  r->ratio = ratio;
  snprintf(r->case_name, sizeof(r->case_name), "%s", case_name);
  snprintf(r->detail, sizeof(r->detail), "%s", detail);
}

static int op_dtype_ok(int op, int dt) { return op > 0 && op < TSR_OP_COUNT && dt >= 0 && dt < TSR_DTYPE_COUNT; }

int tsr_conf_model_line(tsr_conf_model *m, const char *text) {
  char line[4096];
  snprintf(line, sizeof(line), "%s", text);
  char *f[FIELDS];
  if (strncmp(line, "info\t", 5) == 0) {
    int n = split(line, f, 3);
    if (n < 3) return -1;
    if (m->info_count < (int)(sizeof(m->infos) / sizeof(m->infos[0]))) {
      tsr_conf_info *info = &m->infos[m->info_count++];
      snprintf(info->key, sizeof(info->key), "%s", f[1]);
      snprintf(info->value, sizeof(info->value), "%s", f[2]);
    }
    return 0;
  }
  if (strncmp(line, "check\t", 6) == 0) {
    int n = split(line, f, 5);
    if (n < 5) return -1;
    tsr_conf_model_check_add(m, f[1], result_parse(f[2]), ratio_parse(f[3]), f[4]);
    return 0;
  }
  if (strncmp(line, "support\t", 8) == 0) {
    int n = split(line, f, 5);
    if (n < 5) return -1;
    int op = atoi(f[1]), dt = atoi(f[2]);
    if (!op_dtype_ok(op, dt)) return -1;
    tsr_conf_cell *c = &m->cells[op][dt];
    c->asked = 1;
    c->supported = atoi(f[3]);
    snprintf(c->reason, sizeof(c->reason), "%s", f[4]);
    return 0;
  }
  if (strncmp(line, "selector\t", 9) == 0) {
    int n = split(line, f, 5);
    if (n < 5) return -1;
    int op = atoi(f[1]), index = atoi(f[2]), dt = atoi(f[3]), state = atoi(f[4]);
    if (!op_dtype_ok(op, dt) || index < 0 || index >= TSR_CONF_MAX_SELECTORS || state < 0 || state > 2) {
      return -1;
    }
    m->selectors[op][index][dt] = (signed char)state;
    return 0;
  }
  if (strncmp(line, "cell\t", 5) == 0) {
    int n = split(line, f, 10);
    if (n < 10) return -1;
    int op = atoi(f[1]), dt = atoi(f[2]);
    if (!op_dtype_ok(op, dt)) return -1;
    tsr_conf_cell *c = &m->cells[op][dt];
    c->has_result = 1;
    c->result = result_parse(f[3]);
    c->ratio = ratio_parse(f[4]);
    c->cases = atoi(f[5]);
    c->passed = atoi(f[6]);
    c->failed = atoi(f[7]);
    c->declined = atoi(f[8]);
    snprintf(c->detail, sizeof(c->detail), "%s", f[9]);
    m->cases_total += c->cases;
    return 0;
  }
  if (strncmp(line, "failure\t", 8) == 0) {
    int n = split(line, f, 7);
    if (n < 7) return -1;
    int op = atoi(f[1]), dt = atoi(f[2]);
    if (!op_dtype_ok(op, dt)) return -1;
    tsr_conf_model_failure_add(m, op, dt, f[3], ratio_parse(f[4]), f[5], f[6]);
    return 0;
  }
  if (strncmp(line, "begin\t", 6) == 0 || strcmp(line, "done\n") == 0 || strcmp(line, "done") == 0) return 0;
  return -1;
}

const char *tsr_conf_model_info(const tsr_conf_model *m, const char *key) {
  for (int i = m->info_count - 1; i >= 0; --i) {
    if (strcmp(m->infos[i].key, key) == 0) return m->infos[i].value;
  }
  return "";
}

void tsr_conf_model_free(tsr_conf_model *m) {
  free(m->checks);
  free(m->failures);
  m->checks = NULL;
  m->failures = NULL;
}

tsr_conf_verdict_t tsr_conf_verdict(const tsr_conf_model *m, char *why, size_t size) {
  if (m->open == TSR_CONF_UNAVAILABLE) {
    snprintf(why, size, "skipped: the plugin cannot run here (%s)", m->open_message);
    return TSR_CONF_SKIPPED;
  }
  if (m->open != TSR_CONF_OPENED) {
    snprintf(why, size, "not judged: %s", m->open_message);
    return TSR_CONF_VERDICT_NOT_LOADED;
  }
  int failed_checks = 0, failed_cells = 0, unchecked = 0, cells_passed = 0, checks_passed = 0;
  char first[512] = "";
  for (int i = 0; i < m->check_count; ++i) {
    if (m->checks[i].result == TSR_CONF_FAIL) {
      if (failed_checks++ == 0) snprintf(first, sizeof(first), "%s", m->checks[i].name);
    } else if (m->checks[i].result == TSR_CONF_PASS) {
      ++checks_passed;
    }
  }
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      const tsr_conf_cell *c = &m->cells[op][dt];
      if (!c->has_result) continue;
      if (c->result == TSR_CONF_FAIL) {
        if (failed_checks + failed_cells++ == 0) {
          snprintf(first, sizeof(first), "%s %s", tsr_op_name(op), tsr_oracle_dtype_name(dt));
        }
      } else if (c->result == TSR_CONF_PASS) {
        ++cells_passed;
      } else {
        ++unchecked;
      }
    }
  }
  if (failed_checks + failed_cells > 0) {
    snprintf(why, size, "refused: %d API check(s) and %d op x dtype pair(s) failed, the first: %s", failed_checks,
             failed_cells, first);
    return TSR_CONF_REFUSED;
  }
  if (unchecked > 0) {
    snprintf(why, size, "incomplete: nothing failed, but %d declared op x dtype pair(s) could not be checked", unchecked);
    return TSR_CONF_INCOMPLETE;
  }
  snprintf(why, size, "certified%s: %d API checks and %d op x dtype pairs (%d cases) passed",
           m->filter ? " for the filtered checks only" : "", checks_passed, cells_passed, m->cases_total);
  return TSR_CONF_CERTIFIED;
}

int tsr_conf_verdict_exit_code(tsr_conf_verdict_t verdict) { return (int)verdict; }
