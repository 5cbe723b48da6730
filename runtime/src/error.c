/* The thread-local last-error message, and the small services every runtime file shares
 * (dtype table, aligned allocation). */
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

/* The message buffer hangs off a pthread key rather than a _Thread_local array: general-dynamic
 * TLS in a .so calls __tls_get_addr, which would make artifacts need ld-linux-x86-64.so.2, and
 * initial-exec TLS of this size may not fit the static TLS that dlopen can still hand out. */
enum { LastErrorBytes = 1024 };
static pthread_key_t last_error_key;
static pthread_once_t last_error_once = PTHREAD_ONCE_INIT;
static int last_error_key_ok;

static void create_last_error_key(void) {
  last_error_key_ok = pthread_key_create(&last_error_key, free) == 0;
}

/* This thread's buffer, allocated on first use; null when out of memory. */
static char *last_error_buffer(int create) {
  pthread_once(&last_error_once, create_last_error_key);
  if (!last_error_key_ok)
    return NULL;
  char *buffer = pthread_getspecific(last_error_key);
  if (!buffer && create) {
    buffer = calloc(1, LastErrorBytes);
    if (buffer && pthread_setspecific(last_error_key, buffer) != 0) {
      free(buffer);
      buffer = NULL;
    }
  }
  return buffer;
}

aotc_status aotc_fail(aotc_status status, const char *format, ...) {
  char *buffer = last_error_buffer(1);
  if (!buffer)
    return status;
  va_list args;
  va_start(args, format);
  vsnprintf(buffer, LastErrorBytes, format, args);
  va_end(args);
  return status;
}

AOTC_API const char *aotc_last_error(void) {
  const char *buffer = last_error_buffer(0);
  return buffer ? buffer : "";
}

AOTC_API uint32_t aotc_abi_version(void) { return AOTC_ABI_VERSION; }

AOTC_API const char *aotc_dtype_name(int32_t dtype) {
  static const char *const names[] = {"invalid", "f32", "f64", "f16", "bf16", "i64",
                                      "i32",     "i16", "i8",  "u8",  "bool"};
  if (dtype < 1 || dtype > AOTC_DTYPE_BOOL)
    return "invalid";
  return names[dtype];
}

int64_t aotc_dtype_size(int32_t dtype) {
  static const int64_t sizes[] = {0, 4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
  if (dtype < 1 || dtype > AOTC_DTYPE_BOOL)
    return 0;
  return sizes[dtype];
}

/* `size` bytes rounded up to a multiple of `alignment` (aligned_alloc wants one), at least one
 * block (a zero-byte buffer would be null); null when the rounded size does not fit. */
static void *alloc_rounded(uint64_t size, uint64_t alignment) {
  uint64_t rounded = (size + alignment - 1) / alignment * alignment;
  if (rounded == 0)
    rounded = alignment;
  if (rounded < size || rounded > (uint64_t)SIZE_MAX)
    return NULL;
  return aligned_alloc((size_t)alignment, (size_t)rounded);
}

void *aotc_aligned_alloc(uint64_t size) { return alloc_rounded(size, AOTC_ALIGN); }

void *aotc_arena_alloc(uint64_t size) {
  const uint64_t huge = (uint64_t)2 << 20;
  if (size < 2 * huge)
    return aotc_aligned_alloc(size);
  void *p = alloc_rounded(size, huge);
  /* Only a hint: where the system gives no huge pages the arena works as before. */
  if (p)
    madvise(p, (size + huge - 1) / huge * huge, MADV_HUGEPAGE);
  return p;
}
