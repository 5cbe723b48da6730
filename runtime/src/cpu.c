/* CPU feature detection (cpuid + xgetbv, no libgcc helpers) and the choice of the code variant. */
#include "internal.h"

#include <cpuid.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* The best variant this CPU and OS support, or -1 when not even x86-64-v3. */
static int32_t best_variant(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return -1;
  const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
  if (!osxsave || !avx)
    return -1;
  const uint64_t xcr = xcr0();
  /* SSE and AVX state saved by the OS: without it ymm registers are not preserved. */
  if ((xcr & 0x6) != 0x6)
    return -1;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return -1;
  const int avx2 = (b >> 5) & 1, bmi2 = (b >> 8) & 1;
  if (!avx2 || !fma || !f16c || !bmi2)
    return -1;
  const int avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1, avx512bw = (b >> 30) & 1,
            avx512vl = (b >> 31) & 1;
  /* Opmask, upper zmm0-15 and zmm16-31 state. */
  if (avx512f && avx512dq && avx512bw && avx512vl && (xcr & 0xe0) == 0xe0)
    return AOTC_VARIANT_X86_64_V4;
  return AOTC_VARIANT_X86_64_V3;
}

/* Environment variable `name`: 1 or 0 for "1" or "0", `fallback` when unset or empty, and -1
 * (the last error set) for anything else. */
static int env_switch(const char *name, int fallback) {
  const char *env = getenv(name);
  if (!env || !*env)
    return fallback;
  if (strcmp(env, "1") == 0 || strcmp(env, "0") == 0)
    return env[0] == '1';
  aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "%s=%s is not 0 or 1", name, env);
  return -1;
}

/* Whether this process may use AMX tiles: the OS saves their state (XCR0 bits 17 and 18) and
 * grants the process its permission (Linux's ARCH_REQ_XCOMP_PERM for XTILEDATA, once for all
 * threads; asking again is harmless). */
static int amx_enabled(void) {
  enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
  if (((xcr0() >> 17) & 3) != 3)
    return 0;
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

aotc_status aotc_cpu_features(int32_t variant, uint32_t *out_features) {
  *out_features = 0;
  /* Read first, so that a bad value is an error on every CPU. */
  const int amx_switch = env_switch("AOTC_CPU_AMX", 1), unset = 2;
  if (amx_switch < 0)
    return AOTC_ERROR_INVALID_ARGUMENT;
  const int dot_switch = env_switch("AOTC_CPU_BF16_DOT", unset);
  if (dot_switch < 0)
    return AOTC_ERROR_INVALID_ARGUMENT;
  unsigned a, b, c, d;
  /* The extensions below need the AVX-512 state x86-64-v4 checked. */
  if (variant != AOTC_VARIANT_X86_64_V4 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return AOTC_OK;
  const int amx_bf16 = ((d >> 22) & 1) && ((d >> 24) & 1); /* AMX-BF16, AMX-TILE */
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d))
    return AOTC_OK;
  const int avx512_bf16 = (a >> 5) & 1; /* packing rounds with vcvtneps2bf16 either way */
  if (!avx512_bf16)
    return AOTC_OK;
  /* AOTC_CPU_AMX=0 keeps the AMX tiles off. */
  if (amx_bf16 && amx_switch && amx_enabled())
    *out_features |= AOTC_CPU_FEATURE_AMX_BF16;
  /* Cores with AMX run vdpbf16ps at half the flops of an f32 FMA (Sapphire Rapids: one per two
   * cycles against two FMAs a cycle); AMD's Zen 4 runs it at the FMA's rate, twice the flops.
   * AOTC_CPU_BF16_DOT=1 or 0 overrides the choice. */
  if (dot_switch == unset ? !amx_bf16 : dot_switch)
    *out_features |= AOTC_CPU_FEATURE_BF16_DOT;
  return AOTC_OK;
}

const char *aotc_cpu_variant_name(int32_t variant) {
  return variant == AOTC_VARIANT_X86_64_V4 ? "x86-64-v4" : "x86-64-v3";
}

aotc_status aotc_cpu_choose_variant(int32_t requested, int32_t *out_variant) {
  const char *source = "cpu_variant";
  if (requested == AOTC_CPU_VARIANT_AUTO) {
    const char *env = getenv("AOTC_CPU_VARIANT");
    if (env && *env) {
      if (strcmp(env, "x86-64-v3") == 0)
        requested = AOTC_VARIANT_X86_64_V3;
      else if (strcmp(env, "x86-64-v4") == 0)
        requested = AOTC_VARIANT_X86_64_V4;
      else
        return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                         "AOTC_CPU_VARIANT=%s is not x86-64-v3 or x86-64-v4", env);
      source = "AOTC_CPU_VARIANT";
    }
  } else if (requested != AOTC_VARIANT_X86_64_V3 && requested != AOTC_VARIANT_X86_64_V4) {
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "cpu_variant %d is not AUTO (-1), x86-64-v3 (0) or x86-64-v4 (1)",
                     (int)requested);
  }
  const int32_t best = best_variant();
  if (best < 0)
    return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                     "this CPU lacks AVX2/FMA (x86-64-v3), which the artifact needs");
  if (requested == AOTC_CPU_VARIANT_AUTO) {
    *out_variant = best;
    return AOTC_OK;
  }
  if (requested > best)
    return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                     "this CPU lacks AVX-512 (x86-64-v4), which %s x86-64-v4 asks for", source);
  *out_variant = requested;
  return AOTC_OK;
}
