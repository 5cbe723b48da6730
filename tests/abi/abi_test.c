/* The ABI exercised from C11 through a directly linked artifact (the fake one): version,
 * introspection, runs into caller and runtime buffers, variants, threads, external weights. */
#define _GNU_SOURCE
#include "harness.h"
#include "hash.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

extern atomic_long aotc_fake_variant_runs[2];

/* What fake_artifact.c records for its blob; test_weights_file checks it is aotc_hash64's. */
#define AOTC_FAKE_WEIGHTS_HASH 0x079ad9ee7b3d5200ull
static const float kWeights[4] = {0.5f, -1.25f, 2.0f, 3.5f};
static const float kAcc = 0.25f;

static void test_basics(void) {
  CHECK(aotc_abi_version() == AOTC_ABI_VERSION);
  CHECK(AOTC_ABI_VERSION == 1);
  CHECK(strcmp(aotc_last_error(), "") == 0);
  const char *names[] = {"f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"};
  for (int32_t d = 1; d <= 10; ++d)
    CHECK(strcmp(aotc_dtype_name(d), names[d - 1]) == 0);
  CHECK(strcmp(aotc_dtype_name(0), "invalid") == 0);
  CHECK(strcmp(aotc_dtype_name(11), "invalid") == 0);
  CHECK(strcmp(aotc_dtype_name(-1), "invalid") == 0);
  aotc_model_options o;
  memset(&o, 0xab, sizeof o);
  aotc_model_options_init(&o);
  CHECK(o.struct_size == sizeof(aotc_model_options));
  CHECK(o.num_threads == 0 && o.device_type == AOTC_DEVICE_CPU && o.device_index == 0);
  CHECK(o.cpu_variant == AOTC_CPU_VARIANT_AUTO && o.weights_path == NULL);
  CHECK(o.flags == 0 && o.cuda_graphs == 0 && o.cuda_driver == NULL && o.reserved[0] == 0 &&
        o.reserved[1] == 0);
  aotc_model_destroy(NULL);
  aotc_tensor_release(NULL);
}

static void check_dim(const aotc_dim_info *d, const char *expr, int64_t value, int64_t lo,
                      int64_t hi, const char *symbol) {
  CHECK(strcmp(d->expr, expr) == 0);
  CHECK(d->value == value);
  CHECK(d->lo == lo);
  CHECK(d->hi == hi);
  CHECK(symbol ? d->symbol && strcmp(d->symbol, symbol) == 0 : d->symbol == NULL);
}

static void test_introspection(aotc_model *m) {
  int32_t n = 0;
  CHECK_OK(aotc_model_num_entries(m, &n));
  CHECK(n == 6);
  const char *expected[] = {"forward", "pair", "blocks", "cover", "scaled", "lookup"};
  for (int32_t e = 0; e < 6; ++e) {
    const char *name = NULL;
    int32_t found = -1;
    CHECK_OK(aotc_model_entry_name(m, e, &name));
    CHECK(name && strcmp(name, expected[e]) == 0);
    CHECK_OK(aotc_model_find_entry(m, expected[e], &found));
    CHECK(found == e);
  }
  int32_t count = 0;
  CHECK_OK(aotc_model_num_inputs(m, 1, &count));
  CHECK(count == 2);
  CHECK_OK(aotc_model_num_outputs(m, 1, &count));
  CHECK(count == 1);

  aotc_tensor_info info;
  CHECK_OK(aotc_model_input_info(m, 0, 0, &info));
  CHECK(strcmp(info.name, "x") == 0 && info.dtype == AOTC_DTYPE_F32 && info.rank == 2);
  check_dim(&info.dims[0], "batch", -1, 1, 512, "batch");
  check_dim(&info.dims[1], "4", 4, 4, 4, NULL);
  CHECK_OK(aotc_model_output_info(m, 0, 0, &info));
  CHECK(strcmp(info.name, "y") == 0 && info.dtype == AOTC_DTYPE_F32 && info.rank == 2);
  CHECK_OK(aotc_model_input_info(m, 1, 1, &info));
  CHECK(strcmp(info.name, "b") == 0 && info.rank == 1);
  check_dim(&info.dims[0], "n + 1", -1, 0, INT64_MAX, NULL);
  CHECK_OK(aotc_model_output_info(m, 2, 0, &info));
  CHECK(strcmp(info.name, "s") == 0 && info.dtype == AOTC_DTYPE_F64);
  check_dim(&info.dims[0], "m // 8", -1, 0, INT64_MAX, NULL);
  CHECK_OK(aotc_model_input_info(m, 2, 1, &info));
  check_dim(&info.dims[0], "m", -1, 8, 64, "m");
  /* A multiple of a root dim plus a constant has that root dim's range, scaled. */
  CHECK_OK(aotc_model_input_info(m, 4, 0, &info));
  check_dim(&info.dims[0], "2*half + 1", -1, 3, 101, NULL);

  int32_t num_weights = 0;
  uint64_t weight_bytes = 0;
  CHECK_OK(aotc_model_weights(m, &num_weights, &weight_bytes));
  CHECK(num_weights == 2 && weight_bytes == 32);
  const void *program = NULL;
  uint64_t program_size = 0;
  CHECK_OK(aotc_model_program(m, &program, &program_size));
  CHECK(program_size == 12 && memcmp(program, "fake program", 12) == 0);

  const char *variant = NULL;
  CHECK_OK(aotc_model_cpu_variant(m, &variant));
  __builtin_cpu_init();
  const int v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  CHECK(variant && strcmp(variant, v4 ? "x86-64-v4" : "x86-64-v3") == 0);
  int32_t threads = 0;
  CHECK_OK(aotc_model_num_threads(m, &threads));
  CHECK(threads == (int32_t)sysconf(_SC_NPROCESSORS_ONLN));
}

/* y = x * w + 1 from `weights`; returns the number of mismatches. */
static int check_forward(const float *x, const float *y, int64_t batch, const float *weights) {
  int bad = 0;
  for (int64_t i = 0; i < batch * 4; ++i)
    bad += !close_enough(y[i], (double)x[i] * weights[i % 4] + 1.0);
  return bad;
}

static void test_forward(aotc_model *m, uint64_t *rng, const float *weights) {
  static float x[512 * 4], y[512 * 4 + 1];
  const int64_t sizes[] = {1, 2, 7, 64, 333, 512, rng_range(rng, 1, 512)};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const int64_t batch = sizes[s];
    for (int64_t i = 0; i < batch * 4; ++i)
      x[i] = rng_float(rng);
    const int64_t shape[] = {batch, 4};
    aotc_tensor in = make_tensor(x, AOTC_DTYPE_F32, 2, shape);
    /* Caller buffer, dtype left 0 (allowed), size exactly enough. */
    aotc_tensor out = make_tensor(y, 0, 0, NULL);
    out.size_bytes = (uint64_t)batch * 16;
    memset(y, 0xff, sizeof y);
    CHECK_OK(aotc_model_run(m, 0, &in, 1, &out, 1));
    CHECK(out.data == y && out.flags == 0);
    CHECK(out.dtype == AOTC_DTYPE_F32 && out.rank == 2);
    CHECK(out.shape[0] == batch && out.shape[1] == 4);
    CHECK(check_forward(x, y, batch, weights) == 0);
    /* The caller buffer is not written past the output. */
    CHECK(((uint32_t *)y)[batch * 4] == 0xffffffffu);

    /* Runtime-allocated output. */
    aotc_tensor owned = make_tensor(NULL, 0, 0, NULL);
    CHECK_OK(aotc_model_run(m, 0, &in, 1, &owned, 1));
    CHECK(owned.data != NULL && (owned.flags & AOTC_TENSOR_RUNTIME_OWNED));
    CHECK(((uintptr_t)owned.data & 63) == 0);
    CHECK(owned.size_bytes == (uint64_t)batch * 16);
    CHECK(owned.dtype == AOTC_DTYPE_F32 && owned.rank == 2 && owned.shape[0] == batch);
    if (owned.data)
      CHECK(check_forward(x, owned.data, batch, weights) == 0);
    aotc_tensor_release(&owned);
    CHECK(owned.data == NULL && owned.flags == 0);
    aotc_tensor_release(&owned);
  }
  /* Dense strides given explicitly are accepted. */
  const int64_t shape[] = {3, 4}, strides[] = {4, 1};
  aotc_tensor in = make_tensor(x, AOTC_DTYPE_F32, 2, shape);
  in.strides = strides;
  in.size_bytes = 48;
  aotc_tensor out = make_tensor(y, AOTC_DTYPE_F32, 0, NULL);
  out.size_bytes = 48;
  CHECK_OK(aotc_model_run(m, 0, &in, 1, &out, 1));
  CHECK(check_forward(x, y, 3, weights) == 0);
}

