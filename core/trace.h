// Op tracing, driven by TSR_TRACE:
//   unset, "" or "0"  off;
//   "1"               one line per op on stderr:
//                     "tessera trace: <device> <plugin> <op> engine=<engine> <time> us";
//   anything else     a file path that receives the Chrome trace event format
//                     (a JSON array of "ph":"X" events, one per op, and "ph":"C"
//                     memory counters), complete and valid after
//                     tsr_trace_shutdown. Open it in chrome://tracing or Perfetto.
// When off, the cost at an op is one relaxed atomic load (tsr_trace_enabled).
#ifndef TESSERA_CORE_TRACE_H_
#define TESSERA_CORE_TRACE_H_

#include <stdint.h>

#include "tessera/abi.h"

// Reads TSR_TRACE and configures tracing, once per process; later calls do
// nothing. Thread-safe.
void tsr_trace_init(void);

// Switches tracing to |spec| (same values as TSR_TRACE; NULL is off),
// finishing a trace file that was open. A file that cannot be opened leaves
// tracing off and logs a warning naming the path and the reason. Used by
// tsr_trace_init and by tests. Thread-safe.
void tsr_trace_configure(const char *spec);

// Nonzero when tracing is on. One relaxed atomic load. Thread-safe.
int tsr_trace_enabled(void);

// CLOCK_MONOTONIC in nanoseconds; the clock tsr_trace_op expects. Thread-safe.
uint64_t tsr_trace_now_ns(void);

// Records one op that ran from |start_ns| to |end_ns| on the calling thread.
// The strings are copied out before it returns; NULL prints as "?". Does
// nothing when tracing is off. Thread-safe.
void tsr_trace_op(const char *device, const char *plugin, const char *op, const char *engine,
                  uint64_t start_ns, uint64_t end_ns);

// Records a summary of |device|'s allocator (a line, or a counter event).
// Reads only the fields |stats|->struct_size covers. Does nothing when tracing
// is off or |stats| is NULL. Thread-safe.
void tsr_trace_memory(const char *device, const tsr_allocator_stats *stats);

// Ends tracing for the process: closes the JSON array, flushes and closes the
// file. Idempotent; afterwards tracing is off. Thread-safe.
void tsr_trace_shutdown(void);

#endif  // TESSERA_CORE_TRACE_H_
