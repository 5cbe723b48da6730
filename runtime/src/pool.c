/* The thread pool behind aotc_exec.parallel_for. A job's indices are cut into pieces of at
 * least `grain`; thread t (the caller is 0, worker i is i + 1) owns the t-th contiguous share
 * of them and runs it front to back, as a static split would, so that it keeps the parts of the
 * data it touched in the job before. A thread done with its share takes pieces from the back of
 * the others' shares: a thread that is descheduled or slowed (a vCPU whose host core is busy)
 * no longer holds the whole job up, nor does a worker still waking up. Workers spin briefly
 * between jobs, then sleep on a condition variable. */
#include "internal.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* Workers spin this long for the next job before sleeping: small models run many short jobs. */
#define SPIN_NS 30000
/* Pieces per thread at most: enough to even out a slow thread, few enough that taking them
 * costs nothing beside their work. */
#define PIECES_PER_THREAD 8

/* A share's word: job generation (24 bits) | next piece from the front (20) | end of the pieces
 * not yet taken from the back (20). A thread reads the job's fields only after a
 * compare-exchange on such a word took a piece of the current generation, so it never sees a
 * half-published job. */
#define SHARE_GEN(w) ((uint32_t)((w) >> 40))
#define SHARE_FRONT(w) ((uint32_t)(((w) >> 20) & 0xfffff))
#define SHARE_BACK(w) ((uint32_t)((w)&0xfffff))
#define SHARE_WORD(gen, front, back)                                                               \
  ((uint64_t)((gen)&0xffffff) << 40 | (uint64_t)(front) << 20 | (uint64_t)(back))
#define MAX_PIECES 0xfffff

/* One share per cache line: the owner's claims do not slow the others'. */
typedef struct {
  _Alignas(64) _Atomic uint64_t word;
} aotc_share;

struct aotc_pool {
  int32_t num_threads; /* the caller's included */
  int32_t num_workers;
  pthread_t *workers;
  aotc_share *shares;      /* num_threads of them */
  struct aotc_worker *ids; /* num_threads - 1: worker i's pool and share */
  _Atomic uint32_t generation;
  _Atomic int64_t done; /* pieces of the current job finished */
  atomic_int busy;
  atomic_int stop;
  atomic_int sleepers;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  /* The current job, written by its caller before the shares publish it. */
  aotc_task_fn fn;
  void *closure;
  int64_t base, rem; /* piece i is base + (i < rem) indices long */
};

typedef struct aotc_worker {
  aotc_pool *pool;
  int32_t index; /* this worker's share */
} aotc_worker;

/* Set on pool threads and on a caller while it runs pieces: nested parallel_fors run inline. */
/* initial-exec: a few bytes of static TLS, reached without __tls_get_addr (see error.c). */
static __attribute__((tls_model("initial-exec"))) _Thread_local int in_task;

static inline void cpu_relax(void) { __asm__ volatile("pause"); }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Takes a piece of job `gen` from the front of `share` (the owner) or from its back: its index,
 * or -1 when the share has none left or belongs to another job. */
static int64_t take(aotc_share *share, uint32_t gen, int from_front) {
  uint64_t w = atomic_load_explicit(&share->word, memory_order_acquire);
  for (;;) {
    const uint32_t front = SHARE_FRONT(w), back = SHARE_BACK(w);
    if (SHARE_GEN(w) != (gen & 0xffffff) || front >= back)
      return -1;
    const uint64_t next =
        from_front ? SHARE_WORD(gen, front + 1, back) : SHARE_WORD(gen, front, back - 1);
    if (atomic_compare_exchange_weak_explicit(&share->word, &w, next, memory_order_acq_rel,
                                              memory_order_acquire))
      return from_front ? (int64_t)front : (int64_t)back - 1;
  }
}

static void run_piece(aotc_pool *pool, int64_t piece) {
  const int64_t begin = piece * pool->base + (piece < pool->rem ? piece : pool->rem);
  const int64_t end = begin + pool->base + (piece < pool->rem ? 1 : 0);
  pool->fn(pool->closure, begin, end);
}

/* Runs thread `self`'s share of job `gen`, then whatever is left of the others' shares; counts
 * the pieces it ran into `done` once, at the end (one write to the shared line a job). */
static void run_job(aotc_pool *pool, uint32_t gen, int32_t self) {
  int64_t ran = 0;
  for (int64_t piece; (piece = take(&pool->shares[self], gen, 1)) >= 0; ++ran)
    run_piece(pool, piece);
  for (int32_t k = 1; k < pool->num_threads; ++k) {
    aotc_share *victim = &pool->shares[(self + k) % pool->num_threads];
    for (int64_t piece; (piece = take(victim, gen, 0)) >= 0; ++ran)
      run_piece(pool, piece);
  }
  if (ran)
    atomic_fetch_add_explicit(&pool->done, ran, memory_order_release);
}

