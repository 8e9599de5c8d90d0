// API tier: the allocator (docs/abi.md 7.3) and copies (7.4).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static int stats_get(tsr_conf_session *s, tsr_allocator_stats *out) {
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  if (s->api.allocator_stats_get == NULL) return 0;
  return s->api.allocator_stats_get(s->device, out) == TSR_OK;
}

static void check_zero_size(tsr_conf_session *s) {
  const char *name = "allocator: zero-size buffer";
  tsr_conf_record_begin("%s", name);
  tsr_plugin_buffer *b = NULL;
  tsr_status st = s->api.buffer_alloc(s->device, 0, s->stream, &b);
  if (st != TSR_OK || b == NULL) {
    TSR_CONF_FAIL_CHECK(name, "buffer_alloc(0) returned %s, handle %p: %s", tsr_conf_status_name(st), (void *)b,
                        tsr_conf_host_message());
    return;
  }
  // A zero-byte copy into it is a no-op that succeeds.
  unsigned char byte = 0;
  tsr_status c = s->api.copy_host_to_device(s->stream, &byte, b, 0, 0);
  st = s->api.buffer_free(b, s->stream);
  s->api.stream_synchronize(s->stream);
  if (c != TSR_OK || st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "zero-byte copy %s, free %s", tsr_conf_status_name(c), tsr_conf_status_name(st));
  } else {
    TSR_CONF_PASS_CHECK(name, "a valid handle, copied to and freed");
  }
}

static void check_many_small(tsr_conf_session *s) {
  const char *name = "allocator: many small buffers";
  tsr_conf_record_begin("%s", name);
  enum { COUNT = 1000 };
  tsr_plugin_buffer **bufs = calloc(COUNT, sizeof(*bufs));
  uint64_t *sizes = calloc(COUNT, sizeof(*sizes));
  unsigned char *host = malloc(256), *back = malloc(256);
  if (!bufs || !sizes || !host || !back) {
    TSR_CONF_SKIP_CHECK(name, "suite: out of host memory");
    free(bufs), free(sizes), free(host), free(back);
    return;
  }
  tsr_allocator_stats before, during, after;
  int has_stats = stats_get(s, &before);
  uint64_t rng = 77, total = 0;
  char problem[600] = "";
  int i;
  for (i = 0; i < COUNT && problem[0] == '\0'; ++i) {
    sizes[i] = (uint64_t)tsr_conf_random_int(&rng, 1, 256);
    total += sizes[i];
    tsr_status st = s->api.buffer_alloc(s->device, sizes[i], s->stream, &bufs[i]);
    if (st != TSR_OK || bufs[i] == NULL) {
      snprintf(problem, sizeof(problem), "buffer_alloc #%d of %llu bytes returned %s: %s", i,
               (unsigned long long)sizes[i], tsr_conf_status_name(st), tsr_conf_host_message());
      bufs[i] = NULL;
      break;
    }
    tsr_conf_api_pattern(host, sizes[i], (uint32_t)i + 1);
    st = s->api.copy_host_to_device(s->stream, host, bufs[i], 0, sizes[i]);
    if (st != TSR_OK) snprintf(problem, sizeof(problem), "copy into buffer #%d: %s", i, tsr_conf_status_name(st));
  }
  int made = i;
  if (problem[0] == '\0' && has_stats) stats_get(s, &during);
  // Every buffer still holds its own bytes: no two of them overlap.
  for (int k = 0; k < made && problem[0] == '\0'; ++k) {
    tsr_conf_api_pattern(host, sizes[k], (uint32_t)k + 1);
    tsr_status st = s->api.copy_device_to_host(s->stream, bufs[k], 0, back, sizes[k]);
    if (st != TSR_OK || memcmp(host, back, sizes[k]) != 0) {
      snprintf(problem, sizeof(problem), "buffer #%d (%llu bytes) did not keep its contents: buffers overlap", k,
               (unsigned long long)sizes[k]);
    }
  }
  // Free in a shuffled order.
  for (int k = made - 1; k > 0; --k) {
    int j = (int)tsr_conf_random_int(&rng, 0, k);
    tsr_plugin_buffer *t = bufs[k];
    bufs[k] = bufs[j];
    bufs[j] = t;
  }
  for (int k = 0; k < made; ++k) {
    if (bufs[k] == NULL) continue;
    tsr_status st = s->api.buffer_free(bufs[k], s->stream);
    if (st != TSR_OK && problem[0] == '\0') snprintf(problem, sizeof(problem), "buffer_free returned %s", tsr_conf_status_name(st));
  }
  s->api.stream_synchronize(s->stream);
  if (problem[0] == '\0' && has_stats) {
    stats_get(s, &after);
    if (during.bytes_in_use < before.bytes_in_use + total) {
      snprintf(problem, sizeof(problem), "stats: bytes_in_use grew by %llu for %llu bytes allocated",
               (unsigned long long)(during.bytes_in_use - before.bytes_in_use), (unsigned long long)total);
    } else if (during.alloc_count < before.alloc_count + COUNT) {
      snprintf(problem, sizeof(problem), "stats: alloc_count grew by %llu for %d allocations",
               (unsigned long long)(during.alloc_count - before.alloc_count), COUNT);
    } else if (after.free_count < before.free_count + COUNT) {
      snprintf(problem, sizeof(problem), "stats: free_count grew by %llu for %d frees",
               (unsigned long long)(after.free_count - before.free_count), COUNT);
    } else if (after.bytes_in_use != before.bytes_in_use) {
      snprintf(problem, sizeof(problem), "stats: bytes_in_use is %llu after freeing everything, was %llu",
               (unsigned long long)after.bytes_in_use, (unsigned long long)before.bytes_in_use);
    } else if (during.peak_bytes_in_use < during.bytes_in_use || during.bytes_reserved < during.bytes_in_use) {
      snprintf(problem, sizeof(problem), "stats: peak %llu or reserved %llu below bytes_in_use %llu",
               (unsigned long long)during.peak_bytes_in_use, (unsigned long long)during.bytes_reserved,
               (unsigned long long)during.bytes_in_use);
    }
  }
  if (problem[0] != '\0') {
    TSR_CONF_FAIL_CHECK(name, "%s", problem);
  } else {
    TSR_CONF_PASS_CHECK(name, "%d buffers of 1 to 256 bytes kept their contents%s", COUNT,
                        has_stats ? "; stats consistent" : "; no stats (optional entry absent)");
  }
  free(bufs), free(sizes), free(host), free(back);
}

