/* The runtime's thread pool (aotc_parallel_for): every index exactly once, in ranges of at least
 * the grain (or all of a range shorter than it); nested calls inline; thousands of jobs back to
 * back; and a thread that is slow does not keep its share: the others take pieces of it. */
#define _GNU_SOURCE
#include "harness.h"
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
  _Atomic int32_t *hits;
  int64_t n, grain;
  atomic_long bad_ranges, calls;
} coverage;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Each call takes a few microseconds, so that the workers have woken up before the caller has
 * taken every piece. */
static void count(void *closure, int64_t begin, int64_t end) {
  coverage *c = closure;
  atomic_fetch_add(&c->calls, 1);
  for (int64_t until = now_ns() + 3000; now_ns() < until;)
    ;
  if (begin < 0 || end > c->n || begin >= end || (end - begin < c->grain && end - begin != c->n))
    atomic_fetch_add(&c->bad_ranges, 1);
  for (int64_t i = begin; i < end && i >= 0 && i < c->n; ++i)
    atomic_fetch_add(&c->hits[i], 1);
}

static void check_coverage(aotc_exec *exec, int64_t n, int64_t grain) {
  coverage c = {calloc((size_t)n, sizeof(int32_t)), n, grain, 0, 0};
  CHECK(c.hits != NULL);
  if (!c.hits)
    return;
  aotc_parallel_for(exec, n, grain, count, &c);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    wrong += atomic_load(&c.hits[i]) != 1;
  if (wrong || atomic_load(&c.bad_ranges))
    fprintf(stderr, "n %lld grain %lld threads %d: %lld indices not run once, %ld bad ranges\n",
            (long long)n, (long long)grain, exec->num_threads, (long long)wrong,
            atomic_load(&c.bad_ranges));
  CHECK(wrong == 0 && atomic_load(&c.bad_ranges) == 0);
  free(c.hits);
}

/* A task that runs a parallel_for of its own: the pool is busy, so it runs inline. */
typedef struct {
  aotc_exec *exec;
  coverage *inner;
} nesting;

static void nested(void *closure, int64_t begin, int64_t end) {
  nesting *s = closure;
  for (int64_t i = begin; i < end; ++i)
    aotc_parallel_for(s->exec, s->inner->n, 1, count, s->inner);
}

/* Pieces take 1 ms on the calling thread and 20 ms on the worker: the caller should take most of
 * the worker's share. */
typedef struct {
  pthread_t caller;
  atomic_long on_caller;
} slow_workers;

static void sleep_off_caller(void *closure, int64_t begin, int64_t end) {
  slow_workers *s = closure;
  const int on_caller = pthread_equal(pthread_self(), s->caller);
  if (on_caller)
    atomic_fetch_add(&s->on_caller, end - begin);
  struct timespec pause = {0, (on_caller ? 1 : 20) * 1000 * 1000};
  nanosleep(&pause, NULL);
}

int main(void) {
  static const int64_t sizes[] = {1, 2, 3, 5, 17, 100, 1000, 100003};
  static const int64_t grains[] = {1, 3, 64};
  for (int32_t threads = 2; threads <= 4; ++threads) {
    aotc_pool *pool = NULL;
    CHECK(aotc_pool_create(threads, &pool) == AOTC_OK);
    if (!pool)
      continue;
    aotc_exec exec = {0};
    exec.pool = pool;
    exec.num_threads = threads;
    exec.parallel_for = aotc_parallel_for;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s)
      for (size_t g = 0; g < sizeof grains / sizeof *grains; ++g)
        check_coverage(&exec, sizes[s], grains[g]);
    /* Jobs back to back: a worker late for one must not run a piece of the next as its own. */
    for (int job = 0; job < 5000; ++job)
      check_coverage(&exec, 1 + job % 37, 1 + job % 3);
    coverage inner = {calloc(50, sizeof(int32_t)), 50, 1, 0, 0};
    nesting outer = {&exec, &inner};
    aotc_parallel_for(&exec, 8, 1, nested, &outer);
    for (int64_t i = 0; i < 50; ++i)
      CHECK(atomic_load(&inner.hits[i]) == 8);
    free(inner.hits);
    aotc_pool_destroy(pool);
  }
  /* Two threads, 16 pieces: the caller runs its eight in 8 ms while the worker sleeps through
   * its first, then takes what is left of the worker's (a static split gave it exactly its own
   * eight). */
  aotc_pool *pool = NULL;
  CHECK(aotc_pool_create(2, &pool) == AOTC_OK);
  if (pool) {
    aotc_exec exec = {0};
    exec.pool = pool;
    exec.num_threads = 2;
    slow_workers s = {pthread_self(), 0};
    aotc_parallel_for(&exec, 16, 1, sleep_off_caller, &s);
    fprintf(stderr, "the caller ran %ld of 16 pieces\n", atomic_load(&s.on_caller));
    CHECK(atomic_load(&s.on_caller) >= 12);
    aotc_pool_destroy(pool);
  }
  return harness_finish("pool_test");
}
