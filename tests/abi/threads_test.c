/* Eight threads share one model handle for about two seconds with random sizes and entries;
 * every result must be bitwise equal to the same run on a single-threaded handle. */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define NUM_CALLERS 8
#define SECONDS 2.0

static aotc_model *shared, *reference;
static atomic_long mismatches, failures, runs;
static uint64_t base_seed;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs one entry on both handles: the shared one into a runtime or caller buffer. */
static void run_both(int32_t entry, const aotc_tensor *in, size_t n_in, size_t out_bytes,
                     int caller_buffer, void *buffer) {
  aotc_tensor got = make_tensor(caller_buffer ? buffer : NULL, 0, 0, NULL);
  got.size_bytes = caller_buffer ? out_bytes : 0;
  aotc_tensor want = make_tensor(NULL, 0, 0, NULL);
  if (aotc_model_run(shared, entry, in, n_in, &got, 1) != AOTC_OK ||
      aotc_model_run(reference, entry, in, n_in, &want, 1) != AOTC_OK) {
    fprintf(stderr, "run failed: %s\n", aotc_last_error());
    atomic_fetch_add(&failures, 1);
  } else if (got.size_bytes < out_bytes || want.size_bytes != out_bytes ||
             memcmp(got.data, want.data, out_bytes) != 0) {
    atomic_fetch_add(&mismatches, 1);
  }
  atomic_fetch_add(&runs, 1);
  aotc_tensor_release(&got);
  aotc_tensor_release(&want);
}

static void *caller(void *arg) {
  uint64_t rng = base_seed + (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull;
  float *x = malloc(sizeof(float) * 512 * 4), *buffer = malloc(sizeof(float) * 512 * 4);
  int32_t *ix = malloc(sizeof(int32_t) * 100000), *ibuffer = malloc(sizeof(int32_t) * 100000);
  const double end = now() + SECONDS;
  while (now() < end) {
    const int caller_buffer = (int)rng_range(&rng, 0, 1);
    if (rng_range(&rng, 0, 3) != 0) {
      const int64_t batch = rng_range(&rng, 1, 512);
      for (int64_t i = 0; i < batch * 4; ++i)
        x[i] = rng_float(&rng);
      const int64_t shape[] = {batch, 4};
      aotc_tensor in = make_tensor(x, AOTC_DTYPE_F32, 2, shape);
      run_both(0, &in, 1, (size_t)batch * 16, caller_buffer, buffer);
    } else {
      const int64_t k = rng_range(&rng, 1, 100000);
      for (int64_t i = 0; i < k; ++i)
        ix[i] = (int32_t)rng_range(&rng, -5, 5);
      const int64_t shape[] = {k};
      aotc_tensor in = make_tensor(ix, AOTC_DTYPE_I32, 1, shape);
      run_both(3, &in, 1, (size_t)k * 4, caller_buffer, ibuffer);
      /* The shared pool's chunking must also be exact, not just equal to the reference. */
      int64_t bad = 0;
      aotc_tensor out = make_tensor(ibuffer, AOTC_DTYPE_I32, 0, NULL);
      out.size_bytes = (uint64_t)k * 4;
      if (aotc_model_run(shared, 3, &in, 1, &out, 1) == AOTC_OK) {
        for (int64_t i = 0; i < k; ++i)
          bad += ibuffer[i] != ix[i] + 1;
      } else {
        ++bad;
      }
      if (bad)
        atomic_fetch_add(&mismatches, 1);
    }
  }
  free(x), free(buffer), free(ix), free(ibuffer);
  return NULL;
}

int main(void) {
  base_seed = (uint64_t)time(NULL) * 2654435761u | 1;
  printf("seed %llu\n", (unsigned long long)base_seed);
  aotc_model_options o;
  aotc_model_options_init(&o);
  o.num_threads = 4;
  CHECK_OK(aotc_model_create(&o, &shared));
  o.num_threads = 1;
  CHECK_OK(aotc_model_create(&o, &reference));
  if (!shared || !reference)
    return harness_finish("abi_threads_test");
  pthread_t threads[NUM_CALLERS];
  for (intptr_t t = 0; t < NUM_CALLERS; ++t)
    CHECK(pthread_create(&threads[t], NULL, caller, (void *)t) == 0);
  for (int t = 0; t < NUM_CALLERS; ++t)
    pthread_join(threads[t], NULL);
  printf("%ld runs, %ld mismatches, %ld failures\n", atomic_load(&runs), atomic_load(&mismatches),
         atomic_load(&failures));
  CHECK(atomic_load(&runs) > NUM_CALLERS);
  CHECK(atomic_load(&mismatches) == 0);
  CHECK(atomic_load(&failures) == 0);
  aotc_model_destroy(shared);
  aotc_model_destroy(reference);
  return harness_finish("abi_threads_test");
}