static void check_huge(tsr_conf_session *s) {
  const char *name = "allocator: huge request is out-of-memory";
  tsr_conf_record_begin("%s", name);
  uint64_t huge = (uint64_t)1 << 62;
  tsr_plugin_buffer *b = NULL;
  tsr_conf_host_message_clear();
  tsr_status st = s->api.buffer_alloc(s->device, huge, s->stream, &b);
  char message[600];
  snprintf(message, sizeof(message), "%s", tsr_conf_host_message());
  if (st == TSR_OK) {
    s->api.buffer_free(b, s->stream);
    TSR_CONF_FAIL_CHECK(name, "buffer_alloc(2^62) succeeded");
    return;
  }
  tsr_plugin_buffer *small = NULL;
  tsr_status after = s->api.buffer_alloc(s->device, 64, s->stream, &small);
  if (small != NULL) s->api.buffer_free(small, s->stream);
  s->api.stream_synchronize(s->stream);
  if (st != TSR_OUT_OF_MEMORY) {
    TSR_CONF_FAIL_CHECK(name, "buffer_alloc(2^62) returned %s, not OUT_OF_MEMORY: %s", tsr_conf_status_name(st), message);
  } else if (message[0] == '\0') {
    TSR_CONF_FAIL_CHECK(name, "OUT_OF_MEMORY without a message");
  } else if (after != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "after the failed request a 64-byte allocation returned %s", tsr_conf_status_name(after));
  } else {
    TSR_CONF_PASS_CHECK(name, "OUT_OF_MEMORY: %s", message);
  }
}

