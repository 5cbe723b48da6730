/* Derived weights (artifact.h's aotc_weight_desc.derived): the Winograd transforms of 3x3
 * filters, which are (t+2)^2 / 9 times the filters' size (4x for F(4x4, 3x3)), so the artifact
 * stores the filters and the runtime computes the transforms once per process and set of
 * weights, shared by every model handle of that set. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* G of F(t x t, 3x3), (t+2) x 3 row-major: the same numbers as the compiler's
 * kir::winogradMatrices, and each lane of winograd_filter4 the same arithmetic as
 * kir::winogradFilter, so that the transforms are bit for bit those an export computes. */
static const double FilterG2[] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
static const double FilterG4[] = {1.0 / 4,  0,         0,        -1.0 / 6, -1.0 / 6, -1.0 / 6,
                                  -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24, 1.0 / 12, 1.0 / 6,
                                  1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,        1};

/* Four filters at once (four rows of a panel): each lane computes exactly what the scalar
 * kir::winogradFilter does, G g G^T in double rounded once (no fused multiply-adds: the code is
 * for AVX2 alone, which every CPU variant of aotc has, without FMA). */
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

static inline __attribute__((always_inline)) void winograd_filter4(int tile, const v4d g[9],
                                                                   v4d u[36]) {
  const double *f = tile == 4 ? FilterG4 : FilterG2;
  const int p = tile + 2;
  v4d t[6][3];
#pragma GCC unroll 6
  for (int r = 0; r < p; ++r)
#pragma GCC unroll 3
    for (int c = 0; c < 3; ++c) {
      v4d v = {0, 0, 0, 0};
#pragma GCC unroll 3
      for (int k = 0; k < 3; ++k)
        v += f[r * 3 + k] * g[k * 3 + c];
      t[r][c] = v;
    }
#pragma GCC unroll 6
  for (int r = 0; r < p; ++r)
#pragma GCC unroll 6
    for (int c = 0; c < p; ++c) {
      v4d v = {0, 0, 0, 0};
#pragma GCC unroll 3
      for (int k = 0; k < 3; ++k)
        v += t[r][k] * f[c * 3 + k];
      u[r * p + c] = v;
    }
}

/* A unit of work is a panel (or with a dense layout, four rows), its rows four at a time where
 * the panels are of whole groups of four, else one at a time. */
static int64_t unit_rows(const aotc_weight_desc *w) {
  return w->held_panel_rows ? w->held_panel_rows : 4;
}
static int64_t lanes_of(const aotc_weight_desc *w) { return w->held_panel_rows % 4 == 0 ? 4 : 1; }
/* The units of `w`: a panel's rows past the filter's are zero in the holder. */
static int64_t units_of(const aotc_weight_desc *w) {
  return (w->held_rows + unit_rows(w) - 1) / unit_rows(w);
}

/* bf16 `x` rounded to the nearest even, as the compiler's floatToBFloat16 (a NaN stays one). */
static uint16_t to_bf16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    const uint16_t top = (uint16_t)(bits >> 16);
    return top & 0x7f ? top : (uint16_t)(top | 0x40);
  }
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

/* Element i of a filter of f32, or of bf16 widened. */
static inline float filter_tap(const uint8_t *filters, int bf16, int64_t i) {
  if (bf16) {
    uint16_t h;
    memcpy(&h, filters + 2 * i, sizeof h);
    const uint32_t bits = (uint32_t)h << 16;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
  }
  float x;
  memcpy(&x, filters + 4 * i, sizeof x);
  return x;
}

/* Writes the transforms of units [begin, end) of weight `w` (a [rows, cols, 3, 3] f32 or bf16
 * filter in the blob) into its derived holder (f32, or bf16: each transform rounded once more):
 * component b of filter (r, c) at b * stride + position(r, c) (runtime.h's aotc_weight_layout),
 * column by column through a panel so that each component's stores are consecutive.
 * descriptor.c checked that all of it lies inside both. */
