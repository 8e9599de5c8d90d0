// API tier: every entry point given bad arguments returns a status (the one
// docs/abi.md names, where it names one) with a message attached on the
// calling thread (5.1, 5.2), and never crashes. On an asynchronous device
// an error detectable at enqueue time must be returned at enqueue time
// (5.3).
#include <stdio.h>
#include <string.h>

#include "api.h"

typedef struct bad_calls {
  const char *entry;
  int calls;
  int failures;
  char detail[1200];
  size_t n;
} bad_calls;

static void bad_begin(bad_calls *b, const char *entry) {
  memset(b, 0, sizeof(*b));
  b->entry = entry;
  tsr_conf_record_begin("%s: bad arguments", entry);
}

// Records one call: |got| must be |want| (or |also| when not TSR_OK) and
// come with a message.
static void bad_expect(bad_calls *b, const char *what, tsr_status got, tsr_status want, tsr_status also) {
  b->calls += 1;
  const char *message = tsr_conf_host_message();
  const char *problem = NULL;
  char text[200];
  if (got == TSR_OK) {
    problem = "returned OK";
  } else if (got != want && !(also != TSR_OK && got == also)) {
    snprintf(text, sizeof(text), "returned %s, docs/abi.md asks for %s", tsr_conf_status_name(got),
             tsr_conf_status_name(want));
    problem = text;
  } else if (message[0] == '\0') {
    snprintf(text, sizeof(text), "returned %s without a message", tsr_conf_status_name(got));
    problem = text;
  }
  if (problem != NULL) {
    b->failures += 1;
    if (b->n < sizeof(b->detail)) {
      b->n += (size_t)snprintf(b->detail + b->n, sizeof(b->detail) - b->n, "%s%s: %s", b->failures > 1 ? "; " : "",
                               what, problem);
    }
  }
  tsr_conf_host_message_clear();
}

static void bad_end(bad_calls *b) {
  char name[96];
  snprintf(name, sizeof(name), "%s: bad arguments", b->entry);
  if (b->calls == 0) {
    TSR_CONF_SKIP_CHECK(name, "entry absent (optional)");
  } else if (b->failures > 0) {
    TSR_CONF_FAIL_CHECK(name, "%d of %d calls: %s", b->failures, b->calls, b->detail);
  } else {
    TSR_CONF_PASS_CHECK(name, "%d bad calls refused with a message", b->calls);
  }
}

#define CALL(what, expr, want, also)    \
  do {                                  \
    tsr_conf_host_message_clear();      \
    tsr_status st_ = (expr);            \
    bad_expect(&b, what, st_, want, also); \
  } while (0)

