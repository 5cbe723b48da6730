/* A hand-written artifact for the ABI tests: the descriptor and "generated" code aotc would
 * emit (or, by macro, with external weights or a newer format), for six small entries that
 * exercise every check and service of the runtime. */
#include "aotc/runtime.h"
#include "artifact.h"
#include "hash.h"

#include <stdatomic.h>

/* Which code variant ran, so tests see that the runtime calls the one it reports. */
__attribute__((visibility("default"))) atomic_long aotc_fake_variant_runs[AOTC_NUM_VARIANTS];

#ifndef AOTC_FAKE_EXTERNAL_WEIGHTS
/* Weight blob: w f32[4], then the mutable buffer acc f32[4]. */
static const float blob[8]
    __attribute__((aligned(64))) = {0.5f, -1.25f, 2.0f, 3.5f, 0.25f, 0.0f, 0.0f, 0.0f};
#endif
#define AOTC_FAKE_WEIGHTS_HASH 0x079ad9ee7b3d5200ull
static const int64_t shape4[] = {4};
/* AOTC_FAKE_HELD_BY=N: w claims to be held by weight N, which no descriptor aotc writes does
 * (out of range, itself, or a weight stored with bytes of its own). */
#ifndef AOTC_FAKE_HELD_BY
#define AOTC_FAKE_HELD_BY -1
#endif
/* AOTC_FAKE_PAIR_COLS=N: w, stored as itself, claims k-pair panels N columns wide, which only a
 * weight held by a bf16 one has (format 7). */
#ifndef AOTC_FAKE_PAIR_COLS
#define AOTC_FAKE_PAIR_COLS 0
#endif
/* AOTC_FAKE_TRANSPOSED=N: w, stored as itself, claims a holder that lays out its transpose, which
 * only a weight held as panels has (format 9). */
#ifndef AOTC_FAKE_TRANSPOSED
#define AOTC_FAKE_TRANSPOSED 0
#endif
/* AOTC_FAKE_DERIVED=N: w, stored in the blob, claims to be derived at load (format 8), out of
 * derived weights that the descriptor has none of, or with a flag no aotc writes. */
#ifndef AOTC_FAKE_DERIVED
#define AOTC_FAKE_DERIVED 0
#endif
/* AOTC_FAKE_ACC_DERIVED: acc claims to be derived at load, in AOTC_FAKE_DERIVED_SIZE bytes of
 * derived weights, at an offset (16) no aotc writes; with AOTC_FAKE_HELD_BY=1, w claims to be a
 * filter whose transforms acc holds, which a 4-element weight cannot be. */
#ifndef AOTC_FAKE_ACC_DERIVED
#define AOTC_FAKE_ACC_DERIVED 0
#endif
#ifndef AOTC_FAKE_DERIVED_SIZE
#define AOTC_FAKE_DERIVED_SIZE 0
#endif
/* AOTC_FAKE_CHAIN: w, of no bytes, claims to be held by acc, which claims to be held by w: a
 * holder that is itself held, not by a weight derived from it (only a bf16 filter whose
 * transforms are derived at load both holds a weight and is held). */
#ifdef AOTC_FAKE_CHAIN
#define AOTC_FAKE_W_BYTES 0
#define AOTC_FAKE_ACC_HELD_BY 0
#else
#define AOTC_FAKE_W_BYTES 16
#define AOTC_FAKE_ACC_HELD_BY -1
#endif
static const aotc_weight_desc weights[] = {
    {"w", AOTC_DTYPE_F32, 1, shape4, 0, AOTC_FAKE_W_BYTES, AOTC_FAKE_HELD_BY, 0, 0, 0, 0,
     AOTC_FAKE_PAIR_COLS, AOTC_FAKE_TRANSPOSED, AOTC_FAKE_DERIVED, 0},
    {"acc", AOTC_DTYPE_F32, 1, shape4, 16, 16, AOTC_FAKE_ACC_HELD_BY, 0, 0, 0, 0, 0, 0,
     AOTC_FAKE_ACC_DERIVED, 0},
};
static const uint8_t program[] = "fake program";

/* --- forward: y = x * w + 1, through the arena, in two parallel_fors --------------------- */
typedef struct {
  const float *x, *w;
  float *tmp, *y;
} fwd_closure;

