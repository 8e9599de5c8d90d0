// The report in three forms: plain text for the terminal, Markdown for a
// file to read or attach, JUnit XML for CI. All three say the same things.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

// tsr_op_name, never NULL (a failure row always has a catalogue op; this keeps
// printf's %s defined even if one did not).
static const char *op_name_text(int32_t op) {
  const char *name = tsr_op_name(op);
  return name ? name : "?";
}

static const char *short_dtype(tsr_dtype_t dt) {
  static const char *const names[] = {"f32", "f64", "bf16", "f16", "i32", "i64", "bool"};
  return dt >= 0 && dt < TSR_DTYPE_COUNT ? names[dt] : "?";
}

static void ratio_text(double r, char *buf, size_t size) {
  if (isnan(r)) {
    snprintf(buf, size, "-");
  } else if (isinf(r)) {
    snprintf(buf, size, "inf");
  } else {
    snprintf(buf, size, "%.3g", r);
  }
}

// One matrix cell, as a short word.
static const char *cell_word(const tsr_conf_cell *c, int accepts) {
  if (!accepts) return "n/a";
  if (!c->asked) return "?";
  if (!c->supported) return "-";
  if (!c->has_result) return "(not run)";
  switch (c->result) {
    case TSR_CONF_PASS: return c->declined > 0 ? "pass*" : "pass";
    case TSR_CONF_FAIL: return "FAIL";
    case TSR_CONF_DECLINED: return "declined";
    default: return "skip";
  }
}

static double op_ratio(const tsr_conf_model *m, int op, int *any) {
  double r = NAN;
  *any = 0;
  for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
    const tsr_conf_cell *c = &m->cells[op][dt];
    if (!c->has_result || isnan(c->ratio) || c->cases == 0) continue;
    if (!*any || c->ratio > r) r = c->ratio;
    *any = 1;
  }
  return r;
}

static int op_declared(const tsr_conf_model *m, int op) {
  for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
    if (m->cells[op][dt].supported) return 1;
  }
  return 0;
}

// A selector matrix entry: Y some case with that value accepted, . every
// one declined, blank no case (or the pair not declared).
static const char *selector_word(const tsr_conf_model *m, int op, int index, int dt) {
  switch (m->selectors[op][index][dt]) {
    case 2: return "Y";
    case 1: return ".";
    default: return "";
  }
}

// 1 when every selector value with a case is declared wherever |op| is.
static int selectors_all_declared(const tsr_conf_model *m, int op) {
  for (int i = 0; i < tsr_op_selector_count(op); ++i) {
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      if (m->selectors[op][i][dt] == 1) return 0;
    }
  }
  return 1;
}

static const char *verdict_word(tsr_conf_verdict_t v) {
  switch (v) {
    case TSR_CONF_CERTIFIED: return "CERTIFIED";
    case TSR_CONF_REFUSED: return "REFUSED";
    case TSR_CONF_SKIPPED: return "SKIPPED";
    case TSR_CONF_INCOMPLETE: return "INCOMPLETE";
    default: return "NOT LOADED";
  }
}

// "stream_wait_event: cross-stream wait" -> entry "stream_wait_event",
// check "cross-stream wait".
static void check_split(const char *name, char *entry, size_t es, char *check, size_t cs) {
  const char *colon = strstr(name, ": ");
  if (colon == NULL) {
    snprintf(entry, es, "%s", name);
    snprintf(check, cs, "%s", name);
    return;
  }
  snprintf(entry, es, "%.*s", (int)(colon - name), name);
  snprintf(check, cs, "%s", colon + 2);
}

