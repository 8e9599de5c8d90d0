// The process's thread pool: fork-join parallel loops for the core and, through
// the host table's parallel_for, for plugins.
//
// A pool of N threads runs N - 1 workers; the calling thread takes part as
// thread_index 0. Workers spin briefly after a job so back-to-back jobs start
// fast, then sleep in the kernel so an idle process uses no CPU and leaves the
// cores to oneDNN's OpenMP threads (DESIGN.md section 5.3).
//
// How [0, count) is split depends only on count, grain and the thread count
// T, never on timing. There is one chunk when T is 1 or count <= grain, else
// n = min(count / grain, 4 * T) chunks; chunk c covers [b(c), b(c + 1)) with
//   b(c) = c * (count / n) + min(c, count % n)
// and runs on thread_index c % T, the chunks of one thread in increasing
// order. A call that finds the pool busy (nested inside a chunk, or racing
// another thread) runs the same chunks in order on the calling thread, all as
// thread_index 0. So a loop that combines results per chunk gives the same
// bits every time for a given thread count.
#ifndef TESSERA_CORE_THREAD_POOL_H_
#define TESSERA_CORE_THREAD_POOL_H_

#include <stdint.h>

#include "tessera/abi.h"

// Largest pool tsr_thread_pool_create accepts.
#define TSR_THREAD_POOL_MAX_THREADS 1024

typedef struct tsr_thread_pool tsr_thread_pool;

// Creates a pool of |num_threads| (1..TSR_THREAD_POOL_MAX_THREADS, counting
// the caller) and starts its num_threads - 1 workers. The pool is owned by
// the caller and ends with tsr_thread_pool_destroy. Thread-safe.
tsr_status tsr_thread_pool_create(int32_t num_threads, tsr_thread_pool **out_pool);

// Stops and joins the workers and frees |pool| (NULL is ignored). The pool
// must be idle: no parallel_for running on it. Not thread-safe with other
// calls on |pool|.
void tsr_thread_pool_destroy(tsr_thread_pool *pool);

// Threads of |pool| including the caller; 0 for NULL. Thread-safe.
int32_t tsr_thread_pool_thread_count(const tsr_thread_pool *pool);

// Runs fn(arg, begin, end, thread_index) over [0, |count|) split as described
// above into chunks of at least |grain| elements (grain 0 counts as 1) and
// returns when every chunk has returned.
// thread_index < tsr_thread_pool_thread_count(pool) and no two chunks running
// at once within one call share it; fn may be called several times with the
// same thread_index. count <= grain, or a pool of one thread, calls fn once
// inline. The dispatch itself allocates nothing and takes no lock.
// Thread-safe: a nested call, or a call while another thread uses the pool,
// runs serially on the calling thread without waiting for the pool.
tsr_status tsr_thread_pool_parallel_for(tsr_thread_pool *pool, int64_t count, int64_t grain,
                                        tsr_parallel_fn fn, void *arg);

#endif  // TESSERA_CORE_THREAD_POOL_H_
