// Assertions shared by the core tests: a failing call fails the test with
// the status name and tsr_last_error(), so a red test says why.
#ifndef TESSERA_CORE_TESTS_TEST_CHECK_H_
#define TESSERA_CORE_TESTS_TEST_CHECK_H_

#include "tessera/tessera.h"

#define CHECK_OK(expr)                                                                 \
  do {                                                                                 \
    tsr_status check_status_ = (expr);                                                 \
    if (check_status_ != TSR_OK) {                                                     \
      fail_msg("%s: %s: %s", #expr, tsr_status_name(check_status_), tsr_last_error()); \
    }                                                                                  \
  } while (0)

#define CHECK_TENSOR(t)                                                \
  do {                                                                 \
    if ((t) == NULL) fail_msg("%s is NULL: %s", #t, tsr_last_error()); \
  } while (0)

#endif  // TESSERA_CORE_TESTS_TEST_CHECK_H_
