// Fork-join thread pool. Each worker owns a futex word the dispatching thread
// bumps to hand it a job, so a job wakes only the workers it needs and a
// sleeping worker costs one FUTEX_WAKE. Waiting is spin-then-sleep on both
// sides: spinning keeps back-to-back jobs cheap, sleeping keeps an idle pool
// off the CPU that oneDNN's OpenMP threads want.
#include "thread_pool.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

#define TSR_CACHE_LINE 64
// More chunks than threads evens out loops whose cost varies along the index
// (triangular loops, ragged rows); more than a few only adds calls.
#define TSR_THREAD_POOL_CHUNKS_PER_THREAD 4
// How long a waiter spins before sleeping. Long enough to cover the gap
// between the back-to-back ops of an eager training step, short enough that
// a pool left idle gives its cores back within a scheduler tick.
#define TSR_THREAD_POOL_SPIN_NS 50000u
// The clock is read (and the CPU yielded) once per this many pause loops.
#define TSR_THREAD_POOL_SPINS_PER_CHECK 64u

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) && ATOMIC_INT_LOCK_FREE == 2,
               "futex words must be plain lock-free 32-bit integers");

typedef struct tsr_pool_worker {
  // Futex word: the dispatcher stores a new job sequence number here.
  alignas(TSR_CACHE_LINE) _Atomic uint32_t job_seq;
  // 1 while the worker is in (or about to enter) FUTEX_WAIT on job_seq.
  _Atomic uint32_t sleeping;
  int32_t index;
  pthread_t thread;
  struct tsr_thread_pool *pool;
} tsr_pool_worker;

struct tsr_thread_pool {
  int32_t num_threads;
  int32_t started_workers;
  tsr_pool_worker *workers;  // [num_threads]; slot 0 is the caller and unused
  // 1 while a dispatch owns the workers. Try-acquired, never waited for.
  alignas(TSR_CACHE_LINE) atomic_int busy;
  // The current job. Written by the dispatcher while it holds |busy|, before
  // it bumps job_seq (release); read by workers after they see it (acquire).
  alignas(TSR_CACHE_LINE) tsr_parallel_fn fn;
  void *arg;
  int64_t count;
  int64_t num_chunks;
  int stopping;
  // Workers of the current job that have not finished; futex word of the
  // dispatcher's wait.
  alignas(TSR_CACHE_LINE) _Atomic uint32_t pending;
  _Atomic uint32_t dispatcher_sleeping;
};

static inline void tsr_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  atomic_signal_fence(memory_order_seq_cst);
#endif
}

static uint64_t tsr_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// Sleeps while *word == expected. Returns early on a wake, a signal or a
// changed value; callers re-check.
static void tsr_futex_wait(_Atomic uint32_t *word, uint32_t expected) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void tsr_futex_wake_all(_Atomic uint32_t *word) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

// Spins up to TSR_THREAD_POOL_SPIN_NS for *word to leave |old|. Returns 1 and
// the new value, or 0 when the window ran out.
static int tsr_spin_for_change(_Atomic uint32_t *word, uint32_t old, uint32_t *out_value) {
  uint64_t deadline = 0;
  for (uint32_t i = 1;; ++i) {
    uint32_t value = atomic_load_explicit(word, memory_order_acquire);
    if (value != old) {
      *out_value = value;
      return 1;
    }
    if (i % TSR_THREAD_POOL_SPINS_PER_CHECK == 0) {
      uint64_t now = tsr_monotonic_ns();
      if (deadline == 0) {
        deadline = now + TSR_THREAD_POOL_SPIN_NS;
      } else if (now >= deadline) {
        return 0;
      }
      // On a loaded machine the thread we wait for may need this core.
      sched_yield();
    }
    tsr_cpu_relax();
  }
}

static void tsr_chunk_bounds(int64_t count, int64_t num_chunks, int64_t chunk, int64_t *out_begin,
                             int64_t *out_end) {
  int64_t base = count / num_chunks;
  int64_t extra = count % num_chunks;
  *out_begin = chunk * base + (chunk < extra ? chunk : extra);
  *out_end = *out_begin + base + (chunk < extra ? 1 : 0);
}

// Runs chunks first, first + step, ... of the job as |thread_index|.
static void tsr_chunks_run(tsr_parallel_fn fn, void *arg, int64_t count, int64_t num_chunks,
                           int64_t first, int64_t step, int32_t thread_index) {
  for (int64_t chunk = first; chunk < num_chunks; chunk += step) {
    int64_t begin, end;
    tsr_chunk_bounds(count, num_chunks, chunk, &begin, &end);
    fn(arg, begin, end, thread_index);
  }
}

