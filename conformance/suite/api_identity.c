// API tier: identity, probe, devices (docs/abi.md 7.1, 7.2), the struct_size
// rules both ways (2.2), and the lifecycle (3.3).
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int version_valid(const char *v) {
  unsigned a, b, c;
  char tail;
  return v != NULL && sscanf(v, "%u.%u.%u%c", &a, &b, &c, &tail) == 3;
}

void tsr_conf_api_identity_run(tsr_conf_session *s) {
  const tsr_plugin_api *t = s->table;
  const char *name = "identity: table";
  tsr_conf_record_begin("%s", name);
  char problems[800] = "";
  size_t n = 0;
#define PROBLEM(...) n += (size_t)snprintf(problems + n, n < sizeof(problems) ? sizeof(problems) - n : 0, __VA_ARGS__)
  const char *pname = s->api.name;
  if (pname == NULL || pname[0] == '\0') {
    PROBLEM("name is empty; ");
  } else {
    for (const char *p = pname; *p; ++p) {
      if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '_')) {
        PROBLEM("name '%s' is not short lower case; ", pname);
        break;
      }
    }
  }
  if (!version_valid(s->api.version)) PROBLEM("version '%s' is not MAJOR.MINOR.PATCH; ", s->api.version ? s->api.version : "(NULL)");
  if (s->api.vendor == NULL) PROBLEM("vendor is NULL; ");
  if (s->api.build_info == NULL) PROBLEM("build_info is NULL; ");
  int kernels = (s->api.op_supports != NULL) + (s->api.plan_create != NULL) + (s->api.plan_info_get != NULL) +
                (s->api.plan_execute != NULL) + (s->api.plan_destroy != NULL);
  if (kernels != 0 && kernels != 5) PROBLEM("the five kernel entries must be all present or all NULL (%d present); ", kernels);
  tsr_conf_record_info("plugin.name", "%s", pname ? pname : "");
  tsr_conf_record_info("plugin.version", "%s", s->api.version ? s->api.version : "");
  tsr_conf_record_info("plugin.vendor", "%s", s->api.vendor ? s->api.vendor : "");
  tsr_conf_record_info("plugin.build_info", "%s", s->api.build_info ? s->api.build_info : "");
  tsr_conf_record_info("plugin.abi", "%u.%u", t->abi_major, t->abi_minor);
  tsr_conf_record_info("plugin.struct_size", "%zu", t->struct_size);
  if (n > 0) {
    TSR_CONF_FAIL_CHECK(name, "%s", problems);
  } else {
    TSR_CONF_PASS_CHECK(name, "'%s' %s by %s, ABI %u.%u, table of %zu bytes", pname, s->api.version,
                        s->api.vendor, t->abi_major, t->abi_minor, t->struct_size);
  }

  name = "identity: table size and minor";
  tsr_conf_record_begin("%s", name);
  if (t->struct_size < sizeof(tsr_plugin_api)) {
    TSR_CONF_PASS_CHECK(name, "older table (%zu of %zu bytes, minor %u): entries past its end are treated as absent and never called",
                        t->struct_size, sizeof(tsr_plugin_api), t->abi_minor);
  } else if (t->struct_size > sizeof(tsr_plugin_api)) {
    TSR_CONF_PASS_CHECK(name, "newer table (%zu bytes, suite knows %zu, minor %u): only known entries are read",
                        t->struct_size, sizeof(tsr_plugin_api), t->abi_minor);
  } else {
    TSR_CONF_PASS_CHECK(name, "table of this minor (%zu bytes, minor %u)", t->struct_size, t->abi_minor);
  }

  name = "probe: cheap and repeatable";
  tsr_conf_record_begin("%s", name);
  double start = now_ms();
  tsr_status a = s->api.probe();
  tsr_status b = s->api.probe();
  double took = (now_ms() - start) / 2;
  if (a != TSR_OK || b != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "probe answered %s then %s after a successful start", tsr_conf_status_name(a),
                        tsr_conf_status_name(b));
  } else if (took > 1000) {
    TSR_CONF_FAIL_CHECK(name, "probe took %.0f ms; docs/abi.md 7.2 asks for a cheap probe", took);
  } else {
    TSR_CONF_PASS_CHECK(name, "OK twice, %.3f ms per call", took);
  }

  name = "devices: count and properties";
  tsr_conf_record_begin("%s", name);
  n = 0;
  problems[0] = '\0';
  for (int32_t d = 0; d < s->device_count; ++d) {
    tsr_device_props p;
    memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    tsr_status st = s->api.device_props_get(d, &p);
    if (st != TSR_OK) {
      PROBLEM("device_props_get(%d) returned %s; ", (int)d, tsr_conf_status_name(st));
      continue;
    }
    if (p.name == NULL) PROBLEM("device %d has no name; ", (int)d);
    if (p.struct_size != sizeof(p)) PROBLEM("device_props_get(%d) changed struct_size to %zu; ", (int)d, p.struct_size);
    if (p.dtype_mask == 0 || (p.dtype_mask >> TSR_DTYPE_COUNT) != 0) PROBLEM("device %d dtype_mask 0x%x; ", (int)d, p.dtype_mask);
    uint32_t known = TSR_DEVICE_ASYNC | TSR_DEVICE_EVENTS | TSR_DEVICE_TIMING_EVENTS | TSR_DEVICE_HOST_ACCESSIBLE;
    if (p.flags & ~known) PROBLEM("device %d flags 0x%x has unknown bits; ", (int)d, p.flags);
    size_t largest = 1;
    for (tsr_dtype_t dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      if ((p.dtype_mask & TSR_DTYPE_BIT(dt)) && tsr_dtype_size(dt) > largest) largest = tsr_dtype_size(dt);
    }
    if (p.base_alignment == 0 || (p.base_alignment & (p.base_alignment - 1)) != 0 || p.base_alignment < largest) {
      PROBLEM("device %d base_alignment %u is not a power of two >= %zu; ", (int)d, p.base_alignment, largest);
    }
    if (p.memory_bytes == 0) PROBLEM("device %d reports 0 memory_bytes; ", (int)d);
    if (p.reserved != 0) PROBLEM("device %d sets tsr_device_props.reserved to %u, not 0; ", (int)d, p.reserved);
    if ((p.flags & TSR_DEVICE_EVENTS) &&
        (!s->api.stream_wait_event || !s->api.event_create || !s->api.event_destroy || !s->api.event_record ||
         !s->api.event_query || !s->api.event_synchronize)) {
      PROBLEM("device %d has TSR_DEVICE_EVENTS but an event entry is missing; ", (int)d);
    }
    if ((p.flags & TSR_DEVICE_TIMING_EVENTS) && !s->api.event_elapsed_get) {
      PROBLEM("device %d has TSR_DEVICE_TIMING_EVENTS without event_elapsed_get; ", (int)d);
    }
    if ((p.flags & TSR_DEVICE_HOST_ACCESSIBLE) && !s->api.buffer_host_ptr_get) {
      PROBLEM("device %d has TSR_DEVICE_HOST_ACCESSIBLE without buffer_host_ptr_get; ", (int)d);
    }
    if ((s->api.host_pinned_alloc == NULL) != (s->api.host_pinned_free == NULL)) {
      PROBLEM("host_pinned_alloc and host_pinned_free must come as a pair; ");
    }
    if (d == s->device) {
      tsr_conf_record_info("device.name", "%s", p.name ? p.name : "");
      tsr_conf_record_info("device.memory_bytes", "%llu", (unsigned long long)p.memory_bytes);
      tsr_conf_record_info("device.flags", "%s%s%s%s", (p.flags & TSR_DEVICE_ASYNC) ? "async " : "",
                           (p.flags & TSR_DEVICE_EVENTS) ? "events " : "",
                           (p.flags & TSR_DEVICE_TIMING_EVENTS) ? "timing-events " : "",
                           (p.flags & TSR_DEVICE_HOST_ACCESSIBLE) ? "host-accessible" : "");
      tsr_conf_record_info("device.dtype_mask", "%u", p.dtype_mask);
      tsr_conf_record_info("device.base_alignment", "%u", p.base_alignment);
      tsr_conf_record_info("device.priority", "%d%s", (int)p.priority,
                           p.priority > TSR_DEVICE_PRIORITY_REFERENCE ? " (chosen over ref)" : "");
    }
  }
  tsr_conf_record_info("device.count", "%d", (int)s->device_count);
  if (n > 0) {
    TSR_CONF_FAIL_CHECK(name, "%s", problems);
  } else {
    TSR_CONF_PASS_CHECK(name, "%d device(s) with consistent properties", (int)s->device_count);
  }