void tsr_conf_report_text(const tsr_conf_model *m, FILE *out) {
  char why[1024];
  tsr_conf_verdict_t verdict = tsr_conf_verdict(m, why, sizeof(why));
  fprintf(out, "tsr-conformance (plugin ABI %d.%d): %s, device %d\n", TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR,
          m->path, (int)m->device);
  if (m->open == TSR_CONF_OPENED || m->info_count > 0) {
    fprintf(out, "plugin   %s %s by %s, ABI %s, table %s bytes\n", tsr_conf_model_info(m, "plugin.name"),
            tsr_conf_model_info(m, "plugin.version"), tsr_conf_model_info(m, "plugin.vendor"),
            tsr_conf_model_info(m, "plugin.abi"), tsr_conf_model_info(m, "plugin.struct_size"));
    fprintf(out, "build    %s\n", tsr_conf_model_info(m, "plugin.build_info"));
    fprintf(out, "device   %s; %s; flags %s; base alignment %s\n", tsr_conf_model_info(m, "device.name"),
            tsr_conf_model_info(m, "device.memory_bytes"), tsr_conf_model_info(m, "device.flags"),
            tsr_conf_model_info(m, "device.base_alignment"));
  }
  fprintf(out, "battery  %s, seed %llu%s%s\n\n", m->full ? "full" : "quick", (unsigned long long)m->seed,
          m->filter ? ", filter " : "", m->filter ? m->filter : "");
  if (m->open != TSR_CONF_OPENED) {
    fprintf(out, "Verdict: %s — %s\n", verdict_word(verdict), why);
    return;
  }

  fprintf(out, "API contract tier\n");
  for (int i = 0; i < m->check_count; ++i) {
    const tsr_conf_check_row *r = &m->checks[i];
    const char *word = r->result == TSR_CONF_PASS ? "pass" : r->result == TSR_CONF_FAIL ? "FAIL" : "skip";
    fprintf(out, "  %-4s  %-52s %s\n", word, r->name, r->detail);
  }

  fprintf(out, "\nNumerics tier (err/tol: the largest |got - want| / tolerance; at most 1 passes)\n");
  fprintf(out, "  %-24s", "op");
  for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) fprintf(out, " %-9s", short_dtype(dt));
  fprintf(out, " %-9s %s\n", "err/tol", "note");
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    fprintf(out, "  %-24s", tsr_op_name(op));
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      fprintf(out, " %-9s", cell_word(&m->cells[op][dt], tsr_conf_op_accepts(op, dt)));
    }
    int any;
    double r = op_ratio(m, op, &any);
    char rt[32];
    ratio_text(any ? r : NAN, rt, sizeof(rt));
    const char *note = "";
    if (!op_declared(m, op)) {
      note = "unsupported";
    } else if (!tsr_oracle_covers(op)) {
      note = "skipped: no oracle yet";
    } else if (!m->op_ran[op]) {
      note = "not run (filter)";
    }
    fprintf(out, " %-9s %s\n", rt, note);
  }
  fprintf(out, "  legend: pass; pass* = passed, some cases declined by the plugin; FAIL; - = not declared by the\n"
               "  plugin; n/a = the catalogue does not define the op for that dtype; skip = could not be checked.\n");

  // Support per selector value: a plugin may implement RELU and not NEG.
  int selector_header = 0;
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    if (tsr_op_selector_count(op) == 0 || !op_declared(m, op)) continue;
    if (selector_header++ == 0) {
      fprintf(out, "\nSupport per selector value (Y: declared; .: every case declined; blank: no case)\n");
    }
    if (selectors_all_declared(m, op)) {
      int with_cases = 0;
      for (int i = 0; i < tsr_op_selector_count(op); ++i) {
        int any = 0;
        for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) any |= m->selectors[op][i][dt] != 0;
        with_cases += any;
      }
      fprintf(out, "  %-24s every value declared wherever the op is (%d of %d values have cases)\n",
              tsr_op_name(op), with_cases, tsr_op_selector_count(op));
      continue;
    }
    for (int i = 0; i < tsr_op_selector_count(op); ++i) {
      char label[64];
      snprintf(label, sizeof(label), "%s %s", tsr_op_name(op), tsr_op_selector_name(op, i));
      fprintf(out, "  %-24s", label);
      for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) fprintf(out, " %-9s", selector_word(m, op, i, dt));
      fputc('\n', out);
    }
  }

  int shown = 0;
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      const tsr_conf_cell *c = &m->cells[op][dt];
      if (!c->has_result || c->result == TSR_CONF_FAIL || (c->result == TSR_CONF_PASS && c->declined == 0)) continue;
      if (shown++ == 0) fprintf(out, "\nNot fully checked\n");
      fprintf(out, "  %s %s: %s: %s\n", tsr_op_name(op), tsr_oracle_dtype_name(dt), cell_word(c, 1), c->detail);
    }
  }

  int api_failures = 0;
  for (int i = 0; i < m->check_count; ++i) api_failures += m->checks[i].result == TSR_CONF_FAIL;
  if (api_failures + m->failure_count > 0) {
    fprintf(out, "\nFailures\n");
    for (int i = 0; i < m->check_count; ++i) {
      const tsr_conf_check_row *r = &m->checks[i];
      if (r->result != TSR_CONF_FAIL) continue;
      fprintf(out, "  %s: %s\n", r->name, r->detail);
    }
    for (int i = 0; i < m->failure_count; ++i) {
      const tsr_conf_failure_row *f = &m->failures[i];
      char rt[32];
      ratio_text(f->ratio, rt, sizeof(rt));
      fprintf(out, "  %s %s [%s] err/tol %s: %s: %s\n", op_name_text(f->op), tsr_oracle_dtype_name(f->dtype),
              f->check, rt, f->case_name, f->detail);
    }
  }
  fprintf(out, "\nVerdict: %s — %s\n", verdict_word(verdict), why);
  // One machine-readable line per reason, for scripts (the ctest checks).
  for (int i = 0; i < m->check_count; ++i) {
    const tsr_conf_check_row *r = &m->checks[i];
    if (r->result != TSR_CONF_FAIL) continue;
    char entry[128], check[128], rt[32];
    check_split(r->name, entry, sizeof(entry), check, sizeof(check));
    ratio_text(r->ratio, rt, sizeof(rt));
    fprintf(out, "refusal: op=%s check=%s dtype=- ratio=%s\n", entry, check, rt);
  }
  for (int i = 0; i < m->failure_count; ++i) {
    const tsr_conf_failure_row *f = &m->failures[i];
    char rt[32];
    ratio_text(f->ratio, rt, sizeof(rt));
    fprintf(out, "refusal: op=%s check=%s dtype=%s ratio=%s\n", op_name_text(f->op), f->check,
            tsr_oracle_dtype_name(f->dtype), rt);
  }
  fprintf(out, "time: %.1f s\n", m->seconds);
}