static void check_trim(tsr_conf_session *s) {
  const char *name = "allocator: trim";
  tsr_conf_record_begin("%s", name);
  if (s->api.allocator_trim == NULL) {
    TSR_CONF_SKIP_CHECK(name, "allocator_trim is absent (optional: nothing is cached)");
    return;
  }
  // Leave something cached, keep one buffer alive across the trim.
  char why[400];
  tsr_plugin_buffer *kept = NULL, *freed = NULL;
  if (tsr_conf_api_buffer_create(s, 1 << 20, 3, &kept, why, sizeof(why)) != TSR_OK ||
      tsr_conf_api_buffer_create(s, 1 << 20, 4, &freed, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s", why);
    return;
  }
  s->api.buffer_free(freed, s->stream);
  s->api.stream_synchronize(s->stream);
  tsr_allocator_stats before, after;
  int has_stats = stats_get(s, &before);
  tsr_status st = s->api.allocator_trim(s->device);
  stats_get(s, &after);
  unsigned char expect[256], got[256];
  tsr_conf_api_pattern(expect, sizeof(expect), 3);
  tsr_status rd = s->api.copy_device_to_host(s->stream, kept, 0, got, sizeof(got));
  s->api.buffer_free(kept, s->stream);
  s->api.stream_synchronize(s->stream);
  if (st != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "allocator_trim returned %s: %s", tsr_conf_status_name(st), tsr_conf_host_message());
  } else if (rd != TSR_OK || memcmp(expect, got, sizeof(got)) != 0) {
    TSR_CONF_FAIL_CHECK(name, "a live buffer lost its contents across allocator_trim");
  } else if (has_stats && (after.bytes_reserved > before.bytes_reserved || after.bytes_in_use != before.bytes_in_use)) {
    TSR_CONF_FAIL_CHECK(name, "stats after trim: reserved %llu (was %llu), in use %llu (was %llu)",
                        (unsigned long long)after.bytes_reserved, (unsigned long long)before.bytes_reserved,
                        (unsigned long long)after.bytes_in_use, (unsigned long long)before.bytes_in_use);
  } else {
    TSR_CONF_PASS_CHECK(name, "live buffers kept%s", has_stats ? "; reserved bytes did not grow" : "");
  }
}

static void check_alignment(tsr_conf_session *s) {
  const char *name = "allocator: base alignment";
  tsr_conf_record_begin("%s", name);
  if (!(s->props.flags & TSR_DEVICE_HOST_ACCESSIBLE) || s->api.buffer_host_ptr_get == NULL) {
    TSR_CONF_SKIP_CHECK(name, "the device is not host-accessible: addresses cannot be seen");
    return;
  }
  uint64_t rng = 11;
  for (int i = 0; i < 64; ++i) {
    uint64_t size = (uint64_t)tsr_conf_random_int(&rng, 1, 5000);
    tsr_plugin_buffer *b = NULL;
    void *ptr = NULL;
    tsr_status st = s->api.buffer_alloc(s->device, size, s->stream, &b);
    if (st == TSR_OK) st = s->api.buffer_host_ptr_get(b, &ptr);
    if (b != NULL) s->api.buffer_free(b, s->stream);
    if (st != TSR_OK || ptr == NULL || ((uintptr_t)ptr % s->props.base_alignment) != 0) {
      s->api.stream_synchronize(s->stream);
      TSR_CONF_FAIL_CHECK(name, "buffer of %llu bytes at %p: not aligned to base_alignment %u (%s)",
                          (unsigned long long)size, ptr, s->props.base_alignment, tsr_conf_status_name(st));
      return;
    }
  }
  s->api.stream_synchronize(s->stream);
  TSR_CONF_PASS_CHECK(name, "64 buffers of 1 to 5000 bytes aligned to %u", s->props.base_alignment);
}

void tsr_conf_api_allocator_run(tsr_conf_session *s) {
  check_zero_size(s);
  check_many_small(s);
  check_huge(s);
  check_trim(s);
  check_alignment(s);
}

// --- copies ------------------------------------------------------------------------