static void test_pair(aotc_model *m, uint64_t *rng, float acc) {
  static float a[100 * 3], b[101], sum[100];
  for (int64_t n = 1; n <= 100; n += rng_range(rng, 1, 30)) {
    for (int64_t i = 0; i < 3 * n; ++i)
      a[i] = rng_float(rng);
    for (int64_t i = 0; i <= n; ++i)
      b[i] = rng_float(rng);
    const int64_t sa[] = {n, 3}, sb[] = {n + 1};
    aotc_tensor in[2] = {make_tensor(a, AOTC_DTYPE_F32, 2, sa),
                         make_tensor(b, AOTC_DTYPE_F32, 1, sb)};
    aotc_tensor out = make_tensor(sum, AOTC_DTYPE_F32, 0, NULL);
    out.size_bytes = sizeof sum;
    CHECK_OK(aotc_model_run(m, 1, in, 2, &out, 1));
    CHECK(out.rank == 1 && out.shape[0] == n);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want =
          (double)a[3 * i] + a[3 * i + 1] + a[3 * i + 2] + (double)b[i] * b[i + 1] + acc;
      bad += !close_enough(sum[i], want);
    }
    CHECK(bad == 0);
  }
}

static void test_blocks(aotc_model *m, uint64_t *rng) {
  static float u[64], v[64];
  for (int64_t mm = 8; mm <= 64; mm += 8) {
    for (int64_t i = 0; i < mm; ++i)
      u[i] = rng_float(rng), v[i] = rng_float(rng);
    const int64_t shape[] = {mm};
    aotc_tensor in[2] = {make_tensor(u, AOTC_DTYPE_F32, 1, shape),
                         make_tensor(v, AOTC_DTYPE_F32, 1, shape)};
    aotc_tensor out = make_tensor(NULL, 0, 0, NULL);
    CHECK_OK(aotc_model_run(m, 2, in, 2, &out, 1));
    CHECK(out.dtype == AOTC_DTYPE_F64 && out.rank == 1 && out.shape[0] == mm / 8);
    CHECK(out.size_bytes == (uint64_t)(mm / 8) * 8);
    const double *s = out.data;
    for (int64_t j = 0; s && j < mm / 8; ++j) {
      double want = 0;
      for (int64_t i = 8 * j; i < 8 * j + 8; ++i)
        want += (double)u[i] * v[i];
      CHECK(close_enough(s[j], want));
    }
    aotc_tensor_release(&out);
  }
}

/* parallel_for covers [0, n) exactly once in chunks of at least the grain, nested calls too. */
static void test_cover(aotc_model *m, uint64_t *rng) {
  static int32_t x[100000], hits[100000];
  const int64_t sizes[] = {
      1, 6, 7, 13, 14, 15, 100, 1000, 99999, 100000, rng_range(rng, 1, 100000)};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const int64_t k = sizes[s];
    for (int64_t i = 0; i < k; ++i)
      x[i] = (int32_t)rng_range(rng, -1000, 1000);
    const int64_t shape[] = {k};
    aotc_tensor in = make_tensor(x, AOTC_DTYPE_I32, 1, shape);
    aotc_tensor out = make_tensor(hits, AOTC_DTYPE_I32, 0, NULL);
    out.size_bytes = sizeof hits;
    CHECK_OK(aotc_model_run(m, 3, &in, 1, &out, 1));
    int64_t bad = 0;
    for (int64_t i = 0; i < k; ++i)
      bad += hits[i] != x[i] + 1;
    if (bad)
      fprintf(stderr, "cover k=%lld: %lld wrong elements\n", (long long)k, (long long)bad);
    CHECK(bad == 0);
  }
}

/* scaled binds half from h's size 2*half + 1; the result uses both inputs and half itself. */
static void test_scaled(aotc_model *m, uint64_t *rng) {
  static float h[101], g[50], y[50];
  for (int64_t half = 2; half <= 50; half += 2 * rng_range(rng, 1, 8)) {
    for (int64_t i = 0; i <= 2 * half; ++i)
      h[i] = rng_float(rng);
    for (int64_t i = 0; i < half; ++i)
      g[i] = rng_float(rng);
    const int64_t sh[] = {2 * half + 1}, sg[] = {half};
    aotc_tensor in[2] = {make_tensor(h, AOTC_DTYPE_F32, 1, sh),
                         make_tensor(g, AOTC_DTYPE_F32, 1, sg)};
    aotc_tensor out = make_tensor(y, AOTC_DTYPE_F32, 0, NULL);
    out.size_bytes = sizeof y;
    CHECK_OK(aotc_model_run(m, 4, in, 2, &out, 1));
    CHECK(out.rank == 1 && out.shape[0] == half);
    int bad = 0;
    for (int64_t i = 0; i < half; ++i)
      bad += !close_enough(y[i], (double)g[i] + h[2 * i] + h[2 * i + 1] + h[2 * half]);
    CHECK(bad == 0);
  }
}