#undef PROBLEM
}

// --- struct_size both ways -------------------------------------------------------

// Runs |fill| on an out-struct of |full| bytes twice: with struct_size
// |small| (must leave every byte past it alone) and with |full| + 64 (must
// leave the extra bytes zero and keep struct_size). |field_end| is where the
// fields of the smaller view end.
typedef tsr_status (*out_fill_fn)(tsr_conf_session *s, void *out, void *ctx);

static void out_struct_check(tsr_conf_session *s, const char *what, size_t full, size_t small,
                             out_fill_fn fill, void *ctx) {
  unsigned char buf[512], ref[512];
  char name[128];
  snprintf(name, sizeof(name), "struct_size: %s smaller than the plugin's", what);
  tsr_conf_record_begin("%s", name);
  memset(ref, 0, sizeof(ref));
  *(size_t *)ref = full;
  tsr_status st = fill(s, ref, ctx);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "the call with struct_size = sizeof failed: %s", tsr_conf_status_name(st));
    return;
  }
  memset(buf, 0xEE, sizeof(buf));
  *(size_t *)buf = small;
  st = fill(s, buf, ctx);
  int64_t changed = -1;
  for (size_t k = small; k < sizeof(buf); ++k) {
    if (buf[k] != 0xEE) {
      changed = (int64_t)k;
      break;
    }
  }
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "struct_size %zu (an older caller) was refused: %s: %s", small,
                        tsr_conf_status_name(st), tsr_conf_host_message());
  } else if (*(size_t *)buf != small) {
    TSR_CONF_FAIL_CHECK(name, "the plugin rewrote struct_size from %zu to %zu", small, *(size_t *)buf);
  } else if (changed >= 0) {
    TSR_CONF_FAIL_CHECK(name, "byte %lld lies beyond struct_size %zu but was written", (long long)changed, small);
  } else if (memcmp(buf + sizeof(size_t), ref + sizeof(size_t), small - sizeof(size_t)) != 0) {
    TSR_CONF_FAIL_CHECK(name, "the covered fields differ from the full-size answer");
  } else {
    TSR_CONF_PASS_CHECK(name, "struct_size %zu of %zu: only covered fields written", small, full);
  }

  snprintf(name, sizeof(name), "struct_size: %s larger than the plugin's", what);
  tsr_conf_record_begin("%s", name);
  memset(buf, 0, sizeof(buf));
  *(size_t *)buf = full + 64;
  st = fill(s, buf, ctx);
  changed = -1;
  for (size_t k = full; k < full + 64; ++k) {
    if (buf[k] != 0) {
      changed = (int64_t)k;
      break;
    }
  }
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "struct_size %zu (a newer caller) was refused: %s: %s", full + 64,
                        tsr_conf_status_name(st), tsr_conf_host_message());
  } else if (*(size_t *)buf != full + 64) {
    TSR_CONF_FAIL_CHECK(name, "the plugin rewrote struct_size from %zu to %zu", full + 64, *(size_t *)buf);
  } else if (changed >= 0) {
    TSR_CONF_FAIL_CHECK(name, "byte %lld, a field unknown to the plugin, was written", (long long)changed);
  } else if (memcmp(buf + sizeof(size_t), ref + sizeof(size_t), full - sizeof(size_t)) != 0) {
    TSR_CONF_FAIL_CHECK(name, "the known fields differ from the exact-size answer");
  } else {
    TSR_CONF_PASS_CHECK(name, "struct_size %zu: unknown fields left untouched", full + 64);
  }
}

