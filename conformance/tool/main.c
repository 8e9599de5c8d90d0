// tsr-conformance: certifies a Tessera plugin .so through its public entry
// point only.
//
//   tsr-conformance --plugin PATH [--device N] [--filter PATTERN]
//                   [--report FILE.md] [--junit FILE.xml] [--full]
//                   [--seed N] [--timeout SECONDS] [--jobs N] [--verbose]
//
// Every group of checks runs in a forked child that loads the plugin afresh,
// so a crash or a hang is reported as a failure naming the op or check
// instead of ending the run. docs/conformance.md describes the tiers, the
// tolerances and the report.
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

typedef struct options {
  const char *plugin;
  int32_t device;
  const char *filter;
  const char *report;
  const char *junit;
  int full;
  uint64_t seed;
  double timeout;
  int jobs;
  int verbose;
} options;

typedef enum job_kind { JOB_LOAD, JOB_API, JOB_NUMERICS } job_kind;

typedef struct job {
  job_kind kind;
  const char *group;  // JOB_API
  void (*run)(tsr_conf_session *s);
  int32_t op;         // JOB_NUMERICS
  char label[64];
} job;

// Creates the folders above the file |path| that are missing (mkdir -p of
// its dirname), so --report and --junit may name a folder not made yet.
// 0, or -1 with errno set.
static int parent_folders_make(const char *path) {
  char dir[4096];
  size_t n = strlen(path);
  if (n >= sizeof(dir)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(dir, path, n + 1);
  char *slash = strrchr(dir, '/');
  if (slash == NULL || slash == dir)
    return 0;  // the current folder, or the root
  *slash = '\0';
  for (char *p = dir + 1; *p != '\0'; ++p) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return -1;
  return 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: tsr-conformance --plugin PATH [--device N] [--filter PATTERN] [--report FILE.md]\n"
          "                       [--junit FILE.xml] [--full] [--seed N] [--timeout SECONDS] [--jobs N]\n"
          "                       [--verbose]\n"
          "\n"
          "Certifies a Tessera plugin: the API contract tier, then the numerics of every op the plugin\n"
          "declares against a float64 oracle. PATTERN is a comma-separated list of shell patterns matched\n"
          "against check groups and ops: 'api:*', 'api:streams', 'numerics:*', 'matmul', 'conv2d*'.\n"
          "Exit status: 0 certified, 1 refused, 2 skipped (the plugin cannot run here), 3 not loaded or a\n"
          "usage error, 4 incomplete (declared ops that could not be checked).\n");
}

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof(*o));
  o->seed = 1;
  o->timeout = 600;
  o->jobs = 1;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE()                                                  \
  do {                                                          \
    if (value == NULL) {                                        \
      fprintf(stderr, "tsr-conformance: %s needs a value\n", a); \
      return -1;                                                \
    }                                                           \
    ++i;                                                        \
  } while (0)
    if (strcmp(a, "--plugin") == 0) {
      TAKE();
      o->plugin = value;
    } else if (strcmp(a, "--device") == 0) {
      TAKE();
      o->device = (int32_t)strtol(value, NULL, 10);
    } else if (strcmp(a, "--filter") == 0) {
      TAKE();
      o->filter = value;
    } else if (strcmp(a, "--report") == 0) {
      TAKE();
      o->report = value;
    } else if (strcmp(a, "--junit") == 0) {
      TAKE();
      o->junit = value;
    } else if (strcmp(a, "--seed") == 0) {
      TAKE();
      o->seed = strtoull(value, NULL, 10);
    } else if (strcmp(a, "--timeout") == 0) {
      TAKE();
      o->timeout = strtod(value, NULL);
    } else if (strcmp(a, "--jobs") == 0) {
      TAKE();
      o->jobs = (int)strtol(value, NULL, 10);
    } else if (strcmp(a, "--full") == 0) {
      o->full = 1;
    } else if (strcmp(a, "--verbose") == 0) {
      o->verbose = 1;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "tsr-conformance: unknown argument '%s'\n", a);
      return -1;
    }
