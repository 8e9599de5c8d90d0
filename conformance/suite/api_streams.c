// API tier: streams and events (docs/abi.md 7.5, 7.6) and the stream-ordered
// free (7.3).
//
// On an asynchronous device these checks queue a lot of work first (large
// device-to-device copies), so that the ordering under test is actually
// pending when the dependent work is queued; on a synchronous device the
// same checks hold trivially and say so.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define BIG (8u << 20)

typedef struct busy {
  tsr_plugin_buffer *src, *dst;
} busy;

static tsr_status busy_create(tsr_conf_session *s, busy *b, char *why, size_t size) {
  memset(b, 0, sizeof(*b));
  tsr_status st = tsr_conf_api_buffer_create(s, BIG, 0, &b->src, why, size);
  if (st == TSR_OK) st = tsr_conf_api_buffer_create(s, BIG, 0, &b->dst, why, size);
  return st;
}

// Queues |count| copies of BIG bytes on |stream|: work that takes a while.
static tsr_status busy_queue(tsr_conf_session *s, const busy *b, tsr_plugin_stream *stream, int count) {
  for (int i = 0; i < count; ++i) {
    tsr_status st = s->api.copy_device_to_device(stream, b->src, 0, b->dst, 0, BIG);
    if (st != TSR_OK) return st;
  }
  return TSR_OK;
}

static void busy_destroy(tsr_conf_session *s, busy *b) {
  s->api.stream_synchronize(s->stream);
  if (b->src) s->api.buffer_free(b->src, s->stream);
  if (b->dst) s->api.buffer_free(b->dst, s->stream);
  s->api.stream_synchronize(s->stream);
}

static int is_async(const tsr_conf_session *s) { return (s->props.flags & TSR_DEVICE_ASYNC) != 0; }

static void check_one_stream_order(tsr_conf_session *s) {
  const char *name = "streams: ordering on one stream";
  tsr_conf_record_begin("%s", name);
  char why[512];
  tsr_plugin_buffer *a = NULL, *b = NULL, *c = NULL;
  unsigned char *p1 = malloc(BIG), *p2 = malloc(BIG), *got = malloc(BIG);
  busy work = {0};
  if (!p1 || !p2 || !got) goto done;
  tsr_conf_api_pattern(p1, BIG, 31);
  tsr_conf_api_pattern(p2, BIG, 32);
  if (busy_create(s, &work, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 0, &a, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 0, &b, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 33, &c, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s", why);
    goto done;
  }
  // a = p1 (after busy work); b = a; c = b; a = p2; then read c and a.
  tsr_status st = busy_queue(s, &work, s->stream, 4);
  if (st == TSR_OK) st = s->api.copy_host_to_device(s->stream, p1, a, 0, BIG);
  if (st == TSR_OK) st = s->api.copy_device_to_device(s->stream, a, 0, b, 0, BIG);
  if (st == TSR_OK) st = s->api.copy_device_to_device(s->stream, b, 0, c, 0, BIG);
  if (st == TSR_OK) st = s->api.copy_host_to_device(s->stream, p2, a, 0, BIG);
  if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, c, 0, got, BIG);
  int64_t diff_c = tsr_conf_api_first_difference(p1, got, BIG);
  if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, a, 0, got, BIG);
  int64_t diff_a = tsr_conf_api_first_difference(p2, got, BIG);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "a copy returned %s: %s", tsr_conf_status_name(st), tsr_conf_host_message());
  } else if (diff_c >= 0 || diff_a >= 0) {
    TSR_CONF_FAIL_CHECK(name, "work ran out of order: chained copies differ at byte %lld, the overwritten source at %lld",
                        (long long)diff_c, (long long)diff_a);
  } else {
    TSR_CONF_PASS_CHECK(name, "a chain of copies queued without waiting ran in order");
  }
done:
  if (a) s->api.buffer_free(a, s->stream);
  if (b) s->api.buffer_free(b, s->stream);
  if (c) s->api.buffer_free(c, s->stream);
  busy_destroy(s, &work);
  free(p1), free(p2), free(got);
}