static tsr_status props_fill(tsr_conf_session *s, void *out, void *ctx) {
  (void)ctx;
  return s->api.device_props_get(s->device, out);
}

static tsr_status stats_fill(tsr_conf_session *s, void *out, void *ctx) {
  (void)ctx;
  return s->api.allocator_stats_get(s->device, out);
}

static tsr_status info_fill(tsr_conf_session *s, void *out, void *ctx) {
  return s->api.plan_info_get(ctx, out);
}

// Runs |c| as the API check "<op>: <what>": a failure names the op it
// happened in, like the numerics tier does.
static void case_check(tsr_conf_session *s, const char *what, tsr_conf_case *c) {
  char name[160];
  snprintf(name, sizeof(name), "%s: %s", tsr_op_name(c->op), what);
  tsr_conf_record_begin("%s", name);
  tsr_conf_case_result r;
  tsr_conf_case_run(s, c, &r);
  if (r.result == TSR_CONF_PASS) {
    TSR_CONF_PASS_CHECK(name, "%s", c->name);
  } else if (r.result == TSR_CONF_FAIL) {
    tsr_conf_record_check(name, TSR_CONF_FAIL, r.ratio, "%s: %s: %s", c->name, r.check, r.detail);
  } else {
    TSR_CONF_SKIP_CHECK(name, "%s: %s: %s", c->name, tsr_conf_result_name(r.result), r.detail);
  }
}