static void fwd_mul(void *c, int64_t b, int64_t e) {
  fwd_closure *f = c;
  for (int64_t i = b; i < e; ++i)
    f->tmp[i] = f->x[i] * f->w[i % 4];
}

static void fwd_add(void *c, int64_t b, int64_t e) {
  fwd_closure *f = c;
  for (int64_t i = b; i < e; ++i)
    f->y[i] = f->tmp[i] + 1.0f;
}

static int32_t fwd_shapes(const int64_t *syms, int64_t *out) {
  const int64_t batch = syms[0];
  out[0] = batch, out[1] = 4, out[2] = batch, out[3] = 4, out[4] = batch * 4 * 4;
  return 0;
}

static int32_t fwd_run(aotc_exec *exec, const void *const *in, void *const *out,
                       const int64_t *syms) {
  fwd_closure c = {in[0], (const float *)exec->weights, (float *)exec->arena, out[0]};
  exec->parallel_for(exec, syms[0] * 4, 8, fwd_mul, &c);
  exec->parallel_for(exec, syms[0] * 4, 8, fwd_add, &c);
  return 0;
}

static int32_t fwd_run_v3(aotc_exec *exec, const void *const *in, void *const *out,
                          const int64_t *syms) {
  atomic_fetch_add(&aotc_fake_variant_runs[AOTC_VARIANT_X86_64_V3], 1);
  return fwd_run(exec, in, out, syms);
}

static int32_t fwd_run_v4(aotc_exec *exec, const void *const *in, void *const *out,
                          const int64_t *syms) {
  atomic_fetch_add(&aotc_fake_variant_runs[AOTC_VARIANT_X86_64_V4], 1);
  return fwd_run(exec, in, out, syms);
}

/* --- pair: sum[i] = a[i,0] + a[i,1] + a[i,2] + b[i] * b[i+1] + acc[0]; guard n <= 100 ----- */
static int32_t pair_shapes(const int64_t *syms, int64_t *out) {
  const int64_t n = syms[0];
  out[0] = n, out[1] = 3, out[2] = n + 1, out[3] = n, out[4] = 0;
  return n <= 100 ? 0 : 1;
}

static int32_t pair_run(aotc_exec *exec, const void *const *in, void *const *out,
                        const int64_t *syms) {
  const float *a = in[0], *b = in[1], *acc = (const float *)exec->state;
  float *sum = out[0];
  for (int64_t i = 0; i < syms[0]; ++i)
    sum[i] = a[3 * i] + a[3 * i + 1] + a[3 * i + 2] + b[i] * b[i + 1] + acc[0];
  return 0;
}

/* --- blocks: s[j] = sum over the j-th block of 8 of u * v, in f64; m % 8 == 0 ------------ */
static int32_t blocks_shapes(const int64_t *syms, int64_t *out) {
  const int64_t m = syms[0];
  out[0] = m, out[1] = m, out[2] = m / 8, out[3] = 0;
  return 0;
}

static int32_t blocks_run(aotc_exec *exec, const void *const *in, void *const *out,
                          const int64_t *syms) {
  (void)exec;
  const float *u = in[0], *v = in[1];
  double *s = out[0];
  for (int64_t j = 0; j < syms[0] / 8; ++j) {
    double acc = 0;
    for (int64_t i = 8 * j; i < 8 * j + 8; ++i)
      acc += (double)u[i] * v[i];
    s[j] = acc;
  }
  return 0;
}

/* --- cover: hits = x + 1 per element, through a parallel_for (grain 7) whose tasks each run
 * a nested parallel_for; a chunk shorter than the grain marks its first element. ---------- */
#define COVER_GRAIN 7
#define COVER_BAD (-1000000)
typedef struct {
  aotc_exec *exec;
  int32_t *hits;
  int64_t n;
  int64_t base;
} cover_closure;

static void cover_inner(void *c, int64_t b, int64_t e) {
  cover_closure *f = c;
  for (int64_t i = b; i < e; ++i)
    f->hits[f->base + i] += 1;
}

static void cover_outer(void *c, int64_t b, int64_t e) {
  cover_closure *f = c;
  if (e - b < COVER_GRAIN && !(b == 0 && e == f->n))
    f->hits[b] = COVER_BAD;
  cover_closure inner = {f->exec, f->hits, e - b, b};
  f->exec->parallel_for(f->exec, e - b, 1, cover_inner, &inner);
}

