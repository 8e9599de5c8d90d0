// What tsr-conformance learns about a plugin, assembled in the parent
// process from the records its children send (suite/record.c), and the
// outputs made from it (report.c).
#ifndef TESSERA_CONFORMANCE_TOOL_MODEL_H_
#define TESSERA_CONFORMANCE_TOOL_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "suite.h"

typedef struct tsr_conf_check_row {
  char name[128];  // "streams: ordering on one stream"
  tsr_conf_result_t result;
  double ratio;    // NaN when the check has no error/tolerance
  char detail[1024];
} tsr_conf_check_row;

typedef struct tsr_conf_failure_row {
  int32_t op;
  tsr_dtype_t dtype;
  char check[64];
  double ratio;
  char case_name[256];
  char detail[1024];
} tsr_conf_failure_row;

typedef struct tsr_conf_cell {
  int asked;       // a support record arrived
  int supported;
  char reason[300];
  int has_result;  // a numerics record arrived
  tsr_conf_result_t result;
  double ratio;
  int cases, passed, failed, declined;
  char detail[1024];
} tsr_conf_cell;

typedef struct tsr_conf_info {
  char key[64];
  char value[512];
} tsr_conf_info;

typedef struct tsr_conf_model {
  const char *path;
  int32_t device;
  int full;
  uint64_t seed;
  const char *filter;
  tsr_conf_open_t open;  // how the load child fared
  char open_message[1024];
  tsr_conf_info infos[64];
  int info_count;
  tsr_conf_check_row *checks;
  int check_count, check_capacity;
  tsr_conf_failure_row *failures;
  int failure_count, failure_capacity;
  tsr_conf_cell cells[TSR_OP_COUNT][TSR_DTYPE_COUNT];
  // Per selector value of a declared (op, dtype): 0 no case of the battery
  // has that value, 1 every such case declined, 2 some case accepted.
  signed char selectors[TSR_OP_COUNT][TSR_CONF_MAX_SELECTORS][TSR_DTYPE_COUNT];
  int op_ran[TSR_OP_COUNT];
  double seconds;
  int cases_total;
} tsr_conf_model;

typedef int32_t tsr_conf_verdict_t;
enum {
  TSR_CONF_CERTIFIED = 0,
  TSR_CONF_REFUSED = 1,
  TSR_CONF_SKIPPED = 2,     // the probe says the plugin cannot run here
  TSR_CONF_VERDICT_NOT_LOADED = 3,  // not a plugin we can judge (or a usage error)
  TSR_CONF_INCOMPLETE = 4,  // nothing failed, but declared ops could not be checked
};

// Parses one record line into |m|. Returns 0, or -1 for an unknown record.
int tsr_conf_model_line(tsr_conf_model *m, const char *line);
// Adds a check (used for crashes and timeouts the parent detects).
void tsr_conf_model_check_add(tsr_conf_model *m, const char *name, tsr_conf_result_t result, double ratio,
                              const char *detail);
void tsr_conf_model_failure_add(tsr_conf_model *m, int32_t op, tsr_dtype_t dtype, const char *check, double ratio,
                                const char *case_name, const char *detail);
const char *tsr_conf_model_info(const tsr_conf_model *m, const char *key);
void tsr_conf_model_free(tsr_conf_model *m);

tsr_conf_verdict_t tsr_conf_verdict(const tsr_conf_model *m, char *why, size_t why_size);
// The exit status of tsr-conformance for a verdict.
int tsr_conf_verdict_exit_code(tsr_conf_verdict_t verdict);

// Writes the report: plain text (stdout), Markdown, JUnit XML.
void tsr_conf_report_text(const tsr_conf_model *m, FILE *out);
int tsr_conf_report_markdown(const tsr_conf_model *m, const char *file);
int tsr_conf_report_junit(const tsr_conf_model *m, const char *file);

#endif  // TESSERA_CONFORMANCE_TOOL_MODEL_H_
