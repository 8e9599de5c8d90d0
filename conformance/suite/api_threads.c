// API tier: threading (docs/abi.md section 4, 9.5, 9.6). One plan executed
// from several threads on several streams at once gives what one thread
// gives; plans are created concurrently; a plan that claims determinism is
// bit-reproducible.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define THREADS 4
#define REPEATS 12

typedef struct worker {
  tsr_conf_session *session;
  tsr_conf_prepared *prepared;
  int copy;
  tsr_plugin_stream *stream;
  tsr_status status;
  char message[400];
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  for (int r = 0; r < REPEATS && w->status == TSR_OK; ++r) {
    w->status = tsr_conf_prepared_execute(w->prepared, w->copy, w->stream);
    if (w->status == TSR_OK) w->status = w->session->api.stream_synchronize(w->stream);
  }
  if (w->status != TSR_OK) snprintf(w->message, sizeof(w->message), "%s", tsr_conf_host_message());
  return NULL;
}

// Compares two outputs: bit for bit when |exact|, else to 1e-5 relative
// (float32) in the output's element type.
static int64_t outputs_differ(const unsigned char *a, const unsigned char *b, size_t size, tsr_dtype_t dt,
                              int exact) {
  if (exact || !tsr_oracle_dtype_is_float(dt)) return tsr_conf_api_first_difference(a, b, size);
  size_t es = tsr_dtype_size(dt);
  for (size_t i = 0; i + es <= size; i += es) {
    double x, y;
    int64_t ix, iy;
    tsr_oracle_element_load(a + i, dt, &x, &ix);
    tsr_oracle_element_load(b + i, dt, &y, &iy);
    if (isnan(x) && isnan(y)) continue;
    if (fabs(x - y) > 1e-5 * (fabs(x) + fabs(y)) + 1e-30) return (int64_t)i;
  }
  return -1;
}

static void check_one_plan_many_threads(tsr_conf_session *s, const tsr_conf_case *c) {
  const char *name = "threads: one plan executed from several threads";
  tsr_conf_record_begin("%s", name);
  char why[512];
  tsr_conf_prepared *p = NULL;
  tsr_status st = tsr_conf_prepared_create(s, c, THREADS + 1, &p, why, sizeof(why));
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "preparing %s: %s", c->name, why);
    return;
  }
  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  s->api.plan_info_get(tsr_conf_prepared_plan(p), &info);
  int deterministic = (info.flags & TSR_PLAN_INFO_DETERMINISTIC) != 0;
  size_t size = 0;
  tsr_conf_prepared_read(p, 0, s->stream, NULL, &size);
  unsigned char *reference = malloc(size), *got = malloc(size);
  worker workers[THREADS];
  pthread_t threads[THREADS];
  int started = 0;
  memset(workers, 0, sizeof(workers));
  if (!reference || !got) goto done;
  // One thread alone first: the reference.
  st = tsr_conf_prepared_execute(p, 0, s->stream);
  if (st == TSR_OK) st = s->api.stream_synchronize(s->stream);
  if (st == TSR_OK) st = tsr_conf_prepared_read(p, 0, s->stream, reference, &size);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "single-thread execution of %s: %s: %s", c->name, tsr_conf_status_name(st),
                        tsr_conf_host_message());
    goto done;
  }
  for (int t = 0; t < THREADS; ++t) {
    workers[t].session = s;
    workers[t].prepared = p;
    workers[t].copy = t + 1;
    if (s->api.stream_create(s->device, 0, &workers[t].stream) != TSR_OK) {
      TSR_CONF_FAIL_CHECK(name, "stream_create for thread %d failed", t);
      goto done;
    }
  }
  for (int t = 0; t < THREADS; ++t) {
    if (pthread_create(&threads[t], NULL, worker_main, &workers[t]) != 0) break;
    ++started;
  }
  for (int t = 0; t < started; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < THREADS; ++t) {
    if (workers[t].status != TSR_OK) {
      TSR_CONF_FAIL_CHECK(name, "thread %d: %s: %s", t, tsr_conf_status_name(workers[t].status), workers[t].message);
      goto done;
    }
    st = tsr_conf_prepared_read(p, t + 1, s->stream, got, &size);
    int64_t diff = st == TSR_OK ? outputs_differ(reference, got, size, c->operands[c->num_inputs].dtype, deterministic) : 0;
    if (diff >= 0) {
      TSR_CONF_FAIL_CHECK(name, "thread %d's result differs from the single-thread result at byte %lld (%s)", t,
                          (long long)diff, deterministic ? "the plan claims determinism: bit for bit" : "beyond 1e-5");
      goto done;
    }
  }
  TSR_CONF_PASS_CHECK(name, "%s: %d threads x %d executions on their own streams match one thread%s", c->name,
                      THREADS, REPEATS, deterministic ? " bit for bit" : "");
done:
  for (int t = 0; t < THREADS; ++t) {
    if (workers[t].stream != NULL) {
      s->api.stream_synchronize(workers[t].stream);
      s->api.stream_destroy(workers[t].stream);
    }
  }
  free(reference), free(got);
  tsr_conf_prepared_destroy(p);
}

