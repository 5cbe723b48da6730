/* The ABI against a real artifact: examples/mlp exported by aotc and linked directly into this C
 * program. Checks introspection, numbers against a double-precision forward computed here from
 * the artifact's own weights, the runtime's range check, and that 8 threads sharing one handle
 * for a few seconds get results bitwise identical to a single-threaded handle. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

enum { In = 784, Hidden = 1024, Out = 10, MaxBatch = 64 };

/* The f32 weight `name`: its data, or where pack-weights stored it only as the GEMM's B panels
 * (nn.Linear's [out, in] as panels of panel_rows rows, aotc_model_weight_layout), a copy
 * unpacked from its holder into `scratch` (out * in floats). */
static const float *weight(aotc_model *m, const char *name, float *scratch) {
  int32_t count = 0;
  uint64_t bytes = 0;
  CHECK_OK(aotc_model_weights(m, &count, &bytes));
  for (int32_t i = 0; i < count; ++i) {
    aotc_weight_info w;
    CHECK_OK(aotc_model_weight_info(m, i, &w));
    if (strcmp(w.name, name) != 0 || w.dtype != AOTC_DTYPE_F32)
      continue;
    aotc_weight_layout l;
    CHECK_OK(aotc_model_weight_layout(m, i, &l));
    if (l.held_by < 0)
      return (const float *)w.data;
    aotc_weight_info h;
    CHECK_OK(aotc_model_weight_info(m, l.held_by, &h));
    CHECK(w.data == NULL && scratch && l.panel_rows > 0 && l.winograd_tile == 0 &&
          l.pair_cols == 0 && h.dtype == AOTC_DTYPE_F32 && h.data);
    if (!scratch || l.panel_rows <= 0 || !h.data)
      return NULL;
    const float *panels = h.data;
    for (int64_t r = 0; r < l.rows; ++r)
      for (int64_t c = 0; c < l.cols; ++c)
        scratch[r * l.cols + c] =
            panels[r / l.panel_rows * l.panel_rows * l.cols + c * l.panel_rows + r % l.panel_rows];
    return scratch;
  }
  fprintf(stderr, "no f32 weight %s\n", name);
  ++harness_failures;
  return NULL;
}

/* y = x W^T + b, optionally relu, in double. */
static void linear(const double *x, int batch, int in, const float *w, const float *b, int out,
                   int relu, double *y) {
  for (int i = 0; i < batch; ++i)
    for (int o = 0; o < out; ++o) {
      double s = b[o];
      for (int k = 0; k < in; ++k)
        s += x[i * in + k] * w[o * in + k];
      y[i * out + o] = relu && s < 0 ? 0 : s;
    }
}

static void check_forward(aotc_model *m, int batch, uint64_t *rng) {
  float *x = malloc(sizeof(float) * batch * In);
  double *xd = malloc(sizeof(double) * batch * In);
  double *h1 = malloc(sizeof(double) * batch * Hidden),
         *h2 = malloc(sizeof(double) * batch * Hidden);
  double want[MaxBatch * Out];
  float got[MaxBatch * Out];
  for (int i = 0; i < batch * In; ++i)
    xd[i] = x[i] = rng_float(rng);
  float *w1 = malloc(sizeof(float) * Hidden * In), *w2 = malloc(sizeof(float) * Hidden * Hidden),
        *w3 = malloc(sizeof(float) * Out * Hidden);
  linear(xd, batch, In, weight(m, "fc1.weight", w1), weight(m, "fc1.bias", NULL), Hidden, 1, h1);
  linear(h1, batch, Hidden, weight(m, "fc2.weight", w2), weight(m, "fc2.bias", NULL), Hidden, 1,
         h2);
  linear(h2, batch, Hidden, weight(m, "fc3.weight", w3), weight(m, "fc3.bias", NULL), Out, 0, want);
  free(w1);
  free(w2);
  free(w3);

  int64_t shape[2] = {batch, In};
  aotc_tensor input = make_tensor(x, AOTC_DTYPE_F32, 2, shape);
  aotc_tensor output = make_tensor(got, AOTC_DTYPE_F32, 0, shape);
  output.size_bytes = sizeof got;
  CHECK_OK(aotc_model_run(m, 0, &input, 1, &output, 1));
  CHECK(output.rank == 2 && output.shape[0] == batch && output.shape[1] == Out);
  double max_diff = 0, max_want = 0;
  for (int i = 0; i < batch * Out; ++i) {
    double d = fabs(got[i] - want[i]);
    max_diff = isnan(got[i]) ? INFINITY : (d > max_diff ? d : max_diff);
    max_want = fabs(want[i]) > max_want ? fabs(want[i]) : max_want;
  }
  printf("batch %d: max |got - want| / max |want| = %.3g\n", batch, max_diff / max_want);
  CHECK(max_diff <= 1e-5 * max_want);
  free(x), free(xd), free(h1), free(h2);
}