static aotc_model *create(int32_t threads, int32_t variant, const char *weights_path) {
  aotc_model_options o;
  aotc_model_options_init(&o);
  o.num_threads = threads;
  o.cpu_variant = variant;
  o.weights_path = weights_path;
  aotc_model *m = NULL;
  CHECK_OK(aotc_model_create(&o, &m));
  return m;
}

static void test_variants(uint64_t *rng) {
  const long v3_before = atomic_load(&aotc_fake_variant_runs[0]);
  const long v4_before = atomic_load(&aotc_fake_variant_runs[1]);
  setenv("AOTC_CPU_VARIANT", "x86-64-v3", 1);
  aotc_model *m = create(2, AOTC_CPU_VARIANT_AUTO, NULL);
  unsetenv("AOTC_CPU_VARIANT");
  if (!m)
    return;
  const char *variant = NULL;
  CHECK_OK(aotc_model_cpu_variant(m, &variant));
  CHECK(strcmp(variant, "x86-64-v3") == 0);
  test_forward(m, rng, kWeights);
  CHECK(atomic_load(&aotc_fake_variant_runs[0]) > v3_before);
  CHECK(atomic_load(&aotc_fake_variant_runs[1]) == v4_before);
  aotc_model_destroy(m);

  m = create(1, AOTC_CPU_VARIANT_X86_64_V3, NULL);
  CHECK_OK(aotc_model_cpu_variant(m, &variant));
  CHECK(strcmp(variant, "x86-64-v3") == 0);
  aotc_model_destroy(m);
}

static aotc_model *create_from(const char *weights_path, uint32_t flags) {
  aotc_model_options o;
  aotc_model_options_init(&o);
  o.num_threads = 3;
  o.weights_path = weights_path;
  o.flags = flags;
  aotc_model *m = NULL;
  CHECK_OK(aotc_model_create(&o, &m));
  return m;
}

static void write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "r+b");
  CHECK(f && fwrite(data, size, 1, f) == 1);
  if (f)
    fclose(f);
}

/* The fake's blob: w, then the mutable acc. */
static const float kBlob[8] = {0.5f, -1.25f, 2.0f, 3.5f, 0.25f, 0, 0, 0};

/* A weights file is checked against the hash the artifact recorded, then read into the model's
 * own memory: the file can be overwritten in place or truncated under a live model without
 * changing its answers or crashing it. Before, any same-size bytes were taken, and the file was
 * mapped: an overwrite changed the answers and a truncation killed the process (SIGBUS). */
static void test_weights_file(uint64_t *rng) {
  CHECK(aotc_hash64(kBlob, sizeof kBlob) == AOTC_FAKE_WEIGHTS_HASH);
  char path[] = "/tmp/aotc_abi_weights_XXXXXX";
  const int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0)
    return;
  /* Another model's weights, same size: refused, naming the file and the fix. */
  const float other[8] = {1.5f, 0.75f, -3.0f, 0.125f, -0.5f, 0, 0, 0};
  CHECK(write(fd, other, sizeof other) == (ssize_t)sizeof other);
  close(fd);
  char want[512];
  snprintf(want, sizeof want,
           "aotc_model_create: weights file \"%s\" does not match the artifact (hash %016llx, "
           "recorded %016llx); re-export, or use the weights file written with the artifact",
           path, (unsigned long long)aotc_hash64(other, sizeof other),
           (unsigned long long)AOTC_FAKE_WEIGHTS_HASH);
  aotc_model_options o;
  aotc_model_options_init(&o);
  o.weights_path = path;
  aotc_model *m = (aotc_model *)&o;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_RESOURCE, want);
  CHECK(m == NULL);

  /* Unchecked, the file replaces the embedded blob, mutable state included; and
   * aotc_model_check_weights still tells. */
  m = create_from(path, AOTC_MODEL_MAP_WEIGHTS_UNCHECKED);
  if (m) {
    int32_t threads = 0;
    CHECK_OK(aotc_model_num_threads(m, &threads));
    CHECK(threads == 3);
    test_forward(m, rng, other);
    test_pair(m, rng, -0.5f);
    snprintf(want, sizeof want,
             "aotc_model_check_weights: weights file \"%s\" does not match the artifact (hash "
             "%016llx, recorded %016llx); re-export, or use the weights file written with the "
             "artifact",
             path, (unsigned long long)aotc_hash64(other, sizeof other),
             (unsigned long long)AOTC_FAKE_WEIGHTS_HASH);
    CHECK_ERROR(aotc_model_check_weights(m), AOTC_ERROR_RESOURCE, want);
    /* Mapped, an overwrite in place shows through: what the flag's documentation warns of. */
    write_file(path, kBlob, sizeof kBlob);
    test_forward(m, rng, kWeights);
    aotc_model_destroy(m);
  }

  /* The right weights: accepted, and the model owns them. */
  m = create_from(path, 0);
  if (m) {
    CHECK_OK(aotc_model_check_weights(m));
    test_forward(m, rng, kWeights);
    write_file(path, other, sizeof other);
    test_forward(m, rng, kWeights);
    CHECK(truncate(path, 0) == 0);
    test_forward(m, rng, kWeights);
    test_pair(m, rng, kAcc);
    CHECK_OK(aotc_model_check_weights(m));
    aotc_model_destroy(m);
  }
  /* Random bytes of the right size. */
  uint64_t noise[4];
  for (int i = 0; i < 4; ++i)
    noise[i] = rng_next(rng);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(noise, sizeof noise, 1, f) == 1);
  if (f)
    fclose(f);
  m = (aotc_model *)&o;
  CHECK(aotc_model_create(&o, &m) == AOTC_ERROR_RESOURCE && m == NULL);
  CHECK(strstr(aotc_last_error(), "does not match the artifact") != NULL);
  unlink(path);

  /* Embedded weights are checked on demand only (create would read every page of them). */
  m = create(1, AOTC_CPU_VARIANT_AUTO, NULL);
  if (m) {
    CHECK_OK(aotc_model_check_weights(m));
    aotc_model_destroy(m);
  }
  CHECK_ERROR(aotc_model_check_weights(NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_check_weights: model is null");
}

/* Runtime-owned outputs outlive their model. */
static void test_output_outlives_model(void) {
  aotc_model *m = create(2, AOTC_CPU_VARIANT_AUTO, NULL);
  if (!m)
    return;
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t shape[] = {2, 4};
  aotc_tensor in = make_tensor(x, AOTC_DTYPE_F32, 2, shape);
  aotc_tensor out = make_tensor(NULL, 0, 0, NULL);
  CHECK_OK(aotc_model_run(m, 0, &in, 1, &out, 1));
  aotc_model_destroy(m);
  CHECK(out.data && check_forward(x, out.data, 2, kWeights) == 0);
  aotc_tensor_release(&out);
}

int main(void) {
  uint64_t seed = (uint64_t)time(NULL) * 2654435761u | 1;
  printf("seed %llu\n", (unsigned long long)seed);
  uint64_t rng = seed;
  test_basics();
  aotc_model *m = NULL;
  CHECK_OK(aotc_model_create(NULL, &m));
  if (!m)
    return harness_finish("abi_test");
  test_introspection(m);
  const long runs_before =
      atomic_load(&aotc_fake_variant_runs[0]) + atomic_load(&aotc_fake_variant_runs[1]);
  test_forward(m, &rng, kWeights);
  const char *variant = NULL;
  CHECK_OK(aotc_model_cpu_variant(m, &variant));
  const int chosen = strcmp(variant, "x86-64-v4") == 0;
  CHECK(atomic_load(&aotc_fake_variant_runs[chosen]) > 0);
  CHECK(atomic_load(&aotc_fake_variant_runs[0]) + atomic_load(&aotc_fake_variant_runs[1]) ==
        runs_before + 15);
  test_pair(m, &rng, kAcc);
  test_blocks(m, &rng);
  test_cover(m, &rng);
  test_scaled(m, &rng);
  aotc_model_destroy(m);

  aotc_model *single = create(1, AOTC_CPU_VARIANT_AUTO, NULL);
  if (single) {
    test_forward(single, &rng, kWeights);
    test_cover(single, &rng);
    aotc_model_destroy(single);
  }
  aotc_model *many = create(7, AOTC_CPU_VARIANT_AUTO, NULL);
  if (many) {
    test_cover(many, &rng);
    test_forward(many, &rng, kWeights);
    aotc_model_destroy(many);
  }
  test_variants(&rng);
  test_output_outlives_model();
  CHECK(strcmp(aotc_last_error(), "") == 0);
  /* Last: it fails calls on purpose, which leaves this thread's last error set. */
  test_weights_file(&rng);
  return harness_finish("abi_test");
}