typedef struct creator {
  tsr_conf_session *session;
  const tsr_conf_case *c;
  tsr_status status;
} creator;

static void *creator_main(void *arg) {
  creator *w = arg;
  tsr_tensor_desc d[TSR_MAX_OPERANDS];
  tsr_conf_attrs a;
  tsr_op_signature sig;
  if (tsr_conf_case_signature(w->session, w->c, d, &a, &sig) != 0) {
    w->status = TSR_INTERNAL;
    return NULL;
  }
  for (int r = 0; r < 50 && w->status == TSR_OK; ++r) {
    tsr_plugin_plan *plan = NULL;
    w->status = w->session->api.op_supports(&sig);
    if (w->status == TSR_OK) w->status = w->session->api.plan_create(&sig, &plan);
    if (w->status == TSR_OK) w->status = w->session->api.plan_destroy(plan);
  }
  return NULL;
}

static void check_concurrent_plan_create(tsr_conf_session *s, const tsr_conf_case *c) {
  const char *name = "threads: plans created concurrently";
  tsr_conf_record_begin("%s", name);
  creator workers[THREADS];
  pthread_t threads[THREADS];
  int started = 0;
  for (int t = 0; t < THREADS; ++t) {
    workers[t] = (creator){s, c, TSR_OK};
    if (pthread_create(&threads[t], NULL, creator_main, &workers[t]) != 0) break;
    ++started;
  }
  for (int t = 0; t < started; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < started; ++t) {
    if (workers[t].status != TSR_OK) {
      TSR_CONF_FAIL_CHECK(name, "thread %d: %s", t, tsr_conf_status_name(workers[t].status));
      return;
    }
  }
  TSR_CONF_PASS_CHECK(name, "%d threads x 50 op_supports, plan_create, plan_destroy of %s", started, c->name);
}

static void check_determinism(tsr_conf_session *s, tsr_conf_case *c) {
  const char *name = "plans: REQUIRE_DETERMINISM honoured";
  tsr_conf_record_begin("%s", name);
  tsr_tensor_desc d[TSR_MAX_OPERANDS];
  tsr_conf_attrs a;
  tsr_op_signature sig;
  if (tsr_conf_case_signature(s, c, d, &a, &sig) != 0) return;
  sig.flags = TSR_PLAN_REQUIRE_DETERMINISM;
  tsr_plugin_plan *plan = NULL;
  tsr_status st = s->api.plan_create(&sig, &plan);
  if (st == TSR_UNSUPPORTED) {
    TSR_CONF_PASS_CHECK(name, "%s: refused with UNSUPPORTED (allowed)", c->name);
    return;
  }
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s: plan_create with REQUIRE_DETERMINISM returned %s (OK or UNSUPPORTED expected)",
                        c->name, tsr_conf_status_name(st));
    return;
  }
  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  s->api.plan_info_get(plan, &info);
  s->api.plan_destroy(plan);
  if (!(info.flags & TSR_PLAN_INFO_DETERMINISTIC)) {
    TSR_CONF_FAIL_CHECK(name, "%s: plan_create accepted REQUIRE_DETERMINISM for a plan not marked deterministic",
                        c->name);
    return;
  }
  // Deterministic: two executions give the same bits.
  char why[400];
  tsr_conf_prepared *p = NULL;
  if (tsr_conf_prepared_create(s, c, 2, &p, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s: %s", c->name, why);
    return;
  }
  size_t size = 0;
  tsr_conf_prepared_read(p, 0, s->stream, NULL, &size);
  unsigned char *x = malloc(size), *y = malloc(size);
  st = tsr_conf_prepared_execute(p, 0, s->stream);
  if (st == TSR_OK) st = tsr_conf_prepared_execute(p, 1, s->stream);
  if (st == TSR_OK) st = s->api.stream_synchronize(s->stream);
  if (st == TSR_OK && x && y) {
    tsr_conf_prepared_read(p, 0, s->stream, x, &size);
    tsr_conf_prepared_read(p, 1, s->stream, y, &size);
  }
  if (st != TSR_OK || !x || !y || memcmp(x, y, size) != 0) {
    TSR_CONF_FAIL_CHECK(name, "%s: two executions of a deterministic plan differ (%s)", c->name, tsr_conf_status_name(st));
  } else {
    TSR_CONF_PASS_CHECK(name, "%s: deterministic plan, two executions bit-identical", c->name);
  }
  free(x), free(y);
  tsr_conf_prepared_destroy(p);
}

void tsr_conf_api_threads_run(tsr_conf_session *s) {
  tsr_conf_case c;
  if (tsr_conf_api_case_pick(s, &c) != 0) {
    TSR_CONF_SKIP_CHECK("threads: one plan executed from several threads", "the plugin declares no op");
    TSR_CONF_SKIP_CHECK("threads: plans created concurrently", "the plugin declares no op");
    TSR_CONF_SKIP_CHECK("plans: REQUIRE_DETERMINISM honoured", "the plugin declares no op");
    return;
  }
  check_one_plan_many_threads(s, &c);
  check_concurrent_plan_create(s, &c);
  check_determinism(s, &c);
}