// Returns the next job sequence number different from |seen|, sleeping on
// the futex once spinning has not found one.
static uint32_t tsr_worker_job_wait(tsr_pool_worker *worker, uint32_t seen) {
  uint32_t seq;
  if (tsr_spin_for_change(&worker->job_seq, seen, &seq))
    return seq;
  // seq_cst store then load, against the dispatcher's seq_cst store of
  // job_seq then load of |sleeping|: one of the two sees the other, so a
  // job is never posted to a worker that sleeps without being woken.
  atomic_store_explicit(&worker->sleeping, 1, memory_order_seq_cst);
  while ((seq = atomic_load_explicit(&worker->job_seq, memory_order_seq_cst)) == seen) {
    tsr_futex_wait(&worker->job_seq, seen);
  }
  atomic_store_explicit(&worker->sleeping, 0, memory_order_relaxed);
  return seq;
}

static void *tsr_worker_main(void *opaque) {
  tsr_pool_worker *worker = opaque;
  tsr_thread_pool *pool = worker->pool;
  uint32_t seen = 0;
  for (;;) {
    seen = tsr_worker_job_wait(worker, seen);
    if (pool->stopping)
      break;
    tsr_chunks_run(pool->fn, pool->arg, pool->count, pool->num_chunks, worker->index,
                   pool->num_threads, worker->index);
    // The last worker out wakes a dispatcher that stopped spinning. Same
    // seq_cst pairing as in tsr_worker_job_wait, mirrored.
    if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_seq_cst) == 1 &&
        atomic_load_explicit(&pool->dispatcher_sleeping, memory_order_seq_cst)) {
      tsr_futex_wake_all(&pool->pending);
    }
  }
  return NULL;
}

// Hands the current job to |worker|. Only the dispatcher writes job_seq, and
// the worker has consumed the previous value (the dispatcher waited for it),
// so a plain increment is always a value the worker has not seen, wrapping
// included.
static void tsr_worker_post(tsr_pool_worker *worker) {
  uint32_t seq = atomic_load_explicit(&worker->job_seq, memory_order_relaxed) + 1;
  atomic_store_explicit(&worker->job_seq, seq, memory_order_seq_cst);
  if (atomic_load_explicit(&worker->sleeping, memory_order_seq_cst)) {
    tsr_futex_wake_all(&worker->job_seq);
  }
}

static void tsr_dispatcher_wait(tsr_thread_pool *pool) {
  uint32_t left = atomic_load_explicit(&pool->pending, memory_order_acquire);
  while (left != 0) {
    if (!tsr_spin_for_change(&pool->pending, left, &left))
      break;
  }
  if (left == 0)
    return;
  atomic_store_explicit(&pool->dispatcher_sleeping, 1, memory_order_seq_cst);
  while ((left = atomic_load_explicit(&pool->pending, memory_order_seq_cst)) != 0) {
    tsr_futex_wait(&pool->pending, left);
  }
  atomic_store_explicit(&pool->dispatcher_sleeping, 0, memory_order_relaxed);
}

// Stops and joins the started workers and frees everything. The pool is idle.
static void tsr_pool_free(tsr_thread_pool *pool) {
  pool->stopping = 1;
  for (int32_t i = 1; i <= pool->started_workers; ++i) tsr_worker_post(&pool->workers[i]);
  for (int32_t i = 1; i <= pool->started_workers; ++i) {
    pthread_join(pool->workers[i].thread, NULL);
  }
  free(pool->workers);
  free(pool);
}