static int32_t cover_shapes(const int64_t *syms, int64_t *out) {
  out[0] = syms[0], out[1] = syms[0], out[2] = 0;
  return 0;
}

static int32_t cover_run(aotc_exec *exec, const void *const *in, void *const *out,
                         const int64_t *syms) {
  const int32_t *x = in[0];
  int32_t *hits = out[0];
  for (int64_t i = 0; i < syms[0]; ++i)
    hits[i] = x[i];
  cover_closure c = {exec, hits, syms[0], 0};
  exec->parallel_for(exec, syms[0], COVER_GRAIN, cover_outer, &c);
  return 0;
}

/* --- scaled: y[i] = g[i] + h[2 * i] + h[2 * i + 1] + h[2 * half]; h is [2*half + 1], g [half];
 * half in 1..50, a multiple of 2 -------------------------------------------------------------- */
static int32_t scaled_shapes(const int64_t *syms, int64_t *out) {
  const int64_t half = syms[0];
  out[0] = 2 * half + 1, out[1] = half, out[2] = half, out[3] = 0;
  return 0;
}

static int32_t scaled_run(aotc_exec *exec, const void *const *in, void *const *out,
                          const int64_t *syms) {
  (void)exec;
  const float *h = in[0], *g = in[1];
  float *y = out[0];
  for (int64_t i = 0; i < syms[0]; ++i)
    y[i] = g[i] + h[2 * i] + h[2 * i + 1] + h[2 * syms[0]];
  return 0;
}

/* --- lookup: y[i] = w[ids[i]] as generated code does it: an id outside 0..3 is clamped for the
 * read and makes run return index check 1 ------------------------------------------------------ */
static int32_t lookup_shapes(const int64_t *syms, int64_t *out) {
  out[0] = syms[0], out[1] = syms[0], out[2] = 0;
  return 0;
}

static int32_t lookup_run(aotc_exec *exec, const void *const *in, void *const *out,
                          const int64_t *syms) {
  const int64_t *ids = in[0];
  const float *w = (const float *)exec->weights;
  float *y = out[0];
  int32_t failed = 0;
  for (int64_t i = 0; i < syms[0]; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id > 3) {
      failed = 1;
      id = id < 0 ? 0 : 3;
    }
    y[i] = w[id];
  }
  return failed;
}

/* --- descriptors --------------------------------------------------------------------------- */
static const aotc_dim_desc dims_batch_4[] = {{0, 0, "batch", 1, 0}, {-1, 0, "4", 0, 0}};
static const aotc_tensor_desc fwd_inputs[] = {{"x", AOTC_DTYPE_F32, 2, dims_batch_4}};
static const aotc_tensor_desc fwd_outputs[] = {{"y", AOTC_DTYPE_F32, 2, dims_batch_4}};
static const aotc_sym_desc fwd_syms[] = {{"batch", 1, 512, 1}};

static const aotc_dim_desc dims_n_3[] = {{0, 0, "n", 1, 0}, {-1, 0, "3", 0, 0}};
static const aotc_dim_desc dims_n1[] = {{-1, 0, "n + 1", 0, 0}};
static const aotc_dim_desc dims_n[] = {{0, 0, "n", 1, 0}};
static const aotc_tensor_desc pair_inputs[] = {{"a", AOTC_DTYPE_F32, 2, dims_n_3},
                                               {"b", AOTC_DTYPE_F32, 1, dims_n1}};
static const aotc_tensor_desc pair_outputs[] = {{"sum", AOTC_DTYPE_F32, 1, dims_n}};
static const aotc_sym_desc pair_syms[] = {{"n", 1, 1000, 1}};
static const char *const pair_guards[] = {"n <= 100 (fake_artifact.c:1:1)"};

static const aotc_dim_desc dims_m[] = {{0, 0, "m", 1, 0}};
static const aotc_dim_desc dims_m8[] = {{-1, 0, "m // 8", 0, 0}};
static const aotc_tensor_desc blocks_inputs[] = {{"u", AOTC_DTYPE_F32, 1, dims_m},
                                                 {"v", AOTC_DTYPE_F32, 1, dims_m}};
static const aotc_tensor_desc blocks_outputs[] = {{"s", AOTC_DTYPE_F64, 1, dims_m8}};
static const aotc_sym_desc blocks_syms[] = {{"m", 8, 64, 8}};