#undef TAKE
  }
  if (o->plugin == NULL) {
    fprintf(stderr, "tsr-conformance: --plugin PATH is required\n");
    return -1;
  }
  if (o->jobs < 1) o->jobs = 1;
  if (o->timeout <= 0) o->timeout = 600;
  return 0;
}

// Whether |name| (and its alias) matches the filter.
static int filter_match(const char *filter, const char *name, const char *alias) {
  if (filter == NULL) return 1;
  char copy[1024];
  snprintf(copy, sizeof(copy), "%s", filter);
  for (char *save = NULL, *p = strtok_r(copy, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save)) {
    if (fnmatch(p, name, 0) == 0 || (alias != NULL && fnmatch(p, alias, 0) == 0)) return 1;
  }
  return 0;
}

// --- the child side -------------------------------------------------------------

static void child_body(const options *o, const job *j) {
  tsr_conf_host_verbose_set(o->verbose);
  tsr_conf_session s;
  memset(&s, 0, sizeof(s));
  s.full = o->full;
  s.verbose = o->verbose;
  s.seed = o->seed;
  tsr_conf_record_begin("starting the plugin");
  tsr_conf_open_t opened = tsr_conf_session_open(&s, o->plugin, o->device, tsr_conf_host_get());
  if (j->kind == JOB_LOAD) {
    tsr_conf_record_info("open.status", "%d", (int)opened);
    tsr_conf_record_info("open.message", "%s", s.message);
    if (opened == TSR_CONF_OPENED) {
      tsr_conf_record_begin("support matrix");
      tsr_conf_support_report(&s);
      tsr_conf_api_identity_run(&s);
      tsr_conf_api_compat_run(&s);
    }
  } else if (opened != TSR_CONF_OPENED) {
    char name[96];
    snprintf(name, sizeof(name), "%s: start", j->label);
    tsr_conf_record_check(name, TSR_CONF_FAIL, INFINITY, "the plugin started once but not in this process: %s",
                          s.message);
  } else if (j->kind == JOB_API) {
    if (strcmp(j->group, "lifecycle") == 0) {
      tsr_conf_api_lifecycle_run(&s, o->plugin, o->device);
    } else {
      j->run(&s);
    }
  } else {
    tsr_conf_numerics_op_run(&s, j->op);
  }
  tsr_conf_record_begin("shutting the plugin down");
  tsr_conf_session_close(&s);
  tsr_conf_record_done();
}

// --- the parent side --------------------------------------------------------------

typedef struct running {
  const job *j;
  pid_t pid;
  int fd;
  double started;
  char buffer[8192];
  size_t used;
  char last_begin[600];
  int done;
  int timed_out;
} running;

static void line_handle(tsr_conf_model *m, running *r, const char *line) {
  if (strncmp(line, "begin\t", 6) == 0) {
    snprintf(r->last_begin, sizeof(r->last_begin), "%s", line + 6);
    size_t n = strlen(r->last_begin);
    if (n > 0 && r->last_begin[n - 1] == '\n') r->last_begin[n - 1] = '\0';
  }
  if (strncmp(line, "done", 4) == 0) r->done = 1;
  if (tsr_conf_model_line(m, line) != 0) {
    fprintf(stderr, "tsr-conformance: ignoring an unknown record: %s", line);
  }
}

static int child_start(const options *o, const job *j, running *r) {
  memset(r, 0, sizeof(*r));
  r->j = j;
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    tsr_conf_record_fd_set(fds[1]);
    child_body(o, j);
    _exit(0);
  }
  close(fds[1]);
  r->pid = pid;
  r->fd = fds[0];
  r->started = now_s();
  return 0;
}

// Reads what is available; returns 1 at end of file.
static int child_read(tsr_conf_model *m, running *r) {
  ssize_t got = read(r->fd, r->buffer + r->used, sizeof(r->buffer) - 1 - r->used);
  if (got < 0 && errno == EINTR) return 0;
  if (got <= 0) return 1;
  r->used += (size_t)got;
  r->buffer[r->used] = '\0';
  char *start = r->buffer;
  for (char *nl; (nl = strchr(start, '\n')) != NULL; start = nl + 1) {
    char saved = nl[1];
    nl[1] = '\0';
    line_handle(m, r, start);
    nl[1] = saved;
  }
  r->used = (size_t)(r->buffer + r->used - start);
  memmove(r->buffer, start, r->used);
  if (r->used == sizeof(r->buffer) - 1) r->used = 0;  // an over-long line: drop it
  return 0;
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
  }
}

// The child is gone: attribute a crash, a hang or an early exit.
static void child_finish(tsr_conf_model *m, running *r) {
  close(r->fd);
  int status = 0;
  while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (r->done && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  char what[900];
  if (r->timed_out) {
    snprintf(what, sizeof(what), "did not finish within the timeout; it was killed while running: %s", r->last_begin);
  } else if (WIFSIGNALED(status)) {
    snprintf(what, sizeof(what), "crashed with %s (%d) while running: %s", signal_name(WTERMSIG(status)),
             WTERMSIG(status), r->last_begin);
  } else {
    snprintf(what, sizeof(what), "exited with status %d before finishing, while running: %s",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, r->last_begin);
  }
  const char *check = r->timed_out ? "hang" : "crash";
  const job *j = r->j;
  if (j->kind == JOB_LOAD) {
    const char *status = tsr_conf_model_info(m, "open.status");
    if (status[0] == '\0') {
      // It died before the plugin had started: a load failure, not a refusal.
      m->open = TSR_CONF_NOT_LOADED;
      snprintf(m->open_message, sizeof(m->open_message), "loading the plugin %s", what);
    } else if (atoi(status) == TSR_CONF_OPENED) {
      char name[128];
      snprintf(name, sizeof(name), "load: %s", check);
      tsr_conf_model_check_add(m, name, TSR_CONF_FAIL, INFINITY, what);
    }
    return;
  }
  if (j->kind == JOB_API) {
    char name[128];
    snprintf(name, sizeof(name), "%s: %s", j->group, check);
    tsr_conf_model_check_add(m, name, TSR_CONF_FAIL, INFINITY, what);
    return;
  }
  // Numerics: every declared dtype of the op without a result fails.
  for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
    tsr_conf_cell *c = &m->cells[j->op][dt];
    if (!c->supported || c->has_result) continue;
    // Only the dtype being run when it died carries the case name.
    char marker[64];
    snprintf(marker, sizeof(marker), "numerics %s %s:", tsr_op_name(j->op), tsr_oracle_dtype_name(dt));
    int culprit = strncmp(r->last_begin, marker, strlen(marker)) == 0;
    c->has_result = 1;
    c->result = TSR_CONF_FAIL;
    c->ratio = INFINITY;
    snprintf(c->detail, sizeof(c->detail), "%s: the test process %s", check,
             culprit ? what : "stopped before reaching this dtype");
    if (culprit) {
      tsr_conf_model_failure_add(m, j->op, dt, check, INFINITY, r->last_begin + strlen(marker), what);
    }
  }
}

// Runs |jobs| with at most o->jobs children at a time.
static void jobs_run(const options *o, tsr_conf_model *m, job *jobs, int count) {
  running *active = calloc((size_t)(o->jobs > 0 ? o->jobs : 1), sizeof(running));
  int next = 0, live = 0;
  while (next < count || live > 0) {
    while (live < o->jobs && next < count) {
      if (child_start(o, &jobs[next], &active[live]) == 0) {
        ++live;
      } else {
        tsr_conf_model_check_add(m, jobs[next].label, TSR_CONF_FAIL, INFINITY, "suite: fork failed");
      }
      ++next;
    }
    struct pollfd fds[64];
    for (int i = 0; i < live; ++i) fds[i] = (struct pollfd){.fd = active[i].fd, .events = POLLIN};
    poll(fds, (nfds_t)live, 500);
    for (int i = 0; i < live;) {
      running *r = &active[i];
      int eof = 0;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) eof = child_read(m, r);
      if (!eof && now_s() - r->started > o->timeout) {
        kill(r->pid, SIGKILL);
        r->timed_out = 1;
        eof = 1;
      }
      if (eof) {
        child_finish(m, r);
        active[i] = active[live - 1];
        fds[i] = fds[live - 1];
        --live;
      } else {
        ++i;
      }
    }
  }
  free(active);
}

static const struct {
  const char *group;
  void (*run)(tsr_conf_session *s);
} api_groups[] = {
    {"allocator", tsr_conf_api_allocator_run}, {"copies", tsr_conf_api_copies_run},
    {"streams", tsr_conf_api_streams_run},     {"errors", tsr_conf_api_errors_run},
    {"threads", tsr_conf_api_threads_run},     {"lifecycle", NULL},
};

int main(int argc, char **argv) {
  options o;
  if (parse_args(argc, argv, &o) != 0) {
    usage(stderr);
    return tsr_conf_verdict_exit_code(TSR_CONF_VERDICT_NOT_LOADED);
  }
  // A crash in a child must not take the parent with it through SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  double start = now_s();
  tsr_conf_model m;
  memset(&m, 0, sizeof(m));
  m.path = o.plugin;
  m.device = o.device;
  m.full = o.full;
  m.seed = o.seed;
  m.filter = o.filter;
  m.open = TSR_CONF_NOT_LOADED;

  job load = {.kind = JOB_LOAD};
  snprintf(load.label, sizeof(load.label), "load");
  jobs_run(&o, &m, &load, 1);
  const char *status = tsr_conf_model_info(&m, "open.status");
  if (status[0] != '\0') {
    m.open = (tsr_conf_open_t)atoi(status);
    snprintf(m.open_message, sizeof(m.open_message), "%s", tsr_conf_model_info(&m, "open.message"));
  }
  if (m.open == TSR_CONF_OPENED) {
    job jobs[TSR_OP_COUNT + 16];
    int count = 0;
    for (size_t g = 0; g < sizeof(api_groups) / sizeof(api_groups[0]); ++g) {
      char name[64];
      snprintf(name, sizeof(name), "api:%s", api_groups[g].group);
      if (!filter_match(o.filter, name, "api")) continue;
      job *j = &jobs[count++];
      memset(j, 0, sizeof(*j));
      j->kind = JOB_API;
      j->group = api_groups[g].group;
      j->run = api_groups[g].run;
      snprintf(j->label, sizeof(j->label), "%s", name);
    }
    for (int32_t op = 1; op < TSR_OP_COUNT; ++op) {
      int declared = 0;
      for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) declared |= m.cells[op][dt].supported;
      char name[64];
      snprintf(name, sizeof(name), "numerics:%s", tsr_op_name(op));
      if (!declared || !filter_match(o.filter, name, tsr_op_name(op))) continue;
      m.op_ran[op] = 1;
      job *j = &jobs[count++];
      memset(j, 0, sizeof(*j));
      j->kind = JOB_NUMERICS;
      j->op = op;
      snprintf(j->label, sizeof(j->label), "%s", name);
    }
    jobs_run(&o, &m, jobs, count);
  }
  m.seconds = now_s() - start;
  tsr_conf_report_text(&m, stdout);
  if (o.report != NULL &&
      (parent_folders_make(o.report) != 0 || tsr_conf_report_markdown(&m, o.report) != 0)) {
    fprintf(stderr, "tsr-conformance: cannot write %s: %s\n", o.report, strerror(errno));
  }
  if (o.junit != NULL &&
      (parent_folders_make(o.junit) != 0 || tsr_conf_report_junit(&m, o.junit) != 0)) {
    fprintf(stderr, "tsr-conformance: cannot write %s: %s\n", o.junit, strerror(errno));
  }
  char why[1024];
  int code = tsr_conf_verdict_exit_code(tsr_conf_verdict(&m, why, sizeof(why)));
  tsr_conf_model_free(&m);
  return code;
}