// --- Markdown ---------------------------------------------------------------------

static void md_escape(FILE *out, const char *text) {
  for (const char *p = text; *p; ++p) {
    if (*p == '|') {
      fputs("\\|", out);
    } else {
      fputc(*p, out);
    }
  }
}

int tsr_conf_report_markdown(const tsr_conf_model *m, const char *file) {
  FILE *out = fopen(file, "w");
  if (out == NULL) return -1;
  char why[1024];
  tsr_conf_verdict_t verdict = tsr_conf_verdict(m, why, sizeof(why));
  fprintf(out, "# Conformance report: %s\n\n", tsr_conf_model_info(m, "plugin.name")[0] ? tsr_conf_model_info(m, "plugin.name") : m->path);
  fprintf(out, "**Verdict: %s** — ", verdict_word(verdict));
  md_escape(out, why);
  fprintf(out, "\n\n| | |\n|---|---|\n| library | `%s` |\n| plugin | %s %s by %s |\n| ABI | %s |\n| build | ",
          m->path, tsr_conf_model_info(m, "plugin.name"), tsr_conf_model_info(m, "plugin.version"),
          tsr_conf_model_info(m, "plugin.vendor"), tsr_conf_model_info(m, "plugin.abi"));
  md_escape(out, tsr_conf_model_info(m, "plugin.build_info"));
  fprintf(out, " |\n| device %d | ", (int)m->device);
  md_escape(out, tsr_conf_model_info(m, "device.name"));
  fprintf(out, " (flags: %s) |\n| battery | %s, seed %llu%s%s |\n| time | %.1f s |\n\n",
          tsr_conf_model_info(m, "device.flags"), m->full ? "full" : "quick", (unsigned long long)m->seed,
          m->filter ? ", filter " : "", m->filter ? m->filter : "", m->seconds);
  if (m->open != TSR_CONF_OPENED) {
    fclose(out);
    return 0;
  }
  fprintf(out, "## API contract tier\n\n| result | check | detail |\n|---|---|---|\n");
  for (int i = 0; i < m->check_count; ++i) {
    const tsr_conf_check_row *r = &m->checks[i];
    fprintf(out, "| %s | ", r->result == TSR_CONF_PASS ? "pass" : r->result == TSR_CONF_FAIL ? "**FAIL**" : "skip");
    md_escape(out, r->name);
    fputs(" | ", out);
    md_escape(out, r->detail);
    fputs(" |\n", out);
  }
  fprintf(out, "\n## Numerics tier\n\nerr/tol is the largest |got − want| / tolerance over every compared element "
               "(at most 1 passes; docs/conformance.md explains the tolerances).\n\n| op |");
  for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) fprintf(out, " %s |", tsr_oracle_dtype_name(dt));
  fprintf(out, " err/tol | note |\n|---|");
  for (int dt = 0; dt <= TSR_DTYPE_COUNT + 1; ++dt) fprintf(out, "---|");
  fputc('\n', out);
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    fprintf(out, "| %s |", tsr_op_name(op));
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      const char *w = cell_word(&m->cells[op][dt], tsr_conf_op_accepts(op, dt));
      fprintf(out, strcmp(w, "FAIL") == 0 ? " **%s** |" : " %s |", w);
    }
    int any;
    double r = op_ratio(m, op, &any);
    char rt[32];
    ratio_text(any ? r : NAN, rt, sizeof(rt));
    const char *note = !op_declared(m, op) ? "unsupported" : !tsr_oracle_covers(op) ? "skipped: no oracle yet"
                       : !m->op_ran[op] ? "not run (filter)" : "";
    fprintf(out, " %s | %s |\n", rt, note);
  }
  fprintf(out, "\n`pass*`: passed, some cases declined by the plugin. `-`: not declared. `n/a`: not defined by the "
               "catalogue for that dtype.\n\n");
  int selector_ops = 0;
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    if (tsr_op_selector_count(op) == 0 || !op_declared(m, op)) continue;
    if (selector_ops++ == 0) {
      fprintf(out, "## Support per selector value\n\nY: some case with that value accepted; `.`: every such case "
                   "declined; blank: no case of the battery has it, or the pair is not declared.\n\n| op | value |");
      for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) fprintf(out, " %s |", tsr_oracle_dtype_name(dt));
      fprintf(out, "\n|---|---|");
      for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) fprintf(out, "---|");
      fputc('\n', out);
    }
    for (int i = 0; i < tsr_op_selector_count(op); ++i) {
      fprintf(out, "| %s | %s |", tsr_op_name(op), tsr_op_selector_name(op, i));
      for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) fprintf(out, " %s |", selector_word(m, op, i, dt));
      fputc('\n', out);
    }
  }
  if (selector_ops > 0) fputc('\n', out);
  fprintf(out, "## Cells\n\n| op | dtype | result | cases | passed | failed | declined | err/tol | detail |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      const tsr_conf_cell *c = &m->cells[op][dt];
      if (!c->has_result) continue;
      char rt[32];
      ratio_text(c->ratio, rt, sizeof(rt));
      fprintf(out, "| %s | %s | %s | %d | %d | %d | %d | %s | ", tsr_op_name(op), tsr_oracle_dtype_name(dt),
              cell_word(c, 1), c->cases, c->passed, c->failed, c->declined, rt);
      md_escape(out, c->detail);
      fputs(" |\n", out);
    }
  }
  if (m->failure_count > 0) {
    fprintf(out, "\n## Failing cases\n\n| op | dtype | check | err/tol | case | detail |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < m->failure_count; ++i) {
      const tsr_conf_failure_row *f = &m->failures[i];
      char rt[32];
      ratio_text(f->ratio, rt, sizeof(rt));
      fprintf(out, "| %s | %s | %s | %s | ", tsr_op_name(f->op), tsr_oracle_dtype_name(f->dtype), f->check, rt);
      md_escape(out, f->case_name);
      fputs(" | ", out);
      md_escape(out, f->detail);
      fputs(" |\n", out);
    }
  }
  fclose(out);
  return 0;
}