static void check_query_synchronize(tsr_conf_session *s) {
  const char *name = "streams: query and synchronize";
  tsr_conf_record_begin("%s", name);
  char why[512];
  busy work;
  if (busy_create(s, &work, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s", why);
    busy_destroy(s, &work);
    return;
  }
  tsr_status queued = busy_queue(s, &work, s->stream, 8);
  tsr_status q1 = s->api.stream_query ? s->api.stream_query(s->stream) : TSR_OK;
  tsr_status sy = s->api.stream_synchronize(s->stream);
  tsr_status q2 = s->api.stream_query ? s->api.stream_query(s->stream) : TSR_OK;
  busy_destroy(s, &work);
  if (queued != TSR_OK || sy != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "queueing %s, synchronize %s", tsr_conf_status_name(queued), tsr_conf_status_name(sy));
  } else if (q1 != TSR_OK && q1 != TSR_NOT_READY) {
    TSR_CONF_FAIL_CHECK(name, "stream_query with work pending returned %s", tsr_conf_status_name(q1));
  } else if (q2 != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "stream_query after synchronize returned %s", tsr_conf_status_name(q2));
  } else if (!s->api.stream_query) {
    TSR_CONF_PASS_CHECK(name, "synchronize OK (stream_query is absent: optional)");
  } else {
    TSR_CONF_PASS_CHECK(name, "query %s while busy, OK after synchronize", tsr_conf_status_name(q1));
  }
}

static int has_events(const tsr_conf_session *s) {
  return (s->props.flags & TSR_DEVICE_EVENTS) && s->api.event_create && s->api.event_record &&
         s->api.stream_wait_event && s->api.event_query && s->api.event_synchronize && s->api.event_destroy;
}

static void check_events_basic(tsr_conf_session *s) {
  const char *name = "events: record, query, synchronize";
  tsr_conf_record_begin("%s", name);
  if (!has_events(s)) {
    TSR_CONF_SKIP_CHECK(name, "the device has no events (TSR_DEVICE_EVENTS not set)");
    return;
  }
  tsr_plugin_event *e = NULL;
  tsr_status st = s->api.event_create(s->device, 0, &e);
  if (st != TSR_OK || e == NULL) {
    TSR_CONF_FAIL_CHECK(name, "event_create returned %s: %s", tsr_conf_status_name(st), tsr_conf_host_message());
    return;
  }
  tsr_status never_q = s->api.event_query(e);
  tsr_status never_s = s->api.event_synchronize(e);
  char why[512];
  busy work;
  tsr_status bq = busy_create(s, &work, why, sizeof(why));
  if (bq == TSR_OK) bq = busy_queue(s, &work, s->stream, 8);
  tsr_status rec = s->api.event_record(e, s->stream);
  tsr_status q1 = s->api.event_query(e);
  tsr_status sy = s->api.event_synchronize(e);
  tsr_status q2 = s->api.event_query(e);
  busy_destroy(s, &work);
  tsr_status de = s->api.event_destroy(e);
  if (never_q != TSR_OK || never_s != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "an event never recorded must be complete: query %s, synchronize %s",
                        tsr_conf_status_name(never_q), tsr_conf_status_name(never_s));
  } else if (bq != TSR_OK || rec != TSR_OK || sy != TSR_OK || de != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "work %s, record %s, synchronize %s, destroy %s", tsr_conf_status_name(bq),
                        tsr_conf_status_name(rec), tsr_conf_status_name(sy), tsr_conf_status_name(de));
  } else if ((q1 != TSR_OK && q1 != TSR_NOT_READY) || q2 != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "event_query: %s while pending, %s after synchronize", tsr_conf_status_name(q1),
                        tsr_conf_status_name(q2));
  } else {
    TSR_CONF_PASS_CHECK(name, "never-recorded events are complete; query %s while pending", tsr_conf_status_name(q1));
  }
}