void tsr_conf_api_compat_run(tsr_conf_session *s) {
  out_struct_check(s, "tsr_device_props", sizeof(tsr_device_props), offsetof(tsr_device_props, flags),
                   props_fill, NULL);
  if (s->api.allocator_stats_get != NULL) {
    out_struct_check(s, "tsr_allocator_stats", sizeof(tsr_allocator_stats),
                     offsetof(tsr_allocator_stats, peak_bytes_in_use), stats_fill, NULL);
  } else {
    TSR_CONF_SKIP_CHECK("struct_size: tsr_allocator_stats", "allocator_stats_get is absent (optional)");
  }
  tsr_conf_case c;
  if (tsr_conf_api_case_pick(s, &c) != 0) {
    TSR_CONF_SKIP_CHECK("struct_size: tsr_plan_info", "the plugin declares no op");
    TSR_CONF_SKIP_CHECK("kernels: signature and execution arguments larger than sizeof (struct_size)",
                        "the plugin declares no op");
    return;
  }
  char why[512];
  tsr_conf_prepared *p = NULL;
  tsr_status st = tsr_conf_prepared_create(s, &c, 1, &p, why, sizeof(why));
  if (st == TSR_OK) {
    out_struct_check(s, "tsr_plan_info", sizeof(tsr_plan_info), offsetof(tsr_plan_info, saved_state_bytes),
                     info_fill, (void *)tsr_conf_prepared_plan(p));
    tsr_conf_prepared_destroy(p);
  } else {
    TSR_CONF_FAIL_CHECK("struct_size: tsr_plan_info", "could not build a plan for %s: %s", c.name, why);
  }
  c.flags = TSR_CONF_CASE_SIGNATURE_LONG | TSR_CONF_CASE_ARGS_LONG;
  snprintf(c.name + strlen(c.name), sizeof(c.name) - strlen(c.name), " (signature and args 32 bytes larger)");
  case_check(s, "signature and execution arguments larger than sizeof (struct_size)", &c);
  if (c.has_attrs) {
    c.flags = 0;
    c.attrs_pass = TSR_CONF_ATTRS_LONG;
    snprintf(c.name + strlen(c.name), sizeof(c.name) - strlen(c.name), " (attrs 32 bytes larger)");
    case_check(s, "attributes larger than sizeof (struct_size)", &c);
  }
  // A binary attribute struct that ends before alpha (default 1).
  tsr_dtype_t dt = (s->props.dtype_mask & TSR_DTYPE_BIT(TSR_FLOAT32)) ? TSR_FLOAT32 : TSR_FLOAT64;
  tsr_conf_case_init(&c, TSR_OP_BINARY, "attributes", "sub %s [13,5] attrs ending before alpha",
                     tsr_oracle_dtype_name(dt));
  c.has_attrs = 1;
  c.attrs.binary = (tsr_binary_attrs){sizeof(tsr_binary_attrs), TSR_BINARY_SUB, 0, 1.0};
  c.attrs_pass = TSR_CONF_ATTRS_SHORT;
  c.attrs_size = offsetof(tsr_binary_attrs, fn) + sizeof(tsr_binary_fn_t);
  tsr_conf_case_input(&c, dt, 2, (const int64_t[]){13, 5});
  tsr_conf_case_input(&c, dt, 2, (const int64_t[]){13, 5});
  tsr_conf_case_output(&c, dt, 2, (const int64_t[]){13, 5});
  case_check(s, "attributes smaller than sizeof take defaults (struct_size)", &c);
}

