/* A minimal C test harness for the ABI tests: checks that count failures instead of aborting,
 * exact error-message checks, and a seeded random generator. */
#ifndef AOTC_TESTS_ABI_HARNESS_H
#define AOTC_TESTS_ABI_HARNESS_H

#include "aotc/runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int harness_failures;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
      ++harness_failures;                                                                          \
    }                                                                                              \
  } while (0)

/* The call must fail with `status` and exactly `message` as aotc_last_error(). */
#define CHECK_ERROR(call, status, message)                                                         \
  do {                                                                                             \
    const aotc_status got_ = (call);                                                               \
    const char *msg_ = aotc_last_error();                                                          \
    if (got_ != (status) || strcmp(msg_, (message)) != 0) {                                        \
      fprintf(stderr, "%s:%d: %s\n  got status %d: %s\n  want status %d: %s\n", __FILE__,          \
              __LINE__, #call, (int)got_, msg_, (int)(status), (message));                         \
      ++harness_failures;                                                                          \
    }                                                                                              \
  } while (0)

#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    const aotc_status got_ = (call);                                                               \
    if (got_ != AOTC_OK) {                                                                         \
      fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #call, (int)got_,         \
              aotc_last_error());                                                                  \
      ++harness_failures;                                                                          \
    }                                                                                              \
  } while (0)

static inline int harness_finish(const char *name) {
  if (harness_failures)
    fprintf(stderr, "%s: %d check(s) failed\n", name, harness_failures);
  else
    printf("%s: all checks passed\n", name);
  return harness_failures ? 1 : 0;
}

/* xorshift64*: reproducible from the printed seed. */
static inline uint64_t rng_next(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}
static inline int64_t rng_range(uint64_t *state, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rng_next(state) % (uint64_t)(hi - lo + 1));
}
/* Uniform in [-2, 2] away from zero, so a dropped term always shows. */
static inline float rng_float(uint64_t *state) {
  float v = (float)((rng_next(state) >> 40) / (double)(1 << 24)) * 4.0f - 2.0f;
  return v > -0.01f && v < 0.01f ? 0.75f : v;
}

static inline aotc_tensor make_tensor(void *data, int32_t dtype, int32_t rank,
                                      const int64_t *shape) {
  aotc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = dtype;
  t.rank = rank;
  for (int32_t d = 0; d < rank; ++d)
    t.shape[d] = shape[d];
  return t;
}

/* |got - want| <= 1e-5 * max(1, |want|), never NaN. */
static inline int close_enough(double got, double want) {
  const double scale = want < 0 ? (-want > 1 ? -want : 1) : (want > 1 ? want : 1);
  const double diff = got > want ? got - want : want - got;
  return diff <= 1e-5 * scale;
}

#endif