static void memory_entries(tsr_conf_session *s, tsr_plugin_buffer *buf) {
  bad_calls b;
  int32_t bad_device = s->device_count;
  tsr_plugin_buffer *out = NULL;
  tsr_device_props props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);

  bad_begin(&b, "device_count_get");
  CALL("out_count NULL", s->api.device_count_get(NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);

  bad_begin(&b, "device_props_get");
  CALL("device -1", s->api.device_props_get(-1, &props), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("device == count", s->api.device_props_get(bad_device, &props), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("out_props NULL", s->api.device_props_get(s->device, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);

  bad_begin(&b, "buffer_alloc");
  CALL("device -1", s->api.buffer_alloc(-1, 64, s->stream, &out), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("device == count", s->api.buffer_alloc(bad_device, 64, s->stream, &out), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("out_buffer NULL", s->api.buffer_alloc(s->device, 64, s->stream, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);

  bad_begin(&b, "buffer_free");
  CALL("buffer NULL", s->api.buffer_free(NULL, s->stream), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);

  bad_begin(&b, "buffer_host_ptr_get");
  if (s->api.buffer_host_ptr_get != NULL) {
    void *ptr = NULL;
    CALL("buffer NULL", s->api.buffer_host_ptr_get(NULL, &ptr), TSR_INVALID_ARGUMENT, TSR_OK);
    CALL("out_ptr NULL", s->api.buffer_host_ptr_get(buf, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);

  bad_begin(&b, "host_pinned_alloc");
  if (s->api.host_pinned_alloc != NULL) {
    void *ptr = NULL;
    CALL("device -1", s->api.host_pinned_alloc(-1, 64, &ptr), TSR_INVALID_ARGUMENT, TSR_OK);
    CALL("out_ptr NULL", s->api.host_pinned_alloc(s->device, 64, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);

  bad_begin(&b, "allocator_stats_get");
  if (s->api.allocator_stats_get != NULL) {
    tsr_allocator_stats stats;
    memset(&stats, 0, sizeof(stats));
    stats.struct_size = sizeof(stats);
    CALL("device -1", s->api.allocator_stats_get(-1, &stats), TSR_INVALID_ARGUMENT, TSR_OK);
    CALL("out_stats NULL", s->api.allocator_stats_get(s->device, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);

  bad_begin(&b, "allocator_trim");
  if (s->api.allocator_trim != NULL) {
    CALL("device -1", s->api.allocator_trim(-1), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);

  unsigned char host[256] = {0};
  bad_begin(&b, "copy_host_to_device");
  CALL("src NULL", s->api.copy_host_to_device(s->stream, NULL, buf, 0, 16), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("dst NULL", s->api.copy_host_to_device(s->stream, host, NULL, 0, 16), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("range past the end", s->api.copy_host_to_device(s->stream, host, buf, 1000, 64), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("offset + bytes overflows", s->api.copy_host_to_device(s->stream, host, buf, UINT64_MAX - 4, 16),
       TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);

  bad_begin(&b, "copy_device_to_host");
  CALL("dst NULL", s->api.copy_device_to_host(s->stream, buf, 0, NULL, 16), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("src NULL", s->api.copy_device_to_host(s->stream, NULL, 0, host, 16), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("range past the end", s->api.copy_device_to_host(s->stream, buf, 1000, host, 64), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("offset + bytes overflows", s->api.copy_device_to_host(s->stream, buf, UINT64_MAX - 4, host, 16),
       TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);

  bad_begin(&b, "copy_device_to_device");
  CALL("src NULL", s->api.copy_device_to_device(s->stream, NULL, 0, buf, 0, 16), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("dst NULL", s->api.copy_device_to_device(s->stream, buf, 0, NULL, 0, 16), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("source range past the end", s->api.copy_device_to_device(s->stream, buf, 1000, buf, 0, 64),
       TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("destination range past the end", s->api.copy_device_to_device(s->stream, buf, 0, buf, 1000, 64),
       TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("overlapping ranges of one buffer", s->api.copy_device_to_device(s->stream, buf, 0, buf, 50, 100),
       TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);
  s->api.stream_synchronize(s->stream);
}

static void stream_entries(tsr_conf_session *s) {
  bad_calls b;
  tsr_plugin_stream *stream = NULL;
  bad_begin(&b, "stream_create");
  CALL("device -1", s->api.stream_create(-1, 0, &stream), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("unknown flags 0x80", s->api.stream_create(s->device, 0x80, &stream), TSR_INVALID_ARGUMENT, TSR_OK);
  CALL("out_stream NULL", s->api.stream_create(s->device, 0, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);
  bad_begin(&b, "stream_destroy");
  CALL("stream NULL", s->api.stream_destroy(NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);
  // A NULL stream is not checked for stream_synchronize, stream_query,
  // event_record and stream_wait_event: docs/abi.md gives NULL a meaning
  // ("the whole device") only for buffer_alloc and buffer_free and says
  // nothing either way here (synchronous plugins accept it).

  int events = (s->props.flags & TSR_DEVICE_EVENTS) && s->api.event_create && s->api.event_destroy &&
               s->api.event_record && s->api.event_query && s->api.event_synchronize && s->api.stream_wait_event;
  tsr_plugin_event *e = NULL, *timing = NULL, *never = NULL;
  if (events) {
    s->api.event_create(s->device, 0, &e);
    s->api.event_create(s->device, TSR_EVENT_TIMING, &never);
    s->api.event_create(s->device, TSR_EVENT_TIMING, &timing);
  }
  tsr_plugin_event *out = NULL;
  bad_begin(&b, "event_create");
  if (events) {
    CALL("device -1", s->api.event_create(-1, 0, &out), TSR_INVALID_ARGUMENT, TSR_OK);
    CALL("unknown flags 0x80", s->api.event_create(s->device, 0x80, &out), TSR_INVALID_ARGUMENT, TSR_OK);
    CALL("out_event NULL", s->api.event_create(s->device, 0, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);
  bad_begin(&b, "event_record");
  if (events && e) {
    CALL("event NULL", s->api.event_record(NULL, s->stream), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);
  bad_begin(&b, "stream_wait_event");
  if (events && e) {
    CALL("event NULL", s->api.stream_wait_event(s->stream, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);
  bad_begin(&b, "event_query");
  if (events) CALL("event NULL", s->api.event_query(NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);
  bad_begin(&b, "event_synchronize");
  if (events) CALL("event NULL", s->api.event_synchronize(NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);
  bad_begin(&b, "event_destroy");
  if (events) CALL("event NULL", s->api.event_destroy(NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);
  bad_begin(&b, "event_elapsed_get");
  if (events && s->api.event_elapsed_get && (s->props.flags & TSR_DEVICE_TIMING_EVENTS) && e && timing && never) {
    float ms = 0;
    s->api.event_record(e, s->stream);
    s->api.event_record(timing, s->stream);
    s->api.stream_synchronize(s->stream);
    CALL("events without TSR_EVENT_TIMING", s->api.event_elapsed_get(e, e, &ms), TSR_INVALID_ARGUMENT, TSR_OK);
    CALL("an event never recorded", s->api.event_elapsed_get(never, timing, &ms), TSR_INVALID_ARGUMENT, TSR_OK);
    CALL("out_milliseconds NULL", s->api.event_elapsed_get(timing, timing, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  }
  bad_end(&b);
  s->api.stream_synchronize(s->stream);
  if (e) s->api.event_destroy(e);
  if (timing) s->api.event_destroy(timing);
  if (never) s->api.event_destroy(never);
}

// An op with required attributes the plugin declares, for the kernel entries.
static int attrs_required_case(tsr_conf_session *s, tsr_conf_case *c) {
  static const int32_t ops[] = {TSR_OP_BINARY, TSR_OP_UNARY, TSR_OP_REDUCE, TSR_OP_COMPARE};
  for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); ++k) {
    for (tsr_dtype_t dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      if (!(s->props.dtype_mask & TSR_DTYPE_BIT(dt)) || !tsr_conf_op_accepts(ops[k], dt)) continue;
      tsr_conf_case_representative(ops[k], dt, c);
      tsr_tensor_desc d[TSR_MAX_OPERANDS];
      tsr_conf_attrs a;
      tsr_op_signature sig;
      if (tsr_conf_case_signature(s, c, d, &a, &sig) == 0 && s->api.op_supports(&sig) == TSR_OK) return 0;
    }
  }
  return -1;
}

static void kernel_entries(tsr_conf_session *s) {
  bad_calls b;
  if (!s->has_kernels) {
    const char *entries[] = {"op_supports", "plan_create", "plan_info_get", "plan_execute", "plan_destroy"};
    for (int i = 0; i < 5; ++i) {
      char name[64];
      snprintf(name, sizeof(name), "%s: bad arguments", entries[i]);
      TSR_CONF_SKIP_CHECK(name, "the plugin has no kernels");
    }
    return;
  }
  tsr_conf_case c;
  int have = attrs_required_case(s, &c) == 0;
  tsr_tensor_desc d[TSR_MAX_OPERANDS], d2[TSR_MAX_OPERANDS];
  tsr_conf_attrs attrs;
  tsr_op_signature sig, bad;
  if (have && tsr_conf_case_signature(s, &c, d, &attrs, &sig) != 0) have = 0;
  tsr_plugin_plan *plan = NULL;

  bad_begin(&b, "op_supports");
  CALL("signature NULL", s->api.op_supports(NULL), TSR_UNSUPPORTED, TSR_INVALID_ARGUMENT);
  if (have) {
    bad = sig;
    bad.op = 0;
    CALL("op 0 (TSR_OP_INVALID)", s->api.op_supports(&bad), TSR_INVALID_ARGUMENT, TSR_UNSUPPORTED);
    // Unknown values may come from a newer catalogue: UNSUPPORTED, so the
    // core falls back (docs/abi.md 2.4).
    bad.op = 999;
    CALL("op 999 (unknown)", s->api.op_supports(&bad), TSR_UNSUPPORTED, TSR_OK);
    bad = sig;
    memcpy(d2, d, sizeof(d));
    d2[0].dtype = 99;
    bad.inputs = d2;
    bad.outputs = d2 + c.num_inputs;
    CALL("dtype 99 (unknown)", s->api.op_supports(&bad), TSR_UNSUPPORTED, TSR_OK);
    tsr_conf_attrs big = attrs;
    big.unary.fn = 999;  // every selector sits right after struct_size
    bad = sig;
    bad.attrs = &big;
    CALL("function selector 999 (unknown)", s->api.op_supports(&bad), TSR_UNSUPPORTED, TSR_OK);
  }
  bad_end(&b);

  bad_begin(&b, "plan_create");
  CALL("signature NULL", s->api.plan_create(NULL, &plan), TSR_INVALID_ARGUMENT, TSR_OK);
  if (have) {
    CALL("out_plan NULL", s->api.plan_create(&sig, NULL), TSR_INVALID_ARGUMENT, TSR_OK);
    bad = sig;
    bad.struct_size = sizeof(size_t);
    CALL("signature struct_size 8", s->api.plan_create(&bad, &plan), TSR_INVALID_ARGUMENT, TSR_OK);
    bad = sig;
    bad.num_inputs = -1;
    CALL("num_inputs -1", s->api.plan_create(&bad, &plan), TSR_INVALID_ARGUMENT, TSR_OK);
    bad = sig;
    bad.num_inputs = TSR_MAX_OPERANDS;
    CALL("17 operands", s->api.plan_create(&bad, &plan), TSR_INVALID_ARGUMENT, TSR_OK);
    bad = sig;
    bad.op = 999;
    CALL("op 999", s->api.plan_create(&bad, &plan), TSR_UNSUPPORTED, TSR_INVALID_ARGUMENT);
    bad = sig;
    bad.attrs = NULL;
    CALL("attrs NULL for an op whose attrs are required", s->api.plan_create(&bad, &plan), TSR_INVALID_ARGUMENT, TSR_OK);
    struct {
      const char *what;
      int field;
    } mutations[] = {{"rank 9", 0}, {"a negative size", 1}, {"a negative stride", 2}, {"alignment 3", 3},
                     {"output sizes that do not match", 4}, {"dtype 99", 5}};
    for (size_t k = 0; k < sizeof(mutations) / sizeof(mutations[0]); ++k) {
      memcpy(d2, d, sizeof(d));
      bad = sig;
      bad.inputs = d2;
      bad.outputs = d2 + c.num_inputs;
      tsr_tensor_desc *x = &d2[0], *o = &d2[c.num_inputs];
      switch (mutations[k].field) {
        case 0: x->rank = TSR_MAX_RANK + 1; break;
        case 1: x->sizes[0] = -3; break;
        case 2: x->strides[0] = -1; break;
        case 3: x->alignment = 3; break;
        case 4: o->sizes[o->rank - 1] += 1; break;
        default: x->dtype = 99; break;
      }
      CALL(mutations[k].what, s->api.plan_create(&bad, &plan), TSR_INVALID_ARGUMENT,
           mutations[k].field == 5 ? TSR_UNSUPPORTED : TSR_OK);
    }
  }
  bad_end(&b);

  tsr_conf_prepared *p = NULL;
  char why[400];
  if (have && tsr_conf_prepared_create(s, &c, 1, &p, why, sizeof(why)) != TSR_OK) p = NULL;

  bad_begin(&b, "plan_info_get");
  tsr_plan_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  CALL("plan NULL", s->api.plan_info_get(NULL, &info), TSR_INVALID_ARGUMENT, TSR_OK);
  if (p) CALL("out_info NULL", s->api.plan_info_get(tsr_conf_prepared_plan(p), NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);

  bad_begin(&b, "plan_execute");
  tsr_exec_args args;
  memset(&args, 0, sizeof(args));
  args.struct_size = sizeof(args);
  CALL("plan NULL", s->api.plan_execute(NULL, &args, s->stream), TSR_INVALID_ARGUMENT, TSR_OK);
  if (p) {
    const tsr_plugin_plan *pl = tsr_conf_prepared_plan(p);
    CALL("args NULL", s->api.plan_execute(pl, NULL, s->stream), TSR_INVALID_ARGUMENT, TSR_OK);
    // Mismatches against the plan, detectable at enqueue time.
    tsr_plugin_buffer *buf = NULL;
    tsr_status st = s->api.buffer_alloc(s->device, 4096, s->stream, &buf);
    if (st == TSR_OK) {
      struct {
        const char *what;
        int field;
      } mutations[] = {{"num_inputs differs from the plan", 0},
                       {"an operand's sizes differ from the plan", 1},
                       {"an operand less aligned than the plan", 2},
                       {"an operand's buffer is NULL", 3},
                       {"an operand's dtype differs from the plan", 4}};
      for (size_t k = 0; k < sizeof(mutations) / sizeof(mutations[0]); ++k) {
        memcpy(d2, d, sizeof(d));
        for (int32_t i = 0; i < c.num_inputs + c.num_outputs; ++i) {
          d2[i].buffer = buf;
          d2[i].byte_offset = 0;
          d2[i].storage_version = 1;
        }
        memset(&args, 0, sizeof(args));
        args.struct_size = sizeof(args);
        args.num_inputs = c.num_inputs;
        args.num_outputs = c.num_outputs;
        args.inputs = d2;
        args.outputs = d2 + c.num_inputs;
        switch (mutations[k].field) {
          case 0: args.num_inputs -= 1; args.outputs = d2 + c.num_inputs - 1; break;
          case 1: d2[0].sizes[d2[0].rank > 0 ? d2[0].rank - 1 : 0] += 1; break;
          case 2: d2[0].alignment = 1; d2[0].byte_offset = 1; break;
          case 3: d2[0].buffer = NULL; break;
          default: d2[0].dtype = d2[0].dtype == TSR_INT32 ? TSR_FLOAT32 : TSR_INT32; break;
        }
        if (mutations[k].field == 1 && d2[0].rank == 0) continue;
        CALL(mutations[k].what, s->api.plan_execute(pl, &args, s->stream), TSR_INVALID_ARGUMENT, TSR_OK);
        // Anything a non-conforming plugin queued must not poison what follows.
        tsr_conf_host_message_clear();
        s->api.stream_synchronize(s->stream);
      }
      s->api.buffer_free(buf, s->stream);
      s->api.stream_synchronize(s->stream);
    }
  }
  bad_end(&b);

  bad_begin(&b, "plan_destroy");
  CALL("plan NULL", s->api.plan_destroy(NULL), TSR_INVALID_ARGUMENT, TSR_OK);
  bad_end(&b);
  tsr_conf_prepared_destroy(p);
}

void tsr_conf_api_errors_run(tsr_conf_session *s) {
  tsr_plugin_buffer *buf = NULL;
  char why[400];
  if (tsr_conf_api_buffer_create(s, 1024, 9, &buf, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK("buffer_alloc: bad arguments (setup)", "%s", why);
    return;
  }
  s->api.stream_synchronize(s->stream);
  memory_entries(s, buf);
  stream_entries(s);
  kernel_entries(s);
  s->api.buffer_free(buf, s->stream);
  s->api.stream_synchronize(s->stream);
}