static void check_cross_stream_wait(tsr_conf_session *s) {
  const char *name = "stream_wait_event: cross-stream wait";
  tsr_conf_record_begin("%s", name);
  if (!has_events(s)) {
    TSR_CONF_SKIP_CHECK(name, "the device has no events (TSR_DEVICE_EVENTS not set)");
    return;
  }
  char why[512];
  tsr_plugin_stream *producer = NULL, *consumer = NULL;
  tsr_plugin_event *e = NULL;
  tsr_plugin_buffer *src = NULL, *x = NULL, *y = NULL;
  unsigned char *expect = malloc(BIG), *got = malloc(BIG);
  busy work = {0};
  if (!expect || !got) goto done;
  tsr_status st = s->api.stream_create(s->device, 0, &producer);
  if (st == TSR_OK) st = s->api.stream_create(s->device, 0, &consumer);
  if (st == TSR_OK) st = s->api.event_create(s->device, 0, &e);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "creating streams and an event: %s: %s", tsr_conf_status_name(st), tsr_conf_host_message());
    goto done;
  }
  if (busy_create(s, &work, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 41, &src, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 42, &x, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 43, &y, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s", why);
    goto done;
  }
  s->api.stream_synchronize(s->stream);
  tsr_conf_api_pattern(expect, BIG, 41);
  // Three rounds with ever longer producer work: one lucky schedule must not
  // hide a missing wait.
  int rounds = 0, pending_seen = 0;
  for (int busy_count = 8; busy_count <= 32; busy_count *= 2) {
    ++rounds;
    // Producer: long work, then x = src, then the event. Consumer: wait for
    // the event, then y = x. Without the wait, y gets x's old bytes.
    st = busy_queue(s, &work, producer, busy_count);
    if (st == TSR_OK) st = s->api.copy_device_to_device(producer, src, 0, x, 0, BIG);
    if (st == TSR_OK) st = s->api.event_record(e, producer);
    if (st == TSR_OK) st = s->api.stream_wait_event(consumer, e);
    if (st == TSR_OK) st = s->api.copy_device_to_device(consumer, x, 0, y, 0, BIG);
    pending_seen |= s->api.event_query(e) == TSR_NOT_READY;
    tsr_status sc = s->api.stream_synchronize(consumer);
    tsr_status sp = s->api.stream_synchronize(producer);
    if (st != TSR_OK || sc != TSR_OK || sp != TSR_OK) {
      TSR_CONF_FAIL_CHECK(name, "queueing %s, synchronize %s/%s: %s", tsr_conf_status_name(st),
                          tsr_conf_status_name(sc), tsr_conf_status_name(sp), tsr_conf_host_message());
      goto done;
    }
    st = s->api.copy_device_to_host(s->stream, y, 0, got, BIG);
    int64_t stale = 0;
    for (size_t k = 0; k < BIG; ++k) stale += got[k] != expect[k];
    if (st != TSR_OK || stale > 0) {
      tsr_conf_record_check(name, TSR_CONF_FAIL, INFINITY,
                            "work queued after stream_wait_event ran before the event completed: %lld of %u bytes "
                            "read by the waiting stream were stale (round %d, %d busy copies before the record)",
                            (long long)stale, BIG, rounds, busy_count);
      goto done;
    }
    // Restore x's old bytes for another round.
    unsigned char *old = malloc(BIG);
    if (old == NULL) break;
    tsr_conf_api_pattern(old, BIG, 42);
    s->api.copy_host_to_device(s->stream, old, x, 0, BIG);
    s->api.stream_synchronize(s->stream);
    free(old);
    if (!is_async(s)) break;
  }
  if (!is_async(s)) {
    TSR_CONF_PASS_CHECK(name, "synchronous device: the ordering holds trivially");
  } else if (!pending_seen) {
    TSR_CONF_PASS_CHECK(name, "correct, but the producer always finished before the check looked (inconclusive)");
  } else {
    TSR_CONF_PASS_CHECK(name, "the waiting stream saw the producer's data while the event was still pending");
  }
done:
  if (producer) s->api.stream_synchronize(producer);
  if (consumer) s->api.stream_synchronize(consumer);
  if (src) s->api.buffer_free(src, s->stream);
  if (x) s->api.buffer_free(x, s->stream);
  if (y) s->api.buffer_free(y, s->stream);
  busy_destroy(s, &work);
  if (e) s->api.event_destroy(e);
  if (producer) s->api.stream_destroy(producer);
  if (consumer) s->api.stream_destroy(consumer);
  free(expect), free(got);
}

static void check_elapsed(tsr_conf_session *s) {
  const char *name = "events: elapsed time";
  tsr_conf_record_begin("%s", name);
  if (!has_events(s) || !(s->props.flags & TSR_DEVICE_TIMING_EVENTS) || !s->api.event_elapsed_get) {
    TSR_CONF_SKIP_CHECK(name, "the device has no timing events (TSR_DEVICE_TIMING_EVENTS not set)");
    return;
  }
  tsr_plugin_event *a = NULL, *b = NULL;
  tsr_status st = s->api.event_create(s->device, TSR_EVENT_TIMING, &a);
  if (st == TSR_OK) st = s->api.event_create(s->device, TSR_EVENT_TIMING, &b);
  char why[512];
  busy work = {0};
  if (st == TSR_OK) st = busy_create(s, &work, why, sizeof(why));
  if (st == TSR_OK) st = s->api.event_record(a, s->stream);
  if (st == TSR_OK) st = busy_queue(s, &work, s->stream, 8);
  if (st == TSR_OK) st = s->api.event_record(b, s->stream);
  float early = -1;
  tsr_status pending = st == TSR_OK ? s->api.event_elapsed_get(a, b, &early) : TSR_OK;
  if (st == TSR_OK) st = s->api.event_synchronize(b);
  float ms = -1;
  tsr_status el = st == TSR_OK ? s->api.event_elapsed_get(a, b, &ms) : st;
  busy_destroy(s, &work);
  if (a) s->api.event_destroy(a);
  if (b) s->api.event_destroy(b);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "setting up: %s: %s", tsr_conf_status_name(st), tsr_conf_host_message());
  } else if (pending != TSR_OK && pending != TSR_NOT_READY) {
    TSR_CONF_FAIL_CHECK(name, "event_elapsed_get before completion returned %s (OK or NOT_READY expected)",
                        tsr_conf_status_name(pending));
  } else if (el != TSR_OK || !(ms >= 0) || ms > 1e6f) {
    TSR_CONF_FAIL_CHECK(name, "event_elapsed_get returned %s, %g ms", tsr_conf_status_name(el), (double)ms);
  } else {
    TSR_CONF_PASS_CHECK(name, "%.3f ms around 8 copies of 8 MiB", (double)ms);
  }
}

