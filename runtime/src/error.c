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

/* Every thread's buffer is also on one list, so that unloading the artifact frees them all:
 * pthread_key_delete runs no destructors, and a host that dlopens and dlcloses models must not
 * lose a key (the process has 1024) and a buffer per thread each time. */
typedef struct last_error_node {
  struct last_error_node *prev, *next;
  char text[LastErrorBytes];
} last_error_node;

static pthread_key_t last_error_key;
static pthread_once_t last_error_once = PTHREAD_ONCE_INIT;
static int last_error_key_ok;
static pthread_mutex_t last_error_lock = PTHREAD_MUTEX_INITIALIZER;
static last_error_node *last_error_nodes;

static void unlink_node(last_error_node *node) {
  if (node->prev)
    node->prev->next = node->next;
  else
    last_error_nodes = node->next;
  if (node->next)
    node->next->prev = node->prev;
}

/* A thread's exit, while the artifact is loaded. */
static void free_last_error(void *p) {
  last_error_node *node = p;
  pthread_mutex_lock(&last_error_lock);
  unlink_node(node);
  pthread_mutex_unlock(&last_error_lock);
  free(node);
}

static void create_last_error_key(void) {
  last_error_key_ok = pthread_key_create(&last_error_key, free_last_error) == 0;
}

/* dlclose of the artifact (or exit): the key goes back to the process, and the buffers of
 * threads still alive are freed; none of them can reach theirs any more. */
__attribute__((destructor)) static void release_last_errors(void) {
  if (!last_error_key_ok)
    return;
  pthread_key_delete(last_error_key);
  last_error_key_ok = 0;
  pthread_mutex_lock(&last_error_lock);
  while (last_error_nodes) {
    last_error_node *node = last_error_nodes;
    unlink_node(node);
    free(node);
  }
  pthread_mutex_unlock(&last_error_lock);
}

/* This thread's buffer, allocated on first use; null when out of memory. */
static char *last_error_buffer(int create) {
  pthread_once(&last_error_once, create_last_error_key);
  if (!last_error_key_ok)
    return NULL;
  last_error_node *node = pthread_getspecific(last_error_key);
  if (!node && create) {
    node = calloc(1, sizeof *node);
    if (!node)
      return NULL;
    if (pthread_setspecific(last_error_key, node) != 0) {
      free(node);
      return NULL;
    }
    pthread_mutex_lock(&last_error_lock);
    node->next = last_error_nodes;
    if (last_error_nodes)
      last_error_nodes->prev = node;
    last_error_nodes = node;
    pthread_mutex_unlock(&last_error_lock);
  }
  return node ? node->text : NULL;
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