// --- JUnit ------------------------------------------------------------------------

static void xml_escape(FILE *out, const char *text) {
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p) {
    switch (*p) {
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '&': fputs("&amp;", out); break;
      case '"': fputs("&quot;", out); break;
      default:
        if (*p >= 0x20 || *p == '\n') fputc(*p, out);
    }
  }
}

int tsr_conf_report_junit(const tsr_conf_model *m, const char *file) {
  FILE *out = fopen(file, "w");
  if (out == NULL) return -1;
  int cells = 0, cell_failures = 0, cell_skips = 0, api_failures = 0, api_skips = 0;
  for (int i = 0; i < m->check_count; ++i) {
    api_failures += m->checks[i].result == TSR_CONF_FAIL;
    api_skips += m->checks[i].result == TSR_CONF_SKIP;
  }
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      const tsr_conf_cell *c = &m->cells[op][dt];
      if (!c->supported) continue;
      ++cells;
      if (c->has_result && c->result == TSR_CONF_FAIL) ++cell_failures;
      if (!c->has_result || (c->result != TSR_CONF_FAIL && c->result != TSR_CONF_PASS)) ++cell_skips;
    }
  }
  const char *plugin = tsr_conf_model_info(m, "plugin.name");
  fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"tsr-conformance\" time=\"%.3f\">\n",
          m->seconds);
  if (m->open != TSR_CONF_OPENED) {
    fprintf(out, "  <testsuite name=\"load\" tests=\"1\" failures=\"0\" skipped=\"1\">\n"
                 "    <testcase classname=\"conformance.load\" name=\"load\"><skipped message=\"");
    xml_escape(out, m->open_message);
    fprintf(out, "\"/></testcase>\n  </testsuite>\n</testsuites>\n");
    fclose(out);
    return 0;
  }
  fprintf(out, "  <testsuite name=\"%s.api\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n", plugin, m->check_count,
          api_failures, api_skips);
  for (int i = 0; i < m->check_count; ++i) {
    const tsr_conf_check_row *r = &m->checks[i];
    char entry[128], check[128];
    check_split(r->name, entry, sizeof(entry), check, sizeof(check));
    fprintf(out, "    <testcase classname=\"%s.api.", plugin);
    xml_escape(out, entry);
    fputs("\" name=\"", out);
    xml_escape(out, check);
    fputs("\">", out);
    if (r->result == TSR_CONF_FAIL) {
      fputs("<failure message=\"", out);
      xml_escape(out, r->detail);
      fputs("\"/>", out);
    } else if (r->result == TSR_CONF_SKIP) {
      fputs("<skipped message=\"", out);
      xml_escape(out, r->detail);
      fputs("\"/>", out);
    }
    fputs("</testcase>\n", out);
  }
  fprintf(out, "  </testsuite>\n  <testsuite name=\"%s.numerics\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n",
          plugin, cells, cell_failures, cell_skips);
  for (int op = 1; op < TSR_OP_COUNT; ++op) {
    for (int dt = 0; dt < TSR_DTYPE_COUNT; ++dt) {
      const tsr_conf_cell *c = &m->cells[op][dt];
      if (!c->supported) continue;
      fprintf(out, "    <testcase classname=\"%s.numerics.%s\" name=\"%s\">", plugin, tsr_op_name(op),
              tsr_oracle_dtype_name(dt));
      if (!c->has_result) {
        fputs("<skipped message=\"not run\"/>", out);
      } else if (c->result == TSR_CONF_FAIL) {
        fputs("<failure message=\"", out);
        xml_escape(out, c->detail);
        fputs("\"/>", out);
      } else if (c->result != TSR_CONF_PASS) {
        fputs("<skipped message=\"", out);
        xml_escape(out, c->detail);
        fputs("\"/>", out);
      }
      fputs("</testcase>\n", out);
    }
  }
  fputs("  </testsuite>\n</testsuites>\n", out);
  fclose(out);
  return 0;
}
