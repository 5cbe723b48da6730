/* runtime.h must compile as strict C99 (no _Static_assert): this file only has to build. */
#include "aotc/runtime.h"

uint32_t aotc_c99_header_check(void);
uint32_t aotc_c99_header_check(void) { return AOTC_ABI_VERSION + (uint32_t)sizeof(aotc_tensor); }