void tsr_conf_api_copies_run(tsr_conf_session *s) {
  enum { SIZE = 8192 };
  unsigned char *a = malloc(SIZE), *b = malloc(SIZE), *expect = malloc(SIZE), *got = malloc(SIZE);
  char why[512];
  tsr_plugin_buffer *x = NULL, *y = NULL;
  if (!a || !b || !expect || !got) goto done;
  tsr_conf_api_pattern(a, SIZE, 21);
  tsr_conf_api_pattern(b, SIZE, 22);

  const char *name = "copies: host to device and back, with offsets";
  tsr_conf_record_begin("%s", name);
  if (tsr_conf_api_buffer_create(s, SIZE, 21, &x, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s", why);
    goto done;
  }
  tsr_status st = s->api.copy_host_to_device(s->stream, b, x, 13, 1000);
  if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, x, 0, got, SIZE);
  memcpy(expect, a, SIZE);
  memcpy(expect + 13, b, 1000);
  int64_t diff = tsr_conf_api_first_difference(expect, got, SIZE);
  if (st != TSR_OK || diff >= 0) {
    TSR_CONF_FAIL_CHECK(name, "%s; first wrong byte %lld", tsr_conf_status_name(st), (long long)diff);
  } else {
    TSR_CONF_PASS_CHECK(name, "1000 bytes at offset 13 of an 8192-byte buffer, neighbours untouched");
  }

  name = "copies: device to host from an offset";
  tsr_conf_record_begin("%s", name);
  memset(got, 0, SIZE);
  st = s->api.copy_device_to_host(s->stream, x, 777, got, 101);
  diff = tsr_conf_api_first_difference(expect + 777, got, 101);
  if (st != TSR_OK || diff >= 0) {
    TSR_CONF_FAIL_CHECK(name, "%s; first wrong byte %lld", tsr_conf_status_name(st), (long long)diff);
  } else {
    TSR_CONF_PASS_CHECK(name, "101 bytes from offset 777");
  }

  name = "copies: device to device with offsets";
  tsr_conf_record_begin("%s", name);
  if (tsr_conf_api_buffer_create(s, SIZE, 22, &y, why, sizeof(why)) != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "%s", why);
    goto done;
  }
  st = s->api.copy_device_to_device(s->stream, x, 5, y, 1001, 2000);
  if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, y, 0, got, SIZE);
  unsigned char *expect_y = malloc(SIZE);
  if (expect_y == NULL) goto done;
  memcpy(expect_y, b, SIZE);
  memcpy(expect_y + 1001, expect + 5, 2000);
  diff = tsr_conf_api_first_difference(expect_y, got, SIZE);
  if (st != TSR_OK || diff >= 0) {
    TSR_CONF_FAIL_CHECK(name, "%s; first wrong byte %lld", tsr_conf_status_name(st), (long long)diff);
  } else {
    TSR_CONF_PASS_CHECK(name, "2000 bytes from offset 5 to offset 1001");
  }

  name = "copies: within one buffer";
  tsr_conf_record_begin("%s", name);
  st = s->api.copy_device_to_device(s->stream, y, 0, y, 4096, 3000);
  if (st == TSR_OK) st = s->api.copy_device_to_host(s->stream, y, 0, got, SIZE);
  memcpy(expect_y + 4096, expect_y, 3000);
  diff = tsr_conf_api_first_difference(expect_y, got, SIZE);
  if (st != TSR_OK || diff >= 0) {
    TSR_CONF_FAIL_CHECK(name, "%s; first wrong byte %lld", tsr_conf_status_name(st), (long long)diff);
  } else {
    TSR_CONF_PASS_CHECK(name, "non-overlapping ranges of one buffer");
  }
  free(expect_y);

  name = "copies: zero bytes";
  tsr_conf_record_begin("%s", name);
  tsr_status s1 = s->api.copy_host_to_device(s->stream, a, x, SIZE, 0);
  tsr_status s2 = s->api.copy_device_to_host(s->stream, x, SIZE, got, 0);
  tsr_status s3 = s->api.copy_device_to_device(s->stream, x, 0, y, 0, 0);
  if (s1 != TSR_OK || s2 != TSR_OK || s3 != TSR_OK) {
    TSR_CONF_FAIL_CHECK(name, "zero-byte copies returned %s, %s, %s", tsr_conf_status_name(s1),
                        tsr_conf_status_name(s2), tsr_conf_status_name(s3));
  } else {
    TSR_CONF_PASS_CHECK(name, "no-ops that succeed, even at the end of a buffer");
  }

  name = "copies: pinned host memory";
  tsr_conf_record_begin("%s", name);
  if (s->api.host_pinned_alloc == NULL || s->api.host_pinned_free == NULL) {
    TSR_CONF_SKIP_CHECK(name, "host_pinned_alloc is absent (optional)");
  } else {
    void *pinned = NULL;
    st = s->api.host_pinned_alloc(s->device, SIZE, &pinned);
    if (st != TSR_OK || pinned == NULL) {
      TSR_CONF_FAIL_CHECK(name, "host_pinned_alloc returned %s: %s", tsr_conf_status_name(st), tsr_conf_host_message());
    } else {
      memcpy(pinned, b, SIZE);
      st = s->api.copy_host_to_device(s->stream, pinned, x, 0, SIZE);
      tsr_status sy = s->api.stream_synchronize(s->stream);
      memset(pinned, 0, SIZE);
      tsr_status back = s->api.copy_device_to_host(s->stream, x, 0, pinned, SIZE);
      tsr_status sy2 = s->api.stream_synchronize(s->stream);
      diff = tsr_conf_api_first_difference(b, pinned, SIZE);
      tsr_status fr = s->api.host_pinned_free(s->device, pinned);
      if (st != TSR_OK || sy != TSR_OK || back != TSR_OK || sy2 != TSR_OK || fr != TSR_OK || diff >= 0) {
        TSR_CONF_FAIL_CHECK(name, "copies %s/%s, free %s, first wrong byte %lld", tsr_conf_status_name(st),
                            tsr_conf_status_name(back), tsr_conf_status_name(fr), (long long)diff);
      } else {
        TSR_CONF_PASS_CHECK(name, "asynchronous copies to and from pinned memory, complete after synchronize");
      }
    }
  }

  // Strided copies go through the COPY op.
  name = "copy: strided copies through the COPY op";
  tsr_conf_record_begin("%s", name);
  {
    tsr_dtype_t dt = (s->props.dtype_mask & TSR_DTYPE_BIT(TSR_FLOAT32)) ? TSR_FLOAT32 : TSR_INT32;
    tsr_conf_case c;
    tsr_conf_case_init(&c, TSR_OP_COPY, "non-contiguous", "copy %s [37,53] transposed to strided, misaligned",
                       tsr_oracle_dtype_name(dt));
    tsr_conf_operand *in = tsr_conf_case_input(&c, dt, 2, (const int64_t[]){37, 53});
    in->layout = TSR_CONF_TRANSPOSED;
    in->misalign = 1;
    tsr_conf_operand *out = tsr_conf_case_output(&c, dt, 2, (const int64_t[]){37, 53});
    out->layout = TSR_CONF_STRIDED;
    out->misalign = 3;
    tsr_conf_case_result r;
    if (!s->has_kernels) {
      TSR_CONF_SKIP_CHECK(name, "the plugin has no kernels");
    } else {
      tsr_conf_case_run(s, &c, &r);
      if (r.result == TSR_CONF_PASS) {
        TSR_CONF_PASS_CHECK(name, "%s", c.name);
      } else if (r.result == TSR_CONF_FAIL) {
        tsr_conf_record_check(name, TSR_CONF_FAIL, r.ratio, "%s: %s", r.check, r.detail);
      } else {
        TSR_CONF_SKIP_CHECK(name, "%s: %s", tsr_conf_result_name(r.result), r.detail);
      }
    }
  }

done:
  if (x != NULL) s->api.buffer_free(x, s->stream);
  if (y != NULL) s->api.buffer_free(y, s->stream);
  s->api.stream_synchronize(s->stream);
  free(a), free(b), free(expect), free(got);
}