static const aotc_dim_desc dims_k[] = {{0, 0, "k", 1, 0}};
static const aotc_tensor_desc cover_inputs[] = {{"x", AOTC_DTYPE_I32, 1, dims_k}};
static const aotc_tensor_desc cover_outputs[] = {{"hits", AOTC_DTYPE_I32, 1, dims_k}};
static const aotc_sym_desc cover_syms[] = {{"k", 1, 100000, 1}};

static const aotc_dim_desc dims_2half1[] = {{0, 0, "2*half + 1", 2, 1}};
static const aotc_dim_desc dims_half[] = {{0, 0, "half", 1, 0}};
static const aotc_tensor_desc scaled_inputs[] = {{"h", AOTC_DTYPE_F32, 1, dims_2half1},
                                                 {"g", AOTC_DTYPE_F32, 1, dims_half}};
static const aotc_tensor_desc scaled_outputs[] = {{"y", AOTC_DTYPE_F32, 1, dims_half}};
static const aotc_sym_desc scaled_syms[] = {{"half", 1, 50, 2}};

static const aotc_dim_desc dims_t[] = {{0, 0, "t", 1, 0}};
static const aotc_tensor_desc lookup_inputs[] = {{"ids", AOTC_DTYPE_I64, 1, dims_t}};
static const aotc_tensor_desc lookup_outputs[] = {{"y", AOTC_DTYPE_F32, 1, dims_t}};
static const aotc_sym_desc lookup_syms[] = {{"t", 1, 64, 1}};
static const char *const lookup_checks[] = {
    "aten.embedding (fake_artifact.c:2:1): indices into dim 0 of weight must be in 0..3"};

static const aotc_entry_desc entries[] = {
    {"forward",
     1,
     1,
     1,
     0,
     fwd_inputs,
     fwd_outputs,
     fwd_syms,
     0,
     fwd_shapes,
     {fwd_run_v3, fwd_run_v4},
     2,
     0,
     0},
    {"pair",
     2,
     1,
     1,
     1,
     pair_inputs,
     pair_outputs,
     pair_syms,
     pair_guards,
     pair_shapes,
     {pair_run, pair_run},
     1,
     0,
     0},
    {"blocks",
     2,
     1,
     1,
     0,
     blocks_inputs,
     blocks_outputs,
     blocks_syms,
     0,
     blocks_shapes,
     {blocks_run, blocks_run},
     1,
     0,
     0},
    {"cover",
     1,
     1,
     1,
     0,
     cover_inputs,
     cover_outputs,
     cover_syms,
     0,
     cover_shapes,
     {cover_run, cover_run},
     1,
     0,
     0},
    {"scaled",
     2,
     1,
     1,
     0,
     scaled_inputs,
     scaled_outputs,
     scaled_syms,
     0,
     scaled_shapes,
     {scaled_run, scaled_run},
     1,
     0,
     0},
    {"lookup",
     1,
     1,
     1,
     0,
     lookup_inputs,
     lookup_outputs,
     lookup_syms,
     0,
     lookup_shapes,
     {lookup_run, lookup_run},
     1,
     1,
     lookup_checks},
};

__attribute__((visibility("hidden"))) const aotc_artifact_desc aotc_artifact = {
    .magic = AOTC_ARTIFACT_MAGIC,
#ifdef AOTC_FAKE_BAD_FORMAT
    .format = AOTC_ARTIFACT_FORMAT + 1,
#else
    .format = AOTC_ARTIFACT_FORMAT,
#endif
    .model_name = "fake",
    .producer = "tests/abi",
    .num_entries = 6,
    .num_weights = 2,
    .entries = entries,
    .weights = weights,
#ifdef AOTC_FAKE_EXTERNAL_WEIGHTS
    .weights_data = 0,
    .weights_file = "fake_external.weights",
#else
    .weights_data = (const uint8_t *)blob,
    .weights_file = 0,
#endif
    .weights_size = 32,
    .state_offset = 16,
    .state_size = 16,
    .derived_size = AOTC_FAKE_DERIVED_SIZE,
    .program = program,
    .program_size = sizeof program - 1,
    /* aotc_hash64 of blob[] above, which the external variant's file must hold too (abi_test
     * checks the value). */
    .weights_hash = AOTC_FAKE_WEIGHTS_HASH,
    .weights_hash_kind = AOTC_HASH_XXH64,
};
