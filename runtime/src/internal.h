/* Shared between the runtime's C files: the model handle, the thread pool, CPU detection and
 * the thread-local last error. Never installed. */
#ifndef AOTC_RUNTIME_INTERNAL_H
#define AOTC_RUNTIME_INTERNAL_H

#include "aotc/runtime.h"
#include "artifact.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* the code generator's tests ask the runtime what the CPU gives */
#endif

/* Hidden in the same .so: the reference needs no dynamic relocation and cannot bind to
 * another artifact's descriptor. */
extern __attribute__((visibility("hidden"))) const aotc_artifact_desc aotc_artifact;

#define AOTC_ALIGN 64
/* Idle arenas a model keeps for later runs; more concurrent runs than this free theirs. */
#define AOTC_ARENA_CACHE 8
/* A pool job's chunk count lives in 16 bits of its claim word. */
#define AOTC_MAX_THREADS 1024

typedef struct aotc_pool aotc_pool;

typedef struct aotc_arena {
  uint8_t *data;
  uint64_t size;
} aotc_arena;

typedef struct aotc_cuda_model aotc_cuda_model;

struct aotc_model {
  const aotc_artifact_desc *desc;
  int32_t device_type;   /* AOTC_DEVICE_* */
  aotc_cuda_model *cuda; /* the CUDA device's state, null on the cpu */
  int32_t variant;
  uint32_t cpu_features; /* aotc_exec.cpu_features for the variant */
  int32_t num_threads;
  const uint8_t *weights;
  /* An external weights file: read into private anonymous memory (or, with
   * AOTC_MODEL_MAP_WEIGHTS_UNCHECKED, mapped from the file); null for embedded weights. */
  void *weights_map;
  size_t weights_map_size;
  char *weights_path; /* that file's path, for messages; null for embedded weights */
  uint8_t *state;
  const uint8_t *derived; /* aotc_derived_acquire's, null when the artifact derives none */
  aotc_pool *pool; /* null with one thread */
  pthread_mutex_t arena_lock;
  int32_t num_arenas;
  aotc_arena arenas[AOTC_ARENA_CACHE];
};

/* Whether `w` is held by a weight derived from it at create (derive.c): then the blob stores it as
 * itself too. */
static inline int aotc_held_by_derived(const aotc_artifact_desc *desc, const aotc_weight_desc *w) {
  return w->held_by >= 0 && desc->weights[w->held_by].derived;
}

/* Elements between the components of `w`'s holder, dense or in panels of held_panel_rows rows
 * of the weight or, held_transposed, of its transpose (runtime.h's
 * aotc_weight_layout.component_stride; not k-pair panels). */
static inline int64_t aotc_held_stride(const aotc_weight_desc *w) {
  const int64_t p = w->held_panel_rows;
  const int64_t rows = w->held_transposed ? w->held_cols : w->held_rows,
                cols = w->held_transposed ? w->held_rows : w->held_cols;
  return (p ? (rows + p - 1) / p * p : rows) * cols;
}

/* Records the message of a failing call on this thread and returns `status`. */
aotc_status aotc_fail(aotc_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Every array, string, blob and function the descriptor points to lies inside the loaded
 * library and every offset inside the weights (descriptor.c); sets the last error otherwise. */
aotc_status aotc_check_descriptor(const aotc_artifact_desc *desc);

/* Picks the code variant for `requested` (AOTC_CPU_VARIANT_*), honouring AOTC_CPU_VARIANT
 * for AUTO; sets the last error on failure. */
aotc_status aotc_cpu_choose_variant(int32_t requested, int32_t *out_variant);
const char *aotc_cpu_variant_name(int32_t variant);
/* AOTC_CPU_FEATURE_* this CPU and OS give code of `variant` (none for x86-64-v3), as
 * AOTC_CPU_AMX and AOTC_CPU_BF16_DOT allow; sets the last error for a bad value of those. */
aotc_status aotc_cpu_features(int32_t variant, uint32_t *out_features);

/* A pool of num_threads - 1 workers; the thread calling parallel_for is the last one. */
aotc_status aotc_pool_create(int32_t num_threads, aotc_pool **out_pool);
void aotc_pool_destroy(aotc_pool *pool);
/* aotc_exec.parallel_for: exec->pool may be null (runs inline). */
void aotc_parallel_for(aotc_exec *exec, int64_t n, int64_t grain, aotc_task_fn fn, void *closure);

/* The derived weights (derive.c) of `desc` from `weights`: computed on the first acquire of the
 * pair, on `pool`'s threads (null: the caller's), and shared by later ones until each has
 * released them; null when the artifact derives none. `file_backed`: the weights are a
 * read-only mapping of a file, whose pages the filters read may leave the resident set. Sets
 * the last error on failure. */
aotc_status aotc_derived_acquire(const aotc_artifact_desc *desc, const uint8_t *weights,
                                 int file_backed, aotc_pool *pool, int32_t threads,
                                 const uint8_t **out);
void aotc_derived_release(const uint8_t *derived);

/* The CUDA device (cuda.c). create loads the driver, the device's image and uploads the weights
 * (model->weights and model->state are loaded already); on failure model->cuda may be partly
 * made, for aotc_cuda_destroy. */
aotc_status aotc_cuda_create(aotc_model *model, const aotc_model_options *options);
void aotc_cuda_destroy(aotc_cuda_model *cuda);
const char *aotc_cuda_description(const aotc_cuda_model *cuda);
int32_t aotc_cuda_ordinal(const aotc_cuda_model *cuda);
/* Runs entry e with validated arguments: inputs and caller outputs are device addresses;
 * outputs[o] of a null caller output is allocated here (freed again on failure). stream: the
 * caller's CUstream or null. */
aotc_status aotc_cuda_run(aotc_model *model, const aotc_entry_desc *e, const int64_t *syms,
                          const void *const *inputs, void **outputs, const uint64_t *out_bytes,
                          const aotc_tensor *caller_outputs, void *stream);
void aotc_cuda_mark_owned(const aotc_model *model, aotc_tensor *t);
void aotc_cuda_release(aotc_tensor *t);
aotc_status aotc_cuda_alloc(aotc_model *model, uint64_t bytes, void **out);
aotc_status aotc_cuda_free(aotc_model *model, void *ptr);
aotc_status aotc_cuda_copy(aotc_model *model, void *dst, const void *src, uint64_t bytes,
                           int32_t direction);

void *aotc_aligned_alloc(uint64_t size);
/* A run's arena: aotc_aligned_alloc's, but an arena of several MiB is 2 MiB aligned and asks for
   transparent huge pages (one TLB entry per 2 MiB: a GEMM packing a column strip of an activation
   crosses a 4 KiB page every row). Freed with free(). */
void *aotc_arena_alloc(uint64_t size);
int64_t aotc_dtype_size(int32_t dtype);
/* A dim's text is a constant exactly when it is a decimal literal; 1 and *out then. */
int aotc_parse_static(const char *expr, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif
