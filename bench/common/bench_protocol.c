// The C side of the worker line protocol; see bench_protocol.h.
#include "bench_protocol.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_double_compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *values, size_t count) {
  qsort(values, count, sizeof(double), bench_double_compare);
  return values[count / 2];
}

void bench_json_string(FILE *out, const char *text) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; ++p) {
    if (*p == '"' || *p == '\\') {
      fputc('\\', out);
      fputc(*p, out);
    } else if (*p < 0x20) {
      fprintf(out, "\\u%04x", (unsigned)*p);
    } else {
      fputc(*p, out);
    }
  }
  fputc('"', out);
}

void bench_fill_random(float *data, size_t count, uint64_t seed) {
  uint64_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    data[i] = (float)((double)(state >> 40) / (double)(1ull << 24)) - 0.5f;
  }
}

static void reply_failure(int not_yet, const char *message) {
  fputs("{\"ok\":false,", stdout);
  fputs(not_yet ? "\"not_yet\":true,\"reason\":" : "\"error\":", stdout);
  bench_json_string(stdout, message);
  fputs("}\n", stdout);
}

// Parses "run WORKLOAD ARG WARMUP SAMPLES INNER" after the verb.
static int request_parse(const char *line, bench_request *out) {
  memset(out, 0, sizeof(*out));
  long long arg = 0, inner = 0;
  int warmup = 0, samples = 0;
  if (sscanf(line, "run %63s %lld %d %d %lld", out->workload, &arg, &warmup, &samples, &inner) !=
      5) {
    return 0;
  }
  if (arg < 0 || warmup < 0 || samples < 1 || samples > BENCH_MAX_SAMPLES || inner < 1) return 0;
  out->arg = arg;
  out->warmup = warmup;
  out->samples = samples;
  out->inner = inner;
  return 1;
}

typedef struct bench_extra {
  const char *key;
  double value;
} bench_extra;
static bench_extra g_extras[BENCH_MAX_EXTRAS];
static int g_extra_count;

void bench_extra_set(const char *key, double value) {
  for (int i = 0; i < g_extra_count; ++i) {
    if (strcmp(g_extras[i].key, key) == 0) {
      g_extras[i].value = value;
      return;
    }
  }
  if (g_extra_count < BENCH_MAX_EXTRAS) g_extras[g_extra_count++] = (bench_extra){key, value};
}

int bench_serve(bench_run_fn run, bench_info_fn info, void *user) {
  static double samples[BENCH_MAX_SAMPLES];
  char line[512];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "quit") == 0) break;
    if (strcmp(line, "info") == 0) {
      fputs("{\"ok\":true,\"info\":{", stdout);
      info(user, stdout);
      fputs("}}\n", stdout);
    } else if (strncmp(line, "run ", 4) == 0) {
      bench_request request;
      char message[512] = "";
      if (!request_parse(line, &request)) {
        reply_failure(0, "malformed request: expected 'run WORKLOAD ARG WARMUP SAMPLES INNER' "
                         "with SAMPLES in 1..1000 and INNER >= 1");
      } else {
        g_extra_count = 0;
        bench_result result = run(user, &request, samples, message, sizeof(message));
        if (result == BENCH_OK) {
          fputs("{\"ok\":true,\"samples\":[", stdout);
          for (int32_t i = 0; i < request.samples; ++i) {
            fprintf(stdout, "%s%.9g", i ? "," : "", samples[i]);
          }
          fputs("]", stdout);
          for (int i = 0; i < g_extra_count; ++i) {
            fputs(i ? "," : ",\"extra\":{", stdout);
            bench_json_string(stdout, g_extras[i].key);
            fprintf(stdout, ":%.9g", g_extras[i].value);
          }
          if (g_extra_count > 0) fputs("}", stdout);
          fputs("}\n", stdout);
        } else {
          reply_failure(result == BENCH_NOT_YET, message[0] ? message : "no reason given");
        }
      }
    } else {
      reply_failure(0, "unknown request: expected info, run or quit");
    }
    fflush(stdout);
  }
  return 0;
}