__attribute__((target("avx2"))) static void derive_winograd(const aotc_weight_desc *w,
                                                            const uint8_t *weights, uint8_t *holder,
                                                            int holder_bf16, int64_t begin,
                                                            int64_t end) {
  const int tile = w->held_winograd_tile, components = (tile + 2) * (tile + 2);
  const int64_t rows = w->held_rows, cols = w->held_cols, p = w->held_panel_rows;
  const int64_t per_unit = unit_rows(w), lanes = lanes_of(w), stride = aotc_held_stride(w);
  const uint8_t *filters = weights + w->offset;
  const int bf16 = w->dtype == AOTC_DTYPE_BF16;
  v4d g[9], u[36];
  for (int64_t unit = begin; unit < end; ++unit)
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r0 = unit * per_unit; r0 < (unit + 1) * per_unit; r0 += lanes) {
        for (int tap = 0; tap < 9; ++tap)
          for (int l = 0; l < 4; ++l)
            g[tap][l] = l < lanes && r0 + l < rows
                            ? filter_tap(filters, bf16, ((r0 + l) * cols + c) * 9 + tap)
                            : 0;
        if (tile == 4) /* each with the matrices' numbers in the code */
          winograd_filter4(4, g, u);
        else
          winograd_filter4(2, g, u);
        for (int b = 0; b < components; ++b) {
          const v4f v = __builtin_convertvector(u[b], v4f);
          for (int l = 0; l < lanes && r0 + l < rows; ++l) {
            const int64_t r = r0 + l, pos = p ? r / p * p * cols + c * p + r % p : r * cols + c;
            const int64_t at = b * stride + pos;
            const float x = v[l];
            if (holder_bf16) {
              const uint16_t h = to_bf16(x);
              memcpy(holder + 2 * at, &h, sizeof h);
            } else {
              memcpy(holder + 4 * at, &x, sizeof x);
            }
          }
        }
      }
}

/* The work of deriving: every unit of every weight a derived one holds, in order. */
typedef struct derive_job {
  const aotc_artifact_desc *desc;
  const uint8_t *weights;
  uint8_t *out;
  /* The page size when the weights are mapped from a file and never written, so that the
     pages of the filters done can leave the resident set (read again from the file if ever
     touched); 0 otherwise. */
  uintptr_t release_pages;
} derive_job;

/* Lets the whole pages of [begin, end) of a read-only file mapping go. */
static void release(const uint8_t *begin, const uint8_t *end, uintptr_t page) {
  const uintptr_t from = ((uintptr_t)begin + page - 1) / page * page,
                  to = (uintptr_t)end / page * page;
  if (from < to)
    madvise((void *)from, to - from, MADV_DONTNEED);
}

static const aotc_weight_desc *derived_source(const aotc_artifact_desc *desc, int32_t i) {
  return aotc_held_by_derived(desc, &desc->weights[i]) ? &desc->weights[i] : NULL;
}

static void derive_task(void *closure, int64_t begin, int64_t end) {
  const derive_job *job = closure;
  int64_t at = 0; /* units of the weights before w */
  for (int32_t i = 0; i < job->desc->num_weights && at < end; ++i) {
    const aotc_weight_desc *w = derived_source(job->desc, i);
    if (!w)
      continue;
    const int64_t units = units_of(w);
    const int64_t lo = begin > at ? begin : at, hi = end < at + units ? end : at + units;
    if (lo < hi) {
      const aotc_weight_desc *holder = &job->desc->weights[w->held_by];
      derive_winograd(w, job->weights, job->out + holder->offset, holder->dtype == AOTC_DTYPE_BF16,
                      lo - at, hi - at);
      if (job->release_pages) {
        const int64_t per_unit = unit_rows(w), rows = w->held_rows,
                      row_bytes = w->held_cols * 9 * (w->dtype == AOTC_DTYPE_BF16 ? 2 : 4);
        const int64_t r0 = (lo - at) * per_unit,
                      r1 = (hi - at) * per_unit < rows ? (hi - at) * per_unit : rows;
        const uint8_t *filters = job->weights + w->offset;
        if (r0 < r1)
          release(filters + r0 * row_bytes, filters + r1 * row_bytes, job->release_pages);
      }
    }
    at += units;
  }
}

