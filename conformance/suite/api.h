// Helpers shared by the API-tier checks (api_*.c).
#ifndef TESSERA_CONFORMANCE_SUITE_API_H_
#define TESSERA_CONFORMANCE_SUITE_API_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "suite.h"

#define TSR_CONF_PASS_CHECK(name, ...) tsr_conf_record_check(name, TSR_CONF_PASS, NAN, __VA_ARGS__)
#define TSR_CONF_FAIL_CHECK(name, ...) tsr_conf_record_check(name, TSR_CONF_FAIL, INFINITY, __VA_ARGS__)
#define TSR_CONF_SKIP_CHECK(name, ...) tsr_conf_record_check(name, TSR_CONF_SKIP, NAN, __VA_ARGS__)

// Fills |bytes| with a pattern that differs for every |seed| and position.
void tsr_conf_api_pattern(unsigned char *bytes, size_t size, uint32_t seed);

// Allocates |size| bytes on the session's device and, when |seed| is not 0,
// fills them with tsr_conf_api_pattern(seed). On failure writes why into
// |why| and returns the status.
tsr_status tsr_conf_api_buffer_create(tsr_conf_session *s, uint64_t size, uint32_t seed,
                                      tsr_plugin_buffer **out, char *why, size_t why_size);

// A case that the plugin declares, for the checks that need an op: MATMUL,
// BINARY ADD, UNARY EXP or any declared representative, in that order of
// preference. Returns 0, or -1 when the plugin declares nothing.
int tsr_conf_api_case_pick(tsr_conf_session *s, tsr_conf_case *out);

// First element index where two byte ranges differ, or -1.
int64_t tsr_conf_api_first_difference(const unsigned char *a, const unsigned char *b, size_t size);

#endif  // TESSERA_CONFORMANCE_SUITE_API_H_