static size_t tsr_round_up(size_t bytes, size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

tsr_status tsr_thread_pool_create(int32_t num_threads, tsr_thread_pool **out_pool) {
  if (out_pool == NULL) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "thread_pool_create: out_pool is NULL");
  }
  *out_pool = NULL;
  if (num_threads < 1 || num_threads > TSR_THREAD_POOL_MAX_THREADS) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "thread_pool_create: num_threads is %d, expected 1..%d", (int)num_threads,
                         TSR_THREAD_POOL_MAX_THREADS);
  }
  tsr_thread_pool *pool =
      aligned_alloc(TSR_CACHE_LINE, tsr_round_up(sizeof(tsr_thread_pool), TSR_CACHE_LINE));
  size_t worker_bytes = sizeof(tsr_pool_worker) * (size_t)num_threads;
  tsr_pool_worker *workers = aligned_alloc(TSR_CACHE_LINE, worker_bytes);
  if (pool == NULL || workers == NULL) {
    free(pool);
    free(workers);
    return tsr_error_set(TSR_OUT_OF_MEMORY, "thread_pool_create: %zu bytes for %d threads",
                         sizeof(tsr_thread_pool) + worker_bytes, (int)num_threads);
  }
  memset(pool, 0, sizeof(*pool));
  memset(workers, 0, worker_bytes);
  pool->num_threads = num_threads;
  pool->workers = workers;
  atomic_init(&pool->busy, 0);
  atomic_init(&pool->pending, 0);
  atomic_init(&pool->dispatcher_sleeping, 0);
  for (int32_t i = 0; i < num_threads; ++i) {
    atomic_init(&workers[i].job_seq, 0);
    atomic_init(&workers[i].sleeping, 0);
    workers[i].index = i;
    workers[i].pool = pool;
  }

  // Workers inherit a full signal mask so that the application's handlers
  // run on the application's threads, never in the middle of a kernel.
  sigset_t all_signals, old_mask;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_SETMASK, &all_signals, &old_mask);
  int error = 0;
  for (int32_t i = 1; i < num_threads; ++i) {
    error = pthread_create(&workers[i].thread, NULL, tsr_worker_main, &workers[i]);
    if (error != 0)
      break;
    pool->started_workers = i;
    char name[32];  // "tessera-1023" fits the kernel's 16 bytes
    snprintf(name, sizeof(name), "tessera-%d", (int)i);
    pthread_setname_np(workers[i].thread, name);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, NULL);

  if (error != 0) {
    int32_t started = pool->started_workers;
    tsr_pool_free(pool);
    char reason[128];
    const char *text = strerror_r(error, reason, sizeof(reason));
    return tsr_error_set(error == EAGAIN || error == ENOMEM ? TSR_OUT_OF_MEMORY : TSR_INTERNAL,
                         "thread_pool_create: pthread_create failed for worker %d of %d: %s",
                         (int)started + 1, (int)num_threads - 1, text);
  }
  *out_pool = pool;
  return TSR_OK;
}

void tsr_thread_pool_destroy(tsr_thread_pool *pool) {
  if (pool == NULL)
    return;
  tsr_pool_free(pool);
}

int32_t tsr_thread_pool_thread_count(const tsr_thread_pool *pool) {
  return pool == NULL ? 0 : pool->num_threads;
}

tsr_status tsr_thread_pool_parallel_for(tsr_thread_pool *pool, int64_t count, int64_t grain,
                                        tsr_parallel_fn fn, void *arg) {
  if (pool == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "parallel_for: pool is NULL");
  if (fn == NULL)
    return tsr_error_set(TSR_INVALID_ARGUMENT, "parallel_for: fn is NULL");
  if (count < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "parallel_for: count is %lld, expected >= 0",
                         (long long)count);
  }
  if (grain < 0) {
    return tsr_error_set(TSR_INVALID_ARGUMENT, "parallel_for: grain is %lld, expected >= 0",
                         (long long)grain);
  }
  if (count == 0)
    return TSR_OK;
  if (grain == 0)
    grain = 1;
  int32_t num_threads = pool->num_threads;
  if (num_threads == 1 || count <= grain) {
    fn(arg, 0, count, 0);
    return TSR_OK;
  }
  int64_t num_chunks = count / grain;
  int64_t max_chunks = (int64_t)num_threads * TSR_THREAD_POOL_CHUNKS_PER_THREAD;
  if (num_chunks > max_chunks)
    num_chunks = max_chunks;
  if (num_chunks == 1) {
    fn(arg, 0, count, 0);
    return TSR_OK;
  }
  // Nested in a chunk, or another thread's job is running: waiting could
  // deadlock (nested) or stall, so run the same split here instead.
  if (atomic_load_explicit(&pool->busy, memory_order_relaxed) != 0 ||
      atomic_exchange_explicit(&pool->busy, 1, memory_order_acquire) != 0) {
    tsr_chunks_run(fn, arg, count, num_chunks, 0, 1, 0);
    return TSR_OK;
  }

  int32_t active = num_chunks < num_threads ? (int32_t)num_chunks : num_threads;
  pool->fn = fn;
  pool->arg = arg;
  pool->count = count;
  pool->num_chunks = num_chunks;
  atomic_store_explicit(&pool->pending, (uint32_t)(active - 1), memory_order_relaxed);
  for (int32_t i = 1; i < active; ++i) tsr_worker_post(&pool->workers[i]);

  tsr_chunks_run(fn, arg, count, num_chunks, 0, num_threads, 0);
  tsr_dispatcher_wait(pool);
  atomic_store_explicit(&pool->busy, 0, memory_order_release);
  return TSR_OK;
}