/* Every derived weight of `desc` from `weights`, in fresh memory (zero where no filter is
 * transformed into it), `size` bytes of a private mapping, on `pool`'s threads (null: this
 * one's); null when no memory can be had. */
static uint8_t *derive_all(const aotc_artifact_desc *desc, const uint8_t *weights, size_t size,
                           int file_backed, aotc_pool *pool, int32_t threads) {
  void *out = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (out == MAP_FAILED)
    return NULL;
  /* Only a hint: fewer page faults and TLB misses where the system gives huge pages. */
  madvise(out, size, MADV_HUGEPAGE);
  const long page = sysconf(_SC_PAGESIZE);
  derive_job job = {desc, weights, out, file_backed && page > 0 ? (uintptr_t)page : 0};
  int64_t units = 0;
  for (int32_t i = 0; i < desc->num_weights; ++i)
    if (derived_source(desc, i))
      units += units_of(&desc->weights[i]);
  aotc_exec exec = {.pool = pool, .num_threads = threads};
  aotc_parallel_for(&exec, units, 1, derive_task, &job);
  return out;
}

/* The derived weights made so far: one per descriptor and weights (embedded weights are shared
 * by every handle; a weights file read into memory is each handle's own). */
typedef struct derived_set {
  const aotc_artifact_desc *desc;
  const uint8_t *weights;
  uint8_t *data;
  size_t size;
  int64_t refs;
  struct derived_set *next;
} derived_set;

static pthread_mutex_t DerivedLock = PTHREAD_MUTEX_INITIALIZER;
static derived_set *DerivedSets;

aotc_status aotc_derived_acquire(const aotc_artifact_desc *desc, const uint8_t *weights,
                                 int file_backed, aotc_pool *pool, int32_t threads,
                                 const uint8_t **out) {
  *out = NULL;
  if (desc->derived_size == 0)
    return AOTC_OK;
  aotc_status status = AOTC_OK;
  pthread_mutex_lock(&DerivedLock);
  derived_set *s = DerivedSets;
  while (s && (s->desc != desc || s->weights != weights))
    s = s->next;
  if (!s) {
    s = calloc(1, sizeof *s);
    if (s && desc->derived_size <= (uint64_t)SIZE_MAX) {
      s->size = (size_t)desc->derived_size;
      s->data = derive_all(desc, weights, s->size, file_backed, pool, threads);
    }
    if (s && s->data) {
      s->desc = desc;
      s->weights = weights;
      s->next = DerivedSets;
      DerivedSets = s;
    } else {
      free(s);
      s = NULL;
      status = aotc_fail(AOTC_ERROR_RESOURCE,
                         "aotc_model_create: out of memory (%llu bytes of weights derived at "
                         "load)",
                         (unsigned long long)desc->derived_size);
    }
  }
  if (s) {
    ++s->refs;
    *out = s->data;
  }
  pthread_mutex_unlock(&DerivedLock);
  return status;
}

void aotc_derived_release(const uint8_t *derived) {
  if (!derived)
    return;
  pthread_mutex_lock(&DerivedLock);
  for (derived_set **at = &DerivedSets; *at; at = &(*at)->next) {
    derived_set *s = *at;
    if (s->data != derived)
      continue;
    if (--s->refs == 0) {
      *at = s->next;
      munmap(s->data, s->size);
      free(s);
    }
    break;
  }
  pthread_mutex_unlock(&DerivedLock);
}
