/* Every check of the ABI, one case each: the status, the exact message, and that a failed run
 * leaves its outputs untouched and allocates nothing. Compiled as C11. */
#define _GNU_SOURCE
#include "harness.h"
#include "hash.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static aotc_model *model;
static float x[600 * 4], a[200 * 3], b[201];
static float out_buf[600 * 4];

/* A run whose failure must leave `out` exactly as given. */
#define CHECK_RUN_ERROR(entry, inputs, n_in, outs, n_out, status, message)                         \
  do {                                                                                             \
    aotc_tensor before_[4];                                                                        \
    memcpy(before_, (outs), sizeof(aotc_tensor) * (size_t)(n_out));                                \
    CHECK_ERROR(aotc_model_run(model, (entry), (inputs), (n_in), (outs), (n_out)), (status),       \
                (message));                                                                        \
    CHECK(memcmp(before_, (outs), sizeof(aotc_tensor) * (size_t)(n_out)) == 0);                    \
  } while (0)

static aotc_tensor x_tensor(int64_t batch, int64_t cols) {
  const int64_t shape[] = {batch, cols};
  return make_tensor(x, AOTC_DTYPE_F32, 2, shape);
}

static aotc_tensor out_tensor(void) { return make_tensor(NULL, 0, 0, NULL); }