// --- lifecycle ----------------------------------------------------------------------

static int representative_run(tsr_conf_session *s, char *why, size_t size) {
  tsr_conf_case c;
  if (tsr_conf_api_case_pick(s, &c) != 0) {
    // No kernels: a copy round trip shows the plugin works.
    char msg[256];
    tsr_plugin_buffer *b = NULL;
    unsigned char in[256], out[256];
    tsr_conf_api_pattern(in, sizeof(in), 5);
    if (tsr_conf_api_buffer_create(s, sizeof(in), 0, &b, msg, sizeof(msg)) != TSR_OK) {
      snprintf(why, size, "%s", msg);
      return -1;
    }
    tsr_status st = s->api.copy_host_to_device(s->stream, in, b, 0, sizeof(in));
    if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, b, 0, out, sizeof(out));
    s->api.stream_synchronize(s->stream);
    s->api.buffer_free(b, s->stream);
    s->api.stream_synchronize(s->stream);
    if (st != TSR_OK || memcmp(in, out, sizeof(in)) != 0) {
      snprintf(why, size, "a copy round trip failed");
      return -1;
    }
    return 0;
  }
  tsr_conf_case_result r;
  tsr_conf_case_run(s, &c, &r);
  if (r.result != TSR_CONF_PASS) {
    snprintf(why, size, "%s: %s: %s", c.name, tsr_conf_result_name(r.result), r.detail);
    return -1;
  }
  return 0;
}

void tsr_conf_api_lifecycle_run(tsr_conf_session *s, const char *path, int32_t device) {
  char why[1024];
  const char *name = "lifecycle: shutdown then start again";
  tsr_conf_record_begin("%s", name);
  tsr_status st = tsr_conf_session_close(s);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "shutdown of an idle plugin returned %s: %s", tsr_conf_status_name(st),
                        tsr_conf_host_message());
    return;
  }
  int64_t blocks_after_shutdown = tsr_conf_host_live_blocks();
  tsr_conf_open_t opened = tsr_conf_session_open(s, path, device, tsr_conf_host_get());
  if (opened != TSR_CONF_OPENED) {
    TSR_CONF_FAIL_CHECK(name, "the second start failed: %s", s->message);
    return;
  }
  if (representative_run(s, why, sizeof(why)) != 0) {
    TSR_CONF_FAIL_CHECK(name, "after a restart: %s", why);
  } else {
    TSR_CONF_PASS_CHECK(name, "entry, init, probe, work, shutdown, then all of it again");
  }

  name = "lifecycle: shutdown releases host memory";
  tsr_conf_record_begin("%s", name);
  if (blocks_after_shutdown != 0) {
    TSR_CONF_FAIL_CHECK(name, "%lld blocks from the host's mem_alloc were still held after shutdown",
                        (long long)blocks_after_shutdown);
  } else {
    TSR_CONF_PASS_CHECK(name, "every mem_alloc block was freed by shutdown");
  }

  name = "struct_size: host table larger than the plugin's";
  tsr_conf_record_begin("%s", name);
  tsr_conf_session_close(s);
  size_t extra = 0;
  const tsr_host_api *larger = tsr_conf_host_larger_get(&extra);
  opened = tsr_conf_session_open(s, path, device, larger);
  if (opened != TSR_CONF_OPENED) {
    TSR_CONF_FAIL_CHECK(name, "with a host table %zu bytes larger (minor %u): %s", extra, larger->abi_minor,
                        s->message);
  } else if (representative_run(s, why, sizeof(why)) != 0) {
    TSR_CONF_FAIL_CHECK(name, "with a host table %zu bytes larger: %s", extra, why);
  } else {
    TSR_CONF_PASS_CHECK(name, "loads and works with a host table of minor %u, %zu bytes larger", larger->abi_minor,
                        extra);
  }
  tsr_conf_session_close(s);
  // Leave the session started, as the caller expects.
  tsr_conf_session_open(s, path, device, tsr_conf_host_get());
}