struct worker {
  aotc_model *shared;
  const float *inputs;   /* MaxBatch x In */
  const float *expected; /* per batch size b (1..MaxBatch): b x Out at offset (b-1)*MaxBatch*Out */
  uint64_t seed;
  double seconds;
  long runs, mismatches;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *work(void *arg) {
  struct worker *w = arg;
  uint64_t rng = w->seed;
  float got[MaxBatch * Out];
  double end = now() + w->seconds;
  while (now() < end) {
    int batch = (int)rng_range(&rng, 1, MaxBatch);
    int64_t shape[2] = {batch, In};
    aotc_tensor input = make_tensor((void *)w->inputs, AOTC_DTYPE_F32, 2, shape);
    aotc_tensor output = make_tensor(got, AOTC_DTYPE_F32, 0, shape);
    output.size_bytes = sizeof got;
    if (aotc_model_run(w->shared, 0, &input, 1, &output, 1) != AOTC_OK) {
      ++w->mismatches;
      continue;
    }
    ++w->runs;
    if (memcmp(got, w->expected + (size_t)(batch - 1) * MaxBatch * Out,
               sizeof(float) * batch * Out) != 0)
      ++w->mismatches;
  }
  return NULL;
}

int main(void) {
  uint64_t rng = 20261122;
  aotc_model_options options;
  aotc_model_options_init(&options);
  options.num_threads = 1;
  aotc_model *single = NULL;
  CHECK_OK(aotc_model_create(&options, &single));
  if (!single)
    return harness_finish("abi_mlp_artifact_test");

  int32_t entries = 0;
  CHECK_OK(aotc_model_num_entries(single, &entries));
  CHECK(entries == 1);
  aotc_tensor_info info;
  CHECK_OK(aotc_model_input_info(single, 0, 0, &info));
  CHECK(strcmp(info.name, "x") == 0 && info.dtype == AOTC_DTYPE_F32 && info.rank == 2);
  CHECK(strcmp(info.dims[0].expr, "batch") == 0 && info.dims[0].lo == 1 &&
        info.dims[0].hi == MaxBatch && info.dims[1].value == In);
  CHECK_OK(aotc_model_output_info(single, 0, 0, &info));
  CHECK(strcmp(info.name, "logits") == 0 && info.dims[1].value == Out);

  /* Exported at fp32: its CPU GEMMs round nothing. */
  int32_t precision = -1;
  CHECK_OK(aotc_artifact_cpu_precision(&precision));
  CHECK(precision == AOTC_PRECISION_FP32);
  CHECK_ERROR(aotc_artifact_cpu_precision(NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_artifact_cpu_precision: out_precision is null");

  /* The MLP's weights are the GEMMs' B operands: fc1's [1024, 784] and fc2's [1024, 1024] are
   * stored only as the 32-column panels the register tile reads (pack-weights: panels of their
   * rows, each the next weight), fc3's 10 rows and the biases as themselves. */
  int32_t weights = 0;
  uint64_t weight_bytes = 0;
  CHECK_OK(aotc_model_weights(single, &weights, &weight_bytes));
  CHECK(weights == 8);
  int held = 0;
  for (int32_t i = 0; i < weights; ++i) {
    aotc_weight_info w;
    CHECK_OK(aotc_model_weight_info(single, i, &w));
    aotc_weight_layout layout;
    memset(&layout, 0x5a, sizeof layout);
    CHECK_OK(aotc_model_weight_layout(single, i, &layout));
    CHECK(layout.pair_cols == 0 && layout.reserved[0] == 0);
    if (strcmp(w.name, "fc1.weight") == 0 || strcmp(w.name, "fc2.weight") == 0) {
      ++held;
      CHECK(layout.held_by >= 0 && layout.rows == Hidden && layout.panel_rows == 32 &&
            layout.cols == (strcmp(w.name, "fc1.weight") == 0 ? In : Hidden) && w.data == NULL);
    } else {
      CHECK(layout.held_by == -1 && layout.rows == 0 && w.data != NULL);
    }
  }
  CHECK(held == 2);
  aotc_weight_layout layout;
  CHECK_ERROR(aotc_model_weight_layout(single, weights, &layout), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_weight_layout: weight 8 is out of range (the model has 8)");
  CHECK_ERROR(aotc_model_weight_layout(single, -1, &layout), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_weight_layout: weight -1 is out of range (the model has 8)");
  CHECK_ERROR(aotc_model_weight_layout(single, 0, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_weight_layout: out_layout is null");
  CHECK_ERROR(aotc_model_weight_layout(NULL, 0, &layout), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_weight_layout: model is null");

  for (int batch = 1; batch <= MaxBatch; batch = batch == 1    ? 5
                                                 : batch == 5  ? 33
                                                 : batch == 33 ? 64
                                                               : 65)
    check_forward(single, batch, &rng);

  float x[MaxBatch * In];
  for (int i = 0; i < MaxBatch * In; ++i)
    x[i] = rng_float(&rng);
  int64_t shape[2] = {MaxBatch + 1, In};
  aotc_tensor input = make_tensor(x, AOTC_DTYPE_F32, 2, shape);
  aotc_tensor output = make_tensor(NULL, 0, 0, shape);
  CHECK_ERROR(aotc_model_run(single, 0, &input, 1, &output, 1), AOTC_ERROR_INVALID_ARGUMENT,
              "entry \"forward\": input \"x\" dim 0 (batch) = 65 is outside 1..64");

  /* Expected results of every batch size from the single-threaded handle. */
  float *expected = malloc(sizeof(float) * MaxBatch * MaxBatch * Out);
  for (int batch = 1; batch <= MaxBatch; ++batch) {
    int64_t s[2] = {batch, In};
    aotc_tensor in = make_tensor(x, AOTC_DTYPE_F32, 2, s);
    aotc_tensor out =
        make_tensor(expected + (size_t)(batch - 1) * MaxBatch * Out, AOTC_DTYPE_F32, 0, s);
    out.size_bytes = sizeof(float) * MaxBatch * Out;
    CHECK_OK(aotc_model_run(single, 0, &in, 1, &out, 1));
  }
  options.num_threads = 2;
  aotc_model *shared = NULL;
  CHECK_OK(aotc_model_create(&options, &shared));
  enum { Threads = 8 };
  pthread_t threads[Threads];
  struct worker workers[Threads];
  for (int t = 0; t < Threads; ++t) {
    workers[t] = (struct worker){shared, x, expected, 1000 + t, 3.0, 0, 0};
    pthread_create(&threads[t], NULL, work, &workers[t]);
  }
  long runs = 0, mismatches = 0;
  for (int t = 0; t < Threads; ++t) {
    pthread_join(threads[t], NULL);
    runs += workers[t].runs, mismatches += workers[t].mismatches;
  }
  printf("8 threads, 3 s: %ld runs, %ld mismatches\n", runs, mismatches);
  CHECK(runs > 0 && mismatches == 0);
  free(expected);
  aotc_model_destroy(shared);
  aotc_model_destroy(single);
  return harness_finish("abi_mlp_artifact_test");
}
