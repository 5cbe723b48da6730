/* The hash of an artifact's weight blob: XXH64 (seed 0), the one definition, compiled into the
 * runtime (C11) and into the compiler (src/package), which records it in the descriptor. It
 * catches accidents (a weights file of another export, a damaged or truncated copy), not an
 * attacker, who can forge any 64-bit non-cryptographic hash.
 * Defined on the bytes alone: words are read little-endian whatever the host, and feeding the
 * bytes in any pieces (aotc_hash_update) gives the one-shot aotc_hash64 of their concatenation. */
#ifndef AOTC_RUNTIME_HASH_H
#define AOTC_RUNTIME_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What artifact.h's weights_hash_kind says the hash is. */
#define AOTC_HASH_XXH64 1u

#define AOTC_HASH_P1 0x9E3779B185EBCA87ull
#define AOTC_HASH_P2 0xC2B2AE3D27D4EB4Full
#define AOTC_HASH_P3 0x165667B19E3779F9ull
#define AOTC_HASH_P4 0x85EBCA77C2B2AE63ull
#define AOTC_HASH_P5 0x27D4EB2F165667C5ull

typedef struct aotc_hash_state {
  uint64_t lane[4];  /* four independent accumulators: the multiplies of a stripe overlap */
  uint64_t total;    /* bytes fed so far */
  uint8_t pending[32]; /* the start of a stripe not yet complete */
  uint32_t num_pending;
} aotc_hash_state;

static inline uint64_t aotc_hash_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t aotc_hash_read64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline uint32_t aotc_hash_read32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

static inline uint64_t aotc_hash_round(uint64_t acc, uint64_t word) {
  acc += word * AOTC_HASH_P2;
  return aotc_hash_rotl(acc, 31) * AOTC_HASH_P1;
}

static inline void aotc_hash_init(aotc_hash_state *s) {
  memset(s, 0, sizeof *s);
  s->lane[0] = AOTC_HASH_P1 + AOTC_HASH_P2;
  s->lane[1] = AOTC_HASH_P2;
  s->lane[2] = 0;
  s->lane[3] = 0 - AOTC_HASH_P1;
}

/* Whole 32-byte stripes of [p, p + n); returns the bytes consumed (n rounded down to 32). */
static inline size_t aotc_hash_stripes(aotc_hash_state *s, const uint8_t *p, size_t n) {
  uint64_t a = s->lane[0], b = s->lane[1], c = s->lane[2], d = s->lane[3];
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = aotc_hash_round(a, aotc_hash_read64(p + i));
    b = aotc_hash_round(b, aotc_hash_read64(p + i + 8));
    c = aotc_hash_round(c, aotc_hash_read64(p + i + 16));
    d = aotc_hash_round(d, aotc_hash_read64(p + i + 24));
  }
  s->lane[0] = a, s->lane[1] = b, s->lane[2] = c, s->lane[3] = d;
  return i;
}

static inline void aotc_hash_update(aotc_hash_state *s, const void *data, size_t n) {
  if (n == 0)
    return;
  const uint8_t *p = (const uint8_t *)data;
  s->total += n;
  if (s->num_pending) {
    size_t take = 32 - s->num_pending;
    if (take > n)
      take = n;
    memcpy(s->pending + s->num_pending, p, take);
    s->num_pending += (uint32_t)take;
    p += take;
    n -= take;
    if (s->num_pending < 32)
      return;
    aotc_hash_stripes(s, s->pending, 32);
    s->num_pending = 0;
  }
  const size_t done = aotc_hash_stripes(s, p, n);
  memcpy(s->pending, p + done, n - done);
  s->num_pending = (uint32_t)(n - done);
}

static inline uint64_t aotc_hash_merge(uint64_t h, uint64_t lane) {
  h ^= aotc_hash_round(0, lane);
  return h * AOTC_HASH_P1 + AOTC_HASH_P4;
}

static inline uint64_t aotc_hash_final(const aotc_hash_state *s) {
  uint64_t h;
  if (s->total >= 32) {
    h = aotc_hash_rotl(s->lane[0], 1) + aotc_hash_rotl(s->lane[1], 7) +
        aotc_hash_rotl(s->lane[2], 12) + aotc_hash_rotl(s->lane[3], 18);
    for (int i = 0; i < 4; ++i)
      h = aotc_hash_merge(h, s->lane[i]);
  } else {
    h = AOTC_HASH_P5;
  }
  h += s->total;
  const uint8_t *p = s->pending;
  uint32_t n = s->num_pending, i = 0;
  for (; i + 8 <= n; i += 8)
    h = aotc_hash_rotl(h ^ aotc_hash_round(0, aotc_hash_read64(p + i)), 27) * AOTC_HASH_P1 +
        AOTC_HASH_P4;
  if (i + 4 <= n) {
    h = aotc_hash_rotl(h ^ (uint64_t)aotc_hash_read32(p + i) * AOTC_HASH_P1, 23) * AOTC_HASH_P2 +
        AOTC_HASH_P3;
    i += 4;
  }
  for (; i < n; ++i)
    h = aotc_hash_rotl(h ^ p[i] * AOTC_HASH_P5, 11) * AOTC_HASH_P1;
  h ^= h >> 33;
  h *= AOTC_HASH_P2;
  h ^= h >> 29;
  h *= AOTC_HASH_P3;
  h ^= h >> 32;
  return h;
}

static inline uint64_t aotc_hash64(const void *data, size_t n) {
  aotc_hash_state s;
  aotc_hash_init(&s);
  aotc_hash_update(&s, data, n);
  return aotc_hash_final(&s);
}

#ifdef __cplusplus
}
#endif

#endif
