// The numerics tier for one op, and the support matrix.
//
// A plugin declares (op, dtype) by answering op_supports OK for any case of
// the battery of that pair: the representative signature (small,
// contiguous) first, then every other case. Asking only the representative
// would let a plugin that implements RELU but not NEG (UNARY's
// representative) go untested on RELU, and be certified with a wrong one.
// Everything declared is then run through the whole battery; cases the
// plugin declines (a function or layout it does not do) are counted and
// reported, never passed.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

#define FAILURES_PER_CELL 4

// Finds the first valid case of a battery that op_supports accepts.
typedef struct any_case {
  tsr_conf_session *session;
  char accepted[192];  // that case's name, or empty
} any_case;

static void any_case_emit(void *ctx, tsr_conf_case *c) {
  any_case *a = ctx;
  if (a->accepted[0] != '\0' || c->expect != TSR_OK) return;
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  tsr_conf_attrs attrs;
  tsr_op_signature sig;
  if (tsr_conf_case_signature(a->session, c, descs, &attrs, &sig) != 0) return;
  tsr_conf_host_message_clear();
  if (a->session->api.op_supports(&sig) == TSR_OK) snprintf(a->accepted, sizeof(a->accepted), "%s", c->name);
}

// Whether the plugin declares (op, dtype); |reason| gets its message (why
// not, or which case declared it when the representative did not).
static int declared(tsr_conf_session *s, int32_t op, tsr_dtype_t dt, char *reason, size_t size) {
  reason[0] = '\0';
  if (!(s->props.dtype_mask & TSR_DTYPE_BIT(dt))) {
    snprintf(reason, size, "the device does not store %s", tsr_oracle_dtype_name(dt));
    return 0;
  }
  if (!s->has_kernels) {
    snprintf(reason, size, "the plugin has no kernels");
    return 0;
  }
  tsr_conf_case c;
  tsr_conf_case_representative(op, dt, &c);
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  tsr_conf_attrs attrs;
  tsr_op_signature sig;
  if (tsr_conf_case_signature(s, &c, descs, &attrs, &sig) != 0) {
    snprintf(reason, size, "suite: cannot build the representative signature");
    return 0;
  }
  tsr_conf_host_message_clear();
  tsr_status status = s->api.op_supports(&sig);
  if (status == TSR_OK) return 1;
  snprintf(reason, size, "%s%s%s", tsr_conf_status_name(status),
           tsr_conf_host_message()[0] ? ": " : "", tsr_conf_host_message());
  // The representative is declined: any other valid case the plugin
  // accepts declares the pair all the same.
  any_case acc = {s, {0}};
  tsr_conf_sink sink = {any_case_emit, &acc, s->full, s->props.dtype_mask};
  if (tsr_conf_cases_emit(op, dt, &sink) == 0 && acc.accepted[0] != '\0') {
    snprintf(reason, size, "declared by case %s", acc.accepted);
    return 1;
  }
  return 0;
}

// Asks op_supports for every valid case of a battery and notes, per
// selector value, whether a case was seen (1) and accepted (2).
typedef struct selector_scan {
  tsr_conf_session *session;
  int state[TSR_CONF_MAX_SELECTORS];
} selector_scan;

static void selector_scan_emit(void *ctx, tsr_conf_case *c) {
  selector_scan *a = ctx;
  uint32_t mask = tsr_conf_case_selectors(c);
  if (mask == 0 || c->expect != TSR_OK) return;
  tsr_tensor_desc descs[TSR_MAX_OPERANDS];
  tsr_conf_attrs attrs;
  tsr_op_signature sig;
  if (tsr_conf_case_signature(a->session, c, descs, &attrs, &sig) != 0) return;
  tsr_conf_host_message_clear();
  const int state = a->session->api.op_supports(&sig) == TSR_OK ? 2 : 1;
  for (int32_t i = 0; i < TSR_CONF_MAX_SELECTORS; ++i) {
    if ((mask & (1u << i)) && a->state[i] < state) a->state[i] = state;
  }
}

void tsr_conf_support_report(tsr_conf_session *s) {
  char reason[600];
  for (int32_t op = 1; op < TSR_OP_COUNT; ++op) {
    for (tsr_dtype_t dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      if (!tsr_conf_op_accepts(op, dt)) continue;
      int yes = declared(s, op, dt, reason, sizeof(reason));
      tsr_conf_record_support(op, dt, yes, reason);
      // The same question per selector value, for the selector matrix.
      if (!yes || tsr_op_selector_count(op) == 0) continue;
      selector_scan scan;
      memset(&scan, 0, sizeof(scan));
      scan.session = s;
      tsr_conf_sink sink = {selector_scan_emit, &scan, s->full, s->props.dtype_mask};
      if (tsr_conf_cases_emit(op, dt, &sink) != 0) continue;
      for (int32_t i = 0; i < tsr_op_selector_count(op); ++i) {
        if (scan.state[i] > 0) tsr_conf_record_selector(op, i, dt, scan.state[i]);
      }
    }
  }
}