static void check_ordered_free(tsr_conf_session *s) {
  const char *name = "buffer_free: stream-ordered free";
  tsr_conf_record_begin("%s", name);
  char why[512];
  tsr_plugin_stream *other = NULL;
  tsr_plugin_buffer *x = NULL, *y = NULL, *z = NULL;
  unsigned char *expect = malloc(BIG), *pz = malloc(BIG), *got = malloc(BIG);
  busy work = {0};
  if (!expect || !pz || !got) goto done;
  tsr_status st = s->api.stream_create(s->device, 0, &other);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "stream_create: %s", tsr_conf_status_name(st));
    goto done;
  }
  if (busy_create(s, &work, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 51, &x, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 52, &y, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s", why);
    goto done;
  }
  s->api.stream_synchronize(s->stream);
  tsr_conf_api_pattern(expect, BIG, 51);
  tsr_conf_api_pattern(pz, BIG, 53);
  // x is still to be read by queued work when it is freed on that stream; a
  // new buffer for "any stream, now" must not be x's memory until then.
  st = busy_queue(s, &work, s->stream, 16);
  if (st == TSR_OK) st = s->api.copy_device_to_device(s->stream, x, 0, y, 0, BIG);
  if (st == TSR_OK) st = s->api.buffer_free(x, s->stream);
  x = NULL;
  if (st == TSR_OK) st = s->api.buffer_alloc(s->device, BIG, NULL, &z);
  if (st == TSR_OK) st = s->api.copy_host_to_device(other, pz, z, 0, BIG);
  if (st == TSR_OK) st = s->api.stream_synchronize(other);
  if (st == TSR_OK) st = s->api.stream_synchronize(s->stream);
  if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, y, 0, got, BIG);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s: %s", tsr_conf_status_name(st), tsr_conf_host_message());
    goto done;
  }
  int64_t diff = tsr_conf_api_first_difference(expect, got, BIG);
  if (diff >= 0) {
    TSR_CONF_FAIL_CHECK(name, "memory freed on a stream was reused before the work queued before the free had run "
                              "(first wrong byte %lld)", (long long)diff);
  } else {
    TSR_CONF_PASS_CHECK(name, "memory freed on a busy stream was not handed out early");
  }
done:
  s->api.stream_synchronize(s->stream);
  if (other) s->api.stream_synchronize(other);
  if (x) s->api.buffer_free(x, s->stream);
  if (y) s->api.buffer_free(y, s->stream);
  if (z) s->api.buffer_free(z, s->stream);
  busy_destroy(s, &work);
  if (other) s->api.stream_destroy(other);
  free(expect), free(pz), free(got);
}

static void check_null_stream_free(tsr_conf_session *s) {
  const char *name = "buffer_free: with a NULL stream";
  tsr_conf_record_begin("%s", name);
  char why[512];
  tsr_plugin_buffer *x = NULL, *y = NULL;
  unsigned char *expect = malloc(BIG), *got = malloc(BIG);
  if (!expect || !got ||
      tsr_conf_api_buffer_create(s, BIG, 61, &x, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, BIG, 0, &y, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "setting up: %s", why);
    goto done;
  }
  tsr_conf_api_pattern(expect, BIG, 61);
  tsr_status st = s->api.copy_device_to_device(s->stream, x, 0, y, 0, BIG);
  if (st == TSR_OK) st = s->api.buffer_free(x, NULL);
  x = NULL;
  if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, y, 0, got, BIG);
  if (st != TSR_OK || tsr_conf_api_first_difference(expect, got, BIG) >= 0) {
    TSR_CONF_FAIL_CHECK(name, "%s; data %s", tsr_conf_status_name(st),
                        tsr_conf_api_first_difference(expect, got, BIG) >= 0 ? "wrong" : "right");
  } else {
    TSR_CONF_PASS_CHECK(name, "freed after all work on the device");
  }
done:
  if (x) s->api.buffer_free(x, s->stream);
  if (y) s->api.buffer_free(y, s->stream);
  s->api.stream_synchronize(s->stream);
  free(expect), free(got);
}

void tsr_conf_api_streams_run(tsr_conf_session *s) {
  check_one_stream_order(s);
  check_query_synchronize(s);
  check_events_basic(s);
  check_cross_stream_wait(s);
  check_elapsed(s);
  check_ordered_free(s);
  check_null_stream_free(s);
}
