/* The thread pool behind aotc_exec.parallel_for: workers claim the chunks of one job at a time
 * from a single atomic word, spin briefly between jobs, then sleep on a condition variable. */
#include "internal.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* Workers spin this long for the next job before sleeping: small models run many short jobs. */
#define SPIN_NS 30000

/* The claim word: job generation (32 bits) | chunk count (16) | next unclaimed chunk (16).
 * A worker reads the job's fields only after a compare-exchange on this word claimed a chunk of
 * the current generation, so it never sees a half-published job. */
#define CLAIM_GEN(w) ((uint32_t)((w) >> 32))
#define CLAIM_CHUNKS(w) ((uint32_t)(((w) >> 16) & 0xffff))
#define CLAIM_NEXT(w) ((uint32_t)((w)&0xffff))

struct aotc_pool {
  int32_t num_threads; /* the caller's included */
  int32_t num_workers;
  pthread_t *workers;
  _Atomic uint64_t claim;
  _Atomic int64_t done;
  atomic_int busy;
  atomic_int stop;
  atomic_int sleepers;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  /* The current job, written by its caller before the claim word publishes it. */
  aotc_task_fn fn;
  void *closure;
  int64_t base, rem;
};

/* Set on pool threads and on a caller while it runs chunks: nested parallel_fors run inline. */
/* initial-exec: a few bytes of static TLS, reached without __tls_get_addr (see error.c). */
static __attribute__((tls_model("initial-exec"))) _Thread_local int in_task;

static inline void cpu_relax(void) { __asm__ volatile("pause"); }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Claims and runs chunks of the job `w` belongs to until none is left. */
static void run_chunks(aotc_pool *pool, uint64_t w) {
  const uint32_t gen = CLAIM_GEN(w);
  for (;;) {
    if (CLAIM_GEN(w) != gen || CLAIM_NEXT(w) >= CLAIM_CHUNKS(w))
      return;
    if (!atomic_compare_exchange_weak_explicit(&pool->claim, &w, w + 1, memory_order_acq_rel,
                                               memory_order_acquire))
      continue;
    const int64_t i = CLAIM_NEXT(w);
    const int64_t begin = i * pool->base + (i < pool->rem ? i : pool->rem);
    const int64_t end = begin + pool->base + (i < pool->rem ? 1 : 0);
    pool->fn(pool->closure, begin, end);
    atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
    w = w + 1;
  }
}

static void *worker_main(void *arg) {
  aotc_pool *pool = arg;
  in_task = 1;
  uint32_t seen = 0;
  for (;;) {
    if (atomic_load_explicit(&pool->stop, memory_order_acquire))
      return NULL;
    uint64_t w = atomic_load_explicit(&pool->claim, memory_order_acquire);
    if (CLAIM_GEN(w) != seen) {
      seen = CLAIM_GEN(w);
      run_chunks(pool, w);
      continue;
    }
    const int64_t deadline = now_ns() + SPIN_NS;
    int changed = 0;
    for (int spins = 0; !changed; ++spins) {
      cpu_relax();
      changed = CLAIM_GEN(atomic_load_explicit(&pool->claim, memory_order_relaxed)) != seen ||
                atomic_load_explicit(&pool->stop, memory_order_relaxed);
      if ((spins & 127) == 127 && now_ns() > deadline)
        break;
    }
    if (changed)
      continue;
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add(&pool->sleepers, 1);
    while (CLAIM_GEN(atomic_load(&pool->claim)) == seen && !atomic_load(&pool->stop))
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
  if (!pool->workers) {
    free(pool);
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: out of memory");
  }
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->wake, NULL);
  /* Workers must not take the process's signals: block them all while they are created. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = 0;
  for (int32_t i = 0; i + 1 < num_threads; ++i) {
    err = pthread_create(&pool->workers[i], NULL, worker_main, pool);
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
  free(pool);
}

void aotc_parallel_for(aotc_exec *exec, int64_t n, int64_t grain, aotc_task_fn fn, void *closure) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  aotc_pool *pool = exec->pool;
  int64_t chunks = pool ? n / grain : 1;
  if (pool && chunks > pool->num_threads)
    chunks = pool->num_threads;
  int expected = 0;
  /* A busy pool belongs to another thread's run: running inline is correct and cannot
   * deadlock, which waiting for the pool could (nested calls). */
  if (chunks <= 1 || in_task ||
      !atomic_compare_exchange_strong_explicit(&pool->busy, &expected, 1, memory_order_acquire,
                                               memory_order_relaxed)) {
    fn(closure, 0, n);
    return;
  }
  pool->fn = fn;
  pool->closure = closure;
  pool->base = n / chunks;
  pool->rem = n % chunks;
  atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
  const uint64_t gen = (uint64_t)(CLAIM_GEN(atomic_load(&pool->claim)) + 1u);
  const uint64_t w = gen << 32 | (uint64_t)chunks << 16;
  atomic_store(&pool->claim, w);
  if (atomic_load(&pool->sleepers) > 0) {
    pthread_mutex_lock(&pool->lock);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
  }
  in_task = 1;
  run_chunks(pool, w);
  in_task = 0;
  for (int spins = 0; atomic_load_explicit(&pool->done, memory_order_acquire) < chunks; ++spins) {
    if (spins < 2000)
      cpu_relax();
    else
      sched_yield();
  }
  atomic_store_explicit(&pool->busy, 0, memory_order_release);
}