typedef struct cell_acc {
  tsr_conf_session *session;
  int32_t op;
  tsr_dtype_t dtype;
  int cases, passed, failed, declined, skipped;
  double max_ratio;
  char first_decline[400];
  char first_skip[400];
  char first_failure[600];
} cell_acc;

static void cell_emit(void *ctx, tsr_conf_case *c) {
  cell_acc *a = ctx;
  tsr_conf_record_begin("numerics %s %s: %s", tsr_op_name(a->op), tsr_oracle_dtype_name(a->dtype), c->name);
  tsr_conf_case_result r;
  tsr_conf_case_run(a->session, c, &r);
  a->cases += 1;
  if (a->session->verbose) {
    fprintf(stderr, "case %-8s err/tol %-10.3g %s%s%s\n", tsr_conf_result_name(r.result), r.ratio, c->name,
            r.result != TSR_CONF_PASS ? ": " : "", r.result != TSR_CONF_PASS ? r.detail : "");
  }
  if (!isnan(r.ratio) && r.ratio > a->max_ratio) a->max_ratio = r.ratio;
  switch (r.result) {
    case TSR_CONF_PASS:
      a->passed += 1;
      break;
    case TSR_CONF_FAIL:
      if (a->failed < FAILURES_PER_CELL) {
        tsr_conf_record_failure(a->op, a->dtype, r.check, r.ratio, c->name, "%s", r.detail);
      }
      if (a->failed == 0) {
        snprintf(a->first_failure, sizeof(a->first_failure), "%s: %s (%s)", r.check, c->name, r.detail);
      }
      a->failed += 1;
      break;
    case TSR_CONF_DECLINED:
      if (a->declined == 0) snprintf(a->first_decline, sizeof(a->first_decline), "%s: %s", c->name, r.detail);
      a->declined += 1;
      break;
    default:
      if (a->skipped == 0) snprintf(a->first_skip, sizeof(a->first_skip), "%s: %s", c->name, r.detail);
      a->skipped += 1;
      break;
  }
}

void tsr_conf_numerics_op_run(tsr_conf_session *s, int32_t op) {
  char reason[600];
  for (tsr_dtype_t dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
    if (!tsr_conf_op_accepts(op, dt)) continue;
    if (!declared(s, op, dt, reason, sizeof(reason))) continue;
    if (!tsr_oracle_covers(op)) {
      tsr_conf_record_cell(op, dt, TSR_CONF_SKIP, NAN, 0, 0, 0, 0, "no oracle yet");
      continue;
    }
    cell_acc acc;
    memset(&acc, 0, sizeof(acc));
    acc.session = s;
    acc.op = op;
    acc.dtype = dt;
    tsr_conf_sink sink = {cell_emit, &acc, s->full, s->props.dtype_mask};
    if (tsr_conf_cases_emit(op, dt, &sink) != 0) {
      tsr_conf_record_cell(op, dt, TSR_CONF_SKIP, NAN, 0, 0, 0, 0, "no cases yet");
      continue;
    }
    tsr_conf_result_t result;
    char detail[1024];
    if (acc.failed > 0) {
      result = TSR_CONF_FAIL;
      snprintf(detail, sizeof(detail), "%d of %d cases failed; first %s", acc.failed, acc.cases, acc.first_failure);
    } else if (acc.passed > 0) {
      result = TSR_CONF_PASS;
      if (acc.declined > 0 || acc.skipped > 0) {
        snprintf(detail, sizeof(detail), "%d passed, %d declined by the plugin (first: %s), %d not checked (%s)",
                 acc.passed, acc.declined, acc.first_decline, acc.skipped, acc.first_skip);
      } else {
        snprintf(detail, sizeof(detail), "%d cases passed", acc.passed);
      }
    } else if (acc.declined > 0) {
      result = TSR_CONF_DECLINED;
      snprintf(detail, sizeof(detail), "every case declined; first: %s", acc.first_decline);
    } else {
      result = TSR_CONF_SKIP;
      snprintf(detail, sizeof(detail), "nothing checked: %s", acc.first_skip);
    }
    tsr_conf_record_cell(op, dt, result, acc.max_ratio, acc.cases, acc.passed, acc.failed, acc.declined, "%s",
                         detail);
  }
}