static void *worker_main(void *arg) {
  aotc_worker *self = arg;
  aotc_pool *pool = self->pool;
  in_task = 1;
  uint32_t seen = 0;
  for (;;) {
    if (atomic_load_explicit(&pool->stop, memory_order_acquire))
      return NULL;
    const uint32_t gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
    if (gen != seen) {
      seen = gen;
      run_job(pool, gen, self->index);
      continue;
    }
    const int64_t deadline = now_ns() + SPIN_NS;
    int changed = 0;
    for (int spins = 0; !changed; ++spins) {
      cpu_relax();
      changed = atomic_load_explicit(&pool->generation, memory_order_relaxed) != seen ||
                atomic_load_explicit(&pool->stop, memory_order_relaxed);
      if ((spins & 127) == 127 && now_ns() > deadline)
        break;
    }
    if (changed)
      continue;
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add(&pool->sleepers, 1);
    while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop))
      pthread_cond_wait(&pool->wake, &pool->lock);
    atomic_fetch_sub(&pool->sleepers, 1);
    pthread_mutex_unlock(&pool->lock);
  }
}

aotc_status aotc_pool_create(int32_t num_threads, aotc_pool **out_pool) {
  *out_pool = NULL;
  aotc_pool *pool = calloc(1, sizeof *pool);
  if (!pool)
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: out of memory");
  pool->num_threads = num_threads;
  pool->workers = calloc((size_t)num_threads, sizeof(pthread_t));
  pool->shares = aotc_aligned_alloc((uint64_t)num_threads * sizeof(aotc_share));
  pool->ids = calloc((size_t)num_threads, sizeof(aotc_worker));
  if (!pool->workers || !pool->shares || !pool->ids) {
    free(pool->workers);
    free(pool->shares);
    free(pool->ids);
    free(pool);
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: out of memory");
  }
  for (int32_t t = 0; t < num_threads; ++t)
    atomic_init(&pool->shares[t].word, 0);
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->wake, NULL);
  /* Workers must not take the process's signals: block them all while they are created. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = 0;
  for (int32_t i = 0; i + 1 < num_threads; ++i) {
    pool->ids[i] = (aotc_worker){pool, i + 1};
    err = pthread_create(&pool->workers[i], NULL, worker_main, &pool->ids[i]);
    if (err)
      break;
    pool->num_workers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) {
    const int32_t started = pool->num_workers;
    aotc_pool_destroy(pool);
    return aotc_fail(AOTC_ERROR_RESOURCE,
                     "aotc_model_create: could not start thread %d of %d (error %d)",
                     (int)started + 2, (int)num_threads, err);
  }
  *out_pool = pool;
  return AOTC_OK;
}

void aotc_pool_destroy(aotc_pool *pool) {
  if (!pool)
    return;
  pthread_mutex_lock(&pool->lock);
  atomic_store(&pool->stop, 1);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int32_t i = 0; i < pool->num_workers; ++i)
    pthread_join(pool->workers[i], NULL);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->lock);
  free(pool->workers);
  free(pool->shares);
  free(pool->ids);
  free(pool);
}

void aotc_parallel_for(aotc_exec *exec, int64_t n, int64_t grain, aotc_task_fn fn, void *closure) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  aotc_pool *pool = exec->pool;
  int expected = 0;
  /* A busy pool belongs to another thread's run: running inline is correct and cannot
   * deadlock, which waiting for the pool could (nested calls). */
  if (!pool || n / grain <= 1 || in_task ||
      !atomic_compare_exchange_strong_explicit(&pool->busy, &expected, 1, memory_order_acquire,
                                               memory_order_relaxed)) {
    fn(closure, 0, n);
    return;
  }
  /* Pieces of at least `grain` indices (the last one too), at most PIECES_PER_THREAD a thread. */
  const int64_t threads = pool->num_threads;
  int64_t pieces = n / grain;
  if (pieces > threads * PIECES_PER_THREAD)
    pieces = threads * PIECES_PER_THREAD;
  if (pieces > MAX_PIECES)
    pieces = MAX_PIECES;
  pool->fn = fn;
  pool->closure = closure;
  pool->base = n / pieces;
  pool->rem = n % pieces;
  atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
  const uint32_t gen = atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1u;
  for (int64_t t = 0; t < threads; ++t)
    atomic_store_explicit(&pool->shares[t].word,
                          SHARE_WORD(gen, pieces * t / threads, pieces * (t + 1) / threads),
                          memory_order_release);
  atomic_store_explicit(&pool->generation, gen, memory_order_release);
  if (atomic_load(&pool->sleepers) > 0) {
    pthread_mutex_lock(&pool->lock);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
  }
  in_task = 1;
  run_job(pool, gen, 0);
  in_task = 0;
  for (int spins = 0; atomic_load_explicit(&pool->done, memory_order_acquire) < pieces; ++spins) {
    if (spins < 2000)
      cpu_relax();
    else
      sched_yield();
  }
  atomic_store_explicit(&pool->busy, 0, memory_order_release);
}