static void test_null_arguments(void) {
  aotc_tensor in = x_tensor(2, 4), out = out_tensor();
  CHECK_ERROR(aotc_model_run(NULL, 0, &in, 1, &out, 1), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_run: model is null");
  CHECK_ERROR(aotc_model_create(NULL, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: out_model is null");
  CHECK_ERROR(aotc_model_num_entries(NULL, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_num_entries: model is null");
  CHECK_ERROR(aotc_model_num_entries(model, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_num_entries: out_count is null");
  CHECK_ERROR(aotc_model_entry_name(model, 0, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_entry_name: out_name is null");
  CHECK_ERROR(aotc_model_find_entry(model, "forward", NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_find_entry: out_entry is null");
  int32_t entry = 0;
  CHECK_ERROR(aotc_model_find_entry(model, NULL, &entry), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_find_entry: name is null");
  CHECK_ERROR(aotc_model_input_info(model, 0, 0, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_input_info: out_info is null");
  CHECK_ERROR(aotc_model_output_info(NULL, 0, 0, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_output_info: model is null");
  CHECK_ERROR(aotc_model_cpu_variant(model, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_cpu_variant: out_name is null");
  CHECK_ERROR(aotc_model_num_threads(model, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_num_threads: out is null");
  uint64_t bytes;
  CHECK_ERROR(aotc_model_weights(model, NULL, &bytes), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_weights: out_count is null");
  CHECK_ERROR(aotc_model_program(model, NULL, &bytes), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_program: out_data is null");
  CHECK_RUN_ERROR(0, NULL, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": inputs is null");
  CHECK_ERROR(aotc_model_run(model, 0, &in, 1, NULL, 1), AOTC_ERROR_INVALID_ARGUMENT,
              "entry \"forward\": outputs is null");
}

static void test_entries(void) {
  aotc_tensor in = x_tensor(2, 4), out = out_tensor();
  CHECK_RUN_ERROR(6, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "aotc_model_run: entry 6 is out of range (the model has 6 entries)");
  CHECK_RUN_ERROR(-1, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "aotc_model_run: entry -1 is out of range (the model has 6 entries)");
  const char *name = NULL;
  CHECK_ERROR(aotc_model_entry_name(model, 9, &name), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_entry_name: entry 9 is out of range (the model has 6 entries)");
  int32_t entry = 42;
  CHECK_ERROR(aotc_model_find_entry(model, "backward", &entry), AOTC_ERROR_NOT_FOUND,
              "no entry \"backward\" in the model (entries: forward, pair, blocks, cover, scaled, "
              "lookup)");
  CHECK(entry == 42);
  aotc_tensor_info info;
  CHECK_ERROR(aotc_model_input_info(model, 0, 1, &info), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_input_info: input 1 is out of range (entry \"forward\" has 1 input)");
  CHECK_ERROR(aotc_model_output_info(model, 1, -1, &info), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_output_info: output -1 is out of range (entry \"pair\" has 1 output)");
  int32_t count;
  CHECK_ERROR(aotc_model_num_inputs(model, 6, &count), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_num_inputs: entry 6 is out of range (the model has 6 entries)");
}

static void test_counts(void) {
  aotc_tensor in[2] = {x_tensor(2, 4), x_tensor(2, 4)}, out[2] = {out_tensor(), out_tensor()};
  CHECK_RUN_ERROR(0, in, 2, out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": expected 1 input, got 2");
  CHECK_RUN_ERROR(1, in, 1, out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"pair\": expected 2 inputs, got 1");
  CHECK_RUN_ERROR(0, in, 1, out, 2, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": expected 1 output, got 2");
  CHECK_RUN_ERROR(0, in, 1, out, 0, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": expected 1 output, got 0");
}

static void test_input_checks(void) {
  aotc_tensor out = out_tensor();
  aotc_tensor in = x_tensor(2, 4);
  in.data = NULL;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" data is null");
  in = x_tensor(2, 4);
  in.dtype = AOTC_DTYPE_F64;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" has dtype f64, expected f32");
  in.dtype = 77;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" has dtype invalid, expected f32");
  in = x_tensor(2, 4);
  in.rank = 3;
  in.shape[2] = 1;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" has rank 3, expected 2");
  in = x_tensor(2, 5);
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" dim 1 = 5, expected 4");
  in = x_tensor(600, 4);
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" dim 0 (batch) = 600 is outside 1..512");
  in = x_tensor(0, 4);
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" dim 0 (batch) = 0 is outside 1..512");
  in = x_tensor(-1, 4);
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" dim 0 (batch) = -1 is negative");
  in = x_tensor((int64_t)1 << 40, (int64_t)1 << 40);
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" of shape [1099511627776, 1099511627776] has "
                  "more bytes than fit in 63 bits");
  in = x_tensor((int64_t)1 << 61, 4);
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" of shape [2305843009213693952, 4] has more "
                  "bytes than fit in 63 bits");
  in = x_tensor(3, 4);
  const int64_t strides[] = {1, 3};
  in.strides = strides;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" has strides [1, 3]; only dense row-major "
                  "strides [4, 1] are supported");
  in = x_tensor(3, 4);
  in.size_bytes = 40;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" buffer has 40 bytes, needs 48");
  in = x_tensor(3, 4);
  in.device_type = 1;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" is on cuda:0, but the model runs on the cpu: "
                  "pass host memory with device_type 0 (AOTC_DEVICE_CPU) and device_index 0");
  in = x_tensor(3, 4);
  in.device_index = 2;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": input \"x\" is on cpu:2, but the model runs on the cpu: "
                  "pass host memory with device_type 0 (AOTC_DEVICE_CPU) and device_index 0");
}

static void test_symbols_and_guards(void) {
  aotc_tensor out = out_tensor();
  /* blocks: u [m], v [m], m in 8..64, m % 8 == 0 */
  const int64_t s16[] = {16}, s8[] = {8}, s12[] = {12};
  aotc_tensor uv[2] = {make_tensor(x, AOTC_DTYPE_F32, 1, s8),
                       make_tensor(x, AOTC_DTYPE_F32, 1, s16)};
  CHECK_RUN_ERROR(2, uv, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"blocks\": input \"v\" dim 0 (m) = 16 but m = 8 from input \"u\" dim 0");
  uv[0] = make_tensor(x, AOTC_DTYPE_F32, 1, s12);
  uv[1] = make_tensor(x, AOTC_DTYPE_F32, 1, s12);
  CHECK_RUN_ERROR(2, uv, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"blocks\": input \"u\" dim 0 (m) = 12 is not a multiple of 8");

  /* pair: a [n, 3], b [n + 1], guard n <= 100 */
  const int64_t sa[] = {5, 3}, sb_bad[] = {7}, sb[] = {6}, sa_big[] = {150, 3}, sb_big[] = {151};
  aotc_tensor ab[2] = {make_tensor(a, AOTC_DTYPE_F32, 2, sa),
                       make_tensor(b, AOTC_DTYPE_F32, 1, sb_bad)};
  CHECK_RUN_ERROR(1, ab, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"pair\": input \"b\" dim 0 = 7, expected n + 1 = 6");
  ab[1] = make_tensor(b, AOTC_DTYPE_F32, 1, sb);
  ab[0].shape[1] = 4;
  CHECK_RUN_ERROR(1, ab, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"pair\": input \"a\" dim 1 = 4, expected 3");
  ab[0] = make_tensor(a, AOTC_DTYPE_F32, 2, sa_big);
  ab[1] = make_tensor(b, AOTC_DTYPE_F32, 1, sb_big);
  CHECK_RUN_ERROR(1, ab, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"pair\": guard n <= 100 (fake_artifact.c:1:1) does not hold");
}

/* scaled: h [2*half + 1] binds half (in 1..50, a multiple of 2), g [half] must agree. */
static void test_scaled_dims(void) {
  aotc_tensor out = out_tensor();
  const int64_t s9[] = {9}, s4[] = {4}, s8[] = {8}, s3[] = {3}, s1[] = {1}, s103[] = {103},
                s0[] = {0};
  aotc_tensor hg[2] = {make_tensor(x, AOTC_DTYPE_F32, 1, s8),
                       make_tensor(a, AOTC_DTYPE_F32, 1, s4)};
  CHECK_RUN_ERROR(4, hg, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"scaled\": input \"h\" dim 0 = 8, expected 2*half + 1 (a multiple of 2 "
                  "plus 1)");
  hg[0] = make_tensor(x, AOTC_DTYPE_F32, 1, s1);
  CHECK_RUN_ERROR(4, hg, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"scaled\": input \"h\" dim 0 (2*half + 1) = 1 gives half = 0, outside "
                  "1..50");
  hg[0] = make_tensor(x, AOTC_DTYPE_F32, 1, s103);
  CHECK_RUN_ERROR(4, hg, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"scaled\": input \"h\" dim 0 (2*half + 1) = 103 gives half = 51, outside "
                  "1..50");
  hg[0] = make_tensor(x, AOTC_DTYPE_F32, 1, s3);
  CHECK_RUN_ERROR(4, hg, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"scaled\": input \"h\" dim 0 (2*half + 1) = 3 gives half = 1, not a "
                  "multiple of 2");
  hg[0] = make_tensor(x, AOTC_DTYPE_F32, 1, s9);
  hg[1] = make_tensor(a, AOTC_DTYPE_F32, 1, s3);
  CHECK_RUN_ERROR(4, hg, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"scaled\": input \"g\" dim 0 (half) = 3 but half = 4 from input \"h\" "
                  "dim 0");
  hg[0] = make_tensor(x, AOTC_DTYPE_F32, 1, s0);
  CHECK_RUN_ERROR(4, hg, 2, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"scaled\": input \"h\" dim 0 = 0, expected 2*half + 1 (a multiple of 2 "
                  "plus 1)");
}

/* lookup: ids [t] index a table of 4; an id out of range fails the run, outputs untouched. */
static void test_index_checks(void) {
  static int64_t ids[3] = {0, 3, 4};
  static float y[3] = {-7, -7, -7};
  const int64_t s3[] = {3};
  aotc_tensor in = make_tensor(ids, AOTC_DTYPE_I64, 1, s3), out = out_tensor();
  CHECK_RUN_ERROR(5, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"lookup\": an index is out of range in aten.embedding "
                  "(fake_artifact.c:2:1): indices into dim 0 of weight must be in 0..3");
  ids[2] = -1;
  aotc_tensor caller = make_tensor(y, AOTC_DTYPE_F32, 0, NULL);
  caller.size_bytes = sizeof y;
  CHECK_RUN_ERROR(5, &in, 1, &caller, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"lookup\": an index is out of range in aten.embedding "
                  "(fake_artifact.c:2:1): indices into dim 0 of weight must be in 0..3");
  ids[2] = 2;
  CHECK_OK(aotc_model_run(model, 5, &in, 1, &caller, 1));
  CHECK(y[0] == 0.5f && y[1] == 3.5f && y[2] == 2.0f);
}

static void test_output_checks(void) {
  aotc_tensor in = x_tensor(5, 4);
  aotc_tensor out = make_tensor(out_buf, AOTC_DTYPE_F32, 0, NULL);
  out.size_bytes = 79;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": output \"y\" buffer has 79 bytes, needs 80");
  out.size_bytes = 0;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": output \"y\" buffer has 0 bytes, needs 80");
  out.size_bytes = sizeof out_buf;
  out.dtype = AOTC_DTYPE_I32;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": output \"y\" has dtype i32, expected f32");
  out.dtype = AOTC_DTYPE_F32;
  const int64_t strides[] = {8, 1};
  out.strides = strides;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": output \"y\" has strides [8, 1]; only dense row-major "
                  "strides [4, 1] are supported");
  out = out_tensor();
  out.device_type = 3;
  CHECK_RUN_ERROR(0, &in, 1, &out, 1, AOTC_ERROR_INVALID_ARGUMENT,
                  "entry \"forward\": output \"y\" is on device type 3, but the model runs on "
                  "the cpu: pass host memory with device_type 0 (AOTC_DEVICE_CPU) and "
                  "device_index 0");
}

static void test_options(void) {
  aotc_model_options o;
  aotc_model *m = (aotc_model *)&o;
  aotc_model_options_init(&o);
  o.struct_size = 8;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: options->struct_size is 8, expected 64 (call "
              "aotc_model_options_init)");
  CHECK(m == NULL);
  aotc_model_options_init(&o);
  o.reserved[1] = 1;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: options->reserved[1] is not zero");
  aotc_model_options_init(&o);
  o.cuda_graphs = 5000;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: options->cuda_graphs 5000 is more than 1024");
  aotc_model_options_init(&o);
  o.flags = 6;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: options->flags 0x6 has unknown bits");
  aotc_model_options_init(&o);
  o.num_threads = -2;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: num_threads -2 is outside 0..1024");
  aotc_model_options_init(&o);
  o.device_type = 1;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_UNSUPPORTED,
              "aotc_model_create: the artifact has no CUDA code; re-export it with --target "
              "cpu,cuda");
  aotc_model_options_init(&o);
  o.device_type = 2;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_UNSUPPORTED,
              "aotc_model_create: device type 2 is not one this runtime knows (cpu is 0, cuda 1)");
  aotc_model_options_init(&o);
  o.device_type = AOTC_DEVICE_CUDA;
  o.device_index = -1;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: CUDA device index -1 is negative");
  aotc_model_options_init(&o);
  o.cuda_driver = &o;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: options->cuda_driver is set for a cpu model");
  aotc_model_options_init(&o);
  o.device_index = 1;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_create: device index 1 of the cpu is not 0");
  aotc_model_options_init(&o);
  o.cpu_variant = 2;
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "cpu_variant 2 is not AUTO (-1), x86-64-v3 (0) or x86-64-v4 (1)");

  /* Forcing x86-64-v4 works exactly when the CPU has AVX-512. */
  __builtin_cpu_init();
  const int v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  aotc_model_options_init(&o);
  o.cpu_variant = AOTC_CPU_VARIANT_X86_64_V4;
  if (v4) {
    CHECK_OK(aotc_model_create(&o, &m));
    aotc_model_destroy(m);
  } else {
    CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_UNSUPPORTED,
                "this CPU lacks AVX-512 (x86-64-v4), which cpu_variant x86-64-v4 asks for");
  }
  setenv("AOTC_CPU_VARIANT", "x86-64-v5", 1);
  CHECK_ERROR(aotc_model_create(NULL, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "AOTC_CPU_VARIANT=x86-64-v5 is not x86-64-v3 or x86-64-v4");
  if (!v4) {
    setenv("AOTC_CPU_VARIANT", "x86-64-v4", 1);
    CHECK_ERROR(aotc_model_create(NULL, &m), AOTC_ERROR_UNSUPPORTED,
                "this CPU lacks AVX-512 (x86-64-v4), which AOTC_CPU_VARIANT x86-64-v4 asks for");
  }
  unsetenv("AOTC_CPU_VARIANT");
  /* The bf16 GEMM switches take 0 or 1 (on any CPU: they are read before it is asked). */
  setenv("AOTC_CPU_AMX", "yes", 1);
  CHECK_ERROR(aotc_model_create(NULL, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "AOTC_CPU_AMX=yes is not 0 or 1");
  unsetenv("AOTC_CPU_AMX");
  setenv("AOTC_CPU_BF16_DOT", "2", 1);
  CHECK_ERROR(aotc_model_create(NULL, &m), AOTC_ERROR_INVALID_ARGUMENT,
              "AOTC_CPU_BF16_DOT=2 is not 0 or 1");
  unsetenv("AOTC_CPU_BF16_DOT");

  aotc_model_options_init(&o);
  o.weights_path = "/nonexistent/fake.weights";
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_RESOURCE,
              "aotc_model_create: cannot open weights file \"/nonexistent/fake.weights\": No "
              "such file or directory");
  char path[] = "/tmp/aotc_bad_weights_XXXXXX";
  const int fd = mkstemp(path);
  CHECK(fd >= 0 && write(fd, "0123456789ab", 12) == 12);
  close(fd);
  o.weights_path = path;
  char want[256];
  snprintf(want, sizeof want,
           "aotc_model_create: weights file \"%s\" has 12 bytes, the artifact needs 32", path);
  CHECK_ERROR(aotc_model_create(&o, &m), AOTC_ERROR_RESOURCE, want);
  unlink(path);
}

typedef aotc_status (*create_fn)(const aotc_model_options *, aotc_model **);
typedef void (*destroy_fn)(aotc_model *);
typedef const char *(*last_error_fn)(void);

/* aotc_model_run_v2's options, and the device memory calls on a CPU model. */
static void test_run_options(void) {
  aotc_tensor in = x_tensor(2, 4), out = out_tensor();
  aotc_run_options o;
  aotc_run_options_init(&o);
  CHECK(o.struct_size == sizeof o && o.stream == NULL && o.flags == 0 && o.reserved[3] == 0);
  CHECK_OK(aotc_model_run_v2(model, 0, &in, 1, &out, 1, &o));
  aotc_tensor_release(&out);
  out = out_tensor();
  CHECK_OK(aotc_model_run_v2(model, 0, &in, 1, &out, 1, NULL));
  aotc_tensor_release(&out);
  out = out_tensor();
  o.struct_size = 8;
  CHECK_ERROR(aotc_model_run_v2(model, 0, &in, 1, &out, 1, &o), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_run_v2: options->struct_size is 8, expected 56 (call "
              "aotc_run_options_init)");
  aotc_run_options_init(&o);
  o.stream = &o;
  CHECK_ERROR(aotc_model_run_v2(model, 0, &in, 1, &out, 1, &o), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_run_v2: options->stream is set for a model on the cpu");
  aotc_run_options_init(&o);
  o.reserved[2] = 1;
  CHECK_ERROR(aotc_model_run_v2(model, 0, &in, 1, &out, 1, &o), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_run_v2: options->reserved[2] is not zero");
  CHECK(out.data == NULL);

  int32_t type = -1, index = -1;
  const char *name = NULL;
  CHECK_OK(aotc_model_device(model, &type, &index));
  CHECK(type == AOTC_DEVICE_CPU && index == 0);
  CHECK_OK(aotc_model_device_name(model, &name));
  CHECK(name && strcmp(name, "cpu") == 0);
  float host[4] = {1, 2, 3, 4}, back[4] = {0};
  void *dev = NULL;
  CHECK_OK(aotc_model_device_alloc(model, sizeof host, &dev));
  CHECK_OK(aotc_model_copy(model, dev, host, sizeof host, AOTC_COPY_HOST_TO_DEVICE));
  CHECK_OK(aotc_model_copy(model, back, dev, sizeof back, AOTC_COPY_DEVICE_TO_HOST));
  CHECK(memcmp(host, back, sizeof host) == 0);
  CHECK_ERROR(aotc_model_copy(model, back, dev, sizeof back, 7), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_copy: direction 7 is neither AOTC_COPY_HOST_TO_DEVICE (1) nor "
              "AOTC_COPY_DEVICE_TO_HOST (2)");
  CHECK_ERROR(aotc_model_copy(model, NULL, dev, 4, AOTC_COPY_DEVICE_TO_HOST),
              AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_copy: dst is null");
  CHECK_ERROR(aotc_model_device_alloc(model, 4, NULL), AOTC_ERROR_INVALID_ARGUMENT,
              "aotc_model_device_alloc: out_ptr is null");
  CHECK_OK(aotc_model_device_free(model, dev));
  CHECK_OK(aotc_model_device_free(model, NULL));
}

/* Artifacts built otherwise: a newer format, and weights in a file beside the .so. */
static void test_other_artifacts(void) {
  void *lib = dlopen(AOTC_FAKE_MODEL_BADFORMAT, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL);
  if (lib) {
    create_fn create = (create_fn)dlsym(lib, "aotc_model_create");
    last_error_fn last_error = (last_error_fn)dlsym(lib, "aotc_last_error");
    aotc_model *m = NULL;
    CHECK(create(NULL, &m) == AOTC_ERROR_UNSUPPORTED);
    CHECK(strcmp(last_error(), "aotc_model_create: artifact format 10, this runtime reads format "
                               "9 (re-export the model with a matching aotc)") == 0);
    dlclose(lib);
  }

  lib = dlopen(AOTC_FAKE_MODEL_EXTERNAL, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL);
  if (!lib)
    return;
  create_fn create = (create_fn)dlsym(lib, "aotc_model_create");
  destroy_fn destroy = (destroy_fn)dlsym(lib, "aotc_model_destroy");
  last_error_fn last_error = (last_error_fn)dlsym(lib, "aotc_last_error");
  char weights[4096];
  snprintf(weights, sizeof weights, "%s", AOTC_FAKE_MODEL_EXTERNAL);
  *strrchr(weights, '/') = '\0';
  strcat(weights, "/fake_external.weights");
  unlink(weights);
  aotc_model *m = NULL;
  char want[8192];
  snprintf(want, sizeof want,
           "aotc_model_create: cannot open weights file \"%s\": No such file or directory",
           weights);
  CHECK(create(NULL, &m) == AOTC_ERROR_RESOURCE);
  CHECK(strcmp(last_error(), want) == 0);
  /* Only a regular file: a FIFO blocked the open forever. */
  CHECK(mkfifo(weights, 0600) == 0);
  snprintf(want, sizeof want, "aotc_model_create: weights file \"%s\" is not a regular file",
           weights);
  CHECK(create(NULL, &m) == AOTC_ERROR_RESOURCE);
  CHECK(strcmp(last_error(), want) == 0);
  unlink(weights);
  FILE *f = fopen(weights, "wb");
  const float blob[8] = {1, 2, 3, 4, 0, 0, 0, 0};
  CHECK(f && fwrite(blob, sizeof blob, 1, f) == 1);
  if (f)
    fclose(f);
  /* Same size, other bytes: before the artifact recorded a hash, these were taken. */
  CHECK(create(NULL, &m) == AOTC_ERROR_RESOURCE && m == NULL);
  snprintf(want, sizeof want,
           "aotc_model_create: weights file \"%s\" does not match the artifact (hash "
           "%016llx, recorded 079ad9ee7b3d5200); re-export, or use the weights file written with "
           "the artifact",
           weights, (unsigned long long)aotc_hash64(blob, sizeof blob));
  CHECK(strcmp(last_error(), want) == 0);
  f = fopen(weights, "wb");
  const float right[8] = {0.5f, -1.25f, 2.0f, 3.5f, 0.25f, 0, 0, 0};
  CHECK(f && fwrite(right, sizeof right, 1, f) == 1);
  if (f)
    fclose(f);
  CHECK(create(NULL, &m) == AOTC_OK);
  destroy(m);
  unlink(weights);
  dlclose(lib);
}

int main(void) {
  for (size_t i = 0; i < sizeof x / sizeof *x; ++i)
    x[i] = 1.0f + (float)i;
  CHECK_OK(aotc_model_create(NULL, &model));
  if (!model)
    return harness_finish("abi_bad_input_test");
  test_null_arguments();
  test_entries();
  test_counts();
  test_input_checks();
  test_symbols_and_guards();
  test_scaled_dims();
  test_index_checks();
  test_output_checks();
  test_options();
  test_run_options();
  test_other_artifacts();
  /* The model still works after all of that. */
  aotc_tensor in = x_tensor(2, 4), out = out_tensor();
  CHECK_OK(aotc_model_run(model, 0, &in, 1, &out, 1));
  aotc_tensor_release(&out);
  aotc_model_destroy(model);
  return harness_finish("abi_bad_input_test");
}
