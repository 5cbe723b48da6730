/* The runtime's arena allocator: small arenas 64-byte aligned, arenas of several MiB 2 MiB
 * aligned (asking for transparent huge pages), every byte writable, impossible sizes refused. */
#include "harness.h"
#include "internal.h"

#include <stdlib.h>

static void check_arena(uint64_t size, uintptr_t alignment) {
  unsigned char *p = aotc_arena_alloc(size);
  CHECK(p != NULL);
  if (!p)
    return;
  CHECK((uintptr_t)p % alignment == 0);
  memset(p, 0x5a, (size_t)size);
  CHECK(p[0] == 0x5a && p[size - 1] == 0x5a);
  free(p);
}

int main(void) {
  check_arena(1, AOTC_ALIGN);
  check_arena(3u << 20, AOTC_ALIGN);
  check_arena((5u << 20) + 17, (uintptr_t)2 << 20);
  check_arena(64u << 20, (uintptr_t)2 << 20);
  CHECK(aotc_arena_alloc(UINT64_MAX - 5) == NULL);
  return harness_finish("arena_alloc_test");
}
